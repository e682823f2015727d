//! Lock-free counters shared by the FRONTEND, BACKEND and server rows of
//! `show stat`. Every field is an atomic updated on the data plane without a
//! lock; which fields a row prints is the stats module's business.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::{SystemTime, UNIX_EPOCH};

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

/// Events per second over the last full second, like HAProxy's `freq_ctr`:
/// the current second's count and the previous one's, packed so that one
/// atomic holds a consistent pair.
#[derive(Default, Debug)]
pub(crate) struct FreqCtr {
    /// High 32 bits: second (mod 2^32); low 32 bits: count in that second.
    cur: AtomicU64,
    prev: AtomicU32,
    max: AtomicU32,
}

impl FreqCtr {
    pub(crate) fn hit(&self) {
        let sec = now_secs() as u32;
        let mut cur = self.cur.load(Relaxed);
        loop {
            let (s, n) = ((cur >> 32) as u32, cur as u32);
            let next = if s == sec {
                ((sec as u64) << 32) | (n.saturating_add(1) as u64)
            } else {
                ((sec as u64) << 32) | 1
            };
            match self.cur.compare_exchange_weak(cur, next, Relaxed, Relaxed) {
                Ok(_) => {
                    if s != sec {
                        // The finished second becomes the previous one (or 0
                        // if more than a second passed without events).
                        let prev = if s.wrapping_add(1) == sec { n } else { 0 };
                        self.prev.store(prev, Relaxed);
                    }
                    let now_n = next as u32;
                    self.max.fetch_max(now_n, Relaxed);
                    return;
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// Rate over the last second: events counted in the current second,
    /// plus the previous second's weighted by what remains of it, as HAProxy
    /// approximates; here simply the larger of the two whole seconds' view.
    pub(crate) fn rate(&self) -> u32 {
        let sec = now_secs() as u32;
        let cur = self.cur.load(Relaxed);
        let (s, n) = ((cur >> 32) as u32, cur as u32);
        if s == sec {
            n.max(self.prev.load(Relaxed))
        } else if s.wrapping_add(1) == sec {
            n
        } else {
            0
        }
    }

    pub(crate) fn max(&self) -> u32 {
        self.max.load(Relaxed)
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
        let cur = self.cur.load(Relaxed);
        let (s, n) = ((cur >> 32) as u32, cur as u32);
        let (n, p) = if s == sec {
            (n, self.prev.load(Relaxed))
        } else if s.wrapping_add(1) == sec {
            (0, n)
        } else {
            (0, 0)
        };
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

    pub(crate) fn clear_max(&self) {
        self.max.store(0, Relaxed);
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

    /// The average over the last `min(samples, TIME_SAMPLES)` values
    /// (rounded up, as HAProxy's `swrate_avg`), 0 without samples.
    pub(crate) fn avg(&self, samples: u64) -> u64 {
        let w = samples.min(TIME_SAMPLES);
        if w == 0 {
            return 0;
        }
        self.sum.load(Relaxed).div_ceil(w)
    }

    fn clear(&self) {
        self.sum.store(0, Relaxed);
    }
}

/// qtime/ctime/rtime/ttime of a backend or server: averages over the last
/// 1024 requests and the maxima, in milliseconds.
#[derive(Default, Debug)]
pub(crate) struct Times {
    /// Requests measured so far.
    pub(crate) samples: AtomicU64,
    pub(crate) queue: SwRate,
    pub(crate) connect: SwRate,
    pub(crate) response: SwRate,
    pub(crate) total: SwRate,
    pub(crate) queue_max: AtomicU32,
    pub(crate) connect_max: AtomicU32,
    pub(crate) response_max: AtomicU32,
    pub(crate) total_max: AtomicU32,
}

impl Times {
    /// `[qtime, ctime, rtime, ttime]` averages.
    pub(crate) fn averages(&self) -> [u64; 4] {
        let n = self.samples.load(Relaxed);
        [
            self.queue.avg(n),
            self.connect.avg(n),
            self.response.avg(n),
            self.total.avg(n),
        ]
    }

    /// `[qtime_max, ctime_max, rtime_max, ttime_max]`.
    pub(crate) fn maxima(&self) -> [u32; 4] {
        [
            self.queue_max.load(Relaxed),
            self.connect_max.load(Relaxed),
            self.response_max.load(Relaxed),
            self.total_max.load(Relaxed),
        ]
    }

    fn clear_max(&self) {
        for m in [
            &self.queue_max,
            &self.connect_max,
            &self.response_max,
            &self.total_max,
        ] {
            m.store(0, Relaxed);
        }
    }

    fn clear(&self) {
        self.samples.store(0, Relaxed);
        for r in [&self.queue, &self.connect, &self.response, &self.total] {
            r.clear();
        }
        self.clear_max();
    }
}

/// Counters of one stats row (frontend, backend or server).
#[derive(Default, Debug)]
pub(crate) struct Counters {
    /// Current / max sessions (frontend: client connections; backend and
    /// server: requests being served).
    pub(crate) sess: Gauge,
    /// Queued requests (backend and server).
    pub(crate) queue: Gauge,
    /// Cumulative sessions.
    pub(crate) stot: AtomicU64,
    pub(crate) bin: AtomicU64,
    pub(crate) bout: AtomicU64,
    pub(crate) dreq: AtomicU64,
    pub(crate) dresp: AtomicU64,
    pub(crate) ereq: AtomicU64,
    pub(crate) econ: AtomicU64,
    pub(crate) eresp: AtomicU64,
    pub(crate) wretr: AtomicU64,
    pub(crate) wredis: AtomicU64,
    /// hrsp_1xx .. hrsp_5xx, hrsp_other.
    pub(crate) hrsp: [AtomicU64; 6],
    pub(crate) req_tot: AtomicU64,
    pub(crate) cli_abrt: AtomicU64,
    pub(crate) srv_abrt: AtomicU64,
    /// Times this backend/server was chosen by load balancing.
    pub(crate) lbtot: AtomicU64,
    /// Frontend: accepted connections.
    pub(crate) conn_tot: AtomicU64,
    /// Connections refused by `tcp-request connection` rules (frontend).
    pub(crate) dcon: AtomicU64,
    /// Sessions refused by `tcp-request session` rules (frontend).
    pub(crate) dses: AtomicU64,
    pub(crate) intercepted: AtomicU64,
    /// HTTP compression (frontend and backend): body bytes given to the
    /// compressor and emitted by it, bytes passed through the `identity`
    /// algorithm, and responses compressed.
    pub(crate) comp_in: AtomicU64,
    pub(crate) comp_out: AtomicU64,
    pub(crate) comp_byp: AtomicU64,
    pub(crate) comp_rsp: AtomicU64,
    /// `http-request cache-use`: lookups made and hits served (on the
    /// proxy whose rule looked).
    pub(crate) cache_lookups: AtomicU64,
    pub(crate) cache_hits: AtomicU64,
    /// Connection attempts to servers / reuses of idle ones.
    pub(crate) connect: AtomicU64,
    pub(crate) reuse: AtomicU64,
    /// TLS handshakes completed / failed (frontend: with clients; server
    /// and backend: with servers).
    pub(crate) ssl_sess: AtomicU64,
    pub(crate) ssl_failed_handshake: AtomicU64,
    /// HTTP/2 on the client side (frontend): streams opened (HEADERS),
    /// DATA frames received, connections closed for a protocol error (or
    /// a flood), streams reset for one, GOAWAYs sent for an error,
    /// connections open and in all.
    pub(crate) h2_headers_rcvd: AtomicU64,
    pub(crate) h2_data_rcvd: AtomicU64,
    pub(crate) h2_conn_protocol_errors: AtomicU64,
    pub(crate) h2_strm_protocol_errors: AtomicU64,
    pub(crate) h2_goaway_resp: AtomicU64,
    pub(crate) h2_open_connections: Gauge,
    pub(crate) h2_total_connections: AtomicU64,
    /// HTTP/1 client connections (frontend) and the requests they carried.
    pub(crate) h1_total_connections: AtomicU64,
    pub(crate) h1_total_streams: AtomicU64,
    /// The bytes of those connections, in and out (as `bin`/`bout`).
    pub(crate) h1_bytes_in: AtomicU64,
    pub(crate) h1_bytes_out: AtomicU64,
    /// Unix time of the last session, 0 = never.
    pub(crate) last_sess: AtomicU64,
    pub(crate) sess_rate: FreqCtr,
    pub(crate) req_rate: FreqCtr,
    pub(crate) conn_rate: FreqCtr,
    /// qtime/ctime/rtime/ttime (backend and server rows).
    pub(crate) times: Times,
}

impl Counters {
    /// A new session starts on this row.
    pub(crate) fn session_start(&self) {
        self.sess.inc();
        self.stot.fetch_add(1, Relaxed);
        self.sess_rate.hit();
        self.last_sess.store(now_secs(), Relaxed);
    }

    pub(crate) fn session_end(&self) {
        self.sess.dec();
    }

    /// Count an HTTP response status in hrsp_*.
    pub(crate) fn count_status(&self, status: u16) {
        let idx = match status {
            100..=199 => 0,
            200..=299 => 1,
            300..=399 => 2,
            400..=499 => 3,
            500..=599 => 4,
            _ => 5,
        };
        self.hrsp[idx].fetch_add(1, Relaxed);
    }

    pub(crate) fn count_request(&self) {
        self.req_tot.fetch_add(1, Relaxed);
        self.req_rate.hit();
    }

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    #[cfg(test)]
    pub(crate) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Relaxed)
    }

    /// Seconds since the last session, or -1 if there never was one.
    pub(crate) fn lastsess_age(&self) -> i64 {
        match self.last_sess.load(Relaxed) {
            0 => -1,
            t => now_secs().saturating_sub(t) as i64,
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
    /// Lock-free; a few atomic operations.
    pub(crate) fn record_times(&self, queue: u32, connect: u32, response: u32, total: u32) {
        let t = &self.times;
        let seen = t.samples.fetch_add(1, Relaxed);
        t.queue.add(queue, seen);
        t.connect.add(connect, seen);
        t.response.add(response, seen);
        t.total.add(total, seen);
        t.queue_max.fetch_max(queue, Relaxed);
        t.connect_max.fetch_max(connect, Relaxed);
        t.response_max.fetch_max(response, Relaxed);
        t.total_max.fetch_max(total, Relaxed);
    }

    /// `clear counters`: the max values, and the h1/h2 columns: HAProxy's
    /// stats modules are "clearable", reset by `clear counters` with or
    /// without `all` (their open-connection gauges stay).
    pub(crate) fn clear_max(&self) {
        self.sess.clear_max();
        self.queue.clear_max();
        self.sess_rate.clear_max();
        self.req_rate.clear_max();
        self.conn_rate.clear_max();
        self.times.clear_max();
        let modules: [&AtomicU64; 10] = [
            &self.h1_total_connections,
            &self.h1_total_streams,
            &self.h1_bytes_in,
            &self.h1_bytes_out,
            &self.h2_headers_rcvd,
            &self.h2_data_rcvd,
            &self.h2_conn_protocol_errors,
            &self.h2_strm_protocol_errors,
            &self.h2_goaway_resp,
            &self.h2_total_connections,
        ];
        for a in modules {
            a.store(0, Relaxed);
        }
    }

    /// `clear counters all`: every cumulative counter, average and max back
    /// to 0. Gauges keep their current value (those sessions still exist).
    pub(crate) fn clear_all(&self) {
        let cum: [&AtomicU64; 27] = [
            &self.stot,
            &self.bin,
            &self.bout,
            &self.dreq,
            &self.dresp,
            &self.ereq,
            &self.econ,
            &self.eresp,
            &self.wretr,
            &self.wredis,
            &self.req_tot,
            &self.cli_abrt,
            &self.srv_abrt,
            &self.lbtot,
            &self.conn_tot,
            &self.dcon,
            &self.dses,
            &self.intercepted,
            &self.comp_in,
            &self.comp_out,
            &self.comp_byp,
            &self.comp_rsp,
            &self.cache_lookups,
            &self.cache_hits,
            &self.connect,
            &self.reuse,
            &self.last_sess,
        ];
        for a in cum.into_iter().chain(self.hrsp.iter()) {
            a.store(0, Relaxed);
        }
        self.times.clear();
        self.clear_max();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn status_classes() {
        let c = Counters::default();
        for s in [101, 200, 204, 302, 404, 503, 99, 600] {
            c.count_status(s);
        }
        let v: Vec<u64> = c.hrsp.iter().map(Counters::get).collect();
        assert_eq!(v, vec![1, 2, 1, 1, 1, 2]);
    }

    #[test]
    fn time_averages_cover_the_last_1024_requests() {
        let c = Counters::default();
        assert_eq!(c.times.averages(), [0; 4]);
        c.record_times(0, 2, 10, 20);
        c.record_times(0, 4, 20, 40);
        assert_eq!(c.times.averages(), [0, 3, 15, 30]);
        assert_eq!(c.times.maxima(), [0, 4, 20, 40]);
        // A long run of 100 ms responses pushes the old samples out.
        for _ in 0..20 * TIME_SAMPLES {
            c.record_times(1, 1, 100, 100);
        }
        let [q, _, r, _] = c.times.averages();
        assert_eq!(q, 1);
        assert!((99..=101).contains(&r), "{r}");
        c.clear_max();
        assert_eq!(c.times.maxima(), [0; 4]);
        c.clear_all();
        assert_eq!(c.times.averages(), [0; 4]);
    }

    #[test]
    fn freq_counts_this_second() {
        let f = FreqCtr::default();
        for _ in 0..5 {
            f.hit();
        }
        assert!(f.rate() >= 1);
        assert!(f.max() >= 1);
    }
}
