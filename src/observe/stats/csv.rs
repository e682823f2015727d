//! `show stat` in HAProxy 2.6.12's CSV format (reference §1.3): the exact
//! header, then FRONTEND / servers / BACKEND rows per proxy in declaration
//! order. Which cells are empty and which are `0` follows the real rows of
//! the reference cell by cell, because scripts index columns by position and
//! some treat an empty cell ("not applicable") differently from `0`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, LazyLock};

use crate::config::model::Mode;
use crate::snapshot::runtime::Runtime;
use crate::snapshot::{BackendRt, FrontendRt, ProxyRt, ServerRt, Snapshot};
use crate::state::Counters;
use crate::state::counters::{ClientTotals, Totals};
use crate::state::health::CheckStatus;

/// HAProxy 2.6.12's header, byte for byte: 103 static fields, the `-`
/// separator, the ssl/h2/h1 module fields of that build, trailing comma.
pub(crate) const HEADER: &str = "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight,act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,throttle,lbtot,tracked,type,rate,rate_lim,rate_max,check_status,check_code,check_duration,hrsp_1xx,hrsp_2xx,hrsp_3xx,hrsp_4xx,hrsp_5xx,hrsp_other,hanafail,req_rate,req_rate_max,req_tot,cli_abrt,srv_abrt,comp_in,comp_out,comp_byp,comp_rsp,lastsess,last_chk,last_agt,qtime,ctime,rtime,ttime,agent_status,agent_code,agent_duration,check_desc,agent_desc,check_rise,check_fall,check_health,agent_rise,agent_fall,agent_health,addr,cookie,mode,algo,conn_rate,conn_rate_max,conn_tot,intercepted,dcon,dses,wrew,connect,reuse,cache_lookups,cache_hits,srv_icur,src_ilim,qtime_max,ctime_max,rtime_max,ttime_max,eint,idle_conn_cur,safe_conn_cur,used_conn_cur,need_conn_est,uweight,agg_server_status,agg_server_check_status,agg_check_status,-,ssl_sess,ssl_reused_sess,ssl_failed_handshake,h2_headers_rcvd,h2_data_rcvd,h2_settings_rcvd,h2_rst_stream_rcvd,h2_goaway_rcvd,h2_detected_conn_protocol_errors,h2_detected_strm_protocol_errors,h2_rst_stream_resp,h2_goaway_resp,h2_open_connections,h2_backend_open_streams,h2_total_connections,h2_backend_total_streams,h1_open_connections,h1_open_streams,h1_total_connections,h1_total_streams,h1_bytes_in,h1_bytes_out,h1_spliced_bytes_in,h1_spliced_bytes_out,\n";

/// Number of columns (the `-` separator included).
pub(crate) const NFIELDS: usize = 128;

/// Column names in header order, derived from [`HEADER`] so the two can
/// never disagree.
pub(crate) static FIELDS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    HEADER
        .trim_start_matches("# ")
        .trim_end_matches('\n')
        .trim_end_matches(',')
        .split(',')
        .collect()
});

fn field_index(name: &str) -> Option<usize> {
    FIELDS.iter().position(|f| *f == name)
}

/// Module columns (after `-`) the ssl module fills on servers too; the h1/h2
/// ones exist only on FRONTEND/BACKEND rows (reference §1.3 real rows).
const SSL_FIELDS: [&str; 3] = ["ssl_sess", "ssl_reused_sess", "ssl_failed_handshake"];

/// Row selection of `show stat <iid|proxy> <type> <sid>` (all by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Filter {
    /// Proxy id, -1 = every proxy.
    pub(crate) iid: i64,
    /// Bitmask: 1 frontends, 2 backends, 4 servers (-1 = all).
    pub(crate) types: i64,
    /// Server id, -1 = every server.
    pub(crate) sid: i64,
}

impl Default for Filter {
    fn default() -> Self {
        Filter {
            iid: -1,
            types: -1,
            sid: -1,
        }
    }
}

impl Filter {
    fn proxy(&self, iid: u32) -> bool {
        self.iid == -1 || self.iid == i64::from(iid)
    }
    fn frontends(&self) -> bool {
        self.types & 1 != 0
    }
    fn backends(&self) -> bool {
        self.types & 2 != 0
    }
    fn server(&self, sid: u32) -> bool {
        self.types & 4 != 0 && (self.sid == -1 || self.sid == i64::from(sid))
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CsvOptions {
    /// Fill `addr`, `cookie`, `algo` (CLI level operator/admin, or
    /// `stats show-legends` on the HTTP page).
    pub(crate) show_legends: bool,
    pub(crate) filter: Filter,
    /// `up`: list only servers that are not DOWN nor in maintenance, and
    /// append ` (up/total)` to the BACKEND status.
    pub(crate) only_up: bool,
    /// `no-maint`: hide servers in maintenance.
    pub(crate) no_maint: bool,
}

/// One row: a cell per column, `None` = empty.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    cells: Vec<Option<String>>,
}

impl Row {
    fn new() -> Self {
        let mut cells = vec![None; NFIELDS];
        if let Some(i) = field_index("-") {
            cells[i] = Some("-".to_string());
        }
        Row { cells }
    }

    fn set(&mut self, name: &str, v: impl ToString) {
        match field_index(name) {
            Some(i) => self.cells[i] = Some(v.to_string()),
            // Names are literals in this file; a unit test renders every
            // row type, so a typo cannot survive to production.
            None => debug_assert!(false, "unknown stat field {name}"),
        }
    }

    fn zero(&mut self, names: &[&str]) {
        for n in names {
            self.set(n, 0);
        }
    }

    /// The cell of column `name`, "" when empty or unknown.
    pub(crate) fn get(&self, name: &str) -> &str {
        field_index(name)
            .and_then(|i| self.cells[i].as_deref())
            .unwrap_or("")
    }

    /// `0` FRONTEND, `1` BACKEND, `2` server.
    pub(crate) fn kind(&self) -> &str {
        self.get("type")
    }

