//! The stick table checks HAProxy makes once a configuration is whole:
//! every table a fetch, a converter, a `track-sc*` or a `stick` rule names
//! must exist, with a key type its sample can be cast to; the `peers`
//! section a table names must exist; a `peers` section needs a peer by
//! this process's name, else it is dropped (with HAProxy's warning).

use crate::config::diag::{Diagnostic, Level};
use crate::config::model::{
    Config, HttpRequestAction, HttpResponseAction, Mode, Proxy, TableAction, TableDef, TcpAction,
    TrackRule,
};
use crate::config::parser::type_str;
use crate::sample::stick::TableUse;

/// Every table of `config`: the proxies' and the `peers` sections'.
pub(crate) fn all_tables(config: &Config) -> impl Iterator<Item = &TableDef> {
    config
        .proxies
        .iter()
        .filter_map(|p| p.table.as_ref())
        .chain(config.global.peers.iter().flat_map(|s| &s.tables))
}

fn find<'a>(config: &'a Config, name: &str) -> Option<&'a TableDef> {
    all_tables(config).find(|t| t.name == name)
}

/// The table arguments of fetches and converters (HAProxy's
/// `smp_resolve_args`), and the `peers` sections.
pub(crate) fn check(config: &Config, uses: &[TableUse], diags: &mut Vec<Diagnostic>) {
    for u in uses {
        let loc = crate::loc::Loc {
            file: u.file.clone(),
            line: u.line,
        };
        if u.implicit && u.in_defaults {
            diags.push(Diagnostic::parsing_tight(
                Level::Alert,
                &loc,
                u.message("table name must be set"),
            ));
        } else if find(config, &u.table.name).is_none() {
            diags.push(Diagnostic::parsing_tight(
                Level::Alert,
                &loc,
                u.message(&format!("unable to find table '{}'", u.table.name)),
            ));
        }
    }
    peers(config, diags);
}

