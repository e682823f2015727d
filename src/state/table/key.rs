//! A table's keys: made from a sample (a rule's key, a `src_*` fetch's
//! address, a converter's input) or from the CLI's text, and written back
//! as `show table` shows them. A key is kept as HAProxy keeps it: an
//! address in network order, an integer as the 4 bytes of a native
//! unsigned int, a string cut to its size less one and ended by NUL, a
//! binary block cut or padded with zeros to its size. Kept as words (the
//! store's unit), zero-padded.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::config::model::KeyType;
use crate::sample::value::Sample;

/// Words of the keys kept inline: larger keys (strings longer than 63
/// bytes) go to the heap.
const INLINE: usize = 8;

/// A key in the store's form, on the stack for the usual sizes.
#[derive(Debug, Clone)]
pub(crate) struct KeyWords {
    inline: [u64; INLINE],
    heap: Vec<u64>,
    len: usize,
}

impl KeyWords {
    /// The words for `bytes`, zero-padded to `words` words (the table's
    /// key size).
    pub(crate) fn of(bytes: &[u8], words: usize) -> KeyWords {
        let mut k = KeyWords {
            inline: [0; INLINE],
            heap: Vec::new(),
            len: words,
        };
        if words > INLINE {
            k.heap = vec![0; words];
        }
        let dst = k.words_mut();
        for (i, chunk) in bytes.chunks(8).take(words).enumerate() {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            dst[i] = u64::from_le_bytes(w);
        }
        k
    }

    pub(crate) fn words(&self) -> &[u64] {
        if self.len > INLINE {
            &self.heap
        } else {
            &self.inline[..self.len]
        }
    }

    fn words_mut(&mut self) -> &mut [u64] {
        if self.len > INLINE {
            &mut self.heap
        } else {
            &mut self.inline[..self.len]
        }
    }
}

/// The words a key of `kind` takes in the store.
pub(crate) fn word_count(kind: KeyType) -> usize {
    (kind.size() as usize).div_ceil(8)
}

/// The key bytes of `words` (all of the key's size).
pub(crate) fn bytes_of(words: impl Iterator<Item = u64>, kind: KeyType) -> Vec<u8> {
    let mut out: Vec<u8> = words.flat_map(u64::to_le_bytes).collect();
    out.truncate(kind.size() as usize);
    out
}

/// The key of a sample, cast to the table's type as HAProxy casts it
/// (`smp_to_stkey`); None when it cannot be.
pub(crate) fn from_sample(s: Sample<'_>, kind: KeyType) -> Option<KeyWords> {
    // The usual case (`track-sc0 src` in an `ip` table), without a cast.
    if let (Sample::Ipv4(a), KeyType::Ip) = (&s, kind) {
        let mut k = KeyWords {
            inline: [0; INLINE],
            heap: Vec::new(),
            len: 1,
        };
        k.inline[0] = u64::from(u32::from_le_bytes(a.octets()));
        return Some(k);
    }
    let words = word_count(kind);
    let s = s.cast(kind.sample_type())?;
    Some(match (s, kind) {
        (Sample::Ipv4(a), _) => KeyWords::of(&a.octets(), words),
        (Sample::Ipv6(a), _) => KeyWords::of(&a.octets(), words),
        (Sample::Sint(n), _) => KeyWords::of(&(n as u32).to_ne_bytes(), words),
        (Sample::Str(b), KeyType::String(size)) => KeyWords::of(c_string(&b, size), words),
        (Sample::Bin(b), KeyType::Binary(size)) => {
            KeyWords::of(&b[..b.len().min(size as usize)], words)
        }
        _ => return None,
    })
}

/// A string key as HAProxy compares it: up to its first NUL, at most the
/// size less one.
fn c_string(b: &[u8], size: u32) -> &[u8] {
    let b = &b[..b.len().min(size.saturating_sub(1) as usize)];
    &b[..memchr::memchr(0, b).unwrap_or(b.len())]
}

