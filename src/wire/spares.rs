//! Each thread's spares of what a message takes and gives back (read
//! buffers, head buffers, a head's field positions), so that serving
//! messages does not go through the allocator.
//!
//! As many are kept as the thread has lately had in use at once, up to
//! [`KEPT_MAX`], and those that went unused for a whole trimming period
//! go back to the allocator ([`Spares::trim`], once a second from each
//! worker's heartbeat). A fixed 32 was too few at 500 connections per
//! worker: most messages then allocated a 16 KiB buffer and freed it, and
//! the heap grew and shrank under the load (page faults in `sysmalloc`, 1.5 %
//! of the CPU time of `wrk -c500` keep-alive).

use std::cell::RefCell;
use std::thread::LocalKey;

/// The most spares of one kind a thread keeps (16 MiB of read buffers).
const KEPT_MAX: usize = 1024;

pub(crate) struct Spares<T> {
    /// The most recently given back last.
    kept: Vec<T>,
    /// The fewest kept since the last trim: that many were not needed in
    /// the whole period.
    low: usize,
}

impl<T> Spares<T> {
    pub(crate) const fn new() -> Self {
        Spares {
            kept: Vec::new(),
            low: 0,
        }
    }

    /// The spare given back last (still in the CPU's cache, likely).
    fn take(&mut self) -> Option<T> {
        let t = self.kept.pop();
        self.low = self.low.min(self.kept.len());
        t
    }

    fn give(&mut self, t: T) {
        if self.kept.len() < KEPT_MAX {
            self.kept.push(t);
        }
    }

    /// Drops the spares no message needed since the last trim, the
    /// oldest first.
    fn trim(&mut self) {
        let unused = self.low.min(self.kept.len());
        self.kept.drain(..unused);
        self.low = self.kept.len();
    }
}

/// A spare from `key`'s, if it has one (none on a thread being torn down).
pub(crate) fn take<T: 'static>(key: &'static LocalKey<RefCell<Spares<T>>>) -> Option<T> {
    key.try_with(|s| s.borrow_mut().take()).ok().flatten()
}

/// Keeps `t` among `key`'s spares (drops it when they are full, or on a
/// thread being torn down).
pub(crate) fn give<T: 'static>(key: &'static LocalKey<RefCell<Spares<T>>>, t: T) {
    let _ = key.try_with(|s| s.borrow_mut().give(t));
}

pub(crate) fn trim<T: 'static>(key: &'static LocalKey<RefCell<Spares<T>>>) {
    let _ = key.try_with(|s| s.borrow_mut().trim());
}

/// Gives the allocator back the calling thread's spares of every kind that
/// went unused since the last call.
pub(crate) fn trim_all() {
    crate::wire::io::trim_spares();
    crate::wire::h1::trim_spares();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spares_unused_for_a_whole_period_go_back() {
        let mut s = Spares::new();
        for n in 0..100 {
            s.give(n);
        }
        s.trim();
        assert_eq!(s.kept.len(), 100, "the first trim only sets the mark");
        // A period in which at most 30 were in use at once.
        let taken: Vec<_> = (0..30).filter_map(|_| s.take()).collect();
        assert_eq!(
            taken,
            (70..100).rev().collect::<Vec<_>>(),
            "last given, first taken"
        );
        taken.into_iter().for_each(|n| s.give(n));
        s.trim();
        assert_eq!(s.kept.len(), 30);
        // The oldest went, the recently used stayed.
        assert_eq!(s.kept, (70..100).rev().collect::<Vec<_>>());
        // A period without any message.
        s.trim();
        assert!(s.kept.is_empty());
    }

    #[test]
    fn spares_are_kept_up_to_the_most() {
        let mut s = Spares::new();
        for n in 0..KEPT_MAX + 10 {
            s.give(n);
        }
        assert_eq!(s.kept.len(), KEPT_MAX);
    }
}
