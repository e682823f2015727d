//! Lua's view of the running process against the real HAProxy 2.6,
//! which runs the same script (`tests/data/lua/cli.lua`) on the same
//! configuration: commands of the stats socket a script registers
//! (`core.register_cli`), answered with what they learn from
//! `core.backends`, `core.frontends`, `core.proxies`, the Proxy and Server
//! objects and `core.get_info()`, and with the server changes they make;
//! the replies through `socat` as operators send them, and the stderr
//! lines of the state changes and of a failing command.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::haproxy;
use support::{Listen, TempDir, inherit};

/// `printf '<input>' | socat - unix-connect:<sock>`.
fn socat(sock: &Path, input: &str) -> String {
    let mut child = Command::new("socat")
        .arg("-")
        .arg(format!("unix-connect:{}", sock.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn socat");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("socat");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The stderr lines of the servers' state changes and the Lua errors,
/// their text only: HAProxy's `[WARNING]  (<pid>) : ` and sluice's
/// timestamp, level and `severity=` field around the same sentence (the
/// form of sluice's own stderr lines, not the script's doing).
fn stderr_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let at = l.find("Server be/").or_else(|| l.find("Lua cli"))?;
            let m = &l[at..];
            Some(m.split(" severity=").next().unwrap_or(m).to_string())
        })
        .collect()
}

#[test]
fn cli_commands_and_proxies_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lua/cli.lua");
    let mut replies = Vec::new();
    let mut stderrs = Vec::new();
    for bin in [haproxy::HAPROXY.to_string(), support::bin()] {
        let dir = TempDir::new("lua-cli");
        let (fe, li) = (Listen::new(), Listen::new());
        let sock = dir.join("admin.sock");
        let cfg = format!(
            "global
    nbthread 1
    maxconn 100
    stats socket {} level admin
    lua-load {}
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {fe}
    default_backend be
backend be
    server s1 127.0.0.1:1 weight 3
    server s2 127.0.0.1:2
listen li
    mode tcp
    bind {li}
    server x 127.0.0.1:3
",
            sock.display(),
            script.display()
        );
        let path = dir.write("c.cfg", &cfg);
        let mut cmd = Command::new(&bin);
        inherit(&mut cmd, &[&fe, &li]);
        let mut child = cmd
            .arg("-f")
            .arg(&path)
            .arg("-db")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("stderr")).expect("stderr"))
            .spawn()
            .expect("spawn");
        let end = Instant::now() + Duration::from_secs(10);
        while std::os::unix::net::UnixStream::connect(&sock).is_err() {
            assert!(Instant::now() < end, "{bin} did not open its stats socket");
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut got = Vec::new();
        for c in [
            "show greeting",
            "show greeting x y",
            "lua backends",
            "lua weight 7",
            "lua weight 300",
            "lua broken",
            "lua server",
            "show greeting a;lua backends",
        ] {
            got.push((c, socat(&sock, &format!("{c}\n"))));
        }
        let _ = child.kill();
        let _ = child.wait();
        replies.push(got);
        stderrs.push(stderr_lines(
            &std::fs::read_to_string(dir.join("stderr")).unwrap_or_default(),
        ));
    }
    assert!(
        replies[0][2]
            .1
            .contains("  s1 puid=1 addr=127.0.0.1:1 weight=3 status="),
        "{:?}",
        replies[0][2]
    );
    assert!(
        replies[0][6]
            .1
            .starts_with("maxconn nil 20\nmaxconn Trailing garbage in maxconn string 20\naddr ["),
        "{:?}",
        replies[0][6]
    );
    let mut differ = haproxy::Differences::default();
    for (h, s) in replies[0].iter().zip(&replies[1]) {
        differ.compare(h.0.to_string(), &h.1, &s.1);
    }
    differ.compare("stderr".to_string(), &stderrs[0], &stderrs[1]);
    differ.assert_none();
}
