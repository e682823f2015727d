//! `server` and `default-server` lines and their options.

use super::*;

impl State<'_> {
    pub(super) fn kw_server(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "server", false, false, true) {
            return;
        }
        let (Some(name), Some(addr_text)) = (words.get(1), words.get(2)) else {
            return self.alert(
                loc,
                "'server' expects <name> and <addr>[:<port>] as arguments.",
            );
        };
        let pname = self.px().name.clone();
        let ctx = format!("server {pname}/{name}");
        let at = |this: &mut Self, msg: String| {
            this.diags
                .push(Diagnostic::at(Level::Alert, loc, &ctx, msg));
        };
        let mut ok = true;
        if let Some(c) = bad_name_char(name) {
            at(
                self,
                format!("character '{c}' is not permitted in server name '{name}'."),
            );
            ok = false;
        }
        // A UNIX socket server (`/path`, `unix@`, `abns@`): no host to
        // resolve, no port.
        let mut unix = None;
        let hp = match self
            .addr_word(addr_text)
            .and_then(|a| match addr::unix_name(&a) {
                Some(name) => {
                    unix = Some(std::sync::Arc::new(name?));
                    addr::split_server("0.0.0.0:0")
                }
                None => addr::split_server(&a),
            }) {
            Ok(hp) => Some(hp),
            Err(e) => {
                at(self, e);
                ok = false;
                None
            }
        };
        let base = match self.section {
            Section::Proxy(i) => self.server_defaults.get(i).cloned().unwrap_or_default(),
            _ => ServerDefaults::default(),
        };
        let sd = match self.server_options(loc, &words[3..], base.clone(), name, Some(&ctx)) {
            Some(sd) => sd,
            None => {
                ok = false;
                base
            }
        };
        let (weight, maxconn, check, params) = (sd.weight, sd.maxconn, sd.check, sd.params);
        let (mut opts, id, cookie) = (sd.opts, sd.id, sd.cookie);
        opts.forced_id = id.is_some();
        opts.use_ssl = match &sd.tls {
            Some(t) if t.enabled => 1,
            Some(t) if t.no_ssl => -1,
            _ => 0,
        };
        let tls = match &sd.tls {
            None => None,
            Some(t) => match self.server_tls(t, opts.h2) {
                Ok(u) => u,
                Err(msg) => {
                    at(self, msg);
                    ok = false;
                    None
                }
            },
        };
        // `check-ssl`: the server's TLS options, enabled for the checks.
        let check_tls = match &sd.tls {
            Some(t) if params.ssl && check => {
                let mut t = crate::tls::upstream::ServerTlsOpts {
                    enabled: true,
                    ..t.clone()
                };
                if let Some(sni) = &t.check_sni {
                    t.sni = Some(crate::tls::upstream::SniSpec::Fixed(sni.clone()));
                }
                if let Some(alpn) = &t.check_alpn {
                    t.alpn = Some(alpn.clone());
                }
                match self.server_tls(&t, false) {
                    Ok(u) => u,
                    Err(msg) => {
                        at(self, msg);
                        ok = false;
                        None
                    }
                }
            }
            _ => None,
        };
        // WebSocket streams go the server's own way: HTTP/1.1 upgrades to
        // an HTTP/1 server, RFC 8441 extended CONNECTs on a `proto h2`
        // server's connection (`ws auto`, or the `ws` that names it).
        match (sd.ws, opts.h2) {
            (1, true) => {
                at(
                    self,
                    "'ws h1' with 'proto h2' is not supported by sluice yet (WebSocket streams go over the server's HTTP/2 connection, RFC 8441).".to_string(),
                );
                ok = false;
            }
            (2, false) => {
                at(
                    self,
                    "'ws h2' without 'proto h2' is not supported by sluice yet (WebSocket streams go over HTTP/1.1 to an HTTP/1 server).".to_string(),
                );
                ok = false;
            }
            _ => {}
        }
        if opts.h2 && opts.send_proxy != 0 {
            // One HTTP/2 connection carries many clients' requests: it
            // cannot start with one client's PROXY header.
            at(
                self,
                "'send-proxy' and 'proto h2' cannot be combined by sluice (a shared HTTP/2 connection tells no single client).".to_string(),
            );
            ok = false;
        }
        if opts.h2
            && unix.is_none()
            && let Some(hp) = &hp
            && (hp.port == 0 || hp.host.is_empty() || hp.host == "*" || hp.host == "0.0.0.0")
        {
            // One HTTP/2 connection is shared by all clients: it cannot
            // follow each client's destination.
            at(
                self,
                format!(
                    "'proto h2' needs a fixed address and port, not '{addr_text}' (taken from each client connection)."
                ),
            );
            ok = false;
        }
        if let Some(other) = self.px().servers.iter().find(|s| s.name == *name) {
            let line = other.loc.line;
            let t = self.proxy_kind().map_or("backend", type_str);
            self.alert(
                loc,
                format!("{t} '{pname}', another server named '{name}' was already defined at line {line}, please use distinct names."),
            );
            ok = false;
        }
        let Some(hp) = hp else { return };
        if !ok {
            return;
        }
        let port = hp.port;
        let fqdn = (unix.is_none()
            && !hp.host.is_empty()
            && hp.host != "*"
            && hp.host.parse::<std::net::IpAddr>().is_err())
        .then(|| hp.host.clone());
        let resolve = (!sd.resolve.resolvers.is_empty()).then(|| sd.resolve.clone());
        let agent = match (sd.agent_check, sd.agent_port) {
            (true, Some(port)) => Some(AgentParams {
                port,
                addr: sd.agent_addr.or(sd.params.addr),
                inter: Some(sd.agent_inter.unwrap_or(sd.params.inter)),
                send: sd.agent_send.clone(),
            }),
            (true, None) => {
                at(
                    self,
                    format!(
                        "server {name} does not have agent port. Agent check has been disabled."
                    ),
                );
                return;
            }
            _ => None,
        };
        let server = Server {
            fqdn,
            resolve,
            init_addr: sd.init_addr.clone(),
            srvrecord: None,
            redir: sd.redir.clone(),
            agent,
            name: name.clone(),
            addr_text: addr_text.clone(),
            addr: std::net::SocketAddr::from(([0, 0, 0, 0], port)),
            unix: unix.clone(),
            weight,
            maxconn,
            check: check.then_some(params),
            opts,
            id,
            cookie,
            loc: loc.clone(),
            tls,
            check_tls,
        };
        let host = hp.host;
        let family = hp.family;
        let proxy = match self.section {
            Section::Proxy(i) => i,
            _ => return,
        };
        let p = self.px();
        p.servers.push(server);
        let server_idx = p.servers.len() - 1;
        if unix.is_some() {
            return;
        }
        self.pending.push(PendingServer {
            proxy,
            server: server_idx,
            host,
            family,
            port,
        });
    }

    /// `server-template <prefix> <num | first-last> <fqdn>[:<port>]
    /// [options]`: the servers `<prefix><n>`, each a `server` line of the
    /// same address and options. With an SRV name (`_service._proto.name`)
    /// the slots start empty, filled at run time by the records.
    pub(super) fn kw_server_template(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "server-template", false, false, true) {
            return;
        }
        let (Some(prefix), Some(range), Some(addr)) = (words.get(1), words.get(2), words.get(3))
        else {
            let msg = format!(
                "[{loc}] : 'server-template' expects <prefix> <nb | range> <addr>[:<port>] as arguments."
            );
            self.diags
                .push(Diagnostic::new(Level::Alert, Some(loc.clone()), msg));
            return;
        };
        let bounds = match range.split_once('-') {
            Some((a, b)) => a.parse::<u32>().ok().zip(b.parse::<u32>().ok()),
            None => range.parse::<u32>().ok().map(|n| (1, n)),
        };
        let Some((first, last)) = bounds.filter(|&(a, b)| a >= 1 && a <= b) else {
            let msg = format!("[{loc}] : Wrong server-template number or range arg '{range}'.");
            self.diags
                .push(Diagnostic::new(Level::Alert, Some(loc.clone()), msg));
            return;
        };
        let srv = addr.starts_with('_');
        for n in first..=last {
            let mut line = vec!["server".to_string(), format!("{prefix}{n}"), addr.clone()];
            line.extend(words[4..].iter().cloned());
            let before = self.px().servers.len();
            self.kw_server(loc, &line);
            if srv && self.px().servers.len() > before {
                // No address to look up at start: the SRV records bring
                // the targets.
                let proxy = match self.section {
                    Section::Proxy(i) => i,
                    _ => usize::MAX,
                };
                self.pending
                    .retain(|p| !(p.proxy == proxy && p.server == before));
                if let Some(s) = self.px().servers.last_mut() {
                    s.srvrecord = Some(addr.clone());
                    s.fqdn = None;
                }
            }
        }
    }

    /// The options of a `server` or `default-server` line (`words` start
    /// after the address, or after `default-server`), applied over `base`.
    /// `ctx`: the `server px/name` context of messages, `None` for
    /// `default-server` (HAProxy's messages then have no context). Each
    /// option is parsed by its entry of [`SERVER`].
    pub(super) fn server_options(
        &mut self,
        loc: &Loc,
        words: &[String],
        base: ServerDefaults,
        name: &str,
        ctx: Option<&str>,
    ) -> Option<ServerDefaults> {
        self.server_options_of(loc, words, base, name, ctx, ctx.is_none())
    }

    /// [`Self::server_options`] of a line that may have no address.
    pub(super) fn server_options_of(
        &mut self,
        loc: &Loc,
        words: &[String],
        base: ServerDefaults,
        name: &str,
        ctx: Option<&str>,
        no_addr: bool,
    ) -> Option<ServerDefaults> {
        let mut line = ServerLine {
            loc,
            ctx,
            name,
            sd: base,
            no_addr,
        };
        let mut ok = true;
        let mut i = 0;
        while let Some(w) = words.get(i) {
            let v = words.get(i + 1).map(String::as_str);
            let w = w.as_str();
            if self.dynamic
                && !DYNAMIC_OK.contains(&w)
                && (SERVER.iter().any(|e| e.name == w) || kw::haproxy_has(kw::Kind::Server, w))
            {
                self.server_at(
                    &line,
                    format!("'{w}' option is not accepted for dynamic server"),
                );
                ok = false;
                break;
            }
            let step = match SERVER.iter().find(|e| e.name == w) {
                Some(e) => (e.run)(self, &mut line, w, v),
                None => {
                    self.unknown_server_option(&line, w);
                    OptStep::Stop
                }
            };
            match step {
                OptStep::Next(n) => i += n,
                OptStep::Bad(n) => {
                    ok = false;
                    i += n;
                }
                OptStep::Stop => {
                    ok = false;
                    break;
                }
            }
        }
        ok.then_some(line.sd)
    }

    /// An option of no entry of [`SERVER`]: HAProxy's own that sluice
    /// lacks, or an unknown word with a suggestion.
    fn unknown_server_option(&mut self, line: &ServerLine<'_>, other: &str) {
        if kw::SERVER_UNSUPPORTED.contains(&other) || kw::haproxy_has(kw::Kind::Server, other) {
            // The rest of the line cannot be interpreted reliably.
            return self.server_at(line, format!("'{other}' is not supported by sluice yet"));
        }
        let sugg = suggest::suffix(
            other,
            kw::SERVER_SUPPORTED
                .iter()
                .chain(kw::SERVER_UNSUPPORTED)
                .copied(),
        );
        // HAProxy's hint when default-server gets an unknown word.
        let hint = match (line.no_addr, sugg.is_empty()) {
            (false, _) => "",
            (true, true) => ". Hint: no address was expected for this server.",
            (true, false) => " Hint: no address was expected for this server.",
        };
        self.server_at(line, format!("unknown keyword '{other}'{sugg}{hint}"));
    }

    /// Reports an error of a server option, in the line's context.
    fn server_at(&mut self, line: &ServerLine<'_>, msg: String) {
        self.lb_at(line.loc, line.ctx, msg);
    }

    /// `<w> <integer>` of at least `min`, reported if not.
    fn server_int(
        &mut self,
        line: &ServerLine<'_>,
        w: &str,
        v: Option<&str>,
        min: u32,
    ) -> Option<u32> {
        match v.and_then(parse_u32) {
            Some(n) if n >= min => Some(n),
            Some(_) => {
                self.server_at(line, format!("'{w}' has to be >= {min}."));
                None
            }
            None => {
                self.server_at(
                    line,
                    format!(
                        "'{w}' expects an integer argument (got '{}').",
                        v.unwrap_or("")
                    ),
                );
                None
            }
        }
    }

    /// `default-server <options>`: defaults for the following `server`
    /// lines of this section (and of proxies using this `defaults`).
    pub(super) fn kw_default_server(&mut self, loc: &Loc, words: &[String]) {
        if let Some(kind) = self.proxy_kind()
            && !kind.has_backend()
        {
            let name = self.px().name.clone();
            let msg = format!(
                "[{loc}] : parsing [{loc}] : 'default-server' not allowed because {} '{name}' has no backend capability.",
                type_str(kind)
            );
            self.diags
                .push(Diagnostic::new(Level::Alert, Some(loc.clone()), msg));
            return;
        }
        let base = self.current_server_defaults();
        if let Some(sd) = self.server_options(loc, &words[1..], base, "default-server", None) {
            match self.section {
                Section::Proxy(i) => {
                    if let Some(slot) = self.server_defaults.get_mut(i) {
                        *slot = sd;
                    }
                }
                Section::Defaults(i) => {
                    if let Some(d) = self.defaults.get_mut(i) {
                        d.server = sd;
                    }
                }
                _ => {}
            }
        }
    }

    pub(super) fn current_server_defaults(&self) -> ServerDefaults {
        match self.section {
            Section::Proxy(i) => self.server_defaults.get(i).cloned(),
            Section::Defaults(i) => self.defaults.get(i).map(|d| d.server.clone()),
            _ => None,
        }
        .unwrap_or_default()
    }
}

