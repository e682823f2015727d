//! Converters: what a sample becomes. Each is declared once in [`CONVERTERS`]
//! with its arguments, the type it takes (the engine casts to it) and the
//! type it gives; the results match HAProxy 2.6's on the same input.

use std::borrow::Cow;
use std::net::{Ipv4Addr, Ipv6Addr};

use base64::Engine as _;

use super::arg::{Arg, ArgSpec, ArgType};
use super::fetch::Ctx;
use super::hash;
use super::value::{Sample, SmpType};

pub(crate) type ConvFn = for<'a> fn(Sample<'a>, &'a [Arg], &Ctx<'a>) -> Option<Sample<'a>>;

/// Why a converter refused its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CheckError {
    /// HAProxy refuses them too, with this message.
    Invalid(String),
    /// HAProxy takes them; sluice cannot yet (variables, for one).
    Unsupported(String),
}

pub(crate) type CheckFn = fn(&mut [Arg]) -> Result<(), CheckError>;

/// One converter keyword.
pub(crate) struct ConvDef {
    pub(crate) name: &'static str,
    pub(crate) args: ArgSpec,
    pub(crate) check: Option<CheckFn>,
    pub(crate) input: SmpType,
    pub(crate) out: SmpType,
    pub(crate) eval: ConvFn,
}

impl std::fmt::Debug for ConvDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The converter tables, one per file that declares converters.
static TABLES: &[&[ConvDef]] = &[
    CONVERTERS,
    super::jwt::CONVERTERS,
    super::aead::CONVERTERS,
    super::stick::CONVERTERS,
];

/// Every converter sluice knows.
pub(crate) fn all() -> impl Iterator<Item = &'static ConvDef> {
    TABLES.iter().flat_map(|t| t.iter())
}

pub(crate) fn find(name: &str) -> Option<&'static ConvDef> {
    all()
        .find(|c| c.name == name)
        .or_else(|| super::script::find_conv(name))
}

pub(crate) const fn def(
    name: &'static str,
    args: ArgSpec,
    input: SmpType,
    out: SmpType,
    eval: ConvFn,
) -> ConvDef {
    ConvDef {
        name,
        args,
        check: None,
        input,
        out,
        eval,
    }
}

pub(crate) const fn checked(
    name: &'static str,
    args: ArgSpec,
    check: CheckFn,
    input: SmpType,
    out: SmpType,
    eval: ConvFn,
) -> ConvDef {
    ConvDef {
        name,
        args,
        check: Some(check),
        input,
        out,
        eval,
    }
}

use ArgType as A;
use SmpType as T;

const NONE: ArgSpec = ArgSpec::NONE;
const INT: ArgSpec = ArgSpec::of(&[A::Str], 1);
const OPT_INT: ArgSpec = ArgSpec::of(&[A::Sint], 0);
const FIELD: ArgSpec = ArgSpec::of(&[A::Sint, A::Str, A::Sint], 2);

