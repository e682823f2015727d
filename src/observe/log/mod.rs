//! Access and event logs, as HAProxy 2.6 writes them.
//!
//! * [`config`]: the `log` / `log-tag` / `log-format` / logging options.
//! * [`format`]: rendering `log-format` strings (compiled with the
//!   configuration by `config::log_format`, kept with each proxy's targets
//!   in `snapshot::log_setup`; `option httplog` & co are HAProxy's own
//!   strings).
//! * [`LogRecord`] (defined with the end stage in `observe::outcome`): the
//!   exchange's outcome, emitted once at its end, or at the response
//!   headers with `option logasap`.
//! * [`sink`]: the logger thread behind a bounded channel; lines that do
//!   not fit, or that a target refuses, are dropped and counted.
//! * [`event`]: state changes (server UP/DOWN, maintenance, no server
//!   left) from `tracing` to the syslog targets, at HAProxy's severities.

pub mod event;
pub(crate) mod format;
pub(crate) mod forward;
pub(crate) mod received;
pub(crate) mod ring_fwd;
pub(crate) mod server_state;
pub(crate) mod sink;
pub(crate) mod time;

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::time::SystemTime;

use crate::config::log_format::Var;
use crate::snapshot::FrontendRt;
use crate::snapshot::log_setup::LogSetup;
use crate::sys::peer::Peer;
use crate::wire::h1::Head;
use format::{Source, Value};
use time::Date;

use crate::observe::outcome::ms_since;
pub(crate) use crate::observe::outcome::{LogRecord, SrvName};
pub(crate) use sink::dropped;

/// What stands for the request line, or a part of it, when there is no
/// request head (a request refused by the parser, or none at all).
const BADREQ: &str = "<BADREQ>";

/// Sending, once compiled (`snapshot::log_setup`).
impl LogSetup {
    /// Sends `msg` at `severity` to every target that accepts it.
    pub(crate) fn send(&self, severity: u8, date: &Date, msg: &str) {
        self.send_sd(severity, date, msg, None);
    }

    /// [`send`](Self::send) with RFC 5424's structured data
    /// (`log-format-sd`).
    pub(crate) fn send_sd(&self, severity: u8, date: &Date, msg: &str, sd: Option<&str>) {
        let pid = std::process::id();
        for (t, sink) in &self.targets {
            if let Some(sev) = t.severity(severity) {
                let who = sink::Sender {
                    tag: &self.tag,
                    pid,
                    host: self.hostname.as_deref(),
                    sd,
                };
                sink::send(sink, sink::frame(t, sev, &who, date, msg));
            }
        }
    }
}

/// `capture request|response header`: the last value of each listed
/// header, cut to its length (None when absent, and for the slots rules
/// fill). Empty without captures, so a request allocates nothing.
pub(crate) fn capture_headers(list: &[(String, usize)], head: &Head) -> Vec<Option<Vec<u8>>> {
    // Most proxies capture nothing: not even an empty collect per message.
    if list.is_empty() {
        return Vec::new();
    }
    list.iter()
        .map(|(name, len)| {
            if name.is_empty() {
                return None;
            }
            let v = head.values(name).last()?;
            Some(v[..v.len().min(*len)].to_vec())
        })
        .collect()
}

/// What a line is made of when it is emitted.
pub(crate) struct Line<'a> {
    pub(crate) fe: &'a FrontendRt,
    pub(crate) rec: &'a LogRecord,
    pub(crate) head: Option<&'a Head>,
    pub(crate) client: Peer,
    pub(crate) local: Option<Peer>,
    /// `%ac`: connections of the process now.
    pub(crate) actconn: u64,
    /// `Tt`, ms since the request started.
    pub(crate) total: i64,
    pub(crate) date: Date,
    pub(crate) log_counter: u64,
    /// An early `option logasap` line: `Ta` and `B` are prefixed with `+`.
    pub(crate) logasap_early: bool,
    /// The request's variables and its connections' facts, still there at
    /// its end.
    pub(crate) samples: Samples<'a>,
}

