//! What a request step expects ([`Expect`]): the answer fields a script can
//! pin, how a field is compared ([`Compare`], [`DateExpr`]), the values a
//! capture binds ([`Field`], [`Captured`]), and the check of an expectation
//! against the step's kind and the names captured before it.

use super::{use_name, Kind};
use crate::conformance::time::{format_rfc1123, parse_duration, parse_rfc1123};
use overcast_model::conditions::Millis;
use overcast_model::queue::ItemStatus;
use overcast_sim::clock::EPOCH_MS;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// What a cancelled call did, as a step expects it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelledExpect {
    /// It certainly did not run.
    NotRun,
    /// It may have run.
    Unknown,
}

/// What a request step expects. Every field is optional: only what is given
/// is checked. `any_of` lists alternatives (SPEC's AMBIG rows): the step
/// passes if the top-level fields hold and one alternative holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The HTTP status the caller sees.
    #[serde(default)]
    pub status: Option<u16>,
    /// The `x-ms-error-code`.
    #[serde(default)]
    pub error_code: Option<String>,
    /// True: the SDK reports the outcome as unknown (a write that may or may not
    /// have committed); false: a known answer.
    #[serde(default)]
    pub unknown_outcome: Option<bool>,
    /// The caller cancelled the call (`cancel_next_call`): `not_run` (nothing
    /// of it was in flight, and nothing before may have run) or `unknown` (an
    /// attempt was in flight: it may have run). A cancelled call has no status.
    #[serde(default)]
    pub cancelled: Option<CancelledExpect>,
    /// How many attempts the SDK made.
    #[serde(default)]
    pub attempts: Option<usize>,
    /// Each wait the SDK inserted before a retry, in order, in ms of the
    /// client's (simulated) clock: `"5"` exactly, or `"11..14"` inclusive.
    /// One per retry: as many as attempts less one.
    #[serde(default)]
    pub waits: Option<Vec<String>>,
    /// The ETag: `fresh`, `same as $x`, `different from $x`, `present`,
    /// `absent`, or a literal ETag.
    #[serde(default)]
    pub etag: Option<String>,
    /// Last-Modified (compared at 1 s): `same as $t`, `different from $t`,
    /// `present`, `absent`, or a date expression.
    #[serde(default)]
    pub last_modified: Option<String>,
    /// The body, exactly.
    #[serde(default)]
    pub body: Option<String>,
    /// True: the answer carries no body.
    #[serde(default)]
    pub no_body: Option<bool>,
    /// True: the answer carries no `x-ms-error-code` (a HEAD's never does);
    /// false: it carries one.
    #[serde(default)]
    pub no_error_code: Option<bool>,
    /// A blob's metadata, exactly (Get Blob and Get Blob Properties 200s).
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    /// `x-ms-lease-id` of a lease answer: `fresh` (never seen before on this
    /// resource), `same as $l`, `different from $l`, `present`, `absent`, or a
    /// literal (compared as a GUID, without case).
    #[serde(default)]
    pub lease_id: Option<String>,
    /// `x-ms-lease-state` after the request: `available`, `leased`, `expired`,
    /// `breaking` or `broken`.
    #[serde(default)]
    pub lease_state: Option<String>,
    /// `x-ms-lease-status` after the request: `locked` or `unlocked`.
    #[serde(default)]
    pub lease_status: Option<String>,
    /// `x-ms-lease-duration` after the request: `infinite`, `fixed`, a fixed
    /// duration in seconds (`15s`), or `absent` (not leased).
    #[serde(default)]
    pub lease_duration: Option<String>,
    /// `x-ms-lease-time` of a break: whole seconds until the lease is broken.
    #[serde(default)]
    pub lease_time: Option<u64>,
    /// A Search index's fields, as a set.
    #[serde(default)]
    pub fields: Option<Vec<String>>,
    /// A Search synonym map's rules, as a set.
    #[serde(default)]
    pub synonyms: Option<Vec<String>>,
    /// A Cosmos batch: one expectation per operation, in order (`status`,
    /// `etag`, `body`, `no_body`, `capture`).
    #[serde(default)]
    pub results: Option<Vec<Expect>>,
    /// Binds response fields to names for later steps: `{"etag": "$e1"}`.
    #[serde(default)]
    pub capture: BTreeMap<String, String>,
    /// Alternatives: the step passes if one of them holds (with the fields above).
    #[serde(default)]
    pub any_of: Vec<Expect>,
    /// Why there are alternatives (e.g. `AMBIG-2`); not checked.
    #[serde(default)]
    pub note: Option<String>,
    /// The SPEC cells or rows this step reaches (e.g. `2.3 renew A / expired`);
    /// not checked by the runner: `tests/services/scripts.rs` requires every cell of the
    /// lease tables and every row of §1.2 and §1.3 to be reached by some script,
    /// and checks the lease state each lease cell claims.
    #[serde(default)]
    pub covers: Vec<String>,
    /// Queue push and index: the item's status after the request.
    #[serde(default)]
    pub item_status: Option<ItemStatus>,
    /// A poll's items or a feed page's, exactly and in order.
    #[serde(default)]
    pub items: Option<Vec<ItemExpect>>,
    /// A long-running operation's name: `fresh`, `same as $o1`, ...
    #[serde(default)]
    pub operation: Option<String>,
    /// Whether the operation is done.
    #[serde(default)]
    pub done: Option<bool>,
    /// A feed page's continuation: `same as $c1`, `different from $c1`,
    /// `present`, `absent`, or a literal token.
    #[serde(default)]
    pub continuation: Option<String>,
    /// A feed answer's sub-status (1002 with a split range's 410).
    #[serde(default)]
    pub sub_status: Option<u32>,
    /// Feed ranges by id: `feed_ranges`'s list, a split's or a 410's children.
    #[serde(default)]
    pub ranges: Option<Vec<u32>>,
    /// After an `account` step, a Cosmos request's attempts: the region each
    /// went to, in order.
    #[serde(default)]
    pub regions: Option<Vec<String>>,
}

