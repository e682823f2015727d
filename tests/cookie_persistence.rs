//! Cookie-based persistence (`cookie <name> ...`, `server ... cookie <v>`):
//! stickiness on real backends, what happens when the named server is DOWN
//! or draining, and the exact bytes of the insert / prefix / rewrite modes
//! on a raw backend, each expected value captured from haproxy 2.6.12 with
//! the same configuration (sluice keeps the received header name case
//! where HAProxy lower-cases, so the raw answers use lower-case names).

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::raw::RawBackend;
use support::*;

const DEFAULTS: &str = "defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
";

/// A frontend on `port` in front of backend `be` with `cookie_line` and the
/// given `server` lines.
fn config(fe: &Listen, cookie_line: &str, servers: &str, extra_global: &str) -> String {
    format!(
        "global
    stats socket @DIR@/admin.sock level admin
{extra_global}
{DEFAULTS}
frontend fe
    bind {fe}
    default_backend be

backend be
    balance roundrobin
    {cookie_line}
{servers}"
    )
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// `GET /` with an optional `Cookie` header, on a new connection.
async fn get_with_cookie(port: u16, cookie: Option<&str>) -> Response {
    let mut c = HttpConn::connect(addr(port)).await;
    let mut req = String::from("GET / HTTP/1.1\r\nhost: h\r\n");
    if let Some(v) = cookie {
        req.push_str(&format!("cookie: {v}\r\n"));
    }
    req.push_str("\r\n");
    within(
        REQ_DEADLINE,
        "GET with cookie",
        c.raw(req.as_bytes(), false),
    )
    .await
    .unwrap()
}

/// Sends `req` on a new connection and returns everything received until
/// the server closes or stays silent for 500 ms.
async fn send(port: u16, req: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(req).await.unwrap();
    let mut out = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        match tokio::time::timeout(Duration::from_millis(500), s.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => out.extend_from_slice(&chunk[..n]),
            _ => return out,
        }
    }
}

fn req_with_cookie(cookie: Option<&str>) -> Vec<u8> {
    let mut r = String::from("GET / HTTP/1.1\r\nhost: h\r\n");
    if let Some(c) = cookie {
        r.push_str(&format!("cookie: {c}\r\n"));
    }
    r.push_str("connection: close\r\n\r\n");
    r.into_bytes()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The first request gets a cookie naming the server roundrobin chose;
/// 100 requests carrying it all go there, while requests without it keep
/// alternating.
#[tokio::test(flavor = "multi_thread")]
async fn insert_sticks_to_the_named_server() {
    let (b1, b2) = (Backend::start("s1").await, Backend::start("s2").await);
    let fe = Listen::new();
    let port = fe.port();
    let servers = format!(
        "    server s1 {} cookie s1\n    server s2 {} cookie s2\n",
        b1.hostport(),
        b2.hostport()
    );
    let _s = Sluice::start(&config(
        &fe,
        "cookie SRV insert indirect nocache",
        &servers,
        "",
    ));

    let first = get_with_cookie(port, None).await;
    let chosen = first.backend();
    assert_eq!(
        first.header("set-cookie"),
        Some(format!("SRV={chosen}; path=/").as_str()),
        "{}",
        first.head
    );
    let other = if chosen == "s1" { "s2" } else { "s1" };
    let cookie = format!("SRV={chosen}");
    let (h1, h2) = (b1.hits(), b2.hits());
    for _ in 0..100 {
        let r = get_with_cookie(port, Some(&cookie)).await;
        assert_eq!(r.backend(), chosen);
        assert_eq!(r.header("set-cookie"), None, "{}", r.head);
    }
    let (to_chosen, to_other) = if chosen == "s1" {
        (b1.hits() - h1, b2.hits() - h2)
    } else {
        (b2.hits() - h2, b1.hits() - h1)
    };
    assert_eq!((to_chosen, to_other), (100, 0));
    // Without the cookie, roundrobin goes on where it was.
    let names: Vec<String> = {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(get_with_cookie(port, None).await.backend());
        }
        v
    };
    assert_eq!(names, [other, chosen.as_str(), other, chosen.as_str()]);
    // A cookie naming no server is balanced and replaced.
    let r = get_with_cookie(port, Some("SRV=nope")).await;
    assert_eq!(
        r.header("set-cookie"),
        Some(format!("SRV={}; path=/", r.backend()).as_str())
    );
}

