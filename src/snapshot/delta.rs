//! What a reload changes, as one typed list: the configuration's changes
//! (proxies and servers added, removed or modified, with what changed; the
//! global section; listeners opened or closed), compared with `PartialEq`
//! on the checked [`Config`] (positions never count: moving a section or
//! adding a comment is no change), then the writes to the runtime state
//! ([`StateChange`]) that `Runtime::apply` performs. `show reload` prints
//! the same list, one line per change.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::config::model::{Config, ListenAddr, Proxy, ProxyKind, Server};
use crate::state::change::StateChange;

/// One change of a reload.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    GlobalModified,
    ProxyAdded {
        kind: ProxyKind,
        name: String,
    },
    ProxyRemoved {
        kind: ProxyKind,
        name: String,
    },
    /// A proxy kept by kind and name whose settings differ.
    ProxyModified {
        kind: ProxyKind,
        name: String,
        aspects: Vec<ProxyAspect>,
    },
    ServerAdded {
        backend: String,
        name: String,
    },
    ServerRemoved {
        backend: String,
        name: String,
    },
    ServerModified {
        backend: String,
        name: String,
        aspects: Vec<ServerAspect>,
    },
    ListenerOpened {
        addr: ListenAddr,
        frontend: Arc<str>,
    },
    ListenerClosed {
        addr: ListenAddr,
    },
    /// A write to the runtime state, relative to the live state rather
    /// than to the previous configuration (a `set weight` given way to the
    /// configuration's, a removed server back).
    State(StateChange),
}

/// What differs in a proxy kept by a reload; the settings no other aspect
/// names are [`ProxyAspect::Options`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProxyAspect {
    Mode,
    Binds,
    Maxconn,
    Timeouts,
    Acls,
    TcpRequestRules,
    TcpResponseRules,
    HttpRequestRules,
    HttpResponseRules,
    UseBackendRules,
    DefaultBackend,
    Balance,
    HealthChecks,
    Logs,
    /// `stick-table` and `stick` rules.
    StickTables,
    Options,
}

/// What differs in a server kept by a reload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ServerAspect {
    Address {
        from: SocketAddr,
        to: SocketAddr,
    },
    Weight {
        from: u32,
        to: u32,
    },
    Maxconn {
        from: u32,
        to: u32,
    },
    CheckParams,
    /// Anything else on the `server` line.
    Options,
}

impl Change {
    /// Whether `Runtime::apply` performs it (the others describe the
    /// configuration the new snapshot carries).
    pub(crate) fn state(&self) -> Option<&StateChange> {
        match self {
            Change::State(s) => Some(s),
            _ => None,
        }
    }
}

/// The configuration's changes from `old` to `new`: the global section,
/// proxies added, then removed, then for each proxy kept (by kind and name,
/// in that order) its aspects and its servers added, modified, removed.
pub(crate) fn config_changes(old: &Config, new: &Config) -> Vec<Change> {
    let mut out = Vec::new();
    if old.global != new.global {
        out.push(Change::GlobalModified);
    }
    let (old_p, new_p) = (by_key(old), by_key(new));
    for (key, p) in &new_p {
        if !old_p.contains_key(key) {
            out.push(Change::ProxyAdded {
                kind: p.kind,
                name: p.name.clone(),
            });
        }
    }
    for (key, p) in &old_p {
        if !new_p.contains_key(key) {
            out.push(Change::ProxyRemoved {
                kind: p.kind,
                name: p.name.clone(),
            });
        }
    }
    for (key, n) in &new_p {
        let Some(o) = old_p.get(key) else {
            continue;
        };
        let aspects = proxy_aspects(o, n);
        if !aspects.is_empty() {
            out.push(Change::ProxyModified {
                kind: n.kind,
                name: n.name.clone(),
                aspects,
            });
        }
        server_changes(o, n, &mut out);
    }
    out
}

/// The proxies by `(kind, name)` (a frontend and a backend may share a
/// name), sorted so the list reads the same at every reload.
fn by_key(cfg: &Config) -> BTreeMap<(&'static str, &str), &Proxy> {
    cfg.proxies
        .iter()
        .map(|p| ((p.kind.keyword(), p.name.as_str()), p))
        .collect()
}

