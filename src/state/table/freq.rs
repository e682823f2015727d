//! The clock of the tables and their frequency counters: HAProxy's
//! `freq_ctr` over a period, with its arithmetic, so that a rate reads
//! the same for the same events at the same times.
//!
//! A counter counts the events of the current period and keeps the count
//! of the previous one; a reading takes the current count plus the
//! previous one weighted by how much of the previous period the sliding
//! window still covers. Two words hold it: the first packs the start of
//! the current period (a millisecond tick, low half, its lowest bit a lock
//! taken while the period turns) with the current count (high half), the
//! second the previous count. Adding within the period is one
//! compare-and-swap; turning the period takes the lock bit, so that a
//! reader never mixes the counts of two periods.

use std::sync::LazyLock;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::time::{SystemTime, UNIX_EPOCH};

/// The tables' clock: milliseconds, wrapping at 2^32 as HAProxy's
/// `now_ms`, starting from the wall clock (so that it is nowhere near 0,
/// HAProxy's "no date") and moving with the monotonic one: the offset to
/// add to the monotonic clock's milliseconds.
static OFFSET: LazyLock<u64> = LazyLock::new(|| {
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_millis() as u64);
    wall.wrapping_sub(monotonic_ms(libc::CLOCK_MONOTONIC))
});

/// A monotonic clock in milliseconds, read directly: this is on the path
/// of every tracked request, where `Instant`'s arithmetic costs more than
/// the clock itself.
#[inline]
fn monotonic_ms(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given, which lives
    // through the call; the monotonic clocks exist on every Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1000)
        .wrapping_add(ts.tv_nsec as u64 / 1_000_000)
}

/// Now, in the tables' milliseconds on 64 bits (never wrapping: the
/// order of the expiration queue); [`now_ms`] is its low half.
#[inline]
pub(crate) fn now64() -> u64 {
    let now = monotonic_ms(libc::CLOCK_MONOTONIC).wrapping_add(*OFFSET);
    #[cfg(test)]
    let now = now.wrapping_add(u64::from(SKEW.with(std::cell::Cell::get)));
    now
}

/// Now, in the tables' milliseconds.
#[inline]
pub(crate) fn now_ms() -> u32 {
    now64() as u32
}

/// Now to within the kernel's tick (a few milliseconds late at most),
/// cheaper: for the checks HAProxy makes against its loop's `now_ms`
/// (has an entry released by a stream expired meanwhile?).
#[inline]
pub(crate) fn coarse_ms() -> u32 {
    let now = monotonic_ms(libc::CLOCK_MONOTONIC_COARSE).wrapping_add(*OFFSET) as u32;
    #[cfg(test)]
    let now = now.wrapping_add(SKEW.with(std::cell::Cell::get));
    now
}

