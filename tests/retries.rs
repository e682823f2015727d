//! Retries (`retries`, `option redispatch`, `retry-on`) and `timeout
//! connect` against real servers on 127.0.0.1: refused and silent servers,
//! servers answering 503 or nothing once, a pooled connection the server
//! closes. The counters are HAProxy 2.6.12's, checked by running these
//! tests with `SLUICE_TEST_BIN=/usr/sbin/haproxy` (the parts where sluice
//! chooses differently say so and are skipped there).

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::*;

fn is_haproxy() -> bool {
    bin().contains("haproxy")
}

/// A config with a stats socket, frontend `fe` on `port` and backend `be`
/// made of `be_lines`.
fn cfg(fe: &Listen, connect_timeout: &str, be_lines: &str) -> String {
    format!(
        "global
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode http
    timeout connect {connect_timeout}
    timeout client 5s
    timeout server 5s

frontend fe
    bind {fe}
    default_backend be

backend be
{be_lines}
"
    )
}

fn fe_addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// `name` of rows `be/<sv>` for each server and BACKEND, as numbers.
async fn counters(s: &Sluice, rows: &[&str], name: &str) -> Vec<u64> {
    let csv = show_stat(&s.stats_socket()).await;
    rows.iter().map(|sv| csv.num("be", sv, name)).collect()
}

/// Waits until no session is current on `rows` (the last response can
/// reach the client a moment before its session ends): a leaked slot or
/// session never gets there.
async fn wait_no_session(s: &Sluice, rows: &[&str]) {
    let rows: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
    wait_until(Duration::from_secs(5), "scur back to 0", || {
        let sock = s.stats_socket();
        let rows = rows.clone();
        async move {
            let csv = show_stat(&sock).await;
            rows.iter().all(|sv| csv.num("be", sv, "scur") == 0)
        }
    })
    .await;
}

/// An answer with `status`, numbered `n` (header `x-request`).
fn answer(status: u16, n: usize) -> Vec<u8> {
    format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nx-request: {n}\r\n\r\n").into_bytes()
}

/// Requests `raw` received since the last call.
fn requests(raw: &raw::RawBackend) -> usize {
    raw.take_requests().len()
}

/// A raw server answering `script` in order (an empty entry: close without
/// answering), then 200.
async fn scripted(script: &[Vec<u8>]) -> raw::RawBackend {
    let srv = raw::RawBackend::start().await;
    let refs: Vec<&[u8]> = script.iter().map(Vec::as_slice).collect();
    srv.script(&refs);
    srv
}

