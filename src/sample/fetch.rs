//! Sample fetches: where a sample comes from. Each fetch is declared once
//! here (name, arguments, output type), and every place
//! that takes a sample (ACLs, rules, log formats, balancing) looks it up
//! in [`FETCHES`].

use super::tune::TimeoutKind;
use std::borrow::Cow;
use std::net::{IpAddr, SocketAddr};

use super::arg::{Arg, ArgSpec, ArgType};
use super::stage::{Src, Uses};
use super::value::{Sample, SmpType, str_to_int};
use crate::wire::h1::Head;

/// A number the proxies' runtime state gives (`nbsrv`, `be_conn`...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Count {
    /// The servers that take traffic now (`nbsrv`): the active ones, else
    /// the backups (one without `option allbackups`).
    UsableServers,
    /// Connections of the backend (`be_conn`).
    BackendConns,
    /// Requests waiting in the backend's queue (`queue`).
    BackendQueue,
    /// 1 when the server is UP and not in maintenance (`srv_is_up`).
    ServerUp,
    ServerConns,
    ServerQueue,
    /// The server's weight now, as set at run time, and as configured
    /// (`srv_weight`, `srv_uweight`, `srv_iweight`).
    ServerWeight,
    ServerUserWeight,
    ServerInitialWeight,
    /// Connections a server can still take (`srv_conn_free`; -1 without
    /// `maxconn`), and all the servers of a backend (`be_conn_free`).
    ServerConnsFree,
    BackendConnsFree,
    /// Connections of the frontend named (`fe_conn`).
    FrontendConns,
    /// Sessions (or requests) per second over the last second, of a
    /// frontend, a backend or a server (`fe_sess_rate`, `fe_req_rate`,
    /// `be_sess_rate`, `srv_sess_rate`).
    FrontendSessRate,
    FrontendReqRate,
    BackendSessRate,
    ServerSessRate,
    /// The backend's queue shared by its usable servers, rounded up
    /// (`avg_queue`).
    AverageQueue,
    /// Connections and queue places the usable servers have left, -1 when
    /// one has no `maxconn` or no `maxqueue` (`connslots`).
    ConnSlots,
    /// The configured timeouts, in milliseconds, 0 when unset: the
    /// frontend's `timeout client`, the backend's `timeout server` and
    /// `timeout tunnel` (`fe_client_timeout`, `be_server_timeout`,
    /// `be_tunnel_timeout`).
    FrontendClientTimeout,
    BackendServerTimeout,
    BackendTunnelTimeout,
}

/// The proxies' runtime state, read by the fetches that need it through
/// a reference (the snapshot implements it, in a layer above): nothing is
/// copied per request, a count is read when a fetch asks for it.
pub(crate) trait Proxies: std::fmt::Debug + Sync {
    /// `what` of backend `backend`, or of its server `server`; None when
    /// there is no such backend or server.
    fn count(&self, what: Count, backend: &str, server: Option<&str>) -> Option<i64>;
    /// The `default_backend` of frontend `frontend` (`fe_defbe`).
    fn default_backend(&self, frontend: &str) -> Option<&str>;
}

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
    /// The request's `unique-id-format` id, once made.
    pub(crate) unique_id: Option<&'a str>,
    /// The frontend's capture slots as filled so far (`capture.req.hdr`,
    /// `capture.res.hdr`).
    pub(crate) cap_req: &'a [Option<Vec<u8>>],
    pub(crate) cap_resp: &'a [Option<Vec<u8>>],
    /// The request's bytes buffered so far, in `tcp-request content`
    /// rules (`req.len`, `req.payload`, `req.ssl_sni`): a view of the
    /// buffer, never a copy.
    pub(crate) payload: Option<&'a [u8]>,
    /// The server's bytes buffered so far, in `tcp-response content`
    /// rules (`res.len`, `res.payload`), likewise a view.
    pub(crate) res_payload: Option<&'a [u8]>,
    /// The frontend's and the backend's ids (`fe_id`, `be_id`; the
    /// backend's is the frontend's until one is chosen, as `be_name`).
    pub(crate) frontend_id: u32,
    pub(crate) backend_id: Option<u32>,
    /// Whether the request is its connection's first (`http_first_req`).
    pub(crate) first_req: Option<bool>,
    /// The server's id in its backend (`srv_id`), once one is chosen.
    pub(crate) server_id: Option<u32>,
    /// The proxies' runtime state, where passed (`nbsrv`, `be_conn`...).
    pub(crate) proxies: Option<&'a dyn Proxies>,
    /// The stick tables and the counters the stream tracks, where passed
    /// (`sc_*`, `src_*`, `table_*`).
    pub(crate) stick: Option<&'a dyn super::stick::Stick>,
    /// The client connection's TLS (None: cleartext).
    pub(crate) tls: Option<&'a crate::tls::TlsFacts>,
    /// The client connection's other facts (`fc_*`, `so_*`, `dst_conn`),
    /// where passed.
    pub(crate) client: Option<&'a super::conn::ClientFacts>,
    /// The server connection's (`bc_*`, `ssl_bc_*`, `ssl_s_*`), where
    /// kept (see [`server_read`]).
    pub(crate) server_conn: Option<&'a super::srvconn::ServerFacts>,
    /// The request's variables (None where there is no request: `proc`
    /// variables are still reached).
    pub(crate) vars: Option<&'a super::vars::Vars<'a>>,
    /// The request's and the response's bodies as far as they are
    /// buffered (`req.body`, `res.body`...): None for a message without a
    /// body, or where nothing reads bodies (see [`body_read`]). A
    /// reference: a context is made per evaluation, and small.
    pub(crate) req_body: Option<&'a Body<'a>>,
    pub(crate) res_body: Option<&'a Body<'a>>,
    /// The conditions of response rules: HAProxy no longer holds the
    /// request's headers and body there (forwarded), so the fetches that
    /// read only them find nothing (`path`, `req.hdr`; `method`, kept
    /// with the transaction, still answers).
    pub(crate) req_gone: bool,
}

/// A message's body as far as it is buffered: a view of the bytes the
/// connection holds anyway (or of their one decoded copy for a chunked
/// body), never a copy per fetch.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Body<'a> {
    /// The data, without chunked framing, cut to what HAProxy's buffer
    /// would hold.
    pub(crate) data: &'a [u8],
    /// `body_size`: the announced length (`Content-Length`), else the
    /// data and the rest of the chunk being received.
    pub(crate) size: u64,
}

/// Whether a configuration this process parsed reads request bodies
/// (`req.body*`) or response bodies (`res.body*`): only then do requests
/// set their bodies aside for the fetches, so the others pay nothing. It
/// stays set once a configuration needed it (a failed reload must not
/// take it from the running one).
static BODY_READ: [std::sync::atomic::AtomicBool; 2] = [
    std::sync::atomic::AtomicBool::new(false),
    std::sync::atomic::AtomicBool::new(false),
];

/// [`BODY_READ`] of the request (`res` false) or the response.
pub(crate) fn body_read(res: bool) -> bool {
    BODY_READ[res as usize].load(std::sync::atomic::Ordering::Relaxed)
}

/// Whether a configuration this process parsed reads the server
/// connection (`bc_*`, `ssl_bc*`, `ssl_s_*`): only then are its facts
/// kept with each exchange. As [`BODY_READ`], it stays set.
static SERVER_READ: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// [`SERVER_READ`].
pub(crate) fn server_read() -> bool {
    SERVER_READ.load(std::sync::atomic::Ordering::Relaxed)
}

/// Notes that fetch `name` was parsed: a body fetch sets [`BODY_READ`],
/// a server connection's one [`SERVER_READ`].
pub(crate) fn note_parsed(name: &str) {
    if name.starts_with("bc_") || name.starts_with("ssl_bc") || name.starts_with("ssl_s_") {
        SERVER_READ.store(true, std::sync::atomic::Ordering::Relaxed);
        return;
    }
    let side = match name.get(..8) {
        Some("req.body") => 0,
        Some("res.body") => 1,
        _ => return,
    };
    BODY_READ[side].store(true, std::sync::atomic::Ordering::Relaxed);
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

/// A fetch that can give several values (every occurrence of a header):
/// calls `f` on each in order until it returns true, and says whether one
/// did. ACLs use it (HAProxy's "not last" iteration), without collecting.
pub(crate) type EachFn =
    for<'a> fn(&'a [Arg], &Ctx<'a>, &mut dyn FnMut(Sample<'a>) -> bool) -> bool;

