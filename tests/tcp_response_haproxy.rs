//! `tcp-response content` and `tcp-response inspect-delay` against the
//! real HAProxy 2.6: the same configuration runs under haproxy and sluice,
//! the same clients reach both, and each case compares what the client
//! received, the log line (its priority and message: `set-log-level`, the
//! termination state, `%B`, `%U` and the variables the rules set) and the
//! `dresp`/`dreq` counters of `show stat`. In `mode tcp` the server
//! answers in parts, so that rules waiting for more bytes
//! (`res.len`, `res.payload`) have something to wait for; in `mode http`
//! the rules run before the response head is read. The `-c` texts of the
//! keywords' misuses are compared too, and the actions `tcp-request`
//! gained with them (`set-log-level`, `set-mark`, `set-tos`, `set-nice`).
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use support::haproxy::{self, Differences, Haproxy};
use support::syslog::Syslog;
use support::*;

/// A server that reads the client's line (up to its `\n`, so that what
/// the client sent is known to have been relayed), then sends each of
/// `parts`, the next one after a pause so that it travels alone, and
/// closes. An HTTP client's request ends with an empty line: the server
/// waits for that instead when `http`.
async fn parted_server(parts: Vec<Vec<u8>>, http: bool) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let parts = parts.clone();
            tokio::spawn(async move {
                let end: &[u8] = if http { b"\r\n\r\n" } else { b"\n" };
                let mut got = Vec::new();
                let mut buf = [0u8; 1024];
                while !got.windows(end.len()).any(|w| w == end) {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        // The rules must see the first part alone.
                        tokio::time::sleep(Duration::from_millis(150)).await;
                    }
                    if s.write_all(p).await.is_err() {
                        return;
                    }
                }
                // Read what else comes (the client's close) before closing,
                // so that the close is not a reset.
                let _ = s.shutdown().await;
                let _ = s.read(&mut buf).await;
            });
        }
    });
    addr
}

/// One proxy under test with its listeners, log receiver and stats socket.
struct Side {
    _proc: (Option<Haproxy>, Option<Sluice>),
    fronts: Vec<Listen>,
    log: Syslog,
    stats: std::path::PathBuf,
    _dir: TempDir,
}

impl Side {
    /// Starts haproxy (`hap`) or sluice on `cfg`, where `{feN}` are the
    /// listeners, `{srvN}` the servers of `servers`, `{log}` the log target
    /// and `{stats}` the stats socket.
    fn start(hap: bool, cfg: &str, servers: &[SocketAddr]) -> Side {
        let fronts = listens(servers.len());
        let log = Syslog::new();
        let dir = TempDir::new("tcpresp");
        let stats = dir.join("stats.sock");
        let mut text = cfg
            .replace("{log}", &log.addr())
            .replace("{stats}", &stats.display().to_string());
        for (n, (l, s)) in fronts.iter().zip(servers).enumerate() {
            text = text
                .replace(&format!("{{fe{n}}}"), &l.to_string())
                .replace(&format!("{{srv{n}}}"), &s.to_string());
        }
        let proc = if hap {
            let refs: Vec<&Listen> = fronts.iter().collect();
            (Some(Haproxy::start("tcpresp", &text, &refs)), None)
        } else {
            (None, Some(Sluice::start(&text)))
        };
        Side {
            _proc: proc,
            fronts,
            log,
            stats,
            _dir: dir,
        }
    }
}

/// A log line's priority and message: the header's date and pid differ
/// between the two runs (and the program's name).
fn pri_and_msg(line: &str) -> String {
    let pri = line.split_once('>').map_or("", |(p, _)| p);
    let msg = line.split_once("]: ").map_or(line, |(_, m)| m);
    format!("{pri}> {msg}")
}

