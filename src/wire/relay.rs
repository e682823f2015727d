//! One direction of a relay copied through user space ([`pump`]), and how
//! a direction ends ([`End`], [`Relayed`]), shared with the kernel-side
//! pump of [`crate::wire::splice`]. The engines pair two directions.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;

/// One side's inactivity timeout in a relay: `open` while both directions
/// flow, `fin` (`timeout client-fin`, `timeout server-fin`) once one of
/// them has ended, falling back to `open` when unset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct IdleTimeouts {
    pub(crate) open: Option<Duration>,
    pub(crate) fin: Option<Duration>,
}

impl IdleTimeouts {
    pub(crate) fn at(self, half_closed: bool) -> Option<Duration> {
        if half_closed {
            self.fin.or(self.open)
        } else {
            self.open
        }
    }
}

impl From<Option<Duration>> for IdleTimeouts {
    fn from(open: Option<Duration>) -> IdleTimeouts {
        IdleTimeouts { open, fin: None }
    }
}

/// What the two directions of a relay share: whether one has ended, so
/// that the other's waits switch to the sides' `fin` timeouts, the wait
/// in progress included.
#[derive(Debug, Default)]
pub(crate) struct HalfClose {
    closed: AtomicBool,
    notify: Notify,
}

impl HalfClose {
    /// One direction has ended.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// `fut`, unless it waits longer than `idle` allows (None): the
    /// timer starts again with the `fin` timeout when the other direction
    /// ends meanwhile.
    pub(crate) async fn within<F: Future>(&self, idle: IdleTimeouts, fut: F) -> Option<F::Output> {
        tokio::pin!(fut);
        loop {
            // Registered before the flag is read: a close in between
            // still wakes it.
            let ended = self.notify.notified();
            let closed = self.is_closed();
            let Some(t) = idle.at(closed) else {
                if closed || idle.fin.is_none() {
                    return Some(fut.await);
                }
                tokio::select! {
                    r = &mut fut => return Some(r),
                    _ = ended => continue,
                }
            };
            tokio::select! {
                r = &mut fut => return Some(r),
                _ = tokio::time::sleep(t) => return None,
                _ = ended, if !closed => continue,
            }
        }
    }
}

/// Why one direction of a relay stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum End {
    /// The sending side closed (or the relay was cut).
    #[default]
    Eof,
    /// Nothing came within the side's inactivity timeout.
    Timeout,
    /// The receiving side took nothing within its inactivity timeout (a
    /// peer that stopped reading).
    WriteTimeout,
    ReadError,
    WriteError,
}

/// One direction of a relay: bytes carried and how it ended.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Relayed {
    pub(crate) bytes: u64,
    pub(crate) end: End,
}

/// Copies `from` to `to` until `from` ends, a read waits longer than `idle`
/// or a write longer than `write_idle` (each the `fin` one once `half`
/// says the other direction ended); then shuts `to`'s write half and
/// tells `half`.
pub(crate) async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    idle: IdleTimeouts,
    write_idle: IdleTimeouts,
    half: &HalfClose,
) -> Relayed {
    let mut buf = vec![0u8; 16 * 1024];
    let mut total = 0u64;
    let end = loop {
        let read = match half.within(idle, from.read(&mut buf)).await {
            Some(r) => r,
            None => break End::Timeout,
        };
        let n = match read {
            Ok(0) => break End::Eof,
            Err(_) => break End::ReadError,
            Ok(n) => n,
        };
        // Counted as written, so bytes that went out before a failure
        // count too; the timeout bounds each wait for room.
        let mut off = 0;
        let failed = loop {
            if off == n {
                break None;
            }
            match half.within(write_idle, to.write(&buf[off..n])).await {
                None => break Some(End::WriteTimeout),
                Some(Ok(0) | Err(_)) => break Some(End::WriteError),
                Some(Ok(m)) => {
                    off += m;
                    total += m as u64;
                }
            }
        };
        if let Some(end) = failed {
            break end;
        }
    };
    let _ = to.shutdown().await;
    half.close();
    Relayed { bytes: total, end }
}
