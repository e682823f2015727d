//! `log-forward` sections against the real HAProxy 2.6: the same
//! configuration runs under haproxy and sluice, the same syslog messages
//! reach both (over UDP on a `dgram-bind`, over TCP on a `bind`, octet
//! counted and line-ended), and what each target of the section receives
//! is compared byte for byte, in every `format` (none, rfc5424, rfc3164,
//! local, priority, short, timed, iso, raw with a level and a `len`).
//! Masked: the dates of the messages that had none (the time they arrived
//! must differ), after checking their shape. Also `-c` on the section's
//! mistakes.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use std::io::Write as _;
use std::net::{TcpStream, UdpSocket};
use std::time::Duration;

use regex::Regex;

use support::haproxy::{self, Haproxy};
use support::syslog::Syslog;
use support::*;

const CFG: &str = r#"
global
    stats socket {sock} level admin
log-forward lf
    dgram-bind 127.0.0.1:{udp}
    bind 127.0.0.1:{tcp}
    log {s0} local3
    log {s1} format rfc5424 local0
    log {s2} format rfc3164 local0
    log {s3} format local local3
    log {s4} format priority local0
    log {s5} format short local0
    log {s6} format timed local0
    log {s7} format iso local0
    log {s8} len 80 format raw local0 notice
    maxconn 10
    backlog 5
    timeout client 5s
defaults
    mode http
    timeout client 5s
    timeout server 5s
    timeout connect 5s
frontend f
    bind {fe0}
    http-request return status 200
"#;

/// The messages sent over UDP, in order.
const DATAGRAMS: &[&str] = &[
    "<30>Dec  4 23:29:50 myhost app[123]: hello world",
    "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut=\"3\"] An application event",
    "<14>1 2003-10-11T22:14:15.003Z - - - - - dashes everywhere",
    "<34>1 2003-08-24T05:14:15.000003-07:00 h2 su 77 - - 'su root' failed",
    "plain text without a header",
    "<13>app: short",
    "<30>Dec  4 23:29:50 myhost app: no pid",
    "<11>Dec 14 03:09:00 myhost app[1]: an error message long enough to be cut at the eighty bytes of len",
    "<30>Dec  4 23:29:50 myhost text without a tag",
];

/// A UDP port free now (the sockets of `dgram-bind` cannot be handed
/// over as `fd@`: both bind it themselves).
fn free_udp_port() -> u16 {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind udp");
    s.local_addr().expect("its address").port()
}

