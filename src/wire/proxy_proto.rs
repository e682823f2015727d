//! The PROXY protocol (HAProxy's doc/proxy-protocol.txt), versions 1 (text)
//! and 2 (binary): parsing a header received on a `bind ... accept-proxy`
//! listener, and writing one for `server ... send-proxy[-v2]`.
//!
//! The parser is strict where the spec is (signature, version, command,
//! family, lengths, TLV framing, CRLF within 107 bytes, canonical IPv4),
//! and as lenient as HAProxy 2.6 where that is what senders rely on
//! (leading zeros in v1 ports; v2 UDP/UNIX families keep the real
//! addresses).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use nom::Parser;
use nom::branch::alt;
use nom::bytes::complete::{tag, take, take_while1};
use nom::combinator::{map_res, value};
use nom::number::complete::{be_u8, be_u16, be_u32, be_u128};
use nom::sequence::preceded;

/// The 12-byte signature opening a version 2 header.
pub(crate) const V2_SIG: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
/// Longest v1 line, CRLF included.
const V1_MAX: usize = 107;
/// Longest v2 header accepted: HAProxy reads it into one buffer
/// (`tune.bufsize`, 16384 by default).
const V2_MAX: usize = 16384;

/// What a complete header says about the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The original client and the address it connected to.
    Proxied { src: SocketAddr, dst: SocketAddr },
    /// v2 LOCAL, v1 UNKNOWN, or a family kept local: the real
    /// connection's addresses stand.
    Local,
}

/// A parse that went as far as the bytes allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// The header is `len` bytes long; what follows is the payload.
    Complete { len: usize, origin: Origin },
    /// Valid so far, more bytes needed.
    Incomplete,
}

/// Why a connection is refused, with HAProxy 2.6's log text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PpError {
    #[error("Received something which does not look like a PROXY protocol header")]
    NotHeader,
    #[error("Received an invalid PROXY protocol header")]
    BadHeader,
    #[error("Received an unhandled protocol in the PROXY protocol header")]
    BadProto,
    #[error("Truncated PROXY protocol header received")]
    Truncated,
    #[error("Connection closed while waiting for PROXY protocol header")]
    Empty,
    #[error("Connection error while waiting for PROXY protocol header")]
    Abort,
    #[error("Timeout while waiting for PROXY protocol header")]
    Timeout,
}

/// Parses the start of a connection's bytes.
pub fn parse(buf: &[u8]) -> Result<Parsed, PpError> {
    if buf.is_empty() {
        return Ok(Parsed::Incomplete);
    }
    if starts_like(buf, V2_SIG) {
        return parse_v2(buf);
    }
    if starts_like(buf, b"PROXY ") {
        return parse_v1(buf);
    }
    Err(PpError::NotHeader)
}

/// Whether `buf` and `prefix` agree over their common length.
fn starts_like(buf: &[u8], prefix: &[u8]) -> bool {
    let n = buf.len().min(prefix.len());
    buf[..n] == prefix[..n]
}

type In<'a> = &'a [u8];
type Res<'a, T> = nom::IResult<In<'a>, T>;

fn parse_v1(buf: &[u8]) -> Result<Parsed, PpError> {
    let window = &buf[..buf.len().min(V1_MAX)];
    // The line ends at the first CR, which must be followed by LF; a lone
    // LF (or CR) is refused, as the spec asks.
    let end = match memchr::memchr2(b'\r', b'\n', window) {
        Some(at) if window[at] == b'\r' => match window.get(at + 1) {
            Some(b'\n') => at,
            Some(_) => return Err(PpError::BadHeader),
            None if buf.len() > at + 1 => return Err(PpError::BadHeader),
            None => return Ok(Parsed::Incomplete),
        },
        Some(_) => return Err(PpError::BadHeader),
        None if buf.len() >= V1_MAX => return Err(PpError::BadHeader),
        None => return Ok(Parsed::Incomplete),
    };
    let line = &buf[..end];
    let origin = match v1_line(line) {
        Ok((b"", origin)) => origin,
        Ok(_) => return Err(PpError::BadHeader),
        Err(_) => {
            return Err(
                if line.starts_with(b"PROXY TCP") || line.starts_with(b"PROXY UNKNOWN") {
                    PpError::BadHeader
                } else {
                    PpError::BadProto
                },
            );
        }
    };
    Ok(Parsed::Complete {
        len: end + 2,
        origin,
    })
}

