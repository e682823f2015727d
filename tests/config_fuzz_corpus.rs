//! Replays the fuzzing corpus (`fuzz/corpus/config/`) through the fuzz
//! harness on stable Rust, so CI catches a panic the fuzzer once found;
//! then a short deterministic mutation run over the same seeds.

mod support;

use support::fuzz::{Rng, rounds};

fn corpus() -> Vec<(String, Vec<u8>)> {
    support::fuzz::corpus("config")
}

#[test]
fn corpus_replays_without_panic() {
    let seeds = corpus();
    assert!(seeds.len() >= 30, "corpus too small: {}", seeds.len());
    for (name, data) in &seeds {
        let r = std::panic::catch_unwind(|| sluice::config::exercise(data));
        assert!(r.is_ok(), "panic on fuzz/corpus/config/{name}");
    }
}

/// Bytes that matter to the config language.
const INTERESTING: &[&[u8]] = &[
    b"\"",
    b"'",
    b"\\",
    b"$",
    b"${",
    b"}",
    b"[*]",
    b"#",
    b" ",
    b"\n",
    b"\0",
    b"\r",
    b"\\x",
    b".if ",
    b".elif ",
    b".else",
    b".endif",
    b"(",
    b")",
    b"&&",
    b"||",
    b"!",
    b"defaults ",
    b"frontend ",
    b"backend ",
    b"listen ",
    b" from ",
    b"default-server ",
    b"server s ",
    b"bind ",
    b":",
    b"65536",
    b"0",
    b"-",
    b"{",
    b"acl ",
    b" if ",
    b"use_backend ",
    b"\xff",
    b"\xc3\xa9",
];

fn mutate(rng: &mut Rng, data: &mut Vec<u8>, seeds: &[(String, Vec<u8>)]) {
    for _ in 0..=rng.below(4) {
        let at = rng.below(data.len() + 1);
        match rng.below(5) {
            0 => {
                let tok = INTERESTING[rng.below(INTERESTING.len())];
                data.splice(at..at, tok.iter().copied());
            }
            1 if !data.is_empty() => {
                let end = (at + rng.below(16)).min(data.len());
                data.drain(at.min(end)..end);
            }
            2 if at < data.len() => data[at] = rng.next() as u8,
            3 => {
                let other = &seeds[rng.below(seeds.len())].1;
                let s = rng.below(other.len() + 1);
                let e = (s + rng.below(200)).min(other.len());
                data.splice(at..at, other[s..e].iter().copied());
            }
            _ => {
                if at < data.len() {
                    let line: Vec<u8> = data[at..]
                        .iter()
                        .take_while(|&&b| b != b'\n')
                        .copied()
                        .collect();
                    data.splice(at..at, line);
                }
            }
        }
    }
}

#[test]
fn mutations_of_the_corpus_never_panic() {
    let seeds = corpus();
    let rounds = rounds(400);
    let mut rng = Rng(0x5EED_CAFE_F00D_u64);
    for round in 0..rounds {
        let mut data = seeds[rng.below(seeds.len())].1.clone();
        mutate(&mut rng, &mut data, &seeds);
        let r = std::panic::catch_unwind(|| sluice::config::exercise(&data));
        assert!(
            r.is_ok(),
            "panic at round {round} on input {:?}",
            String::from_utf8_lossy(&data)
        );
    }
}
