//! HTTP/2 from clients against the real HAProxy 2.6 (issue #15, item 11):
//! the same config (`bind ... proto h2` in front of one HTTP/1 server) is
//! run by haproxy and by sluice, and the same raw frames are sent to both.
//!
//! * Malformed requests (pseudo-headers, field names and values,
//!   connection-specific fields): what the client gets, a status, a
//!   RST_STREAM or a GOAWAY with its error code, and whether a good stream
//!   sent beside it on the same connection is still served; and every
//!   byte value in each part HAProxy checks. sluice answers as haproxy
//!   but for one documented case; the vendored `h2` crate hands what the
//!   `http` types refuse to sluice rather than resetting the stream or
//!   closing the connection itself (vendor/h2/PATCHES.md).
//! * Flow control: a client that keeps strictly to the windows it was given
//!   uploads bodies larger than a stream's window on many streams at once,
//!   and many small bodies on one connection, without ever waiting for a
//!   WINDOW_UPDATE that does not come; the frames after a small body are
//!   recorded for both.
//! * The preface: nothing is sent before it, and bytes that are not one
//!   get a clean close.
//! * WebSocket over HTTP/2 (RFC 8441), on its own and through an HTTP/2
//!   hop between two proxies (h1 → h2 → h1).
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI (`CI` set), where that is a failure.

mod support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::haproxy::{self, Haproxy};
use support::raw::RawBackend;
use support::syslog::Syslog;
use support::*;

const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const END_STREAM: u8 = 1;
const ACK: u8 = 1;
const END_HEADERS: u8 = 4;

const PROTOCOL_ERROR: u32 = 1;

/// No frame for this long while an answer is due: the peer is stuck.
const STALL: Duration = Duration::from_secs(5);

/// One proxy under test: where its h2c listener is, and its server.
struct Side {
    name: &'static str,
    port: u16,
    be: Backend,
}

/// haproxy and sluice, each with its own server, on the same config. None
/// (skipped) without haproxy, outside CI.
struct Pair {
    haproxy: Side,
    sluice: Side,
    _hap: Haproxy,
    _sl: Sluice,
    _fronts: Vec<Listen>,
}

fn config(fe: &Listen, server: &str) -> String {
    format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind {fe} proto h2
    default_backend be
backend be
    server app {server}
"
    )
}

/// haproxy in front of `hsrv` and sluice in front of `ssrv`, on the same
/// config, and their listeners (haproxy's first). None (skipped) without
/// haproxy, outside CI.
fn start(tag: &str, hsrv: &str, ssrv: &str) -> Option<(Haproxy, Sluice, Vec<Listen>)> {
    if !haproxy::available() {
        return None;
    }
    let fronts = listens(2);
    let hap = Haproxy::start(tag, &config(&fronts[0], hsrv), &[&fronts[0]]);
    let sl = Sluice::start(&config(&fronts[1], ssrv));
    Some((hap, sl, fronts))
}

