//! HTTP keywords of HAProxy 2.6 against the real HAProxy: the same
//! configuration runs under haproxy and sluice, and the `-c` messages, the
//! answers, the log lines and what the server receives must be equal.
//! Covered: `set-timeout`, `set-priority-class`, `set-priority-offset` (of
//! `http-request` and `tcp-request content`) with the `prio_class`,
//! `prio_offset`, `cur_server_timeout` and `cur_tunnel_timeout` fetches
//! and the order of the backend queue, `disable-l7-retry`,
//! `wait-for-handshake`, `do-resolve` (against dnsmasq), `normalize-uri`
//! (every normalizer on a table of tricky targets), `early-hint`,
//! `http-response redirect`, the `http-error` keyword, the `errorfiles`
//! reply form, header names with a trailing colon, `option
//! http-restrict-req-hdr-names`, and the globals `tune.http.logurilen`,
//! `tune.http.maxhdr`, `h1-accept-payload-with-any-method`,
//! `h2-workaround-bogus-websocket-clients` (`-c` only) and
//! `tune.http.cookielen`.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use std::time::Duration;

use support::haproxy::HTTP_LOG_GLOBAL as GLOBAL;
use support::haproxy::{self, Differences, Pair};
use tokio::io::AsyncWriteExt;

/// A log line without dates, ports or timers (what must differ is left
/// out of the format rather than masked): the status, the termination
/// state, the retries and the request line.
const LOG: &str = "log-format \"%ci %f %b/%s %ST %ts %rc %{+Q}r\"";

/// A GET of `target` with `headers` (each ending in CRLF), closing the
/// connection after the answer.
fn get(target: &str, headers: &str) -> String {
    format!("GET {target} HTTP/1.1\r\nhost: h\r\n{headers}connection: close\r\n\r\n")
}

/// The `defaults` of the `-c` cases.
const CHECK_DEFAULTS: &str = "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
";

/// A `listen` section's text around `body`, for `-c`.
fn listen(body: &str) -> String {
    format!(
        "{CHECK_DEFAULTS}listen li\n    bind 127.0.0.1:18999\n{body}\n    server s 127.0.0.1:1\n"
    )
}

#[test]
fn config_checks_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let lines = [
        "http-request set-timeout server 5s",
        "http-request set-timeout tunnel 1m if { path /x }",
        "http-request set-timeout server req.hdr(x-t)",
        "http-request set-timeout client 5s",
        "http-request set-timeout server",
        "http-request set-timeout tunnel req.hdr(x),foo",
        "http-request set-timeout server -5",
        "http-request set-timeout server 0",
        "http-request set-timeout tunnel 5s foo",
        "http-request set-priority-class req.hdr(x)",
        "http-request set-priority-offset int(-10) if TRUE",
        "http-request set-priority-class",
        "http-request set-priority-offset int(3) foo",
        "http-request disable-l7-retry",
        "http-request disable-l7-retry foo",
        "http-request wait-for-handshake",
        "http-request wait-for-handshake x",
        "http-response redirect location /x",
        "http-response redirect location /m/%[path]",
        "http-response redirect prefix /p",
        "http-response redirect scheme https",
        "http-request early-hint",
        "http-request early-hint link",
        "http-request early-hint link %[foo]",
        "http-request early-hint link x y",
        "http-request do-resolve(txn.ip,default) hdr(host)",
        "http-request do-resolve(txn.ip,default,ipv4) hdr(host),lower",
        "http-request do-resolve(txn.ip,default,ipv5) hdr(host)",
        "http-request do-resolve(txn.ip,nope) hdr(host)",
        "http-request do-resolve(txn.ip) hdr(host)",
        "http-request do-resolve(txn.ip,default)",
        "http-request do-resolve(txn.ip,default) hdr(host) foo",
        "http-request do-resolve txn.ip",
        "http-request do-resolve(txn.ip,default hdr(host)",
        "http-request normalize-uri path-strip-dot",
        "tcp-request content set-priority-class int(1)",
        "tcp-request content set-priority-offset req.len if { req.len gt 0 }",
        "tcp-request content set-priority-class",
        "tcp-request content set-priority-class int(1) x",
    ];
    let mut cases: Vec<(String, String)> = lines
        .iter()
        .map(|l| (l.to_string(), listen(&format!("    {l}"))))
        .collect();
    // `set-timeout` needs a backend.
    cases.push((
        "frontend set-timeout".to_string(),
        format!(
            "{CHECK_DEFAULTS}frontend fe\n    bind 127.0.0.1:18999\n    http-request set-timeout server 1s\n"
        ),
    ));
    haproxy::assert_check_agrees("kwcheck", cases, haproxy::first_alert_masked);
}

