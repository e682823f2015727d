//! Reloads under load lose nothing: keep-alive and new-connection clients
//! and long requests run while the configuration is reloaded many times,
//! alternating two variants (a server added and removed, a weight changed,
//! an ACL changed). Zero failed requests, zero resets, every long request
//! completes, a WebSocket stays open and echoing throughout, every response
//! came from a server valid under a snapshot the request may have been
//! routed with, and `show stat` counters never go backwards (those of the
//! servers removed and added again too). `SLUICE_RELOADS` sets the number
//! of reloads (default 100, as the bench script `bench/reload_under_load.sh`).

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use support::*;

struct Servers {
    s1: Backend,
    s2: Backend,
    s3: Backend,
    a1: Backend,
    /// A WebSocket echo server (the `ws` backend, same in both variants).
    ws: SocketAddr,
}

/// Generation 1 and every odd one: variant A; even ones: variant B.
fn variant(port: u16, sv: &Servers, generation: u64) -> String {
    let a = generation % 2 == 1;
    let mut c = reload_test_head(port);
    // The ACL changes: /api goes to the api backend in A only.
    c.push_str(if a {
        "    acl is_api path_beg /api\n"
    } else {
        "    acl is_api path_beg /v2\n"
    });
    c.push_str(
        "    use_backend ws if { path_beg /ws }\n    use_backend api if is_api\n    default_backend be\nbackend be\n",
    );
    if a {
        c.push_str(&format!(
            "    server s1 {} weight 1 maxconn 4\n    server s2 {} weight 1 maxconn 4\n",
            sv.s1.hostport(),
            sv.s2.hostport()
        ));
    } else {
        c.push_str(&format!(
            "    server s1 {} weight 3 maxconn 4\n    server s3 {} weight 1 maxconn 4\n",
            sv.s1.hostport(),
            sv.s3.hostport()
        ));
    }
    c.push_str(&format!(
        "backend api\n    server a1 {}\nbackend ws\n    server w1 {}\n",
        sv.a1.hostport(),
        sv.ws
    ));
    c
}

/// The servers that may answer `path` under `generation`.
fn valid(generation: u64, path: &str) -> &'static [&'static str] {
    let a = generation % 2 == 1;
    match (a, path.starts_with("/api")) {
        (true, true) => &["a1"],
        (true, false) => &["s1", "s2"],
        (false, _) => &["s1", "s3"],
    }
}

#[derive(Default)]
struct Tally {
    ok: AtomicUsize,
    long_ok: AtomicUsize,
    failures: Mutex<Vec<String>>,
    resets: AtomicUsize,
}

struct Gen {
    /// Highest generation known applied (CLI reply received).
    applied: AtomicU64,
    /// Highest generation that may be applied (reload requested).
    pending: AtomicU64,
}

impl Tally {
    fn fail(&self, what: String) {
        let mut f = self.failures.lock().unwrap();
        if f.len() < 20 {
            f.push(what);
        } else if f.len() == 20 {
            f.push("...".into());
        }
    }
}

