//! Lua (`lua-load` and HAProxy's Lua API) against the real HAProxy 2.6,
//! which runs the same scripts (`tests/data/lua/`) on the same
//! configuration: `-c`'s messages for scripts that fail to load and for
//! the Lua lines, then the answers, log lines and requests the server
//! receives for actions, fetches and converters, and the stderr lines of
//! a script error and of a runaway script, which its timeout stops while
//! its worker serves other connections.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::haproxy::HTTP_LOG_GLOBAL;
use support::haproxy::{self, Pair};
use support::{Listen, Sluice, TempDir, inherit};

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/lua")
        .join(name)
        .display()
        .to_string()
}

/// HAProxy's logging `global` and `defaults` sections (HTTP_LOG_GLOBAL)
/// with `lua-load` of each of `scripts`.
fn logged_with(scripts: &[&str]) -> String {
    let loads: String = scripts
        .iter()
        .map(|s| format!("    lua-load {}\n", script(s)))
        .collect();
    HTTP_LOG_GLOBAL.replacen("global\n", &format!("global\n{loads}"), 1)
}

const DEFAULTS: &str = "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
";

#[test]
fn load_errors_and_lua_lines_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("lua-check");
    let syntax = dir.write("syntax.lua", "core.Info('x')\nlocal a = = 1\n");
    let runtime = dir.write("runtime.lua", "local t = {}\nerror('boom at load')\n");
    let missing = dir.join("missing.lua");
    let actions = script("actions.lua");
    let global = |lines: &str| {
        format!(
            "global\n{lines}\n{DEFAULTS}frontend fe\n    bind 127.0.0.1:0\n    default_backend be\nbackend be\n    server s 127.0.0.1:1\n"
        )
    };
    let with_rule = |rule: &str| {
        format!(
            "global\n    lua-load {actions}\n{DEFAULTS}frontend fe\n    bind 127.0.0.1:0\n    {rule}\n    default_backend be\nbackend be\n    server s 127.0.0.1:1\n"
        )
    };
    let services = script("services.lua");
    let tcp_rule = |mode: &str, rule: &str| {
        format!(
            "global\n    lua-load {services}\n{DEFAULTS}frontend fe\n    mode {mode}\n    bind 127.0.0.1:0\n    {rule}\n    default_backend be\nbackend be\n    mode {mode}\n    server s 127.0.0.1:1\n"
        )
    };
    let cases = [
        (
            "tcp-service",
            tcp_rule("tcp", "tcp-request content use-service lua.lines"),
        ),
        (
            "tcp-service-unknown",
            tcp_rule("tcp", "tcp-request content use-service lua.nope"),
        ),
        (
            "tcp-service-http-applet",
            tcp_rule("tcp", "tcp-request content use-service lua.acme"),
        ),
        (
            "tcp-service-on-http",
            tcp_rule("http", "tcp-request content use-service lua.lines"),
        ),
        (
            "tcp-service-extra",
            tcp_rule("tcp", "tcp-request content use-service lua.lines extra"),
        ),
        (
            "syntax",
            global(&format!("    lua-load {}", syntax.display())),
        ),
        (
            "runtime",
            global(&format!("    lua-load {}", runtime.display())),
        ),
        (
            "missing",
            global(&format!("    lua-load {}", missing.display())),
        ),
        ("load-noarg", global("    lua-load")),
        ("per-thread-noarg", global("    lua-load-per-thread")),
        ("prepend-noarg", global("    lua-prepend-path")),
        ("prepend-type", global("    lua-prepend-path /x/?.lua lib")),
        ("prepend-ok", global("    lua-prepend-path /x/?.lua cpath")),
        ("forced-yield", global("    tune.lua.forced-yield x")),
        ("maxmem", global("    tune.lua.maxmem 12k")),
        ("session-timeout", global("    tune.lua.session-timeout x")),
        ("task-timeout", global("    tune.lua.task-timeout")),
        ("service-timeout", global("    tune.lua.service-timeout 2s")),
        (
            "loads",
            global(&format!("    tune.lua.maxmem 64\n    lua-load {actions}")),
        ),
        ("action", with_rule("http-request lua.tag someone")),
        (
            "action-noarg-extra",
            with_rule("http-request lua.deny extra"),
        ),
        ("action-args-extra", with_rule("http-request lua.tag a b")),
        ("action-unknown", with_rule("http-request lua.nope")),
        (
            "fetch",
            with_rule("http-request set-header x %[lua.greet(a)]"),
        ),
        (
            "fetch-unknown",
            with_rule("http-request set-header x %[lua.nope]"),
        ),
        (
            "conv",
            with_rule("http-request set-header x %[path,lua.rev(b)]"),
        ),
        (
            "conv-unknown",
            with_rule("http-request set-header x %[path,lua.nope]"),
        ),
        (
            "acl",
            with_rule("http-request deny if { lua.greet(x) -m beg hi- }"),
        ),
    ]
    .map(|(l, c)| (l.to_string(), c));
    haproxy::assert_check_agrees("lua-check", cases, |stderr| {
        // The action's list of HAProxy's actions is sluice's own text.
        let m = haproxy::parsing_message(stderr);
        match m.split_once(" expects 'return', 'deny'") {
            Some((a, _)) => a.to_string(),
            None => m
                .split_once("' expects 'wait-for-handshake'")
                .map_or(m.clone(), |(a, _)| format!("{a}'")),
        }
    });
}

