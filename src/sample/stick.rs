//! Stick tables as the sample language sees them: the data types a table
//! stores, a table named in an argument (`src_conn_cur(<table>)`,
//! `in_table(<table>)`), and the access the `sc_*`, `sc<n>_*`, `src_*`
//! fetches and the `table_*` converters need, through [`Stick`]: the
//! store itself lives above (`state/table/`), which implements it.
//!
//! A table argument names a table by the time the configuration is read;
//! the table may be declared further down, so the names are collected
//! while the configuration is parsed ([`begin`], [`take_uses`]) and the
//! configuration checks them once it is whole, with HAProxy's messages.

use std::cell::RefCell;
use std::sync::{Arc, LazyLock, Mutex};

use super::arg::{Arg, ArgSpec, ArgType};
use super::conv::{self, ConvDef};
use super::fetch::{self, Ctx, FetchDef};
use super::value::{Sample, SmpType};

/// HAProxy 2.6's stick counters per stream (`MAX_SESS_STKCTR`): `sc0` to
/// `sc2`.
pub(crate) const MAX_TRACKERS: usize = 3;

/// The longest `gpc(<n>)`, `gpt(<n>)` and `gpc_rate(<n>,<p>)` array.
pub(crate) const MAX_ARRAY: u32 = 100;

/// A kind of data a table stores with each entry, in HAProxy's order
/// (`show table` prints them in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub(crate) enum DataType {
    ServerId,
    Gpt0,
    Gpc0,
    Gpc0Rate,
    ConnCnt,
    ConnRate,
    ConnCur,
    SessCnt,
    SessRate,
    HttpReqCnt,
    HttpReqRate,
    HttpErrCnt,
    HttpErrRate,
    BytesInCnt,
    BytesInRate,
    BytesOutCnt,
    BytesOutRate,
    Gpc1,
    Gpc1Rate,
    ServerKey,
    HttpFailCnt,
    HttpFailRate,
    Gpt,
    Gpc,
    GpcRate,
}

/// How a data type's value is kept, HAProxy's "standard types".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Std {
    /// A signed 32-bit integer (`server_id`).
    Sint,
    /// An unsigned 32-bit integer (counters, tags).
    Uint,
    /// An unsigned 64-bit integer (byte counts).
    Ull,
    /// A frequency counter over the type's period.
    Freq,
    /// A server's name or address (`server_key`).
    Dict,
}

impl DataType {
    pub(crate) const ALL: [DataType; 25] = [
        DataType::ServerId,
        DataType::Gpt0,
        DataType::Gpc0,
        DataType::Gpc0Rate,
        DataType::ConnCnt,
        DataType::ConnRate,
        DataType::ConnCur,
        DataType::SessCnt,
        DataType::SessRate,
        DataType::HttpReqCnt,
        DataType::HttpReqRate,
        DataType::HttpErrCnt,
        DataType::HttpErrRate,
        DataType::BytesInCnt,
        DataType::BytesInRate,
        DataType::BytesOutCnt,
        DataType::BytesOutRate,
        DataType::Gpc1,
        DataType::Gpc1Rate,
        DataType::ServerKey,
        DataType::HttpFailCnt,
        DataType::HttpFailRate,
        DataType::Gpt,
        DataType::Gpc,
        DataType::GpcRate,
    ];

