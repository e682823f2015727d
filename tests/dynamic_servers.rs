//! Servers added and removed at run time (`add server`, `del server`):
//! the replies, `show servers state` and `show stat` rows compared with
//! HAProxy 2.6 on the same script, and the traffic of a server that joins
//! and leaves a backend while requests flow.

mod support;

use std::path::Path;
use std::time::Duration;

use support::haproxy::{Differences, Haproxy, available};
use support::*;

const CFG: &str = "global
    stats socket @SOCK@ mode 600 level admin
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind @FE@
    default_backend be
backend be
    balance roundrobin
    server s1 @S1@
backend st
    balance static-rr
    server s1 @S1@
";

/// The script both proxies run, one command per line.
const SCRIPT: &[&str] = &[
    "add server be/x 127.0.0.1:9002",
    "add server be/x 127.0.0.1:9002",
    "add server be",
    "add server be/",
    "add server nob/x 127.0.0.4:80",
    "add server st/x 127.0.0.4:80",
    "add server be/y 127.0.0.4:80 foo",
    "add server be/y 127.0.0.4:80 cookie abc",
    "add server be/y 127.0.0.4:80 weight 300",
    "add server be/y 127.0.0.4:80 weight 7 maxconn 3 backup",
    "add server be/z",
    "add server be/z foo.example:80",
    "add server be/w 127.0.0.4:80 check inter 1h",
    "add server be/a 127.0.0.4 resolvers foo",
    "add server be/b 127.0.0.4:81 id 40",
    "show servers state be",
    "show stat be 4 -1",
    "get weight be/y",
    "del server be/x",
    "set server be/x state maint",
    "del server be/x",
    "del server be/s1",
    "del server be",
    "del server nob/x",
    "del server be/nosuch",
    "add server be/c 127.0.0.4:82",
    "enable server be/y",
    "show servers state be",
    "enable health be/w",
    "show stat be 4 -1",
    "add server be/d 127.0.0.1:83 disabled",
    "add server be/e 127.0.0.1:84 enabled",
    "show servers state be",
    "enable server be/d",
    "set weight be/c 9",
    "show servers state be",
    "show stat be 4 -1",
    "add server be/g 127.0.0.4:85 agent-check agent-port 1 agent-inter 1h",
    "set server be/g agent up",
    "show servers state be",
    "enable agent be/g",
    "show servers state be",
    "disable agent be/g",
    "set server be/g state maint",
    "del server be/g",
];

