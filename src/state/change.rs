//! The state changes a compiled configuration asks for. `snapshot::compile`
//! only reads the registry; what it would have written is returned as a
//! list of [`StateChange`]s, which `Runtime::apply` performs before the
//! snapshot that points at the new state is published. `show reload`
//! prints them from the same list (`snapshot::delta::Change::State`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use super::{BackendState, FrontendState, Registry, ServerState};
use crate::config::model::UnixName;
use crate::tls::upstream::UpstreamTls;

/// One write to the runtime state, named after what it does. Servers are
/// carried as their state object: a new one is built by `compile` (not yet
/// shared with anyone), an existing one was found by name in the registry.
#[derive(Debug, Clone)]
pub(crate) enum StateChange {
    /// A `cache` section new, or with new settings: an empty cache in
    /// place of any of its name (a section left as it was keeps its
    /// objects).
    SetCache(Arc<super::cache::Cache>),
    /// A frontend name seen for the first time.
    AddFrontend {
        name: String,
        state: Arc<FrontendState>,
    },
    /// A backend name seen for the first time (before its servers).
    AddBackend(Arc<BackendState>),
    /// A server seen for the first time in its backend, in the admin
    /// state it starts in.
    AddServer {
        backend: Arc<BackendState>,
        server: Arc<ServerState>,
        start: StartAdmin,
    },
    /// A server a reload had removed is configured again.
    ReviveServer(Arc<ServerState>),
    /// A server no longer configured: out of load balancing, idle pooled
    /// connections closed, requests in flight finish.
    RemoveServer(Arc<ServerState>),
    /// Another peer (address, TLS or HTTP/2): a fresh pool, so idle
    /// connections to the old peer are never reused.
    SetPeer {
        server: Arc<ServerState>,
        from: SocketAddr,
        to: SocketAddr,
        /// A UNIX socket server's (`to` is then unspecified).
        unix: Option<Arc<UnixName>>,
        tls: Option<Arc<UpstreamTls>>,
        mux: super::pool::Mux,
    },
    SetWeight {
        server: Arc<ServerState>,
        from: u32,
        to: u32,
    },
    SetMaxconn {
        server: Arc<ServerState>,
        from: u32,
        to: u32,
    },
    /// `check` on or off, `rise`, `fall`.
    SetChecks {
        server: Arc<ServerState>,
        checked: bool,
        rise: u32,
        fall: u32,
    },
    /// `observe` (0, [`super::OBSERVE_L4`] or [`super::OBSERVE_L7`]).
    SetObserve { server: Arc<ServerState>, to: u8 },
    /// `send-proxy` (1), `send-proxy-v2` (2), none (0).
    SetSendProxy { server: Arc<ServerState>, to: u8 },
    /// `pool-max-conn` (`u32::MAX`: none).
    SetPoolMax { server: Arc<ServerState>, to: u32 },
    /// The host name a resolved server is resolved under (the
    /// configuration's, over a `set server .. fqdn`).
    SetFqdn {
        server: Arc<ServerState>,
        to: Option<String>,
    },
    /// `agent-check` on (with its target) or off.
    SetAgent {
        server: Arc<ServerState>,
        to: Option<super::AgentTarget>,
    },
    /// One of the server's on/off settings.
    SetFlag {
        server: Arc<ServerState>,
        flag: ServerFlag,
        to: bool,
    },
    /// A stick table seen for the first time, or whose definition changed
    /// (`replaced`: it starts empty, as HAProxy's without a local peer).
    AddTable {
        table: Arc<super::table::Table>,
        replaced: bool,
    },
    /// A stick table no longer configured (streams that track its entries
    /// keep them until they end).
    RemoveTable(String),
}

/// The admin state a new server starts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartAdmin {
    Ready,
    /// `disabled`: in maintenance by the configuration (HAProxy's
    /// `CMAINT`, with checks paused).
    Disabled,
    /// A server the CLI added: in forced maintenance until `enable
    /// server`, its checks not paused.
    Added,
}

