//! Arbitrary bytes through the HTTP/1 codec (see `sluice::wire::h1::exercise`):
//! requests and responses parsed, framed, forwarded and chunk-decoded
//! without a panic, and a forwarded head parsing back with its framing.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice::wire::h1::exercise(data);
});
