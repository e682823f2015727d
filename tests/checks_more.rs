//! Health checks beyond the basics (issue #5): `http-check send` puts
//! HAProxy 2.6's bytes on the wire, every `http-check expect` form with and
//! without `!`, `option tcp-check` scripts against a raw TCP server,
//! flapping damped by rise/fall, and passive checks (`observe layer7` +
//! `error-limit` + each `on-error`) taking a server out before the next
//! active check.

mod support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use support::*;

const DEADLINE: Duration = Duration::from_secs(10);

/// A server answering the n-th connection (from 0) with `reply(n)` after
/// reading the request, then closing; it records what it read.
struct Scripted {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Vec<u8>>>>,
    count: Arc<AtomicUsize>,
}

impl Scripted {
    async fn start(reply: impl Fn(usize) -> String + Send + Sync + 'static) -> Scripted {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let count = Arc::new(AtomicUsize::new(0));
        let (rq, cnt, reply) = (requests.clone(), count.clone(), Arc::new(reply));
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = l.accept().await else {
                    continue;
                };
                let n = cnt.fetch_add(1, SeqCst);
                let (rq, reply) = (rq.clone(), reply.clone());
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    let mut buf = [0u8; 2048];
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(k) => got.extend_from_slice(&buf[..k]),
                        }
                    }
                    rq.lock().unwrap().push(got);
                    let _ = s.write_all(reply(n).as_bytes()).await;
                });
            }
        });
        Scripted {
            addr,
            requests,
            count,
        }
    }

    /// Always the same answer: `status` with `body`.
    async fn fixed(status: &'static str, body: &'static str) -> Scripted {
        Scripted::start(move |_| http(status, body)).await
    }
}

