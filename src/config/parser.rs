//! Statements to the model: section tracking, `defaults` inheritance and the
//! keyword handlers of each section kind. Every error is reported and
//! parsing goes on, so one run lists all problems.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::acl::parse::{PREDEFINED, check_acl_name, parse_acl, parse_condition_at, predefined};
use crate::acl::{AclDef, Condition};
use crate::config::addr::{self, Family, Resolver};
use crate::config::cond;
use crate::config::diag::{Diagnostic, Level};
use crate::config::keywords as kw;
use crate::config::lexer::{LexCtx, split_line_raw};
use crate::config::model::*;
use crate::config::suggest;
use crate::config::units::{parse_time, parse_u32, time_error_message};

mod compkw;
mod cookiekw;
mod errorskw;
mod extcheckkw;
mod extraskw;
mod fcgikw;
mod globalkw;
mod lbkw;
mod legacykw;
mod logfwdkw;
mod luakw;
mod mailerskw;
mod peerskw;
mod proxykw;
mod resolverskw;
mod retrykw;
mod ringkw;
mod rulekw;
mod serverkw;
mod sockkw;
mod sslkw;
pub(crate) mod stickkw;
mod tcpkw;
mod userlistkw;

pub(crate) use globalkw::{GLOBAL, add_case_adjust};
pub(crate) use proxykw::{OPTIONS, PROXY};
pub(crate) use resolverskw::resolv_conf_nameservers;
pub(crate) use rulekw::{HTTP_REQUEST, HTTP_RESPONSE, run_outside, var_rule};
pub(crate) use serverkw::{SERVER, dynamic_server};

/// One keyword of a statement kind, as its table holds it: the name, the
/// function that parses the statement, and what the keyword lists need to
/// know of it. The parser looks a statement's keyword up in its table and
/// calls `run`; the lists in `config/keywords.rs`, the suggestions and the
/// docs test read the names from the same table, so they cannot drift.
#[derive(Clone, Copy)]
pub(crate) struct Kwd<H> {
    pub(crate) name: &'static str,
    pub(crate) run: H,
    /// Takes a `no` prefix (proxy keywords).
    pub(crate) neg: bool,
}

/// A table entry without a `no` form.
pub(crate) const fn kwd<H>(name: &'static str, run: H) -> Kwd<H> {
    Kwd {
        name,
        run,
        neg: false,
    }
}

