//! `peers` sections, read as HAProxy 2.6 reads them: the peers (`peer`
//! and `server` lines, the local one among them), where the local peer
//! listens (its `peer` line's address, or a `bind` line), the options of
//! the listener (`default-bind`, `bind`) and of the connections to the
//! others (`default-server`, the options of `peer` and `server` lines:
//! `ssl` and the TLS options), `disabled`, and the tables declared in it
//! (`table <name> type ...`, named `<section>/<name>`).

use super::*;
use crate::config::model::{PeerLine, PeersListen, PeersSection};
use stickkw::Declared;

/// What a `peers` section's lines have said so far, that its later lines
/// depend on (HAProxy keeps the same in static variables).
#[derive(Default)]
pub(super) struct PeersParse {
    /// A `peer` line was seen (then no `bind` may come), a `bind` line
    /// was seen (then no `peer` may come).
    peer_line: bool,
    bind_line: bool,
    /// The `default-server` options so far.
    server: ServerDefaults,
    /// The listener's options so far (`default-bind`'s, then `bind`'s),
    /// and the line and address of the listener.
    bind_words: Vec<String>,
    listener: Option<(Loc, String, std::net::SocketAddr)>,
    /// Where the listener's settings began (the first `default-bind`,
    /// `bind` or local `peer` line): HAProxy's place for its errors
    /// found once the section is read.
    bind_conf_at: Option<Loc>,
}

