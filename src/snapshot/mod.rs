//! Compiles a [`Config`] into one immutable routing snapshot. A request
//! loads the current snapshot once and uses it to the end; a reload builds
//! a new one over the same runtime state and swaps it in.

pub(crate) mod client;
pub(crate) mod delta;
pub(crate) mod fcgi;
pub(crate) mod filters;
pub(crate) mod h2_limits;
pub(crate) mod lb;
pub(crate) mod legacy_rt;
pub(crate) mod log_setup;
pub mod runtime;
pub(crate) mod spoe;

use std::collections::HashMap;
use std::sync::Arc;

use crate::acl::eval::{AclSet, CompiledCond};
use crate::config::model::{
    Balance, CheckKind, CheckParams, Config, ForwardFor, Global, HttpConnMode, HttpRequestAction,
    HttpResponseAction, HttpReuse, ListenAddr, Mode, Proxy, ProxyKind, StatsPage, Timeouts,
};
use crate::snapshot::lb::Lb;
use crate::state::change::{ServerSettings, StartAdmin, StateChange};
use crate::state::{BackendState, FrontendState, Registry, ServerState};
use delta::Change;
use legacy_rt::LegacyRt;

#[derive(Debug)]
pub(crate) struct Snapshot {
    pub(crate) generation: u64,
    pub(crate) global: Global,
    /// The `cache` sections' objects, in the sections' order (`show
    /// cache`; the proxies hold those their rules name).
    pub(crate) caches: Vec<Arc<crate::state::cache::Cache>>,
    /// Every proxy in declaration order, as `show stat` lists them.
    pub(crate) proxies: Vec<ProxyRt>,
    /// The stick tables.
    pub(crate) tables: crate::state::table::registry::Tables,
}

/// One `frontend`, `backend` or `listen` section.
#[derive(Debug)]
pub(crate) struct ProxyRt {
    pub(crate) name: String,
    /// Proxy id (`iid`): numbered from 1 in declaration order, from 2 when
    /// a global stats socket exists (HAProxy's CLI proxy takes 1).
    pub(crate) iid: u32,
    pub(crate) frontend: Option<Arc<FrontendRt>>,
    pub(crate) backend: Option<Arc<BackendRt>>,
    /// `description`: shown on the stats page.
    pub(crate) description: Option<String>,
}

/// Compiled `tcp-request connection|content` rules of one proxy, in
/// order (`tcp::rules` runs them).
pub(crate) type TcpRules = Vec<(crate::config::model::TcpAction, Option<CompiledCond>)>;

#[derive(Debug)]
pub(crate) struct FrontendRt {
    pub(crate) name: String,
    pub(crate) iid: u32,
    /// The TLS configuration of each `bind ... ssl` address (a listener
    /// finds its own here at each accept, so a reload's certificates serve
    /// the next handshake).
    pub(crate) tls_binds: Vec<(ListenAddr, Arc<crate::tls::ListenTls>)>,
    /// `filter spoe` engines.
    pub(crate) spoe: Vec<Arc<spoe::SpoeRt>>,
    /// Largest request head (tune.bufsize - tune.maxrewrite).
    pub(crate) max_head: usize,
    /// The head lines a request may have, its request line counted
    /// (`tune.http.maxhdr`; None: the parser's own bound).
    pub(crate) max_hdr: Option<u32>,
    /// `h1-accept-payload-with-any-method`.
    pub(crate) payload_any_method: bool,
    /// The request line's bytes its log lines show (`tune.http.logurilen`).
    pub(crate) log_uri_len: usize,
    /// `tune.bufsize`: how much of a refused request is captured.
    pub(crate) bufsize: usize,
    /// `nosplice`, `tune.pipesize`, `maxpipes`: how TCP relays and
    /// tunnels move their bytes.
    pub(crate) splice: crate::wire::splice::Tune,
    pub(crate) state: Arc<FrontendState>,
    pub(crate) mode: Mode,
    pub(crate) maxconn: u32,
    pub(crate) timeouts: Timeouts,
    pub(crate) conn_mode: HttpConnMode,
    /// `option http-ignore-probes`.
    pub(crate) ignore_probes: bool,
    /// `option http-buffer-request`.
    pub(crate) buffer_request: bool,
    /// `option disable-h2-upgrade`.
    pub(crate) disable_h2_upgrade: bool,
    /// `option accept-invalid-http-request`.
    pub(crate) accept_invalid_req: bool,
    /// `option http-restrict-req-hdr-names`.
    pub(crate) restrict_hdr_names: crate::config::model::HdrNamePolicy,
    /// The global `h1-case-adjust` names, when `option
    /// h1-case-adjust-bogus-client` asks for them on answers to HTTP/1
    /// clients (and there are some).
    pub(crate) case_client: Option<Arc<crate::wire::h1::CaseAdjust>>,
    /// Its listening addresses, each with its id, name and connection
    /// count (`so_id`, `so_name`, `dst_conn`; the id is also the
    /// listener's number in the logs of UNIX clients).
    pub(crate) listeners: Vec<(ListenAddr, Arc<crate::sample::conn::Listener>)>,
    /// Listening addresses with `accept-proxy`.
    pub(crate) accept_proxy: Vec<ListenAddr>,
    /// Listening addresses with `proto h1` or `proto h2`.
    pub(crate) bind_protos: Vec<(ListenAddr, crate::config::model::BindProto)>,
    /// `bind ... maxconn`: the listeners with a limit of their own.
    pub(crate) bind_maxconn: Vec<(ListenAddr, u32)>,
    /// The HTTP/2 settings and limits of its connections.
    pub(crate) h2: h2_limits::Limits,
    /// `tcp-request connection` / `session` / `content` rules,
    /// `inspect-delay`.
    pub(crate) tcp_connection: TcpRules,
    pub(crate) tcp_session: TcpRules,
    pub(crate) tcp_content: TcpRules,
    pub(crate) inspect_delay: Option<std::time::Duration>,
    pub(crate) acls: AclSet,
    /// `block`, `http-request` and `redirect` rules, in that order.
    pub(crate) http_request: Vec<(HttpRequestAction, Option<CompiledCond>)>,
    /// `option clitcpka` (or `tcpka`): SO_KEEPALIVE on client connections.
    pub(crate) tcpka: bool,
    /// `clitcpka-*`, `rate-limit sessions`, `option originalto`... (see
    /// `config/extras.rs`).
    pub(crate) extras: Arc<crate::config::extras::ProxyExtras>,
    /// `capture request|response header` for the access log.
    pub(crate) captures: crate::config::model::HeaderCaptures,
    /// `unique-id-format` and `unique-id-header`.
    pub(crate) unique_id: Option<UniqueId>,
    /// Where in `http_request` the legacy `req*` filters run (before the
    /// `redirect` rules).
    pub(crate) legacy_at: usize,
    /// `reqadd`, `reqrep`... (None without any).
    pub(crate) legacy_req: Option<Box<LegacyRt>>,
    /// `rspadd`, `rsprep`... (None without any).
    pub(crate) legacy_rsp: Option<Box<LegacyRt>>,
    /// `monitor-uri`, with the `monitor fail` condition.
    pub(crate) monitor: Option<(String, Option<CompiledCond>)>,
    /// `use_backend` rules, in order.
    pub(crate) switching: Vec<(Switch, CompiledCond)>,
    /// Every backend by name, for the dynamic `use_backend` names (None
    /// without any).
    pub(crate) by_name: Option<Arc<HashMap<String, Arc<BackendRt>>>>,
    pub(crate) default_backend: Option<Arc<BackendRt>>,
    /// `compression` (None without it: a response pays nothing).
    pub(crate) comp: Option<Box<filters::CompRt>>,
    /// The caches, in the sections' order, when its rules use one
    /// (`cache-use`, `cache-store` hold their place in it); else empty.
    pub(crate) caches: Vec<Arc<crate::state::cache::Cache>>,
    pub(crate) http_response: Vec<(HttpResponseAction, Option<CompiledCond>)>,
    /// Whether an `http-response` rule may wait (a Lua action, a
    /// `send-spoe-group`): the rules then run in a future of their own.
    pub(crate) rsp_waits: bool,
    /// `http-after-response` rules.
    pub(crate) http_after: Vec<(HttpResponseAction, Option<CompiledCond>)>,
    pub(crate) forwardfor: Option<ForwardFor>,
    /// `errorfile`: complete responses by status.
    pub(crate) errorfiles: Vec<(u16, bytes::Bytes)>,
    pub(crate) stats: Option<StatsRt>,
    /// Access log, when the frontend has somewhere to log to.
    pub(crate) log: Option<Arc<log_setup::FrontendLog>>,
}

