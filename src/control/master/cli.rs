//! The master CLI (`-S <bind>`): `show proc`, `reload`, and commands
//! routed to a worker with HAProxy's prefixes (`@<n>`, `@!<pid>`, `@`,
//! `@master`), alone to route the rest of the session or before a command
//! to route that one. A routed command goes to the worker's private CLI
//! socket at the session's level, and its answer comes back as it is.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{MasterListener, Request, Shared};
use crate::config::model::CliLevel;

const VALID: &str = "The following commands are valid at this level:\n";
const UNKNOWN: &str = "Unknown command, but maybe one of the following ones is a better match:\n";
const DENIED: &str = "Permission denied\n";
/// A line longer than this closes the session (as the stats socket does).
const MAX_LINE: usize = 64 * 1024;

/// The master's commands, as `help` lists them (HAProxy 2.6's order and
/// words). HAProxy's master lists them all whatever the session's level.
const COMMANDS: &[(&str, &str)] = &[
    ("@!<pid>", "send a command to the <pid> process"),
    (
        "@<relative pid>",
        "send a command to the <relative pid> process",
    ),
    ("@master", "send a command to the master process"),
    (
        "operator",
        "lower the level of the current CLI session to operator",
    ),
    ("reload", "reload haproxy"),
    (
        "show cli level",
        "display the level of the current CLI session",
    ),
    ("show cli sockets", "dump list of cli sockets"),
    ("show proc", "show processes status"),
    ("show version", "show version of the current process"),
    ("user", "lower the level of the current CLI session to user"),
    ("help [<command>]", "list matching or all commands"),
    ("prompt", "toggle interactive mode with prompt"),
    ("quit", "disconnect"),
];

fn help_lines(only: Option<&str>) -> String {
    let mut out = String::new();
    for (usage, desc) in COMMANDS {
        if only.is_some_and(|w| !usage.starts_with(w)) {
            continue;
        }
        out.push_str(&format!("  {usage:<39} : {desc}\n"));
    }
    out
}

/// Serves one master CLI socket.
pub(super) fn serve(l: MasterListener, level: CliLevel, shared: Arc<Shared>) {
    tokio::spawn(async move {
        match l {
            MasterListener::Unix(l) => {
                let Ok(l) = l
                    .set_nonblocking(true)
                    .and_then(|_| tokio::net::UnixListener::from_std(l))
                else {
                    return;
                };
                while let Ok((s, _)) = l.accept().await {
                    tokio::spawn(session(s, level, shared.clone()));
                }
            }
            MasterListener::Tcp(l) => {
                let Ok(l) = l
                    .set_nonblocking(true)
                    .and_then(|_| tokio::net::TcpListener::from_std(l))
                else {
                    return;
                };
                while let Ok((s, _)) = l.accept().await {
                    tokio::spawn(session(s, level, shared.clone()));
                }
            }
        }
    });
}

/// Where a command goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Master,
    /// `@<n>`: the n-th current worker (sluice has one: `@1`).
    Relative(u32),
    /// `@!<pid>`.
    Pid(u32),
}

fn parse_target(word: &str) -> Option<Target> {
    let rest = word.strip_prefix('@')?;
    if rest.is_empty() || rest == "master" {
        return Some(Target::Master);
    }
    if let Some(pid) = rest.strip_prefix('!') {
        return pid.parse().ok().map(Target::Pid);
    }
    rest.parse().ok().map(Target::Relative)
}

/// One session's state.
struct Session {
    level: CliLevel,
    prompt: bool,
    target: Target,
}

/// What a command asks of the session after its output.
enum After {
    Continue,
    Quit,
    /// `reload`: ask the master, then close (as HAProxy, whose master
    /// starts again).
    Reload,
}