/// The named server in maintenance: its cookie is balanced like no cookie
/// and the answer sets the other server's; a draining server keeps its
/// persistent sessions but gets no new ones.
#[tokio::test(flavor = "multi_thread")]
async fn down_server_rebalances_draining_server_keeps_sessions() {
    let (b1, b2) = (Backend::start("s1").await, Backend::start("s2").await);
    let fe = Listen::new();
    let port = fe.port();
    let servers = format!(
        "    server s1 {} cookie s1\n    server s2 {} cookie s2\n",
        b1.hostport(),
        b2.hostport()
    );
    let s = Sluice::start(&config(&fe, "cookie SRV insert indirect", &servers, ""));
    let sock = s.path("admin.sock");
    // `show stat` (admin level) shows the cookie values and name.
    let csv = show_stat(&sock).await;
    assert_eq!(csv.get("be", "s1", "cookie"), "s1");
    assert_eq!(csv.get("be", "s2", "cookie"), "s2");
    assert_eq!(csv.get("be", "BACKEND", "cookie"), "SRV");

    cli(&sock, "disable server be/s1").await;
    for _ in 0..3 {
        let r = get_with_cookie(port, Some("SRV=s1")).await;
        assert_eq!(r.backend(), "s2");
        assert_eq!(r.header("set-cookie"), Some("SRV=s2; path=/"));
    }
    cli(&sock, "enable server be/s1").await;
    // Without checks, a server leaving maintenance is usable at once.
    assert_eq!(server_status(&sock, "be", "s1").await, "no check");
    assert_eq!(get_with_cookie(port, Some("SRV=s1")).await.backend(), "s1");

    cli(&sock, "set server be/s1 state drain").await;
    for _ in 0..3 {
        let r = get_with_cookie(port, Some("SRV=s1")).await;
        assert_eq!(r.backend(), "s1");
        assert_eq!(r.header("set-cookie"), None);
        assert_eq!(get_with_cookie(port, None).await.backend(), "s2");
    }
}

/// A killed backend with health checks: once it is DOWN, its cookie goes
/// to the other server, which sets its own.
#[tokio::test(flavor = "multi_thread")]
async fn killed_backend_with_checks_loses_its_sessions() {
    let (mut b1, b2) = (Backend::start("s1").await, Backend::start("s2").await);
    let fe = Listen::new();
    let port = fe.port();
    let servers = format!(
        "    server s1 {} cookie s1 check inter 100 fall 1 rise 1\n    server s2 {} cookie s2 check inter 100 fall 1 rise 1\n",
        b1.hostport(),
        b2.hostport()
    );
    let s = Sluice::start(&config(&fe, "cookie SRV insert indirect", &servers, ""));
    let sock = s.path("admin.sock");
    assert_eq!(get_with_cookie(port, Some("SRV=s1")).await.backend(), "s1");
    b1.kill().await;
    wait_until(Duration::from_secs(5), "s1 DOWN", || {
        let sock = sock.clone();
        async move { server_status(&sock, "be", "s1").await == "DOWN" }
    })
    .await;
    let r = get_with_cookie(port, Some("SRV=s1")).await;
    assert_eq!(r.backend(), "s2");
    assert_eq!(r.header("set-cookie"), Some("SRV=s2; path=/"));
}

/// A raw backend `s1` and `s2` (both the same recorder), cookie values
/// s1 / s2, with `cookie_line`.
async fn raw_setup(cookie_line: &str, answer: &[u8]) -> (RawBackend, u16, Sluice) {
    let raw = RawBackend::start().await;
    raw.answer(answer);
    let fe = Listen::new();
    let port = fe.port();
    let servers = format!(
        "    server s1 {0} cookie s1\n    server s2 {0} cookie s2\n",
        raw.addr
    );
    let s = Sluice::start(&config(&fe, cookie_line, &servers, ""));
    (raw, port, s)
}

