//! The stats socket ("CLI", reference §1.2): HAProxy's line protocol over a
//! UNIX socket. [`execute`] is the pure command dispatcher; the socket code
//! below it only frames lines and replies.

use std::fmt::Write as _;
use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Semaphore;

use crate::backend::Counters;
use crate::config::model::{CliLevel, StatsSocket};
use crate::routing::{BackendRt, ServerRt, Snapshot};
use crate::runtime::Runtime;

use super::csv::{self, CsvOptions, Filter};
use super::info;

/// `stats timeout` default.
pub const DEFAULT_STATS_TIMEOUT: Duration = Duration::from_secs(10);
/// A request line must fit HAProxy's `tune.bufsize`.
pub const MAX_REQUEST: usize = 16384;
/// `stats maxconn` default: concurrent CLI connections per socket.
pub const MAX_CLI_CONNS: usize = 10;

const UNKNOWN: &str = "Unknown command, but maybe one of the following ones is a better match:\n";
const VALID: &str = "The following commands are valid at this level:\n";
const DENIED: &str = "Permission denied\n";

// ---------------------------------------------------------------------------
// Dispatcher

/// What the session must do after printing a command's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    None,
    /// `prompt`: toggle interactive mode.
    TogglePrompt,
    /// `quit`: close without writing anything more.
    Quit,
}

/// One command's output: complete lines, each ending in `\n`, never an empty
/// line (the empty line is the end-of-response marker the framing adds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub text: String,
    pub effect: Effect,
}

/// The outputs of one input line (one per `;`-separated command) and the
/// session level after it (`user` / `operator` lower it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub outputs: Vec<Output>,
    pub level: CliLevel,
}

impl Reply {
    /// The bytes to send: each output followed by `\n` (the empty line), or
    /// by `\n> ` in prompt mode. Stops at `quit`; the flag says to close.
    pub fn render(&self, prompt: &mut bool) -> (String, bool) {
        let mut out = String::new();
        for o in &self.outputs {
            match o.effect {
                Effect::Quit => return (out, true),
                Effect::TogglePrompt => *prompt = !*prompt,
                Effect::None => {}
            }
            out.push_str(&o.text);
            out.push_str(if *prompt { "\n> " } else { "\n" });
        }
        (out, false)
    }
}

type Handler = fn(&mut Ctx<'_>, &[String]) -> Output;

struct Command {
    words: &'static [&'static str],
    usage: &'static str,
    desc: &'static str,
    level: CliLevel,
    run: Handler,
}

/// Listed sorted as HAProxy's `help` does; `help`, `prompt`, `quit` last.
static COMMANDS: &[Command] = &[
    Command {
        words: &["clear", "counters"],
        usage: "clear counters [all]",
        desc: "clear max statistics counters (or all counters)",
        level: CliLevel::Operator,
        run: cmd_clear_counters,
    },
    Command {
        words: &["get", "weight"],
        usage: "get weight <bk>/<srv>",
        desc: "report a server's current weight",
        level: CliLevel::User,
        run: cmd_get_weight,
    },
    Command {
        words: &["operator"],
        usage: "operator",
        desc: "lower the level of the current CLI session to operator",
        level: CliLevel::Operator,
        run: cmd_operator,
    },
    Command {
        words: &["show", "backend"],
        usage: "show backend",
        desc: "list backends in the current running config",
        level: CliLevel::User,
        run: cmd_show_backend,
    },
    Command {
        words: &["show", "cli", "level"],
        usage: "show cli level",
        desc: "display the level of the current CLI session",
        level: CliLevel::User,
        run: cmd_show_cli_level,
    },
    Command {
        words: &["show", "info"],
        usage: "show info [desc|json|typed|float]*",
        desc: "report information about the running process",
        level: CliLevel::User,
        run: cmd_show_info,
    },
    Command {
        words: &["show", "stat"],
        usage: "show stat [desc|json|no-maint|typed|up]*",
        desc: "report counters for each proxy and server",
        level: CliLevel::User,
        run: cmd_show_stat,
    },
    Command {
        words: &["show", "version"],
        usage: "show version",
        desc: "show version of the current process",
        level: CliLevel::User,
        run: cmd_show_version,
    },
    Command {
        words: &["user"],
        usage: "user",
        desc: "lower the level of the current CLI session to user",
        level: CliLevel::User,
        run: cmd_user,
    },
    Command {
        words: &["help"],
        usage: "help [<command>]",
        desc: "list matching or all commands",
        level: CliLevel::User,
        run: cmd_help,
    },
    Command {
        words: &["prompt"],
        usage: "prompt",
        desc: "toggle interactive mode with prompt",
        level: CliLevel::User,
        run: cmd_prompt,
    },
    Command {
        words: &["quit"],
        usage: "quit",
        desc: "disconnect",
        level: CliLevel::User,
        run: cmd_quit,
    },
];

