//! `bind fd@<n>`: sluice accepts on a listening socket it inherited (as
//! under systemd socket activation), with the number coming from the
//! environment, and keeps it across a reload; a descriptor that is not a listening socket is a clear
//! start-up error naming the config line.

mod support;

use std::os::fd::AsRawFd;
use std::time::Duration;

use support::*;

/// Lets children inherit `fd` (std opens sockets close-on-exec).
fn inheritable(fd: i32) {
    // SAFETY: fcntl on a descriptor this test owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        assert!(flags >= 0);
        assert_eq!(libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_on_an_inherited_socket() {
    let be = Backend::start("s1").await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let fd = listener.as_raw_fd();
    inheritable(fd);
    let cfg = format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind \"fd@${{SLUICE_TEST_FD}}\"
    default_backend be
backend be
    server s1 {}
",
        be.hostport()
    );
    let s = Sluice::builder(&cfg)
        .env("SLUICE_TEST_FD", &fd.to_string())
        .start();
    // Other children of this test binary must not inherit it.
    not_inheritable(fd);
    // The test never accepts on its copy: a response can only come from
    // sluice.
    for i in 0..3 {
        let r = get(addr, &format!("/{i}")).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.backend(), "s1");
    }
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.num("be", "s1", "stot"), 3);
    // A reload keeps the inherited socket (it is never closed or re-bound).
    let reply = cli(&s.stats_socket(), "reload").await;
    assert!(reply.starts_with("Success=1"), "{reply}");
    assert!(
        !reply.contains("listener"),
        "no listener opened or closed: {reply}"
    );
    let r = get(addr, "/after-reload").await;
    assert_eq!(r.status, 200);
    drop(listener);
}

/// Starts sluice on `cfg` (written as `fd.cfg`) with descriptors passed as
/// `(ours, theirs)`; it must refuse to start: returns its stderr.
fn start_error(cfg: &str, fds: Vec<(i32, i32)>) -> String {
    let dir = TempDir::new("fd-err");
    let path = dir.write("fd.cfg", cfg);
    let mut cmd = std::process::Command::new(bin());
    cmd.arg("-f").arg(&path);
    pass_fds(&mut cmd, fds);
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    err
}

/// A `bind fd@` or `stats socket fd@` descriptor that is not open or not a
/// listening socket is a start-up error
/// that says why and names the config line.
#[test]
fn a_descriptor_that_is_not_a_listening_socket_is_refused() {
    let defaults = "defaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\n";
    let bind = |fd: &str| {
        format!(
            "{defaults}frontend fe\n    bind {fd}\n    default_backend be\nbackend be\n    server s1 127.0.0.1:9\n"
        )
    };
    let (_hold, port) = hold_port();
    let cli = |fd: &str| {
        format!(
            "global\n    stats socket {fd} level admin expose-fd listeners\n{defaults}frontend fe\n    bind 127.0.0.1:{port}\n"
        )
    };
    let unlistened =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let dir = TempDir::new("fd-unix");
    let file = std::fs::File::create(dir.join("plain")).unwrap();
    let cases = [
        (
            bind("fd@987"),
            vec![],
            "Starting frontend fe: cannot use 'fd@987' (Bad file descriptor (os error 9)) [",
            "fd.cfg:7]",
        ),
        (
            bind("fd@4"),
            vec![(unlistened.as_raw_fd(), 4)],
            "Starting frontend fe: cannot use 'fd@4' (not a listening socket) [",
            "fd.cfg:7]",
        ),
        (
            cli("fd@987"),
            vec![],
            "Starting proxy GLOBAL: cannot use 'fd@987' (Bad file descriptor (os error 9)) [",
            "fd.cfg:2]",
        ),
        (
            cli("fd@4"),
            vec![(file.as_raw_fd(), 4)],
            "Starting proxy GLOBAL: cannot use 'fd@4' (Socket operation on non-socket (os error 88)) [",
            "fd.cfg:2]",
        ),
    ];
    for (cfg, fds, what, line) in cases {
        let err = start_error(&cfg, fds);
        assert!(err.contains(what), "{err}");
        assert!(err.contains(line), "names the config line: {err}");
        assert!(!err.contains("cannot bind"), "{err}");
    }
}

