//! Access log lines against the real HAProxy 2.6: the same configuration
//! runs under haproxy and sluice, the same connections reach both, and the
//! lines each logs must be the same bytes. Covered: `option dontlognull`
//! (in a `listen`, from `defaults`, and given back with `no option
//! dontlognull`) in `mode tcp` and `mode http`, and HAProxy's line without
//! a log format (`Connect from ...`, with each request in `mode http`); the
//! sizes `%B` and `%U` of answers sluice makes (`http-request return`,
//! `deny`, `redirect`), and of a server's answers relayed (lengths,
//! chunks and trailers, interim answers, bodiless ones) with the size `%U`
//! of a chunked request body; HTTP/1 on a `proto h2` bind and the
//! HTTP/2 preface on a `proto h1` one; the connection after a local answer
//! to a request with a body, and what sluice's own answers say of the
//! connection (error pages, `errorfile` ones, `return`, `redirect`); in
//! `mode tcp`, a client that leaves while the proxy connects to a server,
//! and one gone before the proxy reads it.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::haproxy::{self, Haproxy};
use support::raw::RawBackend;
use support::syslog::Syslog;
use support::*;

/// One proxy under test (haproxy or sluice) with its own listeners, log
/// receiver and server.
struct Side {
    _proc: (Option<Haproxy>, Option<Sluice>),
    fronts: Vec<Listen>,
    log: Syslog,
    srv: RawBackend,
    _dead: Port,
    hole: Option<BlackHole>,
}

/// A server address whose accept queue is full: connections to it hang
/// until `timeout connect`.
type BlackHole = (SocketAddr, Vec<std::net::TcpStream>, socket2::Socket);

impl Side {
    /// Starts haproxy (`hap`) or sluice on `cfg`, where `{feN}` are the
    /// listeners, `{log}` the log target, `{srv}` a server that answers,
    /// `{dead}` an address that refuses connections and `{hole}` one that
    /// never accepts them.
    async fn start(hap: bool, cfg: &str, nfronts: usize) -> Side {
        let fronts = listens(nfronts);
        let log = Syslog::new();
        let srv = RawBackend::start().await;
        let dead = Port::new();
        let hole = cfg.contains("{hole}").then(black_hole);
        let mut text = cfg
            .replace("{log}", &log.addr())
            .replace("{srv}", &srv.addr.to_string())
            .replace("{dead}", &dead.addr().to_string());
        if let Some((addr, ..)) = &hole {
            text = text.replace("{hole}", &addr.to_string());
        }
        for (n, l) in fronts.iter().enumerate() {
            text = text.replace(&format!("{{fe{n}}}"), &l.to_string());
        }
        let proc = if hap {
            let refs: Vec<&Listen> = fronts.iter().collect();
            (Some(Haproxy::start("loglines", &text, &refs)), None)
        } else {
            (None, Some(Sluice::start(&text)))
        };
        Side {
            _proc: proc,
            fronts,
            log,
            srv,
            _dead: dead,
            hole,
        }
    }

    fn addr(&self, n: usize) -> SocketAddr {
        self.fronts[n].addr()
    }

    /// The front address `n` as a line shows it, and its mask.
    fn front_masks(&self) -> Vec<(String, String)> {
        (0..self.fronts.len())
            .map(|n| (self.addr(n).to_string(), format!("{{fe{n}}}")))
            .collect()
    }
}

/// Opens a connection to `addr`, sends `bytes` (nothing when empty), shuts
/// its side down and reads until the proxy closes: the proxy is done with
/// the connection when this returns. Returns the client's port.
async fn client(addr: SocketAddr, bytes: &[u8]) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let port = s.local_addr().expect("local_addr").port();
    if !bytes.is_empty() {
        s.write_all(bytes).await.expect("send");
    }
    s.shutdown().await.expect("shutdown");
    let mut out = Vec::new();
    // A reset ends the connection as well as a close.
    let _ = within(
        Duration::from_secs(10),
        "the close",
        s.read_to_end(&mut out),
    )
    .await;
    (port, out)
}

/// Opens a connection to `addr` that sends nothing and reads until the
/// proxy closes it. Returns the client's port.
async fn silent_client(addr: SocketAddr) -> u16 {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let port = s.local_addr().expect("local_addr").port();
    let mut out = Vec::new();
    let _ = within(
        Duration::from_secs(10),
        "the close",
        s.read_to_end(&mut out),
    )
    .await;
    port
}

/// Runs each of `cases` on haproxy, then on sluice, each started on `cfg`
/// with `nfronts` listeners (`run` gives what one side did for a case),
/// then `check(case, haproxy's, sluice's)` on each. Returns haproxy's
/// results, which the test may pin.
async fn each_case<C, T>(
    cfg: &str,
    nfronts: usize,
    cases: &[C],
    run: impl AsyncFn(&Side, &C) -> T,
    check: impl Fn(&C, &T, &T),
) -> Vec<T> {
    let mut sides = Vec::new();
    for hap in [true, false] {
        // One at a time: the previous one is gone before the next starts.
        let side = Side::start(hap, cfg, nfronts).await;
        let mut out = Vec::new();
        for case in cases {
            out.push(run(&side, case).await);
        }
        sides.push(out);
    }
    let (want, got) = (&sides[0], &sides[1]);
    for ((case, w), g) in cases.iter().zip(want).zip(got) {
        check(case, w, g);
    }
    sides.swap_remove(0)
}