/// A client of frontend `addr`: sends `req`, then either reads until the
/// proxy closes (its side shut down first in `mode tcp`, so that the
/// session ends when the server's does), or, for a client the proxy is to
/// drop silently, nothing.
/// Returns what it read, its own port (which names its log line: the
/// proxies' readiness probes have lines too) and, when it does not read,
/// its connection, for the caller to hold until the line is there.
async fn client(addr: SocketAddr, req: &[u8], read: bool) -> (Vec<u8>, u16, Option<TcpStream>) {
    let mut c = TcpStream::connect(addr).await.unwrap();
    let port = c.local_addr().unwrap().port();
    c.write_all(req).await.unwrap();
    if !read {
        return (Vec::new(), port, Some(c));
    }
    // An HTTP client says it is done with `connection: close` (a
    // half-close would race the server's answer in haproxy).
    if !req.is_empty() && !req.starts_with(b"GET ") {
        let _ = c.shutdown().await;
    }
    let mut out = Vec::new();
    let _ = within(
        Duration::from_secs(10),
        "the answer",
        c.read_to_end(&mut out),
    )
    .await;
    (out, port, None)
}

/// The log line of the client at `port` (the format starts with
/// `%ci:%cp `), its port masked, as [`pri_and_msg`] gives it.
fn line_of(log: &Syslog, port: u16) -> String {
    let mask = format!("{{}}: 127.0.0.1:{port} {{}}");
    let lines = log.until(&[&mask]);
    let line = lines
        .iter()
        .find(|l| support::syslog::matches(&mask, l))
        .expect("the line");
    mask_tr(&pri_and_msg(line).replace(&format!(":{port} "), ":<port> "))
}

/// `Tr=<ms>` masked when the server answered (how long it took is
/// timing), kept when it did not (`-1`: no response, what the rules did).
fn mask_tr(line: &str) -> String {
    let Some(at) = line.find("Tr=") else {
        return line.to_string();
    };
    let rest = &line[at + 3..];
    let end = rest.find(' ').unwrap_or(rest.len());
    if rest[..end].starts_with('-') {
        return line.to_string();
    }
    format!("{}Tr=<ms>{}", &line[..at], &rest[end..])
}

/// The `dreq` of `listen l<i>`, the `dresp` of its backend and server.
async fn denials(stats: &std::path::Path, i: usize) -> Vec<u64> {
    let st = show_stat(stats).await;
    let px = format!("l{i}");
    [("FRONTEND", "dreq"), ("BACKEND", "dresp"), ("s1", "dresp")]
        .iter()
        .map(|(sv, col)| st.num(&px, sv, col))
        .collect()
}

/// One case: the rules of a `listen` section and how its server answers.
struct Case {
    label: &'static str,
    rules: &'static str,
    parts: &'static [&'static [u8]],
    /// False for a client the proxy drops without a word.
    read: bool,
    /// The client sends its request (else nothing at all: where the rules
    /// decide as the server is connected, the client's bytes would race
    /// that connection, in haproxy as in sluice, and `%U` with them).
    send: bool,
}

