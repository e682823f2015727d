//! `option external-check` against haproxy 2.6 on the same configuration:
//! each proxy runs its own copy of the same shell script, which records
//! its arguments and environment and exits with the status the test
//! chooses; the test compares what each script was given, the servers'
//! `show stat` check fields and the health check log lines (passing, then
//! failing with exit code 3), and what `-c` says of each misuse.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::haproxy::{Differences, Haproxy, available};
use support::syslog::Syslog;
use support::*;

/// Records `$*` and the exported environment (shell builtins only: the
/// check's PATH may be empty), then exits with the status in `<script>.rc`.
const SCRIPT: &str = r#"#!/bin/sh
{ echo "ARGS: $*"; export -p; echo ---; } >> "$0.log"
read rc < "$0.rc"
exit $rc
"#;

fn script(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("check.sh");
    std::fs::write(&p, SCRIPT).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    set_rc(&p, 0);
    p
}

fn set_rc(script: &Path, rc: i32) {
    std::fs::write(script.with_extension("sh.rc"), format!("{rc}\n")).unwrap();
}

/// The first run's record for `server`, the side's directory masked (each
/// proxy has its own), and `PWD`, which the shell sets from the proxy's
/// working directory, left out.
fn first_run(script: &Path, server: &str, dir: &Path) -> Option<String> {
    let log = std::fs::read_to_string(script.with_extension("sh.log")).ok()?;
    let want = format!("export HAPROXY_SERVER_NAME='{server}'");
    log.split("---\n")
        .find(|run| run.lines().any(|l| l == want))
        .map(|run| {
            run.lines()
                .filter(|l| !l.starts_with("export PWD="))
                .collect::<Vec<_>>()
                .join("\n")
                .replace(dir.to_str().unwrap(), "<dir>")
        })
}

const FIELDS: [&str; 5] = [
    "status",
    "check_status",
    "check_code",
    "check_desc",
    "last_chk",
];

async fn fields(sock: &Path, px: &str, sv: &str) -> Vec<String> {
    let csv = show_stat(sock).await;
    FIELDS.iter().map(|f| csv.get(px, sv, f)).collect()
}

