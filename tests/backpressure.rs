//! Backpressure: a slow reader on one side holds the fast side back.
//! sluice reads from a peer only as fast as the other peer takes the bytes,
//! so what the fast side managed to send while the slow side stalled is
//! bounded by the kernel's socket buffers, not by the message size.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The message size: far more than sluice's buffers plus every socket
/// buffer on the path, so an unbounded relay would be caught.
const BODY: u64 = 512 << 20;
/// What may be in flight while a side stalls: two TCP connections' send
/// and receive buffers (loopback autotuning grows them to a few MiB each)
/// and sluice's own buffer.
const IN_FLIGHT_BOUND: u64 = 48 << 20;

/// A backend that answers `GET /down` with `BODY` bytes written as fast as
/// the connection takes them, and reads `PUT /up` bodies only when
/// `reading` is set. Counts bytes written (`sent`) and read (`received`).
struct Ends {
    addr: SocketAddr,
    sent: Arc<AtomicU64>,
    received: Arc<AtomicU64>,
}

async fn backend() -> Ends {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let sent = Arc::new(AtomicU64::new(0));
    let received = Arc::new(AtomicU64::new(0));
    let (s2, r2) = (sent.clone(), received.clone());
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            let (sent, received) = (s2.clone(), r2.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut b = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if s.read(&mut b).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(b[0]);
                }
                if head.starts_with(b"GET") {
                    let h = format!("HTTP/1.1 200 OK\r\ncontent-length: {BODY}\r\n\r\n");
                    if s.write_all(h.as_bytes()).await.is_err() {
                        return;
                    }
                    let chunk = vec![b'd'; 64 << 10];
                    let mut left = BODY;
                    while left > 0 {
                        let n = left.min(chunk.len() as u64) as usize;
                        if s.write_all(&chunk[..n]).await.is_err() {
                            return;
                        }
                        sent.fetch_add(n as u64, Relaxed);
                        left -= n as u64;
                    }
                } else {
                    // Read one MiB of the upload, then stall.
                    let mut buf = vec![0u8; 64 << 10];
                    while received.load(Relaxed) < 1 << 20 {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => received.fetch_add(n as u64, Relaxed),
                        };
                    }
                    // Hold the connection open without reading.
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
            });
        }
    });
    Ends {
        addr,
        sent,
        received,
    }
}

/// Waits until `counter` stops moving (unchanged for 500 ms) and returns it.
async fn settled(counter: &AtomicU64) -> u64 {
    let mut last = counter.load(Relaxed);
    let mut still = 0;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = counter.load(Relaxed);
        if now == last {
            still += 1;
            if still == 5 {
                return now;
            }
        } else {
            still = 0;
            last = now;
        }
    }
    panic!("counter still moving after 20 s: {last}");
}

fn cfg(fe: &Listen, be: SocketAddr) -> String {
    format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind {fe}
    default_backend be
backend be
    server s {be}
"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_client_holds_back_a_fast_server() {
    let ends = backend().await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&cfg(&fe, ends.addr));
    let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    c.write_all(b"GET /down HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    // Take one MiB, then stop reading.
    let mut buf = vec![0u8; 64 << 10];
    let mut got = 0u64;
    while got < 1 << 20 {
        let n = c.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed after {got} bytes");
        got += n as u64;
    }
    let sent = settled(&ends.sent).await;
    assert!(
        sent < got + IN_FLIGHT_BOUND,
        "the server got {sent} bytes out while the client read {got}: sluice buffered them"
    );
    // And the transfer resumes when the client reads again.
    while got < sent + (4 << 20) {
        let n = c.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed after {got} bytes");
        got += n as u64;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_server_holds_back_a_fast_client() {
    let ends = backend().await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&cfg(&fe, ends.addr));
    let c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (_r, mut w) = c.into_split();
    let written = Arc::new(AtomicU64::new(0));
    let wr = written.clone();
    let upload = tokio::spawn(async move {
        let h = format!("PUT /up HTTP/1.1\r\nhost: x\r\ncontent-length: {BODY}\r\n\r\n");
        w.write_all(h.as_bytes()).await.unwrap();
        let chunk = vec![b'u'; 64 << 10];
        loop {
            if w.write_all(&chunk).await.is_err() {
                return;
            }
            wr.fetch_add(chunk.len() as u64, Relaxed);
        }
    });
    wait_until(
        Duration::from_secs(10),
        "the backend to read 1 MiB",
        || async { ends.received.load(Relaxed) >= 1 << 20 },
    )
    .await;
    let out = settled(&written).await;
    let received = ends.received.load(Relaxed);
    assert!(
        out < received + IN_FLIGHT_BOUND,
        "the client got {out} bytes out while the server read {received}: sluice buffered them"
    );
    upload.abort();
}
