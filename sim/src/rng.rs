//! Seeded random streams. Each stream is a ChaCha generator keyed by the run's
//! seed and a stream name, so adding a new stream never shifts another's draws.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The generator for stream `name` of the run with seed `seed`.
pub fn stream(seed: u64, name: &str) -> ChaCha8Rng {
    // FNV-1a of the name: stable across platforms and Rust versions.
    let h = fnv1a(name.as_bytes());
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&h.to_le_bytes());
    ChaCha8Rng::from_seed(key)
}

/// A stable 64-bit FNV-1a hash of bytes (stream names, seeds). Trace hashes
/// use [`TraceHasher`], which streams and takes eight bytes at a time.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The trace hasher: a `std::io::Write` sink over `rustc-hash`'s FxHasher,
/// which takes eight bytes at a time. Not for adversarial input, and it depends
/// on how the bytes are split into writes: one serialiser feeding it the
/// same value gives the same hash, on every machine of the same word size.
#[derive(Clone, Default)]
pub struct TraceHasher(rustc_hash::FxHasher);

impl TraceHasher {
    /// The hash so far.
    pub fn finish(&self) -> u64 {
        std::hash::Hasher::finish(&self.0)
    }
}

// Inlined, and `write_all` taken whole in one `Hasher::write`, as the
// default `write_all` loop does for a sink that takes every byte (and, like
// it, not at all for no bytes: an empty write changes an FxHasher's hash).
// bincode calls these once per field of every history record, and the
// out-of-line calls were most of the trace hash's cost.
impl std::io::Write for TraceHasher {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::hash::Hasher::write(&mut self.0, buf);
        Ok(buf.len())
    }
    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if !buf.is_empty() {
            std::hash::Hasher::write(&mut self.0, buf);
        }
        Ok(())
    }
    #[inline]
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_are_stable_and_independent() {
        let a: u64 = stream(7, "faults").gen();
        assert_eq!(a, stream(7, "faults").gen::<u64>());
        assert_ne!(a, stream(7, "disk").gen::<u64>());
        assert_ne!(a, stream(8, "faults").gen::<u64>());
    }
}
