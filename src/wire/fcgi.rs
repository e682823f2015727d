//! FastCGI to the servers of a backend with `use-fcgi-app` (`server ...
//! proto fcgi`), in the Responder role: the records of the protocol, and
//! [`FcgiConn`], a server connection the HTTP/1 pipeline writes and reads
//! as if it spoke HTTP/1. The pipeline writes the request's records itself
//! (`http/fcgi.rs` builds its parameters); the body it relays after them
//! goes out as `STDIN` records, and the application's `STDOUT` comes back
//! as an HTTP/1.1 response (its CGI header block turned into a status line
//! and fields), so that relaying, logging and pooling are the ones every
//! server has.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::tls::Stream;

const VERSION: u8 = 1;
const BEGIN_REQUEST: u8 = 1;
const END_REQUEST: u8 = 3;
const PARAMS: u8 = 4;
const STDIN: u8 = 5;
const STDOUT: u8 = 6;
const STDERR: u8 = 7;
/// The Responder role of `BEGIN_REQUEST`.
const RESPONDER: u16 = 1;
/// `BEGIN_REQUEST`'s flag asking the application to keep the connection.
const KEEP_CONN: u8 = 1;
/// The request id sluice uses: one request at a time per connection.
const REQUEST_ID: u16 = 1;
/// The most content one record carries.
const MAX_CONTENT: usize = 65_535;

/// Appends a record of `kind` carrying `content` (at most [`MAX_CONTENT`]).
fn record(out: &mut BytesMut, kind: u8, content: &[u8]) {
    debug_assert!(content.len() <= MAX_CONTENT);
    out.reserve(8 + content.len());
    out.put_u8(VERSION);
    out.put_u8(kind);
    out.put_u16(REQUEST_ID);
    out.put_u16(content.len() as u16);
    out.put_u8(0); // no padding
    out.put_u8(0);
    out.put_slice(content);
}

/// A name or value length as a name-value pair encodes it: one byte below
/// 128, else four with the high bit set.
fn put_len(out: &mut Vec<u8>, n: usize) {
    if n < 128 {
        out.push(n as u8);
    } else {
        out.extend_from_slice(&((n as u32) | 0x8000_0000).to_be_bytes());
    }
}

/// The records that open a request: `BEGIN_REQUEST` (Responder, with
/// `keep_conn` asking the application to keep the connection), the
/// parameters in `PARAMS` records and the empty one that ends them, and
/// the empty `STDIN` record at once when there is no body.
pub(crate) fn request_head<'a>(
    params: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    keep_conn: bool,
    no_body: bool,
) -> BytesMut {
    let mut out = BytesMut::with_capacity(1024);
    let mut begin = [0u8; 8];
    begin[..2].copy_from_slice(&RESPONDER.to_be_bytes());
    begin[2] = if keep_conn { KEEP_CONN } else { 0 };
    record(&mut out, BEGIN_REQUEST, &begin);
    let mut pairs = Vec::with_capacity(1024);
    for (name, value) in params {
        put_len(&mut pairs, name.len());
        put_len(&mut pairs, value.len());
        pairs.extend_from_slice(name);
        pairs.extend_from_slice(value);
    }
    for part in pairs.chunks(MAX_CONTENT) {
        record(&mut out, PARAMS, part);
    }
    record(&mut out, PARAMS, &[]);
    if no_body {
        record(&mut out, STDIN, &[]);
    }
    out
}

/// How the body the pipeline writes after the request's records is
/// framed, to be sent as `STDIN`.
#[derive(Debug, Default)]
enum BodyIn {
    /// No request under way, or its body is all sent.
    #[default]
    Done,
    /// This many bytes of the records written by the pipeline are still to
    /// go out as they are, then the body.
    Head { raw: usize, body: Box<BodyIn> },
    /// A body of known length: this many bytes left.
    Length(u64),
    /// A chunked body, as sluice re-chunks it (`wire::io::relay_message`):
    /// its data goes out, its framing does not.
    Chunked(Dechunk),
}

/// Where a chunked body sluice writes is at.
#[derive(Debug, Default)]
struct Dechunk {
    /// Data bytes left in the current chunk.
    left: u64,
    state: DechunkState,
}

