//! Maps on the CLI against the real HAProxy 2.6: the same configuration
//! (map files read by `map_*` converters of several matchers and output
//! types) runs under haproxy and sluice, and `show map <file>` and `get
//! map <file> <key>` must answer the same bytes.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use support::haproxy::{self, Haproxy};
use support::*;

fn config(bind: &str, sock: &std::path::Path, dir: &std::path::Path) -> String {
    let d = dir.display();
    format!(
        "global
    stats socket {} level admin
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
    http-request set-var(txn.a) req.hdr(host),map_str({d}/hosts.map,none)
    http-request set-var(txn.b) req.hdr(host),map_end({d}/hosts.map)
    http-request set-var(txn.c) path,map_reg({d}/m.map)
    http-request set-var(txn.d) req.hdr(host),map_dom({d}/m.map)
    http-request set-var(txn.e) src,map_ip({d}/ip.map)
    http-request set-var(txn.f) req.hdr(x),map_int_int({d}/i.map)
    http-request set-var(txn.g) req.hdr(host),map_str_ip({d}/ipv.map)
    http-request set-var(txn.h) path,map_beg({d}/beg.map)
    http-request set-var(txn.i) src,map_ip({d}/ip.map)
    http-request set-var(txn.j) req.hdr(host),map_str({d}/edit.map)
    http-request set-var(txn.k) req.hdr(host),map_beg({d}/edit.map)
    http-request set-var(txn.l) req.hdr(host),map_str_int({d}/edit_int.map)
    http-request return status 200 content-type text/plain lf-string \"a=%[var(txn.a)] j=%[var(txn.j)] k=%[var(txn.k)] l=%[var(txn.l)] i=%[var(txn.i)]\"
",
        sock.display()
    )
}

/// The commands, with the files named `D/` (the test's directory).
const LINES: &[&str] = &[
    "show map D/hosts.map",
    "show map D/m.map",
    "show map D/ip.map",
    "show map D/i.map",
    "show map D/nope.map",
    "show map nope",
    "get map D/hosts.map a.com",
    "get map D/hosts.map b.com",
    "get map D/hosts.map x.b.com",
    "get map D/hosts.map zz",
    "get map D/m.map a.com",
    "get map D/m.map /xy",
    "get map D/m.map www.a.com",
    "get map D/ip.map 10.1.2.3",
    "get map D/ip.map 10.2.0.1",
    "get map D/ip.map 11.0.0.1",
    "get map D/ip.map notanip",
    "get map D/i.map 15",
    "get map D/i.map 5",
    "get map D/i.map x",
    "get map D/ipv.map a",
    "get map D/ipv.map b",
    "get map D/beg.map /api/v1/x",
    "get map D/beg.map /apix",
    "get map D/beg.map /other",
    "get map D/hosts.map",
    "get map",
    "get map nope a",
    "operator; get map D/hosts.map a.com",
    "operator; show map D/i.map",
    "user; show map D/i.map",
    "user; get map D/i.map 5",
];

/// Changes, in order, with what the map then holds; the rules' lookups
/// see the same (checked after).
const EDITS: &[&str] = &[
    "add map D/edit.map c.com be3",
    "add map D/edit.map a.com dup",
    "add map D/edit.map k v extra",
    "show map D/edit.map",
    "get map D/edit.map a.com",
    "get map D/edit.map k",
    "set map D/edit.map a.com new",
    "show map D/edit.map",
    "set map D/edit.map zz new",
    "del map D/edit.map a.com",
    "del map D/edit.map a.com",
    "show map D/edit.map",
    "get map D/edit.map a.com",
    "add map D/edit.map",
    "add map D/edit.map k",
    "add map nope k v",
    "set map D/edit.map",
    "set map D/edit.map k",
    "set map nope k v",
    "del map D/edit.map",
    "del map nope k",
    "add map D/edit_int.map x notint",
    "add map D/edit_int.map x 7",
    "get map D/edit_int.map x",
    "add map D/ip.map notip 1",
    "add map D/ip.map 10.2.0.0/16 4",
    "get map D/ip.map 10.2.3.4",
    "show map D/ip.map",
    "del map D/ip.map 10.0.0.0/8",
    "get map D/ip.map 10.5.3.4",
    "get map D/ip.map 127.0.0.1",
    "add map D/ip.map 127.0.0.0/8 lo",
    "clear map",
    "clear map nope",
    "clear map D/hosts.map",
    "show map D/hosts.map",
    "get map D/hosts.map a.com",
    "user; add map D/edit.map u.com user",
    "user; get map D/edit.map u.com",
    "operator; del map D/edit.map u.com",
];

/// One command line on a new connection: the whole reply.
fn cli(sock: &std::path::Path, line: &str) -> String {
    use std::io::{Read, Write};
    let mut c = std::os::unix::net::UnixStream::connect(sock).expect("connect to the CLI");
    c.write_all(format!("{line}\n").as_bytes()).expect("send");
    let mut out = Vec::new();
    c.read_to_end(&mut out).expect("reply");
    String::from_utf8_lossy(&out).into_owned()
}

/// `show map` starts each entry with the address of HAProxy's entry in
/// its memory, which no other process can reproduce: the word is masked.
fn mask_pointers(reply: &str) -> String {
    reply
        .split_inclusive('\n')
        .map(|l| match l.split_once(' ') {
            Some((w, rest))
                if w.starts_with("0x") && w[2..].bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                format!("0xPTR {rest}")
            }
            _ => l.to_string(),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn map_cli_replies_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("maps-cli");
    dir.write("hosts.map", "a.com be1\n# a comment\nb.com  be2 x\n\n");
    dir.write("m.map", "a.com 1\n^/x.* 3\n");
    dir.write("ip.map", "10.0.0.0/8 2\n10.1.0.0/16 3\n");
    dir.write("i.map", "5 1\n10:20 2\n");
    dir.write("ipv.map", "a 1.2.3.4\nb ::1\n");
    dir.write("beg.map", "/api a\n/api/v1 b\n/apix c\n");
    dir.write("edit.map", "a.com be1\nb.com be2\n");
    dir.write("edit_int.map", "a.com 1\n");
    let (hsock, ssock) = (dir.join("h.sock"), dir.join("s.sock"));
    let fronts = listens(2);
    let _hap = Haproxy::start(
        "maps-cli",
        &config(&fronts[0].to_string(), &hsock, dir.path()),
        &[&fronts[0]],
    );
    let _sl = Sluice::start(&config(&fronts[1].to_string(), &ssock, dir.path()));
    let d = dir.path().display().to_string();
    let mut differ = Vec::new();
    for line in LINES.iter().chain(EDITS) {
        let line = line.replace("D/", &format!("{d}/"));
        let (h, s) = (cli(&hsock, &line), cli(&ssock, &line));
        let (h, s) = (mask_pointers(&h), mask_pointers(&s));
        if h != s {
            differ.push(format!("{line}:\n  haproxy {h:?}\n  sluice  {s:?}"));
        }
    }
    // What the CLI changed is what the rules look up.
    for f in &fronts {
        let mut c = HttpConn::connect(f.addr()).await;
        let r = c
            .raw(b"GET / HTTP/1.1\r\nhost: c.com\r\n\r\n", false)
            .await
            .expect("response");
        let want = "a=none j=be3 k=be3 l= i=lo";
        differ.extend((r.text() != want).then(|| format!("{} {:?}", f, r.text())));
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
