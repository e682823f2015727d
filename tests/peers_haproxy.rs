//! The peers protocol against the real HAProxy 2.6: `peers` sections
//! checked by both (`-c`: exit code and the first alert or warning, word
//! for word), and tables kept in step between sluice and haproxy, and
//! between two sluice instances, over TCP, in both directions, with the
//! full resynchronisation a restarted peer asks for.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use support::haproxy::{self, Haproxy};
use support::*;

/// The first alert (else warning) of a `-c` run, without the process id
/// (which differs) and the `config : ` tag, the configuration's path
/// masked (each program reads its own file): what the checks compare.
fn first_diag(stderr: &str) -> String {
    let path = regex::Regex::new(r"/tmp/[^:]*\.cfg").expect("regex");
    let pick = |tag: &str| {
        stderr.lines().find(|l| l.starts_with(tag)).map(|l| {
            let m = l.split_once(" : config : ").map_or(l, |(_, m)| m);
            path.replace_all(m, "CFG").into_owned()
        })
    };
    pick("[ALERT]")
        .or_else(|| pick("[WARNING]"))
        .unwrap_or_else(|| "(clean)".to_string())
}

/// `peers` sections as this process (`localpeer A`) reads them.
const PEERS_CONFIGS: &[(&str, &str)] = &[
    (
        "two peers and a table",
        "peers p\n    peer A 127.0.0.1:10000\n    peer B 127.0.0.1:10001\n    table t type ip size 10 store gpc0\n",
    ),
    (
        "bind and servers",
        "peers p\n    bind 127.0.0.1:10000\n    server A\n    server B 127.0.0.1:10001\n",
    ),
    (
        "bind after peer",
        "peers p\n    bind 127.0.0.1:10000\n    peer A 127.0.0.1:10001\n",
    ),
    (
        "peer after bind",
        "peers p\n    peer A 127.0.0.1:10001\n    bind 127.0.0.1:10000\n",
    ),
    ("peer without port", "peers p\n    peer A 127.0.0.1\n"),
    ("peer without address", "peers p\n    peer A\n"),
    (
        "local peer twice",
        "peers p\n    peer A 127.0.0.1:1\n    peer A 127.0.0.1:2\n",
    ),
    (
        "another peer twice",
        "peers p\n    peer B 127.0.0.1:1\n    peer B 127.0.0.1:2\n    peer A 127.0.0.1:3\n",
    ),
    (
        "two binds",
        "peers p\n    bind 127.0.0.1:1\n    bind 127.0.0.1:2\n    server A\n",
    ),
    (
        "check ignored, bad host",
        "peers p\n    peer A 127.0.0.1:1 check\n    peer B nosuchhost.invalid:2\n",
    ),
    (
        "unknown peer option",
        "peers p\n    peer A 127.0.0.1:1\n    peer B 127.0.0.1:2 foo\n",
    ),
    (
        "disabled",
        "peers p\n    disabled\n    peer A 127.0.0.1:1\n",
    ),
    (
        "local server with an address",
        "peers p\n    server A 127.0.0.1:1\n    server B 127.0.0.1:2\n",
    ),
    (
        "unknown bind option",
        "peers p\n    bind 127.0.0.1:1 foo\n    server A\n",
    ),
    (
        "no local peer, table peers",
        "peers p\n    peer B 127.0.0.1:2\nfrontend fe\n    bind 127.0.0.1:3\n    stick-table type ip size 10 peers p\n",
    ),
    (
        "table peers",
        "peers p\n    peer A 127.0.0.1:1\n    peer B 127.0.0.1:2\nfrontend fe\n    bind 127.0.0.1:3\n    stick-table type ip size 10 peers p\n",
    ),
    (
        "default-bind",
        "peers p\n    default-bind v4v6\n    bind :1\n    server A\n",
    ),
    (
        "log",
        "peers p\n    log stdout format raw local0\n    peer A 127.0.0.1:1\n",
    ),
    ("local server only", "peers p\n    server A\n"),
    (
        "same address as the bind",
        "peers p\n    bind 127.0.0.1:1\n    server B 127.0.0.1:1\n",
    ),
    (
        "two sections",
        "peers p\n    peer A 127.0.0.1:1\npeers q\n    peer A 127.0.0.1:1\n",
    ),
    (
        "ssl without a CA",
        "peers p\n    peer A 127.0.0.1:1\n    peer B 127.0.0.1:2 ssl verify required\n",
    ),
    (
        "default-server",
        "peers p\n    default-server ssl verify none\n    peer A 127.0.0.1:1\n    peer B 127.0.0.1:2\n",
    ),
    (
        "ssl listener without a certificate",
        "peers p\n    default-server ssl verify none\n    default-bind ssl\n    peer A 127.0.0.1:1\n    peer B 127.0.0.1:2\n",
    ),
    (
        "default-server unknown",
        "peers p\n    default-server 1zzzzzzzzzzzz\n    peer A 127.0.0.1:1\n",
    ),
];