/// What haproxy 2.6.12 logged for a request on a UNIX socket inherited as
/// the frontend's second bind, `bind fd@<n>`, with the log format below.
const HAPROXY_UNIX_FD: &str = "unix:2 unix:2 fe 200 \"GET /u HTTP/1.1\" - -\n";

/// A UNIX listening socket inherited as `bind fd@<n>` is served, and its
/// clients are shown as on a bound UNIX socket (`unix:<listener>`), as
/// HAProxy 2.6 shows them; a reload keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frontend_on_an_inherited_unix_socket() {
    let dir = TempDir::new("fd-unix-fe");
    let path = dir.join("fe.sock");
    let unix = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let fd = unix.as_raw_fd();
    inheritable(fd);
    let syslog = support::syslog::Syslog::new();
    let (_hold, port) = hold_port();
    let cfg = format!(
        "global
    stats socket @DIR@/stats.sock level admin
    log {} format raw local0
defaults
    mode http
    log global
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:{port}
    bind \"fd@${{SLUICE_TEST_FD}}\"
    log-format \"%ci:%cp %fi:%fp %ft %ST %{{+Q}}r %[src] %[dst]\"
    http-request return status 200 content-type text/plain string hello
",
        syslog.addr()
    );
    let s = Sluice::builder(&cfg)
        .env("SLUICE_TEST_FD", &fd.to_string())
        .start();
    not_inheritable(fd);
    let ask = |path: std::path::PathBuf| async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut c = tokio::net::UnixStream::connect(&path).await.unwrap();
        c.write_all(b"GET /u HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut out = Vec::new();
        within(
            Duration::from_secs(5),
            "the answer",
            c.read_to_end(&mut out),
        )
        .await
        .unwrap();
        String::from_utf8_lossy(&out).into_owned()
    };
    // The test never accepts on its copy: the answer comes from sluice.
    let answer = ask(path.clone()).await;
    assert!(answer.ends_with("\r\n\r\nhello"), "{answer}");
    // Startup lines may come first (the readiness probe's connection is
    // on the TCP bind and sends nothing).
    let lines = syslog.until(&[HAPROXY_UNIX_FD]);
    assert!(lines.iter().any(|l| l == HAPROXY_UNIX_FD), "{lines:#?}");
    let reply = cli(&s.stats_socket(), "reload").await;
    assert!(reply.starts_with("Success=1"), "{reply}");
    assert!(
        !reply.contains("listener"),
        "no listener opened or closed: {reply}"
    );
    let answer = ask(path.clone()).await;
    assert!(answer.ends_with("\r\n\r\nhello"), "{answer}");
    drop(unix);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_on_an_inherited_unix_socket() {
    let be = Backend::start("s1").await;
    let dir = std::env::temp_dir().join(format!("sluice-cli-fd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cli.sock");
    let _ = std::fs::remove_file(&path);
    let unix = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let fd = unix.as_raw_fd();
    inheritable(fd);
    let (_hold, port) = hold_port();
    let cfg = format!(
        "global
    stats socket \"fd@${{SLUICE_CLI_FD}}\" level admin
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    server s1 {}
",
        be.hostport()
    );
    let _s = Sluice::builder(&cfg)
        .env("SLUICE_CLI_FD", &fd.to_string())
        .start();
    not_inheritable(fd);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(get(addr, "/").await.status, 200);
    // The test never accepts on its copy: the answer comes from sluice.
    let csv = show_stat(&path).await;
    assert_eq!(csv.num("be", "s1", "stot"), 1);
    assert_eq!(cli(&path, "show cli level").await, "admin\n\n");
    drop(unix);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Makes `fd` close-on-exec again, so later children do not inherit it.
fn not_inheritable(fd: i32) {
    // SAFETY: fcntl on a descriptor this test owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        assert!(flags >= 0);
        assert_eq!(libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC), 0);
    }
}

