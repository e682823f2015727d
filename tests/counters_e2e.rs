//! The `show stat` and `show info` counters after real traffic: rates and
//! their maxima, `qmax`, `lastsess`, the `qtime/ctime/rtime/ttime` averages
//! and the process figures. No timing-precise assertion: values are
//! checked to be filled, consistent with each other and bounded by what
//! the test sent (a 200 ms backend gives `rtime` of at least ~200 ms,
//! never a precise figure).

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use support::*;

const DEADLINE: Duration = Duration::from_secs(10);

fn cfg(fe: &Listen, server: &Backend) -> String {
    format!(
        "global
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s

frontend fe
    bind {fe}
    default_backend be

backend be
    server s1 {} maxconn 1
    server never 127.0.0.1:1 disabled
",
        server.hostport()
    )
}

/// `show info` as (key, number) lookups.
async fn info(sock: &Path) -> impl Fn(&str) -> u64 {
    let text = cli(sock, "show info").await;
    move |key: &str| {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{key}: ")))
            .unwrap_or_else(|| panic!("no {key} in show info:\n{text}"));
        line[key.len() + 2..]
            .parse()
            .unwrap_or_else(|_| panic!("{line}: not a number"))
    }
}

/// `GET path` with `connection: close`, read until sluice closes. The
/// close comes once the exchange is over and the server's slot (maxconn 1)
/// released; a response alone does not say so, and on a loaded machine
/// the next request could find the slot still taken and queue (qtime).
async fn get_to_close(addr: SocketAddr, path: &str) -> Response {
    use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
    within(DEADLINE, &format!("GET {path} to the close"), async {
        let mut c = BufReader::new(tokio::net::TcpStream::connect(addr).await.unwrap());
        c.get_mut()
            .write_all(
                format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes(),
            )
            .await
            .unwrap();
        let r = read_response(&mut c, false).await.unwrap();
        let mut rest = Vec::new();
        c.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty(), "bytes after the response: {rest:?}");
        r
    })
    .await
}