struct Ctx<'a> {
    level: CliLevel,
    rt: &'a Runtime,
    snap: Arc<Snapshot>,
}

fn text(s: impl Into<String>) -> Output {
    Output {
        text: s.into(),
        effect: Effect::None,
    }
}

/// Runs one input line (without its `\n`) at `level`. Never panics, whatever
/// the input: unknown words get the suggestion text, bad arguments an error
/// line.
pub fn execute(line: &str, level: CliLevel, rt: &Runtime) -> Reply {
    let mut ctx = Ctx {
        level,
        rt,
        snap: rt.snapshot(),
    };
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut outputs = Vec::new();
    let commands = split_line(line);
    if commands.is_empty() {
        // An empty line still gets its (empty) response, like HAProxy.
        outputs.push(text(""));
    }
    for words in commands {
        let out = dispatch(&mut ctx, &words);
        let quit = out.effect == Effect::Quit;
        outputs.push(sanitize(out));
        if quit {
            break;
        }
    }
    Reply {
        outputs,
        level: ctx.level,
    }
}

/// Drops empty lines: they would end the response early for the client.
fn sanitize(mut o: Output) -> Output {
    if o.text.contains("\n\n") || o.text.starts_with('\n') {
        o.text = o
            .text
            .split('\n')
            .filter(|l| !l.is_empty())
            .map(|l| format!("{l}\n"))
            .collect();
    }
    o
}

/// Splits a line into commands (on unescaped `;`) and words (on unescaped
/// blanks); `\` makes the next character literal. There is no quoting.
pub fn split_line(line: &str) -> Vec<Vec<String>> {
    let mut cmds = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    word.push(n);
                    in_word = true;
                }
            }
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            ';' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                if !words.is_empty() {
                    cmds.push(std::mem::take(&mut words));
                }
            }
            _ => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if !words.is_empty() {
        cmds.push(words);
    }
    cmds
}

fn matches(cmd: &Command, words: &[String]) -> bool {
    words.len() >= cmd.words.len() && cmd.words.iter().zip(words).all(|(a, b)| *a == b)
}

fn dispatch(ctx: &mut Ctx<'_>, words: &[String]) -> Output {
    // Longest keyword first, so `show cli level` is not taken for a shorter
    // command sharing its prefix.
    let found = COMMANDS
        .iter()
        .filter(|c| matches(c, words))
        .max_by_key(|c| c.words.len());
    match found {
        Some(c) if c.level > ctx.level => text(DENIED),
        Some(c) => (c.run)(ctx, &words[c.words.len()..]),
        None => text(unknown_command(words, ctx.level)),
    }
}

fn help_line(out: &mut String, c: &Command) {
    let _ = writeln!(out, "  {:<40}: {}", c.usage, c.desc);
}

fn visible(level: CliLevel) -> impl Iterator<Item = &'static Command> {
    COMMANDS.iter().filter(move |c| c.level <= level)
}

