//! The `global` section's keywords: process settings, logging, `stats` and
//! `stats socket`, `tune.*`, `cpu-map`.

use super::*;

impl State<'_> {
    pub(super) fn global_line(&mut self, loc: &Loc, words: &[String]) {
        let k = words[0].as_str();
        if let Some(e) = GLOBAL.iter().find(|e| e.name == k) {
            return (e.run)(self, loc, words);
        }
        match k {
            _ if kw::GLOBAL_IGNORED.iter().any(|(n, _)| *n == k) => {
                let bad_arg = ignored_arg_error(words);
                let why = kw::GLOBAL_IGNORED
                    .iter()
                    .find_map(|(n, why)| (*n == k).then_some(*why))
                    .unwrap_or_default();
                // A notice, not a warning: nothing is lost by ignoring it,
                // and `zero-warning` configurations keep starting.
                self.diags.push(Diagnostic::parsing(
                    Level::Notice,
                    loc,
                    format!("'{k}' is accepted and ignored: {why}."),
                ));
                // An argument HAProxy would refuse is refused all the same.
                if let Some(e) = bad_arg {
                    self.alert(loc, e);
                }
            }
            _ if k.starts_with("tune.")
                || kw::GLOBAL_UNSUPPORTED.contains(&k)
                || kw::haproxy_has(kw::Kind::Global, k) =>
            {
                self.unsupported(loc, k)
            }
            _ => {
                let sugg = suggest::suffix(k, kw::global_keywords());
                self.alert(
                    loc,
                    format!("unknown keyword '{k}' in 'global' section{sugg}"),
                );
            }
        }
    }

    pub(super) fn global_stats(&mut self, loc: &Loc, words: &[String]) {
        match words.get(1).map(String::as_str) {
            Some("socket") => self.stats_socket(loc, words),
            Some("timeout") => {
                let v = words.get(2).map_or("", String::as_str);
                match parse_time(v) {
                    Ok(d) if !d.is_zero() => self.global.stats_timeout = Some(d),
                    Ok(_) => self.alert(loc, "'stats timeout' expects a positive value"),
                    Err(e) => self.alert(loc, time_error_message("stats timeout", v, &e)),
                }
            }
            Some(sub @ ("maxconn" | "bind-process")) => {
                let what = format!("stats {sub}");
                self.unsupported(loc, &what)
            }
            other => self.alert(
                loc,
                format!(
                    "'stats' only supports 'socket', 'maxconn', 'bind-process' and 'timeout' (got '{}').",
                    other.unwrap_or("")
                ),
            ),
        }
    }

    pub(super) fn stats_socket(&mut self, loc: &Loc, words: &[String]) {
        let Some(target) = words.get(2).filter(|t| !t.is_empty()) else {
            return self.alert(loc, "'stats socket' requires a path or an address.");
        };
        let target = match self.addr_word(target) {
            Ok(t) => t,
            Err(e) => return self.alert(loc, format!("'stats socket' : {e}")),
        };
        let target = &target;
        let mut sock = StatsSocket {
            path: PathBuf::from(target),
            mode: None,
            uid: None,
            gid: None,
            level: CliLevel::default(),
            loc: loc.clone(),
            tcp: None,
            expose_fd: false,
            fd: None,
            v6: BindV6::System,
            abns: false,
        };
        if let Some(n) = target.strip_prefix("fd@") {
            match addr::fd_ref_checked(n) {
                Ok(Ok(fd)) => sock.fd = Some(fd),
                Ok(Err(why)) => {
                    self.unresolved_fd(loc, "stats socket", target, &why);
                    sock.fd = Some(addr::UNRESOLVED_FD);
                }
                Err(e) => return self.alert(loc, format!("'stats socket' : {e} in '{target}'")),
            }
        } else if let Some(path) = target.strip_prefix("unix@") {
            sock.path = PathBuf::from(path);
        } else if let Some(name) = target.strip_prefix("abns@") {
            // A Linux abstract socket: a name, no file (and no `./abns@x`).
            sock.path = PathBuf::from(name);
            sock.abns = true;
        } else if target.starts_with("ipv4@") || target.starts_with("ipv6@") {
            match addr::bind_addrs(target, target, self.resolve) {
                Ok(a) if a.len() == 1 => sock.tcp = a.first().copied(),
                Ok(_) => {
                    return self.alert(loc, "'stats socket' : port ranges are not allowed.");
                }
                Err(e) => return self.alert(loc, format!("'stats socket' : {e}")),
            }
        } else if !target.contains('/') && target.contains(':') {
            // No slash: HAProxy reads `host:port` as a TCP address.
            match addr::bind_addrs(target, target, self.resolve) {
                Ok(a) if a.len() == 1 => sock.tcp = a.first().copied(),
                Ok(_) => {
                    return self.alert(loc, "'stats socket' : port ranges are not allowed.");
                }
                Err(e) => return self.alert(loc, format!("'stats socket' : {e}")),
            }
        }
        let mut i = 3;
        let mut ok = true;
        let (mut v6only, mut v4v6) = (false, false);
        while let Some(w) = words.get(i) {
            let val = words.get(i + 1).map(String::as_str);
            match w.as_str() {
                // The two options without a value.
                "v6only" | "v4v6" => {
                    if w == "v6only" {
                        v6only = true;
                    } else {
                        v4v6 = true;
                    }
                    i += 1;
                    continue;
                }
                "level" => match val {
                    Some("user") => sock.level = CliLevel::User,
                    Some("operator") => sock.level = CliLevel::Operator,
                    Some("admin") => sock.level = CliLevel::Admin,
                    _ => {
                        ok = false;
                        self.alert(
                            loc,
                            "'stats socket' : 'level' only supports 'user', 'operator', and 'admin'.",
                        );
                    }
                },
                "mode" => {
                    match val.and_then(|v| u32::from_str_radix(v, 8).ok().filter(|m| *m <= 0o7777))
                    {
                        Some(m) if sock.tcp.is_none() => sock.mode = Some(m),
                        Some(_) => {
                            ok = false;
                            self.alert(
                                loc,
                                "'stats socket' : 'mode' only applies to UNIX sockets.",
                            );
                        }
                        None => {
                            ok = false;
                            self.alert(
                                loc,
                                format!(
                                    "'stats socket' : 'mode' : missing or invalid mode '{}' (octal integer expected)",
                                    val.unwrap_or("")
                                ),
                            );
                        }
                    }
                }
                "uid" | "gid" | "user" | "group" => match socket_owner(w, val) {
                    Ok(_) if sock.tcp.is_some() => {
                        ok = false;
                        self.alert(
                            loc,
                            format!("'stats socket' : '{w}' only applies to UNIX sockets."),
                        );
                    }
                    Ok(id) if w == "uid" || w == "user" => sock.uid = Some(id),
                    Ok(id) => sock.gid = Some(id),
                    Err(e) => {
                        ok = false;
                        self.alert(loc, format!("'stats socket' : {e}"));
                    }
                },
                "expose-fd" if val == Some("listeners") => sock.expose_fd = true,
                "expose-fd" => {
                    ok = false;
                    self.alert(
                        loc,
                        "'stats socket' : 'expose-fd' only supports 'listeners'.",
                    );
                }
                // Scheduling options: notices, as on a `bind` line. The
                // CLI's own (`level`, `severity-output`) are not among them.
                other
                    if !matches!(other, "level" | "severity-output")
                        && let Some((n, why)) = kw::ignored(kw::BIND_IGNORED, other) =>
                {
                    self.diags.push(Diagnostic::parsing(
                        Level::Notice,
                        loc,
                        format!("'stats socket' : '{other}' is accepted and ignored: {why}."),
                    ));
                    i += 1 + n;
                    continue;
                }
                other
                    if kw::BIND_UNSUPPORTED.contains(&other)
                        || kw::haproxy_has(kw::Kind::Bind, other) =>
                {
                    ok = false;
                    self.alert(
                        loc,
                        format!("'stats socket' : '{other}' option is not supported by sluice yet"),
                    );
                    // The loop's step skips its probable value, which
                    // would otherwise raise a second error.
                }
                other => {
                    ok = false;
                    let sugg = suggest::suffix(
                        other,
                        ["level", "mode", "uid", "gid", "user", "group", "expose-fd"],
                    );
                    self.alert(
                        loc,
                        format!("'stats socket' : unknown keyword '{other}'{sugg}"),
                    );
                }
            }
            i += 2;
        }
        sock.v6 = match (v6only, v4v6) {
            (true, _) => BindV6::V6Only,
            (false, true) => BindV6::V4V6,
            (false, false) => BindV6::System,
        };
        if sock.expose_fd && sock.tcp.is_some() {
            self.warn(
                loc,
                "'stats socket' : 'expose-fd listeners' is ignored on a TCP socket (descriptors pass over UNIX sockets only).",
            );
        }
        if ok {
            self.global.stats_sockets.push(sock);
        }
    }

    // ----------------------------------------------------------------- proxy
}