/// A `global` keyword's parser.
pub(crate) type GlobalKw = Kwd<fn(&mut State<'_>, &Loc, &[String])>;
/// A proxy keyword's (or `option`'s) parser; the flag is the `no` prefix.
pub(crate) type ProxyKw = Kwd<fn(&mut State<'_>, &Loc, &[String], bool)>;

/// A server whose host still has to be resolved (after validation).
#[derive(Debug, Clone)]
pub(crate) struct PendingServer {
    pub(crate) proxy: usize,
    pub(crate) server: usize,
    pub(crate) host: String,
    pub(crate) family: Family,
    pub(crate) port: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    None,
    Global,
    /// Index into `State::defaults`.
    Defaults(usize),
    Proxy(usize),
    /// Index into `Global::userlists`.
    Userlist(usize),
    /// Index into `Global::resolvers`.
    Resolvers(usize),
    /// Index into `Global::peers`.
    Peers(usize),
    /// Index into `Global::caches`.
    Cache(usize),
    /// Index into `Global::mailers`.
    Mailers(usize),
    /// Index into `State::http_errors`.
    HttpErrors(usize),
    /// Index into `Global::fcgi_apps`.
    FcgiApp(usize),
    /// Index into `Global::rings`.
    Ring(usize),
    /// Index into `Global::log_forwards`.
    LogForward(usize),
    /// Inside a section we cannot use (already reported once).
    Skip,
}

impl Section {
    fn name(self, proxies: &[Proxy]) -> &'static str {
        match self {
            Section::None | Section::Skip => "",
            Section::Userlist(_) => "userlist",
            Section::Resolvers(_) => "resolvers",
            Section::Peers(_) => "peers",
            Section::Cache(_) => "cache",
            Section::Mailers(_) => "mailers",
            Section::HttpErrors(_) => "http-errors",
            Section::FcgiApp(_) => "fcgi-app",
            Section::Ring(_) => "ring",
            Section::LogForward(_) => "log-forward",
            Section::Global => "global",
            Section::Defaults(_) => "defaults",
            Section::Proxy(i) => proxies.get(i).map_or("", |p| p.kind.keyword()),
        }
    }
}

/// What a `default-server` line sets, inherited by the `server` lines that
/// follow it (and by proxies using the `defaults` section it is in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerDefaults {
    pub(crate) weight: u32,
    pub(crate) maxconn: u32,
    pub(crate) check: bool,
    pub(crate) params: CheckParams,
    pub(crate) opts: ServerOpts,
    /// `id` (server lines only).
    pub(crate) id: Option<u32>,
    /// `cookie <value>`.
    pub(crate) cookie: Option<String>,
    /// `redir <prefix>`.
    pub(crate) redir: Option<String>,
    /// `ws h1` (1) or `ws h2` (2); 0: `auto`.
    pub(crate) ws: u8,
    /// `ssl` and its options (None: plain TCP).
    pub(crate) tls: Option<crate::tls::upstream::ServerTlsOpts>,
    /// `resolvers <name>` and the `resolve-*` options (the name empty
    /// while only options were given).
    pub(crate) resolve: ServerResolve,
    /// `init-addr`.
    pub(crate) init_addr: Option<Vec<InitAddr>>,
    /// `agent-check` given (and not `no-agent-check` after it).
    pub(crate) agent_check: bool,
    /// `agent-port`, `agent-addr`, `agent-inter`, `agent-send`.
    pub(crate) agent_port: Option<u32>,
    pub(crate) agent_addr: Option<std::net::IpAddr>,
    pub(crate) agent_inter: Option<Duration>,
    pub(crate) agent_send: String,
}

impl Default for ServerDefaults {
    fn default() -> Self {
        ServerDefaults {
            weight: 1,
            maxconn: 0,
            check: false,
            params: CheckParams::default(),
            opts: ServerOpts {
                error_limit: 10,
                ..ServerOpts::default()
            },
            id: None,
            cookie: None,
            redir: None,
            ws: 0,
            tls: None,
            resolve: ServerResolve {
                resolvers: String::new(),
                prefer_v4: false,
                nets: Vec::new(),
                allow_dup_ip: false,
                ignore_weight: false,
            },
            init_addr: None,
            agent_check: false,
            agent_port: None,
            agent_addr: None,
            agent_inter: None,
            agent_send: String::new(),
        }
    }
}

/// One `defaults` section: its name (possibly empty), where it starts, and
/// the values it gives to the proxies using it.
#[derive(Debug, Clone)]
struct DefaultsSet {
    name: String,
    loc: Loc,
    proxy: Proxy,
    server: ServerDefaults,
    /// Referenced by name with `from` at least once.
    referenced: bool,
}

/// State of one `.if` block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Branch {
    /// The current branch is in effect.
    Active,
    /// No branch taken yet (a later `.elif`/`.else` may be).
    Waiting,
    /// A branch was taken already, or the condition was broken.
    Done,
    /// The enclosing block is inactive: conditions are not evaluated.
    Skip,
}

#[derive(Debug, Clone, Copy)]
struct CondFrame {
    branch: Branch,
    else_seen: bool,
}

/// HAProxy's MAXNESTEDCONDS.
const MAX_NESTED_CONDS: usize = 10;

/// A statement that took effect, for `--dump`.
#[derive(Debug, Clone)]
pub(crate) struct Statement {
    pub(crate) loc: Loc,
    pub(crate) words: Vec<String>,
    /// Starts a section (printed without indentation).
    pub(crate) header: bool,
}

