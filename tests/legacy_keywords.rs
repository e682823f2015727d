//! The header-rewriting keywords HAProxy 2.1 removed (`reqadd`, `reqrep`,
//! `reqdel`, `reqdeny`, `reqtarpit`, `rspadd`, `rsprep`, `rspdeny`,
//! `block`...), with HAProxy 1.8's semantics and 2.0's deprecation
//! warnings. Only HAProxy 2.6 is installed here, which refuses them, so the
//! expectations come from HAProxy 1.8's doc/configuration.txt and its
//! proto_http.c (`apply_filters_to_request`), and from 2.0's
//! cfgparse-listen.c for the warnings.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::raw::{RawBackend, read_until_quiet};
use support::*;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const DEFAULTS: &str = "defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
";

/// Sends one `connection: close` request and reads the answer to the close.
async fn exchange(port: u16, req: &str) -> String {
    let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    c.write_all(req.as_bytes()).await.unwrap();
    let r = read_until_quiet(&mut c, Duration::from_secs(5), Duration::from_secs(5)).await;
    assert!(r.closed_after.is_some(), "no close after {:?}", r.text());
    r.text()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn one_backend(fe: &Listen, be: SocketAddr, fe_rules: &str, be_rules: &str) -> String {
    format!(
        "global
    stats socket @DIR@/s.sock level admin
{DEFAULTS}
frontend fe
    bind {fe}
{fe_rules}
    default_backend be
backend be
{be_rules}
    server s1 {be}
"
    )
}

/// `sluice -c` prints HAProxy 2.0's deprecation warning with the file and
/// line, once per family of keywords (2.0's `already_warned()`), and the
/// configuration is valid.
#[test]
fn check_prints_deprecation_warnings() {
    let dir = TempDir::new("legacy-check");
    let cfg = format!(
        "{DEFAULTS}
frontend fe
    bind 127.0.0.1:1
    block if {{ path_beg /admin }}
    reqadd X-Proto:\\ SSL
    reqrep ^([^\\ :]*)\\ /static/(.*) \\1\\ /\\2
    reqirep ^Host:\\ www.mydomain.com Host:\\ www
    reqidel ^X-Forwarded-For:.*
    reqdeny ^X-Evil:
    reqipass ^Host:\\ ok
    reqallow ^Host:\\ www
    reqtarpit ^X-Bot:
    rspadd X-Via:\\ sluice
    rspidel ^Server:.*
    rsprep ^Location:\\ (.*) Location:\\ \\1
    rspideny ^Content-type:\\ .*/ms-word
    default_backend be
backend be
    reqdel ^X-Secret:
    server s1 127.0.0.1:2
"
    );
    let path = dir.write("old.cfg", &cfg);
    let p = path.to_str().unwrap();
    let out = run_sluice(&["-c", "-f", p], None);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let warned = |line: usize, msg: &str| {
        let want = format!("parsing [{p}:{line}] : {msg}");
        assert!(
            out.stderr.contains(&want),
            "no '{want}' in:\n{}",
            out.stderr
        );
    };
    let dep = |k: &str, modern: &str| {
        format!(
            "The '{k}' directive is deprecated in favor of '{modern}' and will be removed in next version."
        )
    };
    warned(
        9,
        "The 'block' directive is now deprecated in favor of 'http-request deny' which uses the exact same syntax. The rules are translated but support might disappear in a future version.",
    );
    warned(10, &dep("reqadd", "http-request add-header"));
    warned(
        11,
        "The 'reqrep' directive is deprecated in favor of 'http-request replace-uri' and 'http-request replace-header' and will be removed in next version.",
    );
    warned(13, &dep("reqidel", "http-request del-header"));
    warned(14, &dep("reqdeny", "http-request deny"));
    warned(
        15,
        "The 'reqipass' directive is deprecated and will be removed in next version.",
    );
    warned(16, &dep("reqallow", "http-request allow"));
    warned(17, &dep("reqtarpit", "http-request tarpit"));
    warned(18, &dep("rspadd", "http-response add-header"));
    warned(19, &dep("rspidel", "http-response del-header"));
    warned(20, &dep("rsprep", "http-response replace-header"));
    warned(21, &dep("rspideny", "http-response deny"));
    // HAProxy 2.0's `warnif_misplaced_reqxxx`: filters run before `reqadd`.
    warned(
        11,
        "a 'reqrep' rule placed after a 'reqadd' rule will still be processed before.",
    );
    // `reqirep` (line 12) and `reqdel` (line 24) are of families already
    // warned about.
    assert!(
        !out.stderr.contains(&format!("[{p}:12] : The")),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains(&format!("[{p}:24]")), "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("deprecated").count(),
        12,
        "{}",
        out.stderr
    );
}

/// HAProxy 1.8/2.0's argument errors.
#[test]
fn check_refuses_bad_arguments() {
    let dir = TempDir::new("legacy-bad");
    let cases = [
        (
            "reqrep ^a",
            "'reqrep' expects <search> and <replace> as arguments.",
        ),
        ("reqadd", "'reqadd' expects <header> as an argument."),
        ("reqdel", "'reqdel' expects <regex> as an argument."),
        (
            "reqdel ^a b",
            "'reqdel' : Expecting nothing, 'if', or 'unless', got 'b'.",
        ),
        ("rspdeny (", "'rspdeny' : regular expression '(' :"),
    ];
    for (line, msg) in cases {
        let cfg = format!(
            "{DEFAULTS}
frontend fe
    bind 127.0.0.1:1
    {line}
    default_backend be
backend be
    server s1 127.0.0.1:2
"
        );
        let path = dir.write("bad.cfg", &cfg);
        let p = path.to_str().unwrap();
        let out = run_sluice(&["-c", "-f", p], None);
        assert_ne!(out.code(), Some(0), "{line}: {}", out.stderr);
        let want = format!("parsing [{p}:9] : {msg}");
        assert!(
            out.stderr.contains(&want),
            "{line}: no '{want}' in:\n{}",
            out.stderr
        );
    }
    // Not in a defaults section (HAProxy 2.0).
    let cfg = format!("{DEFAULTS}    reqadd X-A:\\ 1\n");
    let path = dir.write("defaults.cfg", &cfg);
    let p = path.to_str().unwrap();
    let out = run_sluice(&["-c", "-f", p], None);
    assert_ne!(out.code(), Some(0));
    let want = format!("parsing [{p}:6] : 'reqadd' not allowed in 'defaults' section.");
    assert!(out.stderr.contains(&want), "{}", out.stderr);
}

/// The exact request bytes the server gets after each rewrite: `reqrep`
/// on the request line and on a header (with back-references), `reqidel`
/// of every matching line, `reqadd` (conditional) after the other headers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_rewrites_reach_the_server() {
    let be = RawBackend::start().await;
    let fe = Listen::new();
    let port = fe.port();
    let rules = "    acl api path_beg /api
    reqrep ^([^\\ :]*)\\ /static/(.*) \\1\\ /\\2
    reqirep ^host:\\ www.mydomain.com Host:\\ www
    reqidel ^X-Forwarded-For:
    reqadd X-Proto:\\ SSL if api
    reqadd X-Legacy:\\ yes";
    let _s = Sluice::start(&one_backend(&fe, be.addr, rules, ""));

    let got = exchange(
        port,
        "GET /static/css/a.css?v=1 HTTP/1.1\r\nHost: www.mydomain.com\r\nX-Forwarded-For: 1.2.3.4\r\nAccept: */*\r\nx-forwarded-for: 5.6.7.8\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
    assert_eq!(
        be.take_requests()
            .iter()
            .map(|r| text(r))
            .collect::<Vec<_>>(),
        ["GET /css/a.css?v=1 HTTP/1.1\r\nhost: www\r\naccept: */*\r\nx-legacy: yes\r\n\r\n"]
    );

    exchange(
        port,
        "GET /api/x HTTP/1.1\r\nHost: other\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(
        be.take_requests()
            .iter()
            .map(|r| text(r))
            .collect::<Vec<_>>(),
        ["GET /api/x HTTP/1.1\r\nhost: other\r\nx-proto: SSL\r\nx-legacy: yes\r\n\r\n"]
    );
}

/// The order sluice implements (HAProxy 1.8's): `block`, `http-request`
/// rules, the `req*` filters (which see the `http-request` edits; sluice
/// writes the names it adds in lower case, hence `reqirep`), then `reqadd`,
/// then `redirect`; then `use_backend` on the rewritten request, then the
/// backend's own filters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_run_between_http_request_rules_and_redirects() {
    let (b1, b2) = (RawBackend::start().await, RawBackend::start().await);
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "{DEFAULTS}
frontend fe
    bind {fe}
    http-request deny deny_status 405 if {{ path_beg /admin }}
    block if {{ path_beg /admin/secret }}
    http-request set-header X-Stage rules
    reqirep ^X-Stage:\\ (.*) X-Stage:\\ \\1,filters
    reqrep ^([^\\ :]*)\\ /old/(.*) \\1\\ /moved/\\2
    reqrep ^([^\\ :]*)\\ /api/v2/(.*) \\1\\ /v2/\\2
    redirect prefix /new if {{ path_beg /moved }}
    use_backend b2 if {{ path_beg /v2 }}
    default_backend b1
backend b1
    server s1 {}
backend b2
    reqadd X-Backend:\\ b2
    reqirep ^X-Stage:\\ (.*) X-Stage:\\ \\1,backend
    server s1 {}
",
        b1.addr, b2.addr
    );
    let _s = Sluice::start(&cfg);

    // `block` runs before the `http-request` rules written above it.
    let got = exchange(
        port,
        "GET /admin/secret HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(got.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{got}");
    let got = exchange(
        port,
        "GET /admin/x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(
        got.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
        "{got}"
    );

    // The redirect sees the rewritten path.
    let got = exchange(
        port,
        "GET /old/p?q=1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(got.starts_with("HTTP/1.1 302 Found\r\n"), "{got}");
    assert!(got.contains("\r\nlocation: /new/moved/p?q=1\r\n"), "{got}");

    // use_backend sees the rewritten path; the backend's filters run last.
    exchange(
        port,
        "GET /api/v2/items HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(
        b2.take_requests()
            .iter()
            .map(|r| text(r))
            .collect::<Vec<_>>(),
        [
            "GET /v2/items HTTP/1.1\r\nhost: h\r\nx-stage: rules,filters,backend\r\nx-backend: b2\r\n\r\n"
        ]
    );
    assert!(b1.take().is_empty());
}

