//! `tcp-request connection|session|content <action> [if|unless <cond>]`,
//! `tcp-request inspect-delay <time>`, and their response side in a
//! backend: `tcp-response content <action> [if|unless <cond>]` and
//! `tcp-response inspect-delay <time>`.

use super::stickkw::RuleSet;
use super::*;
use crate::config::model::{TableAction, TcpAction, TcpRule};

/// HAProxy 2.6's other `tcp-request` actions: refused as not supported
/// yet rather than as unknown.
const TCP_ACTIONS_UNSUPPORTED: &[&str] = &[
    "expect-netscaler-cip",
    "do-resolve",
    "switch-mode",
    "attach-srv",
];

impl State<'_> {
    pub(super) fn kw_tcp_request(&mut self, loc: &Loc, words: &[String]) {
        let what = words.get(1).map_or("", String::as_str);
        match what {
            "inspect-delay" => {
                if !self.cap(loc, "tcp-request inspect-delay", true, true, true) {
                    return;
                }
                let v = words.get(2).map_or("", String::as_str);
                if v.is_empty() || words.len() > 3 {
                    return self.alert(
                        loc,
                        "'tcp-request inspect-delay' expects a positive delay in milliseconds.",
                    );
                }
                match parse_time(v) {
                    Ok(d) => self.px().inspect_delay = (!d.is_zero()).then_some(d),
                    Err(e) => self.alert(
                        loc,
                        time_error_message("tcp-request inspect-delay", v, &e),
                    ),
                }
            }
            "connection" | "session" | "content" => {
                let label = format!("tcp-request {what}");
                if let Some(k) = self.proxy_kind()
                    && what != "content"
                    && !k.has_frontend()
                {
                    let name = self.px().name.clone();
                    return self.alert(
                        loc,
                        format!("{label} is not allowed because {} {name} is not a frontend", type_str(k)),
                    );
                }
                if !self.cap(loc, &label, false, true, what == "content") {
                    return;
                }
                let action = words.get(2).map_or("", String::as_str);
                let set = match what {
                    "connection" => RuleSet::TcpConnection,
                    "session" => RuleSet::TcpSession,
                    _ => RuleSet::TcpContent,
                };
                crate::sample::stick::context(set.arg_ctx());
                let is_var = ["set-var", "unset-var"].iter().any(|p| action.starts_with(p));
                let table = ["track-sc", "sc-inc-gpc", "sc-set-gpt"]
                    .iter()
                    .any(|p| action.starts_with(p));
                // `set-priority-class|offset <expr>`: content rules only.
                let priority = what == "content"
                    && matches!(action, "set-priority-class" | "set-priority-offset");
                // `set-tos` and `set-mark` in every set, the others on
                // content only, as in HAProxy 2.6.
                let sock = matches!(action, "set-tos" | "set-mark")
                    || (what == "content" && matches!(action, "set-log-level" | "set-nice"));
                let next = words.get(3).map_or("", String::as_str);
                let desc = || {
                    let kind = type_str(self.proxy_kind().unwrap_or(ProxyKind::Listen));
                    format!("{kind} '{}'", self.proxies.last().map_or("", |p| p.name.as_str()))
                };
                let lua_args = action
                    .strip_prefix("lua.")
                    .filter(|_| set == RuleSet::TcpContent)
                    .and_then(|n| crate::sample::script::parsing_action_args(n, "tcp-req"));
                let action = match action {
                    "accept" => TcpAction::Accept,
                    _ if lua_args.is_some() => TcpAction::Accept,
                    "reject" => TcpAction::Reject,
                    "silent-drop" => TcpAction::SilentDrop,
                    "expect-proxy" if what != "connection" => {
                        let d = desc();
                        return self.alert(
                            loc,
                            format!("'expect-proxy {next}' is not allowed in '{label}' rules in {d}"),
                        );
                    }
                    "expect-proxy" if next != "layer4" => {
                        let d = desc();
                        return self.alert(
                            loc,
                            format!("'{label} expect-proxy' only supports 'layer4' in {d} (got '{next}')"),
                        );
                    }
                    "expect-proxy" => TcpAction::ExpectProxy,
                    "capture" if what != "content" => {
                        let d = desc();
                        return self.alert(
                            loc,
                            format!("'capture {next}' is not allowed in '{label}' rules in {d}"),
                        );
                    }
                    "capture" => match self.tcp_capture(&words[3..]) {
                        Ok(a) => a,
                        Err(e) => return self.alert(loc, format!("'{label} capture' : {e}")),
                    },
                    // A Lua TCP service, in a TCP proxy.
                    "use-service" if what == "content" && next.starts_with("lua.") => {
                        let short = &next["lua.".len()..];
                        if crate::sample::script::parsing_has_service(short, false) {
                            if self.px().mode == Mode::Http {
                                return self.alert(
                                    loc,
                                    "Lua TCP services cannot be used on HTTP proxies",
                                );
                            }
                            TcpAction::LuaService(short.to_string())
                        } else if crate::sample::script::parsing_has_service(short, true) {
                            return self.alert(
                                loc,
                                "HTTP applets are forbidden from 'tcp-request' rulesets",
                            );
                        } else {
                            return self.alert(loc, "'content' unknown service name.");
                        }
                    }
                    // No other service can be named here: HAProxy 2.6 has
                    // none for TCP but Lua's.
                    "use-service" if what == "content" => {
                        let msg = match next {
                            "" | "if" | "unless" => "'tcp-request' expects a service name.",
                            "prometheus-exporter" => {
                                "Prometheus exporter service only available on 'http-request' rulesets"
                            }
                            _ => "'content' unknown service name.",
                        };
                        return self.alert(loc, msg);
                    }
                    // Parsed below, with their arguments.
                    _ if is_var || table || priority || sock || addr_part(action).is_some() => {
                        TcpAction::Accept
                    }
                    "send-spoe-group" if what == "content" => {
                        match spoe_group(&words[3..]) {
                            Ok(a) => a,
                            Err(e) => return self.alert(loc, e),
                        }
                    }
                    a if TCP_ACTIONS_UNSUPPORTED.contains(&a)
                        || kw::haproxy_has(kw::Kind::TcpRequest, a) =>
                    {
                        return self.unsupported(loc, &format!("{label} {a}"));
                    }
                    a => {
                        let sugg = suggest::suffix(
                            a,
                            ["accept", "reject", "silent-drop", "track-sc0", "sc-inc-gpc0"]
                                .into_iter()
                                .chain(TCP_ACTIONS_UNSUPPORTED.iter().copied()),
                        );
                        return self.alert(
                            loc,
                            format!("'{label}' expects 'accept', 'reject' or another HAProxy action, but got '{a}'{sugg}"),
                        );
                    }
                };
                let rest = &words[2..];
                let args_end = rest
                    .iter()
                    .position(|w| w == "if" || w == "unless")
                    .unwrap_or(rest.len());
                let mut used = 1;
                let action = if let Some(nargs) = lua_args {
                    used = (1 + nargs).min(args_end);
                    TcpAction::Lua(LuaAction {
                        name: rest[0]["lua.".len()..].to_string(),
                        args: rest[1..used].to_vec(),
                    })
                } else if is_var {
                    used = args_end;
                    match super::rulekw::var_rule(&rest[..args_end], crate::sample::Stage::ANY) {
                        Ok(r) => TcpAction::Var(r),
                        // HAProxy prints these bare.
                        Err(e) => return self.alert(loc, e),
                    }
                } else if action == TcpAction::ExpectProxy
                    || matches!(action, TcpAction::LuaService(_))
                {
                    used = 2;
                    action
                } else if matches!(action, TcpAction::Capture { .. }) {
                    used = 4;
                    action
                } else if matches!(action, TcpAction::SendSpoeGroup { .. }) {
                    used = 3;
                    action
                } else if let Some(part) = addr_part(words[2].as_str()) {
                    // HAProxy checks no place for these expressions.
                    let Some(text) = rest.get(1).filter(|_| args_end > 1) else {
                        return self.alert(loc, "missing fetch method");
                    };
                    used = 2;
                    match super::rulekw::action_expr(text, crate::sample::Stage::ANY, text) {
                        Ok(expr) => TcpAction::SetAddr { part, expr },
                        Err(e) => return self.alert(loc, e),
                    }
                } else if sock {
                    used = args_end.min(2);
                    match setting_action(&rest[..args_end], &label) {
                        Ok(a) => a,
                        Err(e) => return self.alert(loc, e),
                    }
                } else if table {
                    let stage = self.tcp_stage(set);
                    match self.table_action(set, &rest[..args_end], stage, loc) {
                        Ok((a, n)) => {
                            used = n;
                            TcpAction::Table(a)
                        }
                        Err(e) => return self.alert(loc, e),
                    }
                } else if priority {
                    // The expression, then only a condition.
                    used = args_end.min(2);
                    let stage = self.tcp_stage(set);
                    match super::rulekw::priority_args(&rest[1..used], stage, &label, &rest[0]) {
                        Ok(r) => TcpAction::Priority(r),
                        // HAProxy prints these bare.
                        Err(e) => return self.alert(loc, e),
                    }
                } else {
                    action
                };
                if used < args_end {
                    // HAProxy 2.6 names a listen section "proxy" here.
                    let kind = match self.proxy_kind().unwrap_or(ProxyKind::Listen) {
                        ProxyKind::Listen => "proxy",
                        k => type_str(k),
                    };
                    let name = self.px().name.clone();
                    return self.alert(
                        loc,
                        format!(
                            "'{label} {}' only accepts 'if' or 'unless', in {kind} '{name}' (got '{}')",
                            words[2], rest[used]
                        ),
                    );
                }
                let Some((_, cond)) = self.rule_condition(loc, rest, &label, &words[2]) else {
                    return;
                };
                let rule = TcpRule { action, cond };
                // HAProxy runs the sets in their order whatever the lines'.
                let p = self.px();
                let before = match set {
                    RuleSet::TcpConnection if !p.tcp_session.is_empty() => Some("session"),
                    RuleSet::TcpConnection | RuleSet::TcpSession if !p.tcp_content.is_empty() => {
                        Some("content")
                    }
                    _ => None,
                };
                if let Some(later) = before {
                    self.warn(
                        loc,
                        format!("a 'tcp-request' rule placed after a 'tcp-request {later}' rule will still be processed before."),
                    );
                }
                match set {
                    RuleSet::TcpConnection => self.px().tcp_connection.push(rule),
                    RuleSet::TcpSession => self.px().tcp_session.push(rule),
                    _ => self.px().tcp_content.push(rule),
                }
            }
            _ => self.alert(
                loc,
                format!("'tcp-request' expects 'connection', 'session', 'content' or 'inspect-delay', but got '{what}'"),
            ),
        }
    }
}