#[test]
fn core_info_at_load_is_haproxys_line() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("lua-info");
    let s = dir.write(
        "info.lua",
        "core.Info('loaded ' .. 42)\ncore.Warning('careful')\n",
    );
    let cfg = format!(
        "global\n    lua-load {}\n{DEFAULTS}frontend fe\n    bind 127.0.0.1:0\n    default_backend be\nbackend be\n    server s 127.0.0.1:1\n",
        s.display()
    );
    let ((hcode, herr), out) = haproxy::check_both("lua-info", &cfg);
    assert_eq!(hcode, out.code());
    // `[info] 338/001500 (1234) : text`: the time and the pid differ.
    let mask = |e: &str| {
        e.lines()
            .filter(|l| l.starts_with("[info]") || l.starts_with("[warning]"))
            .map(|l| {
                let (lvl, rest) = l.split_once(' ').unwrap_or((l, ""));
                let text = rest.split_once(") : ").map_or("", |(_, t)| t);
                format!("{lvl} <time> (<pid>) : {text}")
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        mask(&herr),
        [
            "[info] <time> (<pid>) : loaded 42",
            "[warning] <time> (<pid>) : careful"
        ]
    );
    assert_eq!(mask(&herr), mask(&out.stderr));
}

/// A log line without dates, ports or timers.
const LOG: &str = "log-format \"%ci %f %b/%s %ST %B %ts %{+Q}r %[var(txn.path)] %[var(txn.low)] %[var(txn.host)] %[var(txn.napped)] %[var(txn.napsrc)]\"";

fn get(target: &str, headers: &str) -> String {
    format!(
        "GET {target} HTTP/1.1\r\nhost: h.example\r\nuser-agent: UA/1\r\n{headers}connection: close\r\n\r\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_fetches_and_converters_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = logged_with(&["actions.lua"])
        + &format!(
            "frontend fe
    bind {{fe0}}
    {LOG}
    # A content action may wait where the rules may: with a delay.
    tcp-request inspect-delay 5s
    tcp-request content lua.napsrc
    http-request lua.tag bob if {{ req.hdr(x-case) tag }}
    http-request lua.move if {{ req.hdr(x-case) move }}
    http-request lua.deny if {{ req.hdr(x-case) deny }}
    http-request lua.nap if {{ req.hdr(x-case) nap }}
    http-request set-header x-greet %[lua.greet(zz)] if {{ req.hdr(x-case) greet }}
    http-request set-header x-rev %[req.hdr(host),lua.rev(!)] if {{ req.hdr(x-case) rev }}
    http-request deny deny_status 401 if {{ req.hdr(x-case) acl }} {{ lua.greet(y) -m beg hi-y-h. }}
    default_backend be
backend be
    server s {{srv}}
"
        );
    let pair = Pair::start("lua-actions", &cfg, 1).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let mut differ = haproxy::Differences::default();
    for (case, target, extra) in [
        ("tag", "/a/b?c=1", "x-drop: 1\r\n"),
        ("tag", "/", ""),
        ("move", "/x?y", ""),
        ("deny", "/", ""),
        ("nap", "/", ""),
        ("greet", "/", ""),
        ("rev", "/", ""),
        ("acl", "/", ""),
        ("none", "/", ""),
    ] {
        let req = get(target, &format!("x-case: {case}\r\n{extra}"));
        let [h, s] = pair.both(0, &req).await;
        assert!(h.1.ends_with(" 127.0.0.1\n"), "{}", h.1);
        if case == "tag" && target == "/" {
            assert!(h.2.contains("x-lua: hello bob\r\n"), "{}", h.2);
        }
        differ.compare(format!("{case} {target}"), &h, &s);
    }
    differ.assert_none();
}

/// A response action that sleeps and yields waits on the worker, and
/// what it does after is haproxy's: a header, a variable later rules
/// read, a denial.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_actions_wait_as_in_haproxy() {
    if !haproxy::available() {
        return;
    }
    let cfg = logged_with(&["actions.lua"])
        + &format!(
            "frontend fe
    bind {{fe0}}
    {LOG}
    http-response set-header x-before %[var(txn.resnap)]
    http-response lua.napres
    http-response set-header x-after %[var(txn.resnap)]
    default_backend be
backend be
    http-request set-var(txn.c) path
    http-request cache-use c if {{ path /c }}
    http-response cache-store c if {{ var(txn.c) -m str /c }}
    server s {{srv}}
cache c
    total-max-size 1
"
        );
    let pair = Pair::start("lua-response", &cfg, 1).await;
    let mut differ = haproxy::Differences::default();
    for answer in [
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
        "HTTP/1.1 404 Not Found\r\nx-act: deny\r\ncontent-length: 2\r\n\r\nno",
        "HTTP/1.1 200 OK\r\nx-act: deny\r\ncontent-length: 2\r\n\r\nok",
        "HTTP/1.1 201 Created\r\nx-act: deny\r\ncontent-length: 2\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nx-act: error\r\ncontent-length: 2\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nx-act: invalid\r\ncontent-length: 2\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nx-act: stop\r\ncontent-length: 2\r\n\r\nok",
    ] {
        pair.answer(answer.as_bytes());
        let [h, s] = pair.both(0, &get("/r", "")).await;
        if !answer.contains("x-act") {
            assert!(h.0.contains("x-napped: status-200\r\n"), "{}", h.0);
            assert!(h.0.contains("x-after: yes\r\n"), "{}", h.0);
        }
        differ.compare(answer.split("\r\n\r\n").next().unwrap_or(answer), &h, &s);
    }
    // On an answer from the cache too (stored, then a hit).
    pair.answer(b"HTTP/1.1 200 OK\r\ncache-control: max-age=60\r\ncontent-length: 2\r\n\r\nok");
    for n in 0..2 {
        let [mut h, mut s] = pair.both(0, &get("/c", "")).await;
        assert!(h.0.contains("x-napped: status-200\r\n"), "{}", h.0);
        // Masked: `age` counts whole seconds since the object was stored,
        // 1 under either proxy when a second's boundary falls between the
        // store and the hit (0 or 1 is checked).
        for answer in [&mut h.0, &mut s.0] {
            for age in ["age: 0\r\n", "age: 1\r\n"] {
                *answer = answer.replace(age, "age: <0 or 1>\r\n");
            }
        }
        differ.compare(format!("/c {n}"), &h, &s);
    }
    // The response as it is, no more rules; the client closed with
    // nothing. Only the bytes are compared: HAProxy 2.6 logs no line
    // after `act.DONE` (sluice logs its line).
    // (`act.ABORT` is not compared: where a filter is (the cache's here),
    // HAProxy 2.6 sends nothing and keeps the client waiting; sluice
    // treats it as `act.DONE`.)
    for act in ["done", "close"] {
        pair.answer(
            format!("HTTP/1.1 200 OK\r\nx-act: {act}\r\ncontent-length: 2\r\n\r\nok").as_bytes(),
        );
        let req = get("/r", "");
        let mut got = Vec::new();
        for i in 0..2 {
            // One answer read by its length: after `act.DONE` HAProxy 2.6
            // keeps the connection open whatever the request said.
            let mut conn = support::HttpConn::connect(pair.fronts[i][0].addr()).await;
            got.push(match conn.raw(req.as_bytes(), false).await {
                Ok(r) => format!("{}{}", r.head, String::from_utf8_lossy(&r.body)),
                Err(_) => "closed, nothing sent".to_string(),
            });
        }
        if act == "close" {
            assert_eq!(got[0], "closed, nothing sent");
        }
        if act == "done" {
            assert!(
                got[0].ends_with("x-before: \r\nconnection: close\r\n\r\nok"),
                "{}",
                got[0]
            );
        }
        differ.compare(act.to_string(), &got[0], &got[1]);
    }
    differ.assert_none();
}

/// `txn:reply()` and `txn:done(reply)`: the script's answer, in the
/// request's rules and in the response's, with the `http-after-response`
/// rules on it, and its log line, as haproxy's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_made_by_scripts_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = logged_with(&["actions.lua"]) + "frontend fe
    bind {fe0}
    log-format \"%f %b/%s %ST %B %ts %{+Q}r\"
    http-request lua.answer table if { path /table }
    http-request lua.answer built if { path /built }
    http-request lua.answer empty if { path /empty }
    http-request lua.answer fields if { path /fields }
    http-request return status 200 content-type text/plain lf-string \"%[var(txn.fields)]\" if { path /fields }
    http-request lua.prio if { path /prio }
    http-request return status 200 content-type text/plain lf-string \"%[prio_class] %[prio_offset]\" if { path /prio }
    http-response lua.reanswer if { status 200 }
    http-response set-header x-not-after-done 1
    http-after-response set-header x-after 1
    default_backend be
backend be
    server s {srv}
";
    let pair = Pair::start("lua-replies", &cfg, 1).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let mut differ = haproxy::Differences::default();
    for path in ["/table", "/built", "/empty", "/fields", "/prio", "/server"] {
        let [h, s] = pair.both(0, &get(path, "")).await;
        if path == "/table" {
            assert!(h.0.starts_with("HTTP/1.1 403 Forbidden\r\nx-a: 1\r\nx-a: 2\r\nx-a: 3\r\ncontent-length: 7\r\nx-after: 1\r\n"), "{}", h.0);
        }
        if path == "/server" {
            assert!(h.0.ends_with("\r\n\r\ngone"), "{}", h.0);
        }
        if path == "/prio" {
            // HAProxy bounds the offset as `set-priority-offset` does.
            assert!(h.0.ends_with("\r\n\r\n5 -524287"), "{}", h.0);
        }
        differ.compare(path.to_string(), &h, &s);
    }
    differ.assert_none();
}