/// Verdicts: `reqideny` answers 403; an earlier `reqallow` skips it; a
/// `reqpass` stops the later filters; nothing reaches the server when
/// denied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_allow_and_pass() {
    let be = RawBackend::start().await;
    let fe = Listen::new();
    let port = fe.port();
    let rules = "    reqiallow ^Host:\\ www\\.
    reqipass ^User-Agent:\\ friendly
    reqideny ^User-Agent:\\ .*bot";
    let s = Sluice::start(&one_backend(&fe, be.addr, rules, ""));

    let req = |host: &str, ua: &str| {
        format!("GET / HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {ua}\r\nConnection: close\r\n\r\n")
    };
    let got = exchange(port, &req("a.example", "EvilBot")).await;
    assert!(got.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{got}");
    assert!(be.take().is_empty());
    let got = exchange(port, &req("www.example", "EvilBot")).await;
    assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
    let got = exchange(port, &req("a.example", "friendly bot")).await;
    assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
    assert_eq!(be.take_requests().len(), 2);
    // The denial counts as a denied request of the frontend (HAProxy).
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.get("fe", "FRONTEND", "dreq"), "1");
    assert_eq!(csv.get("fe", "FRONTEND", "hrsp_4xx"), "1");
}

/// `reqtarpit`: held for `timeout tarpit`, then a 500, connection closed,
/// the server never contacted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tarpit_delays_then_answers_500() {
    let be = RawBackend::start().await;
    let fe = Listen::new();
    let port = fe.port();
    let rules = "    timeout tarpit 300ms
    reqitarpit ^User-Agent:\\ .*scanner";
    let s = Sluice::start(&one_backend(&fe, be.addr, rules, ""));
    let start = Instant::now();
    let got = exchange(
        port,
        "GET / HTTP/1.1\r\nHost: h\r\nUser-Agent: a Scanner\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(
        start.elapsed() >= Duration::from_millis(300),
        "{:?}",
        start.elapsed()
    );
    assert!(
        got.starts_with("HTTP/1.1 500 Internal Server Error\r\n"),
        "{got}"
    );
    assert!(be.take().is_empty());
    // Counted as a denied request (HAProxy's tarpit).
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.get("fe", "FRONTEND", "dreq"), "1");
}

