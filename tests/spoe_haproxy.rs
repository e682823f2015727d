//! SPOE (`filter spoe`, the SPOE configuration file, `send-spoe-group`)
//! against the real HAProxy 2.6: the same configuration under both, in
//! front of an SPOA agent written here from the protocol's description
//! (HAProxy's `doc/SPOE.txt`, SPOP 2.0). The agent answers each message
//! with variables computed from its arguments, the rules answer with
//! those variables, and the answers are compared byte for byte; the
//! agent also records the messages it got, compared too.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use support::haproxy::{self, Haproxy};
use support::*;

fn varint(b: &mut &[u8]) -> u64 {
    let first = b[0];
    *b = &b[1..];
    let mut v = u64::from(first);
    if v < 240 {
        return v;
    }
    let mut shift = 4;
    loop {
        let c = b[0];
        *b = &b[1..];
        v += u64::from(c) << shift;
        shift += 7;
        if c < 128 {
            return v;
        }
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    if v < 240 {
        out.push(v as u8);
        return;
    }
    out.push((v | 240) as u8);
    v = (v - 240) >> 4;
    while v >= 128 {
        out.push((v | 128) as u8);
        v = (v - 128) >> 7;
    }
    out.push(v as u8);
}

fn string<'a>(b: &mut &'a [u8]) -> &'a [u8] {
    let n = varint(b) as usize;
    let (s, rest) = b.split_at(n);
    *b = rest;
    s
}

fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// A typed value, printed as the agent reports it.
fn data(b: &mut &[u8]) -> String {
    let t = b[0];
    *b = &b[1..];
    match t & 0x0f {
        0 => "null".into(),
        1 => format!("bool:{}", t & 0x10 != 0),
        2 => format!("int:{}", varint(b) as u32 as i32),
        3 => format!("uint:{}", varint(b) as u32),
        4 => format!("int:{}", varint(b) as i64),
        5 => format!("uint:{}", varint(b)),
        6 => {
            let a = std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3]);
            *b = &b[4..];
            format!("ipv4:{a}")
        }
        7 => {
            let mut o = [0u8; 16];
            o.copy_from_slice(&b[..16]);
            *b = &b[16..];
            format!("ipv6:{}", std::net::Ipv6Addr::from(o))
        }
        8 => format!("str:{}", String::from_utf8_lossy(string(b))),
        9 => format!("bin:{:?}", string(b)),
        t => panic!("type {t}"),
    }
}

fn frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut n = [0u8; 4];
    s.read_exact(&mut n).ok()?;
    let mut f = vec![0u8; u32::from_be_bytes(n) as usize];
    s.read_exact(&mut f).ok()?;
    Some(f)
}

fn send(s: &mut TcpStream, kind: u8, ids: (u64, u64), payload: &[u8]) -> bool {
    let mut f = vec![kind, 0, 0, 0, 1];
    put_varint(&mut f, ids.0);
    put_varint(&mut f, ids.1);
    f.extend_from_slice(payload);
    let mut out = (f.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&f);
    s.write_all(&out).is_ok()
}

/// `set-var(<scope>, <name>, <string>)` of an ACK.
fn set_var(out: &mut Vec<u8>, scope: u8, name: &str, value: &str) {
    out.extend_from_slice(&[1, 3, scope]);
    put_string(out, name.as_bytes());
    out.push(8);
    put_string(out, value.as_bytes());
}

/// The agent: HELLO answered, then each NOTIFY answered with variables
/// made of its messages' arguments; the messages it got are recorded,
/// each with its frame id (a stream's frames are numbered from 1 per
/// engine, by haproxy and sluice alike; the stream ids are not compared:
/// haproxy numbers its streams with its own internal ones).
struct Agent {
    addr: std::net::SocketAddr,
    got: Arc<Mutex<Vec<String>>>,
    /// The HELLO frames, the engine id left out (a random UUID).
    hellos: Arc<Mutex<Vec<String>>>,
    /// For each frame held (a `/hold` path), whether its ACK went out
    /// after a later frame's on the connection it came on (pipelined)
    /// rather than on another (asynchronous).
    held: Arc<Mutex<Vec<bool>>>,
}

/// A frame whose ACK waits: the connection it came on, its ids and the
/// ACK's payload.
type Held = (usize, (u64, u64), Vec<u8>);

/// A fragmented NOTIFY so far: its ids, payload and each frame's size.
type Fragments = ((u64, u64), Vec<u8>, Vec<usize>);

/// What the connections of one agent share.
#[derive(Clone)]
struct Shared {
    caps: &'static str,
    /// The frame size the AGENT-HELLO gives: HAProxy's own (an agent
    /// that takes what it is offered) when None.
    frame_size: Option<u64>,
    seen: Arc<Mutex<Vec<String>>>,
    hellos: Arc<Mutex<Vec<String>>>,
    held: Arc<Mutex<Vec<bool>>>,
    /// A frame whose ACK waits for the next frame: its connection, ids
    /// and ACK payload.
    waiting: Arc<Mutex<Option<Held>>>,
}

impl Agent {
    fn start() -> Agent {
        Agent::with_caps("")
    }

    /// An agent announcing `caps` in its AGENT-HELLO.
    fn with_caps(caps: &'static str) -> Agent {
        Agent::with(caps, Some(16380))
    }

