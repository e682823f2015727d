//! `http-request use-service prometheus-exporter`: HAProxy 2.6's exporter
//! (`addons/promex`) in the Prometheus text exposition format, version
//! 0.0.4. Metric names, label sets, `# HELP` texts and `# TYPE`s are those
//! real haproxy 2.6.12 prints; values come from the same places as `show
//! info` and `show stat` (one CSV cell per metric), so the three interfaces
//! never disagree. A cell sluice leaves empty ("not applicable") is `NaN`,
//! as HAProxy prints for its own empty fields.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::snapshot::runtime::Runtime;

use crate::observe::stats::csv::{self, CsvOptions, Row};
use crate::observe::stats::info;

/// The `content-type` HAProxy's exporter answers with.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// One metric: full name, type, help text, and where its value comes from:
/// a `show info` key (process), a `show stat` column (proxies; `/ms` =
/// milliseconds shown in seconds), `=<literal>`, or `@<kind>` for metrics
/// with an extra label.
struct Metric {
    name: &'static str,
    ty: &'static str,
    help: &'static str,
    src: &'static str,
}

const fn m(name: &'static str, ty: &'static str, help: &'static str, src: &'static str) -> Metric {
    Metric {
        name,
        ty,
        help,
        src,
    }
}

/// Which sections a scrape asks for (`?scope=...`, `no-maint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scopes {
    pub(crate) process: bool,
    pub(crate) frontend: bool,
    pub(crate) backend: bool,
    pub(crate) server: bool,
    /// The stick tables' sizes and use.
    pub(crate) sticktable: bool,
    /// `no-maint`: servers in maintenance are left out.
    pub(crate) no_maint: bool,
}

impl Default for Scopes {
    fn default() -> Self {
        Scopes {
            process: true,
            frontend: true,
            backend: true,
            server: true,
            sticktable: true,
            no_maint: false,
        }
    }
}

impl Scopes {
    /// Parses the query string of the request target (what follows `?`).
    /// No `scope` parameter selects everything; each `scope` adds one
    /// section (`global`, `frontend`, `backend`, `server`, `*` = all, empty
    /// = none). An unknown scope is an error (HAProxy answers 400).
    pub(crate) fn from_target(target: &str) -> Result<Scopes, String> {
        let mut s = Scopes::default();
        let Some((_, query)) = target.split_once('?') else {
            return Ok(s);
        };
        let mut first = true;
        for param in query.split('&') {
            let (k, v) = param.split_once('=').unwrap_or((param, ""));
            match k {
                "scope" => {
                    if first {
                        s = Scopes {
                            process: false,
                            frontend: false,
                            backend: false,
                            server: false,
                            sticktable: false,
                            no_maint: s.no_maint,
                        };
                        first = false;
                    }
                    match v {
                        "global" => s.process = true,
                        "frontend" => s.frontend = true,
                        "backend" => s.backend = true,
                        "server" => s.server = true,
                        "sticktable" => s.sticktable = true,
                        "*" | "%2A" | "%2a" => {
                            s = Scopes {
                                no_maint: s.no_maint,
                                ..Scopes::default()
                            }
                        }
                        "" => {}
                        other => return Err(format!("unsupported scope '{other}'")),
                    }
                }
                "no-maint" => s.no_maint = true,
                _ => {}
            }
        }
        Ok(s)
    }
}

const SRV_STATES: [&str; 5] = ["DOWN", "UP", "MAINT", "DRAIN", "NOLB"];
const PX_STATES: [&str; 2] = ["DOWN", "UP"];
const CHECK_STATES: [&str; 16] = [
    "HANA", "SOCKERR", "L4OK", "L4TOUT", "L4CON", "L6OK", "L6TOUT", "L6RSP", "L7TOUT", "L7RSP",
    "L7OK", "L7OKC", "L7STS", "PROCERR", "PROCTOUT", "PROCOK",
];

/// The whole exposition for `scopes`.
pub(crate) fn render(rt: &Runtime, scopes: Scopes) -> String {
    let snap = rt.snapshot();
    let mut out = String::new();
    if scopes.process {
        let info: HashMap<&str, String> = info::info_fields(rt, &snap).into_iter().collect();
        for metric in METRICS.iter().filter(|m| scope_of(m) == "process") {
            header(&mut out, metric);
            if metric.src == "@build_info" {
                let v = info.get("Version").map_or("", String::as_str);
                let _ = writeln!(out, "{}{{version=\"{}\"}} 1", metric.name, label(v));
                continue;
            }
            let v = match metric.src.strip_prefix('=') {
                Some(lit) => lit.to_string(),
                None => number(info.get(metric.src).map_or("", String::as_str)),
            };
            let _ = writeln!(out, "{} {}", metric.name, v);
        }
    }
    if scopes.frontend || scopes.backend || scopes.server {
        proxies(&mut out, rt, &snap, scopes);
    }
    if scopes.sticktable {
        sticktables(&mut out, &snap);
    }
    out
}

