//! `tcp-request connection` / `content` rules, `tcp-request inspect-delay`
//! with `req.ssl_sni` / `req.ssl_hello_type` routing (TLS passthrough by
//! SNI, with real ClientHellos captured from OpenSSL 3.0 in `tests/data/`),
//! the `dcon` / `dreq` counters, and `option tcplog` lines as HAProxy
//! 2.6.12 writes them.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use support::syslog::*;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// A server that reads `want` bytes (or until the client closes), checks
/// nothing, and answers `<name>:<bytes received>` before closing.
async fn named_server(name: &'static str, want: usize) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                while got.len() < want {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s
                    .write_all(format!("{name}:{}", got.len()).as_bytes())
                    .await;
            });
        }
    });
    addr
}

/// Connects from `src` (any 127.0.0.0/8 address works on Linux).
async fn connect_from(src: [u8; 4], to: SocketAddr) -> std::io::Result<TcpStream> {
    let sock = TcpSocket::new_v4().unwrap();
    sock.bind(SocketAddr::from((src, 0))).unwrap();
    sock.connect(to).await
}

/// A connection from `src` that sends `req`: what came back, or None
/// when it was reset (as HAProxy resets refused connections) before
/// anything could be read.
async fn refused_or_answer(src: [u8; 4], to: SocketAddr, req: &[u8]) -> Option<Vec<u8>> {
    let c = connect_from(src, to).await.ok()?;
    let got = talk(c, &[req]).await;
    (!got.is_empty()).then_some(got)
}

/// Sends `parts` (pausing between them), then reads until the end.
async fn talk(mut c: TcpStream, parts: &[&[u8]]) -> Vec<u8> {
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            // Let the first part travel alone: the rules must wait.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if c.write_all(p).await.is_err() {
            break;
        }
    }
    let mut out = Vec::new();
    let _ = within(Duration::from_secs(10), "answer", c.read_to_end(&mut out)).await;
    out
}

fn hello(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/data/clienthello-{name}.bin",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(path).unwrap()
}

/// The same real ClientHello naming another server (same length).
fn hello_renamed(from: &str, to: &str) -> Vec<u8> {
    let mut h = hello(from);
    let at = h
        .windows(from.len())
        .position(|w| w == from.as_bytes())
        .unwrap();
    h[at..at + to.len()].copy_from_slice(to.as_bytes());
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_rules_reject_by_src_in_tcp_and_http() {
    let srv = named_server("s", 1).await;
    let http = Backend::start("h").await;
    let (fe_tport, fe_hport) = (Listen::new(), Listen::new());
    let (tport, hport) = (fe_tport.port(), fe_hport.port());
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    timeout connect 2s
    timeout client 2s
    timeout server 2s
listen tcpfe
    mode tcp
    bind {fe_tport}
    tcp-request connection reject if {{ src 127.0.0.2 }}
    server s1 {srv}
frontend httpfe
    mode http
    bind {fe_hport}
    acl bad src 127.0.0.2
    tcp-request connection reject if bad
    default_backend h
backend h
    mode http
    server h1 {}
",
        http.hostport()
    ));
    let sock = s.stats_socket();
    let taddr = SocketAddr::from(([127, 0, 0, 1], tport));
    let haddr = SocketAddr::from(([127, 0, 0, 1], hport));
    // Refused before any byte is read: nothing reaches the server.
    assert_eq!(refused_or_answer([127, 0, 0, 2], taddr, b"x").await, None);
    assert_eq!(
        refused_or_answer([127, 0, 0, 1], taddr, b"x")
            .await
            .as_deref(),
        Some(&b"s:1"[..])
    );
    let req = b"GET / HTTP/1.0\r\n\r\n";
    assert_eq!(refused_or_answer([127, 0, 0, 2], haddr, req).await, None);
    assert_eq!(http.hits(), 0);
    assert_eq!(get(haddr, "/").await.status, 200);
    let st = show_stat(&sock).await;
    assert_eq!(st.num("tcpfe", "FRONTEND", "dcon"), 1);
    assert_eq!(st.num("httpfe", "FRONTEND", "dcon"), 1);
    // A refused connection is a connection, not a session (counted this
    // way, the harness's readiness probe, a session of its own whenever it
    // is accounted, cancels out).
    assert_eq!(
        st.num("tcpfe", "FRONTEND", "conn_tot") - st.num("tcpfe", "FRONTEND", "stot"),
        1
    );
}