    pub(crate) fn name(self) -> &'static str {
        use DataType::*;
        match self {
            ServerId => "server_id",
            Gpt0 => "gpt0",
            Gpc0 => "gpc0",
            Gpc0Rate => "gpc0_rate",
            ConnCnt => "conn_cnt",
            ConnRate => "conn_rate",
            ConnCur => "conn_cur",
            SessCnt => "sess_cnt",
            SessRate => "sess_rate",
            HttpReqCnt => "http_req_cnt",
            HttpReqRate => "http_req_rate",
            HttpErrCnt => "http_err_cnt",
            HttpErrRate => "http_err_rate",
            BytesInCnt => "bytes_in_cnt",
            BytesInRate => "bytes_in_rate",
            BytesOutCnt => "bytes_out_cnt",
            BytesOutRate => "bytes_out_rate",
            Gpc1 => "gpc1",
            Gpc1Rate => "gpc1_rate",
            ServerKey => "server_key",
            HttpFailCnt => "http_fail_cnt",
            HttpFailRate => "http_fail_rate",
            Gpt => "gpt",
            Gpc => "gpc",
            GpcRate => "gpc_rate",
        }
    }

    /// The type named `name` (`server_name` is the old name of
    /// `server_key`, as HAProxy still takes it).
    pub(crate) fn from_name(name: &str) -> Option<DataType> {
        if name == "server_name" {
            return Some(DataType::ServerKey);
        }
        DataType::ALL.into_iter().find(|d| d.name() == name)
    }

    pub(crate) fn std(self) -> Std {
        use DataType::*;
        match self {
            ServerId => Std::Sint,
            BytesInCnt | BytesOutCnt => Std::Ull,
            ServerKey => Std::Dict,
            Gpc0Rate | ConnRate | SessRate | HttpReqRate | HttpErrRate | BytesInRate
            | BytesOutRate | Gpc1Rate | HttpFailRate | GpcRate => Std::Freq,
            _ => Std::Uint,
        }
    }

    /// An array of `<n>` elements (`gpc(<n>)`).
    pub(crate) fn is_array(self) -> bool {
        matches!(self, DataType::Gpt | DataType::Gpc | DataType::GpcRate)
    }

    /// Kept by this process only, never sent to peers (`conn_cur`).
    #[allow(dead_code)]
    pub(crate) fn is_local(self) -> bool {
        self == DataType::ConnCur
    }
}

/// A value of a stick counter as a fetch names it, with HAProxy's
/// fall-backs: `gpc0` is the `gpc0` data type, else the first element of
/// a `gpc` array; `gpc(<n>)` only the array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counter {
    ServerId,
    ConnCnt,
    ConnCur,
    ConnRate,
    SessCnt,
    SessRate,
    HttpReqCnt,
    HttpReqRate,
    HttpErrCnt,
    HttpErrRate,
    HttpFailCnt,
    HttpFailRate,
    /// `bytes_in_cnt` in kilobytes (`sc_kbytes_in`).
    KbytesIn,
    BytesInRate,
    KbytesOut,
    BytesOutRate,
    Gpt0,
    Gpt(u32),
    Gpc0,
    Gpc1,
    Gpc(u32),
    Gpc0Rate,
    Gpc1Rate,
    GpcRate(u32),
}

/// What a fetch or converter does with the entry it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StickOp {
    /// Reads a value.
    Get(Counter),
    /// Adds one to a general purpose counter (`gpc0`, `gpc1`, `gpc(<n>)`:
    /// its rate too), giving the new value.
    Inc(Counter),
    /// Sets a general purpose counter to zero, giving the old value.
    Clr(Counter),
    /// How many streams track the entry.
    Trackers,
    /// Whether a counter is tracked (`sc_tracked`).
    Tracked,
    /// Adds one to `conn_cnt`, giving the new value (`src_updt_conn_cnt`).
    UpdtConnCnt,
    /// Whether the key is in the table (`in_table`).
    InTable,
}

impl StickOp {
    /// An operation that makes the entry of a `src_*` fetch when it is not
    /// there yet (HAProxy's `smp_create_src_stkctr`).
    pub(crate) fn creates(self) -> bool {
        matches!(
            self,
            StickOp::Inc(_) | StickOp::Clr(_) | StickOp::UpdtConnCnt
        )
    }
}