/// Polls until `px/sv` shows `status` with `check`, no check under way.
async fn wait_for(sock: &Path, px: &str, sv: &str, status: &str, check: &str) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let f = fields(sock, px, sv).await;
        if f[0] == status && f[1] == check {
            return f;
        }
        assert!(Instant::now() < end, "{px}/{sv}: {f:?}");
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_checks_run_as_haproxy_runs_them() {
    if !available() {
        return;
    }
    let dirs = [TempDir::new("ext-hap"), TempDir::new("ext-sl")];
    let scripts = [script(dirs[0].path()), script(dirs[1].path())];
    let logs = [Syslog::new(), Syslog::new()];
    let cfg = |i: usize| {
        let d = dirs[i].path().display();
        format!(
            "global
    external-check
    insecure-fork-wanted
    stats socket {d}/stats.sock mode 600 level admin
    log {log} format raw local0 info
defaults
    log global
    option log-health-checks
    timeout connect 2s
    timeout client 5s
    timeout server 5s
    external-check command {script}
# A listener on a UNIX socket: its path and NOT_USED for the port.
listen li
    mode http
    bind unix@{d}/li.sock
    option external-check
    external-check path /usr/bin:/bin
    server s1 127.0.0.1:7 check inter 300ms rise 1 fall 1 maxconn 7
# A backend: no listener, NOT_USED twice, an empty PATH.
backend be
    mode tcp
    option external-check
    server s2 127.0.0.1:9 check inter 300ms rise 1 fall 1
",
            log = logs[i].addr(),
            script = scripts[i].display(),
        )
    };
    let _hap = Haproxy::start("ext-check", &cfg(0), &[]);
    let _sl = Sluice::start(&cfg(1));
    let socks: Vec<PathBuf> = dirs.iter().map(|d| d.join("stats.sock")).collect();
    for sock in &socks {
        let end = Instant::now() + Duration::from_secs(10);
        while std::os::unix::net::UnixStream::connect(sock).is_err() {
            assert!(Instant::now() < end, "no stats socket {sock:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let mut diff = Differences::default();
    let mut up = Vec::new();
    for sock in &socks {
        up.push((
            wait_for(sock, "li", "s1", "UP", "PROCOK").await,
            wait_for(sock, "be", "s2", "UP", "PROCOK").await,
        ));
    }
    diff.compare("passing: li/s1, be/s2 fields", &up[0], &up[1]);
    for (px, sv) in [("li", "s1"), ("be", "s2")] {
        let runs: Vec<Option<String>> = (0..2)
            .map(|i| first_run(&scripts[i], sv, dirs[i].path()))
            .collect();
        assert!(runs[1].is_some(), "sluice ran no check of {px}/{sv}");
        diff.compare(
            format!("{px}/{sv}: arguments and environment"),
            &runs[0],
            &runs[1],
        );
    }
    // Exit code 3: DOWN, PROCERR, code 3.
    for s in &scripts {
        set_rc(s, 3);
    }
    let mut down = Vec::new();
    for sock in &socks {
        down.push((
            wait_for(sock, "li", "s1", "DOWN", "PROCERR").await,
            wait_for(sock, "be", "s2", "DOWN", "PROCERR").await,
        ));
    }
    diff.compare("failing: li/s1, be/s2 fields", &down[0], &down[1]);
    // The health check lines, durations masked (timing).
    let want = [
        "Health check for server li/s1 succeeded{}",
        "Health check for server li/s1 failed{}",
        "Health check for server be/s2 succeeded{}",
        "Health check for server be/s2 failed{}",
    ];
    let lines: Vec<Vec<String>> = logs
        .iter()
        .map(|l| {
            let got = l.until(&want);
            let mut v: Vec<String> = want
                .iter()
                .map(|m| {
                    let head = m.trim_end_matches("{}");
                    support::syslog::mask_check_duration(
                        got.iter().find(|l| l.starts_with(head)).unwrap().trim_end(),
                    )
                })
                .collect();
            v.sort();
            v
        })
        .collect();
    diff.compare("health check lines", &lines[0], &lines[1]);
    diff.assert_none();
    assert_eq!(down[1].0[2], "3", "the exit code is the check's code");
}

/// `sluice -c` says what `haproxy -c` says of external checks, misused or
/// whole.
#[test]
fn external_check_lines_are_read_as_haproxy_reads_them() {
    if !available() {
        return;
    }
    let base = "defaults\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\n";
    let g = "global\n  external-check\n  insecure-fork-wanted\n";
    let cases: Vec<(&str, String)> = vec![
        (
            "whole",
            format!(
                "{g}{base}backend b\n  option external-check\n  external-check command /bin/true\n  external-check path /bin\n  server s 127.0.0.1:1 check\n"
            ),
        ),
        (
            "no global",
            format!(
                "{base}backend b\n  option external-check\n  external-check command /bin/true\n  server s 127.0.0.1:1 check\n"
            ),
        ),
        (
            "no fork",
            format!(
                "global\n  external-check\n{base}backend b\n  option external-check\n  external-check command /bin/true\n  server s 127.0.0.1:1 check\n"
            ),
        ),
        (
            "no command",
            format!("{g}{base}backend b\n  option external-check\n  server s 127.0.0.1:1 check\n"),
        ),
        (
            "command alone",
            format!("{g}{base}backend b\n  external-check command\n"),
        ),
        (
            "path alone",
            format!("{g}{base}backend b\n  external-check path\n"),
        ),
        (
            "unknown word",
            format!("{g}{base}backend b\n  external-check foo\n"),
        ),
        ("nothing", format!("{g}{base}backend b\n  external-check\n")),
        (
            "two words",
            format!("{g}{base}backend b\n  external-check command a b\n"),
        ),
        (
            "global argument",
            "global\n  external-check x\n".to_string(),
        ),
        (
            "preserve-env",
            "global\n  external-check preserve-env\n".to_string(),
        ),
        (
            "fork argument",
            "global\n  insecure-fork-wanted x\n".to_string(),
        ),
        (
            "negated",
            format!("{g}{base}backend b\n  no option external-check\n"),
        ),
        (
            "option argument",
            format!("{g}{base}backend b\n  option external-check x\n"),
        ),
        (
            "in a frontend",
            format!("{g}{base}frontend f\n  bind 127.0.0.1:1\n  option external-check\n"),
        ),
        (
            "in defaults",
            format!(
                "{g}{base}  option external-check\n  external-check command /bin/true\nbackend b\n  server s 127.0.0.1:1 check\n"
            ),
        ),
    ];
    let cases = cases.into_iter().map(|(l, c)| (l.to_string(), c));
    support::haproxy::assert_check_agrees("ext-check-c", cases, support::haproxy::config_messages);
}
