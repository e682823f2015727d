//! `mode tcp`: bytes relayed both ways, half-close carried across,
//! round robin, health checks and byte counters as in HTTP mode.

mod support;

use std::net::SocketAddr;

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A TCP server that prefixes each connection's echo with its name, and
/// closes once the client has finished sending.
async fn echo_server(name: &'static str) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut all = Vec::new();
                let _ = s.read_to_end(&mut all).await;
                let _ = s.write_all(format!("{name}:").as_bytes()).await;
                let _ = s.write_all(&all).await;
            });
        }
    });
    addr
}

async fn exchange(addr: SocketAddr, payload: &[u8]) -> Vec<u8> {
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(payload).await.unwrap();
    // Half-close: the server only answers once it saw our end of stream.
    c.shutdown().await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(10), c.read_to_end(&mut out))
        .await
        .expect("relay finished")
        .unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_relay_round_robin_half_close_and_counters() {
    let a = echo_server("a").await;
    let b = echo_server("b").await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode tcp
    timeout connect 5s
    timeout client 30s
    timeout server 30s
listen db
    bind {fe}
    balance roundrobin
    server a {a} check inter 200ms
    server b {b} check inter 200ms
"
    ));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    // The harness's readiness probe (a connection closed at once) is a TCP
    // session too: wait until it has been balanced, so that it does not
    // interleave with the exchanges below.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    // Its bytes count when it ends: wait for that too (no session left).
    let probe = loop {
        let csv = show_stat(&s.stats_socket()).await;
        if csv.num("db", "BACKEND", "stot") >= 1 && csv.num("db", "BACKEND", "scur") == 0 {
            break csv;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "probe session never ended"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let r1 = exchange(addr, &big).await;
    let r2 = exchange(addr, b"hello").await;
    // The probe took the first server in order; the exchanges alternate.
    let first = if r1.starts_with(b"a:") { "a" } else { "b" };
    let second = if first == "a" { "b" } else { "a" };
    assert_eq!(&r1[2..], &big[..], "200 kB relayed intact");
    assert_eq!(r2, format!("{second}:hello").as_bytes());
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.get("db", "FRONTEND", "mode"), "tcp");
    assert_eq!(csv.num("db", first, "bin"), big.len() as u64);
    assert_eq!(csv.num("db", first, "bout"), big.len() as u64 + 2);
    assert_eq!(csv.num("db", second, "bin"), 5);
    // `second` also served the probe, which got its 2-byte prefix if it
    // came before the probe closed.
    let probe_out = probe.num("db", second, "bout");
    assert!(probe_out <= 2, "probe got {probe_out} bytes");
    assert_eq!(csv.num("db", second, "bout"), 7 + probe_out);
    assert_eq!(csv.num("db", "BACKEND", "bin"), big.len() as u64 + 5);
    assert_eq!(
        csv.num("db", "FRONTEND", "bout"),
        big.len() as u64 + 2 + 7 + probe_out
    );
}
