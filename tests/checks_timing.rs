//! When checks run and what `show stat` says of them (issue #5): the first
//! checks of many servers are spread over `inter` instead of all firing at
//! once; a DOWN server is checked every `downinter`; a server that accepts
//! and stays silent fails at `timeout check`, not at `inter`; `addr` sends
//! the check to another address; `check_duration`, `lastchg` and
//! `downtime` carry values that move as HAProxy's do.

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use support::*;

const DEADLINE: Duration = Duration::from_secs(10);

const HEAD: &str = "global
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
";

/// A listener recording when each connection arrives; with `answer` it
/// writes that and closes, else it holds the connection open, silent.
async fn recorder(
    ip: [u8; 4],
    port: u16,
    answer: Option<&'static str>,
) -> (SocketAddr, Arc<Mutex<Vec<Instant>>>) {
    let l = TcpListener::bind(SocketAddr::from((ip, port)))
        .await
        .unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            log.lock().unwrap().push(Instant::now());
            tokio::spawn(async move {
                match answer {
                    Some(a) => {
                        let _ = s.write_all(a.as_bytes()).await;
                    }
                    None => tokio::time::sleep(Duration::from_secs(30)).await,
                }
            });
        }
    });
    (addr, seen)
}

/// Ten servers checked every 2 s: their first checks arrive spread over
/// the interval (sluice offsets server i by inter*i/n), not as one herd.
/// The bounds are loose: the spread must cover at least half the
/// interval, and every first check must come within the first interval
/// plus a second of slack.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_checks_are_spread_over_the_interval() {
    let mut cfg = format!("{HEAD}\nbackend be\n");
    let mut seen = Vec::new();
    for i in 0..10 {
        let (addr, log) = recorder([127, 0, 0, 1], 0, None).await;
        cfg.push_str(&format!("    server s{i} {addr} check inter 2s\n"));
        seen.push(log);
    }
    let started = Instant::now();
    let _s = Sluice::start(&cfg);
    wait_until(DEADLINE, "a first check on every server", || async {
        seen.iter().all(|l| !l.lock().unwrap().is_empty())
    })
    .await;
    let firsts: Vec<Instant> = seen.iter().map(|l| l.lock().unwrap()[0]).collect();
    let (lo, hi) = (*firsts.iter().min().unwrap(), *firsts.iter().max().unwrap());
    let spread = hi - lo;
    assert!(
        spread >= Duration::from_millis(1000),
        "first checks within {spread:?} of each other: a herd"
    );
    assert!(
        hi - started < Duration::from_secs(2) + START_DEADLINE,
        "the last first check came {:?} after start",
        hi - started
    );
    assert!(
        spread < Duration::from_secs(3),
        "first checks spread over {spread:?}, more than the interval"
    );
    // Not bunched either: no 100 ms window holds more than 3 first checks.
    let mut t: Vec<Instant> = firsts.clone();
    t.sort();
    for w in t.windows(4) {
        assert!(
            w[3] - w[0] >= Duration::from_millis(100),
            "4 first checks within {:?}: {:?}",
            w[3] - w[0],
            t.iter().map(|x| *x - lo).collect::<Vec<_>>()
        );
    }
}

/// A server that is fully DOWN is checked every `downinter` (100 ms),
/// although `inter` and `fastinter` are 5 s: at least 5 checks arrive in
/// the second after it went DOWN.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_down_server_is_checked_at_downinter() {
    let (addr, seen) = recorder(
        [127, 0, 0, 1],
        0,
        Some("HTTP/1.0 500 Internal Server Error\r\n\r\n"),
    )
    .await;
    let s = Sluice::start(&format!(
        "{HEAD}
backend be
    option httpchk GET /
    server s {addr} check inter 5s fastinter 5s downinter 100ms rise 2 fall 1
"
    ));
    let sock = s.stats_socket();
    wait_check(&sock, "be", "s", "DOWN", "L7STS").await;
    let before = seen.lock().unwrap().len();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let during = seen.lock().unwrap().len() - before;
    assert!(
        (5..=12).contains(&during),
        "{during} checks in 1 s of a DOWN server with downinter 100ms"
    );
}

