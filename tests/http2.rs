//! HTTP/2 from clients (issue #8 item 3): `bind ... proto h2` (h2c with
//! prior knowledge), the preface on a plain HTTP listener, `h2` by ALPN
//! over TLS. Each stream goes through the HTTP/1 pipeline to HTTP/1.1
//! servers: the bytes a raw backend receives are asserted (they are what
//! haproxy 2.6.12 sends for the same requests), rules and ACLs apply,
//! bodies stream, a malformed stream is reset alone and a rapid-reset
//! flood is stopped with GOAWAY while the process goes on serving.

mod support;

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::raw::RawBackend;
use support::syslog::*;
use support::*;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// An HTTP/2 client connection (h2c, prior knowledge).
async fn h2_connect(port: u16) -> h2::client::SendRequest<Bytes> {
    let tcp = TcpStream::connect(addr(port)).await.unwrap();
    let (send, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    send
}

/// A response read whole: status, headers, body.
struct H2Response {
    status: u16,
    headers: http::HeaderMap,
    body: Vec<u8>,
}

async fn h2_read(resp: h2::client::ResponseFuture) -> H2Response {
    let resp = within(Duration::from_secs(5), "the response", resp)
        .await
        .unwrap();
    let (parts, mut body) = resp.into_parts();
    let mut out = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        out.extend_from_slice(&chunk);
    }
    H2Response {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: out,
    }
}

/// Sends a request without a body on `send`.
async fn h2_get(
    send: &mut h2::client::SendRequest<Bytes>,
    uri: &str,
    headers: &[(&str, &str)],
) -> H2Response {
    let mut req = http::Request::builder().method("GET").uri(uri);
    for (n, v) in headers {
        req = req.header(*n, *v);
    }
    let ready = send.clone().ready().await.unwrap();
    *send = ready;
    let (resp, _) = send.send_request(req.body(()).unwrap(), true).unwrap();
    h2_read(resp).await
}

/// Whether a command-line tool runs here; under CI it must (`.ci/run`
/// installs it).
fn have(tool: &str, arg: &str) -> bool {
    let ok = Command::new(tool)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "{tool} is required under CI (.ci/run installs it)"
        );
        eprintln!("{tool} not installed: part of the test skipped");
    }
    ok
}

