//! The size HAProxy 2.6 logs for an HTTP/1 message (`%B`, `%U`): not the
//! bytes on the wire but those of its internal form, as measured against
//! haproxy 2.6: the start line counts its three words plus 20, each header
//! its name and value (without the colon, the spaces around the value and
//! the line end), the end of the head 1, and the body its bytes. The
//! `close` and `keep-alive` tokens of a `connection` header are not
//! counted: HAProxy takes them out when it reads a message (with the field
//! when nothing else is left) and writes its own when it sends one.
//! A 101 counts as any head; the tunnel after it counts every byte each
//! way, those that came with the heads included (`http/relay.rs`).

use crate::wire::h1::{BodyKind, ChunkedDecoder, trim};

/// What the start line adds besides its three words.
pub(crate) const START_LINE: u64 = 20;
/// What the end of the head adds.
pub(crate) const END_OF_HEAD: u64 = 1;

/// What a `Connection: close` HAProxy writes into a message it makes
/// adds to its logged size, as its internal form keeps it: the one of its
/// own 400 page (measured: 206 for the page, 191 without it), and of a
/// redirect of a request with a body (98 for 83).
pub(crate) const OWN_CONNECTION_CLOSE: u64 = 15;

/// The logged size of the head `head` (start line, headers, blank line;
/// what follows the blank line is not looked at).
pub(crate) fn head(head: &[u8]) -> u64 {
    let end = memchr::memmem::find(head, b"\r\n\r\n").map_or(head.len(), |e| e + 2);
    let mut lines = lines(&head[..end]);
    let Some(start) = lines.next() else { return 0 };
    // The three words, without the two spaces between them.
    let words = start.len().saturating_sub(2) as u64;
    START_LINE + words + fields(lines) + END_OF_HEAD
}

/// What the end of a chunked body adds besides its data and trailers
/// (measured: haproxy 2.6 logs one more byte for a chunked body than for
/// the same data with a length, none when the message has no body).
pub(crate) const END_OF_CHUNKED: u64 = 1;

/// The logged size of the trailer section `tail` of a chunked body (the
/// last chunk's size line, the trailer fields, the final blank line):
/// each field's name and value, as in a head.
pub(crate) fn trailers(tail: &[u8]) -> u64 {
    fields(lines(tail))
}

/// The logged size of the part of a request body of framing `kind` that
/// is already in `buf` (the bytes after its head), for a request answered
/// without its body being read: HAProxy 2.6 counts what it has parsed, the
/// body that came with the head. A rare path: a chunked body is decoded.
pub(crate) fn buffered_body(kind: BodyKind, buf: &[u8]) -> u64 {
    match kind {
        BodyKind::None | BodyKind::UntilClose => 0,
        BodyKind::Length(n) => n.min(buf.len() as u64),
        BodyKind::Chunked => {
            let mut dec = ChunkedDecoder::default();
            // A framing error ends what was parsed where it is.
            let end = dec.feed(buf).unwrap_or(0);
            // The chunk being received counts what arrived of it.
            let data = dec.body_len() - dec.data_left();
            if !dec.is_done() {
                return data;
            }
            let tail = dec.trailers_at().and_then(|at| buf.get(at..end));
            data + tail.map_or(0, trailers) + END_OF_CHUNKED
        }
    }
}

/// The length of what HAProxy 2.6 keeps of a `connection` field of value
/// `value` (trimmed) in its internal form, or None when it takes the field
/// out. Measured against haproxy 2.6 (the kept value read back with
/// `res.fhdr(connection)`): the `close` and `keep-alive` tokens go, the
/// others stay. Until a token goes the value stays as written, up to the
/// end of the last element read (`foo, bar, close` keeps `foo, bar`; a
/// last empty element after a comma is not read: `foo,` keeps `foo`);
/// after one has gone, each element that stays is moved, trimmed, behind
/// a comma when something comes before it (`close , foo  , bar` keeps
/// `foo,bar`). An empty result takes the field out (`close`, `,`, an
/// empty value).
pub(crate) fn connection_kept(value: &[u8]) -> Option<usize> {
    connection_kept_by(value, removed_token)
}

/// [`connection_kept`], with `removed` telling the tokens HAProxy takes
/// out (it is shown every token once, trimmed, in order): the parser reads
/// the tokens it acts on in the same pass.
pub(crate) fn connection_kept_by(
    value: &[u8],
    removed: impl FnMut(&[u8]) -> bool,
) -> Option<usize> {
    let mut len = 0;
    connection_kept_parts_by(value, removed, |part| len += part.len());
    (len > 0).then_some(len)
}

/// The tokens HAProxy 2.6 takes out of a `connection` field.
fn removed_token(word: &[u8]) -> bool {
    word.eq_ignore_ascii_case(b"close") || word.eq_ignore_ascii_case(b"keep-alive")
}

/// The value HAProxy 2.6 keeps of a `connection` field of value `value`
/// (trimmed), given to `put` in pieces (see [`connection_kept`]; nothing
/// when it takes the field out): what the forwarded field carries.
pub(crate) fn connection_kept_parts<'v>(value: &'v [u8], put: impl FnMut(&'v [u8])) {
    connection_kept_parts_by(value, removed_token, put)
}