pub(crate) struct State<'r> {
    pub(crate) diags: Vec<Diagnostic>,
    pub(crate) global: Global,
    /// Each userlist's groups with the `users` they name, resolved when
    /// the configuration ends.
    userlist_groups: Vec<Vec<(String, Vec<String>)>>,
    pub(crate) proxies: Vec<Proxy>,
    pub(crate) pending: Vec<PendingServer>,
    /// Every statement in effect, in order.
    pub(crate) statements: Vec<Statement>,
    /// An `.alert` directive stopped the parsing (HAProxy aborts there).
    pub(crate) aborted: bool,
    /// All `defaults` sections so far; the last one is the implicit
    /// defaults of new proxies.
    defaults: Vec<DefaultsSet>,
    /// `default-server` values of each proxy (same index as `proxies`).
    server_defaults: Vec<ServerDefaults>,
    section: Section,
    /// The `http-errors` sections, read by the proxies' `errorfiles`
    /// once the configuration ends.
    http_errors: Vec<errorskw::HttpErrors>,
    conds: Vec<CondFrame>,
    resolve: Resolver<'r>,
    /// The environment of the file being parsed: addresses expand their
    /// variables themselves (see [`addr::env_expand`]).
    env: Option<Env<'r>>,
    /// Source text of the current line's words (for messages quoting it).
    raw_words: Vec<String>,
    /// `no such ACL` errors: (diagnostic index, proxy index, ACL name), to
    /// say so when the ACL is declared later on.
    missing_acls: Vec<(usize, usize, String)>,
    /// Set by `condition()` when it refuses an unknown ACL.
    missing_acl: Option<String>,
    /// Target of proxy keywords outside any usable section (never read).
    scratch: Proxy,
    /// Legacy keyword families already warned about (HAProxy 2.0 warns
    /// once per family).
    legacy_warned: Vec<&'static str>,
    /// Parsing a server of the CLI's `add server`: only HAProxy's dynamic
    /// server options are taken.
    dynamic: bool,
    /// The stick tables declared so far.
    declared_tables: Vec<stickkw::Declared>,
    /// What the lines of the current `peers` section said so far.
    peers_parse: peerskw::PeersParse,
    /// The `log ring@<name>` lines: where, the ring, the proxy (None: the
    /// global section); checked once every ring is read.
    ring_refs: Vec<(Loc, String, Option<String>)>,
    /// `default-path`, and the file whose directory is in force.
    default_path: crate::sys::cfgdir::DefaultPath,
    path_file: Option<Arc<str>>,
}

/// Looks up an environment variable (injected, so tests choose the
/// environment).
type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Outcome of a keyword handler: diagnostics were pushed as needed.
type Handled = ();

fn default_template() -> Proxy {
    Proxy::new(
        String::new(),
        ProxyKind::Listen,
        Loc {
            file: Arc::from(""),
            line: 0,
        },
    )
}

/// HAProxy's allowed characters in proxy and server names.
fn bad_name_char(name: &str) -> Option<char> {
    name.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':')))
}

/// The status codes HAProxy has a built-in error page for (`deny_status`).
const ERROR_PAGE_CODES: &[u16] = &[
    200, 400, 401, 403, 404, 405, 407, 408, 410, 413, 421, 422, 425, 429, 500, 501, 502, 503, 504,
];

impl<'r> State<'r> {
    pub(crate) fn new(resolve: Resolver<'r>) -> Self {
        State {
            diags: Vec::new(),
            global: Global::default(),
            userlist_groups: Vec::new(),
            proxies: Vec::new(),
            pending: Vec::new(),
            statements: Vec::new(),
            aborted: false,
            defaults: Vec::new(),
            server_defaults: Vec::new(),
            section: Section::None,
            http_errors: Vec::new(),
            conds: Vec::new(),
            resolve,
            env: None,
            raw_words: Vec::new(),
            missing_acls: Vec::new(),
            missing_acl: None,
            scratch: default_template(),
            legacy_warned: Vec::new(),
            dynamic: false,
            declared_tables: Vec::new(),
            peers_parse: Default::default(),
            ring_refs: Vec::new(),
            default_path: Default::default(),
            path_file: None,
        }
    }

    fn alert(&mut self, loc: &Loc, msg: impl std::fmt::Display) {
        self.diags.push(Diagnostic::parsing(Level::Alert, loc, msg));
        // A condition naming an unknown ACL: remember it, to add a note if
        // the ACL turns out to be declared later.
        if let Some(name) = self.missing_acl.take()
            && let Section::Proxy(i) = self.section
        {
            self.missing_acls.push((self.diags.len() - 1, i, name));
        }
    }

