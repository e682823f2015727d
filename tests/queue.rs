//! Server `maxconn`: excess requests wait in a FIFO backend queue and get
//! HAProxy's 503 when `timeout queue` (default: `timeout connect`) expires
//! (reference §2.11).
//!
//! The backend is *gated*: it holds each request until the test releases it,
//! so the tests synchronise on events (request received, queue length in
//! `show stat`) instead of sleeping.

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::*;

const DEADLINE: Duration = Duration::from_secs(10);

fn cfg(fe: &Listen, server: &Backend, timeouts: &str) -> String {
    format!(
        "global
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode http
    timeout client 30s
    timeout server 30s
{timeouts}

frontend fe
    bind {fe}
    default_backend qbe

backend qbe
    server slow1 {} maxconn 1
",
        server.hostport()
    )
}

async fn backend_qcur(sock: &std::path::Path) -> Option<u64> {
    let text = cli(sock, "show stat").await;
    if !text.starts_with("# pxname,") {
        return None;
    }
    let csv = Csv::parse(&text);
    csv.try_row("qbe", "BACKEND")?;
    csv.get("qbe", "BACKEND", "qcur").parse().ok()
}

async fn wait_qcur(sock: &std::path::Path, n: u64) {
    let sock = sock.to_path_buf();
    wait_until(
        DEADLINE,
        &format!("qbe BACKEND qcur == {n} in show stat"),
        || {
            let sock = sock.clone();
            async move { backend_qcur(&sock).await == Some(n) }
        },
    )
    .await;
}

fn position(events: &[Event], e: &Event) -> usize {
    events
        .iter()
        .position(|x| x == e)
        .unwrap_or_else(|| panic!("{e:?} not in {events:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queued_requests_are_served_fifo_one_at_a_time() {
    let backend = Backend::start("slow1").await;
    backend.set_gated(true);
    let fe = Listen::new();
    let port = fe.port();
    let syslog = support::syslog::Syslog::new();
    let s = Sluice::start(&cfg(
        &fe,
        &backend,
        &format!(
            "    log {} local0\n    option httplog\n    timeout connect 5s\n    timeout queue 10s",
            syslog.addr()
        ),
    ));
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));

    let done = Arc::new(Mutex::new(Vec::<(String, u16)>::new()));
    let send = |path: &'static str| {
        let done = done.clone();
        tokio::spawn(async move {
            let r = get(addr, path).await;
            done.lock().unwrap().push((path.to_string(), r.status));
            r
        })
    };

    // Request 1 occupies the only slot.
    let a = send("/1");
    backend.wait_started("/1", DEADLINE).await;
    // Requests 2 and 3 queue up, in that order.
    let b = send("/2");
    wait_qcur(&sock, 1).await;
    let c = send("/3");
    wait_qcur(&sock, 2).await;
    assert_eq!(
        backend.hits(),
        1,
        "queued requests must not reach the server"
    );

    // Free the slot three times; each queued request follows in FIFO order.
    backend.release(1);
    backend.wait_started("/2", DEADLINE).await;
    backend.release(1);
    backend.wait_started("/3", DEADLINE).await;
    backend.release(1);

    for (name, h) in [("/1", a), ("/2", b), ("/3", c)] {
        let r = within(DEADLINE, name, h).await.unwrap();
        assert_eq!(r.status, 200, "{name}: {}{}", r.head, r.text());
        assert_eq!(r.text(), "slow1\n");
    }

    let ev = backend.events();
    let st = |p: &str| position(&ev, &Event::Start("GET".into(), p.into()));
    let en = |p: &str| position(&ev, &Event::End("GET".into(), p.into()));
    assert!(en("/1") < st("/2"), "2 started before 1 ended: {ev:?}");
    assert!(en("/2") < st("/3"), "3 started before 2 ended: {ev:?}");
    assert_eq!(backend.max_in_flight(), 1, "maxconn 1 exceeded");
    let order: Vec<String> = done
        .lock()
        .unwrap()
        .iter()
        .map(|(p, _)| p.clone())
        .collect();
    assert_eq!(order, ["/1", "/2", "/3"], "completion order");
    assert_eq!(backend_qcur(&sock).await, Some(0));

    // `%sq/%bq` as HAProxy 2.6.12 logs them in the same sequence (captured:
    // `0/0`, `0/1`, `0/2`): the requests served from the backend queue
    // while each waited, plus itself.
    let bq = |p: &str| {
        format!(
            "{{}} fe qbe/slow1 {{}} 200 {{}} - - ---- {{}} 0/{} \"GET {p} HTTP/1.1\"\n",
            &p[1..].parse::<u32>().unwrap() - 1
        )
    };
    let want = [bq("/1"), bq("/2"), bq("/3")];
    syslog.until(&[&want[0], &want[1], &want[2]]);
}