impl Expect {
    /// Checks the regions a request's attempts went to, one per attempt
    /// (`None`: it did not go through an account's regions), against the
    /// step's `regions`, when it names them.
    pub fn check_regions(&self, got: Option<&[String]>) -> Result<(), String> {
        let Some(want) = &self.regions else {
            return Ok(());
        };
        let Some(got) = got else {
            return Err("the request did not go through the account's regions".into());
        };
        if got != want.as_slice() {
            return Err(format!(
                "the attempts went to [{}], not [{}]",
                got.join(", "),
                want.join(", ")
            ));
        }
        Ok(())
    }
}

/// One wait a script expects before a retry: from `lo` to `hi` ms, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitExpect {
    /// The shortest wait that passes, ms.
    pub lo: u64,
    /// The longest wait that passes, ms.
    pub hi: u64,
}

impl WaitExpect {
    /// Parses `5` (exactly 5 ms) or `11..14` (11 to 14 ms inclusive).
    pub fn parse(s: &str) -> Result<WaitExpect, String> {
        let s = s.trim();
        let ms = |v: &str| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| format!("`{s}`: expected ms like 5, or a range like 11..14"))
        };
        let (lo, hi) = match s.split_once("..") {
            Some((a, b)) => (ms(a)?, ms(b)?),
            None => (ms(s)?, ms(s)?),
        };
        if lo > hi {
            return Err(format!("`{s}`: the range is empty ({lo} > {hi})"));
        }
        Ok(WaitExpect { lo, hi })
    }

    /// True when `ms` is in the range.
    pub fn holds(self, ms: u64) -> bool {
        (self.lo..=self.hi).contains(&ms)
    }
}

/// A response field a capture can bind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Field {
    /// The ETag.
    Etag,
    /// Last-Modified.
    LastModified,
    /// A lease id (`x-ms-lease-id`).
    LeaseId,
    /// A long-running operation's name.
    Operation,
    /// A feed page's continuation token.
    Continuation,
    /// The id of the n-th item returned (0-based): `items[0]`.
    Item(usize),
    /// The id of the n-th range listed (0-based): `ranges[0]`.
    Range(usize),
}

impl Field {
    /// The field called `name` in a script.
    pub fn parse(name: &str) -> Option<Field> {
        match name {
            "etag" => Some(Field::Etag),
            "last_modified" => Some(Field::LastModified),
            "lease_id" => Some(Field::LeaseId),
            "operation" => Some(Field::Operation),
            "continuation" => Some(Field::Continuation),
            _ => {
                let index = |prefix: &str| {
                    name.strip_prefix(prefix)?
                        .strip_suffix(']')?
                        .parse::<usize>()
                        .ok()
                };
                index("items[")
                    .map(Field::Item)
                    .or_else(|| index("ranges[").map(Field::Range))
            }
        }
    }