async fn pair(tag: &str) -> Option<Pair> {
    let hbe = Backend::start("hap").await;
    let sbe = Backend::start("sluice").await;
    let (hap, sl, fronts) = start(tag, &hbe.hostport(), &sbe.hostport())?;
    Some(Pair {
        haproxy: Side {
            name: "haproxy",
            port: fronts[0].port(),
            be: hbe,
        },
        sluice: Side {
            name: "sluice",
            port: fronts[1].port(),
            be: sbe,
        },
        _hap: hap,
        _sl: sl,
        _fronts: fronts,
    })
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

type Frame = (u8, u8, u32, Vec<u8>);

/// A raw client connection: frames in, frames out.
struct Conn {
    tcp: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    /// Connects and sends the preface and an empty SETTINGS.
    async fn open(port: u16) -> Conn {
        let mut tcp = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .expect("connect");
        let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        out.extend(frame(SETTINGS, 0, 0, &[]));
        tcp.write_all(&out).await.expect("preface");
        Conn {
            tcp,
            buf: Vec::new(),
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        // The peer may have closed (GOAWAY): what it sent is still read.
        let _ = self.tcp.write_all(bytes).await;
    }

    /// The next whole frame; None at the end of the connection or after
    /// [`STALL`] without one.
    async fn next(&mut self) -> Option<Frame> {
        loop {
            if self.buf.len() >= 9 {
                let len = (self.buf[0] as usize) << 16
                    | (self.buf[1] as usize) << 8
                    | self.buf[2] as usize;
                if self.buf.len() >= 9 + len {
                    let f: Vec<u8> = self.buf.drain(..9 + len).collect();
                    let stream = u32::from_be_bytes([f[5], f[6], f[7], f[8]]) & 0x7fff_ffff;
                    return Some((f[3], f[4], stream, f[9..].to_vec()));
                }
            }
            let mut chunk = [0u8; 16384];
            match tokio::time::timeout(STALL, self.tcp.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => self.buf.extend_from_slice(&chunk[..n]),
                _ => return None,
            }
        }
    }
}

fn u32_of(p: &[u8]) -> u32 {
    p.get(..4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .unwrap_or(u32::MAX)
}

/// The `:status` a response's header block starts with (both proxies
/// encode it first, from the static table or as a literal of its name).
fn status_of(block: &[u8]) -> u16 {
    match block.first() {
        Some(&b) if b & 0x80 != 0 => match b & 0x7f {
            8 => 200,
            9 => 204,
            10 => 206,
            11 => 304,
            12 => 400,
            13 => 404,
            14 => 500,
            _ => 0,
        },
        // A literal with the name `:status` (static entry 8), with or
        // without indexing, a plain (not Huffman) three-digit value.
        Some(&0x48) | Some(&0x08) | Some(&0x18) if block.get(1) == Some(&3) => block
            .get(2..5)
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| d.parse().ok())
            .unwrap_or(0),
        // The same, Huffman-coded (as the h2 crate sends `502`).
        Some(&0x48) | Some(&0x08) | Some(&0x18) => match block.get(1) {
            Some(&l @ (0x82 | 0x83)) => block
                .get(2..2 + usize::from(l & 0x7f))
                .map_or(0, huffman_digits),
            _ => 0,
        },
        _ => 0,
    }
}

/// Three digits, Huffman-coded in `code` (RFC 7541 appendix B: `0`-`2`
/// in 5 bits, `3`-`9` in 6); 0 for anything else.
fn huffman_digits(code: &[u8]) -> u16 {
    let bits = code.iter().fold(0u32, |acc, &b| acc << 8 | u32::from(b));
    let mut at = 8 * code.len() as u32;
    let mut n = 0u16;
    for _ in 0..3 {
        let peek = |len: u32| (at >= len).then(|| (bits >> (at - len)) & ((1 << len) - 1));
        let digit = match (peek(5), peek(6)) {
            (Some(v), _) if v < 3 => {
                at -= 5;
                v
            }
            (_, Some(v)) if (25..=31).contains(&v) => {
                at -= 6;
                v - 22
            }
            _ => return 0,
        };
        n = n * 10 + digit as u16;
    }
    n
}

/// What a client got for a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// A response: its status and body.
    Status(u16),
    /// RST_STREAM with this error code.
    Reset(u32),
    /// The whole connection closed with GOAWAY and this error code.
    GoAway(u32),
    /// Nothing before the connection ended or stalled.
    Nothing,
}

use Outcome::*;

/// HPACK for a request, every field a literal without indexing and
/// without Huffman coding: pseudo-headers by their static-table name
/// (`:authority` 1, `:method` 2, `:path` 4, `:scheme` 6), the other
/// fields with new names. Nothing enters the dynamic table, so a block
/// means the same on any connection.
fn block(pseudo: &[(&str, &[u8])], fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut b = Vec::new();
    for (name, value) in pseudo {
        let idx = match *name {
            ":authority" => 1,
            ":method" => 2,
            ":path" => 4,
            ":scheme" => 6,
            other => {
                // Not in the static table: a new name.
                b.push(0);
                b.push(other.len() as u8);
                b.extend_from_slice(other.as_bytes());
                b.push(value.len() as u8);
                b.extend_from_slice(value);
                continue;
            }
        };
        b.push(idx);
        b.push(value.len() as u8);
        b.extend_from_slice(value);
    }
    for (name, value) in fields {
        b.push(0);
        b.push(name.len() as u8);
        b.extend_from_slice(name);
        b.push(value.len() as u8);
        b.extend_from_slice(value);
    }
    b
}

/// A well-formed `GET http://h/` with `changes` to its pseudo-headers (a
/// new value, `None` to leave one out, or an extra one after them), then
/// `fields`.
fn get(changes: &[(&'static str, Option<&'static [u8]>)], fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut pseudo: Vec<(&str, &[u8])> = vec![
        (":method", b"GET"),
        (":scheme", b"http"),
        (":path", b"/"),
        (":authority", b"h"),
    ];
    for (name, value) in changes {
        match (pseudo.iter_mut().find(|(n, _)| n == name), value) {
            (Some(p), Some(v)) => p.1 = v,
            (Some(_), None) => pseudo.retain(|(n, _)| n != name),
            (None, Some(v)) => pseudo.push((name, v)),
            (None, None) => {}
        }
    }
    block(&pseudo, fields)
}

/// Sends `request` on stream 1 and a good GET on stream 3 of one
/// connection: what stream 1 got, what stream 3 got, and stream 1's
/// response body.
async fn try_request(port: u16, request: &[u8]) -> (Outcome, Outcome, Vec<u8>) {
    let mut c = Conn::open(port).await;
    let flags = END_STREAM | END_HEADERS;
    let mut out = frame(HEADERS, flags, 1, request);
    out.extend(frame(HEADERS, flags, 3, &get(&[], &[])));
    c.send(&out).await;
    let mut got: HashMap<u32, Outcome> = HashMap::new();
    let mut status: HashMap<u32, u16> = HashMap::new();
    let mut body = Vec::new();
    let mut goaway = None;
    while !(got.contains_key(&1) && got.contains_key(&3)) {
        let Some((kind, flags, stream, payload)) = c.next().await else {
            break;
        };
        match kind {
            HEADERS => {
                status.entry(stream).or_insert(status_of(&payload));
            }
            DATA if stream == 1 => body.extend_from_slice(&payload),
            RST_STREAM => {
                got.insert(stream, Reset(u32_of(&payload)));
            }
            GOAWAY => {
                goaway = Some(u32_of(payload.get(4..).unwrap_or(&[])));
                break;
            }
            _ => {}
        }
        if (kind == HEADERS || kind == DATA) && flags & END_STREAM != 0 {
            got.insert(stream, Status(status.get(&stream).copied().unwrap_or(0)));
        }
    }
    let end = |s: u32| match (got.get(&s), goaway) {
        (Some(o), _) => *o,
        (None, Some(code)) => GoAway(code),
        (None, None) => Nothing,
    };
    (end(1), end(3), body)
}

/// Sends `request` alone on stream 1 and waits for its end.
async fn one_request(port: u16, request: &[u8]) -> Outcome {
    let mut c = Conn::open(port).await;
    c.send(&frame(HEADERS, END_STREAM | END_HEADERS, 1, request))
        .await;
    let mut status = 0;
    while let Some((kind, flags, stream, payload)) = c.next().await {
        match kind {
            HEADERS if stream == 1 && status == 0 => status = status_of(&payload),
            RST_STREAM if stream == 1 => return Reset(u32_of(&payload)),
            GOAWAY => return GoAway(u32_of(payload.get(4..).unwrap_or(&[]))),
            _ => {}
        }
        if stream == 1 && (kind == HEADERS || kind == DATA) && flags & END_STREAM != 0 {
            return Status(status);
        }
    }
    Nothing
}

/// What the server receives for a `:scheme`: HAProxy 2.6 sends `http` and
/// `https` (in any case) in origin form and other schemes in absolute
/// form (`GET ftp://h/x?q=1`); sluice sends the same bytes.
#[tokio::test]
async fn schemes_reach_the_server_as_from_haproxy() {
    let hbe = RawBackend::start().await;
    let sbe = RawBackend::start().await;
    let Some((_hap, _sl, fronts)) = start("h2sch", &hbe.addr.to_string(), &sbe.addr.to_string())
    else {
        return;
    };
    for scheme in ["http", "https", "HTTPS", "Http", "ftp", "foo+bar"] {
        let req = block(
            &[
                (":method", b"GET"),
                (":scheme", scheme.as_bytes()),
                (":path", b"/x?q=1"),
                (":authority", b"h"),
            ],
            &[(b"x-a", b"1")],
        );
        for (name, port) in [("haproxy", fronts[0].port()), ("sluice", fronts[1].port())] {
            assert_eq!(
                one_request(port, &req).await,
                Status(200),
                "{name}, {scheme}"
            );
        }
        let want = hbe.take_requests();
        let got = sbe.take_requests();
        let text = |r: &[Vec<u8>]| {
            r.iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(text(&got), text(&want), ":scheme {scheme}");
        let line = if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https") {
            "GET /x?q=1 HTTP/1.1".to_string()
        } else {
            format!("GET {scheme}://h/x?q=1 HTTP/1.1")
        };
        assert!(
            text(&want)[0].starts_with(&line),
            "haproxy sent {:?}",
            text(&want)
        );
    }
}

/// One malformed (or unusual) request and what each proxy answers.
struct Case {
    name: &'static str,
    request: Vec<u8>,
    /// What haproxy 2.6.12 answers (run by this test, and checked).
    haproxy: Outcome,
    /// What sluice answers where it differs, and why.
    sluice: Option<(Outcome, &'static str)>,
}

fn cases() -> Vec<Case> {
    let ok = Status(200);
    let bad = Status(400);
    let rst = Reset(PROTOCOL_ERROR);
    let c = |name, request, haproxy: &Outcome, sluice| Case {
        name,
        request,
        haproxy: *haproxy,
        sluice,
    };
    let x70: &'static [u8] = &[b'x'; 70];
    vec![
        c("well-formed", get(&[], &[]), &ok, None),
        // :scheme
        c(
            ":scheme 'ht tp'",
            get(&[(":scheme", Some(b"ht tp"))], &[]),
            &bad,
            None,
        ),
        c(
            ":scheme 'h/p'",
            get(&[(":scheme", Some(b"h/p"))], &[]),
            &bad,
            None,
        ),
        c(
            ":scheme ''",
            get(&[(":scheme", Some(b""))], &[]),
            &bad,
            None,
        ),
        c(
            ":scheme 1http",
            get(&[(":scheme", Some(b"1http"))], &[]),
            &bad,
            None,
        ),
        c(
            ":scheme ftp",
            get(&[(":scheme", Some(b"ftp"))], &[]),
            &ok,
            None,
        ),
        c(
            ":scheme HTTP",
            get(&[(":scheme", Some(b"HTTP"))], &[]),
            &ok,
            None,
        ),
        c(
            ":scheme of 70 letters",
            get(&[(":scheme", Some(x70))], &[]),
            // From the server: both send `GET xxx...://h/`, which this
            // test's server (hyper) refuses.
            &bad,
            None,
        ),
        c("no :scheme", get(&[(":scheme", None)], &[]), &rst, None),
        // :path
        c(":path ''", get(&[(":path", Some(b""))], &[]), &rst, None),
        c(
            ":path foo",
            get(&[(":path", Some(b"foo"))], &[]),
            &rst,
            None,
        ),
        c(
            "GET :path *",
            get(&[(":path", Some(b"*"))], &[]),
            &ok,
            Some((
                bad,
                "sluice refuses the asterisk form on anything but OPTIONS, as over HTTP/1 (haproxy forwards GET /)",
            )),
        ),
        c(
            "OPTIONS :path *",
            get(&[(":method", Some(b"OPTIONS")), (":path", Some(b"*"))], &[]),
            &ok,
            None,
        ),
        c(
            ":path '/a b'",
            get(&[(":path", Some(b"/a b"))], &[]),
            &rst,
            None,
        ),
        c(
            ":path '/a\\x7f'",
            get(&[(":path", Some(b"/a\x7f"))], &[]),
            &bad,
            None,
        ),
        c(
            ":path '/a\"'",
            get(&[(":path", Some(b"/a\""))], &[]),
            &ok,
            None,
        ),
        c("no :path", get(&[(":path", None)], &[]), &rst, None),
        // :method
        c(
            ":method 'GE T'",
            get(&[(":method", Some(b"GE T"))], &[]),
            &bad,
            None,
        ),
        c(
            ":method G@T",
            get(&[(":method", Some(b"G@T"))], &[]),
            &bad,
            None,
        ),
        c(
            ":method ''",
            get(&[(":method", Some(b""))], &[]),
            &rst,
            None,
        ),
        c(
            ":method get",
            get(&[(":method", Some(b"get"))], &[]),
            &ok,
            None,
        ),
        c("no :method", get(&[(":method", None)], &[]), &rst, None),
        // :authority
        c(
            ":authority 'a b'",
            get(&[(":authority", Some(b"a b"))], &[]),
            &bad,
            None,
        ),
        c(
            "no :authority",
            get(&[(":authority", None)], &[]),
            &ok,
            None,
        ),
        // Other pseudo-headers, their order.
        c(":foo bar", get(&[(":foo", Some(b"bar"))], &[]), &rst, None),
        c(
            "a pseudo-header after a field",
            block(
                &[
                    (":method", b"GET"),
                    (":scheme", b"http"),
                    (":authority", b"h"),
                ],
                &[(b"x", b"1"), (b":path", b"/")],
            ),
            &rst,
            None,
        ),
        c(
            "two :path",
            get(&[], &[])
                .into_iter()
                .chain([4, 2, b'/', b'x'])
                .collect(),
            &rst,
            None,
        ),
        // Field names and values.
        c(
            "X-Foo: 1 (upper case)",
            get(&[], &[(b"X-Foo", b"1")]),
            &rst,
            None,
        ),
        c("'x y': 1", get(&[], &[(b"x y", b"1")]), &rst, None),
        c("x: a NUL b", get(&[], &[(b"x", b"a\0b")]), &rst, None),
        c("x: a LF b", get(&[], &[(b"x", b"a\nb")]), &rst, None),
        c(
            "content-length: abc",
            get(&[], &[(b"content-length", b"abc")]),
            &rst,
            None,
        ),
        // Connection-specific fields (RFC 9113 §8.2.2).
        c(
            "connection: keep-alive",
            get(&[], &[(b"connection", b"keep-alive")]),
            &rst,
            None,
        ),
        c(
            "keep-alive: 1",
            get(&[], &[(b"keep-alive", b"1")]),
            &rst,
            None,
        ),
        c(
            "proxy-connection: x",
            get(&[], &[(b"proxy-connection", b"x")]),
            &rst,
            None,
        ),
        c(
            "transfer-encoding: chunked",
            get(&[], &[(b"transfer-encoding", b"chunked")]),
            &rst,
            None,
        ),
        c(
            "upgrade: h2c",
            get(&[], &[(b"upgrade", b"h2c")]),
            &rst,
            None,
        ),
        c("te: gzip", get(&[], &[(b"te", b"gzip")]), &rst, None),
        c("te: trailers", get(&[], &[(b"te", b"trailers")]), &ok, None),
    ]
}

/// Each case on its own connection, with a good stream beside it: haproxy
/// answers as recorded here, sluice the same, or as the case documents.
/// Where both answer a status the bodies are the same bytes (HAProxy's
/// error page). A stream reset alone leaves its neighbour served; a GOAWAY
/// takes it down.
#[tokio::test]
async fn malformed_requests_as_haproxy() {
    let Some(p) = pair("h2mal").await else {
        return;
    };
    let mut report = Vec::new();
    for case in cases() {
        let (h1, h3, hbody) = try_request(p.haproxy.port, &case.request).await;
        let (s1, s3, sbody) = try_request(p.sluice.port, &case.request).await;
        if h1 != case.haproxy {
            report.push(format!(
                "{}: haproxy answered {h1:?}, recorded {:?}",
                case.name, case.haproxy
            ));
        }
        if h3 != Status(200) {
            report.push(format!("{}: haproxy's good stream got {h3:?}", case.name));
        }
        let (want, why) = match &case.sluice {
            Some((o, why)) => (*o, *why),
            None => (case.haproxy, "same as haproxy"),
        };
        if s1 != want {
            report.push(format!(
                "{}: sluice answered {s1:?}, expected {want:?} ({why})",
                case.name
            ));
        }
        // The neighbour dies with the connection only.
        let s3_want = if matches!(want, GoAway(_)) {
            GoAway(PROTOCOL_ERROR)
        } else {
            Status(200)
        };
        if s3 != s3_want {
            report.push(format!(
                "{}: sluice's good stream got {s3:?}, expected {s3_want:?}",
                case.name
            ));
        }
        if matches!((&h1, &s1), (Status(a), Status(b)) if a == b && *a != 200) && hbody != sbody {
            report.push(format!(
                "{}: bodies differ:\n haproxy {:?}\n sluice  {:?}",
                case.name,
                String::from_utf8_lossy(&hbody),
                String::from_utf8_lossy(&sbody)
            ));
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
    // What reached the servers: the same number of requests (the good
    // neighbours and the requests both forward), but for the documented
    // differences.
    let served = |want: fn(&Case) -> bool| cases().iter().filter(|c| want(c)).count();
    let by_haproxy = served(|c| c.haproxy == Status(200));
    let by_sluice = served(|c| match &c.sluice {
        Some((o, _)) => *o == Status(200),
        None => c.haproxy == Status(200),
    });
    let goaways = served(|c| matches!(c.sluice, Some((GoAway(_), _))));
    let n = cases().len();
    assert_eq!(p.haproxy.be.hits(), n + by_haproxy, "{}", p.haproxy.name);
    assert_eq!(
        p.sluice.be.hits(),
        n - goaways + by_sluice,
        "{}",
        p.sluice.name
    );
}

/// A client that keeps strictly to HTTP/2 flow control: it sends DATA only
/// within the connection's and the stream's windows (65,535 each until the
/// server's SETTINGS and WINDOW_UPDATEs say more) and waits for
/// WINDOW_UPDATEs otherwise. `bodies` (sizes) are uploaded as POSTs, at
/// most `parallel` streams at a time; Ok with each stream's status, or
/// Err with what it was waiting for when the server went quiet.
async fn upload(port: u16, bodies: &[usize], parallel: usize) -> Result<Vec<u16>, String> {
    let mut c = Conn::open(port).await;
    let mut conn_window: i64 = 65535;
    let mut initial: i64 = 65535;
    let mut window: HashMap<u32, i64> = HashMap::new();
    let mut left: HashMap<u32, usize> = HashMap::new();
    let mut status: HashMap<u32, u16> = HashMap::new();
    let mut done: Vec<(u32, u16)> = Vec::new();
    let mut next = 0usize;
    // The server's SETTINGS come first: they may change the windows.
    loop {
        match c.next().await {
            Some((SETTINGS, fl, 0, p)) if fl & ACK == 0 => {
                for s in p.chunks(6).filter(|s| s.len() == 6) {
                    if u16::from_be_bytes([s[0], s[1]]) == 4 {
                        initial = i64::from(u32_of(&s[2..]));
                    }
                }
                c.send(&frame(SETTINGS, ACK, 0, &[])).await;
                break;
            }
            Some((WINDOW_UPDATE, _, 0, p)) => conn_window += i64::from(u32_of(&p)),
            Some(_) => {}
            None => return Err("no SETTINGS".into()),
        }
    }
    while done.len() < bodies.len() {
        // Open streams up to `parallel`.
        let mut out = Vec::new();
        while next < bodies.len() && left.len() < parallel {
            let id = 2 * next as u32 + 1;
            let len = bodies[next].to_string();
            let req = block(
                &[
                    (":method", b"POST"),
                    (":scheme", b"http"),
                    (":path", b"/up"),
                    (":authority", b"h"),
                ],
                &[(b"content-length", len.as_bytes())],
            );
            out.extend(frame(HEADERS, END_HEADERS, id, &req));
            window.insert(id, initial);
            left.insert(id, bodies[next]);
            next += 1;
        }
        // Send what the windows allow, stream by stream.
        let mut ids: Vec<u32> = left.keys().copied().collect();
        ids.sort();
        for id in ids {
            loop {
                let rest = left[&id];
                if rest == 0 {
                    break;
                }
                let n = (rest as i64).min(16384).min(conn_window).min(window[&id]);
                if n <= 0 {
                    break;
                }
                let last = n as usize == rest;
                out.extend(frame(
                    DATA,
                    if last { END_STREAM } else { 0 },
                    id,
                    &vec![b'x'; n as usize],
                ));
                conn_window -= n;
                *window.get_mut(&id).unwrap() -= n;
                *left.get_mut(&id).unwrap() -= n as usize;
            }
        }
        c.send(&out).await;
        // Then read one frame (and all that is already there).
        let Some((kind, flags, stream, p)) = c.next().await else {
            let waiting: Vec<_> = left.iter().filter(|(_, n)| **n > 0).collect();
            return Err(format!(
                "stalled with {} of {} streams answered; connection window {conn_window}; \
                 bytes left per stream {waiting:?}; stream windows {window:?}",
                done.len(),
                bodies.len()
            ));
        };
        match kind {
            WINDOW_UPDATE if stream == 0 => conn_window += i64::from(u32_of(&p)),
            WINDOW_UPDATE => {
                if let Some(w) = window.get_mut(&stream) {
                    *w += i64::from(u32_of(&p));
                }
            }
            HEADERS => {
                status.entry(stream).or_insert(status_of(&p));
            }
            RST_STREAM => return Err(format!("stream {stream} reset: {}", u32_of(&p))),
            GOAWAY => return Err(format!("GOAWAY {:?}", p.get(4..8))),
            PING if flags & ACK == 0 => c.send(&frame(PING, ACK, 0, &p)).await,
            _ => {}
        }
        if (kind == HEADERS || kind == DATA) && flags & END_STREAM != 0 {
            done.push((stream, status.get(&stream).copied().unwrap_or(0)));
            left.remove(&stream);
            window.remove(&stream);
        }
    }
    done.sort();
    Ok(done.into_iter().map(|(_, s)| s).collect())
}

/// Bodies larger than a stream's window (100 KiB, the window 64 KiB) on
/// 8 streams at once, 800 KiB on one connection: the client waits on its
/// windows and both proxies open them in time. Then 300 small bodies
/// (300 kB in all, more than the 65,535 the connection starts with), 10
/// streams at a time: none waits on a window update that never comes.
#[tokio::test]
async fn uploads_never_wait_for_a_window_update() {
    let Some(p) = pair("h2win").await else {
        return;
    };
    for side in [&p.haproxy, &p.sluice] {
        let big = vec![100 * 1024; 8];
        let got = upload(side.port, &big, 8)
            .await
            .unwrap_or_else(|e| panic!("{}: large bodies: {e}", side.name));
        assert_eq!(got, vec![200; 8], "{}", side.name);
        let small = vec![1000; 300];
        let got = upload(side.port, &small, 10)
            .await
            .unwrap_or_else(|e| panic!("{}: small bodies: {e}", side.name));
        assert_eq!(got, vec![200; 300], "{}", side.name);
        let mut sizes: Vec<usize> = side.be.bodies().iter().map(|b| b.len()).collect();
        sizes.sort();
        let mut want: Vec<usize> = small.iter().chain(big.iter()).copied().collect();
        want.sort();
        assert_eq!(sizes, want, "{}: bodies the server received", side.name);
    }
}

/// The WINDOW_UPDATEs (stream, increment), in order, from the start of a
/// connection to the end of the response to one small body (10 bytes,
/// with its `content-length`, END_STREAM on its DATA).
async fn window_updates_with_small_body(port: u16) -> Vec<(u32, u32)> {
    let mut c = Conn::open(port).await;
    let req = block(
        &[
            (":method", b"POST"),
            (":scheme", b"http"),
            (":path", b"/small"),
            (":authority", b"h"),
        ],
        &[(b"content-length", b"10")],
    );
    let mut out = frame(SETTINGS, ACK, 0, &[]);
    out.extend(frame(HEADERS, END_HEADERS, 1, &req));
    out.extend(frame(DATA, END_STREAM, 1, b"0123456789"));
    c.send(&out).await;
    let mut updates = Vec::new();
    loop {
        match c.next().await {
            Some((WINDOW_UPDATE, _, s, p)) => updates.push((s, u32_of(&p))),
            Some((HEADERS | DATA, fl, 1, _)) if fl & END_STREAM != 0 => return updates,
            Some(_) => {}
            None => panic!("no response; window updates {updates:?}"),
        }
    }
}

/// After a 10-byte body, HAProxy 2.6 returns its 10 bytes at once on the
/// stream (which the client has ended) and on the connection, the latter
/// in the same WINDOW_UPDATE that opens the connection window to 2^31-1
/// (nothing before the first DATA). sluice sends the same frames: the
/// `h2` crate (0.4.20) as published returned a stream's window only once
/// half of it was to be given back, never on an ended stream, and after
/// the connection's (vendor/h2/PATCHES.md).
#[tokio::test]
async fn window_updates_after_a_small_body() {
    let Some(p) = pair("h2wu").await else {
        return;
    };
    const OPEN: u32 = (1 << 31) - 1 - 65535;
    for side in [&p.haproxy, &p.sluice] {
        assert_eq!(
            window_updates_with_small_body(side.port).await,
            vec![(1, 10), (0, OPEN + 10)],
            "{}",
            side.name
        );
    }
}

/// What a `proto h2` bind sends to a client whose first bytes are not the
/// preface, and how it closes: the bytes, and whether the close was clean
/// (a FIN, not a reset).
async fn before_the_preface(port: u16, first: &[u8]) -> (Vec<u8>, bool) {
    let mut tcp = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .expect("connect");
    tcp.write_all(first).await.expect("write");
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match tokio::time::timeout(STALL, tcp.read(&mut chunk)).await {
            Ok(Ok(0)) => return (got, true),
            Ok(Ok(n)) => got.extend_from_slice(&chunk[..n]),
            Ok(Err(_)) => return (got, false),
            Err(_) => panic!("not closed after {got:?}"),
        }
    }
}

/// HAProxy 2.6 sends its SETTINGS once the client's preface is in: bytes
/// that are not a preface (an HTTP/1 request, a preface gone wrong after
/// its first line) get nothing back, and the connection is closed cleanly.
/// sluice used to let the `h2` crate send its SETTINGS first, then reset
/// the connection on the bytes it left unread.
#[tokio::test]
async fn nothing_is_sent_before_the_preface() {
    let Some(p) = pair("h2pre").await else {
        return;
    };
    let firsts: [&[u8]; 3] = [
        b"GET / HTTP/1.1\r\nhost: h\r\n\r\n",
        b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\rsome more",
    ];
    for first in firsts {
        for side in [&p.haproxy, &p.sluice] {
            let (got, clean) = before_the_preface(side.port, first).await;
            assert_eq!(
                (got.as_slice(), clean),
                (&b""[..], true),
                "{}: {:?}",
                side.name,
                String::from_utf8_lossy(first)
            );
        }
    }
    // A preface in pieces is still one: the SETTINGS come after it.
    for side in [&p.haproxy, &p.sluice] {
        let mut tcp = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], side.port)))
            .await
            .expect("connect");
        tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM")
            .await
            .expect("write");
        tcp.write_all(b"\r\n\r\n").await.expect("write");
        let mut c = Conn {
            tcp,
            buf: Vec::new(),
        };
        let first = c.next().await.map(|f| (f.0, f.1));
        assert_eq!(first, Some((SETTINGS, 0)), "{}", side.name);
    }
}