/// curl's body then `%{http_code} %{http_version}` for `args` (run off
/// the test's runtime, which serves the backends).
async fn curl(args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("curl")
            .args(["-s", "-m", "5", "-w", "\n%{http_code} %{http_version}"])
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const H2_FRONTEND: &str = "defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
";

/// What haproxy 2.6.12 sends its server for this request (captured with
/// curl --http2-prior-knowledge against `bind ... proto h2`): origin-form
/// target, `host` from `:authority` first, the fields in order, the
/// cookie crumbs merged into one field at the end; the server's
/// `connection` / `keep-alive` never reach the client; the log shows the
/// absolute URI and `HTTP/2.0`.
#[tokio::test]
async fn h2c_request_reaches_the_server_in_http1_form() {
    let be = RawBackend::start().await;
    be.answer(b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nX-A: b\r\nContent-Length: 2\r\n\r\nok");
    let syslog = Syslog::new();
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&format!(
        "global
    log {} local0
{H2_FRONTEND}    log global
    option httplog
    # The readiness probe sends nothing: not logged.
    option dontlognull
frontend fe
    bind {fe} proto h2
    default_backend be
backend be
    server s1 {}
",
        syslog.addr(),
        be.addr
    ));
    let mut send = h2_connect(port).await;
    let r = h2_get(
        &mut send,
        "http://site.test/p?q=1",
        &[("cookie", "a=1"), ("x-up", "Hi"), ("cookie", "b=2")],
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"ok");
    assert_eq!(r.headers.get("x-a").map(|v| v.as_bytes()), Some(&b"b"[..]));
    assert!(r.headers.get("connection").is_none() && r.headers.get("keep-alive").is_none());
    let got = be.take_requests();
    assert_eq!(
        String::from_utf8_lossy(&got[0]),
        "GET /p?q=1 HTTP/1.1\r\nhost: site.test\r\nx-up: Hi\r\ncookie: a=1; b=2\r\n\r\n"
    );
    let lines = syslog.take(1);
    assert!(
        lines[0].ends_with("\"GET http://site.test/p?q=1 HTTP/2.0\"\n"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(" fe be/s1 "), "{}", lines[0]);
    drop(s);
}

/// curl with prior knowledge on `proto h2`, and on a plain listener
/// (HAProxy switches to HTTP/2 when a client starts with the preface);
/// HTTP/1 still works there, and `proto h1` does not switch.
#[tokio::test]
async fn curl_prior_knowledge_and_the_preface_on_a_plain_listener() {
    if !have("curl", "--version") {
        return;
    }
    let be = Backend::start("app").await;
    let (fe_p2, fe_p_any, fe_p1) = (Listen::new(), Listen::new(), Listen::new());
    let (p2, p_any, p1) = (fe_p2.port(), fe_p_any.port(), fe_p1.port());
    let _s = Sluice::start(&format!(
        "{H2_FRONTEND}frontend fe
    bind {fe_p2} proto h2
    bind {fe_p_any}
    bind {fe_p1} proto h1
    default_backend be
backend be
    server app {}
",
        be.hostport()
    ));
    let pk = "--http2-prior-knowledge";
    for port in [p2, p_any] {
        let out = curl(&[pk, &format!("http://127.0.0.1:{port}/x")]).await;
        assert!(out.ends_with("\n200 2"), "port {port}: {out}");
    }
    let out = curl(&[&format!("http://127.0.0.1:{p_any}/h1")]).await;
    assert!(out.ends_with("\n200 1.1"), "{out}");
    // `proto h1`: the preface is an HTTP/1 request it refuses.
    let out = curl(&[pk, &format!("http://127.0.0.1:{p1}/x")]).await;
    assert!(!out.ends_with("\n200 2"), "{out}");
    assert_eq!(be.hits(), 3);
}

/// `proto h2` and `proto h1` on UNIX sockets (a path and `unix@`), as on
/// TCP: prior knowledge on the first, HTTP/1 only on the second, and
/// neither takes the other's protocol (haproxy 2.6 answers the same way).
#[tokio::test]
async fn proto_on_unix_socket_binds() {
    if !have("curl", "--version") {
        return;
    }
    let be = Backend::start("app").await;
    let dir = TempDir::new("h2unix");
    let (h2, h1) = (dir.join("h2.sock"), dir.join("h1.sock"));
    let _s = Sluice::start(&format!(
        "{H2_FRONTEND}frontend fe
    bind {} proto h2
    bind unix@{} proto h1
    default_backend be
backend be
    server app {}
",
        h2.display(),
        h1.display(),
        be.hostport()
    ));
    let (h2, h1) = (h2.to_str().unwrap(), h1.to_str().unwrap());
    let pk = "--http2-prior-knowledge";
    let out = curl(&["--unix-socket", h2, pk, "http://x/a"]).await;
    assert!(out.ends_with("\n200 2"), "{out}");
    // HTTP/1 on `proto h2`, the preface on `proto h1`: refused.
    let out = curl(&["--unix-socket", h2, "http://x/b"]).await;
    assert!(!out.ends_with("\n200 1.1"), "{out}");
    let out = curl(&["--unix-socket", h1, pk, "http://x/c"]).await;
    assert!(!out.ends_with("\n200 2"), "{out}");
    let out = curl(&["--unix-socket", h1, "http://x/d"]).await;
    assert!(out.ends_with("\n200 1.1"), "{out}");
    assert_eq!(be.hits(), 2);
}

/// `option disable-h2-upgrade`: the preface on a plain listener is no
/// longer taken as HTTP/2; `proto h2` still is.
#[tokio::test]
async fn disable_h2_upgrade_keeps_plain_listeners_http1() {
    if !have("curl", "--version") {
        return;
    }
    let be = Backend::start("app").await;
    let (fe_p_any, fe_p2) = (Listen::new(), Listen::new());
    let (p_any, p2) = (fe_p_any.port(), fe_p2.port());
    let _s = Sluice::start(&format!(
        "{H2_FRONTEND}frontend fe
    option disable-h2-upgrade
    bind {fe_p_any}
    bind {fe_p2} proto h2
    default_backend be
backend be
    server app {}
",
        be.hostport()
    ));
    let pk = "--http2-prior-knowledge";
    let out = curl(&[pk, &format!("http://127.0.0.1:{p_any}/x")]).await;
    assert!(!out.ends_with("\n200 2"), "{out}");
    let out = curl(&[pk, &format!("http://127.0.0.1:{p2}/x")]).await;
    assert!(out.ends_with("\n200 2"), "{out}");
    assert_eq!(be.hits(), 1);
}

/// h2load: thousands of requests over several connections and streams,
/// all answered 2xx, and the counters of `show stat` agree (the h2 ones,
/// and the h1 ones for an HTTP/1 request next to them).
#[tokio::test]
async fn h2load_many_streams_counted_in_show_stat() {
    if !have("h2load", "--version") {
        return;
    }
    let be = Backend::start("app").await;
    let (_hold, [port, p1]) = hold_ports::<2>();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
{H2_FRONTEND}frontend fe
    bind 127.0.0.1:{port} proto h2
    bind 127.0.0.1:{p1}
    default_backend be
backend be
    server app {}
",
        be.hostport()
    ));
    let before = show_stat(&s.stats_socket()).await;
    let n = 2000;
    let out = tokio::task::spawn_blocking(move || {
        Command::new("h2load")
            .args(["-n", &n.to_string(), "-c", "4", "-m", "10"])
            .arg(format!("http://127.0.0.1:{port}/load"))
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("status codes: {n} 2xx, 0 3xx, 0 4xx, 0 5xx")),
        "{text}"
    );
    assert_eq!(get(addr(p1), "/h1").await.status, 200);
    // A request's status is counted as it ends, after its last byte went
    // out: the client can read it first (its `req_tot` comes at its start).
    let want = before.num("fe", "FRONTEND", "hrsp_2xx") + n + 1;
    wait_until(
        Duration::from_secs(5),
        "the last request counted",
        || async {
            show_stat(&s.stats_socket())
                .await
                .num("fe", "FRONTEND", "hrsp_2xx")
                >= want
        },
    )
    .await;
    let after = show_stat(&s.stats_socket()).await;
    let delta = |px: &str, sv: &str, f: &str| after.num(px, sv, f) - before.num(px, sv, f);
    assert_eq!(delta("fe", "FRONTEND", "req_tot"), n + 1);
    assert_eq!(delta("fe", "FRONTEND", "hrsp_2xx"), n + 1);
    assert_eq!(delta("fe", "FRONTEND", "h1_total_streams"), 1);
    assert!(delta("fe", "FRONTEND", "h1_total_connections") >= 1);
    assert_eq!(delta("fe", "FRONTEND", "h2_headers_rcvd"), n);
    assert_eq!(delta("fe", "FRONTEND", "h2_total_connections"), 4);
    wait_until(Duration::from_secs(5), "h2 connections closed", || async {
        show_stat(&s.stats_socket())
            .await
            .num("fe", "FRONTEND", "h2_open_connections")
            == 0
    })
    .await;
    assert_eq!(delta("be", "BACKEND", "req_tot"), n + 1);
    assert_eq!(delta("be", "app", "hrsp_2xx"), n + 1);
    assert_eq!(be.hits() as u64, n + 1);
}