/// The `global` section's keywords, in the order suggestions try them:
/// the parser dispatches through this table and the keyword lists
/// ([`kw::GLOBAL_SUPPORTED`]) are read from it.
pub(crate) const GLOBAL: &[GlobalKw] = &[
    kwd("maxconn", g_maxconn),
    kwd("log", g_log),
    kwd("log-tag", g_log_tag),
    kwd("log-send-hostname", g_log_send_hostname),
    kwd("quiet", g_quiet),
    kwd("nbthread", g_maxconn),
    kwd("stats", g_stats),
    kwd("nbproc", g_nbproc),
    kwd("daemon", g_daemon),
    kwd("master-worker", g_master_worker),
    kwd("mworker-max-reloads", g_mworker_max_reloads),
    kwd("external-check", g_flag),
    kwd("insecure-fork-wanted", g_flag),
    kwd("pidfile", g_pidfile),
    kwd("node", g_node),
    kwd("setenv", g_setenv),
    kwd("presetenv", g_setenv),
    kwd("unsetenv", g_unsetenv),
    kwd("resetenv", g_resetenv),
    kwd("spread-checks", g_spread_checks),
    kwd("max-spread-checks", g_max_spread_checks),
    kwd("strict-limits", g_strict_limits),
    kwd("expose-experimental-directives", g_expose_experimental),
    kwd("tune.http.logurilen", g_tune_http),
    kwd("tune.http.maxhdr", g_tune_http),
    kwd("h1-accept-payload-with-any-method", g_flag),
    kwd("h2-workaround-bogus-websocket-clients", g_flag),
    kwd("set-dumpable", g_bare_flag),
    kwd("default-path", g_default_path),
    kwd("noreuseport", g_bare_flag),
    kwd("pp2-never-send-local", g_bare_flag),
    kwd("grace", g_grace),
    kwd("fd-hard-limit", g_count),
    kwd("maxconnrate", g_count),
    kwd("maxsessrate", g_count),
    kwd("tune.rcvbuf.client", g_count),
    kwd("tune.rcvbuf.server", g_count),
    kwd("tune.sndbuf.client", g_count),
    kwd("tune.sndbuf.server", g_count),
    kwd("tune.ssl.cachesize", g_count),
    kwd("tune.ssl.hard-maxrecord", g_count),
    kwd("unix-bind", g_unix_bind),
    kwd("localpeer", g_localpeer),
    kwd("description", g_description),
    kwd("zero-warning", g_zero_warning),
    kwd("hard-stop-after", g_hard_stop_after),
    kwd("server-state-file", g_server_state),
    kwd("server-state-base", g_server_state),
    kwd("user", g_owner),
    kwd("group", g_owner),
    kwd("uid", g_id),
    kwd("gid", g_id),
    kwd("chroot", g_chroot),
    kwd("ulimit-n", g_ulimit_n),
    kwd("cpu-map", g_cpu_map),
    kwd("tune.bufsize", g_tune_bufsize),
    kwd("tune.comp.maxlevel", g_tune_comp_maxlevel),
    kwd("tune.maxrewrite", g_tune_maxrewrite),
    kwd("tune.pipesize", g_pipes),
    kwd("nosplice", g_nosplice),
    kwd("maxpipes", g_pipes),
    kwd("h1-case-adjust", g_h1_case_adjust),
    kwd("h1-case-adjust-file", g_h1_case_adjust_file),
    kwd("tune.h2.header-table-size", g_tune_h2),
    kwd("tune.h2.initial-window-size", g_tune_h2),
    kwd("tune.h2.max-concurrent-streams", g_tune_h2),
    kwd("tune.h2.max-frame-size", g_tune_h2),
    kwd("ssl-default-bind-ciphers", g_ssl),
    kwd("ssl-default-bind-curves", g_ssl),
    kwd("ssl-default-bind-ciphersuites", g_ssl),
    kwd("ssl-default-bind-options", g_ssl),
    kwd("ssl-default-server-ciphers", g_ssl),
    kwd("ssl-default-server-ciphersuites", g_ssl),
    kwd("ssl-default-server-options", g_ssl),
    kwd("ssl-server-verify", g_ssl),
    kwd("ca-base", g_ssl),
    kwd("crt-base", g_ssl),
    kwd("tune.ssl.capture-buffer-size", g_tune_ssl_capture),
    kwd("tune.ssl.capture-cipherlist-size", g_tune_ssl_capture),
    // Variables (issue 17).
    kwd("set-var", g_set_var),
    kwd("set-var-fmt", g_set_var),
    kwd("lua-load", luakw::g_lua_load),
    kwd("lua-load-per-thread", luakw::g_lua_load),
    kwd("lua-prepend-path", luakw::g_lua_prepend_path),
    kwd("tune.lua.forced-yield", luakw::g_tune_lua),
    kwd("tune.lua.maxmem", luakw::g_tune_lua),
    kwd("tune.lua.session-timeout", luakw::g_tune_lua),
    kwd("tune.lua.task-timeout", luakw::g_tune_lua),
    kwd("tune.lua.service-timeout", luakw::g_tune_lua),
    kwd("tune.lua.log.loggers", luakw::g_tune_lua),
    kwd("tune.lua.log.stderr", luakw::g_tune_lua),
    kwd("tune.vars.global-max-size", g_tune_vars),
    kwd("tune.vars.proc-max-size", g_tune_vars),
    kwd("tune.vars.sess-max-size", g_tune_vars),
    kwd("tune.vars.txn-max-size", g_tune_vars),
    kwd("tune.vars.reqres-max-size", g_tune_vars),
];

