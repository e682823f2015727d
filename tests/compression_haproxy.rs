//! HTTP compression against the real HAProxy 2.6: the same configuration
//! under both, the same server answers and requests, and
//! - the response heads must be equal byte for byte (neither proxy adds a
//!   date here, so nothing is masked),
//! - the bodies, de-chunked and decompressed as their `content-encoding`
//!   says, must both equal what the server sent (the compressed bytes
//!   themselves differ: haproxy 2.6.12 here is built with SLZ, sluice uses
//!   zlib-rs, so only decompressed bodies are compared),
//! - what the server received must be equal (`compression offload`),
//! - the `comp_in`, `comp_byp` and `comp_rsp` columns of `show stat` must be
//!   equal; `comp_out` is masked (the encoders differ, see above) but must
//!   be filled on both or on neither.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;
use support::cli_blocking as cli;

use std::io::Read as _;

use support::haproxy::{self, Haproxy, exchange};
use support::raw::RawBackend;
use support::*;

fn config(sock: &std::path::Path, fronts: &[Listen], srv: &str) -> String {
    let mut c = format!(
        "global
    stats socket {} level admin
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend plain
    bind {{fe0}}
    compression algo gzip deflate
    compression type text/plain text/html
    http-response set-header x-comp \"%[res.comp] %[res.comp_algo]\"
    default_backend be
frontend offload
    bind {{fe1}}
    compression algo raw-deflate gzip
    compression offload
    default_backend be2
frontend ident
    bind {{fe2}}
    compression algo identity
    default_backend be2
frontend behind
    bind {{fe3}}
    compression algo gzip
    default_backend be3
frontend rules
    bind {{fe4}}
    compression algo gzip
    http-response add-header x-added yes
    http-response del-header x-gone
    default_backend be2
frontend explicit
    bind {{fe5}}
    filter compression
    compression algo deflate gzip
    default_backend be2
backend be
    server s1 {{srv}}
backend be2
    server s1 {{srv}}
backend be3
    compression algo deflate
    compression type application/json
    server s1 {{srv}}
",
        sock.display()
    );
    for (n, l) in fronts.iter().enumerate() {
        c = c.replace(&format!("{{fe{n}}}"), &l.to_string());
    }
    c.replace("{srv}", srv)
}

/// A text body that compresses.
fn text(n: usize) -> Vec<u8> {
    (0..)
        .flat_map(|i: u32| format!("line {i}: the quick brown fox\n").into_bytes())
        .take(n)
        .collect()
}

fn with_length(status: &str, fields: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 {status}\r\n{fields}content-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

fn chunked(status: &str, fields: &str, body: &[u8], trailers: &str) -> Vec<u8> {
    let mut r =
        format!("HTTP/1.1 {status}\r\n{fields}transfer-encoding: chunked\r\n\r\n").into_bytes();
    for c in body.chunks(3000) {
        r.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        r.extend_from_slice(c);
        r.extend_from_slice(b"\r\n");
    }
    r.extend_from_slice(format!("0\r\n{trailers}\r\n").as_bytes());
    r
}

fn get(path: &str, fields: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n{fields}\r\n")
}

/// The head and the body of a response as received.
fn split(resp: &[u8]) -> (String, Vec<u8>) {
    let end = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(resp.len(), |p| p + 4);
    (
        String::from_utf8_lossy(&resp[..end]).into_owned(),
        resp[end..].to_vec(),
    )
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// The body's data, de-chunked (trailers dropped) when the head says so.
fn dechunk(head: &str, body: &[u8]) -> Vec<u8> {
    if header(head, "transfer-encoding") != Some("chunked") {
        return body.to_vec();
    }
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let Some(eol) = body[at..].windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = std::str::from_utf8(&body[at..at + eol]).unwrap_or("0");
        let n = usize::from_str_radix(size.split(';').next().unwrap_or("0").trim(), 16)
            .expect("chunk size");
        at += eol + 2;
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&body[at..at + n]);
        at += n + 2;
    }
}