/// The server options HAProxy 2.6 takes on the CLI's `add server` (those
/// it marks `dynamic_ok`); the others are refused there with its message.
pub(crate) const DYNAMIC_OK: &[&str] = &[
    "agent-addr",
    "agent-check",
    "agent-inter",
    "agent-port",
    "agent-send",
    "allow-0rtt",
    "alpn",
    "addr",
    "backup",
    "ca-file",
    "check",
    "check-alpn",
    "check-proto",
    "check-send-proxy",
    "check-sni",
    "check-ssl",
    "check-via-socks4",
    "ciphers",
    "ciphersuites",
    "crl-file",
    "crt",
    "disabled",
    "downinter",
    "enabled",
    "error-limit",
    "fall",
    "fastinter",
    "force-sslv3",
    "force-tlsv10",
    "force-tlsv11",
    "force-tlsv12",
    "force-tlsv13",
    "id",
    "inter",
    "maxconn",
    "maxqueue",
    "minconn",
    "no-ssl-reuse",
    "no-sslv3",
    "no-tlsv10",
    "no-tlsv11",
    "no-tlsv12",
    "no-tlsv13",
    "no-tls-tickets",
    "npn",
    "observe",
    "on-error",
    "on-marked-down",
    "on-marked-up",
    "pool-low-conn",
    "pool-max-conn",
    "pool-purge-delay",
    "port",
    "proto",
    "proxy-v2-options",
    "rise",
    "send-proxy",
    "send-proxy-v2",
    "send-proxy-v2-ssl",
    "send-proxy-v2-ssl-cn",
    "slowstart",
    "sni",
    "source",
    "ssl",
    "ssl-max-ver",
    "ssl-min-ver",
    "tfo",
    "tls-tickets",
    "track",
    "usesrc",
    "verify",
    "verifyhost",
    "weight",
    "ws",
];

