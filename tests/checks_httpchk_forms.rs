//! The request an HTTP check sends for each form of `option httpchk`
//! (bare, URI only, method and URI, with a version, with headers hidden in
//! the version string, with `http-check send`): the bytes each check
//! server received are those haproxy 2.6.12 sends for the same lines.

mod support;

use std::time::Duration;

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// A check server: sends the first request head it receives on `tx`,
/// answers 200, closes.
async fn check_server(tx: mpsc::UnboundedSender<(usize, String)>, id: usize) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let mut got = Vec::new();
            let mut buf = [0u8; 1024];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf).await {
                    Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
                    _ => break,
                }
            }
            let _ = tx.send((id, String::from_utf8_lossy(&got).into_owned()));
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn httpchk_forms_send_what_haproxy_sends() {
    let forms: &[(&str, &str)] = &[
        ("option httpchk", "OPTIONS / HTTP/1.0\r\n\r\n"),
        ("option httpchk /health", "OPTIONS /health HTTP/1.0\r\n\r\n"),
        (
            "option httpchk HEAD /health",
            "HEAD /health HTTP/1.0\r\n\r\n",
        ),
        (
            "option httpchk GET /health HTTP/1.1",
            "GET /health HTTP/1.1\r\nconnection: close\r\n\r\n",
        ),
        (
            "option httpchk GET /health HTTP/1.1\\r\\nHost:\\ www.example.com",
            "GET /health HTTP/1.1\r\nhost: www.example.com\r\nconnection: close\r\n\r\n",
        ),
        (
            "option httpchk OPTIONS * HTTP/1.1\n    http-check send hdr Host example.org",
            "OPTIONS * HTTP/1.1\r\nhost: example.org\r\nconnection: close\r\n\r\n",
        ),
    ];
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut cfg = String::from(
        "defaults
    mode http
    timeout connect 1s
    timeout client 1s
    timeout server 1s
    timeout check 1s
frontend f
    bind 127.0.0.1:@PORT@
    default_backend b0
",
    );
    for (i, (line, _)) in forms.iter().enumerate() {
        let port = check_server(tx.clone(), i).await;
        cfg.push_str(&format!(
            "backend b{i}\n    {line}\n    server s 127.0.0.1:{port} check inter 200ms\n"
        ));
    }
    let cfg = cfg.replace("@PORT@", &free_port().to_string());
    let _s = Sluice::start(&cfg);
    let mut seen: Vec<Option<String>> = vec![None; forms.len()];
    while seen.iter().any(Option::is_none) {
        let (i, req) = within(Duration::from_secs(10), "checks", rx.recv())
            .await
            .unwrap();
        seen[i].get_or_insert(req);
    }
    for ((line, want), got) in forms.iter().zip(seen) {
        assert_eq!(got.as_deref(), Some(*want), "{line}");
    }
}

/// Headers hidden in the version string get HAProxy 2.6's deprecation
/// warning (the check still sends them, above); `-c` then says what
/// haproxy says of a listener-less file with warnings (exit 2).
#[test]
fn headers_in_the_version_string_are_deprecated_as_haproxy_says() {
    let dir = TempDir::new("httpchk-warn");
    let path = dir.write(
        "c.cfg",
        "defaults\n  mode http\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\nbackend b\n  option httpchk GET / HTTP/1.1\\r\\nHost:\\ x\n  server s 127.0.0.1:1 check\n",
    );
    let out = run_sluice(&["-c", "-f", path.to_str().unwrap()], None);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "Warnings were found.\nConfiguration file has no error but will not start (no listener) => exit(2).\n"
    );
    assert!(
        out.stderr.contains("c.cfg:7]: 'option httpchk' : hiding headers or body at the end of the version string is deprecated. Please, consider to use 'http-check send' directive instead."),
        "{}",
        out.stderr
    );
}
