//! Stream counters: the entries a session (`tcp-request connection` and
//! `session` rules) and a stream (`tcp-request content`, `http-request`,
//! `http-response` rules) track, and what they count, as HAProxy 2.6 does.
//!
//! A stream starts with its session's counters: counter `sc<n>` is the
//! stream's own when it tracks one, else the session's, and a stream
//! tracks `sc<n>` only when neither does yet. Each event counts once per
//! counter number, on that counter. A tracked entry's `conn_cur` goes
//! down when its tracker ends (the request for a stream's, the connection
//! for a session's).

use std::sync::OnceLock;

use super::registry::Tables;
use super::{Entry, Held, key};
use crate::config::model::{GpIndex, GptValue, TableAction};
use crate::sample::stick::{self, Counter, DataType, StickOp, TableRef};
use crate::sample::value::{Sample, SmpType};

/// One tracked entry.
#[derive(Debug)]
pub(crate) struct Tracked {
    held: Held,
}

impl Tracked {
    pub(crate) fn entry(&self) -> Entry<'_> {
        self.held.entry()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let e = self.held.entry();
        if e.table.schema.field(DataType::ConnCur).is_some() {
            e.dec_conn_cur();
            e.table.touch(e.slot);
        }
    }
}

/// The counters of a session or of a stream.
#[derive(Debug, Default)]
pub(crate) struct Trackers([OnceLock<Tracked>; stick::MAX_TRACKERS]);

impl Trackers {
    pub(crate) fn get(&self, sc: usize) -> Option<&Tracked> {
        self.0.get(sc)?.get()
    }

    /// Whether any counter is tracked.
    pub(crate) fn any(&self) -> bool {
        self.0.iter().any(|t| t.get().is_some())
    }

    /// Tracks `held` as counter `sc` when it is free, counting the
    /// connection on the entry (`conn_cur`, `conn_cnt`, `conn_rate`) as
    /// HAProxy's `stream_track_stkctr`, and with `request` the HTTP
    /// request being processed (`http_req_cnt`, `http_req_rate`: the
    /// other counters have counted it already); false when `sc` was
    /// taken. `now`: the tables' clock, read once by the caller.
    pub(crate) fn track(&self, sc: usize, held: Held, request: bool, now: u32) -> bool {
        let Some(cell) = self.0.get(sc) else {
            return false;
        };
        if cell.get().is_some() {
            return false;
        }
        let e = held.entry();
        let t = e.table;
        for d in [DataType::ConnCur, DataType::ConnCnt, DataType::ConnRate] {
            e.add_at(d, 0, 1, now);
        }
        if request {
            e.add_at(DataType::HttpReqCnt, 0, 1, now);
            e.add_at(DataType::HttpReqRate, 0, 1, now);
        }
        // A new expiration date too.
        t.touch_at(e.slot, now);
        cell.set(Tracked { held }).is_ok()
    }
}

/// The counter `sc` of a stream: its own, else its session's.
pub(crate) fn effective<'a>(
    sess: Option<&'a Trackers>,
    strm: Option<&'a Trackers>,
    sc: usize,
) -> Option<&'a Tracked> {
    strm.and_then(|s| s.get(sc))
        .or_else(|| sess.and_then(|s| s.get(sc)))
}

/// Every counter a stream has, once each.
fn each<'a>(
    sess: Option<&'a Trackers>,
    strm: Option<&'a Trackers>,
) -> impl Iterator<Item = &'a Tracked> {
    (0..stick::MAX_TRACKERS).filter_map(move |i| effective(sess, strm, i))
}

/// Adds `n` to `cnt` and to `rate` of each tracked entry that stores one
/// of them, touching those changed (HAProxy's `stkctr_inc_*`).
fn count(
    sess: Option<&Trackers>,
    strm: Option<&Trackers>,
    (cnt, rate): (DataType, DataType),
    n: u64,
) {
    for t in each(sess, strm) {
        let e = t.entry();
        let s = &e.table.schema;
        if s.field(cnt).is_none() && s.field(rate).is_none() {
            continue;
        }
        let now = super::freq::now_ms();
        e.add_at(cnt, 0, n, now);
        e.add_at(rate, 0, n, now);
        e.table.touch_at(e.slot, now);
    }
}

