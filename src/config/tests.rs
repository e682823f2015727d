//! End-to-end tests of the config front end: text in, model and HAProxy
//! diagnostics out.

use std::net::SocketAddr;
use std::time::Duration;

use super::*;
use crate::config::model::*;

fn env(name: &str) -> Option<String> {
    match name {
        "MYADDR" => Some("garbage".into()),
        "PORT" => Some("18100".into()),
        _ => None,
    }
}

/// A fake DNS: `couchdbN` and `localhost` resolve, nothing else does.
fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    let ip = match host {
        "localhost" => "127.0.0.1",
        "couchdb1" => "10.0.0.1",
        "couchdb2" => "10.0.0.2",
        "couchdb3" => "10.0.0.3",
        _ => return Err("Name or service not known".into()),
    };
    Ok(vec![SocketAddr::new(ip.parse().unwrap(), port)])
}

fn parse(name: &str, text: &str) -> Loaded {
    parse_texts(&[(name.to_string(), text.to_string())], &env, &resolve)
}

fn messages(l: &Loaded) -> Vec<String> {
    l.diagnostics.iter().map(|d| d.render(1)).collect()
}

const COUCHDB: &str = "global
maxconn 4096
nbproc 2
defaults
mode http
clitimeout 150000
srvtimeout 30000
contimeout 4000
balance roundrobin
stats enable
stats uri /haproxy?stats
frontend couchdb_lb
bind localhost:8080
acl master_methods method POST DELETE PUT
use_backend master_backend if master_methods
default_backend slave_backend
backend master_backend
server couchdb1 couchdb1:5984 weight 1 maxconn 512 check
backend slave_backend
server couchdb2 couchdb2:5984 weight 1 maxconn 512 check
server couchdb3 couchdb3:5984 weight 1 maxconn 512 check
";

#[test]
fn couchdb_config_parses_with_only_warnings() {
    let l = parse("couch.cfg", COUCHDB);
    let msgs = messages(&l);
    assert!(
        l.diagnostics.iter().all(|d| d.level == Level::Warning),
        "{msgs:#?}"
    );
    assert_eq!(
        msgs[1],
        "[WARNING]  (1) : config : parsing [couch.cfg:6] : the 'clitimeout' directive is not supported anymore since HAProxy 2.1. Use 'timeout client'."
    );
    assert!(msgs[0].contains("parsing [couch.cfg:3] : nbproc is not supported by sluice"));
    assert_eq!(msgs.len(), 4);
    let c = l.config.expect("config");
    assert_eq!(c.global.maxconn, Some(4096));
    assert_eq!(c.proxies.len(), 3);
    let fe = &c.proxies[0];
    assert_eq!(fe.mode, Mode::Http);
    assert_eq!(fe.maxconn, Some(4096));
    assert_eq!(fe.timeouts.client, Some(Duration::from_secs(150)));
    assert_eq!(fe.timeouts.server, Some(Duration::from_secs(30)));
    assert_eq!(fe.timeouts.connect, Some(Duration::from_secs(4)));
    assert_eq!(fe.stats.as_ref().unwrap().uri, "/haproxy?stats");
    assert_eq!(fe.binds[0].addrs[0].to_string(), "127.0.0.1:8080");
    assert_eq!(fe.use_backends[0].backend, "master_backend");
    assert_eq!(fe.default_backend.as_ref().unwrap().0, "slave_backend");
    let be = &c.proxies[2];
    assert_eq!(be.servers.len(), 2);
    let s = &be.servers[1];
    assert_eq!(s.addr.to_string(), "10.0.0.3:5984");
    assert_eq!((s.weight, s.maxconn), (1, 512));
    assert_eq!(s.check, Some(CheckParams::default()));
    assert!(be.stats.is_some());
    assert_eq!(be.maxconn, None);
}