/// A `reqrep` that breaks the request line: the rewritten head is parsed
/// again and refused with a 400 (HAProxy 1.8's `return_bad_req`); nothing
/// reaches the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_request_line_is_refused() {
    let be = RawBackend::start().await;
    let fe = Listen::new();
    let port = fe.port();
    let rules = "    reqrep ^GET\\ (.*) GET\\1";
    let s = Sluice::start(&one_backend(&fe, be.addr, rules, ""));
    let got = exchange(port, "GET /x HTTP/1.1\r\nHost: h\r\n\r\n").await;
    assert!(got.starts_with("HTTP/1.1 400 Bad request\r\n"), "{got}");
    assert!(be.take().is_empty());
    // A failed request of the frontend (`ereq`), as HAProxy counts it.
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.get("fe", "FRONTEND", "ereq"), "1");
}

/// Response filters: `rspidel`, `rsprep` (with a back-reference), `rspadd`
/// give the exact bytes the client gets; `rspideny` answers 502; an
/// `rsprep` that breaks the status line gives a 502.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_rewrites_and_deny() {
    let be = RawBackend::start().await;
    let fe = Listen::new();
    let port = fe.port();
    let rules = "    rspidel ^Server:
    rsprep ^Location:\\ http://127.0.0.1:8080(.*) Location:\\ https://www.example\\1
    rspadd X-Via:\\ sluice
    rspideny ^Content-Type:\\ .*/ms-word
    rsprep ^HTTP/1.1\\ 299(.*) HTTP/1.1\\ 2\\1";
    let s = Sluice::start(&one_backend(&fe, be.addr, rules, ""));
    let get = "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";

    be.answer(b"HTTP/1.1 302 Found\r\nServer: apache\r\nLocation: http://127.0.0.1:8080/x?y\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(
        exchange(port, get).await,
        "HTTP/1.1 302 Found\r\nlocation: https://www.example/x?y\r\ncontent-length: 0\r\nx-via: sluice\r\nconnection: close\r\n\r\n"
    );

    be.answer(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/ms-word\r\nContent-Length: 2\r\n\r\nok",
    );
    let got = exchange(port, get).await;
    assert!(got.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{got}");
    assert!(!got.ends_with("ok"), "{got}");

    be.answer(b"HTTP/1.1 299 Odd\r\nContent-Length: 2\r\n\r\nok");
    let got = exchange(port, get).await;
    assert!(got.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{got}");
    // The denied response counts on the backend and the server (`dresp`),
    // the broken one as a response error (`eresp`).
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.get("be", "BACKEND", "dresp"), "1");
    assert_eq!(csv.get("be", "s1", "dresp"), "1");
    assert_eq!(csv.get("be", "BACKEND", "eresp"), "1");
}

