//! `maxconn` on a frontend and in `global`: past the limit a new
//! connection is not accepted (nor reset): it waits in the kernel's accept
//! backlog and is served as soon as a slot frees. `show stat` never counts
//! more than the limit in `scur` and shows it as the frontend's `slim`.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use support::raw::read_until_quiet;
use support::*;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Two busy connections (their requests held by the gated backend) fill
/// the limit; a third one, on `third_port`, waits unanswered and unreset
/// until the first is done and closed, then is served.
async fn third_waits_in_backlog(s: &Sluice, b: &Backend, ports: [u16; 3], fes: [&str; 3]) {
    b.set_gated(true);
    let mut busy = Vec::new();
    for (i, p) in ports[..2].iter().enumerate() {
        let mut c = TcpStream::connect(addr(*p)).await.unwrap();
        c.write_all(format!("GET /busy{i} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        b.wait_started(&format!("/busy{i}"), Duration::from_secs(5))
            .await;
        busy.push(c);
    }
    // The kernel completes the handshake (the backlog), sluice does not
    // accept: the request stays unread.
    let mut third = TcpStream::connect(addr(ports[2])).await.unwrap();
    third
        .write_all(b"GET /third HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    // Let time pass: nothing may answer, close or reset the third one.
    let r = read_until_quiet(
        &mut third,
        Duration::from_millis(500),
        Duration::from_millis(500),
    )
    .await;
    assert!(
        r.bytes.is_empty() && r.closed_after.is_none(),
        "{}",
        r.text()
    );
    assert_eq!(
        b.in_flight(),
        2,
        "the third request did not reach the server"
    );
    let csv = show_stat(&s.stats_socket()).await;
    let scur: u64 = fes
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .iter()
        .map(|fe| csv.num(fe, "FRONTEND", "scur"))
        .sum();
    assert_eq!(scur, 2, "scur counts the two accepted connections only");

    // The first busy client gets its answer and leaves: a slot frees.
    b.release(1);
    let mut first = busy.remove(0);
    let r = read_until_quiet(
        &mut first,
        Duration::from_millis(300),
        Duration::from_secs(5),
    )
    .await;
    assert!(r.text().starts_with("HTTP/1.1 200 OK\r\n"), "{}", r.text());
    drop(first);
    b.wait_started("/third", Duration::from_secs(5)).await;
    b.release(2);
    let r = read_until_quiet(
        &mut third,
        Duration::from_millis(300),
        Duration::from_secs(5),
    )
    .await;
    assert!(r.text().starts_with("HTTP/1.1 200 OK\r\n"), "{}", r.text());
    assert!(r.closed_after.is_none(), "served with keep-alive");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frontend_maxconn_keeps_excess_in_backlog() {
    let b = Backend::start("s1").await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
frontend fe
    bind {fe}
    maxconn 2
    default_backend be
backend be
    server s1 {}
",
        b.hostport()
    ));
    third_waits_in_backlog(&s, &b, [port; 3], ["fe"; 3]).await;
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.num("fe", "FRONTEND", "slim"), 2);
    assert_eq!(csv.num("fe", "FRONTEND", "smax"), 2, "never more than 2");
}

/// `global maxconn 2` caps the process across frontends (the stats socket
/// has its own limit), and is each frontend's default `slim`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_maxconn_caps_all_frontends() {
    let b = Backend::start("s1").await;
    let (fe_p1, fe_p2) = (Listen::new(), Listen::new());
    let (p1, p2) = (fe_p1.port(), fe_p2.port());
    let s = Sluice::start(&format!(
        "global
    maxconn 2
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
frontend fe1
    bind {fe_p1}
    default_backend be
frontend fe2
    bind {fe_p2}
    default_backend be
backend be
    server s1 {}
",
        b.hostport()
    ));
    third_waits_in_backlog(&s, &b, [p1, p2, p1], ["fe1", "fe2", "fe1"]).await;
    let csv = show_stat(&s.stats_socket()).await;
    for fe in ["fe1", "fe2"] {
        assert_eq!(csv.num(fe, "FRONTEND", "slim"), 2, "{fe}");
    }
    let info = cli(&s.stats_socket(), "show info").await;
    assert!(info.contains("\nMaxconn: 2\n"), "{info}");
}