#[derive(Debug, Default, PartialEq, Eq)]
enum DechunkState {
    /// In a chunk-size line.
    #[default]
    Size,
    /// In the chunk's data.
    Data,
    /// The CRLF after a chunk's data.
    DataEnd,
    /// After the last chunk: the trailer section, until its empty line
    /// (`at_line_start`: the last byte ended a line).
    Trailers {
        at_line_start: bool,
    },
    End,
}

impl Dechunk {
    /// Consumes framing from `input` until some data (its length, within
    /// `input`) or the end: returns (consumed, data len at consumed).
    fn step(&mut self, input: &[u8]) -> (usize, usize) {
        let mut i = 0;
        while i < input.len() {
            match self.state {
                DechunkState::Size => {
                    let b = input[i];
                    i += 1;
                    match b {
                        b'0'..=b'9' => self.left = self.left * 16 + u64::from(b - b'0'),
                        b'a'..=b'f' => self.left = self.left * 16 + u64::from(b - b'a' + 10),
                        b'A'..=b'F' => self.left = self.left * 16 + u64::from(b - b'A' + 10),
                        b'\n' => {
                            self.state = if self.left == 0 {
                                DechunkState::Trailers {
                                    at_line_start: true,
                                }
                            } else {
                                DechunkState::Data
                            };
                        }
                        _ => {}
                    }
                }
                DechunkState::Data => {
                    let n = (input.len() - i).min(self.left as usize);
                    self.left -= n as u64;
                    if self.left == 0 {
                        self.state = DechunkState::DataEnd;
                    }
                    return (i, n);
                }
                DechunkState::DataEnd => {
                    if input[i] == b'\n' {
                        self.state = DechunkState::Size;
                    }
                    i += 1;
                }
                DechunkState::Trailers { at_line_start } => {
                    let b = input[i];
                    i += 1;
                    if b == b'\n' {
                        if at_line_start {
                            self.state = DechunkState::End;
                            return (i, 0);
                        }
                        self.state = DechunkState::Trailers {
                            at_line_start: true,
                        };
                    } else if b != b'\r' {
                        self.state = DechunkState::Trailers {
                            at_line_start: false,
                        };
                    }
                }
                DechunkState::End => return (i, 0),
            }
        }
        (i, 0)
    }
}

/// Where the application's answer is at.
#[derive(Debug, Default)]
enum Answer {
    /// No request under way.
    #[default]
    Idle,
    /// Reading the CGI header block: the `STDOUT` bytes so far.
    Head(BytesMut),
    /// The body, chunked (no length was known when the head went out) or
    /// as it is.
    Body { chunked: bool },
    /// The body of an answer to an HTTP/1.0 request without a length: it
    /// ends with the connection, which the reader sees end with it.
    UntilEnd,
}

/// A connection to a FastCGI application, in the guise of an HTTP/1
/// connection (see the module's text).
#[derive(Debug)]
pub(crate) struct FcgiConn {
    io: Stream,
    body: BodyIn,
    /// Records encoded from the body, going out; the caller's bytes they
    /// came from are reported written once they are all out.
    wbuf: BytesMut,
    wbuf_of: usize,
    /// Bytes read from the application, not parsed yet.
    rbuf: BytesMut,
    /// The HTTP/1 response made of them, not read yet.
    out: BytesMut,
    answer: Answer,
    /// The request is HTTP/1.0: so is the answer's status line.
    http10: bool,
    /// The application closed the connection, or an answer that ends with
    /// it ended.
    eof: bool,
}

impl FcgiConn {
    pub(crate) fn new(io: Stream) -> FcgiConn {
        FcgiConn {
            io,
            body: BodyIn::Done,
            wbuf: BytesMut::new(),
            wbuf_of: 0,
            rbuf: BytesMut::new(),
            out: BytesMut::new(),
            answer: Answer::Idle,
            http10: false,
            eof: false,
        }
    }