#[test]
fn peers_sections_checked_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let head = "global\n    localpeer A\ndefaults\n    mode http\n    timeout connect 5s\n    timeout client 5s\n    timeout server 5s\n";
    let cases = PEERS_CONFIGS
        .iter()
        .map(|(label, cfg)| (label.to_string(), format!("{head}{cfg}")));
    haproxy::assert_check_agrees("peers-check", cases, first_diag);
}

/// A TLS listener whose certificate comes on the `bind` line after a
/// `default-bind ssl`, and a local peer the others reach without TLS (or
/// the other way round): HAProxy's warnings.
#[test]
fn tls_mismatch_warned_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("peers-tls-check");
    let cert =
        rcgen::generate_simple_self_signed(vec!["peer.test".to_string()]).expect("certificate");
    let pem = dir.write(
        "peer.pem",
        &format!("{}{}", cert.cert.pem(), cert.signing_key.serialize_pem()),
    );
    let head = "global\n    localpeer A\n";
    let cases = [
        (
            "ssl listener, plain local server",
            format!(
                "{head}peers p\n    default-bind ssl\n    bind 127.0.0.1:1 crt {}\n    server A\n    server B 127.0.0.1:2\n",
                pem.display()
            ),
        ),
        (
            "plain listener, ssl local server",
            format!(
                "{head}peers p\n    peer A 127.0.0.1:1 ssl verify none\n    peer B 127.0.0.1:2\n"
            ),
        ),
        (
            "both ssl",
            format!(
                "{head}peers p\n    default-server ssl verify none\n    default-bind ssl crt {}\n    peer A 127.0.0.1:1\n    peer B 127.0.0.1:2\n",
                pem.display()
            ),
        ),
    ];
    haproxy::assert_check_agrees(
        "peers-tls-check",
        cases.map(|(l, c)| (l.to_string(), c)),
        first_diag,
    );
}

/// `-L` names the local peer as `localpeer` does, and `localpeer` after
/// it is ignored with HAProxy's warning.
#[test]
fn local_peer_from_the_command_line() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("peers-l");
    for (label, cfg) in [
        (
            "-L",
            "peers p\n    peer B 127.0.0.1:1\n    peer A 127.0.0.1:2\n",
        ),
        (
            "-L and localpeer",
            "global\n    localpeer B\npeers p\n    peer B 127.0.0.1:1\n",
        ),
        ("-L, no such peer", "peers p\n    peer B 127.0.0.1:1\n"),
    ] {
        let path = dir.write("c.cfg", cfg);
        let path = path.to_str().expect("utf-8 path");
        let h = std::process::Command::new(haproxy::HAPROXY)
            .args(["-c", "-L", "A", "-f", path])
            .output()
            .expect("haproxy");
        let s = run_sluice(&["-c", "-L", "A", "-f", path], None);
        let herr = String::from_utf8_lossy(&h.stderr);
        assert_eq!(
            (h.status.code(), first_diag(&herr)),
            (s.code(), first_diag(&s.stderr)),
            "{label}"
        );
    }
}

