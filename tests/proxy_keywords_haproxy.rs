//! The proxy keywords of HAProxy 2.6 that each touch one spot (the stats
//! page's node and descriptions, `timeout client-fin|server-fin`,
//! `http-errors` sections and `errorloc*`, `source`, `dispatch`, `option
//! originalto`, `http-send-name-header`...), run by haproxy and by sluice
//! on the same configuration and compared: the bytes the client and the
//! server receive, the stats page's texts, the CLI, and `-c`'s messages.
//!
//! Required when `CI` is set (`.ci/run` installs haproxy); skipped with a
//! message otherwise.

mod support;

use support::haproxy::{Differences, Haproxy, assert_check_agrees, available};
use support::*;

const DEFAULTS: &str = "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
";

/// The text between `start` and the next `end` of `page`, if any.
fn between<'a>(page: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let at = page.find(start)? + start.len();
    let len = page[at..].find(end)?;
    Some(&page[at..at + len])
}

/// The page is sluice's own design (HAProxy's is 20 kB of its own tables):
/// what is compared is the text `stats show-node`, `stats show-desc` and
/// `description` put on it, where each page has it. The pid differs
/// (two processes) and is masked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_page_shows_node_and_descriptions_as_haproxy() {
    if !available() {
        return;
    }
    let cfg = |fe: &[Listen], sock: &str| {
        format!(
            "global
    node gnode
    description the global one
    stats socket {sock} level admin
{DEFAULTS}frontend fe
    bind {}
    description front   end \"of it\"
    stats enable
    stats uri /st
    stats show-node edge-1.a_b
    stats show-desc my  own  text
    stats show-modules
    default_backend be
backend be
    description back end
    server s1 127.0.0.1:9
frontend fe2
    bind {}
    stats enable
    stats uri /st
    stats show-node
    stats show-desc
",
            fe[0], fe[1]
        )
    };
    let dir = TempDir::new("pxkw-stats");
    let hsock = dir.join("h.sock");
    let fronts = listens(2);
    let hap = Haproxy::start(
        "pxkw-stats",
        &cfg(&fronts, hsock.to_str().expect("utf-8")),
        &[&fronts[0], &fronts[1]],
    );
    let mine = listens(2);
    let sl = Sluice::start(&cfg(&mine, "@DIR@/s.sock"));
    // fe2 comes first: `show-node` and `show-desc` without words name the
    // global `node` and `description`.
    let req = b"GET /st HTTP/1.1\r\nhost: x\r\n\r\n";
    let mut d = Differences::default();
    for (label, i) in [("fe2", 1), ("fe", 0)] {
        let h = HttpConn::connect(fronts[i].addr())
            .await
            .raw(req, false)
            .await;
        let s = HttpConn::connect(mine[i].addr())
            .await
            .raw(req, false)
            .await;
        let (h, s) = (
            h.expect("haproxy's page").text(),
            s.expect("sluice's page").text(),
        );
        // Haproxy's page has what is compared (a test that cannot fail
        // would compare two Nones).
        let line = report(&h, "<h2>").unwrap_or_default();
        assert!(line.starts_with(" on ") && line.contains(": "), "{line}");
        d.compare(
            format!("{label}: title's node"),
            &between(&h, "Statistics Report for HAProxy", "</title>"),
            &between(&s, "Statistics Report for sluice", "</title>"),
        );
        d.compare(
            format!("{label}: report line (show-node, show-desc)"),
            &report(&h, "<h2>"),
            &report(&s, "<p class=node>"),
        );
        if label == "fe2" {
            continue;
        }
        for px in ["fe", "be"] {
            let hd = between(
                &h,
                &format!("href=\"#{px}\">{px}</a></th><th class=\"desc\" width=\"90%\">"),
                "</th>",
            );
            let sd = between(&s, &format!("<h2>{px}</h2>\n<p class=desc>"), "</p>");
            d.compare(format!("description of {px}"), &hd, &sd);
        }
        // show-modules: the extra columns, in HAProxy's order.
        d.compare(
            "module columns",
            &between(&h, "<th>Thrtle</th>\n", "</tr>"),
            &between(&s, "<th>Check</th>", "</tr>"),
        );
    }
    d.compare(
        "show info node, description",
        &info_lines(&cli_blocking(&hsock, "show info")),
        &info_lines(&cli_blocking(&sl.path("s.sock"), "show info")),
    );
    // `description` has no column in HAProxy 2.6's CSV: both give the
    // same header.
    d.compare(
        "show stat header",
        &cli_blocking(&hsock, "show stat")
            .lines()
            .next()
            .map(str::to_string),
        &cli_blocking(&sl.path("s.sock"), "show stat")
            .lines()
            .next()
            .map(str::to_string),
    );
    d.assert_none();
    drop(hap);
}

/// The `Statistics Report for pid <pid>...` line's text after the pid
/// (masked: two processes).
fn report(page: &str, open: &str) -> Option<String> {
    between(page, open, "<").map(|t| {
        let rest = t.trim_start_matches("Statistics Report for pid ");
        rest.trim_start_matches(|c: char| c.is_ascii_digit())
            .to_string()
    })
}

