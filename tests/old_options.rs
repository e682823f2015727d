//! Options old configurations carry: the ones sluice needs no work for are
//! accepted with a warning that says why (so the file still starts), `option
//! forceclose` is HAProxy 1.x's `httpclose`, and `option tcpka` /
//! `clitcpka` / `srvtcpka` turn on TCP keep-alive probes on the sockets.

mod support;

use std::net::SocketAddr;

use support::*;

#[test]
fn old_options_start_with_warnings() {
    let dir = TempDir::new("oldopt");
    let cfg = dir.write(
        "old.cfg",
        "defaults
    mode http
    option contstats
    option http-pretend-keepalive
    option splice-auto
    option forceclose
    timeout connect 1s
    timeout client 1s
    timeout server 1s
frontend fe
    bind 127.0.0.1:8
    option abortonclose
    default_backend be
backend be
    server s1 127.0.0.1:9
",
    );
    let out = run_sluice(&["-c", "-f", cfg.to_str().unwrap()], None);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    for (line, text) in [
        (
            3,
            "'option contstats' is accepted and ignored: sluice updates its counters continuously.",
        ),
        (
            6,
            "'option forceclose' is deprecated in favor of 'option httpclose' (HAProxy 1.x); it is handled as 'option httpclose'.",
        ),
        (12, "'option abortonclose' is accepted and ignored"),
    ] {
        let needle = format!("old.cfg:{line}] : {text}");
        assert!(
            out.stderr.contains(&needle),
            "missing {needle:?} in\n{}",
            out.stderr
        );
    }
    // sluice splices on its own: the option asks for what is done anyway.
    assert!(!out.stderr.contains("splice-auto"), "{}", out.stderr);
    assert!(
        out.stdout.contains("Warnings were found."),
        "{}",
        out.stdout
    );
}

/// Keep-alive timers as `ss -o` shows them for the sockets of `port`.
fn keepalive_timers(filter: &str) -> usize {
    let out = std::process::Command::new("ss")
        .args(["-tnoH", "state", "established", filter])
        .output()
        .expect("ss (iproute2)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("timer:(keepalive"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcpka_sets_keepalive_on_client_and_server_sockets() {
    let be = Backend::start("s1").await;
    let be_port: u16 = be.hostport().rsplit(':').next().unwrap().parse().unwrap();
    let (_hold, ports) = hold_ports::<2>();
    let _s = Sluice::start(&format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend ka
    bind 127.0.0.1:{p0}
    option clitcpka
    default_backend be_ka
frontend plain
    bind 127.0.0.1:{p1}
    default_backend be_plain
backend be_ka
    option srvtcpka
    server s1 {hp}
backend be_plain
    server s1 {hp}
",
        p0 = ports[0],
        p1 = ports[1],
        hp = be.hostport(),
    ));
    let mut ka = HttpConn::connect(SocketAddr::from(([127, 0, 0, 1], ports[0]))).await;
    assert_eq!(ka.get("/").await.status, 200);
    // sluice's side of the client connection: source port = the frontend's.
    assert_eq!(keepalive_timers(&format!("( sport = :{} )", ports[0])), 1);
    // sluice's side of the pooled server connection: destination = backend.
    assert_eq!(keepalive_timers(&format!("( dport = :{be_port} )")), 1);
    // Without the options, no keep-alive timer.
    let mut plain = HttpConn::connect(SocketAddr::from(([127, 0, 0, 1], ports[1]))).await;
    assert_eq!(plain.get("/").await.status, 200);
    assert_eq!(keepalive_timers(&format!("( sport = :{} )", ports[1])), 0);
    assert_eq!(keepalive_timers(&format!("( dport = :{be_port} )")), 1);
}
