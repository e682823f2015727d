//! `option forwardfor`, `http-request` / `http-response` header, path and
//! redirect rules and `errorfile`: the exact bytes the backend received
//! and the client got, as HAProxy 2.6 produces them (each expected value
//! below was captured from haproxy 2.6 with the same configuration, in
//! front of the same raw backend; sluice keeps the received header name
//! case where HAProxy lower-cases, so requests here use lower-case names).

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::raw::RawBackend;
use support::*;

const DENIED_CLOSE: &str = "HTTP/1.1 502 Bad Gateway\r\ncontent-length: 107\r\ncache-control: no-cache\r\ncontent-type: text/html\r\nconnection: close\r\n\r\n<html><body><h1>502 Bad Gateway</h1>\nThe server returned an invalid or incomplete response.\n</body></html>\n";
const DENIED: &str = "HTTP/1.1 502 Bad Gateway\r\ncontent-length: 107\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n\r\n<html><body><h1>502 Bad Gateway</h1>\nThe server returned an invalid or incomplete response.\n</body></html>\n";
/// The `defaults` section most tests here start with.
const DEFAULTS: &str = "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
";
const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-srv: a\r\n\r\nok";

/// The raw recording backend (tests/support/raw.rs), answering [`OK`].
async fn raw_backend() -> RawBackend {
    let be = RawBackend::start().await;
    be.answer(OK);
    be
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

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn cfg(ports: &[u16], be: SocketAddr, errorfile: &str) -> String {
    format!(
        "{DEFAULTS}frontend fe
    bind 127.0.0.1:{p0}
    option forwardfor
    http-request set-header X-A %[src]
    http-request add-header X-B \"v %[req.hdr(host)] %ci\"
    http-request del-header X-Del
    http-request set-path /new if {{ path /p }}
    http-request set-query a=1 if {{ path /q }}
    http-request redirect location /loc if {{ path /r1 }}
    http-request redirect prefix /pre code 301 if {{ path /r2 }}
    http-request redirect scheme https code 308 if {{ path /r3 }}
    http-response set-header X-R yes
    http-response add-header X-R2 two
    http-response del-header X-Srv
    default_backend be
frontend fe2
    bind 127.0.0.1:{p1}
    option forwardfor except 127.0.0.0/8
    default_backend be
frontend fe3
    bind 127.0.0.1:{p2}
    option forwardfor header X-Client if-none
    default_backend be
frontend fe4
    bind 127.0.0.1:{p3}
    errorfile 503 {errorfile}
    default_backend nobe
frontend fe5
    bind 127.0.0.1:{p4}
    http-request allow if {{ path /allowed }}
    http-request add-header X-After-Allow 1
    http-response deny if {{ src 127.0.0.1 }}
    default_backend be
backend nobe
backend be
    server s {be}
",
        p0 = ports[0],
        p1 = ports[1],
        p2 = ports[2],
        p3 = ports[3],
        p4 = ports[4],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_forwardfor_redirects_errorfile_as_haproxy() {
    let be = raw_backend().await;
    let dir = TempDir::new("http-rules");
    let page = dir.write(
        "503.http",
        "HTTP/1.0 503 Custom\r\nCache-Control: no-cache\r\nContent-Type: text/plain\r\n\r\nsorry\n",
    );
    let (_hold, ports) = hold_ports::<5>();
    let _s = Sluice::start(&cfg(&ports, be.addr, page.to_str().unwrap()));

    // Header rules and forwardfor: added in rule order, then the
    // X-Forwarded-For line; a client's own X-Forwarded-For is kept.
    let r = send(
        ports[0],
        b"GET /x?y HTTP/1.1\r\nhost: h\r\nx-del: 1\r\nx-forwarded-for: 9.9.9.9\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(
        text(&r),
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-r: yes\r\nx-r2: two\r\nconnection: close\r\n\r\nok"
    );
    assert_eq!(
        text(&be.take()),
        "GET /x?y HTTP/1.1\r\nhost: h\r\nx-forwarded-for: 9.9.9.9\r\nx-a: 127.0.0.1\r\nx-b: v h 127.0.0.1\r\nx-forwarded-for: 127.0.0.1\r\n\r\n"
    );

    // set-path keeps the query; set-query keeps the path.
    let r = send(ports[0], b"GET /p?k HTTP/1.1\r\nhost: h\r\n\r\n").await;
    assert_eq!(
        text(&r),
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-r: yes\r\nx-r2: two\r\n\r\nok"
    );
    let r = send(ports[0], b"GET /q?k HTTP/1.1\r\nhost: h\r\n\r\n").await;
    assert!(text(&r).starts_with("HTTP/1.1 200 OK\r\n"));
    assert_eq!(
        text(&be.take()),
        "GET /new?k HTTP/1.1\r\nhost: h\r\nx-a: 127.0.0.1\r\nx-b: v h 127.0.0.1\r\nx-forwarded-for: 127.0.0.1\r\n\r\n\
         GET /q?a=1 HTTP/1.1\r\nhost: h\r\nx-a: 127.0.0.1\r\nx-b: v h 127.0.0.1\r\nx-forwarded-for: 127.0.0.1\r\n\r\n"
    );

    // Redirects: HAProxy's exact answers, nothing reaches the server.
    let cases: [(&[u8], &str); 5] = [
        (
            b"GET /r1?k HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
            "HTTP/1.1 302 Found\r\ncontent-length: 0\r\nlocation: /loc\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
        ),
        (
            b"GET /r2?k HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
            "HTTP/1.1 301 Moved Permanently\r\ncontent-length: 0\r\nlocation: /pre/r2?k\r\nconnection: close\r\n\r\n",
        ),
        (
            b"GET /r3?k HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
            "HTTP/1.1 308 Permanent Redirect\r\ncontent-length: 0\r\nlocation: https://h/r3?k\r\nconnection: close\r\n\r\n",
        ),
        (
            // Keep-alive: no connection header, the connection stays open.
            b"GET /r2?k HTTP/1.1\r\nhost: h\r\n\r\n",
            "HTTP/1.1 301 Moved Permanently\r\ncontent-length: 0\r\nlocation: /pre/r2?k\r\n\r\n",
        ),
        (
            b"GET /r1 HTTP/1.0\r\nhost: h\r\n\r\n",
            "HTTP/1.1 302 Found\r\ncontent-length: 0\r\nlocation: /loc\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
        ),
    ];
    for (req, want) in cases {
        assert_eq!(text(&send(ports[0], req).await), want, "{}", text(req));
    }
    assert!(be.take().is_empty(), "a redirect reached the server");

    // except 127.0.0.0/8: no header for a local client.
    send(
        ports[1],
        b"GET / HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
    )
    .await;
    // header X-Client if-none: added when absent, not when present.
    send(
        ports[2],
        b"GET / HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
    )
    .await;
    send(
        ports[2],
        b"GET / HTTP/1.1\r\nhost: h\r\nx-client: 1\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(
        text(&be.take()),
        "GET / HTTP/1.1\r\nhost: h\r\n\r\n\
         GET / HTTP/1.1\r\nhost: h\r\nx-client: 127.0.0.1\r\n\r\n\
         GET / HTTP/1.1\r\nhost: h\r\nx-client: 1\r\n\r\n"
    );

    // errorfile: the file's response (header names lower-cased, as
    // HAProxy emits a parsed errorfile), then the connection is closed.
    for req in [
        &b"GET / HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nhost: h\r\n\r\n",
    ] {
        assert_eq!(
            text(&send(ports[3], req).await),
            "HTTP/1.0 503 Custom\r\ncache-control: no-cache\r\ncontent-type: text/plain\r\n\r\nsorry\n"
        );
    }

    // allow stops the rules; http-response deny: the server's answer is
    // replaced by the 502 page and the connection closed.
    let r = send(
        ports[4],
        b"GET /allowed HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(text(&r), DENIED_CLOSE);
    let r = send(ports[4], b"GET /other HTTP/1.1\r\nhost: h\r\n\r\n").await;
    assert_eq!(text(&r), DENIED);
    assert_eq!(
        text(&be.take()),
        "GET /allowed HTTP/1.1\r\nhost: h\r\n\r\nGET /other HTTP/1.1\r\nhost: h\r\nx-after-allow: 1\r\n\r\n"
    );
}

#[test]
fn missing_errorfile_is_a_config_error_with_its_line() {
    let dir = TempDir::new("http-rules-cfg");
    let cfg = dir.write(
        "s.cfg",
        "defaults\n    mode http\nfrontend fe\n    bind 127.0.0.1:1\n    errorfile 503 /nonexistent/503.http\n",
    );
    let out = run_sluice(&["-c", "-f", cfg.to_str().unwrap()], None);
    assert_ne!(out.code(), Some(0));
    assert!(
        out.stderr
            .contains("s.cfg:5] : errorfile : error opening file '/nonexistent/503.http'."),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_header_as_haproxy() {
    let be = raw_backend().await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&format!(
        "{DEFAULTS}frontend fe
    bind {fe}
    http-request add-header X-Added abc-1
    http-request replace-header X-Added (abc)-(\\d) \\2-\\1
    http-request replace-header Cookie foo=([^;]*);(.*) foo=\\1;ip=%[src];\\2
    http-request replace-header X-None nomatch x
    default_backend be
backend be
    server s {}
",
        be.addr
    ));
    send(
        port,
        b"GET / HTTP/1.1\r\nhost: h\r\ncookie: foo=foobar; expires=x\r\nx-z: 1\r\ncookie: bar=1\r\nx-none: keep\r\nconnection: close\r\n\r\n",
    )
    .await;
    // Captured from haproxy 2.6: matching values replaced whole, in place;
    // an added header is rewritten too.
    assert_eq!(
        text(&be.take()),
        "GET / HTTP/1.1\r\nhost: h\r\ncookie: foo=foobar;ip=127.0.0.1; expires=x\r\nx-z: 1\r\ncookie: bar=1\r\nx-none: keep\r\nx-added: 1-abc\r\n\r\n"
    );
}

/// `http-request` rules in a backend section run after the frontend's, on
/// the same request, with the backend's ACLs; a `listen` section reached
/// as a backend runs its rules too, but not twice when it is the frontend
/// as well. Denials count on both rows. Expected bytes and counters were
/// captured from haproxy 2.6 with the same configuration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_section_rules_as_haproxy() {
    let be = raw_backend().await;
    let (_hold, ports) = hold_ports::<2>();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/s.sock level admin
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind 127.0.0.1:{p0}
    http-request add-header x-fe 1
    use_backend l if {{ path_beg /l }}
    default_backend be
backend be
    acl admin path_beg /admin
    http-request deny if admin
    http-request add-header x-be 2
    http-request set-path /be%[path]
    server s1 {addr}
listen l
    bind 127.0.0.1:{p1}
    http-request add-header x-l 3
    server s1 {addr}
",
        p0 = ports[0],
        p1 = ports[1],
        addr = be.addr,
    ));
    let ok = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-srv: a\r\n\r\nok";
    let req = |p: &str| format!("GET {p} HTTP/1.1\r\nhost: a\r\n\r\n");
    assert_eq!(text(&send(ports[0], req("/x").as_bytes()).await), ok);
    let denied = text(&send(ports[0], req("/admin").as_bytes()).await);
    assert!(denied.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{denied}");
    assert_eq!(text(&send(ports[0], req("/l").as_bytes()).await), ok);
    assert_eq!(text(&send(ports[1], req("/y").as_bytes()).await), ok);
    assert_eq!(
        be.take_requests()
            .iter()
            .map(|h| text(h))
            .collect::<Vec<_>>(),
        [
            "GET /be/x HTTP/1.1\r\nhost: a\r\nx-fe: 1\r\nx-be: 2\r\n\r\n",
            "GET /l HTTP/1.1\r\nhost: a\r\nx-fe: 1\r\nx-l: 3\r\n\r\n",
            "GET /y HTTP/1.1\r\nhost: a\r\nx-l: 3\r\n\r\n",
        ]
    );
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.get("fe", "FRONTEND", "dreq"), "1");
    assert_eq!(csv.get("be", "BACKEND", "dreq"), "1");
    assert_eq!(csv.get("l", "BACKEND", "dreq"), "0");
}

/// The sample fetches header rules commonly use, on origin-form targets
/// (captured from haproxy 2.6; it also drops a default `:80` from an
/// absolute URI, which sluice forwards as received).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_fetches_in_rule_formats_as_haproxy() {
    let be = raw_backend().await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&format!(
        "{DEFAULTS}frontend fe
    bind {fe}
    http-request set-header x-f \"%[method] %[path] %[query] %[url] %[base]\"
    default_backend be
backend be
    server s {}
",
        be.addr
    ));
    send(port, b"GET /a/b?x=1&y HTTP/1.1\r\nhost: h\r\n\r\n").await;
    send(port, b"GET /noq HTTP/1.1\r\nhost: h\r\n\r\n").await;
    assert_eq!(
        be.take_requests()
            .iter()
            .map(|h| text(h))
            .collect::<Vec<_>>(),
        [
            "GET /a/b?x=1&y HTTP/1.1\r\nhost: h\r\nx-f: GET /a/b x=1&y /a/b?x=1&y h/a/b\r\n\r\n",
            "GET /noq HTTP/1.1\r\nhost: h\r\nx-f: GET /noq  /noq h/noq\r\n\r\n",
        ]
    );
}

