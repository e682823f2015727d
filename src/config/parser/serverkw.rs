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
                let t = crate::tls::upstream::ServerTlsOpts {
                    enabled: true,
                    ..t.clone()
                };
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
        let server = Server {
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

    /// The options of a `server` or `default-server` line (`words` start
    /// after the address, or after `default-server`), applied over `base`.
    /// `ctx`: the `server px/name` context of messages, `None` for
    /// `default-server` (HAProxy's messages then have no context).
    pub(super) fn server_options(
        &mut self,
        loc: &Loc,
        words: &[String],
        base: ServerDefaults,
        name: &str,
        ctx: Option<&str>,
    ) -> Option<ServerDefaults> {
        let at = |this: &mut Self, msg: String| {
            let d = match ctx {
                Some(ctx) => Diagnostic::at(Level::Alert, loc, ctx, msg),
                None => {
                    Diagnostic::new(Level::Alert, Some(loc.clone()), format!("[{loc}] : {msg}"))
                }
            };
            this.diags.push(d);
        };
        let mut weight = base.weight;
        let mut maxconn = base.maxconn;
        let mut check = base.check;
        let mut params = base.params;
        let mut cookie = base.cookie.clone();
        let mut tls = base.tls.clone();
        let mut lb = base;
        let mut ok = true;
        let mut i = 0;
        while let Some(w) = words.get(i) {
            let v = words.get(i + 1).map(String::as_str);
            let int_arg = |this: &mut Self, min: u32| -> Option<u32> {
                match v.and_then(parse_u32) {
                    Some(n) if n >= min => Some(n),
                    Some(_) => {
                        at(this, format!("'{w}' has to be >= {min}."));
                        None
                    }
                    None => {
                        at(
                            this,
                            format!(
                                "'{w}' expects an integer argument (got '{}').",
                                v.unwrap_or("")
                            ),
                        );
                        None
                    }
                }
            };
            let step = match w.as_str() {
                "weight" => {
                    match int_arg(self, 0) {
                        Some(n) if n <= 256 => weight = n,
                        Some(n) => {
                            at(
                                self,
                                format!("weight of server {name} is not within 0 and 256 ({n}).."),
                            );
                            ok = false;
                        }
                        None => ok = false,
                    }
                    2
                }
                "maxconn" => {
                    match int_arg(self, 0) {
                        Some(n) => maxconn = n,
                        None => ok = false,
                    }
                    2
                }
                "rise" | "fall" => {
                    match int_arg(self, 1) {
                        Some(n) if w == "rise" => params.rise = n,
                        Some(n) => params.fall = n,
                        None => ok = false,
                    }
                    2
                }
                "inter" => {
                    let val = v.unwrap_or("");
                    match parse_time(val) {
                        Ok(d) if !d.is_zero() => params.inter = d,
                        Ok(_) => {
                            at(self, "'inter' has to be > 0.".to_string());
                            ok = false;
                        }
                        Err(e) => {
                            at(self, time_error_message("inter", val, &e));
                            ok = false;
                        }
                    }
                    2
                }
                "check" => {
                    check = true;
                    1
                }
                "cookie" => {
                    match v.filter(|v| !v.is_empty()) {
                        Some(v) => cookie = Some(v.to_string()),
                        None => {
                            at(self, "'cookie' expects <value> as argument..".to_string());
                            ok = false;
                            break;
                        }
                    }
                    2
                }
                "no-check" => {
                    check = false;
                    1
                }
                "check-ssl" | "no-check-ssl" => {
                    params.ssl = w == "check-ssl";
                    if tls.is_none() {
                        // The TLS options with their defaults, for the checks.
                        let _ = self.server_tls_option(w, None, &mut tls);
                    }
                    1
                }
                other if kw::SERVER_TLS.contains(&other) => {
                    match self.server_tls_option(other, v, &mut tls) {
                        Ok(step) => step,
                        Err(msg) => {
                            at(self, msg);
                            ok = false;
                            break;
                        }
                    }
                }
                // The arms above take the basic options; the rest of the
                // supported table is balancing and check options.
                other if kw::SERVER_SUPPORTED.contains(&other) => {
                    lb.params = params;
                    match self.server_lb_option(loc, ctx, other, v, &mut lb) {
                        Some(step) => {
                            params = lb.params;
                            step
                        }
                        None => {
                            ok = false;
                            break;
                        }
                    }
                }
                other
                    if kw::SERVER_UNSUPPORTED.contains(&other)
                        || kw::haproxy_has(kw::Kind::Server, other) =>
                {
                    at(self, format!("'{other}' is not supported by sluice yet"));
                    ok = false;
                    // The rest of the line cannot be interpreted reliably.
                    break;
                }
                other => {
                    let sugg = suggest::suffix(
                        other,
                        kw::SERVER_SUPPORTED
                            .iter()
                            .chain(kw::SERVER_UNSUPPORTED)
                            .copied(),
                    );
                    // HAProxy's hint when default-server gets an unknown word.
                    let hint = if ctx.is_none() {
                        " Hint: no address was expected for this server."
                    } else {
                        ""
                    };
                    at(self, format!("unknown keyword '{other}'{sugg}{hint}"));
                    ok = false;
                    break;
                }
            };
            i += step;
        }
        ok.then_some(ServerDefaults {
            weight,
            maxconn,
            check,
            params,
            opts: lb.opts,
            id: lb.id,
            cookie,
            tls,
        })
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
