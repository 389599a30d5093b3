//! Hash maps keyed by small integers (pids, tids, indices): hashed by [`FxHasher`], one
//! multiply per word as rustc's FxHash, instead of std's SipHash, whose resistance to
//! chosen keys buys nothing for keys the kernel hands out.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;

/// rustc's FxHash over words: `(h.rotate_left(5) ^ word) * K`.
#[derive(Clone, Copy, Debug, Default)]
pub struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

/// `HashMap` keyed by small integers, hashed by [`FxHasher`].
pub type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// `HashSet` of small integers, hashed by [`FxHasher`].
pub type FxHashSet<K> = HashSet<K, BuildHasherDefault<FxHasher>>;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Keys that differ in one bit land apart, and a map of them finds each.
    #[test]
    fn close_keys_hash_apart_and_are_found() {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let b = BuildHasherDefault::<FxHasher>::default();
        assert_ne!(b.hash_one(1u32), b.hash_one(2u32));
        let mut m = FxHashMap::default();
        for pid in 0..10_000u32 {
            m.insert(pid, pid * 2);
        }
        assert!((0..10_000u32).all(|p| m.get(&p) == Some(&(p * 2))));
        let s: FxHashSet<u32> = (0..100).collect();
        assert!(s.contains(&99) && !s.contains(&100));
    }
}
