//! Agent checks (`agent-check`): every `agent-inter`, a TCP connection to
//! the agent (`agent-addr`, `agent-port`), `agent-send` written, one line
//! read and read as HAProxy 2.6 reads it: words separated by blanks or
//! commas, a health (`up`, `down`, `stopped`, `fail`), an admin state
//! (`ready`, `drain`, `maint`), a weight (`<n>%`) and `maxconn:<n>`, in any
//! order (the last of a kind wins), then an optional `# description`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{down_event, report_up};
use crate::observe::log::server_state::counts;
use crate::observe::stats::admin::{self, ServerAction};
use crate::snapshot::runtime::Runtime;
use crate::state::health::{AgentWord, CheckStatus, Transition};
use crate::state::{AdminState, ServerState};

/// Starts an agent task for every server of the current snapshot that has
/// `agent-check` and none yet; a task ends with its server or its agent.
pub(crate) fn spawn_agents(rt: &Arc<Runtime>) {
    let snap = rt.snapshot();
    for be in snap.backends() {
        for s in &be.servers {
            if s.agent_inter.is_some() && !s.state.agent_task.swap(true, Relaxed) {
                tokio::spawn(agent_loop(rt.clone(), s.state.clone()));
            }
        }
    }
}

/// The agent's interval (moved by `spread-checks`) and timeouts, from the
/// current snapshot (None: the server or its agent is gone).
fn plan(rt: &Runtime, server: &Arc<ServerState>) -> Option<(Duration, Duration, Duration)> {
    rt.with_snapshot(|snap| {
        let be = snap.backend(&server.backend)?;
        let s = be.servers.iter().find(|s| Arc::ptr_eq(&s.state, server))?;
        let inter = s.agent_inter?;
        let connect = be.timeouts.connect.map_or(inter, |t| t.min(inter));
        let read = be.timeouts.check.unwrap_or(inter);
        Some((
            super::spread(inter, snap.global.spread_checks),
            connect,
            read,
        ))
    })
}

async fn agent_loop(rt: Arc<Runtime>, server: Arc<ServerState>) {
    loop {
        let Some((inter, connect, read)) = plan(&rt, &server) else {
            server.agent_task.store(false, Relaxed);
            return;
        };
        let started = Instant::now();
        let reachable =
            server.has_addr() || crate::state::lock(&server.agent_target).addr.is_some();
        if server.health.agent_enabled() && !server.is_retired() && reachable {
            let (status, line, detail) = ask(&server, connect, read).await;
            apply(&rt, &server, status, line, detail, started.elapsed());
        }
        tokio::time::sleep(inter.saturating_sub(started.elapsed())).await;
    }
}

/// One exchange with the agent: the status of the exchange, the line it
/// answered (if a whole one came), and the description of a failure.
async fn ask(
    server: &ServerState,
    connect: Duration,
    read: Duration,
) -> (CheckStatus, Option<String>, String) {
    let target = crate::state::lock(&server.agent_target).clone();
    let ip = target.addr.unwrap_or_else(|| server.addr().ip());
    let addr = SocketAddr::new(ip, u16::try_from(target.port).unwrap_or(0));
    let mut s = match tokio::time::timeout(connect, tokio::net::TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return (CheckStatus::L4Con, None, crate::sys::strerror(&e)),
        Err(_) => return (CheckStatus::L4Tout, None, String::new()),
    };
    if !target.send.is_empty() && s.write_all(target.send.as_bytes()).await.is_err() {
        return (CheckStatus::L4Con, None, "Write error".to_string());
    }
    let deadline = Instant::now() + read;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = buf.iter().position(|&b| b == b'\n' || b == b'\r') {
            buf.truncate(end);
            return (
                CheckStatus::Checked,
                Some(String::from_utf8_lossy(&buf).into_owned()),
                String::new(),
            );
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                return (
                    CheckStatus::Checked,
                    None,
                    "Ignoring incomplete line from agent".to_string(),
                );
            }
            Ok(Ok(n)) if buf.len() < 16384 => buf.extend_from_slice(&chunk[..n]),
            Ok(Ok(_)) => {
                return (
                    CheckStatus::Checked,
                    None,
                    "Ignoring incomplete line from agent".to_string(),
                );
            }
            Err(_) => return (CheckStatus::L7Tout, None, String::new()),
        }
    }
}

/// What one agent line says.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) health: Option<String>,
    pub(crate) admin: Option<String>,
    pub(crate) weight: Option<String>,
    pub(crate) maxconn: Option<String>,
    /// The first word that means nothing.
    pub(crate) error: Option<String>,
    /// What follows `#`.
    pub(crate) desc: String,
}