/// `set-var <name> <expr>`, `set-var-fmt <name> <fmt>`: a `proc` variable
/// set while the configuration is read, as HAProxy does.
fn g_set_var(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    let fmt = k == "set-var-fmt";
    let (Some(name), Some(value)) = (
        words.get(1).filter(|w| !w.is_empty()),
        words.get(2).filter(|w| !w.is_empty()),
    ) else {
        let what = if fmt {
            "a format string"
        } else {
            "a sample expression"
        };
        return s.alert(
            loc,
            format!("'{k}' requires a process-wide variable name ('proc.<name>') and {what}."),
        );
    };
    let action = format!("{k}({name})");
    let rule = match super::rulekw::var_rule(&[action, value.clone()], crate::sample::Stage::ANY) {
        Ok(r) => r,
        Err(e) => return s.alert(loc, e),
    };
    if rule.var.scope != crate::sample::vars::Scope::Proc {
        return s.alert(
            loc,
            format!("'{k}': cannot set variable '{name}', only scope 'proc' is permitted in the global section."),
        );
    }
    super::rulekw::run_outside(&rule);
}

/// `tune.vars.<scope>-max-size <bytes>`: a plain number (HAProxy reads it
/// with `strtol`; an absent value is 0, no limit).
fn g_tune_vars(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    let arg = words.get(1).map_or("", String::as_str);
    let digits = arg.strip_prefix(['-', '+']).unwrap_or(arg);
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return s.alert(loc, format!("{k}: '{arg}' is an invalid size"));
    }
    // strtol's value, as HAProxy stores it in an unsigned int.
    let n = crate::sample::value::str_to_int(arg.as_bytes()) as u32 as u64;
    let l = &mut s.global.vars_limits;
    match k {
        "tune.vars.global-max-size" => l.global = n,
        "tune.vars.proc-max-size" => l.proc = n,
        "tune.vars.sess-max-size" => l.sess = n,
        "tune.vars.txn-max-size" => l.txn = n,
        _ => l.reqres = n,
    }
}

fn g_maxconn(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    let arg = words.get(1).map(String::as_str);
    let Some(n) = arg.and_then(parse_u32).filter(|n| *n > 0) else {
        return s.alert(
            loc,
            format!(
                "'{k}' expects a positive integer argument (got '{}').",
                arg.unwrap_or("")
            ),
        );
    };
    if k == "maxconn" {
        s.global.maxconn = Some(n);
    } else {
        s.global.nbthread = Some(n);
    }
}

fn g_nbproc(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let arg = words.get(1).map(String::as_str);
    let shown = arg.unwrap_or("");
    s.warn(
                    loc,
                    format!(
                        "nbproc is not supported by sluice: it runs one process and uses threads (see 'nbthread'); 'nbproc {shown}' is ignored."
                    ),
                );
}

fn g_tune_bufsize(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let arg = words.get(1).map(String::as_str);
    match arg.and_then(parse_u32) {
        // HAProxy takes a plain integer here (no size units); below
        // 1 KiB no request head would fit.
        Some(n) if n >= 1024 => s.global.tune_bufsize = Some(n),
        _ => s.alert(
            loc,
            "'tune.bufsize' expects a positive integer argument (at least 1024).",
        ),
    };
}

