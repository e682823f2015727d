//! Lock-free counters of the FRONTEND, BACKEND and server rows of `show
//! stat`, and of the process (`show info`). Which fields a row prints is the
//! stats module's business.
//!
//! What only adds up is kept per worker thread: a row's [`Counters`] holds
//! one [`Shard`] per worker plus one for every other thread (the control
//! runtime's checks and CLI, blocking pools, tests), each on cache lines of
//! its own (`Padded`, 128 bytes: two lines, for the prefetcher that pulls
//! pairs). A worker adds to its own shard, found by the thread's worker
//! index (`sys::workers::current`); readers sum the shards. So the request
//! path writes no cache line another worker writes for the cumulative
//! counters, the rates (each shard counts its second; the shared maximum is
//! written once per second per worker), the time averages and `lastsess`.
//! A shard's [`Count`]s can only be added to outside this module: reading
//! one shard by mistake is impossible, a reader goes through
//! [`Counters::sum`] or [`Counters::totals`].
//!
//! What stays shared on purpose: the [`Gauge`]s (current sessions, queued
//! requests, open HTTP/2 connections). Those are decisions, not statistics:
//! `maxconn` slots, `leastconn` and `first` read the one current value,
//! which must be exact at every moment.
//!
//! Memory: a shard holds only what adds up per worker (31 counters,
//! `lastsess`, two rates' seconds, four time sums and their sample count:
//! 328 bytes, 384 with the padding); the maxima are the row's. A row costs
//! 256 bytes plus 384 per worker thread plus 384 for the other threads:
//! 1.4 KiB with 2 threads, 6.6 KiB with 16, 24.6 KiB with 64 (10,000
//! servers on 64 threads: 252 MB). What only a frontend counts (its
//! connections, the h1/h2 modules, `conn_rate`) is in [`ClientCounters`],
//! 128 bytes more per thread for a frontend only.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::sys::workers;

/// The coarse clock's current second, 0 while no ticker runs.
static COARSE_SECS: AtomicU64 = AtomicU64::new(0);

fn system_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Seconds since the Unix epoch, for rates and ages. Counters read it
/// several times per request, so it comes from a clock that a ticker task
/// refreshes ten times a second (see [`start_coarse_clock`]) rather than
/// from a system call; without the ticker (tests, `-c`) it asks the system.
#[inline]
pub(crate) fn now_secs() -> u64 {
    #[cfg(test)]
    if let s @ 1.. = tests::CLOCK.with(std::cell::Cell::get) {
        return s;
    }
    match COARSE_SECS.load(Relaxed) {
        0 => system_secs(),
        s => s,
    }
}

/// Starts the ticker behind [`now_secs`]; call once inside the runtime.
pub(crate) fn start_coarse_clock() {
    COARSE_SECS.store(system_secs(), Relaxed);
    tokio::spawn(async {
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
        loop {
            tick.tick().await;
            COARSE_SECS.store(system_secs(), Relaxed);
        }
    });
}

/// One additive counter of one shard. Outside this module it can only be
/// added to: its value means nothing without the other shards'.
#[derive(Default, Debug)]
pub(crate) struct Count(AtomicU64);

impl Count {
    #[inline]
    pub(crate) fn inc(&self) {
        self.0.fetch_add(1, Relaxed);
    }

    #[inline]
    pub(crate) fn add(&self, n: u64) {
        if n != 0 {
            self.0.fetch_add(n, Relaxed);
        }
    }

    fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }

    fn clear(&self) {
        self.0.store(0, Relaxed);
    }
}

/// A value on cache lines of its own: 128 bytes, as adjacent-line
/// prefetchers pull 64-byte lines in pairs.
#[repr(align(128))]
#[derive(Default, Debug)]
struct Padded<T>(T);

/// One `T` per worker thread, then one for every other thread. The number
/// is fixed when it is made ([`shard_count`]); a thread whose index is
/// beyond it uses the last one.
#[derive(Debug)]
struct Sharded<T>(Box<[Padded<T>]>);

/// How many shards a new [`Sharded`] has: one per worker the process
/// started with (see `control/startup.rs`, which starts them before any
/// state is made), at most [`WORKER_SHARDS_MAX`], and one for every other
/// thread.
fn shard_count() -> usize {
    workers::count().min(WORKER_SHARDS_MAX) + 1
}

/// Beyond this many workers, workers share shards (worker `i` adds to
/// shard `i % WORKER_SHARDS_MAX`, atomically as always): a row costs
/// 384 bytes per shard, and a configuration of 10,000 servers on 64
/// threads would otherwise hold 252 MB of counters (68 MB so); a line
/// that four workers write is still a sixteenth of the traffic of one
/// that all do.
const WORKER_SHARDS_MAX: usize = 16;

