//! Maps and ACLs on the CLI against the real HAProxy 2.6: the same
//! configuration (map files read by `map_*` converters of several matchers
//! and output types, ACL pattern files and lines) runs under haproxy and
//! sluice, and the `map` and `acl` commands must answer the same bytes and
//! change the requests' answers alike.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;
use support::cli_blocking as cli;

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

/// The pattern references: ACL `-f` files shared by every ACL that reads
/// them, an ACL line's own patterns, map files shared by their
/// converters; named by file or `#<id>`.
fn refs_config(bind: &str, sock: &std::path::Path, dir: &std::path::Path) -> String {
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
    acl a1 path_beg -f {d}/paths.acl
    acl a2 path_beg /x /y
    acl a3 path -f {d}/paths.acl
    acl a4 src -u 1 10.0.0.0/8
    acl a5 hdr(host) -i -f {d}/hosts.acl
    http-request set-var(txn.m) req.hdr(host),map_str({d}/hosts.map,none)
    http-request set-var(txn.n) src,map_ip({d}/ip.map)
    http-request set-var(txn.o) req.hdr(host),map_beg({d}/hosts.map)
    http-request set-var(txn.p) req.hdr(host),map_end({d}/hosts.map)
    http-request set-var(txn.q) req.hdr(host),map_sub({d}/hosts.map)
    http-request return status 403 if {{ path_end .php }} || METH_POST
    http-request return status 404 if METH_PUT {{ path_end .x }} || METH_POST
    use_backend be4 if a4 {{ path /src }}
    use_backend be1 if a1
    use_backend be2 if a2 || a3
    use_backend be3 if a5
    default_backend be0
backend be0
    acl b1 path_beg -f {d}/paths.acl
    http-request return status 200 content-type text/plain lf-string \"be0 b1 m=%[var(txn.m)]\" if b1
    http-request return status 200 content-type text/plain lf-string \"be0 m=%[var(txn.m)] n=%[var(txn.n)] o=%[var(txn.o)] p=%[var(txn.p)] q=%[var(txn.q)]\"
backend be1
    http-request return status 200 content-type text/plain string be1
backend be2
    http-request return status 200 content-type text/plain string be2
backend be3
    http-request return status 200 content-type text/plain string be3
backend be4
    http-request return status 200 content-type text/plain string be4
",
        sock.display()
    )
}

/// CLI lines, and requests (`GET <path> <host>`) whose answers show which
/// rule the patterns now select.
const REF_STEPS: &[&str] = &[
    "show map",
    "show acl",
    "show acl #0",
    "show acl #1",
    "show acl #2",
    "show acl #3",
    "show map #6",
    "show map #0",
    "show acl #6",
    "show acl D/paths.acl",
    "show map D/paths.acl",
    "show acl D/hosts.map",
    "show acl #",
    "show acl #+0",
    "show acl #x",
    "show acl #-1",
    "show acl #99",
    "get acl #0 /api/x",
    "get acl D/paths.acl /static",
    "get acl #1 10.1.1.1",
    "get acl #5 a.com",
    "get map #0 /api",
    "get map #6 a.com",
    "get map #6 xa.com",
    "get acl #99 a",
    "get acl #0",
    "GET /api/x a.com",
    "GET /new/x a.com",
    "GET /new a.com",
    "add acl D/paths.acl /new",
    "GET /new/x a.com",
    "GET /new a.com",
    "show acl",
    "del acl D/paths.acl /api",
    "GET /api/x a.com",
    "GET /api a.com",
    "del acl D/paths.acl /api",
    "show acl #0",
    "add acl #3 /z",
    "GET /z/1 a.com",
    "del acl #3 /x",
    "GET /x/1 a.com",
    "GET /src a.com",
    "add acl #1 127.0.0.0/8",
    "GET /src a.com",
    "add acl #1 nonip",
    "get acl #1 127.0.0.1",
    "GET / b.com",
    "add acl D/hosts.acl B.COM",
    "GET / b.com",
    "GET / c.com",
    "add acl D/hosts.map x",
    "add acl #6 x",
    "add acl #0",
    "add acl",
    "add acl nope x",
    "del acl #6 a.com",
    "del map #0 /static",
    "del acl #0",
    "del acl nope x",
    "clear acl #6",
    "clear acl",
    "clear acl nope",
    "add map #6 c.com be9",
    "GET / c.com",
    "show acl #6",
    "set map #6 b.com zz",
    "set map #6 c.com zz",
    "add map #7 d.com be9",
    "GET / d.com",
    "show map",
    "show map #7",
    "del map #7 a.com",
    "show map",
    "set map #7 d.com zz",
    "GET / d.com",
    "add map #8 notip 1",
    "add map #8 10.0.0.0/8",
    "show map",
    "clear map #7",
    "GET / d.com",
    "clear acl #0",
    "GET /static a.com",
    "show acl",
    "show map",
    "user; show acl",
    "user; add acl #0 /u",
    "operator; get acl #0 /u",
];

