//! `mode tcp` bulk relaying: multi-megabyte transfers both ways at once
//! arrive byte-exact with exact `bin`/`bout` and tcplog `%B`, whether the
//! bytes go through kernel pipes (splice(2), the default on Linux) or
//! through user space (`nosplice`); a client's half-close still gets the
//! server's reply; a server reset mid-transfer ends the session cleanly.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use support::syslog::*;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const UP: usize = 3 << 20;
const DOWN: usize = 5 << 20;

/// Deterministic bytes that differ per direction and do not repeat with
/// any short period, so a lost, doubled or reordered chunk shows.
fn pattern(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

/// A server that, once the client sent a first byte, streams `DOWN` bytes
/// while reading everything the client sends; after the client's end of
/// stream it answers `got:<len>:<fnv>` and closes. A client that sends
/// nothing (the harness's readiness probe) gets nothing.
async fn bulk_server() -> SocketAddr {
    tcp_server(|s| async move {
        let (mut r, mut w) = s.into_split();
        let mut got = vec![0u8; 1];
        if !matches!(r.read(&mut got).await, Ok(1)) {
            return;
        }
        let sender = tokio::spawn(async move { w.write_all(&pattern(DOWN, 2)).await.map(|_| w) });
        let _ = r.read_to_end(&mut got).await;
        let Ok(Ok(mut w)) = sender.await else {
            return;
        };
        let trailer = format!("got:{}:{:x}", got.len(), fnv(&got));
        let _ = w.write_all(trailer.as_bytes()).await;
    })
    .await
}

/// Relays `UP` bytes up and `DOWN` down at once; returns `show info`'s
/// TotalSplicdedBytesOut and the total relayed.
async fn bulk_both_ways(global_extra: &str) -> (u64, u64) {
    let server = bulk_server().await;
    let (s, log, port) = tcplog_sluice(global_extra, "10s", |port| {
        format!(
            "frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    server s1 {server}
"
        )
    });
    let up = pattern(UP, 1);
    let c = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap();
    let (mut r, mut w) = c.into_split();
    let sent = up.clone();
    // Sending and receiving at once: both directions are full at the
    // same time; the client then half-closes and still reads the reply.
    let writer = tokio::spawn(async move {
        w.write_all(&sent).await.unwrap();
        w.shutdown().await.unwrap();
        w
    });
    let mut down = Vec::new();
    within(
        Duration::from_secs(30),
        "relay finished",
        r.read_to_end(&mut down),
    )
    .await
    .unwrap();
    let _w = writer.await.unwrap();
    let trailer = format!("got:{}:{:x}", UP, fnv(&up));
    assert_eq!(down.len(), DOWN + trailer.len(), "bytes to the client");
    assert!(
        down[..DOWN] == pattern(DOWN, 2)[..],
        "server's bytes arrive intact and in order"
    );
    assert_eq!(
        String::from_utf8_lossy(&down[DOWN..]),
        trailer,
        "the server received exactly the client's bytes, then answered the half-close"
    );
    let bout = (DOWN + trailer.len()) as u64;
    // The log line is sent once the counters are updated.
    log.until(&[&format!("{{}} fe be/s1 {{}}/{{}}/{{}} {bout} -- {{}}")]);
    let st = show_stat(&s.stats_socket()).await;
    for (px, sv) in [("fe", "FRONTEND"), ("be", "BACKEND"), ("be", "s1")] {
        assert_eq!(st.num(px, sv, "bin"), UP as u64, "{px}/{sv} bin");
        assert_eq!(st.num(px, sv, "bout"), bout, "{px}/{sv} bout");
    }
    let info = cli(&s.stats_socket(), "show info").await;
    let spliced = info
        .lines()
        .find_map(|l| l.strip_prefix("TotalSplicdedBytesOut: "))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no TotalSplicdedBytesOut in {info}"));
    (spliced, UP as u64 + bout)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_both_ways_spliced() {
    let (spliced, total) = bulk_both_ways("").await;
    if cfg!(target_os = "linux") {
        assert_eq!(spliced, total, "every byte went through a pipe");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_both_ways_copied_with_nosplice() {
    let (spliced, _) = bulk_both_ways("    nosplice").await;
    assert_eq!(spliced, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_pipes_and_maxpipes_still_relay_everything() {
    // Pipes of one page, and only one pipe for the whole process: the
    // other direction's bursts go through a user-space buffer.
    let (spliced, total) = bulk_both_ways("    tune.pipesize 4096\n    maxpipes 1").await;
    if cfg!(target_os = "linux") {
        assert!(0 < spliced && spliced <= total, "{spliced} of {total}");
    }
}

/// A server that greets with "hi", reads about 1 MB, then resets the
/// connection (RST, SO_LINGER 0) while the client is still sending.
async fn resetting_server() -> SocketAddr {
    tcp_server(|mut s| async move {
        let mut first = [0u8; 1];
        if !matches!(s.read(&mut first).await, Ok(1)) {
            return;
        }
        let _ = s.write_all(b"hi").await;
        let mut buf = vec![0u8; 64 * 1024];
        let mut got = 1;
        while got < 1 << 20 {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got += n,
            }
        }
        let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
        drop(s);
    })
    .await
}

/// sluice in mode tcp with tcplog lines going to a syslog sink, the
/// proxies `proxies(port)` gives, `timeout server` as given.
fn tcplog_sluice(
    global_extra: &str,
    server_timeout: &str,
    proxies: impl Fn(u16) -> String,
) -> (Sluice, Syslog, u16) {
    let log = Syslog::new();
    let (_hold, port) = hold_port();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
    log {log} local0
{global_extra}
defaults
    mode tcp
    log global
    option tcplog
    option dontlognull
    timeout connect 2s
    timeout client 10s
    timeout server {server_timeout}
{}",
        proxies(port),
        log = log.addr()
    ));
    (s, log, port)
}

/// `listen fe` to `server`, see [`tcplog_sluice`].
fn tcplog_listen(
    server: SocketAddr,
    global_extra: &str,
    server_timeout: &str,
) -> (Sluice, Syslog, u16) {
    tcplog_sluice(global_extra, server_timeout, |port| {
        format!(
            "listen fe
    bind 127.0.0.1:{port}
    server s1 {server}
"
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_reset_mid_transfer_closes_the_client_side() {
    let server = resetting_server().await;
    let (mut s, log, port) = tcplog_listen(server, "", "10s");
    let c = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap();
    let (mut r, mut w) = c.into_split();
    // Sends until the connection breaks.
    let writer = tokio::spawn(async move {
        let chunk = pattern(256 * 1024, 3);
        let mut sent = 0u64;
        while w.write_all(&chunk).await.is_ok() {
            sent += chunk.len() as u64;
        }
        sent
    });
    let mut down = Vec::new();
    // The reset reaches the client as an end of stream (or a reset).
    let _ = within(
        Duration::from_secs(10),
        "client side closed",
        r.read_to_end(&mut down),
    )
    .await;
    assert_eq!(down, b"hi");
    drop(r);
    let sent = within(Duration::from_secs(10), "client writes fail", writer)
        .await
        .unwrap();
    let lines = log.until(&["{} fe fe/s1 {}/{}/{} 2 SD {}"]);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let st = show_stat(&s.stats_socket()).await;
    let bin = st.num("fe", "s1", "bin");
    assert!(
        (1 << 20) <= bin && bin <= sent + (1 << 20),
        "bin {bin}: at least what the server read, at most what was sent ({sent})"
    );
    assert_eq!(st.num("fe", "s1", "bout"), 2);
    let sock = s.stats_socket();
    wait_until(Duration::from_secs(5), "session closed", || async {
        let st = show_stat(&sock).await;
        st.num("fe", "FRONTEND", "scur") == 0 && st.num("fe", "s1", "scur") == 0
    })
    .await;
    s.assert_running();
}

/// Reads from `s` into `buf` until it holds `n` bytes.
async fn fill_to(s: &mut TcpStream, buf: &mut Vec<u8>, n: usize) {
    let mut chunk = vec![0u8; 64 * 1024];
    while buf.len() < n {
        let got = s.read(&mut chunk).await.unwrap();
        assert!(got > 0, "closed with {} of {n} bytes", buf.len());
        buf.extend_from_slice(&chunk[..got]);
    }
}

/// Splits one HTTP/1.1 message (head with a content-length, then body)
/// off the front of `buf`, reading more as needed.
async fn message(s: &mut TcpStream, buf: &mut Vec<u8>) -> (String, Vec<u8>) {
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let want = buf.len() + 1;
        fill_to(s, buf, want).await;
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    fill_to(s, buf, end + len).await;
    let body = buf[end..end + len].to_vec();
    buf.drain(..end + len);
    (head, body)
}

/// An HTTP/1.1 keep-alive server: `POST` gets its body echoed, anything
/// else a 2-byte "ok".
async fn echo_http() -> SocketAddr {
    tcp_server(|mut s| async move {
        let mut buf = Vec::new();
        loop {
            let mut probe = [0u8; 1];
            if buf.is_empty() {
                match s.read(&mut probe).await {
                    Ok(1) => buf.push(probe[0]),
                    _ => return,
                }
            }
            let (head, body) = message(&mut s, &mut buf).await;
            let body = if head.starts_with("POST") {
                body
            } else {
                b"ok".to_vec()
            };
            let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
            if s.write_all(&[head.as_bytes(), &body].concat())
                .await
                .is_err()
            {
                return;
            }
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_bodies_of_known_length_are_spliced_and_stop_at_their_end() {
    let server = echo_http().await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
frontend fe
    bind {fe}
    default_backend be
backend be
    server s1 {server}
"
    ));
    let body = pattern(UP, 4);
    let mut c = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap();
    // The body and a pipelined request in one stream: the splice must not
    // take a byte of the second request.
    let mut out =
        format!("POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: {UP}\r\n\r\n").into_bytes();
    out.extend_from_slice(&body);
    out.extend_from_slice(b"GET /next HTTP/1.1\r\nhost: x\r\n\r\n");
    // The server reads the whole body before echoing it: no deadlock.
    c.write_all(&out).await.unwrap();
    let mut buf = Vec::new();
    let (head, echoed) = within(Duration::from_secs(20), "echo", message(&mut c, &mut buf)).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        echoed == body,
        "the body came back byte-exact ({} bytes)",
        echoed.len()
    );
    let (head, next) = within(Duration::from_secs(10), "next", message(&mut c, &mut buf)).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(next, b"ok", "the pipelined request was answered");
    let info = cli(&s.stats_socket(), "show info").await;
    let spliced: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("TotalSplicdedBytesOut: "))
        .and_then(|v| v.parse().ok())
        .unwrap();
    if cfg!(target_os = "linux") {
        // Both bodies, less what arrived with their heads.
        assert!(spliced >= UP as u64, "{spliced}");
    }
}

/// A server that reads nothing (it holds the connection open, silent).
async fn deaf_server() -> SocketAddr {
    tcp_server(|s| async move {
        let _held = s;
        std::future::pending::<()>().await
    })
    .await
}

/// A server that stops reading while the client keeps sending: once its
/// socket buffers are full, nothing moves for `timeout server` and the
/// session ends `sD` (HAProxy's server-side timeout during data), for the
/// spliced and the copying relay alike.
async fn stalled_server_times_out(global_extra: &str) {
    let server = deaf_server().await;
    let (mut s, log, port) = tcplog_listen(server, global_extra, "300ms");
    let c = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap();
    let (mut r, mut w) = c.into_split();
    let writer = tokio::spawn(async move {
        let chunk = pattern(256 * 1024, 5);
        while w.write_all(&chunk).await.is_ok() {}
    });
    // The client's side is closed by sluice once the server timed out.
    let mut down = Vec::new();
    let _ = within(
        Duration::from_secs(10),
        "client side closed",
        r.read_to_end(&mut down),
    )
    .await;
    assert!(down.is_empty());
    drop(r);
    within(Duration::from_secs(10), "client writes fail", writer)
        .await
        .unwrap();
    let lines = log.until(&["{} fe fe/s1 {}/{}/{} {} sD {}"]);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    // The session is counted out just after its log line.
    let sock = s.stats_socket();
    wait_until(Duration::from_secs(5), "session closed", || async {
        show_stat(&sock).await.num("fe", "FRONTEND", "scur") == 0
    })
    .await;
    s.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_that_stops_reading_times_out_spliced() {
    stalled_server_times_out("").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_that_stops_reading_times_out_copied() {
    stalled_server_times_out("    nosplice").await;
}
