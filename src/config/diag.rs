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
pub(crate) enum Level {
    Notice,
    Warning,
    Alert,
}

impl Level {
    /// The bracketed tag HAProxy prints.
    pub(crate) fn tag(self) -> &'static str {
        match self {
            Level::Notice => "[NOTICE]",
            Level::Warning => "[WARNING]",
            Level::Alert => "[ALERT]",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Diagnostic {
    pub(crate) level: Level,
    pub(crate) loc: Option<Loc>,
    /// Full text after `config : ` (may span several lines).
    pub(crate) message: String,
}

impl Diagnostic {
    pub(crate) fn new(level: Level, loc: Option<Loc>, message: impl Into<String>) -> Self {
        Diagnostic {
            level,
            loc,
            message: message.into(),
        }
    }

    pub(crate) fn alert(loc: Option<Loc>, message: impl Into<String>) -> Self {
        Self::new(Level::Alert, loc, message)
    }

    pub(crate) fn warning(loc: Option<Loc>, message: impl Into<String>) -> Self {
        Self::new(Level::Warning, loc, message)
    }

    #[cfg(test)]
    pub(crate) fn notice(loc: Option<Loc>, message: impl Into<String>) -> Self {
        Self::new(Level::Notice, loc, message)
    }

    /// `parsing [file:line] : <msg>` — the common keyword-level form.
    pub(crate) fn parsing(level: Level, loc: &Loc, msg: impl fmt::Display) -> Self {
        Self::new(level, Some(loc.clone()), format!("parsing [{loc}] : {msg}"))
    }

    /// `parsing [file:line]: <msg>` — the lexer/section-level form (no space
    /// before the colon, as HAProxy prints it).
    pub(crate) fn parsing_tight(level: Level, loc: &Loc, msg: impl fmt::Display) -> Self {
        Self::new(level, Some(loc.clone()), format!("parsing [{loc}]: {msg}"))
    }

    /// `[file:line] : '<ctx>' : <msg>` — the server-line form.
    pub(crate) fn at(level: Level, loc: &Loc, ctx: &str, msg: impl fmt::Display) -> Self {
        Self::new(
            level,
            Some(loc.clone()),
            format!("[{loc}] : '{ctx}' : {msg}"),
        )
    }

    pub(crate) fn is_alert(&self) -> bool {
        self.level == Level::Alert
    }

    /// One diagnostic as HAProxy 2.6 writes it to stderr (no trailing
    /// newline; continuation lines of multi-line messages are kept as is).
    pub(crate) fn render(&self, pid: u32) -> String {
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
pub(crate) const FATAL_ERRORS: &str = "Fatal errors found in configuration.";

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
