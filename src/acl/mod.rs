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
use crate::sample::pattern::{Map, MatchKind};
use crate::sample::value::Sample;

/// One `acl <name> <criterion> [flags] <values...>` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AclDef {
    pub(crate) name: String,
    /// Where the sample comes from (a fetch and its converters).
    pub(crate) expr: Expr,
    /// The matcher, its flags and the patterns (inline and from `-f`
    /// files, read when the configuration is).
    pub(crate) patterns: AclPatterns,
    /// The line gives no pattern (nor `--`, nor a file) to a matcher that
    /// needs one: it never matches, and HAProxy warns.
    pub(crate) never_matches: bool,
    pub(crate) loc: Loc,
}

/// The patterns of one `acl` line: those written on it, then those of
/// each `-f` file, each a pattern reference of its own the CLI can change
/// (a file's shared by every ACL line that reads it with the same matcher).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AclPatterns {
    kind: MatchKind,
    sets: Vec<Arc<Map>>,
}

impl AclPatterns {
    pub(crate) fn new(kind: MatchKind, sets: Vec<Arc<Map>>) -> AclPatterns {
        AclPatterns { kind, sets }
    }

    pub(crate) fn kind(&self) -> MatchKind {
        self.kind
    }

    /// No pattern now (the CLI may add some).
    pub(crate) fn is_empty(&self) -> bool {
        self.sets.iter().all(|m| m.len() == 0)
    }

    /// Every pattern as written, in order.
    pub(crate) fn texts(&self) -> Vec<String> {
        (self.sets.iter())
            .flat_map(|m| m.with_keys(|k| k.texts().map(String::from).collect::<Vec<_>>()))
            .collect()
    }

    /// Whether `f` holds for the patterns (as written) of one list.
    pub(crate) fn any_list(&self, f: impl Fn(&mut dyn Iterator<Item = &str>) -> bool) -> bool {
        self.sets.iter().any(|m| m.with_keys(|k| f(&mut k.texts())))
    }

    /// Whether sample `s` matches one pattern of one list.
    pub(crate) fn matches(&self, s: Sample<'_>) -> bool {
        match &self.sets[..] {
            [one] => one.matches(s),
            sets => sets.iter().any(|m| m.matches(s.clone())),
        }
    }
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

impl Condition {
    /// Whether one of its ACLs (among `acls`, its proxy's) reads the
    /// request's contents: its buffer, headers or body.
    pub(crate) fn reads_request(&self, acls: &[AclDef]) -> bool {
        use crate::sample::stage::Src;
        self.groups.iter().flatten().any(|t| {
            acls.iter().filter(|a| a.name == t.name).any(|a| {
                let u = a.expr.fetch().uses;
                [Src::L6req, Src::Hrqhv, Src::Hrqhp, Src::Hrqbo]
                    .iter()
                    .any(|s| u.has(*s))
            })
        })
    }
}
