//! HTTP/1.1 message heads and body framing (RFC 9112), on httparse.
//!
//! This is the one place that knows the wire format: the service asks it
//! to parse a head, decide how the body is delimited, and write the head
//! that goes to the other side. Heads are kept as the raw bytes plus
//! offsets, so errors can show the bytes exactly as received.

use bytes::{BufMut, Bytes, BytesMut};

use crate::wire::spares::{self, Spares};

mod case;
pub(crate) use case::CaseAdjust;

/// At most this many header fields in one message: HAProxy 2.6
/// (`tune.http.maxhdr` 101, the start line included) accepts 100 and
/// refuses 101, with a 400 for a request and a 502 for a response.
pub(crate) const MAX_HEADERS: usize = 100;

/// Why a message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum H1Error {
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
    /// A request-target that does not fit the method (RFC 9112 §3.2).
    #[error("invalid request target")]
    BadTarget,
    /// More than one Host, or a Host that differs from the absolute-form
    /// target's authority (RFC 9112 §3.2).
    #[error("invalid Host")]
    BadHost,
    /// CONNECT: sluice does not tunnel.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// A transfer coding other than `chunked` (`gzip, chunked`): valid,
    /// but neither HAProxy 2.6 nor sluice forwards it.
    #[error("unsupported transfer coding")]
    UnsupportedCoding,
}

impl H1Error {
    /// The status a client gets for a request refused for this reason, as
    /// HAProxy 2.6 answers (400 for everything its H1 parser refuses, 422
    /// for a transfer coding it does not handle); 405 for CONNECT.
    pub(crate) fn request_status(&self) -> u16 {
        match self {
            H1Error::MethodNotAllowed => 405,
            H1Error::UnsupportedCoding => 422,
            _ => 400,
        }
    }
}

/// Where a header's name and value sit in the head buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeaderPos {
    name: (u32, u32),
    value: (u32, u32),
    /// The whole line, without its CRLF.
    line: (u32, u32),
    /// What the header is to sluice, decided once at parse time.
    kind: Kind,
}

/// A head's field positions, in a vector taken from the thread's spares
/// and given back when the head is dropped: once a thread has served a few
/// messages, parsing a head allocates nothing.
#[derive(Debug)]
pub(crate) struct Fields(Vec<HeaderPos>);

thread_local! {
    static SPARE_FIELDS: std::cell::RefCell<Spares<Vec<HeaderPos>>> =
        const { std::cell::RefCell::new(Spares::new()) };
}

/// The most fields a spare vector may hold (a head with more is rare; its
/// vector is not kept).
const KEPT_FIELDS_MAX: usize = 128;

/// Gives back the field vectors of this thread that went unused since the
/// last call (`wire::spares`).
pub(crate) fn trim_spares() {
    spares::trim(&SPARE_FIELDS);
}

impl Fields {
    fn with_capacity(n: usize) -> Fields {
        let mut v = spares::take(&SPARE_FIELDS).unwrap_or_default();
        v.reserve(n);
        Fields(v)
    }
}

impl std::ops::Deref for Fields {
    type Target = Vec<HeaderPos>;
    fn deref(&self) -> &Vec<HeaderPos> {
        &self.0
    }
}

impl std::ops::DerefMut for Fields {
    fn deref_mut(&mut self) -> &mut Vec<HeaderPos> {
        &mut self.0
    }
}

impl Clone for Fields {
    fn clone(&self) -> Fields {
        let mut f = Fields::with_capacity(self.len());
        f.0.extend_from_slice(&self.0);
        f
    }
}

impl Drop for Fields {
    fn drop(&mut self) {
        let mut v = std::mem::take(&mut self.0);
        if v.capacity() == 0 || v.capacity() > KEPT_FIELDS_MAX {
            return;
        }
        v.clear();
        spares::give(&SPARE_FIELDS, v);
    }
}

/// The headers sluice itself looks at; everything else is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Other,
    Connection,
    ContentLength,
    TransferEncoding,
    Upgrade,
    Expect,
    /// Other hop-by-hop fields: Keep-Alive, Proxy-Connection, TE, Trailer.
    HopByHop,
}

impl Kind {
    fn of(name: &[u8]) -> Kind {
        // Dispatch on the first letter and the length: most names are
        // rejected without a full compare.
        let is = |k: &[u8]| name.eq_ignore_ascii_case(k);
        let first = name.first().map_or(0, |b| b.to_ascii_lowercase());
        if !matches!(first, b't' | b'e' | b'u' | b'c' | b'k' | b'p') {
            return Kind::Other;
        }
        match name.len() {
            2 if is(b"te") => Kind::HopByHop,
            6 if is(b"expect") => Kind::Expect,
            7 if is(b"upgrade") => Kind::Upgrade,
            7 if is(b"trailer") => Kind::HopByHop,
            10 if is(b"connection") => Kind::Connection,
            10 if is(b"keep-alive") => Kind::HopByHop,
            14 if is(b"content-length") => Kind::ContentLength,
            16 if is(b"proxy-connection") => Kind::HopByHop,
            17 if is(b"transfer-encoding") => Kind::TransferEncoding,
            _ => Kind::Other,
        }
    }

    /// Not forwarded as received: framing sluice rewrites itself, the
    /// `Connection` field HAProxy 2.6 writes again without its `close`
    /// and `keep-alive` tokens, and `Expect` (answered here). The other
    /// hop-by-hop fields (`Upgrade`, `Keep-Alive`, `TE`...) and those a
    /// `Connection` names go on, as HAProxy forwards them.
    fn rewritten_when_forwarding(self) -> bool {
        !matches!(self, Kind::Other | Kind::HopByHop | Kind::Upgrade)
    }
}

/// The framing header line of a body sluice delimits itself, built on the
/// stack: `content-length: <n>` or `transfer-encoding: chunked`.
pub(crate) struct FramingLine {
    buf: [u8; 40],
    len: usize,
}

impl FramingLine {
    pub(crate) fn of(body: BodyKind) -> FramingLine {
        let mut line = FramingLine {
            buf: [0; 40],
            len: 0,
        };
        match body {
            BodyKind::Length(n) => {
                line.put(b"content-length: ");
                let mut digits = [0u8; 20];
                let mut i = digits.len();
                let mut n = n;
                loop {
                    i -= 1;
                    digits[i] = b'0' + (n % 10) as u8;
                    n /= 10;
                    if n == 0 {
                        break;
                    }
                }
                line.put(&digits[i..]);
                line.put(b"\r\n");
            }
            BodyKind::Chunked => line.put(b"transfer-encoding: chunked\r\n"),
            BodyKind::None | BodyKind::UntilClose => {}
        }
        line
    }

    /// The kind of header it replaces in place.
    fn replaces(&self) -> Option<Kind> {
        match self.buf.first() {
            _ if self.len == 0 => None,
            Some(b'c') => Some(Kind::ContentLength),
            _ => Some(Kind::TransferEncoding),
        }
    }