/// A port nothing listens on: connections are refused. Held (never
/// listening) until the test binary exits, so that no other test's
/// listener can get the number meanwhile.
fn closed_port() -> String {
    let held: &'static Port = Box::leak(Box::new(Port::new()));
    held.addr().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_connection_is_redispatched_to_a_live_server() {
    let live = Backend::start("live").await;
    let fe = Listen::new();
    let port = fe.port();
    let syslog = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    syslog
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let text = cfg(
        &fe,
        "1s",
        &format!(
            "    balance roundrobin\n    option redispatch\n    server dead {}\n    server live {}",
            closed_port(),
            live.hostport()
        ),
    )
    .replace(
        "    default_backend be",
        &format!(
            "    default_backend be\n    log {} local0\n    option httplog",
            syslog.local_addr().unwrap()
        ),
    );
    let s = Sluice::start(&text);
    // Round robin alternates, and the redispatch takes its turn: each
    // request goes to `dead` first and is redispatched at once (several
    // active servers, no hash), without HAProxy's turn-around pause.
    let t = Instant::now();
    for _ in 0..2 {
        let r = get(fe_addr(port), "/").await;
        assert_eq!((r.status, r.backend()), (200, "live".to_string()));
    }
    assert!(
        t.elapsed() < Duration::from_millis(900),
        "{:?}",
        t.elapsed()
    );
    let rows = ["dead", "live", "BACKEND"];
    assert_eq!(counters(&s, &rows, "wredis").await, [2, 0, 2]);
    assert_eq!(counters(&s, &rows, "wretr").await, [0, 0, 0]);
    assert_eq!(counters(&s, &rows, "econ").await, [0, 0, 0]);
    assert_eq!(counters(&s, &rows, "hrsp_2xx").await, [0, 2, 2]);
    assert_eq!(counters(&s, &rows, "lbtot").await, [2, 2, 4]);
    assert_eq!(counters(&s, &rows, "stot").await, [2, 2, 2]);
    // The slot on `dead` was given back: nothing is left current.
    wait_no_session(&s, &rows).await;
    assert_eq!(live.hits(), 2);
    // The log names the server that answered and shows the retry as
    // redispatched: `actconn/feconn/beconn/srv_conn/+retries`.
    let mut requests = 0;
    while requests < 2 {
        let mut buf = [0u8; 2048];
        let n = syslog.recv(&mut buf).expect("a log line");
        let line = String::from_utf8_lossy(&buf[..n]).into_owned();
        if line.contains("<BADREQ>") {
            continue; // the harness's readiness probe
        }
        requests += 1;
        assert!(line.contains(" fe be/live "), "{line}");
        assert!(line.contains("/+1 0/0 "), "{line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redispatch_leaves_the_failed_server_with_every_algorithm() {
    let live = Backend::start("live").await;
    for algo in ["first", "leastconn", "static-rr", "random"] {
        let fe = Listen::new();
        let port = fe.port();
        let s = Sluice::start(&cfg(
            &fe,
            "1s",
            &format!(
                "    balance {algo}\n    option redispatch\n    server dead {}\n    server live {}",
                closed_port(),
                live.hostport()
            ),
        ));
        for _ in 0..3 {
            let r = get(fe_addr(port), "/").await;
            assert_eq!((r.status, r.backend()), (200, "live".to_string()), "{algo}");
        }
        let rows = ["dead", "live", "BACKEND"];
        let picked_dead = counters(&s, &["dead"], "lbtot").await[0];
        if algo == "first" {
            assert_eq!(picked_dead, 3, "{algo}: the lowest id comes first");
        }
        let wredis = counters(&s, &rows, "wredis").await;
        assert_eq!(wredis, [picked_dead, 0, picked_dead], "{algo}");
        assert_eq!(counters(&s, &rows, "wretr").await, [0, 0, 0], "{algo}");
        wait_no_session(&s, &rows).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_servers_refusing_give_503_after_the_retries() {
    let fe = Listen::new();
    let port = fe.port();
    // Without redispatch: `retries 2` on the same server, each after the
    // turn-around pause of min(timeout connect, 1 s).
    let s = Sluice::start(&cfg(
        &fe,
        "150ms",
        &format!("    retries 2\n    server dead {}", closed_port()),
    ));
    let t = Instant::now();
    let r = get(fe_addr(port), "/").await;
    assert_haproxy_503(&r);
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    let rows = ["dead", "BACKEND"];
    assert_eq!(counters(&s, &rows, "wretr").await, [2, 2]);
    assert_eq!(counters(&s, &rows, "wredis").await, [0, 0]);
    // econ counts the request that failed, not each attempt.
    assert_eq!(counters(&s, &rows, "econ").await, [1, 1]);
    // Each attempt is a session on the server; the 503 is the backend's.
    assert_eq!(counters(&s, &rows, "stot").await, [3, 1]);
    assert_eq!(counters(&s, &rows, "hrsp_5xx").await, [0, 1]);
    wait_no_session(&s, &rows).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redispatch_among_refusing_servers_alternates_then_503() {
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(
        &fe,
        "1s",
        &format!(
            "    retries 2\n    option redispatch\n    server a {}\n    server b {}",
            closed_port(),
            closed_port()
        ),
    ));
    let r = get(fe_addr(port), "/").await;
    assert_haproxy_503(&r);
    let rows = ["a", "b", "BACKEND"];
    // a, then b, then a again: each retry goes to the other server.
    assert_eq!(counters(&s, &rows, "wredis").await, [1, 1, 2]);
    assert_eq!(counters(&s, &rows, "wretr").await, [0, 0, 0]);
    assert_eq!(counters(&s, &rows, "econ").await, [1, 0, 1]);
    assert_eq!(counters(&s, &rows, "lbtot").await, [2, 1, 3]);
    wait_no_session(&s, &rows).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_timeout_is_retried_then_503() {
    let (hole, _held, _sock) = black_hole();
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(
        &fe,
        "200ms",
        &format!("    retries 2\n    server silent {hole}"),
    ));
    let t = Instant::now();
    let r = get(fe_addr(port), "/").await;
    assert_haproxy_503(&r);
    // Three attempts, each cut by `timeout connect`.
    assert!(
        t.elapsed() >= Duration::from_millis(600),
        "{:?}",
        t.elapsed()
    );
    let rows = ["silent", "BACKEND"];
    assert_eq!(counters(&s, &rows, "wretr").await, [2, 2]);
    assert_eq!(counters(&s, &rows, "econ").await, [1, 1]);
    wait_no_session(&s, &rows).await;
}

/// A silent server and a live one behind a consistent URI hash, `retries
/// 2`, `option redispatch <interval>`: a request whose URI hashes to the
/// silent server is retried there until the interval says redispatch, and
/// the ring then goes around it. Returns the time that request took and
/// the (silent, live, BACKEND) wretr and wredis.
async fn silent_server_behind_a_hash(interval: &str) -> (Duration, [u64; 3], [u64; 3]) {
    let (hole, _held, _sock) = black_hole();
    let live = Backend::start("live").await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(
        &fe,
        "100ms",
        &format!(
            "    balance uri\n    hash-type consistent\n    retries 2\n    option redispatch {interval}\n    server silent {hole}\n    server live {}",
            live.hostport()
        ),
    ));
    let rows = ["silent", "live", "BACKEND"];
    for i in 0..64 {
        let t = Instant::now();
        let r = get(fe_addr(port), &format!("/k{i}")).await;
        let took = t.elapsed();
        assert_eq!((r.status, r.backend()), (200, "live".to_string()));
        if counters(&s, &["silent"], "lbtot").await[0] > 0 {
            assert_eq!(counters(&s, &rows, "econ").await, [0, 0, 0]);
            wait_no_session(&s, &rows).await;
            let wretr = counters(&s, &rows, "wretr").await;
            let wredis = counters(&s, &rows, "wredis").await;
            return (took, wretr.try_into().unwrap(), wredis.try_into().unwrap());
        }
    }
    panic!("no URI hashed to the silent server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_timeout_redispatched_on_the_last_retry_by_default() {
    // A hash keeps the request on its server: the first retry stays there,
    // the last (default interval -1) goes elsewhere.
    let (took, wretr, wredis) = silent_server_behind_a_hash("").await;
    assert!(took >= Duration::from_millis(200), "{took:?}");
    assert_eq!((wretr, wredis), ([1, 0, 1], [1, 0, 1]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redispatch_interval_one_moves_the_first_retry() {
    let (took, wretr, wredis) = silent_server_behind_a_hash("1").await;
    assert!(took >= Duration::from_millis(100), "{took:?}");
    assert_eq!((wretr, wredis), ([0, 0, 0], [1, 0, 1]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_on_503_replays_requests_without_a_body() {
    // 503 to the first of each pair of requests, 200 to the second.
    let srv = scripted(
        &(0..6)
            .map(|n| answer(if n % 2 == 0 { 503 } else { 200 }, n))
            .collect::<Vec<_>>(),
    )
    .await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(
        &fe,
        "1s",
        &format!("    retry-on 503\n    server s1 {}", srv.addr),
    ));
    let r = get(fe_addr(port), "/").await;
    assert_eq!((r.status, r.header("x-request")), (200, Some("1")));
    assert_eq!(requests(&srv), 2);
    // HAProxy counts an L7 retry twice in wretr: once when it decides to
    // retry, once when the same server is chosen again.
    assert_eq!(counters(&s, &["s1", "BACKEND"], "wretr").await, [2, 2]);
    // A bodiless POST is replayed too (HAProxy does not look at the
    // method for retry-on).
    let r = request(fe_addr(port), "POST", "/", b"").await;
    assert_eq!((r.status, r.header("x-request")), (200, Some("3")));
    assert_eq!(requests(&srv), 2);
    if !is_haproxy() {
        // sluice keeps no copy of a body it streams: a POST with a body
        // gets the server's 503 (HAProxy would replay it from its buffer).
        let r = request(fe_addr(port), "POST", "/", b"hello").await;
        assert_eq!((r.status, r.header("x-request")), (503, Some("4")));
        assert_eq!(requests(&srv), 1);
    }
    wait_no_session(&s, &["s1", "BACKEND"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_on_503_with_redispatch_goes_to_another_server() {
    let srv = raw::RawBackend::start().await;
    srv.answer(&answer(503, 0));
    let live = Backend::start("live").await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(
        &fe,
        "1s",
        &format!(
            "    retry-on 503\n    option redispatch\n    server busy {}\n    server live {}",
            srv.addr,
            live.hostport()
        ),
    ));
    for _ in 0..2 {
        let r = get(fe_addr(port), "/").await;
        assert_eq!((r.status, r.backend()), (200, "live".to_string()));
    }
    // Each request tries `busy` first (round robin), which is counted
    // once in wretr (the retry) and once in wredis (another server).
    assert_eq!(requests(&srv), 2);
    let rows = ["busy", "live", "BACKEND"];
    assert_eq!(counters(&s, &rows, "wretr").await, [2, 0, 2]);
    assert_eq!(counters(&s, &rows, "wredis").await, [2, 0, 2]);
    assert_eq!(counters(&s, &rows, "hrsp_5xx").await, [0, 0, 0]);
    wait_no_session(&s, &rows).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_exhausted_on_503_relay_the_last_answer() {
    let srv = scripted(&[answer(503, 0), answer(503, 1), answer(503, 2)]).await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(
        &fe,
        "1s",
        &format!(
            "    retries 2\n    retry-on 503\n    server s1 {}",
            srv.addr
        ),
    ));
    let r = get(fe_addr(port), "/").await;
    assert_eq!((r.status, r.header("x-request")), (503, Some("2")));
    assert_eq!(requests(&srv), 3);
    assert_eq!(counters(&s, &["s1", "BACKEND"], "wretr").await, [4, 4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_on_empty_response() {
    // The first request is dropped without an answer.
    let srv = scripted(&[Vec::new(), answer(200, 1)]).await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(
        &fe,
        "1s",
        &format!("    retry-on empty-response\n    server s1 {}", srv.addr),
    ));
    let r = get(fe_addr(port), "/").await;
    assert_eq!((r.status, r.header("x-request")), (200, Some("1")));
    assert_eq!(counters(&s, &["s1", "BACKEND"], "wretr").await, [2, 2]);
    assert_eq!(counters(&s, &["s1", "BACKEND"], "eresp").await, [0, 0]);

    // The default (`conn-failure`) does not retry it: 502.
    let srv = scripted(&[Vec::new()]).await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(&fe, "1s", &format!("    server s1 {}", srv.addr)));
    let r = get(fe_addr(port), "/").await;
    assert_eq!(r.status, 502);
    assert_eq!(requests(&srv), 1);
    assert_eq!(counters(&s, &["s1", "BACKEND"], "wretr").await, [0, 0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pooled_connection_closed_by_the_server_replays_an_idempotent_request() {
    if is_haproxy() {
        // HAProxy (http-reuse safe) never sends a first request over a
        // reused connection; the scenario is sluice's.
        return;
    }
    // Each second request on a connection is dropped unanswered: the
    // server closing an idle keep-alive connection just as it is reused.
    let srv = scripted(&[answer(200, 0), Vec::new(), answer(200, 2), Vec::new()]).await;
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(&fe, "1s", &format!("    server s1 {}", srv.addr)));
    let sock = s.stats_socket();
    let idle = || {
        let sock = sock.clone();
        async move { show_stat(&sock).await.num("be", "s1", "idle_conn_cur") == 1 }
    };
    let r = get(fe_addr(port), "/").await;
    assert_eq!((r.status, r.header("x-request")), (200, Some("0")));
    wait_until(Duration::from_secs(5), "one idle server connection", idle).await;
    // A new client connection: the request goes over the pooled server
    // connection, which the server drops, and is replayed on a new one.
    let r = get(fe_addr(port), "/again").await;
    assert_eq!((r.status, r.header("x-request")), (200, Some("2")));
    assert_eq!(requests(&srv), 3);
    let rows = ["s1", "BACKEND"];
    assert_eq!(counters(&s, &rows, "reuse").await, [1, 1]);
    // A transparent replay, not a retry.
    assert_eq!(counters(&s, &rows, "wretr").await, [0, 0]);

    // A POST (even bodiless) could have been acted on: not replayed.
    wait_until(Duration::from_secs(5), "one idle server connection", idle).await;
    let r = request(fe_addr(port), "POST", "/post", b"").await;
    assert_eq!(r.status, 502);
    assert_eq!(requests(&srv), 1);
    wait_no_session(&s, &rows).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_mode_redispatches_a_refused_connection() {
    let live = Backend::start("live").await;
    let fe = Listen::new();
    let port = fe.port();
    let text = format!(
        "global
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode tcp
    timeout connect 1s
    timeout client 5s
    timeout server 5s

listen be
    bind {fe}
    balance roundrobin
    option redispatch
    server dead {}
    server live {}
",
        closed_port(),
        live.hostport()
    );
    let s = Sluice::start(&text);
    for _ in 0..4 {
        let r = get(fe_addr(port), "/").await;
        assert_eq!((r.status, r.backend()), (200, "live".to_string()));
    }
    // The harness's readiness probe is a session too, which may or may
    // not have taken a turn of the round robin before it ended: of our
    // four sessions, two at least were dealt to `dead` and redispatched.
    let csv = show_stat(&s.stats_socket()).await;
    let n = |sv: &str, c: &str| csv.num("be", sv, c);
    assert!(
        n("dead", "wredis") >= 2,
        "dead wredis {}",
        n("dead", "wredis")
    );
    assert_eq!(n("BACKEND", "wredis"), n("dead", "wredis"));
    assert_eq!((n("dead", "wretr"), n("BACKEND", "wretr")), (0, 0));
    assert_eq!(n("dead", "econ"), 0);
    // The sessions end once both sides closed.
    wait_no_session(&s, &["dead", "live", "BACKEND"]).await;
}

#[test]
fn retry_keywords_are_checked_with_file_and_line() {
    if is_haproxy() {
        return;
    }
    let dir = TempDir::new("retry-cfg");
    let bad = [
        ("retry-on bogus", "'retry-on': unknown keyword 'bogus'"),
        ("retry-on 418", "'retry-on': unknown keyword '418'"),
        (
            "retry-on none 503",
            "'retry-on' 'none' keyworld only usable alone",
        ),
        ("retry-on", "'retry-on' needs at least one keyword"),
        (
            "option redispatch often",
            "'option redispatch' expects an integer interval (got 'often')",
        ),
    ];
    for (line, msg) in bad {
        let text = format!(
            "defaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\n\nbackend be\n    {line}\n    server s1 127.0.0.1:8080\n"
        );
        dir.write("bad.cfg", &text);
        let out = run_sluice(&["-c", "-f", "bad.cfg"], Some(dir.path()));
        assert_ne!(out.code(), Some(0), "{line} accepted");
        assert!(
            out.stderr.contains("[bad.cfg:8]") && out.stderr.contains(msg),
            "{line}: {}",
            out.stderr
        );
    }
    // Accepted forms, in defaults and backends; `no option redispatch`.
    let text = "defaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\n    option redispatch\n    retry-on conn-failure empty-response 503\n\nlisten be\n    bind 127.0.0.1:18080\n    no option redispatch\n    option redispatch -2\n    retry-on all-retryable-errors 404 0rtt-rejected\n    server s1 127.0.0.1:8080\n";
    dir.write("good.cfg", text);
    let out = run_sluice(&["-c", "-f", "good.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
}