/// Lines real HAProxy 2.6.12 sent for the scenario below (`option tcplog`).
const HAPROXY: &[&str] = &[
    "<134>Nov 30 09:19:27 haproxy[12833]: 127.0.0.1:54215 [30/Nov/2026:09:19:27.381] fe be2/s1 1/0/0 13 -- 1/1/0/0/0 0/0\n",
    "<134>Nov 30 09:19:27 haproxy[5512]: 127.0.0.1:60503 [30/Nov/2026:09:19:27.665] fe fe/<NOSRV> -1/-1/0 0 PR 1/1/0/0/0 0/0\n",
];

const ROUTED: &str = "<134>{} {}:{}:{} {}[{}]: 127.0.0.1:{} [{}/{}/{}:{}:{}:{}.{}] fe {}/s1 {}/{}/{} {} -- {}/{}/{}/{}/0 0/0\n";
const REJECTED: &str = "<134>{} {}:{}:{} {}[{}]: 127.0.0.1:{} [{}/{}/{}:{}:{}:{}.{}] fe fe/<NOSRV> -1/-1/{} 0 PR {}/{}/{}/{}/0 0/0\n";

#[test]
fn tcplog_masks_match_haproxy_lines() {
    assert_line(ROUTED, HAPROXY[0]);
    assert_line(REJECTED, HAPROXY[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sni_routing_content_rules_and_tcplog() {
    let len = hello("a.example").len();
    let aa = named_server("aa", len).await;
    let bb = named_server("bb", len).await;
    let log = Syslog::new();
    let fe = Listen::new();
    let port = fe.port();
    let s = Sluice::start(&format!(
        "global
    stats socket @DIR@/stats.sock level admin
    log {log} local0
defaults
    mode tcp
    log global
    option tcplog
    option dontlognull
    timeout connect 2s
    timeout client 2s
    timeout server 2s
frontend fe
    bind {fe}
    tcp-request inspect-delay 3s
    tcp-request content reject if {{ req.ssl_sni -i z.example }}
    tcp-request content accept if {{ req_ssl_hello_type 1 }}
    use_backend bb if {{ req_ssl_sni -i b.example }}
    default_backend aa
backend aa
    server s1 {aa}
backend bb
    server s1 {bb}
",
        log = log.addr()
    ));
    let sock = s.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    // The hello arrives in two parts: the rules wait for all of it, and
    // every byte reaches the chosen server.
    let h = hello("b.example");
    let got = talk(
        TcpStream::connect(addr).await.unwrap(),
        &[&h[..40], &h[40..]],
    )
    .await;
    assert_eq!(String::from_utf8_lossy(&got), format!("bb:{len}"));
    let h = hello("a.example");
    let got = talk(TcpStream::connect(addr).await.unwrap(), &[&h[..7], &h[7..]]).await;
    assert_eq!(String::from_utf8_lossy(&got), format!("aa:{len}"));
    let lines = log.until(&[
        &ROUTED
            .replace("{}/s1", "bb/s1")
            .replace(" {} --", &format!(" {} --", 2 + len.to_string().len() + 1)),
        &ROUTED.replace("{}/s1", "aa/s1"),
    ]);
    assert!(lines.iter().all(|l| !l.contains(" PR ")), "{lines:#?}");
    // Rejected by SNI: closed unanswered, counted in dreq, logged PR.
    let z = hello_renamed("a.example", "z.example");
    let got = talk(TcpStream::connect(addr).await.unwrap(), &[&z]).await;
    assert!(got.is_empty(), "{got:?}");
    log.until(&[REJECTED]);
    let st = show_stat(&sock).await;
    assert_eq!(st.num("fe", "FRONTEND", "dreq"), 1);
    assert_eq!(st.num("bb", "BACKEND", "stot"), 1);
    // Not TLS at all: no rule applies, the default backend gets it at once
    // (no wait for the inspect delay).
    let started = std::time::Instant::now();
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(b"plain").await.unwrap();
    c.shutdown().await.unwrap();
    let mut out = Vec::new();
    c.read_to_end(&mut out).await.unwrap();
    assert_eq!(out, b"aa:5");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcplog_termination_states() {
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    // A server that accepts and never answers.
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    let (_hold, dead) = hold_port();
    let log = Syslog::new();
    let (_hold, [p1, p2]) = hold_ports::<2>();
    let _s = Sluice::start(&format!(
        "global
    log {log} local0
defaults
    mode tcp
    log global
    option tcplog
    option dontlognull
    timeout connect 500ms
    timeout client 300ms
    timeout server 2s
listen quiet
    bind 127.0.0.1:{p1}
    server s1 {silent_addr}
listen refused
    bind 127.0.0.1:{p2}
    retries 0
    # The refusal may come before the client's byte is read: without this
    # the session would count as silent and not be logged, as in HAProxy.
    no option dontlognull
    server s1 127.0.0.1:{dead}
",
        log = log.addr()
    ));
    // The client sends a byte then stays silent: client timeout in data.
    let got = talk(
        TcpStream::connect(("127.0.0.1", p1)).await.unwrap(),
        &[b"x"],
    )
    .await;
    assert!(got.is_empty());
    // The server refuses: SC, no connect time.
    let got = talk(
        TcpStream::connect(("127.0.0.1", p2)).await.unwrap(),
        &[b"x"],
    )
    .await;
    assert!(got.is_empty());
    log.until(&[
        "<134>{}: 127.0.0.1:{} [{}] quiet quiet/s1 {}/{}/{} 0 cD {}/{}/{}/{}/0 0/0\n",
        "<134>{}: 127.0.0.1:{} [{}] refused refused/s1 {}/-1/{} 0 SC {}/{}/{}/{}/0 0/0\n",
    ]);
}

/// A ClientHello as rustls writes it: offering `alpn`, and only TLS 1.2
/// when `tls12`.
fn rustls_hello(alpn: &[&[u8]], tls12: bool) -> Vec<u8> {
    let versions: &[&'static rustls::SupportedProtocolVersion] = if tls12 {
        &[&rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13, &rustls::version::TLS12]
    };
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    let name = rustls::pki_types::ServerName::try_from("x.example").unwrap();
    let mut c = rustls::ClientConnection::new(std::sync::Arc::new(cfg), name).unwrap();
    let mut out = Vec::new();
    c.write_tls(&mut out).unwrap();
    out
}

/// `req.ssl_alpn` and `req.ssl_ver` route the same ClientHellos to the
/// same backends under haproxy 2.6 and sluice (the server names compared;
/// the byte counts after them may differ with how each forwards).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_hello_alpn_and_version_route_as_haproxy() {
    if !support::haproxy::available() {
        return;
    }
    let h2 = named_server("h2", 1).await;
    let h11 = named_server("h11", 1).await;
    let v303 = named_server("v303", 1).await;
    let v301 = named_server("v301", 1).await;
    let other = named_server("other", 1).await;
    let config = |alpn: &str, ver: &str| {
        format!(
            "defaults
    mode tcp
    timeout connect 2s
    timeout client 2s
    timeout server 2s
frontend alpn
    bind {alpn}
    tcp-request inspect-delay 3s
    tcp-request content accept if {{ req.ssl_hello_type 1 }}
    use_backend h2 if {{ req.ssl_alpn -m str h2 }}
    use_backend h11 if {{ req.ssl_alpn -m str http/1.1 }}
    default_backend other
frontend ver
    bind {ver}
    tcp-request inspect-delay 3s
    tcp-request content accept if {{ req.ssl_hello_type 1 }}
    use_backend v303 if {{ req.ssl_ver -m int 196611 }}
    use_backend v301 if {{ req_ssl_ver -m int 196609 }}
    default_backend other
backend h2
    server s {h2}
backend h11
    server s {h11}
backend v303
    server s {v303}
backend v301
    server s {v301}
backend other
    server s {other}
"
        )
    };
    let fronts = listens(4);
    let _hap = support::haproxy::Haproxy::start(
        "hello-hap",
        &config(&fronts[0].to_string(), &fronts[1].to_string()),
        &[&fronts[0], &fronts[1]],
    );
    let _sl = Sluice::start(&config(&fronts[2].to_string(), &fronts[3].to_string()));
    let mut tls10 = hello("a.example");
    // The ClientHello's own version (after the record and handshake
    // headers) says TLS 1.0.
    tls10[9..11].copy_from_slice(&[3, 1]);
    let hellos: [(&str, Vec<u8>); 5] = [
        ("h2 first", rustls_hello(&[b"h2", b"http/1.1"], false)),
        ("http/1.1 only", rustls_hello(&[b"http/1.1"], false)),
        ("no alpn, 1.2 only", rustls_hello(&[], true)),
        ("captured", hello("a.example")),
        ("version 1.0", tls10),
    ];
    let mut differ = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (name, h) in &hellos {
        for (hap, sl) in [(&fronts[0], &fronts[2]), (&fronts[1], &fronts[3])] {
            let mut got = Vec::new();
            for f in [hap, sl] {
                let c = TcpStream::connect(f.addr()).await.unwrap();
                let answer = talk(c, &[&h[..]]).await;
                let text = String::from_utf8_lossy(&answer).to_string();
                got.push(text.split(':').next().unwrap_or("").to_string());
            }
            if got[0] != got[1] {
                differ.push(format!("{name}: haproxy {:?}, sluice {:?}", got[0], got[1]));
            }
            seen.insert(got[0].clone());
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    // The hellos reach every backend: the rules do tell them apart.
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["h11", "h2", "other", "v301", "v303"]
    );
}