const NULL_CFG: &str = "global
    log {log} format raw local0 info
defaults
    log global
    timeout connect 1s
    timeout client 5s
    timeout server 5s
    # A refused server ends a TCP session at once (SC).
    retries 0

# `option dontlognull` in the listen itself.
listen own_http
    mode http
    bind {fe0}
    option dontlognull
    server s1 {srv}

listen own_tcp
    mode tcp
    bind {fe1}
    option dontlognull
    log-format \"%ci:%cp %ft %b/%s %ts %U %B\"
    server s1 {dead}

# Its line comes after those of the connections before it.
listen marker
    mode http
    bind {fe2}
    log-format \"marker %{+Q}r\"
    http-request return status 200

defaults
    log global
    option dontlognull
    timeout connect 1s
    timeout client 5s
    timeout server 5s
    retries 0

# From `defaults`.
listen inh_tcp
    mode tcp
    bind {fe3}
    log-format \"%ci:%cp %ft %b/%s %ts %U %B\"
    server s1 {dead}

listen inh_http
    mode http
    bind {fe4}
    log-format \"%ci:%cp %ft %b/%s %ST %ts %{+Q}r\"
    server s1 {srv}

# Given back.
listen neg_tcp
    mode tcp
    bind {fe5}
    no option dontlognull
    log-format \"%ci:%cp %ft %b/%s %ts %U %B\"
    server s1 {dead}

listen neg_http
    mode http
    bind {fe6}
    no option dontlognull
    log-format \"%ci:%cp %ft %b/%s %ST %ts %{+Q}r\"
    server s1 {srv}
";

/// The connections of [`dontlognull_and_connect_lines_as_haproxy`]: on
/// which listener, what the client sends before it closes.
/// (A client that sends bytes to `own_tcp` is left out: whether haproxy
/// reads them before its connection to the server is refused is a race.
/// So is whether a client that closes at once does so before that refusal
/// (`CC`) or after (`SC`): on the TCP listeners, 1, 3 and 5, a client that
/// sends nothing waits for the proxy to close.)
const NULL_CLIENTS: [(usize, &[u8]); 9] = [
    (0, b""),
    (0, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"),
    (0, b"GARBAGE\r\n\r\n"),
    (1, b""),
    (3, b""),
    (4, b""),
    (5, b""),
    (6, b""),
    (0, b"GET /again HTTP/1.1\r\nhost: x\r\n\r\n"),
];

/// The listen section of [`NULL_CFG`] that binds `{fe<n>}`.
fn null_listener(n: usize) -> &'static str {
    let bind = format!("bind {{fe{n}}}");
    let at = NULL_CFG
        .find(&bind)
        .expect("each client's listener is in the config");
    let section = NULL_CFG[..at].rfind("listen ").expect("a listen section");
    NULL_CFG[section + "listen ".len()..]
        .split_whitespace()
        .next()
        .expect("its name")
}

/// The lines one side logged for [`NULL_CLIENTS`], sorted, with what must
/// differ masked: each client's port (`{cN}`, the kernel's choice) and each
/// listener's address (`{feN}`, each side has its own). The readiness
/// probes' lines are left out: a line counts as a client's only when it
/// names the client's port and its listener (the kernel may give a probe
/// of another listener the port a client had before).
async fn null_lines(side: &Side) -> Vec<String> {
    let mut ports = Vec::new();
    for (fe, bytes) in NULL_CLIENTS {
        let port = match fe {
            1 | 3 | 5 if bytes.is_empty() => silent_client(side.addr(fe)).await,
            _ => client(side.addr(fe), bytes).await.0,
        };
        ports.push(port);
    }
    client(side.addr(2), b"GET /marker HTTP/1.1\r\nhost: x\r\n\r\n").await;
    let seen = side.log.until(&["marker \"GET /marker HTTP/1.1\"\n"]);
    let mut out: Vec<String> = seen
        .iter()
        .filter_map(|l| {
            let (n, p) = ports.iter().enumerate().find(|(n, p)| {
                l.contains(&format!("127.0.0.1:{p} "))
                    && l.contains(null_listener(NULL_CLIENTS[*n].0))
            })?;
            let mut l = l.replace(&format!("127.0.0.1:{p} "), &format!("{{c{n}}} "));
            for (addr, mask) in side.front_masks() {
                l = l.replace(&addr, &mask);
            }
            Some(l)
        })
        .collect();
    out.sort();
    out
}

/// A client that sends nothing is not logged under `option dontlognull`,
/// whatever ends its session (in `mode tcp`, a refused server too), whether
/// the option is the listen's own or comes from `defaults`, and is logged
/// again after `no option dontlognull`. Without a log format, `mode http`
/// tells `Connect from` with each request whose head parsed, never for a
/// connection that sent nothing or garbage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dontlognull_and_connect_lines_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let hap = Side::start(true, NULL_CFG, 7).await;
    let want = null_lines(&hap).await;
    drop(hap);
    let sl = Side::start(false, NULL_CFG, 7).await;
    let got = null_lines(&sl).await;
    assert_eq!(got, want, "sluice's lines, then haproxy's");
    // What haproxy 2.6 logged, so that the comparison is not of nothing.
    assert_eq!(
        want,
        [
            "Connect from {c1} to {fe0} (own_http/HTTP)\n",
            "Connect from {c8} to {fe0} (own_http/HTTP)\n",
            "{c6} neg_tcp neg_tcp/s1 SC 0 0\n",
            "{c7} neg_http neg_http/<NOSRV> 400 CR \"<BADREQ>\"\n",
        ]
    );
}

