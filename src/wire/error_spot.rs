//! Where a refused HTTP/1 message went wrong, told the way HAProxy's H1
//! parser tells it in `show errors`: the offset of the first offending byte
//! and the parser state it was met in (`MSG_RQMETH(2)`, `MSG_HDR_NAME(17)`).
//!
//! sluice parses with httparse, which only says "invalid": this module walks
//! the refused head once more with HAProxy's grammar to find the byte. It
//! only runs on the error path.

use crate::wire::h1::{H1Error, MAX_HEADERS, is_tchar};

/// HAProxy 2.6's `enum h1m_state` values this module can report.
pub(crate) mod state {
    pub(crate) const RQMETH: u8 = 2;
    pub(crate) const RQURI: u8 = 4;
    pub(crate) const RQVER: u8 = 6;
    pub(crate) const RQLINE_END: u8 = 7;
    pub(crate) const RPVER: u8 = 10;
    pub(crate) const RPCODE: u8 = 12;
    pub(crate) const RPREASON: u8 = 14;
    pub(crate) const RPLINE_END: u8 = 15;
    pub(crate) const HDR_NAME: u8 = 17;
    pub(crate) const HDR_VAL: u8 = 22;
    pub(crate) const HDR_L2_LF: u8 = 23;
    pub(crate) const HDR_L2_LWS: u8 = 24;
    pub(crate) const LAST_LF: u8 = 25;
    pub(crate) const CHUNK_SIZE: u8 = 26;
    pub(crate) const DATA: u8 = 27;
    pub(crate) const CHUNK_CRLF: u8 = 28;
    pub(crate) const TRAILERS: u8 = 29;
}

/// `h1m_state_str()`: the name HAProxy prints for a state.
pub(crate) fn state_name(s: u8) -> &'static str {
    const NAMES: [&str; 32] = [
        "MSG_RQBEFORE",
        "MSG_RQBEFORE_CR",
        "MSG_RQMETH",
        "MSG_RQMETH_SP",
        "MSG_RQURI",
        "MSG_RQURI_SP",
        "MSG_RQVER",
        "MSG_RQLINE_END",
        "MSG_RPBEFORE",
        "MSG_RPBEFORE_CR",
        "MSG_RPVER",
        "MSG_RPVER_SP",
        "MSG_RPCODE",
        "MSG_RPCODE_SP",
        "MSG_RPREASON",
        "MSG_RPLINE_END",
        "MSG_HDR_FIRST",
        "MSG_HDR_NAME",
        "MSG_HDR_COL",
        "MSG_HDR_L1_SP",
        "MSG_HDR_L1_LF",
        "MSG_HDR_L1_LWS",
        "MSG_HDR_VAL",
        "MSG_HDR_L2_LF",
        "MSG_HDR_L2_LWS",
        "MSG_LAST_LF",
        "MSG_CHUNK_SIZE",
        "MSG_DATA",
        "MSG_CHUNK_CRLF",
        "MSG_TRAILERS",
        "MSG_DONE",
        "MSG_TUNNEL",
    ];
    NAMES.get(s as usize).copied().unwrap_or("MSG_??????")
}

/// HAProxy's `H1_MF_*` message flags sluice can tell.
pub(crate) mod flags {
    pub(crate) const CLEN: u32 = 0x0001;
    pub(crate) const CHNK: u32 = 0x0002;
    pub(crate) const RESP: u32 = 0x0004;
    pub(crate) const VER_11: u32 = 0x0010;
    /// `H1_MF_NO_PHDR` and `H1_MF_CLEAN_CONN_HDR`: set on every message
    /// HAProxy 2.6's H1 mux parses.
    pub(crate) const ALWAYS: u32 = 0x1400;
    /// What haproxy 2.6.12 prints for a refused chunked HTTP/1.1 body
    /// (`XFER_LEN`, `XFER_ENC`, `TE_CHUNKED`, ... on top of the above).
    pub(crate) const CHUNKED_BODY: u32 = 0x0001_1712;
}

/// Where a message was refused and what the parser knew at that point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ErrorSpot {
    /// Offset of the first offending byte in the captured bytes.
    pub(crate) pos: usize,
    /// The parser state (`enum h1m_state`).
    pub(crate) state: u8,
    /// `H1_MF_*` flags.
    pub(crate) flags: u32,
    /// Content-Length or current chunk size (`H1 chunk len`).
    pub(crate) chunk_len: u64,
    /// Declared body length (`H1 body len`).
    pub(crate) body_len: u64,
    /// In the body (the head was accepted): HAProxy's connection and
    /// stream flags differ then.
    pub(crate) in_body: bool,
}

impl ErrorSpot {
    /// An error at `pos` in `state`, nothing else known.
    pub(crate) fn at(pos: usize, state: u8) -> ErrorSpot {
        ErrorSpot {
            pos,
            state,
            flags: flags::ALWAYS,
            chunk_len: 0,
            body_len: 0,
            in_body: false,
        }
    }