/// The tables and tracked counters of the stream an expression is
/// evaluated for. Each answer is HAProxy's: `None` where it gives no
/// sample (not tracked, the data not stored), else the sample.
pub(crate) trait Stick: std::fmt::Debug + Sync {
    /// `op` on the entry stream counter `sc` tracks (the stream's, else
    /// its session's); with `alt`, on the entry of the same key in that
    /// table.
    fn tracked(&self, sc: i64, alt: Option<&TableRef>, op: StickOp) -> Option<Sample<'static>>;
    /// `op` on the entry of `key` in `table` (`src_*`, `table_*`).
    fn keyed(&self, table: &TableRef, key: Sample<'_>, op: StickOp) -> Option<Sample<'static>>;
    /// A table's `size` and the entries it holds (`table_avl`,
    /// `table_cnt`).
    fn usage(&self, table: &TableRef) -> Option<(u32, u32)>;
}

/// A table named by an argument: its name and the number all names get
/// in this process (the same name the same number, across reloads), so
/// that a snapshot finds the table with an index.
#[derive(Debug, Clone)]
pub(crate) struct TableRef {
    pub(crate) id: u32,
    pub(crate) name: Arc<str>,
}

/// Two references are equal when they name the same table.
impl PartialEq for TableRef {
    fn eq(&self, other: &TableRef) -> bool {
        self.name == other.name
    }
}

/// Every table name met so far, numbered in order (never forgotten: a
/// process meets a handful).
static NAMES: LazyLock<Mutex<Vec<Arc<str>>>> = LazyLock::new(|| Mutex::new(Vec::new()));

impl TableRef {
    pub(crate) fn named(name: &str) -> TableRef {
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        let id = match names.iter().position(|n| **n == *name) {
            Some(i) => i,
            None => {
                names.push(Arc::from(name));
                names.len() - 1
            }
        };
        TableRef {
            id: id as u32,
            name: names[id].clone(),
        }
    }
}

/// Where an expression is being read, for the messages about the tables
/// it names (HAProxy's argument contexts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum ArgCtx {
    /// An expression of no particular place ("in").
    #[default]
    Other,
    Acl,
    HttpRequest,
    HttpResponse,
    TcpConnection,
    TcpSession,
    TcpContent,
    Track,
    Stick,
    Log,
    UniqueId,
    Capture,
    UseBackend,
    Redirect,
}

impl ArgCtx {
    /// The keyword kind and place HAProxy's messages name.
    fn words(self) -> (&'static str, &'static str) {
        let fetch = "sample fetch keyword";
        match self {
            ArgCtx::Acl => ("ACL keyword", "in"),
            ArgCtx::Other => (fetch, "in"),
            ArgCtx::HttpRequest => (fetch, "in http-request expression in"),
            ArgCtx::HttpResponse => (fetch, "in http-response response in"),
            ArgCtx::TcpConnection => (fetch, "in tcp-request connection expression in"),
            ArgCtx::TcpSession => (fetch, "in tcp-request session expression in"),
            ArgCtx::TcpContent => (fetch, "in tcp-request content expression in"),
            ArgCtx::Track => (fetch, "in tracking rule in"),
            ArgCtx::Stick => (fetch, "in stick rule in"),
            ArgCtx::Log => (fetch, "in log-format string in"),
            ArgCtx::UniqueId => (fetch, "in unique-id-format string in"),
            ArgCtx::Capture => (fetch, "in capture rule in"),
            ArgCtx::UseBackend => (fetch, "in use_backend expression in"),
            ArgCtx::Redirect => (fetch, "in redirect format string in"),
        }
    }
}

/// One table argument met while reading a configuration, to be checked
/// once it is whole.
#[derive(Debug, Clone)]
pub(crate) struct TableUse {
    pub(crate) table: TableRef,
    /// No name was given: the proxy's own table.
    pub(crate) implicit: bool,
    /// The proxy the expression is in, and whether it is a `defaults`
    /// section (which has no table of its own).
    pub(crate) proxy: String,
    pub(crate) in_defaults: bool,
    pub(crate) file: Arc<str>,
    pub(crate) line: u32,
    /// 1-based.
    pub(crate) arg_pos: usize,
    pub(crate) fetch: &'static str,
    pub(crate) conv: Option<&'static str>,
    pub(crate) ctx: ArgCtx,
}

impl TableUse {
    /// HAProxy's message about this use, `what` being its complaint
    /// ("unable to find table 'x'").
    pub(crate) fn message(&self, what: &str) -> String {
        let (kind, place) = self.ctx.words();
        let conv = match self.conv {
            Some(c) => format!("conversion keyword '{c}' for "),
            None => String::new(),
        };
        format!(
            "{what} referenced in arg {} of {conv}{kind} '{}' {place} proxy '{}'.",
            self.arg_pos, self.fetch, self.proxy
        )
    }
}

/// What the parser of a configuration tells the expressions it reads.
#[derive(Default)]
struct Collecting {
    proxy: String,
    in_defaults: bool,
    file: Arc<str>,
    line: u32,
    ctx: ArgCtx,
    uses: Vec<TableUse>,
}

