//! Request smuggling and HTTP/1 framing: a table of hostile or borderline
//! messages, each sent over raw TCP to sluice in front of a raw-TCP backend
//! that records every byte it receives.
//!
//! Every case asserts what the client got (statuses, and whether the
//! connection was closed), exactly which bytes reached the backend (nothing,
//! or the request as sluice normalises it), the ereq / eresp counters of
//! `show stat`, and then that a legitimate request on a new connection still
//! works.
//!
//! Expectations were decided against HAProxy 2.6.12 running the same config
//! in front of the same kind of backend (`tests/oracle/h1_oracle.py`, cases
//! in `tests/oracle/cases*.py`). Each case's `haproxy` note says what HAProxy
//! does where sluice differs on purpose; sluice is never looser than HAProxy
//! about what reaches a server, only stricter. Normalisation differs by
//! design: HAProxy lower-cases header names, sluice keeps them and appends
//! its own `content-length` / `transfer-encoding` after the other fields.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::raw::{OK, RawBackend, complete_request, find};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

// The raw backend (records every byte, answers OK): tests/support/raw.rs.

// ---------------------------------------------------------------------------
// Raw client

/// What the client saw: the statuses of the complete responses, and whether
/// the connection was closed after them.
#[derive(Debug, PartialEq)]
struct Seen {
    statuses: Vec<u16>,
    closed: bool,
}

/// Length and status of the first complete response in `buf`.
fn complete_response(buf: &[u8], head_req: bool) -> Option<(usize, u16)> {
    let e = find(buf, b"\r\n\r\n", 0)?;
    let head = String::from_utf8_lossy(&buf[..e]).to_ascii_lowercase();
    let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
    let field = |name: &str| {
        head.lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == name)
            .map(|(_, v)| v.trim().to_string())
    };
    let p = e + 4;
    if head_req || status < 200 || status == 204 || status == 304 {
        return Some((p, status));
    }
    if field("transfer-encoding").is_some() {
        return complete_request(buf).map(|n| (n, status));
    }
    let n: usize = field("content-length")?.parse().ok()?;
    (buf.len() >= p + n).then_some((p + n, status))
}

/// Sends `parts` (200 ms apart) and reads until `want` responses arrived and
/// then, if `want_close`, until the connection closes.
async fn exchange(addr: SocketAddr, parts: &[Vec<u8>], want: usize, want_close: bool) -> Seen {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // The peer may already have refused and closed: keep reading.
        if s.write_all(p).await.is_err() {
            break;
        }
    }
    let mut buf = Vec::new();
    let mut seen = Seen {
        statuses: Vec::new(),
        closed: false,
    };
    let end = Instant::now() + Duration::from_secs(8);
    let mut chunk = [0u8; 65536];
    loop {
        while let Some((n, st)) = complete_response(&buf, false) {
            buf.drain(..n);
            seen.statuses.push(st);
        }
        if seen.statuses.len() >= want && !want_close {
            // Give a stray extra response a moment to show up.
            match tokio::time::timeout(Duration::from_millis(50), s.read(&mut chunk)).await {
                Err(_) => return seen,
                Ok(Ok(0)) | Ok(Err(_)) => {
                    seen.closed = true;
                    return seen;
                }
                Ok(Ok(n)) => {
                    buf.extend_from_slice(&chunk[..n]);
                    continue;
                }
            }
        }
        let left = end.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut chunk)).await {
            Err(_) => return seen,
            Ok(Ok(0)) | Ok(Err(_)) => {
                seen.closed = true;
                assert!(
                    buf.is_empty(),
                    "incomplete response before close: {:?}",
                    String::from_utf8_lossy(&buf)
                );
                return seen;
            }
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

// ---------------------------------------------------------------------------
// The table

/// Which error counter a case must move by one.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Err {
    None,
    /// Frontend ereq.
    Req,
    /// Backend and server eresp.
    Resp,
}

struct Case {
    name: &'static str,
    /// Request bytes, sent in parts 200 ms apart.
    req: Vec<Vec<u8>>,
    /// The backend's answer (default: a valid 200).
    resp: Option<Vec<u8>>,
    statuses: Vec<u16>,
    closed: bool,
    /// Exactly what the backend must receive (empty: nothing).
    backend: Vec<u8>,
    err: Err,
    /// What HAProxy 2.6 does, where sluice differs on purpose.
    #[allow(dead_code)]
    haproxy: &'static str,
}

