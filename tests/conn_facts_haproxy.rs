//! The client connection's facts against the real HAProxy 2.6: the
//! socket's own addresses a PROXY header hides (`fc_src`, `fc_dst`...),
//! the header's TLVs (`fc_pp_authority`, `fc_pp_unique_id`,
//! `fc_rcvd_proxy`), the listener (`so_id` as haproxy numbers listeners,
//! `so_name`, `dst_conn`), `fc_http_major` and `thread`, in `http-request`
//! rules, `http-response` rules and log lines, in `mode http` and `mode
//! tcp`; and the `bind ... id|name` errors of `-c`.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use support::haproxy::{self, Pair};

/// The facts each answer (and log line) shows, `|`-separated.
const FACTS: &[&str] = &[
    "src",
    "dst",
    "fc_src",
    "fc_src_port,bool",
    "fc_src_is_local",
    "fc_dst",
    "fc_dst_port",
    "fc_dst_is_local",
    "fc_http_major",
    "fc_rcvd_proxy",
    "fc_pp_authority",
    "fc_pp_unique_id",
    "so_id",
    "so_name",
    "dst_conn",
    "thread",
];

fn line() -> String {
    FACTS
        .iter()
        .map(|f| format!("{f}=%[{f}]"))
        .collect::<Vec<_>>()
        .join("|")
}

/// Five listeners of one frontend: ids given and left to haproxy's
/// numbering (which skips the given ones and counts every listener),
/// names, and a PROXY protocol one.
fn config() -> String {
    let line = line();
    format!(
        "global
    nbthread 1
    log {{log}} format raw local0 info
defaults
    log global
    # The readiness probes' empty connections are not logged.
    option dontlognull
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    mode http
    bind {{fe0}}
    bind {{fe1}} id 1 name one
    bind {{fe2}} name three
    bind {{fe3}} id 3
    bind {{fe4}} accept-proxy name pp
    log-format \"{line}\"
    http-request return status 200 content-type text/plain lf-string \"{line}\" if {{ path /local }}
    default_backend be
backend be
    mode http
    http-response set-header x-facts \"{line}\"
    server s1 {{srv}}
"
    )
}

/// A `mode tcp` frontend logging the same facts, and the client's port
/// (`cp=`) by which the test finds its line (haproxy may log its readiness
/// probe's connection too, whether or not `dontlognull`: a race with the
/// connection to the server).
fn tcp_config() -> String {
    let line = line();
    format!(
        "global
    nbthread 1
    log {{log}} format raw local0 info
defaults
    log global
    option dontlognull
    timeout connect 5s
    timeout client 5s
    timeout server 5s
listen tcpfe
    mode tcp
    bind {{fe0}} id 9
    log-format \"{line}|cp=%[src_port]\"
    server s1 {{srv}}
"
    )
}

/// `fc_dst_port` is the port each proxy listens on, its own: checked to
/// be that port, then masked (the only difference that must be).
fn mask_port(text: &str, port: u16) -> Result<String, String> {
    let want = format!("fc_dst_port={port}|");
    if !text.contains(&want) {
        return Err(format!("not {want:?} in {text:?}"));
    }
    Ok(text.replace(&want, "fc_dst_port=PORT|"))
}

