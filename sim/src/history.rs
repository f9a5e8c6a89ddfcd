//! Histories: what each client asked, when, and what it saw, with every
//! attempt the client's SDK made; plus the world's events. Written as JSON
//! (`{"version":1, "ops":[...], "events":[...]}`) and hashed for determinism
//! checks.

use crate::world::WorldEvent;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// The history format version written in every file.
pub const HISTORY_VERSION: u32 = 1;

/// How one attempt of an operation ended, as the client saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptResult {
    /// The server answered with this status.
    Status {
        /// HTTP status.
        status: u16,
        /// The server's `x-ms-retry-after-ms`, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
    /// No answer within the request timeout.
    Timeout,
}

/// One attempt (one request on the wire) of a logical operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// When the request was sent (simulated ns).
    pub sent_ns: u64,
    /// The delay the SDK inserted before this attempt (0 for the first).
    pub waited_ns: u64,
    /// How it ended.
    pub result: AttemptResult,
}

/// One client operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpRecord<C, R> {
    /// Unique id, in invocation order.
    pub id: u64,
    /// The client (node index) that issued it.
    pub client: usize,
    /// The key it touches (the unit the linearizability checker splits on).
    pub key: String,
    /// What was asked.
    pub call: C,
    /// Invocation time, simulated ns.
    pub invoke_ns: u64,
    /// Return time; `None` when the outcome is unknown.
    pub return_ns: Option<u64>,
    /// What was seen; `None` when the outcome is unknown.
    pub result: Option<R>,
    /// Every attempt the SDK made, in order.
    #[serde(default)]
    pub attempts: Vec<Attempt>,
}

/// A whole history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct History<C, R> {
    /// Always [`HISTORY_VERSION`].
    pub version: u32,
    /// Operations, by id.
    pub ops: Vec<OpRecord<C, R>>,
    /// World events (faults, heal, end).
    #[serde(default)]
    pub events: Vec<WorldEvent>,
}

impl<C: Serialize, R: Serialize> History<C, R> {
    /// The history as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("history types serialise")
    }

    /// A stable hash of the whole history: two runs of one seed must agree.
    /// It hashes the history's serde structure directly (see `trace`), which
    /// costs far less than writing and hashing its JSON.
    pub fn trace_hash(&self) -> u64 {
        trace::hash(self)
    }
}

/// Collects operation records from the clients of one run.
#[derive(Debug)]
pub struct Recorder<C, R> {
    ops: Arc<Mutex<Vec<OpRecord<C, R>>>>,
}

impl<C, R> Clone for Recorder<C, R> {
    fn clone(&self) -> Self {
        Recorder {
            ops: self.ops.clone(),
        }
    }
}

impl<C, R> Default for Recorder<C, R> {
    fn default() -> Self {
        Recorder {
            ops: Arc::new(Mutex::new(Vec::new())),
        }
    }
}

impl<C: Clone, R: Clone> Recorder<C, R> {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty recorder with room for `ops` operations (no regrowth of a
    /// large vector while the clients run).
    pub fn with_capacity(ops: usize) -> Self {
        Recorder {
            ops: Arc::new(Mutex::new(Vec::with_capacity(ops))),
        }
    }

    /// Adds a finished (or unknown-outcome) operation; its id is assigned here
    /// later, by [`Recorder::finish`], in invocation order.
    pub fn push(&self, op: OpRecord<C, R>) {
        self.ops.lock().unwrap_or_else(|e| e.into_inner()).push(op);
    }

    /// The history: operations sorted by invocation time (then client), ids
    /// renumbered in that order.
    pub fn finish(&self, events: Vec<WorldEvent>) -> History<C, R> {
        let ops = self.ops.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Self::history(ops, events)
    }

    /// Like [`Recorder::finish`], but takes the operations out of the
    /// recorder (and every clone of it) instead of copying them: for the end
    /// of a run, when no client records any more.
    pub fn take_history(&self, events: Vec<WorldEvent>) -> History<C, R> {
        let ops = std::mem::take(&mut *self.ops.lock().unwrap_or_else(|e| e.into_inner()));
        Self::history(ops, events)
    }

    fn history(mut ops: Vec<OpRecord<C, R>>, events: Vec<WorldEvent>) -> History<C, R> {
        // Sorted by key and arrival (a stable sort) through a small index,
        // then permuted in place: records are large, and a second vector of
        // them would be fresh memory (page faults) on every run.
        let mut order: Vec<(u64, usize, usize)> = ops
            .iter()
            .enumerate()
            .map(|(i, o)| (o.invoke_ns, o.client, i))
            .collect();
        order.sort_unstable();
        // Position `j` receives the record now at `order[j].2`: follow each cycle.
        let mut done = vec![false; ops.len()];
        for start in 0..ops.len() {
            let mut at = start;
            while !done[at] {
                done[at] = true;
                let from = order[at].2;
                if from == start {
                    break;
                }
                ops.swap(at, from);
                at = from;
            }
        }
        for (i, op) in ops.iter_mut().enumerate() {
            op.id = i as u64;
        }
        History {
            version: HISTORY_VERSION,
            ops,
            events,
        }
    }
}

/// The trace hash: a [`serde::Serializer`] that mixes a value's structure
/// into a 64-bit hash word by word, without building any text. Stable across
/// platforms (integers as little-endian words, strings as their length and
/// bytes, struct fields with their names so that skipped fields are told
/// apart, enum variants by index, sequences and maps by length).
mod trace {
    use serde::ser::{self, Serialize};
    use std::fmt;

    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    /// Stands for a field left out (`skip_serializing_if`), so that the
    /// fields after it keep their places.
    const SKIPPED: u64 = 0x5ced_5ced_5ced_5ced;

