//! The stats socket ("CLI", reference §1.2): HAProxy's line protocol over a
//! UNIX socket. [`execute`] is the pure command dispatcher; the socket code
//! below it only frames lines and replies.

use std::fmt::Write as _;
use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Semaphore;

use crate::backend::health::{CheckStatus, Forced};
use crate::backend::{AdminState, Queue};
use crate::config::model::{CliLevel, StatsSocket};
use crate::routing::{BackendRt, ServerRt, Snapshot};
use crate::runtime::Runtime;

use super::admin::{self, ServerAction};
use super::csv::{self, CsvOptions, Filter};
use super::info;
use super::sess::CliOrigin;

/// `stats timeout` default.
pub const DEFAULT_STATS_TIMEOUT: Duration = Duration::from_secs(10);
/// A request line must fit HAProxy's `tune.bufsize`.
pub const MAX_REQUEST: usize = 16384;
/// `stats maxconn` default: concurrent CLI connections per socket.
pub const MAX_CLI_CONNS: usize = 10;

const UNKNOWN: &str = "Unknown command, but maybe one of the following ones is a better match:\n";
const UNKNOWN_ALL: &str = "Unknown command. Please enter one of the following commands only:\n";
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
    /// `set timeout cli <delay>`: the session's new idle timeout.
    SetTimeout(Duration),
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
                Effect::None | Effect::SetTimeout(_) => {}
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
/// Usage and description texts are HAProxy 2.6's.
static COMMANDS: &[Command] = &[
    Command {
        words: &["clear", "counters"],
        usage: "clear counters [all]",
        desc: "clear max statistics counters (or all counters)",
        level: CliLevel::Operator,
        run: cmd_clear_counters,
    },
    Command {
        words: &["disable", "health"],
        usage: "disable health",
        desc: "disable health checks",
        level: CliLevel::Admin,
        run: cmd_disable_health,
    },
    Command {
        words: &["disable", "server"],
        usage: "disable server (DEPRECATED)",
        desc: "disable a server for maintenance (use 'set server' instead)",
        level: CliLevel::Admin,
        run: cmd_disable_server,
    },
    Command {
        words: &["enable", "health"],
        usage: "enable health",
        desc: "enable health checks",
        level: CliLevel::Admin,
        run: cmd_enable_health,
    },
    Command {
        words: &["enable", "server"],
        usage: "enable server  (DEPRECATED)",
        desc: "enable a disabled server (use 'set server' instead)",
        level: CliLevel::Admin,
        run: cmd_enable_server,
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
        words: &["set", "maxconn", "frontend"],
        usage: "set maxconn frontend <frontend> <value>",
        desc: "change a frontend's maxconn setting",
        level: CliLevel::Admin,
        run: cmd_set_maxconn_frontend,
    },
    Command {
        words: &["set", "maxconn", "global"],
        usage: "set maxconn global <value>",
        desc: "change the per-process maxconn setting",
        level: CliLevel::Admin,
        run: cmd_set_maxconn_global,
    },
    Command {
        words: &["set", "maxconn", "server"],
        usage: "set maxconn server <bk>/<srv>",
        desc: "change a server's maxconn setting",
        level: CliLevel::Admin,
        run: cmd_set_maxconn_server,
    },
    Command {
        words: &["set", "server"],
        usage: "set server <bk>/<srv> [opts]",
        desc: "change a server's state, weight, address or ssl",
        level: CliLevel::Admin,
        run: cmd_set_server,
    },
    Command {
        words: &["set", "timeout"],
        usage: "set timeout [cli] <delay>",
        desc: "change a timeout setting",
        level: CliLevel::User,
        run: cmd_set_timeout,
    },
    Command {
        words: &["set", "weight"],
        usage: "set weight <bk>/<srv>  (DEPRECATED)",
        desc: "change a server's weight (use 'set server' instead)",
        level: CliLevel::Admin,
        run: cmd_set_weight,
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
        words: &["show", "env"],
        usage: "show env [var]",
        desc: "dump environment variables known to the process",
        level: CliLevel::Operator,
        run: cmd_show_env,
    },
    Command {
        words: &["show", "errors"],
        usage: "show errors [<px>] [request|response]",
        desc: "report last request and/or response errors for each proxy",
        level: CliLevel::Operator,
        run: cmd_show_errors,
    },
    Command {
        words: &["show", "info"],
        usage: "show info [desc|json|typed|float]*",
        desc: "report information about the running process",
        level: CliLevel::User,
        run: cmd_show_info,
    },
    Command {
        words: &["show", "servers", "state"],
        usage: "show servers state [<backend>]",
        desc: "dump volatile server information (all or for a single backend)",
        level: CliLevel::User,
        run: cmd_show_servers_state,
    },
    Command {
        words: &["show", "sess"],
        usage: "show sess [id]",
        desc: "report the list of current sessions or dump this exact session",
        level: CliLevel::Operator,
        run: cmd_show_sess,
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
        words: &["shutdown", "sessions", "server"],
        usage: "shutdown sessions server <bk>/<srv>",
        desc: "kill sessions on a server",
        level: CliLevel::Admin,
        run: cmd_shutdown_sessions,
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
        words: &["reload"],
        usage: "reload",
        desc: "read the configuration again and apply it if valid",
        level: CliLevel::Admin,
        run: cmd_reload,
    },
    Command {
        words: &["show", "reload"],
        usage: "show reload",
        desc: "report the outcome and the changes of the last reload",
        level: CliLevel::Operator,
        run: cmd_show_reload,
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
    /// The session's client and address (its own `show sess` line).
    origin: CliOrigin,
    me: usize,
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
    execute_from(line, level, rt, CliOrigin::Unix, 0)
}

/// [`execute`] for a session coming from `origin`, `me` naming it in
/// `show sess`.
pub fn execute_from(
    line: &str,
    level: CliLevel,
    rt: &Runtime,
    origin: CliOrigin,
    me: usize,
) -> Reply {
    let mut ctx = Ctx {
        level,
        rt,
        snap: rt.snapshot(),
        origin,
        me,
    };
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut outputs = Vec::new();
    for words in split_line(line) {
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
/// Empty commands are kept (an empty line, `a;;b`, `a;`): HAProxy answers
/// each with its "Unknown command" help.
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
                cmds.push(std::mem::take(&mut words));
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
    cmds.push(words);
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
/// commands (every command if none is close); for an empty command, every
/// command under HAProxy's other header.
fn unknown_command(words: &[String], level: CliLevel) -> String {
    let typed = words.join(" ");
    tracing::debug!(command = %typed, "unknown CLI command");
    let mut out = String::new();
    if words.is_empty() {
        visible(level).for_each(|c| help_line(&mut out, c));
        return format!("{UNKNOWN_ALL}{out}");
    }
    if !close_commands(&mut out, words, level) {
        visible(level).for_each(|c| help_line(&mut out, c));
    }
    format!("{UNKNOWN}{out}")
}

/// Appends the help lines of the (at most 5) commands closest to `words`;
/// false if none is close.
fn close_commands(out: &mut String, words: &[String], level: CliLevel) -> bool {
    if words.is_empty() {
        return false;
    }
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
    scored.iter().take(5).for_each(|(_, c)| help_line(out, c));
    !scored.is_empty()
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
    out.push_str(VALID);
    if !listed.is_empty() {
        listed.iter().for_each(|c| help_line(&mut out, c));
    } else if !close_commands(&mut out, args, ctx.level) {
        // `help <nothing close>`: HAProxy lists every command.
        visible(ctx.level).for_each(|c| help_line(&mut out, c));
    }
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

/// `reload`: answers with the outcome and, on failure, the errors.
fn cmd_reload(ctx: &mut Ctx<'_>, _: &[String]) -> Output {
    let Some(sup) = crate::reload::supervisor() else {
        return text("reload is not available in this process.\n");
    };
    // The dispatcher is synchronous; the reload runs to completion on this
    // worker while the other workers keep serving.
    let handle = tokio::runtime::Handle::current();
    if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return text("reload is not available in this process.\n");
    }
    let report = tokio::task::block_in_place(|| handle.block_on(sup.reload()));
    let _ = ctx;
    let mut out = if report.ok {
        format!("Success=1\ngeneration={}\n", report.generation)
    } else {
        String::from("Success=0\n")
    };
    for c in &report.changes {
        let _ = writeln!(out, "{c}");
    }
    for e in &report.errors {
        let _ = writeln!(out, "{}", e.trim_end());
    }
    text(out)
}

fn cmd_show_reload(ctx: &mut Ctx<'_>, _: &[String]) -> Output {
    let generation = ctx.snap.generation;
    let last = crate::reload::supervisor().and_then(|s| s.last_report());
    text(crate::reload::render_report(last.as_ref(), generation))
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

fn cmd_show_errors(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    match super::errors::parse_filter(&ctx.snap, args) {
        Ok(filter) => text(super::errors::render(&ctx.snap, filter)),
        Err(e) => text(e),
    }
}

fn cmd_show_info(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    // The last of `typed` / `json` wins, as in HAProxy; `desc` and `float`
    // are accepted and ignored (no descriptions, integers only).
    let fmt = args
        .iter()
        .rev()
        .find(|a| *a == "typed" || *a == "json")
        .map(String::as_str);
    text(match fmt {
        Some("typed") => info::render_info_typed(ctx.rt, &ctx.snap),
        Some(_) => info::render_info_json(ctx.rt, &ctx.snap),
        None => info::render_info(ctx.rt, &ctx.snap),
    })
}

/// C `atoi`: leading sign and digits, 0 when there are none.
pub(super) fn atoi(s: &str) -> i64 {
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

fn cmd_show_sess(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    text(super::sess::render(&ctx.snap, args, ctx.origin, ctx.me))
}

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
    let mut fmt = "csv";
    for a in args {
        match a.as_str() {
            "typed" => fmt = "typed",
            "json" => fmt = "json",
            "up" => opts.only_up = true,
            "no-maint" => opts.no_maint = true,
            // `desc` only adds descriptions to typed/json (not provided).
            _ => {}
        }
    }
    match fmt {
        "typed" => text(csv::render_typed(&csv::rows(ctx.rt, &ctx.snap, opts))),
        "json" => text(csv::render_json(&csv::rows(ctx.rt, &ctx.snap, opts))),
        _ => text(csv::render_csv(ctx.rt, &ctx.snap, opts)),
    }
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
    let clear = |c: &crate::backend::Counters| {
        if all {
            c.clear_all();
        } else {
            c.clear_max();
        }
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

// ---------------------------------------------------------------------------
// Server administration (reference §1.8)

/// C `strtol(s, &end, 10)`: leading blanks, sign, digits. Returns the
/// value (saturated) and the unparsed rest, or `None` when no digit was
/// read (`end == s`).
fn strtol(s: &str) -> Option<(i64, &str)> {
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
fn parse_weight(arg: Option<&String>, initial: u32) -> Result<u32, &'static str> {
    let Some(w) = arg else {
        return Err("Require <weight> or <weight%>.\n");
    };
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

fn set_weight(s: &ServerRt, arg: Option<&String>) -> Output {
    match parse_weight(arg, s.weight) {
        Ok(w) => {
            s.state.weight.store(w, Relaxed);
            text("")
        }
        Err(e) => text(e),
    }
}

fn cmd_set_weight(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    match find_server(&ctx.snap, args.first()) {
        Ok((_, s)) => set_weight(s, args.get(1)),
        Err(e) => text(e),
    }
}

fn set_admin(ctx: &Ctx<'_>, args: &[String], to: AdminState) -> Output {
    match find_server(&ctx.snap, args.first()) {
        Ok((be, s)) => {
            admin::apply(be, s, ServerAction::State(to));
            text("")
        }
        Err(e) => text(e),
    }
}

fn cmd_disable_server(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    set_admin(ctx, args, AdminState::Maint)
}

fn cmd_enable_server(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    set_admin(ctx, args, AdminState::Ready)
}

fn set_health_checks(ctx: &Ctx<'_>, args: &[String], on: bool) -> Output {
    match find_server(&ctx.snap, args.first()) {
        Ok((be, s)) if admin::apply(be, s, ServerAction::Checks(on)) => text(""),
        Ok(_) => text("Health check was not configured on this server, cannot enable.\n"),
        Err(e) => text(e),
    }
}

fn cmd_disable_health(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    set_health_checks(ctx, args, false)
}

fn cmd_enable_health(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    set_health_checks(ctx, args, true)
}

const SET_SERVER_USAGE: &str = "usage: set server <backend>/<server> addr | agent | agent-addr | agent-port | agent-send | check-addr | check-port | fqdn | health | ssl | state | weight\n";

fn cmd_set_server(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let (be, s) = match find_server(&ctx.snap, args.first()) {
        Ok(found) => found,
        Err(e) => return text(e),
    };
    let arg = |i: usize| args.get(i).map(String::as_str);
    match arg(1) {
        Some("weight") => set_weight(s, args.get(2)),
        Some("state") => {
            let to = match arg(2) {
                Some("ready") => AdminState::Ready,
                Some("drain") => AdminState::Drain,
                Some("maint") => AdminState::Maint,
                _ => {
                    return text(
                        "'set server <srv> state' expects 'ready', 'drain' and 'maint'.\n",
                    );
                }
            };
            admin::apply(be, s, ServerAction::State(to));
            text("")
        }
        Some("health") => {
            let to = match arg(2) {
                Some("up") => Forced::Up,
                Some("stopping") => Forced::Stopping,
                Some("down") => Forced::Down,
                _ => {
                    return text(
                        "'set server <srv> health' expects 'up', 'stopping', or 'down'.\n",
                    );
                }
            };
            admin::apply(be, s, ServerAction::Health(to));
            text("")
        }
        Some("addr") => set_addr(s, arg(2), arg(3), arg(4)),
        // No agent checks in sluice, as on a HAProxy server without `agent-check`.
        Some("agent") | Some("agent-send") => {
            text("agent checks are not enabled on this server.\n")
        }
        Some("agent-addr") | Some("agent-port") => {
            text("agent checks are not enabled on this server")
        }
        Some("fqdn") => {
            text("set server <b>/<s> fqdn failed because no resolution is configured.\n")
        }
        Some("ssl") => text(
            "'set server <srv> ssl' cannot be set.  default-server should define ssl settings\n",
        ),
        Some(o @ ("check-addr" | "check-port")) => text(format!(
            "'set server <srv> {o}' is not supported by sluice yet.\n"
        )),
        _ => text(SET_SERVER_USAGE),
    }
}

/// `set server <b>/<s> addr <ip> [port <port>]` with HAProxy's report
/// (`IP changed from '..' to '..', port changed from '..' to '..' by 'stats
/// socket command'`). New connections go to the new address; idle pooled
/// connections to the old one are dropped.
fn set_addr(s: &ServerRt, ip: Option<&str>, port_kw: Option<&str>, port: Option<&str>) -> Output {
    const BY: &str = " by 'stats socket command'\n";
    let Some(ip) = ip else {
        return text("set server <b>/<s> addr requires an address and optionally a port.\n");
    };
    let Ok(new_ip) = ip.parse::<std::net::IpAddr>() else {
        return text(format!("Invalid addr '{ip}'{BY}"));
    };
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
    msg.push_str(BY);
    text(msg)
}

fn cmd_set_maxconn_server(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let (be, s) = match find_server(&ctx.snap, args.first()) {
        Ok(x) => x,
        Err(e) => return text(e),
    };
    let Some(arg) = args.get(1) else {
        return text("Require <maxconn>.\n");
    };
    let Some((v, rest)) = strtol(arg) else {
        return text("maxconn string empty or preceded by garbage");
    };
    if !rest.is_empty() {
        return text("Trailing garbage in maxconn string");
    }
    // Stored as HAProxy's unsigned field: -1 becomes 4294967295 (no limit).
    let v = v as i32 as u32;
    let before = s.state.maxconn.swap(v, Relaxed);
    if v == 0 || (before != 0 && v > before) {
        // More room: hand it to requests already waiting in the queue.
        Queue::dispatch_to(&s.state, &be.state);
    }
    text("")
}

fn cmd_set_maxconn_frontend(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let Some(name) = args.first() else {
        return text("A frontend name is expected.\n");
    };
    if !ctx.snap.frontends().any(|f| f.name == *name) {
        return text("No such frontend.\n");
    }
    if args.get(1).is_none() {
        return text("Integer value expected.\n");
    }
    let v = atoi(&args[1]);
    if v < 0 {
        return text("Value out of range.\n");
    }
    let (Some(fe), Some(sup)) = (
        ctx.snap.frontends().find(|f| f.name == *name),
        crate::reload::supervisor(),
    ) else {
        return text("");
    };
    if sup.set_frontend_maxconn(fe, v.min(i64::from(u32::MAX)) as u32) {
        text("")
    } else {
        text("A reload is in progress; try again.\n")
    }
}

fn cmd_set_maxconn_global(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let Some(v) = args.first() else {
        return text("Expects an integer value.\n");
    };
    let hard = ctx
        .snap
        .global
        .maxconn
        .unwrap_or(crate::routing::DEFAULT_MAXCONN);
    let v = atoi(v);
    if v > i64::from(hard) || v < 0 {
        return text("Value out of range.\n");
    }
    if let Some(sup) = crate::reload::supervisor() {
        sup.set_global_maxconn(v as u32);
    }
    text("")
}

/// `shutdown sessions server <b>/<s>`: the client connection of every
/// stream on the server is shut down at once (the server side of a request
/// still waiting for its answer ends with that answer or `timeout server`,
/// unless the server has `on-marked-down shutdown-sessions`).
fn cmd_shutdown_sessions(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    match find_server(&ctx.snap, args.first()) {
        Ok((be, s)) => {
            crate::stats::admin::apply(be, s, crate::stats::admin::ServerAction::Shutdown);
            text("")
        }
        Err(e) => text(e),
    }
}

/// HAProxy's `parse_time_err` in seconds: digits and an optional unit
/// (`us`, `ms`, `s`, `m`, `h`, `d`; seconds by default).
fn parse_seconds(s: &str) -> Option<u64> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n: u64 = s[..digits].parse().ok()?;
    let us = match &s[digits..] {
        "us" => n,
        "ms" => n.checked_mul(1_000)?,
        "" | "s" => n.checked_mul(1_000_000)?,
        "m" => n.checked_mul(60_000_000)?,
        "h" => n.checked_mul(3_600_000_000)?,
        "d" => n.checked_mul(86_400_000_000)?,
        _ => return None,
    };
    Some(us / 1_000_000)
}

fn cmd_set_timeout(_: &mut Ctx<'_>, args: &[String]) -> Output {
    if args.first().map(String::as_str) != Some("cli") {
        return text("'set timeout' only supports 'cli'.\n");
    }
    let Some(v) = args.get(1) else {
        return text("Expects an integer value.\n");
    };
    match parse_seconds(v) {
        Some(secs) if secs >= 1 => Output {
            text: String::new(),
            effect: Effect::SetTimeout(Duration::from_secs(secs)),
        },
        _ => text("Invalid timeout value.\n"),
    }
}

fn cmd_show_env(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let mut out = String::new();
    for (k, v) in std::env::vars_os() {
        let (k, v) = (k.to_string_lossy(), v.to_string_lossy());
        if args.first().is_none_or(|name| *name == k) {
            let _ = writeln!(out, "{k}={}", v.replace(['\n', '\r'], " "));
        }
    }
    if out.is_empty() && !args.is_empty() {
        return text("Variable not found\n");
    }
    text(out)
}

/// `show servers state [<backend>]`: the `server-state-file` format
/// (reference §1.7), version 1.
fn cmd_show_servers_state(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let only = match args.first() {
        Some(name) => match ctx.snap.backend(name) {
            Some(b) => Some(b.name.as_str()),
            None => return text("Can't find backend.\n"),
        },
        None => None,
    };
    let mut out = String::from(
        "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n",
    );
    for be in ctx.snap.backends() {
        if only.is_some_and(|n| n != be.name) {
            continue;
        }
        for s in &be.servers {
            let st = &s.state;
            let h = &st.health;
            let info = h.info();
            let result = match info.status {
                CheckStatus::Unk | CheckStatus::Ini => 0,
                c if c.is_ok() => 3,
                _ => 2,
            };
            let check_state = if !h.is_checked() {
                0
            } else if !h.check_enabled() {
                0x02
            } else if h.is_paused() {
                0x02 | 0x04 | 0x08
            } else {
                0x02 | 0x04
            };
            let addr = st.addr();
            let _ = writeln!(
                out,
                "{} {} {} {} {} {} {} {} {} {} {} {} {} {} 0 0 0 - {} - {} 0 - - 0",
                be.iid,
                be.name,
                s.sid,
                s.name,
                addr.ip(),
                h.op_state(),
                st.admin(),
                st.weight.load(Relaxed),
                s.weight,
                h.lastchg(),
                info.status.number(),
                result,
                info.health,
                check_state,
                addr.port(),
                s.opts.use_ssl
            );
        }
    }
    text(out)
}

// ---------------------------------------------------------------------------
// UNIX socket

/// Binds `sock` (a UNIX socket) like HAProxy: at `<path>.<pid>.tmp`, owner
/// (`uid`/`gid`) and `mode` applied, then renamed over `<path>`, so a
/// stale socket from an earlier run is replaced atomically and clients
/// never see a missing path. Call it before serving to report bind errors
/// at start-up.
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
    bind_unix_at(&path, sock.mode, (sock.uid, sock.gid))
}

/// [`bind_unix`] on an explicit path, file mode and owner (`None` keeps the
/// creator's uid or gid).
pub fn bind_unix_at(
    path: &Path,
    mode: Option<u32>,
    (uid, gid): (Option<u32>, Option<u32>),
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
        // As HAProxy: owner, then mode, on the temporary name, so the
        // socket appears at `path` with its final permissions.
        if uid.is_some() || gid.is_some() {
            std::os::unix::fs::chown(&tmp, uid, gid)
                .map_err(|e| io::Error::new(e.kind(), SocketOwnershipError(e)))?;
        }
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

/// The owner given by `uid`/`gid`/`user`/`group` could not be set (as a
/// non-root process giving the socket to another user). Carried inside the
/// `io::Error` of [`bind_unix`] so the start-up alert can say so as
/// HAProxy does.
#[derive(Debug, thiserror::Error)]
#[error("cannot change UNIX socket ownership")]
pub struct SocketOwnershipError(#[source] pub io::Error);

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
    let l = &listener;
    accept_loop(
        move || async move { l.accept().await.map(|(s, _)| (s, CliOrigin::Unix)) },
        level,
        rt,
    )
    .await
}

/// The same over TCP (`stats socket ipv4@host:port`).
pub async fn serve_tcp(
    listener: std::net::TcpListener,
    level: CliLevel,
    rt: Arc<Runtime>,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let l = &listener;
    accept_loop(
        move || async move { l.accept().await.map(|(s, a)| (s, CliOrigin::Tcp(a))) },
        level,
        rt,
    )
    .await
}

/// One accept loop for both socket families.
async fn accept_loop<S, F>(
    accept: impl Fn() -> F,
    level: CliLevel,
    rt: Arc<Runtime>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    F: std::future::Future<Output = io::Result<(S, CliOrigin)>>,
{
    let slots = Arc::new(Semaphore::new(MAX_CLI_CONNS));
    loop {
        let permit = slots.clone().acquire_owned().await;
        match accept().await {
            Ok((stream, origin)) => spawn_conn(stream, origin, level, rt.clone(), permit.ok()),
            Err(e) => accept_failed(e).await,
        }
    }
}

fn spawn_conn<S>(
    stream: S,
    origin: CliOrigin,
    level: CliLevel,
    rt: Arc<Runtime>,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    count_accepted(&rt);
    tokio::spawn(async move {
        handle_conn(stream, origin, level, rt).await;
        drop(permit);
    });
}

/// HAProxy counts CLI sessions in the process totals: CumConns, ConnRate
/// and SessRate at accept (here, in the accept loop, so two readings of
/// `show info` see every earlier connection), CumReq when the session ends
/// ([`handle_conn`]); CurrConns not, its CLI listeners being unlimited.
pub fn count_accepted(rt: &Runtime) {
    let p = &rt.process;
    p.cum_conns
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    p.conn_rate.hit();
    p.sess_rate.hit();
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
pub async fn handle_conn<S>(mut stream: S, origin: CliOrigin, level: CliLevel, rt: Arc<Runtime>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // The session counts in CumReq when it ends, however it ends (see
    // `count_accepted` for the rest).
    struct CountedSession<'a>(&'a Runtime);
    impl Drop for CountedSession<'_> {
        fn drop(&mut self) {
            self.0.count_request();
        }
    }
    let _counted = CountedSession(&rt);
    let mut idle = rt
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
            // The session's `show sess` pointer: its read buffer's address.
            let me = chunk.as_ptr() as usize;
            let reply = execute_from(&line, level, &rt, origin, me);
            level = reply.level;
            for o in &reply.outputs {
                if let Effect::SetTimeout(t) = o.effect {
                    idle = t;
                }
            }
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
            vec![vec!["a", "b c"], vec!["d;e", "f"], vec![], vec![]]
        );
        assert_eq!(split_line("   "), vec![Vec::<String>::new()]);
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
    }

    fn status(rt: &Runtime, sv: &str) -> String {
        let out = execute("show stat web_be 4 -1", CliLevel::Admin, rt);
        let idx = csv::FIELDS.iter().position(|f| *f == "status").unwrap();
        out.outputs[0]
            .text
            .lines()
            .find(|l| l.starts_with(&format!("web_be,{sv},")))
            .map(|l| l.split(',').nth(idx).unwrap().to_string())
            .unwrap_or_default()
    }

    fn one(rt: &Runtime, line: &str) -> String {
        let r = execute(line, CliLevel::Admin, rt);
        r.render(&mut false).0
    }

    #[test]
    fn weight_commands_have_haproxys_replies() {
        let rt = fixture::runtime();
        let r = |l: &str| one(&rt, l);
        assert_eq!(
            r("set weight web_be/s1 300"),
            "Absolute weight can only be between 0 and 256 inclusive.\n\n"
        );
        assert_eq!(
            r("set weight web_be/s1 -1"),
            "Absolute weight can only be between 0 and 256 inclusive.\n\n"
        );
        // These two have no line feed of their own in HAProxy.
        assert_eq!(
            r("set weight web_be/s1 abc"),
            "Empty weight string empty or preceded by garbage\n"
        );
        assert_eq!(
            r("set weight web_be/s1 5x"),
            "Trailing garbage in weight string\n"
        );
        assert_eq!(
            r("set weight web_be/s1 -5%"),
            "Relative weight must be positive.\n\n"
        );
        assert_eq!(
            r("set weight web_be/s1"),
            "Require <weight> or <weight%>.\n\n"
        );
        assert_eq!(r("set weight nosuch/s1"), "No such backend.\n\n");
        assert_eq!(r("set weight web_be/zz 1"), "No such server.\n\n");
        assert_eq!(r("set weight web_be 1"), "Require 'backend/server'.\n\n");
        assert_eq!(r("set weight web_be/s1 3"), "\n");
        assert_eq!(r("get weight web_be/s1"), "3 (initial 1)\n\n");
        assert_eq!(r("set weight web_be/s1 50%"), "\n");
        assert_eq!(r("get weight web_be/s1"), "0 (initial 1)\n\n");
        assert_eq!(r("set server web_be/s1 weight 2600%"), "\n");
        assert_eq!(r("get weight web_be/s1"), "26 (initial 1)\n\n");
        assert_eq!(r("set server web_be/s1 weight 256"), "\n");
        assert_eq!(r("get weight web_be/s1"), "256 (initial 1)\n\n");
        assert_eq!(
            r("set server web_be/s1 weight"),
            "Require <weight> or <weight%>.\n\n"
        );
    }

    #[test]
    fn admin_states_show_in_show_stat_and_leave_load_balancing() {
        let rt = fixture::runtime();
        let snap = rt.snapshot();
        let be = snap.backend("web_be").unwrap();
        let (s1, s2) = (&be.servers[0].state, &be.servers[1].state);
        assert_eq!(
            one(&rt, "disable server web_be"),
            "Require 'backend/server'.\n\n"
        );
        assert_eq!(one(&rt, "disable server web_be/s2"), "\n");
        assert_eq!(status(&rt, "s2"), "MAINT");
        assert!(!s2.usable() && s2.is_maint());
        assert_eq!(one(&rt, "set server web_be/s1 state drain"), "\n");
        assert_eq!(status(&rt, "s1"), "DRAIN 1/3");
        assert!(!s1.usable());
        // Nothing usable: the backend is DOWN, `up` hides the MAINT server.
        let out = one(&rt, "show stat up");
        assert!(out.contains(",DOWN (1/2),"), "{out}");
        assert!(!out.contains("web_be,s2,"));
        assert!(!one(&rt, "show stat no-maint").contains("web_be,s2,"));
        assert!(one(&rt, "show stat").contains("web_be,s2,"));
        assert_eq!(
            one(&rt, "set server web_be/s1 state bogus"),
            "'set server <srv> state' expects 'ready', 'drain' and 'maint'.\n\n"
        );
        assert_eq!(one(&rt, "set server web_be/s1 state maint"), "\n");
        assert_eq!(status(&rt, "s1"), "MAINT");
        assert_eq!(one(&rt, "set server web_be/s1 state ready"), "\n");
        assert_eq!(one(&rt, "enable server web_be/s2"), "\n");
        assert_eq!(status(&rt, "s2"), "UP 1/3");
        assert!(s1.usable() && s2.usable());
        // Forced health.
        assert_eq!(one(&rt, "set server web_be/s1 health stopping"), "\n");
        assert_eq!(status(&rt, "s1"), "NOLB");
        assert!(!s1.usable());
        assert_eq!(one(&rt, "set server web_be/s1 health down"), "\n");
        assert_eq!(status(&rt, "s1"), "DOWN");
        assert_eq!(one(&rt, "set server web_be/s1 health up"), "\n");
        assert_eq!(status(&rt, "s1"), "UP");
        assert_eq!(
            one(&rt, "set server web_be/s1 health bogus"),
            "'set server <srv> health' expects 'up', 'stopping', or 'down'.\n\n"
        );
        // Checks off: `no check`, and the check columns empty.
        assert_eq!(one(&rt, "disable health web_be/s1"), "\n");
        assert_eq!(status(&rt, "s1"), "no check");
        assert_eq!(one(&rt, "enable health web_be/s1"), "\n");
        assert_eq!(status(&rt, "s1"), "UP");
        assert_eq!(
            one(&rt, "set server web_be/s1 foo"),
            SET_SERVER_USAGE.to_string() + "\n"
        );
        assert_eq!(
            one(&rt, "set server web_be/s1"),
            SET_SERVER_USAGE.to_string() + "\n"
        );
        assert_eq!(
            one(&rt, "set server web_be/s1 agent up"),
            "agent checks are not enabled on this server.\n\n"
        );
    }

    #[test]
    fn show_servers_state_format() {
        let rt = fixture::runtime();
        one(&rt, "disable server web_be/s2");
        one(&rt, "set server web_be/s1 state drain");
        let out = one(&rt, "show servers state web_be");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "1");
        assert!(lines[1].starts_with("# be_id be_name srv_id srv_name srv_addr srv_op_state "));
        assert!(lines[1].ends_with(" srv_agent_addr srv_agent_port"));
        // Fresh servers (check INI, result unknown), lastchg 0 or 1.
        let mask = |l: &str| {
            let mut f: Vec<&str> = l.split(' ').collect();
            f[9] = "T";
            f.join(" ")
        };
        assert_eq!(
            mask(lines[2]),
            "2 web_be 1 s1 127.0.0.1 2 8 1 1 T 1 0 2 6 0 0 0 - 17001 - 0 0 - - 0"
        );
        assert_eq!(
            mask(lines[3]),
            "2 web_be 2 s2 127.0.0.1 0 1 1 1 T 1 0 0 14 0 0 0 - 17002 - 0 0 - - 0"
        );
        assert_eq!(lines[4], "");
        assert_eq!(lines.len(), 5);
        assert_eq!(
            one(&rt, "show servers state nosuch"),
            "Can't find backend.\n\n"
        );
        assert_eq!(one(&rt, "show servers state"), out);
    }

    #[test]
    fn set_server_addr_swaps_the_pool() {
        let rt = fixture::runtime();
        let r = |l: &str| one(&rt, l);
        assert_eq!(
            r("set server web_be/s1 addr"),
            "set server <b>/<s> addr requires an address and optionally a port.\n\n"
        );
        assert_eq!(
            r("set server web_be/s1 addr 1.2.3"),
            "Invalid addr '1.2.3' by 'stats socket command'\n\n"
        );
        assert_eq!(
            r("set server web_be/s1 addr 127.0.0.1 port abc"),
            "no need to change the addr, problem converting port 'abc' to an int by 'stats socket command'\n\n"
        );
        assert_eq!(
            r("set server web_be/s1 addr 127.0.0.2"),
            "IP changed from '127.0.0.1' to '127.0.0.2' by 'stats socket command'\n\n"
        );
        assert_eq!(
            r("set server web_be/s1 addr 127.0.0.1 port 17003"),
            "IP changed from '127.0.0.2' to '127.0.0.1', port changed from '17001' to '17003' by 'stats socket command'\n\n"
        );
        assert_eq!(
            r("set server web_be/s1 addr 127.0.0.1 port 17003"),
            "no need to change the addr, no need to change the port by 'stats socket command'\n\n"
        );
        let snap = rt.snapshot();
        let s1 = &snap.backend("web_be").unwrap().servers[0].state;
        assert_eq!(s1.addr(), "127.0.0.1:17003".parse().unwrap());
        assert_eq!(s1.pool.load().addr(), s1.addr());
    }

    #[test]
    fn maxconn_timeout_env_and_shutdown() {
        let rt = fixture::runtime();
        let r = |l: &str| one(&rt, l);
        assert_eq!(r("set maxconn server web_be/s1 100"), "\n");
        assert!(r("show stat web_be 4 1").contains("web_be,s1,0,0,0,0,100,"));
        assert_eq!(r("set maxconn server web_be/s1 -1"), "\n");
        assert!(r("show stat web_be 4 1").contains("web_be,s1,0,0,0,0,4294967295,"));
        assert_eq!(r("set maxconn server web_be/s1"), "Require <maxconn>.\n\n");
        assert_eq!(
            r("set maxconn server web_be/s1 abc"),
            "maxconn string empty or preceded by garbage\n"
        );
        assert_eq!(r("set maxconn server web_be/zz 1"), "No such server.\n\n");
        assert_eq!(
            r("set maxconn frontend"),
            "A frontend name is expected.\n\n"
        );
        assert_eq!(r("set maxconn frontend web_be 5"), "No such frontend.\n\n");
        assert_eq!(
            r("set maxconn frontend web_fe"),
            "Integer value expected.\n\n"
        );
        // No supervisor in this unit test: accepted, applied by the
        // running process (tests/maxconn.rs).
        assert_eq!(r("set maxconn frontend web_fe 10"), "\n");
        assert_eq!(r("set maxconn global"), "Expects an integer value.\n\n");
        assert_eq!(r("set maxconn global 99999"), "Value out of range.\n\n");
        assert_eq!(r("set maxconn global 100"), "\n");
        assert_eq!(r("set timeout"), "'set timeout' only supports 'cli'.\n\n");
        assert_eq!(r("set timeout cli"), "Expects an integer value.\n\n");
        assert_eq!(r("set timeout cli abc"), "Invalid timeout value.\n\n");
        assert_eq!(r("set timeout cli 0"), "Invalid timeout value.\n\n");
        assert_eq!(r("set timeout cli 100ms"), "Invalid timeout value.\n\n");
        let t = execute("set timeout cli 2m", CliLevel::User, &rt);
        assert_eq!(
            t.outputs[0].effect,
            Effect::SetTimeout(Duration::from_secs(120))
        );
        assert_eq!(
            r("shutdown sessions server web_be"),
            "Require 'backend/server'.\n\n"
        );
        assert_eq!(r("shutdown sessions server web_be/s1"), "\n");
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(r("show env PATH"), format!("PATH={path}\n\n"));
        assert_eq!(
            r("show env SLUICE_NO_SUCH_VARIABLE"),
            "Variable not found\n\n"
        );
        assert_eq!(run("show env", CliLevel::User), "Permission denied\n\n");
    }

    #[test]
    fn admin_commands_need_admin() {
        for l in [
            "disable server web_be/s1",
            "enable server web_be/s1",
            "disable health web_be/s1",
            "enable health web_be/s1",
            "set weight web_be/s1 2",
            "set server web_be/s1 state maint",
            "set maxconn server web_be/s1 1",
            "set maxconn frontend web_fe 1",
            "set maxconn global 1",
            "shutdown sessions server web_be/s1",
        ] {
            assert_eq!(run(l, CliLevel::Operator), "Permission denied\n\n", "{l}");
            assert_eq!(run(l, CliLevel::User), "Permission denied\n\n", "{l}");
        }
        assert_eq!(run("set timeout cli 5", CliLevel::User), "\n");
        assert!(run("show servers state", CliLevel::User).starts_with("1\n"));
        let help = run("help", CliLevel::Admin);
        assert!(help.contains("\n  set server <bk>/<srv> [opts]            : change a server's state, weight, address or ssl\n"));
        assert!(help.contains("\n  set weight <bk>/<srv>  (DEPRECATED)     : change a server's weight (use 'set server' instead)\n"));
        assert!(help.contains("\n  enable server  (DEPRECATED)             : enable a disabled server (use 'set server' instead)\n"));
        assert!(!run("help", CliLevel::Operator).contains("set server"));
        assert!(run("help", CliLevel::Operator).contains("show env [var]"));
    }

    #[test]
    fn typed_and_json_formats() {
        let rt = fixture::runtime();
        let out = run("show stat typed", CliLevel::Admin);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "F.1.0.0.pxname.1:KNS:str:web_fe");
        assert_eq!(lines[1], "F.1.0.1.svname.1:KNS:str:FRONTEND");
        assert_eq!(lines[2], "F.1.0.4.scur.1:MGP:u32:0");
        assert!(out.contains("\nS.2.1.17.status.1:SGP:str:UP 1/3\n"));
        assert!(out.contains("\nS.2.1.19.act.1:SGP:u32:1\n"));
        assert!(out.contains("\nB.2.0.19.act.1:MGP:u32:2\n"));
        assert!(out.contains("\nS.2.1.73.addr.1:CGS:str:127.0.0.1:17001\n"));
        assert!(out.contains("\nS.2.1.103.ssl_sess.1:MCP:u64:0\n"));
        assert!(out.contains("\nB.3.0.126.h1_spliced_bytes_out.1:MCP:u64:0\n"));
        assert!(out.contains("\nS.2.1.55.lastsess.1:MAP:s32:-1\n"));
        assert!(!out.contains(".-.") && out.ends_with("\n\n"));
        assert_eq!(out.matches("\n\n").count(), 1);
        let json = run("show stat json", CliLevel::Admin);
        assert!(json.starts_with("[[{\"objType\":\"Frontend\",\"proxyId\":1,\"id\":0,\"field\":{\"pos\":0,\"name\":\"pxname\"},\"processNum\":1,\"tags\":{\"origin\":\"Key\",\"nature\":\"Name\",\"scope\":\"Service\"},\"value\":{\"type\":\"str\",\"value\":\"web_fe\"}},"));
        assert!(json.ends_with("}]]\n\n"));
        assert!(json.contains("{\"objType\":\"Server\",\"proxyId\":2,\"id\":1,\"field\":{\"pos\":55,\"name\":\"lastsess\"},\"processNum\":1,\"tags\":{\"origin\":\"Metric\",\"nature\":\"Age\",\"scope\":\"Process\"},\"value\":{\"type\":\"s32\",\"value\":-1}}"));
        let info = run("show info typed", CliLevel::User);
        assert!(info.starts_with("0.Name.1:POS:str:sluice\n1.Version.1:POS:str:"));
        assert!(info.contains("\n3.Nbthread.1:CGS:u32:2\n"));
        assert!(info.contains("\n54.Unstoppable Jobs.1:MGP:u32:0\n"));
        assert!(info.contains("\n71.Tainted.1:SGP:str:0\n72.Generation.1:MGP:u64:1\n"));
        let ij = run("show info json", CliLevel::User);
        assert!(ij.starts_with("[{\"field\":{\"pos\":0,\"name\":\"Name\"},\"processNum\":1,\"tags\":{\"origin\":\"Product\",\"nature\":\"Output\",\"scope\":\"Service\"},\"value\":{\"type\":\"str\",\"value\":\"sluice\"}},"));
        assert!(ij.ends_with("\"value\":{\"type\":\"str\",\"value\":\"none\"}}]\n\n"));
        drop(rt);
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