const APP_COOKIE: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nset-cookie: JSESSIONID=abc123; path=/app; HttpOnly\r\nset-cookie: other=1\r\n\r\nok";

/// `insert indirect`: the persistence cookie leaves the request (the
/// others stay, the header goes when it held only that one); the inserted
/// cookie has HAProxy's attributes in its order.
#[tokio::test(flavor = "multi_thread")]
async fn insert_indirect_bytes_match_haproxy() {
    let (raw, port, _s) = raw_setup(
        "cookie SRV insert indirect nocache httponly secure domain .a.com domain b.org",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
    )
    .await;
    let got = send(port, &req_with_cookie(None)).await;
    assert_eq!(
        text(&got),
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nset-cookie: SRV=s1; path=/; domain=.a.com; domain=b.org; HttpOnly; Secure\r\nconnection: close\r\n\r\nok"
    );
    for (sent, forwarded) in [
        ("a=1; SRV=s2; b=2", Some("a=1; b=2")),
        ("SRV=s1", None),
        ("SRV=s1; b=2", Some("b=2")),
        ("a=1; SRV=s2", Some("a=1")),
        ("a=1, SRV=s2", Some("a=1")),
        ("SRV=s2, a=1", Some("a=1")),
        ("SRV = s2 ; b=1", Some("b=1")),
        // Spaces around `=` go, in every cookie of the header.
        ("a = 1 ; SRV=s2", Some("a=1 ")),
        ("a =1;SRV=s2 ;  b= 2", Some("a=1; b=2")),
        // RFC 2109 attributes go with the cookie before them.
        ("$Version=1; SRV=s2; $Path=/", None),
        ("$Version=1; SRV=s2; $Path=/; c=3", Some("$Version=1; c=3")),
    ] {
        raw.take();
        let got = send(port, &req_with_cookie(Some(sent))).await;
        // A valid cookie: nothing inserted.
        assert_eq!(
            text(&got),
            "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"
        );
        let req = text(&raw.take());
        let expect = match forwarded {
            Some(v) => format!("GET / HTTP/1.1\r\nhost: h\r\ncookie: {v}\r\n"),
            None => "GET / HTTP/1.1\r\nhost: h\r\n\r\n".to_string(),
        };
        assert!(
            req.starts_with(&expect),
            "sent {sent:?}, server got {req:?}"
        );
    }
}

/// `nocache`: `cache-control: private` follows the inserted cookie only
/// when the response is cacheable (haproxy 2.6.12: a safe method, and a
/// freshness or a validator), and never on a POST.
#[tokio::test(flavor = "multi_thread")]
async fn nocache_marks_cacheable_responses_private() {
    for (hdr, private) in [
        ("cache-control: max-age=60", true),
        ("etag: x", true),
        ("expires: Thu, 01 Dec 2094 16:00:00 GMT", true),
        ("cache-control: public", false),
        ("cache-control: max-age=0, s-maxage=10", false),
    ] {
        let answer = format!("HTTP/1.1 200 OK\r\n{hdr}\r\ncontent-length: 2\r\n\r\nok");
        let (_raw, port, _s) = raw_setup("cookie SRV insert nocache", answer.as_bytes()).await;
        let got = send(port, &req_with_cookie(None)).await;
        let cc = if private {
            "cache-control: private\r\n"
        } else {
            ""
        };
        assert_eq!(
            text(&got),
            format!(
                "HTTP/1.1 200 OK\r\n{hdr}\r\ncontent-length: 2\r\nset-cookie: SRV=s1; path=/\r\n{cc}connection: close\r\n\r\nok"
            )
        );
        let post = b"POST / HTTP/1.1\r\nhost: h\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        let got = send(port, post).await;
        assert_eq!(
            text(&got),
            format!(
                "HTTP/1.1 200 OK\r\n{hdr}\r\ncontent-length: 2\r\nset-cookie: SRV=s2; path=/\r\nconnection: close\r\n\r\nok"
            )
        );
    }
}

