//! `show stat` / `show info` over the UNIX stats socket (and through socat,
//! as users do), and the `stats uri` page (reference §1.2–§1.4, §1.9).

mod support;

use std::net::SocketAddr;

use support::*;

struct Setup {
    s: Sluice,
    fe: SocketAddr,
    st: SocketAddr,
    s1: Backend,
    s2: Backend,
}

async fn setup() -> Setup {
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let (_hold, ports) = hold_ports::<2>();
    let cfg = format!(
        "global
    maxconn 4096
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s

frontend web_fe
    bind 127.0.0.1:{fe}
    default_backend web_be

backend web_be
    balance roundrobin
    server s1 {a}
    server s2 {b}

listen stats
    bind 127.0.0.1:{st}
    stats uri /haproxy?stats
",
        fe = ports[0],
        st = ports[1],
        a = s1.hostport(),
        b = s2.hostport()
    );
    let s = Sluice::start(&cfg);
    Setup {
        s,
        fe: SocketAddr::from(([127, 0, 0, 1], ports[0])),
        st: SocketAddr::from(([127, 0, 0, 1], ports[1])),
        s1,
        s2,
    }
}

/// Checks the shape every `show stat` CSV must have, whichever transport.
fn assert_csv_shape(text: &str, cli_terminator: bool) -> Csv {
    let csv = Csv::parse(text);
    assert_eq!(csv.header_line, SHOW_STAT_HEADER, "exact 2.6 header");
    // 128 names + the empty field after the trailing comma.
    assert_eq!(csv.names.len(), 129);
    assert_eq!(csv.names[103], "-");
    assert_eq!(csv.names[89], "src_ilim");
    assert!(!csv.lines.is_empty(), "no rows:\n{text}");
    for (line, row) in csv.lines.iter().zip(&csv.rows) {
        assert!(line.ends_with(','), "row without trailing comma: {line}");
        assert_eq!(row.len(), csv.names.len(), "field count of row: {line}");
    }
    if cli_terminator {
        assert!(
            text.ends_with(",\n\n"),
            "CLI output must end with an empty line: {:?}",
            &text[text.len().saturating_sub(20)..]
        );
    } else {
        assert!(text.ends_with(",\n"), "CSV page must end with \",\\n\"");
        assert!(
            !text.ends_with("\n\n"),
            "CSV page has no trailing empty line"
        );
    }
    csv
}