/// Reads an agent's line as HAProxy does.
pub(crate) fn parse(line: &str) -> Reply {
    let mut r = Reply::default();
    let mut rest = line;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            break;
        }
        if let Some(d) = rest.strip_prefix('#') {
            r.desc = d.trim_start_matches([' ', '\t']).to_string();
            break;
        }
        let end = rest.find([' ', '\t', ',']).unwrap_or(rest.len());
        let word = &rest[..end];
        rest = &rest[end..];
        let w = word.to_ascii_lowercase();
        match w.as_str() {
            "up" | "down" | "stopped" | "fail" => r.health = Some(word.to_string()),
            "ready" | "drain" | "maint" => r.admin = Some(w),
            _ if word.starts_with(|c: char| c.is_ascii_digit()) && word.contains('%') => {
                r.weight = Some(word.to_string());
            }
            _ if w.starts_with("maxconn:") => r.maxconn = Some(word[8..].to_string()),
            _ => {
                if r.error.is_none() {
                    r.error = Some(word.to_string());
                }
            }
        }
    }
    r
}

/// Applies an agent's answer: the admin state first, then the weight and
/// maxconn, then the health, as HAProxy does.
fn apply(
    rt: &Runtime,
    server: &Arc<ServerState>,
    status: CheckStatus,
    line: Option<String>,
    detail: String,
    took: Duration,
) {
    let ms = took.as_millis() as u64;
    let Some(line) = line else {
        // No whole line (or no connection): the health stays as it is.
        let keep = if status == CheckStatus::Checked {
            server.health.agent_info().map_or(status, |a| a.status)
        } else {
            status
        };
        server
            .health
            .record_agent(keep, None, ms, detail, server.is_maint());
        return;
    };
    let r = parse(&line);
    rt.with_snapshot(|snap| {
        let Some(be) = snap.backend(&server.backend) else {
            return;
        };
        let Some(s) = be.servers.iter().find(|s| Arc::ptr_eq(&s.state, server)) else {
            return;
        };
        if let Some(a) = &r.admin {
            let to = match a.as_str() {
                "drain" => AdminState::Drain,
                "maint" => AdminState::Maint,
                _ => AdminState::Ready,
            };
            admin::apply(be, s, ServerAction::State(to));
        }
        let mut warning = None;
        if let Some(w) = &r.weight {
            match crate::observe::stats::admin::weight_change(w, s.weight) {
                Ok(n) => server.weight.store(n, Relaxed),
                Err(e) => warning = Some(e.trim_end().to_string()),
            }
        }
        if let Some(m) = &r.maxconn {
            match m.parse::<i64>() {
                Ok(n) => server.maxconn.store(n as i32 as u32, Relaxed),
                Err(_) if warning.is_none() => {
                    warning = Some("maxconn string empty or preceded by garbage".to_string())
                }
                Err(_) => {}
            }
        }
        let (status, word, desc): (CheckStatus, AgentWord, String) = match &r.health {
            Some(h) => {
                let up = h.eq_ignore_ascii_case("up");
                let mut msg = r.desc.clone();
                // HAProxy: with `up` or without description, the first
                // word it did not know (or a warning) is told instead.
                if (msg.is_empty() || up)
                    && let Some(e) = r
                        .error
                        .clone()
                        .or(warning.clone())
                        .filter(|m| !m.is_empty())
                {
                    msg = e;
                }
                let desc = if msg.is_empty() {
                    format!("via agent : {h}")
                } else {
                    format!("via agent : {h} ({msg})")
                };
                let st = if up {
                    CheckStatus::L7Ok
                } else {
                    CheckStatus::L7Sts
                };
                (st, Some(up), desc)
            }
            None => {
                let desc = match (&r.error, &warning) {
                    (Some(e), _) => format!("agent reports an error : {e}"),
                    (None, Some(w)) => format!("agent warns : {w}"),
                    (None, None) => String::new(),
                };
                (CheckStatus::Checked, None, desc)
            }
        };
        let t = server
            .health
            .record_agent(status, word, ms, desc.clone(), server.is_maint());
        match t {
            Some(Transition::WentDown) => {
                let (act, bck) = counts(be);
                if act + bck == 0 {
                    be.state.went_down.fetch_add(1, Relaxed);
                }
                down_event(
                    server,
                    (act, bck, s.backup),
                    (status, Some(0), &desc, Some(ms)),
                    false,
                    be.email_alert.as_ref(),
                );
            }
            Some(Transition::WentUp) => {
                report_up(rt, server, (status, Some(0), &desc), ms, false);
            }
            _ => {}
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_lines_read_as_haproxy_reads_them() {
        let r = parse("up 50%, drain # busy day");
        assert_eq!(r.health.as_deref(), Some("up"));
        assert_eq!(r.admin.as_deref(), Some("drain"));
        assert_eq!(r.weight.as_deref(), Some("50%"));
        assert_eq!(r.desc, "busy day");
        let r = parse("DOWN\tmaxconn:10 ready foo bar");
        assert_eq!(r.health.as_deref(), Some("DOWN"));
        assert_eq!(r.admin.as_deref(), Some("ready"));
        assert_eq!(r.maxconn.as_deref(), Some("10"));
        assert_eq!(r.error.as_deref(), Some("foo"));
        // The last of a kind wins.
        let r = parse("down up 10% 20%");
        assert_eq!(
            (r.health.as_deref(), r.weight.as_deref()),
            (Some("up"), Some("20%"))
        );
        assert_eq!(parse(""), Reply::default());
    }
}
