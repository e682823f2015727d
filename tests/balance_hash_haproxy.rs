//! Hash-based balancing against the real HAProxy 2.6: for each algorithm
//! (`source`, `uri` with its options, `url_param`, `hdr`, map-based and
//! consistent, several hash functions), the same config is run by haproxy
//! and by sluice, 1,000 keys are sent to each, and every key must reach the
//! same server. Users moving from HAProxy keep their cache locality. Two
//! cases (a map and a ring) also carry a `disabled` server.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI (`CI` set), where that is a failure.

mod support;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

use support::*;

const HAPROXY: &str = "/usr/sbin/haproxy";
const KEYS: usize = 1000;

struct Haproxy(Child);

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

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
    if !Path::new(HAPROXY).exists() {
        // .ci/run installs it: under CI the comparison must run.
        assert!(
            std::env::var_os("CI").is_none(),
            "{HAPROXY} is needed on CI"
        );
        eprintln!("skipped: {HAPROXY} is not installed");
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
    let dir = TempDir::new("hadiff");
    let hcfg = dir.write("haproxy.cfg", &config(hp, &servers));
    let mut cmd = Command::new(HAPROXY);
    inherit(&mut cmd, &hp.iter().collect::<Vec<_>>());
    let mut child = cmd
        .arg("-f")
        .arg(&hcfg)
        .arg("-db")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn haproxy");
    for l in hp {
        l.wait_accepting(&mut child);
    }
    let _hap = Haproxy(child);
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
