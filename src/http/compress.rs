//! HTTP compression as HAProxy 2.6's compression filter does it: the
//! algorithm is chosen from the request's `Accept-Encoding` (with its
//! q-values) among the backend's `compression algo` (else the
//! frontend's), the response is compressed when HAProxy would (a final
//! 200 to 203 of HTTP/1.1 to an HTTP/1.1 request that is not a HEAD, with
//! a body of known length, not encoded already, no `Cache-Control:
//! no-transform`, a valid single ETag, a `Content-Type` listed), and its
//! head changes as HAProxy changes it: `Content-Length` out, chunked,
//! a strong ETag made weak, `Vary: Accept-Encoding` and
//! `Content-Encoding` added. The body is compressed as it streams, one
//! read at a time, each flushed: nothing waits for the whole body.
//!
//! `br` and `zstd` are sluice's additions (HAProxy 2.6 refuses them).

use std::io::Write as _;

use bytes::BytesMut;
use flate2::{Compress, FlushCompress, Status};

use crate::config::model::CompAlgo;
use crate::http::rules::Edits;
use crate::snapshot::{BackendRt, FrontendRt};
use crate::wire::h1::{self, BodyKind, Head};

/// The compression settings a request is negotiated with: the backend's
/// algorithms if it has any, else the frontend's (HAProxy's order).
fn algos<'a>(fe: &'a FrontendRt, be: &'a BackendRt) -> Option<&'a [CompAlgo]> {
    be.comp
        .as_deref()
        .filter(|c| !c.algos.is_empty())
        .or(fe.comp.as_deref().filter(|c| !c.algos.is_empty()))
        .map(|c| &c.algos[..])
}

/// The `compression type` list that applies (the backend's first).
fn types<'a>(fe: &'a FrontendRt, be: &'a BackendRt) -> &'a [Box<[u8]>] {
    be.comp
        .as_deref()
        .filter(|c| !c.types.is_empty())
        .or(fe.comp.as_deref().filter(|c| !c.types.is_empty()))
        .map_or(&[], |c| &c.types[..])
}

/// The encoders' level (`tune.comp.maxlevel`, the same in every proxy).
fn level(fe: &FrontendRt, be: &BackendRt) -> u32 {
    be.comp
        .as_deref()
        .or(fe.comp.as_deref())
        .map_or(1, |c| c.level)
}

/// Whether either proxy compresses at all.
pub(crate) fn enabled(fe: &FrontendRt, be: &BackendRt) -> bool {
    fe.comp.is_some() || be.comp.is_some()
}

/// The algorithm the request asks for among the configured ones, as
/// HAProxy 2.6 chooses it: the value of `Accept-Encoding` with the
/// highest q-value (the first of equal ones) that names a configured
/// coding (`*` names the first configured), else `identity` if it is
/// configured. Old `Mozilla/4` agents (but MSIE 6 SP2 and later) get
/// nothing. `head` is the request as the rules left it (`edits`).
/// With `compression offload`, the request loses its `Accept-Encoding`
/// when an algorithm is chosen (added to `edits`).
pub(crate) fn negotiate(
    fe: &FrontendRt,
    be: &BackendRt,
    head: &Head,
    edits: &mut Option<Edits>,
) -> Option<CompAlgo> {
    if !enabled(fe, be) {
        return None;
    }
    let ed = edits.as_ref();
    let values = |name: &'static str| {
        let dropped = ed.is_some_and(|e| e.drops(name.as_bytes()));
        let received = head.values(name).filter(move |_| !dropped);
        let added = ed
            .into_iter()
            .flat_map(|e| e.add.iter())
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| &v[..]);
        received.chain(added)
    };
    if let Some(ua) = values("user-agent").next()
        && old_mozilla(ua)
    {
        return None;
    }
    let list = algos(fe, be)?;
    let mut best: Option<(CompAlgo, u32)> = None;
    for value in values("accept-encoding") {
        for elem in value.split(|&b| b == b',') {
            let elem = h1::trim(elem);
            if elem.is_empty() {
                continue;
            }
            let toklen = elem.iter().take_while(|&&b| h1::is_tchar(b)).count();
            let q = qvalue(&elem[toklen..]);
            if q <= best.map_or(0, |(_, q)| q) {
                continue;
            }
            let token = &elem[..toklen];
            let star = elem[0] == b'*';
            if let Some(a) = list
                .iter()
                .find(|a| star || token.eq_ignore_ascii_case(a.coding().as_bytes()))
            {
                best = Some((*a, q));
            }
        }
    }
    let chosen = best
        .map(|(a, _)| a)
        .or_else(|| list.iter().copied().find(|a| *a == CompAlgo::Identity))?;
    if best.is_some()
        && (be.comp.as_deref().is_some_and(|c| c.offload)
            || fe.comp.as_deref().is_some_and(|c| c.offload))
    {
        edits
            .get_or_insert_with(Default::default)
            .del_header("accept-encoding");
    }
    Some(chosen)
}