/// The server the CLI's `add server <be>/<name> <addr> [options]` asks
/// for, `words` being `server <name> <addr> [options]`, for backend `be`:
/// parsed as a `server` line of that backend without its
/// `default-server` (HAProxy reuses none), with only the options HAProxy
/// allows there. A host name is kept as the server's FQDN without being
/// resolved (HAProxy's dynamic servers have `init-addr none`). `Err` is
/// HAProxy's message for the first problem.
pub(crate) fn dynamic_server(be: &Proxy, words: &[String]) -> Result<Server, String> {
    let no_dns: addr::Resolver<'_> = &|_, _| Err(String::new());
    let mut st = State::new(no_dns);
    let mut px = be.clone();
    px.servers.clear();
    st.proxies.push(px);
    st.server_defaults.push(ServerDefaults::default());
    st.section = Section::Proxy(0);
    st.dynamic = true;
    let loc = Loc {
        file: Arc::from("CLI"),
        line: 1,
    };
    st.kw_server(&loc, words);
    if let Some(d) = st.diags.iter().find(|d| d.is_alert()) {
        let ctx = format!(
            "'server {}/{}' : ",
            be.name,
            words.get(1).map_or("", String::as_str)
        );
        let m = &d.message;
        let bare = match m.find(&ctx) {
            Some(i) => &m[i + ctx.len()..],
            None => m.split_once("] : ").map_or(m.as_str(), |(_, r)| r),
        };
        return Err(format!("{}\n", bare.trim_end()));
    }
    let mut server = st
        .proxies
        .pop()
        .and_then(|mut p| p.servers.pop())
        .ok_or_else(|| "'server' expects <name> and <addr>[:<port>] as arguments.\n".to_string())?;
    if let Some(p) = st.pending.first()
        && let Ok(ip) = p.host.parse::<std::net::IpAddr>()
    {
        server.addr = std::net::SocketAddr::new(ip, p.port);
    }
    server.opts.dynamic = true;
    Ok(server)
}