/// An old (HAProxy 1.4-style) configuration: 1.x timeouts, `block`,
/// `reqirep`, `reqadd`, `rspidel`, `rspadd`; it passes `-c` and routes as
/// it did. The `listen` section's response rules run once (it is its own
/// frontend and backend).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_config_routes_as_before() {
    let (web, api) = (RawBackend::start().await, RawBackend::start().await);
    let (_hold, port) = hold_port();
    let cfg = format!(
        "defaults
    mode http
    contimeout 2000
    clitimeout 5000
    srvtimeout 5000

listen www
    bind 127.0.0.1:{port}
    acl bad_src src 10.0.0.0/8
    acl is_api hdr_beg(host) -i api.
    block if bad_src
    reqirep ^Host:\\ api\\.old\\.example Host:\\ api.example
    reqadd X-Forwarded-Proto:\\ http
    rspidel ^X-Powered-By:
    rspadd X-Served-By:\\ www
    http-response add-header X-Frame-Options DENY
    use_backend api if is_api
    server web1 {}

backend api
    server api1 {}
",
        web.addr, api.addr
    );
    let dir = TempDir::new("legacy-old");
    let path = dir.write("old.cfg", &cfg);
    let out = run_sluice(&["-c", "-f", path.to_str().unwrap()], None);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let _s = Sluice::start(&cfg);

    api.answer(b"HTTP/1.1 200 OK\r\nX-Powered-By: PHP\r\nContent-Length: 3\r\n\r\napi");
    let got = exchange(
        port,
        "GET /v1 HTTP/1.1\r\nHost: api.old.example\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(
        got,
        "HTTP/1.1 200 OK\r\ncontent-length: 3\r\nx-frame-options: DENY\r\nx-served-by: www\r\nconnection: close\r\n\r\napi"
    );
    assert_eq!(
        api.take_requests()
            .iter()
            .map(|r| text(r))
            .collect::<Vec<_>>(),
        ["GET /v1 HTTP/1.1\r\nhost: api.example\r\nx-forwarded-proto: http\r\n\r\n"]
    );
    let got = exchange(
        port,
        "GET / HTTP/1.1\r\nHost: www.example\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(
        got,
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-frame-options: DENY\r\nx-served-by: www\r\nconnection: close\r\n\r\nok"
    );
    assert_eq!(web.take_requests().len(), 1);
    assert!(api.take().is_empty());
}
