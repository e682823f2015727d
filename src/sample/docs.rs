//! The table of docs/configuration.md that gives, for every fetch and
//! converter HAProxy 2.6 documents, its state in sluice: made from the
//! registry ([`FETCHES`], [`CONVERTERS`]) and the reasons below, checked
//! by `tests::the_docs_table_is_the_registry` (which rewrites the page
//! with `SLUICE_WRITE_DOCS=1`).

use crate::haproxy26::{Kind, haproxy26};

/// Why a keyword is not there yet, by name (a trailing `*` is a prefix);
/// the first match wins, and a keyword no line matches is "not yet
/// (#17)"; each line must explain some keyword
/// (`every_reason_explains_a_missing_keyword`).
const WHY: &[(&str, &str)] = &[
    // What sluice's engine has no equivalent of.
    (
        "internal.*",
        "HAProxy's internal buffer layout (HTX): no equivalent",
    ),
    (
        "cpu_*",
        "HAProxy's task scheduler statistics: no equivalent",
    ),
    (
        "lat_ns_*",
        "HAProxy's task scheduler statistics: no equivalent",
    ),
    ("last_rule_*", "rule tracing (#22)"),
    // TLS.
    (
        "ssl_*_secret*",
        "TLS secrets (HAProxy's tune.ssl.keylog): rustls hands them only to a key log, which sluice does not keep",
    ),
    (
        "ssl_*_session_key",
        "the TLS 1.2 master key: rustls does not expose it",
    ),
    (
        "ssl_*client_random",
        "rustls hands the client random only to a key log (with the TLS secrets), which sluice does not keep",
    ),
    (
        "ssl_*server_random",
        "rustls does not expose the server random",
    ),
    (
        "ssl_*_session_id",
        "rustls does not expose a session's id (it keeps TLS 1.2 session ids to itself)",
    ),
    (
        "ssl_*_unique_id",
        "rustls does not expose the handshake's Finished message, which the tls-unique value is",
    ),
    // The connection's TCP_INFO (owned by a later issue).
    ("fc_r*", "TCP_INFO of the connection (#22)"),
    ("fc_unacked", "TCP_INFO of the connection (#22)"),
    ("fc_sacked", "TCP_INFO of the connection (#22)"),
    ("fc_fackets", "TCP_INFO of the connection (#22)"),
    ("fc_lost", "TCP_INFO of the connection (#22)"),
    // Other buffers.
    ("payload*", "the direction-neutral payload fetches (#22)"),
    ("distcc_*", "protocol parsers of tcp-request content (#22)"),
    (
        "rdp_cookie*",
        "protocol parsers of tcp-request content (#22)",
    ),
    (
        "req.rdp_cookie*",
        "protocol parsers of tcp-request content (#22)",
    ),
    // Converters.
    ("mqtt_*", "MQTT parsing (#22)"),
    ("fix_*", "FIX parsing (#22)"),
    ("ungrpc", "gRPC parsing (#22)"),
    ("protobuf", "gRPC parsing (#22)"),
];

/// Whether `name` matches `pat` (`*` stands for any run of characters).
pub(crate) fn matches(pat: &str, name: &str) -> bool {
    match pat.split_once('*') {
        None => pat == name,
        Some((head, tail)) => {
            name.len() >= head.len()
                && name.starts_with(head)
                && (tail.is_empty()
                    || (0..=name.len() - head.len())
                        .any(|i| matches(tail, &name[head.len() + i..])))
        }
    }
}

fn state(name: &str) -> String {
    match WHY.iter().find(|(p, _)| matches(p, name)) {
        Some((_, why)) => format!("not yet: {why}"),
        None => "not yet (#17)".to_string(),
    }
}

fn rows(kind: Kind, have: &[&str], out: &mut String) {
    let mut names: Vec<&str> = haproxy26(kind).collect();
    names.sort_unstable();
    names.dedup();
    for n in names {
        let state = if have.contains(&n) {
            "supported".to_string()
        } else if crate::haproxy26::manual_only(kind, n) {
            // Named by the manual, unknown to the binary (`haproxy
            // -dKsmp`/`-dKcnv` do not list it).
            "not in the HAProxy 2.6 binary (its manual names it): refused as unknown, as haproxy refuses it".to_string()
        } else {
            state(n)
        };
        out.push_str(&format!("| `{n}` | {state} |\n"));
    }
}

/// The two tables, as docs/configuration.md has them.
pub(crate) fn table() -> String {
    let fetches: Vec<&str> = super::fetch::all().map(|f| f.name).collect();
    let convs: Vec<&str> = super::conv::all().map(|c| c.name).collect();
    let mut out = String::from("| Fetch | In sluice |\n|---|---|\n");
    rows(Kind::Fetch, &fetches, &mut out);
    out.push_str("\n| Converter | In sluice |\n|---|---|\n");
    rows(Kind::Converter, &convs, &mut out);
    out
}

#[test]
fn patterns_match() {
    assert!(matches("sc*", "sc0_conn_cnt"));
    assert!(matches("ssl_*_secret*", "ssl_fc_client_traffic_secret_0"));
    assert!(matches("*_id", "be_id"));
    assert!(!matches("*_id", "be_idx"));
    assert!(matches("ssl_fc_e*list_bin", "ssl_fc_eclist_bin"));
}

/// Every reason stays true: each line of [`WHY`] is the one some keyword
/// sluice lacks is explained by (a keyword supported since is taken off).
#[test]
fn every_reason_explains_a_missing_keyword() {
    let fetches: Vec<&str> = super::fetch::all().map(|f| f.name).collect();
    let convs: Vec<&str> = super::conv::all().map(|c| c.name).collect();
    let mut used = vec![false; WHY.len()];
    for (kind, have) in [(Kind::Fetch, &fetches), (Kind::Converter, &convs)] {
        for n in haproxy26(kind) {
            if have.contains(&n) || crate::haproxy26::manual_only(kind, n) {
                continue;
            }
            if let Some(i) = WHY.iter().position(|(p, _)| matches(p, n)) {
                used[i] = true;
            }
        }
    }
    let stale: Vec<&str> = WHY
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|((p, _), _)| *p)
        .collect();
    assert!(
        stale.is_empty(),
        "reasons no missing keyword needs: {stale:?}"
    );
}
