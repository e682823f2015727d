//! Request bodies against the real HAProxy 2.6: `option
//! http-buffer-request`, `http-request wait-for-body` and the `req.body*`
//! fetches. The same configuration runs under both, the same bytes are
//! sent, and the answers, the log lines and what the server received
//! must be equal.
//!
//! A body sent in two parts has its second part sent a moment after the
//! first (`GAP`): a proxy that waits for the body answers with both parts
//! whatever the moment; one that does not wait answers with the first
//! part only, which the gap makes near certain. The gap decides nothing a
//! correct proxy does, so it is no synchronisation.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::haproxy::{self, Differences, Pair};
use support::*;

const GAP: Duration = Duration::from_millis(150);

/// Every body fetch, in one answer; `txn.c` is set from `req.body_param(c)`
/// by `set-var`.
const FETCHES: &str = "[%[req.body]] len=%[req.body_len] size=%[req.body_size] b=[%[req.body_param(b)]] any=[%[req.body_param]] hex=[%[req.body,hex,bytes(0,16)]] c=[%[var(txn.c)]] expect=[%[req.hdr(expect)]] expects=%[req.hdr_cnt(expect)]";

fn config() -> String {
    format!(
        "global
    log {{log}} format raw local0 info
defaults
    mode http
    log global
    option dontlognull
    log-format \"%ST %B %tsc %TR %b %s\"
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend nobuf
    bind {{fe0}}
    http-request set-var(txn.c) req.body_param(c)
    http-request return status 200 content-type text/plain lf-string \"{FETCHES}\"
frontend buf
    bind {{fe1}}
    option http-buffer-request
    http-request set-var(txn.c) req.body_param(c)
    http-request return status 200 content-type text/plain lf-string \"{FETCHES}\"
frontend route
    bind {{fe2}}
    option http-buffer-request
    use_backend two if {{ req.body -m sub route=2 }}
    use_backend three if {{ req.body_param -m str 3 }}
    default_backend srv
backend two
    http-request return status 200 content-type text/plain string two
backend three
    http-request return status 200 content-type text/plain string three
backend srv
    server s1 {{srv}}
frontend wait
    bind {{fe3}}
    timeout http-request 300ms
    option http-buffer-request
    http-request return status 200 content-type text/plain lf-string \"len=%[req.body_len]\"
frontend action
    bind {{fe4}}
    http-request wait-for-body time 300ms if {{ path /wait }}
    http-request wait-for-body time 2s at-least 3 if {{ path /least }}
    http-request return status 200 content-type text/plain lf-string \"len=%[req.body_len] expect=[%[req.hdr(expect)]] expects=%[req.hdr_cnt(expect)]\"
frontend late
    bind {{fe5}}
    http-request set-var(txn.fe) req.body_len
    default_backend buffered
backend buffered
    option http-buffer-request
    timeout http-request 300ms
    http-request return status 200 content-type text/plain lf-string \"fe=%[var(txn.fe)] be=%[req.body_len]\"
"
    )
}

fn post(head_fields: &str) -> String {
    format!("POST /form HTTP/1.1\r\nhost: x\r\nconnection: close\r\n{head_fields}\r\n")
}