// ---------------------------------------------------------------------
// Live sessions: two processes with the same `peers` section, each its
// own local peer, on held ports (their numbers are in both
// configurations before either listens).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One side's configuration: `me` is its local peer, its stats socket is
/// `<dir>/<me>.sock`, and its frontend (on `fe`) tracks every client in
/// the section's table.
fn peer_config(me: &str, dir: &Path, ports: [u16; 2], fe: &Listen, extra: &str) -> String {
    format!(
        "global
    stats socket {dir}/{me}.sock level admin
    localpeer {me}
peers mypeers
{extra}    peer A 127.0.0.1:{}
    peer B 127.0.0.1:{}
    table abuse type ip size 1k expire 5m store gpc0,http_req_rate(10s)
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind fd@{}
    http-request track-sc0 src table mypeers/abuse
    http-request return status 200
",
        ports[0],
        ports[1],
        fe.fd(),
        dir = dir.display(),
    )
}

/// A command on a stats socket, its whole reply.
fn cli_sync(sock: &Path, cmd: &str) -> String {
    let mut s = std::os::unix::net::UnixStream::connect(sock)
        .unwrap_or_else(|e| panic!("connect {}: {e}", sock.display()));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("{cmd}\n").as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// Polls `cmd` on `sock` until `ok` holds of its reply (at most 1,000
/// tries, 20 ms apart: readiness, not a timing assertion).
fn poll(sock: &Path, cmd: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    for _ in 0..1000 {
        if std::os::unix::net::UnixStream::connect(sock).is_ok() {
            last = cli_sync(sock, cmd);
            if ok(&last) {
                return last;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what}: never; last `{cmd}`:\n{last}");
}

/// Waits until the table of `sock` has `key` with `data` (`gpc0=5`).
fn wait_entry(sock: &Path, key: &str, data: &str) {
    let needle = format!("key={key} ");
    poll(
        sock,
        "show table mypeers/abuse",
        &format!("{} holds {key} {data}", sock.display()),
        |t| {
            t.lines()
                .any(|l| l.contains(&needle) && l.split(' ').any(|w| w == data))
        },
    );
}

fn set_gpc0(sock: &Path, key: &str, v: u32) {
    let r = cli_sync(
        sock,
        &format!("set table mypeers/abuse key {key} data.gpc0 {v}"),
    );
    assert_eq!(r.trim(), "", "set table on {}", sock.display());
}

/// One HTTP/1.0 request from 127.0.0.1 through `fe`.
fn request_through(fe: &Listen) {
    let mut s = std::net::TcpStream::connect(fe.addr()).expect("connect fe");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    assert!(
        out.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&out)
    );
}

/// A side of the test, haproxy or sluice running the configuration of
/// its local peer: held for its `Drop`, which kills it.
type Side = Box<dyn std::any::Any>;

struct Node {
    me: &'static str,
    dir: PathBuf,
    ports: [u16; 2],
    fe: Listen,
    /// Lines of the `peers` section before the peers (TLS).
    extra: String,
}

impl Node {
    fn new(me: &'static str, dir: &TempDir, ports: [u16; 2]) -> Node {
        Node {
            me,
            dir: dir.path().to_path_buf(),
            ports,
            fe: Listen::new(),
            extra: String::new(),
        }
    }

    fn sock(&self) -> PathBuf {
        self.dir.join(format!("{}.sock", self.me))
    }

    fn start(&self, haproxy: bool) -> Side {
        let cfg = peer_config(self.me, &self.dir, self.ports, &self.fe, &self.extra);
        let _ = std::fs::remove_file(self.sock());
        let side: Side = if haproxy {
            Box::new(Haproxy::start("peers", &cfg, &[&self.fe]))
        } else {
            Box::new(Sluice::start(&cfg))
        };
        poll(&self.sock(), "show info", "stats socket answers", |r| {
            r.contains("Pid:")
        });
        side
    }
}

/// Both directions of one pair, from start, then across a restart of
/// each side: `a` and `b` say which program plays A and which B.
fn converge(a_haproxy: bool, b_haproxy: bool, tls: bool) {
    let dir = TempDir::new("peers-live");
    let (_held, ports) = hold_ports::<2>();
    let mut a = Node::new("A", &dir, ports);
    let mut b = Node::new("B", &dir, ports);
    if tls {
        // Each listens with TLS and connects with it, unverified (a
        // self-signed certificate for both).
        let cert =
            rcgen::generate_simple_self_signed(vec!["peer.test".to_string()]).expect("certificate");
        let pem = dir.write(
            "peer.pem",
            &format!("{}{}", cert.cert.pem(), cert.signing_key.serialize_pem()),
        );
        let extra = format!(
            "    default-bind ssl crt {}\n    default-server ssl verify none\n",
            pem.display()
        );
        a.extra = extra.clone();
        b.extra = extra;
    }
    let side_b = b.start(b_haproxy);
    let side_a = a.start(a_haproxy);
    // A pushes to B: a tracked request, then a counter set by the CLI.
    request_through(&a.fe);
    wait_entry(&b.sock(), "127.0.0.1", "gpc0=0");
    set_gpc0(&a.sock(), "10.0.0.1", 5);
    wait_entry(&b.sock(), "10.0.0.1", "gpc0=5");
    // B pushes to A.
    set_gpc0(&b.sock(), "10.0.0.2", 7);
    wait_entry(&a.sock(), "10.0.0.2", "gpc0=7");
    // A restarts empty and is taught the whole table by B.
    drop(side_a);
    let side_a = a.start(a_haproxy);
    for (k, v) in [
        ("127.0.0.1", "gpc0=0"),
        ("10.0.0.1", "gpc0=5"),
        ("10.0.0.2", "gpc0=7"),
    ] {
        wait_entry(&a.sock(), k, v);
    }
    // B restarts and is taught it by A.
    drop(side_b);
    let side_b = b.start(b_haproxy);
    for (k, v) in [
        ("127.0.0.1", "gpc0=0"),
        ("10.0.0.1", "gpc0=5"),
        ("10.0.0.2", "gpc0=7"),
    ] {
        wait_entry(&b.sock(), k, v);
    }
    // And they go on pushing to each other.
    set_gpc0(&a.sock(), "10.0.0.3", 9);
    wait_entry(&b.sock(), "10.0.0.3", "gpc0=9");
    set_gpc0(&b.sock(), "10.0.0.1", 6);
    wait_entry(&a.sock(), "10.0.0.1", "gpc0=6");
    drop((side_a, side_b));
}

#[test]
fn two_sluice_instances_converge() {
    converge(false, false, false);
}

#[test]
fn sluice_and_haproxy_converge() {
    if !haproxy::available() {
        return;
    }
    converge(false, true, false);
}

#[test]
fn haproxy_and_sluice_converge() {
    if !haproxy::available() {
        return;
    }
    converge(true, false, false);
}

/// `show peers` masked where it must differ: the addresses of objects
/// (each program's memory), the ports (each run holds its own), the
/// section's start date, the timers and ages (`resync_timeout`,
/// `last_hdshk`, `reconnect`, `heartbeat`: when the command runs) and
/// the scheduler's `task_calls`.
fn mask_show_peers(s: &str) -> String {
    // Flags are values, not addresses: kept.
    let ptr = regex::Regex::new(r"(flags=)?0x[0-9a-f]{6,}").expect("regex");
    // Each run holds its own ports.
    let port = regex::Regex::new(r"addr=127\.0\.0\.1:\d+").expect("regex");
    let date = regex::Regex::new(r"\[\d\d/\w+/\d{4}:\d\d:\d\d:\d\d\]").expect("regex");
    let timers =
        regex::Regex::new(r"(resync_timeout|last_hdshk|reconnect|heartbeat|task_calls)=\S+")
            .expect("regex");
    let s = ptr.replace_all(s, |c: &regex::Captures<'_>| {
        if c.get(1).is_some() {
            c[0].to_string()
        } else {
            "PTR".to_string()
        }
    });
    let s = port.replace_all(&s, "addr=127.0.0.1:PORT");
    let s = date.replace_all(&s, "[DATE]");
    let s = timers.replace_all(&s, "$1=T");
    s.into_owned()
}

/// What A shows, haproxy or sluice, after the same steps against a
/// haproxy B: started and taught by B, an update from B, one to B.
fn show_peers_of(a_haproxy: bool) -> (String, String, String, String) {
    let dir = TempDir::new("peers-show");
    let (_held, ports) = hold_ports::<2>();
    // B knows A at a port nothing listens on: only A connects, so which
    // session lives (and what it shows) is never a race's outcome.
    let (_never, nowhere) = hold_port();
    let a = Node::new("A", &dir, ports);
    let b = Node::new("B", &dir, [nowhere, ports[1]]);
    let _b = b.start(true);
    set_gpc0(&b.sock(), "10.0.0.1", 1);
    let _a = a.start(a_haproxy);
    wait_entry(&a.sock(), "10.0.0.1", "gpc0=1");
    set_gpc0(&b.sock(), "10.0.0.2", 2);
    wait_entry(&a.sock(), "10.0.0.2", "gpc0=2");
    set_gpc0(&a.sock(), "10.0.0.3", 3);
    wait_entry(&b.sock(), "10.0.0.3", "gpc0=3");
    // B acknowledged it (its ack follows the update at once): what A
    // pushed last is what B acknowledged last.
    let acked =
        regex::Regex::new(r"last_pushed=(\d+) last_get=\d+ teaching_origin=\d+ update=(\d+)")
            .expect("regex");
    let all = poll(&a.sock(), "show peers", "A sees B's ack", |r| {
        acked.captures_iter(r).any(|c| c[1] == c[2] && &c[1] != "0")
    });
    (
        all,
        cli_sync(&a.sock(), "show peers - mypeers"),
        cli_sync(&a.sock(), "show peers nope"),
        cli_sync(&a.sock(), "show peers dict"),
    )
}

#[test]
fn show_peers_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let (h, h_one, h_none, h_dict) = show_peers_of(true);
    let (s, s_one, s_none, s_dict) = show_peers_of(false);
    for (what, s, h) in [
        ("show peers", s, h),
        ("show peers - mypeers", s_one, h_one),
        ("show peers nope", s_none, h_none),
        ("show peers dict", s_dict, h_dict),
    ] {
        let (s, h) = (mask_show_peers(&s), mask_show_peers(&h));
        assert_eq!(s, h, "{what}: sluice:\n{s}\nhaproxy:\n{h}");
    }
}

