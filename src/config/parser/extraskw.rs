//! The proxy keywords whose settings `config/extras.rs` holds:
//! `description`, `source`, `dispatch`, `http-send-name-header`,
//! `rate-limit sessions`, `clitcpka-*`/`srvtcpka-*`, and the options
//! `originalto` and `transparent`.

use super::*;
use crate::config::extras::{IfName, Source, UseSrc};

impl State<'_> {
    /// `description <text>...`: the words joined with one space. Not in
    /// `defaults`, as in HAProxy.
    pub(super) fn kw_description(&mut self, loc: &Loc, words: &[String]) {
        if self.proxy_kind().is_none() {
            return self.tight(
                Level::Alert,
                loc,
                "'description' not allowed in 'defaults' section.",
            );
        }
        let text = words[1..].join(" ");
        if text.is_empty() {
            return self.tight(
                Level::Alert,
                loc,
                "'description' expects a string argument.",
            );
        }
        self.px().extras.description = Some(text);
    }
}

/// Why a `source` could not be read.
pub(super) enum SourceError {
    /// No address, or one that is not an address.
    Addr(Option<String>),
    /// `usesrc` without a valid argument.
    UseSrc,
    /// `interface` without a valid name.
    Interface,
    /// `usesrc hdr_ip(...)`: the address of a request header.
    HdrIp,
}

impl State<'_> {
    /// An IP address and port from a `source` or `usesrc` word, as HAProxy
    /// reads it (a host name is resolved); `range`: a port range may
    /// follow (a server's `source`).
    fn source_addr(
        &self,
        text: &str,
        range: bool,
    ) -> Result<(std::net::SocketAddr, Option<(u16, u16)>), String> {
        let a = self.addr_word(text)?;
        let hp = addr::split_source(&a)?;
        let (lo, hi) = hp.ports;
        if !range && lo != hi {
            return Err(format!("invalid port '{lo}-{hi}'"));
        }
        let ip = addr::resolve_host(hp.host, hp.family, lo, self.resolve)
            .map_err(|_| format!("invalid address: '{}' in '{a}'", hp.host))?;
        let ports = (lo != hi).then_some((lo, hi));
        Ok((std::net::SocketAddr::new(ip, lo), ports))
    }

    /// `usesrc <addr>[:<port>] | client | clientip | hdr_ip(...)`.
    fn usesrc(&self, v: Option<&str>) -> Result<UseSrc, SourceError> {
        match v {
            Some("client") => Ok(UseSrc::Client),
            Some("clientip") => Ok(UseSrc::ClientIp),
            Some(h) if h.starts_with("hdr_ip(") => Err(SourceError::HdrIp),
            Some(a) if !a.is_empty() => self
                .source_addr(a, false)
                .map(|(a, _)| UseSrc::Addr(a))
                .map_err(|_| SourceError::UseSrc),
            _ => Err(SourceError::UseSrc),
        }
    }

    /// `source <addr>[:<port>] [usesrc ...] [interface <name>]` from
    /// `words` (the address first): the source and the words it took.
    /// Reading stops at a word that is neither `usesrc` nor `interface`.
    pub(super) fn parse_source(
        &self,
        words: &[&str],
        range: bool,
    ) -> Result<(Source, usize), SourceError> {
        let Some(text) = words.first().filter(|w| !w.is_empty()) else {
            return Err(SourceError::Addr(None));
        };
        let (addr, ports) = self
            .source_addr(text, range)
            .map_err(|e| SourceError::Addr(Some(e)))?;
        let mut src = Source {
            addr,
            ports,
            usesrc: None,
            interface: None,
        };
        let mut i = 1;
        loop {
            let v = words.get(i + 1).copied();
            match words.get(i).copied() {
                Some("usesrc") => src.usesrc = Some(self.usesrc(v)?),
                Some("interface") => {
                    src.interface = Some(v.and_then(IfName::new).ok_or(SourceError::Interface)?)
                }
                _ => return Ok((src, i)),
            }
            i += 2;
        }
    }

    /// `source <addr>[:<port>] [usesrc ...] [interface <name>]` in a proxy:
    /// its servers' connections start from there, unless a server says
    /// otherwise.
    pub(super) fn kw_source(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "source", true, false, true) {
            return;
        }
        let w: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        let err = match self.parse_source(&w, false) {
            Ok((src, used)) if used == w.len() => {
                self.px().extras.source = Some(src);
                return;
            }
            Ok(_) => "'source' only supports optional keywords 'interface' and 'usesrc'.".into(),
            Err(SourceError::Addr(None)) => "'source' expects <addr>[:<port>], and optionally 'usesrc' <addr>, and 'interface' <name>.".into(),
            Err(SourceError::Addr(Some(e))) => format!("'source {}' : {e}", w[0]),
            Err(SourceError::UseSrc) => {
                "'usesrc' expects <addr>[:<port>], 'client', or 'clientip' as argument.".into()
            }
            Err(SourceError::Interface) => "'interface' expects a network interface name.".into(),
            Err(SourceError::HdrIp) => {
                "'usesrc hdr_ip(...)' is not supported by sluice yet".into()
            }
        };
        self.alert(loc, err);
    }

    /// `[no] option transparent` (HAProxy names it without `option` in
    /// its warning).
    pub(super) fn opt_transparent(&mut self, loc: &Loc, words: &[String], neg: bool) {
        if words.len() > 2 {
            return self.alert(loc, "'option transparent' does not expect any argument.");
        }
        if self.cap(loc, "transparent", true, false, true) {
            self.px().extras.transparent = !neg;
        }
    }

    /// `dispatch <addr>:<port>`: the server of a backend without `server`
    /// lines.
    pub(super) fn kw_dispatch(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "dispatch", false, false, true) {
            return;
        }
        let text = words.get(1).map_or("", String::as_str);
        let parsed = self.addr_word(text).and_then(|a| {
            let hp = addr::split(&a, false)?;
            addr::resolve_host(hp.host, hp.family, hp.ports.0, self.resolve)
                .map(|ip| std::net::SocketAddr::new(ip, hp.ports.0))
                .map_err(|_| format!("invalid address: '{}' in '{a}'", hp.host))
        });
        match parsed {
            Ok(a) => self.px().extras.dispatch = Some(a),
            Err(e) => self.alert(loc, format!("'dispatch' : {e}")),
        }
    }
}