/// The converters of HAProxy's section 7.3.1, in its documentation order.
static CONVERTERS: &[ConvDef] = &[
    checked("add", INT, int_or_var, T::Sint, T::Sint, |s, a, cx| {
        arith(s, a, cx, i64::saturating_add)
    }),
    checked(
        "add_item",
        ArgSpec::of(&[A::Str, A::Str, A::Str], 2),
        item_args,
        T::Str,
        T::Str,
        |s, a, cx| {
            let item = match a.get(1) {
                Some(Arg::Var(v)) => cx.var(v).and_then(|v| v.cast(SmpType::Str)),
                _ => None,
            };
            let item = item.as_ref().and_then(Sample::bytes).unwrap_or(b"");
            let suffix = a.get(2).map_or(&b""[..], Arg::as_bytes);
            if item.is_empty() && suffix.is_empty() {
                return Some(s);
            }
            let mut out = s.bytes()?.to_vec();
            if !out.is_empty() {
                out.extend_from_slice(a[0].as_bytes());
            }
            out.extend_from_slice(item);
            out.extend_from_slice(suffix);
            Some(Sample::Str(Cow::Owned(out)))
        },
    ),
    checked("and", INT, int_or_var, T::Sint, T::Sint, |s, a, cx| {
        arith(s, a, cx, |x, y| x & y)
    }),
    def("b64dec", NONE, T::Str, T::Bin, |s, _, _| {
        b64_decode(&base64::engine::general_purpose::STANDARD, s)
    }),
    def("base64", NONE, T::Bin, T::Str, |s, _, _| {
        Some(Sample::owned_str(
            base64::engine::general_purpose::STANDARD.encode(s.bytes()?),
        ))
    }),
    checked(
        "be2dec",
        ArgSpec::of(&[A::Str, A::Sint, A::Sint], 1),
        chunk_size,
        T::Bin,
        T::Str,
        |s, a, _| {
            let (sep, size) = (a[0].as_str(), a[1].as_int() as usize);
            let trunc = a.get(2).is_some_and(|t| t.as_int() != 0);
            let b = s.bytes()?;
            let mut out = Vec::new();
            for chunk in b.chunks(size) {
                if trunc && chunk.len() < size {
                    break;
                }
                if !out.is_empty() {
                    out.extend_from_slice(sep.as_bytes());
                }
                let n = chunk.iter().fold(0u64, |n, &c| (n << 8) | c as u64);
                out.extend_from_slice(n.to_string().as_bytes());
            }
            Some(Sample::Str(Cow::Owned(out)))
        },
    ),
    checked(
        "be2hex",
        ArgSpec::of(&[A::Str, A::Sint, A::Sint], 0),
        chunk_size_opt,
        T::Bin,
        T::Str,
        |s, a, _| {
            let sep = a.first().map_or("", Arg::as_str);
            let size = a.get(1).map_or(1, |n| n.as_int().max(1)) as usize;
            let trunc = a.get(2).is_some_and(|t| t.as_int() != 0);
            let mut out = String::new();
            for chunk in s.bytes()?.chunks(size) {
                if trunc && chunk.len() < size {
                    break;
                }
                if !out.is_empty() {
                    out.push_str(sep);
                }
                for b in chunk {
                    out.push_str(&format!("{b:02X}"));
                }
            }
            Some(Sample::owned_str(out))
        },
    ),
    def("bool", NONE, T::Sint, T::Bool, |s, _, _| {
        Some(Sample::Bool(int(&s)? != 0))
    }),
    def(
        "bytes",
        ArgSpec::of(&[A::Sint, A::Sint], 1),
        T::Bin,
        T::Bin,
        |s, a, _| {
            let off = a[0].as_int().max(0) as usize;
            let bin = match s {
                Sample::Bin(b) => b,
                _ => return None,
            };
            if off > bin.len() {
                return None;
            }
            let end = match a.get(1) {
                Some(l) => (off + l.as_int().max(0) as usize).min(bin.len()),
                None => bin.len(),
            };
            Some(Sample::Bin(sub_cow(bin, off, end)))
        },
    ),
    checked(
        "concat",
        ArgSpec::of(&[A::Str, A::Str, A::Str], 0),
        concat_args,
        T::Str,
        T::Str,
        |s, a, _| {
            let mut out = s.bytes()?.to_vec();
            out.extend_from_slice(a.first().map_or(&b""[..], Arg::as_bytes));
            out.extend_from_slice(a.get(2).map_or(&b""[..], Arg::as_bytes));
            Some(Sample::Str(Cow::Owned(out)))
        },
    ),
    def("cpl", NONE, T::Sint, T::Sint, |s, _, _| {
        Some(Sample::Sint(!int(&s)?))
    }),
    def("crc32", OPT_INT, T::Bin, T::Sint, |s, a, _| {
        Some(hashed(hash::crc32(s.bytes()?), a))
    }),
    def("crc32c", OPT_INT, T::Bin, T::Sint, |s, a, _| {
        Some(hashed(hash::crc32c(s.bytes()?), a))
    }),
    def("cut_crlf", NONE, T::Str, T::Str, |s, _, _| {
        let b = s.bytes()?;
        let end = b
            .iter()
            .position(|&c| c == b'\r' || c == b'\n')
            .unwrap_or(b.len());
        Some(Sample::Str(sub_cow(text(s), 0, end)))
    }),
    checked(
        "digest",
        ArgSpec::of(&[A::Str], 1),
        digest_arg,
        T::Bin,
        T::Bin,
        |s, a, _| digest(a[0].as_str(), s.bytes()?),
    ),
    // What HAProxy writes to its debug ring is no part of what users
    // see of the sample: it goes on unchanged.
    def(
        "debug",
        ArgSpec::of(&[A::Str, A::Str], 0),
        T::Any,
        T::Any,
        |s, _, _| Some(s),
    ),
    checked("div", INT, int_or_var, T::Sint, T::Sint, |s, a, cx| {
        arith(s, a, cx, |x, y| {
            if y == 0 {
                i64::MAX
            } else {
                x.checked_div(y).unwrap_or(i64::MAX)
            }
        })
    }),
    def("djb2", OPT_INT, T::Bin, T::Sint, |s, a, _| {
        Some(hashed(hash::djb2(s.bytes()?), a))
    }),
    def("even", NONE, T::Sint, T::Bool, |s, _, _| {
        Some(Sample::Bool(int(&s)? & 1 == 0))
    }),
    checked(
        "field",
        FIELD,
        index_and_separators,
        T::Str,
        T::Str,
        |s, a, _| split_fields(s, a, false),
    ),
    def("hex", NONE, T::Bin, T::Str, |s, _, _| {
        let b = s.bytes()?;
        let mut out = String::with_capacity(b.len() * 2);
        for c in b {
            out.push_str(&format!("{c:02X}"));
        }
        Some(Sample::owned_str(out))
    }),
    def("hex2i", NONE, T::Str, T::Sint, |s, _, _| {
        let n = s
            .bytes()?
            .iter()
            .map_while(|&c| (c as char).to_digit(16))
            .fold(0i64, |n, d| n.wrapping_mul(16).wrapping_add(d as i64));
        Some(Sample::Sint(n))
    }),
    checked(
        "hmac",
        ArgSpec::of(&[A::Str, A::Str], 2),
        hmac_args,
        T::Bin,
        T::Bin,
        |s, a, _| hmac(a[0].as_str(), a[1].as_bytes(), s.bytes()?),
    ),
    def("htonl", NONE, T::Sint, T::Bin, |s, _, _| {
        Some(Sample::Bin(Cow::Owned(
            (int(&s)? as u32).to_be_bytes().to_vec(),
        )))
    }),
    checked(
        "http_date",
        ArgSpec::of(&[A::Sint, A::Str], 0),
        time_unit,
        T::Sint,
        T::Str,
        |s, a, _| {
            let offset = a.first().map_or(0, Arg::as_int);
            let (secs, frac) = split_time(int(&s)?, a.get(1).map_or("s", Arg::as_str));
            let secs = secs.saturating_add(offset);
            let mut out = crate::sys::time::strftime("%a, %d %b %Y %T", secs, false)?;
            if let Some(frac) = frac {
                out.push_str(&frac);
            }
            out.push_str(" GMT");
            Some(Sample::owned_str(out))
        },
    ),
    def(
        "iif",
        ArgSpec::of(&[A::Str, A::Str], 2),
        T::Bool,
        T::Str,
        |s, a, _| {
            let yes = matches!(s, Sample::Bool(true));
            Some(Sample::str(a[if yes { 0 } else { 1 }].as_bytes()))
        },
    ),
    // Declared to give an IPv4 address, as HAProxy declares it (its
    // result keeps its real family).
    checked(
        "ipmask",
        ArgSpec::of(&[A::Msk4, A::Msk6], 1),
        no_check,
        T::Addr,
        T::Ipv4,
        |s, a, _| {
            let m4 = mask(&a[0]);
            match s {
                Sample::Ipv4(ip) => Some(Sample::Ipv4(mask4(ip, m4))),
                Sample::Ipv6(ip) => match (a.get(1), ip.to_ipv4_mapped()) {
                    (Some(m6), _) => Some(Sample::Ipv6(mask6(ip, mask(m6)))),
                    (None, Some(v4)) => Some(Sample::Ipv4(mask4(v4, m4))),
                    (None, None) => None,
                },
                _ => None,
            }
        },
    ),
    checked(
        "json",
        ArgSpec::of(&[A::Str], 0),
        json_code,
        T::Str,
        T::Str,
        |s, a, _| {
            let code = super::json::InputCode::from_code(a.first().map_or(0, Arg::as_int));
            Some(Sample::Str(Cow::Owned(super::json::escape(
                s.bytes()?,
                code,
            )?)))
        },
    ),
    checked(
        "json_query",
        ArgSpec::of(&[A::Str, A::Str], 0),
        json_query_args,
        T::Str,
        T::Any,
        |s, a, _| super::json::query_sample(s.bytes()?, a),
    ),
    def(
        "language",
        ArgSpec::of(&[A::Str, A::Str], 1),
        T::Str,
        T::Str,
        |s, a, _| language(s.bytes()?, a),
    ),
    def("length", NONE, T::Str, T::Sint, |s, _, _| {
        Some(Sample::Sint(s.bytes()?.len() as i64))
    }),
    def("lower", NONE, T::Str, T::Str, |s, _, _| {
        Some(Sample::Str(map_bytes(text(s), |b| b.to_ascii_lowercase())))
    }),
    def(
        "ltime",
        ArgSpec::of(&[A::Str, A::Sint], 1),
        T::Sint,
        T::Str,
        |s, a, _| date(s, a, true),
    ),
    def(
        "ltrim",
        ArgSpec::of(&[A::Str], 1),
        T::Str,
        T::Str,
        |s, a, _| {
            let set = a[0].as_bytes();
            let b = s.bytes()?;
            let start = b.iter().position(|c| !set.contains(c)).unwrap_or(b.len());
            let len = b.len();
            Some(Sample::Str(sub_cow(text(s), start, len)))
        },
    ),
    checked("mod", INT, int_or_var, T::Sint, T::Sint, |s, a, cx| {
        arith(s, a, cx, |x, y| x.checked_rem(y).unwrap_or(0))
    }),
    checked("mul", INT, int_or_var, T::Sint, T::Sint, |s, a, cx| {
        arith(s, a, cx, i64::saturating_mul)
    }),
    def("neg", NONE, T::Sint, T::Sint, |s, _, _| {
        Some(Sample::Sint(int(&s)?.saturating_neg()))
    }),
    def("not", NONE, T::Sint, T::Bool, |s, _, _| {
        Some(Sample::Bool(int(&s)? == 0))
    }),
    def("odd", NONE, T::Sint, T::Bool, |s, _, _| {
        Some(Sample::Bool(int(&s)? & 1 == 1))
    }),
    checked("or", INT, int_or_var, T::Sint, T::Sint, |s, a, cx| {
        arith(s, a, cx, |x, y| x | y)
    }),
    checked(
        "regsub",
        ArgSpec::of(&[A::Str, A::Str, A::Str], 2),
        regsub_args,
        T::Str,
        T::Str,
        |s, a, _| {
            let Arg::Regex(re) = &a[0] else {
                return None;
            };
            let global = a.get(2).is_some_and(|f| f.as_str().contains('g'));
            Some(Sample::Str(Cow::Owned(regsub(
                &re.0,
                s.bytes()?,
                a[1].as_bytes(),
                global,
            ))))
        },
    ),
    def(
        "rtrim",
        ArgSpec::of(&[A::Str], 1),
        T::Str,
        T::Str,
        |s, a, _| {
            let set = a[0].as_bytes();
            let b = s.bytes()?;
            let end = b
                .iter()
                .rposition(|c| !set.contains(c))
                .map_or(0, |i| i + 1);
            Some(Sample::Str(sub_cow(text(s), 0, end)))
        },
    ),
    def("sdbm", OPT_INT, T::Bin, T::Sint, |s, a, _| {
        Some(hashed(hash::sdbm(s.bytes()?), a))
    }),
    checked(
        "set-var",
        ArgSpec::of(&[A::Str, A::Str, A::Str, A::Str, A::Str], 1),
        var_conds,
        T::Any,
        T::Any,
        |s, a, cx| {
            let Arg::Var(v) = &a[0] else { return None };
            let conds = super::vars::Conds::from_bits(a.get(1).map_or(0, Arg::as_int) as u16);
            // The sample goes on only when it was stored.
            cx.set_var(v, &s, conds).then_some(s)
        },
    ),
    checked(
        "secure_memcmp",
        ArgSpec::of(&[A::Str], 0),
        var_only,
        T::Bin,
        T::Bool,
        |s, a, cx| {
            let Some(Arg::Var(v)) = a.first() else {
                return None;
            };
            let other = cx.var(v)?.cast(SmpType::Bin)?;
            let (x, y) = (s.bytes()?, other.bytes()?);
            // Every byte is looked at whatever the others are, so the time
            // taken says nothing of where the two differ.
            let diff = x.iter().zip(y).fold(0u8, |d, (p, q)| d | (p ^ q));
            Some(Sample::Bool(x.len() == y.len() && diff == 0))
        },
    ),
    def("sha1", NONE, T::Bin, T::Bin, |s, _, _| {
        digest("sha1", s.bytes()?)
    }),
    checked("sha2", OPT_INT, sha2_bits, T::Bin, T::Bin, |s, a, _| {
        let alg = match a.first().map_or(256, Arg::as_int) {
            224 => "sha224",
            384 => "sha384",
            512 => "sha512",
            _ => "sha256",
        };
        digest(alg, s.bytes()?)
    }),
    checked(
        "strcmp",
        ArgSpec::of(&[A::Str], 0),
        var_only,
        T::Str,
        T::Sint,
        |s, a, cx| {
            let Some(Arg::Var(v)) = a.first() else {
                return None;
            };
            let other = cx.var(v)?.cast(SmpType::Str)?;
            let (x, y) = (s.bytes()?, other.bytes()?);
            // As glibc's memcmp over the common length: the difference of
            // the first bytes that differ; then the difference of lengths.
            let n = match x.iter().zip(y).find(|(p, q)| p != q) {
                Some((p, q)) => i64::from(*p) - i64::from(*q),
                None => x.len() as i64 - y.len() as i64,
            };
            Some(Sample::Sint(n))
        },
    ),
    checked("sub", INT, int_or_var, T::Sint, T::Sint, |s, a, cx| {
        arith(s, a, cx, i64::saturating_sub)
    }),
    def("ub64dec", NONE, T::Str, T::Bin, |s, _, _| {
        b64_decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, s)
    }),
    def("ub64enc", NONE, T::Bin, T::Str, |s, _, _| {
        Some(Sample::owned_str(
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s.bytes()?),
        ))
    }),
    checked(
        "unset-var",
        ArgSpec::of(&[A::Str], 1),
        var_conds,
        T::Any,
        T::Any,
        |s, a, cx| {
            let Arg::Var(v) = &a[0] else { return None };
            cx.unset_var(v);
            Some(s)
        },
    ),
    def("upper", NONE, T::Str, T::Str, |s, _, _| {
        Some(Sample::Str(map_bytes(text(s), |b| b.to_ascii_uppercase())))
    }),
    def("url_dec", OPT_INT, T::Str, T::Str, |s, a, _| {
        let plus = a.first().is_some_and(|p| p.as_int() != 0);
        Some(Sample::Str(Cow::Owned(url_decode(s.bytes()?, plus)?)))
    }),
    def(
        "url_enc",
        ArgSpec::of(&[A::Str], 0),
        T::Str,
        T::Str,
        |s, _, _| {
            let mut out = String::new();
            for &b in s.bytes()? {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    out.push(b as char);
                } else {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            Some(Sample::owned_str(out))
        },
    ),
    def(
        "utime",
        ArgSpec::of(&[A::Str, A::Sint], 1),
        T::Sint,
        T::Str,
        |s, a, _| date(s, a, false),
    ),
    checked(
        "word",
        FIELD,
        index_and_separators,
        T::Str,
        T::Str,
        |s, a, _| split_fields(s, a, true),
    ),
    def("wt6", OPT_INT, T::Bin, T::Sint, |s, a, _| {
        Some(hashed(hash::wt6(s.bytes()?), a))
    }),
    def("xxh32", OPT_INT, T::Bin, T::Sint, |s, a, _| {
        let seed = a.first().map_or(0, Arg::as_int) as u32;
        Some(Sample::Sint(
            xxhash_rust::xxh32::xxh32(s.bytes()?, seed) as i64
        ))
    }),
    def("xxh64", OPT_INT, T::Bin, T::Sint, |s, a, _| {
        let seed = a.first().map_or(0, Arg::as_int) as u64;
        Some(Sample::Sint(
            xxhash_rust::xxh64::xxh64(s.bytes()?, seed) as i64
        ))
    }),
    def("xxh3", OPT_INT, T::Bin, T::Sint, |s, a, _| {
        let seed = a.first().map_or(0, Arg::as_int) as u64;
        Some(Sample::Sint(
            xxhash_rust::xxh3::xxh3_64_with_seed(s.bytes()?, seed) as i64,
        ))
    }),
    checked("xor", INT, int_or_var, T::Sint, T::Sint, |s, a, cx| {
        arith(s, a, cx, |x, y| x ^ y)
    }),
    // ---- The stream: capture slots and the proxies' state. ----
    // `capture-req(<slot>)`, `capture-res(<slot>)`: the input goes to the
    // frontend's capture slot (for the log line), and on unchanged; no
    // sample when there is no such slot.
    def(
        "capture-req",
        ArgSpec::of(&[A::Sint], 1),
        T::Str,
        T::Str,
        |s, a, cx| capture(s, a, cx, false),
    ),
    def(
        "capture-res",
        ArgSpec::of(&[A::Sint], 1),
        T::Str,
        T::Str,
        |s, a, cx| capture(s, a, cx, true),
    ),
    // `nbsrv`: the usable servers of the backend the input names.
    def("nbsrv", NONE, T::Str, T::Sint, |s, _, cx| {
        let name = std::str::from_utf8(s.bytes()?).ok()?;
        let n = cx.proxies?.count(super::Count::UsableServers, name, None)?;
        Some(Sample::Sint(n))
    }),
    // `srv_queue`: the queue of the server the input names,
    // `<backend>/<server>` or a server of the current backend.
    def("srv_queue", NONE, T::Str, T::Sint, |s, _, cx| {
        let name = std::str::from_utf8(s.bytes()?).ok()?;
        let (be, srv) = match name.split_once('/') {
            Some((be, srv)) => (be, srv),
            None => (cx.backend?, name),
        };
        let n = cx
            .proxies?
            .count(super::Count::ServerQueue, be, Some(srv))?;
        Some(Sample::Sint(n))
    }),
    // ---- Maps: `map_<match>[_int|_ip](<file>[,<default>])`, the file
    // read when the configuration is (sample::pattern::Map), and
    // `map_regm`. The HAProxy 2.6 binary has neither the `_str` forms its
    // manual names nor `map_len` (`haproxy -dKcnv` lists its converters):
    // sluice neither. ----
    checked("map", MAP_ARGS, map_check::<0, 0>, T::Str, T::Str, map_eval),
    checked(
        "map_str",
        MAP_ARGS,
        map_check::<0, 0>,
        T::Str,
        T::Str,
        map_eval,
    ),
    checked(
        "map_str_int",
        MAP_ARGS,
        map_check::<0, 2>,
        T::Str,
        T::Sint,
        map_eval,
    ),
    checked(
        "map_str_ip",
        MAP_ARGS,
        map_check::<0, 3>,
        T::Str,
        T::Addr,
        map_eval,
    ),
    checked(
        "map_beg",
        MAP_ARGS,
        map_check::<1, 0>,
        T::Str,
        T::Str,
        map_eval,
    ),
    checked(
        "map_beg_int",
        MAP_ARGS,
        map_check::<1, 2>,
        T::Str,
        T::Sint,
        map_eval,
    ),
    checked(
        "map_beg_ip",
        MAP_ARGS,
        map_check::<1, 3>,
        T::Str,
        T::Addr,
        map_eval,
    ),
    checked(
        "map_dir",
        MAP_ARGS,
        map_check::<2, 0>,
        T::Str,
        T::Str,
        map_eval,
    ),
    checked(
        "map_dir_int",
        MAP_ARGS,
        map_check::<2, 2>,
        T::Str,
        T::Sint,
        map_eval,
    ),
    checked(
        "map_dir_ip",
        MAP_ARGS,
        map_check::<2, 3>,
        T::Str,
        T::Addr,
        map_eval,
    ),
    checked(
        "map_dom",
        MAP_ARGS,
        map_check::<3, 0>,
        T::Str,
        T::Str,
        map_eval,
    ),
    checked(
        "map_dom_int",
        MAP_ARGS,
        map_check::<3, 2>,
        T::Str,
        T::Sint,
        map_eval,
    ),
    checked(
        "map_dom_ip",
        MAP_ARGS,
        map_check::<3, 3>,
        T::Str,
        T::Addr,
        map_eval,
    ),
    checked(
        "map_end",
        MAP_ARGS,
        map_check::<4, 0>,
        T::Str,
        T::Str,
        map_eval,
    ),
    checked(
        "map_end_int",
        MAP_ARGS,
        map_check::<4, 2>,
        T::Str,
        T::Sint,
        map_eval,
    ),
    checked(
        "map_end_ip",
        MAP_ARGS,
        map_check::<4, 3>,
        T::Str,
        T::Addr,
        map_eval,
    ),
    checked(
        "map_int",
        MAP_ARGS,
        map_check::<5, 0>,
        T::Sint,
        T::Str,
        map_eval,
    ),
    checked(
        "map_int_int",
        MAP_ARGS,
        map_check::<5, 2>,
        T::Sint,
        T::Sint,
        map_eval,
    ),
    checked(
        "map_int_ip",
        MAP_ARGS,
        map_check::<5, 3>,
        T::Sint,
        T::Addr,
        map_eval,
    ),
    checked(
        "map_ip",
        MAP_ARGS,
        map_check::<6, 0>,
        T::Addr,
        T::Str,
        map_eval,
    ),
    checked(
        "map_ip_int",
        MAP_ARGS,
        map_check::<6, 2>,
        T::Addr,
        T::Sint,
        map_eval,
    ),
    checked(
        "map_ip_ip",
        MAP_ARGS,
        map_check::<6, 3>,
        T::Addr,
        T::Addr,
        map_eval,
    ),
    checked(
        "map_reg",
        MAP_ARGS,
        map_check::<8, 0>,
        T::Str,
        T::Str,
        map_eval,
    ),
    checked(
        "map_reg_int",
        MAP_ARGS,
        map_check::<8, 2>,
        T::Str,
        T::Sint,
        map_eval,
    ),
    checked(
        "map_reg_ip",
        MAP_ARGS,
        map_check::<8, 3>,
        T::Str,
        T::Addr,
        map_eval,
    ),
    // The values' `\<n>` are the groups of the regex that matched.
    checked(
        "map_regm",
        MAP_ARGS,
        map_regm_check,
        T::Str,
        T::Str,
        map_eval,
    ),
    checked(
        "map_sub",
        MAP_ARGS,
        map_check::<9, 0>,
        T::Str,
        T::Str,
        map_eval,
    ),
    checked(
        "map_sub_int",
        MAP_ARGS,
        map_check::<9, 2>,
        T::Str,
        T::Sint,
        map_eval,
    ),
    checked(
        "map_sub_ip",
        MAP_ARGS,
        map_check::<9, 3>,
        T::Str,
        T::Addr,
        map_eval,
    ),
];

