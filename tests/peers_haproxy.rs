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