const SIZE_CFG: &str = "global
    log {log} format raw local0 info
defaults
    mode http
    log global
    # The readiness probe's empty connection is not logged.
    option dontlognull
    timeout connect 1s
    timeout client 5s
    timeout server 5s

listen sizes
    bind {fe0}
    log-format \"%ST %B %U %ts %{+Q}r\"
    http-request return status 200 content-type text/plain string hello if { path /ret }
    http-request return status 404 if { path /ret404 }
    http-request deny if { path /deny }
    http-request deny deny_status 403 content-type text/plain string nope if { path /deny-string }
    http-request redirect location /x if { path /redir }
    http-request redirect prefix /p code 301 if { path /redir-prefix }
    http-request redirect scheme https if { path /redir-scheme }
    server s1 {srv}

listen refused
    bind {fe1}
    log-format \"%ST %B %U %ts %{+Q}r\"
    retries 0
    server s1 {dead}
";

/// Requests answered by sluice itself, each on its own connection: on
/// which listener, the bytes.
const SIZE_REQUESTS: [(usize, &[u8]); 13] = [
    (0, b"GET /ret HTTP/1.1\r\nhost: x\r\n\r\n"),
    (
        0,
        b"GET /ret HTTP/1.1\r\nhost:    x y  \r\nX-A: 1\r\nconnection: close\r\n\r\n",
    ),
    (0, b"GET /ret HTTP/1.0\r\n\r\n"),
    (0, b"GET /ret404 HTTP/1.1\r\nhost: x\r\n\r\n"),
    (0, b"GET /deny HTTP/1.1\r\nhost: x\r\n\r\n"),
    (0, b"GET /deny-string HTTP/1.1\r\nhost: x\r\n\r\n"),
    (0, b"GET /redir HTTP/1.1\r\nhost: x\r\n\r\n"),
    (0, b"GET /redir-prefix HTTP/1.1\r\nhost: x\r\n\r\n"),
    (0, b"GET http://x/redir-scheme HTTP/1.1\r\nhost: x\r\n\r\n"),
    // A body that came with the head counts in `%U`, read or not.
    (
        0,
        b"POST /ret HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhello",
    ),
    (
        0,
        b"POST /ret HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nx-t: 1\r\n\r\n",
    ),
    (
        0,
        b"POST /deny HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    ),
    // No server to send it to: a 503.
    (
        1,
        b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhello",
    ),
];

/// The answer and the log line of one side for a request (on which
/// listener, the bytes) on its own connection.
async fn answer_and_line(side: &Side, &(fe, req): &(usize, &[u8])) -> (String, String) {
    let (_, answer) = client(side.addr(fe), req).await;
    let line = side.log.take(1).remove(0);
    (String::from_utf8_lossy(&answer).into_owned(), line)
}

/// `%B` of an answer sluice makes and `%U` of the request count what
/// HAProxy 2.6 counts (its internal form of the messages, not the bytes on
/// the wire, which are the same in both), for `http-request return`,
/// `deny` and `redirect`, over HTTP/1.1 and 1.0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sizes_of_made_answers_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let want = each_case(
        SIZE_CFG,
        2,
        &SIZE_REQUESTS,
        answer_and_line,
        |(_, req), w, g| {
            let req = String::from_utf8_lossy(req);
            assert_eq!(g.1, w.1, "{req}");
            assert_eq!(g.0, w.0, "{req}");
        },
    )
    .await;
    // haproxy 2.6 logged 76 for the 69 bytes of the first answer, and 62
    // for a request of 57 bytes of head and 5 of body it never read.
    assert_eq!(want[0].1, "200 76 41 LR \"GET /ret HTTP/1.1\"\n");
    assert_eq!(want[9].1, "200 76 62 LR \"POST /ret HTTP/1.1\"\n");
}