/// A WebSocket server for the extended CONNECT test: it keeps each
/// request head it reads, answers the upgrade with the
/// `Sec-WebSocket-Accept` the key calls for (RFC 6455 §4.2.2; HAProxy
/// checks it), sends `hello`, then echoes each read as `echo:<bytes>` and
/// closes once the client has.
async fn websocket_server() -> (SocketAddr, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use base64::Engine as _;
    use sha1::Digest as _;
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = heads.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut b = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut b).await {
                        Ok(n) if n > 0 => head.extend_from_slice(&b[..n]),
                        _ => return,
                    }
                }
                let text = String::from_utf8_lossy(&head).into_owned();
                seen.lock().unwrap().push(text.clone());
                let key = text
                    .lines()
                    .find_map(|l| {
                        let (n, v) = l.split_once(':')?;
                        n.eq_ignore_ascii_case("sec-websocket-key")
                            .then(|| v.trim())
                    })
                    .unwrap_or("");
                let mut sha = sha1::Sha1::new();
                sha.update(key.as_bytes());
                sha.update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
                let accept = base64::engine::general_purpose::STANDARD.encode(sha.finalize());
                let resp = format!(
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
                     Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\nhello"
                );
                if s.write_all(resp.as_bytes()).await.is_err() {
                    return;
                }
                loop {
                    match s.read(&mut b).await {
                        Ok(n) if n > 0 => {
                            let mut out = b"echo:".to_vec();
                            out.extend_from_slice(&b[..n]);
                            if s.write_all(&out).await.is_err() {
                                return;
                            }
                        }
                        _ => return,
                    }
                }
            });
        }
    });
    (addr, heads)
}

