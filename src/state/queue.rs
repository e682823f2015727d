//! Per-server `maxconn` slots and the backend's queue.
//!
//! A request holds a [`SlotGuard`] while a server serves it. When requests
//! are queued, free slots go to the first waiter in HAProxy's order: the
//! lowest priority class, then the earliest arrival moved by its priority
//! offset (`set-priority-class`, `set-priority-offset`); oldest first
//! when no rule set them. No wake-up is lost:
//! a waiter publishes itself and then looks for a free slot again, while a
//! releasing request frees its slot and then looks for waiters (both with
//! sequentially consistent operations), so one of the two always sees the
//! other. Servers without `maxconn` and backends with an empty queue never
//! take the lock.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::sample::tune::Priority;
use crate::state::{BackendState, ServerState, lock};

#[derive(Debug, Default)]
pub(crate) struct Queue {
    inner: Mutex<Waiters>,
    /// Mirrors the waiter count so the release path can skip the lock.
    len: AtomicUsize,
}

#[derive(Default)]
struct Waiters {
    list: VecDeque<Waiter>,
    next_id: u64,
    /// Requests handed a slot from the queue so far (HAProxy's queue
    /// `idx`): a request's position for `%bq` is counted from it.
    dispatched: u64,
    /// The instant arrivals are counted from, for the waiters' keys.
    epoch: Option<std::time::Instant>,
}

impl std::fmt::Debug for Waiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiters")
            .field("len", &self.list.len())
            .finish()
    }
}

/// Which servers a waiting request may be given: those of the snapshot it
/// was routed with (a reload may change the backend's servers while it
/// waits).
pub(crate) type Accepts = Box<dyn Fn(&ServerState) -> bool + Send + Sync>;

struct Waiter {
    id: u64,
    tx: oneshot::Sender<SlotGuard>,
    accepts: Accepts,
    /// `Waiters::dispatched` when it joined.
    entered: u64,
    /// Its place in line: class, then arrival plus offset (milliseconds
    /// since the queue's `epoch`), as HAProxy keys its queues.
    key: (i32, i64),
}

impl Waiters {
    /// HAProxy's `%bq` for a waiter leaving the queue now: the requests
    /// served from the queue while it waited, plus one for itself (1 for
    /// the first in line, whether it is served or times out).
    fn position(&self, entered: u64) -> u32 {
        u32::try_from(self.dispatched - entered + 1).unwrap_or(u32::MAX)
    }

    /// The place in line of a request that joins now with `prio`.
    fn key(&mut self, prio: Priority) -> (i32, i64) {
        let epoch = *self.epoch.get_or_insert_with(std::time::Instant::now);
        let now = i64::try_from(epoch.elapsed().as_millis()).unwrap_or(i64::MAX);
        (prio.class, now.saturating_add(prio.offset_ms.into()))
    }
}

/// `timeout queue` expired before a slot was free; `position` is the
/// request's `%bq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QueueTimeout {
    pub(crate) position: u32,
}

/// A server slot held for the time of one request.
#[derive(Debug)]
pub(crate) struct SlotGuard {
    held: Option<(Arc<ServerState>, Arc<BackendState>)>,
    /// The request's `%bq`: 0 unless it waited in the backend queue.
    queue_position: u32,
    /// The request's `%sq`: 0 unless it waited for this very server.
    srv_queue_position: u32,
}

impl SlotGuard {
    /// Takes a slot on `server` if it has one free (always, when unlimited).
    pub(crate) fn try_take(
        server: &Arc<ServerState>,
        backend: &Arc<BackendState>,
    ) -> Option<SlotGuard> {
        Self::try_take_max(server, backend, server.maxconn.load(SeqCst))
    }

    /// [`try_take`](Self::try_take) against a limit computed by the caller
    /// (dynamic maxconn: `minconn`/`fullconn`, `slowstart`); 0 = unlimited.
    pub(crate) fn try_take_max(
        server: &Arc<ServerState>,
        backend: &Arc<BackendState>,
        max: u32,
    ) -> Option<SlotGuard> {
        if max == 0 {
            server.inflight.fetch_add(1, SeqCst);
        } else {
            server
                .inflight
                .fetch_update(SeqCst, SeqCst, |n| (n < max).then_some(n + 1))
                .ok()?;
        }
        Some(SlotGuard {
            held: Some((server.clone(), backend.clone())),
            queue_position: 0,
            srv_queue_position: 0,
        })
    }

    /// `%bq`: how far back in the backend queue the request was (see
    /// [`Waiters::position`]); 0 when it did not wait there.
    pub(crate) fn queue_position(&self) -> u32 {
        self.queue_position
    }

    /// `%sq`: the same for the server's own queue (a request that waited
    /// for the server a hash or a cookie chose).
    pub(crate) fn srv_queue_position(&self) -> u32 {
        self.srv_queue_position
    }

    pub(crate) fn set_srv_queue_position(&mut self, n: u32) {
        self.srv_queue_position = n;
    }

