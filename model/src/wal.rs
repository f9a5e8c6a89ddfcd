//! The write-ahead log: each mutation's effect (of any service) framed as
//! `[payload length: u32 LE][crc32 of payload: u32 LE][payload]`, payload the
//! bincode of a [`LogRecord`] `(partition, lsn, effect)`. Recovery reads records
//! up to the first incomplete or corrupt one (a torn tail) and cuts the device
//! there.

use crate::env::LogDevice;
use crate::partition::Effect;
use serde::{Deserialize, Serialize};

const HEADER: usize = 8;

/// One logged mutation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRecord {
    /// The partition the effect belongs to.
    pub partition: u32,
    /// The effect's log position in its partition: 1, 2, 3... in log order
    /// (see [`crate::partition::Partition::lsn`]).
    pub lsn: u64,
    /// What changed.
    pub effect: Effect,
}

/// Frames a record for appending.
pub fn encode(record: &LogRecord) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(&mut out, record);
    out
}

/// [`encode`] into `out` (cleared first), reusing its memory.
pub fn encode_into(out: &mut Vec<u8>, record: &LogRecord) {
    out.clear();
    out.extend_from_slice(&[0; HEADER]);
    bincode::serialize_into(&mut *out, record).expect("log records serialise");
    let len = (out.len() - HEADER) as u32;
    let crc = crc32fast::hash(&out[HEADER..]);
    out[..4].copy_from_slice(&len.to_le_bytes());
    out[4..HEADER].copy_from_slice(&crc.to_le_bytes());
}

/// Decodes every whole, intact record; returns them and the length of the
/// valid prefix (anything after it is a torn or corrupt tail).
pub fn decode_all(bytes: &[u8]) -> (Vec<LogRecord>, usize) {
    let mut records = Vec::new();
    let mut at = 0;
    while bytes.len() - at >= HEADER {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().expect("4 bytes"));
        let Some(payload) = bytes.get(at + HEADER..at + HEADER + len) else {
            break;
        };
        if crc32fast::hash(payload) != crc {
            break;
        }
        let Ok(record) = bincode::deserialize::<LogRecord>(payload) else {
            break;
        };
        records.push(record);
        at += HEADER + len;
    }
    (records, at)
}

/// Reads the device, drops a torn tail, and returns the records to redo.
pub fn recover(device: &dyn LogDevice) -> Vec<LogRecord> {
    let bytes = device.read_all();
    let (records, valid) = decode_all(&bytes);
    if valid < bytes.len() {
        device.truncate(valid);
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditions::ETag;
    use crate::store::{self, Item, ItemKey};

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
                },
            }),
        }
    }

    #[test]
    fn encoding_in_place_gives_the_same_frame() {
        let payload = bincode::serialize(&record(4)).expect("serialises");
        let mut frame = (payload.len() as u32).to_le_bytes().to_vec();
        frame.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        frame.extend_from_slice(&payload);
        let mut out = vec![1, 2, 3];
        encode_into(&mut out, &record(4));
        assert_eq!(out, frame);
        assert_eq!(encode(&record(4)), frame);
    }

    #[test]
    fn records_round_trip() {
        let mut bytes = Vec::new();
        for v in 1..=5 {
            bytes.extend(encode(&record(v)));
        }
        let (records, valid) = decode_all(&bytes);
        assert_eq!(valid, bytes.len());
        assert_eq!(records, (1..=5).map(record).collect::<Vec<_>>());
    }

    #[test]
    fn every_torn_tail_is_cut_at_the_last_whole_record() {
        let mut bytes = Vec::new();
        for v in 1..=2 {
            bytes.extend(encode(&record(v)));
        }
        let whole = bytes.len();
        bytes.extend(encode(&record(3)));
        for cut in whole..bytes.len() {
            let (records, valid) = decode_all(&bytes[..cut]);
            assert_eq!(records.len(), 2, "cut at {cut}");
            assert_eq!(valid, whole);
        }
    }

    #[test]
    fn a_corrupt_record_ends_recovery() {
        let mut bytes = encode(&record(1));
        let first = bytes.len();
        bytes.extend(encode(&record(2)));
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        let (records, valid) = decode_all(&bytes);
        assert_eq!((records.len(), valid), (1, first));
    }
}