/// A request body streams through: the server has the first DATA frame's
/// bytes before the client sends the rest; without a length it goes
/// chunked, with one as is.
#[tokio::test]
async fn request_bodies_stream_to_the_server() {
    let be = RawBackend::start().await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&format!(
        "{H2_FRONTEND}frontend fe
    bind {fe} proto h2
    default_backend be
backend be
    server s1 {}
",
        be.addr
    ));
    let mut send = h2_connect(port).await;
    let req = http::Request::builder()
        .method("POST")
        .uri("http://site.test/up")
        .body(())
        .unwrap();
    send = send.ready().await.unwrap();
    let (resp, mut body) = send.send_request(req, false).unwrap();
    body.send_data(Bytes::from_static(b"hello"), false).unwrap();
    let mut got = Vec::new();
    wait_until(
        Duration::from_secs(5),
        "the first part at the server",
        || {
            got.extend(be.take());
            let seen = support::raw::find(&got, b"hello", 0).is_some();
            async move { seen }
        },
    )
    .await;
    body.send_data(Bytes::from_static(b" world"), true).unwrap();
    let r = h2_read(resp).await;
    assert_eq!(r.status, 200);
    got.extend(be.take());
    assert_eq!(
        String::from_utf8_lossy(&got),
        "POST /up HTTP/1.1\r\nhost: site.test\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    );
    // With a content-length: forwarded as it is.
    let req = http::Request::builder()
        .method("POST")
        .uri("http://site.test/up2")
        .header("content-length", "3")
        .body(())
        .unwrap();
    send = send.ready().await.unwrap();
    let (resp, mut body) = send.send_request(req, false).unwrap();
    body.send_data(Bytes::from_static(b"abc"), true).unwrap();
    assert_eq!(h2_read(resp).await.status, 200);
    assert_eq!(
        String::from_utf8_lossy(&be.take()),
        "POST /up2 HTTP/1.1\r\nhost: site.test\r\ncontent-length: 3\r\n\r\nabc"
    );
}

/// `http-request deny` and `use_backend` ACLs see an HTTP/2 request as
/// an HTTP/1 one (`:authority` as Host), on one connection.
#[tokio::test]
async fn rules_and_acl_routing_apply_to_streams() {
    let web = Backend::start("web").await;
    let api = Backend::start("api").await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&format!(
        "{H2_FRONTEND}frontend fe
    bind {fe} proto h2
    http-request deny if {{ path_beg /admin }}
    use_backend api if {{ hdr(host) -m beg api. }}
    default_backend web
backend web
    server web {}
backend api
    server api {}
",
        web.hostport(),
        api.hostport()
    ));
    let mut send = h2_connect(port).await;
    let r = h2_get(&mut send, "http://api.test/v1", &[]).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["x-backend"], "api");
    let r = h2_get(&mut send, "http://www.test/", &[]).await;
    assert_eq!(r.headers["x-backend"], "web");
    let r = h2_get(&mut send, "http://www.test/admin/x", &[]).await;
    assert_eq!(r.status, 403);
    assert!(String::from_utf8_lossy(&r.body).contains("403 Forbidden"));
    // The connection goes on after the denial.
    let r = h2_get(&mut send, "http://api.test/v2", &[]).await;
    assert_eq!(r.status, 200);
    assert_eq!((web.hits(), api.hits()), (1, 2));
}

/// Raw HTTP/2 frames, for what a well-behaved client library refuses to
/// send.
mod frames {
    pub const DATA: u8 = 0;
    pub const HEADERS: u8 = 1;
    pub const RST_STREAM: u8 = 3;
    pub const SETTINGS: u8 = 4;
    pub const GOAWAY: u8 = 7;
    pub const END_STREAM: u8 = 1;
    pub const END_HEADERS: u8 = 4;

    pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// The preface and an empty SETTINGS.
    pub fn start() -> Vec<u8> {
        let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        out.extend(frame(SETTINGS, 0, 0, &[]));
        out
    }

    /// HPACK for `GET http://h/` (static-table entries) plus `extra`
    /// literal fields (without indexing, new names, no Huffman).
    pub fn get_block(extra: &[(&str, &str)]) -> Vec<u8> {
        // :method GET, :scheme http, :path /, then :authority "h".
        let mut b = vec![0x82, 0x86, 0x84, 0x01, 1, b'h'];
        for (n, v) in extra {
            b.push(0);
            b.push(n.len() as u8);
            b.extend_from_slice(n.as_bytes());
            b.push(v.len() as u8);
            b.extend_from_slice(v.as_bytes());
        }
        b
    }