fn chunked(chunks: &[&[u8]]) -> Vec<u8> {
    let mut out = post("transfer-encoding: chunked\r\n").into_bytes();
    for c in chunks {
        out.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        out.extend_from_slice(c);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

fn with_length(body: &[u8]) -> Vec<u8> {
    let mut out = post(&format!("content-length: {}\r\n", body.len())).into_bytes();
    out.extend_from_slice(body);
    out
}

/// The requests every fetch is compared on, each sent whole.
fn whole_requests() -> Vec<(&'static str, Vec<u8>)> {
    let big = vec![b'a'; 20000];
    let thousand = vec![b'z'; 1000];
    vec![
        ("form, content-length", with_length(b"a=1&b=2;c=3")),
        ("form, chunked", chunked(&[b"a=1&", b"b=2;c=3"])),
        (
            "names without values, repeated",
            with_length(b"b&x=1;b=2&c=3&c=4"),
        ),
        ("an empty value", with_length(b"a=1&b=")),
        ("empty, content-length", with_length(b"")),
        ("empty, chunked", chunked(&[])),
        (
            "no body",
            b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".to_vec(),
        ),
        ("larger than the buffer, content-length", with_length(&big)),
        ("larger than the buffer, one chunk", chunked(&[&big])),
        (
            "larger than the buffer, many chunks",
            chunked(&[&thousand[..]; 20]),
        ),
    ]
}

/// Reads one answer (its head and a body of its `content-length`, after
/// the interim answers before it), or what came before the peer closed.
async fn read_answer(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    // Where the final answer starts: after any interim (1xx) one.
    let mut start = 0;
    loop {
        if let Some(end) = got[start..]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|e| start + e)
        {
            if got[start..].starts_with(b"HTTP/1.1 1") {
                start = end + 4;
                continue;
            }
            let head = String::from_utf8_lossy(&got[start..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if got.len() >= end + 4 + len {
                break;
            }
        }
        match within(Duration::from_secs(10), "the answer", s.read(&mut buf)).await {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// Sends `first`, then `rest` after [`GAP`] unless `rest` is None (the
/// answer is then read right after `first`), and reads the answer.
async fn talk(addr: SocketAddr, first: &[u8], rest: Option<&[u8]>) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.set_nodelay(true).expect("nodelay");
    s.write_all(first).await.expect("send");
    if let Some(rest) = rest {
        tokio::time::sleep(GAP).await;
        // The proxy may have answered and closed already.
        let _ = s.write_all(rest).await;
    }
    read_answer(&mut s).await
}

/// The log line with the request time masked when it is a time (it is
/// compared when it is -1: no complete request).
fn masked(line: &str) -> String {
    let mut f: Vec<String> = line.split(' ').map(str::to_string).collect();
    if let Some(tr) = f.get_mut(3)
        && tr != "-1"
    {
        *tr = "<TR>".to_string();
    }
    f.join(" ")
}

/// Each proxy's answer, log line and server's bytes for one exchange on
/// frontend `n`.
async fn both(
    pair: &Pair,
    n: usize,
    first: &[u8],
    rest: Option<&[u8]>,
) -> [(String, String, String); 2] {
    let mut out: [(String, String, String); 2] = Default::default();
    for (i, o) in out.iter_mut().enumerate() {
        let answer = talk(pair.fronts[i][n].addr(), first, rest).await;
        let line = masked(&pair.logs[i].take(1).remove(0));
        let got = String::from_utf8_lossy(&pair.servers[i].take()).into_owned();
        *o = (answer, line, got);
    }
    out
}

/// `text` with each run of more than 16 of the same byte told by its
/// length, so that the differences of large bodies can be read.
fn short(text: &str) -> String {
    let mut out = String::new();
    let b: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < b.len() {
        let run = b[i..].iter().take_while(|&&c| c == b[i]).count();
        if run > 16 {
            out.push_str(&format!("<{run}x{}>", b[i]));
        } else {
            out.extend(&b[i..i + run]);
        }
        i += run;
    }
    out
}

fn compare(d: &mut Differences, label: &str, [h, s]: &[(String, String, String); 2]) {
    d.compare(format!("{label}: answer"), &short(&h.0), &short(&s.0));
    d.compare(format!("{label}: log line"), &h.1, &s.1);
    d.compare(format!("{label}: server got"), &short(&h.2), &short(&s.2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_fetches_give_haproxys_values() {
    if !haproxy::available() {
        return;
    }
    let pair = Pair::start("body-fetches", &config(), 6).await;
    let mut d = Differences::default();
    for (label, req) in whole_requests() {
        for n in [0, 1] {
            let got = both(&pair, n, &req, None).await;
            assert!(got[0].0.starts_with("HTTP/1.1 200"), "haproxy on {label}");
            compare(&mut d, &format!("{label} (frontend {n})"), &got);
        }
    }
    // Sent in two parts: without the option the rules see the first part
    // (the answer is read before the rest is sent); with it, both.
    for (label, req, at) in [
        (
            "form in two parts, content-length",
            with_length(b"a=1&b=2;c=3"),
            4,
        ),
        (
            "form in two parts, chunked",
            chunked(&[b"a=1&", b"b=2;c=3"]),
            9,
        ),
    ] {
        let cut = req.windows(4).position(|w| w == b"\r\n\r\n").expect("head") + 4 + at;
        let (first, rest) = req.split_at(cut);
        let got = both(&pair, 0, first, None).await;
        compare(&mut d, &format!("{label}, not waited for"), &got);
        let got = both(&pair, 1, first, Some(rest)).await;
        assert!(got[0].0.contains("c=[3]"), "haproxy waited: {}", got[0].0);
        compare(&mut d, &format!("{label}, waited for"), &got);
    }
    d.assert_none();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routing_on_the_body_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let pair = Pair::start("body-route", &config(), 6).await;
    let mut d = Differences::default();
    for (label, body) in [
        ("route=2 in the body", &b"x=1&route=2"[..]),
        ("a parameter of value 3, not the first", b"a=1&b=3"),
        ("neither: the server, which gets the body", b"a=1&b=2"),
    ] {
        let req = with_length(body);
        // The body comes after the head: the choice waits for it.
        let cut = req.len() - body.len() + 2;
        let (first, rest) = req.split_at(cut);
        let got = both(&pair, 2, first, Some(rest)).await;
        compare(&mut d, label, &got);
    }
    // A client that waits for `100 Continue` before its body: HAProxy
    // answers it while it waits, and the server does not see the field.
    let req = with_length(b"a=1&b=2");
    let (first, rest) = req.split_at(req.len() - 7);
    let first =
        String::from_utf8_lossy(first).replace("\r\n\r\n", "\r\nexpect: 100-continue\r\n\r\n");
    compare(
        &mut d,
        "Expect: 100-continue, the body after the 100",
        &both(&pair, 2, first.as_bytes(), Some(rest)).await,
    );
    // The rules after a wait no longer see the field HAProxy took out
    // when it answered it (nor do those of a proxy that did not wait).
    for (n, path) in [(0, "/form"), (1, "/form"), (4, "/wait")] {
        let first = first.replace("/form", path);
        let got = both(&pair, n, first.as_bytes(), Some(rest)).await;
        // Not a comparison of nothing: haproxy took the field out where
        // it waited, and only there.
        let kept = if n == 0 {
            "expect=[100-continue]"
        } else {
            "expect=[]"
        };
        assert!(got[0].0.contains(kept), "frontend {n}: {}", got[0].0);
        compare(
            &mut d,
            &format!("Expect: 100-continue, the body after the 100, frontend {n} {path}"),
            &got,
        );
    }
    let req = chunked(&[b"a=1&", b"route=2"]);
    let cut = req.len() - 12;
    let (first, rest) = req.split_at(cut);
    compare(
        &mut d,
        "chunked, route=2 in its second chunk",
        &both(&pair, 2, first, Some(rest)).await,
    );
    d.assert_none();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_does_not_come_gets_haproxys_408() {
    if !haproxy::available() {
        return;
    }
    let pair = Pair::start("body-408", &config(), 6).await;
    let mut d = Differences::default();
    let head = post("content-length: 11\r\n");
    let part = format!("{head}a=1&");
    for (label, n, req) in [
        ("option http-buffer-request", 3, part.replace("/form", "/x")),
        ("wait-for-body time", 4, part.replace("/form", "/wait")),
        // Enough for `at-least 3`: answered at once, closed after.
        ("wait-for-body at-least", 4, part.replace("/form", "/least")),
        ("a backend's option", 5, part.clone()),
    ] {
        let got = both(&pair, n, req.as_bytes(), None).await;
        compare(&mut d, label, &got);
    }
    d.assert_none();
}

#[test]
fn wait_for_body_is_parsed_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let base = "defaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    timeout connect 1s\nfrontend f\n    bind 127.0.0.1:0\n";
    let cases = [
        "http-request wait-for-body time 1s at-least 1k",
        "http-request wait-for-body at-least 10 time 10ms",
        "http-request wait-for-body",
        "http-request wait-for-body time",
        "http-request wait-for-body time 1x",
        "http-request wait-for-body time 1s at-least",
        "http-request wait-for-body time 1s at-least 3q",
        "http-request wait-for-body at-least 5",
        "http-request wait-for-body time 1s foo",
        "http-response wait-for-body time 1s at-least 2 bar",
        "http-response wait-for-body time 1x",
        "option http-buffer-request x",
        "option http-buffer-request",
        "no option http-buffer-request",
        "http-response set-header x %[req.body]",
        "http-request set-header x %[res.body]",
        "http-request set-var(txn.x) req.body_param(a,i)",
        "http-request set-var(txn.x) req.body_len(1)",
    ]
    .map(|c| (c.to_string(), format!("{base}    {c}\n")));
    // The first alert from the end of its place (`]: ` or `] : `, which
    // HAProxy words differently by message) on: the file names differ.
    let alert = |stderr: &str| {
        stderr
            .lines()
            .find_map(|l| l.split_once("parsing [").map(|(_, r)| r))
            .and_then(|r| r.find(']').map(|i| r[i..].to_string()))
            .unwrap_or_else(|| "(accepted)".to_string())
    };
    haproxy::assert_check_agrees("body-check", cases, alert);
}

/// A server whose answers' bodies come as the path says: `/whole` at
/// once, `/late` a part with the head and the rest after [`GAP`],
/// `/never` a part and then nothing for 3 s, `/chunked` in two chunks at
/// once.
async fn late_server() -> SocketAddr {
    tcp_server(|mut s| async move {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 4096];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        let path = String::from_utf8_lossy(&got)
            .split(' ')
            .nth(1)
            .unwrap_or("")
            .to_string();
        let head = b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n";
        let (first, rest, pause): (Vec<u8>, &[u8], Duration) = match path.as_str() {
            "/late" => ([&head[..], b"a=1&"].concat(), b"b=2;c=3", GAP),
            "/never" => (
                [&head[..], b"a=1&"].concat(),
                b"",
                Duration::from_secs(3),
            ),
            "/chunked" => (
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\na=1&\r\n7\r\nb=2;c=3\r\n0\r\n\r\n".to_vec(),
                b"",
                Duration::ZERO,
            ),
            _ => ([&head[..], b"a=1&b=2;c=3"].concat(), b"", Duration::ZERO),
        };
        let _ = s.write_all(&first).await;
        tokio::time::sleep(pause).await;
        let _ = s.write_all(rest).await;
        let _ = s.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_bodies_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let server = late_server().await;
    let cfg = |fronts: &[Listen], log: &str| {
        let rule = "http-response set-header x-body \"[%[res.body]] len=%[res.body_len] size=%[res.body_size]\"";
        format!(
            "global
    log {log} format raw local0 info
defaults
    mode http
    log global
    option dontlognull
    log-format \"%ST %B %tsc %Tr %b %s\"
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend nowait
    bind {}
    default_backend nowait
backend nowait
    {rule}
    server s1 {server}
frontend wait
    bind {}
    default_backend wait
backend wait
    http-response wait-for-body time 2s
    {rule}
    server s1 {server}
frontend short
    bind {}
    default_backend short
backend short
    http-response wait-for-body time 300ms if {{ res.hdr(content-length) -m found }}
    {rule}
    server s1 {server}
",
            fronts[0], fronts[1], fronts[2]
        )
    };
    let fronts = [listens(3), listens(3)];
    let logs = [
        support::syslog::Syslog::new(),
        support::syslog::Syslog::new(),
    ];
    let refs: Vec<&Listen> = fronts[0].iter().collect();
    let _hap = haproxy::Haproxy::start("body-res", &cfg(&fronts[0], &logs[0].addr()), &refs);
    let _sl = Sluice::start(&cfg(&fronts[1], &logs[1].addr()));
    let mut d = Differences::default();
    for (n, path) in [
        (0, "/whole"),
        (0, "/late"),
        (0, "/chunked"),
        (1, "/whole"),
        (1, "/late"),
        (1, "/chunked"),
        (2, "/chunked"),
        (2, "/never"),
    ] {
        let req = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
        let mut got = Vec::new();
        for i in 0..2 {
            let answer = talk(fronts[i][n].addr(), req.as_bytes(), None).await;
            let line = masked(&logs[i].take(1).remove(0));
            got.push((answer, line));
        }
        let label = format!("{path} (frontend {n})");
        d.compare(format!("{label}: answer"), &got[0].0, &got[1].0);
        d.compare(format!("{label}: log line"), &got[0].1, &got[1].1);
    }
    d.assert_none();
}

/// Byte `i` of a body of the edge tests: the same under both proxies.
fn edge_byte(i: usize) -> u8 {
    (i % 251) as u8
}

/// Reads one message head (up to its blank line) from `s` after the
/// `pending` bytes already read; None at the end of the stream.
async fn read_message_head(s: &mut TcpStream, pending: &mut Vec<u8>) -> Option<String> {
    let mut buf = vec![0u8; 65536];
    loop {
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).into_owned();
            pending.drain(..end + 4);
            return Some(head);
        }
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
        }
    }
}

fn length_of(head: &str) -> usize {
    head.to_ascii_lowercase()
        .lines()
        .find_map(|l| {
            l.strip_prefix("content-length:")
                .map(|v| v.trim().to_string())
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A keep-alive server for the edge tests: each request's body is read
/// whole (its length and a checksum go back in `x-got`), and the answer
/// is a body of the size the path names (`/size/<n>`), head and body in
/// one write, so that the proxy finds them together in its socket.
async fn edge_server() -> SocketAddr {
    tcp_server(|mut s| async move {
        let mut pending = Vec::new();
        let mut buf = vec![0u8; 65536];
        while let Some(head) = read_message_head(&mut s, &mut pending).await {
            let want = length_of(&head);
            while pending.len() < want {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => pending.extend_from_slice(&buf[..n]),
                }
            }
            let body: Vec<u8> = pending.drain(..want).collect();
            let intact = body.iter().enumerate().all(|(i, b)| *b == edge_byte(i));
            let size: usize = head
                .split(' ')
                .nth(1)
                .and_then(|p| p.strip_prefix("/size/"))
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let mut answer = format!(
                "HTTP/1.1 200 OK\r\nx-got: {} {intact}\r\ncontent-length: {size}\r\n\r\n",
                body.len()
            )
            .into_bytes();
            answer.extend((0..size).map(edge_byte));
            if s.write_all(&answer).await.is_err() {
                return;
            }
        }
    })
    .await
}

/// Bodies around the 16 KiB read buffer's edge, each way, with the next
/// request pipelined behind an upload in the same write: what a read
/// brings past a body is the next message's, and both proxies answer the
/// same bytes. (sluice reads the rest of a body that filled its buffer
/// without waiting, to send it in one write: the bytes must not change.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_across_the_buffer_edge_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let server = edge_server().await;
    let cfg = |front: &Listen| {
        format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {front}
    default_backend be
backend be
    server s1 {server}
"
        )
    };
    let fronts = [listens(1), listens(1)];
    let _hap = haproxy::Haproxy::start("body-edge", &cfg(&fronts[0][0]), &[&fronts[0][0]]);
    let _sl = Sluice::start(&cfg(&fronts[1][0]));
    // (upload size, answer sizes of the requests pipelined behind it)
    let cases: [(usize, &[usize]); 4] = [
        (20_000, &[16_000, 16_384, 16_500]),
        (16_384, &[33_000, 100]),
        (16_300, &[40_000, 16_384 - 40]),
        (70_000, &[70_000, 16_400]),
    ];
    let mut d = Differences::default();
    for (upload, answers) in cases {
        let mut wire = format!(
            "POST /size/{} HTTP/1.1\r\nhost: x\r\ncontent-length: {upload}\r\n\r\n",
            answers[0]
        )
        .into_bytes();
        wire.extend((0..upload).map(edge_byte));
        for (i, size) in answers.iter().enumerate().skip(1) {
            let close = if i + 1 == answers.len() {
                "connection: close\r\n"
            } else {
                ""
            };
            wire.extend(format!("GET /size/{size} HTTP/1.1\r\nhost: x\r\n{close}\r\n").bytes());
        }
        let mut got = Vec::new();
        for front in &fronts {
            let mut s = TcpStream::connect(front[0].addr()).await.expect("connect");
            s.write_all(&wire).await.expect("send");
            let mut pending = Vec::new();
            let mut summary = Vec::new();
            for size in answers.iter() {
                let Some(head) = within(
                    Duration::from_secs(10),
                    "an answer",
                    read_message_head(&mut s, &mut pending),
                )
                .await
                else {
                    summary.push("closed".to_string());
                    break;
                };
                let len = length_of(&head);
                let mut buf = vec![0u8; 65536];
                while pending.len() < len {
                    match within(Duration::from_secs(10), "a body", s.read(&mut buf)).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => pending.extend_from_slice(&buf[..n]),
                    }
                }
                let body: Vec<u8> = pending.drain(..len.min(pending.len())).collect();
                let intact =
                    body.len() == *size && body.iter().enumerate().all(|(i, b)| *b == edge_byte(i));
                summary.push(format!("{head}\n[{} bytes, intact {intact}]", body.len()));
            }
            got.push(summary.join("\n"));
        }
        assert!(
            got[1].contains(&format!("x-got: {upload} true")),
            "sluice: the upload of {upload} bytes did not arrive whole:\n{}",
            got[1]
        );
        assert!(
            !got[1].contains("intact false") && !got[1].contains("closed"),
            "{}",
            got[1]
        );
        d.compare(
            format!("upload {upload}, answers {answers:?}"),
            &got[0],
            &got[1],
        );
    }
    d.assert_none();
}
