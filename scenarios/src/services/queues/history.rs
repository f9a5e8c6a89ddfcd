//! The `queues` history: the connectors' calls to the indexing service with
//! what they saw, and the nodes' typed events: the server's log as it was
//! written (every change of every item, in log order), the repository's
//! changes, and what the connectors did (checkpoints, traversals).

use overcast_model::client::CallResult;
use overcast_model::connector::{ConnectorEvent, Source};
use overcast_model::queue::{QueueEffect, QueueRequest, QueueResponse};
use overcast_model::retry::FinalOutcome;
use overcast_sim::history::{History, Recorder};
use serde::{Deserialize, Serialize};

/// A call, as the connector sent it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// The connector incarnation that made it (`connector-0`, `connector-0#1`, ...).
    pub node: String,
    /// Which part of the connector.
    pub source: Source,
    /// The request.
    pub request: QueueRequest,
}

/// What a call saw (an unknown outcome is recorded as none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    /// HTTP status.
    pub status: u16,
    /// The service's answer (none for a status the SDK made up, e.g. 503 after retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<QueueResponse>,
}

impl Outcome {
    /// From a call; `None` when its outcome is unknown.
    pub fn from_call(r: &CallResult<QueueResponse>) -> Option<Outcome> {
        let FinalOutcome::Response { status } = r.outcome else {
            return None;
        };
        Some(Outcome {
            status,
            response: r.response.clone(),
        })
    }
}

/// Something a node of `queues` saw or did, besides its calls.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueEvent {
    /// Server: a log record was written (in log order).
    Logged {
        /// The partition.
        partition: u32,
        /// Its LSN.
        lsn: u64,
        /// What changed (boxed: it carries its request and the items it changed).
        effect: Box<QueueEffect>,
    },
    /// Server: a (re)start recovered the first `kept` records of its log.
    Recovered {
        /// Records kept.
        kept: u64,
    },
    /// Repository: a document was added, changed or removed (or was there at the start).
    Repo {
        /// The document.
        id: String,
        /// Its revision.
        rev: u64,
        /// Its content (`None`: removed).
        content: Option<String>,
        /// The repository's change sequence after this change (the value
        /// `checkpoint_incremental` counts in); the initial documents all
        /// carry the sequence after the last of them. 0 in older files.
        #[serde(default)]
        seq: u64,
    },
    /// Server: a start-up found every copy of its log corrupt and refuses
    /// service (503) until a later start-up finds one sound: a run past the
    /// fault budget.
    Refused {
        /// What recovery found.
        reason: String,
    },
    /// A connector's lying disk lost these checkpoint records at a power
    /// failure after their sync reported them durable (from the bytes the
    /// world kept; noted at the end of the run): a loss at the end of the
    /// log no connector can see, which Q9 excuses.
    CheckpointsLost {
        /// The `(name, value)` records lost, in the order they were saved.
        records: Vec<(String, String)>,
    },
    /// A connector's own report.
    Connector(ConnectorEvent),
}

/// The `queues` history (with its server's log events, D1).
pub type QueueHistory = History<Call, Outcome, QueueEvent, overcast_model::durability::LogEvent>;

/// The `queues` recorder.
pub type QueueRecorder = Recorder<Call, Outcome, QueueEvent>;

/// Why no connector could finish its work in `history`, if none could: the
/// server's last start-up found every copy of its log corrupt, so it
/// refused service from then to the end of the run.
pub fn refused_to_the_end<L>(history: &History<Call, Outcome, QueueEvent, L>) -> Option<String> {
    let last = history
        .node_events
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            QueueEvent::Recovered { .. } => Some(None),
            QueueEvent::Refused { reason } => Some(Some((e, reason))),
            _ => None,
        })??;
    let (e, reason) = last;
    Some(format!(
        "{} refused service from {} to the end ({reason})",
        e.node,
        overcast_sim::timeline::secs(e.at_ns)
    ))
}

/// Adds to `history`, at its end, a [`QueueEvent::CheckpointsLost`] for
/// each connector whose lying disk lost checkpoint records (`lost_writes`,
/// the world's, of the connectors' disks).
pub fn note_lost_checkpoints<'a, L>(
    history: &mut History<Call, Outcome, QueueEvent, L>,
    lost_writes: impl Iterator<Item = &'a (String, overcast_sim::disk::LostWrite)>,
    end_ns: u64,
) {
    let mut lost: std::collections::BTreeMap<&str, Vec<(String, String)>> = Default::default();
    for (node, w) in lost_writes {
        lost.entry(node)
            .or_default()
            .extend(overcast_model::checkpoint_log::records_in(&w.bytes));
    }
    for (node, records) in lost {
        history.node_events.push(overcast_sim::history::NodeEvent {
            node: node.to_string(),
            at_ns: end_ns,
            local_ms: end_ns / 1_000_000,
            event: QueueEvent::CheckpointsLost { records },
        });
    }
}