/// One fetch keyword.
pub(crate) struct FetchDef {
    pub(crate) name: &'static str,
    /// Where its value comes from, hence where it can be used.
    pub(crate) uses: Uses,
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

/// The fetch tables, one per file that declares fetches: a new family of
/// fetches (stick tables, connection facts, ...) adds its table here.
static TABLES: &[&[FetchDef]] = &[
    FETCHES,
    super::x509::FETCHES,
    super::x509::CERT_TABLES[0],
    super::x509::CERT_TABLES[1],
    super::x509::CERT_TABLES[2],
    super::conn::FETCHES,
    super::srvconn::FETCHES,
    super::hello::FETCHES,
];

/// Every fetch sluice knows.
pub(crate) fn all() -> impl Iterator<Item = &'static FetchDef> {
    TABLES
        .iter()
        .flat_map(|t| t.iter())
        .chain(super::stick::fetches())
}

pub(crate) fn find(name: &str) -> Option<&'static FetchDef> {
    all()
        .find(|f| f.name == name)
        .or_else(|| super::script::find_fetch(name))
}

pub(crate) const fn def(
    name: &'static str,
    uses: Uses,
    args: ArgSpec,
    out: SmpType,
    eval: FetchFn,
) -> FetchDef {
    FetchDef {
        name,
        uses,
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
const PAYLOAD: ArgSpec = ArgSpec::of(&[A::Sint, A::Sint], 2);
const PAYLOAD_LV: ArgSpec = ArgSpec::of(&[A::Sint, A::Sint, A::Str], 2);
const URL_PARAM: ArgSpec = ArgSpec::of(&[A::Str, A::Str], 0);

// The sources of the fetches (see `stage`).
pub(crate) const CONST: Uses = Uses::of(&[Src::Const]);
pub(crate) const INTRN: Uses = Uses::of(&[Src::Intrn]);
pub(crate) const FTEND: Uses = Uses::of(&[Src::Ftend]);
pub(crate) const L4CLI: Uses = Uses::of(&[Src::L4cli]);
pub(crate) const LISTN: Uses = Uses::of(&[Src::Listn]);
pub(crate) const L5CLI: Uses = Uses::of(&[Src::L5cli]);
pub(crate) const BKEND: Uses = Uses::of(&[Src::Bkend]);
pub(crate) const SERVR: Uses = Uses::of(&[Src::Servr]);
pub(crate) const L6REQ: Uses = Uses::of(&[Src::L6req]);
pub(crate) const L6RES: Uses = Uses::of(&[Src::L6res]);
pub(crate) const HRQHV: Uses = Uses::of(&[Src::Hrqhv]);
pub(crate) const HRQHP: Uses = Uses::of(&[Src::Hrqhp]);
pub(crate) const HRSHV: Uses = Uses::of(&[Src::Hrshv]);
pub(crate) const HRSHP: Uses = Uses::of(&[Src::Hrshp]);
/// `hdr` reads the request, or the response in a response rule.
const HTTP_HV: Uses = Uses::of(&[Src::Hrqhv, Src::Hrshv]);

/// The fetches of HAProxy's sections 7.3.1 to 7.3.6, in its documentation order.
static FETCHES: &[FetchDef] = &[
    // 7.3.2 Internal states: constants.
    FetchDef {
        check: Some(hex_arg),
        ..def("bin", CONST, STR, T::Bin, |a, _| {
            Some(Sample::Bin(Cow::Borrowed(a[0].as_bytes())))
        })
    },
    def(
        "bool",
        CONST,
        ArgSpec::of(&[A::Sint], 1),
        T::Bool,
        |a, _| Some(Sample::Bool(a[0].as_int() != 0)),
    ),
    def("int", CONST, ArgSpec::of(&[A::Sint], 1), T::Sint, |a, _| {
        Some(Sample::Sint(a[0].as_int()))
    }),
    def(
        "ipv4",
        CONST,
        ArgSpec::of(&[A::Ipv4], 1),
        T::Ipv4,
        |a, _| match a[0] {
            Arg::Ipv4(ip) => Some(Sample::Ipv4(ip)),
            _ => None,
        },
    ),
    def(
        "ipv6",
        CONST,
        ArgSpec::of(&[A::Ipv6], 1),
        T::Ipv6,
        |a, _| match a[0] {
            Arg::Ipv6(ip) => Some(Sample::Ipv6(ip)),
            _ => None,
        },
    ),
    FetchDef {
        check: Some(method_arg),
        ..def("meth", CONST, STR, T::Meth, |a, _| {
            Some(Sample::Meth(Cow::Borrowed(a[0].as_str().as_bytes())))
        })
    },
    def("str", CONST, STR, T::Str, |a, _| {
        Some(Sample::str(a[0].as_str().as_bytes()))
    }),
    def("be_name", BKEND, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(cx.backend.unwrap_or(cx.frontend).as_bytes()))
    }),
    def("fe_name", FTEND, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(cx.frontend.as_bytes()))
    }),
    def("be_id", BKEND, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(cx.backend_id.unwrap_or(cx.frontend_id) as i64))
    }),
    def("fe_id", FTEND, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(cx.frontend_id as i64))
    }),
    def("srv_id", SERVR, ArgSpec::NONE, T::Sint, |_, cx| {
        cx.server_id.map(|n| Sample::Sint(n as i64))
    }),
    def("srv_name", SERVR, ArgSpec::NONE, T::Str, |_, cx| {
        cx.server.map(|s| Sample::str(s.as_bytes()))
    }),
    // 7.3.2 Internal states: the process (keep this block apart, other
    // blocks of 7.3.2 land above).
    def("always_false", CONST, ArgSpec::NONE, T::Bool, |_, _| {
        Some(Sample::Bool(false))
    }),
    def("always_true", CONST, ArgSpec::NONE, T::Bool, |_, _| {
        Some(Sample::Bool(true))
    }),
    FetchDef {
        check: Some(date_unit),
        ..def(
            "date",
            CONST,
            ArgSpec::of(&[A::Sint, A::Str], 0),
            T::Sint,
            |a, _| Some(Sample::Sint(date(a))),
        )
    },
    // The microseconds of the date (`date` gives the seconds).
    def("date_us", CONST, ArgSpec::NONE, T::Sint, |_, _| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Some(Sample::Sint(i64::from(now.subsec_micros())))
    }),
    def("env", CONST, STR, T::Str, |a, _| {
        let v = crate::sys::env::var(a[0].as_str())?;
        Some(Sample::Str(Cow::Owned(v.into_encoded_bytes())))
    }),
    def("hostname", CONST, ArgSpec::NONE, T::Str, |_, _| {
        Some(Sample::str(crate::sys::process::hostname().as_bytes()))
    }),
    // sluice is one process: HAProxy's `proc` with one.
    def("proc", CONST, ArgSpec::NONE, T::Sint, |_, _| {
        Some(Sample::Sint(1))
    }),
    def(
        "rand",
        CONST,
        ArgSpec::of(&[A::Sint], 0),
        T::Sint,
        |a, _| {
            let range = a.first().map_or(1 << 32, Arg::as_int) as u64;
            let r = super::random::next_u64() >> 32;
            Some(Sample::Sint((r.wrapping_mul(range) >> 32) as i64))
        },
    ),
    FetchDef {
        check: Some(uuid_version),
        ..def("uuid", CONST, ArgSpec::of(&[A::Sint], 0), T::Str, |_, _| {
            Some(Sample::owned_str(super::random::uuid4()))
        })
    },
    // 7.3.2 Internal states: the proxies' runtime state (a backend named
    // by the argument, else the current one; a server as `<backend>/<server>`
    // or `<server>` of the current backend).
    def("avg_queue", INTRN, OPT_STR, T::Sint, |a, cx| {
        backend_count(cx, a, Count::AverageQueue)
    }),
    def("be_conn", INTRN, OPT_STR, T::Sint, |a, cx| {
        backend_count(cx, a, Count::BackendConns)
    }),
    def("be_conn_free", INTRN, OPT_STR, T::Sint, |a, cx| {
        backend_count(cx, a, Count::BackendConnsFree)
    }),
    def("be_sess_rate", INTRN, OPT_STR, T::Sint, |a, cx| {
        backend_count(cx, a, Count::BackendSessRate)
    }),
    def("fe_conn", INTRN, OPT_STR, T::Sint, |a, cx| {
        frontend_count(cx, a, Count::FrontendConns)
    }),
    def("fe_req_rate", INTRN, OPT_STR, T::Sint, |a, cx| {
        frontend_count(cx, a, Count::FrontendReqRate)
    }),
    def("fe_sess_rate", INTRN, OPT_STR, T::Sint, |a, cx| {
        frontend_count(cx, a, Count::FrontendSessRate)
    }),
    def("nbsrv", INTRN, OPT_STR, T::Sint, |a, cx| {
        backend_count(cx, a, Count::UsableServers)
    }),
    def("connslots", INTRN, OPT_STR, T::Sint, |a, cx| {
        backend_count(cx, a, Count::ConnSlots)
    }),
    def("fe_defbe", FTEND, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(
            cx.proxies?.default_backend(cx.frontend)?.as_bytes(),
        ))
    }),
    def(
        "fe_client_timeout",
        FTEND,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| {
            let c = cx
                .proxies?
                .count(Count::FrontendClientTimeout, cx.frontend, None);
            c.map(Sample::Sint)
        },
    ),
    def(
        "be_server_timeout",
        BKEND,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| backend_count(cx, &[], Count::BackendServerTimeout),
    ),
    def(
        "be_tunnel_timeout",
        BKEND,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| backend_count(cx, &[], Count::BackendTunnelTimeout),
    ),
    // The stream's own server timeout: the one a `set-timeout` rule set,
    // else none before a server is connected (HAProxy gives 0 in request
    // rules), then the backend's.
    def(
        "cur_server_timeout",
        BKEND,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| match (set_timeout(cx, TimeoutKind::Server), cx.server) {
            (Some(ms), _) => Some(Sample::Sint(ms)),
            (None, Some(_)) => backend_count(cx, &[], Count::BackendServerTimeout),
            (None, None) => Some(Sample::Sint(0)),
        },
    ),
    // The same for the tunnel timeout: a rule's, else none before a
    // server is connected, then the backend's.
    def(
        "cur_tunnel_timeout",
        BKEND,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| match (set_timeout(cx, TimeoutKind::Tunnel), cx.server) {
            (Some(ms), _) => Some(Sample::Sint(ms)),
            (None, Some(_)) => backend_count(cx, &[], Count::BackendTunnelTimeout),
            (None, None) => Some(Sample::Sint(0)),
        },
    ),
    // The stream's queue priority, as its rules set it (0 by default).
    def("prio_class", INTRN, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(
            cx.vars.map_or(0, |v| v.tune.priority().class).into(),
        ))
    }),
    def("prio_offset", INTRN, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(
            cx.vars.map_or(0, |v| v.tune.priority().offset_ms).into(),
        ))
    }),
    def("queue", INTRN, OPT_STR, T::Sint, |a, cx| {
        backend_count(cx, a, Count::BackendQueue)
    }),
    // The process is in its soft stop (a reload's old process).
    def("stopping", INTRN, ArgSpec::NONE, T::Bool, |_, _| {
        Some(Sample::Bool(crate::sys::process::stopping()))
    }),
    def("srv_conn", INTRN, STR, T::Sint, |a, cx| {
        server_count(cx, a, Count::ServerConns)
    }),
    def("srv_conn_free", INTRN, STR, T::Sint, |a, cx| {
        server_count(cx, a, Count::ServerConnsFree)
    }),
    def("srv_is_up", INTRN, STR, T::Bool, |a, cx| {
        server_count(cx, a, Count::ServerUp).map(|s| Sample::Bool(matches!(s, Sample::Sint(1))))
    }),
    def("srv_queue", INTRN, STR, T::Sint, |a, cx| {
        server_count(cx, a, Count::ServerQueue)
    }),
    def("srv_sess_rate", INTRN, STR, T::Sint, |a, cx| {
        server_count(cx, a, Count::ServerSessRate)
    }),
    def("srv_iweight", INTRN, STR, T::Sint, |a, cx| {
        server_count(cx, a, Count::ServerInitialWeight)
    }),
    def("srv_uweight", INTRN, STR, T::Sint, |a, cx| {
        server_count(cx, a, Count::ServerUserWeight)
    }),
    def("srv_weight", INTRN, STR, T::Sint, |a, cx| {
        server_count(cx, a, Count::ServerWeight)
    }),
    // 7.3.3 Layer 4.
    def("dst", L4CLI, ArgSpec::NONE, T::Ipv4, |_, cx| {
        cx.local.map(|a| ip(a.ip()))
    }),
    def("dst_port", L4CLI, ArgSpec::NONE, T::Sint, |_, cx| {
        cx.local.map(|a| Sample::Sint(a.port() as i64))
    }),
    def("src", L4CLI, ArgSpec::NONE, T::Ipv4, |_, cx| cx.src.map(ip)),
    def("src_port", L4CLI, ArgSpec::NONE, T::Sint, |_, cx| {
        cx.src_port.map(|p| Sample::Sint(p as i64))
    }),
    def("src_is_local", L4CLI, ArgSpec::NONE, T::Bool, |_, cx| {
        cx.src.map(|a| Sample::Bool(is_local(a)))
    }),
    def("dst_is_local", L4CLI, ArgSpec::NONE, T::Bool, |_, cx| {
        cx.local.map(|a| Sample::Bool(is_local(a.ip())))
    }),
    // A connection that got this far has no error (its code is 0, and
    // the C library's text for 0).
    def("fc_err", L4CLI, ArgSpec::NONE, T::Sint, |_, _| {
        Some(Sample::Sint(0))
    }),
    def("fc_err_str", L4CLI, ArgSpec::NONE, T::Str, |_, _| {
        Some(Sample::str(b"Success"))
    }),
    // 7.3.5 Layer 6: the request's buffered bytes, as `tcp-request
    // content` sees them (kept apart: the ACL engine reads these too).
    def("req.len", L6REQ, ArgSpec::NONE, T::Sint, |_, cx| {
        req_len(cx)
    }),
    def("req.payload", L6REQ, PAYLOAD, T::Bin, |a, cx| {
        payload(cx.payload?, a[0].as_int(), a[1].as_int()).map(bin)
    }),
    FetchDef {
        check: Some(lv_offset),
        ..def("req.payload_lv", L6REQ, PAYLOAD_LV, T::Bin, |a, cx| {
            payload_lv(cx.payload?, a).map(bin)
        })
    },
    def(
        "req.ssl_hello_type",
        L6REQ,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| {
            crate::wire::client_hello::ssl_hello_type(cx.payload?).map(|t| Sample::Sint(t as i64))
        },
    ),
    def("req.ssl_alpn", L6REQ, ArgSpec::NONE, T::Str, |_, cx| {
        crate::wire::client_hello::ssl_alpn(cx.payload?).map(Sample::str)
    }),
    def("req.ssl_sni", L6REQ, ArgSpec::NONE, T::Str, |_, cx| {
        crate::wire::client_hello::ssl_sni(cx.payload?).map(Sample::str)
    }),
    def("req.ssl_ver", L6REQ, ArgSpec::NONE, T::Sint, |_, cx| {
        crate::wire::client_hello::ssl_ver(cx.payload?).map(Sample::Sint)
    }),
    def("req.ssl_ec_ext", L6REQ, ArgSpec::NONE, T::Bool, |_, cx| {
        crate::wire::client_hello::ssl_ec_ext(cx.payload?).map(Sample::Bool)
    }),
    def("req.ssl_st_ext", L6REQ, ArgSpec::NONE, T::Sint, |_, cx| {
        crate::wire::client_hello::ssl_st_ext(cx.payload?).map(Sample::Sint)
    }),
    def("req_len", L6REQ, ArgSpec::NONE, T::Sint, |_, cx| {
        req_len(cx)
    }),
    // The response's buffered bytes, as `tcp-response content` sees them.
    def("res.len", L6RES, ArgSpec::NONE, T::Sint, |_, cx| {
        cx.res_payload.map(|p| Sample::Sint(p.len() as i64))
    }),
    def("res.payload", L6RES, PAYLOAD, T::Bin, |a, cx| {
        payload(cx.res_payload?, a[0].as_int(), a[1].as_int()).map(bin)
    }),
    FetchDef {
        check: Some(lv_offset),
        ..def("res.payload_lv", L6RES, PAYLOAD_LV, T::Bin, |a, cx| {
            payload_lv(cx.res_payload?, a).map(bin)
        })
    },
    def(
        "res.ssl_hello_type",
        L6RES,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| {
            crate::wire::client_hello::ssl_hello_type(cx.res_payload?)
                .map(|t| Sample::Sint(t as i64))
        },
    ),
    def(
        "rep_ssl_hello_type",
        L6RES,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| {
            crate::wire::client_hello::ssl_hello_type(cx.res_payload?)
                .map(|t| Sample::Sint(t as i64))
        },
    ),
    def(
        "req_ssl_hello_type",
        L6REQ,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| {
            crate::wire::client_hello::ssl_hello_type(cx.payload?).map(|t| Sample::Sint(t as i64))
        },
    ),
    def("req_ssl_sni", L6REQ, ArgSpec::NONE, T::Str, |_, cx| {
        crate::wire::client_hello::ssl_sni(cx.payload?).map(Sample::str)
    }),
    def("req_ssl_ver", L6REQ, ArgSpec::NONE, T::Sint, |_, cx| {
        crate::wire::client_hello::ssl_ver(cx.payload?).map(Sample::Sint)
    }),
    // 7.3.6 HTTP.
    def("base32", HRQHV, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(base32(cx.req?)? as i64))
    }),
    def("base32+src", HRQHV, ArgSpec::NONE, T::Bin, |_, cx| {
        hash_and_src(base32(cx.req?)?, cx.src?)
    }),
    def("baseq", HRQHV, ArgSpec::NONE, T::Str, |_, cx| {
        let req = cx.req?;
        let mut out = first_value(req, "host")?.to_vec();
        out.extend_from_slice(pathq_of(req.target()));
        Some(Sample::Str(Cow::Owned(out)))
    }),
    def("base", HRQHV, ArgSpec::NONE, T::Str, |_, cx| {
        let req = cx.req?;
        let mut out = last_value(req, "host")?.to_vec();
        out.extend_from_slice(path_of(req.target()));
        Some(Sample::Str(Cow::Owned(out)))
    }),
    // `hdr` reads the response in a response rule, else the request.
    FetchDef {
        each: Some(|a, cx, f| {
            cx.res
                .or(cx.req)
                .is_some_and(|h| each_header(h, a, true, f))
        }),
        ..def("hdr", HTTP_HV, HDR, T::Str, |a, cx| {
            header(cx.res.or(cx.req)?, a, true)
        })
    },
    def("hdr_cnt", HRQHV, OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(count(cx.req?, a, true)))
    }),
    def("hdr_ip", HRQHV, HDR, T::Ipv4, |a, cx| header_ip(cx.req?, a)),
    FetchDef {
        each: Some(|a, cx, f| {
            cx.req.is_some_and(|h| {
                each_header(h, a, true, &mut |s| s.cast(T::Sint).is_some_and(&mut *f))
            })
        }),
        ..def("hdr_val", HRQHV, HDR, T::Sint, |a, cx| {
            header_val(cx.req?, a)
        })
    },
    def("cook", HRQHV, OPT_STR, T::Str, |a, cx| {
        req_cookie(cx.req?, a).map(Sample::str)
    }),
    def("cook_cnt", HRQHV, OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(req_cookies(cx.req?, a).count() as i64))
    }),
    def("cook_val", HRQHV, OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(str_to_int(req_cookie(cx.req?, a)?)))
    }),
    def("http_first_req", HRQHP, ArgSpec::NONE, T::Bool, |_, cx| {
        cx.first_req.map(Sample::Bool)
    }),
    def("method", HRQHP, ArgSpec::NONE, T::Meth, |_, cx| {
        Some(Sample::Meth(Cow::Borrowed(cx.req?.method())))
    }),
    def("path", HRQHV, ArgSpec::NONE, T::Str, |_, cx| {
        let t = cx.req?.target();
        // `*` (OPTIONS) and other targets without a slash have no path.
        if !t.contains(&b'/') {
            return None;
        }
        Some(Sample::str(path_of(t)))
    }),
    def("pathq", HRQHV, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(pathq_of(cx.req?.target())))
    }),
    def("query", HRQHV, ArgSpec::NONE, T::Str, |_, cx| {
        let t = cx.req?.target();
        let rest = &t[path_end(t)..];
        let q = rest.strip_prefix(b"?")?;
        Some(Sample::str(q.split(|&b| b == b'#').next().unwrap_or(q)))
    }),
    def("req.cook", HRQHV, OPT_STR, T::Str, |a, cx| {
        req_cookie(cx.req?, a).map(Sample::str)
    }),
    def("req.cook_cnt", HRQHV, OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(req_cookies(cx.req?, a).count() as i64))
    }),
    def("req.cook_val", HRQHV, OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(str_to_int(req_cookie(cx.req?, a)?)))
    }),
    FetchDef {
        each: Some(|a, cx, f| cx.req.is_some_and(|h| each_header(h, a, false, f))),
        ..def("req.fhdr", HRQHV, HDR, T::Str, |a, cx| {
            header(cx.req?, a, false)
        })
    },
    FetchDef {
        each: Some(|a, cx, f| cx.req.is_some_and(|h| each_header(h, a, true, f))),
        ..def("req.hdr", HRQHV, HDR, T::Str, |a, cx| {
            header(cx.req?, a, true)
        })
    },
    def("req.hdr_cnt", HRQHV, OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(count(cx.req?, a, true)))
    }),
    def("req.fhdr_cnt", HRQHV, OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(count(cx.req?, a, false)))
    }),
    def("req.hdr_ip", HRQHV, HDR, T::Ipv4, |a, cx| {
        header_ip(cx.req?, a)
    }),
    def("req.hdr_names", HRQHV, OPT_STR, T::Str, |a, cx| {
        header_names(cx.req?, a)
    }),
    def("req.hdr_val", HRQHV, HDR, T::Sint, |a, cx| {
        header_val(cx.req?, a)
    }),
    def("req.hdrs", HRQHV, ArgSpec::NONE, T::Str, |_, cx| {
        Some(headers_text(cx.req?))
    }),
    def("req.hdrs_bin", HRQHV, ArgSpec::NONE, T::Bin, |_, cx| {
        Some(headers_bin(cx.req?))
    }),
    // An HTTP proxy's request is HTTP (a `mode tcp` one has no `req`).
    def("req.proto_http", HRQHP, ArgSpec::NONE, T::Bool, |_, cx| {
        Some(Sample::Bool(cx.req.is_some()))
    }),
    def("req_proto_http", HRQHP, ArgSpec::NONE, T::Bool, |_, cx| {
        Some(Sample::Bool(cx.req.is_some()))
    }),
    def("req.ver", HRQHV, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(version(cx.req?)))
    }),
    def("req_ver", HRQHV, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(version(cx.req?)))
    }),
    // The body as far as it is buffered (`option http-buffer-request`,
    // `wait-for-body`); a message without one has an empty body.
    def("req.body", HRQHV, ArgSpec::NONE, T::Bin, |_, cx| {
        cx.req?;
        Some(bin(cx.req_body.copied().unwrap_or_default().data))
    }),
    def("req.body_len", HRQHV, ArgSpec::NONE, T::Sint, |_, cx| {
        cx.req?;
        Some(Sample::Sint(
            cx.req_body.copied().unwrap_or_default().data.len() as i64,
        ))
    }),
    def("req.body_size", HRQHV, ArgSpec::NONE, T::Sint, |_, cx| {
        cx.req?;
        Some(Sample::Sint(
            cx.req_body.copied().unwrap_or_default().size as i64,
        ))
    }),
    // `req.body_param([<name>])`: a parameter of a form body; an ACL
    // tries every one.
    FetchDef {
        each: Some(|a, cx, f| {
            let data = cx.req_body.copied().unwrap_or_default().data;
            body_params(data, a).any(|v| f(Sample::str(v)))
        }),
        ..def("req.body_param", HRQHV, OPT_STR, T::Bin, |a, cx| {
            let data = cx.req_body.copied().unwrap_or_default().data;
            body_params(data, a).next().map(Sample::str)
        })
    },
    def("res.body", HRSHV, ArgSpec::NONE, T::Bin, |_, cx| {
        cx.res?;
        Some(bin(cx.res_body.copied().unwrap_or_default().data))
    }),
    def("res.body_len", HRSHV, ArgSpec::NONE, T::Sint, |_, cx| {
        cx.res?;
        Some(Sample::Sint(
            cx.res_body.copied().unwrap_or_default().data.len() as i64,
        ))
    }),
    def("res.body_size", HRSHV, ArgSpec::NONE, T::Sint, |_, cx| {
        cx.res?;
        Some(Sample::Sint(
            cx.res_body.copied().unwrap_or_default().size as i64,
        ))
    }),
    // The response filters' facts, set on the request's variables by
    // the relay (`http/compress.rs`, `http/cache.rs`).
    def("res.cache_hit", HRSHP, ArgSpec::NONE, T::Bool, |_, cx| {
        Some(Sample::Bool(
            cx.vars.is_some_and(|v| v.cache_hit().is_some()),
        ))
    }),
    def("res.cache_name", HRSHP, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(cx.vars?.cache_hit()?.as_bytes()))
    }),
    def("res.comp", HRSHP, ArgSpec::NONE, T::Bool, |_, cx| {
        Some(Sample::Bool(cx.vars.is_some_and(|v| v.comp().is_some())))
    }),
    def("res.comp_algo", HRSHP, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(cx.vars?.comp()?.as_bytes()))
    }),
    def("res.cook", HRSHV, OPT_STR, T::Str, |a, cx| {
        res_cookie(cx.res?, a).map(Sample::str)
    }),
    def("res.cook_cnt", HRSHV, OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(res_cookies(cx.res?, a).count() as i64))
    }),
    def("res.cook_val", HRSHV, OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(str_to_int(res_cookie(cx.res?, a)?)))
    }),
    FetchDef {
        each: Some(|a, cx, f| cx.res.is_some_and(|h| each_header(h, a, true, f))),
        ..def("res.hdr", HRSHV, HDR, T::Str, |a, cx| {
            header(cx.res?, a, true)
        })
    },
    FetchDef {
        each: Some(|a, cx, f| cx.res.is_some_and(|h| each_header(h, a, false, f))),
        ..def("res.fhdr", HRSHV, HDR, T::Str, |a, cx| {
            header(cx.res?, a, false)
        })
    },
    def("res.fhdr_cnt", HRSHV, OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(count(cx.res?, a, false)))
    }),
    def("res.hdr_cnt", HRSHV, OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(count(cx.res?, a, true)))
    }),
    def("res.hdr_ip", HRSHV, HDR, T::Ipv4, |a, cx| {
        header_ip(cx.res?, a)
    }),
    def("res.hdr_names", HRSHV, OPT_STR, T::Str, |a, cx| {
        header_names(cx.res?, a)
    }),
    def("res.hdr_val", HRSHV, HDR, T::Sint, |a, cx| {
        header_val(cx.res?, a)
    }),
    def("res.hdrs", HRSHV, ArgSpec::NONE, T::Str, |_, cx| {
        Some(headers_text(cx.res?))
    }),
    def("res.hdrs_bin", HRSHV, ArgSpec::NONE, T::Bin, |_, cx| {
        Some(headers_bin(cx.res?))
    }),
    def("res.ver", HRSHV, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(version(cx.res?)))
    }),
    def("resp_ver", HRSHV, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(version(cx.res?)))
    }),
    def("scook", HRSHV, OPT_STR, T::Str, |a, cx| {
        res_cookie(cx.res?, a).map(Sample::str)
    }),
    def("scook_cnt", HRSHV, OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(res_cookies(cx.res?, a).count() as i64))
    }),
    def("scook_val", HRSHV, OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(str_to_int(res_cookie(cx.res?, a)?)))
    }),
    def("shdr", HRSHV, HDR, T::Str, |a, cx| header(cx.res?, a, true)),
    def("shdr_cnt", HRSHV, OPT_STR, T::Sint, |a, cx| {
        Some(Sample::Sint(count(cx.res?, a, true)))
    }),
    def("shdr_ip", HRSHV, HDR, T::Ipv4, |a, cx| {
        header_ip(cx.res?, a)
    }),
    def("shdr_val", HRSHV, HDR, T::Sint, |a, cx| {
        header_val(cx.res?, a)
    }),
    def("status", HRSHP, ArgSpec::NONE, T::Sint, |_, cx| {
        cx.status.map(|s| Sample::Sint(s as i64))
    }),
    def("url", HRQHV, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(cx.req?.target()))
    }),
    def("url32", HRQHV, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(url32(cx.req?)? as i64))
    }),
    def("url32+src", HRQHV, ArgSpec::NONE, T::Bin, |_, cx| {
        hash_and_src(url32(cx.req?)?, cx.src?)
    }),
    def("url_ip", HRQHV, ArgSpec::NONE, T::Ipv4, |_, cx| {
        url_addr(cx.req?.target()).map(|(a, _)| Sample::Ipv4(a))
    }),
    def("url_param", HRQHV, URL_PARAM, T::Str, |a, cx| {
        url_param(cx.req?.target(), a).map(Sample::str)
    }),
    def("url_port", HRQHV, ArgSpec::NONE, T::Sint, |_, cx| {
        url_addr(cx.req?.target()).map(|(_, p)| Sample::Sint(p as i64))
    }),
    def("urlp", HRQHV, URL_PARAM, T::Str, |a, cx| {
        url_param(cx.req?.target(), a).map(Sample::str)
    }),
    def("urlp_val", HRQHV, URL_PARAM, T::Sint, |a, cx| {
        Some(Sample::Sint(str_to_int(url_param(cx.req?.target(), a)?)))
    }),
    // ---- What goes around the engine: request ids and captures. ----
    def("unique-id", INTRN, ArgSpec::NONE, T::Str, |_, cx| {
        cx.unique_id.map(|s| Sample::str(s.as_bytes()))
    }),
    // `capture.req.hdr(<n>)`, `capture.res.hdr(<n>)`: capture slot `n`
    // (from 0, in declaration order) as captured, not escaped.
    def(
        "capture.req.hdr",
        HRQHP,
        ArgSpec::of(&[A::Sint], 1),
        T::Str,
        |a, cx| slot(cx.cap_req, a),
    ),
    def(
        "capture.res.hdr",
        HRSHP,
        ArgSpec::of(&[A::Sint], 1),
        T::Str,
        |a, cx| slot(cx.cap_resp, a),
    ),
    // The request line's parts; unlike `method`, `url` and `req.ver` they
    // stay for the log line, as in HAProxy.
    def(
        "capture.req.method",
        HRQHP,
        ArgSpec::NONE,
        T::Str,
        |_, cx| Some(Sample::str(cx.req?.method())),
    ),
    def("capture.req.uri", HRQHP, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(cx.req?.target()))
    }),
    def("capture.res.ver", HRSHP, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(http_version(cx.res?)))
    }),
    // The deprecated name: `cookie` reads the request's `Cookie`, or the
    // response's `Set-Cookie` in a response rule, as `hdr` does. (The
    // manual's `set-cookie` is no fetch of the 2.6 binary.)
    def("cookie", HTTP_HV, OPT_STR, T::Str, |a, cx| match cx.res {
        Some(res) => res_cookie(res, a).map(Sample::str),
        None => req_cookie(cx.req?, a).map(Sample::str),
    }),
    def("capture.req.ver", HRQHP, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(http_version(cx.req?)))
    }),
    // ---- Fetches the ACL engine moved here (TLS facts, RDP, the wait of
    // content inspection). ----
    def("req.rdp_cookie_cnt", L6REQ, OPT_STR, T::Sint, |a, cx| {
        // An HTTP request holds no RDP cookie: 0, as HAProxy counts it.
        let p = cx.payload.or(cx.req.map(|_| &b""[..]))?;
        Some(Sample::Sint(rdp_cookie(p, a).is_some() as i64))
    }),
    def("ssl_c_used", L5CLI, ArgSpec::NONE, T::Bool, |_, cx| {
        Some(Sample::Bool(cx.tls.is_some_and(|t| t.client_cert)))
    }),
    // rustls refuses the handshake when a client certificate does not
    // verify: a connection that got here has OpenSSL's X509_V_OK, 0.
    def("ssl_c_verify", L5CLI, ArgSpec::NONE, T::Sint, |_, cx| {
        cx.tls.map(|_| Sample::Sint(0))
    }),
    def("ssl_fc", L5CLI, ArgSpec::NONE, T::Bool, |_, cx| {
        Some(Sample::Bool(cx.tls.is_some()))
    }),
    def(
        "ssl_fc_alg_keysize",
        L5CLI,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| cx.tls.map(|t| Sample::Sint(t.keysize)),
    ),
    def("ssl_fc_alpn", L5CLI, ArgSpec::NONE, T::Str, |_, cx| {
        cx.tls?.alpn.as_deref().map(Sample::str)
    }),
    def("ssl_fc_cipher", L5CLI, ArgSpec::NONE, T::Str, |_, cx| {
        cx.tls.map(|t| Sample::str(t.cipher.as_bytes()))
    }),
    def("ssl_fc_has_crt", L5CLI, ArgSpec::NONE, T::Bool, |_, cx| {
        cx.tls.map(|t| Sample::Bool(t.client_cert))
    }),
    def("ssl_fc_has_sni", L5CLI, ArgSpec::NONE, T::Bool, |_, cx| {
        cx.tls.map(|t| Sample::Bool(t.sni.is_some()))
    }),
    def(
        "ssl_fc_is_resumed",
        L5CLI,
        ArgSpec::NONE,
        T::Bool,
        // False, not absent, on a clear connection, as HAProxy 2.6 (the
        // `0` of `option httpslog`'s line).
        |_, cx| Some(Sample::Bool(cx.tls.is_some_and(|t| t.resumed))),
    ),
    def("ssl_fc_protocol", L5CLI, ArgSpec::NONE, T::Str, |_, cx| {
        cx.tls.map(|t| Sample::str(t.protocol.as_bytes()))
    }),
    // A handshake rustls completed raised no error: OpenSSL's 0 (and no
    // text for it, as HAProxy gives none).
    def("ssl_fc_err", L5CLI, ArgSpec::NONE, T::Sint, |_, cx| {
        cx.tls.map(|_| Sample::Sint(0))
    }),
    def("ssl_fc_err_str", L5CLI, ArgSpec::NONE, T::Str, |_, _| None),
    // sluice accepts no TLS 1.3 early data (0-RTT): never any.
    def(
        "ssl_fc_has_early",
        L5CLI,
        ArgSpec::NONE,
        T::Bool,
        |_, cx| cx.tls.map(|_| Sample::Bool(false)),
    ),
    // No NPN: rustls has none, and `npn` is refused on bind lines.
    def("ssl_fc_npn", L5CLI, ArgSpec::NONE, T::Str, |_, _| None),
    def("ssl_fc_sni", L5CLI, ArgSpec::NONE, T::Str, |_, cx| {
        cx.tls?.sni.as_deref().map(|s| Sample::str(s.as_bytes()))
    }),
    def(
        "ssl_fc_use_keysize",
        L5CLI,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| cx.tls.map(|t| Sample::Sint(t.keysize)),
    ),
    // True once content inspection has waited (`tcp-request
    // inspect-delay`): the rules run after the wait or a complete hello,
    // and HTTP rules after the whole head.
    def("wait_end", INTRN, ArgSpec::NONE, T::Bool, |_, cx| {
        (cx.payload.is_some() || cx.req.is_some()).then_some(Sample::Bool(true))
    }),
    // ---- end of the ACL engine's block ----
    // Variables and authentication (issue 17, variables and userlists).
    FetchDef {
        check: Some(var_arg),
        ..def(
            "var",
            CONST,
            ArgSpec::of(&[A::Str, A::Str], 1),
            T::Any,
            |a, cx| {
                let Arg::Var(v) = &a[0] else { return None };
                // A default is given as a string.
                cx.var(v)
                    .or_else(|| a.get(1).map(|d| Sample::str(d.as_bytes().to_vec())))
            },
        )
    },
    // The Authorization data as the client sent it, unchecked: its scheme,
    // the Basic user and password, a Bearer token (of another field when
    // one is named).
    def("http_auth_type", HRQHV, ArgSpec::NONE, T::Str, |_, cx| {
        let c = credentials(cx, "authorization")?;
        Some(Sample::owned_str(c.scheme().to_string()))
    }),
    def(
        "http_auth_user",
        HRQHV,
        ArgSpec::NONE,
        T::Str,
        |_, cx| match credentials(cx, "authorization")? {
            super::auth::Credentials::Basic { user, .. } => Some(Sample::Str(Cow::Owned(user))),
            super::auth::Credentials::Bearer(_) => None,
        },
    ),
    def(
        "http_auth_pass",
        HRQHV,
        ArgSpec::NONE,
        T::Str,
        |_, cx| match credentials(cx, "authorization")? {
            super::auth::Credentials::Basic { pass, .. } => Some(Sample::Str(Cow::Owned(pass))),
            super::auth::Credentials::Bearer(_) => None,
        },
    ),
    def("http_auth_bearer", HRQHV, OPT_STR, T::Str, |a, cx| {
        let field = a.first().map_or("authorization", Arg::as_str);
        match credentials(cx, field)? {
            super::auth::Credentials::Bearer(t) => Some(Sample::Str(Cow::Owned(t))),
            super::auth::Credentials::Basic { .. } => None,
        }
    }),
    // `http_auth(<userlist>)`: the request's Basic credentials are valid.
    def("http_auth", HRQHV, STR, T::Bool, |a, cx| {
        let auth = cx.req?.values("authorization").next()?;
        super::auth::with_list(a[0].as_str(), |l| {
            Sample::Bool(l.authenticate(auth).is_some())
        })
    }),
    // `http_auth_group(<userlist>)`: the valid user's name (an ACL then
    // checks its groups).
    def("http_auth_group", HRQHV, STR, T::Str, |a, cx| {
        let auth = cx.req?.values("authorization").next()?;
        super::auth::with_list(a[0].as_str(), |l| {
            l.authenticate(auth)
                .map(|u| Sample::owned_str(u.name.clone()))
        })
        .flatten()
    }),
];

