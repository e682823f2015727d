//! Arbitrary bytes through the PROXY protocol header parser (v1 and v2,
//! see `sluice::wire::proxy_proto::exercise`): no panic, every prefix of a
//! complete header is incomplete, and a parsed origin re-encodes to
//! headers that parse back to it.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice::wire::proxy_proto::exercise(data);
});
