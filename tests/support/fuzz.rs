//! What the fuzz-corpus replays share: the seeds of a corpus directory, the
//! number of mutation rounds, and a tiny deterministic generator.

use std::path::Path;

/// The files of `fuzz/corpus/<name>/`, sorted by name.
pub fn corpus(name: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(name);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Mutation rounds: `SLUICE_FUZZ_ROUNDS`, else `default`.
pub fn rounds(default: usize) -> usize {
    std::env::var("SLUICE_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// xorshift64*: a tiny deterministic generator, no dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A deterministic mutation run over `seeds` for a binary protocol:
/// each round takes a seed, applies one to three edits (insert one of
/// `interesting`, delete a few bytes, overwrite a byte, truncate), and
/// runs `exercise` on the result; a panic fails with the round and input.
pub fn mutation_run(
    seeds: &[(String, Vec<u8>)],
    interesting: &[&[u8]],
    rounds: usize,
    seed: u64,
    exercise: impl Fn(&[u8]) + std::panic::RefUnwindSafe,
) {
    let mut rng = Rng(seed);
    for round in 0..rounds {
        let mut data = seeds[rng.below(seeds.len())].1.clone();
        for _ in 0..=rng.below(3) {
            let at = rng.below(data.len() + 1);
            match rng.below(4) {
                0 => {
                    let tok = interesting[rng.below(interesting.len())];
                    data.splice(at..at, tok.iter().copied());
                }
                1 if !data.is_empty() => {
                    let end = (at + rng.below(8)).min(data.len());
                    data.drain(at.min(end)..end);
                }
                2 if at < data.len() => data[at] = rng.next() as u8,
                _ => data.truncate(at),
            }
        }
        let r = std::panic::catch_unwind(|| exercise(&data));
        assert!(r.is_ok(), "panic at round {round} on input {data:?}");
    }
}