    /// Frames (type, flags, stream, payload) from `buf`, whole ones only.
    pub fn parse(buf: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
        let mut out = Vec::new();
        let mut p = 0;
        while buf.len() >= p + 9 {
            let len = (buf[p] as usize) << 16 | (buf[p + 1] as usize) << 8 | buf[p + 2] as usize;
            if buf.len() < p + 9 + len {
                break;
            }
            let stream =
                u32::from_be_bytes([buf[p + 5], buf[p + 6], buf[p + 7], buf[p + 8]]) & 0x7fff_ffff;
            out.push((
                buf[p + 3],
                buf[p + 4],
                stream,
                buf[p + 9..p + 9 + len].to_vec(),
            ));
            p += 9 + len;
        }
        out
    }
}

/// Reads frames from `c` until `done` says so (or 5 s pass).
async fn read_frames(
    c: &mut TcpStream,
    done: impl Fn(&[(u8, u8, u32, Vec<u8>)]) -> bool,
) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut buf = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let frames = frames::parse(&buf);
        if done(&frames) {
            return frames;
        }
        let mut chunk = [0u8; 16384];
        match tokio::time::timeout_at(deadline, c.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return frames,
        }
    }
}

/// sluice with `bind ... proto h2` in front of one HTTP/1 backend.
async fn h2c_to_app() -> (Backend, Sluice, u16) {
    let be = Backend::start("app").await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&format!(
        "{H2_FRONTEND}frontend fe
    bind {fe} proto h2
    default_backend be
backend be
    server app {}
",
        be.hostport()
    ));
    (be, s, port)
}

/// A stream with a connection-specific field is malformed (RFC 9113
/// §8.2.2): it alone is reset (PROTOCOL_ERROR) and never reaches the
/// server; the next stream on the same connection is served.
#[tokio::test]
async fn a_malformed_stream_is_reset_alone() {
    use frames::*;
    let (be, _s, port) = h2c_to_app().await;
    let mut c = TcpStream::connect(addr(port)).await.unwrap();
    let mut out = start();
    let flags = END_STREAM | END_HEADERS;
    out.extend(frame(
        HEADERS,
        flags,
        1,
        &get_block(&[("connection", "close")]),
    ));
    out.extend(frame(HEADERS, flags, 3, &get_block(&[("x-ok", "1")])));
    c.write_all(&out).await.unwrap();
    let got = read_frames(&mut c, |f| {
        f.iter().any(|(t, _, s, _)| *t == RST_STREAM && *s == 1)
            && f.iter()
                .any(|(_, fl, s, _)| *s == 3 && fl & END_STREAM != 0)
    })
    .await;
    let rst = got
        .iter()
        .find(|(t, _, s, _)| *t == RST_STREAM && *s == 1)
        .unwrap_or_else(|| panic!("no RST_STREAM on stream 1: {got:?}"));
    assert_eq!(rst.3, 1u32.to_be_bytes(), "PROTOCOL_ERROR");
    let h3 = got
        .iter()
        .find(|(t, _, s, _)| *t == HEADERS && *s == 3)
        .unwrap_or_else(|| panic!("no response on stream 3: {got:?}"));
    // :status 200 is entry 8 of the static table.
    assert_eq!(h3.3[0], 0x88, "status 200");
    // A body of known length ends on its one DATA frame (as HAProxy).
    let data: Vec<_> = got
        .iter()
        .filter(|(t, _, s, _)| *t == DATA && *s == 3)
        .collect();
    assert_eq!(data.len(), 1, "{data:?}");
    assert!(
        data[0].1 & END_STREAM != 0 && !data[0].3.is_empty(),
        "{data:?}"
    );
    assert!(!got.iter().any(|(t, ..)| *t == GOAWAY), "{got:?}");
    assert_eq!(be.hits(), 1);
}

/// Rapid reset (CVE-2023-44487): streams opened and cancelled at once,
/// by hundreds. The connection is closed with GOAWAY ENHANCE_YOUR_CALM,
/// and the process goes on serving other clients.
#[tokio::test]
async fn a_rapid_reset_flood_gets_goaway() {
    use frames::*;
    let (be, _s, port) = h2c_to_app().await;
    let mut c = TcpStream::connect(addr(port)).await.unwrap();
    let mut out = start();
    let block = get_block(&[]);
    for i in 0..500u32 {
        let id = 2 * i + 1;
        out.extend(frame(HEADERS, END_STREAM | END_HEADERS, id, &block));
        // CANCEL (8).
        out.extend(frame(RST_STREAM, 0, id, &8u32.to_be_bytes()));
    }
    // The server may close before reading everything.
    let _ = c.write_all(&out).await;
    let got = read_frames(&mut c, |f| f.iter().any(|(t, ..)| *t == GOAWAY)).await;
    let goaway = got
        .iter()
        .find(|(t, ..)| *t == GOAWAY)
        .unwrap_or_else(|| panic!("no GOAWAY: {got:?}"));
    // Last stream id (4 bytes), then the error code: ENHANCE_YOUR_CALM.
    assert_eq!(goaway.3[4..8], 0xbu32.to_be_bytes(), "{goaway:?}");
    assert!(be.hits() < 500, "{} streams reached the server", be.hits());
    // Others are served.
    let mut send = h2_connect(port).await;
    assert_eq!(h2_get(&mut send, "http://h/after", &[]).await.status, 200);
}

