//! Access and event logs over UDP, compared line by line with HAProxy
//! 2.6's formats (reference §4). Each expectation is a mask: `{…}` stands
//! for a variable part (dates, ports, pids, timers that depend on the
//! machine, byte counts that depend on the backend's headers); everything
//! else must match to the byte. Every mask is also checked against the
//! line real HAProxy 2.6.12 sent for the same request (captured with
//! `tests/oracle/logs_oracle.sh`), so the masks cannot drift from
//! HAProxy's format.

mod support;

use std::time::Duration;

use support::syslog::*;
use support::*;

/// Lines real HAProxy 2.6.12 sent (`log 127.0.0.1:17514 local0`, frontend
/// `fe` with `option httplog`), used to check the masks.
const HAPROXY: &[&str] = &[
    "<134>Nov 30 06:24:27 haproxy[16199]: 127.0.0.1:57682 [30/Nov/2026:06:24:26.069] fe be/s1 0/0/1002/19/1021 404 500 - - ---- 1/1/0/0/1 0/0 \"GET /x?y=1 HTTP/1.1\"\n",
    "<134>Nov 30 06:24:27 haproxy[16199]: 127.0.0.1:57692 [30/Nov/2026:06:24:27.108] fe fe/<NOSRV> 0/-1/-1/-1/0 200 73 - - LR-- 1/1/0/0/0 0/0 \"GET /ret HTTP/1.1\"\n",
    "<134>Nov 30 06:24:27 haproxy[16199]: 127.0.0.1:57698 [30/Nov/2026:06:24:27.121] fe fe/<NOSRV> 0/-1/-1/-1/0 403 192 - - PR-- 1/1/0/0/0 0/0 \"GET /deny HTTP/1.1\"\n",
    "<134>Nov 30 06:24:27 haproxy[16199]: 127.0.0.1:57712 [30/Nov/2026:06:24:27.130] fe nosrv/<NOSRV> 0/-1/-1/-1/0 503 217 - - SC-- 1/1/0/0/0 0/0 \"GET /nosrv HTTP/1.1\"\n",
    "<134>Nov 30 06:24:44 haproxy[18863]: 127.0.0.1:43110 [30/Nov/2026:06:24:44.132] fe fe/<NOSRV> -1/-1/-1/-1/0 400 0 - - PR-- 1/1/0/0/0 0/0 \"<BADREQ>\"\n",
    "<134>Nov 30 06:24:45 haproxy[18863]: 127.0.0.1:43126 [30/Nov/2026:06:24:44.633] fe fe/<NOSRV> -1/-1/-1/-1/1001 408 0 - - cR-- 1/1/0/0/0 0/0 \"<BADREQ>\"\n",
    "<134>Nov 30 06:24:27 haproxy[16199]: 127.0.0.1:47544 [30/Nov/2026:06:24:27.189] stats stats/<STATS> 0/0/0/0/0 200 39970 - - LR-- 1/1/0/0/0 0/0 \"GET /st HTTP/1.1\"\n",
    "<134>Nov 30 06:24:27 haproxy[16199]: 127.0.0.1 - - [30/Nov/2026:06:24:27 +0000] \"GET /x?y=1 HTTP/1.1\" 404 500 \"\" \"\" 47504 152 \"clffe\" \"be\" \"s1\" 0 0 0 1 1 ---- 1 1 0 0 0 0 0 \"\" \"\" \n",
    "<129>Nov 30 06:24:43 haproxy[18863]: Server nosrv/d1 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: 0ms. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.\n",
    "<128>Nov 30 06:24:43 haproxy[18863]: backend nosrv has no server available!\n",
    "<134>Nov 30 06:35:17 haproxy[23027]: 127.0.0.1:52890 [30/Nov/2026:06:35:17.093] fe fe/<NOSRV> -1/-1/-1/-1/0 400 0 - - CR-- 1/1/0/0/0 0/0 \"<BADREQ>\"\n",
];

const HDR: &str = "{mon} {day} {hh}:{mm}:{ss} {tag}[{pid}]: ";

fn mask(pri: u32, body: &str) -> String {
    format!("<{pri}>{HDR}{body}\n")
}

/// Each mask matches one real HAProxy line.
#[test]
fn masks_match_haproxy_lines() {
    for (i, m) in masks().iter().enumerate() {
        assert_line(m, HAPROXY[i]);
    }
}