/// Masks what must differ between two runs: the seconds since the last
/// state change (`srv_time_since_last_change` and `lastchg`) and those
/// spent down (`downtime`), which depend on when each process started and
/// ran the command.
fn mask(reply: &str, header: Option<&str>) -> String {
    let lastchg = header.and_then(|h| {
        h.trim_start_matches("# ")
            .split(',')
            .position(|f| f == "lastchg")
    });
    reply
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            if f.len() > 20 && f[1] == "be" {
                let mut f = f;
                f[9] = "<age>";
                return f.join(" ");
            }
            if let Some(i) = lastchg
                && l.starts_with("be,")
            {
                let mut f: Vec<&str> = l.split(',').collect();
                if f.len() > i + 1 {
                    f[i] = "<age>";
                    if !f[i + 1].is_empty() {
                        f[i + 1] = "<age>";
                    }
                }
                return f.join(",");
            }
            l.to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn config(sock: &Path, fe: &Listen, s1: &str) -> String {
    CFG.replace("@SOCK@", &sock.display().to_string())
        .replace("@FE@", &fe.to_string())
        .replace("@S1@", s1)
}

async fn run_script(sock: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for cmd in SCRIPT {
        out.push(cli(sock, cmd).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_and_del_server_replies_match_haproxy() {
    if !available() {
        return;
    }
    let backend = Backend::start("s1").await;
    let dir = TempDir::new("dynsrv");
    let hsock = dir.join("h.sock");
    let hfe = Listen::new();
    let _hap = Haproxy::start(
        "dynsrv",
        &config(&hsock, &hfe, &backend.hostport()),
        &[&hfe],
    );
    let sfe = Listen::new();
    let ssock = dir.join("s.sock");
    let _sl = Sluice::start(&config(&ssock, &sfe, &backend.hostport()));
    let (h, s) = (run_script(&hsock).await, run_script(&ssock).await);
    let header = h.iter().find_map(|r| {
        r.lines()
            .find(|l| l.starts_with("# pxname,"))
            .map(String::from)
    });
    let mut diffs = Differences::default();
    for ((cmd, h), s) in SCRIPT.iter().zip(&h).zip(&s) {
        diffs.compare(
            cmd,
            &mask(h, header.as_deref()),
            &mask(s, header.as_deref()),
        );
    }
    diffs.assert_none();
}

/// A server added at run time takes traffic only once enabled, shares it
/// with the others, and leaves the backend without a failed request: put
/// in maintenance, it is refused deletion while a request it serves is in
/// flight, then deleted once that request is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_server_serves_once_enabled_and_leaves_cleanly() {
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let dir = TempDir::new("dynsrv2");
    let sock = dir.join("s.sock");
    let fe = Listen::new();
    let _sl = Sluice::start(&config(&sock, &fe, &s1.hostport()));
    let add = format!("add server be/s2 {} weight 1", s2.hostport());
    assert_eq!(cli(&sock, &add).await, "New server registered.\n\n");
    for i in 0..4 {
        let r = get(fe.addr(), &format!("/before/{i}")).await;
        assert_eq!(r.status, 200);
    }
    assert_eq!(s2.hits(), 0, "a new server waits in maintenance");
    assert_eq!(cli(&sock, "enable server be/s2").await, "\n");
    for i in 0..4 {
        let r = get(fe.addr(), &format!("/after/{i}")).await;
        assert_eq!(r.status, 200);
    }
    assert_eq!(s2.hits(), 2, "round robin over s1 and s2");
    let csv = show_stat(&sock).await;
    assert_eq!(csv.get("be", "s2", "status"), "no check");
    assert_eq!(csv.get("be", "s2", "sid"), "2");
    assert_eq!(csv.num("be", "s2", "stot"), 2);

    // A request in flight on s2 holds its deletion back; the others go on
    // to s1 meanwhile.
    s2.set_gated(true);
    assert_eq!(cli(&sock, "set server be/s1 state drain").await, "\n");
    let addr = fe.addr();
    let held = tokio::spawn(async move { get(addr, "/held").await });
    s2.wait_started("/held", Duration::from_secs(5)).await;
    assert_eq!(cli(&sock, "set server be/s1 state ready").await, "\n");
    assert_eq!(cli(&sock, "set server be/s2 state maint").await, "\n");
    assert_eq!(
        cli(&sock, "del server be/s2").await,
        "Server still has connections attached to it, cannot remove it.\n"
    );
    for i in 0..4 {
        let r = get(fe.addr(), &format!("/meanwhile/{i}")).await;
        assert_eq!(r.status, 200);
    }
    s2.release(1);
    assert_eq!(held.await.unwrap().status, 200);
    wait_until(Duration::from_secs(5), "s2 to be idle", || async {
        cli(&sock, "del server be/s2").await == "Server deleted.\n"
    })
    .await;
    for i in 0..4 {
        let r = get(fe.addr(), &format!("/gone/{i}")).await;
        assert_eq!(r.status, 200);
    }
    assert_eq!(cli(&sock, "get weight be/s2").await, "No such server.\n\n");
    // Added again under the same name: a new server, counters from zero.
    assert_eq!(cli(&sock, &add).await, "New server registered.\n\n");
    let csv = show_stat(&sock).await;
    assert_eq!(csv.num("be", "s2", "stot"), 0);
    assert_eq!(csv.get("be", "s2", "status"), "MAINT");
}

/// A reload keeps the servers the configuration has and drops those only
/// the CLI added, as HAProxy does; a server both added and then written in
/// the configuration keeps its counters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_keeps_only_the_configured_servers() {
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let dir = TempDir::new("dynsrv3");
    let sock = dir.join("s.sock");
    let fe = Listen::new();
    let cfg = config(&sock, &fe, &s1.hostport());
    let sl = Sluice::start(&cfg);
    for name in ["kept", "dropped"] {
        let add = format!("add server be/{name} {}", s2.hostport());
        assert_eq!(cli(&sock, &add).await, "New server registered.\n\n");
        assert_eq!(cli(&sock, &format!("enable server be/{name}")).await, "\n");
    }
    for i in 0..6 {
        assert_eq!(get(fe.addr(), &format!("/{i}")).await.status, 200);
    }
    let before = show_stat(&sock).await.num("be", "kept", "stot");
    assert_eq!(before, 2);
    // The operator writes `kept` in the configuration, then reloads.
    let text = cfg.replace(
        "backend st\n",
        &format!("    server kept {}\nbackend st\n", s2.hostport()),
    );
    std::fs::write(&sl.cfg, text).unwrap();
    let reply = cli(&sock, "reload").await;
    assert!(reply.starts_with("Success=1\n"), "{reply}");
    assert!(reply.contains("server be/dropped removed"), "{reply}");
    let csv = show_stat(&sock).await;
    assert!(csv.try_row("be", "dropped").is_none());
    assert_eq!(csv.num("be", "kept", "stot"), before);
    assert_eq!(csv.get("be", "kept", "status"), "no check");
}
