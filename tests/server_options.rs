//! Server options under live traffic against real servers on 127.0.0.1
//! (issue #5): a killed server stops costing 5xx once marked DOWN,
//! `on-marked-down shutdown-sessions` and `on-marked-up
//! shutdown-backup-sessions` cut sessions, `slowstart` ramps the weight
//! (`show stat` weight/throttle and the share of requests), `maxqueue`
//! turns a full server queue into HAProxy's 503, leastconn sends to the
//! idle server, `backup`/`option allbackups` in `show stat` act/bck.
//!
//! Server health is driven by a separate check target (`check port`)
//! whose HTTP answers the test switches, so a server's traffic port and
//! its health are controlled independently.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use support::*;

const DEADLINE: Duration = Duration::from_secs(10);

/// An `option httpchk` target answering 200 while healthy, 503 otherwise.
struct CheckTarget {
    port: u16,
    healthy: Arc<AtomicBool>,
}

impl CheckTarget {
    async fn start(healthy: bool) -> CheckTarget {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let flag = Arc::new(AtomicBool::new(healthy));
        let h = flag.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = l.accept().await else {
                    continue;
                };
                let h = h.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 2048];
                    let _ = s.read(&mut buf).await;
                    let reply: &[u8] = if h.load(SeqCst) {
                        b"HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n"
                    } else {
                        b"HTTP/1.0 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n"
                    };
                    let _ = s.write_all(reply).await;
                });
            }
        });
        CheckTarget {
            port,
            healthy: flag,
        }
    }

    fn set(&self, healthy: bool) {
        self.healthy.store(healthy, SeqCst);
    }
}

