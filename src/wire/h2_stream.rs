//! One stream of an HTTP/2 client connection as the request pipeline
//! serves it, without an HTTP/1 pipe between them: the request body is
//! read from the stream's DATA frames in its HTTP/1 framing (chunked, the
//! client's trailers in the last chunk, when the client gave no length;
//! [`H2Body`], the client connection's `Stream::Frames`), and answers go
//! out as HEADERS, DATA and trailers ([`H2Stream`], `BufConn::h2`), under
//! the stream's flow control both ways.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use h2::server::SendResponse;
use h2::{Reason, RecvStream, SendStream};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};

use crate::wire::h1::{BodyKind, ChunkedDecoder, Head};
use crate::wire::h2_convert;
use crate::wire::io::{BufConn, RelayError, Relayed, walk_chunked, with_timeout};

/// The last piece of a body up to this size is handed to the frame layer
/// without waiting for window: at most this much waits there per stream.
const DIRECT_MAX: usize = 16 * 1024;

/// Body pieces below this size are copied out of the server connection's
/// read buffer; larger ones are handed to the frame layer as they are
/// (splitting the buffer would cost it its allocation for one small copy).
const SHARE_MIN: usize = 4 * 1024;

/// One client stream as the pipeline answers it (its request body is an
/// [`H2Body`], read through the client connection's `Stream::Frames`).
#[derive(Debug)]
pub(crate) struct H2Stream {
    /// The stream's DATA for a tunnel (an extended CONNECT), whose bytes
    /// are relayed as they are rather than read as a body.
    recv: Option<RecvStream>,
    /// DATA frames received through a tunnel.
    data_frames: u64,
    /// A HEAD request: answers carry no body.
    head_only: bool,
    reply: Reply,
}

/// Where the answer stands.
#[derive(Debug)]
enum Reply {
    /// Nothing sent yet.
    Head(SendResponse<Bytes>),
    /// HEADERS sent, the stream still open.
    Body(SendStream<Bytes>),
    /// The stream ended (or failed).
    Done,
}

/// The stream was reset by the client, or the connection is gone.
fn gone() -> RelayError {
    RelayError::Write(io::ErrorKind::BrokenPipe.into())
}

/// A stream's request body as the pipeline reads it: its DATA frames in
/// the body's HTTP/1 framing (chunked, the client's trailers in the last
/// chunk, when the client gave no length). Each frame's window goes back
/// as soon as it is taken (HAProxy gives it back after every DATA frame),
/// so a slow server slows the client by the stream's window. A body the
/// client cut (a reset) ends early, as a connection closing would: the
/// pipeline sees it truncated. `frames` is called for each DATA frame.
pub(crate) struct H2Body<C> {
    /// None once the end (or a reset) was read.
    recv: Option<RecvStream>,
    /// The DATA frames are all read (the trailers may be next).
    data_done: bool,
    chunked: bool,
    /// What the last frame gave and the reader had no room for yet.
    pending: Bytes,
    frames: C,
}

impl<C> H2Body<C> {
    pub(crate) fn new(recv: RecvStream, chunked: bool, frames: C) -> H2Body<C> {
        H2Body {
            recv: Some(recv),
            data_done: false,
            chunked,
            pending: Bytes::new(),
            frames,
        }
    }
}