/// `monitor-uri` / `monitor fail` and the `redirect` keyword (literal
/// target, `code`, `drop-query`), byte for byte as haproxy 2.6 answers
/// with the same configuration; the monitor URI must match exactly, and
/// the answers count in `hrsp_*` as haproxy counts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_uri_and_redirect_keyword_as_haproxy() {
    let be = raw_backend().await;
    let (_hold, ports) = hold_ports::<2>();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/s.sock level admin
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind 127.0.0.1:{p0}
    monitor-uri /health
    monitor fail if {{ src 10.0.0.1 }}
    redirect scheme https code 301 if {{ path_beg /secure }}
    redirect prefix /new drop-query if {{ path_beg /old }}
    redirect location /moved if {{ path /here }}
    default_backend be
frontend fe2
    bind 127.0.0.1:{p1}
    monitor-uri /health
    monitor fail if {{ src 127.0.0.1 }}
    default_backend be
backend be
    server s1 {addr}
",
        p0 = ports[0],
        p1 = ports[1],
        addr = be.addr,
    ));
    let req = |p: &str| format!("GET {p} HTTP/1.1\r\nhost: a\r\n\r\n");
    let port = ports[0];
    let got = |p: &str| {
        let r = req(p);
        async move { text(&send(port, r.as_bytes()).await) }
    };
    assert_eq!(
        got("/health").await,
        "HTTP/1.1 200 OK\r\ncontent-length: 58\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n\r\n<html><body><h1>200 OK</h1>\nService ready.\n</body></html>\n"
    );
    assert_eq!(
        got("/secure/x?q=1").await,
        "HTTP/1.1 301 Moved Permanently\r\ncontent-length: 0\r\nlocation: https://a/secure/x?q=1\r\n\r\n"
    );
    assert_eq!(
        got("/old/x?q=1").await,
        "HTTP/1.1 302 Found\r\ncontent-length: 0\r\nlocation: /new/old/x\r\ncache-control: no-cache\r\n\r\n"
    );
    assert_eq!(
        got("/here").await,
        "HTTP/1.1 302 Found\r\ncontent-length: 0\r\nlocation: /moved\r\ncache-control: no-cache\r\n\r\n"
    );
    // The path of an absolute-form target matches too (haproxy 2.6).
    assert_eq!(
        got("http://a/health").await,
        "HTTP/1.1 200 OK\r\ncontent-length: 58\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n\r\n<html><body><h1>200 OK</h1>\nService ready.\n</body></html>\n"
    );
    // Not the exact URI: forwarded.
    assert_eq!(got("/health?x").await.as_bytes(), OK);
    assert_eq!(got("http://a/health?x").await.as_bytes(), OK);
    let failing = text(&send(ports[1], req("/health").as_bytes()).await);
    assert!(
        failing.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{failing}"
    );
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.get("fe", "FRONTEND", "hrsp_2xx"), "4");
    assert_eq!(csv.get("fe", "FRONTEND", "hrsp_3xx"), "3");
    assert_eq!(csv.get("fe2", "FRONTEND", "hrsp_5xx"), "1");
    assert_eq!(csv.get("be", "BACKEND", "hrsp_2xx"), "2");
}