/// `haproxy_sticktable_size` and `haproxy_sticktable_used`, each table
/// labelled with its name and key type, in `show table`'s order.
fn sticktables(out: &mut String, snap: &crate::snapshot::Snapshot) {
    let tables = snap.tables.listed();
    if tables.is_empty() {
        return;
    }
    for (name, help, used) in [
        ("haproxy_sticktable_size", "Stick table size.", false),
        (
            "haproxy_sticktable_used",
            "Number of entries used in this stick table.",
            true,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        for t in tables {
            let v = if used { t.used() } else { t.def.size };
            let _ = writeln!(
                out,
                "{name}{{name=\"{}\",type=\"{}\"}} {v}",
                label(t.name()),
                t.def.key.name()
            );
        }
    }
}

/// The frontend, backend and server metrics asked for.
fn proxies(out: &mut String, rt: &Runtime, snap: &crate::snapshot::Snapshot, scopes: Scopes) {
    let rows = csv::rows(
        rt,
        snap,
        CsvOptions {
            no_maint: scopes.no_maint,
            ..CsvOptions::default()
        },
    );
    for (scope, kind, wanted) in [
        ("frontend", "0", scopes.frontend),
        ("backend", "1", scopes.backend),
        ("server", "2", scopes.server),
    ] {
        if !wanted {
            continue;
        }
        let selected: Vec<&Row> = rows.iter().filter(|r| r.kind() == kind).collect();
        for metric in METRICS.iter().filter(|m| scope_of(m) == scope) {
            let mut samples = String::new();
            for row in &selected {
                samples_of(&mut samples, metric, row, &rows);
            }
            if !samples.is_empty() {
                header(out, metric);
                out.push_str(&samples);
            }
        }
    }
}

fn scope_of(m: &Metric) -> &'static str {
    let rest = &m.name["haproxy_".len()..];
    &rest[..rest.find('_').unwrap_or(rest.len())]
}

fn header(out: &mut String, m: &Metric) {
    let _ = writeln!(out, "# HELP {} {}", m.name, m.help);
    let _ = writeln!(out, "# TYPE {} {}", m.name, m.ty);
}

/// A label value escaped as the exposition format requires.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A cell as a sample value: the number, or `NaN` when empty or not a
/// number.
fn number(cell: &str) -> String {
    if !cell.is_empty() && cell.parse::<f64>().is_ok() {
        cell.to_string()
    } else {
        "NaN".to_string()
    }
}

/// The labels identifying `row`: `proxy="..."` and, for servers,
/// `server="..."`.
fn labels(row: &Row) -> String {
    let mut l = format!("proxy=\"{}\"", label(row.get("pxname")));
    if row.kind() == "2" {
        let _ = write!(l, ",server=\"{}\"", label(row.get("svname")));
    }
    l
}

/// The state name HAProxy's exporter gives a `status` cell.
fn state_of(status: &str) -> &'static str {
    let word = status.split([' ', '(']).next().unwrap_or("");
    match word {
        "UP" | "OPEN" | "no" => "UP",
        "MAINT" => "MAINT",
        "DRAIN" => "DRAIN",
        "NOLB" => "NOLB",
        _ => "DOWN",
    }
}

/// A check status cell (`L4OK`, `* L7OK` while in progress) as one of
/// [`CHECK_STATES`], if it is one.
fn check_state(cell: &str) -> Option<&'static str> {
    let c = cell.trim_start_matches('*').trim();
    CHECK_STATES.iter().copied().find(|s| *s == c)
}