/// Requests with a body answered by sluice itself, each on its own
/// connection with what follows it: on which listener of [`SIZE_CFG`], the
/// bytes.
const BODY_REQUESTS: [(usize, &[u8]); 10] = [
    // The whole body came with the head: it is skipped, the next request
    // on the connection is served.
    (
        0,
        b"POST /ret HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhelloGET /ret HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    ),
    (
        0,
        b"POST /ret HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /ret HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    ),
    (
        0,
        b"POST /deny HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhelloGET /ret HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    ),
    (
        0,
        b"POST /deny HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nx-t: 1\r\n\r\nGET /ret HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    ),
    (
        1,
        b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    ),
    // A redirect closes after any body, saying so in a `connection:
    // close` that `%B` counts.
    (
        0,
        b"POST /redir HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhelloGET /ret HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    ),
    (
        0,
        b"POST /redir HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /ret HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    ),
    // Part of the body only: the answer closes, and says so.
    (
        0,
        b"POST /ret HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhel",
    ),
    (
        0,
        b"POST /deny HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhel",
    ),
    (
        1,
        b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhel",
    ),
];

/// The answers on one connection and their log lines (one per status
/// line; no body here holds one).
async fn answers_and_lines(side: &Side, &(fe, req): &(usize, &[u8])) -> (String, Vec<String>) {
    // The client does not shut its side down: haproxy serves no request
    // that comes before a shutdown.
    let answer = haproxy::exchange(side.addr(fe), req, false).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let lines = side.log.take(answer.matches("HTTP/1.1 ").count());
    (answer, lines)
}

/// After sluice answers a request with a body itself (`return`, `deny`,
/// a 503), the connection goes on as with HAProxy 2.6: kept, the body
/// skipped, when the whole body came with the head; closed with a
/// `connection: close` when only part of it did; and always closed after
/// a redirect, whose `connection: close` counts in `%B`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_after_a_local_answer_to_a_body_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let want = each_case(
        SIZE_CFG,
        2,
        &BODY_REQUESTS,
        answers_and_lines,
        |(_, req), w, g| {
            assert_eq!(g, w, "{}", String::from_utf8_lossy(req));
        },
    )
    .await;
    // haproxy 2.6 served the request after the body, and logged 98 for a
    // redirect of 83 bytes (its `connection: close` counts 15).
    assert_eq!(want[0].1.len(), 2, "{:?}", want[0]);
    assert_eq!(want[5].1, ["302 98 64 LR \"POST /redir HTTP/1.1\"\n"]);
    assert!(want[7].0.contains("connection: close\r\n"), "{}", want[7].0);
}

const RELAYED_CFG: &str = "global
    log {log} format raw local0 info
defaults
    mode http
    log global
    option dontlognull
    timeout connect 1s
    timeout client 5s
    timeout server 5s

listen relayed
    bind {fe0}
    log-format \"%ST %B %U %ts %{+Q}r\"
    server s1 {srv}
";

/// Each request (on its own connection) and the server's answer to it.
const RELAYED: [(&[u8], &[u8]); 25] = [
    (
        b"GET /cl HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-type: text/plain\r\n\r\nhello",
    ),
    (
        b"GET /ch HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    ),
    (
        b"GET /ch2 HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n003;x=y\r\nabc\r\n0\r\n\r\n",
    ),
    (
        b"GET /trailers HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nx-t: 1\r\n\r\n",
    ),
    (
        b"GET /ch0 HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
    ),
    (
        b"GET /conn HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\nok",
    ),
    // A `connection` field without `close` or `keep-alive` is counted.
    (
        b"GET /conn-other HTTP/1.1\r\nhost: x\r\nconnection: foo\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nConnection: foo ,  bar\r\n\r\nok",
    ),
    (
        b"GET /conn-close HTTP/1.1\r\nhost: x\r\nconnection: Keep-Alive\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nConnection: close\r\nConnection: upgrade\r\n\r\nok",
    ),
    // Mixed tokens: `close` and `keep-alive` are taken out, the rest
    // kept (as written until a token goes, moved and trimmed after).
    (
        b"GET /conn-mixed HTTP/1.1\r\nhost: x\r\nconnection: keep-alive, Upgrade\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nConnection: close, foo\r\n\r\nok",
    ),
    (
        b"GET /conn-mixed HTTP/1.1\r\nhost: x\r\nconnection: foo  , close, bar\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nConnection: keep-alive, Upgrade\r\n\r\nok",
    ),
    (
        b"GET /conn-mixed HTTP/1.1\r\nhost: x\r\nconnection: close , foo  , bar\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nConnection: foo, bar, close\r\n\r\nok",
    ),
    (
        b"GET /conn-mixed HTTP/1.1\r\nhost: x\r\nconnection: foo, , close\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nConnection: foo, close,  ,bar\r\n\r\nok",
    ),
    // Empty elements: a last one is not kept, nor an empty field.
    (
        b"GET /conn-empty HTTP/1.1\r\nhost: x\r\nconnection: foo,\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nConnection: ,,\r\n\r\nok",
    ),
    (
        b"GET /conn-empty HTTP/1.1\r\nhost: x\r\nconnection:\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nConnection: ,\r\nConnection: close,, foo\r\n\r\nok",
    ),
    (
        b"GET /noreason HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 200 \r\ncontent-length: 2\r\n\r\nok",
    ),
    (
        b"GET /nospace HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 200\r\ncontent-length: 2\r\n\r\nok",
    ),
    (
        b"GET /spaces HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length:    2   \r\nX-Long:   a b  \r\nx-e:\r\n\r\nok",
    ),
    (
        b"GET /10 HTTP/1.0\r\n\r\n",
        b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok",
    ),
    (
        b"GET /204 HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n",
    ),
    (
        b"GET /304 HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 304 Not Modified\r\ntransfer-encoding: chunked\r\n\r\n",
    ),
    (
        b"GET /continue HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
    ),
    (
        b"GET /hints HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
    ),
    (
        b"HEAD /cl HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-type: text/plain\r\n\r\n",
    ),
    (
        b"HEAD /ch HTTP/1.1\r\nhost: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
    ),
    (
        b"POST /chunked HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nx-t: 1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
    ),
];

/// The log line of one side for a request of [`RELAYED`].
async fn relayed_line(side: &Side, &(req, resp): &(&[u8], &[u8])) -> String {
    side.srv.answer(resp);
    client(side.addr(0), req).await;
    side.log.take(1).remove(0)
}

/// `%B` of a server's answer counts what HAProxy 2.6 counts: the heads
/// (interim ones too) in its internal form, the body's data, a chunked
/// body's trailers and one byte more; `%U` of a chunked request body the
/// same way. The wire bytes differ (sluice re-chunks, adds its own
/// `connection` header); the logged sizes do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sizes_of_relayed_answers_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let want = each_case(RELAYED_CFG, 1, &RELAYED, relayed_line, |(req, _), w, g| {
        assert_eq!(g, w, "{}", String::from_utf8_lossy(req));
    })
    .await;
    // haproxy 2.6 logged 64 for the 5 bytes of data of the chunked answer
    // (58 for its head).
    assert_eq!(want[1], "200 64 40 -- \"GET /ch HTTP/1.1\"\n");
    // `connection: foo` counts 13, `Connection: foo ,  bar` 20.
    assert_eq!(want[6], "200 71 61 -- \"GET /conn-other HTTP/1.1\"\n");
    // `Connection: close, foo` counts 13 (`foo`), `connection: keep-alive,
    // Upgrade` 17 (`Upgrade`).
    assert_eq!(want[8], "200 64 65 -- \"GET /conn-mixed HTTP/1.1\"\n");
}

const PROTO_CFG: &str = "global
    log {log} format raw local0 info
defaults
    mode http
    log global
    option dontlognull
    timeout connect 1s
    timeout client 5s
    timeout server 5s
    log-format \"%ST %B %U %ts %HV %HM %{+Q}r %b/%s\"

listen h2_only
    bind {fe0} proto h2
    server s1 {srv}

listen h1_only
    bind {fe1} proto h1
    server s1 {srv}

# The page of a 400 the stream answers, as the preface gets on h1_only.
listen deny400
    bind {fe2}
    http-request deny deny_status 400
    server s1 {srv}
";

/// What each client sends: HTTP/1 or other bytes to the HTTP/2 listener,
/// the preface to the HTTP/1 one, a request a rule denies with a 400.
const PROTO_REQUESTS: [(usize, &[u8]); 4] = [
    (0, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"),
    (0, b"x"),
    (1, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
    (2, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"),
];

/// HTTP/1 (or any bytes but the preface) on a `proto h2` bind is logged
/// as haproxy 2.6 logs it, a request it could not parse with no status;
/// the preface on a `proto h1` bind is a `<BADREQ>` whose head (`%U`) and
/// 400 page (`%B`, the stream's page, lower-case with its `connection:
/// close`) are counted, the page a `deny_status 400` sends too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_protocol_lines_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let want = each_case(
        PROTO_CFG,
        3,
        &PROTO_REQUESTS,
        answer_and_line,
        |(fe, req), w, g| {
            let req = String::from_utf8_lossy(req);
            assert_eq!(g.1, w.1, "{req}");
            // A known difference left: the HTTP/2 listener sends its SETTINGS
            // before it reads the preface, haproxy nothing.
            if *fe != 0 {
                assert_eq!(g.0, w.0, "{req}");
            }
        },
    )
    .await;
    assert_eq!(
        want[0].1,
        "0 0 0 PR <BADREQ> <BADREQ> \"<BADREQ>\" h2_only/<NOSRV>\n"
    );
    assert_eq!(
        want[2].1,
        "400 206 33 PR <BADREQ> <BADREQ> \"<BADREQ>\" h1_only/<NOSRV>\n"
    );
}

const CONNECTING_CFG: &str = "global
    log {log} format raw local0 info
defaults
    mode tcp
    log global
    # Long enough that a client leaving right after the first attempt
    # starts is seen before a retry even on a loaded machine (with 100ms,
    # haproxy itself once logged two retries done).
    timeout connect 500ms
    timeout client 5s
    timeout server 5s
    retries 3
    log-format \"%cp %ft %b/%s %ts %U %B %rc\"

listen hole
    bind {fe0}
    server s1 {hole}
";

/// How each client leaves while the proxy connects to a server that never
/// accepts: what it sent, then whether it resets the connection (else it
/// closes its side).
const CONNECTING: [(&[u8], bool); 3] = [(b"", false), (b"", true), (b"hello", false)];

/// The log line of one side for a client of [`CONNECTING`], without the
/// client's port (the line of the readiness probe, logged as well, is
/// passed over). The client leaves only once the proxy is connecting to
/// the server: a close that comes before the proxy's first read of the
/// client is another case, which HAProxy 2.6 logs otherwise.
async fn connecting_line(side: &Side, &(bytes, reset): &(&[u8], bool)) -> String {
    let hole = side.hole.as_ref().expect("a {hole} server");
    let before = connecting_to(hole);
    let mut s = TcpStream::connect(side.addr(0)).await.expect("connect");
    let port = s.local_addr().expect("local_addr").port();
    // The proxy connects to the server only past its first read of the
    // client: a new attempt pending on the black hole says it is there.
    wait_until(
        Duration::from_secs(10),
        "a connection to the server",
        || {
            let before = &before;
            async move { connecting_to(hole).difference(before).next().is_some() }
        },
    )
    .await;
    if reset {
        socket2::SockRef::from(&s)
            .set_linger(Some(Duration::ZERO))
            .expect("linger");
        drop(s);
    } else {
        if !bytes.is_empty() {
            s.write_all(bytes).await.expect("send");
        }
        s.shutdown().await.expect("shutdown");
        // Until the proxy closes (a reset ends it as well).
        let _ = within(
            Duration::from_secs(10),
            "the close",
            s.read_to_end(&mut Vec::new()),
        )
        .await;
    }
    let ours = format!("{port} ");
    loop {
        let line = side.log.take(1).remove(0);
        if let Some(rest) = line.strip_prefix(&ours) {
            return rest.to_string();
        }
    }
}

/// The local ports of the connections pending to `hole` (`SYN_SENT` in
/// `/proc/net/tcp`) but those the test holds to fill its queue.
fn connecting_to(hole: &BlackHole) -> std::collections::HashSet<u16> {
    let (addr, held, _) = hole;
    let held: Vec<u16> = held
        .iter()
        .filter_map(|c| c.local_addr().ok())
        .map(|a| a.port())
        .collect();
    let SocketAddr::V4(v4) = addr else {
        panic!("the black hole is IPv4");
    };
    // /proc/net/tcp spells an address as the hex of its bytes in host
    // order, then the port.
    let want = format!(
        "{:08X}:{:04X}",
        u32::from_ne_bytes(v4.ip().octets()),
        v4.port()
    );
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (local, remote, state) = (f.get(1)?, f.get(2)?, f.get(3)?);
            if *remote != want || *state != "02" {
                return None;
            }
            u16::from_str_radix(local.rsplit(':').next()?, 16).ok()
        })
        .filter(|p| !held.contains(p))
        .collect()
}

/// `mode tcp`: a client that closes while the proxy is still connecting
/// (or waiting to retry) ends the session at once, `CC`, if it sent
/// nothing; one that resets it, `CD`; one that sent something and closed
/// waits for the retries, its bytes counted in `%U`, as HAProxy 2.6 logs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_client_leaving_while_connecting_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let want = each_case(
        CONNECTING_CFG,
        1,
        &CONNECTING,
        connecting_line,
        |c, w, g| {
            assert_eq!(g, w, "{c:?}");
        },
    )
    .await;
    assert_eq!(
        want,
        [
            "hole hole/s1 CC 0 0 0\n",
            "hole hole/s1 CD 0 0 0\n",
            "hole hole/s1 sC 5 0 3\n",
        ]
    );
}

