//! HTTP timeouts on the client and server sides, each against HAProxy
//! 2.6.12's behaviour for the same config and the same raw client bytes:
//!
//! * `timeout http-request`: the whole head must arrive in time (a client
//!   trickling one byte per 200 ms gets the 408 page at the deadline); a
//!   connection that sends nothing at all gets the 408 page too (HAProxy
//!   sends it unless `option http-ignore-probes`, which closes it without a
//!   word, log or counter), counted as a failed request but logged with 0
//!   bytes (`408 0 ... cR--`).
//! * `timeout client` when the client stalls mid-body: 408, `cD--`.
//!   HAProxy 2.6 keeps waiting for the server there and answers 504 `sH--`
//!   at `timeout server`, blaming a healthy server for a stalled client;
//!   sluice deliberately answers the client's timeout with the client's
//!   error.
//! * `timeout server` with a silent server: the 504 page, `sH--` with the
//!   connect time logged, and the client connection stays usable.
//! * `timeout http-keep-alive` on a connection still in its task (before
//!   parking) and on a parked one: closed silently, on time.
//!
//! Already covered elsewhere: keep-alive expiry of a parked connection
//! (keepalive_idle.rs), `timeout queue` (queue.rs), `timeout tunnel`
//! (websocket.rs), the `cR--` log line of a silent connection (logs_udp.rs).
//! The HAProxy side: `tests/oracle/modes_oracle.py /usr/sbin/haproxy timeouts`.

mod support;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use support::raw::{RawBackend, read_until_quiet};
use support::*;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// HAProxy 2.6's 408 page, as it sends it.
const PAGE_408: &str = "HTTP/1.1 408 Request Time-out\r\nContent-length: 110\r\nCache-Control: no-cache\r\nConnection: close\r\nContent-Type: text/html\r\n\r\n<html><body><h1>408 Request Time-out</h1>\nYour browser didn't send a complete request in time.\n</body></html>\n";
/// HAProxy 2.6's 504 page (the connection stays open after it).
const PAGE_504: &str = "HTTP/1.1 504 Gateway Time-out\r\ncontent-length: 92\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n\r\n<html><body><h1>504 Gateway Time-out</h1>\nThe server didn't respond in time.\n</body></html>\n";

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

/// A frontend with `timeouts` (lines of the defaults section) in front of
/// `be`, logging to `log` (a UDP address) in httplog format.
fn cfg(fe: &Listen, be: SocketAddr, log: &str, timeouts: &str) -> String {
    format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    log {log} local0
    option httplog
    timeout connect 2s
{timeouts}
frontend fe
    bind {fe}
    default_backend be
backend be
    server s1 {be}
"
    )
}

/// A UDP syslog listener; `line` returns the next access log line without
/// its syslog header.
struct Syslog(UdpSocket);

impl Syslog {
    fn new() -> Syslog {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Syslog(s)
    }
    fn addr(&self) -> String {
        self.0.local_addr().unwrap().to_string()
    }
    fn line(&self) -> String {
        let mut buf = [0u8; 4096];
        loop {
            let n = self.0.recv(&mut buf).expect("a log line within 5 s");
            let text = String::from_utf8_lossy(&buf[..n]).into_owned();
            // Skip the startup event lines (Proxy ... started) and the
            // harness's readiness probes (connected, closed: `CR--`).
            if let Some((_, line)) = text.split_once("]: ")
                && line.contains(" fe ")
                && !line.contains(" CR-- ")
            {
                return line.trim_end().to_string();
            }
        }
    }
}

/// The `Tq/Tw/Tc/Tr/Ta`, status, bytes and termination state of a line.
fn fields(line: &str) -> (String, String, String, String) {
    let f: Vec<&str> = line.split(' ').collect();
    (
        f[4].to_string(),
        f[5].to_string(),
        f[6].to_string(),
        f[9].to_string(),
    )
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_gets_408_at_the_http_request_deadline() {
    let be = RawBackend::start().await;
    let log = Syslog::new();
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&cfg(
        &fe,
        be.addr,
        &log.addr(),
        "    timeout client 5s\n    timeout server 5s\n    timeout http-request 1s",
    ));
    let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    c.set_nodelay(true).unwrap();
    let started = Instant::now();
    // One byte every 200 ms: each byte is well within `timeout client`, the
    // whole head never within `timeout http-request`.
    let head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: abcdefghijklmnopqrstuvwxyz\r\n\r\n";
    let mut got = Vec::new();
    let mut closed = None;
    for b in head {
        if c.write_all(&[*b]).await.is_err() {
            break;
        }
        let r = read_until_quiet(
            &mut c,
            Duration::from_millis(200),
            Duration::from_millis(200),
        )
        .await;
        got.extend_from_slice(&r.bytes);
        if r.closed_after.is_some() {
            closed = Some(started.elapsed());
            break;
        }
    }
    let closed = closed.expect("the connection is closed at the deadline");
    assert_eq!(String::from_utf8_lossy(&got), PAGE_408);
    // At the deadline of the whole head (1 s), not per byte (5 s) and not
    // before.
    assert!(
        ms(closed) >= 950 && ms(closed) < 2500,
        "closed after {closed:?}"
    );
    assert!(be.take().is_empty(), "nothing reaches the server");
    let (timers, status, bytes, term) = fields(&log.line());
    assert!(timers.starts_with("-1/-1/-1/-1/"), "{timers}");
    assert_eq!((&status[..], &bytes[..], &term[..]), ("408", "0", "cR--"));
}

