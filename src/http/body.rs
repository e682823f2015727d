//! A request's body as `option http-buffer-request`, `wait-for-body` and
//! the `req.body*` fetches see it: waited for up to what HAProxy's buffer
//! holds, and set aside from the connection's buffer while rules read it
//! (a view, not a copy, of a `Content-Length` body), then put back in
//! front of it for the server or for skipping.

use std::time::Duration;

use bytes::BytesMut;

use crate::sample::fetch::Body;
use crate::wire::h1::{BodyKind, ChunkedDecoder, Head};
use crate::wire::io::{BufConn, RelayError};

/// What HAProxy 2.6's HTX buffer spends besides the message's own bytes,
/// measured against haproxy 2.6.12 (`tune.bufsize` 16384, `tune.maxrewrite`
/// 1024: 15214 bytes of a `Content-Length` body fit after `POST /
/// HTTP/1.1`, `host: a`, `content-length: 20000`): the buffer's own
/// header and the room it keeps, and an index entry per block (the start
/// line, each field it keeps, the end of the head, the data). The blocks'
/// contents are what HAProxy logs of the head (`wire::logged_size`): a
/// `connection: close` costs nothing, as it is taken out.
const HTX_RESERVED: usize = 49;
const HTX_BLOCK: usize = 8;

/// The body bytes that fit in HAProxy's buffer with `head` (`max_head`:
/// `tune.bufsize - tune.maxrewrite`): a chunked body gets one block less
/// (15201 bytes with `transfer-encoding: chunked` for the head above).
pub(crate) fn room(head: &Head, max_head: usize, chunked: bool) -> usize {
    use crate::wire::logged_size;
    let contents = logged_size::head(&head.raw).saturating_sub(logged_size::END_OF_HEAD) as usize;
    let fields = head
        .headers()
        .filter(|(n, v)| {
            !n.eq_ignore_ascii_case(b"connection") || logged_size::connection_kept(v).is_some()
        })
        .count();
    // The start line, the end of the head, the data, and a chunked body's
    // extra block.
    let blocks = HTX_BLOCK * (fields + 3 + chunked as usize);
    max_head.saturating_sub(HTX_RESERVED + contents + blocks)
}

/// How much of a chunked body `buf` holds, up to `room` data bytes: the
/// data bytes, the size HAProxy announces (the data and the rest of the
/// chunk being received), and whether waiting is over: the last chunk
/// reached, or a framing error (the exchange with the server reports it).
/// The data is copied into `out` when given.
fn scan_chunked(buf: &[u8], room: usize, mut out: Option<&mut Vec<u8>>) -> (usize, u64, bool) {
    let mut dec = ChunkedDecoder::default();
    let (mut pos, mut have, mut bad) = (0, 0, false);
    loop {
        let left = dec.data_left();
        if left > 0 {
            let take = (left.min((buf.len() - pos) as u64) as usize).min(room - have);
            if take == 0 {
                break;
            }
            // Inside a chunk's data: cannot fail.
            let _ = dec.feed(&buf[pos..pos + take]);
            if let Some(o) = out.as_deref_mut() {
                o.extend_from_slice(&buf[pos..pos + take]);
            }
            pos += take;
            have += take;
            continue;
        }
        if pos >= buf.len() || dec.is_done() || dec.in_trailers() {
            break;
        }
        match dec.feed_framing(buf, pos) {
            Ok(end) if end > pos => pos = end,
            Ok(_) => break,
            Err(_) => {
                bad = true;
                break;
            }
        }
    }
    let done = bad || dec.is_done() || dec.in_trailers();
    (have, dec.body_len(), done)
}

/// A body of framing `kind` as `buf` (the bytes after its head) holds it,
/// up to `room` data bytes: a slice of `buf`, or of `decoded` where a
/// chunked body is decoded.
pub(crate) fn view<'a>(
    buf: &'a [u8],
    kind: BodyKind,
    room: usize,
    decoded: &'a mut Vec<u8>,
) -> Body<'a> {
    match kind {
        BodyKind::Length(n) => {
            let have = (buf.len() as u64).min(n) as usize;
            Body {
                data: &buf[..have.min(room)],
                size: n,
            }
        }
        BodyKind::Chunked => {
            let (have, size, _) = scan_chunked(buf, room, Some(decoded));
            Body {
                data: &decoded[..have],
                size,
            }
        }
        // Until the server closes: what is here is all that is known.
        BodyKind::UntilClose => {
            let data = &buf[..buf.len().min(room)];
            Body {
                data,
                size: data.len() as u64,
            }
        }
        BodyKind::None => Body::default(),
    }
}

/// The body's data bytes `buf` holds (up to `room`) and whether all of it
/// is there.
fn progress(buf: &[u8], kind: BodyKind, room: usize) -> (usize, bool) {
    match kind {
        // Only the server's close ends it.
        BodyKind::UntilClose => (buf.len().min(room), false),
        BodyKind::Length(n) => {
            let have = (buf.len() as u64).min(n) as usize;
            (have.min(room), buf.len() as u64 >= n)
        }
        BodyKind::Chunked => {
            let (have, _, done) = scan_chunked(buf, room, None);
            (have, done)
        }
        BodyKind::None => (0, true),
    }
}

/// How a wait for the body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waited {
    /// The body is here, or the buffer is full, or `at-least` bytes came,
    /// or the client stopped sending (what came is used).
    Ready,
    /// The time ran out first: HAProxy answers 408.
    Timeout,
}