/// A frontend's request ids.
#[derive(Debug)]
pub(crate) struct UniqueId {
    pub(crate) format: crate::config::log_format::LogFormat,
    /// The header that carries the id to the server.
    pub(crate) header: Option<String>,
}

/// Where a `use_backend` rule sends a request.
#[derive(Debug)]
pub(crate) enum Switch {
    To(Arc<BackendRt>),
    /// A name made per request (`use_backend be_%[req.hdr(host)]`).
    Named(crate::config::model::LogFmt),
}

impl FrontendRt {
    /// The backend of the first `use_backend` rule whose condition `holds`,
    /// else the `default_backend`. A dynamic name that names no backend
    /// ends the search with the default backend, as in HAProxy 2.6
    /// (`process_switching_rules`).
    pub(crate) fn pick_backend(
        &self,
        holds: impl Fn(&CompiledCond) -> bool,
        cx: &crate::sample::Ctx<'_>,
    ) -> Option<&Arc<BackendRt>> {
        for (to, cond) in &self.switching {
            if !holds(cond) {
                continue;
            }
            return match to {
                Switch::To(b) => Some(b),
                Switch::Named(fmt) => {
                    let name = fmt.render(cx);
                    std::str::from_utf8(&name)
                        .ok()
                        .and_then(|n| self.by_name.as_ref()?.get(n))
                        .or(self.default_backend.as_ref())
                }
            };
        }
        self.default_backend.as_ref()
    }
}