/// HAProxy 2.6.12's log line for a request that timed out in the queue
/// (`timeout queue 1s`, server `maxconn 1` busy).
const HAPROXY_SQ: &str = "<134>Nov 30 14:01:47 haproxy[29824]: 127.0.0.1:37222 [30/Nov/2026:14:01:46.703] fe qbe/<NOSRV> 0/1002/-1/-1/1002 503 217 - - sQ-- 2/2/1/0/0 0/1 \"GET /late HTTP/1.1\"\n";

/// `%B` is HAProxy's 217 for the 214 bytes of its 503 page on the wire
/// (the internal form it counts, as sluice does). `%bq` is 1: the request
/// was the first in the backend queue.
fn sq_mask(tag: &str) -> String {
    format!(
        "<134>{{mon}} {{day}} {{hh}}:{{mm}}:{{ss}} {tag}[{{pid}}]: 127.0.0.1:{{p}} [{{date}}] fe qbe/<NOSRV> {{TR}}/{{Tw}}/-1/-1/{{Ta}} 503 217 - - sQ-- {{ac}}/{{fc}}/1/0/0 0/1 \"GET /late HTTP/1.1\"\n"
    )
}

#[test]
fn sq_mask_matches_haproxy_line() {
    support::syslog::assert_line(&sq_mask("haproxy"), HAPROXY_SQ);
}

async fn queue_timeout_gives_503(timeouts: &str) {
    let backend = Backend::start("slow1").await;
    backend.set_gated(true);
    let fe = Listen::new();
    let port = fe.port();
    let syslog = support::syslog::Syslog::new();
    let logs = format!("    log {} local0\n    option httplog\n", syslog.addr());
    let _s = Sluice::start(&cfg(&fe, &backend, &format!("{logs}{timeouts}")));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));

    let first = tokio::spawn(async move { get(addr, "/first").await });
    backend.wait_started("/first", DEADLINE).await;

    // The slot stays taken: this one waits in the queue until it times out.
    let t0 = Instant::now();
    let r = get(addr, "/late").await;
    let waited = t0.elapsed();
    assert_haproxy_503(&r);
    // `timeout connect` is 5 s where `timeout queue` is set: an answer
    // well before that shows the queue timeout, not the connect one, ended it.
    assert!(
        waited >= Duration::from_millis(1000) && waited < Duration::from_millis(4000),
        "503 after {waited:?}: must come at `timeout queue` (1.5 s)"
    );
    assert_eq!(
        backend.hits(),
        1,
        "the timed-out request reached the server"
    );
    // Logged as HAProxy does: no server, the queue wait in Tw, `sQ--`.
    let lines = syslog.until(&[&sq_mask("sluice")]);
    let l = lines.iter().find(|l| l.contains("sQ--")).unwrap();
    let tw: u64 = l
        .split(' ')
        .skip_while(|w| *w != "qbe/<NOSRV>")
        .nth(1)
        .unwrap()
        .split('/')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!((1000..4000).contains(&tw), "Tw {tw}: {l}");

    // The request holding the slot is unaffected.
    backend.release(1);
    let r = within(DEADLINE, "first request", first).await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(backend.max_in_flight(), 1);

    // And the slot is usable again.
    backend.set_gated(false);
    let r = get(addr, "/after").await;
    assert_eq!(r.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queue_timeout_expiry_is_503() {
    queue_timeout_gives_503("    timeout connect 5s\n    timeout queue 1500ms").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queue_timeout_defaults_to_timeout_connect() {
    queue_timeout_gives_503("    timeout connect 1500ms").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_backend_three_concurrent_requests() {
    // A real sleeping backend: 3 s per request, `timeout queue 4s`, three
    // requests at once. The first is served, the second waits under 3 s
    // and is served, the third would wait ~6 s and times out with a 503.
    // Timing based: the second has a margin of at least 1 s, the third
    // fails as long as it is queued within 2 s of the first (it is sent
    // once the second is known to be queued).
    let backend = Backend::start("slow1").await;
    backend.set_delay(Duration::from_millis(3000));
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&cfg(
        &fe,
        &backend,
        "    timeout connect 30s\n    timeout queue 4s",
    ));
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));

    let a = tokio::spawn(async move { get(addr, "/1").await });
    backend.wait_started("/1", DEADLINE).await;
    let b = tokio::spawn(async move { get(addr, "/2").await });
    wait_qcur(&sock, 1).await;
    let c = tokio::spawn(async move { get(addr, "/3").await });

    let (ra, rb, rc) = (
        within(DEADLINE, "/1", a).await.unwrap(),
        within(DEADLINE, "/2", b).await.unwrap(),
        within(DEADLINE, "/3", c).await.unwrap(),
    );
    assert_eq!(ra.status, 200);
    assert_eq!(rb.status, 200, "/2 was queued ~2 s < timeout queue");
    assert_haproxy_503(&rc);
    assert_eq!(backend.max_in_flight(), 1);
    assert_eq!(backend.hits(), 2);
}

