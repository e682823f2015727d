//! Sample fetches: where a sample comes from. Each fetch is declared once
//! here (name, arguments, output type), and every place
//! that takes a sample (ACLs, rules, log formats, balancing) looks it up
//! in [`FETCHES`].

use std::borrow::Cow;
use std::net::{IpAddr, SocketAddr};

use super::arg::{Arg, ArgSpec, ArgType};
use super::value::{Sample, SmpType};
use crate::wire::h1::Head;

/// What a request or connection offers the fetches at the point an
/// expression is evaluated. Fields a stage does not have yet are `None`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Ctx<'a> {
    /// The client's address (after a PROXY header, the one it names).
    pub(crate) src: Option<IpAddr>,
    pub(crate) src_port: Option<u16>,
    /// The address the client connected to.
    pub(crate) local: Option<SocketAddr>,
    pub(crate) req: Option<&'a Head>,
    pub(crate) res: Option<&'a Head>,
    pub(crate) frontend: &'a str,
    /// The stream's backend: the frontend itself until one is chosen, as
    /// HAProxy's `be_name` and `%b` say.
    pub(crate) backend: Option<&'a str>,
    pub(crate) server: Option<&'a str>,
    /// The status of the response (also the one sluice answers itself).
    pub(crate) status: Option<u16>,
    /// The client connection's TLS (None: cleartext).
    pub(crate) tls: Option<&'a crate::tls::TlsFacts>,
    /// The request bytes buffered before any protocol parsing (`mode tcp`
    /// content inspection); None where there is no such buffer (HTTP),
    /// and the layer 6 fetches then give nothing, as HAProxy's do there.
    pub(crate) payload: Option<&'a [u8]>,
}

/// Turns a fetch's parsed arguments into their final form, or refuses them.
pub(crate) type FetchCheck = fn(&mut [Arg]) -> Result<(), String>;

pub(crate) type FetchFn = for<'a> fn(&'a [Arg], &Ctx<'a>) -> Option<Sample<'a>>;

/// A fetch that can give several values (every occurrence of a header):
/// calls `f` on each in order until it returns true, and says whether one
/// did. ACLs use it (HAProxy's "not last" iteration), without collecting.
pub(crate) type EachFn =
    for<'a> fn(&'a [Arg], &Ctx<'a>, &mut dyn FnMut(Sample<'a>) -> bool) -> bool;

/// One fetch keyword.
pub(crate) struct FetchDef {
    pub(crate) name: &'static str,
    pub(crate) args: ArgSpec,
    /// Turns the parsed arguments into their final form (or refuses them
    /// with the message HAProxy gives after "invalid args in fetch method").
    pub(crate) check: Option<FetchCheck>,
    pub(crate) out: SmpType,
    pub(crate) eval: FetchFn,
    /// Every value, for a fetch that can have several; `eval` gives the
    /// one a log format or rule takes.
    pub(crate) each: Option<EachFn>,
}

impl std::fmt::Debug for FetchDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

pub(crate) fn find(name: &str) -> Option<&'static FetchDef> {
    FETCHES.iter().find(|f| f.name == name)
}

const fn def(name: &'static str, args: ArgSpec, out: SmpType, eval: FetchFn) -> FetchDef {
    FetchDef {
        name,
        args,
        check: None,
        out,
        eval,
        each: None,
    }
}

use ArgType as A;
use SmpType as T;

const STR: ArgSpec = ArgSpec::of(&[A::Str], 1);
const OPT_STR: ArgSpec = ArgSpec::of(&[A::Str], 0);
const HDR: ArgSpec = ArgSpec::of(&[A::Str, A::Sint], 0);