/// What a line's samples read beyond the record: the request's variables
/// (`var()`), the client connection's TLS (`ssl_fc*`) and other facts
/// (`fc_*`, `so_*`), the proxies' state, the stick counters.
#[derive(Clone, Copy, Default)]
pub(crate) struct Samples<'a> {
    pub(crate) vars: Option<&'a crate::sample::vars::Vars<'a>>,
    pub(crate) tls: Option<&'a crate::tls::TlsFacts>,
    pub(crate) client: Option<&'a crate::sample::conn::ClientFacts>,
    /// The proxies' runtime state (`nbsrv`, `be_conn`...).
    pub(crate) proxies: Option<&'a dyn crate::sample::Proxies>,
    /// The stick tables and the counters the exchange tracked, still
    /// tracked when its line is written (as in HAProxy).
    pub(crate) stick: Option<&'a crate::state::table::track::StickView<'a>>,
}

impl Line<'_> {
    fn backend_name(&self) -> &str {
        match &self.rec.backend {
            Some(b) => &b.name,
            None => &self.fe.name,
        }
    }

    fn request_line(&self) -> Option<String> {
        let h = self.head?;
        let mut s = String::with_capacity(h.method().len() + h.target().len() + 10);
        s.push_str(&String::from_utf8_lossy(h.method()));
        s.push(' ');
        if let Some(origin) = &self.rec.h2_origin {
            s.push_str(origin);
        }
        escape_uri(h.target(), &mut s);
        s.push(' ');
        s.push_str(&self.version(h));
        Some(s)
    }

    /// The request line cut to `tune.http.logurilen` bytes, when it is
    /// longer.
    fn cut_line(&self) -> Option<String> {
        let max = self.fe.log_uri_len;
        let h = self.head?;
        // The line's length is known before it is written out.
        if h.method().len() + h.target().len() + h.version().len() + 2 <= max
            && self.rec.h2_origin.is_none()
        {
            return None;
        }
        let mut line = self.request_line()?;
        if line.len() <= max {
            return None;
        }
        // Escaped, the line is ASCII: any byte is a boundary.
        line.truncate(max);
        Some(line)
    }

    /// `%HV`: the client's protocol version, as received over HTTP/1.
    fn version<'h>(&self, h: &'h Head) -> Cow<'h, str> {
        if self.rec.h2_origin.is_some() {
            Cow::Borrowed("HTTP/2.0")
        } else {
            String::from_utf8_lossy(h.version())
        }
    }

    fn target(&self) -> Option<String> {
        self.head.map(|h| {
            let mut s = String::with_capacity(h.target().len());
            escape_uri(h.target(), &mut s);
            s
        })
    }
}

/// A request target as HAProxy logs it: `"`, `#`, control bytes and bytes
/// above 126 as `#XX` (its URL encoding map; a target holds those only
/// where `option accept-invalid-http-request` let them in).
fn escape_uri(target: &[u8], out: &mut String) {
    use std::fmt::Write as _;
    for &b in target {
        if !(0x20..0x7f).contains(&b) || matches!(b, b'"' | b'#') {
            let _ = write!(out, "#{b:02X}");
        } else {
            out.push(b as char);
        }
    }
}

fn server_is_unix(rec: &LogRecord) -> bool {
    matches!(&rec.server, SrvName::Server(s) if s.pool.load().unix().is_some())
}

fn server_addr(rec: &LogRecord) -> Option<SocketAddr> {
    match &rec.server {
        SrvName::Server(s) => Some(s.addr()),
        _ => None,
    }
}

