//! Clients and servers that vanish mid-exchange never leak a session slot:
//! 10,000 aborted exchanges later, `scur` and `qcur` are back to 0 and the
//! process has not grown beyond a bound.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Backend: `/cut` sends half a response and resets; anything else reads
/// the body it was promised and answers 1 MB.
async fn backend() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let mut head = Vec::new();
                loop {
                    let Ok(n) = s.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    head.extend_from_slice(&buf[..n]);
                    if head.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                if head.starts_with(b"GET /cut") {
                    let _ = s
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\npartial")
                        .await;
                    let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
                    return;
                }
                let body = vec![b'x'; 1 << 20];
                let _ = s
                    .write_all(
                        format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len())
                            .as_bytes(),
                    )
                    .await;
                let _ = s.write_all(&body).await;
            });
        }
    });
    addr
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

/// One aborted exchange of kind `k`.
async fn abort_one(addr: SocketAddr, k: usize) {
    let Ok(mut c) = TcpStream::connect(addr).await else {
        return;
    };
    let _ = socket2::SockRef::from(&c).set_linger(Some(Duration::ZERO));
    match k % 4 {
        // Request body cut short, then reset.
        0 => {
            let _ = c
                .write_all(
                    b"POST /up HTTP/1.1\r\nhost: x\r\ncontent-length: 100000\r\n\r\nonly a little",
                )
                .await;
        }
        // Half a request head, then reset.
        1 => {
            let _ = c.write_all(b"GET /slow HTTP/1.1\r\nhost: x\r\nx-a: ").await;
        }
        // Response download abandoned after the first bytes.
        2 => {
            let _ = c.write_all(b"GET /big HTTP/1.1\r\nhost: x\r\n\r\n").await;
            let mut b = [0u8; 1024];
            let _ = c.read(&mut b).await;
        }
        // The server resets mid-body.
        _ => {
            let _ = c.write_all(b"GET /cut HTTP/1.1\r\nhost: x\r\n\r\n").await;
            let mut b = vec![0u8; 4096];
            while let Ok(n) = c.read(&mut b).await {
                if n == 0 {
                    break;
                }
            }
        }
    }
    drop(c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_aborted_exchanges_leak_nothing() {
    let be = backend().await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 5s
    timeout client 120s
    timeout server 120s
frontend fe
    bind {fe}
    default_backend be
backend be
    server s1 {be} maxconn 20
"
    ));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let total: usize = std::env::var("SLUICE_ABORTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let run = |from: usize, to: usize| async move {
        let mut tasks = tokio::task::JoinSet::new();
        for k in from..to {
            if tasks.len() >= 50 {
                tasks.join_next().await;
            }
            tasks.spawn(abort_one(addr, k));
        }
        while tasks.join_next().await.is_some() {}
    };
    // Warm up, then measure growth over the rest.
    run(0, 1000.min(total)).await;
    let before = rss_kib(s.pid());
    run(1000.min(total), total).await;

    let sock = s.stats_socket();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let csv = show_stat(&sock).await;
        let left = [
            csv.num("fe", "FRONTEND", "scur"),
            csv.num("be", "BACKEND", "scur"),
            csv.num("be", "BACKEND", "qcur"),
            csv.num("be", "s1", "scur"),
            csv.num("be", "s1", "qcur"),
        ];
        if left == [0; 5] {
            // The aborts really reached the server (kinds 2 and 3 at least).
            assert!(
                csv.num("be", "s1", "stot") >= total as u64 / 2,
                "only {} sessions reached the server",
                csv.num("be", "s1", "stot")
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "slots still held: fe scur, be scur, be qcur, s1 scur, s1 qcur = {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Still serving.
    let r = get(addr, "/after").await;
    assert_eq!(r.status, 200);
    let after = rss_kib(s.pid());
    eprintln!("RSS {before} KiB -> {after} KiB after {total} aborted exchanges");
    assert!(
        after < before + 16 * 1024,
        "RSS grew from {before} KiB to {after} KiB"
    );
}
