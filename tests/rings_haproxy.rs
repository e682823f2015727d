//! `ring` sections against the real HAProxy 2.6: the same configuration
//! runs under haproxy and sluice, the same requests reach both, and what
//! each says is compared byte for byte: `show events` (the list of sinks,
//! each ring's lines in its `format`, `maxlen` cutting them, `-n`, the
//! errors, `-w` following new lines), the lines a
//! ring's `server`s receive over TCP (`log-proto legacy` and
//! `octet-count`), the lines a full ring keeps, and `-c`'s messages for
//! the section's mistakes. Masked: the dates and the pid (they must
//! differ), each checked for its shape first.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use std::io::Read as _;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use regex::Regex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use support::haproxy::{self, Haproxy};
use support::*;

const CFG: &str = r#"
global
    log-tag ringtest
    stats socket {sock} level admin
ring r1
    description "my ring"
    format rfc5424
    maxlen 200
    size 32764
ring r2
    format raw
ring r3
    format raw
ring r4
    format timed
    maxlen 40
    timeout connect 2s
    timeout server 3s
    server legacy {tcp0}
    server counted {tcp1} log-proto octet-count
ring r5
    format rfc3164
defaults
    mode http
    timeout client 5s
    timeout server 5s
    timeout connect 5s
frontend f
    bind {fe0}
    log-format "%ft %b/%s %ST %{+Q}r"
    log ring@r1 local0
    log ring@r2 local1 info
    log ring@r4 local0
    log ring@r5 local2
    http-request return status 200 content-type text/plain string ok
frontend g
    bind {fe1}
    log-format "%{+Q}r pad:{pad}"
    log ring@r3 len 3000 local0
    http-request return status 200 content-type text/plain string ok
"#;

/// A syslog server over TCP: every byte it receives, across connections.
struct TcpSink {
    addr: SocketAddr,
    got: Arc<Mutex<Vec<u8>>>,
}