impl State<'_> {
    /// Once every section is read: a backend without `server` lines gets
    /// the server `dispatch` names (`dispatch`), or one at the address
    /// each client connected to (`option transparent`), as if the line
    /// had been written.
    pub(super) fn finish_dispatch(&mut self) {
        let section = self.section;
        for i in 0..self.proxies.len() {
            let p = &self.proxies[i];
            if !p.kind.has_backend() || !p.servers.is_empty() {
                continue;
            }
            let (name, addr) = match (p.extras.dispatch, p.extras.transparent) {
                (Some(a), _) => ("dispatch", a.to_string()),
                (None, true) => ("transparent", "0.0.0.0:0".to_string()),
                _ => continue,
            };
            let loc = p.loc.clone();
            self.section = Section::Proxy(i);
            let words = ["server", name, &addr].map(String::from);
            self.kw_server(&loc, &words);
        }
        self.section = section;
    }
}

impl State<'_> {
    /// `option originalto [except <net>] [header <name>]`, with HAProxy
    /// 2.6's messages (it has no `no` form).
    pub(super) fn opt_originalto(&mut self, loc: &Loc, words: &[String], neg: bool) {
        if neg {
            return self.tight(
                Level::Alert,
                loc,
                "negation/default is not supported for option 'originalto'.",
            );
        }
        if !self.cap(loc, "option originalto", true, true, true) {
            return;
        }
        let mut ot = crate::config::extras::OriginalTo {
            except: None,
            header: "x-original-to".into(),
        };
        let mut i = 2;
        while let Some(w) = words.get(i) {
            let v = words.get(i + 1).map_or("", String::as_str);
            match w.as_str() {
                "except" => match crate::sample::pattern::Net::parse(v) {
                    Some(crate::sample::pattern::Net { addr, prefix }) => {
                        ot.except = Some((addr, prefix))
                    }
                    None => {
                        return self.alert(
                            loc,
                            "'option originalto except' expects <address>[/mask] as argument.",
                        );
                    }
                },
                "header" if !v.is_empty() => ot.header = v.to_ascii_lowercase(),
                "header" => {
                    return self.alert(
                        loc,
                        "'option originalto header' expects <header_name> as argument.",
                    );
                }
                _ => {
                    return self.alert(
                        loc,
                        "'option originalto' only supports optional values: 'except' and 'header'.",
                    );
                }
            }
            i += 2;
        }
        self.px().extras.originalto = Some(ot);
    }
}

