//! Variables against the real HAProxy 2.6: the same configuration runs
//! under haproxy and sluice, the same requests go to each over one
//! keep-alive connection, and the answers' bytes must be equal (the local
//! answers whole; for proxied ones the status and the header the response
//! rules build, the server's own head being sluice's test server's).
//!
//! What is shown: each scope's lifetime (`sess` across the requests of a
//! connection, `txn` for one request and its response, `req` and `res`
//! for their half only, `proc` for the process, set by `global`), types
//! kept as set, the `set-var` conditions of 2.6, the converters
//! (`set-var`, `unset-var`, arithmetic on a variable), `tune.vars.*`
//! limits, and HAProxy's messages for bad names.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;
use support::cli_blocking as cli;

use support::haproxy::{self, Haproxy};
use support::*;

/// The body of the local answer: every variable the rules set.
const SHOW: &str = "g=%[var(proc.g)] f=%[var(proc.f)] cnt=%[var(sess.cnt)] last=%[var(sess.last)] \
t=%[var(txn.t)] r=%[var(req.r)] res=%[var(res.s)] ip=%[var(txn.ip),ipmask(8)] \
s=%[var(txn.s)] e=%[var(txn.e)] n=%[var(txn.n)] m=%[var(txn.m)] fmt=%[var(txn.fmt)] \
a=%[var(txn.a)] u=%[var(txn.u)] c=%[var(txn.c)] c2=%[var(txn.c2)] d=%[var(txn.nope,dflt)] \
ih=%[var(txn.i),hex] sh=%[var(txn.si),hex] b=%[var(txn.b),hex] set=%[var(txn.x1)] \
ne=%[var(txn.x2)] ie=%[var(txn.x3)] ex=%[var(txn.x4)]\\n";

fn config(bind: &str, server: &str) -> String {
    format!(
        "global
    set-var proc.g int(42)
    set-var-fmt proc.f \"hello %[int(3)]\"
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
    http-request set-var(sess.cnt) var(sess.cnt,0),add(1)
    http-request set-var(txn.t) int(5) if {{ path /t }}
    http-request set-var(req.r) str(rr)
    http-request set-var(txn.ip) src
    http-request set-var(txn.s,ifnotexists) str(first)
    http-request set-var(txn.s,ifnotexists) str(second)
    http-request set-var(txn.e) str()
    http-request set-var(txn.e,ifnotempty) str(ne)
    http-request set-var(txn.n) int(10)
    http-request set-var(txn.n,ifgt) int(3)
    http-request set-var(txn.m) int(10)
    http-request set-var(txn.m,iflt) int(3)
    http-request set-var-fmt(txn.fmt) \"a-%[var(txn.n)]-b\"
    http-request set-var(txn.a) int(7),add(txn.n),mul(txn.m),sub(txn.nope)
    http-request set-var(txn.a) int(7),add(txn.n),mul(txn.m) if {{ path /t }}
    http-request set-var(txn.u) str(x)
    http-request unset-var(txn.u)
    http-request set-var(txn.c) str(conv),set-var(txn.c2),upper
    http-request set-var(txn.i) int(65)
    http-request set-var(txn.si) str(65)
    http-request set-var(txn.b) bool(1)
    http-request set-var(txn.x1,ifset) str(a)
    http-request set-var(txn.x2,ifnotset) str(b)
    http-request set-var(txn.x3,ifempty) int(1)
    http-request set-var(txn.x4,ifexists) str(c)
    http-request set-var(txn.x4) str(d),set-var(txn.x4,ifexists),unset-var(txn.x4)
    http-request return status 200 content-type text/plain lf-string \"{SHOW}\" if {{ path /local }}
    http-request set-var(sess.last) path
    default_backend be
backend be
    http-response set-var(res.s) str(rs)
    http-response set-var(req.r2) str(no)
    http-response set-header x-vars \"cnt=%[var(sess.cnt)] t=%[var(txn.t)] r=%[var(req.r)] s=%[var(res.s)] r2=%[var(req.r2)] c=%[var(txn.c2)]\"
    server s1 {server}
"
    )
}