/// The `server` line being parsed: where it is, the context of its
/// messages, and the options so far.
pub(crate) struct ServerLine<'a> {
    loc: &'a Loc,
    /// `server px/name`; None for `default-server`.
    ctx: Option<&'a str>,
    name: &'a str,
    sd: ServerDefaults,
    /// The line has no address (`default-server`, the local peer's
    /// `server` line): HAProxy hints at it for an unknown word.
    no_addr: bool,
}

/// What a server option did: the words it used, and whether it was
/// refused (`Bad`: reported, the line goes on; `Stop`: reported, the rest
/// of the line cannot be read).
pub(crate) enum OptStep {
    Next(usize),
    Bad(usize),
    Stop,
}

/// A `server`/`default-server` option's parser: the line, the option's
/// name and the word after it.
pub(crate) type ServerKw =
    Kwd<fn(&mut State<'_>, &mut ServerLine<'_>, &str, Option<&str>) -> OptStep>;

/// The server options, in the order suggestions try them: `server_options`
/// dispatches through this table and [`kw::SERVER_SUPPORTED`] is read from
/// it.
pub(crate) const SERVER: &[ServerKw] = &[
    kwd("proto", opt_lb),
    kwd("check-proto", opt_lb),
    kwd("check-ssl", opt_check_ssl),
    kwd("no-check-ssl", opt_check_ssl),
    kwd("cookie", opt_cookie),
    kwd("send-proxy", opt_lb),
    kwd("send-proxy-v2", opt_lb),
    kwd("no-send-proxy", opt_lb),
    kwd("no-send-proxy-v2", opt_lb),
    kwd("weight", opt_weight),
    kwd("maxconn", opt_maxconn),
    kwd("check", |_, l, _, _| {
        l.sd.check = true;
        OptStep::Next(1)
    }),
    kwd("no-check", |_, l, _, _| {
        l.sd.check = false;
        OptStep::Next(1)
    }),
    kwd("inter", opt_inter),
    kwd("rise", opt_rise_fall),
    kwd("fall", opt_rise_fall),
    kwd("backup", opt_lb),
    kwd("no-backup", opt_lb),
    kwd("non-stick", opt_lb),
    kwd("tfo", opt_lb),
    kwd("no-tfo", opt_lb),
    kwd("stick", opt_lb),
    kwd("disabled", opt_lb),
    kwd("enabled", opt_lb),
    kwd("maxqueue", opt_lb),
    kwd("minconn", opt_lb),
    kwd("slowstart", opt_lb),
    kwd("fastinter", opt_lb),
    kwd("downinter", opt_lb),
    kwd("addr", opt_lb),
    kwd("port", opt_lb),
    kwd("id", opt_lb),
    kwd("on-marked-down", opt_lb),
    kwd("on-marked-up", opt_lb),
    kwd("observe", opt_lb),
    kwd("error-limit", opt_lb),
    kwd("on-error", opt_lb),
    kwd("ssl", opt_tls),
    kwd("verify", opt_tls),
    kwd("ca-file", opt_tls),
    kwd("crt", opt_tls),
    kwd("sni", opt_tls),
    kwd("alpn", opt_tls),
    kwd("no-ssl", opt_tls),
    kwd("ciphers", opt_tls),
    kwd("ciphersuites", opt_tls),
    kwd("ssl-min-ver", opt_tls),
    kwd("ssl-max-ver", opt_tls),
    kwd("force-tlsv12", opt_tls),
    kwd("force-tlsv13", opt_tls),
    kwd("force-sslv3", opt_tls),
    kwd("force-tlsv10", opt_tls),
    kwd("force-tlsv11", opt_tls),
    kwd("no-sslv3", opt_tls),
    kwd("no-tlsv10", opt_tls),
    kwd("no-tlsv11", opt_tls),
    kwd("no-tlsv12", opt_tls),
    kwd("no-tlsv13", opt_tls),
    kwd("crl-file", opt_tls),
    kwd("ssl-reuse", opt_tls),
    kwd("no-ssl-reuse", opt_tls),
    kwd("tls-tickets", opt_tls),
    kwd("no-tls-tickets", opt_tls),
    kwd("verifyhost", opt_tls),
    kwd("no-verifyhost", opt_tls),
    kwd("check-sni", opt_tls),
    kwd("check-alpn", opt_tls),
    kwd("redir", opt_redir),
    kwd("check-send-proxy", |_, l, _, _| {
        l.sd.params.send_proxy = true;
        OptStep::Next(1)
    }),
    kwd("ws", opt_ws),
    kwd("pool-max-conn", opt_pool),
    kwd("max-reuse", opt_pool),
    kwd("pool-purge-delay", opt_pool),
    kwd("pool-low-conn", opt_pool),
    kwd("allow-0rtt", opt_ignored),
    kwd("npn", opt_ignored),
    kwd("log-proto", opt_ignored),
    kwd("resolvers", opt_resolve),
    kwd("resolve-prefer", opt_resolve),
    kwd("resolve-net", opt_resolve),
    kwd("resolve-opts", opt_resolve),
    kwd("init-addr", opt_resolve),
    kwd("agent-check", opt_agent),
    kwd("no-agent-check", opt_agent),
    kwd("agent-port", opt_agent),
    kwd("agent-addr", opt_agent),
    kwd("agent-inter", opt_agent),
    kwd("agent-send", opt_agent),
    kwd("source", opt_source),
    kwd("usesrc", opt_source),
    kwd("interface", opt_source),
];