    /// The CSV line, trailing comma and `\n` included.
    pub(crate) fn to_csv(&self) -> String {
        let mut out = String::new();
        for c in &self.cells {
            if let Some(v) = c {
                push_csv_field(&mut out, v);
            }
            out.push(',');
        }
        out.push('\n');
        out
    }
}

/// Appends `v` quoted only if it contains `,` or `"` (inner quotes doubled).
/// Line breaks become spaces: an empty line ends a CLI response, so no
/// field may ever produce one (a check's detail text comes from the peer).
fn push_csv_field(out: &mut String, v: &str) {
    let clean: std::borrow::Cow<'_, str> = if v.contains(['\n', '\r']) {
        v.replace(['\n', '\r'], " ").into()
    } else {
        v.into()
    };
    if clean.contains([',', '"']) {
        out.push('"');
        out.push_str(&clean.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(&clean);
    }
}

/// The whole CSV: header and selected rows, every line ending in `,\n`, no
/// trailing empty line (the CLI framing adds it, the HTTP page must not).
pub(crate) fn render_csv(rt: &Runtime, snap: &Snapshot, opts: CsvOptions) -> String {
    let mut out = String::from(HEADER);
    for row in rows(rt, snap, opts) {
        out.push_str(&row.to_csv());
    }
    out
}

/// The rows `render_csv` prints, for other renderers (the HTML page).
pub(crate) fn rows(rt: &Runtime, snap: &Snapshot, opts: CsvOptions) -> Vec<Row> {
    let mut out = Vec::new();
    let f = opts.filter;
    for p in snap.proxies.iter().filter(|p| f.proxy(p.iid)) {
        if let Some(fe) = &p.frontend
            && f.frontends()
        {
            out.push(frontend_row(p, fe));
        }
        if let Some(be) = &p.backend {
            for sv in &be.servers {
                let st = &sv.state;
                let hidden = (opts.only_up && (st.is_maint() || !st.health.is_up()))
                    || (opts.no_maint && st.is_maint());
                if f.server(sv.sid) && !hidden {
                    out.push(server_row(p, be, sv, opts));
                }
            }
            if f.backends() {
                out.push(backend_row(p, be, opts, rt.uptime_secs()));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// `show stat typed` / `show stat json` (reference §1.3)

/// `tags:type` of each column for servers and frontends, as HAProxy 2.6.12
/// prints them in `show stat typed` (observed); backends differ on four
/// columns, see [`field_tags`].
const FIELD_TAGS: &[(&str, &str)] = &[
    ("pxname", "KNS:str"),
    ("svname", "KNS:str"),
    ("qcur", "MGP:u32"),
    ("qmax", "MMP:u32"),
    ("scur", "MGP:u32"),
    ("smax", "MMP:u32"),
    ("slim", "CLP:u32"),
    ("stot", "MCP:u64"),
    ("bin", "MCP:u64"),
    ("bout", "MCP:u64"),
    ("dreq", "MCP:u64"),
    ("dresp", "MCP:u64"),
    ("ereq", "MCP:u64"),
    ("econ", "MCP:u64"),
    ("eresp", "MCP:u64"),
    ("wretr", "MCP:u64"),
    ("wredis", "MCP:u64"),
    ("status", "SGP:str"),
    ("weight", "MaP:u32"),
    ("act", "SGP:u32"),
    ("bck", "SGP:u32"),
    ("chkfail", "MCP:u64"),
    ("chkdown", "MCP:u64"),
    ("lastchg", "MAP:u32"),
    ("downtime", "MCP:u32"),
    ("pid", "KGP:u32"),
    ("iid", "KGS:u32"),
    ("sid", "KGS:u32"),
    ("lbtot", "MCP:u64"),
    ("type", "CGS:u32"),
    ("rate", "MRP:u32"),
    ("rate_lim", "CLP:u32"),
    ("rate_max", "MMP:u32"),
    ("check_status", "MOP:str"),
    ("check_code", "MOP:u32"),
    ("check_duration", "MDP:u64"),
    ("hrsp_1xx", "MCP:u64"),
    ("hrsp_2xx", "MCP:u64"),
    ("hrsp_3xx", "MCP:u64"),
    ("hrsp_4xx", "MCP:u64"),
    ("hrsp_5xx", "MCP:u64"),
    ("hrsp_other", "MCP:u64"),
    ("req_rate", "MRP:u32"),
    ("req_rate_max", "MMP:u32"),
    ("req_tot", "MCP:u64"),
    ("cli_abrt", "MCP:u64"),
    ("srv_abrt", "MCP:u64"),
    ("comp_in", "MCP:u64"),
    ("comp_out", "MCP:u64"),
    ("comp_byp", "MCP:u64"),
    ("comp_rsp", "MCP:u64"),
    ("lastsess", "MAP:s32"),
    ("last_chk", "MOP:str"),
    ("qtime", "MaP:u32"),
    ("ctime", "MaP:u32"),
    ("rtime", "MaP:u32"),
    ("ttime", "MaP:u32"),
    ("check_desc", "MOP:str"),
    ("check_rise", "CGS:u32"),
    ("check_fall", "CGS:u32"),
    ("check_health", "CGS:u32"),
    ("addr", "CGS:str"),
    ("mode", "CGS:str"),
    ("algo", "CGS:str"),
    ("conn_rate", "MRP:u32"),
    ("conn_rate_max", "MMP:u32"),
    ("conn_tot", "MCP:u64"),
    ("intercepted", "MCP:u64"),
    ("dcon", "MCP:u64"),
    ("dses", "MCP:u64"),
    ("wrew", "MCP:u64"),
    ("connect", "MCP:u64"),
    ("reuse", "MCP:u64"),
    ("cache_lookups", "MCP:u64"),
    ("cache_hits", "MCP:u64"),
    ("srv_icur", "MGP:u32"),
    ("qtime_max", "MMP:u32"),
    ("ctime_max", "MMP:u32"),
    ("rtime_max", "MMP:u32"),
    ("ttime_max", "MMP:u32"),
    ("eint", "MCP:u64"),
    ("idle_conn_cur", "MGP:u32"),
    ("safe_conn_cur", "MGP:u32"),
    ("used_conn_cur", "MGP:u32"),
    ("need_conn_est", "MGP:u32"),
    ("uweight", "MaP:u32"),
    ("agg_server_status", "MGP:u32"),
    ("agg_server_check_status", "MGP:u32"),
    ("agg_check_status", "MGP:u32"),
    ("h2_open_connections", "MGP:u64"),
    ("h2_backend_open_streams", "MGP:u64"),
    ("h1_open_connections", "MGP:u64"),
    ("h1_open_streams", "MGP:u64"),
];

/// `tags:type` of column `name` on a row of `kind` (0 FE, 1 BE, 2 server).
fn field_tags(name: &str, kind: &str) -> &'static str {
    if kind == "1" {
        match name {
            "act" | "bck" | "rate" | "rate_max" => return "MGP:u32",
            _ => {}
        }
    }
    FIELD_TAGS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        // The remaining module columns are all counters.
        .unwrap_or("MCP:u64")
}

/// What `show stat typed`/`json` prints for one present cell.
struct TypedField<'a> {
    obj: &'static str,
    iid: &'a str,
    sid: &'a str,
    pos: usize,
    name: &'static str,
    tags: &'static str,
    ty: &'static str,
    value: &'a str,
}

/// The present cells of a row in typed order: the `-` separator is not a
/// field, so module columns after it have position `csv index - 1`.
fn typed_fields(row: &Row) -> Vec<TypedField<'_>> {
    let kind = row.kind();
    let obj = match kind {
        "0" => "F",
        "1" => "B",
        "3" => "L",
        _ => "S",
    };
    let dash = field_index("-").unwrap_or(NFIELDS);
    let mut out = Vec::new();
    for (i, cell) in row.cells.iter().enumerate() {
        let Some(v) = cell else { continue };
        if i == dash {
            continue;
        }
        let name = FIELDS[i];
        let (tags, ty) = field_tags(name, kind)
            .split_once(':')
            .unwrap_or(("MCP", "u64"));
        out.push(TypedField {
            obj,
            iid: row.get("iid"),
            sid: row.get("sid"),
            pos: if i > dash { i - 1 } else { i },
            name,
            tags,
            ty,
            value: v,
        });
    }
    out
}

/// `show stat typed`: one `F.<iid>.<sid>.<pos>.<name>.1:<tags>:<type>:<value>`
/// line per present cell, rows one after the other.
pub(crate) fn render_typed(rows: &[Row]) -> String {
    let mut out = String::new();
    for row in rows {
        for f in typed_fields(row) {
            out.push_str(&format!(
                "{}.{}.{}.{}.{}.1:{}:{}:{}\n",
                f.obj,
                f.iid,
                f.sid,
                f.pos,
                f.name,
                f.tags,
                f.ty,
                one_line(f.value)
            ));
        }
    }
    out
}

/// `show stat json`: an array of rows, each an array of field objects, no
/// whitespace, one line.
pub(crate) fn render_json(rows: &[Row]) -> String {
    let mut out = String::from("[");
    for (n, row) in rows.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push('[');
        for (k, f) in typed_fields(row).iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            let obj = match f.obj {
                "F" => "Frontend",
                "B" => "Backend",
                "L" => "Listener",
                _ => "Server",
            };
            out.push_str(&format!(
                "{{\"objType\":\"{obj}\",\"proxyId\":{},\"id\":{},\"field\":{{\"pos\":{},\"name\":\"{}\"}},\"processNum\":1,\"tags\":{},\"value\":{}}}",
                f.iid,
                f.sid,
                f.pos,
                f.name,
                json_tags(f.tags),
                json_value(f.ty, f.value)
            ));
        }
        out.push(']');
    }
    out.push_str("]\n");
    out
}