/// `send-spoe-group <engine> <group>` (the words after the action, up to
/// the condition).
fn spoe_group(args: &[String]) -> Result<TcpAction, String> {
    let end = args
        .iter()
        .position(|w| w == "if" || w == "unless")
        .unwrap_or(args.len());
    match &args[..end.min(2)] {
        [engine, group] => Ok(TcpAction::SendSpoeGroup {
            engine: engine.clone(),
            group: group.clone(),
        }),
        _ => Err("expects 2 arguments: <engine-id> <group-id>".to_string()),
    }
}

/// The address a `set-src`, `set-src-port`, `set-dst` or `set-dst-port`
/// action sets.
fn addr_part(action: &str) -> Option<crate::config::model::AddrPart> {
    use crate::config::model::AddrPart;
    Some(match action {
        "set-src" => AddrPart::Src,
        "set-src-port" => AddrPart::SrcPort,
        "set-dst" => AddrPart::Dst,
        "set-dst-port" => AddrPart::DstPort,
        _ => return None,
    })
}

/// The actions of `tcp-response content` in HAProxy 2.6's order, for its
/// message about another word.
const TCP_RESPONSE_EXPECTS: &str = "'accept', 'close', 'reject', 'ot-group', 'set-log-level', 'set-nice', 'sc-inc-gpc(*)', 'sc-inc-gpc0(*)', 'sc-inc-gpc1(*)', 'sc-set-gpt(*)', 'sc-set-gpt0(*)', 'send-spoe-group', 'set-var-fmt(*)', 'set-var(*)', 'unset-var(*)', 'set-mark', 'set-tos', 'silent-drop'";