/// What a WebSocket over HTTP/2 client (RFC 8441) sees: whether the
/// server's SETTINGS announce SETTINGS_ENABLE_CONNECT_PROTOCOL, the status
/// of the extended CONNECT, the tunnel's bytes from the server, then its
/// echo of `ping`, and whether the stream ends after the client ends its
/// side. Stops at the first thing missing.
async fn websocket_over_h2(port: u16) -> (bool, u16, Vec<u8>, bool) {
    let mut c = Conn::open(port).await;
    let announced = loop {
        match c.next().await {
            Some((SETTINGS, 0, 0, p)) => {
                break p
                    .chunks(6)
                    .any(|s| s.len() == 6 && s[..2] == [0, 8] && u32_of(&s[2..]) == 1);
            }
            Some(_) => {}
            None => return (false, 0, Vec::new(), false),
        }
    };
    let req = block(
        &[
            (":method", b"CONNECT"),
            (":protocol", b"websocket"),
            (":scheme", b"http"),
            (":path", b"/chat?room=1"),
            (":authority", b"h"),
        ],
        &[(b"sec-websocket-version", b"13"), (b"x-a", b"1")],
    );
    let mut out = frame(SETTINGS, ACK, 0, &[]);
    out.extend(frame(HEADERS, END_HEADERS, 1, &req));
    c.send(&out).await;
    let mut status = 0;
    let mut data = Vec::new();
    let mut pinged = false;
    loop {
        match c.next().await {
            Some((HEADERS, _, 1, p)) if status == 0 => status = status_of(&p),
            Some((DATA, fl, 1, p)) => {
                data.extend_from_slice(&p);
                if fl & END_STREAM != 0 {
                    return (announced, status, data, pinged);
                }
            }
            Some((RST_STREAM, _, 1, _)) | None => return (announced, status, data, false),
            Some(_) => {}
        }
        if !pinged && data.ends_with(b"hello") {
            c.send(&frame(DATA, 0, 1, b"ping")).await;
            pinged = true;
        } else if pinged && data.ends_with(b"echo:ping") {
            // The client's end: the server sees its close and closes.
            c.send(&frame(DATA, END_STREAM, 1, &[])).await;
        }
    }
}

