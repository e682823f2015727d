//! Pooled server connections are only reused when clean: bytes a server
//! sends on an idle connection (a stray response) must never be taken as
//! the answer to the next client's request.

mod support;

use std::net::SocketAddr;

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stray_bytes_on_an_idle_server_connection_are_never_relayed() {
    // A raw backend: answers each request with its connection number, and
    // on the first connection also writes an unsolicited second response.
    let backend = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let baddr = backend.local_addr().unwrap();
    let (stray_sent, mut stray_rx) = mpsc::channel::<()>(1);
    tokio::spawn(async move {
        let mut n = 0;
        loop {
            let Ok((mut s, _)) = backend.accept().await else {
                return;
            };
            n += 1;
            let conn = n;
            let stray_sent = stray_sent.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut have = Vec::new();
                loop {
                    let Ok(k) = s.read(&mut buf).await else {
                        return;
                    };
                    if k == 0 {
                        return;
                    }
                    have.extend_from_slice(&buf[..k]);
                    while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                        have.drain(..end + 4);
                        let body = format!("conn{conn}");
                        let resp = format!(
                            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if s.write_all(resp.as_bytes()).await.is_err() {
                            return;
                        }
                        if conn == 1 {
                            let _ = s
                                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nSTRAY")
                                .await;
                            let _ = stray_sent.send(()).await;
                        }
                    }
                }
            });
        }
    });

    let (_hold, port) = hold_port();
    let _s = Sluice::start(&format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    http-reuse always
    server s1 {baddr}
"
    ));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let first = get(addr, "/1").await;
    assert_eq!(first.text(), "conn1");
    // The stray response is now in the idle connection's socket.
    stray_rx.recv().await.unwrap();
    for i in 2..6 {
        let r = get(addr, &format!("/{i}")).await;
        assert_eq!(r.status, 200);
        assert_ne!(
            r.text(),
            "STRAY",
            "a stray server response reached a client"
        );
        assert!(r.text().starts_with("conn"), "{}", r.text());
    }
}
