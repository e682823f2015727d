//! The legacy CouchDB config of reference §5.2, unchanged except for the
//! addresses: writes (POST/PUT/DELETE) go to the master, everything else
//! alternates strictly between the two replicas.

mod support;

use std::net::SocketAddr;

use support::*;

/// `conf/couchdb.cfg` (reference §5.2 verbatim) with `localhost:8080` and
/// `couchdbN:5984` replaced by the test's addresses; nothing else changes.
fn couchdb_cfg(port: u16, master: &str, r1: &str, r2: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/conf/couchdb.cfg");
    let mut text = std::fs::read_to_string(path).expect("read conf/couchdb.cfg");
    for (from, to) in [
        ("localhost:8080", format!("localhost:{port}")),
        ("couchdb1:5984", master.to_string()),
        ("couchdb2:5984", r1.to_string()),
        ("couchdb3:5984", r2.to_string()),
    ] {
        assert_eq!(text.matches(from).count(), 1, "{from} in conf/couchdb.cfg");
        text = text.replace(from, &to);
    }
    for kept in [
        "nbproc 2",
        "clitimeout 150000",
        "srvtimeout 30000",
        "contimeout 4000",
    ] {
        assert!(text.contains(kept), "conf/couchdb.cfg lost {kept:?}");
    }
    text
}

struct Setup {
    _sluice: Sluice,
    addr: SocketAddr,
    master: Backend,
    r1: Backend,
    r2: Backend,
}

async fn setup() -> Setup {
    let master = Backend::start("couchdb1").await;
    let r1 = Backend::start("couchdb2").await;
    let r2 = Backend::start("couchdb3").await;
    let (_hold, port) = hold_port();
    let cfg = couchdb_cfg(port, &master.hostport(), &r1.hostport(), &r2.hostport());
    let sluice = Sluice::start(&cfg);
    Setup {
        _sluice: sluice,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        master,
        r1,
        r2,
    }
}

