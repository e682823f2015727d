//! HAProxy 2.6's hash functions and its integer avalanche (`full_hash`),
//! bit for bit, so that hash-based balancing sends a key to the same
//! server as HAProxy does and the hash converters give HAProxy's numbers.

pub(crate) fn sdbm(key: &[u8]) -> u32 {
    key.iter().fold(0u32, |h, &c| {
        u32::from(c)
            .wrapping_add(h << 6)
            .wrapping_add(h << 16)
            .wrapping_sub(h)
    })
}

pub(crate) fn djb2(key: &[u8]) -> u32 {
    key.iter().fold(5381u32, |h, &c| {
        (h << 5).wrapping_add(h).wrapping_add(u32::from(c))
    })
}

pub(crate) fn wt6(key: &[u8]) -> u32 {
    let (mut h0, mut h1) = (0xa53c965au32, 0x5ca6953au32);
    let (mut step0, mut step1) = (6u32, 18u32);
    for &b in key {
        let t = u32::from(b);
        h0 = !(h0 ^ t);
        h1 = !(h1.wrapping_add(t));
        let t = h1.rotate_left(step0);
        h1 = h0.rotate_left(step1);
        h0 = t;
        let t = ((h0 >> 16) ^ h1) & 0xffff;
        step0 = t & 0x1f;
        step1 = t >> 11;
    }
    h0 ^ h1
}

/// CRC-32 (IEEE 802.3), as HAProxy's `hash-type crc32` and `crc32`.
pub(crate) fn crc32(key: &[u8]) -> u32 {
    crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(key)
}

/// CRC-32C (Castagnoli), the `crc32c` converter.
pub(crate) fn crc32c(key: &[u8]) -> u32 {
    crc::Crc::<u32>::new(&crc::CRC_32_ISCSI).checksum(key)
}

/// Bob Jenkins' full avalanche, then HAProxy's multiplication by a prime.
pub(crate) fn full_hash(mut a: u32) -> u32 {
    a = a.wrapping_add(0x7ed55d16).wrapping_add(a << 12);
    a = (a ^ 0xc761c23c) ^ (a >> 19);
    a = a.wrapping_add(0x165667b1).wrapping_add(a << 5);
    a = a.wrapping_add(0xd3a2646c) ^ (a << 9);
    a = a.wrapping_add(0xfd7046c5).wrapping_add(a << 3);
    a = (a ^ 0xb55a4f09) ^ (a >> 16);
    a.wrapping_mul(3221225473)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(sdbm(b""), 0);
        assert_eq!(sdbm(b"a"), 97);
        // CRC-32 (IEEE) check value.
        assert_eq!(crc32(b"123456789"), 0xcbf43926);
        assert_eq!(djb2(b""), 5381);
        assert_eq!(djb2(b"a"), 5381 * 33 + 97);
        // Distinct inputs avalanche to distinct outputs.
        assert_ne!(full_hash(1), full_hash(2));
    }
}
