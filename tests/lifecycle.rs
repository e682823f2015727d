//! Process life cycle: soft stop (SIGTERM, SIGUSR1), immediate stop
//! (SIGINT), hard-stop-after, systemd notify, privileges, cpu-map, fd
//! limits (ulimit-n, raised from maxconn), nbthread, user/group/uid/gid and
//! chroot (as root; under CI through sudo -n when not root), the daemon
//! keyword, -L, binary upgrades with -x / -sf / -st, and SIGTTOU / SIGTTIN.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn cfg(port: u16, be: &Backend, global_extra: &str) -> String {
    format!(
        "global
    stats socket @DIR@/stats.sock level admin
{global_extra}
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    server {} {}
",
        be.name,
        be.hostport()
    )
}

fn kill(pid: u32, sig: &str) {
    let st = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(st.success(), "kill -{sig} {pid}");
}

/// Reads until EOF (true) or the deadline (false).
async fn closed_by_peer(s: &mut tokio::net::TcpStream, deadline: Duration) -> bool {
    let mut buf = [0u8; 256];
    matches!(
        tokio::time::timeout(deadline, s.read(&mut buf)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

async fn soft_stop_with(sig: &str) {
    let mut b = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = Sluice::start(&cfg(port, &b, ""));
    // An idle keep-alive connection, parked after its first request.
    let mut idle = HttpConn::connect(addr).await;
    assert_eq!(idle.get("/first").await.status, 200);
    tokio::time::sleep(Duration::from_millis(400)).await;
    // A raw idle connection that never sent anything.
    let mut silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    // A request in flight.
    b.set_gated(true);
    let slow = tokio::spawn(async move {
        let mut c = HttpConn::connect(addr).await;
        c.get("/slow").await
    });
    b.wait_started("/slow", Duration::from_secs(10)).await;

    kill(s.pid(), sig);
    // New connections are refused once listeners are closed.
    wait_until(Duration::from_secs(10), "listener closed", || async move {
        tokio::net::TcpStream::connect(addr).await.is_err()
    })
    .await;
    assert!(
        closed_by_peer(&mut silent, Duration::from_secs(5)).await,
        "idle connection not closed"
    );
    let r = idle.send("GET", "/after", b"").await;
    assert!(
        r.is_err(),
        "parked keep-alive connection still served: {r:?}"
    );
    // Still running: the in-flight request holds it.
    s.assert_running();
    b.release(1);
    let r = within(Duration::from_secs(10), "slow request", slow)
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("connection"), Some("close"), "{}", r.head);
    let st = s
        .wait_exit(Duration::from_secs(10))
        .expect("exits after soft stop");
    assert_eq!(st.code(), Some(0), "{}", s.stderr());
    let err = s.stderr();
    assert!(
        err.contains("Proxy fe stopped (cumulated conns: FE: ") && err.contains(", BE: 0).\n"),
        "{err}"
    );
    assert!(
        err.contains("Proxy be stopped (cumulated conns: FE: 0, BE: 2)."),
        "{err}"
    );
    b.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_soft_stop_finishes_in_flight_and_closes_idle() {
    soft_stop_with("TERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigusr1_soft_stop_as_haproxy() {
    soft_stop_with("USR1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_exits_at_once_and_hard_stop_after_bounds_soft_stop() {
    let b = Backend::start("s1").await;
    b.set_gated(true);
    let (_hold, port) = hold_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));

    let mut s = Sluice::start(&cfg(port, &b, ""));
    let _hung =
        tokio::spawn(async move { HttpConn::connect(addr).await.send("GET", "/x", b"").await });
    b.wait_started("/x", Duration::from_secs(10)).await;
    kill(s.pid(), "INT");
    let st = s.wait_exit(Duration::from_secs(5)).expect("SIGINT exits");
    assert_eq!(st.code(), Some(0));

    let mut s = Sluice::start(&cfg(port, &b, "    hard-stop-after 500ms"));
    let _hung =
        tokio::spawn(async move { HttpConn::connect(addr).await.send("GET", "/y", b"").await });
    b.wait_started("/y", Duration::from_secs(10)).await;
    let t = std::time::Instant::now();
    kill(s.pid(), "TERM");
    let st = s
        .wait_exit(Duration::from_secs(10))
        .expect("hard-stop-after exits");
    assert_eq!(st.code(), Some(0));
    assert!(
        t.elapsed() >= Duration::from_millis(450),
        "{:?}",
        t.elapsed()
    );
    assert!(
        s.stderr().contains("hard-stop-after expired"),
        "{}",
        s.stderr()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn systemd_notify_ready_reloading_stopping_and_pidfile() {
    let b = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let dir = TempDir::new("notify");
    let sock_path = dir.join("notify.sock");
    let notify = std::os::unix::net::UnixDatagram::bind(&sock_path).unwrap();
    notify
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let pidfile = dir.join("sluice.pid");
    let mut s = Sluice::builder(&cfg(port, &b, ""))
        .arg("-Ws")
        .arg("-p")
        .arg(pidfile.to_str().unwrap())
        .env("NOTIFY_SOCKET", sock_path.to_str().unwrap())
        .start();
    let recv = || {
        let mut buf = [0u8; 512];
        let n = notify.recv(&mut buf).expect("notify datagram");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    let ready = recv();
    assert!(ready.starts_with("READY=1\n"), "{ready}");
    assert_eq!(
        std::fs::read_to_string(&pidfile).unwrap().trim(),
        s.pid().to_string()
    );
    let reply = cli(&s.stats_socket(), "reload").await;
    assert!(reply.starts_with("Success=1"), "{reply}");
    let reloading = recv();
    assert!(
        reloading.starts_with("RELOADING=1\nMONOTONIC_USEC="),
        "{reloading}"
    );
    assert_eq!(recv(), "READY=1\n");
    kill(s.pid(), "TERM");
    assert_eq!(recv(), "STOPPING=1\n");
    assert_eq!(
        s.wait_exit(Duration::from_secs(10)).unwrap().code(),
        Some(0)
    );
    assert!(!pidfile.exists(), "pidfile left behind");
}

fn proc_status(pid: u32, field: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// True when the calling test may go on as root. Not root: under CI, the
/// test is run again as root through `sudo -n` (and false is returned:
/// that run did it); without sudo, under CI, a failure that says why;
/// outside CI, false with a message (skipped).
fn as_root(test: &str) -> bool {
    if unsafe { libc::getuid() } == 0 {
        return true;
    }
    let ci = std::env::var_os("CI").is_some();
    let sudo = std::process::Command::new("sudo")
        .args(["-n", "true"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ci && sudo {
        let exe = std::env::current_exe().expect("test binary path");
        let st = std::process::Command::new("sudo")
            .args(["-n", "--preserve-env=CI,PATH"])
            .arg(exe)
            .args([test, "--exact", "--test-threads=1", "--nocapture"])
            .status()
            .expect("run sudo -n");
        assert!(st.success(), "{test}, run as root through sudo -n, failed");
        return false;
    }
    assert!(
        !ci,
        "{test} needs root (uid/gid/user/group/chroot, a port below 1024): under CI run the \
         tests as root (.ci/run does) or allow `sudo -n`"
    );
    eprintln!("skipping {test}: not root and no CI (it needs root)");
    false
}

/// The `Uid:`/`Gid:` lines' four ids all equal to `id`.
fn assert_ids(pid: u32, field: &str, id: &str) {
    let ids = proc_status(pid, field);
    assert!(
        ids.split_whitespace().all(|u| u == id) && ids.split_whitespace().count() == 4,
        "{field}: {ids}"
    );
}

/// The names of the process's threads.
fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|c| c.trim().to_string())
        .collect()
}

/// `uid`/`gid` by number and `chroot`: dropped after binding (root only).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uid_gid_and_chroot_are_applied_after_binding() {
    if !as_root("uid_gid_and_chroot_are_applied_after_binding") {
        return;
    }
    let b = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let jail = TempDir::new("jail");
    let extra = format!(
        "    uid 65534\n    gid 65534\n    chroot {}\n",
        jail.path().display()
    );
    let s = Sluice::start(&cfg(port, &b, &extra));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(get(addr, "/").await.status, 200);
    assert_ids(s.pid(), "Uid", "65534");
    assert_ids(s.pid(), "Gid", "65534");
    assert_eq!(
        proc_status(s.pid(), "Groups"),
        "",
        "supplementary groups kept"
    );
    let root = std::fs::read_link(format!("/proc/{}/root", s.pid())).unwrap();
    assert_eq!(root, jail.path());
    // The stats socket was made before the chroot and still answers.
    assert!(cli(&s.stats_socket(), "show info").await.contains("Pid: "));
}

/// `user`/`group` by name, and a port below 1024 the unprivileged user
/// could not bind: it was bound before the drop (root only).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_and_group_by_name_after_binding_a_privileged_port() {
    if !as_root("user_and_group_by_name_after_binding_a_privileged_port") {
        return;
    }
    let b = Backend::start("s1").await;
    let unprivileged_from: u16 =
        std::fs::read_to_string("/proc/sys/net/ipv4/ip_unprivileged_port_start")
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(1024);
    // A free port below 1024 (we are root: we may bind it to see).
    let low = (600..1000)
        .find(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok())
        .expect("a free port below 1000");
    let (user, group) = ("nobody", "nogroup");
    let uid = std::process::Command::new("id")
        .args(["-u", user])
        .output()
        .unwrap();
    let uid = String::from_utf8_lossy(&uid.stdout).trim().to_string();
    let gid = std::process::Command::new("getent")
        .args(["group", group])
        .output()
        .unwrap();
    let gid = String::from_utf8_lossy(&gid.stdout)
        .split(':')
        .nth(2)
        .map(|g| g.trim().to_string())
        .unwrap_or_default();
    assert!(
        !uid.is_empty() && !gid.is_empty(),
        "no user {user} or group {group}"
    );
    let s = Sluice::start(&cfg(
        low,
        &b,
        &format!("    user {user}\n    group {group}\n"),
    ));
    assert_eq!(
        get(SocketAddr::from(([127, 0, 0, 1], low)), "/")
            .await
            .status,
        200
    );
    assert_ids(s.pid(), "Uid", &uid);
    assert_ids(s.pid(), "Gid", &gid);
    if unprivileged_from > low {
        // Now unprivileged, it could not bind that port any more: a
        // reload that adds a second port below 1024 is refused.
        let other = (low + 1..1000)
            .find(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok())
            .expect("a second free port below 1000");
        let text = cfg(low, &b, &format!("    user {user}\n    group {group}\n")).replace(
            &format!("    bind 127.0.0.1:{low}\n"),
            &format!("    bind 127.0.0.1:{low}\n    bind 127.0.0.1:{other}\n"),
        );
        let dir = s.path("");
        std::fs::write(
            s.path("sluice.cfg"),
            text.replace("@DIR@", dir.to_str().unwrap().trim_end_matches('/')),
        )
        .unwrap();
        let reply = cli(&s.stats_socket(), "reload").await;
        assert!(reply.starts_with("Success=0\n"), "{reply}");
        assert!(reply.contains("Permission denied"), "{reply}");
    }
}

/// `nbthread`: that many worker threads (`sluice-1`..`sluice-N`, the
/// names of the per-thread runtimes); `ulimit-n`; `cpu-map` pins workers
/// to CPUs; `-L` names the local peer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nbthread_ulimit_cpu_map_and_local_peer() {
    let b = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut extra = String::from("    nbthread 3\n    ulimit-n 3000\n");
    if ncpu >= 2 {
        extra.push_str("    cpu-map auto:1/1-2 0-1\n");
    }
    let s = Sluice::builder(&cfg(port, &b, &extra))
        .arg("-L")
        .arg("peer-a")
        .start();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(get(addr, "/").await.status, 200);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", s.pid())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    assert!(line.split_whitespace().nth(3) == Some("3000"), "{line}");
    let info = cli(&s.stats_socket(), "show info").await;
    assert!(info.contains("\nnode: peer-a\n"), "{info}");
    assert!(info.contains("\nNbthread: 3\n"), "{info}");
    let mut workers: Vec<String> = thread_names(s.pid())
        .into_iter()
        .filter(|n| {
            n.strip_prefix("sluice-")
                .is_some_and(|k| k.parse::<u32>().is_ok())
        })
        .collect();
    workers.sort();
    workers.dedup();
    assert_eq!(workers, ["sluice-1", "sluice-2", "sluice-3"]);
    if ncpu >= 2 {
        let mut seen = Vec::new();
        for t in std::fs::read_dir(format!("/proc/{}/task", s.pid())).unwrap() {
            let p = t.unwrap().path();
            let st = std::fs::read_to_string(p.join("status")).unwrap_or_default();
            if let Some(l) = st
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            {
                seen.push(l.trim().to_string());
            }
        }
        assert!(
            seen.contains(&"0".to_string()) && seen.contains(&"1".to_string()),
            "{seen:?}"
        );
    }
}

/// Without `ulimit-n`, the fd limit is raised from `maxconn` (HAProxy's
/// 2 x maxconn plus listeners, servers and a margin). sluice is started
/// with a soft limit below its hard one, so raising needs no privilege.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maxconn_raises_the_fd_limit() {
    use std::os::unix::process::CommandExt;
    let b = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    let hard = lim.rlim_max;
    let soft = (hard / 2).min(4096);
    // Enough connections to need more than that soft limit.
    let maxconn = soft / 2 + 500;
    let want = 2 * maxconn + 1 + 1 + 100;
    assert!(want <= hard, "hard fd limit {hard} too low for this test");
    let dir = TempDir::new("fdlimit");
    let text = cfg(port, &b, &format!("    maxconn {maxconn}\n"))
        .replace("@DIR@", dir.path().to_str().unwrap());
    let path = dir.write("s.cfg", &text);
    let mut cmd = std::process::Command::new(bin());
    cmd.args(["-f", path.to_str().unwrap(), "-d"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap());
    // SAFETY: only setrlimit, async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let l = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &l) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let child = KillOnDrop(cmd.spawn().expect("spawn sluice"));
    let sock = dir.join("stats.sock");
    wait_until(Duration::from_secs(10), "stats socket", || {
        let sock = sock.clone();
        async move { tokio::net::UnixStream::connect(&sock).await.is_ok() }
    })
    .await;
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.0.id())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    assert_eq!(
        line.split_whitespace().nth(3),
        Some(want.to_string().as_str()),
        "maxconn {maxconn}, started with {soft}: {line}"
    );
    let info = cli(&sock, "show info").await;
    assert!(info.contains(&format!("\nMaxconn: {maxconn}\n")), "{info}");
    assert_eq!(
        get(SocketAddr::from(([127, 0, 0, 1], port)), "/")
            .await
            .status,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_upgrade_takes_listeners_over_with_x_and_sf() {
    let b = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let text = cfg(port, &b, "").replace(
        "stats.sock level admin",
        "stats.sock level admin expose-fd listeners",
    );
    let mut old = Sluice::start(&text);
    let sock = old.stats_socket();
    // The CLI still answers ordinary commands on an expose-fd socket.
    assert!(cli(&sock, "show info").await.contains("Pid: "));
    // Client load through the hand-over: every request must succeed.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut load = Vec::new();
    for _ in 0..2 {
        let stop = stop.clone();
        load.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let mut c = tokio::net::TcpStream::connect(addr).await.expect("connect");
                c.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                    .await
                    .unwrap();
                let mut out = Vec::new();
                c.read_to_end(&mut out).await.expect("read");
                assert!(
                    out.starts_with(b"HTTP/1.1 200"),
                    "{}",
                    String::from_utf8_lossy(&out)
                );
                n += 1;
            }
            n
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The new process must not be able to bind by itself: prove it took
    // the sockets over by giving it the same config (same port).
    let new_dir = TempDir::new("new");
    let new_cfg = new_dir.write(
        "new.cfg",
        &text
            .replace("@DIR@", new_dir.path().to_str().unwrap())
            .replace("expose-fd listeners", ""),
    );
    let new = std::process::Command::new(bin())
        .args([
            "-f",
            new_cfg.to_str().unwrap(),
            "-d",
            "-x",
            sock.to_str().unwrap(),
            "-sf",
        ])
        .arg(old.pid().to_string())
        .stderr(std::fs::File::create(new_dir.join("stderr")).unwrap())
        .spawn()
        .unwrap();
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _new = KillOnDrop(new);
    old_exits_cleanly(&mut old, Duration::from_secs(15), "old process finishes");
    assert_handed_over(&old);
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut total = 0;
    for l in load {
        total += l.await.expect("no failed request during the hand-over");
    }
    assert!(total > 0);
    let err = std::fs::read_to_string(new_dir.join("stderr")).unwrap();
    assert!(!err.contains("Failed to get the sockets"), "{err}");
    assert_eq!(get(addr, "/after").await.status, 200);
}

/// A binary upgrade while a request is in flight on the old process:
/// `-sf` lets it finish (soft stop), `-st` cuts it (immediate stop), as
/// HAProxy's "finish" and "terminate".
async fn upgrade_with_request_in_flight(flag: &str) {
    let b = Backend::start("s1").await;
    b.set_gated(true);
    let (_hold, port) = hold_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let text = cfg(port, &b, "").replace(
        "stats.sock level admin",
        "stats.sock level admin expose-fd listeners",
    );
    let mut old = Sluice::start(&text);
    let slow = tokio::spawn(async move {
        HttpConn::connect(addr)
            .await
            .send("GET", "/slow", b"")
            .await
    });
    b.wait_started("/slow", Duration::from_secs(10)).await;
    let new = Sluice::builder(&text.replace(" expose-fd listeners", ""))
        .arg("-x")
        .arg(old.stats_socket().to_str().unwrap())
        .arg(flag)
        .arg(&old.pid().to_string())
        .start();
    if flag == "-st" {
        old_exits_cleanly(
            &mut old,
            Duration::from_secs(5),
            "-st stops the old process at once",
        );
        let r = within(Duration::from_secs(5), "cut request", slow)
            .await
            .unwrap();
        assert!(r.is_err(), "request in flight not cut by -st: {r:?}");
    } else {
        // The old process waits for its request in flight.
        tokio::time::sleep(Duration::from_millis(300)).await;
        old.assert_running();
        b.release(1);
        let r = within(Duration::from_secs(10), "slow request", slow)
            .await
            .unwrap()
            .expect("request in flight finishes under -sf");
        assert_eq!(r.status, 200);
        assert_eq!(r.header("connection"), Some("close"), "{}", r.head);
        old_exits_cleanly(&mut old, Duration::from_secs(10), "old process finishes");
    }
    assert_handed_over(&old);
    // The new process serves on the same port.
    b.set_gated(false);
    assert_eq!(get(addr, "/after").await.status, 200);
    drop(new);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrade_with_sf_lets_the_old_request_finish() {
    upgrade_with_request_in_flight("-sf").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrade_with_st_stops_the_old_process_at_once() {
    upgrade_with_request_in_flight("-st").await;
}

/// SIGTTOU pauses the listeners as HAProxy does (the port stops listening,
/// so another process could bind it; open connections go on), SIGTTIN
/// resumes them on the same socket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigttou_pauses_and_sigttin_resumes_listeners() {
    let be = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let s = Sluice::start(&cfg(port, &be, ""));
    let mut open = HttpConn::connect(addr).await;
    assert_eq!(open.get("/before").await.status, 200);
    kill(s.pid(), "TTOU");
    wait_until(
        Duration::from_secs(10),
        "the port to stop listening",
        || async {
            matches!(
                tokio::net::TcpStream::connect(addr).await,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
            )
        },
    )
    .await;
    // A connection accepted before the pause is still served.
    assert_eq!(open.get("/during").await.status, 200);
    kill(s.pid(), "TTIN");
    let r = within(Duration::from_secs(10), "served after SIGTTIN", async {
        loop {
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                return get(addr, "/after").await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(r.status, 200);
    let err = s.stderr();
    assert!(err.contains("Paused listener"), "{err}");
    assert!(err.contains("Resumed listener"), "{err}");
}

/// `sluice -D -f <cfg> -p <pidfile>` on the test config in `dir`.
fn start_daemon(dir: &TempDir, port: u16, be: &Backend, pidfile: &Path) -> RunOutput {
    let cfg = dir.write(
        "d.cfg",
        &cfg(port, be, "").replace("@DIR@", dir.path().to_str().unwrap()),
    );
    run_sluice(
        &[
            "-D",
            "-f",
            cfg.to_str().unwrap(),
            "-p",
            pidfile.to_str().unwrap(),
        ],
        None,
    )
}

/// `-D -p <file>`: the command returns once the daemon runs, with the pid
/// file already naming it (HAProxy's parent writes it before exiting).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_mode_writes_the_pid_file_before_returning() {
    let be = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let dir = TempDir::new("daemon");
    let pidfile = dir.join("d.pid");
    let out = start_daemon(&dir, port, &be, &pidfile);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let text = std::fs::read_to_string(&pidfile).expect("pid file written before -D returns");
    let pid: u32 = text.trim().parse().expect("a pid");
    struct Kill(u32);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = std::process::Command::new("kill")
                .args(["-INT", &self.0.to_string()])
                .status();
        }
    }
    let _daemon = Kill(pid);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(get(addr, "/d").await.status, 200);
    let info = cli(&dir.join("stats.sock"), "show info").await;
    assert!(info.contains(&format!("\nPid: {pid}\n")), "{info}");
}

/// A pid file that cannot be written fails `-D` with HAProxy's alert and
/// exit code 1, and leaves no daemon behind serving without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_mode_fails_whole_when_the_pid_file_cannot_be_written() {
    let be = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let dir = TempDir::new("daemon-nopid");
    let out = start_daemon(&dir, port, &be, &dir.join("missing-dir/d.pid"));
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("[ALERT]") && out.stderr.contains("cannot create pidfile"),
        "{}",
        out.stderr
    );
    // The daemon was stopped before it could serve: its stats socket never
    // answers, and the port is free again once the kill is reaped.
    let sock = dir.join("stats.sock");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "port {port} still held by a daemon"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        tokio::net::UnixStream::connect(&sock).await.is_err(),
        "a daemon answers on {}",
        sock.display()
    );
}

/// The `daemon` and `pidfile` keywords do what `-D -p` do: the command
/// returns once the daemon serves, the pid file naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_keyword_goes_to_the_background() {
    let be = Backend::start("s1").await;
    let (_hold, port) = hold_port();
    let dir = TempDir::new("daemon-kw");
    let pidfile = dir.join("kw.pid");
    let text = cfg(
        port,
        &be,
        &format!("    daemon\n    pidfile {}\n", pidfile.display()),
    )
    .replace("@DIR@", dir.path().to_str().unwrap());
    let path = dir.write("kw.cfg", &text);
    let out = run_sluice(&["-f", path.to_str().unwrap()], None);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("pid file written before the command returns")
        .trim()
        .parse()
        .expect("a pid");
    struct Stop(u32);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = std::process::Command::new("kill")
                .args(["-INT", &self.0.to_string()])
                .status();
        }
    }
    let _daemon = Stop(pid);
    assert_eq!(
        get(SocketAddr::from(([127, 0, 0, 1], port)), "/kw")
            .await
            .status,
        200
    );
    let info = cli(&dir.join("stats.sock"), "show info").await;
    assert!(info.contains(&format!("\nPid: {pid}\n")), "{info}");
    // Detached: its own session, not the test's.
    let sid = |p: &str| {
        std::fs::read_to_string(format!("/proc/{p}/stat"))
            .ok()
            .and_then(|t| {
                let after = t.rsplit_once(')')?.1.to_string();
                after.split_whitespace().nth(3).map(str::to_string)
            })
            .unwrap_or_default()
    };
    assert_ne!(sid(&pid.to_string()), sid("self"));
}

