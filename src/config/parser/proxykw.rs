//! Proxy keywords of `frontend`, `backend`, `listen` and `defaults`: mode,
//! timeouts, logging, `option`, the stats page, `bind`, `monitor`, and the
//! socket and forwarding options.

use super::rulekw::is_token_byte;
use super::*;

impl State<'_> {
    pub(super) fn proxy_kind(&self) -> Option<ProxyKind> {
        match self.section {
            Section::Proxy(i) => self.proxies.get(i).map(|p| p.kind),
            _ => None,
        }
    }

    pub(super) fn px(&mut self) -> &mut Proxy {
        match self.section {
            Section::Proxy(i) if i < self.proxies.len() => &mut self.proxies[i],
            Section::Defaults(i) if i < self.defaults.len() => &mut self.defaults[i].proxy,
            _ => &mut self.scratch,
        }
    }

    /// Is `keyword` usable here? `def`: allowed in defaults; `fe`/`be`:
    /// meaningful with that capability. Reports and returns false if not.
    pub(super) fn cap(&mut self, loc: &Loc, keyword: &str, def: bool, fe: bool, be: bool) -> bool {
        let Some(kind) = self.proxy_kind() else {
            if !def {
                self.alert(
                    loc,
                    format!("'{keyword}' not allowed in 'defaults' section."),
                );
            }
            return def;
        };
        if (fe && kind.has_frontend()) || (be && kind.has_backend()) {
            return true;
        }
        let name = self.px().name.clone();
        let missing = if fe { "no frontend" } else { "no backend" };
        self.warn(
            loc,
            format!(
                "'{keyword}' ignored because {} '{name}' has {missing} capability.",
                type_str(kind)
            ),
        );
        false
    }

    pub(super) fn proxy_line(&mut self, loc: &Loc, words: &[String]) {
        let (neg, words) = if words[0] == "no" && words.len() > 1 {
            (true, &words[1..])
        } else {
            (false, words)
        };
        let k = words[0].as_str();
        if neg && k == "log" && words.len() == 1 {
            // `no log`: this proxy logs nowhere (not even globally).
            let l = &mut self.px().log;
            l.global = false;
            l.targets.clear();
            return;
        }
        if neg && !PROXY.iter().any(|e| e.name == k && e.neg) {
            let msg = format!("negation/default is not supported for {k}.");
            self.diags
                .push(Diagnostic::parsing_tight(Level::Alert, loc, msg));
            return;
        }
        if k == "default" && words.get(1).is_some_and(|w| w == "option") {
            return self.unsupported(loc, "default option");
        }
        if let Some(e) = PROXY.iter().find(|e| e.name == k) {
            return (e.run)(self, loc, words, neg);
        }
        match k {
            _ if legacykw::is_legacy(k) => self.kw_legacy_rewrite(loc, words),
            _ if kw::PROXY_UNSUPPORTED.contains(&k) || kw::haproxy_has(kw::Kind::Proxy, k) => {
                self.unsupported(loc, k)
            }
            _ => {
                let section = match self.proxy_kind() {
                    Some(kind) => kind.keyword(),
                    None => "defaults",
                };
                let sugg = suggest::suffix(k, kw::proxy_keywords());
                self.alert(
                    loc,
                    format!("unknown keyword '{k}' in '{section}' section{sugg}"),
                );
            }
        }
    }

    pub(super) fn kw_mode(&mut self, loc: &Loc, arg: &str) -> Handled {
        match arg {
            "http" => self.px().mode = Mode::Http,
            "tcp" => self.px().mode = Mode::Tcp,
            "health" | "log" | "spop" => self.unsupported(loc, &format!("mode {arg}")),
            _ => self.alert(loc, format!("unknown proxy mode '{arg}'.")),
        }
    }

    pub(super) fn set_timeout(&mut self, loc: &Loc, name: &str, value: &str) {
        // (field selector, frontend-side?, backend-side?)
        let (fe, be) = match name {
            "client" | "client-fin" => (true, false),
            "server-fin" => (false, true),
            "http-request" | "http-keep-alive" | "tarpit" => (true, true),
            "server" | "connect" | "queue" | "check" | "tunnel" => (false, true),
            _ => {
                return self.alert(
                    loc,
                    format!(
                        "'timeout' supports 'client', 'server', 'connect', 'check', 'queue', 'http-keep-alive', 'http-request', 'tunnel', 'tarpit', 'client-fin' and 'server-fin' (got '{name}')"
                    ),
                );
            }
        };
        let label = format!("timeout {name}");
        let d = match parse_time(value) {
            Ok(d) => d,
            Err(e) => return self.alert(loc, time_error_message(&label, value, &e)),
        };
        if let Some(kind) = self.proxy_kind()
            && !((fe && kind.has_frontend()) || (be && kind.has_backend()))
        {
            let pname = self.px().name.clone();
            return self.warn(
                loc,
                format!(
                    "'{label}' will be ignored because {} '{pname}' has no {} capability",
                    type_str(kind),
                    if be { "backend" } else { "frontend" }
                ),
            );
        }
        // 0 means "no timeout" (infinite), like an absent one.
        let v = (!d.is_zero()).then_some(d);
        let t = &mut self.px().timeouts;
        match name {
            "client" => t.client = v,
            "server" => t.server = v,
            "connect" => t.connect = v,
            "queue" => t.queue = v,
            "http-request" => t.http_request = v,
            "http-keep-alive" => t.http_keep_alive = v,
            "check" => t.check = v,
            "tarpit" => t.tarpit = v,
            "client-fin" => t.client_fin = v,
            "server-fin" => t.server_fin = v,
            _ => t.tunnel = v,
        }
    }

    pub(super) fn kw_timeout(&mut self, loc: &Loc, words: &[String]) {
        let name = words.get(1).map_or("", String::as_str);
        let value = words.get(2).map_or("", String::as_str);
        if words.len() > 3 {
            return self.alert(
                loc,
                format!("'timeout {name}' : unexpected argument '{}'.", words[3]),
            );
        }
        self.set_timeout(loc, name, value);
    }

    /// HAProxy ≤ 2.0 aliases. HAProxy 2.6 refuses them with this text;
    /// sluice prints it as a warning and applies the value.
    pub(super) fn kw_legacy_timeout(&mut self, loc: &Loc, words: &[String]) {
        let k = words[0].as_str();
        let modern = match k {
            "clitimeout" => "client",
            "srvtimeout" => "server",
            _ => "connect",
        };
        self.warn(
            loc,
            format!(
                "the '{k}' directive is not supported anymore since HAProxy 2.1. Use 'timeout {modern}'."
            ),
        );
        let value = words.get(1).map_or("", String::as_str);
        self.set_timeout(loc, modern, value);
    }

    /// `log`, `log-format`, `log-tag` in a proxy.
    /// `backlog <n>` (atol, as HAProxy reads it).
    pub(super) fn kw_backlog(&mut self, loc: &Loc, words: &[String]) {
        let Some(arg) = words.get(1).filter(|a| !a.is_empty()) else {
            return self.alert(loc, "'backlog' expects an integer argument.");
        };
        if let Some(kind) = self.proxy_kind()
            && !kind.has_frontend()
        {
            let name = self.px().name.clone();
            return self.warn(
                loc,
                format!(
                    "'backlog' ignored because {} '{name}' has no frontend capability.",
                    type_str(kind)
                ),
            );
        }
        let n = crate::config::units::atoi(arg).clamp(0, i64::from(i32::MAX)) as i32;
        self.px().backlog = Some(n);
    }

    pub(super) fn kw_log(&mut self, loc: &Loc, words: &[String]) {
        crate::sample::stick::context(crate::sample::stick::ArgCtx::Log);
        use crate::config::log as lc;
        let k = words[0].as_str();
        match k {
            "log" => match self.log_words(words).and_then(|w| lc::parse_log(&w)) {
                Ok(lc::LogLine::Global) => self.px().log.global = true,
                Ok(lc::LogLine::Target(t)) => {
                    let name = self.px().name.clone();
                    self.note_ring_ref(loc, &t.sink, Some(name));
                    self.px().log.targets.push(t)
                }
                Err(e) => self.alert(loc, e),
            },
            "log-tag" => match lc::parse_log_tag(words) {
                Ok(t) => self.px().log.tag = Some(t),
                Err(e) => self.alert(loc, e),
            },
            "log-format-sd" => {
                match crate::sample::patref::late(|| lc::parse_log_format_sd(words)) {
                    Ok(f) if self.frontend_format(loc, k) => self.px().log.sd = Some(f),
                    Ok(_) => {}
                    Err(e) => self.alert(loc, e),
                }
            }
            // HAProxy reads the format once the configuration is parsed.
            _ => match crate::sample::patref::late(|| lc::parse_log_format(words)) {
                Ok(f) if self.frontend_format(loc, k) => self.px().log.format = Some(f),
                Ok(_) => {}
                Err(e) => self.alert(loc, e),
            },
        }
    }

    /// Whether a log format keyword (`log-format`, `log-format-sd`) takes
    /// effect here: a section without a frontend ignores it with
    /// HAProxy's warning.
    fn frontend_format(&mut self, loc: &Loc, keyword: &str) -> bool {
        let Some(kind) = self.proxy_kind().filter(|k| !k.has_frontend()) else {
            return true;
        };
        let name = self.px().name.clone();
        let msg = format!(
            "{} '{name}' : '{keyword}' directive is ignored in backends.",
            type_str(kind)
        );
        self.warn(loc, msg);
        false
    }

    /// `unique-id-format <fmt>`, `unique-id-header <name>`: taken in
    /// backends and ignored there, as HAProxy 2.6 does (the frontend's
    /// count); words after the header name are ignored too.
    pub(super) fn kw_unique_id(&mut self, loc: &Loc, words: &[String]) {
        crate::sample::stick::context(crate::sample::stick::ArgCtx::UniqueId);
        let k = words[0].as_str();
        let Some(arg) = words.get(1).filter(|a| !a.is_empty()) else {
            return self.alert(loc, format!("{k} expects an argument."));
        };
        if k == "unique-id-header" {
            self.px().unique_id_header = Some(arg.clone());
            return;
        }
        if words.get(2).is_some_and(|w| !w.is_empty()) {
            return self.alert(
                loc,
                format!("{k} expects only one argument, don't forget to escape spaces!"),
            );
        }
        // HAProxy compiles the format when it checks the configuration.
        let stage = self.http_stage(false);
        if let Err(e) = crate::sample::patref::late(|| {
            crate::config::log_format::LogFormat::compile_other(arg, stage)
        }) {
            self.diags.push(Diagnostic::new(
                Level::Alert,
                Some(loc.clone()),
                format!(
                    "Parsing [{loc}]: failed to parse unique-id : {e}{}",
                    if e.ends_with('.') { "" } else { "." }
                ),
            ));
            return;
        }
        self.px().unique_id_format = Some(arg.clone());
    }

    /// `option httplog [clf]`, `option tcplog`, `option dontlognull`,
    /// `option dontlog-normal`, `option log-separate-errors`, `option
    /// logasap`.
    pub(super) fn log_option(&mut self, loc: &Loc, words: &[String], neg: bool) {
        use crate::config::log as lc;
        let name = words[1].as_str();
        if matches!(name, "httplog" | "tcplog") {
            if neg {
                return self.tight(
                    Level::Alert,
                    loc,
                    format!("negation/default is not supported for option '{name}'."),
                );
            }
            let f = if name == "tcplog" {
                if words.len() > 2 {
                    return self.alert(loc, "'option tcplog' does not expect any argument.");
                }
                Ok(lc::LogFormatKind::Tcp)
            } else {
                lc::parse_httplog(words)
            };
            match f {
                Ok(f) => self.px().log.format = Some(f),
                Err(e) => self.alert(loc, e),
            }
            return;
        }
        if words.len() > 2 {
            return self.alert(
                loc,
                format!("'option {name}' does not expect any argument."),
            );
        }
        if !self.cap(loc, &format!("option {name}"), true, true, false) {
            return;
        }
        self.px().log.set_option(name, !neg);
    }

    pub(super) fn kw_option(&mut self, loc: &Loc, words: &[String], neg: bool) {
        let Some(name) = words.get(1) else {
            return self.alert(loc, "'option' expects an option name.");
        };
        if let Some(e) = OPTIONS.iter().find(|e| e.name == name) {
            return (e.run)(self, loc, words, neg);
        }
        if let Some((_, why)) = kw::OPTIONS_IGNORED.iter().find(|(n, _)| *n == name) {
            // A notice, as for the global keywords: haproxy says nothing
            // of these options, so `zero-warning` configurations must
            // still start.
            return self.diags.push(Diagnostic::parsing(
                Level::Notice,
                loc,
                format!("'option {name}' is accepted and ignored: {why}."),
            ));
        }
        let n = name.as_str();
        if kw::OPTIONS_UNSUPPORTED.contains(&n) || kw::haproxy_has(kw::Kind::Option, n) {
            return self.unsupported(loc, &format!("option {n}"));
        }
        let sugg = suggest::suffix(
            n,
            kw::OPTIONS_SUPPORTED
                .iter()
                .chain(kw::OPTIONS_UNSUPPORTED)
                .copied(),
        );
        self.alert(loc, format!("unknown option '{n}'{sugg}"));
    }

    /// `option accept-invalid-http-request|response`.
    /// `option http-restrict-req-hdr-names preserve|delete|reject`, with
    /// HAProxy 2.6's messages.
    fn opt_restrict_hdr_names(&mut self, loc: &Loc, words: &[String], neg: bool) {
        use crate::config::model::HdrNamePolicy;
        let name = words[1].as_str();
        if neg {
            return self.tight(
                Level::Alert,
                loc,
                format!("negation/default is not supported for option '{name}'."),
            );
        }
        let expects = format!("option '{name}' expects 'preserve', 'reject' or 'delete' option.");
        let policy = match words.get(2).map(String::as_str) {
            None | Some("") => {
                return self.alert(loc, format!("missing parameter. {expects}"));
            }
            Some("preserve") => HdrNamePolicy::Preserve,
            Some("delete") => HdrNamePolicy::Delete,
            Some("reject") => HdrNamePolicy::Reject,
            Some(other) => {
                return self.alert(loc, format!("invalid parameter '{other}'. {expects}"));
            }
        };
        if let Some(extra) = words.get(3) {
            return self.alert(
                loc,
                format!("'option' cannot handle unexpected argument '{extra}'."),
            );
        }
        if self.cap(loc, &format!("option {name}"), true, true, true) {
            self.px().restrict_hdr_names = policy;
        }
    }

    fn opt_accept_invalid(&mut self, loc: &Loc, words: &[String], neg: bool) {
        let name = words[1].as_str();
        let req = name == "accept-invalid-http-request";
        if words.len() > 2 {
            return self.alert(
                loc,
                format!("'option {name}' does not expect any argument."),
            );
        }
        // The request side is the frontend's, the response side the
        // backend's, as in HAProxy.
        if self.cap(loc, &format!("option {name}"), true, req, !req) {
            let p = self.px();
            if req {
                p.accept_invalid_req = !neg;
            } else {
                p.accept_invalid_resp = !neg;
            }
        }
    }

    /// An option without arguments that sets one flag of the proxy, with
    /// the capability it needs (`fe`: frontend, else backend).
    fn opt_flag(
        &mut self,
        loc: &Loc,
        words: &[String],
        neg: bool,
        fe: bool,
        flag: fn(&mut Proxy) -> &mut bool,
    ) {
        let name = words[1].as_str();
        if words.len() > 2 {
            return self.alert(
                loc,
                format!("'option {name}' does not expect any argument."),
            );
        }
        if self.cap(loc, &format!("option {name}"), true, fe, !fe) {
            *flag(self.px()) = !neg;
        }
    }

    /// [`Self::opt_flag`] for an option of frontends and backends alike.
    fn opt_flag_both(
        &mut self,
        loc: &Loc,
        words: &[String],
        neg: bool,
        flag: fn(&mut Proxy) -> &mut bool,
    ) {
        let name = words[1].as_str();
        if let Some(extra) = words.get(2) {
            return self.alert(
                loc,
                format!("'option {name}' cannot handle unexpected argument '{extra}'."),
            );
        }
        if self.cap(loc, &format!("option {name}"), true, true, true) {
            *flag(self.px()) = !neg;
        }
    }

    /// `option http-keep-alive|http-server-close|httpclose`.
    fn opt_conn_mode(&mut self, loc: &Loc, words: &[String], neg: bool, mode: HttpConnMode) {
        if words.len() > 2 {
            return self.alert(
                loc,
                format!("'option {}' does not expect any argument.", words[1]),
            );
        }
        let p = self.px();
        if !neg {
            p.conn_mode = mode;
        } else if p.conn_mode == mode {
            // Cancelling the current mode returns to HAProxy's default.
            p.conn_mode = HttpConnMode::KeepAlive;
        }
    }

    /// The section's stats page, enabled with the defaults if it was not.
    pub(super) fn stats_page(&mut self) -> &mut StatsPage {
        self.px().stats.get_or_insert_with(StatsPage::enabled)
    }

    pub(super) fn kw_stats(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "stats", true, true, true) {
            return;
        }
        let arg = words.get(2).filter(|a| !a.is_empty()).cloned();
        match words.get(1).map(String::as_str) {
            Some("enable") => {
                self.stats_page();
            }
            Some("uri") => match arg {
                Some(u) => self.stats_page().uri = u,
                None => self.alert(loc, "'uri' needs an URI prefix."),
            },
            Some("realm") => match arg {
                Some(r) => self.stats_page().realm = Some(r),
                None => self.alert(loc, "'realm' needs an realm name."),
            },
            Some("auth") => match arg.filter(|a| a.contains(':')) {
                Some(a) => self.stats_page().auth.push(a),
                None => self.alert(loc, "'auth' needs a user:password account."),
            },
            Some("refresh") => {
                let text = arg.unwrap_or_default();
                // A bare number is in seconds here.
                let secs = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
                    text.parse::<u64>().ok()
                } else {
                    crate::config::units::parse_time(&text)
                        .ok()
                        .map(|d| d.as_secs())
                };
                match secs {
                    Some(s) => self.stats_page().refresh = Some(s),
                    None => self.alert(loc, "'refresh' needs a valid interval."),
                }
            }
            Some("hide-version") => self.stats_page().hide_version = true,
            Some("show-legends") => self.stats_page().show_legends = true,
            Some("show-modules") => self.stats_page().show_modules = true,
            Some("show-node") => self.stats_show_node(loc, arg),
            Some("show-desc") => self.stats_show_desc(loc, words),
            Some("admin") => self.stats_admin(loc, words),
            Some("http-request") => self.stats_http_request(loc, words),
            Some(sub) if kw::STATS_PROXY_UNSUPPORTED.contains(&sub) => {
                self.unsupported(loc, &format!("stats {sub}"))
            }
            Some("socket" | "timeout" | "maxconn") => self.alert(
                loc,
                format!("'stats {}' is only allowed in 'global' section.", words[1]),
            ),
            _ => self.alert(
                loc,
                "'stats' expects 'admin', 'uri', 'realm', 'auth', 'scope', 'enable', 'hide-version', 'show-node', 'show-desc' or 'show-legends'.",
            ),
        }
    }

    /// `stats admin if|unless <cond>`: HAProxy's messages; the condition's
    /// ACLs are the section's, as for any rule.
    pub(super) fn stats_admin(&mut self, loc: &Loc, words: &[String]) {
        if self.proxy_kind().is_none() {
            return self.alert(loc, "'stats admin' not allowed in 'defaults' section.");
        }
        if !matches!(words.get(2).map(String::as_str), Some("if" | "unless")) {
            return self.alert(
                loc,
                "'stats admin' requires either 'if' or 'unless' followed by a condition.",
            );
        }
        match self.condition(loc, &words[2..]) {
            Ok(c) => self.stats_page().admin.push(c),
            Err(e) => self.alert(
                loc,
                format!("error detected while parsing a 'stats admin' rule : {e}."),
            ),
        }
    }

    /// `stats http-request allow|deny|auth [realm <realm>] [if|unless
    /// <cond>]`.
    pub(super) fn stats_http_request(&mut self, loc: &Loc, words: &[String]) {
        use crate::config::model::StatsAction;
        if self.proxy_kind().is_none() {
            return self.alert(
                loc,
                "'stats http-request' not allowed in 'defaults' section.",
            );
        }
        let mut at = 3;
        let action = match words.get(2).map(String::as_str) {
            Some("allow") => StatsAction::Allow,
            Some("deny") => StatsAction::Deny,
            Some("auth") => match words.get(3).map(String::as_str) {
                Some("realm") => {
                    let Some(r) = words.get(4) else {
                        return self.alert(loc, "'stats http-request auth' : missing realm value.");
                    };
                    at = 5;
                    StatsAction::Auth(Some(r.clone()))
                }
                _ => StatsAction::Auth(None),
            },
            _ => {
                return self.alert(
                    loc,
                    "'stats http-request' expects 'allow', 'deny', 'auth', followed by an optional condition.",
                );
            }
        };
        let cond = match words.get(at).map(String::as_str) {
            None => None,
            Some("if" | "unless") => match self.condition(loc, &words[at..]) {
                Ok(c) => Some(c),
                Err(e) => {
                    return self.alert(
                        loc,
                        format!("error detected while parsing a 'stats http-request' rule : {e}."),
                    );
                }
            },
            Some(other) => {
                return self.alert(
                    loc,
                    format!("'stats http-request' expects either 'if' or 'unless' followed by a condition but found '{other}'."),
                );
            }
        };
        self.stats_page().rules.push((action, cond));
    }

    /// One `tune.h2.*` keyword, with HAProxy 2.6's bounds.
    pub(super) fn tune_h2(&mut self, loc: &Loc, k: &str, arg: Option<&str>) {
        let (min, max) = match k {
            // HPACK's dynamic table: HAProxy caps it at 64 KiB.
            "tune.h2.header-table-size" => (0, 65536),
            // RFC 9113 §6.5.2: at most 2^31-1.
            "tune.h2.initial-window-size" => (0, (1 << 31) - 1),
            "tune.h2.max-concurrent-streams" => (1, u32::MAX),
            // RFC 9113 §6.5.2: 16384 to 2^24-1.
            _ => (16384, (1 << 24) - 1),
        };
        let Some(v) = arg.and_then(parse_u32).filter(|v| (min..=max).contains(v)) else {
            return self.alert(
                loc,
                format!("'{k}' expects a numeric value between {min} and {max}."),
            );
        };
        let t = &mut self.global.h2;
        let slot = match k {
            "tune.h2.header-table-size" => &mut t.header_table_size,
            "tune.h2.initial-window-size" => &mut t.initial_window_size,
            "tune.h2.max-concurrent-streams" => &mut t.max_concurrent_streams,
            _ => &mut t.max_frame_size,
        };
        *slot = Some(v);
    }

    pub(super) fn kw_bind(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "bind", false, true, false) {
            return;
        }
        let Some(text) = words.get(1) else {
            return self.alert(
                loc,
                "'bind' expects {<path>|[addr1]:port1[-end1]}{,[addr]:port[-end]}... as arguments.",
            );
        };
        let (mut ok, tls, accept_proxy, proto, v6, perms, id, name, sock) =
            match self.bind_options(loc, text, &words[2..]) {
                Ok(o) => (
                    true,
                    o.tls,
                    o.accept_proxy,
                    o.proto,
                    o.v6,
                    o.perms,
                    o.id,
                    o.name,
                    o.sock,
                ),
                Err(()) => (
                    false,
                    None,
                    false,
                    BindProto::Auto,
                    BindV6::System,
                    crate::config::model::UnixPerms::default(),
                    None,
                    None,
                    Default::default(),
                ),
            };
        let mut binds = Vec::new();
        // HAProxy quotes the argument as written (variables unexpanded).
        let shown = self
            .raw_words
            .get(1)
            .cloned()
            .unwrap_or_else(|| text.clone());
        for item in text.split(',') {
            let item = match self.addr_word(item) {
                Ok(i) => i,
                Err(e) => {
                    ok = false;
                    self.alert(loc, format!("'bind' : {e}"));
                    continue;
                }
            };
            let item = item.as_str();
            // An inherited listening socket (systemd, a supervisor): checked
            // when sluice starts, where the descriptor exists.
            // A UNIX socket (`/path`, `unix@`, `abns@`) has no address.
            let place = if let Some(n) = item.strip_prefix("fd@") {
                match addr::fd_ref_checked(n) {
                    Ok(Ok(fd)) => Ok((Vec::new(), Some(fd), None)),
                    Ok(Err(why)) => {
                        self.unresolved_fd(loc, "bind", item, &why);
                        Ok((Vec::new(), Some(addr::UNRESOLVED_FD), None))
                    }
                    Err(e) => Err(format!("{e} in '{shown}'")),
                }
            } else if let Some(name) = addr::unix_name(item) {
                // The global `unix-bind` fills in what the line leaves.
                let d = &self.global.unix_bind;
                let perms = crate::config::model::UnixPerms {
                    mode: perms.mode.or(d.perms.mode),
                    uid: perms.uid.or(d.perms.uid),
                    gid: perms.gid.or(d.perms.gid),
                };
                let prefix = d.prefix.clone();
                name.map(|name| {
                    let name = match (name, prefix) {
                        (crate::config::model::UnixName::Path(p), Some(pre)) => {
                            crate::config::model::UnixName::Path(
                                format!("{pre}{}", p.display()).into(),
                            )
                        }
                        (name, _) => name,
                    };
                    let unix = crate::config::model::UnixBind { name, perms };
                    (Vec::new(), None, Some(unix))
                })
            } else {
                addr::bind_addrs(item, &shown, self.resolve)
                    .map(|addrs| (addrs, None, None))
                    .map_err(|e| e.to_string())
            };
            match place {
                Ok((addrs, fd, unix)) => binds.push(Bind {
                    text: item.to_string(),
                    addrs,
                    fd,
                    loc: loc.clone(),
                    accept_proxy,
                    tls: tls.clone(),
                    proto,
                    v6,
                    unix,
                    id,
                    name: name.clone(),
                    sock: sock.clone(),
                }),
                Err(e) => {
                    ok = false;
                    self.alert(loc, format!("'bind' : {e}"));
                }
            }
        }
        let section = format!("'bind {shown}' in section '{}'", self.px().kind.keyword());
        // An id names one listening socket: a line of several (a list, a
        // port range) cannot take one; nor can two lines share one.
        let sockets: usize = binds.iter().map(|b| b.addrs.len().max(1)).sum();
        if ok && let Some(n) = id {
            let used = self.px().binds.iter().find(|b| b.id == Some(n));
            if sockets > 1 {
                ok = false;
                self.alert(
                    loc,
                    format!("{section} : 'id' can only be used with a single socket"),
                );
            } else if let Some(b) = used {
                ok = false;
                let msg = format!(
                    "{section} : 'id' : custom id {n} already used at {}:{} ('bind {}')",
                    b.loc.file, b.loc.line, b.text
                );
                self.alert(loc, msg);
            }
        }
        if !ok {
            // Keep a trace of the line so that validation does not also
            // complain that the proxy has no bind at all.
            binds = vec![Bind {
                text: text.clone(),
                addrs: Vec::new(),
                fd: None,
                loc: loc.clone(),
                accept_proxy,
                tls: None,
                proto,
                v6,
                unix: None,
                id: None,
                name: None,
                sock: Default::default(),
            }];
        }
        self.px().binds.extend(binds);
    }

    /// `monitor-uri <uri>`.
    pub(super) fn kw_monitor_uri(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "monitor-uri", true, true, false) {
            return;
        }
        match words.get(1).filter(|u| !u.is_empty()) {
            Some(uri) if words.len() == 2 => self.px().monitor_uri = Some(uri.clone()),
            _ => self.alert(loc, "'monitor-uri' expects an URI."),
        }
    }

    /// `monitor fail if|unless <cond>`.
    pub(super) fn kw_monitor(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "monitor", false, true, false) {
            return;
        }
        if words.get(1).map(String::as_str) != Some("fail")
            || !matches!(words.get(2).map(String::as_str), Some("if" | "unless"))
        {
            return self.alert(
                loc,
                "'monitor' expects 'fail' followed by 'if' or 'unless' and a condition.",
            );
        }
        if let Some((_, Some(cond))) = self.rule_condition(loc, words, "monitor", "fail") {
            self.px().monitor_fail = Some(cond);
        }
    }

    /// Options an old configuration carries that need no work from sluice
    /// (accepted with a warning saying so), `option forceclose` (HAProxy
    /// 1.x's `httpclose`), and the TCP keep-alive options. None when `name`
    /// is none of them.
    pub(super) fn legacy_or_socket_option(
        &mut self,
        loc: &Loc,
        name: &str,
        words: &[String],
        neg: bool,
    ) -> Option<()> {
        if words.len() > 2 && matches!(name, "forceclose" | "tcpka" | "clitcpka" | "srvtcpka") {
            self.alert(
                loc,
                format!("'option {name}' does not expect any argument."),
            );
            return Some(());
        }
        match name {
            // sluice splices wherever it can on its own (`nosplice` turns
            // it off): the options ask for what is already done.
            "splice-auto" | "splice-request" | "splice-response" => {}
            "forceclose" => {
                self.warn(
                    loc,
                    "'option forceclose' is deprecated in favor of 'option httpclose' (HAProxy 1.x); it is handled as 'option httpclose'.",
                );
                let p = self.px();
                p.conn_mode = if neg {
                    HttpConnMode::KeepAlive
                } else {
                    HttpConnMode::Close
                };
            }
            "tcpka" | "clitcpka" | "srvtcpka" => {
                let (fe, be) = (name != "srvtcpka", name != "clitcpka");
                if !self.cap(loc, &format!("option {name}"), true, fe, be) {
                    return Some(());
                }
                let p = self.px();
                if name != "srvtcpka" {
                    p.tcpka.client = !neg;
                }
                if name != "clitcpka" {
                    p.tcpka.server = !neg;
                }
            }
            _ => return None,
        }
        Some(())
    }

    /// `option forwardfor [except <net>] [header <name>] [if-none]`.
    pub(super) fn forwardfor_option(&mut self, loc: &Loc, words: &[String], neg: bool) {
        if !self.cap(loc, "option forwardfor", true, true, true) {
            return;
        }
        if neg {
            self.px().forwardfor = None;
            return;
        }
        let mut ff = ForwardFor {
            except: None,
            header: "x-forwarded-for".into(),
            if_none: false,
        };
        let mut i = 2;
        while let Some(w) = words.get(i) {
            match w.as_str() {
                "except" => {
                    let v = words.get(i + 1).map_or("", String::as_str);
                    match crate::sample::pattern::Net::parse(v) {
                        Some(crate::sample::pattern::Net { addr, prefix }) => {
                            ff.except = Some((addr, prefix));
                        }
                        _ => {
                            return self.alert(
                                loc,
                                format!("'option forwardfor' : invalid address/mask '{v}' after 'except'."),
                            );
                        }
                    }
                    i += 2;
                }
                "header" => {
                    let v = words.get(i + 1).map_or("", String::as_str);
                    if v.is_empty() || !v.bytes().all(is_token_byte) {
                        return self
                            .alert(loc, "'option forwardfor' : 'header' expects a header name.");
                    }
                    ff.header = v.to_ascii_lowercase();
                    i += 2;
                }
                "if-none" => {
                    ff.if_none = true;
                    i += 1;
                }
                other => {
                    return self.alert(
                        loc,
                        format!("'option forwardfor' : unknown parameter '{other}'. Supported parameters are 'except', 'header' and 'if-none'."),
                    );
                }
            }
        }
        self.px().forwardfor = Some(ff);
    }
}

