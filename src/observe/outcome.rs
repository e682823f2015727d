//! One outcome per exchange, and the one end stage that counts and logs it.
//!
//! An exchange is an HTTP request (HTTP/1, or a stream of an HTTP/2
//! connection) or a `mode tcp` session. Along its path the engines fill one
//! [`LogRecord`] on the stack with what happened: the status, the
//! termination state as a typed [`Term`] (HAProxy's two log characters:
//! who ended it, in which phase), whether a retry may follow, bytes, timers,
//! the backend and server, retries and redispatch, and the [`Tally`] of
//! which failure and denial counters the exchange hits on which rows.
//! [`finish`] is then called once: it is the only place that writes the
//! per-exchange counters of the frontend, backend and server rows
//! (`hrsp_*`, `ereq`, `dreq`, `dresp`, `eresp`, `econ`, `cli_abrt`,
//! `srv_abrt`, `intercepted`, bytes, the qtime/ctime/rtime/ttime averages)
//! and it emits the access log line, for HTTP and TCP alike.
//!
//! Counters of events that happen before the end stay where they happen,
//! because a `show stat` taken while an exchange is in flight must see
//! them: arrivals (`req_tot`, sessions, rates), load balancing (`lbtot`),
//! and each connection attempt to a server (`connect`, `reuse`, TLS
//! handshakes, `wretr`/`wredis` and the `econ` of giving up, counted by
//! `upstream::retry` on the server attempted, which may not be the one the
//! exchange ends on).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Instant, SystemTime};

use crate::observe::log::emit;
use crate::snapshot::{BackendRt, FrontendRt};
use crate::state::counters::{ClientCounters, Count};
use crate::state::table::track::Trackers;
use crate::state::{Counters, ServerState};
use crate::wire::h1::Head;

/// Who ended an exchange, which is also the side that failed (client,
/// server, or the proxy itself): the first character of HAProxy's
/// termination state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// `C`: the client aborted or sent something broken on the wire.
    Client,
    /// `c`: the client timed out.
    ClientTimeout,
    /// `S`: the server aborted, refused, or no server could take it.
    Server,
    /// `s`: the server (or the queue for one) timed out.
    ServerTimeout,
    /// `P`: the proxy refused it (a deny, a request or response refused by
    /// the parser).
    Proxy,
    /// `L`: the proxy answered locally (stats, redirect, return).
    Local,
    /// `D`: the server went DOWN (`on-marked-down shutdown-sessions`).
    Down,
    /// `I`: the proxy could not go on (an HTTP request switched to a TCP
    /// backend by a dynamic `use_backend` name).
    Internal,
}

impl Cause {
    fn code(self) -> u8 {
        match self {
            Cause::Client => b'C',
            Cause::ClientTimeout => b'c',
            Cause::Server => b'S',
            Cause::ServerTimeout => b's',
            Cause::Proxy => b'P',
            Cause::Local => b'L',
            Cause::Down => b'D',
            Cause::Internal => b'I',
        }
    }
}

/// Where an exchange was when it ended: the second character of HAProxy's
/// termination state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// `R`: reading or processing the request.
    Request,
    /// `Q`: waiting in a queue for a server.
    Queue,
    /// `C`: connecting to the server.
    Connect,
    /// `H`: waiting for, or processing, the response headers.
    Headers,
    /// `D`: transferring data.
    Data,
    /// `T`: held by a tarpit.
    Tarpit,
}

impl Phase {
    fn code(self) -> u8 {
        match self {
            Phase::Request => b'R',
            Phase::Queue => b'Q',
            Phase::Connect => b'C',
            Phase::Headers => b'H',
            Phase::Data => b'D',
            Phase::Tarpit => b'T',
        }
    }
}

/// A termination state other than the normal `--`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Term {
    pub(crate) cause: Cause,
    pub(crate) phase: Phase,
}

impl Term {
    pub(crate) const fn new(cause: Cause, phase: Phase) -> Term {
        Term { cause, phase }
    }

    /// The two characters of the log.
    pub(crate) fn code(self) -> [u8; 2] {
        [self.cause.code(), self.phase.code()]
    }
}

/// The stats rows an event of an exchange counts on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Rows(u8);

