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
    "set-priority-class",
    "set-priority-offset",
    "set-log-level",
    "send-spoe-group",
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
                let lua_args = action
                    .strip_prefix("lua.")
                    .filter(|_| set == RuleSet::TcpContent)
                    .and_then(|n| crate::sample::script::parsing_action_args(n, "tcp-req"));
                let action = match action {
                    "accept" => TcpAction::Accept,
                    _ if lua_args.is_some() => TcpAction::Accept,
                    "reject" => TcpAction::Reject,
                    "silent-drop" => TcpAction::SilentDrop,
                    // Parsed below, with their arguments.
                    _ if is_var || table => TcpAction::Accept,
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
                } else if table {
                    let stage = self.tcp_stage(set);
                    match self.table_action(set, &rest[..args_end], stage, loc) {
                        Ok((a, n)) => {
                            used = n;
                            TcpAction::Table(a)
                        }
                        Err(e) => return self.alert(loc, e),
                    }
                } else {
                    action
                };
                if used < args_end {
                    let kind = type_str(self.proxy_kind().unwrap_or(ProxyKind::Listen));
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