/// `source <addr>[:<port>[-<port>]]`, then `usesrc ...` and `interface
/// <name>` as options of their own that complete it, with HAProxy 2.6's
/// messages.
fn opt_source(s: &mut State<'_>, l: &mut ServerLine<'_>, w: &str, v: Option<&str>) -> OptStep {
    use super::extraskw::SourceError;
    let words: Vec<&str> = match w {
        "source" => v.into_iter().collect(),
        _ => match l.sd.opts.source {
            Some(_) => vec!["0.0.0.0", w, v.unwrap_or("")],
            None => {
                s.server_at(
                    l,
                    format!("'{w}' only allowed after a 'source' statement.."),
                );
                return OptStep::Bad(2);
            }
        },
    };
    let err = match s.parse_source(&words, true) {
        Ok((src, _)) => {
            let opts = &mut l.sd.opts;
            match (w, &mut opts.source) {
                ("source", _) => opts.source = Some(src),
                ("usesrc", Some(old)) => old.usesrc = src.usesrc,
                (_, Some(old)) => old.interface = src.interface,
                (_, None) => {}
            }
            return OptStep::Next(2);
        }
        Err(SourceError::Addr(None)) => "'source' expects <addr>[:<port>[-<port>]], and optionally 'usesrc' <addr>, and 'interface' <name> as argument..".to_string(),
        Err(SourceError::Addr(Some(e))) => format!("'source' : {e}."),
        Err(SourceError::UseSrc) => "'usesrc' expects <addr>[:<port>], 'client', 'clientip', or 'hdr_ip(name,#)' as argument.".to_string(),
        Err(SourceError::Interface) => "'interface' expects a network interface name.".to_string(),
        Err(SourceError::HdrIp) => "'usesrc hdr_ip(...)' is not supported by sluice yet.".to_string(),
    };
    s.server_at(l, err);
    OptStep::Bad(2)
}

