//! Indexing-queue steps (SPEC §5): `queue_create_datasource`, `queue_push`,
//! `queue_poll`, `queue_index`, `queue_delete`, `queue_unreserve`,
//! `queue_delete_queue_items`, `queue_get_operation`, their text parameters
//! (a literal or a repeat, to reach the argument limits), and the checks of
//! their parameters.

use super::{use_name, use_value, Expect, Kind};
use crate::conformance::time::parse_duration;
use overcast_model::queue::{ItemStatus, PushType};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A text parameter of a queue step: a literal, or `{"repeat": "x", "times": 101}`
/// (the literal repeated, to reach the argument limits without writing them out).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Text {
    /// The text as written (an item name may be a captured `$name`).
    Literal(String),
    /// `repeat` written `times` times.
    Repeat(Repeat),
}

/// `{"repeat": "x", "times": 101}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Repeat {
    /// The text to repeat.
    pub repeat: String,
    /// How many times.
    pub times: usize,
}

impl Text {
    /// The text it stands for (a captured name is resolved by the runner).
    pub fn expand(&self) -> String {
        match self {
            Text::Literal(s) => s.clone(),
            Text::Repeat(r) => r.repeat.repeat(r.times),
        }
    }

    /// The captured `$name` it is, if it is one.
    pub fn captured_name(&self) -> Option<&str> {
        match self {
            Text::Literal(s) if s.trim().starts_with('$') => Some(s.trim()),
            _ => None,
        }
    }
}

/// The three hashes of a push (compared with the indexed ones) or an index
/// (stored): `metadataHash`, `structuredDataHash`, `contentHash`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueHashes {
    /// `metadataHash`.
    #[serde(default)]
    pub metadata: Option<Text>,
    /// `structuredDataHash`.
    #[serde(default)]
    pub structured_data: Option<Text>,
    /// `contentHash`.
    #[serde(default)]
    pub content: Option<Text>,
}

/// `queue_create_datasource`: a datasource and its settings (durations like `1s`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueDatasource {
    /// The datasource.
    pub datasource: String,
    /// The 4 h reservation and the 7-day soft delete are divided by this (default 1).
    #[serde(default)]
    pub time_scale: Option<u64>,
    /// The first REPOSITORY_ERROR backoff (default `1s`); it doubles with each one more.
    #[serde(default)]
    pub backoff: Option<String>,
    /// The longest backoff (default `60s`).
    #[serde(default)]
    pub max_backoff: Option<String>,
    /// How long a `deleteQueueItems` runs before it is done (default `0ms`:
    /// done by the next request).
    #[serde(default)]
    pub delete_takes: Option<String>,
    /// The expected answer.
    pub expect: Expect,
}

/// `queue_push`: `items.push` of one item.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueuePush {
    /// The datasource.
    pub datasource: String,
    /// The item's name (a literal, a captured `$name`, or a repeat).
    pub item: Text,
    /// `type`: `MODIFIED`, `NOT_MODIFIED`, `REPOSITORY_ERROR`, `REQUEUE`,
    /// `UNSPECIFIED` (absent: none, the same as `UNSPECIFIED`).
    #[serde(default, rename = "type")]
    pub push_type: Option<PushType>,
    /// The hashes to compare with the indexed ones.
    #[serde(default)]
    pub hashes: Option<QueueHashes>,
    /// `payload`.
    #[serde(default)]
    pub payload: Option<Text>,
    /// `queue` (absent: the default queue).
    #[serde(default)]
    pub queue: Option<Text>,
    /// `repositoryError` (the service accepts it only with REPOSITORY_ERROR).
    #[serde(default)]
    pub repository_error: Option<String>,
    /// The expected answer.
    pub expect: Expect,
}

/// `queue_poll`: `items.poll`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueuePoll {
    /// The datasource.
    pub datasource: String,
    /// `queue` (absent: the default queue).
    #[serde(default)]
    pub queue: Option<Text>,
    /// `statusCodes` (empty or absent: every status).
    #[serde(default)]
    pub statuses: Vec<ItemStatus>,
    /// `limit` (absent or 0: 20; at most 100).
    #[serde(default)]
    pub limit: Option<u32>,
    /// The expected answer.
    pub expect: Expect,
}

/// `queue_index`: `items.index` (a full replace).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueIndex {
    /// The datasource.
    pub datasource: String,
    /// The item's name.
    pub item: Text,
    /// `version`, compared bytewise with the indexed one.
    pub version: Text,
    /// `item.queue` (absent: unchanged, or default for a new item).
    #[serde(default)]
    pub queue: Option<Text>,
    /// The content (default empty).
    #[serde(default)]
    pub content: Option<String>,
    /// The hashes to store.
    #[serde(default)]
    pub hashes: Option<QueueHashes>,
    /// The expected answer.
    pub expect: Expect,
}

/// `queue_delete`: `items.delete`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueDelete {
    /// The datasource.
    pub datasource: String,
    /// The item's name.
    pub item: Text,
    /// `version`, compared bytewise with the indexed one.
    pub version: Text,
    /// The expected answer.
    pub expect: Expect,
}

/// `queue_unreserve`, `queue_delete_queue_items`: a method on one queue.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueOp {
    /// The datasource.
    pub datasource: String,
    /// `queue` (absent: the default queue).
    #[serde(default)]
    pub queue: Option<Text>,
    /// The expected answer.
    pub expect: Expect,
}

/// `queue_get_operation`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueGetOperation {
    /// The datasource the operation belongs to.
    pub datasource: String,
    /// The operation's name: a captured `$name` or a literal.
    pub operation: String,
    /// The expected answer.
    pub expect: Expect,
}

/// Checks a `queue_create_datasource`'s durations: well-formed, not negative.
pub(super) fn validate_datasource(d: &QueueDatasource, kind: &str) -> Result<(), (String, String)> {
    for (f, v) in [
        ("backoff", &d.backoff),
        ("max_backoff", &d.max_backoff),
        ("delete_takes", &d.delete_takes),
    ] {
        if let Some(v) = v {
            let ms = parse_duration(v).map_err(|m| (format!("{kind}.{f}"), m))?;
            if ms < 0 {
                return Err((format!("{kind}.{f}"), "not negative".into()));
            }
        }
    }
    Ok(())
}

/// Checks the item of a `queue_push`, `queue_index` or `queue_delete`: a
/// captured `$name` must hold an item id.
pub(super) fn validate_item(
    item: &Text,
    kind: &str,
    names: &BTreeMap<String, Kind>,
) -> Result<(), (String, String)> {
    if let Some(n) = item.captured_name() {
        use_name(names, n, Kind::Item).map_err(|m| (format!("{kind}.item"), m))?;
    }
    Ok(())
}

/// Checks a `queue_get_operation`'s operation: a literal, or a `$name`
/// captured as an operation.
pub(super) fn validate_get_operation(
    o: &QueueGetOperation,
    kind: &str,
    names: &BTreeMap<String, Kind>,
) -> Result<(), (String, String)> {
    use_value(names, &o.operation, Kind::Operation).map_err(|m| (format!("{kind}.operation"), m))
}