impl Source for Line<'_> {
    fn var(&self, var: Var, out: &mut Value<'_>) {
        let rec = self.rec;
        match var {
            Var::ClientIp => out.addr(self.client.ip(), Some(&self.client.host_text())),
            Var::ClientPort => out.id_num(i64::from(self.client.port_num())),
            Var::FrontendIp => out.addr(
                self.local.and_then(|a| a.ip()),
                self.local.map(|a| a.host_text()).as_deref(),
            ),
            Var::FrontendPort => match self.local {
                Some(a) => out.id_num(i64::from(a.port_num())),
                None => out.text(None),
            },
            Var::BackendSrcIp | Var::BackendSrcPort => out.text(None),
            // A UNIX socket server: `unix` and port 0, as HAProxy 2.6.
            Var::ServerIp if server_is_unix(rec) => out.text(Some("unix")),
            Var::ServerPort if server_is_unix(rec) => out.num(0),
            Var::ServerIp => out.addr(
                server_addr(rec).map(|a| a.ip()),
                server_addr(rec).map(|a| a.ip().to_string()).as_deref(),
            ),
            Var::ServerPort => match server_addr(rec) {
                Some(a) => out.id_num(a.port() as i64),
                None => out.text(None),
            },
            Var::Frontend => out.text(Some(&self.fe.name)),
            Var::FrontendTransport if rec.tls => out.text(Some(&format!("{}~", self.fe.name))),
            Var::FrontendTransport => out.text(Some(&self.fe.name)),
            Var::Backend => out.text(Some(self.backend_name())),
            Var::Server => out.text(Some(match &rec.server {
                SrvName::None => "<NOSRV>",
                SrvName::Stats => "<STATS>",
                SrvName::Cache => "<CACHE>",
                SrvName::Applet(a) => a,
                SrvName::Server(s) => &s.name,
            })),
            Var::AcceptDate
            | Var::RequestDate
            | Var::RequestDateGmt
            | Var::RequestDateLocal
            | Var::AcceptDateGmt
            | Var::AcceptDateLocal => out.date(&self.date, var),
            Var::AcceptUnix => out.id_num(self.date.unix),
            Var::AcceptMs => out.raw(&format!("{:03}", self.date.millis())),
            Var::TReq | Var::TQ => out.num(rec.t_req),
            Var::TQueue => out.num(rec.t_queue),
            Var::TConnect => out.num(rec.t_connect),
            Var::TResp => out.num(rec.t_resp),
            Var::TActive | Var::TTotal => {
                if self.logasap_early {
                    out.raw(&format!("+{}", self.total));
                } else {
                    out.num(self.total);
                }
            }
            Var::THandshake | Var::TIdle => out.num(0),
            Var::Status => out.num(rec.status),
            Var::BytesOut => out.num_marked(self.logasap_early, rec.bytes_out as i64),
            Var::BytesIn => out.num(rec.bytes_in as i64),
            Var::CapturedReqCookie | Var::CapturedRespCookie => out.text(None),
            Var::TermState => out.raw(std::str::from_utf8(&rec.term_code()).unwrap_or("--")),
            Var::TermStateCookie => {
                out.raw(std::str::from_utf8(&rec.term_code()).unwrap_or("--"));
                out.raw(std::str::from_utf8(&rec.persist).unwrap_or("--"));
            }
            Var::ActConn => out.num(self.actconn as i64),
            Var::FeConn => out.num(self.fe.state.counters.sess.cur() as i64),
            Var::BeConn => out.num(
                rec.backend
                    .as_ref()
                    .map_or(0, |b| b.state.counters.sess.cur() as i64),
            ),
            Var::SrvConn => out.num(match &rec.server {
                SrvName::Server(s) => s.counters.sess.cur() as i64,
                _ => 0,
            }),
            Var::Retries => out.num_marked(rec.redispatched, rec.retries as i64),
            Var::SrvQueue => out.num(rec.srv_queue as i64),
            Var::BeQueue => out.num(rec.be_queue as i64),
            Var::CapturedReqHeaders => out.captures(&rec.cap_req, false),
            Var::CapturedRespHeaders => out.captures(&rec.cap_resp, false),
            Var::CapturedReqHeadersLong => out.captures(&rec.cap_req, true),
            Var::CapturedRespHeadersLong => out.captures(&rec.cap_resp, true),
            // A request line past `tune.http.logurilen`: cut, and its parts
            // read from what is left, as HAProxy logs its copy of it.
            Var::RequestLine | Var::Method | Var::Uri | Var::Path | Var::Query | Var::Version
                if let Some(cut) = self.cut_line() =>
            {
                let mut parts = cut.splitn(3, ' ');
                let (method, uri, version) = (
                    parts.next().unwrap_or(""),
                    parts.next().unwrap_or(""),
                    parts.next().unwrap_or(""),
                );
                let text = match var {
                    Var::RequestLine => cut.as_str(),
                    Var::Method => method,
                    Var::Uri => uri,
                    Var::Path => uri.split('?').next().unwrap_or(""),
                    Var::Query => uri.find('?').map_or("", |i| &uri[i..]),
                    // A line without its version reads as HTTP/0.9's.
                    _ if version.is_empty() => "HTTP/0.9",
                    _ => version,
                };
                out.text(Some(text))
            }
            Var::RequestLine => match self.request_line() {
                Some(l) => out.text(Some(&l)),
                None => out.text(Some(BADREQ)),
            },
            // Without a request head, HAProxy 2.6 writes `<BADREQ>` for
            // each part of the request line, as for the whole.
            Var::Method => out.text(Some(
                self.head
                    .map_or(BADREQ.into(), |h| String::from_utf8_lossy(h.method()))
                    .as_ref(),
            )),
            Var::Uri => out.text(Some(self.target().as_deref().unwrap_or(BADREQ))),
            Var::Path => out.text(Some(
                self.target()
                    .as_deref()
                    .map_or(BADREQ, |t| t.split('?').next().unwrap_or("")),
            )),
            Var::Query => out.text(Some(
                self.target()
                    .as_deref()
                    .map_or(BADREQ, |t| t.find('?').map_or("", |i| &t[i..])),
            )),
            Var::Version => out.text(Some(
                self.head
                    .map_or(BADREQ.into(), |h| self.version(h))
                    .as_ref(),
            )),
            Var::Hostname => out.text(Some(crate::sys::process::hostname())),
            Var::Pid => out.id_num(std::process::id() as i64),
            Var::UniqueId => out.text(rec.unique_id.as_deref()),
            Var::RequestCounter => out.id_num(rec.req_id as i64),
            Var::LogCounter => out.num(self.log_counter as i64),
            Var::SslVersion | Var::SslCipher => out.text(None),
        }
    }

    fn sample_ctx(&self) -> crate::sample::Ctx<'_> {
        crate::sample::Ctx {
            src: self.client.ip(),
            src_port: self.client.inet().map(|a| a.port()),
            local: self.local.and_then(|a| a.inet()),
            req: self.head,
            res: None,
            frontend: &self.fe.name,
            backend: self.rec.backend.as_ref().map(|b| b.name.as_str()),
            server: match &self.rec.server {
                SrvName::Server(s) => Some(s.name.as_str()),
                _ => None,
            },
            // The response is gone when the line is written: HAProxy's
            // `status` finds nothing there (`%ST` prints the status).
            status: None,
            unique_id: self.rec.unique_id.as_deref(),
            cap_req: &self.rec.cap_req,
            cap_resp: &self.rec.cap_resp,
            // No request buffer at the end either (HAProxy refuses the
            // L6 fetches in a log format).
            payload: None,
            res_payload: None,
            // Nor bodies: HAProxy refuses `req.body*` in a log format.
            req_body: None,
            res_body: None,
            frontend_id: self.fe.iid,
            backend_id: self.rec.backend.as_ref().map(|b| b.iid),
            // Not kept for the log line yet.
            first_req: None,
            proxies: self.samples.proxies,
            // The log line sees the request as it was.
            req_gone: false,
            stick: self
                .samples
                .stick
                .map(|s| s as &dyn crate::sample::stick::Stick),
            // Looked up once per line that has a sample.
            server_id: match (&self.rec.backend, &self.rec.server) {
                (Some(be), SrvName::Server(s)) => be
                    .servers
                    .iter()
                    .find(|r| std::sync::Arc::ptr_eq(&r.state, s))
                    .map(|r| r.sid),
                _ => None,
            },
            tls: self.samples.tls,
            client: self.samples.client,
            server_conn: self.rec.server_conn.as_deref(),
            vars: self.samples.vars,
        }
    }
}