/// TLS with `alpn h2,http/1.1`: a client that picks `h2` is served
/// HTTP/2, one that picks `http/1.1` HTTP/1.1, on the same listener; the
/// log line of the HTTP/2 request says `https://` and `HTTP/2.0`.
#[tokio::test]
async fn alpn_h2_over_tls() {
    if !have("curl", "--version") {
        return;
    }
    let key = rcgen::generate_simple_self_signed(vec!["site.test".to_string()]).unwrap();
    let dir = TempDir::new("h2tls");
    let pem = dir.write(
        "site.pem",
        &format!("{}{}", key.cert.pem(), key.signing_key.serialize_pem()),
    );
    let be = Backend::start("app").await;
    let syslog = Syslog::new();
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&format!(
        "global
    log {} local0
{H2_FRONTEND}    log global
    option httplog
frontend fe
    bind {fe} ssl crt {} alpn h2,http/1.1
    default_backend be
backend be
    server app {}
",
        syslog.addr(),
        pem.display(),
        be.hostport()
    ));
    let url = format!("https://site.test:{port}/secure");
    let resolve = format!("site.test:{port}:127.0.0.1");
    let out = curl(&["-k", "--http2", "--resolve", &resolve, &url]).await;
    assert!(out.ends_with("\n200 2"), "{out}");
    let out = curl(&["-k", "--http1.1", "--resolve", &resolve, &url]).await;
    assert!(out.ends_with("\n200 1.1"), "{out}");
    assert_eq!(be.hits(), 2);
    let lines = syslog.take(2);
    let h2 = lines
        .iter()
        .find(|l| l.contains("HTTP/2.0"))
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(
        h2.ends_with(&format!(
            "\"GET https://site.test:{port}/secure HTTP/2.0\"\n"
        )),
        "{h2}"
    );
}

/// What an HTTP/2 test server saw of one request.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    uri: String,
    headers: http::HeaderMap,
    body: Vec<u8>,
}

type SeenList = std::sync::Arc<std::sync::Mutex<Vec<Seen>>>;

/// An HTTP/2 server (h2c with prior knowledge, or TLS with ALPN `h2`)
/// answering `200` with `h2 <path>` and recording each request; `conns`
/// counts its TCP connections.
struct H2Server {
    addr: SocketAddr,
    seen: SeenList,
    conns: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl H2Server {
    async fn start(tls: Option<std::sync::Arc<rustls::ServerConfig>>) -> H2Server {
        use std::sync::atomic::Ordering::Relaxed;
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let conns = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (s2, c2) = (seen.clone(), conns.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = l.accept().await {
                c2.fetch_add(1, Relaxed);
                let seen = s2.clone();
                match &tls {
                    None => {
                        tokio::spawn(serve_h2(tcp, seen));
                    }
                    Some(cfg) => {
                        let acceptor = tokio_rustls::TlsAcceptor::from(cfg.clone());
                        tokio::spawn(async move {
                            if let Ok(s) = acceptor.accept(tcp).await {
                                serve_h2(s, seen).await;
                            }
                        });
                    }
                }
            }
        });
        H2Server { addr, seen, conns }
    }
}

async fn serve_h2<IO>(io: IO, seen: SeenList)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let Ok(mut conn) = h2::server::handshake(io).await else {
        return;
    };
    while let Some(Ok((req, mut respond))) = conn.accept().await {
        let seen = seen.clone();
        let seen = seen.clone();
        tokio::spawn(async move {
            let (parts, mut body) = req.into_parts();
            let mut got = Vec::new();
            while let Some(Ok(d)) = body.data().await {
                let _ = body.flow_control().release_capacity(d.len());
                got.extend_from_slice(&d);
            }
            let text = format!("h2 {}", parts.uri.path());
            seen.lock().unwrap().push(Seen {
                method: parts.method.to_string(),
                uri: parts.uri.to_string(),
                headers: parts.headers,
                body: got,
            });
            let resp = http::Response::builder()
                .status(200)
                .header("x-proto", "h2")
                .body(())
                .unwrap();
            if let Ok(mut s) = respond.send_response(resp, false) {
                let _ = s.send_data(Bytes::from(text), true);
            }
        });
    }
}

/// `server ... proto h2`: HTTP/1.1 clients' requests go to the server as
/// streams of one shared HTTP/2 connection (`Host` as `:authority`,
/// without connection-specific fields), bodies included, and the answers
/// come back in HTTP/1.1.
#[tokio::test]
async fn server_proto_h2_shares_one_connection() {
    let srv = H2Server::start(None).await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&format!(
        "{H2_FRONTEND}frontend fe
    bind {fe}
    default_backend be
backend be
    server s1 {} proto h2
",
        srv.addr
    ));
    let mut c = HttpConn::connect(addr(port)).await;
    for i in 0..4 {
        let r = c
            .raw(
                format!("GET /r{i}?q=1 HTTP/1.1\r\nhost: site.test\r\nconnection: keep-alive\r\nx-up: Hi\r\n\r\n")
                    .as_bytes(),
                false,
            )
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{}", r.head);
        // HTTP/2 has no reason phrase; haproxy 2.6 sends none either.
        assert!(r.head.starts_with("HTTP/1.1 200 \r\n"), "{}", r.head);
        assert_eq!(r.text(), format!("h2 /r{i}"));
        assert_eq!(r.header("x-proto"), Some("h2"));
    }
    let r = c
        .raw(
            b"POST /up HTTP/1.1\r\nhost: site.test\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            false,
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.head);
    // An HTTP/2 client too (the preface switches the plain listener).
    let mut send = h2_connect(port).await;
    let r = h2_get(&mut send, "http://other.test/via-h2", &[]).await;
    assert_eq!(r.body, b"h2 /via-h2");
    let seen = srv.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 6);
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].uri, "http://site.test/r0?q=1");
    assert_eq!(seen[0].headers["x-up"], "Hi");
    assert!(seen[0].headers.get("connection").is_none());
    assert_eq!(
        (seen[4].method.as_str(), &seen[4].body[..]),
        ("POST", &b"hello"[..])
    );
    assert_eq!(seen[5].uri, "http://other.test/via-h2");
    assert_eq!(srv.conns.load(std::sync::atomic::Ordering::Relaxed), 1);
}