/// The proxy sections' keywords, in the order suggestions try them: the
/// parser dispatches through this table and [`kw::PROXY_SUPPORTED`] is
/// read from it. `neg`: the keyword takes a `no` prefix.
pub(crate) const PROXY: &[ProxyKw] = &[
    kwd("capture", |s, loc, w, _| s.kw_capture(loc, w)),
    kwd("declare", |s, loc, w, _| s.kw_declare(loc, w)),
    kwd("cookie", |s, loc, w, _| s.kw_cookie(loc, w)),
    kwd("redirect", |s, loc, w, _| s.kw_redirect(loc, w)),
    kwd("monitor-uri", |s, loc, w, _| s.kw_monitor_uri(loc, w)),
    kwd("monitor", |s, loc, w, _| s.kw_monitor(loc, w)),
    kwd("mode", |s, loc, w, _| {
        s.kw_mode(loc, w.get(1).map_or("", String::as_str))
    }),
    kwd("timeout", |s, loc, w, _| s.kw_timeout(loc, w)),
    kwd("clitimeout", |s, loc, w, _| s.kw_legacy_timeout(loc, w)),
    kwd("srvtimeout", |s, loc, w, _| s.kw_legacy_timeout(loc, w)),
    kwd("contimeout", |s, loc, w, _| s.kw_legacy_timeout(loc, w)),
    kwd("balance", |s, loc, w, _| s.kw_balance(loc, w)),
    kwd("maxconn", |s, loc, w, _| s.kw_proxy_maxconn(loc, w)),
    kwd("retries", |s, loc, w, _| s.kw_retries(loc, w)),
    kwd("retry-on", |s, loc, w, _| s.kw_retry_on(loc, w)),
    kwd("http-reuse", |s, loc, w, _| s.kw_http_reuse(loc, w)),
    Kwd {
        neg: true,
        ..kwd("option", |s, loc, w, neg| s.kw_option(loc, w, neg))
    },
    kwd("stats", |s, loc, w, _| s.kw_stats(loc, w)),
    kwd("bind", |s, loc, w, _| s.kw_bind(loc, w)),
    kwd("acl", |s, loc, w, _| s.kw_acl(loc, w)),
    kwd("use_backend", |s, loc, w, _| s.kw_use_backend(loc, w)),
    kwd("default_backend", |s, loc, w, _| {
        s.kw_default_backend(loc, w)
    }),
    kwd("http-request", |s, loc, w, _| s.kw_http_request(loc, w)),
    kwd("server", |s, loc, w, _| s.kw_server(loc, w)),
    kwd("default-server", |s, loc, w, _| s.kw_default_server(loc, w)),
    kwd("server-template", |s, loc, w, _| {
        s.kw_server_template(loc, w)
    }),
    kwd("load-server-state-from-file", |s, loc, w, _| {
        s.kw_server_state(loc, w)
    }),
    kwd("server-state-file-name", |s, loc, w, _| {
        s.kw_server_state(loc, w)
    }),
    kwd("hash-type", |s, loc, w, _| s.kw_hash_type(loc, w)),
    kwd("fullconn", |s, loc, w, _| s.kw_fullconn(loc, w)),
    kwd("id", |s, loc, w, _| s.kw_proxy_id(loc, w)),
    kwd("disabled", |s, loc, w, _| s.kw_disabled(loc, w, true)),
    kwd("enabled", |s, loc, w, _| s.kw_disabled(loc, w, false)),
    kwd("http-check", |s, loc, w, _| s.kw_http_check(loc, w)),
    kwd("tcp-check", |s, loc, w, _| s.kw_tcp_check(loc, w)),
    kwd("email-alert", |s, loc, w, _| s.kw_email_alert(loc, w)),
    kwd("external-check", |s, loc, w, _| s.kw_external_check(loc, w)),
    kwd("log", |s, loc, w, _| s.kw_log(loc, w)),
    kwd("log-format", |s, loc, w, _| s.kw_log(loc, w)),
    kwd("log-format-sd", |s, loc, w, _| s.kw_log(loc, w)),
    kwd("backlog", |s, loc, w, _| s.kw_backlog(loc, w)),
    kwd("bind-process", |s, loc, _, _| {
        s.tight(
            Level::Warning,
            loc,
            "'bind-process' has no effect, is deprecated, and will be removed in version 2.7.",
        )
    }),
    kwd("log-tag", |s, loc, w, _| s.kw_log(loc, w)),
    kwd("unique-id-format", |s, loc, w, _| s.kw_unique_id(loc, w)),
    kwd("unique-id-header", |s, loc, w, _| s.kw_unique_id(loc, w)),
    kwd("errorfile", |s, loc, w, _| s.kw_errorfile(loc, w)),
    kwd("http-error", |s, loc, w, _| s.kw_http_error(loc, w)),
    kwd("http-response", |s, loc, w, _| s.kw_http_response(loc, w)),
    kwd("http-after-response", |s, loc, w, _| {
        s.kw_http_after_response(loc, w)
    }),
    kwd("tcp-request", |s, loc, w, _| s.kw_tcp_request(loc, w)),
    kwd("tcp-response", |s, loc, w, _| s.kw_tcp_response(loc, w)),
    kwd("stick-table", |s, loc, w, _| s.kw_stick_table(loc, w)),
    kwd("stick", |s, loc, w, _| s.kw_stick(loc, w)),
    kwd("compression", |s, loc, w, _| s.kw_compression(loc, w)),
    kwd("filter", |s, loc, w, _| s.kw_filter(loc, w)),
    kwd("description", |s, loc, w, _| s.kw_description(loc, w)),
    kwd("errorfiles", |s, loc, w, _| s.kw_errorfiles(loc, w)),
    kwd("errorloc", |s, loc, w, _| s.kw_errorloc(loc, w)),
    kwd("errorloc302", |s, loc, w, _| s.kw_errorloc(loc, w)),
    kwd("errorloc303", |s, loc, w, _| s.kw_errorloc(loc, w)),
    kwd("source", |s, loc, w, _| s.kw_source(loc, w)),
    kwd("dispatch", |s, loc, w, _| s.kw_dispatch(loc, w)),
    kwd("use-fcgi-app", |s, loc, w, _| s.kw_use_fcgi_app(loc, w)),
    kwd("http-send-name-header", |s, loc, w, _| {
        s.kw_send_name_header(loc, w)
    }),
    kwd("rate-limit", |s, loc, w, _| s.kw_rate_limit(loc, w)),
    kwd("force-persist", |s, loc, w, _| s.kw_persist_rule(loc, w)),
    kwd("use-server", |s, loc, w, _| s.kw_use_server(loc, w)),
    kwd("persist", |s, loc, w, _| s.kw_persist(loc, w)),
    kwd("ignore-persist", |s, loc, w, _| s.kw_persist_rule(loc, w)),
    kwd("max-keep-alive-queue", |s, loc, w, _| {
        s.kw_max_keep_alive_queue(loc, w)
    }),
    kwd("clitcpka-cnt", |s, loc, w, _| s.kw_tcpka_tuning(loc, w)),
    kwd("clitcpka-idle", |s, loc, w, _| s.kw_tcpka_tuning(loc, w)),
    kwd("clitcpka-intvl", |s, loc, w, _| s.kw_tcpka_tuning(loc, w)),
    kwd("srvtcpka-cnt", |s, loc, w, _| s.kw_tcpka_tuning(loc, w)),
    kwd("srvtcpka-idle", |s, loc, w, _| s.kw_tcpka_tuning(loc, w)),
    kwd("srvtcpka-intvl", |s, loc, w, _| s.kw_tcpka_tuning(loc, w)),
];