#[test]
fn redirect_after_http_request_rules_warns_as_haproxy() {
    let dir = TempDir::new("redir");
    let cfg = dir.write(
        "r.cfg",
        "defaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\nfrontend fe\n    bind 127.0.0.1:0\n    redirect location /x if { path /y }\n    http-request add-header x-a 1\n    redirect bogus /z\n",
    );
    let out = run_sluice(&["-c", "-f", cfg.to_str().unwrap()], None);
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("parsing [") && out.stderr.contains("r.cfg:9] : a 'http-request' rule placed after a 'redirect' rule will still be processed before."),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("r.cfg:10] : error detected while parsing redirect rule : expects 'location', 'prefix' or 'scheme' followed by a value."),
        "{}",
        out.stderr
    );
}

/// `%f` / `%b` / `%s` and `%[fe_name]` / `%[be_name]` / `%[srv_name]` in
/// rule formats (the `X-Served-By` idiom), as haproxy 2.6 evaluates them in
/// frontend and backend request rules and in response rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_and_server_names_in_rule_formats_as_haproxy() {
    let be = raw_backend().await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&format!(
        "{DEFAULTS}frontend fe
    bind {fe}
    http-request set-header x-f \"%f %b %s %[fe_name]\"
    http-response set-header x-srv \"%s %b %f %[srv_name] %[be_name]\"
    default_backend be
backend be
    http-request set-header x-b \"%f %b %s\"
    server s1 {}
",
        be.addr
    ));
    let got = text(&send(port, b"GET /a HTTP/1.1\r\nhost: h\r\n\r\n").await);
    assert_eq!(
        got,
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-srv: s1 be fe s1 be\r\n\r\nok"
    );
    assert_eq!(
        text(&be.take()),
        "GET /a HTTP/1.1\r\nhost: h\r\nx-f: fe fe <NOSRV> fe\r\nx-b: fe be <NOSRV>\r\n\r\n"
    );
}

