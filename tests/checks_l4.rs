//! Layer-4 checks end to end: a server whose accept queue is full never
//! completes the TCP handshake and goes DOWN with L4TOUT; one that refuses
//! goes DOWN with L4CON ("Connection refused"); neither gets traffic.

mod support;

use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l4tout_and_l4con() {
    let (hole, _held, _sock) = black_hole();
    // Held, never listening: refused all along, and no other test's
    // listener can get the number.
    let refused_port = Port::new();
    let refused = refused_port.addr();
    let live = Backend::start("ok").await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 300ms
    timeout client 30s
    timeout server 30s
frontend fe
    bind {fe}
    default_backend be
backend be
    server hole {hole} check inter 200ms fall 1 rise 1
    server refused {refused} check inter 200ms fall 1 rise 1
    server ok {} check inter 200ms fall 1 rise 1
",
        live.hostport()
    ));
    let sock = s.stats_socket();
    let csv = wait_check(&sock, "be", "hole", "DOWN", "L4TOUT").await;
    assert_eq!(csv.get("be", "hole", "check_desc"), "Layer4 timeout");
    let csv = wait_check(&sock, "be", "refused", "DOWN", "L4CON").await;
    assert_eq!(
        csv.get("be", "refused", "check_desc"),
        "Layer4 connection problem"
    );
    assert_eq!(csv.get("be", "refused", "last_chk"), "Connection refused");
    let csv = wait_check(&sock, "be", "ok", "UP", "L4OK").await;
    assert_eq!(csv.get("be", "BACKEND", "status"), "UP");
    // Only the live server gets traffic.
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    for i in 0..6 {
        let r = get(addr, &format!("/{i}")).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.backend(), "ok");
    }
}

/// `max-spread-checks`: with a 20 s interval, ten servers' first checks
/// would be spread over 20 s; bounded to 200 ms, every one of them has
/// been checked long before the first interval ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_spread_checks_bounds_the_first_checks() {
    let target = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = target.local_addr().unwrap().port();
    let _accepting = tokio::spawn(async move {
        while let Ok((s, _)) = target.accept().await {
            drop(s);
        }
    });
    let dir = TempDir::new("maxspread");
    let sock = dir.join("s.sock");
    let servers: String = (0..10)
        .map(|i| format!("    server s{i} 127.0.0.1:{port} check inter 20s\n"))
        .collect();
    let fe = Listen::new();
    let _sl = Sluice::start(&format!(
        "global\n    stats socket {} level admin\n    max-spread-checks 200\ndefaults\n    mode tcp\n    timeout client 5s\n    timeout server 5s\n    timeout connect 5s\nlisten l\n    bind {fe}\n{servers}",
        sock.display()
    ));
    wait_until(
        std::time::Duration::from_secs(5),
        "every server checked",
        || {
            let sock = sock.clone();
            async move {
                let csv = show_stat(&sock).await;
                (0..10).all(|i| csv.get("l", &format!("s{i}"), "check_status") == "L4OK")
            }
        },
    )
    .await;
}
