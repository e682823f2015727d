//! One entry's data: reading and changing the data types its table
//! stores, as HAProxy's fetches, actions and stream counting do, with its
//! fall-backs (`gpc0` is the first element of a `gpc` array when the table
//! stores the array).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::Table;
use super::freq;
use super::schema::{self, Field, H_EXPIRE, H_REFS, dict};
use crate::sample::stick::{Counter, DataType, Std};

/// An entry of a table, by its slot. Valid while the caller holds a
/// reference on it or the lock of its shard.
#[derive(Clone, Copy)]
pub(crate) struct Entry<'a> {
    pub(crate) table: &'a Table,
    pub(crate) slot: u32,
}

/// A value read from an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Int(i64),
    Text(Option<std::sync::Arc<str>>),
}

/// An entry's data for a peer: each stored type's elements in their raw
/// form (a frequency counter as its period's start, current and previous
/// counts).
pub(crate) type Values = Vec<(DataType, Vec<RawValue>)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawValue {
    Int(u64),
    Freq(u32, u32, u32),
}

impl<'a> Entry<'a> {
    fn words(&self) -> &'a [AtomicU64] {
        self.table.words(self.slot)
    }

    /// The words of element `idx` of `data`, when the table stores it.
    fn element(&self, data: DataType, idx: u32) -> Option<&'a [AtomicU64]> {
        let f: Field = self.table.schema.field(data)?;
        let (at, n) = f.element(data, idx)?;
        self.words().get(at..at + n)
    }

    fn period(&self, data: DataType) -> u32 {
        self.table.schema.field(data).map_or(0, |f| f.period)
    }

    /// The data type and element a counter reads, with HAProxy's
    /// fall-backs on the arrays.
    fn place(&self, c: Counter) -> Option<(DataType, u32)> {
        use DataType as D;
        let stored = |d: DataType| self.table.schema.field(d).is_some();
        let either = |old: DataType, array: DataType, idx: u32| {
            if stored(old) {
                Some((old, 0))
            } else if stored(array) {
                Some((array, idx))
            } else {
                None
            }
        };
        let only = |d: DataType, idx: u32| stored(d).then_some((d, idx));
        match c {
            Counter::ServerId => only(D::ServerId, 0),
            Counter::ConnCnt => only(D::ConnCnt, 0),
            Counter::ConnCur => only(D::ConnCur, 0),
            Counter::ConnRate => only(D::ConnRate, 0),
            Counter::SessCnt => only(D::SessCnt, 0),
            Counter::SessRate => only(D::SessRate, 0),
            Counter::HttpReqCnt => only(D::HttpReqCnt, 0),
            Counter::HttpReqRate => only(D::HttpReqRate, 0),
            Counter::HttpErrCnt => only(D::HttpErrCnt, 0),
            Counter::HttpErrRate => only(D::HttpErrRate, 0),
            Counter::HttpFailCnt => only(D::HttpFailCnt, 0),
            Counter::HttpFailRate => only(D::HttpFailRate, 0),
            Counter::KbytesIn => only(D::BytesInCnt, 0),
            Counter::BytesInRate => only(D::BytesInRate, 0),
            Counter::KbytesOut => only(D::BytesOutCnt, 0),
            Counter::BytesOutRate => only(D::BytesOutRate, 0),
            Counter::Gpt0 => either(D::Gpt0, D::Gpt, 0),
            Counter::Gpt(i) => only(D::Gpt, i),
            Counter::Gpc0 => either(D::Gpc0, D::Gpc, 0),
            Counter::Gpc1 => either(D::Gpc1, D::Gpc, 1),
            Counter::Gpc(i) => only(D::Gpc, i),
            Counter::Gpc0Rate => either(D::Gpc0Rate, D::GpcRate, 0),
            Counter::Gpc1Rate => either(D::Gpc1Rate, D::GpcRate, 1),
            Counter::GpcRate(i) => only(D::GpcRate, i),
        }
    }

    /// A counter's value, None when the table does not store it.
    pub(crate) fn counter(&self, c: Counter) -> Option<i64> {
        let (d, idx) = self.place(c)?;
        let v = self.get(d, idx)?;
        Some(match c {
            Counter::KbytesIn | Counter::KbytesOut => v >> 10,
            _ => v,
        })
    }

    /// Element `idx` of `data` as an integer (a rate read now; a server
    /// key has none).
    pub(crate) fn get(&self, data: DataType, idx: u32) -> Option<i64> {
        let w = self.element(data, idx)?;
        Some(match data.std() {
            Std::Sint => i64::from(w[0].load(Relaxed) as u32 as i32),
            Std::Uint => i64::from(w[0].load(Relaxed) as u32),
            Std::Ull => w[0].load(Relaxed) as i64,
            Std::Freq => i64::from(freq::read(w, self.period(data), freq::now_ms())),
            Std::Dict => return None,
        })
    }

    /// Element `idx` of `data` as `show table` writes it.
    pub(crate) fn value(&self, data: DataType, idx: u32) -> Option<Value> {
        if data.std() == Std::Dict {
            let w = self.element(data, idx)?;
            return Some(Value::Text(dict::get(w[0].load(Relaxed))));
        }
        self.get(data, idx).map(Value::Int)
    }

    /// Adds `n` to an integer or a rate (nothing when not stored).
    pub(crate) fn add(&self, data: DataType, idx: u32, n: u64) {
        if self.table.schema.field(data).is_some() {
            self.add_at(data, idx, n, freq::now_ms());
        }
    }

    /// [`add`](Self::add) at `now` (the tables' clock), read once by a
    /// caller that adds several.
    pub(crate) fn add_at(&self, data: DataType, idx: u32, n: u64, now: u32) {
        let Some(w) = self.element(data, idx) else {
            return;
        };
        match data.std() {
            Std::Freq => {
                freq::update(w, self.period(data), n as u32, now);
            }
            Std::Ull => {
                w[0].fetch_add(n, Relaxed);
            }
            _ => {
                // A 32-bit value: only the low half is read.
                w[0].fetch_add(n, Relaxed);
            }
        }
    }

    /// `conn_cur` down by one, not below 0.
    pub(crate) fn dec_conn_cur(&self) {
        if let Some(w) = self.element(DataType::ConnCur, 0) {
            let _ = w[0].fetch_update(Relaxed, Relaxed, |v| {
                let v = v as u32;
                (v > 0).then(|| u64::from(v - 1))
            });
        }
    }

    /// `sc-inc-gpc*` and the `*_inc_gpc*` fetches: the rate, then the
    /// counter; the new count (of the counter, else of the rate's period),
    /// or None when the table stores neither.
    pub(crate) fn inc_gpc(&self, c: Counter) -> Option<i64> {
        let (rate, count) = match c {
            Counter::Gpc0 => (Counter::Gpc0Rate, Counter::Gpc0),
            Counter::Gpc1 => (Counter::Gpc1Rate, Counter::Gpc1),
            Counter::Gpc(i) => (Counter::GpcRate(i), Counter::Gpc(i)),
            _ => return None,
        };
        let rate = self
            .place(rate)
            .and_then(|(d, i)| Some((d, self.element(d, i)?)));
        let count = self.place(count).and_then(|(d, i)| self.element(d, i));
        if rate.is_none() && count.is_none() {
            return None;
        }
        let mut out = 0;
        if let Some((d, w)) = rate {
            freq::update(w, self.period(d), 1, freq::now_ms());
            out = i64::from(freq::current(w));
        }
        if let Some(w) = count {
            let v = w[0].fetch_add(1, Relaxed) as u32;
            out = i64::from(v.wrapping_add(1));
        }
        Some(out)
    }

    /// The `*_clr_gpc*` fetches: the counter set to 0, its old value
    /// given; None when not stored.
    pub(crate) fn clr_gpc(&self, c: Counter) -> Option<i64> {
        let (d, i) = self.place(c)?;
        let w = self.element(d, i)?;
        Some(i64::from(w[0].swap(0, Relaxed) as u32))
    }

    /// `sc-set-gpt*`: the tag set (nothing when not stored); whether it
    /// was.
    pub(crate) fn set_gpt(&self, c: Counter, value: u32) -> bool {
        let Some(w) = self.place(c).and_then(|(d, i)| self.element(d, i)) else {
            return false;
        };
        w[0].store(u64::from(value), Relaxed);
        true
    }

    /// `set table ... data.<type> <value>`: an integer stored as its type
    /// keeps it (a rate holds it for its period); a server key or an array
    /// element past the first is not set. False when not stored.
    pub(crate) fn set(&self, data: DataType, value: i64) -> bool {
        let Some(w) = self.element(data, 0) else {
            return false;
        };
        match data.std() {
            Std::Sint | Std::Uint => w[0].store(u64::from(value as u32), Relaxed),
            Std::Ull => w[0].store(value as u64, Relaxed),
            Std::Freq => freq::set(w, value as u32, freq::now_ms()),
            Std::Dict => w[0].store(value as u64, Relaxed),
        }
        true
    }

    /// The server the entry sticks to: its id and key (name or address).
    pub(crate) fn set_server(&self, id: i32, key: &str) {
        if let Some(w) = self.element(DataType::ServerId, 0) {
            w[0].store(u64::from(id as u32), Relaxed);
        }
        if let Some(w) = self.element(DataType::ServerKey, 0) {
            w[0].store(dict::intern(key), Relaxed);
        }
    }

    /// The server key stored, if any.
    pub(crate) fn server_key(&self) -> Option<std::sync::Arc<str>> {
        let w = self.element(DataType::ServerKey, 0)?;
        dict::get(w[0].load(Relaxed))
    }

    /// The streams that track it.
    pub(crate) fn refs(&self) -> u32 {
        self.words()[H_REFS].load(Relaxed) as u32
    }

    /// Its expiration date (the tables' clock).
    pub(crate) fn expire(&self) -> u32 {
        self.words()[H_EXPIRE].load(Relaxed) as u32
    }

    /// The key's bytes.
    pub(crate) fn key(&self) -> Vec<u8> {
        let w = self.words();
        let k = schema::HEADER;
        super::key::bytes_of(
            w[k..k + self.table.schema.key_words]
                .iter()
                .map(|a| a.load(Relaxed)),
            self.table.def.key,
        )
    }

    /// The data for a peer (the local-only `conn_cur` left out).
    pub(crate) fn snapshot(&self) -> Values {
        self.table
            .schema
            .stored()
            .filter(|(d, _)| !d.is_local())
            .map(|(d, f)| {
                let vals = (0..f.count)
                    .filter_map(|i| self.element(d, i))
                    .map(|w| match d.std() {
                        Std::Freq => {
                            let (t, c, p) = freq::raw(w);
                            RawValue::Freq(t, c, p)
                        }
                        _ => RawValue::Int(w[0].load(Relaxed)),
                    })
                    .collect();
                (d, vals)
            })
            .collect()
    }

    /// Sets the data a peer sent.
    pub(crate) fn restore(&self, values: &Values) {
        for (d, vals) in values {
            for (i, v) in vals.iter().enumerate() {
                let Some(w) = self.element(*d, i as u32) else {
                    continue;
                };
                match *v {
                    RawValue::Int(n) => w[0].store(n, Relaxed),
                    RawValue::Freq(t, c, p) if d.std() == Std::Freq => freq::set_raw(w, (t, c, p)),
                    RawValue::Freq(..) => {}
                }
            }
        }
    }
}
