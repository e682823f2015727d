//! `show sess` on the stats socket (reference §1.6): one line per request
//! in progress with HAProxy's `<ptr>: proto= src= fe= be= srv= ts= epoch=
//! age= calls=` prefix, then the CLI's own stream; idle keep-alive
//! connections and connections without a request are not streams.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use support::*;

/// The `key=value` of a `show sess` line.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split(' ')
        .find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key}= in {line}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_are_listed_then_gone() {
    let slow = Backend::start("slow").await;
    let other = Backend::start("other").await;
    slow.set_gated(true);
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "global
    stats socket @DIR@/admin.sock mode 600 level admin
    stats socket @DIR@/user.sock mode 600 level user

defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s

frontend web_fe
    bind {fe}
    use_backend slow_be if {{ path_beg /slow }}
    default_backend other_be

backend slow_be
    server m1 {a}

backend other_be
    server o1 {b}
",
        a = slow.hostport(),
        b = other.hostport()
    );
    let sl = Sluice::start(&cfg);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let sock = sl.path("admin.sock");

    // Nothing in flight: only the CLI's own line.
    let out = cli(&sock, "show sess").await;
    let only_cli = |out: &str| {
        let lines: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(lines.len(), 1, "{out}");
        assert!(
            lines[0].contains(": proto=unix_stream src=unix:1 fe=GLOBAL be=<NONE> srv=<none> ts=00 epoch=0 age=0s calls=1 "),
            "{out}"
        );
        assert!(out.ends_with("\n\n"), "{out:?}");
    };
    only_cli(&out);

    // An idle keep-alive connection and one that sent nothing: no stream.
    let mut idle = HttpConn::connect(addr).await;
    assert_eq!(idle.get("/x").await.status, 200);
    let _silent = tokio::net::TcpStream::connect(addr).await.expect("connect");
    // Two slow requests on their own connections.
    let mut c1 = HttpConn::connect(addr).await;
    let mut c2 = HttpConn::connect(addr).await;
    let r1 = tokio::spawn(async move { c1.get("/slow/1").await });
    let r2 = tokio::spawn(async move { c2.get("/slow/2").await });
    slow.wait_started("/slow/1", Duration::from_secs(5)).await;
    slow.wait_started("/slow/2", Duration::from_secs(5)).await;

    let out = cli(&sock, "show sess").await;
    let lines: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 3, "{out}");
    for l in &lines[..2] {
        let (ptr, rest) = l.split_once(": ").expect("ptr");
        assert!(ptr.starts_with("0x"), "{l}");
        assert!(rest.starts_with("proto=tcpv4 src=127.0.0.1:"), "{l}");
        assert_eq!(field(l, "fe"), "web_fe");
        assert_eq!(field(l, "be"), "slow_be");
        assert_eq!(field(l, "srv"), "m1");
        assert_eq!(field(l, "ts"), "00");
        assert!(field(l, "age").ends_with('s'), "{l}");
        assert_eq!(field(l, "calls"), "1");
        // The prefix order HAProxy prints.
        let keys: Vec<&str> = rest
            .split(' ')
            .take(8)
            .map(|w| w.split('=').next().unwrap_or(""))
            .collect();
        assert_eq!(
            keys,
            ["proto", "src", "fe", "be", "srv", "ts", "epoch", "age"]
        );
    }
    assert!(lines[2].contains("fe=GLOBAL"), "{out}");

    // `show sess <ptr>` dumps that one; an unknown one is not found.
    let ptr = lines[0].split(':').next().unwrap_or_default().to_string();
    let one = cli(&sock, &format!("show sess {ptr}")).await;
    assert!(one.starts_with(&format!("{ptr}: [")), "{one}");
    assert!(one.contains("  frontend=web_fe (id="), "{one}");
    assert!(one.contains("  backend=slow_be (id="), "{one}");
    assert!(
        one.contains(&format!("  server=m1 (id=1) addr={}", slow.hostport())),
        "{one}"
    );
    assert_eq!(cli(&sock, "show sess 0x1").await, "Session not found.\n\n");
    let all = cli(&sock, "show sess all").await;
    assert_eq!(all.matches("  server=m1 (id=1)").count(), 2, "{all}");
    // Operator level at least.
    assert_eq!(
        cli(&sl.path("user.sock"), "show sess").await,
        "Permission denied\n\n"
    );

    slow.release(2);
    assert_eq!(r1.await.expect("r1").status, 200);
    assert_eq!(r2.await.expect("r2").status, 200);
    // A client has its response just before sluice marks the stream
    // finished: on a loaded machine the next `show sess` can still list
    // it. Gone within the deadline, and only the CLI's line then.
    let end = std::time::Instant::now() + Duration::from_secs(5);
    let out = loop {
        let out = cli(&sock, "show sess").await;
        let lines = out.lines().filter(|l| !l.is_empty()).count();
        if lines == 1 || std::time::Instant::now() >= end {
            break out;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    only_cli(&out);
    // The idle keep-alive connection was never listed and still serves.
    assert_eq!(idle.get("/x").await.status, 200);
}

/// `shutdown sessions server <b>/<s>`: the client connections of that
/// server's streams are closed at once; other servers' streams go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_sessions_server_closes_its_streams() {
    let slow = Backend::start("slow").await;
    let other = Backend::start("other").await;
    slow.set_gated(true);
    other.set_gated(true);
    let fe = Listen::new();
    let port = fe.port();
    let sl = Sluice::start(&format!(
        "global
    stats socket @DIR@/admin.sock mode 600 level admin
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend web_fe
    bind {fe}
    use_backend slow_be if {{ path_beg /slow }}
    default_backend other_be
backend slow_be
    server m1 {a}
backend other_be
    server o1 {b}
",
        a = slow.hostport(),
        b = other.hostport()
    ));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let sock = sl.path("admin.sock");
    let mut cut = Vec::new();
    for i in 0..2 {
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        tokio::io::AsyncWriteExt::write_all(
            &mut c,
            format!("GET /slow/{i} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        slow.wait_started(&format!("/slow/{i}"), Duration::from_secs(5))
            .await;
        cut.push(c);
    }
    let mut kept = HttpConn::connect(addr).await;
    let kept_req = tokio::spawn(async move { kept.get("/other").await });
    other.wait_started("/other", Duration::from_secs(5)).await;

    assert_eq!(
        cli(&sock, "shutdown sessions server slow_be/m1").await,
        "\n"
    );
    for mut c in cut {
        let mut b = [0u8; 64];
        let r = within(
            Duration::from_secs(5),
            "the cut connection to close",
            tokio::io::AsyncReadExt::read(&mut c, &mut b),
        )
        .await;
        assert!(matches!(r, Ok(0) | Err(_)), "still open: {r:?}");
    }
    // The other server's stream is untouched and completes.
    other.release(1);
    let r = within(Duration::from_secs(5), "/other", kept_req)
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(
        cli(&sock, "shutdown sessions server slow_be/nope").await,
        "No such server.\n\n"
    );
    slow.release(2);
}