    /// The name of its family in [`answer_fields`] (`items[N]` for any item).
    fn family(self) -> &'static str {
        match self {
            Field::Etag => "etag",
            Field::LastModified => "last_modified",
            Field::LeaseId => "lease_id",
            Field::Operation => "operation",
            Field::Continuation => "continuation",
            Field::Item(_) => "items[N]",
            Field::Range(_) => "ranges[N]",
        }
    }

    fn kind(self) -> Kind {
        match self {
            Field::Etag => Kind::Etag,
            Field::LastModified => Kind::Time,
            Field::LeaseId => Kind::LeaseId,
            Field::Operation => Kind::Operation,
            Field::Continuation => Kind::Continuation,
            Field::Item(_) => Kind::Item,
            Field::Range(_) => Kind::Range,
        }
    }
}

/// How a field is compared with the answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Compare {
    /// Never seen before for this resource (ETags).
    Fresh,
    /// Equal to a captured value.
    SameAs(String),
    /// Not equal to a captured value.
    DifferentFrom(String),
    /// The field is there.
    Present,
    /// The field is not there.
    Absent,
    /// Equal to this literal (an ETag, or a date expression for dates).
    Literal(String),
}

impl Compare {
    /// Parses a comparison of `field`.
    pub fn parse(s: &str, field: Field) -> Result<Compare, String> {
        let s = s.trim();
        let var = |rest: &str| -> Result<String, String> {
            let rest = rest.trim();
            if rest.starts_with('$') && rest.len() > 1 && !rest.contains(char::is_whitespace) {
                Ok(rest.to_string())
            } else {
                Err(format!("`{s}`: expected a captured name like $e1 after it"))
            }
        };
        Ok(match s {
            "fresh" if matches!(field, Field::Etag | Field::LeaseId | Field::Operation) => {
                Compare::Fresh
            }
            "fresh" => return Err("`fresh` applies to ETags, lease ids and operations only".into()),
            "present" => Compare::Present,
            "absent" => Compare::Absent,
            _ => {
                if let Some(rest) = s.strip_prefix("same as ") {
                    Compare::SameAs(var(rest)?)
                } else if let Some(rest) = s.strip_prefix("different from ") {
                    Compare::DifferentFrom(var(rest)?)
                } else {
                    if field == Field::LastModified {
                        DateExpr::parse(s)?;
                    }
                    Compare::Literal(s.to_string())
                }
            }
        })
    }
}

/// A date in a script: a base (`$t1`: a captured Last-Modified; `start`: the
/// simulation's start, Thu, 01 Jan 2026 00:00:00 GMT; or an RFC 1123 date)
/// with an optional offset (`$t1 - 1s`, `start + 90s`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DateExpr {
    /// A captured name, or `None` for a fixed date.
    pub var: Option<String>,
    /// The fixed date (ms since the epoch), when `var` is `None`.
    pub fixed: Millis,
    /// Added to the base, ms.
    pub offset_ms: i64,
}

impl DateExpr {
    /// Parses a date expression.
    pub fn parse(s: &str) -> Result<DateExpr, String> {
        let s = s.trim();
        // The offset is the last ` + N` / ` - N` (RFC 1123 dates hold no ` + `).
        let (base, offset_ms) = match s.rfind(" + ").or_else(|| s.rfind(" - ")) {
            Some(i) => {
                let sign = if &s[i..i + 3] == " + " { 1 } else { -1 };
                (s[..i].trim(), sign * parse_duration(&s[i + 3..])?)
            }
            None => (s, 0),
        };
        if base.starts_with('$') {
            if base.len() < 2 || base.contains(char::is_whitespace) {
                return Err(format!("`{s}`: a captured name like $t1 has no spaces"));
            }
            return Ok(DateExpr {
                var: Some(base.to_string()),
                fixed: 0,
                offset_ms,
            });
        }
        let fixed = if base == "start" {
            EPOCH_MS
        } else {
            parse_rfc1123(base)?
        };
        Ok(DateExpr {
            var: None,
            fixed,
            offset_ms,
        })
    }
}

/// A value captured from an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Captured {
    /// An ETag as the server sent it.
    Etag(String),
    /// A Last-Modified (server ms).
    Time(Millis),
    /// A lease id as the server sent it.
    LeaseId(String),
    /// A long-running operation's name.
    Operation(String),
    /// A feed continuation token.
    Continuation(u64),
    /// An item's id (a queue item's name, a feed item's `id`).
    Item(String),
    /// A feed range's id.
    Range(u32),
}

