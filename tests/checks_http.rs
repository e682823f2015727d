//! `option httpchk` and `http-check expect` against real servers on
//! 127.0.0.1: a server that answers 500 to the check goes DOWN with L7STS
//! (code 500), one that accepts but never answers goes DOWN with L7TOUT,
//! a healthy one is UP with L7OK (code 200); `show stat` carries HAProxy's
//! check_status / check_code / check_desc (reference §1.3, §2.10).

mod support;

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use support::*;

/// A server that reads a request and answers `reply` (None: never
/// answers, keeps the connection open).
async fn raw_server(reply: Option<&'static str>) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let _ = s.read(&mut buf).await;
                match reply {
                    Some(r) => {
                        let _ = s.write_all(r.as_bytes()).await;
                    }
                    None => tokio::time::sleep(Duration::from_secs(60)).await,
                }
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httpchk_statuses_as_haproxy_reports_them() {
    let good = Backend::start("good").await;
    let bad = raw_server(Some(
        "HTTP/1.0 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n",
    ))
    .await;
    let hang = raw_server(None).await;
    let body = raw_server(Some("HTTP/1.0 200 OK\r\n\r\nstatus: degraded\n")).await;
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "global
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout check 300ms

frontend fe
    bind {fe}
    default_backend be

backend be
    option httpchk GET /health
    server good {} check inter 100ms rise 1 fall 1
    server bad {bad} check inter 100ms rise 1 fall 1
    server hang {hang} check inter 100ms rise 1 fall 1

backend be2
    option httpchk GET /
    http-check expect string status:\\ ok
    server body {body} check inter 100ms rise 1 fall 1
",
        good.hostport()
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    let csv = wait_check(&sock, "be", "good", "UP", "L7OK").await;
    assert_eq!(csv.get("be", "good", "check_code"), "200");
    assert_eq!(csv.get("be", "good", "check_desc"), "Layer7 check passed");
    let csv = wait_check(&sock, "be", "bad", "DOWN", "L7STS").await;
    assert_eq!(csv.get("be", "bad", "check_code"), "500");
    assert_eq!(csv.get("be", "bad", "check_desc"), "Layer7 wrong status");
    let csv = wait_check(&sock, "be", "hang", "DOWN", "L7TOUT").await;
    assert_eq!(csv.get("be", "hang", "check_desc"), "Layer7 timeout");
    let csv = show_stat(&sock).await;
    assert_eq!(csv.get("be2", "body", "status"), "DOWN");
    assert_eq!(csv.get("be2", "body", "check_status"), "L7RSP");
    // The check reached the good server's URI.
    assert!(
        good.events()
            .iter()
            .any(|e| format!("{e:?}").contains("/health"))
    );
    // Only the good server gets traffic.
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut c = HttpConn::connect(addr).await;
    for _ in 0..5 {
        let r = c.get("/").await;
        assert_eq!((r.status, r.backend()), (200, "good".to_string()));
    }
}

/// A server that records the first request of each connection and
/// answers 200.
async fn recording_server() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                continue;
            };
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let n = s.read(&mut buf).await.unwrap_or(0);
                log.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf[..n]).into_owned());
                let _ = s
                    .write_all(b"HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n")
                    .await;
            });
        }
    });
    (addr, seen)
}

/// A backend's own `option httpchk` (or `http-check` rule) starts its
/// check rules afresh, as haproxy 2.6 does (checked against it): the
/// `http-check send` header and `http-check expect` of `defaults` are
/// gone; a backend without its own keeps them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_option_httpchk_resets_the_inherited_check_rules() {
    let (own, own_seen) = recording_server().await;
    let (inh, inh_seen) = recording_server().await;
    let (mixed, mixed_seen) = recording_server().await;
    let cfg = format!(
        "global
    stats socket @DIR@/stats.sock mode 600 level admin
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    option httpchk GET /d
    http-check send hdr X-D d
    http-check expect status 201
backend own
    option httpchk GET /b
    server s {own} check inter 100ms rise 1 fall 1
backend inherited
    server s {inh} check inter 100ms rise 1 fall 1
backend mixed
    http-check send hdr X-E e
    option httpchk GET /e
    server s {mixed} check inter 100ms rise 1 fall 1
"
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    // The 200 passes: the inherited `expect status 201` is gone.
    wait_check(&sock, "own", "s", "UP", "L7OK").await;
    wait_check(&sock, "inherited", "s", "DOWN", "L7STS").await;
    wait_check(&sock, "mixed", "s", "UP", "L7OK").await;
    let first = |seen: &std::sync::Arc<std::sync::Mutex<Vec<String>>>| {
        seen.lock().unwrap().first().cloned().unwrap_or_default()
    };
    assert_eq!(first(&own_seen), "GET /b HTTP/1.0\r\n\r\n");
    assert_eq!(first(&inh_seen), "GET /d HTTP/1.0\r\nx-d: d\r\n\r\n");
    assert_eq!(first(&mixed_seen), "GET /e HTTP/1.0\r\nx-e: e\r\n\r\n");
}