/// Every fetch sluice knows, in HAProxy's documentation order.
pub(crate) static FETCHES: &[FetchDef] = &[
    // 7.3.2 Internal states: constants.
    FetchDef {
        check: Some(hex_arg),
        ..def("bin", STR, T::Bin, |a, _| {
            Some(Sample::Bin(Cow::Borrowed(a[0].as_bytes())))
        })
    },
    def("bool", ArgSpec::of(&[A::Sint], 1), T::Bool, |a, _| {
        Some(Sample::Bool(a[0].as_int() != 0))
    }),
    def("int", ArgSpec::of(&[A::Sint], 1), T::Sint, |a, _| {
        Some(Sample::Sint(a[0].as_int()))
    }),
    def(
        "ipv4",
        ArgSpec::of(&[A::Ipv4], 1),
        T::Ipv4,
        |a, _| match a[0] {
            Arg::Ipv4(ip) => Some(Sample::Ipv4(ip)),
            _ => None,
        },
    ),
    def(
        "ipv6",
        ArgSpec::of(&[A::Ipv6], 1),
        T::Ipv6,
        |a, _| match a[0] {
            Arg::Ipv6(ip) => Some(Sample::Ipv6(ip)),
            _ => None,
        },
    ),
    FetchDef {
        check: Some(method_arg),
        ..def("meth", STR, T::Meth, |a, _| {
            Some(Sample::Meth(Cow::Borrowed(a[0].as_str().as_bytes())))
        })
    },
    def("str", STR, T::Str, |a, _| {
        Some(Sample::str(a[0].as_str().as_bytes()))
    }),
    // `capture.req.hdr(<n>)`, `capture.res.hdr(<n>)`: the values of the
    // `capture request|response header` lines reach the log as `%hr`/`%hs`
    // only; these fetches find nothing yet, as before the sample engine.
    def(
        "capture.req.hdr",
        ArgSpec::of(&[A::Sint], 1),
        T::Str,
        |_, _| None,
    ),
    def(
        "capture.res.hdr",
        ArgSpec::of(&[A::Sint], 1),
        T::Str,
        |_, _| None,
    ),
    def("be_name", ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(cx.backend.unwrap_or(cx.frontend).as_bytes()))
    }),
    def("fe_name", ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(cx.frontend.as_bytes()))
    }),
    def("srv_name", ArgSpec::NONE, T::Str, |_, cx| {
        cx.server.map(|s| Sample::str(s.as_bytes()))
    }),
    // 7.3.3 Layer 4.
    def("dst", ArgSpec::NONE, T::Ipv4, |_, cx| {
        cx.local.map(|a| ip(a.ip()))
    }),
    def("dst_port", ArgSpec::NONE, T::Sint, |_, cx| {
        cx.local.map(|a| Sample::Sint(a.port() as i64))
    }),
    def("src", ArgSpec::NONE, T::Ipv4, |_, cx| cx.src.map(ip)),
    def("src_port", ArgSpec::NONE, T::Sint, |_, cx| {
        cx.src_port.map(|p| Sample::Sint(p as i64))
    }),
    // 7.3.6 HTTP.
    def("base", ArgSpec::NONE, T::Str, |_, cx| {
        let req = cx.req?;
        let mut out = last_value(req, "host")?.to_vec();
        out.extend_from_slice(path_of(req.target()));
        Some(Sample::Str(Cow::Owned(out)))
    }),
    FetchDef {
        each: Some(|a, cx, f| cx.req.is_some_and(|h| each_header(h, a, true, f))),
        ..def("hdr", HDR, T::Str, |a, cx| header(cx.req?, a, true))
    },
    def("method", ArgSpec::NONE, T::Meth, |_, cx| {
        Some(Sample::Meth(Cow::Borrowed(cx.req?.method())))
    }),
    def("path", ArgSpec::NONE, T::Str, |_, cx| {
        let t = cx.req?.target();
        // `*` (OPTIONS) and other targets without a slash have no path.
        if !t.contains(&b'/') {
            return None;
        }
        Some(Sample::str(path_of(t)))
    }),
    def("query", ArgSpec::NONE, T::Str, |_, cx| {
        let t = cx.req?.target();
        let rest = &t[path_end(t)..];
        let q = rest.strip_prefix(b"?")?;
        Some(Sample::str(q.split(|&b| b == b'#').next().unwrap_or(q)))
    }),
    FetchDef {
        each: Some(|a, cx, f| cx.req.is_some_and(|h| each_header(h, a, false, f))),
        ..def("req.fhdr", HDR, T::Str, |a, cx| header(cx.req?, a, false))
    },
    FetchDef {
        each: Some(|a, cx, f| cx.req.is_some_and(|h| each_header(h, a, true, f))),
        ..def("req.hdr", HDR, T::Str, |a, cx| header(cx.req?, a, true))
    },
    def("req.hdr_cnt", OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(count(cx.req?, a, true)))
    }),
    def("req.fhdr_cnt", OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(count(cx.req?, a, false)))
    }),
    def("req.ver", ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(version(cx.req?)))
    }),
    def("req_ver", ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(version(cx.req?)))
    }),
    FetchDef {
        each: Some(|a, cx, f| cx.res.is_some_and(|h| each_header(h, a, true, f))),
        ..def("res.hdr", HDR, T::Str, |a, cx| header(cx.res?, a, true))
    },
    FetchDef {
        each: Some(|a, cx, f| cx.res.is_some_and(|h| each_header(h, a, false, f))),
        ..def("res.fhdr", HDR, T::Str, |a, cx| header(cx.res?, a, false))
    },
    def("res.hdr_cnt", OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(count(cx.res?, a, true)))
    }),
    def("status", ArgSpec::NONE, T::Sint, |_, cx| {
        cx.status.map(|s| Sample::Sint(s as i64))
    }),
    def("url", ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(cx.req?.target()))
    }),
    // ---- Fetches the ACL engine moved here (layer 5/6 content inspection,
    // TLS facts, constants and the legacy ACL-only names). Kept in one
    // block apart from the others. ----
    def("always_false", ArgSpec::NONE, T::Bool, |_, _| {
        Some(Sample::Bool(false))
    }),
    def("always_true", ArgSpec::NONE, T::Bool, |_, _| {
        Some(Sample::Bool(true))
    }),
    // `hdr_cnt`, `hdr_val`: HAProxy's older names of `req.hdr_cnt` and of
    // a header's value as an integer.
    def("hdr_cnt", OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(count(cx.req?, a, true)))
    }),
    FetchDef {
        each: Some(|a, cx, f| {
            cx.req.is_some_and(|h| {
                each_header(h, a, true, &mut |s| s.cast(T::Sint).is_some_and(&mut *f))
            })
        }),
        ..def("hdr_val", HDR, T::Sint, |a, cx| {
            header(cx.req?, a, true)?.cast(T::Sint)
        })
    },
    def("req.len", ArgSpec::NONE, T::Sint, |_, cx| req_len(cx)),
    def("req_len", ArgSpec::NONE, T::Sint, |_, cx| req_len(cx)),
    def(
        "req.payload",
        ArgSpec::of(&[A::Sint, A::Sint], 2),
        T::Bin,
        |a, cx| payload(cx.payload?, a[0].as_int(), a[1].as_int()),
    ),
    def(
        "req.payload_lv",
        ArgSpec::of(&[A::Sint, A::Sint, A::Sint], 2),
        T::Bin,
        |a, cx| payload_lv(cx.payload?, a),
    ),
    def("req.proto_http", ArgSpec::NONE, T::Bool, |_, cx| {
        Some(Sample::Bool(cx.req.is_some()))
    }),
    def("req_proto_http", ArgSpec::NONE, T::Bool, |_, cx| {
        Some(Sample::Bool(cx.req.is_some()))
    }),
    def("req.rdp_cookie_cnt", OPT_STR, T::Sint, |a, cx| {
        let p = cx.payload?;
        Some(Sample::Sint(rdp_cookie(p, a).is_some() as i64))
    }),
    def("req.ssl_hello_type", ArgSpec::NONE, T::Sint, |_, cx| {
        crate::wire::client_hello::ssl_hello_type(cx.payload?).map(|t| Sample::Sint(t as i64))
    }),
    def("req_ssl_hello_type", ArgSpec::NONE, T::Sint, |_, cx| {
        crate::wire::client_hello::ssl_hello_type(cx.payload?).map(|t| Sample::Sint(t as i64))
    }),
    def("req.ssl_sni", ArgSpec::NONE, T::Str, |_, cx| {
        crate::wire::client_hello::ssl_sni(cx.payload?).map(Sample::str)
    }),
    def("req_ssl_sni", ArgSpec::NONE, T::Str, |_, cx| {
        crate::wire::client_hello::ssl_sni(cx.payload?).map(Sample::str)
    }),
    def("ssl_c_used", ArgSpec::NONE, T::Bool, |_, cx| {
        Some(Sample::Bool(cx.tls.is_some_and(|t| t.client_cert)))
    }),
    def("ssl_fc", ArgSpec::NONE, T::Bool, |_, cx| {
        Some(Sample::Bool(cx.tls.is_some()))
    }),
    def("ssl_fc_protocol", ArgSpec::NONE, T::Str, |_, cx| {
        cx.tls.map(|t| Sample::str(t.protocol.as_bytes()))
    }),
    def("ssl_fc_sni", ArgSpec::NONE, T::Str, |_, cx| {
        cx.tls?.sni.as_deref().map(|s| Sample::str(s.as_bytes()))
    }),
    // True once content inspection has waited (`tcp-request
    // inspect-delay`): the rules run after the wait or a complete hello,
    // and HTTP rules after the whole head.
    def("wait_end", ArgSpec::NONE, T::Bool, |_, cx| {
        (cx.payload.is_some() || cx.req.is_some()).then_some(Sample::Bool(true))
    }),
    // ---- end of the ACL engine's block ----
];

