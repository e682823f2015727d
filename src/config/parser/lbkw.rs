//! Load-balancing and health-check keywords: `balance`, `hash-type`,
//! `fullconn`, `option httpchk|tcp-check|allbackups`, `http-check`,
//! `tcp-check`, and the server options of balancing and checks.

use std::time::Duration;

use super::*;

impl State<'_> {
    /// Reports an error of a server option (`ctx`: `server px/name`, None
    /// for `default-server`).
    pub(super) fn lb_at(&mut self, loc: &Loc, ctx: Option<&str>, msg: String) {
        let d = match ctx {
            Some(ctx) => Diagnostic::at(Level::Alert, loc, ctx, msg),
            None => Diagnostic::new(Level::Alert, Some(loc.clone()), format!("[{loc}] : {msg}")),
        };
        self.diags.push(d);
    }

    /// One balancing/check server option `w` (value `v`) over `sd`. Returns
    /// the number of words used, or None after reporting an error.
    pub(super) fn server_lb_option(
        &mut self,
        loc: &Loc,
        ctx: Option<&str>,
        w: &str,
        v: Option<&str>,
        sd: &mut ServerDefaults,
    ) -> Option<usize> {
        let val = v.unwrap_or("");
        let time = |this: &mut Self, zero_ok: bool| -> Option<Duration> {
            match parse_time(val) {
                Ok(d) if zero_ok || !d.is_zero() => Some(d),
                Ok(_) => {
                    this.lb_at(loc, ctx, format!("'{w}' has to be > 0."));
                    None
                }
                Err(e) => {
                    this.lb_at(loc, ctx, time_error_message(w, val, &e));
                    None
                }
            }
        };
        let int = |this: &mut Self| -> Option<u32> {
            match parse_u32(val) {
                Some(n) => Some(n),
                None => {
                    this.lb_at(
                        loc,
                        ctx,
                        format!("'{w}' expects an integer argument (got '{val}')."),
                    );
                    None
                }
            }
        };
        let o = &mut sd.opts;
        match w {
            "proto" => {
                (o.h2, o.fcgi) = match val {
                    "h2" => (true, false),
                    "h1" => (false, false),
                    "fcgi" => (false, true),
                    _ => {
                        self.lb_at(
                            loc,
                            ctx,
                            format!("'proto' : unknown MUX protocol '{val}' (sluice knows 'h1', 'h2' and 'fcgi')."),
                        );
                        return None;
                    }
                };
                return Some(2);
            }
            "check-proto" => {
                sd.params.proto_h2 = match val {
                    "h2" => Some(true),
                    "h1" => Some(false),
                    _ => {
                        self.lb_at(
                            loc,
                            ctx,
                            format!("'check-proto' : unknown MUX protocol '{val}' (sluice knows 'h1' and 'h2')."),
                        );
                        return None;
                    }
                };
                return Some(2);
            }
            "send-proxy" => o.send_proxy = 1,
            "send-proxy-v2" => o.send_proxy = 2,
            "no-send-proxy" | "no-send-proxy-v2" => o.send_proxy = 0,
            "backup" => o.backup = true,
            "no-backup" => o.backup = false,
            "non-stick" => o.non_stick = true,
            "tfo" => o.tfo = true,
            "no-tfo" => o.tfo = false,
            "stick" => o.non_stick = false,
            "disabled" => (o.disabled, o.enabled) = (true, false),
            "enabled" => (o.disabled, o.enabled) = (false, true),
            "maxqueue" => {
                sd.opts.maxqueue = int(self)?;
                return Some(2);
            }
            "minconn" => {
                sd.opts.minconn = int(self)?;
                return Some(2);
            }
            "slowstart" => {
                let d = time(self, true)?;
                sd.opts.slowstart = (!d.is_zero()).then_some(d);
                return Some(2);
            }
            "fastinter" => {
                sd.params.fastinter = Some(time(self, false)?);
                return Some(2);
            }
            "downinter" => {
                sd.params.downinter = Some(time(self, false)?);
                return Some(2);
            }
            "addr" => match val.parse::<std::net::IpAddr>() {
                Ok(ip) => {
                    sd.params.addr = Some(ip);
                    return Some(2);
                }
                Err(_) => {
                    self.lb_at(
                        loc,
                        ctx,
                        format!("'addr' : unknown address '{val}' (an IP address is expected)."),
                    );
                    return None;
                }
            },
            "port" => match val.parse::<u16>() {
                Ok(p) if p > 0 => {
                    sd.params.port = Some(p);
                    return Some(2);
                }
                _ => {
                    self.lb_at(
                        loc,
                        ctx,
                        format!("'port' expects a valid port number (got '{val}')."),
                    );
                    return None;
                }
            },
            "id" => {
                if ctx.is_none() {
                    self.lb_at(
                        loc,
                        ctx,
                        "'id' is not supported in 'default-server'.".to_string(),
                    );
                    return None;
                }
                match parse_u32(val) {
                    Some(n) if n > 0 => {
                        sd.id = Some(n);
                        return Some(2);
                    }
                    _ => {
                        self.lb_at(loc, ctx, "custom id has to be > 0.".to_string());
                        return None;
                    }
                }
            }
            "on-marked-down" => match val {
                "shutdown-sessions" => {
                    sd.opts.shutdown_on_down = true;
                    return Some(2);
                }
                _ => {
                    self.lb_at(
                        loc,
                        ctx,
                        format!("'on-marked-down' expects 'shutdown-sessions' but got '{val}'."),
                    );
                    return None;
                }
            },
            "on-marked-up" => match val {
                "shutdown-backup-sessions" => {
                    sd.opts.shutdown_backup_on_up = true;
                    return Some(2);
                }
                _ => {
                    self.lb_at(
                        loc,
                        ctx,
                        format!(
                            "'on-marked-up' expects 'shutdown-backup-sessions' but got '{val}'."
                        ),
                    );
                    return None;
                }
            },
            "observe" => {
                sd.opts.observe = match val {
                    "none" => None,
                    "layer4" => Some(Observe::Layer4),
                    "layer7" => Some(Observe::Layer7),
                    _ => {
                        self.lb_at(
                            loc,
                            ctx,
                            format!(
                                "'observe' expects one of 'none', 'layer4', 'layer7' but got '{val}'."
                            ),
                        );
                        return None;
                    }
                };
                return Some(2);
            }
            "error-limit" => {
                match parse_u32(val) {
                    Some(n) if n >= 1 => sd.opts.error_limit = n,
                    _ => {
                        self.lb_at(
                            loc,
                            ctx,
                            format!("'error-limit' expects an integer argument > 0 (got '{val}')."),
                        );
                        return None;
                    }
                }
                return Some(2);
            }
            "on-error" => {
                sd.opts.on_error = match val {
                    "fastinter" => OnError::FastInter,
                    "fail-check" => OnError::FailCheck,
                    "sudden-death" => OnError::SuddenDeath,
                    "mark-down" => OnError::MarkDown,
                    _ => {
                        self.lb_at(
                            loc,
                            ctx,
                            format!(
                                "'on-error' expects one of 'fastinter', 'fail-check', 'sudden-death' or 'mark-down' but got '{val}'."
                            ),
                        );
                        return None;
                    }
                };
                return Some(2);
            }
            _ => return None,
        }
        Some(1)
    }

    /// `balance <algorithm> [<arguments>]`, HAProxy's `backend_parse_balance`.
    pub(super) fn kw_balance(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "balance", true, false, true) {
            return;
        }
        let algo = words.get(1).map_or("", String::as_str);
        let args: Vec<&str> = words.iter().skip(2).map(String::as_str).collect();
        let extra = |this: &mut Self, a: &str| {
            this.alert(
                loc,
                format!("'balance {algo}' : unexpected argument '{a}'."),
            )
        };
        let b = match algo {
            "roundrobin" | "static-rr" | "leastconn" | "first" | "source" => {
                if let Some(a) = args.first() {
                    return extra(self, a);
                }
                match algo {
                    "roundrobin" => Balance::RoundRobin,
                    "static-rr" => Balance::StaticRr,
                    "leastconn" => Balance::LeastConn,
                    "first" => Balance::First,
                    _ => Balance::Source,
                }
            }
            _ if algo.starts_with("random") => {
                let rest = &algo[6..];
                let draws = if rest.is_empty() || rest == "()" {
                    2
                } else if let Some(inner) = rest.strip_prefix('(') {
                    let digits: String = inner.chars().take_while(|c| c.is_ascii_digit()).collect();
                    let after = &inner[digits.len()..];
                    if !after.starts_with(')') || after.len() > 1 {
                        let msg = match after.chars().next() {
                            None => "random : missing closing parenthesis.".to_string(),
                            Some(c) => {
                                format!("random : unexpected character '{c}' after argument.")
                            }
                        };
                        return self.alert(loc, format!("balance {msg}"));
                    }
                    match digits.parse::<u32>() {
                        Ok(n) if n >= 1 => n,
                        _ => {
                            return self.alert(
                                loc,
                                "balance random : number of draws must be at least 1.",
                            );
                        }
                    }
                } else {
                    return self.alert(loc, BALANCE_ONLY);
                };
                if let Some(a) = args.first() {
                    return extra(self, a);
                }
                Balance::Random { draws }
            }
            "uri" => {
                let (mut len, mut depth, mut whole, mut path_only) = (0, 0, false, false);
                let mut i = 0;
                while let Some(&a) = args.get(i) {
                    match a {
                        "len" | "depth" => {
                            let v = args.get(i + 1).copied().unwrap_or("");
                            let n = v.parse::<i64>().unwrap_or(0);
                            if n <= 0 {
                                return self.alert(
                                    loc,
                                    format!("balance uri : '{a}' expects a positive integer (got '{v}')."),
                                );
                            }
                            let n = n.min(i64::from(u32::MAX)) as u32;
                            if a == "len" {
                                len = n;
                            } else {
                                depth = n;
                            }
                            i += 2;
                        }
                        "whole" => {
                            whole = true;
                            i += 1;
                        }
                        "path-only" => {
                            path_only = true;
                            i += 1;
                        }
                        _ => {
                            return self.alert(
                                loc,
                                format!("balance uri only accepts parameters 'len', 'depth', 'path-only', and 'whole' (got '{a}')."),
                            );
                        }
                    }
                }
                Balance::Uri {
                    len,
                    depth,
                    whole,
                    path_only,
                }
            }
            "url_param" => {
                let Some(name) = args.first().filter(|n| !n.is_empty()) else {
                    return self.alert(loc, "balance url_param requires an URL parameter name.");
                };
                let check_post = match args.get(1) {
                    None => false,
                    Some(&"check_post") => true,
                    Some(a) => {
                        return self.alert(
                            loc,
                            format!(
                                "balance url_param only accepts 'check_post' modifier (got '{a}')."
                            ),
                        );
                    }
                };
                Balance::UrlParam {
                    name: name.to_string(),
                    check_post,
                }
            }
            _ if algo.starts_with("hdr(") => {
                let inner = &algo[4..];
                let name = match inner.find(')') {
                    Some(end) if end > 0 => &inner[..end],
                    _ => return self.alert(loc, "balance hdr requires an http header field name."),
                };
                let domain_only = match args.first() {
                    None => false,
                    Some(&"use_domain_only") => true,
                    Some(a) => {
                        return self.alert(
                            loc,
                            format!("balance {algo} only accepts 'use_domain_only' modifier (got '{a}')."),
                        );
                    }
                };
                Balance::Hdr {
                    name: name.to_string(),
                    domain_only,
                }
            }
            "hash" => {
                let Some(text) = args.first().filter(|a| !a.is_empty()) else {
                    return self.alert(loc, "balance hash requires a sample expression.");
                };
                if let Some(a) = args.get(1) {
                    return self.alert(
                        loc,
                        format!("balance hash takes no other argument (got '{a}')."),
                    );
                }
                match crate::sample::Expr::parse(text) {
                    Ok((expr, used)) if used == text.len() => Balance::Hash(expr),
                    Ok((_, used)) => {
                        let m = format!("unexpected '{}'", &text[used..]);
                        return self.hash_expr_error(loc, text, &m);
                    }
                    Err(
                        crate::sample::ExprError::Invalid(m)
                        | crate::sample::ExprError::Misplaced(m),
                    ) => {
                        return self.hash_expr_error(loc, text, &m);
                    }
                    Err(e @ crate::sample::ExprError::Unsupported(_)) => {
                        return self.alert(loc, format!("balance hash: {e}"));
                    }
                }
            }
            _ if algo.starts_with("rdp-cookie") => {
                return self.unsupported(loc, &format!("balance {algo}"));
            }
            _ => return self.alert(loc, BALANCE_ONLY),
        };
        self.px().balance = b;
    }

    /// A `balance hash` expression HAProxy refuses: it says so when it
    /// checks the configuration, naming the backend and where it starts
    /// (in a `defaults` section, sluice says so at the line).
    fn hash_expr_error(&mut self, loc: &Loc, text: &str, msg: &str) {
        let Some(kind) = self.proxy_kind() else {
            return self.alert(
                loc,
                format!("failed to parse 'balance hash' expression '{text}' : {msg}."),
            );
        };
        let (name, ploc) = {
            let p = self.px();
            (p.name.clone(), p.loc.clone())
        };
        let kind = type_str(kind);
        self.diags.push(Diagnostic::new(
            Level::Alert,
            Some(ploc.clone()),
            format!("{kind} '{name}' [{ploc}]: failed to parse 'balance hash' expression '{text}' in : {msg}."),
        ));
    }

    /// `hash-type map-based|consistent [sdbm|djb2|wt6|crc32 [avalanche]]`.
    pub(super) fn kw_hash_type(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "hash-type", true, false, true) {
            return;
        }
        let arg = |i: usize| words.get(i).map_or("", String::as_str);
        let consistent = match arg(1) {
            "consistent" => true,
            "map-based" => false,
            "avalanche" => {
                return self.alert(
                    loc,
                    "experimental feature 'hash-type avalanche' is not supported anymore, please use 'hash-type map-based sdbm avalanche' instead.",
                );
            }
            _ => {
                return self.alert(
                    loc,
                    "'hash-type' only supports 'consistent' and 'map-based'.",
                );
            }
        };
        let mut ht = HashType {
            consistent,
            func: HashFn::Sdbm,
            avalanche: false,
        };
        if arg(2).is_empty() {
            ht.avalanche = consistent;
        } else {
            ht.func = match arg(2) {
                "sdbm" => HashFn::Sdbm,
                "djb2" => HashFn::Djb2,
                "wt6" => HashFn::Wt6,
                "crc32" => HashFn::Crc32,
                _ => {
                    return self.alert(
                        loc,
                        "'hash-type' only supports 'sdbm', 'djb2', 'crc32', or 'wt6' hash functions.",
                    );
                }
            };
            match arg(3) {
                "" => {}
                "avalanche" => ht.avalanche = true,
                _ => {
                    return self.alert(
                        loc,
                        "'hash-type' only supports 'avalanche' as a modifier for hash functions.",
                    );
                }
            }
        }
        self.px().hash_type = ht;
    }

    /// `fullconn <n>`.
    /// `load-server-state-from-file global|local|none` and
    /// `server-state-file-name [<file>|use-backend-name]`.
    pub(super) fn kw_server_state(&mut self, loc: &Loc, words: &[String]) {
        let k = words[0].as_str();
        if !self.cap(loc, k, true, false, true) {
            return;
        }
        let arg = words.get(1).map_or("", String::as_str);
        if k == "load-server-state-from-file" {
            self.px().load_server_state = Some(match arg {
                "global" => LoadServerState::Global,
                "local" => LoadServerState::Local,
                "none" => LoadServerState::None,
                _ => {
                    return self.alert(
                        loc,
                        format!("'{k}' expects 'global', 'local' or 'none'. Got '{arg}'"),
                    );
                }
            });
            return;
        }
        if let Some(extra) = words.get(2) {
            return self.alert(
                loc,
                format!("'{k}' cannot handle unexpected argument '{extra}'."),
            );
        }
        self.px().server_state_file_name =
            (!arg.is_empty() && arg != "use-backend-name").then(|| arg.to_string());
    }

    pub(super) fn kw_fullconn(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "fullconn", true, false, true) {
            return;
        }
        let arg = words.get(1).map_or("", String::as_str);
        match parse_u32(arg) {
            Some(n) => self.px().fullconn = Some(n),
            None => self.alert(
                loc,
                format!("'fullconn' expects an integer argument (got '{arg}')."),
            ),
        }
    }

    /// `id <n>`: the proxy's number, unique among the proxies (HAProxy's
    /// messages, its "proxy" for a `listen` section).
    pub(super) fn kw_proxy_id(&mut self, loc: &Loc, words: &[String]) {
        let Section::Proxy(me) = self.section else {
            return self.tight(Level::Alert, loc, "'id' not allowed in 'defaults' section.");
        };
        let Some(arg) = words.get(1) else {
            return self.tight(Level::Alert, loc, "'id' expects an integer argument.");
        };
        if let Some(extra) = words.get(2) {
            return self.alert(
                loc,
                format!("'id' cannot handle unexpected argument '{extra}'."),
            );
        }
        let Some(id) = arg
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=i64::from(i32::MAX)).contains(n))
        else {
            return self.tight(Level::Alert, loc, "custom id has to be > 0.");
        };
        let id = id as u32;
        let kind = |k: ProxyKind| match k {
            ProxyKind::Listen => "proxy",
            k => type_str(k),
        };
        if let Some(other) = self
            .proxies
            .iter()
            .enumerate()
            .find(|(i, p)| *i != me && p.id == Some(id))
            .map(|(_, p)| p)
        {
            let m = format!(
                "{} {} reuses same custom id as {} {} (declared at {}).",
                kind(self.proxies[me].kind),
                self.proxies[me].name,
                kind(other.kind),
                other.name,
                other.loc
            );
            return self.tight(Level::Alert, loc, m);
        }
        self.px().id = Some(id);
    }

    /// `disabled` (`on`) and `enabled`: whether the proxy (the proxies a
    /// `defaults` section makes) starts.
    pub(super) fn kw_disabled(&mut self, loc: &Loc, words: &[String], on: bool) {
        if let Some(extra) = words.get(1) {
            return self.alert(
                loc,
                format!(
                    "'{}' cannot handle unexpected argument '{extra}'.",
                    words[0]
                ),
            );
        }
        self.px().disabled = on;
    }

    /// `option httpchk|tcp-check|allbackups`; false when `name` is none of
    /// them.
    pub(super) fn lb_option(&mut self, loc: &Loc, words: &[String], neg: bool) -> bool {
        let name = words.get(1).map_or("", String::as_str);
        if crate::config::check_proto::OPTION_NAMES.contains(&name) {
            self.proto_check_option(loc, words, neg);
            return true;
        }
        if !matches!(name, "httpchk" | "tcp-check" | "allbackups") {
            return false;
        }
        if !self.cap(loc, &format!("option {name}"), true, false, true) {
            return true;
        }
        let p = self.px();
        match name {
            "allbackups" => {
                p.allbackups = !neg;
                if words.len() > 2 {
                    self.alert(loc, "'option allbackups' does not expect any argument.");
                }
            }
            "tcp-check" => {
                // The rules a protocol check set are not the section's own.
                if p.tcp_check
                    .iter()
                    .any(crate::config::check_proto::is_proto_rule)
                {
                    p.tcp_check.clear();
                }
                if neg {
                    p.check_type = CheckType::Tcp;
                } else {
                    p.check_type = CheckType::TcpCheck;
                }
            }
            _ => {
                if neg {
                    p.check_type = CheckType::Tcp;
                    return true;
                }
                p.check_type = CheckType::Http;
                let mut hidden_headers = false;
                // option httpchk [<method>] [<uri>] [<version>] (one word:
                // the URI).
                let hc = &mut p.http_check;
                own_rules(hc);
                let a: Vec<&String> = words.iter().skip(2).collect();
                match a.len() {
                    0 => {}
                    1 => hc.uri = a[0].clone(),
                    _ => {
                        hc.method = a[0].clone();
                        hc.uri = a[1].clone();
                        if let Some(v) = a.get(2) {
                            // "HTTP/1.1\r\nHost: x" is the old way of adding headers.
                            hidden_headers = v.contains("\r\n");
                            let mut parts = v.split("\r\n");
                            hc.version = parts.next().unwrap_or("HTTP/1.0").to_string();
                            for h in parts {
                                if let Some((n, val)) = h.split_once(':') {
                                    hc.headers.push((n.trim().into(), val.trim().into()));
                                }
                            }
                        }
                    }
                }
                if hidden_headers {
                    self.tight(
                        Level::Warning,
                        loc,
                        "'option httpchk' : hiding headers or body at the end of the version string is deprecated. Please, consider to use 'http-check send' directive instead.",
                    );
                }
            }
        }
        true
    }

    /// `option redis-check|mysql-check|pgsql-check|smtpchk|ldap-check|
    /// ssl-hello-chk`: the protocol's rule set replaces the section's
    /// check rules, run by the `tcp-check` engine.
    fn proto_check_option(&mut self, loc: &Loc, words: &[String], neg: bool) {
        let name = words[1].as_str();
        if neg {
            return self.tight(
                Level::Alert,
                loc,
                format!("negation/default is not supported for option '{name}'."),
            );
        }
        if !self.cap(loc, name, true, false, true) {
            return;
        }
        match crate::config::check_proto::parse_option(words) {
            Ok(check) => {
                let p = self.px();
                p.check_type = CheckType::TcpCheck;
                p.tcp_check = check.rules();
            }
            Err(m) => self.alert(loc, m),
        }
    }

    /// `http-check send|expect|connect|disable-on-404 ...`.
    pub(super) fn kw_http_check(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "http-check", true, false, true) {
            return;
        }
        let sub = words.get(1).map_or("", String::as_str);
        let mut hc = self.px().http_check.clone();
        if matches!(sub, "send" | "expect") {
            own_rules(&mut hc);
        }
        match sub {
            "send" => {
                let mut i = 2;
                while let Some(k) = words.get(i) {
                    let v = words.get(i + 1).cloned().unwrap_or_default();
                    match k.as_str() {
                        "meth" => hc.method = v,
                        "uri" => hc.uri = v,
                        "ver" => hc.version = v,
                        "body" => hc.body = v,
                        "hdr" => {
                            let value = words.get(i + 2).cloned().unwrap_or_default();
                            hc.headers.push((v, value));
                            i += 1;
                        }
                        other => {
                            return self.alert(
                                loc,
                                format!("'http-check send' : unknown parameter '{other}', expects 'meth', 'uri', 'ver', 'hdr' and 'body'."),
                            );
                        }
                    }
                    i += 2;
                }
            }
            "expect" => match parse_expect(&words[2..], true) {
                Ok(e) => hc.expect = Some(e),
                Err(m) => return self.alert(loc, format!("'http-check expect' : {m}")),
            },
            "disable-on-404" | "send-state" => {
                if let Some(extra) = words.get(2) {
                    return self.alert(
                        loc,
                        format!("'http-check' cannot handle unexpected argument '{extra}'."),
                    );
                }
                if sub == "send-state" {
                    hc.send_state = true;
                } else {
                    hc.disable_on_404 = true;
                }
            }
            "connect" | "comment" | "set-var" | "unset-var" => {
                return self.unsupported(loc, &format!("http-check {sub}"));
            }
            _ => {
                return self.alert(
                    loc,
                    format!("'http-check' only supports 'comment', 'connect', 'send', 'expect', 'disable-on-404', 'send-state', 'set-var' and 'unset-var' (got '{sub}')."),
                );
            }
        }
        // http-check rules act once `option httpchk` is set (either order).
        self.px().http_check = hc;
    }

    /// `tcp-check connect|send|expect ...`.
    pub(super) fn kw_tcp_check(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "tcp-check", true, false, true) {
            return;
        }
        let sub = words.get(1).map_or("", String::as_str);
        let rule = match sub {
            "connect" => {
                let mut port = None;
                let mut i = 2;
                while let Some(k) = words.get(i) {
                    match k.as_str() {
                        "port" => {
                            let v = words.get(i + 1).map_or("", String::as_str);
                            match v.parse::<u16>() {
                                Ok(p) if p > 0 => port = Some(p),
                                _ => {
                                    return self.alert(
                                        loc,
                                        format!("'tcp-check connect' : expects a valid port number (got '{v}')."),
                                    );
                                }
                            }
                            i += 2;
                        }
                        other => {
                            return self.unsupported(loc, &format!("tcp-check connect {other}"));
                        }
                    }
                }
                TcpCheckRule::Connect { port }
            }
            "send" => match words.get(2) {
                Some(s) if words.len() == 3 => TcpCheckRule::Send(unescape(s)),
                _ => {
                    return self.alert(loc, "'tcp-check send' expects a string as argument.");
                }
            },
            "expect" => match parse_expect(&words[2..], false) {
                Ok(e) => TcpCheckRule::Expect(e),
                Err(m) => return self.alert(loc, format!("'tcp-check expect' : {m}")),
            },
            "comment" | "send-binary" | "send-lf" | "send-binary-lf" | "set-var" | "unset-var"
            | "action" => return self.unsupported(loc, &format!("tcp-check {sub}")),
            _ => {
                return self.alert(
                    loc,
                    format!("'tcp-check' only supports 'comment', 'connect', 'send', 'send-binary', 'expect', 'set-var' and 'unset-var' (got '{sub}')."),
                );
            }
        };
        self.px().tcp_check.push(rule);
    }
}

