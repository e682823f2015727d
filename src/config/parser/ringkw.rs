//! `ring` sections (`description`, `format`, `maxlen`, `size`, `timeout
//! connect|server`, `server`) with HAProxy 2.6's messages, and the `log
//! ring@<name>` lines that name them, checked once every section is read;
//! the types are `config/ring.rs`'s.

use super::*;
use crate::config::log::Sink;
use crate::config::ring::{RingSection, RingServer, atol_size, ring_format};

/// The largest ring sluice allocates: past it, HAProxy's allocation
/// fails and so does sluice's check.
const MAX_RING_SIZE: usize = 1 << 31;

impl State<'_> {
    pub(super) fn start_ring(&mut self, loc: &Loc, words: &[String]) {
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            self.alert(loc, "missing ring name.");
            self.section = Section::Skip;
            return;
        };
        if self.global.rings.iter().any(|r| &r.name == name) || crate::config::ring::BUF0 == name {
            self.alert(loc, format!("sink named '{name}' already exists."));
            self.section = Section::Skip;
            return;
        }
        self.global.rings.push(RingSection::new(name, loc));
        self.section = Section::Ring(self.global.rings.len() - 1);
    }

    pub(super) fn ring_line(&mut self, i: usize, loc: &Loc, words: &[String]) {
        let w = |n: usize| words.get(n).map_or("", String::as_str);
        match w(0) {
            "description" => {
                if w(1).is_empty() {
                    return self.alert(loc, "missing ring description text.");
                }
                self.global.rings[i].description = Some(w(1).to_string());
            }
            "format" => match ring_format(w(1)) {
                Some(f) => self.global.rings[i].format = f,
                None => self.alert(loc, format!("unknown format '{}'.", w(1))),
            },
            "maxlen" => match atol_size(w(1)) {
                0 => self.alert(loc, format!("invalid size '{}' for new sink buffer.", w(1))),
                n => self.global.rings[i].maxlen = n,
            },
            "size" => {
                let size = atol_size(w(1));
                let ring = &self.global.rings[i];
                if size == 0 {
                    return self
                        .alert(loc, format!("invalid size '{}' for new sink buffer.", w(1)));
                }
                if size < ring.size {
                    let msg = format!(
                        "ignoring new size '{size}' that is smaller than current size '{}' for ring '{}'.",
                        ring.size, ring.name
                    );
                    // HAProxy prints this as a warning and fails the
                    // configuration: an alert says both.
                    return self.alert(loc, msg);
                }
                if size > MAX_RING_SIZE {
                    let msg = format!(
                        "fail to set sink buffer size '{}' for ring '{}'.",
                        ring.size, ring.name
                    );
                    return self.alert(loc, msg);
                }
                self.global.rings[i].size = size;
            }
            "timeout" => {
                let which = w(1);
                if which != "connect" && which != "server" {
                    return self.alert(
                        loc,
                        format!("'timeout' expects 'connect' or 'server' and <time> as arguments, got '{which}'."),
                    );
                }
                if w(2).is_empty() {
                    return self.alert(
                        loc,
                        format!("'timeout {which}' expects <time> as argument."),
                    );
                }
                match parse_time(w(2)) {
                    Ok(t) if which == "connect" => self.global.rings[i].timeout_connect = Some(t),
                    Ok(t) => self.global.rings[i].timeout_server = Some(t),
                    Err(crate::config::units::TimeError::BadChar(c)) => self.tight(
                        Level::Alert,
                        loc,
                        format!("unexpected character '{c}' in argument to <timeout {which}>."),
                    ),
                    Err(e) => self.alert(
                        loc,
                        time_error_message(&format!("timeout {which}"), w(2), &e),
                    ),
                }
            }
            "server" => self.ring_server(i, loc, words),
            other => self.alert(loc, format!("unknown statement '{other}'.")),
        }
    }

    /// `server <name> <addr>:<port> [log-proto legacy|octet-count]`.
    fn ring_server(&mut self, i: usize, loc: &Loc, words: &[String]) {
        let w = |n: usize| words.get(n).map_or("", String::as_str);
        if w(1).is_empty() || w(2).is_empty() {
            let msg =
                format!("[{loc}] : 'server' expects <name> and <addr>[:<port>] as arguments.");
            return self.diags.push(Diagnostic::alert(Some(loc.clone()), msg));
        }
        let name = w(1).to_string();
        let ctx = format!("server {}/{name}", self.global.rings[i].name);
        let fail = |s: &mut Self, msg: String| {
            s.diags.push(Diagnostic::at(Level::Alert, loc, &ctx, msg));
        };
        let text = match self.addr_word(w(2)) {
            Ok(t) => t,
            Err(e) => return fail(self, e),
        };
        if text.starts_with("udp") {
            return fail(
                self,
                format!("dgram-type address not acceptable in '{text}'\n"),
            );
        }
        let Ok(addr) = crate::config::mailers::mailer_addr(&text) else {
            return fail(self, format!("invalid address: '{text}'"));
        };
        let mut octet_count = false;
        let mut n = 3;
        while n < words.len() {
            match w(n) {
                "log-proto" => {
                    octet_count = match w(n + 1) {
                        "legacy" => false,
                        "octet-count" => true,
                        other => {
                            let msg = format!(
                                "'log-proto' expects one of 'legacy' or 'octet-count' but got '{other}'."
                            );
                            return fail(self, msg);
                        }
                    };
                    n += 2;
                }
                other => {
                    let msg = format!(
                        "option '{other}' of a ring's server is not supported by sluice yet (only 'log-proto')."
                    );
                    return fail(self, msg);
                }
            }
        }
        self.global.rings[i].servers.push(RingServer {
            name,
            addr,
            octet_count,
        });
    }

    /// Notes a `log ring@<name>` line (`proxy`: the proxy it is in, None
    /// for the global section), checked once every ring is read.
    pub(super) fn note_ring_ref(&mut self, loc: &Loc, sink: &Sink, proxy: Option<String>) {
        if let Sink::Ring(name) = sink {
            self.ring_refs.push((loc.clone(), name.clone(), proxy));
        }
    }

    /// The rings the `log` lines name exist; their lines take the ring's
    /// format and length. A ring with servers but no timeouts is warned
    /// about as HAProxy warns about its backend.
    pub(super) fn finish_rings(&mut self) {
        for r in &self.global.rings {
            if r.maxlen > r.size {
                let msg = format!(
                    "ring '{}' event max length '{}' exceeds size, forced to size '{}'.",
                    r.name, r.maxlen, r.size
                );
                self.diags.push(Diagnostic::warning(None, msg));
            }
            if !r.servers.is_empty() && (r.timeout_connect.is_none() || r.timeout_server.is_none())
            {
                self.diags.push(Diagnostic::warning(
                    Some(r.loc.clone()),
                    format!(
                        "missing timeouts for backend '{}'.\n   | While not properly invalid, you will certainly encounter various problems\n   | with such a configuration. To fix this, please ensure that all following\n   | timeouts are set to a non-zero value: 'client', 'connect', 'server'.",
                        r.name
                    ),
                ));
            }
        }
        for r in &mut self.global.rings {
            r.maxlen = r.maxlen.min(r.size);
        }
        for (loc, name, proxy) in std::mem::take(&mut self.ring_refs) {
            if name == crate::config::ring::BUF0 || self.global.rings.iter().any(|r| r.name == name)
            {
                continue;
            }
            let msg = match proxy {
                None => format!(
                    "global log server declared in file '{}' at line {} uses unknown ring named '{name}'.",
                    loc.file, loc.line
                ),
                Some(p) => format!(
                    "log server declared in proxy section '{p}' in file '{}' at line {} uses unknown ring named '{name}'.",
                    loc.file, loc.line
                ),
            };
            self.diags.push(Diagnostic::alert(None, msg));
        }
        let rings = self.global.rings.clone();
        let fit = |t: &mut crate::config::log::LogTarget| {
            let Sink::Ring(name) = &t.sink else { return };
            let ring = if name == crate::config::ring::BUF0 {
                RingSection::buf0()
            } else if let Some(r) = rings.iter().find(|r| &r.name == name) {
                r.clone()
            } else {
                return;
            };
            t.format = ring.format;
            t.len = t.len.min(ring.maxlen);
        };
        self.global.log.targets.iter_mut().for_each(fit);
        for p in &mut self.proxies {
            p.log.targets.iter_mut().for_each(fit);
        }
        for f in &mut self.global.log_forwards {
            f.targets.iter_mut().for_each(fit);
        }
    }
}
