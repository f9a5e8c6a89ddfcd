//! The regions scenario's history records: what a call asked (with its
//! consistency level and session token), what the caller saw (and which
//! region and replica answered), and the nodes' typed events (primaries
//! elected, each replica's final state, the SDK's routing decisions).
//!
//! Session scope: a session is one client *incarnation*. A recreated client
//! loses its tokens (SPEC §4.4), so the checkers key sessions by
//! [`RegionCall::session`] (the client's incarnation name, `client-3#1`
//! after its first restart), falling back to `client-<OpRecord.client>`
//! when it is empty (see [`session_of`]).

use overcast_sim::history::OpRecord;
use serde::{Deserialize, Serialize};

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
    /// A 2xx answer (or a 304/404 with an item state: `etag`/`body` absent
    /// when the response carried none; a 204 delete carries none).
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
    /// An SDK routing decision, recorded by the client (the event's node is
    /// the session, see [`RegionCall::session`]). For R6.
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

/// A regions history.
pub type RegionsHistory = overcast_sim::history::History<RegionCall, RegionOutcome, RegionEvent>;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_json_and_unknown_fields_are_refused() {
        let call = RegionCall {
            op: "replace".into(),
            item: "k1".into(),
            body: Some("b7".into()),
            if_match: Some("e3".into()),
            consistency: Consistency::Session,
            session_token: None,
            session: "client-0#1".into(),
            seq: 4,
        };
        let text = serde_json::to_string(&call).unwrap();
        assert_eq!(serde_json::from_str::<RegionCall>(&text).unwrap(), call);
        assert!(text.contains("\"consistency\":\"session\""));
        let out = RegionOutcome::Failed {
            status: 404,
            sub_status: 1002,
            region: Some("west".into()),
            node: None,
        };
        let text = serde_json::to_string(&out).unwrap();
        assert!(text.contains("\"kind\":\"failed\""));
        assert_eq!(serde_json::from_str::<RegionOutcome>(&text).unwrap(), out);
        let ev = RegionEvent::Route {
            op_id: 4,
            what: route::MARK_UNAVAILABLE.into(),
            region: "west".into(),
            status: 503,
            sub_status: 0,
            for_ms: Some(300),
        };
        let text = serde_json::to_string(&ev).unwrap();
        assert_eq!(serde_json::from_str::<RegionEvent>(&text).unwrap(), ev);
        assert!(serde_json::from_str::<RegionCall>(
            r#"{"op":"read","item":"k","consistency":"eventual","colour":"red"}"#
        )
        .is_err());
    }

    #[test]
    fn the_session_is_the_incarnation_name_or_else_the_client_index() {
        let mut op = RegionOp {
            id: 0,
            client: 2,
            key: "k".into(),
            call: serde_json::from_str(r#"{"op":"read","item":"k","consistency":"session"}"#)
                .unwrap(),
            invoke_ns: 0,
            return_ns: None,
            result: None,
            attempts: vec![],
        };
        assert_eq!(session_of(&op), "client-2");
        op.call.session = "client-2#1".into();
        assert_eq!(session_of(&op), "client-2#1");
    }
}
