//! Load-balancing algorithms and server selection with `maxconn` queueing.

mod roundrobin;

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

pub use roundrobin::RoundRobin;

use crate::backend::SlotGuard;
use crate::backend::queue::Queue;
use crate::routing::BackendRt;

/// Why a request got no server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickError {
    /// No server is usable (all DOWN, in maintenance or weight 0).
    NoServer,
    /// All usable servers stayed full until `timeout queue`.
    QueueTimeout,
}

/// The next server in balancing order that is usable and has a free slot.
fn try_pick(be: &BackendRt) -> Option<SlotGuard> {
    let mut got = None;
    be.lb.pick(
        |i| be.servers.get(i).map_or(0, |s| s.state.lb_weight()),
        |i| {
            got = be
                .servers
                .get(i)
                .and_then(|s| SlotGuard::try_take(&s.state, &be.state));
            got.is_some()
        },
    );
    got
}

/// Picks a server for one request, waiting in the backend queue (FIFO, at
/// most `timeout queue`, which defaults to `timeout connect`) while all
/// usable servers are at their `maxconn`.
pub async fn acquire(be: &Arc<BackendRt>) -> Result<SlotGuard, PickError> {
    let slot = match try_pick(be) {
        Some(slot) if be.state.queue.is_empty() => slot,
        other => {
            drop(other);
            if !be.servers.iter().any(|s| s.state.usable()) {
                return Err(PickError::NoServer);
            }
            Queue::wait_for_slot(&be.state, || try_pick(be), be.timeouts.queue_or_connect())
                .await
                .map_err(|_| PickError::QueueTimeout)?
        }
    };
    slot.server().counters.lbtot.fetch_add(1, Relaxed);
    be.state.counters.lbtot.fetch_add(1, Relaxed);
    Ok(slot)
}
