//! Reload without restart (SIGUSR2, SIGHUP, CLI `reload`): a valid config
//! is applied with counters, health and open listeners kept, from files or
//! a directory; an invalid one (errors, or a port that cannot be bound)
//! changes nothing and says why, on the CLI and in the log. `show reload`
//! names what changed. (What servers keep: tests/reload_state.rs.)

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::*;

fn cfg(port: u16, servers: &[(&Backend, u32)], extra_bind: Option<u16>) -> String {
    let mut c = format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:{port}
"
    );
    if let Some(p) = extra_bind {
        c.push_str(&format!("    bind 127.0.0.1:{p}\n"));
    }
    c.push_str("    default_backend be\nbackend be\n");
    for (b, w) in servers {
        c.push_str(&format!(
            "    server {} {} weight {w}\n",
            b.name,
            b.hostport()
        ));
    }
    c
}

/// Replaces the running config file (with `@DIR@` filled in as the
/// harness does).
fn rewrite(s: &Sluice, text: &str) {
    let dir = s.path("");
    let dir = dir.to_str().unwrap().trim_end_matches('/');
    std::fs::write(s.path("sluice.cfg"), text.replace("@DIR@", dir)).unwrap();
}

fn signal(pid: u32, sig: &str) {
    let st = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(st.success(), "kill -{sig} {pid}");
}