/// Runs haproxy on `cfg` with its stderr kept in `dir/haproxy.err`.
fn haproxy_with_stderr(dir: &TempDir, cfg: &str, listen: &Listen) -> std::process::Child {
    let path = dir.write("haproxy.cfg", cfg);
    let err = std::fs::File::create(dir.join("haproxy.err")).expect("stderr file");
    let mut cmd = Command::new(haproxy::HAPROXY);
    inherit(&mut cmd, &[listen]);
    let mut child = cmd
        .arg("-f")
        .arg(&path)
        .arg("-db")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .expect("spawn haproxy");
    listen.wait_accepting(&mut child);
    child
}

/// The stderr lines of the Lua errors, the pid masked (it differs).
fn lua_errors(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains("Lua function") || l.contains("Lua applet"))
        .map(|l| l.split_once(") : ").map_or(l, |(_, m)| m).to_string())
        .collect()
}

async fn send(addr: std::net::SocketAddr, req: &str) -> String {
    haproxy::exchange(addr, req.as_bytes(), false)
        .await
        .into_iter()
        .map(char::from)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_errors_and_runaway_scripts_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    // One thread each: a script that held its worker would hold every
    // connection. The server answers with what it received.
    let backend = support::raw::RawBackend::start().await;
    backend.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let cfg = |bind: &str| {
        format!(
            "global
    nbthread 1
    lua-load {}
    lua-load {}
    tune.lua.session-timeout 3s
{DEFAULTS}frontend fe
    bind {bind}
    http-request use-service lua.broken if {{ path /broken }}
    http-request lua.boom if {{ path /boom }}
    http-request lua.spin if {{ path /spin }}
    http-request set-header x-after lua
    default_backend be
backend be
    server s {}
",
            script("actions.lua"),
            script("services.lua"),
            backend.addr
        )
    };
    let dir = TempDir::new("lua-errors");
    let hl = Listen::new();
    let mut hap = haproxy_with_stderr(&dir, &cfg(&hl.to_string()), &hl);
    let sl = Listen::new();
    let sluice = Sluice::start(&cfg(&sl.to_string()));
    let mut answers = Vec::new();
    for addr in [hl.addr(), sl.addr()] {
        let broken = send(addr, &get("/broken", "")).await;
        let boom = broken + &send(addr, &get("/boom", "")).await;
        let got = String::from_utf8_lossy(&backend.take()).into_owned();
        // A runaway action: while it runs, another connection is served.
        let mut spin = TcpStream::connect(addr).await.expect("connect");
        spin.write_all(get("/spin", "").as_bytes())
            .await
            .expect("send");
        let other = send(addr, &get("/other", "")).await;
        let mut byte = [0u8; 1];
        let pending = tokio::time::timeout(Duration::from_millis(1), spin.peek(&mut byte))
            .await
            .is_err();
        assert!(
            pending,
            "the spinning request answered before the other one ({addr})"
        );
        let mut rest = Vec::new();
        spin.read_to_end(&mut rest).await.expect("read");
        let got_spin = String::from_utf8_lossy(&backend.take()).into_owned();
        answers.push((
            boom,
            got,
            !other.is_empty(),
            String::from_utf8_lossy(&rest).into_owned(),
            got_spin,
        ));
    }
    let _ = hap.kill();
    let _ = hap.wait();
    let herr = std::fs::read_to_string(dir.join("haproxy.err")).unwrap_or_default();
    let mut differ = haproxy::Differences::default();
    differ.compare("answers and server requests", &answers[0], &answers[1]);
    let h = lua_errors(&herr);
    assert_eq!(h.len(), 3, "{herr}");
    differ.compare("stderr", &h, &lua_errors(&sluice.stderr()));
    differ.assert_none();
}

