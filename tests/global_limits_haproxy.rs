//! Global and proxy keywords of the process's sockets and limits against
//! the real HAProxy 2.6, on the same configuration: `tune.rcvbuf.client`
//! and `tune.sndbuf.client` (the buffer sizes of an accepted connection,
//! as `ss -m` reports them), the proxy's `backlog` (a listener's accept
//! queue, `ss -l`'s Send-Q) from `defaults` and below a `bind` line's own,
//! `noreuseport` (a port another socket shares with SO_REUSEPORT can be
//! bound without it and not with it, by both), and `-c`'s messages for
//! `grace`, `set-dumpable`, `fd-hard-limit`, `noreuseport`, `tune.*`,
//! `backlog` and `bind-process`.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::haproxy::{self, HAPROXY};
use support::*;

/// haproxy or sluice running `cfg` (in `dir`), killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(hap: bool, dir: &TempDir, cfg: &str) -> Proc {
    let path = dir.write("p.cfg", cfg);
    let bin = if hap { HAPROXY.to_string() } else { bin() };
    let child = Command::new(bin)
        .arg("-f")
        .arg(&path)
        .arg("-db")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the proxy");
    Proc(child)
}

/// Whether the proxy came to accept on `addr` (true) or exited (false).
fn accepts(p: &mut Proc, addr: SocketAddr) -> bool {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return true;
        }
        if p.0.try_wait().expect("wait").is_some() {
            return false;
        }
        assert!(Instant::now() < end, "neither accepting on {addr} nor gone");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `ss`'s line for the sockets of local port `port` in `state`.
fn ss(args: &[&str], port: u16) -> String {
    let out = Command::new("ss")
        .args(args)
        .arg(format!("sport = :{port}"))
        .output()
        .expect("run ss");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A `skmem` field (`rb`, `tb`) of `ss -m`'s output.
fn skmem(text: &str, field: &str) -> Option<u64> {
    let mem = text.split("skmem:(").nth(1)?;
    mem.split([',', ')'])
        .find_map(|f| f.strip_prefix(field)?.parse().ok())
}

const BUF_CFG: &str = "global
    tune.rcvbuf.client 65536
    tune.sndbuf.client 32768
defaults
    mode http
    backlog 7
    timeout client 5s
frontend f
    bind 127.0.0.1:{p0}
    bind 127.0.0.1:{p1} backlog 3
";

/// What `ss` says of one side on [`BUF_CFG`]: the accepted connection's
/// receive and send buffers, the two listeners' backlogs.
fn buffers_and_backlogs(hap: bool) -> (Option<u64>, Option<u64>, String, String) {
    let dir = TempDir::new(if hap { "glim-h" } else { "glim-s" });
    let (_held, [p0, p1]) = hold_ports::<2>();
    let cfg = BUF_CFG
        .replace("{p0}", &p0.to_string())
        .replace("{p1}", &p1.to_string());
    let mut p = spawn(hap, &dir, &cfg);
    let addr: SocketAddr = format!("127.0.0.1:{p0}").parse().unwrap();
    assert!(accepts(&mut p, addr), "not started");
    assert!(accepts(&mut p, format!("127.0.0.1:{p1}").parse().unwrap()));
    // A connection that waits for its request: the proxy's end of it.
    let _c = TcpStream::connect(addr).expect("connect");
    let end = Instant::now() + Duration::from_secs(10);
    let est = loop {
        let out = ss(&["-tmnH", "state", "established"], p0);
        if out.contains("skmem") {
            break out;
        }
        assert!(Instant::now() < end, "no established connection: {out}");
        std::thread::sleep(Duration::from_millis(10));
    };
    // Send-Q of a listener is its backlog.
    let q = |port| {
        let l = ss(&["-ltnH"], port);
        l.split_whitespace().nth(2).unwrap_or("").to_string()
    };
    (skmem(&est, "rb"), skmem(&est, "tb"), q(p0), q(p1))
}

#[test]
fn socket_buffers_and_backlog_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let h = buffers_and_backlogs(true);
    let s = buffers_and_backlogs(false);
    assert_eq!(s, h);
    // The kernel doubles what it is given: what both asked for.
    assert_eq!(h, (Some(131072), Some(65536), "7".into(), "3".into()));
}

/// Whether the proxy starts on a port another socket holds with
/// SO_REUSEPORT (but not SO_REUSEADDR, and not listening).
fn starts_beside_reuseport(hap: bool, noreuseport: bool) -> bool {
    use socket2::{Domain, Socket, Type};
    let holder = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    holder.set_reuse_port(true).unwrap();
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    holder.bind(&any.into()).unwrap();
    let addr = holder.local_addr().unwrap().as_socket().unwrap();
    let dir = TempDir::new("glim-reuse");
    let global = if noreuseport {
        "global\n    noreuseport\n"
    } else {
        ""
    };
    let cfg = format!(
        "{global}defaults\n    mode http\n    timeout client 5s\nfrontend f\n    bind {addr}\n"
    );
    let mut p = spawn(hap, &dir, &cfg);
    accepts(&mut p, addr)
}

