//! ACLs against the real HAProxy 2.6: the same ACLs (every matcher and
//! flag, the derived keyword names, converters in criteria, multi-valued
//! headers, pattern files, the predefined ACLs) are tested by haproxy and
//! by sluice on the same requests, and the verdicts must be equal; the
//! same faulty ACLs are checked by `haproxy -c` and `sluice -c` and the
//! messages must be equal.
//!
//! Each ACL `a<n>` answers one rule, `http-request return ... string "1"
//! if { req.hdr(x-t) -m str <n> } a<n>`, and a last rule answers "0": a
//! request names the ACL it asks about in `x-t`. Nothing is masked: the
//! answers hold no time, pid or port.
//!
//! Skipped (with a note) when `/usr/sbin/haproxy` is not installed, except
//! under CI, where that is a failure.

mod support;

use support::haproxy::{self, Haproxy};
use support::*;

/// ACL criteria (each an `acl a<n> <criterion>` line; lines separated by
/// `\n` define the same ACL twice, which ORs them), or the name of a
/// predefined ACL.
const ACLS: &[&str] = &[
    // Derived names: path, url, base, hdr with each matcher.
    "path /api/v1/users.json",
    "path -i /ADMIN/panel",
    "path_beg /api/",
    "path_beg -i /admin",
    "path_end .json",
    "path_sub v1",
    "path_dir v1",
    "path_dir api/v1",
    "path_dir /a/b",
    "path_dom users",
    "path_len 16",
    "path_len 1:5",
    "path_reg ^/api/v[0-9]+/",
    "path_reg -i ^/admin",
    "url_beg http://",
    "url_sub id=5",
    "url_end ?q",
    "url_reg ^[^/:]*://",
    "url_len gt 20",
    "url_dom example",
    "url_dir abs",
    "url *",
    "base www.Example.com/api/v1/users.json",
    "base_beg -i www.example.com/api",
    "base_sub example",
    "base_end .json",
    "base_reg ^example\\.com",
    "base_dom example.com",
    "base_dir upload",
    "base_len 10:",
    "hdr(host) -i www.example.com",
    "hdr(host) www.Example.com",
    "hdr(HOST) -i www.example.com",
    "hdr(X-List) c",
    "hdr_beg(host) admin.",
    "hdr_end(host) -i .example.com",
    "hdr_end(host) :8080",
    "hdr_sub(host) dom",
    "hdr_dom(host) example.com",
    "hdr_dom(host) -i EXAMPLE",
    "hdr_dom(host) co.uk",
    "hdr_dir(x-list) b",
    "hdr_reg(host) ^[a-z]+\\.example\\.",
    "hdr_len(host) 11",
    // Every value of a multi-valued header is tried.
    "hdr(x-list) b",
    "hdr(x-list) c",
    "hdr(x-list,1) a",
    "hdr(x-list,1) c",
    "hdr(x-list,-1) c",
    "req.fhdr(x-list) 'a, b'",
    "req.fhdr(x-list) a",
    "req.hdr(x-list) -m found",
    "req.hdr(x-none) -m found",
    "req.hdr(x-list),upper B",
    "hdr_cnt(x-list) 3",
    "hdr_cnt(x-list) 2",
    "req.hdr_cnt(x-list) ge 3",
    "req.fhdr_cnt(x-list) 2",
    "hdr_cnt() gt 4",
    "hdr_val(x-num) 42",
    "hdr_val(x-num) lt 0",
    "hdr_val(x-num) 1000:2000",
    "hdr_val(x-num) gt 41",
    "hdr_val(x-num) le 1024",
    "hdr_val(x-num) eq 1024",
    "hdr_val(x-num) gt 100 5",
    "hdr_val(x-num) :0",
    // Explicit matchers on other fetches, converters in criteria.
    "req.hdr(x-num) -m int 42",
    "req.hdr(x-num) -m int le 0",
    "req.hdr(x-num),add(1) 43",
    "req.hdr(x-ip) -m ip 10.0.0.0/8",
    "req.hdr(x-ip) -m ip ::1",
    "req.hdr(x-ip) -m ip 10.1.2.0/255.255.255.0",
    "req.hdr(host),lower -m end .example.com",
    "req.hdr(host),lower -m beg www.",
    "req.hdr(host),upper -m sub EXAMPLE",
    "req.hdr(host),field(1,:) example.com",
    "req.hdr(host) -m len 11",
    "req.hdr(host) -m bin 6578616d706c652e636f6d",
    "req.hdr(host) -m reg -i ^WWW",
    "req.hdr(host) -m dom com",
    "req.hdr(host) -m dir example.com",
    "req.hdr(x-num) -m bool",
    "req.hdr(x-zero) -m bool",
    "req.hdr(x-num) -m str -- -7",
    "req.hdr(x-empty) -m len 0",
    "req.hdr(x-empty) -m found",
    "req.hdr(x-empty) -m str ''",
    // Methods: standard ones compare exactly, whatever -i says.
    "method GET",
    "method -i get",
    "method POST PUT",
    "method PATCH",
    "method -i patch",
    "method FOO",
    "method -m str GET",
    "method -m beg PO",
    "method -m sub ATC",
    "method -m reg ^P",
    "method -m len 3",
    "method -m found",
    "req.ver 1.0",
    "req.ver 1.1",
    "req_ver 1.1",
    // Addresses.
    "src 127.0.0.1",
    "src 127.0.0.0/8",
    "src 10.0.0.0/8",
    "src ::ffff:127.0.0.1",
    "src -m str 127.0.0.1",
    "src -m beg 127.",
    "src,ipmask(24) 127.0.0.0",
    "src_port 1:65535",
    "dst 127.0.0.1",
    "dst_port 1:65535",
    "dst_port 1:1023",
    "fe_name fe",
    "fe_name -m beg f",
    "query id=5&x=y",
    "query -m sub x=",
    "query -m found",
    // Constants and casts.
    "always_true",
    "always_false",
    "int(5) 5",
    "int(5) 3:7",
    "int(5) gt 5",
    "int(5) ge 5",
    "int(5) lt 5",
    "int(5) le 5",
    "int(5) eq 5",
    "int(5) gt 6 5",
    "int(5) -m len 1",
    "int(5) -m str 5",
    "int(0)",
    "int(0) -m bool",
    "int(7) -m bool",
    "int(7) -m found",
    "str(abc) abc",
    "str(abc) -m bool",
    "str(12) -m bool",
    "str(abc),length 3",
    "bool(1)",
    "bool(0)",
    "bool(1) -m int 1",
    "bin(414243) -m bin 414243",
    "bin(414243) -m str ABC",
    "ipv4(10.1.2.3) 10.0.0.0/8",
    "ipv6(::ffff:10.1.2.3) 10.0.0.0/8",
    "ipv4(10.1.2.3) ::ffff:10.1.2.3",
    "ipv6(2001:db8::1) 2001:db8::/32",
    "ipv6(2001:db8::1) 10.0.0.0/8",
    "str(10.1.2.3) -m ip 10.1.0.0/16",
    "str(x) -m ip 10.0.0.0/8",
    "str(hello) -m found",
    "meth(GET) -m str GET",
    // Flags that change nothing here.
    "path -n /upload",
    "path -u 7 /upload",
    "path -M /upload",
    // Two lines of one name OR together.
    "path /nothing\npath /upload",
    // Pattern files (written into the test's directory, `{dir}`).
    "path_beg -f {dir}/paths.txt",
    "src -f {dir}/nets.txt",
    "hdr(host) -i -f {dir}/hosts.txt",
    "hdr_val(x-num) -f {dir}/ints.txt",
    "path -f {dir}/none.txt -f {dir}/exact.txt",
    "path_reg -f {dir}/re.txt",
    "path -f {dir}/exact.txt /a/b/c/",
    // Maps (files in `{dir}` too), through ACLs on their values.
    "req.hdr(host),lower,map_str({dir}/hosts.map) -m found",
    "req.hdr(host),lower,map({dir}/hosts.map,none) app",
    "req.hdr(host),lower,map({dir}/hosts.map,none) none",
    "req.hdr(host),lower,map_dom({dir}/dom.map) -m str exampledom",
    "req.hdr(host),lower,map_dom({dir}/dom.map) -m str coukdom",
    "path,map_beg({dir}/beg.map) -m str api-long",
    "path,map_beg({dir}/beg.map) -m str api",
    "path,map_beg({dir}/beg.map,zz) zz",
    "src,map_ip({dir}/ip.map) -m str lo",
    "src,map_ip({dir}/ip.map) -m str lo8",
    "hdr_val(x-num),map_int({dir}/int.map) -m str big",
    "hdr_val(x-num),map_int({dir}/int.map) -m str answer",
    "path,map_reg({dir}/re.map) -m str re1",
    "path,map_sub({dir}/sub.map) users",
    "path,map_end({dir}/end.map) json",
    "path,map_dir({dir}/dir.map) -m str d",
    "path,map_str_int({dir}/num.map) gt 5",
    "path,map_str_int({dir}/num.map,3) 3",
    "path,map_str_ip({dir}/ipv.map) 10.0.0.0/8",
    // Predefined ACLs.
    "TRUE",
    "FALSE",
    "HTTP",
    "HTTP_1.0",
    "HTTP_1.1",
    "HTTP_CONTENT",
    "HTTP_URL_ABS",
    "HTTP_URL_SLASH",
    "HTTP_URL_STAR",
    "LOCALHOST",
    "METH_CONNECT",
    "METH_DELETE",
    "METH_GET",
    "METH_HEAD",
    "METH_OPTIONS",
    "METH_POST",
    "METH_PUT",
    "METH_TRACE",
    "RDP_COOKIE",
    "REQ_CONTENT",
    "WAIT_END",
];