/// `agent-check`, `no-agent-check`, `agent-port`, `agent-addr`,
/// `agent-inter`, `agent-send`, with HAProxy 2.6's messages.
fn opt_agent(s: &mut State<'_>, l: &mut ServerLine<'_>, w: &str, v: Option<&str>) -> OptStep {
    let v = v.unwrap_or("");
    let sd = &mut l.sd;
    let err = match w {
        "agent-check" => {
            sd.agent_check = true;
            return OptStep::Next(1);
        }
        "no-agent-check" => {
            sd.agent_check = false;
            return OptStep::Next(1);
        }
        "agent-port" if v.is_empty() => {
            "'agent-port' expects a port number as argument.".to_string()
        }
        "agent-port" => {
            // atol(), as HAProxy reads it.
            let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
            sd.agent_port = Some(digits.parse().unwrap_or(0));
            return OptStep::Next(2);
        }
        "agent-addr" if v.is_empty() => "'agent-addr' expects an address as argument.".to_string(),
        "agent-addr" => match v.parse() {
            Ok(ip) => {
                sd.agent_addr = Some(ip);
                return OptStep::Next(2);
            }
            Err(_) => format!("parsing agent-addr failed. Check if '{v}' is correct address."),
        },
        "agent-inter" if v.is_empty() => "'agent-inter' expects a delay as argument.".to_string(),
        "agent-inter" => match parse_time(v) {
            Ok(d) if !d.is_zero() => {
                sd.agent_inter = Some(d);
                return OptStep::Next(2);
            }
            Ok(_) => format!(
                "invalid value '{v}' for 'agent-inter' argument of server {}.",
                l.name
            ),
            Err(crate::config::units::TimeError::BadChar(c)) => format!(
                "unexpected character '{c}' in 'agent-inter' argument of server {}.",
                l.name
            ),
            Err(_) => "'agent-inter' expects a delay as argument.".to_string(),
        },
        _ if v.is_empty() => "'agent-send' expects a string as argument.".to_string(),
        _ => {
            sd.agent_send = v.to_string();
            return OptStep::Next(2);
        }
    };
    s.server_at(l, format!("{err}."));
    OptStep::Bad(2)
}

/// `resolvers`, `resolve-prefer`, `resolve-net`, `resolve-opts`,
/// `init-addr`, with HAProxy 2.6's messages.
fn opt_resolve(s: &mut State<'_>, l: &mut ServerLine<'_>, w: &str, v: Option<&str>) -> OptStep {
    let v = v.unwrap_or("");
    let r = &mut l.sd.resolve;
    let err = match w {
        "resolvers" if !v.is_empty() => {
            r.resolvers = v.to_string();
            None
        }
        "resolvers" => Some("'resolvers' expects <resolvers_id> name as argument.".to_string()),
        "resolve-prefer" => match v {
            "ipv4" => {
                r.prefer_v4 = true;
                None
            }
            "ipv6" => {
                r.prefer_v4 = false;
                None
            }
            _ => Some("'resolve-prefer' expects either ipv4 or ipv6 as argument..".to_string()),
        },
        "resolve-net" => {
            let mut nets = Vec::new();
            let mut bad = None;
            for n in v.split(',') {
                match parse_net(n) {
                    Some(net) => nets.push(net),
                    None => {
                        bad = Some(format!("'resolve-net' invalid network '{n}'.."));
                        break;
                    }
                }
            }
            if bad.is_none() {
                r.nets = nets;
            }
            bad
        }
        "resolve-opts" => {
            let mut bad = None;
            for o in v.split(',') {
                match o {
                    "allow-dup-ip" => r.allow_dup_ip = true,
                    "prevent-dup-ip" => r.allow_dup_ip = false,
                    "ignore-weight" => r.ignore_weight = true,
                    _ => {
                        bad = Some(format!(
                            "'resolve-opts' : unknown resolve-opts option '{o}', supported methods are 'allow-dup-ip', 'ignore-weight', and 'prevent-dup-ip'.."
                        ));
                        break;
                    }
                }
            }
            bad
        }
        _ => {
            let mut methods = Vec::new();
            let mut bad = None;
            for m in v.split(',') {
                methods.push(match m {
                    "last" => InitAddr::Last,
                    "libc" => InitAddr::Libc,
                    "none" => InitAddr::None,
                    ip => match ip.parse() {
                        Ok(ip) => InitAddr::Ip(ip),
                        Err(_) => {
                            bad = Some(format!("'init-addr' : unknown init-addr method '{m}', supported methods are 'libc', 'last', 'none'.."));
                            break;
                        }
                    },
                });
            }
            if bad.is_none() {
                l.sd.init_addr = Some(methods);
            }
            bad
        }
    };
    match err {
        Some(msg) => {
            s.server_at(l, msg);
            OptStep::Bad(2)
        }
        None => OptStep::Next(2),
    }
}