/// `%sq`: requests waiting for the server a hash chose wait in that
/// server's queue; HAProxy 2.6.12 logs for each the requests served from
/// it while it waited, plus one (captured with `balance uri` and a busy
/// `maxconn 1` server: `0/0` for the one served at once, `1/0` for the
/// first that waited, `2/0` for later ones).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn server_queue_position_is_logged() {
    let backend = Backend::start("slow1").await;
    backend.set_gated(true);
    let fe = Listen::new();
    let port = fe.port();
    let syslog = support::syslog::Syslog::new();
    let cfg = format!(
        "global
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode http
    log {} local0
    option httplog
    timeout client 30s
    timeout server 30s
    timeout connect 5s
    timeout queue 10s

frontend fe
    bind {fe}
    default_backend hbe

backend hbe
    balance uri
    server slow1 {} maxconn 1
",
        syslog.addr(),
        backend.hostport()
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let send =
        |q: &'static str| tokio::spawn(async move { get(addr, &format!("/same?{q}")).await });
    let server_qcur = |n: u64| {
        let sock = sock.clone();
        async move {
            wait_until(DEADLINE, &format!("slow1 qcur {n}"), || {
                let sock = sock.clone();
                async move { show_stat(&sock).await.num("hbe", "slow1", "qcur") == n }
            })
            .await
        }
    };
    let a = send("a");
    backend.wait_started("/same?a", DEADLINE).await;
    let b = send("b");
    server_qcur(1).await;
    let c = send("c");
    server_qcur(2).await;
    backend.set_gated(false);
    backend.release(3);
    for h in [a, b, c] {
        assert_eq!(within(DEADLINE, "queued", h).await.unwrap().status, 200);
    }
    let line = |q: &str, sq: u32| {
        format!("{{}} fe hbe/slow1 {{}} 200 {{}} - - ---- {{}} {sq}/0 \"GET /same?{q} HTTP/1.1\"\n")
    };
    syslog.until(&[&line("a", 0), &line("b", 1), &line("c", 2)]);
}

/// A server whose queue is at its `maxqueue` (HAProxy's `SRV_STATUS_FULL`):
/// `balance source` is a hash, so each request waits for the one server
/// the key chose, `maxconn 1 maxqueue 1` lets one wait there.
fn full_queue_cfg(port: u16, server: &Backend, mode: &str, log: &str) -> String {
    format!(
        "global
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode {mode}
    log {log} local0
    option {mode}log
    timeout client 30s
    timeout server 30s
    timeout connect 5s
    timeout queue 10s

frontend fe
    bind 127.0.0.1:{port}
    default_backend qbe

backend qbe
    balance source
    server slow1 {} maxconn 1 maxqueue 1
",
        server.hostport()
    )
}

/// HAProxy 2.6's lines for the request that found the queue full, HTTP
/// and TCP mode (the same config as [`full_queue_cfg`]): the server is
/// named, no queue time (`Tw` -1), `SQ` in both modes.
const HAPROXY_HTTP_FULL: &str = "<134>Dec  1 20:09:03 haproxy[29701]: 127.0.0.1:49544 [01/Dec/2026:20:09:03.750] fe qbe/slow1 0/-1/-1/-1/0 503 217 - - SQ-- 3/3/2/1/0 0/0 \"GET /3 HTTP/1.1\"\n";
const HAPROXY_TCP_FULL: &str = "<134>Dec  1 20:09:24 haproxy[1134]: 127.0.0.1:53936 [01/Dec/2026:20:09:24.054] fe qbe/slow1 -1/-1/0 0 SQ 3/3/2/1/0 0/0\n";