/// The request head a WebSocket server got, its fields sorted by name
/// (lower-cased) and the made-up key's value left out.
fn upgrade_head(text: &str) -> (String, Vec<(String, String)>) {
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or("").to_string();
    let mut fields: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| {
            let n = n.to_ascii_lowercase();
            let v = if n == "sec-websocket-key" {
                format!("<{} bytes>", v.trim().len())
            } else {
                v.trim().to_string()
            };
            (n, v)
        })
        .collect();
    fields.sort();
    (line, fields)
}

/// WebSocket over HTTP/2 (RFC 8441), the h1 → h2 → h1 path of an HTTP/1
/// upgrade through a `proto h2` hop: HAProxy 2.6 announces
/// SETTINGS_ENABLE_CONNECT_PROTOCOL, sends an extended CONNECT to its
/// HTTP/1 server as `GET` with `upgrade: websocket`, `connection:
/// upgrade` and a `Sec-WebSocket-Key` of its own, answers the 101 with a
/// 200 and carries the tunnel as DATA both ways, ending the stream when
/// the server closes after the client's end. sluice announced nothing,
/// so a front proxy could not upgrade through it.
#[tokio::test]
async fn websocket_over_http2_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let (hsrv, hheads) = websocket_server().await;
    let (ssrv, sheads) = websocket_server().await;
    let fronts = listens(2);
    let (hlog, slog) = (Syslog::new(), Syslog::new());
    let _hap = Haproxy::start(
        "h2ws",
        &logged_config(&fronts[0], &hsrv.to_string(), &hlog),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&logged_config(&fronts[1], &ssrv.to_string(), &slog));
    let want = (true, 200, b"helloecho:ping".to_vec(), true);
    for (name, port, heads) in [
        ("haproxy", fronts[0].port(), &hheads),
        ("sluice", fronts[1].port(), &sheads),
    ] {
        let got = websocket_over_h2(port).await;
        assert_eq!(
            (got.0, got.1, String::from_utf8_lossy(&got.2), got.3),
            (want.0, want.1, String::from_utf8_lossy(&want.2), want.3),
            "{name}: SETTINGS_ENABLE_CONNECT_PROTOCOL, status, tunnel bytes, echoed"
        );
        assert_eq!(heads.lock().unwrap().len(), 1, "{name}");
    }
    let h = upgrade_head(&hheads.lock().unwrap()[0]);
    let s = upgrade_head(&sheads.lock().unwrap()[0]);
    assert_eq!(h.0, "GET /chat?room=1 HTTP/1.1", "haproxy");
    assert_eq!(s, h);
    // The readiness probe's line (a bad preface, `PR`) is passed over.
    let line = |log: &Syslog| loop {
        let l = log.take(1).remove(0);
        if !l.ends_with(" PR\n") {
            return l;
        }
    };
    // The 101 as HAProxy's internal form counts it (132) and the tunnel's
    // bytes from the server (`hello`, `echo:ping`); sluice logged 138.
    let (hline, sline) = (line(&hlog), line(&slog));
    assert_eq!(hline, "101 146 --\n", "haproxy");
    assert_eq!(sline, hline, "the log line, %B unmasked");
}

