//! The `ring` buffers: the last log lines sent to each `ring@<name>`
//! target, as many as its `size` holds (the oldest dropped first, each
//! line counted with HAProxy's overhead so a ring holds what HAProxy's
//! would), read by `show events` and by the forwarders of its servers.
//! Kept by name across reloads, with their lines; `buf0` always exists.
//! The logger thread writes them, never the data plane.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};

use crate::config::ring::RingSection;

/// One ring: its settings and its lines.
pub(crate) struct Ring {
    pub(crate) name: String,
    settings: RwLock<Arc<RingSection>>,
    events: Mutex<Events>,
    /// Lines that could not be stored (longer than the ring).
    dropped: AtomicU64,
    /// Woken at each line written and each reload, for the readers that
    /// wait (forwarders, `show events -w`).
    pub(crate) notify: tokio::sync::Notify,
    /// Bumped when a reload configures the ring again: the forwarders of
    /// an older generation stop.
    generation: AtomicU64,
}

#[derive(Default)]
struct Events {
    lines: VecDeque<Box<[u8]>>,
    /// The bytes the lines take with HAProxy's overhead.
    used: usize,
    /// The number of the oldest line kept (lines are numbered from 0 in
    /// the order written).
    first: u64,
}

/// The bytes HAProxy's ring takes to store a line of `len` bytes: a
/// readers' count, the length as a varint, the line.
fn cost(len: usize) -> usize {
    let mut n = 1;
    if len >= 240 {
        let mut i = (len - 240) >> 4;
        n += 1;
        while i >= 128 {
            i = (i - 128) >> 7;
            n += 1;
        }
    }
    1 + n + len
}

impl Ring {
    fn new(settings: RingSection) -> Ring {
        Ring {
            name: settings.name.clone(),
            settings: RwLock::new(Arc::new(settings)),
            events: Mutex::new(Events::default()),
            dropped: AtomicU64::new(0),
            notify: tokio::sync::Notify::new(),
            generation: AtomicU64::new(0),
        }
    }

    pub(crate) fn settings(&self) -> Arc<RingSection> {
        self.settings
            .read()
            .map(|s| s.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Relaxed)
    }

    fn events(&self) -> std::sync::MutexGuard<'_, Events> {
        self.events.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores a line (without its line feed), dropping the oldest ones it
    /// needs the room of.
    pub(crate) fn write(&self, line: &[u8]) {
        // One byte of the buffer is the tail's readers' count.
        let room = self.settings().size.saturating_sub(1);
        let need = cost(line.len());
        if need > room {
            self.dropped.fetch_add(1, Relaxed);
            return;
        }
        {
            let mut ev = self.events();
            while ev.used + need > room {
                let Some(old) = ev.lines.pop_front() else {
                    break;
                };
                ev.used -= cost(old.len());
                ev.first += 1;
            }
            ev.lines.push_back(line.into());
            ev.used += need;
        }
        self.notify.notify_waiters();
    }

    /// The number the next line written will have.
    pub(crate) fn end(&self) -> u64 {
        let ev = self.events();
        ev.first + ev.lines.len() as u64
    }

    /// The lines from number `from` on (from the oldest kept when those
    /// were dropped), and the number after the last.
    pub(crate) fn read_from(&self, from: u64) -> (Vec<Box<[u8]>>, u64) {
        let ev = self.events();
        let skip = from.saturating_sub(ev.first) as usize;
        let lines = ev.lines.iter().skip(skip).cloned().collect();
        (lines, ev.first + ev.lines.len() as u64)
    }

    /// Drops the lines that no longer fit a smaller size.
    fn shrink(&self, size: usize) {
        let room = size.saturating_sub(1);
        let mut ev = self.events();
        while ev.used > room {
            let Some(old) = ev.lines.pop_front() else {
                break;
            };
            ev.used -= cost(old.len());
            ev.first += 1;
        }
    }
}

static RINGS: RwLock<Vec<Arc<Ring>>> = RwLock::new(Vec::new());

/// Makes the rings of a configuration the process's (`buf0` first, then
/// the sections in order): a ring kept by name keeps its lines, one no
/// longer configured goes. Every ring's generation moves on, so its
/// forwarders are started again with its new servers.
pub(crate) fn configure(sections: &[RingSection]) -> Vec<Arc<Ring>> {
    let mut rings = RINGS.write().unwrap_or_else(|e| e.into_inner());
    let wanted = std::iter::once(RingSection::buf0()).chain(sections.iter().cloned());
    let mut next = Vec::new();
    for s in wanted {
        let ring = match rings.iter().find(|r| r.name == s.name) {
            Some(r) => {
                r.shrink(s.size);
                *r.settings.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(s);
                r.clone()
            }
            None => Arc::new(Ring::new(s)),
        };
        ring.generation.fetch_add(1, Relaxed);
        ring.notify.notify_waiters();
        next.push(ring);
    }
    for old in rings.iter() {
        if !next.iter().any(|r| Arc::ptr_eq(r, old)) {
            old.generation.fetch_add(1, Relaxed);
            old.notify.notify_waiters();
        }
    }
    *rings = next.clone();
    next
}

/// The ring called `name`, once configured.
pub(crate) fn get(name: &str) -> Option<Arc<Ring>> {
    let rings = RINGS.read().unwrap_or_else(|e| e.into_inner());
    rings.iter().find(|r| r.name == name).cloned()
}

/// Every ring, `buf0` first, then the configuration's in order.
pub(crate) fn all() -> Vec<Arc<Ring>> {
    let rings = RINGS.read().unwrap_or_else(|e| e.into_inner());
    if rings.is_empty() {
        drop(rings);
        return configure(&[]);
    }
    rings.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_lines_make_room() {
        let mut s = RingSection::new("t_oldest", &crate::config::ring::RingSection::buf0().loc);
        s.size = 100;
        let r = Ring::new(s);
        // 2 + 40 bytes each: two fit in 99, the third drops the first.
        r.write(&[b'a'; 40]);
        r.write(&[b'b'; 40]);
        assert_eq!(r.read_from(0).0.len(), 2);
        r.write(&[b'c'; 40]);
        let (lines, end) = r.read_from(0);
        assert_eq!(end, 3);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0][0], b'b');
        assert_eq!(r.read_from(2).0.len(), 1);
        r.write(&[b'd'; 200]);
        assert_eq!(r.dropped(), 1);
    }

    #[test]
    fn varint_lengths_as_haproxy_counts_them() {
        assert_eq!(cost(0), 2);
        assert_eq!(cost(239), 241);
        assert_eq!(cost(240), 243);
        assert_eq!(cost(2287), 2290);
        assert_eq!(cost(2288), 2292);
    }
}