/// HAProxy's reply to an unknown command: the help lines of the closest
/// commands (all commands if none is close).
fn unknown_command(words: &[String], level: CliLevel) -> String {
    let typed = words.join(" ");
    let mut scored: Vec<(usize, &Command)> = visible(level)
        .filter_map(|c| {
            let n = c.words.len().min(words.len());
            let head = words[..n].join(" ");
            let name = c.words.join(" ");
            let d = levenshtein(&head, &name);
            let close =
                d <= (name.len() / 3).max(2) || words.first().is_some_and(|w| w == c.words[0]);
            close.then_some((d, c))
        })
        .collect();
    scored.sort_by_key(|(d, _)| *d);
    let mut out = String::from(UNKNOWN);
    if scored.is_empty() {
        visible(level).for_each(|c| help_line(&mut out, c));
    } else {
        scored
            .iter()
            .take(5)
            .for_each(|(_, c)| help_line(&mut out, c));
    }
    tracing::debug!(command = %typed, "unknown CLI command");
    out
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn cmd_help(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let mut out = String::new();
    let listed: Vec<&Command> = visible(ctx.level)
        .filter(|c| {
            args.iter()
                .zip(c.words)
                .all(|(a, w)| w.starts_with(a.as_str()))
        })
        .collect();
    if listed.is_empty() {
        return text(unknown_command(args, ctx.level));
    }
    out.push_str(VALID);
    listed.iter().for_each(|c| help_line(&mut out, c));
    text(out)
}

fn cmd_prompt(_: &mut Ctx<'_>, _: &[String]) -> Output {
    Output {
        text: String::new(),
        effect: Effect::TogglePrompt,
    }
}

fn cmd_quit(_: &mut Ctx<'_>, _: &[String]) -> Output {
    Output {
        text: String::new(),
        effect: Effect::Quit,
    }
}

fn cmd_operator(ctx: &mut Ctx<'_>, _: &[String]) -> Output {
    ctx.level = ctx.level.min(CliLevel::Operator);
    text("")
}

fn cmd_user(ctx: &mut Ctx<'_>, _: &[String]) -> Output {
    ctx.level = CliLevel::User;
    text("")
}

fn cmd_show_cli_level(ctx: &mut Ctx<'_>, _: &[String]) -> Output {
    text(format!("{}\n", ctx.level.as_str()))
}

fn cmd_show_version(_: &mut Ctx<'_>, _: &[String]) -> Output {
    text(format!("{}\n", info::VERSION))
}

fn cmd_show_backend(ctx: &mut Ctx<'_>, _: &[String]) -> Output {
    let mut out = String::from("# name\n");
    for b in ctx.snap.backends() {
        let _ = writeln!(out, "{}", b.name);
    }
    text(out)
}

fn unsupported_format(what: &str, fmt: &str) -> Output {
    text(format!(
        "'{what} {fmt}' is not supported by sluice yet; use '{what}' (text output).\n"
    ))
}

fn cmd_show_info(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    // `desc` and `float` only change the typed/json forms.
    if let Some(f) = args.iter().find(|a| *a == "typed" || *a == "json") {
        return unsupported_format("show info", f);
    }
    text(info::render_info(ctx.rt, &ctx.snap))
}

/// C `atoi`: leading sign and digits, 0 when there are none.
fn atoi(s: &str) -> i64 {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let n = digits
        .chars()
        .take_while(char::is_ascii_digit)
        .fold(0i64, |acc, c| {
            acc.saturating_mul(10)
                .saturating_add(i64::from(c as u8 - b'0'))
        });
    if neg { -n } else { n }
}

const STAT_KEYWORDS: &[&str] = &["typed", "json", "desc", "up", "no-maint"];

fn cmd_show_stat(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let mut args = args;
    if args.first().is_some_and(|a| a == "domain") {
        match args.get(1).map(String::as_str) {
            Some("proxy") => args = &args[2..],
            Some("dns") => return text("'show stat domain dns' is not supported by sluice.\n"),
            _ => return text("Invalid statistics domain.\n"),
        }
    }
    let mut opts = CsvOptions {
        show_legends: ctx.level >= CliLevel::Operator,
        ..CsvOptions::default()
    };
    // `<iid|proxy> <type> <sid>` come as a triplet, before any keyword.
    if args.len() >= 3 && !STAT_KEYWORDS.contains(&args[0].as_str()) {
        let iid = match ctx.snap.proxies.iter().find(|p| p.name == args[0]) {
            Some(p) => i64::from(p.iid),
            None => atoi(&args[0]),
        };
        if iid == 0 {
            return text("No such proxy.\n");
        }
        opts.filter = Filter {
            iid,
            types: atoi(&args[1]),
            sid: atoi(&args[2]),
        };
        args = &args[3..];
    }
    for a in args {
        match a.as_str() {
            "typed" | "json" => return unsupported_format("show stat", a),
            "up" => opts.only_up = true,
            // No server can be in maintenance yet, so there is nothing to
            // hide; `desc` only changes the typed/json forms.
            _ => {}
        }
    }
    text(csv::render_csv(ctx.rt, &ctx.snap, opts))
}

/// `<backend>/<server>`, each a name or `#<id>`.
fn find_server<'a>(
    snap: &'a Snapshot,
    arg: Option<&String>,
) -> Result<(&'a BackendRt, &'a ServerRt), &'static str> {
    let Some((bk, sv)) = arg.and_then(|a| a.split_once('/')) else {
        return Err("Require 'backend/server'.\n");
    };
    let be = snap
        .backends()
        .find(|b| match bk.strip_prefix('#') {
            Some(id) => atoi(id) == i64::from(b.iid),
            None => b.name == bk,
        })
        .ok_or("No such backend.\n")?;
    let s = be
        .servers
        .iter()
        .find(|s| match sv.strip_prefix('#') {
            Some(id) => atoi(id) == i64::from(s.sid),
            None => s.name == sv,
        })
        .ok_or("No such server.\n")?;
    Ok((be, s))
}