fn info_lines(info: &str) -> Vec<String> {
    info.lines()
        .filter(|l| l.starts_with("node:") || l.starts_with("description:"))
        .map(str::to_string)
        .collect()
}

/// `-c` on the misuses of the stats page's and `description` keywords:
/// the same exit code and message as `haproxy -c`.
#[test]
fn stats_and_description_misuse_is_reported_as_haproxy() {
    if !available() {
        return;
    }
    let case = |label: &str, section: &str| (label.to_string(), format!("{DEFAULTS}{section}"));
    let cases = vec![
        case("bad node name", "backend b\n    stats show-node a*b\n"),
        case(
            "description in defaults",
            "defaults\n    description x\nbackend b\n",
        ),
        case(
            "show-desc without a global one",
            "backend b\n    stats show-desc\n",
        ),
        case("show-modules", "backend b\n    stats show-modules\n"),
        case("description", "backend b\n    description a  b c\n"),
    ];
    assert_check_agrees("pxkw-check", cases, |e| {
        let w = e
            .lines()
            .find(|l| l.contains("show-desc"))
            .and_then(|l| l.split_once("]: "))
            .map(|(_, m)| m.to_string());
        format!("{} {w:?}", message(e))
    });
}

/// The message of the first alert naming a line, or "(accepted)": the text
/// after `parsing [<file>:<line>]` and its colon, whether HAProxy writes
/// `]: ` or `] : ` there (the pid before it differs).
fn message(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| l.contains("[ALERT]"))
        .find_map(|l| l.split_once("parsing [").map(|(_, m)| m))
        .and_then(|m| m.split_once(']'))
        .map(|(_, m)| m.trim_start_matches([':', ' ']).to_string())
        .unwrap_or_else(|| "(accepted)".into())
}

/// A server that never closes first: for each connection it sends
/// `greet` and shuts its sending side (when `greet` is set), reads until
/// the peer's end, then keeps the socket open until the test ends.
async fn holding_server(greet: Option<&'static [u8]>) -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = l.local_addr().expect("addr");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut s, _)) = l.accept().await {
            if let Some(g) = greet {
                let _ = s.write_all(g).await;
                let _ = s.shutdown().await;
            }
            let mut buf = [0u8; 1024];
            // Read what comes (not necessarily to the end: the socket is
            // kept either way).
            let _ =
                tokio::time::timeout(std::time::Duration::from_millis(50), s.read(&mut buf)).await;
            held.push(s);
        }
    });
    addr
}

/// The log line (`%cp ...`) of the session of client `c`, without the
/// port: the readiness probes' sessions log lines too.
fn line_of(log: &support::syslog::Syslog, c: &tokio::net::TcpStream) -> String {
    let port = c.local_addr().expect("addr").port();
    let mask = format!("{port} {{}}");
    log.until(&[&mask])
        .into_iter()
        .find(|l| support::syslog::matches(&mask, l))
        .map(|l| l[port.to_string().len() + 1..].trim_end().to_string())
        .unwrap_or_default()
}

/// `timeout server-fin` and `timeout client-fin` end a TCP session whose
/// other direction has ended, where `timeout server`/`client` (30 s,
/// longer than the log line is waited for) would keep it: the log lines'
/// termination states and byte counts are compared with haproxy's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fin_timeouts_end_half_closed_sessions_as_haproxy() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if !available() {
        return;
    }
    let silent = holding_server(None).await;
    let greeter = holding_server(Some(b"hello\n")).await;
    let logs = [
        support::syslog::Syslog::new(),
        support::syslog::Syslog::new(),
    ];
    let fronts = [listens(2), listens(2)];
    let cfg = |i: usize| {
        format!(
            "global
    log {log} format raw local0 info
defaults
    mode tcp
    log global
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout client-fin 100ms
    timeout server-fin 100ms
frontend srvfin
    bind {fe0}
    log-format \"%cp %ts %U %B\"
    default_backend held
frontend clifin
    bind {fe1}
    log-format \"%cp %ts %U %B\"
    default_backend greets
backend held
    server s {silent}
backend greets
    server s {greeter}
",
            log = logs[i].addr(),
            fe0 = fronts[i][0],
            fe1 = fronts[i][1],
        )
    };
    let hap = Haproxy::start("pxkw-fin", &cfg(0), &[&fronts[0][0], &fronts[0][1]]);
    let sl = Sluice::start(&cfg(1));
    let mut got: [Vec<String>; 2] = Default::default();
    let mut held = Vec::new();
    for i in 0..2 {
        // The client sends and shuts its side; the server never answers
        // nor closes: server-fin ends it.
        let mut c = tokio::net::TcpStream::connect(fronts[i][0].addr())
            .await
            .expect("connect");
        c.write_all(b"ping\n").await.expect("send");
        c.shutdown().await.expect("shutdown");
        got[i].push(line_of(&logs[i], &c));
        held.push(c);
        // The server greets and shuts its side; the client reads to the
        // end and never closes: client-fin ends it.
        let mut c = tokio::net::TcpStream::connect(fronts[i][1].addr())
            .await
            .expect("connect");
        let mut bytes = Vec::new();
        c.read_to_end(&mut bytes).await.expect("read");
        got[i].push(format!("{:?}", String::from_utf8_lossy(&bytes)));
        got[i].push(line_of(&logs[i], &c));
        held.push(c);
    }
    let mut d = Differences::default();
    // What is compared is what it should be (the sessions were ended by
    // the fin timeouts, not by their ends).
    assert!(
        got[0][0].starts_with("sD ") && got[0][2].starts_with("cD "),
        "{got:?}"
    );
    d.compare("server-fin, client-fin", &got[0], &got[1]);
    d.assert_none();
    drop((hap, sl));
}