impl Rows {
    pub(crate) const FE: Rows = Rows(1);
    pub(crate) const BE: Rows = Rows(2);
    pub(crate) const SRV: Rows = Rows(4);
    pub(crate) const BE_SRV: Rows = Rows(2 | 4);
    pub(crate) const FE_BE: Rows = Rows(1 | 2);
    pub(crate) const ALL: Rows = Rows(1 | 2 | 4);

    fn has(self, r: Rows) -> bool {
        self.0 & r.0 != 0
    }

    /// Counts on some row.
    fn any(self) -> bool {
        self.0 != 0
    }
}

impl std::ops::BitOrAssign for Rows {
    fn bitor_assign(&mut self, r: Rows) {
        self.0 |= r.0;
    }
}

impl std::ops::BitOr for Rows {
    type Output = Rows;
    fn bitor(self, r: Rows) -> Rows {
        Rows(self.0 | r.0)
    }
}

/// What an exchange counts when it ends, besides its status on the
/// frontend row: plain values filled on the way, written to the atomics
/// by [`finish`] only.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) ereq: Rows,
    pub(crate) dreq: Rows,
    pub(crate) dresp: Rows,
    pub(crate) eresp: Rows,
    pub(crate) econ: Rows,
    pub(crate) intercepted: Rows,
    pub(crate) cli_abrt: Rows,
    pub(crate) srv_abrt: Rows,
    /// The status the server answered, counted in `hrsp_*` on the backend
    /// and server rows (the frontend row counts the status the client got,
    /// which a response rule may have changed).
    pub(crate) srv_status: Option<u16>,
    /// A status sluice answered on the backend's behalf, and the rows that
    /// count it.
    pub(crate) be_status: Option<(u16, Rows)>,
    /// Bytes from and to the client, on the frontend row (and the
    /// process's `bytes_out`).
    pub(crate) fe_in: u64,
    pub(crate) fe_out: u64,
    /// Bytes to and from the server, on the backend and server rows.
    pub(crate) srv_in: u64,
    pub(crate) srv_out: u64,
    /// `[queue, connect, response, total]` ms of an exchange that got a
    /// response from a server, for the backend's and server's averages.
    pub(crate) times: Option<[u32; 4]>,
    /// It came over HTTP/1: its bytes also count in `h1_bytes_in/out`.
    pub(crate) h1: bool,
    /// A request HAProxy holds as the client's error on the stick counters
    /// (`http_err_*`): denied, tarpitted, refused as invalid, timed out,
    /// asked for credentials. A 4xx from the server counts too, found
    /// from `srv_status`.
    pub(crate) http_err: bool,
}

impl Tally {
    /// The backend (and server) rows count `status` in `hrsp_*`.
    pub(crate) fn status(&mut self, status: u16, rows: Rows) {
        self.be_status = Some((status, rows));
    }
}

/// Which server a request went to, for `%s`.
#[derive(Debug, Default)]
pub(crate) enum SrvName {
    #[default]
    None,
    /// The stats page answered (`<STATS>`).
    Stats,
    /// The cache answered (`<CACHE>`).
    Cache,
    /// A Lua service answered (`<lua.name>`, the text kept here).
    Applet(Arc<str>),
    Server(Arc<ServerState>),
}