#[cfg(test)]
thread_local! {
    /// How far a test moved this thread's clock on.
    static SKEW: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Moves this thread's clock `ms` on (tests of expiry and rates).
#[cfg(test)]
pub(crate) fn skip(ms: u32) {
    SKEW.with(|s| s.set(s.get().wrapping_add(ms)));
}

/// HAProxy's `tick_add`: a date `ms` from `now`, never 0 (which means
/// "no date").
pub(crate) fn tick_add(now: u32, ms: u32) -> u32 {
    match now.wrapping_add(ms) {
        0 => 1,
        t => t,
    }
}

/// HAProxy's `tick_remain`: milliseconds from `now` to `date`, 0 once it
/// has passed.
pub(crate) fn tick_remain(now: u32, date: u32) -> u32 {
    if (date.wrapping_sub(now) as i32) <= 0 {
        0
    } else {
        date.wrapping_sub(now)
    }
}

/// Whether `date` has passed at `now` (HAProxy's `tick_is_expired`, for
/// a set date).
pub(crate) fn expired(date: u32, now: u32) -> bool {
    (now.wrapping_sub(date) as i32) >= 0
}

const LOCK: u64 = 1;

fn tick(w: u64) -> u32 {
    w as u32
}

fn curr(w: u64) -> u32 {
    (w >> 32) as u32
}

fn pack(tick: u32, curr: u32) -> u64 {
    (u64::from(curr) << 32) | u64::from(tick)
}

/// Adds `inc` events at `now` to the counter of `words` (two of them),
/// whose period is `period` milliseconds; returns the current period's
/// count.
pub(crate) fn update(words: &[AtomicU64], period: u32, inc: u32, now: u32) -> u32 {
    let (head, prev) = (&words[0], &words[1]);
    let mut w = head.load(Relaxed);
    loop {
        let t = tick(w);
        // `now` was read before the period's start was: a thread that
        // read the clock a little earlier than the one that turned the
        // period counts in the new period (HAProxy reads its clock after
        // the counter, never before it). A start of 0 is no period yet.
        let d = now.wrapping_sub(t);
        if d < period || (t != 0 && (d as i32) < 0) {
            // Still in the period (even while another thread turns it,
            // as HAProxy lets it: no harm).
            let n = curr(w).wrapping_add(inc);
            match head.compare_exchange_weak(w, pack(t, n), Relaxed, Relaxed) {
                Ok(_) => return n,
                Err(x) => w = x,
            }
            continue;
        }
        if t & 1 == 0 {
            match head.compare_exchange_weak(w, w | LOCK, Acquire, Relaxed) {
                Ok(_) => break,
                Err(x) => w = x,
            }
            continue;
        }
        std::hint::spin_loop();
        w = head.load(Relaxed);
    }
    // Ours to turn: the current count becomes the previous one. A thread
    // still in the period by its own clock may add to it meanwhile: the
    // turn is then made again with its events (HAProxy exchanges the
    // count for the same reason).
    let mut t = tick(w).wrapping_add(period);
    let stale = now.wrapping_sub(t) >= period;
    if stale {
        // Two periods or more without an event.
        t = now;
    }
    let mut locked = w | LOCK;
    loop {
        let past = if stale { 0 } else { curr(locked) };
        prev.store(u64::from(past), Release);
        match head.compare_exchange(locked, pack(t & !1, inc), Release, Relaxed) {
            Ok(_) => return inc,
            Err(x) => locked = x,
        }
    }
}

/// HAProxy's `freq_ctr_total`: the events of the sliding window times the
/// period; with the flapping correction at very low rates.
fn total(words: &[AtomicU64], period: u32, now: u32) -> u64 {
    let (head, prev) = (&words[0], &words[1]);
    let (w, past) = loop {
        let w = head.load(Acquire);
        if w & LOCK != 0 {
            std::hint::spin_loop();
            continue;
        }
        let past = prev.load(Acquire);
        if head.load(Relaxed) == w {
            break (w, past as u32);
        }
    };
    let (t, mut cur) = (tick(w), u64::from(curr(w)));
    let mut past = u64::from(past);
    // A `now` read before another thread turned the period is its start.
    let mut remain = (t.wrapping_add(period).wrapping_sub(now) as i32).min(period as i32);
    if remain < 0 {
        // Past the current period: part of the last one may still count.
        remain = remain.wrapping_add(period as i32);
        past = if remain >= 0 { cur } else { 0 };
        cur = 0;
    }
    if cur == 0 && past <= 1 {
        return past * u64::from(period);
    }
    past.wrapping_mul(remain as u32 as u64) + cur * u64::from(period)
}

/// The rate: events per period over the sliding window (HAProxy's
/// `read_freq_ctr_period`).
pub(crate) fn read(words: &[AtomicU64], period: u32, now: u32) -> u32 {
    if period == 0 {
        return 0;
    }
    (total(words, period, now) / u64::from(period)) as u32
}

/// The current period's count (what the `*_inc_gpc*` fetches give when a
/// table has the rate and not the counter).
pub(crate) fn current(words: &[AtomicU64]) -> u32 {
    curr(words[0].load(Relaxed))
}

/// Sets the counter to `value` events in a period starting now, none
/// before (the CLI's `set table`: the rate holds for the period, then
/// fades).
pub(crate) fn set(words: &[AtomicU64], value: u32, now: u32) {
    words[1].store(0, Relaxed);
    words[0].store(pack(now & !1, value), Relaxed);
}

/// The raw state, for a peer: start of the period, current and previous
/// counts.
#[allow(dead_code)] // the peers layer reads and writes raw counters
pub(crate) fn raw(words: &[AtomicU64]) -> (u32, u32, u32) {
    let w = words[0].load(Relaxed);
    (tick(w) & !1, curr(w), words[1].load(Relaxed) as u32)
}

/// Sets the raw state (a peer's update).
#[allow(dead_code)] // the peers layer reads and writes raw counters
pub(crate) fn set_raw(words: &[AtomicU64], (t, cur, past): (u32, u32, u32)) {
    words[1].store(u64::from(past), Relaxed);
    words[0].store(pack(t & !1, cur), Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctr() -> [AtomicU64; 2] {
        [AtomicU64::new(0), AtomicU64::new(0)]
    }

    #[test]
    fn counts_within_the_period() {
        let c = ctr();
        let t0 = 1_000_000;
        for i in 0..5 {
            update(&c, 10_000, 1, t0 + i * 100);
        }
        assert_eq!(read(&c, 10_000, t0 + 500), 5);
        // Half a period into the next one: half of the last one counts.
        assert_eq!(read(&c, 10_000, t0 + 15_000), 2);
        // Two periods later nothing is left.
        assert_eq!(read(&c, 10_000, t0 + 20_001), 0);
    }

    /// A thread that read the clock just before another started the
    /// period counts in it, and reads it whole: nothing is lost.
    #[test]
    fn a_clock_read_before_the_period_began_counts_in_it() {
        let c = ctr();
        let t0 = 3_000_000;
        update(&c, 10_000, 1, t0);
        update(&c, 10_000, 1, t0 - 1);
        update(&c, 10_000, 1, t0 + 1);
        assert_eq!(read(&c, 10_000, t0 - 1), 3);
        assert_eq!(read(&c, 10_000, t0 + 1), 3);
        // A period turned late by the same reasoning keeps its past.
        update(&c, 10_000, 1, t0 + 10_000);
        update(&c, 10_000, 1, t0 + 9_999);
        assert_eq!(read(&c, 10_000, t0 + 10_000), 5);
    }

    /// Threads whose clocks straddle the end of a period lose no event:
    /// those of the old period end in the previous count, the others in
    /// the current one.
    #[test]
    fn concurrent_events_across_a_turn_all_count() {
        let c = std::sync::Arc::new(ctr());
        let t0 = 4_000_000;
        update(&c[..], 1000, 1, t0);
        let threads: Vec<_> = (0..8u32)
            .map(|i| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for n in 0..20_000u32 {
                        update(&c[..], 1000, 1, t0 + 999 + (i + n) % 2);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let (_, cur, past) = raw(&c[..]);
        assert_eq!(cur + past, 1 + 8 * 20_000);
    }

    #[test]
    fn turns_the_period_as_haproxy() {
        // HAProxy 2.6's arithmetic worked by hand: 4 events in [t0,
        // t0+1000), 2 in the next period; at t0+1500 the window covers
        // half of the first: 4*500 + 2*1000 = 4000, /1000 = 4.
        let c = ctr();
        let t0 = 2_000_000;
        for _ in 0..4 {
            update(&c, 1000, 1, t0);
        }
        update(&c, 1000, 1, t0 + 1200);
        update(&c, 1000, 1, t0 + 1300);
        assert_eq!(read(&c, 1000, t0 + 1500), 4);
        // Flapping correction: one event long ago reads as one.
        let c = ctr();
        update(&c, 1000, 1, t0);
        assert_eq!(read(&c, 1000, t0 + 1999), 1);
    }

    #[test]
    fn set_holds_the_value_for_the_period() {
        let c = ctr();
        set(&c, 42, 5_000);
        assert_eq!(read(&c, 1000, 5_500), 42);
        assert_eq!(read(&c, 1000, 6_500), 21);
    }

    #[test]
    fn ticks_wrap() {
        assert_eq!(tick_add(u32::MAX, 1), 1);
        assert_eq!(tick_remain(10, 5), 0);
        assert_eq!(tick_remain(u32::MAX - 1, 3), 5);
        assert!(expired(u32::MAX, 2));
        assert!(!expired(3, u32::MAX));
    }
}
