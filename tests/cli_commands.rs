//! The runtime API over the real binary's stats socket (reference §1.7,
//! §1.8): admin states, weights, addresses, `show servers state`, typed and
//! JSON output, levels. Every reply checked here was captured from HAProxy
//! 2.6.12 on the same kind of config. `tests/cli_haproxy_diff.rs` runs the
//! real haproxy beside sluice and compares every command's reply; the
//! intended differences are listed there, in `INTENDED_DIFFERENCES`.

mod support;

use std::net::SocketAddr;
use std::path::Path;

use support::*;

fn cfg(fe: &Listen, servers: &[&Backend]) -> String {
    let mut c = format!(
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
    default_backend web_be

backend web_be
    balance roundrobin
"
    );
    for b in servers {
        c.push_str(&format!("    server {} {}\n", b.name, b.hostport()));
    }
    c
}

async fn served(addr: SocketAddr, n: usize) -> Vec<String> {
    let mut conn = HttpConn::connect(addr).await;
    let mut out = Vec::new();
    for i in 0..n {
        if conn.is_closed() {
            conn = HttpConn::connect(addr).await;
        }
        let r = conn.get(&format!("/r{i}")).await;
        assert_eq!(r.status, 200, "{}{}", r.head, r.text());
        out.push(r.backend());
    }
    out
}

async fn status(sock: &Path, sv: &str) -> String {
    server_status(sock, "web_be", sv).await
}

