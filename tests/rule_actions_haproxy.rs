//! The rewriting actions of `http-request`, `http-response` and
//! `http-after-response` against the real HAProxy 2.6: the same
//! configuration runs under haproxy and sluice, the same requests go to
//! both, and the answers, the log lines and what the server receives must
//! be equal, byte for byte. Covered: `replace-path`, `replace-pathq`,
//! `replace-uri`, `set-uri`, `set-pathq`, `set-query`, `set-method`,
//! `replace-value`, `reject`, `strict-mode`, `set-status`, response
//! `replace-header`/`replace-value`, and the variable and capture actions
//! of `http-after-response`.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use support::HttpConn;
use support::haproxy::HTTP_LOG_GLOBAL as GLOBAL;
use support::haproxy::{self, Pair};

/// A log line without dates, ports or timers (what must differ is left
/// out of the format rather than masked); `%r` is the request line as
/// received, before the rules.
const LOG: &str = "log-format \"%ci %f %b/%s %ST %B %ts %{+Q}r\"";

/// A GET of `target` with `headers` (each ending in CRLF), closing the
/// connection after the answer.
fn get(target: &str, headers: &str) -> String {
    format!("GET {target} HTTP/1.1\r\nhost: h\r\n{headers}connection: close\r\n\r\n")
}

/// The request rules under test, each applied when the request's `x-case`
/// header names it (a path condition would see the rewrites in HAProxy).
const REQUEST_RULES: &str = "
    http-request replace-path /foo/(.*) /\\1 if { req.hdr(x-case) rp }
    http-request replace-path ^/nomatch /x if { req.hdr(x-case) rp-miss }
    http-request replace-path o /O if { req.hdr(x-case) rp-part }
    http-request replace-pathq ^/a(.*) /b\\1 if { req.hdr(x-case) rpq }
    http-request replace-uri ^http://[^/]*(.*) \\1 if { req.hdr(x-case) ru }
    http-request replace-uri ^/(.*)$ /pre/\\1/%[req.hdr(x-v)] if { req.hdr(x-case) ru-fmt }
    http-request set-uri /new?%[req.hdr(x-v)] if { req.hdr(x-case) su }
    http-request set-uri http://other.example/abs if { req.hdr(x-case) su-abs }
    http-request set-pathq /p?q=%[req.hdr(x-v)] if { req.hdr(x-case) spq }
    http-request set-query %[req.hdr(x-v)] if { req.hdr(x-case) sq }
    http-request set-method %[req.hdr(x-v)] if { req.hdr(x-case) sm }
    http-request replace-value x-list ^a(.*) A\\1 if { req.hdr(x-case) rv }
    http-request replace-value x-list .* [&] if { req.hdr(x-case) rv-all }
    http-request strict-mode off if { req.hdr(x-case) strict }
    http-request set-path /after-strict if { req.hdr(x-case) strict }
    http-request strict-mode on if { req.hdr(x-case) strict }
    http-request reject if { req.hdr(x-case) reject }
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_rewrites_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
frontend fe
    bind {{fe0}}
    {LOG}
{REQUEST_RULES}
    default_backend be
backend be
    server s {{srv}}
