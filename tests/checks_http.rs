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
