//! A TLS ClientHello read from the first bytes of a connection, as
//! HAProxy 2.6 reads it for `req.ssl_hello_type` and `req.ssl_sni` (the
//! whole handshake message in the first record). Wire format only: the
//! fetches and rules that use it live above.

use crate::tls::HelloCapture;

/// Whether more bytes could change what the payload fetches return: no
/// byte yet, or a TLS record whose handshake message is not whole.
pub(crate) fn hello_incomplete(buf: &[u8]) -> bool {
    let Some(&first) = buf.first() else {
        return true;
    };
    if !((0x14..=0x17).contains(&first) || first == 0xff) {
        return false;
    }
    if buf.len() < 9 {
        return true;
    }
    let rec_len = u16::from_be_bytes([buf[3], buf[4]]) as usize;
    let hs_len = u32::from_be_bytes([0, buf[6], buf[7], buf[8]]) as usize;
    buf.len() < 5 + rec_len || buf.len() < 9 + hs_len
}

/// `req.ssl_hello_type`: the handshake type of the first record, once
/// its handshake message is whole (HAProxy's checks: an SSLv3+ record of
/// type 20..23 or 255 holding at least a handshake header).
pub(crate) fn ssl_hello_type(buf: &[u8]) -> Option<u8> {
    let &first = buf.first()?;
    if !((0x14..=0x17).contains(&first) || first == 0xff) || buf.len() < 9 {
        return None;
    }
    if u32::from_be_bytes([0, buf[1], buf[2], 0]) >> 8 < 0x0300 {
        return None;
    }
    if u16::from_be_bytes([buf[3], buf[4]]) < 4 {
        return None;
    }
    let hs_len = u32::from_be_bytes([0, buf[6], buf[7], buf[8]]) as usize;
    (buf.len() >= 9 + hs_len).then_some(buf[5])
}

/// The ClientHello held whole in the first record: its version and its
/// extensions.
fn hello(buf: &[u8]) -> Option<(u16, Reader<'_>)> {
    let mut r = Reader(buf);
    if r.u8()? != 0x16 || r.u8()? != 3 {
        return None;
    }
    r.skip(1)?;
    let mut hs = r.sub16()?;
    if hs.u8()? != 1 {
        return None;
    }
    let mut hello = hs.sub24()?;
    let version = hello.u16()?;
    hello.skip(32)?; // random
    let n = hello.u8()? as usize;
    hello.skip(n)?; // session id
    let n = hello.u16()? as usize;
    hello.skip(n)?; // cipher suites
    let n = hello.u8()? as usize;
    hello.skip(n)?; // compression methods
    Some((version, hello.sub16()?))
}

/// The body of the ClientHello's extension of type `kind`.
fn extension(buf: &[u8], kind: u16) -> Option<Reader<'_>> {
    let (_, mut exts) = hello(buf)?;
    while !exts.0.is_empty() {
        let k = exts.u16()?;
        let ext = exts.sub16()?;
        if k == kind {
            return Some(ext);
        }
    }
    None
}

/// `req.ssl_sni`: the host name of the server_name extension of a
/// ClientHello held whole in the first record.
pub(crate) fn ssl_sni(buf: &[u8]) -> Option<&[u8]> {
    let mut list = extension(buf, 0)?.sub16()?;
    while !list.0.is_empty() {
        let name_type = list.u8()?;
        let name = list.sub16()?.0;
        if name_type == 0 && !name.is_empty() {
            return Some(name);
        }
    }
    None
}

/// `req.ssl_alpn`: the first protocol the ClientHello's ALPN extension
/// offers.
pub(crate) fn ssl_alpn(buf: &[u8]) -> Option<&[u8]> {
    let mut list = extension(buf, 16)?.sub16()?;
    let n = list.u8()? as usize;
    list.take(n).filter(|p| !p.is_empty())
}

/// `req.ssl_ver`: the ClientHello's version as major * 65536 + minor
/// (TLS 1.3 hellos say 1.2 there, as HAProxy 2.6 reports).
pub(crate) fn ssl_ver(buf: &[u8]) -> Option<i64> {
    let (version, _) = hello(buf)?;
    Some(i64::from(version >> 8) * 65536 + i64::from(version & 0xff))
}

/// `req.ssl_ec_ext`: the ClientHello has the supported groups (elliptic
/// curves) extension.
pub(crate) fn ssl_ec_ext(buf: &[u8]) -> Option<bool> {
    hello(buf)?;
    Some(extension(buf, 10).is_some())
}