async fn session<S>(mut stream: S, level: CliLevel, shared: Arc<Shared>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut st = Session {
        level,
        prompt: false,
        target: Target::Master,
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    let idle = std::time::Duration::from_secs(10);
    loop {
        let n = match tokio::time::timeout(idle, stream.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => n,
            _ => break,
        };
        buf.extend_from_slice(&chunk[..n]);
        while let Some(pos) = buf.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = buf.drain(..=pos).collect();
            let line = String::from_utf8_lossy(&raw[..raw.len() - 1]);
            let line = line.trim_end_matches('\r').to_string();
            let mut out = String::new();
            let mut after = After::Continue;
            for words in crate::control::cli::split_line(&line) {
                after = command(&mut st, &words, &shared, &mut out).await;
                if !matches!(after, After::Continue) {
                    break;
                }
            }
            if matches!(after, After::Continue) && st.prompt {
                out.push_str(&prompt(&st, &shared));
            }
            if stream.write_all(out.as_bytes()).await.is_err() {
                return;
            }
            match after {
                After::Continue => {}
                After::Quit => return,
                After::Reload => {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    if shared.requests.send(Request::Reload(tx)).await.is_ok() {
                        let _ = rx.await;
                    }
                    let _ = stream.shutdown().await;
                    return;
                }
            }
        }
        if buf.len() > MAX_LINE {
            break;
        }
        if !st.prompt && buf.is_empty() {
            break;
        }
    }
    let _ = stream.shutdown().await;
}

fn prompt(st: &Session, shared: &Shared) -> String {
    match st.target {
        Target::Master if shared.procs().last_failed => "master[ReloadFailed]> ".to_string(),
        Target::Master => "master> ".to_string(),
        t => match resolve(t, shared) {
            Some(w) => format!("{}> ", w.pid),
            None => "master> ".to_string(),
        },
    }
}

/// The worker a target names, if it runs.
fn resolve(t: Target, shared: &Shared) -> Option<super::WorkerInfo> {
    let procs = shared.procs();
    let w = procs.worker.as_ref()?;
    match t {
        Target::Relative(1) => Some(w.clone()),
        Target::Pid(p) if p == w.pid => Some(w.clone()),
        _ => None,
    }
}

/// Runs one `;`-separated command, appending its answer to `out`.
async fn command(st: &mut Session, words: &[String], shared: &Shared, out: &mut String) -> After {
    let mut words = words;
    let mut target = st.target;
    if let Some(first) = words.first().filter(|w| w.starts_with('@')) {
        let me = std::process::id();
        let t = match parse_target(first) {
            Some(Target::Pid(p)) if p == me => Some(Target::Master),
            Some(t) if t == Target::Master || resolve(t, shared).is_some() => Some(t),
            _ => None,
        };
        // HAProxy's master then closes the session, the rest of the line
        // unread.
        let Some(t) = t else {
            out.push_str(&format!(
                "Can't find the target PID matching the prefix '{first}'\n"
            ));
            return After::Quit;
        };
        words = &words[1..];
        if words.is_empty() {
            // A prefix alone routes the rest of the session.
            st.target = t;
            return After::Continue;
        }
        target = t;
    }
    if target != Target::Master {
        return match resolve(target, shared) {
            Some(w) => {
                forward(&w, st.level, words, out).await;
                After::Continue
            }
            None => {
                out.push_str("Can't find the target PID matching the prefix '@'\n");
                After::Quit
            }
        };
    }
    let text: Vec<&str> = words.iter().map(String::as_str).collect();
    match text.as_slice() {
        [] => return After::Continue,
        ["help", rest @ ..] => {
            out.push_str(VALID);
            out.push_str(&help_lines(rest.first().copied()));
        }
        ["prompt", ..] => {
            st.prompt = !st.prompt;
            return After::Continue;
        }
        // HAProxy's master prompts once more before it closes.
        ["quit", ..] => {
            if st.prompt {
                out.push_str(&prompt(st, shared));
            }
            return After::Quit;
        }
        ["show", "proc", ..] => out.push_str(&show_proc(shared)),
        ["show", "version", ..] => {
            out.push_str(crate::control::startup::VERSION);
            out.push('\n');
        }
        ["show", "cli", "level", ..] => {
            out.push_str(match st.level {
                CliLevel::Admin => "admin\n",
                CliLevel::Operator => "operator\n",
                CliLevel::User => "user\n",
            });
        }
        // HAProxy's master lists no socket of its own here.
        ["show", "cli", "sockets", ..] => {}
        ["operator", ..] => {
            st.level = st.level.min(CliLevel::Operator);
            return After::Continue;
        }
        ["user", ..] => {
            st.level = CliLevel::User;
            return After::Continue;
        }
        ["reload", ..] if st.level < CliLevel::Operator => out.push_str(DENIED),
        ["reload", ..] => return After::Reload,
        _ => {
            out.push_str(UNKNOWN);
            out.push_str(&help_lines(None));
        }
    }
    out.push('\n');
    After::Continue
}

