//! Buffered connection halves and body relaying.
//!
//! A connection owns a read buffer only while a message is in flight: an
//! idle keep-alive connection gives its buffer back, so thousands of idle
//! clients cost little more than their sockets.

use std::cell::RefCell;
use std::io;
use std::time::Duration;

use crate::tls::Stream;
use crate::wire::deadline::{Deadline, Limit};
use crate::wire::spares::{self, Spares};
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::wire::error_spot::ErrorSpot;
use crate::wire::h1::{self, BodyKind, ChunkedDecoder, H1Error};

/// Size of one read; also the relay chunk.
const READ_CHUNK: usize = 16 * 1024;

/// A body of known length with at least this much still to come goes
/// socket to socket through the kernel (splice(2) on Linux); below it the
/// copy, which can share a write with the head, costs less.
#[cfg(target_os = "linux")]
const SPLICE_MIN: u64 = 64 * 1024;

/// Which side of a relay failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RelayError {
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
    /// Where the body went wrong, offset in the source's read buffer.
    #[error("bad framing: {0}")]
    Framing(H1Error, ErrorSpot),
}

impl RelayError {
    /// Whether the source (the side being read) is to blame.
    pub(crate) fn source_side(&self) -> bool {
        matches!(
            self,
            RelayError::Read(_)
                | RelayError::ReadTimeout
                | RelayError::Truncated
                | RelayError::Framing(..)
        )
    }
}

/// Why no head could be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HeadError {
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
pub(crate) struct BufConn {
    pub(crate) stream: Stream,
    pub(crate) buf: BytesMut,
    /// What the current request asked of the connection, which sluice's
    /// own pages repeat in a `Connection` header as HAProxy's do.
    pub(crate) asked: ConnAsk,
    /// The current request's body as an answer sluice makes finds it.
    pub(crate) pending: PendingBody,
    /// The current request's `Expect: 100-continue` was answered already
    /// (sluice waited for the body): none is sent again.
    pub(crate) continued: bool,
    /// The `103 Early Hints` sluice sent the request (`http-request
    /// early-hint`): bytes on the wire, and as `%B` counts them.
    pub(crate) early_hints: (u64, u64),
    /// The client side of the pipeline is either of two: a connection's
    /// bytes (`stream`: HTTP/1), or, when this is set, one stream of an
    /// HTTP/2 connection, whose answers ([`answer`](Self::answer), the
    /// relay's head and body) go out as its frames; its `stream` is then a
    /// `Stream::Frames`, its request body (`wire::h2_stream::H2Body`).
    pub(crate) h2: Option<Box<crate::wire::h2_stream::H2Stream>>,
}

/// Where the body of the request being answered is: an answer made
/// without reading it keeps the connection only when the whole body is
/// already buffered, to be skipped (HAProxy 2.6 does the same).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum PendingBody {
    /// No body, or it has been read (relayed to a server, taken as a form).
    #[default]
    None,
    /// All of it in the buffer: its first `n` bytes.
    Buffered(usize),
    /// Not all here yet: an answer ends the connection, and says so.
    Partial,
}

impl PendingBody {
    /// The body of framing `kind` as `buf` (the bytes after its head)
    /// holds it.
    pub(crate) fn of(kind: BodyKind, buf: &[u8]) -> PendingBody {
        match kind {
            BodyKind::None => PendingBody::None,
            BodyKind::Length(n) if n <= buf.len() as u64 => PendingBody::Buffered(n as usize),
            BodyKind::Length(_) | BodyKind::UntilClose => PendingBody::Partial,
            BodyKind::Chunked => {
                let mut dec = ChunkedDecoder::default();
                match dec.feed(buf) {
                    Ok(end) if dec.is_done() => PendingBody::Buffered(end),
                    // A framing error is found when the body is read.
                    _ => PendingBody::Partial,
                }
            }
        }
    }
}

/// The client's wish for the connection after the current request: HTTP/1.1
/// with `Connection: close` or HTTP/1.0 without `keep-alive` asks to close;
/// HTTP/1.0 with `keep-alive` asks to keep it (and must be told it is kept).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum ConnAsk {
    /// HTTP/1.1 persistence: nothing to announce.
    #[default]
    Default,
    Close,
    KeepAlive10,
}