/// A version 2 PROXY header from 192.0.2.7:40001 to 198.51.100.9:8443
/// with `tlvs` (type, value), or a LOCAL one.
fn pp2(tlvs: &[(u8, &[u8])], local: bool) -> Vec<u8> {
    let mut body = Vec::new();
    if !local {
        body.extend_from_slice(&[192, 0, 2, 7, 198, 51, 100, 9]);
        body.extend_from_slice(&40001u16.to_be_bytes());
        body.extend_from_slice(&8443u16.to_be_bytes());
    }
    for (kind, v) in tlvs {
        body.push(*kind);
        body.extend_from_slice(&(v.len() as u16).to_be_bytes());
        body.extend_from_slice(v);
    }
    let mut out = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    out.extend_from_slice(if local { &[0x20, 0x00] } else { &[0x21, 0x11] });
    out.extend_from_slice(&(body.len() as u16).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// The body of the answer in `raw` (a whole HTTP/1 exchange's bytes).
fn body_of(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    text.split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_string())
}

/// What each request shows, on the frontend's listeners: the local answer
/// (`/local`), the server's answer with the `http-response` header, and
/// the log line, from haproxy then sluice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_facts_give_haproxys_bytes() {
    if !haproxy::available() {
        return;
    }
    let pair = Pair::start("connfacts", &config(), 5).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let mut d = haproxy::Differences::default();
    let get = |path: &str| format!("GET {path} HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n");
    let plain = [
        (0, get("/local")),
        (1, get("/local")),
        (2, get("/local")),
        (3, get("/local")),
        (0, get("/srv")),
        (2, get("/srv")),
    ];
    let authority: &[u8] = b"example.org";
    let proxied: Vec<(usize, Vec<u8>, &str)> = vec![
        (
            4,
            pp2(&[(2, b"first"), (5, b"uid-123"), (2, authority)], false),
            "v2 with an authority (twice) and a unique id",
        ),
        (4, pp2(&[], false), "v2 without TLV"),
        (4, pp2(&[(2, b"x")], true), "v2 LOCAL (its TLV ignored)"),
        (
            4,
            pp2(&[(2, &[b'a'; 255])], false),
            "v2, a 255-byte authority",
        ),
        (
            4,
            pp2(&[(5, &[b'u'; 128])], false),
            "v2, a 128-byte unique id",
        ),
        (
            4,
            b"PROXY TCP4 192.0.2.8 198.51.100.10 40002 8080\r\n".to_vec(),
            "v1",
        ),
    ];
    let mut cases: Vec<(usize, Vec<u8>, String)> = plain
        .iter()
        .map(|(n, r)| {
            (
                *n,
                r.clone().into_bytes(),
                format!("fe{n} {}", r.lines().next().unwrap_or("")),
            )
        })
        .collect();
    for (n, h, label) in proxied {
        for path in ["/local", "/srv"] {
            let mut req = h.clone();
            req.extend_from_slice(get(path).as_bytes());
            cases.push((n, req, format!("{label} {path}")));
        }
    }
    for (n, req, label) in &cases {
        let mut seen = Vec::new();
        for side in 0..2 {
            let front = &pair.fronts[side][*n];
            let raw = haproxy::exchange(front.addr(), req, false).await;
            let text = String::from_utf8_lossy(&raw).into_owned();
            let shown = if label.contains("/srv") {
                text.lines()
                    .find_map(|l| l.strip_prefix("x-facts: "))
                    .unwrap_or("")
                    .to_string()
            } else {
                body_of(&raw)
            };
            let log = pair.logs[side].take(1).remove(0);
            let port = front.port();
            let masked = (mask_port(&shown, port), mask_port(&log, port));
            seen.push(masked);
            pair.servers[side].take();
        }
        d.compare(label, &seen[0], &seen[1]);
        // Not a vacuous comparison: haproxy's answer has the facts.
        assert!(
            matches!(&seen[0].0, Ok(t) if t.contains("fc_src=127.0.0.1")),
            "{label}: {:?}",
            seen[0]
        );
    }
    d.assert_none();
}

/// `mode tcp`: the facts in the log line at the end of the session
/// (`fc_http_major` has none: no HTTP on the connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_sessions_log_the_facts_as_haproxy() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if !haproxy::available() {
        return;
    }
    let pair = Pair::start("connfacts-tcp", &tcp_config(), 1).await;
    pair.answer(b"pong");
    let mut lines = Vec::new();
    for side in 0..2 {
        let front = &pair.fronts[side][0];
        let mut c = tokio::net::TcpStream::connect(front.addr())
            .await
            .expect("connect");
        let port = c.local_addr().expect("local address").port();
        c.write_all(b"ping").await.expect("send");
        c.shutdown().await.expect("shutdown");
        let mut got = Vec::new();
        let _ = c.read_to_end(&mut got).await;
        let want = format!("|cp={port}\n");
        let line = loop {
            let l = pair.logs[side].take(1).remove(0);
            if l.ends_with(&want) {
                break l;
            }
        };
        // The client's port differs by nature: masked, as the listener's.
        let line = line.replace(&want, "|cp=CLIENT\n");
        lines.push(mask_port(&line, front.port()));
    }
    assert!(
        matches!(&lines[0], Ok(l) if l.contains("so_id=9|")),
        "{:?}",
        lines[0]
    );
    assert_eq!(lines[1], lines[0], "sluice's line, then haproxy's");
}