/// `show map|acl`'s list names the configuration file each proxy read,
/// its own copy in its own directory: the name is masked. HAProxy's list
/// of ACLs also holds the two of its internal HTTP client (`file
/// 'httpclient'`), which sluice does not have: those lines are left out.
fn mask_refs(reply: &str, cfg: &str) -> String {
    reply
        .split_inclusive('\n')
        .filter(|l| !l.contains("file 'httpclient'"))
        .map(|l| l.replace(cfg, "CFG"))
        .collect()
}

/// A configuration for a bind address, a CLI socket and the directory of
/// the pattern files.
type ConfigFn<'a> = &'a dyn Fn(&str, &std::path::Path, &std::path::Path) -> String;

/// Runs `steps` (CLI lines, and `GET <path> <host> [<name>:<value>]...`
/// requests) against haproxy and sluice on `cfg` (by default
/// [`refs_config`]); the differences.
async fn differences(tag: &str, steps: &[&str]) -> Vec<String> {
    differences_on(tag, steps, &refs_config).await
}

async fn differences_on(tag: &str, steps: &[&str], cfg: ConfigFn<'_>) -> Vec<String> {
    let dir = TempDir::new(tag);
    dir.write("paths.acl", "/api\n/static\n");
    dir.write("hosts.acl", "a.com\n");
    dir.write("hosts.map", "a.com be1\nb.com be2\n");
    dir.write("ip.map", "10.0.0.0/8 x\n");
    let (hsock, ssock) = (dir.join("h.sock"), dir.join("s.sock"));
    let fronts = listens(2);
    let hap = Haproxy::start(
        tag,
        &cfg(&fronts[0].to_string(), &hsock, dir.path()),
        &[&fronts[0]],
    );
    let sl = Sluice::start(&cfg(&fronts[1].to_string(), &ssock, dir.path()));
    let d = dir.path().display().to_string();
    let mut differ = Vec::new();
    for step in steps {
        let step = step.replace("D/", &format!("{d}/"));
        let (h, s) = match step.strip_prefix("GET ") {
            Some(req) => {
                let mut words = req.split(' ');
                let (path, host) = (words.next().unwrap_or("/"), words.next().unwrap_or(""));
                let fields: String = words
                    .filter_map(|w| w.split_once(':'))
                    .map(|(n, v)| format!("{n}: {v}\r\n"))
                    .collect();
                let mut got = Vec::new();
                for f in &fronts {
                    let mut c = HttpConn::connect(f.addr()).await;
                    let raw = format!("GET {path} HTTP/1.1\r\nhost: {host}\r\n{fields}\r\n");
                    let r = c.raw(raw.as_bytes(), false).await.expect("response");
                    got.push(format!("{} {}", r.status, r.text()));
                }
                (got[0].clone(), got[1].clone())
            }
            None => (
                mask_refs(&mask_pointers(&cli(&hsock, &step)), &hap.config_path()),
                mask_refs(
                    &mask_pointers(&cli(&ssock, &step)),
                    &sl.path("sluice.cfg").display().to_string(),
                ),
            ),
        };
        if h != s {
            differ.push(format!("{step}:\n  haproxy {h:?}\n  sluice  {s:?}"));
        }
    }
    differ
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pattern_references_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let differ = differences("maps-refs", REF_STEPS).await;
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// Versions: `prepare`, entries added to a version requests do not see
/// yet, `commit` making it the one they see (the older ones gone).
const VERSION_STEPS: &[&str] = &[
    "prepare map #7",
    "prepare map #7",
    "show map",
    "add map @1 #7 c.com v1",
    "add map @3 #7 c.com v1",
    "add map @2 #7 d.com v2",
    "add map @1 #7 notint x",
    "add map @1 #7",
    "show map @1 #7",
    "show map @2 #7",
    "show map @0 #7",
    "show map #7",
    "show map @1",
    "show map @x #7",
    "get map #7 c.com",
    "GET / c.com",
    "set map #7 c.com v9",
    "show map @1 #7",
    "show map",
    "commit map #7",
    "commit map @1",
    "commit map @3 #7",
    "commit map @0 #7",
    "commit map @1 #7",
    "show map",
    "show map #7",
    "get map #7 c.com",
    "GET / c.com",
    "GET / a.com",
    "show map @2 #7",
    "clear map @2 #7",
    "show map",
    "del map #7 c.com",
    "show map",
    "GET /new/1 a.com",
    "prepare acl #0",
    "add acl @1 #0 /new",
    "add acl @1 #0 /v2",
    "del acl #0 /v2",
    "show acl @1 #0",
    "GET /new/1 a.com",
    "GET /api/1 a.com",
    "show acl",
    "commit acl @1 #0",
    "GET /new/1 a.com",
    "GET /api/1 a.com",
    "show acl #0",
    "show acl",
    "prepare acl #0",
    "commit acl @1 #0",
    "commit acl @2 #0",
    "show acl #0",
    "GET /new/1 a.com",
    "prepare acl nope",
    "prepare acl",
    "prepare map #0",
    "commit acl @1",
    "commit acl",
    "commit map @1 #0",
    "clear acl @7 #0",
    "add acl @7 #0 /x",
    "add map @7 #7 x y",
    "add acl @4294967295 #0 /x",
    "show acl",
    "user; prepare acl #3",
    "operator; commit acl @1 #3",
    "show acl #3",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let differ = differences("maps-versions", VERSION_STEPS).await;
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// The rule actions that change pattern files: `add-acl`, `del-acl`,
/// `set-map`, `del-map`, in `http-request` and `http-response` rules.
fn actions_config(
    server: &str,
) -> impl Fn(&str, &std::path::Path, &std::path::Path) -> String + '_ {
    move |bind, sock, dir| {
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
    acl blocked path_beg -f {d}/paths.acl
    acl hosts hdr(host) -f {d}/hosts.acl
    http-request add-acl({d}/paths.acl) %[req.hdr(x-block)] if {{ req.hdr(x-block) -m found }}
    http-request del-acl({d}/paths.acl) %[req.hdr(x-unblock)] if {{ req.hdr(x-unblock) -m found }}
    http-request set-map({d}/hosts.map) %[req.hdr(x-key)] %[req.hdr(x-val)] if {{ req.hdr(x-key) -m found }}
    http-request del-map({d}/hosts.map) %[req.hdr(x-del)] if {{ req.hdr(x-del) -m found }}
    http-request set-map({d}/ip.map) %[req.hdr(x-net)] v if {{ req.hdr(x-net) -m found }}
    http-request add-acl({d}/nope.acl) x
    http-request set-var(txn.p) path
    http-request return status 403 content-type text/plain string blocked if blocked
    http-request return status 200 content-type text/plain lf-string \"m=%[req.hdr(host),map_str({d}/hosts.map,none)] h=1\" if {{ path /show }} hosts
    http-request return status 200 content-type text/plain lf-string \"m=%[req.hdr(host),map_str({d}/hosts.map,none)] h=0\" if {{ path /show }}
    default_backend be
backend be
    http-response add-acl({d}/hosts.acl) %[res.hdr(x-backend)]
    http-response set-map({d}/hosts.map) %[var(txn.p)] %[status]
    http-response del-acl({d}/hosts.acl) a.com if {{ var(txn.p) -m str /unhost }}
    server s1 {server}
",
            sock.display()
        )
    }
}