#[test]
fn sluice_and_haproxy_converge_over_tls() {
    if !haproxy::available() {
        return;
    }
    converge(false, true, true);
}

#[test]
fn two_sluice_instances_converge_over_tls() {
    converge(false, false, true);
}

/// A reload that leaves the section and its table alone keeps the
/// session (no new connection) and the table; one that changes the
/// table's definition empties it, and the peer teaches it again.
#[test]
fn reloads_keep_or_restart_the_sessions() {
    let dir = TempDir::new("peers-reload");
    let (_held, ports) = hold_ports::<2>();
    let a = Node::new("A", &dir, ports);
    let b = Node::new("B", &dir, ports);
    let _b = b.start(false);
    let cfg = peer_config("A", dir.path(), ports, &a.fe, "");
    let side_a = Sluice::start(&cfg);
    poll(&a.sock(), "show info", "A's stats socket answers", |r| {
        r.contains("Pid:")
    });
    set_gpc0(&a.sock(), "10.0.0.1", 1);
    wait_entry(&b.sock(), "10.0.0.1", "gpc0=1");
    let r = cli_sync(&a.sock(), "reload");
    assert!(r.contains("Success=1"), "{r}");
    set_gpc0(&b.sock(), "10.0.0.2", 2);
    wait_entry(&a.sock(), "10.0.0.2", "gpc0=2");
    set_gpc0(&a.sock(), "10.0.0.3", 3);
    wait_entry(&b.sock(), "10.0.0.3", "gpc0=3");
    let peers = cli_sync(&a.sock(), "show peers");
    assert!(
        peers.contains("id=B(remote,active)") && peers.contains("new_conn=1 "),
        "{peers}"
    );
    // Another size: a new table, taught by B.
    std::fs::write(&side_a.cfg, cfg.replace("size 1k", "size 2k")).expect("write config");
    let r = cli_sync(&a.sock(), "reload");
    assert!(r.contains("emptied"), "{r}");
    for (k, v) in [
        ("10.0.0.1", "gpc0=1"),
        ("10.0.0.2", "gpc0=2"),
        ("10.0.0.3", "gpc0=3"),
    ] {
        wait_entry(&a.sock(), k, v);
    }
    // A third peer (never up): the section starts again over the same
    // table, entries kept, and updates go on crossing.
    let (_c, c_port) = hold_port();
    let three = cfg.replace("size 1k", "size 2k").replace(
        "    table abuse",
        &format!("    peer C 127.0.0.1:{c_port}\n    table abuse"),
    );
    std::fs::write(&side_a.cfg, three).expect("write config");
    let r = cli_sync(&a.sock(), "reload");
    assert!(r.contains("Success=1") && !r.contains("emptied"), "{r}");
    poll(&a.sock(), "show peers", "A lists C", |r| {
        r.contains("id=C(remote")
    });
    wait_entry(&a.sock(), "10.0.0.1", "gpc0=1");
    set_gpc0(&a.sock(), "10.0.0.4", 4);
    wait_entry(&b.sock(), "10.0.0.4", "gpc0=4");
    set_gpc0(&b.sock(), "10.0.0.5", 5);
    wait_entry(&a.sock(), "10.0.0.5", "gpc0=5");
}