impl State<'_> {
    fn kw_proxy_maxconn(&mut self, loc: &Loc, words: &[String]) {
        let arg = words.get(1).map_or("", String::as_str);
        if self.cap(loc, "maxconn", true, true, false) {
            match parse_u32(arg) {
                Some(n) => self.px().maxconn = Some(n),
                None => self.alert(
                    loc,
                    format!("'maxconn' expects an integer argument (got '{arg}')."),
                ),
            }
        }
    }

    fn kw_retries(&mut self, loc: &Loc, words: &[String]) {
        let arg = words.get(1).map_or("", String::as_str);
        if self.cap(loc, "retries", true, false, true) {
            match parse_u32(arg) {
                Some(n) => self.px().retries = n,
                None => self.alert(
                    loc,
                    format!("'retries' expects an integer argument (got '{arg}')."),
                ),
            }
        }
    }

    fn kw_http_reuse(&mut self, loc: &Loc, words: &[String]) {
        if self.cap(loc, "http-reuse", true, false, true) {
            let v = match words.get(1).map_or("", String::as_str) {
                "never" => HttpReuse::Never,
                "safe" => HttpReuse::Safe,
                "aggressive" => HttpReuse::Aggressive,
                "always" => HttpReuse::Always,
                _ => {
                    return self.alert(
                        loc,
                        "'http-reuse' only supports 'never', 'safe', 'aggressive', 'always'",
                    );
                }
            };
            self.px().http_reuse = v;
        }
    }

    fn kw_default_backend(&mut self, loc: &Loc, words: &[String]) {
        let arg = words.get(1).map_or("", String::as_str);
        if self.cap(loc, "default_backend", true, true, false) {
            if arg.is_empty() {
                return self.alert(loc, "'default_backend' expects a backend name.");
            }
            if words.len() > 2 {
                return self.alert(
                    loc,
                    format!("'default_backend' : unexpected argument '{}'.", words[2]),
                );
            }
            self.px().default_backend = Some((arg.to_string(), loc.clone()));
        }
    }
}

