//! Statements to the model: section tracking, `defaults` inheritance and the
//! keyword handlers of each section kind. Every error is reported and
//! parsing goes on, so one run lists all problems.

use std::path::PathBuf;
use std::sync::Arc;

use crate::acl::parse::{
    PREDEFINED, PREDEFINED_UNSUPPORTED, check_acl_name, parse_acl, parse_condition_at, predefined,
};
use crate::acl::{AclDef, Condition};
use crate::config::addr::{self, Family, Resolver};
use crate::config::cond;
use crate::config::diag::{Diagnostic, Level};
use crate::config::keywords as kw;
use crate::config::lexer::{LexCtx, split_line_raw};
use crate::config::model::*;
use crate::config::suggest;
use crate::config::units::{parse_time, parse_u32, time_error_message};

mod cookiekw;
mod lbkw;
mod legacykw;
mod retrykw;
mod sslkw;
mod tcpkw;

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
    /// Inside a section we cannot use (already reported once).
    Skip,
}

impl Section {
    fn name(self, proxies: &[Proxy]) -> &'static str {
        match self {
            Section::None | Section::Skip => "",
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
    /// `ssl` and its options (None: plain TCP).
    pub(crate) tls: Option<crate::tls::upstream::ServerTlsOpts>,
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
            tls: None,
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
            proxies: Vec::new(),
            pending: Vec::new(),
            statements: Vec::new(),
            aborted: false,
            defaults: Vec::new(),
            server_defaults: Vec::new(),
            section: Section::None,
            conds: Vec::new(),
            resolve,
            env: None,
            raw_words: Vec::new(),
            missing_acls: Vec::new(),
            missing_acl: None,
            scratch: default_template(),
            legacy_warned: Vec::new(),
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
            let ctx = LexCtx {
                file: name,
                line: loc.line,
                section: self.section.name(&self.proxies),
                env,
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
                self.conditional(&loc, &words, env);
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
        let first = words[0].as_str();
        if first.starts_with('.') {
            return self.directive(loc, words);
        }
        let header = kw::SECTIONS.contains(&first);
        self.statements.push(Statement {
            loc: loc.clone(),
            words: words.to_vec(),
            header: header || kw::UNSUPPORTED_SECTIONS.contains(&first),
        });
        if header {
            return self.start_section(loc, words);
        }
        if kw::UNSUPPORTED_SECTIONS.contains(&first) {
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
        p.fullconn = d.fullconn;
        p.check_type = d.check_type;
        p.http_check = crate::config::model::HttpCheck {
            inherited: true,
            ..d.http_check.clone()
        };
        p.tcp_check = d.tcp_check.clone();
        p.retries = d.retries;
        p.redispatch = d.redispatch;
        p.retry_on = d.retry_on;
        p.http_reuse = d.http_reuse;
        p.conn_mode = d.conn_mode;
        p.ignore_probes = d.ignore_probes;
        p.forwardfor = d.forwardfor.clone();
        p.tcpka = d.tcpka;
        p.errorfiles = d.errorfiles.clone();
        p.stats = d.stats.clone();
        if kind.has_frontend() {
            p.monitor_uri = d.monitor_uri.clone();
        }
        p.log = d.log.clone();
        if kind.has_frontend() {
            p.maxconn = d.maxconn;
            p.default_backend = d.default_backend.clone();
        }
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
        self.defaults.push(set);
        self.section = Section::Defaults(self.defaults.len() - 1);
    }

    // ---------------------------------------------------------------- global

    fn global_line(&mut self, loc: &Loc, words: &[String]) {
        let k = words[0].as_str();
        let arg = words.get(1).map(String::as_str);
        match k {
            "maxconn" | "nbthread" => {
                let Some(n) = arg.and_then(parse_u32).filter(|n| *n > 0) else {
                    return self.alert(
                        loc,
                        format!(
                            "'{k}' expects a positive integer argument (got '{}').",
                            arg.unwrap_or("")
                        ),
                    );
                };
                if k == "maxconn" {
                    self.global.maxconn = Some(n);
                } else {
                    self.global.nbthread = Some(n);
                }
            }
            "nbproc" => {
                let shown = arg.unwrap_or("");
                self.warn(
                    loc,
                    format!(
                        "nbproc is not supported by sluice: it runs one process and uses threads (see 'nbthread'); 'nbproc {shown}' is ignored."
                    ),
                );
            }
            "tune.bufsize" => match arg.and_then(parse_u32) {
                // HAProxy takes a plain integer here (no size units); below
                // 1 KiB no request head would fit.
                Some(n) if n >= 1024 => self.global.tune_bufsize = Some(n),
                _ => self.alert(
                    loc,
                    "'tune.bufsize' expects a positive integer argument (at least 1024).",
                ),
            },
            "tune.maxrewrite" => match arg.and_then(parse_u32) {
                Some(n) => self.global.tune_maxrewrite = Some(n),
                None => self.alert(
                    loc,
                    "'tune.maxrewrite' expects a positive integer argument.",
                ),
            },
            "tune.h2.header-table-size"
            | "tune.h2.initial-window-size"
            | "tune.h2.max-concurrent-streams"
            | "tune.h2.max-frame-size" => self.tune_h2(loc, k, arg),
            "daemon" => self.global.daemon = true,
            "nosplice" => self.global.splice.disabled = true,
            "tune.pipesize" | "maxpipes" => match arg.and_then(parse_u32).filter(|n| *n > 0) {
                Some(n) if k == "maxpipes" => self.global.splice.maxpipes = Some(n),
                Some(n) => self.global.splice.pipesize = Some(n),
                None => self.alert(loc, format!("'{k}' expects a positive integer argument.")),
            },
            "hard-stop-after" => {
                let v = arg.unwrap_or("");
                match parse_time(v) {
                    Ok(d) => self.global.hard_stop_after = Some(d),
                    Err(e) => self.alert(loc, time_error_message("hard-stop-after", v, &e)),
                }
            }
            "user" | "group" => match arg.filter(|a| !a.is_empty()) {
                Some(n) => {
                    let spec = Some(IdSpec::Name(n.to_string()));
                    if k == "user" {
                        self.global.user = spec;
                        self.global.user_loc = Some(loc.clone());
                    } else {
                        self.global.group = spec;
                        self.global.group_loc = Some(loc.clone());
                    }
                }
                None => self.alert(loc, format!("'{k}' expects a {k} name as an argument.")),
            },
            "uid" | "gid" => match arg.and_then(parse_u32) {
                Some(n) => {
                    if k == "uid" {
                        self.global.user = Some(IdSpec::Id(n));
                    } else {
                        self.global.group = Some(IdSpec::Id(n));
                    }
                }
                None => self.alert(
                    loc,
                    format!(
                        "'{k}' expects an integer argument (got '{}').",
                        arg.unwrap_or("")
                    ),
                ),
            },
            "chroot" => match arg.filter(|a| !a.is_empty()) {
                Some(d) => self.global.chroot = Some(PathBuf::from(d)),
                None => self.alert(loc, "'chroot' expects a directory as an argument."),
            },
            "ulimit-n" => match arg.and_then(parse_u32).filter(|n| *n > 0) {
                Some(n) => self.global.ulimit_n = Some(n),
                None => self.alert(
                    loc,
                    format!(
                        "'ulimit-n' expects a positive integer argument (got '{}').",
                        arg.unwrap_or("")
                    ),
                ),
            },
            "cpu-map" => match parse_cpu_map(&words[1..]) {
                Ok(m) => self.global.cpu_map.push(m),
                Err(e) => self.alert(loc, format!("cpu-map: {e}")),
            },
            "zero-warning" => self.global.zero_warning = true,
            "pidfile" => match arg.filter(|a| !a.is_empty()) {
                Some(p) => self.global.pidfile = Some(PathBuf::from(p)),
                None => self.alert(loc, "'pidfile' expects a file name as an argument."),
            },
            "node" => match arg {
                Some(n) => self.global.node = Some(n.to_string()),
                None => self.alert(loc, "'node' expects a name as an argument."),
            },
            "description" => {
                if words.len() < 2 {
                    self.alert(loc, "'description' expects a string argument.");
                } else {
                    self.global.description = Some(words[1..].join(" "));
                }
            }
            "stats" => self.global_stats(loc, words),
            "log" => match self
                .log_words(words)
                .and_then(|w| crate::config::log::parse_log(&w))
            {
                Ok(crate::config::log::LogLine::Target(t)) => self.global.log.targets.push(t),
                Ok(crate::config::log::LogLine::Global) => {
                    self.alert(loc, "log : 'global' is only allowed in proxies")
                }
                Err(e) => self.alert(loc, e),
            },
            "log-tag" => match crate::config::log::parse_log_tag(words) {
                Ok(t) => self.global.log.tag = Some(t),
                Err(e) => self.alert(loc, e),
            },
            "ssl-default-bind-options"
            | "ssl-default-bind-ciphers"
            | "ssl-default-bind-ciphersuites"
            | "ssl-default-server-options"
            | "ssl-default-server-ciphers"
            | "ssl-default-server-ciphersuites"
            | "ssl-server-verify"
            | "crt-base"
            | "ca-base" => self.global_ssl(loc, words),
            _ if kw::GLOBAL_TUNE_IGNORED.iter().any(|(n, _)| *n == k) => {
                let why = kw::GLOBAL_TUNE_IGNORED
                    .iter()
                    .find_map(|(n, why)| (*n == k).then_some(*why))
                    .unwrap_or_default();
                // A notice, not a warning: nothing is lost by ignoring it,
                // and `zero-warning` configurations keep starting.
                self.diags.push(Diagnostic::parsing(
                    Level::Notice,
                    loc,
                    format!("'{k}' is accepted and ignored: {why}."),
                ));
            }
            _ if k.starts_with("tune.")
                || kw::GLOBAL_UNSUPPORTED.contains(&k)
                || kw::haproxy_has(kw::Kind::Global, k) =>
            {
                self.unsupported(loc, k)
            }
            _ => {
                let sugg = suggest::suffix(k, kw::global_keywords());
                self.alert(
                    loc,
                    format!("unknown keyword '{k}' in 'global' section{sugg}"),
                );
            }
        }
    }

    fn global_stats(&mut self, loc: &Loc, words: &[String]) {
        match words.get(1).map(String::as_str) {
            Some("socket") => self.stats_socket(loc, words),
            Some("timeout") => {
                let v = words.get(2).map_or("", String::as_str);
                match parse_time(v) {
                    Ok(d) if !d.is_zero() => self.global.stats_timeout = Some(d),
                    Ok(_) => self.alert(loc, "'stats timeout' expects a positive value"),
                    Err(e) => self.alert(loc, time_error_message("stats timeout", v, &e)),
                }
            }
            Some(sub @ ("maxconn" | "bind-process")) => {
                let what = format!("stats {sub}");
                self.unsupported(loc, &what)
            }
            other => self.alert(
                loc,
                format!(
                    "'stats' only supports 'socket', 'maxconn', 'bind-process' and 'timeout' (got '{}').",
                    other.unwrap_or("")
                ),
            ),
        }
    }

    fn stats_socket(&mut self, loc: &Loc, words: &[String]) {
        let Some(target) = words.get(2).filter(|t| !t.is_empty()) else {
            return self.alert(loc, "'stats socket' requires a path or an address.");
        };
        let target = match self.addr_word(target) {
            Ok(t) => t,
            Err(e) => return self.alert(loc, format!("'stats socket' : {e}")),
        };
        let target = &target;
        let mut sock = StatsSocket {
            path: PathBuf::from(target),
            mode: None,
            uid: None,
            gid: None,
            level: CliLevel::default(),
            loc: loc.clone(),
            tcp: None,
            expose_fd: false,
            fd: None,
        };
        if let Some(n) = target.strip_prefix("fd@") {
            match addr::fd_ref_checked(n) {
                Ok(Ok(fd)) => sock.fd = Some(fd),
                Ok(Err(why)) => {
                    self.unresolved_fd(loc, "stats socket", target, &why);
                    sock.fd = Some(addr::UNRESOLVED_FD);
                }
                Err(e) => return self.alert(loc, format!("'stats socket' : {e} in '{target}'")),
            }
        } else if let Some(path) = target.strip_prefix("unix@") {
            sock.path = PathBuf::from(path);
        } else if target.starts_with("ipv4@") || target.starts_with("ipv6@") {
            match addr::bind_addrs(target, target, self.resolve) {
                Ok(a) if a.len() == 1 => sock.tcp = a.first().copied(),
                Ok(_) => {
                    return self.alert(loc, "'stats socket' : port ranges are not allowed.");
                }
                Err(e) => return self.alert(loc, format!("'stats socket' : {e}")),
            }
        } else if !target.contains('/') && target.contains(':') {
            // No slash: HAProxy reads `host:port` as a TCP address.
            match addr::bind_addrs(target, target, self.resolve) {
                Ok(a) if a.len() == 1 => sock.tcp = a.first().copied(),
                Ok(_) => {
                    return self.alert(loc, "'stats socket' : port ranges are not allowed.");
                }
                Err(e) => return self.alert(loc, format!("'stats socket' : {e}")),
            }
        }
        let mut i = 3;
        let mut ok = true;
        while let Some(w) = words.get(i) {
            let val = words.get(i + 1).map(String::as_str);
            match w.as_str() {
                "level" => match val {
                    Some("user") => sock.level = CliLevel::User,
                    Some("operator") => sock.level = CliLevel::Operator,
                    Some("admin") => sock.level = CliLevel::Admin,
                    _ => {
                        ok = false;
                        self.alert(
                            loc,
                            "'stats socket' : 'level' only supports 'user', 'operator', and 'admin'.",
                        );
                    }
                },
                "mode" => {
                    match val.and_then(|v| u32::from_str_radix(v, 8).ok().filter(|m| *m <= 0o7777))
                    {
                        Some(m) if sock.tcp.is_none() => sock.mode = Some(m),
                        Some(_) => {
                            ok = false;
                            self.alert(
                                loc,
                                "'stats socket' : 'mode' only applies to UNIX sockets.",
                            );
                        }
                        None => {
                            ok = false;
                            self.alert(
                                loc,
                                format!(
                                    "'stats socket' : 'mode' : missing or invalid mode '{}' (octal integer expected)",
                                    val.unwrap_or("")
                                ),
                            );
                        }
                    }
                }
                "uid" | "gid" | "user" | "group" => match socket_owner(w, val) {
                    Ok(_) if sock.tcp.is_some() => {
                        ok = false;
                        self.alert(
                            loc,
                            format!("'stats socket' : '{w}' only applies to UNIX sockets."),
                        );
                    }
                    Ok(id) if w == "uid" || w == "user" => sock.uid = Some(id),
                    Ok(id) => sock.gid = Some(id),
                    Err(e) => {
                        ok = false;
                        self.alert(loc, format!("'stats socket' : {e}"));
                    }
                },
                "expose-fd" if val == Some("listeners") => sock.expose_fd = true,
                "expose-fd" => {
                    ok = false;
                    self.alert(
                        loc,
                        "'stats socket' : 'expose-fd' only supports 'listeners'.",
                    );
                }
                other if kw::BIND_UNSUPPORTED.contains(&other) => {
                    ok = false;
                    self.alert(
                        loc,
                        format!("'stats socket' : '{other}' option is not supported by sluice yet"),
                    );
                    // The loop's step skips its probable value, which
                    // would otherwise raise a second error.
                }
                other => {
                    ok = false;
                    let sugg = suggest::suffix(
                        other,
                        ["level", "mode", "uid", "gid", "user", "group", "expose-fd"],
                    );
                    self.alert(
                        loc,
                        format!("'stats socket' : unknown keyword '{other}'{sugg}"),
                    );
                }
            }
            i += 2;
        }
        if sock.expose_fd && sock.tcp.is_some() {
            self.warn(
                loc,
                "'stats socket' : 'expose-fd listeners' is ignored on a TCP socket (descriptors pass over UNIX sockets only).",
            );
        }
        if ok {
            self.global.stats_sockets.push(sock);
        }
    }

    // ----------------------------------------------------------------- proxy

    fn proxy_kind(&self) -> Option<ProxyKind> {
        match self.section {
            Section::Proxy(i) => self.proxies.get(i).map(|p| p.kind),
            _ => None,
        }
    }

    fn px(&mut self) -> &mut Proxy {
        match self.section {
            Section::Proxy(i) if i < self.proxies.len() => &mut self.proxies[i],
            Section::Defaults(i) if i < self.defaults.len() => &mut self.defaults[i].proxy,
            _ => &mut self.scratch,
        }
    }

    /// Is `keyword` usable here? `def`: allowed in defaults; `fe`/`be`:
    /// meaningful with that capability. Reports and returns false if not.
    fn cap(&mut self, loc: &Loc, keyword: &str, def: bool, fe: bool, be: bool) -> bool {
        let Some(kind) = self.proxy_kind() else {
            if !def {
                self.alert(
                    loc,
                    format!("'{keyword}' not allowed in 'defaults' section."),
                );
            }
            return def;
        };
        if (fe && kind.has_frontend()) || (be && kind.has_backend()) {
            return true;
        }
        let name = self.px().name.clone();
        let missing = if fe { "no frontend" } else { "no backend" };
        self.warn(
            loc,
            format!(
                "'{keyword}' ignored because {} '{name}' has {missing} capability.",
                type_str(kind)
            ),
        );
        false
    }

    fn proxy_line(&mut self, loc: &Loc, words: &[String]) {
        let (neg, words) = if words[0] == "no" && words.len() > 1 {
            (true, &words[1..])
        } else {
            (false, words)
        };
        let k = words[0].as_str();
        if neg && k == "log" && words.len() == 1 {
            // `no log`: this proxy logs nowhere (not even globally).
            let l = &mut self.px().log;
            l.global = false;
            l.targets.clear();
            return;
        }
        if neg && k != "option" {
            let msg = format!("negation/default is not supported for {k}.");
            self.diags
                .push(Diagnostic::parsing_tight(Level::Alert, loc, msg));
            return;
        }
        if k == "default" && words.get(1).is_some_and(|w| w == "option") {
            return self.unsupported(loc, "default option");
        }
        let arg = words.get(1).map_or("", String::as_str);
        match k {
            "mode" => self.kw_mode(loc, arg),
            "timeout" => self.kw_timeout(loc, words),
            "clitimeout" | "srvtimeout" | "contimeout" => self.kw_legacy_timeout(loc, words),
            _ if legacykw::is_legacy(k) => self.kw_legacy_rewrite(loc, words),
            "balance" => self.kw_balance(loc, words),
            "hash-type" => self.kw_hash_type(loc, words),
            "fullconn" => self.kw_fullconn(loc, words),
            "http-check" => self.kw_http_check(loc, words),
            "tcp-check" => self.kw_tcp_check(loc, words),
            "maxconn" => {
                if self.cap(loc, k, true, true, false) {
                    match parse_u32(arg) {
                        Some(n) => self.px().maxconn = Some(n),
                        None => self.alert(
                            loc,
                            format!("'{k}' expects an integer argument (got '{arg}')."),
                        ),
                    }
                }
            }
            "retries" => {
                if self.cap(loc, k, true, false, true) {
                    match parse_u32(arg) {
                        Some(n) => self.px().retries = n,
                        None => self.alert(
                            loc,
                            format!("'{k}' expects an integer argument (got '{arg}')."),
                        ),
                    }
                }
            }
            "retry-on" => self.kw_retry_on(loc, words),
            "cookie" => self.kw_cookie(loc, words),
            "http-reuse" => {
                if self.cap(loc, k, true, false, true) {
                    let v = match arg {
                        "never" => HttpReuse::Never,
                        "safe" => HttpReuse::Safe,
                        "aggressive" => HttpReuse::Aggressive,
                        "always" => HttpReuse::Always,
                        _ => {
                            return self.alert(
                                loc,
                                "'http-reuse' only supports 'never', 'safe', 'aggressive', 'always'",
                            );
                        }
                    };
                    self.px().http_reuse = v;
                }
            }
            "option" => self.kw_option(loc, words, neg),
            "stats" => self.kw_stats(loc, words),
            "bind" => self.kw_bind(loc, words),
            "acl" => self.kw_acl(loc, words),
            "use_backend" => self.kw_use_backend(loc, words),
            "default_backend" => {
                if self.cap(loc, k, true, true, false) {
                    if arg.is_empty() {
                        return self.alert(loc, "'default_backend' expects a backend name.");
                    }
                    if words.len() > 2 {
                        return self.alert(
                            loc,
                            format!("'default_backend' : unexpected argument '{}'.", words[2]),
                        );
                    }
                    self.px().default_backend = Some((arg.to_string(), loc.clone()));
                }
            }
            "http-request" => self.kw_http_request(loc, words),
            "redirect" => self.kw_redirect(loc, words),
            "monitor-uri" => self.kw_monitor_uri(loc, words),
            "capture" => self.kw_capture(loc, words),
            "monitor" => self.kw_monitor(loc, words),
            "tcp-request" => self.kw_tcp_request(loc, words),
            "http-response" => self.kw_http_response(loc, words),
            "errorfile" => self.kw_errorfile(loc, words),
            "server" => self.kw_server(loc, words),
            "default-server" => self.kw_default_server(loc, words),
            "log" | "log-format" | "log-tag" => self.kw_log(loc, words),
            _ if kw::PROXY_UNSUPPORTED.contains(&k) || kw::haproxy_has(kw::Kind::Proxy, k) => {
                self.unsupported(loc, k)
            }
            _ => {
                let section = match self.proxy_kind() {
                    Some(kind) => kind.keyword(),
                    None => "defaults",
                };
                let sugg = suggest::suffix(k, kw::proxy_keywords());
                self.alert(
                    loc,
                    format!("unknown keyword '{k}' in '{section}' section{sugg}"),
                );
            }
        }
    }

    fn kw_mode(&mut self, loc: &Loc, arg: &str) -> Handled {
        match arg {
            "http" => self.px().mode = Mode::Http,
            "tcp" => self.px().mode = Mode::Tcp,
            "health" | "log" | "spop" => self.unsupported(loc, &format!("mode {arg}")),
            _ => self.alert(loc, format!("unknown proxy mode '{arg}'.")),
        }
    }

    fn set_timeout(&mut self, loc: &Loc, name: &str, value: &str) {
        // (field selector, frontend-side?, backend-side?)
        let (fe, be) = match name {
            "client" => (true, false),
            "http-request" | "http-keep-alive" | "tarpit" => (true, true),
            "server" | "connect" | "queue" | "check" | "tunnel" => (false, true),
            _ if kw::TIMEOUTS_UNSUPPORTED.contains(&name) => {
                return self.unsupported(loc, &format!("timeout {name}"));
            }
            _ => {
                return self.alert(
                    loc,
                    format!(
                        "'timeout' supports 'client', 'server', 'connect', 'check', 'queue', 'http-keep-alive', 'http-request', 'tunnel', 'tarpit', 'client-fin' and 'server-fin' (got '{name}')"
                    ),
                );
            }
        };
        let label = format!("timeout {name}");
        let d = match parse_time(value) {
            Ok(d) => d,
            Err(e) => return self.alert(loc, time_error_message(&label, value, &e)),
        };
        if let Some(kind) = self.proxy_kind()
            && !((fe && kind.has_frontend()) || (be && kind.has_backend()))
        {
            let pname = self.px().name.clone();
            return self.warn(
                loc,
                format!(
                    "'{label}' will be ignored because {} '{pname}' has no {} capability",
                    type_str(kind),
                    if be { "backend" } else { "frontend" }
                ),
            );
        }
        // 0 means "no timeout" (infinite), like an absent one.
        let v = (!d.is_zero()).then_some(d);
        let t = &mut self.px().timeouts;
        match name {
            "client" => t.client = v,
            "server" => t.server = v,
            "connect" => t.connect = v,
            "queue" => t.queue = v,
            "http-request" => t.http_request = v,
            "http-keep-alive" => t.http_keep_alive = v,
            "check" => t.check = v,
            "tarpit" => t.tarpit = v,
            _ => t.tunnel = v,
        }
    }

    fn kw_timeout(&mut self, loc: &Loc, words: &[String]) {
        let name = words.get(1).map_or("", String::as_str);
        let value = words.get(2).map_or("", String::as_str);
        if words.len() > 3 {
            return self.alert(
                loc,
                format!("'timeout {name}' : unexpected argument '{}'.", words[3]),
            );
        }
        self.set_timeout(loc, name, value);
    }

    /// HAProxy ≤ 2.0 aliases. HAProxy 2.6 refuses them with this text;
    /// sluice prints it as a warning and applies the value.
    fn kw_legacy_timeout(&mut self, loc: &Loc, words: &[String]) {
        let k = words[0].as_str();
        let modern = match k {
            "clitimeout" => "client",
            "srvtimeout" => "server",
            _ => "connect",
        };
        self.warn(
            loc,
            format!(
                "the '{k}' directive is not supported anymore since HAProxy 2.1. Use 'timeout {modern}'."
            ),
        );
        let value = words.get(1).map_or("", String::as_str);
        self.set_timeout(loc, modern, value);
    }

    /// `log`, `log-format`, `log-tag` in a proxy.
    fn kw_log(&mut self, loc: &Loc, words: &[String]) {
        use crate::config::log as lc;
        let k = words[0].as_str();
        match k {
            "log" => match self.log_words(words).and_then(|w| lc::parse_log(&w)) {
                Ok(lc::LogLine::Global) => self.px().log.global = true,
                Ok(lc::LogLine::Target(t)) => self.px().log.targets.push(t),
                Err(e) => self.alert(loc, e),
            },
            "log-tag" => match lc::parse_log_tag(words) {
                Ok(t) => self.px().log.tag = Some(t),
                Err(e) => self.alert(loc, e),
            },
            _ => match lc::parse_log_format(words) {
                Ok(f) => {
                    if let Some(kind) = self.proxy_kind()
                        && !kind.has_frontend()
                    {
                        let name = self.px().name.clone();
                        return self.warn(
                            loc,
                            format!(
                                "{} '{name}' : 'log-format' directive is ignored in backends.",
                                type_str(kind)
                            ),
                        );
                    }
                    self.px().log.format = Some(f)
                }
                Err(e) => self.alert(loc, e),
            },
        }
    }

    /// `option httplog [clf]`, `option tcplog`, `option dontlognull`,
    /// `option log-separate-errors`, `option logasap`.
    fn log_option(&mut self, loc: &Loc, words: &[String], neg: bool) {
        use crate::config::log as lc;
        let name = words[1].as_str();
        if matches!(name, "httplog" | "tcplog") {
            if neg {
                return self.tight(
                    Level::Alert,
                    loc,
                    format!("negation/default is not supported for option '{name}'."),
                );
            }
            let f = if name == "tcplog" {
                if words.len() > 2 {
                    return self.alert(loc, "'option tcplog' does not expect any argument.");
                }
                Ok(lc::LogFormatKind::Tcp)
            } else {
                lc::parse_httplog(words)
            };
            match f {
                Ok(f) => self.px().log.format = Some(f),
                Err(e) => self.alert(loc, e),
            }
            return;
        }
        if words.len() > 2 {
            return self.alert(
                loc,
                format!("'option {name}' does not expect any argument."),
            );
        }
        if !self.cap(loc, &format!("option {name}"), true, true, false) {
            return;
        }
        self.px().log.set_option(name, !neg);
    }

    fn kw_option(&mut self, loc: &Loc, words: &[String], neg: bool) {
        let Some(name) = words.get(1) else {
            return self.alert(loc, "'option' expects an option name.");
        };
        if matches!(
            name.as_str(),
            "httplog" | "tcplog" | "dontlognull" | "log-separate-errors" | "logasap"
        ) {
            return self.log_option(loc, words, neg);
        }
        if name == "forwardfor" {
            return self.forwardfor_option(loc, words, neg);
        }
        if name == "redispatch" {
            return self.redispatch_option(loc, words, neg);
        }
        if name == "persist" {
            return self.persist_option(loc, words, neg);
        }
        if self.lb_option(loc, words, neg) {
            return;
        }
        if let Some(done) = self.legacy_or_socket_option(loc, name, words, neg) {
            return done;
        }
        if let Some(req) = match name.as_str() {
            "accept-invalid-http-request" => Some(true),
            "accept-invalid-http-response" => Some(false),
            _ => None,
        } {
            if words.len() > 2 {
                return self.alert(
                    loc,
                    format!("'option {name}' does not expect any argument."),
                );
            }
            // The request side is the frontend's, the response side the
            // backend's, as in HAProxy.
            if self.cap(loc, &format!("option {name}"), true, req, !req) {
                let p = self.px();
                if req {
                    p.accept_invalid_req = !neg;
                } else {
                    p.accept_invalid_resp = !neg;
                }
            }
            return;
        }
        if name == "log-health-checks" {
            if words.len() > 2 {
                return self.alert(
                    loc,
                    "'option log-health-checks' does not expect any argument.",
                );
            }
            if self.cap(loc, "option log-health-checks", true, false, true) {
                self.px().log_health_checks = !neg;
            }
            return;
        }
        if name == "disable-h2-upgrade" {
            if words.len() > 2 {
                return self.alert(
                    loc,
                    "'option disable-h2-upgrade' does not expect any argument.",
                );
            }
            if self.cap(loc, "option disable-h2-upgrade", true, true, false) {
                self.px().disable_h2_upgrade = !neg;
            }
            return;
        }
        if name == "http-ignore-probes" {
            if words.len() > 2 {
                return self.alert(
                    loc,
                    "'option http-ignore-probes' does not expect any argument.",
                );
            }
            if self.cap(loc, "option http-ignore-probes", true, true, false) {
                self.px().ignore_probes = !neg;
            }
            return;
        }
        let mode = match name.as_str() {
            "http-keep-alive" => HttpConnMode::KeepAlive,
            "http-server-close" => HttpConnMode::ServerClose,
            "httpclose" => HttpConnMode::Close,
            n if kw::OPTIONS_UNSUPPORTED.contains(&n) || kw::haproxy_has(kw::Kind::Option, n) => {
                return self.unsupported(loc, &format!("option {n}"));
            }
            n => {
                let sugg = suggest::suffix(
                    n,
                    kw::OPTIONS_SUPPORTED
                        .iter()
                        .chain(kw::OPTIONS_UNSUPPORTED)
                        .copied(),
                );
                return self.alert(loc, format!("unknown option '{n}'{sugg}"));
            }
        };
        if words.len() > 2 {
            return self.alert(
                loc,
                format!("'option {name}' does not expect any argument."),
            );
        }
        let p = self.px();
        if !neg {
            p.conn_mode = mode;
        } else if p.conn_mode == mode {
            // Cancelling the current mode returns to HAProxy's default.
            p.conn_mode = HttpConnMode::KeepAlive;
        }
    }

    /// The section's stats page, enabled with the defaults if it was not.
    fn stats_page(&mut self) -> &mut StatsPage {
        self.px().stats.get_or_insert_with(StatsPage::enabled)
    }

    fn kw_stats(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "stats", true, true, true) {
            return;
        }
        let arg = words.get(2).filter(|a| !a.is_empty()).cloned();
        match words.get(1).map(String::as_str) {
            Some("enable") => {
                self.stats_page();
            }
            Some("uri") => match arg {
                Some(u) => self.stats_page().uri = u,
                None => self.alert(loc, "'uri' needs an URI prefix."),
            },
            Some("realm") => match arg {
                Some(r) => self.stats_page().realm = Some(r),
                None => self.alert(loc, "'realm' needs an realm name."),
            },
            Some("auth") => match arg.filter(|a| a.contains(':')) {
                Some(a) => self.stats_page().auth.push(a),
                None => self.alert(loc, "'auth' needs a user:password account."),
            },
            Some("refresh") => {
                let text = arg.unwrap_or_default();
                // A bare number is in seconds here.
                let secs = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
                    text.parse::<u64>().ok()
                } else {
                    crate::config::units::parse_time(&text)
                        .ok()
                        .map(|d| d.as_secs())
                };
                match secs {
                    Some(s) => self.stats_page().refresh = Some(s),
                    None => self.alert(loc, "'refresh' needs a valid interval."),
                }
            }
            Some("hide-version") => self.stats_page().hide_version = true,
            Some("show-legends") => self.stats_page().show_legends = true,
            Some("admin") => self.stats_admin(loc, words),
            Some(sub) if kw::STATS_PROXY_UNSUPPORTED.contains(&sub) => {
                self.unsupported(loc, &format!("stats {sub}"))
            }
            Some("socket" | "timeout" | "maxconn") => self.alert(
                loc,
                format!("'stats {}' is only allowed in 'global' section.", words[1]),
            ),
            _ => self.alert(
                loc,
                "'stats' expects 'admin', 'uri', 'realm', 'auth', 'scope', 'enable', 'hide-version', 'show-node', 'show-desc' or 'show-legends'.",
            ),
        }
    }

