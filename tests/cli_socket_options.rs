//! `stats socket` options on the real binary: the UNIX socket's owner and
//! mode (`uid`/`gid`/`user`/`group`/`mode`), the TCP form
//! (`ipv4@127.0.0.1:<port>`), `stats timeout` and `set timeout cli`.

mod support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn is_root() -> bool {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() == 0 }
}

fn my_ids() -> (u32, u32) {
    // SAFETY: as above.
    unsafe { (libc::getuid(), libc::getgid()) }
}

fn owner_and_mode(p: &Path) -> (u32, u32, u32) {
    let m = std::fs::metadata(p).unwrap();
    (m.uid(), m.gid(), m.permissions().mode() & 0o7777)
}

#[tokio::test]
async fn unix_socket_owner_and_mode_are_applied() {
    let (uid, gid) = my_ids();
    // The caller's own ids are always accepted; as root, the second
    // socket is given away to nobody/nogroup by number and the third to
    // root by name.
    let mut cfg = format!(
        "global\n    stats socket @DIR@/own.sock mode 640 uid {uid} gid {gid} level admin\n"
    );
    if is_root() {
        cfg.push_str("    stats socket @DIR@/away.sock uid 65534 gid 65534 mode 600\n");
        cfg.push_str("    stats socket @DIR@/named.sock user root group root mode 604\n");
    }
    let sl = Sluice::start(&cfg);
    let own = sl.path("own.sock");
    assert_eq!(owner_and_mode(&own), (uid, gid, 0o640));
    assert_eq!(cli(&own, "show cli level").await, "admin\n\n");
    if is_root() {
        assert_eq!(owner_and_mode(&sl.path("away.sock")), (65534, 65534, 0o600));
        assert_eq!(owner_and_mode(&sl.path("named.sock")), (0, 0, 0o604));
    }
    // No temporary file is left behind next to the sockets.
    let left: Vec<String> = std::fs::read_dir(sl.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A process that is not root cannot give its socket to root: start-up
/// fails with HAProxy's reason, and no socket is left at the path. As root,
/// sluice is run as nobody (65534) to get there.
#[test]
fn giving_the_socket_away_without_root_fails_at_start_up() {
    let dir = TempDir::new("own");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let sock = dir.join("root.sock");
    let cfg = dir.write(
        "s.cfg",
        &format!("global\n    stats socket {} uid 0 gid 0\n", sock.display()),
    );
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut cmd = Command::new(bin());
    cmd.arg("-f")
        .arg(&cfg)
        .arg("-d")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if is_root() {
        use std::os::unix::process::CommandExt;
        cmd.uid(65534).gid(65534);
    }
    let child = cmd.spawn().expect("spawn sluice");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let want = format!(
        "Starting proxy GLOBAL: cannot change UNIX socket ownership (Operation not permitted) [{}]",
        sock.display()
    );
    assert!(stderr.contains(&want), "{stderr}");
    assert!(!sock.exists());
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "only s.cfg is left: {names:?}");
}

/// Reads until the peer closes; returns the bytes and when the close came.
async fn read_to_close<R: AsyncReadExt + Unpin>(r: &mut R, limit: Duration) -> (String, Instant) {
    let mut out = Vec::new();
    within(
        limit,
        "the CLI closes the connection",
        r.read_to_end(&mut out),
    )
    .await
    .unwrap();
    (String::from_utf8(out).unwrap(), Instant::now())
}

#[tokio::test]
async fn tcp_stats_socket_with_levels() {
    let (_hold, [admin, user]) = hold_ports::<2>();
    let cfg = format!(
        "global\n    stats socket ipv4@127.0.0.1:{admin} level admin\n    stats socket ipv4@127.0.0.1:{user} level user\n\
         backend be\n    server s1 127.0.0.1:1\n"
    );
    let _sl = Sluice::start(&cfg);
    let ask = |port: u16, cmd: &'static str| async move {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        s.write_all(cmd.as_bytes()).await.unwrap();
        read_to_close(&mut s, Duration::from_secs(5)).await.0
    };
    assert_eq!(ask(admin, "show cli level\n").await, "admin\n\n");
    assert_eq!(ask(user, "show cli level\n").await, "user\n\n");
    assert_eq!(
        ask(user, "disable server be/s1\n").await,
        "Permission denied\n\n"
    );
    assert_eq!(
        ask(admin, "disable server be/s1; get weight be/s1\n").await,
        "\n1 (initial 1)\n\n"
    );
    let stat = ask(user, "show stat\n").await;
    assert!(stat.starts_with(SHOW_STAT_HEADER), "{stat}");
    assert!(
        stat.contains("\nbe,s1,") && stat.contains(",MAINT,"),
        "{stat}"
    );
    // Interactive mode over TCP, as over a UNIX socket.
    assert_eq!(
        ask(admin, "prompt\nshow cli level\nquit\n").await,
        "\n> admin\n\n> "
    );
}

