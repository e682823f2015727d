//! The proxy keywords of HAProxy 2.6 that each touch one spot (the stats
//! page's node and descriptions, `timeout client-fin|server-fin`,
//! `http-errors` sections and `errorloc*`, `source`, `dispatch`, `option
//! originalto`, `http-send-name-header`...), run by haproxy and by sluice
//! on the same configuration and compared: the bytes the client and the
//! server receive, the stats page's texts, the CLI, and `-c`'s messages.
//!
//! Required when `CI` is set (`.ci/run` installs haproxy); skipped with a
//! message otherwise.

mod support;

use support::haproxy::{Differences, Haproxy, answers_to, assert_check_agrees, available};
use support::*;

const DEFAULTS: &str = "defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
";

/// The text between `start` and the next `end` of `page`, if any.
fn between<'a>(page: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let at = page.find(start)? + start.len();
    let len = page[at..].find(end)?;
    Some(&page[at..at + len])
}

/// The page is sluice's own design (HAProxy's is 20 kB of its own tables):
/// what is compared is the text `stats show-node`, `stats show-desc` and
/// `description` put on it, where each page has it. The pid differs
/// (two processes) and is masked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_page_shows_node_and_descriptions_as_haproxy() {
    if !available() {
        return;
    }
    let cfg = |fe: &[Listen], sock: &str| {
        format!(
            "global
    node gnode
    description the global one
    stats socket {sock} level admin
{DEFAULTS}frontend fe
    bind {}
    description front   end \"of it\"
    stats enable
    stats uri /st
    stats show-node edge-1.a_b
    stats show-desc my  own  text
    stats show-modules
    default_backend be
backend be
    description back end
    server s1 127.0.0.1:9
frontend fe2
    bind {}
    stats enable
    stats uri /st
    stats show-node
    stats show-desc
",
            fe[0], fe[1]
        )
    };
    let dir = TempDir::new("pxkw-stats");
    let hsock = dir.join("h.sock");
    let fronts = listens(2);
    let hap = Haproxy::start(
        "pxkw-stats",
        &cfg(&fronts, hsock.to_str().expect("utf-8")),
        &[&fronts[0], &fronts[1]],
    );
    let mine = listens(2);
    let sl = Sluice::start(&cfg(&mine, "@DIR@/s.sock"));
    // fe2 comes first: `show-node` and `show-desc` without words name the
    // global `node` and `description`.
    let req = b"GET /st HTTP/1.1\r\nhost: x\r\n\r\n";
    let mut d = Differences::default();
    for (label, i) in [("fe2", 1), ("fe", 0)] {
        let h = HttpConn::connect(fronts[i].addr())
            .await
            .raw(req, false)
            .await;
        let s = HttpConn::connect(mine[i].addr())
            .await
            .raw(req, false)
            .await;
        let (h, s) = (
            h.expect("haproxy's page").text(),
            s.expect("sluice's page").text(),
        );
        // Haproxy's page has what is compared (a test that cannot fail
        // would compare two Nones).
        let line = report(&h, "<h2>").unwrap_or_default();
        assert!(line.starts_with(" on ") && line.contains(": "), "{line}");
        d.compare(
            format!("{label}: title's node"),
            &between(&h, "Statistics Report for HAProxy", "</title>"),
            &between(&s, "Statistics Report for sluice", "</title>"),
        );
        d.compare(
            format!("{label}: report line (show-node, show-desc)"),
            &report(&h, "<h2>"),
            &report(&s, "<p class=node>"),
        );
        if label == "fe2" {
            continue;
        }
        for px in ["fe", "be"] {
            let hd = between(
                &h,
                &format!("href=\"#{px}\">{px}</a></th><th class=\"desc\" width=\"90%\">"),
                "</th>",
            );
            let sd = between(&s, &format!("<h2>{px}</h2>\n<p class=desc>"), "</p>");
            d.compare(format!("description of {px}"), &hd, &sd);
        }
        // show-modules: the extra columns, in HAProxy's order.
        d.compare(
            "module columns",
            &between(&h, "<th>Thrtle</th>\n", "</tr>"),
            &between(&s, "<th>Check</th>", "</tr>"),
        );
    }
    d.compare(
        "show info node, description",
        &info_lines(&cli_blocking(&hsock, "show info")),
        &info_lines(&cli_blocking(&sl.path("s.sock"), "show info")),
    );
    // `description` has no column in HAProxy 2.6's CSV: both give the
    // same header.
    d.compare(
        "show stat header",
        &cli_blocking(&hsock, "show stat")
            .lines()
            .next()
            .map(str::to_string),
        &cli_blocking(&sl.path("s.sock"), "show stat")
            .lines()
            .next()
            .map(str::to_string),
    );
    d.assert_none();
    drop(hap);
}

/// The `Statistics Report for pid <pid>...` line's text after the pid
/// (masked: two processes).
fn report(page: &str, open: &str) -> Option<String> {
    between(page, open, "<").map(|t| {
        let rest = t.trim_start_matches("Statistics Report for pid ");
        rest.trim_start_matches(|c: char| c.is_ascii_digit())
            .to_string()
    })
}

fn info_lines(info: &str) -> Vec<String> {
    info.lines()
        .filter(|l| l.starts_with("node:") || l.starts_with("description:"))
        .map(str::to_string)
        .collect()
}

/// `-c` on the misuses of the stats page's and `description` keywords:
/// the same exit code and message as `haproxy -c`.
#[test]
fn stats_and_description_misuse_is_reported_as_haproxy() {
    if !available() {
        return;
    }
    let case = |label: &str, section: &str| (label.to_string(), format!("{DEFAULTS}{section}"));
    let cases = vec![
        case("bad node name", "backend b\n    stats show-node a*b\n"),
        case(
            "description in defaults",
            "defaults\n    description x\nbackend b\n",
        ),
        case(
            "show-desc without a global one",
            "backend b\n    stats show-desc\n",
        ),
        case("show-modules", "backend b\n    stats show-modules\n"),
        case("description", "backend b\n    description a  b c\n"),
    ];
    assert_check_agrees("pxkw-check", cases, |e| {
        let w = e
            .lines()
            .find(|l| l.contains("show-desc"))
            .and_then(|l| l.split_once("]: "))
            .map(|(_, m)| m.to_string());
        format!("{} {w:?}", message(e))
    });
}

/// The message of the first alert naming a line, or "(accepted)": the text
/// after `parsing [<file>:<line>]` and its colon, whether HAProxy writes
/// `]: ` or `] : ` there (the pid before it differs).
fn message(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| l.contains("[ALERT]"))
        .find_map(|l| l.split_once("parsing [").map(|(_, m)| m))
        .and_then(|m| m.split_once(']'))
        .map(|(_, m)| m.trim_start_matches([':', ' ']).to_string())
        .unwrap_or_else(|| "(accepted)".into())
}
