//! `http-request use-service prometheus-exporter`: the exposition parsed
//! strictly (text format 0.0.4), HAProxy 2.6's metric names and labels,
//! counters that move with traffic, and the `scope` filter.

mod support;

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;

use support::*;

/// One scrape: family name -> type, and every series -> value.
struct Scrape {
    types: BTreeMap<String, String>,
    samples: BTreeMap<String, f64>,
}

impl Scrape {
    fn get(&self, series: &str) -> f64 {
        *self
            .samples
            .get(series)
            .unwrap_or_else(|| panic!("no series {series}"))
    }
    fn families(&self, prefix: &str) -> usize {
        self.types.keys().filter(|k| k.starts_with(prefix)).count()
    }
}

fn valid_name(n: &str) -> bool {
    let mut c = n.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
}

fn valid_label_name(n: &str) -> bool {
    let mut c = n.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// Parses `{k="v",...}` strictly; returns the label pairs.
fn parse_labels(s: &str, line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let eq = s[i..]
            .find('=')
            .unwrap_or_else(|| panic!("label without '=': {line}"))
            + i;
        let k = &s[i..eq];
        assert!(valid_label_name(k), "bad label name {k:?}: {line}");
        assert_eq!(b.get(eq + 1), Some(&b'"'), "label value not quoted: {line}");
        let mut j = eq + 2;
        let mut v = String::new();
        loop {
            match b.get(j) {
                Some(b'\\') => {
                    match b.get(j + 1) {
                        Some(b'\\') => v.push('\\'),
                        Some(b'"') => v.push('"'),
                        Some(b'n') => v.push('\n'),
                        _ => panic!("bad escape: {line}"),
                    }
                    j += 2;
                }
                Some(b'"') => break,
                Some(_) => {
                    let ch = s[j..].chars().next().unwrap();
                    v.push(ch);
                    j += ch.len_utf8();
                }
                None => panic!("unterminated label value: {line}"),
            }
        }
        out.push((k.to_string(), v));
        j += 1;
        match b.get(j) {
            None => break,
            Some(b',') => i = j + 1,
            Some(_) => panic!("garbage after label value: {line}"),
        }
    }
    let names: HashSet<&String> = out.iter().map(|(k, _)| k).collect();
    assert_eq!(names.len(), out.len(), "duplicate label: {line}");
    out
}

/// The text exposition format, strictly: every family has `# HELP` then
/// `# TYPE` before its samples, samples of one family are contiguous,
/// names and labels are well formed, values are floats, no duplicates.
fn parse(text: &str) -> Scrape {
    assert!(text.is_empty() || text.ends_with('\n'), "no final newline");
    let mut types = BTreeMap::new();
    let mut samples = BTreeMap::new();
    let mut help_for: Option<String> = None;
    let mut current: Option<String> = None;
    let mut seen = HashSet::new();
    for line in text.lines() {
        assert!(!line.is_empty(), "empty line in exposition");
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect("HELP without text");
            assert!(valid_name(name), "bad name in HELP: {line}");
            assert!(!help.is_empty(), "empty HELP: {line}");
            assert!(seen.insert(name.to_string()), "family {name} twice");
            help_for = Some(name.to_string());
            current = None;
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, ty) = rest.split_once(' ').expect("TYPE without type");
            assert_eq!(
                help_for.as_deref(),
                Some(name),
                "TYPE not after its HELP: {line}"
            );
            assert!(
                matches!(
                    ty,
                    "counter" | "gauge" | "histogram" | "summary" | "untyped"
                ),
                "bad type: {line}"
            );
            types.insert(name.to_string(), ty.to_string());
            current = Some(name.to_string());
            help_for = None;
        } else {
            assert!(!line.starts_with('#'), "stray comment: {line}");
            let (series, value) = line.rsplit_once(' ').expect("sample without value");
            let (name, labels) = match series.split_once('{') {
                Some((n, l)) => {
                    let l = l
                        .strip_suffix('}')
                        .unwrap_or_else(|| panic!("no '}}': {line}"));
                    (n, parse_labels(l, line))
                }
                None => (series, Vec::new()),
            };
            assert!(valid_name(name), "bad metric name: {line}");
            assert_eq!(
                current.as_deref(),
                Some(name),
                "sample outside its family: {line}"
            );
            let v: f64 = match value {
                "NaN" => f64::NAN,
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                v => v.parse().unwrap_or_else(|_| panic!("bad value: {line}")),
            };
            if name.starts_with("haproxy_frontend_") || name.starts_with("haproxy_backend_") {
                assert_eq!(labels[0].0, "proxy", "{line}");
            }
            if name.starts_with("haproxy_server_") {
                assert_eq!(
                    (labels[0].0.as_str(), labels[1].0.as_str()),
                    ("proxy", "server")
                );
            }
            assert!(
                samples.insert(series.to_string(), v).is_none(),
                "duplicate series: {line}"
            );
        }
    }
    Scrape { types, samples }
}

