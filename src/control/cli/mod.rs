//! The stats socket ("CLI", reference §1.2): HAProxy's line protocol over a
//! UNIX socket. [`execute`] is the pure command dispatcher; the socket code
//! below it only frames lines and replies.
//!
//! The command table and dispatcher are here; the commands themselves in
//! [`commands`], the sockets in [`socket`].

mod commands;
mod eventscmd;
mod mapcmd;
mod socket;
mod srvcmd;
mod tablecmd;
mod varcmd;

use commands::*;
use eventscmd::*;
use mapcmd::*;
pub(crate) use socket::{
    SocketOwnershipError, bind_unix, count_accepted, handle_conn, serve_listener, serve_tcp,
};
pub use socket::{bind_unix_at, serve_unix_listener};
use srvcmd::*;
use tablecmd::*;
use varcmd::*;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use crate::config::model::CliLevel;
use crate::snapshot::Snapshot;
use crate::snapshot::runtime::Runtime;

use crate::observe::stats::sess::CliOrigin;

/// `stats timeout` default.
pub(crate) const DEFAULT_STATS_TIMEOUT: Duration = Duration::from_secs(10);
/// A request line must fit HAProxy's `tune.bufsize`.
pub(crate) const MAX_REQUEST: usize = 16384;
/// `stats maxconn` default: concurrent CLI connections per socket.
pub(crate) const MAX_CLI_CONNS: usize = 10;

const UNKNOWN: &str = "Unknown command, but maybe one of the following ones is a better match:\n";
const UNKNOWN_ALL: &str = "Unknown command. Please enter one of the following commands only:\n";
const VALID: &str = "The following commands are valid at this level:\n";
const DENIED: &str = "Permission denied\n";

// ---------------------------------------------------------------------------
// Dispatcher

/// What the session must do after printing a command's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    None,
    /// `prompt`: toggle interactive mode.
    TogglePrompt,
    /// `quit`: close without writing anything more.
    Quit,
    /// `set timeout cli <delay>`: the session's new idle timeout.
    SetTimeout(Duration),
    /// `reload`: the session runs the reload (it awaits it, where the
    /// synchronous dispatcher cannot) and its report is the output.
    Reload,
    /// The output is sent without the empty line after it (HAProxy's
    /// `show events` errors).
    Bare,
    /// `show events <ring> -w`: after the output, the session sends the
    /// ring's lines from number `from` on as they come, until the client
    /// sends anything or goes.
    Follow {
        ring: String,
        from: u64,
    },
}

/// One command's output: complete lines, each ending in `\n`, never an empty
/// line (the empty line is the end-of-response marker the framing adds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Output {
    pub(crate) text: String,
    pub(crate) effect: Effect,
}

/// The outputs of one input line (one per `;`-separated command) and the
/// session level after it (`user` / `operator` lower it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) outputs: Vec<Output>,
    pub(crate) level: CliLevel,
    /// The session's experimental mode after the line.
    pub(crate) experimental: bool,
    /// The commands of the line after a `reload`, run once it is done.
    pub(crate) rest: Vec<Vec<String>>,
}

