//! Where a statement was written. A leaf: the config front end, the ACL
//! parser and every diagnostic name places with it, and it names nothing.

use std::sync::Arc;

/// Where a statement was written: the original file and line, never a line
/// of some merged text.
#[derive(Debug, Clone)]
pub(crate) struct Loc {
    pub(crate) file: Arc<str>,
    pub(crate) line: u32,
}

/// Any two positions compare equal: a position says where a setting was
/// written, never what it is, so values that carry one (a proxy, a server,
/// a diagnostic) are equal when they mean the same, and a reload that only
/// moves a section or adds a comment changes nothing. Compare `file` and
/// `line` to tell two places apart.
impl PartialEq for Loc {
    fn eq(&self, _: &Loc) -> bool {
        true
    }
}

impl Eq for Loc {}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}
