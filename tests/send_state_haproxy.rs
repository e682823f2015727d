//! `http-check send-state`: the `X-Haproxy-Server-State` header of each
//! HTTP check, compared on the wire with haproxy 2.6 on the same
//! configuration (the first checks, in transition, and the next ones,
//! fully UP; weights of the backend's, the node's name, with and without
//! `http-check send` headers and body).

mod support;

use std::time::{Duration, Instant};

use support::haproxy::{Differences, Haproxy, available};
use support::raw::RawBackend;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_state_headers_match_haproxy() {
    if !available() {
        return;
    }
    // Per side: web/s1, web/s2, api/a1.
    let mut servers: [Vec<RawBackend>; 2] = Default::default();
    for side in &mut servers {
        for _ in 0..3 {
            side.push(RawBackend::start().await);
        }
    }
    let dir = TempDir::new("send-state");
    let cfg = |i: usize| {
        let s = &servers[i];
        format!(
            "global
    node lb-one
    stats socket {sock} mode 600 level admin
defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
backend web
    option httpchk GET /h
    http-check send-state
    server s1 {} check inter 200ms rise 2 fall 3 weight 3
    server s2 {} check inter 200ms weight 5 maxconn 10
    # Backups count in neither total.
    server b1 127.0.0.1:1 check inter 200ms backup
backend api
    option httpchk GET /health HTTP/1.1
    http-check send hdr Host api.example hdr X-A b body hi
    http-check send-state
    server a1 {} check inter 200ms
",
            s[0].addr,
            s[1].addr,
            s[2].addr,
            sock = dir.join(&format!("stats{i}.sock")).display(),
        )
    };
    let _hap = Haproxy::start("send-state", &cfg(0), &[]);
    let _sl = Sluice::start(&cfg(1));
    // The first three checks of each server.
    let end = Instant::now() + Duration::from_secs(15);
    let mut got: [Vec<Vec<String>>; 2] = Default::default();
    for (side, out) in servers.iter().zip(got.iter_mut()) {
        for srv in side {
            let mut reqs = Vec::new();
            while reqs.len() < 3 {
                assert!(Instant::now() < end, "checks did not come: {reqs:?}");
                reqs.extend(
                    srv.take_requests()
                        .iter()
                        // Each side's servers listen on ports of their own.
                        .map(|r| {
                            String::from_utf8_lossy(r)
                                .replace(&format!("port={}", srv.addr.port()), "port=<port>")
                        }),
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            reqs.truncate(3);
            out.push(reqs);
        }
    }
    let mut diff = Differences::default();
    for (n, name) in ["web/s1", "web/s2", "api/a1"].iter().enumerate() {
        diff.compare(name, &got[0][n], &got[1][n]);
    }
    diff.assert_none();
    // What was compared says the state: in transition, then UP.
    assert!(
        got[1][0][0].contains(
            "x-haproxy-server-state: UP 1/3; address=127.0.0.1; port=<port>; name=web/s1; node=lb-one; weight=3/8; scur=0/0; qcur=0\r\n"
        ),
        "{:?}",
        got[1][0]
    );
}

/// `sluice -c` says what `haproxy -c` says of `http-check send-state`.
#[test]
fn send_state_is_read_as_haproxy_reads_it() {
    if !available() {
        return;
    }
    let base = "defaults\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\n";
    let cases = [
        ("whole", "  option httpchk\n  http-check send-state\n"),
        ("argument", "  option httpchk\n  http-check send-state x\n"),
        ("without httpchk", "  http-check send-state\n"),
    ]
    .map(|(l, lines)| (l.to_string(), format!("{base}backend b\n{lines}")));
    support::haproxy::assert_check_agrees("send-state-c", cases, support::haproxy::first_alert);
}
