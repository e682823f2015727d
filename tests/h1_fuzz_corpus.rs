//! Replays the HTTP/1 codec fuzzing corpus (`fuzz/corpus/h1/`)
//! through the fuzz harness on stable Rust, then a short deterministic
//! mutation run over the same seeds (`SLUICE_FUZZ_ROUNDS=<n>` for more).

mod support;

use support::fuzz::{mutation_run, rounds};

fn corpus() -> Vec<(String, Vec<u8>)> {
    support::fuzz::corpus("h1")
}

#[test]
fn corpus_replays_without_panic() {
    let seeds = corpus();
    assert!(seeds.len() >= 30, "corpus too small: {}", seeds.len());
    let mut heads = 0;
    for (name, data) in &seeds {
        let r = std::panic::catch_unwind(|| sluice::wire::h1::exercise(data));
        assert!(r.is_ok(), "panic on fuzz/corpus/h1/{name}");
        if sluice::wire::h1::head_end(data).is_some() {
            heads += 1;
        }
    }
    // The seeds cover complete heads and bare chunk streams.
    assert!(heads >= 30 && heads < seeds.len(), "{heads}");
}

const INTERESTING: &[&[u8]] = &[
    b"\r\n",
    b"\r",
    b"\n",
    b" ",
    b"\t",
    b":",
    b",",
    b";",
    b"\x00",
    b"\xff",
    b"0",
    b"f",
    b"chunked",
    b"Transfer-Encoding: ",
    b"Content-Length: ",
    b"Connection: ",
    b"close",
    b"\r\n\r\n",
    b"HTTP/1.1",
    b"HTTP/1.0",
    b"18446744073709551616",
];

#[test]
fn mutations_of_the_corpus_never_panic() {
    mutation_run(
        &corpus(),
        INTERESTING,
        rounds(20_000),
        0x9E37_79B9_7F4A_7C15,
        sluice::wire::h1::exercise,
    );
}
