//! `server-state-file` and `load-server-state-from-file`: a state saved
//! with `show servers state` is read back at start-up, the same by
//! HAProxy 2.6 and by sluice; a `server-template` slot filled by the DNS
//! finds its target again after a restart, before the DNS answers.

mod support;

use std::path::Path;
use std::time::Duration;

use support::dnsmasq::Dnsmasq;
use support::haproxy::{Differences, Haproxy};
use support::*;

const HEADER: &str = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n";

/// Masks the seconds since the last change and those spent down: they
/// count from when each process started.
fn mask(reply: &str) -> String {
    reply
        .lines()
        .map(|l| {
            let mut f: Vec<&str> = l.split(' ').collect();
            if f.len() > 20 {
                f[9] = "<age>";
                return f.join(" ");
            }
            let mut c: Vec<&str> = l.split(',').collect();
            if l.starts_with("be,") && c.len() > 24 {
                c[23] = "<age>";
                if !c[24].is_empty() {
                    c[24] = "<age>";
                }
                return c.join(",");
            }
            l.to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn config(sock: &Path, fe: &Listen, state: &Path, srv: &str) -> String {
    format!(
        "global
    stats socket {} mode 600 level admin
    server-state-file {}
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
    load-server-state-from-file global
frontend fe
    bind {fe}
    default_backend be
backend be
    server s1 {srv}
    server s2 {srv} weight 10
    server s3 {srv}
    server s4 {srv} check inter 1h
    server s5 {srv} weight 3
backend other
    load-server-state-from-file none
    server s1 {srv}
",
        sock.display(),
        state.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_state_is_read_back_as_haproxy_reads_it() {
    if !support::haproxy::available() {
        return;
    }
    let backend = Backend::start("srv").await;
    let dir = TempDir::new("srvstate");
    let state = dir.write(
        "state",
        &format!(
            "{HEADER}3 be 1 s1 {ip} 0 1 1 1 100 1 0 0 0 0 0 0 - {port} - 0 0 - - 0\n\
             3 be 2 s2 {ip} 2 0 7 10 100 1 0 2 0 0 0 0 - {port} - 0 0 - - 0\n\
             3 be 3 s3 {ip} 2 8 1 1 100 1 0 2 0 0 0 0 - {port} - 0 0 - - 0\n\
             3 be 4 s4 {ip} 2 0 1 1 100 1 0 2 2 0 0 0 - {port} - 0 0 - - 0\n\
             3 be 5 s5 {ip} 2 0 9 1 100 1 0 2 0 0 0 0 - {port} - 0 0 - - 0\n\
             4 other 1 s1 {ip} 0 1 1 1 100 1 0 0 0 0 0 0 - {port} - 0 0 - - 0\n",
            ip = backend.addr.ip(),
            port = backend.addr.port()
        ),
    );
    let (hsock, ssock) = (dir.join("h.sock"), dir.join("s.sock"));
    let (hfe, sfe) = (Listen::new(), Listen::new());
    let _hap = Haproxy::start(
        "srvstate",
        &config(&hsock, &hfe, &state, &backend.hostport()),
        &[&hfe],
    );
    let _sl = Sluice::start(&config(&ssock, &sfe, &state, &backend.hostport()));
    let mut diffs = Differences::default();
    for cmd in [
        "show servers state",
        "show stat be 4 -1",
        "get weight be/s2",
        "get weight be/s5",
    ] {
        let (h, s) = (cli(&hsock, cmd).await, cli(&ssock, cmd).await);
        diffs.compare(cmd, &mask(&h), &mask(&s));
    }
    diffs.assert_none();
}

/// A template slot filled from an SRV record keeps its target, address
/// and port across a restart, read from the state file while the DNS does
/// not answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_slot_survives_a_restart() {
    if !support::dnsmasq::available() {
        return;
    }
    let dns = Dnsmasq::start(
        "",
        &[
            "--srv-host=_http._tcp.svc.test,a.test,9001,0,256",
            "--host-record=a.test,127.0.0.11",
        ],
    );
    let dir = TempDir::new("srvstate2");
    let sock = dir.join("s.sock");
    let state = dir.join("state");
    let cfg = |fe: &Listen| {
        format!(
            "global
    stats socket {} mode 600 level admin
    server-state-file {}
resolvers dns
    nameserver ns {}
    timeout resolve 50ms
    timeout retry 50ms
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
    load-server-state-from-file global
frontend fe
    bind {fe}
    default_backend be
backend be
    server-template web 2 _http._tcp.svc.test resolvers dns resolve-prefer ipv4
",
            sock.display(),
            state.display(),
            dns.addr
        )
    };
    let fe = Listen::new();
    let first = Sluice::start(&cfg(&fe));
    let mut saved = String::new();
    for _ in 0..1000 {
        saved = cli(&sock, "show servers state").await;
        if saved.contains(" web1 127.0.0.11 ") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        saved.contains(" a.test 9001 _http._tcp.svc.test "),
        "{saved}"
    );
    std::fs::write(&state, saved.trim_end_matches('\n').to_string() + "\n").unwrap();
    drop(first);
    dns.pause(true);
    let fe = Listen::new();
    let _second = Sluice::start(&cfg(&fe));
    let now = cli(&sock, "show servers state").await;
    let line = now
        .lines()
        .find(|l| l.contains(" web1 "))
        .unwrap_or_default()
        .to_string();
    let f: Vec<&str> = line.split(' ').collect();
    assert_eq!(
        (f[4], f[5], f[6], f[17], f[18], f[19]),
        (
            "127.0.0.11",
            "2",
            "64",
            "a.test",
            "9001",
            "_http._tcp.svc.test"
        ),
        "{now}"
    );
    dns.pause(false);
}
