//! HTTP/1.1 message heads and body framing (RFC 9112), on httparse.
//!
//! This is the one place that knows the wire format: the service asks it
//! to parse a head, decide how the body is delimited, and write the head
//! that goes to the other side. Heads are kept as the raw bytes plus
//! offsets, so errors can show the bytes exactly as received.

use bytes::{BufMut, Bytes, BytesMut};

/// At most this many header fields in one message.
pub const MAX_HEADERS: usize = 101;

/// Why a message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum H1Error {
    #[error("invalid message syntax at byte {0}")]
    Syntax(usize),
    #[error("message head too large")]
    TooLarge,
    #[error("too many header fields")]
    TooManyHeaders,
    #[error("invalid Content-Length")]
    BadContentLength,
    #[error("invalid Transfer-Encoding")]
    BadTransferEncoding,
    #[error("invalid chunked framing")]
    BadChunk,
    #[error("unsupported HTTP version")]
    Version,
}

/// Where a header's name and value sit in the head buffer.
#[derive(Debug, Clone, Copy)]
pub struct HeaderPos {
    name: (u32, u32),
    value: (u32, u32),
    /// The whole line, without its CRLF.
    line: (u32, u32),
}

/// A parsed request or response head.
#[derive(Debug, Clone)]
pub struct Head {
    /// The head exactly as received, up to and including the blank line.
    pub raw: Bytes,
    /// Request: method; response: empty.
    method: (u32, u32),
    /// Request: target; response: reason phrase.
    target: (u32, u32),
    /// Response status code (0 for requests).
    pub status: u16,
    /// Minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
    headers: Vec<HeaderPos>,
}

/// How a message body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    None,
    Length(u64),
    Chunked,
    /// Response only: until the server closes.
    UntilClose,
}

fn span(base: &[u8], part: &[u8]) -> (u32, u32) {
    let start = part.as_ptr() as usize - base.as_ptr() as usize;
    (start as u32, (start + part.len()) as u32)
}

/// Finds the end of the head (index just past the blank line), if present.
/// Only CRLF line ends are accepted here; httparse then checks the syntax.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

impl Head {
    fn slice(&self, (a, b): (u32, u32)) -> &[u8] {
        &self.raw[a as usize..b as usize]
    }

    pub fn method(&self) -> &[u8] {
        self.slice(self.method)
    }

    pub fn target(&self) -> &[u8] {
        self.slice(self.target)
    }

    pub fn reason(&self) -> &[u8] {
        self.slice(self.target)
    }