/// The credentials of the request's first `field`.
fn credentials(cx: &Ctx<'_>, field: &str) -> Option<super::auth::Credentials> {
    super::auth::Credentials::parse(cx.req?.values(field).next()?)
}

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

fn slot<'a>(caps: &'a [Option<Vec<u8>>], a: &[Arg]) -> Option<Sample<'a>> {
    let n = usize::try_from(a.first()?.as_int()).ok()?;
    Some(Sample::str(caps.get(n)?.as_deref()?))
}

/// Whether the fetch `name` reads the server's buffered bytes, and so may
/// give another answer once more of them are there (HAProxy's
/// `SMP_F_MAY_CHANGE`): `res.len` always, the others while they find
/// nothing.
pub(crate) fn reads_res_payload(name: &str) -> Option<bool> {
    match name {
        "res.len" => Some(true),
        "res.payload" | "res.payload_lv" | "res.ssl_hello_type" | "rep_ssl_hello_type" => {
            Some(false)
        }
        _ => None,
    }
}

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
            | "req.ssl_alpn"
            | "req.ssl_ver"
            | "req.ssl_ec_ext"
            | "req.ssl_st_ext"
            | "req_ssl_ver"
            | "wait_end"
    )
}

/// The `Cookie: <name>=<value>` line of an RDP connection request (after
/// the 4-byte TPKT and 7-byte X.224 headers), when it names `a[0]` (any
/// name when absent): the value.
/// The value of RDP cookie `name` (any name when empty) in `payload`: the
/// `persist rdp-cookie` lookup.
pub(crate) fn rdp_cookie_value<'a>(payload: &'a [u8], name: &str) -> Option<&'a [u8]> {
    rdp_cookie(payload, &[Arg::Str(name.into())])
}

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
        // An HTTP request: HAProxy counts its internal form of what it
        // holds, the size it logs for the head and the body bytes
        // buffered (those sluice waited for).
        (None, Some(h)) => {
            let body = cx.req_body.map_or(0, |b| b.data.len() as u64);
            Some(Sample::Sint((h.logged_size() + body) as i64))
        }
        (None, None) => None,
    }
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

