//! Retries (`retries`, `option redispatch`, `retry-on`) and `timeout
//! connect` against real servers on 127.0.0.1: refused and silent servers,
//! servers answering 503 or nothing once, a pooled connection the server
//! closes. The counters are HAProxy 2.6.12's, checked by running these
//! tests with `SLUICE_TEST_BIN=/usr/sbin/haproxy` (the parts where sluice
//! chooses differently say so and are skipped there).

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn is_haproxy() -> bool {
    bin().contains("haproxy")
}

/// A config with a stats socket, frontend `fe` on `port` and backend `be`
/// made of `be_lines`.
fn cfg(port: u16, connect_timeout: &str, be_lines: &str) -> String {
    format!(
        "global
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode http
    timeout connect {connect_timeout}
    timeout client 5s
    timeout server 5s

frontend fe
    bind 127.0.0.1:{port}
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

/// What a scripted server does with the n-th request it reads (0-based,
/// over all its connections), given the request's index on its connection.
#[derive(Clone, Copy, Debug)]
enum Act {
    /// Answer with this status, keeping the connection open.
    Answer(u16),
    /// Close the connection without answering.
    Close,
}

/// A raw HTTP/1.1 server driven by `script(n, nth_on_conn)`; counts the
/// requests it read.
struct Scripted {
    addr: SocketAddr,
    seen: Arc<AtomicUsize>,
}

impl Scripted {
    async fn start(script: fn(usize, usize) -> Act) -> Scripted {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let seen = Arc::new(AtomicUsize::new(0));
        let count = seen.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut c, _)) = l.accept().await else {
                    return;
                };
                let count = count.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut on_conn = 0;
                    loop {
                        // One request head, and its content-length body.
                        let end = loop {
                            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                break p + 4;
                            }
                            let mut chunk = [0u8; 4096];
                            match c.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(k) => buf.extend_from_slice(&chunk[..k]),
                            }
                        };
                        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        while buf.len() < end + len {
                            let mut chunk = [0u8; 4096];
                            match c.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(k) => buf.extend_from_slice(&chunk[..k]),
                            }
                        }
                        buf.drain(..end + len);
                        let n = count.fetch_add(1, SeqCst);
                        match script(n, on_conn) {
                            Act::Close => return,
                            Act::Answer(code) => {
                                let body = format!("{code} from request {n}\n");
                                let resp = format!(
                                    "HTTP/1.1 {code} X\r\ncontent-length: {}\r\nx-request: {n}\r\n\r\n{body}",
                                    body.len()
                                );
                                if c.write_all(resp.as_bytes()).await.is_err() {
                                    return;
                                }
                            }
                        }
                        on_conn += 1;
                    }
                });
            }
        });
        Scripted { addr, seen }
    }

    fn seen(&self) -> usize {
        self.seen.load(SeqCst)
    }
}