fn http(status: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

const HEAD: &str = "global
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout check 500ms
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_check_send_and_every_expect_form() {
    let rec = Scripted::fixed("200 OK", "ok").await;
    let post = Scripted::fixed("200 OK", "").await;
    let s503 = Scripted::fixed("503 Service Unavailable", "").await;
    let s200 = Scripted::fixed("200 OK", "all ok").await;
    let err = Scripted::fixed("200 OK", "status: error").await;
    let ready = Scripted::fixed("200 OK", "ready now").await;
    let mut cfg = format!(
        "{HEAD}
backend send
    option httpchk
    http-check send meth GET uri /health ver HTTP/1.1 hdr Host example.com hdr X-Check yes
    http-check expect rstatus ^2
    server rec {} check inter 100ms rise 1 fall 1

backend post
    option httpchk
    http-check send meth POST uri /c ver HTTP/1.1 hdr Host h body ping
    server rec {} check inter 100ms rise 1 fall 1
",
        rec.addr, post.addr
    );
    let cases = [
        // (name, expect, server, status, check_status)
        ("st503", "status 503", &s503, "UP", "L7OK"),
        ("notst200", "! status 200", &s200, "DOWN", "L7STS"),
        ("rst5", "rstatus ^5", &s503, "UP", "L7OK"),
        ("notrst2", "! rstatus ^2", &s200, "DOWN", "L7STS"),
        ("str", "string ok", &s200, "UP", "L7OK"),
        ("strmiss", "string ok", &err, "DOWN", "L7RSP"),
        ("notstr", "! string error", &err, "DOWN", "L7RSP"),
        ("notstrok", "! string error", &s200, "UP", "L7OK"),
        ("rstr", "rstring '^ready$'", &ready, "DOWN", "L7RSP"),
        ("rstr2", "rstring ^ready", &ready, "UP", "L7OK"),
    ];
    for (name, expect, srv, _, _) in &cases {
        cfg.push_str(&format!(
            "
backend {name}
    option httpchk GET /
    http-check expect {expect}
    server s {} check inter 100ms rise 1 fall 1
",
            srv.addr
        ));
    }
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    let csv = wait_check(&sock, "send", "rec", "UP", "L7OK").await;
    assert_eq!(csv.get("send", "rec", "check_code"), "200");
    // Byte for byte what haproxy 2.6.12 sends for this `http-check send`.
    let first = rec.requests.lock().unwrap()[0].clone();
    assert_eq!(
        String::from_utf8_lossy(&first),
        "GET /health HTTP/1.1\r\nhost: example.com\r\nx-check: yes\r\nconnection: close\r\n\r\n"
    );
    wait_check(&sock, "post", "rec", "UP", "L7OK").await;
    // The server read what came with the head: the body, sent at once.
    let first = post.requests.lock().unwrap()[0].clone();
    assert_eq!(
        String::from_utf8_lossy(&first),
        "POST /c HTTP/1.1\r\nhost: h\r\ncontent-length: 4\r\nconnection: close\r\n\r\nping",
        "as haproxy 2.6.12 sends it"
    );
    for (name, expect, _, status, check) in &cases {
        let end = std::time::Instant::now() + DEADLINE;
        loop {
            let csv = show_stat(&sock).await;
            let got = (
                csv.get(name, "s", "status"),
                csv.get(name, "s", "check_status"),
            );
            // Past INI with the first check's verdict.
            if got.0 == *status && got.1 == *check {
                break;
            }
            assert!(
                std::time::Instant::now() < end,
                "expect {expect}: {got:?}, want ({status}, {check})"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Every `option httpchk` form puts haproxy 2.6.12's bytes on the wire
/// (captured from it with the same config): the bare form, a URI alone,
/// method and URI, the old `HTTP/1.1\r\nHost:` trick; HTTP/1.0 checks
/// carry no `connection` header, HTTP/1.1 ones ask to close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httpchk_forms_put_haproxys_bytes_on_the_wire() {
    let forms = [
        ("option httpchk", "OPTIONS / HTTP/1.0\r\n\r\n"),
        ("option httpchk /h", "OPTIONS /h HTTP/1.0\r\n\r\n"),
        (
            "option httpchk GET /health\n    http-check send hdr X-A b",
            "GET /health HTTP/1.0\r\nx-a: b\r\n\r\n",
        ),
        (
            "option httpchk POST /p\n    http-check send body hello",
            "POST /p HTTP/1.0\r\ncontent-length: 5\r\n\r\nhello",
        ),
        (
            "option httpchk GET /x HTTP/1.1\\r\\nHost:\\ www",
            "GET /x HTTP/1.1\r\nhost: www\r\nconnection: close\r\n\r\n",
        ),
        (
            "option httpchk HEAD /h HTTP/1.0\n    http-check send hdr Host foo",
            "HEAD /h HTTP/1.0\r\nhost: foo\r\n\r\n",
        ),
        (
            "option httpchk HEAD /health",
            "HEAD /health HTTP/1.0\r\n\r\n",
        ),
        (
            "option httpchk GET /health HTTP/1.1",
            "GET /health HTTP/1.1\r\nconnection: close\r\n\r\n",
        ),
        (
            "option httpchk OPTIONS * HTTP/1.1\n    http-check send hdr Host example.org",
            "OPTIONS * HTTP/1.1\r\nhost: example.org\r\nconnection: close\r\n\r\n",
        ),
    ];
    let mut recorders = Vec::new();
    let mut cfg = HEAD.to_string();
    for (i, (lines, _)) in forms.iter().enumerate() {
        let rec = Scripted::fixed("200 OK", "").await;
        cfg.push_str(&format!(
            "\nbackend b{i}\n    {lines}\n    server s {} check inter 100ms\n",
            rec.addr
        ));
        recorders.push(rec);
    }
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    for (i, (lines, bytes)) in forms.iter().enumerate() {
        wait_check(&sock, &format!("b{i}"), "s", "UP", "L7OK").await;
        let first = recorders[i].requests.lock().unwrap()[0].clone();
        assert_eq!(String::from_utf8_lossy(&first), *bytes, "{lines}");
    }
}

/// Headers hidden in the version string get HAProxy 2.6's deprecation
/// warning (the check still sends them, above); `-c` then says what
/// haproxy says of a listener-less file with warnings (exit 2).
#[test]
fn headers_in_the_version_string_are_deprecated_as_haproxy_says() {
    let dir = TempDir::new("httpchk-warn");
    let path = dir.write(
        "c.cfg",
        "defaults\n  mode http\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\nbackend b\n  option httpchk GET / HTTP/1.1\\r\\nHost:\\ x\n  server s 127.0.0.1:1 check\n",
    );
    let out = run_sluice(&["-c", "-f", path.to_str().unwrap()], None);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "Warnings were found.\nConfiguration file has no error but will not start (no listener) => exit(2).\n"
    );
    assert!(
        out.stderr.contains("c.cfg:7]: 'option httpchk' : hiding headers or body at the end of the version string is deprecated. Please, consider to use 'http-check send' directive instead."),
        "{}",
        out.stderr
    );
}

/// A check target that alternates good and bad answers is damped by
/// rise/fall: with `rise 2 fall 2`, one that started good stays UP and one
/// that started bad stays DOWN, however long it flaps; with `rise 1 fall 1`
/// every answer flips the state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flapping_is_damped_by_rise_and_fall() {
    let ok = || http("200 OK", "");
    let ko = || http("500 Internal Server Error", "");
    // Good first: 2 good checks (full health 3), then bad, good, bad...
    let up = Scripted::start(move |n| if n < 2 || n % 2 == 0 { ok() } else { ko() }).await;
    // Bad first, then good, bad, good...
    let down = Scripted::start(move |n| if n % 2 == 1 { ok() } else { ko() }).await;
    let undamped = Scripted::start(move |n| if n % 2 == 0 { ok() } else { ko() }).await;
    let cfg = format!(
        "{HEAD}
backend be
    option httpchk GET /
    server up {} check inter 50ms rise 2 fall 2
    server down {} check inter 50ms rise 2 fall 2
    server undamped {} check inter 50ms rise 1 fall 1
",
        up.addr, down.addr, undamped.addr
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    wait_until(DEADLINE, "20 flaps of each", || async {
        [&up, &down, &undamped]
            .iter()
            .all(|s| s.count.load(SeqCst) >= 22)
    })
    .await;
    let csv = show_stat(&sock).await;
    let get = |sv: &str, f: &str| csv.get("be", sv, f);
    assert!(
        get("up", "status").starts_with("UP"),
        "{}",
        get("up", "status")
    );
    assert_eq!(get("up", "chkdown"), "0");
    assert!(get("up", "chkfail").parse::<u64>().unwrap() >= 9);
    assert!(
        get("down", "status").starts_with("DOWN"),
        "{}",
        get("down", "status")
    );
    assert_eq!(get("down", "chkdown"), "1", "down once, at the first check");
    // Without damping the state follows every check.
    assert!(
        get("undamped", "chkdown").parse::<u64>().unwrap() >= 9,
        "undamped went down {} times",
        get("undamped", "chkdown")
    );
}

/// A line-protocol server: greets with `+OK ready`, answers `PING` with
/// `+PONG` (or `-ERR`, keeping the connection open, when `healthy` is
/// false).
async fn line_server(healthy: bool) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((s, _)) = l.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let (r, mut w) = s.into_split();
                let _ = w.write_all(b"+OK ready\r\n").await;
                let mut lines = BufReader::new(r).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let reply: &[u8] = match (line.as_str(), healthy) {
                        ("PING", true) => b"+PONG\r\n",
                        _ => b"-ERR\r\n",
                    };
                    let _ = w.write_all(reply).await;
                }
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_check_connect_send_expect_against_a_raw_server() {
    let good = line_server(true).await;
    let bad = line_server(false).await;
    let cfg = format!(
        "{HEAD}
backend be
    mode tcp
    option tcp-check
    tcp-check connect
    tcp-check expect string +OK
    tcp-check send PING\\r\\n
    tcp-check expect string +PONG
    server good {good} check inter 100ms rise 1 fall 1
    server bad {bad} check inter 100ms rise 1 fall 1

backend portcheck
    mode tcp
    option tcp-check
    tcp-check connect port {}
    tcp-check expect string +OK
    server p 127.0.0.1:1 check inter 100ms rise 1 fall 1
",
        good.port()
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    let csv = wait_check(&sock, "be", "good", "UP", "L7OK").await;
    assert_eq!(csv.get("be", "good", "check_desc"), "Layer7 check passed");
    // The wrong answer leaves `expect` waiting for more until `timeout
    // check`: L7TOUT, as haproxy 2.6 reports it for the same script.
    let csv = wait_check(&sock, "be", "bad", "DOWN", "L7TOUT").await;
    assert_eq!(csv.get("be", "bad", "check_desc"), "Layer7 timeout");
    // `tcp-check connect port` checks another port than the server's.
    wait_check(&sock, "portcheck", "p", "UP", "L7OK").await;
}

/// `observe layer7` + `error-limit 2`: a server answering 500 to live
/// traffic while its active check (TCP) still passes is taken out by the
/// traffic itself, long before the next regular check (`inter 10s`): at
/// once with `mark-down`, after two rounds with `sudden-death`, after
/// `fall` rounds with `fail-check` (HAProxy's `__health_adjust`). The
/// servers first climb to full health (`fastinter 100ms` while not full);
/// the burst of errors takes less than that `fastinter`, after which each
/// `on-error` asks for the next check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_layer7_takes_a_5xx_server_out_before_the_next_check() {
    let good = Backend::start("good").await;
    let bad = Scripted::start(|_| http("500 Internal Server Error", "boom")).await;
    let modes = [("mark-down", 2), ("sudden-death", 4), ("fail-check", 6)];
    let (_hold, ports) = hold_port_vec(modes.len());
    let mut cfg = HEAD.to_string();
    for (i, (mode, _)) in modes.iter().enumerate() {
        cfg.push_str(&format!(
            "
listen {mode}
    bind 127.0.0.1:{}
    server bad {} check inter 10s fastinter 5s rise 2 fall 3 observe layer7 error-limit 2 on-error {mode}
    server good {}
",
            ports[i],
            bad.addr,
            good.hostport()
        ));
    }
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    for (px, errors) in modes {
        // Full health: rise + fall - 1.
        let end = std::time::Instant::now() + DEADLINE;
        while show_stat(&sock).await.get(px, "bad", "check_health") != "4" {
            assert!(std::time::Instant::now() < end, "{px}: full health");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let i = modes.iter().position(|m| m.0 == px).unwrap();
        let addr = SocketAddr::from(([127, 0, 0, 1], ports[i]));
        let mut c = HttpConn::connect(addr).await;
        let mut fives = 0;
        while fives < errors {
            if c.is_closed() {
                c = HttpConn::connect(addr).await;
            }
            if c.get("/").await.status == 500 {
                fives += 1;
            }
            if fives == errors - 1 {
                assert!(
                    server_status(&sock, px, "bad").await.starts_with("UP"),
                    "{px}: still UP before its last error"
                );
            }
        }
        // The server is marked down as the last error is seen, which may
        // be just after its 500 reached the client: wait for it. `on-error`
        // brings the next check to `fastinter` after the error, and this
        // server passes TCP checks: a fastinter of 100 ms would let it come
        // back UP within two checks, before a slow machine sent the
        // requests below (as HAProxy would too); 5 s keeps it DOWN.
        wait_until(DEADLINE, "marked down", || async {
            server_status(&sock, px, "bad").await == "DOWN"
        })
        .await;
        let csv = show_stat(&sock).await;
        assert_eq!(csv.get(px, "bad", "check_status"), "HANA", "{px}");
        assert_eq!(csv.get(px, "bad", "check_desc"), "Health analyze", "{px}");
        for _ in 0..5 {
            let r = get(addr, "/").await;
            assert_eq!((r.status, r.backend()), (200, "good".to_string()), "{px}");
        }
    }
}

/// `on-error fastinter`: errors seen on live traffic do not count as a
/// failed check, they bring the next active check forward: with `inter
/// 10s fastinter 100ms`, a server whose check URI started failing goes
/// DOWN (L7STS) within a second once traffic saw its 500s, not after
/// 10 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_on_error_fastinter_brings_the_next_check_forward() {
    let healthy = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let h = healthy.clone();
    let srv = Scripted::start(move |_| {
        if h.load(SeqCst) {
            http("200 OK", "")
        } else {
            http("500 Internal Server Error", "")
        }
    })
    .await;
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "{HEAD}
listen px
    bind {fe}
    option httpchk GET /
    server s {} check inter 10s fastinter 100ms rise 1 fall 2 observe layer7 error-limit 1 on-error fastinter
",
        srv.addr
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    let end = std::time::Instant::now() + DEADLINE;
    while show_stat(&sock).await.get("px", "s", "check_health") != "2" {
        assert!(std::time::Instant::now() < end, "full health");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let checks = srv.count.load(SeqCst);
    healthy.store(false, SeqCst);
    let r = get(SocketAddr::from(([127, 0, 0, 1], port)), "/").await;
    assert_eq!(r.status, 500);
    let started = std::time::Instant::now();
    wait_check(&sock, "px", "s", "DOWN", "L7STS").await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "DOWN after {:?}, sooner than inter",
        started.elapsed()
    );
    // Two failed checks (fall 2) after the request, at the fast pace.
    assert!(srv.count.load(SeqCst) >= checks + 1 + 2);
}

/// `observe layer4`: connection failures on live traffic count (here the
/// traffic port refuses while the check port answers): after
/// `error-limit 2` the server is DOWN with HANA, before its next check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_layer4_counts_refused_connections() {
    let good = Backend::start("good").await;
    let check = Scripted::fixed("200 OK", "").await;
    let (_hold, dead) = hold_port();
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "{HEAD}
listen px
    bind {fe}
    retries 0
    server dead 127.0.0.1:{dead} check port {} inter 10s observe layer4 error-limit 2 on-error mark-down
    server good {}
",
        check.addr.port(),
        good.hostport()
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    wait_check(&sock, "px", "dead", "UP", "L4OK").await;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut failed = 0;
    for _ in 0..20 {
        if get(addr, "/").await.status != 200 {
            failed += 1;
        }
        if server_status(&sock, "px", "dead").await.starts_with("DOWN") {
            break;
        }
    }
    assert_eq!(failed, 2, "error-limit 2");
    wait_check(&sock, "px", "dead", "DOWN", "HANA").await;
    for _ in 0..4 {
        let r = get(addr, "/").await;
        assert_eq!((r.status, r.backend()), (200, "good".to_string()));
    }
}

/// `http-check disable-on-404`, the graceful-drain idiom, as haproxy 2.6.12
/// does it: a 404 to the check of an UP server puts it in NOLB with
/// `L7OKC` (code 404, "Layer7 check conditionally passed", empty
/// last_chk); it takes no new traffic, but the request in progress
/// finishes and a client its persistence cookie names is still served;
/// a 200 brings it back UP. A 404 to a DOWN server is a plain `L7STS`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disable_on_404_drains_through_nolb_and_back() {
    use std::sync::atomic::AtomicU16;
    let (a, b) = (Backend::start("a").await, Backend::start("b").await);
    // `a`'s check answers what `answer` says (checks go there by `port`).
    let answer = Arc::new(AtomicU16::new(200));
    let ans = answer.clone();
    let a_check = Scripted::start(move |_| match ans.load(SeqCst) {
        404 => http("404 Not Found", ""),
        _ => http("200 OK", ""),
    })
    .await;
    let b_check = Scripted::fixed("200 OK", "").await;
    // DOWN at the first check (500), then 404 for ever.
    let c_check = Scripted::start(|n| match n {
        0 => http("500 Internal Server Error", ""),
        _ => http("404 Not Found", ""),
    })
    .await;
    let fe_port = Listen::new();
    let port = fe_port.port();
    let cfg = format!(
        "{HEAD}
frontend fe
    bind {fe_port}
    default_backend be

backend be
    cookie SRV insert indirect nocache
    option httpchk GET /health
    http-check disable-on-404
    server a {} cookie a check port {} inter 100ms rise 1 fall 2
    server b {} cookie b check port {} inter 100ms rise 1 fall 2
    server c 127.0.0.1:1 check port {} inter 100ms rise 1 fall 2
",
        a.addr,
        a_check.addr.port(),
        b.addr,
        b_check.addr.port(),
        c_check.addr.port(),
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    let fe = SocketAddr::from(([127, 0, 0, 1], port));
    wait_check(&sock, "be", "a", "UP", "L7OK").await;
    wait_check(&sock, "be", "b", "UP", "L7OK").await;
    let csv = wait_check(&sock, "be", "c", "DOWN", "L7STS").await;
    let cookie_a = |path: &str| {
        format!("GET {path} HTTP/1.1\r\nhost: h\r\ncookie: SRV=a\r\n\r\n").into_bytes()
    };
    // A request in progress on `a` when it starts draining.
    a.set_gated(true);
    let held_req = cookie_a("/held");
    let held = tokio::spawn(async move { HttpConn::connect(fe).await.raw(&held_req, false).await });
    a.wait_started("/held", DEADLINE).await;

    answer.store(404, SeqCst);
    let csv_nolb = wait_check(&sock, "be", "a", "NOLB", "L7OKC").await;
    let get = |f: &str| csv_nolb.get("be", "a", f);
    assert_eq!(get("check_code"), "404");
    assert_eq!(get("check_desc"), "Layer7 check conditionally passed");
    assert_eq!(get("last_chk"), "", "as haproxy 2.6.12");
    assert_eq!((get("chkdown"), get("downtime")), ("0".into(), "0".into()));
    assert_eq!(get("weight"), "1", "NOLB keeps its weight in show stat");
    // No new traffic for `a`.
    for _ in 0..6 {
        let r = request(fe, "GET", "/new", b"").await;
        assert_eq!((r.status, r.backend()), (200, "b".to_string()));
    }
    // The held request finishes, and the persistent client is kept.
    a.set_gated(false);
    a.release(1);
    let r = within(DEADLINE, "held request", held)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((r.status, r.backend()), (200, "a".to_string()));
    let r = HttpConn::connect(fe)
        .await
        .raw(&cookie_a("/sticky"), false)
        .await
        .unwrap();
    assert_eq!((r.status, r.backend()), (200, "a".to_string()));
    // The 404 of a DOWN server is a failure: `c` stays DOWN, code 404.
    wait_until(DEADLINE, "c's 404 answered", || async {
        show_stat(&sock).await.get("be", "c", "check_code") == "404"
    })
    .await;
    let csv_c = show_stat(&sock).await;
    assert_eq!(
        (
            csv_c.get("be", "c", "status"),
            csv_c.get("be", "c", "check_status")
        ),
        ("DOWN".to_string(), "L7STS".to_string())
    );
    assert_eq!(csv.get("be", "c", "check_code"), "500");

    answer.store(200, SeqCst);
    wait_check(&sock, "be", "a", "UP", "L7OK").await;
    let mut to_a = 0;
    for _ in 0..6 {
        let r = request(fe, "GET", "/again", b"").await;
        assert_eq!(r.status, 200);
        to_a += usize::from(r.backend() == "a");
    }
    assert_eq!(to_a, 3, "roundrobin over a and b again");
    // Told at notice as haproxy: stopping, then UP again.
    let err = s.stderr();
    assert!(
        err.contains("Server be/a is stopping, reason: Layer7 check conditionally passed, code: 404, check duration: ")
            && err.contains("ms. 1 active and 0 backup servers online. 0 sessions requeued, 0 total in queue."),
        "{err}"
    );
    assert!(
        err.contains("Server be/a is UP, reason: Layer7 check passed, code: 200"),
        "{err}"
    );
}
