//! The write-ahead log: each mutation's effect (of any service) framed as
//! `[magic: u32][payload length: u32][seq: u64][crc32 of payload: u32]
//! [crc32 of the 20 header bytes before it: u32][payload]` (little-endian),
//! payload the bincode of a [`LogRecord`] `(partition, lsn, effect)`.
//!
//! `seq` numbers the records of the whole log 1, 2, 3... in the order they
//! were appended: a record read at the wrong place (a misdirected write) or
//! after a gap (a lost write) has the wrong `seq`. The header's own CRC makes
//! a record's length trustworthy, so recovery can tell a torn tail (the log
//! ends inside a record whose header is intact, or inside a header: a crash
//! cut the unsynced tail, nothing acknowledged is lost) from corruption (a
//! complete record or header that fails its checks: a bit flip, a misdirected
//! or lost write). A torn tail is cut off; corruption is never replayed,
//! served or cut off: with one replica the log cannot be repaired, and
//! recovery reports the damage instead.
//!
//! The framing and the recovery over copies serve any record type
//! ([`Framed`]): the replicas of a replicated partition frame the records of
//! one step (terms, votes, entries, commit marks) the same way.

use crate::core::bugs::ModelBugs;
use crate::core::env::LogDevice;
pub use crate::partition::LogRecord;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Bytes before the payload.
const HEADER: usize = 24;
/// Marks the start of a record.
const MAGIC: u32 = 0x4F43_574C;
/// How often recovery reads the device again when it finds corruption (a
/// bit flipped on the way from the disk is gone on the next read). Swarm
/// mode flips up to one read in eight: three re-reads all flipped ended a
/// server's service for good on seed 24, nine in a row is out of reach.
const REREADS: usize = 8;

/// A record type the log frames: what a scan checks, besides the frame's
/// own checks, for each record to follow the ones before it.
pub trait Framed: Serialize + DeserializeOwned + Clone {
    /// What a scan keeps of the records read so far to judge the next.
    type Order: Default;
    /// Whether this record may follow the records `order` was told of
    /// (and tells it of this one); why not, if it may not. `from_start` is
    /// false for a fragment cut from the middle of a log, whose first
    /// records follow records not read.
    fn follows(&self, order: &mut Self::Order, from_start: bool) -> Result<(), String>;
}

impl Framed for LogRecord {
    /// Each partition's last LSN: redo needs them in order.
    type Order = std::collections::BTreeMap<u32, u64>;
    fn follows(&self, lsns: &mut Self::Order, from_start: bool) -> Result<(), String> {
        let last = lsns.entry(self.partition).or_insert(if from_start {
            0
        } else {
            self.lsn.saturating_sub(1)
        });
        if self.lsn != *last + 1 {
            return Err(format!(
                "has LSN {} of partition {} where {} belongs",
                self.lsn,
                self.partition,
                *last + 1
            ));
        }
        *last = self.lsn;
        Ok(())
    }
}

/// Frames a record for appending as the log's record number `seq` (1 for the first).
pub fn encode(seq: u64, record: &LogRecord) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(&mut out, seq, record);
    out
}

/// [`encode`] into `out` (cleared first), reusing its memory, for a record
/// of any [`Framed`] type.
pub(crate) fn encode_into<R: Serialize>(out: &mut Vec<u8>, seq: u64, record: &R) {
    out.clear();
    out.extend_from_slice(&[0; HEADER]);
    bincode::serialize_into(&mut *out, record).expect("log records serialise");
    let len = (out.len() - HEADER) as u32;
    let crc = crc32fast::hash(&out[HEADER..]);
    out[..4].copy_from_slice(&MAGIC.to_le_bytes());
    out[4..8].copy_from_slice(&len.to_le_bytes());
    out[8..16].copy_from_slice(&seq.to_le_bytes());
    out[16..20].copy_from_slice(&crc.to_le_bytes());
    let header_crc = crc32fast::hash(&out[..20]);
    out[20..HEADER].copy_from_slice(&header_crc.to_le_bytes());
}