/// `tune.ssl.capture-buffer-size <n>` (and its deprecated name): read as
/// HAProxy's `atoi` reads it (leading digits, nothing being 0), a
/// negative one refused.
fn g_tune_ssl_capture(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    if k == "tune.ssl.capture-cipherlist-size" {
        s.diags.push(Diagnostic::parsing_tight(
            Level::Warning,
            loc,
            format!("'{k}' is deprecated and will be removed in version 2.7. Please use 'tune.ssl.capture-buffer-size' instead."),
        ));
    }
    let Some(arg) = words.get(1).filter(|a| !a.is_empty()) else {
        return s.alert(loc, format!("'{k}' expects an integer argument."));
    };
    let t = arg.trim_start();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let n = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0u64, |n, d| {
            (n * 10 + u64::from(d - b'0')).min(u64::from(i32::MAX as u32))
        });
    if neg && n > 0 {
        return s.alert(loc, format!("'{k}' expects a positive numeric value."));
    }
    s.global.ssl.capture_size = n as u32;
}

/// `tune.comp.maxlevel <1..9>`: the compression level (HAProxy's
/// encoder gives 1 whatever the level; zlib-rs, brotli and zstd use it).
fn g_tune_comp_maxlevel(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let arg = words.get(1).map_or("", String::as_str);
    if arg.is_empty() {
        let msg = format!("'{}' expects a numeric value between 1 and 9", words[0]);
        return s.tight(Level::Alert, loc, msg);
    }
    match arg.parse::<u32>() {
        Ok(n) if (1..=9).contains(&n) => s.global.comp_maxlevel = Some(n),
        _ => {
            let msg = format!("'{}' expects a numeric value between 1 and 9", words[0]);
            s.tight(Level::Alert, loc, msg)
        }
    }
}

fn g_tune_maxrewrite(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let arg = words.get(1).map(String::as_str);
    match arg.and_then(parse_u32) {
        Some(n) => s.global.tune_maxrewrite = Some(n),
        None => s.alert(
            loc,
            "'tune.maxrewrite' expects a positive integer argument.",
        ),
    };
}

fn g_tune_h2(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    let arg = words.get(1).map(String::as_str);
    s.tune_h2(loc, k, arg);
}

/// `external-check`, `insecure-fork-wanted`: flags without arguments.
fn g_flag(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    if let Some(extra) = words.get(1) {
        return s.alert(
            loc,
            format!("'{k}' cannot handle unexpected argument '{extra}'."),
        );
    }
    match k {
        "external-check" => s.global.external_check = true,
        "h1-accept-payload-with-any-method" => s.global.h1_accept_payload_with_any_method = true,
        "h2-workaround-bogus-websocket-clients" => s.global.h2_no_websocket = true,
        _ => s.global.insecure_fork_wanted = true,
    }
}

fn g_daemon(s: &mut State<'_>, _loc: &Loc, _words: &[String]) {
    s.global.daemon = true;
}

/// `master-worker [no-exit-on-failure]`, with HAProxy 2.6's messages.
fn g_master_worker(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let mut mw = crate::config::model::MasterWorker::default();
    match words.get(1).map(String::as_str) {
        None | Some("") => {}
        Some("no-exit-on-failure") => mw.no_exit_on_failure = true,
        Some(_) => {
            return s.alert(
                loc,
                "'master-worker' only supports 'no-exit-on-failure' option.",
            );
        }
    }
    if let Some(extra) = words.get(2).filter(|w| !w.is_empty()) {
        return s.alert(
            loc,
            format!("'master-worker' cannot handle unexpected argument '{extra}'."),
        );
    }
    s.global.master_worker = Some(mw);
}

/// `mworker-max-reloads <n>`. HAProxy reads the number with `atol` (a word
/// that is not one counts as 0) and only warns about a missing or negative
/// one, keeping the configuration valid: so does sluice, with its words.
fn g_mworker_max_reloads(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let Some(arg) = words.get(1).filter(|w| !w.is_empty()) else {
        return s.warn(loc, "'mworker-max-reloads' expects an integer argument.");
    };
    if let Some(extra) = words.get(2).filter(|w| !w.is_empty()) {
        return s.warn(
            loc,
            format!("'mworker-max-reloads' cannot handle unexpected argument '{extra}'."),
        );
    }
    let digits = arg
        .strip_prefix(['-', '+'])
        .unwrap_or(arg)
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap_or("");
    let n: i64 = digits.parse().unwrap_or(0);
    if arg.starts_with('-') && n > 0 {
        return s.warn(
            loc,
            format!("'mworker-max-reloads' : invalid value -{n}, must be >= 0"),
        );
    }
    s.global.mworker_max_reloads = Some(u32::try_from(n).unwrap_or(u32::MAX));
}

fn g_nosplice(s: &mut State<'_>, _loc: &Loc, _words: &[String]) {
    s.global.splice.disabled = true;
}

fn g_pipes(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    let arg = words.get(1).map(String::as_str);
    match arg.and_then(parse_u32).filter(|n| *n > 0) {
        Some(n) if k == "maxpipes" => s.global.splice.maxpipes = Some(n),
        Some(n) => s.global.splice.pipesize = Some(n),
        None => s.alert(loc, format!("'{k}' expects a positive integer argument.")),
    };
}

fn g_hard_stop_after(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let arg = words.get(1).map(String::as_str);
    let v = arg.unwrap_or("");
    match parse_time(v) {
        Ok(d) => s.global.hard_stop_after = Some(d),
        Err(e) => s.alert(loc, time_error_message("hard-stop-after", v, &e)),
    }
}