impl State<'_> {
    /// `http-send-name-header <name>`: HAProxy requires the name (and
    /// ignores words after it).
    pub(super) fn kw_send_name_header(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "http-send-name-header", true, false, true) {
            return;
        }
        match words.get(1).filter(|w| !w.is_empty()) {
            Some(h) => self.px().extras.send_name_header = Some(h.to_ascii_lowercase()),
            None => self.alert(loc, "'http-send-name-header' requires a header string."),
        }
    }
}

/// `'<kw>' : unexpected character 'x' in integer value 'x'`, HAProxy's
/// text for a word that is not a number.
fn int_error(kw: &str, v: &str) -> String {
    match v.chars().find(|c| !c.is_ascii_digit()) {
        Some(c) => format!("'{kw}' : unexpected character '{c}' in integer value '{v}'"),
        None => format!("'{kw}' : integer value '{v}' is too large"),
    }
}

impl State<'_> {
    /// Warns, in HAProxy's words, when a proxy lacks the side `kw` tunes;
    /// false then.
    fn side_cap(&mut self, loc: &Loc, kw: &str, fe: bool) -> bool {
        let Some(kind) = self.proxy_kind() else {
            return true;
        };
        if (fe && kind.has_frontend()) || (!fe && kind.has_backend()) {
            return true;
        }
        let name = self.px().name.clone();
        let side = if fe { "frontend" } else { "backend" };
        self.warn(
            loc,
            format!(
                "{kw} will be ignored because {} '{name}' has no {side} capability",
                type_str(kind)
            ),
        );
        false
    }

    /// `rate-limit sessions <n>`: new sessions of a frontend per second.
    pub(super) fn kw_rate_limit(&mut self, loc: &Loc, words: &[String]) {
        let what = words.get(1).map_or("", String::as_str);
        if what != "sessions" {
            return self.alert(
                loc,
                format!("'rate-limit' only supports 'sessions' (got '{what}')"),
            );
        }
        let v = words.get(2).map_or("", String::as_str);
        let n = match parse_u32(v) {
            Some(n) => n,
            None if v.is_empty() => {
                return self.alert(
                    loc,
                    "'rate-limit sessions' expects expects an integer value (in sessions/second)",
                );
            }
            None => return self.alert(loc, int_error("rate-limit sessions", v)),
        };
        if self.side_cap(loc, "rate-limit sessions", true) {
            self.px().extras.rate_limit_sessions = (n > 0).then_some(n);
        }
    }

    /// `clitcpka-cnt|idle|intvl`, `srvtcpka-cnt|idle|intvl`: the
    /// keep-alive probes of `option clitcpka`/`srvtcpka` (a time in
    /// seconds unless a unit says otherwise).
    pub(super) fn kw_tcpka_tuning(&mut self, loc: &Loc, words: &[String]) {
        let k = words[0].as_str();
        let v = words.get(1).map_or("", String::as_str);
        if v.is_empty() {
            return self.alert(loc, format!("'{k}' expects an integer value"));
        }
        let (side, what) = k.split_once('-').unwrap_or((k, ""));
        let mut tuning = if side == "clitcpka" {
            self.px().extras.clitcpka
        } else {
            self.px().extras.srvtcpka
        };
        if what == "cnt" {
            match parse_u32(v) {
                Some(n) => tuning.cnt = Some(n),
                None => return self.alert(loc, int_error(k, v)),
            }
        } else {
            let secs = if v.bytes().all(|b| b.is_ascii_digit()) {
                format!("{v}s")
            } else {
                v.to_string()
            };
            let d = match parse_time(&secs) {
                Ok(d) => d,
                Err(crate::config::units::TimeError::BadChar(c)) => {
                    return self.alert(
                        loc,
                        format!("unexpected character '{c}' in argument to <{k}>."),
                    );
                }
                Err(_) => return self.alert(loc, format!("'{k}' expects an integer value")),
            };
            if what == "idle" {
                tuning.idle = Some(d);
            } else {
                tuning.intvl = Some(d);
            }
        }
        if !self.side_cap(loc, k, side == "clitcpka") {
            return;
        }
        let e = &mut self.px().extras;
        if side == "clitcpka" {
            e.clitcpka = tuning;
        } else {
            e.srvtcpka = tuning;
        }
    }
}

