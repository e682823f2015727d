//! Random numbers for `rand` and `uuid`: a per-thread generator seeded
//! once from the system's source (no lock, no system call per request).

use std::cell::Cell;

thread_local! {
    static STATE: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    let mut b = [0u8; 8];
    // Without the system's source (it does not fail on Linux), the time
    // still differs between threads and runs.
    if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        b = (t.as_nanos() as u64).to_le_bytes();
    }
    u64::from_le_bytes(b)
}

/// SplitMix64: fast, and good enough for load spreading and request ids
/// (not for secrets, as HAProxy's own `rand`).
pub(crate) fn next_u64() -> u64 {
    STATE.with(|s| {
        let x = s.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        s.set(x);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    })
}

/// A version 4 UUID in its usual lowercase text form.
pub(crate) fn uuid4() -> String {
    let (hi, lo) = (next_u64(), next_u64());
    // Version 4 in the 13th digit, variant 10 in the 17th's top bits.
    let hi = (hi & !0xf000) | 0x4000;
    let lo = (lo & !(0xc << 60)) | (0x8 << 60);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuid_has_its_shape() {
        let u = super::uuid4();
        let parts: Vec<&str> = u.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'), "{u}");
        assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "{u}");
        assert_ne!(u, super::uuid4());
    }
}
