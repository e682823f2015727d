//! Agent checks (`agent-check`) side by side with HAProxy 2.6: one agent
//! answers both proxies, its reply changes phase after phase (health,
//! admin state, weight, maxconn, words it does not know), and for each
//! phase the server rows of `show stat` (the agent columns among them)
//! and `show servers state` are compared, then the CLI's agent commands
//! and the state-change log lines.

mod support;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::haproxy::{Differences, Haproxy};
use support::syslog::Syslog;
use support::*;
use tokio::io::AsyncWriteExt;

/// An agent on 127.0.0.1 that answers every connection with the current
/// reply and closes.
async fn agent(reply: Arc<Mutex<String>>) -> std::net::SocketAddr {
    tcp_server(move |mut s| {
        let text = reply.lock().unwrap().clone();
        async move {
            let _ = s.write_all(text.as_bytes()).await;
            let _ = s.shutdown().await;
        }
    })
    .await
}

const CFG: &str = "global
    stats socket @SOCK@ mode 600 level admin
    log @LOG@ format raw local0 info
defaults
    mode http
    log global
    timeout connect 2s
    timeout client 10s
    timeout server 10s
    timeout check 2s
frontend fe
    bind @FE@
    default_backend be
backend be
    server s1 @SRV@ weight 10 agent-check agent-port @AGENT@ agent-inter 100ms
    server s2 @SRV@ agent-check agent-port @AGENT@ agent-inter 100ms agent-send hello\\n
    server s3 @SRV@
";

