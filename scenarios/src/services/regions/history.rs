//! The regions scenario's history records: what a call asked (with its
//! consistency level and session token), what the caller saw (and which
//! region and replica answered), and the nodes' typed events (primaries
//! elected, the entries each replica applied, each replica's final state,
//! the SDK's routing decisions).
//!
//! Session scope: a session is one client *incarnation*. A recreated client
//! loses its tokens (SPEC §4.4), so the checkers key sessions by
//! [`RegionCall::session`] (the client's incarnation name, `client-3#1`
//! after its first restart), falling back to `client-<OpRecord.client>`
//! when it is empty (see [`session_of`]).

use overcast_sim::history::OpRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Consistency level a request asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Consistency {
    /// Served by the primary (or a quorum): judged for linearizability.
    Strong,
    /// Served by any replica whose applied LSN reaches the session token: judged for R5.
    Session,
    /// Served by any replica: judged for convergence (no phantoms).
    Eventual,
}

impl Consistency {
    /// Its name in words: `strong`, `session`, `eventual`.
    pub fn word(self) -> &'static str {
        match self {
            Consistency::Strong => "strong",
            Consistency::Session => "session",
            Consistency::Eventual => "eventual",
        }
    }
}

/// A call in the regions scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionCall {
    /// `read`, `replace` (a write with If-Match), `upsert` (a blind write),
    /// `create` or `delete`.
    pub op: String,
    /// The item id.
    pub item: String,
    /// The body written (writes). The workload makes every write's body unique,
    /// so a body names the write that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The ETag sent as If-Match, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_match: Option<String>,
    /// The consistency level asked for.
    pub consistency: Consistency,
    /// The session token the SDK sent (reads), opaque text such as `p3:17`
    /// (partition 3, LSN 17). Checkers use it only as a guide and in messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_token: Option<String>,
    /// The session that issued the call: the client's incarnation name
    /// (`client-3`, `client-3#1` after a restart). Empty means "the client
    /// index is the session" (see [`session_of`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub session: String,
    /// The call's number within its session (0, 1, 2 …), in issue order.
    /// [`RegionEvent::Route`]'s `op_id` names a call by this number, because
    /// `OpRecord::id` is only assigned when the history is made.
    #[serde(default)]
    pub seq: u64,
}

impl RegionCall {
    /// True for the calls that may change the item.
    pub fn is_write(&self) -> bool {
        self.op != "read"
    }
}

/// What the caller saw. An operation whose outcome is unknown (a write that
/// timed out with 408 after it was sent, a transport-generated 503 on a
/// write, a crashed client) is recorded with no outcome at all
/// (`OpRecord::result == None`), not as `Failed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RegionOutcome {
    /// A 2xx answer (`etag`/`body` absent when the response carried none,
    /// as on a 204 delete). A 404 is a [`RegionOutcome::Failed`].
    Ok {
        /// HTTP status.
        status: u16,
        /// The item's ETag (reads: the version read; writes: the new version).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        etag: Option<String>,
        /// The body read (reads) or written (writes).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
        /// The session token the response carried (`x-ms-session-token`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_token: Option<String>,
        /// The region that answered.
        region: String,
        /// The replica that answered (its incarnation name).
        node: String,
    },
    /// A failure the caller saw: a non-2xx status after the SDK's retries.
    /// `status == 0` (with `sub_status == 0`) means no status reached the
    /// caller: the SDK gave up without an answer (e.g. every region
    /// unavailable and the failover budget spent) on a call whose outcome is
    /// nonetheless known not to have taken effect (a read, an unsent write).
    Failed {
        /// HTTP status (0: the SDK gave up without one).
        status: u16,
        /// Sub-status (1002 `ReadSessionNotAvailable`, 3 `WriteForbidden`, …; 0 when none).
        #[serde(default)]
        sub_status: u16,
        /// The region of the last attempt, if one was sent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        region: Option<String>,
        /// The replica of the last attempt, if one answered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<String>,
    },
}

impl RegionOutcome {
    /// The status the caller saw.
    pub fn status(&self) -> u16 {
        match self {
            RegionOutcome::Ok { status, .. } | RegionOutcome::Failed { status, .. } => *status,
        }
    }

    /// True for a 2xx answer.
    pub fn is_success(&self) -> bool {
        matches!(self, RegionOutcome::Ok { status, .. } if (200..300).contains(status))
    }

    /// The ETag the answer carried (2xx reads and writes).
    pub fn etag(&self) -> Option<&str> {
        match self {
            RegionOutcome::Ok { etag, .. } => etag.as_deref(),
            RegionOutcome::Failed { .. } => None,
        }
    }

    /// The body the answer carried.
    pub fn body(&self) -> Option<&str> {
        match self {
            RegionOutcome::Ok { body, .. } => body.as_deref(),
            RegionOutcome::Failed { .. } => None,
        }
    }

