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
/// made of its messages' arguments; the messages it got are recorded.
struct Agent {
    addr: std::net::SocketAddr,
    got: Arc<Mutex<Vec<String>>>,
}

impl Agent {
    fn start() -> Agent {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let got = Arc::new(Mutex::new(Vec::new()));
        let seen = got.clone();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(s) = s else { return };
                let seen = seen.clone();
                std::thread::spawn(move || serve(s, &seen));
            }
        });
        Agent { addr, got }
    }
}

fn serve(mut s: TcpStream, seen: &Mutex<Vec<String>>) {
    while let Some(f) = frame(&mut s) {
        let kind = f[0];
        let mut b = &f[5..];
        let stream_id = varint(&mut b);
        let frame_id = varint(&mut b);
        match kind {
            // HAPROXY-HELLO: AGENT-HELLO.
            1 => {
                let mut p = Vec::new();
                put_string(&mut p, b"version");
                p.push(8);
                put_string(&mut p, b"2.0");
                put_string(&mut p, b"max-frame-size");
                p.push(3);
                put_varint(&mut p, 16380);
                put_string(&mut p, b"capabilities");
                p.push(8);
                put_string(&mut p, b"");
                if !send(&mut s, 101, (0, 0), &p) {
                    return;
                }
            }
            // NOTIFY: its messages, and an ACK.
            3 => {
                let mut ack = Vec::new();
                let mut close = false;
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
                    seen.lock().expect("lock").push(line.clone());
                    let arg = |k: &str| {
                        args.iter()
                            .find(|(n, _)| n == k)
                            .map_or(String::new(), |(_, v)| v.clone())
                    };
                    if arg("path").contains("/close") {
                        close = true;
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
                        _ => {}
                    }
                }
                if close {
                    return;
                }
                if !send(&mut s, 103, (stream_id, frame_id), &ack) {
                    return;
                }
            }
            // HAPROXY-DISCONNECT or anything else: the end.
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
        answers[0][5].contains("x-seen: int:200 8"),
        "{:?}",
        answers[0][5]
    );
    let mut differ = haproxy::Differences::default();
    differ.compare("GET /web", &answers[0][5], &answers[1][5]);
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
