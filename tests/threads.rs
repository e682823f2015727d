//! One runtime per thread (`nbthread`): client connections are dealt over
//! the threads, and each thread keeps its own idle server connections.
//! A thread with none takes another thread's, as HAProxy's threads do, so
//! spreading clients over threads opens no extra server connection.

mod support;

use std::time::Duration;

use support::raw::RawBackend;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_server_connection_serves_clients_of_every_thread() {
    let be = RawBackend::start().await;
    be.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&format!(
        "global
    nbthread 4
    stats socket @DIR@/stats.sock mode 600 level admin
defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
    http-reuse always
frontend fe
    bind {fe}
    default_backend be
backend be
    server s1 {}
",
        be.addr
    ));
    let sock = s.stats_socket();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    // Eight clients one after the other: each thread gets two of them.
    for i in 0..8 {
        let r = get(addr, &format!("/{i}")).await;
        assert_eq!(r.status, 200, "client {i}");
        wait_until(Duration::from_secs(5), "the server connection idle", || {
            let sock = sock.clone();
            async move { show_stat(&sock).await.num("be", "s1", "idle_conn_cur") >= 1 }
        })
        .await;
    }
    assert_eq!(be.accepted(), 1, "one server connection for all clients");
    // Every request went over it.
    let conns = be.take_conns();
    assert_eq!(conns.len(), 1);
    let text = String::from_utf8_lossy(&conns[0]).into_owned();
    assert_eq!(text.matches("GET /").count(), 8, "{text}");
}
