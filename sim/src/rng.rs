//! Seeded random streams. Each stream is a ChaCha generator keyed by the run's
//! seed and a stream name, so adding a new stream never shifts another's draws.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The generator for stream `name` of the run with seed `seed`.
pub fn stream(seed: u64, name: &str) -> ChaCha8Rng {
    // FNV-1a of the name: stable across platforms and Rust versions.
    stream_hashed(seed, fnv1a(name.as_bytes()))
}

/// [`stream`] named by the text `name` formats to, hashed as it is written:
/// the same generator as `stream(seed, &format!(..))`, without the `String`
/// (per-datagram names were a noticeable share of a run's allocations).
pub fn stream_fmt(seed: u64, name: std::fmt::Arguments<'_>) -> ChaCha8Rng {
    stream_hashed(seed, fnv1a_fmt(name))
}

/// [`fnv1a`] of the text `args` formats to, folded as the pieces arrive
/// (FNV-1a is byte-serial, so how the text is split does not matter).
pub fn fnv1a_fmt(args: std::fmt::Arguments<'_>) -> u64 {
    struct Fold(u64);
    impl std::fmt::Write for Fold {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 = fnv1a_from(self.0, s.as_bytes());
            Ok(())
        }
    }
    let mut sink = Fold(FNV_OFFSET);
    // Writing to `Fold` cannot fail.
    let _ = std::fmt::write(&mut sink, args);
    sink.0
}

fn stream_hashed(seed: u64, h: u64) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&h.to_le_bytes());
    ChaCha8Rng::from_seed(key)
}

/// A stable 64-bit FNV-1a hash of bytes (stream names, seeds). Trace hashes
/// use [`TraceHasher`], which streams and takes eight bytes at a time.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_from(FNV_OFFSET, bytes)
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a continued from `h` over `bytes`.
fn fnv1a_from(h: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(h, |h, b| {
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

    #[test]
    fn a_formatted_name_is_the_string_it_formats_to() {
        let (to, n) = ("10.1.0.2:7000", 12);
        let name = format!("net-client-0#1-{to}-{}-{n}", 3);
        assert_eq!(
            fnv1a_fmt(format_args!("net-client-0#1-{to}-{}-{n}", 3)),
            fnv1a(name.as_bytes())
        );
        assert_eq!(
            stream_fmt(7, format_args!("net-client-0#1-{to}-{}-{n}", 3)).gen::<u64>(),
            stream(7, &name).gen::<u64>()
        );
    }
}