/// `capture-req` and `capture-res`: the input, once put in its slot.
fn capture<'a>(s: Sample<'a>, a: &[Arg], cx: &Ctx<'_>, res: bool) -> Option<Sample<'a>> {
    let slot = a.first()?.as_int();
    cx.vars?.capture(res, slot, s.bytes()?).then_some(s)
}

/// `b64dec` and `ub64dec`: no sample when the text is not base64.
fn b64_decode<'a>(engine: &impl base64::Engine, s: Sample<'a>) -> Option<Sample<'a>> {
    let out = engine.decode(s.bytes()?).ok()?;
    Some(Sample::Bin(Cow::Owned(out)))
}

fn int(s: &Sample<'_>) -> Option<i64> {
    match s {
        Sample::Sint(n) => Some(*n),
        Sample::Bool(b) => Some(*b as i64),
        _ => None,
    }
}

/// An arithmetic converter: its argument is an integer or a variable (cast
/// to an integer; no sample when it is unset or cannot be).
fn arith<'a>(
    s: Sample<'a>,
    a: &[Arg],
    cx: &Ctx<'_>,
    op: fn(i64, i64) -> i64,
) -> Option<Sample<'a>> {
    let y = match a.first()? {
        Arg::Var(v) => match cx.var(v)?.cast(SmpType::Sint)? {
            Sample::Sint(n) => n,
            _ => return None,
        },
        n => n.as_int(),
    };
    Some(Sample::Sint(op(int(&s)?, y)))
}

