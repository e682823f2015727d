//! The bound on requests of old snapshot generations: a reload with
//! `hard-stop-after` raises it once that delay has passed, and each request
//! runs under it ([`bounded`]) so the engines cut what is still running
//! without knowing about reloads.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

/// Requests started under a generation below this one are cut when they
/// are still running.
static EXPIRED_BELOW: AtomicU64 = AtomicU64::new(0);
static EXPIRY: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Expires every generation below `generation` now, saying so before the
/// requests are woken to be cut (as the operator reads it first).
pub(crate) fn expire_below(generation: u64) {
    let before = EXPIRED_BELOW.fetch_max(generation, SeqCst);
    if before < generation {
        tracing::warn!(
            "hard-stop-after: closing connections still serving requests of generations before {generation}."
        );
    }
    EXPIRY.notify_waiters();
}

/// Runs `fut` (one request started under `generation`) unless that
/// generation expires first; None when it was cut.
pub(crate) async fn bounded<F: std::future::Future>(generation: u64, fut: F) -> Option<F::Output> {
    tokio::pin!(fut);
    loop {
        let notified = EXPIRY.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if EXPIRED_BELOW.load(SeqCst) > generation {
            return None;
        }
        tokio::select! {
            out = &mut fut => return Some(out),
            _ = &mut notified => {}
        }
    }
}

/// [`bounded`] under `Some(generation)`, else `fut` as it is: one future
/// either way, awaited at one point. A future held across two awaits of
/// its caller takes room beside the futures of all the caller's other
/// awaits; awaited at one, it shares theirs.
pub(crate) async fn bounded_if<F: std::future::Future>(
    generation: Option<u64>,
    fut: F,
) -> Option<F::Output> {
    match generation {
        None => Some(fut.await),
        Some(generation) => bounded(generation, fut).await,
    }
}
