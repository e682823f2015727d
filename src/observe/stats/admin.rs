//! Server actions shared by the CLI (`set server <b>/<s> state|health`,
//! `enable|disable health`) and the stats page's admin form (`stats admin
//! if <cond>`), and the page's POST protocol as HAProxy 2.6 speaks it
//! (src/stats.c `stats_process_http_post`).

use crate::snapshot::{BackendRt, ServerRt, Snapshot};
use crate::state::AdminState;
use crate::state::health::Forced;

/// What the page asks of a server's agent check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AgentAction {
    Disable,
    Enable,
    Up,
    Down,
}

/// One action on one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerAction {
    /// `set server ... state ready|drain|maint`; the page's `ready`,
    /// `drain`, `maint`.
    State(AdminState),
    /// `enable|disable health`; the page's `ehlth` / `dhlth`.
    Checks(bool),
    /// `set server ... health up|stopping|down`; the page's `hrunn`,
    /// `hnolb`, `hdown`.
    Health(Forced),
    /// The page's agent actions: `dagent` / `eagent` (checks off, on) and
    /// `arunn` / `adown` (the agent's health forced up, down); a server
    /// without an agent is not altered, as in HAProxy.
    Agent(AgentAction),
    /// `shutdown sessions server`, the page's "Kill Sessions": the client
    /// connections of the server's streams are shut down.
    Shutdown,
}

/// Applies `action` to `s`; false when it could not apply (enabling
/// checks that are not configured, agent actions), which the page counts
/// as an unaltered server.
pub(crate) fn apply(be: &BackendRt, s: &ServerRt, action: ServerAction) -> bool {
    match action {
        ServerAction::State(to) => {
            let before = s.state.set_admin(to);
            crate::observe::log::server_state::admin_event(be, s, before, to);
            true
        }
        // Disabling unconfigured checks is accepted (the CLI says nothing);
        // enabling them is refused.
        ServerAction::Checks(on) => s.state.health.set_check_enabled(on),
        ServerAction::Health(to) => {
            s.state.health.force(to);
            true
        }
        ServerAction::Shutdown => {
            crate::state::sessions::shut_down_streams_of(std::sync::Arc::as_ptr(&s.state));
            s.state.cut_sessions();
            true
        }
        ServerAction::Agent(a) => {
            let h = &s.state.health;
            if !h.agent_configured() {
                return false;
            }
            match a {
                AgentAction::Disable => h.set_agent_enabled(false),
                AgentAction::Enable => h.set_agent_enabled(true),
                AgentAction::Up | AgentAction::Down if h.agent_enabled() => {
                    h.force_agent(a == AgentAction::Up);
                    true
                }
                _ => false,
            }
        }
    }
}

/// `set server <b>/<s> addr <ip> [port <port>]` (and a script's
/// `set_addr`) with HAProxy's report (`IP changed from '..' to '..', port
/// changed from '..' to '..' by '<by>'`). New connections go to the new
/// address; idle pooled connections to the old one are dropped.
pub(crate) fn set_addr(
    s: &ServerRt,
    (ip, port_kw, port): (Option<&str>, Option<&str>, Option<&str>),
    by: &str,
) -> String {
    let by = format!(" by '{by}'\n");
    let by = by.as_str();
    let Some(ip) = ip else {
        return "set server <b>/<s> addr requires an address and optionally a port.\n".into();
    };
    let Ok(new_ip) = ip.parse::<std::net::IpAddr>() else {
        return format!("Invalid addr '{ip}'{by}");
    };
    if !s.state.has_addr() {
        // No address (family) yet: HAProxy changes nothing.
        return format!(
            "Update for the current server address family is only supported through configuration file{by}"
        );
    }
    let old = s.state.addr();
    let mut msg = if old.ip() == new_ip {
        "no need to change the addr".to_string()
    } else {
        format!("IP changed from '{}' to '{new_ip}'", old.ip())
    };
    let mut new_port = old.port();
    if port_kw == Some("port") {
        let p = port.unwrap_or("");
        match p.parse::<u16>() {
            Ok(n) if n == old.port() => msg.push_str(", no need to change the port"),
            Ok(n) => {
                msg.push_str(&format!(", port changed from '{}' to '{n}'", old.port()));
                new_port = n;
            }
            Err(_) => msg.push_str(&format!(", problem converting port '{p}' to an int")),
        }
    }
    let new = std::net::SocketAddr::new(new_ip, new_port);
    if new != old {
        s.state.set_addr(new);
    }
    msg.push_str(by);
    msg
}

