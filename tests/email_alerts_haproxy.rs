//! `mailers` sections and `email-alert`, against haproxy 2.6 on the same
//! configuration: each proxy mails its servers' state changes to its own
//! real SMTP server (python3-aiosmtpd, started by the test), and the test
//! compares the SMTP dialogues and the messages of the same events, and
//! what `-c` says of each misuse.

mod support;

use std::time::{Duration, Instant};

use support::haproxy::{Haproxy, available};
use support::raw::RawBackend;
use support::smtp::Sink;
use support::*;

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
                        support::syslog::mask_check_duration(l)
                    }
                })
                .collect();
            lines.join("\r\n")
        })
        .collect()
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
    // Masked, then sorted: the two backends' mails may leave in either
    // order, and their dates may differ.
    let sorted = |v: Vec<Vec<String>>| {
        let mut v: Vec<Vec<String>> = v.iter().map(|d| mask(d)).collect();
        v.sort();
        v
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
    support::haproxy::assert_check_agrees(
        "mailers-check",
        cases,
        support::haproxy::config_messages,
    );
}
