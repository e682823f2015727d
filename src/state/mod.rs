//! Runtime state that outlives a routing snapshot, keyed by stable names:
//! counters, health, maxconn slots and the queue, idle server connections. A
//! reload compiles a new snapshot that points at the same state objects.

pub(crate) mod cache;
pub(crate) mod capture;
pub(crate) mod change;
pub(crate) mod generation;
pub(crate) mod inherited;
pub(crate) mod pool;
pub(crate) mod ring;
pub(crate) mod sessions;
pub(crate) mod table;

pub(crate) mod counters;
pub(crate) mod health;
pub(crate) mod queue;
pub(crate) mod resolvers;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

pub(crate) use counters::Counters;
pub(crate) use health::Health;
pub(crate) use pool::Pool;
pub(crate) use queue::{Queue, SlotGuard};

/// State of a frontend (the FRONTEND row).
#[derive(Debug, Default)]
pub(crate) struct FrontendState {
    pub(crate) counters: Counters,
    /// What only a frontend counts: its client connections, refused
    /// ones, and the h1/h2 modules' columns.
    pub(crate) client: counters::ClientCounters,
    /// The `maxconn` in force (the configuration's, or `set maxconn
    /// frontend`): the FRONTEND row's `slim`. 0 until the listeners start.
    pub(crate) maxconn_now: std::sync::atomic::AtomicU32,
    /// The last refused request (`show errors`).
    pub(crate) errors: crate::state::capture::ErrorSlot,
    /// Paused or stopped by a script (`Proxy:pause()`, `stop()`): the
    /// FRONTEND row's status.
    admin: std::sync::atomic::AtomicU8,
}

/// Whether a frontend's listeners accept (HAProxy's `OPEN`), were paused
/// (`PAUSED`) or stopped for good (`STOP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrontendAdmin {
    Open,
    Paused,
    Stopped,
}

impl FrontendState {
    pub(crate) fn admin(&self) -> FrontendAdmin {
        match self.admin.load(std::sync::atomic::Ordering::Relaxed) {
            1 => FrontendAdmin::Paused,
            2 => FrontendAdmin::Stopped,
            _ => FrontendAdmin::Open,
        }
    }

    pub(crate) fn set_admin(&self, to: FrontendAdmin) {
        let v = match to {
            FrontendAdmin::Open => 0,
            FrontendAdmin::Paused => 1,
            FrontendAdmin::Stopped => 2,
        };
        self.admin.store(v, std::sync::atomic::Ordering::Relaxed);
    }
}

/// `srv_admin_state` bits (HAProxy's `SRV_ADMF_*`), as `show servers state`
/// prints them. sluice sets the forced ones from the CLI.
pub(crate) const ADMF_FMAINT: u8 = 0x01;
pub(crate) const ADMF_FDRAIN: u8 = 0x08;
/// Maintenance the configuration asked for (`disabled`); `enable server`
/// leaves it set, as HAProxy does.
pub(crate) const ADMF_CMAINT: u8 = 0x04;
/// Maintenance because its name does not resolve (`MAINT (resolution)`).
pub(crate) const ADMF_RMAINT: u8 = 0x20;
/// Its name came from an SRV record (shown, no effect on traffic).
pub(crate) const ADMF_HMAINT: u8 = 0x40;
/// Admin bits that keep a server out of load balancing.
const ADMF_NO_LB: u8 = ADMF_FMAINT | ADMF_FDRAIN | ADMF_RMAINT;

/// The admin state a CLI command asks for (`set server .. state ..`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AdminState {
    Ready,
    Drain,
    Maint,
}