/// `set maxconn server` (and a script's `set_maxconn`): HAProxy's parse
/// and error texts; a higher limit hands its room to the requests queued.
pub(crate) fn set_maxconn(be: &BackendRt, s: &ServerRt, arg: &str) -> Result<(), &'static str> {
    use std::sync::atomic::Ordering::Relaxed;
    let Some((v, rest)) = strtol(arg) else {
        return Err("maxconn string empty or preceded by garbage");
    };
    if !rest.is_empty() {
        return Err("Trailing garbage in maxconn string");
    }
    // Stored as HAProxy's unsigned field: -1 becomes 4294967295 (no limit).
    let v = v as i32 as u32;
    let before = s.state.maxconn.swap(v, Relaxed);
    if v == 0 || (before != 0 && v > before) {
        // More room: hand it to requests already waiting in the queue.
        crate::state::Queue::dispatch_to(&s.state, &be.state);
    }
    Ok(())
}

/// C `strtol(s, &end, 10)`: leading blanks, sign, digits. Returns the
/// value (saturated) and the unparsed rest, or `None` when no digit was
/// read (`end == s`).
pub(crate) fn strtol(s: &str) -> Option<(i64, &str)> {
    let t = s.trim_start_matches([' ', '\t']);
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let v = body[..digits].bytes().fold(0i64, |acc, d| {
        acc.saturating_mul(10).saturating_add(i64::from(d - b'0'))
    });
    Some((if neg { -v } else { v }, &body[digits..]))
}

/// HAProxy's `server_parse_weight_change_request`: the new weight, or the
/// exact error text (some of HAProxy's have no line feed; the framing's
/// empty line then ends the line).
pub(crate) fn weight_change(w: &str, initial: u32) -> Result<u32, &'static str> {
    let Some((v, rest)) = strtol(w) else {
        return Err("Empty weight string empty or preceded by garbage");
    };
    if rest == "%" {
        if v < 0 {
            return Err("Relative weight must be positive.\n");
        }
        let v = v.min(25600);
        return Ok((i64::from(initial) * v / 100).min(256) as u32);
    }
    if !(0..=256).contains(&v) {
        return Err("Absolute weight can only be between 0 and 256 inclusive.\n");
    }
    if !rest.is_empty() {
        return Err("Trailing garbage in weight string");
    }
    Ok(v as u32)
}

/// The page's `action=` values (HAProxy 2.6's list, including the old
/// `disable|enable|stop|start`).
fn parse_action(v: &str) -> Option<ServerAction> {
    Some(match v {
        "ready" => ServerAction::State(AdminState::Ready),
        "drain" | "stop" => ServerAction::State(AdminState::Drain),
        "maint" | "disable" => ServerAction::State(AdminState::Maint),
        "enable" | "start" => ServerAction::State(AdminState::Ready),
        "dhlth" => ServerAction::Checks(false),
        "ehlth" => ServerAction::Checks(true),
        "hrunn" => ServerAction::Health(Forced::Up),
        "hnolb" => ServerAction::Health(Forced::Stopping),
        "hdown" => ServerAction::Health(Forced::Down),
        "dagent" => ServerAction::Agent(AgentAction::Disable),
        "eagent" => ServerAction::Agent(AgentAction::Enable),
        "arunn" => ServerAction::Agent(AgentAction::Up),
        "adown" => ServerAction::Agent(AgentAction::Down),
        "shutdown" => ServerAction::Shutdown,
        _ => return None,
    })
}