/// What the fetches say after the rules, in the request the server gets
/// (before a server is chosen) and in the response (after).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_settings_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
listen li
    bind {{fe0}}
    {LOG}
    timeout tunnel 30s
    http-request set-timeout server 7s if {{ req.hdr(x-case) st }}
    http-request set-timeout server req.hdr(x-v) if {{ req.hdr(x-case) st-expr }}
    http-request set-timeout tunnel req.hdr(x-v) if {{ req.hdr(x-case) tt }}
    http-request set-priority-class req.hdr(x-v) if {{ req.hdr(x-case) pc }}
    http-request set-priority-offset req.hdr(x-v) if {{ req.hdr(x-case) po }}
    http-request disable-l7-retry if {{ req.hdr(x-case) nr }}
    http-request wait-for-handshake if {{ req.hdr(x-case) wfh }}
    http-request set-header x-seen \"%[cur_server_timeout]/%[cur_tunnel_timeout]/%[prio_class]/%[prio_offset]\"
    http-response set-header x-after \"%[cur_server_timeout]/%[cur_tunnel_timeout]/%[prio_class]/%[prio_offset]\"
    server s {{srv}}
"
    );
    let pair = Pair::start("kwfetch", &cfg, 1).await;
    let cases: &[(&str, &str)] = &[
        ("none", ""),
        ("st", ""),
        ("st-expr", "1500"),
        ("st-expr", "abc"),
        ("st-expr", "0"),
        ("tt", "2500"),
        ("pc", "12"),
        ("pc", "-9999"),
        ("pc", "x"),
        ("po", "-300"),
        ("po", "9000000"),
        ("nr", ""),
        ("wfh", ""),
    ];
    let mut diff = Differences::default();
    for (case, v) in cases {
        let req = get("/p", &format!("x-case: {case}\r\nx-v: {v}\r\n"));
        let [h, s] = pair.both(0, &req).await;
        diff.compare(format!("{case} {v}"), &h, &s);
    }
    diff.assert_none();
}

/// A `set-timeout server` rule's timeout is the one a silent server gets:
/// both answer 504 long before the configured `timeout server` (5 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_timeout_server_cuts_a_silent_server() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
frontend fe
    bind {{fe0}}
    {LOG}
    default_backend be
backend be
    timeout server 1h
    http-request set-timeout server 100ms
    server s {{srv}}
"
    );
    let pair = Pair::start("kwtimeout", &cfg, 1).await;
    for s in &pair.servers {
        s.set_silent(true);
    }
    let [h, s] = pair.both(0, &get("/slow", "")).await;
    assert!(h.0.starts_with("HTTP/1.1 504"), "haproxy: {}", h.0);
    assert_eq!(h.0, s.0);
    assert_eq!(h.1, s.1);
}

/// `disable-l7-retry`: a 503 `retry-on` would retry is the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disable_l7_retry_is_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
listen li
    bind {{fe0}}
    {LOG}
    retries 2
    retry-on 503
    http-request disable-l7-retry if {{ req.hdr(x-case) nr }}
    server s {{srv}}
"
    );
    let pair = Pair::start("kwl7", &cfg, 1).await;
    let unavailable: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n";
    let mut diff = Differences::default();
    for case in ["retry", "nr"] {
        for s in &pair.servers {
            s.script(&[unavailable]);
        }
        let [h, s] = pair
            .both(0, &get("/", &format!("x-case: {case}\r\n")))
            .await;
        diff.compare(case, &h, &s);
    }
    diff.assert_none();
}

/// The backend queue's order: lower classes first, then the earlier
/// arrival moved by its offset; compared on the order the server gets the
/// queued requests in, for `http-request` and `tcp-request content` rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_order_is_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
frontend fe
    bind {{fe0}}
    tcp-request content set-priority-class int(3)
    default_backend be
frontend watch
    bind {{fe1}}
    http-request return status 200 content-type text/plain lf-string \"%[queue(be)]\"