/// A value on one line: an empty line would end a CLI response.
fn one_line(v: &str) -> std::borrow::Cow<'_, str> {
    if v.contains(['\n', '\r']) {
        v.replace(['\n', '\r'], " ").into()
    } else {
        v.into()
    }
}

/// `{"origin":..,"nature":..,"scope":..}` from the 3-letter tags.
pub(crate) fn json_tags(tags: &str) -> String {
    let mut c = tags.chars();
    let origin = match c.next() {
        Some('M') => "Metric",
        Some('S') => "Status",
        Some('K') => "Key",
        Some('C') => "Config",
        Some('P') => "Product",
        _ => "Unknown",
    };
    let nature = match c.next() {
        Some('A') => "Age",
        Some('a') => "Avg",
        Some('C') => "Counter",
        Some('D') => "Duration",
        Some('G') => "Gauge",
        Some('L') => "Limit",
        Some('M') => "Max",
        Some('m') => "Min",
        Some('N') => "Name",
        Some('O') => "Output",
        Some('R') => "Rate",
        Some('T') => "Time",
        _ => "Unknown",
    };
    let scope = match c.next() {
        Some('C') => "Cluster",
        Some('P') => "Process",
        Some('S') => "Service",
        Some('s') => "System",
        _ => "Unknown",
    };
    format!("{{\"origin\":\"{origin}\",\"nature\":\"{nature}\",\"scope\":\"{scope}\"}}")
}

/// `{"type":"u32","value":0}`; numbers bare, strings JSON-escaped.
pub(crate) fn json_value(ty: &str, v: &str) -> String {
    let numeric = match ty {
        "u32" | "u64" => v.parse::<u64>().is_ok(),
        "s32" | "s64" => v.parse::<i64>().is_ok(),
        _ => false,
    };
    if numeric {
        format!("{{\"type\":\"{ty}\",\"value\":{v}}}")
    } else {
        format!("{{\"type\":\"str\",\"value\":{}}}", json_string(v))
    }
}