/// A new HTTP request.
pub(crate) fn http_request(sess: Option<&Trackers>, strm: Option<&Trackers>) {
    count(sess, strm, (DataType::HttpReqCnt, DataType::HttpReqRate), 1);
}

/// A request HAProxy counts as the client's error (a 4xx, a denied or
/// tarpitted request, a bad request).
pub(crate) fn http_error(sess: Option<&Trackers>, strm: Option<&Trackers>) {
    count(sess, strm, (DataType::HttpErrCnt, DataType::HttpErrRate), 1);
}

/// A response HAProxy counts as a server's failure (a 5xx but 501 and
/// 505, a broken or missing response).
pub(crate) fn http_failure(sess: Option<&Trackers>, strm: Option<&Trackers>) {
    count(
        sess,
        strm,
        (DataType::HttpFailCnt, DataType::HttpFailRate),
        1,
    );
}

/// Bytes from the client and to it.
pub(crate) fn bytes(sess: Option<&Trackers>, strm: Option<&Trackers>, bin: u64, bout: u64) {
    if bin > 0 {
        count(
            sess,
            strm,
            (DataType::BytesInCnt, DataType::BytesInRate),
            bin,
        );
    }
    if bout > 0 {
        count(
            sess,
            strm,
            (DataType::BytesOutCnt, DataType::BytesOutRate),
            bout,
        );
    }
}

/// A new session on the session's counters (`sess_cnt`, `sess_rate`).
pub(crate) fn session(sess: &Trackers) {
    for t in sess.0.iter().filter_map(OnceLock::get) {
        let e = t.entry();
        e.add(DataType::SessCnt, 0, 1);
        e.add(DataType::SessRate, 0, 1);
    }
}

/// What the sample fetches of one stream see: the configuration's tables
/// and the stream's counters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StickView<'a> {
    pub(crate) tables: &'a Tables,
    pub(crate) sess: Option<&'a Trackers>,
    pub(crate) strm: Option<&'a Trackers>,
}

/// Whether an entry was found as a stream's own counter, as a lookup in
/// another table (HAProxy's temporary reference), or by a converter.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    Counter,
    Lookup,
    Converter,
}

/// `op` on `entry` (None: the key is not in the table), as HAProxy's
/// fetches answer.
fn run(entry: Option<Entry<'_>>, op: StickOp, via: Via) -> Option<Sample<'static>> {
    let Some(e) = entry else {
        return Some(match op {
            StickOp::InTable => Sample::Bool(false),
            StickOp::Tracked => Sample::Bool(true),
            _ => Sample::Sint(0),
        });
    };
    let int = Sample::Sint;
    match op {
        StickOp::Get(c) => e.counter(c).map(int),
        StickOp::Inc(c) => {
            let v = e.inc_gpc(c);
            if v.is_some() {
                e.table.touch(e.slot);
            }
            Some(int(v.unwrap_or(0)))
        }
        StickOp::Clr(c) => {
            let v = e.clr_gpc(c)?;
            e.table.touch(e.slot);
            Some(int(v))
        }
        StickOp::Trackers => Some(int(i64::from(e.refs()) + i64::from(via == Via::Converter))),
        StickOp::Tracked => Some(Sample::Bool(true)),
        StickOp::InTable => Some(Sample::Bool(true)),
        StickOp::UpdtConnCnt => {
            e.table.schema.field(DataType::ConnCnt)?;
            e.add(DataType::ConnCnt, 0, 1);
            e.table.touch(e.slot);
            e.counter(Counter::ConnCnt).map(int)
        }
    }
}

impl stick::Stick for StickView<'_> {
    fn tracked(&self, sc: i64, alt: Option<&TableRef>, op: StickOp) -> Option<Sample<'static>> {
        let t = usize::try_from(sc)
            .ok()
            .and_then(|sc| effective(self.sess, self.strm, sc));
        let Some(t) = t else {
            return (op == StickOp::Tracked).then_some(Sample::Bool(false));
        };
        let Some(alt) = alt else {
            return run(Some(t.entry()), op, Via::Counter);
        };
        // The same key looked up in another table.
        let table = self.tables.get(alt)?;
        let bytes = t.entry().key();
        let k = key::KeyWords::of(&bytes, table.schema.key_words);
        match table.with(&k, |e| run(Some(e), op, Via::Lookup)) {
            Some(r) => r,
            None => run(None, op, Via::Lookup),
        }
    }

    fn keyed(&self, table: &TableRef, key: Sample<'_>, op: StickOp) -> Option<Sample<'static>> {
        let table = self.tables.get(table)?;
        let k = key::from_sample(key, table.def.key)?;
        let via = if matches!(op, StickOp::Trackers | StickOp::InTable) {
            Via::Converter
        } else {
            Via::Lookup
        };
        if op.creates() {
            return match table.get_or_create(&k) {
                Ok(held) => run(Some(held.entry()), op, via),
                Err(_) if op == StickOp::UpdtConnCnt => None,
                Err(_) => Some(Sample::Sint(0)),
            };
        }
        match table.with(&k, |e| run(Some(e), op, via)) {
            Some(r) => r,
            None => run(None, op, via),
        }
    }

    fn usage(&self, table: &TableRef) -> Option<(u32, u32)> {
        let t = self.tables.get(table)?;
        Some((t.def.size, t.used()))
    }
}

