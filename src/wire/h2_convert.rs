//! Translation between an HTTP/2 stream's messages and their HTTP/1.1
//! form (RFC 9113 §8.2.2, §8.3): pseudo-headers to a request line and
//! `Host`, cookie crumbs merged, connection-specific fields dropped.

use bytes::{BufMut, BytesMut};
use http::header::{self, HeaderName, HeaderValue};

use crate::wire::h1::{ChunkedDecoder, H1Error, Head};

/// A request in its HTTP/1.1 form.
pub(crate) struct Http1Request {
    /// Request line and headers, up to the blank line.
    pub(crate) head: BytesMut,
    /// The body goes chunked: the client sent one without a length.
    pub(crate) chunked: bool,
    /// HAProxy answers it with a 400 (see [`Refusal`]): the pipeline
    /// refuses it as soon as its head is read.
    pub(crate) bad: bool,
}

/// Why a stream's request cannot be forwarded (the stream is reset with
/// PROTOCOL_ERROR, as RFC 9113 §8.1.1 says of a malformed request).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Malformed {
    #[error("no :path")]
    NoPath,
    #[error("a :path or :authority that cannot go into a request line")]
    BadTarget,
    #[error("a connection-specific header field")]
    ConnectionHeader,
    #[error("a field HAProxy resets the stream for")]
    Field,
}

/// What becomes of a field the `http` types refused (`h2::ext::Refused`),
/// as HAProxy 2.6 treats the same bytes (tests/h2_haproxy.rs tries each
/// byte in each place against it).
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    /// Forwarded as it came, as HAProxy forwards it: a value with a
    /// control byte (the server judges it), or a name whose only upper
    /// case is `Z`, which HAProxy's upper-case check leaves out
    /// (lower-cased here, as sluice sends every name).
    Forward(Vec<u8>),
    /// A 400 from the stream.
    BadRequest,
}

/// A refused field that is no URI part.
fn refusal(name: &[u8], value: &[u8]) -> Result<Refusal, Malformed> {
    // NUL, CR and LF reset the stream wherever they are.
    if name
        .iter()
        .chain(value)
        .any(|&b| matches!(b, 0 | b'\r' | b'\n'))
    {
        return Err(Malformed::Field);
    }
    match name {
        // A method that is no token: the request line's parser says 400.
        b":method" if !value.is_empty() => Ok(Refusal::BadRequest),
        [b':', ..] => Err(Malformed::Field),
        _ => {
            let lower = name.to_ascii_lowercase();
            let token = !lower.is_empty() && lower.iter().all(|&b| crate::wire::h1::is_tchar(b));
            let upper_only_z = name.iter().all(|&b| !b.is_ascii_uppercase() || b == b'Z');
            if !token || !upper_only_z {
                Err(Malformed::Field)
            } else {
                Ok(Refusal::Forward(lower))
            }
        }
    }
}

/// The URI parts of a request, raw: from its URI, or as the client sent
/// them when `http` refused one (`h2::ext::Refused`).
struct Target<'a> {
    scheme: Option<&'a [u8]>,
    authority: Option<&'a [u8]>,
    path: Option<&'a [u8]>,
    /// A part HAProxy answers with a 400.
    bad: bool,
}

impl<'a> Target<'a> {
    fn of(
        uri: &'a http::Uri,
        refused: &'a [(bytes::Bytes, bytes::Bytes)],
    ) -> Result<Self, Malformed> {
        let raw = |part: &[u8]| {
            refused
                .iter()
                .find(|(n, _)| n[..] == *part)
                .map(|(_, v)| &v[..])
        };
        let uri_refused = [&b":scheme"[..], b":authority", b":path"]
            .iter()
            .any(|n| raw(n).is_some());
        if !uri_refused {
            return Ok(Target {
                scheme: uri.scheme_str().map(str::as_bytes),
                authority: uri.authority().map(|a| a.as_str().as_bytes()),
                path: uri.path_and_query().map(|p| p.as_str().as_bytes()),
                bad: false,
            });
        }
        let t = Target {
            scheme: raw(b":scheme"),
            authority: raw(b":authority"),
            path: raw(b":path"),
            bad: false,
        };
        let forbidden = |v: &[u8]| v.iter().any(|&b| matches!(b, 0 | b'\r' | b'\n'));
        if [t.scheme, t.authority, t.path].into_iter().flatten().any(forbidden)
            // A control, a space or a fragment in `:path` resets the stream.
            || t.path.is_some_and(|p| p.iter().any(|&b| b <= b' ' || b == b'#'))
        {
            return Err(Malformed::Field);
        }
        // A bad scheme or a control in the authority: HAProxy's 400. Any
        // other byte in `:path` (`<`, DEL, above 127) is forwarded.
        let bad = t.scheme.is_some_and(|s| !scheme_ok(s))
            || t.authority
                .is_some_and(|a| a.iter().any(|&b| b <= b' ' || b == 0x7f));
        Ok(Target { bad, ..t })
    }
}

