//! Thread per core: a single-threaded runtime of its own for each of the
//! `nbthread` worker threads (`sluice-1` .. `sluice-N`), and the control
//! runtime on the main thread.
//!
//! A connection lives on one worker from accept to close: each worker
//! accepts on every listener itself (`frontend::listener`), and serves
//! what it accepts unless it serves many more connections than another
//! ([`deal`], which hands the socket over once, before its first read);
//! the socket is registered with the serving worker's reactor (its own
//! epoll set), its tasks run on that worker's thread, and the idle server
//! connections it takes and gives back are that worker's (see
//! `state::pool`). Nothing on the request path wakes another thread. One work-stealing runtime
//! over all threads instead woke idle workers on every wake-up (to steal),
//! and a fifth of the CPU went into those context switches; a runtime of
//! one worker thread driven by the multi-thread scheduler still paid that
//! scheduler's bookkeeping (about 1,300 instructions per keep-alive
//! request, and a second thread per runtime to run `block_on`).
//!
//! The control runtime runs what is process-wide: start-up, signals,
//! reloads, health checks, the CLI, the parking lot of idle connections.
//! It runs on the thread that called `main`, which is never pinned.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use tokio::runtime::{EnterGuard, Handle, Runtime};

/// The workers' runtime handles, worker 0 (`sluice-1`) first, set once at
/// start.
static WORKERS: OnceLock<Vec<Handle>> = OnceLock::new();

/// The control runtime's handle.
static CONTROL: OnceLock<Handle> = OnceLock::new();

/// How many connections each worker serves now (accepted or given back
/// by the parking lot, not parked), for dealing new ones out evenly. The
/// one figure the workers share that a connection writes: at open, park
/// and close, never per request. A line each, so that one worker's
/// connections do not slow another's.
static LOADS: OnceLock<Box<[WorkerCount]>> = OnceLock::new();

#[repr(align(128))]
struct WorkerCount(AtomicUsize);

thread_local! {
    /// The worker this thread is (None: the control thread, a blocking
    /// pool thread, or a test's runtime).
    static INDEX: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The runtimes of a process: the control one, which the main thread
/// drives with `block_on`, and the workers', each driven by its own
/// thread until the process exits.
pub(crate) struct Runtimes {
    pub(crate) control: Runtime,
}

/// Builds the control runtime and starts `threads` workers; `affinity`
/// pins worker `n` (0-based) to the CPUs of thread `n + 1` (`cpu-map`);
/// each worker runs `every_second` once a second (giving back what the
/// layers above keep per thread and no longer need).
/// Threads a worker's runtime starts later for blocking work are not
/// pinned, except through the CPUs they inherit.
pub(crate) fn start(
    threads: usize,
    affinity: &HashMap<usize, Vec<usize>>,
    every_second: fn(),
) -> std::io::Result<Runtimes> {
    let control = tokio::runtime::Builder::new_current_thread()
        .thread_name("sluice-control")
        .enable_all()
        .build()?;
    let mut handles = Vec::new();
    for n in 0..threads.max(1) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .thread_name(format!("sluice-{}-blocking", n + 1))
            .enable_all()
            .build()?;
        handles.push(rt.handle().clone());
        let cpus = affinity.get(&(n + 1)).cloned();
        std::thread::Builder::new()
            .name(format!("sluice-{}", n + 1))
            .spawn(move || {
                INDEX.with(|i| i.set(Some(n)));
                if let Some(cpus) = &cpus
                    && let Err(e) = crate::sys::process::pin_current_thread(cpus)
                {
                    tracing::warn!("cpu-map: thread {}: {e}", n + 1);
                }
                // Runs the worker's tasks for the life of the process: the
                // process exits from the main thread (connections still
                // open at a hard stop are not waited for).
                rt.block_on(heartbeat(every_second));
            })?;
    }
    let _ = LOADS.set(
        (0..handles.len())
            .map(|_| WorkerCount(AtomicUsize::new(0)))
            .collect(),
    );
    let _ = WORKERS.set(handles);
    let _ = CONTROL.set(control.handle().clone());
    Ok(Runtimes { control })
}

/// What a worker's thread runs while its tasks do: a timer that fires
/// every [`HEARTBEAT`], for the time driver's sake. Registering a timer
/// that ends before the driver's next planned wake-up must wake the
/// driver (a write to its eventfd, from its own thread: a system call for
/// nothing), and with no timer pending every new one does: a request's
/// head and response timeouts on a worker whose last connection just
/// closed did, 0.17 times per request with a new connection each (strace,
/// `Connection: close`). With this one pending, the driver's next wake-up
/// is never more than a second away, and the request timeouts, longer,
/// register without waking it. One wake-up a second per idle worker,
/// which also gives back the memory a burst of connections that has ended
/// took: its tasks' futures (`sys::slab`) and `every_second`'s.
async fn heartbeat(every_second: fn()) {
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        crate::sys::slab::trim();
        every_second();
    }
}

const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(1);