/// A server's on/off runtime setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerFlag {
    /// `on-marked-down shutdown-sessions`.
    ShutdownOnDown,
    /// Whether live sessions listen for a cut (see `ServerState::cuttable`).
    Cuttable,
}

impl ServerFlag {
    fn cell(self, s: &ServerState) -> &std::sync::atomic::AtomicBool {
        match self {
            ServerFlag::ShutdownOnDown => &s.shutdown_on_down,
            ServerFlag::Cuttable => &s.cuttable,
        }
    }
}

/// What the configuration wants of one server's runtime state.
#[derive(Debug, Clone)]
pub(crate) struct ServerSettings {
    pub(crate) addr: SocketAddr,
    /// A server at `/path`, `unix@path` or `abns@name`.
    pub(crate) unix: Option<Arc<UnixName>>,
    pub(crate) tls: Option<Arc<UpstreamTls>>,
    pub(crate) mux: super::pool::Mux,
    pub(crate) checked: bool,
    pub(crate) rise: u32,
    pub(crate) fall: u32,
    pub(crate) weight: u32,
    pub(crate) maxconn: u32,
    pub(crate) observe: u8,
    pub(crate) send_proxy: u8,
    /// `pool-max-conn` (`u32::MAX`: none).
    pub(crate) pool_max: u32,
    pub(crate) shutdown_on_down: bool,
    pub(crate) cuttable: bool,
    /// Checks start enabled (a dynamic server's wait for `enable health`).
    pub(crate) checks_enabled: bool,
    /// The host name of the configured address, if it is one.
    pub(crate) fqdn: Option<String>,
    /// Starts without an address (a name that did not resolve, an SRV
    /// slot): in `MAINT (resolution)` until the DNS gives one, when it
    /// has `resolvers`.
    pub(crate) no_addr: bool,
    /// Resolved by a `resolvers` section: the address is the DNS's.
    pub(crate) resolved: bool,
    /// A `server-template` slot of an SRV name: its host name is the
    /// records'.
    pub(crate) srv_slot: bool,
    /// `agent-check`: where it goes and what it sends.
    pub(crate) agent: Option<super::AgentTarget>,
}

impl ServerSettings {
    /// A new server's state, built with these settings. Nothing else sees
    /// it until an [`StateChange::AddServer`] puts it in the registry.
    pub(crate) fn build(&self, backend: &str, name: &str) -> ServerState {
        let s = ServerState::new(backend, name, self.addr, self.checked, self.rise, self.fall);
        s.pool.store(Arc::new(
            super::Pool::new(self.addr, self.tls.clone(), self.mux).on_unix(self.unix.clone()),
        ));
        s.weight.store(self.weight, Relaxed);
        s.maxconn.store(self.maxconn, Relaxed);
        s.observe.store(self.observe, Relaxed);
        s.send_proxy.store(self.send_proxy, Relaxed);
        s.pool_max.store(self.pool_max, Relaxed);
        s.shutdown_on_down.store(self.shutdown_on_down, Relaxed);
        s.cuttable.store(self.cuttable, Relaxed);
        if !self.checks_enabled {
            s.health.set_check_enabled(false);
        }
        if let Some(t) = &self.agent {
            // A dynamic server's agent waits for `enable agent`.
            s.health.set_agent(true, self.checks_enabled);
            *super::lock(&s.agent_target) = t.clone();
        }
        s.fqdn.store(self.fqdn.clone().map(Arc::new));
        if self.no_addr {
            s.no_addr.store(true, Relaxed);
            if self.resolved {
                // Down for maintenance from the start, its checks paused,
                // counted as a down transition as HAProxy counts it.
                s.admin.store(super::ADMF_RMAINT, Relaxed);
                s.health.start_stopped(self.checked);
                s.health.chkdown.fetch_add(1, Relaxed);
            }
        }
        s
    }