/// The client's address as `src` gives it (the key of the `src_*`
/// fetches).
pub(crate) fn src_sample(a: IpAddr) -> Sample<'static> {
    ip(a)
}

/// An address as HAProxy gives it: an IPv4-mapped IPv6 as IPv4.
pub(crate) fn ip(a: IpAddr) -> Sample<'static> {
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
/// The values of header `a[0]` (of every header without a name), split at
/// commas and trimmed when `split`: an iterator over the head, nothing
/// collected (a fetch of a header's value allocates nothing).
fn values<'a>(head: &'a Head, a: &'a [Arg], split: bool) -> impl Iterator<Item = &'a [u8]> {
    let name = a.first().map(|n| n.as_str()).unwrap_or("");
    let every = head
        .headers()
        .take(if name.is_empty() { usize::MAX } else { 0 })
        .map(|(_, v)| v);
    let named = (!name.is_empty())
        .then(|| head.values(name))
        .into_iter()
        .flatten();
    every
        .chain(named)
        // Without `split` a value is one piece.
        .flat_map(move |v| v.split(move |&b| split && b == b','))
        .map(move |v| if split { crate::wire::h1::trim(v) } else { v })
}

fn header<'a>(head: &'a Head, a: &'a [Arg], split: bool) -> Option<Sample<'a>> {
    let occ = a.get(1).map_or(-1, Arg::as_int);
    let v = match occ {
        0 | -1 => values(head, a, split).last()?,
        n if n > 0 => values(head, a, split).nth(n as usize - 1)?,
        // From the end: counted first, then found.
        n => {
            let all = values(head, a, split).count();
            values(head, a, split).nth(all.checked_sub(n.unsigned_abs() as usize)?)?
        }
    };
    Some(Sample::str(v))
}

