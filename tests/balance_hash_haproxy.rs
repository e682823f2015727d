//! Hash-based balancing against the real HAProxy 2.6: for each algorithm
//! (`source`, `uri` with its options, `url_param`, `hdr`, `hash <expr>`,
//! map-based and consistent, several hash functions), the same config is run by haproxy
//! and by sluice, 1,000 keys are sent to each, and every key must reach the
//! same server. Users moving from HAProxy keep their cache locality. Three
//! cases (a map and a ring) also carry a `disabled` server.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI (`CI` set), where that is a failure.

mod support;

use std::net::{Ipv4Addr, SocketAddr};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

use support::haproxy::{self, Haproxy};
use support::*;

const KEYS: usize = 1000;

/// One algorithm under test: the backend lines and how a key becomes a
/// request.
struct Case {
    name: &'static str,
    lines: &'static str,
    key: fn(usize) -> Req,
    /// A `disabled` server (in MAINT from the start) second in the list:
    /// the map or ring is built without it, and the ids after it shift.
    with_disabled: bool,
}

struct Req {
    src: Option<Ipv4Addr>,
    path: String,
    headers: String,
}

fn path(p: String) -> Req {
    Req {
        src: None,
        path: p,
        headers: String::new(),
    }
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "uri-map",
            lines: "balance uri",
            key: |i| path(format!("/img/{i}/pic.png?v={}", i * 7)),
            with_disabled: true,
        },
        Case {
            name: "uri-consistent",
            lines: "balance uri\n    hash-type consistent",
            key: |i| path(format!("/a/{}/b{i}", i % 37)),
            with_disabled: false,
        },
        Case {
            name: "uri-depth-whole-djb2",
            lines: "balance uri depth 2 whole\n    hash-type map-based djb2",
            key: |i| path(format!("/x{}/y{}/z{i}?q={i}", i % 11, i % 13)),
            with_disabled: false,
        },
        Case {
            name: "uri-len-consistent-crc32",
            lines: "balance uri len 9\n    hash-type consistent crc32",
            key: |i| path(format!("/k{i:05}/rest")),
            with_disabled: false,
        },
        Case {
            name: "url_param-map",
            lines: "balance url_param user",
            key: |i| path(format!("/p?a=1&user=u{i}&z=2")),
            with_disabled: false,
        },
        Case {
            name: "url_param-consistent-wt6-avalanche",
            lines: "balance url_param user\n    hash-type consistent wt6 avalanche",
            key: |i| path(format!("/p?user=u{}", i * 31)),
            with_disabled: false,
        },
        Case {
            name: "hdr-consistent",
            lines: "balance hdr(x-key)\n    hash-type consistent",
            key: |i| Req {
                src: None,
                path: "/".into(),
                headers: format!("x-key: k{i}, other\r\n"),
            },
            with_disabled: false,
        },
        Case {
            name: "hdr-domain-map",
            lines: "balance hdr(x-site) use_domain_only",
            key: |i| Req {
                src: None,
                path: "/".into(),
                headers: format!("x-site: www.site{i}.example\r\n"),
            },
            with_disabled: false,
        },
        Case {
            name: "source-map",
            lines: "balance source",
            key: |i| Req {
                src: Some(Ipv4Addr::new(
                    127,
                    1 + (i / 250) as u8,
                    (i % 250) as u8,
                    1 + (i % 7) as u8,
                )),
                path: "/".into(),
                headers: String::new(),
            },
            with_disabled: false,
        },
        Case {
            name: "source-consistent",
            lines: "balance source\n    hash-type consistent",
            key: |i| Req {
                src: Some(Ipv4Addr::new(127, 9, (i / 200) as u8, 1 + (i % 200) as u8)),
                path: "/".into(),
                headers: String::new(),
            },
            with_disabled: true,
        },
        // `balance hash <expr>` (HAProxy 2.6): the value's bytes.
        Case {
            name: "hash-hdr-map",
            lines: "balance hash req.hdr(x-key)",
            key: |i| Req {
                src: None,
                path: "/".into(),
                headers: format!("x-key: k{i}\r\n"),
            },
            with_disabled: true,
        },
        Case {
            name: "hash-converters-consistent-djb2",
            lines: "balance hash req.hdr(x-site),lower,word(2,.)\n    hash-type consistent djb2",
            key: |i| Req {
                src: None,
                path: "/".into(),
                headers: format!("x-site: WWW.Site{i}.example\r\n"),
            },
            with_disabled: false,
        },
        Case {
            name: "hash-path-sdbm-avalanche",
            lines: "balance hash path\n    hash-type map-based sdbm avalanche",
            key: |i| path(format!("/p{i}/x?q={}", i % 3)),
            with_disabled: false,
        },
        Case {
            name: "hash-src-consistent",
            lines: "balance hash src\n    hash-type consistent",
            key: |i| Req {
                src: Some(Ipv4Addr::new(127, 3, (i / 200) as u8, 1 + (i % 200) as u8)),
                path: "/".into(),
                headers: String::new(),
            },
            with_disabled: false,
        },
    ]
}

