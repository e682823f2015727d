//! A timeout armed only once the future it bounds has to wait.
//!
//! `tokio::time::timeout` reads the clock and makes a timer when it is
//! created, and takes the timer out of the wheel when it is dropped:
//! about 300 instructions and a clock read, paid by every read and write
//! of a connection though most of them are ready at once (a keep-alive
//! client's next request once its socket is readable, a response that
//! fits the socket's buffer). HAProxy arms a task's timeout only when the
//! task has to wait; so does [`Deadline`]: it polls its future first, and
//! makes the timer at the first poll that finds it pending, from that
//! moment, in the same poll (no second poll of the future).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// When a [`Deadline`]'s timer is to fire once armed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Limit {
    /// No timeout.
    Never,
    /// This long after the future first has to wait.
    After(Duration),
    /// At this instant (set by an earlier wait of the same bound).
    At(Instant),
}

impl Limit {
    pub(crate) fn after(t: Option<Duration>) -> Limit {
        t.map_or(Limit::Never, Limit::After)
    }
}

pin_project_lite::pin_project! {
    /// `fut`, or None once its [`Limit`] has passed.
    pub(crate) struct Deadline<F> {
        #[pin]
        fut: F,
        #[pin]
        timer: Option<Sleep>,
        limit: Limit,
    }
}

impl<F: Future> Deadline<F> {
    pub(crate) fn new(fut: F, limit: Limit) -> Self {
        Deadline {
            fut,
            timer: None,
            limit,
        }
    }

    /// The instant the timer was armed for, if the future had to wait:
    /// the bound of a later wait that shares this one's.
    pub(crate) fn armed(&self) -> Option<Instant> {
        self.timer.as_ref().map(Sleep::deadline)
    }
}

impl<F: Future> Future for Deadline<F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(v) = this.fut.poll(cx) {
            return Poll::Ready(Some(v));
        }
        if this.timer.is_none() {
            let at = match *this.limit {
                Limit::Never => return Poll::Pending,
                Limit::After(t) => Instant::now() + t,
                Limit::At(at) => at,
            };
            this.timer.set(Some(tokio::time::sleep_until(at)));
        }
        match this.timer.as_pin_mut().map(|timer| timer.poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(None),
            _ => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ready at once: no timer, even with a zero limit; pending: the
    /// timer is armed from the first wait, and its instant is known.
    #[tokio::test]
    async fn armed_only_when_waiting() {
        let mut ready = std::pin::pin!(Deadline::new(async { 7 }, Limit::After(Duration::ZERO)));
        assert_eq!(ready.as_mut().await, Some(7));
        assert_eq!(ready.armed(), None, "no timer for what was ready");
        let t = Duration::from_millis(30);
        let mut waiting =
            std::pin::pin!(Deadline::new(std::future::pending::<()>(), Limit::After(t),));
        let start = Instant::now();
        assert_eq!(waiting.as_mut().await, None);
        let armed = waiting.armed().expect("a timer once it waited");
        assert!(armed >= start + t, "armed from the wait, not before it");
        let late = Deadline::new(std::future::pending::<()>(), Limit::At(start));
        assert_eq!(late.await, None, "a deadline already passed");
        let unbounded = Deadline::new(tokio::time::sleep(t), Limit::Never);
        assert_eq!(unbounded.await, Some(()));
    }
}