    /// Hashes `value`.
    pub fn hash<T: Serialize + ?Sized>(value: &T) -> u64 {
        let mut h = Hasher(0x243f_6a88_85a3_08d3);
        let Ok(()) = value.serialize(&mut h);
        // splitmix64's finaliser.
        let mut z = h.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    struct Hasher(u64);

    /// Hashing cannot fail.
    #[derive(Debug)]
    pub enum Never {}

    impl fmt::Display for Never {
        fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
            match *self {}
        }
    }
    impl std::error::Error for Never {}
    impl ser::Error for Never {
        fn custom<T: fmt::Display>(msg: T) -> Self {
            panic!("trace hash: {msg}")
        }
    }

    impl Hasher {
        fn word(&mut self, w: u64) {
            self.0 = (self.0.rotate_left(26) ^ w).wrapping_mul(K);
        }
        fn bytes(&mut self, b: &[u8]) {
            self.word(b.len() as u64);
            let mut chunks = b.chunks_exact(8);
            for c in &mut chunks {
                self.word(u64::from_le_bytes(c.try_into().expect("8 bytes")));
            }
            let rest = chunks.remainder();
            if !rest.is_empty() {
                let mut last = [0u8; 8];
                last[..rest.len()].copy_from_slice(rest);
                self.word(u64::from_le_bytes(last));
            }
        }
    }

    type R = Result<(), Never>;

    impl ser::Serializer for &mut Hasher {
        type Ok = ();
        type Error = Never;
        type SerializeSeq = Self;
        type SerializeTuple = Self;
        type SerializeTupleStruct = Self;
        type SerializeTupleVariant = Self;
        type SerializeMap = Self;
        type SerializeStruct = Self;
        type SerializeStructVariant = Self;