"
    );
    let pair = Pair::start("reqrw", &cfg, 1).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let cases: &[(&str, &str, &str)] = &[
        ("rp", "/foo/bar?q=1", ""),
        ("rp", "/foo/", ""),
        ("rp-miss", "/foo/bar", ""),
        ("rp-part", "/foo/bar?o=1", ""),
        ("rpq", "/a/x?y=1", ""),
        ("rpq", "/ab", ""),
        ("ru", "http://h.example/p/q?r=1", ""),
        ("ru", "/origin?x", ""),
        ("ru-fmt", "/one/two?three", "x-v: V\r\n"),
        ("su", "/old/path?old", "x-v: k=v\r\n"),
        ("su-abs", "/old", ""),
        ("spq", "/old?o=1", "x-v: 7\r\n"),
        ("spq", "http://h.example/old?o=1", "x-v: 8\r\n"),
        ("sq", "/q?old", "x-v: new=1\r\n"),
        ("sq", "/q", "x-v: n\r\n"),
        ("sq", "/q?old", "x-v: \r\n"),
        ("sm", "/m", "x-v: PUT\r\n"),
        ("sm", "/m", "x-v: PURGE\r\n"),
        ("rv", "/v", "x-list: a1, b, a2\r\nx-list: c,a3\r\n"),
        ("rv-all", "/v", "x-list: a1, b\r\n"),
        ("strict", "/s", ""),
        ("reject", "/r", ""),
    ];
    let mut differ = haproxy::Differences::default();
    for (case, target, extra) in cases {
        let req = get(target, &format!("x-case: {case}\r\n{extra}"));
        let [h, s] = pair.both(0, &req).await;
        if *case == "rp" && *target == "/foo/bar?q=1" {
            // Not vacuous: haproxy rewrote the path, kept the query.
            assert!(h.2.starts_with("GET /bar?q=1 HTTP/1.1\r\n"), "{}", h.2);
        }
        differ.compare(format!("{case} {target} {extra:?}"), &h, &s);
    }
    differ.assert_none();
}

/// `set-status`, `replace-header` and `replace-value` on the server's
/// answer (`http-response`) and on every answer (`http-after-response`,
/// sluice's own pages included); the variables and captures of
/// `http-after-response`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_rewrites_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
frontend fe
    bind {{fe0}}
    log-format \"%ci %f %b/%s %ST %B %ts %{{+Q}}r %hs\"
    declare capture response len 8
    http-request set-var(txn.case) req.hdr(x-case)
    http-request return status 200 content-type text/plain string local if {{ path /return }}
    http-request deny deny_status 429 if {{ path /deny }}
    http-response set-status 503 if {{ var(txn.case) -m str st }}
    http-response set-status 200 reason \"Fine Thanks\" if {{ var(txn.case) -m str st-reason }}
    http-response set-status 299 if {{ var(txn.case) -m str st-odd }}
    http-response replace-header x-a ^(.*)-(.*)$ <\\2-\\1> if {{ var(txn.case) -m str rh }}
    http-response replace-value x-l ^b(.*) B\\1-%[status] if {{ var(txn.case) -m str rv }}
    http-response strict-mode on
    http-after-response set-status 418 if {{ var(txn.case) -m str after-st }}
    http-after-response set-status 404 reason Gone if {{ var(txn.case) -m str after-local }}
    http-after-response replace-header x-a ^x(.*) y\\1 if {{ var(txn.case) -m str after-rh }}
    http-after-response replace-value x-l ^c$ C if {{ var(txn.case) -m str after-rv }}
    http-after-response set-var(txn.st) status
    http-after-response set-var-fmt(txn.fmt) st=%[var(txn.st)]
    http-after-response set-header x-st %[var(txn.st)] if {{ var(txn.case) -m str vars }}
    http-after-response set-header x-fmt %[var(txn.fmt)] if {{ var(txn.case) -m str vars }}
    http-after-response unset-var(txn.fmt) if {{ var(txn.case) -m str vars }}
    http-after-response set-header x-unset [%[var(txn.fmt)]] if {{ var(txn.case) -m str vars }}
    http-after-response capture var(txn.case) id 0
    http-after-response strict-mode off
    default_backend be
backend be
    server s {{srv}}
"
    );
    let pair = Pair::start("resprw", &cfg, 1).await;
    pair.answer(
        b"HTTP/1.1 200 OK\r\nx-a: xa-xb\r\nx-l: a, b1,c\r\nx-l: b2\r\ncontent-length: 2\r\n\r\nok",
    );
    let cases: &[(&str, &str)] = &[
        ("st", "/"),
        ("st-reason", "/"),
        ("st-odd", "/"),
        ("rh", "/"),
        ("rv", "/"),
        ("after-st", "/"),
        ("after-st", "/return"),
        ("after-local", "/deny"),
        ("after-rh", "/"),
        ("after-rv", "/"),
        ("vars", "/"),
        ("vars", "/return"),
        ("none", "/"),
    ];
    let mut differ = haproxy::Differences::default();
    for (case, path) in cases {
        let req = get(path, &format!("x-case: {case}\r\n"));
        let [h, s] = pair.both(0, &req).await;
        if *case == "st" {
            assert!(h.0.starts_with("HTTP/1.1 503 "), "{}", h.0);
        }
        differ.compare(format!("{case} {path}"), &h, &s);
    }
    differ.assert_none();
}