/// A JSON string literal.
pub(crate) fn json_string(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    for ch in v.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn get(c: &AtomicU64) -> u64 {
    c.load(Relaxed)
}

const MODULE_FIELDS_FE_BE: &[&str] = &[
    "ssl_sess",
    "ssl_reused_sess",
    "ssl_failed_handshake",
    "h2_headers_rcvd",
    "h2_data_rcvd",
    "h2_settings_rcvd",
    "h2_rst_stream_rcvd",
    "h2_goaway_rcvd",
    "h2_detected_conn_protocol_errors",
    "h2_detected_strm_protocol_errors",
    "h2_rst_stream_resp",
    "h2_goaway_resp",
    "h2_open_connections",
    "h2_backend_open_streams",
    "h2_total_connections",
    "h2_backend_total_streams",
    "h1_open_connections",
    "h1_open_streams",
    "h1_total_connections",
    "h1_total_streams",
    "h1_bytes_in",
    "h1_bytes_out",
    "h1_spliced_bytes_in",
    "h1_spliced_bytes_out",
];

/// Cells common to every row type.
fn common(r: &mut Row, p: &ProxyRt, svname: &str, sid: u32, kind: u32, mode: Mode) {
    r.set("pxname", &p.name);
    r.set("svname", svname);
    r.set("pid", 1);
    r.set("iid", p.iid);
    r.set("sid", sid);
    r.set("type", kind);
    r.set("mode", mode.as_str());
    // Never counted by sluice, and HAProxy prints them on every row type.
    r.zero(&["dresp", "wrew", "eint"]);
}

/// HTTP response classes, printed only by HTTP proxies (HAProxy leaves them
/// empty in TCP mode).
/// `comp_in`, `comp_out`, `comp_byp`, `comp_rsp` of a frontend or a
/// backend (the compression filter counts on both).
fn comp_counts(r: &mut Row, t: &Totals) {
    r.set("comp_in", t.comp_in);
    r.set("comp_out", t.comp_out);
    r.set("comp_byp", t.comp_byp);
    r.set("comp_rsp", t.comp_rsp);
}

fn hrsp(r: &mut Row, t: &Totals, mode: Mode) {
    if mode != Mode::Http {
        return;
    }
    const NAMES: [&str; 6] = [
        "hrsp_1xx",
        "hrsp_2xx",
        "hrsp_3xx",
        "hrsp_4xx",
        "hrsp_5xx",
        "hrsp_other",
    ];
    for (n, v) in NAMES.iter().zip(t.hrsp) {
        r.set(n, v);
    }
}

/// The columns every row shows alike: sessions now and at most, and the
/// sessions, bytes and denied responses so far (columns are set by name,
/// so their order here does not matter).
fn traffic(r: &mut Row, c: &Counters, t: &Totals) {
    r.set("scur", c.sess.cur());
    r.set("smax", c.sess.max());
    r.set("stot", t.stot);
    r.set("bin", t.bin);
    r.set("bout", t.bout);
    r.set("dresp", t.dresp);
}

/// The columns of backends and servers alike: the queue, and the
/// connection, response, retry and redispatch errors.
fn server_side(r: &mut Row, c: &Counters, t: &Totals) {
    r.set("qcur", c.queue.cur());
    r.set("qmax", c.queue.max());
    r.set("econ", t.econ);
    r.set("eresp", t.eresp);
    r.set("wretr", t.wretr);
    r.set("wredis", t.wredis);
}

fn frontend_row(p: &ProxyRt, fe: &FrontendRt) -> Row {
    let c = &fe.state.counters;
    let t = &c.totals();
    let ct = &fe.state.client.totals();
    let mut r = Row::new();
    common(&mut r, p, "FRONTEND", 0, 0, fe.mode);
    traffic(&mut r, c, t);
    let now = fe.state.maxconn_now.load(Relaxed);
    r.set("slim", if now > 0 { now } else { fe.maxconn });
    r.set("dreq", t.dreq);
    r.set("ereq", t.ereq);
    r.set(
        "status",
        match fe.state.admin() {
            crate::state::FrontendAdmin::Open => "OPEN",
            crate::state::FrontendAdmin::Paused => "PAUSED",
            crate::state::FrontendAdmin::Stopped => "STOP",
        },
    );
    r.set("rate", c.sess_rate().rate());
    r.set("rate_lim", fe.extras.rate_limit_sessions.unwrap_or(0));
    r.set("rate_max", c.sess_rate().max());
    hrsp(&mut r, t, fe.mode);
    r.set("req_rate", c.req_rate().rate());
    r.set("req_rate_max", c.req_rate().max());
    r.set("req_tot", t.req_tot);
    comp_counts(&mut r, t);
    r.set("conn_rate", fe.state.client.conn_rate().rate());
    r.set("conn_rate_max", fe.state.client.conn_rate().max());
    r.set("conn_tot", ct.conn_tot);
    if fe.mode == Mode::Http {
        r.set("intercepted", t.intercepted);
        r.set("cache_lookups", t.cache_lookups);
        r.set("cache_hits", t.cache_hits);
    }
    r.set("dcon", ct.dcon);
    r.set("dses", ct.dses);
    r.zero(MODULE_FIELDS_FE_BE);
    ssl_counts(&mut r, t);
    if fe.mode == Mode::Http {
        h2_counts(&mut r, c, ct);
        h1_counts(&mut r, c, ct);
    }
    r
}

/// The ssl module's columns sluice tracks.
fn ssl_counts(r: &mut Row, t: &Totals) {
    r.set("ssl_sess", t.ssl_sess);
    r.set("ssl_failed_handshake", t.ssl_failed_handshake);
}

/// The h1 module's columns sluice tracks (client side, frontend rows):
/// connections, requests and their bytes; the open connections are the
/// sessions that are not HTTP/2 (connections still in their TLS handshake
/// count too).
fn h1_counts(r: &mut Row, c: &Counters, t: &ClientTotals) {
    let open = c.sess.cur().saturating_sub(c.h2_open_connections.cur());
    r.set("h1_open_connections", open);
    r.set("h1_total_connections", t.h1_total_connections);
    r.set("h1_total_streams", t.h1_total_streams);
    r.set("h1_bytes_in", t.h1_bytes_in);
    r.set("h1_bytes_out", t.h1_bytes_out);
}

/// The h2 module's columns sluice tracks (client side, frontend rows).
fn h2_counts(r: &mut Row, c: &Counters, t: &ClientTotals) {
    r.set("h2_headers_rcvd", t.h2_headers_rcvd);
    r.set("h2_data_rcvd", t.h2_data_rcvd);
    r.set(
        "h2_detected_conn_protocol_errors",
        t.h2_conn_protocol_errors,
    );
    r.set(
        "h2_detected_strm_protocol_errors",
        t.h2_strm_protocol_errors,
    );
    r.set("h2_goaway_resp", t.h2_goaway_resp);
    r.set("h2_open_connections", c.h2_open_connections.cur());
    r.set("h2_total_connections", t.h2_total_connections);
}

/// `ip:port`, IPv6 in brackets (SocketAddr's Display does exactly that).
fn addr_text(a: SocketAddr) -> String {
    a.to_string()
}

fn server_row(p: &ProxyRt, be: &BackendRt, sv: &ServerRt, opts: CsvOptions) -> Row {
    let st = &sv.state;
    let c = &st.counters;
    let t = &c.totals();
    let h = &st.health;
    let mut r = Row::new();
    common(&mut r, p, &sv.name, sv.sid, 2, be.mode);
    traffic(&mut r, c, t);
    server_side(&mut r, c, t);
    let maxconn = st.maxconn.load(Relaxed);
    if maxconn > 0 {
        r.set("slim", maxconn);
    }
    r.set("status", st.status_text());
    let weight = st.weight.load(Relaxed);
    let idx = be
        .servers
        .iter()
        .position(|s| Arc::ptr_eq(&s.state, st))
        .unwrap_or(0);
    let (eweight, throttle) = be.lb.shown_weight(&be.servers, idx);
    r.set("weight", eweight);
    if let Some(t) = throttle {
        r.set("throttle", t);
    }
    r.set("act", u32::from(!sv.backup));
    r.set("bck", u32::from(sv.backup));
    r.set("lastchg", h.lastchg());
    r.set("lbtot", t.lbtot);
    r.set("rate", c.sess_rate().rate());
    r.set("rate_max", c.sess_rate().max());
    // Check counters show while checks are enabled; the last check's
    // details only while they run (not paused by maintenance).
    if h.check_enabled() {
        r.set("chkfail", get(&h.chkfail));
        r.set("chkdown", get(&h.chkdown));
        r.set("downtime", h.downtime());
    }
    if h.checks_active() {
        let i = h.info();
        r.set("check_status", i.status.code());
        // HAProxy prints a code only for statuses carrying L5-7 data.
        if matches!(
            i.status,
            CheckStatus::L7Ok
                | CheckStatus::L7OkC
                | CheckStatus::L7Sts
                | CheckStatus::ProcOk
                | CheckStatus::ProcErr
                | CheckStatus::ProcTout
        ) {
            r.set("check_code", i.code.unwrap_or(0));
        }
        if !matches!(i.status, CheckStatus::Ini)
            && let Some(d) = i.duration_ms
        {
            r.set("check_duration", d);
        }
        r.set("check_desc", i.status.desc());
        r.set("last_chk", &i.detail);
        r.set("check_rise", i.rise);
        r.set("check_fall", i.fall);
        r.set("check_health", i.health);
    }
    if h.agent_enabled()
        && let Some(a) = h.agent_info()
    {
        r.set("agent_status", a.status.code());
        if matches!(
            a.status,
            CheckStatus::L7Ok | CheckStatus::L7OkC | CheckStatus::L7Sts
        ) {
            r.set("agent_code", a.code.unwrap_or(0));
        }
        if let Some(d) = a.duration_ms {
            r.set("agent_duration", d);
        }
        r.set("agent_desc", a.status.desc());
        r.set("last_agt", &a.detail);
        r.set("agent_rise", a.rise);
        r.set("agent_fall", a.fall);
        r.set("agent_health", a.health);
    }
    hrsp(&mut r, t, be.mode);
    if be.mode == Mode::Http {
        r.set("req_tot", t.req_tot);
    }
    r.set("cli_abrt", t.cli_abrt);
    r.set("srv_abrt", t.srv_abrt);
    r.set("lastsess", c.lastsess_age());
    times(&mut r, c);
    if opts.show_legends {
        if st.pool.load().unix().is_some() {
            // A UNIX socket server, as HAProxy 2.6 shows it.
            r.set("addr", "unix");
        } else if st.has_addr() {
            r.set("addr", addr_text(st.addr()));
        }
        if let Some(c) = &sv.cookie {
            r.set("cookie", c);
        }
    }
    r.set("connect", t.connect);
    r.set("reuse", t.reuse);
    let idle = st.pool.load().idle_count();
    r.set("srv_icur", idle);
    if sv.opts.dynamic {
        // HAProxy's dynamic servers have a limit of idle connections
        // (none); the configured ones show no limit.
        r.set("src_ilim", 0);
    }
    r.set("idle_conn_cur", idle);
    r.set("safe_conn_cur", 0);
    r.set("used_conn_cur", st.inflight());
    r.set("need_conn_est", 0);
    r.set("uweight", weight);
    r.zero(&SSL_FIELDS);
    ssl_counts(&mut r, t);
    r
}

/// qtime/ctime/rtime/ttime (averages over the last 1024 requests) and
/// their maxima; 0 until the data plane records samples, as in HAProxy.
fn times(r: &mut Row, c: &Counters) {
    let avg = c.time_averages();
    let max = c.time_maxima();
    for (n, v) in ["qtime", "ctime", "rtime", "ttime"].iter().zip(avg) {
        r.set(n, v);
    }
    for (n, v) in ["qtime_max", "ctime_max", "rtime_max", "ttime_max"]
        .iter()
        .zip(max)
    {
        r.set(n, v);
    }
}

fn backend_row(p: &ProxyRt, be: &BackendRt, opts: CsvOptions, uptime: u64) -> Row {
    let c = &be.state.counters;
    let t = &c.totals();
    let mut r = Row::new();
    common(&mut r, p, "BACKEND", 0, 1, be.mode);
    traffic(&mut r, c, t);
    server_side(&mut r, c, t);
    r.set("slim", be.fullconn);
    r.set("dreq", t.dreq);

    let (weight, act, bck) = be.lb.shown_totals(&be.servers);
    let mut status = if weight > 0 || be.servers.is_empty() {
        "UP".to_string()
    } else {
        "DOWN".to_string()
    };
    if opts.only_up {
        // Servers not DOWN (maintenance takes a server DOWN too).
        let up = be.servers.iter().filter(|s| s.state.health.is_up()).count();
        status = format!("{status} ({up}/{})", be.servers.len());
    }
    r.set("status", status);
    r.set("weight", weight);
    r.set("act", act);
    r.set("bck", bck);
    r.set("chkdown", be.state.went_down.load(Relaxed));
    r.set("lastchg", backend_lastchg(be, weight > 0, uptime));
    if let Some(d) = be.servers.iter().map(|s| s.state.health.downtime()).min() {
        // The backend is down only while every server is: its downtime is
        // bounded by (and usually equal to) the smallest server downtime.
        r.set("downtime", d);
    }
    r.set("lbtot", t.lbtot);
    r.set("rate", c.sess_rate().rate());
    r.set("rate_max", c.sess_rate().max());
    hrsp(&mut r, t, be.mode);
    if be.mode == Mode::Http {
        r.set("req_tot", t.req_tot);
        r.set("cache_lookups", t.cache_lookups);
        r.set("cache_hits", t.cache_hits);
    }
    r.set("cli_abrt", t.cli_abrt);
    r.set("srv_abrt", t.srv_abrt);
    comp_counts(&mut r, t);
    r.set("lastsess", c.lastsess_age());
    times(&mut r, c);
    if opts.show_legends {
        r.set("algo", be.balance.as_str());
        if let Some(ck) = &be.cookie {
            r.set("cookie", &ck.name);
        }
    }
    r.set("connect", t.connect);
    r.set("reuse", t.reuse);
    r.set("uweight", weight);
    // HAProxy fills these for its Prometheus exporter only; CSV shows 0.
    r.zero(&[
        "agg_server_status",
        "agg_server_check_status",
        "agg_check_status",
    ]);
    r.zero(MODULE_FIELDS_FE_BE);
    ssl_counts(&mut r, t);
    r
}

/// Seconds since the backend last changed state. No per-backend change time
/// is recorded, so derive it from the servers: while DOWN, the last server
/// to go down made it so (the most recent change); while UP, every usable
/// server came up after the backend did, so the oldest one is the best
/// bound. Without servers it never changes: the process age.
fn backend_lastchg(be: &BackendRt, up: bool, uptime: u64) -> u64 {
    let ages = be.servers.iter().map(|s| s.state.health.lastchg());
    if up {
        let usable = be
            .servers
            .iter()
            .filter(|s| s.state.usable())
            .map(|s| s.state.health.lastchg())
            .max();
        usable.or_else(|| ages.max()).unwrap_or(uptime)
    } else {
        ages.min().unwrap_or(uptime)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::stats::fixture;

    /// The header as written in the reference (§1.3), byte for byte.
    const REFERENCE_HEADER: &str = "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight,act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,throttle,lbtot,tracked,type,rate,rate_lim,rate_max,check_status,check_code,check_duration,hrsp_1xx,hrsp_2xx,hrsp_3xx,hrsp_4xx,hrsp_5xx,hrsp_other,hanafail,req_rate,req_rate_max,req_tot,cli_abrt,srv_abrt,comp_in,comp_out,comp_byp,comp_rsp,lastsess,last_chk,last_agt,qtime,ctime,rtime,ttime,agent_status,agent_code,agent_duration,check_desc,agent_desc,check_rise,check_fall,check_health,agent_rise,agent_fall,agent_health,addr,cookie,mode,algo,conn_rate,conn_rate_max,conn_tot,intercepted,dcon,dses,wrew,connect,reuse,cache_lookups,cache_hits,srv_icur,src_ilim,qtime_max,ctime_max,rtime_max,ttime_max,eint,idle_conn_cur,safe_conn_cur,used_conn_cur,need_conn_est,uweight,agg_server_status,agg_server_check_status,agg_check_status,-,ssl_sess,ssl_reused_sess,ssl_failed_handshake,h2_headers_rcvd,h2_data_rcvd,h2_settings_rcvd,h2_rst_stream_rcvd,h2_goaway_rcvd,h2_detected_conn_protocol_errors,h2_detected_strm_protocol_errors,h2_rst_stream_resp,h2_goaway_resp,h2_open_connections,h2_backend_open_streams,h2_total_connections,h2_backend_total_streams,h1_open_connections,h1_open_streams,h1_total_connections,h1_total_streams,h1_bytes_in,h1_bytes_out,h1_spliced_bytes_in,h1_spliced_bytes_out,\n";

    // Real 2.6.12 rows (reference §1.3), used for their empty/zero pattern.
    const REF_FE: &str = "web_fe,FRONTEND,,,0,1,4096,6,501,1811,0,0,0,,,,,OPEN,,,,,,,,,1,2,0,,,,0,6,0,6,,,,0,4,0,1,1,0,,6,6,6,,,0,0,0,0,,,,,,,,,,,,,,,,,,,,,http,,6,6,6,0,0,0,0,,,0,0,,,,,,,0,,,,,,,,,-,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,6,6,483,1977,0,0,";
    const REF_S1: &str = "web_be,s1,0,0,0,1,512,3,254,888,,0,,0,0,0,0,UP,1,1,0,0,0,5,0,,1,3,1,,3,,2,3,,3,L7OK,200,1,0,2,0,1,0,0,,,,3,0,0,,,,,0,,,0,0,2,2,,,,Layer7 check passed,,2,3,4,,,,127.0.0.1:17001,,http,,,,,,,,0,3,0,,,0,,0,0,4,5,0,0,0,0,1,1,,,,-,0,0,0,,,,,,,,,,,,,,,,,,,,,,";
    const REF_M1: &str = "master_be,m1,0,0,0,1,,1,83,535,,0,,0,0,0,0,UP,1,1,0,0,0,5,0,,1,4,1,,1,,2,1,,1,L4OK,,0,0,0,0,0,1,0,,,,1,0,0,,,,,0,,,0,0,0,0,,,,Layer4 check passed,,2,3,4,,,,127.0.0.1:17001,,http,,,,,,,,0,1,0,,,0,,0,0,0,0,0,0,0,0,1,1,,,,-,0,0,0,,,,,,,,,,,,,,,,,,,,,,";
    const REF_BE: &str = "web_be,BACKEND,0,0,0,1,410,5,418,1276,0,0,,0,0,0,0,UP,2,2,0,,0,5,0,,1,3,0,,5,,1,5,,5,,,,0,4,0,1,0,0,,,,5,0,0,0,0,0,0,0,,,0,0,2,2,,,,,,,,,,,,,,http,roundrobin,,,,,,,0,5,0,0,0,,,0,0,4,5,0,,,,,2,0,0,0,-,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,11,11,2426,511,0,0,";
    const REF_STATS_FE: &str = "stats,FRONTEND,,,0,0,4096,0,0,0,0,0,0,,,,,OPEN,,,,,,,,,1,5,0,,,,0,0,0,0,,,,0,0,0,0,0,0,,0,0,0,,,0,0,0,0,,,,,,,,,,,,,,,,,,,,,http,,0,0,0,0,0,0,0,,,0,0,,,,,,,0,,,,,,,,,-,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,";
    const REF_STATS_BE: &str = "stats,BACKEND,0,0,0,0,410,0,0,0,0,0,,0,0,0,0,UP,0,0,0,,0,5,,,1,5,0,,0,,1,0,,0,,,,0,0,0,0,0,0,,,,0,0,0,0,0,0,0,-1,,,0,0,0,0,,,,,,,,,,,,,,http,roundrobin,,,,,,,0,0,0,0,0,,,0,0,0,0,0,,,,,0,0,0,0,-,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,";

    fn cells(line: &str) -> Vec<&str> {
        line.trim_end_matches('\n').split(',').collect()
    }

    fn pattern(line: &str) -> Vec<bool> {
        cells(line).iter().map(|c| c.is_empty()).collect()
    }

    /// Replaces the cells of `names` in `line` by `values`.
    fn with(line: &str, names: &[&str], values: &[&str]) -> String {
        let mut c: Vec<String> = cells(line).iter().map(|s| s.to_string()).collect();
        for (n, v) in names.iter().zip(values) {
            c[field_index(n).unwrap()] = v.to_string();
        }
        c.join(",") + "\n"
    }

    fn legends() -> CsvOptions {
        CsvOptions {
            show_legends: true,
            ..CsvOptions::default()
        }
    }

    fn render(rt: &Runtime, opts: CsvOptions) -> Vec<String> {
        render_csv(rt, &rt.snapshot(), opts)
            .lines()
            .map(|l| format!("{l}\n"))
            .collect()
    }

    #[test]
    fn header_is_byte_exact() {
        assert_eq!(HEADER, REFERENCE_HEADER);
        assert_eq!(FIELDS.len(), NFIELDS);
        assert_eq!(FIELDS[103], "-");
        assert_eq!(FIELDS[89], "src_ilim");
        // And against the shared reference itself, when it is available.
        let doc = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/reference/haproxy-2.6.md"
        );
        if let Ok(text) = std::fs::read_to_string(doc) {
            let line = text.lines().find(|l| l.starts_with("# pxname,")).unwrap();
            assert_eq!(format!("{line}\n"), HEADER);
        }
    }

    #[test]
    fn every_row_has_128_fields_and_a_trailing_comma() {
        let rt = fixture::runtime();
        let lines = render(&rt, legends());
        // header, web_fe, s1, s2, web_be, stats FE, stats BE
        assert_eq!(lines.len(), 7);
        for l in &lines {
            assert!(l.ends_with(",\n"), "{l}");
            assert_eq!(cells(l).len(), NFIELDS + 1, "{l}");
            assert_eq!(cells(l)[NFIELDS], "");
        }
        let names: Vec<String> = lines[1..]
            .iter()
            .map(|l| format!("{}/{}", cells(l)[0], cells(l)[1]))
            .collect();
        assert_eq!(
            names,
            [
                "web_fe/FRONTEND",
                "web_be/s1",
                "web_be/s2",
                "web_be/BACKEND",
                "stats/FRONTEND",
                "stats/BACKEND"
            ]
        );
    }

    #[test]
    fn idle_rows_equal_the_real_idle_rows() {
        let rt = fixture::runtime();
        let lines = render(&rt, legends());
        // An idle frontend is the real idle `stats` FRONTEND, cell for cell.
        assert_eq!(
            lines[1],
            with(REF_STATS_FE, &["pxname", "iid"], &["web_fe", "1"])
        );
        assert_eq!(lines[5], with(REF_STATS_FE, &["iid"], &["3"]));
        // Same for a backend without servers (fullconn and age differ).
        let be = &lines[6];
        let slim = cells(be)[field_index("slim").unwrap()];
        let lastchg = cells(be)[field_index("lastchg").unwrap()];
        assert_eq!(
            *be,
            with(
                REF_STATS_BE,
                &["iid", "slim", "lastchg"],
                &["3", slim, lastchg]
            )
        );
    }

    #[test]
    fn empty_and_zero_cells_follow_the_real_rows() {
        let rt = fixture::runtime();
        let snap = rt.snapshot();
        let be = snap.backend("web_be").unwrap();
        // Give the servers check results like the reference's s1 (L7) and
        // m1 (L4, no maxconn).
        be.servers[0]
            .state
            .health
            .record(CheckStatus::L7Ok, Some(200), 1, String::new());
        be.servers[1]
            .state
            .health
            .record(CheckStatus::L4Ok, None, 0, String::new());
        let lines = render(&rt, legends());
        assert_eq!(pattern(&lines[1]), pattern(REF_FE), "FRONTEND");
        assert_eq!(pattern(&lines[2]), pattern(REF_S1), "server s1");
        assert_eq!(pattern(&lines[3]), pattern(REF_M1), "server s2");
        assert_eq!(pattern(&lines[4]), pattern(REF_BE), "BACKEND");
        let s1 = cells(&lines[2]);
        let col = |n: &str| s1[field_index(n).unwrap()];
        assert_eq!(col("status"), "UP");
        assert_eq!(col("check_status"), "L7OK");
        assert_eq!(col("check_code"), "200");
        assert_eq!(col("check_desc"), "Layer7 check passed");
        assert_eq!(col("check_health"), "4");
        assert_eq!(col("addr"), "127.0.0.1:17001");
        let b = cells(&lines[4]);
        assert_eq!(b[field_index("status").unwrap()], "UP");
        assert_eq!(b[field_index("weight").unwrap()], "2");
        assert_eq!(b[field_index("act").unwrap()], "2");
        assert_eq!(b[field_index("slim").unwrap()], "409");
        assert_eq!(b[field_index("algo").unwrap()], "roundrobin");
    }

    #[test]
    fn a_fresh_checked_server_is_up_going_down() {
        let rt = fixture::runtime();
        let lines = render(&rt, CsvOptions::default());
        let s1 = cells(&lines[2]);
        assert_eq!(s1[field_index("status").unwrap()], "UP 1/3");
        assert_eq!(s1[field_index("check_status").unwrap()], "INI");
        assert_eq!(s1[field_index("check_duration").unwrap()], "");
        // No legends: addr and algo stay empty.
        assert_eq!(s1[field_index("addr").unwrap()], "");
        assert_eq!(cells(&lines[4])[field_index("algo").unwrap()], "");
    }

    #[test]
    fn backend_goes_down_with_its_servers() {
        let rt = fixture::runtime();
        let snap = rt.snapshot();
        for s in &snap.backend("web_be").unwrap().servers {
            s.state
                .health
                .record(CheckStatus::L4Con, None, 0, "Connection refused".into());
        }
        let lines = render(&rt, CsvOptions::default());
        let s1 = cells(&lines[2]);
        assert_eq!(s1[field_index("status").unwrap()], "DOWN");
        assert_eq!(s1[field_index("last_chk").unwrap()], "Connection refused");
        assert_eq!(s1[field_index("chkdown").unwrap()], "1");
        let b = cells(&lines[4]);
        assert_eq!(b[field_index("status").unwrap()], "DOWN");
        assert_eq!(b[field_index("weight").unwrap()], "0");
        assert_eq!(b[field_index("act").unwrap()], "0");
    }

    /// A checked server in maintenance on HAProxy 2.6.12 (observed): check
    /// counters still shown, the last check's details hidden.
    const REF_MAINT: &str = "web_be,s2,0,0,0,0,,0,0,0,,0,,0,0,0,0,MAINT,10,1,0,0,1,7,7,,1,3,2,,0,,2,0,,0,,,,0,0,0,0,0,0,,,,0,0,0,,,,,-1,,,0,0,0,0,,,,,,,,,,,,127.0.0.1:17002,,http,,,,,,,,0,0,0,,,0,,0,0,0,0,0,0,0,0,1,10,,,,-,0,0,0,,,,,,,,,,,,,,,,,,,,,,";

    #[test]
    fn maintenance_and_disabled_checks_follow_the_real_rows() {
        use crate::state::AdminState;
        let rt = fixture::runtime();
        let snap = rt.snapshot();
        let be = snap.backend("web_be").unwrap();
        be.servers[1].state.set_admin(AdminState::Maint);
        let lines = render(&rt, legends());
        assert_eq!(pattern(&lines[3]), pattern(REF_MAINT));
        let s2 = cells(&lines[3]);
        assert_eq!(s2[field_index("status").unwrap()], "MAINT");
        assert_eq!(s2[field_index("chkdown").unwrap()], "1");
        // `disable health`: no check columns at all, status `no check`.
        be.servers[0].state.health.set_check_enabled(false);
        let lines = render(&rt, legends());
        let s1 = cells(&lines[2]);
        assert_eq!(s1[field_index("status").unwrap()], "no check");
        for f in [
            "chkfail",
            "chkdown",
            "downtime",
            "check_status",
            "check_rise",
        ] {
            assert_eq!(s1[field_index(f).unwrap()], "", "{f}");
        }
        // Only s1 is usable: the backend counts it alone.
        let b = cells(&lines[4]);
        assert_eq!(b[field_index("act").unwrap()], "1");
        assert_eq!(b[field_index("weight").unwrap()], "1");
    }

    #[test]
    fn filters_select_rows() {
        let rt = fixture::runtime();
        let opts = |iid, types, sid| CsvOptions {
            filter: Filter { iid, types, sid },
            ..CsvOptions::default()
        };
        let svnames = |o| -> Vec<String> {
            render(&rt, o)[1..]
                .iter()
                .map(|l| cells(l)[1].to_string())
                .collect()
        };
        assert_eq!(svnames(opts(2, 4, -1)), ["s1", "s2"]);
        assert_eq!(svnames(opts(2, 4, 2)), ["s2"]);
        assert_eq!(svnames(opts(-1, 1, -1)), ["FRONTEND", "FRONTEND"]);
        assert_eq!(svnames(opts(3, 3, -1)), ["FRONTEND", "BACKEND"]);
        assert!(svnames(opts(99, -1, -1)).is_empty());
    }

    #[test]
    fn fields_are_quoted_only_when_needed() {
        let mut s = String::new();
        push_csv_field(&mut s, "plain");
        s.push('|');
        push_csv_field(&mut s, "a,b");
        s.push('|');
        push_csv_field(&mut s, "say \"hi\"");
        s.push('|');
        push_csv_field(&mut s, "two\nlines");
        assert_eq!(s, "plain|\"a,b\"|\"say \"\"hi\"\"\"|two lines");
    }
}
