//! Thread per core: one runtime of a single worker thread per `nbthread`.
//!
//! A connection lives on one runtime from accept to close: its socket is
//! registered with that runtime's reactor (its own epoll set), its tasks
//! run on that runtime's one worker, and the idle server connections it
//! takes and gives back are that runtime's (see `backend::pool`). So
//! nothing on the request path wakes another thread. One work-stealing
//! runtime over all threads instead woke idle workers on every wake-up
//! (to steal), and a fifth of the CPU went into those context switches.
//!
//! Runtime 0 also runs everything process-wide (accept loops, health
//! checks, the CLI, the parking lot, reloads, signals); accepted
//! connections are dealt round-robin over all runtimes. Each runtime is a
//! multi-thread runtime of one worker, not a current-thread one, so that
//! `block_in_place` (the CLI's `reload`) keeps working and no thread has
//! to sit in `block_on` to drive it.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use tokio::runtime::{EnterGuard, Handle, Runtime};

/// The handles of all runtimes, runtime 0 first (set once at start).
static HANDLES: OnceLock<Vec<Handle>> = OnceLock::new();

/// Round-robin position for the next accepted connection.
static NEXT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The runtime this thread works for (0 outside the workers).
    static INDEX: Cell<usize> = const { Cell::new(0) };
}

/// Builds `threads` runtimes; `affinity` pins the worker of runtime `n`
/// (0-based) to the CPUs of thread `n + 1` (`cpu-map`). Threads a runtime
/// starts later for blocking work are not pinned, except through the
/// CPUs they inherit.
pub(crate) fn build(
    threads: usize,
    affinity: &HashMap<usize, Vec<usize>>,
) -> std::io::Result<Vec<Runtime>> {
    (0..threads.max(1))
        .map(|n| {
            let cpus = affinity.get(&(n + 1)).cloned();
            let started = AtomicUsize::new(0);
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name(format!("sluice-{}", n + 1))
                .enable_all()
                .on_thread_start(move || {
                    INDEX.with(|i| i.set(n));
                    // The worker is the first thread the runtime starts.
                    if started.fetch_add(1, Relaxed) == 0
                        && let Some(cpus) = &cpus
                        && let Err(e) = crate::sys::process::pin_current_thread(cpus)
                    {
                        tracing::warn!("cpu-map: thread {}: {e}", n + 1);
                    }
                })
                .build()
        })
        .collect()
}

/// Makes `runtimes` the ones connections are dealt to (once per process).
pub(crate) fn install(runtimes: &[Runtime]) {
    let _ = HANDLES.set(runtimes.iter().map(|r| r.handle().clone()).collect());
}

/// How many runtimes serve connections (1 before [`install`]).
pub(crate) fn count() -> usize {
    HANDLES.get().map_or(1, |h| h.len().max(1))
}

/// The runtime the calling thread works for (0 outside the workers).
pub(crate) fn current() -> usize {
    INDEX.with(Cell::get) % count()
}

/// Enters the runtime the next new connection goes to: while the guard
/// lives, sockets register with its reactor and `tokio::spawn` runs tasks
/// on it. None (stay where we are) before [`install`] or with one runtime.
/// The guard must not be held across an `.await`.
pub(crate) fn enter_next() -> Option<EnterGuard<'static>> {
    let handles = HANDLES.get()?;
    if handles.len() < 2 {
        return None;
    }
    let n = NEXT.fetch_add(1, Relaxed) % handles.len();
    Some(handles[n].enter())
}

/// Every runtime's handle (for figures summed over all of them).
pub(crate) fn handles() -> &'static [Handle] {
    HANDLES.get().map_or(&[], Vec::as_slice)
}
