//! `mailers` sections and `email-alert`, against haproxy 2.6 on the same
//! configuration: each proxy mails its servers' state changes to its own
//! real SMTP server (python3-aiosmtpd, started by the test), and the test
//! compares the SMTP dialogues and the messages of the same events, and
//! what `-c` says of each misuse.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use support::haproxy::{Haproxy, available};
use support::raw::RawBackend;
use support::*;

/// An aiosmtpd server on 127.0.0.1 (a port of its own choosing) that
/// prints one line per command it handled: `<session> <command>`, and
/// for DATA the message, escaped.
const SINK: &str = r#"
import asyncio, sys, json
from aiosmtpd.smtp import SMTP

class Recorder:
    def say(self, session, what):
        print(json.dumps([session.peer[1], what]), flush=True)
    async def handle_HELO(self, server, session, envelope, hostname):
        session.host_name = hostname
        self.say(session, "HELO " + hostname)
        return "250 sink"
    async def handle_MAIL(self, server, session, envelope, address, options):
        envelope.mail_from = address
        self.say(session, "MAIL FROM:<%s>" % address)
        return "250 OK"
    async def handle_RCPT(self, server, session, envelope, address, options):
        envelope.rcpt_tos.append(address)
        self.say(session, "RCPT TO:<%s>" % address)
        return "250 OK"
    async def handle_DATA(self, server, session, envelope):
        self.say(session, "DATA " + envelope.original_content.decode())
        return "250 OK queued"
    async def handle_QUIT(self, server, session, envelope):
        self.say(session, "QUIT")
        return "221 bye"

async def main():
    loop = asyncio.get_running_loop()
    srv = await loop.create_server(lambda: SMTP(Recorder()), "127.0.0.1", 0)
    print(srv.sockets[0].getsockname()[1], flush=True)
    await srv.serve_forever()

asyncio.run(main())
"#;

struct Sink {
    child: Child,
    port: u16,
    lines: mpsc::Receiver<(u16, String)>,
}

impl Sink {
    fn start() -> Sink {
        let mut child = Command::new("/usr/bin/python3")
            .arg("-c")
            .arg(SINK)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 with aiosmtpd (apt-get install python3-aiosmtpd)");
        let out: ChildStdout = child.stdout.take().unwrap();
        let mut rd = BufReader::new(out);
        let mut first = String::new();
        rd.read_line(&mut first).unwrap();
        let port = first
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("aiosmtpd did not start: {first:?}"));
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in rd.lines() {
                let Ok(l) = l else { break };
                let v: (u16, String) = parse_line(&l);
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Sink { child, port, lines }
    }

    /// The next `n` whole dialogues (HELO to QUIT), each as its commands.
    fn dialogues(&self, n: usize) -> Vec<Vec<String>> {
        let end = Instant::now() + Duration::from_secs(20);
        let mut open: Vec<(u16, Vec<String>)> = Vec::new();
        let mut done = Vec::new();
        while done.len() < n {
            let left = end.saturating_duration_since(Instant::now());
            let Ok((peer, what)) = self.lines.recv_timeout(left) else {
                panic!("{} of {n} mails arrived: {done:?} {open:?}", done.len());
            };
            let i = match open.iter().position(|(p, _)| *p == peer) {
                Some(i) => i,
                None => {
                    open.push((peer, Vec::new()));
                    open.len() - 1
                }
            };
            let quit = what == "QUIT";
            open[i].1.push(what);
            if quit {
                done.push(open.remove(i).1);
            }
        }
        done
    }