/// An answer with its header lines sorted: HAProxy keeps a service's
/// headers in a Lua table, whose order changes from one run to the next
/// (Lua's string hashes are seeded at random); sluice sends them in the
/// order the script added them.
fn headers_sorted(answer: &str) -> String {
    let Some((head, body)) = answer.split_once("\r\n\r\n") else {
        return answer.to_string();
    };
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or("");
    let mut rest: Vec<&str> = lines.collect();
    rest.sort_unstable();
    format!("{first}\r\n{}\r\n\r\n{body}", rest.join("\r\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_services_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = logged_with(&["services.lua"])
        + "frontend fe
    bind {fe0}
    log-format \"%ci %f %b/%s %ST %B %ts %{+Q}r\"
    http-request lua.cors https://a.example,https://b.example
    http-request use-service lua.preflight if METH_OPTIONS
    http-request use-service lua.acme if { path_beg /.well-known/acme-challenge/ }
    http-request use-service lua.slow if { path /slow }
    # On the services' answers too (the preflight's), as in HAProxy.
    http-response lua.cors
    http-response set-header x-seen 1 if { status 200 }
    default_backend be
backend be
    server s {srv}
";
    let pair = Pair::start("lua-services", &cfg, 1).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let mut differ = haproxy::Differences::default();
    for req in [
        "OPTIONS /api HTTP/1.1\r\nhost: h\r\norigin: https://a.example\r\nconnection: close\r\n\r\n",
        "OPTIONS /api HTTP/1.1\r\nhost: h\r\norigin: https://evil.example\r\nconnection: close\r\n\r\n",
        "OPTIONS /api HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
        "GET /api HTTP/1.1\r\nhost: h\r\norigin: https://b.example\r\nconnection: close\r\n\r\n",
        "GET /api HTTP/1.1\r\nhost: h\r\norigin: https://c.example\r\nconnection: close\r\n\r\n",
        "GET /status HTTP/1.1\r\nhost: h\r\norigin: https://a.example\r\nconnection: close\r\n\r\n",
        "GET /.well-known/acme-challenge/Abc-123_x HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
        "GET /.well-known/acme-challenge/tok_1 HTTP/1.0\r\nhost: h\r\n\r\n",
        "GET /.well-known/acme-challenge/unknown HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
        "GET /.well-known/acme-challenge/unknown HTTP/1.0\r\nhost: h\r\n\r\n",
        "GET /slow HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
    ] {
        if req.starts_with("GET /status") {
            pair.answer(b"HTTP/1.1 200 OK\r\nx-status: 418\r\ncontent-length: 2\r\n\r\nok");
        }
        let [mut h, mut s] = pair.both(0, req).await;
        if req.starts_with("GET /status") {
            // `%B` after res_set_status differs (sluice counts the
            // rewritten head): compared without the log line.
            assert!(h.0.starts_with("HTTP/1.1 418 "), "{}", h.0);
            h.1 = String::new();
            s.1 = String::new();
        }
        if req.starts_with("GET /api HTTP/1.1\r\nhost: h\r\norigin: https://b") {
            assert!(h.0.contains("vary: Origin\r\n"), "{}", h.0);
        }
        h.0 = headers_sorted(&h.0);
        s.0 = headers_sorted(&s.0);
        if req.starts_with("GET /.well-known/acme-challenge/Abc") {
            assert!(h.0.ends_with("\r\n\r\nAbc-123_x.tHuMbPrInT"), "{}", h.0);
        }
        differ.compare(req.lines().next().unwrap_or(req), &h, &s);
    }
    differ.assert_none();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_updates_a_map_as_in_haproxy() {
    if !haproxy::available() {
        return;
    }
    let mut answers = Vec::new();
    for tool in ["haproxy", "sluice"] {
        // Each its own map file and script (the task edits the map).
        let dir = TempDir::new("lua-task");
        let map = dir.write("m.map", "state starting\ngone here\n");
        let text = std::fs::read_to_string(script("map_task.lua")).expect("script");
        let lua = dir.write(
            "task.lua",
            &text.replace("@MAP@", &map.display().to_string()),
        );
        let listen = Listen::new();
        let m = map.display();
        let cfg = format!(
            "global\n    lua-load {}\n{DEFAULTS}frontend fe\n    bind {listen}\n    http-request return status 200 content-type text/plain lf-string \"%[str(state),map({m},none)] %[str(added),map({m},none)] %[str(gone),map({m},none)]\"\n",
            lua.display()
        );
        let mut hap = None;
        let mut sl = None;
        if tool == "haproxy" {
            hap = Some(haproxy_with_stderr(&dir, &cfg, &listen));
        } else {
            sl = Some(Sluice::start(&cfg));
        }
        // The task runs once started: asked until the map shows it (its
        // first entry changed), at most 100 times.
        let mut last = String::new();
        for _ in 0..100 {
            last = send(listen.addr(), &get("/", "")).await;
            if !last.contains("starting") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        answers.push(last);
        if let Some(mut h) = hap {
            let _ = h.kill();
            let _ = h.wait();
        }
        drop(sl);
    }
    assert!(
        answers[0].ends_with("\r\n\r\nready new none"),
        "{}",
        answers[0]
    );
    assert_eq!(answers[0], answers[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_content_actions_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = logged_with(&["actions.lua"])
        + "frontend fe
    bind {fe0}
    mode tcp
    log-format \"%ci %f %b/%s %ts %[var(txn.napped)] %[var(txn.first)]\"
    tcp-request inspect-delay 5s
    tcp-request content lua.gate if { req.len ge 3 }
    tcp-request content lua.napgate
    default_backend be
backend be
    mode tcp
    server s {srv}
";
    let pair = Pair::start("lua-tcp", &cfg, 1).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let mut differ = haproxy::Differences::default();
    for req in [
        "GET / HTTP/1.1\r\nhost: h\r\n\r\n",
        "BAD / HTTP/1.1\r\nhost: h\r\n\r\n",
    ] {
        let [h, s] = pair.both_as(0, req, true).await;
        // The gate lets GET through (its first bytes noted), refuses BAD.
        assert_eq!(h.0.contains("200 OK"), req.starts_with("GET"), "{h:?}");
        assert_eq!(
            h.1.ends_with(" slept-27 GET\n"),
            req.starts_with("GET"),
            "{h:?}"
        );
        differ.compare(req.lines().next().unwrap_or(req), &h, &s);
    }
    differ.assert_none();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_read_their_clients_as_in_haproxy() {
    if !haproxy::available() {
        return;
    }
    let cfg = logged_with(&["services.lua"])
        + "frontend fh
    bind {fe0}
    log-format \"%f %b/%s %ST %B %U %ts %{+Q}r\"
    http-request use-service lua.echo-body
frontend ft
    bind {fe1}
    mode tcp
    log-format \"%ci %f %b/%s %ts %B %U %[var(txn.seen)]\"
    tcp-request content use-service lua.lines
";
    let pair = Pair::start("lua-service-reads", &cfg, 2).await;
    let mut differ = haproxy::Differences::default();
    for req in [
        "POST /x HTTP/1.1\r\nhost: h\r\ncontent-length: 18\r\nconnection: close\r\n\r\nl1\nAB rest of body",
        "POST /x HTTP/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n3\r\nl1\n\r\nF\r\nAB rest of body\r\n0\r\n\r\n",
        "GET /x HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
    ] {
        let [h, s] = pair.both(0, req).await;
        if req.contains("content-length") {
            assert!(
                h.0.ends_with("line=[l1\n] two=[AB] rest=[ rest of body] more=[] len=18\n"),
                "{h:?}"
            );
        }
        differ.compare(req.lines().next().unwrap_or(req), &h, &s);
    }
    for req in ["hello\r\nabcdefg\nxyz", "one line only\n"] {
        let [h, s] = pair.both_as(1, req, true).await;
        if req.starts_with("hello") {
            assert!(h.0.starts_with("first=[hello\r\n]\ntwo=[ab]\nrest=[cdefg\nxyz] var=hello src=127.0.0.1\nafter=[]\n"), "{h:?}");
        }
        differ.compare(format!("tcp {req:?}"), &h, &s);
    }
    differ.assert_none();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_errors_go_to_the_proxys_log_as_in_haproxy() {
    if !haproxy::available() {
        return;
    }
    let cfg = logged_with(&["actions.lua", "services.lua"])
        + "frontend fe
    bind {fe0}
    log-format \"%f %b/%s %ST %ts %{+Q}r\"
    http-request lua.boom if { path /boom }
    http-request use-service lua.broken if { path /broken }
    default_backend be
frontend fe1
    bind {fe1}
    log-format \"%f %b/%s %ST %ts %{+Q}r %[var(txn.napsrc)]\"
    # No inspect-delay: the action may not wait, its yield fails.
    tcp-request content lua.napsrc
    default_backend be
backend be
    server s {srv}
";
    let pair = Pair::start("lua-error-log", &cfg, 2).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let mut differ = haproxy::Differences::default();
    for (fe, path) in [(0, "/boom"), (0, "/broken"), (1, "/napsrc")] {
        let req = get(path, "");
        let mut got = Vec::new();
        for i in 0..2 {
            let bytes = haproxy::exchange(pair.fronts[i][fe].addr(), req.as_bytes(), false).await;
            // The error's line, then the request's.
            let lines = pair.logs[i].take(2);
            got.push((String::from_utf8_lossy(&bytes).into_owned(), lines));
        }
        assert!(got[0].1[0].starts_with("Lua "), "{:?}", got[0]);
        differ.compare(path.to_string(), &got[0], &got[1]);
    }
    differ.assert_none();
}

/// Sends `req` on a new connection and reads until the answer ends
/// with `end` or the peer closes (the client stays open meanwhile, so
/// the server keeps its side open until the rules decided).
async fn read_until(addr: std::net::SocketAddr, req: &[u8], end: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(req).await.expect("send");
    let mut out = Vec::new();
    let mut chunk = [0u8; 1024];
    let read = async {
        while !out.ends_with(end) {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&chunk[..n]),
            }
        }
    };
    support::within(Duration::from_secs(10), "the answer", read).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_response_actions_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = logged_with(&["tcp_res.lua"]) + "defaults tcp
    mode tcp
    log global
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe_rw
    bind {fe0}
    log-format \"%f %b/%s %ts %B [%[var(txn.peek)]] [%[var(txn.rw)]] %[var(txn.after)] %[var(txn.real)]\"
    {REAL}
    default_backend be_rw
frontend fe_now
    bind {fe1}
    log-format \"%f %b/%s %ts %B %[var(txn.yielded)] %[var(txn.napped)] %[var(txn.real)]\"
    {REAL}
    default_backend be_now
frontend fe_deny
    bind {fe2}
    log-format \"%f %b/%s %ts %B %[var(txn.real)]\"
    {REAL}
    default_backend be_deny
backend be_rw
    # The actions wait (a sleep, a yield) within the delay, on the
    # server's answer once it came; the rule after them sees their edits.
    tcp-response inspect-delay 5s
    tcp-response content lua.res-peek if { res.len gt 0 } { var(txn.real) -m found }
    tcp-response content lua.res-rewrite bob if { res.len gt 0 } { var(txn.real) -m found }
    tcp-response content set-var(txn.after) res.len
    server s {srv}
backend be_now
    # No delay: a yield goes on at once, a sleep fails the action.
    tcp-response content lua.res-yield if { var(txn.real) -m found }
    tcp-response content lua.res-nap if { var(txn.real) -m found }
    server s {srv}
backend be_deny
    tcp-response inspect-delay 5s
    tcp-response content lua.res-deny if { res.len gt 0 } { var(txn.real) -m found }
    server s {srv}
";
    // The test's clients are told from the readiness probes, which send
    // nothing: only theirs run the Lua actions and are looked at.
    let cfg = cfg.replace(
        "{REAL}",
        "tcp-request inspect-delay 5s
    tcp-request content set-var(txn.real) str(real) if { req.len gt 0 }",
    );
    let pair = Pair::start("lua-tcp-res", &cfg, 3).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let req = b"GET / HTTP/1.1\r\nhost: h\r\n\r\n";
    let mut differ = haproxy::Differences::default();
    for (fe, end) in [(0, &b"END"[..]), (1, &b"ok"[..]), (2, &b"\n"[..])] {
        let mut got = Vec::new();
        for i in 0..2 {
            let answer = read_until(pair.fronts[i][fe].addr(), req, end).await;
            // The session ends (and is logged) once the client left;
            // a probe's line (no `real`) is passed over.
            let mut lines = Vec::new();
            while !lines
                .last()
                .is_some_and(|l: &String| l.ends_with(" real\n"))
            {
                let line = pair.logs[i].take(1).remove(0);
                if line.ends_with(" real\n") || line.starts_with("Lua ") {
                    lines.push(line);
                }
            }
            got.push((answer, lines));
        }
        match fe {
            0 => assert_eq!(
                got[0].0, "<HTTP/1.1 201 Lua\r\nx-tag: bob\r\nContent-length: 2\r\n\r\nEND",
                "{got:?}"
            ),
            1 => assert!(got[0].1[0].contains("aborting Lua processing"), "{got:?}"),
            _ => assert!(got[0].1[0].contains(" PD "), "{got:?}"),
        }
        differ.compare(format!("fe{fe}"), &got[0], &got[1]);
    }
    differ.assert_none();
}

/// The log lines up to the first that starts with `last`, that one
/// included.
fn log_lines_until(log: &support::syslog::Syslog, last: &str) -> Vec<String> {
    let mut lines = Vec::new();
    while !lines.last().is_some_and(|l: &String| l.starts_with(last)) {
        lines.push(log.take(1).remove(0));
    }
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_methods_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = logged_with(&["proxies.lua"])
        + "frontend fe
    bind {fe0}
    log-format \"%f %b/%s %ST %{+Q}r\"
    http-request use-service lua.px
frontend fe2
    bind {fe1}
    bind {fe2} name two
    log-format \"%f %ST\"
    http-request return status 200 content-type text/plain string ok
listen fe3
    bind {fe3}
    mode tcp
    log-format \"%f %b/%s %ts\"
    server main {srv} disabled
    server spare {srv} backup
backend bk
    server s1 127.0.0.1:1
    server b1 127.0.0.1:2 backup
";
    let pair = Pair::start("lua-proxy-methods", &cfg, 4).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let mut differ = haproxy::Differences::default();
    for op in ["none", "bkpause", "bkstop", "pause", "resume", "stop"] {
        let mut got = Vec::new();
        for i in 0..2 {
            let req = format!("GET /?{op} HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n");
            let answer = haproxy::exchange(pair.fronts[i][0].addr(), req.as_bytes(), false).await;
            // HAProxy's warnings of the changes, then the request's line.
            let line = log_lines_until(&pair.logs[i], "fe fe/");
            let body = String::from_utf8_lossy(&answer);
            let body = body.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
            got.push((body, line));
        }
        // (Whether the listeners refuse is not asked here: they are the
        // test's sockets too, which stay open.)
        match op {
            "pause" => assert!(got[0].0.contains("fe2=PAUSED"), "{got:?}"),
            "resume" => assert!(got[0].0.contains("fe2=OPEN"), "{got:?}"),
            "stop" => assert!(got[0].0.contains("fe2=STOP"), "{got:?}"),
            _ => assert!(got[0].0.contains("listeners=sock-1,two"), "{got:?}"),
        }
        differ.compare(op.to_string(), &got[0], &got[1]);
    }
    // `shut_bcksess`: the session `fe3`'s backup server serves is shut.
    let mut got = Vec::new();
    for i in 0..2 {
        let mut s = TcpStream::connect(pair.fronts[i][3].addr())
            .await
            .expect("connect");
        s.write_all(b"GET / HTTP/1.1\r\nhost: h\r\n\r\n")
            .await
            .expect("send");
        let mut out = Vec::new();
        let mut chunk = [0u8; 512];
        while !out.ends_with(b"ok") {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&chunk[..n]),
            }
        }
        let req = b"GET /?shut HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n";
        let answer = haproxy::exchange(pair.fronts[i][0].addr(), req, false).await;
        let mut rest = Vec::new();
        support::within(
            Duration::from_secs(10),
            "the close",
            s.read_to_end(&mut rest),
        )
        .await
        .ok();
        // The service's line and the session's, in either order (sluice
        // logs the session as it is cut, HAProxy a moment later).
        let mut lines = Vec::new();
        while lines.len() < 2 {
            let line = pair.logs[i].take(1).remove(0);
            if line.starts_with("fe fe/") || line.starts_with("fe3 ") {
                lines.push(line);
            }
        }
        lines.sort();
        let body = String::from_utf8_lossy(&answer);
        let body = body.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
        got.push((body, lines, rest));
    }
    // Shut by the script, not by a timeout.
    assert_eq!(got[0].1[1], "fe3 fe3/spare K-\n", "{got:?}");
    // A known difference: HAProxy ends a session its server's sessions
    // were shut on as killed (`K-`), sluice as `--` (the CLI's `shutdown
    // sessions server` alike).
    got[1].1[1] = got[1].1[1].replace(" --", " K-");
    differ.compare("shut_bcksess".to_string(), &got[0], &got[1]);
    differ.assert_none();
}