impl fmt::Display for Captured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Captured::Etag(e)
            | Captured::LeaseId(e)
            | Captured::Operation(e)
            | Captured::Item(e) => f.write_str(e),
            Captured::Time(t) => f.write_str(&format_rfc1123(*t)),
            Captured::Continuation(c) => write!(f, "{c}"),
            Captured::Range(r) => write!(f, "{r}"),
        }
    }
}

/// One item a poll or a feed page is expected to return: its id (a literal
/// or a captured `$name`), or an object with the id and the fields to pin.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ItemExpect {
    /// Only the id (the queue item's name, the feed item's `id`).
    Id(String),
    /// The id and fields.
    Fields(ItemFields),
}

impl ItemExpect {
    /// The expected id.
    pub fn id(&self) -> &str {
        match self {
            ItemExpect::Id(id) => id,
            ItemExpect::Fields(f) => &f.id,
        }
    }
}

/// A number or a text (a version: a queue item's is a byte string, a feed
/// item's a number).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    /// A number.
    Number(u64),
    /// A text.
    Text(String),
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Number(n) => write!(f, "{n}"),
            Scalar::Text(t) => f.write_str(t),
        }
    }
}

/// The fields of one expected item; only those given are checked.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemFields {
    /// The id.
    pub id: String,
    /// Queue: its status.
    #[serde(default)]
    pub status: Option<ItemStatus>,
    /// Queue: the indexed version; feed: the item's version (behind `_etag`).
    #[serde(default)]
    pub version: Option<Scalar>,
    /// Queue: its queue label.
    #[serde(default)]
    pub queue: Option<String>,
    /// Queue: its payload.
    #[serde(default)]
    pub payload: Option<String>,
    /// Feed: its partition key.
    #[serde(default)]
    pub partition_key: Option<String>,
    /// Feed: the document.
    #[serde(default)]
    pub body: Option<String>,
}

/// The answer fields a step kind's `expect` may name (besides `status`,
/// `unknown_outcome`, `attempts`, `waits`, `capture`, `any_of`, `note` and `covers`,
/// which every request step takes), and the fields a capture may bind.
fn answer_fields(kind: &str) -> (&'static [&'static str], &'static [&'static str]) {
    const BLOB: &[&str] = &[
        "error_code",
        "no_error_code",
        "etag",
        "last_modified",
        "body",
        "no_body",
    ];
    const READ: &[&str] = &[
        "error_code",
        "no_error_code",
        "etag",
        "last_modified",
        "body",
        "no_body",
        "metadata",
    ];
    const LEASE: &[&str] = &[
        "error_code",
        "lease_id",
        "lease_state",
        "lease_status",
        "lease_duration",
        "lease_time",
    ];
    match kind {
        "create_container" => (&["error_code"], &[]),
        "put_blob" | "delete_blob" | "set_blob_metadata" => (BLOB, &["etag", "last_modified"]),
        "get_blob" | "get_blob_properties" => (READ, &["etag", "last_modified"]),
        "lease_blob" | "lease_container" | "delete_container" | "set_container_metadata" => {
            (LEASE, &["lease_id"])
        }
        "cosmos_batch" => (&["results", "regions"], &[]),
        "cosmos_batch_result" => (&["etag", "body", "no_body"], &["etag"]),
        k if k.starts_with("cosmos_") => (&["etag", "body", "no_body", "regions"], &["etag"]),
        k if k.starts_with("search_") => (&["etag", "fields", "synonyms"], &["etag"]),
        "queue_push" | "queue_index" => (&["error_code", "item_status"], &[]),
        "queue_poll" => (&["error_code", "items"], &["items[N]"]),
        "queue_delete_queue_items" | "queue_get_operation" => {
            (&["error_code", "operation", "done"], &["operation"])
        }
        k if k.starts_with("queue_") => (&["error_code"], &[]),
        "feed_ranges" | "feed_split" => (&["ranges"], &["ranges[N]"]),
        "feed_read" => (
            &["sub_status", "items", "continuation", "ranges"],
            &["continuation", "items[N]", "ranges[N]"],
        ),
        _ => (&[], &[]),
    }
}

