//! `tcp-request connection|content accept|reject [if|unless <cond>]` and
//! `tcp-request inspect-delay <time>`.

use super::stickkw::RuleSet;
use super::*;
use crate::config::model::{TableAction, TcpAction, TcpRule};

/// HAProxy 2.6's other `tcp-request` actions: refused as not supported
/// yet rather than as unknown.
const TCP_ACTIONS_UNSUPPORTED: &[&str] = &[
    "expect-proxy",
    "expect-netscaler-cip",
    "capture",
    "set-src",
    "set-src-port",
    "set-dst",
    "set-dst-port",
    "set-mark",
    "set-tos",
    "do-resolve",
    "switch-mode",
    "use-service",
    "set-log-level",
    "send-spoe-group",
    "attach-srv",
    "lua",
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
                let action = match action {
                    "accept" => TcpAction::Accept,
                    "reject" => TcpAction::Reject,
                    "silent-drop" => TcpAction::SilentDrop,
                    // Parsed below, with their arguments.
                    _ if is_var || table || priority => TcpAction::Accept,
                    a if TCP_ACTIONS_UNSUPPORTED.contains(&a)
                        || kw::haproxy_has(kw::Kind::TcpRequest, a)
                        || a.starts_with("lua.") =>
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
                let action = if is_var {
                    used = args_end;
                    match super::rulekw::var_rule(&rest[..args_end], crate::sample::Stage::ANY) {
                        Ok(r) => TcpAction::Var(r),
                        // HAProxy prints these bare.
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

impl State<'_> {
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
