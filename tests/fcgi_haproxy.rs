//! FastCGI applications (`fcgi-app`, `use-fcgi-app`, `server ... proto
//! fcgi`) against the real HAProxy 2.6: the same configuration under both,
//! the same requests, and the bytes compared: the CGI parameters the
//! application receives (it echoes them), the answers the clients get,
//! the log lines, the `-c` messages; then both in front of a real php-fpm.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use support::haproxy::{self, Haproxy};
use support::syslog::Syslog;
use support::*;

/// One FastCGI record read from `s`: its type and content.
fn record(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut h = [0u8; 8];
    s.read_exact(&mut h).ok()?;
    let len = usize::from(u16::from_be_bytes([h[4], h[5]]));
    let mut body = vec![0u8; len + usize::from(h[6])];
    s.read_exact(&mut body).ok()?;
    body.truncate(len);
    Some((h[1], body))
}

fn put_record(out: &mut Vec<u8>, kind: u8, content: &[u8]) {
    for part in content
        .chunks(65_535)
        .chain(content.is_empty().then_some(&[][..]))
    {
        out.extend_from_slice(&[1, kind, 0, 1]);
        out.extend_from_slice(&(part.len() as u16).to_be_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(part);
    }
}

/// The name-value pairs of a `PARAMS` stream.
fn pairs(b: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    let len = |i: &mut usize| {
        if b[*i] >> 7 == 1 {
            let n = u32::from_be_bytes([b[*i] & 0x7f, b[*i + 1], b[*i + 2], b[*i + 3]]);
            *i += 4;
            n as usize
        } else {
            *i += 1;
            usize::from(b[*i - 1])
        }
    };
    while i < b.len() {
        let (n, v) = (len(&mut i), len(&mut i));
        let name = String::from_utf8_lossy(&b[i..i + n]).into_owned();
        let value = String::from_utf8_lossy(&b[i + n..i + n + v]).into_owned();
        out.push((name, value));
        i += n + v;
    }
    out
}

/// A FastCGI application written from the specification: it answers each
/// request with the parameters and the body it received, in the answer's
/// shape its `REQUEST_URI` asks for. Values that must differ between the
/// two proxies are replaced by `*`: `REMOTE_PORT` (each proxy's client
/// connection has its own port), `SERVER_PORT` (each proxy listens on its
/// own) and `SERVER_SOFTWARE` (the product's name and version). `/stream`
/// answers in two parts, the second once `go` says so.
struct App {
    addr: std::net::SocketAddr,
}

impl App {
    fn start(go: Option<mpsc::Receiver<()>>) -> App {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let go = std::sync::Arc::new(std::sync::Mutex::new(go));
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(s) = s else { return };
                let go = go.clone();
                std::thread::spawn(move || serve(s, &go));
            }
        });
        App { addr }
    }
}