/// A connection that never sends a byte: HAProxy 2.6 sends the 408 page
/// and closes at `timeout http-request`, or at `timeout client` when
/// http-request is not set; the 408 counts as a failed request (req_tot,
/// ereq, hrsp_4xx) but not as bytes out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connection_gets_408_then_close() {
    for (timeouts, deadline) in [
        (
            "    timeout client 5s\n    timeout server 5s\n    timeout http-request 500ms",
            500,
        ),
        ("    timeout client 600ms\n    timeout server 5s", 600),
    ] {
        let be = RawBackend::start().await;
        let log = Syslog::new();
        let fe = Listen::new();
        let port = fe.port();
        let s = Sluice::start(&cfg(&fe, be.addr, &log.addr(), timeouts));
        let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let r = read_until_quiet(&mut c, Duration::from_secs(4), Duration::from_secs(4)).await;
        let closed = r.closed_after.expect("closed");
        assert_eq!(r.text(), PAGE_408, "{timeouts}");
        assert!(
            ms(closed) >= deadline - 50 && ms(closed) < deadline + 1500,
            "{timeouts}: closed after {closed:?}"
        );
        let (_, status, bytes, term) = fields(&log.line());
        assert_eq!((&status[..], &bytes[..], &term[..]), ("408", "0", "cR--"));
        let csv = show_stat(&s.stats_socket()).await;
        for (field, want) in [("req_tot", 1), ("ereq", 1), ("hrsp_4xx", 1), ("bout", 0)] {
            assert_eq!(csv.num("fe", "FRONTEND", field), want, "{field}");
        }
        // And the proxy serves the next client.
        let mut c = HttpConn::connect(SocketAddr::from(([127, 0, 0, 1], port))).await;
        assert_eq!(c.get("/").await.status, 200);
    }
}

/// `errorfile 408 /dev/null` (HAProxy's documented way to close silently,
/// checked against haproxy 2.6): accepted, and the connection that sends
/// nothing, or half a head, is closed at the deadline without a byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errorfile_dev_null_closes_without_a_byte() {
    let be = RawBackend::start().await;
    let log = Syslog::new();
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&cfg(
        &fe,
        be.addr,
        &log.addr(),
        "    timeout client 5s\n    timeout server 5s\n    timeout http-request 500ms\n    errorfile 408 /dev/null",
    ));
    for sent in [&b""[..], b"GET / HTTP/1.1\r\nHost: x\r\n"] {
        let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        c.write_all(sent).await.unwrap();
        let r = read_until_quiet(&mut c, Duration::from_secs(4), Duration::from_secs(4)).await;
        let closed = r.closed_after.expect("closed");
        assert_eq!(r.text(), "", "after {sent:?}");
        assert!(
            ms(closed) >= 450 && ms(closed) < 2000,
            "closed after {closed:?}"
        );
    }
    // And the proxy serves the next client.
    let mut c = HttpConn::connect(SocketAddr::from(([127, 0, 0, 1], port))).await;
    assert_eq!(c.get("/").await.status, 200);
}

/// `option http-ignore-probes`: the silent connection is closed at the
/// same deadline without a word, a log line or a counter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_probe_is_closed_silently() {
    let be = RawBackend::start().await;
    let log = Syslog::new();
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(
        &fe,
        be.addr,
        &log.addr(),
        "    option http-ignore-probes\n    timeout client 5s\n    timeout server 5s\n    timeout http-request 400ms",
    ));
    let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let r = read_until_quiet(&mut c, Duration::from_secs(4), Duration::from_secs(4)).await;
    let closed = r.closed_after.expect("closed");
    assert!(r.bytes.is_empty(), "{}", r.text());
    assert!(ms(closed) >= 350, "closed after {closed:?}");
    // The next log line is the next request's.
    let mut c = HttpConn::connect(SocketAddr::from(([127, 0, 0, 1], port))).await;
    assert_eq!(c.get("/").await.status, 200);
    let (_, status, _, term) = fields(&log.line());
    assert_eq!((&status[..], &term[..]), ("200", "----"));
    let csv = show_stat(&s.stats_socket()).await;
    for (field, want) in [("req_tot", 1), ("ereq", 0), ("hrsp_4xx", 0)] {
        assert_eq!(csv.num("fe", "FRONTEND", field), want, "{field}");
    }
}

