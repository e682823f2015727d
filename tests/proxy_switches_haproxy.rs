//! Proxy numbers (`id`) and proxies switched off (`disabled`, `enabled`),
//! against the real HAProxy 2.6: the same configuration runs under haproxy
//! and sluice and `show stat` must give each proxy the same `iid`
//! (explicit ones as written, the others by place, stepping over the
//! numbers taken) and show the same proxies; a frontend whose backend is
//! disabled answers as haproxy does; `-c` refuses what haproxy refuses
//! with its messages.
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

/// A disabled proxy is not shown, keeps its number, and a frontend whose
/// backend is disabled answers 503; `defaults` can disable the proxies
/// after it, `enabled` turns one on again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_proxies_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    // The disabled proxies bind nothing here: the test harness waits for
    // every address of the configuration.
    let proxies = "frontend a
    disabled
    default_backend c
backend c
    disabled
    server s 127.0.0.1:1
frontend g
    bind {fe0}
    enabled
    default_backend c
listen d
    disabled
    server s 127.0.0.1:1
defaults
    mode http
    timeout client 5s
    timeout server 5s
    timeout connect 5s
    disabled
backend off
    server s 127.0.0.1:1
backend on
    enabled
    server s 127.0.0.1:1
";
    let mut seen = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let dir = TempDir::new("pxoff");
        let sock = dir.join("s.sock");
        let front = Listen::new();
        let cfg = format!(
            "global\n    stats socket {} level admin\ndefaults\n    mode http\n    timeout client 5s\n    timeout server 5s\n    timeout connect 5s\n{}",
            sock.display(),
            proxies.replace("{fe0}", &front.to_string())
        );
        let up = [&front];
        let answer = if tool == "haproxy" {
            let _h = Haproxy::start("pxoff", &cfg, &up);
            let stat = cli(&sock, "show stat").await;
            let a = haproxy::exchange(
                front.addr(),
                b"GET / HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
                false,
            )
            .await;
            (ids(&stat), String::from_utf8_lossy(&a).into_owned())
        } else {
            let _s = Sluice::start(&cfg);
            let stat = cli(&sock, "show stat").await;
            let a = haproxy::exchange(
                front.addr(),
                b"GET / HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n",
                false,
            )
            .await;
            (ids(&stat), String::from_utf8_lossy(&a).into_owned())
        };
        seen.push(answer);
    }
    // Not vacuous: haproxy showed only g and on, with their numbers.
    assert_eq!(
        seen[0].0,
        ["g,FRONTEND,4", "on,s,7", "on,BACKEND,7"],
        "{:?}",
        seen[0]
    );
    assert!(seen[0].1.starts_with("HTTP/1.1 503 "), "{}", seen[0].1);
    assert_eq!(seen[0], seen[1]);
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
        "backend b\n    disabled foo\n",
        "backend b\n    enabled foo\n",
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

/// `use-server`: the first rule whose condition holds names the server
/// (over balancing), a rule naming a server in maintenance is skipped, in
/// HTTP and in TCP, as haproxy 2.6 chooses (the log line names it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn use_server_rules_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{}
frontend fe
    bind {{fe0}}
    log-format \"%f %b/%s %ST\"
    default_backend be
backend be
    balance first
    use-server s3 if {{ path /three }}
    use-server s2 if {{ path /two }} || {{ path /three }}
    use-server s2 unless {{ path_beg /x }}
    server s1 {{srv}}
    server s2 {{srv}}
    server s3 {{srv}} disabled
listen raw
    mode tcp
    bind {{fe1}}
    log-format \"%f %b/%s\"
    balance first
    use-server t2 if {{ src 127.0.0.1 }}
    server t1 {{srv}}
    server t2 {{srv}}
",
        haproxy::HTTP_LOG_GLOBAL
    );
    let pair = haproxy::Pair::start("useserver", &cfg, 2).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    // haproxy may log the readiness probe's empty connection to the TCP
    // listener (it reached a server; sluice's `dontlognull` hides it), or
    // not, as its threads go: each request's line is the next of its
    // frontend, a `raw` line before an `fe` one being the probe's.
    let line = |i: usize, n: usize, req: String, prefix: &'static str| {
        let pair = &pair;
        async move {
            haproxy::exchange(pair.fronts[i][n].addr(), req.as_bytes(), n == 1).await;
            loop {
                let l = pair.logs[i].take(1).remove(0);
                if l.starts_with(prefix) {
                    return l;
                }
            }
        }
    };
    let mut differ = haproxy::Differences::default();
    for path in ["/two", "/three", "/x1", "/other"] {
        let req = || format!("GET {path} HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n");
        let h = line(0, 0, req(), "fe ").await;
        let s = line(1, 0, req(), "fe ").await;
        differ.compare(path, &h, &s);
        if path == "/three" {
            // Not vacuous: s3 is down, the next rule chose s2.
            assert_eq!(h, "fe be/s2 200\n");
        }
    }
    let req = || "GET / HTTP/1.0\r\n\r\n".to_string();
    let h = line(0, 1, req(), "raw ").await;
    let s = line(1, 1, req(), "raw ").await;
    assert_eq!(h, "raw raw/t2\n");
    differ.compare("tcp", &h, &s);
    differ.assert_none();
}