/// The body decoded as its `content-encoding` says.
fn decode(head: &str, body: &[u8]) -> Vec<u8> {
    let data = dechunk(head, body);
    let mut out = Vec::new();
    match header(head, "content-encoding") {
        None => return data,
        Some("gzip") => flate2::read::GzDecoder::new(&data[..]).read_to_end(&mut out),
        // HAProxy's `deflate` is zlib-wrapped, `raw-deflate` is announced
        // as `deflate` too: try zlib, then raw.
        Some("deflate") => match flate2::read::ZlibDecoder::new(&data[..]).read_to_end(&mut out) {
            Ok(n) => Ok(n),
            Err(_) => {
                out.clear();
                flate2::read::DeflateDecoder::new(&data[..]).read_to_end(&mut out)
            }
        },
        // A coding the server applied itself: passed as it is.
        Some(_) => return data,
    }
    .expect("decode the body");
    out
}

struct Case {
    label: &'static str,
    front: usize,
    req: String,
    resp: Vec<u8>,
    /// The data the client must end with.
    body: Vec<u8>,
}

fn cases() -> Vec<Case> {
    let t = text(40_000);
    let short = text(1000);
    let ct = "content-type: text/plain\r\n";
    let ae = "accept-encoding: gzip, deflate\r\n";
    let mut v = Vec::new();
    let mut add = |label, front, req: String, resp: Vec<u8>, body: &[u8]| {
        v.push(Case {
            label,
            front,
            req,
            resp,
            body: body.to_vec(),
        })
    };
    add("length", 0, get("/", ae), with_length("200 OK", ct, &t), &t);
    add(
        "chunked with trailers",
        0,
        get("/", ae),
        chunked("200 OK", ct, &t, "x-sum: 1\r\n"),
        &t,
    );
    add(
        "strong etag made weak",
        0,
        get("/", ae),
        with_length("200 OK", &format!("{ct}etag: \"v1\"\r\n"), &short),
        &short,
    );
    add(
        "weak etag kept",
        0,
        get("/", ae),
        with_length("200 OK", &format!("{ct}etag: W/\"v1\"\r\n"), &short),
        &short,
    );
    add(
        "invalid etag: not compressed",
        0,
        get("/", ae),
        with_length("200 OK", &format!("{ct}etag: v1\r\n"), &short),
        &short,
    );
    add(
        "two etags: not compressed",
        0,
        get("/", ae),
        with_length(
            "200 OK",
            &format!("{ct}etag: \"a\"\r\netag: \"b\"\r\n"),
            &short,
        ),
        &short,
    );
    add(
        "vary kept, another added",
        0,
        get("/", ae),
        with_length("200 OK", &format!("{ct}vary: cookie\r\n"), &short),
        &short,
    );
    add(
        "already encoded",
        0,
        get("/", ae),
        with_length("200 OK", &format!("{ct}content-encoding: br\r\n"), &short),
        &short,
    );
    add(
        "no-transform",
        0,
        get("/", ae),
        with_length(
            "200 OK",
            &format!("{ct}cache-control: public, no-transform\r\n"),
            &short,
        ),
        &short,
    );
    add(
        "204",
        0,
        get("/", ae),
        b"HTTP/1.1 204 No Content\r\n\r\n".to_vec(),
        b"",
    );
    add(
        "304",
        0,
        get("/", ae),
        format!("HTTP/1.1 304 Not Modified\r\n{ct}etag: \"a\"\r\n\r\n").into_bytes(),
        b"",
    );
    add(
        "201 compressed",
        0,
        get("/", ae),
        with_length("201 Created", ct, &short),
        &short,
    );
    add(
        "404 not compressed",
        0,
        get("/", ae),
        with_length("404 Not Found", ct, &short),
        &short,
    );
    add(
        "HEAD",
        0,
        format!("HEAD / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n{ae}\r\n"),
        format!("HTTP/1.1 200 OK\r\n{ct}content-length: 1000\r\n\r\n").into_bytes(),
        b"",
    );
    add(
        "HTTP/1.0 client",
        0,
        format!("GET / HTTP/1.0\r\nhost: x\r\n{ae}\r\n"),
        with_length("200 OK", ct, &short),
        &short,
    );
    add(
        "HTTP/1.0 server",
        0,
        get("/", ae),
        {
            let mut r = with_length("200 OK", ct, &short);
            r[7] = b'0';
            r
        },
        &short,
    );
    add(
        "q-values choose deflate",
        0,
        get("/", "accept-encoding: gzip;q=0.5, deflate;q=0.8\r\n"),
        with_length("200 OK", ct, &short),
        &short,
    );
    add(
        "q=0 refuses",
        0,
        get("/", "accept-encoding: gzip;q=0\r\n"),
        with_length("200 OK", ct, &short),
        &short,
    );
    add(
        "star takes the last configured",
        0,
        get("/", "accept-encoding: *\r\n"),
        with_length("200 OK", ct, &short),
        &short,
    );
    add(
        "first of equal q-values, two fields",
        0,
        get("/", "accept-encoding: gzip\r\naccept-encoding: deflate\r\n"),
        with_length("200 OK", ct, &short),
        &short,
    );
    add(
        "no accept-encoding",
        0,
        get("/", ""),
        with_length("200 OK", ct, &short),
        &short,
    );
    add(
        "unknown coding",
        0,
        get("/", "accept-encoding: compress\r\n"),
        with_length("200 OK", ct, &short),
        &short,
    );
    add(
        "type not listed",
        0,
        get("/", ae),
        with_length("200 OK", "content-type: image/png\r\n", &short),
        &short,
    );
    add(
        "type listed with parameters",
        0,
        get("/", ae),
        with_length(
            "200 OK",
            "content-type: text/html; charset=utf-8\r\n",
            &short,
        ),
        &short,
    );
    add(
        "no content-type with types",
        0,
        get("/", ae),
        with_length("200 OK", "", &short),
        &short,
    );
    add(
        "multipart",
        2,
        get("/", "accept-encoding: identity\r\n"),
        with_length("200 OK", "content-type: multipart/mixed\r\n", &short),
        &short,
    );
    add(
        "empty body",
        0,
        get("/", ae),
        with_length("200 OK", ct, b""),
        b"",
    );
    add(
        "body until close",
        0,
        get("/", ae),
        {
            let mut r = format!("HTTP/1.1 200 OK\r\n{ct}connection: close\r\n\r\n").into_bytes();
            r.extend_from_slice(&short);
            r
        },
        &short,
    );
    add(
        "old Mozilla/4 agent",
        0,
        get(
            "/",
            &format!("user-agent: Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)\r\n{ae}"),
        ),
        with_length("200 OK", ct, &short),
        &short,
    );
    add(
        "MSIE 7 is fine",
        0,
        get(
            "/",
            &format!("user-agent: Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 5.1)\r\n{ae}"),
        ),
        with_length("200 OK", ct, &short),
        &short,
    );
    add(
        "offload: accept-encoding taken out",
        1,
        get("/", "accept-encoding: deflate\r\n"),
        with_length("200 OK", ct, &t),
        &t,
    );
    add(
        "offload without a match: kept",
        1,
        get("/", "accept-encoding: br\r\n"),
        with_length("200 OK", ct, &short),
        &short,
    );
    add(
        "identity: chunked, no encoding",
        2,
        get("/", "accept-encoding: gzip\r\n"),
        with_length("200 OK", &format!("{ct}etag: \"i\"\r\n"), &t),
        &t,
    );
    add(
        "backend's algorithms and types first",
        3,
        get("/", ae),
        with_length("200 OK", "content-type: application/json\r\n", &t),
        &t,
    );
    add(
        "backend's types refuse",
        3,
        get("/", ae),
        with_length("200 OK", ct, &short),
        &short,
    );
    add(
        "rules' fields before the filter's",
        4,
        get("/", ae),
        with_length("200 OK", &format!("{ct}x-gone: 1\r\netag: \"r\"\r\n"), &t),
        &t,
    );
    add(
        "filter compression",
        5,
        get("/", ae),
        chunked("200 OK", ct, &t, ""),
        &t,
    );
    v
}