    fn with(caps: &'static str, frame_size: Option<u64>) -> Agent {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let shared = Shared {
            caps,
            frame_size,
            seen: Arc::default(),
            hellos: Arc::default(),
            held: Arc::default(),
            waiting: Arc::default(),
        };
        let agent = Agent {
            addr,
            got: shared.seen.clone(),
            hellos: shared.hellos.clone(),
            held: shared.held.clone(),
        };
        std::thread::spawn(move || {
            for (n, s) in l.incoming().enumerate() {
                let Ok(s) = s else { return };
                let shared = shared.clone();
                std::thread::spawn(move || serve(s, n, &shared));
            }
        });
        agent
    }

    fn got(&self) -> Vec<String> {
        self.got.lock().expect("lock").clone()
    }

    /// Waits until the agent recorded a message containing `what`.
    async fn wait_for(&self, what: &str) {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !self.got().iter().any(|m| m.contains(what)) {
            assert!(
                std::time::Instant::now() < end,
                "the agent never got {what}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
}

fn serve(mut s: TcpStream, conn: usize, shared: &Shared) {
    let seen = &shared.seen;
    let mut parts: Option<Fragments> = None;
    while let Some(f) = frame(&mut s) {
        let mut kind = f[0];
        let fin = f[4] & 1 != 0;
        let mut b = &f[5..];
        let mut stream_id = varint(&mut b);
        let mut frame_id = varint(&mut b);
        let whole;
        if kind == 3 && !fin {
            parts = Some(((stream_id, frame_id), b.to_vec(), vec![b.len()]));
            continue;
        }
        if kind == 0 {
            let Some((ids, mut got, mut sizes)) = parts.take() else {
                return;
            };
            assert_eq!(ids, (stream_id, frame_id), "a fragment of another frame");
            got.extend_from_slice(b);
            sizes.push(b.len());
            if !fin {
                parts = Some((ids, got, sizes));
                continue;
            }
            let n = sizes.len();
            seen.lock()
                .expect("lock")
                .push(format!("#{} in {n} frames: {sizes:?}", ids.1));
            (kind, (stream_id, frame_id)) = (3, ids);
            whole = got;
            b = &whole;
        }
        match kind {
            // HAPROXY-HELLO: AGENT-HELLO.
            1 => {
                let mut items = Vec::new();
                let mut offered = 16380;
                while !b.is_empty() {
                    let k = String::from_utf8_lossy(string(&mut b)).into_owned();
                    let v = data(&mut b);
                    if k == "max-frame-size" {
                        offered = v.trim_start_matches("uint:").parse().unwrap_or(0);
                    }
                    if k != "engine-id" {
                        items.push(format!("{k}={v}"));
                    }
                }
                shared.hellos.lock().expect("lock").push(items.join(" "));
                let mut p = Vec::new();
                put_string(&mut p, b"version");
                p.push(8);
                put_string(&mut p, b"2.0");
                put_string(&mut p, b"max-frame-size");
                p.push(3);
                put_varint(&mut p, shared.frame_size.unwrap_or(offered));
                put_string(&mut p, b"capabilities");
                p.push(8);
                put_string(&mut p, shared.caps.as_bytes());
                if !send(&mut s, 101, (0, 0), &p) {
                    return;
                }
            }
            // NOTIFY: its messages, and an ACK.
            3 => {
                let mut ack = Vec::new();
                let (mut close, mut bye, mut hold, mut mute) = (false, false, false, false);
                while !b.is_empty() {
                    let name = String::from_utf8_lossy(string(&mut b)).into_owned();
                    let n = b[0];
                    b = &b[1..];
                    let mut args = Vec::new();
                    for _ in 0..n {
                        let k = String::from_utf8_lossy(string(&mut b)).into_owned();
                        args.push((k, data(&mut b)));
                    }
                    let line = format!(
                        "{name}({})",
                        args.iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(",")
                    );
                    seen.lock()
                        .expect("lock")
                        .push(format!("#{frame_id} {line}"));
                    let arg = |k: &str| {
                        args.iter()
                            .find(|(n, _)| n == k)
                            .map_or(String::new(), |(_, v)| v.clone())
                    };
                    if arg("path").contains("/close") {
                        close = true;
                    }
                    // Answered, then the connection closed, as an agent's
                    // `timeout idle` would.
                    if arg("path").contains("/bye") {
                        bye = true;
                    }
                    // Answered after the next frame, wherever it comes.
                    if arg("path").contains("/hold") {
                        hold = true;
                    }
                    // Never answered: `timeout processing` ends the wait.
                    if arg("path").contains("/mute") {
                        mute = true;
                    }
                    match name.as_str() {
                        "check-client" => {
                            set_var(&mut ack, 2, "ip", &arg("ip"));
                            set_var(&mut ack, 2, "ua", &arg("ua"));
                            ack.extend_from_slice(&[1, 3, 2]);
                            put_string(&mut ack, b"score");
                            ack.push(2);
                            put_varint(&mut ack, arg("path").len() as u64);
                        }
                        "late-msg" => set_var(&mut ack, 3, "late", &arg("p")),
                        "resp-msg" => set_var(&mut ack, 4, "seen", &arg("status")),
                        // Any other: `txn.<prefix>.<message>` is the
                        // message as the agent got it (its length when
                        // long: an ACK fits in a frame).
                        // `proc.<prefix>.<message>`: the message's name.
                        n if n.starts_with("proc_") => set_var(&mut ack, 0, n, n),
                        _ if line.len() > 200 => {
                            set_var(&mut ack, 2, &name, &format!("{} bytes", line.len()));
                        }
                        _ => set_var(&mut ack, 2, &name, &line),
                    }
                }
                if close {
                    return;
                }
                if mute {
                    continue;
                }
                if hold {
                    *shared.waiting.lock().expect("lock") =
                        Some((conn, (stream_id, frame_id), ack));
                    continue;
                }
                if !send(&mut s, 103, (stream_id, frame_id), &ack) {
                    return;
                }
                // A frame held: answered now, after this later one.
                let held = shared.waiting.lock().expect("lock").take();
                if let Some((on, ids, ack)) = held {
                    shared.held.lock().expect("lock").push(on == conn);
                    if !send(&mut s, 103, ids, &ack) {
                        return;
                    }
                }
                if bye {
                    drop(s);
                    seen.lock().expect("lock").push("closed".to_string());
                    return;
                }
            }
            // HAPROXY-DISCONNECT: its status, and the end.
            2 => {
                let mut items = Vec::new();
                while !b.is_empty() {
                    let k = String::from_utf8_lossy(string(&mut b)).into_owned();
                    items.push(format!("{k}={}", data(&mut b)));
                }
                seen.lock()
                    .expect("lock")
                    .push(format!("disconnect {}", items.join(" ")));
                return;
            }
            _ => return,
        }
    }
}

const SPOE: &str = "[sec]
spoe-agent sec-agent
    messages check-client resp-msg
    groups grp
    option var-prefix sec
    option set-on-error err
    timeout hello 2s
    timeout idle 2m
    timeout processing 5s
    use-backend agents

spoe-message check-client
    args ip=src path=path ua=req.hdr(user-agent) n=int(7)
    event on-frontend-http-request if !{ path_beg /skip }

spoe-message resp-msg
    args status=status
    event on-http-response

spoe-group grp
    messages late-msg

spoe-message late-msg
    args p=path
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_answer_the_rules_as_under_haproxy() {
    if !haproxy::available() {
        return;
    }
    let requests = [
        "GET /a HTTP/1.1\r\nhost: h\r\nuser-agent: probe/1\r\nconnection: close\r\n\r\n",
        "GET /group/x HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
        "GET /skip HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
        "GET /close HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
        "GET /after HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
        "GET /bye HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
        "GET /again HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
    ];
    let mut answers = Vec::new();
    let mut messages = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let agent = Agent::start();
        let web = support::raw::RawBackend::start().await;
        let front2 = Listen::new();
        let dir = TempDir::new("spoe");
        let spoe = dir.write("spoe.conf", SPOE);
        let front = Listen::new();
        let cfg = format!(
            "defaults
    timeout client 5s
    timeout server 5s
    timeout connect 5s
frontend f
    mode http
    bind {front}
    filter spoe engine sec config {spoe}
    http-request send-spoe-group sec grp if {{ path_beg /group }}
    http-request return status 200 content-type text/plain lf-string \"score=%[var(txn.sec.score)] ip=%[var(txn.sec.ip)] ua=%[var(txn.sec.ua)] late=%[var(req.sec.late)] err=%[var(txn.sec.err)]\"
listen g
    mode http
    bind {front2}
    filter spoe engine sec config {spoe}
    http-response set-header x-seen \"%[var(res.sec.seen)] %[var(txn.sec.score)]\"
    server web {web}
backend agents
    mode tcp
    server a {agent}
",
            spoe = spoe.display(),
            agent = agent.addr,
            web = web.addr
        );
        let _h = (tool == "haproxy").then(|| Haproxy::start("spoe", &cfg, &[&front, &front2]));
        let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
        let mut got = Vec::new();
        for req in requests {
            if req.starts_with("GET /again") {
                // Once the agent closed the connection it answered on (its
                // FIN is then in the proxy's socket, whatever the threads'
                // timing).
                let closed = || {
                    agent
                        .got
                        .lock()
                        .expect("lock")
                        .iter()
                        .any(|m| m == "closed")
                };
                let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
                while !closed() {
                    assert!(std::time::Instant::now() < end, "the agent did not close");
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
            }
            let a = haproxy::exchange(front.addr(), req.as_bytes(), false).await;
            let text = String::from_utf8_lossy(&a).into_owned();
            got.push(
                text.split_once("\r\n\r\n")
                    .map_or(text.clone(), |(_, b)| b.to_string()),
            );
        }
        // Through a server: the response's event.
        let a = haproxy::exchange(
            front2.addr(),
            b"GET /web HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
            false,
        )
        .await;
        got.push(String::from_utf8_lossy(&a).into_owned());
        answers.push(got);
        messages.push(agent.got.lock().expect("lock").clone());
    }
    // Not vacuous: the agent's variables reached the rules.
    assert!(
        answers[0][0].contains("score=6 ip=ipv4:127.0.0.1 ua=str:probe/1"),
        "{:?}",
        answers[0]
    );
    assert!(
        answers[0][7].contains("x-seen: int:200 8"),
        "{:?}",
        answers[0][7]
    );
    let mut differ = haproxy::Differences::default();
    differ.compare("GET /web", &answers[0][7], &answers[1][7]);
    for (i, req) in requests.iter().enumerate() {
        differ.compare(
            req.lines().next().unwrap_or_default(),
            &answers[0][i],
            &answers[1][i],
        );
    }
    differ.compare("the agent's messages", &messages[0], &messages[1]);
    differ.assert_none();
}

const SPOE_RESPONSE: &str = "[sec]
spoe-agent sec-agent
    groups rgrp bgrp
    option var-prefix sec
    timeout hello 2s
    timeout idle 2m
    timeout processing 5s
    use-backend agents

spoe-message rspcheck
    args status=status srv=res.hdr(x-srv) p=var(txn.path)

spoe-message bemsg
    args s=status

spoe-group rgrp
    messages rspcheck

spoe-group bgrp
    messages bemsg
";

/// `http-response send-spoe-group`: the response's rules wait for the
/// agent, and the rules after it (the frontend's, the backend's) see
/// its variables, as under haproxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_rules_send_groups_as_under_haproxy() {
    if !haproxy::available() {
        return;
    }
    let answers_of_server: [&[u8]; 2] = [
        b"HTTP/1.1 200 OK\r\nx-srv: web-1\r\ncontent-length: 2\r\n\r\nok",
        b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\nno",
    ];
    let mut answers = Vec::new();
    let mut messages = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let agent = Agent::start();
        let web = support::raw::RawBackend::start().await;
        let dir = TempDir::new("spoe-res");
        let spoe = dir.write("spoe.conf", SPOE_RESPONSE);
        let front = Listen::new();
        let cfg = format!(
            "defaults
    timeout client 5s
    timeout server 5s
    timeout connect 5s
frontend f
    mode http
    bind {front}
    filter spoe engine sec config {spoe}
    http-request set-var(txn.path) path
    http-response send-spoe-group sec rgrp if {{ status 200 }}
    http-response set-header x-agent \"%[var(txn.sec.rspcheck)]|%[var(txn.sec.bemsg)]\"
    default_backend b
backend b
    mode http
    filter spoe engine sec config {spoe}
    http-response set-header x-before \"%[var(txn.sec.rspcheck)]\"
    http-response send-spoe-group sec bgrp
    server web {web}
backend agents
    mode tcp
    server a {agent}
",
            spoe = spoe.display(),
            agent = agent.addr,
            web = web.addr
        );
        let _h = (tool == "haproxy").then(|| Haproxy::start("spoe-res", &cfg, &[&front]));
        let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
        let mut got = Vec::new();
        for (n, answer) in answers_of_server.iter().enumerate() {
            web.answer(answer);
            let req = format!("GET /r{n} HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n");
            let a = haproxy::exchange(front.addr(), req.as_bytes(), false).await;
            got.push(String::from_utf8_lossy(&a).into_owned());
        }
        answers.push(got);
        messages.push(agent.got());
    }
    // Not vacuous: the agent's variables reached the later rules.
    assert!(
        answers[0][0]
            .contains("x-agent: rspcheck(status=int:200,srv=str:web-1,p=str:/r0)|bemsg(s=int:200)"),
        "{:?}",
        answers[0]
    );
    let mut differ = haproxy::Differences::default();
    for (i, (h, s)) in answers[0].iter().zip(&answers[1]).enumerate() {
        differ.compare(format!("answer {i}"), h, s);
    }
    differ.compare("the agent's messages", &messages[0], &messages[1]);
    differ.assert_none();
}