/// The text of a string-like sample, keeping its borrow.
fn text(s: Sample<'_>) -> Cow<'_, [u8]> {
    match s {
        Sample::Str(b) | Sample::Bin(b) | Sample::Meth(b) => b,
        _ => Cow::Borrowed(b""),
    }
}

fn sub_cow(c: Cow<'_, [u8]>, start: usize, end: usize) -> Cow<'_, [u8]> {
    match c {
        Cow::Borrowed(b) => Cow::Borrowed(&b[start..end]),
        Cow::Owned(mut v) => {
            v.truncate(end);
            v.drain(..start);
            Cow::Owned(v)
        }
    }
}

/// Copies only when a byte changes.
fn map_bytes(c: Cow<'_, [u8]>, f: fn(u8) -> u8) -> Cow<'_, [u8]> {
    if c.iter().all(|&b| f(b) == b) {
        return c;
    }
    Cow::Owned(c.iter().map(|&b| f(b)).collect())
}

/// A hash as an integer sample; a non-zero argument asks for HAProxy's
/// avalanche of the hash.
fn hashed(h: u32, a: &[Arg]) -> Sample<'static> {
    let h = if a.first().is_some_and(|x| x.as_int() != 0) {
        hash::full_hash(h)
    } else {
        h
    };
    Sample::Sint(h as i64)
}

fn digest<'a>(alg: &str, data: &[u8]) -> Option<Sample<'a>> {
    use sha2::Digest as _;
    let out = match alg {
        "md5" => md5::Md5::digest(data).to_vec(),
        "sha1" => sha1::Sha1::digest(data).to_vec(),
        "sha224" => sha2::Sha224::digest(data).to_vec(),
        "sha256" => sha2::Sha256::digest(data).to_vec(),
        "sha384" => sha2::Sha384::digest(data).to_vec(),
        "sha512" => sha2::Sha512::digest(data).to_vec(),
        _ => return None,
    };
    Some(Sample::Bin(Cow::Owned(out)))
}

fn hmac<'a>(alg: &str, key: &[u8], data: &[u8]) -> Option<Sample<'a>> {
    use hmac::{Hmac, Mac as _};
    macro_rules! sign {
        ($d:ty) => {{
            let mut mac = Hmac::<$d>::new_from_slice(key).ok()?;
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }};
    }
    let out = match alg {
        "md5" => sign!(md5::Md5),
        "sha1" => sign!(sha1::Sha1),
        "sha224" => sign!(sha2::Sha224),
        "sha256" => sign!(sha2::Sha256),
        "sha384" => sign!(sha2::Sha384),
        "sha512" => sign!(sha2::Sha512),
        _ => return None,
    };
    Some(Sample::Bin(Cow::Owned(out)))
}

fn mask(a: &Arg) -> u8 {
    match a {
        Arg::Mask(m) => *m,
        _ => 0,
    }
}

fn mask4(ip: Ipv4Addr, bits: u8) -> Ipv4Addr {
    let m = if bits == 0 {
        0
    } else {
        u32::MAX << (32 - bits as u32)
    };
    Ipv4Addr::from(u32::from(ip) & m)
}

fn mask6(ip: Ipv6Addr, bits: u8) -> Ipv6Addr {
    let m = if bits == 0 {
        0
    } else {
        u128::MAX << (128 - bits as u32)
    };
    Ipv6Addr::from(u128::from(ip) & m)
}

/// `field` and `word`: the `count` fields from `index` (1-based; negative
/// counts from the end; a count of 0 runs to the end). Words skip empty
/// fields.
fn split_fields<'a>(s: Sample<'a>, a: &[Arg], words: bool) -> Option<Sample<'a>> {
    let idx = a[0].as_int();
    let delims = a[1].as_bytes();
    let count = a.get(2).map_or(1, Arg::as_int);
    let text = text(s);
    // The fields, walked twice (counted, then found) rather than
    // collected: a field of the input is a slice of it, nothing
    // allocated; `word` skips the empty ones.
    let fields = || {
        text.split(|b| delims.contains(b))
            .filter(move |f| !words || !f.is_empty())
    };
    let n = fields().count() as i64;
    let (first, last) = if idx > 0 {
        let first = idx - 1;
        let last = if count == 0 { n - 1 } else { first + count - 1 };
        (first, last.min(n - 1))
    } else {
        let last = n + idx;
        let first = if count == 0 { 0 } else { last - count + 1 };
        (first.max(0), last)
    };
    if first < 0 || first >= n || last < first {
        return None;
    }
    let start = fields().nth(first as usize)?;
    let end = fields().nth(last as usize)?;
    // Their places in `text`, from where the slices are.
    let base = text.as_ptr() as usize;
    let s = start.as_ptr() as usize - base;
    let e = end.as_ptr() as usize - base + end.len();
    Some(Sample::Str(sub_cow(text, s, e)))
}