impl ProxyAspect {
    /// Every aspect but `Options`, in the order they are listed.
    const NAMED: [ProxyAspect; 15] = [
        ProxyAspect::Mode,
        ProxyAspect::Binds,
        ProxyAspect::Maxconn,
        ProxyAspect::Timeouts,
        ProxyAspect::Acls,
        ProxyAspect::TcpRequestRules,
        ProxyAspect::TcpResponseRules,
        ProxyAspect::HttpRequestRules,
        ProxyAspect::HttpResponseRules,
        ProxyAspect::UseBackendRules,
        ProxyAspect::DefaultBackend,
        ProxyAspect::Balance,
        ProxyAspect::HealthChecks,
        ProxyAspect::Logs,
        ProxyAspect::StickTables,
    ];

    /// Moves the settings of this aspect out of `p` into an otherwise
    /// default proxy, so two proxies' aspects compare as proxies and what
    /// is left in `p` once every named aspect is out is its options.
    fn take(self, p: &mut Proxy) -> Proxy {
        use std::mem::take;
        let mut part = Proxy::new(String::new(), p.kind, p.loc.clone());
        match self {
            ProxyAspect::Mode => part.mode = take(&mut p.mode),
            ProxyAspect::Binds => part.binds = take(&mut p.binds),
            ProxyAspect::Maxconn => part.maxconn = p.maxconn.take(),
            ProxyAspect::Timeouts => part.timeouts = take(&mut p.timeouts),
            ProxyAspect::Acls => part.acls = take(&mut p.acls),
            ProxyAspect::TcpRequestRules => {
                part.tcp_connection = take(&mut p.tcp_connection);
                part.tcp_session = take(&mut p.tcp_session);
                part.tcp_content = take(&mut p.tcp_content);
                part.inspect_delay = p.inspect_delay.take();
            }
            ProxyAspect::TcpResponseRules => {
                part.tcp_response = take(&mut p.tcp_response);
                part.res_inspect_delay = p.res_inspect_delay.take();
            }
            ProxyAspect::HttpRequestRules => {
                part.blocks = take(&mut p.blocks);
                part.http_request = take(&mut p.http_request);
                part.legacy_req = take(&mut p.legacy_req);
                part.redirects = take(&mut p.redirects);
            }
            ProxyAspect::HttpResponseRules => {
                part.http_response = take(&mut p.http_response);
                part.http_after_response = take(&mut p.http_after_response);
                part.legacy_rsp = take(&mut p.legacy_rsp);
            }
            ProxyAspect::UseBackendRules => part.use_backends = take(&mut p.use_backends),
            ProxyAspect::DefaultBackend => part.default_backend = p.default_backend.take(),
            ProxyAspect::Balance => {
                part.balance = take(&mut p.balance);
                part.hash_type = take(&mut p.hash_type);
            }
            ProxyAspect::HealthChecks => {
                part.check_type = take(&mut p.check_type);
                part.http_check = take(&mut p.http_check);
                part.tcp_check = take(&mut p.tcp_check);
            }
            ProxyAspect::Logs => part.log = take(&mut p.log),
            ProxyAspect::StickTables => {
                part.table = p.table.take();
                part.stick_rules = take(&mut p.stick_rules);
            }
            // What is left: nothing to move.
            ProxyAspect::Options => {}
        }
        part
    }

    fn as_str(self) -> &'static str {
        match self {
            ProxyAspect::Mode => "mode",
            ProxyAspect::Binds => "binds",
            ProxyAspect::Maxconn => "maxconn",
            ProxyAspect::Timeouts => "timeouts",
            ProxyAspect::Acls => "ACLs",
            ProxyAspect::TcpRequestRules => "tcp-request rules",
            ProxyAspect::TcpResponseRules => "tcp-response rules",
            ProxyAspect::HttpRequestRules => "http-request rules",
            ProxyAspect::HttpResponseRules => "http-response rules",
            ProxyAspect::UseBackendRules => "use_backend rules",
            ProxyAspect::DefaultBackend => "default_backend",
            ProxyAspect::Balance => "balance",
            ProxyAspect::HealthChecks => "health checks",
            ProxyAspect::Logs => "logs",
            ProxyAspect::StickTables => "stick tables",
            ProxyAspect::Options => "options",
        }
    }
}