    pub fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.headers
            .iter()
            .map(|h| (self.slice(h.name), self.slice(h.value)))
    }

    /// Values of every header named `name` (case-insensitive).
    pub fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| v)
    }

    /// Whether any `Connection` header lists `token`.
    pub fn connection_has(&self, token: &str) -> bool {
        self.values("connection").any(|v| {
            v.split(|&b| b == b',')
                .any(|t| trim(t).eq_ignore_ascii_case(token.as_bytes()))
        })
    }

    /// Parses a request head (the bytes up to and including the blank line).
    pub fn parse_request(raw: Bytes) -> Result<Head, H1Error> {
        let mut hdrs = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut hdrs);
        let status = req.parse(&raw).map_err(|e| map_err(e, &raw))?;
        if status.is_partial() {
            return Err(H1Error::Syntax(raw.len()));
        }
        let (Some(method), Some(path), Some(minor)) = (req.method, req.path, req.version) else {
            return Err(H1Error::Syntax(0));
        };
        let method = span(&raw, method.as_bytes());
        let target = span(&raw, path.as_bytes());
        let headers = positions(&raw, req.headers)?;
        Ok(Head {
            method,
            target,
            status: 0,
            minor,
            headers,
            raw,
        })
    }

    /// Parses a response head.
    pub fn parse_response(raw: Bytes) -> Result<Head, H1Error> {
        let mut hdrs = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut hdrs);
        let status = resp.parse(&raw).map_err(|e| map_err(e, &raw))?;
        if status.is_partial() {
            return Err(H1Error::Syntax(raw.len()));
        }
        let (Some(code), Some(minor)) = (resp.code, resp.version) else {
            return Err(H1Error::Syntax(0));
        };
        let reason = span(&raw, resp.reason.unwrap_or("").as_bytes());
        let headers = positions(&raw, resp.headers)?;
        Ok(Head {
            method: (0, 0),
            target: reason,
            status: code,
            minor,
            headers,
            raw,
        })
    }

    /// Content-Length: every value must be plain digits and all equal.
    fn content_length(&self) -> Result<Option<u64>, H1Error> {
        let mut found: Option<u64> = None;
        for v in self.values("content-length") {
            for part in v.split(|&b| b == b',') {
                let part = trim(part);
                if part.is_empty() || !part.iter().all(u8::is_ascii_digit) || part.len() > 19 {
                    return Err(H1Error::BadContentLength);
                }
                let n: u64 = std::str::from_utf8(part)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or(H1Error::BadContentLength)?;
                match found {
                    Some(prev) if prev != n => return Err(H1Error::BadContentLength),
                    _ => found = Some(n),
                }
            }
        }
        Ok(found)
    }

    /// Transfer-Encoding codings in order, or None if absent.
    fn transfer_codings(&self) -> Option<Vec<&[u8]>> {
        let mut any = false;
        let mut codings = Vec::new();
        for v in self.values("transfer-encoding") {
            any = true;
            codings.extend(v.split(|&b| b == b',').map(trim));
        }
        any.then_some(codings)
    }

    /// How the request body is delimited. A request with both
    /// Transfer-Encoding and Content-Length is read as chunked (and its
    /// Content-Length is not forwarded).
    pub fn request_body(&self) -> Result<BodyKind, H1Error> {
        if let Some(codings) = self.transfer_codings() {
            if self.minor == 0 {
                return Err(H1Error::BadTransferEncoding);
            }
            let chunked = codings
                .iter()
                .filter(|c| c.eq_ignore_ascii_case(b"chunked"))
                .count();
            let last_chunked = codings
                .last()
                .is_some_and(|c| c.eq_ignore_ascii_case(b"chunked"));
            if chunked != 1 || !last_chunked || codings.iter().any(|c| c.is_empty()) {
                return Err(H1Error::BadTransferEncoding);
            }
            return Ok(BodyKind::Chunked);
        }
        Ok(match self.content_length()? {
            Some(0) | None => BodyKind::None,
            Some(n) => BodyKind::Length(n),
        })
    }

    /// How the response body is delimited, given the request method.
    pub fn response_body(&self, request_method: &[u8]) -> Result<BodyKind, H1Error> {
        if request_method == b"HEAD"
            || (100..200).contains(&self.status)
            || self.status == 204
            || self.status == 304
        {
            return Ok(BodyKind::None);
        }
        if let Some(codings) = self.transfer_codings() {
            let last_chunked = codings
                .last()
                .is_some_and(|c| c.eq_ignore_ascii_case(b"chunked"));
            let chunked = codings
                .iter()
                .filter(|c| c.eq_ignore_ascii_case(b"chunked"))
                .count();
            return match (last_chunked, chunked) {
                (true, 1) => Ok(BodyKind::Chunked),
                (false, 0) => Ok(BodyKind::UntilClose),
                _ => Err(H1Error::BadTransferEncoding),
            };
        }
        Ok(match self.content_length()? {
            Some(0) => BodyKind::None,
            Some(n) => BodyKind::Length(n),
            None => BodyKind::UntilClose,
        })
    }

    /// Whether the peer wants the connection kept open after this message.
    pub fn wants_keep_alive(&self) -> bool {
        if self.minor == 0 {
            self.connection_has("keep-alive")
        } else {
            !self.connection_has("close")
        }
    }

    /// Writes the head lines to forward: the first line and every header
    /// except hop-by-hop ones (and those the `Connection` header names),
    /// then `extra` lines. The caller adds framing headers and the blank
    /// line through `extra`.
    pub fn write_forwarded(&self, first_line: &[u8], out: &mut BytesMut) {
        out.reserve(self.raw.len() + 64);
        out.put_slice(first_line);
        out.put_slice(b"\r\n");
        for h in &self.headers {
            let name = self.slice(h.name);
            if is_hop_by_hop(name) || self.connection_has_name(name) {
                continue;
            }
            out.put_slice(self.slice(h.line));
            out.put_slice(b"\r\n");
        }
    }

    fn connection_has_name(&self, name: &[u8]) -> bool {
        // Only consult Connection when it could name an ordinary header.
        self.headers.iter().any(|h| {
            self.slice(h.name).eq_ignore_ascii_case(b"connection")
                && self
                    .slice(h.value)
                    .split(|&b| b == b',')
                    .any(|t| trim(t).eq_ignore_ascii_case(name))
        })
    }

    /// The request line to send upstream: `<method> <target> HTTP/1.1`.
    pub fn request_line(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.method().len() + self.target().len() + 10);
        v.extend_from_slice(self.method());
        v.push(b' ');
        v.extend_from_slice(self.target());
        v.extend_from_slice(b" HTTP/1.1");
        v
    }

    /// The status line to send to the client, always as HTTP/1.1.
    pub fn status_line(&self) -> Vec<u8> {
        let mut v = format!("HTTP/1.1 {} ", self.status).into_bytes();
        v.extend_from_slice(self.reason());
        v
    }
}

