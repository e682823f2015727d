//! WebSocket: the upgrade reaches the server, the tunnel opens only after
//! its 101, bytes flow both ways, and `timeout tunnel` closes an idle one.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_tunnel_and_tunnel_timeout() {
    let be = ws::echo_backend().await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout tunnel 500ms
frontend fe
    bind {fe}
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
    let head = ws::read_until(&mut c, b"\r\n\r\n").await;
    assert!(
        head.starts_with(b"HTTP/1.1 101 "),
        "{}",
        String::from_utf8_lossy(&head)
    );
    for msg in ["hello", "again"] {
        c.write_all(msg.as_bytes()).await.unwrap();
        let back = ws::read_until(&mut c, msg.to_ascii_uppercase().as_bytes()).await;
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

/// A `101` switching to WebSocket without `Sec-WebSocket-Accept` is not
/// relayed: the client gets a 502, as from HAProxy 2.6 (which checks the
/// header's presence, not its value); with it, the 101 passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_101_without_accept_is_a_502() {
    let be = support::raw::RawBackend::start().await;
    let (_held, port) = hold_port();
    let _s = Sluice::start(&format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    server s1 {}
",
        be.addr
    ));
    be.answer(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    );
    let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let head = upgrade(&mut c).await;
    assert!(head.starts_with("HTTP/1.1 502 "), "{head}");

    be.answer(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: zz\r\n\r\n");
    let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let head = upgrade(&mut c).await;
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
}

async fn upgrade(c: &mut TcpStream) -> String {
    c.write_all(b"GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        .await
        .unwrap();
    String::from_utf8_lossy(&ws::read_until(c, b"\r\n\r\n").await).into_owned()
}