/// `http-request tarpit` holds the request for `timeout tarpit`, taken
/// from `defaults`, not for `timeout connect` (30 s, longer than the
/// answer is waited for): the answer and the log line are haproxy's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tarpit_waits_timeout_tarpit_from_defaults_as_haproxy() {
    if !available() {
        return;
    }
    let cfg = "global
    log {log} format raw local0 info
defaults
    mode http
    log global
    option dontlognull
    timeout connect 30s
    timeout client 30s
    timeout server 30s
    timeout tarpit 50ms
frontend fe
    bind {fe0}
    log-format \"%ST %tsc %B\"
    http-request tarpit if { path /t }
    default_backend be
backend be
    server s {srv}
";
    let pair = support::haproxy::Pair::start("pxkw-tarpit", cfg, 1).await;
    let [h, s] = pair
        .both(0, "GET /t HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n")
        .await;
    assert!(h.0.starts_with("HTTP/1.1 500"), "{h:?}");
    assert_eq!(h, s);
}

/// `-c` on the fin timeouts where they mean nothing, and a bad value.
#[test]
fn fin_timeouts_misuse_is_reported_as_haproxy() {
    if !available() {
        return;
    }
    let cases = [
        (
            "client-fin in a backend",
            "backend b\n    timeout client-fin 1s\n",
        ),
        (
            "server-fin in a frontend",
            "frontend f\n    timeout server-fin 1s\n",
        ),
        ("bad value", "backend b\n    timeout server-fin 1x\n"),
        (
            "defaults",
            "defaults\n    timeout server-fin 1s\n    timeout client-fin 2s\nbackend b\n",
        ),
    ]
    .map(|(l, c)| (l.to_string(), format!("{DEFAULTS}{c}")));
    assert_check_agrees("pxkw-fin-check", cases, |e| {
        let warns: Vec<&str> = e
            .lines()
            .filter(|l| l.contains("-fin'"))
            .filter_map(|l| l.split_once("] : ").map(|(_, m)| m))
            .collect();
        format!("{} {warns:?}", message(e))
    });
}

/// `http-errors` sections imported by `errorfiles` (from `defaults` and
/// in the proxy, all codes or some), overridden by a later `errorfile`,
/// and `errorloc302`/`errorloc303`/`errorloc`: the bytes of each answer
/// and its log line are haproxy's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_and_errorloc_answer_as_haproxy() {
    if !available() {
        return;
    }
    let dir = TempDir::new("pxkw-errors");
    let page = |name: &str, text: &str| dir.write(name, text).display().to_string();
    let p503 = page(
        "503.http",
        "HTTP/1.1 503 Busy\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nbusy\n",
    );
    let p403 = page(
        "403.http",
        "HTTP/1.0 403 Nope\r\nX-A: 1\r\n\r\nforbidden page\n",
    );
    let p403b = page(
        "403b.http",
        "HTTP/1.1 403 Own\r\nContent-Length: 4\r\nCache-Control: no-cache\r\n\r\nown\n",
    );
    let p404 = page(
        "404.http",
        "HTTP/1.1 404 Gone\r\nContent-Length: 3\r\n\r\nnf\n",
    );
    let cfg = format!(
        "{}    errorfiles site 403 503 429
frontend fe
    bind {{fe0}}
    log-format \"%ST %B %HP\"
    errorfiles site 404
    errorfile 403 {p403b}
    errorloc302 500 http://x.example/nf?a=1
    errorloc303 502 /e502
    errorloc 504 /e504
    http-request deny deny_status 403 if {{ path /403 }}
    http-request deny deny_status 404 if {{ path /404 }}
    http-request deny deny_status 500 if {{ path /500 }}
    http-request deny deny_status 502 if {{ path /502 }}
    http-request deny deny_status 504 if {{ path /504 }}
    http-request deny deny_status 429 if {{ path /429 }}
    use_backend empty if {{ path /503 }}
    default_backend be
backend be
    server s {{srv}}
backend empty
    errorfiles site
http-errors site
    errorfile 503 {p503}
    errorfile 403 {p403}
    errorfile 404 {p404}
",
        support::haproxy::HTTP_LOG_GLOBAL
    );
    let pair = support::haproxy::Pair::start("pxkw-errors", &cfg, 1).await;
    let mut d = Differences::default();
    for code in [403, 404, 500, 502, 504, 429, 503] {
        let req = format!("GET /{code} HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n");
        let [h, s] = pair.both(0, &req).await;
        // What haproxy answered is what the case is about.
        let first = h.0.lines().next().unwrap_or_default().to_string();
        let want = match code {
            403 => "HTTP/1.1 403 Own",
            404 => "HTTP/1.1 404 Gone",
            500 | 502 | 504 => "HTTP/1.1 30",
            503 => "HTTP/1.1 503 Busy",
            _ => "HTTP/1.1 429 Too Many Requests",
        };
        assert!(first.starts_with(want), "/{code}: {first}");
        d.compare(format!("/{code}"), &h, &s);
    }
    d.assert_none();
}