impl<C: Fn()> H2Body<C> {
    /// The next piece of the body in its HTTP/1 framing; None at its end.
    fn poll_piece(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let Some(recv) = self.recv.as_mut() else {
            return Poll::Ready(None);
        };
        while !self.data_done {
            match ready!(recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    (self.frames)();
                    if data.is_empty() {
                        continue;
                    }
                    let n = data.len();
                    let _ = recv.flow_control().release_capacity(n);
                    if !self.chunked {
                        return Poll::Ready(Some(data));
                    }
                    let mut piece = BytesMut::with_capacity(n + 12);
                    put_hex(&mut piece, n);
                    piece.put_slice(b"\r\n");
                    piece.put_slice(&data);
                    piece.put_slice(b"\r\n");
                    return Poll::Ready(Some(piece.freeze()));
                }
                Some(Err(_)) => {
                    self.recv = None;
                    return Poll::Ready(None);
                }
                None => self.data_done = true,
            }
        }
        if !self.chunked {
            self.recv = None;
            return Poll::Ready(None);
        }
        // The last chunk, with the client's trailers as its trailer fields.
        let trailers = match ready!(recv.poll_trailers(cx)) {
            Ok(t) => t,
            Err(_) => {
                self.recv = None;
                return Poll::Ready(None);
            }
        };
        self.recv = None;
        let mut last = BytesMut::from(&b"0\r\n"[..]);
        if let Some(t) = trailers {
            h2_convert::put_fields(&mut last, &t);
        }
        last.put_slice(b"\r\n");
        Poll::Ready(Some(last.freeze()))
    }
}

impl<C: Fn() + Unpin> AsyncRead for H2Body<C> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.pending.is_empty() {
            match ready!(this.poll_piece(cx)) {
                Some(p) => this.pending = p,
                None => return Poll::Ready(Ok(())),
            }
        }
        read_from(&mut this.pending, buf);
        Poll::Ready(Ok(()))
    }
}

/// Moves what `buf` has room for from the front of `pending`; an emptied
/// `pending` lets go of its allocation.
pub(crate) fn read_from(pending: &mut Bytes, buf: &mut ReadBuf<'_>) {
    let n = pending.len().min(buf.remaining());
    buf.put_slice(&pending[..n]);
    pending.advance(n);
    if pending.is_empty() {
        *pending = Bytes::new();
    }
}

impl H2Stream {
    /// `tunnel`: the stream's DATA for an extended CONNECT (None for any
    /// other request, whose body is an [`H2Body`]).
    pub(crate) fn new(
        respond: SendResponse<Bytes>,
        tunnel: Option<RecvStream>,
        head_only: bool,
    ) -> H2Stream {
        H2Stream {
            recv: tunnel,
            data_frames: 0,
            head_only,
            reply: Reply::Head(respond),
        }
    }

    /// DATA frames the client sent through a tunnel.
    pub(crate) fn data_frames(&self) -> u64 {
        self.data_frames
    }

    /// Sends an answer sluice made in its HTTP/1 form (an error page, a
    /// reply, the stats page): its status and fields as HEADERS, its body
    /// as DATA. An interim answer (`100 Continue`) is not sent: HTTP/2
    /// clients are not kept waiting for one.
    pub(crate) async fn answer(
        &mut self,
        message: &[u8],
        timeout: Option<Duration>,
    ) -> Result<(), RelayError> {
        let end = crate::wire::h1::head_end(message).unwrap_or(message.len());
        let head = Head::parse_response(Bytes::copy_from_slice(&message[..end]))
            .map_err(|e| RelayError::Write(io::Error::other(e)))?;
        if (100..200).contains(&head.status) {
            return Ok(());
        }
        let method: &[u8] = if self.head_only { b"HEAD" } else { b"GET" };
        let kind = head.response_body(method).unwrap_or(BodyKind::UntilClose);
        let rest = &message[end..];
        let body = match kind {
            BodyKind::None => Bytes::new(),
            BodyKind::Length(n) => Bytes::copy_from_slice(&rest[..rest.len().min(n as usize)]),
            BodyKind::UntilClose => Bytes::copy_from_slice(rest),
            BodyKind::Chunked => {
                let mut input = BytesMut::from(rest);
                let mut d = h2_convert::Dechunker::default();
                let mut out = BytesMut::new();
                while let Ok(Some(c)) = d.next(&mut input) {
                    out.put_slice(&c);
                }
                out.freeze()
            }
        };
        let response = h2_convert::response(&head).ok_or_else(gone)?;
        let mut out = Out {
            stream: self,
            pending: Some(response),
            timeout,
        };
        if body.is_empty() {
            return out.end().await;
        }
        out.data(body, true).await
    }