thread_local! {
    static COLLECTING: RefCell<Option<Collecting>> = const { RefCell::new(None) };
}

/// Starts collecting the table arguments of the configuration this
/// thread reads.
pub(crate) fn begin() {
    COLLECTING.with(|c| *c.borrow_mut() = Some(Collecting::default()));
}

/// Ends the collection: every table argument met.
pub(crate) fn take_uses() -> Vec<TableUse> {
    COLLECTING
        .with(|c| c.borrow_mut().take())
        .map(|c| c.uses)
        .unwrap_or_default()
}

fn with_collecting(f: impl FnOnce(&mut Collecting)) {
    COLLECTING.with(|c| {
        if let Some(c) = c.borrow_mut().as_mut() {
            f(c)
        }
    });
}

/// The section being read: a proxy (its table is the default one), or a
/// `defaults` section.
pub(crate) fn in_proxy(name: &str, defaults: bool) {
    with_collecting(|c| {
        c.proxy = name.to_string();
        c.in_defaults = defaults;
    });
}

/// The line being read.
pub(crate) fn at(file: &Arc<str>, line: u32) {
    with_collecting(|c| {
        c.file = file.clone();
        c.line = line;
        c.ctx = ArgCtx::Other;
    });
}

/// Where the expressions of the rest of the line are used.
pub(crate) fn context(ctx: ArgCtx) {
    with_collecting(|c| c.ctx = ctx);
}

/// Runs `f` with the expressions it reads in context `ctx`, the line's
/// context restored after (an ACL inside a rule's condition).
pub(crate) fn within<R>(ctx: ArgCtx, f: impl FnOnce() -> R) -> R {
    let mut before = ArgCtx::Other;
    with_collecting(|c| before = std::mem::replace(&mut c.ctx, ctx));
    let r = f();
    with_collecting(|c| c.ctx = before);
    r
}

thread_local! {
    /// The proxy whose expressions are compiled once the configuration is
    /// read (its log format), for the table arguments they leave empty.
    static COMPILING: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `f`, which compiles expressions of proxy `name` outside the
/// reading of the configuration: an empty table argument names its table.
pub(crate) fn compiling_for<R>(name: &str, f: impl FnOnce() -> R) -> R {
    COMPILING.with(|c| *c.borrow_mut() = Some(name.to_string()));
    let r = f();
    COMPILING.with(|c| *c.borrow_mut() = None);
    r
}

/// The table of the proxy being read (a table argument left empty).
fn default_table() -> String {
    let mut name = COMPILING.with(|c| c.borrow().clone()).unwrap_or_default();
    with_collecting(|c| name = c.proxy.clone());
    name
}

/// Fills a keyword's table arguments once they are parsed: an empty one
/// is the proxy's own table; each is recorded for the checks. A table
/// argument that is mandatory and missing altogether (`src_conn_cur`
/// without parentheses) is HAProxy's empty one.
pub(crate) fn resolve_args(
    spec: ArgSpec,
    args: &mut Vec<Arg>,
    fetch: &'static str,
    conv: Option<&'static str>,
) {
    if args.len() < spec.min && spec.types.get(args.len()) == Some(&ArgType::Tab) {
        args.push(Arg::Str(String::new()));
    }
    for (i, a) in args.iter_mut().enumerate() {
        if spec.types.get(i) != Some(&ArgType::Tab) {
            continue;
        }
        let given = match a {
            Arg::Str(s) => std::mem::take(s),
            _ => continue,
        };
        let implicit = given.is_empty();
        let name = if implicit { default_table() } else { given };
        let table = TableRef::named(&name);
        with_collecting(|c| {
            c.uses.push(TableUse {
                table: table.clone(),
                implicit,
                proxy: c.proxy.clone(),
                in_defaults: c.in_defaults,
                file: c.file.clone(),
                line: c.line,
                arg_pos: i + 1,
                fetch,
                conv,
                ctx: c.ctx,
            })
        });
        *a = Arg::Table(table);
    }
}

// ---- The keywords. ----

use ArgType as A;
use SmpType as T;

/// `sc_*(<ctr>[,<table>])`.
const SC: ArgSpec = ArgSpec::of(&[A::Sint, A::Tab], 1);
/// `sc_*(<idx>,<ctr>[,<table>])`.
const SC_IDX: ArgSpec = ArgSpec::of(&[A::Sint, A::Sint, A::Tab], 2);
/// `sc<n>_*([<table>])`.
const SCN: ArgSpec = ArgSpec::of(&[A::Tab], 0);
/// `src_*([<table>])`.
const SRC: ArgSpec = ArgSpec::of(&[A::Tab], 1);
/// `src_*(<idx>,[<table>])`.
const SRC_IDX: ArgSpec = ArgSpec::of(&[A::Sint, A::Tab], 2);

fn table_arg(a: Option<&Arg>) -> Option<&TableRef> {
    match a {
        Some(Arg::Table(t)) => Some(t),
        _ => None,
    }
}

/// An indexed counter: `gpc(<n>)` and the like take the index as HAProxy
/// reads it (an unsigned 32-bit number).
fn indexed(c: fn(u32) -> Counter, a: &Arg) -> Counter {
    c(a.as_int() as u32)
}

/// `sc_*(<ctr>[,<table>])`, `sc<n>_*([<table>])`.
fn sc<'a>(cx: &Ctx<'a>, sc: i64, alt: Option<&TableRef>, op: StickOp) -> Option<Sample<'a>> {
    let stick = cx.stick?;
    stick.tracked(sc, alt, op)
}