/// Whether the client has sent bytes not read yet (a non-blocking peek).
pub(crate) fn has_pending(stream: &impl std::os::fd::AsRawFd) -> bool {
    let mut probe = [0u8; 1];
    // SAFETY: recv into a one-byte buffer; MSG_PEEK leaves the byte queued.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            probe.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n > 0
}

/// `fut`, or None if it takes longer than `t`, counted from when it first
/// has to wait (`wire::deadline`: what is ready at once costs no clock
/// read and no timer).
pub(crate) async fn with_timeout<T>(
    t: Option<Duration>,
    fut: impl std::future::Future<Output = T>,
) -> Option<T> {
    Deadline::new(fut, Limit::after(t)).await
}

thread_local! {
    /// Spare read buffers of this thread, most recently used last: a new
    /// message reads into a buffer that is still in the CPU cache, and no
    /// connection holds a buffer between messages.
    static SPARE: RefCell<Spares<BytesMut>> = const { RefCell::new(Spares::new()) };
}

/// A read buffer from the thread's spares (or a new one).
pub(crate) fn take_buffer() -> BytesMut {
    spares::take(&SPARE).unwrap_or_else(|| BytesMut::with_capacity(READ_CHUNK))
}

/// Gives an emptied buffer back for reuse. Once the message heads that
/// pointed into it are gone it is unique again, and `reserve` reclaims its
/// whole allocation without allocating.
fn give_buffer(mut buf: BytesMut) {
    buf.clear();
    buf.reserve(READ_CHUNK);
    spares::give(&SPARE, buf);
}

thread_local! {
    /// Spare buffers for the heads sluice writes (a request to a server, a
    /// response to a client): each message would otherwise allocate one
    /// and free it once sent.
    static SPARE_HEADS: RefCell<Spares<BytesMut>> = const { RefCell::new(Spares::new()) };
}

/// Gives back the read and head buffers of this thread that went unused
/// since the last call (`wire::spares`).
pub(crate) fn trim_spares() {
    spares::trim(&SPARE);
    spares::trim(&SPARE_HEADS);
}

/// A head buffer kept for reuse at most this large (a head rewritten by
/// rules can be large; one such is not kept).
const HEAD_KEPT_MAX: usize = 16 * 1024;

/// A buffer for a head being written, from the thread's spares; back to
/// them when dropped. It is never split or frozen: it stays the one owner
/// of its allocation.
pub(crate) struct HeadBuf(BytesMut);

impl HeadBuf {
    pub(crate) fn new() -> HeadBuf {
        HeadBuf(spares::take(&SPARE_HEADS).unwrap_or_default())
    }
}

impl std::ops::Deref for HeadBuf {
    type Target = BytesMut;
    fn deref(&self) -> &BytesMut {
        &self.0
    }
}

impl std::ops::DerefMut for HeadBuf {
    fn deref_mut(&mut self) -> &mut BytesMut {
        &mut self.0
    }
}

impl Drop for HeadBuf {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.0);
        if buf.capacity() == 0 || buf.capacity() > HEAD_KEPT_MAX {
            return;
        }
        buf.clear();
        spares::give(&SPARE_HEADS, buf);
    }
}

impl BufConn {
    /// Returns the read buffer to the thread's spares when nothing is
    /// pending in it (call once the message heads using it are dropped).
    pub(crate) fn release_buffer(&mut self) {
        if self.buf.is_empty() && self.buf.capacity() > 0 {
            give_buffer(std::mem::take(&mut self.buf));
        }
    }

    pub(crate) fn new(stream: Stream) -> Self {
        BufConn {
            stream,
            buf: BytesMut::new(),
            asked: ConnAsk::Default,
            pending: PendingBody::None,
            continued: false,
            early_hints: (0, 0),
            h2: None,
        }
    }