/// Sends a command to a worker's CLI at the session's level and appends
/// its answer (with its own end-of-answer line).
async fn forward(w: &super::WorkerInfo, level: CliLevel, words: &[String], out: &mut String) {
    let escaped: Vec<String> = words.iter().map(|w| escape(w)).collect();
    let lower = match level {
        CliLevel::Admin => "",
        CliLevel::Operator => "operator;",
        CliLevel::User => "user;",
    };
    match super::worker_command(&w.cli, &format!("{lower}{}", escaped.join(" "))).await {
        // The worker's CLI ends the level command's empty answer with a
        // line of its own; HAProxy's master passes only the command's.
        Ok(answer) if !lower.is_empty() => {
            out.push_str(answer.strip_prefix('\n').unwrap_or(&answer))
        }
        Ok(answer) => out.push_str(&answer),
        Err(e) => out.push_str(&format!("cannot reach worker {}: {e}\n\n", w.pid)),
    }
}

/// A word as the CLI reads it back: blanks, `;` and `\` escaped.
fn escape(w: &str) -> String {
    let mut s = String::with_capacity(w.len());
    for c in w.chars() {
        if matches!(c, ' ' | '\t' | ';' | '\\') {
            s.push('\\');
        }
        s.push(c);
    }
    s
}

/// `d`, `hh`, `mm`, `ss` of an uptime, as `show proc` prints it.
fn uptime(since: u64) -> String {
    let s = super::unix_now().saturating_sub(since);
    format!(
        "{}d{:02}h{:02}m{:02}s",
        s / 86400,
        (s / 3600) % 24,
        (s / 60) % 60,
        s % 60
    )
}

/// HAProxy's `show proc` table. The current worker reloads in place, so
/// it has survived no reload as an old worker (0); old workers are those
/// a new binary replaced, still finishing their connections. sluice has no
/// programs to list.
fn show_proc(shared: &Shared) -> String {
    let procs = shared.procs();
    let version = crate::control::startup::VERSION;
    let mut out = format!(
        "{:<15} {:<15} {:<15} {:<15} {:<15}\n",
        "#<PID>", "<type>", "<reloads>", "<uptime>", "<version>"
    );
    out.push_str(&format!(
        "{:<15} {:<15} {:<15} {:<15} {}\n",
        std::process::id(),
        "master",
        format!("{} [failed: {}]", procs.reloads, procs.failed),
        uptime(procs.started),
        version
    ));
    out.push_str("# workers\n");
    if let Some(w) = &procs.worker {
        out.push_str(&format!(
            "{:<15} {:<15} {:<15} {:<15} {}\n",
            w.pid,
            "worker",
            0,
            uptime(w.started),
            version
        ));
    }
    if !procs.old.is_empty() {
        out.push_str("# old workers\n");
        for (w, n) in &procs.old {
            out.push_str(&format!(
                "{:<15} {:<15} {:<15} {:<15} {}\n",
                w.pid,
                "worker",
                n,
                uptime(w.started),
                version
            ));
        }
    }
    out.push_str("# programs\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(parse_target("@"), Some(Target::Master));
        assert_eq!(parse_target("@master"), Some(Target::Master));
        assert_eq!(parse_target("@1"), Some(Target::Relative(1)));
        assert_eq!(parse_target("@!42"), Some(Target::Pid(42)));
        assert_eq!(parse_target("@x"), None);
        assert_eq!(parse_target("@!"), None);
    }

    #[test]
    fn help_is_haproxy_layout() {
        let h = help_lines(None);
        assert!(h.starts_with(
            "  @!<pid>                                 : send a command to the <pid> process\n"
        ));
        assert!(h.contains("\n  reload                                  : reload haproxy\n"));
        assert_eq!(help_lines(Some("show")).lines().count(), 4);
    }

    #[test]
    fn words_escaped_back() {
        assert_eq!(escape("a b;c\\"), "a\\ b\\;c\\\\");
    }
}