/// `req.ssl_st_ext`: 0 without a SessionTicket extension, 1 with an
/// empty one, 2 with a ticket in it.
pub(crate) fn ssl_st_ext(buf: &[u8]) -> Option<i64> {
    hello(buf)?;
    Some(match extension(buf, 35) {
        None => 0,
        Some(t) if t.0.is_empty() => 1,
        Some(_) => 2,
    })
}

/// The handshake message the records at the start of `raw` carry whole
/// (it may span several records), if it is a ClientHello.
fn hello_message(raw: &[u8]) -> Option<std::borrow::Cow<'_, [u8]>> {
    let mut r = Reader(raw);
    let mut msg: Option<std::borrow::Cow<'_, [u8]>> = None;
    loop {
        if let Some(m) = &msg
            && m.len() >= 4
        {
            let len = u32::from_be_bytes([0, m[1], m[2], m[3]]) as usize;
            if m.len() >= 4 + len {
                return (m[0] == 1).then(|| match msg {
                    Some(std::borrow::Cow::Borrowed(b)) => {
                        std::borrow::Cow::Borrowed(&b[..4 + len])
                    }
                    Some(std::borrow::Cow::Owned(mut v)) => {
                        v.truncate(4 + len);
                        std::borrow::Cow::Owned(v)
                    }
                    None => std::borrow::Cow::Borrowed(&[][..]),
                });
            }
        }
        if r.u8()? != 0x16 {
            return None;
        }
        r.skip(2)?;
        let payload = r.sub16()?.0;
        msg = Some(match msg {
            None => std::borrow::Cow::Borrowed(payload),
            Some(m) => {
                let mut v = m.into_owned();
                v.extend_from_slice(payload);
                std::borrow::Cow::Owned(v)
            }
        });
    }
}

/// The capture of the ClientHello the bytes `raw` (the first a client
/// sent) begin with, in a buffer of `size` bytes; None when they hold no
/// ClientHello (the parts after a malformed one are left out, as HAProxy
/// stops at it).
pub(crate) fn capture(raw: &[u8], size: usize) -> Option<HelloCapture> {
    let msg = hello_message(raw)?;
    let mut m = Reader(msg.get(4..)?);
    let version = m.u16()?;
    m.skip(32)?;
    let n = m.u8()? as usize;
    m.skip(n)?;
    let suites = m.sub16()?.0;
    let mut data = vec![0u8; size];
    let ciphers = suites.len().min(size);
    data[..ciphers].copy_from_slice(&suites[..ciphers]);
    let mut c = HelloCapture {
        version,
        xxh: xxhash_rust::xxh64::xxh64(suites, 0),
        ciphers,
        exts: (ciphers, 0),
        groups: (0, 0),
        formats: (0, 0),
        data: Box::default(),
    };
    let mut at = ciphers;
    let exts = (|| {
        let n = m.u8()? as usize;
        m.skip(n)?;
        m.sub16()
    })();
    let Some(mut exts) = exts else {
        c.data = data.into();
        return Some(c);
    };
    let (mut groups, mut formats) = (None, None);
    // An extension is read while more than its 4-byte header is left, as
    // HAProxy reads them (an empty last one is not). A malformed one ends
    // the capture there, groups and formats left out.
    let mut malformed = false;
    while exts.0.len() > 4 {
        if at + 2 > size {
            break;
        }
        data[at..at + 2].copy_from_slice(&exts.0[..2]);
        at += 2;
        c.exts.1 += 2;
        let kind = u16::from_be_bytes([exts.0[0], exts.0[1]]);
        exts.skip(2)?;
        let Some(mut body) = exts.sub16() else {
            malformed = true;
            break;
        };
        let list = match kind {
            10 => body.sub16().map(|l| l.0),
            11 => body.u8().and_then(|n| body.take(n as usize)),
            _ => continue,
        };
        let Some(list) = list else {
            malformed = true;
            break;
        };
        if kind == 10 {
            groups = Some(list);
        } else {
            formats = Some(list);
        }
    }
    if malformed {
        (groups, formats) = (None, None);
    }
    for (list, slot) in [(groups, &mut c.groups), (formats, &mut c.formats)] {
        if let Some(list) = list {
            let n = list.len().min(size - at);
            data[at..at + n].copy_from_slice(&list[..n]);
            *slot = (at, n);
            at += n;
        }
    }
    c.data = data.into();
    Some(c)
}

/// Whether a 2-byte value of a ClientHello list is a GREASE one (RFC
/// 8701: `0x?A?A` with both bytes equal).
pub(crate) fn is_grease(v: &[u8]) -> bool {
    v.len() == 2 && v[0] == v[1] && v[0] & 0x0f == 0x0a
}

