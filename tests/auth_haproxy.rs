//! Userlists and `http-request auth` against the real HAProxy 2.6: the
//! same configuration runs under haproxy and sluice and the same requests
//! (no credentials, wrong ones, right ones for a clear password and for
//! each crypt(3) hash kind) must get the same bytes; faulty userlists get
//! the same messages.
//!
//! A user without a password is left out: haproxy 2.6.12 stops answering
//! when one tries to log in (sluice refuses it with a 401).
//!
//! The hashes were made with `openssl passwd -6|-5|-1 -salt <salt> <pw>`.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use base64::Engine as _;
use support::haproxy::{self, Haproxy};
use support::*;

const P6: &str = "$6$s6salt$NuqITSy5TTQFV7D2CyhiwhK8IROephgwLoDquBjd6G1qzE/oqBLHNZ2cR2plp47vXhbiEeg7Hzqr62vFH1Yzg.";
const P5: &str = "$5$s5salt$bUZvU6/qZkCvYOXUAeJm36UFls6vqFh000Tucoyk/W0";
const P1: &str = "$1$s1salt$w/YkB4F4Ur8/xZ3X11EhA.";

fn config(bind: &str) -> String {
    format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
userlist L
    group admins
    group devs users bob,carol
    user alice insecure-password secret groups admins
    user bob password {P6}
    user carol password {P5} groups admins
    user dave password {P1} groups devs
frontend fe
    bind {bind}
    acl ok http_auth(L)
    acl adm http_auth_group(L) admins
    acl dev http_auth_group(L) devs
    http-request auth realm \"My Realm\" if {{ path /r }} !ok
    http-request auth if !ok
    http-request return status 200 content-type text/plain lf-string \"admin %[http_auth_group(L)] %[http_auth(L)]\" if adm
    http-request return status 200 content-type text/plain lf-string \"dev %[http_auth_group(L)]\" if dev
    http-request return status 200 content-type text/plain string \"other\"
"
    )
}

fn basic(user: &str, pass: &str) -> String {
    format!(
        "authorization: Basic {}\r\n",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
    )
}

/// Each request on its own connection: the status line, the headers and
/// the body as received.
async fn answers(addr: std::net::SocketAddr) -> Vec<String> {
    let cases = [
        ("/", String::new()),
        ("/r", String::new()),
        ("/", basic("alice", "secret")),
        ("/", basic("alice", "wrong")),
        ("/", basic("bob", "p6")),
        ("/", basic("bob", "p5")),
        ("/", basic("carol", "p5")),
        ("/", basic("dave", "p1")),
        ("/r", basic("dave", "p2")),
        ("/", basic("nobody", "x")),
        ("/", "authorization: Bearer abc\r\n".to_string()),
    ];
    let mut out = Vec::new();
    for (path, auth) in cases {
        let mut conn = HttpConn::connect(addr).await;
        let req = format!("GET {path} HTTP/1.1\r\nhost: x\r\n{auth}\r\n");
        let r = conn.raw(req.as_bytes(), false).await.expect("answer");
        out.push(format!("{path} {auth}=> {}{}", r.head, r.text()));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_answers_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let fronts = listens(2);
    let _hap = Haproxy::start("auth-hap", &config(&fronts[0].to_string()), &[&fronts[0]]);
    let _sl = Sluice::start(&config(&fronts[1].to_string()));
    let h = answers(fronts[0].addr()).await;
    let s = answers(fronts[1].addr()).await;
    assert!(h[2].contains("admin alice 1"), "{h:?}");
    for (h, s) in h.iter().zip(&s) {
        assert_eq!(s, h, "sluice's answer, then haproxy's");
    }
}

/// Faulty userlists and references to them: the same messages.
const FAULTY: &[(&str, &str)] = &[
    ("userlist", ""),
    ("userlist L\n    group g users nobody", ""),
    ("userlist L\n    user u insecure-password p groups nog", ""),
    ("userlist L\n    bogus x", ""),
    ("userlist L\n    user u insecure-password p bad", ""),
    (
        "userlist L\n    user u insecure-password p",
        "acl a http_auth(nolist)",
    ),
    ("userlist L\n    group g", "acl a http_auth_group(L) nog"),
];

/// The first alert, without its pid and with the file's line number only
/// (the two configuration files have their own paths).
fn alert(stderr: &str) -> String {
    let Some(l) = stderr.lines().find(|l| l.contains("[ALERT]")) else {
        return "(accepted)".to_string();
    };
    let m = l.split_once(" : config : ").map_or(l, |(_, m)| m);
    match (m.find("parsing ["), m.find("]")) {
        (Some(a), Some(b)) if a < b => {
            let line = m[a..b].rsplit(':').next().unwrap_or("");
            format!("{}parsing [:{line}{}", &m[..a], &m[b..])
        }
        _ => m.to_string(),
    }
}

#[test]
fn faulty_userlists_get_haproxys_messages() {
    if !haproxy::available() {
        return;
    }
    let cases = FAULTY.iter().map(|(section, line)| {
        let cfg = format!(
            "{section}\ndefaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\nfrontend f\n    bind 127.0.0.1:1\n    {line}\n"
        );
        (format!("{section} {line}"), cfg)
    });
    haproxy::assert_check_agrees("auth-check", cases, alert);
}

/// `http-request auth` sends the proxy's `errorfile 401` with the
/// challenge added, and keeps the connection, as HAProxy does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_uses_the_errorfile_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("auth-ef");
    let page = dir.write(
        "401.http",
        "HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n\r\nnope\n",
    );
    let cfg = |bind: &str| {
        format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
    errorfile 401 {}
frontend fe
    bind {bind}
    http-request auth realm R
",
            page.display()
        )
    };
    let fronts = listens(2);
    let _hap = Haproxy::start("auth-ef", &cfg(&fronts[0].to_string()), &[&fronts[0]]);
    let _sl = Sluice::start(&cfg(&fronts[1].to_string()));
    let mut got = Vec::new();
    for f in &fronts {
        let mut conn = HttpConn::connect(f.addr()).await;
        let mut out = Vec::new();
        for _ in 0..2 {
            let r = conn
                .raw(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n", false)
                .await
                .expect("answer");
            out.push(format!("{}{}", r.head, r.text()));
        }
        got.push(out);
    }
    assert!(got[0][0].contains("nope"), "{got:?}");
    assert_eq!(got[1], got[0], "sluice's answers, then haproxy's");
}

