//! The reference user's workflow: run the CouchDB config with a pidfile,
//! serve traffic, add a replica to the file, `kill -USR2 $(cat pidfile)`,
//! and see the new server in `show stat` (on the stats socket the operator
//! added) and on the stats page with the old counters intact.
//! `examples/couchdb/run.sh` does the same with real CouchDB-compatible
//! nodes (a weight change).

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::*;

fn couchdb_cfg(port: u16, servers: &[(&str, String)]) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/conf/couchdb.cfg");
    let mut text = std::fs::read_to_string(path).expect("read conf/couchdb.cfg");
    text = text.replace("localhost:8080", &format!("localhost:{port}"));
    // What the operator's init script passes as -p, here in the config, and
    // the runtime API the operator adds.
    text = text.replacen(
        "global\n",
        "global\npidfile @DIR@/sluice.pid\nstats socket @DIR@/stats.sock level admin\n",
        1,
    );
    for (from, to) in servers {
        text = text.replace(from, to);
    }
    text
}

/// The stats page CSV (`stats uri /haproxy?stats` comes from `defaults`).
async fn csv(addr: SocketAddr) -> Csv {
    let r = get(addr, "/haproxy?stats;csv").await;
    assert_eq!(r.status, 200);
    Csv::parse(&r.text())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usr2_from_the_pidfile_adds_a_replica_keeping_counters() {
    let master = Backend::start("couchdb1").await;
    let r1 = Backend::start("couchdb2").await;
    let r2 = Backend::start("couchdb3").await;
    let r3 = Backend::start("couchdb4").await;
    let (_hold, port) = hold_port();
    let base = vec![
        ("couchdb1:5984", master.hostport()),
        ("couchdb2:5984", r1.hostport()),
        ("couchdb3:5984", r2.hostport()),
    ];
    let s = Sluice::start(&couchdb_cfg(port, &base));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));

    for i in 0..10 {
        assert_eq!(get(addr, &format!("/db/doc{i}")).await.status, 200);
    }
    assert_eq!(request(addr, "PUT", "/db/new", b"{}").await.status, 200);
    let before = csv(addr).await;
    assert_eq!(before.num("slave_backend", "couchdb2", "stot"), 5);
    assert_eq!(before.num("master_backend", "couchdb1", "stot"), 1);

    // The operator adds a replica and reloads through the pidfile.
    let mut text = couchdb_cfg(port, &base);
    text.push_str(&format!(
        "server couchdb4 {} weight 1 maxconn 512 check\n",
        r3.hostport()
    ));
    let dir = s.path("");
    let text = text.replace("@DIR@", dir.to_str().unwrap().trim_end_matches('/'));
    std::fs::write(s.path("sluice.cfg"), text).unwrap();
    let pid = std::fs::read_to_string(s.path("sluice.pid")).unwrap();
    let st = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("kill -USR2 {}", pid.trim()))
        .status()
        .unwrap();
    assert!(st.success());

    let sock = s.stats_socket();
    let deadline = Instant::now() + Duration::from_secs(10);
    let after = loop {
        let c = show_stat(&sock).await;
        if c.try_row("slave_backend", "couchdb4").is_some() {
            break c;
        }
        assert!(Instant::now() < deadline, "couchdb4 never appeared");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Old counters intact, new server in place.
    assert_eq!(after.num("slave_backend", "couchdb2", "stot"), 5);
    assert_eq!(after.num("slave_backend", "couchdb3", "stot"), 5);
    assert_eq!(after.num("master_backend", "couchdb1", "stot"), 1);
    assert_eq!(after.num("slave_backend", "couchdb4", "stot"), 0);
    // The stats page says the same.
    let page = csv(addr).await;
    assert_eq!(page.num("slave_backend", "couchdb2", "stot"), 5);
    assert!(page.try_row("slave_backend", "couchdb4").is_some());
    let mut seen = Vec::new();
    for i in 0..6 {
        seen.push(get(addr, &format!("/db/after{i}")).await.backend());
    }
    assert!(seen.iter().any(|b| b == "couchdb4"), "{seen:?}");
    assert!(!seen.iter().any(|b| b == "couchdb1"), "{seen:?}");
}