/// How many workers serve connections (1 before [`start`]).
pub(crate) fn count() -> usize {
    WORKERS.get().map_or(1, |h| h.len().max(1))
}

/// The worker the calling thread is, if it is one. Inlined: the counters
/// ask it several times per request to find their shard.
#[inline]
pub(crate) fn current() -> Option<usize> {
    INDEX.with(|i| i.get())
}

/// Makes the calling thread say it is worker `index` (tests of what is
/// kept per worker).
#[cfg(test)]
pub(crate) fn pretend(index: Option<usize>) {
    INDEX.with(|i| i.set(index));
}

/// The workers' handles (empty before [`start`], as in unit tests, where
/// everything runs on the test's runtime).
pub(crate) fn workers() -> &'static [Handle] {
    WORKERS.get().map_or(&[], Vec::as_slice)
}

/// The control runtime's handle (None before [`start`]).
pub(crate) fn control() -> Option<&'static Handle> {
    CONTROL.get()
}

/// Every runtime's handle, the control one last (for figures summed over
/// all of them).
pub(crate) fn all() -> impl Iterator<Item = &'static Handle> {
    workers().iter().chain(CONTROL.get())
}

/// Enters the worker that serves the fewest connections, when the caller
/// is not a worker (the parking lot gives connections back from the
/// control runtime): while the guard lives, sockets register with its
/// reactor and `tokio::spawn` runs tasks on it. None (stay where we are) on
/// a worker, or before [`start`]. The guard must not be held across an
/// `.await`.
pub(crate) fn enter_lightest() -> Option<(usize, EnterGuard<'static>)> {
    if current().is_some() {
        return None;
    }
    let handles = WORKERS.get()?;
    let (n, _) = lightest()?;
    Some((n, handles.get(n)?.enter()))
}

/// The worker serving the fewest connections now, and how many.
fn lightest() -> Option<(usize, usize)> {
    LOADS
        .get()?
        .iter()
        .map(|c| c.0.load(Relaxed))
        .enumerate()
        .min_by_key(|&(_, n)| n)
}

/// The worker that is to serve a connection the worker `me` just
/// accepted: `me`, unless another serves fewer connections by more than
/// one and an eighth. Every worker accepts on every listener and the one
/// awake first takes what arrives, so a burst of connections (a load
/// generator's, a browser's) would all land on one worker while the
/// others sleep; dealt this way they end up even (50 at once: 26 and 24
/// on two workers), as HAProxy's listeners deal theirs to the least
/// loaded thread. A connection dealt elsewhere costs one wake-up of that
/// worker, once, and is then served there to its end.
pub(crate) fn deal(me: usize) -> usize {
    let Some(loads) = LOADS.get() else { return me };
    let Some(mine) = loads.get(me).map(|c| c.0.load(Relaxed)) else {
        return me;
    };
    match lightest() {
        Some((n, least)) if mine > least + 1 + least / 8 => n,
        _ => me,
    }
}

/// A connection's place in the count of the worker that serves it
/// ([`deal`]): made by [`Load::on`] or [`Load::here`], which count it,
/// and counted off when dropped, on that worker's thread (a connection is
/// dropped where it is served). It holds nothing, so that an idle
/// connection's record does not grow: a connection parked is counted off
/// by [`Load::park`] and, if it comes back, on again by [`Load::resume`];
/// one that expires while parked is dropped on the control thread, which
/// counts nothing.
#[derive(Debug)]
pub(crate) struct Load(());

impl Load {
    /// Counts a connection on `worker` (nothing before [`start`], or for a
    /// worker that does not exist): it must then be served there.
    pub(crate) fn on(worker: usize) -> Load {
        if let Some(c) = LOADS.get().and_then(|l| l.get(worker)) {
            c.0.fetch_add(1, Relaxed);
        }
        Load(())
    }

    /// Counts the connection on the calling worker, if it is one.
    pub(crate) fn here() -> Load {
        if let Some(w) = current() {
            return Load::on(w);
        }
        Load(())
    }

    /// Counted nowhere: a connection served off the workers (before they
    /// start, as in unit tests).
    pub(crate) fn nowhere() -> Load {
        Load(())
    }

    /// The connection leaves the calling worker for the parking lot.
    pub(crate) fn park(&self) {
        count_off_here();
    }

    /// The connection comes back from the parking lot to `worker` (or
    /// stays where it is, parking having failed).
    pub(crate) fn resume(&self, worker: Option<usize>) {
        if let Some(c) = worker
            .or_else(current)
            .and_then(|w| LOADS.get().and_then(|l| l.get(w)))
        {
            c.0.fetch_add(1, Relaxed);
        }
    }
}

/// One connection fewer on the calling worker (never below zero: a
/// connection dropped elsewhere than it was counted only skews the
/// dealing, never wraps it).
fn count_off_here() {
    if let Some(c) = current().and_then(|w| LOADS.get().and_then(|l| l.get(w))) {
        let _ = c.0.fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        count_off_here();
    }
}
