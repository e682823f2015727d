//! A sample's value and its type, and the casts between types.
//!
//! The types and the cast matrix are HAProxy 2.6's: a fetch or converter
//! declares the type it produces or takes, the configuration is refused
//! when no cast exists between two steps, and at run time a cast may still
//! fail on a given value (a string that is no address), which ends the
//! expression without a sample.

use std::borrow::Cow;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The type of a sample, as fetches and converters declare it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SmpType {
    /// Whatever the step is given (converters that work on any type).
    Any,
    Bool,
    Sint,
    /// An IPv4 or IPv6 address (a converter's input only).
    Addr,
    Ipv4,
    Ipv6,
    Str,
    Bin,
    Meth,
}

impl SmpType {
    /// Whether a value of type `self` can be cast to `to` at all (checked
    /// when the configuration is read).
    pub(crate) fn casts_to(self, to: SmpType) -> bool {
        use SmpType::*;
        if to == Any || self == Any || self == to {
            return true;
        }
        match self {
            Bool => matches!(to, Sint | Str | Bin),
            Sint => matches!(to, Bool | Addr | Ipv4 | Ipv6 | Str | Bin),
            Ipv4 => matches!(to, Sint | Addr | Ipv6 | Str | Bin),
            Ipv6 => matches!(to, Addr | Ipv4 | Str | Bin),
            Str => true,
            Bin => matches!(to, Str | Meth),
            Meth => matches!(to, Str | Bin),
            Addr | Any => false,
        }
    }
}

/// One value flowing through an expression. Text borrows from the request
/// where it can, so a fetch of a header is no copy until a converter
/// changes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sample<'a> {
    Bool(bool),
    Sint(i64),
    Ipv4(Ipv4Addr),
    Ipv6(Ipv6Addr),
    Str(Cow<'a, [u8]>),
    Bin(Cow<'a, [u8]>),
    /// A method, kept as its text.
    Meth(Cow<'a, [u8]>),
}

impl<'a> Sample<'a> {
    pub(crate) fn str(s: impl Into<Cow<'a, [u8]>>) -> Sample<'a> {
        Sample::Str(s.into())
    }

    /// The same value, owning its bytes.
    pub(crate) fn into_owned(self) -> Sample<'static> {
        match self {
            Sample::Bool(b) => Sample::Bool(b),
            Sample::Sint(n) => Sample::Sint(n),
            Sample::Ipv4(a) => Sample::Ipv4(a),
            Sample::Ipv6(a) => Sample::Ipv6(a),
            Sample::Str(s) => Sample::Str(Cow::Owned(s.into_owned())),
            Sample::Bin(s) => Sample::Bin(Cow::Owned(s.into_owned())),
            Sample::Meth(s) => Sample::Meth(Cow::Owned(s.into_owned())),
        }
    }

    pub(crate) fn owned_str(s: String) -> Sample<'a> {
        Sample::Str(Cow::Owned(s.into_bytes()))
    }

    pub(crate) fn kind(&self) -> SmpType {
        match self {
            Sample::Bool(_) => SmpType::Bool,
            Sample::Sint(_) => SmpType::Sint,
            Sample::Ipv4(_) => SmpType::Ipv4,
            Sample::Ipv6(_) => SmpType::Ipv6,
            Sample::Str(_) => SmpType::Str,
            Sample::Bin(_) => SmpType::Bin,
            Sample::Meth(_) => SmpType::Meth,
        }
    }

    /// The value as type `to`, or `None` when this value cannot be
    /// represented there (HAProxy then ends the expression).
    pub(crate) fn cast(self, to: SmpType) -> Option<Sample<'a>> {
        use Sample as S;
        use SmpType as T;
        if to == T::Any || self.kind() == to {
            return Some(self);
        }
        Some(match (self, to) {
            (S::Bool(b), T::Sint) => S::Sint(b as i64),
            (S::Bool(b), T::Str) => S::str(if b { &b"1"[..] } else { &b"0"[..] }),
            (S::Bool(b), T::Bin) => S::Bin(Cow::Owned((b as i64).to_be_bytes().to_vec())),
            (S::Sint(n), T::Bool) => S::Bool(n != 0),
            (S::Sint(n), T::Addr | T::Ipv4) => S::Ipv4(Ipv4Addr::from(n as u32)),
            (S::Sint(n), T::Ipv6) => S::Ipv6(Ipv4Addr::from(n as u32).to_ipv6_mapped()),
            (S::Sint(n), T::Str) => S::owned_str(n.to_string()),
            (S::Sint(n), T::Bin) => S::Bin(Cow::Owned(n.to_be_bytes().to_vec())),
            (S::Ipv4(a), T::Sint) => S::Sint(u32::from(a) as i64),
            (S::Ipv4(a), T::Addr) => S::Ipv4(a),
            (S::Ipv4(a), T::Ipv6) => S::Ipv6(a.to_ipv6_mapped()),
            (S::Ipv4(a), T::Str) => S::owned_str(a.to_string()),
            (S::Ipv4(a), T::Bin) => S::Bin(Cow::Owned(a.octets().to_vec())),
            (S::Ipv6(a), T::Addr) => S::Ipv6(a),
            (S::Ipv6(a), T::Ipv4) => S::Ipv4(a.to_ipv4_mapped()?),
            (S::Ipv6(a), T::Str) => S::owned_str(a.to_string()),
            (S::Ipv6(a), T::Bin) => S::Bin(Cow::Owned(a.octets().to_vec())),
            // An empty string is no number at all (`"abc"` is 0).
            (S::Str(s), T::Bool) if !s.is_empty() => S::Bool(str_to_int(&s) != 0),
            (S::Str(s), T::Sint) if !s.is_empty() => S::Sint(str_to_int(&s)),
            (S::Str(s), T::Addr) => match str_to_ipv4(&s) {
                Some(a) => S::Ipv4(a),
                None => S::Ipv6(str_to_ipv6(&s)?),
            },
            (S::Str(s), T::Ipv4) => S::Ipv4(str_to_ipv4(&s)?),
            (S::Str(s), T::Ipv6) => S::Ipv6(str_to_ipv6(&s)?),
            (S::Str(s), T::Bin) => S::Bin(s),
            (S::Str(s) | S::Bin(s), T::Meth) => S::Meth(s),
            // A binary sample read as a string ends at its first NUL, as
            // HAProxy's C strings do (`bin(41004243),length` is 1).
            (S::Bin(s), T::Str) => {
                let end = memchr::memchr(0, &s).unwrap_or(s.len());
                S::Str(match s {
                    Cow::Borrowed(b) => Cow::Borrowed(&b[..end]),
                    Cow::Owned(mut v) => {
                        v.truncate(end);
                        Cow::Owned(v)
                    }
                })
            }
            (S::Meth(s), T::Str) => S::Str(s),
            (S::Meth(s), T::Bin) => S::Bin(s),
            _ => return None,
        })
    }

    /// The bytes of a text value (string, binary or method), or `None`.
    pub(crate) fn bytes(&self) -> Option<&[u8]> {
        match self {
            Sample::Str(s) | Sample::Bin(s) | Sample::Meth(s) => Some(s),
            _ => None,
        }
    }

    /// Appends the value as a log-format string shows it.
    pub(crate) fn write_text(self, out: &mut Vec<u8>) {
        if let Some(Sample::Str(s)) = self.cast(SmpType::Str) {
            out.extend_from_slice(&s);
        }
    }
}