/// The result of a POST, carried by the redirect's `;st=` (HAProxy's
/// `stat_status_codes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StCode {
    Done,
    Part,
    None,
    Errp,
    Excd,
    Deny,
    Ival,
    Unkn,
}

impl StCode {
    const ALL: [StCode; 8] = [
        StCode::Deny,
        StCode::Done,
        StCode::Errp,
        StCode::Excd,
        StCode::None,
        StCode::Part,
        StCode::Unkn,
        StCode::Ival,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StCode::Done => "DONE",
            StCode::Part => "PART",
            StCode::None => "NONE",
            StCode::Errp => "ERRP",
            StCode::Excd => "EXCD",
            StCode::Deny => "DENY",
            StCode::Ival => "IVAL",
            StCode::Unkn => "UNKN",
        }
    }

    /// The code of a page URI: after the first `;st=`, four letters
    /// (HAProxy needs four bytes there; anything else is `UNKN`).
    pub(crate) fn from_suffix(suffix: &str) -> Option<StCode> {
        let at = suffix.find(";st=")?;
        let code = suffix.as_bytes().get(at + 4..at + 8)?;
        Some(
            StCode::ALL
                .into_iter()
                .find(|c| c.as_str().as_bytes() == code)
                .unwrap_or(StCode::Unkn),
        )
    }

    /// HAProxy's message (HTML) and whether it reads as success, warning
    /// or error (the CSS class).
    pub(crate) fn message(self) -> (&'static str, &'static str) {
        match self {
            StCode::Done => ("ok", "Action processed successfully."),
            StCode::None => ("warn", "Nothing has changed."),
            StCode::Part => (
                "warn",
                "Action partially processed.<br>Some server names are probably unknown or ambiguous (duplicated names in the backend).",
            ),
            StCode::Errp => (
                "err",
                "Action not processed because of invalid parameters.<ul><li>The action is maybe unknown.</li><li>Invalid key parameter (empty or too long).</li><li>The backend name is probably unknown or ambiguous (duplicated names).</li><li>Some server names are probably unknown or ambiguous (duplicated names in the backend).</li></ul>",
            ),
            StCode::Excd => (
                "err",
                "<b>Action not processed : the buffer couldn't store all the data.<br>You should retry with less servers at a time.</b>",
            ),
            StCode::Deny => ("err", "<b>Action denied.</b>"),
            StCode::Ival => (
                "err",
                "<b>Invalid requests (unsupported method or chunked encoded request).</b>",
            ),
            StCode::Unkn => ("other", "Unexpected result."),
        }
    }
}

/// HAProxy's `LINESIZE`: a longer `key=value` is an invalid parameter.
const MAX_PARAM: usize = 2048;