fn head(fe: &Listen) -> String {
    format!(
        "global
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s

frontend fe
    bind {fe}
    default_backend be
"
    )
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

async fn wait_field(sock: &Path, px: &str, sv: &str, field: &str, want: &str) {
    let (sock, px, sv, field) = (
        sock.to_path_buf(),
        px.to_string(),
        sv.to_string(),
        field.to_string(),
    );
    wait_until(DEADLINE, &format!("{px}/{sv} {field} == {want}"), || {
        let (sock, px, sv, field) = (sock.clone(), px.clone(), sv.clone(), field.clone());
        async move {
            let text = cli(&sock, "show stat").await;
            text.starts_with("# pxname,") && Csv::parse(&text).get(&px, &sv, &field) == want
        }
    })
    .await;
}

/// One request on a fresh connection; None when the connection ends
/// without a response.
async fn try_get(port: u16, path: &str) -> Option<Response> {
    let mut c = HttpConn::connect(addr(port)).await;
    c.raw(
        format!("GET {path} HTTP/1.1\r\nhost: t\r\n\r\n").as_bytes(),
        false,
    )
    .await
    .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_server_under_load_gives_no_5xx_once_marked_down() {
    let s1 = Backend::start("s1").await;
    let mut s2 = Backend::start("s2").await;
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "{}
backend be
    server s1 {} check inter 100ms rise 2 fall 2
    server s2 {} check inter 100ms rise 2 fall 2
",
        head(&fe),
        s1.hostport(),
        s2.hostport()
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    wait_field(&sock, "be", "s2", "check_status", "L4OK").await;
    let stop = Arc::new(AtomicBool::new(false));
    let load = |stop: Arc<AtomicBool>, n: usize| async move {
        let mut seen: Vec<(Instant, u16, String)> = Vec::new();
        let mut c = HttpConn::connect(addr(port)).await;
        while !stop.load(SeqCst) && seen.len() < n {
            if c.is_closed() {
                c = HttpConn::connect(addr(port)).await;
            }
            let at = Instant::now();
            let r = c.get("/").await;
            let backend = r.header("x-backend").unwrap_or("-").to_string();
            seen.push((at, r.status, backend));
        }
        seen
    };
    let loaders: Vec<_> = (0..3)
        .map(|_| tokio::spawn(load(stop.clone(), usize::MAX)))
        .collect();
    wait_until(DEADLINE, "load on s2", || async { s2.hits() > 20 }).await;
    s2.kill().await;
    wait_field(&sock, "be", "s2", "status", "DOWN").await;
    let down_at = Instant::now();
    // More clients arrive once s2 is DOWN, while the first ones go on
    // (those caught on s2 when it died wait out their retries).
    let late: Vec<_> = (0..3)
        .map(|_| tokio::spawn(load(Arc::new(AtomicBool::new(false)), 50)))
        .collect();
    let mut after = 0;
    for l in late {
        for (_, status, backend) in l.await.unwrap() {
            after += 1;
            assert_eq!((status, backend.as_str()), (200, "s1"), "a late client");
        }
    }
    stop.store(true, SeqCst);
    for l in loaders {
        for (at, status, backend) in l.await.unwrap() {
            if at >= down_at {
                after += 1;
                assert_eq!(
                    (status, backend.as_str()),
                    (200, "s1"),
                    "a request sent after s2 was marked DOWN"
                );
            }
        }
    }
    assert!(after >= 150, "the load went on after the DOWN ({after})");
}

/// `on-marked-down shutdown-sessions`: the session open on s1 ends when s1
/// is marked DOWN; s2 without the option keeps serving its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_sessions_cuts_open_sessions_of_a_server_marked_down() {
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let (c1, c2) = (
        CheckTarget::start(true).await,
        CheckTarget::start(true).await,
    );
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "{}
backend be
    balance first
    option httpchk GET /
    server s1 {} id 1 maxconn 1 check port {} inter 100ms rise 1 fall 1 on-marked-down shutdown-sessions
    server s2 {} id 2 maxconn 1 check port {} inter 100ms rise 1 fall 1
",
        head(&fe),
        s1.hostport(),
        c1.port,
        s2.hostport(),
        c2.port
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    wait_field(&sock, "be", "s1", "check_status", "L7OK").await;
    wait_field(&sock, "be", "s2", "check_status", "L7OK").await;
    s1.set_gated(true);
    s2.set_gated(true);
    // `first`: one request on each server.
    let r1 = tokio::spawn(try_get(port, "/one"));
    s1.wait_started("/one", DEADLINE).await;
    let r2 = tokio::spawn(try_get(port, "/two"));
    s2.wait_started("/two", DEADLINE).await;
    c1.set(false);
    c2.set(false);
    wait_field(&sock, "be", "s1", "status", "DOWN").await;
    wait_field(&sock, "be", "s2", "status", "DOWN").await;
    let r1 = within(DEADLINE, "s1's session is cut", r1).await.unwrap();
    assert!(
        r1.is_none(),
        "the client of s1 sees its connection closed: {r1:?}"
    );
    assert_eq!(s1.in_flight(), 1, "cut while the server still held it");
    let csv = show_stat(&sock).await;
    assert_eq!(csv.get("be", "s1", "srv_abrt"), "1");
    assert_eq!(csv.get("be", "s1", "scur"), "0");
    // s2 had no such option: its session goes on to the end.
    assert_eq!(csv.get("be", "s2", "scur"), "1");
    s2.release(1);
    let r2 = within(DEADLINE, "s2's answer", r2).await.unwrap();
    assert_eq!(
        r2.map(|r| (r.status, r.backend())),
        Some((200, "s2".into()))
    );
    s1.release(1);
}

/// `on-marked-up shutdown-backup-sessions`: when the active server comes
/// back UP, the sessions the backup server serves are cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_backup_sessions_when_the_active_server_comes_up() {
    let act = Backend::start("act").await;
    let bck = Backend::start("bck").await;
    let check = CheckTarget::start(false).await;
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "{}
backend be
    option httpchk GET /
    server act {} check port {} inter 100ms rise 1 fall 1 on-marked-up shutdown-backup-sessions
    server bck {} backup
",
        head(&fe),
        act.hostport(),
        check.port,
        bck.hostport()
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    wait_field(&sock, "be", "act", "status", "DOWN").await;
    bck.set_gated(true);
    let r = tokio::spawn(try_get(port, "/on-backup"));
    bck.wait_started("/on-backup", DEADLINE).await;
    check.set(true);
    wait_field(&sock, "be", "act", "status", "UP").await;
    let r = within(DEADLINE, "the backup's session is cut", r)
        .await
        .unwrap();
    assert!(r.is_none(), "the backup's client is cut off: {r:?}");
    assert_eq!(bck.in_flight(), 1, "cut while the backup still held it");
    bck.release(1);
    let r = get(addr(port), "/after").await;
    assert_eq!((r.status, r.backend()), (200, "act".to_string()));
}

/// `slowstart 4s`: a server back UP starts at 1/16 of its weight and ramps
/// up each second (HAProxy's eweight); `show stat` shows the ramped weight
/// and the throttle percentage, and it gets a small share of requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowstart_ramps_the_weight_of_a_server_coming_back() {
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let check = CheckTarget::start(true).await;
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "{}
backend be
    option httpchk GET /
    server s1 {} weight 100
    server s2 {} weight 100 check port {} inter 100ms rise 1 fall 1 slowstart 3s