    /// `stats admin if|unless <cond>`: HAProxy's messages; the condition's
    /// ACLs are the section's, as for any rule.
    fn stats_admin(&mut self, loc: &Loc, words: &[String]) {
        if self.proxy_kind().is_none() {
            return self.alert(loc, "'stats admin' not allowed in 'defaults' section.");
        }
        if !matches!(words.get(2).map(String::as_str), Some("if" | "unless")) {
            return self.alert(
                loc,
                "'stats admin' requires either 'if' or 'unless' followed by a condition.",
            );
        }
        match self.condition(loc, &words[2..]) {
            Ok(c) => self.stats_page().admin.push(c),
            Err(e) => self.alert(
                loc,
                format!("error detected while parsing a 'stats admin' rule : {e}."),
            ),
        }
    }

    /// One `tune.h2.*` keyword, with HAProxy 2.6's bounds.
    fn tune_h2(&mut self, loc: &Loc, k: &str, arg: Option<&str>) {
        let (min, max) = match k {
            // HPACK's dynamic table: HAProxy caps it at 64 KiB.
            "tune.h2.header-table-size" => (0, 65536),
            // RFC 9113 §6.5.2: at most 2^31-1.
            "tune.h2.initial-window-size" => (0, (1 << 31) - 1),
            "tune.h2.max-concurrent-streams" => (1, u32::MAX),
            // RFC 9113 §6.5.2: 16384 to 2^24-1.
            _ => (16384, (1 << 24) - 1),
        };
        let Some(v) = arg.and_then(parse_u32).filter(|v| (min..=max).contains(v)) else {
            return self.alert(
                loc,
                format!("'{k}' expects a numeric value between {min} and {max}."),
            );
        };
        let t = &mut self.global.h2;
        let slot = match k {
            "tune.h2.header-table-size" => &mut t.header_table_size,
            "tune.h2.initial-window-size" => &mut t.initial_window_size,
            "tune.h2.max-concurrent-streams" => &mut t.max_concurrent_streams,
            _ => &mut t.max_frame_size,
        };
        *slot = Some(v);
    }

