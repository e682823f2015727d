//! The harness's ports cannot be taken by another test: a held
//! [`support::Port`] is given to no other socket until dropped, a
//! [`support::Listen`] reaches the sluice it is written into (and no other
//! child), and a killed [`support::Backend`] keeps its port for its restart.

mod support;

use std::net::{SocketAddr, TcpStream as StdStream};
use std::time::Duration;

use support::*;

/// Binds `addr` the way a process that does not share ports would (no
/// SO_REUSEADDR): fails while anyone else has the port bound.
fn exclusive_bind(addr: SocketAddr) -> std::io::Result<socket2::Socket> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.bind(&addr.into())?;
    Ok(s)
}

fn refused(addr: SocketAddr) -> bool {
    matches!(
        StdStream::connect_timeout(&addr, Duration::from_secs(2)),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
    )
}

#[test]
fn a_held_port_is_given_to_no_other_socket() {
    let held = Port::new();
    // Nothing listens on it: connections are refused, never queued.
    assert!(refused(held.addr()));
    let e = exclusive_bind(held.addr()).expect_err("the held port was free to bind");
    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);
    // Ephemeral binds (how backends and other tests get ports) skip it.
    for _ in 0..2000 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        assert_ne!(l.local_addr().unwrap(), held.addr());
    }
    // Released on drop.
    let addr = held.addr();
    drop(held);
    exclusive_bind(addr).expect("a dropped Port frees its number");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sluice_binds_a_held_port() {
    let be = Backend::start("s1").await;
    let fe = Port::new();
    let _s = Sluice::start(&format!(
        "defaults\n    mode http\n    timeout connect 5s\n    timeout client 5s\n    timeout server 5s\nfrontend fe\n    bind 127.0.0.1:{fe}\n    default_backend be\nbackend be\n    server s1 {}\n",
        be.hostport()
    ));
    let r = get(fe.addr(), "/").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.backend(), "s1");
}

fn close_on_exec(fd: i32) -> bool {
    // SAFETY: fcntl on a descriptor this test owns.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    assert!(flags >= 0);
    flags & libc::FD_CLOEXEC != 0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_reaches_the_sluice_it_is_written_into() {
    let be = Backend::start("s1").await;
    let fe = Listen::new();
    assert_eq!(fe.to_string(), format!("fd@{}", fe.fd()));
    let s = Sluice::start(&format!(
        "global\n    stats socket @DIR@/stats.sock level admin\ndefaults\n    mode http\n    timeout connect 5s\n    timeout client 5s\n    timeout server 5s\nfrontend fe\n    bind {fe}\n    default_backend be\nbackend be\n    server s1 {}\n",
        be.hostport()
    ));
    // Only the child's copy lost close-on-exec: other children of this
    // binary never inherit it.
    assert!(close_on_exec(fe.fd()));
    // The test never accepts on its copy: answers can only come from
    // sluice.
    for i in 0..3 {
        let r = get(fe.addr(), &format!("/{i}")).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.backend(), "s1");
    }
    let csv = show_stat(&s.stats_socket()).await;
    assert_eq!(csv.num("be", "s1", "stot"), 3);
    // Never free while held: no other test can get the number.
    assert!(exclusive_bind(fe.addr()).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_backend_keeps_its_port_until_restarted() {
    let mut be = Backend::start("s1").await;
    let addr = be.addr;
    be.kill().await;
    assert!(refused(addr), "a killed backend refuses connections");
    assert!(
        exclusive_bind(addr).is_err(),
        "a killed backend's port was free for anyone"
    );
    be.restart().await;
    let mut c = StdStream::connect(addr).expect("restarted backend accepts");
    use std::io::{Read, Write};
    c.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert!(out.ends_with("s1\n"), "{out}");
}

/// A Listen accepts from the start (the test holds it listening), so
/// readiness cannot be a connect: it is the child taking a probe off the
/// queue. A child that never accepts is not taken for ready.
#[test]
#[should_panic(expected = "exited (exit status: 0) before accepting")]
fn a_child_that_never_accepts_is_not_ready() {
    let fe = Listen::new();
    let mut cmd = std::process::Command::new("true");
    inherit(&mut cmd, &[&fe]);
    let mut child = cmd.spawn().expect("spawn true");
    fe.wait_accepting(&mut child);
}

/// Each readiness probe is closed once taken: under `maxconn 1` a probe
/// kept open would hold the only slot while the next listener's probe
/// waits for it (until `timeout client`, past the start deadline).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_probes_hold_no_slot() {
    let be = Backend::start("s1").await;
    let (fe1, fe2) = (Listen::new(), Listen::new());
    let _s = Sluice::start(&format!(
        "global\n    maxconn 1\ndefaults\n    mode http\n    timeout connect 5s\n    timeout client 60s\n    timeout server 60s\nfrontend fe1\n    bind {fe1}\n    default_backend be\nfrontend fe2\n    bind {fe2}\n    default_backend be\nbackend be\n    server s1 {}\n",
        be.hostport()
    ));
    for fe in [&fe1, &fe2] {
        assert_eq!(get(fe.addr(), "/").await.backend(), "s1");
    }
}