/// A port nothing listens on: connections are refused.
fn closed_port() -> String {
    format!("127.0.0.1:{}", free_port())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_connection_is_redispatched_to_a_live_server() {
    let live = Backend::start("live").await;
    let port = free_port();
    let syslog = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    syslog
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let text = cfg(
        port,
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
        let port = free_port();
        let s = Sluice::start(&cfg(
            port,
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
    let port = free_port();
    // Without redispatch: `retries 2` on the same server, each after the
    // turn-around pause of min(timeout connect, 1 s).
    let s = Sluice::start(&cfg(
        port,
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
    let port = free_port();
    let s = Sluice::start(&cfg(
        port,
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
    let port = free_port();
    let s = Sluice::start(&cfg(
        port,
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
    let port = free_port();
    let s = Sluice::start(&cfg(
        port,
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

/// 503 to every even request (the first of each pair), 200 otherwise.
fn busy_every_other(n: usize, _: usize) -> Act {
    if n.is_multiple_of(2) {
        Act::Answer(503)
    } else {
        Act::Answer(200)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_on_503_replays_requests_without_a_body() {
    let srv = Scripted::start(busy_every_other).await;
    let port = free_port();
    let s = Sluice::start(&cfg(
        port,
        "1s",
        &format!("    retry-on 503\n    server s1 {}", srv.addr),
    ));
    let r = get(fe_addr(port), "/").await;
    assert_eq!((r.status, r.header("x-request")), (200, Some("1")));
    assert_eq!(srv.seen(), 2);
    // HAProxy counts an L7 retry twice in wretr: once when it decides to
    // retry, once when the same server is chosen again.
    assert_eq!(counters(&s, &["s1", "BACKEND"], "wretr").await, [2, 2]);
    // A bodiless POST is replayed too (HAProxy does not look at the
    // method for retry-on).
    let r = request(fe_addr(port), "POST", "/", b"").await;
    assert_eq!((r.status, r.header("x-request")), (200, Some("3")));
    assert_eq!(srv.seen(), 4);
    if !is_haproxy() {
        // sluice keeps no copy of a body it streams: a POST with a body
        // gets the server's 503 (HAProxy would replay it from its buffer).
        let r = request(fe_addr(port), "POST", "/", b"hello").await;
        assert_eq!((r.status, r.header("x-request")), (503, Some("4")));
        assert_eq!(srv.seen(), 5);
    }
    wait_no_session(&s, &["s1", "BACKEND"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_on_503_with_redispatch_goes_to_another_server() {
    let srv = Scripted::start(|_, _| Act::Answer(503)).await;
    let live = Backend::start("live").await;
    let port = free_port();
    let s = Sluice::start(&cfg(
        port,
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
    assert_eq!(srv.seen(), 2);
    let rows = ["busy", "live", "BACKEND"];
    assert_eq!(counters(&s, &rows, "wretr").await, [2, 0, 2]);
    assert_eq!(counters(&s, &rows, "wredis").await, [2, 0, 2]);
    assert_eq!(counters(&s, &rows, "hrsp_5xx").await, [0, 0, 0]);
    wait_no_session(&s, &rows).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_exhausted_on_503_relay_the_last_answer() {
    let srv = Scripted::start(|_, _| Act::Answer(503)).await;
    let port = free_port();
    let s = Sluice::start(&cfg(
        port,
        "1s",
        &format!(
            "    retries 2\n    retry-on 503\n    server s1 {}",
            srv.addr
        ),
    ));
    let r = get(fe_addr(port), "/").await;
    assert_eq!((r.status, r.header("x-request")), (503, Some("2")));
    assert_eq!(srv.seen(), 3);
    assert_eq!(counters(&s, &["s1", "BACKEND"], "wretr").await, [4, 4]);
}

/// Closes the first connection's first request without answering.
fn close_first(n: usize, _: usize) -> Act {
    if n == 0 { Act::Close } else { Act::Answer(200) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_on_empty_response() {
    let srv = Scripted::start(close_first).await;
    let port = free_port();
    let s = Sluice::start(&cfg(
        port,
        "1s",
        &format!("    retry-on empty-response\n    server s1 {}", srv.addr),
    ));
    let r = get(fe_addr(port), "/").await;
    assert_eq!((r.status, r.header("x-request")), (200, Some("1")));
    assert_eq!(counters(&s, &["s1", "BACKEND"], "wretr").await, [2, 2]);
    assert_eq!(counters(&s, &["s1", "BACKEND"], "eresp").await, [0, 0]);

    // The default (`conn-failure`) does not retry it: 502.
    let srv = Scripted::start(close_first).await;
    let port = free_port();
    let s = Sluice::start(&cfg(port, "1s", &format!("    server s1 {}", srv.addr)));
    let r = get(fe_addr(port), "/").await;
    assert_eq!(r.status, 502);
    assert_eq!(srv.seen(), 1);
    assert_eq!(counters(&s, &["s1", "BACKEND"], "wretr").await, [0, 0]);
}

/// Answers the first request of each connection and closes the connection
/// when a second one arrives on it: the server dropping an idle keep-alive
/// connection just as it gets reused.
fn one_per_connection(_: usize, nth_on_conn: usize) -> Act {
    if nth_on_conn == 0 {
        Act::Answer(200)
    } else {
        Act::Close
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pooled_connection_closed_by_the_server_replays_an_idempotent_request() {
    if is_haproxy() {
        // HAProxy (http-reuse safe) never sends a first request over a
        // reused connection; the scenario is sluice's.
        return;
    }
    let srv = Scripted::start(one_per_connection).await;
    let port = free_port();
    let s = Sluice::start(&cfg(port, "1s", &format!("    server s1 {}", srv.addr)));
    // Two client connections: the second request goes over the pooled
    // server connection, which the server closes on it.
    let r = get(fe_addr(port), "/").await;
    assert_eq!((r.status, r.header("x-request")), (200, Some("0")));
    wait_until(Duration::from_secs(5), "one idle server connection", || {
        let sock = s.stats_socket();
        async move {
            let csv = show_stat(&sock).await;
            csv.num("be", "s1", "idle_conn_cur") == 1 || csv.num("be", "s1", "hrsp_2xx") == 1
        }
    })
    .await;
    let r = get(fe_addr(port), "/again").await;
    assert_eq!((r.status, r.header("x-request")), (200, Some("2")));
    assert_eq!(srv.seen(), 3);
    let rows = ["s1", "BACKEND"];
    assert_eq!(counters(&s, &rows, "reuse").await, [1, 1]);
    // A transparent replay, not a retry.
    assert_eq!(counters(&s, &rows, "wretr").await, [0, 0]);

    // A POST (even bodiless) could have been acted on: not replayed.
    let r = request(fe_addr(port), "POST", "/post", b"").await;
    assert_eq!(r.status, 502);
    assert_eq!(srv.seen(), 4);
    wait_no_session(&s, &rows).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_mode_redispatches_a_refused_connection() {
    let live = Backend::start("live").await;
    let port = free_port();
    let text = format!(
        "global
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode tcp
    timeout connect 1s
    timeout client 5s
    timeout server 5s

listen be
    bind 127.0.0.1:{port}
    balance roundrobin
    option redispatch
    server dead {}
    server live {}
",
        closed_port(),
        live.hostport()
    );
    let s = Sluice::start(&text);
    for _ in 0..2 {
        let r = get(fe_addr(port), "/").await;
        assert_eq!((r.status, r.backend()), (200, "live".to_string()));
    }
    // The harness's readiness probe is a session too, and may or may not
    // have been redispatched before it ended: at least our two were.
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
