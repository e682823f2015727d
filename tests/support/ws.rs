//! A WebSocket server for tests: it accepts the upgrade (101) only when the
//! request asks for it, then echoes every byte upper-cased.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Accepts the upgrade if the request carries it, then echoes bytes
/// upper-cased.
pub async fn echo_backend() -> SocketAddr {
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

/// Reads until `marker` has arrived (10 s at most per read).
pub async fn read_until(c: &mut TcpStream, marker: &[u8]) -> Vec<u8> {
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