const ACTION_STEPS: &[&str] = &[
    "GET /show a.com",
    "GET /x/1 a.com x-block:/x",
    "GET /x/2 a.com",
    "show acl #0",
    "GET /x/2 a.com x-block:/x",
    "show acl",
    "GET /x/3 a.com x-unblock:/x",
    "GET /x/3 a.com x-unblock:/nothere",
    "GET /api/1 a.com x-unblock:/api",
    "show acl #0",
    "GET /show c.com x-key:c.com x-val:be3",
    "GET /show c.com",
    "GET /show c.com x-key:c.com x-val:be4",
    "show map",
    "GET /show c.com x-del:c.com",
    "GET /show a.com x-del:a.com",
    "GET /show a.com",
    "GET /show a.com x-net:notip",
    "GET /show a.com x-net:10.1.0.0/16",
    "show map",
    "get map D/ip.map 10.1.2.3",
    "GET /r1 a.com",
    "GET /show s1 ",
    "GET /show r1",
    "GET /r1 a.com",
    "show map",
    "get map D/hosts.map /r1",
    "show acl",
    "GET /unhost a.com",
    "GET /show a.com",
    "show acl",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_actions_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let server = Backend::start("s1").await;
    let hostport = server.hostport();
    let cfg = actions_config(&hostport);
    let differ = differences_on("maps-actions", ACTION_STEPS, &cfg).await;
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// A file read with values (a map, an ACL's `-M`) and without (an ACL):
/// HAProxy refuses the second reader, whichever comes first.
#[test]
fn one_and_two_column_files_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("maps-columns");
    dir.write("f.map", "/a 1\n");
    let f = dir.join("f.map").display().to_string();
    let acl = format!("    acl a1 path_beg -f {f}\n");
    let acl_m = format!("    acl a1 path_beg -M -f {f}\n");
    let map = format!("    http-request set-var(txn.a) path,map_beg({f},none)\n");
    let cfg = |first: &str, second: &str| {
        format!(
            "defaults\n    mode http\n    timeout connect 5s\n    timeout client 5s\n    timeout server 5s\nfrontend fe\n    bind 127.0.0.1:0\n{first}{second}    http-request deny if a1\n"
        )
    };
    let cases = [
        ("acl, then map", cfg(&acl, &map)),
        ("map, then acl", cfg(&map, &acl)),
        ("acl -M, then map", cfg(&acl_m, &map)),
        ("map, then acl -M", cfg(&map, &acl_m)),
        ("acl -M, then acl", cfg(&acl_m, &acl.replace("a1", "a2"))),
    ]
    .map(|(l, c)| (l.to_string(), c));
    haproxy::assert_check_agrees("maps-columns", cases, haproxy::first_alert);
}