    /// The same spot, `by` bytes further (bytes captured before it).
    pub(crate) fn shifted(mut self, by: usize) -> ErrorSpot {
        self.pos += by;
        self
    }
}

/// What one walk of a head found.
struct Walk {
    /// The first syntax error, if any.
    syntax: Option<(usize, u8)>,
    flags: u32,
    content_length: Option<u64>,
    /// Start of the request-target.
    target: usize,
    /// Value starts of the headers sluice judges after parsing.
    content_lengths: Vec<(usize, bool)>,
    transfer_encoding: Option<usize>,
    hosts: Vec<usize>,
    end: usize,
}

/// Locates the error `err` found in the message `raw` (a request head, or a
/// response head when `response`), as HAProxy's parser would report it.
pub(crate) fn locate(raw: &[u8], response: bool, err: &H1Error) -> ErrorSpot {
    let w = walk(raw, response);
    let mut flags = w.flags;
    if w.content_length.is_some() {
        flags |= flags::CLEN;
    }
    let (pos, st) = match err {
        H1Error::BadContentLength => {
            // The first value that is bad on its own, else the one that
            // disagrees with the first.
            let bad = w.content_lengths.iter().find(|(_, ok)| !ok);
            let at = bad
                .or(w.content_lengths.get(1))
                .or(w.content_lengths.first());
            (at.map_or(w.end, |(p, _)| *p), state::HDR_L2_LWS)
        }
        H1Error::BadTransferEncoding | H1Error::UnsupportedCoding => {
            (w.transfer_encoding.unwrap_or(w.end), state::HDR_L2_LWS)
        }
        H1Error::BadHost => (
            w.hosts
                .get(1)
                .or(w.hosts.first())
                .copied()
                .unwrap_or(w.target),
            state::HDR_L2_LWS,
        ),
        H1Error::BadTarget => (w.target, state::RQURI),
        H1Error::MethodNotAllowed => (0, state::RQMETH),
        _ => w.syntax.unwrap_or((w.end, state::LAST_LF)),
    };
    let len = w.content_length.unwrap_or(0);
    ErrorSpot {
        pos,
        state: st,
        flags,
        chunk_len: len,
        body_len: len,
        in_body: false,
    }
}

/// The offset of the first byte HAProxy's grammar refuses in `raw`.
pub(crate) fn first_bad_byte(raw: &[u8], response: bool) -> usize {
    let w = walk(raw, response);
    w.syntax.map_or(w.end, |(p, _)| p)
}

fn walk(raw: &[u8], response: bool) -> Walk {
    let mut w = Walk {
        syntax: None,
        flags: flags::ALWAYS | if response { flags::RESP } else { 0 },
        content_length: None,
        target: 0,
        content_lengths: Vec::new(),
        transfer_encoding: None,
        hosts: Vec::new(),
        end: raw.len(),
    };
    // Empty lines before the start line are skipped, as HAProxy does.
    let mut i = 0;
    while i < raw.len() && (raw[i] == b'\r' || raw[i] == b'\n') {
        i += 1;
    }
    let line = match start_line(raw, i, response, &mut w) {
        Ok(next) => next,
        Err(e) => {
            w.syntax = Some(e);
            return w;
        }
    };
    if let Err(e) = headers(raw, line, &mut w) {
        w.syntax = Some(e);
    }
    w
}

type Step = Result<usize, (usize, u8)>;

/// Checks the start line from `i`; returns the offset of the first header.
fn start_line(raw: &[u8], mut i: usize, response: bool, w: &mut Walk) -> Step {
    let at = |i: usize| raw.get(i).copied();
    let version = |i: usize, st: u8, w: &mut Walk| -> Step {
        let v = raw.get(i..i + 8).ok_or((raw.len().min(i + 8), st))?;
        for (k, (&b, &want)) in v.iter().zip(b"HTTP/x.y").enumerate() {
            let ok = match want {
                b'x' | b'y' => b.is_ascii_digit(),
                _ => b == want,
            };
            if !ok {
                return Err((i + k, st));
            }
        }
        if &v[5..] == b"1.1" {
            w.flags |= flags::VER_11;
        }
        Ok(i + 8)
    };
    let line_end = |i: usize, st: u8| -> Step {
        match (at(i), at(i + 1)) {
            (Some(b'\n'), _) => Ok(i + 1),
            (Some(b'\r'), Some(b'\n')) => Ok(i + 2),
            (Some(b'\r'), _) => Err((i + 1, st)),
            _ => Err((i, st)),
        }
    };
    if response {
        i = version(i, state::RPVER, w)?;
        if at(i) != Some(b' ') {
            return Err((i, state::RPVER));
        }
        i += 1;
        for k in 0..3 {
            if !at(i + k).is_some_and(|b| b.is_ascii_digit()) {
                return Err((i + k, state::RPCODE));
            }
        }
        i += 3;
        if at(i) == Some(b' ') {
            i += 1;
            while let Some(b) = at(i) {
                if b == b'\r' || b == b'\n' {
                    break;
                }
                if b != b'\t' && (b < 0x20 || b == 0x7f) {
                    return Err((i, state::RPREASON));
                }
                i += 1;
            }
        }
        return line_end(i, state::RPLINE_END);
    }
    let start = i;
    while let Some(b) = at(i) {
        if b == b' ' {
            break;
        }
        if !is_tchar(b) {
            return Err((i, state::RQMETH));
        }
        i += 1;
    }
    if i == start || at(i).is_none() {
        return Err((i, state::RQMETH));
    }
    i += 1;
    w.target = i;
    while let Some(b) = at(i) {
        if b == b' ' {
            break;
        }
        if b <= 0x20 || b == 0x7f {
            return Err((i, state::RQURI));
        }
        i += 1;
    }
    if i == w.target || at(i).is_none() {
        return Err((i, state::RQURI));
    }
    i = version(i + 1, state::RQVER, w)?;
    line_end(i, state::RQLINE_END)
}

