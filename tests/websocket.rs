//! WebSocket: the upgrade reaches the server, the tunnel opens only after
//! its 101, bytes flow both ways, and `timeout tunnel` closes an idle one.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Accepts the upgrade if the request carries it, then echoes bytes
/// upper-cased.
async fn ws_backend() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut b = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    let Ok(n) = s.read(&mut b).await else { return };
                    if n == 0 {
                        return;
                    }
                    head.extend_from_slice(&b[..n]);
                }
                let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
                if !(text.contains("\r\nupgrade: websocket\r\n")
                    && text.contains("\r\nconnection: upgrade\r\n"))
                {
                    let _ = s
                        .write_all(
                            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 10\r\n\r\nno upgrade",
                        )
                        .await;
                    return;
                }
                let _ = s
                    .write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
                    .await;
                loop {
                    let Ok(n) = s.read(&mut b).await else { return };
                    if n == 0 {
                        return;
                    }
                    let up: Vec<u8> = b[..n].to_ascii_uppercase();
                    if s.write_all(&up).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

async fn read_until(c: &mut TcpStream, marker: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    let mut b = [0u8; 4096];
    while !got.windows(marker.len()).any(|w| w == marker) {
        let n = tokio::time::timeout(Duration::from_secs(10), c.read(&mut b))
            .await
            .expect("no data within 10 s")
            .unwrap();
        assert!(n > 0, "closed; got {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&b[..n]);
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_tunnel_and_tunnel_timeout() {
    let be = ws_backend().await;
    let port = free_port();
    let _s = Sluice::start(&format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout tunnel 500ms
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    server ws {be}
"
    ));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(b"GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        .await
        .unwrap();
    let head = read_until(&mut c, b"\r\n\r\n").await;
    assert!(
        head.starts_with(b"HTTP/1.1 101 "),
        "{}",
        String::from_utf8_lossy(&head)
    );
    for msg in ["hello", "again"] {
        c.write_all(msg.as_bytes()).await.unwrap();
        let back = read_until(&mut c, msg.to_ascii_uppercase().as_bytes()).await;
        assert!(back.ends_with(msg.to_ascii_uppercase().as_bytes()));
    }
    // Idle past `timeout tunnel` (500 ms), well before `timeout client`.
    let idle_from = Instant::now();
    let mut b = [0u8; 16];
    let r = tokio::time::timeout(Duration::from_secs(10), c.read(&mut b)).await;
    assert!(
        matches!(r, Ok(Ok(0)) | Ok(Err(_))),
        "tunnel not closed: {r:?}"
    );
    let idle = idle_from.elapsed();
    assert!(
        idle >= Duration::from_millis(400),
        "closed too early: {idle:?}"
    );
    assert!(idle < Duration::from_secs(10), "closed after {idle:?}");
}