#[derive(Debug)]
pub(crate) struct BackendRt {
    pub(crate) name: String,
    pub(crate) iid: u32,
    /// Largest response head (tune.bufsize - tune.maxrewrite).
    pub(crate) max_head: usize,
    /// `tune.bufsize`: how much of a refused response is captured.
    pub(crate) bufsize: usize,
    pub(crate) state: Arc<BackendState>,
    pub(crate) mode: Mode,
    pub(crate) timeouts: Timeouts,
    pub(crate) retries: u32,
    /// `option srvtcpka` (or `tcpka`): SO_KEEPALIVE on server connections.
    pub(crate) tcpka: bool,
    /// `source`, `dispatch`, `srvtcpka-*`, `http-send-name-header`... (see
    /// `config/extras.rs`).
    pub(crate) extras: Arc<crate::config::extras::ProxyExtras>,
    /// `use-fcgi-app`: the application its `proto fcgi` servers run.
    pub(crate) fcgi: Option<Arc<fcgi::FcgiRt>>,
    /// `filter spoe` engines.
    pub(crate) spoe: Vec<Arc<spoe::SpoeRt>>,
    /// `use-server` rules: the server (its index) and the condition.
    pub(crate) use_servers: Vec<(usize, CompiledCond)>,
    /// `force-persist` (true) and `ignore-persist` rules, in order.
    pub(crate) persist_rules: Vec<(bool, CompiledCond)>,
    /// `option redispatch [<interval>]` (None: off).
    pub(crate) redispatch: Option<i32>,
    pub(crate) retry_on: crate::config::model::RetryOn,
    pub(crate) http_reuse: HttpReuse,
    pub(crate) conn_mode: HttpConnMode,
    /// `option http-buffer-request`.
    pub(crate) buffer_request: bool,
    pub(crate) balance: Balance,
    pub(crate) servers: Vec<ServerRt>,
    /// Some server has `redir`: the server a request gets is looked up.
    pub(crate) redirs: bool,
    /// Balancing state (algorithm, map/ring, round-robin position).
    pub(crate) lb: Lb,
    /// What active checks do (TCP connect, `option httpchk`, `tcp-check`).
    pub(crate) check: CheckKind,
    /// `option log-health-checks`.
    pub(crate) log_health_checks: bool,
    /// `email-alert`: where its servers' state changes are mailed.
    pub(crate) email_alert: Option<Arc<crate::config::mailers::Alerting>>,
    /// `option accept-invalid-http-response`.
    pub(crate) accept_invalid_resp: bool,
    /// The global `h1-case-adjust` names, when `option
    /// h1-case-adjust-bogus-server` asks for them on requests to HTTP/1
    /// servers (and there are some).
    pub(crate) case_server: Option<Arc<crate::wire::h1::CaseAdjust>>,
    /// The backend's own ACLs, for its rules' conditions.
    pub(crate) acls: AclSet,
    /// `block`, `http-request` and `redirect` rules of a backend section,
    /// run after the frontend's.
    pub(crate) http_request: Vec<(HttpRequestAction, Option<CompiledCond>)>,
    /// See [`FrontendRt::legacy_at`].
    pub(crate) legacy_at: usize,
    pub(crate) legacy_req: Option<Box<LegacyRt>>,
    pub(crate) legacy_rsp: Option<Box<LegacyRt>>,
    /// `compression` (None without it).
    pub(crate) comp: Option<Box<filters::CompRt>>,
    /// See [`FrontendRt::caches`].
    pub(crate) caches: Vec<Arc<crate::state::cache::Cache>>,
    pub(crate) http_response: Vec<(HttpResponseAction, Option<CompiledCond>)>,
    /// Whether an `http-response` rule may wait (a Lua action, a
    /// `send-spoe-group`): the rules then run in a future of their own.
    pub(crate) rsp_waits: bool,
    /// `http-after-response` rules.
    pub(crate) http_after: Vec<(HttpResponseAction, Option<CompiledCond>)>,
    /// `tcp-request content` rules of a backend section (mode tcp), run
    /// after the frontend's once the backend is chosen.
    pub(crate) tcp_content: TcpRules,
    /// `tcp-response content` rules, on the server's first bytes, and
    /// `tcp-response inspect-delay`.
    pub(crate) tcp_response: TcpRules,
    pub(crate) res_inspect_delay: Option<std::time::Duration>,
    /// `tcp-request inspect-delay` of the backend: whether its
    /// `send-spoe-group` content rules may wait for an agent.
    pub(crate) inspect_delay: Option<std::time::Duration>,
    pub(crate) forwardfor: Option<ForwardFor>,
    pub(crate) errorfiles: Vec<(u16, bytes::Bytes)>,
    pub(crate) stats: Option<StatsRt>,
    /// Targets of state-change events (`log` lines), if any.
    pub(crate) log: Option<Arc<log_setup::LogSetup>>,
    /// `fullconn`: the BACKEND row's `slim`.
    pub(crate) fullconn: u32,
    /// `cookie <name> ...`: cookie-based persistence (HTTP only).
    pub(crate) cookie: Option<Arc<crate::config::model::CookiePersist>>,
    /// `option persist`: a cookie naming a DOWN server still goes to it.
    pub(crate) persist: bool,
    /// `stick match|on|store-request` rules, in order, and `stick
    /// store-response` ones.
    pub(crate) stick: Vec<StickRt>,
    pub(crate) store_response: Vec<StickRt>,
    /// `option http-restrict-req-hdr-names`.
    pub(crate) restrict_hdr_names: crate::config::model::HdrNamePolicy,
}

/// A compiled `stick` rule: its table found.
#[derive(Debug)]
pub(crate) struct StickRt {
    pub(crate) kind: crate::config::model::StickKind,
    pub(crate) key: crate::sample::Expr,
    pub(crate) table: Arc<crate::state::table::Table>,
    pub(crate) cond: Option<CompiledCond>,
}

#[derive(Debug)]
pub(crate) struct ServerRt {
    /// Position in the backend, from 1 (`sid`).
    pub(crate) sid: u32,
    pub(crate) name: String,
    pub(crate) state: Arc<ServerState>,
    /// Configured weight (`uweight` at start).
    pub(crate) weight: u32,
    pub(crate) check: Option<CheckParams>,
    /// `backup`: used only when no active server is.
    pub(crate) backup: bool,
    /// `minconn` (dynamic maxconn floor, 0 = static).
    pub(crate) minconn: u32,
    /// `maxqueue` (0 = unlimited).
    pub(crate) maxqueue: u32,
    /// `slowstart` in seconds (0 = none).
    pub(crate) slowstart_secs: u32,
    pub(crate) opts: crate::config::model::ServerOpts,
    /// `cookie <value>`: the persistence cookie value naming it.
    pub(crate) cookie: Option<Box<str>>,
    /// `check-ssl`: the TLS its checks use.
    pub(crate) check_tls: Option<Arc<crate::tls::upstream::UpstreamTls>>,
    /// `resolvers` and its options: the DNS moves its address.
    pub(crate) resolve: Option<crate::config::model::ServerResolve>,
    /// The SRV name of a `server-template` slot.
    pub(crate) srvrecord: Option<Arc<str>>,
    /// `agent-inter` (None: no agent check, or the check's `inter`).
    pub(crate) agent_inter: Option<std::time::Duration>,
    /// `redir <prefix>`.
    pub(crate) redir: Option<Arc<str>>,
}

/// HAProxy's default when neither global nor frontend sets `maxconn`
/// (it derives its own from the fd limit; sluice picks a fixed safe value).
pub(crate) const DEFAULT_MAXCONN: u32 = 4096;

/// Builds the snapshot for `config` over the runtime state `registry`
/// holds, without writing to it: state the snapshot needs that does not
/// exist yet is built here and, with every update the configuration asks
/// of the state that does, returned as the change list. The caller applies
/// the list (`Runtime::apply`) before it publishes the snapshot, so no
/// request ever sees a snapshot pointing at state the registry lacks.
pub(crate) fn compile(
    config: &Config,
    registry: &Registry,
    generation: u64,
) -> (Snapshot, Vec<StateChange>) {
    // The formats compiled here read the maps the configuration loaded.
    crate::sample::patref::resolving(&config.global.pat_refs, || {
        compile_with(config, registry, generation)
    })
}