fn count(head: &Head, a: &[Arg], split: bool) -> i64 {
    values(head, a, split).count() as i64
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

/// `date([<offset>],[<unit>])`: now plus the offset, in seconds or in the
/// unit named (the offset is in that unit too).
/// `HTTP/1.0` or `HTTP/1.1`, as the `capture.*.ver` fetches give it.
fn http_version(h: &Head) -> &'static [u8] {
    if h.minor == 0 {
        b"HTTP/1.0"
    } else {
        b"HTTP/1.1"
    }
}

/// Whether `a` is one of this machine's addresses: it can be bound, as
/// HAProxy finds out (a system call or two, per evaluation).
pub(crate) fn is_local(a: IpAddr) -> bool {
    std::net::UdpSocket::bind(SocketAddr::new(a, 0)).is_ok()
}

fn date(a: &[Arg]) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let off = a.first().map_or(0, Arg::as_int);
    let t = match a.get(1).map(Arg::as_str) {
        Some("ms") => now.as_millis() as i64,
        Some("us") => now.as_micros() as i64,
        _ => now.as_secs() as i64,
    };
    t.saturating_add(off)
}

fn date_unit(args: &mut [Arg]) -> Result<(), String> {
    match args.get(1).map(Arg::as_str) {
        None | Some("s" | "ms" | "us") => Ok(()),
        Some(u) => Err(format!("expects 's', 'ms' or 'us', got '{u}'")),
    }
}