fn cmd_get_weight(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    match find_server(&ctx.snap, args.first()) {
        Ok((_, s)) => text(format!(
            "{} (initial {})\n",
            s.state.weight.load(Relaxed),
            s.weight
        )),
        Err(e) => text(e),
    }
}

fn cmd_clear_counters(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let all = args.first().is_some_and(|a| a == "all");
    if all && ctx.level < CliLevel::Admin {
        return text(DENIED);
    }
    let clear = |c: &Counters| {
        if all {
            reset_all(c);
        }
        c.clear_max();
    };
    for p in &ctx.snap.proxies {
        if let Some(fe) = &p.frontend {
            clear(&fe.state.counters);
        }
        if let Some(be) = &p.backend {
            clear(&be.state.counters);
            for s in &be.servers {
                clear(&s.state.counters);
                if all {
                    s.state.health.chkfail.store(0, Relaxed);
                    s.state.health.chkdown.store(0, Relaxed);
                }
            }
        }
    }
    let p = &ctx.rt.process;
    p.conns.clear_max();
    p.conn_rate.clear_max();
    p.sess_rate.clear_max();
    text("")
}

/// `clear counters all`: every cumulative counter back to 0. Gauges keep
/// their current value (those sessions still exist).
fn reset_all(c: &Counters) {
    let cum: [&AtomicU64; 19] = [
        &c.stot,
        &c.bin,
        &c.bout,
        &c.dreq,
        &c.dresp,
        &c.ereq,
        &c.econ,
        &c.eresp,
        &c.wretr,
        &c.wredis,
        &c.req_tot,
        &c.cli_abrt,
        &c.srv_abrt,
        &c.lbtot,
        &c.conn_tot,
        &c.intercepted,
        &c.connect,
        &c.reuse,
        &c.last_sess,
    ];
    for a in cum.into_iter().chain(c.hrsp.iter()) {
        a.store(0, Relaxed);
    }
}

// ---------------------------------------------------------------------------
// UNIX socket