impl TcpSink {
    fn start() -> TcpSink {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind the syslog server");
        let addr = l.local_addr().expect("its address");
        let got = Arc::new(Mutex::new(Vec::new()));
        let into = got.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(mut c) = conn else { return };
                let into = into.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = c.read(&mut buf) {
                        if n == 0 {
                            return;
                        }
                        into.lock().unwrap().extend_from_slice(&buf[..n]);
                    }
                });
            }
        });
        TcpSink { addr, got }
    }

    /// What it received once `done` says it is all there.
    fn wait(&self, done: impl Fn(&[u8]) -> bool) -> Vec<u8> {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let got = self.got.lock().unwrap().clone();
            if done(&got) {
                return got;
            }
            assert!(
                Instant::now() < end,
                "the syslog server got only {:?}",
                String::from_utf8_lossy(&got)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// One side (haproxy or sluice) on [`CFG`].
struct Side {
    _proc: (Option<Haproxy>, Option<Sluice>),
    _dir: TempDir,
    sock: PathBuf,
    fronts: Vec<Listen>,
    tcp: [TcpSink; 2],
}

impl Side {
    fn start(hap: bool) -> Side {
        let dir = TempDir::new(if hap { "rings-h" } else { "rings-s" });
        let sock = dir.join("cli.sock");
        let fronts = listens(2);
        let tcp = [TcpSink::start(), TcpSink::start()];
        let text = CFG
            .replace("{sock}", &sock.display().to_string())
            .replace("{fe0}", &fronts[0].to_string())
            .replace("{fe1}", &fronts[1].to_string())
            .replace("{tcp0}", &tcp[0].addr.to_string())
            .replace("{tcp1}", &tcp[1].addr.to_string())
            .replace("{pad}", &"p".repeat(1000));
        let proc = if hap {
            let refs: Vec<&Listen> = fronts.iter().collect();
            (Some(Haproxy::start("rings", &text, &refs)), None)
        } else {
            (None, Some(Sluice::start(&text)))
        };
        wait_for(&sock);
        Side {
            _proc: proc,
            _dir: dir,
            sock,
            fronts,
            tcp,
        }
    }

    async fn cli(&self, cmd: &str) -> String {
        cli(&self.sock, cmd).await
    }

    /// The lines of ring `r` once it has `n` of them.
    async fn ring_lines(&self, r: &str, n: usize) -> String {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let out = self.cli(&format!("show events {r}")).await;
            if out.lines().filter(|l| !l.is_empty()).count() >= n {
                return out;
            }
            assert!(Instant::now() < end, "ring {r} has only {out:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Side {
    /// Waits until ring `r` has a line containing `what`.
    async fn ring_containing(&self, r: &str, what: &str) {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let out = self.cli(&format!("show events {r}")).await;
            if out.contains(what) {
                return;
            }
            assert!(Instant::now() < end, "ring {r} has no {what:?}: {out:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn wait_for(sock: &Path) {
    let end = Instant::now() + Duration::from_secs(10);
    while std::os::unix::net::UnixStream::connect(sock).is_err() {
        assert!(Instant::now() < end, "no CLI at {}", sock.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The text with its dates and pids masked, once they have their shape.
fn mask(text: &str) -> String {
    let iso = Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}[+-]\d\d:\d\d").unwrap();
    let bsd = Regex::new(r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d").unwrap();
    let pid = Regex::new(r"ringtest(\[| )\d+").unwrap();
    let t = iso.replace_all(text, "<iso date>");
    let t = bsd.replace_all(&t, "<date>");
    pid.replace_all(&t, "ringtest${1}<pid>").into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rings_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let mut out = Vec::new();
    for hap in [true, false] {
        let side = Side::start(hap);
        let mut d = Vec::new();
        // Before any request: the line of the start-up's probe (each
        // request's line is waited for before the next, so that their
        // order is the requests').
        d.push(("list".to_string(), side.cli("show events").await));
        d.push(("r2 at start".into(), side.ring_lines("r2", 1).await));
        for (n, path) in ["/a", "/b?x=1", "/c"].into_iter().enumerate() {
            assert_eq!(get(side.fronts[0].addr(), path).await.status, 200);
            side.ring_lines("r2", n + 2).await;
        }
        // The start-up's probe of `g` is logged to r3 too; logged late
        // (a loaded box), it fell among the requests' lines on one side
        // only, and the full ring kept one line less there.
        side.ring_containing("r3", "<BADREQ>").await;
        for n in 0..25 {
            let path = format!("/{n}");
            assert_eq!(get(side.fronts[1].addr(), &path).await.status, 200);
            side.ring_containing("r3", &format!("GET {path} ")).await;
        }
        for r in ["r1", "r2", "r4", "r5"] {
            d.push((r.into(), side.ring_lines(r, 3).await));
        }
        d.push(("r3 (full)".into(), side.ring_lines("r3", 10).await));
        for cmd in [
            "show events buf0",
            "show events nope",
            "show events r1 -n",
            "show events r1 -x",
            "show events stdout",
            "show events nope; show events r2",
            "show events",
        ] {
            d.push((cmd.into(), side.cli(cmd).await));
        }
        // -w: the lines there, then the new ones.
        let mut c = tokio::net::UnixStream::connect(&side.sock).await.unwrap();
        c.write_all(b"show events r2 -w\n").await.unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while got.iter().filter(|&&b| b == b'\n').count() < 4 {
            let n = within(Duration::from_secs(10), "-w's lines", c.read(&mut buf)).await;
            got.extend_from_slice(&buf[..n.unwrap()]);
        }
        assert_eq!(get(side.fronts[0].addr(), "/new").await.status, 200);
        while got.iter().filter(|&&b| b == b'\n').count() < 5 {
            let n = within(Duration::from_secs(10), "-w's new line", c.read(&mut buf)).await;
            got.extend_from_slice(&buf[..n.unwrap()]);
        }
        // HAProxy 2.6 goes on until the client goes, whatever it sends
        // (sluice stops at the first key, as the listing says): not
        // compared.
        drop(c);
        d.push(("-w".into(), String::from_utf8_lossy(&got).into_owned()));
        // The servers of r4: each line, cut to 40 bytes, as each
        // log-proto frames it.
        let legacy = side.tcp[0].wait(|b| b.iter().filter(|&&c| c == b'\n').count() >= 5);
        d.push(("legacy".into(), String::from_utf8_lossy(&legacy).into()));
        let counted = side.tcp[1].wait(|b| b.len() >= 5 * 43);
        d.push((
            "octet-count".into(),
            String::from_utf8_lossy(&counted).into(),
        ));
        out.push(d);
    }
    let (h, s) = (&out[0], &out[1]);
    let mut diffs = haproxy::Differences::default();
    for ((what, hv), (_, sv)) in h.iter().zip(s) {
        diffs.compare(what, &mask(hv), &mask(sv));
    }
    diffs.assert_none();
    // The masks hid dates of the right shape, not the lines themselves.
    let r1 = &h.iter().find(|(w, _)| w == "r1").unwrap().1;
    assert!(
        mask(r1).contains(
            "\n<134>1 <iso date> - ringtest <pid> - - f f/<NOSRV> 200 \"GET /a HTTP/1.1\"\n"
        ),
        "{r1}"
    );
    if std::env::var_os("RINGS_SHOW").is_some() {
        for (what, v) in h {
            eprintln!("== {what}\n{v}");
        }
    }
}

/// `-c` on a ring section's mistakes says what haproxy says, with its
/// exit code.
#[test]
fn ring_mistakes_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cases = [
        "ring",
        "ring r1\n    format foo",
        "ring r1\n    maxlen",
        "ring r1\n    maxlen 0",
        "ring r1\n    size abc",
        "ring r1\n    bogus 1",
        "ring r1\n    timeout connect",
        "ring r1\n    timeout server 2x",
        "ring r1\n    description",
        "ring r1\nring r1",
        "ring r1\n    server s1",
        "ring r1\n    server s1 127.0.0.1:5 log-proto foo",
        "ring r1\n    server s1 udp@127.0.0.1:5",
        "ring r1\n    description a b c\n    format iso",
        "ring r1\n    size 20000\n    maxlen 300\n    format timed",
    ]
    .map(|body| {
        let cfg = format!("{body}\nfrontend f\n    bind 127.0.0.1:0\n    timeout client 1s\n");
        (body.replace('\n', " / "), cfg)
    });
    haproxy::assert_check_agrees("ring-c", cases, |stderr| {
        // The message of the first alert, wherever it names its line.
        stderr
            .lines()
            .find(|l| l.contains("ALERT") && l.contains(".cfg:"))
            .map(|l| l.split_once(".cfg:").map_or(l, |(_, m)| m).to_string())
            .unwrap_or_else(|| "(accepted)".to_string())
    });
}