const ANNOUNCE_CFG: &str = "global
    log {log} format raw local0 info
defaults
    mode http
    log global
    option dontlognull
    timeout connect 1s
    timeout client 5s
    timeout server 5s

listen made
    bind {fe0}
    log-format \"%ST %B %U %ts %{+Q}r\"
    http-request return status 200 content-type text/plain string hello if { path /ret }
    http-request redirect location /x if { path /redir }
    http-request deny if { path /deny }
    server s1 {srv}

frontend nobackend
    bind {fe1}
    log-format \"%ST %B %U %ts %{+Q}r\"

listen httpclose
    bind {fe2}
    log-format \"%ST %B %U %ts %{+Q}r\"
    option httpclose
    http-request return status 200 content-type text/plain string hello if { path /ret }
    http-request redirect location /x if { path /redir }
    http-request deny if { path /deny }
    server s1 {srv}

listen errorfile
    bind {fe3}
    log-format \"%ST %B %U %ts %{+Q}r\"
    errorfile 403 {page}
    errorfile 500 {plain}
    errorfile 503 {old}
    http-request deny deny_status 500 if { path /deny500 }
    http-request deny deny_status 503 if { path /deny503 }
    http-request deny if { path /deny }
    server s1 {srv}
";

/// An `errorfile` page whose head says `Connection: close` itself.
const CLOSING_PAGE: &str = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 4\r\n\r\nnope";