/// A URI scheme (RFC 3986 §3.1: `ALPHA *( ALPHA / DIGIT / "+" / "-" /
/// "." )`), of any length (`http` takes 64 bytes at most; HAProxy
/// forwards a longer one).
fn scheme_ok(s: &[u8]) -> bool {
    s.first().is_some_and(u8::is_ascii_alphabetic)
        && s.iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// Fields that make no sense in HTTP/2 (RFC 9113 §8.2.2); the h2 crate
/// refuses them already in requests, and they are never sent in responses.
fn connection_specific(name: &HeaderName) -> bool {
    name == header::CONNECTION
        || name == header::TRANSFER_ENCODING
        || name == header::UPGRADE
        || name == "keep-alive"
        || name == "proxy-connection"
}

/// The HTTP/1.1 request of an HTTP/2 stream: `:method :path HTTP/1.1`,
/// `host` from `:authority` (which wins over a `host` field, HAProxy
/// 2.6 drops the latter), the fields in their order, the cookie crumbs
/// joined with `; ` into one `cookie` field, and the body's framing: its
/// `content-length` when the client gave one, else chunked. The head is
/// written into `head` (empty; a spare read buffer, which the head's
/// `Bytes` then share without an allocation of their own).
pub(crate) fn request(
    parts: &http::request::Parts,
    has_body: bool,
    mut head: BytesMut,
) -> Result<Http1Request, Malformed> {
    let none = Vec::new();
    let refused = parts
        .extensions
        .get::<h2::ext::Refused>()
        .map_or(&none, |r| &r.0);
    let uri = Target::of(&parts.uri, refused)?;
    let mut bad = uri.bad;
    let mut forwarded: Vec<(Vec<u8>, &[u8])> = Vec::new();
    for (name, value) in refused {
        if name.first() == Some(&b':') && matches!(&name[..], b":scheme" | b":authority" | b":path")
        {
            continue;
        }
        match refusal(name, value)? {
            Refusal::BadRequest => bad = true,
            Refusal::Forward(name) => forwarded.push((name, value)),
        }
    }
    let method: &[u8] = match refused.iter().find(|(n, _)| n[..] == *b":method") {
        Some((_, m)) => m,
        None => parts.method.as_str().as_bytes(),
    };
    // An extended CONNECT (RFC 8441) is an HTTP/1 upgrade: `GET` with
    // `upgrade: <:protocol>`, as HAProxy 2.6 forwards it.
    let protocol = parts
        .extensions
        .get::<h2::ext::Protocol>()
        .filter(|_| parts.method == http::Method::CONNECT)
        .map(|p| p.as_str());
    let connect = parts.method == http::Method::CONNECT && protocol.is_none();
    let method: &[u8] = if protocol.is_some() { b"GET" } else { method };
    let authority = uri.authority;
    let target = if connect {
        authority.unwrap_or(b"")
    } else {
        uri.path.ok_or(Malformed::NoPath)?
    };
    // An origin-form `:path` starts with `/` (or is `*`): HAProxy resets
    // the stream otherwise.
    if target.is_empty() || (!connect && !matches!(target.first(), Some(b'/' | b'*'))) {
        return Err(Malformed::BadTarget);
    }
    // HAProxy 2.6 sends an `http` or `https` request (in any case) in
    // origin form and any other scheme's in absolute form, so the server
    // learns the scheme (`ftp://h/p`). A `:scheme` that is no URI scheme
    // gets a 400 from HAProxy (not a reset): the h2 crate resets the
    // stream itself for bytes no scheme may hold, but lets an empty scheme
    // or one starting with a digit through, and in absolute form the
    // HTTP/1 parser refuses it as any bad target: a 400, counted in
    // `ereq`, logged and captured for `show errors`, as HAProxy counts it.
    let absolute = match (uri.scheme, authority) {
        (Some(s), Some(a))
            if !connect
                && !s.eq_ignore_ascii_case(b"http")
                && !s.eq_ignore_ascii_case(b"https") =>
        {
            Some([s, b"://", a, target].concat())
        }
        _ => None,
    };
    let target = absolute.as_deref().unwrap_or(target);
    head.put_slice(method);
    head.put_u8(b' ');
    head.put_slice(target);
    head.put_slice(b" HTTP/1.1\r\n");
    if let Some(a) = authority {
        head.put_slice(b"host: ");
        head.put_slice(a);
        head.put_slice(b"\r\n");
    }
    let mut cookie: Option<BytesMut> = None;
    let mut has_length = false;
    for (name, value) in &parts.headers {
        if connection_specific(name) {
            return Err(Malformed::ConnectionHeader);
        }
        // `http` takes a few bytes in a name that are no token (`"`):
        // HAProxy resets the stream.
        if !name.as_str().bytes().all(crate::wire::h1::is_tchar) {
            return Err(Malformed::Field);
        }
        if name == header::HOST && authority.is_some() {
            continue;
        }
        if name == header::TE {
            // Only `te: trailers` gets here (the h2 crate refuses other
            // values); it is hop-by-hop in HTTP/1.1.
            continue;
        }
        if name == header::COOKIE {
            let c = cookie.get_or_insert_with(BytesMut::new);
            if !c.is_empty() {
                c.put_slice(b"; ");
            }
            c.put_slice(value.as_bytes());
            continue;
        }
        if name == header::CONTENT_LENGTH {
            has_length = true;
        }
        head.put_slice(name.as_str().as_bytes());
        head.put_slice(b": ");
        head.put_slice(value.as_bytes());
        head.put_slice(b"\r\n");
    }
    for (name, value) in forwarded {
        head.put_slice(&name);
        head.put_slice(b": ");
        head.put_slice(value);
        head.put_slice(b"\r\n");
    }
    if let Some(c) = cookie {
        head.put_slice(b"cookie: ");
        head.put_slice(&c);
        head.put_slice(b"\r\n");
    }
    // A tunnel's bytes follow the switch unframed.
    let chunked = has_body && !has_length && protocol.is_none();
    if chunked {
        head.put_slice(b"transfer-encoding: chunked\r\n");
    }
    if let Some(p) = protocol {
        head.put_slice(b"upgrade: ");
        head.put_slice(p.as_bytes());
        head.put_slice(b"\r\nconnection: upgrade\r\n");
        // HTTP/2 has no key (RFC 8441 §5), the server's HTTP/1 WebSocket
        // wants one: HAProxy makes one up, and checks the answer's
        // `Sec-WebSocket-Accept` against it as for any HTTP/1 client.
        if p.eq_ignore_ascii_case("websocket") && !parts.headers.contains_key("sec-websocket-key") {
            head.put_slice(b"sec-websocket-key: ");
            head.put_slice(websocket_key().as_bytes());
            head.put_slice(b"\r\n");
        }
    }
    head.put_slice(b"\r\n");
    Ok(Http1Request { head, chunked, bad })
}

/// What the log shows before an HTTP/2 request's origin-form target, so
/// that it reads as an absolute URI: `<scheme>://<authority>`, or nothing
/// when the target went in absolute form (a scheme other than `http` and
/// `https`) or the request has no scheme or authority. Made only for a
/// request that is logged.
pub(crate) fn log_origin(parts: &http::request::Parts) -> Box<str> {
    let none = Vec::new();
    let refused = parts
        .extensions
        .get::<h2::ext::Refused>()
        .map_or(&none, |r| &r.0);
    let Ok(uri) = Target::of(&parts.uri, refused) else {
        return Box::default();
    };
    let connect = parts.method == http::Method::CONNECT
        && parts.extensions.get::<h2::ext::Protocol>().is_none();
    match (uri.scheme, uri.authority) {
        (Some(s), Some(a))
            if connect || s.eq_ignore_ascii_case(b"http") || s.eq_ignore_ascii_case(b"https") =>
        {
            format!(
                "{}://{}",
                String::from_utf8_lossy(s),
                String::from_utf8_lossy(a)
            )
            .into()
        }
        _ => Box::default(),
    }
}

/// A WebSocket key: 16 random bytes in base64 (RFC 6455 §4.1).
fn websocket_key() -> String {
    use base64::Engine;
    use ring::rand::SecureRandom;
    let mut key = [0u8; 16];
    // The key only proves the server speaks WebSocket: should the system's
    // generator fail, zeros still make a valid one.
    let _ = ring::rand::SystemRandom::new().fill(&mut key);
    base64::engine::general_purpose::STANDARD.encode(key)
}

/// Copies an HTTP/1 message's fields into an HTTP/2 one, leaving out the
/// connection-specific ones, those its `Connection` header names, those
/// `skip` refuses, and any HTTP/2 cannot carry (a name that is not a
/// token, a value with forbidden bytes).
fn copy_fields(
    head: &Head,
    headers: &mut http::HeaderMap,
    skip: impl Fn(&HeaderName, &[u8]) -> bool,
) {
    let named: Vec<&[u8]> = head
        .values("connection")
        .flat_map(|v| v.split(|&b| b == b','))
        .map(crate::wire::h1::trim)
        .filter(|t| !t.is_empty())
        .collect();
    for (name, value) in head.headers() {
        let Ok(name) = HeaderName::from_bytes(name) else {
            continue;
        };
        if connection_specific(&name)
            || skip(&name, value)
            || named
                .iter()
                .any(|n| n.eq_ignore_ascii_case(name.as_str().as_bytes()))
        {
            continue;
        }
        let Ok(value) = HeaderValue::from_bytes(value) else {
            continue;
        };
        headers.append(name, value);
    }
}

/// An HTTP/2 response's head as its stream sends it: the status, and the
/// fields encoded as HAProxy 2.6 encodes them (`h2::ext::encode_field`:
/// literals of the static table's names, no Huffman coding, nothing
/// kept in the dynamic table), straight from the HTTP/1 head: no
/// `http::HeaderMap` is made, and the fields keep the server's order.
pub(crate) struct ResponseHead {
    pub(crate) status: http::StatusCode,
    pub(crate) block: BytesMut,
}

impl ResponseHead {
    /// A field after the others (one HTTP/2 cannot carry is left out).
    pub(crate) fn append(&mut self, name: &[u8], value: &[u8]) {
        put_field(&mut self.block, name, value);
    }
}

/// Each byte of a field name in lower case; 0 for a byte that is no
/// token character (RFC 9110), which no name may hold.
const NAME_BYTES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        if b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            )
        {
            t[i] = b.to_ascii_lowercase();
        }
        i += 1;
    }
    t
};