fn positions(raw: &[u8], headers: &[httparse::Header<'_>]) -> Result<Vec<HeaderPos>, H1Error> {
    let mut out = Vec::with_capacity(headers.len());
    for h in headers {
        let name = span(raw, h.name.as_bytes());
        let value = span(raw, h.value);
        // The value may be empty, in which case httparse may give a slice
        // that is not inside the line; use the name's end then.
        let value = if h.value.is_empty() {
            (name.1, name.1)
        } else {
            value
        };
        if h.value.iter().any(|&b| b == 0 || b == b'\r' || b == b'\n') {
            return Err(H1Error::Syntax(value.0 as usize));
        }
        let line_end = raw[value.1 as usize..]
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
            .map(|p| value.1 as usize + p)
            .unwrap_or(raw.len());
        out.push(HeaderPos {
            name,
            value,
            line: (name.0, line_end as u32),
        });
    }
    Ok(out)
}

fn map_err(e: httparse::Error, raw: &[u8]) -> H1Error {
    match e {
        httparse::Error::TooManyHeaders => H1Error::TooManyHeaders,
        httparse::Error::Version => H1Error::Version,
        _ => H1Error::Syntax(first_bad_byte(raw)),
    }
}

/// A best guess at the first offending byte, for `show errors`.
fn first_bad_byte(raw: &[u8]) -> usize {
    raw.iter()
        .position(|&b| b == 0 || (b < 0x20 && b != b'\r' && b != b'\n' && b != b'\t') || b == 0x7f)
        .unwrap_or(0)
}

pub fn trim(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|b| *b != b' ' && *b != b'\t')
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|b| *b != b' ' && *b != b'\t')
        .map_or(start, |e| e + 1);
    &v[start..end]
}

/// Hop-by-hop fields (RFC 9110 §7.6.1) and the framing fields that sluice
/// rewrites itself.
fn is_hop_by_hop(name: &[u8]) -> bool {
    const HOP: [&[u8]; 9] = [
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"content-length",
        b"upgrade",
        b"expect",
    ];
    HOP.iter().any(|h| name.eq_ignore_ascii_case(h))
}

/// Incremental checker of a chunked body: it is fed the raw bytes as they
/// arrive and says how many of them belong to the body, so the body can be
/// relayed verbatim while its framing is verified.
#[derive(Debug, Default)]
pub struct ChunkedDecoder {
    state: ChunkState,
    /// Data bytes left in the current chunk.
    remaining: u64,
    /// Digits seen in the current size line.
    digits: u32,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    #[default]
    Size,
    /// After the size: extensions until CR.
    Ext,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    /// Start of a trailer line (or the final CRLF).
    TrailerStart,
    Trailer,
    TrailerLf,
    FinalLf,
    Done,
}

