//! The process-wide handle: the current routing snapshot, the runtime state
//! registry and process counters. Shared as `Arc<Runtime>`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;

use crate::config::model::Config;
use crate::snapshot::Snapshot;
use crate::snapshot::delta::Change;
use crate::state::Registry;
use crate::state::counters::{Gauge, ProcessCounts};

/// The configuration a runtime serves: as the files gave it (what the next
/// reload is compared with), and with the CLI's server changes since, if
/// any (what the next of them edits).
#[derive(Debug)]
struct InForce {
    loaded: Config,
    edited: Option<Config>,
}

/// Gives every server of `cfg` the id it has in `snap`, so that compiling
/// `cfg` again numbers no server differently when one is added or removed
/// before it.
fn pin_server_ids(cfg: &mut Config, snap: &Snapshot) {
    for p in &mut cfg.proxies {
        let Some(be) = snap.backend(&p.name) else {
            continue;
        };
        for s in &mut p.servers {
            if let Some(rt) = be.servers.iter().find(|r| r.name == s.name) {
                s.id = Some(rt.sid);
            }
        }
    }
}

/// Process figures for `show info`.
#[derive(Debug)]
pub(crate) struct ProcessCounters {
    pub(crate) started: Instant,
    pub(crate) start_unix: u64,
    pub(crate) pid: u32,
    /// Client connections open now / max.
    pub(crate) conns: Gauge,
    /// CumConns, CumReq, TotalBytesOut and the rates, per worker.
    pub(crate) counts: ProcessCounts,
    /// The global `maxconn` in force once `set maxconn global` may have
    /// changed it (0: no supervisor, the configured one). Written by the
    /// supervisor (`control/reload.rs`), read by `show info`: the figure
    /// lives down here so that what reports it needs nothing from above.
    pub(crate) maxconn_now: AtomicU32,
    /// The last reload for `show info`: its Unix time shifted left by one,
    /// the low bit set when it succeeded; 0 when none was tried.
    pub(crate) last_reload: AtomicU64,
}

impl ProcessCounters {
    /// Notes a reload attempt at `when` (Unix time).
    pub(crate) fn note_reload(&self, when: u64, ok: bool) {
        self.last_reload.store(when << 1 | u64::from(ok), Relaxed);
    }

    /// The last reload's Unix time and outcome, if one was tried.
    pub(crate) fn last_reload(&self) -> Option<(u64, bool)> {
        match self.last_reload.load(Relaxed) {
            0 => None,
            v => Some((v >> 1, v & 1 == 1)),
        }
    }
}

impl Default for ProcessCounters {
    fn default() -> Self {
        ProcessCounters {
            started: Instant::now(),
            start_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            pid: std::process::id(),
            conns: Gauge::default(),
            counts: ProcessCounts::default(),
            maxconn_now: AtomicU32::new(0),
            last_reload: AtomicU64::new(0),
        }
    }
}

#[derive(Debug)]
pub struct Runtime {
    snapshot: ArcSwap<Snapshot>,
    pub(crate) registry: Registry,
    /// The configuration in force, held while a new snapshot is compiled
    /// from it: reloads and the CLI's server commands take turns here.
    config: std::sync::Mutex<InForce>,
    pub(crate) process: ProcessCounters,
    /// Worker threads of the tokio runtime (`Nbthread`).
    pub(crate) nbthread: u32,
}

impl Runtime {
    /// The runtime of a process serving `config`: compiled as generation 1,
    /// its state changes applied, then published.
    pub fn new(config: &Config, nbthread: u32) -> Arc<Runtime> {
        let rt = Arc::new(Runtime {
            // Nothing serves before the first swap: an empty generation 0
            // only holds the place.
            snapshot: ArcSwap::from_pointee(Snapshot {
                generation: 0,
                global: Default::default(),
                caches: Vec::new(),
                proxies: Vec::new(),
                tables: Default::default(),
            }),
            registry: Registry::default(),
            config: std::sync::Mutex::new(InForce {
                loaded: config.clone(),
                edited: None,
            }),
            process: ProcessCounters::default(),
            nbthread,
        });
        let (snap, changes) = crate::snapshot::plan(None, config, &rt.registry, 1);
        rt.apply(&changes);
        rt.swap(Arc::new(snap));
        rt
    }