/// A binary upgrade (`-x` + `-sf`) carries an inherited socket: the new
/// process was not passed the descriptor (as when an operator runs the
/// upgrade by hand under a supervisor that only passed it to the first
/// one), gets it from the old process, serves on it and keeps it across
/// its own reload.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_over_carries_an_inherited_socket() {
    let be = Backend::start("s1").await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let fd = listener.as_raw_fd();
    let cfg = |dir: &str, expose: &str| {
        format!(
            "global
    stats socket {dir}/stats.sock level admin {expose}
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind \"fd@${{SLUICE_TEST_FD}}\"
    default_backend be
backend be
    server s1 {}
",
            be.hostport()
        )
    };
    inheritable(fd);
    let old = Sluice::builder(&cfg("@DIR@", "expose-fd listeners"))
        .env("SLUICE_TEST_FD", &fd.to_string())
        .start();
    not_inheritable(fd);
    assert_eq!(get(addr, "/old").await.status, 200);
    let old_sock = old.stats_socket();

    let new_dir = TempDir::new("handover");
    let new_cfg = new_dir.write("new.cfg", &cfg(new_dir.path().to_str().unwrap(), ""));
    let new_sock = new_dir.join("stats.sock");
    let new = Successor::start(&new_cfg, &old_sock, old, &[("SLUICE_TEST_FD", fd)]);
    // Only the new process can answer now (the test never accepts).
    let r = get(addr, "/new").await;
    assert_eq!(r.status, 200, "{}", new.stderr());
    new.assert_serves_cli(&new_sock).await;
    // Its reload keeps the socket it was handed.
    let reply = cli(&new_sock, "reload").await;
    assert!(reply.starts_with("Success=1"), "{reply}");
    assert!(!reply.contains("listener"), "{reply}");
    assert_eq!(get(addr, "/after-reload").await.status, 200);
    drop(listener);
}

/// A new process started with `-x <old_sock> -sf <old pid>`, passed no
/// descriptor at all (descriptors 3 to 15 closed), once the old process
/// has handed its sockets over and exited.
struct Successor {
    child: std::process::Child,
    dir: TempDir,
}

impl Successor {
    fn start(
        cfg: &std::path::Path,
        old_sock: &std::path::Path,
        mut old: Sluice,
        env: &[(&str, i32)],
    ) -> Successor {
        let dir = TempDir::new("successor");
        let mut cmd = std::process::Command::new(bin());
        cmd.args(["-f", cfg.to_str().unwrap(), "-d", "-x"])
            .arg(old_sock)
            .arg("-sf")
            .arg(old.pid().to_string())
            .envs(env.iter().map(|(k, v)| (k, v.to_string())))
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap());
        pass_fds(&mut cmd, Vec::new());
        let mut new = Successor {
            child: cmd.spawn().unwrap(),
            dir,
        };
        // The old process finishes once the new one is ready; a new one
        // that dies fails the test at once.
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        let st = loop {
            if let Some(st) = new.child.try_wait().unwrap() {
                panic!("new process died ({st}): {}", new.stderr());
            }
            if let Some(st) = old.wait_exit(Duration::from_millis(20)) {
                break st;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the old process did not finish: {}",
                new.stderr()
            );
        };
        assert_eq!(st.code(), Some(0), "{}", old.stderr());
        new
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr")).unwrap_or_default()
    }

    /// The CLI on `sock` is the new process's.
    async fn assert_serves_cli(&self, sock: &std::path::Path) {
        let info = cli(sock, "show info").await;
        let pid = self.child.id();
        assert!(
            info.contains(&format!("\nPid: {pid}\n")),
            "{info}\n{}",
            self.stderr()
        );
    }
}

