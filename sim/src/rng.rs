//! Seeded random streams. Each stream is a ChaCha generator keyed by the run's
//! seed and a stream name, so adding a new stream never shifts another's draws.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The generator for stream `name` of the run with seed `seed`.
pub fn stream(seed: u64, name: &str) -> ChaCha8Rng {
    // FNV-1a of the name: stable across platforms and Rust versions.
    stream_hashed(seed, fnv1a(name.as_bytes()))
}

/// A stream name hashed as it is built, piece by piece: [`fnv1a`] of the
/// text the pieces spell (`NameHash::new().str("net-").num(3)` hashes as
/// `fnv1a(b"net-3")`), without a `String` or the formatting machinery.
/// Per-datagram and per-request names are built this way: formatting them
/// was a noticeable share of a run's time.
#[derive(Clone, Copy, Debug)]
pub struct NameHash(u64);

impl Default for NameHash {
    fn default() -> Self {
        NameHash::new()
    }
}

impl NameHash {
    /// The hash of the empty name.
    pub fn new() -> NameHash {
        NameHash(FNV_OFFSET)
    }

    /// The name so far, then `s`.
    pub fn str(self, s: &str) -> NameHash {
        self.bytes(s.as_bytes())
    }

    /// The name so far, then the raw `bytes`.
    pub fn bytes(self, bytes: &[u8]) -> NameHash {
        NameHash(fnv1a_from(self.0, bytes))
    }

    /// The name so far, then `n` in decimal, as `{n}` writes it.
    pub fn num(self, n: u64) -> NameHash {
        self.str(itoa::Buffer::new().format(n))
    }

    /// The name so far, then `n` as `{n:016x}` writes it.
    pub fn hex16(self, n: u64) -> NameHash {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut h = self.0;
        for shift in (0..16).rev() {
            let digit = DIGITS[((n >> (shift * 4)) & 0xf) as usize];
            h = fnv1a_from(h, &[digit]);
        }
        NameHash(h)
    }

    /// The name so far, then `addr` as `{addr}` writes it.
    pub fn addr(self, addr: std::net::SocketAddr) -> NameHash {
        match addr {
            std::net::SocketAddr::V4(v4) => {
                let [a, b, c, d] = v4.ip().octets();
                self.num(a.into())
                    .str(".")
                    .num(b.into())
                    .str(".")
                    .num(c.into())
                    .str(".")
                    .num(d.into())
                    .str(":")
                    .num(v4.port().into())
            }
            // Not on a simulated network of ours; the formatter's text.
            std::net::SocketAddr::V6(_) => self.str(&addr.to_string()),
        }
    }

    /// The hash of the whole name.
    pub fn finish(self) -> u64 {
        self.0
    }

    /// [`stream`] of the whole name.
    pub fn stream(self, seed: u64) -> ChaCha8Rng {
        stream_hashed(seed, self.0)
    }
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
    fn a_name_built_piece_by_piece_hashes_as_the_string_it_spells() {
        let to: std::net::SocketAddr = "10.1.0.2:7000".parse().unwrap();
        let v6: std::net::SocketAddr = "[::1]:80".parse().unwrap();
        for (to, op, n) in [(to, 3u64, 12u64), (v6, 0, u64::MAX)] {
            let name = format!("net-client-0#1-{to}-{op}-{n}-{:016x}", n / 7);
            let built = NameHash::new()
                .str("net-client-0#1-")
                .addr(to)
                .str("-")
                .num(op)
                .str("-")
                .num(n)
                .str("-")
                .hex16(n / 7);
            assert_eq!(built.finish(), fnv1a(name.as_bytes()));
            assert_eq!(built.stream(7).gen::<u64>(), stream(7, &name).gen::<u64>());
        }
    }
}