#[test]
fn noreuseport_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    for no in [false, true] {
        let h = starts_beside_reuseport(true, no);
        let s = starts_beside_reuseport(false, no);
        assert_eq!(s, h, "noreuseport {no}");
        assert_eq!(h, !no, "haproxy with noreuseport {no}");
    }
}

/// `-c` on the keywords' lines, right and wrong, says what haproxy says.
#[test]
fn limits_check_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let global = [
        "grace 5s",
        "grace",
        "grace 5x",
        "set-dumpable",
        "set-dumpable x",
        "insecure-setuid-wanted",
        "fd-hard-limit 10000",
        "fd-hard-limit",
        "noreuseport",
        "tune.rcvbuf.client 65536",
        "tune.rcvbuf.server 65536",
        "tune.sndbuf.client 65536",
        "tune.sndbuf.server 65536",
        "tune.rcvbuf.client",
        "tune.ssl.cachesize 1000",
        "tune.ssl.lifetime 300",
        "tune.ssl.maxrecord 1400",
        "tune.ssl.hard-maxrecord 1400",
        "tune.ssl.maxrecord",
        "tune.idle-pool.shared on",
        "tune.idle-pool.shared maybe",
        "tune.ssl.lifetime",
        "tune.ssl.lifetime 5x",
        "insecure-setuid-wanted x",
        "ssl-default-bind-curves X25519:P-256",
        "ssl-default-bind-curves",
        "maxconnrate 100",
        "maxconnrate",
        "maxconnrate 10 20",
        "maxsessrate 100",
        "maxsessrate",
        "pp2-never-send-local",
        "pp2-never-send-local x",
    ]
    .map(|l| {
        (
            format!("global {l}"),
            format!("global\n    {l}\nfrontend f\n    bind 127.0.0.1:1\n    timeout client 1s\n"),
        )
    });
    let proxy = [
        "backlog 100",
        "backlog",
        "bind-process 1",
        "bind-process all",
    ]
    .map(|l| {
        (
            format!("frontend {l}"),
            format!("frontend f\n    {l}\n    bind 127.0.0.1:1\n    timeout client 1s\n"),
        )
    });
    let backend = (
        "backend backlog".to_string(),
        "backend b\n    backlog 5\n".to_string(),
    );
    let cases = global.into_iter().chain(proxy).chain([backend]);
    haproxy::assert_check_agrees("glim-c", cases, |stderr| {
        // Every alert and warning naming a line, in order.
        stderr
            .lines()
            .filter(|l| (l.contains("ALERT") || l.contains("WARNING")) && l.contains(".cfg:"))
            .map(|l| l.split_once(".cfg:").map_or(l, |(_, m)| m).to_string())
            .collect::<Vec<_>>()
            .join("\n")
    });
}

/// `haproxy -c` and `sluice -c` on `cfg` (a file path) from `cwd`: each
/// one's exit code and the message of its first alert, the files'
/// directories masked.
fn check_from(cfg: &std::path::Path, cwd: &std::path::Path) -> [(Option<i32>, String); 2] {
    let first = |stderr: &str| {
        stderr
            .lines()
            .find(|l| l.contains("ALERT") && l.contains(".cfg:"))
            .map(|l| l.split_once(".cfg:").map_or(l, |(_, m)| m).to_string())
            .unwrap_or_else(|| "(accepted)".to_string())
    };
    let h = Command::new(HAPROXY)
        .arg("-c")
        .arg("-f")
        .arg(cfg)
        .current_dir(cwd)
        .output()
        .expect("haproxy -c");
    let s = run_sluice(&["-c", "-f", cfg.to_str().unwrap()], Some(cwd));
    [
        (h.status.code(), first(&String::from_utf8_lossy(&h.stderr))),
        (s.code(), first(&s.stderr)),
    ]
}

/// `default-path`: the relative paths of an error file, a `return file`
/// and a map start where haproxy would have them start (the directory
/// of the configuration, its parent, a given one, or where the process
/// runs), the process being started elsewhere.
#[test]
fn default_path_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let root = TempDir::new("glim-dpath");
    let conf = root.join("conf");
    std::fs::create_dir_all(conf.join("errors")).unwrap();
    std::fs::create_dir_all(root.join("maps")).unwrap();
    std::fs::write(
        conf.join("errors/503.http"),
        "HTTP/1.0 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n",
    )
    .unwrap();
    std::fs::write(root.join("maps/m.map"), "a b\n").unwrap();
    let elsewhere = TempDir::new("glim-dpath-cwd");
    let origin = root.path().display().to_string();
    for (policy, errorfile, map, ok) in [
        ("config", "errors/503.http", "../maps/m.map", true),
        ("parent", "conf/errors/503.http", "maps/m.map", true),
        (
            &format!("origin {origin}") as &str,
            "conf/errors/503.http",
            "maps/m.map",
            true,
        ),
        ("current", "errors/503.http", "maps/m.map", false),
        ("config", "conf/errors/503.http", "maps/m.map", false),
        ("config", "errors/503.http", "maps/m.map", false),
    ] {
        let cfg = format!(
            "global\n    default-path {policy}\ndefaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    timeout connect 1s\nfrontend f\n    bind 127.0.0.1:1\n    errorfile 503 {errorfile}\n    http-request return status 200 content-type text/plain file {errorfile} if {{ path /f }}\n    http-request set-header x-m %[path,map({map})]\n"
        );
        let path = conf.join("h.cfg");
        std::fs::write(&path, &cfg).unwrap();
        let [h, s] = check_from(&path, elsewhere.path());
        assert_eq!(s, h, "default-path {policy}, {errorfile}, {map}");
        assert_eq!(
            h.0 == Some(0),
            ok,
            "haproxy on {policy}, {errorfile}, {map}: {h:?}"
        );
    }
}

