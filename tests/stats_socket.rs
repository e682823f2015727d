//! The stats socket end to end, in process: bind a UNIX socket in a temp
//! dir, talk HAProxy's line protocol to it with a real client.

use std::time::Duration;

use sluice::config::model::{CliLevel, Config};
use sluice::control::cli::{bind_unix_at, serve_unix_listener};
use sluice::snapshot::runtime::Runtime;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// One listen section with one checked server, from config text as a user
/// writes it (the server is never reached: checks are not started here).
fn config() -> Config {
    let text = "global\n    maxconn 4096\n\nlisten web_be\n    mode http\n    server s1 127.0.0.1:17001 check\n";
    let loaded = sluice::config::parse_texts(
        &[("test.cfg".to_string(), text.to_string())],
        &|_| None,
        &|_, _| Err("no resolver in this test".to_string()),
    );
    loaded.config.expect("the test config is valid")
}

/// A socket path in a fresh directory under the system temp dir.
fn sock_path(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-stats-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("admin.sock")
}

async fn exchange(path: &std::path::Path, request: &[u8]) -> String {
    let mut s = UnixStream::connect(path).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out))
        .await
        .expect("server closes a non-interactive connection")
        .unwrap();
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn show_stat_over_a_unix_socket() {
    let path = sock_path("stat");
    // A stale socket file from an earlier run is replaced.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let listener = bind_unix_at(&path, Some(0o600), (None, None)).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let rt = Runtime::new(&config(), 2);
    let server = tokio::spawn(serve_unix_listener(listener, CliLevel::Admin, rt));

    let out = exchange(&path, b"show stat\n").await;
    assert!(out.ends_with(",\n\n"), "{out}");
    let lines: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
    assert!(lines[0].starts_with("# pxname,svname,qcur,"));
    let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert_eq!(r.len(), 129);
    }
    let names: Vec<&str> = rows.iter().map(|r| r[1]).collect();
    assert_eq!(names, ["FRONTEND", "s1", "BACKEND"]);
    assert_eq!(rows[1][73], "127.0.0.1:17001"); // addr at admin level

    // Pipelined commands in one write, then the server closes.
    let out = exchange(
        &path,
        b"show cli level;get weight web_be/s1\nshow backend\r\n",
    )
    .await;
    assert_eq!(out, "admin\n\n1 (initial 1)\n\n# name\nweb_be\n\n");

    // Interactive mode.
    let out = exchange(&path, b"prompt\nshow cli level\nquit\n").await;
    assert_eq!(out, "\n> admin\n\n> ");

    server.abort();
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