/// `-c` on `http-errors` sections, `errorfiles` and `errorloc*` misuse:
/// the same exit code and first alert as `haproxy -c`, and the warning
/// for a code the section lacks.
#[test]
fn http_errors_misuse_is_reported_as_haproxy() {
    if !available() {
        return;
    }
    let cases = [
        (
            "section without a name",
            "http-errors\n    errorfile 503 /dev/null\n",
        ),
        (
            "code not handled in a section",
            "http-errors e\n    errorfile 999 /dev/null\n",
        ),
        (
            "missing file",
            "http-errors e\n    errorfile 503 /nonexistent/x\n",
        ),
        ("unknown keyword", "http-errors e\n    foo bar\n"),
        ("twice", "http-errors e\nhttp-errors e\n"),
        (
            "errorfile without a file",
            "http-errors e\n    errorfile 503\n",
        ),
        ("errorfiles without a name", "backend b\n    errorfiles\n"),
        ("unknown section", "backend b\n    errorfiles nope\n"),
        (
            "code not handled",
            "http-errors e\nbackend b\n    errorfiles e 999\n",
        ),
        (
            "code not declared",
            "http-errors e\n    errorfile 503 /dev/null\nbackend b\n    errorfiles e 404 503\n",
        ),
        (
            "section declared later",
            "backend b\n    errorfiles e 503\nhttp-errors e\n    errorfile 503 /dev/null\n",
        ),
        ("errorloc without url", "backend b\n    errorloc 404\n"),
        ("errorloc bad code", "backend b\n    errorloc302 999 /x\n"),
        (
            "errorloc303",
            "defaults\n    mode http\n    errorloc303 503 /z extra\nbackend b\n",
        ),
    ]
    .map(|(l, c)| (l.to_string(), format!("{DEFAULTS}{c}")));
    assert_check_agrees("pxkw-errors-check", cases, |e| {
        let e = &mask_cfg_path(e);
        let warns: Vec<&str> = e
            .lines()
            .filter(|l| l.contains("not declared"))
            .filter_map(|l| l.split_once(" : config : ").map(|(_, m)| m))
            .collect();
        let alert = e
            .lines()
            .find(|l| l.contains("http-errors section '") && l.contains("[ALERT]"))
            .and_then(|l| l.split_once(" : config : ").map(|(_, m)| m.to_string()));
        format!("{} {warns:?} {alert:?}", message(e))
    });
}

/// `e` with each configuration file's path as `<cfg>`: the two runs read
/// copies in two temporary directories (`haproxy.cfg`, `sluice.cfg`).
fn mask_cfg_path(e: &str) -> String {
    let mut out = String::new();
    let mut rest = e;
    while let Some(at) = rest.find("/tmp/sluice-") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail.find(".cfg").map_or(tail.len(), |i| i + 4);
        out.push_str("<cfg>");
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// An HTTP server that answers each request with the address its
/// connection came from, then closes.
async fn peer_echo_server() -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = l.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut s, peer)) = l.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let body = format!("{}\n", peer.ip());
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
            });
        }
    });
    addr
}

/// `source` in a backend and in `defaults`, a server's own `source`, and
/// `usesrc clientip` (the client connects from 127.0.0.9), and a backend
/// whose server is its `dispatch` address: the address the server sees,
/// which it answers with, is haproxy's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_addresses_as_haproxy() {
    if !available() {
        return;
    }
    let echo = peer_echo_server().await;
    let fronts = [listens(5), listens(5)];
    let cfg = |i: usize| {
        let f = &fronts[i];
        format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
    source 127.0.0.5
frontend f0
    bind {}
    default_backend b0
frontend f1
    bind {}
    default_backend b1
frontend f2
    bind {}
    default_backend b2
frontend f3
    bind {}
    default_backend b3
frontend f4
    bind {}
    default_backend b4
backend b0
    source 127.0.0.2
    server s {echo}
backend b1
    source 127.0.0.3
    server s {echo} source 127.0.0.4
backend b2
    server s {echo}
backend b3
    source 0.0.0.0 usesrc clientip
    server s {echo}
backend b4
    dispatch {echo}
",
            f[0], f[1], f[2], f[3], f[4]
        )
    };
    let refs: Vec<&Listen> = fronts[0].iter().collect();
    let hap = Haproxy::start("pxkw-source", &cfg(0), &refs);
    let sl = Sluice::start(&cfg(1));
    let mut d = Differences::default();
    for n in 0..5 {
        let mut seen = Vec::new();
        for f in &fronts {
            let sock = tokio::net::TcpSocket::new_v4().expect("socket");
            sock.bind("127.0.0.9:0".parse().expect("addr"))
                .expect("bind");
            let mut c = sock.connect(f[n].addr()).await.expect("connect");
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            c.write_all(b"GET / HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n")
                .await
                .expect("send");
            let mut out = Vec::new();
            let _ = within(REQ_DEADLINE, "the answer", c.read_to_end(&mut out)).await;
            let text = String::from_utf8_lossy(&out).into_owned();
            seen.push(text.rsplit("\r\n").next().unwrap_or_default().to_string());
        }
        let want = [
            "127.0.0.2\n",
            "127.0.0.4\n",
            "127.0.0.5\n",
            "127.0.0.9\n",
            "127.0.0.5\n",
        ][n];
        assert_eq!(seen[0], want, "haproxy, frontend f{n}");
        d.compare(format!("f{n}"), &seen[0], &seen[1]);
    }
    d.assert_none();
    drop((hap, sl));
}