backend be
    timeout queue 30s
    http-request set-priority-class req.hdr(x-class) if {{ req.hdr(x-class) -m found }}
    http-request set-priority-offset req.hdr(x-offset) if {{ req.hdr(x-offset) -m found }}
    server s {{srv}} maxconn 1
"
    );
    let pair = Pair::start("kwqueue", &cfg, 2).await;
    let queued: &[(&str, &str)] = &[
        ("a", "x-class: 5\r\n"),
        ("b", "x-class: 1\r\n"),
        ("c", "x-class: 1\r\nx-offset: -1000\r\n"),
        // The content rule's class.
        ("d", ""),
        ("e", "x-class: 0\r\n"),
        ("f", "x-class: 0\r\nx-offset: 1000\r\n"),
        ("g", "x-class: -1\r\nx-offset: 5000\r\n"),
    ];
    let mut orders = Vec::new();
    for i in 0..2 {
        let front = pair.fronts[i][0].addr();
        let watch = pair.fronts[i][1].addr();
        // The first request holds the server's one slot while its body is
        // incomplete.
        let mut hold = tokio::net::TcpStream::connect(front).await.unwrap();
        hold.write_all(
            b"POST /hold HTTP/1.1\r\nhost: h\r\ncontent-length: 4\r\nconnection: close\r\n\r\nab",
        )
        .await
        .unwrap();
        wait_until(|| pair.servers[i].accepted() == 1).await;
        let mut waiting = Vec::new();
        for (n, (name, headers)) in queued.iter().enumerate() {
            let req = get(&format!("/{name}"), headers);
            waiting.push(tokio::spawn(haproxy::exchange(
                front,
                req.into_bytes().leak(),
                false,
            )));
            wait_queue(watch, n + 1).await;
        }
        hold.write_all(b"cd").await.unwrap();
        for w in waiting {
            w.await.unwrap();
        }
        let order: Vec<String> = pair.servers[i]
            .take_requests()
            .iter()
            .map(|r| {
                let line = String::from_utf8_lossy(r);
                line.split(' ').nth(1).unwrap_or("").to_string()
            })
            .collect();
        orders.push(order);
    }
    assert_eq!(
        orders[0][0], "/hold",
        "haproxy's first request is the one holding the slot"
    );
    assert_eq!(orders[0], orders[1], "haproxy's order, then sluice's");
}

