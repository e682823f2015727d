//! Compiles a [`Config`] into one immutable routing snapshot. A request
//! loads the current snapshot once and uses it to the end; a reload builds
//! a new one over the same runtime state and swaps it in.

pub(crate) mod diff;
pub mod runtime;

use std::net::SocketAddr;
use std::sync::Arc;

use crate::acl::eval::{AclSet, CompiledCond};
use crate::config::model::{
    Balance, CheckKind, CheckParams, Config, ForwardFor, Global, HttpConnMode, HttpRequestAction,
    HttpResponseAction, HttpReuse, Mode, ProxyKind, StatsPage, Timeouts,
};
use crate::http::legacy::LegacyRt;
use crate::state::{BackendState, FrontendState, Registry, ServerState};
use crate::upstream::balance::Lb;

#[derive(Debug)]
pub(crate) struct Snapshot {
    pub(crate) generation: u64,
    pub(crate) global: Global,
    /// Every proxy in declaration order, as `show stat` lists them.
    pub(crate) proxies: Vec<ProxyRt>,
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
}

#[derive(Debug)]
pub(crate) struct FrontendRt {
    pub(crate) name: String,
    pub(crate) iid: u32,
    /// The TLS configuration of each `bind ... ssl` address (a listener
    /// finds its own here at each accept, so a reload's certificates serve
    /// the next handshake).
    pub(crate) tls_binds: Vec<(std::net::SocketAddr, Arc<crate::tls::ListenTls>)>,
    /// Largest request head (tune.bufsize - tune.maxrewrite).
    pub(crate) max_head: usize,
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
    /// `option disable-h2-upgrade`.
    pub(crate) disable_h2_upgrade: bool,
    /// `option accept-invalid-http-request`.
    pub(crate) accept_invalid_req: bool,
    pub(crate) binds: Vec<SocketAddr>,
    /// Listening addresses with `accept-proxy`.
    pub(crate) accept_proxy: Vec<SocketAddr>,
    /// Listening addresses with `proto h1` or `proto h2`.
    pub(crate) bind_protos: Vec<(SocketAddr, crate::config::model::BindProto)>,
    /// The HTTP/2 settings and limits of its connections.
    pub(crate) h2: crate::http::h2::Limits,
    /// `tcp-request connection` / `content` rules, `inspect-delay`.
    pub(crate) tcp_connection: crate::tcp::rules::Rules,
    pub(crate) tcp_content: crate::tcp::rules::Rules,
    pub(crate) inspect_delay: Option<std::time::Duration>,
    pub(crate) acls: AclSet,
    /// `block`, `http-request` and `redirect` rules, in that order.
    pub(crate) http_request: Vec<(HttpRequestAction, Option<CompiledCond>)>,
    /// `option clitcpka` (or `tcpka`): SO_KEEPALIVE on client connections.
    pub(crate) tcpka: bool,
    /// `capture request|response header` for the access log.
    pub(crate) captures: crate::config::model::HeaderCaptures,
    /// Where in `http_request` the legacy `req*` filters run (before the
    /// `redirect` rules).
    pub(crate) legacy_at: usize,
    /// `reqadd`, `reqrep`... (None without any).
    pub(crate) legacy_req: Option<Box<LegacyRt>>,
    /// `rspadd`, `rsprep`... (None without any).
    pub(crate) legacy_rsp: Option<Box<LegacyRt>>,
    /// `monitor-uri`, with the `monitor fail` condition.
    pub(crate) monitor: Option<(String, Option<CompiledCond>)>,
    pub(crate) switching: Vec<(Arc<BackendRt>, CompiledCond)>,
    pub(crate) default_backend: Option<Arc<BackendRt>>,
    pub(crate) http_response: Vec<(HttpResponseAction, Option<CompiledCond>)>,
    pub(crate) forwardfor: Option<ForwardFor>,
    /// `errorfile`: complete responses by status.
    pub(crate) errorfiles: Vec<(u16, bytes::Bytes)>,
    pub(crate) stats: Option<StatsRt>,
    /// Access log, when the frontend has somewhere to log to.
    pub(crate) log: Option<Arc<crate::observe::log::FrontendLog>>,
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
    /// `option redispatch [<interval>]` (None: off).
    pub(crate) redispatch: Option<i32>,
    pub(crate) retry_on: crate::config::model::RetryOn,
    pub(crate) http_reuse: HttpReuse,
    pub(crate) conn_mode: HttpConnMode,
    pub(crate) balance: Balance,
    pub(crate) servers: Vec<ServerRt>,
    /// Balancing state (algorithm, map/ring, round-robin position).
    pub(crate) lb: Lb,
    /// What active checks do (TCP connect, `option httpchk`, `tcp-check`).
    pub(crate) check: CheckKind,
    /// `option log-health-checks`.
    pub(crate) log_health_checks: bool,
    /// `option accept-invalid-http-response`.
    pub(crate) accept_invalid_resp: bool,
    /// The backend's own ACLs, for its rules' conditions.
    pub(crate) acls: AclSet,
    /// `block`, `http-request` and `redirect` rules of a backend section,
    /// run after the frontend's.
    pub(crate) http_request: Vec<(HttpRequestAction, Option<CompiledCond>)>,
    /// See [`FrontendRt::legacy_at`].
    pub(crate) legacy_at: usize,
    pub(crate) legacy_req: Option<Box<LegacyRt>>,
    pub(crate) legacy_rsp: Option<Box<LegacyRt>>,
    pub(crate) http_response: Vec<(HttpResponseAction, Option<CompiledCond>)>,
    /// `tcp-request content` rules of a backend section (mode tcp), run
    /// after the frontend's once the backend is chosen.
    pub(crate) tcp_content: crate::tcp::rules::Rules,
    pub(crate) forwardfor: Option<ForwardFor>,
    pub(crate) errorfiles: Vec<(u16, bytes::Bytes)>,
    pub(crate) stats: Option<StatsRt>,
    /// Targets of state-change events (`log` lines), if any.
    pub(crate) log: Option<Arc<crate::observe::log::LogSetup>>,
    /// `fullconn`: the BACKEND row's `slim`.
    pub(crate) fullconn: u32,
    /// `cookie <name> ...`: cookie-based persistence (HTTP only).
    pub(crate) cookie: Option<Arc<crate::config::model::CookiePersist>>,
    /// `option persist`: a cookie naming a DOWN server still goes to it.
    pub(crate) persist: bool,
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
}