/// The fetches that read the Authorization data without checking it.
const AUTH_FETCHES: &[&str] = &[
    "http_auth_type",
    "http_auth_user",
    "http_auth_pass",
    "http_auth_bearer",
    "http_auth_bearer(x-token)",
    "http_auth_type,length",
    "http_auth_user,length",
    "http_auth_bearer,length",
];

/// The Authorization (and `x-token`) fields they are asked about.
fn auth_headers() -> Vec<String> {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    vec![
        String::new(),
        format!("authorization: Basic {}\r\n", b64("alice:s3cret")),
        format!("authorization: basic {}\r\n", b64("bob:pw:with:colons")),
        format!("authorization: BASIC {}\r\n", b64("nocolon")),
        format!("authorization: Basic {}\r\n", b64(":")),
        "authorization: Basic !!!notbase64\r\n".to_string(),
        "authorization: Basic\r\n".to_string(),
        "authorization: Bearer abc.def.ghi\r\n".to_string(),
        "authorization: bearer   spaced  \r\n".to_string(),
        "authorization: Bearer\r\n".to_string(),
        "authorization: Digest username=\"x\"\r\n".to_string(),
        "authorization: Negotiate\r\n".to_string(),
        "authorization: \r\n".to_string(),
        format!(
            "authorization: Basic {}\r\nauthorization: Bearer second\r\n",
            b64("first:1")
        ),
        "x-token: Bearer tok123\r\n".to_string(),
        "x-token: tok123\r\nauthorization: Bearer main\r\n".to_string(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_fetches_give_haproxys_bytes() {
    if !haproxy::available() {
        return;
    }
    let cfg = |bind: &str| {
        let mut c = format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
"
        );
        c.push_str(&haproxy::return_rules(AUTH_FETCHES));
        c
    };
    let fronts = listens(2);
    let _hap = Haproxy::start("authf-hap", &cfg(&fronts[0].to_string()), &[&fronts[0]]);
    let _sl = Sluice::start(&cfg(&fronts[1].to_string()));
    let mut differ = Vec::new();
    for h in auth_headers() {
        for (i, e) in AUTH_FETCHES.iter().enumerate() {
            let req = format!("GET /{i} HTTP/1.1\r\nhost: h\r\n{h}\r\n");
            let got = haproxy::answers_to(&fronts, req.as_bytes()).await;
            let label = format!("{e} with {h:?}");
            differ.extend(haproxy::answer_differs(&label, &got[0], &got[1]));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