/// The formats HAProxy reads once the configuration is parsed (a dynamic
/// `use_backend`, `unique-id-format`): their maps are numbered after the
/// others (and after the two ACLs of haproxy's own HTTP client), a file
/// they share with a rule is the rule's, and the CLI changes what they
/// look up.
fn late_config(bind: &str, sock: &std::path::Path, dir: &std::path::Path) -> String {
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
    unique-id-format %[req.hdr(host),map_str({d}/uid.map,u0)]
    acl a1 path_beg -f {d}/paths.acl
    http-request set-var(txn.x) req.hdr(host),map_str({d}/uid.map,u0)
    http-request deny if a1
    http-request return status 200 content-type text/plain lf-string \"uid=%[unique-id] x=%[var(txn.x)]\" if {{ path /uid }}
    use_backend %[req.hdr(host),map_str({d}/be.map,be0)]
backend be0
    http-request return status 200 content-type text/plain string be0
backend be1
    http-request return status 200 content-type text/plain string be1
",
        sock.display()
    )
}

const LATE_STEPS: &[&str] = &[
    "show map",
    "show acl",
    "GET / a.com",
    "add map D/be.map a.com be1",
    "GET / a.com",
    "GET /uid c.com",
    "add map D/uid.map c.com U1",
    "GET /uid c.com",
    "show map",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_formats_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let dir_files = |d: &std::path::Path| {
        for f in ["uid.map", "be.map"] {
            std::fs::write(d.join(f), "b.com x\n").expect("write map");
        }
    };
    let cfg = |bind: &str, sock: &std::path::Path, dir: &std::path::Path| {
        dir_files(dir);
        late_config(bind, sock, dir)
    };
    let differ = differences_on("maps-late", LATE_STEPS, &cfg).await;
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// `map_regm`: the value of the first regex that matches, its `\<n>`
/// replaced by the groups (a group that did not take part, or one the
/// regex has not, by nothing), `\xHH` by a byte, `\<c>` by `c`; a value
/// ending in a lone backslash gives no sample. `map_reg` on the same file
/// gives the values as written.
fn regm_config(bind: &str, sock: &std::path::Path, dir: &std::path::Path) -> String {
    let d = dir.display();
    std::fs::write(
        dir.join("regm.map"),
        "^/api/([a-z]+)/(\\d+)$ backend=\\1 id=\\2 whole=\\0 none=\\9\n\
         ^/x(.*) X\\1\\1\n\
         ^/h(a)?(b) hex=\\x41\\x4g q=\\q s=\\\\ opt=[\\1]\n\
         ^/t(.*) trail\\\n",
    )
    .expect("write map");
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
    http-request return status 200 content-type text/plain lf-string \"[%[path,map_regm({d}/regm.map,def)]] [%[path,map_reg({d}/regm.map)]]\"
",
        sock.display()
    )
}

