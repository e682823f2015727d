//! `tcp-request connection|content accept|reject [if|unless <cond>]` and
//! `tcp-request inspect-delay <time>`.

use super::*;
use crate::config::model::{TcpAction, TcpRule};

/// HAProxy 2.6's other `tcp-request` actions: refused as not supported
/// yet rather than as unknown.
const TCP_ACTIONS_UNSUPPORTED: &[&str] = &[
    "expect-proxy",
    "expect-netscaler-cip",
    "capture",
    "track-sc0",
    "track-sc1",
    "track-sc2",
    "sc-inc-gpc",
    "sc-inc-gpc0",
    "sc-inc-gpc1",
    "sc-set-gpt0",
    "set-src",
    "set-src-port",
    "set-dst",
    "set-dst-port",
    "silent-drop",
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
            "connection" | "content" => {
                let label = format!("tcp-request {what}");
                if !self.cap(loc, &label, false, true, what == "content") {
                    return;
                }
                let action = words.get(2).map_or("", String::as_str);
                let is_var = ["set-var", "unset-var"].iter().any(|p| action.starts_with(p));
                let action = match action {
                    "accept" => TcpAction::Accept,
                    "reject" => TcpAction::Reject,
                    // Parsed below, with its arguments.
                    _ if is_var => TcpAction::Accept,
                    a if TCP_ACTIONS_UNSUPPORTED.contains(&a)
                        || kw::haproxy_has(kw::Kind::TcpRequest, a)
                        || a.starts_with("sc-")
                        || a.starts_with("lua.") =>
                    {
                        return self.unsupported(loc, &format!("{label} {a}"));
                    }
                    a => {
                        let sugg = suggest::suffix(
                            a,
                            ["accept", "reject"]
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
                let Some((cond_at, cond)) =
                    self.rule_condition(loc, rest, &label, &words[2])
                else {
                    return;
                };
                let action = if is_var {
                    match super::rulekw::var_rule(&rest[..cond_at], crate::sample::Stage::ANY) {
                        Ok(r) => TcpAction::Var(r),
                        // HAProxy prints these bare.
                        Err(e) => return self.alert(loc, e),
                    }
                } else {
                    action
                };
                if cond_at != 1 && !is_var {
                    return self.alert(
                        loc,
                        format!(
                            "'{label} {}' : unexpected argument '{}'.",
                            words[2], rest[1]
                        ),
                    );
                }
                let rule = TcpRule {
                    action,
                    cond,
                };
                if what == "connection" {
                    self.px().tcp_connection.push(rule);
                } else {
                    self.px().tcp_content.push(rule);
                }
            }
            "session" => self.unsupported(loc, "tcp-request session"),
            _ => self.alert(
                loc,
                format!("'tcp-request' expects 'connection', 'session', 'content' or 'inspect-delay', but got '{what}'"),
            ),
        }
    }
}