const TCP_CASES: &[Case] = &[
    Case {
        label: "reject at once, before the server said anything",
        rules: "tcp-response content reject",
        parts: &[b"HELLO"],
        read: true,
        send: false,
    },
    Case {
        label: "without inspect-delay the rules decide on what is there",
        rules: "tcp-response content accept if { res.len ge 6 }
    tcp-response content reject",
        parts: &[b"HELLOWORLD"],
        read: true,
        send: false,
    },
    Case {
        label: "res.len waits for the second part",
        rules: "tcp-response inspect-delay 5s
    tcp-response content accept if { res.len ge 6 }
    tcp-response content reject",
        parts: &[b"HEL", b"LOWORLD"],
        read: true,
        send: true,
    },
    Case {
        label: "a delay over with no rule deciding accepts",
        rules: "tcp-response inspect-delay 300ms
    tcp-response content reject if { res.len ge 60 }",
        parts: &[b"HEL", b"LOWORLD"],
        read: true,
        send: true,
    },
    Case {
        label: "res.payload waits for its bytes, then rejects",
        rules: "tcp-response inspect-delay 5s
    tcp-response content set-var(txn.l) res.len
    tcp-response content reject if { res.payload(0,5) -m str HELLO }",
        parts: &[b"HE", b"LLO"],
        read: true,
        send: true,
    },
    Case {
        label: "close: what was read goes to the client, the server's side closes",
        rules: "tcp-response inspect-delay 5s
    tcp-response content close if { res.payload(0,3) -m str HEL }",
        parts: &[b"HEL", b"LOWORLD"],
        read: true,
        send: true,
    },
    Case {
        label: "variables of every scope, in the log line",
        rules: "tcp-response inspect-delay 5s
    tcp-response content set-var(txn.l) res.len
    tcp-response content set-var(res.m) res.payload(1,2)
    tcp-response content set-var-fmt(sess.s) \"x%[res.len]\"
    tcp-response content set-var(txn.u) str(gone)
    tcp-response content unset-var(txn.u)
    tcp-response content accept if { res.len ge 5 }",
        parts: &[b"HE", b"LLO"],
        read: true,
        send: true,
    },
    Case {
        label: "res.payload_lv and an unless condition",
        rules: "tcp-response inspect-delay 5s
    tcp-response content set-var(txn.l) res.payload_lv(0,1),length
    tcp-response content reject unless { res.payload_lv(0,1) -m str abc }",
        parts: &[b"\x03a", b"bcdef"],
        read: true,
        send: true,
    },
    Case {
        label: "set-log-level and the counters of a tracked source",
        // Tracked only for a client that sent something: the readiness
        // probes, which send nothing, leave the counters alone.
        rules: "tcp-request inspect-delay 5s
    tcp-request content track-sc0 src table t if { req.len gt 0 }
    tcp-response content sc-inc-gpc0(0)
    tcp-response content sc-set-gpt0(0) 42
    tcp-response content set-log-level err
    tcp-response content accept",
        parts: &[b"HELLO"],
        read: true,
        send: true,
    },
    Case {
        label: "set-log-level silent",
        rules: "tcp-response content set-log-level silent",
        parts: &[b"HELLO"],
        read: true,
        send: true,
    },
    Case {
        label: "silent-drop",
        rules: "tcp-response inspect-delay 5s
    tcp-response content silent-drop if { res.payload(0,3) -m str HEL }",
        parts: &[b"HELLO"],
        read: false,
        send: true,
    },
];

/// The configuration of `cases`: one `listen` section each.
fn config(cases: &[Case], mode: &str, format: &str) -> String {
    let mut cfg = format!(
        "global
    log {{log}} local0
    stats socket {{stats}} level admin
defaults
    mode {mode}
    log global
    log-format \"{format}\"
    timeout connect 5s
    timeout client 5s
    timeout server 5s
backend t
    stick-table type ip size 10 store gpc0,gpt0
"
    );
    for (i, c) in cases.iter().enumerate() {
        cfg.push_str(&format!(
            "listen l{i}\n    bind {{fe{i}}}\n    {}\n    server s1 {{srv{i}}}\n",
            c.rules
        ));
    }
    cfg
}