/// How the readable part of a log ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogEnd {
    /// After its last whole record.
    Clean,
    /// Inside a record a crash cut short (never acknowledged): cut it off.
    Torn,
    /// At a record that fails its checks, at this byte offset.
    Corrupt {
        /// Where the bad record starts.
        at: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// What a scan of a log's bytes found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scan<R = LogRecord> {
    /// The records before the end, in order.
    pub records: Vec<R>,
    /// The length of the bytes they fill.
    pub valid: usize,
    /// How the log ends.
    pub end: LogEnd,
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// Reads records from the start of `bytes` until the log ends; with
/// `check_payload_crc` off (the `skip_crc_on_replay` bug) payloads are
/// trusted as long as they decode.
pub(crate) fn scan(bytes: &[u8], check_payload_crc: bool) -> Scan {
    scan_from(bytes, check_payload_crc, true)
}

/// [`scan`] for records of type `R`.
pub(crate) fn scan_as<R: Framed>(bytes: &[u8], check_payload_crc: bool) -> Scan<R> {
    scan_from(bytes, check_payload_crc, true)
}

/// The records of a piece cut from the middle of a log (e.g. what a lying
/// disk lost): checked like [`scan`] except that their `seq` and LSNs need
/// not start at the beginning.
pub fn scan_fragment(bytes: &[u8]) -> Scan {
    scan_from(bytes, true, false)
}

fn scan_from<R: Framed>(bytes: &[u8], check_payload_crc: bool, from_start: bool) -> Scan<R> {
    let mut records = Vec::new();
    let mut order = R::Order::default();
    let mut at = 0;
    let corrupt = |at: usize, reason: String| LogEnd::Corrupt { at, reason };
    let end = loop {
        let rest = bytes.len() - at;
        if rest == 0 {
            break LogEnd::Clean;
        }
        if rest < HEADER {
            break LogEnd::Torn;
        }
        let h = &bytes[at..at + HEADER];
        if u32_at(h, 0) != MAGIC || crc32fast::hash(&h[..20]) != u32_at(h, 20) {
            break corrupt(at, "a record header fails its checksum".into());
        }
        let len = u32_at(h, 4) as usize;
        let seq = u64::from_le_bytes(h[8..16].try_into().expect("8 bytes"));
        // The place before the length: a torn tail is the last record
        // appended, so its intact header has the next seq. A header of
        // another record there (a later record's misdirected write over the
        // last synced one, its payload cut off by the end of the log) is
        // corruption, not a tear: cutting it off as torn would silently drop
        // the acknowledged record it overwrote.
        let expected = records.len() as u64 + 1;
        if from_start && seq != expected {
            break corrupt(
                at,
                format!(
                    "record {seq} where record {expected} belongs (a misdirected or lost write)"
                ),
            );
        }
        let Some(payload) = bytes.get(at + HEADER..at + HEADER + len) else {
            break LogEnd::Torn;
        };
        if check_payload_crc && crc32fast::hash(payload) != u32_at(h, 16) {
            break corrupt(at, format!("record {seq} fails its checksum"));
        }
        let Ok(record) = bincode::deserialize::<R>(payload) else {
            break corrupt(at, format!("record {seq} does not decode"));
        };
        if let Err(why) = record.follows(&mut order, from_start) {
            break corrupt(at, format!("record {seq} {why}"));
        }
        records.push(record);
        at += HEADER + len;
    };
    Scan {
        records,
        valid: at,
        end,
    }
}

/// Decodes every whole, intact record from the start; returns them and the
/// length of the valid prefix (anything after it is torn or corrupt).
pub fn decode_all(bytes: &[u8]) -> (Vec<LogRecord>, usize) {
    let s = scan(bytes, true);
    (s.records, s.valid)
}

/// What recovery found on the log's copies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Recovered<R = LogRecord> {
    /// The records to redo (none to serve from when `damage` is set).
    pub records: Vec<R>,
    /// The `seq` the next appended record gets.
    pub next_seq: u64,
    /// Why the log cannot be trusted: corruption it cannot repair. The
    /// partitions it holds must not serve.
    pub damage: Option<String>,
    /// The copies rewritten from the one recovery kept (none with one copy).
    pub repairs: Vec<Repair>,
}

/// One copy of a mirrored log that recovery rewrote from another: cut to
/// where the two agree, then the records it lacked copied over.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repair {
    /// The copy rewritten (0 for the first, `a`).
    pub copy: usize,
    /// The copy its records were copied from.
    pub from: usize,
    /// The first record copied over (`seq`, from 1).
    pub first: u64,
    /// The last record copied over; below `first` when the copy was only cut.
    pub last: u64,
    /// Whether the sync of the rewritten copy succeeded (when it did not,
    /// the next recovery finds the copy short or torn and repairs it again).
    pub synced: bool,
}