fn assert_alternates(seen: &[String]) {
    for pair in seen.windows(2) {
        assert_ne!(pair[0], pair[1], "GETs must alternate strictly: {seen:?}");
    }
    for s in seen {
        assert!(
            s == "couchdb2" || s == "couchdb3",
            "GET reached {s}, not a replica: {seen:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_go_to_master() {
    let s = setup().await;
    let mut conn = HttpConn::connect(s.addr).await;
    for method in ["POST", "PUT", "DELETE"] {
        let body: &[u8] = if method == "DELETE" {
            b""
        } else {
            b"{\"doc\":1}"
        };
        let r = conn.req(method, "/db/doc1", body).await;
        assert_eq!(r.status, 200, "{method}: {}{}", r.head, r.text());
        assert_eq!(r.backend(), "couchdb1", "{method} must reach the master");
        assert_eq!(r.text(), "couchdb1\n");
        assert_eq!(r.header("x-method"), Some(method));
    }
    // Same on fresh connections.
    for method in ["POST", "PUT", "DELETE"] {
        let r = request(s.addr, method, "/db/doc2", b"x").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.backend(), "couchdb1", "{method} must reach the master");
    }
    assert_eq!(s.master.hits(), 6);
    assert_eq!(s.r1.hits() + s.r2.hits(), 0, "no write may reach a replica");
    // The request body was forwarded intact.
    assert_eq!(s.master.bodies()[0], b"{\"doc\":1}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_alternate_between_replicas_never_master() {
    let s = setup().await;

    // Over one keep-alive connection.
    let mut conn = HttpConn::connect(s.addr).await;
    let mut seen = Vec::new();
    for i in 0..10 {
        let r = conn.get(&format!("/db/doc{i}")).await;
        assert_eq!(r.status, 200, "{}{}", r.head, r.text());
        assert!(!conn.is_closed(), "sluice closed a keep-alive connection");
        seen.push(r.backend());
    }
    assert_alternates(&seen);

    // Over new connections: the alternation continues.
    for i in 0..10 {
        let r = get(s.addr, &format!("/db/new{i}")).await;
        assert_eq!(r.status, 200);
        seen.push(r.backend());
    }
    assert_alternates(&seen);

    // Methods other than POST/DELETE/PUT are reads too (exact, case-sensitive
    // match of the ACL).
    for method in ["HEAD", "OPTIONS", "COPY"] {
        let r = conn.req(method, "/db/x", b"").await;
        assert_eq!(r.status, 200, "{method}");
        seen.push(r.backend());
    }
    assert_alternates(&seen);

    assert_eq!(s.master.hits(), 0, "no read may reach the master");
    assert_eq!(s.r1.hits() + s.r2.hits(), 23);
    assert!(s.r1.hits().abs_diff(s.r2.hits()) <= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_do_not_disturb_read_alternation() {
    let s = setup().await;
    let mut conn = HttpConn::connect(s.addr).await;
    let mut reads = Vec::new();
    for i in 0..8 {
        let r = conn.get(&format!("/r{i}")).await;
        reads.push(r.backend());
        let w = conn.req("PUT", &format!("/w{i}"), b"v").await;
        assert_eq!(w.backend(), "couchdb1");
    }
    assert_alternates(&reads);
    assert_eq!(s.master.hits(), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_page_enabled_from_defaults() {
    let s = setup().await;
    let r = get(s.addr, "/haproxy?stats").await;
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(
        r.header("content-type")
            .unwrap_or("")
            .starts_with("text/html"),
        "{}",
        r.head
    );
    let r = get(s.addr, "/haproxy?stats;csv").await;
    assert_eq!(r.status, 200, "{}", r.head);
    let csv = Csv::parse(&r.text());
    assert_eq!(csv.header_line, SHOW_STAT_HEADER);
    csv.row("couchdb_lb", "FRONTEND");
    csv.row("slave_backend", "couchdb2");
    csv.row("slave_backend", "BACKEND");
    // Nothing was proxied: the stats page is answered by sluice itself.
    assert_eq!(s.master.hits() + s.r1.hits() + s.r2.hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_mode_accepts_with_warnings_only() {
    let master = Backend::start("couchdb1").await;
    let r1 = Backend::start("couchdb2").await;
    let r2 = Backend::start("couchdb3").await;
    let dir = TempDir::new("couch");
    let (_hold, port) = hold_port();
    let cfg = dir.write(
        "couchdb.cfg",
        &couchdb_cfg(port, &master.hostport(), &r1.hostport(), &r2.hostport()),
    );
    let out =
        tokio::task::spawn_blocking(move || run_sluice(&["-c", "-f", cfg.to_str().unwrap()], None))
            .await
            .unwrap();
    assert_eq!(
        out.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout
            .lines()
            .any(|l| l == "Configuration file is valid"),
        "stdout: {:?}",
        out.stdout
    );
    assert!(!out.stderr.contains("[ALERT]"), "stderr:\n{}", out.stderr);
    // clitimeout/srvtimeout/contimeout and nbproc are accepted with warnings.
    for kw in ["clitimeout", "srvtimeout", "contimeout", "nbproc"] {
        assert!(
            out.stderr
                .lines()
                .any(|l| l.starts_with("[WARNING]") && l.contains(kw)),
            "expected a [WARNING] about {kw}; stderr:\n{}",
            out.stderr
        );
    }
    assert!(
        out.stderr
            .contains("the 'clitimeout' directive is not supported anymore since HAProxy 2.1. Use 'timeout client'."),
        "stderr:\n{}",
        out.stderr
    );
    // A check run binds nothing and serves nothing.
    assert_eq!(master.hits() + r1.hits() + r2.hits(), 0);
}

#[test]
fn shipped_config_with_unresolvable_hosts_is_refused() {
    use std::net::ToSocketAddrs;
    if "couchdb1:5984".to_socket_addrs().is_ok() {
        eprintln!("couchdb1 resolves on this machine: nothing to check");
        return;
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/conf/couchdb.cfg");
    let out = run_sluice(&["-c", "-f", path], None);
    assert_eq!(out.code(), Some(1), "stderr:\n{}", out.stderr);
    assert!(
        out.stderr.contains("could not resolve address 'couchdb1'"),
        "stderr:\n{}",
        out.stderr
    );
}