async fn run(addr: std::net::SocketAddr) -> Vec<String> {
    let mut conn = HttpConn::connect(addr).await;
    let mut out = Vec::new();
    for path in ["/local", "/t", "/local", "/x", "/local"] {
        if path == "/x" {
            // An idle pause, longer than sluice's in-task wait before it
            // parks a keep-alive connection: the session's variables must
            // outlive it. (The pause is what is tested, not a way to wait
            // for something.)
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        let r = conn.get(path).await;
        if path == "/local" {
            out.push(format!("{} {}", r.status, r.text()));
        } else {
            out.push(format!("{} {:?}", r.status, r.header("x-vars")));
        }
    }
    // A new connection: a new session, the process's variables stay.
    let mut conn = HttpConn::connect(addr).await;
    let r = conn.get("/local").await;
    out.push(format!("{} {}", r.status, r.text()));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_types_and_conditions_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let server = Backend::start("vars").await;
    let fronts = listens(2);
    let _hap = Haproxy::start(
        "vars-hap",
        &config(&fronts[0].to_string(), &server.hostport()),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&config(&fronts[1].to_string(), &server.hostport()));
    let h = run(fronts[0].addr()).await;
    let s = run(fronts[1].addr()).await;
    assert!(h[0].contains("g=42 f=hello 3 cnt=1"), "{h:?}");
    assert_eq!(s, h, "sluice's answers, then haproxy's");
}

/// `tune.vars.*-max-size`: a variable costs 80 bytes (HAProxy's `struct
/// var`) plus its text; a set beyond a limit silently fails.
fn limits_config(bind: &str) -> String {
    format!(
        "global
    tune.vars.txn-max-size 200
    tune.vars.sess-max-size 300
    tune.vars.reqres-max-size 90
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
    http-request set-var(txn.a) str(0123456789)
    http-request set-var(txn.b) int(1)
    http-request set-var(txn.c) int(2)
    http-request set-var(req.r) str(0123456789)
    http-request set-var(req.q) str(x)
    http-request set-var(sess.s) str(abcdefghij)
    http-request set-var(txn.d) str(0123456789012345678901234567890123456789)
    http-request return status 200 content-type text/plain lf-string \"a=%[var(txn.a)] b=%[var(txn.b)] c=%[var(txn.c)] r=%[var(req.r)] q=%[var(req.q)] s=%[var(sess.s)] d=%[var(txn.d)]\\n\"
"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let fronts = listens(2);
    let _hap = Haproxy::start(
        "vars-lim",
        &limits_config(&fronts[0].to_string()),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&limits_config(&fronts[1].to_string()));
    let mut all = Vec::new();
    for f in &fronts {
        let mut conn = HttpConn::connect(f.addr()).await;
        let mut got = Vec::new();
        for _ in 0..2 {
            got.push(conn.get("/").await.text());
        }
        all.push(got);
    }
    assert_eq!(all[1], all[0], "sluice's answers, then haproxy's");
}

/// Bad variable names and conditions: both refuse them with the same
/// message.
const FAULTY: &[&str] = &[
    "http-request set-var(foo.x) int(1)",
    "http-request set-var(txn.a-b) int(1)",
    "http-request set-var(txn.x,ifbad) int(1)",
    "http-request unset-var(txn.x,ifset)",
    "http-request set-var(txn.x)",
    "http-request set-var txn.x",
    "http-request set-var(txn.x int(1)",
    "http-request set-var(txn.x) nope",
    "http-request set-var() int(1)",
    "http-request return content-type text/plain lf-string %[var(foo.x)]",
    "http-request return content-type text/plain lf-string %[var()]",
    "http-request return content-type text/plain lf-string %[int(1),add(txn.a-b)]",
    "http-request return content-type text/plain lf-string %[int(1),set-var(foo.x)]",
    "http-request return content-type text/plain lf-string %[int(1),set-var(txn.x,ifbad)]",
    "http-request return content-type text/plain lf-string %[int(1),unset-var(txn.x,ifset)]",
    "acl a var(txn.x) foo",
];

const GLOBAL_FAULTY: &[&str] = &[
    "tune.vars.txn-max-size abc",
    "tune.vars.txn-max-size 10k",
    "set-var txn.x int(1)",
    "set-var proc.x",
    "set-var-fmt proc.x",
    "set-var proc.x nope",
    "set-var proc.a-b int(1)",
];

#[test]
fn bad_names_get_haproxys_messages() {
    if !haproxy::available() {
        return;
    }
    let lines = FAULTY
        .iter()
        .map(|l| ("", *l))
        .chain(GLOBAL_FAULTY.iter().map(|l| (*l, "")));
    let cases = lines.map(|(global, line)| {
        let cfg = format!(
            "global\n    {global}\ndefaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\nfrontend fe\n    bind 127.0.0.1:1\n    {line}\n"
        );
        (format!("{global}{line}"), cfg)
    });
    haproxy::assert_check_agrees("vars-check", cases, haproxy::first_alert);
}

/// `get var` / `set var` on the CLI: the same command lines, each on its
/// own connection, get the same bytes.
const CLI_LINES: &[&str] = &[
    "get var proc.g",
    "get var proc.f",
    "get var txn.g",
    "get var proc.zz",
    "get var",
    "get var proc.a-b",
    "set var proc.g int(5)",
    "experimental-mode",
    "experimental-mode on; experimental-mode",
    "experimental-mode on; set var proc.g int(5); get var proc.g",
    "experimental-mode on; set var proc.h str(abc); get var proc.h",
    "experimental-mode on; set var txn.h str(abc)",
    "experimental-mode on; set var proc.h fmt %[int(2)]x; get var proc.h",
    "experimental-mode on; set var proc.i expr int(2); get var proc.i",
    "experimental-mode on; set var proc.j bad int(2)",
    "experimental-mode on; set var",
    "experimental-mode on; set var proc.k",
    "experimental-mode on; set var proc.k nope(1)",
    "experimental-mode on; set var proc.ipv ipv4(1.2.3.4); get var proc.ipv",
    "experimental-mode on; set var proc.b bool(1); get var proc.b",
    "experimental-mode on; set var proc.bin bin(41ff42); get var proc.bin",
    "experimental-mode on; set var proc.m meth(GET); get var proc.m",
    r"experimental-mode on; set var proc.sp str(a\ b); get var proc.sp",
    "experimental-mode on; set var foo.x int(1)",
    "experimental-mode on; set var proc.a-b int(1)",
    "experimental-mode off; set var proc.g int(1)",
    "operator; experimental-mode on",
    "user; get var proc.g",
    "operator; get var proc.g",
];

fn cli_config(bind: &str, sock: &std::path::Path) -> String {
    format!(
        "global
    stats socket {} level admin
    set-var proc.g int(42)
    set-var-fmt proc.f \"hello %[int(3)]\"
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
    http-request return status 200 content-type text/plain lf-string \"g=%[var(proc.g)] h=%[var(proc.h)]\"
",
        sock.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_replies_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("vars-cli");
    let (hsock, ssock) = (dir.join("h.sock"), dir.join("s.sock"));
    let fronts = listens(2);
    let _hap = Haproxy::start(
        "vars-cli",
        &cli_config(&fronts[0].to_string(), &hsock),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&cli_config(&fronts[1].to_string(), &ssock));
    let mut differ = Vec::new();
    for line in CLI_LINES {
        let (h, s) = (cli(&hsock, line), cli(&ssock, line));
        if h != s {
            differ.push(format!("{line}:\n  haproxy {h:?}\n  sluice  {s:?}"));
        }
    }
    // What the CLI set is what the rules read.
    for f in &fronts {
        let r = request(f.addr(), "GET", "/", b"").await;
        differ.extend((r.text() != "g=5 h=2x").then(|| format!("{} {:?}", f, r.text())));
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// `tcp-request connection|content set-var`: in `mode tcp`, the rules run
/// before the connection is relayed; what they store in `proc` is read on
/// the CLI, and the `sess`/`txn` values they compute from feed it.
fn tcp_config(bind: &str, server: &str, sock: &std::path::Path) -> String {
    format!(
        "global
    stats socket {} level admin
defaults
    mode tcp
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
    tcp-request connection set-var(proc.conn) int(1)
    tcp-request content set-var(sess.n) int(40)
    tcp-request content set-var(txn.m) var(sess.n),add(2)
    tcp-request content set-var(proc.answer) var(txn.m)
    tcp-request content set-var-fmt(proc.who) \"from %[src]\"
    tcp-request content set-var(proc.count) var(proc.count,0),add(1)
    tcp-request content unset-var(proc.gone)
    default_backend be
backend be
    server s1 {server}
",
        sock.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_rules_set_variables_as_haproxy() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if !haproxy::available() {
        return;
    }
    let server = Backend::start("vars-tcp").await;
    let dir = TempDir::new("vars-tcp");
    let (hsock, ssock) = (dir.join("h.sock"), dir.join("s.sock"));
    let fronts = listens(2);
    let _hap = Haproxy::start(
        "vars-tcp",
        &tcp_config(&fronts[0].to_string(), &server.hostport(), &hsock),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&tcp_config(
        &fronts[1].to_string(),
        &server.hostport(),
        &ssock,
    ));
    let mut got = Vec::new();
    for (f, sock) in [(&fronts[0], &hsock), (&fronts[1], &ssock)] {
        for _ in 0..2 {
            // A whole exchange through the relay: the rules ran.
            let mut c = tokio::net::TcpStream::connect(f.addr())
                .await
                .expect("connect");
            c.write_all(b"GET / HTTP/1.0\r\n\r\n").await.expect("send");
            let mut out = Vec::new();
            c.read_to_end(&mut out).await.expect("answer");
            assert!(out.starts_with(b"HTTP/1."), "{out:?}");
        }
        got.push(
            [
                "proc.conn",
                "proc.answer",
                "proc.who",
                "proc.count",
                "proc.gone",
            ]
            .map(|v| cli(sock, &format!("get var {v}")))
            .join(""),
        );
    }
    assert_eq!(got[1], got[0], "sluice's variables, then haproxy's");
}

/// `var()` in ACLs: conditions read the request's variables.
fn acl_config(bind: &str) -> String {
    format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
    http-request set-var(txn.p) path
    http-request set-var(sess.seen) int(1) if {{ path /mark }}
    acl is_a var(txn.p) -m str /a
    acl pre_b var(txn.p) -m beg /b
    acl seen var(sess.seen) -m str 1
    http-request return status 200 content-type text/plain string a if is_a
    http-request return status 201 content-type text/plain string b if pre_b
    http-request return status 202 content-type text/plain string seen if seen
    http-request return status 203 content-type text/plain string other
"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acls_read_variables_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let fronts = listens(2);
    let _hap = Haproxy::start(
        "vars-acl",
        &acl_config(&fronts[0].to_string()),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&acl_config(&fronts[1].to_string()));
    let mut got = Vec::new();
    for f in &fronts {
        let mut conn = HttpConn::connect(f.addr()).await;
        let mut out = Vec::new();
        for p in ["/a", "/bc", "/x", "/mark", "/x", "/a"] {
            let r = conn.get(p).await;
            out.push(format!("{p} {} {}", r.status, r.text()));
        }
        got.push(out);
    }
    assert_eq!(got[1], got[0], "sluice's answers, then haproxy's");
}

/// A log line sees the request's variables at its end, as HAProxy's does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_lines_see_variables_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let cfg = |bind: &str, log: &str| {
        format!(
            "global
    log {log} format raw local0 info
    set-var proc.g str(pg)
defaults
    mode http
    log global
    # The readiness probe's empty connection is not logged.
    option dontlognull
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
    log-format \"t=%[var(txn.t)] r=%[var(req.r)] s=%[var(sess.n)] g=%[var(proc.g)]\"
    http-request set-var(txn.t) path
    http-request set-var(req.r) str(rr)
    http-request set-var(sess.n) var(sess.n,0),add(1)
    http-request return status 200
"
        )
    };
    let fronts = listens(2);
    let (hlog, slog) = (
        support::syslog::Syslog::new(),
        support::syslog::Syslog::new(),
    );
    let _hap = Haproxy::start(
        "vars-log",
        &cfg(&fronts[0].to_string(), &hlog.addr()),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&cfg(&fronts[1].to_string(), &slog.addr()));
    let mut lines = Vec::new();
    for (front, log) in [(&fronts[0], &hlog), (&fronts[1], &slog)] {
        let mut conn = HttpConn::connect(front.addr()).await;
        for p in ["/a", "/b"] {
            assert_eq!(conn.get(p).await.status, 200);
        }
        lines.push(log.take(2));
    }
    assert_eq!(lines[1], lines[0], "sluice's lines, then haproxy's");
}

/// Over HTTP/2 the connection is the session: its streams share the
/// `sess` variables, as in HAProxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_streams_share_the_session_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let cfg = |bind: &str| {
        format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind} proto h2
    http-request set-var(sess.cnt) var(sess.cnt,0),add(1)
    http-request set-var(txn.t) path
    http-request return status 200 content-type text/plain lf-string \"cnt=%[var(sess.cnt)] t=%[var(txn.t)]\"
"
        )
    };
    let fronts = listens(2);
    let _hap = Haproxy::start("vars-h2", &cfg(&fronts[0].to_string()), &[&fronts[0]]);
    let _sl = Sluice::start(&cfg(&fronts[1].to_string()));
    let mut got = Vec::new();
    for f in &fronts {
        let tcp = tokio::net::TcpStream::connect(f.addr())
            .await
            .expect("connect");
        let (mut send, conn) = h2::client::handshake(tcp).await.expect("h2 handshake");
        tokio::spawn(conn);
        let mut out = Vec::new();
        for p in ["/a", "/b", "/c"] {
            let req = http::Request::get(format!("http://x{p}"))
                .body(())
                .expect("request");
            let (resp, _) = send.send_request(req, true).expect("send");
            let resp = resp.await.expect("response");
            let mut body = resp.into_body();
            let mut text = Vec::new();
            while let Some(chunk) = body.data().await {
                text.extend_from_slice(&chunk.expect("body"));
            }
            out.push(String::from_utf8_lossy(&text).into_owned());
        }
        got.push(out);
    }
    assert_eq!(got[0][2], "cnt=3 t=/c", "{got:?}");
    assert_eq!(got[1], got[0], "sluice's answers, then haproxy's");
}