/// Whether the fetch `name` reads the buffered request bytes: content
/// inspection then waits for them.
pub(crate) fn reads_payload(name: &str) -> bool {
    matches!(
        name,
        "req.len"
            | "req_len"
            | "req.payload"
            | "req.payload_lv"
            | "req.rdp_cookie_cnt"
            | "req.ssl_hello_type"
            | "req_ssl_hello_type"
            | "req.ssl_sni"
            | "req_ssl_sni"
            | "wait_end"
    )
}

/// The `Cookie: <name>=<value>` line of an RDP connection request (after
/// the 4-byte TPKT and 7-byte X.224 headers), when it names `a[0]` (any
/// name when absent): the value.
fn rdp_cookie<'a>(p: &'a [u8], a: &[Arg]) -> Option<&'a [u8]> {
    let line = p.get(11..)?.strip_prefix(b"Cookie: ")?;
    let end = memchr::memmem::find(line, b"\r\n")?;
    let (name, value) = line[..end].split_at(line[..end].iter().position(|&b| b == b'=')?);
    let want = a.first().map_or("", Arg::as_str);
    (want.is_empty() || name.eq_ignore_ascii_case(want.as_bytes())).then_some(&value[1..])
}

/// `req.len`: the bytes buffered for content inspection; on an HTTP
/// request, the length of its head (HAProxy counts its internal form of
/// the request there, a little more: both are above 0).
fn req_len<'a>(cx: &Ctx<'a>) -> Option<Sample<'a>> {
    match (cx.payload, cx.req) {
        (Some(p), _) => Some(Sample::Sint(p.len() as i64)),
        (None, Some(h)) => Some(Sample::Sint(h.raw.len() as i64)),
        (None, None) => None,
    }
}

