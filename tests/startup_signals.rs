//! A process that is starting answers its control signals and its CLI as a
//! running one does: a SIGUSR2 sent as soon as its stats socket exists
//! reloads it (the default action of SIGUSR2 would end it), and a `reload`
//! sent as soon as the socket accepts is carried out (never "not available
//! in this process"). Both happened under load: tests signalled a sluice
//! whose handlers were not installed yet.
//!
//! Each case runs several fresh processes, signalled at the earliest moment
//! a script could: the window is a few milliseconds wide, so one start
//! alone would rarely fall in it.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

const STARTS: usize = 8;

fn config(dir: &TempDir, front: &Listen) -> String {
    format!(
        "global
    stats socket {}/stats.sock level admin
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {front}
    http-request return status 200
",
        dir.path().display()
    )
}

/// Starts sluice on `cfg` without waiting for it, and waits only until its
/// stats socket file exists (bound, maybe not served yet).
fn spawn_until_socket(dir: &TempDir, front: &Listen) -> std::process::Child {
    let path = dir.write("sluice.cfg", &config(dir, front));
    let mut cmd = Command::new(bin());
    inherit(&mut cmd, &[front]);
    let mut child = cmd
        .arg("-f")
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sluice");
    let sock = dir.join("stats.sock");
    let end = Instant::now() + Duration::from_secs(10);
    while !sock.exists() {
        if let Ok(Some(st)) = child.try_wait() {
            panic!("sluice exited ({st}) before binding its stats socket");
        }
        assert!(Instant::now() < end, "no stats socket after 10 s");
        std::thread::sleep(Duration::from_micros(200));
    }
    child
}

fn generation(info: &str) -> u64 {
    info.lines()
        .find_map(|l| l.strip_prefix("Generation: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_signal_at_start_reloads() {
    for _ in 0..STARTS {
        let dir = TempDir::new("early-usr2");
        let front = Listen::new();
        let mut child = spawn_until_socket(&dir, &front);
        // SAFETY: plain kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGUSR2) }, 0);
        let sock = dir.join("stats.sock");
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                panic!("sluice ended by a SIGUSR2 sent while it started ({st})");
            }
            if generation(&cli(&sock, "show info").await) >= 2 {
                break;
            }
            assert!(Instant::now() < end, "the early SIGUSR2 did not reload");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_reload_at_start_is_carried_out() {
    for _ in 0..STARTS {
        let dir = TempDir::new("early-reload");
        let front = Listen::new();
        let mut child = spawn_until_socket(&dir, &front);
        let reply = cli(&dir.join("stats.sock"), "reload").await;
        assert!(reply.starts_with("Success=1\n"), "{reply}");
        let _ = child.kill();
        let _ = child.wait();
    }
}