impl Drop for Successor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The same with the inherited socket at a low number (4, as systemd's
/// second socket), next to an ordinary bind. The sockets the new process
/// receives take the lowest free numbers, 4 among them: `fd@4` must still
/// name the socket the old process had inherited as 4, not whatever
/// received socket now sits at 4 (that made the new process die with
/// "File exists").
/// The proxies of the hand-over tests: `fe` on the inherited `fd@4`,
/// `plain` on `port`, both to `be`.
fn fd4_and_plain(port: u16, be: &Backend) -> String {
    format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind fd@4
    default_backend be
frontend plain
    bind 127.0.0.1:{port}
    default_backend be
backend be
    server s1 {}
",
        be.hostport()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_over_with_a_low_descriptor_number() {
    let be = Backend::start("s1").await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (_hold, port) = hold_port();
    let cfg = |dir: &str, expose: &str| {
        format!(
            "global\n    stats socket {dir}/stats.sock level admin {expose}\n{}",
            fd4_and_plain(port, &be)
        )
    };
    let old = Sluice::builder(&cfg("@DIR@", "expose-fd listeners"))
        .pass_fd(listener.as_raw_fd(), 4)
        .start();
    assert_eq!(get(addr, "/old").await.status, 200);
    let old_sock = old.stats_socket();
    let new_dir = TempDir::new("handover-low");
    let new_cfg = new_dir.write("new.cfg", &cfg(new_dir.path().to_str().unwrap(), ""));
    let new = Successor::start(&new_cfg, &old_sock, old, &[]);
    // Only the new process can answer now (the test never accepts).
    assert_eq!(get(addr, "/fd4").await.status, 200, "{}", new.stderr());
    let plain = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(get(plain, "/plain").await.status, 200);
    new.assert_serves_cli(&new_dir.join("stats.sock")).await;
    drop(listener);
}

/// systemd socket activation with a named socket: `bind fd@<name>` finds
/// the descriptor by its name in `LISTEN_FDNAMES` (descriptors from 3), when
/// `LISTEN_PID` is sluice's own pid; an unknown name is a start-up error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn systemd_named_socket() {
    use std::os::unix::process::CommandExt;
    let be = Backend::start("s1").await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let fd = listener.as_raw_fd();
    let dir = TempDir::new("sd");
    let cfg = |name: &str| {
        format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind fd@{name}
    default_backend be
backend be
    server s1 {}
",
            be.hostport()
        )
    };
    let spawn = |path: &std::path::Path, stderr: &str| {
        let mut cmd = std::process::Command::new("sh");
        // As systemd does: the sockets from descriptor 3 on, LISTEN_PID the
        // service's own pid (the shell execs sluice, keeping its pid).
        cmd.args([
            "-c",
            "LISTEN_PID=$$ LISTEN_FDS=2 LISTEN_FDNAMES=admin:web exec \"$0\" -f \"$1\" -d",
            &bin(),
            path.to_str().unwrap(),
        ])
        .stderr(std::fs::File::create(dir.join(stderr)).unwrap());
        // SAFETY: dup2 is async-signal-safe; both descriptors are valid.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(fd, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd.spawn().unwrap()
    };
    let mut bad = spawn(&dir.write("bad.cfg", &cfg("nosuch")), "bad.err");
    assert_eq!(bad.wait().unwrap().code(), Some(1));
    let err = std::fs::read_to_string(dir.join("bad.err")).unwrap();
    assert!(
        err.contains("no socket named 'nosuch' among those systemd passed (admin, web)"),
        "{err}"
    );
    assert!(err.contains("bad.cfg:7]"), "{err}");

    let mut child = spawn(&dir.write("good.cfg", &cfg("web")), "good.err");
    // The socket listens already: the request waits in its backlog until
    // sluice accepts it.
    let r = within(
        Duration::from_secs(20),
        "sluice to serve fd@web",
        get(addr, "/sd"),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(child.try_wait().unwrap().is_none());
    let _ = child.kill();
    let _ = child.wait();
}

/// One CLI command over a TCP stats socket.
async fn tcp_cli(addr: std::net::SocketAddr, cmd: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    within(Duration::from_secs(10), "the TCP CLI", async {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(format!("{cmd}\n").as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    })
    .await
}

/// `stats socket fd@<n>`, UNIX or TCP, at low numbers: with `expose-fd
/// listeners` the UNIX one serves `-x` (on the TCP one it is ignored with a
/// warning), and the hand-over carries both to
/// a new process that was not passed them (the sockets it receives take
/// numbers 4 to 7), which then serves the CLI on both at their levels.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_over_carries_inherited_cli_sockets() {
    let be = Backend::start("s1").await;
    let web = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = web.local_addr().unwrap();
    let dir = TempDir::new("cli-fd");
    let path = dir.join("cli.sock");
    let unix = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp_addr = tcp.local_addr().unwrap();
    let (_hold, port) = hold_port();
    let cfg = format!(
        "global
    stats socket fd@5 level admin expose-fd listeners
    stats socket fd@6 level operator expose-fd listeners
{}",
        fd4_and_plain(port, &be)
    );
    let old = Sluice::builder(&cfg)
        .pass_fd(web.as_raw_fd(), 4)
        .pass_fd(unix.as_raw_fd(), 5)
        .pass_fd(tcp.as_raw_fd(), 6)
        .start();
    assert_eq!(cli(&path, "show cli level").await, "admin\n\n");
    assert_eq!(tcp_cli(tcp_addr, "show cli level").await, "operator\n\n");
    // Descriptors cannot pass over TCP: said, not silently ignored.
    assert!(
        old.stderr()
            .contains("'expose-fd listeners' ignored on 'fd@6', a TCP socket"),
        "{}",
        old.stderr()
    );
    let new_cfg = dir.write("new.cfg", &cfg);
    let new = Successor::start(&new_cfg, &path, old, &[]);
    // Only the new process can answer now (the test never accepts).
    assert_eq!(get(addr, "/fd4").await.status, 200, "{}", new.stderr());
    let plain = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(get(plain, "/plain").await.status, 200);
    new.assert_serves_cli(&path).await;
    assert_eq!(cli(&path, "show cli level").await, "admin\n\n");
    let info = tcp_cli(tcp_addr, "show info").await;
    assert!(
        info.contains(&format!("\nPid: {}\n", new.child.id())),
        "{info}"
    );
    assert_eq!(tcp_cli(tcp_addr, "show cli level").await, "operator\n\n");
}

/// `sluice -c` (the packaged unit's ExecStartPre= and ExecReload=) runs
/// without the service's systemd sockets: an `fd@<name>` it cannot resolve
/// is a notice, not an error, as a number it does not open is; a real start
/// still refuses it.
#[test]
fn check_mode_accepts_systemd_names_it_cannot_resolve() {
    let dir = TempDir::new("fd-check");
    let cfg = dir.write(
        "sd.cfg",
        "global
    stats socket fd@admin level admin
defaults
    mode http
    timeout connect 1s
    timeout client 1s
    timeout server 1s
frontend fe
    bind fd@www,fd@987
    default_backend be
backend be
    server s1 127.0.0.1:9
",
    );
    let cfg = cfg.to_str().unwrap();
    let out = run_sluice(&["-c", "-f", cfg], None);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "Configuration file is valid\n");
    for (line, what) in [
        ("sd.cfg:2", "'stats socket' : 'fd@admin'"),
        ("sd.cfg:9", "'bind' : 'fd@www'"),
    ] {
        assert!(
            out.stderr.lines().any(|l| l.starts_with("[NOTICE]")
                && l.contains(line)
                && l.contains(what)
                && l.contains("not checked by -c")),
            "{}",
            out.stderr
        );
    }
    assert!(
        !out.stderr.contains("[WARNING]") && !out.stderr.contains("[ALERT]"),
        "{}",
        out.stderr
    );
    // The packaged unit's form: quiet, and zero-warning still passes.
    let out = run_sluice(&["-c", "-q", "-dW", "-f", cfg], None);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(out.stdout + &out.stderr, "");
    // Starting is another matter: the name must resolve.
    let out = run_sluice(&["-f", cfg], None);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr
            .contains("sd.cfg:2] : 'stats socket' : invalid file descriptor 'admin'"),
        "{}",
        out.stderr
    );
}

/// A `listen` section in `mode tcp` serves on an inherited socket too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mode_tcp_listen_on_an_inherited_socket() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let echo = tcp_server(|mut s| async move {
        let (mut r, mut w) = s.split();
        let _ = tokio::io::copy(&mut r, &mut w).await;
    })
    .await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let _s = Sluice::builder(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
listen px
    mode tcp
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    bind fd@4
    server echo {echo}
"
    ))
    .pass_fd(listener.as_raw_fd(), 4)
    .start();
    // The test never accepts on its copy: the echo comes through sluice.
    let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
    c.write_all(b"ping\n").await.unwrap();
    let mut got = [0u8; 5];
    within(Duration::from_secs(10), "the echo", c.read_exact(&mut got))
        .await
        .unwrap();
    assert_eq!(&got, b"ping\n");
}
