//! Connection modes and hop-by-hop headers, with a raw-TCP backend that
//! records the bytes of each of its connections. Expectations were checked
//! against HAProxy 2.6.12 with the same config and client bytes; where
//! sluice differs on purpose the test says so:
//!
//! * HAProxy lower-cases header names; sluice keeps them as received.
//! * HAProxy 2.6 forwards `Keep-Alive`, `Proxy-Connection`, `TE`,
//!   `Trailer`, `Upgrade` (without an upgrade) and the headers a
//!   `Connection` header names, in both directions, and only strips the
//!   `close` / `keep-alive` tokens from `Connection`. sluice removes them
//!   all, as RFC 9110 §7.6.1 requires of a proxy.
//! * HAProxy forwards an HTTP/1.0 request as HTTP/1.0 with `connection:
//!   keep-alive` added; sluice sends it as HTTP/1.1 (a proxy speaks its own
//!   version, RFC 9110 §2.5), which keeps the server connection alive too.
//! * `Expect: 100-continue`: HAProxy forwards the expectation and relays the
//!   server's `100 Continue`; sluice answers it itself once the request
//!   head reached the server, and sends the body without the expectation.
//!   The client sees the same bytes.
//!
//! The HAProxy side: `tests/oracle/modes_oracle.py /usr/sbin/haproxy modes`.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use support::raw::{RawBackend, Read, read_until_quiet};
use support::*;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// `fe` is handed to sluice already listening (`bind fd@N`).
fn cfg(fe: &Listen, be: SocketAddr, options: &str) -> String {
    format!(
        "defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
{options}
frontend fe
    bind {fe}
    default_backend be
backend be
    server s1 {be}
"
    )
}

async fn connect(port: u16) -> TcpStream {
    let c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    c.set_nodelay(true).unwrap();
    c
}

/// Sends `bytes` and reads what comes back until 400 ms of silence (or the
/// close).
async fn send(c: &mut TcpStream, bytes: &[u8]) -> Read {
    c.write_all(bytes).await.unwrap();
    read_until_quiet(c, Duration::from_millis(400), Duration::from_secs(5)).await
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const GET_A: &[u8] = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
const OK_200: &str = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

/// Two requests on one client connection under each mode: what the client
/// gets, and how many server connections carried which bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_modes() {
    // Field names reach the server in lower case, as from HAProxy 2.6.
    let fwd = "GET /a HTTP/1.1\r\nhost: x\r\n\r\n";
    let one_conn = vec![format!("{fwd}{fwd}")];
    let closing = "GET /a HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".to_string();
    let cases: [(&str, &str, Vec<String>, bool); 4] = [
        ("default", "", one_conn.clone(), false),
        ("keep-alive", "    option http-keep-alive", one_conn, false),
        (
            "server-close",
            "    option http-server-close",
            vec![closing.clone(), closing.clone()],
            false,
        ),
        ("httpclose", "    option httpclose", vec![closing], true),
    ];
    for (name, option, upstream, client_closed) in cases {
        let be = RawBackend::start().await;
        let fe = Listen::new();
        let port = fe.port();
        let _s = Sluice::start(&cfg(&fe, be.addr, option));
        let mut c = connect(port).await;
        let first = send(&mut c, GET_A).await;
        if client_closed {
            // Both sides closed after the first exchange.
            assert_eq!(
                first.text(),
                "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                "{name}"
            );
            assert!(first.closed_after.is_some(), "{name}: client closed");
        } else {
            assert_eq!(first.text(), OK_200, "{name}");
            assert!(first.closed_after.is_none(), "{name}: client kept");
            let second = send(&mut c, GET_A).await;
            assert_eq!(second.text(), OK_200, "{name}");
            assert!(second.closed_after.is_none(), "{name}: client kept");
        }
        let got: Vec<String> = be.take_conns().iter().map(|b| text(b)).collect();
        assert_eq!(got, upstream, "{name}: server connections");
    }
}

/// HTTP/1.0 clients: closed after the response unless they asked for
/// keep-alive, in which case the response says `connection: keep-alive`
/// and the connection carries the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http10_clients() {
    let be = RawBackend::start().await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&cfg(&fe, be.addr, ""));
    let mut c = connect(port).await;
    let r = send(&mut c, b"GET /a HTTP/1.0\r\nHost: x\r\n\r\n").await;
    assert_eq!(
        r.text(),
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"
    );
    assert!(r.closed_after.is_some(), "closed after a plain 1.0 request");

    let ka = b"GET /a HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n";
    let mut c = connect(port).await;
    for _ in 0..2 {
        let r = send(&mut c, ka).await;
        assert_eq!(
            r.text(),
            "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\nok"
        );
        assert!(r.closed_after.is_none());
    }
    // Upstream in HTTP/1.0 with `connection: keep-alive`, as from
    // HAProxy, on one pooled server connection.
    let got: Vec<String> = be.take_conns().iter().map(|b| text(b)).collect();
    assert_eq!(
        got,
        vec!["GET /a HTTP/1.0\r\nhost: x\r\nconnection: keep-alive\r\n\r\n".repeat(3)],
        "one server connection, kept"
    );

    // A response without length to a 1.0 keep-alive client: framed by the
    // close, so the client connection closes after it (the server's
    // HTTP/1.0 says so without a field, as from HAProxy 2.6).
    be.answer(b"HTTP/1.0 200 OK\r\n\r\nuntil-close");
    let mut c = connect(port).await;
    c.write_all(ka).await.unwrap();
    // The server keeps its side open: sluice waits for more body.
    let r = read_until_quiet(&mut c, Duration::from_millis(400), Duration::from_secs(2)).await;
    assert_eq!(r.text(), "HTTP/1.0 200 OK\r\n\r\nuntil-close");
}

