//! Frontends on UNIX stream sockets (`bind /path`) and Linux abstract
//! sockets (`bind abns@name`), in `mode http` and `mode tcp`, run beside
//! haproxy 2.6 on the same configuration: the same replies, the same
//! request reaching the server (no `X-Forwarded-For` for a client without
//! an address, `src` matching nothing), and the same log lines, where a
//! UNIX client shows as `unix:<listener number>`.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! on CI.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::syslog::Syslog;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use support::haproxy::HAPROXY;

struct Haproxy(Child);

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Answers one request with its head as the body, so the test sees what
/// the proxy sent (headers added or not), then closes.
async fn echo<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut s: S) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    // A PROXY v2 header (`send-proxy-v2`) is echoed too; its signature
    // holds a blank line of its own.
    let head_end = |buf: &[u8]| {
        let from = if buf.starts_with(b"\r\n\r\n\0\r\nQUIT\n") {
            12
        } else {
            0
        };
        buf.get(from..)?
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|i| from + i + 4)
    };
    while head_end(&buf).is_none() {
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let end = head_end(&buf).unwrap();
    let body = &buf[..end];
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = s.write_all(&[head.as_bytes(), body].concat()).await;
}

/// An [`echo`] server on 127.0.0.1.
async fn echo_server() -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            tokio::spawn(echo(s));
        }
    });
    addr
}

/// An [`echo`] server on a UNIX socket: at `path`, or on the abstract
/// `name` (HAProxy's padding).
fn unix_echo_server(l: std::os::unix::net::UnixListener) {
    l.set_nonblocking(true).unwrap();
    let l = tokio::net::UnixListener::from_std(l).unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            tokio::spawn(echo(s));
        }
    });
}

/// The configuration under test, for one process: its own socket
/// directory, abstract name and log target.
fn config(dir: &Path, abns: &str, syslog: &str, server: SocketAddr) -> String {
    let dir = dir.display();
    format!(
        "global
    log {syslog} local0
    stats socket {dir}/stats.sock level admin
defaults
    log global
    option dontlognull
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    mode http
    option httplog
    bind {dir}/fe.sock mode 600
    bind abns@{abns}
    bind {dir}/pp.sock accept-proxy
    option forwardfor
    acl local src 127.0.0.1
    http-request deny if local
    use_backend pp1 if {{ path_beg /pp1 }}
    use_backend pp2 if {{ path_beg /pp2 }}
    default_backend be
backend be
    mode http
    balance source
    server s1 {server}
backend pp1
    mode http
    server s1 {server} send-proxy
backend pp2
    mode http
    server s1 {server} send-proxy-v2
listen tcp
    mode tcp
    option tcplog
    bind unix@{dir}/tcp.sock
    server s1 {server}
"
    )
}

/// How a test client reaches one process.
struct Target {
    http_path: std::path::PathBuf,
    abns: String,
    tcp_path: std::path::PathBuf,
    stats: std::path::PathBuf,
}

/// Sends a request for `/a?b=1` over `s` and reads the whole reply.
async fn exchange(s: tokio::net::UnixStream) -> String {
    exchange_at(s, "/a?b=1").await
}

/// Sends a request for `path` over `s` and reads the whole reply.
async fn exchange_at(s: tokio::net::UnixStream, path: &str) -> String {
    exchange_after(s, "", path).await
}