/// An `errorfile` page that says nothing of the connection.
const PLAIN_PAGE: &str =
    "HTTP/1.1 500 Oops\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\noops";

/// An HTTP/1.0 `errorfile` page whose body ends with the connection.
const OLD_PAGE: &str = "HTTP/1.0 503 Old\r\nContent-Type: text/plain\r\n\r\nold page\n";

/// A request closing the connection, sent behind each case.
const CLOSE: &str = "GET /deny HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";

/// The requests of the connection announcements (on which listener of
/// [`ANNOUNCE_CFG`], the request, what the server sends before it closes
/// the connection, if it does), each on
/// its own connection, [`CLOSE`] behind it.
const ANNOUNCE_REQUESTS: [(usize, &str, Option<&str>); 27] = [
    (
        0,
        "GET /ret HTTP/1.0\r\nconnection: keep-alive\r\n\r\n",
        None,
    ),
    (
        0,
        "GET /redir HTTP/1.0\r\nconnection: keep-alive\r\n\r\n",
        None,
    ),
    (
        0,
        "GET /deny HTTP/1.0\r\nconnection: keep-alive\r\n\r\n",
        None,
    ),
    (0, "GET /ret HTTP/1.0\r\n\r\n", None),
    (
        0,
        "GET /redir HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        None,
    ),
    (0, "GET /ret HTTP/1.1\r\nhost: x\r\n\r\n", None),
    (0, "GET /srv HTTP/1.1\r\nhost: x\r\n\r\n", Some("")),
    (
        0,
        "GET /srv HTTP/1.0\r\nconnection: keep-alive\r\n\r\n",
        Some(""),
    ),
    (1, "GET / HTTP/1.1\r\nhost: x\r\n\r\n", None),
    (
        1,
        "GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        None,
    ),
    (1, "GET / HTTP/1.0\r\n\r\n", None),
    (1, "GET / HTTP/1.0\r\nconnection: keep-alive\r\n\r\n", None),
    (2, "GET /ret HTTP/1.1\r\nhost: x\r\n\r\n", None),
    (2, "GET /redir HTTP/1.1\r\nhost: x\r\n\r\n", None),
    (2, "GET /deny HTTP/1.1\r\nhost: x\r\n\r\n", None),
    (
        2,
        "GET /deny HTTP/1.0\r\nconnection: keep-alive\r\n\r\n",
        None,
    ),
    (2, "GET /srv HTTP/1.1\r\nhost: x\r\n\r\n", Some("")),
    (3, "GET /deny HTTP/1.1\r\nhost: x\r\n\r\n", None),
    (
        3,
        "GET /deny HTTP/1.0\r\nconnection: keep-alive\r\n\r\n",
        None,
    ),
    (
        3,
        "GET /deny HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        None,
    ),
    (3, "GET /deny500 HTTP/1.1\r\nhost: x\r\n\r\n", None),
    (3, "GET /srv HTTP/1.1\r\nhost: x\r\n\r\n", Some("")),
    (
        0,
        "GET /srv HTTP/1.1\r\nhost: x\r\n\r\n",
        Some("HTTP/1.1 200 OK\r\nContent-"),
    ),
    (
        0,
        "GET /srv HTTP/1.0\r\nconnection: keep-alive\r\n\r\n",
        Some("HTTP/1.1 200 OK\r\n"),
    ),
    (
        0,
        "POST /srv HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\n\r\nabc",
        Some(""),
    ),
    (3, "GET /deny503 HTTP/1.1\r\nhost: x\r\n\r\n", None),
    (
        3,
        "GET /deny503 HTTP/1.0\r\nconnection: keep-alive\r\n\r\n",
        None,
    ),
];