impl Repair {
    /// A copy's letter: `a` for the first, `b` for the second...
    pub fn letter(copy: usize) -> char {
        char::from(b'a' + (copy % 26) as u8)
    }
}

impl std::fmt::Display for Repair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (copy, from) = (Repair::letter(self.copy), Repair::letter(self.from));
        if self.first <= self.last {
            write!(
                f,
                "copy {copy} repaired from copy {from}, records {}..{}",
                self.first, self.last
            )?;
        } else {
            write!(
                f,
                "copy {copy} cut to its first {} records, as copy {from}",
                self.first - 1
            )?;
        }
        if !self.synced {
            write!(f, " (its sync failed)")?;
        }
        Ok(())
    }
}

/// Reads `device` (again, up to [`REREADS`] times, while it looks corrupt: a
/// flip on read is transient) and scans it.
fn read_scan<R: Framed>(device: &dyn LogDevice, check_payload_crc: bool) -> (Vec<u8>, Scan<R>) {
    let mut reads = 0;
    loop {
        let bytes = device.read_all();
        let s = scan_as(&bytes, check_payload_crc);
        reads += 1;
        if !matches!(s.end, LogEnd::Corrupt { .. }) || reads > REREADS {
            return (bytes, s);
        }
    }
}

/// Where each of the first `count` records of a log's valid prefix ends
/// (their headers are intact, so their lengths are trustworthy).
fn record_ends(bytes: &[u8], count: usize) -> Vec<usize> {
    let mut ends = Vec::with_capacity(count);
    let mut at = 0;
    for _ in 0..count {
        at += HEADER + u32_at(bytes, at + 4) as usize;
        ends.push(at);
    }
    ends
}

/// How many times recovery rewrites a copy whose sync fails during a repair.
const REPAIR_TRIES: usize = 4;

/// The identity a repaired record is appended under ([`LogDevice::repair`]):
/// its `seq`, marked apart from the identities of requests.
fn repaired_identity(seq: u64) -> u64 {
    (1 << 63) | seq
}

/// Reads every copy of the log (each again while it looks corrupt, see
/// [`read_scan`]), keeps the longest valid prefix, cuts torn tails, repairs
/// the other copies from it, and returns the records to redo, or the damage
/// when no copy can be trusted.
///
/// The rule, kept this simple on purpose: a reply waits until the sync
/// covering its record succeeded on *every* copy, so an acknowledged record
/// is within every copy that was not corrupted; records past the end of the
/// shortest sound copy were never acknowledged. So if at least one copy ends
/// clean or torn, the longest valid prefix of any copy holds every
/// acknowledged record (the sound copy's are its prefix, and no record past
/// it was acknowledged) and is safe to serve. Only when every copy ends in
/// corruption may an acknowledged record be gone from all of them: that is
/// data loss, reported as damage (the server refuses service). One copy
/// behaves exactly as the single log always did.
///
/// Seeded bugs: `skip_crc_on_replay` trusts payloads without their CRC;
/// `torn_tail_as_end` cuts the log at the first corrupt record as if torn;
/// `repair_skips_checksum` reads the first copy of a mirrored log without
/// its payload CRCs and keeps it whenever it reads as sound, so a flipped
/// record is replayed and copied over the good copy.
pub(crate) fn recover(copies: &[&dyn LogDevice], bugs: &ModelBugs) -> Recovered {
    recover_as(copies, bugs)
}