/// `show stat`'s compression columns of the frontend and backend rows:
/// `comp_out` only as whether it is filled (the encoders' bytes differ).
fn comp_columns(csv: &str) -> Vec<String> {
    let c = Csv::parse(csv);
    let col = |n: &str| c.names.iter().position(|x| x == n).expect("column");
    let (i, o, b, r) = (
        col("comp_in"),
        col("comp_out"),
        col("comp_byp"),
        col("comp_rsp"),
    );
    c.rows
        .iter()
        .filter(|row| row[1] == "FRONTEND" || row[1] == "BACKEND")
        .map(|row| {
            let filled = row[o].parse::<u64>().unwrap_or(0) > 0;
            format!(
                "{}/{} in={} out>0={filled} byp={} rsp={}",
                row[0], row[1], row[i], row[b], row[r]
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compression_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("comp-diff");
    let socks = [dir.join("h.sock"), dir.join("s.sock")];
    let servers = [RawBackend::start().await, RawBackend::start().await];
    let fronts = [listens(6), listens(6)];
    let cfgs: Vec<String> = (0..2)
        .map(|i| config(&socks[i], &fronts[i], &servers[i].addr.to_string()))
        .collect();
    let refs: Vec<&Listen> = fronts[0].iter().collect();
    let _hap = Haproxy::start("comp-diff", &cfgs[0], &refs);
    let _sl = Sluice::start(&cfgs[1]);
    let mut differ = Vec::new();
    for case in cases() {
        let mut got = Vec::new();
        for i in 0..2 {
            servers[i].answer(&case.resp);
            let raw = exchange(fronts[i][case.front].addr(), case.req.as_bytes(), false).await;
            let (head, body) = split(&raw);
            let data = decode(&head, &body);
            if data != case.body {
                differ.push(format!(
                    "{}: {} body decodes to {} bytes, not the server's {}",
                    case.label,
                    ["haproxy", "sluice"][i],
                    data.len(),
                    case.body.len()
                ));
            }
            let seen = String::from_utf8_lossy(&servers[i].take()).into_owned();
            got.push((head, seen));
        }
        if got[0] != got[1] {
            differ.push(format!(
                "{}:\n  haproxy {:?}\n  sluice  {:?}",
                case.label, got[0], got[1]
            ));
        }
    }
    let stats: Vec<Vec<String>> = socks
        .iter()
        .map(|s| comp_columns(&cli(s, "show stat")))
        .collect();
    if stats[0] != stats[1] {
        differ.push(format!(
            "show stat:\n  haproxy {:?}\n  sluice  {:?}",
            stats[0], stats[1]
        ));
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// `haproxy -c` and `sluice -c` agree on the compression and filter
/// keywords' errors (and accept the same lines); `br` and `zstd` are
/// sluice's own, which haproxy refuses.
#[test]
fn compression_keywords_check_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let head = "defaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    timeout connect 1s\nfrontend fe\n    bind 127.0.0.1:8\n";
    let lines = [
        "compression algo gzip deflate raw-deflate identity",
        "compression algo",
        "compression algo lzma",
        "compression type",
        "compression type text/html text/plain",
        "compression offload",
        "compression",
        "compression nothing",
        "filter",
        "filter compression\n    filter compression",
        "filter compression extra",
        "filter nope",
        "filter compression\n    compression algo gzip",
    ];
    let cases = lines
        .iter()
        .map(|l| (l.to_string(), format!("{head}    {l}\n")));
    // Each file:line is the process's own temporary file: every
    // `parsing [...] : ` is taken out (some messages name it twice).
    haproxy::assert_check_agrees("comp-check", cases, |e| {
        let Some(line) = e
            .lines()
            .find(|l| l.contains("ALERT") || l.contains("WARNING"))
        else {
            return "(accepted)".into();
        };
        let mut m = line
            .split_once("config : ")
            .map_or(line, |(_, m)| m)
            .to_string();
        while let Some(at) = m.find("parsing [") {
            let Some(end) = m[at..].find("] : ") else {
                break;
            };
            m.replace_range(at..at + end + 4, "");
        }
        m
    });
    // `compression offload` in `defaults` is ignored with a warning.
    let cfg = "defaults\n    mode http\n    compression offload\n";
    let ((hcode, herr), out) = haproxy::check_both("comp-check-def", cfg);
    assert_eq!(hcode, out.code(), "{herr}\n{}", out.stderr);
    assert!(
        out.stderr
            .contains("'compression' : 'offload' ignored in 'defaults' section."),
        "{}",
        out.stderr
    );
    // sluice's additions: haproxy refuses them, sluice takes them.
    for algo in ["br", "zstd"] {
        let cfg = format!("{head}    compression algo {algo}\n");
        let ((hcode, _), out) = haproxy::check_both("comp-check-br", &cfg);
        assert_eq!(hcode, Some(1), "haproxy takes {algo}?");
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
    }
}
