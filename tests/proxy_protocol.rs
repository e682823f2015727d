//! The PROXY protocol: `bind ... accept-proxy` (v1 and v2) makes the
//! header's client the one ACLs, `option forwardfor` and the logs see; a
//! malformed or missing header closes the connection (logged as HAProxy
//! 2.6 logs it, counted in `conn_tot` but not as a session); `server ...
//! send-proxy | send-proxy-v2` writes the bytes HAProxy 2.6.12 writes
//! (captured with the same input header).

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use support::raw::RawBackend;
use support::syslog::*;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SIG: &[u8] = b"\r\n\r\n\x00\r\nQUIT\n";

fn v2_tcp4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    let mut h = SIG.to_vec();
    h.extend_from_slice(&[0x21, 0x11, 0x00, 0x0c]);
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    h.extend_from_slice(&sport.to_be_bytes());
    h.extend_from_slice(&dport.to_be_bytes());
    h
}

/// Sends `bytes`, then reads what comes back until the connection closes
/// (at most 5 s).
async fn exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), c.read_to_end(&mut out))
        .await
        .expect("connection closed");
    out
}

fn header<'a>(req: &'a str, name: &str) -> Option<&'a str> {
    req.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_proxy_v1_v2_src_acl_forwardfor_and_logs() {
    let be = RawBackend::start().await;
    let log = Syslog::new();
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
    log {log} local0
defaults
    mode http
    log global
    option httplog
    option forwardfor
    timeout connect 2s
    timeout client 2s
    timeout server 2s
frontend fe
    bind {fe} accept-proxy
    acl blocked src 10.9.9.0/24
    http-request deny if blocked
    default_backend be
backend be
    server s1 {be}
",
        log = log.addr(),
        be = be.addr
    ));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    // v1: the header's client is the one forwarded and logged.
    let got = exchange(
        addr,
        b"PROXY TCP4 10.1.2.3 192.0.2.7 40000 80\r\nGET /v1 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert!(
        got.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    let reqs = be.take_requests();
    let req = String::from_utf8_lossy(&reqs[0]).into_owned();
    assert!(req.starts_with("GET /v1 "), "{req}");
    assert_eq!(header(&req, "x-forwarded-for"), Some("10.1.2.3"));
    log.until(&["{}: 10.1.2.3:40000 [{}] fe be/s1 {} 200 {} \"GET /v1 HTTP/1.1\"\n"]);

    // v2 from a blocked network: the `src` ACL sees the header's address.
    let mut req = v2_tcp4([10, 9, 9, 9], [192, 0, 2, 7], 40001, 80);
    req.extend_from_slice(b"GET /v2 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    let got = exchange(addr, &req).await;
    assert!(
        got.starts_with(b"HTTP/1.1 403"),
        "{}",
        String::from_utf8_lossy(&got)
    );

    // v2 from an allowed address, TCP6, with TLVs (skipped).
    let mut req = SIG.to_vec();
    req.extend_from_slice(&[0x21, 0x21, 0x00, 36 + 5]);
    req.extend_from_slice(
        &"2001:db8::5"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
    );
    req.extend_from_slice(&[0; 16]);
    req.extend_from_slice(&[0x9c, 0x42, 0x01, 0xbb]);
    req.extend_from_slice(&[0x01, 0x00, 0x02, b'h', b'2']);
    req.extend_from_slice(b"GET /v6 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    let got = exchange(addr, &req).await;
    assert!(
        got.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    let req = String::from_utf8_lossy(&be.take_requests()[0]).into_owned();
    assert_eq!(header(&req, "x-forwarded-for"), Some("2001:db8::5"));

    // LOCAL (a health check of the proxy in front): the real peer stands.
    let mut req = SIG.to_vec();
    req.extend_from_slice(&[0x20, 0x00, 0x00, 0x00]);
    req.extend_from_slice(b"GET /local HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    let got = exchange(addr, &req).await;
    assert!(
        got.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    let req = String::from_utf8_lossy(&be.take_requests()[0]).into_owned();
    assert_eq!(header(&req, "x-forwarded-for"), Some("127.0.0.1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_headers_close_the_connection_and_are_logged() {
    let be = RawBackend::start().await;
    let log = Syslog::new();
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
    log {log} local0
defaults
    mode http
    log global
    option httplog
    timeout connect 2s
    timeout client 300ms
    timeout server 2s
frontend fe
    bind {fe} accept-proxy
    default_backend be
backend be
    server s1 {be}
",
        log = log.addr(),
        be = be.addr
    ));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let sock = s.stats_socket();
    // The harness's readiness probe sent nothing: wait for its log line so
    // the counts below start from a known state.
    log.until(&["{}fe/1: Connection closed while waiting for PROXY protocol header\n"]);
    let base = show_stat(&sock).await;
    let (conns0, stot0) = (
        base.num("fe", "FRONTEND", "conn_tot"),
        base.num("fe", "FRONTEND", "stot"),
    );
    // Not a header at all: closed at once, no answer, nothing forwarded.
    let got = exchange(addr, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert!(got.is_empty(), "{}", String::from_utf8_lossy(&got));
    // Broken v1 (lone LF), bad v2 command, an overrunning TLV.
    assert!(
        exchange(
            addr,
            b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\nGET / HTTP/1.0\r\n\r\n"
        )
        .await
        .is_empty()
    );
    let mut bad = v2_tcp4([1, 2, 3, 4], [5, 6, 7, 8], 1, 2);
    bad[12] = 0x2f;
    assert!(exchange(addr, &bad).await.is_empty());
    // Incomplete, then silence: closed at `timeout client`.
    let started = std::time::Instant::now();
    assert!(exchange(addr, b"PROXY TCP4 1.2.3.4").await.is_empty());
    assert!(started.elapsed() >= Duration::from_millis(250));
    let lines = log.until(&[
        "<134>{}: 127.0.0.1:{} [{}] fe/1: Received something which does not look like a PROXY protocol header\n",
        "<134>{}: 127.0.0.1:{} [{}] fe/1: Received an invalid PROXY protocol header\n",
        "<134>{}: 127.0.0.1:{} [{}] fe/1: Timeout while waiting for PROXY protocol header\n",
    ]);
    assert!(
        !lines.iter().any(|l| l.contains(" fe be/s1 ")),
        "{lines:#?}"
    );
    assert!(be.take().is_empty());
    // Counted as connections, never as sessions (HAProxy's stot).
    let st = show_stat(&sock).await;
    assert_eq!(st.num("fe", "FRONTEND", "conn_tot"), conns0 + 4);
    assert_eq!(st.num("fe", "FRONTEND", "stot"), stot0);
    // The next client is served.
    let got = exchange(
        addr,
        b"PROXY TCP4 10.1.2.3 192.0.2.7 40000 80\r\nGET /ok HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert!(
        got.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    assert_eq!(
        show_stat(&sock).await.num("fe", "FRONTEND", "stot"),
        stot0 + 1
    );
}

/// A TCP server that records what each connection sent until it closed.
async fn recorder() -> (SocketAddr, tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut all = Vec::new();
                let _ = s.read_to_end(&mut all).await;
                let _ = tx.send(all);
            });
        }
    });
    (addr, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_proxy_writes_haproxy_bytes() {
    let (tcp_srv, mut conns) = recorder().await;
    let http_srv = RawBackend::start().await;
    let (fe_tcp_port, fe_http_port, fe_plain_port) = (Listen::new(), Listen::new(), Listen::new());
    let (tcp_port, http_port, plain_port) = (
        fe_tcp_port.port(),
        fe_http_port.port(),
        fe_plain_port.port(),
    );
    let _s = Sluice::start(&format!(
        "defaults
    timeout connect 2s
    timeout client 2s
    timeout server 2s
listen tcpv1
    mode tcp
    bind {fe_tcp_port} accept-proxy
    server s1 {tcp_srv} send-proxy
listen httpv2
    mode http
    bind {fe_http_port} accept-proxy
    server s1 {} send-proxy-v2
listen plain
    mode tcp
    bind {fe_plain_port}
    server s1 {tcp_srv} send-proxy
",
        http_srv.addr
    ));
    // The readiness probes of the two TCP listeners reach the recorder.
    // v2 in, v1 out (HAProxy 2.6.12: the same line for the same input).
    let mut input = v2_tcp4([10, 0, 0, 1], [10, 0, 0, 2], 1234, 5678);
    input.extend_from_slice(b"hello bye");
    let mut c = TcpStream::connect(("127.0.0.1", tcp_port)).await.unwrap();
    c.write_all(&input).await.unwrap();
    c.shutdown().await.unwrap();
    let mut sink = Vec::new();
    let _ = c.read_to_end(&mut sink).await;
    let want = b"PROXY TCP4 10.0.0.1 10.0.0.2 1234 5678\r\nhello bye".to_vec();
    within(Duration::from_secs(5), "v1 line at the server", async {
        while let Some(got) = conns.recv().await {
            if got == want {
                return;
            }
        }
    })
    .await;
    // Without accept-proxy: the real addresses.
    let mut c = TcpStream::connect(("127.0.0.1", plain_port)).await.unwrap();
    let local = c.local_addr().unwrap();
    c.write_all(b"x").await.unwrap();
    c.shutdown().await.unwrap();
    let _ = c.read_to_end(&mut sink).await;
    let want = format!(
        "PROXY TCP4 127.0.0.1 127.0.0.1 {} {plain_port}\r\nx",
        local.port()
    );
    within(
        Duration::from_secs(5),
        "v1 line of the real client",
        async {
            while let Some(got) = conns.recv().await {
                if got == want.as_bytes() {
                    return;
                }
            }
        },
    )
    .await;

    // v1 in, v2 out: HAProxy 2.6.12's bytes for this very input.
    let haproxy_v2: &[u8] =
        b"\r\n\r\n\x00\r\nQUIT\n!\x11\x00\x0c\x01\x02\x03\x04\x05\x06\x07\x08\x04W\x08\xae";
    let mut conn = HttpConn::connect(SocketAddr::from(([127, 0, 0, 1], http_port))).await;
    let r = conn
        .raw(
            b"PROXY TCP4 1.2.3.4 5.6.7.8 1111 2222\r\nGET /a HTTP/1.1\r\nhost: x\r\n\r\n",
            false,
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    let r = conn.get("/b").await;
    assert_eq!(r.status, 200);
    drop(conn);
    // Each server connection starts with the header; a connection that
    // told one client's address is never handed to another request.
    let conns_seen = http_srv.take_conns();
    assert!(!conns_seen.is_empty());
    let mut paths = Vec::new();
    for bytes in &conns_seen {
        assert!(bytes.starts_with(haproxy_v2), "{bytes:?}");
        let rest = String::from_utf8_lossy(&bytes[haproxy_v2.len()..]).into_owned();
        paths.extend(
            rest.lines()
                .filter(|l| l.starts_with("GET "))
                .map(str::to_string),
        );
    }
    assert_eq!(
        paths,
        ["GET /a HTTP/1.1", "GET /b HTTP/1.1"],
        "{conns_seen:?}"
    );
}

/// Health checks of a `send-proxy` server start with the header too, as
/// HAProxy 2.6.12 sends them: v1 with the check connection's addresses,
/// v2 as a LOCAL command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_of_send_proxy_servers_send_the_header() {
    let v1 = RawBackend::start().await;
    let v2 = RawBackend::start().await;
    let forced = RawBackend::start().await;
    let fe = Listen::new();
    let _s = Sluice::start(&format!(
        "defaults
    mode http
    timeout connect 2s
    timeout client 2s
    timeout server 2s
frontend fe
    bind {fe}
    default_backend b1
backend b1
    option httpchk GET /chk
    server s1 {} check inter 200ms send-proxy
backend b2
    option httpchk GET /chk
    server s1 {} check inter 200ms send-proxy-v2
backend b3
    option httpchk GET /chk
    server s1 127.0.0.1:1 check inter 200ms check-send-proxy port {}
",
        v1.addr,
        v2.addr,
        forced.addr.port()
    ));
    let first = |b: &RawBackend| {
        let b = b.take_conns();
        b.into_iter().next()
    };
    let (mut c1, mut c2, mut c3) = (None, None, None);
    within(Duration::from_secs(5), "a check on each server", async {
        while c1.is_none() || c2.is_none() || c3.is_none() {
            c1 = c1.take().or_else(|| first(&v1));
            c2 = c2.take().or_else(|| first(&v2));
            c3 = c3.take().or_else(|| first(&forced));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let c1 = String::from_utf8_lossy(&c1.unwrap()).into_owned();
    let (line, rest) = c1.split_once("\r\n").unwrap();
    let want = format!("PROXY TCP4 127.0.0.1 127.0.0.1 {{}} {}", v1.addr.port());
    let parts: Vec<&str> = line.split(' ').collect();
    assert_eq!(parts.len(), 6, "{line}");
    assert_eq!(
        format!(
            "{} {} {} {} {{}} {}",
            parts[0], parts[1], parts[2], parts[3], parts[5]
        ),
        want
    );
    assert!(rest.starts_with("GET /chk HTTP/1.0\r\n"), "{rest}");
    let c2 = c2.unwrap();
    let local: &[u8] = b"\r\n\r\n\x00\r\nQUIT\n \x00\x00\x00GET /chk HTTP/1.0\r\n";
    assert!(c2.starts_with(local), "{c2:?}");
    // `check-send-proxy`: the v1 header, though the server has no
    // `send-proxy` and its check goes elsewhere (`port`).
    let c3 = String::from_utf8_lossy(&c3.unwrap()).into_owned();
    let want = format!("PROXY TCP4 127.0.0.1 127.0.0.1 {{}} {}", forced.addr.port());
    let (line, rest) = c3.split_once("\r\n").unwrap();
    let parts: Vec<&str> = line.split(' ').collect();
    assert_eq!(parts.len(), 6, "{line}");
    assert_eq!(
        format!(
            "{} {} {} {} {{}} {}",
            parts[0], parts[1], parts[2], parts[3], parts[5]
        ),
        want
    );
    assert!(rest.starts_with("GET /chk HTTP/1.0\r\n"), "{rest}");
}
