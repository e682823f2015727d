//! `h1-case-adjust`, `h1-case-adjust-file` and `option
//! h1-case-adjust-bogus-client|server`, against the real HAProxy 2.6: the
//! same configuration under haproxy and sluice, each in front of a raw
//! backend that records every byte; the bytes the server receives, the
//! client's answer and the log line must be equal. Covered: the names
//! respelled in requests to the server (the ones the proxy adds too:
//! `x-forwarded-for`, an `http-request add-header`, the framing, the
//! trailer fields of a chunked body) and in
//! answers to the client (a server's, and the proxy's own pages: a deny,
//! a return), and nothing respelled where a proxy does not ask for it.
//! Then `haproxy -c` and `sluice -c` on faulty lines and files: the same
//! exit code and alert.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use support::haproxy::{self, Haproxy, Pair};
use support::{TempDir, run_sluice};

/// The requests, each on a new connection, to each frontend.
const REQUESTS: &[&str] = &[
    "POST /a HTTP/1.1\r\nHost: a\r\nx-foo: B\r\nX-Bar: Q\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx",
    "POST /c HTTP/1.1\r\nhost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n1\r\nx\r\n0\r\nX-Foo: t\r\nx-bar: u\r\n\r\n",
    // The server is sent the `connection: keep-alive` the proxy adds.
    "GET /k HTTP/1.0\r\nhost: a\r\n\r\n",
    "GET /deny HTTP/1.1\r\nhost: a\r\nConnection: close\r\n\r\n",
    "GET /ret HTTP/1.1\r\nhost: a\r\nConnection: close\r\n\r\n",
];

/// What the server answers, in mixed case.
const ANSWER: &str = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Bar: Y\r\nx-foo: z\r\nCache-Control: private\r\n\r\nok";

/// The file's entries, with what HAProxy skips: comments, blank lines,
/// spaces and tabs around the names.
const FILE: &str =
    "# respelled for bogus peers\n\n  x-foo\t X-FOO \ncache-control Cache-CONTROL\r\n";

fn config(file: &str) -> String {
    format!(
        "global
    log {{log}} format raw local0 info
    h1-case-adjust content-length Content-Length
    h1-case-adjust Host HOST
    h1-case-adjust x-bar X-Bar
    h1-case-adjust connection Connection
    h1-case-adjust x-forwarded-for X-Forwarded-For
    h1-case-adjust x-added X-Added
    h1-case-adjust x-resp X-RESP
    h1-case-adjust transfer-encoding Transfer-Encoding
    h1-case-adjust content-type Content-Type
    h1-case-adjust-file {file}
defaults
    mode http
    log global
    option dontlognull
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {{fe0}}
    option h1-case-adjust-bogus-client
    log-format \"%ci %f %b/%s %ST %ts %{{+Q}}r\"
    http-request add-header x-added a
    http-response add-header x-resp b
    http-request deny if {{ path /deny }}
    http-request return status 200 content-type text/plain string hi if {{ path /ret }}
    default_backend be
frontend plain
    bind {{fe1}}
    log-format \"%ci %f %b/%s %ST %ts %{{+Q}}r\"
    http-request add-header x-added a
    http-request deny if {{ path /deny }}
    http-request return status 200 content-type text/plain string hi if {{ path /ret }}
    default_backend be2
backend be
    option h1-case-adjust-bogus-server
    option forwardfor
    server s {{srv}}
backend be2
    option forwardfor
    server s {{srv}}
"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_respelled_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("h1case-file");
    let file = dir.write("names", FILE);
    let pair = Pair::start("h1case", &config(file.to_str().unwrap()), 2).await;
    pair.answer(ANSWER.as_bytes());
    let mut differ = haproxy::Differences::default();
    for n in 0..2 {
        for req in REQUESTS {
            let [h, s] = pair.both(n, req).await;
            differ.compare(format!("fe{n} {req:?}"), &h, &s);
        }
    }
    differ.assert_none();
}

/// The alerts of a `-c` run, without their tag, process id and the
/// configuration file they name (each side has its own).
fn alerts(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.starts_with("[ALERT]"))
        .filter_map(|l| l.split_once(" : config : ").map(|(_, m)| m))
        .filter(|m| !m.contains("Fatal errors") && !m.contains("Error(s) found"))
        .map(|m| {
            m.strip_prefix("parsing [")
                .and_then(|r| r.split_once(':'))
                .map_or(m.to_string(), |(_, r)| format!("line {r}"))
        })
        .collect()
}

/// Faulty global lines, and files for `h1-case-adjust-file` (`@FILE@`
/// names the file holding the text after the `|`).
const FAULTY: &[&str] = &[
    "h1-case-adjust Content-Length Content-Length",
    "h1-case-adjust content-length Content-Lengt",
    "h1-case-adjust content-length",
    "h1-case-adjust",
    "h1-case-adjust content-length Content-Length x",
    "h1-case-adjust content-length Content-Length\n    h1-case-adjust Content-length CONTENT-LENGTH",
    "h1-case-adjust-file",
    "h1-case-adjust-file a b",
    "h1-case-adjust-file /nonexistent/h1-case",
    "h1-case-adjust-file @FILE@|x-a X-A\n",
    "h1-case-adjust-file @FILE@|X-d x-d\n",
    "h1-case-adjust-file @FILE@|# c\n\n  x-b   X-B  \nx-c X-C junk\n",
    "h1-case-adjust-file @FILE@|x-e\n",
    "h1-case-adjust-file @FILE@|x-f X-F\nx-f X-f\n",
    "h1-case-adjust x-a X-A\n    h1-case-adjust-file @FILE@|x-a X-A\n",
    "h1-case-adjust-file /nonexistent/h1-case\n    h1-case-adjust-file @FILE@|x-a X-A\n",
];

#[test]
fn faulty_lines_and_files_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("h1case-check");
    let mut differ = haproxy::Differences::default();
    for case in FAULTY {
        let (line, text) = case.split_once('|').unwrap_or((case, ""));
        let file = dir.write("names", text);
        let line = line.replace("@FILE@", file.to_str().unwrap());
        let cfg = format!(
            "global\n    {line}\ndefaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\nfrontend fe\n    bind 127.0.0.1:1\n    option h1-case-adjust-bogus-client\n    default_backend be\nbackend be\n    option h1-case-adjust-bogus-server\n    server s 127.0.0.1:1\n"
        );
        let (hcode, herr) = Haproxy::check("h1case-check", &cfg);
        let path = dir.write("sluice.cfg", &cfg);
        let out = run_sluice(&["-c", "-f", path.to_str().unwrap()], None);
        let (h, s) = (alerts(&herr), alerts(&out.stderr));
        if hcode != out.code() || h.first() != s.first() {
            differ.push(format!(
                "{case:?}:\n  haproxy {hcode:?} {h:?}\n  sluice  {:?} {s:?}",
                out.code()
            ));
        }
    }
    differ.assert_none();
}
