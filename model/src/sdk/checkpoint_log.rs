//! The Cloud Search connector's checkpoints on its own disk: an append-only
//! log of `(name, value)` records, the last whole record of a name winning.
//! A load tells a torn tail (a save a crash cut short, never reported
//! saved) from a corrupt record (saved, then damaged: a bit flipped, a write
//! landed elsewhere, zeros where a lying disk lost one): the connector must
//! report the second, as the checkpoints saved in and after it are lost.

use crate::core::env::LogDevice;
use std::collections::BTreeMap;
use std::rc::Rc;

/// How often a load reads the device again while a record looks corrupt
/// (a bit flipped on the way from the disk is gone on the next read; as
/// the server's log recovery does).
const CHECKPOINT_REREADS: usize = 8;

/// A frame's header: the body's length, the CRC of those 4 bytes, the CRC
/// of the body. The length has a CRC of its own so that a damaged length
/// is told from a torn tail (a frame longer than what is left of the log).
const HEADER: usize = 12;

/// What a load found past the last whole record of the checkpoint log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogEnd {
    /// Nothing: every byte was a whole record.
    Clean,
    /// Part of a frame the log ends in (a save a crash or a failed sync cut
    /// short: never reported saved, so nothing saved is lost).
    Torn,
    /// A whole frame whose length or body does not match its CRC, or does
    /// not decode: a record saved and then damaged. It and every record
    /// after it are lost.
    Corrupt {
        /// Bytes of whole records before it (kept).
        kept: u64,
        /// Bytes from it to the end of the log (cut off).
        cut: u64,
    },
}

/// Why a frame could not be read.
enum Bad {
    /// It runs past the end of `bytes`.
    Torn,
    /// Its length or body does not match its CRC, or it does not decode.
    Corrupt,
}

/// The record of the frame at `at` of `bytes`, and where it ends.
fn frame(bytes: &[u8], at: usize) -> Result<((String, String), usize), Bad> {
    let header = bytes.get(at..at + HEADER).ok_or(Bad::Torn)?;
    let word = |i: usize| u32::from_le_bytes(header[i..i + 4].try_into().expect("4 bytes"));
    if crc32fast::hash(&header[..4]) != word(4) {
        return Err(Bad::Corrupt);
    }
    let end = at + HEADER + word(0) as usize;
    let body = bytes.get(at + HEADER..end).ok_or(Bad::Torn)?;
    if crc32fast::hash(body) != word(8) {
        return Err(Bad::Corrupt);
    }
    let record = bincode::deserialize::<(String, String)>(body).map_err(|_| Bad::Corrupt)?;
    Ok((record, end))
}

/// The `(name, value)` records of `bytes` up to the first that is torn or
/// corrupt, in order, where the last of them ends, and what follows it.
fn scan(bytes: &[u8]) -> (Vec<(String, String)>, usize, LogEnd) {
    let mut records = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match frame(bytes, at) {
            Ok((record, end)) => {
                records.push(record);
                at = end;
            }
            Err(Bad::Torn) => return (records, at, LogEnd::Torn),
            Err(Bad::Corrupt) => {
                let cut = (bytes.len() - at) as u64;
                let kept = at as u64;
                return (records, at, LogEnd::Corrupt { kept, cut });
            }
        }
    }
    (records, at, LogEnd::Clean)
}

/// The `(name, value)` records of the whole, sound frames at the start of
/// `bytes`, in order: what a lying disk lost of a checkpoint log, read back
/// from the bytes its sync dropped (the verdict excuses their loss).
pub fn records_in(bytes: &[u8]) -> Vec<(String, String)> {
    scan(bytes).0
}

/// The checkpoints on the connector's disk.
pub(crate) struct Checkpoints {
    dev: Rc<dyn LogDevice>,
    values: BTreeMap<String, String>,
    /// Where the last whole record ends: a save whose sync failed is cut
    /// back to it, so no torn frame hides the records saved after it.
    end: usize,
}