/// One config: a frontend per case, each with its own backend over the
/// same servers (weights 1, 2, 3 and an explicit id on the last).
/// Each frontend gets its socket as `bind fd@N` (the haproxy and the
/// sluice configs are given different ones).
fn config(fronts: &[Listen], servers: &[Backend]) -> String {
    let mut c = String::from(
        "defaults\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n\n",
    );
    for (k, case) in cases().iter().enumerate() {
        c.push_str(&format!(
            "frontend f{k}\n    bind {}\n    default_backend b{k}\n\nbackend b{k}\n    {}\n",
            fronts[k], case.lines
        ));
        for (j, s) in servers.iter().enumerate() {
            if j == 1 && case.with_disabled {
                c.push_str("    server off 127.0.0.1:1 weight 3 disabled\n");
            }
            let extra = if j == 3 { " id 9" } else { "" };
            c.push_str(&format!(
                "    server {} {} weight {}{extra}\n",
                s.name,
                s.hostport(),
                [1, 2, 3, 2][j]
            ));
        }
        c.push('\n');
    }
    c
}

async fn send(port: u16, r: &Req) -> String {
    let sock = TcpSocket::new_v4().unwrap();
    if let Some(ip) = r.src {
        sock.bind(SocketAddr::from((ip, 0))).unwrap();
    }
    let mut s = within(
        REQ_DEADLINE,
        "connect",
        sock.connect(SocketAddr::from(([127, 0, 0, 1], port))),
    )
    .await
    .unwrap();
    let req = format!(
        "GET {} HTTP/1.1\r\nhost: t\r\n{}connection: close\r\n\r\n",
        r.path, r.headers
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    within(REQ_DEADLINE, "response", s.read_to_end(&mut out))
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out);
    text.lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("x-backend: ")
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no x-backend in {text}"))
}