/// The aspects in which proxy `o` and `n` (same kind and name) differ.
/// Servers are not among them: they are compared one by one.
fn proxy_aspects(o: &Proxy, n: &Proxy) -> Vec<ProxyAspect> {
    let (mut o, mut n) = (o.clone(), n.clone());
    o.servers.clear();
    n.servers.clear();
    let mut out: Vec<ProxyAspect> = ProxyAspect::NAMED
        .into_iter()
        .filter(|a| a.take(&mut o) != a.take(&mut n))
        .collect();
    // A field added to `Proxy` later lands here without anyone having to
    // remember this function.
    if o != n {
        out.push(ProxyAspect::Options);
    }
    out
}

/// Servers of kept proxy `o`/`n` added (in name order, among those
/// modified), modified, then removed.
fn server_changes(o: &Proxy, n: &Proxy, out: &mut Vec<Change>) {
    let old: BTreeMap<&str, &Server> = o.servers.iter().map(|s| (s.name.as_str(), s)).collect();
    let new: BTreeMap<&str, &Server> = n.servers.iter().map(|s| (s.name.as_str(), s)).collect();
    let at = |name: &str| (n.name.clone(), name.to_string());
    for (name, s) in &new {
        let (backend, name) = at(name);
        match old.get(name.as_str()) {
            None => out.push(Change::ServerAdded { backend, name }),
            Some(was) => {
                let aspects = server_aspects(was, s);
                if !aspects.is_empty() {
                    out.push(Change::ServerModified {
                        backend,
                        name,
                        aspects,
                    });
                }
            }
        }
    }
    for name in old.keys() {
        if !new.contains_key(name) {
            let (backend, name) = at(name);
            out.push(Change::ServerRemoved { backend, name });
        }
    }
}

/// What differs between server lines `o` and `n` of the same name.
fn server_aspects(o: &Server, n: &Server) -> Vec<ServerAspect> {
    let mut out = Vec::new();
    if o.addr != n.addr {
        out.push(ServerAspect::Address {
            from: o.addr,
            to: n.addr,
        });
    }
    if o.weight != n.weight {
        out.push(ServerAspect::Weight {
            from: o.weight,
            to: n.weight,
        });
    }
    if o.maxconn != n.maxconn {
        out.push(ServerAspect::Maxconn {
            from: o.maxconn,
            to: n.maxconn,
        });
    }
    if o.check != n.check {
        out.push(ServerAspect::CheckParams);
    }
    // The rest of the line: `o` with the settings named above taken from
    // `n`, so only the others can differ (the address as written goes
    // with the address).
    let rest = Server {
        addr_text: n.addr_text.clone(),
        addr: n.addr,
        weight: n.weight,
        maxconn: n.maxconn,
        check: n.check,
        ..o.clone()
    };
    if rest != *n {
        out.push(ServerAspect::Options);
    }
    out
}

impl std::fmt::Display for ServerAspect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerAspect::Address { from, to } => write!(f, "address {from} -> {to}"),
            ServerAspect::Weight { from, to } => write!(f, "weight {from} -> {to}"),
            ServerAspect::Maxconn { from, to } => write!(f, "maxconn {from} -> {to}"),
            ServerAspect::CheckParams => f.write_str("check parameters"),
            ServerAspect::Options => f.write_str("options"),
        }
    }
}

/// Items of a list, comma-separated.
fn list<T>(
    f: &mut std::fmt::Formatter<'_>,
    items: &[T],
    one: impl Fn(&mut std::fmt::Formatter<'_>, &T) -> std::fmt::Result,
) -> std::fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        one(f, item)?;
    }
    Ok(())
}

