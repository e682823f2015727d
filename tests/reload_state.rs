//! What a reload keeps for a server that stays (same backend, same name):
//! its health state and check counters (no return to INI, one check loop),
//! a MAINT or DRAIN state set over the CLI, its busy slots and its queue,
//! and its pooled idle connections; and what it does not keep: a server
//! whose address changed starts a fresh pool.

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::*;

/// `servers` are whole `server` lines (without indentation), `be_extra`
/// more lines of the backend.
fn cfg(port: u16, be_extra: &str, servers: &[String]) -> String {
    let mut c = format!(
        "{}    default_backend be\nbackend be\n{be_extra}",
        reload_test_head(port)
    );
    for s in servers {
        c.push_str(&format!("    {s}\n"));
    }
    c
}

/// Writes the new text over the running config and reloads through the
/// CLI, which answers once the new snapshot serves.
async fn reload(s: &Sluice, text: &str) -> String {
    let dir = s.path("");
    let dir = dir.to_str().unwrap().trim_end_matches('/');
    std::fs::write(s.path("sluice.cfg"), text.replace("@DIR@", dir)).unwrap();
    let reply = cli(&s.stats_socket(), "reload").await;
    assert!(reply.starts_with("Success=1\n"), "{reply}");
    reply
}

async fn wait_stat(sock: &Path, sv: &str, col: &str, want: &str) {
    let sock: PathBuf = sock.to_path_buf();
    let what = format!("be/{sv} {col} = {want}");
    wait_until(Duration::from_secs(10), &what, || {
        let sock = sock.clone();
        async move { show_stat(&sock).await.get("be", sv, col) == want }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_state_and_check_counters_survive_reloads() {
    let s1 = Backend::start("s1").await;
    let mut s2 = Backend::start("s2").await;
    let (_hold, port) = hold_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let (h1, h2) = (s1.hostport(), s2.hostport());
    let text = |w: u32| {
        cfg(
            port,
            "    option httpchk GET /chk\n",
            &[
                format!("server s1 {h1} weight {w} check inter 100ms rise 2 fall 2"),
                format!("server s2 {h2} check inter 100ms rise 2 fall 2"),
            ],
        )
    };
    let s = Sluice::start(&text(1));
    let sock = s.stats_socket();
    wait_stat(&sock, "s1", "status", "UP").await;
    s2.kill().await;
    wait_stat(&sock, "s2", "status", "DOWN").await;
    let before = show_stat(&sock).await;
    assert_eq!(before.num("be", "s2", "chkdown"), 1);
    let fails = before.num("be", "s2", "chkfail");
    assert!(fails >= 1, "chkfail {fails}");

    // Three reloads; right after them s2 is still DOWN with its counters
    // (a fresh state would be UP, or checking from INI).
    for w in [2, 3, 4] {
        reload(&s, &text(w)).await;
    }
    let after = show_stat(&sock).await;
    assert_eq!(after.get("be", "s2", "status"), "DOWN");
    assert_eq!(
        after.get("be", "s2", "check_status"),
        before.get("be", "s2", "check_status")
    );
    assert_ne!(after.get("be", "s2", "check_status"), "INI");
    assert_eq!(after.num("be", "s2", "chkdown"), 1);
    assert!(after.num("be", "s2", "chkfail") >= fails);
    assert_eq!(after.get("be", "s1", "status"), "UP");
    assert_eq!(after.num("be", "s1", "chkdown"), 0);
    assert_eq!(after.num("be", "s1", "weight"), 4);
    for i in 0..6 {
        assert_eq!(get(addr, &format!("/r{i}")).await.backend(), "s1");
    }

    // One check loop per server, not one per generation: over a measured
    // span, s1 gets at most one check per `inter` (plus the edges).
    let chk = |b: &Backend| {
        b.events()
            .iter()
            .filter(|e| matches!(e, Event::Start(_, p) if p == "/chk"))
            .count()
    };
    let (n0, t0) = (chk(&s1), Instant::now());
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let (n1, span) = (chk(&s1), t0.elapsed());
    let most = (span.as_millis() / 100) as usize + 2;
    assert!(n1 - n0 <= most, "{} checks in {span:?}", n1 - n0);
    assert!(n1 > n0, "s1 no longer checked after the reloads");

    // The kept check loop still runs: s2 comes back.
    s2.restart().await;
    wait_stat(&sock, "s2", "status", "UP").await;
    assert_eq!(show_stat(&sock).await.num("be", "s2", "chkdown"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maint_and_drain_set_over_the_cli_survive_a_reload() {
    let b = [
        Backend::start("s1").await,
        Backend::start("s2").await,
        Backend::start("s3").await,
    ];
    let (_hold, port) = hold_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let text = |w3: u32| {
        let lines: Vec<String> = b
            .iter()
            .map(|x| {
                let w = if x.name == "s3" { w3 } else { 1 };
                format!("server {} {} weight {w}", x.name, x.hostport())
            })
            .collect();
        cfg(port, "", &lines)
    };
    let s = Sluice::start(&text(1));
    let sock = s.stats_socket();
    assert_eq!(cli(&sock, "set server be/s1 state maint").await, "\n");
    assert_eq!(cli(&sock, "set server be/s2 state drain").await, "\n");
    let reply = reload(&s, &text(2)).await;
    assert!(
        reply.contains("server be/s3 modified: weight 1 -> 2"),
        "{reply}"
    );
    let csv = show_stat(&sock).await;
    assert_eq!(csv.get("be", "s1", "status"), "MAINT");
    assert_eq!(csv.get("be", "s2", "status"), "DRAIN");
    assert_eq!(csv.get("be", "s3", "status"), "no check");
    for i in 0..6 {
        assert_eq!(get(addr, &format!("/r{i}")).await.backend(), "s3");
    }
    assert_eq!((b[0].hits(), b[1].hits()), (0, 0));
    // Back to ready: traffic again.
    assert_eq!(cli(&sock, "set server be/s1 state ready").await, "\n");
    let mut seen = Vec::new();
    for i in 0..6 {
        seen.push(get(addr, &format!("/ready{i}")).await.backend());
    }
    assert!(seen.iter().any(|n| n == "s1"), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_servers_slot_and_queue_survive_a_reload() {
    let s1 = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let text = |w: u32| {
        cfg(
            port,
            "",
            &[format!("server s1 {} weight {w} maxconn 1", s1.hostport())],
        )
    };
    let s = Sluice::start(&text(1));
    let sock = s.stats_socket();
    s1.set_gated(true);
    let send = |path: &'static str| {
        tokio::spawn(async move { HttpConn::connect(addr).await.get(path).await })
    };
    let mut reqs = vec![send("/r0")];
    s1.wait_started("/r0", Duration::from_secs(10)).await;
    reqs.push(send("/r1"));
    wait_stat(&sock, "BACKEND", "qcur", "1").await;
    reqs.push(send("/r2"));
    wait_stat(&sock, "BACKEND", "qcur", "2").await;

    reload(&s, &text(2)).await;
    // The busy slot is still counted and the queue is still there: a new
    // request queues behind them instead of taking a "free" slot.
    let csv = show_stat(&sock).await;
    assert_eq!(csv.num("be", "s1", "scur"), 1);
    assert_eq!(csv.num("be", "BACKEND", "qcur"), 2);
    reqs.push(send("/r3"));
    wait_stat(&sock, "BACKEND", "qcur", "3").await;
    assert_eq!(s1.in_flight(), 1);

    s1.release(4);
    for r in reqs {
        let r = within(Duration::from_secs(10), "request", r).await.unwrap();
        assert_eq!((r.status, r.backend().as_str()), (200, "s1"));
    }
    assert_eq!(
        s1.max_in_flight(),
        1,
        "maxconn 1 exceeded across the reload"
    );
    let order: Vec<String> = s1
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Start(_, p) => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["/r0", "/r1", "/r2", "/r3"], "queue order");
    let csv = show_stat(&sock).await;
    assert_eq!(csv.num("be", "s1", "stot"), 4);
    assert_eq!(csv.num("be", "BACKEND", "qcur"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pooled_connections_are_reused_after_a_reload_and_renewed_on_a_new_address() {
    let a = Backend::start("a").await;
    let b = Backend::start("b").await;
    let (_hold, port) = hold_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let text = |to: &Backend, w: u32| {
        cfg(
            port,
            "    http-reuse always\n",
            &[format!("server s1 {} weight {w}", to.hostport())],
        )
    };
    let s = Sluice::start(&text(&a, 1));
    let sock = s.stats_socket();
    assert_eq!(get(addr, "/one").await.backend(), "a");
    wait_stat(&sock, "s1", "idle_conn_cur", "1").await;
    assert_eq!(show_stat(&sock).await.num("be", "s1", "connect"), 1);

    // Same address: the idle connection stays pooled and serves the next
    // request (no new connect).
    reload(&s, &text(&a, 2)).await;
    assert_eq!(show_stat(&sock).await.num("be", "s1", "idle_conn_cur"), 1);
    assert_eq!(get(addr, "/two").await.backend(), "a");
    let csv = show_stat(&sock).await;
    assert_eq!(
        csv.num("be", "s1", "connect"),
        1,
        "a new connection was made"
    );
    assert_eq!(csv.num("be", "s1", "reuse"), 1);

    // New address: a fresh pool; the old address gets nothing more.
    wait_stat(&sock, "s1", "idle_conn_cur", "1").await;
    let reply = reload(&s, &text(&b, 2)).await;
    assert!(
        reply.contains(&format!(
            "server be/s1 modified: address {} -> {}",
            a.addr, b.addr
        )),
        "{reply}"
    );
    assert_eq!(show_stat(&sock).await.num("be", "s1", "idle_conn_cur"), 0);
    for i in 0..3 {
        assert_eq!(get(addr, &format!("/new{i}")).await.backend(), "b");
        // The server connection goes back to the pool just after the
        // response: the next request must find it there.
        wait_stat(&sock, "s1", "idle_conn_cur", "1").await;
    }
    assert_eq!((a.hits(), b.hits()), (2, 3));
    let csv = show_stat(&sock).await;
    assert_eq!(csv.num("be", "s1", "connect"), 2);
    // Counters are the server's, kept across both reloads.
    assert_eq!(csv.num("be", "s1", "stot"), 5);
}