    fn kw_bind(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "bind", false, true, false) {
            return;
        }
        let Some(text) = words.get(1) else {
            return self.alert(
                loc,
                "'bind' expects {<path>|[addr1]:port1[-end1]}{,[addr]:port[-end]}... as arguments.",
            );
        };
        let (mut ok, tls, accept_proxy, proto) = match self.bind_options(loc, text, &words[2..]) {
            Ok((tls, proxy, proto)) => (true, tls, proxy, proto),
            Err(()) => (false, None, false, BindProto::Auto),
        };
        let mut binds = Vec::new();
        // HAProxy quotes the argument as written (variables unexpanded).
        let shown = self
            .raw_words
            .get(1)
            .cloned()
            .unwrap_or_else(|| text.clone());
        for item in text.split(',') {
            let item = match self.addr_word(item) {
                Ok(i) => i,
                Err(e) => {
                    ok = false;
                    self.alert(loc, format!("'bind' : {e}"));
                    continue;
                }
            };
            let item = item.as_str();
            // An inherited listening socket (systemd, a supervisor): checked
            // when sluice starts, where the descriptor exists.
            if let Some(n) = item.strip_prefix("fd@") {
                let fd = match addr::fd_ref_checked(n) {
                    Ok(Ok(fd)) => Ok(fd),
                    Ok(Err(why)) => {
                        self.unresolved_fd(loc, "bind", item, &why);
                        Ok(addr::UNRESOLVED_FD)
                    }
                    Err(e) => Err(e),
                };
                match fd {
                    Ok(fd) => binds.push(Bind {
                        text: item.to_string(),
                        addrs: Vec::new(),
                        fd: Some(fd),
                        loc: loc.clone(),
                        accept_proxy,
                        tls: tls.clone(),
                        proto,
                    }),
                    Err(e) => {
                        ok = false;
                        self.alert(loc, format!("'bind' : {e} in '{shown}'"));
                    }
                }
                continue;
            }
            match addr::bind_addrs(item, &shown, self.resolve) {
                Ok(addrs) => binds.push(Bind {
                    text: item.to_string(),
                    addrs,
                    fd: None,
                    loc: loc.clone(),
                    accept_proxy,
                    tls: tls.clone(),
                    proto,
                }),
                Err(e) => {
                    ok = false;
                    self.alert(loc, format!("'bind' : {e}"));
                }
            }
        }
        if !ok {
            // Keep a trace of the line so that validation does not also
            // complain that the proxy has no bind at all.
            binds = vec![Bind {
                text: text.clone(),
                addrs: Vec::new(),
                fd: None,
                loc: loc.clone(),
                accept_proxy,
                tls: None,
                proto,
            }];
        }
        self.px().binds.extend(binds);
    }

    /// Splits the `if|unless <cond>` off a rule line: where it starts (the
    /// line's end when there is none) and the parsed condition. A bad
    /// condition is reported here (None).
    fn rule_condition(
        &mut self,
        loc: &Loc,
        words: &[String],
        rule: &str,
        action: &str,
    ) -> Option<(usize, Option<Condition>)> {
        let cond_at = words
            .iter()
            .position(|w| w == "if" || w == "unless")
            .unwrap_or(words.len());
        if cond_at == words.len() {
            return Some((cond_at, None));
        }
        match self.condition(loc, &words[cond_at..]) {
            Ok(c) => Some((cond_at, Some(c))),
            Err(e) => {
                let m = format!(
                    "error detected while parsing an '{rule} {action}' condition : {e}{}",
                    stop(&e)
                );
                self.alert(loc, m);
                None
            }
        }
    }

    fn kw_acl(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "acl", false, true, true) {
            return;
        }
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            return self.alert(loc, "'acl' expects an ACL name.");
        };
        if let Err(c) = check_acl_name(name) {
            return self.alert(
                loc,
                format!("character '{c}' is not permitted in acl name '{name}'."),
            );
        }
        match parse_acl(name, &words[2..], loc.clone()) {
            Ok(def) => self.px().acls.push(def),
            Err(e) => self.alert(
                loc,
                format!("error detected while parsing ACL '{name}' : {e}."),
            ),
        }
    }

    /// Parse `if|unless ...` and check that every ACL it names exists
    /// already (HAProxy resolves them at parse time); anonymous and used
    /// predefined ACLs are added to the proxy.
    fn condition(&mut self, loc: &Loc, words: &[String]) -> Result<Condition, String> {
        let (cond, anon) = parse_condition_at(words, loc)?;
        let mut extra: Vec<AclDef> = anon;
        for term in cond.groups.iter().flatten() {
            let known = self.px().acls.iter().any(|a| a.name == term.name)
                || extra.iter().any(|a| a.name == term.name);
            if known {
                continue;
            }
            if PREDEFINED.contains(&term.name.as_str()) {
                if let Some(def) = predefined(&term.name, loc.clone()) {
                    extra.push(def);
                }
                continue;
            }
            if PREDEFINED_UNSUPPORTED.contains(&term.name.as_str()) {
                return Err(format!(
                    "predefined ACL '{}' is not supported by sluice yet",
                    term.name
                ));
            }
            let names: Vec<String> = self
                .px()
                .acls
                .iter()
                .filter(|a| !a.name.starts_with('{'))
                .map(|a| a.name.clone())
                .collect();
            let sugg = suggest::suffix(
                &term.name,
                names
                    .iter()
                    .map(String::as_str)
                    .chain(PREDEFINED.iter().copied()),
            );
            self.missing_acl = Some(term.name.clone());
            return Err(format!("no such ACL : '{}'{sugg}", term.name));
        }
        self.px().acls.extend(extra);
        Ok(cond)
    }

    fn kw_use_backend(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "use_backend", false, true, false) {
            return;
        }
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            return self.alert(loc, "'use_backend' expects a backend name.");
        };
        if name.contains("%[") {
            return self.unsupported(loc, "use_backend with a dynamic name");
        }
        let cond = if words.len() > 2 {
            match self.condition(loc, &words[2..]) {
                Ok(c) => c,
                Err(e) => {
                    return self.alert(
                        loc,
                        format!(
                            "error detected while parsing switching rule : {e}{}",
                            stop(&e)
                        ),
                    );
                }
            }
        } else {
            // Unconditional: "unless <nothing>" is always true.
            Condition {
                unless: true,
                groups: Vec::new(),
            }
        };
        let rule = UseBackend {
            backend: name.clone(),
            cond,
            loc: loc.clone(),
        };
        self.px().use_backends.push(rule);
    }

    fn kw_http_request(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "http-request", false, true, true) {
            return;
        }
        let action = words.get(1).map_or("", String::as_str);
        if !kw::HTTP_REQUEST_SUPPORTED.contains(&action) {
            if kw::HTTP_REQUEST_UNSUPPORTED.contains(&action)
                || kw::haproxy_has(kw::Kind::HttpRequest, action)
            {
                return self.unsupported(loc, &format!("http-request {action}"));
            }
            let sugg = suggest::suffix(
                action,
                kw::HTTP_REQUEST_SUPPORTED
                    .iter()
                    .chain(kw::HTTP_REQUEST_UNSUPPORTED)
                    .copied(),
            );
            return self.alert(
                loc,
                format!("'http-request' expects 'return', 'deny' or another HAProxy action, but got '{action}'{sugg}"),
            );
        }
        let wrap = |this: &Self, msg: String| {
            let (t, pname) = match this.section {
                Section::Proxy(i) => this
                    .proxies
                    .get(i)
                    .map_or(("proxy", ""), |p| (type_str(p.kind), p.name.as_str())),
                _ => ("defaults", ""),
            };
            format!(
                "error detected in {t} '{pname}' while parsing 'http-request {action}' rule : {msg}."
            )
        };
        let Some((cond_at, cond)) = self.rule_condition(loc, words, "http-request", action) else {
            return;
        };
        self.warn_misplaced(loc, "http-request", legacykw::ReqStage::HttpRequest);
        let args = &words[2..cond_at];
        let parsed = match action {
            "deny" => self.deny_args(loc, args, 403).map(HttpRequestAction::Deny),
            "tarpit" => self
                .deny_args(loc, args, 500)
                .map(HttpRequestAction::Tarpit),
            "use-service" => use_service_args(args),
            "return" => self
                .reply_args(loc, args, 200)
                .map(HttpRequestAction::Return),
            _ => rewrite_args(action, args),
        };
        match parsed {
            Ok(a) => self
                .px()
                .http_request
                .push(HttpRequestRule { action: a, cond }),
            Err(e) => {
                let m = wrap(self, e);
                self.alert(loc, m)
            }
        }
    }

    /// `redirect location|prefix|scheme <to> [code <n>] [drop-query]
    /// [append-slash] [if|unless <cond>]`: `<to>` is taken literally (the
    /// `http-request redirect` form takes a log-format).
    fn kw_redirect(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "redirect", false, true, true) {
            return;
        }
        let Some((cond_at, cond)) = self.rule_condition(loc, words, "redirect", "") else {
            return;
        };
        self.warn_misplaced(loc, "redirect", legacykw::ReqStage::Redirect);
        match redirect_args(&words[1..cond_at], false) {
            Ok(action) => self.px().redirects.push(HttpRequestRule { action, cond }),
            Err(e) => self.alert(
                loc,
                format!("error detected while parsing redirect rule : {e}."),
            ),
        }
    }

    /// `capture request|response header <name> len <n>`; `capture cookie`
    /// is not supported yet.
    fn kw_capture(&mut self, loc: &Loc, words: &[String]) {
        let what = words.get(1).map_or("", String::as_str);
        if what == "cookie" {
            return self.unsupported(loc, "capture cookie");
        }
        if !matches!(what, "request" | "response")
            || words.get(2).map(String::as_str) != Some("header")
        {
            return self.alert(
                loc,
                "'capture' expects 'cookie', 'request header' or 'response header'.",
            );
        }
        if !self.cap(loc, "capture", false, true, false) {
            return;
        }
        let name = words.get(3).filter(|n| !n.is_empty());
        let len = match (words.get(4).map(String::as_str), words.get(5)) {
            (Some("len"), Some(n)) => parse_u32(n).filter(|&n| n > 0),
            _ => None,
        };
        let (Some(name), Some(len)) = (name, len) else {
            return self.alert(
                loc,
                format!("'capture {what} header' expects <header name> 'len' <len>."),
            );
        };
        if words.len() > 6 {
            return self.alert(
                loc,
                format!("'capture {what} header' does not expect any other argument."),
            );
        }
        let entry = (name.to_ascii_lowercase(), len as usize);
        let c = &mut self.px().captures;
        if what == "request" {
            c.request.push(entry);
        } else {
            c.response.push(entry);
        }
    }

    /// `monitor-uri <uri>`.
    fn kw_monitor_uri(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "monitor-uri", true, true, false) {
            return;
        }
        match words.get(1).filter(|u| !u.is_empty()) {
            Some(uri) if words.len() == 2 => self.px().monitor_uri = Some(uri.clone()),
            _ => self.alert(loc, "'monitor-uri' expects an URI."),
        }
    }

    /// `monitor fail if|unless <cond>`.
    fn kw_monitor(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "monitor", false, true, false) {
            return;
        }
        if words.get(1).map(String::as_str) != Some("fail")
            || !matches!(words.get(2).map(String::as_str), Some("if" | "unless"))
        {
            return self.alert(
                loc,
                "'monitor' expects 'fail' followed by 'if' or 'unless' and a condition.",
            );
        }
        if let Some((_, Some(cond))) = self.rule_condition(loc, words, "monitor", "fail") {
            self.px().monitor_fail = Some(cond);
        }
    }

    /// Options an old configuration carries that need no work from sluice
    /// (accepted with a warning saying so), `option forceclose` (HAProxy
    /// 1.x's `httpclose`), and the TCP keep-alive options. None when `name`
    /// is none of them.
    fn legacy_or_socket_option(
        &mut self,
        loc: &Loc,
        name: &str,
        words: &[String],
        neg: bool,
    ) -> Option<()> {
        if let Some((_, why)) = kw::OPTIONS_IGNORED.iter().find(|(n, _)| *n == name) {
            self.warn(
                loc,
                format!("'option {name}' is accepted and ignored: {why}."),
            );
            return Some(());
        }
        if words.len() > 2 && matches!(name, "forceclose" | "tcpka" | "clitcpka" | "srvtcpka") {
            self.alert(
                loc,
                format!("'option {name}' does not expect any argument."),
            );
            return Some(());
        }
        match name {
            // sluice splices wherever it can on its own (`nosplice` turns
            // it off): the options ask for what is already done.
            "splice-auto" | "splice-request" | "splice-response" => {}
            "forceclose" => {
                self.warn(
                    loc,
                    "'option forceclose' is deprecated in favor of 'option httpclose' (HAProxy 1.x); it is handled as 'option httpclose'.",
                );
                let p = self.px();
                p.conn_mode = if neg {
                    HttpConnMode::KeepAlive
                } else {
                    HttpConnMode::Close
                };
            }
            "tcpka" | "clitcpka" | "srvtcpka" => {
                let (fe, be) = (name != "srvtcpka", name != "clitcpka");
                if !self.cap(loc, &format!("option {name}"), true, fe, be) {
                    return Some(());
                }
                let p = self.px();
                if name != "srvtcpka" {
                    p.tcpka.client = !neg;
                }
                if name != "clitcpka" {
                    p.tcpka.server = !neg;
                }
            }
            _ => return None,
        }
        Some(())
    }

    /// `option forwardfor [except <net>] [header <name>] [if-none]`.
    fn forwardfor_option(&mut self, loc: &Loc, words: &[String], neg: bool) {
        if !self.cap(loc, "option forwardfor", true, true, true) {
            return;
        }
        if neg {
            self.px().forwardfor = None;
            return;
        }
        let mut ff = ForwardFor {
            except: None,
            header: "x-forwarded-for".into(),
            if_none: false,
        };
        let mut i = 2;
        while let Some(w) = words.get(i) {
            match w.as_str() {
                "except" => {
                    let v = words.get(i + 1).map_or("", String::as_str);
                    match crate::acl::parse::parse_net(v) {
                        Some(crate::acl::Pattern::Net { addr, prefix }) => {
                            ff.except = Some((addr, prefix));
                        }
                        _ => {
                            return self.alert(
                                loc,
                                format!("'option forwardfor' : invalid address/mask '{v}' after 'except'."),
                            );
                        }
                    }
                    i += 2;
                }
                "header" => {
                    let v = words.get(i + 1).map_or("", String::as_str);
                    if v.is_empty() || !v.bytes().all(is_token_byte) {
                        return self
                            .alert(loc, "'option forwardfor' : 'header' expects a header name.");
                    }
                    ff.header = v.to_ascii_lowercase();
                    i += 2;
                }
                "if-none" => {
                    ff.if_none = true;
                    i += 1;
                }
                other => {
                    return self.alert(
                        loc,
                        format!("'option forwardfor' : unknown parameter '{other}'. Supported parameters are 'except', 'header' and 'if-none'."),
                    );
                }
            }
        }
        self.px().forwardfor = Some(ff);
    }

    /// `http-response set-header|add-header|del-header|deny [if|unless ...]`.
    fn kw_http_response(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "http-response", false, true, true) {
            return;
        }
        let action = words.get(1).map_or("", String::as_str);
        if !kw::HTTP_RESPONSE_SUPPORTED.contains(&action) {
            if kw::haproxy_has(kw::Kind::HttpResponse, action) {
                return self.unsupported(loc, &format!("http-response {action}"));
            }
            let sugg = suggest::suffix(
                action,
                kw::HTTP_RESPONSE_SUPPORTED
                    .iter()
                    .copied()
                    .chain(kw::haproxy26(kw::Kind::HttpResponse)),
            );
            return self.alert(
                loc,
                format!("'http-response' expects 'deny', 'set-header' or another HAProxy action, but got '{action}'{sugg}"),
            );
        }
        let Some((cond_at, cond)) = self.rule_condition(loc, words, "http-response", action) else {
            return;
        };
        let args = &words[2..cond_at];
        let parsed = if action == "deny" {
            self.deny_args(loc, args, 502).map(HttpResponseAction::Deny)
        } else {
            response_rewrite(action, args)
        };
        match parsed {
            Ok(a) => self
                .px()
                .http_response
                .push(HttpResponseRule { action: a, cond }),
            Err(e) => self.alert(
                loc,
                format!("error detected while parsing 'http-response {action}' rule : {e}."),
            ),
        }
    }
    /// `errorfile <code> <file>`: the file is read now, whole; it is the
    /// complete HTTP response sent for that code.
    fn kw_errorfile(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "errorfile", true, true, true) {
            return;
        }
        let (Some(code), Some(path)) = (words.get(1), words.get(2)) else {
            return self.alert(loc, "'errorfile' expects <code> and <file> as arguments.");
        };
        let Some(code) = parse_u32(code)
            .and_then(|c| u16::try_from(c).ok())
            .filter(|c| ERROR_PAGE_CODES.contains(c))
        else {
            return self.warn(
                loc,
                format!("status code '{code}' not handled, error customization will be ignored."),
            );
        };
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(_) => {
                return self.alert(loc, format!("errorfile : error opening file '{path}'."));
            }
        };
        // An empty file (`errorfile 408 /dev/null`, which HAProxy's
        // documentation recommends) is an empty answer: the connection is
        // closed without a byte.
        let page = if bytes.is_empty() {
            Some(bytes::Bytes::new())
        } else {
            crate::wire::error_pages::load_errorfile(&bytes)
        };
        let Some(page) = page else {
            return self.alert(
                loc,
                format!("unable to parse the custom error message file '{path}' for code {code} : not a valid HTTP response."),
            );
        };
        let p = self.px();
        p.errorfiles.retain(|(c, _)| *c != code);
        p.errorfiles.push((code, page));
    }

    /// `deny [deny_status <code>] [<reply arguments>]`, for `http-request`
    /// and `http-response`: without reply arguments, the error page of the
    /// status (which must have one, as HAProxy checks).
    fn deny_args(
        &mut self,
        loc: &Loc,
        args: &[String],
        default_status: u16,
    ) -> Result<HttpReply, String> {
        let mut status = default_status;
        let mut rest = args;
        if let [w, v, tail @ ..] = args
            && w == "deny_status"
        {
            status = parse_u32(v)
                .and_then(|c| u16::try_from(c).ok())
                .filter(|c| (200..=599).contains(c))
                .ok_or_else(|| format!("Unexpected status code '{v}'"))?;
            rest = tail;
        } else if args.first().is_some_and(|w| w == "deny_status") {
            return Err("'deny_status' expects <status_code> as argument".into());
        }
        if rest.is_empty() {
            if !ERROR_PAGE_CODES.contains(&status) {
                return Err(format!(
                    "status code '{status}' not handled by default with 'default-errorfiles' argument."
                ));
            }
            return Ok(HttpReply::error_page(status));
        }
        self.reply_args(loc, rest, status)
    }

    /// HAProxy's http reply arguments (`http_parse_http_reply`): `status`,
    /// `content-type`, one payload among `string`, `lf-string`, `file`,
    /// `lf-file`, `errorfile`, `default-errorfiles`, and `hdr <name> <fmt>`
    /// lines. Texts of errors and warnings are HAProxy 2.6's.
    fn reply_args(
        &mut self,
        loc: &Loc,
        args: &[String],
        default_status: u16,
    ) -> Result<HttpReply, String> {
        enum Payload {
            Empty,
            Raw(Vec<u8>),
            Format(String),
            ErrorPage,
            Message(Vec<u8>),
        }
        let mut status = default_status;
        let mut content_type: Option<String> = None;
        let mut payload = Payload::Empty;
        let mut payload_kw: Option<&str> = None;
        let mut headers = Vec::new();
        let bufsize = self.global.tune_bufsize.unwrap_or(16384) as u64;
        let mut i = 0;
        while let Some(w) = args.get(i) {
            let v = args
                .get(i + 1)
                .map(String::as_str)
                .filter(|v| !v.is_empty());
            let missing = |what: &str| format!("'{w}' expects {what} as argument");
            let w = w.as_str();
            if matches!(
                w,
                "string"
                    | "lf-string"
                    | "file"
                    | "lf-file"
                    | "errorfile"
                    | "errorfiles"
                    | "default-errorfiles"
            ) {
                if let Some(first) = payload_kw {
                    return Err(format!(
                        "unexpected '{w}' argument, '{first}' already defined"
                    ));
                }
                payload_kw = Some(w);
            }
            let read_file = |v: Option<&str>| -> Result<Vec<u8>, String> {
                let path = v.ok_or_else(|| missing("<file>"))?;
                let bytes =
                    std::fs::read(path).map_err(|_| format!("error opening file '{path}'"))?;
                if bytes.len() as u64 > bufsize {
                    return Err(format!(
                        "file '{path}' exceeds the buffer size ({} > {bufsize})",
                        bytes.len()
                    ));
                }
                Ok(bytes)
            };
            match w {
                "status" => {
                    let v = v.ok_or_else(|| missing("<status_code>"))?;
                    status = parse_u32(v)
                        .and_then(|c| u16::try_from(c).ok())
                        .filter(|c| (200..=599).contains(c))
                        .ok_or_else(|| format!("Unexpected status code '{v}'"))?;
                }
                "content-type" => {
                    content_type = Some(v.ok_or_else(|| missing("<ctype>"))?.to_string());
                }
                "string" => payload = Payload::Raw(v.ok_or_else(|| missing("<str>"))?.into()),
                "lf-string" => {
                    payload = Payload::Format(v.ok_or_else(|| missing("<fmt>"))?.to_string());
                }
                "file" => payload = Payload::Raw(read_file(v)?),
                "lf-file" => {
                    let bytes = read_file(v)?;
                    payload = Payload::Format(String::from_utf8_lossy(&bytes).into_owned());
                }
                "default-errorfiles" => {
                    payload = Payload::ErrorPage;
                    i += 1;
                    continue;
                }
                "errorfile" => {
                    let path = v.ok_or_else(|| missing("<fmt>"))?;
                    let bytes =
                        std::fs::read(path).map_err(|_| format!("error opening file '{path}'"))?;
                    let page = crate::wire::error_pages::load_errorfile(&bytes).ok_or_else(|| {
                        format!("unable to parse the custom error message file '{path}' : not a valid HTTP response")
                    })?;
                    payload = Payload::Message(page.to_vec());
                }
                "errorfiles" => {
                    return Err(
                        "'errorfiles' (http-errors sections) is not supported by sluice yet".into(),
                    );
                }
                "hdr" => {
                    let (Some(name), Some(value)) = (v, args.get(i + 2)) else {
                        return Err("'hdr' expects <name> and <value> as arguments".into());
                    };
                    if value.is_empty() {
                        return Err("'hdr' expects <name> and <value> as arguments".into());
                    }
                    if ["content-length", "transfer-encoding", "content-type"]
                        .iter()
                        .any(|h| h.eq_ignore_ascii_case(name))
                    {
                        self.warn(
                            loc,
                            format!("header '{name}' always ignored by the http reply."),
                        );
                    } else if !name.bytes().all(is_token_byte) {
                        return Err(format!("'hdr' expects a header name (got '{name}')"));
                    } else {
                        headers.push((name.to_ascii_lowercase(), parse_logfmt(value)?));
                    }
                    i += 3;
                    continue;
                }
                other => {
                    return Err(format!(
                        "unexpected keyword '{other}' (expects 'status', 'content-type', 'string', 'lf-string', 'file', 'lf-file', 'errorfile', 'default-errorfiles' or 'hdr', then 'if' or 'unless')"
                    ));
                }
            }
            i += 2;
        }
        let no_body = |what: &str| format!("No body expected for {status} responses{what}");
        let body = match payload {
            Payload::Empty => {
                if let Some(t) = content_type.take() {
                    self.warn(
                        loc,
                        format!("content-type '{t}' ignored by the http reply because neither errorfile nor payload defined."),
                    );
                }
                ReplyBody::Static(Vec::new())
            }
            Payload::ErrorPage | Payload::Message(_) => {
                if matches!(payload, Payload::ErrorPage) && !ERROR_PAGE_CODES.contains(&status) {
                    return Err(format!(
                        "status code '{status}' not handled by default with 'default-errorfiles' argument."
                    ));
                }
                if let Some(t) = content_type.take() {
                    self.warn(
                        loc,
                        format!("content-type '{t}' ignored by the http reply when used with an erorrfile."),
                    );
                }
                if !headers.is_empty() {
                    headers.clear();
                    self.warn(
                        loc,
                        "hdr parameters ignored by the http reply when used with an erorrfile.",
                    );
                }
                match payload {
                    Payload::Message(page) => ReplyBody::Message(page),
                    _ => ReplyBody::ErrorPage,
                }
            }
            Payload::Raw(bytes) => {
                if matches!(status, 204 | 304) && !bytes.is_empty() {
                    return Err(no_body(""));
                }
                if content_type.is_none() && !bytes.is_empty() {
                    return Err(
                        "a content type must be defined when non-empty payload is configured"
                            .into(),
                    );
                }
                if bytes.is_empty()
                    && let Some(t) = content_type.take()
                {
                    self.warn(
                        loc,
                        format!("content-type '{t}' ignored by the http reply when used with an empty payload."),
                    );
                }
                ReplyBody::Static(bytes)
            }
            Payload::Format(text) => {
                if matches!(status, 204 | 304) {
                    return Err(no_body(""));
                }
                if content_type.is_none() {
                    return Err("a content type must be defined with a log-format payload".into());
                }
                ReplyBody::Format(parse_logfmt(&text)?)
            }
        };
        Ok(HttpReply {
            status,
            content_type,
            body,
            headers,
        })
    }

    // ---------------------------------------------------------------- server

    fn kw_server(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "server", false, false, true) {
            return;
        }
        let (Some(name), Some(addr_text)) = (words.get(1), words.get(2)) else {
            return self.alert(
                loc,
                "'server' expects <name> and <addr>[:<port>] as arguments.",
            );
        };
        let pname = self.px().name.clone();
        let ctx = format!("server {pname}/{name}");
        let at = |this: &mut Self, msg: String| {
            this.diags
                .push(Diagnostic::at(Level::Alert, loc, &ctx, msg));
        };
        let mut ok = true;
        if let Some(c) = bad_name_char(name) {
            at(
                self,
                format!("character '{c}' is not permitted in server name '{name}'."),
            );
            ok = false;
        }
        let hp = match self
            .addr_word(addr_text)
            .and_then(|a| addr::split_server(&a))
        {
            Ok(hp) => Some(hp),
            Err(e) => {
                at(self, e);
                ok = false;
                None
            }
        };
        let base = match self.section {
            Section::Proxy(i) => self.server_defaults.get(i).cloned().unwrap_or_default(),
            _ => ServerDefaults::default(),
        };
        let sd = match self.server_options(loc, &words[3..], base.clone(), name, Some(&ctx)) {
            Some(sd) => sd,
            None => {
                ok = false;
                base
            }
        };
        let (weight, maxconn, check, params) = (sd.weight, sd.maxconn, sd.check, sd.params);
        let (mut opts, id, cookie) = (sd.opts, sd.id, sd.cookie);
        opts.use_ssl = match &sd.tls {
            Some(t) if t.enabled => 1,
            Some(t) if t.no_ssl => -1,
            _ => 0,
        };
        let tls = match &sd.tls {
            None => None,
            Some(t) => match self.server_tls(t, opts.h2) {
                Ok(u) => u,
                Err(msg) => {
                    at(self, msg);
                    ok = false;
                    None
                }
            },
        };
        // `check-ssl`: the server's TLS options, enabled for the checks.
        let check_tls = match &sd.tls {
            Some(t) if params.ssl && check => {
                let t = crate::tls::upstream::ServerTlsOpts {
                    enabled: true,
                    ..t.clone()
                };
                match self.server_tls(&t, false) {
                    Ok(u) => u,
                    Err(msg) => {
                        at(self, msg);
                        ok = false;
                        None
                    }
                }
            }
            _ => None,
        };
        if opts.h2 && opts.send_proxy != 0 {
            // One HTTP/2 connection carries many clients' requests: it
            // cannot start with one client's PROXY header.
            at(
                self,
                "'send-proxy' and 'proto h2' cannot be combined by sluice (a shared HTTP/2 connection tells no single client).".to_string(),
            );
            ok = false;
        }
        if opts.h2
            && let Some(hp) = &hp
            && (hp.port == 0 || hp.host.is_empty() || hp.host == "*" || hp.host == "0.0.0.0")
        {
            // One HTTP/2 connection is shared by all clients: it cannot
            // follow each client's destination.
            at(
                self,
                format!(
                    "'proto h2' needs a fixed address and port, not '{addr_text}' (taken from each client connection)."
                ),
            );
            ok = false;
        }
        if let Some(other) = self.px().servers.iter().find(|s| s.name == *name) {
            let line = other.loc.line;
            let t = self.proxy_kind().map_or("backend", type_str);
            self.alert(
                loc,
                format!("{t} '{pname}', another server named '{name}' was already defined at line {line}, please use distinct names."),
            );
            ok = false;
        }
        let Some(hp) = hp else { return };
        if !ok {
            return;
        }
        let port = hp.port;
        let server = Server {
            name: name.clone(),
            addr_text: addr_text.clone(),
            addr: std::net::SocketAddr::from(([0, 0, 0, 0], port)),
            weight,
            maxconn,
            check: check.then_some(params),
            opts,
            id,
            cookie,
            loc: loc.clone(),
            tls,
            check_tls,
        };
        let host = hp.host;
        let family = hp.family;
        let proxy = match self.section {
            Section::Proxy(i) => i,
            _ => return,
        };
        let p = self.px();
        p.servers.push(server);
        let server_idx = p.servers.len() - 1;
        self.pending.push(PendingServer {
            proxy,
            server: server_idx,
            host,
            family,
            port,
        });
    }

    /// The options of a `server` or `default-server` line (`words` start
    /// after the address, or after `default-server`), applied over `base`.
    /// `ctx`: the `server px/name` context of messages, `None` for
    /// `default-server` (HAProxy's messages then have no context).
    fn server_options(
        &mut self,
        loc: &Loc,
        words: &[String],
        base: ServerDefaults,
        name: &str,
        ctx: Option<&str>,
    ) -> Option<ServerDefaults> {
        let at = |this: &mut Self, msg: String| {
            let d = match ctx {
                Some(ctx) => Diagnostic::at(Level::Alert, loc, ctx, msg),
                None => {
                    Diagnostic::new(Level::Alert, Some(loc.clone()), format!("[{loc}] : {msg}"))
                }
            };
            this.diags.push(d);
        };
        let mut weight = base.weight;
        let mut maxconn = base.maxconn;
        let mut check = base.check;
        let mut params = base.params;
        let mut cookie = base.cookie.clone();
        let mut tls = base.tls.clone();
        let mut lb = base;
        let mut ok = true;
        let mut i = 0;
        while let Some(w) = words.get(i) {
            let v = words.get(i + 1).map(String::as_str);
            let int_arg = |this: &mut Self, min: u32| -> Option<u32> {
                match v.and_then(parse_u32) {
                    Some(n) if n >= min => Some(n),
                    Some(_) => {
                        at(this, format!("'{w}' has to be >= {min}."));
                        None
                    }
                    None => {
                        at(
                            this,
                            format!(
                                "'{w}' expects an integer argument (got '{}').",
                                v.unwrap_or("")
                            ),
                        );
                        None
                    }
                }
            };
            let step = match w.as_str() {
                "weight" => {
                    match int_arg(self, 0) {
                        Some(n) if n <= 256 => weight = n,
                        Some(n) => {
                            at(
                                self,
                                format!("weight of server {name} is not within 0 and 256 ({n}).."),
                            );
                            ok = false;
                        }
                        None => ok = false,
                    }
                    2
                }
                "maxconn" => {
                    match int_arg(self, 0) {
                        Some(n) => maxconn = n,
                        None => ok = false,
                    }
                    2
                }
                "rise" | "fall" => {
                    match int_arg(self, 1) {
                        Some(n) if w == "rise" => params.rise = n,
                        Some(n) => params.fall = n,
                        None => ok = false,
                    }
                    2
                }
                "inter" => {
                    let val = v.unwrap_or("");
                    match parse_time(val) {
                        Ok(d) if !d.is_zero() => params.inter = d,
                        Ok(_) => {
                            at(self, "'inter' has to be > 0.".to_string());
                            ok = false;
                        }
                        Err(e) => {
                            at(self, time_error_message("inter", val, &e));
                            ok = false;
                        }
                    }
                    2
                }
                "check" => {
                    check = true;
                    1
                }
                "cookie" => {
                    match v.filter(|v| !v.is_empty()) {
                        Some(v) => cookie = Some(v.to_string()),
                        None => {
                            at(self, "'cookie' expects <value> as argument..".to_string());
                            ok = false;
                            break;
                        }
                    }
                    2
                }
                "no-check" => {
                    check = false;
                    1
                }
                "check-ssl" | "no-check-ssl" => {
                    params.ssl = w == "check-ssl";
                    if tls.is_none() {
                        // The TLS options with their defaults, for the checks.
                        let _ = self.server_tls_option(w, None, &mut tls);
                    }
                    1
                }
                other if kw::SERVER_TLS.contains(&other) => {
                    match self.server_tls_option(other, v, &mut tls) {
                        Ok(step) => step,
                        Err(msg) => {
                            at(self, msg);
                            ok = false;
                            break;
                        }
                    }
                }
                // The arms above take the basic options; the rest of the
                // supported table is balancing and check options.
                other if kw::SERVER_SUPPORTED.contains(&other) => {
                    lb.params = params;
                    match self.server_lb_option(loc, ctx, other, v, &mut lb) {
                        Some(step) => {
                            params = lb.params;
                            step
                        }
                        None => {
                            ok = false;
                            break;
                        }
                    }
                }
                other
                    if kw::SERVER_UNSUPPORTED.contains(&other)
                        || kw::haproxy_has(kw::Kind::Server, other) =>
                {
                    at(self, format!("'{other}' is not supported by sluice yet"));
                    ok = false;
                    // The rest of the line cannot be interpreted reliably.
                    break;
                }
                other => {
                    let sugg = suggest::suffix(
                        other,
                        kw::SERVER_SUPPORTED
                            .iter()
                            .chain(kw::SERVER_UNSUPPORTED)
                            .copied(),
                    );
                    // HAProxy's hint when default-server gets an unknown word.
                    let hint = if ctx.is_none() {
                        " Hint: no address was expected for this server."
                    } else {
                        ""
                    };
                    at(self, format!("unknown keyword '{other}'{sugg}{hint}"));
                    ok = false;
                    break;
                }
            };
            i += step;
        }
        ok.then_some(ServerDefaults {
            weight,
            maxconn,
            check,
            params,
            opts: lb.opts,
            id: lb.id,
            cookie,
            tls,
        })
    }

    /// `default-server <options>`: defaults for the following `server`
    /// lines of this section (and of proxies using this `defaults`).
    fn kw_default_server(&mut self, loc: &Loc, words: &[String]) {
        if let Some(kind) = self.proxy_kind()
            && !kind.has_backend()
        {
            let name = self.px().name.clone();
            let msg = format!(
                "[{loc}] : parsing [{loc}] : 'default-server' not allowed because {} '{name}' has no backend capability.",
                type_str(kind)
            );
            self.diags
                .push(Diagnostic::new(Level::Alert, Some(loc.clone()), msg));
            return;
        }
        let base = self.current_server_defaults();
        if let Some(sd) = self.server_options(loc, &words[1..], base, "default-server", None) {
            match self.section {
                Section::Proxy(i) => {
                    if let Some(slot) = self.server_defaults.get_mut(i) {
                        *slot = sd;
                    }
                }
                Section::Defaults(i) => {
                    if let Some(d) = self.defaults.get_mut(i) {
                        d.server = sd;
                    }
                }
                _ => {}
            }
        }
    }

    fn current_server_defaults(&self) -> ServerDefaults {
        match self.section {
            Section::Proxy(i) => self.server_defaults.get(i).cloned(),
            Section::Defaults(i) => self.defaults.get(i).map(|d| d.server.clone()),
            _ => None,
        }
        .unwrap_or_default()
    }
}