/// Masks what must differ: the seconds since the last change, those spent
/// down (both count from when each process read a reply), and the
/// milliseconds a check or an agent exchange took (timing), and
/// `need_conn_est` (HAProxy's estimate counts its check connections, an
/// intended difference listed in tests/cli_haproxy_diff.rs).
fn mask(reply: &str, header: &[String]) -> String {
    let at = |name: &str| header.iter().position(|f| f == name);
    let masked: Vec<usize> = [
        "lastchg",
        "downtime",
        "check_duration",
        "agent_duration",
        "need_conn_est",
    ]
    .iter()
    .filter_map(|n| at(n))
    .collect();
    reply
        .lines()
        .map(|l| {
            if l.starts_with("be,") {
                let mut c: Vec<&str> = l.split(',').collect();
                for &i in &masked {
                    if i < c.len() && !c[i].is_empty() {
                        c[i] = "<t>";
                    }
                }
                return c.join(",");
            }
            let mut f: Vec<&str> = l.split(' ').collect();
            if f.len() > 20 && f[1] == "be" {
                f[9] = "<age>";
            }
            f.join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A server's `status`, `agent_status` and `last_agt`.
type Shown = (&'static str, &'static str, &'static str);

/// Polls until server `sv` shows `status`, `agent_status` and `last_agt`
/// (10 s at most).
async fn wait_agent(sock: &Path, sv: &str, want: Shown) {
    let mut last = (String::new(), String::new(), String::new());
    for _ in 0..1000 {
        let csv = show_stat(sock).await;
        last = (
            csv.get("be", sv, "status"),
            csv.get("be", sv, "agent_status"),
            csv.get("be", sv, "last_agt"),
        );
        if (last.0.as_str(), last.1.as_str(), last.2.as_str()) == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "{}: be/{sv} shows {last:?}, expected {want:?}",
        sock.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_replies_show_as_in_haproxy() {
    if !support::haproxy::available() {
        return;
    }
    let reply = Arc::new(Mutex::new("up 50%\n".to_string()));
    let agent_addr = agent(reply.clone()).await;
    let server = Backend::start("srv").await;
    let dir = TempDir::new("agentdiff");
    let socks = [dir.join("h.sock"), dir.join("s.sock")];
    let logs = [Syslog::new(), Syslog::new()];
    let fes = [Listen::new(), Listen::new()];
    let text = |i: usize| {
        CFG.replace("@SOCK@", &socks[i].display().to_string())
            .replace("@LOG@", &logs[i].addr())
            .replace("@FE@", &fes[i].to_string())
            .replace("@SRV@", &server.hostport())
            .replace("@AGENT@", &agent_addr.port().to_string())
    };
    let _hap = Haproxy::start("agentdiff", &text(0), &[&fes[0]]);
    let _sl = Sluice::start(&text(1));
    let header: Vec<String> = show_stat(&socks[1]).await.names;
    let mut diffs = Differences::default();
    // (reply, then what s1 and s2 show once they have read it)
    let phases: &[(&str, Shown, Shown)] = &[
        (
            "up 50%\n",
            ("no check", "L7OK", "via agent : up"),
            ("no check", "L7OK", "via agent : up"),
        ),
        (
            "down # too busy\n",
            ("DOWN (agent)", "L7STS", "via agent : down (too busy)"),
            ("DOWN (agent)", "L7STS", "via agent : down (too busy)"),
        ),
        (
            "drain\n",
            ("DOWN (agent)", "CHECKED", ""),
            ("DOWN (agent)", "CHECKED", ""),
        ),
        (
            "ready up\n",
            ("no check", "L7OK", "via agent : up"),
            ("no check", "L7OK", "via agent : up"),
        ),
        (
            "maint\n",
            ("MAINT", "CHECKED", ""),
            ("MAINT", "CHECKED", ""),
        ),
        (
            "ready\n",
            ("no check", "CHECKED", ""),
            ("no check", "CHECKED", ""),
        ),
        (
            "fail\n",
            ("DOWN (agent)", "L7STS", "via agent : fail"),
            ("DOWN (agent)", "L7STS", "via agent : fail"),
        ),
        (
            "75% maxconn:30 up\n",
            ("no check", "L7OK", "via agent : up"),
            ("no check", "L7OK", "via agent : up"),
        ),
        (
            "foo up\n",
            ("no check", "L7OK", "via agent : up (foo)"),
            ("no check", "L7OK", "via agent : up (foo)"),
        ),
    ];
    for (text, s1, s2) in phases {
        *reply.lock().unwrap() = text.to_string();
        for sock in &socks {
            wait_agent(sock, "s1", *s1).await;
            wait_agent(sock, "s2", *s2).await;
        }
        for cmd in [
            "show stat be 4 -1",
            "show servers state be",
            "get weight be/s1",
        ] {
            let (h, s) = (cli(&socks[0], cmd).await, cli(&socks[1], cmd).await);
            diffs.compare(
                format!("{text:?}: {cmd}"),
                &mask(&h, &header),
                &mask(&s, &header),
            );
        }
    }
    // The CLI's agent commands.
    let (_closed, port) = hold_port();
    for cmd in [
        "set server be/s3 agent up".to_string(),
        "set server be/s3 agent-send x".to_string(),
        "set server be/s3 agent-port 1".to_string(),
        "enable agent be/s3".to_string(),
        "disable agent be/s3".to_string(),
        "set server be/s1 agent bogus".to_string(),
        "set server be/s1 agent-addr".to_string(),
        "set server be/s1 agent-addr foo".to_string(),
        "set server be/s1 agent-port".to_string(),
        "set server be/s1 agent-port x".to_string(),
        "set server be/s1 agent-port 70000".to_string(),
        "set server be/s1 agent-send hello".to_string(),
        "set server be/s1 agent-addr 127.0.0.1 port 1".to_string(),
        format!("set server be/s1 agent-port {port}"),
        "disable agent be/s1".to_string(),
        "set server be/s1 agent down".to_string(),
        "show stat be 4 1".to_string(),
        "enable agent be/s1".to_string(),
        "show servers state be".to_string(),
    ] {
        let (h, s) = (cli(&socks[0], &cmd).await, cli(&socks[1], &cmd).await);
        diffs.compare(&cmd, &mask(&h, &header), &mask(&s, &header));
    }
    // An agent that cannot be reached takes no server down.
    for sock in &socks {
        wait_agent(sock, "s1", ("no check", "L4CON", "Connection refused")).await;
    }
    let (h, s) = (
        cli(&socks[0], "show stat be 4 1").await,
        cli(&socks[1], "show stat be 4 1").await,
    );
    diffs.compare("unreachable agent", &mask(&h, &header), &mask(&s, &header));
    // The state changes the agent caused, as sets: which of s1 and s2
    // read each reply first is the agent's timing. Check durations masked.
    let lines = |log: &Syslog| {
        let mut v: Vec<String> = log
            .quiet(Duration::from_millis(300))
            .into_iter()
            .map(|l| {
                regex::Regex::new(r"check duration: \d+ms")
                    .unwrap()
                    .replace(&l, "check duration: <t>ms")
                    .into_owned()
            })
            .filter(|l| l.contains("be/s1"))
            .collect();
        v.sort();
        v
    };
    let (h, s) = (lines(&logs[0]), lines(&logs[1]));
    assert!(
        h.iter().any(|l| l.contains("via agent : down (too busy)")),
        "{h:#?}"
    );
    diffs.compare("agent log lines of s1", &h, &s);
    diffs.assert_none();
}