fn serve(mut s: TcpStream, go: &std::sync::Mutex<Option<mpsc::Receiver<()>>>) {
    loop {
        let (mut params, mut stdin, mut flags) = (Vec::new(), Vec::new(), 0);
        loop {
            let Some((kind, content)) = record(&mut s) else {
                return;
            };
            match kind {
                1 => flags = content[2],
                4 => params.extend_from_slice(&content),
                5 if content.is_empty() => break,
                5 => stdin.extend_from_slice(&content),
                _ => {}
            }
        }
        let params = pairs(&params);
        let mut body = format!("flags={flags}\n");
        for (n, v) in &params {
            let v = match n.as_str() {
                "REMOTE_PORT" | "SERVER_PORT" | "SERVER_SOFTWARE" => "*",
                _ => v,
            };
            body.push_str(&format!("{n}={v}\n"));
        }
        body.push_str(&format!("stdin={}\n", String::from_utf8_lossy(&stdin)));
        let uri = params
            .iter()
            .find(|(n, _)| n == "REQUEST_URI")
            .map_or("", |(_, v)| v.as_str());
        let head: &[u8] = if uri.starts_with("/nostatus") {
            b"Content-Type: text/plain\r\n\r\n"
        } else if uri.starts_with("/loc") {
            b"Location: /elsewhere\r\n\r\n"
        } else if uri.starts_with("/s404") {
            b"Status: 404\r\nContent-Type: text/plain\r\n\r\n"
        } else if uri.starts_with("/lf") {
            b"Status: 200 OK\nContent-Type: a/b\nX-Lf: 1\n\n"
        } else if uri.starts_with("/cl") {
            b"Status: 200 OK\r\nContent-Length: 3\r\n\r\n"
        } else {
            b"Status: 201 Made\r\nContent-Type: text/plain\r\nX-App: 1\r\n\r\n"
        };
        let body = if uri.starts_with("/cl") {
            b"abc".to_vec()
        } else {
            body.into_bytes()
        };
        let mut out = Vec::new();
        put_record(&mut out, 6, &[head, &body[..]].concat());
        if uri.starts_with("/stream") {
            // The head and a first part, then the rest once the client saw
            // the head: the answer's length is not known when it goes out.
            s.write_all(&out).ok();
            if let Some(rx) = go.lock().expect("lock").as_ref() {
                rx.recv_timeout(Duration::from_secs(10)).ok();
            }
            out.clear();
            put_record(&mut out, 6, b"second part\n");
        }
        put_record(&mut out, 6, b"");
        out.extend_from_slice(&[1, 3, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        // The whole answer in one write: a proxy reads its end with its
        // head, and gives its length (both do).
        if s.write_all(&out).is_err() {
            return;
        }
        if flags & 1 == 0 {
            return;
        }
    }
}

/// An answer with its `date` value masked (the proxies answer at
/// different instants).
fn masked(answer: &[u8]) -> String {
    let text = String::from_utf8_lossy(answer);
    text.lines()
        .map(|l| {
            if l.to_ascii_lowercase().starts_with("date: ") {
                "date: <date>"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An answer with its head's fields in name order.
fn fields_sorted(answer: &str) -> String {
    let (head, body) = answer.split_once("\n\n").unwrap_or((answer, ""));
    let mut lines: Vec<&str> = head.lines().collect();
    lines[1..].sort_unstable();
    format!("{}\n\n{body}", lines.join("\n"))
}

const CFG: &str = "global
    log {log} local0
defaults
    mode http
    log global
    log-format \"%HM %HU %ST %tsc %U %b/%s\"
    timeout http-request 1s
    timeout client 5s
    timeout server 5s
    timeout connect 5s
frontend f
    bind {front}
    default_backend php
backend php
    use-fcgi-app app
    server s {app} proto fcgi
fcgi-app app
    docroot /var/www/site
    index index.php
    path-info ^(/.+\\.php)(/.*)?$
    acl from_test req.hdr(x-test) -m found
    set-param REDIRECT_STATUS 200
    set-param X_TEST %[req.hdr(x-test)] if from_test
    set-param X_EMPTY %[req.hdr(x-none)]
    pass-header Authorization if { req.hdr(x-pass) yes }
";

/// The requests both proxies get, each on a connection of its own.
const REQUESTS: &[&str] = &[
    "GET /a/b.php/x/y?q=1&r HTTP/1.1\r\nhost: example.com\r\nuser-agent: t\r\ncookie: c=1\r\ncookie: d=2\r\nconnection: close\r\n\r\n",
    "GET /dir/ HTTP/1.1\r\nhost: example.com\r\nx-test: yes\r\nconnection: close\r\n\r\n",
    "GET /a%20b/c.php/p%2Fq?x HTTP/1.1\r\nhost: example.com\r\nconnection: close\r\n\r\n",
    "GET /x? HTTP/1.1\r\nhost: example.com:8080\r\nconnection: keep-alive, x-drop\r\nx-drop: 1\r\nte: trailers\r\nupgrade: foo\r\nkeep-alive: 5\r\nweird_name: 3\r\nx-multi: 1\r\nx-multi: 2\r\nconnection: close\r\n\r\n",
    "GET /auth HTTP/1.1\r\nhost: example.com\r\nauthorization: Basic eA==\r\nproxy-authorization: p\r\nconnection: close\r\n\r\n",
    "GET /auth HTTP/1.1\r\nhost: example.com\r\nauthorization: Basic eA==\r\nx-pass: yes\r\nconnection: close\r\n\r\n",
    "POST /form.php HTTP/1.1\r\nhost: example.com\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: 11\r\nconnection: close\r\n\r\nhello=world",
    "POST /chunked.php HTTP/1.1\r\nhost: example.com\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
    "OPTIONS /q.php HTTP/1.0\r\n\r\n",
    "GET /nostatus HTTP/1.1\r\nhost: example.com\r\nconnection: close\r\n\r\n",
    "GET /loc HTTP/1.1\r\nhost: example.com\r\nconnection: close\r\n\r\n",
    "GET /s404 HTTP/1.1\r\nhost: example.com\r\nconnection: close\r\n\r\n",
    "GET /lf HTTP/1.1\r\nhost: example.com\r\nconnection: close\r\n\r\n",
    "GET /cl HTTP/1.1\r\nhost: example.com\r\nconnection: close\r\n\r\n",
    // A chunked body not all there: FastCGI needs the length first.
    "POST /big HTTP/1.1\r\nhost: example.com\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameters_answers_and_logs_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let app = App::start(None);
    let mut seen: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let front = Listen::new();
        let log = Syslog::new();
        let cfg = CFG
            .replace("{log}", &log.addr())
            .replace("{front}", &front.to_string())
            .replace("{app}", &app.addr.to_string());
        let _h = (tool == "haproxy").then(|| Haproxy::start("fcgi", &cfg, &[&front]));
        let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
        let mut answers = Vec::new();
        for req in REQUESTS {
            let got = haproxy::exchange(front.addr(), req.as_bytes(), false).await;
            answers.push(masked(&got));
        }
        // Both log a line for the connection that told them ready, too;
        // the lines are compared as a set (UDP keeps no order).
        let mut lines: Vec<String> = log
            .take(REQUESTS.len() + 1)
            .into_iter()
            .map(|l| {
                l.split_once("]: ")
                    .map_or(l.clone(), |(_, m)| m.to_string())
            })
            .collect();
        lines.sort();
        seen.push((answers, lines));
    }
    let mut differ = haproxy::Differences::default();
    for (i, req) in REQUESTS.iter().enumerate() {
        let line = req.lines().next().unwrap_or_default();
        differ.compare(line, &seen[0].0[i], &seen[1].0[i]);
    }
    differ.compare("log lines", &seen[0].1, &seen[1].1);
    // Not vacuous: the application saw the parameters HAProxy makes.
    let first = &seen[0].0[0];
    for want in [
        "SCRIPT_NAME=/a/b.php",
        "PATH_INFO=/x/y",
        "PATH_TRANSLATED=/var/www/site/x/y",
        "HTTP_COOKIE=d=2",
        "REDIRECT_STATUS=200",
    ] {
        assert!(first.contains(want), "{want} in {first}");
    }
    assert!(seen[0].0[1].contains("X_TEST=yes"), "{}", seen[0].0[1]);
    assert!(
        seen[0].0[5].contains("HTTP_AUTHORIZATION=Basic eA=="),
        "{}",
        seen[0].0[5]
    );
    differ.assert_none();
}

/// An answer whose end is not there when its head is goes out chunked,
/// its head first, from both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_streams_before_its_end() {
    if !haproxy::available() {
        return;
    }
    let mut got = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let (tx, rx) = mpsc::channel();
        let app = App::start(Some(rx));
        let front = Listen::new();
        let log = Syslog::new();
        let cfg = CFG
            .replace("{log}", &log.addr())
            .replace("{front}", &front.to_string())
            .replace("{app}", &app.addr.to_string());
        let _h = (tool == "haproxy").then(|| Haproxy::start("fcgi-stream", &cfg, &[&front]));
        let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
        let mut c = tokio::net::TcpStream::connect(front.addr())
            .await
            .expect("connect");
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        c.write_all(b"GET /stream HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n")
            .await
            .expect("send");
        let mut answer = Vec::new();
        let mut buf = [0u8; 4096];
        // The head (and the first part) before the application ends.
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = within(Duration::from_secs(10), "the head", c.read(&mut buf)).await;
            let n = n.expect("read");
            assert!(n > 0, "closed before the head: {answer:?}");
            answer.extend_from_slice(&buf[..n]);
        }
        tx.send(()).expect("go");
        within(
            Duration::from_secs(10),
            "the end",
            c.read_to_end(&mut answer),
        )
        .await
        .expect("read");
        got.push(masked(&answer));
    }
    assert!(got[0].contains("transfer-encoding: chunked"), "{}", got[0]);
    assert!(got[0].contains("second part"), "{}", got[0]);
    // The same fields and body; haproxy writes `connection: close` before
    // `transfer-encoding`, sluice after (field order carries no meaning).
    assert_eq!(fields_sorted(&got[0]), fields_sorted(&got[1]));
}

/// The `-c` messages of misused FastCGI keywords are haproxy's.
#[test]
fn misuses_are_refused_as_haproxy_refuses_them() {
    if !haproxy::available() {
        return;
    }
    const HEAD: &str =
        "defaults\n  mode http\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\n";
    let cases = [
        (
            "unknown app",
            "backend b\n  use-fcgi-app nope\n  server s 127.0.0.1:9 proto fcgi\n",
        ),
        ("no app", "backend b\n  server s 127.0.0.1:9 proto fcgi\n"),
        (
            "no fcgi server",
            "fcgi-app a\n  docroot /x\nbackend b\n  use-fcgi-app a\n  server s 127.0.0.1:9\n",
        ),
        (
            "tcp mode",
            "fcgi-app a\n  docroot /x\nbackend b\n  mode tcp\n  use-fcgi-app a\n  server s 127.0.0.1:9 proto fcgi\n",
        ),
        (
            "no docroot",
            "fcgi-app a\n  index i.php\nbackend b\n  use-fcgi-app a\n  server s 127.0.0.1:9 proto fcgi\n",
        ),
        ("bad regex", "fcgi-app a\n  docroot /x\n  path-info ^(\n"),
        ("unknown keyword", "fcgi-app a\n  docroot /x\n  bogus 1\n"),
        ("index alone", "fcgi-app a\n  docroot /x\n  index\n"),
        (
            "set-param alone",
            "fcgi-app a\n  docroot /x\n  set-param A\n",
        ),
        (
            "pass-header alone",
            "fcgi-app a\n  docroot /x\n  pass-header\n",
        ),
        (
            "unknown option",
            "fcgi-app a\n  docroot /x\n  option nope\n",
        ),
        (
            "bad max-reqs",
            "fcgi-app a\n  docroot /x\n  option max-reqs 0\n",
        ),
        (
            "unknown acl",
            "fcgi-app a\n  docroot /x\n  pass-header X if nope\n",
        ),
        ("no name", "fcgi-app\n"),
        (
            "twice",
            "fcgi-app a\n  docroot /x\nfcgi-app a\n  docroot /y\n",
        ),
        (
            "in a frontend",
            "fcgi-app a\n  docroot /x\nfrontend f\n  bind 127.0.0.1:8\n  use-fcgi-app a\n",
        ),
    ];
    haproxy::assert_check_agrees(
        "fcgi-check",
        cases
            .iter()
            .map(|(l, c)| (l.to_string(), format!("{HEAD}{c}"))),
        haproxy::config_messages,
    );
}

/// Both in front of a real php-fpm: the same answers to a script that
/// prints what PHP made of the request (its server variables, body, form
/// and cookies). Skipped when php-fpm is not installed, except under CI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn php_fpm_answers_the_same_behind_both() {
    if !haproxy::available() {
        return;
    }
    let Some(fpm) = PhpFpm::start() else { return };
    let mut seen = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let front = Listen::new();
        let cfg = format!(
            "defaults
    mode http
    timeout client 5s
    timeout server 5s
    timeout connect 5s
frontend f
    bind {front}
    default_backend php
backend php
    use-fcgi-app php
    server fpm {sock} proto fcgi
fcgi-app php
    docroot {root}
    index index.php
    path-info ^(/.+\\.php)(/.*)?$
",
            sock = fpm.socket.display(),
            root = fpm.root.display()
        );
        let _h = (tool == "haproxy").then(|| Haproxy::start("fcgi-php", &cfg, &[&front]));
        let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
        let mut answers = Vec::new();
        for req in [
            "GET /index.php/x/y?q=1&code=404 HTTP/1.1\r\nhost: h\r\ncookie: c=1; d=2\r\nconnection: close\r\n\r\n",
            "GET / HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
            "POST /index.php?form HTTP/1.1\r\nhost: h\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: 7\r\nconnection: close\r\n\r\na=1&b=2",
            "POST /index.php HTTP/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n3\r\nx=1\r\n0\r\n\r\n",
        ] {
            let got = haproxy::exchange(front.addr(), req.as_bytes(), false).await;
            answers.push(masked(&got));
        }
        seen.push(answers);
    }
    assert!(seen[0][0].contains("HTTP/1.1 404"), "{}", seen[0][0]);
    assert!(seen[0][0].contains("pathinfo=/x/y"), "{}", seen[0][0]);
    assert!(
        seen[0][2].contains("post={\"a\":\"1\",\"b\":\"2\"}"),
        "{}",
        seen[0][2]
    );
    let mut differ = haproxy::Differences::default();
    for (i, (h, s)) in seen[0].iter().zip(&seen[1]).enumerate() {
        differ.compare(format!("request {i}"), h, s);
    }
    differ.assert_none();
}