/// HAProxy 2.6's `option httpslog` format: `option httplog`'s, then the
/// connection's and TLS session's errors, resumption, SNI, version and
/// cipher.
pub(crate) const HTTPSLOG_FORMAT: &str = "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r %[fc_err]/%[ssl_fc_err,hex]/%[ssl_c_err]/%[ssl_c_ca_err]/%[ssl_fc_is_resumed] %[ssl_fc_sni]/%sslv/%sslc";

impl State<'_> {
    /// `option httpslog`: the HTTPS log format (words after it are
    /// ignored, as HAProxy ignores them; no `no` form).
    pub(super) fn opt_httpslog(&mut self, loc: &Loc, neg: bool) {
        if neg {
            return self.tight(
                Level::Alert,
                loc,
                "negation/default is not supported for option 'httpslog'.",
            );
        }
        if let Some(kind) = self.proxy_kind()
            && !kind.has_frontend()
        {
            let name = self.px().name.clone();
            return self.warn(
                loc,
                format!(
                    "{} '{name}' : 'option httpslog' directive is ignored in backends.",
                    type_str(kind)
                ),
            );
        }
        let f = crate::config::log::LogFormatKind::Custom(HTTPSLOG_FORMAT.to_string());
        self.px().log.format = Some(f);
    }

    /// `max-keep-alive-queue <n>` (-1: no limit). sluice balances every
    /// request of a keep-alive client on its own, never holding it to the
    /// server of the previous one, so no request ever waits in a server's
    /// queue because of keep-alive: the limit always holds.
    pub(super) fn kw_max_keep_alive_queue(&mut self, loc: &Loc, words: &[String]) {
        let v = words.get(1).map_or("", String::as_str);
        if v.is_empty() {
            return self.alert(
                loc,
                "'max-keep-alive-queue' expects expects an integer value (or -1 to disable)",
            );
        }
        let digits = v.strip_prefix('-').unwrap_or(v);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return self.alert(loc, int_error("max-keep-alive-queue", digits));
        }
        self.side_cap(loc, "max-keep-alive-queue", false);
    }
}

impl State<'_> {
    /// `force-persist { if | unless } <cond>`, `ignore-persist { if |
    /// unless } <cond>`: rules read in order, the section's ACLs in the
    /// condition.
    pub(super) fn kw_persist_rule(&mut self, loc: &Loc, words: &[String]) {
        let k = words[0].as_str();
        if !self.cap(loc, k, false, false, true) {
            return;
        }
        if !matches!(words.get(1).map(String::as_str), Some("if" | "unless")) {
            return self.alert(
                loc,
                format!("'{k}' requires either 'if' or 'unless' followed by a condition."),
            );
        }
        match self.condition(loc, &words[1..]) {
            Ok(cond) => self
                .px()
                .extras
                .persist_rules
                .push(crate::config::extras::PersistRule {
                    force: k == "force-persist",
                    cond,
                }),
            Err(e) => self.alert(
                loc,
                format!("error detected while parsing a '{k}' condition : {e}."),
            ),
        }
    }
}