",
        head(&fe),
        s1.hostport(),
        s2.hostport(),
        check.port
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    wait_field(&sock, "be", "s2", "check_status", "L7OK").await;
    // No slowstart at start-up (HAProxy neither).
    let csv = show_stat(&sock).await;
    assert_eq!(csv.get("be", "s2", "weight"), "100");
    assert_eq!(csv.get("be", "s2", "throttle"), "");
    check.set(false);
    wait_field(&sock, "be", "s2", "status", "DOWN").await;
    check.set(true);
    wait_field(&sock, "be", "s2", "status", "UP").await;
    let csv = show_stat(&sock).await;
    // ramp = (16 * elapsed + 3) / 3 for elapsed 0, 1, 2 s; weight =
    // ceil(100 * ramp / 16); throttle = (100 * 100 * ramp + 15) / 1600.
    let ramps = [1u32, 6, 11];
    let weights: Vec<String> = ramps
        .iter()
        .map(|r| ((100 * r).div_ceil(16)).to_string())
        .collect();
    let throttles: Vec<String> = ramps
        .iter()
        .map(|r| ((10_000 * r + 15) / 1600).to_string())
        .collect();
    let (w, t) = (
        csv.get("be", "s2", "weight"),
        csv.get("be", "s2", "throttle"),
    );
    let k = weights
        .iter()
        .position(|x| *x == w)
        .unwrap_or_else(|| panic!("weight {w} during the ramp"));
    assert_eq!(t, throttles[k], "throttle with weight {w}");
    assert_eq!(csv.get("be", "s2", "uweight"), "100");
    let before = (s1.hits(), s2.hits());
    let mut c = HttpConn::connect(addr(port)).await;
    for _ in 0..100 {
        assert_eq!(c.get("/").await.status, 200);
    }
    let ramped = s2.hits() - before.1;
    assert!(
        ramped <= 100 * 11 / 27 + 2,
        "s2 got {ramped} of 100 requests during its ramp"
    );
    // After the ramp: full weight, no throttle, an even share.
    wait_field(&sock, "be", "s2", "throttle", "").await;
    let csv = show_stat(&sock).await;
    assert_eq!(csv.get("be", "s2", "weight"), "100");
    let before = s2.hits();
    for _ in 0..100 {
        assert_eq!(c.get("/").await.status, 200);
    }
    let even = s2.hits() - before;
    assert!(
        (49..=51).contains(&even),
        "s2 got {even} of 100 after its ramp"
    );
}

/// `maxqueue 1` with a key that names the server (`balance uri`): one
/// request served, one queued, the next gets HAProxy's 503 at once (not
/// after `timeout queue`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maxqueue_full_gives_503_at_once() {
    let s1 = Backend::start("s1").await;
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "{}
    timeout queue 20s

backend be
    balance uri
    server s1 {} maxconn 1 maxqueue 1
",
        head(&fe),
        s1.hostport()
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    s1.set_gated(true);
    let first = tokio::spawn(try_get(port, "/k"));
    s1.wait_started("/k", DEADLINE).await;
    let second = tokio::spawn(try_get(port, "/k"));
    wait_field(&sock, "be", "s1", "qcur", "1").await;
    let started = Instant::now();
    let third = within(DEADLINE, "the third request", try_get(port, "/k"))
        .await
        .expect("a response");
    assert_haproxy_503(&third);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a full queue answers at once, not after timeout queue"
    );
    s1.release(2);
    for r in [first, second] {
        let r = within(DEADLINE, "queued answer", r).await.unwrap();
        assert_eq!(r.map(|r| r.status), Some(200));
    }
    assert_eq!(s1.hits(), 2);
}

/// leastconn sends new requests to the idle server while the other one
/// serves slow requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leastconn_prefers_the_idle_server_under_slow_requests() {
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "{}
backend be
    balance leastconn
    server s1 {}
    server s2 {}
",
        head(&fe),
        s1.hostport(),
        s2.hostport()
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    s1.set_gated(true);
    s2.set_gated(true);
    // Two slow requests, one per server (both idle: taken in turn).
    let slow: Vec<_> = (0..2)
        .map(|i| tokio::spawn(try_get(port, if i == 0 { "/slow0" } else { "/slow1" })))
        .collect();
    wait_until(DEADLINE, "both slow requests started", || async {
        s1.in_flight() + s2.in_flight() == 2
    })
    .await;
    assert_eq!((s1.in_flight(), s2.in_flight()), (1, 1));
    // s2's request ends: s2 is idle, s1 still busy; two more concurrent
    // slow requests load s1 twice as much as s2 would be.
    s2.set_gated(false);
    s2.release(1);
    // Idle for sluice too: its answer relayed, its slot given back.
    wait_field(&sock, "be", "s2", "scur", "0").await;
    let before = s1.hits();
    for _ in 0..10 {
        let r = get(addr(port), "/quick").await;
        assert_eq!((r.status, r.backend()), (200, "s2".to_string()));
    }
    assert_eq!(s1.hits(), before, "nothing more on the busy server");
    s1.release(1);
    for t in slow {
        let r = within(DEADLINE, "slow answer", t).await.unwrap();
        assert_eq!(r.map(|r| r.status), Some(200));
    }
}