    /// "region/node" of the replica that answered, for messages.
    pub fn answered_by(&self) -> String {
        match self {
            RegionOutcome::Ok { region, node, .. } => format!("{region}/{node}"),
            RegionOutcome::Failed { region, node, .. } => format!(
                "{}/{}",
                region.as_deref().unwrap_or("-"),
                node.as_deref().unwrap_or("-")
            ),
        }
    }
}

/// One item in a replica's final state.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalItem {
    /// The item id.
    pub item: String,
    /// Its ETag.
    pub etag: String,
    /// Its body.
    pub body: String,
}

/// The `what` words of [`RegionEvent::Route`]: one constant per SDK decision.
pub mod route {
    /// An attempt was sent to `region`; `status`/`sub_status` is how it
    /// ended (0/0: no answer, e.g. a timeout or a connection error).
    pub const ATTEMPT: &str = "attempt";
    /// `region` was marked unavailable for `for_ms` on the client's own clock
    /// (after `status`/`sub_status`).
    pub const MARK_UNAVAILABLE: &str = "mark_unavailable";
    /// The addresses of the partition's replicas were refreshed (410/0).
    pub const REFRESH_ADDRESSES: &str = "refresh_addresses";
    /// The partition map was refreshed (410/1007, 410/1008).
    pub const REFRESH_PARTITION_MAP: &str = "refresh_partition_map";
    /// The container map was refreshed (410/1000).
    pub const REFRESH_CONTAINER_MAP: &str = "refresh_container_map";
    /// The account (write region, region list) was refreshed (403/3, 403/1008, connection errors).
    pub const REFRESH_ACCOUNT: &str = "refresh_account";
}

/// One entry a replica applied, as it reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppliedEntry {
    /// The entry's LSN.
    pub lsn: u64,
    /// The term of the primary that appended it.
    pub term: u64,
    /// A digest of its effect (CRC-32 of the effect's encoding): two
    /// entries with different effects have, all but surely, different digests.
    pub digest: u32,
}

/// Typed node events.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RegionEvent {
    /// A node (the event's node) became primary of a partition.
    Primary {
        /// The partition.
        partition: u32,
        /// Its term (epoch), which fences older primaries.
        term: u64,
    },
    /// A replica (the event's node) applied entries of a partition to its
    /// state, in this order, in one step. A restarted replica applies its
    /// committed prefix again from its disk, and reports it again.
    Applied {
        /// The partition.
        partition: u32,
        /// The entries.
        entries: Vec<AppliedEntry>,
    },
    /// A replica's view at the end of the run (after heal + quiet): what it
    /// has applied. Items absent from `items` are deleted or never created.
    Final {
        /// The partition.
        partition: u32,
        /// The replica's region.
        region: String,
        /// `primary`, `secondary` (same region) or `read` (a read region's replica).
        role: String,
        /// The term the replica is in.
        term: u64,
        /// The LSN of the last effect it has applied.
        applied_lsn: u64,
        /// Every live item it holds.
        items: Vec<FinalItem>,
        /// How many replicas the partition has in the deployment, across all
        /// regions (the same on every `Final` of one partition): a checker
        /// compares it with the `Final`s it got to tell whether the run
        /// ended settled. 0 when unknown (then nothing is judged settled).
        #[serde(default)]
        replicas: u32,
    },
    /// A replica found every copy of its log corrupt (past the fault
    /// budget) and refuses from then on: no vote, no acknowledgement, every
    /// client request answered 503; it reports no final state.
    Refused {
        /// What recovery found.
        reason: String,
    },
    /// An SDK routing decision, recorded by the client (the event's node is
    /// the session, see [`RegionCall::session`]). For R6.
    ///
    /// The event's `local_ms` is the client's clock when the decision was
    /// taken (an attempt: when it was sent); its `at_ns` is when it was
    /// recorded, at the end of the call.
    Route {
        /// The call's [`RegionCall::seq`] in that session.
        op_id: u64,
        /// One of the [`route`] words.
        what: String,
        /// The region concerned.
        region: String,
        /// The status that led to the decision (0 when none).
        status: u16,
        /// Its sub-status (0 when none).
        sub_status: u16,
        /// How long the region stays unavailable, on the client's clock
        /// ([`route::MARK_UNAVAILABLE`] only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        for_ms: Option<u64>,
    },
}

/// A regions history (with the replicas' log events, D1).
pub type RegionsHistory = overcast_sim::history::History<
    RegionCall,
    RegionOutcome,
    RegionEvent,
    overcast_model::durability::LogEvent,
>;

/// One operation of a regions history.
pub type RegionOp = OpRecord<RegionCall, RegionOutcome>;

