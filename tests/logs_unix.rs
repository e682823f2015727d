//! Logs over a UNIX datagram socket (what `log /dev/log local0` uses), a
//! dead target that must not slow requests down (lines dropped and counted
//! in `show info` DroppedLogs), `option logasap`, `stdout` and `stderr`.

mod support;

use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

use support::syslog::{assert_line, matches};
use support::*;

/// The line HAProxy 2.6.12 sent over a UNIX datagram socket for the config
/// of [`unix_datagram_target`] (its server answered 404).
const HAPROXY_UNIX: &str = "<134>Nov 30 14:02:39 haproxy[30643]: 127.0.0.1:45270 [30/Nov/2026:14:02:39.683] fe be/s1 0/0/0/5/+5 404 +500 - - ---- 1/1/1/0/0 0/0 \"GET /u HTTP/1.1\"\n";

/// The whole line, with the variable parts masked; `+` marks logasap's
/// partial time and size. `%sc` is masked too: at logasap time HAProxy
/// shows 0 connections on the server (1 on the backend) where sluice
/// shows the one still in use (a known difference, logasap only).
fn unix_mask(tag: &str, status: u16) -> String {
    format!(
        "<134>{{mon}} {{day}} {{hh}}:{{mm}}:{{ss}} {tag}[{{pid}}]: 127.0.0.1:{{p}} [{{d}}/{{M}}/{{y}}:{{h}}:{{m}}:{{s}}.{{ms}}] fe be/s1 {{TR}}/{{Tw}}/{{Tc}}/{{Tr}}/+{{Ta}} {status} +{{B}} - - ---- {{ac}}/{{fc}}/{{bc}}/{{sc}}/0 0/0 \"GET /u HTTP/1.1\"\n"
    )
}

#[test]
fn unix_mask_matches_haproxy_line() {
    assert_line(&unix_mask("haproxy", 404), HAPROXY_UNIX);
    // A mask that would accept anything is no check: the fixed parts bite.
    assert!(!matches(&unix_mask("haproxy", 200), HAPROXY_UNIX));
}

fn recv_all(sock: &UnixDatagram, d: Duration) -> Vec<String> {
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let end = Instant::now() + d;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 70000];
    while Instant::now() < end {
        if let Ok(n) = sock.recv(&mut buf) {
            out.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    }
    out
}

fn recv_until(sock: &UnixDatagram, pred: impl Fn(&str) -> bool) -> String {
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    let mut buf = vec![0u8; 70000];
    let mut seen = Vec::new();
    while Instant::now() < end {
        if let Ok(n) = sock.recv(&mut buf) {
            let l = String::from_utf8_lossy(&buf[..n]).into_owned();
            if pred(&l) {
                return l;
            }
            seen.push(l);
        }
    }
    panic!("no matching line; saw {seen:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn unix_datagram_target() {
    let dir = TempDir::new("logu");
    let path = dir.join("log.sock");
    let sock = UnixDatagram::bind(&path).unwrap();
    let be = Backend::start("s1").await;
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "global
    log {} local1 notice
    log {} local0 info

defaults
    mode http
    timeout client 5s
    timeout server 5s
    timeout connect 1s

frontend fe
    bind {fe}
    log global
    option httplog
    option logasap
    default_backend be

backend be
    log global
    server s1 {} check inter 100ms
",
        path.display(),
        path.display(),
        be.hostport()
    );
    let _s = Sluice::start(&cfg);
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    get(addr, "/u").await;
    // local0.info: the request; with logasap, Ta and B carry a '+'
    // (logged when the response headers arrived).
    let l = recv_until(&sock, |l| l.contains("\"GET /u HTTP/1.1\""));
    assert_line(&unix_mask("sluice", 200), &l);
    let f: Vec<&str> = l.split(' ').collect();
    let timers = f.iter().find(|w| w.matches('/').count() == 4).unwrap();
    assert!(timers.rsplit('/').next().unwrap().starts_with('+'), "{l}");
    let status_at = f.iter().position(|w| *w == "200").unwrap();
    assert!(f[status_at + 1].starts_with('+'), "{l}");
    // Only one line for the request.
    assert!(
        recv_all(&sock, Duration::from_millis(300))
            .iter()
            .all(|l| !l.contains("GET /u ")),
        "logasap logs once"
    );
}