/// Appends a field to a header block, its name in lower case; one HTTP/2
/// cannot carry (a name that is not a token, a value with a control
/// byte) is left out.
fn put_field(block: &mut BytesMut, name: &[u8], value: &[u8]) {
    // (Every byte looked at, no early exit: the loop vectorises.)
    let value_ok = value.iter().fold(true, |ok, &b| {
        ok & (((b >= 0x20) & (b != 0x7f)) | (b == b'\t'))
    });
    if name.is_empty() || !value_ok {
        return;
    }
    let mut short = [0u8; 64];
    let mut long = Vec::new();
    let low = match short.get_mut(..name.len()) {
        Some(low) => low,
        None => {
            long.resize(name.len(), 0);
            &mut long[..]
        }
    };
    let mut token = true;
    for (d, &s) in low.iter_mut().zip(name) {
        *d = NAME_BYTES[usize::from(s)];
        token &= *d != 0;
    }
    if !token {
        return;
    }
    h2::ext::encode_field(low, value, block);
}

/// The fields an HTTP/1 message's `Connection` fields name (but `close`
/// and `keep-alive`): hop-by-hop too.
fn connection_named(head: &Head, skip: impl Fn(usize, &[u8]) -> bool) -> Vec<&[u8]> {
    let mut named: Vec<&[u8]> = Vec::new();
    // (`upgrade` names a hop-by-hop field, dropped anyway.)
    if !head.connection_names_fields() {
        return named;
    }
    for (i, (name, value)) in head.headers().enumerate() {
        if name.eq_ignore_ascii_case(b"connection") && !skip(i, name) {
            named.extend(
                value
                    .split(|&b| b == b',')
                    .map(crate::wire::h1::trim)
                    .filter(|t| {
                        !t.is_empty()
                            && !t.eq_ignore_ascii_case(b"close")
                            && !t.eq_ignore_ascii_case(b"keep-alive")
                    }),
            );
        }
    }
    named
}