/// The scripts a configuration loaded and their bounds, for the requests
/// of its snapshot (process-wide, as HAProxy's Lua state).
fn publish_lua(lua: &crate::config::model::LuaConf) {
    let d = crate::sample::script::Tune::default();
    crate::sample::script::set_tune(crate::sample::script::Tune {
        forced_yield: lua.forced_yield.unwrap_or(d.forced_yield),
        session_timeout: lua.session_timeout.unwrap_or(d.session_timeout),
        service_timeout: lua.service_timeout.unwrap_or(d.service_timeout),
        task_timeout: lua.task_timeout.or(d.task_timeout),
    });
    crate::sample::script::activate(lua.scripts.0.clone());
}

fn compile_with(
    config: &Config,
    registry: &Registry,
    generation: u64,
) -> (Snapshot, Vec<StateChange>) {
    // Process-wide, as in HAProxy: the limits of the running configuration.
    crate::sample::vars::set_limits(&config.global.vars_limits);
    crate::sys::env::publish(&config.global.env);
    crate::sample::auth::publish(&config.global.userlists);
    crate::sample::patref::publish(&config.global.pat_refs);
    publish_lua(&config.global.lua);
    let mut c = Compiler {
        config,
        registry,
        iids: proxy_ids(
            &config.proxies,
            if config.global.stats_sockets.is_empty() {
                1
            } else {
                2
            },
        ),
        global_maxconn: config.global.maxconn.unwrap_or(DEFAULT_MAXCONN),
        case_adjust: crate::wire::h1::CaseAdjust::new(&config.global.h1_case_adjust).map(Arc::new),
        changes: Vec::new(),
        new_frontends: Vec::new(),
        new_backends: Vec::new(),
        tables: Default::default(),
        caches: Vec::new(),
    };
    c.tables = c.tables();
    c.caches();
    // Backends first, so that frontends can point at them.
    let backends = c.backends();
    let proxies = c.proxies(&backends);
    c.removed_servers();
    let snap = Snapshot {
        generation,
        global: config.global.clone(),
        caches: c.caches,
        proxies,
        tables: std::mem::take(&mut c.tables),
    };
    (snap, c.changes)
}

/// A generation's compilation and its one list of changes: what differs
/// from the `previous` configuration (none at start-up, where there is
/// nothing to compare with), then the state changes of [`compile`]. The
/// caller applies the list (`Runtime::apply` performs its state changes)
/// and keeps it for `show reload`.
pub(crate) fn plan(
    previous: Option<&Config>,
    config: &Config,
    registry: &Registry,
    generation: u64,
) -> (Snapshot, Vec<Change>) {
    let mut changes = previous.map_or_else(Vec::new, |p| delta::config_changes(p, config));
    let (snap, state) = compile(config, registry, generation);
    changes.extend(state.into_iter().map(Change::State));
    (snap, changes)
}

/// One compilation: the inputs, and the state changes found so far.
struct Compiler<'a> {
    config: &'a Config,
    registry: &'a Registry,
    /// Each proxy's number, in declaration order.
    iids: Vec<u32>,
    global_maxconn: u32,
    /// The global `h1-case-adjust` table, shared by the proxies that use it.
    case_adjust: Option<Arc<crate::wire::h1::CaseAdjust>>,
    changes: Vec<StateChange>,
    /// States built by this compilation (the registry has them only once
    /// the changes are applied).
    new_frontends: Vec<(String, Arc<FrontendState>)>,
    new_backends: Vec<Arc<BackendState>>,
    /// The stick tables, compiled first (rules point at them).
    tables: crate::state::table::registry::Tables,
    /// The caches of the `cache` sections, in order.
    caches: Vec<Arc<crate::state::cache::Cache>>,
}

/// The numbers of `proxies` (`iid`), as HAProxy 2.6 gives them: an `id`
/// as written; else the next number no proxy has from a count that starts
/// at `first` (after the stats socket's own proxy when there is one) and
/// that every proxy moves on by one, past the number it took.
fn proxy_ids(proxies: &[crate::config::model::Proxy], first: u32) -> Vec<u32> {
    let mut taken: Vec<u32> = proxies.iter().filter_map(|p| p.id).collect();
    let mut next = first;
    let mut out = Vec::with_capacity(proxies.len());
    for p in proxies {
        let id = match p.id {
            Some(id) => {
                next += 1;
                id
            }
            None => {
                while taken.contains(&next) {
                    next += 1;
                }
                taken.push(next);
                next += 1;
                next - 1
            }
        };
        out.push(id);
    }
    out
}

/// The backends of a snapshot by name, as frontends look them up.
type Backends = Vec<(String, Arc<BackendRt>)>;

fn find_backend(backends: &Backends, name: &str) -> Option<Arc<BackendRt>> {
    backends
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, b)| b.clone())
}