/// HAProxy's string to integer cast: an optional sign, then the leading
/// digits; anything else ends the number (`"12abc"` is 12, `"abc"` and
/// `" 12"` are 0); beyond the 64-bit range it saturates.
pub(crate) fn str_to_int(s: &[u8]) -> i64 {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut n: i64 = 0;
    for &d in digits.iter().take_while(|d| d.is_ascii_digit()) {
        let v = (d - b'0') as i64;
        n = match n.checked_mul(10).and_then(|n| {
            if neg {
                n.checked_sub(v)
            } else {
                n.checked_add(v)
            }
        }) {
            Some(n) => n,
            None => return if neg { i64::MIN } else { i64::MAX },
        };
    }
    n
}

/// A dotted IPv4 address at the start of `s` (HAProxy reads the address
/// and ignores what follows it: `"1.2.3.4x"` is 1.2.3.4).
fn str_to_ipv4(s: &[u8]) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut rest = s;
    for (i, o) in octets.iter_mut().enumerate() {
        if i > 0 {
            rest = rest.strip_prefix(b".")?;
        }
        let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if n == 0 || n > 3 {
            return None;
        }
        *o = std::str::from_utf8(&rest[..n]).ok()?.parse().ok()?;
        rest = &rest[n..];
    }
    Some(Ipv4Addr::from(octets))
}

fn str_to_ipv6(s: &[u8]) -> Option<Ipv6Addr> {
    std::str::from_utf8(s).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_to_integer_as_haproxy() {
        // Captured from haproxy 2.6.12 with `str(<s>),add(1)`.
        for (s, n) in [
            ("12abc", 12),
            ("abc", 0),
            ("  12  ", 0),
            ("+5", 5),
            ("-7", -7),
            ("99999999999999999999", i64::MAX),
        ] {
            assert_eq!(str_to_int(s.as_bytes()), n, "{s}");
        }
    }

    #[test]
    fn casts_as_haproxy() {
        let hex = |s: Sample| match s.cast(SmpType::Bin) {
            Some(Sample::Bin(b)) => b.iter().map(|b| format!("{b:02X}")).collect::<String>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(hex(Sample::Sint(65)), "0000000000000041");
        assert_eq!(hex(Sample::Bool(true)), "0000000000000001");
        assert_eq!(hex(Sample::Ipv4(Ipv4Addr::new(1, 2, 3, 4))), "01020304");
        assert_eq!(
            Sample::Sint(3232235777).cast(SmpType::Ipv4),
            Some(Sample::Ipv4(Ipv4Addr::new(192, 168, 1, 1)))
        );
        assert_eq!(
            Sample::str(&b"1.2.3.4x"[..]).cast(SmpType::Ipv4),
            Some(Sample::Ipv4(Ipv4Addr::new(1, 2, 3, 4)))
        );
        assert_eq!(Sample::str(&b"1.2.3"[..]).cast(SmpType::Ipv4), None);
        assert_eq!(
            Sample::Ipv4(Ipv4Addr::new(1, 2, 3, 4)).cast(SmpType::Sint),
            Some(Sample::Sint(16909060))
        );
        assert!(!SmpType::Bin.casts_to(SmpType::Sint));
        assert!(SmpType::Str.casts_to(SmpType::Ipv4));
    }

    #[test]
    fn text_stops_at_nul() {
        let mut out = Vec::new();
        Sample::Bin(Cow::Borrowed(b"A\0BC")).write_text(&mut out);
        assert_eq!(out, b"A");
    }
}