/// The pattern files of the `-f` cases.
const FILES: &[(&str, &str)] = &[
    (
        "paths.txt",
        "# API prefixes\n\n/api/\n   /admin  \n#/upload\n",
    ),
    ("nets.txt", "10.0.0.0/8\n127.0.0.0/8\n"),
    ("hosts.txt", "WWW.EXAMPLE.COM\nadmin.internal\n"),
    ("ints.txt", "1000:2000\n42\n"),
    ("none.txt", "# nothing but comments\n\n"),
    ("exact.txt", "/upload\n/lower\n"),
    ("re.txt", "^/a/.*/$\n"),
    (
        "hosts.map",
        "# host  backend\nwww.example.com app\nexample.org   other  \nadmin.internal\tadmin\n",
    ),
    ("dom.map", "example.com exampledom\nco.uk coukdom\n"),
    ("beg.map", "/api api\n/api/v1 api-long\n/a a\n"),
    ("ip.map", "127.0.0.0/8 lo8\n127.0.0.1 lo\n10.0.0.0/8 ten\n"),
    ("int.map", "42 answer\n1000:2000 big\n"),
    ("re.map", "^/a/ re1\n^/ re2\n"),
    ("sub.map", "users users\nload upload\n"),
    ("end.map", ".json json\n/ slash\n"),
    ("dir.map", "b d\nabs abs\n"),
    ("num.map", "/upload 7\n/x 2\n"),
    ("ipv.map", "/upload 10.1.2.3\n/x ::1\n"),
];