#[test]
fn misused_rewrites_are_refused_as_haproxy_refuses_them() {
    if !haproxy::available() {
        return;
    }
    let cases = [
        "    http-request replace-path\n",
        "    http-request replace-path a\n",
        "    http-request replace-path ( x\n",
        "    http-request replace-path a b c\n",
        "    http-request replace-uri a\n",
        "    http-request replace-pathq a\n",
        "    http-request set-uri\n",
        "    http-request set-uri a b\n",
        "    http-request set-method\n",
        "    http-request set-pathq\n",
        "    http-request replace-value x\n",
        "    http-request replace-value x y\n",
        "    http-request replace-value x ( y\n",
        "    http-request reject foo\n",
        "    http-request strict-mode\n",
        "    http-request strict-mode maybe\n",
        "    http-request strict-mode on foo\n",
        "    http-response set-status\n",
        "    http-response set-status abc\n",
        "    http-response set-status 99\n",
        "    http-response set-status 1000\n",
        "    http-response set-status 200 reason\n",
        "    http-response set-status 200 foo\n",
        "    http-response replace-header x\n",
        "    http-response replace-value x y\n",
        "    http-after-response set-status 600\n",
        "    http-after-response replace-header x (\n",
        "    http-after-response set-var(txn.a)\n",
        "    http-after-response set-var(a.b) str(x)\n",
        "    http-after-response set-var-fmt(txn.a)\n",
        "    http-after-response unset-var(txn.a) foo\n",
        "    http-after-response capture str(a)\n",
        "    http-after-response capture str(a) id 3\n",
        "    http-after-response capture str(a) len 3\n",
        "    http-after-response strict-mode\n",
        "    http-request set-log-level\n",
        "    http-request set-log-level loud\n",
        "    http-request set-log-level err x\n",
        "    http-response set-log-level silent x\n",
        "    http-response set-log-level\n",
        "    http-request set-src\n",
        "    http-request set-src nosuch\n",
        "    http-request set-src src foo\n",
        "    http-request set-src-port\n",
        "    http-request set-dst req.hdr(x) foo\n",
        "    http-request set-dst-port int(1)\n",
        "    http-request set-src res.hdr(x)\n",
        "    http-request set-tos\n",
        "    http-request set-tos abc\n",
        "    http-request set-tos 16 foo\n",
        "    http-request set-mark\n",
        "    http-request set-nice\n",
        "    http-response set-nice 10 foo\n",
        "    http-response silent-drop foo\n",
        "    http-response return status 99\n",
        "    http-request set-var(txn.a) res.hdr(x)\n",
        "    http-request capture res.hdr(x) len 3\n",
        "    http-response capture req.hdr(x) id 0\n",
    ];
    haproxy::assert_check_agrees(
        "rwcheck",
        cases.iter().map(|line| {
            (
                line.trim().to_string(),
                format!(
                    "defaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    timeout connect 1s\nfrontend fe\n    bind 127.0.0.1:8080\n    declare capture response len 4\n{line}"
                ),
            )
        }),
        haproxy::first_alert_masked,
    );
}

