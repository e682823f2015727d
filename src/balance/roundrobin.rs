//! Weighted round robin in HAProxy's order (reference §2.12).
//!
//! HAProxy's `roundrobin` behaves like weighted fair queueing: each server
//! is due at its next virtual position `k / weight` (k = picks so far), the
//! earliest due server is picked, ties going to the heavier server, then to
//! the one declared first. That gives `s1 s2 s1 s1` for weights 3:1 and
//! `s2 s1 s2` for 1:2. One period of that order is computed once (exact
//! rational comparisons); picking is then an atomic cursor step, lock-free.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

#[derive(Debug)]
pub struct RoundRobin {
    /// Server indices in serving order over one period (sum of weights).
    schedule: Vec<u32>,
    cursor: AtomicUsize,
}

impl RoundRobin {
    pub fn new(weights: &[u32]) -> Self {
        RoundRobin {
            schedule: schedule(weights),
            cursor: AtomicUsize::new(0),
        }
    }

    /// The next server in order for which `usable` holds, if any. Skipped
    /// entries advance the cursor too, so that the server after an unusable
    /// one does not get its share as well.
    pub fn pick(&self, mut usable: impl FnMut(usize) -> bool) -> Option<usize> {
        let len = self.schedule.len();
        if len == 0 {
            return None;
        }
        let start = self.cursor.fetch_add(1, Relaxed);
        for step in 0..len {
            let idx = self.schedule[(start.wrapping_add(step)) % len] as usize;
            if usable(idx) {
                if step > 0 {
                    self.cursor.fetch_add(step, Relaxed);
                }
                return Some(idx);
            }
        }
        None
    }
}

fn schedule(weights: &[u32]) -> Vec<u32> {
    let total: u64 = weights.iter().map(|&w| w as u64).sum();
    let mut picks = vec![0u64; weights.len()];
    let mut out = Vec::with_capacity(total as usize);
    for _ in 0..total {
        let mut best: Option<usize> = None;
        for (i, &w) in weights.iter().enumerate() {
            if w == 0 {
                continue;
            }
            best = match best {
                None => Some(i),
                Some(b) => {
                    // Compare picks[i]/w with picks[b]/weights[b] exactly.
                    let lhs = picks[i] * weights[b] as u64;
                    let rhs = picks[b] * w as u64;
                    if lhs < rhs || (lhs == rhs && w > weights[b]) {
                        Some(i)
                    } else {
                        Some(b)
                    }
                }
            };
        }
        let Some(b) = best else { break };
        picks[b] += 1;
        out.push(b as u32);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(weights: &[u32], n: usize) -> String {
        let rr = RoundRobin::new(weights);
        (0..n)
            .map(|_| format!("s{}", rr.pick(|_| true).unwrap() + 1))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn matches_haproxy_observed_orders() {
        assert_eq!(names(&[3, 1], 12), "s1 s2 s1 s1 s1 s2 s1 s1 s1 s2 s1 s1");
        assert_eq!(names(&[1, 2], 9), "s2 s1 s2 s2 s1 s2 s2 s1 s2");
        assert_eq!(names(&[1, 1], 4), "s1 s2 s1 s2");
    }

    #[test]
    fn exact_split_and_skips() {
        let rr = RoundRobin::new(&[1, 2, 3]);
        let mut n = [0u32; 3];
        for _ in 0..6000 {
            n[rr.pick(|_| true).unwrap()] += 1;
        }
        assert_eq!(n, [1000, 2000, 3000]);
        let rr = RoundRobin::new(&[1, 1, 1]);
        let mut n = [0u32; 3];
        for _ in 0..600 {
            n[rr.pick(|i| i != 1).unwrap()] += 1;
        }
        assert_eq!(n[1], 0);
        assert!(n[0].abs_diff(n[2]) <= 1, "{n:?}");
        assert_eq!(RoundRobin::new(&[0, 0]).pick(|_| true), None);
    }
}