/// `req.payload(<offset>,<length>)`: length 0 is the rest of the buffer;
/// nothing until the bytes are there.
fn payload(p: &[u8], off: i64, len: i64) -> Option<Sample<'_>> {
    let off = usize::try_from(off).ok()?;
    let len = usize::try_from(len).ok()?;
    let end = if len == 0 {
        p.len()
    } else {
        off.checked_add(len)?
    };
    Some(Sample::Bin(Cow::Borrowed(p.get(off..end)?)))
}

/// `req.payload_lv(<len_off>,<len_size>[,<off>])`: a big-endian length of
/// `len_size` bytes at `len_off`, then that many bytes after it, or at
/// `<off>` when given (a negative one counts from the end of the length).
fn payload_lv<'a>(p: &'a [u8], a: &[Arg]) -> Option<Sample<'a>> {
    let len_off = usize::try_from(a[0].as_int()).ok()?;
    let len_size = usize::try_from(a[1].as_int()).ok()?;
    if len_size == 0 || len_size > 8 {
        return None;
    }
    let len = p
        .get(len_off..len_off.checked_add(len_size)?)?
        .iter()
        .fold(0u64, |n, &b| (n << 8) | b as u64);
    let start = match a.get(2) {
        Some(o) => {
            let o = o.as_int();
            if o < 0 {
                (len_off as i64)
                    .checked_add(len_size as i64)?
                    .checked_add(o)?
            } else {
                o
            }
        }
        None => (len_off + len_size) as i64,
    };
    let start = usize::try_from(start).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    Some(Sample::Bin(Cow::Borrowed(p.get(start..end)?)))
}