/// State of one server.
#[derive(Debug)]
pub(crate) struct ServerState {
    pub(crate) name: String,
    pub(crate) backend: String,
    pub(crate) counters: Counters,
    pub(crate) health: Health,
    /// Current (user) weight; 0 takes the server out of load balancing.
    pub(crate) weight: AtomicU32,
    /// [`ADMF_FMAINT`] / [`ADMF_FDRAIN`]: maintenance and drain.
    admin: AtomicU8,
    /// Requests being served now, against `maxconn`.
    pub(crate) inflight: AtomicU32,
    /// 0 = unlimited.
    pub(crate) maxconn: AtomicU32,
    /// Idle connections to the server's current address.
    pub(crate) pool: ArcSwap<Pool>,
    /// A checker task runs for this server.
    pub(crate) checker: AtomicBool,
    /// Requests waiting for a slot on this very server (hash-based
    /// balancing), and their wake-up.
    pub(crate) waiters: AtomicU32,
    /// Requests given a slot after waiting for this server (HAProxy's
    /// server queue `idx`), for `%sq`.
    pub(crate) queue_served: AtomicU64,
    pub(crate) released: tokio::sync::Notify,
    /// Consecutive live-traffic errors (`observe`).
    pub(crate) consec_errors: AtomicU32,
    /// Live sessions can be cut (`on-marked-down shutdown-sessions`):
    /// bumped on each cut; a session started under an older value ends.
    pub(crate) kill_epoch: AtomicU32,
    /// A checker asked for a fast check now (`on-error fastinter`).
    pub(crate) check_soon: tokio::sync::Notify,
    /// `observe`: 0 none, [`OBSERVE_L4`] or [`OBSERVE_L7`] (set from the
    /// config, read per request).
    pub(crate) observe: AtomicU8,
    /// `on-marked-down shutdown-sessions`.
    pub(crate) shutdown_on_down: AtomicBool,
    /// `send-proxy` (1) / `send-proxy-v2` (2), 0 none (set from the
    /// config, read per connection).
    pub(crate) send_proxy: AtomicU8,
    /// `pool-max-conn`: idle connections kept at most (`u32::MAX`: no
    /// limit of its own).
    pub(crate) pool_max: AtomicU32,
    /// Live sessions listen for [`kill`](Self::kill): the server has
    /// `on-marked-down shutdown-sessions`, or it is a backup of a backend
    /// where an active server has `on-marked-up shutdown-backup-sessions`.
    pub(crate) cuttable: AtomicBool,
    /// Wakes the sessions to cut when the server goes DOWN.
    pub(crate) kill: tokio::sync::Notify,
    /// Removed by a reload: no new request goes to it; the requests it
    /// serves finish, and its slots are not handed to queued requests.
    retired: AtomicBool,
    /// The host name its address comes from (`srv_fqdn`), if any: the
    /// configuration's, or the CLI's `set server .. fqdn`.
    pub(crate) fqdn: arc_swap::ArcSwapOption<String>,
    /// Added by the CLI and never in service since: `show stat` shows the
    /// effective weight HAProxy gives such a server before computing one
    /// (1, whatever its `weight`).
    pub(crate) fresh_weight: AtomicBool,
    /// No address to connect to (see [`has_addr`](Self::has_addr)).
    pub(crate) no_addr: AtomicBool,
    /// Where the agent check goes and what it sends (the configuration's,
    /// or the CLI's `set server .. agent-addr|agent-port|agent-send`).
    pub(crate) agent_target: Mutex<AgentTarget>,
    /// An agent task runs for this server.
    pub(crate) agent_task: AtomicBool,
}

/// The agent check's peer and request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AgentTarget {
    /// `agent-addr` (else the server's address).
    pub(crate) addr: Option<std::net::IpAddr>,
    pub(crate) port: u32,
    pub(crate) send: String,
}

pub(crate) const OBSERVE_L4: u8 = 1;
pub(crate) const OBSERVE_L7: u8 = 2;