/// Reads the body of `kind` into the connection's buffer until it is all
/// there, or `room` data bytes are, or `at_least` (when not 0), within
/// `timeout`.
pub(crate) async fn wait(
    conn: &mut BufConn,
    kind: BodyKind,
    room: usize,
    at_least: u64,
    timeout: Option<Duration>,
) -> Waited {
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    loop {
        let (have, done) = progress(&conn.buf, kind, room);
        if done || have >= room || (at_least > 0 && have as u64 >= at_least) {
            return Waited::Ready;
        }
        let left = deadline.map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
        match conn.fill(left).await {
            Ok(0) => return Waited::Ready,
            Ok(_) => {}
            Err(RelayError::ReadTimeout) => return Waited::Timeout,
            Err(_) => return Waited::Ready,
        }
    }
}

/// The body set aside for the fetches: nothing (one word, one test at the
/// end of a request) until a request sets one aside, as most never do.
#[derive(Debug, Default)]
pub(crate) struct Held(Option<Box<Aside>>);

#[derive(Debug, Default)]
struct Aside {
    /// A `Content-Length` body's bytes, split off the front of the
    /// connection's buffer (the same memory).
    raw: BytesMut,
    /// A chunked body's data, decoded once.
    decoded: Vec<u8>,
    chunked: bool,
    /// The data bytes the fetches see.
    len: usize,
    size: u64,
    set: bool,
}

impl Held {
    /// The body for the fetches, once set aside.
    pub(crate) fn view(&self) -> Option<Body<'_>> {
        let a = self.0.as_deref().filter(|a| a.set)?;
        let data = if a.chunked {
            &a.decoded[..a.len]
        } else {
            &a.raw[..a.len]
        };
        Some(Body { data, size: a.size })
    }

    /// Whether the body is set aside now.
    pub(crate) fn is_set(&self) -> bool {
        self.0.as_ref().is_some_and(|a| a.set)
    }

    /// Puts the bytes set aside back in front of the connection's buffer
    /// (without a copy: they were split off it).
    pub(crate) fn rejoin(&mut self, conn: &mut BufConn) {
        let Some(a) = self.0.as_deref_mut() else {
            return;
        };
        if !a.raw.is_empty() {
            let mut raw = std::mem::take(&mut a.raw);
            raw.unsplit(std::mem::take(&mut conn.buf));
            conn.buf = raw;
        }
        a.decoded.clear();
        a.set = false;
    }

    /// Sets the body of `kind` aside as the connection's buffer holds it
    /// now, up to `room` data bytes. `first_read`: the body was not waited
    /// for, and HAProxy then has what its first read brought, at most
    /// that many bytes after the head (measured: its first read fills
    /// `tune.bufsize - tune.maxrewrite` with the head and the body's
    /// framed bytes; a body of many chunks shows less data than the
    /// buffer would hold).
    pub(crate) fn take(
        &mut self,
        conn: &mut BufConn,
        kind: BodyKind,
        room: usize,
        first_read: Option<usize>,
    ) {
        self.rejoin(conn);
        let a = self.0.get_or_insert_with(Default::default);
        let there = first_read.map_or(conn.buf.len(), |n| n.min(conn.buf.len()));
        match kind {
            BodyKind::Length(n) => {
                let have = (there as u64).min(n) as usize;
                a.raw = conn.buf.split_to(have);
                a.chunked = false;
                a.len = have.min(room);
                a.size = n;
            }
            BodyKind::Chunked => {
                let (have, size, _) = scan_chunked(&conn.buf[..there], room, Some(&mut a.decoded));
                a.chunked = true;
                a.len = have;
                a.size = size;
            }
            BodyKind::None | BodyKind::UntilClose => return,
        }
        a.set = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_scan_as_haproxy_counts() {
        let body = b"4\r\na=1&\r\n7\r\nb=2&c=3\r\n0\r\n\r\n";
        let mut out = Vec::new();
        assert_eq!(scan_chunked(body, 100, Some(&mut out)), (11, 11, true));
        assert_eq!(out, b"a=1&b=2&c=3");
        // Cut by the room: the size is the data and the rest of its chunk.
        assert_eq!(scan_chunked(body, 6, None), (6, 11, false));
        // Part of the first chunk only.
        assert_eq!(scan_chunked(b"a\r\nabc", 100, None), (3, 10, false));
        assert_eq!(progress(b"abc", BodyKind::Length(5), 100), (3, false));
        assert_eq!(progress(b"abcdefg", BodyKind::Length(5), 4), (4, true));
    }

    #[test]
    fn room_as_measured_against_haproxy() {
        let head =
            |raw: &'static [u8]| Head::parse_request(bytes::Bytes::from_static(raw)).unwrap();
        let cl = head(b"POST / HTTP/1.1\r\nhost: a\r\ncontent-length: 20000\r\n\r\n");
        assert_eq!(room(&cl, 15360, false), 15214);
        let ch = head(b"POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n");
        assert_eq!(room(&ch, 15360, true), 15201);
        let x = head(b"POST / HTTP/1.1\r\nhost: a\r\nx: 1\r\ncontent-length: 20000\r\n\r\n");
        assert_eq!(room(&x, 15360, false), 15204);
        // HAProxy takes a `connection: close` out.
        let close = head(b"POST /form HTTP/1.1\r\nhost: x\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n");
        assert_eq!(room(&close, 15360, true), 15197);
    }
}