/// `server-state-file <path>`, `server-state-base <dir>`.
fn g_server_state(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    match words.get(1).filter(|w| !w.is_empty()) {
        Some(v) if k == "server-state-file" => s.global.server_state_file = Some(v.clone()),
        Some(v) => s.global.server_state_base = Some(v.clone()),
        None if k == "server-state-file" => {
            s.alert(loc, "'server-state-file' expect one argument: a file path.")
        }
        None => s.alert(
            loc,
            "'server-state-base' expects one argument: a directory path.",
        ),
    }
}

fn g_owner(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    let arg = words.get(1).map(String::as_str);
    match arg.filter(|a| !a.is_empty()) {
        Some(n) => {
            let spec = Some(IdSpec::Name(n.to_string()));
            if k == "user" {
                s.global.user = spec;
                s.global.user_loc = Some(loc.clone());
            } else {
                s.global.group = spec;
                s.global.group_loc = Some(loc.clone());
            }
        }
        None => s.alert(loc, format!("'{k}' expects a {k} name as an argument.")),
    };
}

fn g_id(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    let arg = words.get(1).map(String::as_str);
    match arg.and_then(parse_u32) {
        Some(n) => {
            if k == "uid" {
                s.global.user = Some(IdSpec::Id(n));
            } else {
                s.global.group = Some(IdSpec::Id(n));
            }
        }
        None => s.alert(
            loc,
            format!(
                "'{k}' expects an integer argument (got '{}').",
                arg.unwrap_or("")
            ),
        ),
    };
}

fn g_chroot(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let arg = words.get(1).map(String::as_str);
    match arg.filter(|a| !a.is_empty()) {
        Some(d) => s.global.chroot = Some(PathBuf::from(d)),
        None => s.alert(loc, "'chroot' expects a directory as an argument."),
    };
}

fn g_ulimit_n(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let arg = words.get(1).map(String::as_str);
    match arg.and_then(parse_u32).filter(|n| *n > 0) {
        Some(n) => s.global.ulimit_n = Some(n),
        None => s.alert(
            loc,
            format!(
                "'ulimit-n' expects a positive integer argument (got '{}').",
                arg.unwrap_or("")
            ),
        ),
    };
}

fn g_cpu_map(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    match parse_cpu_map(&words[1..]) {
        Ok(m) => s.global.cpu_map.push(m),
        Err(e) => s.alert(loc, format!("cpu-map: {e}")),
    };
}

/// `h1-case-adjust <from> <to>`, with HAProxy 2.6's messages.
fn g_h1_case_adjust(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    if let Some(extra) = words.get(3) {
        return s.alert(
            loc,
            format!("'h1-case-adjust' cannot handle unexpected argument '{extra}'."),
        );
    }
    let (Some(from), Some(to)) = (words.get(1), words.get(2)) else {
        return s.alert(loc, "'h1-case-adjust' expects <from> and <to> as argument.");
    };
    if from.is_empty() || to.is_empty() {
        return s.alert(loc, "'h1-case-adjust' expects <from> and <to> as argument.");
    }
    if let Err(e) = add_case_adjust(&mut s.global.h1_case_adjust, from, to) {
        s.alert(loc, e);
    }
}

/// One `h1-case-adjust` entry: `to` may differ from `from` only in case,
/// and `from` may not be there already (compared exactly, as HAProxy 2.6
/// compares it: `Host` and `host` are two entries).
pub(crate) fn add_case_adjust(
    table: &mut Vec<(String, String)>,
    from: &str,
    to: &str,
) -> Result<(), String> {
    if to.is_empty() {
        return Err("expect <to>".to_string());
    }
    if !from.eq_ignore_ascii_case(to) {
        return Err("<from> and <to> must not differ execpt the case".to_string());
    }
    if table.iter().any(|(k, _)| k == from) {
        return Err(format!("duplicate entry '{from}'"));
    }
    table.push((from.to_string(), to.to_string()));
    Ok(())
}

/// `h1-case-adjust-file <file>`: only the last one counts; it is read
/// after the whole configuration (`config::validate`), as HAProxy does.
fn g_h1_case_adjust_file(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    if let Some(extra) = words.get(2) {
        return s.alert(
            loc,
            format!("'h1-case-adjust-file' cannot handle unexpected argument '{extra}'."),
        );
    }
    match words.get(1).filter(|f| !f.is_empty()) {
        Some(f) => s.global.h1_case_adjust_file = Some(PathBuf::from(f)),
        None => s.alert(loc, "'h1-case-adjust-file' expects <file> as argument."),
    }
}

fn g_zero_warning(s: &mut State<'_>, _loc: &Loc, _words: &[String]) {
    s.global.zero_warning = true;
}

fn g_pidfile(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let arg = words.get(1).map(String::as_str);
    match arg.filter(|a| !a.is_empty()) {
        Some(p) => s.global.pidfile = Some(PathBuf::from(p)),
        None => s.alert(loc, "'pidfile' expects a file name as an argument."),
    };
}

/// `spread-checks <0..50>`, read as HAProxy reads it: a leading integer
/// (`atol`: words that are not one count as 0), out of range refused.
/// `max-spread-checks <delay>` (milliseconds by default).
fn g_max_spread_checks(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let Some(v) = words.get(1) else {
        return s.tight(
            Level::Alert,
            loc,
            "'max-spread-checks' expects an integer argument (0..50).",
        );
    };
    if let Some(extra) = words.get(2) {
        return s.alert(
            loc,
            format!("'max-spread-checks' cannot handle unexpected argument '{extra}'."),
        );
    }
    match crate::config::units::parse_time(v) {
        Ok(d) => s.global.max_spread_checks = Some(d),
        Err(crate::config::units::TimeError::BadChar(c)) => s.tight(
            Level::Alert,
            loc,
            format!("unsupported character '{c}' in 'max-spread-checks' (wants an integer delay)."),
        ),
        Err(_) => s.tight(
            Level::Alert,
            loc,
            "'max-spread-checks' expects an integer argument (0..50).",
        ),
    }
}

