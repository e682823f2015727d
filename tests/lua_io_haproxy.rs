//! Lua scripts that wait for I/O, against the real HAProxy 2.6 running
//! the same script (`tests/data/lua/io.lua`) on the same configuration:
//! `core.httpclient()` in an auth request and an audit POST (the client's
//! answers, the log lines, what the HTTP service the test starts
//! receives), `core.tcp()` sockets from an action and from a task (a
//! key-value service the test starts).
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::haproxy::{self, Pair};
use support::raw::complete_request;
use support::{Listen, Port, Sluice, TempDir};

/// `tests/data/lua/io.lua` written into `dir` with the key-value
/// service's address and the map file (`None`: no task).
fn script(dir: &TempDir, kv: SocketAddr, map: Option<&Path>) -> String {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lua/io.lua"),
    )
    .expect("script");
    let mut text = text.replace("@KV@", &kv.to_string());
    if let Some(m) = map {
        text = text.replace("@MAP@", &m.display().to_string());
    }
    dir.write("io.lua", &text).display().to_string()
}

/// An HTTP service that records each request: `authorization: Bearer
/// good` is let in as alice, anything else is refused; `/audit` is
/// accepted with a body.
async fn auth_service(seen: Arc<Mutex<Vec<String>>>) -> SocketAddr {
    support::tcp_server(move |mut s: TcpStream| {
        let seen = seen.clone();
        async move {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let n = loop {
                if let Some(n) = complete_request(&buf) {
                    break n;
                }
                match s.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(k) => buf.extend_from_slice(&chunk[..k]),
                }
            };
            let req = String::from_utf8_lossy(&buf[..n]).into_owned();
            let answer: &[u8] = if req.starts_with("POST /audit ") {
                b"HTTP/1.1 202 Accepted\r\ncontent-length: 3\r\n\r\nyes"
            } else if req.contains("\r\nauthorization: Bearer good\r\n") {
                b"HTTP/1.1 200 OK\r\nx-user: alice\r\ncontent-length: 0\r\n\r\n"
            } else {
                b"HTTP/1.1 401 Who Are You\r\ncontent-length: 4\r\n\r\nnope"
            };
            seen.lock().unwrap().push(req);
            let _ = s.write_all(answer).await;
        }
    })
    .await
}

/// The key-value service: `GET <key>` is answered with `+OK`, the
/// value's length, the value `v-<key>`, then `\r\nbye` and a close.
async fn kv_service() -> SocketAddr {
    support::tcp_server(|mut s: TcpStream| async move {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 256];
        while !buf.ends_with(b"\r\n") {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(k) => buf.extend_from_slice(&chunk[..k]),
            }
        }
        let line = String::from_utf8_lossy(&buf);
        let key = line.trim_end().strip_prefix("GET ").unwrap_or("");
        let value = format!("v-{key}");
        let _ = s
            .write_all(format!("+OK\r\n{}\r\n{value}", value.len()).as_bytes())
            .await;
        // The trailer in a write of its own: `receive("*a")` reads to
        // the close, across reads.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let _ = s.write_all(b"\r\nbye").await;
    })
    .await
}

/// A request's header lines sorted: the script builds the auth request's
/// fields from a Lua table, whose order is the hash's (seeded at random
/// by HAProxy's Lua 5.3, another hash in sluice's Lua 5.4).
fn fields_sorted(req: &str) -> String {
    let Some((head, body)) = req.split_once("\r\n\r\n") else {
        return req.to_string();
    };
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or("");
    let mut rest: Vec<&str> = lines.collect();
    rest.sort_unstable();
    format!("{first}\r\n{}\r\n\r\n{body}", rest.join("\r\n"))
}