/// `timeout check` bounds the wait for the answer once connected: a
/// server that accepts and stays silent is `L7TOUT` after 200 ms although
/// `inter` is 3 s (check_duration says so), and a check that cannot
/// connect is `L4TOUT` after `timeout connect` (300 ms), the check_duration
/// of each near its timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_check_and_connect_bound_a_check_not_inter() {
    let (silent, _) = recorder([127, 0, 0, 1], 0, None).await;
    let (hole, _held, _sock) = black_hole();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock mode 600 level admin
defaults
    mode http
    timeout connect 300ms
    timeout client 30s
    timeout server 30s
    timeout check 200ms
backend be
    option httpchk GET /
    server silent {silent} check inter 3s fall 1
backend l4
    server hole {hole} check inter 3s fall 1
"
    ));
    let sock = s.stats_socket();
    let csv = wait_check(&sock, "be", "silent", "DOWN", "L7TOUT").await;
    assert_eq!(csv.get("be", "silent", "chkfail"), "1", "the first check");
    let ms = csv.num("be", "silent", "check_duration");
    assert!(
        (190..1500).contains(&ms),
        "L7TOUT after {ms} ms, timeout check is 200ms and inter 3s"
    );
    let csv = wait_check(&sock, "l4", "hole", "DOWN", "L4TOUT").await;
    let ms = csv.num("l4", "hole", "check_duration");
    assert!(
        (290..1500).contains(&ms),
        "L4TOUT after {ms} ms, timeout connect is 300ms"
    );
}

/// `check addr` sends the check to another address (same port): the
/// server's own address refuses, the check address listens; the server
/// is UP/L4OK and the checks arrive there, while the same server without
/// `addr` is DOWN/L4CON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_addr_sends_the_check_elsewhere() {
    let (at2, seen) = recorder([127, 0, 0, 2], 0, Some("")).await;
    let port = at2.port();
    // Nothing listens on 127.0.0.1 on that port.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    let s = Sluice::start(&format!(
        "{HEAD}
backend be
    server viaaddr 127.0.0.1:{port} check addr 127.0.0.2 inter 100ms rise 1 fall 1
    server plain 127.0.0.1:{port} check inter 100ms rise 1 fall 1
"
    ));
    let sock = s.stats_socket();
    wait_check(&sock, "be", "viaaddr", "UP", "L4OK").await;
    let csv = wait_check(&sock, "be", "plain", "DOWN", "L4CON").await;
    assert_eq!(csv.get("be", "plain", "last_chk"), "Connection refused");
    assert!(!seen.lock().unwrap().is_empty());
    // show stat still names the server's own address.
    assert_eq!(
        csv.get("be", "viaaddr", "addr"),
        format!("127.0.0.1:{port}")
    );
}

/// `lastchg` restarts at each UP/DOWN change and `downtime` sums the
/// seconds spent DOWN: a server DOWN for 2 s and back UP shows downtime
/// 2 (±1) and a fresh lastchg, and its downtime no longer grows once UP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lastchg_and_downtime_follow_the_changes() {
    let mut b = Backend::start("b").await;
    let s = Sluice::start(&format!(
        "{HEAD}
backend be
    server b {} check inter 100ms rise 1 fall 1
",
        b.hostport()
    ));
    let sock = s.stats_socket();
    let csv = wait_check(&sock, "be", "b", "UP", "L4OK").await;
    assert_eq!(csv.get("be", "b", "downtime"), "0");
    b.kill().await;
    wait_check(&sock, "be", "b", "DOWN", "L4CON").await;
    // Let two seconds of down time pass.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let csv = show_stat(&sock).await;
    let (down_while, chg_while) = (
        csv.num("be", "b", "downtime"),
        csv.num("be", "b", "lastchg"),
    );
    assert!((2..=3).contains(&down_while), "downtime {down_while}");
    assert!((2..=3).contains(&chg_while), "lastchg {chg_while}");
    b.restart().await;
    let csv = wait_check(&sock, "be", "b", "UP", "L4OK").await;
    let down = csv.num("be", "b", "downtime");
    assert!((2..=4).contains(&down), "downtime {down} after 2.1 s DOWN");
    assert!(csv.num("be", "b", "lastchg") <= 1, "lastchg restarts at UP");
    assert_eq!(csv.get("be", "b", "chkdown"), "1");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let csv = show_stat(&sock).await;
    assert_eq!(csv.num("be", "b", "downtime"), down, "UP: no more downtime");
    assert!(csv.num("be", "b", "lastchg") >= 1);
}