/// Connection counts (`%ac/%fc`) are masked: the harness's readiness probe,
/// or the previous request's connection, may still be open when a line is
/// written, in sluice as in HAProxy.
fn masks() -> Vec<String> {
    let ts = "[{d}/{M}/{y}:{h}:{m}:{s}.{ms}]";
    vec![
        mask(
            134,
            &format!(
                "127.0.0.1:{{p}} {ts} fe be/s1 {{TR}}/{{Tw}}/{{tc}}/{{tr}}/{{ta}} 404 {{b}} - - ---- {{ac}}/{{fc}}/0/0/{{rc}} 0/0 \"GET /x?y=1 HTTP/1.1\""
            ),
        ),
        mask(
            134,
            &format!(
                "127.0.0.1:{{p}} {ts} fe fe/<NOSRV> {{TR}}/-1/-1/-1/{{ta}} 200 {{b}} - - LR-- {{ac}}/{{fc}}/0/0/0 0/0 \"GET /ret HTTP/1.1\""
            ),
        ),
        mask(
            134,
            &format!(
                "127.0.0.1:{{p}} {ts} fe fe/<NOSRV> {{TR}}/-1/-1/-1/{{ta}} 403 {{b}} - - PR-- {{ac}}/{{fc}}/0/0/0 0/0 \"GET /deny HTTP/1.1\""
            ),
        ),
        mask(
            134,
            &format!(
                "127.0.0.1:{{p}} {ts} fe nosrv/<NOSRV> {{TR}}/-1/-1/-1/{{ta}} 503 {{b}} - - SC-- {{ac}}/{{fc}}/0/0/0 0/0 \"GET /nosrv HTTP/1.1\""
            ),
        ),
        mask(
            134,
            &format!(
                "127.0.0.1:{{p}} {ts} fe fe/<NOSRV> -1/-1/-1/-1/{{ta}} 400 {{b}} - - PR-- {{ac}}/{{fc}}/0/0/0 0/0 \"<BADREQ>\""
            ),
        ),
        mask(
            134,
            &format!(
                "127.0.0.1:{{p}} {ts} fe fe/<NOSRV> -1/-1/-1/-1/10{{ta}} 408 0 - - cR-- {{ac}}/{{fc}}/0/0/0 0/0 \"<BADREQ>\""
            ),
        ),
        mask(
            134,
            &format!(
                "127.0.0.1:{{p}} {ts} stats stats/<STATS> {{TR}}/0/0/0/{{ta}} 200 {{b}} - - LR-- {{ac}}/{{fc}}/0/0/0 0/0 \"GET /st HTTP/1.1\""
            ),
        ),
        mask(
            134,
            "127.0.0.1 - - [{d}/{M}/{y}:{h}:{m}:{s} +0000] \"GET /x?y=1 HTTP/1.1\" 404 {b} \"\" \"\" {p} {ms} \"clffe\" \"be\" \"s1\" {TR} {Tw} {tc} {tr} {ta} ---- {ac} {fc} 0 0 0 0 0 \"\" \"\" ",
        ),
        mask(
            129,
            "Server nosrv/d1 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: {ms}ms.{rest}",
        ),
        mask(128, "backend nosrv has no server available!"),
        // A connection closed before sending anything (the harness's
        // readiness probes do that).
        mask(
            134,
            &format!(
                "127.0.0.1:{{p}} {ts} {{fe}} {{fe}}/<NOSRV> -1/-1/-1/-1/{{ta}} 400 0 - - CR-- {{ac}}/{{fc}}/0/0/0 0/0 \"<BADREQ>\""
            ),
        ),
    ]
}

