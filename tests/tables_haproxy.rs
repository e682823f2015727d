//! Stick tables against the real HAProxy 2.6: the same configurations
//! checked by both (`-c`: exit code and the first alert or warning, word
//! for word), the same CLI commands (`show table`, `clear table`, `set
//! table`) answered alike, and the same traffic counted alike in the
//! tables, as the `sc_*`, `src_*` and `table_*` samples and `show table`
//! read them.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;
use support::cli_blocking as cli;

use support::haproxy::{self, Haproxy};
use support::*;

/// The first alert (else warning) of a `-c` run, without the process id
/// (which differs) and the `config : ` tag, the configuration's path
/// masked (each program reads its own file): what the checks compare.
fn first_diag(stderr: &str) -> String {
    let path = regex::Regex::new(r"/tmp/[^:]*\.cfg").expect("regex");
    let pick = |tag: &str| {
        stderr.lines().find(|l| l.starts_with(tag)).map(|l| {
            let m = l.split_once(" : config : ").map_or(l, |(_, m)| m);
            path.replace_all(m, "CFG").into_owned()
        })
    };
    pick("[ALERT]")
        .or_else(|| pick("[WARNING]"))
        .unwrap_or_else(|| "(clean)".to_string())
}

/// A frontend with a table and a backend with another, `line` in the
/// backend.
fn in_backend(line: &str) -> String {
    format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind 127.0.0.1:9
    stick-table type ip size 10 store gpc0
    default_backend be
backend be
    stick-table type string size 10 store conn_cnt
    {line}
    server s1 127.0.0.1:9
"
    )
}

/// `line` alone in a backend.
fn alone(line: &str) -> String {
    format!("backend b2\n    {line}\n")
}

const BACKEND_LINES: &[&str] = &[
    "stick on src",
    "stick on",
    "stick foo",
    "stick on src table",
    "stick on src foo",
    "stick on nosuch",
    "stick store-response req.hdr(x)",
    "stick match res.hdr(x)",
    "stick on src table nope",
    "stick on str(a),bytes(1)",
    "stick on src if TRUE foo",
    "stick store src",
    "stick match src unless { path /x }",
    "server s2 127.0.0.1:9 non-stick",
    "default-server non-stick",
    "default-server non-stick\n    server s3 127.0.0.1:9 stick",
    "server s2 127.0.0.1:9 non-stick foo",
    "stick on src table fe",
    "stick-table type ip size 10",
    "http-request track-sc0",
    "http-request track-sc3 src",
    "http-request track-scx src",
    "http-request track-sc0 src table",
    "http-request track-sc0 src table nope",
    "http-request track-sc0 res.hdr(x)",
    "http-request track-sc0 src foo",
    "http-request track-sc0 req.hdr(x) table be",
    "http-request track-sc0 str(x),bytes(1) table fe",
    "http-request sc-inc-gpc0",
    "http-request sc-inc-gpc0(1)",
    "http-request sc-inc-gpc0(3)",
    "http-request sc-inc-gpc0(x)",
    "http-request sc-inc-gpc0x",
    "http-request sc-inc-gpc(1,2)",
    "http-request sc-inc-gpc(1)",
    "http-request sc-inc-gpc(x,1)",
    "http-request sc-inc-gpc(1,5)",
    "http-request sc-inc-gpc2",
    "http-request sc-set-gpt0 1",
    "http-request sc-set-gpt0(1) req.hdr(x)",
    "http-request sc-set-gpt0",
    "http-request sc-set-gpt(2,1) 5",
    "http-request sc-set-gpt(2) 5",
    "http-request sc-set-gpt0 res.hdr(x)",
    "http-request sc-inc-gpc0 foo",
    "http-request silent-drop",
    "http-response track-sc0 src",
    "http-response sc-inc-gpc1(2)",
    "http-response sc-set-gpt0(1) status",
    "tcp-request content track-sc5 src",
    "tcp-request content track-sc0 src table",
    "tcp-request content track-sc0 src foo",
    "tcp-request content sc-inc-gpc0(9)",
    "tcp-request content track-sc2 src table fe",
    "http-request set-var(txn.x) src_conn_cur",
    "http-request set-var(txn.x) src_conn_cur()",
    "http-request set-var(txn.x) src_get_gpc(0)",
    "http-request set-var(txn.x) src_get_gpc(0,)",
    "http-request set-var(txn.x) sc_conn_cur",
    "http-request set-var(txn.x) sc_conn_cur(0,nope)",
    "http-request set-var(txn.x) sc0_conn_cur(nope)",
    "http-request set-var(txn.x) src_conn_cur(nope)",
    "http-request set-var(txn.x) sc_get_gpc(1)",
    "http-request set-var(txn.x) table_cnt(fe)",
    "http-request set-var(txn.x) str(a),in_table(nope)",
    "http-request set-var(txn.x) src,table_gpc(1)",
    "http-request set-var(txn.x) src,table_http_req_rate(fe)",
    "acl x src_conn_cur(nope) gt 1",
    "http-request deny if { sc0_http_req_rate(nope) gt 1 }",
];