/// `stats timeout` closes an idle interactive CLI connection after it, and
/// `set timeout cli` changes it for that connection only.
#[tokio::test]
async fn stats_timeout_and_set_timeout_cli_close_idle_sessions() {
    let sl = Sluice::start(
        "global\n    stats socket @DIR@/s.sock level admin\n    stats timeout 400ms\n",
    );
    let path = sl.path("s.sock");
    let idle_for = |cmds: &'static str| {
        let path = path.clone();
        async move {
            let mut s = tokio::net::UnixStream::connect(&path).await.unwrap();
            s.write_all(cmds.as_bytes()).await.unwrap();
            let sent = Instant::now();
            let (out, closed) = read_to_close(&mut s, Duration::from_secs(10)).await;
            (out, closed - sent)
        }
    };
    let (out, idle) = idle_for("prompt\n").await;
    assert_eq!(out, "\n> ");
    assert!(idle >= Duration::from_millis(350), "{idle:?}");
    assert!(idle < Duration::from_millis(2500), "{idle:?}");

    // `set timeout cli` takes seconds: 2 s, longer than `stats timeout`.
    let (out, idle) = idle_for("prompt\nset timeout cli 2\n").await;
    assert_eq!(out, "\n> \n> ");
    assert!(idle >= Duration::from_millis(1900), "{idle:?}");
    assert!(idle < Duration::from_secs(6), "{idle:?}");

    // A new connection starts again from `stats timeout`.
    let (_, idle) = idle_for("prompt\n").await;
    assert!(idle < Duration::from_millis(1900), "{idle:?}");
}

/// `stats socket 127.0.0.1:<port>` without `ipv4@` is a TCP socket, as in
/// HAProxy (no slash in the word), and answers over TCP.
#[tokio::test]
async fn tcp_stats_socket_without_a_prefix_answers_show_info() {
    let (_held, port) = hold_port();
    let sl = Sluice::builder(&format!(
        "global\n    stats socket 127.0.0.1:{port} level admin\n"
    ))
    .cwd(&std::env::temp_dir())
    .start();
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    s.write_all(b"show info\n").await.unwrap();
    let info = read_to_close(&mut s, Duration::from_secs(5)).await.0;
    assert!(info.starts_with("Name: "), "{info}");
    assert!(info.contains(&format!("\nPid: {}\n", sl.pid())), "{info}");
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    s.write_all(b"show stat\n").await.unwrap();
    let stat = read_to_close(&mut s, Duration::from_secs(5)).await.0;
    assert!(stat.starts_with("# pxname,svname,qcur,"), "{stat}");
    // And no file of that name was made in the working directory.
    assert!(
        !std::env::temp_dir()
            .join(format!("127.0.0.1:{port}"))
            .exists()
    );
}

/// `stats socket abns@<name>`: a Linux abstract socket, named as HAProxy
/// 2.6 names it (padded to the whole address), not a file `abns@<name>`
/// in the working directory.
#[tokio::test]
async fn abns_stats_socket_is_an_abstract_socket() {
    let name = format!("sluice-cli-{}", std::process::id());
    let work = TempDir::new("abns");
    let sl = Sluice::builder(&format!(
        "global\n    stats socket abns@{name} level operator\n"
    ))
    .cwd(work.path())
    .start();
    let mut s = tokio::net::UnixStream::from_std({
        let s = abns_connect(&name).unwrap();
        s.set_nonblocking(true).unwrap();
        s
    })
    .unwrap();
    s.write_all(b"show cli level\n").await.unwrap();
    assert_eq!(
        read_to_close(&mut s, Duration::from_secs(5)).await.0,
        "operator\n\n"
    );
    let files: Vec<_> = std::fs::read_dir(work.path()).unwrap().collect();
    assert!(files.is_empty(), "{files:?}");
    drop(sl);
}
