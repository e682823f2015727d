//! Idle keep-alive connections: a client that stays silent past the grace
//! period is parked outside the runtime; it must be served again as soon as
//! it speaks, be counted in `scur` while parked, and be closed when
//! `timeout http-keep-alive` expires.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::*;
use tokio::io::AsyncReadExt;

fn cfg(fe: &Listen, b: &Backend, keep_alive: &str) -> String {
    format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout http-keep-alive {keep_alive}
frontend fe
    bind {fe}
    default_backend be
backend be
    server s1 {}
",
        b.hostport()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parked_connection_is_served_again() {
    let b = Backend::start("s1").await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(&fe, &b, "30s"));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut conns = Vec::new();
    for i in 0..20 {
        let mut c = HttpConn::connect(addr).await;
        assert_eq!(c.get(&format!("/first{i}")).await.status, 200);
        conns.push(c);
    }
    // Idle well past the parking grace period (250 ms): the point of the
    // test is the idle time itself.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(
        csv.num("fe", "FRONTEND", "scur"),
        20,
        "parked conns count in scur"
    );
    for (i, c) in conns.iter_mut().enumerate() {
        let r = c.get(&format!("/again{i}")).await;
        assert_eq!(r.status, 200);
        assert!(!c.is_closed());
    }
    assert_eq!(b.hits(), 40);
    // And once more after a second idle period.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(conns[0].get("/third").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_timeout_closes_parked_connection() {
    let b = Backend::start("s1").await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(&fe, &b, "1s"));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut raw = tokio::net::TcpStream::connect(addr).await.unwrap();
    use tokio::io::AsyncWriteExt;
    raw.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    // Read the response, then wait for the close, bounded.
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match raw.read(&mut buf).await {
                Ok(0) | Err(_) => return true,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .unwrap_or(false);
    assert!(closed, "idle connection not closed within 10 s");
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"));
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "closed before the keep-alive timeout: {:?}",
        started.elapsed()
    );
    // The session slot is given back.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let csv = show_stat(&s.stats_socket()).await;
        if csv.num("fe", "FRONTEND", "scur") == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "scur stayed at {}",
            csv.num("fe", "FRONTEND", "scur")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