/// `set-log-level`, `set-tos`, `set-mark`, `set-nice` with their one
/// argument (`args[0]` the action word; words after the first argument
/// are left to the caller's "only accepts 'if' or 'unless'").
fn setting_action(args: &[String], label: &str) -> Result<TcpAction, String> {
    use super::rulekw::{log_level_args, nice_args, sock_value_args};
    let one = args.get(1..2).unwrap_or(&[]);
    Ok(match args[0].as_str() {
        "set-log-level" => TcpAction::SetLogLevel(log_level_args(one, label)?),
        "set-tos" => TcpAction::SetTos(sock_value_args(one, label, "set-tos")?),
        "set-mark" => TcpAction::SetMark(sock_value_args(one, label, "set-mark")?),
        _ => TcpAction::SetNice(nice_args(one, label)?),
    })
}

impl State<'_> {
    /// `tcp-response inspect-delay <time>` and `tcp-response content
    /// <action> [if|unless <cond>]`, a backend's.
    pub(super) fn kw_tcp_response(&mut self, loc: &Loc, words: &[String]) {
        let what = words.get(1).map_or("", String::as_str);
        let desc = |s: &mut Self| match s.proxy_kind() {
            Some(k) => format!("{} '{}'", type_str(k), s.px().name),
            None => "defaults ''".to_string(),
        };
        if what.is_empty() {
            let d = desc(self);
            return self.alert(loc, format!("missing argument for 'tcp-response' in {d}"));
        }
        if what != "inspect-delay" && what != "content" {
            let d = desc(self);
            return self.alert(
                loc,
                format!(
                    "'tcp-response' expects 'inspect-delay' or 'content' in {d} (got '{what}')"
                ),
            );
        }
        match (self.proxy_kind(), &self.section) {
            (Some(k), _) if k.has_backend() => {}
            // A named defaults section's rules would be HAProxy's; sluice
            // has no rules in defaults sections yet.
            (None, Section::Defaults(i)) if !self.defaults[*i].name.is_empty() => {
                return self.alert(
                    loc,
                    format!("'tcp-response {what}' not allowed in 'defaults' section."),
                );
            }
            _ => {
                return self.alert(
                    loc,
                    format!("tcp-response {what} is only allowed in 'backend' sections or 'defaults' section with a name"),
                );
            }
        }
        if what == "inspect-delay" {
            let d = desc(self);
            let msg = format!(
                "'tcp-response inspect-delay' expects a positive delay in milliseconds, in {d}"
            );
            let Some(v) = words.get(2) else {
                return self.alert(loc, msg);
            };
            if self.px().res_inspect_delay.is_some() {
                return self.warn(
                    loc,
                    format!("ignoring tcp-response inspect-delay (was already defined) in {d}"),
                );
            }
            // Words after the delay are ignored, as HAProxy does.
            match parse_time(v) {
                Ok(t) => self.px().res_inspect_delay = Some(t),
                Err(crate::config::units::TimeError::BadChar(c)) => {
                    self.alert(loc, format!("{msg} (unexpected character '{c}')"))
                }
                Err(_) => self.alert(loc, msg),
            }
            return;
        }
        use crate::sample::Stage;
        use crate::sample::stage::Place;
        let stage = Stage::of(Place::BeResCnt);
        crate::sample::stick::context(RuleSet::TcpContent.arg_ctx());
        let label = "tcp-response content";
        let word = words.get(2).map_or("", String::as_str);
        let rest = &words[2.min(words.len())..];
        let args_end = rest
            .iter()
            .position(|w| w == "if" || w == "unless")
            .unwrap_or(rest.len());
        let args = &rest[..args_end];
        let var = ["set-var", "unset-var"].iter().any(|p| word.starts_with(p));
        let parsed: Result<(TcpAction, usize), String> = match word {
            "accept" => Ok((TcpAction::Accept, 1)),
            "reject" => Ok((TcpAction::Reject, 1)),
            "close" => Ok((TcpAction::Close, 1)),
            "silent-drop" => Ok((TcpAction::SilentDrop, 1)),
            "set-log-level" | "set-tos" | "set-mark" | "set-nice" => {
                setting_action(args, label).map(|a| (a, 2.min(args.len())))
            }
            _ if var => {
                let n = if word.starts_with("unset") { 1 } else { 2 }.min(args.len());
                super::rulekw::var_rule(&args[..n], stage).map(|r| (TcpAction::Var(r), n))
            }
            w if w.starts_with("sc-inc-gpc") => {
                super::stickkw::inc_gpc(w).map(|a| (TcpAction::Table(TableAction::IncGpc(a)), 1))
            }
            w if w.starts_with("sc-set-gpt") => {
                super::stickkw::set_gpt(args, stage, RuleSet::TcpContent)
                    .map(|(a, n)| (TcpAction::Table(TableAction::SetGpt(a)), n))
            }
            "send-spoe-group" => spoe_group(&args[1..]).map(|a| (a, 3)),
            // An action a script registered for `tcp-res`, with the
            // number of words it takes after its name.
            w if w.starts_with("lua.")
                && crate::sample::script::parsing_action_args(&w[4..], "tcp-res").is_some() =>
            {
                let nargs = crate::sample::script::parsing_action_args(&w[4..], "tcp-res");
                let used = (1 + nargs.unwrap_or(0)).min(args_end);
                Ok((
                    TcpAction::LuaRes(LuaAction {
                        name: w[4..].to_string(),
                        args: args[1..used].to_vec(),
                    }),
                    used,
                ))
            }
            // `ot-group`.
            w if kw::haproxy_has(kw::Kind::TcpResponse, w) => {
                return self.unsupported(loc, &format!("{label} {word}"));
            }
            _ => {
                let d = desc(self);
                return self.alert(
                    loc,
                    format!("'{label}' expects {TCP_RESPONSE_EXPECTS} in {d} (got '{word}')."),
                );
            }
        };
        let (action, used) = match parsed {
            Ok(p) => p,
            // HAProxy prints these bare.
            Err(e) => return self.alert(loc, e),
        };
        if used < args_end {
            let d = desc(self);
            return self.alert(
                loc,
                format!(
                    "'{label} {word}' only accepts 'if' or 'unless', in {d} (got '{}')",
                    rest[used]
                ),
            );
        }
        let cond = match rest.get(args_end).map(String::as_str) {
            None => None,
            // An empty condition holds for `unless`, never for `if`, as
            // in HAProxy.
            Some(w) if rest.len() == args_end + 1 => Some(crate::acl::Condition {
                unless: w == "unless",
                groups: Vec::new(),
            }),
            Some(w) => match self.condition(loc, &rest[args_end..]) {
                Ok(c) => {
                    self.warn_conflicts(loc, &c, stage, &rest[args_end..], Some(label));
                    Some(c)
                }
                Err(e) => {
                    let d = desc(self);
                    return self.alert(
                        loc,
                        format!("'{label} {word}' : error detected in {d} while parsing '{w}' condition : {e}"),
                    );
                }
            },
        };
        self.px().tcp_response.push(TcpRule { action, cond });
    }

    /// `capture <expr> len <n>` of `tcp-request content` (`args` after
    /// `capture`): a request capture slot of its own, as `http-request
    /// capture ... len` takes; HAProxy's messages.
    fn tcp_capture(&mut self, args: &[String]) -> Result<TcpAction, String> {
        if !self.proxy_kind().is_some_and(|k| k.has_frontend()) {
            let name = self.px().name.clone();
            return Err(format!("proxy '{name}' has no frontend capability"));
        }
        let text = match args.first().map(String::as_str) {
            None | Some("if" | "unless") => return Err("missing fetch method".into()),
            Some(t) => t,
        };
        let stage = self.tcp_stage(RuleSet::TcpContent);
        let expr = super::rulekw::action_expr(text, stage, text)?;
        let len = match (args.get(1).map(String::as_str), args.get(2)) {
            (Some("len"), Some(n)) => crate::config::units::atoi(n),
            _ => return Err("a positive 'len' argument is mandatory".into()),
        };
        if len <= 0 {
            return Err("length must be > 0".into());
        }
        let slots = &mut self.px().captures.request;
        slots.push((String::new(), len as usize));
        Ok(TcpAction::Capture {
            expr,
            slot: slots.len() - 1,
            len: len as usize,
        })
    }

    /// Where the expressions of a `tcp-request` rule set are read.
    fn tcp_stage(&self, set: RuleSet) -> crate::sample::Stage {
        use crate::sample::Stage;
        use crate::sample::stage::Place;
        let (fe, be) = self
            .proxy_kind()
            .map_or((true, true), |k| (k.has_frontend(), k.has_backend()));
        match set {
            RuleSet::TcpConnection => Stage::of(Place::FeConAcc),
            RuleSet::TcpSession => Stage::of(Place::FeSesAcc),
            _ => match (fe, be) {
                (true, true) => Stage::of(Place::FeReqCnt).with(Place::BeReqCnt),
                (true, false) => Stage::of(Place::FeReqCnt),
                _ => Stage::of(Place::BeReqCnt),
            },
        }
    }

    /// `track-sc*`, `sc-inc-gpc*`, `sc-set-gpt*` of rule set `set`:
    /// `args[0]` the action word, the condition split off. The action
    /// and the words it took, or HAProxy's message (a `tcp-request`
    /// track's with its rule's prefix).
    pub(in crate::config::parser) fn table_action(
        &mut self,
        set: RuleSet,
        args: &[String],
        stage: crate::sample::Stage,
        loc: &Loc,
    ) -> Result<(TableAction, usize), String> {
        let word = args[0].as_str();
        let tcp = !matches!(set, RuleSet::HttpRequest | RuleSet::HttpResponse);
        if word.starts_with("track-sc") {
            let proxy = self.px().name.clone();
            return super::stickkw::track_rule(args, stage, (&proxy, tcp), loc)
                .map(|(r, n)| (TableAction::Track(r), n))
                .map_err(|e| {
                    if tcp {
                        let what = match set {
                            RuleSet::TcpConnection => "connection",
                            RuleSet::TcpSession => "session",
                            _ => "content",
                        };
                        format!("'tcp-request {what} {word}' : {e}")
                    } else {
                        e
                    }
                });
        }
        if word.starts_with("sc-inc-gpc") {
            return super::stickkw::inc_gpc(word).map(|a| (TableAction::IncGpc(a), 1));
        }
        super::stickkw::set_gpt(args, stage, set).map(|(a, n)| (TableAction::SetGpt(a), n))
    }
}