/// `%XX` sequences decoded (and `+` as a space when `plus`); None for a
/// `%` not followed by two hex digits.
pub(crate) fn url_decode(b: &[u8], plus: bool) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = b.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

/// `ltime(<format>[,<offset>])` (local time) and `utime` (UTC): the
/// integer date plus the offset, formatted by `strftime`.
fn date<'a>(s: Sample<'a>, a: &[Arg], local: bool) -> Option<Sample<'a>> {
    let secs = int(&s)?.saturating_add(a.get(1).map_or(0, Arg::as_int));
    let text = crate::sys::time::strftime(a[0].as_str(), secs, local)?;
    Some(Sample::owned_str(text))
}

/// Splits an integer date in `unit` into seconds and the fraction HAProxy
/// prints after them.
fn split_time(n: i64, unit: &str) -> (i64, Option<String>) {
    match unit {
        // HAProxy prints the fraction without leading zeros.
        "ms" => (n.div_euclid(1000), Some(format!(".{}", n.rem_euclid(1000)))),
        "us" => (
            n.div_euclid(1_000_000),
            Some(format!(".{}", n.rem_euclid(1_000_000))),
        ),
        _ => (n, None),
    }
}

// Argument checks: HAProxy's messages after "invalid args in converter".

fn no_check(_: &mut [Arg]) -> Result<(), CheckError> {
    Ok(())
}