    fn put(&mut self, b: &[u8]) {
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// A status line's code (`200`), its version and reason apart, in the
/// size HAProxy logs.
const STATUS_WORDS: u32 = 3;

/// A parsed request or response head.
#[derive(Debug, Clone)]
pub(crate) struct Head {
    /// The head exactly as received, up to and including the blank line.
    pub(crate) raw: Bytes,
    /// Request: method; response: empty.
    method: (u32, u32),
    /// Request: target; response: reason phrase.
    target: (u32, u32),
    /// Response status code (0 for requests).
    pub(crate) status: u16,
    /// Minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub(crate) minor: u8,
    /// What the `Connection` fields list, read once at parse time: the
    /// keep-alive decision, the upgrade check and the forwarding of every
    /// message ask, and most messages have one such field or none.
    conn: ConnTokens,
    /// The fields' part of [`Head::logged_size`], summed at parse time.
    logged_fields: u32,
    headers: Fields,
}

/// The tokens of a message's `Connection` fields that sluice acts on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ConnTokens(u8);

impl ConnTokens {
    const CLOSE: u8 = 1;
    const KEEP_ALIVE: u8 = 2;
    const UPGRADE: u8 = 4;
    /// Any other token: the name of a field to drop when forwarding.
    const OTHER: u8 = 8;
    /// A field that is not a lone `keep-alive` or `close`: something of it
    /// may be forwarded.
    const ODD: u8 = 16;

    /// The token `word` (trimmed) is, if sluice acts on it.
    fn word(word: &[u8]) -> u8 {
        match word.len() {
            0 => 0,
            5 if word.eq_ignore_ascii_case(b"close") => Self::CLOSE,
            7 if word.eq_ignore_ascii_case(b"upgrade") => Self::UPGRADE,
            10 if word.eq_ignore_ascii_case(b"keep-alive") => Self::KEEP_ALIVE,
            _ => Self::OTHER,
        }
    }

    fn has(self, token: u8) -> bool {
        self.0 & token != 0
    }
}

/// How a message body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
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
///
/// Line ends are CRLF or a bare LF (RFC 9112 §2.2 lets a recipient accept
/// a bare LF in the start line and fields; HAProxy 2.6 does). The blank
/// line is a LF followed by LF or CRLF, which does not depend on what came
/// before, so the search can resume anywhere. httparse then checks the
/// syntax; a CR not followed by LF is refused there.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'\n', &buf[i..]) {
        let nl = i + p;
        match buf.get(nl + 1) {
            Some(b'\n') => return Some(nl + 2),
            Some(b'\r') if buf.get(nl + 2) == Some(&b'\n') => return Some(nl + 3),
            _ => {}
        }
        i = nl + 1;
    }
    None
}

impl Head {
    fn slice(&self, (a, b): (u32, u32)) -> &[u8] {
        &self.raw[a as usize..b as usize]
    }

    pub(crate) fn method(&self) -> &[u8] {
        self.slice(self.method)
    }

    pub(crate) fn target(&self) -> &[u8] {
        self.slice(self.target)
    }

    /// A request's version as received (`HTTP/1.1`; what `option
    /// accept-invalid-http-request` lets through, `HTTP/1.10` or
    /// `RTSP/1.0`, which HAProxy 2.6 forwards and logs as received), or
    /// `HTTP/1.0` for a request without one (HTTP/0.9).
    pub(crate) fn version(&self) -> &[u8] {
        // The rest of the request line after the target and its space: a
        // few bytes to scan.
        let rest = &self.raw[self.target.1 as usize..];
        // The usual versions without a scan: this runs for each request.
        match rest.get(..10) {
            Some(b" HTTP/1.1\r") => return b"HTTP/1.1",
            Some(b" HTTP/1.0\r") => return b"HTTP/1.0",
            _ => {}
        }
        let end = rest
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
            .unwrap_or(rest.len());
        match rest[..end].strip_prefix(b" ") {
            Some(v) if !v.is_empty() => v,
            _ => b"HTTP/1.0",
        }
    }

    /// Whether the field's line is exactly `name: value` (one space after
    /// the colon, a non-empty value ending the line), so that forwarding
    /// it as is writes what HAProxy 2.6 writes.
    fn is_canonical(&self, h: &HeaderPos) -> bool {
        h.value.0 == h.name.1 + 2
            && h.value.1 == h.line.1
            && h.value.1 > h.value.0
            && self.raw.get(h.name.1 as usize + 1) == Some(&b' ')
    }

    /// The size HAProxy 2.6 logs for this head (`%U`'s head part, `%B`'s
    /// for a server's response), from
    /// the parsed fields rather than a new scan of the bytes: the start
    /// line's three words plus 20, each field's name and value (of a
    /// `connection` field what HAProxy keeps of it), and 1 for the end of
    /// the head. The same rule as
    /// [`logged_size::head`](crate::wire::logged_size::head), which measures
    /// the messages sluice writes itself.
    pub(crate) fn logged_size(&self) -> u64 {
        // A status line's words are its version, its code and its reason
        // (empty or not, with or without the space before it); a request
        // line's, the line without its two spaces.
        let words = if self.status != 0 {
            self.status_version().len() + (STATUS_WORDS + self.target.1 - self.target.0) as usize
        } else {
            // httparse skips empty lines before the start line.
            let start = self
                .raw
                .iter()
                .position(|&b| b != b'\r' && b != b'\n')
                .unwrap_or(self.raw.len());
            let rest = &self.raw[start..];
            let line = memchr::memchr(b'\n', rest).map_or(rest, |e| &rest[..e]);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            line.len().saturating_sub(2)
        };
        let fields = self.logged_fields as usize;
        crate::wire::logged_size::START_LINE
            + words as u64
            + fields as u64
            + crate::wire::logged_size::END_OF_HEAD
    }

    /// The head counts in `%B` as `sent` did: its fields as they are,
    /// the status line `sent` had (HAProxy counts the server's status
    /// line, whatever `set-status` made of it).
    pub(crate) fn count_status_line_of(&mut self, sent: &Head) {
        let words = |h: &Head| h.status_version().len() + (h.target.1 - h.target.0) as usize;
        let (was, now) = (words(sent) as u32, words(self) as u32);
        self.logged_fields = (self.logged_fields + was).saturating_sub(now);
    }

    pub(crate) fn reason(&self) -> &[u8] {
        self.slice(self.target)
    }

