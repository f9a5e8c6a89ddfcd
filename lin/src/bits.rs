//! Small fixed-width bit sets for the search's "linearized pending
//! operations" sets.

use std::fmt::Debug;
use std::hash::Hash;

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
