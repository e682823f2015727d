//! What a reload changed, for `show reload`: proxies and servers added,
//! removed and modified, compared on the validated configuration (what a
//! snapshot is compiled from) rather than on the snapshot, so every setting
//! counts: ACLs, rules, timeouts, `use_backend`/`default_backend`, binds,
//! options, server options.
//!
//! Each proxy is reduced to a [`ProxyPrint`]: one text per aspect (the
//! `Debug` form of the settings, without their `file:line` positions, so
//! moving a section or adding a comment line is no change).

use std::collections::BTreeMap;

use crate::config::model::{Config, Proxy, Server};

/// The comparable form of a whole configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ConfigPrint {
    global: String,
    /// By `"<kind> <name>"` (a frontend and a backend may share a name).
    proxies: BTreeMap<String, ProxyPrint>,
}

/// One proxy: its aspects in a fixed order, and its servers by name.
#[derive(Debug, Clone, PartialEq)]
struct ProxyPrint {
    name: String,
    aspects: Vec<(&'static str, String)>,
    servers: BTreeMap<String, ServerPrint>,
}

#[derive(Debug, Clone, PartialEq)]
struct ServerPrint {
    addr: String,
    weight: u32,
    maxconn: u32,
    check: String,
    /// Everything else on the `server` line.
    options: String,
}

/// `Debug` text with every `Loc { file: .., line: .. }` left out.
fn print(v: &impl std::fmt::Debug) -> String {
    strip_locs(&format!("{v:?}"))
}

fn strip_locs(text: &str) -> String {
    const START: &str = "Loc { file: ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(START) {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        match rest.find(" }") {
            Some(end) => rest = &rest[end + 2..],
            None => break,
        }
    }
    out.push_str(rest);
    out
}

impl ConfigPrint {
    pub(crate) fn of(cfg: &Config) -> ConfigPrint {
        ConfigPrint {
            global: print(&cfg.global),
            proxies: cfg
                .proxies
                .iter()
                .map(|p| {
                    (
                        format!("{} {}", p.kind.keyword(), p.name),
                        ProxyPrint::of(p),
                    )
                })
                .collect(),
        }
    }

    /// The changes from `self` to `new`, one line each: proxies added and
    /// removed, proxies modified (with the aspects that changed), servers
    /// added, removed and modified.
    pub(crate) fn changes_to(&self, new: &ConfigPrint) -> Vec<String> {
        let mut out = Vec::new();
        if self.global != new.global {
            out.push("global section modified".to_string());
        }
        for key in new.proxies.keys() {
            if !self.proxies.contains_key(key) {
                out.push(format!("{key} added"));
            }
        }
        for key in self.proxies.keys() {
            if !new.proxies.contains_key(key) {
                out.push(format!("{key} removed"));
            }
        }
        for (key, np) in &new.proxies {
            let Some(op) = self.proxies.get(key) else {
                continue;
            };
            let what: Vec<&str> = np
                .aspects
                .iter()
                .zip(&op.aspects)
                .filter(|(n, o)| n.1 != o.1)
                .map(|(n, _)| n.0)
                .collect();
            if !what.is_empty() {
                out.push(format!("{key} modified: {}", what.join(", ")));
            }
            server_changes(&np.name, &op.servers, &np.servers, &mut out);
        }
        out
    }
}

fn server_changes(
    proxy: &str,
    old: &BTreeMap<String, ServerPrint>,
    new: &BTreeMap<String, ServerPrint>,
    out: &mut Vec<String>,
) {
    for (name, s) in new {
        let Some(o) = old.get(name) else {
            out.push(format!("server {proxy}/{name} added"));
            continue;
        };
        let mut what = Vec::new();
        if o.addr != s.addr {
            what.push(format!("address {} -> {}", o.addr, s.addr));
        }
        if o.weight != s.weight {
            what.push(format!("weight {} -> {}", o.weight, s.weight));
        }
        if o.maxconn != s.maxconn {
            what.push(format!("maxconn {} -> {}", o.maxconn, s.maxconn));
        }
        if o.check != s.check {
            what.push("check parameters".to_string());
        }
        if o.options != s.options {
            what.push("options".to_string());
        }
        if !what.is_empty() {
            out.push(format!(
                "server {proxy}/{name} modified: {}",
                what.join(", ")
            ));
        }
    }
    for name in old.keys() {
        if !new.contains_key(name) {
            out.push(format!("server {proxy}/{name} removed"));
        }
    }
}