/// A target nobody listens on: requests are served as fast as without
/// logs, and every line is counted in DroppedLogs.
#[tokio::test(flavor = "multi_thread")]
async fn dead_target_drops_and_counts() {
    let be = Backend::start("s1").await;
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "global
    log @DIR@/nobody.sock local0
    stats socket @DIR@/stats.sock level admin

defaults
    mode http
    log global
    option httplog
    option dontlognull
    timeout client 5s
    timeout server 5s
    timeout connect 1s

frontend fe
    bind {fe}
    default_backend be

backend be
    server s1 {}
",
        be.hostport()
    );
    let s = Sluice::start(&cfg);
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let t = Instant::now();
    let mut c = HttpConn::connect(addr).await;
    for _ in 0..50 {
        assert_eq!(c.get("/").await.status, 200);
    }
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let sock = s.stats_socket();
    wait_until(Duration::from_secs(10), "DroppedLogs >= 50", || {
        let sock = sock.clone();
        async move {
            let info = cli(&sock, "show info").await;
            info.lines()
                .find_map(|l| l.strip_prefix("DroppedLogs: "))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .is_some_and(|n| n >= 50)
        }
    })
    .await;
}

/// An httplog frontend on `port` in front of `be`, logging through the
/// `global` log lines given.
fn std_stream_cfg(logs: &str, port: u16, be: &Backend) -> String {
    format!(
        "global
{logs}
defaults
    mode http
    log global
    option httplog
    option dontlognull
    timeout client 5s
    timeout server 5s
    timeout connect 1s

frontend fe
    bind 127.0.0.1:{port}
    default_backend be

backend be
    server s1 {}
",
        be.hostport()
    )
}

/// `log stdout format raw`: the line on sluice's standard output.
#[tokio::test(flavor = "multi_thread")]
async fn stdout_target() {
    let be = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let cfg = std_stream_cfg("    log stdout format raw daemon\n", port, &be);
    let s = Sluice::start(&cfg);
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    get(addr, "/out").await;
    let out = s.dir.join("sluice.stdout");
    wait_until(Duration::from_secs(10), "the line on stdout", || {
        let out = out.clone();
        async move {
            std::fs::read_to_string(&out)
                .unwrap_or_default()
                .lines()
                .any(|l| l.starts_with("127.0.0.1:") && l.contains("\"GET /out HTTP/1.1\""))
        }
    })
    .await;
}

/// `log stderr format raw`: the line on sluice's standard error, and only
/// the lines at or above the target's level (`notice` here: the request,
/// logged at `info`, is left out; `minlevel` does not raise it).
#[tokio::test(flavor = "multi_thread")]
async fn stderr_target() {
    let be = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let cfg = std_stream_cfg(
        "    log stderr format raw daemon\n    log stderr format raw local0 notice\n",
        port,
        &be,
    );
    let s = Sluice::start(&cfg);
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    get(addr, "/err").await;
    let err = s.dir.join("sluice.stderr");
    let is_line = |l: &&str| l.starts_with("127.0.0.1:") && l.contains("\"GET /err HTTP/1.1\"");
    wait_until(Duration::from_secs(10), "the line on stderr", || {
        let err = err.clone();
        async move {
            std::fs::read_to_string(&err)
                .unwrap_or_default()
                .lines()
                .any(|l| is_line(&l))
        }
    })
    .await;
    // Logging is asynchronous: give a second copy time to show up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let text = std::fs::read_to_string(&err).unwrap();
    assert_eq!(text.lines().filter(is_line).count(), 1, "{text}");
    assert!(
        std::fs::read_to_string(s.dir.join("sluice.stdout"))
            .unwrap_or_default()
            .lines()
            .all(|l| !l.contains("GET /err"))
    );
}