    /// Relays a server's response: `response` as HEADERS (once the first
    /// body bytes are ready, or at the end: a body refused from its first
    /// bytes still leaves room for the 502; `head`, the response's HTTP/1
    /// form, is emptied when they go), then the body of framing `kind`
    /// from `src` as DATA, a chunked body's trailer fields as trailers.
    /// What it moved is counted as an HTTP/1 relay counts it.
    pub(crate) async fn deliver(
        &mut self,
        head: &mut BytesMut,
        response: h2_convert::ResponseHead,
        src: &mut BufConn,
        kind: BodyKind,
        read_timeout: Option<Duration>,
        write_timeout: Option<Duration>,
    ) -> Result<Relayed, RelayError> {
        let mut out = Out {
            stream: self,
            pending: Some(response),
            timeout: write_timeout,
        };
        let r = relay_body(&mut out, src, kind, read_timeout).await;
        if out.pending.is_none() {
            head.clear();
        }
        r
    }

    /// [`deliver`](Self::deliver) without waiting, for the common case: no
    /// body, or a small one all in `src`'s buffer, handed to the frame
    /// layer whole (it goes out as the client's window allows). The
    /// response comes back (`Err`) when the body is another.
    pub(crate) fn deliver_at_once(
        &mut self,
        head: &mut BytesMut,
        response: h2_convert::ResponseHead,
        src: &mut BufConn,
        kind: BodyKind,
    ) -> Result<Result<Relayed, RelayError>, h2_convert::ResponseHead> {
        let n = match kind {
            BodyKind::None => 0,
            BodyKind::Length(n) if n <= DIRECT_MAX as u64 && src.buf.len() as u64 >= n => {
                n as usize
            }
            _ => return Err(response),
        };
        let Reply::Head(mut respond) = std::mem::replace(&mut self.reply, Reply::Done) else {
            return Ok(Err(gone()));
        };
        let Ok(mut send) =
            respond.send_encoded_response(response.status, response.block.freeze(), n == 0)
        else {
            return Ok(Err(gone()));
        };
        head.clear();
        if n > 0 && send.send_data(take_bytes(&mut src.buf, n), true).is_err() {
            // Reset by `finish`.
            self.reply = Reply::Body(send);
            return Ok(Err(gone()));
        }
        let n = n as u64;
        Ok(Ok(Relayed { wire: n, logged: n }))
    }

    /// A tunnel (an extended CONNECT the server switched, RFC 8441): the
    /// answer as HEADERS (a 200, as HAProxy answers it), then the bytes
    /// both ways until each side ends, as DATA frames to the client;
    /// `idle` is each side's inactivity limit, the client's first. The
    /// bytes moved each way: from the client, to it.
    pub(crate) async fn tunnel(
        &mut self,
        response: h2_convert::ResponseHead,
        up: &mut BufConn,
        (client_idle, server_idle): (Option<Duration>, Option<Duration>),
    ) -> (u64, u64) {
        let Reply::Head(mut respond) = std::mem::replace(&mut self.reply, Reply::Done) else {
            return (0, 0);
        };
        let Ok(mut send) =
            respond.send_encoded_response(response.status, response.block.freeze(), false)
        else {
            return (0, 0);
        };
        let early = up.buf.split().freeze();
        let (mut rd, mut wr) = tokio::io::split(&mut up.stream);
        let recv = self.recv.take();
        let frames = &mut self.data_frames;
        let to_server = async {
            let mut moved = 0u64;
            let Some(mut recv) = recv else {
                let _ = wr.shutdown().await;
                return moved;
            };
            while let Some(Some(Ok(data))) = with_timeout(client_idle, recv.data()).await {
                *frames += 1;
                let _ = recv.flow_control().release_capacity(data.len());
                if with_timeout(server_idle, wr.write_all(&data))
                    .await
                    .is_none_or(|r| r.is_err())
                {
                    return moved;
                }
                moved += data.len() as u64;
            }
            let _ = wr.shutdown().await;
            moved
        };
        let to_client = async {
            let mut moved = early.len() as u64;
            if !early.is_empty()
                && send_data(&mut send, early, client_idle, false)
                    .await
                    .is_err()
            {
                return 0;
            }
            let mut buf = BytesMut::new();
            loop {
                buf.reserve(16 * 1024);
                match with_timeout(server_idle, rd.read_buf(&mut buf)).await {
                    Some(Ok(0)) => {
                        let _ = send.send_data(Bytes::new(), true);
                        return moved;
                    }
                    Some(Ok(n)) => {
                        moved += n as u64;
                        let data = buf.split().freeze();
                        if send_data(&mut send, data, client_idle, false)
                            .await
                            .is_err()
                        {
                            return moved;
                        }
                    }
                    _ => {
                        send.send_reset(Reason::CANCEL);
                        return moved;
                    }
                }
            }
        };
        tokio::join!(to_server, to_client)
    }

