//! Seeded random streams. Each stream is a ChaCha generator keyed by the run's
//! seed and a stream name, so adding a new stream never shifts another's draws.
//!
//! A run may *branch*: it follows a [`BranchPath`], points `(t, b)` in
//! simulated time, set for the thread that runs it ([`with_branch_path`]).
//! Every [`Stream`] draws as in the plain run until simulated time reaches
//! the first point's `t`; its first draw at or after `t` comes from the
//! stream re-keyed by that point (and every earlier one), so the run is the
//! plain run up to `t` and another one after it. Without a path a stream is
//! the plain ChaCha generator, draw for draw.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::sync::Arc;

/// One point of a branch path: from simulated time `at_ns` on, the run's
/// streams draw from the streams of branch number `branch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BranchPoint {
    /// Simulated ns since the start (above 0: draws made before the
    /// simulation starts, at 0, never branch).
    pub at_ns: u64,
    /// The branch number.
    pub branch: u64,
}

/// A run's branch points, in increasing time.
pub type BranchPath = Vec<BranchPoint>;

/// Why a branch path cannot be followed, in one line; `None` when it can:
/// its times are above 0 and strictly increasing.
pub fn branch_path_problem(path: &[BranchPoint]) -> Option<String> {
    if path.first().is_some_and(|p| p.at_ns == 0) {
        return Some("a branch point's time must be above 0".into());
    }
    path.windows(2)
        .any(|w| w[0].at_ns >= w[1].at_ns)
        .then(|| "a branch path's times must increase".into())
}

/// A branch path as people write it: `1.250000000s#3 > 2.000000000s#0`.
pub fn branch_path_words(path: &[BranchPoint]) -> String {
    path.iter()
        .map(|p| {
            format!(
                "{}.{:09}s#{}",
                p.at_ns / 1_000_000_000,
                p.at_ns % 1_000_000_000,
                p.branch
            )
        })
        .collect::<Vec<_>>()
        .join(" > ")
}

thread_local! {
    /// The branch path of the run on this thread (none: a plain run).
    static BRANCH_PATH: RefCell<Option<Arc<[BranchPoint]>>> = const { RefCell::new(None) };
}

/// Runs `f` with `path` as this thread's branch path (an empty path: a
/// plain run), and puts back the one before, even if `f` panics. Every
/// stream made inside `f` follows it.
pub fn with_branch_path<T>(path: &[BranchPoint], f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<[BranchPoint]>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            BRANCH_PATH.with(|p| *p.borrow_mut() = before);
        }
    }
    let new = (!path.is_empty()).then(|| Arc::from(path));
    let _restore = Restore(BRANCH_PATH.with(|p| std::mem::replace(&mut *p.borrow_mut(), new)));
    f()
}

/// The branch path of the run on this thread (`None`: a plain run), for
/// what acts at a point's time rather than at a draw (the fault player
/// re-times the cuts a branch may re-draw, [`crate::faults::Fault::Isolate`]).
pub fn branch_path() -> Option<Arc<[BranchPoint]>> {
    BRANCH_PATH.with(|p| p.borrow().clone())
}

/// Whether the run on this thread follows a branch path and simulated time
/// has reached its first point. Workload steps that no plain run takes (so
/// plain traces stay as they were) are taken only where this holds: a
/// scenario's branch-only steps, which the explorer's branches reach.
pub fn past_branch_point() -> bool {
    BRANCH_PATH.with(|p| {
        p.borrow()
            .as_ref()
            .and_then(|path| path.first())
            .is_some_and(|first| crate::world::now_ns() >= first.at_ns)
    })
}

/// A seeded random stream: the ChaCha generator of its key, which, in a
/// branched run, switches at its first draw at or after each branch point's
/// time to the generator of its key re-keyed by the path so far.
#[derive(Clone, Debug)]
pub struct Stream {
    rng: ChaCha8Rng,
    /// Where the stream stands on the run's branch path; `None` in a plain
    /// run (the fast path: one test per draw).
    branch: Option<Box<Branching>>,
}

/// A stream's key and the branch points it has not reached yet.
#[derive(Clone, Debug)]
struct Branching {
    key: [u8; 32],
    path: Arc<[BranchPoint]>,
    /// Points already taken (the stream draws from their re-keyed generator).
    taken: usize,
}

