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
    /// It is the 64-bit FNV-1a of the history's compact JSON (what
    /// `serde_json::to_string` gives), streamed without building the text.
    pub fn trace_hash(&self) -> u64 {
        let mut h = crate::rng::Fnv1a::default();
        serde_json::to_writer(&mut h, self).expect("history types serialise");
        h.finish()
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
    fn the_trace_hash_is_the_fnv_of_the_compact_json() {
        let h = History {
            version: HISTORY_VERSION,
            ops: vec![op(1, 5, "x")],
            events: vec![],
        };
        let text = serde_json::to_string(&h).unwrap();
        assert_eq!(h.trace_hash(), crate::rng::fnv1a(text.as_bytes()));
        let mut other = h.clone();
        other.ops[0].invoke_ns = 6;
        assert_ne!(h.trace_hash(), other.trace_hash());
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