#[test]
fn bench_template_parses_cleanly() {
    let text = std::fs::read_to_string("/work/shared/bench/configs/haproxy.cfg")
        .unwrap_or_else(|_| {
            "global\n nbthread {workers}\n maxconn {maxconn}\ndefaults\n mode http\n maxconn {maxconn}\n timeout connect 5s\n timeout client 120s\n timeout server 120s\n timeout http-keep-alive 120s\n option http-keep-alive\n http-reuse always\nfrontend fe\n bind 127.0.0.1:{listen_port}\n default_backend be\nbackend be\n balance roundrobin\n server b1 {backend1}\n server b2 {backend2}\n".into()
        })
        .replace("{workers}", "4")
        .replace("{maxconn}", "10000")
        .replace("{listen_port}", "18000")
        .replace("{backend1}", "127.0.0.1:18100")
        .replace("{backend2}", "127.0.0.1:18101");
    let l = parse("haproxy.cfg", &text);
    assert!(l.diagnostics.is_empty(), "{:#?}", messages(&l));
    let c = l.config.unwrap();
    assert_eq!(c.global.nbthread, Some(4));
    let fe = &c.proxies[0];
    assert_eq!(fe.maxconn, Some(10000));
    assert_eq!(fe.conn_mode, HttpConnMode::KeepAlive);
    assert_eq!(fe.timeouts.http_keep_alive, Some(Duration::from_secs(120)));
    let be = &c.proxies[1];
    assert_eq!(be.http_reuse, HttpReuse::Always);
    assert_eq!(be.servers[1].addr.to_string(), "127.0.0.1:18101");
}

