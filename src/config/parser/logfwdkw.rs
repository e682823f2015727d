//! `log-forward` sections (`bind`, `dgram-bind`, `log`, `maxconn`,
//! `backlog`, `timeout client`) with HAProxy 2.6's messages; the types
//! are `config/log_forward.rs`'s.

use super::*;
use crate::config::log::{LogLine, parse_log};
use crate::config::log_forward::LogForward;

impl State<'_> {
    pub(super) fn start_log_forward(&mut self, loc: &Loc, words: &[String]) {
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            self.alert(loc, "missing name for ip-forward section.");
            self.section = Section::Skip;
            return;
        };
        if let Some(prev) = self.global.log_forwards.iter().find(|m| &m.name == name) {
            let msg = format!(
                "Parsing [{loc}]: log-forward section '{name}' has the same name as another log-forward section declared at {}.",
                prev.loc
            );
            self.diags.push(Diagnostic::alert(Some(loc.clone()), msg));
            self.section = Section::Skip;
            return;
        }
        self.global.log_forwards.push(LogForward::new(name, loc));
        self.section = Section::LogForward(self.global.log_forwards.len() - 1);
    }

    pub(super) fn log_forward_line(&mut self, i: usize, loc: &Loc, words: &[String]) {
        let w = |n: usize| words.get(n).map_or("", String::as_str);
        match w(0) {
            kw @ ("bind" | "dgram-bind") => {
                // HAProxy takes a bind line without address (and starts
                // nothing on it).
                if w(1).is_empty() {
                    return;
                }
                if let Some(opt) = words.get(2) {
                    let msg = format!(
                        "'{kw}' option '{opt}' is not supported by sluice yet in a log-forward section (only the address)."
                    );
                    return self.alert(loc, msg);
                }
                let text = match self.addr_word(w(1)) {
                    Ok(t) => t,
                    Err(e) => return self.alert(loc, format!("'{kw}' : {e}")),
                };
                let plain = text
                    .strip_prefix("udp@")
                    .or_else(|| text.strip_prefix("ipv4@"))
                    .or_else(|| text.strip_prefix("ipv6@"))
                    .or_else(|| text.strip_prefix("tcp@"))
                    .unwrap_or(&text);
                if plain.rsplit_once(':').is_some_and(|(_, p)| p == "0") {
                    let msg = format!("'{kw} {text}' : invalid port '0'");
                    return self.alert(loc, msg);
                }
                let Ok(addr) = crate::config::mailers::mailer_addr(plain) else {
                    let msg = format!("'{kw}' : invalid address: '{text}'");
                    return self.alert(loc, msg);
                };
                let f = &mut self.global.log_forwards[i];
                if kw == "bind" {
                    f.binds.push(addr);
                } else {
                    f.dgram_binds.push(addr);
                }
            }
            "log" => {
                let parsed = self.log_words(words).and_then(|w| parse_log(&w));
                match parsed {
                    Ok(LogLine::Global) => self.global.log_forwards[i].global = true,
                    Ok(LogLine::Target(t)) => {
                        let name = self.global.log_forwards[i].name.clone();
                        self.note_ring_ref(loc, &t.sink, Some(name));
                        self.global.log_forwards[i].targets.push(t);
                    }
                    Err(e) if words.len() < 3 => {
                        let _ = e;
                        self.alert(
                            loc,
                            "log : expects <address> and <facility> or global as arguments",
                        )
                    }
                    Err(e) => self.alert(loc, e),
                }
            }
            kw @ ("maxconn" | "backlog") => {
                let Some(n) = words.get(1).filter(|a| !a.is_empty()) else {
                    return self.alert(loc, format!("'{kw}' expects an integer argument."));
                };
                // atol, as HAProxy reads it.
                let n = u32::try_from(crate::config::units::atoi(n).max(0)).unwrap_or(u32::MAX);
                let f = &mut self.global.log_forwards[i];
                if kw == "maxconn" {
                    f.maxconn = n;
                } else {
                    f.backlog = Some(n);
                }
            }
            "timeout" if w(1) == "client" => {
                if w(2).is_empty() {
                    return self.alert(loc, "missing timeout client value.");
                }
                match parse_time(w(2)) {
                    Ok(t) => self.global.log_forwards[i].timeout_client = Some(t),
                    Err(crate::config::units::TimeError::BadChar(c)) => self.alert(
                        loc,
                        format!("unexpected character '{c}' in 'timeout client'"),
                    ),
                    Err(e) => self.alert(loc, time_error_message("timeout client", w(2), &e)),
                }
            }
            "timeout" => self.alert(
                loc,
                format!("unknown keyword 'timeout {}' in log-forward section.", w(1)),
            ),
            other => self.alert(
                loc,
                format!("unknown keyword '{other}' in log-forward section."),
            ),
        }
    }

    /// A section with neither `bind` nor `dgram-bind` gets HAProxy's
    /// warning about its frontend.
    pub(super) fn finish_log_forwards(&mut self) {
        for f in &self.global.log_forwards {
            if f.binds.is_empty() && f.dgram_binds.is_empty() {
                let msg = format!(
                    "frontend '{}' has no 'bind' directive. Please declare it as a backend if this was intended.",
                    f.name
                );
                self.diags.push(Diagnostic::warning(None, msg));
            }
        }
    }
}
