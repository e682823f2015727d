//! Servers that follow the DNS, against a real DNS server (dnsmasq, see
//! `support/dnsmasq.rs`): what `show servers state`, `show stat` and `show
//! resolvers` say of resolved and template servers, compared with HAProxy
//! 2.6 on the same records; an address replaced while requests flow; SRV
//! weights; a DNS server that stops answering; answers too big for UDP.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use support::dnsmasq::{Dnsmasq, unique_loopback};
use support::haproxy::{Differences, Haproxy};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An HTTP/1.1 server on `addr` answering every request `200` with its
/// name as the body, keep-alive; counts the requests it answered.
struct Named {
    hits: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Named {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn named(l: std::net::TcpListener, name: &'static str) -> Named {
    l.set_nonblocking(true).expect("nonblocking listener");
    let l = tokio::net::TcpListener::from_std(l).expect("named server listener");
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let task = tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let hits = counted.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        hits.fetch_add(1, SeqCst);
                        let resp = format!(
                            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{name}",
                            name.len()
                        );
                        if s.write_all(resp.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    Named { hits, task }
}

/// Listeners on two loopback addresses of their own with the same port: a
/// server name moved from one to the other keeps its port. Both stay bound
/// from the moment the port is chosen (a port probed, released and bound
/// again can be taken in between by any socket bound to the wildcard).
fn two_listeners() -> (std::net::TcpListener, std::net::TcpListener) {
    for _ in 0..20 {
        let a = unique_loopback(78);
        let b = std::net::Ipv4Addr::new(
            a.octets()[0],
            a.octets()[1],
            a.octets()[2],
            a.octets()[3].wrapping_add(100),
        );
        let first = std::net::TcpListener::bind((a, 0)).expect("bind the first address");
        let port = first.local_addr().expect("first address").port();
        // Another socket may hold the port on the second address (or the
        // wildcard): then try another pair.
        if let Ok(second) = std::net::TcpListener::bind((b, port)) {
            return (first, second);
        }
    }
    panic!("no port free on two loopback addresses in 20 tries");
}

fn addr_of(l: &std::net::TcpListener) -> SocketAddr {
    l.local_addr().expect("listener address")
}

/// Polls `show servers state` until `line` holds for server `be/sv`'s
/// line (10 s at most) and returns that line.
async fn wait_state(sock: &Path, sv: &str, what: &str, ok: impl Fn(&[&str]) -> bool) -> String {
    let mut last = String::new();
    for _ in 0..1000 {
        let out = cli(sock, "show servers state").await;
        if let Some(l) = out
            .lines()
            .find(|l| l.split(' ').nth(3) == Some(sv) && l.split(' ').nth(1) == Some("be"))
        {
            let f: Vec<&str> = l.split(' ').collect();
            if ok(&f) {
                return l.to_string();
            }
            last = l.to_string();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("server be/{sv}: {what} never came; last: {last}");
}

const GLOBAL: &str = "global
    stats socket @SOCK@ mode 600 level admin
    log @LOG@ format raw local0 info
defaults
    mode http
    log global
    timeout connect 2s
    timeout client 10s
    timeout server 10s
";

fn cfg(sock: &Path, dns: SocketAddr, rest: &str) -> String {
    format!(
        "{}resolvers mydns\n    nameserver dns1 {dns}\n{rest}",
        global(sock, None)
    )
}

/// The `global` and `defaults` sections: the stats socket at `sock`, the
/// event logs to `log` (or nowhere).
fn global(sock: &Path, log: Option<&str>) -> String {
    let g = GLOBAL.replace("@SOCK@", &sock.display().to_string());
    match log {
        Some(l) => g.replace("@LOG@", l),
        None => g
            .replace("    log @LOG@ format raw local0 info\n", "")
            .replace("    log global\n", ""),
    }
}

/// The cells of a `show resolvers` reply that count resolution rounds,
/// replaced by whether they are 0: how many rounds ran depends on how long
/// each process has run.
fn mask_rounds(reply: &str) -> String {
    reply
        .lines()
        .map(|l| match l.trim_start().split_once(':') {
            Some((k, v)) if l.starts_with("  ") => {
                let v = v.trim();
                format!("  {k}: {}", if v == "0" { "0" } else { "N" })
            }
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Masks the seconds since the last change (`srv_time_since_last_change`,
/// `lastchg`) and those spent down (`downtime`): they depend on when each
/// process started.
fn mask_ages(reply: &str) -> String {
    let lastchg = 23;
    let downtime = 24;
    reply
        .lines()
        .map(|l| {
            let mut f: Vec<&str> = l.split(' ').collect();
            if l.starts_with("3 be ") && f.len() > 9 {
                f[9] = "<age>";
                return f.join(" ");
            }
            let mut c: Vec<&str> = l.split(',').collect();
            if l.starts_with("be,") && c.len() > downtime {
                c[lastchg] = "<age>";
                if !c[downtime].is_empty() {
                    c[downtime] = "<age>";
                }
                return c.join(",");
            }
            l.to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Resolved servers, an A template and an SRV template, once the names
/// have resolved: the same `show servers state`, `show stat` and `show
/// resolvers` from HAProxy 2.6 and from sluice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolved_and_template_servers_show_as_in_haproxy() {
    if !support::haproxy::available() || !support::dnsmasq::available() {
        return;
    }
    let dns = Dnsmasq::start(
        "127.0.0.2 one.test\n127.0.0.3 two.test\n",
        &[
            "--srv-host=_http._tcp.svc.test,a.test,9001,0,2560",
            "--host-record=a.test,127.0.0.11",
        ],
    );
    let backends = "backend be
    server s1 one.test:80 resolvers mydns resolve-prefer ipv4
    server s2 nx.test:80 resolvers mydns init-addr none check inter 1h
    server s3 127.0.0.9:80 resolvers mydns
    server-template t 2 two.test:81 resolvers mydns resolve-prefer ipv4 init-addr none
    server-template srv 2 _http._tcp.svc.test resolvers mydns resolve-prefer ipv4
";
    let dir = TempDir::new("dnsdiff");
    let (hsock, ssock) = (dir.join("h.sock"), dir.join("s.sock"));
    let logs = [
        support::syslog::Syslog::new(),
        support::syslog::Syslog::new(),
    ];
    let hfe = Listen::new();
    let text = |sock: &Path, fe: &Listen, log: &support::syslog::Syslog| {
        format!(
            "{}resolvers mydns\n    nameserver dns1 {}\n    timeout resolve 100ms\n    hold nx 200ms\nfrontend fe\n    bind {fe}\n    default_backend be\n{backends}",
            global(sock, Some(&log.addr())),
            dns.addr
        )
    };
    let _hap = Haproxy::start("dnsdiff", &text(&hsock, &hfe, &logs[0]), &[&hfe]);
    let sfe = Listen::new();
    let _sl = Sluice::start(&text(&ssock, &sfe, &logs[1]));
    let mut diffs = Differences::default();
    for sock in [&hsock, &ssock] {
        wait_state(sock, "s1", "an address", |f| f[4] == "127.0.0.2").await;
        wait_state(sock, "t1", "an address", |f| f[4] == "127.0.0.3").await;
        wait_state(sock, "srv1", "the SRV target", |f| f[4] == "127.0.0.11").await;
    }
    for cmd in ["show servers state", "show stat be 4 -1"] {
        let (h, s) = (cli(&hsock, cmd).await, cli(&ssock, cmd).await);
        diffs.compare(cmd, &mask_ages(&h), &mask_ages(&s));
    }
    let (h, s) = (
        cli(&hsock, "show resolvers").await,
        cli(&ssock, "show resolvers").await,
    );
    diffs.compare("show resolvers", &mask_rounds(&h), &mask_rounds(&s));
    // The events the resolutions caused, as sets: which answer each
    // process read first (and so the order of its lines) is the DNS
    // server's timing.
    let events = |log: &support::syslog::Syslog| {
        let mut v: Vec<String> = log
            .take(9)
            .into_iter()
            .filter(|l| !l.contains("Proxy ") && !l.contains("started"))
            .collect();
        v.sort();
        v
    };
    diffs.compare("DNS event log lines", &events(&logs[0]), &events(&logs[1]));
    // The name disappears (NXDOMAIN): past `hold nx`, MAINT (resolution).
    dns.set_hosts("127.0.0.3 two.test\n");
    for sock in [&hsock, &ssock] {
        wait_state(sock, "s1", "MAINT (resolution)", |f| f[6] == "32").await;
    }
    for cmd in ["show servers state be", "show stat be 4 1"] {
        let (h, s) = (cli(&hsock, cmd).await, cli(&ssock, cmd).await);
        diffs.compare(cmd, &mask_ages(&h), &mask_ages(&s));
    }
    diffs.compare("NXDOMAIN log line", &logs[0].take(1), &logs[1].take(1));
    // The CLI's replies last: the changes they make log more events.
    for cmd in [
        "show resolvers mydns",
        "show resolvers nosuch",
        "set server be/s3 fqdn one.test",
        "set server be/srv1 fqdn one.test",
        "set server be/s1 fqdn",
        "set server be/s2 addr 127.0.0.5 port 8080",
    ] {
        let (h, s) = (cli(&hsock, cmd).await, cli(&ssock, cmd).await);
        diffs.compare(
            cmd,
            &mask_rounds(&mask_ages(&h)),
            &mask_rounds(&mask_ages(&s)),
        );
    }
    diffs.assert_none();
}

/// The name of a server moves to another address while requests flow:
/// no request fails, the new address takes the traffic, the server keeps
/// its name, id and counters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_replaced_under_traffic_fails_no_request() {
    if !support::dnsmasq::available() {
        return;
    }
    let (la, lb) = two_listeners();
    let (a, b) = (addr_of(&la), addr_of(&lb));
    let old = named(la, "old");
    let new = named(lb, "new");
    let dns = Dnsmasq::start(&format!("{} app.test\n", a.ip()), &[]);
    let dir = TempDir::new("dnsmove");
    let sock = dir.join("s.sock");
    let fe = Listen::new();
    let _sl = Sluice::start(&cfg(
        &sock,
        dns.addr,
        &format!(
            "    timeout resolve 50ms\nfrontend fe\n    bind {fe}\n    default_backend be\nbackend be\n    server app app.test:{} resolvers mydns resolve-prefer ipv4 init-addr none\n",
            a.port()
        ),
    ));
    wait_state(&sock, "app", "the first address", |f| {
        f[4] == a.ip().to_string()
    })
    .await;
    let addr = fe.addr();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flows: Vec<_> = (0..4)
        .map(|_| {
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut conn = HttpConn::connect(addr).await;
                let mut n = 0usize;
                while !stop.load(SeqCst) || n < 20 {
                    let r = conn.get("/").await;
                    assert_eq!(r.status, 200, "request {n}: {}", r.text());
                    n += 1;
                }
                n
            })
        })
        .collect();
    wait_until(
        Duration::from_secs(10),
        "requests to the first address",
        || async { old.hits.load(SeqCst) >= 50 },
    )
    .await;
    dns.set_hosts(&format!("{} app.test\n", b.ip()));
    wait_state(&sock, "app", "the new address", |f| {
        f[4] == b.ip().to_string()
    })
    .await;
    wait_until(
        Duration::from_secs(10),
        "requests to the new address",
        || async { new.hits.load(SeqCst) >= 50 },
    )
    .await;
    stop.store(true, SeqCst);
    let mut total = 0;
    for f in flows {
        total += f.await.expect("a flow of requests failed");
    }
    let csv = show_stat(&sock).await;
    assert_eq!(csv.get("be", "app", "sid"), "1");
    assert_eq!(csv.get("be", "app", "status"), "no check");
    assert_eq!(csv.num("be", "app", "stot") as usize, total);
    assert_eq!(old.hits.load(SeqCst) + new.hits.load(SeqCst), total);
}

/// SRV records' weights share the requests: 2560 and 7680 map to 10 and
/// 30 (HAProxy's `(w + 255) / 256`), so the second target serves 75 % of
/// 10,000 requests, within 2 %.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn srv_weights_share_the_requests() {
    if !support::dnsmasq::available() {
        return;
    }
    let (la, lb) = two_listeners();
    let (a, b) = (addr_of(&la), addr_of(&lb));
    let light = named(la, "light");
    let heavy = named(lb, "heavy");
    let dns = Dnsmasq::start(
        "",
        &[
            &format!(
                "--srv-host=_http._tcp.svc.test,light.test,{},0,2560",
                a.port()
            ),
            &format!(
                "--srv-host=_http._tcp.svc.test,heavy.test,{},0,7680",
                b.port()
            ),
            &format!("--host-record=light.test,{}", a.ip()),
            &format!("--host-record=heavy.test,{}", b.ip()),
        ],
    );
    let dir = TempDir::new("dnssrv");
    let sock = dir.join("s.sock");
    let fe = Listen::new();
    let _sl = Sluice::start(&cfg(
        &sock,
        dns.addr,
        &format!(
            "    timeout resolve 100ms\nfrontend fe\n    bind {fe}\n    default_backend be\nbackend be\n    server-template web 3 _http._tcp.svc.test resolvers mydns resolve-prefer ipv4\n"
        ),
    ));
    for sv in ["web1", "web2"] {
        wait_state(&sock, sv, "an SRV target", |f| f[4] != "-").await;
    }
    let csv = show_stat(&sock).await;
    assert_eq!(csv.get("be", "web3", "status"), "MAINT (resolution)");
    let mut weights: Vec<String> = ["web1", "web2"]
        .iter()
        .map(|s| csv.get("be", s, "weight"))
        .collect();
    weights.sort();
    assert_eq!(weights, ["10", "30"]);
    let mut conn = HttpConn::connect(fe.addr()).await;
    for _ in 0..10_000 {
        assert_eq!(conn.get("/").await.status, 200);
    }
    let share = heavy.hits.load(SeqCst) as f64 / 10_000.0;
    assert!((share - 0.75).abs() <= 0.02, "heavy served {share}");
    assert_eq!(light.hits.load(SeqCst) + heavy.hits.load(SeqCst), 10_000);
}

/// A DNS server that stops answering: the last answer stands for `hold
/// timeout`, then the server goes to `MAINT (resolution)`; a section with a
/// long hold keeps its server serving meanwhile. Once the DNS answers
/// again, the server is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_dns_server_is_held_then_taken_out() {
    if !support::dnsmasq::available() {
        return;
    }
    let dns = Dnsmasq::start("127.0.0.2 app.test\n", &[]);
    let dir = TempDir::new("dnshold");
    let sock = dir.join("s.sock");
    let fe = Listen::new();
    let text = format!(
        "{}resolvers short\n    nameserver dns1 {d}\n    timeout resolve 50ms\n    timeout retry 50ms\n    resolve_retries 2\n    hold timeout 300ms\nresolvers long\n    nameserver dns1 {d}\n    timeout resolve 50ms\n    timeout retry 50ms\n    resolve_retries 2\n    hold timeout 1h\nfrontend fe\n    bind {fe}\n    default_backend be\nbackend be\n    server quick app.test:80 resolvers short resolve-prefer ipv4 init-addr none\n    server patient app.test:80 resolvers long resolve-prefer ipv4 init-addr none\n",
        global(&sock, None),
        d = dns.addr,
    );
    let _sl = Sluice::start(&text);
    for sv in ["quick", "patient"] {
        wait_state(&sock, sv, "an address", |f| f[4] == "127.0.0.2").await;
    }
    dns.pause(true);
    let down = wait_state(&sock, "quick", "MAINT (resolution)", |f| f[6] == "32").await;
    assert!(
        down.contains(" - 0 32 "),
        "no address once held out: {down}"
    );
    // Timeouts have been counted for the long-held section too, and its
    // server still has its address and serves.
    let res = cli(&sock, "show resolvers long").await;
    let timeouts: u64 = res
        .lines()
        .find_map(|l| l.trim().strip_prefix("timeout:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    assert!(timeouts > 0, "{res}");
    let csv = show_stat(&sock).await;
    assert_eq!(csv.get("be", "patient", "status"), "no check");
    assert_eq!(csv.get("be", "quick", "status"), "MAINT (resolution)");
    dns.pause(false);
    wait_state(&sock, "quick", "back in service", |f| {
        f[6] == "0" && f[4] == "127.0.0.2"
    })
    .await;
}

/// An answer that does not fit in `accepted_payload_size` over UDP is
/// truncated by the DNS server; it is asked again over TCP and used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_answers_are_asked_again_over_tcp() {
    if !support::dnsmasq::available() {
        return;
    }
    let mut hosts = String::new();
    for i in 1..=60 {
        hosts.push_str(&format!("127.0.1.{i} big.test\n"));
    }
    let dns = Dnsmasq::start(&hosts, &[]);
    let dir = TempDir::new("dnstc");
    let sock = dir.join("s.sock");
    let fe = Listen::new();
    let _sl = Sluice::start(&cfg(
        &sock,
        dns.addr,
        &format!(
            "    timeout resolve 100ms\nfrontend fe\n    bind {fe}\n    default_backend be\nbackend be\n    server big big.test:80 resolvers mydns resolve-prefer ipv4 init-addr none\n"
        ),
    ));
    let line = wait_state(&sock, "big", "an address", |f| f[4].starts_with("127.0.1.")).await;
    assert!(line.contains(" 2 0 "), "in service: {line}");
    let res = cli(&sock, "show resolvers mydns").await;
    let truncated: u64 = res
        .lines()
        .find_map(|l| l.trim().strip_prefix("truncated:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    assert!(truncated > 0, "{res}");
}

/// SRV records that come and go: a record gone frees its slot (`MAINT
/// (resolution)`, no name, no address), a new one takes a free slot, and
/// the record still there keeps its slot, address and counters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn srv_slots_follow_the_records() {
    if !support::dnsmasq::available() {
        return;
    }
    let srv = |t: &str, port: u16| format!("--srv-host=_http._tcp.svc.test,{t}.test,{port},0,256");
    let rec = |t: &str, ip: &str| format!("--host-record={t}.test,{ip}");
    let (a, b, c) = (srv("a", 9001), srv("b", 9002), srv("c", 9003));
    let (ra, rb, rc) = (
        rec("a", "127.0.0.11"),
        rec("b", "127.0.0.12"),
        rec("c", "127.0.0.13"),
    );
    let dns = Dnsmasq::start("", &[&a, &b, &ra, &rb]);
    let dir = TempDir::new("dnsslots");
    let sock = dir.join("s.sock");
    let fe = Listen::new();
    let _sl = Sluice::start(&cfg(
        &sock,
        dns.addr,
        &format!(
            "    timeout resolve 50ms\nfrontend fe\n    bind {fe}\n    default_backend be\nbackend be\n    server-template web 3 _http._tcp.svc.test resolvers mydns resolve-prefer ipv4\n"
        ),
    ));
    let slot_of = |state: &str, target: &str| -> Option<String> {
        state
            .lines()
            .find(|l| l.split(' ').nth(17) == Some(target))
            .and_then(|l| l.split(' ').nth(3).map(String::from))
    };
    let mut state = String::new();
    for _ in 0..1000 {
        state = cli(&sock, "show servers state be").await;
        if slot_of(&state, "a.test").is_some() && slot_of(&state, "b.test").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let b_slot = slot_of(&state, "b.test").expect("b.test in a slot");
    let addr = dns.addr;
    drop(dns);
    let _dns = Dnsmasq::start_at(addr, "", &[&b, &c, &rb, &rc]);
    for _ in 0..1000 {
        state = cli(&sock, "show servers state be").await;
        if slot_of(&state, "c.test").is_some() && slot_of(&state, "a.test").is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(slot_of(&state, "a.test"), None, "{state}");
    assert_eq!(slot_of(&state, "b.test"), Some(b_slot.clone()), "{state}");
    let c_slot = slot_of(&state, "c.test").expect("c.test took a slot");
    assert_ne!(c_slot, b_slot);
    for l in state.lines().skip(2).filter(|l| l.split(' ').count() > 20) {
        let f: Vec<&str> = l.split(' ').collect();
        match f[17] {
            "b.test" => assert_eq!((f[4], f[18]), ("127.0.0.12", "9002"), "{l}"),
            "c.test" => assert_eq!((f[4], f[18]), ("127.0.0.13", "9003"), "{l}"),
            _ => assert_eq!((f[4], f[6], f[18]), ("-", "32", "0"), "{l}"),
        }
    }
}