/// An idle listener holds no slot: with `global maxconn 1` and two
/// frontends, consecutive connections to the same frontend are served
/// (an accept loop that took the process's only slot before a connection
/// arrived would leave the other frontend waiting forever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_listeners_hold_no_slot() {
    let b = Backend::start("s1").await;
    let (fe_p1, fe_p2) = (Listen::new(), Listen::new());
    let (p1, p2) = (fe_p1.port(), fe_p2.port());
    let _s = Sluice::start(&format!(
        "global
    maxconn 1
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
frontend fe1
    bind {fe_p1}
    default_backend be
frontend fe2
    bind {fe_p2}
    default_backend be
backend be
    server s1 {}
",
        b.hostport()
    ));
    for p in [p1, p1, p2, p2, p1, p2, p2, p1, p1] {
        let r = within(
            Duration::from_secs(3),
            "a request with the only slot free",
            async {
                let mut c = HttpConn::connect(addr(p)).await;
                c.raw(
                    b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                    false,
                )
                .await
            },
        )
        .await
        .unwrap();
        assert_eq!(r.status, 200);
    }
}

/// `set maxconn frontend` and `set maxconn global` at run time, with
/// HAProxy 2.6's replies: the frontend's `slim` and `show info` Maxconn
/// follow (Hard_maxconn stays), a lowered frontend limit holds new
/// connections in the backlog, and raising it lets them in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maxconn_changed_at_run_time() {
    let b = Backend::start("s1").await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&format!(
        "global
    maxconn 100
    stats socket @DIR@/s.sock level admin
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind {fe}
    maxconn 50
    default_backend be
backend be
    server s1 {}
",
        b.hostport()
    ));
    let sock = s.stats_socket();
    assert_eq!(cli(&sock, "set maxconn frontend fe 1").await, "\n");
    assert_eq!(cli(&sock, "set maxconn global 20").await, "\n");
    assert_eq!(
        cli(&sock, "set maxconn global 200").await,
        "Value out of range.\n\n"
    );
    assert_eq!(
        cli(&sock, "set maxconn frontend nofe 3").await,
        "No such frontend.\n\n"
    );
    assert_eq!(show_stat(&sock).await.get("fe", "FRONTEND", "slim"), "1");
    let info = cli(&sock, "show info").await;
    assert!(
        info.contains("\nMaxconn: 20\nHard_maxconn: 100\n"),
        "{info}"
    );

    // One busy connection fills the lowered limit: the next one waits.
    b.set_gated(true);
    let mut busy = TcpStream::connect(addr(port)).await.unwrap();
    busy.write_all(b"GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    b.wait_started("/busy", Duration::from_secs(5)).await;
    let mut next = TcpStream::connect(addr(port)).await.unwrap();
    next.write_all(b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let r = read_until_quiet(
        &mut next,
        Duration::from_millis(400),
        Duration::from_millis(400),
    )
    .await;
    assert!(r.bytes.is_empty(), "{}", r.text());
    assert_eq!(b.in_flight(), 1);
    // Raised again: it is accepted and served (the backend still gated
    // for /busy, released for everything).
    assert_eq!(cli(&sock, "set maxconn frontend fe 5").await, "\n");
    b.wait_started("/next", Duration::from_secs(5)).await;
    b.set_gated(false);
    b.release(2);
    let r = read_until_quiet(
        &mut next,
        Duration::from_secs(5),
        Duration::from_millis(200),
    )
    .await;
    assert!(r.text().starts_with("HTTP/1.1 200"), "{}", r.text());
    assert_eq!(show_stat(&sock).await.get("fe", "FRONTEND", "slim"), "5");
}

/// `bind ... maxconn 2`: that listener serves two connections at once, the
/// third waits in its backlog until one closes, as with a frontend's
/// `maxconn`; the frontend's other listener is not limited by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bind_maxconn_keeps_excess_in_that_listeners_backlog() {
    let b = Backend::start("s1").await;
    let (limited, free) = (Listen::new(), Listen::new());
    let port = limited.port();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
frontend fe
    bind {limited} maxconn 2
    bind {free}
    default_backend be
backend be
    server s1 {}
",
        b.hostport()
    ));
    // The unlimited listener serves while nothing is held.
    let r = get(free.addr(), "/free").await;
    assert_eq!(r.status, 200);
    third_waits_in_backlog(&s, &b, [port; 3], ["fe"; 3]).await;
}
