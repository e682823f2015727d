//! The request a server receives, against the real HAProxy 2.6: the same
//! `mode http` configuration runs under haproxy and sluice, each in front
//! of a raw backend that records every byte, and the same requests are
//! sent to both. The bytes the server receives, the client's answer and
//! the log line must be equal. Covered: an HTTP/1.0 request (its version
//! and the `connection` header the server gets, with and without
//! keep-alive on either side), the versions a relaxed parser lets
//! through, fields written again as `name: value` (empty values, spaces
//! around a value), `Content-Length: 0` without a body, and control bytes
//! in a field value, field names in upper or mixed case (HAProxy 2.6
//! lower-cases them, both ways, a chunked body's trailer fields too),
//! hop-by-hop fields (forwarded, the `connection` one without its `close`
//! and `keep-alive` tokens). The answers a server gives reach the client
//! as from HAProxy too (field names and hop-by-hop fields again, an
//! HTTP/1.0 answer's version and connection field), and so does the answer
//! to a WebSocket upgrade, with a valid key or not.
//!
//! A NUL in a value is left out: HAProxy forwards it, sluice refuses it on
//! purpose (tests/smuggling.rs).
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use support::haproxy::{self, Pair, exchange};

use support::haproxy::HTTP_LOG_GLOBAL as GLOBAL;

/// Sent behind each case, so that a connection the proxy keeps open ends
/// without waiting for a timeout.
const LAST: &str = "GET /last HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n";