/// Where a table action runs: a session's rules (`tcp-request connection`
/// and `session`: the session's counters), a stream's (`tcp-request
/// content`), or an HTTP stream's (`http-request`, `http-response`: a
/// counter tracked there counts the request at once, the request having
/// been counted on the others already).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Session,
    Stream,
    HttpStream,
}

impl StickView<'_> {
    /// Runs a rule's table action with the stream's samples `cx`.
    pub(crate) fn act(&self, action: &TableAction, cx: &crate::sample::Ctx<'_>, level: Level) {
        match action {
            TableAction::Track(r) => {
                let sc = r.sc as usize;
                let (own, taken) = match level {
                    Level::Session => (self.sess, self.sess.and_then(|s| s.get(sc)).is_some()),
                    _ => (self.strm, effective(self.sess, self.strm, sc).is_some()),
                };
                let Some(own) = own.filter(|_| !taken) else {
                    return;
                };
                let Some(table) = self.tables.get(&r.table) else {
                    return;
                };
                let Some(k) = r
                    .key
                    .eval(cx)
                    .and_then(|s| key::from_sample(s, table.def.key))
                else {
                    return;
                };
                let now = super::freq::now64();
                let Ok(held) = table.get_or_create_at(&k, now) else {
                    return;
                };
                own.track(sc, held, level == Level::HttpStream, now as u32);
            }
            TableAction::IncGpc(g) => {
                let Some(t) = effective(self.sess, self.strm, g.sc as usize) else {
                    return;
                };
                let e = t.entry();
                let c = match g.which {
                    GpIndex::Zero => Counter::Gpc0,
                    GpIndex::One => Counter::Gpc1,
                    GpIndex::Array(i) => Counter::Gpc(i),
                };
                if e.inc_gpc(c).is_some() {
                    e.table.touch(e.slot);
                }
            }
            TableAction::SetGpt(g) => {
                let Some(t) = effective(self.sess, self.strm, g.sc as usize) else {
                    return;
                };
                let e = t.entry();
                let c = match g.which {
                    GpIndex::Array(i) => Counter::Gpt(i),
                    _ => Counter::Gpt0,
                };
                if e.counter(c).is_none() {
                    return;
                }
                let value = match &g.value {
                    GptValue::Int(v) => *v,
                    // A value that is no integer leaves the tag as it is.
                    GptValue::Expr(x) => match x.eval(cx).and_then(|s| s.cast(SmpType::Sint)) {
                        Some(Sample::Sint(v)) => v,
                        _ => return,
                    },
                };
                if e.set_gpt(c, value as u32) {
                    e.table.touch(e.slot);
                }
            }
        }
    }
}
