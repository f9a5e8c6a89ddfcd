//! A simulated disk with crash semantics: appended bytes are volatile until
//! synced; on a crash the unsynced tail is lost, or (with disk faults on) a
//! random prefix of it survives, which may tear the last record in two.
//!
//! madsim's own `fs` keeps unsynced writes across a kill, so durability is
//! modelled here instead.

use rand::Rng;
use std::sync::{Arc, Mutex};

#[derive(Debug, Default)]
struct DiskState {
    /// Bytes that survive any crash.
    durable: Vec<u8>,
    /// Bytes appended since the last sync.
    pending: Vec<u8>,
    syncs: u64,
    torn_tails: u64,
}

/// One node's disk: an append-only byte log shared by the node's incarnations.
#[derive(Clone, Debug, Default)]
pub struct SimDisk {
    state: Arc<Mutex<DiskState>>,
}

impl SimDisk {
    /// An empty disk.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DiskState> {
        // A poisoned lock means a panic elsewhere already failed the run.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends bytes; they are volatile until [`SimDisk::sync`].
    pub fn append(&self, bytes: &[u8]) {
        self.lock().pending.extend_from_slice(bytes);
    }

    /// Makes everything appended so far durable.
    pub fn sync(&self) {
        let mut s = self.lock();
        let pending = std::mem::take(&mut s.pending);
        s.durable.extend_from_slice(&pending);
        s.syncs += 1;
    }

    /// Everything readable now: durable bytes followed by the unsynced ones
    /// (a running process sees its own writes).
    pub fn read_all(&self) -> Vec<u8> {
        let s = self.lock();
        let mut all = s.durable.clone();
        all.extend_from_slice(&s.pending);
        all
    }

    /// Cuts the log to `len` bytes (used after recovery to drop a torn tail).
    pub fn truncate(&self, len: usize) {
        let mut s = self.lock();
        if len <= s.durable.len() {
            s.durable.truncate(len);
            s.pending.clear();
        } else {
            let keep = len - s.durable.len();
            s.pending.truncate(keep);
        }
    }

    /// A power failure. Without `lose_unsynced` the OS is assumed to have
    /// flushed everything (a process crash); with it, a random prefix of the
    /// unsynced bytes survives, possibly tearing the last record.
    pub fn crash(&self, lose_unsynced: bool, rng: &mut impl Rng) {
        let mut s = self.lock();
        let pending = std::mem::take(&mut s.pending);
        let keep = if lose_unsynced && !pending.is_empty() {
            rng.gen_range(0..=pending.len())
        } else {
            pending.len()
        };
        if keep > 0 && keep < pending.len() {
            s.torn_tails += 1;
        }
        s.durable.extend_from_slice(&pending[..keep]);
    }

    /// Number of syncs so far.
    pub fn syncs(&self) -> u64 {
        self.lock().syncs
    }

    /// Number of crashes that left a partial unsynced tail behind.
    pub fn torn_tails(&self) -> u64 {
        self.lock().torn_tails
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn synced_bytes_survive_and_unsynced_may_not() {
        let disk = SimDisk::new();
        disk.append(b"abc");
        disk.sync();
        disk.append(b"defgh");
        assert_eq!(disk.read_all(), b"abcdefgh");
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let d = SimDisk::new();
            d.append(b"abc");
            d.sync();
            d.append(b"defgh");
            d.crash(true, &mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
            let after = d.read_all();
            assert!(after.starts_with(b"abc") && b"abcdefgh".starts_with(&after));
            seen.insert(after.len());
        }
        assert!(seen.contains(&3) && seen.len() > 2, "{seen:?}");
    }

    #[test]
    fn a_process_crash_keeps_unsynced_bytes() {
        let disk = SimDisk::new();
        disk.append(b"xy");
        disk.crash(false, &mut rand_chacha::ChaCha8Rng::seed_from_u64(1));
        assert_eq!(disk.read_all(), b"xy");
    }

    #[test]
    fn truncate_drops_the_tail() {
        let disk = SimDisk::new();
        disk.append(b"abc");
        disk.sync();
        disk.append(b"de");
        disk.truncate(4);
        assert_eq!(disk.read_all(), b"abcd");
        disk.truncate(2);
        assert_eq!(disk.read_all(), b"ab");
    }
}