/// The requests, each sent on a new connection, `LAST` after it.
const CASES: &[&str] = &[
    // HTTP/1.0: forwarded as HTTP/1.0, with `connection: keep-alive` to a
    // server kept alive whatever the client asked.
    "GET /10 HTTP/1.0\r\nhost: a\r\n\r\n",
    "GET /10 HTTP/1.0\r\n\r\n",
    "GET /10ka HTTP/1.0\r\nhost: a\r\nconnection: keep-alive\r\n\r\n",
    "GET /10c HTTP/1.0\r\nhost: a\r\nconnection: close\r\n\r\n",
    "POST /10 HTTP/1.0\r\nhost: a\r\ncontent-length: 3\r\n\r\nabc",
    "GET /11 HTTP/1.1\r\nhost: a\r\n\r\n",
    "GET /11c HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n",
    "GET /11ka HTTP/1.1\r\nhost: a\r\nconnection: keep-alive\r\n\r\n",
    // Versions only `option accept-invalid-http-request` lets through
    // (else a 400): forwarded and logged as received, HTTP/0.9 as 1.0.
    "GET /v HTTP/1.10\r\nhost: a\r\n\r\n",
    "GET /v RTSP/1.0\r\nhost: a\r\n\r\n",
    "GET /v\r\n\r\n",
    // Empty values and spaces around a value.
    "GET /e HTTP/1.1\r\nhost: a\r\nx-empty:\r\n\r\n",
    "GET /e HTTP/1.1\r\nhost: a\r\nx-empty: \r\n\r\n",
    "GET /e HTTP/1.1\r\nhost: a\r\nx-empty: \t  \r\nx-b:b\r\nx-c:  c d \t\r\n\r\n",
    // Content-Length: 0 and no body, whatever the method.
    "POST /cl0 HTTP/1.1\r\nhost: a\r\ncontent-length: 0\r\n\r\n",
    "PUT /cl0 HTTP/1.1\r\nhost: a\r\ncontent-length: 0\r\n\r\n",
    "GET /cl0 HTTP/1.1\r\nhost: a\r\ncontent-length: 0\r\n\r\n",
    "POST /cl0 HTTP/1.0\r\nhost: a\r\ncontent-length: 0\r\n\r\n",
    // Control bytes in a value: forwarded, but CR (a 400).
    "GET /ctl HTTP/1.1\r\nhost: a\r\nx-c: a\x01b\r\n\r\n",
    "GET /ctl HTTP/1.1\r\nhost: a\r\nx-c:\x01\r\n\r\n",
    "GET /ctl HTTP/1.1\r\nhost: a\r\nx-c: a\x7fb\r\n\r\n",
    "GET /ctl HTTP/1.1\r\nhost: a\r\nx-c: a\tb\r\n\r\n",
    "GET /ctl HTTP/1.1\r\nhost: a\r\nx-c: a\x1bb\x0b\r\n\r\n",
    "GET /ctl HTTP/1.1\r\nhost: a\x01\r\n\r\n",
    "GET /ctl HTTP/1.1\r\nhost: a\r\nx-c: a\rb\r\n\r\n",
    "GET /ctl HTTP/1.1\r\nhost: a\r\nx\x01c: b\r\n\r\n",
    // Field names in upper or mixed case: lower-cased, the line otherwise
    // as it is (or written again, when it is not `name: value`).
    "GET /case HTTP/1.1\r\nHost: a\r\nX-Foo: B\r\nUSER-AGENT: Q\r\nAccept: */*\r\n\r\n",
    "POST /case HTTP/1.1\r\nHOST: a\r\nContent-Length: 3\r\nX-Empty:\r\nX-Sp:  v \r\n\r\nabc",
    "POST /case HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    // Trailer fields: written again as the head's are.
    "POST /tr HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\nX-Sp:  v \r\nX-E:\r\nx-l: l\r\n\r\n",
    "GET /case HTTP/1.0\r\nHost: a\r\nConnection: Keep-Alive\r\nX-Foo: B\r\n\r\n",
    // Hop-by-hop fields.
    "GET /hop HTTP/1.1\r\nhost: a\r\nConnection: X-Hop\r\nX-Hop: 1\r\nx-after: 2\r\n\r\n",
    "GET /hop HTTP/1.1\r\nhost: a\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n\r\n",
    "GET /hop HTTP/1.1\r\nhost: a\r\nConnection: X-Hop, close\r\nX-Hop: 1\r\n\r\n",
    "GET /hop HTTP/1.1\r\nhost: a\r\nConnection: keep-alive, Upgrade\r\nx-after: 2\r\n\r\n",
    "GET /hop HTTP/1.1\r\nhost: a\r\nKeep-Alive: timeout=5\r\nx-after: 2\r\n\r\n",
    "GET /hop HTTP/1.1\r\nhost: a\r\nProxy-Connection: keep-alive\r\nTE: trailers\r\nTrailer: x-t\r\nx-after: 2\r\n\r\n",
    "GET /hop HTTP/1.1\r\nhost: a\r\nConnection: keep-alive\r\nConnection: X-A\r\nx-after: 2\r\n\r\n",
    "GET /hop HTTP/1.1\r\nhost: a\r\nConnection: ,\r\nx-after: 2\r\n\r\n",
    "GET /hop HTTP/1.1\r\nhost: a\r\nConnection:  X-A ,  X-B \r\nx-after: 2\r\n\r\n",
    "GET /hop HTTP/1.0\r\nhost: a\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n\r\n",
    "GET /hop HTTP/1.1\r\nhost: a\r\nConnection: keep-alive,  X-A , te\r\nTE: trailers\r\n\r\n",
    "GET /hop HTTP/1.1\r\nhost: a\r\nConnection: X-A, close, , X-B\r\n\r\n",
    "GET /hop HTTP/1.1\r\nhost: a\r\nConnection: close\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
];