fn post(hdrs: &str, body: &[u8]) -> Vec<u8> {
    let mut v = format!("POST / HTTP/1.1\r\nHost: a\r\n{hdrs}\r\n").into_bytes();
    v.extend_from_slice(body);
    v
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
/// What the server receives for `GET`: HAProxy 2.6 sends field names in
/// lower case.
const FWD_GET: &[u8] = b"GET / HTTP/1.1\r\nhost: a\r\n\r\n";
const CH: &[u8] = b"5\r\nhello\r\n0\r\n\r\n";
const FWD_CL: &[u8] = b"POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 5\r\n\r\nhello";
const FWD_CH_HEAD: &[u8] = b"POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n";

/// A request refused with `status` before anything reaches the backend.
fn refused(name: &'static str, req: Vec<u8>, status: u16, haproxy: &'static str) -> Case {
    Case {
        name,
        req: vec![req],
        resp: None,
        statuses: vec![status],
        closed: true,
        backend: Vec::new(),
        err: Err::Req,
        haproxy,
    }
}

/// A request forwarded as `fwd`, answered 200 on a kept-alive connection.
fn passes(name: &'static str, req: Vec<u8>, fwd: Vec<u8>, haproxy: &'static str) -> Case {
    Case {
        name,
        req: vec![req],
        resp: None,
        statuses: vec![200],
        closed: false,
        backend: fwd,
        err: Err::None,
        haproxy,
    }
}

/// A GET whose answer from the server is `resp`, refused with a 502.
fn bad_response(name: &'static str, resp: &[u8], haproxy: &'static str) -> Case {
    Case {
        name,
        req: vec![GET.to_vec()],
        resp: Some(resp.to_vec()),
        statuses: vec![502],
        closed: false,
        backend: FWD_GET.to_vec(),
        err: Err::Resp,
        haproxy,
    }
}

fn head_of(n: usize) -> Vec<u8> {
    let pre = b"GET / HTTP/1.1\r\nHost: a\r\nX: ";
    let mut v = pre.to_vec();
    v.resize(n - 4, b'a');
    v.extend_from_slice(b"\r\n\r\n");
    v
}

fn many_headers(n: usize) -> Vec<u8> {
    let mut v = b"GET / HTTP/1.1\r\n".to_vec();
    for i in 0..n {
        v.extend_from_slice(format!("X-{i}: a\r\n").as_bytes());
    }
    v.extend_from_slice(b"\r\n");
    v
}

/// `head` as the server receives it: its field names in lower case, as
/// HAProxy 2.6 sends them.
fn forwarded(head: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(head.len());
    for (i, line) in head.split_inclusive(|&b| b == b'\n').enumerate() {
        match line.iter().position(|&b| b == b':') {
            Some(colon) if i > 0 => {
                out.extend(line[..colon].iter().map(u8::to_ascii_lowercase));
                out.extend_from_slice(&line[colon..]);
            }
            _ => out.extend_from_slice(line),
        }
    }
    out
}

fn cases() -> Vec<Case> {
    vec![
        // --- baselines
        passes("get", GET.to_vec(), FWD_GET.to_vec(), ""),
        passes(
            "post-cl",
            post("Content-Length: 5\r\n", b"hello"),
            FWD_CL.to_vec(),
            "",
        ),
        passes(
            "post-chunked",
            post("Transfer-Encoding: chunked\r\n", CH),
            cat(&[FWD_CH_HEAD, CH]),
            "",
        ),
        // --- Content-Length
        passes(
            "cl-dup-equal",
            post("Content-Length: 5\r\nContent-Length: 5\r\n", b"hello"),
            FWD_CL.to_vec(),
            "",
        ),
        refused(
            "cl-dup-different",
            post("Content-Length: 5\r\nContent-Length: 6\r\n", b"hello!"),
            400,
            "",
        ),
        passes(
            "cl-list-equal",
            post("Content-Length: 5 , 5\r\n", b"hello"),
            FWD_CL.to_vec(),
            "",
        ),
        refused(
            "cl-list-different",
            post("Content-Length: 5, 6\r\n", b"hello!"),
            400,
            "",
        ),
        refused("cl-plus", post("Content-Length: +5\r\n", b"hello"), 400, ""),
        refused("cl-minus", post("Content-Length: -5\r\n", b"hello"), 400, ""),
        refused("cl-hex", post("Content-Length: 0x5\r\n", b"hello"), 400, ""),
        refused(
            "cl-space-inside",
            post("Content-Length: 1 5\r\n", b"hello"),
            400,
            "",
        ),
        refused("cl-empty", post("Content-Length: \r\n", b"hello"), 400, ""),
        refused(
            "cl-trailing-comma",
            post("Content-Length: 5,\r\n", b"hello"),
            400,
            "",
        ),
        refused(
            "cl-overflow",
            post("Content-Length: 99999999999999999999999\r\n", b"hello"),
            400,
            "",
        ),
        passes(
            "cl-leading-zeros",
            post("Content-Length: 005\r\n", b"hello"),
            FWD_CL.to_vec(),
            "forwards `content-length: 005` as is",
        ),
        // --- Transfer-Encoding
        Case {
            closed: true,
            ..passes(
                "cl-then-te",
                post("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", CH),
                cat(&[FWD_CH_HEAD, CH]),
                "",
            )
        },
        Case {
            closed: true,
            ..passes(
                "te-then-cl",
                post("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", CH),
                cat(&[FWD_CH_HEAD, CH]),
                "",
            )
        },
        passes(
            "te-chunked-tab",
            post("Transfer-Encoding: chunked\t\r\n", CH),
            cat(&[FWD_CH_HEAD, CH]),
            "",
        ),
        passes(
            "te-chunked-uppercase",
            post("Transfer-Encoding: CHUNKED\r\n", CH),
            cat(&[FWD_CH_HEAD, CH]),
            "forwards the value as received",
        ),
        refused(
            "te-leading-comma",
            post("Transfer-Encoding: , chunked\r\n", CH),
            400,
            "422 (reads the empty element as an unknown coding)",
        ),
        refused(
            "te-trailing-comma",
            post("Transfer-Encoding: chunked,\r\n", CH),
            400,
            "accepts and forwards `chunked,` (RFC 9110 §5.6.1 empty element)",
        ),
        refused(
            "te-chunked-gzip",
            post("Transfer-Encoding: chunked, gzip\r\n", CH),
            400,
            "",
        ),
        refused(
            "te-gzip-chunked",
            post("Transfer-Encoding: gzip, chunked\r\n", CH),
            422,
            "",
        ),
        refused(
            "te-chunked-twice-list",
            post("Transfer-Encoding: chunked, chunked\r\n", CH),
            400,
            "",
        ),
        refused(
            "te-chunked-twice-fields",
            post(
                "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
                CH,
            ),
            400,
            "",
        ),
        refused(
            "te-identity",
            post("Transfer-Encoding: identity\r\n", CH),
            400,
            "",
        ),
        refused(
            "te-xchunked",
            post("Transfer-Encoding: xchunked\r\n", CH),
            400,
            "",
        ),
        refused(
            "te-quoted",
            post("Transfer-Encoding: \"chunked\"\r\n", CH),
            400,
            "",
        ),
        refused(
            "te-vertical-tab",
            post("Transfer-Encoding: \x0bchunked\r\n", CH),
            400,
            "",
        ),
        refused(
            "te-http10",
            b"POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
                .to_vec(),
            400,
            "forwards it chunked as HTTP/1.0, then closes (RFC 9112 §6.1: faulty framing)",
        ),
        // --- bytes inside fields
        refused(
            "nul-in-value",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n".to_vec(),
            400,
            "forwards the NUL",
        ),
        refused(
            "cr-in-value",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n".to_vec(),
            400,
            "",
        ),
        passes(
            "lf-in-value-is-a-line-end",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\nB: c\r\n\r\n".to_vec(),
            b"GET / HTTP/1.1\r\nhost: a\r\nx: a\r\nb: c\r\n\r\n".to_vec(),
            "",
        ),
        passes(
            "bare-lf-line-ends",
            b"GET / HTTP/1.1\nHost: a\nX: b\n\n".to_vec(),
            b"GET / HTTP/1.1\r\nhost: a\r\nx: b\r\n\r\n".to_vec(),
            "",
        ),
        refused(
            "space-before-colon",
            post("Content-Length : 5\r\n", b"hello"),
            400,
            "",
        ),
        refused(
            "tab-before-colon-te",
            post("Transfer-Encoding\t: chunked\r\n", CH),
            400,
            "",
        ),
        refused(
            "empty-header-name",
            b"GET / HTTP/1.1\r\nHost: a\r\n: x\r\n\r\n".to_vec(),
            400,
            "",
        ),
        refused(
            "bad-header-name-char",
            b"GET / HTTP/1.1\r\nHost: a\r\nX@Y: x\r\n\r\n".to_vec(),
            400,
            "",
        ),
        refused(
            "obs-fold",
            b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n".to_vec(),
            400,
            "unfolds to `x-a: b   c` and forwards",
        ),
        refused(
            "obs-fold-te",
            post("X-A: b\r\nTransfer-Encoding: gzip,\r\n chunked\r\n", CH),
            400,
            "422 (unfolded to `gzip, chunked`)",
        ),
        // --- chunked body
        refused(
            "chunk-size-not-hex",
            post("Transfer-Encoding: chunked\r\n", b"g\r\nhello\r\n0\r\n\r\n"),
            400,
            "",
        ),
        refused(
            "chunk-size-negative",
            post("Transfer-Encoding: chunked\r\n", b"-5\r\nhello\r\n0\r\n\r\n"),
            400,
            "",
        ),
        refused(
            "chunk-size-0x",
            post("Transfer-Encoding: chunked\r\n", b"0x5\r\nhello\r\n0\r\n\r\n"),
            400,
            "",
        ),
        refused(
            "chunk-size-overflow",
            post(
                "Transfer-Encoding: chunked\r\n",
                b"10000000000000005\r\nhello\r\n0\r\n\r\n",
            ),
            400,
            "",
        ),
        passes(
            "chunk-size-leading-zeros",
            post(
                "Transfer-Encoding: chunked\r\n",
                b"0000000000000005\r\nhello\r\n0\r\n\r\n",
            ),
            cat(&[FWD_CH_HEAD, b"5\r\nhello\r\n0\r\n\r\n"]),
            "",
        ),
        passes(
            "chunk-size-lower-case",
            post(
                "Transfer-Encoding: chunked\r\n",
                b"a\r\n0123456789\r\n000\r\n\r\n",
            ),
            cat(&[FWD_CH_HEAD, b"A\r\n0123456789\r\n0\r\n\r\n"]),
            "",
        ),
        refused(
            "chunk-size-bare-lf",
            post("Transfer-Encoding: chunked\r\n", b"5\nhello\r\n0\r\n\r\n"),
            400,
            "accepts a bare LF after the chunk size",
        ),
        refused(
            "chunk-data-no-crlf",
            post("Transfer-Encoding: chunked\r\n", b"5\r\nhelloXX0\r\n\r\n"),
            400,
            "",
        ),
        refused(
            "chunk-data-bare-lf",
            post("Transfer-Encoding: chunked\r\n", b"5\r\nhello\n0\r\n\r\n"),
            400,
            "accepts a bare LF after the chunk data",
        ),
        passes(
            "chunk-extension",
            post("Transfer-Encoding: chunked\r\n", b"5;a=b\r\nhello\r\n0\r\n\r\n"),
            cat(&[FWD_CH_HEAD, b"5\r\nhello\r\n0\r\n\r\n"]),
            "",
        ),
        passes(
            "chunk-extension-last-chunk",
            post(
                "Transfer-Encoding: chunked\r\n",
                b"5 ;a=b\r\nhello\r\n0;last=1\r\nX-T: 1\r\n\r\n",
            ),
            cat(&[FWD_CH_HEAD, b"5\r\nhello\r\n0\r\nx-t: 1\r\n\r\n"]),
            "",
        ),
        refused(
            "chunk-extension-nul",
            post("Transfer-Encoding: chunked\r\n", b"5;a\x00b\r\nhello\r\n0\r\n\r\n"),
            400,
            "accepts (and drops) it",
        ),
        refused(
            "chunk-extension-cr",
            post("Transfer-Encoding: chunked\r\n", b"5;a\rb\r\nhello\r\n0\r\n\r\n"),
            400,
            "",
        ),
        refused(
            "chunk-extension-lf",
            post("Transfer-Encoding: chunked\r\n", b"5;a\nb\r\nhello\r\n0\r\n\r\n"),
            400,
            "",
        ),
        passes(
            "chunk-trailer",
            post("Transfer-Encoding: chunked\r\n", b"5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n"),
            cat(&[FWD_CH_HEAD, b"5\r\nhello\r\n0\r\nx-t: 1\r\n\r\n"]),
            "",
        ),
        refused(
            "chunk-trailer-not-a-field",
            post("Transfer-Encoding: chunked\r\n", b"5\r\nhello\r\n0\r\nX-T 1\r\n\r\n"),
            400,
            "",
        ),
        // The last chunk without its final CRLF, then a request: the
        // request must not pass as a trailer. The body had started to flow.
        Case {
            req: vec![
                post("Transfer-Encoding: chunked\r\n", b"5\r\nhello\r\n0\r\n"),
                b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
            ],
            // The last chunk is held until the body is complete, as
            // HAProxy holds it.
            backend: cat(&[FWD_CH_HEAD, b"5\r\nhello\r\n"]),
            ..refused("chunk-missing-final-crlf", Vec::new(), 400, "")
        },
        // --- request line and target
        passes(
            "target-absolute",
            b"GET http://a/x HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
            b"GET http://a/x HTTP/1.1\r\nhost: a\r\n\r\n".to_vec(),
            "",
        ),
        refused(
            "target-absolute-host-mismatch",
            b"GET http://b/x HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
            400,
            "",
        ),
        passes(
            "target-asterisk-options",
            b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
            b"OPTIONS * HTTP/1.1\r\nhost: a\r\n\r\n".to_vec(),
            "",
        ),
        refused(
            "target-asterisk-get",
            b"GET * HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
            400,
            "forwards `GET *`",
        ),
        refused(
            "target-connect",
            b"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n".to_vec(),
            405,
            "forwards CONNECT to the server; sluice does not tunnel",
        ),
        refused(
            "target-authority-get",
            b"GET a:443 HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
            400,
            "",
        ),
        refused(
            "target-space",
            b"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
            400,
            "",
        ),
        refused(
            "version-1.2",
            b"GET / HTTP/1.2\r\nHost: a\r\n\r\n".to_vec(),
            400,
            "forwards it as HTTP/1.1",
        ),
        refused(
            "version-lowercase",
            b"GET / http/1.1\r\nHost: a\r\n\r\n".to_vec(),
            400,
            "",
        ),
        refused("http09", b"GET /\r\n\r\n".to_vec(), 400, ""),
        refused(
            "method-bad-char",
            b"G@T / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
            400,
            "",
        ),
        refused(
            "host-twice-different",
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n".to_vec(),
            400,
            "",
        ),
        refused(
            "host-twice-equal",
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n".to_vec(),
            400,
            "merges them into one (RFC 9112 §3.2 asks for a 400)",
        ),
        // --- Upgrade before 101: the bytes after the upgrade request are an
        // ordinary next request once the server did not switch.
        Case {
            statuses: vec![200, 200],
            ..passes(
                "upgrade-then-early-request",
                b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
                b"GET / HTTP/1.1\r\nhost: a\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\nGET /smuggled HTTP/1.1\r\nhost: a\r\n\r\n".to_vec(),
                "forwards Connection/Upgrade too (in place, as HAProxy 2.6); the server did not switch, so the pipelined request is parsed as a request",
            )
        },
        refused(
            "upgrade-websocket-without-key",
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n".to_vec(),
            400,
            "",
        ),
        // --- pipelining after a body
        Case {
            statuses: vec![200, 200],
            ..passes(
                "pipelined-after-cl-body",
                post(
                    "Content-Length: 5\r\n",
                    b"helloGET /second HTTP/1.1\r\nHost: a\r\n\r\n",
                ),
                cat(&[FWD_CL, b"GET /second HTTP/1.1\r\nhost: a\r\n\r\n"]),
                "",
            )
        },
        Case {
            statuses: vec![200, 200],
            ..passes(
                "pipelined-after-chunked-body",
                post(
                    "Transfer-Encoding: chunked\r\n",
                    &cat(&[CH, b"GET /second HTTP/1.1\r\nHost: a\r\n\r\n"]),
                ),
                cat(&[FWD_CH_HEAD, CH, b"GET /second HTTP/1.1\r\nhost: a\r\n\r\n"]),
                "",
            )
        },
        // --- limits: tune.bufsize 16384 - tune.maxrewrite 1024 = 15360
        passes("head-15360", head_of(15360), forwarded(&head_of(15360)), "400 from about 15270 bytes: its limit counts its internal (HTX) encoding, not the raw head"),
        refused("head-15361", head_of(15361), 400, ""),
        refused("head-16000", head_of(16000), 400, ""),
        passes("headers-100", many_headers(100), forwarded(&many_headers(100)), ""),
        refused("headers-101", many_headers(101), 400, ""),
        // --- responses
        bad_response(
            "resp-cl-not-digits",
            b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nok",
            "502, keeps the client connection",
        ),
        bad_response(
            "resp-cl-different",
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!",
            "502, keeps the client connection",
        ),
        bad_response(
            "resp-cl-plus",
            b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok",
            "502, keeps the client connection",
        ),
        bad_response(
            "resp-te-chunked-twice",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
            "502, keeps the client connection",
        ),
        bad_response(
            "resp-te-gzip-chunked",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
            "502, keeps the client connection",
        ),
        bad_response(
            "resp-te-gzip-only",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nokok",
            "502, keeps the client connection",
        ),
        bad_response(
            "resp-chunk-size-bad",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n",
            "502, keeps the client connection",
        ),
        bad_response(
            "resp-chunk-size-overflow",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000002\r\nok\r\n0\r\n\r\n",
            "502, keeps the client connection",
        ),
        bad_response(
            "resp-chunk-data-no-crlf",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX0\r\n\r\n",
            "502, keeps the client connection",
        ),
        bad_response(
            "resp-nul-in-value",
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX: a\x00b\r\n\r\nok",
            "relays the NUL",
        ),
        bad_response(
            "resp-cr-in-value",
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX: a\rb\r\n\r\nok",
            "502, keeps the client connection",
        ),
        bad_response(
            "resp-space-before-colon",
            b"HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok",
            "502, keeps the client connection",
        ),
        bad_response(
            "resp-obs-fold",
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX: a\r\n b\r\n\r\nok",
            "unfolds and relays",
        ),
        bad_response(
            "resp-status-4-digits",
            b"HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok",
            "relays `HTTP/1.1 2000 OK`",
        ),
        bad_response(
            "resp-status-000",
            b"HTTP/1.1 000 OK\r\n\r\nbody",
            "relays `HTTP/1.1 000 OK`",
        ),
        bad_response(
            "resp-garbage",
            b"garbage\r\n\r\n",
            "502, keeps the client connection",
        ),
        bad_response(
            "resp-101-not-asked",
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nxx",
            "502, keeps the client connection",
        ),
        bad_response(
            "resp-head-16000",
            &cat(&[
                b"HTTP/1.1 200 OK\r\nX: ",
                &[b'a'; 16000],
                b"\r\nContent-Length: 2\r\n\r\nok",
            ]),
            "502, keeps the client connection",
        ),
        bad_response(
            "resp-headers-101",
            &cat(&[
                b"HTTP/1.1 200 OK\r\n",
                &many_headers(100)[16..many_headers(100).len() - 2],
                b"Content-Length: 2\r\n\r\nok",
            ]),
            "502, keeps the client connection",
        ),
        Case {
            resp: Some(
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
                    .to_vec(),
            ),
            ..passes("resp-cl-and-te", GET.to_vec(), FWD_GET.to_vec(), "")
        },
        Case {
            resp: Some(b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok".to_vec()),
            ..passes("resp-bare-lf", GET.to_vec(), FWD_GET.to_vec(), "")
        },
        Case {
            resp: Some(
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                    .to_vec(),
            ),
            statuses: vec![100, 200],
            ..passes("resp-100-then-200", GET.to_vec(), FWD_GET.to_vec(), "")
        },
    ]
}

const CFG: &str = "
global
    stats socket @DIR@/stats.sock level admin

defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
    timeout http-request 3s

frontend fe
    bind 127.0.0.1:@PORT@
    default_backend be

backend be
    server s1 @BACKEND@
";

struct Counts {
    ereq: u64,
    be_eresp: u64,
    srv_eresp: u64,
}

async fn counts(sock: &std::path::Path) -> Counts {
    let csv = show_stat(sock).await;
    Counts {
        ereq: csv.num("fe", "FRONTEND", "ereq"),
        be_eresp: csv.num("be", "BACKEND", "eresp"),
        srv_eresp: csv.num("be", "s1", "eresp"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smuggling_table() {
    let be = RawBackend::start().await;
    let (_hold, port) = hold_port();
    let cfg = CFG
        .replace("@PORT@", &port.to_string())
        .replace("@BACKEND@", &be.addr.to_string());
    let mut sluice = Sluice::start(&cfg);
    let sock = sluice.stats_socket();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();

    let table = cases();
    assert!(table.len() >= 40, "only {} cases", table.len());
    let mut failures = Vec::new();
    for case in &table {
        let before = counts(&sock).await;
        be.answer(case.resp.as_deref().unwrap_or(OK));
        let seen = exchange(addr, &case.req, case.statuses.len(), case.closed).await;
        // Anything still on its way to the backend gets a moment to land.
        tokio::time::sleep(Duration::from_millis(30)).await;
        let got = be.take();
        be.answer(OK);
        let after = counts(&sock).await;

        let mut problems = Vec::new();
        let want = Seen {
            statuses: case.statuses.clone(),
            closed: case.closed,
        };
        if seen != want {
            problems.push(format!("client saw {seen:?}, want {want:?}"));
        }
        if got != case.backend {
            problems.push(format!(
                "backend got {:?}\n      want {:?}",
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&case.backend)
            ));
        }
        let ereq = after.ereq - before.ereq;
        let eresp = (
            after.be_eresp - before.be_eresp,
            after.srv_eresp - before.srv_eresp,
        );
        let (want_ereq, want_eresp) = match case.err {
            Err::None => (0, (0, 0)),
            Err::Req => (1, (0, 0)),
            Err::Resp => (0, (1, 1)),
        };
        if ereq != want_ereq || eresp != want_eresp {
            problems.push(format!(
                "ereq +{ereq} (want +{want_ereq}), eresp be/srv +{eresp:?} (want +{want_eresp:?})"
            ));
        }

        // A legitimate request on a new connection still works, and reaches
        // the backend alone and intact.
        let legit = b"GET /ok HTTP/1.1\r\nHost: a\r\n\r\n".to_vec();
        let seen = exchange(addr, std::slice::from_ref(&legit), 1, false).await;
        let got = be.take();
        if seen.statuses != [200] || got != forwarded(&legit) {
            problems.push(format!(
                "follow-up request: {seen:?}, backend got {:?}",
                String::from_utf8_lossy(&got)
            ));
        }
        if !problems.is_empty() {
            failures.push(format!("{}:\n    {}", case.name, problems.join("\n    ")));
        }
    }
    sluice.assert_running();

    // Nothing left holding a session or a queue slot.
    wait_until(Duration::from_secs(5), "sessions back to 0", || async {
        let csv = show_stat(&sock).await;
        csv.num("fe", "FRONTEND", "scur") == 0
            && csv.num("be", "BACKEND", "scur") == 0
            && csv.num("be", "s1", "scur") == 0
            && csv.num("be", "BACKEND", "qcur") == 0
    })
    .await;
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        table.len(),
        failures.join("\n")
    );
}

/// A chunk size that a server parsing 32-bit sizes would read as another
/// length (`fffffffffff` is 2^44 - 1; its low 32 bits are `ffffffff`)
/// never reaches the server: the data goes out in chunks sized by sluice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_chunk_size_is_not_forwarded_as_written() {
    let be = RawBackend::start().await;
    be.set_silent(true);
    let (_held, port) = hold_port();
    let cfg = CFG
        .replace("@PORT@", &port.to_string())
        .replace("@BACKEND@", &be.addr.to_string());
    let _s = Sluice::start(&cfg);
    let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    c.write_all(&post(
        "Transfer-Encoding: chunked\r\n",
        b"fffffffffff\r\nhello",
    ))
    .await
    .unwrap();
    let mut got = Vec::new();
    let want = cat(&[FWD_CH_HEAD, b"5\r\nhello\r\n"]);
    wait_until(REQ_DEADLINE, "the first data at the server", || {
        got.extend(be.take());
        std::future::ready(got.len() >= want.len())
    })
    .await;
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&want)
    );
    // More of the same chunk: another chunk of sluice's.
    c.write_all(b"world!").await.unwrap();
    let mut more = Vec::new();
    wait_until(REQ_DEADLINE, "the next data at the server", || {
        more.extend(be.take());
        std::future::ready(more.len() >= 11)
    })
    .await;
    assert_eq!(String::from_utf8_lossy(&more), "6\r\nworld!\r\n");
}