/// `src_*([<table>])`: the client's address looked up in the table.
fn src<'a>(cx: &Ctx<'a>, table: Option<&TableRef>, op: StickOp) -> Option<Sample<'a>> {
    let stick = cx.stick?;
    let key = fetch::src_sample(cx.src?);
    stick.keyed(table?, key, op)
}

/// The families of fetches of one operation: `sc_<kw>`, `sc0_<kw>` ..
/// `sc2_<kw>` and `src_<kw>`.
macro_rules! family {
    ($kw:literal, $uses:expr, $src_uses:expr, $op:expr) => {
        [
            fetch::def(concat!("sc_", $kw), $uses, SC, T::Sint, |a, cx| {
                sc(cx, a[0].as_int(), table_arg(a.get(1)), $op)
            }),
            fetch::def(concat!("sc0_", $kw), $uses, SCN, T::Sint, |a, cx| {
                sc(cx, 0, table_arg(a.first()), $op)
            }),
            fetch::def(concat!("sc1_", $kw), $uses, SCN, T::Sint, |a, cx| {
                sc(cx, 1, table_arg(a.first()), $op)
            }),
            fetch::def(concat!("sc2_", $kw), $uses, SCN, T::Sint, |a, cx| {
                sc(cx, 2, table_arg(a.first()), $op)
            }),
            fetch::def(concat!("src_", $kw), $src_uses, SRC, T::Sint, |a, cx| {
                src(cx, table_arg(a.first()), $op)
            }),
        ]
    };
}

/// The indexed families (`sc_get_gpc(<idx>,<ctr>[,<table>])`,
/// `src_get_gpc(<idx>,<table>)`), which have no `sc<n>_` form (but
/// `sc1_clr_gpc`, which the 2.6 binary registers and its manual does not
/// name: left out, as the manual's vocabulary is sluice's).
macro_rules! indexed_family {
    ($kw:literal, $op:expr, $ctr:expr) => {
        [
            fetch::def(concat!("sc_", $kw), INTRN, SC_IDX, T::Sint, |a, cx| {
                sc(
                    cx,
                    a[1].as_int(),
                    table_arg(a.get(2)),
                    $op(indexed($ctr, &a[0])),
                )
            }),
            fetch::def(concat!("src_", $kw), L4CLI, SRC_IDX, T::Sint, |a, cx| {
                src(cx, table_arg(a.get(1)), $op(indexed($ctr, &a[0])))
            }),
        ]
    };
}

use Counter as C;
use StickOp as Op;
use fetch::{INTRN, L4CLI};