/// The `-c` messages of misused SPOE configurations are haproxy's.
#[test]
fn misuses_are_refused_as_haproxy_refuses_them() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("spoe-check");
    const HEAD: &str = "defaults\n  mode http\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\nbackend agents\n  mode tcp\n  server a 127.0.0.1:9\nfrontend f\n  bind 127.0.0.1:8\n";
    const GOOD_MSG: &str = "spoe-message m\n  args src\n  event on-frontend-http-request\n";
    let cases: Vec<(&str, String, String)> = vec![
        ("no file", "  filter spoe engine sec config /nonexistent/spoe.conf\n".into(), String::new()),
        ("no config", "  filter spoe engine sec\n".into(), String::new()),
        ("no agent in scope", "  filter spoe engine sec config {f}\n".into(), "[other]\nspoe-agent a\n  use-backend agents\n".into()),
        ("no backend", "  filter spoe engine sec config {f}\n".into(), format!("[sec]\nspoe-agent a\n  messages m\n{GOOD_MSG}")),
        ("undefined message", "  filter spoe engine sec config {f}\n".into(), "[sec]\nspoe-agent a\n  messages m\n  use-backend agents\n".into()),
        ("unknown backend", "  filter spoe engine sec config {f}\n".into(), format!("[sec]\nspoe-agent a\n  messages m\n  use-backend nope\n{GOOD_MSG}")),
        ("unknown group", "  filter spoe engine sec config {f}\n  http-request send-spoe-group sec nogrp\n".into(), format!("[sec]\nspoe-agent a\n  messages m\n  use-backend agents\n{GOOD_MSG}")),
        ("unknown keyword", "  filter spoe engine sec config {f}\n".into(), format!("[sec]\nspoe-agent a\n  messages m\n  use-backend agents\n  bogus\n{GOOD_MSG}")),
        ("unknown fetch", "  filter spoe engine sec config {f}\n".into(), "[sec]\nspoe-agent a\n  messages m\n  use-backend agents\nspoe-message m\n  args nope_fetch\n  event on-frontend-http-request\n".into()),
        ("group args", "  filter spoe engine sec config {f}\n  http-request send-spoe-group sec\n".into(), format!("[sec]\nspoe-agent a\n  messages m\n  use-backend agents\n{GOOD_MSG}")),
        ("tcp group args", "  filter spoe engine sec config {f}\n  tcp-request content send-spoe-group sec\n".into(), format!("[sec]\nspoe-agent a\n  messages m\n  use-backend agents\n{GOOD_MSG}")),
        ("tcp unknown group", "  filter spoe engine sec config {f}\n  tcp-request content send-spoe-group sec nogrp\n".into(), format!("[sec]\nspoe-agent a\n  messages m\n  use-backend agents\n{GOOD_MSG}")),
        ("tcp unknown engine", "  filter spoe engine sec config {f}\n  tcp-request content send-spoe-group other g\n".into(), format!("[sec]\nspoe-agent a\n  messages m\n  use-backend agents\n{GOOD_MSG}")),
        ("max-waiting-frames", "  filter spoe engine sec config {f}\n".into(), format!("[sec]\nspoe-agent a\n  messages m\n  max-waiting-frames 0\n  use-backend agents\n{GOOD_MSG}")),
        ("unknown event", "  filter spoe engine sec config {f}\n".into(), "[sec]\nspoe-agent a\n  messages m\n  use-backend agents\nspoe-message m\n  args src\n  event on-nothing\n".into()),
    ];
    let cfgs: Vec<(String, String)> = cases
        .iter()
        .enumerate()
        .map(|(i, (label, lines, spoe))| {
            let f = dir.write(&format!("spoe{i}.conf"), spoe);
            let lines = lines.replace("{f}", &f.display().to_string());
            (label.to_string(), format!("{HEAD}{lines}"))
        })
        .collect();
    haproxy::assert_check_agrees("spoe-check", cfgs, haproxy::config_messages);
}

