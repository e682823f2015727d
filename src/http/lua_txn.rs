//! The transaction an `http-request lua.<name>` action works on: the
//! request head as the rules before it left it, and the edits the
//! action adds to theirs (`lua::Txn`).

use crate::config::model::{LogLevel, LuaAction, UriPart};
use crate::http::rules::{self, Edits, FmtCtx};
use crate::lua::{ActionEnd, Host, Txn};
use crate::sample::Ctx;
use crate::wire::h1::Head;

pub(super) struct ReqTxn<'r, 'a> {
    pub(super) cx: FmtCtx<'a>,
    /// The head the rules see, and the received one (edits count its
    /// fields).
    pub(super) head: &'r Head,
    pub(super) orig: &'r Head,
    pub(super) edits: &'r mut Option<Edits>,
    /// `txn:set_loglevel()`.
    pub(super) level: Option<LogLevel>,
}

impl Txn for ReqTxn<'_, '_> {
    fn sample(&self) -> Ctx<'_> {
        rules::sample_ctx(&self.cx)
    }

    fn headers(&self, res: bool) -> Vec<(String, Vec<u8>)> {
        if res {
            return Vec::new();
        }
        rules::head_lines(self.head, self.edits.as_ref())
            .into_iter()
            .skip(1)
            .filter_map(|l| {
                let colon = l.iter().position(|&c| c == b':')?;
                let name = String::from_utf8_lossy(&l[..colon]).to_ascii_lowercase();
                Some((name, l[colon + 1..].trim_ascii().to_vec()))
            })
            .collect()
    }

    fn add_header(&mut self, res: bool, name: &str, value: &[u8]) {
        if !res {
            self.edits
                .get_or_insert_with(Default::default)
                .add_header(name, value.to_vec());
        }
    }

    fn del_header(&mut self, res: bool, name: &str) {
        if !res {
            self.edits
                .get_or_insert_with(Default::default)
                .del_header(name);
        }
    }

    fn rep_header(
        &mut self,
        res: bool,
        name: &str,
        re: &regex::bytes::Regex,
        with: &[u8],
        value: bool,
    ) {
        if res {
            return;
        }
        let e = self.edits.get_or_insert_with(Default::default);
        if value {
            e.replace_value(self.orig, name, re, with);
        } else {
            e.replace_header(self.orig, name, re, with);
        }
    }

    fn set_target(&mut self, part: &str, value: &[u8]) {
        let e = self.edits.get_or_insert_with(Default::default);
        let part = match part {
            "method" => {
                e.method = Some(value.to_vec());
                return;
            }
            "path" => UriPart::Path,
            "query" => UriPart::Query,
            _ => UriPart::Uri,
        };
        let cur = e.target.as_deref().unwrap_or(self.head.target());
        e.target = Some(rules::set_part(part, cur, value));
        if part == UriPart::Uri {
            e.host_from_target(self.orig);
        }
    }

    fn set_loglevel(&mut self, level: u8) {
        self.level = Some(LogLevel::Severity(level));
    }
}

/// Runs `a` over the request; how it ended. A configuration whose
/// scripts are gone (never: the rule was read with them) continues.
pub(super) async fn run_request(a: &LuaAction, t: &mut ReqTxn<'_, '_>) -> ActionEnd {
    let Some(scripts) = crate::sample::script::active() else {
        return ActionEnd::Continue;
    };
    let Some(host) = scripts.as_any().downcast_ref::<Host>() else {
        return ActionEnd::Continue;
    };
    host.run_action(&a.name, &a.args, true, t).await
}