impl ChunkedDecoder {
    pub fn is_done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Consumes from `input`; returns how many bytes belong to the body.
    /// Stops at the end of the body (the rest belongs to the next message).
    pub fn feed(&mut self, input: &[u8]) -> Result<usize, H1Error> {
        let mut i = 0;
        while i < input.len() {
            let b = input[i];
            match self.state {
                ChunkState::Size => match hex(b) {
                    Some(d) => {
                        if self.digits >= 15 {
                            return Err(H1Error::BadChunk);
                        }
                        self.remaining = self.remaining * 16 + d as u64;
                        self.digits += 1;
                    }
                    None if self.digits == 0 => return Err(H1Error::BadChunk),
                    None if b == b'\r' => self.state = ChunkState::SizeLf,
                    None if b == b';' || b == b' ' || b == b'\t' => self.state = ChunkState::Ext,
                    None => return Err(H1Error::BadChunk),
                },
                ChunkState::Ext => match b {
                    b'\r' => self.state = ChunkState::SizeLf,
                    b'\n' | 0 => return Err(H1Error::BadChunk),
                    _ => {}
                },
                ChunkState::SizeLf => {
                    if b != b'\n' {
                        return Err(H1Error::BadChunk);
                    }
                    self.digits = 0;
                    self.state = if self.remaining == 0 {
                        ChunkState::TrailerStart
                    } else {
                        ChunkState::Data
                    };
                }
                ChunkState::Data => {
                    let take = (self.remaining).min((input.len() - i) as u64) as usize;
                    self.remaining -= take as u64;
                    i += take;
                    if self.remaining == 0 {
                        self.state = ChunkState::DataCr;
                    }
                    continue;
                }
                ChunkState::DataCr => {
                    if b != b'\r' {
                        return Err(H1Error::BadChunk);
                    }
                    self.state = ChunkState::DataLf;
                }
                ChunkState::DataLf => {
                    if b != b'\n' {
                        return Err(H1Error::BadChunk);
                    }
                    self.state = ChunkState::Size;
                }
                ChunkState::TrailerStart => {
                    self.state = if b == b'\r' {
                        ChunkState::FinalLf
                    } else if b == b'\n' || b == 0 {
                        return Err(H1Error::BadChunk);
                    } else {
                        ChunkState::Trailer
                    };
                }
                ChunkState::Trailer => match b {
                    b'\r' => self.state = ChunkState::TrailerLf,
                    b'\n' | 0 => return Err(H1Error::BadChunk),
                    _ => {}
                },
                ChunkState::TrailerLf => {
                    if b != b'\n' {
                        return Err(H1Error::BadChunk);
                    }
                    self.state = ChunkState::TrailerStart;
                }
                ChunkState::FinalLf => {
                    if b != b'\n' {
                        return Err(H1Error::BadChunk);
                    }
                    self.state = ChunkState::Done;
                    return Ok(i + 1);
                }
                ChunkState::Done => return Ok(i),
            }
            i += 1;
        }
        Ok(i)
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(s: &str) -> Result<Head, H1Error> {
        Head::parse_request(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn parses_request_and_framing() {
        let h = req("POST /db/doc?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n").unwrap();
        assert_eq!(h.method(), b"POST");
        assert_eq!(h.target(), b"/db/doc?x=1");
        assert_eq!(h.request_body(), Ok(BodyKind::Length(5)));
        assert!(h.wants_keep_alive());
        let h = req("GET / HTTP/1.0\r\n\r\n").unwrap();
        assert!(!h.wants_keep_alive());
    }

    #[test]
    fn refuses_ambiguous_framing() {
        for bad in [
            "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 0x5\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: \r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
            "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
        ] {
            let r = req(bad).and_then(|h| h.request_body());
            assert!(r.is_err(), "{bad:?} gave {r:?}");
        }
        let h = req("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap();
        assert_eq!(h.request_body(), Ok(BodyKind::Chunked));
        let h = req("POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n").unwrap();
        assert_eq!(h.request_body(), Ok(BodyKind::Length(5)));
    }

    #[test]
    fn forwards_without_hop_by_hop() {
        let h = req("GET / HTTP/1.1\r\nHost: a\r\nConnection: close, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: 5\r\nAccept: */*\r\n\r\n").unwrap();
        let mut out = BytesMut::new();
        h.write_forwarded(&h.request_line(), &mut out);
        assert_eq!(&out[..], b"GET / HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n");
    }

    #[test]
    fn chunked_decoder() {
        let mut d = ChunkedDecoder::default();
        let body = b"5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        assert_eq!(d.feed(body).unwrap(), body.len() - 4);
        assert!(d.is_done());
        let mut d = ChunkedDecoder::default();
        for b in b"4\r\nwxyz\r\n0\r\n\r\n" {
            d.feed(&[*b]).unwrap();
        }
        assert!(d.is_done());
        for bad in [
            &b"x\r\n"[..],
            b"5\nhello",
            b"2\r\nabc\r\n",
            b"fffffffffffffffff\r\n",
        ] {
            assert!(ChunkedDecoder::default().feed(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn response_framing() {
        let r = Head::parse_response(Bytes::from_static(
            b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
        ))
        .unwrap();
        assert_eq!(r.response_body(b"GET"), Ok(BodyKind::None));
        let r = Head::parse_response(Bytes::from_static(b"HTTP/1.1 200 OK\r\n\r\n")).unwrap();
        assert_eq!(r.response_body(b"GET"), Ok(BodyKind::UntilClose));
        assert_eq!(r.response_body(b"HEAD"), Ok(BodyKind::None));
        assert_eq!(r.status_line(), b"HTTP/1.1 200 OK");
    }
}