impl ServerState {
    pub(crate) fn new(
        backend: &str,
        name: &str,
        addr: SocketAddr,
        checked: bool,
        rise: u32,
        fall: u32,
    ) -> Self {
        ServerState {
            name: name.to_string(),
            backend: backend.to_string(),
            counters: Counters::default(),
            health: Health::new(checked, rise, fall),
            weight: AtomicU32::new(1),
            admin: AtomicU8::new(0),
            inflight: AtomicU32::new(0),
            maxconn: AtomicU32::new(0),
            pool: ArcSwap::from_pointee(Pool::new(addr, None, Default::default())),
            checker: AtomicBool::new(false),
            waiters: AtomicU32::new(0),
            queue_served: AtomicU64::new(0),
            released: tokio::sync::Notify::new(),
            consec_errors: AtomicU32::new(0),
            kill_epoch: AtomicU32::new(0),
            check_soon: tokio::sync::Notify::new(),
            observe: AtomicU8::new(0),
            shutdown_on_down: AtomicBool::new(false),
            send_proxy: AtomicU8::new(0),
            pool_max: AtomicU32::new(u32::MAX),
            cuttable: AtomicBool::new(false),
            kill: tokio::sync::Notify::new(),
            retired: AtomicBool::new(false),
            fqdn: arc_swap::ArcSwapOption::empty(),
            fresh_weight: AtomicBool::new(false),
            no_addr: AtomicBool::new(false),
            agent_target: Mutex::new(AgentTarget::default()),
            agent_task: AtomicBool::new(false),
        }
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.pool.load().addr()
    }

    /// Has an address to connect to: not a host name left unresolved
    /// (`init-addr none`, a dynamic server's FQDN, a name the DNS no
    /// longer answers), shown as none.
    pub(crate) fn has_addr(&self) -> bool {
        !self.no_addr.load(Relaxed)
    }

    /// The DNS gave no address (or took it back): none is shown, the port
    /// is kept.
    pub(crate) fn clear_addr(&self) {
        let port = self.addr().port();
        self.set_addr(SocketAddr::new(
            std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            port,
        ));
        self.no_addr.store(true, Relaxed);
    }

    pub(crate) fn inflight(&self) -> u32 {
        self.inflight.load(Relaxed)
    }

    /// Takes part in load balancing: neither in maintenance nor draining,
    /// UP (not NOLB) and a non-zero weight. Relaxed loads only.
    #[inline]
    pub(crate) fn usable(&self) -> bool {
        !self.retired.load(Relaxed)
            && self.admin.load(Relaxed) & ADMF_NO_LB == 0
            && self.health.is_running()
            && self.weight.load(Relaxed) > 0
    }

    /// Takes the requests a persistence cookie sends to it (HAProxy: not
    /// `SRV_ST_STOPPED`): UP or NOLB, not in maintenance; a draining
    /// server keeps its persistent sessions.
    #[inline]
    pub(crate) fn takes_persistent(&self) -> bool {
        !self.retired.load(Relaxed)
            && self.admin.load(Relaxed) & ADMF_FMAINT == 0
            && self.health.is_up()
    }

    /// The weight load balancing uses now: the current weight when
    /// [`usable`](Self::usable), else 0.
    #[inline]
    pub(crate) fn lb_weight(&self) -> u32 {
        if self.admin.load(Relaxed) & ADMF_NO_LB != 0
            || !self.health.is_running()
            || self.retired.load(Relaxed)
        {
            return 0;
        }
        self.weight.load(Relaxed)
    }

    /// `srv_admin_state` bits.
    pub(crate) fn admin(&self) -> u8 {
        self.admin.load(Relaxed)
    }

    /// In maintenance, forced or for want of an address.
    pub(crate) fn is_maint(&self) -> bool {
        self.admin() & (ADMF_FMAINT | ADMF_RMAINT) != 0
    }