/// Emits the access log line of a request (at its end, or early with
/// `option logasap`). Does nothing when the frontend does not log, the
/// line was logged already, or `dontlognull` hides it.
pub(crate) fn emit(
    fe: &FrontendRt,
    rec: &mut LogRecord,
    head: Option<&Head>,
    early: bool,
    samples: Samples<'_>,
) {
    let Some(flog) = fe.log.as_ref() else { return };
    let Some(accept) = rec.accept else { return };
    let Some(client) = rec.client else { return };
    if rec.logged
        || (rec.null && flog.dontlognull)
        || rec.level == Some(crate::config::model::LogLevel::Silent)
        || (flog.dontlog_normal && !rec.is_error())
    {
        return;
    }
    let Some(format) = &flog.format else { return };
    // What `capture-req` and `capture-res` captured, in its slots, cut to
    // their lengths.
    if let Some(vars) = samples.vars {
        vars.take_captures(|res, slot, mut value| {
            let (caps, lens) = match res {
                false => (&mut rec.cap_req, &fe.captures.request),
                true => (&mut rec.cap_resp, &fe.captures.response),
            };
            if let (Some(dst), Some((_, len))) = (caps.get_mut(slot), lens.get(slot)) {
                value.truncate(*len);
                *dst = Some(value);
            }
        });
    }
    // HAProxy makes the id at the latest for the log line.
    if rec.unique_id.is_none()
        && let Some(uid) = &fe.unique_id
    {
        rec.unique_id = Some(unique_id(fe, &uid.format, rec, head, samples));
    }
    rec.logged = early;
    let line = Line {
        fe,
        rec,
        head,
        client,
        local: rec.local,
        actconn: event::runtime().map_or(0, |rt| rt.process.conns.cur()),
        total: ms_since(rec.start),
        date: Date::from(accept),
        log_counter: flog.counter.fetch_add(1, Relaxed),
        logasap_early: early,
        samples,
    };
    let mut msg = String::with_capacity(256);
    format.render(&line, &mut msg);
    let sd = flog.sd.as_ref().map(|f| {
        let mut sd = String::new();
        f.render(&line, &mut sd);
        sd
    });
    let severity = match rec.level {
        Some(crate::config::model::LogLevel::Severity(l)) => l,
        _ if flog.separate_errors && rec.is_error() => crate::config::log::ERR,
        _ => crate::config::log::INFO,
    };
    flog.setup
        .send_sd(severity, &Date::now(), &msg, sd.as_deref());
}