const FRONTEND_LINES: &[&str] = &[
    "tcp-request connection track-sc0",
    "tcp-request connection track-sc5 src",
    "tcp-request connection track-sc0 req.hdr(x)",
    "tcp-request connection track-sc0 src table",
    "tcp-request connection track-sc0 src foo",
    "tcp-request session track-sc1 src",
    "tcp-request session sc-inc-gpc1",
    "tcp-request content track-sc2 src table be",
    "tcp-request connection sc-inc-gpc0(9)",
    "tcp-request connection sc-set-gpt0 req.hdr(x)",
    "tcp-request connection sc-set-gpt0 42",
    "tcp-request connection silent-drop",
    "tcp-request connection silent-drop foo",
    "tcp-request connection reject if { src_conn_rate gt 10 }",
    "tcp-request connection track-sc0 src,ipmask(24)",
];

const TABLE_LINES: &[&str] = &[
    "stick-table type ip size 0",
    "stick-table type ip",
    "stick-table size 10",
    "stick-table type foo size 1",
    "stick-table type string len 0 size 1",
    "stick-table type string len x size 1",
    "stick-table type ip size 10x",
    "stick-table type ip size 5000000000",
    "stick-table type ip size 1k expire 30x",
    "stick-table type ip size 1k expire 99999999999",
    "stick-table type ip size 1k store foo",
    "stick-table type ip size 1k store gpc0,gpc0",
    "stick-table type ip size 1k store gpc0(1)",
    "stick-table type ip size 1k store conn_rate",
    "stick-table type ip size 1k store conn_rate(1x)",
    "stick-table type ip size 1k store gpc(0)",
    "stick-table type ip size 1k store gpc(101)",
    "stick-table type ip size 1k store gpc_rate(2)",
    "stick-table type ip size 1k store gpc(2",
    "stick-table type ip size 1k srvkey foo",
    "stick-table type ip size 1k foo",
    "stick-table type ip size 1k store gpt(2),gpt0",
    "stick-table type ip size 1k store gpc(2),gpc1",
    "stick-table type ip size 1k store gpc_rate(2,1s),gpc1_rate(1s)",
    "stick-table type ip size 1k peers",
    "stick-table type ip size 1k nopurge store",
    "stick-table type ip size 1k store server_name",
    "stick-table type ip size 1k expire",
    "stick-table type",
    "stick-table type string len",
    "stick-table type ip size 1k store gpc0()",
    "stick-table type ip size 1k store conn_rate()",
    "stick-table type ip size 1k expire 5s expire 0",
    "stick-table type ip size 1k store conn_rate(99999999999)",
    "stick-table type binary len 8 size 1m store gpc(3),gpc_rate(3,1m),gpt(2),http_req_rate(1s) srvkey addr",
    "stick-table type ipv6 size 1g store bytes_in_cnt,bytes_out_rate(1h),http_fail_cnt,http_fail_rate(5s),sess_cnt,sess_rate(1m) nopurge",
];

/// `peers` sections, tables in them, and the host's name (the local peer
/// a section needs) read at run time.
fn peers_configs() -> Vec<(String, String)> {
    let host = {
        let out = std::process::Command::new("hostname")
            .output()
            .expect("hostname");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let head = "defaults\n    mode http\n    timeout connect 5s\n    timeout client 5s\n    timeout server 5s\n";
    let cases = [
        (
            "peers without the local peer",
            "peers mypeers\n    peer other 127.0.0.1:9\n    table t1 type ip size 10 expire 10s store gpc0\nfrontend fe\n    bind 127.0.0.1:9\n    stick-table type ip size 10 peers mypeers\n    http-request track-sc0 src table mypeers/t1\n".to_string(),
        ),
        (
            "peers with the local peer",
            format!("peers p\n    peer {host} 127.0.0.1:9\n    peer x 127.0.0.1:9\n    table t2 type string len 16 size 1k store gpc0,http_req_rate(1m)\nbackend be\n    stick-table type ip size 10 peers p\n    stick on src table p/t2\n    server s1 127.0.0.1:9\n"),
        ),
        (
            "unknown peers section",
            "frontend fe\n    bind 127.0.0.1:9\n    stick-table type ip size 10 peers nope\n".to_string(),
        ),
        (
            "table name conflict with a peers table",
            "peers p\n    table fe type ip size 1\nfrontend fe\n    bind 127.0.0.1:9\n    stick-table type ip size 10\n".to_string(),
        ),
        (
            "unknown keyword in peers",
            "peers p\n    foo bar\n".to_string(),
        ),
        (
            "duplicate peers section",
            "peers p\n    disabled\npeers p\n    enabled\n".to_string(),
        ),
        (
            "peers table errors",
            "peers p\n    table t1 type ip\n".to_string(),
        ),
        (
            "stick-table in defaults",
            "defaults\n    stick-table type ip size 1\n".to_string(),
        ),
        (
            "localpeer",
            format!("global\n    localpeer {host}x\npeers p\n    peer {host}x 127.0.0.1:9\n"),
        ),
    ];
    cases
        .into_iter()
        .map(|(label, cfg)| (label.to_string(), format!("{head}{cfg}")))
        .collect()
}

#[test]
fn configurations_checked_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let cases = (BACKEND_LINES.iter().map(|l| (l.to_string(), in_backend(l))))
        .chain(FRONTEND_LINES.iter().map(|l| {
            let cfg = in_backend("").replace(
                "    stick-table type ip size 10 store gpc0\n",
                &format!("    stick-table type ip size 10 store gpc0\n    {l}\n"),
            );
            (format!("frontend: {l}"), cfg)
        }))
        .chain(TABLE_LINES.iter().map(|l| (l.to_string(), alone(l))))
        .chain(peers_configs());
    haproxy::assert_check_agrees("tables-check", cases, first_diag);
}