/// `add(<value>)` and the other arithmetic: an integer, or a variable.
fn int_or_var(a: &mut [Arg]) -> Result<(), CheckError> {
    let text = a[0].as_str().to_string();
    // `add()`: HAProxy takes the empty operand for 0.
    if text.is_empty() {
        a[0] = Arg::Sint(0);
        return Ok(());
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(&text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        a[0] = Arg::Sint(super::value::str_to_int(text.as_bytes()));
        return Ok(());
    }
    if let Ok(v) = super::vars::VarName::parse(&text) {
        declare(&v);
        a[0] = Arg::Var(v);
        return Ok(());
    }
    Err(CheckError::Invalid(
        "expects an integer or a variable name".to_string(),
    ))
}

/// A `proc` variable named by the configuration exists from then on.
fn declare(v: &super::vars::VarName) {
    if v.scope == super::vars::Scope::Proc {
        super::vars::declare_proc(&v.name);
    }
}

/// `strcmp(<var>)`, `secure_memcmp(<var>)`: a variable name.
fn var_only(a: &mut [Arg]) -> Result<(), CheckError> {
    let Some(first) = a.first_mut().filter(|f| !f.as_str().is_empty()) else {
        return Err(CheckError::Invalid("missing variable name".to_string()));
    };
    *first = Arg::Var(registered(first.as_str())?);
    Ok(())
}

/// A variable a converter reads, with HAProxy's message when the name is
/// not one.
pub(crate) fn registered(name: &str) -> Result<super::vars::VarName, CheckError> {
    let v = super::vars::VarName::parse(name)
        .map_err(|_| CheckError::Invalid(format!("failed to register variable name '{name}'")))?;
    declare(&v);
    Ok(v)
}

/// `add_item(<delim>,[<var>][,<suffix>])`: the variable may be left empty.
fn item_args(a: &mut [Arg]) -> Result<(), CheckError> {
    let suffix = a.get(2).map_or("", Arg::as_str);
    match a.get(1).map(Arg::as_str).filter(|n| !n.is_empty()) {
        Some(name) => a[1] = Arg::Var(registered(name)?),
        None if suffix.is_empty() => {
            return Err(CheckError::Invalid(
                "one of the optional arguments has to be nonempty".to_string(),
            ));
        }
        None => {}
    }
    Ok(())
}

/// `json([<input-code>])`: the code, parsed once, travels as a number.
fn json_code(a: &mut [Arg]) -> Result<(), CheckError> {
    let text = a.first().map_or("", Arg::as_str);
    let code = super::json::InputCode::parse(text).ok_or_else(|| {
        CheckError::Invalid(
            "Unexpected input code type. Allowed value are 'ascii', 'utf8', 'utf8s', 'utf8p' and 'utf8ps'"
                .to_string(),
        )
    })?;
    if let Some(first) = a.first_mut() {
        *first = Arg::Sint(code.code());
    }
    Ok(())
}

/// `json_query(<path>[,int])`.
fn json_query_args(a: &mut [Arg]) -> Result<(), CheckError> {
    if a.first().is_none_or(|p| p.as_str().is_empty()) {
        return Err(CheckError::Invalid(
            "json_path must not be empty".to_string(),
        ));
    }
    match a.get(1).map(Arg::as_str) {
        None | Some("int") => Ok(()),
        Some(_) => Err(CheckError::Invalid(
            "output_type only supports \"int\" as argument".to_string(),
        )),
    }
}

/// `set-var(<name>[,<cond>...])`, `unset-var(<name>)`.
fn var_conds(a: &mut [Arg]) -> Result<(), CheckError> {
    let v = super::vars::VarName::parse(a[0].as_str()).map_err(CheckError::Invalid)?;
    let mut conds = super::vars::Conds::default();
    for c in &a[1..] {
        conds.add(c.as_str()).map_err(CheckError::Invalid)?;
    }
    declare(&v);
    a[0] = Arg::Var(v);
    // The conditions, parsed once, travel as one number.
    if a.len() > 1 {
        a[1] = Arg::Sint(i64::from(conds.bits()));
    }
    Ok(())
}

/// `language(<list>[,<default>])`: of the Accept-Language values that are
/// in the list (a value or its base language before `-`), the first of
/// highest q; `*` stands for the default.
fn language<'a>(header: &[u8], a: &'a [Arg]) -> Option<Sample<'a>> {
    let list = a[0].as_bytes();
    let default = a.get(1).map(Arg::as_bytes).filter(|d| !d.is_empty());
    let mut best: Option<(u32, &'a [u8])> = None;
    for item in header.split(|&b| b == b',') {
        let mut parts = item.split(|&b| b == b';');
        let lang = parts.next().map_or(&b""[..], |l| l.trim_ascii());
        let mut q = 1000;
        for p in parts {
            if let Some(v) = p.trim_ascii().strip_prefix(b"q=") {
                q = qvalue(v.trim_ascii());
            }
        }
        if q == 0 || best.is_some_and(|(b, _)| q <= b) || lang.is_empty() {
            continue;
        }
        let found = if lang == b"*" {
            default
        } else {
            let mut all = list.split(|&b| b == b';');
            all.clone().find(|l| *l == lang).or_else(|| {
                let base = lang.split(|&b| b == b'-').next().unwrap_or(lang);
                all.find(|l| *l == base)
            })
        };
        if let Some(f) = found {
            best = Some((q, f));
        }
    }
    let out = best.map(|(_, f)| f).or(default)?;
    Some(Sample::Str(Cow::Borrowed(out)))
}