/// Why the CLI's key text was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CliKeyError {
    Invalid,
    /// A binary table: the CLI takes no keys there.
    Binary,
}

/// The key the CLI names (`show|clear|set table <t> key <k>`), read as
/// HAProxy reads it: an IPv4 address by its quick digit reader (anything
/// goes, badly formed text reads as some address), an IPv6 one strictly,
/// an integer up to 2^32-1, a string as it is.
pub(crate) fn from_cli(text: &str, kind: KeyType) -> Result<KeyWords, CliKeyError> {
    let words = word_count(kind);
    match kind {
        KeyType::Ip => Ok(KeyWords::of(&quick_ipv4(text).to_be_bytes(), words)),
        KeyType::Ipv6 => {
            let a: Ipv6Addr = text.parse().map_err(|_| CliKeyError::Invalid)?;
            Ok(KeyWords::of(&a.octets(), words))
        }
        KeyType::Integer => {
            let v = parse_ulong(text).ok_or(CliKeyError::Invalid)?;
            let v = u32::try_from(v).map_err(|_| CliKeyError::Invalid)?;
            Ok(KeyWords::of(&v.to_ne_bytes(), words))
        }
        KeyType::String(size) => Ok(KeyWords::of(c_string(text.as_bytes(), size), words)),
        KeyType::Binary(_) => Err(CliKeyError::Binary),
    }
}

/// `strtoul(text, &end, 10)` with HAProxy's checks: leading spaces and a
/// sign taken, at least one digit, no overflow; what follows the digits
/// is ignored.
fn parse_ulong(text: &str) -> Option<u64> {
    let t = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let v: u64 = t[..digits].parse().ok()?;
    // strtoul negates in unsigned arithmetic.
    Some(if neg { v.wrapping_neg() } else { v })
}

/// HAProxy's `inetaddr_host`: up to four groups of digits separated by
/// dots, each group's last three digits making a byte (in a packed
/// computation whose carries spill into the next byte, as there); a
/// group may be empty, anything else ends the address.
fn quick_ipv4(text: &str) -> u32 {
    let b = text.as_bytes();
    let zero = u32::from_be_bytes([b'0'; 4]);
    let (mut d100, mut d10, mut d1) = (zero, zero, zero);
    let mut shift: i32 = 24;
    let mut start = 0;
    loop {
        let mut p = start;
        while p < b.len() && b[p].is_ascii_digit() {
            p += 1;
        }
        if p > start {
            let mut d = p - 1;
            d1 |= u32::from(b[d]) << shift;
            if d > start {
                d -= 1;
                d10 |= u32::from(b[d]) << shift;
                if d > start {
                    d -= 1;
                    d100 |= u32::from(b[d]) << shift;
                }
            }
        }
        if shift == 0 || b.get(p) != Some(&b'.') {
            break;
        }
        shift -= 8;
        start = p + 1;
    }
    let (d100, d10, d1) = (
        d100.wrapping_sub(zero),
        d10.wrapping_sub(zero),
        d1.wrapping_sub(zero),
    );
    d100.wrapping_mul(10)
        .wrapping_add(d10)
        .wrapping_mul(10)
        .wrapping_add(d1)
}

/// The key as `show table` writes it after `key=`.
pub(crate) fn show(bytes: &[u8], kind: KeyType, out: &mut String) {
    use std::fmt::Write;
    match kind {
        KeyType::Ip => {
            let o: [u8; 4] = bytes[..4].try_into().unwrap_or_default();
            let _ = write!(out, "{}", Ipv4Addr::from(o));
        }
        KeyType::Ipv6 => {
            let o: [u8; 16] = bytes[..16].try_into().unwrap_or_default();
            out.push_str(&ntop6(Ipv6Addr::from(o)));
        }
        KeyType::Integer => {
            let o: [u8; 4] = bytes[..4].try_into().unwrap_or_default();
            let _ = write!(out, "{}", u32::from_ne_bytes(o));
        }
        KeyType::String(_) => text(bytes, out),
        KeyType::Binary(_) => {
            for b in bytes {
                let _ = write!(out, "{b:02X}");
            }
        }
    }
}