/// The same command with socat, as users drive it, when installed.
async fn via_socat(sock: &Path, cmd: &str) -> Option<String> {
    let (p, c) = (sock.to_path_buf(), cmd.to_string());
    tokio::task::spawn_blocking(move || socat(&p, &c))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_states_weights_and_addresses_steer_traffic() {
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let s3 = Backend::start("s3").await;
    let fe = Listen::new();
    let port = fe.port();
    let sl = Sluice::start(&cfg(&fe, &[&s1, &s2]));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let admin = sl.path("admin.sock");
    let user = sl.path("user.sock");

    assert_eq!(served(addr, 4).await.join(" "), "s1 s2 s1 s2");

    // Maintenance: no new traffic, status MAINT, level enforced.
    assert_eq!(
        cli(&user, "disable server web_be/s2").await,
        "Permission denied\n\n"
    );
    assert_eq!(cli(&admin, "disable server web_be/s2").await, "\n");
    assert_eq!(status(&admin, "s2").await, "MAINT");
    assert_eq!(served(addr, 4).await.join(" "), "s1 s1 s1 s1");
    let state = cli(&admin, "show servers state web_be").await;
    let lines: Vec<&str> = state.lines().collect();
    assert_eq!(lines[0], "1");
    assert!(lines[1].starts_with("# be_id be_name srv_id srv_name srv_addr "));
    let s2_fields: Vec<&str> = lines[3].split(' ').collect();
    assert_eq!(s2_fields.len(), 25, "{}", lines[3]);
    assert_eq!(
        &s2_fields[..9],
        ["3", "web_be", "2", "s2", "127.0.0.1", "0", "1", "1", "1"]
    );
    assert!(state.ends_with(" - - 0\n\n"));

    // Back, then drain s1: everything goes to s2.
    assert_eq!(cli(&admin, "enable server web_be/s2").await, "\n");
    assert_eq!(status(&admin, "s2").await, "no check");
    assert_eq!(cli(&admin, "set server web_be/s1 state drain").await, "\n");
    assert_eq!(status(&admin, "s1").await, "DRAIN");
    assert_eq!(served(addr, 3).await.join(" "), "s2 s2 s2");
    assert_eq!(cli(&admin, "set server web_be/s1 state ready").await, "\n");

    // A new weight takes effect on the next requests (3:1 from a fresh
    // cycle in sluice, see cli_haproxy_diff.rs's INTENDED_DIFFERENCES).
    assert_eq!(cli(&admin, "set weight web_be/s1 3").await, "\n");
    assert_eq!(
        cli(&admin, "get weight web_be/s1").await,
        "3 (initial 1)\n\n"
    );
    let got = served(addr, 8).await;
    assert_eq!(got.iter().filter(|b| *b == "s1").count(), 6, "{got:?}");
    if bin().ends_with("sluice") {
        assert_eq!(got.join(" "), "s1 s1 s1 s2 s1 s1 s1 s2");
    }
    assert_eq!(
        cli(&admin, "set weight web_be/s1 300").await,
        "Absolute weight can only be between 0 and 256 inclusive.\n\n"
    );
    assert_eq!(cli(&admin, "set server web_be/s1 weight 0").await, "\n");
    assert_eq!(served(addr, 2).await.join(" "), "s2 s2");
    assert_eq!(cli(&admin, "set server web_be/s1 weight 100%").await, "\n");

    // A new address: s2's traffic now reaches the third backend.
    let new = s3.hostport();
    let (ip, p) = new.rsplit_once(':').unwrap();
    let old_port = s2.hostport().rsplit_once(':').unwrap().1.to_string();
    assert_eq!(
        cli(&admin, &format!("set server web_be/s2 addr {ip} port {p}")).await,
        format!(
            "no need to change the addr, port changed from '{old_port}' to '{p}' by 'stats socket command'\n\n"
        )
    );
    let before = s3.hits();
    let got = served(addr, 4).await;
    assert_eq!(got.iter().filter(|b| *b == "s3").count(), 2, "{got:?}");
    assert_eq!(s3.hits() - before, 2);
    let csv = show_stat(&admin).await;
    assert_eq!(csv.get("web_be", "s2", "addr"), new);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_answers_with_one_empty_line_framing() {
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let fe = Listen::new();
    let sl = Sluice::start(&cfg(&fe, &[&s1, &s2]));
    let admin = sl.path("admin.sock");
    let user = sl.path("user.sock");

    for cmd in [
        "help",
        "show backend",
        "show servers state",
        "show servers state web_be",
        "show stat",
        "show stat typed",
        "show stat json",
        "show stat up",
        "show stat no-maint",
        "show info",
        "show info typed",
        "show info json",
        "show env",
        "get weight web_be/s1",
        "set timeout cli 30s",
        "clear counters",
        "clear counters all",
        "set maxconn server web_be/s1 10",
        "disable health web_be/s1",
        "set server web_be/s1 health stopping",
        "show servers state nosuch",
    ] {
        let out = cli(&admin, cmd).await;
        assert!(out.ends_with('\n'), "{cmd}: {out:?}");
        // Exactly one empty line, at the end.
        assert_eq!(
            out.matches("\n\n").count() + usize::from(out == "\n"),
            1,
            "{cmd}: {out:?}"
        );
        match via_socat(&admin, cmd).await {
            // Outputs with ages and rates may tick between the two reads.
            Some(s) if !cmd.starts_with("show ") || cmd == "show backend" => {
                assert_eq!(s, out, "{cmd} over socat");
            }
            Some(s) => assert_eq!(s.lines().count(), out.lines().count(), "{cmd} over socat"),
            None => assert!(
                std::env::var_os("CI").is_none(),
                "socat is required in CI (.ci/run installs it)"
            ),
        }
    }
    assert_eq!(cli(&user, "show env").await, "Permission denied\n\n");
    assert_eq!(cli(&admin, "show backend").await, "# name\nweb_be\n\n");

    // typed: one field per line; json: one line, parseable.
    let typed = cli(&admin, "show stat typed").await;
    assert!(
        typed.starts_with("F.2.0.0.pxname.1:KNS:str:web_fe\nF.2.0.1.svname.1:KNS:str:FRONTEND\n")
    );
    assert!(
        typed.contains("\nS.3.1.17.status.1:SGP:str:NOLB\n"),
        "{typed}"
    );
    let json = cli(&admin, "show stat json").await;
    assert!(json.starts_with("[[{\"objType\":\"Frontend\",\"proxyId\":2,\"id\":0,"));
    assert!(json.ends_with("]]\n\n"));
    assert_eq!(json.lines().count(), 2);
    let info = cli(&admin, "show info json").await;
    assert!(info.starts_with("[{\"field\":{\"pos\":0,\"name\":\"Name\"},"));

    // The server with checks disabled then forced to NOLB; its row shows it.
    let csv = show_stat(&admin).await;
    assert_eq!(csv.get("web_be", "s1", "status"), "NOLB");
    assert_eq!(csv.get("web_be", "s1", "slim"), "10");
    assert_eq!(csv.get("web_be", "BACKEND", "act"), "1");
}