/// The HTTP/2 response of an HTTP/1 one sluice made (an error page, a
/// reply): its status and fields, without the connection-specific ones,
/// `TE`, `Trailer` and those `Connection` names.
pub(crate) fn response(resp: &Head) -> Option<ResponseHead> {
    let status = http::StatusCode::from_u16(resp.status).ok()?;
    let named = connection_named(resp, |_, _| false);
    let mut block = BytesMut::with_capacity(resp.raw.len());
    for (name, value) in resp.headers() {
        // The hop-by-hop fields but `Expect`, and the length where sluice
        // wrote it.
        let kept =
            name.eq_ignore_ascii_case(b"expect") || name.eq_ignore_ascii_case(b"content-length");
        if (hop_by_hop(name) && !kept) || named.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            continue;
        }
        put_field(&mut block, name, value);
    }
    Some(ResponseHead { status, block })
}

/// The HTTP/2 response of a server's HTTP/1 one as the pipeline forwards
/// it, encoded from its parsed head without writing it out again: the
/// head `Head::write_forwarded_with` writes for an HTTP/1 client (the
/// fields `drop` names left out, values `replaced` by position, then
/// `added`), with its `content-length` as that head frames `body`, where
/// the server's first was.
pub(crate) fn forwarded_response(
    resp: &Head,
    body: crate::wire::h1::BodyKind,
    drop: impl Fn(usize, &[u8]) -> bool,
    replaced: &[(usize, Vec<u8>)],
    added: &[(String, Vec<u8>)],
) -> Option<ResponseHead> {
    let status = http::StatusCode::from_u16(resp.status).ok()?;
    let mut length = resp.response_length(body);
    let named = connection_named(resp, &drop);
    let extra: usize = added.iter().map(|(n, v)| n.len() + v.len() + 2).sum();
    let mut block = BytesMut::with_capacity(resp.raw.len() + extra);
    for (i, (name, value)) in resp.headers().enumerate() {
        // Framing: the length goes where the server's first was.
        if name.eq_ignore_ascii_case(b"content-length") {
            if let Some(n) = length.take() {
                // The server's own digits when they say it (nearly always).
                let theirs = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok());
                if theirs == Some(n) {
                    put_field(&mut block, b"content-length", value);
                } else {
                    put_field(&mut block, b"content-length", n.to_string().as_bytes());
                }
            }
            continue;
        }
        if not_in_response(name, value)
            || drop(i, name)
            || named.iter().any(|n| n.eq_ignore_ascii_case(name))
        {
            continue;
        }
        let value = replaced
            .iter()
            .find(|(j, _)| *j == i)
            .map_or(value, |(_, v)| &v[..]);
        put_field(&mut block, name, value);
    }
    if let Some(n) = length {
        put_field(&mut block, b"content-length", n.to_string().as_bytes());
    }
    for (name, value) in added {
        if not_in_response(name.as_bytes(), value)
            || named
                .iter()
                .any(|n| n.eq_ignore_ascii_case(name.as_bytes()))
        {
            continue;
        }
        put_field(&mut block, name.as_bytes(), value);
    }
    Some(ResponseHead { status, block })
}

