//! `bind fd@<n>`: sluice accepts on a listening socket it inherited (as
//! under systemd socket activation), with the number coming from the
//! environment, and keeps it across a reload; a descriptor that is not a listening socket is a clear
//! start-up error naming the config line.

mod support;

use std::os::fd::AsRawFd;

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

#[test]
fn a_descriptor_that_is_not_a_listening_socket_is_refused() {
    let dir = std::env::temp_dir().join(format!("sluice-fd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("fd.cfg");
    std::fs::write(
        &cfg,
        "defaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\nfrontend fe\n    bind fd@987\n    default_backend be\nbackend be\n    server s1 127.0.0.1:9\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("-f")
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("Starting frontend fe: cannot use 'fd@987'"),
        "{err}"
    );
    assert!(err.contains("fd.cfg:7]"), "names the config line: {err}");
    let _ = std::fs::remove_dir_all(&dir);
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
    let port = free_port();
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
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(get(addr, "/").await.status, 200);
    // The test never accepts on its copy: the answer comes from sluice.
    let csv = show_stat(&path).await;
    assert_eq!(csv.num("be", "s1", "stot"), 1);
    assert_eq!(cli(&path, "show cli level").await, "admin\n\n");
    drop(unix);
    let _ = std::fs::remove_dir_all(&dir);
}
