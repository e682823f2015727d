//! `sluice -c` as operators use it in CI: exit statuses, `-q`, `-dW` and
//! `zero-warning`, every error of every file in file order, the split
//! directory layout with original file:line, and `--dump`.

mod support;

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
fn stats_socket_directory_is_checked() {
    let dir = TempDir::new("sock");
    dir.write(
        "s.cfg",
        &format!("global\n    stats socket {}/missing/admin.sock level admin\n{DEFAULTS}frontend fe\n    bind 127.0.0.1:18840\n", dir.path().display()),
    );
    let out = run_sluice(&["-c", "-f", "s.cfg"], Some(dir.path()));
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("parsing [s.cfg:2] : 'stats socket "),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("/missing' does not exist"),
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
        &format!("global\n    tune.ssl.keylog on\n{DEFAULTS}listen l\n    bind 127.0.0.1:18802\n    server s 127.0.0.1:18803\n"),
    );
    let out = run_sluice(&["-c", "-f", "k.cfg"], Some(dir.path()));
    assert_ne!(out.code(), Some(0));
    assert!(
        alerts(&out.stderr)
            .iter()
            .any(|l| l
                .ends_with("parsing [k.cfg:2] : 'tune.ssl.keylog' is not supported by sluice yet")),
        "{}",
        out.stderr
    );
}