/// What each of the 9 targets received, one side (haproxy or sluice).
fn run(hap: bool) -> Vec<Vec<String>> {
    let dir = TempDir::new(if hap { "logfwd-h" } else { "logfwd-s" });
    let sock = dir.join("cli.sock");
    let sinks: Vec<Syslog> = (0..9).map(|_| Syslog::new()).collect();
    let fe = Listen::new();
    let (_tcp_hold, tcp) = hold_port();
    let udp = free_udp_port();
    let mut text = CFG
        .replace("{sock}", &sock.display().to_string())
        .replace("{fe0}", &fe.to_string())
        .replace("{udp}", &udp.to_string())
        .replace("{tcp}", &tcp.to_string());
    for (n, s) in sinks.iter().enumerate() {
        text = text.replace(&format!("{{s{n}}}"), &s.addr());
    }
    let _proc = if hap {
        (Some(Haproxy::start("logfwd", &text, &[&fe])), None)
    } else {
        (None, Some(Sluice::start(&text)))
    };
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    // Each message is waited for at the first target before the next is
    // sent (haproxy's threads may still swap two that arrive together at
    // the other targets: each target's lines are compared sorted).
    let mut first = Vec::new();
    for m in DATAGRAMS {
        u.send_to(m.as_bytes(), ("127.0.0.1", udp)).unwrap();
        first.extend(sinks[0].take(1));
    }
    // The TCP listener may still be starting: connect until it answers.
    let mut t = None;
    for _ in 0..500 {
        if let Ok(c) = TcpStream::connect(("127.0.0.1", tcp)) {
            t = Some(c);
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut t = t.expect("the log-forward TCP bind");
    let counted = "<30>Dec  4 23:29:50 h a: octet counted";
    t.write_all(format!("{} {counted}", counted.len()).as_bytes())
        .unwrap();
    first.extend(sinks[0].take(1));
    t.write_all(b"<30>Dec  4 23:29:50 h a: line ended\n")
        .unwrap();
    first.extend(sinks[0].take(1));
    // The last one, at emergency level, passes every target's level.
    u.send_to(b"<0>Dec  4 23:29:50 h end: MARKER", ("127.0.0.1", udp))
        .unwrap();
    let every: Vec<String> = [
        "hello world",
        "An application",
        "dashes",
        "'su root'",
        "plain text",
        "app: short",
        "no pid",
        "an error",
        "without a tag",
        "octet counted",
        "line ended",
        "MARKER",
    ]
    .iter()
    .map(|m| format!("{{}}{m}{{}}"))
    .collect();
    let severe: Vec<String> = [
        "An application",
        "'su root'",
        "plain text",
        "app: short",
        "an error",
        "MARKER",
    ]
    .iter()
    .map(|m| format!("{{}}{m}{{}}"))
    .collect();
    sinks
        .iter()
        .enumerate()
        .map(|(n, s)| {
            let want: Vec<&str> = match n {
                0 => vec!["{}MARKER{}"],
                8 => severe.iter().map(String::as_str).collect(),
                _ => every.iter().map(String::as_str).collect(),
            };
            let mut lines = if n == 0 { first.clone() } else { Vec::new() };
            lines.extend(s.until(&want));
            lines.sort();
            lines
        })
        .collect()
}

/// The lines with the dates made of the time of arrival masked, once
/// they have their shape.
fn mask(lines: &[String]) -> Vec<String> {
    let iso = Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}[+-]\d\d:\d\d").unwrap();
    // An RFC 3164 date of now, in messages that had none: the ones sent
    // all say Dec  4 23:29:50, Dec 14 03:09:00 or Oct 11 22:14:15.
    let bsd = Regex::new(r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d").unwrap();
    let year = Regex::new(r"^(<\d+>1 |<\d>)?\d{4}-12-04T23:29:50-00:00").unwrap();
    lines
        .iter()
        .map(|l| {
            let l = iso.replace_all(l, "<now>");
            let l = bsd.replace_all(&l, |c: &regex::Captures| {
                let d = &c[0];
                if [
                    "Dec  4 23:29:50",
                    "Dec 14 03:09:00",
                    "Oct 11 22:14:15",
                    "Aug 24 05:14:15",
                ]
                .contains(&d)
                {
                    d.to_string()
                } else {
                    "<now>".to_string()
                }
            });
            // This year, which both take from the clock.
            let l = year.replace(&l, |c: &regex::Captures| {
                c[0].replacen(&c[0][c.get(1).map_or(0, |m| m.len())..][..4], "YYYY", 1)
            });
            l.into_owned()
        })
        .collect()
}

#[test]
fn forwarded_lines_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let h = run(true);
    let s = run(false);
    if std::env::var_os("LOGFWD_SHOW").is_some() {
        for (n, (hl, sl)) in h.iter().zip(&s).enumerate() {
            eprintln!("== s{n}\n{}-- sluice\n{}", hl.concat(), sl.concat());
        }
    }
    let mut diffs = haproxy::Differences::default();
    for (n, (hl, sl)) in h.iter().zip(&s).enumerate() {
        // Sorted again once masked: lines stamped with the time they
        // were received sort by that time, which a second's boundary
        // between two of them under one proxy and not the other reorders.
        let (mut hm, mut sm) = (mask(hl), mask(sl));
        hm.sort();
        sm.sort();
        diffs.compare(format!("target s{n}"), &hm, &sm);
    }
    diffs.assert_none();
    // What the masks left: the default format gives the messages as sent.
    assert!(h[0].contains(&format!("{}\n", DATAGRAMS[0])), "{:?}", h[0]);
    assert!(h[0].contains(&format!("{}\n", DATAGRAMS[1])), "{:?}", h[0]);
}

/// `-c` on a log-forward section's mistakes says what haproxy says.
#[test]
fn log_forward_mistakes_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cases = [
        "log-forward",
        "log-forward lf\n    bogus",
        "log-forward lf\n    maxconn",
        "log-forward lf\n    backlog",
        "log-forward lf\n    timeout client",
        "log-forward lf\n    timeout server 1s",
        "log-forward lf\n    log",
        "log-forward lf\nlog-forward lf",
        "log-forward lf\n    dgram-bind 127.0.0.1:0\n    log 127.0.0.1 local0\n    log global",
    ]
    .map(|body| {
        let cfg = format!("{body}\nfrontend f\n    bind 127.0.0.1:0\n    timeout client 1s\n");
        (body.replace('\n', " / "), cfg)
    });
    haproxy::assert_check_agrees("logfwd-c", cases, |stderr| {
        // The first alert naming a line, the files' directories masked.
        let dirs = Regex::new(r"/tmp/[^ ]*/").unwrap();
        let line = stderr
            .lines()
            .find(|l| l.contains("ALERT") && l.contains(".cfg:"))
            .map(|l| l.split_once(".cfg:").map_or(l, |(_, m)| m).to_string())
            .unwrap_or_else(|| "(accepted)".to_string());
        dirs.replace_all(&line, "<dir>/")
            .replace("haproxy.cfg", "<cfg>")
            .replace("sluice.cfg", "<cfg>")
    });
}