/// The answer fields `e` names (those [`answer_fields`] restricts).
fn named_fields(e: &Expect) -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut add = |name: &'static str, present: bool| {
        if present {
            out.push(name)
        }
    };
    add("error_code", e.error_code.is_some());
    add("etag", e.etag.is_some());
    add("last_modified", e.last_modified.is_some());
    add("body", e.body.is_some());
    add("no_body", e.no_body.is_some());
    add("no_error_code", e.no_error_code.is_some());
    add("metadata", e.metadata.is_some());
    add("lease_id", e.lease_id.is_some());
    add("lease_state", e.lease_state.is_some());
    add("lease_status", e.lease_status.is_some());
    add("lease_duration", e.lease_duration.is_some());
    add("lease_time", e.lease_time.is_some());
    add("fields", e.fields.is_some());
    add("synonyms", e.synonyms.is_some());
    add("results", e.results.is_some());
    add("item_status", e.item_status.is_some());
    add("items", e.items.is_some());
    add("operation", e.operation.is_some());
    add("done", e.done.is_some());
    add("continuation", e.continuation.is_some());
    add("sub_status", e.sub_status.is_some());
    add("ranges", e.ranges.is_some());
    add("regions", e.regions.is_some());
    out
}

/// The lease states a script names.
pub const LEASE_STATES: [&str; 5] = ["available", "leased", "expired", "breaking", "broken"];

/// Parses a `lease_duration` expectation: `infinite`, `fixed`, `absent`, or
/// `Ns` (a fixed lease of N seconds).
pub fn parse_lease_duration(v: &str) -> Result<LeaseDurationExpect, String> {
    Ok(match v.trim() {
        "infinite" => LeaseDurationExpect::Infinite,
        "fixed" => LeaseDurationExpect::Fixed(None),
        "absent" => LeaseDurationExpect::Absent,
        other => {
            let secs = other
                .strip_suffix('s')
                .and_then(|n| n.parse::<u32>().ok())
                .ok_or_else(|| {
                    format!("`{other}`: expected infinite, fixed, absent or seconds like 15s")
                })?;
            LeaseDurationExpect::Fixed(Some(secs))
        }
    })
}

/// An expected `x-ms-lease-duration`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseDurationExpect {
    /// Infinite.
    Infinite,
    /// Fixed (of this many seconds, when given).
    Fixed(Option<u32>),
    /// No duration reported (not leased).
    Absent,
}