/// HAProxy's test for agents that announce themselves as `Mozilla/4`
/// without being MSIE 6 SP2 or later: they get no compression.
fn old_mozilla(ua: &[u8]) -> bool {
    if ua.len() < 9 || &ua[..9] != b"Mozilla/4" {
        return false;
    }
    ua.len() < 31
        || &ua[25..30] != b"MSIE "
        || ua[30] < b'6'
        || (ua[30] == b'6' && (ua.len() < 54 || &ua[51..54] != b"SV1"))
}

/// The q-value of an `Accept-Encoding` element, after its token: the
/// first `q=` parameter, in thousandths (1000 without one).
fn qvalue(params: &[u8]) -> u32 {
    for p in params.split(|&b| b == b';').skip(1) {
        let p = h1::trim(p);
        if let Some(v) = p.strip_prefix(b"q=") {
            return parse_q(v);
        }
    }
    1000
}

/// HAProxy's `http_parse_qvalue`: `d[.ddd]`, at most 1000.
fn parse_q(v: &[u8]) -> u32 {
    let digit = |i: usize| {
        v.get(i)
            .filter(|b| b.is_ascii_digit())
            .map(|b| u32::from(b - b'0'))
    };
    let Some(units) = digit(0) else {
        return 1000;
    };
    let mut q = units * 1000;
    if v.get(1) == Some(&b'.') {
        for (i, scale) in [(2, 100), (3, 10), (4, 1)] {
            match digit(i) {
                Some(d) => q += d * scale,
                None => break,
            }
        }
    }
    q.min(1000)
}