/// [`config`] with a log line of the status, `%B` and the end. `%U` is
/// left out: HAProxy counts the request as its HTTP/2 form (an absolute
/// URI, no `Sec-WebSocket-Key`), sluice as the HTTP/1 upgrade it makes.
fn logged_config(fe: &Listen, server: &str, log: &Syslog) -> String {
    config(fe, server).replace(
        "defaults\n",
        &format!(
            "global\n    log {} format raw local0 info\ndefaults\n    log global\n    \
             log-format \"%ST %B %ts\"\n",
            log.addr()
        ),
    )
}

/// The whole h1 → h2 → h1 path: an HTTP/1 WebSocket client, a proxy whose
/// server is `proto h2`, and behind it a proxy on a `proto h2` bind in
/// front of an HTTP/1 WebSocket server. Two haproxies and two sluices:
/// the client gets the same bytes (the 101, then the tunnel) and the
/// server the same upgrade request. Through sluice the upgrade used to
/// end in a 502 (the inner sluice did not announce extended CONNECT).
#[tokio::test]
async fn websocket_through_an_http2_hop_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let (hsrv, hheads) = websocket_server().await;
    let (ssrv, sheads) = websocket_server().await;
    let fronts = listens(4);
    let outer = |fe: &Listen, inner: &Listen| {
        format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind {fe}
    default_backend be
backend be
    server inner 127.0.0.1:{} proto h2
",
            inner.port()
        )
    };
    let _hi = Haproxy::start(
        "h2hopi",
        &config(&fronts[0], &hsrv.to_string()),
        &[&fronts[0]],
    );
    let _ho = Haproxy::start("h2hopo", &outer(&fronts[1], &fronts[0]), &[&fronts[1]]);
    let _si = Sluice::start(&config(&fronts[2], &ssrv.to_string()));
    let _so = Sluice::start(&outer(&fronts[3], &fronts[2]));
    let mut seen = Vec::new();
    for (name, port) in [("haproxy", fronts[1].port()), ("sluice", fronts[3].port())] {
        let mut c = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .expect("connect");
        c.write_all(
            b"GET /chat HTTP/1.1\r\nhost: h\r\nupgrade: websocket\r\nconnection: upgrade\r\n\
              sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n",
        )
        .await
        .expect("write");
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        let mut pinged = false;
        while !got.ends_with(b"echo:ping") {
            match tokio::time::timeout(STALL, c.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => got.extend_from_slice(&chunk[..n]),
                _ => break,
            }
            if !pinged && got.ends_with(b"hello") {
                c.write_all(b"ping").await.expect("ping");
                pinged = true;
            }
        }
        seen.push((name, String::from_utf8_lossy(&got).into_owned()));
    }
    assert!(
        seen[0].1.starts_with("HTTP/1.1 101 ") && seen[0].1.ends_with("\r\n\r\nhelloecho:ping"),
        "haproxy: {:?}",
        seen[0].1
    );
    assert_eq!(seen[1], ("sluice", seen[0].1.clone()));
    let h = hheads.lock().unwrap().clone();
    let s = sheads.lock().unwrap().clone();
    assert_eq!(s, h, "upgrade requests the servers got");
}

