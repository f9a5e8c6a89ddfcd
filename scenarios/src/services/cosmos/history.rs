//! Cosmos calls and outcomes as they appear in overcast's history files.

use crate::kit::words::conditions_words;
use overcast_harness::report::call_words;
use overcast_model::client::CallResult;
use overcast_model::cosmos::{CosmosRequest, CosmosResponse, ItemOp};
use overcast_model::retry::FinalOutcome;
use overcast_sim::timeline::Tone;
use serde::{Deserialize, Serialize};

/// One item operation, flattened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemCall {
    /// `create`, `read`, `replace`, `upsert` or `delete`.
    pub op: String,
    /// The item id.
    pub id: String,
    /// The document written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// `if-match`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_match: Option<String>,
    /// `if-none-match` (reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_none_match: Option<String>,
}

impl ItemCall {
    /// The history form of one item operation.
    pub fn from_op(op: &ItemOp) -> ItemCall {
        let tag = |e: &Option<overcast_model::conditions::ETag>| e.as_ref().map(|e| e.0.clone());
        let (name, body, if_match, if_none_match) = match op {
            ItemOp::Create { body, .. } => ("create", Some(body.clone()), None, None),
            ItemOp::Read { if_none_match, .. } => ("read", None, None, tag(if_none_match)),
            ItemOp::Replace { body, if_match, .. } => {
                ("replace", Some(body.clone()), tag(if_match), None)
            }
            ItemOp::Upsert { body, if_match, .. } => {
                ("upsert", Some(body.clone()), tag(if_match), None)
            }
            ItemOp::Delete { if_match, .. } => ("delete", None, tag(if_match), None),
        };
        ItemCall {
            op: name.into(),
            id: op.id().to_string(),
            body,
            if_match,
            if_none_match,
        }
    }
}

/// A call: one item operation, or a transactional batch of several.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// The partition key.
    pub pk: String,
    /// `item` or `batch`.
    pub kind: String,
    /// The operations (one for `item`).
    pub ops: Vec<ItemCall>,
}

impl Call {
    /// The history form of a request.
    pub fn from_request(r: &CosmosRequest) -> Call {
        match r {
            CosmosRequest::Item {
                partition_key, op, ..
            } => Call {
                pk: partition_key.clone(),
                kind: "item".into(),
                ops: vec![ItemCall::from_op(op)],
            },
            CosmosRequest::Batch {
                partition_key, ops, ..
            } => Call {
                pk: partition_key.clone(),
                kind: "batch".into(),
                ops: ops.iter().map(ItemCall::from_op).collect(),
            },
        }
    }

    /// The history key: `pk/id` for an item operation, `pk` for a batch.
    pub fn key(&self) -> String {
        match (self.kind.as_str(), self.ops.as_slice()) {
            ("item", [op]) => item_key(&self.pk, &op.id),
            _ => self.pk.clone(),
        }
    }

    /// True for a point read (safe to re-send).
    pub fn is_read(&self) -> bool {
        self.kind == "item" && self.ops.iter().all(|o| o.op == "read")
    }
}

/// The linearizability key of one item.
pub fn item_key(pk: &str, id: &str) -> String {
    format!("{pk}/{id}")
}

/// What one operation returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpOutcome {
    /// Its status (424: rolled back with its batch).
    pub status: u16,
    /// `_etag`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The version behind `_etag`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// The document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// What the caller saw (an unknown outcome is no outcome at all).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    /// The status of the call.
    pub status: u16,
    /// One result per operation when the service answered (empty for a
    /// transient status surfaced by the SDK).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<OpOutcome>,
}

impl Outcome {
    /// The history form of a call's result; `None` for an unknown outcome.
    pub fn from_result(r: &CallResult<CosmosResponse>) -> Option<Outcome> {
        match r.outcome {
            // The workload never cancels a call: a cancelled one would be unknown too.
            FinalOutcome::Unknown { .. } | FinalOutcome::Cancelled { .. } => None,
            FinalOutcome::Response { status } => Some(Outcome {
                status,
                results: r
                    .response
                    .iter()
                    .flat_map(|resp| resp.results.iter())
                    .map(|o| OpOutcome {
                        status: o.status,
                        etag: o.item.as_ref().map(|i| i.etag.0.clone()),
                        version: o.item.as_ref().map(|i| i.version),
                        body: o.item.as_ref().and_then(|i| i.body.clone()),
                    })
                    .collect(),
            }),
        }
    }
}

/// A call in a few words: `upsert pk1/a If-Match …0003 → 200 v4`, a batch
/// as `batch pk1 [create a, replace b] → 200`.
pub fn words(call: &Call, result: Option<&Outcome>) -> (String, Tone) {
    let asked = match call.ops.as_slice() {
        [one] if call.kind == "item" => format!(
            "{} {}/{}{}",
            one.op,
            call.pk,
            one.id,
            conditions_words(one.if_match.as_deref(), one.if_none_match.as_deref())
        ),
        ops => format!(
            "batch {} [{}]",
            call.pk,
            ops.iter()
                .map(|o| format!("{} {}", o.op, o.id))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let seen = result.map(|r| {
        let mut seen = r.status.to_string();
        if let [one] = r.results.as_slice() {
            if let Some(v) = one.version {
                seen += &format!(" v{v}");
            }
        }
        (r.status, seen)
    });
    call_words(asked, seen)
}
