//! TCP health checks (`check inter 200ms rise 2 fall 2`): a dead server goes
//! DOWN and gets no traffic, comes back UP after `rise` good checks, and a
//! backend with no server left answers HAProxy's 503 (reference §2.10, §2.13).

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use support::*;

/// inter × fall (or rise) is 400 ms; the deadline is generous for noisy
/// machines.
const STATE_DEADLINE: Duration = Duration::from_secs(15);

fn cfg(fe: &Listen, servers: &[&Backend]) -> String {
    let mut c = format!(
        "global
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s

frontend fe
    bind {fe}
    default_backend be

backend be
    balance roundrobin
"
    );
    for b in servers {
        c.push_str(&format!(
            "    server {} {} check inter 200ms rise 2 fall 2\n",
            b.name,
            b.hostport()
        ));
    }
    c
}

async fn wait_status(sock: &Path, sv: &str, want: &str) {
    let sock: PathBuf = sock.to_path_buf();
    let end = std::time::Instant::now() + STATE_DEADLINE;
    loop {
        let last = server_status(&sock, "be", sv).await;
        if last == want {
            return;
        }
        if std::time::Instant::now() >= end {
            panic!("be/{sv} status is {last:?}, expected {want:?} within {STATE_DEADLINE:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_server_goes_down_gets_no_traffic_and_comes_back() {
    let mut b = [
        Backend::start("s1").await,
        Backend::start("s2").await,
        Backend::start("s3").await,
    ];
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(&fe, &[&b[0], &b[1], &b[2]]));
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));

    // All three checked servers are UP and serve traffic.
    for sv in ["s1", "s2", "s3"] {
        wait_status(&sock, sv, "UP").await;
    }
    let mut conn = HttpConn::connect(addr).await;
    for _ in 0..6 {
        assert_eq!(conn.get("/").await.status, 200);
    }
    assert!(b[1].hits() > 0, "s2 got no traffic while UP");

    // Kill s2: it goes DOWN.
    b[1].kill().await;
    wait_status(&sock, "s2", "DOWN").await;
    let csv = show_stat(&sock).await;
    assert_eq!(csv.get("be", "s2", "check_status"), "L4CON");
    assert_eq!(
        csv.get("be", "s2", "check_desc"),
        "Layer4 connection problem"
    );
    assert_eq!(csv.num("be", "s2", "chkdown"), 1);
    assert_eq!(csv.get("be", "s1", "status"), "UP");
    assert_eq!(csv.get("be", "BACKEND", "status"), "UP");
    assert_eq!(csv.num("be", "BACKEND", "act"), 2, "UP active servers");

    // No 5xx and nothing for s2 while it is DOWN, on new and reused
    // connections.
    let before = b[1].hits();
    let mut seen = Vec::new();
    for i in 0..20 {
        let r = if i % 2 == 0 {
            if conn.is_closed() {
                conn = HttpConn::connect(addr).await;
            }
            conn.get(&format!("/down{i}")).await
        } else {
            get(addr, &format!("/down{i}")).await
        };
        assert_eq!(
            r.status,
            200,
            "request {i} while s2 DOWN: {}{}",
            r.head,
            r.text()
        );
        seen.push(r.backend());
    }
    assert!(!seen.iter().any(|n| n == "s2"), "{seen:?}");
    assert!(seen.iter().any(|n| n == "s1") && seen.iter().any(|n| n == "s3"));
    assert_eq!(b[1].hits(), before);

    // Restart s2 on the same port: UP again after `rise` good checks.
    b[1].restart().await;
    wait_status(&sock, "s2", "UP").await;
    let csv = show_stat(&sock).await;
    assert_eq!(csv.get("be", "s2", "check_status"), "L4OK");
    assert_eq!(csv.get("be", "s2", "check_desc"), "Layer4 check passed");
    assert_eq!(csv.num("be", "BACKEND", "act"), 3);

    let before = b[1].hits();
    for i in 0..6 {
        let r = get(addr, &format!("/back{i}")).await;
        assert_eq!(r.status, 200);
    }
    assert!(
        b[1].hits() > before,
        "s2 is UP again but got none of 6 requests"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_servers_down_gives_haproxy_503() {
    let mut b = [Backend::start("s1").await, Backend::start("s2").await];
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(&fe, &[&b[0], &b[1]]));
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    wait_status(&sock, "s1", "UP").await;
    wait_status(&sock, "s2", "UP").await;
    assert_eq!(get(addr, "/").await.status, 200);

    b[0].kill().await;
    b[1].kill().await;
    wait_status(&sock, "s1", "DOWN").await;
    wait_status(&sock, "s2", "DOWN").await;
    let csv = show_stat(&sock).await;
    assert_eq!(csv.get("be", "BACKEND", "status"), "DOWN");
    assert_eq!(csv.num("be", "BACKEND", "act"), 0);
    // The backend went down once (HAProxy's BACKEND chkdown).
    assert_eq!(csv.num("be", "BACKEND", "chkdown"), 1);

    // New connection and keep-alive connection both get the exact 503.
    assert_haproxy_503(&get(addr, "/").await);
    let mut conn = HttpConn::connect(addr).await;
    assert_haproxy_503(&conn.get("/a").await);
    if !conn.is_closed() {
        assert_haproxy_503(&conn.get("/b").await);
    }

    // One server back: service resumes.
    b[0].restart().await;
    wait_status(&sock, "s1", "UP").await;
    let r = get(addr, "/again").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.backend(), "s1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_that_never_answers_checks_goes_down() {
    // A server on a port nobody listens on starts UP (no check has run yet)
    // and the first failed check marks it DOWN: it then never gets traffic.
    let live = Backend::start("s1").await;
    let (_hold, dead_port) = hold_port();
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
frontend fe
    bind {fe}
    default_backend be
backend be
    server s1 {} check inter 200ms rise 2 fall 2
    server s2 127.0.0.1:{dead_port} check inter 200ms rise 2 fall 2
",
        live.hostport()
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    wait_status(&sock, "s2", "DOWN").await;
    let csv = show_stat(&sock).await;
    assert_eq!(csv.num("be", "s2", "check_rise"), 2);
    assert_eq!(csv.num("be", "s2", "check_fall"), 2);
    assert_eq!(csv.num("be", "s2", "check_health"), 0);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    for _ in 0..6 {
        let r = get(addr, "/").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.backend(), "s1");
    }
}