/// A q-value in thousandths (`1`, `0.5`, `0.125`), at most 1000.
fn qvalue(v: &[u8]) -> u32 {
    let (int, frac) = match v.iter().position(|&b| b == b'.') {
        Some(dot) => (&v[..dot], &v[dot + 1..]),
        None => (v, &b""[..]),
    };
    let whole = int
        .first()
        .map_or(0, |d| u32::from(d.wrapping_sub(b'0')).min(1));
    let mut milli = 0;
    let mut scale = 100;
    for &d in frac.iter().take(3).take_while(|d| d.is_ascii_digit()) {
        milli += u32::from(d - b'0') * scale;
        scale /= 10;
    }
    (whole * 1000 + milli).min(1000)
}

/// `<scope>.<name>`, the scopes HAProxy 2.6 has.
pub(crate) fn var_name(text: &str) -> bool {
    match text.split_once('.') {
        Some((scope, name)) => {
            matches!(scope, "proc" | "sess" | "txn" | "req" | "res" | "check")
                && !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_')
        }
        None => false,
    }
}

fn field_args(a: &mut [Arg]) -> Result<(), CheckError> {
    if a[0].as_int() == 0 {
        return Err(CheckError::Invalid(format!(
            "Unexpected value {} for index",
            a[0].as_int()
        )));
    }
    Ok(())
}

/// `field` and `word`: a non-zero index and some separators.
fn index_and_separators(a: &mut [Arg]) -> Result<(), CheckError> {
    field_args(a)?;
    if a[1].as_str().is_empty() {
        return Err(CheckError::Invalid("Empty separators list".to_string()));
    }
    Ok(())
}

/// `be2dec(<separator>,<chunk_size>[,<truncate>])`: HAProxy takes a
/// missing size for 0, and refuses it.
fn chunk_size(a: &mut [Arg]) -> Result<(), CheckError> {
    let n = a.get(1).map_or(0, Arg::as_int);
    if !(1..=8).contains(&n) {
        return Err(CheckError::Invalid(format!(
            "chunk_size out of [1..8] range ({n})"
        )));
    }
    Ok(())
}