/// `prefix`: the server's cookie gets `<server>~` in front, which leaves
/// the request again on its way back.
#[tokio::test(flavor = "multi_thread")]
async fn prefix_bytes_match_haproxy() {
    let (raw, port, _s) = raw_setup("cookie JSESSIONID prefix", APP_COOKIE).await;
    let got = send(port, &req_with_cookie(None)).await;
    assert_eq!(
        text(&got),
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nset-cookie: JSESSIONID=s1~abc123; path=/app; HttpOnly\r\nset-cookie: other=1\r\nconnection: close\r\n\r\nok"
    );
    raw.take();
    let got = send(port, &req_with_cookie(Some("JSESSIONID=s2~abc; x=1"))).await;
    assert_eq!(
        text(&got),
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nset-cookie: JSESSIONID=s2~abc123; path=/app; HttpOnly\r\nset-cookie: other=1\r\nconnection: close\r\n\r\nok"
    );
    let req = text(&raw.take());
    assert!(
        req.starts_with("GET / HTTP/1.1\r\nhost: h\r\ncookie: JSESSIONID=abc; x=1\r\n"),
        "{req:?}"
    );
    // No `~`: the whole value names no server, forwarded untouched.
    send(port, &req_with_cookie(Some("x=1; JSESSIONID=abc"))).await;
    let req = text(&raw.take());
    assert!(
        req.starts_with("GET / HTTP/1.1\r\nhost: h\r\ncookie: x=1; JSESSIONID=abc\r\n"),
        "{req:?}"
    );
}

/// `rewrite`: the server's cookie value becomes the server's cookie value;
/// the request is forwarded untouched.
#[tokio::test(flavor = "multi_thread")]
async fn rewrite_bytes_match_haproxy() {
    let (raw, port, _s) = raw_setup("cookie JSESSIONID rewrite", APP_COOKIE).await;
    let got = send(port, &req_with_cookie(None)).await;
    assert_eq!(
        text(&got),
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nset-cookie: JSESSIONID=s1; path=/app; HttpOnly\r\nset-cookie: other=1\r\nconnection: close\r\n\r\nok"
    );
    raw.take();
    let got = send(port, &req_with_cookie(Some("JSESSIONID=s1|zz"))).await;
    assert_eq!(
        text(&got),
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nset-cookie: JSESSIONID=s1; path=/app; HttpOnly\r\nset-cookie: other=1\r\nconnection: close\r\n\r\nok"
    );
    let req = text(&raw.take());
    assert!(
        req.starts_with("GET / HTTP/1.1\r\nhost: h\r\ncookie: JSESSIONID=s1|zz\r\n"),
        "{req:?}"
    );
    // `insert` over a server that sets the cookie itself: the server's is
    // removed and sluice's appended.
    let (_raw, port, _s) = raw_setup("cookie JSESSIONID insert", APP_COOKIE).await;
    let got = send(port, &req_with_cookie(None)).await;
    assert_eq!(
        text(&got),
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nset-cookie: other=1\r\nset-cookie: JSESSIONID=s1; path=/\r\nconnection: close\r\n\r\nok"
    );
}