async fn send_traffic(s: &Setup) {
    // Four GETs, each on its own connection: 2 per server.
    for i in 0..4 {
        let r = get(s.fe, &format!("/t{i}")).await;
        assert_eq!(r.status, 200, "{}{}", r.head, r.text());
    }
    assert_eq!((s.s1.hits(), s.s2.hits()), (2, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_stat_header_rows_and_counters() {
    let s = setup().await;
    let sock = s.s.stats_socket();
    let before = show_stat(&sock).await;
    for sv in ["s1", "s2", "BACKEND"] {
        assert_eq!(before.num("web_be", sv, "stot"), 0, "{sv} before traffic");
    }
    send_traffic(&s).await;
    // Session gauges drop back to 0 once the streams are accounted for (a
    // response can reach the client a moment before that): wait for it, then
    // every counter must be exact.
    let sock2 = sock.clone();
    wait_until(
        std::time::Duration::from_secs(5),
        "scur back to 0 on web_be servers and BACKEND",
        || {
            let sock = sock2.clone();
            async move {
                let csv = show_stat(&sock).await;
                ["s1", "s2", "BACKEND"]
                    .iter()
                    .all(|sv| csv.get("web_be", sv, "scur") == "0")
            }
        },
    )
    .await;
    let text = cli(&sock, "show stat").await;
    let csv = assert_csv_shape(&text, true);

    let ids: Vec<(String, String)> = csv
        .rows
        .iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    let want: Vec<(String, String)> = [
        ("web_fe", "FRONTEND"),
        ("web_be", "s1"),
        ("web_be", "s2"),
        ("web_be", "BACKEND"),
        ("stats", "FRONTEND"),
        ("stats", "BACKEND"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(
        ids, want,
        "rows: proxies in order, FRONTEND/servers/BACKEND"
    );

    // Counters match the traffic sent.
    for sv in ["s1", "s2"] {
        for f in ["stot", "hrsp_2xx", "lbtot", "req_tot"] {
            assert_eq!(csv.num("web_be", sv, f), 2, "web_be,{sv} {f}");
        }
        assert_eq!(csv.num("web_be", sv, "hrsp_5xx"), 0);
        assert_eq!(csv.num("web_be", sv, "scur"), 0);
    }
    for f in ["stot", "hrsp_2xx", "lbtot", "req_tot"] {
        assert_eq!(csv.num("web_be", "BACKEND", f), 4, "web_be,BACKEND {f}");
    }
    // FRONTEND: 4 responses. Its session and request totals may also count
    // the harness's readiness probe (a connection closed without a request;
    // HAProxy counts it, whenever it gets to accept it).
    assert_eq!(csv.num("web_fe", "FRONTEND", "hrsp_2xx"), 4);
    for f in ["stot", "req_tot", "conn_tot"] {
        let v = csv.num("web_fe", "FRONTEND", f);
        assert!(
            (4..=5).contains(&v),
            "web_fe,FRONTEND {f} = {v}, sent 4 requests"
        );
    }
    assert!(csv.num("web_fe", "FRONTEND", "bin") > 0);
    assert!(csv.num("web_be", "BACKEND", "bout") > 0);

    // Identity and status columns as HAProxy fills them.
    let get = |px: &str, sv: &str, f: &str| csv.get(px, sv, f);
    assert_eq!(get("web_fe", "FRONTEND", "status"), "OPEN");
    assert_eq!(get("web_be", "s1", "status"), "no check");
    assert_eq!(get("web_be", "BACKEND", "status"), "UP");
    assert_eq!(get("web_fe", "FRONTEND", "type"), "0");
    assert_eq!(get("web_be", "BACKEND", "type"), "1");
    assert_eq!(get("web_be", "s2", "type"), "2");
    assert_eq!(get("web_fe", "FRONTEND", "pid"), "1");
    // A global stats socket makes the first user proxy iid 2.
    assert_eq!(get("web_fe", "FRONTEND", "iid"), "2");
    assert_eq!(get("web_be", "s1", "iid"), "3");
    assert_eq!(get("stats", "BACKEND", "iid"), "4");
    assert_eq!(get("web_be", "s1", "sid"), "1");
    assert_eq!(get("web_be", "s2", "sid"), "2");
    assert_eq!(get("web_be", "BACKEND", "sid"), "0");
    assert_eq!(get("web_fe", "FRONTEND", "slim"), "4096");
    assert_eq!(
        get("web_be", "s1", "slim"),
        "",
        "unlimited server maxconn is empty"
    );
    assert_eq!(get("web_be", "s1", "weight"), "1");
    assert_eq!(get("web_be", "BACKEND", "weight"), "2");
    assert_eq!(get("web_be", "BACKEND", "act"), "2");
    assert_eq!(get("web_be", "s1", "mode"), "http");
    assert_eq!(get("web_be", "BACKEND", "algo"), "roundrobin");
    assert_eq!(
        get("web_be", "s1", "addr"),
        s.s1.hostport(),
        "addr at level admin"
    );
    assert_eq!(
        get("web_fe", "FRONTEND", "qcur"),
        "",
        "FRONTEND has no queue"
    );
    assert_eq!(get("web_be", "BACKEND", "qcur"), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_stat_through_socat() {
    let s = setup().await;
    send_traffic(&s).await;
    let sock = s.s.stats_socket();
    let out = tokio::task::spawn_blocking(move || socat(&sock, "show stat"))
        .await
        .unwrap();
    let Some(text) = out else {
        assert!(
            std::env::var_os("CI").is_none(),
            "socat is required in CI (.ci/run installs it)"
        );
        eprintln!("socat not installed: skipping the socat leg");
        return;
    };
    let csv = assert_csv_shape(&text, true);
    assert_eq!(csv.num("web_be", "BACKEND", "stot"), 4);
    assert_eq!(csv.num("web_be", "s1", "hrsp_2xx"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_info_has_pid_uptime_cumreq() {
    let s = setup().await;
    send_traffic(&s).await;
    let text = cli(&s.s.stats_socket(), "show info").await;
    assert!(
        text.ends_with("\n\n"),
        "show info must end with an empty line: {text:?}"
    );
    let kv: Vec<(&str, &str)> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.split_once(": ")
                .unwrap_or_else(|| panic!("not a `Name: value` line: {l:?}"))
        })
        .collect();
    let val = |k: &str| {
        kv.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no {k} in show info:\n{text}"))
    };
    assert_eq!(val("Pid"), s.s.pid().to_string());
    assert_eq!(val("Nbproc"), "1");
    assert_eq!(val("Process_num"), "1");
    assert!(
        val("Uptime_sec").parse::<u64>().is_ok(),
        "Uptime_sec {:?}",
        val("Uptime_sec")
    );
    let cum: u64 = val("CumReq").parse().expect("CumReq is a number");
    assert!(cum >= 4, "CumReq {cum} after 4 requests");
    assert_eq!(val("Maxconn"), "4096");

    // Key order of reference §1.4.
    let order = [
        "Name",
        "Version",
        "Release_date",
        "Nbthread",
        "Nbproc",
        "Process_num",
        "Pid",
        "Uptime",
        "Uptime_sec",
        "Memmax_MB",
        "PoolAlloc_MB",
        "PoolUsed_MB",
        "PoolFailed",
        "Ulimit-n",
        "Maxsock",
        "Maxconn",
        "Hard_maxconn",
        "CurrConns",
        "CumConns",
        "CumReq",
        "MaxSslConns",
        "CurrSslConns",
        "CumSslConns",
        "Maxpipes",
        "PipesUsed",
        "PipesFree",
        "ConnRate",
        "ConnRateLimit",
        "MaxConnRate",
        "SessRate",
        "SessRateLimit",
        "MaxSessRate",
        "SslRate",
        "SslRateLimit",
        "MaxSslRate",
        "SslFrontendKeyRate",
        "SslFrontendMaxKeyRate",
        "SslFrontendSessionReuse_pct",
        "SslBackendKeyRate",
        "SslBackendMaxKeyRate",
        "SslCacheLookups",
        "SslCacheMisses",
        "CompressBpsIn",
        "CompressBpsOut",
        "CompressBpsRateLim",
        "Tasks",
        "Run_queue",
        "Idle_pct",
        "node",
        "Stopping",
        "Jobs",
        "Unstoppable Jobs",
        "Listeners",
        "ActivePeers",
        "ConnectedPeers",
        "DroppedLogs",
        "BusyPolling",
        "FailedResolutions",
        "TotalBytesOut",
        "TotalSplicdedBytesOut",
        "BytesOutRate",
        "DebugCommandsIssued",
        "CumRecvLogs",
        "Build info",
        "Memmax_bytes",
        "PoolAlloc_bytes",
        "PoolUsed_bytes",
        "Start_time_sec",
        "Tainted",
    ];
    let keys: Vec<&str> = kv.iter().map(|(k, _)| *k).collect();
    // HAProxy's keys in HAProxy's order, then sluice's own reload keys.
    assert_eq!(&keys[..order.len()], order, "show info keys and order");
    assert_eq!(
        &keys[order.len()..],
        ["Generation", "Last_reload_sec", "Last_reload_status"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_uri_html_and_csv() {
    let s = setup().await;
    send_traffic(&s).await;

    let r = get(s.st, "/haproxy?stats").await;
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(
        r.header("content-type")
            .unwrap_or("")
            .starts_with("text/html"),
        "{}",
        r.head
    );
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    assert!(r.text().to_ascii_lowercase().contains("<html"), "not HTML");
    assert!(r.text().contains("web_be"), "page does not list web_be");

    let r = get(s.st, "/haproxy?stats;csv").await;
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(
        r.header("content-type")
            .unwrap_or("")
            .starts_with("text/plain"),
        "{}",
        r.head
    );
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    let csv = assert_csv_shape(&r.text(), false);
    assert_eq!(csv.num("web_be", "BACKEND", "stot"), 4);
    assert_eq!(csv.num("web_be", "s2", "lbtot"), 2);
    // Over HTTP, addr/algo stay empty without `stats show-legends`.
    assert_eq!(csv.get("web_be", "s1", "addr"), "");

    // The stats page is served by sluice, never proxied.
    assert_eq!(s.s1.hits() + s.s2.hits(), 4);
    // A path that does not start with the prefix is not the stats page.
    let r = get(s.st, "/other").await;
    assert_ne!(r.status, 200, "only the stats uri prefix is intercepted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_command_and_pipelined_commands() {
    let s = setup().await;
    let sock = s.s.stats_socket();
    let out = cli(&sock, "show nonsense").await;
    assert!(
        out.starts_with("Unknown command, but maybe one of the following ones is a better match:"),
        "{out:?}"
    );
    // Two commands on one line separated by `;`: two answers, each ended by
    // an empty line.
    let out = cli(&sock, "show info;show stat").await;
    let (info, stat) = out.split_once("\n\n").expect("two answers");
    assert!(info.contains("\nPid: "), "{info}");
    assert!(stat.starts_with(SHOW_STAT_HEADER), "{stat}");
    assert!(stat.ends_with(",\n\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_uri_in_a_frontend_is_served() {
    // `stats uri` is valid in frontend sections too (HAProxy 2.6 serves it
    // there; reference §1.9 "in any proxy").
    let b = Backend::start("s1").await;
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend www
    bind {fe}
    stats uri /stats
    default_backend apps
backend apps
    server s1 {}
",
        b.hostport()
    );
    let s = Sluice::start(&cfg);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let r = get(addr, "/stats").await;
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(
        r.header("content-type")
            .unwrap_or("")
            .starts_with("text/html"),
        "{}",
        r.head
    );
    assert!(!s.stderr().contains("'stats' ignored"), "{}", s.stderr());
    let r = get(addr, "/stats;csv").await;
    assert_eq!(Csv::parse(&r.text()).header_line, SHOW_STAT_HEADER);
    assert_eq!(get(addr, "/app").await.backend(), "s1");
    assert_eq!(b.hits(), 1);
}