static BASIC: [[FetchDef; 5]; 24] = [
    family!("bytes_in_rate", INTRN, L4CLI, Op::Get(C::BytesInRate)),
    family!("bytes_out_rate", INTRN, L4CLI, Op::Get(C::BytesOutRate)),
    family!("clr_gpc0", INTRN, L4CLI, Op::Clr(C::Gpc0)),
    family!("clr_gpc1", INTRN, L4CLI, Op::Clr(C::Gpc1)),
    family!("conn_cnt", INTRN, L4CLI, Op::Get(C::ConnCnt)),
    family!("conn_cur", INTRN, L4CLI, Op::Get(C::ConnCur)),
    family!("conn_rate", INTRN, L4CLI, Op::Get(C::ConnRate)),
    family!("get_gpt0", INTRN, L4CLI, Op::Get(C::Gpt0)),
    family!("get_gpc0", INTRN, L4CLI, Op::Get(C::Gpc0)),
    family!("get_gpc1", INTRN, L4CLI, Op::Get(C::Gpc1)),
    family!("gpc0_rate", INTRN, L4CLI, Op::Get(C::Gpc0Rate)),
    family!("gpc1_rate", INTRN, L4CLI, Op::Get(C::Gpc1Rate)),
    family!("http_err_cnt", INTRN, L4CLI, Op::Get(C::HttpErrCnt)),
    family!("http_err_rate", INTRN, L4CLI, Op::Get(C::HttpErrRate)),
    family!("http_fail_cnt", INTRN, L4CLI, Op::Get(C::HttpFailCnt)),
    family!("http_fail_rate", INTRN, L4CLI, Op::Get(C::HttpFailRate)),
    family!("http_req_cnt", INTRN, L4CLI, Op::Get(C::HttpReqCnt)),
    family!("http_req_rate", INTRN, L4CLI, Op::Get(C::HttpReqRate)),
    family!("inc_gpc0", INTRN, L4CLI, Op::Inc(C::Gpc0)),
    family!("inc_gpc1", INTRN, L4CLI, Op::Inc(C::Gpc1)),
    family!("kbytes_in", L4CLI, L4CLI, Op::Get(C::KbytesIn)),
    family!("kbytes_out", L4CLI, L4CLI, Op::Get(C::KbytesOut)),
    family!("sess_cnt", INTRN, L4CLI, Op::Get(C::SessCnt)),
    family!("sess_rate", INTRN, L4CLI, Op::Get(C::SessRate)),
];

static INDEXED: [[FetchDef; 2]; 5] = [
    indexed_family!("clr_gpc", Op::Clr, C::Gpc),
    indexed_family!("get_gpt", Op::Get, C::Gpt),
    indexed_family!("get_gpc", Op::Get, C::Gpc),
    indexed_family!("gpc_rate", Op::Get, C::GpcRate),
    indexed_family!("inc_gpc", Op::Inc, C::Gpc),
];

/// The fetches without a whole family.
static OTHERS: &[FetchDef] = &[
    fetch::def("sc_tracked", INTRN, SC, T::Bool, |a, cx| {
        sc(cx, a[0].as_int(), table_arg(a.get(1)), Op::Tracked)
    }),
    fetch::def("sc0_tracked", INTRN, SCN, T::Bool, |a, cx| {
        sc(cx, 0, table_arg(a.first()), Op::Tracked)
    }),
    fetch::def("sc1_tracked", INTRN, SCN, T::Bool, |a, cx| {
        sc(cx, 1, table_arg(a.first()), Op::Tracked)
    }),
    fetch::def("sc2_tracked", INTRN, SCN, T::Bool, |a, cx| {
        sc(cx, 2, table_arg(a.first()), Op::Tracked)
    }),
    fetch::def("sc_trackers", INTRN, SC, T::Sint, |a, cx| {
        sc(cx, a[0].as_int(), table_arg(a.get(1)), Op::Trackers)
    }),
    fetch::def("sc0_trackers", INTRN, SCN, T::Sint, |a, cx| {
        sc(cx, 0, table_arg(a.first()), Op::Trackers)
    }),
    fetch::def("sc1_trackers", INTRN, SCN, T::Sint, |a, cx| {
        sc(cx, 1, table_arg(a.first()), Op::Trackers)
    }),
    fetch::def("sc2_trackers", INTRN, SCN, T::Sint, |a, cx| {
        sc(cx, 2, table_arg(a.first()), Op::Trackers)
    }),
    fetch::def("src_updt_conn_cnt", L4CLI, SRC, T::Sint, |a, cx| {
        src(cx, table_arg(a.first()), Op::UpdtConnCnt)
    }),
    fetch::def("table_avl", INTRN, SRC, T::Sint, |a, cx| {
        let (size, used) = cx.stick?.usage(table_arg(a.first())?)?;
        Some(Sample::Sint(i64::from(size) - i64::from(used)))
    }),
    fetch::def("table_cnt", INTRN, SRC, T::Sint, |a, cx| {
        let (_, used) = cx.stick?.usage(table_arg(a.first())?)?;
        Some(Sample::Sint(i64::from(used)))
    }),
];