/// A bounds-checked cursor over a TLS message.
#[derive(Clone, Copy)]
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
    /// A part prefixed by its 16-bit length.
    fn sub16(&mut self) -> Option<Reader<'a>> {
        let n = self.u16()? as usize;
        self.take(n).map(Reader)
    }
    /// A part prefixed by its 24-bit length.
    fn sub24(&mut self) -> Option<Reader<'a>> {
        let n = self.u24()? as usize;
        self.take(n).map(Reader)
    }
    fn u24(&mut self) -> Option<u32> {
        self.take(3)
            .map(|b| u32::from_be_bytes([0, b[0], b[1], b[2]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ClientHello naming `sni`.
    fn hello(sni: &str) -> Vec<u8> {
        let name = sni.as_bytes();
        let mut sni_ext = Vec::new();
        sni_ext.extend_from_slice(&((name.len() + 3) as u16).to_be_bytes());
        sni_ext.push(0);
        sni_ext.extend_from_slice(&(name.len() as u16).to_be_bytes());
        sni_ext.extend_from_slice(name);
        let mut exts = vec![0x00, 0x0b, 0x00, 0x02, 0x01, 0x00]; // ec_point_formats
        exts.extend_from_slice(&[0, 0]);
        exts.extend_from_slice(&(sni_ext.len() as u16).to_be_bytes());
        exts.extend_from_slice(&sni_ext);
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.push(0);
        body.extend_from_slice(&[0, 2, 0x13, 0x01, 1, 0]);
        body.extend_from_slice(&(exts.len() as u16).to_be_bytes());
        body.extend_from_slice(&exts);
        let mut hs = vec![1];
        hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
        hs.extend_from_slice(&body);
        let mut rec = vec![0x16, 3, 1];
        rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
        rec.extend_from_slice(&hs);
        rec
    }

    #[test]
    fn captures_as_haproxy_keeps_them() {
        let h = hello("b.example");
        // Room for all: the suite, the two extensions' types, the formats.
        let c = capture(&h, 64).expect("a hello");
        assert_eq!(c.version, 0x0303);
        assert_eq!(c.ciphers(), &[0x13, 0x01]);
        assert_eq!(c.extensions(), &[0, 0x0b, 0, 0]);
        assert_eq!(c.groups(), &[] as &[u8]);
        assert_eq!(c.formats(), &[0]);
        assert_eq!(c.xxh, xxhash_rust::xxh64::xxh64(&[0x13, 0x01], 0));
        // Cut: each part gets what room the ones before it left.
        let c = capture(&h, 4).expect("a hello");
        assert_eq!(
            (c.ciphers(), c.extensions(), c.formats()),
            (&[0x13, 0x01][..], &[0, 0x0b][..], &[][..])
        );
        // The hello split over two records.
        let (head, rest) = h.split_at(5 + 20);
        let mut two = head.to_vec();
        two[3..5].copy_from_slice(&20u16.to_be_bytes());
        two.extend_from_slice(&[0x16, 3, 1]);
        two.extend_from_slice(&(rest.len() as u16).to_be_bytes());
        two.extend_from_slice(rest);
        assert_eq!(capture(&two, 64), capture(&h, 64));
        assert_eq!(capture(b"GET / HTTP/1.1\r\n", 64), None);
        assert!(is_grease(&[0x3a, 0x3a]) && !is_grease(&[0x3a, 0x4a]) && !is_grease(&[0x13, 0x01]));
        assert_eq!(ssl_ec_ext(&h), Some(false));
        assert_eq!(ssl_st_ext(&h), Some(0));
    }

    #[test]
    fn sni_and_hello_type() {
        let h = hello("b.example");
        assert_eq!(ssl_sni(&h), Some(&b"b.example"[..]));
        assert_eq!(ssl_hello_type(&h), Some(1));
        assert!(!hello_incomplete(&h));
        for n in 0..h.len() {
            assert!(hello_incomplete(&h[..n]), "{n}");
            assert_eq!(ssl_sni(&h[..n]), None);
        }
        assert!(!hello_incomplete(b"GET / HTTP/1.0\r\n"));
        assert_eq!(ssl_sni(b"GET / HTTP/1.0\r\n"), None);
        assert_eq!(ssl_ver(&h), Some(0x0003_0003));
        assert_eq!(ssl_alpn(&h), None);
        assert_eq!(ssl_hello_type(b"GET / HTTP/1.0\r\n"), None);
    }
}