/// Tables of every key type, an IP one storing every data type (arrays
/// included) and a little one (4 entries).
fn cli_config(sock: &std::path::Path, binds: [&str; 2]) -> String {
    format!(
        "global
    stats socket {} level admin
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {}
    stick-table type ip size 4 expire 30s store http_req_rate(1m),conn_cur,conn_cnt,gpc(2),gpc_rate(2,5s),gpt(2),bytes_in_cnt,http_err_cnt,server_id,server_key
backend b2
    stick-table type string len 8 size 10 store gpc0
backend b3
    stick-table type integer size 10 store gpt0,sess_rate(1m)
backend b6
    stick-table type ipv6 size 10 store gpc1,gpc1_rate(1m),bytes_out_cnt,http_fail_rate(1m)
frontend f9
    bind {}
    stick-table type binary len 4 size 10 store gpc1
",
        sock.display(),
        binds[0],
        binds[1]
    )
}

/// The commands, in order (they change the tables).
const CLI_LINES: &[&str] = &[
    "show table",
    "show table fe",
    "show table nope",
    "set table fe key 10.0.0.1 data.gpc0 5 data.http_req_rate 7 data.gpt1 3",
    "set table fe key 10.0.0.2 data.conn_cnt 2 data.http_req_rate 7 data.gpt 3",
    "set table fe key 300.1.1",
    "set table fe key 10.0.0.3 data.nope 1",
    "set table fe key 10.0.0.3 data.conn_cnt x",
    "set table fe key 10.0.0.3 data.conn_cnt",
    "set table fe key 10.0.0.3 foo 1",
    "set table fe key 10.0.0.4 data.sess_cnt 1",
    "show table fe",
    "show table fe key 10.0.0.2",
    "show table fe key 10.0.0.9",
    "show table fe key",
    "show table fe data.conn_cnt gt 1",
    "show table fe data.conn_cnt gt 1 data.http_req_rate eq 7",
    "show table fe data.conn_cnt xx 1",
    "show table fe data.foo gt 1",
    "show table fe data.sess_cnt gt 1",
    "show table fe data.conn_cnt gt x",
    "show table fe data.conn_cnt gt 1 foo",
    "show table fe data.conn_cnt ge 0 data.conn_cnt ge 0 data.conn_cnt ge 0 data.conn_cnt ge 0 data.conn_cnt",
    "show table fe foo",
    "user; show table fe",
    "user; show table fe key 10.0.0.2",
    "user; clear table fe key 10.0.0.2",
    "operator; show table fe key 10.0.0.2",
    "clear table fe key 10.0.0.2",
    "show table fe",
    "set table fe key 10.0.0.5",
    "set table fe key 10.0.0.6",
    "show table fe",
    "set table b2 key abc data.gpc0 1",
    "set table b2 key a\\ b=c data.gpc0 2",
    "set table b2 key 0123456789abc data.gpc0 3",
    "show table b2",
    "show table b2 key 01234567zz",
    "set table b3 key 5 data.gpt0 1 data.sess_rate 9",
    "set table b3 key 256",
    "set table b3 key 99999999999",
    "set table b3 key -1",
    "set table b3 key x",
    "show table b3",
    "set table b6 key ::1 data.gpc1 4 data.gpc1_rate 2 data.bytes_out_cnt 12345678901 data.http_fail_rate 3",
    "set table b6 key ::1.2.3.4",
    "set table b6 key 2001:db8::1",
    "set table b6 key zz",
    "show table b6",
    "set table f9 key 00",
    "show table f9 key 00",
    "clear table f9 key 00",
    "clear table",
    "clear table fe data.conn_cnt eq 2",
    "show table fe",
    "set table fe",
    "set table fe data.conn_cnt 1",
    "clear table fe foo",
    "clear table b3",
    "show table b3",
    "show table f9",
];