/// The fields of an HTTP/1 message that never go into an HTTP/2 one: the
/// framing, the connection-specific ones (RFC 9113 §8.2.2) and `Expect`,
/// which sluice answers itself.
fn hop_by_hop(name: &[u8]) -> bool {
    let is = |k: &[u8]| name.eq_ignore_ascii_case(k);
    match name.len() {
        2 => is(b"te"),
        6 => is(b"expect"),
        7 => is(b"upgrade") || is(b"trailer"),
        10 => is(b"connection") || is(b"keep-alive"),
        14 => is(b"content-length"),
        16 => is(b"proxy-connection"),
        17 => is(b"transfer-encoding"),
        _ => false,
    }
}

/// The fields of an HTTP/1 response that never go into an HTTP/2 one:
/// the framing and the connection-specific ones. HAProxy 2.6 forwards
/// the rest, `Expect` and `Trailer` included, and `TE` whatever its value;
/// sluice forwards `TE` only as `trailers`, the one value HTTP/2 allows
/// (RFC 9113 §8.2.2: a client may take any other for a malformed
/// response).
fn not_in_response(name: &[u8], value: &[u8]) -> bool {
    let is = |k: &[u8]| name.eq_ignore_ascii_case(k);
    match name.len() {
        2 => is(b"te") && value != b"trailers",
        7 => is(b"upgrade"),
        10 => is(b"connection") || is(b"keep-alive"),
        14 => is(b"content-length"),
        16 => is(b"proxy-connection"),
        17 => is(b"transfer-encoding"),
        _ => false,
    }
}

/// Header fields as HTTP/1 lines (`name: value` and CRLF each): an
/// HTTP/2 message's fields, or its trailers in a last chunk.
pub(crate) fn put_fields(out: &mut BytesMut, headers: &http::HeaderMap) {
    for (n, v) in headers {
        out.put_slice(n.as_str().as_bytes());
        out.put_slice(b": ");
        out.put_slice(v.as_bytes());
        out.put_slice(b"\r\n");
    }
}