/// Applies a posted admin form (`application/x-www-form-urlencoded`): the
/// last `b=` names the backend (name or `#<id>`), the last `action=` the
/// action, every `s=` a server of that backend. DONE when every named
/// server was altered, PART when some were, ERRP when none were (or a
/// parameter is bad), NONE when no server was named.
pub(crate) fn process_post(body: &[u8], snap: &Snapshot) -> StCode {
    let mut backend: Option<&BackendRt> = None;
    let mut action: Option<ServerAction> = None;
    let mut servers: Vec<String> = Vec::new();
    // HAProxy reads the parameters from the end and keeps the first value
    // it meets: the last one of each key wins.
    for param in body.split(|&b| b == b'&').rev() {
        if param.len() >= MAX_PARAM {
            return StCode::Errp;
        }
        let (k, v) = match param.iter().position(|&b| b == b'=') {
            Some(i) => (&param[..i], &param[i + 1..]),
            None => (param, &b""[..]),
        };
        // A bad escape stops the parsing, keeping what was applied so far.
        let (Some(k), Some(v)) = (url_decode(k), url_decode(v)) else {
            break;
        };
        match k.as_str() {
            "b" if backend.is_none() => {
                let found = snap.backends().find(|b| match v.strip_prefix('#') {
                    Some(id) => crate::config::units::atoi(id) == i64::from(b.iid),
                    None => b.name == v,
                });
                match found {
                    Some(b) => backend = Some(b),
                    None => return StCode::Errp,
                }
            }
            "action" if action.is_none() => match parse_action(&v) {
                Some(a) => action = Some(a),
                None => return StCode::Errp,
            },
            "s" => servers.push(v),
            _ => {}
        }
    }
    let (Some(be), Some(action)) = (backend, action) else {
        return StCode::None;
    };
    let mut total = 0usize;
    let mut altered = 0usize;
    for name in &servers {
        total += 1;
        // The page counts a check action on a server without checks as
        // not applied (HAProxy tests CHK_ST_CONFIGURED).
        if let Some(s) = be.servers.iter().find(|s| s.name == *name)
            && (s.state.health.is_checked() || !matches!(action, ServerAction::Checks(_)))
            && apply(be, s, action)
        {
            altered += 1;
        }
    }
    match (total, altered) {
        (0, _) => StCode::None,
        (_, 0) => StCode::Errp,
        (t, a) if t == a => StCode::Done,
        _ => StCode::Part,
    }
}

/// Form decoding: `+` is a space, `%XX` a byte; a bad escape or a result
/// that is not UTF-8 is refused.
fn url_decode(s: &[u8]) -> Option<String> {
    String::from_utf8(crate::sample::conv::url_decode(s, true)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::stats::fixture;

    #[test]
    fn post_results() {
        let rt = fixture::runtime();
        let snap = rt.snapshot();
        let s1 = &snap.backend("web_be").expect("web_be").servers[0];
        assert_eq!(
            process_post(b"s=s1&s=s2&action=drain&b=%23", &snap),
            StCode::Errp
        );
        let be_id = snap.backend("web_be").expect("web_be").iid;
        let form = format!("s=s1&action=drain&b=%23{be_id}");
        assert_eq!(process_post(form.as_bytes(), &snap), StCode::Done);
        assert!(s1.state.is_drain() && !s1.state.is_maint());
        assert_eq!(
            process_post(b"s=s1&s=nope&action=ready&b=web_be", &snap),
            StCode::Part
        );
        assert!(!s1.state.is_drain() && !s1.state.is_maint());
        assert_eq!(
            process_post(b"s=nope&action=ready&b=web_be", &snap),
            StCode::Errp
        );
        assert_eq!(process_post(b"action=ready&b=web_be", &snap), StCode::None);
        assert_eq!(process_post(b"s=s1&action=&b=web_be", &snap), StCode::Errp);
        assert_eq!(
            process_post(b"s=s1&action=bogus&b=web_be", &snap),
            StCode::Errp
        );
        assert_eq!(
            process_post(b"s=s1&action=maint&b=nope", &snap),
            StCode::Errp
        );
        assert_eq!(process_post(b"", &snap), StCode::None);
        // The last action wins; agent actions alter nothing.
        assert_eq!(
            process_post(b"s=s1&action=maint&action=dagent&b=web_be", &snap),
            StCode::Errp
        );
        assert!(!s1.state.is_drain() && !s1.state.is_maint());
    }

    #[test]
    fn codes_and_decoding() {
        assert_eq!(StCode::from_suffix(";st=DONE"), Some(StCode::Done));
        assert_eq!(
            StCode::from_suffix(";up;st=DENY;norefresh"),
            Some(StCode::Deny)
        );
        assert_eq!(StCode::from_suffix(";st=XXXX"), Some(StCode::Unkn));
        assert_eq!(StCode::from_suffix(";st=DO"), None);
        assert_eq!(StCode::from_suffix(";csv"), None);
        assert_eq!(url_decode(b"a+b%2Fc").as_deref(), Some("a b/c"));
        assert_eq!(url_decode(b"%zz"), None);
        assert_eq!(url_decode(b"%4"), None);
    }
}