fn connection_kept_parts_by<'v>(
    value: &'v [u8],
    mut removed: impl FnMut(&[u8]) -> bool,
    mut put: impl FnMut(&'v [u8]),
) {
    let lws = |b: u8| b == b' ' || b == b'\t';
    // `len`: the end of the value kept as written until a token goes;
    // `moved`: one has gone, what follows is put piece by piece.
    let (mut len, mut moved, mut any, mut i) = (0, false, false, 0);
    while i < value.len() {
        if lws(value[i]) {
            i += 1;
            continue;
        }
        // Tokens are a few bytes long: a plain scan, not a search set up
        // for long inputs.
        let end = value[i..]
            .iter()
            .position(|&b| b == b',')
            .map_or(value.len(), |e| i + e);
        let word = trim(&value[i..end]);
        if removed(word) {
            if !moved && len > 0 {
                put(&value[..len]);
                any = true;
            }
            moved = true;
        } else if !moved {
            len = end;
        } else {
            if any {
                put(b",");
            }
            put(word);
            any |= !word.is_empty();
        }
        i = end + 1;
    }
    if !moved && len > 0 {
        put(&value[..len]);
    }
}

/// The non-empty lines of `bytes`, without their line ends.
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty())
}

/// The fields among `lines` (those with a colon), each its name and
/// trimmed value, the `connection` ones HAProxy takes out left out.
fn fields<'a>(lines: impl Iterator<Item = &'a [u8]>) -> u64 {
    lines
        .filter_map(|l| {
            let colon = memchr::memchr(b':', l)?;
            let name = &l[..colon];
            let value = trim(&l[colon + 1..]);
            let kept = match name.eq_ignore_ascii_case(b"connection") {
                true => connection_kept(value)?,
                false => value.len(),
            };
            Some((name.len() + kept) as u64)
        })
        .sum()
}

/// The logged size of a whole message sluice made (a reply, a page): its
/// head, then a body of the bytes after it, delimited by its length.
pub(crate) fn message(msg: &[u8]) -> u64 {
    let body = memchr::memmem::find(msg, b"\r\n\r\n").map_or(0, |e| msg.len() - e - 4);
    head(msg) + body as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes haproxy 2.6.12 logged for these messages.
    #[test]
    fn sizes_are_haproxys() {
        let cases: [(&[u8], u64); 8] = [
            (b"GET / HTTP/1.1\r\nhost: x\r\n\r\n", 38),
            (b"GET /ret HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n", 41),
            (b"GET /ret HTTP/1.1\r\nhost:    x y  \r\nX-A: 1\r\n\r\n", 47),
            (b"GET /ret HTTP/1.0\r\n\r\n", 36),
            (b"GET / HTTP/1.1\r\nhost: x\r\nconnection: foo\r\n\r\n", 51),
            (
                b"GET / HTTP/1.1\r\nhost: x\r\nConnection: Keep-Alive\r\n\r\n",
                38,
            ),
            (
                b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-type: text/plain\r\n\r\nhello",
                76,
            ),
            (
                b"HTTP/1.1 302 Found\r\ncontent-length: 0\r\nlocation: /x\r\ncache-control: no-cache\r\n\r\n",
                83,
            ),
        ];
        for (msg, want) in cases {
            assert_eq!(message(msg), want, "{}", String::from_utf8_lossy(msg));
        }
        // Bodies that came with the head of a request answered locally,
        // as haproxy 2.6.12 counted them.
        let bodies: [(BodyKind, &[u8], u64); 4] = [
            (BodyKind::Length(5), b"hello", 5),
            (BodyKind::Length(5), b"hel", 3),
            (BodyKind::Chunked, b"5\r\nhello\r\n0\r\n\r\n", 6),
            (BodyKind::Chunked, b"5\r\nhello\r\n0\r\nx-t: 1\r\n\r\n", 10),
        ];
        for (kind, buf, want) in bodies {
            assert_eq!(buffered_body(kind, buf), want, "{kind:?}");
        }
        // What haproxy 2.6.12 kept of `connection` fields, read back with
        // `res.fhdr(connection)` and counted in `%B`.
        let kept: [(&[u8], Option<usize>); 14] = [
            (b"Upgrade", Some(7)),
            (b"keep-alive, Upgrade", Some(7)),
            (b"close, keep-alive", None),
            (b"foo, bar, close", Some(8)),
            (b"foo , close", Some(4)),
            (b"close , foo  , bar", Some(7)),
            (b"foo  , close, bar", Some(9)),
            (b"foo, close,  ,bar", Some(8)),
            (b"close,, foo", Some(3)),
            (b"foo, , close", Some(5)),
            (b"foo,", Some(3)),
            (b",,", Some(1)),
            (b",", None),
            (b"", None),
        ];
        for (value, want) in kept {
            assert_eq!(
                connection_kept(value),
                want,
                "{}",
                String::from_utf8_lossy(value)
            );
        }
        // A parsed request head gives the same size from its fields.
        for (msg, want) in &cases[..6] {
            let head =
                crate::wire::h1::Head::parse_request(bytes::Bytes::from_static(msg)).expect("head");
            assert_eq!(
                head.logged_size(),
                *want,
                "{}",
                String::from_utf8_lossy(msg)
            );
        }
    }
}