/// The session an operation belongs to: its call's `session`, or
/// `client-<index>` when the call does not name one.
pub fn session_of(op: &RegionOp) -> String {
    if op.call.session.is_empty() {
        format!("client-{}", op.client)
    } else {
        op.call.session.clone()
    }
}

/// True when a write-like call may have taken effect: it was acknowledged
/// (2xx), its outcome is unknown, or it failed in a way that does not prove
/// it was not executed (no status, 408, 410 or a 5xx). A 4xx such as 412,
/// 409 or 404 proves it had no effect.
pub fn may_have_applied(op: &RegionOp) -> bool {
    match &op.result {
        None => true,
        Some(RegionOutcome::Ok { status, .. }) => (200..300).contains(status),
        Some(RegionOutcome::Failed { status, .. }) => {
            matches!(*status, 0 | 408 | 410) || *status >= 500
        }
    }
}

/// A version of an item, as far as the outside can name it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    /// The version carrying this ETag.
    Etag(String),
    /// The absence left by this acknowledged delete (its op id).
    Deleted(u64),
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Version::Etag(e) => write!(f, "version {e}"),
            Version::Deleted(op) => write!(f, "the deletion by op {op}"),
        }
    }
}

/// What established an order between two versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    /// If-Match chains alone: a write that succeeded with `If-Match: P`
    /// found the item at P, so its version came right after P.
    Chain,
    /// The chains together with real time: a write acknowledged before
    /// another write was invoked took effect first (writes go to one primary).
    RealTime,
}

impl Basis {
    /// Words for a message.
    pub fn words(self) -> &'static str {
        match self {
            Basis::Chain => "by the If-Match chains",
            Basis::RealTime => {
                "by real time (a write acknowledged before another was invoked) with the If-Match chains"
            }
        }
    }
}

/// How two versions of one item are ordered, seen from the outside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// The same version.
    Same,
    /// The first came before the second.
    Before(Basis),
    /// The first came after the second.
    After(Basis),
    /// Nothing in the history orders them.
    Unordered,
    /// The history orders them both ways (only a broken model does that;
    /// other checks judge it, so the order is not used).
    Contradictory,
}

/// One version node of an [`ItemOrder`].
#[derive(Clone, Debug)]
struct VersionNode {
    version: Version,
    /// The write that produced it, when known: (op id, invoke_ns, return_ns).
    writer: Option<(u64, u64, Option<u64>)>,
}

/// The order of one item's versions from the outside: ETags linked by the
/// If-Match chains of the writes that took effect (acknowledged, or
/// identified by a read of their unique body), and by real time between
/// writes whose versions are known. No model counter (LSN, session token,
/// term) is used.
#[derive(Clone, Debug, Default)]
pub struct ItemOrder {
    nodes: Vec<VersionNode>,
    by_etag: BTreeMap<String, usize>,
    by_delete: BTreeMap<u64, usize>,
    /// Per node, the nodes reachable by chain edges (bit set).
    chain_reach: Vec<Vec<u64>>,
    /// Per node, the nodes reachable by chain and real-time edges (bit set).
    all_reach: Vec<Vec<u64>>,
}

fn bit(set: &[u64], i: usize) -> bool {
    (set[i / 64] >> (i % 64)) & 1 == 1
}

/// Every node reachable from `from` (not counting `from` itself unless on a
/// cycle), as a bit set over the first `n` nodes.
fn reach(adj: &[Vec<usize>], from: usize, n: usize) -> Vec<u64> {
    let mut seen = vec![false; adj.len()];
    let mut set = vec![0u64; n.div_ceil(64)];
    let mut stack: Vec<usize> = adj[from].clone();
    while let Some(v) = stack.pop() {
        if std::mem::replace(&mut seen[v], true) {
            continue;
        }
        if v < n {
            set[v / 64] |= 1 << (v % 64);
        }
        stack.extend(adj[v].iter().copied());
    }
    set
}

