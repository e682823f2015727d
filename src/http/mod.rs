//! The HTTP/1 data plane: the frontend service, forwarding, error pages.

pub(crate) mod after;
mod body;
pub(crate) mod cache;
pub(crate) mod compress;
pub(crate) mod cookie;
mod exchange;
mod fcgi;
mod filtered;
pub(crate) mod forward;
pub(crate) mod h2;
pub(crate) mod legacy;
mod lua_txn;
mod normalize;
pub(crate) mod park;
mod relay;
pub(crate) mod reply;
pub(crate) mod rules;
pub(crate) mod service;

/// Polls `fut` once, with a waker that wakes nothing: its output if it
/// ended, None if it would have waited (and is dropped). For work that
/// ends at once in the common case, run without a future of its own in
/// the caller's.
fn at_once<F: std::future::Future>(fut: F) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => Some(out),
        std::task::Poll::Pending => None,
    }
}

#[cfg(test)]
mod harness;