/// One line per change, as `show reload` and the CLI `reload` print them;
/// state changes are marked `state:` (they may repeat a configuration
/// change, seen from the live state).
impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::GlobalModified => f.write_str("global section modified"),
            Change::ProxyAdded { kind, name } => write!(f, "{} {name} added", kind.keyword()),
            Change::ProxyRemoved { kind, name } => {
                write!(f, "{} {name} removed", kind.keyword())
            }
            Change::ProxyModified {
                kind,
                name,
                aspects,
            } => {
                write!(f, "{} {name} modified: ", kind.keyword())?;
                list(f, aspects, |f, a| f.write_str(a.as_str()))
            }
            Change::ServerAdded { backend, name } => write!(f, "server {backend}/{name} added"),
            Change::ServerRemoved { backend, name } => {
                write!(f, "server {backend}/{name} removed")
            }
            Change::ServerModified {
                backend,
                name,
                aspects,
            } => {
                write!(f, "server {backend}/{name} modified: ")?;
                list(f, aspects, |f, a| write!(f, "{a}"))
            }
            Change::ListenerOpened { addr, frontend } => {
                write!(f, "listener {addr} opened for frontend {frontend}")
            }
            Change::ListenerClosed { addr } => write!(f, "listener {addr} closed"),
            Change::State(s) => write!(f, "state: {s}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Registry;

    pub(super) fn load(text: &str) -> Config {
        let l = crate::config::parse_texts(
            &[("t.cfg".into(), text.to_string())],
            &|_| None,
            &|h: &str, p: u16| {
                Ok(vec![SocketAddr::new(
                    h.parse().map_err(|_| "bad".to_string())?,
                    p,
                )])
            },
        );
        l.config.unwrap_or_else(|| panic!("{:?}", l.diagnostics))
    }

    const BASE: &str = "global
    maxconn 100
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:8000
    acl is_api path_beg /api
    use_backend api if is_api
    default_backend web
backend web
    server w1 127.0.0.1:9001 weight 1
    server w2 127.0.0.1:9002
backend api
    server a1 127.0.0.1:9003
";

    fn changes(a: &str, b: &str) -> Vec<String> {
        config_changes(&load(a), &load(b))
            .iter()
            .map(|c| c.to_string())
            .collect()
    }

    /// The aspects `edit` of BASE is reported with, for the proxy `which`.
    fn aspects(which: &str, edit: impl Fn(&str) -> String) -> Vec<ProxyAspect> {
        config_changes(&load(BASE), &load(&edit(BASE)))
            .into_iter()
            .filter_map(|c| match c {
                Change::ProxyModified { name, aspects, .. } if name == which => Some(aspects),
                _ => None,
            })
            .flatten()
            .collect()
    }

    #[test]
    fn same_text_moved_sections_and_comments_are_no_change() {
        assert_eq!(changes(BASE, BASE), Vec::<String>::new());
        // A comment shifts every line number below it.
        let shifted = BASE.replace("defaults\n", "# note\n\ndefaults\n");
        assert_eq!(changes(BASE, &shifted), Vec::<String>::new());
        // The backends in the other order: every position moves.
        let (head, backends) = BASE.split_at(BASE.find("\nbackend web").unwrap() + 1);
        let (web, api) = backends.split_at(backends.find("\nbackend api").unwrap() + 1);
        let moved = format!("{head}{api}{web}");
        assert_ne!(moved, BASE);
        assert_eq!(changes(BASE, &moved), Vec::<String>::new());
    }

    #[test]
    fn proxy_modifications_are_named() {
        let b = BASE
            .replace(
                "    default_backend web\n",
                "    acl bad path_beg /admin\n    http-request deny if bad\n    default_backend api\n",
            )
            .replace("backend api\n", "backend api\n    timeout server 5s\n    retries 5\n");
        assert_eq!(
            changes(BASE, &b),
            [
                "backend api modified: timeouts, options",
                "frontend fe modified: ACLs, http-request rules, default_backend",
            ]
        );
        let c = BASE.replace("use_backend api if is_api", "use_backend web if is_api");
        assert_eq!(
            changes(BASE, &c),
            ["frontend fe modified: use_backend rules"]
        );
        let e = BASE.replace("maxconn 100", "maxconn 200");
        // The frontend's maxconn defaults to the global one.
        assert_eq!(
            changes(BASE, &e),
            ["global section modified", "frontend fe modified: maxconn"]
        );
    }

    #[test]
    fn each_aspect_is_detected() {
        use ProxyAspect as A;
        // (proxy, text replaced, by, aspect): a line after `to` when the
        // replacement starts with `+`.
        const FE: &str = "    default_backend web\n";
        const WEB: &str = "\nbackend web\n";
        let cases = [
            ("fe", ":8000", ":8001", A::Binds),
            ("fe", FE, "+    bind 127.0.0.1:8002 accept-proxy", A::Binds),
            ("fe", FE, "+    maxconn 7", A::Maxconn),
            ("fe", FE, "+    timeout client 1s", A::Timeouts),
            ("fe", "path_beg /api", "path_beg /v2", A::Acls),
            (
                "fe",
                FE,
                "+    tcp-request connection accept",
                A::TcpRequestRules,
            ),
            (
                "fe",
                FE,
                "+    tcp-request inspect-delay 1s",
                A::TcpRequestRules,
            ),
            (
                "fe",
                FE,
                "+    http-request set-header X-A b",
                A::HttpRequestRules,
            ),
            (
                "fe",
                FE,
                "+    http-request replace-header X-A a b",
                A::HttpRequestRules,
            ),
            (
                "fe",
                FE,
                "+    redirect prefix /x if is_api",
                A::HttpRequestRules,
            ),
            (
                "fe",
                FE,
                "+    http-response set-header X-B c",
                A::HttpResponseRules,
            ),
            (
                "fe",
                "use_backend api",
                "use_backend web",
                A::UseBackendRules,
            ),
            (
                "fe",
                "default_backend web",
                "default_backend api",
                A::DefaultBackend,
            ),
            ("fe", FE, "+    option forwardfor", A::Options),
            ("web", WEB, "+    balance leastconn", A::Balance),
            (
                "web",
                WEB,
                "+    tcp-response content reject",
                A::TcpResponseRules,
            ),
            ("web", WEB, "+    hash-type consistent", A::Balance),
            (
                "web",
                WEB,
                "+    option httpchk GET /health",
                A::HealthChecks,
            ),
            ("web", WEB, "+    log 127.0.0.1:514 local0", A::Logs),
            ("web", WEB, "+    retries 1", A::Options),
        ];
        for (which, from, to, want) in cases {
            let to = match to.strip_prefix('+') {
                // Written before `FE` (the frontend's last line) or after
                // `WEB` (the backend's first).
                Some(line) if from == FE => format!("{line}\n{FE}"),
                Some(line) => format!("{WEB}{line}\n"),
                None => to.to_string(),
            };
            let got = aspects(which, |t| t.replace(from, &to));
            assert_eq!(got, [want], "{from:?} -> {to:?}");
        }
    }

    #[test]
    fn mode_is_detected() {
        let a = "defaults\n timeout connect 1s\n timeout client 1s\n timeout server 1s\n\
                 listen l\n bind 127.0.0.1:8000\n server s 127.0.0.1:9000\n";
        let b = a.replace("listen l\n", "listen l\n mode http\n");
        assert_eq!(changes(a, &b), ["listen l modified: mode"]);
    }

    #[test]
    fn legacy_regex_case_flag_counts() {
        let a = BASE.replace(
            "\nbackend web\n",
            "\nbackend web\n    reqrep ^X-A:.* X-B:\\ 1\n",
        );
        let b = a.replace("reqrep", "reqirep");
        assert_eq!(changes(&a, &a), Vec::<String>::new());
        assert_eq!(
            changes(&a, &b),
            ["backend web modified: http-request rules"]
        );
    }

    #[test]
    fn server_and_proxy_additions_removals_and_modifications() {
        let b = BASE
            .replace("9001 weight 1", "9001 weight 3")
            .replace(
                "    server w2 127.0.0.1:9002\n",
                "    server w2 127.0.0.1:9012 backup\n",
            )
            .replace(
                "    server a1 127.0.0.1:9003\n",
                "    server a2 127.0.0.1:9004 check maxconn 3\nbackend extra\n",
            );
        assert_eq!(
            changes(BASE, &b),
            [
                "backend extra added",
                "server api/a2 added",
                "server api/a1 removed",
                "server web/w1 modified: weight 1 -> 3",
                "server web/w2 modified: address 127.0.0.1:9002 -> 127.0.0.1:9012, options",
            ]
        );
        let c = BASE.replace("9003", "9003 check inter 1s maxconn 9");
        assert_eq!(
            changes(BASE, &c),
            ["server api/a1 modified: maxconn 0 -> 9, check parameters"]
        );
        let d = BASE
            .replace("backend api\n    server a1 127.0.0.1:9003\n", "")
            .replace("    use_backend api if is_api\n", "");
        assert_eq!(
            changes(BASE, &d),
            [
                "backend api removed",
                "frontend fe modified: use_backend rules"
            ]
        );
    }

    /// A server's new address is both a line of the configuration's
    /// changes and the state change that gives it a fresh pool, in the one
    /// list a reload applies and prints.
    #[test]
    fn address_change_is_printed_and_applied() {
        let reg = Registry::default();
        let first = load(BASE);
        let (_, start) = crate::snapshot::plan(None, &first, &reg, 1);
        assert!(start.iter().all(|c| c.state().is_some()), "{start:?}");
        reg.apply(start.iter().filter_map(Change::state));

        let moved = load(&BASE.replace("9002", "9012"));
        let (_, list) = crate::snapshot::plan(Some(&first), &moved, &reg, 2);
        let lines: Vec<String> = list.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            lines,
            [
                "server web/w2 modified: address 127.0.0.1:9002 -> 127.0.0.1:9012",
                "state: server web/w2 address 127.0.0.1:9002 -> 127.0.0.1:9012",
            ]
        );
        assert!(matches!(
            list[1].state(),
            Some(StateChange::SetPeer { server, to, .. })
                if server.name == "w2" && to.port() == 9012
        ));
    }

    /// Loading the same files twice gives no change (nothing compared
    /// depends on addresses in memory or hash order).
    #[test]
    fn the_config_corpus_loaded_twice_is_no_change() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let Some(a) = crate::config::load(std::slice::from_ref(&path)).config else {
                continue;
            };
            let b = crate::config::load(std::slice::from_ref(&path))
                .config
                .unwrap();
            let changes = config_changes(&a, &b);
            assert!(changes.is_empty(), "{}: {changes:?}", path.display());
            seen += 1;
        }
        assert!(seen >= 5, "{seen} configs");
    }
}

