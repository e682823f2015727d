//! `setenv`, `presetenv`, `unsetenv` and `resetenv` against the real
//! HAProxy 2.6: the same configuration runs under haproxy and sluice; the
//! `${...}` of the lines after them, the `env` fetch and `show env` must
//! say the same; `-c` refuses what haproxy refuses, with its messages.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use support::haproxy::{self, Haproxy};
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_edits_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let mut seen = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let dir = TempDir::new("genv");
        let sock = dir.join("s.sock");
        let front = Listen::new();
        // HOME is set for both (the test's environment); SLUICE_TEST_GONE
        // is not, and resetenv keeps only what it names.
        let cfg = format!(
            "global
    stats socket {} level admin
    setenv FOO bar
    presetenv FOO baz
    presetenv NEWV x
    unsetenv HOME
    setenv LATE ${{FOO}}-${{NEWV}}
    setenv QUOTED \"${{FOO}}-${{NEWV}}\"
defaults
    mode http
    timeout client 5s
    timeout server 5s
    timeout connect 5s
frontend f
    bind {front}
    http-request return status 200 content-type text/plain lf-string \"${{FOO}}-${{NEWV}}-[%[env(FOO)]]-[%[env(HOME)]]-[%[env(LATE)]]-[%[env(QUOTED)]]\"
",
            sock.display()
        );
        let req = b"GET / HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n";
        let mut out = Vec::new();
        {
            let _h = (tool == "haproxy").then(|| Haproxy::start("genv", &cfg, &[&front]));
            let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
            let a = haproxy::exchange(front.addr(), req, false).await;
            let a = String::from_utf8_lossy(&a).into_owned();
            out.push(a.rsplit("\r\n\r\n").next().unwrap_or("").to_string());
            for name in ["FOO", "NEWV", "HOME", "LATE"] {
                out.push(cli(&sock, &format!("show env {name}")).await);
            }
        }
        seen.push(out);
    }
    // Not vacuous: haproxy expanded and answered what the lines say (a
    // variable outside double quotes is not expanded).
    assert_eq!(
        seen[0][0], "bar-x-[bar]-[]-[${FOO}-${NEWV}]-[bar-x]",
        "{:?}",
        seen[0]
    );
    assert_eq!(seen[0], seen[1]);
}

#[test]
fn environment_edit_misuse_is_refused_as_haproxy_refuses_it() {
    if !haproxy::available() {
        return;
    }
    let cases = [
        "setenv",
        "setenv A",
        "presetenv A",
        "unsetenv",
        "resetenv",
        "setenv A b\n    resetenv B\n    setenv C ${A}",
    ]
    .map(|l| (l.to_string(), format!("global\n    {l}\n")));
    haproxy::assert_check_agrees("genvc", cases, haproxy::parsing_message);
}