/// The `option` names, in the order suggestions try them: `kw_option`
/// dispatches through this table and [`kw::OPTIONS_SUPPORTED`] is read
/// from it.
pub(crate) const OPTIONS: &[ProxyKw] = &[
    kwd("forceclose", opt_socket),
    kwd("tcpka", opt_socket),
    kwd("clitcpka", opt_socket),
    kwd("srvtcpka", opt_socket),
    kwd("http-keep-alive", |s, loc, w, neg| {
        s.opt_conn_mode(loc, w, neg, HttpConnMode::KeepAlive)
    }),
    kwd("http-server-close", |s, loc, w, neg| {
        s.opt_conn_mode(loc, w, neg, HttpConnMode::ServerClose)
    }),
    kwd("httpclose", |s, loc, w, neg| {
        s.opt_conn_mode(loc, w, neg, HttpConnMode::Close)
    }),
    kwd("httpchk", opt_lb),
    kwd("allbackups", opt_lb),
    kwd("tcp-check", opt_lb),
    kwd("redis-check", opt_lb),
    kwd("mysql-check", opt_lb),
    kwd("pgsql-check", opt_lb),
    kwd("smtpchk", opt_lb),
    kwd("ldap-check", opt_lb),
    kwd("ssl-hello-chk", opt_lb),
    kwd("spop-check", opt_lb),
    kwd("external-check", |s, loc, w, neg| {
        s.opt_external_check(loc, w, neg)
    }),
    kwd("httplog", opt_log),
    kwd("tcplog", opt_log),
    kwd("dontlognull", opt_log),
    kwd("dontlog-normal", opt_log),
    kwd("http-restrict-req-hdr-names", |s, loc, w, neg| {
        s.opt_restrict_hdr_names(loc, w, neg)
    }),
    kwd("accept-invalid-http-request", |s, loc, w, neg| {
        s.opt_accept_invalid(loc, w, neg)
    }),
    kwd("accept-invalid-http-response", |s, loc, w, neg| {
        s.opt_accept_invalid(loc, w, neg)
    }),
    kwd("log-health-checks", |s, loc, w, neg| {
        s.opt_flag(loc, w, neg, false, |p| &mut p.log_health_checks)
    }),
    kwd("log-separate-errors", opt_log),
    kwd("logasap", opt_log),
    kwd("forwardfor", |s, loc, w, neg| {
        s.forwardfor_option(loc, w, neg)
    }),
    kwd("h1-case-adjust-bogus-client", |s, loc, w, neg| {
        s.opt_flag(loc, w, neg, true, |p| &mut p.h1_case_bogus_client)
    }),
    kwd("h1-case-adjust-bogus-server", |s, loc, w, neg| {
        s.opt_flag(loc, w, neg, false, |p| &mut p.h1_case_bogus_server)
    }),
    kwd("http-ignore-probes", |s, loc, w, neg| {
        s.opt_flag(loc, w, neg, true, |p| &mut p.ignore_probes)
    }),
    kwd("http-buffer-request", |s, loc, w, neg| {
        s.opt_flag_both(loc, w, neg, |p| &mut p.buffer_request)
    }),
    kwd("disable-h2-upgrade", |s, loc, w, neg| {
        s.opt_flag(loc, w, neg, true, |p| &mut p.disable_h2_upgrade)
    }),
    kwd("redispatch", |s, loc, w, neg| {
        s.redispatch_option(loc, w, neg)
    }),
    kwd("persist", |s, loc, w, neg| s.persist_option(loc, w, neg)),
    kwd("transparent", |s, loc, w, neg| {
        s.opt_transparent(loc, w, neg)
    }),
    kwd("originalto", |s, loc, w, neg| s.opt_originalto(loc, w, neg)),
    kwd("httpslog", |s, loc, _, neg| s.opt_httpslog(loc, neg)),
    kwd("checkcache", |s, loc, w, neg| s.opt_checkcache(loc, w, neg)),
    kwd("http-use-proxy-header", |s, loc, w, _| {
        s.opt_use_proxy_header(loc, w)
    }),
    kwd("splice-auto", opt_socket),
    kwd("splice-request", opt_socket),
    kwd("splice-response", opt_socket),
];