/// Waits (at most 10 s) for `ready`.
async fn wait_until(ready: impl Fn() -> bool) {
    for _ in 0..1000 {
        if ready() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not ready after 10 s");
}

/// Waits until the backend's queue, as the `watch` frontend reports it,
/// holds `n` requests.
async fn wait_queue(watch: std::net::SocketAddr, n: usize) {
    for _ in 0..1000 {
        let got = haproxy::exchange(watch, get("/", "").as_bytes(), false).await;
        let text = String::from_utf8_lossy(&got);
        if text.ends_with(&format!("\r\n\r\n{n}")) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the queue never held {n} requests");
}

/// `do-resolve` against a real DNS server (dnsmasq): the address each
/// rule stores, as the server receives it in a header, for names with
/// A records, AAAA records, both, or none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn do_resolve_is_haproxys() {
    if !haproxy::available() || !support::dnsmasq::available() {
        return;
    }
    let dns = support::dnsmasq::Dnsmasq::start(
        "10.1.2.3 a.example.test\n10.1.2.4 both.example.test\nfd00::4 both.example.test\nfd00::5 v6.example.test\n",
        &[],
    );
    let cfg = format!(
        "{GLOBAL}
resolvers dns
    nameserver n1 {}
listen li
    bind {{fe0}}
    {LOG}
    http-request do-resolve(txn.ip,dns) req.hdr(x-name) if {{ req.hdr(x-fam) 6 }}
    http-request do-resolve(txn.ip,dns,ipv4) req.hdr(x-name),lower if {{ req.hdr(x-fam) 4 }}
    http-request set-header x-ip %[var(txn.ip)]
    server s {{srv}}
",
        dns.addr
    );
    let pair = Pair::start("kwresolve", &cfg, 1).await;
    let mut diff = Differences::default();
    for name in [
        "a.example.test",
        "both.example.test",
        "v6.example.test",
        "nx.example.test",
        "",
        "A.Example.Test",
    ] {
        for fam in ["6", "4"] {
            let req = get("/", &format!("x-name: {name}\r\nx-fam: {fam}\r\n"));
            let [h, s] = pair.both(0, &req).await;
            if (name, fam) == ("both.example.test", "6") {
                assert!(
                    h.2.contains("x-ip: fd00::4\r\n"),
                    "haproxy resolves: {}",
                    h.2
                );
            }
            diff.compare(format!("{name} ipv{fam}"), &h, &s);
        }
    }
    diff.assert_none();
}

/// `normalize-uri`: the request line the server gets, for each normalizer
/// on a table of tricky targets (absolute forms, dot segments, percent
/// sequences, queries), and the 400 of a `strict` one. Each normalizer
/// has a frontend of its own, its rule unconditional; a last one has
/// conditional rules, which HAProxy 2.6 reads as `path-merge-slashes`
/// for three normalizers without their option.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normalize_uri_is_haproxys() {
    if !haproxy::available() {
        return;
    }
    let normalizers = [
        "fragment-encode",
        "fragment-strip",
        "path-merge-slashes",
        "path-strip-dot",
        "path-strip-dotdot",
        "path-strip-dotdot full",
        "percent-decode-unreserved",
        "percent-decode-unreserved strict",
        "percent-to-uppercase",
        "percent-to-uppercase strict",
        "query-sort-by-name",
    ];
    let mut sections = String::new();
    for (i, n) in normalizers.iter().enumerate() {
        sections.push_str(&format!(
            "listen li{i}\n    bind {{fe{i}}}\n    {LOG}\n    http-request normalize-uri {n}\n    server s {{srv}}\n"
        ));
    }
    let conditional = normalizers.len();
    sections.push_str(&format!(
        "listen cond\n    bind {{fe{conditional}}}\n    {LOG}\n"
    ));
    for n in [
        "path-strip-dotdot",
        "percent-decode-unreserved",
        "percent-to-uppercase",
    ] {
        sections.push_str(&format!(
            "    http-request normalize-uri {n} if {{ req.hdr(x-case) {n} }}\n"
        ));
    }
    sections.push_str("    server s {srv}\n");
    // A `#` is refused before the rules unless the frontend accepts
    // invalid requests.
    let relaxed = conditional + 1;
    for (j, n) in ["fragment-strip", "fragment-encode"].iter().enumerate() {
        sections.push_str(&format!(
            "listen relaxed{j}\n    bind {{fe{}}}\n    {LOG}\n    option accept-invalid-http-request\n    http-request normalize-uri {n}\n    server s {{srv}}\n",
            relaxed + j
        ));
    }
    let global = GLOBAL.replacen(
        "global\n",
        "global\n    expose-experimental-directives\n",
        1,
    );
    let cfg = format!("{global}{sections}");
    let pair = Pair::start("kwnormalize", &cfg, normalizers.len() + 3).await;
    let targets = [
        "/",
        "/a/b",
        "/.",
        "/..",
        "/./",
        "/../",
        "/a/.",
        "/a/..",
        "/a/b/..",
        "/a/./b/../c/",
        "/a/b/../../../c",
        "/../../a",
        "/a//b///c",
        "//",
        "/a/.b/..c/...",
        "/foo/../bar/",
        "/foo/bar/../",
        "/bar/../../",
        "/foo//../",
        "/a/b/c/../../d",
        "/a/%2e/b/%2E%2E/",
        "/%61%62%2d%2E%5f%7E%2F%3f",
        "/%%36%36",
        "/%ZZ",
        "/%6",
        "/a%6fb?q=%6f%zz",
        "/a?c=3&a=1&b=2",
        "/a?aaa=3&a=1&aa=2",
        "/a?a=3&b=4&a=1&b=5&a=2",
        "/a?b&a=&&c",
        "/a?",
        "/a/../b?x=/../y",
        "http://h.example//a/./b/../c?z=1&a=2",
        "http://h.example",
        "http://h.example?b=1&a=2",
        "*",
    ];
    let request = |t: &str, case: &str| {
        let method = if t == "*" { "OPTIONS" } else { "GET" };
        format!("{method} {t} HTTP/1.1\r\nhost: h\r\nx-case: {case}\r\nconnection: close\r\n\r\n")
    };
    let mut diff = Differences::default();
    for (i, n) in normalizers.iter().enumerate() {
        for t in targets {
            let [h, s] = pair.both(i, &request(t, "")).await;
            if (*n, t) == ("path-strip-dotdot", "/foo/../bar/") {
                assert!(h.2.starts_with("GET /bar/ "), "haproxy normalizes: {}", h.2);
            }
            if (*n, t) == ("percent-decode-unreserved strict", "/%ZZ") {
                assert!(h.0.starts_with("HTTP/1.1 400"), "haproxy refuses: {}", h.0);
            }
            diff.compare(format!("{n} {t}"), &h, &s);
        }
    }
    let fragments = ["/a#frag", "/a?x=1#frag?y", "/a/./b#c/../d", "/#"];
    for (i, n) in normalizers.iter().enumerate().take(2) {
        for t in fragments {
            let [h, s] = pair.both(i, &request(t, "")).await;
            diff.compare(format!("{n} {t}"), &h, &s);
        }
    }
    for (j, n) in ["fragment-strip", "fragment-encode"].iter().enumerate() {
        for t in fragments {
            let [h, s] = pair.both(relaxed + j, &request(t, "")).await;
            diff.compare(format!("{n} (accept-invalid) {t}"), &h, &s);
        }
    }
    for n in [
        "path-strip-dotdot",
        "percent-decode-unreserved",
        "percent-to-uppercase",
    ] {
        for t in ["/a//b/../c", "/%61//%6f"] {
            let [h, s] = pair.both(conditional, &request(t, n)).await;
            diff.compare(format!("{n} if ... {t}"), &h, &s);
        }
    }
    diff.assert_none();
}