/// Sends `first` (a PROXY header), then a request for `path`, and reads
/// the whole reply.
async fn exchange_after(mut s: tokio::net::UnixStream, first: &str, path: &str) -> String {
    let req = format!("{first}GET {path} HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    within(Duration::from_secs(5), "the reply", s.read_to_end(&mut out))
        .await
        .unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

async fn unix(path: &Path) -> tokio::net::UnixStream {
    tokio::net::UnixStream::connect(path).await.unwrap()
}

async fn abns(name: &str) -> tokio::net::UnixStream {
    let s = abns_connect(name).unwrap();
    s.set_nonblocking(true).unwrap();
    tokio::net::UnixStream::from_std(s).unwrap()
}

/// The exchanges (HTTP on a path, HTTP on an abstract name, TCP on a
/// path, HTTP to `send-proxy` and `send-proxy-v2` servers), their
/// replies, and the log lines they made. They start
/// once the readiness probes' connections have left the frontends (the
/// log lines count the connections in progress).
async fn run(t: &Target, syslog: &Syslog) -> (Vec<String>, Vec<String>) {
    wait_until(Duration::from_secs(5), "probes gone", || async {
        let stat = cli(&t.stats, "show stat").await;
        stat.contains("\nfe,FRONTEND,,,0,") && stat.contains("\ntcp,FRONTEND,,,0,")
    })
    .await;
    let mut replies = Vec::new();
    replies.push(exchange(unix(&t.http_path).await).await);
    replies.push(exchange(abns(&t.abns).await).await);
    replies.push(exchange(unix(&t.tcp_path).await).await);
    // A client without an address, told to servers with `send-proxy`.
    replies.push(exchange_at(unix(&t.http_path).await, "/pp1").await);
    replies.push(exchange_at(unix(&t.http_path).await, "/pp2").await);
    // `accept-proxy` on a UNIX bind: the header's client is the client.
    let pp = t.http_path.with_file_name("pp.sock");
    let header = "PROXY TCP4 192.0.2.7 198.51.100.1 4242 80\r\n";
    replies.push(exchange_after(unix(&pp).await, header, "/a").await);
    // Sorted: haproxy does not always send them in the order of the
    // exchanges.
    let mut lines: Vec<String> = syslog.take(6).iter().map(|l| mask(l)).collect();
    lines.sort();
    (replies, lines)
}

/// A log line without what must differ: the syslog header (tag and pid),
/// the accept date, the timers, and `actconn`/`feconn` (the first two
/// counts: haproxy may accept the next exchange's connection before it
/// logs the one that just ended, and the stats socket's count in the
/// process's). On `httplog` lines the byte count is masked too: haproxy 2.6 logs 85
/// where it sent the client 93 bytes, on TCP binds as well; that
/// difference is not the UNIX sockets' and is left to its own test.
fn mask(line: &str) -> String {
    let msg = line.split_once("]: ").map_or(line, |(_, m)| m).trim_end();
    let http = msg.contains('"');
    msg.split(' ')
        .enumerate()
        .map(|(i, w)| match i {
            1 => "[DATE]".to_string(),
            4 => "TIMERS".to_string(),
            6 if http => "BYTES".to_string(),
            7 | 10 if w.contains('/') => {
                let rest = w.splitn(3, '/').nth(2).unwrap_or("");
                format!("N/N/{rest}")
            }
            _ => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn wait_listening(child: &mut Child, t: &Target) {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            panic!("haproxy exited ({st})");
        }
        if std::os::unix::net::UnixStream::connect(&t.http_path).is_ok()
            && std::os::unix::net::UnixStream::connect(&t.tcp_path).is_ok()
            && abns_connect(&t.abns).is_ok()
        {
            return;
        }
        assert!(Instant::now() < end, "haproxy not listening");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unix_and_abns_frontends_match_haproxy() {
    if !support::haproxy::available() {
        return;
    }
    let server = echo_server().await;
    let tag = std::process::id();

    let hdir = TempDir::new("unix-ha");
    let hlog = Syslog::new();
    let habns = format!("sluice-test-{tag}-ha");
    let hcfg = hdir.write(
        "haproxy.cfg",
        &config(hdir.path(), &habns, &hlog.addr(), server),
    );
    let ht = Target {
        http_path: hdir.join("fe.sock"),
        abns: habns.clone(),
        tcp_path: hdir.join("tcp.sock"),
        stats: hdir.join("stats.sock"),
    };
    let mut child = Command::new(HAPROXY)
        .arg("-f")
        .arg(&hcfg)
        .arg("-db")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn haproxy");
    wait_listening(&mut child, &ht);
    let _hap = Haproxy(child);

    let slog = Syslog::new();
    let sabns = format!("sluice-test-{tag}-sl");
    let sl = Sluice::start(&config(Path::new("@DIR@"), &sabns, &slog.addr(), server));
    let st = Target {
        http_path: sl.path("fe.sock"),
        abns: sabns,
        tcp_path: sl.path("tcp.sock"),
        stats: sl.path("stats.sock"),
    };

    let (want, want_log) = run(&ht, &hlog).await;
    let (got, got_log) = run(&st, &slog).await;
    assert!(
        want[0].starts_with("HTTP/1.1 200") && !want[0].contains("x-forwarded-for"),
        "haproxy: {want:?}"
    );
    assert_eq!(got, want, "replies (haproxy's second)");
    assert_eq!(got_log, want_log, "log lines (haproxy's second)");
    assert!(
        got_log[0].starts_with("192.0.2.7:4242 [DATE] fe be/"),
        "{got_log:?}"
    );
    assert!(
        got_log[1].starts_with("unix:1 [DATE] fe be/"),
        "{got_log:?}"
    );
    assert!(got_log[4].starts_with("unix:1 [DATE] tcp "), "{got_log:?}");
    assert!(got_log[5].starts_with("unix:2 [DATE] fe "), "{got_log:?}");
    assert!(got[5].contains("x-forwarded-for: 192.0.2.7\r\n"), "{got:?}");
    assert!(got[3].contains("PROXY UNKNOWN\r\n"), "{got:?}");

    // The socket file got its `mode`, as haproxy's did.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&st.http_path), 0o600);
    assert_eq!(mode(&st.http_path), mode(&ht.http_path));
}

/// A reload (the CLI's `reload`, as SIGUSR2) keeps UNIX listeners open,
/// the same sockets (an abstract name could not be bound twice): a client
/// connected across it is served, and new ones are too.
#[tokio::test(flavor = "multi_thread")]
async fn unix_listener_survives_a_reload() {
    let server = echo_server().await;
    let name = format!("sluice-test-{}-reload", std::process::id());
    let cfg = format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind @DIR@/fe.sock
    bind abns@{name}
    default_backend be
backend be
    server s1 {server}
"
    );
    let sl = Sluice::start(&cfg);
    let path = sl.path("fe.sock");
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let was = inode(&path);
    let before = unix(&path).await;
    // The CLI may answer before the process can reload: ask again then.
    let end = Instant::now() + Duration::from_secs(5);
    let reply = loop {
        let reply = cli(&sl.stats_socket(), "reload").await;
        if !reply.contains("not available") || Instant::now() > end {
            break reply;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(reply.starts_with("Success=1"), "reload: {reply}");
    assert_eq!(inode(&path), was, "the UNIX socket was bound again");
    assert!(exchange(before).await.starts_with("HTTP/1.1 200"));
    for _ in 0..3 {
        assert!(
            exchange(unix(&path).await)
                .await
                .starts_with("HTTP/1.1 200")
        );
        assert!(
            exchange(abns(&name).await)
                .await
                .starts_with("HTTP/1.1 200")
        );
    }
}

/// The backend's side: servers at `/path`, `unix@path` and `abns@name`
/// (HTTP/1 and TCP forwarding), one of them dead and checked DOWN.
fn server_config(dir: &Path, srv: &Path, abns: &str, syslog: &str) -> String {
    let (dir, srv) = (dir.display(), srv.display());
    format!(
        "global
    stats socket {dir}/stats.sock level admin
    log {syslog} local0
defaults
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    mode http
    bind {dir}/fe.sock
    log global
    option dontlognull
    log-format \"%ci:%cp %b/%s %si:%sp %ST\"
    default_backend be
backend be
    mode http
    balance roundrobin
    option httpchk GET /health
    server s1 {srv}/s1.sock check inter 100ms
    server s2 abns@{abns} check inter 100ms
    server dead unix@{srv}/dead.sock check inter 100ms fall 1 rise 1
listen tcp
    mode tcp
    bind {dir}/tcp.sock
    server s1 unix@{srv}/s1.sock
"
    )
}

/// What `show stat` says of the servers (name, status, check, `addr`),
/// and `show servers state` without the time since the last change.
async fn server_views(stats: &Path) -> (Vec<String>, Vec<String>) {
    let stat = cli(stats, "show stat").await;
    let header: Vec<&str> = stat
        .lines()
        .next()
        .unwrap()
        .trim_start_matches("# ")
        .split(',')
        .collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (px, sv, st, ck, ad) = (
        col("pxname"),
        col("svname"),
        col("status"),
        col("check_status"),
        col("addr"),
    );
    let rows = stat
        .lines()
        .skip(1)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            format!("{} {} {} {} {}", f[px], f[sv], f[st], f[ck], f[ad])
        })
        .collect();
    let state = cli(stats, "show servers state").await;
    let servers = state
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#') && l.contains(' '))
        .map(|l| {
            l.split(' ')
                .enumerate()
                .map(|(i, w)| if i == 9 { "T" } else { w })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    (rows, servers)
}

/// The dead server is DOWN and the live ones passed an HTTP check.
async fn dead_is_down(stats: &Path) {
    wait_until(
        Duration::from_secs(5),
        "be/dead DOWN, s1 and s2 checked",
        || async {
            let stat = cli(stats, "show stat").await;
            stat.contains("\nbe,dead,0,0,0,0,,0,0,0,,0,,0,0,0,0,DOWN")
                && stat.matches(",L7OK,200,").count() == 2
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unix_servers_match_haproxy() {
    if !support::haproxy::available() {
        return;
    }
    let srv = TempDir::new("unix-srv");
    let abns_name = format!("sluice-test-{}-srv", std::process::id());
    unix_echo_server(std::os::unix::net::UnixListener::bind(srv.join("s1.sock")).unwrap());
    unix_echo_server(std::os::unix::net::UnixListener::bind_addr(&abns_addr(&abns_name)).unwrap());

    let hdir = TempDir::new("unix-srv-ha");
    let hlog = Syslog::new();
    let hcfg = hdir.write(
        "haproxy.cfg",
        &server_config(hdir.path(), srv.path(), &abns_name, &hlog.addr()),
    );
    let mut child = Command::new(HAPROXY)
        .arg("-f")
        .arg(&hcfg)
        .arg("-db")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn haproxy");
    let end = Instant::now() + Duration::from_secs(10);
    while std::os::unix::net::UnixStream::connect(hdir.join("stats.sock")).is_err()
        || std::os::unix::net::UnixStream::connect(hdir.join("tcp.sock")).is_err()
    {
        assert!(child.try_wait().unwrap().is_none(), "haproxy exited");
        assert!(Instant::now() < end, "haproxy not listening");
        std::thread::sleep(Duration::from_millis(10));
    }
    let _hap = Haproxy(child);
    let slog = Syslog::new();
    let sl = Sluice::start(&server_config(
        Path::new("@DIR@"),
        srv.path(),
        &abns_name,
        &slog.addr(),
    ));

    let mut seen = Vec::new();
    for (dir, log) in [
        (hdir.path().to_path_buf(), &hlog),
        (sl.dir.path().to_path_buf(), &slog),
    ] {
        let stats = dir.join("stats.sock");
        dead_is_down(&stats).await;
        let mut replies = Vec::new();
        for _ in 0..2 {
            replies.push(exchange(unix(&dir.join("fe.sock")).await).await);
        }
        replies.push(exchange(unix(&dir.join("tcp.sock")).await).await);
        // The two HTTP exchanges' lines: `%si:%sp` of a UNIX server.
        // Without the syslog header (tag and pid).
        let mut lines: Vec<String> = log
            .take(2)
            .iter()
            .map(|l| {
                l.split_once("]: ")
                    .map_or(&l[..], |(_, m)| m)
                    .trim_end()
                    .to_string()
            })
            .collect();
        lines.sort();
        replies.extend(lines);
        seen.push((replies, server_views(&stats).await));
    }
    let (want, got) = (&seen[0], &seen[1]);
    assert!(
        want.0[..3].iter().all(|r| r.starts_with("HTTP/1.1 200")),
        "haproxy: {want:?}"
    );
    assert_eq!(got.0, want.0, "replies (haproxy's second)");
    assert_eq!(got.1.0, want.1.0, "show stat (haproxy's second)");
    assert_eq!(got.1.1, want.1.1, "show servers state (haproxy's second)");
    assert!(
        got.0.contains(&"unix:1 be/s2 unix:0 200".to_string()),
        "{:?}",
        got.0
    );
    assert!(
        got.1.0.iter().any(|r| r == "be s2 UP L7OK unix"),
        "{:?}",
        got.1.0
    );
    assert!(
        got.1.0.iter().any(|r| r == "be dead DOWN SOCKERR unix"),
        "{:?}",
        got.1.0
    );
}

/// A binary upgrade (`-x`, then `-sf`) hands UNIX listeners over: the new
/// process serves on the same socket file (not bound again) and the same
/// abstract name (which could not be bound twice).
#[tokio::test(flavor = "multi_thread")]
async fn unix_listeners_are_handed_over_with_x() {
    let dir = TempDir::new("unix-x");
    let name = format!("sluice-test-{}-x", std::process::id());
    let cfg = |stats: &str| {
        format!(
            "global
    stats socket {d}/{stats} level admin expose-fd listeners
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {d}/fe.sock
    bind abns@{name}
    http-request return status 200 content-type text/plain string ok
",
            d = dir.path().display()
        )
    };
    let path = dir.join("fe.sock");
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let mut old = Sluice::start(&cfg("old.sock"));
    let was = inode(&path);
    let new = Sluice::builder(&cfg("new.sock"))
        .arg("-x")
        .arg(dir.join("old.sock").to_str().unwrap())
        .arg("-sf")
        .arg(&old.pid().to_string())
        .start();
    assert!(
        old.wait_exit(Duration::from_secs(10)).is_some(),
        "the old process did not stop"
    );
    assert_eq!(inode(&path), was, "the UNIX socket was bound again");
    for _ in 0..3 {
        assert!(
            exchange(unix(&path).await)
                .await
                .starts_with("HTTP/1.1 200")
        );
        assert!(
            exchange(abns(&name).await)
                .await
                .starts_with("HTTP/1.1 200")
        );
    }
    drop(new);
}