/// The requests every ACL is asked about; `x-t` goes after the request
/// line.
const REQUESTS: &[&str] = &[
    "GET /api/v1/users.json?id=5&x=y HTTP/1.1\r\nHost: www.Example.com\r\nX-List: a, b\r\nX-List: c\r\nX-Num: 42\r\nX-Ip: 10.1.2.3\r\nX-Empty:\r\nX-Zero: 0\r\n\r\n",
    "POST /upload HTTP/1.0\r\nHost: example.com:8080\r\nContent-Length: 3\r\nX-Num: -7\r\nX-Ip: ::1\r\n\r\nabc",
    "PATCH /Admin/Panel HTTP/1.1\r\nhost: admin.internal\r\nX-Num: 1024\r\nContent-Length: 0\r\n\r\n",
    "GET http://example.org/abs/path?q HTTP/1.1\r\nHost: example.org\r\n\r\n",
    "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
    "DELETE /a/b/c/ HTTP/1.1\r\nHost: sub.dom.example.co.uk\r\nX-Num: 1500\r\nX-List: b,c\r\n\r\n",
    "FOO /lower HTTP/1.1\r\nHost: www.example.com\r\n\r\n",
    "HEAD /x HTTP/1.1\r\nHost: WWW.EXAMPLE.COM\r\n\r\n",
    "PUT /x HTTP/1.1\r\nHost: example.com\r\nContent-Length: 0\r\n\r\n",
];

fn is_predefined(e: &str) -> bool {
    e.bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_' || b == b'.')
}