fn uuid_version(args: &mut [Arg]) -> Result<(), String> {
    match args.first() {
        None => Ok(()),
        Some(Arg::Sint(4)) => Ok(()),
        Some(v) => Err(format!("Unsupported UUID version: '{}'", v.as_int())),
    }
}

/// The first value of header `name` (comma-separated values apart).
fn first_value<'a>(head: &'a Head, name: &'a str) -> Option<&'a [u8]> {
    head.values(name)
        .flat_map(|v| v.split(|&b| b == b','))
        .next()
        .map(crate::wire::h1::trim)
}

/// `base32`: HAProxy's SDBM of the host and the path, with its avalanche
/// (`base,sdbm(1)`).
fn base32(req: &Head) -> Option<u32> {
    let mut key = first_value(req, "host")?.to_vec();
    key.extend_from_slice(path_of(req.target()));
    Some(super::hash::full_hash(super::hash::sdbm(&key)))
}

/// From the path on: the path and its query (no fragment).
pub(crate) fn pathq_of(target: &[u8]) -> &[u8] {
    let rest = &target[path_start(target)..];
    &rest[..memchr::memchr(b'#', rest).unwrap_or(rest.len())]
}

/// The cookies of a `Cookie` header line: `name=value` pairs separated by
/// semicolons, spaces around names and values ignored.
fn cookie_pairs(line: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    line.split(|&b| b == b';').filter_map(|c| {
        let c = crate::wire::h1::trim(c);
        let eq = memchr::memchr(b'=', c)?;
        Some((
            crate::wire::h1::trim(&c[..eq]),
            crate::wire::h1::trim(&c[eq + 1..]),
        ))
    })
}