    pub(crate) fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.headers
            .iter()
            .map(|h| (self.slice(h.name), self.slice(h.value)))
    }

    /// Each header's name and whole line (without its line end), in order.
    pub(crate) fn header_lines(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.headers
            .iter()
            .map(|h| (self.slice(h.name), self.slice(h.line)))
    }

    /// Values of every header named `name` (case-insensitive).
    pub(crate) fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        let kind = Kind::of(name.as_bytes());
        self.headers
            .iter()
            .filter(move |h| {
                // Known headers compare by kind, decided at parse time.
                if kind == Kind::Other || kind == Kind::HopByHop {
                    self.slice(h.name).eq_ignore_ascii_case(name.as_bytes())
                } else {
                    h.kind == kind
                }
            })
            .map(|h| self.slice(h.value))
    }

    /// The head as HAProxy holds it once it answered an `Expect:
    /// 100-continue` itself: without its `Expect` fields (what the
    /// sample fetches read then; the bytes forwarded are the edits').
    pub(crate) fn without_expect(&self) -> Head {
        let mut h = self.clone();
        h.headers.retain(|p| p.kind != Kind::Expect);
        h
    }

    /// Values of the headers of a kind sluice tracks (no name compare).
    /// A head of parsed parts, with what its `Connection` fields list and
    /// its fields' logged size (one pass over the fields).
    fn new(
        raw: Bytes,
        method: Span,
        target: Span,
        status: u16,
        minor: u8,
        headers: Fields,
    ) -> Head {
        let (mut conn, mut logged) = (0u8, 0usize);
        for h in headers.iter() {
            let (name, value) = (h.name.1 - h.name.0, h.value.1 - h.value.0);
            if h.kind != Kind::Connection {
                logged += (name + value) as usize;
                continue;
            }
            // One pass over the tokens: those sluice acts on, and what
            // HAProxy keeps of the field (`close` and `keep-alive` go).
            let v = &raw[h.value.0 as usize..h.value.1 as usize];
            // Nearly every such field is a lone `keep-alive` or `close`:
            // taken out whole, no token scan.
            match v.len() {
                10 if v.eq_ignore_ascii_case(b"keep-alive") => {
                    conn |= ConnTokens::KEEP_ALIVE;
                    continue;
                }
                5 if v.eq_ignore_ascii_case(b"close") => {
                    conn |= ConnTokens::CLOSE;
                    continue;
                }
                _ => {}
            }
            conn |= ConnTokens::ODD;
            let kept = crate::wire::logged_size::connection_kept_by(v, |w| {
                let t = ConnTokens::word(w);
                conn |= t;
                t & (ConnTokens::CLOSE | ConnTokens::KEEP_ALIVE) != 0
            });
            if let Some(kept) = kept {
                logged += name as usize + kept;
            }
        }
        Head {
            raw,
            method,
            target,
            status,
            minor,
            conn: ConnTokens(conn),
            logged_fields: u32::try_from(logged).unwrap_or(u32::MAX),
            headers,
        }
    }

    fn values_of(&self, kind: Kind) -> impl Iterator<Item = &[u8]> {
        self.headers
            .iter()
            .filter(move |h| h.kind == kind)
            .map(|h| self.slice(h.value))
    }

    /// Whether any `Connection` header lists `token` (one of
    /// [`ConnTokens`]'s).
    fn connection_has(&self, token: u8) -> bool {
        self.conn.has(token)
    }

    /// Parses a request head (the bytes up to and including the blank line).
    pub(crate) fn parse_request(raw: Bytes) -> Result<Head, H1Error> {
        Self::parse_request_keeping(raw).map_err(|(e, _)| e)
    }

    /// [`parse_request`](Self::parse_request), giving the bytes back when
    /// they are refused (for `show errors`).
    pub(crate) fn parse_request_keeping(raw: Bytes) -> Result<Head, (H1Error, Bytes)> {
        Self::parse_request_lax(raw, false)
    }

    /// [`parse_request_keeping`](Self::parse_request_keeping); `lax`:
    /// `option accept-invalid-http-request`, which lets through what
    /// HAProxy 2.6 then lets through: any byte but CR, LF and `:` in a
    /// header name, bytes above 127 in the target, and any version (none:
    /// HTTP/0.9, `HTTP/1.10`, `RTSP/1.0`; served as HTTP/1.0).
    pub(crate) fn parse_request_lax(raw: Bytes, lax: bool) -> Result<Head, (H1Error, Bytes)> {
        let parts = match request_parts(&raw) {
            Err(e) if lax && e != H1Error::TooManyHeaders => lax_request_parts(&raw).map_err(|_| e),
            other => other,
        };
        let (method, target, minor, headers) = match parts {
            Ok(p) => p,
            Err(e) => return Err((e, raw)),
        };
        // HAProxy refuses bytes above 127 in the target unless relaxed, and
        // a `#` (a fragment a client must not send, which a server may read
        // as part of the path: CVE-2023-45539, fixed in the 2.6 that Debian
        // ships).
        if !lax
            && let Some(i) = raw[target.0 as usize..target.1 as usize]
                .iter()
                .position(|&b| b >= 0x80 || b == b'#')
        {
            return Err((H1Error::Syntax(target.0 as usize + i), raw));
        }
        let head = Head::new(raw, method, target, 0, minor, headers);
        match head.check_target() {
            Ok(()) => Ok(head),
            Err(e) => Err((e, head.raw)),
        }
    }

    /// Request-target forms (RFC 9112 §3.2) and Host (§3.2, RFC 9110 §7.2):
    /// origin-form for every method, absolute-form whose authority matches
    /// Host, `*` only for OPTIONS, authority-form only for CONNECT, which
    /// sluice refuses (405) since it does not tunnel. At most one Host.
    fn check_target(&self) -> Result<(), H1Error> {
        let target = self.target();
        let method = self.method();
        let mut hosts = self.values("host");
        let host = hosts.next();
        if hosts.next().is_some() {
            return Err(H1Error::BadHost);
        }
        if method == b"CONNECT" {
            return Err(H1Error::MethodNotAllowed);
        }
        // A WebSocket upgrade without a key is refused, as HAProxy 2.6
        // does; it takes the first key of 24 bytes (the base64 of 16) and
        // looks no further at what they are.
        if self.requests_upgrade()
            && self.upgrades_to_websocket()
            && !self.values("sec-websocket-key").any(|k| k.len() == 24)
        {
            return Err(H1Error::BadTarget);
        }
        match target.first() {
            Some(b'/') => Ok(()),
            Some(b'*') if target.len() == 1 && method == b"OPTIONS" => Ok(()),
            _ => {
                let authority = absolute_authority(target).ok_or(H1Error::BadTarget)?;
                match host {
                    Some(h) if !h.eq_ignore_ascii_case(authority) => Err(H1Error::BadHost),
                    _ => Ok(()),
                }
            }
        }
    }

    /// Whether `Upgrade` names `websocket` (a request's or a 101's).
    pub(crate) fn upgrades_to_websocket(&self) -> bool {
        self.values_of(Kind::Upgrade).any(|v| {
            v.split(|&b| b == b',')
                .any(|t| trim(t).eq_ignore_ascii_case(b"websocket"))
        })
    }

    /// Whether a `Connection` field lists `upgrade` (with or without an
    /// `Upgrade` field).
    pub(crate) fn connection_lists_upgrade(&self) -> bool {
        self.connection_has(ConnTokens::UPGRADE)
    }

    /// Whether a `Connection` field names a field (a token other than
    /// `close`, `keep-alive` and `upgrade`): most messages' do not.
    pub(crate) fn connection_names_fields(&self) -> bool {
        self.connection_has(ConnTokens::OTHER)
    }

    /// Whether this request asks for a protocol switch (`Upgrade` named
    /// by `Connection`): only then may a 101 answer open a tunnel.
    pub(crate) fn requests_upgrade(&self) -> bool {
        self.values_of(Kind::Upgrade).next().is_some() && self.connection_has(ConnTokens::UPGRADE)
    }

    /// Parses a response head.
    pub(crate) fn parse_response(raw: Bytes) -> Result<Head, H1Error> {
        Self::parse_response_keeping(raw).map_err(|(e, _)| e)
    }

    /// [`parse_response`](Self::parse_response), giving the bytes back
    /// when they are refused (for `show errors`).
    pub(crate) fn parse_response_keeping(raw: Bytes) -> Result<Head, (H1Error, Bytes)> {
        Self::parse_response_lax(raw, false)
    }

    /// [`parse_response_keeping`](Self::parse_response_keeping); `lax`:
    /// `option accept-invalid-http-response`, which lets through, as
    /// HAProxy 2.6: any byte but CR, LF and `:` in a header name, and
    /// versions of several digits (`HTTP/1.10`, served as HTTP/1.0).
    pub(crate) fn parse_response_lax(raw: Bytes, lax: bool) -> Result<Head, (H1Error, Bytes)> {
        let parts = match response_parts(&raw) {
            Err(e) if lax && e != H1Error::TooManyHeaders => {
                lax_response_parts(&raw).map_err(|_| e)
            }
            other => other,
        };
        let (code, reason, minor, headers) = match parts {
            Ok(p) => p,
            Err(e) => return Err((e, raw)),
        };
        Ok(Head::new(raw, (0, 0), reason, code, minor, headers))
    }

    /// Content-Length: every value must be plain digits and all equal.
    pub(crate) fn content_length(&self) -> Result<Option<u64>, H1Error> {
        let mut found: Option<u64> = None;
        for v in self.values_of(Kind::ContentLength) {
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
        for v in self.values_of(Kind::TransferEncoding) {
            any = true;
            codings.extend(v.split(|&b| b == b',').map(trim));
        }
        any.then_some(codings)
    }

    /// How the request body is delimited. A request with both
    /// Transfer-Encoding and Content-Length is read as chunked (and its
    /// Content-Length is not forwarded).
    ///
    /// Transfer-Encoding must be exactly `chunked` (any case, in one or
    /// several fields): `chunked` twice, not last, an empty element or
    /// anything but a token is a 400; another coding before it
    /// (`gzip, chunked`, valid per RFC 9112) is a 422, as HAProxy 2.6
    /// answers. Transfer-Encoding on HTTP/1.0 is a 400 (RFC 9112 §6.1 calls
    /// its framing faulty; HAProxy forwards it chunked and closes).
    pub(crate) fn request_body(&self) -> Result<BodyKind, H1Error> {
        if let Some(codings) = self.transfer_codings() {
            if self.minor == 0 {
                return Err(H1Error::BadTransferEncoding);
            }
            check_codings(&codings)?;
            if codings.len() > 1 {
                return Err(H1Error::UnsupportedCoding);
            }
            return Ok(BodyKind::Chunked);
        }
        Ok(match self.content_length()? {
            Some(0) | None => BodyKind::None,
            Some(n) => BodyKind::Length(n),
        })
    }

    /// How the response body is delimited, given the request method.
    pub(crate) fn response_body(&self, request_method: &[u8]) -> Result<BodyKind, H1Error> {
        if request_method == b"HEAD"
            || (100..200).contains(&self.status)
            || self.status == 204
            || self.status == 304
        {
            return Ok(BodyKind::None);
        }
        // A response must be plainly chunked too: HAProxy 2.6 answers 502
        // to `gzip`, `gzip, chunked` or `chunked, gzip` from a server
        // (RFC 9112 would read some of them until close).
        if let Some(codings) = self.transfer_codings() {
            check_codings(&codings)?;
            if codings.len() > 1 {
                return Err(H1Error::UnsupportedCoding);
            }
            return Ok(BodyKind::Chunked);
        }
        Ok(match self.content_length()? {
            Some(0) => BodyKind::None,
            Some(n) => BodyKind::Length(n),
            None => BodyKind::UntilClose,
        })
    }

    /// The framing line of this response as it goes to the client, given
    /// its body: HEAD and 304 answers keep the length they announce (and a
    /// 200 its `content-length: 0`); 1xx and 204 must not carry one (RFC
    /// 9110 §8.6).
    pub(crate) fn response_framing(&self, body: BodyKind) -> FramingLine {
        match body {
            BodyKind::Length(_) | BodyKind::Chunked => FramingLine::of(body),
            BodyKind::None => match self.response_length(body) {
                Some(n) => FramingLine::of(BodyKind::Length(n)),
                None => FramingLine::of(BodyKind::None),
            },
            BodyKind::UntilClose => FramingLine::of(BodyKind::None),
        }
    }

    /// The `content-length` this response goes to the client with, given
    /// its body (see [`response_framing`](Self::response_framing)).
    pub(crate) fn response_length(&self, body: BodyKind) -> Option<u64> {
        match body {
            BodyKind::Length(n) => Some(n),
            BodyKind::None if self.status >= 200 && self.status != 204 => {
                self.content_length().ok().flatten()
            }
            BodyKind::None | BodyKind::UntilClose | BodyKind::Chunked => None,
        }
    }

    /// The framing line of this request as it goes to the server, given
    /// its body: an empty body announced by `Content-Length: 0` keeps its
    /// `content-length: 0`, as HAProxy 2.6 forwards it (whatever the
    /// method).
    pub(crate) fn request_framing(&self, body: BodyKind) -> FramingLine {
        // A request read as without a body and with a Content-Length has
        // a length of 0 ([`request_body`](Self::request_body)).
        match body {
            BodyKind::None if self.values_of(Kind::ContentLength).next().is_some() => {
                FramingLine::of(BodyKind::Length(0))
            }
            _ => FramingLine::of(body),
        }
    }

    /// Whether the peer wants the connection kept open after this message.
    pub(crate) fn wants_keep_alive(&self) -> bool {
        if self.minor == 0 {
            self.connection_has(ConnTokens::KEEP_ALIVE)
        } else {
            !self.connection_has(ConnTokens::CLOSE)
        }
    }

    /// Writes the head lines to forward: the first line and every header
    /// except hop-by-hop ones (and those the `Connection` header names),
    /// then `extra` lines. The caller adds framing headers and the blank
    /// line through `extra`.
    pub(crate) fn write_forwarded(&self, out: &mut BytesMut, framing: &FramingLine) -> bool {
        self.write_forwarded_with(out, (None, None), |_, _| false, &[], framing)
    }

    /// [`write_forwarded`](Self::write_forwarded) with rule edits: another
    /// request target, and the headers `drop` names left out (it is given
    /// each header's position and name).
    ///
    /// `framing` (the `content-length` or `transfer-encoding` line sluice
    /// frames the body with) takes the place of the first received header
    /// of its kind, so header order survives as in HAProxy; returns whether
    /// it was written there (if not, the caller appends it).
    #[inline]
    pub(crate) fn write_forwarded_with(
        &self,
        out: &mut BytesMut,
        (method, target): (Option<&[u8]>, Option<&[u8]>),
        drop: impl Fn(usize, &[u8]) -> bool,
        replaced: &[(usize, Vec<u8>)],
        framing: &FramingLine,
    ) -> bool {
        // The head rarely grows: room for it and the framing lines sluice
        // adds, in one allocation.
        out.reserve(self.raw.len() + 96 + target.map_or(0, <[u8]>::len));
        if method.is_none() && target.is_none() {
            self.put_first_line(out);
        } else {
            self.put_request_line(
                out,
                method.unwrap_or(self.method()),
                target.unwrap_or(self.target()),
            );
        }
        out.put_slice(b"\r\n");
        let mut in_place = framing.replaces();
        for (i, h) in self.headers.iter().enumerate() {
            if h.kind.rewritten_when_forwarding() {
                if in_place == Some(h.kind) {
                    out.put_slice(framing.bytes());
                    in_place = None;
                }
                // What the tokens sluice answers itself leave of a
                // `Connection` field stays in place, as in HAProxy 2.6
                // (`keep-alive, Upgrade` goes on as `connection: Upgrade`),
                // unless a rule dropped it.
                if h.kind == Kind::Connection
                    && self.conn.has(ConnTokens::ODD)
                    && !drop(i, self.slice(h.name))
                {
                    put_connection_kept(out, self.slice(h.value));
                }
                continue;
            }
            if drop(i, self.slice(h.name)) {
                continue;
            }
            let value = match replaced.iter().find(|(j, _)| *j == i) {
                Some((_, v)) => v.as_slice(),
                // Already `name: value` (as nearly every client writes
                // it): the line goes out in one copy.
                None if self.is_canonical(h) => {
                    put_lowered(out, self.slice(h.line), h.name.1 - h.name.0);
                    out.put_slice(b"\r\n");
                    continue;
                }
                None => self.slice(h.value),
            };
            // Written again as `name: value`, as HAProxy 2.6 does: the
            // spaces around the value are not forwarded, and an empty
            // value goes out as `name: `.
            let name = self.slice(h.name);
            put_lowered(out, name, name.len() as u32);
            out.put_slice(b": ");
            out.put_slice(value);
            out.put_slice(b"\r\n");
        }
        in_place.is_none()
    }

    /// A 101's head as it goes to the client: every field kept (its
    /// `connection` and `upgrade` make the switch), in lower case and
    /// written `name: value`, as HAProxy 2.6 sends it.
    pub(crate) fn write_switch(&self, out: &mut BytesMut) {
        out.reserve(self.raw.len());
        self.put_first_line(out);
        out.put_slice(b"\r\n");
        for h in self.headers.iter() {
            if self.is_canonical(h) {
                put_lowered(out, self.slice(h.line), h.name.1 - h.name.0);
            } else {
                let name = self.slice(h.name);
                put_lowered(out, name, name.len() as u32);
                out.put_slice(b": ");
                out.put_slice(self.slice(h.value));
            }
            out.put_slice(b"\r\n");
        }
        out.put_slice(b"\r\n");
    }

    /// A request line to `target`, without its CRLF: the request's own
    /// version, as HAProxy 2.6 forwards an HTTP/1.0 request as HTTP/1.0.
    fn put_request_line(&self, out: &mut BytesMut, method: &[u8], target: &[u8]) {
        out.put_slice(method);
        out.put_u8(b' ');
        out.put_slice(target);
        out.put_u8(b' ');
        out.put_slice(self.version());
    }

    /// A response's version as the server wrote it: HAProxy 2.6 repeats
    /// it to the client (`HTTP/1.0`, or what the relaxed parser let
    /// through), where a request's goes out as received too.
    pub(crate) fn status_version(&self) -> &[u8] {
        // The usual version without a scan: this runs for each response.
        if self.raw.starts_with(b"HTTP/1.1 ") {
            return b"HTTP/1.1";
        }
        // `<version> <code>`, after the empty lines httparse skips.
        let start = self
            .raw
            .iter()
            .position(|&b| b != b'\r' && b != b'\n')
            .unwrap_or(self.raw.len());
        let rest = &self.raw[start..];
        match &rest[..memchr::memchr(b' ', rest).unwrap_or(0)] {
            b"" => b"HTTP/1.1",
            v => v,
        }
    }

    /// The first line as forwarded, without its CRLF: `<method> <target>
    /// <version>` for a request, `<version> <code> <reason>` for a
    /// response, the version as received.
    fn put_first_line(&self, out: &mut BytesMut) {
        if self.status == 0 {
            self.put_request_line(out, self.method(), self.target());
        } else {
            out.put_slice(self.status_version());
            out.put_u8(b' ');
            // A status is three digits (the parser guarantees it).
            let c = self.status;
            out.put_slice(&[
                b'0' + (c / 100 % 10) as u8,
                b'0' + (c / 10 % 10) as u8,
                b'0' + (c % 10) as u8,
            ]);
            out.put_u8(b' ');
            out.put_slice(self.reason());
        }
    }
}