/// `http-request deny deny_status <code>` for every code HAProxy 2.6 has a
/// built-in page for: the same page, byte for byte (captured from haproxy
/// 2.6.12; its 407 page says "Unauthorized" and its 501 text starts with a
/// dot).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_status_pages_as_haproxy() {
    let pages: &[(u16, &str, &str)] = &[
        (
            401,
            "Unauthorized",
            "You need a valid user and password to access this content.",
        ),
        (404, "Not Found", "The resource could not be found."),
        (
            407,
            "Unauthorized",
            "You need a valid user and password to access this content.",
        ),
        (
            410,
            "Gone",
            "The resource is no longer available and will not be available again.",
        ),
        (
            413,
            "Payload Too Large",
            "The request entity exceeds the maximum allowed.",
        ),
        (
            421,
            "Misdirected Request",
            "Request sent to a non-authoritative server.",
        ),
        (425, "Too Early", "Your browser sent early data."),
        (
            429,
            "Too Many Requests",
            "You have sent too many requests in a given amount of time.",
        ),
        (
            501,
            "Not Implemented",
            ".The server does not support the functionality required to fulfill the request.",
        ),
    ];
    let fe = Listen::new();
    let port = fe.port();
    let rules: String = pages
        .iter()
        .map(|(c, _, _)| format!("    http-request deny deny_status {c} if {{ path /{c} }}\n"))
        .collect();
    let _s = Sluice::start(&format!(
        "{DEFAULTS}frontend fe
    bind {fe}
{rules}    default_backend be
backend be
    server s1 127.0.0.1:9
"
    ));
    for (code, reason, msg) in pages {
        let body = format!("<html><body><h1>{code} {reason}</h1>\n{msg}\n</body></html>\n");
        let want = format!(
            "HTTP/1.1 {code} {reason}\r\ncontent-length: {}\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n\r\n{body}",
            body.len()
        );
        let got = text(
            &send(
                port,
                format!("GET /{code} HTTP/1.1\r\nhost: h\r\n\r\n").as_bytes(),
            )
            .await,
        );
        assert_eq!(got, want);
    }
}

