//! A response body relayed through sluice's response filters: the
//! compressor (`compress.rs`) and the cache's store (`cache.rs`). One
//! read at a time: the data of each read is given to the filters and what
//! they make of it sent on at once, so memory stays bounded whatever the
//! body's size. Bodies that no filter touches never come here
//! (`wire::io::relay_message` relays them, spliced when it can).

use std::future::Future as _;
use std::time::Duration;

use bytes::BytesMut;

use crate::http::compress::Encoder;
use crate::tls::Stream;
use crate::wire::h1::{self, BodyKind, ChunkedDecoder};
use crate::wire::io::{self, BufConn, RelayError, Relayed};

/// Where the body's data goes besides the client: a cache entry being
/// filled. `false` from `take` stops the storing (too large...).
pub(crate) trait Sink {
    fn take(&mut self, data: &[u8]) -> bool;
    /// The whole body was taken (`end`: what a chunked body's end adds to
    /// it): called before the last bytes go to the client, so that the
    /// client's next request finds the object complete.
    fn end(&mut self, end: u64) -> bool;
}

/// What the filters of one body do with it.
pub(crate) struct Filters<'f> {
    /// Compressing (the client gets a chunked body of its output).
    pub(crate) enc: Option<Encoder>,
    /// Storing the (uncompressed) data.
    pub(crate) store: Option<&'f mut (dyn Sink + Send)>,
}

/// What a filtered relay moved: the source's bytes (framing included) and
/// the logged size, and the compressor's input and output.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Pumped {
    pub(crate) relayed: Relayed,
    /// Bytes sent to the client after the head (framing included).
    pub(crate) sent: u64,
    pub(crate) comp_in: u64,
    pub(crate) comp_out: u64,
}

/// The client's side of a filtered relay: the head held until the first
/// body bytes can go with it, the bytes of one read's output.
struct Out<'a> {
    head: &'a mut BytesMut,
    dst: &'a mut Stream,
    timeout: Option<Duration>,
    wbuf: BytesMut,
    sent: u64,
}

impl Out<'_> {
    /// Sends the head (if still held) and what is in `wbuf`.
    async fn flush(&mut self) -> Result<(), RelayError> {
        if !self.head.is_empty() {
            let mut all = std::mem::take(self.head);
            all.extend_from_slice(&self.wbuf);
            io::write_all(self.dst, &all, self.timeout).await?;
            all.clear();
            *self.head = all;
        } else if !self.wbuf.is_empty() {
            io::write_all(self.dst, &self.wbuf, self.timeout).await?;
        }
        self.sent += self.wbuf.len() as u64;
        self.wbuf.clear();
        Ok(())
    }

    /// `data` as one chunk (nothing when empty).
    fn chunk(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        // HAProxy's own chunk sizes: upper-case hex.
        self.wbuf
            .extend_from_slice(format!("{:X}\r\n", data.len()).as_bytes());
        self.wbuf.extend_from_slice(data);
        self.wbuf.extend_from_slice(b"\r\n");
    }
}

/// Output gathered before it is written, at most (several reads' worth
/// while the source has more at once).
const OUT_MAX: usize = 64 * 1024;

/// More of the body into `src`'s buffer: what is there already, without
/// waiting; else, before waiting, the encoder's output so far is flushed
/// and everything gathered sent, so the client never waits behind a pause
/// of the server's (the sync flush costs, so it is not made per read).
async fn refill(
    src: &mut BufConn,
    out: &mut Out<'_>,
    enc: Option<&mut Encoder>,
    p: &mut Pumped,
    t: Option<Duration>,
) -> Result<usize, RelayError> {
    {
        let fut = src.fill(None);
        let mut fut = std::pin::pin!(fut);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if let std::task::Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
            return r;
        }
    }
    if let Some(enc) = enc {
        let mut z = Vec::new();
        enc.flush(&mut z).map_err(RelayError::Write)?;
        p.comp_out += z.len() as u64;
        out.chunk(&z);
    }
    out.flush().await?;
    src.fill(t).await
}