/// `%B` is 217 as in [`sq_mask`]; `%bc` is masked: sluice counts a request
/// on the backend once it has a server slot, HAProxy from the queue on.
fn full_mask(tag: &str, http: bool) -> String {
    let head = format!(
        "<134>{{mon}} {{day}} {{hh}}:{{mm}}:{{ss}} {tag}[{{pid}}]: 127.0.0.1:{{p}} [{{date}}] fe qbe/slow1 "
    );
    if http {
        format!(
            "{head}{{TR}}/-1/-1/-1/{{Ta}} 503 217 - - SQ-- {{ac}}/{{fc}}/{{bc}}/1/0 0/0 \"GET /3 HTTP/1.1\"\n"
        )
    } else {
        format!("{head}-1/-1/{{Tt}} 0 SQ {{ac}}/{{fc}}/{{bc}}/1/0 0/0\n")
    }
}

#[test]
fn full_queue_masks_match_haproxy_lines() {
    support::syslog::assert_line(&full_mask("haproxy", true), HAPROXY_HTTP_FULL);
    support::syslog::assert_line(&full_mask("haproxy", false), HAPROXY_TCP_FULL);
}

/// One request holds the server, a second waits in its queue, a third
/// finds the queue full: it ends at once, logged `SQ` naming the server in
/// HTTP and TCP mode alike, and counted in `econ` on the server and the
/// backend, as HAProxy 2.6 does (the HTTP path used to log `sQ--` with
/// `<NOSRV>` and the TCP one `<NOSRV>`, neither counting it).
async fn full_server_queue(mode: &str) {
    let http = mode == "http";
    let backend = Backend::start("slow1").await;
    backend.set_gated(true);
    let (_held, port) = hold_port();
    let syslog = support::syslog::Syslog::new();
    let s = Sluice::start(&full_queue_cfg(port, &backend, mode, &syslog.addr()));
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    // The raw request and all the client receives until the proxy closes.
    let exchange = |path: &'static str| {
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
            let req = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
            c.write_all(req.as_bytes()).await.unwrap();
            let mut got = Vec::new();
            let _ = c.read_to_end(&mut got).await;
            String::from_utf8_lossy(&got).into_owned()
        })
    };
    let server_qcur = |n: u64| {
        let sock = sock.clone();
        async move {
            wait_until(DEADLINE, &format!("slow1 qcur {n}"), || {
                let sock = sock.clone();
                async move { show_stat(&sock).await.num("qbe", "slow1", "qcur") == n }
            })
            .await
        }
    };
    if !http {
        // The readiness probe that found sluice listening is a TCP session
        // too: it reaches the server and must be gone before the test's
        // sessions take the server's one slot.
        wait_until(DEADLINE, "the probe's session ended", || {
            let sock = sock.clone();
            async move {
                let st = show_stat(&sock).await;
                st.num("qbe", "slow1", "stot") == 1 && st.num("qbe", "slow1", "scur") == 0
            }
        })
        .await;
    }
    let a = exchange("/1");
    backend.wait_started("/1", DEADLINE).await;
    let b = exchange("/2");
    server_qcur(1).await;
    let got = within(DEADLINE, "/3", exchange("/3")).await.unwrap();
    if http {
        assert!(got.starts_with("HTTP/1.1 503 "), "{got}");
    } else {
        assert_eq!(got, "", "a TCP session that got no server is closed");
    }
    syslog.until(&[&full_mask("sluice", http)]);
    let st = show_stat(&sock).await;
    assert_eq!(st.num("qbe", "slow1", "econ"), 1, "server econ");
    assert_eq!(st.num("qbe", "BACKEND", "econ"), 1, "backend econ");
    if http {
        // sluice's 503 counts on the backend, not on the server.
        assert_eq!(st.num("qbe", "BACKEND", "hrsp_5xx"), 1);
        assert_eq!(st.num("qbe", "slow1", "hrsp_5xx"), 0);
    }
    backend.set_gated(false);
    backend.release(2);
    for (name, h) in [("/1", a), ("/2", b)] {
        let got = within(DEADLINE, name, h).await.unwrap();
        assert!(got.starts_with("HTTP/1.1 200 "), "{name}: {got}");
    }
    assert_eq!(backend.hits(), 2, "the refused request reached the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn full_server_queue_is_sq_in_http_mode() {
    full_server_queue("http").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn full_server_queue_is_sq_in_tcp_mode() {
    full_server_queue("tcp").await;
}