#[test]
fn every_error_is_listed_in_one_run() {
    let a = "global
    foobar
    maxconn 100 \"unterminated
    ssl-engine rdrand
frontend fe
    mode http
    bind ${MYADDR}:17180
    option httplogg
    option httplog foo
    timeout client 5x
    acl d foo_bar x
    use_backend be if nosuchacl
    use_backend be if { path_beg /x
    frobnicate
backend be
    mode http
    server s1 127.0.0.1:80 weight 300
    server s2 127.0.0.1:80 wieght 3
    server s3 nowhere:80
";
    let b = "maxconn 10
backend be
";
    let l = parse_texts(
        &[("bad1.cfg".into(), a.into()), ("two.cfg".into(), b.into())],
        &env,
        &resolve,
    );
    let m = messages(&l);
    let expect = [
        "[ALERT]    (1) : config : parsing [bad1.cfg:2] : unknown keyword 'foobar' in 'global' section",
        "[ALERT]    (1) : config : parsing [bad1.cfg:3]: unmatched quote at position 17:\n  maxconn 100 \"unterminated\n              ^",
        "[ALERT]    (1) : config : parsing [bad1.cfg:4] : 'ssl-engine' is not supported by sluice yet",
        "[ALERT]    (1) : config : parsing [bad1.cfg:7] : 'bind' : invalid address: 'garbage' in '${MYADDR}:17180'",
        "[ALERT]    (1) : config : parsing [bad1.cfg:8] : unknown option 'httplogg'; did you mean 'httplog' maybe ?",
        "[ALERT]    (1) : config : parsing [bad1.cfg:9] : keyword 'httplog' only supports option 'clf'.",
        "[ALERT]    (1) : config : parsing [bad1.cfg:10] : unexpected character 'x' in 'timeout client'",
        "[ALERT]    (1) : config : parsing [bad1.cfg:11] : error detected while parsing ACL 'd' : unknown fetch method 'foo_bar' in ACL expression 'foo_bar'.",
        "[ALERT]    (1) : config : parsing [bad1.cfg:12] : error detected while parsing switching rule : no such ACL : 'nosuchacl'.",
        "[ALERT]    (1) : config : parsing [bad1.cfg:13] : error detected while parsing switching rule : missing closing '}' in condition.",
        "[ALERT]    (1) : config : parsing [bad1.cfg:14] : unknown keyword 'frobnicate' in 'frontend' section",
        "[ALERT]    (1) : config : [bad1.cfg:17] : 'server be/s1' : weight of server s1 is not within 0 and 256 (300)..",
        "[ALERT]    (1) : config : [bad1.cfg:18] : 'server be/s2' : unknown keyword 'wieght'; did you mean 'weight' maybe ?",
        "[ALERT]    (1) : config : Error(s) found in configuration file : bad1.cfg",
        "[ALERT]    (1) : config : parsing [two.cfg:1]: unknown keyword 'maxconn' out of section.",
        "[ALERT]    (1) : config : Parsing [two.cfg:2]: backend 'be' has the same name as backend 'be' declared at bad1.cfg:15.",
        "[ALERT]    (1) : config : Error(s) found in configuration file : two.cfg",
    ];
    for (i, e) in expect.iter().enumerate() {
        assert_eq!(m.get(i).map(String::as_str), Some(*e), "#{i}: {m:#?}");
    }
    let rest = &m[expect.len()..];
    assert!(
        rest.iter()
            .any(|x| x.contains("missing timeouts for frontend 'fe'")),
        "{rest:#?}"
    );
    // As HAProxy, server names are not resolved once the configuration
    // has failed: no DNS wait, no "could not resolve" for 'nowhere'.
    assert!(
        !rest.iter().any(|x| x.contains("could not resolve")),
        "{rest:#?}"
    );
    assert_eq!(
        rest.last().map(String::as_str),
        Some("[ALERT]    (1) : config : Fatal errors found in configuration.")
    );
    assert!(l.config.is_none());
}

#[test]
fn cross_checks() {
    let text = "defaults
    mode http
    timeout client 1s
    timeout server 1s
    timeout connect 1s
frontend fe
    bind :8080
    use_backend nope if TRUE
    use_backend backend1x
    default_backend nope2
frontend other
    bind :8081
    default_backend fe
backend backend1
    server a 127.0.0.1:1
    server a 127.0.0.1:2
backend tcpbe
    mode tcp
frontend fe2
    bind :8082
    default_backend tcpbe
";
    let l = parse("x.cfg", text);
    let m = messages(&l);
    let has = |s: &str| m.iter().any(|x| x.contains(s));
    assert!(
        has("Proxy 'fe': unable to find required default_backend: 'nope2'."),
        "{m:#?}"
    );
    assert!(has(
        "Proxy 'fe': unable to find required use_backend: 'nope'."
    ));
    assert!(has(
        "Proxy 'fe': unable to find required use_backend: 'backend1x'; did you mean 'backend1' maybe ?"
    ));
    assert!(has(
        "Proxy 'other': unable to find required default_backend: 'fe' ('fe' is a frontend, not a backend)."
    ));
    assert!(has(
        "parsing [x.cfg:16] : backend 'backend1', another server named 'a' was already defined at line 15, please use distinct names."
    ));
    assert!(has(
        "http frontend 'fe2' (x.cfg:19) tries to use incompatible tcp backend 'tcpbe' (x.cfg:17) as its default backend (see 'mode')."
    ));
    // Default-backend order: HAProxy checks default_backend before use_backend.
    let d = m.iter().position(|x| x.contains("'nope2'")).unwrap();
    let u = m
        .iter()
        .position(|x| x.contains("use_backend: 'nope'"))
        .unwrap();
    assert!(d < u);
}

#[test]
fn sections_and_capabilities() {
    let text = "global
    stats socket /run/s.sock mode 600 level admin
    stats socket ipv4@127.0.0.1:9999
    stats socket /run/t.sock expose-fd sessions
    stats timeout 2m
    pidfile /run/x.pid
    description hello   world
    node n1
    daemon
defaults
    acl a path /x
    bind :80
    server s 127.0.0.1:1
    timeout client 10s
frontend fe
    bind :80
    server s 127.0.0.1:1
    timeout server 5s
    balance roundrobin
backend be
    bind :81
    timeout client 1s
    stats uri /st
    http-request return status 200 content-type text/plain string ok if TRUE
    http-request deny deny_status 429 unless LOCALHOST
    http-request deny
    http-request deny deny_status 418
    http-request tarpit
    http-request return string x
listen
userlist admins
    user x password y
defaults
frontend fe3
    bind :82
";
    let l = parse("s.cfg", text);
    let m = messages(&l);
    let has = |s: &str| m.iter().any(|x| x.contains(s));
    assert!(
        has("parsing [s.cfg:4] : 'stats socket' : 'expose-fd' only supports 'listeners'."),
        "{m:#?}"
    );
    assert!(has(
        "parsing [s.cfg:11] : 'acl' not allowed in 'defaults' section."
    ));
    assert!(has(
        "parsing [s.cfg:12] : 'bind' not allowed in 'defaults' section."
    ));
    assert!(has(
        "parsing [s.cfg:13] : 'server' not allowed in 'defaults' section."
    ));
    assert!(has(
        "[WARNING]  (1) : config : parsing [s.cfg:17] : 'server' ignored because frontend 'fe' has no backend capability."
    ));
    assert!(has(
        "parsing [s.cfg:18] : 'timeout server' will be ignored because frontend 'fe' has no backend capability"
    ));
    assert!(has(
        "parsing [s.cfg:19] : 'balance' ignored because frontend 'fe' has no backend capability."
    ));
    assert!(has(
        "parsing [s.cfg:21] : 'bind' ignored because backend 'be' has no frontend capability."
    ));
    assert!(has(
        "[ALERT]    (1) : config : parsing [s.cfg:27] : error detected in backend 'be' while parsing 'http-request deny' rule : status code '418' not handled by default with 'default-errorfiles' argument.."
    ));
    assert!(!has("s.cfg:28"), "http-request tarpit is valid: {m:#?}");
    assert!(has(
        "parsing [s.cfg:29] : error detected in backend 'be' while parsing 'http-request return' rule : a content type must be defined when non-empty payload is configured."
    ));
    assert!(has(
        "parsing [s.cfg:30] : 'listen' expects an <id> argument"
    ));
    // A userlist is read; a password hash sluice cannot check (DES
    // crypt here) is refused.
    assert!(!has("s.cfg:31"), "{m:#?}");
    assert!(has(
        "parsing [s.cfg:32]: user 'x' in userlist 'admins': password hash 'y' is of a kind sluice cannot check"
    ));
    // The state is still built for what was valid.
    let mut st = parser::State::new(&resolve);
    st.parse_file("s.cfg", text, &env, false);
    let g = &st.global;
    assert_eq!(g.stats_sockets.len(), 2);
    assert_eq!(g.stats_sockets[0].mode, Some(0o600));
    assert_eq!(g.stats_sockets[0].level, CliLevel::Admin);
    assert_eq!(g.stats_sockets[1].level, CliLevel::Operator);
    assert_eq!(
        g.stats_sockets[1].tcp.unwrap().to_string(),
        "127.0.0.1:9999"
    );
    assert_eq!(g.stats_timeout, Some(Duration::from_secs(120)));
    assert_eq!(g.description.as_deref(), Some("hello world"));
    let be = &st.proxies[1];
    assert_eq!(be.stats.as_ref().unwrap().uri, "/st");
    assert_eq!(be.http_request.len(), 4);
    assert!(matches!(
        &be.http_request[1].action,
        HttpRequestAction::Deny(HttpReply {
            status: 429,
            body: ReplyBody::ErrorPage,
            ..
        })
    ));
    assert!(be.acls.iter().any(|a| a.name == "TRUE"));
    assert!(be.acls.iter().any(|a| a.name == "LOCALHOST"));
    // The second defaults section reset the inherited client timeout.
    let fe3 = st.proxies.iter().find(|p| p.name == "fe3").unwrap();
    assert_eq!(fe3.timeouts.client, None);
    assert_eq!(st.proxies[0].timeouts.client, Some(Duration::from_secs(10)));
}

#[test]
fn options_and_inheritance() {
    let text = "defaults
    mode http
    option http-server-close
    retries 5
    http-reuse never
    default_backend be
    timeout client 1s
    timeout connect 1s
    timeout server 1s
frontend fe
    bind :80,127.0.0.1:81-82
    no option http-server-close
    maxconn 50
frontend fe2
    bind :83
    option httpclose
backend be
    server s 127.0.0.1:1 check inter 5s rise 1 fall 5
";
    let l = parse("o.cfg", text);
    assert!(l.diagnostics.is_empty(), "{:#?}", messages(&l));
    let c = l.config.unwrap();
    let fe = &c.proxies[0];
    assert_eq!(fe.conn_mode, HttpConnMode::KeepAlive);
    assert_eq!(fe.maxconn, Some(50));
    assert_eq!(fe.binds.len(), 2);
    assert_eq!(fe.binds[1].addrs.len(), 2);
    assert_eq!(fe.default_backend.as_ref().unwrap().0, "be");
    assert_eq!(c.proxies[1].conn_mode, HttpConnMode::Close);
    let be = &c.proxies[2];
    assert_eq!(be.conn_mode, HttpConnMode::ServerClose);
    assert_eq!((be.retries, be.http_reuse), (5, HttpReuse::Never));
    assert_eq!(
        be.servers[0].check,
        Some(CheckParams {
            inter: Duration::from_secs(5),
            rise: 1,
            fall: 5,
            ..CheckParams::default()
        })
    );
}

#[test]
fn directory_sources_load_in_byte_order() {
    let dir = std::env::temp_dir().join(format!("sluice-cfg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for f in [
        "a-lower.cfg",
        "B-upper.cfg",
        "10-b.cfg",
        "2-a.cfg",
        ".hidden.cfg",
        "x.conf",
    ] {
        std::fs::write(dir.join(f), "").unwrap();
    }
    std::fs::create_dir_all(dir.join("sub.cfg")).unwrap();
    let got = expand_sources(std::slice::from_ref(&dir)).unwrap();
    let names: Vec<_> = got
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["10-b.cfg", "2-a.cfg", "B-upper.cfg", "a-lower.cfg"]);
    let missing = expand_sources(&[dir.join("nope.cfg")]).unwrap_err();
    assert!(
        missing
            .message
            .starts_with("Cannot open configuration file/directory")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn directives_and_env() {
    let text = "global\n.notice \"loading $PORT\"\n.warning a b\n";
    let l = parse("d.cfg", text);
    let m = messages(&l);
    assert_eq!(
        m[0],
        "[NOTICE]   (1) : config : parsing [d.cfg:2]: 'loading 18100'."
    );
    assert!(m[1].contains("Unexpected argument 'b' for '.warning'"));
}

#[test]
fn stats_socket_owner_options() {
    // root (uid and gid 0) exists on every system this runs on.
    let text = "global
    stats socket /run/a.sock user root group root mode 640
    stats socket /run/b.sock uid 65534 gid 12
    stats socket /run/c.sock user no-such-user-here
    stats socket /run/d.sock group
    stats socket /run/e.sock uid abc
    stats socket ipv4@127.0.0.1:9999 uid 0
    stats socket /run/f.sock interface x level admin
    stats socket /run/g.sock user root
";
    let l = parse("o.cfg", text);
    let m = messages(&l);
    let want = [
        "parsing [o.cfg:4] : 'stats socket' : 'user' : unknown user name 'no-such-user-here'",
        "parsing [o.cfg:5] : 'stats socket' : 'group' : missing group name",
        "parsing [o.cfg:6] : 'stats socket' : 'uid' : invalid value 'abc' (integer expected)",
        "parsing [o.cfg:7] : 'stats socket' : 'uid' only applies to UNIX sockets.",
        // One error only: the unsupported option's value is skipped, and
        // the option after it is read.
        "parsing [o.cfg:8] : 'stats socket' : 'interface' option is not supported by sluice yet",
    ];
    for w in want {
        assert!(m.iter().any(|x| x.contains(w)), "{w}\n{m:#?}");
    }
    let parse_errors = m.iter().filter(|x| x.contains("parsing [")).count();
    assert_eq!(parse_errors, want.len(), "{m:#?}");
    let mut st = parser::State::new(&resolve);
    st.parse_file("o.cfg", text, &env, false);
    let s = &st.global.stats_sockets;
    assert_eq!(s.len(), 3);
    assert_eq!(
        (s[0].uid, s[0].gid, s[0].mode),
        (Some(0), Some(0), Some(0o640))
    );
    assert_eq!(
        (s[1].uid, s[1].gid, s[1].mode),
        (Some(65534), Some(12), None)
    );
    // `user` sets the owner only, not the group (as HAProxy).
    assert_eq!((s[2].uid, s[2].gid), (Some(0), None));
}

#[test]
fn garbage_never_panics() {
    let samples = [
        "\u{0}\u{1}\u{ff}",
        "frontend\nbind",
        "backend b\nserver",
        "backend b\nserver s :",
        "backend b\nserver s [::1]:1 weight",
        "global\nstats",
        "global\nstats socket",
        "frontend f\nacl",
        "frontend f\nuse_backend x if",
        "frontend f\nhttp-request",
        "frontend f\nhttp-request return status",
        "frontend f\nno",
        "frontend f\nno option",
        "defaults\ntimeout",
        "listen l\nbind :1-65535,:0",
        "frontend f\nacl x src 1.2.3.4/99",
        "frontend f\nuse_backend b if ! ! ||",
        "\\",
        "frontend f\n\"",
    ];
    for s in samples {
        let _ = parse("g.cfg", s);
    }
}

#[test]
fn named_defaults_from_and_default_server() {
    let l = parse(
        "n.cfg",
        "defaults web
    mode http
    timeout client 1s
    timeout connect 1s
    timeout server 1s
    default-server check inter 3s weight 5
defaults tcp
    mode tcp
frontend fe from web
    bind 127.0.0.1:18900
    default_backend be
backend be from web
    default-server maxconn 7
    server a 127.0.0.1:1
    server b 127.0.0.1:2 no-check weight 2
listen plain
    bind 127.0.0.1:18901
    server c 127.0.0.1:3
",
    );
    let c = l.config.expect("config");
    let fe = &c.proxies[0];
    assert_eq!(fe.mode, Mode::Http);
    let be = &c.proxies[1];
    assert_eq!(be.servers[0].weight, 5);
    assert_eq!(be.servers[0].maxconn, 7);
    let chk = be.servers[0].check.expect("check from defaults");
    assert_eq!(chk.inter, Duration::from_secs(3));
    assert!(be.servers[1].check.is_none());
    assert_eq!(be.servers[1].weight, 2);
    // No `from`: the last defaults section (tcp), without default-server.
    let plain = &c.proxies[2];
    assert_eq!(plain.mode, Mode::Tcp);
    assert_eq!(plain.servers[0].weight, 1);
    assert!(plain.servers[0].check.is_none());
}

#[test]
fn continuation_files_keep_the_section() {
    let files = [
        SourceText {
            name: "fe.cfg".into(),
            text: "defaults\n mode http\nfrontend fe\n bind 127.0.0.1:18902\n".into(),
            continues: false,
        },
        SourceText {
            name: "more.cfg".into(),
            text: "\n acl a path_beg /a\n use_backend be if a\n".into(),
            continues: true,
        },
        SourceText {
            name: "be.cfg".into(),
            text: "backend be\n server s 127.0.0.1:1\n".into(),
            continues: true,
        },
    ];
    let l = parse_sources(&files, &env, &resolve, None);
    let c = l.config.expect("config");
    assert_eq!(c.proxies[0].use_backends.len(), 1);
    assert_eq!(c.proxies[0].use_backends[0].loc.to_string(), "more.cfg:3");
    assert!(
        l.statements
            .iter()
            .any(|s| s.loc.to_string() == "more.cfg:2" && s.words[0] == "acl")
    );
}

#[test]
fn conditional_blocks_select_lines() {
    let l = parse(
        "c.cfg",
        ".if defined(PORT)
global
    maxconn 11
.elif 1
global
    maxconn 12
.else
    foo bar baz
.endif
.if 0
.if defined(PORT)
    unknown_but_skipped
.endif
.elif 0
.else
.notice \"else\"
.endif
",
    );
    assert_eq!(
        messages(&l),
        ["[NOTICE]   (1) : config : parsing [c.cfg:16]: 'else'."]
    );
    assert_eq!(l.config.expect("config").global.maxconn, Some(11));
}

#[test]
fn life_cycle_keywords() {
    use crate::config::model::{CpuMap, IdSpec};
    let l = parse(
        "g.cfg",
        "global
    hard-stop-after 30s
    user nobody
    gid 99
    chroot /var/empty
    ulimit-n 65536
    cpu-map 1/all 0-1
    cpu-map auto:1/1-2 2 3
    stats socket /run/x.sock level admin expose-fd listeners
frontend fe
    bind :80
",
    );
    let c = l.config.expect("valid");
    let g = &c.global;
    assert_eq!(g.hard_stop_after, Some(std::time::Duration::from_secs(30)));
    assert_eq!(g.user, Some(IdSpec::Name("nobody".into())));
    assert_eq!(g.group, Some(IdSpec::Id(99)));
    assert_eq!(g.ulimit_n, Some(65536));
    assert_eq!(
        g.cpu_map,
        vec![
            CpuMap {
                auto: false,
                threads: None,
                cpus: vec![0, 1]
            },
            CpuMap {
                auto: true,
                threads: Some(vec![1, 2]),
                cpus: vec![2, 3]
            },
        ]
    );
    assert!(g.stats_sockets[0].expose_fd);
    let bad = parse(
        "b.cfg",
        "global
    cpu-map auto:1/1-3 0-1
    cpu-map 2/1 0
",
    );
    let m = messages(&bad);
    assert!(
        m.iter()
            .any(|x| x.contains("[b.cfg:2] : cpu-map: 'auto:' needs as many CPUs as threads")),
        "{m:#?}"
    );
    assert!(
        m.iter()
            .any(|x| x.contains("[b.cfg:3] : cpu-map: invalid thread group '2'")),
        "{m:#?}"
    );
}

/// `default-server` carries every balancing and check option of `server`
/// (issue #5); a server line overrides what it repeats.
#[test]
fn default_server_carries_every_server_option() {
    let l = parse(
        "ds.cfg",
        "defaults
    mode http
    timeout client 1s
    timeout connect 1s
    timeout server 1s
backend be
    default-server check inter 3s fastinter 500ms downinter 5s rise 4 fall 5 addr 127.0.0.9 port 8080 weight 0 maxconn 9 maxqueue 4 minconn 2 slowstart 10s backup disabled on-marked-down shutdown-sessions on-marked-up shutdown-backup-sessions observe layer7 error-limit 3 on-error sudden-death
    server a 127.0.0.1:1
    server b 127.0.0.1:2 weight 7 port 9090 on-error mark-down id 12
",
    );
    let c = l.config.unwrap_or_else(|| panic!("{:?}", l.diagnostics));
    let be = &c.proxies[0];
    let a = &be.servers[0];
    let chk = a.check.expect("check from default-server");
    assert_eq!(
        (chk.inter, chk.fastinter, chk.downinter, chk.rise, chk.fall),
        (
            Duration::from_secs(3),
            Some(Duration::from_millis(500)),
            Some(Duration::from_secs(5)),
            4,
            5
        )
    );
    assert_eq!(chk.addr, Some("127.0.0.9".parse().unwrap()));
    assert_eq!(chk.port, Some(8080));
    assert_eq!((a.weight, a.maxconn), (0, 9));
    let o = &a.opts;
    assert_eq!((o.maxqueue, o.minconn), (4, 2));
    assert_eq!(o.slowstart, Some(Duration::from_secs(10)));
    assert!(o.backup && o.disabled && o.shutdown_on_down && o.shutdown_backup_on_up);
    assert_eq!(o.observe, Some(Observe::Layer7));
    assert_eq!((o.error_limit, o.on_error), (3, OnError::SuddenDeath));
    let b = &be.servers[1];
    assert_eq!(b.weight, 7);
    assert_eq!(b.check.expect("check").port, Some(9090));
    assert_eq!(b.opts.on_error, OnError::MarkDown);
    assert_eq!(b.id, Some(12));
    assert_eq!(b.opts.maxqueue, 4, "the rest still from default-server");
}

#[test]
fn http_check_disable_on_404_is_inherited_and_takes_no_argument() {
    let l = parse(
        "d.cfg",
        "defaults
mode http
http-check disable-on-404
backend be
option httpchk GET /health
server a 127.0.0.1:8080 check
",
    );
    let c = l.config.expect("config");
    assert!(c.proxies[0].http_check.disable_on_404);
    let l = parse("x.cfg", "backend be\nhttp-check disable-on-404 x\n");
    assert!(
        messages(&l).iter().any(|m| m
            .ends_with("parsing [x.cfg:2] : 'http-check' cannot handle unexpected argument 'x'.")),
        "{:#?}",
        messages(&l)
    );
}
