//! Proxy numbers (`id`), against the real HAProxy 2.6: the same
//! configuration runs under haproxy and sluice and `show stat` must give
//! each proxy the same `iid` (explicit ones as written, the others by
//! place, stepping over the numbers taken); `-c` refuses what haproxy
//! refuses with its messages.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use support::haproxy::{self, Haproxy};
use support::*;

/// The `pxname,svname,iid` of each row of `show stat`.
fn ids(csv: &str) -> Vec<String> {
    csv.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            format!("{},{},{}", f[0], f[1], f.get(27).unwrap_or(&""))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_ids_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    // A set id, one a later proxy's place would give (c steps over it),
    // one past the others.
    let proxies = "frontend a
    bind {fe0}
    default_backend c
backend b
    id 4
    server s 127.0.0.1:1
backend c
    server s 127.0.0.1:1
listen d
    id 9
    bind {fe1}
    server s 127.0.0.1:1
backend e
    server s 127.0.0.1:1
frontend f
    id 1
    bind {fe2}
    default_backend e
";
    let mut csv = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let dir = TempDir::new("pxid");
        let sock = dir.join("s.sock");
        let fronts = listens(3);
        let mut cfg = format!(
            "global\n    stats socket {} level admin\ndefaults\n    mode http\n    timeout client 5s\n    timeout server 5s\n    timeout connect 5s\n{proxies}",
            sock.display()
        );
        for (n, l) in fronts.iter().enumerate() {
            cfg = cfg.replace(&format!("{{fe{n}}}"), &l.to_string());
        }
        let refs: Vec<&Listen> = fronts.iter().collect();
        let out = if tool == "haproxy" {
            let _h = Haproxy::start("pxid", &cfg, &refs);
            cli(&sock, "show stat").await
        } else {
            let _s = Sluice::start(&cfg);
            cli(&sock, "show stat").await
        };
        csv.push(ids(&out));
    }
    // Not vacuous: haproxy stepped over 4 for c.
    assert!(csv[0].contains(&"c,BACKEND,5".to_string()), "{:?}", csv[0]);
    assert_eq!(csv[0], csv[1]);
}

#[test]
fn proxy_id_misuse_is_refused_as_haproxy_refuses_it() {
    if !haproxy::available() {
        return;
    }
    let cases = [
        "defaults\n    id 3\n",
        "backend b\n    id 0\n",
        "backend b\n    id -1\n",
        "backend b\n    id abc\n",
        "backend b\n    id\n",
        "backend b\n    id 1 2\n",
        "frontend a\n    id 3\nbackend c\n    id 3\nlisten d\n    id 3\n",
    ]
    .map(|c| {
        (
            c.replace('\n', " "),
            format!("defaults\n    mode http\n{c}"),
        )
    });
    // The messages after "config : ", file paths cut to their line.
    let alert = |stderr: &str| -> String {
        stderr
            .lines()
            .filter(|l| l.starts_with("[ALERT]") && l.contains("parsing ["))
            .map(|l| {
                let m = l.split_once(" : config : ").map_or(l, |(_, m)| m);
                m.split(['[', '('])
                    .map(|p| p.rsplit('/').next().unwrap_or(p))
                    .collect::<Vec<_>>()
                    .join("|")
                    // Each tool reads its own file.
                    .replace("haproxy.cfg", "cfg")
                    .replace("sluice.cfg", "cfg")
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    haproxy::assert_check_agrees("pxidc", cases, alert);
}