/// The HTTP/2 keywords at `-c` time: `tune.h2.*` in range, `proto` on
/// bind and server lines, and `send-proxy` refused with `proto h2`.
#[test]
fn h2_keywords_are_checked() {
    let dir = TempDir::new("h2cfg");
    let check = |text: &str| {
        let path = dir.write("t.cfg", text);
        run_sluice(&["-c", "-f", path.to_str().unwrap()], None)
    };
    let good = "global
    tune.h2.max-concurrent-streams 50
    tune.h2.initial-window-size 1048576
    tune.h2.header-table-size 8192
    tune.h2.max-frame-size 32768
defaults
    mode http
    option disable-h2-upgrade
frontend fe
    bind 127.0.0.1:1 proto h2
    bind 127.0.0.1:2 proto h1
    default_backend be
backend be
    server s1 127.0.0.1:3 proto h2
    server s2 127.0.0.1:4 proto h1
";
    let out = check(good);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let out = check("global\n    tune.h2.max-frame-size 100\n");
    assert_ne!(out.code(), Some(0));
    assert!(
        out.stderr.contains(
            "'tune.h2.max-frame-size' expects a numeric value between 16384 and 16777215."
        ),
        "{}",
        out.stderr
    );
    let out = check("frontend fe\n    mode http\n    bind 127.0.0.1:1 proto h3\n");
    assert_ne!(out.code(), Some(0));
    assert!(
        out.stderr.contains("unknown MUX protocol 'h3'"),
        "{}",
        out.stderr
    );
    let out = check("backend be\n    mode http\n    server s1 127.0.0.1:3 proto h2 send-proxy\n");
    assert_ne!(out.code(), Some(0));
    assert!(
        out.stderr
            .contains("'send-proxy' and 'proto h2' cannot be combined"),
        "{}",
        out.stderr
    );
}

/// `server ... ssl verify none proto h2`: HTTP/2 over TLS to the server,
/// `h2` offered by ALPN (the test server only speaks h2).
#[tokio::test]
async fn server_proto_h2_over_tls() {
    let key = rcgen::generate_simple_self_signed(vec!["srv.test".to_string()]).unwrap();
    let cert = rustls::pki_types::CertificateDer::from(key.cert.der().to_vec());
    let pk = rustls::pki_types::PrivateKeyDer::try_from(key.signing_key.serialize_der()).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], pk)
        .unwrap();
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let srv = H2Server::start(Some(std::sync::Arc::new(cfg))).await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&format!(
        "{H2_FRONTEND}frontend fe
    bind {fe}
    default_backend be
backend be
    server s1 {} ssl verify none proto h2
",
        srv.addr
    ));
    let r = get(addr(port), "/secure").await;
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.text(), "h2 /secure");
    let seen = srv.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].uri.starts_with("https://"), "{}", seen[0].uri);
}

/// The limits are announced in the server's SETTINGS: the `tune.h2.*`
/// values, and a header list bounded by `tune.bufsize - tune.maxrewrite`.
#[tokio::test]
async fn settings_announce_the_limits() {
    use frames::*;
    let be = Backend::start("app").await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&format!(
        "global
    tune.h2.max-concurrent-streams 7
    tune.h2.initial-window-size 100000
    tune.h2.max-frame-size 32768
    tune.bufsize 20000
{H2_FRONTEND}frontend fe
    bind {fe} proto h2
    default_backend be
backend be
    server app {}
",
        be.hostport()
    ));
    let mut c = TcpStream::connect(addr(port)).await.unwrap();
    c.write_all(&start()).await.unwrap();
    let got = read_frames(&mut c, |f| {
        f.iter().any(|(t, fl, ..)| *t == SETTINGS && fl & 1 == 0)
    })
    .await;
    let (_, _, _, payload) = got
        .iter()
        .find(|(t, fl, ..)| *t == SETTINGS && fl & 1 == 0)
        .unwrap_or_else(|| panic!("no SETTINGS: {got:?}"));
    let settings: Vec<(u16, u32)> = payload
        .chunks(6)
        .map(|s| {
            (
                u16::from_be_bytes([s[0], s[1]]),
                u32::from_be_bytes([s[2], s[3], s[4], s[5]]),
            )
        })
        .collect();
    for want in [
        (0x1, 4096),         // HEADER_TABLE_SIZE
        (0x3, 7),            // MAX_CONCURRENT_STREAMS
        (0x4, 100000),       // INITIAL_WINDOW_SIZE
        (0x5, 32768),        // MAX_FRAME_SIZE
        (0x6, 20000 - 1024), // MAX_HEADER_LIST_SIZE
    ] {
        assert!(settings.contains(&want), "{want:?} not in {settings:?}");
    }
}

