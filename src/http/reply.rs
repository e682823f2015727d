//! The answers `http-request return|deny` and `http-response deny` make up
//! from their own arguments (HAProxy's `http_reply`): the status line, the
//! `hdr` fields, then `content-length` and `content-type`, then the payload.
//! A deny without reply arguments sends the error page of its status
//! instead, through the error-page path (`errorfile` first).

use bytes::{BufMut, BytesMut};

use crate::config::model::{HttpReply, ReplyBody};
use crate::http::rules::{self, FmtCtx};
use crate::wire::error_pages;

/// The bytes of `reply`, or `None` when it is the error page of its status.
/// `keep` says whether the client connection stays open after it.
pub(crate) fn render(reply: &HttpReply, cx: &FmtCtx<'_>, keep: bool) -> Option<BytesMut> {
    let evaluated;
    let body: &[u8] = match &reply.body {
        ReplyBody::ErrorPage | ReplyBody::Section(_) => return None,
        ReplyBody::Message(page) => return Some(with_close(page, keep)),
        ReplyBody::Static(bytes) => bytes,
        ReplyBody::Format(fmt) => {
            evaluated = rules::eval(fmt, cx);
            &evaluated
        }
    };
    let mut out = BytesMut::with_capacity(128 + body.len());
    out.put_slice(b"HTTP/1.1 ");
    out.put_slice(reply.status.to_string().as_bytes());
    out.put_u8(b' ');
    out.put_slice(error_pages::http_reason(reply.status).as_bytes());
    out.put_slice(b"\r\n");
    for (name, fmt) in &reply.headers {
        out.put_slice(name.as_bytes());
        out.put_slice(b": ");
        out.put_slice(&rules::eval(fmt, cx));
        out.put_slice(b"\r\n");
    }
    out.put_slice(b"content-length: ");
    out.put_slice(body.len().to_string().as_bytes());
    out.put_slice(b"\r\n");
    if let Some(t) = &reply.content_type
        && !body.is_empty()
    {
        out.put_slice(b"content-type: ");
        out.put_slice(t.as_bytes());
        out.put_slice(b"\r\n");
    }
    if !keep {
        out.put_slice(b"connection: close\r\n");
    }
    out.put_slice(b"\r\n");
    out.put_slice(body);
    Some(out)
}

/// A whole response (an error page) with `connection: close` added at the
/// end of its head when the connection is not kept.
pub(crate) fn with_close(page: &[u8], keep: bool) -> BytesMut {
    match keep {
        true => BytesMut::from(page),
        false => with_header(page, b"connection: close\r\n"),
    }
}

/// A whole response with one header line added at the end of its head.
pub(crate) fn with_header(page: &[u8], line: &[u8]) -> BytesMut {
    let mut out = BytesMut::with_capacity(page.len() + line.len());
    match memchr::memmem::find(page, b"\r\n\r\n") {
        Some(end) => {
            out.put_slice(&page[..end + 2]);
            out.put_slice(line);
            out.put_slice(&page[end + 2..]);
        }
        None => out.put_slice(page),
    }
    out
}

/// `http-request auth`: the 401 page (the proxy's `errorfile 401` if it
/// has one, `custom`) with the challenge of `realm` added at the end of
/// its head, as HAProxy sends it.
pub(crate) fn auth_required(custom: Option<&[u8]>, realm: &str, keep: bool) -> BytesMut {
    let page = custom.unwrap_or_else(|| error_pages::response(401));
    let end = memchr::memmem::find(page, b"\r\n\r\n").map_or(page.len(), |e| e + 2);
    let mut out = BytesMut::with_capacity(page.len() + realm.len() + 64);
    out.put_slice(&page[..end]);
    out.put_slice(b"www-authenticate: Basic realm=\"");
    out.put_slice(realm.as_bytes());
    out.put_slice(b"\"\r\n");
    if !keep {
        out.put_slice(b"connection: close\r\n");
    }
    out.put_slice(&page[end..]);
    out
}