/// What the client of an extended CONNECT (RFC 8441) that ends in an
/// error page sees on its stream, the tunnel's side still open: each
/// frame's type, whether it ends the stream, the status of a HEADERS, and
/// the error code of a RST_STREAM (the last frame looked at).
async fn refused_extended_connect(port: u16) -> Vec<(u8, bool, u32)> {
    let mut c = Conn::open(port).await;
    let req = block(
        &[
            (":method", b"CONNECT"),
            (":protocol", b"websocket"),
            (":scheme", b"http"),
            (":path", b"/chat"),
            (":authority", b"h"),
        ],
        &[(b"sec-websocket-version", b"13")],
    );
    let mut out = frame(SETTINGS, ACK, 0, &[]);
    out.extend(frame(HEADERS, END_HEADERS, 1, &req));
    c.send(&out).await;
    let mut seen = Vec::new();
    while let Some((ty, fl, id, p)) = c.next().await {
        if id != 1 {
            continue;
        }
        let end = fl & END_STREAM != 0;
        match ty {
            HEADERS => seen.push((ty, end, u32::from(status_of(&p)))),
            DATA => seen.push((ty, end, 0)),
            RST_STREAM => {
                seen.push((ty, false, u32_of(&p)));
                break;
            }
            _ => seen.push((ty, end, 0)),
        }
    }
    seen
}

/// An extended CONNECT (RFC 8441) that ends in an answer other than the
/// 101, the client's side still open: HAProxy 2.6 sends the answer, its
/// last DATA ending the stream, then RST_STREAM(CANCEL). sluice sends the
/// same answer, then RST_STREAM(NO_ERROR): a known difference left, made
/// by the h2 crate (0.4.20), which picks NO_ERROR for the reset of a
/// stream whose response is complete while the request is not (RFC 9113
/// §8.1); an explicit `send_reset(CANCEL)` would drop the answer's DATA
/// still queued.
#[tokio::test]
async fn extended_connect_refused_as_haproxy() {
    let hsrv = RawBackend::start().await;
    let ssrv = RawBackend::start().await;
    let Some((_hap, _sl, fronts)) =
        start("h2wsref", &hsrv.addr.to_string(), &ssrv.addr.to_string())
    else {
        return;
    };
    const CANCEL: u32 = 8;
    const NO_ERROR: u32 = 0;
    // A 101 without `Sec-WebSocket-Accept` is a 502; a 403 is relayed.
    let answers: [(&[u8], u32); 2] = [
        (
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
            502,
        ),
        (
            b"HTTP/1.1 403 Forbidden\r\ncontent-length: 3\r\n\r\nno\n",
            403,
        ),
    ];
    for (answer, status) in answers {
        hsrv.answer(answer);
        ssrv.answer(answer);
        let h = refused_extended_connect(fronts[0].port()).await;
        let s = refused_extended_connect(fronts[1].port()).await;
        let framed = |code| {
            vec![
                (HEADERS, false, status),
                (DATA, true, 0),
                (RST_STREAM, false, code),
            ]
        };
        assert_eq!(h, framed(CANCEL), "haproxy, {status}");
        assert_eq!(s, framed(NO_ERROR), "sluice, {status}");
    }
}