impl Compiler<'_> {
    /// Each `cache` section's objects: those of the running generation
    /// when the section's settings are the same, else a new cache (which
    /// the changes put in the registry).
    fn caches(&mut self) {
        for sec in &self.config.global.caches {
            let cache = match self.registry.find_cache(sec) {
                Some(c) => c,
                None => {
                    let c = Arc::new(crate::state::cache::Cache::new(sec));
                    self.changes.push(StateChange::SetCache(c.clone()));
                    c
                }
            };
            self.caches.push(cache);
        }
    }

    /// The state of frontend `name`: the registry's, or a new one.
    fn frontend_state(&mut self, name: &str) -> Arc<FrontendState> {
        if let Some(st) = self.registry.find_frontend(name) {
            return st;
        }
        if let Some((_, st)) = self.new_frontends.iter().find(|(n, _)| n == name) {
            return st.clone();
        }
        let st = Arc::new(FrontendState::default());
        self.new_frontends.push((name.to_string(), st.clone()));
        self.changes.push(StateChange::AddFrontend {
            name: name.to_string(),
            state: st.clone(),
        });
        st
    }

    /// The state of backend `name`: the registry's, or a new one.
    fn backend_state(&mut self, name: &str) -> Arc<BackendState> {
        if let Some(st) = self.registry.find_backend(name) {
            return st;
        }
        if let Some(st) = self.new_backends.iter().find(|b| b.name == name) {
            return st.clone();
        }
        let st = Arc::new(BackendState::new(name));
        self.new_backends.push(st.clone());
        self.changes.push(StateChange::AddBackend(st.clone()));
        st
    }

    /// Every backend (and `listen`) section, in declaration order.
    fn backends(&mut self) -> Backends {
        let config = self.config;
        config
            .proxies
            .iter()
            .enumerate()
            .filter(|(_, p)| p.kind.has_backend() && !p.disabled)
            .map(|(i, p)| (p.name.clone(), self.backend(self.iids[i], p)))
            .collect()
    }

    /// Every proxy, in declaration order, its frontend pointing at the
    /// backends compiled before.
    fn proxies(&mut self, backends: &Backends) -> Vec<ProxyRt> {
        let config = self.config;
        config
            .proxies
            .iter()
            .enumerate()
            // A disabled proxy is not started: no listener, no row.
            .filter(|(_, p)| !p.disabled)
            .map(|(i, p)| {
                let iid = self.iids[i];
                let backend = if p.kind.has_backend() {
                    find_backend(backends, &p.name)
                } else {
                    None
                };
                let frontend = p
                    .kind
                    .has_frontend()
                    .then(|| self.frontend(iid, p, backend.as_ref(), backends));
                ProxyRt {
                    name: p.name.clone(),
                    iid,
                    frontend,
                    backend,
                    description: p.extras.description.clone(),
                }
            })
            .collect()
    }

    /// The stick tables, in declaration order: the registry's when their
    /// definition is unchanged (entries kept), else new ones; tables no
    /// longer configured leave the registry.
    fn tables(&mut self) -> crate::state::table::registry::Tables {
        use crate::state::table::Table;
        let defs: Vec<&crate::config::model::TableDef> =
            crate::config::table_check::all_tables(self.config).collect();
        let mut out = Vec::new();
        for name in &self.config.global.table_order {
            let Some(def) = defs.iter().find(|d| d.name == *name) else {
                continue;
            };
            let old = self.registry.tables.find(name);
            let t = match old {
                Some(t) if t.def.same_as(def) => t,
                old => {
                    let t = Arc::new(Table::new((*def).clone()));
                    self.changes.push(StateChange::AddTable {
                        table: t.clone(),
                        replaced: old.is_some(),
                    });
                    t
                }
            };
            out.push(t);
        }
        for name in self.registry.tables.names() {
            if !self.config.global.table_order.contains(&name) {
                self.changes.push(StateChange::RemoveTable(name));
            }
        }
        crate::state::table::registry::Tables::new(out)
    }

    /// Servers the registry has in service that the configuration no longer
    /// names (in a backend kept or gone): retired by the changes.
    fn removed_servers(&mut self) {
        for be in self.registry.backends() {
            let kept = self
                .config
                .proxies
                .iter()
                .find(|p| p.kind.has_backend() && p.name == be.name);
            for s in be.live_servers() {
                if !kept.is_some_and(|p| p.servers.iter().any(|c| c.name == s.name)) {
                    self.changes.push(StateChange::RemoveServer(s));
                }
            }
        }
    }

    /// The servers of backend section `p`, their state found by name in
    /// `state` or built.
    fn servers(&mut self, p: &Proxy, state: &Arc<BackendState>) -> Vec<ServerRt> {
        let sids = server_ids(&p.servers);
        p.servers
            .iter()
            .zip(sids)
            .map(|(s, sid)| {
                let want = server_settings(p, s);
                let st = match state.find_server(&s.name) {
                    Some(st) => {
                        want.changes_from(&st, &mut self.changes);
                        st
                    }
                    None => {
                        let st = Arc::new(want.build(&p.name, &s.name));
                        self.changes.push(StateChange::AddServer {
                            backend: state.clone(),
                            server: st.clone(),
                            start: if s.opts.disabled {
                                StartAdmin::Disabled
                            } else if s.opts.dynamic && !s.opts.enabled {
                                StartAdmin::Added
                            } else {
                                StartAdmin::Ready
                            },
                        });
                        st
                    }
                };
                server_rt(s, sid, st)
            })
            .collect()
    }

    /// A backend (or `listen`) section's backend side.
    fn backend(&mut self, iid: u32, p: &Proxy) -> Arc<BackendRt> {
        let config = self.config;
        let state = self.backend_state(&p.name);
        let servers = self.servers(p, &state);
        let lb_servers: Vec<_> = servers
            .iter()
            .zip(&p.servers)
            .map(|(s, c)| (s.sid, s.weight, s.backup, c.opts.slowstart))
            .collect();
        let acls = AclSet::new(&p.acls);
        let stick = self.stick_rules(p, &acls, false);
        let store_response = self.stick_rules(p, &acls, true);
        let fcgi = p.extras.use_fcgi_app.as_deref().and_then(|name| {
            let app = config.global.fcgi_apps.iter().find(|a| a.name == name)?;
            Some(Arc::new(fcgi::compile(app)))
        });
        Arc::new(BackendRt {
            fcgi,
            spoe: spoe_rt(p, &config.global.log),
            restrict_hdr_names: p.restrict_hdr_names,
            name: p.name.clone(),
            iid,
            max_head: config.global.max_head(),
            bufsize: config.global.bufsize(),
            state,
            mode: p.mode,
            timeouts: p.timeouts,
            retries: p.retries,
            tcpka: p.tcpka.server,
            extras: Arc::new(p.extras.compiled()),
            use_servers: p
                .extras
                .use_servers
                .iter()
                .filter_map(|u| {
                    let i = p.servers.iter().position(|s| s.name == u.server)?;
                    Some((i, acls.compile(&u.cond)))
                })
                .collect(),
            persist_rules: p
                .extras
                .persist_rules
                .iter()
                .map(|r| (r.force, acls.compile(&r.cond)))
                .collect(),
            redispatch: p.redispatch,
            retry_on: p.retry_on,
            http_reuse: p.http_reuse,
            conn_mode: p.conn_mode,
            buffer_request: p.buffer_request,
            balance: p.balance.clone(),
            lb: Lb::new(&p.balance, p.hash_type, p.allbackups, &lb_servers),
            check: p.check_kind(),
            log_health_checks: p.log_health_checks,
            email_alert: crate::config::mailers::Alerting::compile(config, &p.email_alert)
                .map(Arc::new),
            accept_invalid_resp: p.accept_invalid_resp,
            case_server: self.case_adjust.clone().filter(|_| p.h1_case_bogus_server),
            tcp_content: tcp_rules(&p.tcp_content, &acls),
            tcp_response: tcp_rules(&p.tcp_response, &acls),
            res_inspect_delay: p.res_inspect_delay,
            inspect_delay: p.inspect_delay,
            http_request: request_rules(p, &acls),
            legacy_at: p.blocks.len() + p.http_request.len(),
            legacy_req: LegacyRt::compile(&p.legacy_req, &acls),
            legacy_rsp: LegacyRt::compile(&p.legacy_rsp, &acls),
            comp: comp_rt(p, &config.global),
            caches: if p
                .filters
                .iter()
                .any(|f| matches!(f.kind, crate::config::model::FilterKind::Cache(_)))
            {
                self.caches.clone()
            } else {
                Vec::new()
            },
            http_response: response_rules(&p.http_response, &acls),
            rsp_waits: p.http_response.iter().any(|r| r.action.waits()),
            http_after: response_rules(&p.http_after_response, &acls),
            stats: stats_rt(p.stats.as_ref(), &acls),
            acls,
            forwardfor: p.forwardfor.clone(),
            errorfiles: p.errorfiles.clone(),
            redirs: servers.iter().any(|s| s.redir.is_some()),
            servers,
            log: log_setup::LogSetup::compile(&p.log, &config.global.log).map(Arc::new),
            fullconn: p
                .fullconn
                .unwrap_or_else(|| fullconn_for(config, &p.name, self.global_maxconn)),
            cookie: p.cookie.clone(),
            persist: p.persist,
            stick,
            store_response,
        })
    }

    /// A backend's `stick` rules: the request's (`match`, `on`,
    /// `store-request`) or the response's (`store-response`); one whose
    /// table is missing (the configuration was refused then) is left out.
    fn stick_rules(&self, p: &Proxy, acls: &AclSet, response: bool) -> Vec<StickRt> {
        use crate::config::model::StickKind;
        p.stick_rules
            .iter()
            .filter(|r| (r.kind == StickKind::StoreResponse) == response)
            .filter_map(|r| {
                Some(StickRt {
                    kind: r.kind,
                    key: r.key.clone(),
                    table: self.tables.get(&r.table)?.clone(),
                    cond: r.cond.as_ref().map(|c| acls.compile(c)),
                })
            })
            .collect()
    }

    /// A frontend (or `listen`) section's frontend side; `own` is the
    /// backend side of a `listen` section.
    fn frontend(
        &mut self,
        iid: u32,
        p: &Proxy,
        own: Option<&Arc<BackendRt>>,
        backends: &Backends,
    ) -> Arc<FrontendRt> {
        let config = self.config;
        let acls = AclSet::new(&p.acls);
        let monitor = p.monitor_uri.clone().map(|uri| {
            let fail = p.monitor_fail.as_ref().map(|c| acls.compile(c));
            (uri, fail)
        });
        let switching = p
            .use_backends
            .iter()
            .filter_map(|u| {
                let to = match &u.dynamic {
                    Some(fmt) => Switch::Named(fmt.clone()),
                    None => Switch::To(find_backend(backends, &u.backend)?),
                };
                Some((to, acls.compile(&u.cond)))
            })
            .collect();
        let by_name = p
            .use_backends
            .iter()
            .any(|u| u.dynamic.is_some())
            .then(|| Arc::new(backends.iter().cloned().collect()));
        // A listen section's default backend is itself.
        let default_backend = match &p.default_backend {
            Some((name, _)) => find_backend(backends, name),
            None if p.kind == ProxyKind::Listen => own.cloned(),
            None => None,
        };
        Arc::new(FrontendRt {
            spoe: spoe_rt(p, &config.global.log),
            name: p.name.clone(),
            iid,
            tls_binds: tls_binds(p),
            max_head: config.global.max_head(),
            max_hdr: config.global.max_hdr,
            payload_any_method: config.global.h1_accept_payload_with_any_method,
            log_uri_len: config.global.log_uri_len.unwrap_or(1024),
            bufsize: config.global.bufsize(),
            splice: config.global.splice(),
            state: self.frontend_state(&p.name),
            mode: p.mode,
            maxconn: p.maxconn.unwrap_or(self.global_maxconn),
            timeouts: p.timeouts,
            conn_mode: p.conn_mode,
            ignore_probes: p.ignore_probes,
            buffer_request: p.buffer_request,
            disable_h2_upgrade: p.disable_h2_upgrade,
            accept_invalid_req: p.accept_invalid_req,
            restrict_hdr_names: p.restrict_hdr_names,
            case_client: self.case_adjust.clone().filter(|_| p.h1_case_bogus_client),
            // An inherited `fd@` socket is a listener too (HAProxy counts
            // it in `show info` and numbers it among the frontend's).
            listeners: listeners(p),
            accept_proxy: p
                .binds
                .iter()
                .filter(|b| b.accept_proxy)
                .flat_map(listening_addrs)
                .collect(),
            bind_protos: p
                .binds
                .iter()
                .filter(|b| b.proto != crate::config::model::BindProto::Auto)
                .flat_map(|b| listening_addrs(b).into_iter().map(move |a| (a, b.proto)))
                .collect(),
            bind_maxconn: p
                .binds
                .iter()
                .filter_map(|b| Some((b, b.sock.maxconn?)))
                .flat_map(|(b, n)| listening_addrs(b).into_iter().map(move |a| (a, n)))
                .collect(),
            h2: h2_limits::Limits::of(&config.global),
            tcp_connection: tcp_rules(&p.tcp_connection, &acls),
            tcp_session: tcp_rules(&p.tcp_session, &acls),
            tcp_content: tcp_rules(&p.tcp_content, &acls),
            inspect_delay: p.inspect_delay,
            legacy_at: p.blocks.len() + p.http_request.len(),
            legacy_req: LegacyRt::compile(&p.legacy_req, &acls),
            legacy_rsp: LegacyRt::compile(&p.legacy_rsp, &acls),
            http_request: request_rules(p, &acls),
            comp: comp_rt(p, &config.global),
            caches: if p
                .filters
                .iter()
                .any(|f| matches!(f.kind, crate::config::model::FilterKind::Cache(_)))
            {
                self.caches.clone()
            } else {
                Vec::new()
            },
            http_response: response_rules(&p.http_response, &acls),
            rsp_waits: p.http_response.iter().any(|r| r.action.waits()),
            http_after: response_rules(&p.http_after_response, &acls),
            stats: stats_rt(p.stats.as_ref(), &acls),
            acls,
            monitor,
            tcpka: p.tcpka.client,
            extras: Arc::new(p.extras.compiled()),
            captures: p.captures.clone(),
            // Checked by the parser: a format that does not compile is
            // none.
            unique_id: p
                .unique_id_format
                .as_deref()
                .and_then(|f| {
                    crate::config::log_format::LogFormat::compile_other(
                        f,
                        crate::sample::Stage::ANY,
                    )
                    .ok()
                })
                .map(|format| UniqueId {
                    format,
                    header: p.unique_id_header.clone(),
                }),
            switching,
            by_name,
            default_backend,
            forwardfor: p.forwardfor.clone(),
            errorfiles: p.errorfiles.clone(),
            log: log_setup::FrontendLog::compile(&p.name, &p.log, &config.global.log),
        })
    }
}

