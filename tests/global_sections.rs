//! Several `global` sections are merged in order, as HAProxy does: later
//! settings win, `stats socket` lines add up.

mod support;

use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_sections_merge() {
    let be = Backend::start("s1").await;
    let fe = Listen::new();
    let s = Sluice::start(&format!(
        "global
    maxconn 100
    stats socket @DIR@/one.sock level admin
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
global
    maxconn 200
    stats socket @DIR@/two.sock level user
frontend fe
    bind {fe}
    default_backend be
backend be
    server s1 {}
",
        be.hostport()
    ));
    for (sock, level) in [("one.sock", "admin"), ("two.sock", "user")] {
        let path = s.path(sock);
        let info = cli(&path, "show info").await;
        assert!(info.contains("\nMaxconn: 200\n"), "{sock}: {info}");
        assert_eq!(cli(&path, "show cli level").await, format!("{level}\n\n"));
    }
}