/// The trailer fields of a chunked body's end (`0`, the fields, the
/// blank line), for HTTP/2 trailers: those HTTP/2 cannot carry, or that
/// make no sense in trailers, left out.
pub(crate) fn trailer_fields(tail: &[u8]) -> http::HeaderMap {
    let mut out = http::HeaderMap::new();
    let fields = tail.splitn(2, |&b| b == b'\n').nth(1).unwrap_or_default();
    for line in fields.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        let name = &line[..colon];
        if hop_by_hop(name) {
            continue;
        }
        let value = crate::wire::h1::trim(&line[colon + 1..]);
        if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name), HeaderValue::from_bytes(value)) {
            out.append(n, v);
        }
    }
    out
}

/// The HTTP/2 request of an HTTP/1.1 one, for a `proto h2` server:
/// `:authority` from `Host` (else the server's address), `:scheme` from
/// the server's TLS, the fields without the connection-specific ones and
/// those `Connection` names. None when it cannot be expressed.
pub(crate) fn h2_request(
    head: &Head,
    server: std::net::SocketAddr,
    https: bool,
) -> Option<http::Request<()>> {
    let method = http::Method::from_bytes(head.method()).ok()?;
    let target = std::str::from_utf8(head.target()).ok()?;
    let uri: http::Uri = if target.starts_with('/') {
        let authority = match head.values("host").next() {
            Some(h) => std::str::from_utf8(crate::wire::h1::trim(h))
                .ok()?
                .to_string(),
            None => server.to_string(),
        };
        let scheme = if https { "https" } else { "http" };
        format!("{scheme}://{authority}{target}").parse().ok()?
    } else {
        // Absolute form (or `*`): as it is.
        target.parse().ok()?
    };
    let mut req = http::Request::new(());
    *req.method_mut() = method;
    *req.uri_mut() = uri;
    copy_fields(head, req.headers_mut(), |name, value| {
        name == header::HOST
            || name == header::TRAILER
            || (name == header::TE && !value.eq_ignore_ascii_case(b"trailers"))
    });
    Some(req)
}

/// Takes the data out of a chunked body (the pipeline checked its
/// framing already; a fault here still only ends the stream), and keeps
/// its trailer fields.
#[derive(Default)]
pub(crate) struct Dechunker {
    dec: ChunkedDecoder,
    /// The last chunk and its trailer section as received (`0` and CRLF
    /// standing for the last-chunk line).
    tail: BytesMut,
}

impl Dechunker {
    pub(crate) fn is_done(&self) -> bool {
        self.dec.is_done()
    }

    /// The trailer fields, once the body is done (none for most).
    pub(crate) fn trailers(&self) -> http::HeaderMap {
        trailer_fields(&self.tail)
    }