/// Checks the header lines from `i` to the blank line.
fn headers(raw: &[u8], mut i: usize, w: &mut Walk) -> Result<(), (usize, u8)> {
    let mut count = 0;
    loop {
        match (raw.get(i), raw.get(i + 1)) {
            (Some(b'\n'), _) | (Some(b'\r'), Some(b'\n')) => return Ok(()),
            (Some(b'\r'), _) => return Err((i + 1, state::LAST_LF)),
            // obs-fold: sluice does not unfold, it refuses.
            (Some(b' ' | b'\t'), _) => return Err((i, state::HDR_L2_LWS)),
            (None, _) => return Err((i, state::HDR_NAME)),
            _ => {}
        }
        count += 1;
        if count > MAX_HEADERS {
            return Err((i, state::HDR_NAME));
        }
        let name_start = i;
        while let Some(&b) = raw.get(i) {
            if b == b':' {
                break;
            }
            if !is_tchar(b) {
                return Err((i, state::HDR_NAME));
            }
            i += 1;
        }
        if i == name_start || i >= raw.len() {
            return Err((i, state::HDR_NAME));
        }
        let name = &raw[name_start..i];
        i += 1;
        while matches!(raw.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        let value_start = i;
        while let Some(&b) = raw.get(i) {
            if b == b'\r' || b == b'\n' {
                break;
            }
            if b != b'\t' && (b < 0x20 || b == 0x7f) {
                return Err((i, state::HDR_VAL));
            }
            i += 1;
        }
        let value = crate::wire::h1::trim(&raw[value_start..i]);
        note_header(w, name, value, value_start);
        match (raw.get(i), raw.get(i + 1)) {
            (Some(b'\n'), _) => i += 1,
            (Some(b'\r'), Some(b'\n')) => i += 2,
            (Some(b'\r'), _) => return Err((i + 1, state::HDR_L2_LF)),
            _ => return Err((i, state::HDR_VAL)),
        }
    }
}

/// Remembers where the headers sluice judges after parsing sit.
fn note_header(w: &mut Walk, name: &[u8], value: &[u8], at: usize) {
    if name.eq_ignore_ascii_case(b"content-length") {
        let n = std::str::from_utf8(value)
            .ok()
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|v| v.parse::<u64>().ok());
        if let (Some(n), None) = (n, w.content_length) {
            w.content_length = Some(n);
        }
        w.content_lengths.push((at, n.is_some()));
    } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
        w.flags |= flags::CHNK;
        w.transfer_encoding.get_or_insert(at);
    } else if name.eq_ignore_ascii_case(b"host") {
        w.hosts.push(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spot(raw: &[u8], response: bool) -> (usize, &'static str) {
        let s = locate(raw, response, &H1Error::Syntax(0));
        (s.pos, state_name(s.state))
    }

    #[test]
    fn matches_haproxy_positions() {
        // Positions and states haproxy 2.6.12 reported for these bytes.
        assert_eq!(spot(b"GARBAGE\x01REQ\r\n\r\n", false), (7, "MSG_RQMETH"));
        assert_eq!(
            spot(
                b"GET / HTTP/1.1\r\nhost: a\r\nheader/bizarre: x\r\n\r\n",
                false
            ),
            (31, "MSG_HDR_NAME")
        );
        let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nbad header: x\r\n\r\nok";
        let s = locate(resp, true, &H1Error::Syntax(0));
        assert_eq!((s.pos, state_name(s.state)), (39, "MSG_HDR_NAME"));
        assert_eq!(s.flags, 0x1415);
        assert_eq!((s.chunk_len, s.body_len), (2, 2));
    }

    #[test]
    fn locates_framing_headers() {
        let raw = b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n";
        let s = locate(raw, false, &H1Error::BadContentLength);
        assert_eq!(s.pos, 52);
        let raw = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n";
        assert_eq!(locate(raw, false, &H1Error::BadTransferEncoding).pos, 36);
        assert_eq!(spot(b"GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n", false).0, 20);
        assert_eq!(spot(b"GET / HTTP/1.1\r\n fold\r\n\r\n", false).0, 16);
        assert_eq!(spot(b"GET / HTTP/9\r\n\r\n", false), (12, "MSG_RQVER"));
    }
}