/// `unix-bind [prefix <p>] [mode <m>] [user <u>|uid <n>] [group <g>|gid
/// <n>]`.
fn g_unix_bind(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let mut d = s.global.unix_bind.clone();
    let mut i = 1;
    while let Some(kw) = words.get(i) {
        let v = words
            .get(i + 1)
            .map(String::as_str)
            .filter(|v| !v.is_empty());
        match kw.as_str() {
            "prefix" => match v {
                Some(p) => d.prefix = Some(p.to_string()),
                None => {
                    return s.alert(loc, "unix_bind 'prefix' expects a path as an argument.");
                }
            },
            // Octal, as HAProxy reads it (what is no number is 0).
            "mode" => {
                d.perms.mode = Some(v.and_then(|m| u32::from_str_radix(m, 8).ok()).unwrap_or(0));
            }
            "user" | "group" => {
                let name = v.unwrap_or("");
                let id = if kw == "user" {
                    crate::sys::process::lookup_user(name).map(|(u, _)| u)
                } else {
                    crate::sys::process::lookup_group(name)
                };
                match id {
                    Some(id) if kw == "user" => d.perms.uid = Some(id),
                    Some(id) => d.perms.gid = Some(id),
                    None => {
                        return s.alert(loc, format!("'unix-bind' : '{name}' unknown {kw}."));
                    }
                }
            }
            // A number only: HAProxy's `atol` would read a word as 0 (root).
            "uid" | "gid" => match socket_owner(kw, v) {
                Ok(id) if kw == "uid" => d.perms.uid = Some(id),
                Ok(id) => d.perms.gid = Some(id),
                Err(e) => return s.alert(loc, format!("'unix-bind' : {e}.")),
            },
            _ => {
                return s.alert(
                    loc,
                    "'unix-bind' only supports the 'prefix', 'mode', 'uid', 'gid', 'user' and 'group' options.",
                );
            }
        }
        i += 2;
    }
    s.global.unix_bind = d;
}

/// `tune.http.logurilen <n>` (atoi's value, as HAProxy reads it) and
/// `tune.http.maxhdr <1..32767>`.
fn g_tune_http(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    let Some(arg) = words.get(1).filter(|a| !a.is_empty()) else {
        return s.alert(loc, format!("'{k}' expects an integer argument."));
    };
    if let Some(extra) = words.get(2) {
        return s.alert(
            loc,
            format!("'{k}' cannot handle unexpected argument '{extra}'."),
        );
    }
    let n = crate::sample::value::str_to_int(arg.as_bytes());
    if k == "tune.http.maxhdr" {
        if !(1..=32767).contains(&n) {
            return s.alert(
                loc,
                format!("'{k}' expects a numeric value between 1 and 32767"),
            );
        }
        s.global.max_hdr = Some(n as u32);
    } else {
        s.global.log_uri_len = Some(n.clamp(0, i64::from(i32::MAX)) as usize);
    }
}

/// `expose-experimental-directives`: the keywords HAProxy 2.6 calls
/// experimental (`http-request normalize-uri`) may follow. HAProxy reads
/// no argument, and says nothing of one.
fn g_expose_experimental(s: &mut State<'_>, _loc: &Loc, _words: &[String]) {
    s.global.expose_experimental = true;
}

/// `strict-limits`.
fn g_strict_limits(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    if let Some(extra) = words.get(1) {
        return s.alert(
            loc,
            format!("'strict-limits' cannot handle unexpected argument '{extra}'."),
        );
    }
    s.global.strict_limits = true;
}

impl State<'_> {
    pub(super) fn set_default_path(&mut self, policy: crate::sys::cfgdir::DefaultPath) {
        self.default_path = policy;
    }

    /// The global socket settings every `bind` line takes: `noreuseport`,
    /// `tune.rcvbuf.client`, `tune.sndbuf.client`.
    pub(super) fn finish_bind_globals(&mut self) {
        let g = &self.global;
        let (noreuse, rcv, snd) = (g.noreuseport, g.sockbufs.rcv_client, g.sockbufs.snd_client);
        for p in &mut self.proxies {
            for b in &mut p.binds {
                b.sock.noreuseport = noreuse;
                b.sock.rcvbuf = rcv;
                b.sock.sndbuf = snd;
                // The proxy's `backlog` where the line sets none (0 is
                // no setting, as in HAProxy).
                if b.sock.backlog.is_none() {
                    b.sock.backlog = p.backlog.filter(|n| *n > 0);
                }
            }
        }
    }
}

/// HAProxy's error for the argument of a keyword sluice ignores, for the
/// ones whose argument HAProxy checks.
fn ignored_arg_error(words: &[String]) -> Option<String> {
    let k = words[0].as_str();
    let arg = words.get(1).map_or("", String::as_str);
    match k {
        "insecure-setuid-wanted" => words
            .get(1)
            .map(|extra| format!("'{k}' cannot handle unexpected argument '{extra}'.")),
        "tune.ssl.maxrecord" if arg.is_empty() => {
            Some(format!("'{k}' expects an integer argument."))
        }
        "tune.ssl.lifetime" if arg.is_empty() => Some(format!(
            "'{k}' expects ssl sessions <lifetime> in seconds as argument."
        )),
        "tune.ssl.lifetime" => match parse_time(arg) {
            Err(crate::config::units::TimeError::BadChar(c)) => {
                Some(format!("unexpected character '{c}' in argument to <{k}>."))
            }
            _ => None,
        },
        "tune.idle-pool.shared" if arg != "on" && arg != "off" => Some(format!(
            "'{k}' expects either 'on' or 'off' but got '{arg}'."
        )),
        _ => None,
    }
}

/// `set-dumpable`, `noreuseport`: flags without arguments.
fn g_bare_flag(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    if let Some(extra) = words.get(1) {
        return s.alert(
            loc,
            format!("'{k}' cannot handle unexpected argument '{extra}'."),
        );
    }
    match k {
        "set-dumpable" => s.global.set_dumpable = true,
        "pp2-never-send-local" => s.global.pp2_never_send_local = true,
        _ => s.global.noreuseport = true,
    }
}