/// `connection: <value>` with the `close` and `keep-alive` tokens of
/// `value` (trimmed) left out, as HAProxy 2.6 forwards the field, or
/// nothing when no other token is left (the kept value is the one
/// [`logged_size::connection_kept`](crate::wire::logged_size::connection_kept)
/// measures).
fn put_connection_kept(out: &mut BytesMut, value: &[u8]) {
    // The usual values, which leave nothing, without a scan.
    if value.eq_ignore_ascii_case(b"keep-alive") || value.eq_ignore_ascii_case(b"close") {
        return;
    }
    let mark = out.len();
    out.put_slice(b"connection: ");
    let start = out.len();
    crate::wire::logged_size::connection_kept_parts(value, |part| out.put_slice(part));
    if out.len() == start {
        out.truncate(mark);
    } else {
        out.put_slice(b"\r\n");
    }
}

/// The end of a chunked body (`0`, its trailer fields, the blank line;
/// checked by the decoder) as HAProxy 2.6 writes it: each field as a
/// head's, `name: value` with the name in lower case, then respelled by
/// `names` (`h1-case-adjust`). A rare path: most bodies have no trailer.
pub(crate) fn rewrite_trailers(tail: &[u8], names: Option<&CaseAdjust>) -> BytesMut {
    let mut out = BytesMut::with_capacity(tail.len());
    out.put_slice(b"0\r\n");
    let fields = tail.splitn(2, |&b| b == b'\n').nth(1).unwrap_or_default();
    for line in fields.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        match memchr::memchr(b':', line) {
            Some(colon) => {
                put_lowered(&mut out, &line[..colon], colon as u32);
                out.put_slice(b": ");
                out.put_slice(trim(&line[colon + 1..]));
            }
            None => out.put_slice(line),
        }
        out.put_slice(b"\r\n");
    }
    out.put_slice(b"\r\n");
    if let Some(names) = names {
        // The `0` line stands for the start line `apply` skips.
        names.apply(&mut out);
    }
    out
}