/// [`recover`] for records of type `R`.
pub(crate) fn recover_as<R: Framed>(copies: &[&dyn LogDevice], bugs: &ModelBugs) -> Recovered<R> {
    let scans: Vec<(Vec<u8>, Scan<R>)> = copies
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let trusted = bugs.repair_skips_checksum && i == 0 && copies.len() > 1;
            read_scan(*d, !bugs.skip_crc_on_replay && !trusted)
        })
        .collect();
    let sound = |s: &Scan<R>| !matches!(s.end, LogEnd::Corrupt { .. });
    let kept = if bugs.repair_skips_checksum && copies.len() > 1 && sound(&scans[0].1) {
        0
    } else {
        // The longest valid prefix; the first such copy on a tie.
        (0..scans.len())
            .rev()
            .max_by_key(|&i| scans[i].1.records.len())
            .unwrap_or(0)
    };
    let damaged = scans.iter().all(|(_, s)| !sound(s)) && !bugs.torn_tail_as_end;
    let records = scans[kept].1.records.clone();
    let next_seq = records.len() as u64 + 1;
    if damaged {
        let what = |(bytes, s): &(Vec<u8>, Scan<R>)| match &s.end {
            LogEnd::Corrupt { at, reason } => {
                format!("corrupt at byte {at} of {}: {reason}", bytes.len())
            }
            _ => unreachable!("every copy is corrupt"),
        };
        let damage = if scans.len() == 1 {
            format!("the log is {}", what(&scans[0]))
        } else {
            let each: Vec<String> = scans
                .iter()
                .enumerate()
                .map(|(i, s)| format!("copy {} is {}", Repair::letter(i), what(s)))
                .collect();
            format!("every copy of the log is corrupt: {}", each.join("; "))
        };
        return Recovered {
            records,
            next_seq,
            damage: Some(damage),
            repairs: Vec::new(),
        };
    }
    if let Some(first) = copies.first() {
        first.recovered(records.len() as u64);
    }
    let (good, s) = &scans[kept];
    let good = &good[..s.valid];
    if s.valid < scans[kept].0.len() {
        copies[kept].truncate(s.valid);
    }
    let ends = record_ends(good, records.len());
    let mut repairs = Vec::new();
    for (i, (bytes, _)) in scans.iter().enumerate() {
        if i == kept || bytes.as_slice() == good {
            continue;
        }
        let same = bytes.iter().zip(good).take_while(|(x, y)| x == y).count();
        // The records the copy holds as the kept one does.
        let agreed = ends.iter().take_while(|&&end| end <= same).count();
        let cut = if agreed == 0 { 0 } else { ends[agreed - 1] };
        if agreed == records.len() {
            // Only a torn or corrupt tail past the kept records: cut it, as
            // a single log's torn tail is cut (no record to copy, no report).
            copies[i].truncate(cut);
            continue;
        }
        let mut synced = false;
        for _ in 0..REPAIR_TRIES {
            copies[i].truncate(cut);
            for seq in agreed..records.len() {
                let start = if seq == 0 { 0 } else { ends[seq - 1] };
                copies[i].repair(repaired_identity(seq as u64 + 1), &good[start..ends[seq]]);
            }
            if copies[i].sync().is_ok() {
                synced = true;
                break;
            }
        }
        repairs.push(Repair {
            copy: i,
            from: kept,
            first: agreed as u64 + 1,
            last: records.len() as u64,
            synced,
        });
    }
    Recovered {
        records,
        next_seq,
        damage: None,
        repairs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::conditions::ETag;
    use crate::partition::Effect;
    use crate::services::store::{self, Item, ItemKey};

    fn record(v: u64) -> LogRecord {
        LogRecord {
            partition: 3,
            lsn: v,
            effect: Effect::Store(store::Effect::ItemWritten {
                key: ItemKey::new("c", "pk", format!("id{v}")),
                item: Item {
                    body: format!("body {v}"),
                    etag: ETag::from_version(v),
                    last_modified: 1000 * v,
                    version: v,
                    metadata: Default::default(),
                },
            }),
        }
    }

    #[test]
    fn encoding_in_place_gives_the_same_frame() {
        let payload = bincode::serialize(&record(4)).expect("serialises");
        let mut frame = MAGIC.to_le_bytes().to_vec();
        frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        frame.extend_from_slice(&9u64.to_le_bytes());
        frame.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        let header_crc = crc32fast::hash(&frame);
        frame.extend_from_slice(&header_crc.to_le_bytes());
        frame.extend_from_slice(&payload);
        let mut out = vec![1, 2, 3];
        encode_into(&mut out, 9, &record(4));
        assert_eq!(out, frame);
        assert_eq!(encode(9, &record(4)), frame);
    }

    #[test]
    fn records_round_trip() {
        let mut bytes = Vec::new();
        for v in 1..=5 {
            bytes.extend(encode(v, &record(v)));
        }
        let (records, valid) = decode_all(&bytes);
        assert_eq!(valid, bytes.len());
        assert_eq!(records, (1..=5).map(record).collect::<Vec<_>>());
    }

    #[test]
    fn every_torn_tail_is_cut_at_the_last_whole_record() {
        let mut bytes = Vec::new();
        for v in 1..=2 {
            bytes.extend(encode(v, &record(v)));
        }
        let whole = bytes.len();
        bytes.extend(encode(3, &record(3)));
        for cut in whole..bytes.len() {
            let (records, valid) = decode_all(&bytes[..cut]);
            assert_eq!(records.len(), 2, "cut at {cut}");
            assert_eq!(valid, whole);
        }
    }

    #[test]
    fn a_corrupt_record_ends_the_valid_prefix() {
        let mut bytes = encode(1, &record(1));
        let first = bytes.len();
        bytes.extend(encode(2, &record(2)));
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        let (records, valid) = decode_all(&bytes);
        assert_eq!((records.len(), valid), (1, first));
    }

    /// A log device in memory, with reads that can be made to flip a bit.
    #[derive(Default)]
    struct Mem {
        bytes: std::sync::Mutex<Vec<u8>>,
        flip_reads: std::sync::Mutex<usize>,
    }

    impl LogDevice for Mem {
        fn append(&self, b: &[u8]) {
            self.bytes.lock().unwrap().extend_from_slice(b);
        }
        fn sync(&self) -> Result<(), crate::core::env::SyncError> {
            Ok(())
        }
        fn read_all(&self) -> Vec<u8> {
            let mut b = self.bytes.lock().unwrap().clone();
            let mut flips = self.flip_reads.lock().unwrap();
            if *flips > 0 {
                *flips -= 1;
                b[HEADER + 2] ^= 4;
            }
            b
        }
        fn truncate(&self, len: usize) {
            self.bytes.lock().unwrap().truncate(len);
        }
    }

    fn log_of(n: u64) -> Mem {
        let m = Mem::default();
        for v in 1..=n {
            m.append(&encode(v, &record(v)));
        }
        m
    }

    #[test]
    fn every_single_bit_flip_in_a_log_is_detected() {
        let m = log_of(3);
        let clean = m.read_all();
        for bit in 0..clean.len() * 8 {
            let mut b = clean.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            let s = scan(&b, true);
            assert!(
                matches!(s.end, LogEnd::Corrupt { .. }),
                "bit {bit}: {:?}",
                s.end
            );
            assert!(s.records.iter().zip(1..).all(|(r, v)| *r == record(v)));
        }
    }

    #[test]
    fn a_misplaced_or_missing_record_is_corruption() {
        let mut b = encode(1, &record(1));
        b.extend(encode(3, &record(3)));
        assert!(matches!(scan(&b, true).end, LogEnd::Corrupt { .. }));
        let mut b = encode(1, &record(1));
        let hole = encode(2, &record(2)).len();
        b.extend(vec![0; hole]);
        b.extend(encode(3, &record(3)));
        assert!(matches!(scan(&b, true).end, LogEnd::Corrupt { .. }));
        let b = encode(1, &record(1)).repeat(2);
        assert!(matches!(scan(&b, true).end, LogEnd::Corrupt { .. }));
    }

    #[test]
    fn a_later_record_written_over_the_last_one_is_corruption_not_a_torn_tail() {
        // Found by `sweep search --swarm` seed 57941: record 18's misdirected
        // write landed on record 17 (synced, acknowledged), its payload cut
        // off by the end of the log, and its own place stayed zeros.
        // Taking that for a torn tail dropped record 17 silently.
        let mut b = encode(1, &record(1));
        let at = b.len();
        b.extend(encode(2, &record(2)));
        let end = b.len();
        let later = encode(3, &record(30_000));
        assert!(later.len() > end - at, "the later record is the longer");
        b[at..end].copy_from_slice(&later[..end - at]);
        let s = scan(&b, true);
        assert!(
            matches!(&s.end, LogEnd::Corrupt { reason, .. } if reason.contains("record 3 where record 2")),
            "{:?}",
            s.end
        );
        // A torn tail of the record that belongs there is still cut off.
        let mut torn = encode(1, &record(1));
        torn.extend(&encode(2, &record(30_000))[..end - at]);
        assert!(matches!(scan(&torn, true).end, LogEnd::Torn));
    }

    #[test]
    fn recovery_reads_again_past_a_transient_flip_and_reports_lasting_damage() {
        let m = log_of(3);
        *m.flip_reads.lock().unwrap() = 1;
        let r = recover(&[&m], &ModelBugs::default());
        assert_eq!((r.records.len(), r.next_seq, r.damage), (3, 4, None));

        let m = log_of(3);
        *m.flip_reads.lock().unwrap() = 100;
        let r = recover(&[&m], &ModelBugs::default());
        assert!(r.damage.is_some());
        assert_eq!(
            m.bytes.lock().unwrap().len(),
            log_of(3).read_all().len(),
            "not cut"
        );
    }

    #[test]
    fn recovery_cuts_a_torn_tail_and_continues_the_sequence() {
        let m = log_of(2);
        let whole = m.read_all().len();
        m.append(&encode(3, &record(3))[..30]);
        let r = recover(&[&m], &ModelBugs::default());
        assert_eq!((r.records.len(), r.next_seq, r.damage), (2, 3, None));
        assert_eq!(m.read_all().len(), whole);
    }

    #[test]
    fn the_replay_bugs_replay_or_drop_what_a_correct_log_refuses() {
        let m = log_of(3);
        let first = encode(1, &record(1)).len();
        m.bytes.lock().unwrap()[first + HEADER + 2] ^= 4;
        let bugs = ModelBugs {
            torn_tail_as_end: true,
            ..ModelBugs::default()
        };
        let r = recover(&[&m], &bugs);
        assert_eq!(
            (r.records.len(), r.damage),
            (1, None),
            "records 2 and 3 dropped"
        );

        let m = log_of(3);
        // The last byte of the first record: its item's version.
        m.bytes.lock().unwrap()[first - 1] ^= 4;
        assert!(recover(&[&m], &ModelBugs::default()).damage.is_some());
        let bugs = ModelBugs {
            skip_crc_on_replay: true,
            ..ModelBugs::default()
        };
        let r = recover(&[&m], &bugs);
        assert_eq!(r.damage, None);
        assert_ne!(r.records[0], record(1), "a flipped record replayed as data");
    }

    /// Two copies of a log of `n` records.
    fn mirrored(n: u64) -> (Mem, Mem) {
        (log_of(n), log_of(n))
    }

    fn bytes_of(m: &Mem) -> Vec<u8> {
        m.bytes.lock().unwrap().clone()
    }

    #[test]
    fn a_flip_on_one_copy_is_repaired_from_the_other() {
        for flipped in 0..2 {
            let (a, b) = mirrored(4);
            let first = encode(1, &record(1)).len();
            let copies = [&a, &b];
            copies[flipped].bytes.lock().unwrap()[first + HEADER + 2] ^= 4;
            let r = recover(&[&a, &b], &ModelBugs::default());
            assert_eq!(r.damage, None);
            assert_eq!(r.records, (1..=4).map(record).collect::<Vec<_>>());
            assert_eq!(r.next_seq, 5);
            assert_eq!(
                r.repairs,
                vec![Repair {
                    copy: flipped,
                    from: 1 - flipped,
                    first: 2,
                    last: 4,
                    synced: true,
                }]
            );
            assert_eq!(bytes_of(&a), bytes_of(&log_of(4)), "copy a whole again");
            assert_eq!(bytes_of(&b), bytes_of(&log_of(4)), "copy b whole again");
        }
        let repair = Repair {
            copy: 1,
            from: 0,
            first: 14,
            last: 20,
            synced: true,
        };
        assert_eq!(
            repair.to_string(),
            "copy b repaired from copy a, records 14..20"
        );
    }

    #[test]
    fn a_misdirected_write_on_one_copy_is_repaired_from_the_other() {
        let (a, b) = mirrored(3);
        // Record 3 landed over record 1 of copy b; its own place stayed zeros.
        let whole = bytes_of(&b);
        let third = encode(3, &record(3));
        let mut damaged = whole.clone();
        let at = whole.len() - third.len();
        damaged[at..].iter_mut().for_each(|x| *x = 0);
        damaged[..third.len()].copy_from_slice(&third);
        *b.bytes.lock().unwrap() = damaged;
        let r = recover(&[&a, &b], &ModelBugs::default());
        assert_eq!((r.records.len(), r.damage.as_deref()), (3, None));
        assert_eq!(r.repairs.len(), 1);
        assert_eq!((r.repairs[0].copy, r.repairs[0].first), (1, 1));
        assert_eq!(bytes_of(&b), whole);
    }

    #[test]
    fn a_short_copy_and_a_copy_corrupt_past_it_are_sound() {
        // A crash cut copy a after record 2 (torn in record 3); copy b holds
        // records 1..3 and a flipped record 4, never acknowledged (a never
        // synced it).
        let a = log_of(2);
        a.append(&encode(3, &record(3))[..30]);
        let b = log_of(4);
        let last = bytes_of(&b).len() - 1;
        b.bytes.lock().unwrap()[last] ^= 4;
        let r = recover(&[&a, &b], &ModelBugs::default());
        assert_eq!(r.damage, None);
        assert_eq!(r.records, (1..=3).map(record).collect::<Vec<_>>());
        assert_eq!(bytes_of(&a), bytes_of(&log_of(3)));
        assert_eq!(bytes_of(&b), bytes_of(&log_of(3)), "b's corrupt tail cut");
        assert_eq!(
            r.repairs,
            vec![Repair {
                copy: 0,
                from: 1,
                first: 3,
                last: 3,
                synced: true,
            }]
        );
    }

    #[test]
    fn every_copy_corrupt_is_damage() {
        let (a, b) = mirrored(3);
        let first = encode(1, &record(1)).len();
        a.bytes.lock().unwrap()[first + HEADER + 2] ^= 4;
        b.bytes.lock().unwrap()[HEADER + 2] ^= 4;
        let (before_a, before_b) = (bytes_of(&a), bytes_of(&b));
        let r = recover(&[&a, &b], &ModelBugs::default());
        let damage = r.damage.expect("data loss reported");
        assert!(damage.starts_with("every copy of the log is corrupt: copy a is corrupt at byte"));
        assert!(damage.contains("; copy b is corrupt at byte 0"), "{damage}");
        assert!(r.repairs.is_empty());
        assert_eq!(
            (bytes_of(&a), bytes_of(&b)),
            (before_a, before_b),
            "nothing cut"
        );
    }

    #[test]
    fn copies_that_agree_are_left_alone_and_a_torn_tail_is_cut_unreported() {
        let (a, b) = mirrored(3);
        b.append(&encode(4, &record(4))[..30]);
        let r = recover(&[&a, &b], &ModelBugs::default());
        assert_eq!((r.records.len(), r.damage, r.repairs), (3, None, vec![]));
        assert_eq!(bytes_of(&b), bytes_of(&a));
    }

    #[test]
    fn one_copy_recovers_as_the_single_log_did() {
        // The same answers, and the same cuts, as with the log alone.
        let m = log_of(3);
        let first = encode(1, &record(1)).len();
        m.bytes.lock().unwrap()[first + HEADER + 2] ^= 4;
        let r = recover(&[&m], &ModelBugs::default());
        assert_eq!(
            r.damage.as_deref(),
            Some(
                format!(
                    "the log is corrupt at byte {first} of {}: record 2 fails its checksum",
                    bytes_of(&m).len()
                )
                .as_str()
            )
        );
        assert_eq!((r.records.len(), r.repairs.len()), (1, 0));
    }

    #[test]
    fn the_repair_bug_keeps_a_flipped_first_copy_and_copies_it_over_the_good_one() {
        let (a, b) = mirrored(3);
        let first = encode(1, &record(1)).len();
        // The last byte of the first record: its item's version.
        a.bytes.lock().unwrap()[first - 1] ^= 4;
        let bugs = ModelBugs {
            repair_skips_checksum: true,
            ..ModelBugs::default()
        };
        let r = recover(&[&a, &b], &bugs);
        assert_eq!(r.damage, None);
        assert_ne!(r.records[0], record(1), "a flipped record replayed as data");
        assert_eq!(bytes_of(&b), bytes_of(&a), "and copied over the good copy");
        // Without the bug the good copy wins and repairs the other.
        let (a, b) = mirrored(3);
        a.bytes.lock().unwrap()[first - 1] ^= 4;
        let r = recover(&[&a, &b], &ModelBugs::default());
        assert_eq!(r.records, (1..=3).map(record).collect::<Vec<_>>());
        assert_eq!(bytes_of(&a), bytes_of(&log_of(3)));
    }
}