/// HTTP checks of a `proto h2` server speak HTTP/2 (HAProxy uses the
/// server's protocol for checks unless `check-proto` says otherwise): an
/// h2c-only server is UP with L7OK; the same server checked with
/// `check-proto h1` fails its check.
#[tokio::test]
async fn checks_of_proto_h2_servers_speak_http2() {
    let srv = H2Server::start(None).await;
    let fe = Listen::new();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
{H2_FRONTEND}frontend fe
    bind {fe}
    default_backend be
backend be
    option httpchk GET /health
    server h2 {0} proto h2 check inter 100ms rise 1 fall 1
    server h1 {0} proto h2 check inter 100ms rise 1 fall 1 check-proto h1
",
        srv.addr
    ));
    let sock = s.stats_socket();
    wait_until(Duration::from_secs(5), "both checked", || async {
        let st = show_stat(&sock).await;
        st.get("be", "h2", "check_status") == "L7OK" && st.get("be", "h1", "status") == "DOWN"
    })
    .await;
    let st = show_stat(&sock).await;
    assert_eq!(st.get("be", "h2", "status"), "UP");
    assert_eq!(st.get("be", "h2", "check_code"), "200");
    assert_ne!(st.get("be", "h1", "check_status"), "L7OK");
    let seen = srv.seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|r| r.method == "GET" && r.uri.ends_with("/health")),
        "{:?}",
        seen.iter().map(|r| &r.uri).collect::<Vec<_>>()
    );
}

/// The connection's receive window is opened to 2^31-1 with the first
/// DATA frame (one WINDOW_UPDATE on stream 0 that also gives that frame
/// back, as HAProxy 2.6 sends it, see tests/h2_haproxy.rs): after it, 49
/// more small bodies (98,000 bytes in all, more than the 65,535 the
/// connection starts with) are sent at once without any further
/// WINDOW_UPDATE, and all 50 are answered.
#[tokio::test]
async fn many_small_bodies_never_wait_for_a_window_update() {
    use frames::*;
    const WINDOW_UPDATE: u8 = 8;
    let (be, _s, port) = h2c_to_app().await;
    let mut c = TcpStream::connect(addr(port)).await.unwrap();
    // :method POST, :scheme http, :path /, :authority h.
    let post = [0x83, 0x86, 0x84, 0x01, 1, b'h'];
    let mut out = start();
    out.extend(frame(HEADERS, END_HEADERS, 1, &post));
    out.extend(frame(DATA, END_STREAM, 1, &[b'x'; 2000]));
    c.write_all(&out).await.unwrap();
    // The WINDOW_UPDATE and the first answer, after which the server has
    // nothing more to send until the next requests.
    let ended = |f: &[(u8, u8, u32, Vec<u8>)]| {
        f.iter()
            .filter(|(t, fl, s, _)| {
                *s != 0 && (*t == DATA || *t == HEADERS) && fl & END_STREAM != 0
            })
            .count()
    };
    let got = read_frames(&mut c, |f| {
        ended(f) == 1 && f.iter().any(|(t, _, s, _)| *t == WINDOW_UPDATE && *s == 0)
    })
    .await;
    let inc: u64 = got
        .iter()
        .filter(|(t, _, s, _)| *t == WINDOW_UPDATE && *s == 0)
        .map(|(.., p)| u64::from(u32::from_be_bytes([p[0], p[1], p[2], p[3]])))
        .sum();
    assert_eq!(ended(&got), 1, "{got:?}");
    assert_eq!(
        65535 - 2000 + inc,
        (1 << 31) - 1,
        "connection window: {got:?}"
    );
    let mut out = Vec::new();
    for i in 1..50u32 {
        out.extend(frame(HEADERS, END_HEADERS, 2 * i + 1, &post));
        out.extend(frame(DATA, END_STREAM, 2 * i + 1, &[b'x'; 2000]));
    }
    c.write_all(&out).await.unwrap();
    let got = read_frames(&mut c, |f| ended(f) == 49).await;
    assert_eq!(
        ended(&got),
        49,
        "{:?}",
        got.iter().map(|f| (f.0, f.2)).collect::<Vec<_>>()
    );
    assert!(!got.iter().any(|(t, ..)| *t == GOAWAY || *t == RST_STREAM));
    assert_eq!(be.hits(), 50);
}

/// A `:scheme` that is not a URI scheme (empty, or starting with a digit)
/// is answered 400 and counted in `ereq` / `hrsp_4xx`, as haproxy 2.6.12
/// answers and counts it; a well-formed unusual one (`foo`) is served.
#[tokio::test]
async fn a_malformed_scheme_is_a_400() {
    use frames::*;
    let be = Backend::start("app").await;
    let (_held, port) = hold_port();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
{H2_FRONTEND}frontend fe
    bind 127.0.0.1:{port} proto h2
    default_backend be
backend be
    server app {}
",
        be.hostport()
    ));
    let block = |scheme: &str| {
        // :method GET, :scheme <literal> (name: static entry 6), :path /,
        // :authority h.
        let mut b = vec![0x82, 0x06, scheme.len() as u8];
        b.extend_from_slice(scheme.as_bytes());
        b.extend_from_slice(&[0x84, 0x01, 1, b'h']);
        b
    };
    let mut c = TcpStream::connect(addr(port)).await.unwrap();
    let mut out = start();
    let flags = END_STREAM | END_HEADERS;
    out.extend(frame(HEADERS, flags, 1, &block("")));
    out.extend(frame(HEADERS, flags, 3, &block("1http")));
    out.extend(frame(HEADERS, flags, 5, &block("foo")));
    c.write_all(&out).await.unwrap();
    let ended = |f: &[(u8, u8, u32, Vec<u8>)], s: u32| {
        f.iter()
            .any(|(_, fl, id, _)| *id == s && fl & END_STREAM != 0)
    };
    let got = read_frames(&mut c, |f| [1, 3, 5].iter().all(|&s| ended(f, s))).await;
    let status = |s: u32| {
        got.iter()
            .find(|(t, _, id, _)| *t == HEADERS && *id == s)
            .map(|(.., p)| p[0])
            .unwrap_or_else(|| panic!("no response on stream {s}: {got:?}"))
    };
    // :status 400 and 200 are entries 12 and 8 of the static table.
    assert_eq!((status(1), status(3), status(5)), (0x8c, 0x8c, 0x88));
    assert!(!got.iter().any(|(t, ..)| *t == RST_STREAM || *t == GOAWAY));
    assert_eq!(be.hits(), 1);
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.num("fe", "FRONTEND", "ereq"), 2);
    assert_eq!(csv.num("fe", "FRONTEND", "hrsp_4xx"), 2);
}