    /// Writes out what `wbuf` holds.
    fn poll_flush_wbuf(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.wbuf.is_empty() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.wbuf))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.wbuf.advance(n);
        }
        Poll::Ready(Ok(()))
    }

    /// Turns the `STDOUT` records in `rbuf` into the HTTP/1 response in
    /// `out`, until a record is incomplete.
    fn parse(&mut self) -> io::Result<()> {
        while self.rbuf.len() >= 8 {
            let len = usize::from(u16::from_be_bytes([self.rbuf[4], self.rbuf[5]]));
            let pad = usize::from(self.rbuf[6]);
            if self.rbuf.len() < 8 + len + pad {
                break;
            }
            let kind = self.rbuf[1];
            let mut rec = self.rbuf.split_to(8 + len + pad);
            rec.advance(8);
            rec.truncate(len);
            match kind {
                STDOUT if !rec.is_empty() => self.stdout(&rec)?,
                STDERR if !rec.is_empty() => {
                    tracing::info!(
                        "FastCGI application's stderr: {}",
                        String::from_utf8_lossy(&rec).trim_end()
                    );
                }
                END_REQUEST => self.end()?,
                _ => {}
            }
        }
        Ok(())
    }

    fn stdout(&mut self, data: &[u8]) -> io::Result<()> {
        match &mut self.answer {
            Answer::Idle => Ok(()),
            Answer::Body { chunked: true } => {
                self.out
                    .put_slice(format!("{:x}\r\n", data.len()).as_bytes());
                self.out.put_slice(data);
                self.out.put_slice(b"\r\n");
                Ok(())
            }
            Answer::Body { chunked: false } | Answer::UntilEnd => {
                self.out.put_slice(data);
                Ok(())
            }
            Answer::Head(acc) => {
                acc.put_slice(data);
                let Some((end, sep)) = head_end(acc) else {
                    return Ok(());
                };
                let mut acc = std::mem::take(acc);
                let rest = acc.split_off(end + sep);
                acc.truncate(end);
                // The length is known when the whole answer is here
                // already: what follows the head and the `STDOUT` records
                // before the `END_REQUEST` one.
                let known = remaining_stdout(&self.rbuf).map(|n| n + rest.len() as u64);
                self.answer = cgi_head(&acc, known, self.http10, &mut self.out)?;
                if !rest.is_empty() {
                    self.stdout(&rest)?;
                }
                Ok(())
            }
        }
    }

    /// `END_REQUEST`: the answer is complete.
    fn end(&mut self) -> io::Result<()> {
        match std::mem::take(&mut self.answer) {
            Answer::Body { chunked: true } => self.out.put_slice(b"0\r\n\r\n"),
            Answer::Body { chunked: false } | Answer::Idle => {}
            Answer::UntilEnd => self.eof = true,
            // An answer without its header block: a bad response.
            Answer::Head(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "FastCGI answer without headers",
                ));
            }
        }
        Ok(())
    }
}

impl crate::tls::stream::Translated for FcgiConn {
    fn inner(&self) -> &Stream {
        &self.io
    }

    fn inner_mut(&mut self) -> &mut Stream {
        &mut self.io
    }

    /// The request's records ([`request_head`]) come first.
    fn start(&mut self, head_len: usize, length: Option<u64>, http10: bool) {
        self.http10 = http10;
        let body = match length {
            Some(0) => BodyIn::Done,
            Some(n) => BodyIn::Length(n),
            None => BodyIn::Chunked(Dechunk::default()),
        };
        self.body = BodyIn::Head {
            raw: head_len,
            body: Box::new(body),
        };
        self.answer = Answer::Head(BytesMut::new());
        self.out.clear();
    }
}

/// Where a CGI header block ends: the offset of its empty line, and the
/// length of the line breaks that end it.
fn head_end(b: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while let Some(p) = b[i..].iter().position(|&c| c == b'\n') {
        let at = i + p;
        // A line break right after another (CRLF CRLF, LF LF, LF CRLF).
        if at + 1 < b.len() + 1 {
            let rest = &b[at + 1..];
            if rest.starts_with(b"\r\n") {
                return Some((at + 1, 2));
            }
            if rest.starts_with(b"\n") {
                return Some((at + 1, 1));
            }
        }
        i = at + 1;
    }
    None
}

/// The `STDOUT` bytes of the complete records in `b` before an
/// `END_REQUEST` one, if that one is there too.
fn remaining_stdout(b: &[u8]) -> Option<u64> {
    let mut at = 0;
    let mut n = 0u64;
    while b.len() >= at + 8 {
        let len = usize::from(u16::from_be_bytes([b[at + 4], b[at + 5]]));
        let pad = usize::from(b[at + 6]);
        if b.len() < at + 8 + len + pad {
            return None;
        }
        match b[at + 1] {
            STDOUT => n += len as u64,
            END_REQUEST => return Some(n),
            _ => {}
        }
        at += 8 + len + pad;
    }
    None
}

