//! Change feed steps (SPEC §3): `feed_ranges`, `feed_read` (one page of the
//! pull model), `feed_split` (a range splits, a fault event), and the checks
//! of their scope, start and ranges.

use super::expect::continuation_value;
use super::{use_name, DateExpr, Expect, Kind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A feed range: its id, or a captured `$name`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RangeRef {
    /// A range id (`GetFeedRangesAsync` lists them).
    Id(u32),
    /// A captured `$name`.
    Captured(String),
}

/// `feed_ranges`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedRanges {
    /// The Cosmos container.
    pub container: String,
    /// The expected answer.
    pub expect: Expect,
}

/// `feed_read`: one page. The scope is a `range` or a `partition_key`
/// (exactly one); the start is `start` (`beginning` or `now`), `start_time` (a
/// date expression) or `continuation` (exactly one: the SDK's
/// `ChangeFeedStartFrom` is one of them).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedRead {
    /// The Cosmos container.
    pub container: String,
    /// A physical range (`FeedRange` from `GetFeedRangesAsync`).
    #[serde(default)]
    pub range: Option<RangeRef>,
    /// `FeedRange.FromPartitionKey`.
    #[serde(default)]
    pub partition_key: Option<String>,
    /// `beginning` or `now`.
    #[serde(default)]
    pub start: Option<String>,
    /// A point in time: a date expression (`start + 10s`).
    #[serde(default)]
    pub start_time: Option<String>,
    /// A continuation token: a captured `$name` or a literal.
    #[serde(default)]
    pub continuation: Option<String>,
    /// `PageSizeHint` (absent: no limit).
    #[serde(default)]
    pub page_size: Option<usize>,
    /// The expected answer.
    pub expect: Expect,
}

/// `feed_split`: range `range` of `container` splits into two children.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedSplit {
    /// The Cosmos container.
    pub container: String,
    /// The range.
    pub range: RangeRef,
    /// The expected answer.
    pub expect: Expect,
}

/// The start options of a `feed_read`.
pub const FEED_STARTS: [&str; 2] = ["beginning", "now"];

/// Checks a `feed_read`'s scope (one of range, partition key) and start (one
/// of start, start_time, continuation).
pub(super) fn validate_feed_read(
    r: &FeedRead,
    names: &BTreeMap<String, Kind>,
) -> Result<(), (&'static str, String)> {
    match (&r.range, &r.partition_key) {
        (Some(range), None) => use_range(names, range).map_err(|m| ("range", m))?,
        (None, Some(_)) => {}
        _ => return Err(("range", "name exactly one of range, partition_key".into())),
    }
    let starts = [
        r.start.is_some(),
        r.start_time.is_some(),
        r.continuation.is_some(),
    ];
    if starts.iter().filter(|s| **s).count() != 1 {
        return Err((
            "start",
            "name exactly one of start, start_time, continuation (ChangeFeedStartFrom is one of them)"
                .into(),
        ));
    }
    if let Some(s) = &r.start {
        if !FEED_STARTS.contains(&s.as_str()) {
            return Err(("start", format!("`{s}`: one of {}", FEED_STARTS.join(", "))));
        }
    }
    if let Some(t) = &r.start_time {
        let d = DateExpr::parse(t).map_err(|m| ("start_time", m))?;
        if let Some(n) = &d.var {
            use_name(names, n, Kind::Time).map_err(|m| ("start_time", m))?;
        }
    }
    if let Some(c) = &r.continuation {
        continuation_value(c, names).map_err(|m| ("continuation", m))?;
    }
    Ok(())
}

/// A range parameter: an id, or a `$name` captured as a range.
fn use_range(names: &BTreeMap<String, Kind>, r: &RangeRef) -> Result<(), String> {
    match r {
        RangeRef::Id(_) => Ok(()),
        RangeRef::Captured(n) if n.starts_with('$') => use_name(names, n, Kind::Range),
        RangeRef::Captured(n) => Err(format!("`{n}`: a range id or a captured $name")),
    }
}

/// Checks a `feed_split`'s range: an id, or a `$name` captured as a range.
pub(super) fn validate_split(
    r: &FeedSplit,
    kind: &str,
    names: &BTreeMap<String, Kind>,
) -> Result<(), (String, String)> {
    use_range(names, &r.range).map_err(|m| (format!("{kind}.range"), m))
}