impl State<'_> {
    /// `use-server <name> if|unless <cond>`: rules read in order (the
    /// server is looked up once the section is complete, `validate.rs`).
    pub(super) fn kw_use_server(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "use-server", false, false, true) {
            return;
        }
        let Some(server) = words.get(1).filter(|w| !w.is_empty()) else {
            return self.alert(loc, "'use-server' expects a server name.");
        };
        if !matches!(words.get(2).map(String::as_str), Some("if" | "unless")) {
            return self.alert(
                loc,
                "'use-server' requires either 'if' or 'unless' followed by a condition.",
            );
        }
        if server.contains('%') {
            return self.unsupported(loc, "use-server with a log-format server name");
        }
        // HAProxy takes an empty condition: it always holds.
        let cond = if words.len() == 3 {
            crate::acl::Condition {
                unless: words[2] == "unless",
                groups: vec![Vec::new()],
            }
        } else {
            match self.condition(loc, &words[2..]) {
                Ok(c) => c,
                Err(e) => {
                    return self.alert(
                        loc,
                        format!("error detected while parsing switching rule : {e}."),
                    );
                }
            }
        };
        self.px()
            .extras
            .use_servers
            .push(crate::config::extras::UseServer {
                server: server.clone(),
                cond,
            });
    }
}

impl State<'_> {
    /// `[no] option http-use-proxy-header`: HAProxy 2.6 takes it and
    /// changes nothing (its HTTP/1 layer never reads `Proxy-Connection`
    /// in place of `Connection`, with the option or without), so neither
    /// does sluice; HAProxy's warning in a proxy without a frontend.
    pub(super) fn opt_use_proxy_header(&mut self, loc: &Loc, words: &[String]) {
        if words.len() > 2 {
            return self.alert(
                loc,
                format!(
                    "'option http-use-proxy-header' cannot handle unexpected argument '{}'.",
                    words[2]
                ),
            );
        }
        self.cap(loc, "http-use-proxy-header", true, true, false);
    }
}

impl State<'_> {
    /// `persist rdp-cookie[(<name>)]`, with HAProxy 2.6's messages (which
    /// takes it in a frontend too, with no effect there).
    pub(super) fn kw_persist(&mut self, loc: &Loc, words: &[String]) {
        let Some(m) = words.get(1).filter(|w| !w.is_empty()) else {
            return self.alert(loc, "missing persist method.");
        };
        // Anything after `rdp-cookie` must open a name, which ends at the
        // first `)` (HAProxy ignores what follows it).
        let name = match m.strip_prefix("rdp-cookie") {
            Some("") => "msts".to_string(),
            Some(rest) => match rest.strip_prefix('(').and_then(|r| r.split_once(')')) {
                Some((n, _)) if !n.is_empty() => n.to_string(),
                _ => {
                    return self.alert(
                        loc,
                        "persist rdp-cookie(name)' requires an rdp cookie name.",
                    );
                }
            },
            None => return self.alert(loc, "unknown persist method."),
        };
        self.px().extras.rdp_persist = Some(name);
    }
}

impl State<'_> {
    /// `[no] option checkcache`, with HAProxy's messages (its warning
    /// names it without `option`).
    pub(super) fn opt_checkcache(&mut self, loc: &Loc, words: &[String], neg: bool) {
        if let Some(w) = words.get(2) {
            return self.alert(
                loc,
                format!("'option checkcache' cannot handle unexpected argument '{w}'."),
            );
        }
        if self.cap(loc, "checkcache", true, false, true) {
            self.px().extras.checkcache = !neg;
        }
    }
}