/// HAProxy's default when neither global nor frontend sets `maxconn`
/// (it derives its own from the fd limit; sluice picks a fixed safe value).
pub(crate) const DEFAULT_MAXCONN: u32 = 4096;

/// Builds the snapshot for `config`, creating or reusing runtime state in
/// `registry` by name.
pub(crate) fn compile(config: &Config, registry: &Registry, generation: u64) -> Snapshot {
    let first_iid = if config.global.stats_sockets.is_empty() {
        1
    } else {
        2
    };
    let global_maxconn = config.global.maxconn.unwrap_or(DEFAULT_MAXCONN);

    // Backends first, so that frontends can point at them.
    let mut backends: Vec<(String, Arc<BackendRt>)> = Vec::new();
    for (i, p) in config.proxies.iter().enumerate() {
        if !p.kind.has_backend() {
            continue;
        }
        let state = registry.backend(&p.name);
        let sids = server_ids(&p.servers);
        let servers: Vec<ServerRt> = p
            .servers
            .iter()
            .enumerate()
            .map(|(j, s)| {
                let params = s.check.unwrap_or_default();
                let fresh = !state.has_server(&s.name);
                let st = state.server(
                    &s.name,
                    s.addr,
                    s.tls.as_ref(),
                    s.opts.h2,
                    s.check.is_some(),
                    params.rise,
                    params.fall,
                );
                st.weight
                    .store(s.weight, std::sync::atomic::Ordering::Relaxed);
                st.maxconn
                    .store(s.maxconn, std::sync::atomic::Ordering::Relaxed);
                st.observe.store(
                    match s.opts.observe {
                        None => 0,
                        Some(crate::config::model::Observe::Layer4) => crate::state::OBSERVE_L4,
                        Some(crate::config::model::Observe::Layer7) => crate::state::OBSERVE_L7,
                    },
                    std::sync::atomic::Ordering::Relaxed,
                );
                st.send_proxy
                    .store(s.opts.send_proxy, std::sync::atomic::Ordering::Relaxed);
                st.shutdown_on_down.store(
                    s.opts.shutdown_on_down,
                    std::sync::atomic::Ordering::Relaxed,
                );
                let cut_by_active = s.opts.backup
                    && p.servers
                        .iter()
                        .any(|o| !o.opts.backup && o.opts.shutdown_backup_on_up);
                st.cuttable.store(
                    s.opts.shutdown_on_down || cut_by_active,
                    std::sync::atomic::Ordering::Relaxed,
                );
                if fresh && s.opts.disabled {
                    // `disabled`: starts in maintenance (a reload keeps the
                    // state an operator set since).
                    st.set_admin(crate::state::AdminState::Maint);
                }
                let minconn = if s.opts.minconn == 0 {
                    s.maxconn
                } else {
                    s.opts.minconn.min(s.maxconn)
                };
                ServerRt {
                    sid: sids[j],
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
                }
            })
            .collect();
        let lb_servers: Vec<_> = servers
            .iter()
            .zip(&p.servers)
            .map(|(s, c)| (s.sid, s.weight, s.backup, c.opts.slowstart))
            .collect();
        let be_acls = AclSet::new(&p.acls);
        let be_request = request_rules(p, &be_acls);
        let be_response = response_rules(&p.http_response, &be_acls);
        let be_stats = stats_rt(p.stats.as_ref(), &be_acls);
        let fullconn = p
            .fullconn
            .unwrap_or_else(|| fullconn_for(config, &p.name, global_maxconn));
        backends.push((
            p.name.clone(),
            Arc::new(BackendRt {
                name: p.name.clone(),
                iid: first_iid + i as u32,
                max_head: config.global.max_head(),
                bufsize: config.global.bufsize(),
                state,
                mode: p.mode,
                timeouts: p.timeouts,
                retries: p.retries,
                tcpka: p.tcpka.server,
                redispatch: p.redispatch,
                retry_on: p.retry_on,
                http_reuse: p.http_reuse,
                conn_mode: p.conn_mode,
                balance: p.balance.clone(),
                lb: Lb::new(&p.balance, p.hash_type, p.allbackups, &lb_servers),
                check: p.check_kind(),
                log_health_checks: p.log_health_checks,
                accept_invalid_resp: p.accept_invalid_resp,
                tcp_content: tcp_rules(&p.tcp_content, &be_acls),
                http_request: be_request,
                legacy_at: p.blocks.len() + p.http_request.len(),
                legacy_req: LegacyRt::compile(&p.legacy_req, &be_acls),
                legacy_rsp: LegacyRt::compile(&p.legacy_rsp, &be_acls),
                acls: be_acls,
                http_response: be_response,
                forwardfor: p.forwardfor.clone(),
                errorfiles: p.errorfiles.clone(),
                servers,
                stats: be_stats,
                log: crate::observe::log::LogSetup::compile(&p.log, &config.global.log)
                    .map(Arc::new),
                fullconn,
                cookie: p.cookie.clone(),
                persist: p.persist,
            }),
        ));
    }
    let find_backend = |name: &str| {
        backends
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.clone())
    };

    let mut proxies = Vec::new();
    for (i, p) in config.proxies.iter().enumerate() {
        let iid = first_iid + i as u32;
        let backend = if p.kind.has_backend() {
            find_backend(&p.name)
        } else {
            None
        };
        let frontend = p.kind.has_frontend().then(|| {
            let acls = AclSet::new(&p.acls);
            let http_request = request_rules(p, &acls);
            let monitor = p.monitor_uri.clone().map(|uri| {
                let fail = p.monitor_fail.as_ref().map(|c| acls.compile(c));
                (uri, fail)
            });
            let switching = p
                .use_backends
                .iter()
                .filter_map(|u| Some((find_backend(&u.backend)?, acls.compile(&u.cond))))
                .collect();
            let fe_response = response_rules(&p.http_response, &acls);
            let fe_stats = stats_rt(p.stats.as_ref(), &acls);
            // A listen section's default backend is itself.
            let default_backend = match &p.default_backend {
                Some((name, _)) => find_backend(name),
                None if p.kind == ProxyKind::Listen => backend.clone(),
                None => None,
            };
            Arc::new(FrontendRt {
                name: p.name.clone(),
                iid,
                tls_binds: tls_binds(p),
                max_head: config.global.max_head(),
                bufsize: config.global.bufsize(),
                splice: config.global.splice(),
                state: registry.frontend(&p.name),
                mode: p.mode,
                maxconn: p.maxconn.unwrap_or(global_maxconn),
                timeouts: p.timeouts,
                conn_mode: p.conn_mode,
                ignore_probes: p.ignore_probes,
                disable_h2_upgrade: p.disable_h2_upgrade,
                accept_invalid_req: p.accept_invalid_req,
                // An inherited `fd@` socket is a listener too (HAProxy counts
                // it in `show info` and numbers it among the frontend's).
                binds: p.binds.iter().flat_map(bind_addrs).collect(),
                accept_proxy: p
                    .binds
                    .iter()
                    .filter(|b| b.accept_proxy)
                    .flat_map(bind_addrs)
                    .collect(),
                bind_protos: p
                    .binds
                    .iter()
                    .filter(|b| b.proto != crate::config::model::BindProto::Auto)
                    .flat_map(|b| bind_addrs(b).into_iter().map(move |a| (a, b.proto)))
                    .collect(),
                h2: crate::http::h2::Limits::of(&config.global),
                tcp_connection: tcp_rules(&p.tcp_connection, &acls),
                tcp_content: tcp_rules(&p.tcp_content, &acls),
                inspect_delay: p.inspect_delay,
                legacy_at: p.blocks.len() + p.http_request.len(),
                legacy_req: LegacyRt::compile(&p.legacy_req, &acls),
                legacy_rsp: LegacyRt::compile(&p.legacy_rsp, &acls),
                acls,
                http_request,
                monitor,
                tcpka: p.tcpka.client,
                captures: p.captures.clone(),
                switching,
                default_backend,
                http_response: fe_response,
                forwardfor: p.forwardfor.clone(),
                errorfiles: p.errorfiles.clone(),
                stats: fe_stats,
                log: crate::observe::log::FrontendLog::compile(&p.log, &config.global.log),
            })
        });
        proxies.push(ProxyRt {
            name: p.name.clone(),
            iid,
            frontend,
            backend,
        });
    }
    Snapshot {
        generation,
        global: config.global.clone(),
        proxies,
    }
}