/// The request cookies named `a[0]` (all without a name).
fn req_cookies<'a>(req: &'a Head, a: &'a [Arg]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let name = a.first().map_or("", Arg::as_str).as_bytes();
    req.values("cookie")
        .flat_map(cookie_pairs)
        .filter(move |(n, _)| name.is_empty() || *n == name)
        .map(|(_, v)| v)
}

/// The last cookie named `a[0]`, or the first cookie without a name.
fn req_cookie<'a>(req: &'a Head, a: &'a [Arg]) -> Option<&'a [u8]> {
    if a.first().is_none_or(|n| n.as_str().is_empty()) {
        return req_cookies(req, a).next();
    }
    req_cookies(req, a).last()
}

/// The cookies the response sets: every `name=value` of the `Set-Cookie`
/// lines, their attributes with a value too (`Path=/`), as HAProxy counts
/// them.
fn res_cookies<'a>(res: &'a Head, a: &'a [Arg]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let name = a.first().map_or("", Arg::as_str).as_bytes();
    res.values("set-cookie")
        .flat_map(cookie_pairs)
        .filter(move |(n, _)| name.is_empty() || *n == name)
        .map(|(_, v)| v)
}

fn res_cookie<'a>(res: &'a Head, a: &'a [Arg]) -> Option<&'a [u8]> {
    if a.first().is_none_or(|n| n.as_str().is_empty()) {
        return res_cookies(res, a).next();
    }
    res_cookies(res, a).last()
}

/// `url_param([<name>[,<delim>]])`: the value of the first parameter
/// `name` (any without one) of the query, which starts after `?` or the
/// delimiter; parameters end at `&`, `;` or the delimiter.
fn url_param<'a>(target: &'a [u8], a: &[Arg]) -> Option<&'a [u8]> {
    let name = a.first().map_or("", Arg::as_str).as_bytes();
    let delim = a.get(1).and_then(|d| d.as_str().bytes().next());
    let is_delim = |b: u8| b == b'&' || b == b';' || Some(b) == delim;
    let start = target.iter().position(|&b| b == b'?' || Some(b) == delim)?;
    let query = &target[start + 1..];
    let query = &query[..memchr::memchr(b'#', query).unwrap_or(query.len())];
    query.split(|&b| is_delim(b)).find_map(|p| {
        let eq = memchr::memchr(b'=', p)?;
        (name.is_empty() || &p[..eq] == name).then(|| &p[eq + 1..])
    })
}