/// `timeout client` while the client stalls in the middle of its body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_stalling_mid_body_gets_408() {
    let be = RawBackend::start().await;
    let log = Syslog::new();
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(
        &fe,
        be.addr,
        &log.addr(),
        "    timeout client 500ms\n    timeout server 5s",
    ));
    let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    c.write_all(b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        .await
        .unwrap();
    let r = read_until_quiet(&mut c, Duration::from_secs(4), Duration::from_secs(4)).await;
    let closed = r.closed_after.expect("closed");
    assert_eq!(r.text(), PAGE_408);
    assert!(
        ms(closed) >= 450 && ms(closed) < 2000,
        "closed after {closed:?}"
    );
    // The server saw the head and the three bytes, never a whole request.
    let got = String::from_utf8_lossy(&be.take()).into_owned();
    assert!(got.starts_with("POST /up HTTP/1.1\r\n"), "{got:?}");
    assert!(got.ends_with("\r\n\r\nabc"), "{got:?}");
    let (timers, status, _, term) = fields(&log.line());
    assert_eq!((&status[..], &term[..]), ("408", "cD--"));
    // Connected, so the connect time is logged; no response time.
    let t: Vec<&str> = timers.split('/').collect();
    assert!(t[2] != "-1" && t[3] == "-1", "{timers}");
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.num("be", "BACKEND", "cli_abrt"), 1);
    assert_eq!(csv.num("be", "s1", "eresp"), 0, "the server is not blamed");
}

/// `timeout server` with a server that never answers: the 504 page, the
/// client connection kept (HAProxy keeps it: the request was read whole),
/// `sH--` with the connect time logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_server_gets_504_and_connection_survives() {
    let be = RawBackend::start().await;
    let log = Syslog::new();
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(
        &fe,
        be.addr,
        &log.addr(),
        "    timeout client 5s\n    timeout server 500ms",
    ));
    be.set_silent(true);
    let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    c.write_all(GET).await.unwrap();
    let r = read_until_quiet(&mut c, Duration::from_millis(1200), Duration::from_secs(4)).await;
    assert_eq!(r.text(), PAGE_504);
    assert!(r.closed_after.is_none(), "the client connection stays open");
    let (timers, status, bytes, term) = fields(&log.line());
    assert_eq!((&status[..], &term[..]), ("504", "sH--"));
    // %B is the size HAProxy 2.6 logs for its own 504 (its internal
    // form of the page: 198, captured from haproxy 2.6.12), not the 195
    // bytes on the wire.
    assert_eq!(PAGE_504.len(), 195);
    assert_eq!(bytes, "198");
    // Connected (Tc logged), no response (Tr -1), answered at the server
    // timeout (Ta), not before.
    let t: Vec<&str> = timers.split('/').collect();
    assert!(t[2] != "-1" && t[3] == "-1", "{timers}");
    let ta: u64 = t[4].parse().unwrap();
    assert!((450..3000).contains(&ta), "{timers}");
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.num("be", "s1", "eresp"), 1);
    assert_eq!(csv.num("be", "BACKEND", "hrsp_5xx"), 1);
    // The same client connection carries the next request.
    be.set_silent(false);
    c.write_all(GET).await.unwrap();
    let r = read_until_quiet(&mut c, Duration::from_millis(300), Duration::from_secs(4)).await;
    assert!(r.text().starts_with("HTTP/1.1 200 OK\r\n"), "{}", r.text());
}

/// `timeout http-keep-alive` shorter than the parking grace (250 ms): the
/// connection is closed from its task, on time; longer: closed from the
/// parking lot, also on time (not at the next periodic sweep).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_timeout_is_kept_before_and_after_parking() {
    for (keep_alive, ka_ms) in [("100ms", 100u128), ("400ms", 400)] {
        let be = RawBackend::start().await;
        let log = Syslog::new();
        let fe = Listen::new();
        let port = fe.port();
        let _s = Sluice::start(&cfg(
            &fe,
            be.addr,
            &log.addr(),
            &format!(
                "    timeout client 5s\n    timeout server 5s\n    timeout http-keep-alive {keep_alive}"
            ),
        ));
        let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        c.write_all(GET).await.unwrap();
        let r = read_until_quiet(&mut c, Duration::from_secs(3), Duration::from_secs(4)).await;
        let closed = r.closed_after.expect("closed after the keep-alive timeout");
        assert!(r.text().starts_with("HTTP/1.1 200 OK\r\n"), "{}", r.text());
        assert!(!r.text().contains("408"), "closed silently: {}", r.text());
        // `closed` counts from the request, so it includes the exchange.
        assert!(
            ms(closed) >= ka_ms - 20 && ms(closed) < ka_ms + 350,
            "{keep_alive}: closed after {closed:?}"
        );
    }
}