/// Every stick table fetch, for the registry (`fetch::TABLES`).
pub(crate) fn fetches() -> impl Iterator<Item = &'static FetchDef> {
    BASIC
        .iter()
        .flatten()
        .chain(INDEXED.iter().flatten())
        .chain(OTHERS.iter())
}

/// `table_*(<table>)`: the input looked up in the table.
fn keyed<'a>(s: Sample<'a>, a: &'a [Arg], cx: &Ctx<'a>, op: StickOp) -> Option<Sample<'a>> {
    let stick = cx.stick?;
    stick.keyed(table_arg(a.last())?, s, op)
}

const TAB: ArgSpec = ArgSpec::of(&[A::Tab], 1);
const IDX_TAB: ArgSpec = ArgSpec::of(&[A::Sint, A::Tab], 2);

macro_rules! table_conv {
    ($kw:literal, $op:expr) => {
        conv::def($kw, TAB, T::Any, T::Sint, |s, a, cx| keyed(s, a, cx, $op))
    };
}

/// The converters of stick tables (`in_table`, `table_*`).
pub(crate) static CONVERTERS: &[ConvDef] = &[
    conv::def("in_table", TAB, T::Any, T::Bool, |s, a, cx| {
        keyed(s, a, cx, Op::InTable)
    }),
    table_conv!("table_bytes_in_rate", Op::Get(C::BytesInRate)),
    table_conv!("table_bytes_out_rate", Op::Get(C::BytesOutRate)),
    table_conv!("table_conn_cnt", Op::Get(C::ConnCnt)),
    table_conv!("table_conn_cur", Op::Get(C::ConnCur)),
    table_conv!("table_conn_rate", Op::Get(C::ConnRate)),
    conv::def("table_gpt", IDX_TAB, T::Any, T::Sint, |s, a, cx| {
        keyed(s, a, cx, Op::Get(indexed(C::Gpt, &a[0])))
    }),
    table_conv!("table_gpt0", Op::Get(C::Gpt0)),
    conv::def("table_gpc", IDX_TAB, T::Any, T::Sint, |s, a, cx| {
        keyed(s, a, cx, Op::Get(indexed(C::Gpc, &a[0])))
    }),
    table_conv!("table_gpc0", Op::Get(C::Gpc0)),
    table_conv!("table_gpc1", Op::Get(C::Gpc1)),
    conv::def("table_gpc_rate", IDX_TAB, T::Any, T::Sint, |s, a, cx| {
        keyed(s, a, cx, Op::Get(indexed(C::GpcRate, &a[0])))
    }),
    table_conv!("table_gpc0_rate", Op::Get(C::Gpc0Rate)),
    table_conv!("table_gpc1_rate", Op::Get(C::Gpc1Rate)),
    table_conv!("table_http_err_cnt", Op::Get(C::HttpErrCnt)),
    table_conv!("table_http_err_rate", Op::Get(C::HttpErrRate)),
    table_conv!("table_http_fail_cnt", Op::Get(C::HttpFailCnt)),
    table_conv!("table_http_fail_rate", Op::Get(C::HttpFailRate)),
    table_conv!("table_http_req_cnt", Op::Get(C::HttpReqCnt)),
    table_conv!("table_http_req_rate", Op::Get(C::HttpReqRate)),
    table_conv!("table_kbytes_in", Op::Get(C::KbytesIn)),
    table_conv!("table_kbytes_out", Op::Get(C::KbytesOut)),
    table_conv!("table_server_id", Op::Get(C::ServerId)),
    table_conv!("table_sess_cnt", Op::Get(C::SessCnt)),
    table_conv!("table_sess_rate", Op::Get(C::SessRate)),
    table_conv!("table_trackers", Op::Trackers),
];