const REGM_STEPS: &[&str] = &[
    "GET /api/users/42 a",
    "GET /xab a",
    "GET /nope a",
    "GET /hb a",
    "GET /hab a",
    "GET /tq a",
    "show map",
    "get map D/regm.map /xab",
    "get map D/regm.map /nope",
    "add map D/regm.map ^/n(o)pe N\\1",
    "GET /nope a",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn map_regm_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let differ = differences_on("maps-regm", REGM_STEPS, &regm_config).await;
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// `add map <map> <<` with a payload of `<key> <value>` lines, read as
/// HAProxy reads it (the key ends at the first blank, a line that
/// starts with one has an empty key, the value keeps its trailing
/// blanks; the first entry refused ends it, those before stay), and the
/// entries named by id: `set map` and `del map` take `#0x<id>` as `show
/// map` shows it (an id no entry has, a malformed one, `#<key>`).
const PAYLOAD_STEPS: &[&str] = &[
    "add map D/hosts.map <<\nc.com 3\nd.com three words  \n  e.com 5\n",
    "show map D/hosts.map",
    "GET / c.com",
    "GET / d.com",
    "add map D/ip.map <<\n10.1.0.0/16 y\nnotanip z\n10.2.0.0/16 w\n",
    "show map D/ip.map",
    "add map D/hosts.map <<\nf.com 6\nonlykey\n",
    "add map D/hosts.map <<\n",
    "add map D/hosts.map g.com <<\nh.com 8\n",
    "add map nope <<\nx y\n",
    "add map @1 D/hosts.map <<\nx y\n",
    "show map D/hosts.map",
    "set map D/hosts.map #ENTRY2 changed",
    "GET / b.com",
    "set map D/hosts.map #0x1 z",
    "set map D/hosts.map #0xzz z",
    "set map D/hosts.map #zz z",
    "del map D/hosts.map #ENTRY1",
    "show map D/hosts.map",
    "GET / a.com",
    "del map D/hosts.map #ENTRY1",
    "del map D/hosts.map #0x",
    "del map D/hosts.map #0x1",
    "del map D/hosts.map #zz",
    "show map D/hosts.map",
    "add acl D/paths.acl <<\n/x\n",
    "show acl D/paths.acl",
    "prepare map D/hosts.map",
    "add map @1 D/hosts.map <<\nv.com 1\nw.com 2\n",
    "show map @1 D/hosts.map",
    "commit map @1 D/hosts.map",
    "show map D/hosts.map",
    "GET / w.com",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_and_entry_ids_as_haproxy() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("maps-payload");
    dir.write("paths.acl", "/api\n/static\n");
    dir.write("hosts.acl", "a.com\n");
    dir.write("hosts.map", "a.com be1\nb.com be2\n");
    dir.write("ip.map", "10.0.0.0/8 x\n");
    let (hsock, ssock) = (dir.join("h.sock"), dir.join("s.sock"));
    let fronts = listens(2);
    let hap = Haproxy::start(
        "maps-payload",
        &refs_config(&fronts[0].to_string(), &hsock, dir.path()),
        &[&fronts[0]],
    );
    let sl = Sluice::start(&refs_config(&fronts[1].to_string(), &ssock, dir.path()));
    let d = dir.path().display().to_string();
    let mut differ = Vec::new();
    for (n, step) in PAYLOAD_STEPS.iter().enumerate() {
        let step = step.replace("D/", &format!("{d}/"));
        let mut got = Vec::new();
        for (i, sock) in [&hsock, &ssock].into_iter().enumerate() {
            if let Some(req) = step.strip_prefix("GET ") {
                let (path, host) = req.split_once(' ').unwrap_or((req, ""));
                let mut c = HttpConn::connect(fronts[i].addr()).await;
                let raw = format!("GET {path} HTTP/1.1\r\nhost: {host}\r\n\r\n");
                let r = c.raw(raw.as_bytes(), false).await.expect("response");
                got.push(format!("{} {}", r.status, r.text()));
                continue;
            }
            // `#ENTRY<n>`: the id `show map` gives the n-th entry (from
            // 1) on this side, each its own.
            let mut line = step.clone();
            if let Some(at) = line.find("#ENTRY") {
                let n: usize = line[at + 6..at + 7].parse().expect("entry number");
                let file = format!("{d}/hosts.map");
                let shown = cli(sock, &format!("show map {file}"));
                let id = shown.lines().nth(n - 1).and_then(|l| l.split(' ').next());
                line = line.replace(&format!("#ENTRY{n}"), &format!("#{}", id.unwrap_or("?")));
            }
            let cfg = if i == 0 {
                hap.config_path()
            } else {
                sl.path("sluice.cfg").display().to_string()
            };
            got.push(mask_refs(&mask_pointers(&cli(sock, &line)), &cfg));
        }
        if got[0] != got[1] {
            differ.push(format!(
                "{step}:\n  haproxy {:?}\n  sluice  {:?}",
                got[0], got[1]
            ));
        }
        // Not a comparison of nothing: haproxy took the payload, then
        // the id.
        if n == 1 {
            assert!(got[0].contains(" d.com three words  \n"), "{}", got[0]);
        }
        if step == "GET / w.com" {
            assert!(got[0].contains("m=2"), "{}", got[0]);
        }
        if step == "GET / b.com" {
            assert!(got[0].contains("changed"), "{}", got[0]);
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