/// The status line answered to a hello on a fresh connection to `addr`.
fn hello(addr: std::net::SocketAddr, text: &str) -> (std::net::TcpStream, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect peer");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(text.as_bytes()).unwrap();
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while line.last() != Some(&b'\n') {
        match s.read(&mut b) {
            Ok(1) => line.push(b[0]),
            _ => break,
        }
    }
    (s, String::from_utf8_lossy(&line).into_owned())
}

/// Reads `s` to its end: true when the other side closed it.
fn closed(s: &mut std::net::TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(_) => return false,
        }
    }
}

/// What A answers to hellos, and what becomes of a session when the
/// same peer connects again (the new connection wins, the old one is
/// closed), haproxy's or sluice's. (The collisions `show peers` counts
/// also count A's own attempts to reach B that a connection from B cut,
/// which are a race's outcome: not compared.)
fn hello_answers(a_haproxy: bool) -> Vec<String> {
    let dir = TempDir::new("peers-hello");
    let (_held, ports) = hold_ports::<2>();
    let (_never, nowhere) = hold_port();
    let a = Node::new("A", &dir, [ports[0], nowhere]);
    let _a = a.start(a_haproxy);
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", ports[0]).parse().unwrap();
    let mut out = Vec::new();
    for h in [
        "HAProxyS 2.1\nA\nB 1 1\n",
        "HAProxyS 2.0\nA\nB 1 1\n",
        "HAProxyS 2.2\nA\nB 1 1\n",
        "HAProxyS 3.0\nA\nB 1 1\n",
        "HAProxyX 2.1\nA\nB 1 1\n",
        "HAProxyS 2.1\nZ\nB 1 1\n",
        "HAProxyS 2.1\nA\nC 1 1\n",
        "HAProxyS 2.1\nA\nB\n",
    ] {
        let (_s, line) = hello(addr, h);
        out.push(format!("{h:?} -> {line:?}"));
    }
    let (mut first, line) = hello(addr, "HAProxyS 2.1\nA\nB 1 1\n");
    out.push(format!("first -> {line:?}"));
    let (_second, line) = hello(addr, "HAProxyS 2.1\nA\nB 1 1\n");
    out.push(format!("second -> {line:?}"));
    out.push(format!("first closed: {}", closed(&mut first)));
    out
}