/// Every value of header `a[0]` (of every header without a name), split at
/// commas when `split`, for [`EachFn`]; an explicit occurrence (`a[1]`)
/// gives just that one, as in HAProxy.
fn each_header<'a>(
    head: &'a Head,
    a: &'a [Arg],
    split: bool,
    f: &mut dyn FnMut(Sample<'a>) -> bool,
) -> bool {
    if a.len() > 1 {
        return header(head, a, split).is_some_and(f);
    }
    let name = a.first().map(|n| n.as_str()).unwrap_or("");
    let mut visit = |v: &'a [u8]| {
        if split {
            v.split(|&b| b == b',')
                .any(|part| f(Sample::str(crate::wire::h1::trim(part))))
        } else {
            f(Sample::str(v))
        }
    };
    if name.is_empty() {
        head.headers().any(|(_, v)| visit(v))
    } else {
        head.values(name).any(visit)
    }
}

/// An address as HAProxy gives it: an IPv4-mapped IPv6 as IPv4.
fn ip(a: IpAddr) -> Sample<'static> {
    match a {
        IpAddr::V4(v4) => Sample::Ipv4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => Sample::Ipv4(v4),
            None => Sample::Ipv6(v6),
        },
    }
}

fn version(req: &Head) -> &'static [u8] {
    if req.minor == 0 { b"1.0" } else { b"1.1" }
}

/// The values of header `a[0]` (all headers without a name), split at
/// commas when `split`; `a[1]` picks the occurrence: positive from the
/// first, negative from the last, absent or 0 the last.
fn values<'a>(head: &'a Head, a: &'a [Arg], split: bool) -> Vec<&'a [u8]> {
    let name = a.first().map(|n| n.as_str()).unwrap_or("");
    let whole: Vec<&[u8]> = if name.is_empty() {
        head.headers().map(|(_, v)| v).collect()
    } else {
        head.values(name).collect()
    };
    if !split {
        return whole;
    }
    whole
        .into_iter()
        .flat_map(|v| v.split(|&b| b == b','))
        .map(crate::wire::h1::trim)
        .collect()
}

fn header<'a>(head: &'a Head, a: &'a [Arg], split: bool) -> Option<Sample<'a>> {
    let all = values(head, a, split);
    let occ = a.get(1).map_or(-1, Arg::as_int);
    let v = match occ {
        0 | -1 => all.last()?,
        n if n > 0 => all.get(n as usize - 1)?,
        n => all.get(all.len().checked_sub(n.unsigned_abs() as usize)?)?,
    };
    Some(Sample::str(*v))
}

fn count(head: &Head, a: &[Arg], split: bool) -> i64 {
    values(head, a, split).len() as i64
}

fn last_value<'a>(head: &'a Head, name: &'a str) -> Option<&'a [u8]> {
    head.values(name)
        .flat_map(|v| v.split(|&b| b == b','))
        .last()
        .map(crate::wire::h1::trim)
}

/// Where the path of a target starts: after `scheme://authority` for an
/// absolute URI.
fn path_start(target: &[u8]) -> usize {
    if target.first() == Some(&b'/') {
        return 0;
    }
    match memchr::memmem::find(target, b"://") {
        Some(p) => target[p + 3..]
            .iter()
            .position(|&b| b == b'/')
            .map_or(target.len(), |i| p + 3 + i),
        None => 0,
    }
}

fn path_end(target: &[u8]) -> usize {
    let s = path_start(target);
    target[s..]
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .map_or(target.len(), |i| s + i)
}

fn path_of(target: &[u8]) -> &[u8] {
    &target[path_start(target)..path_end(target)]
}

/// `bin(<hex>)`: the argument is hex digits.
fn hex_arg(args: &mut [Arg]) -> Result<(), String> {
    let text = args[0].as_str();
    if let Some(c) = text.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(format!("an hex digit is expected (found '{c}')"));
    }
    if text.len() % 2 == 1 {
        return Err("an even number of hex digit is expected".to_string());
    }
    let bytes = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap_or(0))
        .collect();
    args[0] = Arg::Bin(bytes);
    Ok(())
}

/// `meth(<method>)`: a token.
fn method_arg(args: &mut [Arg]) -> Result<(), String> {
    let m = args[0].as_str();
    if m.is_empty() || !m.bytes().all(crate::wire::h1::is_tchar) {
        return Err("expects valid method.".to_string());
    }
    Ok(())
}
