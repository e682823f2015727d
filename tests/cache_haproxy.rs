//! The cache against the real HAProxy 2.6: the same configuration under
//! both, the same requests in the same order with the same server answers,
//! and for each request
//! - the response head must be equal byte for byte, but for the value of
//!   `age` (seconds on each process's clock: a second may turn between
//!   the two runs),
//! - the body must be equal,
//! - what the server received must be equal (so a hit on one is a hit on
//!   the other),
//! - the log line must be equal (`%s` is `<CACHE>` on a hit).
//!
//! Then `show cache` must list the same objects (keys, secondary keys,
//! sizes, blocks, readers), masking the addresses (each process's own)
//! and the seconds left before expiry (each process's clock), and `show
//! stat` must give the same `cache_lookups`, `cache_hits`, requests and
//! statuses on every row.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;
use support::cli_blocking as cli;

use std::io::Read as _;

use support::haproxy::{self, Haproxy, exchange};
use support::raw::RawBackend;
use support::syslog::Syslog;
use support::*;

fn config(sock: &std::path::Path, fronts: &[Listen], srv: &str, log: &str) -> String {
    let mut c = format!(
        "global
    stats socket {} level admin
    log {log} format raw local0 info
defaults
    mode http
    log global
    option dontlognull
    log-format \"%b/%s %ST %tsc %{{+Q}}r\"
    timeout connect 5s
    timeout client 5s
    timeout server 5s
cache small
    total-max-size 1
    max-age 120
cache varied
    total-max-size 2
    max-object-size 100000
    process-vary on
    max-secondary-entries 2
frontend fe
    bind {{fe0}}
    default_backend be
backend be
    http-request cache-use small
    http-response cache-store small
    http-response set-header x-hit \"%[res.cache_hit] %[res.cache_name]\"
    server s1 {{srv}}
frontend vary
    bind {{fe1}}
    http-request cache-use varied
    http-response cache-store varied
    default_backend be2
backend be2
    server s1 {{srv}}
listen zipped
    bind {{fe2}}
    filter cache small
    filter compression
    compression algo gzip
    http-request cache-use small
    http-response cache-store small
    server s1 {{srv}}
",
        sock.display()
    );
    for (n, l) in fronts.iter().enumerate() {
        c = c.replace(&format!("{{fe{n}}}"), &l.to_string());
    }
    c.replace("{srv}", srv)
}

fn ok(fields: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n{fields}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn chunked(fields: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n{fields}transfer-encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    )
    .into_bytes()
}

fn get(path: &str, fields: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nhost: example\r\nconnection: close\r\n{fields}\r\n")
}

struct Step {
    label: &'static str,
    front: usize,
    req: String,
    /// The server's answer from this step on (None: as before).
    resp: Option<Vec<u8>>,
}

