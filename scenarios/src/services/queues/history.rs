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
    /// A connector's own report.
    Connector(ConnectorEvent),
}

/// The `queues` history (with its server's log events, D1).
pub type QueueHistory = History<Call, Outcome, QueueEvent, overcast_model::durability::LogEvent>;

/// The `queues` recorder.
pub type QueueRecorder = Recorder<Call, Outcome, QueueEvent>;
