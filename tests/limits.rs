//! `tune.bufsize` / `tune.maxrewrite` bound the request head: larger heads
//! get HAProxy's 400, and raising the buffer lets them through.

mod support;

use std::net::SocketAddr;

use support::*;

fn cfg(port: u16, b: &Backend, tune: &str) -> String {
    format!(
        "global
{tune}
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    server s1 {}
",
        b.hostport()
    )
}

/// A GET whose head is exactly `len` bytes long.
fn head_of(len: usize) -> Vec<u8> {
    let start = b"GET / HTTP/1.1\r\nhost: x\r\nx-pad: ";
    let end = b"\r\n\r\n";
    let pad = len - start.len() - end.len();
    let mut v = start.to_vec();
    v.extend(std::iter::repeat_n(b'a', pad));
    v.extend_from_slice(end);
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_limit_follows_tune_bufsize() {
    let b = Backend::start("s1").await;
    let (_hold, ports) = hold_ports::<2>();
    let _small = Sluice::start(&cfg(ports[0], &b, "    maxconn 100"));
    let _large = Sluice::start(&cfg(
        ports[1],
        &b,
        "    tune.bufsize 32768\n    tune.maxrewrite 2048",
    ));
    let small = SocketAddr::from(([127, 0, 0, 1], ports[0]));
    let large = SocketAddr::from(([127, 0, 0, 1], ports[1]));

    let r = HttpConn::connect(small)
        .await
        .raw(&head_of(15360), false)
        .await
        .unwrap();
    assert_eq!(r.status, 200, "15360 bytes fit the default 16384 - 1024");
    let r = HttpConn::connect(small)
        .await
        .raw(&head_of(20000), false)
        .await
        .unwrap();
    assert_eq!(r.status, 400);
    let r = HttpConn::connect(large)
        .await
        .raw(&head_of(20000), false)
        .await
        .unwrap();
    assert_eq!(r.status, 200, "20000 bytes fit 32768 - 2048");
    let r = HttpConn::connect(large)
        .await
        .raw(&head_of(30721), false)
        .await
        .unwrap();
    assert_eq!(r.status, 400);
}