/// An engine of a backend warns of its frontend events, as haproxy does.
#[test]
fn frontend_events_on_a_backend_are_warned_about_as_by_haproxy() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("spoe-warn");
    let spoe = dir.write(
        "spoe.conf",
        "[sec]\nspoe-agent a\n  messages cs fe be\n  use-backend agents\n  timeout hello 1s\n  timeout idle 1s\n  timeout processing 1s\nspoe-message cs\n  args src\n  event on-client-session\nspoe-message fe\n  args src\n  event on-frontend-tcp-request\nspoe-message be\n  args src\n  event on-backend-tcp-request\n",
    );
    let cfg = format!(
        "defaults\n  mode tcp\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\nbackend agents\n  server a 127.0.0.1:9\nbackend b\n  filter spoe engine sec config {}\n  server s 127.0.0.1:9\n",
        spoe.display()
    );
    haproxy::assert_check_agrees(
        "spoe-warn",
        [("backend engine".to_string(), cfg)],
        haproxy::config_messages,
    );
}

/// `req` sent from 127.0.0.2, and the answer to the server's close.
async fn exchange_from_2(to: std::net::SocketAddr, req: &[u8]) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let sock = tokio::net::TcpSocket::new_v4().expect("socket");
    sock.bind("127.0.0.2:0".parse().expect("addr"))
        .expect("bind 127.0.0.2");
    let mut s = sock.connect(to).await.expect("connect");
    s.write_all(req).await.expect("send");
    let mut out = Vec::new();
    let read = s.read_to_end(&mut out);
    tokio::time::timeout(std::time::Duration::from_secs(10), read)
        .await
        .ok();
    out
}

/// A TCP server that answers what it first reads, prefixed, and closes.
fn echo_server() -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut b = [0u8; 1024];
                let n = s.read(&mut b).unwrap_or(0);
                let _ = s.write_all(&[b"echo:", &b[..n]].concat());
            });
        }
    });
    addr
}

/// Every event, each message's argument the variable the previous
/// event's ACK set (so the agent's record shows which were set when),
/// and the groups `tcp-request content` and `tcp-response content` send.
/// Only for the test's clients, from 127.0.0.2: the readiness probes of
/// the TCP listeners make streams too.
const EVENTS: &str = "[sec]
spoe-agent a
    messages cs fetcp betcp ss tr fehttp behttp hr
    groups g1 g2
    option var-prefix sec
    option set-on-error err
    timeout hello 2s
    timeout idle 2m
    timeout processing 5s
    use-backend agents
spoe-message cs
    acl from_test src 127.0.0.2
    args src=src x=str(cs)
    event on-client-session if from_test
spoe-message fetcp
    acl from_test src 127.0.0.2
    args prev=var(txn.sec.cs)
    event on-frontend-tcp-request if from_test
spoe-message betcp
    acl from_test src 127.0.0.2
    args prev=var(txn.sec.fetcp)
    event on-backend-tcp-request if from_test
spoe-message ss
    acl from_test src 127.0.0.2
    args prev=var(txn.sec.betcp)
    event on-server-session if from_test
spoe-message tr
    acl from_test src 127.0.0.2
    args prev=var(txn.sec.ss)
    event on-tcp-response if from_test
spoe-message fehttp
    acl from_test src 127.0.0.2
    args prev=var(txn.sec.tr) path=path
    event on-frontend-http-request if from_test
spoe-message behttp
    acl from_test src 127.0.0.2
    args prev=var(txn.sec.fehttp)
    event on-backend-http-request if from_test
spoe-message hr
    acl from_test src 127.0.0.2
    args prev=var(txn.sec.behttp) st=status
    event on-http-response if from_test
spoe-group g1
    messages gm
spoe-group g2
    messages gr
spoe-message gm
    args prev=var(txn.sec.fetcp)