/// Writes the HTTP/1.1 head of a CGI header block (`Status: <code>
/// [<reason>]`, a `Location` alone meaning 302, else 200), with a `date`
/// when the application gave none, and the framing: its own
/// `Content-Length`, else `known` (the whole body's length when it was
/// all read), else chunked; for an HTTP/1.0 request (`http10`), an
/// HTTP/1.0 head whose body ends with the connection, as HAProxy 2.6
/// answers. Returns how the body goes.
fn cgi_head(
    block: &[u8],
    known: Option<u64>,
    http10: bool,
    out: &mut BytesMut,
) -> io::Result<Answer> {
    let lines = || {
        block
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .filter(|l| !l.is_empty())
    };
    let mut status: Option<(u16, &[u8])> = None;
    let (mut location, mut length, mut date) = (false, false, false);
    for line in lines() {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "FastCGI header line without a colon",
            ));
        };
        let name = &line[..colon];
        let value = crate::wire::h1::trim(&line[colon + 1..]);
        if name.eq_ignore_ascii_case(b"status") {
            let (code, reason) = match value.iter().position(|&b| b == b' ') {
                Some(sp) => (&value[..sp], crate::wire::h1::trim(&value[sp + 1..])),
                None => (value, &b""[..]),
            };
            let code = std::str::from_utf8(code)
                .ok()
                .and_then(|c| c.parse::<u16>().ok())
                .filter(|c| (100..1000).contains(c))
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad CGI status"))?;
            status = Some((code, reason));
        } else if name.eq_ignore_ascii_case(b"location") {
            location = true;
        } else if name.eq_ignore_ascii_case(b"content-length") {
            length = true;
        } else if name.eq_ignore_ascii_case(b"date") {
            date = true;
        }
    }
    let (code, reason) = match status {
        Some(s) => s,
        None if location => (302, &b"Moved Temporarily"[..]),
        None => (200, &b"OK"[..]),
    };
    let version = if http10 { "HTTP/1.0" } else { "HTTP/1.1" };
    out.put_slice(format!("{version} {code} ").as_bytes());
    out.put_slice(reason);
    out.put_slice(b"\r\n");
    for line in lines() {
        if line.len() >= 7 && line[..7].eq_ignore_ascii_case(b"status:") {
            continue;
        }
        out.put_slice(line);
        out.put_slice(b"\r\n");
    }
    if !date {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        if let Some(d) = crate::sys::time::strftime("%a, %d %b %Y %T GMT", now, false) {
            out.put_slice(b"date: ");
            out.put_slice(d.as_bytes());
            out.put_slice(b"\r\n");
        }
    }
    let answer = match (length, known) {
        (true, _) => Answer::Body { chunked: false },
        (false, _) if http10 => Answer::UntilEnd,
        (false, Some(n)) => {
            out.put_slice(format!("content-length: {n}\r\n").as_bytes());
            Answer::Body { chunked: false }
        }
        (false, None) => {
            out.put_slice(b"transfer-encoding: chunked\r\n");
            Answer::Body { chunked: true }
        }
    };
    out.put_slice(b"\r\n");
    Ok(answer)
}

impl AsyncRead for FcgiConn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if !this.out.is_empty() {
                let n = this.out.len().min(buf.remaining());
                buf.put_slice(&this.out[..n]);
                this.out.advance(n);
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            this.rbuf.reserve(16 * 1024);
            let filled = {
                let spare = this.rbuf.spare_capacity_mut();
                let mut rb = ReadBuf::uninit(spare);
                ready!(Pin::new(&mut this.io).poll_read(cx, &mut rb))?;
                rb.filled().len()
            };
            if filled == 0 {
                this.eof = true;
                continue;
            }
            // SAFETY: `filled` bytes of the spare capacity were just
            // initialized by the read.
            unsafe { this.rbuf.set_len(this.rbuf.len() + filled) };
            this.parse()?;
        }
    }
}

