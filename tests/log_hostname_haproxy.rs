//! `log-send-hostname` against the real HAProxy 2.6: the syslog header of
//! each `format` carries the host name where haproxy puts it (the default
//! format gains one, `rfc3164` and `rfc5424` replace theirs, `local` and
//! `short` have none), the same configuration under both.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use support::haproxy::{self, Haproxy};
use support::syslog::Syslog;
use support::*;

/// A line with what must differ masked: the date (the two processes log
/// at different instants) and the pid.
fn masked(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    // `<PRI>` stays.
    if let Some(end) = rest.find('>') {
        out.push_str(&rest[..=end]);
        rest = &rest[end + 1..];
    }
    if let Some(r) = rest.strip_prefix("1 ") {
        // RFC 5424: version, ISO date, host, tag, pid.
        let f: Vec<&str> = r.splitn(5, ' ').collect();
        return format!(
            "{out}1 <date> {} {} <pid> {}",
            f[1],
            f[2],
            f.get(4).unwrap_or(&"")
        );
    }
    if rest.len() > 15 && rest.as_bytes()[3] == b' ' {
        // RFC 3164: `Mmm dd hh:mm:ss`.
        out.push_str("<date>");
        rest = &rest[15..];
    }
    match (rest.find('['), rest.find("]: ")) {
        (Some(a), Some(b)) if a < b => format!("{out}{}[<pid>{}", &rest[..a], &rest[b..]),
        _ => format!("{out}{rest}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_names_in_syslog_headers_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let formats = [
        "",
        "format rfc3164",
        "format rfc5424",
        "format local",
        "format short",
    ];
    let mut seen = Vec::new();
    for hostname in ["", "log-send-hostname", "log-send-hostname myname"] {
        for tool in ["haproxy", "sluice"] {
            let sinks: Vec<Syslog> = formats.iter().map(|_| Syslog::new()).collect();
            let logs: String = formats
                .iter()
                .zip(&sinks)
                .map(|(f, s)| format!("    log {} {f} local0\n", s.addr()))
                .collect();
            let front = Listen::new();
            let cfg = format!(
                "global
{logs}    log-tag probe
    {hostname}
defaults
    mode http
    log global
    option dontlognull
    timeout client 5s
    timeout server 5s
    timeout connect 5s
frontend f
    bind {front}
    log-format \"%f %ST\"
    http-request return status 200
"
            );
            let _h = (tool == "haproxy").then(|| Haproxy::start("loghost", &cfg, &[&front]));
            let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
            haproxy::exchange(
                front.addr(),
                b"GET / HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
                false,
            )
            .await;
            let lines: Vec<String> = sinks
                .iter()
                .map(|s| {
                    masked(
                        s.until(&["{header}f 200{end}"])
                            .iter()
                            .find(|l| l.contains("f 200"))
                            .map_or("", |l| l),
                    )
                })
                .collect();
            seen.push((hostname, tool, lines));
        }
    }
    let mut differ = haproxy::Differences::default();
    for pair in seen.chunks(2) {
        differ.compare(pair[0].0, &pair[0].2, &pair[1].2);
    }
    // Not vacuous: every line came, and haproxy named the host where it
    // had to.
    assert!(
        seen.iter()
            .all(|(_, _, l)| l.iter().all(|x| x.contains("f 200"))),
        "{seen:?}"
    );
    assert!(
        seen[4].2[0].contains(" myname probe[<pid>]: "),
        "{:?}",
        seen[4]
    );
    differ.assert_none();
}