        fn serialize_bool(self, v: bool) -> R {
            self.word(v as u64);
            Ok(())
        }
        fn serialize_i8(self, v: i8) -> R {
            self.serialize_i64(v.into())
        }
        fn serialize_i16(self, v: i16) -> R {
            self.serialize_i64(v.into())
        }
        fn serialize_i32(self, v: i32) -> R {
            self.serialize_i64(v.into())
        }
        fn serialize_i64(self, v: i64) -> R {
            self.word(v as u64);
            Ok(())
        }
        fn serialize_i128(self, v: i128) -> R {
            self.bytes(&v.to_le_bytes());
            Ok(())
        }
        fn serialize_u8(self, v: u8) -> R {
            self.serialize_u64(v.into())
        }
        fn serialize_u16(self, v: u16) -> R {
            self.serialize_u64(v.into())
        }
        fn serialize_u32(self, v: u32) -> R {
            self.serialize_u64(v.into())
        }
        fn serialize_u64(self, v: u64) -> R {
            self.word(v);
            Ok(())
        }
        fn serialize_u128(self, v: u128) -> R {
            self.bytes(&v.to_le_bytes());
            Ok(())
        }
        fn serialize_f32(self, v: f32) -> R {
            self.serialize_f64(v.into())
        }
        fn serialize_f64(self, v: f64) -> R {
            self.word(v.to_bits());
            Ok(())
        }
        fn serialize_char(self, v: char) -> R {
            self.word(v.into());
            Ok(())
        }
        fn serialize_str(self, v: &str) -> R {
            self.bytes(v.as_bytes());
            Ok(())
        }
        fn serialize_bytes(self, v: &[u8]) -> R {
            self.bytes(v);
            Ok(())
        }
        fn serialize_none(self) -> R {
            self.word(0);
            Ok(())
        }
        fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> R {
            self.word(1);
            value.serialize(self)
        }
        fn serialize_unit(self) -> R {
            Ok(())
        }
        fn serialize_unit_struct(self, _: &'static str) -> R {
            Ok(())
        }
        fn serialize_unit_variant(self, _: &'static str, index: u32, _: &'static str) -> R {
            self.word(index.into());
            Ok(())
        }
        fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> R {
            value.serialize(self)
        }
        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            index: u32,
            _: &'static str,
            value: &T,
        ) -> R {
            self.word(index.into());
            value.serialize(self)
        }
        fn serialize_seq(self, len: Option<usize>) -> Result<Self, Never> {
            self.word(len.map_or(u64::MAX, |n| n as u64));
            Ok(self)
        }
        fn serialize_tuple(self, _: usize) -> Result<Self, Never> {
            Ok(self)
        }
        fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Never> {
            Ok(self)
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            index: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self, Never> {
            self.word(index.into());
            Ok(self)
        }
        fn serialize_map(self, len: Option<usize>) -> Result<Self, Never> {
            self.word(len.map_or(u64::MAX, |n| n as u64));
            Ok(self)
        }
        fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Never> {
            Ok(self)
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            index: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self, Never> {
            self.word(index.into());
            Ok(self)
        }
    }

    impl ser::SerializeSeq for &mut Hasher {
        type Ok = ();
        type Error = Never;
        fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
            value.serialize(&mut **self)
        }
        fn end(self) -> R {
            Ok(())
        }
    }
    impl ser::SerializeTuple for &mut Hasher {
        type Ok = ();
        type Error = Never;
        fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
            value.serialize(&mut **self)
        }
        fn end(self) -> R {
            Ok(())
        }
    }
    impl ser::SerializeTupleStruct for &mut Hasher {
        type Ok = ();
        type Error = Never;
        fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
            value.serialize(&mut **self)
        }
        fn end(self) -> R {
            Ok(())
        }
    }
    impl ser::SerializeTupleVariant for &mut Hasher {
        type Ok = ();
        type Error = Never;
        fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
            value.serialize(&mut **self)
        }
        fn end(self) -> R {
            Ok(())
        }
    }
    impl ser::SerializeMap for &mut Hasher {
        type Ok = ();
        type Error = Never;
        fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> R {
            key.serialize(&mut **self)
        }
        fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
            value.serialize(&mut **self)
        }
        fn end(self) -> R {
            Ok(())
        }
    }
    impl ser::SerializeStruct for &mut Hasher {
        type Ok = ();
        type Error = Never;
        fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, value: &T) -> R {
            value.serialize(&mut **self)
        }
        fn skip_field(&mut self, _: &'static str) -> R {
            self.word(SKIPPED);
            Ok(())
        }
        fn end(self) -> R {
            Ok(())
        }
    }
    impl ser::SerializeStructVariant for &mut Hasher {
        type Ok = ();
        type Error = Never;
        fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, value: &T) -> R {
            value.serialize(&mut **self)
        }
        fn skip_field(&mut self, _: &'static str) -> R {
            self.word(SKIPPED);
            Ok(())
        }
        fn end(self) -> R {
            Ok(())
        }
    }

    #[cfg(test)]
    mod tests {
        use super::hash;
        use serde::Serialize;

        #[derive(Serialize)]
        struct S {
            #[serde(skip_serializing_if = "Option::is_none")]
            a: Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            b: Option<u64>,
            s: String,
        }

        #[test]
        fn equal_values_agree_and_different_ones_differ() {
            let v = |a, b, s: &str| hash(&S { a, b, s: s.into() });
            assert_eq!(v(Some(1), None, "x"), v(Some(1), None, "x"));
            assert_ne!(v(Some(1), None, "x"), v(None, Some(1), "x"));
            assert_ne!(v(None, None, "abcdefgh"), v(None, None, "abcdefgh\0"));
            assert_ne!(hash(&vec!["ab", "c"]), hash(&vec!["a", "bc"]));
            // A fixed value: saved runs record trace hashes.
            assert_eq!(v(Some(7), None, "trace"), 0x3e99_ffa4_7568_9ba1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(client: usize, invoke_ns: u64, call: &str) -> OpRecord<String, ()> {
        OpRecord {
            id: 99,
            client,
            key: "k".into(),
            call: call.into(),
            invoke_ns,
            return_ns: None,
            result: None,
            attempts: vec![],
        }
    }

    #[test]
    fn histories_are_sorted_by_invocation_then_client_then_arrival() {
        let r = Recorder::new();
        for o in [
            op(2, 30, "a"),
            op(1, 30, "b"),
            op(0, 10, "c"),
            op(1, 30, "d"),
            op(0, 5, "e"),
        ] {
            r.push(o);
        }
        let copied = r.finish(vec![]);
        let taken = r.take_history(vec![]);
        assert_eq!(copied, taken);
        let calls: Vec<(u64, &str)> = taken.ops.iter().map(|o| (o.id, o.call.as_str())).collect();
        assert_eq!(calls, [(0, "e"), (1, "c"), (2, "b"), (3, "d"), (4, "a")]);
        assert!(r.finish(vec![]).ops.is_empty());
    }

    #[test]
    fn the_in_place_order_is_the_stable_sort() {
        let ops: Vec<_> = (0..200u64)
            .map(|i| op((i * 7 % 3) as usize, i * 37 % 61, &i.to_string()))
            .collect();
        let r = Recorder::with_capacity(1);
        for o in ops.clone() {
            r.push(o);
        }
        let mut expected = ops;
        expected.sort_by_key(|o| (o.invoke_ns, o.client));
        for (i, o) in expected.iter_mut().enumerate() {
            o.id = i as u64;
        }
        assert_eq!(r.take_history(vec![]).ops, expected);
    }
}