impl State<'_> {
    /// `peers <name>`.
    pub(super) fn start_peers(&mut self, loc: &Loc, words: &[String]) {
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            self.alert(loc, "missing name for peers section.");
            self.section = Section::Skip;
            return;
        };
        if let Some(extra) = words.get(2) {
            self.alert(
                loc,
                format!(
                    "'{}' cannot handle unexpected argument '{extra}'.",
                    words[0]
                ),
            );
            self.section = Section::Skip;
            return;
        }
        if let Some(c) = bad_name_char(name) {
            self.alert(
                loc,
                format!("character '{c}' is not permitted in 'peers' name '{name}'."),
            );
            self.section = Section::Skip;
            return;
        }
        if let Some(other) = self.global.peers.iter().find(|p| p.name == *name) {
            let msg = format!(
                "Parsing [{loc}]: peers section '{name}' has the same name as another peers section declared at {}.",
                other.loc
            );
            self.diags.push(Diagnostic::alert(Some(loc.clone()), msg));
        }
        self.global.peers.push(PeersSection {
            name: name.clone(),
            loc: loc.clone(),
            disabled: false,
            peers: Vec::new(),
            listen: None,
            tables: Vec::new(),
        });
        self.peers_parse = PeersParse::default();
        self.section = Section::Peers(self.global.peers.len() - 1);
    }

    pub(super) fn peers_line(&mut self, i: usize, loc: &Loc, words: &[String]) {
        let section = self.global.peers[i].name.clone();
        match words[0].as_str() {
            "bind" => self.peers_bind(i, loc, words),
            "default-bind" => {
                self.peers_parse.bind_words.extend_from_slice(&words[1..]);
                self.peers_parse
                    .bind_conf_at
                    .get_or_insert_with(|| loc.clone());
                // Its words checked here, or with the listener's when
                // they ask for TLS (a certificate may come with `bind`).
                if !words[1..].iter().any(|w| w == "ssl")
                    && let Err(()) = self.bind_options(loc, "default-bind", &words[1..])
                {
                    return;
                }
                self.peers_listener(i);
            }
            "default-server" => {
                let base = self.peers_parse.server.clone();
                if let Some(sd) =
                    self.server_options(loc, &words[1..], base, "default-server", None)
                {
                    self.peers_parse.server = sd;
                }
            }
            // The peers' sessions are not logged (HAProxy logs none of
            // them either: they never end as a stream it logs).
            "log" => {}
            "peer" | "server" => self.peer_line(i, loc, words),
            "table" => {
                let short = words.get(1).cloned().unwrap_or_default();
                if self.table_conflict(loc, &short) {
                    return;
                }
                let name = format!("{section}/{short}");
                crate::sample::stick::in_proxy(&name, false);
                if let Some(def) = self.parse_table(loc, words, 2, &name, Some(&section)) {
                    self.declared_tables.push(Declared {
                        name: name.clone(),
                        loc: loc.clone(),
                        by: format!("peers '{section}'"),
                    });
                    self.global.table_order.push(name);
                    self.global.peers[i].tables.push(def);
                }
            }
            "disabled" => self.global.peers[i].disabled = true,
            "enabled" => self.global.peers[i].disabled = false,
            other => self.alert(loc, format!("unknown keyword '{other}' in 'peers' section")),
        }
    }

    /// `bind <addr> [options]`: the local peer's listener, one per
    /// section, never with `peer` lines.
    fn peers_bind(&mut self, i: usize, loc: &Loc, words: &[String]) {
        if self.peers_parse.peer_line {
            return self.alert(loc, "mixing \"peer\" and \"bind\" line is forbidden");
        }
        if let Some((at, _, _)) = &self.peers_parse.listener {
            let msg = format!(
                "One listener per \"peers\" section is authorized but another is already configured at [{at}]."
            );
            return self.alert(loc, msg);
        }
        let Some(text) = words.get(1) else {
            return self.alert(
                loc,
                "'bind' expects {<path>|[addr1]:port1[-end1]}{,[addr]:port[-end]}... as arguments.",
            );
        };
        let addr = match self
            .addr_word(text)
            .and_then(|a| addr::bind_addrs(&a, text, self.resolve))
        {
            Ok(a) => a,
            Err(e) => return self.alert(loc, format!("'bind {text}' : {e}")),
        };
        let Some(&first) = addr.first() else {
            return self.alert(loc, format!("'bind {text}' : no address."));
        };
        self.peers_parse.bind_line = true;
        self.peers_parse.bind_words.extend_from_slice(&words[2..]);
        self.peers_parse
            .bind_conf_at
            .get_or_insert_with(|| loc.clone());
        self.peers_parse.listener = Some((loc.clone(), text.clone(), first));
        self.peers_listener(i);
    }

    /// The listener with the options given so far (certificates loaded
    /// again when a later `default-bind` adds to them).
    fn peers_listener(&mut self, i: usize) {
        let Some((loc, text, addr)) = self.peers_parse.listener.clone() else {
            return;
        };
        let words = self.peers_parse.bind_words.clone();
        let Ok(o) = self.bind_options(&loc, &text, &words) else {
            return;
        };
        self.global.peers[i].listen = Some(PeersListen {
            addr,
            tls: o.tls,
            loc,
        });
    }

    /// `peer <name> <addr> [options]`, `server <name> [<addr>]
    /// [options]`.
    fn peer_line(&mut self, i: usize, loc: &Loc, words: &[String]) {
        let is_peer = words[0] == "peer";
        let local = crate::config::table::local_peer(&self.global);
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            return self.alert(
                loc,
                format!(
                    "'{}' expects <name> and <addr>[:<port>] as arguments.",
                    words[0]
                ),
            );
        };
        let is_local = *name == local;
        if is_peer {
            if self.peers_parse.bind_line {
                return self.alert(loc, "mixing \"peer\" and \"bind\" line is forbidden");
            }
            self.peers_parse.peer_line = true;
        }
        let section = &self.global.peers[i];
        if is_local && let Some(other) = section.peers.iter().find(|p| p.name == local) {
            let msg = format!(
                "'{} {name}' : local peer name already referenced at {}. {local}",
                words[0], other.loc
            );
            return self.alert(loc, msg);
        }
        // HAProxy's messages name the server after the section's
        // frontend, named after the local peer once it is known.
        let fe = if section.has_local(&local) || is_local {
            local.clone()
        } else {
            "(null)".to_string()
        };
        let ctx = format!("server {fe}/{name}");
        // A local `server` line has no address: its options follow.
        let takes_addr = is_peer || !is_local;
        let addr_text = words.get(2).filter(|_| takes_addr).cloned();
        let mut sockaddr = None;
        if let Some(text) = &addr_text {
            let resolved = self.addr_word(text).and_then(|a| {
                let hp = addr::split_server(&a)?;
                if hp.port == 0 {
                    return Err(format!("missing port specification in '{a}'"));
                }
                addr::resolve_host(&hp.host, hp.family, hp.port, self.resolve)
                    .map(|ip| std::net::SocketAddr::new(ip, hp.port))
                    .map_err(|_| format!("invalid address: '{}' in '{a}'", hp.host))
            });
            match resolved {
                Ok(a) => sockaddr = Some(a),
                Err(e) if e.starts_with("missing port") => {
                    return self.alert(loc, format!("'{} {name}' : {e}", words[0]));
                }
                Err(e) => {
                    let msg = format!("[{loc}] : '{ctx}' : {e}");
                    self.diags
                        .push(Diagnostic::new(Level::Alert, Some(loc.clone()), msg));
                    return;
                }
            }
        }
        let first_opt = if addr_text.is_some() { 3 } else { 2 };
        let opts = words.get(first_opt..).unwrap_or(&[]);
        let base = self.peers_parse.server.clone();
        let no_addr = addr_text.is_none();
        let Some(sd) = self.server_options_of(loc, opts, base, name, Some(&ctx), no_addr) else {
            return;
        };
        if sd.check || sd.agent_check || sd.init_addr.is_some() || !sd.resolve.resolvers.is_empty()
        {
            self.warn(
                loc,
                format!(
                    "'{} {name}' : init_addr, resolvers, check and agent are ignored for peers.",
                    words[0]
                ),
            );
        }
        let tls = match &sd.tls {
            Some(t) => match self.server_tls(t, false) {
                Ok(u) => u,
                Err(msg) => {
                    self.diags.push(Diagnostic::new(Level::Alert, None, msg));
                    return;
                }
            },
            None => None,
        };
        self.global.peers[i].peers.push(PeerLine {
            name: name.clone(),
            addr: addr_text.clone(),
            sockaddr,
            server: !is_peer,
            tls,
            loc: loc.clone(),
        });
        // The local peer's `peer` line is also its listener.
        if is_local
            && is_peer
            && let (Some(text), Some(a)) = (addr_text, sockaddr)
        {
            self.peers_parse
                .bind_conf_at
                .get_or_insert_with(|| loc.clone());
            self.peers_parse.listener = Some((loc.clone(), text, a));
            self.peers_listener(i);
        }
    }
}

impl State<'_> {
    /// A peers listener with `ssl` and no certificate: HAProxy's alert,
    /// given once the section is read, naming the local peer and where
    /// the listener's settings began. False outside a `peers` section.
    pub(super) fn peers_no_certificate(&mut self, text: &str) -> bool {
        if !matches!(self.section, Section::Peers(_)) {
            return false;
        }
        let local = crate::config::table::local_peer(&self.global);
        let at = self
            .peers_parse
            .bind_conf_at
            .as_ref()
            .map_or_else(String::new, |l| format!(" at [{l}]"));
        let msg = format!(
            "Proxy '{local}': no SSL certificate specified for bind '{text}'{at} (use 'crt')."
        );
        self.diags.push(Diagnostic::new(Level::Alert, None, msg));
        true
    }
}