    /// No further mail within `d`.
    fn quiet(&self, d: Duration) -> Vec<(u16, String)> {
        let end = Instant::now() + d;
        let mut got = Vec::new();
        while let Ok(l) = self
            .lines
            .recv_timeout(end.saturating_duration_since(Instant::now()))
        {
            got.push(l);
        }
        got
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `[peer, "text"]` as the sink prints it (JSON: only `\"`, `\\`, `\r`,
/// `\n` and `\uXXXX` escapes occur).
fn parse_line(l: &str) -> (u16, String) {
    let l = l.trim();
    let inner = l
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap();
    let (peer, text) = inner.split_once(", ").unwrap();
    let text = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap();
    let mut out = String::new();
    let mut it = text.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('u') => {
                let hex: String = it.by_ref().take(4).collect();
                out.push(char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap());
            }
            Some(o) => out.push(o),
            None => {}
        }
    }
    (peer.parse().unwrap(), out)
}

/// Masks what differs between two runs of the same events: the `Date:`
/// header (the two mails leave at different moments) and the check's
/// duration in milliseconds (timing).
fn mask(dialogue: &[String]) -> Vec<String> {
    dialogue
        .iter()
        .map(|c| {
            let lines: Vec<String> = c
                .split("\r\n")
                .map(|l| {
                    if l.starts_with("Date: ") {
                        "Date: <date>".to_string()
                    } else {
                        mask_ms(l)
                    }
                })
                .collect();
            lines.join("\r\n")
        })
        .collect()
}

fn mask_ms(l: &str) -> String {
    match l.find("check duration: ") {
        Some(i) => {
            let rest = &l[i + 16..];
            let end = rest.find("ms").map_or(0, |e| e + 2);
            format!("{}check duration: <ms>{}", &l[..i], mask_ms(&rest[end..]))
        }
        None => l.to_string(),
    }
}

const HTTP_200: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
const HTTP_500: &[u8] = b"HTTP/1.1 500 Oops\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_changes_are_mailed_as_haproxy_mails_them() {
    if !available() {
        return;
    }
    let sinks = [Sink::start(), Sink::start()];
    let servers = [RawBackend::start().await, RawBackend::start().await];
    for s in &servers {
        s.answer(HTTP_200);
    }
    let dir = TempDir::new("email-alerts");
    let cfg = |i: usize| {
        format!(
            "global
    stats socket {sock} mode 600 level admin
mailers ops
    timeout mail 5s
    mailer sink 127.0.0.1:{port}
defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
    email-alert mailers ops
    email-alert from lb@example.org
    email-alert to ops@example.org
    email-alert myhostname lb1.example.org
# `notice`: DOWN (alert) and UP (notice) are mailed.
backend web
    email-alert level notice
    option httpchk GET /health
    server s1 {srv} check inter 200ms rise 1 fall 1
# The default level, `alert`: only DOWN.
backend api
    option httpchk GET /health
    server s2 {srv} check inter 200ms rise 1 fall 1
",
            sock = dir.join(&format!("stats{i}.sock")).display(),
            port = sinks[i].port,
            srv = servers[i].addr,
        )
    };
    let _hap = Haproxy::start("email-alerts", &cfg(0), &[]);
    let _sl = Sluice::start(&cfg(1));
    for i in 0..2 {
        let sock = dir.join(&format!("stats{i}.sock"));
        let end = Instant::now() + Duration::from_secs(10);
        while std::os::unix::net::UnixStream::connect(&sock).is_err() {
            assert!(Instant::now() < end, "no stats socket {sock:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        wait_check(&sock, "web", "s1", "UP", "L7OK").await;
        wait_check(&sock, "api", "s2", "UP", "L7OK").await;
    }
    // Both servers of each proxy go DOWN: two mails at `alert`.
    for s in &servers {
        s.answer(HTTP_500);
    }
    let down = [sinks[0].dialogues(2), sinks[1].dialogues(2)];
    // Back UP: one mail, the `notice` backend's.
    for s in &servers {
        s.answer(HTTP_200);
    }
    let up = [sinks[0].dialogues(1), sinks[1].dialogues(1)];
    let sorted = |mut v: Vec<Vec<String>>| {
        v.sort();
        v.iter().map(|d| mask(d)).collect::<Vec<_>>()
    };
    let (hd, sd) = (sorted(down[0].clone()), sorted(down[1].clone()));
    assert_eq!(hd, sd, "the DOWN mails (haproxy, sluice)");
    let (hu, su) = (sorted(up[0].clone()), sorted(up[1].clone()));
    assert_eq!(hu, su, "the UP mail (haproxy, sluice)");
    // What was compared is the alert itself, not merely alike.
    assert!(
        sd.iter().any(|d| d.iter().any(|c| c.contains(
            "Subject: [HAProxy Alert] Server api/s2 is DOWN, reason: Layer7 wrong status, code: 500"
        ))),
        "{sd:#?}"
    );
    assert_eq!(
        su[0][..3],
        [
            "HELO lb1.example.org",
            "MAIL FROM:<lb@example.org>",
            "RCPT TO:<ops@example.org>"
        ]
    );
    assert!(su[0][3].contains("Server web/s1 is UP"), "{su:#?}");
    // The `alert`-level backend's UP was not mailed, by either.
    for s in &sinks {
        assert_eq!(s.quiet(Duration::from_millis(500)), Vec::new());
    }
}

/// `sluice -c` says what `haproxy -c` says of `mailers` sections and
/// `email-alert` lines, misused or whole.
#[test]
fn mailers_and_email_alert_are_read_as_haproxy_reads_them() {
    if !available() {
        return;
    }
    let base = "defaults\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\n";
    let mailers = "mailers mx\n  mailer a 127.0.0.1:25\n";
    let whole = "  email-alert mailers mx\n  email-alert from a@b\n  email-alert to c@d\n";
    let cases: Vec<(&str, String)> = vec![
        ("whole", format!("{mailers}{base}backend b\n{whole}")),
        (
            "level",
            format!(
                "{mailers}{base}backend b\n{whole}  email-alert level info\n  email-alert myhostname lb\n"
            ),
        ),
        (
            "unknown mailers",
            format!(
                "{mailers}{base}backend b\n  email-alert mailers nope\n  email-alert from a@b\n  email-alert to c@d\n"
            ),
        ),
        (
            "no from",
            format!("{mailers}{base}backend b\n  email-alert mailers mx\n  email-alert to c@d\n"),
        ),
        (
            "from only",
            format!("{mailers}{base}backend b\n  email-alert from a@b\n"),
        ),
        (
            "bad level",
            format!("{mailers}{base}backend b\n  email-alert level foo\n"),
        ),
        (
            "level alone",
            format!("{mailers}{base}backend b\n  email-alert level\n"),
        ),
        (
            "no argument",
            format!("{mailers}{base}backend b\n  email-alert\n"),
        ),
        (
            "unknown argument",
            format!("{mailers}{base}backend b\n  email-alert foo bar\n"),
        ),
        (
            "in defaults",
            format!("{mailers}{base}{whole}backend b\n  server s 127.0.0.1:1\n"),
        ),
        ("no name", "mailers\n".to_string()),
        ("mailer alone", "mailers mx\n  mailer a\n".to_string()),
        ("bad port", "mailers mx\n  mailer a foo:bar\n".to_string()),
        ("no port", "mailers mx\n  mailer a 127.0.0.1\n".to_string()),
        ("timeout alone", "mailers mx\n  timeout mail\n".to_string()),
        ("bad timeout", "mailers mx\n  timeout mail x\n".to_string()),
        (
            "other timeout",
            "mailers mx\n  timeout foo 1s\n".to_string(),
        ),
        ("unknown keyword", "mailers mx\n  foo\n".to_string()),
        ("same name", "mailers mx\nmailers mx\n".to_string()),
        ("unused", format!("{mailers}  timeout mail 20s\n")),
    ];
    let cases = cases.into_iter().map(|(l, c)| (l.to_string(), c));
    // Every alert and warning, with pids and file names left out (the
    // two runs differ there).
    let said = |stderr: &str| -> String {
        stderr
            .lines()
            .filter(|l| l.starts_with("[ALERT]") || l.starts_with("[WARNING]"))
            .filter(|l| !l.contains("Fatal errors") && !l.contains("Error(s) found"))
            .map(|l| {
                let msg = l.split_once(" : config : ").map_or(l, |(_, m)| m);
                match msg.find('[').zip(msg.find(':')) {
                    Some((a, b)) if a < b && msg.starts_with("parsing [") => {
                        format!("parsing [{}", &msg[b..])
                    }
                    _ => strip_dirs(&msg.replace("haproxy.cfg", "F").replace("sluice.cfg", "F")),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    support::haproxy::assert_check_agrees("mailers-check", cases, said);
}

/// The temporary directories of the two runs' files left out.
fn strip_dirs(msg: &str) -> String {
    let mut out = msg.to_string();
    while let Some(i) = out.find("/tmp/") {
        let Some(j) = out[i..].find("/F") else { break };
        out.replace_range(i..i + j + 1, "");
    }
    out
}