/// `http-request return` and `deny` with HAProxy's reply arguments
/// (`lf-string`, `file`, `lf-file`, `hdr`, `content-type`), and
/// `http-response deny` with its own reply or another status's page: each
/// answer byte for byte as haproxy 2.6.12 sent it for the same rules
/// (reason phrases from HAProxy's own table: "Bad Gateway or Proxy
/// Error", "I'm a teapot").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_arguments_as_haproxy() {
    let be = raw_backend().await;
    let dir = TempDir::new("replies");
    let file = dir.write("body.txt", "hello file\n");
    let lf_file = dir.write("lf.txt", "file %[src] %[req.hdr(host)]\n");
    let (fe, fe_port2, fe_port3) = (Listen::new(), Listen::new(), Listen::new());
    let (port, port2, port3) = (fe.port(), fe_port2.port(), fe_port3.port());
    let _s = Sluice::start(&format!(
        "{DEFAULTS}frontend fe
    bind {fe}
    http-request return status 200 content-type text/plain lf-string \"hi %[src] %[req.hdr(host)] %ci\" hdr X-A \"a %[path]\" hdr X-B b if {{ path /lf }}
    http-request return status 201 content-type \"text/plain; charset=utf-8\" file {file} if {{ path /file }}
    http-request return status 202 content-type text/plain lf-file {lf_file} if {{ path /lffile }}
    http-request return status 404 hdr X-C c if {{ path /nohdr }}
    http-request return content-type text/html string \"<p>x</p>\" hdr Cache-Control no-cache if {{ path /html }}
    http-request deny deny_status 429 content-type text/plain string \"slow down\" hdr Retry-After 10 if {{ path /a }}
    http-request deny hdr X-D d if {{ path /b }}
    http-request deny status 403 content-type text/plain lf-string \"no %[src]\" if {{ path /c }}
    http-request deny deny_status 418 content-type text/plain string \"tea\" if {{ path /d }}
    default_backend be
frontend fe2
    bind {fe_port2}
    default_backend be2
frontend fe3
    bind {fe_port3}
    default_backend be3
backend be
    server s1 {be}
backend be2
    http-response deny content-type text/plain lf-string \"resp denied %[src]\" hdr X-R r if {{ src 127.0.0.1 }}
    server s1 {be}
backend be3
    http-response deny deny_status 503 if {{ src 127.0.0.1 }}
    server s1 {be}
",
        file = file.display(),
        lf_file = lf_file.display(),
        be = be.addr,
    ));
    let cases: &[(&str, &str)] = &[
        (
            "/lf",
            "HTTP/1.1 200 OK\r\nx-a: a /lf\r\nx-b: b\r\ncontent-length: 29\r\ncontent-type: text/plain\r\n\r\nhi 127.0.0.1 ex.com 127.0.0.1",
        ),
        (
            "/file",
            "HTTP/1.1 201 Created\r\ncontent-length: 11\r\ncontent-type: text/plain; charset=utf-8\r\n\r\nhello file\n",
        ),
        (
            "/lffile",
            "HTTP/1.1 202 Accepted\r\ncontent-length: 22\r\ncontent-type: text/plain\r\n\r\nfile 127.0.0.1 ex.com\n",
        ),
        (
            "/nohdr",
            "HTTP/1.1 404 Not Found\r\nx-c: c\r\ncontent-length: 0\r\n\r\n",
        ),
        (
            "/html",
            "HTTP/1.1 200 OK\r\ncache-control: no-cache\r\ncontent-length: 8\r\ncontent-type: text/html\r\n\r\n<p>x</p>",
        ),
        (
            "/a",
            "HTTP/1.1 429 Too Many Requests\r\nretry-after: 10\r\ncontent-length: 9\r\ncontent-type: text/plain\r\n\r\nslow down",
        ),
        (
            "/b",
            "HTTP/1.1 403 Forbidden\r\nx-d: d\r\ncontent-length: 0\r\n\r\n",
        ),
        (
            "/c",
            "HTTP/1.1 403 Forbidden\r\ncontent-length: 12\r\ncontent-type: text/plain\r\n\r\nno 127.0.0.1",
        ),
        (
            "/d",
            "HTTP/1.1 418 I'm a teapot\r\ncontent-length: 3\r\ncontent-type: text/plain\r\n\r\ntea",
        ),
    ];
    for (path, want) in cases {
        let got = send(
            port,
            format!("GET {path} HTTP/1.1\r\nhost: ex.com\r\n\r\n").as_bytes(),
        )
        .await;
        assert_eq!(text(&got), *want, "{path}");
    }
    assert!(be.take_requests().is_empty(), "a reply reached the server");

    let got = send(port2, b"GET /f HTTP/1.1\r\nhost: ex.com\r\n\r\n").await;
    assert_eq!(
        text(&got),
        "HTTP/1.1 502 Bad Gateway or Proxy Error\r\nx-r: r\r\ncontent-length: 21\r\ncontent-type: text/plain\r\n\r\nresp denied 127.0.0.1"
    );
    let got = send(port3, b"GET /g HTTP/1.1\r\nhost: ex.com\r\n\r\n").await;
    assert_eq!(
        text(&got),
        "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 107\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n\r\n<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle this request.\n</body></html>\n"
    );
    assert_eq!(
        be.take_requests().len(),
        2,
        "the denied responses' requests"
    );
}

