//! `bind :::<port>` with `v6only`, `v4v6` or neither, as HAProxy 2.6 does
//! it (checked against haproxy 2.6 on the same configuration): neither
//! leaves the system's `net.ipv6.bindv6only` in force (0 normally, so the
//! listener takes IPv4 too), `v6only` refuses IPv4, `v4v6` takes both. A
//! reload that changes the option binds the listener again.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The frontend that answered on `addr` (its body), or the connect error.
async fn who(addr: SocketAddr) -> std::io::Result<String> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").await?;
    let mut out = Vec::new();
    within(Duration::from_secs(5), "the reply", s.read_to_end(&mut out)).await?;
    let text = String::from_utf8_lossy(&out).into_owned();
    Ok(text.rsplit("\r\n\r\n").next().unwrap_or("").to_string())
}

fn v4(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn v6(port: u16) -> SocketAddr {
    SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port))
}

/// Whether `[::1]` can be bound here; else the test says why and skips.
fn have_ipv6_loopback() -> bool {
    match std::net::TcpListener::bind(v6(0)) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipped: this machine has no IPv6 loopback ([::1]: {e})");
            false
        }
    }
}

/// IPv4 connections to `port` are refused, at the latest after 3s: a
/// reload closes the listener it replaces from its own accept loop.
async fn v4_refused_soon(port: u16) {
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    loop {
        match tokio::net::TcpStream::connect(v4(port)).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return,
            r => assert!(
                std::time::Instant::now() < deadline,
                "127.0.0.1:{port} still answers: {r:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `net.ipv6.bindv6only` of this machine: what a bare `:::port` does.
fn system_v6only() -> bool {
    std::fs::read_to_string("/proc/sys/net/ipv6/bindv6only").is_ok_and(|s| s.trim() == "1")
}

fn frontend(name: &str, bind: &str) -> String {
    format!(
        "frontend {name}\n    bind {bind}\n    http-request return status 200 content-type text/plain string {name}\n"
    )
}

const HEAD: &str = "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
";

#[tokio::test]
async fn v6only_and_v4v6_on_an_ipv6_wildcard() {
    if !have_ipv6_loopback() {
        return;
    }
    let (_held, [plain, only, both]) = hold_ports::<3>();
    let cfg = format!(
        "{HEAD}{}{}{}",
        frontend("plain", &format!(":::{plain}")),
        frontend("only", &format!(":::{only} v6only")),
        frontend("both", &format!(":::{both} v4v6")),
    );
    let _sl = Sluice::builder(&cfg).ready(Ready::Tcp(v6(only))).start();
    for (port, name) in [(plain, "plain"), (only, "only"), (both, "both")] {
        assert_eq!(who(v6(port)).await.unwrap(), name, "[::1]:{port}");
    }
    assert_eq!(who(v4(both)).await.unwrap(), "both");
    let e = who(v4(only)).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
    if system_v6only() {
        assert!(who(v4(plain)).await.is_err());
    } else {
        assert_eq!(who(v4(plain)).await.unwrap(), "plain");
    }
}

#[tokio::test]
async fn v6only_given_both_ways_wins() {
    if !have_ipv6_loopback() {
        return;
    }
    let (_held, port) = hold_port();
    let cfg = format!(
        "{HEAD}{}",
        frontend("fe", &format!(":::{port} v4v6 v6only"))
    );
    let _sl = Sluice::builder(&cfg).ready(Ready::Tcp(v6(port))).start();
    assert_eq!(who(v6(port)).await.unwrap(), "fe");
    assert!(who(v4(port)).await.is_err());
}

#[tokio::test]
async fn a_reload_applies_a_changed_v6only() {
    if !have_ipv6_loopback() {
        return;
    }
    let (_held, port) = hold_port();
    let with = |opt: &str| format!("{HEAD}{}", frontend("fe", &format!(":::{port} {opt}")));
    let sl = Sluice::builder(&with("v6only"))
        .ready(Ready::Tcp(v6(port)))
        .start();
    let sock = sl.path("stats.sock");
    assert!(who(v4(port)).await.is_err());

    let rewrite = |text: &str| {
        let dir = sl.path("");
        let dir = dir.to_str().unwrap().trim_end_matches('/');
        std::fs::write(sl.path("sluice.cfg"), text.replace("@DIR@", dir)).unwrap();
    };
    rewrite(&with("v4v6"));
    let reply = cli(&sock, "reload").await;
    assert!(reply.starts_with("Success=1"), "{reply}");
    assert_eq!(who(v4(port)).await.unwrap(), "fe");
    assert_eq!(who(v6(port)).await.unwrap(), "fe");

    // Back again: IPv4 is refused once more.
    rewrite(&with("v6only"));
    let reply = cli(&sock, "reload").await;
    assert!(reply.starts_with("Success=1"), "{reply}");
    v4_refused_soon(port).await;
    assert_eq!(who(v6(port)).await.unwrap(), "fe");
}

/// A listener a reload replaces (here: its `v6only` changed) takes the
/// connections already queued on it before it closes: an IPv6 client that
/// connects right after each reload lands on the old socket (the kernel
/// keeps it first until it closes) and is served, not reset.
#[tokio::test]
async fn a_replaced_listener_serves_its_backlog() {
    if !have_ipv6_loopback() {
        return;
    }
    let (_held, port) = hold_port();
    let with = |opt: &str| format!("{HEAD}{}", frontend("fe", &format!(":::{port} {opt}")));
    let sl = Sluice::builder(&with("v6only"))
        .ready(Ready::Tcp(v6(port)))
        .start();
    let sock = sl.path("stats.sock");
    let dir = sl.path("");
    let dir = dir.to_str().unwrap().trim_end_matches('/').to_string();
    for round in 0..20 {
        let opt = if round % 2 == 0 { "v4v6" } else { "v6only" };
        std::fs::write(sl.path("sluice.cfg"), with(opt).replace("@DIR@", &dir)).unwrap();
        let reply = cli(&sock, "reload").await;
        assert!(reply.starts_with("Success=1"), "{reply}");
        let got = who(v6(port)).await;
        assert_eq!(
            got.as_deref().ok(),
            Some("fe"),
            "round {round} ({opt}): {got:?}"
        );
    }
}