fn signed(csv: &Csv, px: &str, sv: &str, col: &str) -> i64 {
    let v = csv.get(px, sv, col);
    v.parse()
        .unwrap_or_else(|_| panic!("{px}/{sv} {col} = {v:?}: not a number"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn counters_after_traffic() {
    let backend = Backend::start("s1").await;
    let fe = Listen::new();
    let port = fe.port();
    let sl = Sluice::start(&cfg(&fe, &backend));
    let sock = sl.stats_socket();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));

    // The harness's readiness probe of the frontend is accepted (and
    // counted) asynchronously: wait for it, so CumConns is stable.
    let sock2 = sock.clone();
    wait_until(DEADLINE, "the readiness probe counted", || {
        let sock = sock2.clone();
        async move { show_stat(&sock).await.num("fe", "FRONTEND", "conn_tot") == 1 }
    })
    .await;
    // Three requests, each on its own connection, each answered after 200 ms.
    let before = info(&sock).await;
    let (conns0, reqs0) = (before("CumConns"), before("CumReq"));
    backend.set_delay(Duration::from_millis(200));
    for i in 0..3 {
        assert_eq!(get_to_close(addr, &format!("/{i}")).await.status, 200);
    }
    backend.set_delay(Duration::ZERO);

    // CumConns: 3 clients and this `show info` session; CumReq: 3 requests
    // and the previous `show info` session, ended since (HAProxy counts its
    // CLI sessions in both).
    let after = info(&sock).await;
    assert_eq!(after("CumConns"), conns0 + 3 + 1);
    assert_eq!(after("CumReq"), reqs0 + 3 + 1);
    assert!(after("MaxConnRate") >= 1 && after("MaxSessRate") >= 1);
    assert!(after("ConnRate") <= after("MaxConnRate"));
    assert!(after("SessRate") <= after("MaxSessRate"));
    let sock2 = sock.clone();
    wait_until(DEADLINE, "CurrConns back to 0", || {
        let sock = sock2.clone();
        async move { (info(&sock).await)("CurrConns") == 0 }
    })
    .await;

    let csv = show_stat(&sock).await;
    // Rates: at least one per second was seen, never more than sent. The
    // frontend also counts the harness's readiness probe (a connection
    // closed without a request is a session, as in HAProxy).
    assert_eq!(csv.num("fe", "FRONTEND", "stot"), 4);
    for (px, sv) in [("fe", "FRONTEND"), ("be", "BACKEND"), ("be", "s1")] {
        let (rate, max) = (csv.num(px, sv, "rate"), csv.num(px, sv, "rate_max"));
        let stot = csv.num(px, sv, "stot");
        assert!(
            max >= 1 && max <= stot,
            "{px}/{sv} rate_max {max}, stot {stot}"
        );
        assert!(rate <= max, "{px}/{sv} rate {rate} > rate_max {max}");
    }
    assert_eq!(csv.num("be", "BACKEND", "stot"), 3);
    assert_eq!(csv.num("be", "s1", "stot"), 3);
    let (req_rate, req_max) = (
        csv.num("fe", "FRONTEND", "req_rate"),
        csv.num("fe", "FRONTEND", "req_rate_max"),
    );
    assert!(
        (1..=3).contains(&req_max) && req_rate <= req_max,
        "req_rate {req_rate} / {req_max}"
    );
    assert!((1..=4).contains(&csv.num("fe", "FRONTEND", "conn_rate_max")));

    // Times (ms, averages): the server answered after 200 ms.
    for sv in ["s1", "BACKEND"] {
        let (q, c, r, t) = (
            csv.num("be", sv, "qtime"),
            csv.num("be", sv, "ctime"),
            csv.num("be", sv, "rtime"),
            csv.num("be", sv, "ttime"),
        );
        // Nothing was queued: qtime is the time to a slot, 0 ms on a quiet
        // machine, a few ms when the test runs beside a loaded suite.
        assert!(q < 50, "be/{sv}: nothing was queued, qtime {q}");
        assert!(c < 1000, "be/{sv} ctime {c}");
        assert!((190..5000).contains(&r), "be/{sv} rtime {r}");
        assert!(t >= r, "be/{sv} ttime {t} < rtime {r}");
        assert!(csv.num("be", sv, "rtime_max") >= r);
    }
    // lastsess: seconds since the last session; -1 for a server never used.
    for sv in ["s1", "BACKEND"] {
        let last = signed(&csv, "be", sv, "lastsess");
        assert!((0..60).contains(&last), "be/{sv} lastsess {last}");
    }
    assert_eq!(signed(&csv, "be", "never", "lastsess"), -1);

    // qmax: the server takes one request at a time; a second one waits.
    backend.set_gated(true);
    let first = tokio::spawn(async move { get(addr, "/held").await });
    backend.wait_started("/held", DEADLINE).await;
    let second = tokio::spawn(async move { get(addr, "/queued").await });
    let sock2 = sock.clone();
    wait_until(DEADLINE, "one request queued", || {
        let sock = sock2.clone();
        async move { show_stat(&sock).await.num("be", "BACKEND", "qcur") == 1 }
    })
    .await;
    assert_eq!((info(&sock).await)("CurrConns"), 2);
    assert_eq!(show_stat(&sock).await.num("fe", "FRONTEND", "scur"), 2);
    // Let the queued request wait a measurable time, then serve both.
    tokio::time::sleep(Duration::from_millis(300)).await;
    backend.release(2);
    for h in [first, second] {
        assert_eq!(
            within(DEADLINE, "held requests", h).await.unwrap().status,
            200
        );
    }
    let csv = show_stat(&sock).await;
    assert_eq!(csv.num("be", "BACKEND", "qcur"), 0);
    assert_eq!(csv.num("be", "BACKEND", "qmax"), 1);
    assert!(csv.num("be", "BACKEND", "qtime_max") >= 250);
    assert!(csv.num("be", "BACKEND", "qtime") >= 1);
    assert_eq!(csv.num("fe", "FRONTEND", "smax"), 2);
    assert_eq!(csv.num("be", "s1", "stot"), 5);
}