/// Binds `sock` (a UNIX socket) like HAProxy: at `<path>.<pid>.tmp`, `mode`
/// applied, then renamed over `<path>`, so a stale socket from an earlier
/// run is replaced atomically and clients never see a missing path. Call it
/// before serving to report bind errors at start-up.
pub fn bind_unix(sock: &StatsSocket) -> io::Result<std::os::unix::net::UnixListener> {
    let path = sock.path.to_string_lossy();
    if sock.tcp.is_some() || path.starts_with("ipv4@") || path.starts_with("ipv6@") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "TCP stats sockets are served with serve_tcp",
        ));
    }
    // `unix@/path` is HAProxy's explicit spelling of a UNIX path.
    let path = match path.strip_prefix("unix@") {
        Some(p) => PathBuf::from(p),
        None => sock.path.clone(),
    };
    bind_unix_at(&path, sock.mode)
}

/// [`bind_unix`] on an explicit path and file mode.
pub fn bind_unix_at(
    path: &Path,
    mode: Option<u32>,
) -> io::Result<std::os::unix::net::UnixListener> {
    // Only ever replace a socket: a regular file at that path is someone
    // else's data (most likely a typo in the config).
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && !meta.file_type().is_socket()
    {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a socket", path.display()),
        ));
    }
    let tmp = tmp_path(path);
    let _ = std::fs::remove_file(&tmp);
    let listener = std::os::unix::net::UnixListener::bind(&tmp)?;
    let finish = || -> io::Result<()> {
        if let Some(mode) = mode {
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
        }
        std::fs::rename(&tmp, path)
    };
    if let Err(e) = finish() {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    listener.set_nonblocking(true)?;
    Ok(listener)
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{}.tmp", std::process::id()));
    PathBuf::from(s)
}

/// Binds `sock` and serves it until the task is dropped.
pub async fn serve_unix(sock: &StatsSocket, rt: Arc<Runtime>) -> io::Result<()> {
    let listener = bind_unix(sock)?;
    serve_unix_listener(listener, sock.level, rt).await
}

/// Serves a socket from [`bind_unix`] at `sock.level` (owned arguments, so
/// the future can be spawned directly).
pub async fn serve_listener(
    listener: std::os::unix::net::UnixListener,
    sock: StatsSocket,
    rt: Arc<Runtime>,
) -> io::Result<()> {
    serve_unix_listener(listener, sock.level, rt).await
}

/// Accept loop over a bound UNIX socket: one task per connection, at most
/// [`MAX_CLI_CONNS`] at once (further clients wait in the backlog, as with
/// HAProxy's `stats maxconn`).
pub async fn serve_unix_listener(
    listener: std::os::unix::net::UnixListener,
    level: CliLevel,
    rt: Arc<Runtime>,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::UnixListener::from_std(listener)?;
    let slots = Arc::new(Semaphore::new(MAX_CLI_CONNS));
    loop {
        let permit = slots.clone().acquire_owned().await;
        match listener.accept().await {
            Ok((stream, _)) => spawn_conn(stream, level, rt.clone(), permit.ok()),
            Err(e) => accept_failed(e).await,
        }
    }
}

/// The same over TCP (`stats socket ipv4@host:port`).
pub async fn serve_tcp(
    listener: std::net::TcpListener,
    level: CliLevel,
    rt: Arc<Runtime>,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let slots = Arc::new(Semaphore::new(MAX_CLI_CONNS));
    loop {
        let permit = slots.clone().acquire_owned().await;
        match listener.accept().await {
            Ok((stream, _)) => spawn_conn(stream, level, rt.clone(), permit.ok()),
            Err(e) => accept_failed(e).await,
        }
    }
}

fn spawn_conn<S>(
    stream: S,
    level: CliLevel,
    rt: Arc<Runtime>,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        handle_conn(stream, level, rt).await;
        drop(permit);
    });
}