impl Stream {
    /// The stream of `key`, on this thread's branch path: made after some
    /// of its points, it starts on their branch.
    pub fn from_key(key: [u8; 32]) -> Stream {
        let Some(path) = BRANCH_PATH.with(|p| p.borrow().clone()) else {
            return Stream {
                rng: ChaCha8Rng::from_seed(key),
                branch: None,
            };
        };
        let now = crate::world::now_ns();
        let taken = path.iter().take_while(|p| p.at_ns <= now).count();
        let rng = ChaCha8Rng::from_seed(rekeyed(key, &path[..taken]));
        Stream {
            rng,
            branch: Some(Box::new(Branching { key, path, taken })),
        }
    }

    /// The key of the plain run's stream (what a derived stream is keyed
    /// by: [`Stream::from_key`] of a key built from it branches too).
    pub fn key(&self) -> [u8; 32] {
        match &self.branch {
            Some(b) => b.key,
            None => self.rng.get_seed(),
        }
    }

    /// Takes the branch points simulated time has reached, if any.
    #[inline]
    fn follow(&mut self) {
        if let Some(b) = &self.branch {
            if b.path
                .get(b.taken)
                .is_some_and(|p| crate::world::now_ns() >= p.at_ns)
            {
                self.switch();
            }
        }
    }

    #[cold]
    fn switch(&mut self) {
        let Some(b) = self.branch.as_mut() else {
            return;
        };
        let now = crate::world::now_ns();
        while b.path.get(b.taken).is_some_and(|p| p.at_ns <= now) {
            b.taken += 1;
        }
        self.rng = ChaCha8Rng::from_seed(rekeyed(b.key, &b.path[..b.taken]));
    }
}

/// `key` re-keyed by the branch points `taken` (itself when there are
/// none). Plain keys have zeros in bytes 16..32; a re-keyed one has the
/// hash of the points there and their count, so no branch of any stream is
/// another stream's plain generator.
fn rekeyed(mut key: [u8; 32], taken: &[BranchPoint]) -> [u8; 32] {
    if taken.is_empty() {
        return key;
    }
    let h = taken.iter().fold(fnv1a(&key[16..24]), |h, p| {
        fnv1a_from(
            fnv1a_from(h, &p.at_ns.to_le_bytes()),
            &p.branch.to_le_bytes(),
        )
    });
    key[16..24].copy_from_slice(&h.to_le_bytes());
    key[24..32].copy_from_slice(&(taken.len() as u64).to_le_bytes());
    key
}

impl RngCore for Stream {
    #[inline]
    fn next_u32(&mut self) -> u32 {
        self.follow();
        self.rng.next_u32()
    }
    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.follow();
        self.rng.next_u64()
    }
    #[inline]
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.follow();
        self.rng.fill_bytes(dest)
    }
    #[inline]
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.follow();
        self.rng.try_fill_bytes(dest)
    }
}

/// The generator for stream `name` of the run with seed `seed`.
pub fn stream(seed: u64, name: &str) -> Stream {
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
    pub fn stream(self, seed: u64) -> Stream {
        stream_hashed(seed, self.0)
    }
}

fn stream_hashed(seed: u64, h: u64) -> Stream {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&h.to_le_bytes());
    Stream::from_key(key)
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
    fn a_plain_stream_is_its_chacha_generator_and_a_branch_keeps_draws_before_its_time() {
        let key = |seed: u64, name: &str| {
            let mut k = [0u8; 32];
            k[..8].copy_from_slice(&seed.to_le_bytes());
            k[8..16].copy_from_slice(&fnv1a(name.as_bytes()).to_le_bytes());
            k
        };
        let mut chacha = ChaCha8Rng::from_seed(key(7, "faults"));
        let mut plain = stream(7, "faults");
        for _ in 0..100 {
            assert_eq!(plain.next_u32(), chacha.next_u32());
            assert_eq!(plain.next_u64(), chacha.next_u64());
        }
        // Outside a simulation it is time 0: before every branch point.
        let path = [BranchPoint {
            at_ns: 1,
            branch: 3,
        }];
        let drawn: Vec<u64> = with_branch_path(&path, || {
            let mut s = stream(7, "faults");
            (0..10).map(|_| s.next_u64()).collect()
        });
        let mut again = stream(7, "faults");
        assert!(drawn.iter().all(|d| *d == again.next_u64()));
        assert_ne!(
            rekeyed(key(7, "faults"), &path),
            rekeyed(
                key(7, "faults"),
                &[BranchPoint {
                    at_ns: 1,
                    branch: 4
                }]
            )
        );
        assert_eq!(branch_path_problem(&path), None);
        assert!(branch_path_problem(&[BranchPoint {
            at_ns: 0,
            branch: 0
        }])
        .is_some());
        assert!(branch_path_problem(&[path[0], path[0]]).is_some());
        assert_eq!(branch_path_words(&path), "0.000000001s#3");
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