    /// The changes that bring the live state of `s` to these settings, in
    /// the order they are applied (revival first, so the server is back in
    /// its backend with the new peer and limits at once).
    pub(crate) fn changes_from(&self, s: &Arc<ServerState>, out: &mut Vec<StateChange>) {
        if s.is_retired() {
            out.push(StateChange::ReviveServer(s.clone()));
        }
        let pool = s.pool.load();
        // A resolved server's address is the DNS's, not the configuration's.
        let addr_changed = !self.resolved && pool.addr() != self.addr;
        if addr_changed
            || !pool.same_peer(pool.addr(), self.tls.as_ref(), self.mux)
            || pool.unix() != self.unix.as_ref()
        {
            out.push(StateChange::SetPeer {
                server: s.clone(),
                from: pool.addr(),
                to: if self.resolved {
                    pool.addr()
                } else {
                    self.addr
                },
                unix: self.unix.clone(),
                tls: self.tls.clone(),
                mux: self.mux,
            });
        }
        let info = s.health.info();
        if s.health.is_checked() != self.checked
            || info.rise != self.rise.max(1)
            || info.fall != self.fall.max(1)
        {
            out.push(StateChange::SetChecks {
                server: s.clone(),
                checked: self.checked,
                rise: self.rise,
                fall: self.fall,
            });
        }
        if self.resolved && !self.srv_slot && s.fqdn.load().as_deref() != self.fqdn.as_ref() {
            out.push(StateChange::SetFqdn {
                server: s.clone(),
                to: self.fqdn.clone(),
            });
        }
        if s.health.agent_configured() != self.agent.is_some()
            || self
                .agent
                .as_ref()
                .is_some_and(|t| *super::lock(&s.agent_target) != *t)
        {
            out.push(StateChange::SetAgent {
                server: s.clone(),
                to: self.agent.clone(),
            });
        }
        let weight = s.weight.load(Relaxed);
        if weight != self.weight {
            out.push(StateChange::SetWeight {
                server: s.clone(),
                from: weight,
                to: self.weight,
            });
        }
        let maxconn = s.maxconn.load(Relaxed);
        if maxconn != self.maxconn {
            out.push(StateChange::SetMaxconn {
                server: s.clone(),
                from: maxconn,
                to: self.maxconn,
            });
        }
        if s.observe.load(Relaxed) != self.observe {
            out.push(StateChange::SetObserve {
                server: s.clone(),
                to: self.observe,
            });
        }
        if s.pool_max.load(Relaxed) != self.pool_max {
            out.push(StateChange::SetPoolMax {
                server: s.clone(),
                to: self.pool_max,
            });
        }
        if s.send_proxy.load(Relaxed) != self.send_proxy {
            out.push(StateChange::SetSendProxy {
                server: s.clone(),
                to: self.send_proxy,
            });
        }
        for (flag, to) in [
            (ServerFlag::ShutdownOnDown, self.shutdown_on_down),
            (ServerFlag::Cuttable, self.cuttable),
        ] {
            if flag.cell(s).load(Relaxed) != to {
                out.push(StateChange::SetFlag {
                    server: s.clone(),
                    flag,
                    to,
                });
            }
        }
    }
}

