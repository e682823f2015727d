//! The compiled `req*` / `rsp*` filters of HAProxy <= 2.0 of one proxy and
//! direction: data the snapshot holds; the engine that applies them is
//! `http/legacy.rs`.

use crate::acl::eval::{AclSet, CompiledCond};
use crate::config::model::{LegacyAction, LegacyRules};

/// A proxy's filters and added lines for one direction, conditions
/// compiled against the proxy's ACLs.
#[derive(Debug)]
pub(crate) struct LegacyRt {
    pub(crate) filters: Vec<(regex::bytes::Regex, LegacyAction, Option<CompiledCond>)>,
    pub(crate) adds: Vec<(Vec<u8>, Option<CompiledCond>)>,
}

impl LegacyRt {
    /// None when the proxy has no such rule (the common case).
    pub(crate) fn compile(rules: &LegacyRules, acls: &AclSet) -> Option<Box<LegacyRt>> {
        if rules.is_empty() {
            return None;
        }
        let cond = |c: &Option<crate::acl::Condition>| c.as_ref().map(|c| acls.compile(c));
        Some(Box::new(LegacyRt {
            filters: rules
                .filters
                .iter()
                .map(|f| ((*f.re).clone(), f.action.clone(), cond(&f.cond)))
                .collect(),
            adds: rules
                .adds
                .iter()
                .map(|a| (a.line.clone(), cond(&a.cond)))
                .collect(),
        }))
    }
}