/// Hop-by-hop headers go on as HAProxy 2.6 forwards them, in both
/// directions: Keep-Alive, Proxy-Connection, TE, Trailer, Upgrade without
/// an upgrade and whatever Connection names pass, and Connection in place
/// without its `close` and `keep-alive` tokens (the others moved behind a
/// comma once one has gone); the connection stays keep-alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hop_by_hop_headers_go_on_as_from_haproxy() {
    let be = RawBackend::start().await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&cfg(&fe, be.addr, ""));
    be.answer(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: x-foo, keep-alive\r\nX-Foo: 1\r\n\
Keep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\nUpgrade: h2c\r\nTrailer: X-T\r\n\
X-Keep: y\r\n\r\nok",
    );
    let mut c = connect(port).await;
    let r = send(
        &mut c,
        b"GET /a HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, X-Bar, te\r\nX-Bar: 1\r\n\
Keep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\nTE: trailers\r\nTrailer: X-T\r\n\
Upgrade: h2c\r\nX-Keep: y\r\n\r\n",
    )
    .await;
    assert_eq!(
        r.text(),
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: x-foo\r\nx-foo: 1\r\n\
keep-alive: timeout=5\r\nproxy-connection: keep-alive\r\nupgrade: h2c\r\ntrailer: X-T\r\n\
x-keep: y\r\n\r\nok"
    );
    assert_eq!(
        text(&be.take()),
        "GET /a HTTP/1.1\r\nhost: x\r\nconnection: X-Bar,te\r\nx-bar: 1\r\n\
keep-alive: timeout=5\r\nproxy-connection: keep-alive\r\nte: trailers\r\ntrailer: X-T\r\n\
upgrade: h2c\r\nx-keep: y\r\n\r\n"
    );
    // Still keep-alive on both sides.
    let r = send(&mut c, GET_A).await;
    assert!(r.text().starts_with("HTTP/1.1 200 OK\r\n"), "{}", r.text());
    assert_eq!(be.take_conns().len(), 1, "one server connection");
}

/// `Expect: 100-continue`: the client gets `100 Continue` before it sends
/// its body, then the final response; the server gets the whole body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expect_100_continue() {
    let be = RawBackend::start().await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&cfg(&fe, be.addr, ""));
    let mut c = connect(port).await;
    let interim = send(
        &mut c,
        b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
    )
    .await;
    assert_eq!(interim.text(), "HTTP/1.1 100 Continue\r\n\r\n");
    let fin = send(&mut c, b"hello").await;
    assert_eq!(fin.text(), OK_200);
    assert_eq!(
        text(&be.take()),
        "POST /up HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhello"
    );
    // The connection goes on.
    assert_eq!(send(&mut c, GET_A).await.text(), OK_200);
}

/// Trailers after the last chunk are relayed, request and response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_trailers_relayed_both_ways() {
    let be = RawBackend::start().await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&cfg(&fe, be.addr, ""));
    be.answer(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Resp-T: 2\r\n\r\n",
    );
    let mut c = connect(port).await;
    let r = send(
        &mut c,
        b"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Req-T: 1\r\n\r\n",
    )
    .await;
    assert_eq!(
        r.text(),
        "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nx-resp-t: 2\r\n\r\n"
    );
    assert_eq!(
        text(&be.take()),
        "POST /a HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nx-req-t: 1\r\n\r\n"
    );
    assert!(r.closed_after.is_none());
}

/// HEAD, 204 and 304 answers carry no body (a HEAD or 304 keeps the length
/// it announces): four pipelined requests on one connection get four
/// responses, the last one with its body, and the connection stays open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodiless_responses_keep_the_connection() {
    let be = RawBackend::start().await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&cfg(&fe, be.addr, ""));
    be.script(&[
        b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\n\r\n",
        b"HTTP/1.1 304 Not Modified\r\nContent-Length: 7\r\nETag: \"x\"\r\n\r\n",
    ]);
    let mut c = connect(port).await;
    let r = send(
        &mut c,
        b"HEAD /a HTTP/1.1\r\nHost: x\r\n\r\nGET /204 HTTP/1.1\r\nHost: x\r\n\r\n\
GET /304 HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n",
    )
    .await;
    assert_eq!(
        r.text(),
        "HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\n\
HTTP/1.1 204 No Content\r\n\r\n\
HTTP/1.1 304 Not Modified\r\ncontent-length: 7\r\netag: \"x\"\r\n\r\n\
HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
    );
    assert!(r.closed_after.is_none());
    assert_eq!(send(&mut c, GET_A).await.text(), OK_200);
    assert_eq!(be.take_conns().len(), 1, "one server connection for all");
}