/// `<ip>[/<prefix>]` or `<ip>/<mask>` (IPv4).
fn parse_net(n: &str) -> Option<(std::net::IpAddr, u8)> {
    let (ip, len) = match n.split_once('/') {
        Some((ip, len)) => (ip, Some(len)),
        None => (n, None),
    };
    let ip: std::net::IpAddr = ip.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len = match len {
        None => max,
        Some(l) => match l.parse::<u8>() {
            Ok(l) if l <= max => l,
            _ => {
                let m: std::net::Ipv4Addr = l.parse().ok()?;
                u32::from(m).count_ones() as u8
            }
        },
    };
    Some((ip, len))
}

fn opt_weight(s: &mut State<'_>, l: &mut ServerLine<'_>, w: &str, v: Option<&str>) -> OptStep {
    match s.server_int(l, w, v, 0) {
        Some(n) if n <= 256 => {
            l.sd.weight = n;
            OptStep::Next(2)
        }
        Some(n) => {
            let name = l.name;
            s.server_at(
                l,
                format!("weight of server {name} is not within 0 and 256 ({n}).."),
            );
            OptStep::Bad(2)
        }
        None => OptStep::Bad(2),
    }
}

fn opt_maxconn(s: &mut State<'_>, l: &mut ServerLine<'_>, w: &str, v: Option<&str>) -> OptStep {
    match s.server_int(l, w, v, 0) {
        Some(n) => {
            l.sd.maxconn = n;
            OptStep::Next(2)
        }
        None => OptStep::Bad(2),
    }
}

fn opt_rise_fall(s: &mut State<'_>, l: &mut ServerLine<'_>, w: &str, v: Option<&str>) -> OptStep {
    match s.server_int(l, w, v, 1) {
        Some(n) if w == "rise" => l.sd.params.rise = n,
        Some(n) => l.sd.params.fall = n,
        None => return OptStep::Bad(2),
    }
    OptStep::Next(2)
}

fn opt_inter(s: &mut State<'_>, l: &mut ServerLine<'_>, _: &str, v: Option<&str>) -> OptStep {
    let val = v.unwrap_or("");
    match parse_time(val) {
        Ok(d) if !d.is_zero() => {
            l.sd.params.inter = d;
            OptStep::Next(2)
        }
        Ok(_) => {
            s.server_at(l, "'inter' has to be > 0.".to_string());
            OptStep::Bad(2)
        }
        Err(e) => {
            s.server_at(l, time_error_message("inter", val, &e));
            OptStep::Bad(2)
        }
    }
}

fn opt_cookie(s: &mut State<'_>, l: &mut ServerLine<'_>, _: &str, v: Option<&str>) -> OptStep {
    match v.filter(|v| !v.is_empty()) {
        Some(v) => {
            l.sd.cookie = Some(v.to_string());
            OptStep::Next(2)
        }
        None => {
            s.server_at(l, "'cookie' expects <value> as argument..".to_string());
            OptStep::Stop
        }
    }
}

fn opt_check_ssl(s: &mut State<'_>, l: &mut ServerLine<'_>, w: &str, _: Option<&str>) -> OptStep {
    l.sd.params.ssl = w == "check-ssl";
    if l.sd.tls.is_none() {
        // The TLS options with their defaults, for the checks.
        let _ = s.server_tls_option(w, None, &mut l.sd.tls);
    }
    OptStep::Next(1)
}

/// The TLS options (`sslkw.rs`).
fn opt_tls(s: &mut State<'_>, l: &mut ServerLine<'_>, w: &str, v: Option<&str>) -> OptStep {
    match s.server_tls_option(w, v, &mut l.sd.tls) {
        Ok(step) => OptStep::Next(step),
        Err(msg) => {
            s.server_at(l, msg);
            OptStep::Stop
        }
    }
}