    /// Consumes from the front of `input`; returns the data bytes taken
    /// (possibly none: framing only) or the framing error.
    pub(crate) fn next(&mut self, input: &mut BytesMut) -> Result<Option<bytes::Bytes>, H1Error> {
        while !input.is_empty() && !self.dec.is_done() {
            let data = self.dec.data_left();
            if data > 0 {
                let n = (input.len() as u64).min(data) as usize;
                let chunk = input.split_to(n);
                self.dec.feed(&chunk)?;
                return Ok(Some(chunk.freeze()));
            }
            // Framing: one byte at a time, so that the decoder stops
            // where the data starts.
            let was_in_trailers = self.dec.in_trailers();
            self.dec.feed(&input[..1])?;
            if was_in_trailers {
                self.tail.put_u8(input[0]);
            } else if self.dec.in_trailers() {
                self.tail.put_slice(b"0\r\n");
            }
            bytes::Buf::advance(input, 1);
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(build: http::request::Builder) -> http::request::Parts {
        build
            .body(())
            .map(|r| r.into_parts().0)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn request_line_host_and_cookies() {
        let parts = req(http::Request::builder()
            .method("GET")
            .uri("https://example.test/p?q=1")
            .header("host", "other.test")
            .header("cookie", "a=1")
            .header("x-up", "Hi")
            .header("cookie", "b=2"));
        let r = request(&parts, false, BytesMut::new()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            &r.head[..],
            b"GET /p?q=1 HTTP/1.1\r\nhost: example.test\r\nx-up: Hi\r\ncookie: a=1; b=2\r\n\r\n"
        );
        assert_eq!(&*log_origin(&parts), "https://example.test");
        assert!(!r.chunked);
    }

    #[test]
    fn other_schemes_go_in_absolute_form() {
        for (uri, target, origin) in [
            ("ftp://h/x?q=1", "ftp://h/x?q=1", ""),
            ("foo+bar://h/", "foo+bar://h/", ""),
            // (`http::Uri` lower-cases these two when it parses a whole URI.)
            ("HTTPS://h/x", "/x", "https://h"),
            ("Http://h/x", "/x", "http://h"),
        ] {
            let parts = req(http::Request::builder().method("GET").uri(uri));
            let r = request(&parts, false, BytesMut::new()).unwrap_or_else(|e| panic!("{e}"));
            let line = format!("GET {target} HTTP/1.1\r\n");
            assert!(r.head.starts_with(line.as_bytes()), "{uri}: {:?}", r.head);
            assert_eq!(&*log_origin(&parts), origin, "{uri}");
        }
    }

    #[test]
    fn body_without_length_goes_chunked() {
        let parts = req(http::Request::builder().method("POST").uri("http://h/u"));
        let r = request(&parts, true, BytesMut::new()).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.chunked);
        assert!(r.head.ends_with(b"transfer-encoding: chunked\r\n\r\n"));
        let parts = req(http::Request::builder()
            .method("POST")
            .uri("http://h/u")
            .header("content-length", "5"));
        let r = request(&parts, true, BytesMut::new()).unwrap_or_else(|e| panic!("{e}"));
        assert!(!r.chunked);
        assert!(r.head.ends_with(b"content-length: 5\r\n\r\n"));
    }

    #[test]
    fn connection_headers_are_refused() {
        let parts = req(http::Request::builder()
            .uri("http://h/")
            .header("connection", "close"));
        assert_eq!(
            request(&parts, false, BytesMut::new()).err(),
            Some(Malformed::ConnectionHeader)
        );
    }

    /// The fields of a header block as `put_field` encodes them (literal
    /// of a static name with incremental indexing, or of a new name
    /// without indexing; lengths under 127), decoded on their own.
    fn fields(block: &[u8]) -> Vec<(String, Vec<u8>)> {
        const STATIC: [&str; 47] = [
            "accept-charset",
            "accept-encoding",
            "accept-language",
            "accept-ranges",
            "accept",
            "access-control-allow-origin",
            "age",
            "allow",
            "authorization",
            "cache-control",
            "content-disposition",
            "content-encoding",
            "content-language",
            "content-length",
            "content-location",
            "content-range",
            "content-type",
            "cookie",
            "date",
            "etag",
            "expect",
            "expires",
            "from",
            "host",
            "if-match",
            "if-modified-since",
            "if-none-match",
            "if-range",
            "if-unmodified-since",
            "last-modified",
            "link",
            "location",
            "max-forwards",
            "proxy-authenticate",
            "proxy-authorization",
            "range",
            "referer",
            "refresh",
            "retry-after",
            "server",
            "set-cookie",
            "strict-transport-security",
            "transfer-encoding",
            "user-agent",
            "vary",
            "via",
            "www-authenticate",
        ];
        let mut out = Vec::new();
        let mut at = 0;
        let string = |at: &mut usize| {
            let n = usize::from(block[*at]);
            assert!(n < 0x7f, "a Huffman-coded or long string at {at}");
            let v = block[*at + 1..*at + 1 + n].to_vec();
            *at += 1 + n;
            v
        };
        while at < block.len() {
            let first = block[at];
            at += 1;
            let name = match first {
                0x00 => String::from_utf8(string(&mut at)).unwrap_or_default(),
                b if b & 0xc0 == 0x40 && (15..=61).contains(&(b & 0x3f)) => {
                    STATIC[usize::from(b & 0x3f) - 15].to_string()
                }
                b => panic!("representation {b:#x} at {}", at - 1),
            };
            out.push((name, string(&mut at)));
        }
        out
    }

    fn pairs(fields: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
        fields
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_vec()))
            .collect()
    }

    #[test]
    fn response_drops_connection_fields() {
        let raw = bytes::Bytes::from_static(
            b"HTTP/1.1 200 OK\r\nConnection: keep-alive, x-hop\r\nKeep-Alive: timeout=5\r\nX-Hop: 1\r\nContent-Length: 2\r\nTE: trailers\r\nX-A: b\r\n\r\n",
        );
        let head = Head::parse_response(raw).unwrap_or_else(|e| panic!("{e}"));
        let resp = response(&head).unwrap_or_else(|| panic!("no response"));
        assert_eq!(
            fields(&resp.block),
            pairs(&[("content-length", b"2"), ("x-a", b"b")])
        );
        assert_eq!(resp.status, 200);
    }