/// The global HTTP tunables: `-c` messages, then `tune.http.logurilen`
/// on the log line, `tune.http.maxhdr` and HTTP/1.0 bodies on methods that
/// take none (`h1-accept-payload-with-any-method`) on the answers.
#[test]
fn http_tunables_check_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let lines = [
        "tune.http.logurilen",
        "tune.http.logurilen 100 x",
        "tune.http.logurilen 2048",
        "tune.http.maxhdr",
        "tune.http.maxhdr 0",
        "tune.http.maxhdr 40000",
        "tune.http.maxhdr 50",
        "tune.http.cookielen 10",
        "h1-accept-payload-with-any-method",
        "h1-accept-payload-with-any-method x",
        "h2-workaround-bogus-websocket-clients",
        "h2-workaround-bogus-websocket-clients x",
    ];
    let cases = lines.iter().map(|l| {
        (
            l.to_string(),
            format!("global\n    {l}\n{CHECK_DEFAULTS}listen li\n    bind 127.0.0.1:18999\n    server s 127.0.0.1:1\n"),
        )
    });
    haproxy::assert_check_agrees("kwtune", cases, haproxy::first_alert_masked);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_tunables_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let tuned = GLOBAL.replacen(
        "global\n",
        "global\n    tune.http.logurilen 24\n    tune.http.maxhdr 5\n",
        1,
    );
    let relaxed = GLOBAL.replacen(
        "global\n",
        "global\n    h1-accept-payload-with-any-method\n",
        1,
    );
    let body = "
listen li
    bind {fe0}
    log-format \"%ST %ts %{+Q}r %HM|%HU|%HP|%HQ|%HV\"
    server s {srv}
";
    let mut diff = Differences::default();
    let requests = [
        get("/short", ""),
        get("/abcdefghijklmnop?q=1", ""),
        get("/abcdefghij?q=1&r=2", ""),
        get("/a", "a: 1\r\nb: 2\r\n"),
        get("/a", "a: 1\r\nb: 2\r\nc: 3\r\n"),
        get("/a", "a: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\n"),
        get("/a", "a: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\ne: 5\r\n"),
        "GET /g HTTP/1.0\r\ncontent-length: 3\r\n\r\nabc".to_string(),
        "GET /g HTTP/1.0\r\ncontent-length: 0\r\n\r\n".to_string(),
        "HEAD /g HTTP/1.0\r\ncontent-length: 2\r\n\r\nab".to_string(),
        "DELETE /g HTTP/1.0\r\ncontent-length: 1\r\n\r\nx".to_string(),
        "POST /g HTTP/1.0\r\ncontent-length: 3\r\n\r\nabc".to_string(),
        "GET /g HTTP/1.1\r\nhost: h\r\ncontent-length: 3\r\nconnection: close\r\n\r\nabc"
            .to_string(),
    ];
    for (label, global) in [("tuned", &tuned), ("relaxed", &relaxed)] {
        let pair = Pair::start("kwtunables", &format!("{global}{body}"), 1).await;
        for r in &requests {
            let [h, s] = pair.both(0, r).await;
            if label == "tuned" && r.contains("e: 5") {
                assert!(h.0.starts_with("HTTP/1.1 400"), "haproxy's maxhdr: {}", h.0);
            }
            diff.compare(format!("{label}: {r:?}"), &h, &s);
        }
    }
    diff.assert_none();
}