/// The tables proxy `p`'s rules name, and the `peers` section its table
/// names, in HAProxy's order of its checks.
pub(crate) fn proxy(config: &Config, p: &Proxy, diags: &mut Vec<Diagnostic>) {
    {
        for r in track_rules(p) {
            track(config, p, r, diags);
        }
        for r in &p.stick_rules {
            let name = &r.table.name;
            match find(config, name) {
                None => diags.push(Diagnostic::alert(
                    Some(r.loc.clone()),
                    format!("Proxy '{}': unable to find stick-table '{name}'.", p.name),
                )),
                Some(t) if !r.key.out().casts_to(t.key.sample_type()) => {
                    diags.push(Diagnostic::alert(
                        Some(r.loc.clone()),
                        format!(
                            "Proxy '{}': type of fetch not usable with type of stick-table '{name}'.",
                            p.name
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
        if let Some(peers) = p.table.as_ref().and_then(|t| t.peers.as_ref())
            && !config.global.peers.iter().any(|s| s.name == *peers)
        {
            diags.push(Diagnostic::alert(
                p.table.as_ref().map(|t| t.loc.clone()),
                format!("Proxy '{}': unable to find sync peers '{peers}'.", p.name),
            ));
        }
        content_track_warnings(p, diags);
    }
}

/// A `peers` section without this process among its peers is dropped.
fn peers(config: &Config, diags: &mut Vec<Diagnostic>) {
    let local = crate::config::table::local_peer(&config.global);
    for s in &config.global.peers {
        if !s.disabled && !s.has_local(&local) {
            diags.push(Diagnostic::warning(
                Some(s.loc.clone()),
                format!(
                    "Removing incomplete section 'peers {}' (no peer named '{local}').",
                    s.name
                ),
            ));
        }
    }
}

/// The `track-sc*` actions of every rule set of `p`.
fn track_rules(p: &Proxy) -> impl Iterator<Item = &TrackRule> {
    let tcp = (p.tcp_connection.iter())
        .chain(&p.tcp_session)
        .chain(&p.tcp_content)
        .filter_map(|r| match &r.action {
            TcpAction::Table(TableAction::Track(t)) => Some(t),
            _ => None,
        });
    let req = p.http_request.iter().filter_map(|r| match &r.action {
        HttpRequestAction::Table(TableAction::Track(t)) => Some(t),
        _ => None,
    });
    let res = p.http_response.iter().filter_map(|r| match &r.action {
        HttpResponseAction::Table(TableAction::Track(t)) => Some(t),
        _ => None,
    });
    tcp.chain(req).chain(res)
}

/// HAProxy's `check_trk_action`.
fn track(config: &Config, p: &Proxy, r: &TrackRule, diags: &mut Vec<Diagnostic>) {
    let name = &r.table.name;
    match find(config, name) {
        None => diags.push(Diagnostic::alert(
            Some(r.loc.clone()),
            format!(
                "Proxy '{}': unable to find table '{name}' referenced by track-sc{}.",
                p.name, r.sc
            ),
        )),
        Some(t) if !r.key.out().casts_to(t.key.sample_type()) => diags.push(Diagnostic::alert(
            Some(r.loc.clone()),
            format!(
                "Proxy '{}': stick-table '{name}' uses a type incompatible with the 'track-sc{}' rule.",
                p.name, r.sc
            ),
        )),
        Some(_) => {}
    }
}

/// HAProxy's warnings about `tcp-request content track-sc*` rules in a
/// frontend: one reading the request without an inspect delay, one in an
/// HTTP frontend reading no request content (which belongs to `tcp-request
/// session`, where invalid requests are counted too).
fn content_track_warnings(p: &Proxy, diags: &mut Vec<Diagnostic>) {
    use crate::sample::stage::{Place, Src, Stage};
    if !p.kind.has_frontend() {
        return;
    }
    for r in &p.tcp_content {
        let TcpAction::Table(TableAction::Track(t)) = &r.action else {
            continue;
        };
        let uses = t.key.fetch().uses;
        let kind = type_str(p.kind);
        if p.inspect_delay.is_none() && !uses.usable_in(Stage::of(Place::FeSesAcc)) {
            diags.push(Diagnostic::warning(
                Some(t.loc.clone()),
                format!(
                    "{kind} '{}' : a 'tcp-request content track-sc*' rule explicitly depending on request contents without any 'tcp-request inspect-delay' setting. This means that this rule will randomly find its contents. This can be fixed by setting the tcp-request inspect-delay.",
                    p.name
                ),
            ));
        }
        let reads = |u: crate::sample::stage::Uses| {
            [Src::L6req, Src::Hrqhv, Src::Hrqhp, Src::Hrqbo]
                .iter()
                .any(|s| u.has(*s))
        };
        let cond_reads = r.cond.as_ref().is_some_and(|c| c.reads_request(&p.acls));
        if p.mode == Mode::Http && !reads(uses) && !cond_reads {
            diags.push(Diagnostic::warning(
                Some(t.loc.clone()),
                format!(
                    "{kind} '{}' : a 'tcp-request content track-sc*' rule not depending on request contents for an HTTP frontend should be executed at the session level, using a 'tcp-request session' rule (mandatory to track invalid HTTP requests).",
                    p.name
                ),
            ));
        }
    }
}

/// The tables `stick` rules use store the server an entry sticks to: its
/// id and key are added to their data when missing, as HAProxy adds them
/// (`show table` then shows them).
pub(crate) fn add_server_data(config: &mut Config) {
    use crate::config::model::Stored;
    use crate::sample::stick::DataType;
    let used: Vec<String> = config
        .proxies
        .iter()
        .flat_map(|p| &p.stick_rules)
        .map(|r| r.table.name.to_string())
        .collect();
    let tables = config
        .proxies
        .iter_mut()
        .filter_map(|p| p.table.as_mut())
        .chain(config.global.peers.iter_mut().flat_map(|s| &mut s.tables));
    for t in tables.filter(|t| used.contains(&t.name)) {
        for data in [DataType::ServerId, DataType::ServerKey] {
            if t.stored(data).is_none() {
                t.store.push(Stored {
                    data,
                    count: 1,
                    period: 0,
                });
            }
        }
        t.store.sort_by_key(|s| s.data);
    }
}