impl Checkpoints {
    /// Reads every checkpoint from `dev` (again while it looks damaged: a
    /// flip on read is transient), cuts the log after its last whole
    /// record, and says what it cut.
    pub fn load(dev: Rc<dyn LogDevice>) -> (Checkpoints, LogEnd) {
        let mut reads = 0;
        let (values, end, found) = loop {
            let bytes = dev.read_all();
            let (records, end, found) = scan(&bytes);
            let values: BTreeMap<String, String> = records.into_iter().collect();
            reads += 1;
            if found == LogEnd::Clean || reads > CHECKPOINT_REREADS {
                if end < bytes.len() {
                    dev.truncate(end);
                }
                break (values, end, found);
            }
        };
        (Checkpoints { dev, values, end }, found)
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Saves `name = value` durably; false when the sync failed (its frame
    /// is then cut off the device, whatever part of it became durable).
    pub fn save(&mut self, name: &str, value: &str) -> bool {
        let body = bincode::serialize(&(name, value)).expect("strings serialise");
        let len = (body.len() as u32).to_le_bytes();
        let mut frame = Vec::with_capacity(body.len() + HEADER);
        frame.extend_from_slice(&len);
        frame.extend_from_slice(&crc32fast::hash(&len).to_le_bytes());
        frame.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        frame.extend_from_slice(&body);
        self.dev.append(&frame);
        if self.dev.sync().is_err() {
            self.dev.truncate(self.end);
            return false;
        }
        self.end += frame.len();
        self.values.insert(name.to_string(), value.to_string());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::env::SyncError;
    use std::sync::Mutex;

    const CHECKPOINT_FULL: &str = "checkpoint_full";
    const CHECKPOINT_QUEUE: &str = "checkpoint_queue";

    /// A device whose next sync fails (keeping all but the last 3 bytes
    /// appended: a torn frame) and whose next reads flip a bit.
    #[derive(Default)]
    struct Faulty {
        bytes: Mutex<Vec<u8>>,
        fail_sync: Mutex<bool>,
        flipped_reads: Mutex<usize>,
    }

    impl LogDevice for Faulty {
        fn append(&self, bytes: &[u8]) {
            self.bytes.lock().unwrap().extend_from_slice(bytes);
        }
        fn sync(&self) -> Result<(), SyncError> {
            let mut fail = self.fail_sync.lock().unwrap();
            if std::mem::take(&mut *fail) {
                let mut bytes = self.bytes.lock().unwrap();
                let torn = bytes.len() - 3;
                bytes.truncate(torn);
                return Err(SyncError);
            }
            Ok(())
        }
        fn read_all(&self) -> Vec<u8> {
            let mut bytes = self.bytes.lock().unwrap().clone();
            let mut flips = self.flipped_reads.lock().unwrap();
            if *flips > 0 {
                *flips -= 1;
                bytes[14] ^= 1;
            }
            bytes
        }
        fn truncate(&self, len: usize) {
            self.bytes.lock().unwrap().truncate(len);
        }
    }

    #[test]
    fn a_failed_save_hides_no_later_checkpoint_and_a_read_flip_cuts_nothing() {
        let dev = Rc::new(Faulty::default());
        let (mut ck, _) = Checkpoints::load(dev.clone());
        assert!(ck.save(CHECKPOINT_FULL, "d001"));
        *dev.fail_sync.lock().unwrap() = true;
        assert!(!ck.save(CHECKPOINT_FULL, "d002"));
        assert!(ck.save(CHECKPOINT_FULL, "d003"));
        assert!(ck.save(CHECKPOINT_QUEUE, "A"));
        *dev.flipped_reads.lock().unwrap() = 3;
        let (again, end) = Checkpoints::load(dev.clone());
        assert_eq!(end, LogEnd::Clean);
        assert_eq!(again.get(CHECKPOINT_FULL), Some("d003"));
        assert_eq!(again.get(CHECKPOINT_QUEUE), Some("A"));
        // A flip on every read is lasting damage: the log is cut before it,
        // and the load says so.
        *dev.flipped_reads.lock().unwrap() = usize::MAX;
        let total = dev.bytes.lock().unwrap().len() as u64;
        let (cut, end) = Checkpoints::load(dev);
        assert_eq!(cut.get(CHECKPOINT_FULL), None);
        assert_eq!(
            end,
            LogEnd::Corrupt {
                kept: 0,
                cut: total
            }
        );
    }

    #[test]
    fn a_torn_tail_is_told_from_a_damaged_record() {
        let dev = Rc::new(Faulty::default());
        let (mut ck, _) = Checkpoints::load(dev.clone());
        assert!(ck.save(CHECKPOINT_FULL, "d001"));
        let whole = dev.bytes.lock().unwrap().len();
        assert!(ck.save(CHECKPOINT_FULL, "d002"));
        // A crash cut the second frame short: it was never saved.
        dev.truncate(whole + HEADER + 2);
        let (ck, end) = Checkpoints::load(dev.clone());
        assert_eq!((ck.get(CHECKPOINT_FULL), end), (Some("d001"), LogEnd::Torn));
        assert_eq!(dev.bytes.lock().unwrap().len(), whole, "the tail is cut");
        // A damaged length (its own CRC wrong) is not a torn tail, even
        // when it would run past the end of the log.
        let (mut ck, _) = Checkpoints::load(dev.clone());
        assert!(ck.save(CHECKPOINT_FULL, "d002"));
        dev.bytes.lock().unwrap()[whole + 3] ^= 0x80;
        let (ck, end) = Checkpoints::load(dev.clone());
        assert_eq!(ck.get(CHECKPOINT_FULL), Some("d001"));
        assert!(matches!(end, LogEnd::Corrupt { kept, .. } if kept == whole as u64));
        // Zeros where a lying disk lost a record are damage too.
        let (mut ck, _) = Checkpoints::load(dev.clone());
        assert!(ck.save(CHECKPOINT_FULL, "d002"));
        assert!(ck.save(CHECKPOINT_QUEUE, "B"));
        dev.bytes.lock().unwrap()[whole..whole + HEADER]
            .iter_mut()
            .for_each(|b| *b = 0);
        let (ck, end) = Checkpoints::load(dev);
        assert_eq!(ck.get(CHECKPOINT_QUEUE), None);
        assert!(matches!(end, LogEnd::Corrupt { kept, .. } if kept == whole as u64));
    }
}