    fn warn(&mut self, loc: &Loc, msg: impl std::fmt::Display) {
        self.diags
            .push(Diagnostic::parsing(Level::Warning, loc, msg));
    }

    /// `-c` met an `fd@<name>` it cannot resolve: a notice, not an error
    /// (the check runs without the service's systemd sockets).
    fn unresolved_fd(&mut self, loc: &Loc, what: &str, text: &str, why: &str) {
        self.diags.push(Diagnostic::parsing(
            Level::Notice,
            loc,
            format!("'{what}' : '{text}' : {why}; not checked by -c, it must resolve when sluice starts."),
        ));
    }

    fn tight(&mut self, level: Level, loc: &Loc, msg: impl std::fmt::Display) {
        self.diags.push(Diagnostic::parsing_tight(level, loc, msg));
    }

    /// An address word with its environment variables expanded; `Err`
    /// with HAProxy's message when nothing is left (an unset variable).
    fn addr_word(&self, word: &str) -> Result<String, String> {
        let expanded = match self.env {
            Some(env) => addr::env_expand(word, env),
            None => word.to_string(),
        };
        if expanded.is_empty() {
            return Err(addr::empty_address(word));
        }
        Ok(expanded)
    }

    /// A `log` line with its target's variables expanded.
    fn log_words(&self, words: &[String]) -> Result<Vec<String>, String> {
        let mut w = words.to_vec();
        if let Some(target) = w.get_mut(1).filter(|t| !t.is_empty() && *t != "global") {
            *target = self.addr_word(target).map_err(|e| format!("log : {e}"))?;
        }
        Ok(w)
    }

    fn unsupported(&mut self, loc: &Loc, what: &str) {
        self.alert(loc, format!("'{what}' is not supported by sluice yet"));
    }

    /// Parse one file. Unless `continues` is set, the file starts at a
    /// section boundary (HAProxy's rule); with it, lines before the first
    /// section keyword continue the section the previous file ended in
    /// (the split-directory layout).
    pub(crate) fn parse_file(&mut self, name: &str, text: &str, env: Env<'r>, continues: bool) {
        if self.aborted {
            return;
        }
        self.env = Some(env);
        let file: Arc<str> = Arc::from(name);
        if !continues {
            self.section = Section::None;
        }
        self.conds.clear();
        let before = self.diags.iter().filter(|d| d.is_alert()).count();
        let mut last_line = 0u32;
        let lines = text.strip_suffix('\n').unwrap_or(text);
        for (idx, raw) in lines.split('\n').enumerate() {
            let loc = Loc {
                file: file.clone(),
                line: u32::try_from(idx + 1).unwrap_or(u32::MAX),
            };
            last_line = loc.line;
            // `${...}` through the global section's `setenv` lines so far.
            let edits = self.global.env.clone();
            let with_edits = |n: &str| edits.get(n, env);
            let ctx = LexCtx {
                file: name,
                line: loc.line,
                section: self.section.name(&self.proxies),
                env: &with_edits,
            };
            let words: Vec<String> = match split_line_raw(raw, &ctx) {
                Ok(w) => {
                    self.raw_words = w.iter().map(|w| w.raw.clone()).collect();
                    w.into_iter().map(|w| w.text).collect()
                }
                Err(e) => {
                    self.tight(Level::Alert, &loc, e.message(raw));
                    continue;
                }
            };
            if words.is_empty() {
                continue;
            }
            if matches!(words[0].as_str(), ".if" | ".elif" | ".else" | ".endif") {
                self.conditional(&loc, &words, &with_edits);
                continue;
            }
            if !self.active() {
                continue;
            }
            self.statement(&loc, &words);
            if self.aborted {
                break;
            }
        }
        // HAProxy 2.6 refuses a file whose last line has no LF: it may have
        // been cut short while being written. The line itself was parsed.
        if !text.is_empty() && !text.ends_with('\n') && !self.aborted {
            let loc = Loc {
                file: file.clone(),
                line: last_line.max(1),
            };
            let len = lines.rsplit('\n').next().map_or(0, str::len);
            self.tight(
                Level::Alert,
                &loc,
                format!(
                    "Missing LF on last line, file might have been truncated at position {}.",
                    len + 1
                ),
            );
        }
        if !self.conds.is_empty() && !self.aborted {
            let loc = Loc {
                file: file.clone(),
                line: last_line.max(1),
            };
            self.tight(Level::Alert, &loc, "non-terminated '.if' block.");
        }
        if self.diags.iter().filter(|d| d.is_alert()).count() > before {
            self.diags.push(Diagnostic::alert(
                None,
                format!("Error(s) found in configuration file : {name}"),
            ));
        }
    }