fn steps() -> Vec<Step> {
    let cc = "cache-control: max-age=60\r\n";
    let mut v = Vec::new();
    let mut s = |label, front, req: String, resp: Option<Vec<u8>>| {
        v.push(Step {
            label,
            front,
            req,
            resp,
        })
    };
    s("miss, stored", 0, get("/a", ""), Some(ok(cc, "body a")));
    s("hit", 0, get("/a", ""), Some(ok(cc, "changed")));
    s("HEAD hit", 0, get("/a", "").replace("GET", "HEAD"), None);
    s(
        "chunked stored",
        0,
        get("/c", ""),
        Some(chunked(cc, "chunk body")),
    );
    s("chunked hit", 0, get("/c", ""), None);
    s(
        "etag, no max-age: stored",
        0,
        get("/e", ""),
        Some(ok(
            "etag: \"v1\"\r\nlast-modified: Sun, 06 Nov 1994 08:49:37 GMT\r\n",
            "tagged",
        )),
    );
    s(
        "if-none-match: 304",
        0,
        get("/e", "if-none-match: \"v1\"\r\n"),
        None,
    );
    s(
        "if-none-match weak: 304",
        0,
        get("/e", "if-none-match: W/\"v1\"\r\n"),
        None,
    );
    s(
        "if-none-match other: 200",
        0,
        get("/e", "if-none-match: \"v2\"\r\n"),
        None,
    );
    s(
        "if-modified-since later: 304",
        0,
        get("/e", "if-modified-since: Mon, 07 Nov 1994 08:49:37 GMT\r\n"),
        None,
    );
    s(
        "if-modified-since earlier: 200",
        0,
        get("/e", "if-modified-since: Sat, 05 Nov 1994 08:49:37 GMT\r\n"),
        None,
    );
    s(
        "no validator, no expiry: not stored",
        0,
        get("/n", ""),
        Some(ok("", "plain")),
    );
    s("not stored: miss again", 0, get("/n", ""), None);
    s(
        "private",
        0,
        get("/p", ""),
        Some(ok("cache-control: private\r\n", "p")),
    );
    s("private: miss again", 0, get("/p", ""), None);
    s(
        "no-store",
        0,
        get("/ns", ""),
        Some(ok("cache-control: no-store\r\n", "ns")),
    );
    s("no-store: miss again", 0, get("/ns", ""), None);
    s(
        "max-age=0",
        0,
        get("/m0", ""),
        Some(ok("cache-control: max-age=0\r\n", "m0")),
    );
    s("max-age=0: miss again", 0, get("/m0", ""), None);
    s(
        "expires",
        0,
        get("/x", ""),
        Some(ok("expires: Thu, 01 Jan 2099 00:00:00 GMT\r\n", "x")),
    );
    s("expires: hit", 0, get("/x", ""), None);
    s(
        "age 5 stored",
        0,
        get("/age", ""),
        Some(ok("cache-control: max-age=60\r\nage: 5\r\n", "aged")),
    );
    s("age 5: hit", 0, get("/age", ""), None);
    s(
        "age beyond max-age",
        0,
        get("/old", ""),
        Some(ok("cache-control: max-age=10\r\nage: 50\r\n", "o")),
    );
    s("age beyond: miss again", 0, get("/old", ""), None);
    s(
        "set-cookie stored",
        0,
        get("/ck", ""),
        Some(ok(&format!("{cc}set-cookie: a=1\r\n"), "ck")),
    );
    s("set-cookie: hit", 0, get("/ck", ""), None);
    s(
        "404 not stored",
        0,
        get("/404", ""),
        Some(
            b"HTTP/1.1 404 Not Found\r\ncache-control: max-age=60\r\ncontent-length: 1\r\n\r\nx"
                .to_vec(),
        ),
    );
    s("404: miss again", 0, get("/404", ""), None);
    s(
        "vary without process-vary",
        0,
        get("/v", ""),
        Some(ok(&format!("{cc}vary: accept-encoding\r\n"), "v")),
    );
    s("vary: miss again", 0, get("/v", ""), None);
    s(
        "authorization: not looked up",
        0,
        get("/a", "authorization: Basic eDp5\r\n"),
        Some(ok(cc, "auth")),
    );
    s(
        "no-cache request: not looked up",
        0,
        get("/a", "cache-control: no-cache\r\n"),
        None,
    );
    s(
        "pragma no-cache: not looked up",
        0,
        get("/a", "pragma: no-cache\r\n"),
        None,
    );
    s(
        "HTTP/1.0: not looked up",
        0,
        "GET /a HTTP/1.0\r\nhost: example\r\n\r\n".into(),
        None,
    );
    s("still a hit", 0, get("/a", ""), None);
    s(
        "POST invalidates",
        0,
        "POST /a HTTP/1.1\r\nhost: example\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
            .into(),
        Some(ok("", "posted")),
    );
    s(
        "after POST: miss",
        0,
        get("/a", ""),
        Some(ok(cc, "body a2")),
    );
    s("after POST: stored again", 0, get("/a", ""), None);
    // process-vary on: Accept-Encoding variants.
    s(
        "vary gzip stored",
        1,
        get("/vv", "accept-encoding: gzip\r\n"),
        Some(ok(
            &format!("{cc}vary: accept-encoding\r\ncontent-encoding: gzip\r\n"),
            "gz",
        )),
    );
    s(
        "vary gzip hit",
        1,
        get("/vv", "accept-encoding: gzip, br\r\n"),
        None,
    );
    s(
        "vary identity: miss",
        1,
        get("/vv", "accept-encoding: br\r\n"),
        Some(ok(&format!("{cc}vary: accept-encoding\r\n"), "id")),
    );
    s(
        "vary identity hit",
        1,
        get("/vv", "accept-encoding: br\r\n"),
        None,
    );
    s(
        "vary gzip still",
        1,
        get("/vv", "accept-encoding: gzip\r\n"),
        None,
    );
    s(
        "vary cookie: not stored",
        1,
        get("/vc", ""),
        Some(ok(&format!("{cc}vary: cookie\r\n"), "c")),
    );
    s("vary cookie: miss again", 1, get("/vc", ""), None);
    s(
        "vary referer stored",
        1,
        get("/vr", "referer: /one\r\n"),
        Some(ok(&format!("{cc}vary: referer\r\n"), "r1")),
    );
    s(
        "vary referer other: miss",
        1,
        get("/vr", "referer: /two\r\n"),
        Some(ok(&format!("{cc}vary: referer\r\n"), "r2")),
    );
    s(
        "vary referer one: hit",
        1,
        get("/vr", "referer: /one\r\n"),
        None,
    );
    // Compression after the cache: stored plain, compressed on each hit.
    s(
        "zipped stored",
        2,
        get("/z", "accept-encoding: gzip\r\n"),
        Some(ok(cc, &"zip me ".repeat(200))),
    );
    s(
        "zipped hit, compressed",
        2,
        get("/z", "accept-encoding: gzip\r\n"),
        None,
    );
    s("zipped hit, plain", 2, get("/z", ""), None);
    v
}