/// `ws auto|h1|h2`: the protocol of WebSocket streams (checked against
/// the server's `proto` once the line is read, see `kw_server`).
fn opt_ws(s: &mut State<'_>, l: &mut ServerLine<'_>, _: &str, v: Option<&str>) -> OptStep {
    l.sd.ws = match v {
        Some("auto") => 0,
        Some("h1") => 1,
        Some("h2") => 2,
        _ => {
            s.server_at(l, "'ws' has to be 'auto', 'h1' or 'h2'.".to_string());
            return OptStep::Stop;
        }
    };
    OptStep::Next(2)
}

/// `redir <prefix>`.
fn opt_redir(s: &mut State<'_>, l: &mut ServerLine<'_>, _: &str, v: Option<&str>) -> OptStep {
    match v.filter(|v| !v.is_empty()) {
        Some(v) => {
            l.sd.redir = Some(v.to_string());
            OptStep::Next(2)
        }
        None => {
            s.server_at(l, "'redir' expects <prefix> as argument..".to_string());
            OptStep::Stop
        }
    }
}

/// `pool-max-conn <n>` (-1: no limit), `pool-purge-delay <time>` (0: no
/// idle connection is kept; others: a notice, sluice purges none on a
/// timer), `pool-low-conn <n>` and `max-reuse <n>` (notices), with
/// HAProxy 2.6's messages.
fn opt_pool(s: &mut State<'_>, l: &mut ServerLine<'_>, w: &str, v: Option<&str>) -> OptStep {
    let Some(v) = v.filter(|v| !v.is_empty()) else {
        s.server_at(l, format!("'{w}' expects <value> as argument.."));
        return OptStep::Stop;
    };
    let notice = |s: &mut State<'_>, l: &ServerLine<'_>, why: &str| {
        let ctx = l.ctx.map(|c| format!("'{c}' : ")).unwrap_or_default();
        s.diags.push(Diagnostic::parsing(
            Level::Notice,
            l.loc,
            format!("{ctx}'{w}' is accepted and ignored: {why}."),
        ));
    };
    match w {
        "pool-max-conn" | "max-reuse" => {
            // atol(), as HAProxy reads it.
            let digits: String = v
                .trim_start_matches('-')
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            let n: i64 = digits.parse().unwrap_or(0);
            let n = if v.starts_with('-') { -n } else { n };
            if w == "max-reuse" {
                // HAProxy 2.6 takes any value and counts reuses of HTTP/2
                // connections only (its documentation says the lower
                // layers may not enforce it; HTTP/1 ones are reused
                // without a count, as observed).
                notice(
                    s,
                    l,
                    "as HAProxy 2.6 with HTTP/1 servers, connections are reused without a count (a 'proto h2' server's one connection is shared, not reused)",
                );
                return OptStep::Next(2);
            }
            if n < -1 {
                s.server_at(l, "'pool-max-conn' must be >= -1.".to_string());
                return OptStep::Stop;
            }
            l.sd.opts.pool_max_conn = u32::try_from(n).ok();
        }
        "pool-purge-delay" => match parse_time(v) {
            Ok(d) if d.is_zero() => l.sd.opts.pool_max_conn = Some(0),
            Ok(_) => notice(
                s,
                l,
                "sluice purges no idle server connection on a timer, it keeps each until the server closes it or a request reuses it",
            ),
            Err(crate::config::units::TimeError::BadChar(c)) => {
                s.server_at(
                    l,
                    format!("unexpected character '{c}' in argument to <pool-purge-delay>.."),
                );
                return OptStep::Stop;
            }
            Err(_) => {
                s.server_at(l, format!("'{w}' expects <value> as argument.."));
                return OptStep::Stop;
            }
        },
        _ => notice(
            s,
            l,
            "each of sluice's threads takes an idle connection from another's list whenever its own has none",
        ),
    }
    OptStep::Next(2)
}

/// An option that changes nothing under sluice ([`kw::SERVER_IGNORED`]):
/// a notice says why.
fn opt_ignored(s: &mut State<'_>, l: &mut ServerLine<'_>, w: &str, _: Option<&str>) -> OptStep {
    let (n, why) = kw::ignored(kw::SERVER_IGNORED, w).unwrap_or((0, ""));
    let ctx = l.ctx.map(|c| format!("'{c}' : ")).unwrap_or_default();
    s.diags.push(Diagnostic::parsing(
        Level::Notice,
        l.loc,
        format!("{ctx}'{w}' is accepted and ignored: {why}."),
    ));
    OptStep::Next(1 + n)
}

/// The balancing and check options (`lbkw.rs`).
fn opt_lb(s: &mut State<'_>, l: &mut ServerLine<'_>, w: &str, v: Option<&str>) -> OptStep {
    match s.server_lb_option(l.loc, l.ctx, w, v, &mut l.sd) {
        Some(step) => OptStep::Next(step),
        None => OptStep::Stop,
    }
}