    /// Work that needs every file: notes on ACLs used before their
    /// declaration.
    pub(crate) fn finish(&mut self) {
        // Relative paths read after the files start where the process did.
        crate::sys::cfgdir::set_base(None);
        self.path_file = None;
        self.finish_userlists();
        self.finish_caches();
        self.finish_errorfiles();
        self.finish_reply_sections();
        self.finish_dispatch();
        self.finish_rings();
        self.finish_log_forwards();
        self.finish_bind_globals();
        self.check_filters();
        for (di, pi, name) in std::mem::take(&mut self.missing_acls) {
            let Some(def) = self
                .proxies
                .get(pi)
                .and_then(|p| p.acls.iter().find(|a| a.name == name))
            else {
                continue;
            };
            let note = format!(
                " ACL '{name}' is declared later, at {}: an ACL must be declared before the rules that use it.",
                def.loc
            );
            if let Some(d) = self.diags.get_mut(di) {
                d.message.push_str(&note);
            }
        }
    }

    fn active(&self) -> bool {
        self.conds.iter().all(|c| c.branch == Branch::Active)
    }

    fn cond_eval(
        &mut self,
        loc: &Loc,
        words: &[String],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Branch {
        let text = words[1..].join(" ");
        match cond::eval(&text, env) {
            Ok(true) => Branch::Active,
            Ok(false) => Branch::Waiting,
            Err(e) => {
                let line = format!("{} {text}", words[0]);
                let (shown, caret) =
                    crate::config::lexer::caret_line(&line, words[0].len() + 1 + e.pos);
                let msg = format!(
                    "{} in '{}' at position {}:\n  {shown}\n  {:>width$}",
                    e.message,
                    words[0],
                    e.pos + 1,
                    "^",
                    width = caret + 1
                );
                self.tight(Level::Alert, loc, msg);
                Branch::Done
            }
        }
    }

    /// `.if` / `.elif` / `.else` / `.endif`.
    fn conditional(&mut self, loc: &Loc, words: &[String], env: &dyn Fn(&str) -> Option<String>) {
        let d = words[0].as_str();
        if matches!(d, ".else" | ".endif")
            && let Some(extra) = words.get(1)
        {
            return self.tight(
                Level::Alert,
                loc,
                format!("Unexpected argument '{extra}' for '{d}'."),
            );
        }
        if d == ".if" {
            if self.conds.len() >= MAX_NESTED_CONDS {
                self.tight(
                    Level::Alert,
                    loc,
                    format!("too many nested '.if', max is {MAX_NESTED_CONDS}."),
                );
                self.conds.push(CondFrame {
                    branch: Branch::Done,
                    else_seen: false,
                });
                return;
            }
            let branch = if self.active() {
                self.cond_eval(loc, words, env)
            } else {
                Branch::Skip
            };
            self.conds.push(CondFrame {
                branch,
                else_seen: false,
            });
            return;
        }
        let Some(top) = self.conds.last().copied() else {
            return self.tight(
                Level::Alert,
                loc,
                format!("lone '{d}' with no matching '.if'."),
            );
        };
        match d {
            ".endif" => {
                self.conds.pop();
            }
            _ if top.else_seen => {
                self.tight(
                    Level::Alert,
                    loc,
                    format!("'{d}' after '.else' is not permitted."),
                );
            }
            ".else" => {
                let branch = match top.branch {
                    Branch::Waiting => Branch::Active,
                    Branch::Skip => Branch::Skip,
                    _ => Branch::Done,
                };
                if let Some(f) = self.conds.last_mut() {
                    *f = CondFrame {
                        branch,
                        else_seen: true,
                    };
                }
            }
            _ => {
                let branch = match top.branch {
                    Branch::Waiting => {
                        // Evaluate as if the enclosing blocks were active.
                        let saved = self.conds.pop();
                        let b = self.cond_eval(loc, words, env);
                        if let Some(f) = saved {
                            self.conds.push(f);
                        }
                        b
                    }
                    Branch::Skip => Branch::Skip,
                    _ => Branch::Done,
                };
                if let Some(f) = self.conds.last_mut() {
                    f.branch = branch;
                }
            }
        }
    }

    fn statement(&mut self, loc: &Loc, words: &[String]) {
        // `default-path` follows each file to its directory.
        if self.path_file.as_ref() != Some(&loc.file) {
            crate::sys::cfgdir::set_base(self.default_path.base(&loc.file));
            self.path_file = Some(loc.file.clone());
        }
        // Where the pattern files a statement reads are used from.
        crate::sample::patref::at(&loc.file, loc.line);
        crate::sample::stick::at(&loc.file, loc.line);
        let first = words[0].as_str();
        if first.starts_with('.') {
            return self.directive(loc, words);
        }
        let header = kw::SECTIONS.contains(&first);
        let lacked =
            kw::UNSUPPORTED_SECTIONS.contains(&first) || kw::haproxy_has(kw::Kind::Section, first);
        self.statements.push(Statement {
            loc: loc.clone(),
            words: words.to_vec(),
            header: header || lacked,
        });
        if header {
            return self.start_section(loc, words);
        }
        if lacked {
            self.alert(
                loc,
                format!("'{first}' sections are not supported by sluice yet"),
            );
            self.section = Section::Skip;
            return;
        }
        match self.section {
            Section::None => self.tight(
                Level::Alert,
                loc,
                format!("unknown keyword '{first}' out of section."),
            ),
            Section::Skip => {}
            Section::Global => self.global_line(loc, words),
            Section::Userlist(i) => self.userlist_line(i, loc, words),
            Section::Resolvers(i) => self.resolvers_line(i, loc, words),
            Section::Peers(i) => self.peers_line(i, loc, words),
            Section::Cache(i) => self.cache_line(i, loc, words),
            Section::Mailers(i) => self.mailers_line(i, loc, words),
            Section::HttpErrors(i) => self.http_errors_line(i, loc, words),
            Section::FcgiApp(i) => self.fcgi_app_line(i, loc, words),
            Section::Ring(i) => self.ring_line(i, loc, words),
            Section::LogForward(i) => self.log_forward_line(i, loc, words),
            Section::Defaults(_) | Section::Proxy(_) => self.proxy_line(loc, words),
        }
    }

    /// `.notice` / `.warning` / `.alert` / `.diag`.
    fn directive(&mut self, loc: &Loc, words: &[String]) {
        let level = match words[0].as_str() {
            ".notice" => Level::Notice,
            ".warning" => Level::Warning,
            ".alert" => Level::Alert,
            // Only shown by HAProxy's -dD diagnostic mode.
            ".diag" => return,
            other => {
                let msg = format!("unknown directive '{other}'.");
                return self.tight(Level::Alert, loc, msg);
            }
        };
        if let Some(extra) = words.get(2) {
            let msg = format!(
                "Unexpected argument '{extra}' for '{}'. Use quotes if the message should contain spaces.",
                words[0]
            );
            return self.tight(Level::Alert, loc, msg);
        }
        let text = words.get(1).map_or("", String::as_str);
        self.tight(level, loc, format!("'{text}'."));
        if level == Level::Alert {
            // HAProxy stops reading the configuration at an `.alert`.
            self.aborted = true;
        }
    }

    /// The `defaults` section named `name` for proxy `pname`, or the
    /// HAProxy error.
    fn named_defaults(&mut self, loc: &Loc, name: &str, what: &str) -> Option<usize> {
        let found: Vec<usize> = self
            .defaults
            .iter()
            .enumerate()
            .filter(|(_, d)| d.name == name)
            .map(|(i, _)| i)
            .collect();
        match found.as_slice() {
            [] => {
                self.alert(
                    loc,
                    format!("defaults section '{name}' not found for {what}."),
                );
                None
            }
            [one] => {
                let one = *one;
                self.defaults[one].referenced = true;
                Some(one)
            }
            [a, b, ..] => {
                let msg = format!(
                    "ambiguous defaults section name '{name}' referenced by {what} exists at least at {} and {}.",
                    self.defaults[*a].loc, self.defaults[*b].loc
                );
                self.alert(loc, msg);
                None
            }
        }
    }

    fn start_section(&mut self, loc: &Loc, words: &[String]) {
        let kind = match words[0].as_str() {
            "userlist" => return self.start_userlist(loc, words),
            "resolvers" => return self.start_resolvers(loc, words),
            "peers" => return self.start_peers(loc, words),
            "cache" => return self.start_cache(loc, words),
            "mailers" => return self.start_mailers(loc, words),
            "http-errors" => return self.start_http_errors(loc, words),
            "fcgi-app" => return self.start_fcgi_app(loc, words),
            "ring" => return self.start_ring(loc, words),
            "log-forward" => return self.start_log_forward(loc, words),
            "global" => {
                self.section = Section::Global;
                return;
            }
            "defaults" => return self.start_defaults(loc, words),
            "frontend" => ProxyKind::Frontend,
            "backend" => ProxyKind::Backend,
            _ => ProxyKind::Listen,
        };
        let kwd = kind.keyword();
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            self.alert(loc, format!("'{kwd}' expects an <id> argument"));
            self.section = Section::Skip;
            return;
        };
        if let Some(c) = bad_name_char(name) {
            self.alert(
                loc,
                format!("character '{c}' is not permitted in '{kwd}' name '{name}'."),
            );
        }
        let what = format!("{} '{name}'", type_str(kind));
        // Which defaults: `from <name>`, else the last section.
        let mut from = self.defaults.len().checked_sub(1);
        let mut explicit = false;
        match (words.get(2).map(String::as_str), words.get(3)) {
            (None, _) => {}
            (Some("from"), Some(d)) if !d.is_empty() => {
                explicit = true;
                from = self.named_defaults(loc, d, &what);
                if let Some(extra) = words.get(4) {
                    self.alert(
                        loc,
                        format!("'{kwd} {name}' : unexpected argument '{extra}'."),
                    );
                }
            }
            (Some("from"), _) => {
                self.alert(
                    loc,
                    format!("'{kwd} {name}' : 'from' expects a defaults section name."),
                );
            }
            (Some(_), _) => {
                self.alert(
                    loc,
                    "please use the 'bind' keyword for listening addresses.",
                );
            }
        }
        if !explicit
            && let Some(d) = from.and_then(|i| self.defaults.get(i))
            && d.referenced
        {
            let msg = format!(
                "defaults section '{}' (declared at {}) is explicitly referenced by another proxy and implicitly used here. To avoid any ambiguity don't mix both usage. Add a last defaults section not explicitly used or always use explicit references.",
                d.name, d.loc
            );
            // An [ALERT] in HAProxy that does not fail the check: sluice
            // reports it as a warning so that -c agrees on the outcome.
            self.warn(loc, msg);
        }
        // A frontend and a backend may share a name; overlapping
        // capabilities may not.
        let clash = self.proxies.iter().find(|p| {
            p.name == *name
                && ((p.kind.has_frontend() && kind.has_frontend())
                    || (p.kind.has_backend() && kind.has_backend()))
        });
        if let Some(other) = clash {
            let msg = format!(
                "Parsing [{loc}]: {} '{name}' has the same name as {} '{}' declared at {}.",
                type_str(kind),
                type_str(other.kind),
                other.name,
                other.loc
            );
            self.diags.push(Diagnostic::alert(Some(loc.clone()), msg));
        }
        let (d, sd) = match from.and_then(|i| self.defaults.get(i)) {
            Some(d) => (d.proxy.clone(), d.server.clone()),
            None => (default_template(), ServerDefaults::default()),
        };
        let mut p = Proxy::new(name.clone(), kind, loc.clone());
        p.mode = d.mode;
        p.timeouts = d.timeouts;
        p.balance = d.balance.clone();
        p.hash_type = d.hash_type;
        p.allbackups = d.allbackups;
        p.log_health_checks = d.log_health_checks;
        p.accept_invalid_req = d.accept_invalid_req;
        p.accept_invalid_resp = d.accept_invalid_resp;
        p.h1_case_bogus_client = d.h1_case_bogus_client;
        p.h1_case_bogus_server = d.h1_case_bogus_server;
        p.fullconn = d.fullconn;
        p.disabled = d.disabled;
        p.load_server_state = d.load_server_state;
        p.server_state_file_name = d.server_state_file_name.clone();
        p.check_type = d.check_type;
        p.http_check = crate::config::model::HttpCheck {
            inherited: true,
            ..d.http_check.clone()
        };
        p.tcp_check = d.tcp_check.clone();
        p.email_alert = d.email_alert.clone();
        p.backlog = d.backlog;
        p.external_check = d.external_check.clone();
        p.retries = d.retries;
        p.redispatch = d.redispatch;
        p.retry_on = d.retry_on;
        p.http_reuse = d.http_reuse;
        p.conn_mode = d.conn_mode;
        p.ignore_probes = d.ignore_probes;
        p.buffer_request = d.buffer_request;
        p.forwardfor = d.forwardfor.clone();
        p.tcpka = d.tcpka;
        p.errorfiles = d.errorfiles.clone();
        p.extras = d.extras.clone();
        p.stats = d.stats.clone();
        if kind.has_frontend() {
            p.monitor_uri = d.monitor_uri.clone();
        }
        p.log = d.log.clone();
        // HAProxy copies the algorithms and types of `defaults`, never
        // its `offload` (which it ignores there).
        p.compression = d.compression.clone().map(|c| Compression {
            offload: false,
            ..c
        });
        if kind.has_frontend() {
            p.maxconn = d.maxconn;
            p.default_backend = d.default_backend.clone();
            p.unique_id_format = d.unique_id_format.clone();
            p.unique_id_header = d.unique_id_header.clone();
        }
        crate::sample::stick::in_proxy(name, false);
        self.proxies.push(p);
        self.server_defaults.push(sd);
        self.section = Section::Proxy(self.proxies.len() - 1);
    }

