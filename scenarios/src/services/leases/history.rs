//! The `leases` history: calls (lease actions, blob reads/writes/deletes,
//! container operations) with what they saw, and the nodes' typed events:
//! the server's log as it was written (server-side grants, releases, breaks,
//! writes) and the holders' beliefs and unfenced side effects.

use overcast_model::client::CallResult;
use overcast_model::lease::{LeaseAction, LeaseRequest, LeaseResponse, LeaseState};
use overcast_model::partition::Effect;
use overcast_model::retry::FinalOutcome;
use overcast_model::store::{StoreRequest, StoreResponse};
use overcast_sim::history::{History, OpRecord, Recorder, Slot};
use serde::{Deserialize, Serialize};

/// A call, flattened for the history file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// `acquire`, `renew`, `change`, `release`, `break`, `read`, `put`, `delete`,
    /// `head` (Get Blob Properties), `set_blob_metadata` (Set Blob Metadata),
    /// `delete_container`, `set_metadata` (Set Container Metadata), `create_container`.
    pub op: String,
    /// The blob (`container/blob`) or container.
    pub target: String,
    /// `x-ms-lease-id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_id: Option<String>,
    /// `x-ms-proposed-lease-id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_id: Option<String>,
    /// `x-ms-lease-duration`, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<i64>,
    /// `x-ms-lease-break-period`, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_period_s: Option<i64>,
}

impl Call {
    /// The history form of a lease request.
    pub fn from_lease(r: &LeaseRequest) -> Call {
        match r {
            LeaseRequest::Action { target, action, .. } => {
                let mut c = Call {
                    op: action.name().into(),
                    target: target.name(),
                    ..Call::default()
                };
                match action {
                    LeaseAction::Acquire {
                        duration,
                        proposed_id,
                    } => {
                        c.duration_s = *duration;
                        c.proposed_id = proposed_id.clone();
                    }
                    LeaseAction::Renew { lease_id } | LeaseAction::Release { lease_id } => {
                        c.lease_id = Some(lease_id.clone())
                    }
                    LeaseAction::Change {
                        lease_id,
                        proposed_id,
                    } => {
                        c.lease_id = Some(lease_id.clone());
                        c.proposed_id = proposed_id.clone();
                    }
                    LeaseAction::Break { break_period } => c.break_period_s = *break_period,
                }
                c
            }
            LeaseRequest::DeleteContainer {
                container,
                lease_id,
            } => Call {
                op: "delete_container".into(),
                target: container.clone(),
                lease_id: lease_id.clone(),
                ..Call::default()
            },
            LeaseRequest::SetContainerMetadata {
                container,
                lease_id,
            } => Call {
                op: "set_metadata".into(),
                target: container.clone(),
                lease_id: lease_id.clone(),
                ..Call::default()
            },
        }
    }

    /// The history form of a store request.
    pub fn from_store(r: &StoreRequest) -> Call {
        let (op, target, lease_id) = match r {
            StoreRequest::CreateContainer { container } => {
                ("create_container", container.clone(), None)
            }
            StoreRequest::Read { key, conditions } => (
                "read",
                format!("{}/{}", key.container, key.id),
                conditions.lease_id.clone(),
            ),
            StoreRequest::Put {
                key, conditions, ..
            } => (
                "put",
                format!("{}/{}", key.container, key.id),
                conditions.lease_id.clone(),
            ),
            StoreRequest::Delete { key, conditions } => (
                "delete",
                format!("{}/{}", key.container, key.id),
                conditions.lease_id.clone(),
            ),
            StoreRequest::GetProperties { key, conditions } => (
                "head",
                format!("{}/{}", key.container, key.id),
                conditions.lease_id.clone(),
            ),
            StoreRequest::SetMetadata {
                key, conditions, ..
            } => (
                "set_blob_metadata",
                format!("{}/{}", key.container, key.id),
                conditions.lease_id.clone(),
            ),
        };
        Call {
            op: op.into(),
            target,
            lease_id,
            ..Call::default()
        }
    }
}

/// What a call saw (an unknown outcome is recorded as none).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    /// HTTP status.
    pub status: u16,
    /// `x-ms-error-code`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// `x-ms-lease-id` of a lease answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_id: Option<String>,
    /// `x-ms-lease-state` after a lease request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<LeaseState>,
    /// The server's clock when it judged a lease request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_ms: Option<u64>,
    /// The item version a read saw or a put made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

impl Outcome {
    /// From a lease call; `None` when unknown.
    pub fn from_lease(r: &CallResult<LeaseResponse>) -> Option<Outcome> {
        let FinalOutcome::Response { status } = r.outcome else {
            return None;
        };
        let resp = r.response.as_ref();
        Some(Outcome {
            status,
            code: resp.and_then(|x| x.error_code.clone()),
            lease_id: resp.and_then(|x| x.lease_id.clone()),
            state: resp.map(|x| x.state),
            server_ms: resp.map(|x| x.server_ms),
            version: None,
        })
    }

    /// From a store call; `None` when unknown.
    pub fn from_store(r: &CallResult<StoreResponse>) -> Option<Outcome> {
        let FinalOutcome::Response { status } = r.outcome else {
            return None;
        };
        let resp = r.response.as_ref();
        Some(Outcome {
            status,
            code: resp.and_then(|x| x.error_code.clone()),
            version: resp.and_then(|x| x.item.as_ref().map(|i| i.version)),
            ..Outcome::default()
        })
    }

    /// True for 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Something a node of `leases` saw or did, besides its calls.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LeaseEvent {
    /// Server: a log record was written (in log order): the server's own view of
    /// every grant, renewal, change, release, break, write and delete.
    Logged {
        /// The partition.
        partition: u32,
        /// Its LSN.
        lsn: u64,
        /// What changed.
        effect: Effect,
    },
    /// Server: a (re)start recovered the first `kept` records of its log; records
    /// written after them were lost with the crash (never acknowledged).
    Recovered {
        /// Records kept.
        kept: u64,
    },
    /// Holder: an acquire or renew succeeded; it believes it holds `lease_id` until
    /// its own clock reads `until_local_ms`.
    Believes {
        /// The blob or container.
        target: String,
        /// The lease id.
        lease_id: String,
        /// Its clock reading at which it will treat the lease as lost.
        until_local_ms: u64,
    },
    /// Holder: work not fenced by the storage service, done under `lease_id`.
    SideEffect {
        /// The blob or container.
        target: String,
        /// The lease id it acted under.
        lease_id: String,
    },
    /// Holder: it stopped believing (released, refused on renew, or time up).
    Dropped {
        /// The blob or container.
        target: String,
        /// The lease id.
        lease_id: String,
        /// Why, in a word or two.
        why: String,
    },
}

/// The `leases` history (with its server's log events, D1).
pub type LeaseHistory = History<Call, Outcome, LeaseEvent, overcast_model::durability::LogEvent>;

/// The `leases` recorder.
pub type LeaseRecorder = Recorder<Call, Outcome, LeaseEvent>;

/// Begins a call's record (before it is sent: a crash leaves it unknown).
pub fn begin(rec: &LeaseRecorder, client: usize, call: Call, invoke_ns: u64) -> Slot {
    rec.begin(OpRecord {
        id: 0,
        client,
        key: call.target.clone(),
        call,
        invoke_ns,
        return_ns: None,
        result: None,
        attempts: Vec::new(),
    })
}
