//! `haproxy -c` and `sluice -c` on the keywords of servers that come and
//! go: `resolvers` sections, the `resolve-*`, `init-addr` and `agent-*`
//! server options, `server-template`, and the server-state file keywords.
//! Both must accept the same files and refuse the others with the same
//! message at the same line.

mod support;

use support::haproxy::{assert_check_agrees, available};

const HEAD: &str = "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
";

/// The first alert's text after `config : `, the file name made the same
/// (`check_both` names haproxy's file `haproxy.cfg` and sluice's
/// `sluice.cfg`). sluice puts `[file:line] : ` before the one message
/// HAProxy gives without a place (an unknown `resolvers` name): it is
/// taken away here, the rest compared.
fn alert(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| {
            l.contains("[ALERT]") && !l.contains("Error(s) found") && !l.contains("Fatal errors")
        })
        .map(|l| {
            let m = l.split_once("config : ").map_or(l, |(_, m)| m);
            // Each run has its own temporary directory.
            let m = regex::Regex::new(r"/tmp/sluice-[^/]+/")
                .unwrap()
                .replace_all(m, "")
                .replace("sluice.cfg", "haproxy.cfg");
            match m.clone().strip_prefix("[haproxy.cfg:") {
                Some(rest) if rest.contains("unable to find required resolvers") => rest
                    .split_once("] : ")
                    .map_or(m.clone(), |(_, r)| r.to_string()),
                _ => m,
            }
        })
        .unwrap_or_else(|| "(accepted)".to_string())
}

fn resolvers(lines: &str) -> String {
    format!(
        "resolvers dns\n    nameserver ns1 127.0.0.1:53\n{lines}{HEAD}backend be\n    server s0 127.0.0.1:80\n"
    )
}

fn server(opts: &str) -> String {
    format!(
        "resolvers dns\n    nameserver ns1 127.0.0.1:53\n{HEAD}backend be\n    server s1 127.0.0.1:80 {opts}\n"
    )
}

#[test]
fn keywords_of_servers_that_come_and_go_are_checked_as_haproxy_checks_them() {
    if !available() {
        return;
    }
    let mut cases: Vec<(String, String)> = Vec::new();
    for (label, lines) in [
        ("nameserver without address", "    nameserver dns2\n"),
        ("nameserver bad address", "    nameserver dns2 notanip:53\n"),
        ("nameserver twice", "    nameserver ns1 127.0.0.1:54\n"),
        ("payload too small", "    accepted_payload_size 10\n"),
        ("payload not a number", "    accepted_payload_size abc\n"),
        ("timeout kind", "    timeout foo 1s\n"),
        ("timeout value", "    timeout resolve abc\n"),
        ("timeout missing", "    timeout retry\n"),
        ("hold kind", "    hold foo 1s\n"),
        ("hold value", "    hold nx abc\n"),
        ("hold missing", "    hold nx\n"),
        ("unknown keyword", "    frobnicate 1\n"),
        (
            "all keywords",
            "    parse-resolv-conf\n    accepted_payload_size 8192\n    resolve_retries 2\n    timeout resolve 1s\n    timeout retry 500ms\n    hold nx 5s\n    hold other 5s\n    hold refused 5s\n    hold timeout 5s\n    hold valid 5s\n    hold obsolete 5s\n",
        ),
    ] {
        cases.push((label.to_string(), resolvers(lines)));
    }
    cases.push((
        "resolvers twice".into(),
        format!("resolvers dns\n    nameserver a 127.0.0.1:53\nresolvers dns\n    nameserver b 127.0.0.1:53\n{HEAD}backend be\n    server s0 127.0.0.1:80\n"),
    ));
    for (label, opts) in [
        ("unknown resolvers", "resolvers nosuch"),
        ("resolve-prefer", "resolvers dns resolve-prefer ipv5"),
        ("resolve-opts", "resolvers dns resolve-opts foo"),
        ("init-addr", "resolvers dns init-addr foo"),
        ("resolve-net", "resolvers dns resolve-net foo"),
        (
            "resolve options",
            "resolvers dns resolve-prefer ipv4 resolve-net 10.0.0.0/8,127.0.0.0/8 resolve-opts allow-dup-ip,ignore-weight init-addr last,libc,none,127.0.0.1",
        ),
        ("agent without port", "agent-check"),
        ("agent-port missing", "agent-port"),
        ("agent-addr missing", "agent-addr"),
        ("agent-addr bad", "agent-addr foo"),
        ("agent-inter missing", "agent-inter"),
        ("agent-inter bad", "agent-inter 1x"),
        ("agent-send missing", "agent-send"),
        (
            "agent options",
            "agent-check agent-port 9999 agent-addr 127.0.0.1 agent-inter 5s agent-send hello",
        ),
        ("no-agent-check", "agent-check no-agent-check"),
    ] {
        cases.push((label.to_string(), server(opts)));
    }
    for (label, line) in [
        ("template zero", "server-template t 0 127.0.0.1:80"),
        ("template range", "server-template t 3-1 127.0.0.1:80"),
        ("template count", "server-template t abc 127.0.0.1:80"),
        ("template arguments", "server-template t 3"),
        ("template", "server-template t 2-4 127.0.0.1:80 check"),
        (
            "template srv",
            "server-template t 3 _http._tcp.web.service.consul resolvers dns",
        ),
    ] {
        cases.push((
            label.to_string(),
            format!(
                "resolvers dns\n    nameserver ns1 127.0.0.1:53\n{HEAD}backend be\n    {line}\n"
            ),
        ));
    }
    for (label, global, proxy) in [
        ("state file missing", "    server-state-file\n", ""),
        ("state base missing", "    server-state-base\n", ""),
        ("load bad", "", "    load-server-state-from-file foo\n"),
        ("load missing", "", "    load-server-state-from-file\n"),
        ("file name extra", "", "    server-state-file-name a b\n"),
        (
            "state keywords",
            "    server-state-file state\n    server-state-base /tmp\n",
            "    load-server-state-from-file global\n    server-state-file-name use-backend-name\n",
        ),
    ] {
        cases.push((
            label.to_string(),
            format!("global\n{global}{HEAD}backend be\n{proxy}    server s1 127.0.0.1:80\n"),
        ));
    }
    assert_check_agrees("dnscfg", cases, alert);
}