/// `PROXY TCP4 <src> <dst> <sport> <dport>` (CRLF stripped), or
/// `PROXY UNKNOWN ...` whose rest is ignored.
fn v1_line(i: In<'_>) -> Res<'_, Origin> {
    let (i, _) = tag(&b"PROXY "[..]).parse(i)?;
    alt((
        value(Origin::Local, preceded(tag(&b"UNKNOWN"[..]), unknown_rest)),
        preceded(tag(&b"TCP4 "[..]), |i| v1_addrs(i, false)),
        preceded(tag(&b"TCP6 "[..]), |i| v1_addrs(i, true)),
    ))
    .parse(i)
}

/// After `UNKNOWN`: nothing, or a space and anything (but a lone CR or LF).
fn unknown_rest(i: In<'_>) -> Res<'_, ()> {
    if i.is_empty() || (i[0] == b' ' && !i.iter().any(|&b| b == b'\r' || b == b'\n')) {
        return Ok((&i[i.len()..], ()));
    }
    Err(nom::Err::Error(nom::error::Error::new(
        i,
        nom::error::ErrorKind::Tag,
    )))
}

fn v1_addrs(i: In<'_>, v6: bool) -> Res<'_, Origin> {
    let (i, src) = v1_ip(i, v6)?;
    let (i, _) = tag(&b" "[..]).parse(i)?;
    let (i, dst) = v1_ip(i, v6)?;
    let (i, _) = tag(&b" "[..]).parse(i)?;
    let (i, sport) = v1_port(i)?;
    let (i, _) = tag(&b" "[..]).parse(i)?;
    let (i, dport) = v1_port(i)?;
    Ok((
        i,
        Origin::Proxied {
            src: SocketAddr::new(src, sport),
            dst: SocketAddr::new(dst, dport),
        },
    ))
}

fn v1_ip(i: In<'_>, v6: bool) -> Res<'_, IpAddr> {
    map_res(
        take_while1(|b: u8| b.is_ascii_hexdigit() || b == b'.' || b == b':'),
        move |s: In<'_>| -> Result<IpAddr, ()> {
            let s = std::str::from_utf8(s).map_err(|_| ())?;
            // std's parsers take canonical forms only (no octal-looking
            // IPv4 parts), as the spec asks.
            if v6 {
                s.parse::<Ipv6Addr>().map(IpAddr::V6).map_err(|_| ())
            } else {
                s.parse::<Ipv4Addr>().map(IpAddr::V4).map_err(|_| ())
            }
        },
    )
    .parse(i)
}

/// A decimal port; leading zeros are accepted, as HAProxy 2.6 does.
fn v1_port(i: In<'_>) -> Res<'_, u16> {
    map_res(take_while1(|b: u8| b.is_ascii_digit()), |s: In<'_>| {
        if s.len() > 5 {
            return Err(());
        }
        std::str::from_utf8(s)
            .map_err(|_| ())?
            .parse::<u16>()
            .map_err(|_| ())
    })
    .parse(i)
}

fn parse_v2(buf: &[u8]) -> Result<Parsed, PpError> {
    if buf.len() < 16 {
        return Ok(Parsed::Incomplete);
    }
    let fixed = v2_fixed(&buf[12..16]);
    let Ok((_, (ver_cmd, fam, len))) = fixed else {
        return Err(PpError::BadHeader);
    };
    if ver_cmd >> 4 != 2 {
        return Err(PpError::NotHeader);
    }
    let total = 16 + len as usize;
    if total > V2_MAX {
        return Err(PpError::BadHeader);
    }
    if buf.len() < total {
        return Ok(Parsed::Incomplete);
    }
    let body = &buf[16..total];
    let origin = match ver_cmd & 0x0f {
        // LOCAL: the family and addresses are ignored.
        0x0 => Origin::Local,
        0x1 => {
            let (rest, origin) = match fam {
                0x11 => v2_inet4(body).map_err(|_| PpError::BadHeader)?,
                0x21 => v2_inet6(body).map_err(|_| PpError::BadHeader)?,
                // UNIX, UDP and UNSPEC: the real endpoints stand (the
                // block is skipped whole, TLVs included).
                0x00 | 0x12 | 0x22 | 0x31 | 0x32 => (&body[body.len()..], Origin::Local),
                _ => return Err(PpError::BadProto),
            };
            tlvs(rest, &buf[..total]).map_err(|_| PpError::BadHeader)?;
            origin
        }
        _ => return Err(PpError::BadHeader),
    };
    Ok(Parsed::Complete { len: total, origin })
}

fn v2_fixed(i: In<'_>) -> Res<'_, (u8, u8, u16)> {
    (be_u8, be_u8, be_u16).parse(i)
}

fn v2_inet4(i: In<'_>) -> Res<'_, Origin> {
    let (i, (s, d, sp, dp)) = (be_u32, be_u32, be_u16, be_u16).parse(i)?;
    Ok((
        i,
        Origin::Proxied {
            src: SocketAddr::new(IpAddr::V4(Ipv4Addr::from(s)), sp),
            dst: SocketAddr::new(IpAddr::V4(Ipv4Addr::from(d)), dp),
        },
    ))
}

fn v2_inet6(i: In<'_>) -> Res<'_, Origin> {
    let (i, (s, d, sp, dp)) = (be_u128, be_u128, be_u16, be_u16).parse(i)?;
    Ok((
        i,
        Origin::Proxied {
            src: SocketAddr::new(IpAddr::V6(Ipv6Addr::from(s)), sp),
            dst: SocketAddr::new(IpAddr::V6(Ipv6Addr::from(d)), dp),
        },
    ))
}

/// The TLV types HAProxy 2.6 reads (the others are skipped).
const TLV_AUTHORITY: u8 = 0x02;
const TLV_CRC32C: u8 = 0x03;
const TLV_UNIQUE_ID: u8 = 0x05;

/// The TLVs after the addresses: each a type, a length and that many
/// bytes, exactly filling the block. As HAProxy 2.6 refuses them: an
/// authority over 255 bytes, a unique id over 128, a CRC32C that is not
/// the header's (`header`, whole, its CRC taken as zero).
fn tlvs<'a>(mut i: In<'a>, header: &[u8]) -> Result<(), nom::Err<nom::error::Error<In<'a>>>> {
    let bad = |i| nom::Err::Error(nom::error::Error::new(i, nom::error::ErrorKind::Verify));
    while !i.is_empty() {
        let (rest, (kind, len)) = (be_u8, be_u16).parse(i)?;
        let (rest, value) = take(len).parse(rest)?;
        let ok = match kind {
            TLV_AUTHORITY => len <= 255,
            TLV_UNIQUE_ID => len <= 128,
            TLV_CRC32C => {
                let at = header.len() - rest.len() - value.len();
                value.len() == 4
                    && crc32c_zeroed(header, at)
                        == u32::from_be_bytes([value[0], value[1], value[2], value[3]])
            }
            _ => true,
        };
        if !ok {
            return Err(bad(i));
        }
        i = rest;
    }
    Ok(())
}

/// The CRC32C of `header` with the 4 bytes at `at` taken as zero.
fn crc32c_zeroed(header: &[u8], at: usize) -> u32 {
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);
    let mut d = crc.digest();
    d.update(&header[..at]);
    d.update(&[0; 4]);
    d.update(&header[at + 4..]);
    d.finalize()
}

/// What the TLVs of a PROXY command told (`fc_pp_authority`,
/// `fc_pp_unique_id`): the last of each type, as HAProxy keeps it. Boxed
/// only when there is one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PpTlvs {
    pub(crate) authority: Option<Box<[u8]>>,
    pub(crate) unique_id: Option<Box<[u8]>>,
}

impl PpTlvs {
    /// The TLVs of `header`, a complete v2 header [`parse`] took (none
    /// for v1, a LOCAL command, or a family whose block is skipped).
    pub(crate) fn of(header: &[u8]) -> PpTlvs {
        let mut out = PpTlvs::default();
        if header.len() < 16 || !header.starts_with(V2_SIG) || header[12] & 0x0f != 0x1 {
            return out;
        }
        let addrs = match header[13] {
            0x11 => 12,
            0x21 => 36,
            _ => return out,
        };
        let mut i = header.get(16 + addrs..).unwrap_or_default();
        while let Ok((rest, (kind, len))) = (be_u8::<In<'_>, ()>, be_u16).parse(i) {
            let Ok((rest, value)) = take::<u16, In<'_>, ()>(len).parse(rest) else {
                break;
            };
            match kind {
                TLV_AUTHORITY => out.authority = Some(value.into()),
                TLV_UNIQUE_ID => out.unique_id = Some(value.into()),
                _ => {}
            }
            i = rest;
        }
        out
    }
}

/// Reads the PROXY header opening `stream`, consuming exactly its bytes
/// (what follows stays in the socket for the protocol behind it), within
/// `limit` (`timeout client`). On failure, also says whether any byte came
/// (`option dontlognull` hides silent connections).
pub(crate) async fn read_header(
    stream: &mut tokio::net::TcpStream,
    limit: Option<std::time::Duration>,
) -> Result<(Origin, PpTlvs), (PpError, bool)> {
    let read = async {
        use tokio::io::AsyncReadExt;
        let mut got: Vec<u8> = Vec::new();
        let mut peeked = [0u8; 512];
        loop {
            let n = match stream.peek(&mut peeked).await {
                Ok(0) if got.is_empty() => return Err((PpError::Empty, false)),
                Ok(0) => return Err((PpError::Truncated, true)),
                Ok(n) => n,
                Err(_) => return Err((PpError::Abort, !got.is_empty())),
            };
            let seen = got.len();
            got.extend_from_slice(&peeked[..n]);
            // Only the header's own bytes are taken off the socket: all of
            // what was peeked while incomplete, the rest of it once
            // complete.
            let (take, done) = match parse(&got) {
                Ok(Parsed::Complete { len, origin }) => {
                    (len - seen, Some((origin, PpTlvs::of(&got[..len]))))
                }
                Ok(Parsed::Incomplete) => (n, None),
                Err(e) => return Err((e, true)),
            };
            if stream.read_exact(&mut peeked[..take]).await.is_err() {
                return Err((PpError::Abort, true));
            }
            if let Some(done) = done {
                return Ok(done);
            }
        }
    };
    match limit {
        Some(t) => tokio::time::timeout(t, read)
            .await
            .unwrap_or(Err((PpError::Timeout, false))),
        None => read.await,
    }
}

/// The header a `send-proxy` (1) / `send-proxy-v2` (2) server gets for a
/// client at `peer` that connected to `dst` (or to `client`'s local
/// address, asked only when needed); None without the option.
pub(crate) fn for_server(
    version: u8,
    peer: Option<SocketAddr>,
    dst: Option<SocketAddr>,
    client_local: impl FnOnce() -> Option<SocketAddr>,
) -> Option<Vec<u8>> {
    if version == 0 {
        return None;
    }
    // A client on a UNIX socket has no address to tell: HAProxy 2.6 sends
    // v1 `UNKNOWN`, v2 a LOCAL command with an unspecified family.
    let Some(peer) = peer else {
        return Some(if version == 2 {
            [&V2_SIG[..], &[0x20, 0x00, 0x00, 0x00]].concat()
        } else {
            b"PROXY UNKNOWN\r\n".to_vec()
        });
    };
    let dst = dst.or_else(client_local)?;
    Some(if version == 2 {
        v2_header(peer, dst)
    } else {
        v1_header(peer, dst)
    })
}

/// The header a health check of a `send-proxy` server starts with, as
/// HAProxy 2.6 sends it: v1 tells the check connection's own addresses,
/// v2 is a LOCAL command, unless `never_local` (the global
/// `pp2-never-send-local`) asks for HAProxy 2.1's PROXY command with the
/// check connection's addresses.
pub(crate) fn for_check(
    version: u8,
    conn: &tokio::net::TcpStream,
    never_local: bool,
) -> Option<Vec<u8>> {
    if version == 2 && never_local {
        return Some(v2_header(conn.local_addr().ok()?, conn.peer_addr().ok()?));
    }
    if version == 2 {
        return Some([&V2_SIG[..], &[0x20, 0x00, 0x00, 0x00]].concat());
    }
    Some(v1_header(conn.local_addr().ok()?, conn.peer_addr().ok()?))
}

/// The v1 line HAProxy sends for a client `src` connected to `dst`
/// (`UNKNOWN` when the families differ).
pub(crate) fn v1_header(src: SocketAddr, dst: SocketAddr) -> Vec<u8> {
    let (src, dst) = same_family(src, dst);
    let line = match (src, dst) {
        (SocketAddr::V4(s), SocketAddr::V4(d)) => format!(
            "PROXY TCP4 {} {} {} {}\r\n",
            s.ip(),
            d.ip(),
            s.port(),
            d.port()
        ),
        (SocketAddr::V6(s), SocketAddr::V6(d)) => format!(
            "PROXY TCP6 {} {} {} {}\r\n",
            s.ip(),
            d.ip(),
            s.port(),
            d.port()
        ),
        _ => "PROXY UNKNOWN\r\n".to_string(),
    };
    line.into_bytes()
}

/// The v2 header HAProxy sends (PROXY command, TCP over IPv4/IPv6, no TLV).
pub(crate) fn v2_header(src: SocketAddr, dst: SocketAddr) -> Vec<u8> {
    let (src, dst) = same_family(src, dst);
    let mut out = Vec::with_capacity(52);
    out.extend_from_slice(V2_SIG);
    out.push(0x21);
    match (src, dst) {
        (SocketAddr::V4(s), SocketAddr::V4(d)) => {
            out.push(0x11);
            out.extend_from_slice(&12u16.to_be_bytes());
            out.extend_from_slice(&s.ip().octets());
            out.extend_from_slice(&d.ip().octets());
            out.extend_from_slice(&s.port().to_be_bytes());
            out.extend_from_slice(&d.port().to_be_bytes());
        }
        (SocketAddr::V6(s), SocketAddr::V6(d)) => {
            out.push(0x21);
            out.extend_from_slice(&36u16.to_be_bytes());
            out.extend_from_slice(&s.ip().octets());
            out.extend_from_slice(&d.ip().octets());
            out.extend_from_slice(&s.port().to_be_bytes());
            out.extend_from_slice(&d.port().to_be_bytes());
        }
        _ => {
            out.push(0x00);
            out.extend_from_slice(&0u16.to_be_bytes());
        }
    }
    out
}

/// A mixed pair is told in IPv6 (the IPv4 one mapped), as HAProxy does.
fn same_family(src: SocketAddr, dst: SocketAddr) -> (SocketAddr, SocketAddr) {
    fn v6(a: SocketAddr) -> SocketAddr {
        match a {
            SocketAddr::V4(v4) => SocketAddr::new(IpAddr::V6(v4.ip().to_ipv6_mapped()), v4.port()),
            v6 => v6,
        }
    }
    match (src, dst) {
        (SocketAddr::V4(_), SocketAddr::V6(_)) | (SocketAddr::V6(_), SocketAddr::V4(_)) => {
            (v6(src), v6(dst))
        }
        same => same,
    }
}

/// Fuzzing entry: any bytes through the parser, and a complete header
/// re-encoded and parsed back to the same origin.
pub fn exercise(data: &[u8]) {
    if let Ok(Parsed::Complete { len, origin }) = parse(data) {
        assert!(len <= data.len());
        // Every prefix of a complete header is incomplete, never an error.
        for n in 0..len {
            assert_eq!(parse(&data[..n]), Ok(Parsed::Incomplete), "prefix {n}");
        }
        if let Origin::Proxied { src, dst } = origin {
            for h in [v1_header(src, dst), v2_header(src, dst)] {
                let again = parse(&h);
                assert_eq!(
                    again,
                    Ok(Parsed::Complete {
                        len: h.len(),
                        origin
                    })
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap_or_else(|_| panic!("{s}"))
    }

    #[test]
    fn v1_forms() {
        let h = b"PROXY TCP4 1.2.3.4 5.6.7.8 1111 2222\r\nGET";
        assert_eq!(
            parse(h),
            Ok(Parsed::Complete {
                len: h.len() - 3,
                origin: Origin::Proxied {
                    src: sa("1.2.3.4:1111"),
                    dst: sa("5.6.7.8:2222")
                }
            })
        );
        let h = b"PROXY TCP6 ::1 2001:db8::2 1 65535\r\n";
        assert!(matches!(parse(h), Ok(Parsed::Complete { len: 36, .. })));
        assert_eq!(
            parse(b"PROXY UNKNOWN\r\n"),
            Ok(Parsed::Complete {
                len: 15,
                origin: Origin::Local
            })
        );
        assert!(matches!(
            parse(b"PROXY UNKNOWN ffff::1 ::2 1 2\r\n"),
            Ok(Parsed::Complete { .. })
        ));
        // Leading zeros in ports pass, as in HAProxy.
        assert!(matches!(
            parse(b"PROXY TCP4 1.2.3.4 5.6.7.8 01111 2222\r\n"),
            Ok(Parsed::Complete { .. })
        ));
        for bad in [
            &b"PROXY TCP4 1.2.3.4 5.6.7.8 1111 2222\n"[..],
            b"PROXY TCP4 1.2.3.4 5.6.7.8 1111 65536\r\n",
            b"PROXY TCP4 1.2.3.04 5.6.7.8 1111 2222\r\n",
            b"PROXY TCP4 ::1 5.6.7.8 1111 2222\r\n",
            b"PROXY TCP6 1.2.3.4 ::1 1111 2222\r\n",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 1111 2222 \r\n",
            b"PROXY TCP4  1.2.3.4 5.6.7.8 1111 2222\r\n",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 1111\r\n",
            b"PROXY UNKNOWNX\r\n",
        ] {
            assert_eq!(
                parse(bad),
                Err(PpError::BadHeader),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(parse(b"PROXY UDP4 1 2 3 4\r\n"), Err(PpError::BadProto));
        assert_eq!(parse(b"GET / HTTP/1.1\r\n"), Err(PpError::NotHeader));
        assert_eq!(parse(b"PROXY TCP4 1.2.3.4"), Ok(Parsed::Incomplete));
        assert_eq!(parse(b"PRO"), Ok(Parsed::Incomplete));
        let long = [b"PROXY UNKNOWN ".as_slice(), &[b'a'; 100]].concat();
        assert_eq!(parse(&long), Err(PpError::BadHeader));
    }

    #[test]
    fn v2_forms() {
        let h = v2_header(sa("10.0.0.1:1234"), sa("10.0.0.2:5678"));
        assert_eq!(h.len(), 28);
        assert_eq!(
            parse(&h),
            Ok(Parsed::Complete {
                len: 28,
                origin: Origin::Proxied {
                    src: sa("10.0.0.1:1234"),
                    dst: sa("10.0.0.2:5678")
                }
            })
        );
        assert_eq!(parse(&h[..27]), Ok(Parsed::Incomplete));
        let h6 = v2_header(sa("[::1]:1"), sa("[::2]:2"));
        assert_eq!(h6.len(), 52);
        assert!(matches!(parse(&h6), Ok(Parsed::Complete { len: 52, .. })));
        // LOCAL with an address block: skipped whole.
        let mut local = h.clone();
        local[12] = 0x20;
        assert_eq!(
            parse(&local),
            Ok(Parsed::Complete {
                len: 28,
                origin: Origin::Local
            })
        );
        // TLVs are skipped; a TLV overrunning the block is refused.
        let mut tlv = h.clone();
        tlv[15] = 12 + 5;
        tlv.extend_from_slice(&[0x01, 0x00, 0x02, b'h', b'2']);
        assert!(matches!(parse(&tlv), Ok(Parsed::Complete { len: 33, .. })));
        tlv[30] = 0x03;
        assert_eq!(parse(&tlv), Err(PpError::BadHeader));
        // The authority and unique id TLVs are kept (the last of each), up
        // to HAProxy's lengths; a CRC32C must be the header's.
        let with = |tlvs: &[(u8, &[u8])]| {
            let mut out = h.clone();
            for (kind, v) in tlvs {
                out.push(*kind);
                out.extend_from_slice(&(v.len() as u16).to_be_bytes());
                out.extend_from_slice(v);
            }
            let len = (out.len() - 16) as u16;
            out[14..16].copy_from_slice(&len.to_be_bytes());
            out
        };
        let both = with(&[(2, b"first"), (5, b"id-1"), (2, b"example.org")]);
        assert!(matches!(parse(&both), Ok(Parsed::Complete { .. })));
        let t = PpTlvs::of(&both);
        assert_eq!(t.authority.as_deref(), Some(&b"example.org"[..]));
        assert_eq!(t.unique_id.as_deref(), Some(&b"id-1"[..]));
        assert!(matches!(
            parse(&with(&[(2, &[b'a'; 255])])),
            Ok(Parsed::Complete { .. })
        ));
        assert_eq!(parse(&with(&[(2, &[b'a'; 256])])), Err(PpError::BadHeader));
        assert!(matches!(
            parse(&with(&[(5, &[b'u'; 128])])),
            Ok(Parsed::Complete { .. })
        ));
        assert_eq!(parse(&with(&[(5, &[b'u'; 129])])), Err(PpError::BadHeader));
        let mut crc = with(&[(3, &[0; 4])]);
        assert_eq!(parse(&crc), Err(PpError::BadHeader));
        let at = crc.len() - 4;
        let sum = crc32c_zeroed(&crc, at);
        crc[at..].copy_from_slice(&sum.to_be_bytes());
        assert!(matches!(parse(&crc), Ok(Parsed::Complete { .. })));
        assert_eq!(PpTlvs::of(&crc), PpTlvs::default());
        // Short address block, bad version, bad command, bad family.
        let mut short = h.clone();
        short[15] = 8;
        assert_eq!(parse(&short), Err(PpError::BadHeader));
        let mut ver = h.clone();
        ver[12] = 0x11;
        assert_eq!(parse(&ver), Err(PpError::NotHeader));
        let mut cmd = h.clone();
        cmd[12] = 0x22;
        assert_eq!(parse(&cmd), Err(PpError::BadHeader));
        let mut fam = h.clone();
        fam[13] = 0x41;
        assert_eq!(parse(&fam), Err(PpError::BadProto));
        // UNSPEC keeps the real addresses.
        let unspec = [&V2_SIG[..], &[0x21, 0x00, 0x00, 0x00]].concat();
        assert_eq!(
            parse(&unspec),
            Ok(Parsed::Complete {
                len: 16,
                origin: Origin::Local
            })
        );
        assert_eq!(parse(&V2_SIG[..5]), Ok(Parsed::Incomplete));
    }

    #[test]
    fn writers_match_haproxy() {
        assert_eq!(
            v1_header(sa("127.0.0.1:35552"), sa("127.0.0.1:17902")),
            b"PROXY TCP4 127.0.0.1 127.0.0.1 35552 17902\r\n"
        );
        let v2 = v2_header(sa("[::1]:1111"), sa("[::2]:2222"));
        assert_eq!(&v2[12..16], b"\x21\x21\x00\x24");
    }
}