spoe-message gr
    args prev=var(txn.sec.tr)
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_and_tcp_events_as_under_haproxy() {
    if !haproxy::available() {
        return;
    }
    let mut answers = Vec::new();
    let mut messages = Vec::new();
    let mut hellos = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let agent = Agent::with_caps("pipelining,async");
        let web = support::raw::RawBackend::start().await;
        let echo = echo_server();
        let dir = TempDir::new("spoe-events");
        let spoe = dir.write("spoe.conf", EVENTS);
        let fronts: Vec<Listen> = (0..6).map(|_| Listen::new()).collect();
        let cfg = format!(
            "defaults
    timeout client 5s
    timeout server 5s
    timeout connect 5s
frontend ft
    mode tcp
    bind {f0}
    filter spoe engine sec config {spoe}
    default_backend bt
backend bt
    mode tcp
    filter spoe engine sec config {spoe}
    server s {echo}
frontend fh
    mode http
    bind {f1}
    filter spoe engine sec config {spoe}
    default_backend bh
backend bh
    mode http
    filter spoe engine sec config {spoe}
    http-response set-header x-err %[var(txn.sec.err)]
    server s {web}
listen lh
    mode http
    bind {f2}
    tcp-request inspect-delay 2s
    tcp-response inspect-delay 2s
    filter spoe engine sec config {spoe}
    tcp-request content send-spoe-group sec g1 if {{ src 127.0.0.2 }}
    tcp-response content send-spoe-group sec g2 if {{ src 127.0.0.2 }}
    http-response set-header x-err %[var(txn.sec.err)]
    server s {web}
listen interrupted
    mode http
    bind {f3}
    filter spoe engine sec config {spoe}
    tcp-request content send-spoe-group sec g1 if {{ src 127.0.0.2 }}
    http-response set-header x-err %[var(txn.sec.err)]
    server s {web}
listen lt
    mode tcp
    bind {f4}
    tcp-request inspect-delay 2s
    tcp-response inspect-delay 2s
    filter spoe engine sec config {spoe}
    tcp-request content send-spoe-group sec g1 if {{ src 127.0.0.2 }}
    tcp-response content send-spoe-group sec g2 if {{ src 127.0.0.2 }}
    server s {echo}
listen tcp_interrupted
    mode tcp
    bind {f5}
    filter spoe engine sec config {spoe}
    tcp-request content send-spoe-group sec g1 if {{ src 127.0.0.2 }}
    server s {echo}
backend agents
    mode tcp
    server a {agent}
",
            f5 = fronts[5],
            f0 = fronts[0],
            f1 = fronts[1],
            f2 = fronts[2],
            f3 = fronts[3],
            f4 = fronts[4],
            spoe = spoe.display(),
            agent = agent.addr,
            web = web.addr
        );
        let refs: Vec<&Listen> = fronts.iter().collect();
        let _h = (tool == "haproxy").then(|| Haproxy::start("spoe-events", &cfg, &refs));
        let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
        let mut got = Vec::new();
        for (i, f) in fronts.iter().enumerate() {
            let req: &[u8] = if [0, 4, 5].contains(&i) {
                b"hello"
            } else {
                b"GET /p HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n"
            };
            agent
                .got
                .lock()
                .expect("lock")
                .push(format!("-- front {i}"));
            let a = exchange_from_2(f.addr(), req).await;
            got.push(String::from_utf8_lossy(&a).into_owned());
        }
        answers.push(got);
        messages.push(agent.got());
        let mut h = agent.hellos.lock().expect("lock").clone();
        h.dedup();
        hellos.push(h);
    }
    // Not vacuous: the events came in order, each seeing the last one's
    // variable, and the groups went.
    let m = messages[0].join("\n");
    for want in [
        "#2 fetcp(prev=str:cs(src=ipv4:127.0.0.2,x=str:cs))",
        "#1 betcp(prev=str:fetcp(",
        "gm(prev=str:fetcp(",
        "gr(prev=str:tr(",
    ] {
        assert!(m.contains(want), "{want} in {m}");
    }
    assert!(answers[0][3].contains("x-err: 5"), "{}", answers[0][3]);
    // A TCP stream's interrupted group leaves its response side's events.
    let (_, tcp_interrupted) = m.split_once("-- front 5").expect("front 5");
    assert!(
        tcp_interrupted.contains("#4 tr(prev=str:ss("),
        "{tcp_interrupted}"
    );
    assert_eq!(
        hellos[0],
        ["supported-versions=str:2.0 max-frame-size=uint:16380 capabilities=str:pipelining,async"]
    );
    let mut differ = haproxy::Differences::default();
    for (i, (h, s)) in answers[0].iter().zip(&answers[1]).enumerate() {
        differ.compare(format!("front {i}"), h, s);
    }
    differ.compare("the agent's messages", &messages[0], &messages[1]);
    differ.compare("the HELLO frames", &hellos[0], &hellos[1]);
    differ.assert_none();
}

const LUA_GROUPS: &str = "[sec]
spoe-agent a
    groups g1 g2 g3
    option var-prefix sec
    option set-on-error err
    timeout hello 2s
    timeout idle 2m
    timeout processing 5s
    use-backend agents
spoe-message gm1
    args napsrc=var(txn.napsrc)
spoe-message gm2
    args after=var(txn.after) napsrc=var(txn.napsrc)
spoe-message gh
    args napsrc=var(txn.napsrc)
spoe-group g1
    messages gm1
spoe-group g2
    messages gm2
spoe-group g3
    messages gh
";

/// Content rules whose Lua actions wait (`core.msleep`, under an
/// inspect delay) among `send-spoe-group` rules: the rules stop at each
/// and go on from the next rule once it is done, in `mode tcp` and in an
/// HTTP proxy alike. A group's message sees what the Lua action before
/// it set, the rules after a group its agent's answer, and the Lua action
/// after a group runs again what a rule between them unset (the next
/// group's message shows it). The rules' `src` conditions leave out the
/// connections that probe the listeners' readiness.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lua_actions_and_groups_wait_in_turn_as_under_haproxy() {
    if !haproxy::available() {
        return;
    }
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lua/actions.lua");
    let mut answers = Vec::new();
    let mut messages = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let agent = Agent::start();
        let web = support::raw::RawBackend::start().await;
        let echo = echo_server();
        let dir = TempDir::new("spoe-lua");
        let spoe = dir.write("spoe.conf", LUA_GROUPS);
        let fronts: Vec<Listen> = (0..2).map(|_| Listen::new()).collect();
        let cfg = format!(
            "global
    lua-load {script}
defaults
    timeout client 5s
    timeout server 5s
    timeout connect 5s
listen lt
    mode tcp
    bind {f0}
    tcp-request inspect-delay 2s
    filter spoe engine sec config {spoe}
    tcp-request content lua.napsrc if {{ src 127.0.0.2 }}
    tcp-request content send-spoe-group sec g1 if {{ src 127.0.0.2 }}
    tcp-request content unset-var(txn.napsrc)
    tcp-request content set-var(txn.after) var(txn.sec.gm1)
    tcp-request content lua.napsrc if {{ src 127.0.0.2 }}
    tcp-request content send-spoe-group sec g2 if {{ src 127.0.0.2 }}
    server s {echo}
listen lh
    mode http
    bind {f1}
    tcp-request inspect-delay 2s
    filter spoe engine sec config {spoe}
    tcp-request content lua.napsrc if {{ src 127.0.0.2 }}
    tcp-request content send-spoe-group sec g3 if {{ src 127.0.0.2 }}
    tcp-request content set-var(txn.after) var(txn.sec.gh)
    http-response set-header x-after %[var(txn.after)]
    server s {web}
backend agents
    mode tcp
    server a {agent}
",
            script = script.display(),
            f0 = fronts[0],
            f1 = fronts[1],
            spoe = spoe.display(),
            agent = agent.addr,
            web = web.addr,
        );
        let refs: Vec<&Listen> = fronts.iter().collect();
        let _h = (tool == "haproxy").then(|| Haproxy::start("spoe-lua", &cfg, &refs));
        let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
        let mut got = Vec::new();
        for (f, req) in fronts.iter().zip([
            &b"hello"[..],
            b"GET /p HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
        ]) {
            let a = exchange_from_2(f.addr(), req).await;
            got.push(String::from_utf8_lossy(&a).into_owned());
        }
        answers.push(got);
        messages.push(agent.got());
    }
    // Not vacuous: each group saw the Lua action before it, the rules
    // after a group its answer.
    let m = messages[0].join("\n");
    for want in [
        "#1 gm1(napsrc=str:127.0.0.2)",
        "#2 gm2(after=str:gm1(napsrc=str:127.0.0.2),napsrc=str:127.0.0.2)",
        "#1 gh(napsrc=str:127.0.0.2)",
    ] {
        assert!(m.contains(want), "{want} in {m}");
    }
    assert!(
        answers[0][1].contains("x-after: gh(napsrc=str:127.0.0.2)"),
        "{}",
        answers[0][1]
    );
    let mut differ = haproxy::Differences::default();
    for (i, (h, s)) in answers[0].iter().zip(&answers[1]).enumerate() {
        differ.compare(format!("front {i}"), h, s);
    }
    differ.compare("the agent's messages", &messages[0], &messages[1]);
    differ.assert_none();
}