/// The addresses a bind line listens on: an inherited socket (`fd@n`)
/// stands for the address it was found listening on.
/// The listening addresses of proxy `p`, numbered as HAProxy numbers
/// them: an `id` given is the listener's; the others take, in order, the
/// first id not given nor taken from a counter that goes up by one at
/// every listener (`so_id`).
fn listeners(p: &Proxy) -> Vec<(ListenAddr, Arc<crate::sample::conn::Listener>)> {
    let mut used: std::collections::HashSet<u32> = p.binds.iter().filter_map(|b| b.id).collect();
    let frontend: Arc<str> = Arc::from(p.name.as_str());
    let mut next = 1u32;
    let mut out = Vec::new();
    for b in &p.binds {
        for a in listening_addrs(b) {
            let id = match b.id {
                Some(id) => id,
                None => {
                    while used.contains(&next) {
                        next += 1;
                    }
                    used.insert(next);
                    next
                }
            };
            next += 1;
            let l = crate::sample::conn::Listener::new(
                frontend.clone(),
                i64::from(id),
                b.name.as_deref(),
            );
            out.push((a, Arc::new(l)));
        }
    }
    out
}

fn listening_addrs(b: &crate::config::model::Bind) -> Vec<ListenAddr> {
    if let Some(u) = &b.unix {
        return vec![ListenAddr::Unix(u.name.clone())];
    }
    match b.fd {
        Some(fd) => crate::state::inherited::addr_of(fd).into_iter().collect(),
        None => b.addrs.iter().copied().map(ListenAddr::Ip).collect(),
    }
}