fn samples_of(out: &mut String, metric: &Metric, row: &Row, all: &[Row]) {
    let lbl = labels(row);
    let name = metric.name;
    let servers_of = || {
        all.iter()
            .filter(move |r| r.kind() == "2" && r.get("pxname") == row.get("pxname"))
    };
    match metric.src {
        "@status" => {
            let st = state_of(row.get("status"));
            let states: &[&str] = if row.kind() == "2" {
                &SRV_STATES
            } else {
                &PX_STATES
            };
            for s in states {
                let _ = writeln!(out, "{name}{{{lbl},state=\"{s}\"}} {}", u8::from(*s == st));
            }
        }
        "@hrsp" => {
            for code in ["1xx", "2xx", "3xx", "4xx", "5xx", "other"] {
                let cell = row.get(&format!("hrsp_{code}"));
                if !cell.is_empty() {
                    let _ = writeln!(out, "{name}{{{lbl},code=\"{code}\"}} {}", number(cell));
                }
            }
        }
        "@check_status" => {
            let Some(cur) = check_state(row.get("check_status")) else {
                return;
            };
            for s in CHECK_STATES {
                let _ = writeln!(out, "{name}{{{lbl},state=\"{s}\"}} {}", u8::from(s == cur));
            }
        }
        "@agg_server" => {
            for s in SRV_STATES {
                let n = servers_of()
                    .filter(|r| state_of(r.get("status")) == s)
                    .count();
                let _ = writeln!(out, "{name}{{{lbl},state=\"{s}\"}} {n}");
            }
        }
        "@agg_check" => {
            for s in CHECK_STATES {
                let n = servers_of()
                    .filter(|r| check_state(r.get("check_status")) == Some(s))
                    .count();
                let _ = writeln!(out, "{name}{{{lbl},state=\"{s}\"}} {n}");
            }
        }
        src => {
            // A server without checks has no check code nor duration.
            if matches!(src, "check_code" | "check_duration/ms")
                && check_state(row.get("check_status")).is_none()
            {
                return;
            }
            // A layer-4 check has no code: HAProxy's exporter says 0.
            if src == "check_code" && row.get(src).is_empty() {
                let _ = writeln!(out, "{name}{{{lbl}}} 0");
                return;
            }
            let v = match src.strip_suffix("/ms") {
                Some(field) => match row.get(field).parse::<f64>() {
                    Ok(ms) => format!("{:.6}", ms / 1000.0),
                    Err(_) => "NaN".to_string(),
                },
                None => number(row.get(src)),
            };
            let _ = writeln!(out, "{name}{{{lbl}}} {v}");
        }
    }
}