/// `backup` servers: show stat's server rows say act 1/bck 0 or act 0/bck
/// 1; the BACKEND row counts the usable ones and shows the weight of the
/// servers taking the load (the first backup only, or all of them with
/// `option allbackups`), as HAProxy 2.6 does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_servers_and_allbackups_in_show_stat_and_traffic() {
    let b: Vec<Backend> = futures_join(["a1", "a2", "b1", "b2", "c1", "c2"]).await;
    let [fe, fe2] = [Listen::new(), Listen::new()];
    let (port, port2) = (fe.port(), fe2.port());
    let cfg = format!(
        "{}
frontend fe2
    bind {fe2}
    default_backend all

backend be
    server a1 {} weight 2
    server a2 {} weight 3
    server b1 {} weight 4 backup
    server b2 {} weight 5 backup

backend all
    option allbackups
    server c1 {} weight 4 backup
    server c2 {} weight 5 backup
",
        head(&fe),
        b[0].hostport(),
        b[1].hostport(),
        b[2].hostport(),
        b[3].hostport(),
        b[4].hostport(),
        b[5].hostport()
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    let csv = show_stat(&sock).await;
    let cols = |csv: &Csv, px: &str, sv: &str| ["weight", "act", "bck"].map(|f| csv.get(px, sv, f));
    assert_eq!(cols(&csv, "be", "a1"), ["2", "1", "0"]);
    assert_eq!(cols(&csv, "be", "b1"), ["4", "0", "1"]);
    assert_eq!(cols(&csv, "be", "BACKEND"), ["5", "2", "2"]);
    assert_eq!(cols(&csv, "all", "BACKEND"), ["9", "0", "2"]);
    for sv in ["a1", "a2"] {
        cli(&sock, &format!("disable server be/{sv}")).await;
    }
    let csv = show_stat(&sock).await;
    assert_eq!(
        cols(&csv, "be", "BACKEND"),
        ["4", "0", "2"],
        "first backup only"
    );
    for _ in 0..4 {
        let r = get(addr(port), "/").await;
        assert_eq!((r.status, r.backend()), (200, "b1".to_string()));
    }
    cli(&sock, "disable server be/b1").await;
    let csv = show_stat(&sock).await;
    assert_eq!(cols(&csv, "be", "BACKEND"), ["5", "0", "1"]);
    let r = get(addr(port), "/").await;
    assert_eq!(r.backend(), "b2");
    // allbackups: both backups share the load by weight.
    for _ in 0..9 {
        assert_eq!(get(addr(port2), "/").await.status, 200);
    }
    assert_eq!((b[4].hits(), b[5].hits()), (4, 5));
}

async fn futures_join<const N: usize>(names: [&str; N]) -> Vec<Backend> {
    let mut v = Vec::new();
    for n in names {
        v.push(Backend::start(n).await);
    }
    v
}

/// `minconn 2 maxconn 10` with `fullconn 100`: while the backend is far
/// from full load the server takes max(minconn, beconn × maxconn /
/// fullconn) = 2 requests at once; the third waits in the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minconn_and_fullconn_limit_a_lightly_loaded_server() {
    let s1 = Backend::start("s1").await;
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "{}
backend be
    fullconn 100
    server s1 {} minconn 2 maxconn 10
",
        head(&fe),
        s1.hostport()
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    s1.set_gated(true);
    let reqs: Vec<_> = (0..3)
        .map(|i| {
            tokio::spawn(try_get(
                port,
                if i == 0 {
                    "/a"
                } else if i == 1 {
                    "/b"
                } else {
                    "/c"
                },
            ))
        })
        .collect();
    wait_field(&sock, "be", "BACKEND", "qcur", "1").await;
    // The two admitted requests may still be on their way to the server.
    wait_until(DEADLINE, "two requests at the server", || async {
        s1.in_flight() == 2
    })
    .await;
    let csv = show_stat(&sock).await;
    assert_eq!(
        csv.get("be", "BACKEND", "qcur"),
        "1",
        "dynamic maxconn is minconn"
    );
    assert_eq!(csv.get("be", "s1", "slim"), "10");
    assert_eq!(csv.get("be", "BACKEND", "slim"), "100");
    s1.release(3);
    for r in reqs {
        let r = within(DEADLINE, "answer", r).await.unwrap();
        assert_eq!(r.map(|r| r.status), Some(200));
    }
    assert_eq!(s1.max_in_flight(), 2);
}