/// The reply arguments at `-c` time, with HAProxy 2.6's texts: a payload
/// without a content type, two payloads, a missing file, `hdr` fields the
/// reply always sets itself, a content type without a payload, and a
/// deny status that has no error page.
#[test]
fn reply_arguments_are_checked_as_haproxy() {
    let dir = TempDir::new("replycheck");
    let check = |rule: &str| {
        let path = dir.write(
            "t.cfg",
            &format!(
                "defaults\n  mode http\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\nfrontend fe\n  bind 127.0.0.1:1\n  http-request {rule}\n"
            ),
        );
        let out = run_sluice(&["-c", "-f", path.to_str().unwrap()], None);
        (out.code(), out.stderr)
    };
    let cases: &[(&str, i32, &str)] = &[
        (
            "return status 200 lf-string x",
            1,
            "while parsing 'http-request return' rule : a content type must be defined with a log-format payload.",
        ),
        (
            "return status 200 content-type a/b string x lf-string y",
            1,
            "unexpected 'lf-string' argument, 'string' already defined.",
        ),
        (
            "return status 200 content-type text/plain file /nonexistent/x",
            1,
            "error opening file '/nonexistent/x'.",
        ),
        ("return status 100", 1, "Unexpected status code '100'."),
        (
            "return status 200 hdr X",
            1,
            "'hdr' expects <name> and <value> as arguments.",
        ),
        (
            "return status 200 hdr content-length 3",
            0,
            "header 'content-length' always ignored by the http reply.",
        ),
        (
            "return status 200 content-type text/plain",
            0,
            "content-type 'text/plain' ignored by the http reply because neither errorfile nor payload defined.",
        ),
        (
            "deny deny_status 418",
            1,
            "status code '418' not handled by default with 'default-errorfiles' argument.",
        ),
        ("deny deny_status 418 hdr x y", 0, ""),
        (
            "return status 204 content-type a/b string x",
            1,
            "No body expected for 204 responses.",
        ),
    ];
    for (rule, code, msg) in cases {
        let (got, err) = check(rule);
        assert_eq!(got, Some(*code), "{rule}: {err}");
        assert!(err.contains(msg), "{rule}: {err}");
    }
}

