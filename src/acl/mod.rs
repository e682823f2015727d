//! ACLs: a sample expression of the one sample engine (`crate::sample`),
//! tested against patterns with a matcher, and the `if`/`unless`
//! conditions that combine named ACLs.
//!
//! `parse` turns config words into these types (pure, used by `config`),
//! with HAProxy's derived keyword names (`path_beg`, `hdr_dom`...), flags,
//! pattern files and predefined ACLs; `eval` tests a compiled condition
//! against a request's [`crate::sample::Ctx`] on the data plane.

pub(crate) mod eval;
pub(crate) mod parse;

use std::sync::Arc;

use crate::loc::Loc;
use crate::sample::Expr;
use crate::sample::pattern::PatternSet;

/// One `acl <name> <criterion> [flags] <values...>` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AclDef {
    pub(crate) name: String,
    /// Where the sample comes from (a fetch and its converters).
    pub(crate) expr: Expr,
    /// The matcher, its flags and the patterns (inline and from `-f`
    /// files, read when the configuration is).
    pub(crate) patterns: Arc<PatternSet>,
    /// The line gives no pattern (nor `--`, nor a file) to a matcher that
    /// needs one: it never matches, and HAProxy warns.
    pub(crate) never_matches: bool,
    pub(crate) loc: Loc,
}

/// A reference to a named ACL inside a condition, possibly negated with `!`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AclTerm {
    pub(crate) name: String,
    pub(crate) negated: bool,
}

/// `if|unless <cond>`: an OR of AND-groups (juxtaposition = AND, `or`/`||`
/// separates groups). `unless` negates the whole result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Condition {
    pub(crate) unless: bool,
    pub(crate) groups: Vec<Vec<AclTerm>>,
}