struct Setup {
    _s: Sluice,
    fe: SocketAddr,
    /// The frontend's socket, passed to sluice as `bind fd@N`.
    fe_listen: Listen,
    _s1: Backend,
    _s2: Backend,
}

async fn setup() -> Setup {
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let fe_listen = Listen::new();
    let port = fe_listen.port();
    let cfg = format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s

frontend web_fe
    bind {fe_listen}
    http-request use-service prometheus-exporter if {{ path /metrics }}
    default_backend web_be

backend web_be
    balance roundrobin
    server s1 {a}
    server s2 {b}
",
        a = s1.hostport(),
        b = s2.hostport()
    );
    Setup {
        _s: Sluice::start(&cfg),
        fe: SocketAddr::from(([127, 0, 0, 1], port)),
        fe_listen,
        _s1: s1,
        _s2: s2,
    }
}

async fn scrape(fe: SocketAddr, query: &str) -> Scrape {
    let r = get(fe, &format!("/metrics{query}")).await;
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.header("content-type"), Some("text/plain; version=0.0.4"));
    parse(&r.text())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exposition_is_strict_and_counters_move() {
    let s = setup().await;
    let before = scrape(s.fe, "").await;
    // HAProxy 2.6's families, with its types.
    for (family, ty) in [
        ("haproxy_process_requests_total", "counter"),
        ("haproxy_process_current_connections", "gauge"),
        ("haproxy_frontend_http_requests_total", "counter"),
        ("haproxy_frontend_status", "gauge"),
        ("haproxy_backend_sessions_total", "counter"),
        ("haproxy_backend_active_servers", "gauge"),
        ("haproxy_server_sessions_total", "counter"),
        ("haproxy_server_status", "gauge"),
    ] {
        assert_eq!(
            before.types.get(family).map(String::as_str),
            Some(ty),
            "{family}"
        );
    }
    assert_eq!(
        before.get("haproxy_frontend_status{proxy=\"web_fe\",state=\"UP\"}"),
        1.0
    );
    assert_eq!(
        before.get("haproxy_backend_active_servers{proxy=\"web_be\"}"),
        2.0
    );
    assert_eq!(
        before.get("haproxy_server_status{proxy=\"web_be\",server=\"s1\",state=\"UP\"}"),
        1.0
    );
    for i in 0..4 {
        let r = get(s.fe, &format!("/t{i}")).await;
        assert_eq!(r.status, 200);
    }
    // An exchange is counted by its end stage, just after its last byte is
    // written: a scrape racing the fourth answer's end may see three, so
    // scrape again (bounded) until the fourth is in; the counts are then
    // checked exactly below.
    let code_2xx = "haproxy_backend_http_responses_total{proxy=\"web_be\",code=\"2xx\"}";
    let mut after = scrape(s.fe, "").await;
    for _ in 0..100 {
        if after.get(code_2xx) - before.get(code_2xx) >= 4.0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        after = scrape(s.fe, "").await;
    }
    let delta = |series: &str| after.get(series) - before.get(series);
    // The first scrape itself is one more frontend request.
    assert!(delta("haproxy_frontend_http_requests_total{proxy=\"web_fe\"}") >= 5.0);
    assert!(delta("haproxy_process_requests_total") >= 5.0);
    assert_eq!(
        delta("haproxy_backend_sessions_total{proxy=\"web_be\"}"),
        4.0
    );
    assert_eq!(
        delta("haproxy_backend_http_responses_total{proxy=\"web_be\",code=\"2xx\"}"),
        4.0
    );
    for sv in ["s1", "s2"] {
        let series = format!("haproxy_server_sessions_total{{proxy=\"web_be\",server=\"{sv}\"}}");
        assert_eq!(delta(&series), 2.0, "{series}");
    }
    assert!(delta("haproxy_frontend_bytes_out_total{proxy=\"web_fe\"}") > 0.0);
    // No counter ever goes down.
    for (series, v) in &before.samples {
        let family = series.split('{').next().unwrap();
        if before.types[family] == "counter" && !v.is_nan() {
            assert!(after.get(series) >= *v, "{series} decreased");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scope_filter() {
    let s = setup().await;
    let fb = scrape(s.fe, "?scope=frontend&scope=backend").await;
    assert!(fb.families("haproxy_frontend_") > 20);
    assert!(fb.families("haproxy_backend_") > 20);
    assert_eq!(
        fb.families("haproxy_server_") + fb.families("haproxy_process_"),
        0
    );
    let sv = scrape(s.fe, "?scope=server").await;
    assert_eq!(sv.families("haproxy_server_"), sv.types.len());
    assert!(sv.families("haproxy_server_") > 20);
    let g = scrape(s.fe, "?scope=global").await;
    assert_eq!(g.families("haproxy_process_"), g.types.len());
    assert!(g.get("haproxy_process_uptime_seconds") >= 0.0);
    let all = scrape(s.fe, "?scope=*").await;
    assert_eq!(
        all.types.len(),
        fb.types.len() + sv.types.len() + g.types.len()
    );
    let none = get(s.fe, "/metrics?scope=").await;
    assert_eq!((none.status, none.body.len()), (200, 0));
    let bad = get(s.fe, "/metrics?scope=bogus").await;
    assert_eq!(bad.status, 400);
    // Anything else still goes to the backend, on raw bytes too.
    let mut c = HttpConn::connect(s.fe).await;
    let r = c
        .raw(b"GET /other HTTP/1.1\r\nhost: x\r\n\r\n", false)
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert!(r.header("content-type") != Some("text/plain; version=0.0.4"));
    let r = c
        .raw(
            b"GET /metrics?scope=frontend HTTP/1.1\r\nhost: x\r\n\r\n",
            false,
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert!(r.text().starts_with("# HELP haproxy_frontend_"));
}

/// The same config under the real HAProxy 2.6: sluice exposes the same
/// metric families with the same types, and the same series (names and
/// label sets), so dashboards built on HAProxy's exporter find everything.
/// Values are not compared; `haproxy_process_build_info`'s `version`
/// label is each program's own. Required when `CI` is set; skipped with a
/// message when /usr/sbin/haproxy is not installed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn families_and_series_match_haproxy() {
    if !support::haproxy::available() {
        return;
    }
    use support::haproxy::HAPROXY;
    let s = setup().await;
    // The same config for haproxy, on another port.
    let fe = Listen::new();
    let port = fe.port();
    let dir = TempDir::new("prom");
    let sluice_cfg = std::fs::read_to_string(&s._s.cfg).unwrap();
    let cfg = sluice_cfg.replace(&format!("bind {}", s.fe_listen), &format!("bind {fe}"));
    assert_ne!(cfg, sluice_cfg);
    let path = dir.write("h.cfg", &cfg);
    let mut cmd = std::process::Command::new(HAPROXY);
    inherit(&mut cmd, &[&fe]);
    let mut child = cmd
        .arg("-f")
        .arg(&path)
        .arg("-db")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn haproxy");
    let h = SocketAddr::from(([127, 0, 0, 1], port));
    fe.wait_accepting(&mut child);
    let (hs, ss) = (scrape(h, "").await, scrape(s.fe, "").await);
    let _ = child.kill();
    let _ = child.wait();

    assert_eq!(hs.types, ss.types, "families or types differ");
    let series = |sc: &Scrape| -> std::collections::BTreeSet<String> {
        sc.samples
            .keys()
            .map(|k| match k.split_once("version=\"") {
                Some((head, rest)) => {
                    let tail = rest.split_once('"').map_or("", |(_, t)| t);
                    format!("{head}version=\"<v>\"{tail}")
                }
                None => k.clone(),
            })
            .collect()
    };
    let (hset, sset) = (series(&hs), series(&ss));
    let only_h: Vec<_> = hset.difference(&sset).collect();
    let only_s: Vec<_> = sset.difference(&hset).collect();
    assert!(
        only_h.is_empty() && only_s.is_empty(),
        "series only in haproxy: {only_h:#?}\nonly in sluice: {only_s:#?}"
    );
    assert!(hs.types.len() > 150, "{} families", hs.types.len());
}