/// `-c` on `source` (a proxy's, a server's, `usesrc`, `interface`) and
/// `dispatch`: the same exit code and first alert as `haproxy -c`.
#[test]
fn source_and_dispatch_misuse_is_reported_as_haproxy() {
    if !available() {
        return;
    }
    let cases = [
        ("no address", "backend b\n    source\n"),
        ("bad address", "backend b\n    source foo\n"),
        ("usesrc without argument", "backend b\n    source 127.0.0.2 usesrc\n"),
        ("usesrc forms", "backend b\n    source 127.0.0.2 usesrc clientip\nbackend c\n    source 127.0.0.2:4000 usesrc 127.0.0.3:80\nbackend d\n    source 127.0.0.2 usesrc client interface lo\n"),
        ("unknown word", "backend b\n    source 127.0.0.2 bogus\n"),
        ("in a frontend", "frontend f\n    bind 127.0.0.1:0\n    source 127.0.0.2\n"),
        ("server source range", "backend b\n    server s 127.0.0.1:80 source 127.0.0.2:1000-2000 usesrc clientip\n"),
        ("server source without address", "backend b\n    server s 127.0.0.1:80 source\n"),
        ("server usesrc alone", "backend b\n    server s 127.0.0.1:80 usesrc clientip\n"),
        ("dispatch without address", "backend b\n    dispatch\n"),
        ("dispatch without port", "backend b\n    dispatch 127.0.0.1\n"),
        ("dispatch bad address", "backend b\n    dispatch foo:80\n"),
        ("dispatch", "backend b\n    dispatch 127.0.0.1:80\n"),
        ("option transparent", "backend b\n    option transparent\nfrontend f\n    option transparent\n"),
        ("originalto except without net", "backend b\n    option originalto except\n"),
        ("originalto except not a net", "backend b\n    option originalto except foo\n"),
        ("originalto header without name", "backend b\n    option originalto header\n"),
        ("originalto unknown word", "backend b\n    option originalto bogus\n"),
        ("no option originalto", "backend b\n    no option originalto\n"),
        ("http-use-proxy-header", "backend b\n    option http-use-proxy-header\nfrontend f\n    option http-use-proxy-header x\n"),
        ("option checkcache", "frontend f\n    option checkcache\nbackend b\n    option checkcache x\nbackend c\n    no option checkcache\n"),
        ("persist without method", "backend b\n    persist\n"),
        ("persist unknown method", "backend b\n    persist foo\n"),
        ("persist rdp-cookie without name", "backend b\n    persist rdp-cookie(\n"),
        ("persist rdp-cookie forms", "backend b\n    persist rdp-cookie(foo)\nbackend c\n    persist rdp-cookie\nfrontend f\n    persist rdp-cookiex\n"),
        ("ignore-persist without condition", "backend b\n    ignore-persist\n"),
        ("ignore-persist bad word", "backend b\n    ignore-persist foo\n"),
        ("force-persist in a frontend", "frontend f\n    force-persist unless TRUE\nbackend b\n    force-persist if TRUE\n    ignore-persist unless TRUE\n"),
        ("send-name-header without name", "backend b\n    http-send-name-header\n"),
        ("send-name-header in a frontend", "frontend f\n    http-send-name-header x\nbackend b\n    http-send-name-header a b\n"),
    ]
    .map(|(l, c)| (l.to_string(), format!("{DEFAULTS}{c}")));
    assert_check_agrees("pxkw-source-check", cases, |e| {
        let e = mask_cfg_path(e);
        let warns: Vec<String> = e
            .lines()
            .filter(|l| {
                l.contains("[WARNING]")
                    && [
                        "'source'",
                        "'transparent'",
                        "'http-send-name-header'",
                        "-persist'",
                        "'http-use-proxy-header'",
                        "'checkcache'",
                    ]
                    .iter()
                    .any(|k| l.contains(k))
            })
            .filter_map(|l| l.split_once("] : ").map(|(_, m)| m.to_string()))
            .collect();
        // A server line's alert has no `parsing`: its text after the
        // location.
        let server = e
            .lines()
            .find(|l| l.contains("[ALERT]") && l.contains("'server b/s'"))
            .and_then(|l| l.split_once("'server b/s' : ").map(|(_, m)| m.to_string()));
        format!("{} {warns:?} {server:?}", message(&e))
    });
}