/// Every byte value in each place of a request that HAProxy checks:
/// inside `:method`, `:scheme`, `:path`, `:authority`, a field name and a
/// field value. Each request goes on its own connection with a good
/// stream beside it; haproxy and sluice must give the same outcome to
/// both streams (a status with the same body, a reset with the same
/// code, or a GOAWAY).
#[tokio::test]
async fn each_byte_in_each_part_as_haproxy() {
    let Some(p) = pair("h2bytes").await else {
        return;
    };
    let mut report = Vec::new();
    let mut table: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
    for part in [":method", ":scheme", ":path", ":authority", "name", "value"] {
        for b in 0..=255u8 {
            let request = match part {
                ":method" => get(&[(":method", Some(leak(&[b'G', b, b'T'])))], &[]),
                ":scheme" => get(&[(":scheme", Some(leak(&[b'h', b, b'p'])))], &[]),
                ":path" => get(&[(":path", Some(leak(&[b'/', b'a', b, b'b'])))], &[]),
                ":authority" => get(&[(":authority", Some(leak(&[b'h', b, b'o'])))], &[]),
                "name" => get(&[], &[(leak(&[b'x', b, b'y']), b"1")]),
                _ => get(&[], &[(b"x", leak(&[b'a', b, b'b']))]),
            };
            let h = try_request(p.haproxy.port, &request).await;
            let s = try_request(p.sluice.port, &request).await;
            table
                .entry(format!("{part} {:?}/{:?}", h.0, h.1))
                .or_default()
                .push(b);
            if (h.0, h.1) != (s.0, s.1) || (matches!(h.0, Status(c) if c != 200) && h.2 != s.2) {
                report.push(format!(
                    "{part} byte {b:#04x}: haproxy {:?}/{:?}, sluice {:?}/{:?}{}",
                    h.0,
                    h.1,
                    s.0,
                    s.1,
                    if h.2 != s.2 {
                        format!(
                            "; bodies {:?} and {:?}",
                            String::from_utf8_lossy(&h.2),
                            String::from_utf8_lossy(&s.2)
                        )
                    } else {
                        String::new()
                    }
                ));
            }
        }
    }
    if std::env::var_os("SHOW_TABLE").is_some() {
        for (k, v) in &table {
            eprintln!("{k}: {v:02x?}");
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}

fn leak(b: &[u8]) -> &'static [u8] {
    Box::leak(b.to_vec().into_boxed_slice())
}

/// What an HTTP/2 client gets for a POST with a body of unknown length and
/// trailer fields, from a proxy on `port`: the response's status, fields
/// (but `date`), body and trailers.
async fn post_with_trailers(
    port: u16,
) -> (u16, Vec<(String, String)>, Vec<u8>, Vec<(String, String)>) {
    let tcp = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap();
    let (send, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut send = send.ready().await.unwrap();
    let req = http::Request::builder()
        .method("POST")
        .uri("http://h/up")
        .body(())
        .unwrap();
    let (resp, mut body) = send.send_request(req, false).unwrap();
    body.send_data(bytes::Bytes::from_static(b"hello"), false)
        .unwrap();
    let mut trailers = http::HeaderMap::new();
    trailers.insert("x-client-trailer", "one".parse().unwrap());
    trailers.append("x-other", "two".parse().unwrap());
    body.send_trailers(trailers).unwrap();
    let resp = tokio::time::timeout(STALL, resp).await.unwrap().unwrap();
    let (parts, mut recv) = resp.into_parts();
    let mut data = Vec::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.unwrap();
        let _ = recv.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let trailers = recv.trailers().await.unwrap().unwrap_or_default();
    let list = |m: &http::HeaderMap| {
        m.iter()
            .filter(|(n, _)| *n != "date")
            .map(|(n, v)| {
                (
                    n.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect::<Vec<_>>()
    };
    (
        parts.status.as_u16(),
        list(&parts.headers),
        data,
        list(&trailers),
    )
}

/// Trailers both ways across an HTTP/1 server: an HTTP/2 request's
/// trailers reach the server in the last chunk of its chunked body, and a
/// chunked response's trailer fields reach the client as HTTP/2 trailers,
/// the same bytes and fields from haproxy and from sluice.
#[tokio::test]
async fn trailers_both_ways_as_haproxy() {
    let hbe = RawBackend::start().await;
    let sbe = RawBackend::start().await;
    let answer: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nworld\r\n0\r\nX-Server-Trailer: yes\r\nx-count: 2\r\n\r\n";
    hbe.answer(answer);
    sbe.answer(answer);
    let Some((_hap, _sl, fronts)) = start("h2trl", &hbe.addr.to_string(), &sbe.addr.to_string())
    else {
        return;
    };
    let h = post_with_trailers(fronts[0].port()).await;
    let s = post_with_trailers(fronts[1].port()).await;
    assert_eq!(s, h, "sluice, then haproxy");
    assert_eq!(s.2, b"world");
    assert_eq!(
        s.3,
        [
            ("x-server-trailer".to_string(), "yes".to_string()),
            ("x-count".to_string(), "2".to_string())
        ]
    );
    let text = |b: Vec<Vec<u8>>| {
        b.iter()
            .map(|r| String::from_utf8_lossy(r).into_owned())
            .collect::<Vec<_>>()
    };
    let (hgot, sgot) = (text(hbe.take_requests()), text(sbe.take_requests()));
    assert_eq!(
        sgot, hgot,
        "what the servers received: sluice, then haproxy"
    );
    assert!(
        sgot[0].ends_with("0\r\nx-client-trailer: one\r\nx-other: two\r\n\r\n"),
        "{sgot:?}"
    );
}

/// The header blocks of the responses to two GETs on one connection,
/// from a proxy on `port`, in the order they came.
async fn response_blocks(port: u16) -> Vec<Vec<u8>> {
    let mut c = Conn::open(port).await;
    let req = get(&[], &[]);
    let mut out = frame(HEADERS, END_HEADERS | END_STREAM, 1, &req);
    out.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, &req));
    c.send(&out).await;
    let mut blocks = Vec::new();
    let mut ended = 0;
    while ended < 2 {
        let Some((kind, flags, _, payload)) = c.next().await else {
            break;
        };
        if kind == HEADERS {
            blocks.push(payload);
        }
        if (kind == HEADERS || kind == DATA) && flags & END_STREAM != 0 {
            ended += 1;
        }
    }
    blocks
}

/// Responses' header blocks are HAProxy's to the byte: `:status` indexed
/// when the static table has it, else a literal of its static name; each
/// field whose name is in the static table a literal with incremental
/// indexing of that name, any other a literal with a new name; no
/// Huffman coding and no reference to the dynamic table, so the second
/// response's block is the first's. Fields HTTP/2 has no place for are
/// left out as HAProxy leaves them out (`Keep-Alive`, `Connection`,
/// `Transfer-Encoding`), `Expect` and `Trailer` kept. Nothing is masked:
/// neither proxy adds a `date`.
#[tokio::test]
async fn response_header_blocks_as_haproxy() {
    let hbe = RawBackend::start().await;
    let sbe = RawBackend::start().await;
    let answers: [&[u8]; 2] = [
        b"HTTP/1.1 302 Found\r\nLocation: /x\r\nServer: raw\r\nX-Custom: a\r\nSet-Cookie: a=b\r\nSet-Cookie: c=d\r\nExpect: e\r\nTrailer: t\r\nKeep-Alive: timeout=5\r\nAccept-Encoding: gzip, deflate\r\nX-Long: 0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789\r\nContent-Length: 2\r\n\r\nhi",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nCache-Control: no-cache\r\nX-Custom: a\r\nContent-Length: 2\r\n\r\nhi",
    ];
    hbe.script(&answers);
    sbe.script(&answers);
    let Some((_hap, _sl, fronts)) = start("h2hpack", &hbe.addr.to_string(), &sbe.addr.to_string())
    else {
        return;
    };
    let h = response_blocks(fronts[0].port()).await;
    let s = response_blocks(fronts[1].port()).await;
    assert_eq!(h.len(), 2, "haproxy's blocks: {h:02x?}");
    assert_eq!(s, h, "sluice, then haproxy");
    // The 302 is a literal of `:status`, the 200 the static entry 8.
    assert_eq!(&s[0][..5], b"\x48\x03302");
    assert_eq!(s[1][0], 0x88);
}