/// What HAProxy refuses in a PROXY header's TLVs: an authority over 255
/// bytes, a unique id over 128, a CRC32C that is not the header's. The
/// connection is closed with nothing sent, by both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_tlvs_refused_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let pair = Pair::start("connfacts-tlv", &config(), 5).await;
    let mut d = haproxy::Differences::default();
    let get = b"GET /local HTTP/1.1\r\nhost: h\r\n\r\n";
    // A CRC32C TLV holding the header's checksum (made as the header
    // says: over the whole header, the checksum's bytes taken as zero).
    let mut good_crc = pp2(&[(3, &[0; 4])], false);
    let crc = crc32c(&good_crc);
    let at = good_crc.len() - 4;
    good_crc[at..].copy_from_slice(&crc.to_be_bytes());
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (pp2(&[(2, &[b'a'; 256])], false), "a 256-byte authority"),
        (pp2(&[(5, &[b'u'; 129])], false), "a 129-byte unique id"),
        (pp2(&[(3, &[1, 2, 3, 4])], false), "a wrong CRC32C"),
        (good_crc, "the right CRC32C"),
    ];
    for (h, label) in cases {
        let mut req = h.clone();
        req.extend_from_slice(get);
        let mut got = Vec::new();
        for side in 0..2 {
            let raw = haproxy::exchange(pair.fronts[side][4].addr(), &req, false).await;
            let text = String::from_utf8_lossy(&raw).into_owned();
            got.push(text.lines().next().unwrap_or("").to_string());
        }
        d.compare(label, &got[0], &got[1]);
        // Not a comparison of two silences: haproxy takes a good header.
        assert_eq!(
            got[0].starts_with("HTTP/1.1 200"),
            label == "the right CRC32C",
            "{label}: haproxy {:?}",
            got[0]
        );
    }
    d.assert_none();
}

/// CRC-32C (Castagnoli), bit by bit.
fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Over HTTP/2 (curl, prior knowledge), `fc_http_major` is 2 in the rules
/// and the log line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_connections_say_so_as_haproxy() {
    if !haproxy::available() || !have_curl() {
        return;
    }
    let pair = Pair::start("connfacts-h2", &config(), 5).await;
    let mut seen = Vec::new();
    for side in 0..2 {
        let front = &pair.fronts[side][1];
        let url = format!("http://{}/local", front.addr());
        let out = std::process::Command::new("curl")
            .args(["-s", "-m", "10", "--http2-prior-knowledge", &url])
            .output()
            .expect("run curl");
        let body = String::from_utf8_lossy(&out.stdout).into_owned();
        let log = pair.logs[side].take(1).remove(0);
        seen.push((
            mask_port(&body, front.port()),
            mask_port(&log, front.port()),
        ));
    }
    assert!(
        matches!(&seen[0].0, Ok(b) if b.contains("fc_http_major=2")),
        "{:?}",
        seen[0]
    );
    assert_eq!(seen[1], seen[0], "sluice's, then haproxy's");
}

/// Whether curl runs here; under CI it must.
fn have_curl() -> bool {
    let ok = std::process::Command::new("curl")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok || std::env::var_os("CI").is_none(),
        "curl is required under CI (.ci/run installs it)"
    );
    ok
}

/// `bind ... id|name` errors, as `haproxy -c` words them.
#[test]
fn bind_ids_checked_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let cfg = |binds: &str| {
        format!(
            "defaults\n    mode http\n    timeout connect 5s\n    timeout client 5s\n    timeout server 5s\nfrontend fe\n{binds}    http-request return status 200\n"
        )
    };
    let cases = [
        "    bind 127.0.0.1:1 id 7\n    bind 127.0.0.1:2 id 7\n",
        "    bind 127.0.0.1:1 id 0\n",
        "    bind 127.0.0.1:1 id -3\n",
        "    bind 127.0.0.1:1 id x\n",
        "    bind 127.0.0.1:1 id\n",
        "    bind 127.0.0.1:1,127.0.0.1:2 id 4\n",
        "    bind 127.0.0.1:1 name\n",
        "    bind 127.0.0.1:1 id 2 name two\n    bind 127.0.0.1:2 name n2\n",
    ]
    .map(|b| (b.trim().to_string(), cfg(b)));
    // Each reads its own copy of the file, whose path the duplicate id's
    // message names: the path is masked.
    let alert = |stderr: &str| {
        let a = haproxy::first_alert(stderr);
        match (a.find(" used at "), a.rfind(".cfg:")) {
            (Some(s), Some(e)) if s < e => format!("{}CFG{}", &a[..s + 9], &a[e + 4..]),
            _ => a,
        }
    };
    haproxy::assert_check_agrees("bind-ids", cases, alert);
}