/// The httplog termination state's persistence characters, as haproxy
/// 2.6.12 logged the same requests (`--` for a passive cookie).
#[tokio::test(flavor = "multi_thread")]
async fn log_shows_persistence_characters() {
    for (line, cases) in [
        (
            "cookie SRV insert indirect",
            &[
                (None, "--NI"),
                (Some("SRV=s2"), "--VN"),
                (Some("SRV=zz"), "--II"),
                (Some("SRV="), "--II"),
                // The first cookie naming a usable server wins.
                (Some("SRV=zz; SRV=s2"), "--VN"),
                (Some("SRV=s1; SRV=s2"), "--VN"),
                // s3 is in maintenance: balanced, a new cookie.
                (Some("SRV=s3"), "--DI"),
            ][..],
        ),
        (
            "cookie JSESSIONID prefix",
            &[(None, "--NR"), (Some("JSESSIONID=s2~abc"), "--VR")][..],
        ),
        (
            "cookie JSESSIONID indirect",
            &[(None, "--NP"), (Some("JSESSIONID=s1"), "--VD")][..],
        ),
        ("cookie JSESSIONID", &[(Some("JSESSIONID=s1"), "----")][..]),
    ] {
        let raw = RawBackend::start().await;
        raw.answer(APP_COOKIE);
        let fe = Listen::new();
        let port = fe.port();
        let servers = format!(
            "    server s1 {0} cookie s1\n    server s2 {0} cookie s2\n    server s3 127.0.0.1:1 cookie s3 disabled\n",
            raw.addr
        );
        let global = "    log stdout format raw daemon";
        let cfg = config(&fe, line, &servers, global).replace(
            "defaults\n    mode http\n",
            "defaults\n    mode http\n    log global\n    option httplog\n",
        );
        let s = Sluice::start(&cfg);
        for (i, (cookie, _)) in cases.iter().enumerate() {
            let req = format!(
                "GET /{i} HTTP/1.1\r\nhost: h\r\n{}connection: close\r\n\r\n",
                cookie.map_or(String::new(), |c| format!("cookie: {c}\r\n"))
            );
            send(port, req.as_bytes()).await;
        }
        let out = s.dir.join("sluice.stdout");
        wait_until(Duration::from_secs(10), "the log lines", || {
            let out = out.clone();
            let n = cases.len();
            async move {
                std::fs::read_to_string(&out)
                    .unwrap_or_default()
                    .lines()
                    .filter(|l| l.contains("\"GET /"))
                    .count()
                    >= n
            }
        })
        .await;
        let log = std::fs::read_to_string(&out).unwrap();
        for (i, (cookie, state)) in cases.iter().enumerate() {
            let l = log
                .lines()
                .find(|l| l.ends_with(&format!("\"GET /{i} HTTP/1.1\"")))
                .unwrap_or_else(|| panic!("no line for /{i}:\n{log}"));
            assert!(
                l.contains(&format!(" - - {state} ")),
                "{line} with {cookie:?}: want {state} in {l}"
            );
        }
    }
}

/// Bad `cookie` lines: HAProxy 2.6's messages with file and line.
#[test]
fn config_errors_as_haproxy_words_them() {
    for (line, msg) in [
        (
            "cookie",
            "parsing [t.cfg:7] : 'cookie' expects <cookie_name> as argument.",
        ),
        (
            "cookie SRV insert rewrite",
            "parsing [t.cfg:7] : cookie 'rewrite', 'insert' and 'prefix' modes are incompatible.",
        ),
        (
            "cookie SRV bogus",
            "parsing [t.cfg:7] : 'cookie' supports 'rewrite', 'insert', 'prefix', 'indirect', 'nocache', 'postonly', 'domain', 'maxidle', 'dynamic', 'maxlife' and 'attr' options.",
        ),
        (
            "cookie SRV domain",
            "parsing [t.cfg:7]: 'domain' expects <domain> as argument.",
        ),
        (
            "cookie SRV rewrite preserve",
            "parsing [t.cfg:7] : cookie 'preserve' requires at least 'insert' or 'indirect'.",
        ),
        (
            "cookie SRV rewrite indirect",
            "parsing [t.cfg:7] : cookie 'rewrite' and 'indirect' modes are incompatible.",
        ),
        (
            "cookie SRV insert maxidle 30m",
            "parsing [t.cfg:7] : 'cookie maxidle' is not supported by sluice yet",
        ),
    ] {
        let text = format!("{DEFAULTS}backend b\n    {line}\n    server s1 127.0.0.1:80 cookie\n");
        let dir = TempDir::new("cfg");
        dir.write("t.cfg", &text);
        let out = run_sluice(&["-c", "-f", "t.cfg"], Some(dir.path()));
        assert_eq!(out.code(), Some(1), "{line}: {}", out.stderr);
        assert!(
            out.stderr.contains(&format!(" : config : {msg}\n")),
            "{line}: want {msg:?} in\n{}",
            out.stderr
        );
        assert!(
            out.stderr
                .contains("[t.cfg:8] : 'server b/s1' : 'cookie' expects <value> as argument.."),
            "{}",
            out.stderr
        );
    }
}