/// Responses too: the client sees sluice's chunk sizes, without the
/// server's leading zeros or extensions; trailers pass (their names in
/// lower case, as HAProxy 2.6 writes them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_response_is_rechunked_towards_the_client() {
    let be = RawBackend::start().await;
    be.answer(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n000a;ext=1\r\n0123456789\r\n3\r\nabc\r\n0;x\r\nX-T: 1\r\n\r\n",
    );
    let (_held, port) = hold_port();
    let cfg = CFG
        .replace("@PORT@", &port.to_string())
        .replace("@BACKEND@", &be.addr.to_string());
    let _s = Sluice::start(&cfg);
    let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    c.write_all(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut out = Vec::new();
    within(REQ_DEADLINE, "response", c.read_to_end(&mut out))
        .await
        .unwrap();
    let at = find(&out, b"\r\n\r\n", 0).expect("a head") + 4;
    assert_eq!(
        String::from_utf8_lossy(&out[at..]),
        "D\r\n0123456789abc\r\n0\r\nx-t: 1\r\n\r\n"
    );
}

/// A server that answers each request by its path: `/badname` with an
/// invalid header name, `/badver` with version `HTTP/1.10`, else plainly.
async fn lax_test_server() -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 2048];
                while find(&buf, b"\r\n\r\n", 0).is_none() {
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let resp: &[u8] = if buf.starts_with(b"GET /badname ") {
                    b"HTTP/1.1 200 OK\r\nX{Y: 1\r\ncontent-length: 2\r\n\r\nok"
                } else if buf.starts_with(b"GET /badver ") {
                    b"HTTP/1.10 200 OK\r\ncontent-length: 2\r\n\r\nok"
                } else {
                    b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
                };
                let _ = s.write_all(resp).await;
            });
        }
    });
    addr
}