async fn servers_for(port: u16, case: &Case) -> Vec<String> {
    let mut v = Vec::with_capacity(KEYS);
    for i in 0..KEYS {
        v.push(send(port, &(case.key)(i)).await);
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hash_algorithms_choose_the_same_server_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let servers = vec![
        Backend::start("s1").await,
        Backend::start("s2").await,
        Backend::start("s3").await,
        Backend::start("s4").await,
    ];
    let n = cases().len();
    let fronts = listens(2 * n);
    let (hp, sp) = fronts.split_at(n);
    let _hap = Haproxy::start(
        "hadiff",
        &config(hp, &servers),
        &hp.iter().collect::<Vec<_>>(),
    );
    let _s = Sluice::start(&config(sp, &servers));

    let mut report = Vec::new();
    for (k, case) in cases().iter().enumerate() {
        let want = servers_for(hp[k].port(), case).await;
        let got = servers_for(sp[k].port(), case).await;
        let distinct: std::collections::BTreeSet<&String> = want.iter().collect();
        assert!(
            distinct.len() >= 3,
            "{}: haproxy spread the keys over {distinct:?} only",
            case.name
        );
        let diff: Vec<usize> = (0..KEYS).filter(|&i| want[i] != got[i]).collect();
        if !diff.is_empty() {
            let i = diff[0];
            report.push(format!(
                "{}: {} of {KEYS} keys differ (first: key {i}, haproxy {} sluice {})",
                case.name,
                diff.len(),
                want[i],
                got[i]
            ));
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}

/// The `n`th client address the PROXY protocol announces: IPv4 for even
/// `n`, IPv6 (a few of them IPv4-mapped) for odd `n`.
fn proxied_src(n: usize) -> std::net::IpAddr {
    if n.is_multiple_of(2) {
        Ipv4Addr::new(
            10 + (n % 5) as u8,
            (n / 7) as u8,
            (n * 13 % 256) as u8,
            1 + n as u8 / 2,
        )
        .into()
    } else if n % 10 == 3 {
        Ipv4Addr::new(192, 168, (n / 3) as u8, n as u8)
            .to_ipv6_mapped()
            .into()
    } else {
        std::net::Ipv6Addr::new(
            0x2001,
            0xdb8,
            n as u16,
            0,
            (n * 977) as u16,
            0,
            (n * 31) as u16,
            1 + n as u16,
        )
        .into()
    }
}

/// A PROXY header announcing `src`: version 1 text for every other
/// address, version 2 binary for the rest.
fn proxy_header(n: usize, src: std::net::IpAddr) -> Vec<u8> {
    use std::net::IpAddr;
    if n % 4 < 2 {
        let (fam, dst) = match src {
            IpAddr::V4(_) => ("TCP4", "127.0.0.1"),
            IpAddr::V6(_) => ("TCP6", "::1"),
        };
        return format!("PROXY {fam} {src} {dst} {} 80\r\n", 1024 + n).into_bytes();
    }
    let mut h = b"\r\n\r\n\x00\r\nQUIT\n".to_vec();
    let (fam, addrs): (u8, Vec<u8>) = match src {
        IpAddr::V4(a) => (0x11, [a.octets().as_slice(), &[127, 0, 0, 1]].concat()),
        IpAddr::V6(a) => (
            0x21,
            [
                a.octets().as_slice(),
                &std::net::Ipv6Addr::LOCALHOST.octets(),
            ]
            .concat(),
        ),
    };
    h.extend_from_slice(&[0x21, fam]);
    h.extend_from_slice(&(addrs.len() as u16 + 4).to_be_bytes());
    h.extend_from_slice(&addrs);
    h.extend_from_slice(&(1024 + n as u16).to_be_bytes());
    h.extend_from_slice(&80u16.to_be_bytes());
    h
}

/// Sends a request behind a PROXY header; the server that answered.
async fn send_proxied(port: u16, n: usize) -> String {
    let mut s = within(
        REQ_DEADLINE,
        "connect",
        tokio::net::TcpStream::connect(("127.0.0.1", port)),
    )
    .await
    .unwrap();
    let mut req = proxy_header(n, proxied_src(n));
    req.extend_from_slice(b"GET / HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n");
    s.write_all(&req).await.unwrap();
    let mut out = Vec::new();
    within(REQ_DEADLINE, "response", s.read_to_end(&mut out))
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out);
    text.lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("x-backend: ")
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no x-backend in {text}"))
}

/// `balance source` behind `bind ... accept-proxy`: the address the
/// PROXY header announces (not the socket's 127.0.0.1) is the key, and
/// 200 of them (IPv4, IPv6, IPv4-mapped IPv6; v1 and v2 headers) reach
/// the same servers (weights 1, 2, 1, 3) as under HAProxy 2.6, map-based
/// and consistent, in HTTP and TCP mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn source_hash_behind_accept_proxy_matches_haproxy() {
    if !haproxy::available() {
        return;
    }
    const ADDRS: usize = 200;
    let servers = [
        Backend::start("s1").await,
        Backend::start("s2").await,
        Backend::start("s3").await,
        Backend::start("s4").await,
    ];
    let cases = [
        ("http-map", "http", "hash-type map-based"),
        ("http-consistent", "http", "hash-type consistent"),
        ("tcp-map", "tcp", "hash-type map-based"),
        ("tcp-consistent", "tcp", "hash-type consistent"),
    ];
    let config = |fronts: &[Listen]| {
        let mut c = String::from(
            "defaults\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n\n",
        );
        for (k, (_, mode, hash)) in cases.iter().enumerate() {
            c.push_str(&format!(
                "listen p{k}\n    mode {mode}\n    bind {} accept-proxy\n    balance source\n    {hash}\n",
                fronts[k]
            ));
            for (j, s) in servers.iter().enumerate() {
                c.push_str(&format!(
                    "    server {} {} weight {}\n",
                    s.name,
                    s.hostport(),
                    [1, 2, 1, 3][j]
                ));
            }
            c.push('\n');
        }
        c
    };
    let fronts = listens(2 * cases.len());
    let (hp, sp) = fronts.split_at(cases.len());
    let _hap = Haproxy::start("hapxy", &config(hp), &hp.iter().collect::<Vec<_>>());
    let _s = Sluice::start(&config(sp));

    let mut report = Vec::new();
    for (k, (name, _, _)) in cases.iter().enumerate() {
        let (mut want, mut got) = (Vec::new(), Vec::new());
        for n in 0..ADDRS {
            want.push(send_proxied(hp[k].port(), n).await);
            got.push(send_proxied(sp[k].port(), n).await);
        }
        let distinct: std::collections::BTreeSet<&String> = want.iter().collect();
        assert!(
            distinct.len() == 4,
            "{name}: haproxy spread the addresses over {distinct:?} only"
        );
        let diff: Vec<usize> = (0..ADDRS).filter(|&n| want[n] != got[n]).collect();
        if let Some(&n) = diff.first() {
            report.push(format!(
                "{name}: {} of {ADDRS} addresses differ (first: {}, haproxy {} sluice {})",
                diff.len(),
                proxied_src(n),
                want[n],
                got[n]
            ));
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}
