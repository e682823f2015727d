//! A real SMTP server for the tests: python3-aiosmtpd (`.ci/run` installs
//! it) on 127.0.0.1, on a port of its own choosing, which prints each
//! command it handles so a test can compare dialogues.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

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

pub struct Sink {
    child: Child,
    pub port: u16,
    lines: mpsc::Receiver<(u16, String)>,
}

impl Sink {
    pub fn start() -> Sink {
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
    pub fn dialogues(&self, n: usize) -> Vec<Vec<String>> {
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
    pub fn quiet(&self, d: Duration) -> Vec<(u16, String)> {
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