/// What server line `s` of backend `p` wants of the server's runtime state.
fn server_settings(p: &Proxy, s: &crate::config::model::Server) -> ServerSettings {
    use crate::config::model::Observe;
    let params = s.check.unwrap_or_default();
    // A backup server's sessions are cut when an active server of its
    // backend comes UP with `on-marked-up shutdown-backup-sessions`.
    let cut_by_active = s.opts.backup
        && p.servers
            .iter()
            .any(|o| !o.opts.backup && o.opts.shutdown_backup_on_up);
    ServerSettings {
        addr: s.addr,
        unix: s.unix.clone(),
        tls: s.tls.clone(),
        mux: if s.opts.h2 {
            crate::state::pool::Mux::H2
        } else if s.opts.fcgi {
            crate::state::pool::Mux::Fcgi
        } else {
            crate::state::pool::Mux::H1
        },
        checked: s.check.is_some(),
        rise: params.rise,
        fall: params.fall,
        weight: s.weight,
        maxconn: s.maxconn,
        observe: match s.opts.observe {
            None => 0,
            Some(Observe::Layer4) => crate::state::OBSERVE_L4,
            Some(Observe::Layer7) => crate::state::OBSERVE_L7,
        },
        send_proxy: s.opts.send_proxy,
        pool_max: s.opts.pool_max_conn.unwrap_or(u32::MAX),
        shutdown_on_down: s.opts.shutdown_on_down,
        cuttable: s.opts.shutdown_on_down || cut_by_active,
        checks_enabled: !s.opts.dynamic,
        fqdn: s.fqdn.clone(),
        no_addr: s.unix.is_none()
            && s.addr.ip().is_unspecified()
            && (s.fqdn.is_some() || s.srvrecord.is_some()),
        resolved: s.resolve.is_some(),
        srv_slot: s.srvrecord.is_some(),
        agent: s.agent.as_ref().map(|a| crate::state::AgentTarget {
            addr: a.addr,
            port: a.port,
            send: a.send.clone(),
        }),
    }
}

/// A server of the snapshot, over its runtime state `st`.
fn server_rt(s: &crate::config::model::Server, sid: u32, st: Arc<ServerState>) -> ServerRt {
    let minconn = if s.opts.minconn == 0 {
        s.maxconn
    } else {
        s.opts.minconn.min(s.maxconn)
    };
    ServerRt {
        sid,
        name: s.name.clone(),
        state: st,
        weight: s.weight,
        check: s.check,
        backup: s.opts.backup,
        minconn,
        maxqueue: s.opts.maxqueue,
        slowstart_secs: s.opts.slowstart.map_or(0, |d| d.as_secs().max(1) as u32),
        opts: s.opts,
        cookie: s.cookie.as_deref().map(Box::from),
        check_tls: s.check_tls.clone(),
        resolve: s.resolve.clone(),
        srvrecord: s.srvrecord.as_deref().map(Arc::from),
        redir: s.redir.as_deref().map(Arc::from),
        agent_inter: s
            .agent
            .as_ref()
            .map(|a| a.inter.unwrap_or(std::time::Duration::from_secs(2))),
    }
}