/// `default-path current|config|parent|origin <dir>`: from this line on,
/// relative paths start there.
fn g_default_path(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    use crate::sys::cfgdir::DefaultPath;
    let mode = words.get(1).map_or("", String::as_str);
    let policy = match mode {
        "current" => DefaultPath::Current,
        "config" => DefaultPath::Config,
        "parent" => DefaultPath::Parent,
        "origin" => match words.get(2).filter(|d| !d.is_empty()) {
            Some(d) => DefaultPath::Origin(std::path::PathBuf::from(d)),
            None => {
                return s.alert(
                    loc,
                    "'default-path origin' expects a directory as an argument.",
                );
            }
        },
        "" => {
            return s.alert(
                loc,
                "missing default-path mode '' for 'default-path', supported modes include 'current', 'config', 'parent', and 'origin'.",
            );
        }
        other => {
            return s.alert(
                loc,
                format!(
                    "unsupported default-path mode '{other}' for 'default-path', supported modes include 'current', 'config', 'parent', and 'origin'."
                ),
            );
        }
    };
    crate::sys::cfgdir::set_base(policy.base(&loc.file));
    s.set_default_path(policy);
}

/// `grace <time>`.
fn g_grace(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let Some(arg) = words.get(1).filter(|a| !a.is_empty()) else {
        return s.alert(loc, "'grace' expects <time> as argument.\n");
    };
    match parse_time(arg) {
        Ok(d) => s.global.grace = Some(d),
        Err(crate::config::units::TimeError::BadChar(c)) => s.alert(
            loc,
            format!("unexpected character '{c}' in argument to <grace>.\n"),
        ),
        Err(e) => s.alert(loc, time_error_message("grace", arg, &e)),
    }
}

/// `fd-hard-limit`, `tune.rcvbuf.*`, `tune.sndbuf.*`,
/// `tune.ssl.cachesize`, `tune.ssl.hard-maxrecord`: a count, read as
/// HAProxy's atol reads it.
fn g_count(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    let Some(arg) = words.get(1).filter(|a| !a.is_empty()) else {
        return s.alert(loc, format!("'{k}' expects an integer argument."));
    };
    if let Some(extra) = words.get(2).filter(|_| k.starts_with("max")) {
        return s.alert(
            loc,
            format!("'{k}' cannot handle unexpected argument '{extra}'."),
        );
    }
    let n = crate::config::units::atoi(arg).clamp(0, i64::from(u32::MAX));
    let n32 = n as u32;
    let g = &mut s.global;
    match k {
        "maxconnrate" => g.maxconnrate = Some(n32).filter(|n| *n > 0),
        "maxsessrate" => g.maxsessrate = Some(n32).filter(|n| *n > 0),
        "fd-hard-limit" => g.fd_hard_limit = Some(n as u64),
        "tune.rcvbuf.client" => g.sockbufs.rcv_client = Some(n32),
        "tune.rcvbuf.server" => g.sockbufs.rcv_server = Some(n32),
        "tune.sndbuf.client" => g.sockbufs.snd_client = Some(n32),
        "tune.sndbuf.server" => g.sockbufs.snd_server = Some(n32),
        "tune.ssl.cachesize" => g.ssl_cachesize = Some(n32),
        _ => g.ssl_hard_maxrecord = Some(n32),
    }
}

fn g_spread_checks(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let Some(arg) = words.get(1) else {
        return s.tight(
            Level::Alert,
            loc,
            "'spread-checks' expects an integer argument (0..50).",
        );
    };
    let digits = arg
        .strip_prefix(['-', '+'])
        .unwrap_or(arg)
        .bytes()
        .take_while(u8::is_ascii_digit)
        .count();
    let sign = usize::from(arg.starts_with(['-', '+']));
    let n: i64 = arg[..sign + digits].parse().unwrap_or(0);
    if !(0..=50).contains(&n) {
        return s.tight(
            Level::Alert,
            loc,
            "'spread-checks' needs a positive value in range 0..50.",
        );
    }
    s.global.spread_checks = n as u32;
}

fn g_node(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let arg = words.get(1).map(String::as_str);
    match arg {
        Some(n) => s.global.node = Some(n.to_string()),
        None => s.alert(loc, "'node' expects a name as an argument."),
    };
}

/// `setenv <name> <value>`, `presetenv <name> <value>` (only where the
/// variable is not set): for the `${...}` of the lines after it and for
/// the running configuration (the `env` fetch, `show env`).
fn g_setenv(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let (Some(name), Some(value)) = (words.get(1), words.get(2)) else {
        return s.tight(
            Level::Alert,
            loc,
            format!("'{}' expects a name and a value.", words[0]),
        );
    };
    let base = s.env.unwrap_or(&|_| None);
    s.global.env.set(name, value, words[0] == "setenv", base);
}

/// `unsetenv <name>...`.
fn g_unsetenv(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    if words.len() < 2 {
        return s.tight(
            Level::Alert,
            loc,
            "'unsetenv' expects at least one variable name.",
        );
    }
    for name in &words[1..] {
        s.global.env.unset(name);
    }
}

/// `resetenv [<name>...]`: only the variables named are kept.
fn g_resetenv(s: &mut State<'_>, _: &Loc, words: &[String]) {
    s.global.env.reset(&words[1..]);
}

/// `localpeer <name>`: this process among the peers (the peers layer
/// reads it; `-L` wins, as in HAProxy).
fn g_localpeer(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    if let Some(extra) = words.get(2) {
        return s.alert(
            loc,
            format!(
                "'{}' cannot handle unexpected argument '{extra}'.",
                words[0]
            ),
        );
    }
    let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
        return s.alert(loc, "'localpeer' expects a name as an argument.");
    };
    if crate::sys::process::local_peer().is_some() {
        return s.warn(
            loc,
            "'localpeer' ignored since it is already set by using the '-L' command line argument.",
        );
    }
    if !s.global.peers.is_empty() {
        return s.warn(
            loc,
            "'localpeer' ignored since it is used after 'peers' section.",
        );
    }
    s.global.localpeer = Some(name.clone());
}