/// Puts `bytes`, the first `name_len` of which are a field name, in lower
/// case: HAProxy 2.6 keeps names lower-cased (HTX) and sends them so to
/// HTTP/1 peers, both ways. Nothing is allocated; the name is lowered in
/// the output, eight bytes at a time (most clients and servers write
/// `Content-Type`, so a check for upper case first would only add a scan).
#[inline]
fn put_lowered(out: &mut BytesMut, bytes: &[u8], name_len: u32) {
    let at = out.len();
    out.put_slice(bytes);
    let n = (name_len as usize).min(bytes.len());
    lower_ascii(&mut out[at..at + n]);
}

/// `make_ascii_lowercase`, a word at a time.
fn lower_ascii(bytes: &mut [u8]) {
    let (words, rest) = bytes.as_chunks_mut::<8>();
    for w in words {
        *w = lower_word(u64::from_ne_bytes(*w)).to_ne_bytes();
    }
    rest.make_ascii_lowercase();
}

/// The eight bytes of `x` with each ASCII upper-case letter lowered: for
/// each byte below 0x80, two additions tell whether it is at least `A` and
/// more than `Z` (the high bit of its sum; no carry reaches the next byte),
/// and the letters get bit 5.
fn lower_word(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let low7 = x & (0x7f * ONES);
    let at_least_a = low7 + (0x80 - u64::from(b'A')) * ONES;
    let above_z = low7 + (0x7f - u64::from(b'Z')) * ONES;
    let upper = at_least_a & !above_z & !x & (0x80 * ONES);
    x | (upper >> 2)
}

