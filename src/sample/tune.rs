//! What a stream's rules change of its own handling, as HAProxy keeps it
//! in the stream: its place in the backend queue (`set-priority-class`,
//! `set-priority-offset`), its server and tunnel timeouts (`set-timeout`)
//! and whether a layer-7 retry may follow (`disable-l7-retry`). Held by
//! the request's (or TCP session's) [`Vars`](super::vars::Vars), so that
//! the fetches (`prio_class`, `prio_offset`, `cur_server_timeout`,
//! `cur_tunnel_timeout`) and the engines read the one copy the rules set.
//! Atomics, not cells: the request's `Vars` is shared by reference across
//! awaits of a `Send` future.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, Ordering::Relaxed};
use std::time::Duration;

/// HAProxy's bounds: a class is kept in 12 bits, an offset in 20.
const CLASS_MAX: i64 = 2047;
const OFFSET_MAX: i64 = 524_287;

/// No `set-timeout` rule ran, or one gave 0: the configuration's
/// timeout holds (HAProxy's unset tick).
const UNSET: i64 = 0;

/// The settings a stream's rules changed; [`Default`] is a stream whose
/// rules changed nothing.
#[derive(Debug)]
pub(crate) struct StreamTune {
    class: AtomicI32,
    offset: AtomicI32,
    /// Milliseconds, [`UNSET`] when no rule set one; below 0, a timeout
    /// that has expired already (HAProxy's tick in the past).
    server_ms: AtomicI64,
    tunnel_ms: AtomicI64,
    no_l7_retry: AtomicBool,
}

impl Default for StreamTune {
    fn default() -> Self {
        StreamTune {
            class: AtomicI32::new(0),
            offset: AtomicI32::new(0),
            server_ms: AtomicI64::new(UNSET),
            tunnel_ms: AtomicI64::new(UNSET),
            no_l7_retry: AtomicBool::new(false),
        }
    }
}

/// Which timeout a `set-timeout` rule sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeoutKind {
    Server,
    Tunnel,
}

/// A stream's place in a queue: lower classes first, then the earlier
/// of the arrival times moved by their offsets (HAProxy's order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Priority {
    pub(crate) class: i32,
    /// Milliseconds added to the time the request joins the queue.
    pub(crate) offset_ms: i32,
}

impl StreamTune {
    /// `set-priority-class`: out-of-range values are brought to the bound.
    pub(crate) fn set_class(&self, v: i64) {
        self.class
            .store(v.clamp(-CLASS_MAX, CLASS_MAX) as i32, Relaxed);
    }

    /// `set-priority-offset`, bounded as the class is.
    pub(crate) fn set_offset(&self, v: i64) {
        self.offset
            .store(v.clamp(-OFFSET_MAX, OFFSET_MAX) as i32, Relaxed);
    }

    pub(crate) fn priority(&self) -> Priority {
        Priority {
            class: self.class.load(Relaxed),
            offset_ms: self.offset.load(Relaxed),
        }
    }

    /// `set-timeout server|tunnel`: `ms` milliseconds; 0 gives the
    /// configuration's timeout back and a negative one expires at once, as
    /// in HAProxy.
    pub(crate) fn set_timeout(&self, kind: TimeoutKind, ms: i64) {
        match kind {
            TimeoutKind::Server => self.server_ms.store(ms, Relaxed),
            TimeoutKind::Tunnel => self.tunnel_ms.store(ms, Relaxed),
        }
    }

    /// The timeout a rule set, in milliseconds as it set it (the
    /// `cur_*_timeout` fetches), None when none did.
    pub(crate) fn timeout_ms(&self, kind: TimeoutKind) -> Option<i64> {
        let ms = match kind {
            TimeoutKind::Server => self.server_ms.load(Relaxed),
            TimeoutKind::Tunnel => self.tunnel_ms.load(Relaxed),
        };
        (ms != UNSET).then_some(ms)
    }

    /// The timeout a rule set, None when none did.
    pub(crate) fn timeout(&self, kind: TimeoutKind) -> Option<Duration> {
        let ms = self.timeout_ms(kind)?;
        Some(Duration::from_millis(ms.max(0).unsigned_abs()))
    }

    /// The server or tunnel timeout in force: a rule's, else `configured`.
    pub(crate) fn or(&self, kind: TimeoutKind, configured: Option<Duration>) -> Option<Duration> {
        self.timeout(kind).or(configured)
    }

    /// `disable-l7-retry`.
    pub(crate) fn disable_l7_retry(&self) {
        self.no_l7_retry.store(true, Relaxed);
    }

    /// Whether a response may still be retried (`retry-on` 4xx/5xx,
    /// `empty-response`, `junk-response`, `response-timeout`).
    pub(crate) fn l7_retry(&self) -> bool {
        !self.no_l7_retry.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_unset() {
        let t = StreamTune::default();
        assert_eq!(t.timeout(TimeoutKind::Server), None);
        t.set_class(5000);
        t.set_offset(-1_000_000);
        assert_eq!(
            t.priority(),
            Priority {
                class: 2047,
                offset_ms: -524_287
            }
        );
        t.set_timeout(TimeoutKind::Tunnel, 1500);
        assert_eq!(
            t.timeout(TimeoutKind::Tunnel),
            Some(Duration::from_millis(1500))
        );
        t.set_timeout(TimeoutKind::Tunnel, 0);
        assert_eq!(t.timeout(TimeoutKind::Tunnel), None);
        assert_eq!(
            t.or(TimeoutKind::Server, Some(Duration::from_secs(3))),
            Some(Duration::from_secs(3))
        );
    }
}