/// Whether the response is compressed with the algorithm the request
/// chose, by HAProxy 2.6's rules (checked on the server's head, before
/// the `http-response` rules run).
pub(crate) fn applies(
    fe: &FrontendRt,
    be: &BackendRt,
    req: &Head,
    resp: &Head,
    body: BodyKind,
) -> bool {
    if req.minor == 0 || resp.minor == 0 || req.method() == b"HEAD" {
        return false;
    }
    if !(200..=203).contains(&resp.status) {
        return false;
    }
    // A known length (not until close), and a body.
    if !matches!(body, BodyKind::Length(_) | BodyKind::Chunked) {
        return false;
    }
    if resp.values("content-encoding").next().is_some() {
        return false;
    }
    let no_transform = resp.values("cache-control").any(|v| {
        v.split(|&b| b == b',')
            .any(|e| h1::trim(e).eq_ignore_ascii_case(b"no-transform"))
    });
    if no_transform {
        return false;
    }
    let mut etags = resp.values("etag");
    if let Some(first) = etags.next()
        && (etag_kind(first) == EtagKind::Invalid || etags.next().is_some())
    {
        return false;
    }
    let listed = types(fe, be);
    match resp.values("content-type").next() {
        Some(ct) => {
            let ct = h1::trim(ct);
            if ct.len() >= 9 && ct[..9].eq_ignore_ascii_case(b"multipart") {
                return false;
            }
            if !listed.is_empty()
                && !listed
                    .iter()
                    .any(|t| ct.len() >= t.len() && ct[..t.len()].eq_ignore_ascii_case(t))
            {
                return false;
            }
        }
        None if !listed.is_empty() => return false,
        None => {}
    }
    true
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EtagKind {
    Strong,
    Weak,
    Invalid,
}

/// HAProxy's `http_get_etag_type`.
fn etag_kind(v: &[u8]) -> EtagKind {
    let v = h1::trim(v);
    if v.len() >= 2 && v[0] == b'"' && v[v.len() - 1] == b'"' {
        EtagKind::Strong
    } else if v.len() >= 4 && v.starts_with(b"W/\"") && v[v.len() - 1] == b'"' {
        EtagKind::Weak
    } else {
        EtagKind::Invalid
    }
}

/// The head changes of a compressed response, on top of the rules'
/// edits: its strong ETag made weak. The added fields (`vary`,
/// `content-encoding`) are written after the framing by
/// [`put_added`].
pub(crate) fn edit_head(resp: &Head, edits: &mut Option<Edits>) {
    let e = edits.get_or_insert_with(Default::default);
    let etag = resp
        .headers()
        .enumerate()
        .find(|(i, (n, _))| n.eq_ignore_ascii_case(b"etag") && !e.drops_at(*i, n));
    if let Some((i, (_, v))) = etag {
        let cur = e.value_at(i, v);
        if etag_kind(cur) == EtagKind::Strong {
            let mut weak = b"W/".to_vec();
            weak.extend_from_slice(h1::trim(cur));
            e.set_at(i, Some(weak));
        }
    }
}

/// The fields HAProxy adds last to a compressed response, in its order.
pub(crate) fn put_added(out: &mut BytesMut, algo: CompAlgo) {
    out.extend_from_slice(b"vary: Accept-Encoding\r\n");
    if algo != CompAlgo::Identity {
        out.extend_from_slice(b"content-encoding: ");
        out.extend_from_slice(algo.coding().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

/// A streaming encoder of one response body.
pub(crate) enum Encoder {
    /// `identity`: the bytes as they are (HAProxy counts them as
    /// bypassing the compressor).
    Identity,
    /// gzip, zlib (`deflate`) or raw deflate.
    Flate(Box<Compress>),
    Brotli(Box<brotli::CompressorWriter<Vec<u8>>>),
    Zstd(Box<zstd::stream::write::Encoder<'static, Vec<u8>>>),
}

/// Brotli's window (2^22, its default) and input buffer.
const BROTLI_LGWIN: u32 = 22;
const BROTLI_BUFFER: usize = 16 * 1024;

impl Encoder {
    pub(crate) fn new(algo: CompAlgo, fe: &FrontendRt, be: &BackendRt) -> std::io::Result<Encoder> {
        let level = level(fe, be);
        let z = flate2::Compression::new(level);
        Ok(match algo {
            CompAlgo::Identity => Encoder::Identity,
            CompAlgo::Gzip => Encoder::Flate(Box::new(Compress::new_gzip(z, 15))),
            CompAlgo::Deflate => Encoder::Flate(Box::new(Compress::new(z, true))),
            CompAlgo::RawDeflate => Encoder::Flate(Box::new(Compress::new(z, false))),
            CompAlgo::Br => Encoder::Brotli(Box::new(brotli::CompressorWriter::new(
                Vec::new(),
                BROTLI_BUFFER,
                level,
                BROTLI_LGWIN,
            ))),
            CompAlgo::Zstd => Encoder::Zstd(Box::new(zstd::stream::write::Encoder::new(
                Vec::new(),
                level as i32,
            )?)),
        })
    }

    /// Whether the bytes are compressed (not `identity`).
    pub(crate) fn compresses(&self) -> bool {
        !matches!(self, Encoder::Identity)
    }

    /// Compresses `data`: what the encoder emits of it (it may hold some
    /// back until [`Encoder::flush`]) is appended to `out`.
    pub(crate) fn feed(&mut self, data: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
        match self {
            Encoder::Identity => out.extend_from_slice(data),
            Encoder::Flate(c) => flate_run(c, data, out, FlushCompress::None)?,
            Encoder::Brotli(w) => {
                w.write_all(data)?;
                out.append(w.get_mut());
            }
            Encoder::Zstd(w) => {
                w.write_all(data)?;
                out.append(w.get_mut());
            }
        }
        Ok(())
    }

    /// Everything fed so far, decodable by the client, to `out` (a sync
    /// flush: done when the body pauses, not after every read).
    pub(crate) fn flush(&mut self, out: &mut Vec<u8>) -> std::io::Result<()> {
        match self {
            Encoder::Identity => {}
            Encoder::Flate(c) => flate_run(c, &[], out, FlushCompress::Sync)?,
            Encoder::Brotli(w) => {
                w.flush()?;
                out.append(w.get_mut());
            }
            Encoder::Zstd(w) => {
                w.flush()?;
                out.append(w.get_mut());
            }
        }
        Ok(())
    }

    /// Ends the stream: its last bytes (the gzip trailer...) to `out`.
    pub(crate) fn finish(self, out: &mut Vec<u8>) -> std::io::Result<()> {
        match self {
            Encoder::Identity => {}
            Encoder::Flate(mut c) => flate_run(&mut c, &[], out, FlushCompress::Finish)?,
            Encoder::Brotli(w) => out.append(&mut w.into_inner()),
            Encoder::Zstd(w) => out.append(&mut w.finish()?),
        }
        Ok(())
    }
}

/// Runs the deflate encoder over `input` with `flush`, growing `out` as
/// it needs: done when the input is taken and the encoder left room
/// unused (or, finishing, at the stream's end).
fn flate_run(
    c: &mut Compress,
    mut input: &[u8],
    out: &mut Vec<u8>,
    flush: FlushCompress,
) -> std::io::Result<()> {
    loop {
        out.reserve(input.len() / 2 + 1024);
        let before = c.total_in();
        let status = c
            .compress_vec(input, out, flush)
            .map_err(std::io::Error::other)?;
        input = &input[(c.total_in() - before) as usize..];
        if status == Status::StreamEnd {
            return Ok(());
        }
        let finishing = matches!(flush, FlushCompress::Finish);
        if !finishing && input.is_empty() && out.len() < out.capacity() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_values() {
        assert_eq!(qvalue(b""), 1000);
        assert_eq!(qvalue(b";q=0.5"), 500);
        assert_eq!(qvalue(b" ; level=1 ; q=0.25"), 250);
        assert_eq!(qvalue(b";q=0"), 0);
        assert_eq!(qvalue(b";q=1.0"), 1000);
        assert_eq!(qvalue(b";q=2"), 1000);
    }

    #[test]
    fn old_agents() {
        assert!(old_mozilla(b"Mozilla/4.0 (compatible)"));
        assert!(!old_mozilla(b"Mozilla/5.0 (X11)"));
        assert!(!old_mozilla(
            b"Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 5.1)"
        ));
        assert!(old_mozilla(
            b"Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)"
        ));
    }

    #[test]
    fn etags() {
        assert_eq!(etag_kind(b"\"a\""), EtagKind::Strong);
        assert_eq!(etag_kind(b"W/\"a\""), EtagKind::Weak);
        assert_eq!(etag_kind(b"a"), EtagKind::Invalid);
    }

    /// Every encoder's output decodes to the input, fed in pieces.
    #[test]
    fn encoders_round_trip() {
        use std::io::Read as _;
        let text: Vec<u8> = (0..50_000u32)
            .flat_map(|i| format!("line {i} of some text\n").into_bytes())
            .collect();
        for algo in [
            CompAlgo::Gzip,
            CompAlgo::Deflate,
            CompAlgo::RawDeflate,
            CompAlgo::Br,
            CompAlgo::Zstd,
        ] {
            let z = flate2::Compression::new(1);
            let mut enc = match algo {
                CompAlgo::Gzip => Encoder::Flate(Box::new(Compress::new_gzip(z, 15))),
                CompAlgo::Deflate => Encoder::Flate(Box::new(Compress::new(z, true))),
                CompAlgo::RawDeflate => Encoder::Flate(Box::new(Compress::new(z, false))),
                CompAlgo::Br => Encoder::Brotli(Box::new(brotli::CompressorWriter::new(
                    Vec::new(),
                    BROTLI_BUFFER,
                    1,
                    BROTLI_LGWIN,
                ))),
                _ => Encoder::Zstd(Box::new(
                    zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap(),
                )),
            };
            let mut out = Vec::new();
            for (i, piece) in text.chunks(16 * 1024).enumerate() {
                enc.feed(piece, &mut out).unwrap();
                if i % 3 == 0 {
                    enc.flush(&mut out).unwrap();
                }
            }
            enc.finish(&mut out).unwrap();
            assert!(out.len() < text.len() / 4, "{algo:?}");
            let mut back = Vec::new();
            match algo {
                CompAlgo::Gzip => flate2::read::GzDecoder::new(&out[..]).read_to_end(&mut back),
                CompAlgo::Deflate => {
                    flate2::read::ZlibDecoder::new(&out[..]).read_to_end(&mut back)
                }
                CompAlgo::RawDeflate => {
                    flate2::read::DeflateDecoder::new(&out[..]).read_to_end(&mut back)
                }
                CompAlgo::Br => brotli::Decompressor::new(&out[..], 4096).read_to_end(&mut back),
                _ => zstd::stream::read::Decoder::new(&out[..])
                    .unwrap()
                    .read_to_end(&mut back),
            }
            .unwrap();
            assert_eq!(back, text, "{algo:?}");
        }
    }
}
