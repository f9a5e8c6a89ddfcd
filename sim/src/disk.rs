//! A simulated disk with crash semantics: appended bytes are volatile until
//! synced; on a crash the unsynced tail is lost, or (with disk faults on) a
//! random prefix of it survives, which may tear the last record in two.
//!
//! madsim's own `fs` keeps unsynced writes across a kill, so durability is
//! modelled here instead.
//!
//! With [`StorageFaults`] on, the disk also corrupts: bit flips on write
//! (persisted) and on read (in the copy returned only), misdirected writes
//! (the bytes land at an earlier offset, their own place stays zeros), lost
//! writes that a sync reported done (a lying disk: gone at the next power
//! failure, zeros in the middle of the log or a shorter log at its end), and
//! failing syncs. Every fault is counted; the bytes a lying disk lost are
//! kept for the verdict.
//!
//! Each fault is drawn from a stream of its own, keyed by the disk's seed
//! and the identity of what it hits: a write by its record's identity (the
//! caller's, [`SimDisk::append_as`], or its number among the disk's writes),
//! a sync by one of the writes it makes durable (the one whose draw is
//! least), a read by the power failure it follows and its number since,
//! the kept part of a crash's unsynced tail by that power failure (named by
//! the caller, [`SimDisk::crash`]). Where a
//! fault lands (the bit a read flips, the place a misdirected write lands
//! at) is a record picked by identity, the one whose draw for that fault is
//! least, and a place inside it: so a run that writes fewer records (a
//! shrunk one) leaves the other records their faults, in the same bytes,
//! instead of shifting every later fault by one draw or every landing
//! place by the bytes left out.

use crate::faults::StorageFaults;
use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// What a fault stream is for: a write, a sync or a read.
const WRITE: u64 = 1;
const SYNC: u64 = 2;
const READ: u64 = 3;
const CRASH: u64 = 4;

#[derive(Debug)]
struct DiskState {
    /// Bytes that survive any crash (except the `ghosts` among them).
    durable: Vec<u8>,
    /// Bytes appended since the last sync.
    pending: Vec<u8>,
    syncs: u64,
    torn_tails: u64,
    /// Fault rates.
    faults: StorageFaults,
    /// The faults' random streams' key (the run's seed and the disk's name).
    key: [u8; 32],
    /// Appends so far (a record's identity when its writer names none).
    appends: u64,
    /// Reads since the last power failure.
    reads: u64,
    /// The identity of the last power failure (0 before the first): what a
    /// read's faults are keyed by, with its number since, so that leaving
    /// out an earlier crash or read does not move them.
    power_failure: u64,
    /// How often each record identity was written: a record written again
    /// (after a crash lost it) draws afresh.
    written: BTreeMap<u64, u64>,
    /// The identities of the writes since the last sync.
    pending_ids: Vec<u64>,
    /// Each record's identity and its bytes' place in the readable log
    /// (start, length), in order: what a fault's landing place is picked
    /// from ([`DiskState::landing`]).
    records: Vec<(u64, usize, usize)>,
    /// Ranges of `durable` a lying sync reported durable: lost at the next
    /// power failure.
    ghosts: Vec<(usize, usize)>,
    /// Faults injected, by kind.
    injected: BTreeMap<&'static str, u64>,
    /// What a lying disk lost.
    lost: Vec<LostWrite>,
}

impl Default for DiskState {
    fn default() -> Self {
        DiskState {
            durable: Vec::new(),
            pending: Vec::new(),
            syncs: 0,
            torn_tails: 0,
            faults: StorageFaults::default(),
            key: ChaCha8Rng::seed_from_u64(0).get_seed(),
            appends: 0,
            reads: 0,
            power_failure: 0,
            written: BTreeMap::new(),
            pending_ids: Vec::new(),
            records: Vec::new(),
            ghosts: Vec::new(),
            injected: BTreeMap::new(),
            lost: Vec::new(),
        }
    }
}

impl DiskState {
    /// The stream of the faults of the thing `what` (a write, sync or read,
    /// named by its identity).
    fn stream(&self, what: &[u64]) -> crate::rng::Stream {
        let mut seed = self.key;
        let mut h = crate::rng::fnv1a(&seed);
        for w in what {
            h = crate::rng::fnv1a(&[h.to_le_bytes(), w.to_le_bytes()].concat());
        }
        seed[..8].copy_from_slice(&h.to_le_bytes());
        crate::rng::Stream::from_key(seed)
    }