/// `http-request use-service <name>`: sluice has HAProxy's
/// `prometheus-exporter` service.
fn use_service_args(args: &[String]) -> Result<HttpRequestAction, String> {
    match args {
        [name] if name == "prometheus-exporter" => Ok(HttpRequestAction::PrometheusExporter),
        [name] => Err(format!(
            "'use-service' expects a service name, 'prometheus-exporter' is the only one sluice has (got '{name}')"
        )),
        [] => Err("'use-service' expects a service name".to_string()),
        [_, extra, ..] => Err(format!(
            "unexpected keyword '{extra}' (expects 'if' or 'unless')"
        )),
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A log-format string: literal text, `%[src]`, `%[req.hdr(<name>)]`,
/// `%[method]`, `%[path]`, `%[query]`, `%[url]`, `%[base]`, `%ci`, `%%`.
pub(crate) fn parse_logfmt(text: &str) -> Result<LogFmt, String> {
    let mut parts = Vec::new();
    let mut lit = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('%') {
        lit.push_str(&rest[..i]);
        rest = &rest[i + 1..];
        let part = if let Some(r) = rest.strip_prefix('%') {
            lit.push('%');
            rest = r;
            continue;
        } else if let Some(r) = rest.strip_prefix("ci") {
            rest = r;
            FmtPart::Src
        } else if let Some((part, r)) = [
            ("ft", FmtPart::Frontend),
            ("f", FmtPart::Frontend),
            ("b", FmtPart::Backend),
            ("s", FmtPart::Server),
        ]
        .into_iter()
        .find_map(|(p, part)| rest.strip_prefix(p).map(|r| (part, r)))
        {
            rest = r;
            part
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r
                .find(']')
                .ok_or_else(|| format!("missing ']' in log-format '{text}'"))?;
            let expr = &r[..end];
            rest = &r[end + 1..];
            if let Some(part) = match expr {
                "src" => Some(FmtPart::Src),
                "method" => Some(FmtPart::Method),
                "path" => Some(FmtPart::Path),
                "query" => Some(FmtPart::Query),
                "url" => Some(FmtPart::Url),
                "base" => Some(FmtPart::Base),
                "fe_name" => Some(FmtPart::Frontend),
                "be_name" => Some(FmtPart::Backend),
                "srv_name" => Some(FmtPart::Server),
                _ => None,
            } {
                part
            } else if let Some(name) = expr
                .strip_prefix("req.hdr(")
                .or_else(|| expr.strip_prefix("hdr("))
                .and_then(|n| n.strip_suffix(')'))
                .filter(|n| !n.is_empty() && n.bytes().all(is_token_byte))
            {
                FmtPart::ReqHdr(name.to_ascii_lowercase())
            } else {
                return Err(format!(
                    "sample fetch '{expr}' is not supported by sluice yet in a log-format"
                ));
            }
        } else {
            return Err(format!(
                "log-format variable in '{text}' is not supported by sluice yet (only %ci, %[src], %[req.hdr(<name>)])"
            ));
        };
        if !lit.is_empty() {
            parts.push(FmtPart::Lit(std::mem::take(&mut lit)));
        }
        parts.push(part);
    }
    lit.push_str(rest);
    if !lit.is_empty() {
        parts.push(FmtPart::Lit(lit));
    }
    Ok(LogFmt(parts))
}

/// Arguments of the header, path and redirect actions.
fn rewrite_args(action: &str, args: &[String]) -> Result<HttpRequestAction, String> {
    let name = |i: usize| -> Result<String, String> {
        let n = args.get(i).map_or("", String::as_str);
        if n.is_empty() || !n.bytes().all(is_token_byte) {
            return Err(format!("expects a header name (got '{n}')"));
        }
        Ok(n.to_string())
    };
    let exact = |n: usize| -> Result<(), String> {
        if args.len() != n {
            return Err(format!("expects exactly {n} argument(s)"));
        }
        Ok(())
    };
    Ok(match action {
        "allow" | "deny" => {
            exact(0)?;
            HttpRequestAction::Allow
        }
        "set-header" | "add-header" => {
            exact(2)?;
            let (name, fmt) = (name(0)?, parse_logfmt(&args[1])?);
            if action == "set-header" {
                HttpRequestAction::SetHeader { name, fmt }
            } else {
                HttpRequestAction::AddHeader { name, fmt }
            }
        }
        "del-header" => {
            exact(1)?;
            HttpRequestAction::DelHeader { name: name(0)? }
        }
        "replace-header" => {
            exact(3)?;
            let re = regex::bytes::Regex::new(&args[1])
                .map_err(|e| format!("invalid regex '{}' : {e}", args[1]))?;
            HttpRequestAction::ReplaceHeader {
                name: name(0)?,
                re,
                fmt: parse_logfmt(&args[2])?,
            }
        }
        "set-path" | "set-query" => {
            exact(1)?;
            let fmt = parse_logfmt(&args[0])?;
            if action == "set-path" {
                HttpRequestAction::SetPath(fmt)
            } else {
                HttpRequestAction::SetQuery(fmt)
            }
        }
        "redirect" => redirect_args(args, true)?,
        _ => return Err(format!("unknown action '{action}'")),
    })
}

/// Arguments of `http-request redirect` and of the `redirect` keyword:
/// `location|prefix|scheme <to> [code <n>] [drop-query] [append-slash]`;
/// `<to>` is a log-format for `http-request redirect`, literal otherwise.
fn redirect_args(args: &[String], logfmt: bool) -> Result<HttpRequestAction, String> {
    let kind = match args.first().map(String::as_str) {
        Some("location") => RedirectKind::Location,
        Some("prefix") => RedirectKind::Prefix,
        Some("scheme") => RedirectKind::Scheme,
        _ => {
            return Err("expects 'location', 'prefix' or 'scheme' followed by a value".into());
        }
    };
    let value = args
        .get(1)
        .ok_or_else(|| format!("'{}' expects an argument", args[0]))?;
    let fmt = if logfmt {
        parse_logfmt(value)?
    } else {
        LogFmt(vec![FmtPart::Lit(value.clone())])
    };
    let (mut drop_query, mut append_slash) = (false, false);
    let mut code = 302;
    let mut i = 2;
    while let Some(w) = args.get(i) {
        match w.as_str() {
            "code" => {
                let v = args.get(i + 1).map_or("", String::as_str);
                code = parse_u32(v)
                    .and_then(|c| u16::try_from(c).ok())
                    .filter(|c| matches!(c, 301 | 302 | 303 | 307 | 308))
                    .ok_or_else(|| {
                        format!("'code' expects one of 301, 302, 303, 307 or 308 (got '{v}')")
                    })?;
                i += 2;
            }
            "drop-query" => {
                drop_query = true;
                i += 1;
            }
            "append-slash" => {
                append_slash = true;
                i += 1;
            }
            other => {
                return Err(format!(
                    "redirect option '{other}' is not supported by sluice yet (only 'code', 'drop-query', 'append-slash')"
                ));
            }
        }
    }
    Ok(HttpRequestAction::Redirect {
        kind,
        fmt,
        code,
        drop_query,
        append_slash,
    })
}

/// `http-response set-header|add-header|del-header`.
fn response_rewrite(action: &str, args: &[String]) -> Result<HttpResponseAction, String> {
    match rewrite_args(action, args)? {
        HttpRequestAction::SetHeader { name, fmt } => {
            Ok(HttpResponseAction::SetHeader { name, fmt })
        }
        HttpRequestAction::AddHeader { name, fmt } => {
            Ok(HttpResponseAction::AddHeader { name, fmt })
        }
        HttpRequestAction::DelHeader { name } => Ok(HttpResponseAction::DelHeader { name }),
        _ => Err(format!("unexpected action '{action}'")),
    }
}

/// The final period of a message, unless it ends with a suggestion.
/// The id named by a `stats socket` `uid`/`gid`/`user`/`group` option, with
/// HAProxy's error texts. A non-numeric `uid`/`gid` is an error (HAProxy's
/// `atol` would silently read it as 0, that is root).
fn socket_owner(kw: &str, val: Option<&str>) -> Result<u32, String> {
    let val = val.filter(|v| !v.is_empty());
    match kw {
        "user" | "group" => {
            let Some(name) = val else {
                return Err(format!("'{kw}' : missing {kw} name"));
            };
            let id = if kw == "user" {
                crate::sys::process::lookup_user(name).map(|(uid, _)| uid)
            } else {
                crate::sys::process::lookup_group(name)
            };
            id.ok_or_else(|| format!("'{kw}' : unknown {kw} name '{name}'"))
        }
        _ => match val {
            None => Err(format!("'{kw}' : missing value")),
            Some(v) => parse_u32(v)
                .ok_or_else(|| format!("'{kw}' : invalid value '{v}' (integer expected)")),
        },
    }
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

/// `cpu-map [auto:]<group>[/<threads>] <cpus>...` (HAProxy 2.6 syntax;
/// sluice has one thread group, so the group is `1`, `all`, `odd` or
/// `even` only as far as they include 1).
pub(crate) fn parse_cpu_map(args: &[String]) -> Result<CpuMap, String> {
    let Some(first) = args.first() else {
        return Err("expects a thread group and a CPU set.".to_string());
    };
    let (auto, spec) = match first.strip_prefix("auto:") {
        Some(rest) => (true, rest),
        None => (false, first.as_str()),
    };
    let (group, threads) = match spec.split_once('/') {
        Some((g, t)) => (g, Some(t)),
        None => (spec, None),
    };
    let group_ok = match group {
        "all" | "odd" | "1" => true,
        g => parse_set(g).is_ok_and(|s| s.contains(&1)),
    };
    if !group_ok {
        return Err(format!(
            "invalid thread group '{group}' (sluice has a single thread group, '1')."
        ));
    }
    let threads = match threads {
        None | Some("all") => None,
        Some(t) => Some(
            parse_set(t)
                .map_err(|e| format!("invalid thread set '{t}': {e}"))?
                .into_iter()
                .map(|n| n as u32)
                .filter(|n| *n > 0)
                .collect::<Vec<_>>(),
        ),
    };
    if args.len() < 2 {
        return Err("expects a CPU set after the thread set.".to_string());
    }
    let mut cpus = Vec::new();
    for a in &args[1..] {
        for part in a.split(',') {
            cpus.extend(parse_set(part).map_err(|e| format!("invalid CPU set '{a}': {e}"))?);
        }
    }
    if auto
        && let Some(t) = &threads
        && t.len() != cpus.len()
    {
        return Err(format!(
            "'auto:' needs as many CPUs as threads ({} threads, {} CPUs).",
            t.len(),
            cpus.len()
        ));
    }
    Ok(CpuMap {
        auto,
        threads,
        cpus,
    })
}

/// `n`, `n-m`, `odd`, `even` (odd/even over 1..=64).
fn parse_set(s: &str) -> Result<Vec<usize>, String> {
    match s {
        "odd" => return Ok((1..=64).step_by(2).collect()),
        "even" => return Ok((2..=64).step_by(2).collect()),
        _ => {}
    }
    let num = |x: &str| {
        x.parse::<usize>()
            .ok()
            .filter(|n| *n < 1024)
            .ok_or_else(|| format!("'{x}' is not a number below 1024"))
    };
    match s.split_once('-') {
        Some((a, b)) => {
            let (a, b) = (num(a)?, num(b)?);
            if a > b {
                return Err(format!("range {a}-{b} is reversed"));
            }
            Ok((a..=b).collect())
        }
        None => Ok(vec![num(s)?]),
    }
}