/// Checks one exchange; `a0` is the generation applied before sending.
fn check(
    t: &Tally,
    gens: &Gen,
    a0: u64,
    path: &str,
    r: std::io::Result<Response>,
    long: bool,
) -> bool {
    let p1 = gens.pending.load(SeqCst);
    match r {
        Err(e) => {
            if e.kind() == std::io::ErrorKind::ConnectionReset {
                t.resets.fetch_add(1, SeqCst);
            }
            t.fail(format!("{path}: {e}"));
            false
        }
        Ok(resp) if resp.status != 200 => {
            t.fail(format!("{path}: status {}\n{}", resp.status, resp.head));
            false
        }
        Ok(resp) => {
            let who = resp.header("x-backend").unwrap_or("").to_string();
            if !(a0..=p1).any(|g| valid(g, path).contains(&who.as_str())) {
                t.fail(format!(
                    "{path}: answered by {who}, valid under no generation in {a0}..={p1}"
                ));
                return false;
            }
            t.ok.fetch_add(1, SeqCst);
            if long {
                t.long_ok.fetch_add(1, SeqCst);
            }
            true
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reloads_under_load_lose_nothing() {
    let reloads: u64 = std::env::var("SLUICE_RELOADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let sv = Servers {
        s1: Backend::start("s1").await,
        s2: Backend::start("s2").await,
        s3: Backend::start("s3").await,
        a1: Backend::start("a1").await,
        ws: ws::echo_backend().await,
    };
    let (_hold, port) = hold_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let s = Sluice::start(&variant(port, &sv, 1));
    let sock = s.stats_socket();
    let tally = Arc::new(Tally::default());
    let gens = Arc::new(Gen {
        applied: AtomicU64::new(1),
        pending: AtomicU64::new(1),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();

    // Keep-alive clients.
    for k in 0..4 {
        let (t, g, stop) = (tally.clone(), gens.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut conn = HttpConn::connect(addr).await;
            let mut i = 0u64;
            while !stop.load(SeqCst) {
                let path = if i.is_multiple_of(3) {
                    format!("/api/k{k}/{i}")
                } else {
                    format!("/x/k{k}/{i}")
                };
                let a0 = g.applied.load(SeqCst);
                let r = within(REQ_DEADLINE, &path, conn.send("GET", &path, b"")).await;
                if !check(&t, &g, a0, &path, r, false) || conn.is_closed() {
                    conn = HttpConn::connect(addr).await;
                }
                i += 1;
            }
        }));
    }
    // New-connection clients.
    for k in 0..2 {
        let (t, g, stop) = (tally.clone(), gens.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = 0u64;
            while !stop.load(SeqCst) {
                let path = if i.is_multiple_of(2) {
                    format!("/api/n{k}/{i}")
                } else {
                    format!("/n{k}/{i}")
                };
                let a0 = g.applied.load(SeqCst);
                let mut conn = HttpConn::connect(addr).await;
                let req = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
                let r = within(REQ_DEADLINE, &path, conn.raw(req.as_bytes(), false)).await;
                check(&t, &g, a0, &path, r, false);
                i += 1;
            }
        }));
    }
    // Long requests, on keep-alive connections, across many reloads.
    for k in 0..3 {
        let (t, g, stop) = (tally.clone(), gens.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut conn = HttpConn::connect(addr).await;
            let mut i = 0u64;
            while !stop.load(SeqCst) {
                let path = if k == 2 {
                    format!("/api/sleep/1200/l{k}/{i}")
                } else {
                    format!("/sleep/1200/l{k}/{i}")
                };
                let a0 = g.applied.load(SeqCst);
                let r = within(REQ_DEADLINE, &path, conn.send("GET", &path, b"")).await;
                if !check(&t, &g, a0, &path, r, true) || conn.is_closed() {
                    conn = HttpConn::connect(addr).await;
                }
                i += 1;
            }
        }));
    }

    // A WebSocket open across every reload, exchanging messages all along.
    let ws_exchanges = Arc::new(AtomicUsize::new(0));
    {
        let (n, stop) = (ws_exchanges.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
            c.write_all(b"GET /ws/chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
                .await
                .unwrap();
            let head = ws::read_until(&mut c, b"\r\n\r\n").await;
            assert!(head.starts_with(b"HTTP/1.1 101 "), "no upgrade");
            let mut i = 0u64;
            while !stop.load(SeqCst) {
                let msg = format!("<msg {i}>");
                c.write_all(msg.as_bytes()).await.expect("websocket write");
                ws::read_until(&mut c, msg.to_ascii_uppercase().as_bytes()).await;
                n.fetch_add(1, SeqCst);
                i += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }));
    }

    // Reload loop: CLI `reload` mostly, SIGUSR2 every fifth time.
    let started = Instant::now();
    let mut last_req_tot = 0u64;
    let mut last_stot: Vec<(&str, u64)> = ["s1", "s2", "s3", "BACKEND"]
        .into_iter()
        .map(|sv| (sv, 0))
        .collect();
    for n in 1..=reloads {
        let next = 1 + n;
        let dir = s.path("");
        let dir = dir.to_str().unwrap().trim_end_matches('/');
        std::fs::write(
            s.path("sluice.cfg"),
            variant(port, &sv, next).replace("@DIR@", dir),
        )
        .unwrap();
        gens.pending.store(next, SeqCst);
        if n.is_multiple_of(5) {
            let st = std::process::Command::new("kill")
                .args(["-USR2", &s.pid().to_string()])
                .status()
                .unwrap();
            assert!(st.success());
            wait_until(Duration::from_secs(10), "reload by SIGUSR2", || {
                let sock = sock.clone();
                async move {
                    cli(&sock, "show info")
                        .await
                        .contains(&format!("\nGeneration: {next}\n"))
                }
            })
            .await;
        } else {
            let reply = cli(&sock, "reload").await;
            assert!(
                reply.starts_with(&format!("Success=1\ngeneration={next}\n")),
                "{reply}"
            );
        }
        gens.applied.store(next, SeqCst);
        // Counters never go backwards, including those of s2 and s3
        // across their removal and re-addition (a server that is not in
        // the running variant has no row; when it comes back its row
        // goes on from where it was).
        let stat = show_stat(&sock).await;
        let req_tot = stat.num("fe", "FRONTEND", "req_tot");
        assert!(
            req_tot >= last_req_tot,
            "req_tot {last_req_tot} -> {req_tot}"
        );
        last_req_tot = req_tot;
        for (sv, last) in last_stot.iter_mut() {
            let Some(row) = stat.try_row("be", sv) else {
                assert!(*sv == "s2" || *sv == "s3", "no row for be/{sv}");
                continue;
            };
            let now: u64 = row[stat.col("stot")].parse().unwrap();
            assert!(now >= *last, "be/{sv} stot {last} -> {now} at reload {n}");
            *last = now;
        }
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    // Let the long requests started under the last reloads finish.
    stop.store(true, SeqCst);
    for t in tasks {
        within(Duration::from_secs(30), "client task", t)
            .await
            .expect("client task panicked");
    }
    let failures = tally.failures.lock().unwrap().clone();
    let ok = tally.ok.load(SeqCst);
    let long_ok = tally.long_ok.load(SeqCst);
    eprintln!(
        "{reloads} reloads in {:?}: {ok} requests ok ({long_ok} long), {} failed, {} resets",
        started.elapsed(),
        failures.len(),
        tally.resets.load(SeqCst)
    );
    assert!(
        failures.is_empty(),
        "failed requests:\n{}",
        failures.join("\n")
    );
    assert_eq!(tally.resets.load(SeqCst), 0);
    assert!(long_ok >= 3, "long requests completed: {long_ok}");
    // The WebSocket lived through every reload and kept exchanging.
    let ws_n = ws_exchanges.load(SeqCst);
    assert!(ws_n > reloads as usize, "websocket exchanges: {ws_n}");
    assert!(ok > reloads as usize * 5, "too little load: {ok}");
    // The rows of s2 and s3 were seen with traffic across their removals.
    for (sv, last) in &last_stot {
        assert!(*last > 0, "be/{sv} stot never seen above 0");
    }
    // Servers of both variants served.
    for b in [&sv.s1, &sv.s2, &sv.s3, &sv.a1] {
        assert!(b.hits() > 0, "{} never served", b.name);
    }
    let report = cli(&sock, "show reload").await;
    assert!(
        report.contains(&format!("generation: {}", reloads + 1)),
        "{report}"
    );
}