type Span = (u32, u32);

/// Method, target, minor version and headers of a request head.
fn request_parts(raw: &[u8]) -> Result<(Span, Span, u8, Fields), H1Error> {
    let mut hdrs = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut hdrs);
    let control = control_in_value(req.parse(raw), raw, false)?;
    let (Some(method), Some(path), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(H1Error::Syntax(0));
    };
    let method = span(raw, method.as_bytes());
    let target = span(raw, path.as_bytes());
    let headers = match control {
        None => positions(raw, req.headers)?,
        Some(e) => fields_again(raw, e, false)?,
    };
    Ok((method, target, minor, headers))
}

/// The outcome of httparse on a whole head: `Some` when all it refused is
/// a byte in a field value (a control, which HAProxy 2.6 forwards and
/// httparse does not take), for [`fields_again`] to read the fields.
fn control_in_value(
    parsed: httparse::Result<usize>,
    raw: &[u8],
    response: bool,
) -> Result<Option<httparse::Error>, H1Error> {
    match parsed {
        Ok(status) if status.is_partial() => Err(H1Error::Syntax(raw.len())),
        Ok(_) => Ok(None),
        Err(e @ httparse::Error::HeaderValue) => Ok(Some(e)),
        Err(e) => Err(map_err(e, raw, response)),
    }
}

/// The fields of a head whose start line httparse read and whose field
/// values it refused (`e`), read with sluice's own rule for values; what
/// that refuses too is reported as httparse's error, at the same spot.
fn fields_again(raw: &[u8], e: httparse::Error, response: bool) -> Result<Fields, H1Error> {
    // httparse skips empty lines before the start line; the fields follow
    // the line after them.
    let start = raw
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(raw.len());
    let at = memchr::memchr(b'\n', &raw[start..]).map_or(raw.len(), |p| start + p + 1);
    fields(raw, at, false).map_err(|err| match err {
        H1Error::TooManyHeaders => err,
        _ => map_err(e, raw, response),
    })
}

/// Status, reason, minor version and headers of a response head.
fn response_parts(raw: &[u8]) -> Result<(u16, Span, u8, Fields), H1Error> {
    let mut hdrs = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut hdrs);
    let control = control_in_value(resp.parse(raw), raw, true)?;
    let (Some(code), Some(minor)) = (resp.code, resp.version) else {
        return Err(H1Error::Syntax(0));
    };
    // Three digits, but no status below 100 (RFC 9110 §15): forwarded, a
    // `000` would read as garbage to the client (haproxy 2.6 relays it).
    if code < 100 {
        return Err(H1Error::Syntax("HTTP/1.x ".len()));
    }
    // An empty reason may be a slice outside `raw`: do not locate it.
    let reason = match resp.reason {
        Some(r) if !r.is_empty() => span(raw, r.as_bytes()),
        _ => (0, 0),
    };
    let headers = match control {
        None => positions(raw, resp.headers)?,
        Some(e) => fields_again(raw, e, true)?,
    };
    Ok((code, reason, minor, headers))
}

/// The first line of a head and where the header lines start.
fn first_line(raw: &[u8]) -> Option<(&[u8], usize)> {
    let lf = memchr::memchr(b'\n', raw)?;
    let line = &raw[..lf];
    Some((line.strip_suffix(b"\r").unwrap_or(line), lf + 1))
}

/// A request head the strict parser refused, read the relaxed way of
/// `accept-invalid-http-request`.
fn lax_request_parts(raw: &[u8]) -> Result<(Span, Span, u8, Fields), H1Error> {
    let (line, rest) = first_line(raw).ok_or(H1Error::Syntax(0))?;
    let mut words = line.splitn(3, |&b| b == b' ');
    let method = words.next().unwrap_or_default();
    let target = words.next().unwrap_or_default();
    let version = words.next().unwrap_or_default();
    if method.is_empty() || !method.iter().all(|&b| is_tchar(b)) {
        return Err(H1Error::Syntax(0));
    }
    // Controls, space and DEL stay refused in the target and version.
    let visible = |s: &[u8]| s.iter().all(|&b| b > b' ' && b != 0x7f);
    if target.is_empty() || !visible(target) || !visible(version) {
        return Err(H1Error::Syntax(0));
    }
    let minor = u8::from(version == b"HTTP/1.1");
    let method = span(raw, method);
    let target = span(raw, target);
    Ok((method, target, minor, fields(raw, rest, true)?))
}

/// A response head the strict parser refused, read the relaxed way of
/// `accept-invalid-http-response`: `HTTP/<digits>.<digits> <3 digits>`.
fn lax_response_parts(raw: &[u8]) -> Result<(u16, Span, u8, Fields), H1Error> {
    let (line, rest) = first_line(raw).ok_or(H1Error::Syntax(0))?;
    let mut words = line.splitn(3, |&b| b == b' ');
    let version = words.next().unwrap_or_default();
    let code = words.next().unwrap_or_default();
    let reason = words.next().unwrap_or_default();
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    let numbers = version.strip_prefix(b"HTTP/").and_then(|v| {
        let dot = memchr::memchr(b'.', v)?;
        Some(digits(&v[..dot]) && digits(&v[dot + 1..]))
    });
    if numbers != Some(true) || code.len() != 3 || !digits(code) {
        return Err(H1Error::Syntax(0));
    }
    let code = code.iter().fold(0u16, |n, &d| n * 10 + u16::from(d - b'0'));
    if code < 100 || !reason.iter().all(|&b| is_value_byte(b)) {
        return Err(H1Error::Syntax(0));
    }
    let minor = u8::from(version == b"HTTP/1.1");
    let reason = if reason.is_empty() {
        (0, 0)
    } else {
        span(raw, reason)
    };
    Ok((code, reason, minor, fields(raw, rest, true)?))
}

