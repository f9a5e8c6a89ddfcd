//! Histories: what each client asked, when, and what it saw, with every
//! attempt the client's SDK made; plus the world's events, the nodes' typed
//! events and what the nodes did with their logs. Written as JSON
//! (`{"version":1, "ops":[...], "events":[...]}`) and hashed for determinism
//! checks (the log events left out of the hash: they are a record of what
//! the nodes did, not a part of it).

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
    /// Sent, and no answer within the request timeout.
    Timeout,
    /// Never sent: the connect was refused (nothing listened at the server's
    /// address), so the request certainly did not run.
    NotSent,
    /// Sent, and the caller cancelled the call before an answer came: it may
    /// have run.
    Cancelled,
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

/// Something a node saw or did that is not an operation: a lease granted as
/// the server saw it, a holder's belief, a delivery, a checkpoint. `E` is the
/// scenario's own event type. Both the true time and the node's own clock
/// reading are kept, so checkers can compare belief with truth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeEvent<E> {
    /// The node (its incarnation name: `client-3#1` after a restart).
    pub node: String,
    /// True simulated time, ns since the start.
    pub at_ns: u64,
    /// The node's own clock reading at that instant, ms since the Unix epoch.
    pub local_ms: u64,
    /// What happened.
    pub event: E,
}

/// A whole history. `E` is the scenario's event type (none by default), `L`
/// the type of what the nodes report of their logs (none by default).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct History<C, R, E = (), L = ()> {
    /// Always [`HISTORY_VERSION`].
    pub version: u32,
    /// Operations, by id.
    pub ops: Vec<OpRecord<C, R>>,
    /// World events (faults, heal, end).
    #[serde(default)]
    pub events: Vec<WorldEvent>,
    /// The nodes' typed events, in the order they happened.
    #[serde(default = "Vec::new", skip_serializing_if = "Vec::is_empty")]
    pub node_events: Vec<NodeEvent<E>>,
    /// What the nodes with a log reported of it (its syncs, the replies
    /// that needed it durable), in the order it happened. Not hashed: the
    /// trace hash is the one of the history without them.
    #[serde(default = "Vec::new", skip_serializing_if = "Vec::is_empty")]
    pub log_events: Vec<NodeEvent<L>>,
}

impl<C, R, E, L> History<C, R, E, L> {
    /// A history of these operations and nothing else (no world, node or
    /// log events): what a test builds by hand.
    pub fn of_ops(ops: Vec<OpRecord<C, R>>) -> Self {
        History {
            version: HISTORY_VERSION,
            ops,
            events: Vec::new(),
            node_events: Vec::new(),
            log_events: Vec::new(),
        }
    }
}

/// What the trace hash reads of a history: every field but the log events,
/// encoded as the history itself was before they existed.
#[derive(Serialize)]
struct Traced<'a, C, R, E> {
    version: u32,
    ops: &'a [OpRecord<C, R>],
    events: &'a [WorldEvent],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    node_events: &'a [NodeEvent<E>],
}

impl<C: Serialize, R: Serialize, E: Serialize, L: Serialize> History<C, R, E, L> {
    /// The history as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("history types serialise")
    }

    /// A stable hash of the history: two runs of one seed must agree. It
    /// hashes the compact binary encoding (bincode) of everything but the
    /// log events, streamed into a word-at-a-time hasher without building
    /// the bytes: every run pays for it, and formatting JSON text only to
    /// hash it cost about a tenth of an occ run.
    pub fn trace_hash(&self) -> u64 {
        let mut h = crate::rng::TraceHasher::default();
        let traced = Traced {
            version: self.version,
            ops: &self.ops,
            events: &self.events,
            node_events: &self.node_events,
        };
        bincode::serialize_into(&mut h, &traced).expect("history types serialise");
        h.finish()
    }
}

impl<C, R, E> History<C, R, E> {
    /// The history with the nodes' log events `log_events` (a history is
    /// made without them, [`Recorder::finish`]).
    pub fn with_log_events<L>(self, log_events: Vec<NodeEvent<L>>) -> History<C, R, E, L> {
        History {
            version: self.version,
            ops: self.ops,
            events: self.events,
            node_events: self.node_events,
            log_events,
        }
    }
}

/// What a recorder holds while the run goes on.
#[derive(Debug)]
struct Recorded<C, R, E> {
    ops: Vec<OpRecord<C, R>>,
    node_events: Vec<NodeEvent<E>>,
}

/// Collects operation records and node events from the nodes of one run.
#[derive(Debug)]
pub struct Recorder<C, R, E = ()> {
    inner: Arc<Mutex<Recorded<C, R, E>>>,
}

/// A slot for an operation that has begun: [`Recorder::complete`] fills in
/// its outcome. A slot never completed (its node crashed) stays an
/// operation with an unknown outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot(usize);

impl<C, R, E> Clone for Recorder<C, R, E> {
    fn clone(&self) -> Self {
        Recorder {
            inner: self.inner.clone(),
        }
    }
}