fn config(log: &str, be: &Backend, dead: u16, fe_port: u16, clf_port: u16, st_port: u16) -> String {
    format!(
        "global
    log {log} local0

defaults
    mode http
    log global
    timeout client 5s
    timeout server 5s
    timeout connect 1s
    timeout http-request 1s

frontend fe
    bind 127.0.0.1:{fe_port}
    option httplog
    http-request return status 200 content-type text/plain string ok if {{ path /ret }}
    http-request deny if {{ path /deny }}
    use_backend nosrv if {{ path /nosrv }}
    default_backend be

frontend clffe
    bind 127.0.0.1:{clf_port}
    option httplog clf
    default_backend be

listen stats
    bind 127.0.0.1:{st_port}
    option httplog
    stats enable
    stats uri /st

backend be
    server s1 {be}

backend nosrv
    server d1 127.0.0.1:{dead} check inter 100ms fall 1
",
        be = be.hostport()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn httplog_lines_match_haproxy() {
    let syslog = Syslog::new();
    let be = Backend::start("s1").await;
    let (_hold, [fe, clf, st, dead]) = hold_ports::<4>();
    let _sluice = Sluice::start(&config(&syslog.addr(), &be, dead, fe, clf, st));
    let mut m = masks();
    // HAProxy's oracle backend answered 404 to /x, the test backend 200.
    m[0] = m[0].replace(" 404 ", " 200 ");
    m[7] = m[7].replace(" 404 ", " 200 ");
    // The check finds d1 dead: its DOWN event, then "no server available";
    // the harness's readiness probes (connect, close) are logged CR--.
    let mut seen = syslog.until(&[&m[8], &m[9]]);
    seen.extend(syslog.quiet(Duration::from_millis(200)));
    for l in &seen {
        assert!(
            [&m[8], &m[9], &m[10]].iter().any(|m| matches(m, l)) || l.contains(" CR-- "),
            "unexpected line {l:?}"
        );
        assert!(l.contains(" sluice["), "default tag is sluice: {l}");
    }
    let down = seen.iter().position(|l| matches(&m[8], l)).unwrap();
    let none = seen.iter().position(|l| matches(&m[9], l)).unwrap();
    assert!(down < none, "{seen:#?}");

    let addr = |p: u16| format!("127.0.0.1:{p}").parse().unwrap();
    get(addr(fe), "/x?y=1").await;
    assert_line(&m[0], &syslog.take(1)[0]);
    get(addr(fe), "/ret").await;
    assert_line(&m[1], &syslog.take(1)[0]);
    get(addr(fe), "/deny").await;
    assert_line(&m[2], &syslog.take(1)[0]);
    get(addr(fe), "/nosrv").await;
    assert_line(&m[3], &syslog.take(1)[0]);
    let mut c = HttpConn::connect(addr(fe)).await;
    let _ = c.raw(b"GARBAGE\r\n\r\n", false).await;
    assert_line(&m[4], &syslog.take(1)[0]);
    // Connected, silent: 408 after timeout http-request, nothing sent.
    let silent = tokio::net::TcpStream::connect(addr(fe)).await.unwrap();
    let line = syslog.take(1).remove(0);
    assert_line(&m[5], &line);
    drop(silent);
    get(addr(st), "/st").await;
    assert_line(&m[6], &syslog.take(1)[0]);
    get(addr(clf), "/x?y=1").await;
    assert_line(&m[7], &syslog.take(1)[0]);

    // Keep-alive: one line per request, same client port.
    let mut c = HttpConn::connect(addr(fe)).await;
    c.get("/ret").await;
    c.get("/x?y=1").await;
    let two = syslog.take(2);
    assert_line(&m[1], &two[0]);
    assert_line(&m[0], &two[1]);
    let port = |l: &str| l.split(' ').nth(4).map(|s| s.to_string());
    assert_eq!(port(&two[0]), port(&two[1]));
}

/// Formats of the `log` line and severities: rfc5424 with `len`, raw,
/// short, priority; `log-separate-errors` raises errors to `err`;
/// `dontlognull` hides connections that sent nothing; `log-tag`;
/// `log-format` with the common variables and fetches; `no log`.
#[tokio::test(flavor = "multi_thread")]
async fn formats_options_and_log_format() {
    let s5424 = Syslog::new();
    let raw = Syslog::new();
    let short = Syslog::new();
    let prio = Syslog::new();
    let be = Backend::start("s1").await;
    let (fe_p1, fe_p2, fe_p3, fe_p4) = (Listen::new(), Listen::new(), Listen::new(), Listen::new());
    let (p1, p2, p3, p4) = (fe_p1.port(), fe_p2.port(), fe_p3.port(), fe_p4.port());
    let cfg = format!(
        "global
    log {a} len 100 format rfc5424 local1 info
    log {b} format raw local0
    log {c} format short local0
    log {d} format priority local0 notice
    log-tag edge

defaults
    mode http
    log global
    timeout client 5s
    timeout server 5s
    timeout connect 1s
    timeout http-request 300ms

frontend fe
    bind {fe_p1}
    option httplog
    option log-separate-errors
    option dontlognull
    http-request deny if {{ path /deny }}
    default_backend be

# HAProxy 2.6 refuses the request's header values in a log format (gone
# when the line is written); what stays of the request, as the method, is
# there.
frontend fmt
    bind {fe_p2}
    log-format \"%ci:%cp %{{+Q}}r %ST %{{+Q}}[src] %[method,lower] %b %s %HM %HU %HP %HV %trg %U %ts %fi %fp %si %sp %ID %%\"
    default_backend be

frontend quiet
    bind {fe_p3}
    no log
    option httplog
    default_backend be

frontend tagged
    bind {fe_p4}
    log-tag fe-tag
    option httplog
    default_backend be

backend be
    server s1 {be}
",
        a = s5424.addr(),
        b = raw.addr(),
        c = short.addr(),
        d = prio.addr(),
        be = be.hostport()
    );
    let _sluice = Sluice::start(&cfg);
    let addr = |p: u16| format!("127.0.0.1:{p}").parse().unwrap();
    // Readiness probes: p1 has dontlognull, the others log them (CR--).
    for l in raw.quiet(Duration::from_millis(300)) {
        assert!(l.contains("CR--") || l.contains("\"<BADREQ>\" 400"), "{l}");
        assert!(!l.contains(" fe fe/"), "dontlognull: {l}");
    }
    for s in [&s5424, &short, &prio] {
        s.quiet(Duration::from_millis(10));
    }

    get(addr(p1), "/ok").await;
    let l = s5424.take(1).remove(0);
    // HAProxy: `<142>1 2026-11-30T06:24:27.091901+00:00 - haproxy 16199 - - ...`
    // cut to `len` bytes, then the line feed.
    assert_line(
        "<142>1 {y}-{mo}-{d}T{h}:{m}:{s}.{us}+00:00 - edge {pid} - - 127.0.0.1:{p} [{t}\n",
        &l,
    );
    assert_eq!(l.len(), 101, "{l:?}");
    let l = raw.take(1).remove(0);
    assert_line(
        "127.0.0.1:{p} [{t}] fe be/s1 {TR}/{Tw}/{tc}/{tr}/{ta} 200 {b} - - ---- 1/1/0/0/0 0/0 \"GET /ok HTTP/1.1\"\n",
        &l,
    );
    assert_line(
        "<6>127.0.0.1:{p} [{t}] fe be/s1 {rest}\n",
        &short.take(1)[0],
    );
    // The priority target only takes notice and worse.
    get(addr(p1), "/deny").await;
    assert_line(
        "<3>127.0.0.1:{p} [{t}] fe fe/<NOSRV> {rest} 403 {b} - - PR-- {rest2}\n",
        &short.take(1)[0],
    );
    assert_line(
        "<131>127.0.0.1:{p} [{t}] fe fe/<NOSRV> {rest} 403 {rest2}\n",
        &prio.take(1)[0],
    );
    raw.take(1);
    s5424.take(1);

    // dontlognull: a connection that sends nothing is not logged.
    let silent = tokio::net::TcpStream::connect(addr(p1)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    drop(silent);
    assert!(raw.quiet(Duration::from_millis(300)).is_empty());

    let mut c = HttpConn::connect(addr(p2)).await;
    c.raw(
        b"GET /a/b?c=d HTTP/1.1\r\nHost: WWW.Example.ORG\r\n\r\n",
        false,
    )
    .await
    .unwrap();
    let l = raw.take(1).remove(0);
    let want = format!(
        "127.0.0.1:{{p}} \"GET /a/b?c=d HTTP/1.1\" 200 \"127.0.0.1\" get be s1 GET /a/b?c=d /a/b HTTP/1.1 {{d}}/{{M}}/{{y}}:{{h}}:{{m}}:{{s}} +0000 {{u}} -- 127.0.0.1 {p2} 127.0.0.1 {} - %\n",
        be.addr.port()
    );
    assert_line(&want, &l);
    s5424.take(1);
    short.take(1);

    // `no log`: nothing at all.
    get(addr(p3), "/").await;
    assert!(raw.quiet(Duration::from_millis(300)).is_empty());

    get(addr(p4), "/").await;
    let l = s5424.take(1).remove(0);
    assert_line("<142>1 {date} - fe-tag {pid} - - 127.0.0.1:{rest}\n", &l);
}

/// What haproxy 2.6.12 logged when `s1` (TCP check, `rise 1 fall 1`) of a
/// backend with another active server and a backup died and came back.
const HAPROXY_DOWN_UP: [&str; 2] = [
    "<129>Nov 30 08:20:16 haproxy[11161]: Server be/s1 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: 0ms. 1 active and 1 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.\n",
    "<133>Nov 30 08:20:17 haproxy[11161]: Server be/s1 is UP, reason: Layer4 check passed, check duration: 0ms. 2 active and 1 backup servers online. 0 sessions requeued, 0 total in queue.\n",
];

/// A server going DOWN is told at `alert` with the reason and the active
/// and backup servers left; coming back UP at `notice` with the servers
/// online; the backend keeps servers so there is no `emerg` line.
#[tokio::test(flavor = "multi_thread")]
async fn server_down_and_up_events_count_active_and_backup_servers() {
    // The info is masked: a check that reached s1's accept queue just as
    // the listener closed is reset ("Connection reset by peer"), in
    // HAProxy as in sluice; the texts allowed are checked below.
    let want = [
        mask(
            129,
            "Server be/s1 is DOWN, reason: Layer4 connection problem, info: \"{info}\", check duration: {ms}ms. 1 active and 1 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.",
        ),
        mask(
            133,
            "Server be/s1 is UP, reason: Layer4 check passed, check duration: {ms}ms. 2 active and 1 backup servers online. 0 sessions requeued, 0 total in queue.",
        ),
    ];
    for (m, l) in want.iter().zip(HAPROXY_DOWN_UP) {
        assert_line(m, l);
    }
    let syslog = Syslog::new();
    let mut s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let b1 = Backend::start("b1").await;
    let fe = Listen::new();
    let cfg = format!(
        "global
    log {} local0

defaults
    mode http
    log global
    timeout client 5s
    timeout server 5s
    timeout connect 1s

frontend fe
    bind {fe}
    default_backend be

backend be
    server s1 {} check inter 100ms rise 1 fall 1
    server s2 {} check inter 100ms rise 1 fall 1
    server b1 {} backup check inter 100ms
",
        syslog.addr(),
        s1.hostport(),
        s2.hostport(),
        b1.hostport()
    );
    let _sluice = Sluice::start(&cfg);
    s1.kill().await;
    let seen = syslog.until(&[&want[0]]);
    s1.restart().await;
    let mut rest = syslog.until(&[&want[1]]);
    rest.extend(syslog.quiet(Duration::from_millis(300)));
    // Every event line (alert, notice, emerg) is one of the two; the
    // others are the harness's connections (info).
    let events: Vec<&String> = seen
        .iter()
        .chain(&rest)
        .filter(|l| !l.starts_with("<134>"))
        .collect();
    assert_eq!(events.len(), 2, "{events:#?}");
    for (m, l) in want.iter().zip(&events) {
        assert_line(m, l);
    }
    assert!(
        ["\"Connection refused\"", "\"Connection reset by peer\""]
            .iter()
            .any(|info| events[0].contains(info)),
        "{}",
        events[0]
    );
}

/// What haproxy 2.6.12 logged for these CLI commands, in this order, on
/// servers s1, s2 and backup b1 (the `{…}` parts of the masks aside).
const HAPROXY_ADMIN: &[(&str, &[&str])] = &[
    (
        "disable server be/s1",
        &[
            "<129>Nov 30 08:43:18 haproxy[20227]: Server be/s1 is going DOWN for maintenance. 1 active and 1 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.\n",
        ],
    ),
    (
        "enable server be/s1",
        &[
            "<133>Nov 30 08:43:19 haproxy[20227]: Server be/s1 is UP/READY (leaving forced maintenance).\n",
        ],
    ),
    (
        "set server be/s2 state drain",
        &[
            "<133>Nov 30 08:43:19 haproxy[20227]: Server be/s2 enters drain state. 1 active and 1 backup servers online. 0 sessions requeued, 0 total in queue.\n",
        ],
    ),
    (
        "set server be/s2 state ready",
        &["<133>Nov 30 08:43:19 haproxy[20227]: Server be/s2 is UP (leaving forced drain).\n"],
    ),
    (
        "disable server be/s1",
        &[
            "<129>Nov 30 08:43:20 haproxy[20227]: Server be/s1 is going DOWN for maintenance. 1 active and 1 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.\n",
        ],
    ),
    (
        "set server be/s2 state maint",
        &[
            "<129>Nov 30 08:43:21 haproxy[20227]: Server be/s2 is going DOWN for maintenance. 0 active and 1 backup servers left. Running on backup. 0 sessions active, 0 requeued, 0 remaining in queue.\n",
        ],
    ),
    (
        "set server be/b1 state maint",
        &[
            "<129>Nov 30 08:43:21 haproxy[20227]: Backup Server be/b1 is going DOWN for maintenance. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.\n",
            "<128>Nov 30 08:43:21 haproxy[20227]: backend be has no server available!\n",
        ],
    ),
    (
        "set server be/b1 state ready",
        &[
            "<133>Nov 30 08:43:21 haproxy[20227]: Backup Server be/b1 is UP/READY (leaving forced maintenance).\n",
        ],
    ),
];

/// Admin changes from the CLI are told like HAProxy's: maintenance at
/// `alert` with the servers left ("Running on backup." when only backups
/// are), `emerg` when none is left, drain and the way back at `notice`,
/// "Backup Server" for backups.
#[tokio::test(flavor = "multi_thread")]
async fn cli_admin_changes_are_logged_as_haproxy() {
    let syslog = Syslog::new();
    let b = Backend::start("b").await;
    let fe = Listen::new();
    let cfg = format!(
        "global
    log {} local0
    stats socket @DIR@/stats.sock mode 600 level admin

defaults
    mode http
    log global
    timeout client 5s
    timeout server 5s
    timeout connect 1s

frontend fe
    bind {fe}
    default_backend be

backend be
    server s1 {b} check inter 100ms
    server s2 {b}
    server b1 {b} backup
",
        syslog.addr(),
        b = b.hostport()
    );
    let s = Sluice::start(&cfg);
    let sock = s.stats_socket();
    for (cmd, lines) in HAPROXY_ADMIN {
        assert_eq!(cli(&sock, cmd).await, "\n", "{cmd}");
        // Event lines only: the harness's probe connections log at info.
        let mut got = Vec::new();
        while got.len() < lines.len() {
            got.extend(
                syslog
                    .take(1)
                    .into_iter()
                    .filter(|l| !l.starts_with("<134>")),
            );
        }
        for (g, want) in got.iter().zip(*lines) {
            // The HAProxy line with its header masked.
            let body = want.split_once("]: ").unwrap().1.trim_end_matches('\n');
            let pri: u32 = want[1..4].parse().unwrap();
            let m = mask(pri, body);
            assert_line(&m, want);
            assert_line(&m, g);
        }
    }
    let rest = syslog.quiet(Duration::from_millis(200));
    assert!(rest.iter().all(|l| l.starts_with("<134>")), "{rest:#?}");
}

/// `capture request|response header`: `%hr` / `%hs` in the httplog line as
/// haproxy 2.6 prints them (captured from it with the same configuration):
/// the last value, cut to `len`, `#XX` escapes, `|` between headers, and
/// empty response captures when no server answered.
#[tokio::test(flavor = "multi_thread")]
async fn captured_headers_in_httplog_as_haproxy() {
    let syslog = Syslog::new();
    let be = Backend::start("s1").await;
    let fe = Listen::new();
    let port = fe.port();
    let _s = Sluice::start(&format!(
        "defaults
    mode http
    log {log} local0
    option httplog
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend fe
    bind {fe}
    capture request header Host len 8
    capture request header User-Agent len 20
    capture response header X-Backend len 4
    capture response header X-Nope len 4
    http-request return status 200 content-type text/plain string ok if {{ path /ret }}
    default_backend be
backend be
    server s1 {hp}
",
        log = syslog.addr(),
        hp = be.hostport()
    ));
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    // The harness's readiness probes log CR-- lines first: skip them.
    let next = || loop {
        let l = syslog.take(1).remove(0);
        if !l.contains(" CR-- ") {
            return l;
        }
    };
    let mut c = HttpConn::connect(addr).await;
    c.raw(
        b"GET /a HTTP/1.1\r\nhost: averyverylonghost.example\r\nuser-agent: curl/8 {x|y} \"q\" #h\r\n\r\n",
        false,
    )
    .await
    .unwrap();
    let line = next();
    assert!(
        line.ends_with(
            " 0/0 {averyver|curl/8 #7Bx#7Cy#7D #22q#22 #23h} {s1|} \"GET /a HTTP/1.1\"\n"
        ),
        "{line:?}"
    );
    c.raw(b"GET /ret HTTP/1.1\r\nhost: h\r\n\r\n", false)
        .await
        .unwrap();
    let line = next();
    assert!(
        line.ends_with(" 0/0 {h|} {|} \"GET /ret HTTP/1.1\"\n") && line.contains(" LR-- "),
        "{line:?}"
    );
}

/// HAProxy 2.6.12 with `log <a> format rfc3164 local0 info notice` and
/// `log <b> local0`, a server DOWN and its backend left without servers:
/// the explicit rfc3164 format adds the host name (`localhost`), the
/// default one does not; `minlevel notice` lowers the alert and emerg
/// lines to notice (`<133>`), the default target keeps `<129>`/`<128>`.
const HAPROXY_RFC3164_MINLEVEL: [&str; 4] = [
    "<133>Nov 30 14:03:04 localhost haproxy[30749]: Server dead/d1 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: 0ms. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.\n",
    "<133>Nov 30 14:03:04 localhost haproxy[30749]: backend dead has no server available!\n",
    "<129>Nov 30 14:03:04 haproxy[30749]: Server dead/d1 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: 0ms. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.\n",
    "<128>Nov 30 14:03:04 haproxy[30749]: backend dead has no server available!\n",
];

#[tokio::test(flavor = "multi_thread")]
async fn explicit_rfc3164_and_minlevel() {
    let host = "{mon} {day} {hh}:{mm}:{ss} localhost {tag}[{pid}]: ";
    let down = "Server dead/d1 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: {ms}ms. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.";
    let empty = "backend dead has no server available!";
    let capped = [
        format!("<133>{host}{down}\n"),
        format!("<133>{host}{empty}\n"),
    ];
    let plain = [mask(129, down), mask(128, empty)];
    for (m, l) in capped.iter().chain(&plain).zip(HAPROXY_RFC3164_MINLEVEL) {
        assert_line(m, l);
    }
    let a = Syslog::new();
    let b = Syslog::new();
    let be = Backend::start("s1").await;
    let (_hold, dead) = hold_port();
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "global
    log {} format rfc3164 local0 info notice
    log {} local0

defaults
    mode http
    log global
    option httplog
    timeout client 5s
    timeout server 5s
    timeout connect 1s

frontend fe
    bind {fe}
    default_backend be

backend be
    server s1 {}

backend dead
    server d1 127.0.0.1:{dead} check inter 100ms rise 1 fall 1
",
        a.addr(),
        b.addr(),
        be.hostport()
    );
    let _sluice = Sluice::start(&cfg);
    let seen_a = a.until(&[&capped[0], &capped[1]]);
    let seen_b = b.until(&[&plain[0], &plain[1]]);
    // Traffic stays at info (`<134>`), with the host name on `a` only.
    get(format!("127.0.0.1:{port}").parse().unwrap(), "/r").await;
    let req = "{}\"GET /r HTTP/1.1\"";
    let la = a.until(&[&format!("<134>{host}{req}\n")]);
    let lb = b.until(&[&mask(134, req)]);
    // Nothing on `a` above notice, nothing without the host name.
    for l in seen_a.iter().chain(&la) {
        assert!(l.starts_with("<133>") || l.starts_with("<134>"), "{l}");
        assert!(matches(&format!("<{{p}}>{host}{{m}}"), l), "{l}");
    }
    for l in seen_b.iter().chain(&lb) {
        assert!(!l.contains(" localhost "), "{l}");
    }
}

/// HAProxy 2.6.12 with `option log-separate-errors`: a 503 for a backend
/// without servers (`SC--`) and a server's 501 (`----`) are logged at
/// `err` (`<131>`), a 200 at `info`.
const HAPROXY_SEPARATE_ERRORS: [&str; 3] = [
    "<131>Nov 30 14:43:52 haproxy[2627]: 127.0.0.1:50794 [30/Nov/2026:14:43:52.656] fe nosrv/<NOSRV> 0/-1/-1/-1/0 503 217 - - SC-- 1/1/0/0/0 0/0 \"GET /nosrv HTTP/1.1\"\n",
    "<134>Nov 30 14:43:52 haproxy[2627]: 127.0.0.1:50804 [30/Nov/2026:14:43:52.664] fe be/s1 0/0/0/1/1 200 1541 - - ---- 1/1/0/0/0 0/0 \"GET / HTTP/1.1\"\n",
    "<131>Nov 30 14:43:52 haproxy[2627]: 127.0.0.1:50810 [30/Nov/2026:14:43:52.672] fe be/s1 0/0/0/1/1 501 533 - - ---- 1/1/0/0/0 0/0 \"FOO / HTTP/1.1\"\n",
];

#[tokio::test(flavor = "multi_thread")]
async fn log_separate_errors_raises_5xx_to_err() {
    let line = |pri: u32, route: &str, term: &str, status: &str, req: &str| {
        mask(
            pri,
            &format!(
                "127.0.0.1:{{p}} [{{date}}] fe {route} {{timers}} {status} {{B}} - - {term} {{conns}} 0/0 \"{req} HTTP/1.1\""
            ),
        )
    };
    let want = [
        line(131, "nosrv/<NOSRV>", "SC--", "503", "GET /nosrv"),
        line(134, "be/s1", "----", "200", "GET /"),
        line(131, "be/s1", "----", "501", "FOO /"),
    ];
    for (m, l) in want.iter().zip(HAPROXY_SEPARATE_ERRORS) {
        assert_line(m, l);
    }
    // A server answering 200 to GET and 501 to anything else.
    let server = tcp_server(|mut s| async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut buf = vec![0u8; 4096];
        let mut got = Vec::new();
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        let status = if got.starts_with(b"GET ") {
            "200 OK"
        } else {
            "501 Not Implemented"
        };
        let resp = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        let _ = s.write_all(resp.as_bytes()).await;
    })
    .await;
    let syslog = Syslog::new();
    let fe = Listen::new();
    let port = fe.port();
    let cfg = format!(
        "global
    log {} local0

defaults
    mode http
    log global
    option httplog
    option log-separate-errors
    option dontlognull
    timeout client 5s
    timeout server 5s
    timeout connect 1s

frontend fe
    bind {fe}
    use_backend nosrv if {{ path /nosrv }}
    default_backend be

backend be
    server s1 {server}

backend nosrv
",
        syslog.addr()
    );
    let _sluice = Sluice::start(&cfg);
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    assert_eq!(get(addr, "/nosrv").await.status, 503);
    assert_eq!(get(addr, "/").await.status, 200);
    assert_eq!(request(addr, "FOO", "/", b"").await.status, 501);
    syslog.until(&[&want[0], &want[1], &want[2]]);
}

/// What haproxy 2.6.12 logged with `option log-health-checks` (`rise 2
/// fall 2`) for a server answering the check 500, then 200, then 500.
const HAPROXY_HEALTH_CHECKS: &[&str] = &[
    "<133>Dec  1 19:44:00 haproxy[15636]: Health check for server b/s1 failed, reason: Layer7 wrong status, code: 500, info: \"Internal Server Error\", check duration: 6ms, status: 0/2 DOWN.\n",
    "<129>Dec  1 19:44:00 haproxy[15636]: Server b/s1 is DOWN. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.\n",
    "<128>Dec  1 19:44:00 haproxy[15636]: backend b has no server available!\n",
    "<133>Dec  1 19:44:01 haproxy[15636]: Health check for server b/s1 succeeded, reason: Layer7 check passed, code: 200, check duration: 0ms, status: 1/2 DOWN.\n",
    "<133>Dec  1 19:44:01 haproxy[15636]: Health check for server b/s1 succeeded, reason: Layer7 check passed, code: 200, check duration: 0ms, status: 2/2 UP.\n",
    "<133>Dec  1 19:44:01 haproxy[15636]: Server b/s1 is UP. 1 active and 0 backup servers online. 0 sessions requeued, 0 total in queue.\n",
    "<133>Dec  1 19:44:02 haproxy[15636]: Health check for server b/s1 failed, reason: Layer7 wrong status, code: 500, info: \"Internal Server Error\", check duration: 0ms, status: 1/2 UP.\n",
    "<133>Dec  1 19:44:02 haproxy[15636]: Health check for server b/s1 failed, reason: Layer7 wrong status, code: 500, info: \"Internal Server Error\", check duration: 0ms, status: 0/2 DOWN.\n",
    "<129>Dec  1 19:44:02 haproxy[15636]: Server b/s1 is DOWN. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.\n",
    "<128>Dec  1 19:44:02 haproxy[15636]: backend b has no server available!\n",
];

/// `option log-health-checks`: each check whose result changed, or that
/// moved the health counter, is logged at notice as HAProxy 2.6 does
/// (`status: <n>/<of> UP|DOWN`), repeated identical results are not, and
/// the DOWN/UP lines then leave the reason out. Without the option only
/// the state changes are logged, with their reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_health_checks_logs_each_check_change_as_haproxy() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU16, Ordering::SeqCst};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let code = Arc::new(AtomicU16::new(500));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let c = code.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await;
            let resp = match c.load(SeqCst) {
                200 => "HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n",
                _ => "HTTP/1.0 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n",
            };
            let _ = s.write_all(resp.as_bytes()).await;
        }
    });
    let want: Vec<String> = [
        (133, "Health check for server b/s1 failed, reason: Layer7 wrong status, code: 500, info: \"Internal Server Error\", check duration: {ms}ms, status: 0/2 DOWN."),
        (129, "Server b/s1 is DOWN. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue."),
        (128, "backend b has no server available!"),
        (133, "Health check for server b/s1 succeeded, reason: Layer7 check passed, code: 200, check duration: {ms}ms, status: 1/2 DOWN."),
        (133, "Health check for server b/s1 succeeded, reason: Layer7 check passed, code: 200, check duration: {ms}ms, status: 2/2 UP."),
        (133, "Server b/s1 is UP. 1 active and 0 backup servers online. 0 sessions requeued, 0 total in queue."),
        (133, "Health check for server b/s1 failed, reason: Layer7 wrong status, code: 500, info: \"Internal Server Error\", check duration: {ms}ms, status: 1/2 UP."),
        (133, "Health check for server b/s1 failed, reason: Layer7 wrong status, code: 500, info: \"Internal Server Error\", check duration: {ms}ms, status: 0/2 DOWN."),
        (129, "Server b/s1 is DOWN. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue."),
        (128, "backend b has no server available!"),
    ]
    .iter()
    .map(|(p, b)| mask(*p, b))
    .collect();
    for (m, l) in want.iter().zip(HAPROXY_HEALTH_CHECKS) {
        assert_line(m, l);
    }
    let syslog = Syslog::new();
    let (_held, port) = hold_port();
    let cfg = |opt: &str| {
        format!(
            "global
    log {} local0
defaults
    mode http
    log global
    timeout client 5s
    timeout server 5s
    timeout connect 1s
frontend f
    bind 127.0.0.1:{port}
    default_backend b
backend b
    {opt}
    option httpchk GET /
    server s1 {addr} check inter 100ms rise 2 fall 2
",
            syslog.addr()
        )
    };
    let sluice = Sluice::start(&cfg("option log-health-checks"));
    let mut seen = syslog.until(&[&want[2]]);
    // Failing again and again changes nothing: no line.
    seen.extend(syslog.quiet(Duration::from_millis(400)));
    code.store(200, SeqCst);
    seen.extend(syslog.until(&[&want[5]]));
    seen.extend(syslog.quiet(Duration::from_millis(400)));
    code.store(500, SeqCst);
    seen.extend(syslog.until(&[&want[9]]));
    seen.extend(syslog.quiet(Duration::from_millis(300)));
    let events: Vec<&String> = seen.iter().filter(|l| !l.starts_with("<134>")).collect();
    assert_eq!(events.len(), want.len(), "{events:#?}");
    for (m, l) in want.iter().zip(&events) {
        assert_line(m, l);
    }
    drop(sluice);
    // Without the option: the state change only, with its reason.
    code.store(500, SeqCst);
    let syslog2 = Syslog::new();
    let _s = Sluice::start(&cfg("").replace(&syslog.addr(), &syslog2.addr()));
    let down = mask(
        129,
        "Server b/s1 is DOWN, reason: Layer7 wrong status, code: 500, info: \"Internal Server Error\", check duration: {ms}ms. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.",
    );
    let mut seen = syslog2.until(&[&down]);
    seen.extend(syslog2.quiet(Duration::from_millis(300)));
    assert!(
        !seen.iter().any(|l| l.contains("Health check for")),
        "{seen:#?}"
    );
}
