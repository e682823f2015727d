//! The process-wide handle: the current routing snapshot, the runtime state
//! registry and process counters. Shared as `Arc<Runtime>`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;

use crate::config::model::Config;
use crate::snapshot::Snapshot;
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
    pub fn new(config: &Config, nbthread: u32) -> Arc<Runtime> {
        let registry = Registry::default();
        let snap = crate::snapshot::compile(config, &registry, 1);
        Arc::new(Runtime {
            snapshot: ArcSwap::from_pointee(snap),
            registry,
            process: ProcessCounters::default(),
            nbthread,
        })
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

    /// Compiles `config` over the same runtime state and swaps it in.
    /// Compiles `config` into the next snapshot and swaps it in, running
    /// `before_swap(old, new)` before requests can see it (a reload retires
    /// removed servers there, so no request routed with the new snapshot is
    /// ever handed one of them).
    pub(crate) fn apply(
        &self,
        config: &Config,
        before_swap: impl FnOnce(&Snapshot, &Snapshot),
    ) -> Arc<Snapshot> {
        let old = self.snapshot();
        let snap = Arc::new(crate::snapshot::compile(
            config,
            &self.registry,
            old.generation + 1,
        ));
        before_swap(&old, &snap);
        self.snapshot.store(snap.clone());
        snap
    }

    pub(crate) fn uptime_secs(&self) -> u64 {
        self.process.started.elapsed().as_secs()
    }

    pub(crate) fn count_request(&self) {
        self.process.cum_req.fetch_add(1, Relaxed);
    }
}