#[test]
fn hellos_answered_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let h = hello_answers(true);
    let s = hello_answers(false);
    assert_eq!(s, h, "sluice:\n{s:#?}\nhaproxy:\n{h:#?}");
}

/// The shared abuse list of `docs/rate-limiting.md` (its fourth `haproxy`
/// block), run as written by two sluice instances: `lb1` and `lb2`, the
/// peers' ports, the listener and the server replaced by the test's, a
/// stats socket added.
fn abuse_recipe(me: &str, sock: &Path, ports: [u16; 2], fe: &Listen, server: &str) -> String {
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/rate-limiting.md"),
    )
    .expect("docs/rate-limiting.md");
    let blocks: Vec<&str> = page.split("```haproxy\n").skip(1).collect();
    let text = blocks[3].split("```").next().expect("block");
    assert!(text.contains("localpeer lb1") && text.contains("127.0.0.1:8080"));
    text.replace(
        "global\n",
        &format!("global\n    stats socket {} level admin\n", sock.display()),
    )
    .replace("localpeer lb1", &format!("localpeer {me}"))
    .replace("127.0.0.1:10001", &format!("127.0.0.1:{}", ports[0]))
    .replace("127.0.0.1:10002", &format!("127.0.0.1:{}", ports[1]))
    .replace("127.0.0.1:8080", &format!("fd@{}", fe.fd()))
    .replace("127.0.0.1:8081", server)
}

