//! An `fcgi-app` section compiled for the backends that use it: its
//! regex built, its conditions bound to its own ACLs.

use crate::acl::eval::{AclSet, CompiledCond};
use crate::config::fcgi::FcgiApp;
use crate::config::model::LogFmt;

/// What the request pipeline reads to make a FastCGI request
/// (`http/fcgi.rs`).
#[derive(Debug)]
pub(crate) struct FcgiRt {
    pub(crate) docroot: String,
    pub(crate) index: Option<String>,
    pub(crate) path_info: Option<regex::bytes::Regex>,
    pub(crate) set_params: Vec<(String, LogFmt, Option<CompiledCond>)>,
    /// Field names, lower-cased.
    pub(crate) pass_headers: Vec<(String, Option<CompiledCond>)>,
    pub(crate) keep_conn: bool,
    pub(crate) acls: AclSet,
}

pub(crate) fn compile(app: &FcgiApp) -> FcgiRt {
    let acls = AclSet::new(&app.acls);
    let cond = |c: &Option<crate::acl::Condition>| c.as_ref().map(|c| acls.compile(c));
    FcgiRt {
        docroot: app.docroot.clone().unwrap_or_default(),
        index: app.index.clone(),
        // Checked when parsed.
        path_info: app
            .path_info
            .as_deref()
            .and_then(|r| regex::bytes::Regex::new(r).ok()),
        set_params: app
            .set_params
            .iter()
            .map(|(n, f, c)| (n.clone(), f.clone(), cond(c)))
            .collect(),
        pass_headers: app
            .pass_headers
            .iter()
            .map(|(n, c)| (n.to_ascii_lowercase(), cond(c)))
            .collect(),
        keep_conn: app.keep_conn,
        acls,
    }
}