const RATE_CFG: &str = "global
    maxconnrate 2
    maxsessrate 3
    stats socket {sock} level admin
defaults
    mode http
    timeout client 5s
frontend f
    bind 127.0.0.1:{p0}
    http-request return status 200
";

/// `show info`'s rate fields after 5 requests on their own connections,
/// sent as fast as the proxy takes them.
async fn rates(hap: bool) -> Vec<(String, u64)> {
    let dir = TempDir::new(if hap { "glim-rate-h" } else { "glim-rate-s" });
    let (held, [p0]) = hold_ports::<1>();
    let sock = dir.join("cli.sock");
    let cfg = RATE_CFG
        .replace("{p0}", &p0.to_string())
        .replace("{sock}", &sock.display().to_string());
    let mut p = spawn(hap, &dir, &cfg);
    let addr: SocketAddr = format!("127.0.0.1:{p0}").parse().unwrap();
    drop(held);
    assert!(accepts(&mut p, addr));
    for n in 0..5 {
        let r = get(addr, &format!("/{n}")).await;
        assert_eq!(r.status, 200);
    }
    let info = cli(&sock, "show info").await;
    [
        "ConnRateLimit",
        "SessRateLimit",
        "MaxConnRate",
        "MaxSessRate",
    ]
    .iter()
    .map(|k| {
        let v = info
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k}: ")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in {info}"));
        (k.to_string(), v)
    })
    .collect()
}

/// `maxconnrate` and `maxsessrate`: `show info` says the limits as
/// haproxy does, and neither process accepted many more connections in a
/// second than the limit allows (7 connections at once without it: the
/// readiness probe, 5 requests, the CLI's own). haproxy's MaxConnRate
/// stays at 2; sluice's reaches 3 (one connection more in a second,
/// counted where haproxy's estimate would have held it): not compared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_rates_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let h = rates(true).await;
    let s = rates(false).await;
    assert_eq!(s[..2], h[..2]);
    assert_eq!(
        h[..2],
        [("ConnRateLimit".into(), 2), ("SessRateLimit".into(), 3)]
    );
    for side in [&h, &s] {
        assert!(
            side[2].1 <= 3,
            "MaxConnRate over the limit: {side:?} (haproxy {h:?})"
        );
    }
}

/// The first bytes of a health check of a `send-proxy-v2` server under
/// the global `pp2-never-send-local`, the ports masked (each side has
/// its own source port and server).
async fn never_local_check(hap: bool) -> Vec<u8> {
    let srv = support::raw::RawBackend::start().await;
    let dir = TempDir::new(if hap { "glim-pp2-h" } else { "glim-pp2-s" });
    let (held, [p0]) = hold_ports::<1>();
    let cfg = format!(
        "global
    pp2-never-send-local
defaults
    mode http
    timeout connect 2s
    timeout client 2s
    timeout server 2s
frontend f
    bind 127.0.0.1:{p0}
    default_backend b
backend b
    option httpchk GET /chk
    server s1 {} check inter 200ms send-proxy-v2
",
        srv.addr
    );
    let mut p = spawn(hap, &dir, &cfg);
    drop(held);
    assert!(accepts(&mut p, format!("127.0.0.1:{p0}").parse().unwrap()));
    let mut got = None;
    within(Duration::from_secs(10), "a check", async {
        while got.is_none() {
            got = srv.take_conns().into_iter().next();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let mut c = got.unwrap();
    assert!(c.len() > 28, "{c:?}");
    // The destination is the server, whose port differs per side.
    assert_eq!(u16::from_be_bytes([c[26], c[27]]), srv.addr.port(), "{c:?}");
    c[24..28].fill(0);
    c.truncate(28 + "GET /chk HTTP/1.0\r\n".len());
    c
}

/// `pp2-never-send-local`: the check sends a PROXY command with its
/// connection's addresses (HAProxy 2.1's), where it sends LOCAL without.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pp2_never_send_local_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let h = never_local_check(true).await;
    let s = never_local_check(false).await;
    assert_eq!(s, h);
    // PROXY (0x21) over TCP4 (0x11), 12 bytes of addresses.
    assert_eq!(&h[12..16], &[0x21, 0x11, 0x00, 0x0c], "{h:?}");
}
