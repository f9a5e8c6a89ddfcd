//! Small fixed-width bit sets for the search's "linearized pending
//! operations" sets, and a fast deterministic hasher.

use std::fmt::Debug;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// A set of slot numbers of a fixed width chosen before the search starts.
pub(crate) trait Bits: Clone + Eq + Hash + Debug + Send + Sync {
    /// The empty set able to hold slots `0..n`.
    fn empty(n: usize) -> Self;
    /// Whether slot `i` is in the set.
    fn get(&self, i: usize) -> bool;
    /// Adds slot `i`.
    fn set(&mut self, i: usize);
    /// Removes slot `i`.
    fn clear(&mut self, i: usize);
    /// `self & mask`.
    fn and(&self, mask: &Self) -> Self;
    /// `self & !mask`.
    fn and_not(&self, mask: &Self) -> Self;
    /// `self | other`.
    fn or(&self, other: &Self) -> Self;
    /// Whether `self ⊆ other`.
    fn subset_of(&self, other: &Self) -> bool;
    /// Bytes used per set (for the memory estimate).
    fn bytes(&self) -> usize;
}

impl Bits for u128 {
    fn empty(n: usize) -> Self {
        debug_assert!(n <= 128);
        0
    }
    #[inline]
    fn get(&self, i: usize) -> bool {
        self >> i & 1 == 1
    }
    #[inline]
    fn set(&mut self, i: usize) {
        *self |= 1 << i;
    }
    #[inline]
    fn clear(&mut self, i: usize) {
        *self &= !(1 << i);
    }
    #[inline]
    fn and(&self, mask: &Self) -> Self {
        self & mask
    }
    #[inline]
    fn and_not(&self, mask: &Self) -> Self {
        self & !mask
    }
    #[inline]
    fn or(&self, other: &Self) -> Self {
        self | other
    }
    #[inline]
    fn subset_of(&self, other: &Self) -> bool {
        self & !other == 0
    }
    fn bytes(&self) -> usize {
        16
    }
}

impl Bits for Box<[u64]> {
    fn empty(n: usize) -> Self {
        vec![0u64; n.div_ceil(64).max(1)].into_boxed_slice()
    }
    #[inline]
    fn get(&self, i: usize) -> bool {
        self[i / 64] >> (i % 64) & 1 == 1
    }
    #[inline]
    fn set(&mut self, i: usize) {
        self[i / 64] |= 1 << (i % 64);
    }
    #[inline]
    fn clear(&mut self, i: usize) {
        self[i / 64] &= !(1 << (i % 64));
    }
    fn and(&self, mask: &Self) -> Self {
        self.iter().zip(mask.iter()).map(|(a, b)| a & b).collect()
    }
    fn and_not(&self, mask: &Self) -> Self {
        self.iter().zip(mask.iter()).map(|(a, b)| a & !b).collect()
    }
    fn or(&self, other: &Self) -> Self {
        self.iter().zip(other.iter()).map(|(a, b)| a | b).collect()
    }
    fn subset_of(&self, other: &Self) -> bool {
        self.iter().zip(other.iter()).all(|(a, b)| a & !b == 0)
    }
    fn bytes(&self) -> usize {
        16 + 8 * self.len()
    }
}

/// The Fx hash (as in rustc): fast, deterministic, good enough for in-memory
/// tables whose iteration order never reaches the output.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.hash = (self.hash.rotate_left(5) ^ w).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_u128(&mut self, i: u128) {
        self.add(i as u64);
        self.add((i >> 64) as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A `HashMap` with the Fx hasher.
pub(crate) type FxMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FxHasher>>;