    /// `defaults [<name>] [from <defaults>]`: a new defaults section starts
    /// from the built-in values, or from the named section.
    fn start_defaults(&mut self, loc: &Loc, words: &[String]) {
        let name = words.get(1).cloned().unwrap_or_default();
        if let Some(c) = bad_name_char(&name) {
            self.alert(
                loc,
                format!("character '{c}' is not permitted in 'defaults' name '{name}'."),
            );
        }
        let mut set = DefaultsSet {
            name: name.clone(),
            loc: loc.clone(),
            proxy: default_template(),
            server: ServerDefaults::default(),
            referenced: false,
        };
        match (words.get(2).map(String::as_str), words.get(3)) {
            (None, _) => {}
            (Some("from"), Some(d)) if !d.is_empty() => {
                let what = format!("defaults '{name}'");
                if let Some(i) = self.named_defaults(loc, d, &what) {
                    set.proxy = self.defaults[i].proxy.clone();
                    set.server = self.defaults[i].server.clone();
                }
            }
            (Some(other), _) => {
                self.alert(
                    loc,
                    format!("'defaults {name}' : unexpected argument '{other}'."),
                );
            }
        }
        crate::sample::stick::in_proxy(&name, true);
        self.defaults.push(set);
        self.section = Section::Defaults(self.defaults.len() - 1);
    }

    // ---------------------------------------------------------------- global
}

fn stop(msg: &str) -> &'static str {
    if msg.ends_with('?') { "" } else { "." }
}

/// HAProxy's `proxy_type_str()`.
pub(crate) fn type_str(kind: ProxyKind) -> &'static str {
    match kind {
        ProxyKind::Frontend => "frontend",
        ProxyKind::Backend => "backend",
        ProxyKind::Listen => "listener",
    }
}