/// A php-fpm master and its workers on a port of their own, killed when
/// dropped.
struct PhpFpm {
    child: std::process::Child,
    socket: std::path::PathBuf,
    root: std::path::PathBuf,
    _dir: TempDir,
}

/// Debian's php-fpm, whichever PHP version it is (`php-fpm8.2`...).
fn php_fpm() -> Option<std::path::PathBuf> {
    std::fs::read_dir("/usr/sbin")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("php-fpm"))
        })
}

const SCRIPT: &str = r#"<?php
header("X-Script: " . $_SERVER['SCRIPT_NAME']);
if (isset($_GET['code'])) { http_response_code((int)$_GET['code']); }
echo "method=" . $_SERVER['REQUEST_METHOD'] . "\n";
echo "uri=" . $_SERVER['REQUEST_URI'] . "\n";
echo "pathinfo=" . ($_SERVER['PATH_INFO'] ?? '') . "\n";
echo "body=" . file_get_contents('php://input') . "\n";
echo "post=" . json_encode($_POST) . "\n";
echo "cookie=" . json_encode($_COOKIE) . "\n";
"#;

impl PhpFpm {
    fn start() -> Option<PhpFpm> {
        let Some(binary) = php_fpm() else {
            assert!(std::env::var_os("CI").is_none(), "php-fpm is needed on CI");
            eprintln!("skipped: php-fpm is not installed");
            return None;
        };
        let dir = TempDir::new("php-fpm");
        let root = dir.path().join("www");
        std::fs::create_dir_all(&root).expect("docroot");
        std::fs::write(root.join("index.php"), SCRIPT).expect("script");
        // A UNIX socket in the test's directory: no port to pick. Enough
        // workers for every connection either proxy keeps idle: a worker
        // serves one connection at a time, and HAProxy opens a new one
        // for each client connection's first request (`http-reuse safe`).
        let socket = dir.path().join("fpm.sock");
        let conf = dir.write(
            "fpm.conf",
            &format!(
                "[global]\nerror_log = {log}\ndaemonize = no\n[www]\nlisten = {sock}\npm = static\npm.max_children = 12\n",
                log = dir.path().join("fpm.log").display(),
                sock = socket.display()
            ),
        );
        let mut cmd = std::process::Command::new(binary);
        cmd.arg("-F").arg("-n").arg("-y").arg(&conf);
        // php-fpm refuses to run as root unless told it may.
        if std::process::Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
        {
            cmd.arg("-R");
        }
        let child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn php-fpm");
        // Ready once it accepts.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "php-fpm did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(PhpFpm {
            child,
            socket,
            root,
            _dir: dir,
        })
    }
}

impl Drop for PhpFpm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