/// A section's stats page with its `stats admin` conditions compiled
/// against the section's ACLs.
#[derive(Debug)]
pub(crate) struct StatsRt {
    pub(crate) page: StatsPage,
    pub(crate) admin: Vec<CompiledCond>,
}

fn stats_rt(page: Option<&StatsPage>, acls: &AclSet) -> Option<StatsRt> {
    let page = page?;
    Some(StatsRt {
        admin: page.admin.iter().map(|c| acls.compile(c)).collect(),
        page: page.clone(),
    })
}

fn tcp_rules(rules: &[crate::config::model::TcpRule], acls: &AclSet) -> crate::tcp::rules::Rules {
    rules
        .iter()
        .map(|r| (r.action, r.cond.as_ref().map(|c| acls.compile(c))))
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

/// The addresses a `bind` line listens on: those it names, or for `fd@N`
/// the one the inherited socket was found listening on.
fn bind_addrs(b: &crate::config::model::Bind) -> Vec<SocketAddr> {
    match b.fd {
        Some(fd) => crate::frontend::listener::inherited_addr(fd)
            .into_iter()
            .collect(),
        None => b.addrs.clone(),
    }
}

/// The TLS configurations of a proxy's listening addresses.
fn tls_binds(
    p: &crate::config::model::Proxy,
) -> Vec<(std::net::SocketAddr, Arc<crate::tls::ListenTls>)> {
    let mut out = Vec::new();
    for b in &p.binds {
        let Some(tls) = &b.tls else { continue };
        for a in &b.addrs {
            out.push((*a, tls.clone()));
        }
        if let Some(a) = b.fd.and_then(crate::frontend::listener::inherited_addr) {
            out.push((a, tls.clone()));
        }
    }
    out
}