fn opt_log(s: &mut State<'_>, loc: &Loc, words: &[String], neg: bool) {
    s.log_option(loc, words, neg);
}

fn opt_lb(s: &mut State<'_>, loc: &Loc, words: &[String], neg: bool) {
    s.lb_option(loc, words, neg);
}

fn opt_socket(s: &mut State<'_>, loc: &Loc, words: &[String], neg: bool) {
    s.legacy_or_socket_option(loc, &words[1], words, neg);
}

impl State<'_> {
    /// `stats show-node [<name>]`: HAProxy takes letters, digits, `-`, `_`
    /// and `.` in a node name.
    fn stats_show_node(&mut self, loc: &Loc, name: Option<String>) {
        if let Some(n) = &name {
            let ok = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
            if !n.bytes().all(ok) {
                return self.tight(
                    Level::Alert,
                    loc,
                    "'stats show-node' invalid node name - should be a stringwith digits(0-9), letters(A-Z, a-z), hyphen(-) or underscode(_).",
                );
            }
        }
        self.stats_page().show_node = Some(name);
    }

    /// `stats show-desc [<text>...]`: the words joined with one space, or
    /// the global `description` as it stands when the line is read (none:
    /// HAProxy warns and shows nothing).
    fn stats_show_desc(&mut self, loc: &Loc, words: &[String]) {
        let text = words[2..].join(" ");
        let desc = if text.is_empty() {
            self.global.description.clone()
        } else {
            Some(text)
        };
        match desc {
            Some(d) => self.stats_page().show_desc = Some(d),
            None => self.tight(
                Level::Warning,
                loc,
                "'show-desc' requires a parameter or 'desc' to be set in the global section.",
            ),
        }
    }
}
