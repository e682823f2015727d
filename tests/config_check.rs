//! `sluice -c` as operators use it in CI: exit statuses, `-q`, `-dW` and
//! `zero-warning`, every error of every file in file order, the split
//! directory layout with original file:line, and `--dump`.

mod support;

use std::path::Path;

use support::*;

const DEFAULTS: &str = "defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
";

fn alerts(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("[ALERT]"))
        .collect()
}

#[test]
fn warnings_then_valid_and_dw_makes_them_fatal() {
    let dir = TempDir::new("chk");
    dir.write(
        "w.cfg",
        "frontend fe\n    mode http\n    bind 127.0.0.1:18800\n    default_backend be\nbackend be\n    mode http\n    server s 127.0.0.1:18801\n",
    );
    let out = run_sluice(&["-c", "-f", "w.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "Warnings were found.\nConfiguration file is valid\n"
    );
    assert!(out.stderr.contains("[WARNING]  ("));
    assert!(out.stderr.contains(") : config : missing timeouts for frontend 'fe'.\n   | While not properly invalid, you will certainly encounter various problems\n   | with such a configuration. To fix this, please ensure that all following\n   | timeouts are set to a non-zero value: 'client', 'connect', 'server'.\n"));

    let out = run_sluice(&["-c", "-dW", "-f", "w.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(1));
    assert!(!out.stdout.contains("valid"));
    let last = out.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("[ALERT]    (")
            && last.ends_with(
                ") : config : Some warnings were found and 'zero-warning' is set. Aborting."
            ),
        "{last:?}"
    );
    let quiet = run_sluice(&["-c", "-q", "-dW", "-f", "w.cfg"], Some(dir.path()));
    assert_eq!(quiet.code(), Some(1));
    assert_eq!(quiet.stderr, "");
    assert_eq!(quiet.stdout, "");

    // The global keyword does the same.
    dir.write(
        "z.cfg",
        "global\n    zero-warning\nfrontend fe\n    mode http\n    bind 127.0.0.1:18800\n",
    );
    let out = run_sluice(&["-c", "-f", "z.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr
            .contains("Some warnings were found and 'zero-warning' is set. Aborting.")
    );
    // Without warnings, zero-warning changes nothing; a .notice is no
    // warning, and comes without HAProxy's version notices.
    dir.write(
        "n.cfg",
        &format!(".notice \"hello\"\nglobal\n    zero-warning\n{DEFAULTS}frontend fe\n    bind 127.0.0.1:18800\n    http-request return status 200\n"),
    );
    let out = run_sluice(&["-c", "-f", "n.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "Configuration file is valid\n");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(lines[0].ends_with(") : config : parsing [n.cfg:1]: 'hello'."));
}

#[test]
fn all_errors_of_all_files_in_file_order() {
    let dir = TempDir::new("chk");
    dir.write("a.cfg", "global\n    maxconn x\n    foobar\n");
    dir.write(
        "b.cfg",
        &format!("{DEFAULTS}frontend fe\n    bind 127.0.0.1:18802\n    optoin httplog\n    default_backend nope\n"),
    );
    let out = run_sluice(&["-c", "-f", "a.cfg", "-f", "b.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(1));
    let al = alerts(&out.stderr);
    let pos = |s: &str| {
        al.iter()
            .position(|l| l.contains(s))
            .unwrap_or_else(|| panic!("no alert with {s:?}:\n{}", out.stderr))
    };
    let order = [
        pos("parsing [a.cfg:2]"),
        pos("parsing [a.cfg:3] : unknown keyword 'foobar' in 'global' section"),
        pos("Error(s) found in configuration file : a.cfg"),
        pos(
            "parsing [b.cfg:8] : unknown keyword 'optoin' in 'frontend' section; did you mean 'option' maybe ?",
        ),
        pos("Error(s) found in configuration file : b.cfg"),
        pos("Fatal errors found in configuration."),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{}", out.stderr);
    let quiet = run_sluice(
        &["-c", "-q", "-f", "a.cfg", "-f", "b.cfg"],
        Some(dir.path()),
    );
    assert_eq!(quiet.code(), Some(1));
    assert_eq!(quiet.stderr, "");
}

fn split_layout(dir: &TempDir) {
    dir.write("conf/global.cfg", "global\n    maxconn 100\n");
    dir.write("conf/defaults.cfg", DEFAULTS);
    dir.write(
        "conf/frontend.cfg",
        "frontend main\n    bind 127.0.0.1:18810\n    default_backend web\n",
    );
    dir.write(
        "conf/frontend.d/20-api.cfg",
        "# continues 'frontend main'\n    acl is_api path_beg /api\n    use_backend api if is_api\n",
    );
    dir.write(
        "conf/frontend.d/10-admin.cfg",
        "    http-request deny if { path_beg /admin }\n",
    );
    dir.write(
        "conf/backend.d/web.cfg",
        "backend web\n    server w1 127.0.0.1:18811\n",
    );
    dir.write(
        "conf/backend.d/api.cfg",
        "backend api\n    server a1 127.0.0.1:18812\n",
    );
    dir.write("conf/frontend.d/notes.txt", "not a cfg file\n");
}

#[test]
fn split_layout_loads_in_order_and_continues_sections() {
    let dir = TempDir::new("split");
    split_layout(&dir);
    let out = run_sluice(&["-c", "--dump", "-f", "conf"], Some(dir.path()));
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let files: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("# "))
        .collect();
    assert_eq!(
        files,
        [
            "conf/global.cfg",
            "conf/defaults.cfg",
            "conf/frontend.cfg",
            "conf/frontend.d/10-admin.cfg",
            "conf/frontend.d/20-api.cfg",
            "conf/backend.d/api.cfg",
            "conf/backend.d/web.cfg",
        ]
    );
    assert!(out.stdout.contains("\n    use_backend api if is_api\n"));
    assert!(out.stdout.ends_with("Configuration file is valid\n"));

    // A mistake in a continuation file is reported at its own file:line.
    dir.write(
        "conf/frontend.d/20-api.cfg",
        "# continues 'frontend main'\n    acl is_api path_beg /api\n    use_backend api if is_apii\n",
    );
    let out = run_sluice(&["-c", "-f", "conf"], Some(dir.path()));
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("parsing [conf/frontend.d/20-api.cfg:3] : error detected while parsing switching rule : no such ACL : 'is_apii'; did you mean 'is_api' maybe ?"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("Error(s) found in configuration file : conf/frontend.d/20-api.cfg")
    );
}

#[test]
fn plain_directory_starts_each_file_at_a_section() {
    let dir = TempDir::new("plain");
    dir.write(
        "conf/10-fe.cfg",
        &format!("{DEFAULTS}frontend fe\n    bind 127.0.0.1:18820\n"),
    );
    dir.write("conf/20-more.cfg", "    http-request return status 200\n");
    let out = run_sluice(&["-c", "-f", "conf"], Some(dir.path()));
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains(
            "parsing [conf/20-more.cfg:1]: unknown keyword 'http-request' out of section."
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn dump_reads_back_to_the_same_configuration() {
    let dir = TempDir::new("dump");
    dir.write(
        "a.cfg",
        &format!(".if defined(NOPE_NOT_SET)\nglobal\n    maxconn 1\n.else\nglobal\n    maxconn 2\n.endif\n{DEFAULTS}frontend fe\n    bind 127.0.0.1:18830\n    http-request return status 200 content-type text/plain string \"it's a \\\"quoted\\\" $dollar # not a comment\"\n"),
    );
    let first = run_sluice(&["-c", "-q", "--dump", "-f", "a.cfg"], Some(dir.path()));
    assert_eq!(first.code(), Some(0));
    assert!(first.stdout.contains("    maxconn 2\n"));
    assert!(!first.stdout.contains("maxconn 1"));
    assert!(!first.stdout.contains(".if"));
    dir.write("b.cfg", &first.stdout);
    let second = run_sluice(&["-c", "-q", "--dump", "-f", "b.cfg"], Some(dir.path()));
    assert_eq!(second.code(), Some(0));
    assert_eq!(
        first.stdout.replace("# a.cfg", ""),
        second.stdout.replace("# b.cfg", ""),
    );
}

#[test]
fn stats_socket_directory_is_a_notice_at_check_and_fatal_at_start() {
    let dir = TempDir::new("sock");
    dir.write(
        "s.cfg",
        &format!("global\n    stats socket {}/missing/admin.sock level admin\n{DEFAULTS}frontend fe\n    bind 127.0.0.1:18840\n", dir.path().display()),
    );
    // As HAProxy's -c: valid, no warning (so -dW passes too); sluice says
    // what starting here would meet.
    for args in [&["-c", "-f", "s.cfg"][..], &["-c", "-dW", "-f", "s.cfg"]] {
        let out = run_sluice(args, Some(dir.path()));
        assert_eq!(out.code(), Some(0), "{args:?}: {}", out.stderr);
        assert_eq!(out.stdout, "Configuration file is valid\n");
        let line = out.stderr.lines().next().unwrap_or_default();
        assert!(
            line.starts_with("[NOTICE]")
                && line.contains("parsing [s.cfg:2] : 'stats socket ")
                && line.contains("/missing' does not exist; starting on this machine would fail"),
            "{}",
            out.stderr
        );
    }
    // Starting fails before anything is bound.
    let out = run_sluice(&["-f", "s.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        alerts(&out.stderr)
            .iter()
            .any(|l| l.contains("parsing [s.cfg:2] : 'stats socket ")
                && l.contains("/missing' does not exist; cannot start.")),
        "{}",
        out.stderr
    );
}

/// `-V` is HAProxy's verbose flag (the version is `-v`): `-c -V` checks.
#[test]
fn check_with_verbose_still_checks() {
    let dir = TempDir::new("cv");
    dir.write("bad.cfg", "global\n    foobar\n");
    let out = run_sluice(&["-c", "-V", "-f", "bad.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(1), "{}", out.stdout);
    assert!(!out.stdout.contains("version"), "{}", out.stdout);
    assert!(
        out.stderr
            .contains("parsing [bad.cfg:2] : unknown keyword 'foobar' in 'global' section"),
        "{}",
        out.stderr
    );
    // -V cancels -q, in either order.
    dir.write(
        "ok.cfg",
        &format!(
            "{DEFAULTS}frontend fe\n    bind 127.0.0.1:18841\n    http-request return status 200\n"
        ),
    );
    for args in [["-c", "-q", "-V"], ["-c", "-V", "-q"]] {
        let mut a = args.to_vec();
        a.extend(["-f", "ok.cfg"]);
        let out = run_sluice(&a, Some(dir.path()));
        assert_eq!(out.code(), Some(0));
        assert_eq!(out.stdout, "Configuration file is valid\n", "{a:?}");
    }
}

/// The packaged configuration checks on a machine that is not its target
/// (no /run/sluice, no user sluice): exit 0.
#[test]
fn packaged_config_checks_on_any_machine() {
    let cfg = Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/etc/sluice.cfg");
    let out = run_sluice(&["-c", "-f", &cfg.display().to_string()], None);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stdout.ends_with("Configuration file is valid\n"),
        "{}",
        out.stdout
    );
}

/// A `user` / `group` this machine lacks: a warning at -c (the check may
/// run where the account is not created yet; HAProxy's -c fails), fatal at
/// start with HAProxy's text.
#[test]
fn missing_user_warns_at_check_and_fails_at_start() {
    let dir = TempDir::new("user");
    dir.write(
        "u.cfg",
        &format!("global\n    user nosuchuser-sluice-test\n    group nosuchgroup-sluice-test\n{DEFAULTS}frontend fe\n    bind 127.0.0.1:18842\n    http-request return status 200\n"),
    );
    let out = run_sluice(&["-c", "-f", "u.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "Warnings were found.\nConfiguration file is valid\n"
    );
    for (line, what, name) in [
        (2, "user", "nosuchuser-sluice-test"),
        (3, "group", "nosuchgroup-sluice-test"),
    ] {
        let want = format!(
            ") : config : parsing [u.cfg:{line}] : cannot find {what} id for '{name}' (0:Success)"
        );
        assert!(
            out.stderr
                .lines()
                .any(|l| l.starts_with("[WARNING]") && l.ends_with(&want)),
            "{want}\n{}",
            out.stderr
        );
    }
    let out = run_sluice(&["-f", "u.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    let a = alerts(&out.stderr);
    assert!(
        a.iter().any(|l| l.ends_with(
            "parsing [u.cfg:2] : cannot find user id for 'nosuchuser-sluice-test' (0:Success)"
        )),
        "{}",
        out.stderr
    );
    assert!(
        a.last()
            .is_some_and(|l| l.ends_with("Fatal errors found in configuration."))
    );
}

/// Server names are resolved only for an otherwise valid configuration
/// (as HAProxy): a broken one fails without a look-up; `-dr` turns an
/// unresolvable name into a warning and a disabled server.
#[test]
fn resolution_only_when_otherwise_valid_and_dr() {
    let dir = TempDir::new("res");
    let backend = "backend be\n    server s1 nosuchhost.invalid:80\n";
    dir.write(
        "broken.cfg",
        &format!(
            "{DEFAULTS}frontend fe\n    bind 127.0.0.1:18843\n    default_backend nope\n{backend}"
        ),
    );
    let out = run_sluice(&["-c", "-f", "broken.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr
            .contains("unable to find required default_backend: 'nope'"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("could not resolve"), "{}", out.stderr);
    assert!(
        !out.stderr.contains("Failed to initialize server(s) addr."),
        "{}",
        out.stderr
    );

    dir.write(
        "ok.cfg",
        &format!(
            "{DEFAULTS}frontend fe\n    bind 127.0.0.1:18843\n    default_backend be\n{backend}"
        ),
    );
    let out = run_sluice(&["-c", "-f", "ok.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains(
            "[ok.cfg:10] : 'server be/s1' : could not resolve address 'nosuchhost.invalid'."
        ),
        "{}",
        out.stderr
    );
    let out = run_sluice(&["-c", "-dr", "-f", "ok.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "Warnings were found.\nConfiguration file is valid\n"
    );
    assert!(
        out.stderr.lines().any(|l| l.starts_with("[WARNING]") && l.ends_with("[ok.cfg:10] : 'server be/s1' : could not resolve address 'nosuchhost.invalid', disabling server.")),
        "{}",
        out.stderr
    );
}

/// `tune.*` keywords with no meaning for sluice (rustls has no DHE, tokio
/// schedules on its own, ...) are accepted with a notice giving the
/// reason, as haproxy 2.6 accepts them; `-dW` does not make them fatal.
/// A `tune.*` keyword that would matter and is not done stays an error.
#[test]
fn meaningless_tune_keywords_are_accepted_with_a_notice() {
    let dir = TempDir::new("chk");
    dir.write(
        "t.cfg",
        &format!(
            "global\n    tune.ssl.default-dh-param 2048\n    tune.sched.low-latency on\n{DEFAULTS}listen l\n    bind 127.0.0.1:18802\n    server s 127.0.0.1:18803\n"
        ),
    );
    for args in [&["-c", "-f", "t.cfg"][..], &["-c", "-dW", "-f", "t.cfg"]] {
        let out = run_sluice(args, Some(dir.path()));
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        assert_eq!(out.stdout, "Configuration file is valid\n");
        assert!(
            out.stderr.contains("[NOTICE]") && out.stderr.contains(
                "parsing [t.cfg:2] : 'tune.ssl.default-dh-param' is accepted and ignored: rustls has no DHE cipher suites, so no Diffie-Hellman parameters are used."
            ),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr.contains(
                "parsing [t.cfg:3] : 'tune.sched.low-latency' is accepted and ignored: sluice runs on tokio's scheduler, not HAProxy's run queue."
            ),
            "{}",
            out.stderr
        );
    }
    dir.write(
        "k.cfg",
        &format!("global\n    maxsslrate 10\n{DEFAULTS}listen l\n    bind 127.0.0.1:18802\n    server s 127.0.0.1:18803\n"),
    );
    let out = run_sluice(&["-c", "-f", "k.cfg"], Some(dir.path()));
    assert_ne!(out.code(), Some(0));
    assert!(
        alerts(&out.stderr).iter().any(|l| l
            .ends_with("parsing [k.cfg:2] : 'maxsslrate' is not supported by sluice yet")),
        "{}",
        out.stderr
    );
}

/// Global keywords that pick one of HAProxy's pollers, profile its task
/// scheduler or place its threads on NUMA nodes are accepted, as haproxy
/// 2.6 accepts them (both exit 0 on the same file), each with a notice
/// saying why it changes nothing in sluice.
#[test]
fn poller_and_profiling_keywords_are_accepted_as_haproxy_does() {
    let words = [
        "noepoll",
        "nopoll",
        "nokqueue",
        "noevports",
        "busy-polling",
        "profiling.tasks auto",
        "numa-cpu-mapping",
        "nogetaddrinfo",
    ];
    let lines: String = words.iter().map(|w| format!("    {w}\n")).collect();
    let cfg = format!(
        "global\n{lines}{DEFAULTS}listen l\n    bind 127.0.0.1:18802\n    server s 127.0.0.1:18803\n"
    );
    let ((hcode, herr), out) = support::haproxy::check_both("pollers", &cfg);
    assert_eq!(hcode, Some(0), "haproxy: {herr}");
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    for (i, w) in words.iter().enumerate() {
        let k = w.split(' ').next().unwrap_or(w);
        let want = format!("sluice.cfg:{}] : '{k}' is accepted and ignored: ", i + 2);
        assert!(
            out.stderr
                .lines()
                .any(|l| l.starts_with("[NOTICE]") && l.contains(&want)),
            "{want}\n{}",
            out.stderr
        );
    }
}

/// `spread-checks` is read as haproxy 2.6 reads it: the same values
/// accepted (a word that is not a number counts as 0) and the same
/// messages for the others, compared with `haproxy -c`.
#[test]
fn spread_checks_is_read_as_haproxy_reads_it() {
    let cases = ["", "0", "5", "50", "51", "-1", "abc", "7x"].map(|v| {
        (
            format!("spread-checks {v:?}"),
            format!(
                "global\n    spread-checks {v}\n{DEFAULTS}listen l\n    bind 127.0.0.1:18802\n    server s 127.0.0.1:18803 check\n"
            ),
        )
    });
    support::haproxy::assert_check_agrees("spread", cases, support::haproxy::parsing_message);
}

/// Rule conditions that read the connection's buffer (layer 6 fetches)
/// in an HTTP proxy get HAProxy's warning, in the order and with the
/// lines haproxy 2.6 gives; a TCP proxy and a condition without such a
/// fetch get none.
#[test]
fn layer6_fetches_in_http_proxies_are_warned_as_haproxy_warns() {
    let cfg = format!(
        "{DEFAULTS}frontend fe
    mode http
    bind 127.0.0.1:18802
    acl sni req.ssl_sni -m found
    tcp-request inspect-delay 5s
    tcp-request content accept if {{ req.ssl_hello_type 1 }}
    tcp-request content reject if {{ src 10.0.0.1 }}
    http-request deny if {{ req.len gt 10 }} || {{ path /x }}
    http-request deny if {{ path /y }}
    use_backend b if sni
    default_backend b
frontend raw
    mode tcp
    bind 127.0.0.1:18803
    tcp-request inspect-delay 5s
    tcp-request content accept if {{ req.ssl_hello_type 1 }}
    default_backend t
backend b
    mode http
    server s 127.0.0.1:18804
backend t
    mode tcp
    server s 127.0.0.1:18805
"
    );
    let ((hcode, herr), out) = support::haproxy::check_both("l6", &cfg);
    // The warnings after "config : ", file paths cut to their line.
    let warnings = |stderr: &str| -> Vec<String> {
        stderr
            .lines()
            .filter(|l| l.starts_with("[WARNING]"))
            .filter_map(|l| l.split_once(" : config : "))
            .map(|(_, m)| match m.split_once("(declared at ") {
                Some((head, at)) => {
                    format!("{head}(declared at {}", at.rsplit(':').next().unwrap_or(""))
                }
                None => m.to_string(),
            })
            .collect()
    };
    let h = warnings(&herr);
    assert_eq!(h.len(), 3, "{herr}");
    assert_eq!(
        (hcode, h),
        (out.code(), warnings(&out.stderr)),
        "{}",
        out.stderr
    );
}

/// The global `quiet` silences the check as `-q` does, errors included:
/// haproxy 2.6 and sluice print nothing and exit with the same code.
#[test]
fn global_quiet_is_haproxys() {
    for bad in ["", "    foo\n"] {
        let cfg = format!(
            "global\n    quiet\n    tune.maxaccept 10\n{bad}{DEFAULTS}listen l\n    bind 127.0.0.1:18802\n    server s 127.0.0.1:18803\n"
        );
        let ((hcode, herr), out) = support::haproxy::check_both("quiet", &cfg);
        assert_eq!(herr, "", "haproxy");
        assert_eq!(hcode, Some(if bad.is_empty() { 0 } else { 1 }));
        assert_eq!(
            (hcode, herr.as_str(), ""),
            (out.code(), out.stderr.as_str(), out.stdout.as_str())
        );
    }
}

/// `max-spread-checks` and `strict-limits` are read as haproxy 2.6 reads
/// them: the same values accepted, the same messages for the others.
#[test]
fn check_spread_bound_and_strict_limits_are_read_as_haproxy_reads_them() {
    let lines = [
        "max-spread-checks",
        "max-spread-checks abc",
        "max-spread-checks 5s",
        "max-spread-checks 100",
        "max-spread-checks -1",
        "max-spread-checks 5s x",
        "strict-limits",
        "strict-limits x",
    ];
    let cases = lines.map(|l| {
        (
            l.to_string(),
            format!("global\n    {l}\n{DEFAULTS}listen l\n    bind 127.0.0.1:18802\n    server s 127.0.0.1:18803 check\n"),
        )
    });
    support::haproxy::assert_check_agrees("maxspread", cases, support::haproxy::parsing_message);
}

/// `unix-bind` is read as haproxy 2.6 reads it (a `uid` or `gid` that is
/// no number is refused where haproxy would read it as 0, root).
#[test]
fn unix_bind_is_read_as_haproxy_reads_it() {
    let lines = [
        "unix-bind foo",
        "unix-bind mode",
        "unix-bind prefix",
        "unix-bind mode abc",
        "unix-bind user nosuchuser",
        "unix-bind prefix /tmp/ mode 600 uid 0 gid 0",
    ];
    let cases = lines.map(|l| {
        (
            l.to_string(),
            format!("global\n    {l}\n{DEFAULTS}listen l\n    bind 127.0.0.1:18802\n    server s 127.0.0.1:18803\n"),
        )
    });
    support::haproxy::assert_check_agrees("unixbind", cases, support::haproxy::parsing_message);
}
