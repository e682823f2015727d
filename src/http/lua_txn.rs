//! The transaction an `http-request lua.<name>` action works on: the
//! request head as the rules before it left it, and the edits the
//! action adds to theirs (`lua::Txn`).

use crate::config::model::{LogLevel, LuaAction, UriPart};
use crate::http::rules::{self, Edits, FmtCtx};
use crate::lua::{ActionEnd, Host, ServiceEnd, Txn};
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
    /// An HTTP service's request body, and how much of it the script
    /// read.
    pub(super) body: Vec<u8>,
    body_read: usize,
    /// The log targets of the rule's proxy, for the script's errors.
    pub(super) log: Option<&'r crate::snapshot::log_setup::LogSetup>,
    /// `txn:done(reply)`: the answer.
    pub(super) reply: Option<crate::lua::txn::Reply>,
    /// `txn:set_tos()`, `txn:set_mark()`.
    pub(super) marks: rules::SockMarks,
}

impl<'r, 'a> ReqTxn<'r, 'a> {
    pub(super) fn new(
        cx: FmtCtx<'a>,
        head: &'r Head,
        orig: &'r Head,
        edits: &'r mut Option<Edits>,
    ) -> Self {
        ReqTxn {
            cx,
            head,
            orig,
            edits,
            level: None,
            body: Vec::new(),
            body_read: 0,
            log: None,
            reply: None,
            marks: rules::SockMarks::default(),
        }
    }
}