/// A section's stats page with its `stats admin` conditions compiled
/// against the section's ACLs.
#[derive(Debug)]
pub(crate) struct StatsRt {
    pub(crate) page: StatsPage,
    pub(crate) admin: Vec<CompiledCond>,
    /// `stats http-request` rules.
    pub(crate) rules: Vec<(crate::config::model::StatsAction, Option<CompiledCond>)>,
}

fn stats_rt(page: Option<&StatsPage>, acls: &AclSet) -> Option<StatsRt> {
    let page = page?;
    Some(StatsRt {
        admin: page.admin.iter().map(|c| acls.compile(c)).collect(),
        rules: page
            .rules
            .iter()
            .map(|(a, c)| (a.clone(), c.as_ref().map(|c| acls.compile(c))))
            .collect(),
        page: page.clone(),
    })
}

/// A proxy's SPOE engines, each with its own connections to its agents.
fn spoe_rt(p: &Proxy, log: &crate::config::log::GlobalLog) -> Vec<Arc<spoe::SpoeRt>> {
    p.extras
        .spoe
        .iter()
        .map(|e| {
            let log = log_setup::LogSetup::compile(&e.log, log);
            Arc::new(spoe::SpoeRt::new(
                e.clone(),
                p.kind == ProxyKind::Listen,
                log,
            ))
        })
        .collect()
}

fn tcp_rules(rules: &[crate::config::model::TcpRule], acls: &AclSet) -> TcpRules {
    rules
        .iter()
        .map(|r| (r.action.clone(), r.cond.as_ref().map(|c| acls.compile(c))))
        .collect()
}

/// A proxy's `http-request` rules, then its `redirect` rules (HAProxy
/// processes them in that order).
fn request_rules(
    p: &crate::config::model::Proxy,
    acls: &AclSet,
) -> Vec<(HttpRequestAction, Option<CompiledCond>)> {
    p.blocks
        .iter()
        .chain(&p.http_request)
        .chain(&p.redirects)
        .map(|r| (r.action.clone(), r.cond.as_ref().map(|c| acls.compile(c))))
        .collect()
}

fn response_rules(
    rules: &[crate::config::model::HttpResponseRule],
    acls: &AclSet,
) -> Vec<(HttpResponseAction, Option<CompiledCond>)> {
    rules
        .iter()
        .map(|r| (r.action.clone(), r.cond.as_ref().map(|c| acls.compile(c))))
        .collect()
}

/// Server ids (`puid`, the `sid` column): `id <n>` where given, the others
/// numbered in declaration order from 1, skipping ids already taken
/// (HAProxy's `get_next_id`).
fn server_ids(servers: &[crate::config::model::Server]) -> Vec<u32> {
    let used: std::collections::BTreeSet<u32> = servers.iter().filter_map(|s| s.id).collect();
    let mut taken = used.clone();
    let mut next = 1u32;
    servers
        .iter()
        .map(|s| {
            let id = match s.id {
                Some(id) => id,
                None => {
                    while taken.contains(&next) {
                        next += 1;
                    }
                    taken.insert(next);
                    next
                }
            };
            next += 1;
            id
        })
        .collect()
}

/// HAProxy's default `fullconn`: 10% of the summed maxconn of the
/// frontends that can route to this backend (at least 1).
fn fullconn_for(config: &Config, backend: &str, global_maxconn: u32) -> u32 {
    let sum: u64 = config
        .proxies
        .iter()
        .filter(|p| p.kind.has_frontend())
        .filter(|p| {
            p.name == backend && p.kind == ProxyKind::Listen
                || p.default_backend
                    .as_ref()
                    .is_some_and(|(b, _)| b == backend)
                || p.use_backends.iter().any(|u| u.backend == backend)
        })
        .map(|p| p.maxconn.unwrap_or(global_maxconn) as u64)
        .sum();
    ((sum / 10) as u32).max(1)
}

/// A frontend's captures are its refused requests.
impl crate::state::capture::CaptureSide for FrontendRt {
    fn named(&self) -> (String, u32) {
        (self.name.clone(), self.iid)
    }
    fn bufsize(&self) -> usize {
        self.bufsize
    }
    fn slot(&self) -> &crate::state::capture::ErrorSlot {
        &self.state.errors
    }
}

/// A backend's captures are its servers' refused responses.
impl crate::state::capture::CaptureSide for BackendRt {
    fn named(&self) -> (String, u32) {
        (self.name.clone(), self.iid)
    }
    fn bufsize(&self) -> usize {
        self.bufsize
    }
    fn slot(&self) -> &crate::state::capture::ErrorSlot {
        &self.state.errors
    }
    fn server_id(&self, server: &ServerState) -> u32 {
        self.servers
            .iter()
            .find(|s| std::ptr::eq(Arc::as_ptr(&s.state), server))
            .map_or(0, |s| s.sid)
    }
}

impl Snapshot {
    pub(crate) fn frontends(&self) -> impl Iterator<Item = &Arc<FrontendRt>> {
        self.proxies.iter().filter_map(|p| p.frontend.as_ref())
    }

    pub(crate) fn backends(&self) -> impl Iterator<Item = &Arc<BackendRt>> {
        self.proxies.iter().filter_map(|p| p.backend.as_ref())
    }

    pub(crate) fn backend(&self, name: &str) -> Option<&Arc<BackendRt>> {
        self.backends().find(|b| b.name == name)
    }
}

/// The TLS configurations of a proxy's listening addresses.
fn tls_binds(p: &crate::config::model::Proxy) -> Vec<(ListenAddr, Arc<crate::tls::ListenTls>)> {
    let mut out = Vec::new();
    for b in &p.binds {
        let Some(tls) = &b.tls else { continue };
        for a in listening_addrs(b) {
            out.push((a, tls.clone()));
        }
    }
    out
}

/// A proxy's compression settings, compiled (HTTP proxies only).
fn comp_rt(
    p: &crate::config::model::Proxy,
    g: &crate::config::model::Global,
) -> Option<Box<filters::CompRt>> {
    let c = p.compression.as_ref().filter(|_| p.mode == Mode::Http)?;
    Some(Box::new(filters::CompRt::compile(
        c,
        g.comp_maxlevel.unwrap_or(1),
    )))
}