    /// Draws from `rng` whether a fault of probability `p` happens; no draw
    /// when `p` is 0, so a disk without faults draws nothing.
    fn happens(&mut self, rng: &mut impl Rng, kind: DiskFault) -> bool {
        let p = self.faults.rate(kind);
        let hit = p > 0.0 && rng.gen_bool(p.clamp(0.0, 1.0));
        if hit {
            *self.injected.entry(kind.name()).or_default() += 1;
        }
        hit
    }

    fn len(&self) -> usize {
        self.durable.len() + self.pending.len()
    }

    /// Where fault `what` lands: of the records in the readable log, the
    /// one whose stream (`what` and its identity) draws least, and a place
    /// inside it drawn from that stream, below `places` per byte (8 for a
    /// bit, 1 for a byte). `None` when the log holds no record.
    fn landing(&self, what: &[u64], places: usize) -> Option<usize> {
        let len = self.len();
        let records = self
            .records
            .iter()
            .filter(|(_, start, bytes)| *bytes > 0 && *start < len)
            .map(|(id, start, bytes)| (*id, (*start, (*bytes).min(len - start))));
        let (mut rng, (start, bytes)) = self.least(what, records)?;
        Some(start * places + rng.gen_range(0..bytes * places))
    }

    /// Of `items` (each named by an identity), the one whose stream (`what`
    /// and its identity) draws least, with that stream to draw on: a choice
    /// that leaving out any other item does not change.
    fn least<T>(
        &self,
        what: &[u64],
        items: impl Iterator<Item = (u64, T)>,
    ) -> Option<(crate::rng::Stream, T)> {
        items
            .map(|(id, item)| {
                let mut key = what.to_vec();
                key.push(id);
                let mut rng = self.stream(&key);
                (rng.gen::<u64>(), rng, item)
            })
            .min_by_key(|(draw, ..)| *draw)
            .map(|(_, rng, item)| (rng, item))
    }

    /// Forgets the records' places beyond the readable log (after a sync
    /// that failed, a crash or a truncation cut it).
    fn cut_records(&mut self) {
        let len = self.len();
        self.records.retain(|(_, start, _)| *start < len);
        if let Some(last) = self.records.last_mut() {
            last.2 = last.2.min(len - last.1);
        }
    }

    /// Writes `bytes` at `offset` of the readable log (durable then pending),
    /// as far as the log reaches.
    fn overwrite(&mut self, offset: usize, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            let at = offset + i;
            if at < self.durable.len() {
                self.durable[at] = *b;
            } else if at - self.durable.len() < self.pending.len() {
                let d = self.durable.len();
                self.pending[at - d] = *b;
            }
        }
    }
}

/// Bytes a lying disk reported synced and then lost in a power failure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostWrite {
    /// Where they were in the log.
    pub offset: usize,
    /// The bytes (what the sync was asked to make durable).
    pub bytes: Vec<u8>,
}

/// A kind of disk fault: one rate of [`StorageFaults`], and the name a disk
/// counts it under ([`DiskFault::name`], the rate's field name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DiskFault {
    /// [`StorageFaults::flip_on_write`].
    FlipOnWrite,
    /// [`StorageFaults::flip_on_read`].
    FlipOnRead,
    /// [`StorageFaults::misdirected_write`].
    MisdirectedWrite,
    /// [`StorageFaults::lost_write`].
    LostWrite,
    /// [`StorageFaults::fsync_error`].
    FsyncError,
}

impl DiskFault {
    /// Every kind, in the order the plan lists them.
    pub const ALL: [DiskFault; 5] = [
        DiskFault::FlipOnWrite,
        DiskFault::FlipOnRead,
        DiskFault::MisdirectedWrite,
        DiskFault::LostWrite,
        DiskFault::FsyncError,
    ];

    /// The name the disk counts the kind under, and the plan's field name.
    pub fn name(self) -> &'static str {
        match self {
            DiskFault::FlipOnWrite => "flip_on_write",
            DiskFault::FlipOnRead => "flip_on_read",
            DiskFault::MisdirectedWrite => "misdirected_write",
            DiskFault::LostWrite => "lost_write",
            DiskFault::FsyncError => "fsync_error",
        }
    }

    /// Whether the kind corrupts or loses a written record on the disk (a
    /// flip on read damages only the copy read; a failed sync is reported).
    pub fn corrupts(self) -> bool {
        matches!(
            self,
            DiskFault::FlipOnWrite | DiskFault::MisdirectedWrite | DiskFault::LostWrite
        )
    }

    /// The faults that corrupt or lose a written record among a disk's
    /// counts by name (as the world reports them), with how many of each,
    /// in [`DiskFault::ALL`]'s order; zero counts left out.
    pub fn corrupting_in(counts: &BTreeMap<String, u64>) -> Vec<(DiskFault, u64)> {
        DiskFault::ALL
            .into_iter()
            .filter(|k| k.corrupts())
            .filter_map(|k| counts.get(k.name()).filter(|n| **n > 0).map(|n| (k, *n)))
            .collect()
    }
}