/// Header lines from `at` to the empty line. A value may hold any byte
/// but NUL and CR, as HAProxy 2.6 forwards controls and DEL (RFC 9110
/// §5.5 lets a recipient keep them; it must refuse or replace a NUL, which
/// sluice refuses though HAProxy forwards it). A name is a token, or with
/// `lax_names` (`accept-invalid-http-*`) any bytes but CR, LF and `:`
/// (HAProxy's relaxed rule); then a name that only differs from
/// `Content-Length` or `Transfer-Encoding` by such bytes (`Transfer-Encoding
/// :`) is still refused: forwarded, a server could read it as the framing
/// header sluice did not see.
fn fields(raw: &[u8], mut at: usize, lax_names: bool) -> Result<Fields, H1Error> {
    let mut out = Fields::with_capacity(16);
    loop {
        let lf = memchr::memchr(b'\n', &raw[at..])
            .map(|p| at + p)
            .ok_or(H1Error::Syntax(at))?;
        let end = if lf > at && raw[lf - 1] == b'\r' {
            lf - 1
        } else {
            lf
        };
        let line = &raw[at..end];
        if line.is_empty() {
            return Ok(out);
        }
        if out.len() == MAX_HEADERS {
            return Err(H1Error::TooManyHeaders);
        }
        let colon = memchr::memchr(b':', line).ok_or(H1Error::Syntax(at))?;
        let name = &line[..colon];
        if name.is_empty() || !(lax_names || name.iter().all(|&b| is_tchar(b))) {
            return Err(H1Error::Syntax(at));
        }
        if lax_names && !name.iter().all(|&b| is_tchar(b)) {
            let squeezed: Vec<u8> = name.iter().copied().filter(|&b| is_tchar(b)).collect();
            if line[0] == b' '
                || line[0] == b'\t'
                || name.contains(&b'\r')
                || matches!(
                    Kind::of(&squeezed),
                    Kind::ContentLength | Kind::TransferEncoding
                )
            {
                return Err(H1Error::Syntax(at));
            }
        }
        let value = trim(&line[colon + 1..]);
        if let Some(bad) = value.iter().position(|&b| b == 0 || b == b'\r') {
            return Err(H1Error::Syntax(span(raw, value).0 as usize + bad));
        }
        let name_span = span(raw, name);
        let value_span = if value.is_empty() {
            (name_span.1, name_span.1)
        } else {
            span(raw, value)
        };
        out.push(HeaderPos {
            name: name_span,
            value: value_span,
            line: (at as u32, end as u32),
            kind: Kind::of(name),
        });
        at = lf + 1;
    }
}

/// Transfer-Encoding elements: tokens, none empty, `chunked` once and last.
fn check_codings(codings: &[&[u8]]) -> Result<(), H1Error> {
    let chunked = codings
        .iter()
        .filter(|c| c.eq_ignore_ascii_case(b"chunked"))
        .count();
    let last_chunked = codings
        .last()
        .is_some_and(|c| c.eq_ignore_ascii_case(b"chunked"));
    if chunked != 1
        || !last_chunked
        || codings
            .iter()
            .any(|c| c.is_empty() || !c.iter().all(|&b| is_tchar(b)))
    {
        return Err(H1Error::BadTransferEncoding);
    }
    Ok(())
}

/// The authority of an absolute-form target (`scheme://authority/...`),
/// or None when the target is not in absolute form.
fn absolute_authority(target: &[u8]) -> Option<&[u8]> {
    let sep = target.windows(3).position(|w| w == b"://")?;
    let scheme = &target[..sep];
    if scheme.is_empty()
        || !scheme[0].is_ascii_alphabetic()
        || !scheme
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    {
        return None;
    }
    let rest = &target[sep + 3..];
    let end = rest
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    let authority = &rest[..end];
    (!authority.is_empty()).then_some(authority)
}

/// RFC 9110 token characters.
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Bytes allowed in a field value: HTAB, SP, VCHAR, obs-text.
fn is_value_byte(b: u8) -> bool {
    b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80
}

fn positions(raw: &[u8], headers: &[httparse::Header<'_>]) -> Result<Fields, H1Error> {
    let mut out = Fields::with_capacity(headers.len());
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
        // NUL, CR, LF or any other control byte in a value (HAProxy 2.6
        // forwards a NUL; sluice refuses it). httparse already refuses
        // exactly these bytes; this re-check only guards a parser change.
        debug_assert!(h.value.iter().all(|&b| is_value_byte(b)));
        let line_end = raw[value.1 as usize..]
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
            .map(|p| value.1 as usize + p)
            .unwrap_or(raw.len());
        out.push(HeaderPos {
            name,
            value,
            line: (name.0, line_end as u32),
            kind: Kind::of(h.name.as_bytes()),
        });
    }
    Ok(out)
}

fn map_err(e: httparse::Error, raw: &[u8], response: bool) -> H1Error {
    match e {
        httparse::Error::TooManyHeaders => H1Error::TooManyHeaders,
        httparse::Error::Version => H1Error::Version,
        _ => H1Error::Syntax(crate::wire::error_spot::first_bad_byte(raw, response)),
    }
}