    pub(crate) fn server(&self) -> &Arc<ServerState> {
        match &self.held {
            Some((s, _)) => s,
            // `held` is only emptied inside drop.
            None => unreachable!("slot guard used after release"),
        }
    }

    /// Gives the slot back without passing it on (used when a hand-over
    /// failed, to avoid re-entering the queue lock from drop).
    fn release_quietly(mut self) {
        if let Some((server, _)) = self.held.take() {
            server.inflight.fetch_sub(1, SeqCst);
        }
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        let Some((server, backend)) = self.held.take() else {
            return;
        };
        server.inflight.fetch_sub(1, SeqCst);
        if server.waiters.load(SeqCst) != 0 {
            // A request waits for this very server (hash-based balancing).
            server.released.notify_one();
        }
        // A server a reload removed takes no queued request: the queue is
        // served by the servers still in the configuration.
        if backend.queue.len.load(SeqCst) == 0 || server.is_retired() {
            return;
        }
        let mut w = lock(&backend.queue.inner);
        w.dispatch(&backend, &|| SlotGuard::try_take(&server, &backend));
    }
}

impl Waiters {
    /// Hands free slots to waiters, oldest first, while `try_take` finds one:
    /// each slot goes to the oldest waiter that may use its server.
    fn dispatch(&mut self, backend: &BackendState, try_take: &dyn Fn() -> Option<SlotGuard>) {
        // A slot whose waiter gave up already goes to the next one.
        let mut returned: Option<SlotGuard> = None;
        loop {
            if self.list.is_empty() {
                if let Some(slot) = returned {
                    slot.release_quietly();
                }
                return;
            }
            let mut slot = match returned.take().or_else(try_take) {
                Some(slot) => slot,
                None => return,
            };
            let Some(pos) = self.list.iter().position(|w| (w.accepts)(slot.server())) else {
                // Only requests routed before a reload that removed this
                // server wait: they need another one.
                slot.release_quietly();
                return;
            };
            let Some(w) = self.list.remove(pos) else {
                slot.release_quietly();
                return;
            };
            backend.queue.len.store(self.list.len(), SeqCst);
            backend.counters.queue.dec();
            slot.queue_position = self.position(w.entered);
            self.dispatched += 1;
            if let Err(mut back) = w.tx.send(slot) {
                back.queue_position = 0;
                returned = Some(back);
            }
        }
    }
}

impl Queue {
    /// Hands free slots of `server` to waiting requests, oldest first
    /// (after its `maxconn` was raised at run time).
    pub(crate) fn dispatch_to(server: &Arc<ServerState>, backend: &Arc<BackendState>) {
        if backend.queue.is_empty() || !server.usable() {
            return;
        }
        let mut w = lock(&backend.queue.inner);
        w.dispatch(backend, &|| SlotGuard::try_take(server, backend));
    }

    pub(crate) fn len(&self) -> usize {
        self.len.load(SeqCst)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits in line (see the module's order, `prio` its place) for a slot
    /// found by `try_pick`, at most `timeout`, on a server `accepts` allows.
    pub(crate) async fn wait_for_slot(
        backend: &Arc<BackendState>,
        try_pick: impl Fn() -> Option<SlotGuard>,
        accepts: Accepts,
        timeout: Option<Duration>,
        prio: Priority,
    ) -> Result<SlotGuard, QueueTimeout> {
        let q = &backend.queue;
        let (id, mut rx) = {
            let mut w = lock(&q.inner);
            if w.list.is_empty()
                && let Some(g) = try_pick()
            {
                return Ok(g);
            }
            let (tx, rx) = oneshot::channel();
            let id = w.next_id;
            w.next_id += 1;
            let entered = w.dispatched;
            let key = w.key(prio);
            // Behind every waiter of the same or an earlier key: FIFO
            // among equals.
            let at = w.list.partition_point(|x| x.key <= key);
            w.list.insert(
                at,
                Waiter {
                    id,
                    tx,
                    accepts,
                    entered,
                    key,
                },
            );
            q.len.store(w.list.len(), SeqCst);
            backend.counters.queue.inc();
            // A slot freed before we were visible must not be missed.
            w.dispatch(backend, &try_pick);
            (id, rx)
        };
        let got = match timeout {
            Some(t) => tokio::time::timeout(t, &mut rx).await.ok(),
            None => Some((&mut rx).await),
        };
        if let Some(Ok(g)) = got {
            return Ok(g);
        }
        // Timed out: leave the queue, unless a slot was handed over just now.
        let mut w = lock(&q.inner);
        if let Some(pos) = w.list.iter().position(|x| x.id == id) {
            let gone = w.list.remove(pos);
            q.len.store(w.list.len(), SeqCst);
            backend.counters.queue.dec();
            let position = gone.map_or(1, |g| w.position(g.entered));
            return Err(QueueTimeout { position });
        }
        drop(w);
        rx.try_recv().map_err(|_| QueueTimeout { position: 1 })
    }
}
