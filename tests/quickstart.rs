//! `conf/quickstart.cfg` as the README runs it, and the command-line flags.

mod support;

use std::net::SocketAddr;
use std::path::Path;

use support::*;

const QUICKSTART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/conf/quickstart.cfg");

#[test]
fn quickstart_passes_check_mode() {
    let out = run_sluice(&["-c", "-f", QUICKSTART], None);
    assert_eq!(out.code(), Some(0), "stderr:\n{}", out.stderr);
    assert!(
        out.stdout
            .lines()
            .any(|l| l == "Configuration file is valid"),
        "stdout: {:?}",
        out.stdout
    );
    assert!(!out.stderr.contains("[ALERT]"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quickstart_serves_both_apps_alternately() {
    // Same file, ports chosen by the test through the environment overrides
    // the config documents (so a busy 8080 cannot break the suite).
    let (_hold, ports) = hold_ports::<3>();
    let dir = TempDir::new("qs");
    let sock = dir.join("sluice.sock");
    let addr = SocketAddr::from(([127, 0, 0, 1], ports[0]));
    let s = Sluice::builder_file(Path::new(QUICKSTART))
        .env("SLUICE_ADDR", &addr.to_string())
        .env("SLUICE_APP1", &format!("127.0.0.1:{}", ports[1]))
        .env("SLUICE_APP2", &format!("127.0.0.1:{}", ports[2]))
        .env("SLUICE_SOCK", sock.to_str().unwrap())
        .start();

    let mut bodies = Vec::new();
    let mut conn = HttpConn::connect(addr).await;
    for _ in 0..4 {
        let r = conn.get("/").await;
        assert_eq!(r.status, 200, "{}{}", r.head, r.text());
        assert_eq!(r.header("content-type"), Some("text/plain"));
        bodies.push(r.text());
    }
    for _ in 0..2 {
        bodies.push(get(addr, "/").await.text());
    }
    let want_a = ["hello from app1\n", "hello from app2\n"];
    let want_b = ["hello from app2\n", "hello from app1\n"];
    let first = if bodies[0] == want_a[0] {
        want_a
    } else {
        want_b
    };
    for (i, b) in bodies.iter().enumerate() {
        assert_eq!(b, first[i % 2], "response {i}: {bodies:?}");
    }

    // The tour of the README: stats page and stats socket.
    let r = get(addr, "/stats").await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap_or("")
            .starts_with("text/html")
    );
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.header_line, SHOW_STAT_HEADER);
    assert_eq!(
        csv.num("apps", "app1", "lbtot") + csv.num("apps", "app2", "lbtot"),
        6
    );
    assert_eq!(csv.get("apps", "app1", "status"), "UP");
}

#[test]
fn version_flag() {
    for flag in ["-v", "-vv"] {
        let out = run_sluice(&[flag], None);
        assert_eq!(out.code(), Some(0), "{flag}: stderr:\n{}", out.stderr);
        assert!(
            out.stdout.to_ascii_lowercase().contains("version"),
            "{flag}: stdout {:?}",
            out.stdout
        );
    }
}

#[test]
fn pidfile_flag_writes_the_pid() {
    let fe = Listen::new();
    let dir = TempDir::new("pid");
    let pidfile = dir.join("sluice.pid");
    let cfg = format!(
        "defaults\n    mode http\n    timeout connect 5s\n    timeout client 5s\n    timeout server 5s\n\
         frontend fe\n    bind {fe}\n    http-request return status 200 content-type text/plain string ok\n"
    );
    let s = Sluice::builder(&cfg)
        .arg("-p")
        .arg(pidfile.to_str().unwrap())
        .start();
    // Written once the listeners are bound (as HAProxy), so possibly just
    // after the port accepts; never seen half written.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let text = loop {
        match std::fs::read_to_string(&pidfile) {
            Ok(t) => break t,
            Err(_) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            Err(e) => panic!("no pid file: {e}"),
        }
    };
    assert_eq!(text, format!("{}\n", s.pid()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_request_return_answers_locally() {
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "defaults\n    mode http\n    timeout connect 5s\n    timeout client 5s\n    timeout server 5s\n\
         frontend fe\n    bind {fe}\n    \
         http-request return status 201 content-type text/plain string \"made here\\n\"\n"
    );
    let _s = Sluice::start(&cfg);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut conn = HttpConn::connect(addr).await;
    for _ in 0..3 {
        let r = conn.get("/x").await;
        assert_eq!(r.status, 201, "{}", r.head);
        assert_eq!(r.text(), "made here\n");
        assert_eq!(r.header("content-type"), Some("text/plain"));
        assert_eq!(r.header("content-length"), Some("10"));
    }
}