/// A header name written with a trailing colon (HAProxy takes the colon
/// as part of the name): what the server gets, and the response side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_name_with_a_colon_is_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
listen li
    bind {{fe0}}
    {LOG}
    http-request set-header X-Forwarded-Proto: http
    http-request add-header X-Added: %[src]
    http-request del-header X-Gone:
    http-response set-header X-Resp: yes
    server s {{srv}}
"
    );
    let pair = Pair::start("kwcolon", &cfg, 1).await;
    let [h, s] = pair.both(0, &get("/", "x-gone: 1\r\n")).await;
    assert_eq!(h, s);
}

/// `early-hint`: the `103 Early Hints` before the answer (one per run of
/// consecutive rules), as the client reads it, and `%B` counting it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_hint_is_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
listen li
    bind {{fe0}}
    log-format \"%ST %B %ts %{{+Q}}r\"
    http-request early-hint Link \"</style.css>; rel=preload; as=style\" if {{ path_beg /a }}
    http-request early-hint Link \"</app.js>; rel=preload; as=script\"
    http-request set-header x-mid 1
    http-request early-hint X-Hint %[path] if {{ path_beg /a }}
    http-request return status 200 content-type text/plain string done if {{ path /a/local }}
    server s {{srv}}
"
    );
    let pair = Pair::start("kwearly", &cfg, 1).await;
    let mut diff = Differences::default();
    for req in [
        get("/a", ""),
        get("/b", ""),
        get("/a/local", ""),
        "GET /a HTTP/1.0\r\n\r\n".to_string(),
    ] {
        let [h, s] = pair.both(0, &req).await;
        if req.starts_with("GET /a HTTP/1.1") {
            assert!(
                h.0.starts_with("HTTP/1.1 103 Early Hints\r\n"),
                "haproxy: {}",
                h.0
            );
        }
        diff.compare(format!("{req:?}"), &h, &s);
    }
    diff.assert_none();
}

/// `http-error`: the page a deny and a 503 without a server answer with,
/// for the reply forms without samples; the `-c` messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_error_is_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cases = [
        "http-error",
        "http-error status",
        "http-error status 999",
        "http-error status 503 string x",
        "http-error status 503",
        "http-error content-type text/plain string x",
        "http-error status 503 content-type text/plain string x",
        "http-error status 503 default-errorfiles",
    ]
    .iter()
    .map(|l| (l.to_string(), listen(&format!("    {l}"))));
    haproxy::assert_check_agrees("kwerrcheck", cases, haproxy::first_alert_masked);
    let cfg = format!(
        "{GLOBAL}
listen li
    bind {{fe0}}
    {LOG}
    retries 0
    http-error status 403 content-type text/plain string \"not you\" hdr x-why policy
    http-error status 503 content-type text/html string \"<p>down</p>\"
    http-error status 400
    http-request deny if {{ path /d }}
    http-request deny deny_status 400 if {{ path /e }}
    server s {{srv}}
"
    );
    let pair = Pair::start("kwerr", &cfg, 1).await;
    let mut diff = Differences::default();
    for req in [
        get("/d", ""),
        get("/e", ""),
        "GET /d HTTP/1.0\r\n\r\n".to_string(),
    ] {
        let [h, s] = pair.both(0, &req).await;
        diff.compare(format!("{req:?}"), &h, &s);
    }
    diff.assert_none();
}

/// `http-response redirect`: the server's answer replaced by the
/// redirect, for its three forms, and the log line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_redirect_is_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
listen li
    bind {{fe0}}
    log-format \"%ST %B %ts %{{+Q}}r\"
    http-request set-var(txn.case) req.hdr(x-case)
    http-response redirect location /moved/%[status] code 302 if {{ var(txn.case) -m str loc }}
    http-response redirect location /pre drop-query if {{ var(txn.case) -m str pre }}
    http-response redirect location https://h.example/s code 301 if {{ var(txn.case) -m str scheme }}
    http-response redirect location /x code 303 if {{ status 200 }} {{ var(txn.case) -m str status }}
    server s {{srv}}