/// `option originalto` in a frontend, with `header`, after `option
/// forwardfor`, with `except`, and a backend's over a frontend's; and
/// `http-send-name-header`, whose field replaces the request's own: the
/// bytes the server receives are haproxy's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn originalto_header_as_haproxy() {
    if !available() {
        return;
    }
    let cfg = format!(
        "{}frontend f0
    bind {{fe0}}
    option originalto
    default_backend plain
frontend f1
    bind {{fe1}}
    option forwardfor
    option originalto header X-Dst
    default_backend plain
frontend f2
    bind {{fe2}}
    option originalto except 127.0.0.0/8
    default_backend plain
frontend f3
    bind {{fe3}}
    option originalto header X-Front
    default_backend own
frontend f4
    bind {{fe4}}
    option forwardfor
    default_backend named
backend named
    http-send-name-header X-Srv
    server s {{srv}}
backend plain
    server s {{srv}}
backend own
    option originalto header X-Back
    server s {{srv}}
",
        support::haproxy::HTTP_LOG_GLOBAL
    );
    let pair = support::haproxy::Pair::start("pxkw-orig", &cfg, 5).await;
    let mut d = Differences::default();
    for n in 0..5 {
        let [h, s] = pair
            .both(
                n,
                "GET / HTTP/1.1\r\nhost: h\r\nx-original-to: 1.2.3.4\r\nX-Srv: old\r\nconnection: close\r\n\r\n",
            )
            .await;
        if n == 4 {
            assert!(
                h.2.contains("\r\nx-srv: s\r\n") && !h.2.contains("old"),
                "{}",
                h.2
            );
        }
        d.compare(format!("f{n}: to the server"), &h.2, &s.2);
        d.compare(format!("f{n}: answer"), &h.0, &s.0);
    }
    d.assert_none();
}

/// `rate-limit sessions 1`: a burst of connections is taken one a second,
/// the rest wait in the listening socket's backlog, and `show stat` gives
/// the limit as `rate_lim`, as haproxy does. (Four connections made at
/// once cannot all be taken in less than two seconds: the check reads the
/// backlog right after they are made.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_sessions_as_haproxy() {
    if !available() {
        return;
    }
    let dir = TempDir::new("pxkw-rate");
    let hsock = dir.join("h.sock");
    let cfg = |fe: &Listen, sock: &str| {
        format!(
            "global
    stats socket {sock} level admin
{DEFAULTS}frontend fe
    bind {fe}
    rate-limit sessions 1
    http-request return status 200
backend b
    rate-limit sessions 5
"
        )
    };
    let (h, s) = (Listen::new(), Listen::new());
    let hap = Haproxy::start("pxkw-rate", &cfg(&h, hsock.to_str().expect("utf-8")), &[&h]);
    let sl = Sluice::start(&cfg(&s, "@DIR@/s.sock"));
    let mut d = Differences::default();
    for (who, l) in [("haproxy", &h), ("sluice", &s)] {
        let mut conns = Vec::new();
        for _ in 0..4 {
            conns.push(
                tokio::net::TcpStream::connect(l.addr())
                    .await
                    .expect("connect"),
            );
        }
        let waiting = l.queued();
        assert!(waiting >= 1, "{who}: {waiting} connections wait");
        drop(conns);
    }
    let rate_lim = |text: String| {
        let csv = Csv::parse(&text);
        csv.get("fe", "FRONTEND", "rate_lim")
    };
    d.compare(
        "rate_lim",
        &rate_lim(cli_blocking(&hsock, "show stat")),
        &rate_lim(cli_blocking(&sl.path("s.sock"), "show stat")),
    );
    d.assert_none();
    drop(hap);
}

/// `-c` on `rate-limit` and the keep-alive tuning keywords: the same exit
/// code, first alert and warnings as `haproxy -c`.
#[test]
fn rate_limit_and_tcpka_misuse_is_reported_as_haproxy() {
    if !available() {
        return;
    }
    let mut cases = Vec::new();
    for l in [
        "rate-limit",
        "rate-limit sessions",
        "rate-limit sessions x",
        "rate-limit foo 3",
        "rate-limit sessions 10",
        "clitcpka-cnt",
        "clitcpka-cnt x",
        "clitcpka-idle 10x",
        "clitcpka-idle",
        "clitcpka-intvl 5s",
        "srvtcpka-cnt 3",
        "srvtcpka-idle 30s",
        "srvtcpka-intvl 0",
        "max-keep-alive-queue",
        "max-keep-alive-queue x",
        "max-keep-alive-queue -1",
        "option httpslog x",
        "no option httpslog",
    ] {
        // haproxy 2.6.12 aborts (`free(): invalid pointer`) on `option
        // httpslog` in a backend: a frontend only then.
        let cfg = if l.contains("httpslog") {
            format!("{DEFAULTS}frontend f\n    {l}\n")
        } else {
            format!("{DEFAULTS}    {l}\nbackend b\n    {l}\nfrontend f\n    {l}\n")
        };
        cases.push((l.to_string(), cfg));
    }
    assert_check_agrees("pxkw-rate-check", cases, |e| {
        let warns: Vec<&str> = e
            .lines()
            .filter(|l| l.contains("will be ignored") || l.contains("is ignored in"))
            .filter_map(|l| l.split_once("] : ").map(|(_, m)| m))
            .collect();
        format!("{} {warns:?}", message(e))
    });
}