/// `mode tcp` (long-lived connections, the main use of the option):
/// `on-marked-down shutdown-sessions` closes the client's connection when
/// the server is marked DOWN; without it the connection stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_sessions_in_tcp_mode() {
    // An echo server.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let echo = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    let (c1, c2) = (
        CheckTarget::start(true).await,
        CheckTarget::start(true).await,
    );
    let (_hold, [p1, p2]) = hold_ports::<2>();
    let cfg = format!(
        "global
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode tcp
    timeout connect 2s
    timeout client 30s
    timeout server 30s

listen cut
    bind 127.0.0.1:{p1}
    option httpchk GET /
    server s {echo} check port {} inter 100ms rise 1 fall 1 on-marked-down shutdown-sessions

listen keep
    bind 127.0.0.1:{p2}
    option httpchk GET /
    server s {echo} check port {} inter 100ms rise 1 fall 1
",
        c1.port, c2.port
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    wait_field(&sock, "cut", "s", "check_status", "L7OK").await;
    wait_field(&sock, "keep", "s", "check_status", "L7OK").await;
    let mut conns = Vec::new();
    for p in [p1, p2] {
        let mut c = tokio::net::TcpStream::connect(addr(p)).await.unwrap();
        c.write_all(b"hi").await.unwrap();
        let mut buf = [0u8; 2];
        within(DEADLINE, "echo", c.read_exact(&mut buf))
            .await
            .unwrap();
        assert_eq!(&buf, b"hi");
        conns.push(c);
    }
    c1.set(false);
    c2.set(false);
    wait_field(&sock, "cut", "s", "status", "DOWN").await;
    wait_field(&sock, "keep", "s", "status", "DOWN").await;
    let mut buf = [0u8; 16];
    let n = within(
        DEADLINE,
        "the cut connection closes",
        conns[0].read(&mut buf),
    )
    .await;
    assert!(matches!(n, Ok(0) | Err(_)), "closed: {n:?}");
    assert_eq!(show_stat(&sock).await.get("cut", "s", "srv_abrt"), "1");
    // The other one still echoes.
    conns[1].write_all(b"yo").await.unwrap();
    let mut buf = [0u8; 2];
    within(DEADLINE, "echo", conns[1].read_exact(&mut buf))
        .await
        .unwrap();
    assert_eq!(&buf, b"yo");
}

/// A server that answers every request with the address it was reached
/// on (`<ip>:<port>` in the body), listening on 127.0.0.2.
async fn where_reached() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let at = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let body = s.local_addr().map(|a| a.to_string()).unwrap_or_default();
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
            });
        }
    });
    at
}

/// `server s 127.0.0.2` has no port: HAProxy connects to the port the
/// client connected to (here the frontend's own port, on another IP).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_without_port_takes_the_client_destination_port() {
    let srv = where_reached().await;
    let port = srv.port();
    let cfg = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\
         frontend fe\n    bind 127.0.0.1:{port}\n    default_backend be\n\
         backend be\n    server s 127.0.0.2\n"
    );
    let _s = Sluice::start(&cfg);
    for _ in 0..2 {
        let r = get(addr(port), "/").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.text(), format!("127.0.0.2:{port}"));
    }
}

/// `server s 0.0.0.0` in a forward proxy: the connection goes to the
/// destination the client asked for, here the one its PROXY header names,
/// on that destination's port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_0000_forwards_to_the_client_destination() {
    let srv = where_reached().await;
    let (_held, port) = hold_port();
    let cfg = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 5s\n    timeout server 5s\n\
         frontend fe\n    bind 127.0.0.1:{port} accept-proxy\n    default_backend be\n\
         backend be\n    server s 0.0.0.0\n"
    );
    let _s = Sluice::start(&cfg);
    let mut c = HttpConn::connect(addr(port)).await;
    let req = format!(
        "PROXY TCP4 192.0.2.7 127.0.0.2 40000 {}\r\nGET / HTTP/1.1\r\nhost: h\r\n\r\n",
        srv.port()
    );
    let r = c.raw(req.as_bytes(), false).await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), srv.to_string());
}