/// Polls `show info` until `Generation` reaches `g`.
async fn wait_generation(sock: &std::path::Path, g: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = cli(sock, "show info").await;
        let now = info
            .lines()
            .find_map(|l| l.strip_prefix("Generation: "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        if now >= g {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "generation stayed at {now}; info:\n{info}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usr2_reload_adds_a_server_and_keeps_counters() {
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let (_hold, port) = hold_port();
    let s = Sluice::start(&cfg(port, &[(&s1, 1)], None));
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    // A keep-alive connection opened before the reload.
    let mut conn = HttpConn::connect(addr).await;
    for i in 0..5 {
        assert_eq!(conn.get(&format!("/a{i}")).await.backend(), "s1");
    }
    let before = show_stat(&sock).await;
    assert_eq!(before.num("be", "s1", "stot"), 5);

    rewrite(&s, &cfg(port, &[(&s1, 1), (&s2, 1)], None));
    signal(s.pid(), "USR2");
    wait_generation(&sock, 2).await;

    // The same keep-alive connection now sees both servers.
    let mut seen = Vec::new();
    for i in 0..4 {
        seen.push(conn.get(&format!("/b{i}")).await.backend());
    }
    assert!(
        seen.contains(&"s1".to_string()) && seen.contains(&"s2".to_string()),
        "{seen:?}"
    );
    let after = show_stat(&sock).await;
    // Counters did not go backwards: s1 kept its 5 sessions.
    assert_eq!(after.num("be", "s1", "stot"), 5 + 2);
    assert_eq!(after.num("be", "s2", "stot"), 2);
    assert!(after.num("fe", "FRONTEND", "req_tot") >= 9);
    let report = cli(&sock, "show reload").await;
    assert!(report.contains("generation: 2"), "{report}");
    assert!(report.contains("server be/s2 added"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_config_changes_nothing_and_cli_reload_says_why() {
    let s1 = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let s = Sluice::start(&cfg(port, &[(&s1, 1)], None));
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(get(addr, "/").await.status, 200);

    let mut broken = cfg(port, &[(&s1, 1)], None);
    broken.push_str("    sever s9 127.0.0.1:1\n");
    rewrite(&s, &broken);
    let reply = cli(&sock, "reload").await;
    assert!(reply.starts_with("Success=0\n"), "{reply}");
    assert!(
        reply.contains("parsing ["),
        "errors carry file:line: {reply}"
    );
    assert!(
        reply.contains("sluice.cfg:13] : unknown keyword 'sever'"),
        "{reply}"
    );
    // Still serving the old configuration.
    assert_eq!(get(addr, "/").await.status, 200);
    let info = cli(&sock, "show info").await;
    assert!(info.contains("\nGeneration: 1\n"), "{info}");
    assert!(info.contains("\nLast_reload_status: failed\n"), "{info}");

    // A good config through the CLI.
    rewrite(&s, &cfg(port, &[(&s1, 2)], None));
    let reply = cli(&sock, "reload").await;
    assert!(reply.starts_with("Success=1\ngeneration=2\n"), "{reply}");
    assert!(
        reply.contains("server be/s1 modified: weight 1 -> 2"),
        "{reply}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hup_reload_opens_and_closes_listeners() {
    let s1 = Backend::start("s1").await;
    let (_hold, ports) = hold_ports::<2>();
    let (p1, p2) = (ports[0], ports[1]);
    let s = Sluice::start(&cfg(p1, &[(&s1, 1)], None));
    let sock = s.stats_socket();
    let a1 = SocketAddr::from(([127, 0, 0, 1], p1));
    let a2 = SocketAddr::from(([127, 0, 0, 1], p2));
    // A connection that stays open across both reloads.
    let mut kept = HttpConn::connect(a1).await;
    assert_eq!(kept.get("/").await.status, 200);

    rewrite(&s, &cfg(p1, &[(&s1, 1)], Some(p2)));
    signal(s.pid(), "HUP");
    wait_generation(&sock, 2).await;
    assert_eq!(get(a2, "/new-port").await.status, 200);

    // Now move the frontend to the second port only: the first stops
    // accepting, but the connection already open on it is still served.
    rewrite(&s, &cfg(p2, &[(&s1, 1)], None));
    signal(s.pid(), "HUP");
    wait_generation(&sock, 3).await;
    assert_eq!(get(a2, "/still").await.status, 200);
    // The removed listener closes as soon as its accept loop sees the stop.
    wait_until(
        Duration::from_secs(10),
        &format!("port {p1} to refuse connections after it was removed"),
        || async { tokio::net::TcpStream::connect(a1).await.is_err() },
    )
    .await;
    assert_eq!(kept.get("/kept").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removed_server_is_drained_and_its_queue_redispatched() {
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let (_hold, port) = hold_port();
    let conf = |servers: &str| {
        format!(
            "{}    default_backend be\nbackend be\n{servers}",
            reload_test_head(port)
        )
    };
    let s = Sluice::start(&conf(&format!(
        "    server s1 {} maxconn 1\n",
        s1.hostport()
    )));
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    s1.set_gated(true);
    let mut reqs = Vec::new();
    for i in 0..3 {
        reqs.push(tokio::spawn(async move {
            HttpConn::connect(addr).await.get(&format!("/r{i}")).await
        }));
        if i == 0 {
            s1.wait_started("/r0", Duration::from_secs(10)).await;
        }
    }
    // Two requests wait in the queue behind s1's only slot.
    wait_until(Duration::from_secs(10), "two queued", || {
        let sock = sock.clone();
        async move { show_stat(&sock).await.num("be", "BACKEND", "qcur") == 2 }
    })
    .await;
    rewrite(&s, &conf(&format!("    server s2 {}\n", s2.hostport())));
    let reply = cli(&sock, "reload").await;
    assert!(reply.contains("server be/s1 removed"), "{reply}");
    // The queued requests go to s2 at once; s1's request is still running.
    let mut served = Vec::new();
    for r in reqs.drain(1..) {
        let r = within(Duration::from_secs(10), "queued request", r)
            .await
            .unwrap();
        assert_eq!(r.status, 200);
        served.push(r.backend());
    }
    assert_eq!(served, ["s2", "s2"]);
    assert_eq!(s1.in_flight(), 1);
    s1.release(1);
    let r = within(Duration::from_secs(10), "in-flight request", reqs.remove(0))
        .await
        .unwrap();
    assert_eq!((r.status, r.backend().as_str()), (200, "s1"));
    assert_eq!(s1.hits(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hard_stop_after_bounds_requests_of_a_replaced_generation() {
    let s1 = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let text = cfg(port, &[(&s1, 1)], None)
        .replace("level admin\n", "level admin\n    hard-stop-after 300ms\n");
    let s = Sluice::start(&text);
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    s1.set_gated(true);
    let stuck = tokio::spawn(async move {
        HttpConn::connect(addr)
            .await
            .send("GET", "/stuck", b"")
            .await
    });
    s1.wait_started("/stuck", Duration::from_secs(10)).await;
    // Without a reload, the request may take as long as it needs.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!stuck.is_finished());
    rewrite(&s, &text.replace("weight 1", "weight 2"));
    let t = Instant::now();
    assert!(cli(&sock, "reload").await.starts_with("Success=1"));
    let r = within(Duration::from_secs(10), "cut request", stuck)
        .await
        .unwrap();
    assert!(r.is_err(), "{r:?}");
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t.elapsed()
    );
    s1.set_gated(false);
    s1.release(1);
    assert_eq!(get(addr, "/new").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_reload_names_modified_proxies() {
    let s1 = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let base = cfg(port, &[(&s1, 1)], None);
    let s = Sluice::start(&base);
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(get(addr, "/admin").await.status, 200);

    // Rules and a timeout change; no proxy or server is added or removed.
    let changed = base
        .replace(
            "    default_backend be\n",
            "    acl is_admin path_beg /admin\n    http-request deny if is_admin\n    default_backend be\n",
        )
        .replace("backend be\n", "backend be\n    timeout server 7s\n");
    rewrite(&s, &changed);
    let reply = cli(&sock, "reload").await;
    assert!(reply.starts_with("Success=1\ngeneration=2\n"), "{reply}");
    assert_eq!(get(addr, "/admin").await.status, 403);
    let report = cli(&sock, "show reload").await;
    assert!(
        report.contains("  frontend fe modified: ACLs, http-request rules\n"),
        "{report}"
    );
    assert!(
        report.contains("  backend be modified: timeouts\n"),
        "{report}"
    );
    assert!(!report.contains("server "), "{report}");

    // Routing: a use_backend rule and a new backend it names.
    let routed = changed.replace(
        "    default_backend be\n",
        "    acl is_two path_beg /two\n    use_backend be2 if is_two\n    default_backend be\n",
    ) + &format!("backend be2\n    server s1 {}\n", s1.hostport());
    rewrite(&s, &routed);
    assert!(cli(&sock, "reload").await.starts_with("Success=1"));
    let report = cli(&sock, "show reload").await;
    assert!(report.contains("  backend be2 added\n"), "{report}");
    assert!(
        report.contains("  frontend fe modified: ACLs, use_backend rules\n"),
        "{report}"
    );
    assert!(!report.contains("backend be modified"), "{report}");
    assert_eq!(get(addr, "/two").await.status, 200);
}

/// `show reload` also lists what the reload did to the live state, marked
/// `state:`, relative to it rather than to the previous configuration: a
/// run-time weight given way to the configuration's, a removed server
/// back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_reload_lists_the_state_changes() {
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let (_hold, port) = hold_port();
    let both = cfg(port, &[(&s1, 1), (&s2, 1)], None);
    let s = Sluice::start(&both);
    let sock = s.stats_socket();

    // The configuration is unchanged; the weight set at run time is not.
    assert_eq!(cli(&sock, "set weight be/s1 7").await.trim(), "");
    let reply = cli(&sock, "reload").await;
    assert!(reply.starts_with("Success=1\ngeneration=2\n"), "{reply}");
    let report = cli(&sock, "show reload").await;
    assert!(
        report.contains("\n  state: server be/s1 weight 7 -> 1\n"),
        "{report}"
    );
    assert!(!report.contains("modified"), "{report}");

    // Removed, then back: the configuration says added, the state says
    // the server kept by name is back.
    rewrite(&s, &cfg(port, &[(&s1, 1)], None));
    assert!(cli(&sock, "reload").await.starts_with("Success=1"));
    let report = cli(&sock, "show reload").await;
    assert!(
        report.contains("  server be/s2 removed\n  state: server be/s2 removed\n"),
        "{report}"
    );
    // The commands after a `reload` on the same line run once it is
    // done, and see the new generation.
    rewrite(&s, &both);
    let reply = cli(&sock, "reload; show reload").await;
    let (first, report) = reply
        .split_once("\n\n")
        .unwrap_or_else(|| panic!("two answers: {reply:?}"));
    assert!(first.starts_with("Success=1\ngeneration=4\n"), "{reply}");
    assert!(report.contains("generation: 4"), "{reply}");
    assert!(
        report.contains("  server be/s2 added\n  state: server be/s2 added back\n"),
        "{report}"
    );
}

/// `-f <directory>`: a reload reads the directory again, so a file added
/// to it is loaded (here a `listen` section with its own port).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_of_a_directory_picks_up_a_new_file() {
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let (_hold, ports) = hold_ports::<2>();
    let confd = TempDir::new("confd");
    confd.write(
        "10-be.cfg",
        &format!("backend be\n    server s1 {}\n", s1.hostport()),
    );
    // The main file: global, defaults and the frontend; the backends are
    // in the directory.
    let main = cfg(ports[0], &[], None).replace("\nbackend be\n", "\n");
    let s = Sluice::builder(&main)
        .arg("-f")
        .arg(confd.path().to_str().unwrap())
        .start();
    let sock = s.stats_socket();
    assert_eq!(
        get(SocketAddr::from(([127, 0, 0, 1], ports[0])), "/")
            .await
            .backend(),
        "s1"
    );

    confd.write(
        "20-extra.cfg",
        &format!(
            "listen extra\n    bind 127.0.0.1:{}\n    server s2 {}\n",
            ports[1],
            s2.hostport()
        ),
    );
    signal(s.pid(), "USR2");
    wait_generation(&sock, 2).await;
    let extra = SocketAddr::from(([127, 0, 0, 1], ports[1]));
    assert_eq!(get(extra, "/new").await.backend(), "s2");
    let report = cli(&sock, "show reload").await;
    assert!(report.contains("  listen extra added\n"), "{report}");
    assert!(
        report.contains(&format!("  listener {extra} opened for frontend extra\n")),
        "{report}"
    );
}

/// A bad configuration sent by SIGUSR2 changes nothing; its errors go to
/// the log (stderr here) with their file:line, and `show info` says the
/// reload failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_reload_by_signal_logs_its_errors_and_changes_nothing() {
    let s1 = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let s = Sluice::start(&cfg(port, &[(&s1, 1)], None));
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));

    let mut broken = cfg(port, &[(&s1, 5)], None);
    broken.push_str("    sever s9 127.0.0.1:1\n");
    rewrite(&s, &broken);
    signal(s.pid(), "USR2");
    wait_until(Duration::from_secs(10), "the failed reload", || {
        let sock = sock.clone();
        async move {
            cli(&sock, "show info")
                .await
                .contains("\nLast_reload_status: failed\n")
        }
    })
    .await;
    let info = cli(&sock, "show info").await;
    assert!(info.contains("\nGeneration: 1\n"), "{info}");
    let err = s.stderr();
    let cfg_path = s.path("sluice.cfg");
    assert!(
        err.contains(&format!(
            "parsing [{}:13] : unknown keyword 'sever'",
            cfg_path.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("Reload refused: the running configuration is unchanged."),
        "{err}"
    );
    // The weight change in the same file was not applied either.
    assert_eq!(show_stat(&sock).await.num("be", "s1", "weight"), 1);
    assert_eq!(get(addr, "/").await.status, 200);
    let report = cli(&sock, "show reload").await;
    assert!(report.contains("last reload: failed"), "{report}");
    assert!(report.contains("unknown keyword 'sever'"), "{report}");
}

/// A reload whose new bind cannot be opened (the port is taken) is refused
/// as a whole, as HAProxy's new process would fail to start: nothing of
/// the new configuration applies and the old one keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_with_a_port_taken_is_refused_as_a_whole() {
    let s1 = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let s = Sluice::start(&cfg(port, &[(&s1, 1)], None));
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_port = taken.local_addr().unwrap().port();

    rewrite(&s, &cfg(port, &[(&s1, 4)], Some(taken_port)));
    let reply = cli(&sock, "reload").await;
    assert!(reply.starts_with("Success=0\n"), "{reply}");
    assert!(
        reply.contains("Starting frontend fe: cannot bind socket (Address already in use")
            && reply.contains(&format!("[127.0.0.1:{taken_port}]")),
        "{reply}"
    );
    let info = cli(&sock, "show info").await;
    assert!(info.contains("\nGeneration: 1\n"), "{info}");
    assert!(info.contains("\nLast_reload_status: failed\n"), "{info}");
    assert_eq!(show_stat(&sock).await.num("be", "s1", "weight"), 1);
    assert_eq!(get(addr, "/").await.status, 200);
    assert!(s.stderr().contains("cannot bind socket"), "{}", s.stderr());

    // Once the port is free, the same file reloads.
    drop(taken);
    let reply = cli(&sock, "reload").await;
    assert!(reply.starts_with("Success=1\ngeneration=2\n"), "{reply}");
    assert_eq!(show_stat(&sock).await.num("be", "s1", "weight"), 4);
    assert_eq!(
        get(SocketAddr::from(([127, 0, 0, 1], taken_port)), "/")
            .await
            .status,
        200
    );
}

/// Connections waiting in the kernel's accept backlog while a reload
/// happens (the frontend is at its `maxconn`, so none is accepted) are
/// accepted afterwards on the same socket: none is reset or lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_in_the_backlog_survive_a_reload() {
    let s1 = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let text = |w: u32| {
        cfg(port, &[(&s1, w)], None).replace(
            "    default_backend be\n",
            "    maxconn 1\n    default_backend be\n",
        )
    };
    let s = Sluice::start(&text(1));
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    s1.set_gated(true);
    let send = |path: String| {
        tokio::spawn(async move { HttpConn::connect(addr).await.send("GET", &path, b"").await })
    };
    let mut reqs = vec![send("/held".into())];
    s1.wait_started("/held", Duration::from_secs(10)).await;
    // Three more: connected by the kernel, not accepted by sluice.
    for i in 0..3 {
        reqs.push(send(format!("/backlog{i}")));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(s1.hits(), 1, "a backlog connection was served early");
    assert_eq!(show_stat(&sock).await.num("fe", "FRONTEND", "scur"), 1);

    rewrite(&s, &text(2));
    let reply = cli(&sock, "reload").await;
    assert!(reply.starts_with("Success=1\ngeneration=2\n"), "{reply}");
    s1.release(4);
    for r in reqs {
        let r = within(Duration::from_secs(10), "request", r)
            .await
            .unwrap()
            .expect("no reset, no loss");
        assert_eq!(r.status, 200);
    }
    assert_eq!(s1.hits(), 4);
}