/// The status of `GET /` through `fe`, from source address `src`.
fn status_from(src: &str, fe: &Listen) -> u16 {
    use socket2::{Domain, Socket, Type};
    let sock = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
    let from: std::net::SocketAddr = format!("{src}:0").parse().expect("address");
    sock.bind(&from.into()).expect("bind source");
    sock.connect(&fe.addr().into()).expect("connect fe");
    let mut s: std::net::TcpStream = sock.into();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out)
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abuse_list_shared_by_two_instances() {
    let app = Backend::start("app").await;
    let dir = TempDir::new("peers-abuse");
    let (_held, ports) = hold_ports::<2>();
    let fes = [Listen::new(), Listen::new()];
    let socks = [dir.join("lb1.sock"), dir.join("lb2.sock")];
    let server = app.hostport();
    let cfgs: Vec<String> = ["lb1", "lb2"]
        .iter()
        .zip(&socks)
        .zip(&fes)
        .map(|((me, sock), fe)| abuse_recipe(me, sock, ports, fe, &server))
        .collect();
    let socks2 = socks.clone();
    tokio::task::spawn_blocking(move || {
        let _lb1 = Sluice::start(&cfgs[0]);
        let _lb2 = Sluice::start(&cfgs[1]);
        let show = |i: usize, key: &str, data: &str| {
            let needle = format!("key={key} ");
            poll(
                &socks2[i],
                "show table lbs/abuse",
                &format!("lb{} lists {key} {data}", i + 1),
                |t| {
                    t.lines()
                        .any(|l| l.contains(&needle) && l.split(' ').any(|w| w == data))
                },
            );
        };
        // Listed by an operator on lb1: refused by lb2.
        assert_eq!(status_from("127.0.0.2", &fes[1]), 200);
        // The peers are connected and lb1 learnt lb2's entry: the value
        // set next is the newer one on both (set before the first sync,
        // each side's teaching could cross the other's).
        show(0, "127.0.0.2", "gpt0=0");
        let r = cli_sync(&socks2[0], "set table lbs/abuse key 127.0.0.2 data.gpt0 1");
        assert_eq!(r.trim(), "");
        show(1, "127.0.0.2", "gpt0=1");
        assert_eq!(status_from("127.0.0.2", &fes[1]), 403);
        assert_eq!(status_from("127.0.0.3", &fes[1]), 200);
        // Above 100 requests in 10 s on lb1: refused by both.
        let codes: Vec<u16> = (0..102)
            .map(|_| status_from("127.0.0.4", &fes[0]))
            .collect();
        assert!(codes[..101].iter().all(|c| *c == 200), "{codes:?}");
        assert_eq!(codes[101], 403);
        show(1, "127.0.0.4", "gpt0=1");
        assert_eq!(status_from("127.0.0.4", &fes[1]), 403);
        // Lifted on lb2: let through by lb1 again.
        let r = cli_sync(&socks2[1], "set table lbs/abuse key 127.0.0.2 data.gpt0 0");
        assert_eq!(r.trim(), "");
        show(0, "127.0.0.2", "gpt0=0");
        assert_eq!(status_from("127.0.0.2", &fes[0]), 200);
    })
    .await
    .expect("the instances' checks");
}