/// What `case` gave on side `i` (0: haproxy, 1: sluice): the answer, the
/// log lines and the bytes the server received.
async fn run(pair: &Pair, i: usize, case: &str, config: &str) -> String {
    // `LAST` after every case: the connection ends whether the proxy kept
    // it or not (a request left unanswered behind a close is not logged).
    let req = format!("{case}{LAST}");
    let answer = exchange(pair.fronts[i][0].addr(), req.as_bytes(), false).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    // One log line per answer; no body here holds a status line.
    let logs = pair.logs[i].take(answer.matches("HTTP/1.").count());
    let got = pair.servers[i].take();
    format!(
        "{config}\n    answer {answer:?}\n    log {logs:?}\n    server {:?}",
        String::from_utf8_lossy(&got)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_reach_the_server_as_from_haproxy() {
    if !haproxy::available() {
        return;
    }
    let mut differ = haproxy::Differences::default();
    for (tag, mode) in [
        ("h1fwd-ka", ""),
        ("h1fwd-sc", "    option http-server-close\n"),
        ("h1fwd-hc", "    option httpclose\n"),
        ("h1fwd-lax", "    option accept-invalid-http-request\n"),
    ] {
        let cfg = format!(
            "{GLOBAL}{mode}
frontend fe
    bind {{fe0}}
    log-format \"%ci %f %b/%s %ST %ts %{{+Q}}r %HM %HU %HP %HQ %HV\"
    default_backend be
backend be
    server s {{srv}}
"
        );
        let pair = Pair::start(tag, &cfg, 1).await;
        for case in CASES {
            let h = run(&pair, 0, case, tag).await;
            let s = run(&pair, 1, case, tag).await;
            if h != s {
                differ.push(format!("{case:?}\n  haproxy {h}\n  sluice  {s}"));
            }
        }
    }
    differ.assert_none();
}

/// Server answers whose field names are not all in lower case, each to
/// `GET /r` on a new connection.
const ANSWERS: &[&str] = &[
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Bar: Y\r\nSet-Cookie: a=b\r\nCache-Control: private\r\n\r\nok",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Bar: Y\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    "HTTP/1.1 200 OK\r\nCONTENT-TYPE: text/plain\r\nX-Empty:\r\nX-Sp:  v \r\nContent-Length: 2\r\n\r\nok",
    "HTTP/1.1 204 No Content\r\nX-Bar: Y\r\n\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Resp-T: A\r\nX-Sp:\t v \r\n\r\n",
    "HTTP/1.1 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok",
    // Hop-by-hop fields.
    "HTTP/1.1 200 OK\r\nConnection: keep-alive, x-hop\r\nKeep-Alive: timeout=5\r\nX-Hop: 1\r\nContent-Length: 2\r\nX-A: b\r\n\r\nok",
    "HTTP/1.1 200 OK\r\nConnection: X-Hop\r\nX-Hop: 1\r\nContent-Length: 2\r\n\r\nok",
    "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\nX-A: b\r\n\r\nok",
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: x-foo,  keep-alive, X-Bar , \r\n\r\nok",
    "HTTP/1.1 200 OK\r\nProxy-Connection: keep-alive\r\nTE: trailers\r\nTrailer: x-t\r\nUpgrade: h2c\r\nContent-Length: 2\r\n\r\nok",
    // An interim answer, relayed before the final one.
    "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_reach_the_client_as_from_haproxy() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
frontend fe
    bind {{fe0}}
    log-format \"%ci %f %b/%s %ST %ts %{{+Q}}r\"
    default_backend be
backend be
    server s {{srv}}
"
    );
    let pair = Pair::start("h1fwd-answers", &cfg, 1).await;
    let mut differ = haproxy::Differences::default();
    for answer in ANSWERS {
        pair.answer(answer.as_bytes());
        let [h, s] = pair
            .both(0, "GET /r HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n")
            .await;
        differ.compare(format!("{answer:?}"), &h, &s);
    }
    differ.assert_none();
}

/// A WebSocket upgrade with the key `key` (none when `None`). Its
/// `connection` and `upgrade` fields go on in place, the first without
/// its `keep-alive` token, as HAProxy 2.6 forwards them.
fn upgrade(key: Option<&str>) -> String {
    let key = key.map_or(String::new(), |k| format!("Sec-WebSocket-Key: {k}\r\n"));
    format!(
        "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\n{key}Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_keys_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
frontend fe
    bind {{fe0}}
    log-format \"%ci %f %b/%s %ST %ts %{{+Q}}r\"
    default_backend be
backend be
    server s {{srv}}
"
    );
    let pair = Pair::start("h1fwd-ws", &cfg, 1).await;
    let switch = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
    pair.answer(switch.as_bytes());
    let mut differ = haproxy::Differences::default();
    // HAProxy 2.6 takes the first key of 24 bytes, whatever they are, and
    // answers 400 without one.
    for key in [
        None,
        Some("dGhlIHNhbXBsZSBub25jZQ=="),
        Some(""),
        Some("short"),
        Some("dGhlIHNhbXBsZSBub25jZQ="),
        Some("dGhlIHNhbXBsZSBub25jZQ==="),
        Some("!GhlIHNhbXBsZSBub25jZQ=="),
        Some(" dGhlIHNhbXBsZSBub25jZQ== "),
    ] {
        // The client's half-close ends the tunnel after a 101; a refused
        // upgrade is answered without it (HAProxy logs a half-closed
        // client's 400 as `CR`, sluice as `PR`).
        let switches = key.is_some_and(|k| k.trim().len() == 24);
        let req = upgrade(key);
        let [h, s] = pair.both_as(0, &req, switches).await;
        differ.compare(format!("{key:?}"), &h, &s);
    }
    differ.assert_none();
}

/// A server's HTTP/1.0 answers: HAProxy 2.6 keeps the server's version
/// in the status line and says what becomes of the connection relative
/// to HTTP/1.0's defaults (`connection: keep-alive` when it stays open,
/// nothing when it closes). Each case: the request, the server's answer,
/// whether the server closes after it (a body that lasts until then).
const HTTP10_ANSWERS: &[(&str, &str, bool)] = &[
    (
        "GET /a HTTP/1.1\r\nhost: a\r\n\r\n",
        "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
        false,
    ),
    (
        "GET /a HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n",
        "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
        false,
    ),
    (
        "GET /a HTTP/1.0\r\nhost: a\r\n\r\n",
        "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
        false,
    ),
    (
        "GET /a HTTP/1.0\r\nhost: a\r\nconnection: keep-alive\r\n\r\n",
        "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
        false,
    ),
    (
        "GET /a HTTP/1.1\r\nhost: a\r\n\r\n",
        "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
        false,
    ),
    (
        "GET /a HTTP/1.1\r\nhost: a\r\n\r\n",
        "HTTP/1.0 200 OK\r\n\r\nuntil close",
        true,
    ),
    (
        "GET /a HTTP/1.0\r\nhost: a\r\nconnection: keep-alive\r\n\r\n",
        "HTTP/1.0 200 OK\r\n\r\nuntil close",
        true,
    ),
    (
        "GET /a HTTP/1.1\r\nhost: a\r\n\r\n",
        "HTTP/1.0 204 No Content\r\n\r\n",
        false,
    ),
    // A version only `option accept-invalid-http-response` lets through
    // (else a 502): repeated, with HTTP/1.0's connection rules.
    (
        "GET /a HTTP/1.1\r\nhost: a\r\n\r\n",
        "HTTP/1.10 200 OK\r\nContent-Length: 2\r\n\r\nok",
        false,
    ),
    // HTTP/1.1 answers to an HTTP/1.0 client, for contrast.
    (
        "GET /a HTTP/1.0\r\nhost: a\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        false,
    ),
    (
        "GET /a HTTP/1.1\r\nhost: a\r\n\r\n",
        "HTTP/1.1 200 OK\r\n\r\nuntil close",
        true,
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http10_answers_reach_the_client_as_from_haproxy() {
    if !haproxy::available() {
        return;
    }
    let mut differ = haproxy::Differences::default();
    for (tag, mode) in [
        ("h1fwd-10a", ""),
        ("h1fwd-10a-sc", "    option http-server-close\n"),
        ("h1fwd-10a-hc", "    option httpclose\n"),
        ("h1fwd-10a-lax", "    option accept-invalid-http-response\n"),
    ] {
        let cfg = format!(
            "{GLOBAL}{mode}
frontend fe
    bind {{fe0}}
    log-format \"%ci %f %b/%s %ST %ts %B %{{+Q}}r\"
    default_backend be
backend be
    server s {{srv}}
"
        );
        let pair = Pair::start(tag, &cfg, 1).await;
        for (req, answer, close) in HTTP10_ANSWERS {
            let mut got = Vec::new();
            for i in 0..2 {
                pair.servers[i].answer(answer.as_bytes());
                pair.servers[i].set_close_after(*close);
                got.push(run(&pair, i, req, tag).await);
            }
            if got[0] != got[1] {
                differ.push(format!(
                    "{req:?} -> {answer:?}\n  haproxy {}\n  sluice  {}",
                    got[0], got[1]
                ));
            }
        }
    }
    differ.assert_none();
}

/// The persistence cookie `cookie ... insert` sets comes before the fields
/// `http-after-response` adds, as HAProxy 2.6 writes the answer; after the
/// server's own fields and those `http-response` adds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inserted_cookie_before_after_response_fields_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
frontend fe
    bind {{fe0}}
    log-format \"%ci %f %b/%s %ST %ts %{{+Q}}r\"
    http-after-response add-header x-after-fe 1
    default_backend be
backend be
    cookie SRV insert indirect nocache
    http-response add-header x-resp 1
    http-after-response set-header x-after-be 2
    server s {{srv}} cookie s1
"
    );
    let pair = Pair::start("h1fwd-cookie", &cfg, 1).await;
    let mut differ = haproxy::Differences::default();
    for answer in [
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Srv: a\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nSet-Cookie: own=1\r\nContent-Length: 2\r\n\r\nok",
    ] {
        pair.answer(answer.as_bytes());
        let [h, s] = pair
            .both(0, "GET /c HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n")
            .await;
        differ.compare(format!("{answer:?}"), &h, &s);
    }
    differ.assert_none();
}

/// The sizes logged for a WebSocket tunnel: HAProxy 2.6 counts the 101 in
/// `%B` as it counts any head (its internal form, not the bytes written),
/// then every byte of the tunnel each way, those that came with the 101
/// included. sluice logged the 101's bytes on the wire, left out the
/// tunnel's bytes that came with a head, and the client's from `%U`. The
/// client sends its tunnel bytes once the server's have come, and leaves
/// once the server has them: bytes sent with the request and a half-close
/// right after are a race in haproxy itself (`%U` with or without them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_tunnel_sizes_as_haproxy() {
    use std::time::Duration;
    use support::{wait_until, within};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
frontend fe
    bind {{fe0}}
    log-format \"%ST %B %U %ts\"
    default_backend be
backend be
    server s {{srv}}
"
    );
    let pair = Pair::start("h1fwd-wssize", &cfg, 1).await;
    // The server's first tunnel bytes come with its 101.
    let switch = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\nhello";
    let req = upgrade(Some("dGhlIHNhbXBsZSBub25jZQ=="));
    let mut seen = Vec::new();
    for i in 0..2 {
        let srv = &pair.servers[i];
        srv.answer(switch.as_bytes());
        let mut c = tokio::net::TcpStream::connect(pair.fronts[i][0].addr())
            .await
            .expect("connect");
        c.write_all(req.as_bytes()).await.expect("send");
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        while !got.ends_with(b"hello") {
            match within(Duration::from_secs(10), "the 101", c.read(&mut chunk)).await {
                Ok(n) if n > 0 => got.extend_from_slice(&chunk[..n]),
                r => panic!("side {i}: {r:?} after {:?}", String::from_utf8_lossy(&got)),
            }
        }
        c.write_all(b"ping").await.expect("ping");
        let mut to_server = Vec::new();
        wait_until(Duration::from_secs(10), "the ping at the server", || {
            to_server.extend(srv.take());
            let done = to_server.ends_with(b"\r\n\r\nping");
            async move { done }
        })
        .await;
        c.shutdown().await.expect("shutdown");
        let _ = within(
            Duration::from_secs(10),
            "the close",
            c.read_to_end(&mut got),
        )
        .await;
        let line = pair.logs[i].take(1).remove(0);
        seen.push((String::from_utf8_lossy(&got).into_owned(), line));
    }
    assert_eq!(seen[0].1, "101 137 141 --\n", "haproxy");
    assert_eq!(seen[1], seen[0]);
}
