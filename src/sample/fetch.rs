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
    /// The request's variables (None where there is no request: `proc`
    /// variables are still reached).
    pub(crate) vars: Option<&'a super::vars::Vars<'a>>,
}

impl Ctx<'_> {
    /// A variable's value as stored (its type kept).
    pub(crate) fn var(&self, v: &super::vars::VarName) -> Option<Sample<'static>> {
        match self.vars {
            Some(vars) => vars.get(v),
            None => super::vars::get_outside(v),
        }
    }

    /// `set-var`: false when a condition or a limit stops it, or the scope
    /// does not exist here.
    pub(crate) fn set_var(
        &self,
        v: &super::vars::VarName,
        s: &Sample<'_>,
        conds: super::vars::Conds,
    ) -> bool {
        match (self.vars, v.scope) {
            (Some(vars), _) => vars.set(v, s, conds),
            (None, super::vars::Scope::Proc) => super::vars::set_proc(&v.name, s, conds),
            (None, _) => false,
        }
    }

    pub(crate) fn unset_var(&self, v: &super::vars::VarName) {
        match (self.vars, v.scope) {
            (Some(vars), _) => vars.unset(v),
            (None, super::vars::Scope::Proc) => super::vars::unset_proc(&v.name),
            (None, _) => {}
        }
    }
}

/// Turns a fetch's parsed arguments into their final form, or refuses them.
pub(crate) type FetchCheck = fn(&mut [Arg]) -> Result<(), String>;

pub(crate) type FetchFn = for<'a> fn(&'a [Arg], &Ctx<'a>) -> Option<Sample<'a>>;

/// One fetch keyword.
pub(crate) struct FetchDef {
    pub(crate) name: &'static str,
    pub(crate) args: ArgSpec,
    /// Turns the parsed arguments into their final form (or refuses them
    /// with the message HAProxy gives after "invalid args in fetch method").
    pub(crate) check: Option<FetchCheck>,
    pub(crate) out: SmpType,
    pub(crate) eval: FetchFn,
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
    def("hdr", HDR, T::Str, |a, cx| header(cx.req?, a, true)),
    def("method", ArgSpec::NONE, T::Meth, |_, cx| {
        Some(Sample::Meth(Cow::Borrowed(cx.req?.method())))
    }),
    def("path", ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(path_of(cx.req?.target())))
    }),
    def("query", ArgSpec::NONE, T::Str, |_, cx| {
        let t = cx.req?.target();
        let rest = &t[path_end(t)..];
        let q = rest.strip_prefix(b"?")?;
        Some(Sample::str(q.split(|&b| b == b'#').next().unwrap_or(q)))
    }),
    def("req.fhdr", HDR, T::Str, |a, cx| header(cx.req?, a, false)),
    def("req.hdr", HDR, T::Str, |a, cx| header(cx.req?, a, true)),
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
    def("res.hdr", HDR, T::Str, |a, cx| header(cx.res?, a, true)),
    def("res.fhdr", HDR, T::Str, |a, cx| header(cx.res?, a, false)),
    def("res.hdr_cnt", OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(count(cx.res?, a, true)))
    }),
    def("status", ArgSpec::NONE, T::Sint, |_, cx| {
        cx.status.map(|s| Sample::Sint(s as i64))
    }),
    def("url", ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(cx.req?.target()))
    }),
    // Variables and authentication (issue 17, variables and userlists).
    FetchDef {
        check: Some(var_arg),
        ..def("var", ArgSpec::of(&[A::Str, A::Str], 1), T::Any, |a, cx| {
            let Arg::Var(v) = &a[0] else { return None };
            // A default is given as a string.
            cx.var(v)
                .or_else(|| a.get(1).map(|d| Sample::str(d.as_bytes().to_vec())))
        })
    }, // `http_auth(<userlist>)`: the request's Basic credentials are valid.
    def("http_auth", STR, T::Bool, |a, cx| {
        let auth = cx.req?.values("authorization").next()?;
        super::auth::with_list(a[0].as_str(), |l| {
            Sample::Bool(l.authenticate(auth).is_some())
        })
    }),
    // `http_auth_group(<userlist>)`: the valid user's name (an ACL then
    // checks its groups).
    def("http_auth_group", STR, T::Str, |a, cx| {
        let auth = cx.req?.values("authorization").next()?;
        super::auth::with_list(a[0].as_str(), |l| {
            l.authenticate(auth)
                .map(|u| Sample::owned_str(u.name.clone()))
        })
        .flatten()
    }),
];

/// `var(<name>)`: a variable name, a `proc` one created now as HAProxy
/// does.
fn var_arg(args: &mut [Arg]) -> Result<(), String> {
    let v = super::vars::VarName::parse(args[0].as_str())?;
    if v.scope == super::vars::Scope::Proc {
        super::vars::declare_proc(&v.name);
    }
    args[0] = Arg::Var(v);
    Ok(())
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
