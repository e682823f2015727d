//! Broken configurations: exit status 1 and HAProxy 2.6's diagnostics on
//! stderr, `[ALERT]    (pid) : config : parsing [file:line] : message`, every
//! error of a file in one run (reference §2.1, §2.2).

mod support;

use support::*;

const DEFAULTS: &str = "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
";

/// Runs `sluice <args> -f <name>` with the config written as `<name>` in a
/// temp dir that is also the working directory (so messages say `name`).
fn run_cfg(name: &str, text: &str, args: &[&str]) -> RunOutput {
    let dir = TempDir::new("cfg");
    dir.write(name, text);
    let mut a: Vec<&str> = args.to_vec();
    a.extend(["-f", name]);
    run_sluice(&a, Some(dir.path()))
}

/// Alert lines of stderr (first line of each diagnostic).
fn alerts(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("[ALERT]"))
        .collect()
}

/// Asserts exit 1 (both in `-c` mode and when trying to run) and returns the
/// `-c` stderr. The run must not print `Configuration file is valid`.
fn assert_rejected(name: &str, text: &str) -> String {
    let out = run_cfg(name, text, &["-c"]);
    assert_eq!(
        out.code(),
        Some(1),
        "sluice -c accepted a broken config; stdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    assert!(!out.stdout.contains("Configuration file is valid"));
    // Every alert line has HAProxy 2.6's prefix.
    let pid_prefix = |l: &str| -> bool {
        let Some(rest) = l.strip_prefix("[ALERT]    (") else {
            return false;
        };
        let Some((pid, tail)) = rest.split_once(')') else {
            return false;
        };
        pid.parse::<u32>().is_ok() && tail.starts_with(" : config : ")
    };
    let al = alerts(&out.stderr);
    assert!(!al.is_empty(), "no [ALERT] line; stderr:\n{}", out.stderr);
    for l in &al {
        assert!(pid_prefix(l), "alert line not in HAProxy 2.6 form: {l:?}");
    }
    assert!(
        out.stderr.contains("Fatal errors found in configuration."),
        "stderr:\n{}",
        out.stderr
    );

    // Without -c, sluice refuses to start with the same status.
    let run = run_cfg(name, text, &[]);
    assert_eq!(
        run.code(),
        Some(1),
        "sluice started on a broken config; stderr:\n{}",
        run.stderr
    );
    out.stderr
}

#[test]
fn unknown_keyword_with_did_you_mean() {
    let (_hold, port) = hold_port();
    let cfg = format!(
        "{DEFAULTS}
frontend fe
    bind 127.0.0.1:{port}
    optoin httplog
    default_backend be

backend be
    server s1 127.0.0.1:1
"
    );
    let err = assert_rejected("bad.cfg", &cfg);
    assert!(
        err.contains(
            "parsing [bad.cfg:9] : unknown keyword 'optoin' in 'frontend' section; did you mean 'option' maybe ?"
        ),
        "stderr:\n{err}"
    );
    assert!(
        err.contains("Error(s) found in configuration file : bad.cfg"),
        "stderr:\n{err}"
    );
}

#[test]
fn unknown_global_keyword() {
    let err = assert_rejected("g.cfg", "global\n    foobar 1\n");
    assert!(
        err.contains("parsing [g.cfg:2] : unknown keyword 'foobar' in 'global' section"),
        "stderr:\n{err}"
    );
}

#[test]
fn unknown_server_keyword_suggests() {
    let (_hold, port) = hold_port();
    let cfg = format!(
        "{DEFAULTS}
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    server s1 127.0.0.1:1 wieght 3
"
    );
    let err = assert_rejected("srv.cfg", &cfg);
    assert!(
        err.contains(
            "[srv.cfg:11] : 'server be/s1' : unknown keyword 'wieght'; did you mean 'weight' maybe ?"
        ),
        "stderr:\n{err}"
    );
}

#[test]
fn bad_bind_address() {
    for (bind, msg) in [
        (
            "garbage:80",
            "'bind' : invalid address: 'garbage' in 'garbage:80'",
        ),
        (
            "300.1.1.1:80",
            "'bind' : invalid address: '300.1.1.1' in '300.1.1.1:80'",
        ),
        ("127.0.0.1:99999", "'bind' : invalid port '99999'"),
        (
            "garbage",
            "'bind' : missing port specification in 'garbage'",
        ),
    ] {
        let cfg = format!("{DEFAULTS}\nfrontend fe\n    bind {bind}\n");
        let err = assert_rejected("bind.cfg", &cfg);
        assert!(
            err.contains(&format!("parsing [bind.cfg:8] : {msg}")),
            "bind {bind}: stderr:\n{err}"
        );
    }
}

#[test]
fn unknown_backend_in_use_backend() {
    let (_hold, port) = hold_port();
    let cfg = format!(
        "{DEFAULTS}
frontend fe
    bind 127.0.0.1:{port}
    use_backend nope if {{ method GET }}
    default_backend be

backend be
    server s1 127.0.0.1:1
"
    );
    let err = assert_rejected("ub.cfg", &cfg);
    // HAProxy reports this at check time, without a location.
    assert!(
        err.contains("Proxy 'fe': unable to find required use_backend: 'nope'."),
        "stderr:\n{err}"
    );
}

#[test]
fn unknown_default_backend() {
    let (_hold, port) = hold_port();
    let cfg =
        format!("{DEFAULTS}\nfrontend fe\n    bind 127.0.0.1:{port}\n    default_backend nope2\n");
    let err = assert_rejected("db.cfg", &cfg);
    assert!(
        err.contains("Proxy 'fe': unable to find required default_backend: 'nope2'."),
        "stderr:\n{err}"
    );
}

#[test]
fn unmatched_quote() {
    let err = assert_rejected("q.cfg", "global\n  maxconn 100 \"unterminated\n");
    assert!(
        err.contains(
            "parsing [q.cfg:2]: unmatched quote at position 15:\n  maxconn 100 \"unterminated\n              ^\n"
        ),
        "stderr:\n{err}"
    );
}

#[test]
fn all_errors_of_a_file_in_one_run() {
    let (_hold, port) = hold_port();
    let cfg = format!(
        "global
    foobar 1
{DEFAULTS}
frontend fe
    bind 127.0.0.1:{port}
    bind nosuchhost!:80
    default_backend be
backend be
    maxconn 100 \"unterminated
    server s1 127.0.0.1:1
"
    );
    let err = assert_rejected("three.cfg", &cfg);
    let want = [
        "parsing [three.cfg:2] : unknown keyword 'foobar' in 'global' section",
        "parsing [three.cfg:11] : 'bind' : invalid address",
        "parsing [three.cfg:14]: unmatched quote at position 17:",
    ];
    let mut at = 0;
    for w in want {
        let Some(i) = err[at..].find(w) else {
            panic!("missing (or out of order) {w:?}; stderr:\n{err}");
        };
        at += i + w.len();
    }
    let located = alerts(&err)
        .iter()
        .filter(|l| l.contains("[three.cfg:"))
        .count();
    assert_eq!(located, 3, "exactly three located errors; stderr:\n{err}");
}

#[test]
fn directory_loads_cfg_files_in_byte_order() {
    let dir = TempDir::new("cfgdir");
    let d = dir.join("confd");
    std::fs::create_dir(&d).unwrap();
    // Each file has one error naming itself; the order of the alerts is the
    // load order. `.hidden.cfg` and `x.conf` must be ignored.
    for f in [
        "a-lower.cfg",
        "B-upper.cfg",
        "2-a.cfg",
        "10-b.cfg",
        ".hidden.cfg",
        "x.conf",
    ] {
        let kw = format!("bogus_{}", f.replace(['.', '-'], "_"));
        std::fs::write(d.join(f), format!("global\n    {kw}\n")).unwrap();
    }
    let out = run_sluice(&["-c", "-f", "confd"], Some(dir.path()));
    assert_eq!(out.code(), Some(1), "stderr:\n{}", out.stderr);
    let order: Vec<String> = alerts(&out.stderr)
        .iter()
        .filter_map(|l| {
            let i = l.find("parsing [confd/")?;
            let rest = &l[i + "parsing [confd/".len()..];
            Some(rest[..rest.find(':')?].to_string())
        })
        .collect();
    assert_eq!(
        order,
        ["10-b.cfg", "2-a.cfg", "B-upper.cfg", "a-lower.cfg"],
        "stderr:\n{}",
        out.stderr
    );
}

#[test]
fn directory_and_repeated_f_make_one_config() {
    let dir = TempDir::new("cfgdir");
    let (_hold, port) = hold_port();
    dir.write("confd/00-defaults.cfg", DEFAULTS);
    dir.write(
        "confd/10-frontend.cfg",
        &format!("frontend fe\n    bind 127.0.0.1:{port}\n    default_backend be\n"),
    );
    dir.write("extra.cfg", "backend be\n    server s1 127.0.0.1:1\n");
    let out = run_sluice(&["-c", "-f", "confd", "-f", "extra.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(0), "stderr:\n{}", out.stderr);
    assert!(
        out.stdout
            .lines()
            .any(|l| l == "Configuration file is valid")
    );
    // Without extra.cfg the backend is missing.
    let out = run_sluice(&["-c", "-f", "confd"], Some(dir.path()));
    assert_eq!(out.code(), Some(1), "stderr:\n{}", out.stderr);
    assert!(
        out.stderr
            .contains("unable to find required default_backend: 'be'")
    );
}

#[test]
fn valid_config_check_mode() {
    let (_hold, port) = hold_port();
    let cfg = format!(
        "{DEFAULTS}\nfrontend fe\n    bind 127.0.0.1:{port}\n    default_backend be\nbackend be\n    server s1 127.0.0.1:1\n"
    );
    let out = run_cfg("ok.cfg", &cfg, &["-c"]);
    assert_eq!(out.code(), Some(0), "stderr:\n{}", out.stderr);
    assert_eq!(out.stdout, "Configuration file is valid\n");
    assert!(!out.stderr.contains("[ALERT]"), "{}", out.stderr);
    // -c binds nothing: the port is still free.
    std::net::TcpListener::bind(("127.0.0.1", port)).expect("-c must not bind");
}

#[test]
fn wrong_flag_prints_usage_and_exits_1() {
    for args in [&["-Z"][..], &["--no-such-flag"]] {
        let out = run_sluice(args, None);
        assert_eq!(out.code(), Some(1), "{args:?}: stderr:\n{}", out.stderr);
        assert!(
            out.stderr.to_ascii_lowercase().contains("usage"),
            "{args:?}: no usage on stderr:\n{}",
            out.stderr
        );
    }
}

#[test]
fn missing_file_is_an_error() {
    let dir = TempDir::new("nofile");
    let out = run_sluice(&["-c", "-f", "does-not-exist.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(1), "stderr:\n{}", out.stderr);
    assert!(out.stderr.contains("does-not-exist.cfg"), "{}", out.stderr);
}

/// HAProxy 2.6 refuses a file whose last line has no LF (it may have been
/// cut short), after reading that line, with the line's length + 1.
#[test]
fn missing_lf_on_last_line() {
    let err = assert_rejected("nolf.cfg", "global\n    maxconn 10");
    assert!(
        alerts(&err)[0].ends_with(
            " : config : parsing [nolf.cfg:2]: Missing LF on last line, file might have been truncated at position 15."
        ),
        "stderr:\n{err}"
    );
    // The same text with its LF is fine.
    let ok = run_cfg("lf.cfg", "global\n    maxconn 10\n", &["-c"]);
    assert_ne!(ok.code(), Some(1), "stderr:\n{}", ok.stderr);
}

/// Unset variables in addresses: an address left empty is refused with
/// HAProxy's words, one that keeps its `:` is the wildcard address.
#[test]
fn address_emptied_by_unset_variable() {
    let (_held, port) = hold_port();
    let cfg = format!(
        "{DEFAULTS}
frontend fe
    bind 127.0.0.1:{port}
    bind $SLUICE_TEST_UNSET_VAR
    default_backend be
backend be
    server s1 ${{SLUICE_TEST_UNSET_VAR}}
    server s2 $SLUICE_TEST_UNSET_VAR:$SLUICE_TEST_UNSET_VAR
"
    );
    let err = assert_rejected("empty.cfg", &cfg);
    let al = alerts(&err);
    assert!(
        al[0].ends_with(
            "parsing [empty.cfg:9] : 'bind' : '$SLUICE_TEST_UNSET_VAR' resolves to an empty address (environment variable missing?)"
        ),
        "stderr:\n{err}"
    );
    assert!(
        al[1].ends_with(
            "[empty.cfg:12] : 'server be/s1' : '${SLUICE_TEST_UNSET_VAR}' resolves to an empty address (environment variable missing?)"
        ),
        "stderr:\n{err}"
    );
    // s2 (`:`) is accepted: only the two lines above are reported.
    assert_eq!(
        al.iter().filter(|l| l.contains("empty.cfg:")).count(),
        2,
        "stderr:\n{err}"
    );
}

/// What HAProxy 2.6 has and sluice lacks is "not supported by sluice yet"
/// at its file:line, never "unknown" or a "did you mean": a sample of each
/// kind of the list generated from HAProxy's manual.
#[test]
fn haproxy_keywords_sluice_lacks_are_not_supported_yet() {
    let (_held, [port, port2]) = hold_ports::<2>();
    let cfg = format!(
        "global
    maxsslrate 10
{DEFAULTS}
frontend fe
    bind 127.0.0.1:{port} accept-netscaler-cip 1234
    tcp-request content switch-mode http
    # (http-response send-spoe-group is taken: tests/spoe_haproxy.rs)
    option log-health-check
    error-log-format test
    acl a base,ungrpc -m found
    acl b fc_rtt -m found
    default_backend be
backend be
    server s1 127.0.0.1:1 track be/s2
    # (tcp-request content send-spoe-group is taken: tests/spoe_haproxy.rs)
    # (so is tcp-response content send-spoe-group)
    tcp-request content switch-mode http
    http-request set-header X-B %[req.hdr(host),ungrpc]
    http-request set-header X-C %[fc_rtt]
program p
    command /bin/true
program q
    command /bin/true
crt-store st
    crt-base /etc/ssl
listen li
    bind 127.0.0.1:{port2} expose-fd listeners
    tcp-request connection expect-netscaler-cip layer4
    # (a dynamic use_backend name is taken: tests/around_haproxy.rs)
    # (and send-spoe-group: tests/spoe_haproxy.rs)
"
    );
    let err = assert_rejected("ns.cfg", &cfg);
    let al = alerts(&err);
    for (line, want) in [
        (2, "'maxsslrate' is not supported by sluice yet"),
        (
            10,
            "'accept-netscaler-cip' option is not supported by sluice yet",
        ),
        (
            11,
            "'tcp-request content switch-mode' is not supported by sluice yet",
        ),
        (
            13,
            "'option log-health-check' is not supported by sluice yet",
        ),
        (14, "'error-log-format' is not supported by sluice yet"),
        (
            15,
            "converter 'ungrpc' is not supported by sluice yet in ACL expression 'base,ungrpc'",
        ),
        (
            16,
            "sample fetch 'fc_rtt' is not supported by sluice yet in ACL expression 'fc_rtt'",
        ),
        (
            19,
            "'server be/s1' : 'track' is not supported by sluice yet",
        ),
        (
            22,
            "'tcp-request content switch-mode' is not supported by sluice yet",
        ),
        (
            23,
            "converter 'ungrpc' is not supported by sluice yet in log-format expression '%[req.hdr(host),ungrpc]'",
        ),
        (
            24,
            "sample fetch 'fc_rtt' is not supported by sluice yet in log-format expression '%[fc_rtt]'",
        ),
        (25, "'program' sections are not supported by sluice yet"),
        (27, "'program' sections are not supported by sluice yet"),
        (29, "'crt-store' sections are not supported by sluice yet"),
        (32, "'expose-fd' option is not supported by sluice yet"),
        (
            33,
            "'tcp-request connection expect-netscaler-cip' is not supported by sluice yet",
        ),
    ] {
        let at = format!("ns.cfg:{line}]");
        let l = al
            .iter()
            .find(|l| l.contains(&at))
            .unwrap_or_else(|| panic!("no alert at {at}; stderr:\n{err}"));
        assert!(l.contains(want), "{at}: {l:?} lacks {want:?}");
        assert!(!l.contains("unknown") && !l.contains("did you mean"), "{l}");
    }
}

/// UNIX socket addresses (`/path`, `unix@`, `abns@`) are taken on `bind`
/// and `server` lines with the UNIX bind options; the address families
/// sluice still lacks are refused at their line as not supported yet, and
/// a bad UNIX option or name is an error at its line.
#[test]
fn unix_addresses_accepted_other_families_not_supported_yet() {
    let ok = format!(
        "{DEFAULTS}\nfrontend fe\n    bind /tmp/sluice-cfg-test.sock mode 600 uid 0 gid 0\n    bind unix@sluice-cfg-test.sock user root group root\n    bind abns@sluice-cfg-test accept-proxy\n    default_backend be\nbackend be\n    server s1 /tmp/s1.sock check\n    server s2 unix@s2.sock send-proxy-v2\n    server s3 abns@s3 check\n"
    );
    let out = run_cfg("unix.cfg", &ok, &["-c"]);
    assert_eq!(out.code(), Some(0), "stderr:\n{}", out.stderr);
    for (line, msg) in [
        (
            "    bind udp@127.0.0.1:80",
            "'bind' : 'udp@' addresses ('udp@127.0.0.1:80') are not supported by sluice yet",
        ),
        (
            "    bind /tmp/x.sock mode 999",
            "'bind /tmp/x.sock' : 'mode' : invalid mode '999' (octal integer expected).",
        ),
        (
            "    bind /tmp/x.sock user nosuchuser-sluice-test",
            "'bind /tmp/x.sock' : 'user' : unknown user name 'nosuchuser-sluice-test'.",
        ),
        (
            &format!("    bind abns@{}", "x".repeat(108)),
            "abstract socket name too long",
        ),
        (
            "    bind 127.0.0.1:8080\n    default_backend be\nbackend be\n    server s sockpair@3",
            "'sockpair@' addresses ('sockpair@3') are not supported by sluice yet",
        ),
    ] {
        let cfg = format!("{DEFAULTS}\nfrontend fe\n{line}\n");
        let err = assert_rejected("unix.cfg", &cfg);
        assert!(err.contains(msg), "{line}: stderr:\n{err}");
    }
}
