//! The store's history records: what a call asked and what it saw, as they
//! appear in overcast's history files.

use crate::kit::words::{conditions_words, short_etag};
use overcast_harness::report::call_words;
use overcast_model::client::CallResult;
use overcast_model::retry::{CancelledEffect, FinalOutcome};
use overcast_model::server::Receipt;
use overcast_model::store::{EtagMatch, StoreRequest};
use overcast_model::wire::OperationId;
use overcast_sim::timeline::Tone;
use serde::{Deserialize, Serialize};

/// A call to the store, flattened for the history file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// `read`, `put`, `delete`, `head` (Get Blob Properties), `set_metadata`
    /// (Set Blob Metadata) or `create_container`.
    pub op: String,
    /// The item id (the container for `create_container`).
    pub item: String,
    /// The body written (puts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// `If-Match` (an ETag or `*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_match: Option<String>,
    /// `If-None-Match` (an ETag or `*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_none_match: Option<String>,
    /// `If-Modified-Since`: every date the header listed, ms on the sender's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_modified_since: Option<Vec<u64>>,
    /// `If-Unmodified-Since`, as `if_modified_since`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_unmodified_since: Option<Vec<u64>>,
    /// The SDK's id of the call, sent on every attempt: how the servers'
    /// receipts ([`OccEvent::Received`]) are matched to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<OperationId>,
    /// The caller cancels the call this many ms after invoking it (a
    /// `CancellationToken` with a deadline), if it asked to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_after_ms: Option<u64>,
}