/// `http-request tarpit`: held for `timeout tarpit`, then the reply (its
/// own, or the 500 page), the keep-alive connection kept for the request
/// pipelined behind, as haproxy 2.6.12 does; counted in dreq.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tarpit_rule_as_haproxy() {
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
    timeout tarpit 300ms
frontend fe
    bind {fe}
    http-request tarpit deny_status 429 content-type text/plain string \"later\" if {{ path /a }}
    http-request tarpit if {{ path /b }}
    http-request return status 200
"
    ));
    for (path, want) in [
        (
            "/a",
            "HTTP/1.1 429 Too Many Requests\r\ncontent-length: 5\r\ncontent-type: text/plain\r\n\r\nlater",
        ),
        (
            "/b",
            "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 97\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n\r\n<html><body><h1>500 Internal Server Error</h1>\nAn internal server error occurred.\n</body></html>\n",
        ),
    ] {
        let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let t0 = std::time::Instant::now();
        let next = "GET /next HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
        c.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n{next}").as_bytes())
            .await
            .unwrap();
        let mut got = Vec::new();
        // Read to the close, which the pipelined request asks for.
        within(
            Duration::from_secs(3),
            "tarpit close",
            c.read_to_end(&mut got),
        )
        .await
        .unwrap();
        assert!(
            t0.elapsed() >= Duration::from_millis(280),
            "{path}: not held"
        );
        let got = text(&got);
        assert_eq!(got.get(..want.len()), Some(want), "{path}: {got}");
        assert!(
            got[want.len()..].starts_with("HTTP/1.1 200 "),
            "{path}: the connection was not kept: {got}"
        );
    }
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.num("fe", "FRONTEND", "dreq"), 2);
}