const PIPELINED: &str = "[sec]
spoe-agent a
    messages m
    option var-prefix sec
    option set-on-error err
    timeout hello 2s
    timeout idle 2m
    timeout processing 5s
    use-backend agents
spoe-message m
    args path=path
    event on-frontend-http-request

[one]
spoe-agent b
    messages m
    option var-prefix sec
    option set-on-error err
    max-waiting-frames 1
    timeout hello 2s
    timeout idle 2m
    timeout processing 5s
    use-backend agents
spoe-message m
    args path=path
    event on-frontend-http-request

[plain]
spoe-agent c
    messages m
    no option pipelining
    no option async
    max-frame-size 1024
    option var-prefix sec
    option set-on-error err
    timeout hello 2s
    timeout idle 2m
    timeout processing 300ms
    use-backend agents
spoe-message m
    args path=path
    event on-frontend-http-request
";

/// An agent that pipelines and answers asynchronously gets a stream's
/// frame while another's waits, and answers the later first: each ACK
/// still reaches its own stream (by its stream and frame ids), on the
/// connection the frame came on or, when `max-waiting-frames 1` made the
/// later go on another, on that one. haproxy runs one thread: its
/// asynchronous ACKs are matched among the connections of the thread that
/// sent the frame. An agent whose HELLO asks for frames larger than the
/// engine's is refused: the stream waits until `timeout processing`
/// (error 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_agents_answer_out_of_order_as_under_haproxy() {
    if !haproxy::available() {
        return;
    }
    let mut answers = Vec::new();
    let mut hellos = Vec::new();
    let mut held = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let agent = Agent::with_caps("pipelining,async");
        let dir = TempDir::new("spoe-pipelined");
        let spoe = dir.write("spoe.conf", PIPELINED);
        let fronts: Vec<Listen> = (0..3).map(|_| Listen::new()).collect();
        let mut cfg = String::from(
            "global
    nbthread 1
defaults
    mode http
    timeout client 5s
    timeout server 5s
    timeout connect 5s
backend agents
    mode tcp
",
        );
        cfg += &format!("    server a {}\n", agent.addr);
        for (f, engine) in fronts.iter().zip(["sec", "one", "plain"]) {
            cfg += &format!(
                "frontend {engine}
    bind {f}
    filter spoe engine {engine} config {spoe}
    http-request return status 200 content-type text/plain lf-string \"m=%[var(txn.sec.m)] err=%[var(txn.sec.err)]\"
",
                spoe = spoe.display()
            );
        }
        let refs: Vec<&Listen> = fronts.iter().collect();
        let _h = (tool == "haproxy").then(|| Haproxy::start("spoe-pipelined", &cfg, &refs));
        let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
        let mut got = Vec::new();
        for f in &fronts[..2] {
            let addr = f.addr();
            // A first exchange: a connection to the agent is open.
            let warm = b"GET /warm HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n";
            got.push(haproxy::exchange(addr, warm, false).await);
            let first = tokio::spawn(async move {
                let req = b"GET /hold HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n";
                haproxy::exchange(addr, req, false).await
            });
            agent.wait_for("path=str:/hold").await;
            let req = b"GET /free HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n";
            got.push(haproxy::exchange(addr, req, false).await);
            got.push(first.await.expect("the held request"));
            agent.got.lock().expect("lock").clear();
        }
        let req = b"GET /plain HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n";
        got.push(haproxy::exchange(fronts[2].addr(), req, false).await);
        answers.push(
            got.iter()
                .map(|a| {
                    let t = String::from_utf8_lossy(a).into_owned();
                    t.split_once("\r\n\r\n")
                        .map_or(t.clone(), |(_, b)| b.to_string())
                })
                .collect::<Vec<_>>(),
        );
        let mut h = agent.hellos.lock().expect("lock").clone();
        h.sort();
        h.dedup();
        hellos.push(h);
        held.push(agent.held.lock().expect("lock").clone());
    }
    // Not vacuous: each stream has its own answer.
    assert_eq!(
        answers[0][1..3],
        ["m=m(path=str:/free) err=", "m=m(path=str:/hold) err="],
        "{:?}",
        answers[0]
    );
    // sluice sends the second frame on the connection the first waits
    // on (its ACK comes last there), and on another when
    // `max-waiting-frames 1` leaves no room.
    assert_eq!(held[1], [true, false], "sluice");
    let mut differ = haproxy::Differences::default();
    differ.compare("the answers", &answers[0], &answers[1]);
    differ.compare("the HELLO frames", &hellos[0], &hellos[1]);
    differ.compare(
        "the held frames answered on their own connection",
        &held[0],
        &held[1],
    );
    differ.assert_none();
}

const FRAGMENTS: &str = "[frag]
spoe-agent a
    messages m
    option var-prefix sec
    option set-on-error err
    max-frame-size 1024
    timeout hello 2s
    timeout idle 2m
    timeout processing 300ms
    use-backend agents
spoe-message m
    args n=int(1) h=req.hdr(x) z=int(1000000)
    event on-frontend-http-request

[whole]
spoe-agent b
    messages m
    option var-prefix sec
    option set-on-error err
    max-frame-size 1024
    timeout hello 2s
    timeout idle 2m
    timeout processing 300ms
    use-backend wholes
spoe-message m
    args n=int(1) h=req.hdr(x)
    event on-frontend-http-request

[nofrag]
spoe-agent c
    messages m
    option var-prefix sec
    option set-on-error err
    no option send-frag-payload
    max-frame-size 1024
    timeout hello 2s
    timeout idle 2m
    timeout processing 300ms
    use-backend agents
spoe-message m
    args n=int(1) h=req.hdr(x)
    event on-frontend-http-request
";