/// One line per change, `server <backend>/<name> ...` as `show reload`
/// words it.
impl std::fmt::Display for StateChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let who = |s: &ServerState| format!("server {}/{}", s.backend, s.name);
        match self {
            StateChange::SetCache(c) => write!(f, "cache {} emptied", c.name),
            StateChange::AddFrontend { name, .. } => write!(f, "frontend {name} added"),
            StateChange::AddBackend(be) => write!(f, "backend {} added", be.name),
            StateChange::AddServer { server, .. } => write!(f, "{} added", who(server)),
            StateChange::ReviveServer(s) => write!(f, "{} added back", who(s)),
            StateChange::RemoveServer(s) => write!(f, "{} removed", who(s)),
            StateChange::AddTable {
                table,
                replaced: false,
            } => write!(f, "table {} added", table.name()),
            StateChange::AddTable { table, .. } => {
                write!(f, "table {} emptied: its definition changed", table.name())
            }
            StateChange::RemoveTable(name) => write!(f, "table {name} removed"),
            StateChange::SetPeer {
                server, from, to, ..
            } => {
                write!(f, "{} address {from} -> {to}", who(server))
            }
            StateChange::SetWeight { server, from, to } => {
                write!(f, "{} weight {from} -> {to}", who(server))
            }
            StateChange::SetMaxconn { server, from, to } => {
                write!(f, "{} maxconn {from} -> {to}", who(server))
            }
            StateChange::SetChecks { server, .. } => {
                write!(f, "{} check parameters", who(server))
            }
            StateChange::SetFqdn { server, to } => write!(
                f,
                "{} fqdn {}",
                who(server),
                to.as_deref().unwrap_or("(none)")
            ),
            StateChange::SetAgent { server, .. } => write!(f, "{} agent check", who(server)),
            StateChange::SetObserve { server, .. }
            | StateChange::SetSendProxy { server, .. }
            | StateChange::SetPoolMax { server, .. }
            | StateChange::SetFlag { server, .. } => write!(f, "{} options", who(server)),
        }
    }
}