impl ProxyPrint {
    fn of(p: &Proxy) -> ProxyPrint {
        // What is not named below ends up in "options": a clone with the
        // named fields emptied (a new field is compared without anyone
        // having to remember this function).
        let mut rest = p.clone();
        rest.name.clear();
        rest.loc = crate::config::model::Loc {
            file: "".into(),
            line: 0,
        };
        let aspects = vec![
            ("mode", print(&std::mem::take(&mut rest.mode))),
            ("binds", print(&binds(&std::mem::take(&mut rest.binds)))),
            ("maxconn", print(&rest.maxconn.take())),
            ("timeouts", print(&std::mem::take(&mut rest.timeouts))),
            ("ACLs", print(&std::mem::take(&mut rest.acls))),
            (
                "tcp-request rules",
                print(&(
                    std::mem::take(&mut rest.tcp_connection),
                    std::mem::take(&mut rest.tcp_content),
                    rest.inspect_delay.take(),
                )),
            ),
            (
                "http-request rules",
                print(&(
                    std::mem::take(&mut rest.blocks),
                    std::mem::take(&mut rest.http_request),
                    std::mem::take(&mut rest.legacy_req),
                    std::mem::take(&mut rest.redirects),
                )),
            ),
            (
                "http-response rules",
                print(&(
                    std::mem::take(&mut rest.http_response),
                    std::mem::take(&mut rest.legacy_rsp),
                )),
            ),
            (
                "use_backend rules",
                print(&std::mem::take(&mut rest.use_backends)),
            ),
            (
                "default_backend",
                print(&rest.default_backend.take().map(|(b, _)| b)),
            ),
            (
                "balance",
                print(&(
                    std::mem::take(&mut rest.balance),
                    std::mem::take(&mut rest.hash_type),
                )),
            ),
            (
                "health checks",
                print(&(
                    std::mem::take(&mut rest.check_type),
                    std::mem::take(&mut rest.http_check),
                    std::mem::take(&mut rest.tcp_check),
                )),
            ),
            ("logs", print(&std::mem::take(&mut rest.log))),
            ("options", String::new()),
        ];
        let servers = std::mem::take(&mut rest.servers)
            .iter()
            .map(|s| (s.name.clone(), ServerPrint::of(s)))
            .collect();
        let mut aspects = aspects;
        if let Some(last) = aspects.last_mut() {
            last.1 = print(&rest);
        }
        ProxyPrint {
            name: p.name.clone(),
            aspects,
            servers,
        }
    }
}

/// A bind line without its loaded TLS configuration (whose `Debug` form
/// is not the configuration's text): address, options, whether TLS is on.
fn binds(binds: &[crate::config::model::Bind]) -> Vec<String> {
    binds
        .iter()
        .map(|b| {
            format!(
                "{} {:?} fd={:?} accept_proxy={} tls={} proto={:?}",
                b.text,
                b.addrs,
                b.fd,
                b.accept_proxy,
                b.tls.is_some(),
                b.proto
            )
        })
        .collect()
}

impl ServerPrint {
    fn of(s: &Server) -> ServerPrint {
        ServerPrint {
            addr: s.addr.to_string(),
            weight: s.weight,
            maxconn: s.maxconn,
            check: print(&s.check),
            options: print(&(&s.addr_text, &s.opts, s.id, &s.cookie, &s.tls)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Config {
        let dir = std::env::temp_dir().join(format!(
            "sluice-diff-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.cfg");
        std::fs::write(&path, text).unwrap();
        let loaded = crate::config::load(&[path]);
        let _ = std::fs::remove_dir_all(&dir);
        loaded.config.expect("valid test config")
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
        ConfigPrint::of(&load(a)).changes_to(&ConfigPrint::of(&load(b)))
    }

    #[test]
    fn same_text_and_moved_lines_are_no_change() {
        assert_eq!(changes(BASE, BASE), Vec::<String>::new());
        // A comment shifts every line number below it.
        let shifted = BASE.replace("defaults\n", "# note\n\ndefaults\n");
        assert_eq!(changes(BASE, &shifted), Vec::<String>::new());
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
        let d = BASE.replace("bind 127.0.0.1:8000", "bind 127.0.0.1:8001");
        assert_eq!(changes(BASE, &d), ["frontend fe modified: binds"]);
        let e = BASE.replace("maxconn 100", "maxconn 200");
        // The frontend's maxconn defaults to the global one.
        assert_eq!(
            changes(BASE, &e),
            ["global section modified", "frontend fe modified: maxconn"]
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
                "    server a2 127.0.0.1:9004\nbackend extra\n",
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
    }

    /// Loading the same files twice gives the same print (nothing in it
    /// depends on addresses in memory or hash order).
    #[test]
    fn prints_are_stable_over_the_config_corpus() {
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
            let changes = ConfigPrint::of(&a).changes_to(&ConfigPrint::of(&b));
            assert!(changes.is_empty(), "{}: {changes:?}", path.display());
            seen += 1;
        }
        assert!(seen >= 5, "{seen} configs");
    }
}