/// A NOTIFY larger than the frame size: in several frames to an agent
/// that takes fragments (each frame's payload what HAProxy's frame size
/// leaves), a HAPROXY-DISCONNECT to one that does not (the stream then
/// waits until `timeout processing`, error 1), and not sent at all with
/// `no option send-frag-payload` (error 3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_payloads_are_fragmented_as_under_haproxy() {
    if !haproxy::available() {
        return;
    }
    let mut answers = Vec::new();
    let mut messages = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let agent = Agent::with("pipelining,async,fragmentation", None);
        let whole = Agent::with("pipelining,async", None);
        let dir = TempDir::new("spoe-frag");
        let spoe = dir.write("spoe.conf", FRAGMENTS);
        let fronts: Vec<Listen> = (0..3).map(|_| Listen::new()).collect();
        let mut cfg = format!(
            "global
    nbthread 1
defaults
    mode http
    timeout client 5s
    timeout server 5s
    timeout connect 5s
backend agents
    mode tcp
    server a {}
backend wholes
    mode tcp
    server a {}
",
            agent.addr, whole.addr
        );
        for (f, engine) in fronts.iter().zip(["frag", "whole", "nofrag"]) {
            cfg += &format!(
                "frontend {engine}
    bind {f}
    filter spoe engine {engine} config {spoe}
    http-request return status 200 content-type text/plain lf-string \"m=%[var(txn.sec.m)] err=%[var(txn.sec.err)]\"
",
                spoe = spoe.display()
            );
        }
        let refs: Vec<&Listen> = fronts.iter().collect();
        let _h = (tool == "haproxy").then(|| Haproxy::start("spoe-frag", &cfg, &refs));
        let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
        let big = "a".repeat(3000);
        // Its end and the next argument's name fill the first frame but
        // for 2 bytes: the integer after goes whole into the second.
        let edge = "b".repeat(976);
        let mut got = Vec::new();
        for (i, f) in fronts.iter().enumerate() {
            let edge = (i == 0).then_some(edge.as_str());
            for x in ["small", big.as_str()].into_iter().chain(edge) {
                let req =
                    format!("GET / HTTP/1.1\r\nhost: h\r\nx: {x}\r\nconnection: close\r\n\r\n");
                let a = haproxy::exchange(f.addr(), req.as_bytes(), false).await;
                let t = String::from_utf8_lossy(&a).into_owned();
                got.push(
                    t.split_once("\r\n\r\n")
                        .map_or(t.clone(), |(_, b)| b.to_string()),
                );
            }
        }
        answers.push(got);
        let mut m = agent.got();
        m.push("-- whole".into());
        m.extend(whole.got());
        // The long ones by their length.
        let short = |l: String| {
            if l.len() > 200 {
                format!("{}... ({} bytes)", &l[..40], l.len())
            } else {
                l
            }
        };
        let mut m: Vec<String> = m.into_iter().map(short).collect();
        // haproxy offers the frame again on new connections until
        // `timeout processing`, as often as its timers allow (each told
        // the same); sluice once: the repeats are not compared.
        m.dedup();
        messages.push(m);
    }
    // Not vacuous: the large message reached the agent whole, in four
    // frames; the others failed as haproxy fails them.
    assert_eq!(
        answers[0],
        [
            "m=m(n=int:1,h=str:small,z=int:1000000) err=",
            "m=3031 bytes err=",
            "m=1007 bytes err=",
            "m=m(n=int:1,h=str:small) err=",
            "m= err=1",
            "m=m(n=int:1,h=str:small) err=",
            "m= err=3"
        ],
        "{:?}",
        answers[0]
    );
    for cut in [
        "#1 in 4 frames: [992, 992, 992, 44]",
        "#1 in 2 frames: [990, 5]",
    ] {
        assert!(messages[0].contains(&cut.to_string()), "{:?}", messages[0]);
    }
    let mut differ = haproxy::Differences::default();
    differ.compare("the answers", &answers[0], &answers[1]);
    differ.compare("the agent's messages", &messages[0], &messages[1]);
    differ.assert_none();
}

const ERRORS: &str = "[stop]
spoe-agent a
    messages req res
    option var-prefix sec
    option set-on-error err
    option set-process-time pt
    option set-total-time tt
    timeout hello 2s
    timeout idle 2m
    timeout processing 300ms
    use-backend agents
spoe-message req
    args path=path
    event on-frontend-http-request
spoe-message res
    args st=status
    event on-http-response

[cont]
spoe-agent b
    messages req res
    option var-prefix sec
    option set-on-error err
    option continue-on-error
    timeout hello 2s
    timeout idle 2m
    timeout processing 300ms
    use-backend agents
spoe-message req
    args path=path
    event on-frontend-http-request
spoe-message res
    args st=status
    event on-http-response

[down]
spoe-agent c
    messages req
    option var-prefix sec
    option set-on-error err
    timeout hello 2s
    timeout idle 2m
    timeout processing 300ms
    use-backend nowhere
spoe-message req
    args path=path
    event on-frontend-http-request
";

/// An agent that does not answer: `timeout processing` ends the wait and
/// sets the error variable (1); the stream's later events are not sent,
/// unless `option continue-on-error`. An agent that refuses connections
/// is tried until `timeout processing` too. `option set-process-time`
/// and `set-total-time` are set whatever the outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processing_timeouts_and_continue_on_error_as_under_haproxy() {
    if !haproxy::available() {
        return;
    }
    let mut answers = Vec::new();
    let mut messages = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let agent = Agent::start();
        let web = support::raw::RawBackend::start().await;
        let dir = TempDir::new("spoe-errors");
        let spoe = dir.write("spoe.conf", ERRORS);
        let fronts: Vec<Listen> = (0..3).map(|_| Listen::new()).collect();
        let refused = support::Port::new();
        let mut cfg = format!(
            "defaults
    mode http
    timeout client 5s
    timeout server 5s
    timeout connect 5s
backend agents
    mode tcp
    server a {}
backend nowhere
    mode tcp
    server a {}
",
            agent.addr,
            refused.addr()
        );
        for (f, engine) in fronts.iter().zip(["stop", "cont", "down"]) {
            cfg += &format!(
                "listen {engine}
    bind {f}
    filter spoe engine {engine} config {spoe}
    http-response set-header x-spoe \"req=%[var(txn.sec.req)] res=%[var(txn.sec.res)] err=%[var(txn.sec.err)]\"
    http-response set-header x-times \"%[var(txn.sec.pt),add(1),bool] %[var(txn.sec.tt),add(1),bool]\"
    server web {web}
",
                spoe = spoe.display(),
                web = web.addr
            );
        }
        let refs: Vec<&Listen> = fronts.iter().collect();
        let _h = (tool == "haproxy").then(|| Haproxy::start("spoe-errors", &cfg, &refs));
        let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
        let mut got = Vec::new();
        for (i, f) in fronts.iter().enumerate() {
            for path in ["/mute", "/fine"] {
                agent
                    .got
                    .lock()
                    .expect("lock")
                    .push(format!("-- {i} {path}"));
                let req = format!("GET {path} HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n");
                let a = haproxy::exchange(f.addr(), req.as_bytes(), false).await;
                let t = String::from_utf8_lossy(&a).into_owned();
                // The times themselves differ (they are times): whether
                // they were set is compared.
                for h in ["x-spoe", "x-times"] {
                    let line = t.lines().find(|l| l.starts_with(h)).unwrap_or_default();
                    got.push(line.to_string());
                }
            }
        }
        answers.push(got);
        messages.push(agent.got());
    }
    // Not vacuous: the timeout set the error, and the response's event
    // went only with continue-on-error.
    assert_eq!(
        answers[0],
        [
            "x-spoe: req= res= err=1",
            "x-times: 1 1",
            "x-spoe: req=req(path=str:/fine) res=res(st=int:200) err=",
            "x-times: 1 1",
            "x-spoe: req= res=res(st=int:200) err=1",
            "x-times:  ",
            "x-spoe: req=req(path=str:/fine) res=res(st=int:200) err=",
            "x-times:  ",
            "x-spoe: req= res= err=1",
            "x-times:  ",
            "x-spoe: req= res= err=1",
            "x-times:  ",
        ],
        "{:?}",
        answers[0]
    );
    let mut differ = haproxy::Differences::default();
    differ.compare("the answers", &answers[0], &answers[1]);
    differ.compare("the agent's messages", &messages[0], &messages[1]);
    differ.assert_none();
}