/// `option httpslog` on a clear-text frontend: the log line's HTTPS part
/// (after the request line: the connection's error, the TLS errors,
/// resumption, SNI, version and cipher) is haproxy's; the head of the line
/// is `option httplog`'s, which tests/log_lines_haproxy.rs compares.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httpslog_fields_as_haproxy() {
    if !available() {
        return;
    }
    let cfg = format!(
        "{}frontend fe
    bind {{fe0}}
    option httpslog
    default_backend be
backend be
    server s {{srv}}
",
        support::haproxy::HTTP_LOG_GLOBAL
    );
    let pair = support::haproxy::Pair::start("pxkw-httpslog", &cfg, 1).await;
    let [h, s] = pair
        .both(0, "GET /x HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n")
        .await;
    let tail = |line: &str| {
        line.rsplit('"')
            .next()
            .unwrap_or_default()
            .trim_end()
            .to_string()
    };
    assert!(h.1.contains("\"GET /x HTTP/1.1\" "), "{}", h.1);
    assert_eq!(
        tail(&h.1),
        tail(&s.1),
        "haproxy {:?}, sluice {:?}",
        h.1,
        s.1
    );
    assert_eq!(h.0, s.0);
}

/// `force-persist` sends a cookie naming a server in maintenance there,
/// `ignore-persist` balances a request whose cookie names a server: the
/// server each request goes to and the log's cookie flags are haproxy's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_and_ignore_persist_as_haproxy() {
    if !available() {
        return;
    }
    let cfg = format!(
        "{}frontend fe
    bind {{fe0}}
    log-format \"%s %tsc\"
    default_backend be
backend be
    cookie SRV insert indirect nocache
    force-persist if {{ hdr(x-force) 1 }}
    ignore-persist if {{ path /ignore }}
    server s1 {{srv}} cookie s1
    server s2 {{srv}} cookie s2 disabled
    server s3 {{srv}} cookie s3
",
        support::haproxy::HTTP_LOG_GLOBAL
    );
    let pair = support::haproxy::Pair::start("pxkw-persist", &cfg, 1).await;
    let mut d = Differences::default();
    for (label, path, cookie, force) in [
        ("maint server, forced", "/", "s2", true),
        ("maint server", "/", "s2", false),
        ("cookie, ignored", "/ignore", "s3", false),
        ("cookie", "/", "s3", false),
    ] {
        let req = format!(
            "GET {path} HTTP/1.1\r\nhost: h\r\ncookie: SRV={cookie}\r\n{}connection: close\r\n\r\n",
            if force { "x-force: 1\r\n" } else { "" }
        );
        let [h, s] = pair.both(0, &req).await;
        d.compare(label, &h.1, &s.1);
    }
    d.assert_none();
}

/// `option http-use-proxy-header`: HAProxy 2.6 still keeps a connection
/// whose request says `Proxy-Connection: close` (its HTTP/1 layer reads
/// `Connection` only): the second of two pipelined requests is answered
/// on the same connection, by both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_use_proxy_header_as_haproxy() {
    if !available() {
        return;
    }
    let cfg = format!(
        "{}frontend fe
    bind {{fe0}}
    option http-use-proxy-header
    http-request return status 200 content-type text/plain lf-string \"%[path]\"
",
        support::haproxy::HTTP_LOG_GLOBAL
    );
    let pair = support::haproxy::Pair::start("pxkw-pxhdr", &cfg, 1).await;
    let req = "GET http://x/one HTTP/1.1\r\nhost: x\r\nproxy-connection: close\r\n\r\n\
               GET http://x/two HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    let mut got = Vec::new();
    for f in &pair.fronts {
        let bytes = support::haproxy::exchange(f[0].addr(), req.as_bytes(), false).await;
        got.push(String::from_utf8_lossy(&bytes).into_owned());
    }
    assert!(got[0].contains("/two"), "{}", got[0]);
    assert_eq!(got[0], got[1]);
}

/// A TCP server that writes `name` to each connection once it has read
/// something, then closes.
async fn naming_server(name: &'static str) -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = l.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await;
                let _ = s.write_all(name.as_bytes()).await;
            });
        }
    });
    addr
}