    /// `MAINT (resolution)` on (`why`: HAProxy's reason, told by the
    /// caller) or off. Entering it takes the server out as forced
    /// maintenance does (checks paused, DOWN, idle connections closed);
    /// leaving it brings it back unless it is also in forced maintenance.
    /// Returns whether the bit changed.
    pub(crate) fn set_rmaint(&self, on: bool) -> bool {
        let before = self.admin();
        if on == (before & ADMF_RMAINT != 0) {
            return false;
        }
        if on {
            self.admin.fetch_or(ADMF_RMAINT, Relaxed);
            if before & ADMF_FMAINT == 0 {
                self.health.enter_maint();
                self.pool.load().drop_idle();
            }
        } else {
            if before & ADMF_FMAINT == 0 {
                self.health.leave_maint(before & ADMF_CMAINT != 0);
            }
            self.admin.fetch_and(!ADMF_RMAINT, Relaxed);
        }
        true
    }

    /// Sets or clears the admin bits of `mask` that carry no behaviour
    /// (`ADMF_HMAINT`).
    pub(crate) fn set_admin_flag(&self, mask: u8, on: bool) {
        if on {
            self.admin.fetch_or(mask, Relaxed);
        } else {
            self.admin.fetch_and(!mask, Relaxed);
        }
    }

    pub(crate) fn is_drain(&self) -> bool {
        self.admin() & ADMF_FDRAIN != 0
    }

    /// A new server that starts in maintenance: `config` for `disabled`
    /// (HAProxy's `CMAINT`: checks paused), else one the CLI added (forced
    /// maintenance, checks not paused). Unlike entering maintenance later,
    /// no down period starts and no `chkdown` is counted.
    pub(crate) fn start_maint(&self, config: bool) {
        let bits = if config {
            ADMF_FMAINT | ADMF_CMAINT
        } else {
            ADMF_FMAINT
        };
        self.admin.fetch_or(bits, Relaxed);
        self.health.start_stopped(config);
        self.fresh_weight.store(!config, Relaxed);
    }

    /// `set server .. state ready|drain|maint`, `disable|enable server`.
    /// Maintenance and drain exclude each other, as in HAProxy: entering
    /// one leaves the other. Entering maintenance pauses checks and takes
    /// the server DOWN; leaving it brings it UP at health `rise`. Returns
    /// the admin bits before (the caller tells the change, see
    /// `observe::log::server_state::admin_event`).
    pub(crate) fn set_admin(&self, to: AdminState) -> u8 {
        let bits = match to {
            AdminState::Ready => 0,
            AdminState::Drain => ADMF_FDRAIN,
            AdminState::Maint => ADMF_FMAINT,
        } | (self.admin() & (ADMF_CMAINT | ADMF_RMAINT | ADMF_HMAINT));
        // Out of load balancing first, health after; back in: the reverse.
        if bits & ADMF_FMAINT != 0 {
            let before = self.admin.swap(bits, Relaxed);
            if before & (ADMF_FMAINT | ADMF_RMAINT) == 0 {
                self.health.enter_maint();
                self.pool.load().drop_idle();
            }
            before
        } else {
            if self.admin() & ADMF_FMAINT != 0 && bits & ADMF_RMAINT == 0 {
                // Out of the configuration's maintenance only by a reload:
                // its checks stay paused, as in HAProxy.
                self.health.leave_maint(bits & ADMF_CMAINT != 0);
                self.fresh_weight.store(false, Relaxed);
            }
            let before = self.admin.swap(bits, Relaxed);
            if (before ^ bits) & ADMF_FDRAIN != 0 {
                // Entering or leaving drain is a state change (`lastchg`).
                self.health.touch();
            }
            before
        }
    }

    /// The `status` column of `show stat`.
    pub(crate) fn status_text(&self) -> String {
        let admin = self.admin();
        if admin & ADMF_RMAINT != 0 {
            return "MAINT (resolution)".to_string();
        }
        if admin & ADMF_FMAINT != 0 {
            return "MAINT".to_string();
        }
        self.health.status_text_admin(admin & ADMF_FDRAIN != 0)
    }

    /// A reload removed the server: out of load balancing, idle pooled
    /// connections closed; requests in flight finish.
    pub(crate) fn retire(&self) {
        self.retired.store(true, Relaxed);
        let old = self.pool.load();
        self.pool.store(Arc::new(Pool::new(
            old.addr(),
            old.tls().cloned(),
            old.mux(),
        )));
    }

