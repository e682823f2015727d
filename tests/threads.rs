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

/// A burst of connections, all arriving at once, is dealt over the
/// threads: the first thread awake would otherwise accept them all while
/// the other sleeps (every thread accepts on every listener), and serve
/// them alone. Each connection asks which thread serves it (`thread`),
/// the connections all held open until every answer is in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_connections_is_dealt_over_the_threads() {
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&format!(
        "global
    nbthread 2
defaults
    mode http
    timeout client 10s
frontend fe
    bind {fe}
    http-request return status 200 content-type text/plain lf-string \"%[thread]\"
"
    ));
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    const N: usize = 60;
    // All the connections at once: they wait together in the backlog.
    let connecting: Vec<_> = (0..N)
        .map(|_| tokio::spawn(tokio::net::TcpStream::connect(addr)))
        .collect();
    let mut conns = Vec::with_capacity(N);
    for c in connecting {
        conns.push(c.await.expect("task").expect("connect"));
    }
    let mut threads = [0usize; 2];
    for c in &mut conns {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        c.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .expect("send");
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !got.ends_with(b"\r\n\r\n0") && !got.ends_with(b"\r\n\r\n1") {
            let n = within(Duration::from_secs(5), "an answer", c.read(&mut buf))
                .await
                .expect("read");
            assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        threads[usize::from(got.ends_with(b"1"))] += 1;
    }
    // Dealt as sys::workers::deal deals them: the busier of two threads
    // serves at most one and an eighth more, plus two, than the other.
    let (least, most) = (threads[0].min(threads[1]), threads[0].max(threads[1]));
    assert!(
        most <= least + 2 + least / 8 + 1,
        "connections per thread: {threads:?}"
    );
}

/// With two workers each serving some of the requests, `show stat` counts
/// every request once on the frontend, the backend and the server: the
/// counters are kept per worker and summed when read.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_counters_of_every_worker_add_up() {
    let be = Backend::start("s1").await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&format!(
        "global
    nbthread 2
    stats socket @DIR@/stats.sock mode 600 level admin
defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {fe}
    http-response set-header x-thread %[thread]
    default_backend be
backend be
    server s1 {}
",
        be.hostport()
    ));
    let sock = s.stats_socket();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    // Batches of eight connections open at once, three requests each,
    // until both workers have answered (which worker accepts is the
    // kernel's choice, so there is no telling how many batches it takes).
    let mut threads = std::collections::BTreeSet::new();
    let mut sent = 0;
    for _ in 0..50 {
        let mut conns = Vec::new();
        for _ in 0..8 {
            conns.push(HttpConn::connect(addr).await);
        }
        for c in &mut conns {
            for i in 0..3 {
                let r = c.get(&format!("/{i}")).await;
                assert_eq!(r.status, 200);
                threads.insert(r.header("x-thread").unwrap_or("none").to_string());
                sent += 1;
            }
        }
        drop(conns);
        if threads.len() >= 2 {
            break;
        }
    }
    assert_eq!(
        threads.into_iter().collect::<Vec<_>>(),
        ["0", "1"],
        "both workers served"
    );
    // Every session over, so every request counted.
    wait_until(Duration::from_secs(5), "the sessions closed", || {
        let sock = sock.clone();
        async move { show_stat(&sock).await.num("fe", "FRONTEND", "scur") == 0 }
    })
    .await;
    let csv = show_stat(&sock).await;
    assert_eq!(be.hits(), sent as usize);
    for (px, sv, col) in [
        ("fe", "FRONTEND", "req_tot"),
        ("fe", "FRONTEND", "hrsp_2xx"),
        ("be", "BACKEND", "stot"),
        ("be", "BACKEND", "req_tot"),
        ("be", "BACKEND", "hrsp_2xx"),
        ("be", "s1", "stot"),
        ("be", "s1", "req_tot"),
        ("be", "s1", "hrsp_2xx"),
        ("be", "s1", "lbtot"),
    ] {
        assert_eq!(csv.num(px, sv, col), sent, "{px}/{sv} {col}");
    }
    // The rate's max counts one second of both workers together: at
    // least the busiest worker's share of one second, never more than
    // everything sent.
    let max = csv.num("fe", "FRONTEND", "req_rate_max");
    assert!((1..=sent).contains(&max), "req_rate_max {max} of {sent}");
}
