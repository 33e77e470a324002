//! Maps keyed by stream ID, hashed cheaply.
//!
//! std's `HashMap` hashes with SipHash-1-3, which a `perf` profile of `speedy serve`
//! answering SPDY requests put at about 3% of the server's CPU (each request looks its
//! stream up a few times). A stream ID is one 31-bit integer, so one folded multiply
//! (the 128-bit product's halves XORed) by a per-process random key spreads it over
//! every bit hashbrown reads. A peer chooses its stream IDs, but a session holds at most
//! its concurrent-stream limit of them, so even chosen collisions cost a bounded scan.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// A map from stream ID (`u32` or [`crate::StreamId`]) to `V`.
pub type IdMap<K, V> = HashMap<K, V, IdHash>;

/// The [`BuildHasher`] of an [`IdMap`]: the process's random key.
#[derive(Clone, Copy, Debug)]
pub struct IdHash(u64);

impl Default for IdHash {
    fn default() -> IdHash {
        static KEY: OnceLock<u64> = OnceLock::new();
        IdHash(*KEY.get_or_init(|| {
            std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64) | 1
        }))
    }
}

impl BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(self.0)
    }
}

/// Hashes the integers a stream ID is written as; other input (never an ID's) is
/// folded in eight bytes at a time.
pub struct IdHasher(u64);

impl IdHasher {
    fn mix(&mut self, x: u64) {
        let p = ((self.0 ^ x) as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = (p as u64) ^ ((p >> 64) as u64);
    }
}

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            self.mix(u64::from_le_bytes(b));
        }
    }

    fn write_u32(&mut self, x: u32) {
        self.mix(x as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StreamId;

    #[test]
    fn odd_ids_spread_over_the_low_and_high_bits() {
        let b = IdHash::default();
        let hashes: Vec<u64> = (0..1024u32).map(|k| b.hash_one(2 * k + 1)).collect();
        // hashbrown's bucket index is the low bits, its tag the top seven.
        let low: std::collections::HashSet<u64> = hashes.iter().map(|h| h & 1023).collect();
        let top: std::collections::HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert!(low.len() > 600, "{} of 1024 buckets", low.len());
        assert_eq!(top.len(), 128, "every tag value is used");
        let mut m: IdMap<StreamId, u32> = IdMap::default();
        for k in 0..1000u32 {
            m.insert(StreamId(2 * k + 1), k);
        }
        assert!((0..1000u32).all(|k| m[&StreamId(2 * k + 1)] == k));
    }
}