/// The `global` and `defaults` of these tests: the frontends log (raw) to
/// `{log}`; the global section has no log target, so HAProxy's
/// HttpClient, which logs its own requests to the global targets, does
/// not (sluice does not log them).
fn config(dir: &TempDir, body: &str, kv: SocketAddr) -> String {
    format!(
        "global
    lua-load {}
defaults
    mode http
    log {{log}} format raw local0 info
    option dontlognull
    timeout connect 5s
    timeout client 5s
    timeout server 5s
{body}",
        script(dir, kv, None)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httpclient_auth_request_is_haproxys() {
    if !haproxy::available() {
        return;
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let auth = auth_service(seen.clone()).await;
    let kv = kv_service().await;
    // Nothing listens there: HAProxy's HttpClient answers its 503.
    let refused = Port::new();
    let dir = TempDir::new("lua-io");
    let cfg = config(
        &dir,
        &format!(
            "frontend fe
    bind {{fe0}}
    log-format \"%ci %f %b/%s %ST %B %ts %{{+Q}}r %[var(txn.auth_status)] %{{+Q}}[var(txn.auth_reason)] %[var(txn.audit)]\"
    http-request lua.auth-request http://{auth}/check if !{{ path_beg /down }}
    http-request lua.auth-request http://{}/check if {{ path_beg /down }}
    http-request deny if !{{ var(txn.auth_ok) -m bool }}
    http-request lua.audit http://{auth} if {{ path_beg /audited }}
    default_backend be
backend be
    server s {{srv}}
",
            refused.addr()
        ),
        kv,
    );
    let pair = Pair::start("lua-httpclient", &cfg, 1).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let mut differ = haproxy::Differences::default();
    for (target, auth_line) in [
        ("/private", "authorization: Bearer good\r\n"),
        ("/private?q=1", "authorization: Bearer bad\r\n"),
        ("/private", ""),
        ("/audited/x", "authorization: Bearer good\r\n"),
        ("/down", "authorization: Bearer good\r\n"),
    ] {
        let req = format!(
            "GET {target} HTTP/1.1\r\nhost: h.example\r\n{auth_line}connection: close\r\n\r\n"
        );
        let mut got = Vec::new();
        for i in 0..2 {
            let bytes = haproxy::exchange(pair.fronts[i][0].addr(), req.as_bytes(), false).await;
            let line = pair.logs[i].take(1).remove(0);
            let server = String::from_utf8_lossy(&pair.servers[i].take()).into_owned();
            let asked: Vec<String> = std::mem::take(&mut *seen.lock().unwrap())
                .iter()
                .map(|r| fields_sorted(r))
                .collect();
            got.push((
                String::from_utf8_lossy(&bytes).into_owned(),
                line,
                server,
                asked,
            ));
        }
        if auth_line.contains("good") && target != "/down" {
            assert!(got[0].2.contains("\r\nx-user: alice\r\n"), "{:?}", got[0]);
        } else {
            assert!(got[0].0.starts_with("HTTP/1.1 403 "), "{:?}", got[0]);
        }
        differ.compare(format!("{target} {auth_line:?}"), &got[0], &got[1]);
    }
    differ.assert_none();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_sockets_from_actions_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let kv = kv_service().await;
    let refused = Port::new();
    let dir = TempDir::new("lua-io");
    let cfg = config(
        &dir,
        &format!(
            "frontend fe
    bind {{fe0}}
    log-format \"%ST %{{+Q}}[var(txn.kv)]\"
    http-request lua.lookup if {{ path /lookup }}
    http-request lua.refused {} if {{ path /refused }}
    http-request return status 200 content-type text/plain lf-string \"%[var(txn.kv)]\"
",
            refused.addr()
        ),
        kv,
    );
    let pair = Pair::start("lua-tcp-socket", &cfg, 1).await;
    let mut differ = haproxy::Differences::default();
    for (target, key) in [("/lookup", "colour"), ("/lookup", "k2"), ("/refused", "x")] {
        let req = format!(
            "GET {target} HTTP/1.1\r\nhost: h\r\nx-key: {key}\r\nconnection: close\r\n\r\n"
        );
        let [h, s] = pair.both(0, &req).await;
        if key == "colour" {
            assert!(
                h.0.ends_with("\r\n\r\n12 +OK v-colour [%0D%0Abye] nil connection closed."),
                "{h:?}"
            );
        }
        differ.compare(format!("{target} {key}"), &h, &s);
    }
    differ.assert_none();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_reads_a_socket_as_in_haproxy() {
    if !haproxy::available() {
        return;
    }
    let kv = kv_service().await;
    let mut answers = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let dir = TempDir::new("lua-task-socket");
        let map = dir.write("m.map", "motd none\n");
        let listen = Listen::new();
        let m = map.display();
        let cfg = format!(
            "global\n    lua-load {}\ndefaults\n    mode http\n    timeout connect 5s\n    timeout client 5s\n    timeout server 5s\nfrontend fe\n    bind {listen}\n    http-request return status 200 content-type text/plain lf-string \"%[str(motd),map({m},none)]\"\n",
            script(&dir, kv, Some(&map))
        );
        let mut hap = None;
        let mut sl = None;
        if tool == "haproxy" {
            hap = Some(haproxy::Haproxy::start("lua-task-socket", &cfg, &[&listen]));
        } else {
            sl = Some(Sluice::start(&cfg));
        }
        // The task runs once started: asked until the map shows its
        // value, at most 100 times.
        let mut last = String::new();
        for _ in 0..100 {
            let bytes = haproxy::exchange(
                listen.addr(),
                b"GET / HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
                false,
            )
            .await;
            last = String::from_utf8_lossy(&bytes).into_owned();
            if !last.ends_with("none") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        answers.push(last);
        drop(hap);
        drop(sl);
    }
    assert!(answers[0].ends_with("\r\n\r\nv-motd"), "{}", answers[0]);
    assert_eq!(answers[0], answers[1]);
}