/// Every metric, in the order haproxy 2.6.12 prints them (generated from
/// its output: names, types and help texts verbatim).
#[rustfmt::skip]
static METRICS: &[Metric] = &[
    m("haproxy_process_nbthread", "gauge", "Number of started threads (global.nbthread)", "Nbthread"),
    m("haproxy_process_nbproc", "gauge", "Number of started worker processes (historical, always 1)", "Nbproc"),
    m("haproxy_process_relative_process_id", "gauge", "Relative worker process number (1)", "Process_num"),
    m("haproxy_process_uptime_seconds", "gauge", "How long ago this worker process was started (seconds)", "Uptime_sec"),
    m("haproxy_process_pool_failures_total", "counter", "Number of failed pool allocations since this worker was started", "PoolFailed"),
    m("haproxy_process_max_fds", "gauge", "Hard limit on the number of per-process file descriptors", "Maxsock"),
    m("haproxy_process_max_sockets", "gauge", "Hard limit on the number of per-process sockets", "Maxsock"),
    m("haproxy_process_max_connections", "gauge", "Hard limit on the number of per-process connections (configured or imposed by Ulimit-n)", "Maxconn"),
    m("haproxy_process_hard_max_connections", "gauge", "Hard limit on the number of per-process connections (imposed by Memmax_MB or Ulimit-n)", "Hard_maxconn"),
    m("haproxy_process_current_connections", "gauge", "Current number of connections on this worker process", "CurrConns"),
    m("haproxy_process_connections_total", "counter", "Total number of connections on this worker process since started", "CumConns"),
    m("haproxy_process_requests_total", "counter", "Total number of requests on this worker process since started", "CumReq"),
    m("haproxy_process_max_ssl_connections", "gauge", "Hard limit on the number of per-process SSL endpoints (front+back), 0=unlimited", "MaxSslConns"),
    m("haproxy_process_current_ssl_connections", "gauge", "Current number of SSL endpoints on this worker process (front+back)", "CurrSslConns"),
    m("haproxy_process_ssl_connections_total", "counter", "Total number of SSL endpoints on this worker process since started (front+back)", "CumSslConns"),
    m("haproxy_process_max_pipes", "gauge", "Hard limit on the number of pipes for splicing, 0=unlimited", "Maxpipes"),
    m("haproxy_process_pipes_used_total", "counter", "Current number of pipes in use in this worker process", "PipesUsed"),
    m("haproxy_process_pipes_free_total", "counter", "Current number of allocated and available pipes in this worker process", "PipesFree"),
    m("haproxy_process_current_connection_rate", "gauge", "Number of front connections created on this worker process over the last second", "ConnRate"),
    m("haproxy_process_limit_connection_rate", "gauge", "Hard limit for ConnRate (global.maxconnrate)", "ConnRateLimit"),
    m("haproxy_process_max_connection_rate", "gauge", "Highest ConnRate reached on this worker process since started (in connections per second)", "MaxConnRate"),
    m("haproxy_process_current_session_rate", "gauge", "Number of sessions created on this worker process over the last second", "SessRate"),
    m("haproxy_process_limit_session_rate", "gauge", "Hard limit for SessRate (global.maxsessrate)", "SessRateLimit"),
    m("haproxy_process_max_session_rate", "gauge", "Highest SessRate reached on this worker process since started (in sessions per second)", "MaxSessRate"),
    m("haproxy_process_current_ssl_rate", "gauge", "Number of SSL connections created on this worker process over the last second", "SslRate"),
    m("haproxy_process_limit_ssl_rate", "gauge", "Hard limit for SslRate (global.maxsslrate)", "SslRateLimit"),
    m("haproxy_process_max_ssl_rate", "gauge", "Highest SslRate reached on this worker process since started (in connections per second)", "MaxSslRate"),
    m("haproxy_process_current_frontend_ssl_key_rate", "gauge", "Number of SSL keys created on frontends in this worker process over the last second", "SslFrontendKeyRate"),
    m("haproxy_process_max_frontend_ssl_key_rate", "gauge", "Highest SslFrontendKeyRate reached on this worker process since started (in SSL keys per second)", "SslFrontendMaxKeyRate"),
    m("haproxy_process_frontend_ssl_reuse", "gauge", "Percent of frontend SSL connections which did not require a new key", "SslFrontendSessionReuse_pct"),
    m("haproxy_process_current_backend_ssl_key_rate", "gauge", "Number of SSL keys created on backends in this worker process over the last second", "SslBackendKeyRate"),
    m("haproxy_process_max_backend_ssl_key_rate", "gauge", "Highest SslBackendKeyRate reached on this worker process since started (in SSL keys per second)", "SslBackendMaxKeyRate"),
    m("haproxy_process_ssl_cache_lookups_total", "counter", "Total number of SSL session ID lookups in the SSL session cache on this worker since started", "SslCacheLookups"),
    m("haproxy_process_ssl_cache_misses_total", "counter", "Total number of SSL session ID lookups that didn't find a session in the SSL session cache on this worker since started", "SslCacheMisses"),
    m("haproxy_process_http_comp_bytes_in_total", "counter", "Number of bytes submitted to the HTTP compressor in this worker process over the last second", "CompressBpsIn"),
    m("haproxy_process_http_comp_bytes_out_total", "counter", "Number of bytes emitted by the HTTP compressor in this worker process over the last second", "CompressBpsOut"),
    m("haproxy_process_limit_http_comp", "gauge", "Limit of CompressBpsOut beyond which HTTP compression is automatically disabled", "CompressBpsRateLim"),
    m("haproxy_process_current_zlib_memory", "gauge", "Amount of memory currently used by HTTP compression on the current worker process (in bytes)", "=NaN"),
    m("haproxy_process_max_zlib_memory", "gauge", "Limit on the amount of memory used by HTTP compression above which it is automatically disabled (in bytes, see global.maxzlibmem)", "=NaN"),
    m("haproxy_process_current_tasks", "gauge", "Total number of tasks in the current worker process (active + sleeping)", "Tasks"),
    m("haproxy_process_current_run_queue", "gauge", "Total number of active tasks+tasklets in the current worker process", "Run_queue"),
    m("haproxy_process_idle_time_percent", "gauge", "Percentage of last second spent waiting in the current worker thread", "Idle_pct"),
    m("haproxy_process_stopping", "gauge", "1 if the worker process is currently stopping, otherwise zero", "Stopping"),
    m("haproxy_process_jobs", "gauge", "Current number of active jobs on the current worker process (frontend connections, master connections, listeners)", "Jobs"),
    m("haproxy_process_unstoppable_jobs", "gauge", "Current number of unstoppable jobs on the current worker process (master connections)", "=0"),
    m("haproxy_process_listeners", "gauge", "Current number of active listeners on the current worker process", "Listeners"),
    m("haproxy_process_active_peers", "gauge", "Current number of verified active peers connections on the current worker process", "ActivePeers"),
    m("haproxy_process_connected_peers", "gauge", "Current number of peers having passed the connection step on the current worker process", "ConnectedPeers"),
    m("haproxy_process_dropped_logs_total", "counter", "Total number of dropped logs for current worker process since started", "DroppedLogs"),
    m("haproxy_process_busy_polling_enabled", "gauge", "1 if busy-polling is currently in use on the worker process, otherwise zero (config.busy-polling)", "BusyPolling"),
    m("haproxy_process_failed_resolutions", "counter", "Total number of failed DNS resolutions in current worker process since started", "FailedResolutions"),
    m("haproxy_process_bytes_out_total", "counter", "Total number of bytes emitted by current worker process since started", "TotalBytesOut"),
    m("haproxy_process_spliced_bytes_out_total", "counter", "Total number of bytes emitted by current worker process through a kernel pipe since started", "TotalSplicdedBytesOut"),
    m("haproxy_process_bytes_out_rate", "gauge", "Number of bytes emitted by current worker process over the last second", "BytesOutRate"),
    m("haproxy_process_recv_logs_total", "counter", "Total number of log messages received by log-forwarding listeners on this worker process since started", "CumRecvLogs"),
    m("haproxy_process_build_info", "gauge", "Build info", "@build_info"),
    m("haproxy_process_max_memory_bytes", "gauge", "Worker process's hard limit on memory usage in byes (-m on command line)", "Memmax_bytes"),
    m("haproxy_process_pool_allocated_bytes", "gauge", "Amount of memory allocated in pools (in bytes)", "PoolAlloc_bytes"),
    m("haproxy_process_pool_used_bytes", "gauge", "Amount of pool memory currently used (in bytes)", "PoolUsed_bytes"),
    m("haproxy_process_start_time_seconds", "gauge", "Start time in seconds", "Start_time_sec"),
    m("haproxy_frontend_current_sessions", "gauge", "Number of current sessions on the frontend, backend or server", "scur"),
    m("haproxy_frontend_max_sessions", "gauge", "Highest value of current sessions encountered since process started", "smax"),
    m("haproxy_frontend_limit_sessions", "gauge", "Frontend/listener/server's maxconn, backend's fullconn", "slim"),
    m("haproxy_frontend_sessions_total", "counter", "Total number of sessions since process started", "stot"),
    m("haproxy_frontend_bytes_in_total", "counter", "Total number of request bytes since process started", "bin"),
    m("haproxy_frontend_bytes_out_total", "counter", "Total number of response bytes since process started", "bout"),
    m("haproxy_frontend_requests_denied_total", "counter", "Total number of denied requests since process started", "dreq"),
    m("haproxy_frontend_responses_denied_total", "counter", "Total number of denied responses since process started", "dresp"),
    m("haproxy_frontend_request_errors_total", "counter", "Total number of invalid requests since process started", "ereq"),
    m("haproxy_frontend_status", "gauge", "Current status of the service, per state label value.", "@status"),
    m("haproxy_frontend_limit_session_rate", "gauge", "Limit on the number of sessions accepted in a second (frontend only, 'rate-limit sessions' setting)", "rate_lim"),
    m("haproxy_frontend_max_session_rate", "gauge", "Highest value of sessions per second observed since the worker process started", "rate_max"),
    m("haproxy_frontend_http_responses_total", "counter", "Total number of HTTP responses with status 100-199 returned by this object since the worker process started", "@hrsp"),
    m("haproxy_frontend_http_requests_rate_max", "gauge", "Highest value of http requests observed since the worker process started", "req_rate_max"),
    m("haproxy_frontend_http_requests_total", "counter", "Total number of HTTP requests processed by this object since the worker process started", "req_tot"),
    m("haproxy_frontend_http_comp_bytes_in_total", "counter", "Total number of bytes submitted to the HTTP compressor for this object since the worker process started", "comp_in"),
    m("haproxy_frontend_http_comp_bytes_out_total", "counter", "Total number of bytes emitted by the HTTP compressor for this object since the worker process started", "comp_out"),
    m("haproxy_frontend_http_comp_bytes_bypassed_total", "counter", "Total number of bytes that bypassed HTTP compression for this object since the worker process started (CPU/memory/bandwidth limitation)", "comp_byp"),
    m("haproxy_frontend_http_comp_responses_total", "counter", "Total number of HTTP responses that were compressed for this object since the worker process started", "comp_rsp"),
    m("haproxy_frontend_connections_rate_max", "gauge", "Highest value of connections per second observed since the worker process started", "conn_rate_max"),
    m("haproxy_frontend_connections_total", "counter", "Total number of new connections accepted on this frontend since the worker process started", "conn_tot"),
    m("haproxy_frontend_intercepted_requests_total", "counter", "Total number of HTTP requests intercepted on the frontend (redirects/stats/services) since the worker process started", "intercepted"),
    m("haproxy_frontend_denied_connections_total", "counter", "Total number of incoming connections blocked on a listener/frontend by a tcp-request connection rule since the worker process started", "dcon"),
    m("haproxy_frontend_denied_sessions_total", "counter", "Total number of incoming sessions blocked on a listener/frontend by a tcp-request connection rule since the worker process started", "dses"),
    m("haproxy_frontend_failed_header_rewriting_total", "counter", "Total number of failed HTTP header rewrites since the worker process started", "wrew"),
    m("haproxy_frontend_http_cache_lookups_total", "counter", "Total number of HTTP requests looked up in the cache on this frontend/backend since the worker process started", "cache_lookups"),
    m("haproxy_frontend_http_cache_hits_total", "counter", "Total number of HTTP requests not found in the cache on this frontend/backend since the worker process started", "cache_hits"),
    m("haproxy_frontend_internal_errors_total", "counter", "Total number of internal errors since process started", "eint"),
    m("haproxy_backend_current_queue", "gauge", "Number of current queued connections", "qcur"),
    m("haproxy_backend_max_queue", "gauge", "Highest value of queued connections encountered since process started", "qmax"),
    m("haproxy_backend_current_sessions", "gauge", "Number of current sessions on the frontend, backend or server", "scur"),
    m("haproxy_backend_max_sessions", "gauge", "Highest value of current sessions encountered since process started", "smax"),
    m("haproxy_backend_limit_sessions", "gauge", "Frontend/listener/server's maxconn, backend's fullconn", "slim"),
    m("haproxy_backend_sessions_total", "counter", "Total number of sessions since process started", "stot"),
    m("haproxy_backend_bytes_in_total", "counter", "Total number of request bytes since process started", "bin"),
    m("haproxy_backend_bytes_out_total", "counter", "Total number of response bytes since process started", "bout"),
    m("haproxy_backend_requests_denied_total", "counter", "Total number of denied requests since process started", "dreq"),
    m("haproxy_backend_responses_denied_total", "counter", "Total number of denied responses since process started", "dresp"),
    m("haproxy_backend_connection_errors_total", "counter", "Total number of failed connections to server since the worker process started", "econ"),
    m("haproxy_backend_response_errors_total", "counter", "Total number of invalid responses since the worker process started", "eresp"),
    m("haproxy_backend_retry_warnings_total", "counter", "Total number of server connection retries since the worker process started", "wretr"),
    m("haproxy_backend_redispatch_warnings_total", "counter", "Total number of server redispatches due to connection failures since the worker process started", "wredis"),
    m("haproxy_backend_status", "gauge", "Current status of the service, per state label value.", "@status"),
    m("haproxy_backend_weight", "gauge", "Server's effective weight, or sum of active servers' effective weights for a backend", "weight"),
    m("haproxy_backend_active_servers", "gauge", "Total number of active UP servers with a non-zero weight", "act"),
    m("haproxy_backend_backup_servers", "gauge", "Total number of backup UP servers with a non-zero weight", "bck"),
    m("haproxy_backend_check_up_down_total", "counter", "Total number of failed checks causing UP to DOWN server transitions, per server/backend, since the worker process started", "chkdown"),
    m("haproxy_backend_check_last_change_seconds", "gauge", "How long ago the last server state changed, in seconds", "lastchg"),
    m("haproxy_backend_downtime_seconds_total", "counter", "Total time spent in DOWN state, for server or backend", "downtime"),
    m("haproxy_backend_loadbalanced_total", "counter", "Total number of requests routed by load balancing since the worker process started (ignores queue pop and stickiness)", "lbtot"),
    m("haproxy_backend_max_session_rate", "gauge", "Highest value of sessions per second observed since the worker process started", "rate_max"),
    m("haproxy_backend_http_responses_total", "counter", "Total number of HTTP responses with status 100-199 returned by this object since the worker process started", "@hrsp"),
    m("haproxy_backend_http_requests_total", "counter", "Total number of HTTP requests processed by this object since the worker process started", "req_tot"),
    m("haproxy_backend_client_aborts_total", "counter", "Total number of requests or connections aborted by the client since the worker process started", "cli_abrt"),
    m("haproxy_backend_server_aborts_total", "counter", "Total number of requests or connections aborted by the server since the worker process started", "srv_abrt"),
    m("haproxy_backend_http_comp_bytes_in_total", "counter", "Total number of bytes submitted to the HTTP compressor for this object since the worker process started", "comp_in"),
    m("haproxy_backend_http_comp_bytes_out_total", "counter", "Total number of bytes emitted by the HTTP compressor for this object since the worker process started", "comp_out"),
    m("haproxy_backend_http_comp_bytes_bypassed_total", "counter", "Total number of bytes that bypassed HTTP compression for this object since the worker process started (CPU/memory/bandwidth limitation)", "comp_byp"),
    m("haproxy_backend_http_comp_responses_total", "counter", "Total number of HTTP responses that were compressed for this object since the worker process started", "comp_rsp"),
    m("haproxy_backend_last_session_seconds", "gauge", "How long ago some traffic was seen on this object on this worker process, in seconds", "lastsess"),
    m("haproxy_backend_queue_time_average_seconds", "gauge", "Avg. queue time for last 1024 successful connections.", "qtime/ms"),
    m("haproxy_backend_connect_time_average_seconds", "gauge", "Avg. connect time for last 1024 successful connections.", "ctime/ms"),
    m("haproxy_backend_response_time_average_seconds", "gauge", "Avg. response time for last 1024 successful connections.", "rtime/ms"),
    m("haproxy_backend_total_time_average_seconds", "gauge", "Avg. total time for last 1024 successful connections.", "ttime/ms"),
    m("haproxy_backend_failed_header_rewriting_total", "counter", "Total number of failed HTTP header rewrites since the worker process started", "wrew"),
    m("haproxy_backend_connection_attempts_total", "counter", "Total number of outgoing connection attempts on this backend/server since the worker process started", "connect"),
    m("haproxy_backend_connection_reuses_total", "counter", "Total number of reused connection on this backend/server since the worker process started", "reuse"),
    m("haproxy_backend_http_cache_lookups_total", "counter", "Total number of HTTP requests looked up in the cache on this frontend/backend since the worker process started", "cache_lookups"),
    m("haproxy_backend_http_cache_hits_total", "counter", "Total number of HTTP requests not found in the cache on this frontend/backend since the worker process started", "cache_hits"),
    m("haproxy_backend_max_queue_time_seconds", "gauge", "Maximum observed time spent in the queue", "qtime_max/ms"),
    m("haproxy_backend_max_connect_time_seconds", "gauge", "Maximum observed time spent waiting for a connection to complete", "ctime_max/ms"),
    m("haproxy_backend_max_response_time_seconds", "gauge", "Maximum observed time spent waiting for a server response", "rtime_max/ms"),
    m("haproxy_backend_max_total_time_seconds", "gauge", "Maximum observed total request+response time (request+queue+connect+response+processing)", "ttime_max/ms"),
    m("haproxy_backend_internal_errors_total", "counter", "Total number of internal errors since process started", "eint"),
    m("haproxy_backend_uweight", "gauge", "Server's user weight, or sum of active servers' user weights for a backend", "uweight"),
    m("haproxy_backend_agg_server_status", "gauge", "Backend's aggregated gauge of servers' status", "@agg_server"),
    m("haproxy_backend_agg_server_check_status", "gauge", "Backend's aggregated gauge of servers' state check status", "@agg_server"),
    m("haproxy_backend_agg_check_status", "gauge", "Backend's aggregated gauge of servers' state check status", "@agg_check"),
    m("haproxy_server_current_queue", "gauge", "Number of current queued connections", "qcur"),
    m("haproxy_server_max_queue", "gauge", "Highest value of queued connections encountered since process started", "qmax"),
    m("haproxy_server_current_sessions", "gauge", "Number of current sessions on the frontend, backend or server", "scur"),
    m("haproxy_server_max_sessions", "gauge", "Highest value of current sessions encountered since process started", "smax"),
    m("haproxy_server_limit_sessions", "gauge", "Frontend/listener/server's maxconn, backend's fullconn", "slim"),
    m("haproxy_server_sessions_total", "counter", "Total number of sessions since process started", "stot"),
    m("haproxy_server_bytes_in_total", "counter", "Total number of request bytes since process started", "bin"),
    m("haproxy_server_bytes_out_total", "counter", "Total number of response bytes since process started", "bout"),
    m("haproxy_server_responses_denied_total", "counter", "Total number of denied responses since process started", "dresp"),
    m("haproxy_server_connection_errors_total", "counter", "Total number of failed connections to server since the worker process started", "econ"),
    m("haproxy_server_response_errors_total", "counter", "Total number of invalid responses since the worker process started", "eresp"),
    m("haproxy_server_retry_warnings_total", "counter", "Total number of server connection retries since the worker process started", "wretr"),
    m("haproxy_server_redispatch_warnings_total", "counter", "Total number of server redispatches due to connection failures since the worker process started", "wredis"),
    m("haproxy_server_status", "gauge", "Current status of the service, per state label value.", "@status"),
    m("haproxy_server_weight", "gauge", "Server's effective weight, or sum of active servers' effective weights for a backend", "weight"),
    m("haproxy_server_check_failures_total", "counter", "Total number of failed individual health checks per server/backend, since the worker process started", "chkfail"),
    m("haproxy_server_check_up_down_total", "counter", "Total number of failed checks causing UP to DOWN server transitions, per server/backend, since the worker process started", "chkdown"),
    m("haproxy_server_check_last_change_seconds", "gauge", "How long ago the last server state changed, in seconds", "lastchg"),
    m("haproxy_server_downtime_seconds_total", "counter", "Total time spent in DOWN state, for server or backend", "downtime"),
    m("haproxy_server_queue_limit", "gauge", "Limit on the number of connections in queue, for servers only (maxqueue argument)", "qlimit"),
    m("haproxy_server_current_throttle", "gauge", "Throttling ratio applied to a server's maxconn and weight during the slowstart period (0 to 100%)", "throttle"),
    m("haproxy_server_loadbalanced_total", "counter", "Total number of requests routed by load balancing since the worker process started (ignores queue pop and stickiness)", "lbtot"),
    m("haproxy_server_max_session_rate", "gauge", "Highest value of sessions per second observed since the worker process started", "rate_max"),
    m("haproxy_server_check_status", "gauge", "Status of last health check, per state label value.", "@check_status"),
    m("haproxy_server_check_code", "gauge", "layer5-7 code, if available of the last health check.", "check_code"),
    m("haproxy_server_check_duration_seconds", "gauge", "Total duration of the latest server health check, in seconds.", "check_duration/ms"),
    m("haproxy_server_http_responses_total", "counter", "Total number of HTTP responses with status 100-199 returned by this object since the worker process started", "@hrsp"),
    m("haproxy_server_client_aborts_total", "counter", "Total number of requests or connections aborted by the client since the worker process started", "cli_abrt"),
    m("haproxy_server_server_aborts_total", "counter", "Total number of requests or connections aborted by the server since the worker process started", "srv_abrt"),
    m("haproxy_server_last_session_seconds", "gauge", "How long ago some traffic was seen on this object on this worker process, in seconds", "lastsess"),
    m("haproxy_server_queue_time_average_seconds", "gauge", "Avg. queue time for last 1024 successful connections.", "qtime/ms"),
    m("haproxy_server_connect_time_average_seconds", "gauge", "Avg. connect time for last 1024 successful connections.", "ctime/ms"),
    m("haproxy_server_response_time_average_seconds", "gauge", "Avg. response time for last 1024 successful connections.", "rtime/ms"),
    m("haproxy_server_total_time_average_seconds", "gauge", "Avg. total time for last 1024 successful connections.", "ttime/ms"),
    m("haproxy_server_failed_header_rewriting_total", "counter", "Total number of failed HTTP header rewrites since the worker process started", "wrew"),
    m("haproxy_server_connection_attempts_total", "counter", "Total number of outgoing connection attempts on this backend/server since the worker process started", "connect"),
    m("haproxy_server_connection_reuses_total", "counter", "Total number of reused connection on this backend/server since the worker process started", "reuse"),
    m("haproxy_server_idle_connections_current", "gauge", "Current number of idle connections available for reuse on this server", "srv_icur"),
    m("haproxy_server_idle_connections_limit", "gauge", "Limit on the number of available idle connections on this server (server 'pool_max_conn' directive)", "src_ilim"),
    m("haproxy_server_max_queue_time_seconds", "gauge", "Maximum observed time spent in the queue", "qtime_max/ms"),
    m("haproxy_server_max_connect_time_seconds", "gauge", "Maximum observed time spent waiting for a connection to complete", "ctime_max/ms"),
    m("haproxy_server_max_response_time_seconds", "gauge", "Maximum observed time spent waiting for a server response", "rtime_max/ms"),
    m("haproxy_server_max_total_time_seconds", "gauge", "Maximum observed total request+response time (request+queue+connect+response+processing)", "ttime_max/ms"),
    m("haproxy_server_internal_errors_total", "counter", "Total number of internal errors since process started", "eint"),
    m("haproxy_server_unsafe_idle_connections_current", "gauge", "Current number of unsafe idle connections", "idle_conn_cur"),
    m("haproxy_server_safe_idle_connections_current", "gauge", "Current number of safe idle connections", "safe_conn_cur"),
    m("haproxy_server_used_connections_current", "gauge", "Current number of connections in use", "used_conn_cur"),
    m("haproxy_server_need_connections_current", "gauge", "Estimated needed number of connections", "need_conn_est"),
    m("haproxy_server_uweight", "gauge", "Server's user weight, or sum of active servers' user weights for a backend", "uweight"),

];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_parameter() {
        let all = Scopes::default();
        assert_eq!(Scopes::from_target("/metrics"), Ok(all));
        let s = Scopes::from_target("/metrics?scope=frontend&scope=backend").unwrap();
        assert!(s.frontend && s.backend && !s.server && !s.process);
        let s = Scopes::from_target("/metrics?scope=").unwrap();
        assert!(!s.frontend && !s.backend && !s.server && !s.process);
        let s = Scopes::from_target("/metrics?scope=global&no-maint").unwrap();
        assert!(s.process && !s.server && s.no_maint);
        assert_eq!(Scopes::from_target("/metrics?scope=*"), Ok(all));
        assert!(Scopes::from_target("/metrics?scope=bogus").is_err());
    }

    #[test]
    fn every_metric_is_well_formed() {
        for m in METRICS {
            assert!(m.name.starts_with("haproxy_"), "{}", m.name);
            assert!(matches!(m.ty, "gauge" | "counter"), "{}", m.name);
            assert!(
                matches!(scope_of(m), "process" | "frontend" | "backend" | "server"),
                "{}",
                m.name
            );
        }
    }

    #[test]
    fn renders_every_scope() {
        let rt = crate::observe::stats::fixture::runtime();
        let text = render(&rt, Scopes::default());
        assert!(text.contains("# TYPE haproxy_process_requests_total counter\n"));
        assert!(text.contains("haproxy_frontend_http_requests_total{proxy=\"web_fe\"} 0\n"));
        assert!(text.contains("haproxy_backend_status{proxy=\"web_be\",state=\"UP\"}"));
        assert!(text.contains("haproxy_server_sessions_total{proxy=\"web_be\",server=\"s1\"} 0\n"));
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, v) = line.rsplit_once(' ').unwrap();
            assert!(v == "NaN" || v.parse::<f64>().is_ok(), "{line}");
        }
    }
}