fn config(bind: &str, dir: &str) -> String {
    let mut cfg = format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
"
    );
    for (i, e) in ACLS.iter().enumerate() {
        let term = if is_predefined(e) {
            e.to_string()
        } else {
            for line in e.split('\n') {
                cfg.push_str(&format!("    acl a{i} {}\n", line.replace("{dir}", dir)));
            }
            format!("a{i}")
        };
        cfg.push_str(&format!(
            "    http-request return status 200 content-type text/plain string \"1\" if {{ req.hdr(x-t) -m str {i} }} {term}\n"
        ));
    }
    cfg.push_str("    http-request return status 200 content-type text/plain string \"0\"\n");
    cfg
}

/// `req` with `x-t: <i>` after its request line.
fn asking(req: &str, i: usize) -> Vec<u8> {
    let (line, rest) = req.split_once("\r\n").expect("request line");
    format!("{line}\r\nx-t: {i}\r\n{rest}").into_bytes()
}

async fn verdict(addr: std::net::SocketAddr, req: &[u8]) -> String {
    let head = req.starts_with(b"HEAD ");
    let mut conn = HttpConn::connect(addr).await;
    match conn.raw(req, head).await {
        Ok(r) => format!("{} {}", r.status, String::from_utf8_lossy(&r.body)),
        Err(e) => format!("error {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acls_give_haproxys_verdicts() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("acl-files");
    for (name, text) in FILES {
        dir.write(name, text);
    }
    let d = dir.path().to_str().expect("utf-8 path");
    let fronts = listens(2);
    let _hap = Haproxy::start("acl-hap", &config(&fronts[0].to_string(), d), &[&fronts[0]]);
    let _sl = Sluice::start(&config(&fronts[1].to_string(), d));
    let mut differ = Vec::new();
    let mut hits = 0;
    for (i, acl) in ACLS.iter().enumerate() {
        let (mut hv, mut sv) = (String::new(), String::new());
        for req in REQUESTS {
            let req = asking(req, i);
            let h = verdict(fronts[0].addr(), &req).await;
            let s = verdict(fronts[1].addr(), &req).await;
            assert!(h.starts_with("200"), "haproxy on {acl}: {h}");
            // HEAD answers have no body: the verdict is then unknown.
            let bit = |v: &str| v.chars().last().filter(|_| v.len() > 4).unwrap_or('-');
            hv.push(bit(&h));
            sv.push(bit(&s));
            if !s.starts_with("200") {
                sv.push_str(&format!("({s})"));
            }
        }
        hits += hv.matches('1').count();
        if hv != sv {
            differ.push(format!("{acl}: haproxy {hv}, sluice {sv}"));
        }
    }
    // The cases must tell matches apart, not all answer "0".
    assert!(hits > ACLS.len(), "only {hits} matches");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// Faulty ACL lines, refused by both with the same message.
const FAULTY: &[&str] = &[
    "path -m foo x",
    "path -m",
    "src 1.2.3.400",
    "src 1.2.3.4/33",
    "src ::1/129",
    "req.hdr_cnt(x) abc",
    "req.hdr_cnt(x) 1:a",
    "req.hdr_cnt(x) 5:3",
    "req.hdr_cnt(x) lt abc",
    "req.hdr_cnt(x) -5",
    "path -m reg (a",
    "path_reg (",
    "path -f /nonexistent/acl.txt",
    "path -f",
    "path -q x",
    "method -m int 1",
    "path -m bin zz",
    "path -m bin abc",
    "path -m len abc",
    "path -m len 2:1",
    "foo x",
    "path,foo x",
    "path,lower(3) x",
    "bin(zz) x",
    "bin(414243) 414243",
    "meth(GET) GET",
    "req.payload(0,2) 4142",
    "src -n -m ip localhost",
    "src -f {dir}/bad.txt",
    "path,map({dir}/nomap) x",
    "path,map_int({dir}/words.map) x",
    "path,map_str_int({dir}/badint.map) 1",
    "path,map_foo({dir}/words.map) x",
    "path,map x",
    "src,map_ip({dir}/words.map) x",
];

#[test]
fn faulty_acls_get_haproxys_messages() {
    if !haproxy::available() {
        return;
    }
    let files = TempDir::new("acl-check-files");
    files.write("bad.txt", "10.0.0.0/8\nbad\n");
    files.write("words.map", "a 1\nb 2\n");
    files.write("badint.map", "k notint\n");
    let d = files.path().to_str().expect("utf-8 path");
    let cases = FAULTY.iter().map(|acl| {
        let acl = acl.replace("{dir}", d);
        let cfg = format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind 127.0.0.1:1
    acl a {acl}
    http-request deny if a
"
        );
        (acl, cfg)
    });
    haproxy::assert_check_agrees("acl-check", cases, haproxy::first_alert);
}

/// An ACL that cannot match (no pattern, no `--`, a matcher that needs
/// one) gets HAProxy's warning, named and anonymous alike; `--` silences
/// it. The whole of stderr is compared but the NOTICE lines (versions and
/// paths) and the pids, which must differ.
#[test]
fn acls_without_patterns_get_haproxys_warning() {
    if !haproxy::available() {
        return;
    }
    let cfg = "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind 127.0.0.1:1
    acl a hdr(x)
    acl b path --
    acl c ssl_fc
    acl d req.hdr(y) -m found
    http-request deny if a b c d { path,lower } { int(1) }
";
    let mask = |s: &str| -> String {
        s.lines()
            .filter(|l| !l.starts_with("[NOTICE]"))
            .map(|l| match (l.find(" ("), l.find(") : ")) {
                (Some(a), Some(b)) if a < b => format!("{}(pid){}", &l[..a + 1], &l[b + 1..]),
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let ((hcode, herr), out) = haproxy::check_both("acl-warn", cfg);
    assert!(herr.contains("will never match"), "{herr}");
    assert_eq!(out.code(), hcode);
    assert_eq!(mask(&out.stderr), mask(&herr));
}

/// Map converters' values as a rule prints them (`lf-string`): the
/// typed outputs, defaults and the lookups' choice among several keys.
const MAP_EXPRS: &[&str] = &[
    "str(www.example.com),map({dir}/hosts.map)",
    "str(nothere),map({dir}/hosts.map,dflt)",
    "str(nothere),map({dir}/hosts.map)",
    "str(a.b.example.com),map_dom({dir}/dom.map)",
    "str(/api/v1/x),map_beg({dir}/beg.map)",
    "str(/api/x),map_beg({dir}/beg.map)",
    "str(/b),map_beg({dir}/beg.map,none)",
    "ipv4(127.0.0.1),map_ip({dir}/ip.map)",
    "ipv4(127.0.0.2),map_ip({dir}/ip.map)",
    "str(10.9.8.7),map_ip({dir}/ip.map)",
    "int(1500),map_int({dir}/int.map)",
    "int(42),map_int({dir}/int.map)",
    "str(/upload),map_str_int({dir}/num.map),add(1)",
    "str(/none),map_str_int({dir}/num.map,-4)",
    "str(/upload),map_str_ip({dir}/ipv.map)",
    "str(/x),map_str_ip({dir}/ipv.map)",
    "str(/a/b),map_reg({dir}/re.map)",
    "str(/zzz),map_reg({dir}/re.map)",
    "str(/p/users/1),map_sub({dir}/sub.map)",
    "str(/x.json),map_end({dir}/end.map)",
    "str(/q/abs/r),map_dir({dir}/dir.map)",
    "str(example.org),map({dir}/hosts.map)",
    "str(admin.internal),map_str({dir}/hosts.map)",
    "str(/upload),map_beg_int({dir}/num.map)",
    "str(a.example.com),map_dom_ip({dir}/domip.map)",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn map_values_are_haproxys() {
    if !haproxy::available() {
        return;
    }
    let dir = TempDir::new("map-files");
    for (name, text) in FILES {
        dir.write(name, text);
    }
    dir.write("domip.map", "example.com 192.168.0.1\n");
    let d = dir.path().to_str().expect("utf-8 path");
    let config = |bind: &str| {
        let mut cfg = format!(
            "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {bind}
"
        );
        for (i, e) in MAP_EXPRS.iter().enumerate() {
            let e = e.replace("{dir}", d);
            cfg.push_str(&format!(
                "    http-request return status 200 content-type text/plain lf-string \"[%[{e}]]\" if {{ path /{i} }}\n"
            ));
        }
        cfg
    };
    let fronts = listens(2);
    let _hap = Haproxy::start("map-hap", &config(&fronts[0].to_string()), &[&fronts[0]]);
    let _sl = Sluice::start(&config(&fronts[1].to_string()));
    let mut differ = Vec::new();
    for (i, e) in MAP_EXPRS.iter().enumerate() {
        let path = format!("/{i}");
        let h = get(fronts[0].addr(), &path).await;
        let s = get(fronts[1].addr(), &path).await;
        differ.extend(haproxy::answer_differs(e, &h, &s));
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