/// An IPv6 address as the C library's `inet_ntop` writes it: as Rust
/// does, but for the deprecated IPv4-compatible form (`::a.b.c.d`).
pub(crate) fn ntop6(a: Ipv6Addr) -> String {
    let s = a.segments();
    if s[..6] == [0; 6] && s[6] != 0 {
        let o = a.octets();
        return format!("::{}.{}.{}.{}", o[12], o[13], o[14], o[15]);
    }
    a.to_string()
}

/// HAProxy's `dump_text`: up to the first NUL; printable ASCII as is,
/// but a space, `=` and a backslash escaped with a backslash, as are a
/// tab, CR, LF and ESC (`\t`...); other bytes as `\xHH`.
fn text(bytes: &[u8], out: &mut String) {
    use std::fmt::Write;
    for &c in bytes.iter().take_while(|&&c| c != 0) {
        match c {
            b' ' | b'=' | b'\\' => {
                out.push('\\');
                out.push(c as char);
            }
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            0x1b => out.push_str("\\e"),
            0x21..=0x7e => out.push(c as char),
            _ => {
                let _ = write!(out, "\\x{c:02X}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_ipv4_as_haproxy() {
        assert_eq!(quick_ipv4("10.1.2.3"), 0x0a01_0203);
        assert_eq!(quick_ipv4("1.2"), 0x0102_0000);
        assert_eq!(quick_ipv4("abc"), 0);
        assert_eq!(quick_ipv4("1..3.4"), 0x0100_0304);
        // The last three digits of a group count.
        assert_eq!(quick_ipv4("1001.2.3.4"), 0x0102_0304);
        // 300 spills into the byte above, as HAProxy's packed arithmetic.
        assert_eq!(quick_ipv4("0.0.0.300"), 300);
    }

    #[test]
    fn keys_from_samples() {
        use std::borrow::Cow;
        let k = from_sample(Sample::Sint(0x1_0000_0005), KeyType::Integer).unwrap();
        assert_eq!(
            bytes_of(k.words().iter().copied(), KeyType::Integer),
            [5, 0, 0, 0]
        );
        let k = from_sample(Sample::Str(Cow::Borrowed(b"abcdef")), KeyType::String(4)).unwrap();
        assert_eq!(
            bytes_of(k.words().iter().copied(), KeyType::String(4)),
            b"abc\0"
        );
        let k = from_sample(Sample::Bin(Cow::Borrowed(b"ab")), KeyType::Binary(4)).unwrap();
        assert_eq!(
            bytes_of(k.words().iter().copied(), KeyType::Binary(4)),
            b"ab\0\0"
        );
        assert!(from_sample(Sample::Str(Cow::Borrowed(b"x")), KeyType::Ip).is_none());
        // The direct path of an address is the general one's key.
        let a = Ipv4Addr::new(192, 0, 2, 7);
        let k = from_sample(Sample::Ipv4(a), KeyType::Ip).unwrap();
        assert_eq!(k.words(), KeyWords::of(&a.octets(), 1).words());
    }

    #[test]
    fn shown_as_haproxy() {
        let mut s = String::new();
        text(b"a b=c\\\t\x01\0zz", &mut s);
        assert_eq!(s, "a\\ b\\=c\\\\\\t\\x01");
        assert_eq!(ntop6("::1.2.3.4".parse().unwrap()), "::1.2.3.4");
        assert_eq!(ntop6("::ffff:1.2.3.4".parse().unwrap()), "::ffff:1.2.3.4");
        assert_eq!(ntop6("2001:db8::1".parse().unwrap()), "2001:db8::1");
    }
}
