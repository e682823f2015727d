//! One direction of a relay copied through user space ([`pump`]), and how
//! a direction ends ([`End`], [`Relayed`]), shared with the kernel-side
//! pump of [`crate::wire::splice`]. The engines pair two directions.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

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
/// or a write longer than `write_idle`; then shuts `to`'s write half.
pub(crate) async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    idle: Option<Duration>,
    write_idle: Option<Duration>,
) -> Relayed {
    let mut buf = vec![0u8; 16 * 1024];
    let mut total = 0u64;
    let end = loop {
        let read = match idle {
            Some(t) => match tokio::time::timeout(t, from.read(&mut buf)).await {
                Ok(r) => r,
                Err(_) => break End::Timeout,
            },
            None => from.read(&mut buf).await,
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
            match crate::wire::io::with_timeout(write_idle, to.write(&buf[off..n])).await {
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
    Relayed { bytes: total, end }
}