/// A sync the disk reports as failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncFailed;

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

    /// An empty disk that injects `faults`, drawn from streams keyed by
    /// `key` (a seeded stream of the disk's own) and what each one hits.
    pub fn with_faults(faults: StorageFaults, key: crate::rng::Stream) -> Self {
        let disk = SimDisk::new();
        {
            let mut s = disk.lock();
            s.faults = faults;
            s.key = key.key();
        }
        disk
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DiskState> {
        // A poisoned lock means a panic elsewhere already failed the run.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends bytes; they are volatile until [`SimDisk::sync`]. A bit of
    /// them may be flipped, or they may land at an earlier offset. Their
    /// faults are those of the disk's next write by number.
    pub fn append(&self, bytes: &[u8]) {
        let n = self.lock().appends;
        self.append_as(n, bytes)
    }

    /// [`SimDisk::append`] of a record the writer names `identity` (e.g. its
    /// partition and log position): its faults are drawn from the identity
    /// (and how often it was written before), not from its place on the disk.
    pub fn append_as(&self, identity: u64, bytes: &[u8]) {
        let mut s = self.lock();
        s.appends += 1;
        let times = {
            let t = s.written.entry(identity).or_default();
            *t += 1;
            *t
        };
        let id = crate::rng::fnv1a(&[identity.to_le_bytes(), times.to_le_bytes()].concat());
        s.pending_ids.push(id);
        let mut rng = s.stream(&[WRITE, id]);
        let mut bytes = bytes.to_vec();
        if !bytes.is_empty() && s.happens(&mut rng, DiskFault::FlipOnWrite) {
            let bit = rng.gen_range(0..bytes.len() * 8);
            bytes[bit / 8] ^= 1 << (bit % 8);
        }
        if s.len() > 0 && s.happens(&mut rng, DiskFault::MisdirectedWrite) {
            if let Some(offset) = s.landing(&[WRITE, id], 1) {
                s.overwrite(offset, &bytes);
                bytes.iter_mut().for_each(|b| *b = 0);
            }
        }
        let start = s.len();
        s.records.push((id, start, bytes.len()));
        s.pending.extend_from_slice(&bytes);
    }

    /// Makes everything appended so far durable, or says it failed (then a
    /// random prefix of it is durable and the rest is gone). A lying disk
    /// reports success and keeps the bytes only until the next power failure.
    pub fn sync(&self) -> Result<(), SyncFailed> {
        let mut s = self.lock();
        let pending = std::mem::take(&mut s.pending);
        // The sync's fate is drawn from the stream of one of the writes it
        // makes durable, the one whose draw is least: leaving out another of
        // them (a shrunk run writes fewer) does not change it.
        let ids = std::mem::take(&mut s.pending_ids);
        let may_fail =
            s.faults.rate(DiskFault::FsyncError) > 0.0 || s.faults.rate(DiskFault::LostWrite) > 0.0;
        // Nothing to draw on a disk whose syncs never fail or lie.
        let least = may_fail
            .then(|| s.least(&[SYNC], ids.iter().map(|id| (*id, ()))))
            .flatten();
        let mut rng = least.map_or_else(|| s.stream(&[SYNC]), |(rng, ())| rng);
        s.syncs += 1;
        if !pending.is_empty() && s.happens(&mut rng, DiskFault::FsyncError) {
            let keep = rng.gen_range(0..=pending.len());
            s.durable.extend_from_slice(&pending[..keep]);
            s.cut_records();
            return Err(SyncFailed);
        }
        if !pending.is_empty() && s.happens(&mut rng, DiskFault::LostWrite) {
            let at = s.durable.len();
            s.ghosts.push((at, pending.len()));
        }
        s.durable.extend_from_slice(&pending);
        Ok(())
    }

    /// Everything readable now: durable bytes followed by the unsynced ones
    /// (a running process sees its own writes). A bit of the copy may be flipped.
    pub fn read_all(&self) -> Vec<u8> {
        let mut s = self.lock();
        let mut all = s.durable.clone();
        all.extend_from_slice(&s.pending);
        s.reads += 1;
        let what = [READ, s.power_failure, s.reads];
        let mut rng = s.stream(&what);
        if !all.is_empty() && s.happens(&mut rng, DiskFault::FlipOnRead) {
            if let Some(bit) = s.landing(&what, 8) {
                all[bit / 8] ^= 1 << (bit % 8);
            }
        }
        all
    }

    /// Cuts the log to `len` bytes (used after recovery to drop a torn tail).
    pub fn truncate(&self, len: usize) {
        let mut s = self.lock();
        if len <= s.durable.len() {
            s.durable.truncate(len);
            s.pending.clear();
            s.pending_ids.clear();
            s.ghosts.retain(|(at, _)| *at < len);
            if let Some(last) = s.ghosts.last_mut() {
                last.1 = last.1.min(len - last.0);
            }
        } else {
            let keep = len - s.durable.len();
            s.pending.truncate(keep);
        }
        s.cut_records();
    }

    /// A power failure. Without `lose_unsynced` the OS is assumed to have
    /// flushed everything (a process crash); with it, a random prefix of the
    /// unsynced bytes survives, possibly tearing the last record, and what a
    /// lying disk reported synced is lost: zeros where later bytes follow,
    /// cut off at the end of the log. `identity` names the power failure
    /// (e.g. the fault event's time): how much survives, and the faults of
    /// the reads after it, are drawn from it, not from the crashes before.
    pub fn crash(&self, lose_unsynced: bool, identity: u64) {
        let mut s = self.lock();
        let pending = std::mem::take(&mut s.pending);
        s.pending_ids.clear();
        s.power_failure = identity;
        s.reads = 0;
        let keep = if lose_unsynced && !pending.is_empty() {
            s.stream(&[CRASH, identity]).gen_range(0..=pending.len())
        } else {
            pending.len()
        };
        if keep > 0 && keep < pending.len() {
            s.torn_tails += 1;
        }
        s.durable.extend_from_slice(&pending[..keep]);
        if !lose_unsynced {
            s.cut_records();
            return;
        }
        let ghosts = std::mem::take(&mut s.ghosts);
        for (at, len) in ghosts.into_iter().rev() {
            let bytes = s.durable[at..at + len].to_vec();
            if at + len == s.durable.len() {
                s.durable.truncate(at);
            } else {
                s.durable[at..at + len].iter_mut().for_each(|b| *b = 0);
            }
            s.lost.push(LostWrite { offset: at, bytes });
        }
        s.cut_records();
    }

    /// From now on syncs do not fail: the world's heal. A failed sync
    /// crashes a server that handles it right ("fsyncgate"), and crashes end
    /// at the heal, so that the quiet phase lets liveness be judged. The
    /// faults that damage records stay: a deployment repairs those.
    pub fn stop_failing_syncs(&self) {
        self.lock().faults.fsync_error = 0.0;
    }

    /// Disk faults injected so far, by kind (`lost_write` counts lying syncs,
    /// whether or not a power failure followed).
    pub fn injected(&self) -> BTreeMap<&'static str, u64> {
        self.lock().injected.clone()
    }

    /// What a lying disk lost in power failures so far.
    pub fn lost_writes(&self) -> Vec<LostWrite> {
        self.lock().lost.clone()
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

    #[test]
    fn synced_bytes_survive_and_unsynced_may_not() {
        let disk = SimDisk::new();
        disk.append(b"abc");
        disk.sync().unwrap();
        disk.append(b"defgh");
        assert_eq!(disk.read_all(), b"abcdefgh");
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let d = SimDisk::new();
            d.append(b"abc");
            d.sync().unwrap();
            d.append(b"defgh");
            d.crash(true, seed);
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
        disk.crash(false, 1);
        assert_eq!(disk.read_all(), b"xy");
    }

    #[test]
    fn truncate_drops_the_tail() {
        let disk = SimDisk::new();
        disk.append(b"abc");
        disk.sync().unwrap();
        disk.append(b"de");
        disk.truncate(4);
        assert_eq!(disk.read_all(), b"abcd");
        disk.truncate(2);
        assert_eq!(disk.read_all(), b"ab");
    }

    fn faulty(f: StorageFaults) -> SimDisk {
        SimDisk::with_faults(f, crate::rng::stream(7, "disk"))
    }

    #[test]
    fn a_flip_on_write_persists_one_bit() {
        let d = faulty(StorageFaults {
            flip_on_write: 1.0,
            ..StorageFaults::default()
        });
        d.append(&[0u8; 16]);
        d.sync().unwrap();
        let a = d.read_all();
        assert_eq!(a.iter().map(|b| b.count_ones()).sum::<u32>(), 1);
        assert_eq!(d.read_all(), a, "the flip is on the disk");
        assert_eq!(d.injected()["flip_on_write"], 1);
    }

    #[test]
    fn a_flip_on_read_is_in_the_copy_only() {
        let d = faulty(StorageFaults {
            flip_on_read: 0.5,
            ..StorageFaults::default()
        });
        d.append(&[0u8; 16]);
        let reads: Vec<u32> = (0..40)
            .map(|_| d.read_all().iter().map(|b| b.count_ones()).sum())
            .collect();
        assert!(reads.contains(&0) && reads.contains(&1), "{reads:?}");
        assert!(reads.iter().all(|n| *n <= 1));
    }

    /// The record and the bit in it that the first read of a log of six
    /// 8-byte records flips, with record `left_out` not written.
    fn read_flip(left_out: Option<u64>) -> (u64, usize) {
        let d = faulty(StorageFaults {
            flip_on_read: 1.0,
            ..StorageFaults::default()
        });
        let ids: Vec<u64> = (0..6).filter(|i| Some(*i) != left_out).collect();
        for id in &ids {
            d.append_as(*id, &[0u8; 8]);
        }
        let all = d.read_all();
        let bit = (0..all.len() * 8)
            .find(|b| all[b / 8] & (1 << (b % 8)) != 0)
            .expect("a flip");
        (ids[bit / 64], bit % 64)
    }

    #[test]
    fn a_read_flip_stays_in_its_record_when_another_record_is_left_out() {
        let whole = read_flip(None);
        for left_out in 0..6 {
            if left_out != whole.0 {
                assert_eq!(
                    read_flip(Some(left_out)),
                    whole,
                    "record {left_out} left out"
                );
            }
        }
    }

    #[test]
    fn a_misdirected_write_lands_earlier_and_leaves_zeros() {
        let d = faulty(StorageFaults {
            misdirected_write: 1.0,
            ..StorageFaults::default()
        });
        d.append(b"abcd");
        d.append(b"XY");
        let a = d.read_all();
        assert_eq!(&a[4..], &[0, 0]);
        assert!(a.windows(1).any(|w| w == b"X"), "{a:?}");
    }

    #[test]
    fn a_lying_sync_loses_its_bytes_at_a_power_failure() {
        let d = faulty(StorageFaults {
            lost_write: 1.0,
            ..StorageFaults::default()
        });
        d.append(b"abc");
        d.sync().unwrap();
        d.append(b"de");
        d.sync().unwrap();
        assert_eq!(d.read_all(), b"abcde", "readable until the power fails");
        d.crash(true, 1);
        assert_eq!(d.read_all(), b"", "both syncs lied, the log is cut");
        let lost = d.lost_writes();
        assert_eq!(lost.len(), 2);
        assert_eq!(lost[0].bytes, b"de");

        let d = SimDisk::with_faults(
            StorageFaults {
                lost_write: 0.5,
                ..StorageFaults::default()
            },
            crate::rng::stream(3, "disk"),
        );
        for chunk in [b"aa", b"bb", b"cc", b"dd", b"ee", b"ff"] {
            d.append(chunk);
            d.sync().unwrap();
        }
        d.crash(true, 1);
        let after = d.read_all();
        for w in d.lost_writes() {
            if w.offset < after.len() {
                assert!(after[w.offset..w.offset + 2].iter().all(|b| *b == 0));
            }
        }
    }

    #[test]
    fn a_failed_sync_keeps_a_prefix_and_drops_the_rest() {
        let d = faulty(StorageFaults {
            fsync_error: 1.0,
            ..StorageFaults::default()
        });
        d.append(b"abcdef");
        assert_eq!(d.sync(), Err(SyncFailed));
        let a = d.read_all();
        assert!(b"abcdef".starts_with(&a), "{a:?}");
        assert_eq!(d.injected()["fsync_error"], 1);
    }

    #[test]
    fn after_the_heal_syncs_succeed_and_writes_are_still_damaged() {
        let d = faulty(StorageFaults {
            fsync_error: 1.0,
            flip_on_write: 1.0,
            ..StorageFaults::default()
        });
        d.append(b"abc");
        assert_eq!(d.sync(), Err(SyncFailed));
        d.stop_failing_syncs();
        d.append(b"abcdef");
        assert_eq!(d.sync(), Ok(()));
        assert_eq!(d.injected()["fsync_error"], 1);
        assert_eq!(d.injected()["flip_on_write"], 2);
    }

    #[test]
    fn a_disk_without_faults_draws_nothing_and_injects_nothing() {
        let d = SimDisk::with_faults(StorageFaults::default(), crate::rng::stream(1, "disk"));
        d.append(b"abc");
        d.sync().unwrap();
        assert_eq!(d.read_all(), b"abc");
        assert!(d.injected().is_empty());
    }
}