/// Runs every case on haproxy and sluice and compares the client's bytes,
/// the log lines and the denial counters.
async fn compare(cases: &[Case], mode: &str, format: &str, req: &[u8]) {
    if !haproxy::available() {
        return;
    }
    let http = mode == "http";
    let mut servers = Vec::new();
    for c in cases {
        let parts = c.parts.iter().map(|p| p.to_vec()).collect();
        servers.push(parted_server(parts, http).await);
    }
    let cfg = config(cases, mode, format);
    let mut diffs = Differences::default();
    let mut seen: [Vec<(Vec<u8>, Vec<String>)>; 2] = Default::default();
    for (k, hap) in [true, false].into_iter().enumerate() {
        let side = Side::start(hap, &cfg, &servers);
        let mut silenced = Vec::new();
        for (i, c) in cases.iter().enumerate() {
            // The counters move by what this client does (the readiness
            // probes count too).
            let before = denials(&side.stats, i).await;
            let req = if c.send { req } else { b"" };
            let (got, port, held) = client(side.fronts[i].addr(), req, c.read).await;
            // A silenced line is looked for once all are there.
            let lines = if c.rules.ends_with("silent") {
                silenced.push(port);
                Vec::new()
            } else {
                vec![line_of(&side.log, port)]
            };
            drop(held);
            let after = denials(&side.stats, i).await;
            let moved: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
            seen[k].push((got, lines));
            seen[k][i]
                .1
                .push(format!("dreq, dresp, srv dresp: {moved:?}"));
        }
        // A silenced line stays silent.
        let late: Vec<String> = side
            .log
            .quiet(Duration::from_millis(300))
            .into_iter()
            .filter(|l| silenced.iter().any(|p| l.contains(&format!(":{p} "))))
            .collect();
        diffs.compare(
            format!("{mode}: silenced lines"),
            &Vec::<String>::new(),
            &late,
        );
    }
    for (i, c) in cases.iter().enumerate() {
        let (h, s) = (&seen[0][i], &seen[1][i]);
        diffs.compare(
            format!("{mode}: {} (client's bytes)", c.label),
            &String::from_utf8_lossy(&h.0),
            &String::from_utf8_lossy(&s.0),
        );
        diffs.compare(format!("{mode}: {} (log, counters)", c.label), &h.1, &s.1);
    }
    diffs.assert_none();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_mode_rules_as_haproxy() {
    compare(
        TCP_CASES,
        "tcp",
        "%ci:%cp %f %b/%s %ts %B %U [%[var(txn.l)]] [%[var(res.m)]] [%[var(sess.s)]] [%[var(txn.u)]] [%[sc0_get_gpc0]] [%[sc0_get_gpt0]]",
        b"hello\n",
    )
    .await;
}

const HTTP_CASES: &[Case] = &[
    Case {
        label: "reject before the response head",
        rules: "tcp-response content reject",
        parts: &[b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"],
        read: true,
        send: true,
    },
    Case {
        label: "close: the server's side gone, 502",
        rules: "tcp-response content close",
        parts: &[b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"],
        read: true,
        send: true,
    },
    Case {
        label: "accept, variables for the response's rules and the log",
        rules: "tcp-response content set-var(res.m) str(M)
    tcp-response content set-var(txn.t) str(T)
    tcp-response content accept
    http-response set-header x-m %[var(res.m)]",
        parts: &[b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"],
        read: true,
        send: true,
    },
    Case {
        label: "silent-drop",
        rules: "tcp-response content silent-drop",
        parts: &[b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"],
        read: false,
        send: true,
    },
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_mode_rules_run_before_the_response_head() {
    compare(
        HTTP_CASES,
        "http",
        "%ci:%cp %f %b/%s %ST %B %tsc Tr=%Tr [%[var(res.m)]] [%[var(txn.t)]]",
        b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    )
    .await;
}

/// `tcp-request content set-log-level` sets the line's priority;
/// `set-mark`, `set-tos` and `set-nice` are taken in every place HAProxy
/// takes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_request_settings_as_haproxy() {
    const CASES: &[Case] = &[Case {
        label: "tcp-request content set-log-level, set-mark, set-tos, set-nice",
        rules: "tcp-request content set-log-level warning
    tcp-request content set-mark 0x10
    tcp-request content set-tos 0x20
    tcp-request content set-nice 5
    tcp-request connection set-tos 8
    tcp-request session set-mark 7",
        parts: &[b"HELLO"],
        read: true,
        send: true,
    }];
    let text = config(CASES, "tcp", "%ci:%cp %b/%s %ts %B %U").replace(
        "    bind {fe0}\n",
        "    bind {fe0}\n    tcp-request connection set-mark 3\n",
    );
    if !haproxy::available() {
        return;
    }
    let srv = parted_server(vec![b"HELLO".to_vec()], false).await;
    let mut lines = Vec::new();
    for hap in [true, false] {
        let side = Side::start(hap, &text, &[srv]);
        let (got, port, _) = client(side.fronts[0].addr(), b"hi\n", true).await;
        assert_eq!(got, b"HELLO");
        lines.push(line_of(&side.log, port));
    }
    assert_eq!(lines[0], lines[1]);
    assert!(lines[1].starts_with("<132> "), "{}", lines[1]);
}

/// `tcp-request connection expect-proxy layer4`: a PROXY header read
/// first from the clients the condition names, its addresses then those
/// of the session (`%ci`, `src`), the real peer still `fc_src`; another
/// frontend without the rule relays the header as data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expect_proxy_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let text = "global
    log {log} local0
    stats socket {stats} level admin
defaults
    mode tcp
    log global
    log-format \"%[fc_src]:%[fc_src_port] %ci:%cp %[src] %f %ts %B %U\"
    timeout connect 5s
    timeout client 5s
    timeout server 5s
listen l0
    bind {fe0}
    tcp-request connection expect-proxy layer4 if { src 127.0.0.1 }
    server s1 {srv0}
listen l1
    bind {fe1}
    tcp-request connection expect-proxy layer4 if { src 10.0.0.0/8 }
    server s1 {srv1}
";
    // The server answers once it has the client's line: the header's
    // own line, where it is relayed.
    let srv = parted_server(vec![b"HELLO".to_vec()], false).await;
    let req = b"PROXY TCP4 1.2.3.4 5.6.7.8 1111 2222\r\nhello\n";
    let mut seen: Vec<Vec<String>> = Vec::new();
    for hap in [true, false] {
        let side = Side::start(hap, text, &[srv, srv]);
        let mut got = Vec::new();
        for front in &side.fronts {
            let (answer, port, _) = client(front.addr(), req, true).await;
            let mask = format!("{{}}: 127.0.0.1:{port} {{}}");
            let lines = side.log.until(&[&mask]);
            let line = lines
                .iter()
                .find(|l| support::syslog::matches(&mask, l))
                .expect("the line");
            got.push(String::from_utf8_lossy(&answer).into_owned());
            got.push(pri_and_msg(line).replace(&format!(":{port} "), ":<port> "));
        }
        seen.push(got);
    }
    assert_eq!(seen[0], seen[1]);
    assert!(
        seen[1][1].contains(" 1.2.3.4:1111 1.2.3.4 l0 "),
        "{:?}",
        seen[1]
    );
}

/// `set-src`, `set-src-port`, `set-dst`, `set-dst-port` in `tcp-request
/// connection`, `session` and `content` rules (mode tcp and http): the
/// addresses the log line and the later rules see.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_addresses_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let text = "global
    log {log} local0
    stats socket {stats} level admin
defaults
    mode tcp
    log global
    # The readiness probes send nothing: no line.
    option dontlognull
    log-format \"%f %ci %fi:%fp [%[src]] [%[dst]] [%[dst_port]] [%[var(txn.s)]] %ts %U\"
    timeout connect 5s
    timeout client 5s
    timeout server 5s
listen l0
    bind {fe0}
    tcp-request connection set-src ipv4(10.1.2.3)
    tcp-request connection set-src-port int(4444)
    tcp-request content set-var(txn.s) src_port
    server s1 {srv0}
listen l1
    bind {fe1}
    tcp-request session set-dst ipv4(10.9.9.9)
    tcp-request session set-dst-port int(8080)
    server s1 {srv1}
listen l2
    bind {fe2}
    tcp-request content set-src ipv4(192.168.1.1)
    tcp-request content set-var(txn.s) src
    tcp-request content set-dst-port int(81)
    server s1 {srv2}
listen l3
    mode http
    bind {fe3}
    tcp-request content set-src ipv4(10.7.7.7)
    tcp-request content set-dst ipv4(10.8.8.8)
    http-request set-var(txn.s) src
    server s1 {srv3}
";
    let srv = parted_server(vec![b"HELLO".to_vec()], false).await;
    let http = parted_server(
        vec![b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".to_vec()],
        true,
    )
    .await;
    let mut seen: Vec<Vec<String>> = Vec::new();
    for hap in [true, false] {
        let side = Side::start(hap, text, &[srv, srv, srv, http]);
        let mut got = Vec::new();
        for (i, front) in side.fronts.iter().enumerate() {
            let req: &[u8] = if i == 3 {
                b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
            } else {
                b"hello\n"
            };
            let (answer, _, _) = client(front.addr(), req, true).await;
            let mask = format!("{{}}]: l{i} {{}}");
            let line = side.log.until(&[&mask]).pop().expect("the line");
            // The listeners' ports differ between the two runs.
            let line = pri_and_msg(&line)
                .replace(&format!(":{} ", front.port()), ":<fe> ")
                .replace(&format!("[{}]", front.port()), "[<fe>]");
            got.push(format!("{} {line}", String::from_utf8_lossy(&answer).len()));
        }
        seen.push(got);
    }
    assert_eq!(seen[0], seen[1]);
    assert!(seen[1][2].contains("[192.168.1.1]"), "{:?}", seen[1]);
}

/// `tcp-request content capture <expr> len <n>`: the request capture
/// slots of the log line (`%hr`, `capture.req.hdr(<n>)`), in mode tcp on
/// the bytes the client sent, in mode http beside a `capture request
/// header` (where HAProxy's request buffer holds no raw bytes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let text = "global
    log {log} local0
    stats socket {stats} level admin
defaults
    mode tcp
    log global
    option dontlognull
    log-format \"%f [%hr] [%[capture.req.hdr(0)]] [%[capture.req.hdr(1)]] [%[capture.req.hdr(2)]] %U\"
    timeout connect 5s
    timeout client 5s
    timeout server 5s
listen l0
    bind {fe0}
    tcp-request inspect-delay 2s
    tcp-request content capture req.payload(0,4) len 10
    tcp-request content capture str(abcdefgh) len 3
    tcp-request content capture str(never) len 5 if { src 10.0.0.1 }
    server s1 {srv0}
listen l1
    mode http
    bind {fe1}
    capture request header host len 10
    tcp-request content capture str(abcdefgh) len 3
    tcp-request content capture req.payload(0,2) len 4
    server s1 {srv1}
";
    let srv = parted_server(vec![b"HELLO".to_vec()], false).await;
    let http = parted_server(
        vec![b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".to_vec()],
        true,
    )
    .await;
    let mut seen: Vec<Vec<String>> = Vec::new();
    for hap in [true, false] {
        let side = Side::start(hap, text, &[srv, http]);
        let mut got = Vec::new();
        for (i, front) in side.fronts.iter().enumerate() {
            let req: &[u8] = if i == 1 {
                b"GET / HTTP/1.1\r\nhost: example.org\r\nconnection: close\r\n\r\n"
            } else {
                b"hello\n"
            };
            let (answer, _, _) = client(front.addr(), req, true).await;
            let mask = format!("{{}}]: l{i} {{}}");
            let line = side.log.until(&[&mask]).pop().expect("the line");
            got.push(format!("{} {}", answer.len(), pri_and_msg(&line)));
        }
        seen.push(got);
    }
    assert_eq!(seen[0], seen[1]);
    assert!(seen[1][0].contains("[{hell|abc|}]"), "{:?}", seen[1]);
}

/// `haproxy -c` and `sluice -c` on each misuse: the same exit code and the
/// same alerts and warnings.
#[test]
fn check_messages_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    const HEAD: &str = "defaults
    mode tcp
    timeout connect 1s
    timeout client 1s
    timeout server 1s
";
    let lines = [
        "tcp-response inspect-delay",
        "tcp-response inspect-delay 1x",
        "tcp-response inspect-delay 2s\n    tcp-response inspect-delay 0",
        "tcp-response inspect-delay 1s 2",
        "tcp-response content",
        "tcp-response content accept foo",
        "tcp-response content reject if",
        "tcp-response content reject unless",
        "tcp-response content set-var(txn.x)",
        "tcp-response content set-var(txn.x) req.len",
        "tcp-response content set-var(txn.x) nosuch",
        "tcp-response content set-var(txn.x) res.len foo",
        "tcp-response content unset-var(txn.x) 3",
        "tcp-response content set-log-level foo",
        "tcp-response content set-mark zz",
        "tcp-response content set-tos",
        "tcp-response content set-nice",
        "tcp-response content sc-inc-gpc0(5)",
        "tcp-response content sc-inc-gpc(1,0)",
        "tcp-response content sc-set-gpt(0,1) 3",
        "tcp-response content close if { nosuch }",
        "tcp-response content silent-drop extra",
        "tcp-response content track-sc0 src",
        "tcp-response content foo",
        "tcp-response foo",
        "tcp-response",
        "tcp-response content accept if { req.len gt 0 }",
        "tcp-response content accept if { path / }",
        "acl a1 req.len gt 0\n    tcp-response content accept if a1",
        "acl a2 req.len gt 0\n    acl a2 res.len gt 0\n    tcp-response content accept if a2",
        "tcp-response content accept if { res.ssl_hello_type 2 } || { rep_ssl_hello_type 2 }",
        "tcp-request content set-mark",
        "tcp-request content set-log-level info extra",
        "tcp-request connection set-log-level err",
        "tcp-request session set-nice 3",
        "tcp-request content use-service foo",
        "tcp-request content use-service prometheus-exporter",
        "tcp-request content use-service",
        "tcp-request content set-src",
        "tcp-request content set-src nosuch",
        "tcp-request content set-src src foo",
        "tcp-request content set-dst-port hdr(x)",
        "tcp-request content capture src len 3",
    ];
    let mut cases: Vec<(String, String)> = lines
        .iter()
        .map(|l| {
            (
                format!("backend: {l}"),
                format!("{HEAD}backend b\n    {l}\n    server s 127.0.0.1:1\n"),
            )
        })
        .collect();
    // Frontend-only actions.
    for l in [
        "tcp-request connection expect-proxy",
        "tcp-request connection expect-proxy layer5",
        "tcp-request connection expect-proxy layer4 foo",
        "tcp-request connection expect-proxy layer4 if { src 10.0.0.1 }",
        "tcp-request content expect-proxy layer4",
        "tcp-request session expect-proxy layer4",
        "tcp-request content capture",
        "tcp-request content capture nosuch len 3",
        "tcp-request content capture res.len len 3",
        "tcp-request content capture src len 3 foo",
        "tcp-request content capture src len -1",
        "tcp-request content capture src id 1",
        "tcp-request connection capture src len 4",
        "tcp-request session capture src len 4",
        // Rule sets out of their order.
        "tcp-request content accept\n    tcp-request session accept\n    tcp-request connection accept\n    tcp-request session accept\n    tcp-request connection accept",
    ] {
        cases.push((
            format!("frontend: {l}"),
            format!("{HEAD}frontend f\n    bind 127.0.0.1:39999\n    {l}\n"),
        ));
    }
    // The places the rules may not be.
    for (label, cfg) in [
        (
            "frontend",
            "frontend f\n    bind 127.0.0.1:39999\n    tcp-response content accept\n    tcp-response inspect-delay 1s\n",
        ),
        (
            "anonymous defaults",
            "defaults\n    tcp-response content accept\n    tcp-response inspect-delay 1s\n",
        ),
        (
            "mode http: L6 fetches",
            "backend h\n    mode http\n    tcp-response inspect-delay 1s\n    tcp-response content reject if { res.len gt 3 }\n    server s 127.0.0.1:1\n",
        ),
    ] {
        cases.push((label.to_string(), format!("{HEAD}{cfg}")));
    }
    haproxy::assert_check_agrees("tcpresp-check", cases, haproxy::config_messages);
}