/// `persist rdp-cookie`: an RDP connection request whose `msts` cookie
/// encodes a server's address goes to that server, one without it is
/// balanced: which server answers each is haproxy's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persist_rdp_cookie_as_haproxy() {
    if !available() {
        return;
    }
    let (a, b) = (naming_server("A\n").await, naming_server("B\n").await);
    let msts = |s: std::net::SocketAddr| {
        let std::net::IpAddr::V4(ip) = s.ip() else {
            unreachable!("127.0.0.1")
        };
        let addr = u32::from_le_bytes(ip.octets());
        let port = u16::from_le_bytes(s.port().to_be_bytes());
        format!("{addr}.{port}.0000")
    };
    let rdp = |cookie: &str| {
        let body = format!("Cookie: msts={cookie}\r\n\x01\x00\x08\x00\x03\x00\x00\x00");
        let mut p = vec![
            0x03,
            0x00,
            0x00,
            (11 + body.len()) as u8,
            (6 + body.len()) as u8,
            0xe0,
            0,
            0,
            0,
            0,
            0,
        ];
        p.extend_from_slice(body.as_bytes());
        p
    };
    let fronts = [listens(1), listens(1)];
    let cfg = |i: usize| {
        format!(
            "defaults
    mode tcp
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {}
    tcp-request inspect-delay 5s
    tcp-request content accept if RDP_COOKIE
    default_backend be
backend be
    balance roundrobin
    persist rdp-cookie
    server a {a}
    server b {b}
",
            fronts[i][0]
        )
    };
    let hap = Haproxy::start("pxkw-rdp", &cfg(0), &[&fronts[0][0]]);
    let sl = Sluice::start(&cfg(1));
    let mut d = Differences::default();
    for (label, cookie) in [
        ("b's cookie", msts(b)),
        ("b's cookie again", msts(b)),
        ("a's cookie", msts(a)),
        ("unknown address", "16777343.1.0000".to_string()),
    ] {
        let mut seen = Vec::new();
        for f in &fronts {
            let out = support::haproxy::exchange(f[0].addr(), &rdp(&cookie), false).await;
            seen.push(String::from_utf8_lossy(&out).into_owned());
        }
        if label.starts_with("b's") {
            assert_eq!(seen[0], "B\n", "haproxy, {label}");
        }
        d.compare(label, &seen[0], &seen[1]);
    }
    d.assert_none();
    drop((hap, sl));
}

/// `option checkcache`: a response that sets a cookie and could be kept
/// by a cache is refused, with HAProxy's alert in the backend's log; the
/// others go through: which are refused, the alert, and the bytes and log
/// line of what goes through are haproxy's. Two differences, haproxy
/// 2.6.12's defects: it answers a refused response with its `200 Service
/// ready` page, where sluice sends the 502 page its status says, and logs
/// no access line for it, where sluice logs `502 PH--`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkcache_as_haproxy() {
    if !available() {
        return;
    }
    let cfg = format!(
        "{}frontend fe
    bind {{fe0}}
    log-format \"%ST %tsc %{{+Q}}r\"
    default_backend be
backend be
    option checkcache
    server s {{srv}}
",
        support::haproxy::HTTP_LOG_GLOBAL
    );
    let pair = support::haproxy::Pair::start("pxkw-checkcache", &cfg, 1).await;
    let mut d = Differences::default();
    let mut blocked = 0;
    for (label, method, status, fields) in [
        ("cookie, nothing said", "GET", 200, "set-cookie: a=1\r\n"),
        (
            "cookie, max-age",
            "GET",
            200,
            "set-cookie: a=1\r\ncache-control: max-age=60\r\n",
        ),
        (
            "cookie, expires",
            "GET",
            200,
            "set-cookie: a=1\r\nexpires: Thu, 01 Dec 2099 16:00:00 GMT\r\n",
        ),
        (
            "cookie, public",
            "GET",
            200,
            "set-cookie: a=1\r\ncache-control: public\r\n",
        ),
        (
            "cookie, private",
            "GET",
            200,
            "set-cookie: a=1\r\ncache-control: private, max-age=60\r\n",
        ),
        (
            "cookie, no-cache=set-cookie",
            "GET",
            200,
            "set-cookie: a=1\r\ncache-control: max-age=60, no-cache=\"set-cookie\"\r\n",
        ),
        (
            "cookie, pragma",
            "GET",
            200,
            "set-cookie: a=1\r\npragma: no-cache\r\ncache-control: max-age=60\r\n",
        ),
        (
            "cookie, POST",
            "POST",
            200,
            "set-cookie: a=1\r\ncache-control: max-age=60\r\n",
        ),
        (
            "cookie, POST, public",
            "POST",
            200,
            "set-cookie: a=1\r\ncache-control: public, max-age=60\r\n",
        ),
        (
            "cookie, 500",
            "GET",
            500,
            "set-cookie: a=1\r\ncache-control: max-age=60\r\n",
        ),
        ("no cookie", "GET", 200, "cache-control: max-age=60\r\n"),
    ] {
        pair.answer(
            format!("HTTP/1.1 {status} X\r\n{fields}content-length: 2\r\n\r\nok").as_bytes(),
        );
        let body = if method == "POST" {
            "content-length: 0\r\n"
        } else {
            ""
        };
        let req = format!("{method} / HTTP/1.1\r\nhost: h\r\n{body}connection: close\r\n\r\n");
        let [h, s] = pair.both(0, &req).await;
        if h.1.starts_with("Blocking cacheable cookie") {
            blocked += 1;
            d.compare(format!("{label}: alert"), &h.1, &s.1);
            // sluice's access line; haproxy logs none for it.
            let line = pair.logs[1].take(1).remove(0);
            d.compare(format!("{label}: access log"), &"502 PH-- ", &&line[..9]);
            assert!(s.0.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{}", s.0);
        } else {
            d.compare(label, &(&h.0, &h.1), &(&s.0, &s.1));
        }
    }
    // Both kinds of case are there.
    assert!(blocked > 0 && blocked < 11, "{blocked} blocked");
    d.assert_none();
}