impl<C, R, E> Default for Recorder<C, R, E> {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl<C, R, E> Recorder<C, R, E> {
    /// An empty recorder with room for `ops` operations (no regrowth of a
    /// large vector while the clients run).
    pub fn with_capacity(ops: usize) -> Self {
        Recorder {
            inner: Arc::new(Mutex::new(Recorded {
                ops: Vec::with_capacity(ops),
                node_events: Vec::new(),
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded<C, R, E>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a finished (or unknown-outcome) operation; its id is assigned
    /// when the history is made, in invocation order.
    pub fn push(&self, op: OpRecord<C, R>) {
        self.lock().ops.push(op);
    }

    /// Adds an operation that has been invoked but not answered yet (its
    /// `return_ns` and `result` are ignored and start as unknown).
    pub fn begin(&self, mut op: OpRecord<C, R>) -> Slot {
        op.return_ns = None;
        op.result = None;
        let mut g = self.lock();
        g.ops.push(op);
        Slot(g.ops.len() - 1)
    }

    /// Fills in the outcome of a begun operation (`result: None` keeps it unknown).
    pub fn complete(
        &self,
        slot: Slot,
        return_ns: Option<u64>,
        result: Option<R>,
        attempts: Vec<Attempt>,
    ) {
        let mut g = self.lock();
        if let Some(op) = g.ops.get_mut(slot.0) {
            op.return_ns = if result.is_some() { return_ns } else { None };
            op.result = result;
            op.attempts = attempts;
        }
    }

    /// Records a node event at the current simulated time.
    pub fn event(&self, node: impl Into<String>, local_ms: u64, event: E) {
        let at_ns = crate::world::now_ns();
        self.lock().node_events.push(NodeEvent {
            node: node.into(),
            at_ns,
            local_ms,
            event,
        });
    }
}

impl<C: Clone, R: Clone, E: Clone> Recorder<C, R, E> {
    /// The history: operations sorted by invocation time (then client), ids
    /// renumbered in that order.
    pub fn finish(&self, events: Vec<WorldEvent>) -> History<C, R, E> {
        let g = self.lock();
        let (ops, node_events) = (g.ops.clone(), g.node_events.clone());
        drop(g);
        Self::history(ops, node_events, events)
    }

    /// Like [`Recorder::finish`], but takes the operations out of the
    /// recorder (and every clone of it) instead of copying them: for the end
    /// of a run, when no node records any more.
    pub fn take_history(&self, events: Vec<WorldEvent>) -> History<C, R, E> {
        let mut g = self.lock();
        let ops = std::mem::take(&mut g.ops);
        let node_events = std::mem::take(&mut g.node_events);
        drop(g);
        Self::history(ops, node_events, events)
    }

    fn history(
        mut ops: Vec<OpRecord<C, R>>,
        node_events: Vec<NodeEvent<E>>,
        events: Vec<WorldEvent>,
    ) -> History<C, R, E> {
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
            node_events,
            log_events: Vec::new(),
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
    fn the_trace_hash_is_stable_and_sees_every_field() {
        let h: History<String, ()> = History {
            version: HISTORY_VERSION,
            ops: vec![op(1, 5, "x")],
            events: vec![],
            node_events: vec![],
            log_events: vec![],
        };
        assert_eq!(h.trace_hash(), h.clone().trace_hash());
        let mut other = h.clone();
        other.ops[0].invoke_ns = 6;
        assert_ne!(h.trace_hash(), other.trace_hash());
    }

    #[test]
    fn the_log_events_are_kept_out_of_the_trace_hash_which_is_the_history_s_own_encoding() {
        let h: History<String, (), u8> = History {
            version: HISTORY_VERSION,
            ops: vec![op(1, 5, "x")],
            events: vec![],
            node_events: vec![NodeEvent {
                node: "n".into(),
                at_ns: 1,
                local_ms: 2,
                event: 3,
            }],
            log_events: vec![],
        };
        // Without log events the hash is the one of the history's own bincode.
        let mut whole = crate::rng::TraceHasher::default();
        bincode::serialize_into(&mut whole, &h).unwrap();
        assert_eq!(h.trace_hash(), whole.finish());
        let logged = h.clone().with_log_events(vec![NodeEvent {
            node: "n".into(),
            at_ns: 1,
            local_ms: 2,
            event: "synced".to_string(),
        }]);
        assert_eq!(logged.trace_hash(), h.trace_hash());
        let json = logged.to_json();
        assert!(json.contains("\"log_events\""), "{json}");
        let back: History<String, (), u8, String> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, logged);
    }

    #[test]
    fn histories_are_sorted_by_invocation_then_client_then_arrival() {
        let r: Recorder<String, ()> = Recorder::new();
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
        let r: Recorder<String, ()> = Recorder::with_capacity(1);
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

#[cfg(test)]
mod slot_tests {
    use super::*;

    #[test]
    fn a_begun_operation_never_completed_stays_unknown_and_a_completed_one_is_filled_in() {
        let r: Recorder<&str, u8, &str> = Recorder::new();
        let op = |invoke_ns| OpRecord {
            id: 0,
            client: 0,
            key: "k".into(),
            call: "put",
            invoke_ns,
            return_ns: Some(1),
            result: Some(1),
            attempts: vec![],
        };
        let crashed = r.begin(op(10));
        let answered = r.begin(op(20));
        r.complete(answered, Some(30), Some(7), vec![]);
        let _ = crashed;
        r.event("client-0", 5, "believes");
        let h = r.take_history(vec![]);
        assert_eq!((h.ops[0].return_ns, h.ops[0].result), (None, None));
        assert_eq!((h.ops[1].return_ns, h.ops[1].result), (Some(30), Some(7)));
        assert_eq!(h.node_events.len(), 1);
        assert_eq!(h.node_events[0].event, "believes");
    }
}