/// A section's first own check rule (`option httpchk`, `http-check send`
/// or `expect`): HAProxy gives the section a rule set of its own then, so
/// the rules inherited from `defaults` are dropped. `disable-on-404` is an
/// option, not a rule: it stays.
fn own_rules(hc: &mut HttpCheck) {
    if hc.inherited {
        *hc = HttpCheck {
            disable_on_404: hc.disable_on_404,
            send_state: hc.send_state,
            ..HttpCheck::default()
        };
    }
}

const BALANCE_ONLY: &str = "balance only supports 'roundrobin', 'static-rr', 'leastconn', 'source', 'uri', 'url_param', 'hdr(name)' and 'rdp-cookie(name)' options.";

/// `[!] status|rstatus|string|rstring <pattern>` (status ones for HTTP only).
fn parse_expect(words: &[String], http: bool) -> Result<Expect, String> {
    let mut w = words.iter().map(String::as_str).peekable();
    let mut negate = false;
    if w.peek() == Some(&"!") {
        negate = true;
        w.next();
    }
    let kind = w.next().unwrap_or("");
    let Some(pat) = w.next() else {
        return Err(format!("'{kind}' expects a pattern as argument."));
    };
    if let Some(extra) = w.next() {
        return Err(format!("unexpected argument '{extra}'."));
    }
    let kind = match kind {
        "status" if http => {
            let mut ranges = Vec::new();
            for part in pat.split(',') {
                let (a, b) = part.split_once('-').unwrap_or((part, part));
                match (a.trim().parse::<u16>(), b.trim().parse::<u16>()) {
                    (Ok(a), Ok(b)) if a <= b => ranges.push((a, b)),
                    _ => return Err(format!("invalid status code '{part}'.")),
                }
            }
            ExpectKind::Status(ranges)
        }
        "rstatus" if http => ExpectKind::RStatus(pat.to_string()),
        "string" => ExpectKind::String(pat.to_string()),
        "rstring" => ExpectKind::RString(pat.to_string()),
        "binary" | "rbinary" | "hdr" | "fhdr" | "custom" => {
            return Err(format!("'{kind}' is not supported by sluice yet."));
        }
        other => {
            return Err(if http {
                format!(
                    "unknown keyword '{other}', expects 'status', 'rstatus', 'string' or 'rstring'."
                )
            } else {
                format!("unknown keyword '{other}', expects 'string' or 'rstring'.")
            });
        }
    };
    Ok(Expect { negate, kind })
}

/// `\r`, `\n`, `\t`, `\\` in `tcp-check send` strings.
fn unescape(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut it = s.bytes();
    while let Some(b) = it.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match it.next() {
            Some(b'r') => out.push(b'\r'),
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(o) => out.push(o),
            None => out.push(b'\\'),
        }
    }
    out
}