fn g_description(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    if words.len() < 2 {
        s.alert(loc, "'description' expects a string argument.");
    } else {
        s.global.description = Some(words[1..].join(" "));
    }
}

fn g_stats(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    s.global_stats(loc, words);
}

fn g_log(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    match s
        .log_words(words)
        .and_then(|w| crate::config::log::parse_log(&w))
    {
        Ok(crate::config::log::LogLine::Target(t)) => {
            s.note_ring_ref(loc, &t.sink, None);
            s.global.log.targets.push(t)
        }
        Ok(crate::config::log::LogLine::Global) => {
            s.alert(loc, "log : 'global' is only allowed in proxies")
        }
        Err(e) => s.alert(loc, e),
    };
}

fn g_log_tag(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    match crate::config::log::parse_log_tag(words) {
        Ok(t) => s.global.log.tag = Some(t),
        Err(e) => s.alert(loc, e),
    };
}

/// `log-send-hostname [<name>]`: the syslog header names the host (this
/// one, or `<name>`).
fn g_log_send_hostname(s: &mut State<'_>, _: &Loc, words: &[String]) {
    let name = match words.get(1) {
        Some(n) => n.clone(),
        None => crate::sys::process::hostname().to_string(),
    };
    s.global.log.send_hostname = Some(name);
}

/// `quiet`: nothing is printed at start-up, as with `-q` (the start-up
/// code reads it from the statements, errors or not: `says_quiet`).
fn g_quiet(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    if let Some(extra) = words.get(1) {
        s.alert(
            loc,
            format!("'quiet' cannot handle unexpected argument '{extra}'."),
        );
    }
}

fn g_ssl(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    s.global_ssl(loc, words);
}

/// The final period of a message, unless it ends with a suggestion.
/// The id named by a `stats socket` `uid`/`gid`/`user`/`group` option, with
/// HAProxy's error texts. A non-numeric `uid`/`gid` is an error (HAProxy's
/// `atol` would silently read it as 0, that is root).
pub(super) fn socket_owner(kw: &str, val: Option<&str>) -> Result<u32, String> {
    let val = val.filter(|v| !v.is_empty());
    match kw {
        "user" | "group" => {
            let Some(name) = val else {
                return Err(format!("'{kw}' : missing {kw} name"));
            };
            let id = if kw == "user" {
                crate::sys::process::lookup_user(name).map(|(uid, _)| uid)
            } else {
                crate::sys::process::lookup_group(name)
            };
            id.ok_or_else(|| format!("'{kw}' : unknown {kw} name '{name}'"))
        }
        _ => match val {
            None => Err(format!("'{kw}' : missing value")),
            Some(v) => parse_u32(v)
                .ok_or_else(|| format!("'{kw}' : invalid value '{v}' (integer expected)")),
        },
    }
}

/// `cpu-map [auto:]<group>[/<threads>] <cpus>...` (HAProxy 2.6 syntax;
/// sluice has one thread group, so the group is `1`, `all`, `odd` or
/// `even` only as far as they include 1).
pub(crate) fn parse_cpu_map(args: &[String]) -> Result<CpuMap, String> {
    let Some(first) = args.first() else {
        return Err("expects a thread group and a CPU set.".to_string());
    };
    let (auto, spec) = match first.strip_prefix("auto:") {
        Some(rest) => (true, rest),
        None => (false, first.as_str()),
    };
    let (group, threads) = match spec.split_once('/') {
        Some((g, t)) => (g, Some(t)),
        None => (spec, None),
    };
    let group_ok = match group {
        "all" | "odd" | "1" => true,
        g => parse_set(g).is_ok_and(|s| s.contains(&1)),
    };
    if !group_ok {
        return Err(format!(
            "invalid thread group '{group}' (sluice has a single thread group, '1')."
        ));
    }
    let threads = match threads {
        None | Some("all") => None,
        Some(t) => Some(
            parse_set(t)
                .map_err(|e| format!("invalid thread set '{t}': {e}"))?
                .into_iter()
                .map(|n| n as u32)
                .filter(|n| *n > 0)
                .collect::<Vec<_>>(),
        ),
    };
    if args.len() < 2 {
        return Err("expects a CPU set after the thread set.".to_string());
    }
    let mut cpus = Vec::new();
    for a in &args[1..] {
        for part in a.split(',') {
            cpus.extend(parse_set(part).map_err(|e| format!("invalid CPU set '{a}': {e}"))?);
        }
    }
    if auto
        && let Some(t) = &threads
        && t.len() != cpus.len()
    {
        return Err(format!(
            "'auto:' needs as many CPUs as threads ({} threads, {} CPUs).",
            t.len(),
            cpus.len()
        ));
    }
    Ok(CpuMap {
        auto,
        threads,
        cpus,
    })
}

/// `n`, `n-m`, `odd`, `even` (odd/even over 1..=64).
pub(super) fn parse_set(s: &str) -> Result<Vec<usize>, String> {
    match s {
        "odd" => return Ok((1..=64).step_by(2).collect()),
        "even" => return Ok((2..=64).step_by(2).collect()),
        _ => {}
    }
    let num = |x: &str| {
        x.parse::<usize>()
            .ok()
            .filter(|n| *n < 1024)
            .ok_or_else(|| format!("'{x}' is not a number below 1024"))
    };
    match s.split_once('-') {
        Some((a, b)) => {
            let (a, b) = (num(a)?, num(b)?);
            if a > b {
                return Err(format!("range {a}-{b} is reversed"));
            }
            Ok((a..=b).collect())
        }
        None => Ok(vec![num(s)?]),
    }
}