    /// The stream's end once the pipeline is done with it: an answer that
    /// never came or broke off resets the stream, as the client would
    /// otherwise wait for it.
    pub(crate) fn finish(&mut self) {
        match std::mem::replace(&mut self.reply, Reply::Done) {
            Reply::Head(mut r) => r.send_reset(Reason::INTERNAL_ERROR),
            Reply::Body(mut s) => s.send_reset(Reason::INTERNAL_ERROR),
            Reply::Done => {}
        }
    }
}

/// The answer on its way: HEADERS held until the first body bytes (or
/// the end), then DATA.
struct Out<'s> {
    stream: &'s mut H2Stream,
    pending: Option<h2_convert::ResponseHead>,
    timeout: Option<Duration>,
}

impl Out<'_> {
    /// Sends the HEADERS if they are still held; `end`: nothing follows.
    fn open(&mut self, end: bool) -> Result<(), RelayError> {
        let Some(response) = self.pending.take() else {
            return Ok(());
        };
        let Reply::Head(mut respond) = std::mem::replace(&mut self.stream.reply, Reply::Done)
        else {
            return Err(gone());
        };
        let send = respond
            .send_encoded_response(response.status, response.block.freeze(), end)
            .map_err(|_| gone())?;
        if !end {
            self.stream.reply = Reply::Body(send);
        }
        Ok(())
    }

    async fn data(&mut self, data: Bytes, end: bool) -> Result<(), RelayError> {
        self.open(false)?;
        let Reply::Body(send) = &mut self.stream.reply else {
            return Err(gone());
        };
        // A stream that failed stays open here: `finish` resets it.
        let r = send_data(send, data, self.timeout, end).await;
        if end && r.is_ok() {
            self.stream.reply = Reply::Done;
        }
        r
    }

    /// The end of the stream: on the HEADERS if nothing was sent, else
    /// on an empty DATA frame.
    async fn end(&mut self) -> Result<(), RelayError> {
        if self.pending.is_some() {
            return self.open(true);
        }
        self.data(Bytes::new(), true).await
    }

    /// The end of the stream on trailer fields.
    fn trailers(&mut self, fields: http::HeaderMap) -> Result<(), RelayError> {
        self.open(false)?;
        let Reply::Body(mut send) = std::mem::replace(&mut self.stream.reply, Reply::Done) else {
            return Err(gone());
        };
        send.send_trailers(fields).map_err(|_| gone())
    }
}

/// A response body of framing `kind` from `src` to the stream.
async fn relay_body(
    out: &mut Out<'_>,
    src: &mut BufConn,
    kind: BodyKind,
    read_timeout: Option<Duration>,
) -> Result<Relayed, RelayError> {
    let mut total = 0u64;
    match kind {
        BodyKind::None => out.end().await?,
        BodyKind::Length(mut left) => {
            while left > 0 {
                if src.buf.is_empty() {
                    // The head does not wait behind a slow body.
                    out.open(false)?;
                    if src.fill(read_timeout).await? == 0 {
                        return Err(RelayError::Truncated);
                    }
                }
                let take = (src.buf.len() as u64).min(left) as usize;
                let data = take_bytes(&mut src.buf, take);
                left -= take as u64;
                total += take as u64;
                out.data(data, left == 0).await?;
            }
        }
        BodyKind::UntilClose => loop {
            if src.buf.is_empty() {
                out.open(false)?;
                if src.fill(read_timeout).await? == 0 {
                    out.end().await?;
                    break;
                }
            }
            let n = src.buf.len();
            let data = take_bytes(&mut src.buf, n);
            total += n as u64;
            out.data(data, false).await?;
        },
        BodyKind::Chunked => return relay_chunked(out, src, read_timeout).await,
    }
    Ok(Relayed {
        wire: total,
        logged: total,
    })
}