    /// A server's response forwarded to an HTTP/2 client: the fields of
    /// the HTTP/1 head the relay writes, rules' edits included, in the
    /// server's order, names in lower case.
    #[test]
    fn forwarded_response_as_the_written_head() {
        let raw = bytes::Bytes::from_static(
            b"HTTP/1.1 200 OK\r\nServer: t\r\nConnection: keep-alive, x-hop\r\nKeep-Alive: timeout=5\r\nX-Hop: 1\r\nContent-Length: 2\r\nX-A: b\r\nX-Gone: 1\r\nX-Old: 1\r\nSet-Cookie: a\r\nX-Ctl: a\x01b\r\nExpect: e\r\nSet-Cookie: b\r\n\r\n",
        );
        let head = Head::parse_response(raw).unwrap_or_else(|e| panic!("{e}"));
        let body = head.response_body(b"GET").unwrap_or_else(|e| panic!("{e}"));
        let replaced = [(7, b"new".to_vec())];
        let added = [
            ("x-added".to_string(), b"yes".to_vec()),
            ("Keep-Alive".to_string(), b"no".to_vec()),
        ];
        let mut resp = forwarded_response(&head, body, |_, n| n == b"X-Gone", &replaced, &added)
            .unwrap_or_else(|| panic!("no response"));
        resp.append(b"Vary", b"Accept-Encoding");
        assert_eq!(
            fields(&resp.block),
            pairs(&[
                ("server", b"t"),
                ("content-length", b"2"),
                ("x-a", b"b"),
                ("x-old", b"new"),
                ("set-cookie", b"a"),
                ("expect", b"e"),
                ("set-cookie", b"b"),
                ("x-added", b"yes"),
                ("vary", b"Accept-Encoding"),
            ])
        );
        // Without a field a `Connection` names, nothing is scanned for one;
        // a length the server did not give is put after its fields.
        let raw = bytes::Bytes::from_static(
            b"HTTP/1.1 204 No Content\r\nConnection: close\r\nX-Hop: 1\r\n\r\n",
        );
        let head = Head::parse_response(raw).unwrap_or_else(|e| panic!("{e}"));
        let resp = forwarded_response(
            &head,
            crate::wire::h1::BodyKind::None,
            |_, _| false,
            &[],
            &[],
        )
        .unwrap_or_else(|| panic!("no response"));
        assert_eq!(resp.status, 204);
        assert_eq!(fields(&resp.block), pairs(&[("x-hop", b"1")]));
        let raw = bytes::Bytes::from_static(b"HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\n");
        let head = Head::parse_response(raw).unwrap_or_else(|e| panic!("{e}"));
        let resp = forwarded_response(
            &head,
            crate::wire::h1::BodyKind::Length(12),
            |_, _| false,
            &[],
            &[],
        )
        .unwrap_or_else(|| panic!("no response"));
        assert_eq!(
            fields(&resp.block),
            pairs(&[("x-a", b"1"), ("content-length", b"12")])
        );
    }

    #[test]
    fn http1_request_to_a_server_in_http2() {
        let raw = bytes::Bytes::from_static(
            b"POST /p?q=1 HTTP/1.1\r\nHost: site.test\r\nConnection: close, x-hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nTE: gzip\r\nX-Up: Hi\r\nContent-Length: 2\r\n\r\n",
        );
        let head = Head::parse_request(raw).unwrap_or_else(|e| panic!("{e}"));
        let server: std::net::SocketAddr = ([127, 0, 0, 1], 8080).into();
        let req = h2_request(&head, server, true).unwrap_or_else(|| panic!("no request"));
        assert_eq!(req.method(), "POST");
        assert_eq!(req.uri(), "https://site.test/p?q=1");
        let names: Vec<&str> = req.headers().keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["x-up", "content-length"]);
        // Without Host: the server's address.
        let raw = bytes::Bytes::from_static(b"GET / HTTP/1.1\r\n\r\n");
        let head = Head::parse_request(raw).unwrap_or_else(|e| panic!("{e}"));
        let req = h2_request(&head, server, false).unwrap_or_else(|| panic!("no request"));
        assert_eq!(req.uri(), "http://127.0.0.1:8080/");
    }

    #[test]
    fn dechunking() {
        let mut d = Dechunker::default();
        let mut input = BytesMut::from(&b"5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nx-t: 1\r\n\r\n"[..]);
        let mut out = Vec::new();
        while let Some(c) = d.next(&mut input).unwrap_or_else(|e| panic!("{e}")) {
            out.extend_from_slice(&c);
        }
        assert!(d.is_done());
        assert_eq!(out, b"helloabc");
        assert!(input.is_empty());
    }
}