/// The values of the form parameters named `a[0]` (of every parameter
/// with a value without a name), in order: parameters end at `&` or `;`,
/// values are as written (not decoded), as HAProxy's `req.body_param`.
fn body_params<'a>(data: &'a [u8], a: &'a [Arg]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let name = a.first().map_or("", Arg::as_str).as_bytes();
    data.split(|&b| b == b'&' || b == b';')
        .filter_map(move |p| {
            if name.is_empty() {
                return memchr::memchr(b'=', p).map(|eq| &p[eq + 1..]);
            }
            p.strip_prefix(name)?.strip_prefix(b"=")
        })
}

/// The IPv4 address and port of an absolute `http://` URL naming its host
/// by address (port 80 when it has none).
fn url_addr(target: &[u8]) -> Option<(std::net::Ipv4Addr, u16)> {
    let rest = target
        .get(..7)
        .filter(|p| p.eq_ignore_ascii_case(b"http://"))
        .map(|_| &target[7..])?;
    let end = rest
        .iter()
        .position(|&b| b == b'/' || b == b'?')
        .unwrap_or(rest.len());
    let auth = std::str::from_utf8(&rest[..end]).ok()?;
    let (host, port) = match auth.split_once(':') {
        Some((h, p)) => (h, p.parse().ok()?),
        None => (auth, 80),
    };
    Some((host.parse().ok()?, port))
}

/// SPOE's variable-length integer, as `req.hdrs_bin` writes lengths.
fn varint(out: &mut Vec<u8>, mut n: u64) {
    if n < 240 {
        out.push(n as u8);
        return;
    }
    out.push(n as u8 | 240);
    n = (n - 240) >> 4;
    while n >= 128 {
        out.push(n as u8 | 128);
        n = (n - 128) >> 7;
    }
    out.push(n as u8);
}

fn bin(b: &[u8]) -> Sample<'_> {
    Sample::Bin(Cow::Borrowed(b))
}

/// `req.payload(<offset>,<length>)`: that slice of the buffer, once it
/// holds it whole (a length of 0: to the end of what is there).
fn payload(buf: &[u8], off: i64, len: i64) -> Option<&[u8]> {
    let off = usize::try_from(off).ok()?;
    if len == 0 {
        return buf.get(off..);
    }
    let end = off.checked_add(usize::try_from(len).ok()?)?;
    buf.get(off..end)
}

/// `req.payload_lv(<offset1>,<length>[,<offset2>])`: a block whose length
/// is the big-endian number of `length` bytes at `offset1`; it starts
/// right after that number, or at `offset2` (relative to the number's end
/// when signed).
fn payload_lv<'a>(buf: &'a [u8], a: &[Arg]) -> Option<&'a [u8]> {
    let (off, width) = (
        usize::try_from(a[0].as_int()).ok()?,
        usize::try_from(a[1].as_int()).ok()?,
    );
    let field = buf.get(off..off.checked_add(width)?)?;
    let len = field
        .iter()
        .try_fold(0usize, |n, &b| n.checked_mul(256).map(|n| n + b as usize))?;
    let after = off + width;
    let start = match a.get(2).map(Arg::as_str) {
        None | Some("") => after,
        Some(o) if o.starts_with(['+', '-']) => {
            after.checked_add_signed(isize::try_from(str_to_int(o.as_bytes())).ok()?)?
        }
        Some(o) => usize::try_from(str_to_int(o.as_bytes())).ok()?,
    };
    buf.get(start..start.checked_add(len)?)
}

/// The third argument of `req.payload_lv` is a number, signed or not.
fn lv_offset(args: &mut [Arg]) -> Result<(), String> {
    if let Some(o) = args.get(2) {
        let t = o.as_str();
        let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err("payload offset2 is not a number".to_string());
        }
    }
    Ok(())
}

/// A header's value as an address (`hdr_ip`): IPv4 or IPv6, the whole
/// value.
fn header_ip<'a>(head: &'a Head, a: &'a [Arg]) -> Option<Sample<'a>> {
    let v = header(head, a, true)?;
    let text = std::str::from_utf8(v.bytes()?).ok()?;
    match text.parse::<IpAddr>().ok()? {
        IpAddr::V4(v4) => Some(Sample::Ipv4(v4)),
        IpAddr::V6(v6) => Some(Sample::Ipv6(v6)),
    }
}

/// A header's value as an integer (`hdr_val`).
fn header_val<'a>(head: &'a Head, a: &'a [Arg]) -> Option<Sample<'a>> {
    Some(Sample::Sint(str_to_int(header(head, a, true)?.bytes()?)))
}

/// The names of the headers, in order, joined by `a[0]` (a comma by
/// default).
fn header_names<'a>(head: &'a Head, a: &'a [Arg]) -> Option<Sample<'a>> {
    let delim = a.first().map_or(",", Arg::as_str);
    let delim = if delim.is_empty() { "," } else { delim };
    let mut out = Vec::new();
    for (i, (n, _)) in head.headers().enumerate() {
        if i > 0 {
            out.extend_from_slice(delim.as_bytes());
        }
        out.extend(n.iter().map(u8::to_ascii_lowercase));
    }
    Some(Sample::Str(Cow::Owned(out)))
}

/// The header block as text, names in lower case as HAProxy holds them,
/// with its closing empty line.
fn headers_text(head: &Head) -> Sample<'static> {
    let mut out = Vec::new();
    for (n, v) in head.headers() {
        out.extend(n.iter().map(u8::to_ascii_lowercase));
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Sample::Str(Cow::Owned(out))
}

/// The header block as SPOE's length-prefixed strings, ended by two empty
/// ones.
fn headers_bin(head: &Head) -> Sample<'static> {
    let mut out = Vec::new();
    for (n, v) in head.headers() {
        varint(&mut out, n.len() as u64);
        out.extend(n.iter().map(u8::to_ascii_lowercase));
        varint(&mut out, v.len() as u64);
        out.extend_from_slice(v);
    }
    out.extend_from_slice(&[0, 0]);
    Sample::Bin(Cow::Owned(out))
}

/// `url32`: as `base32`, of the host and the URL from its path on, query
/// included (an absolute URL's scheme and authority left out).
fn url32(req: &Head) -> Option<u32> {
    let mut key = first_value(req, "host")?.to_vec();
    key.extend_from_slice(pathq_of(req.target()));
    Some(super::hash::full_hash(super::hash::sdbm(&key)))
}

/// A hash then the client's address, as `base32+src` and `url32+src`.
fn hash_and_src(hash: u32, src: IpAddr) -> Option<Sample<'static>> {
    let mut out = hash.to_be_bytes().to_vec();
    match ip(src) {
        Sample::Ipv4(a) => out.extend_from_slice(&a.octets()),
        Sample::Ipv6(a) => out.extend_from_slice(&a.octets()),
        _ => return None,
    }
    Some(Sample::Bin(Cow::Owned(out)))
}

/// A count of the backend named by `a[0]`, else of the current one.
/// The server or tunnel timeout a `set-timeout` rule gave the stream, in
/// milliseconds, None when no rule did.
fn set_timeout(cx: &Ctx<'_>, kind: TimeoutKind) -> Option<i64> {
    cx.vars?.tune.timeout_ms(kind)
}

fn backend_count<'a>(cx: &Ctx<'a>, a: &[Arg], what: Count) -> Option<Sample<'a>> {
    let be = match a.first().map(Arg::as_str) {
        Some(name) if !name.is_empty() => name,
        _ => cx.backend?,
    };
    cx.proxies?.count(what, be, None).map(Sample::Sint)
}

/// A count of the server `a[0]`: `<backend>/<server>`, or `<server>` of
/// the current backend.
fn server_count<'a>(cx: &Ctx<'a>, a: &[Arg], what: Count) -> Option<Sample<'a>> {
    let (be, srv) = match a[0].as_str().split_once('/') {
        Some((be, srv)) => (be, srv),
        None => (cx.backend?, a[0].as_str()),
    };
    cx.proxies?.count(what, be, Some(srv)).map(Sample::Sint)
}

/// A count of the frontend named by `a[0]`, else of the current one.
fn frontend_count<'a>(cx: &Ctx<'a>, a: &[Arg], what: Count) -> Option<Sample<'a>> {
    let fe = match a.first().map(Arg::as_str) {
        Some(name) if !name.is_empty() => name,
        _ => cx.frontend,
    };
    cx.proxies?.count(what, fe, None).map(Sample::Sint)
}