/// Relays a response body of framing `kind` from `src` to `dst` after
/// `head`, through `filters`. Compressed, the body goes out chunked (the
/// head says so); otherwise in its own framing (re-chunked per read, as
/// `relay_message` does).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn relay(
    head: &mut BytesMut,
    src: &mut BufConn,
    dst: &mut Stream,
    kind: BodyKind,
    mut filters: Filters<'_>,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    names: Option<&h1::CaseAdjust>,
) -> Result<Pumped, RelayError> {
    let mut out = Out {
        head,
        dst,
        timeout: write_timeout,
        wbuf: BytesMut::new(),
        sent: 0,
    };
    let mut p = Pumped::default();
    let mut storing = filters.store.is_some();
    // The encoder's output of one read.
    let mut zout = Vec::new();
    let chunked_out = filters.enc.is_some() || kind == BodyKind::Chunked;
    // Gives one read's data to the filters and frames what is sent.
    let mut take = |data: &[u8],
                    out: &mut Out<'_>,
                    filters: &mut Filters<'_>,
                    p: &mut Pumped|
     -> Result<(), RelayError> {
        if data.is_empty() {
            return Ok(());
        }
        if storing && let Some(s) = filters.store.as_deref_mut() {
            storing = s.take(data);
        }
        match filters.enc.as_mut() {
            Some(enc) => {
                zout.clear();
                enc.feed(data, &mut zout).map_err(RelayError::Write)?;
                p.comp_in += data.len() as u64;
                p.comp_out += zout.len() as u64;
                out.chunk(&zout);
            }
            None if chunked_out => out.chunk(data),
            None => out.wbuf.extend_from_slice(data),
        }
        Ok(())
    };
    let mut trailers = BytesMut::new();
    match kind {
        BodyKind::None => {}
        BodyKind::Length(mut left) => {
            while left > 0 {
                if src.buf.is_empty()
                    && refill(src, &mut out, filters.enc.as_mut(), &mut p, read_timeout).await? == 0
                {
                    return Err(RelayError::Truncated);
                }
                let n = (src.buf.len() as u64).min(left) as usize;
                let data = src.buf.split_to(n);
                take(&data, &mut out, &mut filters, &mut p)?;
                left -= n as u64;
                p.relayed.wire += n as u64;
                // The last piece goes with the end, once the filters are
                // done with the body.
                if left > 0 && out.wbuf.len() >= OUT_MAX {
                    out.flush().await?;
                }
            }
            p.relayed.logged = p.relayed.wire;
        }
        BodyKind::Chunked => {
            let mut dec = ChunkedDecoder::default();
            let mut data = Vec::new();
            while !dec.is_done() {
                if src.buf.is_empty()
                    && refill(src, &mut out, filters.enc.as_mut(), &mut p, read_timeout).await? == 0
                {
                    return Err(RelayError::Truncated);
                }
                let mut pos = 0;
                while pos < src.buf.len() && !dec.is_done() {
                    let left = dec.data_left();
                    if left > 0 {
                        let n = ((src.buf.len() - pos) as u64).min(left) as usize;
                        dec.feed(&src.buf[pos..pos + n])
                            .map_err(|e| RelayError::Framing(e, dec.error_spot()))?;
                        data.extend_from_slice(&src.buf[pos..pos + n]);
                        pos += n;
                        continue;
                    }
                    let was_in_trailers = dec.in_trailers();
                    let end = dec
                        .feed_framing(&src.buf, pos)
                        .map_err(|e| RelayError::Framing(e, dec.error_spot()))?;
                    if let Some(at) = dec.trailers_at() {
                        trailers.extend_from_slice(b"0\r\n");
                        trailers.extend_from_slice(&src.buf[at..end]);
                    } else if was_in_trailers {
                        trailers.extend_from_slice(&src.buf[pos..end]);
                    }
                    pos = end;
                }
                take(&data, &mut out, &mut filters, &mut p)?;
                data.clear();
                let _ = src.buf.split_to(pos);
                p.relayed.wire += pos as u64;
                if !dec.is_done() && out.wbuf.len() >= OUT_MAX {
                    out.flush().await?;
                }
            }
            let tl = if trailers.len() > 5 {
                crate::wire::logged_size::trailers(&trailers)
            } else {
                0
            };
            p.relayed.logged = dec.body_len() + tl + crate::wire::logged_size::END_OF_CHUNKED;
            // HAProxy's compressor also takes the end of the message
            // (and the trailers) as input: one byte more.
            if filters.enc.as_ref().is_some_and(Encoder::compresses) {
                p.comp_in += 1 + tl;
            }
        }
        BodyKind::UntilClose => loop {
            if src.buf.is_empty()
                && refill(src, &mut out, filters.enc.as_mut(), &mut p, read_timeout).await? == 0
            {
                break;
            }
            let data = src.buf.split();
            take(&data, &mut out, &mut filters, &mut p)?;
            p.relayed.wire += data.len() as u64;
            p.relayed.logged = p.relayed.wire;
            if out.wbuf.len() >= OUT_MAX {
                out.flush().await?;
            }
        },
    }
    if let Some(enc) = filters.enc.take() {
        zout.clear();
        enc.finish(&mut zout).map_err(RelayError::Write)?;
        p.comp_out += zout.len() as u64;
        out.chunk(&zout);
    }
    if storing && let Some(s) = filters.store.as_deref_mut() {
        // A chunked body's end, as HAProxy stores it.
        let end = if kind == BodyKind::Chunked { 5 } else { 0 };
        // A fill that could not end is dropped by its owner: nothing stays.
        let _ = s.end(end);
    }
    if chunked_out {
        if trailers.len() > 5 {
            out.wbuf
                .extend_from_slice(&h1::rewrite_trailers(&trailers, names));
        } else {
            out.wbuf.extend_from_slice(b"0\r\n\r\n");
        }
    }
    out.flush().await?;
    p.sent = out.sent;
    Ok(p)
}
