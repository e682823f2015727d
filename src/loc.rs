//! Where a statement was written. A leaf: the config front end, the ACL
//! parser and every diagnostic name places with it, and it names nothing.

use std::sync::Arc;

/// Where a statement was written: the original file and line, never a line
/// of some merged text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Loc {
    pub(crate) file: Arc<str>,
    pub(crate) line: u32,
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}