impl<T: Default> Sharded<T> {
    fn new() -> Self {
        Self::with_shards(shard_count())
    }

    fn with_shards(n: usize) -> Self {
        Sharded((0..n.max(1)).map(|_| Padded::default()).collect())
    }
}

impl<T: Default> Default for Sharded<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Sharded<T> {
    /// The calling thread's shard: the only one it writes.
    #[inline]
    fn local(&self) -> &T {
        // A worker numbered past the workers' shards lands on the last,
        // the other threads' one, which is what it should use.
        let shards = &self.0;
        let others = shards.len() - 1;
        let i = match workers::current() {
            Some(i) if others > 0 => i % others,
            _ => others,
        };
        &shards[i].0
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        self.0.iter().map(|p| &p.0)
    }

    /// The sum of one counter over the shards.
    fn sum(&self, field: impl Fn(&T) -> &Count) -> u64 {
        self.iter()
            .map(|s| field(s).get())
            .fold(0, u64::wrapping_add)
    }
}

/// One shard's events per second, like HAProxy's `freq_ctr`: the current
/// second's count and the previous one's, packed so that one atomic holds
/// a consistent pair. Only its shard's threads write it.
#[derive(Default, Debug)]
struct FreqSlot {
    /// High 32 bits: second (mod 2^32); low 32 bits: count in that second.
    cur: AtomicU64,
    /// The count of the second before `cur`'s (0 if it had none).
    prev: AtomicU32,
}

impl FreqSlot {
    /// Counts one event in second `sec`; the second this slot left for it
    /// and its count, when it left one with events.
    #[inline]
    fn hit(&self, sec: u32) -> Option<(u32, u32)> {
        let cur = self.cur.load(Relaxed);
        if (cur >> 32) as u32 == sec && (cur as u32) < u32::MAX {
            // Within the second: one add on the shard's own line. It
            // cannot carry into the second's bits: a full count goes
            // through `roll`, which saturates.
            self.cur.fetch_add(1, Relaxed);
            return None;
        }
        self.roll(sec)
    }

