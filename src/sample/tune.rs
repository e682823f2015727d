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

/// Where a stream is with the SPOE engines it talks to (HAProxy's SPOE
/// context of a stream): its id in their frames, the id of its last frame
/// to each engine, and the engines an error turned off for it (without
/// `option continue-on-error`). Empty, and without an allocation, for a
/// stream no engine sees.
#[derive(Debug, Default)]
pub(crate) struct SpoeStream {
    inner: std::sync::Mutex<SpoeInner>,
}

#[derive(Debug, Default)]
struct SpoeInner {
    /// 0 until the stream's first frame.
    stream_id: u64,
    /// The server-side events were sent (once per stream, whatever the
    /// retries).
    server_side: bool,
    /// An engine (its address) with its last frame id and whether an
    /// error turned it off.
    engines: Vec<(usize, u64, bool)>,
    /// The milliseconds the stream waited for its engines, all told
    /// (`option set-total-time`).
    total_ms: i64,
}

/// The ids SPOE streams are numbered from, process-wide.
static SPOE_STREAMS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl SpoeStream {
    fn with<T>(&self, engine: usize, f: impl FnOnce(&mut u64, &mut (usize, u64, bool)) -> T) -> T {
        let mut g = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let inner = &mut *g;
        let i = match inner.engines.iter().position(|e| e.0 == engine) {
            Some(i) => i,
            None => {
                inner.engines.push((engine, 0, false));
                inner.engines.len() - 1
            }
        };
        f(&mut inner.stream_id, &mut inner.engines[i])
    }

    /// Whether an error turned `engine` off for this stream.
    pub(crate) fn is_off(&self, engine: usize) -> bool {
        self.with(engine, |_, e| e.2)
    }

    pub(crate) fn turn_off(&self, engine: usize) {
        self.with(engine, |_, e| e.2 = true);
    }

    /// Turns every engine on again: a TCP stream's response side starts
    /// afresh after an error on its request side, as HAProxy's does.
    pub(crate) fn turn_on(&self) {
        let mut g = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for e in &mut g.engines {
            e.2 = false;
        }
    }

    /// Whether the server-side events are still to be sent (true once).
    pub(crate) fn server_side_first(&self) -> bool {
        let mut g = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        !std::mem::replace(&mut g.server_side, true)
    }

    /// The ids of the stream's next frame to `engine`: the stream's (drawn
    /// on its first frame) and the next of its frames to that engine,
    /// which only an answered frame moves on ([`SpoeStream::answered`]),
    /// as HAProxy numbers them.
    pub(crate) fn next_frame(&self, engine: usize) -> (u64, u64) {
        self.with(engine, |sid, e| {
            if *sid == 0 {
                *sid = SPOE_STREAMS.fetch_add(1, Relaxed) + 1;
            }
            (*sid, e.1 + 1)
        })
    }

    /// Adds `ms` to the stream's time with its engines; gives the total.
    pub(crate) fn add_time(&self, ms: i64) -> i64 {
        let mut g = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        g.total_ms = g.total_ms.saturating_add(ms);
        g.total_ms
    }

    pub(crate) fn answered(&self, engine: usize) {
        self.with(engine, |_, e| e.1 += 1);
    }
}
