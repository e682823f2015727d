//! `http-after-response` rules: they run on every response the client
//! gets, the server's (after the `http-response` rules, `relay.rs`) and
//! the ones sluice makes itself (error pages, `return`, redirects, the
//! stats page), the backend's rules first, then the frontend's.

use std::borrow::Cow;

use bytes::Bytes;

use crate::acl::eval::{AclSet, CompiledCond};
use crate::config::model::HttpResponseAction;
use crate::http::rules::{self, Edits, FmtCtx};
use crate::snapshot::{BackendRt, FrontendRt};
use crate::wire::h1::Head;

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

/// A response sluice made (`page`: head and body, as sent) with the rules
/// applied, and its status then (`set-status` may change it). `seen` is
/// what the rules see of the exchange where the answer's sender has it
/// (the request, its variables, the client); without it, the proxies'
/// names and the status. Without rules the page is sent as it is.
pub(crate) fn local<'p>(
    fe: &FrontendRt,
    be: Option<&BackendRt>,
    status: u16,
    page: &'p [u8],
    seen: Option<&FmtCtx<'_>>,
) -> (Cow<'p, [u8]>, u16) {
    if fe.http_after.is_empty() && be.is_none_or(|b| b.http_after.is_empty()) {
        return (Cow::Borrowed(page), status);
    }
    let Some(end) = memchr::memmem::find(page, b"\r\n\r\n") else {
        return (Cow::Borrowed(page), status);
    };
    let Ok(mut head) = Head::parse_response(Bytes::copy_from_slice(&page[..end + 4])) else {
        return (Cow::Borrowed(page), status);
    };
    let body = &page[end + 4..];
    let unseen;
    let cx = match seen {
        Some(cx) => FmtCtx {
            backend: be.map(|b| b.name.as_str()),
            backend_id: be.map(|b| b.iid),
            res: None,
            ..*cx
        },
        None => {
            unseen = no_request();
            FmtCtx {
                req: unseen,
                src: None,
                frontend: &fe.name,
                backend: be.map(|b| b.name.as_str()),
                server: None,
                unique_id: None,
                res: None,
                frontend_id: fe.iid,
                backend_id: be.map(|b| b.iid),
                src_port: None,
                first_req: None,
                server_id: None,
                local: None,
                proxies: None,
                vars: None,
                tls: None,
                client: None,
                server_conn: None,
                req_body: None,
                res_body: None,
                stick: None,
            }
        }
    };
    let mut edits: Option<Edits> = None;
    for (rules, acls) in sets(fe, be) {
        for (action, cond) in rules {
            // The conditions no longer see the request (see `relay.rs`).
            if let Some(c) = cond
                && !acls.eval(
                    c,
                    &crate::sample::Ctx {
                        req_gone: true,
                        ..rules::sample_ctx(&FmtCtx {
                            res: Some(&head),
                            ..cx
                        })
                    },
                )
            {
                continue;
            }
            if *action == HttpResponseAction::Allow {
                break;
            }
            // `set-status`: the page as it is now, with its new status
            // line (the added fields stay before `connection`).
            if let HttpResponseAction::SetStatus { code, reason } = action {
                let reason = match reason {
                    Some(f) => rules::eval(
                        f,
                        &FmtCtx {
                            res: Some(&head),
                            ..cx
                        },
                    ),
                    None => crate::wire::error_pages::http_reason(*code)
                        .as_bytes()
                        .to_vec(),
                };
                let now = rewrite(&head.raw, &edits.take().unwrap_or_default());
                let rest = memchr::memmem::find(&now, b"\r\n").map_or(&now[..0], |i| &now[i..]);
                let line = format!("HTTP/1.{} {code:03} ", head.minor);
                let raw = [line.as_bytes(), &reason, rest].concat();
                if let Ok(h) = Head::parse_response(Bytes::from(raw)) {
                    head = h;
                }
                continue;
            }
            // A capture goes to the log line through the variables (the
            // record is not at hand here).
            if let HttpResponseAction::Capture { expr, slot } = action {
                let scx = rules::sample_ctx(&FmtCtx {
                    res: Some(&head),
                    ..cx
                });
                if let Some(vars) = cx.vars
                    && let Some(v) = expr
                        .eval(&scx)
                        .and_then(|s| s.cast(crate::sample::value::SmpType::Str))
                {
                    vars.capture(true, *slot as i64, v.bytes().unwrap_or(b""));
                }
                continue;
            }
            let mut caps = rules::CaptureSlots {
                slots: &mut [],
                lens: &[],
            };
            rules::edit_response(action, &mut head, &mut edits, &cx, &mut caps);
        }
    }
    let mut out = match &edits {
        Some(e) => rewrite(&head.raw, e),
        None => head.raw.to_vec(),
    };
    out.extend_from_slice(body);
    (Cow::Owned(out), head.status)
}

/// The request the rules see where the sender of a page has none: no
/// fields (a `path` or a header fetch finds nothing useful).
fn no_request() -> &'static Head {
    static EMPTY: std::sync::OnceLock<Head> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| {
        Head::parse_request(Bytes::from_static(b"GET / HTTP/1.1\r\n\r\n")).expect("a request line")
    })
}

/// `page` with the headers `e` drops left out, its replaced values in
/// place and its added ones put after the others, before `connection`
/// (which HAProxy writes last).
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
    for (i, line) in lines.enumerate() {
        let name = line.split(|&b| b == b':').next().unwrap_or(b"");
        if e.drops_at(i, name) {
            continue;
        }
        let target = if name.eq_ignore_ascii_case(b"connection") {
            &mut conn
        } else {
            &mut out
        };
        match e.replaced.iter().find(|(j, _)| *j == i) {
            Some((_, v)) => {
                target.extend_from_slice(name);
                target.extend_from_slice(b": ");
                target.extend_from_slice(v);
            }
            None => target.extend_from_slice(line),
        }
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