/// `set-log-level` of `http-request` and `http-response`: the severity the
/// access log line is sent at (the `<PRI>` of the `short` format), and
/// `silent`, which sends none, as haproxy 2.6 does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_levels_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let global = GLOBAL.replace("format raw local0 info", "format short local0 debug");
    let cfg = format!(
        "{global}
frontend fe
    bind {{fe0}}
    {LOG}
    option log-separate-errors
    http-request set-var(txn.p) path
    http-request set-log-level err if {{ path /err }}
    http-request set-log-level silent if {{ path /silent }}
    http-request set-log-level notice if {{ path /both }}
    http-response set-log-level debug if {{ var(txn.p) -m str /dbg /both }}
    http-request deny if {{ path /denied }}
    default_backend be
backend be
    server s {{srv}}
"
    );
    let pair = Pair::start("loglevel", &cfg, 1).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let mut differ = haproxy::Differences::default();
    for path in ["/plain", "/err", "/dbg", "/both", "/denied"] {
        let req = get(path, "");
        let [h, s] = pair.both(0, &req).await;
        if path == "/err" {
            // Not vacuous: the `short` format's `<severity>`, err (3).
            assert!(h.1.starts_with("<3>"), "{}", h.1);
        }
        differ.compare(path, &h, &s);
    }
    // A silent request sends no line: the next line is the next request's.
    for i in 0..2 {
        let addr = pair.fronts[i][0].addr();
        for path in ["/silent", "/after"] {
            let req = get(path, "");
            haproxy::exchange(addr, req.as_bytes(), false).await;
        }
    }
    let (h, s) = (pair.logs[0].take(1), pair.logs[1].take(1));
    assert!(h[0].contains("/after"), "{h:?}");
    differ.compare("silent", &h, &s);
    differ.assert_none();
}

/// `set-src`, `set-src-port`, `set-dst`, `set-dst-port`: what the rules
/// after them, the backend choice, the server's `X-Forwarded-For` and the
/// log see, as haproxy 2.6 shows them. Every case ends with known ports
/// (the test's own differ between the two proxies).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn address_rewrites_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
frontend fe
    bind {{fe0}}
    log-format \"%ci:%cp %fi:%fp %f %b/%s %ST %{{+Q}}r\"
    option forwardfor
    http-request set-src req.hdr(x-ip) if {{ req.hdr(x-ip) -m found }}
    http-request set-src-port req.hdr(x-port) if {{ req.hdr(x-port) -m found }}
    http-request set-src-port int(4321) unless {{ req.hdr(x-port) -m found }}
    http-request set-dst req.hdr(x-dst) if {{ req.hdr(x-dst) -m found }}
    http-request set-dst-port int(8080)
    http-request set-header x-seen %[src]:%[src_port]>%[dst]:%[dst_port]
    use_backend ten if {{ src 10.0.0.0/8 }}
    default_backend be
backend be
    server s {{srv}}
backend ten
    server s {{srv}}
"
    );
    let pair = Pair::start("addrrw", &cfg, 1).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let cases = [
        "",
        "x-ip: 10.1.2.3\r\n",
        "x-ip: 2001:db8::1\r\n",
        "x-ip: garbage\r\n",
        "x-ip: 10.9.9.9\r\nx-port: 99999\r\n",
        "x-port: 80\r\nx-dst: 192.0.2.1\r\n",
        "x-dst: ::1\r\n",
    ];
    let mut differ = haproxy::Differences::default();
    for extra in cases {
        let req = get("/a", extra);
        let [h, s] = pair.both(0, &req).await;
        if extra.starts_with("x-ip: 10.1.2.3") {
            // Not vacuous: haproxy routed and forwarded the new source.
            assert!(h.1.starts_with("10.1.2.3:4321 "), "{}", h.1);
            assert!(h.2.contains("x-forwarded-for: 10.1.2.3\r\n"), "{}", h.2);
        }
        differ.compare(format!("{extra:?}"), &h, &s);
    }
    differ.assert_none();
}

/// `option dontlog-normal`: only the exchanges that failed (an error
/// status of 500 and up, a termination state, a retry) are logged, as
/// haproxy 2.6 logs them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dontlog_normal_is_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
frontend fe
    bind {{fe0}}
    {LOG}
    option dontlog-normal
    http-request deny if {{ path /denied }}
    http-request return status 503 if {{ path /busy }}
    use_backend nosrv if {{ path /nosrv }}
    default_backend be
backend be
    server s {{srv}}
backend nosrv
"
    );
    let pair = Pair::start("dontlognormal", &cfg, 1).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let mut differ = haproxy::Differences::default();
    for i in 0..2 {
        let addr = pair.fronts[i][0].addr();
        for path in ["/ok", "/denied", "/ok", "/busy", "/nosrv"] {
            let req = get(path, "");
            haproxy::exchange(addr, req.as_bytes(), false).await;
        }
    }
    // The two /ok are not logged; the next line is the deny's.
    let (h, s) = (pair.logs[0].take(3), pair.logs[1].take(3));
    assert!(h[0].contains("/denied"), "{h:?}");
    differ.compare("dontlog-normal", &h, &s);
    differ.assert_none();
}