/// An HTTP/2 server for upgrades: with `connect` it announces
/// SETTINGS_ENABLE_CONNECT_PROTOCOL and takes an extended CONNECT
/// (`:protocol`) with a 200, then echoes the tunnel's bytes upper-cased;
/// it records each request's method, `:protocol` and headers.
async fn ws_h2_server(connect: bool) -> (SocketAddr, SeenList) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let seen = SeenList::default();
    let seen2 = seen.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            let seen = seen2.clone();
            tokio::spawn(async move {
                let mut b = h2::server::Builder::new();
                if connect {
                    b.enable_connect_protocol();
                }
                let Ok(mut conn) = b.handshake::<_, Bytes>(tcp).await else {
                    return;
                };
                while let Some(Ok((req, mut respond))) = conn.accept().await {
                    let seen = seen.clone();
                    tokio::spawn(async move {
                        let (parts, mut body) = req.into_parts();
                        let proto = parts
                            .extensions
                            .get::<h2::ext::Protocol>()
                            .map(|p| p.as_str().to_string())
                            .unwrap_or_default();
                        seen.lock().unwrap().push(Seen {
                            method: format!("{} {proto}", parts.method),
                            uri: parts.uri.to_string(),
                            headers: parts.headers,
                            body: Vec::new(),
                        });
                        let resp = http::Response::builder().status(200).body(()).unwrap();
                        let Ok(mut s) = respond.send_response(resp, false) else {
                            return;
                        };
                        while let Some(Ok(d)) = body.data().await {
                            let _ = body.flow_control().release_capacity(d.len());
                            let _ = s.send_data(Bytes::from(d.to_ascii_uppercase()), false);
                        }
                        let _ = s.send_data(Bytes::new(), true);
                    });
                }
            });
        }
    });
    (addr, seen)
}

/// An HTTP/1 WebSocket upgrade to a `proto h2` server goes out as an
/// extended CONNECT (RFC 8441, `:protocol websocket`) and its 200 comes
/// back as the 101 haproxy 2.6.12 makes of it (`connection: upgrade`,
/// `upgrade: websocket`, and the accept key of the client's key, which
/// the HTTP/2 server has no use for); the tunnel then carries bytes both
/// ways. A server that does not announce extended CONNECT gets nothing:
/// the client gets a 502, as from haproxy.
#[tokio::test]
async fn an_upgrade_to_an_h2_server_is_an_extended_connect() {
    let (with, seen) = ws_h2_server(true).await;
    let (without, seen_without) = ws_h2_server(false).await;
    let (_held, ports) = hold_port_vec(2);
    let _s = Sluice::start(&format!(
        "{H2_FRONTEND}frontend fe
    bind 127.0.0.1:{p0}
    default_backend be
frontend fe2
    bind 127.0.0.1:{p1}
    default_backend be2
backend be
    server s1 {with} proto h2
backend be2
    server s1 {without} proto h2
",
        p0 = ports[0],
        p1 = ports[1],
    ));
    let upgrade = b"GET /chat HTTP/1.1\r\nHost: ws.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    let mut c = TcpStream::connect(addr(ports[0])).await.unwrap();
    c.write_all(upgrade).await.unwrap();
    let head = ws::read_until(&mut c, b"\r\n\r\n").await;
    assert_eq!(
        String::from_utf8_lossy(&head),
        "HTTP/1.1 101 \r\nsec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n"
    );
    for msg in ["hello", "again"] {
        c.write_all(msg.as_bytes()).await.unwrap();
        let back = ws::read_until(&mut c, msg.to_ascii_uppercase().as_bytes()).await;
        assert!(back.ends_with(msg.to_ascii_uppercase().as_bytes()));
    }
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].method, "CONNECT websocket");
        assert_eq!(seen[0].uri, "http://ws.test/chat");
        assert!(seen[0].headers.get("upgrade").is_none());
        assert_eq!(seen[0].headers["sec-websocket-version"], "13");
    }

    let mut c = TcpStream::connect(addr(ports[1])).await.unwrap();
    c.write_all(upgrade).await.unwrap();
    let head = ws::read_until(&mut c, b"\r\n\r\n").await;
    assert!(
        head.starts_with(b"HTTP/1.1 502 "),
        "{}",
        String::from_utf8_lossy(&head)
    );
    assert!(seen_without.lock().unwrap().is_empty());
}