/// `show table` starts each entry with the address of HAProxy's entry in
/// its memory and gives its time to live in milliseconds (which moves
/// while the commands run): both words are masked.
fn mask(reply: &str) -> String {
    reply
        .split_inclusive('\n')
        .map(|l| {
            let l = match l.split_once(": key=") {
                Some((p, rest)) if p.starts_with("0x") => format!("0xPTR: key={rest}"),
                _ => l.to_string(),
            };
            l.split(' ')
                .map(|w| if w.starts_with("exp=") { "exp=X" } else { w })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_commands_answer_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("tables-cli");
    let (hsock, ssock) = (dir.join("h.sock"), dir.join("s.sock"));
    let fronts = listens(4);
    let hb = [fronts[0].to_string(), fronts[1].to_string()];
    let sb = [fronts[2].to_string(), fronts[3].to_string()];
    let _hap = Haproxy::start(
        "tables-cli",
        &cli_config(&hsock, [&hb[0], &hb[1]]),
        &[&fronts[0], &fronts[1]],
    );
    let _sl = Sluice::start(&cli_config(&ssock, [&sb[0], &sb[1]]));
    let mut diffs = haproxy::Differences::default();
    for line in CLI_LINES {
        let (h, s) = (mask(&cli(&hsock, line)), mask(&cli(&ssock, line)));
        diffs.compare(line, &h, &s);
    }
    diffs.assert_none();
}

/// Every counter a request can move, tracked three ways (a session
/// counter from `tcp-request session`, a request counter from
/// `http-request track-sc0`, and a response counter from `http-response
/// track-sc2`), a server scripted to answer each status class, and a TCP
/// proxy tracking its connections; `/show` answers what the samples
/// read.
fn traffic_config(sock: &std::path::Path, binds: [&str; 3], server: &str) -> String {
    format!(
        "global
    stats socket {} level admin
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend web
    bind {}
    bind {} proto h2
    stick-table type ip size 100 expire 1m store conn_cnt,conn_cur,sess_cnt,sess_rate(1m),http_req_cnt,http_req_rate(1m),http_err_cnt,http_err_rate(1m),http_fail_cnt,http_fail_rate(1m),bytes_in_cnt,bytes_out_cnt,gpc(2),gpc_rate(2,10s),gpt(2)
    tcp-request session track-sc1 src
    http-request track-sc0 src
    http-request sc-inc-gpc0 if {{ path /inc }}
    http-request sc-inc-gpc(1,1) if {{ path /inc }}
    http-request sc-set-gpt0 req.hdr(x-gpt),add(1) if {{ req.hdr(x-gpt) -m found }}
    http-request sc-set-gpt(1,0) 42 if {{ path /inc }}
    http-request deny deny_status 429 if {{ path /deny }}
    http-request return status 200 content-type text/plain lf-string \"c=%[sc_conn_cnt(0)] cur=%[sc0_conn_cur] s=%[sc1_sess_cnt] sr=%[sc_sess_rate(1)] r=%[sc_http_req_cnt(0)] rr=%[sc0_http_req_rate] e=%[sc_http_err_cnt(1)] er=%[sc_http_err_rate(0)] f=%[sc_http_fail_cnt(0)] fr=%[sc1_http_fail_rate] g=%[sc_get_gpc0(0)] gr=%[sc_gpc0_rate(0)] g1=%[sc_get_gpc(1,0)] t=%[sc_get_gpt0(0)] t1=%[sc_get_gpt(1,1)] tr=%[sc0_trackers]/%[sc_trackers(1)] src=%[src_http_req_cnt]/%[src_get_gpc0(web)] tab=%[src,table_http_req_cnt(web)]/%[src,table_trackers(web)] in=%[src,in_table(web)]/%[str(1.2.3.4),in_table(web)] n=%[table_cnt(web)]/%[table_avl(web)] trk=%[sc2_tracked]\\n\" if {{ path /show }}
    default_backend app
backend app
    http-response track-sc2 src table web
    http-response sc-inc-gpc1(2) if {{ status 404 }}
    server s1 {server}
frontend tcpfe
    mode tcp
    bind {}
    tcp-request connection track-sc0 src table tcp
    default_backend app_tcp
backend app_tcp
    mode tcp
    server s1 {server}
backend tcp
    stick-table type ip size 10 store conn_cnt,conn_cur,conn_rate(1m),sess_cnt,bytes_in_cnt,bytes_out_cnt,http_req_cnt
",
        sock.display(),
        binds[0],
        binds[1],
        binds[2]
    )
}

/// `show table` as compared here: the bytes counters masked too, as
/// HAProxy 2.6 counts the size of its internal form of the messages and
/// sluice the bytes on the wire (the same difference as `show stat`'s
/// `bin` and `bout`).
fn mask_traffic(reply: &str) -> String {
    mask(reply)
        .split(' ')
        .map(|w| match w.split_once('=') {
            Some((k, _)) if k.starts_with("bytes_") => format!("{k}=N"),
            _ => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// An HTTP/2 request with prior knowledge, by curl.
fn h2_get(addr: std::net::SocketAddr, path: &str) -> String {
    let out = std::process::Command::new("curl")
        .args(["-s", "--http2-prior-knowledge"])
        .arg(format!("http://{addr}{path}"))
        .output()
        .expect("curl");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traffic_counts_as_haproxy() {
    use support::raw::RawBackend;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("tables-traffic");
    let (hsock, ssock) = (dir.join("h.sock"), dir.join("s.sock"));
    let servers = [RawBackend::start().await, RawBackend::start().await];
    let fronts = listens(6);
    let names: Vec<String> = fronts.iter().map(ToString::to_string).collect();
    let _hap = Haproxy::start(
        "tables-traffic",
        &traffic_config(
            &hsock,
            [&names[0], &names[1], &names[2]],
            &servers[0].addr.to_string(),
        ),
        &[&fronts[0], &fronts[1], &fronts[2]],
    );
    let _sl = Sluice::start(&traffic_config(
        &ssock,
        [&names[3], &names[4], &names[5]],
        &servers[1].addr.to_string(),
    ));
    let mut diffs = haproxy::Differences::default();
    // Each status class from the server, then local answers, on one
    // keep-alive connection per proxy.
    let answers: &[&[u8]] = &[
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 501 No\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n",
    ];
    let paths = [
        "/a", "/b", "/c", "/d", "/e", "/show", "/inc", "/inc", "/deny", "/show",
    ];
    let mut got: [Vec<String>; 2] = Default::default();
    for (i, g) in got.iter_mut().enumerate() {
        servers[i].script(answers);
        let mut c = HttpConn::connect(fronts[i * 3].addr()).await;
        for p in paths {
            let r = c
                .raw(
                    format!("GET {p} HTTP/1.1\r\nhost: x\r\nx-gpt: 6\r\n\r\n").as_bytes(),
                    false,
                )
                .await
                .expect("answer");
            g.push(format!("{p} {} {}", r.status, r.text()));
        }
        // A server that answers no HTTP: a failure.
        servers[i].script(&[b"garbage\r\n\r\n"]);
        let r = request(fronts[i * 3].addr(), "GET", "/drop", b"").await;
        g.push(format!("/drop {}", r.status));
        // The same over HTTP/2, and a new connection's view.
        servers[i].answer(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        for p in ["/h2", "/show"] {
            g.push(h2_get(fronts[i * 3 + 1].addr(), p));
            // Each proxy ends the HTTP/2 connection (and releases what
            // its session tracked) on its own time once curl leaves.
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        g.push(
            request(fronts[i * 3].addr(), "GET", "/show", b"")
                .await
                .text(),
        );
        // Two TCP sessions through the TCP proxy (the server closes).
        servers[i].answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        servers[i].set_close_after(true);
        for _ in 0..2 {
            let mut s = tokio::net::TcpStream::connect(fronts[i * 3 + 2].addr())
                .await
                .expect("connect");
            s.write_all(b"GET / HTTP/1.0\r\n\r\n").await.expect("send");
            let mut out = Vec::new();
            s.read_to_end(&mut out).await.expect("answer");
            g.push(String::from_utf8_lossy(&out).into_owned());
        }
    }
    for (n, (h, s)) in got[0].iter().zip(&got[1]).enumerate() {
        diffs.compare(format!("exchange {n}"), h, s);
    }
    // A connection the client closed may still be ending in either proxy
    // (its counters still tracked): asked again for a while until the
    // replies agree.
    for line in ["show table", "show table web", "show table tcp"] {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let (h, s) = loop {
            let (h, s) = (
                mask_traffic(&cli(&hsock, line)),
                mask_traffic(&cli(&ssock, line)),
            );
            if h == s || std::time::Instant::now() > end {
                break (h, s);
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
        diffs.compare(line, &h, &s);
    }
    diffs.assert_none();
}

/// The Prometheus exporter's stick table metrics (`?scope=sticktable`,
/// and within the whole exposition): the same lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_metrics_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let cfg = |bind: &str| {
        format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
    stick-table type ip size 10 store gpc0
    http-request track-sc0 src
    http-request use-service prometheus-exporter if {{ path /metrics }}
backend b2
    stick-table type string len 8 size 20
peers p
    table t type integer size 1k
"
        )
    };
    let fronts = listens(2);
    let _hap = Haproxy::start("tables-prom", &cfg(&fronts[0].to_string()), &[&fronts[0]]);
    let _sl = Sluice::start(&cfg(&fronts[1].to_string()));
    let mut diffs = haproxy::Differences::default();
    for q in ["?scope=sticktable", "?scope=global&scope=sticktable", ""] {
        let mut got = Vec::new();
        for f in &fronts {
            let r = request(f.addr(), "GET", &format!("/metrics{q}"), b"").await;
            let lines: Vec<String> = r
                .text()
                .lines()
                .filter(|l| l.contains("sticktable"))
                .map(str::to_string)
                .collect();
            got.push(lines);
        }
        assert!(got[0].len() == 10, "haproxy's lines: {:?}", got[0]);
        diffs.compare(q, &got[0], &got[1]);
    }
    diffs.assert_none();
}

/// Stickiness from tables, on servers both proxies share (so that `srvkey
/// addr` keys match): `stick on` with a condition, `stick match` with
/// `store-request` under `option persist` and `option redispatch` (an
/// entry naming a server in maintenance whose port refuses), `srvkey
/// addr` with a `non-stick` server, `store-response`, TCP mode, a server
/// marked DOWN by its check and back, `stick match` alone (the client
/// comes back with its server), and a persistence cookie beside a table.
fn stick_config(sock: &std::path::Path, binds: [&str; 2], s: [&str; 4]) -> String {
    format!(
        "global
    stats socket {sock} level admin
defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {b0}
    use_backend persist if {{ path_beg /p }}
    use_backend addr if {{ path_beg /a }}
    use_backend resp if {{ path_beg /r }}
    use_backend chk if {{ path_beg /c }}
    use_backend m if {{ path_beg /m }}
    use_backend ck if {{ path_beg /k }}
    default_backend app
backend app
    balance roundrobin
    stick-table type string len 32 size 100 expire 1m
    stick on req.hdr(x-user) if {{ req.hdr(x-user) -m found }}
    server s1 {s1}
    server s2 {s2}
    server s3 {s3}
backend persist
    balance roundrobin
    option persist
    option redispatch
    retries 1
    stick-table type string len 32 size 100 expire 1m
    stick match req.hdr(x-user)
    stick store-request req.hdr(x-user)
    server s1 {s1}
    server s2 {s2}
    server s4 {dead} disabled
backend addr
    balance roundrobin
    stick-table type ip size 10 expire 1m srvkey addr
    stick on src
    server s1 {s1}
    server s2 {s2} non-stick
backend resp
    balance roundrobin
    stick-table type string len 16 size 10 expire 1m
    stick match req.hdr(x-b)
    stick store-response res.hdr(x-backend)
    server s1 {s1}
    server s2 {s2}
backend chk
    balance roundrobin
    stick-table type string len 16 size 10 expire 1m
    stick on req.hdr(x-user)
    server s1 {s1} check inter 100ms fall 1 rise 1
    server s3 {s3} check inter 100ms fall 1 rise 1
backend m
    stick-table type string len 16 size 10 expire 1m
    stick match req.hdr(x-user)
    server s1 {s1}
    server s2 {s2}
backend ck
    balance roundrobin
    cookie SRV insert indirect
    stick-table type string len 16 size 10 expire 1m
    stick on req.hdr(x-user)
    server s1 {s1} cookie c1
    server s2 {s2} cookie c2
listen tcp
    mode tcp
    bind {b1}
    balance first
    stick-table type ip size 10 expire 1m
    stick on src
    server s1 {s1}
    server s2 {s2}
",
        sock = sock.display(),
        b0 = binds[0],
        b1 = binds[1],
        s1 = s[0],
        s2 = s[1],
        s3 = s[2],
        dead = s[3],
    )
}

/// The steps of [`stickiness_as_haproxy`]: `get <path> [<header>=<value>]...`
/// (which server answers, and a `Set-Cookie`), `cli <command>`, `tcp <n>`
/// (one exchange through the TCP proxy from 127.0.0.<n>), `kill|start s3`
/// and `down|up s3` (waits for the check to see it).
const STICK_STEPS: &[&str] = &[
    "get / x-user=alice",
    "get / x-user=bob",
    "get / x-user=carol",
    "get / x-user=alice",
    "get /",
    "get / x-user=bob",
    "cli show table app",
    "cli disable server app/s1",
    "get / x-user=alice",
    "get / x-user=alice",
    "cli enable server app/s1",
    "get / x-user=alice",
    "cli show table app",
    "get /p x-user=u1",
    "get /p x-user=u2",
    "cli disable server persist/s1",
    "get /p x-user=u1",
    "cli set table persist key u9 data.server_id 3",
    "get /p x-user=u9",
    "cli show table persist",
    "get /a",
    "get /a",
    "cli show table addr",
    "cli clear table addr",
    "get /a",
    "cli show table addr",
    "get /r",
    "get /r x-b=s2",
    "get /r x-b=s2",
    "cli show table resp",
    "tcp 2",
    "tcp 2",
    "cli set table tcp key 127.0.0.3 data.server_id 2",
    "tcp 3",
    // (The harness's check from 127.0.0.1 may or may not have been
    // stored, depending on when it closed.)
    "cli show table tcp key 127.0.0.2",
    "cli show table tcp key 127.0.0.3",
    "get /c x-user=w1",
    "get /c x-user=w2",
    "kill s3",
    "down s3",
    "get /c x-user=w2",
    "start s3",
    "up s3",
    "get /c x-user=w2",
    "get /c x-user=w1",
    "cli show table chk",
    "cli set table m key x data.server_id 2",
    "get /m x-user=x",
    "cli disable server m/s2",
    "get /m x-user=x",
    "cli enable server m/s2",
    "get /m x-user=x",
    "cli show table m",
    "get /k x-user=k1 Cookie=SRV=c2",
    "get /k x-user=k1",
    "get /k x-user=k2",
    "get /k x-user=k2 Cookie=SRV=c1",
    "get /k x-user=k2",
    "cli show table ck",
    "cli disable server ck/s2",
    "get /k x-user=k1",
    "get /k x-user=k1 Cookie=SRV=c2",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stickiness_as_haproxy() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("tables-stick");
    let socks = [dir.join("h.sock"), dir.join("s.sock")];
    let mut servers = [
        Backend::start("s1").await,
        Backend::start("s2").await,
        Backend::start("s3").await,
    ];
    // A port nothing listens on: connections to it are refused.
    let (_dead, dead) = hold_port();
    let s: Vec<String> = servers.iter().map(Backend::hostport).collect();
    let s = [&*s[0], &*s[1], &*s[2], &format!("127.0.0.1:{dead}")];
    let fronts = listens(4);
    let names: Vec<String> = fronts.iter().map(ToString::to_string).collect();
    let _hap = Haproxy::start(
        "tables-stick",
        &stick_config(&socks[0], [&names[0], &names[1]], s),
        &[&fronts[0], &fronts[1]],
    );
    let _sl = Sluice::start(&stick_config(&socks[1], [&names[2], &names[3]], s));
    let mut got: [Vec<String>; 2] = Default::default();
    for (i, g) in got.iter_mut().enumerate() {
        let sock = &socks[i];
        for step in STICK_STEPS {
            let (verb, rest) = step.split_once(' ').unwrap_or((step, ""));
            match verb {
                "get" => {
                    let mut words = rest.split(' ');
                    let path = words.next().expect("path");
                    let headers: String = words
                        .map(|w| {
                            let (k, v) = w.split_once('=').expect("header=value");
                            format!("{k}: {v}\r\n")
                        })
                        .collect();
                    let req = format!("GET {path} HTTP/1.1\r\nhost: x\r\n{headers}\r\n");
                    let r = HttpConn::connect(fronts[i * 2].addr())
                        .await
                        .raw(req.as_bytes(), false)
                        .await
                        .expect("answer");
                    let cookie = r.header("set-cookie").unwrap_or("-");
                    g.push(format!("{step}: {} {} {cookie}", r.status, r.text().trim()));
                }
                "cli" => {
                    let mut reply = mask(&cli(sock, rest));
                    // The `used:` of the TCP table counts the harness's
                    // check, when stored (see the steps).
                    if rest.starts_with("show table tcp") {
                        reply = reply
                            .split_once('\n')
                            .map_or(reply.clone(), |(_, r)| r.into());
                    }
                    g.push(format!("{step}: {reply}"))
                }
                "tcp" => {
                    // From 127.0.0.<rest>: not the address the harness
                    // checks the listener from.
                    let last: u8 = rest.parse().expect("address");
                    let s = tokio::net::TcpSocket::new_v4().expect("socket");
                    s.bind(([127, 0, 0, last], 0).into()).expect("bind");
                    let mut c = s.connect(fronts[i * 2 + 1].addr()).await.expect("connect");
                    c.write_all(b"GET / HTTP/1.0\r\n\r\n").await.expect("send");
                    let mut out = Vec::new();
                    c.read_to_end(&mut out).await.expect("answer");
                    let out = String::from_utf8_lossy(&out);
                    g.push(format!(
                        "{step}: {}",
                        out.rsplit("\r\n").next().unwrap_or("")
                    ));
                }
                "kill" => servers[2].kill().await,
                "start" => servers[2].restart().await,
                "down" => {
                    wait_check(sock, "chk", "s3", "DOWN", "L4CON").await;
                }
                "up" => {
                    wait_check(sock, "chk", "s3", "UP", "L4OK").await;
                }
                _ => unreachable!("{step}"),
            }
        }
    }
    let mut diffs = haproxy::Differences::default();
    for (n, (h, s)) in got[0].iter().zip(&got[1]).enumerate() {
        diffs.compare(format!("step {n}"), h, s);
    }
    // What the steps are for: the moves happened.
    let at = |step: &str| {
        got[1]
            .iter()
            .filter(|l| l.starts_with(&format!("{step}:")))
            .map(|l| l.split(": ").nth(1).unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        at("get /c x-user=w2"),
        ["200 s3 -", "200 s1 -", "200 s1 -"],
        "{got:#?}"
    );
    assert_eq!(at("tcp 3"), ["s2\n"], "{got:#?}");
    assert_eq!(
        at("get /m x-user=x"),
        ["200 s2 -", "200 s1 -", "200 s2 -"],
        "{got:#?}"
    );
    diffs.assert_none();
}

/// The counters as a log format reads them when the exchange ends (still
/// tracked then, as in HAProxy): a session counter, a request counter and
/// its errors, a general purpose counter, lookups in the proxy's own
/// table; and a TCP proxy's connection counter. Each line starts with the
/// client's address: the clients come from 127.0.0.2, the lines of the
/// harness's readiness checks (from 127.0.0.1) are left out.
fn log_config(binds: [&str; 2], log: &str, server: &str) -> String {
    format!(
        "defaults
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend web
    mode http
    bind {}
    log {log} local0
    log-format \"%ci r=%[sc0_http_req_cnt] rr=%[sc_http_req_rate(0)] s=%[sc1_sess_cnt] c=%[sc1_conn_cur] e=%[sc0_http_err_cnt] src=%[src_http_req_cnt] g=%[sc_get_gpc0(0)] t=%[sc0_tracked]/%[sc2_tracked] n=%[table_cnt] %ST\"
    stick-table type ip size 10 expire 1m store http_req_cnt,http_req_rate(10s),sess_cnt,conn_cur,http_err_cnt,gpc0
    tcp-request session track-sc1 src
    http-request track-sc0 src
    http-request sc-inc-gpc0(0) if {{ path /inc }}
    http-request deny deny_status 429 if {{ path /deny }}
    http-request return status 200
listen tcp
    mode tcp
    bind {}
    log {log} local0
    log-format \"%ci cc=%[sc0_conn_cnt] cur=%[sc0_conn_cur] t=%[sc0_tracked] n=%[table_cnt]\"
    stick-table type ip size 10 store conn_cnt,conn_cur
    tcp-request connection track-sc0 src
    server s1 {server}
",
        binds[0], binds[1]
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_lines_read_the_counters_as_haproxy() {
    use support::raw::RawBackend;
    use support::syslog::Syslog;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
    if !haproxy::available() {
        return;
    }
    let logs = [Syslog::new(), Syslog::new()];
    let server = RawBackend::start().await;
    server.answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    server.set_close_after(true);
    let fronts = listens(4);
    let names: Vec<String> = fronts.iter().map(ToString::to_string).collect();
    let srv = server.addr.to_string();
    let _hap = Haproxy::start(
        "tables-log",
        &log_config([&names[0], &names[1]], &logs[0].addr(), &srv),
        &[&fronts[0], &fronts[1]],
    );
    let _sl = Sluice::start(&log_config([&names[2], &names[3]], &logs[1].addr(), &srv));
    let client = std::net::IpAddr::from([127, 0, 0, 2]);
    let connect = |to: std::net::SocketAddr| async move {
        let s = tokio::net::TcpSocket::new_v4().expect("socket");
        s.bind((client, 0).into()).expect("bind");
        s.connect(to).await.expect("connect")
    };
    // The next line of a client of the test (its message, after the
    // syslog header). A proxy releases what the exchange tracked just
    // after its line: the next step waits a little, so as not to see it
    // still counted.
    let next = |log: &Syslog| loop {
        let l = log.take(1).remove(0);
        let m = l.rsplit_once("]: ").map_or(l.as_str(), |(_, m)| m);
        if let Some(m) = m.trim_end().strip_prefix("127.0.0.2 ") {
            std::thread::sleep(std::time::Duration::from_millis(100));
            return m.to_string();
        }
    };
    let mut got: [Vec<String>; 2] = Default::default();
    for (i, g) in got.iter_mut().enumerate() {
        let (log, web, tcp) = (&logs[i], fronts[i * 2].addr(), fronts[i * 2 + 1].addr());
        let mut c = BufReader::new(connect(web).await);
        for p in ["/a", "/inc", "/deny"] {
            let req = format!("GET {p} HTTP/1.1\r\nhost: x\r\n\r\n");
            c.get_mut().write_all(req.as_bytes()).await.expect("send");
            let r = read_response(&mut c, false).await.expect("answer");
            assert!(r.status == 200 || r.status == 429, "{p}: {}", r.status);
            if p == "/deny" {
                // Its line may wait for the client to leave.
                drop(c);
                g.push(next(log));
                break;
            }
            g.push(next(log));
        }
        let mut c = BufReader::new(connect(web).await);
        c.get_mut()
            .write_all(b"GET /b HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .expect("send");
        read_response(&mut c, false).await.expect("answer");
        drop(c);
        g.push(next(log));
        for _ in 0..2 {
            let mut s = connect(tcp).await;
            s.write_all(b"GET / HTTP/1.0\r\n\r\n").await.expect("send");
            let mut out = Vec::new();
            s.read_to_end(&mut out).await.expect("answer");
            drop(s);
            g.push(next(log));
        }
    }
    let mut diffs = haproxy::Differences::default();
    for (n, (h, s)) in got[0].iter().zip(&got[1]).enumerate() {
        diffs.compare(format!("line {n}"), h, s);
    }
    assert_eq!(got[1].len(), 6, "{got:#?}");
    assert!(
        got[1][0].starts_with("r=2 rr=2 s=1 c=2 e=0 src=2 "),
        "{got:#?}"
    );
    diffs.assert_none();
}
