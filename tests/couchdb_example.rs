//! `examples/couchdb/run.sh` end to end: three pouchdb-server nodes, sluice
//! (this build) with `examples/couchdb/sluice.cfg` in front, on free ports.
//! The script asserts each step itself (writes on the master, alternating
//! reads on the replicas, a killed replica DOWN and reads still served, its
//! return UP, a reload by `kill -USR2 $(cat pidfile)` after an edit of the
//! config that `show stat` shows with every counter kept) and exits non-zero
//! otherwise; this test checks its exit status,
//! the lines that show those steps, and that it stopped everything it started.
//!
//! Needs node, curl, socat and `npm ci --ignore-scripts` in
//! `examples/couchdb` (`.ci/run` does it); without them the test is skipped
//! with a message, unless `CI` is set, where it fails.

mod support;

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/couchdb");

/// The whole walk-through takes about 10 s; this is only a guard against a
/// hang.
const DEADLINE: Duration = Duration::from_secs(120);

fn runs(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Why the example cannot run here, if it cannot.
fn missing() -> Option<String> {
    for (tool, arg) in [
        ("node", "--version"),
        ("curl", "--version"),
        ("socat", "-V"),
    ] {
        if !runs(tool, arg) {
            return Some(format!("{tool} is not installed"));
        }
    }
    let server = Path::new(EXAMPLE).join("node_modules/.bin/pouchdb-server");
    if !server.exists() {
        return Some(format!(
            "{} is missing (run `npm ci --ignore-scripts` in examples/couchdb)",
            server.display()
        ));
    }
    None
}

/// Waits for the script; on the deadline, SIGTERM (its trap stops what it
/// started) and a failure.
fn wait_script(child: &mut Child) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for run.sh") {
            return status;
        }
        if start.elapsed() > DEADLINE {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let _ = child.wait();
            panic!("examples/couchdb/run.sh did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn refused(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err()
}

#[test]
fn couchdb_example_runs_end_to_end() {
    if let Some(why) = missing() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the CouchDB example is required in CI (.ci/run installs it): {why}"
        );
        eprintln!("skipping the CouchDB example: {why}");
        return;
    }
    let (_hold, ports) = hold_ports::<4>();
    let tmp = TempDir::new("couchdb-example");
    let mut child = Command::new("bash")
        .arg(Path::new(EXAMPLE).join("run.sh"))
        .env("SLUICE_BIN", bin())
        .env("COUCHDB_PROXY_PORT", ports[0].to_string())
        .env("COUCHDB1_PORT", ports[1].to_string())
        .env("COUCHDB2_PORT", ports[2].to_string())
        .env("COUCHDB3_PORT", ports[3].to_string())
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run examples/couchdb/run.sh");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let status = wait_script(&mut child);
    let out = out_reader.join().expect("stdout reader");
    let err = err_reader.join().expect("stderr reader");
    let all = format!("--- stdout ---\n{out}\n--- stderr ---\n{err}");
    assert!(status.success(), "run.sh failed ({status}):\n{all}");

    // The steps, as the script prints them.
    for want in [
        "PUT /demo -> 201 from master_backend/couchdb1: {\"ok\":true}",
        "PUT /demo/doc1 -> 201 from master_backend/couchdb1",
        "POST /demo -> 201 from master_backend/couchdb1",
        "POST /_replicate -> 200 from master_backend/couchdb1: {\"ok\":true",
        "GET /demo/doc1 -> 200 from slave_backend/couchdb2: {\"title\":\"written through sluice\"",
        "GET /demo/doc1 -> 200 from slave_backend/couchdb3: {\"title\":\"written through sluice\"",
        "log: Server slave_backend/couchdb3 is DOWN",
        "served by: couchdb2 couchdb2 couchdb2",
        "log: Server slave_backend/couchdb3 is UP",
        "config: server couchdb3 \"127.0.0.1:${COUCHDB3_PORT-5986}\" weight 3 maxconn 512 check",
        "Generation: 2\n",
        "Last_reload_status: success\n",
        "  server slave_backend/couchdb3 modified: weight 1 -> 3\n",
        "All steps passed.",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{all}");
    }
    let served: Vec<&str> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("served by: "))
        .collect();
    assert_eq!(served.len(), 4, "{all}");
    for rotation in [served[0], served[2]] {
        assert!(
            rotation == "couchdb2 couchdb3 couchdb2 couchdb3"
                || rotation == "couchdb3 couchdb2 couchdb3 couchdb2",
            "reads did not alternate: {rotation:?}\n{all}"
        );
    }
    // `show stat` tables: all UP, then couchdb3 DOWN (L4CON), then UP again.
    let couchdb3: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.starts_with(&["slave_backend", "couchdb3"]))
        .collect();
    let states: Vec<&str> = couchdb3.iter().map(|w| w[2]).collect();
    assert_eq!(states, ["UP", "UP", "DOWN", "UP", "UP"], "{all}");
    // The weight column: 1 until the reload, 3 after it.
    let weights: Vec<&str> = couchdb3.iter().map(|w| w[8]).collect();
    assert_eq!(weights, ["1", "1", "1", "1", "3"], "{all}");
    // After the reload, the counters went on from where they were: each
    // server's stot in the reload's table equals the one before.
    let kept: Vec<&str> = out
        .lines()
        .map(str::trim)
        .filter(|l| l.ends_with(" (kept)"))
        .collect();
    assert_eq!(kept.len(), 3, "{all}");
    for line in &kept {
        let w: Vec<&str> = line.split_whitespace().collect();
        // <backend/server> stot <before> -> <after> (kept)
        let (before, after): (u64, u64) = (w[2].parse().unwrap(), w[4].parse().unwrap());
        assert!(before > 0 && after == before, "{line}\n{all}");
    }
    // Weight 3 to 1: six of the eight reads after the reload on couchdb3.
    assert_eq!(
        served[3].split(' ').filter(|n| *n == "couchdb3").count(),
        6,
        "{all}"
    );
    assert_eq!(couchdb3[2].last(), Some(&"L4CON"), "{all}");
    assert!(
        couchdb3.iter().all(|w| w[5] == "512"),
        "slim is maxconn 512: {all}"
    );

    // Everything it started is gone: no node or proxy listening, its temp
    // dir (with the stats socket) removed.
    for port in &ports {
        assert!(refused(*port), "port {port} still listening after run.sh");
    }
    let left: Vec<PathBuf> = std::fs::read_dir(tmp.path())
        .expect("read TMPDIR")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    assert!(left.is_empty(), "run.sh left {left:?}");
}