impl ItemOrder {
    /// The order of the versions of one item, from its operations.
    pub fn build<'a>(ops: impl IntoIterator<Item = &'a RegionOp>) -> ItemOrder {
        let ops: Vec<&RegionOp> = ops.into_iter().collect();
        let mut order = ItemOrder::default();
        let body_writer: BTreeMap<&str, &RegionOp> = ops
            .iter()
            .filter(|o| o.call.is_write() && o.call.op != "delete")
            .filter_map(|o| o.call.body.as_deref().map(|b| (b, *o)))
            .collect();
        // Writes that took effect, with the version each produced.
        let mut applied: Vec<(&RegionOp, usize)> = Vec::new();
        for op in &ops {
            let Some(res) = &op.result else { continue };
            if !res.is_success() {
                continue;
            }
            let writer = Some((op.id, op.invoke_ns, op.return_ns));
            if op.call.op == "delete" {
                let n = order.add(Version::Deleted(op.id), writer);
                order.by_delete.insert(op.id, n);
                applied.push((op, n));
            } else if op.call.is_write() {
                if let Some(e) = res.etag() {
                    let n = order.etag_node(e, writer);
                    applied.push((op, n));
                }
            }
        }
        for op in &ops {
            let (Some(res), false) = (&op.result, op.call.is_write()) else {
                continue;
            };
            let (Some(e), true) = (res.etag(), res.is_success()) else {
                continue;
            };
            let w = res
                .body()
                .and_then(|b| body_writer.get(b))
                .filter(|w| !w.result.as_ref().is_some_and(|r| r.is_success()));
            let writer = w.map(|w| (w.id, w.invoke_ns, w.return_ns));
            let had_writer = order
                .etag(e)
                .is_some_and(|n| order.nodes[n].writer.is_some());
            let n = order.etag_node(e, writer);
            if let (Some(w), false) = (w, had_writer) {
                applied.push((w, n));
            }
        }
        let mut chain: Vec<Vec<usize>> = Vec::new();
        for &(op, n) in &applied {
            if let Some(p) = op.call.if_match.as_deref().filter(|p| *p != "*") {
                let pn = order.etag_node(p, None);
                chain.resize(order.nodes.len(), Vec::new());
                chain[pn].push(n);
            }
        }
        let n = order.nodes.len();
        chain.resize(n, Vec::new());
        // Real time through time points: point i stands for "invoked at
        // times[i] or later"; a version whose write returned at r reaches
        // the first point after r, and points lead to later points and to
        // the versions written from them on.
        let mut points: Vec<(u64, usize)> = order
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.writer.map(|(_, inv, _)| (inv, i)))
            .collect();
        points.sort_unstable();
        let mut all = chain.clone();
        all.resize(n + points.len(), Vec::new());
        for (k, &(_, v)) in points.iter().enumerate() {
            all[n + k].push(v);
            if k + 1 < points.len() {
                all[n + k].push(n + k + 1);
            }
        }
        for (i, v) in order.nodes.iter().enumerate() {
            if let Some((_, _, Some(ret))) = v.writer {
                let k = points.partition_point(|&(t, _)| t <= ret);
                if k < points.len() {
                    all[i].push(n + k);
                }
            }
        }
        order.chain_reach = (0..n).map(|i| reach(&chain, i, n)).collect();
        order.all_reach = (0..n).map(|i| reach(&all, i, n)).collect();
        order
    }

    fn add(&mut self, version: Version, writer: Option<(u64, u64, Option<u64>)>) -> usize {
        self.nodes.push(VersionNode { version, writer });
        self.nodes.len() - 1
    }

    fn etag_node(&mut self, etag: &str, writer: Option<(u64, u64, Option<u64>)>) -> usize {
        if let Some(&n) = self.by_etag.get(etag) {
            if self.nodes[n].writer.is_none() {
                self.nodes[n].writer = writer;
            }
            return n;
        }
        let n = self.add(Version::Etag(etag.to_string()), writer);
        self.by_etag.insert(etag.to_string(), n);
        n
    }

    /// The node of the version carrying this ETag, if the history names it.
    pub fn etag(&self, etag: &str) -> Option<usize> {
        self.by_etag.get(etag).copied()
    }

    /// The node of the absence left by this acknowledged delete.
    pub fn deleted(&self, op: u64) -> Option<usize> {
        self.by_delete.get(&op).copied()
    }

    /// The version a node stands for.
    pub fn version(&self, node: usize) -> &Version {
        &self.nodes[node].version
    }

    /// The op id of the write that produced a node's version, when known.
    pub fn writer(&self, node: usize) -> Option<u64> {
        self.nodes[node].writer.map(|w| w.0)
    }

    /// How version `a` stands to version `b`: chains decide first, real time
    /// only where they do not.
    pub fn order(&self, a: usize, b: usize) -> Order {
        if a == b {
            return Order::Same;
        }
        for (reach, basis) in [
            (&self.chain_reach, Basis::Chain),
            (&self.all_reach, Basis::RealTime),
        ] {
            match (bit(&reach[a], b), bit(&reach[b], a)) {
                (true, true) => return Order::Contradictory,
                (true, false) => return Order::Before(basis),
                (false, true) => return Order::After(basis),
                (false, false) => {}
            }
        }
        Order::Unordered
    }
}

/// The version order of every item of a history, by item id.
pub fn item_orders(history: &RegionsHistory) -> BTreeMap<String, ItemOrder> {
    let mut by_item: BTreeMap<&str, Vec<&RegionOp>> = BTreeMap::new();
    for op in &history.ops {
        by_item.entry(op.call.item.as_str()).or_default().push(op);
    }
    by_item
        .into_iter()
        .map(|(item, ops)| (item.to_string(), ItemOrder::build(ops)))
        .collect()
}