/// The answers on one connection and their log lines, the server
/// closing after `drop` when there is one.
async fn announced(
    side: &Side,
    &(fe, req, drop): &(usize, &str, Option<&str>),
) -> (String, Vec<String>) {
    if let Some(bytes) = drop {
        side.srv.script(&[bytes.as_bytes()]);
        side.srv.set_close_after(true);
    }
    let req = format!("{req}{CLOSE}");
    let answer = haproxy::exchange(side.addr(fe), req.as_bytes(), false).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let lines = side.log.take(answer.matches("HTTP/1.").count());
    side.srv.take();
    side.srv.set_close_after(false);
    (answer, lines)
}

/// What sluice's own answers say of the connection, as HAProxy 2.6 says
/// it: `connection: keep-alive` to an HTTP/1.0 client kept alive
/// (`return`, `redirect`, error pages), `connection: close` from the 503
/// of a frontend without a backend to a client that asked to close and
/// from every page under `option httpclose`; a 502 whose server closed
/// before a whole head (`SH`) keeps the connection as any page; an
/// `errorfile`'s own `Connection` line is left out (and decides).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_announced_by_local_answers_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("announce");
    let page = dir.write("403.http", CLOSING_PAGE);
    let plain = dir.write("500.http", PLAIN_PAGE);
    let old = dir.write("503.http", OLD_PAGE);
    let cfg = ANNOUNCE_CFG
        .replace("{page}", page.to_str().expect("utf-8 path"))
        .replace("{plain}", plain.to_str().expect("utf-8 path"))
        .replace("{old}", old.to_str().expect("utf-8 path"));
    let differ = std::cell::RefCell::new(Vec::new());
    each_case(
        &cfg,
        4,
        &ANNOUNCE_REQUESTS,
        announced,
        |(fe, req, drop), w, g| {
            if g != w {
                differ.borrow_mut().push(format!(
                    "{fe} {req:?} server {drop:?}\n  haproxy {w:?}\n  sluice  {g:?}"
                ));
            }
        },
    )
    .await;
    let differ = differ.into_inner();
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// Linux's `TCP_FIN_WAIT2` (include/net/tcp_states.h): our close acked.
const TCP_FIN_WAIT2: u8 = 5;

const EARLY_CFG: &str = "global
    log {log} format raw local0 info
defaults
    mode tcp
    log global
    # Long enough that a client leaving right after the first attempt
    # starts is seen before a retry even on a loaded machine (with 100ms,
    # haproxy itself once logged two retries done).
    timeout connect 500ms
    timeout client 5s
    timeout server 5s
    retries 3
    log-format \"%cp %ft %b/%s %ts %U %B %rc\"

listen early
    bind {fe0}
    # One session at a time: the next client waits in the accept queue.
    maxconn 1
    server s1 {hole}
";