async fn accept_failed(e: io::Error) {
    // Typically EMFILE: back off rather than spin, and keep serving.
    tracing::warn!(error = %e, "stats socket accept failed");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// One CLI connection: reads lines, runs them, writes replies. Closes after
/// `quit`, on idle timeout (`stats timeout`), on EOF, or — when not in
/// prompt mode — as soon as every received line has been answered and
/// nothing more is buffered.
pub async fn handle_conn<S>(mut stream: S, level: CliLevel, rt: Arc<Runtime>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let idle = rt
        .snapshot()
        .global
        .stats_timeout
        .unwrap_or(DEFAULT_STATS_TIMEOUT);
    let mut level = level;
    let mut prompt = false;
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = match tokio::time::timeout(idle, stream.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => n,
            _ => break, // EOF, error or idle timeout
        };
        buf.extend_from_slice(&chunk[..n]);
        while let Some(pos) = buf.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = buf.drain(..=pos).collect();
            let line = String::from_utf8_lossy(&raw[..raw.len() - 1]);
            let reply = execute(&line, level, &rt);
            level = reply.level;
            let (out, quit) = reply.render(&mut prompt);
            let wrote = tokio::time::timeout(idle, stream.write_all(out.as_bytes())).await;
            if quit || !matches!(wrote, Ok(Ok(()))) {
                return;
            }
        }
        if buf.len() > MAX_REQUEST {
            tracing::debug!("stats socket request larger than {MAX_REQUEST} bytes");
            break;
        }
        if !prompt && buf.is_empty() {
            break;
        }
    }
    let _ = tokio::time::timeout(idle, stream.shutdown()).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::fixture;

    /// Runs lines as one session and returns what the client would read.
    fn session(lines: &[&str], level: CliLevel) -> String {
        let rt = fixture::runtime();
        let (mut level, mut prompt, mut out) = (level, false, String::new());
        for l in lines {
            let reply = execute(l, level, &rt);
            level = reply.level;
            let (text, quit) = reply.render(&mut prompt);
            out.push_str(&text);
            if quit {
                break;
            }
        }
        out
    }

    fn run(line: &str, level: CliLevel) -> String {
        session(&[line], level)
    }

    const V: &str = env!("CARGO_PKG_VERSION");

    #[test]
    fn each_reply_ends_with_an_empty_line() {
        assert_eq!(
            run("show version;show backend", CliLevel::Operator),
            format!("{V}\n\n# name\nweb_be\nstats\n\n")
        );
        assert_eq!(
            run("show version\r", CliLevel::Operator),
            format!("{V}\n\n")
        );
    }

    #[test]
    fn prompt_mode_transcript() {
        assert_eq!(
            session(&["prompt", "show version", "prompt"], CliLevel::Admin),
            format!("\n> {V}\n\n> \n")
        );
        assert_eq!(
            session(
                &[
                    "prompt",
                    "get weight web_be/s1; show cli level",
                    "quit",
                    "show version"
                ],
                CliLevel::Admin
            ),
            "\n> 1 (initial 1)\n\n> admin\n\n> "
        );
    }

    #[test]
    fn escapes_and_separators() {
        assert_eq!(
            split_line(r"a b\ c;d\;e  f;;"),
            vec![vec!["a", "b c"], vec!["d;e", "f"]]
        );
        assert!(split_line("   ").is_empty());
        assert_eq!(split_line("x\\"), vec![vec!["x"]]);
    }

    #[test]
    fn get_weight_replies() {
        let l = CliLevel::User;
        assert_eq!(run("get weight web_be/s1", l), "1 (initial 1)\n\n");
        assert_eq!(run("get weight #2/#2", l), "1 (initial 1)\n\n");
        assert_eq!(run("get weight web_be/zz", l), "No such server.\n\n");
        assert_eq!(run("get weight nope/s1", l), "No such backend.\n\n");
        assert_eq!(run("get weight web_be", l), "Require 'backend/server'.\n\n");
    }

    #[test]
    fn unknown_command_suggests_close_ones() {
        let out = run("show sta", CliLevel::Admin);
        assert!(out.starts_with(UNKNOWN), "{out}");
        assert!(out.contains("\n  show stat [desc|json|no-maint|typed|up]*: report counters"));
        assert!(out.ends_with("\n\n"));
        assert_eq!(out.matches("\n\n").count(), 1);
        let out = run("frobnicate", CliLevel::User);
        assert!(out.starts_with(UNKNOWN));
        assert!(out.contains("  help [<command>]"));
    }

    #[test]
    fn help_is_two_columns_for_the_level() {
        let out = run("help", CliLevel::User);
        assert!(out.starts_with(VALID));
        assert!(out.contains("\n  show info [desc|json|typed|float]*      : report information about the running process\n"));
        assert!(out.contains("\n  quit                                    : disconnect\n"));
        assert!(!out.contains("clear counters"));
        assert!(
            run("help", CliLevel::Operator)
                .contains("  clear counters [all]                    : clear max")
        );
        let out = run("help show", CliLevel::User);
        assert!(
            out.lines()
                .skip(1)
                .filter(|l| !l.is_empty())
                .all(|l| l.starts_with("  show ")),
            "{out}"
        );
    }

    #[test]
    fn levels_and_permissions() {
        assert_eq!(
            run("clear counters", CliLevel::User),
            "Permission denied\n\n"
        );
        assert_eq!(
            run("clear counters all", CliLevel::Operator),
            "Permission denied\n\n"
        );
        assert_eq!(run("operator", CliLevel::User), "Permission denied\n\n");
        assert_eq!(run("clear counters", CliLevel::Operator), "\n");
        assert_eq!(run("show cli level", CliLevel::Admin), "admin\n\n");
        assert_eq!(
            run(
                "operator;show cli level;user;show cli level;operator",
                CliLevel::Admin
            ),
            "\noperator\n\n\nuser\n\nPermission denied\n\n"
        );
    }

    #[test]
    fn show_stat_filters_and_levels() {
        assert_eq!(
            run("show stat nosuch 1 -1", CliLevel::User),
            "No such proxy.\n\n"
        );
        let out = run("show stat web_be 4 -1", CliLevel::User);
        let rows: Vec<&str> = out.lines().skip(1).filter(|l| !l.is_empty()).collect();
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.starts_with("web_be,s")));
        assert!(out.ends_with(",\n\n"));
        // addr only from operator up.
        assert!(!run("show stat", CliLevel::User).contains("127.0.0.1:17001"));
        assert!(run("show stat", CliLevel::Operator).contains("127.0.0.1:17001"));
        assert!(
            run("show stat up", CliLevel::User)
                .contains(",BACKEND,0,0,0,0,409,0,0,0,0,0,,0,0,0,0,UP (2/2),")
        );
        assert!(run("show stat typed", CliLevel::User).contains("not supported"));
        assert!(run("show info json", CliLevel::User).contains("not supported"));
    }

    #[test]
    fn clear_counters_all_resets_totals() {
        let rt = fixture::runtime();
        let snap = rt.snapshot();
        let fe = snap.frontends().next().unwrap();
        fe.state.counters.session_start();
        fe.state.counters.count_status(200);
        execute("clear counters all", CliLevel::Admin, &rt);
        assert_eq!(fe.state.counters.stot.load(Relaxed), 0);
        assert_eq!(fe.state.counters.hrsp[1].load(Relaxed), 0);
        assert_eq!(fe.state.counters.sess.max(), 1); // still one session open
    }

    #[test]
    fn never_panics_on_garbage() {
        let rt = fixture::runtime();
        let long = "x".repeat(20000);
        for l in [
            "",
            ";",
            ";;;",
            "\\",
            "\\\\;\\",
            "show",
            "show stat -1",
            "show stat a b",
            "show stat 1 2 3 4 5",
            "show stat domain",
            "show stat domain x",
            "get weight /",
            "get weight #/#",
            "get weight #99999999999999999999/x",
            "help me please now",
            "é\u{0}\u{7f}",
            "show stat 2 -99999999999999999999 x",
            long.as_str(),
        ] {
            let r = execute(l, CliLevel::Admin, &rt);
            for o in r.outputs {
                assert!(!o.text.contains("\n\n"), "{l:?}: {:?}", o.text);
            }
        }
    }
}