/// Three behaviours users rely on, as haproxy 2.6.12 shows them: a
/// `set-header` replaces a header the client sent (anti-spoofing: one
/// value, the proxy's, after the other headers); a backend's `errorfile`
/// wins over the frontend's once the backend is chosen, the frontend's
/// serves the frontend's own denials; and `append-slash` (where sluice
/// puts the slash on the path, not after the query as HAProxy does).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_header_errorfile_precedence_and_append_slash() {
    let be = raw_backend().await;
    let dir = TempDir::new("precedence");
    let fe_page = dir.write(
        "fe.http",
        "HTTP/1.0 503 FE\r\ncontent-type: text/plain\r\n\r\nfe page\n",
    );
    let be_page = dir.write(
        "be.http",
        "HTTP/1.0 503 BE\r\ncontent-type: text/plain\r\n\r\nbe page\n",
    );
    let (fe_p1, fe_p2, fe_p3) = (Listen::new(), Listen::new(), Listen::new());
    let (p1, p2, p3) = (fe_p1.port(), fe_p2.port(), fe_p3.port());
    let _s = Sluice::start(&format!(
        "defaults
    mode http
    retries 0
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend spoof
    bind {fe_p1}
    http-request set-header X-Real-IP %[src]
    default_backend up
frontend pages
    bind {fe_p2}
    errorfile 503 {fe}
    http-request deny deny_status 503 if {{ path /deny }}
    default_backend dead
frontend slash
    bind {fe_p3}
    http-request redirect prefix /p append-slash
backend up
    server s1 {addr}
backend dead
    errorfile 503 {be_}
    server s1 127.0.0.1:9
",
        fe = fe_page.display(),
        be_ = be_page.display(),
        addr = be.addr,
    ));
    send(
        p1,
        b"GET / HTTP/1.1\r\nhost: h\r\nx-real-ip: 6.6.6.6\r\nx-o: 1\r\nx-real-ip: 7.7.7.7\r\n\r\n",
    )
    .await;
    assert_eq!(
        text(&be.take()),
        "GET / HTTP/1.1\r\nhost: h\r\nx-o: 1\r\nx-real-ip: 127.0.0.1\r\n\r\n"
    );

    let page = |name: &str| {
        format!(
            "HTTP/1.0 503 {name}\r\ncontent-type: text/plain\r\n\r\n{} page\n",
            name.to_lowercase()
        )
    };
    let got = send(p2, b"GET /deny HTTP/1.1\r\nhost: h\r\n\r\n").await;
    assert_eq!(text(&got), page("FE"));
    let got = send(p2, b"GET /x HTTP/1.1\r\nhost: h\r\n\r\n").await;
    assert_eq!(text(&got), page("BE"));

    for (target, location) in [("/a?x=1", "/p/a/?x=1"), ("/a", "/p/a/"), ("/a/", "/p/a/")] {
        let got = send(
            p3,
            format!("GET {target} HTTP/1.1\r\nhost: h\r\n\r\n").as_bytes(),
        )
        .await;
        assert_eq!(
            text(&got),
            format!(
                "HTTP/1.1 302 Found\r\ncontent-length: 0\r\nlocation: {location}\r\ncache-control: no-cache\r\n\r\n"
            ),
            "{target}"
        );
    }
}