impl Registry {
    /// Performs `changes` in order. Only reloads and start-up call it, one
    /// at a time; requests never do.
    pub(crate) fn apply<'a>(&self, changes: impl IntoIterator<Item = &'a StateChange>) {
        for c in changes {
            match c {
                StateChange::SetCache(cache) => self.set_cache(cache.clone()),
                StateChange::AddFrontend { name, state } => {
                    super::lock(&self.frontends).insert(name.clone(), state.clone());
                }
                StateChange::AddBackend(be) => {
                    super::lock(&self.backends).insert(be.name.clone(), be.clone());
                }
                StateChange::AddServer {
                    backend,
                    server,
                    start,
                } => {
                    // Only a new server: a reload keeps the state an
                    // operator set since.
                    match start {
                        StartAdmin::Ready => {}
                        StartAdmin::Disabled => server.start_maint(true),
                        StartAdmin::Added => server.start_maint(false),
                    }
                    backend.insert_server(server.clone());
                }
                StateChange::ReviveServer(s) => s.revive(),
                StateChange::RemoveServer(s) => s.retire(),
                StateChange::AddTable { table, .. } => {
                    self.tables.insert(table.clone());
                    super::table::start_expiry(table);
                }
                StateChange::RemoveTable(name) => self.tables.remove(name),
                StateChange::SetPeer {
                    server,
                    to,
                    unix,
                    tls,
                    mux,
                    ..
                } => server.pool.store(Arc::new(
                    super::Pool::new(*to, tls.clone(), *mux).on_unix(unix.clone()),
                )),
                StateChange::SetWeight { server, to, .. } => server.weight.store(*to, Relaxed),
                StateChange::SetMaxconn { server, to, .. } => server.maxconn.store(*to, Relaxed),
                StateChange::SetChecks {
                    server,
                    checked,
                    rise,
                    fall,
                } => {
                    server.health.set_rise_fall(*rise, *fall);
                    server.health.set_checked(*checked);
                }
                StateChange::SetFqdn { server, to } => {
                    server.fqdn.store(to.clone().map(Arc::new));
                }
                StateChange::SetAgent { server, to } => {
                    server.health.set_agent(to.is_some(), true);
                    if let Some(t) = to {
                        *super::lock(&server.agent_target) = t.clone();
                    }
                }
                StateChange::SetObserve { server, to } => server.observe.store(*to, Relaxed),
                StateChange::SetSendProxy { server, to } => server.send_proxy.store(*to, Relaxed),
                StateChange::SetPoolMax { server, to } => server.pool_max.store(*to, Relaxed),
                StateChange::SetFlag { server, flag, to } => flag.cell(server).store(*to, Relaxed),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::Config;
    use crate::config::parse_texts;

    fn config(backend: &str) -> Config {
        let text = format!(
            "defaults\n mode http\n timeout connect 1s\n timeout client 1s\n timeout server 1s\n\
             frontend fe\n bind 127.0.0.1:8000\n default_backend be\nbackend be\n{backend}\n"
        );
        let l = parse_texts(&[("t.cfg".into(), text)], &|_| None, &|h: &str, p: u16| {
            Ok(vec![SocketAddr::new(
                h.parse().map_err(|_| "bad".to_string())?,
                p,
            )])
        });
        l.config.unwrap_or_else(|| panic!("{:?}", l.diagnostics))
    }

    /// Compiles `cfg` over `reg` and applies the changes, returning them
    /// one line each.
    fn reload(reg: &Registry, cfg: &Config) -> Vec<String> {
        let (_, changes) = crate::snapshot::compile(cfg, reg, 1);
        reg.apply(&changes);
        changes.iter().map(|c| c.to_string()).collect()
    }

    const TWO: &str = " server s1 127.0.0.1:8001\n server s2 127.0.0.1:8002";

    #[test]
    fn compile_writes_no_state() {
        let reg = Registry::default();
        let (_, changes) = crate::snapshot::compile(&config(TWO), &reg, 1);
        assert!(reg.find_backend("be").is_none());
        assert!(reg.find_frontend("fe").is_none());
        assert_eq!(
            changes.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
            [
                "backend be added",
                "server be/s1 added",
                "server be/s2 added",
                "frontend fe added"
            ]
        );
    }

    #[test]
    fn same_config_twice_is_no_change() {
        let reg = Registry::default();
        let cfg = config(TWO);
        assert!(!reload(&reg, &cfg).is_empty());
        assert_eq!(reload(&reg, &cfg), Vec::<String>::new());
    }

    #[test]
    fn dropped_server_is_removed_then_revived() {
        let reg = Registry::default();
        reload(&reg, &config(TWO));
        let (_, changes) = crate::snapshot::compile(&config(" server s1 127.0.0.1:8001"), &reg, 2);
        assert!(matches!(
            changes.as_slice(),
            [StateChange::RemoveServer(s)] if s.name == "s2"
        ));
        reg.apply(&changes);
        let be = reg.find_backend("be").unwrap();
        assert!(be.find_server("s2").unwrap().is_retired());
        assert_eq!(reload(&reg, &config(TWO)), ["server be/s2 added back"]);
        assert!(!be.find_server("s2").unwrap().is_retired());
    }

    #[test]
    fn settings_changes_are_typed() {
        let reg = Registry::default();
        reload(&reg, &config(TWO));
        let changed = " server s1 127.0.0.1:9001 weight 5 maxconn 7\n server s2 127.0.0.1:8002";
        assert_eq!(
            reload(&reg, &config(changed)),
            [
                "server be/s1 address 127.0.0.1:8001 -> 127.0.0.1:9001",
                "server be/s1 weight 1 -> 5",
                "server be/s1 maxconn 0 -> 7",
            ]
        );
        let s1 = reg.find_backend("be").unwrap().find_server("s1").unwrap();
        assert_eq!(s1.weight.load(Relaxed), 5);
        assert_eq!(s1.maxconn.load(Relaxed), 7);
    }

    #[test]
    fn removed_backend_retires_its_servers() {
        let reg = Registry::default();
        reload(&reg, &config(TWO));
        let text = "defaults\n mode http\n timeout connect 1s\n timeout client 1s\n timeout server 1s\n\
                    backend other\n server o 127.0.0.1:8003\n";
        let l = parse_texts(
            &[("t.cfg".into(), text.into())],
            &|_| None,
            &|h: &str, p: u16| {
                Ok(vec![SocketAddr::new(
                    h.parse().map_err(|_| "bad".to_string())?,
                    p,
                )])
            },
        );
        let cfg = l.config.unwrap();
        let lines = reload(&reg, &cfg);
        assert!(
            lines.contains(&"server be/s1 removed".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"server be/s2 removed".to_string()),
            "{lines:?}"
        );
    }
}