/// `-q`, as HAProxy 2.6's: nothing on the terminal from a real start to a
/// soft stop (the config warning, the "started" line, the "Proxy stopped"
/// lines), nor for a start that fails (the exit code says it). Without it
/// those lines are there.
#[test]
fn quiet_mode_prints_nothing_from_start_to_stop() {
    let (_hold, port) = hold_port();
    // No timeouts: a warning at parse time.
    let cfg = format!(
        "global\n    stats socket @DIR@/stats.sock level admin\nfrontend fe\n    mode http\n    bind 127.0.0.1:{port}\n"
    );
    for quiet in [false, true] {
        let mut b = Sluice::builder(&cfg);
        if quiet {
            b = b.arg("-q");
        }
        let mut s = b.start();
        kill(s.pid(), "USR1");
        let st = s.wait_exit(Duration::from_secs(10)).expect("soft stop");
        assert_eq!(st.code(), Some(0));
        let err = s.stderr();
        if quiet {
            assert_eq!(err, "");
        } else {
            for line in ["[WARNING]", " started (pid ", "Proxy fe stopped"] {
                assert!(err.contains(line), "{line}: {err}");
            }
        }
    }
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = TempDir::new("quiet");
    let cfg = dir.write(
        "busy.cfg",
        &format!(
            "defaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    timeout connect 1s\nfrontend fe\n    bind {}\n",
            busy.local_addr().unwrap()
        ),
    );
    let out = run_sluice(&["-q", "-f", cfg.to_str().unwrap()], None);
    assert_eq!(out.code(), Some(1));
    assert_eq!(out.stdout + &out.stderr, "");
    let out = run_sluice(&["-f", cfg.to_str().unwrap()], None);
    assert!(
        out.stderr
            .contains("cannot bind socket (Address already in use)"),
        "{}",
        out.stderr
    );
}

/// The old process of an upgrade exits 0 within `wait`; `why` names what
/// should have ended it.
fn old_exits_cleanly(old: &mut Sluice, wait: Duration, why: &str) {
    let st = old.wait_exit(wait).expect(why);
    assert_eq!(st.code(), Some(0), "{}", old.stderr());
}

/// The old process said it handed its listening socket over.
fn assert_handed_over(old: &Sluice) {
    assert!(
        old.stderr().contains("Handed 1 listening socket(s) over"),
        "{}",
        old.stderr()
    );
}