/// A process killed when dropped (a failing test leaves none behind).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The global `unix-bind`: its prefix goes before the path of the UNIX
/// `bind` lines after it and its mode is theirs unless they set one, as
/// haproxy 2.6 creates the socket files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_bind_defaults_are_haproxys() {
    use std::os::unix::fs::PermissionsExt;
    if !haproxy::available() {
        return;
    }
    let mut seen = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let dir = TempDir::new("unixbind");
        let cfg = format!(
            "global\n    unix-bind prefix {}/ mode 640\ndefaults\n    mode http\n    timeout client 5s\n    timeout server 5s\n    timeout connect 5s\nfrontend f\n    bind unix@a.sock\n    bind unix@b.sock mode 600\n    http-request return status 200\n",
            dir.path().display()
        );
        let _h = (tool == "haproxy").then(|| Haproxy::start("unixbind", &cfg, &[]));
        // Run by hand: the harness would wait for `a.sock` where the test
        // runs, not under the prefix.
        let _child = (tool == "sluice").then(|| {
            let path = dir.write("sluice.cfg", &cfg);
            std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
                .arg("-f")
                .arg(&path)
                .arg("-d")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .map(Killed)
                .expect("spawn sluice")
        });
        let (a, b) = (dir.join("a.sock"), dir.join("b.sock"));
        wait_until(
            std::time::Duration::from_secs(10),
            "the socket files",
            || {
                let ok = a.exists() && b.exists();
                async move { ok }
            },
        )
        .await;
        let mode = |p: &std::path::Path| {
            std::fs::metadata(p).map_or(0, |m| m.permissions().mode() & 0o777)
        };
        seen.push((mode(&a), mode(&b)));
    }
    assert_eq!(seen[0], (0o640, 0o600));
    assert_eq!(seen[0], seen[1]);
}

/// `stats http-request`: the first rule that holds decides over `stats
/// auth` (allow, deny with the 403 page, auth with its realm), as haproxy
/// 2.6 answers; the page itself is sluice's, so its status line and the
/// challenge are compared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_http_request_rules_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let mut seen = Vec::new();
    for tool in ["haproxy", "sluice"] {
        let front = Listen::new();
        let cfg = format!(
            "defaults\n    mode http\n    timeout client 5s\n    timeout server 5s\n    timeout connect 5s
userlist UL
    user admin insecure-password secret
listen stats
    bind {front}
    stats enable
    stats uri /
    acl AUTH http_auth(UL)
    acl local req.hdr(x-local) yes
    stats http-request deny if {{ req.hdr(x-deny) yes }}
    stats http-request allow if local
    stats http-request auth realm MyRealm unless AUTH
"
        );
        let _h = (tool == "haproxy").then(|| Haproxy::start("statsrules", &cfg, &[&front]));
        let _s = (tool == "sluice").then(|| Sluice::start(&cfg));
        let mut answers = Vec::new();
        for extra in [
            "x-deny: yes\r\n",
            "x-local: yes\r\n",
            "",
            "authorization: Basic YWRtaW46c2VjcmV0\r\n",
            "authorization: Basic YWRtaW46d3Jvbmc=\r\n",
        ] {
            let req = format!("GET / HTTP/1.1\r\nhost: h\r\n{extra}connection: close\r\n\r\n");
            let a = haproxy::exchange(front.addr(), req.as_bytes(), false).await;
            let a = String::from_utf8_lossy(&a).into_owned();
            let status = a.lines().next().unwrap_or("").to_string();
            let challenge = a
                .lines()
                .find(|l| l.to_ascii_lowercase().starts_with("www-authenticate"))
                .unwrap_or("")
                .to_ascii_lowercase();
            answers.push((status, challenge));
        }
        seen.push(answers);
    }
    // Not vacuous: haproxy denied, allowed, asked in its realm, allowed.
    assert_eq!(seen[0][0].0, "HTTP/1.1 403 Forbidden");
    assert_eq!(seen[0][2].1, "www-authenticate: basic realm=\"myrealm\"");
    assert_eq!(seen[0], seen[1]);
}