/// A chunked body's data as DATA frames, its trailer fields as trailers;
/// counted as `io::relay_message` counts a chunked body.
async fn relay_chunked(
    out: &mut Out<'_>,
    src: &mut BufConn,
    read_timeout: Option<Duration>,
) -> Result<Relayed, RelayError> {
    let mut dec = ChunkedDecoder::default();
    // The last chunk and its trailer fields, as received.
    let mut tail = BytesMut::new();
    let mut total = 0u64;
    while !dec.is_done() {
        if src.buf.is_empty() {
            out.open(false)?;
            if src.fill(read_timeout).await? == 0 {
                return Err(RelayError::Truncated);
            }
        }
        let mut data = BytesMut::new();
        let buf = &src.buf[..];
        let pos = walk_chunked(&mut dec, buf, &mut tail, |r| {
            data.extend_from_slice(&buf[r])
        })?;
        src.buf.advance(pos);
        total += pos as u64;
        if !data.is_empty() {
            out.data(data.freeze(), false).await?;
        }
    }
    let logged = dec.body_len()
        + crate::wire::logged_size::trailers(&tail)
        + crate::wire::logged_size::END_OF_CHUNKED;
    let fields = h2_convert::trailer_fields(&tail);
    if fields.is_empty() {
        out.end().await?;
    } else {
        out.trailers(fields)?;
    }
    Ok(Relayed {
        wire: total,
        logged,
    })
}

/// The first `n` bytes of `buf`, taken off it: copied when few (the
/// buffer keeps its allocation for the next read), else shared.
fn take_bytes(buf: &mut BytesMut, n: usize) -> Bytes {
    if n < SHARE_MIN {
        let b = Bytes::copy_from_slice(&buf[..n]);
        buf.advance(n);
        b
    } else {
        buf.split_to(n).freeze()
    }
}

/// `n` in lower-case hexadecimal.
fn put_hex(buf: &mut BytesMut, n: usize) {
    let digits = (usize::BITS - n.leading_zeros()).div_ceil(4).max(1);
    for i in (0..digits).rev() {
        buf.put_u8(b"0123456789abcdef"[(n >> (i * 4)) & 0xf]);
    }
}

/// Sends `data` as the peer's window allows, waiting at most `timeout`
/// for each grant; `end`: the last piece ends the stream.
pub(crate) async fn send_data(
    send: &mut SendStream<Bytes>,
    mut data: Bytes,
    timeout: Option<Duration>,
    end: bool,
) -> Result<(), RelayError> {
    // The whole of a small body: handed over as it is, the frame layer
    // sends it as the client's window allows. (Waiting for a grant of
    // capacity first costs more than the DATA frame.)
    if data.is_empty() || (end && data.len() <= DIRECT_MAX) {
        return send.send_data(data, end).map_err(|_| gone());
    }
    while !data.is_empty() {
        send.reserve_capacity(data.len());
        let granted = with_timeout(timeout, poll_fn(|cx| send.poll_capacity(cx))).await;
        let n = match granted {
            Some(Some(Ok(n))) => n,
            None => return Err(RelayError::WriteTimeout),
            Some(_) => return Err(gone()),
        };
        if n == 0 {
            continue;
        }
        let chunk = data.split_to(n.min(data.len()));
        send.send_data(chunk, end && data.is_empty())
            .map_err(|_| gone())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_sizes() {
        for n in [0usize, 1, 9, 10, 15, 16, 255, 256, 4096, 65535, 1 << 20] {
            let mut b = BytesMut::new();
            put_hex(&mut b, n);
            assert_eq!(&b[..], format!("{n:x}").as_bytes());
        }
    }
}