/// The first line a raw request gets back (empty: closed without one).
async fn status_line(addr: SocketAddr, req: &[u8]) -> String {
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(req).await.unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 1024];
    let read = async {
        while find(&got, b"\r\n", 0).is_none() {
            match c.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&chunk[..n]),
            }
        }
    };
    within(REQ_DEADLINE, "status line", read).await;
    let end = find(&got, b"\r\n", 0).unwrap_or(got.len());
    String::from_utf8_lossy(&got[..end]).into_owned()
}

/// `option accept-invalid-http-request` / `-response` relax what HAProxy
/// 2.6 relaxes (each rule checked against it: refused without, let
/// through with): in requests, any byte but CR, LF and `:` in a header
/// name, bytes above 127 in the target, other versions (HTTP/0.9,
/// `HTTP/1.10`, `RTSP/1.0`); in responses, header names likewise and
/// versions of several digits. Set in `defaults`, `no option` cancels
/// them in a section. A name that is a framing header but for such bytes
/// (`Transfer-Encoding :`) stays refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_invalid_http_options_relax_haproxys_rules() {
    let server = lax_test_server().await;
    let (_held, [strict, lax]) = hold_ports::<2>();
    let _s = Sluice::start(&format!(
        "defaults
    mode http
    timeout client 5s
    timeout server 5s
    timeout connect 2s
    option accept-invalid-http-request
    option accept-invalid-http-response
frontend strict
    bind 127.0.0.1:{strict}
    no option accept-invalid-http-request
    default_backend strict_be
frontend lax
    bind 127.0.0.1:{lax}
    default_backend lax_be
backend strict_be
    no option accept-invalid-http-response
    server s {server}
backend lax_be
    server s {server}
"
    ));
    let (strict, lax) = (addr_of(strict), addr_of(lax));
    for (req, relaxed) in [
        (
            &b"GET / HTTP/1.1\r\nHost: x\r\nX{Y: 1\r\n\r\n"[..],
            "HTTP/1.1 200 OK",
        ),
        (
            b"GET / HTTP/1.1\r\nHost: x\r\nX Y: 1\r\n\r\n",
            "HTTP/1.1 200 OK",
        ),
        (
            b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n",
            "HTTP/1.1 200 OK",
        ),
        (b"GET / HTTP/1.10\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK"),
        (b"GET / RTSP/1.0\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK"),
        (b"GET /\r\n\r\n", "HTTP/1.1 200 OK"),
        // Responses: the server's answer to these paths is invalid.
        (
            b"GET /badname HTTP/1.1\r\nHost: x\r\n\r\n",
            "HTTP/1.1 200 OK",
        ),
        // The server's version is repeated, as HAProxy 2.6 does.
        (
            b"GET /badver HTTP/1.1\r\nHost: x\r\n\r\n",
            "HTTP/1.10 200 OK",
        ),
    ] {
        let refused = if req.starts_with(b"GET /bad") {
            "HTTP/1.1 502 Bad Gateway"
        } else {
            "HTTP/1.1 400 Bad request"
        };
        let shown = String::from_utf8_lossy(req);
        assert_eq!(status_line(strict, req).await, refused, "strict: {shown:?}");
        assert_eq!(status_line(lax, req).await, relaxed, "relaxed: {shown:?}");
    }
    // Still refused when relaxed: a disguised framing header, controls in
    // the target.
    for req in [
        &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n"[..],
        b"GET /a\x01b HTTP/1.1\r\nHost: x\r\n\r\n",
    ] {
        let shown = String::from_utf8_lossy(req);
        assert_eq!(
            status_line(lax, req).await,
            "HTTP/1.1 400 Bad request",
            "{shown:?}"
        );
    }
}

fn addr_of(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}