/// One exchange as it ended: what its log line tells and what it counts.
/// Filled along the request path (plain stores, nothing allocated), then
/// handed to [`finish`] once.
#[derive(Debug)]
pub(crate) struct LogRecord {
    /// Wall-clock request start; `None` when the frontend does not log.
    pub(crate) accept: Option<SystemTime>,
    pub(crate) start: Instant,
    /// Request head received, ms (`TR`); -1 = never complete.
    pub(crate) t_req: i64,
    /// Queue wait (`Tw`), server connect (`Tc`), response headers (`Tr`).
    pub(crate) t_queue: i64,
    pub(crate) t_connect: i64,
    pub(crate) t_resp: i64,
    pub(crate) status: i64,
    pub(crate) bytes_out: u64,
    pub(crate) bytes_in: u64,
    /// Termination state: cause and phase, None (`--`) when normal.
    pub(crate) term: Option<Term>,
    /// What ended it may be tried again (a retry may follow); set by the
    /// upstream side's error.
    pub(crate) retryable: bool,
    /// The per-exchange counters it hits.
    pub(crate) tally: Tally,
    /// Its persistence cookie characters (request, response): `--` when
    /// the backend has no `cookie` mode.
    pub(crate) persist: [u8; 2],
    pub(crate) backend: Option<Arc<BackendRt>>,
    pub(crate) server: SrvName,
    pub(crate) retries: u32,
    pub(crate) redispatched: bool,
    pub(crate) srv_queue: u32,
    pub(crate) be_queue: u32,
    /// Nothing at all came from the client (`option dontlognull`).
    pub(crate) null: bool,
    /// What a `set-log-level` rule made of the access log line.
    pub(crate) level: Option<crate::config::model::LogLevel>,
    /// Already logged (`option logasap`).
    pub(crate) logged: bool,
    /// `%rt`.
    pub(crate) req_id: u64,
    /// Client address and the local address it connected to.
    pub(crate) client: Option<crate::sys::peer::Peer>,
    pub(crate) local: Option<crate::sys::peer::Peer>,
    /// The frontend's capture slots, request and response side, as
    /// captured (escaped only when logged; a slot never filled is None).
    /// Empty without captures, so a request allocates nothing for them.
    pub(crate) cap_req: Vec<Option<Vec<u8>>>,
    pub(crate) cap_resp: Vec<Option<Vec<u8>>>,
    /// The client connection is TLS (`%ft` is the frontend name with `~`).
    pub(crate) tls: bool,
    /// A request of an HTTP/2 stream: `<scheme>://<authority>`, which
    /// `%r` puts before the path with the version `HTTP/2.0`, as HAProxy
    /// 2.6 logs the absolute URI of HTTP/2 requests.
    pub(crate) h2_origin: Option<Box<str>>,
    /// `unique-id-format`: the request's id once made (`%ID`, the
    /// `unique-id` fetch, `unique-id-header`).
    pub(crate) unique_id: Option<std::sync::Arc<str>>,
    /// The server connection's facts (`bc_*`, `ssl_bc*`, `ssl_s_*`), kept
    /// only when a configuration reads them (`sample::fetch::server_read`).
    pub(crate) server_conn: Option<Box<crate::sample::srvconn::ServerFacts>>,
}

static REQ_ID: AtomicU64 = AtomicU64::new(0);

