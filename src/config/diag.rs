//! Diagnostics in HAProxy 2.6's stderr form.
//!
//! A [`Diagnostic`]'s `message` is the complete text HAProxy prints after
//! `config : ` (including any `parsing [file:line] : ` prefix, whose exact
//! shape varies between messages in HAProxy itself); `loc` repeats the
//! location for programs that want it. This keeps rendering trivial and lets
//! anyone build a diagnostic without knowing about prefix variants.

use std::fmt;

use crate::config::model::Loc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Notice,
    Warning,
    Alert,
}

impl Level {
    /// The bracketed tag HAProxy prints.
    pub fn tag(self) -> &'static str {
        match self {
            Level::Notice => "[NOTICE]",
            Level::Warning => "[WARNING]",
            Level::Alert => "[ALERT]",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub level: Level,
    pub loc: Option<Loc>,
    /// Full text after `config : ` (may span several lines).
    pub message: String,
}

impl Diagnostic {
    pub fn new(level: Level, loc: Option<Loc>, message: impl Into<String>) -> Self {
        Diagnostic {
            level,
            loc,
            message: message.into(),
        }
    }

    pub fn alert(loc: Option<Loc>, message: impl Into<String>) -> Self {
        Self::new(Level::Alert, loc, message)
    }

    pub fn warning(loc: Option<Loc>, message: impl Into<String>) -> Self {
        Self::new(Level::Warning, loc, message)
    }

    pub fn notice(loc: Option<Loc>, message: impl Into<String>) -> Self {
        Self::new(Level::Notice, loc, message)
    }

    /// `parsing [file:line] : <msg>` — the common keyword-level form.
    pub fn parsing(level: Level, loc: &Loc, msg: impl fmt::Display) -> Self {
        Self::new(level, Some(loc.clone()), format!("parsing [{loc}] : {msg}"))
    }

    /// `parsing [file:line]: <msg>` — the lexer/section-level form (no space
    /// before the colon, as HAProxy prints it).
    pub fn parsing_tight(level: Level, loc: &Loc, msg: impl fmt::Display) -> Self {
        Self::new(level, Some(loc.clone()), format!("parsing [{loc}]: {msg}"))
    }

    /// `[file:line] : '<ctx>' : <msg>` — the server-line form.
    pub fn at(level: Level, loc: &Loc, ctx: &str, msg: impl fmt::Display) -> Self {
        Self::new(
            level,
            Some(loc.clone()),
            format!("[{loc}] : '{ctx}' : {msg}"),
        )
    }

    pub fn is_alert(&self) -> bool {
        self.level == Level::Alert
    }

    /// One diagnostic as HAProxy 2.6 writes it to stderr (no trailing
    /// newline; continuation lines of multi-line messages are kept as is).
    pub fn render(&self, pid: u32) -> String {
        format!(
            "{:<10} ({pid}) : config : {}",
            self.level.tag(),
            self.message
        )
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.level.tag(), self.message)
    }
}

/// The closing line HAProxy prints when parsing or checking failed.
pub const FATAL_ERRORS: &str = "Fatal errors found in configuration.";

/// The whole report as HAProxy prints it to stderr, one diagnostic per
/// line(s), each terminated by a newline. The closing lines (`Error(s) found
/// in configuration file : f`, `Fatal errors found in configuration.`) are
/// already part of the list produced by [`crate::config::parse_texts`].
pub fn render_report(diags: &[Diagnostic], pid: u32) -> String {
    let mut out = String::new();
    for d in diags {
        out.push_str(&d.render(pid));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn loc(l: u32) -> Loc {
        Loc {
            file: Arc::from("bad1.cfg"),
            line: l,
        }
    }

    #[test]
    fn renders_haproxy_prefixes() {
        let d = Diagnostic::parsing(
            Level::Alert,
            &loc(3),
            "unknown keyword 'foobar' in 'global' section",
        );
        assert_eq!(
            d.render(20151),
            "[ALERT]    (20151) : config : parsing [bad1.cfg:3] : unknown keyword 'foobar' in 'global' section"
        );
        let d = Diagnostic::at(
            Level::Alert,
            &loc(13),
            "server be/s1",
            "weight of server s1 is not within 0 and 256 (300)..",
        );
        assert_eq!(
            d.render(1),
            "[ALERT]    (1) : config : [bad1.cfg:13] : 'server be/s1' : weight of server s1 is not within 0 and 256 (300).."
        );
        let d = Diagnostic::warning(None, "x");
        assert_eq!(d.render(7), "[WARNING]  (7) : config : x");
        let d = Diagnostic::notice(None, "x");
        assert_eq!(d.render(7), "[NOTICE]   (7) : config : x");
    }
}
