//! `http-after-response` rules: they run on every response the client
//! gets, the server's (after the `http-response` rules, `relay.rs`) and
//! the ones sluice makes itself (error pages, `return`, redirects, the
//! stats page), the backend's rules first, then the frontend's.

use std::borrow::Cow;

use crate::acl::eval::{AclSet, CompiledCond};
use crate::config::model::HttpResponseAction;
use crate::http::rules::Edits;
use crate::snapshot::{BackendRt, FrontendRt};

type Rules = [(HttpResponseAction, Option<CompiledCond>)];

/// The rule lists that apply, in order, with the ACLs of their proxy (a
/// `listen` section's once).
pub(crate) fn sets<'a>(
    fe: &'a FrontendRt,
    be: Option<&'a BackendRt>,
) -> impl Iterator<Item = (&'a Rules, &'a AclSet)> {
    let be = be.filter(|b| b.iid != fe.iid);
    be.map(|b| (&b.http_after[..], &b.acls))
        .into_iter()
        .chain(std::iter::once((&fe.http_after[..], &fe.acls)))
}

/// Applies one rule's action to `e`; `value` renders a format.
pub(crate) fn apply(
    action: &HttpResponseAction,
    e: &mut Edits,
    value: impl Fn(&crate::config::model::LogFmt) -> Vec<u8>,
) {
    match action {
        HttpResponseAction::SetHeader { name, fmt } => e.set_header(name, value(fmt)),
        HttpResponseAction::AddHeader { name, fmt } => e.add_header(name, value(fmt)),
        HttpResponseAction::DelHeader { name, how } => e.del_matching(name, how),
        // Not among the actions the parser takes here.
        HttpResponseAction::Deny(_)
        | HttpResponseAction::Capture { .. }
        | HttpResponseAction::Var(_)
        | HttpResponseAction::WaitForBody(_)
        | HttpResponseAction::Map(_)
        | HttpResponseAction::Table(_)
        | HttpResponseAction::CacheStore(_)
        // `allow` ends its section's rules: the callers' loops stop.
        | HttpResponseAction::Allow => {}
    }
}

/// A response sluice made (`page`: head and body, as sent) with the rules
/// applied; values and conditions see the proxies' names and the status. Without rules the page is sent as it
/// is.
pub(crate) fn local<'p>(
    fe: &FrontendRt,
    be: Option<&BackendRt>,
    status: u16,
    page: &'p [u8],
) -> Cow<'p, [u8]> {
    if fe.http_after.is_empty() && be.is_none_or(|b| b.http_after.is_empty()) {
        return Cow::Borrowed(page);
    }
    let cx = crate::sample::Ctx {
        frontend: &fe.name,
        backend: be.map(|b| b.name.as_str()),
        status: Some(status),
        ..Default::default()
    };
    let mut e = Edits::default();
    for (rules, acls) in sets(fe, be) {
        for (action, cond) in rules {
            if let Some(c) = cond
                && !acls.eval(c, &cx)
            {
                continue;
            }
            if *action == HttpResponseAction::Allow {
                break;
            }
            apply(action, &mut e, |f| f.render(&cx));
        }
    }
    Cow::Owned(rewrite(page, &e))
}

/// `page` with the headers `e` drops left out and its added ones put after
/// the others, before `connection` (which HAProxy writes last).
fn rewrite(page: &[u8], e: &Edits) -> Vec<u8> {
    let Some(end) = memchr::memmem::find(page, b"\r\n\r\n") else {
        return page.to_vec();
    };
    let (head, body) = (&page[..end], &page[end + 4..]);
    let mut out = Vec::with_capacity(page.len() + 64);
    let mut lines = memchr::memmem::find_iter(head, b"\r\n")
        .chain(std::iter::once(head.len()))
        .scan(0, |start, stop| {
            let line = &head[*start..stop];
            *start = stop + 2;
            Some(line)
        });
    if let Some(status_line) = lines.next() {
        out.extend_from_slice(status_line);
        out.extend_from_slice(b"\r\n");
    }
    let mut conn = Vec::new();
    for line in lines {
        let name = line.split(|&b| b == b':').next().unwrap_or(b"");
        if e.drops(name) {
            continue;
        }
        let target = if name.eq_ignore_ascii_case(b"connection") {
            &mut conn
        } else {
            &mut out
        };
        target.extend_from_slice(line);
        target.extend_from_slice(b"\r\n");
    }
    for (n, v) in &e.add {
        out.extend_from_slice(n.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(&conn);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_rewritten_around_connection() {
        let mut e = Edits::default();
        e.set_header("x-a", b"1".to_vec());
        e.del_header("Cache-Control");
        let page = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 2\r\ncache-control: no-cache\r\nconnection: close\r\n\r\nok";
        assert_eq!(
            rewrite(page, &e),
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 2\r\nx-a: 1\r\nconnection: close\r\n\r\nok"
        );
    }
}
