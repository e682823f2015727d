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
use crate::state::counters::{FreqCtr, Gauge};

/// Process figures for `show info`.
#[derive(Debug)]
pub(crate) struct ProcessCounters {
    pub(crate) started: Instant,
    pub(crate) start_unix: u64,
    pub(crate) pid: u32,
    /// Client connections open now / max.
    pub(crate) conns: Gauge,
    pub(crate) cum_conns: AtomicU64,
    pub(crate) cum_req: AtomicU64,
    pub(crate) conn_rate: FreqCtr,
    pub(crate) sess_rate: FreqCtr,
    pub(crate) bytes_out: AtomicU64,
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
            cum_conns: AtomicU64::new(0),
            cum_req: AtomicU64::new(0),
            conn_rate: FreqCtr::default(),
            sess_rate: FreqCtr::default(),
            bytes_out: AtomicU64::new(0),
            maxconn_now: AtomicU32::new(0),
            last_reload: AtomicU64::new(0),
        }
    }
}

#[derive(Debug)]
pub struct Runtime {
    snapshot: ArcSwap<Snapshot>,
    pub(crate) registry: Registry,
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
                proxies: Vec::new(),
                tables: Default::default(),
            }),
            registry: Registry::default(),
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

    pub(crate) fn uptime_secs(&self) -> u64 {
        self.process.started.elapsed().as_secs()
    }

    pub(crate) fn count_request(&self) {
        self.process.cum_req.fetch_add(1, Relaxed);
    }
}