    /// The snapshot to use for one request (or one CLI command).
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// Runs `f` on the current snapshot without taking a reference count
    /// (for short, synchronous looks).
    pub(crate) fn with_snapshot<R>(&self, f: impl FnOnce(&Snapshot) -> R) -> R {
        f(&self.snapshot.load())
    }

    /// Performs the state changes of a compilation's list (the other
    /// changes describe the snapshot, they need nothing done). Must run before
    /// the snapshot compiled with them is swapped in: the state it points
    /// at is then in the registry, with the configured weights, limits and
    /// peers, and removed servers are retired before any request routed
    /// with the new snapshot can be handed one of them.
    pub(crate) fn apply(&self, changes: &[Change]) {
        self.registry
            .apply(changes.iter().filter_map(Change::state));
    }

    /// Publishes `snap`: requests that load the snapshot from now on use
    /// it; those in flight finish on the one they loaded.
    pub(crate) fn swap(&self, snap: Arc<Snapshot>) {
        self.snapshot.store(snap);
    }

    /// Applies `cfg`, read again from the files, as generation
    /// `generation`: compiled against the configuration loaded last (for
    /// the list of what changed), its state changes applied, then
    /// published. The servers the CLI added since are not in `cfg` and are
    /// removed with it, as HAProxy loses them at a reload; those deleted
    /// come back if `cfg` still has them.
    pub(crate) fn publish_reload(
        &self,
        cfg: Config,
        generation: u64,
    ) -> (Arc<Snapshot>, Vec<Change>) {
        let mut held = crate::state::lock(&self.config);
        let (snap, changes) =
            crate::snapshot::plan(Some(&held.loaded), &cfg, &self.registry, generation);
        self.apply(&changes);
        let snap = Arc::new(snap);
        self.swap(snap.clone());
        *held = InForce {
            loaded: cfg,
            edited: None,
        };
        (snap, changes)
    }

    /// A change of the servers the CLI makes (`add server`, `del server`):
    /// `edit` changes a copy of the configuration in force, whose servers
    /// keep the ids they have now (a deletion shifts none), and that copy
    /// is compiled over the same state, as a reload would, and published
    /// under the same generation. Only the servers' state changes: every
    /// other server keeps its counters, health, slots and connections, and
    /// requests in flight finish on the snapshot they loaded.
    pub(crate) fn edit_servers<T, E>(
        &self,
        edit: impl FnOnce(&mut Config, &Snapshot) -> Result<T, E>,
    ) -> Result<(T, Vec<crate::state::change::StateChange>), E> {
        let mut held = crate::state::lock(&self.config);
        let current = self.snapshot();
        let mut cfg = held.edited.clone().unwrap_or_else(|| held.loaded.clone());
        pin_server_ids(&mut cfg, &current);
        let out = edit(&mut cfg, &current)?;
        let (snap, mut changes) =
            crate::snapshot::compile(&cfg, &self.registry, current.generation);
        // Only the servers added or removed: the others keep what the CLI
        // set on them (a weight, an address), which a reload would give
        // back to the configuration.
        changes.retain(|c| {
            matches!(
                c,
                crate::state::change::StateChange::AddServer { .. }
                    | crate::state::change::StateChange::RemoveServer(_)
            )
        });
        self.registry.apply(&changes);
        self.swap(Arc::new(snap));
        held.edited = Some(cfg);
        Ok((out, changes))
    }

    pub(crate) fn uptime_secs(&self) -> u64 {
        self.process.started.elapsed().as_secs()
    }

    pub(crate) fn count_request(&self) {
        self.process.counts.local().cum_req.inc();
    }
}