/// The log line of one side for a client of [`CONNECTING`] that leaves
/// before the proxy first reads it, without its port: it connects while
/// another client holds the one session `maxconn` allows, so it waits in
/// the accept queue; it leaves there, and the other client then resets,
/// which lets the proxy accept it.
async fn early_line(side: &Side, &(bytes, reset): &(&[u8], bool)) -> String {
    use std::os::fd::AsRawFd;
    let hole = side.hole.as_ref().expect("a {hole} server");
    let front = &side.fronts[0];
    let before = connecting_to(hole);
    let holder = TcpStream::connect(front.addr()).await.expect("connect");
    // The readiness probe's session may hold the slot: the holder's
    // connection to the server says the slot is its.
    wait_until(
        Duration::from_secs(10),
        "the holder's connection to the server",
        || {
            let before = &before;
            async move { connecting_to(hole).difference(before).next().is_some() }
        },
    )
    .await;
    let mut s = TcpStream::connect(front.addr()).await.expect("connect");
    let port = s.local_addr().expect("local_addr").port();
    wait_until(
        Duration::from_secs(10),
        "the client in the accept queue",
        || async { front.queued() == 1 },
    )
    .await;
    if reset {
        socket2::SockRef::from(&s)
            .set_linger(Some(Duration::ZERO))
            .expect("linger");
        drop(s);
    } else {
        if !bytes.is_empty() {
            s.write_all(bytes).await.expect("send");
        }
        s.shutdown().await.expect("shutdown");
        // The close is in the queued socket once the kernel acked it.
        let fd = s.as_raw_fd();
        wait_until(Duration::from_secs(10), "the close acked", || async move {
            tcp_state(fd) == TCP_FIN_WAIT2
        })
        .await;
        // Read until the proxy is done with it (the task is detached).
        let _reader = tokio::spawn(async move {
            let _ = s.read_to_end(&mut Vec::new()).await;
        });
    }
    socket2::SockRef::from(&holder)
        .set_linger(Some(Duration::ZERO))
        .expect("linger");
    drop(holder);
    let ours = format!("{port} ");
    loop {
        let line = side.log.take(1).remove(0);
        if let Some(rest) = line.strip_prefix(&ours) {
            return rest.to_string();
        }
    }
}

/// `mode tcp`: a client that has already left when the proxy first reads
/// it is not taken as leaving while the proxy connects: HAProxy 2.6 takes
/// a close found there as the end of what the client sends, and waits for
/// the retries (`sC`), and a reset as a client error before a server is
/// chosen (`CR`, `<NOSRV>`). sluice logged both as if the client had left
/// while it connected (`CC`, `CD`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_client_gone_before_first_read_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let want = each_case(EARLY_CFG, 1, &CONNECTING, early_line, |c, w, g| {
        assert_eq!(g, w, "{c:?}");
    })
    .await;
    assert_eq!(
        want,
        [
            "early early/s1 sC 0 0 3\n",
            "early early/<NOSRV> CR 0 0 0\n",
            "early early/s1 sC 5 0 3\n",
        ]
    );
}

const SD_CFG: &str = "global
    log-tag sdtest
defaults
    log {log} format rfc5424 local0 info
    # The start-up's probes send nothing: no line.
    option dontlognull
    timeout connect 1s
    timeout client 5s
    timeout server 5s

listen sd
    mode http
    bind {fe0}
    log-format \"%ft %ST %{+Q}r\"
    log-format-sd \"[req@32473 status=\\\"%ST\\\" path=\\\"%HP\\\" fe=\\\"%[fe_name]\\\"]\"
    http-request return status 200 if { path /ok }
    http-request deny if { path /deny }

# From `defaults`: a backend ignores it (with haproxy's warning).
defaults
    log {log} format rfc5424 local0 info
    log-format-sd \"[d@1 x=\\\"%ST\\\"]\"
    option dontlognull
    timeout connect 1s
    timeout client 5s
    timeout server 5s

listen inherited
    mode http
    bind {fe1}
    log-format \"%ft %ST\"
    http-request return status 204

backend ignored
    log-format-sd \"[b@1 y=\\\"1\\\"]\"
    server s1 {srv}
";

/// The line of one request, its date and pid masked (they must differ),
/// each checked for its place first.
async fn sd_line(side: &Side, &(fe, path): &(usize, &str)) -> String {
    let req = format!("GET {path} HTTP/1.1\r\nhost: ex.org\r\nconnection: close\r\n\r\n");
    client(side.addr(fe), req.as_bytes()).await;
    let line = side.log.take(1).remove(0);
    let mut f: Vec<&str> = line.splitn(6, ' ').collect();
    assert!(
        f.len() == 6 && f[1].contains('T') && f[4].parse::<u32>().is_ok(),
        "{line}"
    );
    f[1] = "<date>";
    f[4] = "<pid>";
    f.join(" ")
}

/// `log-format-sd`: RFC 5424's structured data of a frontend's lines
/// (from the listen itself and from `defaults`), as haproxy 2.6 writes
/// them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_data_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let want = each_case(
        SD_CFG,
        2,
        &[(0, "/ok"), (0, "/deny?x=1"), (1, "/"), (0, "/ok")],
        sd_line,
        |case, w, g| assert_eq!(g, w, "{case:?}"),
    )
    .await;
    assert_eq!(
        want[0],
        "<134>1 <date> - sdtest <pid> - [req@32473 status=\"200\" path=\"/ok\" fe=\"sd\"] sd 200 \"GET /ok HTTP/1.1\"\n"
    );
}