"
    );
    let pair = Pair::start("kwrspredir", &cfg, 1).await;
    let mut diff = Differences::default();
    for case in ["loc", "pre", "scheme", "status", "none"] {
        for req in [
            get("/a/b?q=1", &format!("x-case: {case}\r\n")),
            format!("GET /k HTTP/1.0\r\nx-case: {case}\r\n\r\n"),
        ] {
            let [h, s] = pair.both(0, &req).await;
            if case == "loc" && req.contains("HTTP/1.1") {
                assert!(
                    h.0.starts_with("HTTP/1.1 302 Found\r\n"),
                    "haproxy: {}",
                    h.0
                );
            }
            diff.compare(format!("{req:?}"), &h, &s);
        }
    }
    diff.assert_none();
}

/// `option http-restrict-req-hdr-names`: what the server gets (`delete`)
/// or the client (`reject`'s 403), for names outside `[A-Za-z0-9-]`, in a
/// frontend and in a backend; the `-c` messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restrict_req_hdr_names_is_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cases = [
        "option http-restrict-req-hdr-names",
        "option http-restrict-req-hdr-names foo",
        "option http-restrict-req-hdr-names delete x",
        "no option http-restrict-req-hdr-names delete",
        "option http-restrict-req-hdr-names reject",
    ]
    .iter()
    .map(|l| (l.to_string(), listen(&format!("    {l}"))));
    haproxy::assert_check_agrees("kwhdrcheck", cases, haproxy::first_alert_masked);
    let cfg = format!(
        "{GLOBAL}
listen del
    bind {{fe0}}
    {LOG}
    option http-restrict-req-hdr-names delete
    http-request set-header x-seen %[req.hdr_cnt(x_y)]
    server s {{srv}}
listen rej
    bind {{fe1}}
    {LOG}
    option http-restrict-req-hdr-names reject
    server s {{srv}}
frontend fe
    bind {{fe2}}
    {LOG}
    default_backend be
backend be
    option http-restrict-req-hdr-names delete
    server s {{srv}}
"
    );
    let pair = Pair::start("kwhdrnames", &cfg, 3).await;
    let mut diff = Differences::default();
    for fe in 0..3 {
        for headers in ["good-1: ok\r\n", "x_y: 1\r\nx.y: 2\r\nok: 3\r\nX_Y: 4\r\n"] {
            let [h, s] = pair.both(fe, &get("/", headers)).await;
            diff.compare(format!("fe{fe} {headers:?}"), &h, &s);
        }
    }
    diff.assert_none();
}

/// The `errorfiles <name>` form of an http reply: the `http-errors`
/// section's page for the status, or the proxy's own when the section has
/// none; the messages of a section missing, or of a status it lacks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_errorfiles_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let dir = support::TempDir::new("kwerrfiles");
    let page = dir.write(
        "403.http",
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 8\r\n\r\ngo away\n",
    );
    let section = format!("http-errors site\n    errorfile 403 {}\n", page.display());
    let cases = [
        "http-request deny errorfiles site",
        "http-request deny deny_status 503 errorfiles nope",
        "http-request return status 404 errorfiles site",
        "http-request deny errorfiles",
        "http-response deny errorfiles site content-type text/plain",
    ]
    .iter()
    .map(|l| {
        (
            l.to_string(),
            format!("{section}{}", listen(&format!("    {l}"))),
        )
    });
    haproxy::assert_check_agrees("kwerrfilescheck", cases, haproxy::config_messages);
    let cfg = format!(
        "{GLOBAL}
{section}
listen li
    bind {{fe0}}
    {LOG}
    http-request deny errorfiles site if {{ path /a }}
    http-request return status 404 errorfiles site if {{ path /b }}
    server s {{srv}}
"
    );
    let pair = Pair::start("kwerrfiles", &cfg, 1).await;
    let mut diff = Differences::default();
    for req in [get("/a", ""), get("/b", "")] {
        let [h, s] = pair.both(0, &req).await;
        diff.compare(format!("{req:?}"), &h, &s);
    }
    diff.assert_none();
}