/// `v` without its leading and trailing spaces and tabs (HTTP's OWS).
pub(crate) fn trim(v: &[u8]) -> &[u8] {
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

/// Incremental checker of a chunked body: it is fed the raw bytes as they
/// arrive and says how many of them belong to the body and where chunk
/// data starts, so the body can be relayed re-chunked while its framing is
/// verified.
///
/// Strict RFC 9112 §7.1 grammar: hex size (leading zeros allowed, no sign,
/// no `0x`, at most 64 bits), optional whitespace, extensions of visible
/// bytes only, CRLF line ends everywhere (a bare LF is refused: §2.2 only
/// allows it in the head), CRLF after each chunk's data, and trailer lines
/// that are well-formed fields.
#[derive(Debug, Default)]
pub(crate) struct ChunkedDecoder {
    state: ChunkState,
    /// Data bytes left in the current chunk.
    remaining: u64,
    /// Offset, in the last input fed, of the byte refused (for `show errors`).
    err_at: usize,
    /// Data bytes announced by the chunk sizes so far (for `show errors`).
    body_len: u64,
    /// Offset, in the last input fed, where the trailer section starts
    /// (just after the last chunk's size line), if it started there.
    trailers_at: Option<usize>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// First digit of a size.
    #[default]
    SizeStart,
    /// More digits.
    Size,
    /// Whitespace after the size, before `;` or CR.
    SizeWs,
    /// After `;`: extensions until CR.
    Ext,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    /// Start of a trailer line (or the final CRLF).
    TrailerStart,
    /// Trailer field name, until `:`.
    TrailerName,
    TrailerValue,
    TrailerLf,
    FinalLf,
    Done,
}

impl ChunkedDecoder {
    pub(crate) fn is_done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Data bytes the decoder expects next (0 outside a chunk's data):
    /// what a consumer that wants the payload takes as it is.
    pub(crate) fn data_left(&self) -> u64 {
        if self.state == ChunkState::Data {
            self.remaining
        } else {
            0
        }
    }

    /// Consumes from `input`; returns how many bytes belong to the body.
    /// Stops at the end of the body (the rest belongs to the next message).
    pub(crate) fn feed(&mut self, input: &[u8]) -> Result<usize, H1Error> {
        let mut i = 0;
        self.trailers_at = None;
        self.run(input, &mut i, false)
            .inspect_err(|_| self.err_at = i)
    }

    /// Like [`feed`](Self::feed) from offset `from` of `input`, but stops
    /// where chunk data starts ([`data_left`](Self::data_left) > 0), so
    /// that a re-encoder can take the data and drop the framing it
    /// consumed. Returns the offset reached; offsets (also the error's and
    /// [`trailers_at`](Self::trailers_at)) are in `input`.
    pub(crate) fn feed_framing(&mut self, input: &[u8], from: usize) -> Result<usize, H1Error> {
        let mut i = from;
        self.trailers_at = None;
        self.run(input, &mut i, true)
            .inspect_err(|_| self.err_at = i)
    }

    /// Where, in the input of the last feed, the trailer section (the
    /// trailer fields and the final CRLF) began, if it began there.
    pub(crate) fn trailers_at(&self) -> Option<usize> {
        self.trailers_at
    }

    /// The data bytes of the chunks decoded so far.
    pub(crate) fn body_len(&self) -> u64 {
        self.body_len
    }

    /// In the trailer section (after the last chunk's size line).
    pub(crate) fn in_trailers(&self) -> bool {
        use ChunkState::*;
        matches!(
            self.state,
            TrailerStart | TrailerName | TrailerValue | TrailerLf | FinalLf
        )
    }

    /// Where the last `feed` failed, as `show errors` reports it: the
    /// offset in that input and HAProxy's parser state.
    pub(crate) fn error_spot(&self) -> crate::wire::error_spot::ErrorSpot {
        use crate::wire::error_spot::state;
        let st = match self.state {
            ChunkState::Data => state::DATA,
            ChunkState::DataCr | ChunkState::DataLf => state::CHUNK_CRLF,
            ChunkState::TrailerStart
            | ChunkState::TrailerName
            | ChunkState::TrailerValue
            | ChunkState::TrailerLf
            | ChunkState::FinalLf => state::TRAILERS,
            _ => state::CHUNK_SIZE,
        };
        let mut spot = crate::wire::error_spot::ErrorSpot::at(self.err_at, st);
        spot.flags = crate::wire::error_spot::flags::CHUNKED_BODY;
        spot.in_body = true;
        spot.chunk_len = self.remaining;
        spot.body_len = self.body_len;
        spot
    }

    fn run(&mut self, input: &[u8], i: &mut usize, stop_at_data: bool) -> Result<usize, H1Error> {
        use ChunkState::*;
        while *i < input.len() {
            if stop_at_data && self.state == Data {
                return Ok(*i);
            }
            let b = input[*i];
            self.state = match self.state {
                SizeStart => {
                    let d = hex(b).ok_or(H1Error::BadChunk)?;
                    self.remaining = d as u64;
                    Size
                }
                Size => match hex(b) {
                    Some(d) => {
                        if self.remaining >> 60 != 0 {
                            return Err(H1Error::BadChunk);
                        }
                        self.remaining = self.remaining << 4 | d as u64;
                        Size
                    }
                    None => self.after_size(b)?,
                },
                SizeWs => self.after_size(b)?,
                Ext => match b {
                    b'\r' => SizeLf,
                    _ if is_value_byte(b) => Ext,
                    _ => return Err(H1Error::BadChunk),
                },
                SizeLf => {
                    if b != b'\n' {
                        return Err(H1Error::BadChunk);
                    }
                    if self.remaining == 0 {
                        self.trailers_at = Some(*i + 1);
                        TrailerStart
                    } else {
                        self.body_len = self.body_len.saturating_add(self.remaining);
                        Data
                    }
                }
                Data => {
                    let take = (self.remaining).min((input.len() - *i) as u64) as usize;
                    self.remaining -= take as u64;
                    *i += take;
                    if self.remaining == 0 {
                        self.state = DataCr;
                    }
                    continue;
                }
                DataCr if b == b'\r' => DataLf,
                DataLf if b == b'\n' => SizeStart,
                TrailerStart if b == b'\r' => FinalLf,
                TrailerStart | TrailerName if is_tchar(b) => TrailerName,
                TrailerName if b == b':' => TrailerValue,
                TrailerValue if b == b'\r' => TrailerLf,
                TrailerValue if is_value_byte(b) => TrailerValue,
                TrailerLf if b == b'\n' => TrailerStart,
                FinalLf if b == b'\n' => {
                    self.state = Done;
                    return Ok(*i + 1);
                }
                Done => return Ok(*i),
                _ => return Err(H1Error::BadChunk),
            };
            *i += 1;
        }
        Ok(*i)
    }

    /// The byte after a chunk size's digits.
    fn after_size(&self, b: u8) -> Result<ChunkState, H1Error> {
        match b {
            b' ' | b'\t' => Ok(ChunkState::SizeWs),
            b';' => Ok(ChunkState::Ext),
            b'\r' => Ok(ChunkState::SizeLf),
            _ => Err(H1Error::BadChunk),
        }
    }
}

/// Checks the framing of the chunked body bytes that arrived with the head,
/// before anything is sent to a server: a body that is bad from its first
/// bytes never reaches one.
pub(crate) fn check_chunked_prefix(buf: &[u8]) -> Result<(), crate::wire::error_spot::ErrorSpot> {
    let mut dec = ChunkedDecoder::default();
    dec.feed(buf).map(|_| ()).map_err(|_| dec.error_spot())
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Fuzzing entry (`fuzz/fuzz_targets/h1.rs`, replayed by
/// `tests/h1_fuzz_corpus.rs`): any bytes, read as a request and as a
/// response the way the data plane reads them. A head is parsed, its body
/// framed, a refusal located as `show errors` does, an accepted head
/// written out as it would be forwarded, and a chunked body decoded from
/// the bytes after the head. Properties: nothing panics, a forwarded head
/// parses again with the same framing, and the decoder never claims more
/// bytes than it was given.
pub fn exercise(data: &[u8]) {
    let rest_of = |end: usize| &data[end..];
    let Some(end) = head_end(data) else {
        let mut d = ChunkedDecoder::default();
        if d.feed(data).is_err() {
            let _ = d.error_spot();
        }
        return;
    };
    let raw = Bytes::copy_from_slice(&data[..end]);
    for response in [false, true] {
        let parse = |raw: Bytes| {
            if response {
                Head::parse_response(raw)
            } else {
                Head::parse_request(raw)
            }
        };
        let head = match parse(raw.clone()) {
            Ok(h) => h,
            Err(e) => {
                let _ = crate::wire::error_spot::locate(&raw, response, &e);
                continue;
            }
        };
        let body = if response {
            head.response_body(b"GET")
        } else {
            head.request_body()
        };
        let body = match body {
            Ok(b) => b,
            Err(e) => {
                let _ = crate::wire::error_spot::locate(&raw, response, &e);
                continue;
            }
        };
        let _ = (head.wants_keep_alive(), head.requests_upgrade());
        let framing = if response {
            head.response_framing(body)
        } else {
            FramingLine::of(body)
        };
        let mut out = BytesMut::new();
        if !head.write_forwarded(&mut out, &framing) {
            out.put_slice(framing.bytes());
        }
        out.put_slice(b"\r\n");
        let again = parse(out.freeze());
        let reframed = again.as_ref().map(|h| {
            if response {
                h.response_body(b"GET")
            } else {
                h.request_body()
            }
        });
        assert!(
            matches!(reframed, Ok(Ok(b)) if b == body),
            "forwarded head does not parse back with {body:?}: {again:?}"
        );
        if body == BodyKind::Chunked {
            let rest = rest_of(end);
            let mut d = ChunkedDecoder::default();
            match d.feed(rest) {
                Ok(n) => assert!(n <= rest.len()),
                Err(_) => {
                    let _ = d.error_spot();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
