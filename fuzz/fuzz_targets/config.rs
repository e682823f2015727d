//! Arbitrary bytes through the whole config front end (see
//! `sluice::config::exercise`): lexer, `.if` blocks, parser, validation,
//! stubbed resolution, diagnostics rendering and `--dump`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice::config::exercise(data);
});