/// The named server at its `maxconn`: a request with its cookie waits in
/// that server's queue (the other server is free) and is served by it once
/// a slot frees, as HAProxy's assigned-server path does.
#[tokio::test(flavor = "multi_thread")]
async fn persistent_request_waits_for_its_full_server() {
    let (b1, b2) = (Backend::start("s1").await, Backend::start("s2").await);
    let fe = Listen::new();
    let port = fe.port();
    let servers = format!(
        "    server s1 {} cookie s1 maxconn 1\n    server s2 {} cookie s2\n",
        b1.hostport(),
        b2.hostport()
    );
    let s = Sluice::start(&config(&fe, "cookie SRV insert indirect", &servers, ""));
    let sock = s.path("admin.sock");
    b1.set_gated(true);
    let req = |path: &'static str| async move {
        let mut c = HttpConn::connect(addr(port)).await;
        let raw = format!("GET {path} HTTP/1.1\r\nhost: h\r\ncookie: SRV=s1\r\n\r\n");
        within(REQ_DEADLINE, path, c.raw(raw.as_bytes(), false))
            .await
            .unwrap()
    };
    let first = tokio::spawn(req("/first"));
    b1.wait_started("/first", Duration::from_secs(5)).await;
    let second = tokio::spawn(req("/second"));
    wait_until(Duration::from_secs(5), "s1 qcur == 1", || {
        let sock = sock.clone();
        async move { show_stat(&sock).await.num("be", "s1", "qcur") == 1 }
    })
    .await;
    assert_eq!(b2.hits(), 0);
    b1.release(2);
    assert_eq!(first.await.unwrap().backend(), "s1");
    assert_eq!(second.await.unwrap().backend(), "s1");
    assert_eq!(b2.hits(), 0);
}

/// In a TCP backend the cookie is ignored with HAProxy 2.6's warnings;
/// `option persist` takes no argument.
#[test]
fn tcp_backend_cookie_warnings_and_persist_argument() {
    let tcp = "defaults\n    mode tcp\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\nbackend b\n    cookie SRV insert\n    server s1 127.0.0.1:80 cookie s1\nfrontend f\n    bind 127.0.0.1:8080\n    default_backend b\n";
    let dir = TempDir::new("cfg");
    dir.write("t.cfg", tcp);
    let out = run_sluice(&["-c", "-f", "t.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    for w in [
        " : config : cookie will be ignored for backend 'b' (needs 'mode http').\n",
        " : config : backend 'b' : ignoring cookie for server 's1' as HTTP mode is disabled.\n",
    ] {
        assert!(out.stderr.contains(w), "want {w:?} in\n{}", out.stderr);
    }
    let text = format!("{DEFAULTS}backend b\n    option persist foo\n");
    dir.write("p.cfg", &text);
    let out = run_sluice(&["-c", "-f", "p.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains(
            "parsing [p.cfg:7] : 'option persist' cannot handle unexpected argument 'foo'.\n"
        ),
        "{}",
        out.stderr
    );
}

/// `postonly`: only the answer to a POST gets the cookie; `preserve`: a
/// server that sets the cookie itself (a logout) is left alone and nothing
/// is inserted (bytes as haproxy 2.6.12).
#[tokio::test(flavor = "multi_thread")]
async fn postonly_and_preserve() {
    let plain = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
    let (_raw, port, _s) = raw_setup("cookie SRV insert postonly preserve", plain).await;
    let got = send(port, &req_with_cookie(None)).await;
    assert_eq!(
        text(&got),
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"
    );
    let post = b"POST / HTTP/1.1\r\nhost: h\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    let got = send(port, post).await;
    assert_eq!(
        text(&got),
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nset-cookie: SRV=s2; path=/\r\nconnection: close\r\n\r\nok"
    );
    let logout = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nset-cookie: SRV=; Max-Age=0\r\n\r\nok";
    let (_raw, port, _s) = raw_setup("cookie SRV insert preserve", logout).await;
    let got = send(port, &req_with_cookie(None)).await;
    assert_eq!(
        text(&got),
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nset-cookie: SRV=; Max-Age=0\r\nconnection: close\r\n\r\nok"
    );
}