    /// Reads more bytes into the buffer; Ok(0) at end of stream.
    pub(crate) async fn fill(&mut self, timeout: Option<Duration>) -> Result<usize, RelayError> {
        if self.buf.capacity() - self.buf.len() < 1024 {
            if self.buf.is_empty() {
                self.buf = take_buffer();
            } else {
                self.buf.reserve(READ_CHUNK);
            }
        }
        match with_timeout(timeout, self.stream.read_buf(&mut self.buf)).await {
            None => Err(RelayError::ReadTimeout),
            Some(Err(e)) => Err(RelayError::Read(e)),
            Some(Ok(n)) => Ok(n),
        }
    }

    /// Sends a whole message sluice made (an error page, a reply, an
    /// interim `100 Continue`) to the client.
    pub(crate) async fn answer(
        &mut self,
        message: &[u8],
        timeout: Option<Duration>,
    ) -> Result<(), RelayError> {
        match self.h2.as_deref_mut() {
            None => write_all(&mut self.stream, message, timeout).await,
            // Boxed: the common path's futures stay small.
            Some(h2) => Box::pin(h2.answer(message, timeout)).await,
        }
    }

    /// Reads until a complete head (ending with a blank line) is buffered
    /// and splits it off. `max` bounds the head size; `timeout` bounds the
    /// whole wait.
    pub(crate) async fn read_head(
        &mut self,
        max: usize,
        timeout: Option<Duration>,
    ) -> Result<Bytes, HeadError> {
        // Set when the wait first has to wait: a head already in the
        // socket (a keep-alive client's next request, once it is readable)
        // is read without a clock read or a timer.
        let mut deadline: Option<tokio::time::Instant> = None;
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
            let limit = match (deadline, timeout) {
                (Some(d), _) => Limit::At(d),
                (None, t) => Limit::after(t),
            };
            let (filled, armed) = {
                let mut wait = std::pin::pin!(Deadline::new(self.fill(None), limit));
                let filled = wait.as_mut().await.unwrap_or(Err(RelayError::ReadTimeout));
                (filled, wait.armed())
            };
            deadline = deadline.or(armed);
            match filled {
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

pub(crate) async fn write_all(
    stream: &mut Stream,
    data: &[u8],
    timeout: Option<Duration>,
) -> Result<(), RelayError> {
    match stream {
        Stream::Tcp(s) => write_all_tcp(s, data, timeout).await,
        Stream::Tls(_) | Stream::Pipe(_) | Stream::Frames(_) | Stream::Fcgi(_) => {
            write_all_flushed(stream, &[data], timeout).await
        }
    }
}

async fn write_all_tcp(
    stream: &mut crate::tls::TcpConn,
    mut data: &[u8],
    timeout: Option<Duration>,
) -> Result<(), RelayError> {
    // Most writes fit the socket buffer at once: try without arming a
    // timer, which would cost a clock read and a timer-wheel entry.
    match stream.try_write(data) {
        Ok(n) if n == data.len() => return Ok(()),
        Ok(n) => data = &data[n..],
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
        Err(e) => return Err(RelayError::Write(e)),
    }
    match with_timeout(timeout, stream.write_all(data)).await {
        None => Err(RelayError::WriteTimeout),
        Some(Err(e)) => Err(RelayError::Write(e)),
        Some(Ok(())) => Ok(()),
    }
}

/// The most plaintext one TLS record carries.
const TLS_RECORD_MAX: usize = 16 * 1024;

/// TLS: the parts go into the TLS session (one record each at most per
/// 16 KiB), then the records are flushed to the socket: rustls keeps what
/// the socket did not take, so a write is complete only once flushed.
async fn write_all_flushed(
    stream: &mut Stream,
    parts: &[&[u8]],
    timeout: Option<Duration>,
) -> Result<(), RelayError> {
    // Parts that fit one TLS record go in as one: a head and a small
    // body become one record and one system call rather than two of
    // each (OpenSSL under HAProxy writes its buffer in one `SSL_write`).
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let joined = (parts.len() > 1 && total <= TLS_RECORD_MAX).then(|| {
        let mut buf = HeadBuf::new();
        for p in parts {
            buf.extend_from_slice(p);
        }
        buf
    });
    let one: [&[u8]; 1];
    let parts = match &joined {
        Some(buf) => {
            one = [&buf[..]];
            &one[..]
        }
        None => parts,
    };
    let fut = async {
        for p in parts {
            stream.write_all(p).await?;
        }
        stream.flush().await
    };
    match with_timeout(timeout, fut).await {
        None => Err(RelayError::WriteTimeout),
        Some(Err(e)) => Err(RelayError::Write(e)),
        Some(Ok(())) => Ok(()),
    }
}

/// Writes `N` parts in order with vectored writes until all are out,
/// without allocating.
async fn write_array<const N: usize>(
    dst: &mut Stream,
    mut parts: [&[u8]; N],
    timeout: Option<Duration>,
) -> Result<(), RelayError> {
    let dst = match dst {
        Stream::Tcp(s) => s,
        Stream::Tls(_) | Stream::Pipe(_) | Stream::Frames(_) | Stream::Fcgi(_) => {
            return write_all_flushed(dst, &parts, timeout).await;
        }
    };
    // Drops the `n` bytes written from the front of `parts` (emptied
    // parts stay, as empty slices: writev skips them).
    fn advance(parts: &mut [&[u8]], mut n: usize) {
        for p in parts.iter_mut() {
            if n < p.len() {
                *p = &p[n..];
                return;
            }
            n -= p.len();
            *p = &[];
        }
    }
    // As in `write_all`: first without a timer.
    match dst.try_write_vectored(&parts.map(std::io::IoSlice::new)) {
        Ok(n) => advance(&mut parts, n),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
        Err(e) => return Err(RelayError::Write(e)),
    }
    while parts.iter().any(|p| !p.is_empty()) {
        let n = match with_timeout(
            timeout,
            dst.write_vectored(&parts.map(std::io::IoSlice::new)),
        )
        .await
        {
            None => return Err(RelayError::WriteTimeout),
            Some(Err(e)) => return Err(RelayError::Write(e)),
            Some(Ok(0)) => return Err(RelayError::Write(io::ErrorKind::WriteZero.into())),
            Some(Ok(n)) => n,
        };
        advance(&mut parts, n);
    }
    Ok(())
}

/// Writes `a` then `b` with vectored writes until both are out.
async fn write_two(
    dst: &mut Stream,
    a: &[u8],
    b: &[u8],
    timeout: Option<Duration>,
) -> Result<(), RelayError> {
    let dst = match dst {
        Stream::Tcp(s) => s,
        Stream::Tls(_) | Stream::Pipe(_) | Stream::Frames(_) | Stream::Fcgi(_) => {
            return write_all_flushed(dst, &[a, b], timeout).await;
        }
    };
    let (mut a, mut b) = (a, b);
    // As in `write_all`: first without a timer.
    match dst.try_write_vectored(&[std::io::IoSlice::new(a), std::io::IoSlice::new(b)]) {
        Ok(n) if n < a.len() => a = &a[n..],
        Ok(n) => {
            b = &b[n - a.len()..];
            a = &[];
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
        Err(e) => return Err(RelayError::Write(e)),
    }
    while !a.is_empty() {
        let bufs = [std::io::IoSlice::new(a), std::io::IoSlice::new(b)];
        let n = match with_timeout(timeout, dst.write_vectored(&bufs)).await {
            None => return Err(RelayError::WriteTimeout),
            Some(Err(e)) => return Err(RelayError::Write(e)),
            Some(Ok(0)) => return Err(RelayError::Write(io::ErrorKind::WriteZero.into())),
            Some(Ok(n)) => n,
        };
        if n < a.len() {
            a = &a[n..];
        } else {
            b = &b[n - a.len()..];
            a = &[];
        }
    }
    if b.is_empty() {
        return Ok(());
    }
    write_all_tcp(dst, b, timeout).await
}

/// A chunked body's end without trailer fields.
const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// What [`relay_message`] moved of a body: the bytes read from the source
/// (its framing included: the stats count those) and the body's size as
/// HAProxy 2.6 logs it (`wire::logged_size`: a chunked body its data, its
/// trailer fields and one byte more).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Relayed {
    pub(crate) wire: u64,
    pub(crate) logged: u64,
}

/// Relays a message to `dst`: first `head` (already serialized), then the
/// body from `src` as it arrives, never holding more than one read's worth.
/// The head goes out in the same write as the body bytes already buffered,
/// which saves a system call on every small response. Returns the body
/// bytes relayed ([`Relayed`]); bytes after the body stay in `src.buf` (a pipelined
/// next message). A long body of known length is spliced unless `tune`
/// says `nosplice`. A chunked body's trailer fields go out as the head's
/// do: in lower case (respelled by `names`, `h1-case-adjust`), written
/// `name: value`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn relay_message(
    head: &mut BytesMut,
    src: &mut BufConn,
    dst: &mut Stream,
    kind: BodyKind,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    tune: crate::wire::splice::Tune,
    names: Option<&h1::CaseAdjust>,
) -> Result<Relayed, RelayError> {
    #[cfg(not(target_os = "linux"))]
    let _ = tune;
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
                // Plain sockets both sides only: TLS bytes must be
                // decrypted and encrypted in user space.
                #[cfg(target_os = "linux")]
                if let (Stream::Tcp(_), Stream::Tcp(_)) = (&src.stream, &*out.dst)
                    && src.buf.is_empty()
                    && left >= SPLICE_MIN
                    && !tune.disabled
                {
                    out.send(&[]).await?;
                    // The kernel moves the bytes: both sockets wait on
                    // the reactor.
                    if let (Stream::Tcp(from), Stream::Tcp(to)) = (&mut src.stream, &mut *out.dst)
                        && let (Ok(from), Ok(to)) = (from.reactor(), to.reactor())
                    {
                        crate::wire::splice::transfer(
                            from,
                            to,
                            left,
                            read_timeout,
                            write_timeout,
                            tune,
                        )
                        .await?;
                        total += left;
                        break;
                    }
                }
                if src.buf.is_empty() && out.fill_src(src, read_timeout).await? == 0 {
                    return Err(RelayError::Truncated);
                }
                // The last read stopped at the buffer's end, not at the
                // socket's: more is likely waiting.
                let full = src.buf.len() == src.buf.capacity();
                let take = (src.buf.len() as u64).min(left) as usize;
                let chunk = src.buf.split_to(take);
                left -= take as u64;
                total += take as u64;
                if full
                    && left > 0
                    && let Some(more) = read_ahead(src, left)?
                {
                    out.send_two(&chunk, &more).await?;
                    left -= more.len() as u64;
                    total += more.len() as u64;
                    give_buffer_if_unique(more);
                    continue;
                }
                out.send(&chunk).await?;
            }
        }
        BodyKind::Chunked => {
            // Re-chunked as HAProxy does: the peer never sees the sender's
            // chunk-size text (leading zeros, sizes a 32-bit parser would
            // truncate) nor its extensions, only sizes of sluice's own:
            // what one read brought is one chunk. Trailer fields are
            // written again, as HAProxy writes them.
            let mut dec = ChunkedDecoder::default();
            // The last chunk and trailers, sent once the body is complete.
            let mut tail = BytesMut::new();
            let mut tail_logged = None;
            // The data of several chunks in one read, joined.
            let mut joined = BytesMut::new();
            while !dec.is_done() {
                if src.buf.is_empty() && out.fill_src(src, read_timeout).await? == 0 {
                    return Err(RelayError::Truncated);
                }
                let mut data: Option<std::ops::Range<usize>> = None;
                let buf = &src.buf[..];
                let pos = walk_chunked(&mut dec, buf, &mut tail, |r| match data.take() {
                    None => data = Some(r),
                    Some(first) => {
                        if joined.is_empty() {
                            joined.extend_from_slice(&buf[first]);
                        }
                        joined.extend_from_slice(&buf[r]);
                        data = Some(0..0);
                    }
                })?;
                let body: &[u8] = match data {
                    None => b"",
                    Some(r) if joined.is_empty() => &src.buf[r],
                    Some(_) => &joined,
                };
                if dec.is_done() && tail.len() > LAST_CHUNK.len() {
                    // The logged size is HAProxy's measure of the fields
                    // as received.
                    tail_logged = Some(crate::wire::logged_size::trailers(&tail));
                    tail = h1::rewrite_trailers(&tail, names);
                }
                let end: &[u8] = if dec.is_done() { &tail } else { b"" };
                out.send_chunk(body, end).await?;
                joined.clear();
                let _ = src.buf.split_to(pos);
                total += pos as u64;
            }
            // The decoder counted the data; the trailers are measured
            // once, at the end (most bodies have none).
            out.send(&[]).await?;
            return Ok(Relayed {
                wire: total,
                logged: dec.body_len()
                    + tail_logged.unwrap_or_else(|| crate::wire::logged_size::trailers(&tail))
                    + crate::wire::logged_size::END_OF_CHUNKED,
            });
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
    Ok(Relayed {
        wire: total,
        logged: total,
    })
}

/// `n` in upper-case hex without leading zeros, then CRLF: a chunk's size
/// line, written into `out`.
fn chunk_size_line(n: usize, out: &mut [u8; 18]) -> &[u8] {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let digits = ((usize::BITS - n.leading_zeros()).div_ceil(4)).max(1) as usize;
    for i in 0..digits {
        out[digits - 1 - i] = HEX[(n >> (4 * i)) & 0xf];
    }
    out[digits] = b'\r';
    out[digits + 1] = b'\n';
    &out[..digits + 2]
}

/// What a plain socket already holds of the rest of a body (`left` bytes)
/// whose last read filled its buffer, read into a second buffer without
/// waiting: sent with the first, it costs the receiver one wake-up and the
/// sender one write rather than two of each (nginx reads a large answer
/// into several buffers the same way). None when nothing is there yet
/// (one `recv` that finds nothing), at the end of the stream (the next
/// read sees it again), or on another stream than a plain socket. Bytes
/// past the body stay in `src.buf` (a pipelined next message).
fn read_ahead(src: &mut BufConn, left: u64) -> Result<Option<BytesMut>, RelayError> {
    if !matches!(src.stream, Stream::Tcp(_)) || !src.buf.is_empty() {
        return Ok(None);
    }
    let mut more = take_buffer();
    // Polled once, as the reactor's reads are: a short read clears the
    // socket's readiness, so the pool knows a drained connection without
    // a probe (`state::pool`); a read that would block leaves a waker that
    // the next real wait replaces.
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let read = std::future::Future::poll(std::pin::pin!(src.stream.read_buf(&mut more)), &mut cx);
    match read {
        std::task::Poll::Ready(Ok(0)) | std::task::Poll::Pending => {}
        std::task::Poll::Ready(Ok(n)) => {
            if n as u64 > left {
                src.buf = more.split_off(left as usize);
            }
            return Ok(Some(more));
        }
        // Reported now: a socket reports its error once.
        std::task::Poll::Ready(Err(e)) => return Err(RelayError::Read(e)),
    }
    give_buffer(more);
    Ok(None)
}

/// Back to the thread's spares, unless part of it is still in use
/// elsewhere (bytes past a body, kept in the connection's buffer).
fn give_buffer_if_unique(buf: BytesMut) {
    if buf.capacity() >= READ_CHUNK {
        give_buffer(buf);
    }
}

/// Goes through the chunked body bytes at the start of `buf` with `dec`:
/// each run of data is handed to `data` (its range in `buf`), the last
/// chunk and its trailer section as received (`0` and CRLF first) are
/// added to `tail`. Returns how far it went: the end of `buf`, or of the
/// body.
pub(crate) fn walk_chunked(
    dec: &mut ChunkedDecoder,
    buf: &[u8],
    tail: &mut BytesMut,
    mut data: impl FnMut(std::ops::Range<usize>),
) -> Result<usize, RelayError> {
    let mut pos = 0;
    while pos < buf.len() && !dec.is_done() {
        let left = dec.data_left();
        if left > 0 {
            let take = ((buf.len() - pos) as u64).min(left) as usize;
            let r = pos..pos + take;
            // Inside a chunk's data: cannot fail.
            dec.feed(&buf[r.clone()])
                .map_err(|e| RelayError::Framing(e, dec.error_spot()))?;
            data(r);
            pos += take;
            continue;
        }
        let was_in_trailers = dec.in_trailers();
        let end = dec
            .feed_framing(buf, pos)
            .map_err(|e| RelayError::Framing(e, dec.error_spot()))?;
        if let Some(at) = dec.trailers_at() {
            tail.extend_from_slice(b"0\r\n");
            tail.extend_from_slice(&buf[at..end]);
        } else if was_in_trailers {
            tail.extend_from_slice(&buf[pos..end]);
        }
        pos = end;
    }
    Ok(pos)
}

/// The write side of a relay, holding the head until the first body bytes
/// can go with it.
struct Outgoing<'a> {
    head: &'a mut BytesMut,
    dst: &'a mut Stream,
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
        // Head and first body bytes in one system call, without copying
        // the body behind the head.
        let r = write_two(self.dst, self.head, chunk, self.write_timeout).await;
        self.head.clear();
        r
    }

    /// Two pieces of a body, in one system call with the head if it is
    /// still held.
    async fn send_two(&mut self, a: &[u8], b: &[u8]) -> Result<(), RelayError> {
        if self.head.is_empty() {
            return write_two(self.dst, a, b, self.write_timeout).await;
        }
        let r = write_array(self.dst, [&self.head[..], a, b], self.write_timeout).await;
        self.head.clear();
        r
    }

    /// A piece of a re-chunked body: `data` as one chunk (none when
    /// empty), then `end` (the last chunk and trailers, or nothing), in as
    /// few system calls as the socket allows (behind the head if it is
    /// still held: the size line is copied after it).
    async fn send_chunk(&mut self, data: &[u8], end: &[u8]) -> Result<(), RelayError> {
        // HAProxy's own chunk sizes: upper-case hex, no leading zeros.
        let mut size_line = [0u8; 18];
        let size: &[u8] = if data.is_empty() {
            b""
        } else {
            chunk_size_line(data.len(), &mut size_line)
        };
        let crlf: &[u8] = if data.is_empty() { b"" } else { b"\r\n" };
        if self.head.is_empty() {
            return write_array(self.dst, [size, data, crlf, end], self.write_timeout).await;
        }
        self.head.extend_from_slice(size);
        let r = write_array(
            self.dst,
            [&self.head[..], data, crlf, end],
            self.write_timeout,
        )
        .await;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunk sizes as HAProxy writes them: upper-case hex, no leading
    /// zeros.
    #[test]
    fn chunk_size_lines() {
        let mut out = [0u8; 18];
        for (n, want) in [
            (1usize, &b"1\r\n"[..]),
            (0xF, b"F\r\n"),
            (0x10, b"10\r\n"),
            (16384, b"4000\r\n"),
            (0xABCDEF, b"ABCDEF\r\n"),
            (usize::MAX, b"FFFFFFFFFFFFFFFF\r\n"),
        ] {
            assert_eq!(chunk_size_line(n, &mut out), want, "{n}");
        }
    }

    /// A body is skippable only when all of it, its last chunk and
    /// trailers too, is in the buffer.
    #[test]
    fn pending_bodies() {
        let cases: [(BodyKind, &[u8], PendingBody); 7] = [
            (BodyKind::None, b"GET / ", PendingBody::None),
            (BodyKind::Length(5), b"helloGET", PendingBody::Buffered(5)),
            (BodyKind::Length(5), b"hel", PendingBody::Partial),
            (
                BodyKind::Chunked,
                b"5\r\nhello\r\n0\r\nx-t: 1\r\n\r\nGET",
                PendingBody::Buffered(23),
            ),
            (
                BodyKind::Chunked,
                b"5\r\nhello\r\n0\r\n",
                PendingBody::Partial,
            ),
            (BodyKind::Chunked, b"zz\r\n", PendingBody::Partial),
            (BodyKind::UntilClose, b"", PendingBody::Partial),
        ];
        for (kind, buf, want) in cases {
            assert_eq!(PendingBody::of(kind, buf), want, "{kind:?} {buf:?}");
        }
    }
}