fn header(m: &Option<EtagMatch>) -> Option<String> {
    m.as_ref().map(|m| match m {
        EtagMatch::Any => "*".to_string(),
        EtagMatch::Tags(tags) => tags
            .iter()
            .map(|t| t.0.clone())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

impl Call {
    /// Whether the call may change the item (a put, delete or Set Blob
    /// Metadata; a container's creation too): not idempotent, so never
    /// re-sent blindly (R1). Reads and HEADs are not.
    pub fn is_write(&self) -> bool {
        !matches!(self.op.as_str(), "read" | "head")
    }

    /// Whether an answer `status` to this call says it made a new version of
    /// its item, with the ETag the answer carried: a put's 200/201, a Set
    /// Blob Metadata's 200.
    pub fn produced(&self, status: u16) -> bool {
        matches!(
            (self.op.as_str(), status),
            ("put", 200 | 201) | ("set_metadata", 200)
        )
    }

    /// When the caller cancels the call, true ns, for a call invoked at
    /// `invoke_ns`; `None` when it does not.
    pub fn cancel_ns(&self, invoke_ns: u64) -> Option<u64> {
        self.cancel_after_ms
            .map(|ms| invoke_ns.saturating_add(ms.saturating_mul(1_000_000)))
    }

    /// The history form of a request.
    pub fn from_request(r: &StoreRequest) -> Call {
        let (op, item, body, c) = match r {
            StoreRequest::CreateContainer { container } => {
                ("create_container", container.clone(), None, None)
            }
            StoreRequest::Read { key, conditions } => {
                ("read", key.id.clone(), None, Some(conditions))
            }
            StoreRequest::Put {
                key,
                body,
                conditions,
                ..
            } => ("put", key.id.clone(), Some(body.clone()), Some(conditions)),
            StoreRequest::Delete { key, conditions } => {
                ("delete", key.id.clone(), None, Some(conditions))
            }
            StoreRequest::GetProperties { key, conditions } => {
                ("head", key.id.clone(), None, Some(conditions))
            }
            StoreRequest::SetMetadata {
                key, conditions, ..
            } => ("set_metadata", key.id.clone(), None, Some(conditions)),
        };
        Call {
            op: op.into(),
            item,
            body,
            if_match: c.and_then(|c| header(&c.if_match)),
            if_none_match: c.and_then(|c| header(&c.if_none_match)),
            if_modified_since: c.and_then(|c| c.if_modified_since.clone()),
            if_unmodified_since: c.and_then(|c| c.if_unmodified_since.clone()),
            operation: None,
            cancel_after_ms: None,
        }
    }
}

/// What the caller saw (an unknown outcome is recorded as no outcome at all).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Outcome {
    /// A status, with the item's ETag, version and body when the response had them.
    Response {
        /// HTTP status.
        status: u16,
        /// ETag (reads: current; writes: new).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        etag: Option<String>,
        /// Version (reads: current; writes: new).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<u64>,
        /// Body (200 reads).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
        /// Last-Modified, ms on the server's clock (whenever the response had an item).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_modified: Option<u64>,
    },
    /// A read whose timeout retries ran out. No longer produced (a read's timeouts now end
    /// as 503, SPEC §4.1 row 408); kept so that older history files still load.
    TimedOut,
    /// The caller cancelled the call, and it certainly did not run: no attempt was in
    /// flight at the cancel, and every earlier one was answered with a status that says
    /// it did not run, or never sent. (A cancelled call that may have run is recorded as
    /// an unknown outcome, no outcome at all.)
    CancelledNotRun,
}

impl Outcome {
    /// The history form of a call's result; `None` for an unknown outcome (a
    /// cancelled call that may have run is one).
    pub fn from_result(r: &CallResult) -> Option<Outcome> {
        match &r.outcome {
            FinalOutcome::Unknown { .. }
            | FinalOutcome::Cancelled {
                effect: CancelledEffect::Unknown,
            } => None,
            FinalOutcome::Cancelled {
                effect: CancelledEffect::NotRun,
            } => Some(Outcome::CancelledNotRun),
            FinalOutcome::Response { status } => {
                let item = r.response.as_ref().and_then(|resp| resp.item.as_ref());
                Some(Outcome::Response {
                    status: *status,
                    etag: item.map(|i| i.etag.0.clone()),
                    version: item.map(|i| i.version),
                    body: item.and_then(|i| i.body.clone()),
                    last_modified: item.map(|i| i.last_modified),
                })
            }
        }
    }
}

/// What a node of `occ` reported about itself: the history's typed node
/// events (`History::node_events`), with the node, the true time and the
/// node's own clock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum OccEvent {
    /// A server's start-up (or its recovery after a failed log sync) found
    /// the log sound: it serves, having replayed this many records.
    Serving {
        /// Log records replayed.
        replayed: u64,
    },
    /// A server's start-up (or recovery) found its log corrupt, not merely
    /// torn at the end: it answers every request 503 until a later start-up
    /// finds the log sound. Unavailable by design (SPEC allows a server to
    /// refuse service rather than serve from a log it cannot vouch for).
    Unavailable {
        /// Why, as the log's recovery put it.
        reason: String,
    },
    /// A server received a request and answered it (or never did): what the
    /// retry checks judge the SDK by, from the servers' side (SPEC §4).
    /// The event's times are the receipt's.
    Received(Receipt),
}

/// The recorder `occ`'s nodes write into.
pub type OccRecorder = overcast_sim::history::Recorder<Call, Outcome, OccEvent>;

/// A call in a few words: `put k3 If-Match …0001 → 412`.
pub fn words(call: &Call, result: Option<&Outcome>) -> (String, Tone) {
    let asked = format!(
        "{} {}{}",
        call.op,
        call.item,
        conditions_words(call.if_match.as_deref(), call.if_none_match.as_deref())
    );
    let seen = result.map(|r| match r {
        // A read's timeouts ran out (older histories): shown as the 503 it is now.
        Outcome::TimedOut => (503, "timed out".to_string()),
        // No status: shown as refused, under nginx's 499 (client closed request).
        Outcome::CancelledNotRun => (499, "cancelled, not run".to_string()),
        Outcome::Response {
            status,
            etag,
            version,
            ..
        } => {
            let mut seen = status.to_string();
            if let Some(v) = version {
                seen += &format!(" v{v}");
            }
            if let Some(e) = etag {
                seen += &format!(" {}", short_etag(e));
            }
            (*status, seen)
        }
    });
    call_words(asked, seen)
}
