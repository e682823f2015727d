//! Replays the PROXY header fuzzing corpus (`fuzz/corpus/proxy_header/`)
//! through the fuzz harness on stable Rust, then a short deterministic
//! mutation run over the same seeds (`SLUICE_FUZZ_ROUNDS=<n>` for more).

mod support;

use support::fuzz::{mutation_run, rounds};

fn corpus() -> Vec<(String, Vec<u8>)> {
    support::fuzz::corpus("proxy_header")
}

#[test]
fn corpus_replays_without_panic() {
    let seeds = corpus();
    assert!(seeds.len() >= 20, "corpus too small: {}", seeds.len());
    let mut complete = 0;
    for (name, data) in &seeds {
        let r = std::panic::catch_unwind(|| sluice::wire::proxy_proto::exercise(data));
        assert!(r.is_ok(), "panic on fuzz/corpus/proxy_header/{name}");
        if matches!(
            sluice::wire::proxy_proto::parse(data),
            Ok(sluice::wire::proxy_proto::Parsed::Complete { .. })
        ) {
            complete += 1;
        }
    }
    // The seeds cover both outcomes.
    assert!(complete >= 8 && complete < seeds.len(), "{complete}");
}

const INTERESTING: &[&[u8]] = &[
    b"\r\n", b"\r", b"\n", b" ", b"PROXY ", b"TCP4 ", b"TCP6 ", b"UNKNOWN", b":", b"::", b".",
    b"65535", b"65536", b"0", b"\x00", b"\xff", b"\x21", b"\x20", b"\x11", b"\x31",
];

#[test]
fn mutations_of_the_corpus_never_panic() {
    mutation_run(
        &corpus(),
        INTERESTING,
        rounds(5000),
        0x9E37_79B9_7F4A_7C15,
        sluice::wire::proxy_proto::exercise,
    );
}
