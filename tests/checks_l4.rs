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