/// `unique-id-format`: the id of a request, made of what its record and
/// head hold now (HAProxy makes it once, at its first use).
pub(crate) fn unique_id(
    fe: &FrontendRt,
    format: &crate::config::log_format::LogFormat,
    rec: &LogRecord,
    head: Option<&Head>,
    samples: Samples<'_>,
) -> std::sync::Arc<str> {
    let Some(client) = rec.client else {
        return std::sync::Arc::from("");
    };
    let line = Line {
        fe,
        rec,
        head,
        client,
        local: rec.local,
        actconn: event::runtime().map_or(0, |rt| rt.process.conns.cur()),
        total: ms_since(rec.start),
        date: Date::from(rec.accept.unwrap_or_else(SystemTime::now)),
        log_counter: fe.log.as_ref().map_or(0, |l| l.counter.load(Relaxed)),
        logasap_early: false,
        samples,
    };
    let mut id = String::with_capacity(64);
    format.render(&line, &mut id);
    std::sync::Arc::from(id)
}

/// HAProxy's line for a frontend with log targets but no log format,
/// sent when a connection is accepted.
pub(crate) fn emit_connect(fe: &FrontendRt, client: Peer, local: Option<Peer>) {
    let Some(flog) = fe.log.as_ref() else { return };
    if flog.format.is_some() {
        return;
    }
    let to = local.map_or_else(|| "-".to_string(), |a| a.to_string());
    let mode = match fe.mode {
        crate::config::model::Mode::Http => "HTTP",
        crate::config::model::Mode::Tcp => "TCP",
    };
    let msg = format!("Connect from {client} to {to} ({}/{mode})", fe.name);
    flog.setup
        .send(crate::config::log::INFO, &Date::now(), &msg);
}