impl Txn for ReqTxn<'_, '_> {
    fn sample(&self) -> Ctx<'_> {
        rules::sample_ctx(&self.cx)
    }

    fn headers(&self, res: bool) -> Vec<(String, Vec<u8>)> {
        if res {
            return Vec::new();
        }
        header_fields(self.head, self.edits.as_ref())
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

    fn request_line(&self) -> [Vec<u8>; 4] {
        let target = self
            .edits
            .as_ref()
            .and_then(|e| e.target.as_deref())
            .unwrap_or(self.head.target());
        let method = self
            .edits
            .as_ref()
            .and_then(|e| e.method.as_deref())
            .unwrap_or(self.head.method());
        let (path, qs) = match target.iter().position(|&c| c == b'?') {
            Some(i) => (&target[..i], &target[i + 1..]),
            None => (target, &b""[..]),
        };
        let version = format!("HTTP/1.{}", self.head.minor).into_bytes();
        [method.to_vec(), path.to_vec(), qs.to_vec(), version]
    }

    fn set_loglevel(&mut self, level: u8) {
        self.level = Some(LogLevel::Severity(level));
    }

    fn body_len(&self) -> usize {
        self.body.len()
    }

    fn log_to(&self) -> Option<&crate::snapshot::log_setup::LogSetup> {
        self.log
    }

    fn set_reply(&mut self, reply: crate::lua::txn::Reply) {
        self.reply = Some(reply);
    }

    fn set_sock_mark(&mut self, marks: rules::SockMarks) {
        self.marks.merge(marks);
    }

    fn read_body(&mut self, n: Option<usize>, line: bool) -> Vec<u8> {
        let rest = &self.body[self.body_read..];
        let take = if line {
            rest.iter()
                .position(|&c| c == b'\n')
                .map_or(rest.len(), |i| i + 1)
        } else {
            n.map_or(rest.len(), |n| n.min(rest.len()))
        };
        self.body_read += take;
        rest[..take].to_vec()
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
    // Boxed: the script's driver (about 5 KB, its I/O waits inline)
    // stays out of the rules' future, and so out of every connection's.
    Box::pin(host.run_action(&a.name, &a.args, crate::lua::HTTP_REQ, t)).await
}

/// Runs the HTTP service `name` over the request: the response it
/// composed (None: it failed, or sent nothing, HAProxy's 500).
pub(super) async fn run_service(
    name: &str,
    t: &mut ReqTxn<'_, '_>,
) -> Option<crate::lua::txn::Reply> {
    let scripts = crate::sample::script::active()?;
    let host = scripts.as_any().downcast_ref::<Host>()?;
    // Boxed, as in `run_request`.
    match Box::pin(host.run_service(name, t)).await {
        ServiceEnd::Reply(r) => Some(r),
        ServiceEnd::Failed => None,
    }
}

/// A service's response as HAProxy sends it: its status line (the
/// client's version), its headers in the order added, then its body:
/// as it is under a `content-length` the service set, else in one chunk
/// for an HTTP/1.1 client, else up to the close. Whether the connection
/// stays open goes with it, and the bytes of chunk framing (which
/// HAProxy's `%B` leaves out).
pub(super) fn render(r: &crate::lua::txn::Reply, minor: u8, keep: bool) -> (Vec<u8>, bool, u64) {
    let status = r.status.unwrap_or(200);
    let reason = r.reason.clone().unwrap_or_else(|| {
        crate::wire::error_pages::http_reason(status)
            .as_bytes()
            .to_vec()
    });
    let mut out = format!("HTTP/1.{minor} {status} ").into_bytes();
    out.extend_from_slice(&reason);
    out.extend_from_slice(b"\r\n");
    for (n, v) in &r.headers {
        out.extend_from_slice(n.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    // 1xx, 204 and 304 answers have no body, hence no framing.
    let bodiless = status < 200 || status == 204 || status == 304;
    let sized = bodiless || r.headers.iter().any(|(n, _)| n == "content-length");
    let chunked = !sized && minor >= 1;
    let keep = keep && (sized || chunked);
    if chunked {
        out.extend_from_slice(b"transfer-encoding: chunked\r\n");
    }
    if !keep && minor >= 1 {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    let framed_from = out.len();
    if chunked {
        if !r.body.is_empty() {
            out.extend_from_slice(format!("{:X}\r\n", r.body.len()).as_bytes());
            out.extend_from_slice(&r.body);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
    } else if !bodiless {
        out.extend_from_slice(&r.body);
    }
    let framing = if chunked {
        (out.len() - framed_from - r.body.len()) as u64
    } else {
        0
    };
    (out, keep, framing)
}

/// The transaction an `http-response lua.<name>` action works on: the
/// response head as the rules before it left it, and the edits it adds.
pub(super) struct ResTxn<'r, 'a> {
    pub(super) cx: FmtCtx<'a>,
    pub(super) resp: &'r Head,
    pub(super) edits: &'r mut Option<Edits>,
    /// `txn.http:res_set_status()`: code and reason, applied after.
    pub(super) status: Option<(u16, Vec<u8>)>,
    pub(super) level: Option<LogLevel>,
    /// The log targets of the rule's proxy, for the script's errors.
    pub(super) log: Option<&'r crate::snapshot::log_setup::LogSetup>,
    /// `txn:done(reply)`: the answer that replaces the response.
    pub(super) reply: Option<crate::lua::txn::Reply>,
    /// `txn:set_tos()`, `txn:set_mark()`.
    pub(super) marks: rules::SockMarks,
}

impl Txn for ResTxn<'_, '_> {
    fn sample(&self) -> Ctx<'_> {
        rules::sample_ctx(&self.cx)
    }

    fn headers(&self, res: bool) -> Vec<(String, Vec<u8>)> {
        if res {
            header_fields(self.resp, self.edits.as_ref())
        } else {
            header_fields(self.cx.req, None)
        }
    }

    fn add_header(&mut self, res: bool, name: &str, value: &[u8]) {
        if res {
            self.edits
                .get_or_insert_with(Default::default)
                .add_header(name, value.to_vec());
        }
    }

    fn del_header(&mut self, res: bool, name: &str) {
        if res {
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
        if !res {
            return;
        }
        let e = self.edits.get_or_insert_with(Default::default);
        if value {
            e.replace_value(self.resp, name, re, with);
        } else {
            e.replace_header(self.resp, name, re, with);
        }
    }

    fn set_status(&mut self, code: u16, reason: Option<&[u8]>) {
        let reason = reason.map_or_else(
            || {
                crate::wire::error_pages::http_reason(code)
                    .as_bytes()
                    .to_vec()
            },
            <[u8]>::to_vec,
        );
        self.status = Some((code, reason));
    }

    fn set_loglevel(&mut self, level: u8) {
        self.level = Some(LogLevel::Severity(level));
    }

    fn log_to(&self) -> Option<&crate::snapshot::log_setup::LogSetup> {
        self.log
    }

    fn set_reply(&mut self, reply: crate::lua::txn::Reply) {
        self.reply = Some(reply);
    }

    fn set_sock_mark(&mut self, marks: rules::SockMarks) {
        self.marks.merge(marks);
    }
}

/// The header fields of `head` as edits leave them: (lower-case name,
/// value).
fn header_fields(head: &Head, edits: Option<&Edits>) -> Vec<(String, Vec<u8>)> {
    rules::head_lines(head, edits)
        .into_iter()
        .skip(1)
        .filter_map(|l| {
            let colon = l.iter().position(|&c| c == b':')?;
            let name = String::from_utf8_lossy(&l[..colon]).to_ascii_lowercase();
            Some((name, l[colon + 1..].trim_ascii().to_vec()))
        })
        .collect()
}

/// Runs `a` over the response; how it ended. Its sleeps and I/O wait
/// on the worker, as on the request.
pub(super) async fn run_response(a: &LuaAction, t: &mut ResTxn<'_, '_>) -> ActionEnd {
    let Some(scripts) = crate::sample::script::active() else {
        return ActionEnd::Continue;
    };
    let Some(host) = scripts.as_any().downcast_ref::<Host>() else {
        return ActionEnd::Continue;
    };
    host.run_action(&a.name, &a.args, crate::lua::HTTP_RES, t)
        .await
}