    /// Ends the sessions this server serves now (they must have seen
    /// [`cuttable`](Self::cuttable) set when they started).
    pub(crate) fn cut_sessions(&self) {
        self.kill_epoch.fetch_add(1, Relaxed);
        self.kill.notify_waiters();
    }

    pub(crate) fn is_retired(&self) -> bool {
        self.retired.load(Relaxed)
    }

    /// Back in a configuration after a reload had removed it.
    pub(crate) fn revive(&self) {
        self.retired.store(false, Relaxed);
    }

    /// `set server .. addr`: new connections go to `addr`; idle connections
    /// to the old address are dropped with the old pool.
    pub(crate) fn set_addr(&self, addr: SocketAddr) {
        self.no_addr.store(false, Relaxed);
        let old = self.pool.load();
        let (tls, mux) = (old.tls().cloned(), old.mux());
        self.pool.store(Arc::new(Pool::new(addr, tls, mux)));
    }
}

/// State of a backend (the BACKEND row) and its queue.
#[derive(Debug, Default)]
pub(crate) struct BackendState {
    pub(crate) name: String,
    pub(crate) counters: Counters,
    /// The last refused response (`show errors`).
    pub(crate) errors: crate::state::capture::ErrorSlot,
    /// Requests waiting for a server slot, FIFO.
    pub(crate) queue: Queue,
    /// Times the backend lost its last usable server (`chkdown` of the
    /// BACKEND row).
    pub(crate) went_down: std::sync::atomic::AtomicU64,
    servers: Mutex<HashMap<String, Arc<ServerState>>>,
}

impl BackendState {
    pub(crate) fn new(name: &str) -> Self {
        BackendState {
            name: name.to_string(),
            ..Default::default()
        }
    }

    /// The state of server `name`, if an earlier generation had it.
    pub(crate) fn find_server(&self, name: &str) -> Option<Arc<ServerState>> {
        lock(&self.servers).get(name).cloned()
    }

    /// The servers that take part in a configuration now (not retired),
    /// by name.
    pub(crate) fn live_servers(&self) -> Vec<Arc<ServerState>> {
        let mut v: Vec<_> = lock(&self.servers)
            .values()
            .filter(|s| !s.is_retired())
            .cloned()
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Keeps a new server's state under its name (`StateChange::AddServer`).
    pub(crate) fn insert_server(&self, s: Arc<ServerState>) {
        lock(&self.servers).insert(s.name.clone(), s);
    }

    /// Forgets a server the CLI deleted: a server added later under the
    /// same name starts afresh, as in HAProxy.
    pub(crate) fn forget_server(&self, name: &str) {
        lock(&self.servers).remove(name);
    }
}

/// Every runtime state object by name. Only touched when a snapshot is
/// compiled (start-up, reload), never per request.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    frontends: Mutex<HashMap<String, Arc<FrontendState>>>,
    backends: Mutex<HashMap<String, Arc<BackendState>>>,
    /// Stick tables, by name.
    pub(crate) tables: table::registry::TableRegistry,
    /// The `cache` sections' objects, by name (`cache.rs`).
    caches: Mutex<HashMap<String, Arc<cache::Cache>>>,
}

impl Registry {
    /// The state of frontend `name`, if an earlier generation had it.
    pub(crate) fn find_frontend(&self, name: &str) -> Option<Arc<FrontendState>> {
        lock(&self.frontends).get(name).cloned()
    }

    /// The state of backend `name`, if an earlier generation had it.
    pub(crate) fn find_backend(&self, name: &str) -> Option<Arc<BackendState>> {
        lock(&self.backends).get(name).cloned()
    }

    /// Every backend state, by name.
    pub(crate) fn backends(&self) -> Vec<Arc<BackendState>> {
        let mut v: Vec<_> = lock(&self.backends).values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }
}

/// Locks a mutex even if a panicking thread poisoned it: the maps hold
/// plain data that stays consistent.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}