/// A backend's alert (`option checkcache`'s refused response), in
/// HAProxy's words: to the backend's log targets at level alert, and to
/// sluice's own log.
pub(crate) fn emit_alert(be: &crate::snapshot::BackendRt, msg: &str) {
    tracing::warn!("{msg}");
    if let Some(setup) = be.log.as_ref() {
        setup.send(crate::config::log::ALERT, &Date::now(), msg);
    }
}

/// HAProxy's line for a connection that failed before becoming a session
/// (a bad PROXY header): `<client> [<accept date>] <frontend>/<listener>:
/// <reason>`, sent only when the frontend has a log format, and not for a
/// connection that sent nothing under `option dontlognull`.
pub(crate) fn emit_conn_error(
    fe: &FrontendRt,
    client: Peer,
    accepted: SystemTime,
    luid: usize,
    reason: &dyn std::fmt::Display,
    got_bytes: bool,
) {
    let Some(flog) = fe.log.as_ref() else { return };
    if flog.format.is_none() || (flog.dontlognull && !got_bytes) {
        return;
    }
    let mut msg = String::with_capacity(128);
    msg.push_str(&client.to_string());
    msg.push_str(" [");
    time::date_clf_ms(&Date::from(accepted), &mut msg);
    msg.push_str("] ");
    msg.push_str(&fe.name);
    msg.push_str(&format!("/{luid}: {reason}"));
    flog.setup
        .send(crate::config::log::INFO, &Date::now(), &msg);
}

/// A client whose TLS handshake failed: HAProxy's connection-error line
/// (`<client> [<accept date>] <frontend>/<bind>: SSL handshake failure`),
/// sent to the frontend's log targets, and a warning on sluice's own log
/// with rustls' reason.
pub(crate) fn emit_handshake_failure(
    rt: &crate::snapshot::runtime::Runtime,
    frontend: &str,
    client: Peer,
    reason: &str,
    empty: bool,
) {
    tracing::info!("{client}: SSL handshake failure on frontend {frontend}: {reason}");
    // A client that closed without sending anything (a TCP probe) is
    // counted but not logged, as HAProxy does.
    if empty {
        return;
    }
    rt.with_snapshot(|snap| {
        let Some(fe) = snap.frontends().find(|f| *f.name == *frontend) else {
            return;
        };
        let Some(flog) = fe.log.as_ref() else { return };
        let date = Date::now();
        let mut msg = String::with_capacity(96);
        msg.push_str(&client.to_string());
        msg.push_str(" [");
        time::date_clf_ms(&date, &mut msg);
        msg.push_str("] ");
        msg.push_str(&fe.name);
        msg.push_str("/1: SSL handshake failure");
        flog.setup.send(crate::config::log::INFO, &date, &msg);
    });
}