impl LogRecord {
    /// A record for a request starting now; `logging` says whether the
    /// frontend logs at all (only then is the wall clock read).
    pub(crate) fn new(logging: bool) -> LogRecord {
        LogRecord {
            accept: logging.then(SystemTime::now),
            start: Instant::now(),
            t_req: -1,
            t_queue: -1,
            t_connect: -1,
            t_resp: -1,
            status: -1,
            bytes_out: 0,
            bytes_in: 0,
            term: None,
            retryable: false,
            tally: Tally::default(),
            persist: *b"--",
            backend: None,
            server: SrvName::None,
            retries: 0,
            redispatched: false,
            srv_queue: 0,
            be_queue: 0,
            null: false,
            level: None,
            logged: false,
            req_id: if logging {
                REQ_ID.fetch_add(1, Relaxed)
            } else {
                0
            },
            client: None,
            local: None,
            cap_req: Vec::new(),
            cap_resp: Vec::new(),
            tls: false,
            h2_origin: None,
            unique_id: None,
            server_conn: None,
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.accept.is_some()
    }

    /// Sets the termination state unless one was set already (the first
    /// cause is the one HAProxy reports).
    pub(crate) fn term(&mut self, cause: Cause, phase: Phase) {
        self.end(Term::new(cause, phase));
    }

    /// [`LogRecord::term`] of a typed state.
    pub(crate) fn end(&mut self, t: Term) {
        if self.term.is_none() {
            self.term = Some(t);
        }
    }

    /// The log's two characters, `--` when normal.
    pub(crate) fn term_code(&self) -> [u8; 2] {
        self.term.map_or(*b"--", Term::code)
    }

    /// Marks the request head as received now.
    pub(crate) fn head_received(&mut self) {
        self.t_req = ms_since(self.start);
    }

    /// The backend this request goes to, with no server yet. Kept whether
    /// or not the frontend logs: the end stage counts on its row.
    pub(crate) fn assign_backend(&mut self, be: &Arc<BackendRt>) {
        self.backend = Some(be.clone());
    }

    /// The server chosen for this request (counted on by the end stage).
    pub(crate) fn assign_server(&mut self, s: &Arc<ServerState>) {
        self.server = SrvName::Server(s.clone());
    }

    /// Where the request comes from (set when logging).
    /// A UNIX client came in on its listener, which has no other address
    /// (`%fi:%fp` print `unix:<luid>` as `%ci:%cp` do, as in HAProxy).
    pub(crate) fn set_addrs(&mut self, client: crate::sys::peer::Peer, local: Option<SocketAddr>) {
        use crate::sys::peer::Peer;
        self.client = Some(client);
        self.local = match (client, local) {
            (_, Some(a)) => Some(Peer::Ip(a)),
            (Peer::Unix(l), None) => Some(Peer::Unix(l)),
            (Peer::Ip(_), None) => None,
        };
    }

    /// `option logasap`: log now, when the response headers are in, with
    /// the bytes sent so far (`+` prefixed, as HAProxy).
    pub(crate) fn log_early(
        &mut self,
        fe: &FrontendRt,
        status: u16,
        head_bytes: u64,
        req: &Head,
        samples: crate::observe::log::Samples<'_>,
    ) {
        if self.enabled() && fe.log.as_ref().is_some_and(|l| l.logasap) {
            self.status = status as i64;
            self.bytes_out = head_bytes;
            emit(fe, self, Some(req), true, samples);
        }
    }

    /// Is this an error for `option log-separate-errors`?
    pub(crate) fn is_error(&self) -> bool {
        self.term.is_some() || self.retries > 0 || self.status >= 500
    }
}

pub(crate) fn ms_since(t: Instant) -> i64 {
    t.elapsed().as_millis().min(i64::MAX as u128) as i64
}

/// The counters of one row and whether the exchange counts `rows` there,
/// on the calling worker's shard.
fn count_on(c: &Counters, row: Rows, t: &Tally, status: Option<u16>) {
    let l = c.local();
    let hit = |rows: Rows, counter: &Count| {
        if rows.has(row) {
            counter.inc();
        }
    };
    hit(t.ereq, &l.ereq);
    hit(t.dreq, &l.dreq);
    hit(t.dresp, &l.dresp);
    hit(t.eresp, &l.eresp);
    hit(t.econ, &l.econ);
    hit(t.intercepted, &l.intercepted);
    hit(t.cli_abrt, &l.cli_abrt);
    hit(t.srv_abrt, &l.srv_abrt);
    if row == Rows::FE {
        if let Some(s) = status {
            l.count_status(s);
        }
        l.bin.add(t.fe_in);
        l.bout.add(t.fe_out);
        return;
    }
    if let Some(s) = t.srv_status {
        l.count_status(s);
    }
    if let Some((s, rows)) = t.be_status
        && rows.has(row)
    {
        l.count_status(s);
    }
    l.bin.add(t.srv_in);
    l.bout.add(t.srv_out);
    if let Some([q, cn, r, tt]) = t.times {
        c.record_times(q, cn, r, tt);
    }
}

/// What a frontend alone counts of an exchange: over HTTP/1, its bytes in
/// `h1_bytes_in/out` too.
fn count_client(c: &ClientCounters, t: &Tally) {
    if t.h1 {
        let l = c.local();
        l.h1_bytes_in.add(t.fe_in);
        l.h1_bytes_out.add(t.fe_out);
    }
}

/// The end stage of every exchange, HTTP and TCP: counts `rec` on the
/// frontend, its backend and its server (and the process's `bytes_out`),
/// then emits the access log line (`head`: the request, for HTTP). Called
/// once per exchange; `status` is what the client got, for the frontend's
/// `hrsp_*` (the log's status is `rec.status`).
pub(crate) fn finish(
    fe: &FrontendRt,
    process: &crate::snapshot::runtime::ProcessCounters,
    rec: &mut LogRecord,
    status: Option<u16>,
    head: Option<&Head>,
) {
    finish_with(fe, process, rec, status, head, Default::default())
}

/// [`finish`], the log line's samples seeing the request's variables and
/// its connections' facts.
pub(crate) fn finish_with(
    fe: &FrontendRt,
    process: &crate::snapshot::runtime::ProcessCounters,
    rec: &mut LogRecord,
    status: Option<u16>,
    head: Option<&Head>,
    samples: crate::observe::log::Samples<'_>,
) {
    finish_tracked(
        fe,
        process,
        rec,
        (status, head, samples),
        Tracking::default(),
    )
}

/// The stick counters an exchange counts on when it ends: its session's
/// and its own (`track-sc*`), and whether it is an HTTP request (its
/// errors and failures count then).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Tracking<'a> {
    pub(crate) sess: Option<&'a Trackers>,
    pub(crate) strm: Option<&'a Trackers>,
    pub(crate) http: bool,
    /// The snapshot's tables, for the `sc_*`, `src_*` and `table_*`
    /// samples of the log line (None: they find nothing).
    pub(crate) tables: Option<&'a crate::state::table::registry::Tables>,
}