impl AsyncWrite for FcgiConn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if !this.wbuf.is_empty() {
            ready!(this.poll_flush_wbuf(cx))?;
            return Poll::Ready(Ok(std::mem::take(&mut this.wbuf_of)));
        }
        match &mut this.body {
            BodyIn::Head { raw, body } => {
                let n = (*raw).min(buf.len());
                let n = ready!(Pin::new(&mut this.io).poll_write(cx, &buf[..n]))?;
                *raw -= n;
                if *raw == 0 {
                    this.body = std::mem::take(&mut **body);
                }
                Poll::Ready(Ok(n))
            }
            BodyIn::Done => Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
            BodyIn::Length(left) => {
                let n = buf.len().min(MAX_CONTENT).min(*left as usize);
                record(&mut this.wbuf, STDIN, &buf[..n]);
                *left -= n as u64;
                if *left == 0 {
                    record(&mut this.wbuf, STDIN, &[]);
                    this.body = BodyIn::Done;
                }
                this.wbuf_of = n;
                ready!(this.poll_flush_wbuf(cx))?;
                Poll::Ready(Ok(std::mem::take(&mut this.wbuf_of)))
            }
            BodyIn::Chunked(d) => {
                let mut used = 0;
                while used < buf.len() && this.wbuf.len() < MAX_CONTENT {
                    let (skip, data) = d.step(&buf[used..]);
                    let data = data.min(MAX_CONTENT);
                    if data > 0 {
                        record(&mut this.wbuf, STDIN, &buf[used + skip..used + skip + data]);
                    }
                    used += skip + data;
                    if d.state == DechunkState::End {
                        record(&mut this.wbuf, STDIN, &[]);
                        this.body = BodyIn::Done;
                        break;
                    }
                    if skip + data == 0 {
                        break;
                    }
                }
                this.wbuf_of = used;
                ready!(this.poll_flush_wbuf(cx))?;
                Poll::Ready(Ok(std::mem::take(&mut this.wbuf_of)))
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_flush_wbuf(cx))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_flush_wbuf(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_becomes_a_status_line_and_fields() {
        let mut out = BytesMut::new();
        let answer = cgi_head(
            b"Status: 404\r\nContent-Type: text/plain\r\nDate: x",
            None,
            false,
            &mut out,
        )
        .unwrap();
        assert!(matches!(answer, Answer::Body { chunked: true }));
        assert_eq!(
            &out[..],
            b"HTTP/1.1 404 \r\nContent-Type: text/plain\r\nDate: x\r\ntransfer-encoding: chunked\r\n\r\n"
        );
        let mut out = BytesMut::new();
        let answer = cgi_head(b"Location: /x\nDate: y", Some(3), false, &mut out).unwrap();
        assert!(matches!(answer, Answer::Body { chunked: false }));
        assert!(out.starts_with(b"HTTP/1.1 302 Moved Temporarily\r\nLocation: /x\r\nDate: y\r\ncontent-length: 3\r\n\r\n"));
        let mut out = BytesMut::new();
        let answer = cgi_head(b"Status: 200 OK", Some(3), true, &mut out).unwrap();
        assert!(matches!(answer, Answer::UntilEnd));
        assert!(out.starts_with(b"HTTP/1.0 200 OK\r\ndate: "));
        assert!(cgi_head(b"no colon", None, false, &mut BytesMut::new()).is_err());
        assert!(cgi_head(b"Status: x", None, false, &mut BytesMut::new()).is_err());
    }

    #[test]
    fn the_end_of_a_head_is_found_with_either_line_break() {
        assert_eq!(head_end(b"A: 1\r\n\r\nbody"), Some((6, 2)));
        assert_eq!(head_end(b"A: 1\n\nbody"), Some((5, 1)));
        assert_eq!(head_end(b"A: 1\r\n"), None);
    }

    #[test]
    fn params_use_long_lengths_past_127() {
        let long = [b'v'; 200];
        let head = request_head([(&b"N"[..], &long[..])].into_iter(), true, true);
        // BEGIN_REQUEST (16), PARAMS (8 + 1 + 4 + 1 + 200), empty PARAMS
        // and STDIN (8 each).
        assert_eq!(head.len(), 16 + 214 + 8 + 8);
        assert_eq!(&head[24..30], &[1, 0x80, 0, 0, 200, b'N']);
        assert_eq!(head[10], KEEP_CONN);
    }

    #[test]
    fn a_chunked_body_loses_its_framing() {
        let mut d = Dechunk::default();
        let input = b"3\r\nabc\r\n2\r\nde\r\n0\r\nx-t: 1\r\n\r\n";
        let mut data = Vec::new();
        let mut at = 0;
        while d.state != DechunkState::End {
            let (skip, n) = d.step(&input[at..]);
            data.extend_from_slice(&input[at + skip..at + skip + n]);
            at += skip + n;
        }
        assert_eq!(data, b"abcde");
        assert_eq!(at, input.len());
    }
}