const LOGGED: &str = "[lg]
spoe-agent a
    messages m r
    groups g
    log global
    option var-prefix sec
    option set-on-error err
    timeout hello 2s
    timeout idle 2m
    timeout processing 300ms
    use-backend agents
spoe-message m
    args path=path
    event on-frontend-http-request
spoe-message r
    args st=status
    event on-http-response
spoe-group g
    messages gm
spoe-message gm
    args p=path

[quiet]
spoe-agent q
    messages m
    log global
    option dontlog-normal
    option var-prefix sec
    timeout hello 2s
    timeout idle 2m
    timeout processing 300ms
    use-backend agents
spoe-message m
    args path=path
    event on-frontend-http-request
";

/// The agent's `log` lines: one per event or group processed, at notice,
/// or warning with the error's status. Masked: the syslog date and pid,
/// the stream id (haproxy numbers its streams with its own internal
/// ones) and the five processing times (times). `option dontlog-normal`
/// keeps the errors' lines only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_log_lines_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    fn mask(line: &str) -> String {
        let (head, msg) = line.split_once("]: ").unwrap_or(("", line));
        let pri = head.split('>').next().unwrap_or_default();
        let tag = head.rsplit(' ').next().unwrap_or_default();
        let tag = tag.split('[').next().unwrap_or_default();
        let words: Vec<String> = msg
            .trim_end()
            .split(' ')
            .map(|w| {
                if w.starts_with("sid=") {
                    "sid=<sid>".to_string()
                } else if w.split('/').count() == 5 {
                    "<times>".to_string()
                } else {
                    w.to_string()
                }
            })
            .collect();
        format!("{pri}> <date> {tag}[<pid>]: {}", words.join(" "))
    }
    let mut lines = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let agent = Agent::start();
        let web = support::raw::RawBackend::start().await;
        let syslog = support::syslog::Syslog::new();
        let dir = TempDir::new("spoe-log");
        let spoe = dir.write("spoe.conf", LOGGED);
        let front = Listen::new();
        let quiet = Listen::new();
        let cfg = format!(
            "global
    nbthread 1
    log {log} local0
    log-tag spoetest
defaults
    mode http
    timeout client 5s
    timeout server 5s
    timeout connect 5s
listen f
    bind {front}
    filter spoe engine lg config {spoe}
    http-request send-spoe-group lg g
    server web {web}
listen q
    bind {quiet}
    filter spoe engine quiet config {spoe}
    server web {web}
backend agents
    mode tcp
    server a {agent}
",
            log = syslog.addr(),
            spoe = spoe.display(),
            web = web.addr,
            agent = agent.addr
        );
        let _h = (tool == "haproxy").then(|| Haproxy::start("spoe-log", &cfg, &[&front, &quiet]));
        let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
        for (to, path) in [(&front, "/a"), (&front, "/mute"), (&front, "/b")]
            .into_iter()
            .chain([(&quiet, "/a"), (&quiet, "/mute"), (&quiet, "/b")])
        {
            let req = format!("GET {path} HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n");
            haproxy::exchange(to.addr(), req.as_bytes(), false).await;
        }
        lines.push(syslog.take(8).iter().map(|l| mask(l)).collect::<Vec<_>>());
    }
    // Not vacuous: each event and group has its line, the error its own.
    assert_eq!(
        lines[0][3],
        "<132> <date> spoetest[<pid>]: SPOE: [a] <EVENT:on-frontend-http-request> sid=<sid> st=1 <times> 0/1 0/0 1/4",
        "{:#?}",
        lines[0]
    );
    // The quiet agent's first line is its error's.
    assert!(
        lines[0][7].contains("SPOE: [q] <EVENT:on-frontend-http-request> sid=<sid> st=1 "),
        "{:#?}",
        lines[0]
    );
    let mut differ = haproxy::Differences::default();
    differ.compare("the log lines", &lines[0], &lines[1]);
    differ.assert_none();
}

const REGISTERED: &str = "[rv]
spoe-agent a
    messages proc_a proc_b proc_c
    register-var-names proc_b other
    option var-prefix sec
    timeout hello 2s
    timeout idle 2m
    timeout processing 1s
    use-backend agents
spoe-message proc_a
    args x=int(1)
    event on-frontend-http-request
spoe-message proc_b
    args x=int(1)
    event on-frontend-http-request
spoe-message proc_c
    args x=int(1)
    event on-frontend-http-request

[forced]
spoe-agent b
    messages proc_d
    option var-prefix frc
    option force-set-var
    timeout hello 2s
    timeout idle 2m
    timeout processing 1s
    use-backend agents
spoe-message proc_d
    args x=int(1)
    event on-frontend-http-request
";

/// An agent sets `proc` variables: only those the configuration names or
/// `register-var-names` registers, unless `option force-set-var` (read
/// back with the CLI's `get var`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proc_variables_need_a_name_as_under_haproxy() {
    if !haproxy::available() {
        return;
    }
    let mut replies = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let agent = Agent::start();
        let dir = TempDir::new("spoe-vars");
        let spoe = dir.write("spoe.conf", REGISTERED);
        let sock = dir.path().join("stats.sock");
        let front = Listen::new();
        let cfg = format!(
            "global
    stats socket {sock} level admin
defaults
    mode http
    timeout client 5s
    timeout server 5s
    timeout connect 5s
frontend f
    bind {front}
    filter spoe engine rv config {spoe}
    filter spoe engine forced config {spoe}
    http-request return status 200 content-type text/plain lf-string \"c=%[var(proc.sec.proc_c)]\"
backend agents
    mode tcp
    server a {agent}
",
            sock = sock.display(),
            spoe = spoe.display(),
            agent = agent.addr
        );
        let _h = (tool == "haproxy").then(|| Haproxy::start("spoe-vars", &cfg, &[&front]));
        let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
        let req = b"GET / HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n";
        haproxy::exchange(front.addr(), req, false).await;
        let mut got = Vec::new();
        for v in [
            "sec.proc_a",
            "sec.proc_b",
            "sec.proc_c",
            "sec.other",
            "frc.proc_d",
        ] {
            got.push(support::cli(&sock, &format!("get var proc.{v}")).await);
        }
        replies.push(got);
    }
    // Not vacuous: one was refused, another set.
    assert_eq!(
        replies[0][0].trim(),
        "Variable not found.",
        "{:?}",
        replies[0]
    );
    assert!(replies[0][4].contains("value=<proc_d>"), "{:?}", replies[0]);
    let mut differ = haproxy::Differences::default();
    differ.compare("get var", &replies[0], &replies[1]);
    differ.assert_none();
}