/// `set-tos` and `set-mark` of `http-request` and `http-response`: what
/// the client connection's socket says afterwards (`ss --tos -e` on the
/// proxy's side), as haproxy 2.6 leaves it; `set-nice` changes nothing
/// visible and is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_marks_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
frontend req
    bind {{fe0}}
    http-request set-tos 0x20
    http-request set-mark 5
    http-request set-nice 100
    http-request return status 200
frontend res
    bind {{fe1}}
    http-response set-tos 72
    http-response set-mark 0x9
    http-response set-nice -100
    default_backend be
backend be
    server s {{srv}}
"
    );
    let pair = Pair::start("sockmarks", &cfg, 2).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let mut seen = Vec::new();
    for i in 0..2 {
        let mut marks = Vec::new();
        for n in 0..2 {
            let front = pair.fronts[i][n].addr();
            // Kept open while `ss` looks at the proxy's end of it.
            let mut conn = HttpConn::connect(front).await;
            let r = conn.get("/").await;
            assert_eq!(r.status, 200);
            let mine = conn.local_addr();
            let out = std::process::Command::new("ss")
                .args(["-tnieH", "--tos", "state", "established"])
                .output()
                .expect("ss");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            // The proxy's socket: local end the frontend, peer this client.
            let line = text
                .split("\n\t")
                .find(|l| l.contains(&format!(" {front} {mine} ")))
                .unwrap_or("")
                .to_string();
            let field = |k: &str| {
                line.split_whitespace()
                    .find_map(|w| w.strip_prefix(k))
                    .unwrap_or("-")
                    .to_string()
            };
            marks.push((field("tos:"), field("fwmark:")));
        }
        seen.push(marks);
    }
    // Not vacuous: haproxy set both, on each side.
    assert_eq!(
        seen[0],
        [
            ("0x20".to_string(), "0x5".to_string()),
            ("0x48".to_string(), "0x9".to_string())
        ]
    );
    assert_eq!(seen[0], seen[1]);
}

/// `http-response return` (the server's answer replaced, logged `LH`) and
/// `http-response silent-drop` (nothing sent, logged `PR` with the
/// server's status), as haproxy 2.6 does them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_return_and_drop_are_haproxys() {
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
    http-request set-var(txn.p) path
    http-response return status 202 content-type text/plain string replaced if {{ var(txn.p) -m str /ret }}
    http-response return if {{ var(txn.p) -m str /empty }}
    http-response silent-drop if {{ var(txn.p) -m str /drop }}
    server s {{srv}}
"
    );
    let pair = Pair::start("respreturn", &cfg, 1).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    // The server closes after its answer: with it still open, haproxy may
    // reset the client connection it answered itself before the client
    // has read the answer.
    for s in &pair.servers {
        s.set_close_after(true);
    }
    let mut differ = haproxy::Differences::default();
    for path in ["/ret", "/empty", "/plain"] {
        let req = get(path, "");
        let [h, s] = pair.both(0, &req).await;
        if path == "/ret" {
            assert!(h.0.starts_with("HTTP/1.1 202 "), "{h:?}");
        }
        differ.compare(path, &h, &s);
    }
    // A dropped connection never sees its end (the proxy hides its close
    // from the client): the log line, sent when it drops it, is compared.
    let mut lines = Vec::new();
    for i in 0..2 {
        let mut c = tokio::net::TcpStream::connect(pair.fronts[i][0].addr())
            .await
            .expect("connect");
        tokio::io::AsyncWriteExt::write_all(&mut c, get("/drop", "").as_bytes())
            .await
            .expect("send");
        lines.push(pair.logs[i].take(1));
    }
    assert!(lines[0][0].contains(" PR "), "{lines:?}");
    differ.compare("/drop", &lines[0], &lines[1]);
    differ.assert_none();
}