/// A local peer whose address is taken: the process does not start, with
/// HAProxy's alert (its exit code, its first alert, the configuration's
/// path masked).
#[test]
fn busy_peer_address_refused_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let busy = Listen::new();
    let (_held, [other]) = hold_ports::<1>();
    let dir = TempDir::new("peers-busy");
    let cfg = format!(
        "global\n    localpeer A\npeers p\n    peer A 127.0.0.1:{}\n    peer B 127.0.0.1:{other}\n",
        busy.port()
    );
    let path = dir.write("c.cfg", &cfg);
    let run = |prog: &str| {
        let mut child = std::process::Command::new(prog)
            .args(["-f", path.to_str().expect("utf-8 path"), "-db"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut err = String::new();
        child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut err)
            .expect("read stderr");
        let code = child.wait().expect("wait").code();
        let alert = err
            .lines()
            .find(|l| l.starts_with("[ALERT]"))
            .map(|l| l.split_once(" : ").map_or(l, |(_, m)| m).to_string())
            .unwrap_or_default()
            .replace(path.to_str().expect("utf-8 path"), "CFG");
        (code, alert)
    };
    let h = run(haproxy::HAPROXY);
    let s = run(&bin());
    assert_eq!(s, h);
}

/// Persistence shared by peers: the server a client sticks to on one
/// instance (`server_id`, and `server_key` sent as the protocol's
/// dictionary entry) is the one the other instance knows, haproxy 2.6
/// and sluice each way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stickiness_crosses_between_sluice_and_haproxy() {
    if !haproxy::available() {
        return;
    }
    let app = Backend::start("app").await;
    let server = app.hostport();
    tokio::task::spawn_blocking(move || {
        let dir = TempDir::new("peers-stick");
        let (_held, ports) = hold_ports::<2>();
        let fes = [Listen::new(), Listen::new()];
        let cfg = |me: &str, fe: &Listen| {
            format!(
                "global
    stats socket {dir}/{me}.sock level admin
    localpeer {me}
peers mypeers
    peer A 127.0.0.1:{}
    peer B 127.0.0.1:{}
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind fd@{}
    default_backend be
backend be
    stick-table type ip size 1k expire 5m peers mypeers store server_id,server_key
    stick on src
    server s1 {server}
",
                ports[0],
                ports[1],
                fe.fd(),
                dir = dir.path().display(),
            )
        };
        let socks = [dir.join("A.sock"), dir.join("B.sock")];
        let _b = Haproxy::start("peers-stick", &cfg("B", &fes[1]), &[&fes[1]]);
        let _a = Sluice::start(&cfg("A", &fes[0]));
        let sticks = |i: usize, key: &str| {
            let needle = format!("key={key} ");
            poll(
                &socks[i],
                "show table be",
                &format!("{} sticks {key} to s1", socks[i].display()),
                |t| {
                    t.lines().any(|l| {
                        l.contains(&needle)
                            && l.contains(" server_id=1 ")
                            && l.ends_with(" server_key=s1")
                    })
                },
            );
        };
        assert_eq!(status_from("127.0.0.2", &fes[0]), 200);
        sticks(1, "127.0.0.2");
        assert_eq!(status_from("127.0.0.3", &fes[1]), 200);
        sticks(0, "127.0.0.3");
        // The texts went through the peers' dictionary caches.
        let dict = cli_sync(&socks[0], "show peers dict");
        assert!(dict.contains("  0 -> s1"), "{dict}");
    })
    .await
    .expect("the instances' checks");
}