/// [`finish_with`], counting on the stick counters of `tracking`
/// too: the bytes from and to the client, an HTTP request's error
/// (`http_err_*`) and failure (`http_fail_*`), as HAProxy classifies
/// them.
pub(crate) fn finish_tracked(
    fe: &FrontendRt,
    process: &crate::snapshot::runtime::ProcessCounters,
    rec: &mut LogRecord,
    (status, head, samples): (Option<u16>, Option<&Head>, crate::observe::log::Samples<'_>),
    tracking: Tracking<'_>,
) {
    if tracking.sess.is_some_and(Trackers::any) || tracking.strm.is_some_and(Trackers::any) {
        count_tracked(rec, tracking);
    }
    let t = &rec.tally;
    count_on(&fe.state.counters, Rows::FE, t, status);
    count_client(&fe.state.client, t);
    process.counts.local().bytes_out.add(t.fe_out);
    if let Some(be) = &rec.backend {
        count_on(&be.state.counters, Rows::BE, t, status);
    }
    if let SrvName::Server(s) = &rec.server {
        count_on(&s.counters, Rows::SRV, t, status);
    }
    #[cfg(test)]
    seen::record(rec);
    let stick = tracking
        .tables
        .map(|tables| crate::state::table::track::StickView {
            tables,
            sess: tracking.sess,
            strm: tracking.strm,
        });
    let samples = crate::observe::log::Samples {
        stick: stick.as_ref().or(samples.stick),
        ..samples
    };
    emit(fe, rec, head, false, samples);
}

/// What an exchange counts on its stick counters.
fn count_tracked(rec: &LogRecord, tr: Tracking<'_>) {
    use crate::state::table::track;
    let t = &rec.tally;
    track::bytes(tr.sess, tr.strm, t.fe_in, t.fe_out);
    if !tr.http {
        return;
    }
    let srv = t.srv_status.unwrap_or(0);
    if t.http_err || (400..500).contains(&srv) {
        track::http_error(tr.sess, tr.strm);
    }
    // A 5xx of the server but 501 and 505, and a server that failed once
    // it had the request (a missing, invalid or late response: HAProxy's
    // `failed_resp`, our `eresp`; a transfer it cut: `srv_abrt`): each
    // counts, as HAProxy counts each where it happens.
    if (500..600).contains(&srv) && srv != 501 && srv != 505 {
        track::http_failure(tr.sess, tr.strm);
    }
    if t.eresp.any() || t.srv_abrt.any() {
        track::http_failure(tr.sess, tr.strm);
    }
}

/// Test builds only: the exchanges [`finish`] saw on this thread, so that
/// in-process tests (`http::harness`) can check the typed record itself.
#[cfg(test)]
pub(crate) mod seen {
    use std::cell::RefCell;

    use super::{LogRecord, SrvName, Term};

    /// What one ended exchange's record said.
    #[derive(Debug, Clone)]
    pub(crate) struct Ended {
        pub(crate) status: i64,
        pub(crate) term: Option<Term>,
        pub(crate) backend: Option<String>,
        /// The server's name, `<NOSRV>` when none was chosen.
        pub(crate) server: String,
        pub(crate) bytes_in: u64,
        pub(crate) bytes_out: u64,
        pub(crate) retries: u32,
    }

    thread_local! {
        static ENDED: RefCell<Vec<Ended>> = const { RefCell::new(Vec::new()) };
    }

    pub(super) fn record(rec: &LogRecord) {
        let server = match &rec.server {
            SrvName::None => "<NOSRV>".to_string(),
            SrvName::Stats => "<STATS>".to_string(),
            SrvName::Cache => "<CACHE>".to_string(),
            SrvName::Applet(a) => a.to_string(),
            SrvName::Server(s) => s.name.clone(),
        };
        let ended = Ended {
            status: rec.status,
            term: rec.term,
            backend: rec.backend.as_ref().map(|b| b.name.clone()),
            server,
            bytes_in: rec.bytes_in,
            bytes_out: rec.bytes_out,
            retries: rec.retries,
        };
        ENDED.with(|e| e.borrow_mut().push(ended));
    }

    /// The exchanges ended on this thread since the last call.
    pub(crate) fn take() -> Vec<Ended> {
        ENDED.with(|e| std::mem::take(&mut *e.borrow_mut()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn termination_states_are_haproxy_characters() {
        let t = |c, p| Term::new(c, p).code();
        assert_eq!(&t(Cause::Server, Phase::Queue), b"SQ");
        assert_eq!(&t(Cause::ServerTimeout, Phase::Queue), b"sQ");
        assert_eq!(&t(Cause::ClientTimeout, Phase::Request), b"cR");
        assert_eq!(&t(Cause::Proxy, Phase::Headers), b"PH");
        assert_eq!(&t(Cause::Local, Phase::Request), b"LR");
        assert_eq!(&t(Cause::Down, Phase::Data), b"DD");
        assert_eq!(&t(Cause::Proxy, Phase::Tarpit), b"PT");
        assert_eq!(&t(Cause::Client, Phase::Connect), b"CC");
    }

    #[test]
    fn the_first_termination_state_is_kept() {
        let mut rec = LogRecord::new(false);
        assert_eq!(&rec.term_code(), b"--");
        assert!(!rec.is_error());
        rec.term(Cause::Server, Phase::Headers);
        rec.term(Cause::Client, Phase::Data);
        assert_eq!(&rec.term_code(), b"SH");
        assert!(rec.is_error());
    }

    #[test]
    fn each_row_counts_what_the_tally_gives_it() {
        let t = Tally {
            eresp: Rows::BE_SRV,
            dreq: Rows::FE_BE,
            srv_status: Some(200),
            be_status: Some((502, Rows::BE)),
            fe_in: 10,
            fe_out: 20,
            srv_in: 30,
            srv_out: 40,
            times: Some([1, 2, 3, 4]),
            h1: true,
            ..Tally::default()
        };
        let (fe, be, srv) = (
            Counters::default(),
            Counters::default(),
            Counters::default(),
        );
        count_on(&fe, Rows::FE, &t, Some(502));
        count_on(&be, Rows::BE, &t, Some(502));
        count_on(&srv, Rows::SRV, &t, Some(502));
        assert_eq!(
            [
                fe.sum(|s| &s.eresp),
                be.sum(|s| &s.eresp),
                srv.sum(|s| &s.eresp)
            ],
            [0, 1, 1]
        );
        assert_eq!(
            [
                fe.sum(|s| &s.dreq),
                be.sum(|s| &s.dreq),
                srv.sum(|s| &s.dreq)
            ],
            [1, 1, 0]
        );
        // The frontend counts what the client got; the backend the
        // server's status and its own 502; the server only its own status.
        let hrsp = |c: &Counters| [c.sum(|s| &s.hrsp[1]), c.sum(|s| &s.hrsp[4])];
        assert_eq!(hrsp(&fe), [0, 1]);
        assert_eq!(hrsp(&be), [1, 1]);
        assert_eq!(hrsp(&srv), [1, 0]);
        assert_eq!([fe.sum(|s| &s.bin), fe.sum(|s| &s.bout)], [10, 20]);
        let client = ClientCounters::default();
        count_client(&client, &t);
        assert_eq!(
            [
                client.sum(|s| &s.h1_bytes_in),
                client.sum(|s| &s.h1_bytes_out)
            ],
            [10, 20]
        );
        assert_eq!([be.sum(|s| &s.bin), be.sum(|s| &s.bout)], [30, 40]);
        assert_eq!([srv.sum(|s| &s.bin), srv.sum(|s| &s.bout)], [30, 40]);
        assert_eq!(fe.time_averages(), [0; 4]);
        assert_eq!(be.time_averages(), [1, 2, 3, 4]);
        assert_eq!(srv.time_maxima(), [1, 2, 3, 4]);
    }
}