fn chunk_size_opt(a: &mut [Arg]) -> Result<(), CheckError> {
    if a.len() > 1 && a[1].as_int() < 1 {
        return Err(CheckError::Invalid(format!(
            "chunk_size needs to be positive ({})",
            a[1].as_int()
        )));
    }
    Ok(())
}

fn concat_args(a: &mut [Arg]) -> Result<(), CheckError> {
    if a.get(1).is_some_and(|v| !v.as_str().is_empty()) {
        return Err(CheckError::Unsupported(format!(
            "variable '{}' in 'concat'",
            a[1].as_str()
        )));
    }
    Ok(())
}

fn digest_arg(a: &mut [Arg]) -> Result<(), CheckError> {
    match a[0].as_str() {
        "md5" | "sha1" | "sha224" | "sha256" | "sha384" | "sha512" => Ok(()),
        _ => Err(CheckError::Invalid(
            "algorithm must be a valid OpenSSL message digest name.".to_string(),
        )),
    }
}

fn hmac_args(a: &mut [Arg]) -> Result<(), CheckError> {
    if !matches!(
        a[0].as_str(),
        "md5" | "sha1" | "sha224" | "sha256" | "sha384" | "sha512"
    ) {
        return Err(CheckError::Invalid(
            "algorithm must be a valid OpenSSL message digest name.".to_string(),
        ));
    }
    let key = a[1].as_str();
    if var_name(key) {
        return Err(CheckError::Unsupported(format!(
            "variable '{key}' in 'hmac'"
        )));
    }
    match base64::engine::general_purpose::STANDARD.decode(key) {
        Ok(k) => {
            a[1] = Arg::Bin(k);
            Ok(())
        }
        Err(_) => Err(CheckError::Invalid(
            "failed to parse key : argument needs to be base64 encoded, and can either be a string or a variable".to_string(),
        )),
    }
}

fn regsub_args(a: &mut [Arg]) -> Result<(), CheckError> {
    let flags = a.get(2).map_or("", Arg::as_str).to_string();
    let pattern = a[0].as_str();
    let re = regex::bytes::RegexBuilder::new(pattern)
        .case_insensitive(flags.contains('i'))
        .build()
        .map_err(|e| CheckError::Invalid(format!("regex '{pattern}' is invalid ({e})")))?;
    a[0] = Arg::Regex(super::arg::Regex(re));
    Ok(())
}

fn sha2_bits(a: &mut [Arg]) -> Result<(), CheckError> {
    match a.first().map_or(256, Arg::as_int) {
        224 | 256 | 384 | 512 => Ok(()),
        n => Err(CheckError::Invalid(format!(
            "Unsupported number of bits: '{n}'"
        ))),
    }
}

fn time_unit(a: &mut [Arg]) -> Result<(), CheckError> {
    match a.get(1).map_or("s", Arg::as_str) {
        "s" | "ms" | "us" => Ok(()),
        other => Err(CheckError::Invalid(format!(
            "expects 's', 'ms' or 'us', got '{other}'"
        ))),
    }
}

/// Replaces the first match of `re` in `input` (every match when
/// `global`) with `with`, where `\1`..`\9` stand for the groups.
fn regsub(re: &regex::bytes::Regex, input: &[u8], with: &[u8], global: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    let mut last = 0;
    for caps in re.captures_iter(input) {
        let Some(m) = caps.get(0) else { continue };
        out.extend_from_slice(&input[last..m.start()]);
        let mut i = 0;
        while i < with.len() {
            match (with[i], with.get(i + 1)) {
                (b'\\', Some(d)) if d.is_ascii_digit() => {
                    if let Some(g) = caps.get((d - b'0') as usize) {
                        out.extend_from_slice(g.as_bytes());
                    }
                    i += 2;
                }
                (c, _) => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        last = m.end();
        if !global {
            break;
        }
    }
    out.extend_from_slice(&input[last..]);
    out
}

/// `map_*(<file>[,<default>])`.
const MAP_ARGS: ArgSpec = ArgSpec::of(&[A::Str, A::Str], 0);

/// Loads the map file of a `map_*` converter: matcher `K` (in the order
/// of [`MAP_KINDS`]), output `O` (str, str, int, ip).
fn map_check<const K: usize, const O: usize>(a: &mut [Arg]) -> Result<(), CheckError> {
    map_user::<K, O>(a, false)
}

/// `map_regm`: the `reg` matcher, its values expanded with the groups.
fn map_regm_check(a: &mut [Arg]) -> Result<(), CheckError> {
    map_user::<8, 0>(a, true)
}

fn map_user<const K: usize, const O: usize>(a: &mut [Arg], regm: bool) -> Result<(), CheckError> {
    use super::pattern::{Map, MatchKind as M};
    const MAP_KINDS: [M; 10] = [
        M::Str,
        M::Beg,
        M::Dir,
        M::Dom,
        M::End,
        M::Int,
        M::Ip,
        M::Len,
        M::Reg,
        M::Sub,
    ];
    let out = [T::Str, T::Str, T::Sint, T::Addr][O];
    let path = a.first().map_or("", Arg::as_str).to_string();
    let default = a.get(1).map(|d| d.as_str().to_string());
    let map = super::patref::file_user(
        &path,
        super::patref::MAP,
        true,
        || {
            let m = Map::load(&path, MAP_KINDS[K], out, default.as_deref())?;
            Ok(if regm { m.with_groups() } else { m })
        },
        |m| m.looks_up(MAP_KINDS[K], out, default.as_deref()) && m.is_regm() == regm,
    )
    .map_err(CheckError::Invalid)?;
    match a.first_mut() {
        Some(slot) => *slot = Arg::Map(map),
        // No file named: `Map::load` has refused the empty path.
        None => return Err(CheckError::Invalid("failed to open pattern file <>".into())),
    }
    Ok(())
}

fn map_eval<'a>(s: Sample<'a>, a: &'a [Arg], _: &Ctx<'a>) -> Option<Sample<'a>> {
    match a.first()? {
        Arg::Map(m) => m.lookup(s),
        _ => None,
    }
}