/// The head with `age`'s value masked, the body decoded (gzip, chunked).
fn normalize(raw: &[u8]) -> (String, Vec<u8>) {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(raw.len(), |p| p + 4);
    let head = String::from_utf8_lossy(&raw[..end]);
    // The age is each process's clock's: a second may turn between them.
    let head: String = head
        .split("\r\n")
        .map(|l| match l.strip_prefix("age: ") {
            Some(_) => "age: <masked>".to_string(),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\r\n");
    let mut body = raw[end..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        let mut data = Vec::new();
        let mut at = 0;
        while let Some(eol) = body[at..].windows(2).position(|w| w == b"\r\n") {
            let n = usize::from_str_radix(std::str::from_utf8(&body[at..at + eol]).unwrap(), 16)
                .unwrap();
            at += eol + 2;
            if n == 0 {
                break;
            }
            data.extend_from_slice(&body[at..at + n]);
            at += n + 2;
        }
        body = data;
    }
    if head.contains("content-encoding: gzip") && !body.is_empty() && body[0] == 0x1f {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&body[..])
            .read_to_end(&mut out)
            .expect("gzip");
        body = out;
    }
    (head, body)
}

/// `show cache` with each address (the process's own) and each object's
/// seconds left (each process's clock) masked.
fn show_cache(sock: &std::path::Path) -> Vec<String> {
    cli(sock, "show cache")
        .lines()
        .map(|l| {
            let words: Vec<String> = l
                .split(' ')
                .map(|w| {
                    if w.starts_with("0x") && !w.starts_with("0x0000") && w.len() > 10 {
                        "<addr>".to_string()
                    } else if w.starts_with("(shctx:0x") {
                        "(shctx:<addr>,".to_string()
                    } else if let Some(n) = w.strip_prefix("expire:") {
                        // Within a second of each other is the same.
                        format!("expire:{}", n.parse::<i64>().map_or(-1, |n| n / 2))
                    } else {
                        w.to_string()
                    }
                })
                .collect();
            words.join(" ")
        })
        .collect()
}

/// The columns of `show stat` the cache moves, every row.
fn stat_columns(sock: &std::path::Path) -> Vec<String> {
    let c = Csv::parse(&cli(sock, "show stat"));
    let col = |n: &str| c.names.iter().position(|x| x == n).expect("column");
    let cols = [
        "stot",
        "req_tot",
        "hrsp_2xx",
        "hrsp_3xx",
        "hrsp_4xx",
        "cache_lookups",
        "cache_hits",
        "comp_in",
        "comp_rsp",
    ];
    c.rows
        .iter()
        .map(|row| {
            let mut s = format!("{}/{}", row[0], row[1]);
            for n in cols {
                // The readiness probe (a connection that sends nothing) is
                // a 400 request of haproxy's frontends only.
                if row[1] == "FRONTEND" && matches!(n, "req_tot" | "hrsp_4xx") {
                    continue;
                }
                s.push_str(&format!(" {n}={}", row[col(n)]));
            }
            s
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("cache-diff");
    let socks = [dir.join("h.sock"), dir.join("s.sock")];
    let servers = [RawBackend::start().await, RawBackend::start().await];
    let logs = [Syslog::new(), Syslog::new()];
    let fronts = [listens(3), listens(3)];
    let cfgs: Vec<String> = (0..2)
        .map(|i| {
            config(
                &socks[i],
                &fronts[i],
                &servers[i].addr.to_string(),
                &logs[i].addr(),
            )
        })
        .collect();
    let refs: Vec<&Listen> = fronts[0].iter().collect();
    let _hap = Haproxy::start("cache-diff", &cfgs[0], &refs);
    let _sl = Sluice::start(&cfgs[1]);
    let mut differ = Vec::new();
    let mut hits = 0;
    for step in steps() {
        let mut got = Vec::new();
        for i in 0..2 {
            if let Some(r) = &step.resp {
                servers[i].answer(r);
            }
            let raw = exchange(fronts[i][step.front].addr(), step.req.as_bytes(), false).await;
            let (head, body) = normalize(&raw);
            let seen = String::from_utf8_lossy(&servers[i].take()).into_owned();
            let line = logs[i].take(1).remove(0);
            got.push((
                head,
                String::from_utf8_lossy(&body).into_owned(),
                seen,
                line,
            ));
        }
        hits += usize::from(got[1].3.contains("<CACHE>"));
        if got[0] != got[1] {
            differ.push(format!(
                "{}:\n  haproxy {:?}\n  sluice  {:?}",
                step.label, got[0], got[1]
            ));
        }
    }
    // The test means something only if hits happened.
    assert!(hits >= 10, "only {hits} hits");
    let caches: Vec<Vec<String>> = socks.iter().map(|s| show_cache(s)).collect();
    if caches[0] != caches[1] {
        differ.push(format!(
            "show cache:\n  haproxy {:#?}\n  sluice  {:#?}",
            caches[0], caches[1]
        ));
    }
    let stats: Vec<Vec<String>> = socks.iter().map(|s| stat_columns(s)).collect();
    if stats[0] != stats[1] {
        differ.push(format!(
            "show stat:\n  haproxy {:#?}\n  sluice  {:#?}",
            stats[0], stats[1]
        ));
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// `haproxy -c` and `sluice -c` agree on the cache section's and the
/// cache actions' errors (and accept the same lines).
#[test]
fn cache_keywords_check_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let fe = "defaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    timeout connect 1s\nfrontend fe\n    bind 127.0.0.1:8\n";
    let cases = [
        (
            "ok",
            format!(
                "{fe}    http-request cache-use c\n    http-response cache-store c\ncache c\n    total-max-size 4\n"
            ),
        ),
        ("no size", format!("{fe}cache c\n    max-age 10\n")),
        (
            "size too large",
            format!("{fe}cache c\n    total-max-size 5000\n"),
        ),
        ("bad size", format!("{fe}cache c\n    total-max-size x\n")),
        (
            "object too large",
            format!("{fe}cache c\n    total-max-size 1\n    max-object-size 600000\n"),
        ),
        (
            "bad object size",
            format!("{fe}cache c\n    total-max-size 1\n    max-object-size 1k\n"),
        ),
        (
            "process-vary bad",
            format!("{fe}cache c\n    total-max-size 1\n    process-vary maybe\n"),
        ),
        (
            "secondary 0",
            format!("{fe}cache c\n    total-max-size 1\n    max-secondary-entries 0\n"),
        ),
        (
            "unknown keyword",
            format!("{fe}cache c\n    total-max-size 1\n    colour blue\n"),
        ),
        ("no name", format!("{fe}cache\n    total-max-size 1\n")),
        (
            "duplicate",
            format!("{fe}cache c\n    total-max-size 1\ncache c\n    total-max-size 1\n"),
        ),
        (
            "unknown cache",
            format!("{fe}    http-request cache-use nope\n"),
        ),
        ("no cache name", format!("{fe}    http-request cache-use\n")),
        (
            "filter cache unknown",
            format!("{fe}    filter cache nope\n"),
        ),
        (
            "filter cache twice",
            format!("{fe}    filter cache c\n    filter cache c\ncache c\n    total-max-size 1\n"),
        ),
        (
            "compression before cache",
            format!(
                "{fe}    filter compression\n    filter cache c\ncache c\n    total-max-size 1\n"
            ),
        ),
        (
            "cache then compression",
            format!(
                "{fe}    filter cache c\n    filter compression\n    compression algo gzip\ncache c\n    total-max-size 1\n"
            ),
        ),
    ];
    let cases = cases.into_iter().map(|(l, c)| (l.to_string(), c));
    // Each file:line is the process's own temporary file: every
    // `parsing [...] : ` is taken out.
    haproxy::assert_check_agrees("cache-check", cases, |e| {
        let Some(line) = e
            .lines()
            .find(|l| l.contains("ALERT") || l.contains("WARNING"))
        else {
            return "(accepted)".into();
        };
        let mut m = line.split_once(" : ").map_or(line, |(_, m)| m).to_string();
        while let Some(at) = m.find("parsing [") {
            let Some(end) = m[at..].find("] : ").or_else(|| m[at..].find("]: ")) else {
                break;
            };
            let skip = if m[at + end..].starts_with("] : ") {
                4
            } else {
                3
            };
            m.replace_range(at..at + end + skip, "");
        }
        m
    });
}