    /// [`FreqSlot::hit`] in a new second: once per second per shard.
    #[cold]
    #[inline(never)]
    fn roll(&self, sec: u32) -> Option<(u32, u32)> {
        let mut cur = self.cur.load(Relaxed);
        loop {
            let (s, n) = ((cur >> 32) as u32, cur as u32);
            let next = if s == sec {
                ((sec as u64) << 32) | (n.saturating_add(1) as u64)
            } else {
                ((sec as u64) << 32) | 1
            };
            match self.cur.compare_exchange_weak(cur, next, Relaxed, Relaxed) {
                Ok(_) if s == sec => return None,
                Ok(_) => {
                    // The finished second becomes the previous one (or 0
                    // if more than a second passed without events).
                    let prev = if s.wrapping_add(1) == sec { n } else { 0 };
                    self.prev.store(prev, Relaxed);
                    return (n != 0).then_some((s, n));
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// `(second, its count, the count of the second before)`.
    fn read(&self) -> (u32, u32, u32) {
        let cur = self.cur.load(Relaxed);
        ((cur >> 32) as u32, cur as u32, self.prev.load(Relaxed))
    }

    /// The events this slot counted in second `t`, as far as it still
    /// knows.
    fn count_in(&self, t: u32) -> u32 {
        let (s, n, prev) = self.read();
        if s == t {
            n
        } else if s == t.wrapping_add(1) {
            prev
        } else {
            0
        }
    }
}

/// The shared part of a rate: its maximum over whole seconds of all shards
/// together, written when a shard leaves a second (once per second per
/// worker, not per event), and the first second it covers since `clear
/// counters`.
#[derive(Default, Debug)]
struct RateMax {
    max: AtomicU32,
    floor: AtomicU32,
}

/// A rate as one counter over the shards' [`FreqSlot`]s: what hits it,
/// limits and reports it.
pub(crate) struct Rate<'a, T> {
    shards: &'a Sharded<T>,
    slot: fn(&T) -> &FreqSlot,
    top: &'a RateMax,
}

impl<'a, T> Rate<'a, T> {
    fn new(shards: &'a Sharded<T>, slot: fn(&T) -> &FreqSlot, top: &'a RateMax) -> Self {
        Rate { shards, slot, top }
    }

    /// Counts one event on `shard`, the calling thread's.
    #[inline]
    fn hit_on(&self, shard: &T) {
        let own = (self.slot)(shard);
        if let Some((s, n)) = own.hit(now_secs() as u32) {
            self.settle(own, s, n);
        }
    }

    /// `own` left second `s` with `n` events: that second's count over all
    /// shards (the others hold it in `prev` once they left it too, in
    /// `cur` while not) may be the highest. The last shard to leave it
    /// sees every count; a shard that never leaves it is seen by `max`
    /// itself.
    #[cold]
    #[inline(never)]
    fn settle(&self, own: &FreqSlot, s: u32, n: u32) {
        if s < self.top.floor.load(Relaxed) {
            return;
        }
        let others = self
            .shards
            .iter()
            .map(self.slot)
            .filter(|&o| !std::ptr::eq(o, own))
            .fold(0u32, |a, o| a.saturating_add(o.count_in(s)));
        self.top.max.fetch_max(n.saturating_add(others), Relaxed);
    }

    /// The events of second `t` over all shards.
    fn total_in(&self, t: u32) -> u32 {
        self.shards
            .iter()
            .map(self.slot)
            .fold(0u32, |a, o| a.saturating_add(o.count_in(t)))
    }

    /// Rate over the last second: the larger of the current second's
    /// count and the previous one's, over all shards.
    pub(crate) fn rate(&self) -> u32 {
        let sec = now_secs() as u32;
        self.total_in(sec).max(self.total_in(sec.wrapping_sub(1)))
    }

    /// The highest count of one second since the start or `clear
    /// counters`, over all shards together: the seconds shards left, and
    /// the ones they still hold (the current one among them).
    pub(crate) fn max(&self) -> u32 {
        let floor = self.top.floor.load(Relaxed);
        let mut max = self.top.max.load(Relaxed);
        for slot in self.shards.iter().map(self.slot) {
            let (s, n, prev) = slot.read();
            if n != 0 && s >= floor {
                max = max.max(self.total_in(s));
            }
            let before = s.wrapping_sub(1);
            if prev != 0 && before >= floor {
                max = max.max(self.total_in(before));
            }
        }
        max
    }

    /// How long until HAProxy's estimate of the events of the last second
    /// (this second's count, plus the previous second's weighted by what
    /// remains of this one) falls below `limit`: zero when it is below
    /// already (`rate-limit sessions`).
    pub(crate) fn wait_below(&self, limit: u32) -> std::time::Duration {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        // The second of `hit`'s clock, which may lag the system's by a
        // tick: the events are counted in it, so the estimate must be too
        // (a lagging second is at its very end).
        let coarse = now_secs();
        let sec = coarse as u32;
        let frac = match now.as_secs().cmp(&coarse) {
            std::cmp::Ordering::Equal => f64::from(now.subsec_millis()) / 1000.0,
            std::cmp::Ordering::Greater => 0.999,
            std::cmp::Ordering::Less => 0.0,
        };
        let (n, p) = (self.total_in(sec), self.total_in(sec.wrapping_sub(1)));
        let (n, p, limit) = (f64::from(n), f64::from(p), f64::from(limit));
        if n + p * (1.0 - frac) < limit {
            return std::time::Duration::ZERO;
        }
        // The rest of this second when it alone is at the limit, else
        // until the previous second's share has shrunk enough.
        let at = if n >= limit {
            1.0
        } else {
            1.0 - (limit - n) / p
        };
        std::time::Duration::from_secs_f64((at - frac).max(0.0) + 0.001)
    }

    /// `clear counters`: the maximum starts again with the next second
    /// (the current one's count, which the shards do not split into
    /// before and after the clear, is left out of it).
    pub(crate) fn clear_max(&self) {
        self.top
            .floor
            .store((now_secs() as u32).wrapping_add(1), Relaxed);
        self.top.max.store(0, Relaxed);
    }
}

/// A gauge with its high-water mark (scur/smax, qcur/qmax).
#[derive(Default, Debug)]
pub(crate) struct Gauge {
    cur: AtomicU64,
    max: AtomicU64,
}

impl Gauge {
    pub(crate) fn inc(&self) {
        let v = self.cur.fetch_add(1, Relaxed) + 1;
        self.max.fetch_max(v, Relaxed);
    }
    pub(crate) fn dec(&self) {
        // Never wrap below zero, whatever a caller's bug.
        let _ = self
            .cur
            .fetch_update(Relaxed, Relaxed, |v| Some(v.saturating_sub(1)));
    }
    pub(crate) fn cur(&self) -> u64 {
        self.cur.load(Relaxed)
    }
    pub(crate) fn max(&self) -> u64 {
        self.max.load(Relaxed)
    }
    pub(crate) fn clear_max(&self) {
        self.max.store(self.cur(), Relaxed);
    }
}

/// How many recent requests the time averages cover (HAProxy's
/// `TIME_STATS_SAMPLES`).
pub(crate) const TIME_SAMPLES: u64 = 1024;

/// A sliding average over the last [`TIME_SAMPLES`] values, HAProxy's
/// `swrate`: the sum decays by one average per new value once the window
/// is full. Lock-free: one compare-and-swap loop per value.
#[derive(Default, Debug)]
pub(crate) struct SwRate {
    sum: AtomicU64,
}

impl SwRate {
    /// Adds `v`; `seen` is how many values came before it.
    fn add(&self, v: u32, seen: u64) {
        let v = u64::from(v);
        let _ = self.sum.fetch_update(Relaxed, Relaxed, |old| {
            Some(if seen < TIME_SAMPLES {
                old + v
            } else {
                old - old.div_ceil(TIME_SAMPLES) + v
            })
        });
    }

    fn clear(&self) {
        self.sum.store(0, Relaxed);
    }
}

/// One shard's qtime/ctime/rtime/ttime: averages over its last 1024
/// requests, in milliseconds (the maxima are the row's, in [`Rare`]).
#[derive(Default, Debug)]
struct TimesShard {
    /// Requests measured so far.
    samples: AtomicU64,
    /// queue, connect, response, total.
    sums: [SwRate; 4],
}

macro_rules! additive {
    (
        $(#[$adds_doc:meta])* $adds:ident,
        $(#[$totals_doc:meta])* $totals:ident,
        [$($(#[$arr_doc:meta])* $arr:ident: $len:literal),*],
        $($(#[$doc:meta])* $name:ident,)*
    ) => {
        $(#[$adds_doc])*
        #[derive(Default, Debug)]
        pub(crate) struct $adds {
            $($(#[$doc])* pub(crate) $name: Count,)*
            $($(#[$arr_doc])* pub(crate) $arr: [Count; $len],)*
        }

        $(#[$totals_doc])*
        #[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) struct $totals {
            $(pub(crate) $name: u64,)*
            $(pub(crate) $arr: [u64; $len],)*
        }

        impl $totals {
            fn add(&mut self, s: &$adds) {
                $(self.$name = self.$name.wrapping_add(s.$name.get());)*
                $(for (t, c) in self.$arr.iter_mut().zip(&s.$arr) {
                    *t = t.wrapping_add(c.get());
                })*
            }
        }
    };
}

additive! {
    /// One worker's share of a row's additive counters: added to through
    /// [`Counters::local`], read summed over the shards.
    Adds,
    /// A row's additive counters summed over the shards.
    Totals,
    [
        /// hrsp_1xx .. hrsp_5xx, hrsp_other.
        hrsp: 6
    ],
    /// Cumulative sessions.
    stot,
    bin,
    bout,
    dreq,
    dresp,
    ereq,
    econ,
    eresp,
    wretr,
    wredis,
    req_tot,
    cli_abrt,
    srv_abrt,
    /// Times this backend/server was chosen by load balancing.
    lbtot,
    intercepted,
    /// HTTP compression (frontend and backend): body bytes given to the
    /// compressor and emitted by it, bytes passed through the `identity`
    /// algorithm, and responses compressed.
    comp_in,
    comp_out,
    comp_byp,
    comp_rsp,
    /// `http-request cache-use`: lookups made and hits served (on the
    /// proxy whose rule looked).
    cache_lookups,
    cache_hits,
    /// Connection attempts to servers / reuses of idle ones.
    connect,
    reuse,
    /// TLS handshakes completed / failed (frontend: with clients; server
    /// and backend: with servers).
    ssl_sess,
    ssl_failed_handshake,
}

additive! {
    /// One worker's share of a frontend's client-side counters: added to
    /// through [`ClientCounters::local`], read summed over the shards.
    ClientAdds,
    /// A frontend's client-side counters summed over the shards.
    ClientTotals,
    [],
    /// Accepted connections.
    conn_tot,
    /// Connections refused by `tcp-request connection` rules.
    dcon,
    /// Sessions refused by `tcp-request session` rules.
    dses,
    /// HTTP/2 on the client side: streams opened (HEADERS), DATA frames
    /// received, connections closed for a protocol error (or a flood),
    /// streams reset for one, GOAWAYs sent for an error, connections in
    /// all.
    h2_headers_rcvd,
    h2_data_rcvd,
    h2_conn_protocol_errors,
    h2_strm_protocol_errors,
    h2_goaway_resp,
    h2_total_connections,
    /// HTTP/1 client connections and the requests they carried.
    h1_total_connections,
    h1_total_streams,
    /// The bytes of those connections, in and out (as `bin`/`bout`).
    h1_bytes_in,
    h1_bytes_out,
}

/// One worker's share of a row: only the additive counters and the
/// per-shard state of the rates and times (see the module's doc for its
/// size).
#[derive(Default, Debug)]
pub(crate) struct Shard {
    adds: Adds,
    /// Unix time of this shard's last session, 0 = never.
    last_sess: AtomicU64,
    sess_rate: FreqSlot,
    req_rate: FreqSlot,
    times: TimesShard,
}

/// The shared part of a row that the request path writes: its gauges,
/// decisions read exactly by `maxconn` slots and balancing.
#[derive(Default, Debug)]
pub(crate) struct Shared {
    /// Current / max sessions (frontend: client connections; backend and
    /// server: requests being served).
    pub(crate) sess: Gauge,
    /// Queued requests (backend and server).
    pub(crate) queue: Gauge,
    /// HTTP/2 client connections open (frontend).
    pub(crate) h2_open_connections: Gauge,
}

/// The part of a row read on every count and written rarely: where the
/// shards are, the rates' maxima (once per second per worker) and the
/// times' maxima (when one is beaten, which a worker checks by reading
/// first).
#[derive(Debug)]
struct Rare {
    shards: Sharded<Shard>,
    sess_rate: RateMax,
    req_rate: RateMax,
    /// qtime_max, ctime_max, rtime_max, ttime_max.
    time_maxima: [AtomicU32; 4],
}

impl Rare {
    fn with_shards(n: usize) -> Rare {
        Rare {
            shards: Sharded::with_shards(n),
            sess_rate: RateMax::default(),
            req_rate: RateMax::default(),
            time_maxima: Default::default(),
        }
    }
}

/// Counters of one stats row (frontend, backend or server).
#[derive(Debug)]
pub(crate) struct Counters {
    /// Written by the request path of every worker (the gauges).
    shared: Padded<Shared>,
    /// Read on every count, seldom written: on lines of their own, away
    /// from the gauges'.
    rare: Padded<Rare>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            shared: Padded::default(),
            rare: Padded(Rare::with_shards(shard_count())),
        }
    }
}

impl std::ops::Deref for Counters {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared.0
    }
}

impl Counters {
    /// Counters of `n` shards, whatever the workers (tests).
    #[cfg(test)]
    pub(crate) fn with_shards(n: usize) -> Counters {
        Counters {
            shared: Padded::default(),
            rare: Padded(Rare::with_shards(n)),
        }
    }

    fn shards(&self) -> &Sharded<Shard> {
        &self.rare.0.shards
    }

    /// The calling thread's additive counters, to add to.
    #[inline]
    pub(crate) fn local(&self) -> &Adds {
        &self.shards().local().adds
    }

    /// One additive counter, summed over the shards.
    pub(crate) fn sum(&self, field: impl Fn(&Adds) -> &Count) -> u64 {
        self.shards().sum(|s| field(&s.adds))
    }

    /// Every additive counter, summed over the shards (one pass for a
    /// whole row).
    pub(crate) fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for s in self.shards().iter() {
            t.add(&s.adds);
        }
        t
    }

    pub(crate) fn sess_rate(&self) -> Rate<'_, Shard> {
        Rate::new(self.shards(), |s| &s.sess_rate, &self.rare.0.sess_rate)
    }

    pub(crate) fn req_rate(&self) -> Rate<'_, Shard> {
        Rate::new(self.shards(), |s| &s.req_rate, &self.rare.0.req_rate)
    }

    /// A new session starts on this row.
    pub(crate) fn session_start(&self) {
        self.sess.inc();
        let local = self.shards().local();
        local.adds.stot.inc();
        self.sess_rate().hit_on(local);
        local.last_sess.store(now_secs(), Relaxed);
    }

    pub(crate) fn session_end(&self) {
        self.sess.dec();
    }

    /// Count an HTTP response status in hrsp_* (the data plane counts on
    /// its [`Counters::local`] shard).
    #[cfg(test)]
    pub(crate) fn count_status(&self, status: u16) {
        self.local().count_status(status);
    }

    pub(crate) fn count_request(&self) {
        let local = self.shards().local();
        local.adds.req_tot.inc();
        self.req_rate().hit_on(local);
    }

    /// Seconds since the last session, or -1 if there never was one.
    pub(crate) fn lastsess_age(&self) -> i64 {
        match self
            .shards()
            .iter()
            .map(|s| s.last_sess.load(Relaxed))
            .max()
        {
            None | Some(0) => -1,
            Some(t) => now_secs().saturating_sub(t) as i64,
        }
    }

    /// Records the timings of one request that reached a server, in
    /// milliseconds, as HAProxy's `stream_update_time_stats` does (call it
    /// on the backend's and on the server's counters):
    /// * `queue`: waiting for a server slot (0 when not queued),
    /// * `connect`: establishing the server connection (0 on reuse),
    /// * `response`: from the request sent to the response headers
    ///   received (HAProxy's Tr),
    /// * `total`: the whole request, accept to last byte (Ta/Tt).
    ///
    /// Requests that got no response from a server are not recorded.
    /// Lock-free, on the calling thread's shard; a maximum is written only
    /// when beaten.
    pub(crate) fn record_times(&self, queue: u32, connect: u32, response: u32, total: u32) {
        let t = &self.shards().local().times;
        let seen = t.samples.fetch_add(1, Relaxed);
        let [q, c, r, tt] = &t.sums;
        q.add(queue, seen);
        c.add(connect, seen);
        r.add(response, seen);
        tt.add(total, seen);
        let beat = |max: &AtomicU32, v: u32| {
            if v > max.load(Relaxed) {
                max.fetch_max(v, Relaxed);
            }
        };
        let [qm, cm, rm, tm] = &self.rare.0.time_maxima;
        beat(qm, queue);
        beat(cm, connect);
        beat(rm, response);
        beat(tm, total);
    }

    /// `[qtime, ctime, rtime, ttime]` averages. Each shard averages its
    /// own last 1024 requests; over several, the shards' sums over their
    /// windows' sizes (an average weighted by their samples), which with
    /// one active worker is that worker's average exactly.
    pub(crate) fn time_averages(&self) -> [u64; 4] {
        let mut sums = [0u64; 4];
        let mut window = 0u64;
        for t in self.shards().iter().map(|s| &s.times) {
            window += t.samples.load(Relaxed).min(TIME_SAMPLES);
            for (s, r) in sums.iter_mut().zip(&t.sums) {
                *s += r.sum.load(Relaxed);
            }
        }
        if window == 0 {
            return [0; 4];
        }
        sums.map(|s| s.div_ceil(window))
    }

    /// `[qtime_max, ctime_max, rtime_max, ttime_max]`.
    pub(crate) fn time_maxima(&self) -> [u32; 4] {
        self.rare.0.time_maxima.each_ref().map(|m| m.load(Relaxed))
    }

    /// `clear counters`: the max values (a frontend's client-side
    /// counters are cleared by [`ClientCounters::clear_max`]).
    pub(crate) fn clear_max(&self) {
        self.sess.clear_max();
        self.queue.clear_max();
        self.sess_rate().clear_max();
        self.req_rate().clear_max();
        for m in &self.rare.0.time_maxima {
            m.store(0, Relaxed);
        }
    }

    /// `clear counters all`: every cumulative counter, average and max back
    /// to 0. Gauges keep their current value (those sessions still exist).
    pub(crate) fn clear_all(&self) {
        for s in self.shards().iter() {
            let a = &s.adds;
            let cum: [&Count; 23] = [
                &a.stot,
                &a.bin,
                &a.bout,
                &a.dreq,
                &a.dresp,
                &a.ereq,
                &a.econ,
                &a.eresp,
                &a.wretr,
                &a.wredis,
                &a.req_tot,
                &a.cli_abrt,
                &a.srv_abrt,
                &a.lbtot,
                &a.intercepted,
                &a.comp_in,
                &a.comp_out,
                &a.comp_byp,
                &a.comp_rsp,
                &a.cache_lookups,
                &a.cache_hits,
                &a.connect,
                &a.reuse,
            ];
            for c in cum.into_iter().chain(a.hrsp.iter()) {
                c.clear();
            }
            s.last_sess.store(0, Relaxed);
            s.times.samples.store(0, Relaxed);
            s.times.sums.iter().for_each(SwRate::clear);
        }
        self.clear_max();
    }
}

impl Adds {
    /// Counts an HTTP response status in hrsp_*.
    pub(crate) fn count_status(&self, status: u16) {
        let idx = match status {
            100..=199 => 0,
            200..=299 => 1,
            300..=399 => 2,
            400..=499 => 3,
            500..=599 => 4,
            _ => 5,
        };
        self.hrsp[idx].inc();
    }
}

/// One worker's share of a frontend's client side.
#[derive(Default, Debug)]
pub(crate) struct ClientShard {
    adds: ClientAdds,
    conn_rate: FreqSlot,
}

/// What only a frontend counts, about its client connections, per worker
/// as a row's [`Counters`] are: in their own shards, so that a backend's
/// and a server's stay small.
#[derive(Debug, Default)]
pub(crate) struct ClientCounters {
    shards: Sharded<ClientShard>,
    conn_rate: RateMax,
}

impl ClientCounters {
    /// The calling thread's counters, to add to.
    #[inline]
    pub(crate) fn local(&self) -> &ClientAdds {
        &self.shards.local().adds
    }

    /// One counter, summed over the shards.
    pub(crate) fn sum(&self, field: impl Fn(&ClientAdds) -> &Count) -> u64 {
        self.shards.sum(|s| field(&s.adds))
    }

    /// Every counter, summed over the shards.
    pub(crate) fn totals(&self) -> ClientTotals {
        let mut t = ClientTotals::default();
        for s in self.shards.iter() {
            t.add(&s.adds);
        }
        t
    }

    pub(crate) fn conn_rate(&self) -> Rate<'_, ClientShard> {
        Rate::new(&self.shards, |s| &s.conn_rate, &self.conn_rate)
    }

    /// A connection accepted on this frontend.
    pub(crate) fn count_connection(&self) {
        let local = self.shards.local();
        local.adds.conn_tot.inc();
        self.conn_rate().hit_on(local);
    }

    /// `clear counters`: the rate's max, and the h1/h2 columns: HAProxy's
    /// stats modules are "clearable", reset by `clear counters` with or
    /// without `all` (their open-connection gauges stay).
    pub(crate) fn clear_max(&self) {
        self.conn_rate().clear_max();
        for s in self.shards.iter() {
            let a = &s.adds;
            for c in [
                &a.h1_total_connections,
                &a.h1_total_streams,
                &a.h1_bytes_in,
                &a.h1_bytes_out,
                &a.h2_headers_rcvd,
                &a.h2_data_rcvd,
                &a.h2_conn_protocol_errors,
                &a.h2_strm_protocol_errors,
                &a.h2_goaway_resp,
                &a.h2_total_connections,
            ] {
                c.clear();
            }
        }
    }

    /// `clear counters all`: the connection counts too.
    pub(crate) fn clear_all(&self) {
        for s in self.shards.iter() {
            for c in [&s.adds.conn_tot, &s.adds.dcon, &s.adds.dses] {
                c.clear();
            }
        }
        self.clear_max();
    }
}

/// The process's own shard: what `show info` adds up (CumConns, CumReq,
/// TotalBytesOut) and its connection and session rates.
#[derive(Default, Debug)]
pub(crate) struct ProcessShard {
    pub(crate) cum_conns: Count,
    pub(crate) cum_req: Count,
    pub(crate) bytes_out: Count,
    conn_rate: FreqSlot,
    sess_rate: FreqSlot,
}

/// The process's figures that add up, per worker as a row's are.
#[derive(Debug, Default)]
pub(crate) struct ProcessCounts {
    shards: Sharded<ProcessShard>,
    conn_rate: RateMax,
    sess_rate: RateMax,
}

impl ProcessCounts {
    /// The calling thread's shard, to add to.
    #[inline]
    pub(crate) fn local(&self) -> &ProcessShard {
        self.shards.local()
    }

    pub(crate) fn sum(&self, field: impl Fn(&ProcessShard) -> &Count) -> u64 {
        self.shards.sum(field)
    }

    pub(crate) fn conn_rate(&self) -> Rate<'_, ProcessShard> {
        Rate::new(&self.shards, |s| &s.conn_rate, &self.conn_rate)
    }

    pub(crate) fn sess_rate(&self) -> Rate<'_, ProcessShard> {
        Rate::new(&self.shards, |s| &s.sess_rate, &self.sess_rate)
    }

    /// A connection accepted: CumConns, ConnRate and SessRate.
    pub(crate) fn count_connection(&self) {
        let local = self.shards.local();
        local.cum_conns.inc();
        self.conn_rate().hit_on(local);
        self.sess_rate().hit_on(local);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// The second [`now_secs`] says on this thread, when not 0.
        pub(super) static CLOCK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    fn set_clock(sec: u64) {
        CLOCK.with(|c| c.set(sec));
    }

    #[test]
    fn gauge_tracks_max_and_never_wraps() {
        let g = Gauge::default();
        g.inc();
        g.inc();
        g.dec();
        g.dec();
        g.dec();
        assert_eq!(g.cur(), 0);
        assert_eq!(g.max(), 2);
    }

    /// The sizes the module's doc gives for a row.
    #[test]
    fn a_row_is_256_bytes_and_384_per_shard() {
        assert_eq!(std::mem::size_of::<Padded<Shard>>(), 384);
        assert_eq!(std::mem::size_of::<Counters>(), 256);
        assert_eq!(std::mem::size_of::<Padded<ClientShard>>(), 128);
    }

    #[test]
    fn status_classes() {
        let c = Counters::default();
        for s in [101, 200, 204, 302, 404, 503, 99, 600] {
            c.count_status(s);
        }
        assert_eq!(c.totals().hrsp, [1, 2, 1, 1, 1, 2]);
    }

    #[test]
    fn time_averages_cover_the_last_1024_requests() {
        let c = Counters::default();
        assert_eq!(c.time_averages(), [0; 4]);
        c.record_times(0, 2, 10, 20);
        c.record_times(0, 4, 20, 40);
        assert_eq!(c.time_averages(), [0, 3, 15, 30]);
        assert_eq!(c.time_maxima(), [0, 4, 20, 40]);
        // A long run of 100 ms responses pushes the old samples out.
        for _ in 0..20 * TIME_SAMPLES {
            c.record_times(1, 1, 100, 100);
        }
        let [q, _, r, _] = c.time_averages();
        assert_eq!(q, 1);
        assert!((99..=101).contains(&r), "{r}");
        c.clear_max();
        assert_eq!(c.time_maxima(), [0; 4]);
        c.clear_all();
        assert_eq!(c.time_averages(), [0; 4]);
    }

    #[test]
    fn freq_counts_this_second() {
        let c = Counters::default();
        for _ in 0..5 {
            c.count_request();
        }
        assert!(c.req_rate().rate() >= 1);
        assert!(c.req_rate().max() >= 1);
    }

    /// Runs `f` on a thread that says it is worker `index` (None: not a
    /// worker) at second `sec`, and waits for it.
    fn on_worker(index: Option<usize>, sec: u64, f: impl FnOnce() + Send) {
        std::thread::scope(|s| {
            s.spawn(|| {
                workers::pretend(index);
                set_clock(sec);
                f();
            })
            .join()
            .unwrap();
        });
    }

    #[test]
    fn shards_of_several_workers_add_up() {
        // Two workers and the other threads' shard; worker 7 is beyond
        // them and shares worker 1's (7 % 2), as workers past
        // WORKER_SHARDS_MAX do.
        let c = Counters::with_shards(3);
        let workers = [Some(0), Some(1), None, Some(7)];
        // Every thread works in the same second, so that the rates'
        // counts are known.
        set_clock(1_000_000);
        for (k, w) in workers.into_iter().enumerate() {
            on_worker(w, 1_000_000, || {
                for _ in 0..=k {
                    c.session_start();
                    c.count_request();
                    c.count_status(200);
                    c.local().bin.add(10);
                    c.record_times(0, 1, 2, 3 + k as u32);
                    c.session_end();
                }
            });
        }
        // 1 + 2 + 3 + 4 of everything, in one second.
        let t = c.totals();
        assert_eq!((t.stot, t.req_tot, t.hrsp[1], t.bin), (10, 10, 10, 100));
        assert_eq!(c.sum(|a| &a.stot), 10);
        // The shards themselves: worker 0 has 1, worker 1 has 2 and
        // worker 7's 4, the other threads 3.
        let per: Vec<u64> = c.shards().iter().map(|s| s.adds.stot.get()).collect();
        assert_eq!(per, [1, 6, 3]);
        assert_eq!(c.req_rate().rate(), 10);
        assert_eq!(c.req_rate().max(), 10);
        assert_eq!(c.sess_rate().max(), 10);
        assert_eq!(c.sess.cur(), 0);
        // Weighted by samples: ttime (1*3 + 2*4 + 3*5 + 4*6) / 10.
        assert_eq!(c.time_averages(), [0, 1, 2, 5]);
        assert_eq!(c.time_maxima(), [0, 1, 2, 6]);
        assert_eq!(c.lastsess_age(), 0);

        // The next second: worker 1 leaves the first one with 3 requests,
        // and settles its total (10) as the max; the rate is the larger
        // of the two seconds.
        set_clock(1_000_001);
        on_worker(Some(1), 1_000_001, || {
            for _ in 0..3 {
                c.count_request();
            }
        });
        assert_eq!(c.req_rate().rate(), 10);
        assert_eq!(c.req_rate().max(), 10);
        // A quiet second later, the second with 3 is the last full one.
        set_clock(1_000_002);
        assert_eq!(c.req_rate().rate(), 3);
        assert_eq!(c.req_rate().max(), 10);
        // Long after, with every shard still holding its old second: the
        // max is kept, the rate is 0, rate limits are free.
        set_clock(1_000_100);
        assert_eq!(c.req_rate().rate(), 0);
        assert_eq!(c.req_rate().max(), 10);
        assert_eq!(c.req_rate().wait_below(1), std::time::Duration::ZERO);
        // Worker 0 comes back: the first second's total is settled in the
        // shared max as it leaves it.
        on_worker(Some(0), 1_000_100, || c.count_request());
        assert_eq!(c.rare.0.req_rate.max.load(Relaxed), 10);

        c.clear_all();
        assert_eq!(c.totals(), Totals::default());
        assert_eq!(c.req_rate().max(), 0);
        assert_eq!(c.lastsess_age(), -1);
    }

    #[test]
    fn a_rate_limit_sees_every_shard() {
        let c = Counters::with_shards(3);
        let sec = 2_000_000;
        set_clock(sec);
        for w in [Some(0), Some(1)] {
            on_worker(w, sec, || {
                for _ in 0..5 {
                    c.session_start();
                }
            });
        }
        // 10 this second over both workers: a limit of 10 waits, one of
        // 11 does not.
        assert!(c.sess_rate().wait_below(10) > std::time::Duration::ZERO);
        assert_eq!(c.sess_rate().wait_below(11), std::time::Duration::ZERO);
    }
}