impl Reply {
    /// The bytes to send: each output followed by `\n` (the empty line), or
    /// by `\n> ` in prompt mode. Stops at `quit`; the flag says to close.
    pub(crate) fn render(&self, prompt: &mut bool) -> (String, bool) {
        let mut out = String::new();
        for o in &self.outputs {
            match &o.effect {
                Effect::Quit => return (out, true),
                Effect::TogglePrompt => *prompt = !*prompt,
                Effect::Bare | Effect::Follow { .. } => {
                    // No end of response: none at all, or once the
                    // following ends.
                    out.push_str(&o.text);
                    continue;
                }
                Effect::None | Effect::SetTimeout(_) | Effect::Reload => {}
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
        words: &["add", "acl"],
        usage: "add acl [@<ver>] <acl> <pattern>",
        desc: "add an acl entry",
        level: CliLevel::User,
        run: cmd_add_acl,
    },
    Command {
        words: &["add", "map"],
        usage: "add map [@<ver>] <map> <key> <val>",
        desc: "add a map entry (payload supported instead of key/val)",
        level: CliLevel::User,
        run: cmd_add_map,
    },
    Command {
        words: &["add", "server"],
        usage: "add server <bk>/<srv>",
        desc: "create a new server",
        level: CliLevel::Admin,
        run: cmd_add_server,
    },
    Command {
        words: &["clear", "acl"],
        usage: "clear acl [@<ver>] <acl>",
        desc: "clear the contents of this acl",
        level: CliLevel::User,
        run: cmd_clear_acl,
    },
    Command {
        words: &["clear", "counters"],
        usage: "clear counters [all]",
        desc: "clear max statistics counters (or all counters)",
        level: CliLevel::Operator,
        run: cmd_clear_counters,
    },
    Command {
        words: &["clear", "map"],
        usage: "clear map [@<ver>] <map>",
        desc: "clear the contents of this map",
        level: CliLevel::User,
        run: cmd_clear_map,
    },
    Command {
        words: &["clear", "table"],
        usage: "clear table <table> [<filter>]*",
        desc: "remove an entry from a table (filter: data/key)",
        level: CliLevel::User,
        run: cmd_clear_table,
    },
    Command {
        words: &["commit", "acl"],
        usage: "commit acl @<ver> <acl>",
        desc: "commit the ACL at this version",
        level: CliLevel::User,
        run: cmd_commit_acl,
    },
    Command {
        words: &["commit", "map"],
        usage: "commit map @<ver> <map>",
        desc: "commit the map at this version",
        level: CliLevel::User,
        run: cmd_commit_map,
    },
    Command {
        words: &["del", "acl"],
        usage: "del acl <acl> [<key>|#<ref>]",
        desc: "delete acl entries matching <key>",
        level: CliLevel::User,
        run: cmd_del_acl,
    },
    Command {
        words: &["del", "map"],
        usage: "del map <map> [<key>|#<ref>]",
        desc: "delete map entries matching <key>",
        level: CliLevel::User,
        run: cmd_del_map,
    },
    Command {
        words: &["del", "server"],
        usage: "del server <bk>/<srv>",
        desc: "remove a dynamically added server",
        level: CliLevel::Admin,
        run: cmd_del_server,
    },
    Command {
        words: &["disable", "agent"],
        usage: "disable agent",
        desc: "disable agent checks",
        level: CliLevel::Admin,
        run: cmd_disable_agent,
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
        words: &["enable", "agent"],
        usage: "enable agent",
        desc: "enable agent checks",
        level: CliLevel::Admin,
        run: cmd_enable_agent,
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
        words: &["get", "acl"],
        usage: "get acl <acl> <value>",
        desc: "report the patterns matching a sample for an ACL",
        level: CliLevel::User,
        run: cmd_get_acl,
    },
    Command {
        words: &["get", "map"],
        usage: "get map <acl> <value>",
        desc: "report the keys and values matching a sample for a map",
        level: CliLevel::User,
        run: cmd_get_map,
    },
    Command {
        words: &["get", "var"],
        usage: "get var <name>",
        desc: "retrieve contents of a process-wide variable",
        level: CliLevel::Operator,
        run: cmd_get_var,
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
        words: &["prepare", "acl"],
        usage: "prepare acl <acl>",
        desc: "prepare a new version for atomic ACL replacement",
        level: CliLevel::User,
        run: cmd_prepare_acl,
    },
    Command {
        words: &["prepare", "map"],
        usage: "prepare map <acl>",
        desc: "prepare a new version for atomic map replacement",
        level: CliLevel::User,
        run: cmd_prepare_map,
    },
    Command {
        words: &["set", "map"],
        usage: "set map <map> [<key>|#<ref>] <value>",
        desc: "modify a map entry",
        level: CliLevel::User,
        run: cmd_set_map,
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
        words: &["set", "table"],
        usage: "set table <table> key <k> [data.* <v>]*",
        desc: "update or create a table entry's data",
        level: CliLevel::User,
        run: cmd_set_table,
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
        words: &["show", "acl"],
        usage: "show acl [@<ver>] <acl>]",
        desc: "report available acls or dump an acl's contents",
        level: CliLevel::User,
        run: cmd_show_acl,
    },
    Command {
        words: &["show", "backend"],
        usage: "show backend",
        desc: "list backends in the current running config",
        level: CliLevel::User,
        run: cmd_show_backend,
    },
    Command {
        words: &["show", "cache"],
        usage: "show cache",
        desc: "show cache status",
        level: CliLevel::Admin,
        run: cmd_show_cache,
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
        words: &["show", "events"],
        usage: "show events [<sink>] [-w] [-n]",
        desc: "show event sink state",
        level: CliLevel::User,
        run: cmd_show_events,
    },
    Command {
        words: &["show", "info"],
        usage: "show info [desc|json|typed|float]*",
        desc: "report information about the running process",
        level: CliLevel::User,
        run: cmd_show_info,
    },
    Command {
        words: &["show", "map"],
        usage: "show map [@ver] [map]",
        desc: "report available maps or dump a map's contents",
        level: CliLevel::User,
        run: cmd_show_map,
    },
    Command {
        words: &["show", "peers"],
        usage: "show peers [dict|-] [section]",
        desc: "dump some information about all the peers or this peers section",
        level: CliLevel::User,
        run: cmd_show_peers,
    },
    Command {
        words: &["show", "resolvers"],
        usage: "show resolvers [id]",
        desc: "dumps counters from all resolvers section and associated name servers",
        level: CliLevel::User,
        run: cmd_show_resolvers,
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
        words: &["show", "table"],
        usage: "show table <table> [<filter>]*",
        desc: "report table usage stats or dump this table's contents (filter: data/key)",
        level: CliLevel::User,
        run: cmd_show_table,
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

/// Commands HAProxy 2.6 runs but does not list in `help`: `set var` (its
/// experimental mode) and the switch of that mode.
static HIDDEN: &[Command] = &[
    Command {
        words: &["experimental-mode"],
        usage: "experimental-mode [on|off]",
        desc: "enable the experimental mode",
        level: CliLevel::Admin,
        run: cmd_experimental_mode,
    },
    Command {
        words: &["set", "var"],
        usage: "set var <name> [fmt|expr] {<fmt>|<expr>}",
        desc: "set variable from an expression or a format",
        level: CliLevel::Operator,
        run: cmd_set_var,
    },
];

struct Ctx<'a> {
    /// `experimental-mode on` was given in this session.
    experimental: bool,
    level: CliLevel,
    /// The level of the socket (`stats socket ... level`), whatever the
    /// session lowered its own to.
    bind_level: CliLevel,
    rt: &'a Arc<Runtime>,
    snap: Arc<Snapshot>,
    /// The session's client and address (its own `show sess` line).
    origin: CliOrigin,
    me: usize,
    /// The lines sent after a command ending with `<<` (`add map <map>
    /// <<`), up to the empty line that ends them, `\n`-separated.
    payload: Option<&'a str>,
}

fn text(s: impl Into<String>) -> Output {
    Output {
        text: s.into(),
        effect: Effect::None,
    }
}

#[cfg(test)]
/// Runs one input line (without its `\n`) at `level`. Never panics, whatever
/// the input: unknown words get the suggestion text, bad arguments an error
/// line. A `reload` is answered as where no reload can run.
pub(crate) fn execute(line: &str, level: CliLevel, rt: &Arc<Runtime>) -> Reply {
    let mut reply = execute_from(line, (level, false, level), rt, CliOrigin::Unix, 0, None);
    for o in &mut reply.outputs {
        if o.effect == Effect::Reload {
            *o = text(commands::NO_RELOAD);
        }
    }
    reply
}

/// Runs one input line for a session coming from `origin`, `me` naming it
/// in `show sess`. A `reload` stops the line there: its output says
/// [`Effect::Reload`], and the session runs it and then the rest of the
/// line ([`Reply::rest`]).
pub(crate) fn execute_from(
    line: &str,
    (level, experimental, bind_level): (CliLevel, bool, CliLevel),
    rt: &Arc<Runtime>,
    origin: CliOrigin,
    me: usize,
    payload: Option<&str>,
) -> Reply {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut commands = split_line(line);
    // A payload's `<<`, a word of its own, is no argument.
    if payload.is_some()
        && let Some(last) = commands.last_mut()
        && last.last().is_some_and(|w| w == "<<")
    {
        last.pop();
    }
    execute_words(
        commands,
        (level, experimental, bind_level),
        rt,
        origin,
        me,
        payload,
    )
}

/// [`execute_from`] on a line already split into commands.
pub(crate) fn execute_words(
    commands: Vec<Vec<String>>,
    (level, experimental, bind_level): (CliLevel, bool, CliLevel),
    rt: &Arc<Runtime>,
    origin: CliOrigin,
    me: usize,
    payload: Option<&str>,
) -> Reply {
    let mut ctx = Ctx {
        experimental,
        level,
        bind_level,
        rt,
        snap: rt.snapshot(),
        origin,
        me,
        payload,
    };
    let mut outputs = Vec::new();
    let mut commands = commands.into_iter();
    for words in commands.by_ref() {
        let out = dispatch(&mut ctx, &words);
        let stop = matches!(
            out.effect,
            Effect::Quit | Effect::Reload | Effect::Follow { .. }
        );
        outputs.push(sanitize(out));
        if stop {
            break;
        }
    }
    let reloading = outputs.last().is_some_and(|o| o.effect == Effect::Reload);
    Reply {
        outputs,
        level: ctx.level,
        experimental: ctx.experimental,
        rest: if reloading {
            commands.collect()
        } else {
            Vec::new()
        },
    }
}

/// Drops empty lines: they would end the response early for the client.
fn sanitize(mut o: Output) -> Output {
    if matches!(o.effect, Effect::Bare | Effect::Follow { .. }) {
        return o;
    }
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
pub(crate) fn split_line(line: &str) -> Vec<Vec<String>> {
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
    // The commands scripts registered (`core.register_cli`) first, as
    // HAProxy looks its keywords up most recent first.
    if !words.is_empty()
        && let Some(out) = crate::lua::run_cli(words)
    {
        return text(out);
    }
    // Longest keyword first, so `show cli level` is not taken for a shorter
    // command sharing its prefix.
    let found = COMMANDS
        .iter()
        .chain(HIDDEN)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::stats::{csv, fixture};

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

    fn status(rt: &Arc<Runtime>, sv: &str) -> String {
        let out = execute("show stat web_be 4 -1", CliLevel::Admin, rt);
        let idx = csv::FIELDS.iter().position(|f| *f == "status").unwrap();
        out.outputs[0]
            .text
            .lines()
            .find(|l| l.starts_with(&format!("web_be,{sv},")))
            .map(|l| l.split(',').nth(idx).unwrap().to_string())
            .unwrap_or_default()
    }

    fn one(rt: &Arc<Runtime>, line: &str) -> String {
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
        assert_eq!(fe.state.counters.sum(|s| &s.stot), 0);
        assert_eq!(fe.state.counters.sum(|s| &s.hrsp[1]), 0);
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