/// Checks one expectation against the names captured by earlier steps
/// (`names`); adds the names it captures to `captured`.
pub(super) fn validate_expect(
    e: &Expect,
    kind: &str,
    path: &str,
    names: &BTreeMap<String, Kind>,
    captured: &mut Vec<(String, Kind)>,
) -> Result<(), (String, String)> {
    let (allowed, capturable) = answer_fields(kind);
    for f in named_fields(e) {
        if !allowed.contains(&f) {
            return Err((
                format!("{path}.{f}"),
                format!(
                    "a {kind} answer has no {f} (it has: {})",
                    allowed.join(", ")
                ),
            ));
        }
    }
    let check = |field: Field,
                 v: &Option<String>,
                 f: &str,
                 names: &BTreeMap<String, Kind>|
     -> Result<(), (String, String)> {
        let Some(v) = v else { return Ok(()) };
        let at = |m| (format!("{path}.{f}"), m);
        match Compare::parse(v, field).map_err(at)? {
            Compare::SameAs(n) | Compare::DifferentFrom(n) => {
                use_name(names, &n, field.kind()).map_err(at)?
            }
            Compare::Literal(l) if field == Field::LastModified => {
                if let Some(n) = DateExpr::parse(&l).map_err(at)?.var {
                    use_name(names, &n, field.kind()).map_err(at)?
                }
            }
            Compare::Literal(l) if l.starts_with('$') => {
                return Err(at(format!(
                    "`{l}`: write `same as {l}` to compare with a captured value"
                )))
            }
            _ => {}
        }
        Ok(())
    };
    check(Field::Etag, &e.etag, "etag", names)?;
    check(
        Field::LastModified,
        &e.last_modified,
        "last_modified",
        names,
    )?;
    check(Field::LeaseId, &e.lease_id, "lease_id", names)?;
    check(Field::Operation, &e.operation, "operation", names)?;
    if let Some(c) = &e.continuation {
        let at = |m| (format!("{path}.continuation"), m);
        match Compare::parse(c, Field::Continuation).map_err(at)? {
            Compare::SameAs(n) | Compare::DifferentFrom(n) => {
                use_name(names, &n, Kind::Continuation).map_err(at)?
            }
            Compare::Literal(l) => continuation_value(&l, names).map_err(at)?,
            _ => {}
        }
    }
    if let Some(items) = &e.items {
        for (i, item) in items.iter().enumerate() {
            let at = |f: &str, m: String| (format!("{path}.items[{i}]{f}"), m);
            let id = item.id().trim();
            if id.starts_with('$') {
                use_name(names, id, Kind::Item).map_err(|m| at("", m))?;
            }
            let ItemExpect::Fields(f) = item else {
                continue;
            };
            let queue_fields = [
                ("status", f.status.is_some()),
                ("queue", f.queue.is_some()),
                ("payload", f.payload.is_some()),
            ];
            let feed_fields = [
                ("partition_key", f.partition_key.is_some()),
                ("body", f.body.is_some()),
            ];
            let foreign = if kind == "queue_poll" {
                &feed_fields[..]
            } else {
                &queue_fields[..]
            };
            if let Some((name, _)) = foreign.iter().find(|(_, present)| *present) {
                return Err(at(
                    &format!(".{name}"),
                    format!("a {kind} item has no {name}"),
                ));
            }
            if kind == "feed_read" && matches!(f.version, Some(Scalar::Text(_))) {
                return Err(at(".version", "a feed item's version is a number".into()));
            }
        }
    }
    if let Some(v) = &e.lease_state {
        if !LEASE_STATES.contains(&v.as_str()) {
            return Err((
                format!("{path}.lease_state"),
                format!("`{v}`: one of {}", LEASE_STATES.join(", ")),
            ));
        }
    }
    if let Some(v) = &e.lease_status {
        if v != "locked" && v != "unlocked" {
            return Err((
                format!("{path}.lease_status"),
                format!("`{v}`: locked or unlocked"),
            ));
        }
    }
    if let Some(v) = &e.lease_duration {
        parse_lease_duration(v).map_err(|m| (format!("{path}.lease_duration"), m))?;
    }
    if let Some(waits) = &e.waits {
        for (i, w) in waits.iter().enumerate() {
            WaitExpect::parse(w).map_err(|m| (format!("{path}.waits[{i}]"), m))?;
        }
        if let Some(n) = e.attempts {
            if waits.len() + 1 != n {
                return Err((
                    format!("{path}.waits"),
                    format!(
                        "{} wait(s) for {n} attempt(s): one wait before each retry",
                        waits.len()
                    ),
                ));
            }
        }
    }
    for (i, alt) in e.any_of.iter().enumerate() {
        if !alt.any_of.is_empty() {
            return Err((
                format!("{path}.any_of[{i}].any_of"),
                "alternatives do not nest".into(),
            ));
        }
        validate_expect(alt, kind, &format!("{path}.any_of[{i}]"), names, captured)?;
    }
    if let Some(results) = &e.results {
        for (i, r) in results.iter().enumerate() {
            let at = format!("{path}.results[{i}]");
            if !r.any_of.is_empty() || r.results.is_some() {
                return Err((at, "a result takes no any_of or results".into()));
            }
            if r.unknown_outcome.is_some() || r.attempts.is_some() || r.waits.is_some() {
                return Err((
                    at,
                    "a result has no unknown_outcome, attempts or waits (the batch has)".into(),
                ));
            }
            validate_expect(r, "cosmos_batch_result", &at, names, captured)?;
        }
    }
    for (field, name) in &e.capture {
        let at = |m: String| (format!("{path}.capture.{field}"), m);
        let f = Field::parse(field)
            .filter(|f| capturable.contains(&f.family()))
            .ok_or_else(|| {
                at(format!(
                    "a {kind} answer has no field `{field}` to capture ({})",
                    if capturable.is_empty() {
                        "none can be".to_string()
                    } else {
                        capturable.join(", ")
                    }
                ))
            })?;
        if !name.starts_with('$') || name.len() < 2 || name.contains(char::is_whitespace) {
            return Err(at(format!("`{name}`: a name starts with $, like $e1")));
        }
        if names.contains_key(name) || captured.iter().any(|(n, _)| n == name) {
            return Err(at(format!("{name} is captured twice")));
        }
        captured.push((name.clone(), f.kind()));
    }
    Ok(())
}

/// A continuation as written: a `$name` captured as one, or a token (a number).
pub(super) fn continuation_value(c: &str, names: &BTreeMap<String, Kind>) -> Result<(), String> {
    let c = c.trim();
    if c.starts_with('$') {
        use_name(names, c, Kind::Continuation)
    } else {
        c.parse::<u64>()
            .map(|_| ())
            .map_err(|_| format!("`{c}`: a captured $name or a token (a number)"))
    }
}