#[cfg(test)]
mod table_tests {
    use super::*;
    use crate::state::Registry;

    const TABLES: &str = "defaults
    mode http
    timeout connect 1s
    timeout client 1s
    timeout server 1s
frontend fe
    bind 127.0.0.1:9001
    stick-table type ip size 10 store gpc0
    http-request track-sc0 src
    default_backend be
backend be
    stick-table type string size 10 store conn_cnt
    server s1 127.0.0.1:9002
";

    fn key(t: &crate::state::table::Table, k: &str) -> crate::state::table::KeyWords {
        crate::state::table::key::from_cli(k, t.def.key).unwrap()
    }

    /// A reload keeps a table whose definition is unchanged, entries
    /// included; a changed one starts empty; a removed one leaves.
    #[test]
    fn reloads_keep_unchanged_tables() {
        let reg = Registry::default();
        let first = super::tests::load(TABLES);
        let (snap, start) = crate::snapshot::plan(None, &first, &reg, 1);
        reg.apply(start.iter().filter_map(Change::state));
        let fe = snap.tables.by_name("fe").unwrap().clone();
        let held = fe.get_or_create(&key(&fe, "10.0.0.1")).unwrap();
        drop(held);
        // The same configuration again: the same tables, entries kept.
        let (snap2, list) = crate::snapshot::plan(Some(&first), &first, &reg, 2);
        assert!(list.is_empty(), "{list:?}");
        assert!(Arc::ptr_eq(snap2.tables.by_name("fe").unwrap(), &fe));
        assert_eq!(fe.used(), 1);
        // `fe`'s table changed, `be`'s is gone.
        let changed = TABLES
            .replace("size 10 store gpc0", "size 20 store gpc0")
            .replace("    stick-table type string size 10 store conn_cnt\n", "");
        let second = super::tests::load(&changed);
        let (snap3, list) = crate::snapshot::plan(Some(&first), &second, &reg, 3);
        let lines: Vec<String> = list.iter().map(|c| c.to_string()).collect();
        assert!(
            lines.contains(&"state: table fe emptied: its definition changed".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"state: table be removed".to_string()),
            "{lines:?}"
        );
        reg.apply(list.iter().filter_map(Change::state));
        let new = snap3.tables.by_name("fe").unwrap();
        assert!(!Arc::ptr_eq(new, &fe));
        assert_eq!(new.used(), 0);
        assert!(reg.tables.find("be").is_none());
    }
}
