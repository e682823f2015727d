//! Buffered connection halves and body relaying.
//!
//! A connection owns a read buffer only while a message is in flight: an
//! idle keep-alive connection gives its buffer back, so thousands of idle
//! clients cost little more than their sockets.

use std::io;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::h1::{self, BodyKind, ChunkedDecoder, H1Error};

/// Size of one read; also the relay chunk.
const READ_CHUNK: usize = 16 * 1024;

/// Which side of a relay failed.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("reading: {0}")]
    Read(io::Error),
    #[error("writing: {0}")]
    Write(io::Error),
    #[error("read timeout")]
    ReadTimeout,
    #[error("write timeout")]
    WriteTimeout,
    #[error("peer closed before the end of the body")]
    Truncated,
    #[error("bad framing: {0}")]
    Framing(H1Error),
}

impl RelayError {
    /// Whether the source (the side being read) is to blame.
    pub fn source_side(&self) -> bool {
        matches!(
            self,
            RelayError::Read(_)
                | RelayError::ReadTimeout
                | RelayError::Truncated
                | RelayError::Framing(_)
        )
    }
}

/// Why no head could be read.
#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    /// Closed cleanly before any byte of a new message.
    #[error("closed")]
    Closed,
    #[error("closed in the middle of the head")]
    Truncated,
    #[error("timeout")]
    Timeout,
    #[error("head too large")]
    TooLarge,
    #[error("read error: {0}")]
    Io(io::Error),
}

/// A stream with the bytes read from it but not consumed yet.
#[derive(Debug)]
pub struct BufConn {
    pub stream: TcpStream,
    pub buf: BytesMut,
}

pub async fn with_timeout<T>(
    t: Option<Duration>,
    fut: impl std::future::Future<Output = T>,
) -> Option<T> {
    match t {
        Some(t) => tokio::time::timeout(t, fut).await.ok(),
        None => Some(fut.await),
    }
}

impl BufConn {
    pub fn new(stream: TcpStream) -> Self {
        BufConn {
            stream,
            buf: BytesMut::new(),
        }
    }

    /// Reads more bytes into the buffer; Ok(0) at end of stream.
    pub async fn fill(&mut self, timeout: Option<Duration>) -> Result<usize, RelayError> {
        if self.buf.capacity() - self.buf.len() < 1024 {
            self.buf.reserve(READ_CHUNK);
        }
        match with_timeout(timeout, self.stream.read_buf(&mut self.buf)).await {
            None => Err(RelayError::ReadTimeout),
            Some(Err(e)) => Err(RelayError::Read(e)),
            Some(Ok(n)) => Ok(n),
        }
    }

    /// Reads until a complete head (ending with a blank line) is buffered
    /// and splits it off. `max` bounds the head size; `timeout` bounds the
    /// whole wait.
    pub async fn read_head(
        &mut self,
        max: usize,
        timeout: Option<Duration>,
    ) -> Result<Bytes, HeadError> {
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut scanned: usize = 0;
        loop {
            // Resume the search a little before where it stopped, in case
            // the blank line straddles two reads.
            if let Some(end) = h1::head_end(&self.buf[scanned.saturating_sub(3)..]) {
                let end = end + scanned.saturating_sub(3);
                // A head that arrived whole in one read is bounded too.
                if end > max {
                    return Err(HeadError::TooLarge);
                }
                return Ok(self.buf.split_to(end).freeze());
            }
            scanned = self.buf.len();
            if self.buf.len() > max {
                return Err(HeadError::TooLarge);
            }
            let left = deadline.map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
            match self.fill(left).await {
                Ok(0) if self.buf.is_empty() => return Err(HeadError::Closed),
                Ok(0) => return Err(HeadError::Truncated),
                Ok(_) => {}
                Err(RelayError::ReadTimeout) => return Err(HeadError::Timeout),
                Err(RelayError::Read(e)) if self.buf.is_empty() => {
                    return Err(match e.kind() {
                        io::ErrorKind::ConnectionReset => HeadError::Closed,
                        _ => HeadError::Io(e),
                    });
                }
                Err(RelayError::Read(e)) => return Err(HeadError::Io(e)),
                Err(_) => return Err(HeadError::Truncated),
            }
        }
    }
}

pub async fn write_all(
    stream: &mut TcpStream,
    data: &[u8],
    timeout: Option<Duration>,
) -> Result<(), RelayError> {
    match with_timeout(timeout, stream.write_all(data)).await {
        None => Err(RelayError::WriteTimeout),
        Some(Err(e)) => Err(RelayError::Write(e)),
        Some(Ok(())) => Ok(()),
    }
}

/// Relays a message to `dst`: first `head` (already serialized), then the
/// body from `src` as it arrives, never holding more than one read's worth.
/// The head goes out in the same write as the body bytes already buffered,
/// which saves a system call on every small response. Returns the number of
/// body bytes relayed; bytes after the body stay in `src.buf` (a pipelined
/// next message).
pub async fn relay_message(
    head: &mut BytesMut,
    src: &mut BufConn,
    dst: &mut TcpStream,
    kind: BodyKind,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
) -> Result<u64, RelayError> {
    let mut out = Outgoing {
        head,
        dst,
        write_timeout,
    };
    let mut total = 0u64;
    match kind {
        BodyKind::None => {}
        BodyKind::Length(mut left) => {
            while left > 0 {
                if src.buf.is_empty() && out.fill_src(src, read_timeout).await? == 0 {
                    return Err(RelayError::Truncated);
                }
                let take = (src.buf.len() as u64).min(left) as usize;
                let chunk = src.buf.split_to(take);
                out.send(&chunk).await?;
                left -= take as u64;
                total += take as u64;
            }
        }
        BodyKind::Chunked => {
            let mut dec = ChunkedDecoder::default();
            while !dec.is_done() {
                if src.buf.is_empty() && out.fill_src(src, read_timeout).await? == 0 {
                    return Err(RelayError::Truncated);
                }
                let n = dec.feed(&src.buf).map_err(RelayError::Framing)?;
                let chunk = src.buf.split_to(n);
                out.send(&chunk).await?;
                total += n as u64;
            }
        }
        BodyKind::UntilClose => loop {
            if src.buf.is_empty() && out.fill_src(src, read_timeout).await? == 0 {
                break;
            }
            let chunk = src.buf.split();
            out.send(&chunk).await?;
            total += chunk.len() as u64;
        },
    }
    out.send(&[]).await?;
    Ok(total)
}

/// The write side of a relay, holding the head until the first body bytes
/// can go with it.
struct Outgoing<'a> {
    head: &'a mut BytesMut,
    dst: &'a mut TcpStream,
    write_timeout: Option<Duration>,
}

impl Outgoing<'_> {
    async fn send(&mut self, chunk: &[u8]) -> Result<(), RelayError> {
        if self.head.is_empty() {
            if chunk.is_empty() {
                return Ok(());
            }
            return write_all(self.dst, chunk, self.write_timeout).await;
        }
        self.head.extend_from_slice(chunk);
        let r = write_all(self.dst, self.head, self.write_timeout).await;
        self.head.clear();
        r
    }

    /// Reads more of the body; the head must not wait behind a slow body,
    /// so it is flushed first when nothing is buffered yet.
    async fn fill_src(
        &mut self,
        src: &mut BufConn,
        t: Option<Duration>,
    ) -> Result<usize, RelayError> {
        if !self.head.is_empty() {
            self.send(&[]).await?;
        }
        src.fill(t).await
    }
}
