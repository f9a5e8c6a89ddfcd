//! The script format, version 1: a JSON document of steps run in order.
//!
//! Every step is an object with exactly one key, the step's kind:
//! a request in the service's vocabulary (`put_blob`, `get_blob`, ...) whose
//! object holds the request's parameters and its `expect`ation; `advance`
//! (move the server's and the client's clocks); `crash_server`;
//! `drop_next_reply`; `inject` (the relay answers attempts itself);
//! `account` (Cosmos requests go through a multi-region account). Parsing
//! goes through `serde_path_to_error` with every struct denying unknown
//! fields, and a second pass ([`Script::validate`])
//! checks what serde cannot (value syntax, names used before capture), so a
//! malformed script names the step and the field.
//!
//! This file holds the document ([`Script`], [`Step`]), the steps that are
//! no service's (`advance`, `crash_server`, `drop_next_reply`, `inject`;
//! `account` and what `inject` answers with are in `account`),
//! the Blob condition headers that Blob requests and blob lease actions share, and the
//! validation pass; `expect` holds what a request step expects, and one file
//! per service (`blob`, `lease`, `cosmos`, `search`, `queue`, `feed`) holds
//! that service's step parameters and their checks. Services use this core;
//! the core names them only in [`Step`]'s arms and in `validate_step`, the
//! one match that sends a step to its service's checks.
//!
//! A new service adds its operations as new [`Step`] arms (a parameter
//! struct with an `expect: Expect` field, plus the request it sends in
//! `super::run`), and any new response field worth pinning as a field of
//! [`Expect`] and a [`Field`] a capture can bind.

mod account;
mod blob;
mod cosmos;
mod expect;
mod feed;
mod lease;
mod queue;
mod search;

pub use account::{Account, Consistency, InjectEvent, InjectStatus};
pub use blob::{BlobOp, CreateContainer};
pub use cosmos::{BatchItem, BatchOp, CosmosBatch, CosmosOp};
pub use expect::{
    parse_lease_duration, CancelledExpect, Captured, Compare, DateExpr, Expect, Field, ItemExpect,
    ItemFields, LeaseDurationExpect, Scalar, WaitExpect, LEASE_STATES,
};
pub use feed::{FeedRanges, FeedRead, FeedSplit, RangeRef, FEED_STARTS};
pub use lease::{ContainerOp, LeaseOp, LEASE_ACTIONS};
pub use queue::{
    QueueDatasource, QueueDelete, QueueGetOperation, QueueHashes, QueueIndex, QueueOp, QueuePoll,
    QueuePush, Repeat, Text,
};
pub use search::SearchOp;

use super::time::parse_duration;
use expect::validate_expect;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The one format this runner reads.
pub const FORMAT: &str = "overcast-script/1";

/// A conformance script.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Must be [`FORMAT`].
    pub format: String,
    /// What the script pins, one line.
    pub name: String,
    /// Where the expected answers come from (a SPEC section, an issue, a seed).
    #[serde(default)]
    pub source: String,
    /// Containers that exist from the start (provisioned, not logged).
    #[serde(default)]
    pub containers: Vec<String>,
    /// Seeded model bugs switched on (names of `ModelBugs`), to show a script catches one.
    #[serde(default)]
    pub bugs: Vec<String>,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// One step.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Create Container.
    CreateContainer(CreateContainer),
    /// Put Blob (an upsert: 201 Created, whether it created or replaced).
    PutBlob(BlobOp),
    /// Get Blob (read conditions, SPEC §1.1.4).
    GetBlob(BlobOp),
    /// Delete Blob (write conditions).
    DeleteBlob(BlobOp),
    /// Get Blob Properties, a HEAD (Get Blob's read conditions; no body, so no
    /// error code on any status).
    GetBlobProperties(BlobOp),
    /// Set Blob Metadata (write conditions and the lease rules of a write;
    /// `metadata` replaces the blob's).
    SetBlobMetadata(BlobOp),
    /// Lease Blob: one lease action on a blob (SPEC §2.2–§2.4).
    LeaseBlob(LeaseOp),
    /// Lease Container: one lease action on a container (SPEC §2.7).
    LeaseContainer(LeaseOp),
    /// Delete Container, with an optional lease id (the one container
    /// operation a container lease gates, SPEC §2.7).
    DeleteContainer(ContainerOp),
    /// Set Container Metadata, with an optional lease id (never blocked
    /// without one, SPEC §2.7).
    SetContainerMetadata(ContainerOp),
    /// Cosmos `CreateItemAsync` (SPEC §1.3).
    CosmosCreate(CosmosOp),
    /// Cosmos `ReadItemAsync`, with an optional `if_none_match`.
    CosmosRead(CosmosOp),
    /// Cosmos `ReplaceItemAsync`, with an optional `if_match`.
    CosmosReplace(CosmosOp),
    /// Cosmos `UpsertItemAsync`, with an optional `if_match`.
    CosmosUpsert(CosmosOp),
    /// Cosmos `DeleteItemAsync`, with an optional `if_match`.
    CosmosDelete(CosmosOp),
    /// A Cosmos transactional batch on one partition key (all or nothing).
    CosmosBatch(CosmosBatch),
    /// Search: GET an index or a synonym map (SPEC §1.2).
    SearchGet(SearchOp),
    /// Search: PUT (create or update) an index or a synonym map.
    SearchPut(SearchOp),
    /// Search: DELETE an index or a synonym map.
    SearchDelete(SearchOp),
    /// Indexing queues: create a datasource with its settings (SPEC §5; the
    /// service's provisioning, as containers are the store's).
    QueueCreateDatasource(QueueDatasource),
    /// Indexing queues: `items.push` (SPEC §5.2).
    QueuePush(QueuePush),
    /// Indexing queues: `items.poll` (SPEC §5.3).
    QueuePoll(QueuePoll),
    /// Indexing queues: `items.index` (SPEC §5.4).
    QueueIndex(QueueIndex),
    /// Indexing queues: `items.delete` (SPEC §5.4).
    QueueDelete(QueueDelete),
    /// Indexing queues: `items.unreserve` (SPEC §5.4).
    QueueUnreserve(QueueOp),
    /// Indexing queues: `items.deleteQueueItems`, a long-running operation (SPEC §5.4).
    QueueDeleteQueueItems(QueueOp),
    /// Indexing queues: `operations.get` of a `deleteQueueItems`.
    QueueGetOperation(QueueGetOperation),
    /// Change feed: `GetFeedRangesAsync`, the container's physical ranges (SPEC §3.2).
    FeedRanges(FeedRanges),
    /// Change feed: one page of the pull model's `FeedIterator` (SPEC §3.2).
    FeedRead(FeedRead),
    /// Change feed: a physical range splits in two (a fault event, logged).
    FeedSplit(FeedSplit),
    /// Move the clocks forward.
    Advance(Advance),
    /// Crash the server (a process crash: what it appended survives), restart it
    /// after `down`; it recovers from its write-ahead log.
    CrashServer(CrashServer),
    /// The server's reply to the next request attempt is lost on the way back.
    DropNextReply(DropNextReply),
    /// The caller cancels the next request step's call this long after
    /// invoking it (a `CancellationToken`).
    CancelNextCall(CancelNextCall),
    /// The relay answers the next request attempts itself with a transient
    /// status (without passing them to the server, or in place of its answer).
    Inject(Inject),
    /// From here on, Cosmos requests go through the multi-region client
    /// against an account of several regions.
    Account(Account),
}

/// `advance`: both amounts are durations (`1500ms`, `2s`, `1min`, `4h`, `7d`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Advance {
    /// Added to the server clock.
    #[serde(default)]
    pub server: Option<String>,
    /// Added to the scripted client's own clock (read by SDKs that keep time of
    /// their own, e.g. a change feed processor host; the Blob SDK reads none).
    #[serde(default)]
    pub client: Option<String>,
}

/// `crash_server`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashServer {
    /// How long it stays down (simulated time, which the clocks see), default 0.
    #[serde(default)]
    pub down: Option<String>,
}

/// `drop_next_reply`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropNextReply {}

/// `cancel_next_call`: the single-region client's next call is cancelled
/// `after` its invocation (a duration: `50ms`, `2s`); the call ends at once
/// as cancelled, unknown when an attempt was in flight.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelNextCall {
    /// How long after its invocation the call is cancelled.
    pub after: String,
}

/// `inject`: the relay answers the next `count` request attempts (of the
/// kind `only` names, others pass) with `status`, `sub_status` and
/// `retry_after_ms`, as a server's fault point would: without passing them to
/// the server, or, with `forward`, in place of the server's answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inject {
    /// The status: one of [`INJECTABLE`], or `connection_error` (no answer).
    pub status: InjectStatus,
    /// The Cosmos sub-status (0 for none); 404 takes only 1002.
    #[serde(default)]
    pub sub_status: u32,
    /// `x-ms-retry-after-ms` (429 only); missing when not given.
    #[serde(default)]
    pub retry_after_ms: Option<u64>,
    /// How many attempts to answer, default 1.
    #[serde(default = "one")]
    pub count: u32,
    /// `reads` or `writes` (as the SDK classes them for retries): only those
    /// attempts are answered; missing: every attempt.
    #[serde(default)]
    pub only: Option<InjectOnly>,
    /// True: the relay passes each attempt it answers to the server first and
    /// puts its answer in place of the server's (the request ran; the SDK
    /// sees the injected status).
    #[serde(default)]
    pub forward: bool,
    /// After an `account` step: only attempts sent to this region are
    /// answered; missing: attempts to any region.
    #[serde(default)]
    pub region: Option<String>,
}

fn one() -> u32 {
    1
}

/// The attempts an `inject` step answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InjectOnly {
    /// Reads (idempotent requests): their transport timeouts are retried.
    Reads,
    /// Writes (not idempotent).
    Writes,
}

/// The statuses an `inject` step may answer with: every row of SPEC §4.1,
/// the transient ones a server's fault point answers and those the SDK
/// never retries (to pin that it does not).
pub const INJECTABLE: [u16; 13] = [
    400, 401, 403, 404, 408, 409, 410, 412, 413, 429, 449, 500, 503,
];

/// One date expression or several (several values in one header).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Dates {
    /// One value.
    One(String),
    /// Several values.
    Many(Vec<String>),
}

impl Dates {
    /// The expressions, in order.
    pub fn exprs(&self) -> Vec<&str> {
        match self {
            Dates::One(s) => vec![s.as_str()],
            Dates::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

/// The four Blob condition headers of a step, as written.
#[derive(Clone, Copy, Debug)]
pub struct ConditionHeaders<'a> {
    /// `If-Match`.
    pub if_match: &'a Option<String>,
    /// `If-None-Match`.
    pub if_none_match: &'a Option<String>,
    /// `If-Modified-Since`.
    pub if_modified_since: &'a Option<Dates>,
    /// `If-Unmodified-Since`.
    pub if_unmodified_since: &'a Option<Dates>,
}

/// A script that could not be read: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed {
    /// The step (1-based), when the fault is inside one.
    pub step: Option<usize>,
    /// The field, as a path inside the step (or the document), e.g. `put_blob.expect.status`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            Some(n) => write!(f, "step {n}, field `{}`: {}", self.field, self.message),
            None if self.field.is_empty() || self.field == "." => f.write_str(&self.message),
            None => write!(f, "field `{}`: {}", self.field, self.message),
        }
    }
}

/// Splits a serde path like `steps[3].put_blob.expect` into the step (1-based)
/// and the path inside it.
fn split_path(path: &str) -> (Option<usize>, String) {
    if let Some(rest) = path.strip_prefix("steps[") {
        if let Some(end) = rest.find(']') {
            if let Ok(i) = rest[..end].parse::<usize>() {
                let inner = rest[end + 1..].trim_start_matches('.');
                return (Some(i + 1), inner.to_string());
            }
        }
    }
    (None, path.to_string())
}

/// Parses and validates a script.
pub fn parse(text: &str) -> Result<Script, Malformed> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let script: Script = serde_path_to_error::deserialize(de).map_err(|e| {
        let (step, field) = split_path(&e.path().to_string());
        let mut message = e.inner().to_string();
        // serde_json appends " at line L column C"; keep it, it helps find the spot.
        if message.is_empty() {
            message = "invalid".into();
        }
        Malformed {
            step,
            field,
            message,
        }
    })?;
    script.validate()?;
    Ok(script)
}

/// What a name was captured as, for checking uses before the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Etag,
    Time,
    LeaseId,
    Operation,
    Continuation,
    Item,
    Range,
}

impl Kind {
    fn what(self) -> &'static str {
        match self {
            Kind::Etag => "an ETag",
            Kind::Time => "a date",
            Kind::LeaseId => "a lease id",
            Kind::Operation => "an operation name",
            Kind::Continuation => "a continuation token",
            Kind::Item => "an item id",
            Kind::Range => "a feed range",
        }
    }
}

impl Script {
    /// Checks what serde does not: the format tag, value syntax, captured names
    /// used only after their capture and as the right kind, one capture per name.
    pub fn validate(&self) -> Result<(), Malformed> {
        if self.format != FORMAT {
            return Err(Malformed {
                step: None,
                field: "format".into(),
                message: format!("`{}` is not `{FORMAT}`", self.format),
            });
        }
        for (i, b) in self.bugs.iter().enumerate() {
            if !overcast_model::bugs::ModelBugs::default().set(b) {
                return Err(Malformed {
                    step: None,
                    field: format!("bugs[{i}]"),
                    message: format!(
                        "no model bug `{b}` (known: {})",
                        overcast_model::bugs::ModelBugs::NAMES.join(", ")
                    ),
                });
            }
        }
        account::validate_account_use(&self.steps).map_err(|(i, field, message)| Malformed {
            step: Some(i + 1),
            field,
            message,
        })?;
        let mut names: BTreeMap<String, Kind> = BTreeMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            let at = |(field, message): (String, String)| Malformed {
                step: Some(i + 1),
                field,
                message,
            };
            let kind = step.kind();
            validate_step(step, kind, &names).map_err(at)?;
            if let Some(expect) = step.expect() {
                // Names captured by a step are bound once its answer is checked:
                // usable from the next step on.
                let mut captured = Vec::new();
                validate_expect(
                    expect,
                    kind,
                    &format!("{kind}.expect"),
                    &names,
                    &mut captured,
                )
                .map_err(at)?;
                for (name, k) in captured {
                    names.insert(name, k);
                }
            }
        }
        Ok(())
    }
}

/// Checks one step's parameters (not its expectation) against the names
/// captured before it; an error names the field as a path inside the step.
/// This is the one match that sends a step to its service's checks; the
/// checks steps share follow it (a Blob request's lease id, the Blob
/// condition headers).
fn validate_step(
    step: &Step,
    kind: &str,
    names: &BTreeMap<String, Kind>,
) -> Result<(), (String, String)> {
    let at = |field: &str, message: String| (format!("{kind}.{field}"), message);
    // The services' checks that name the field relative to the step.
    let inside = |(field, message): (&str, String)| at(field, message);
    match step {
        Step::Advance(a) => {
            for (f, v) in [("server", &a.server), ("client", &a.client)] {
                if let Some(v) = v {
                    let ms = parse_duration(v).map_err(|m| at(f, m))?;
                    if ms < 0 {
                        return Err(at(f, "clocks only move forward".into()));
                    }
                }
            }
        }
        Step::CrashServer(c) => {
            if let Some(d) = &c.down {
                parse_duration(d).map_err(|m| at("down", m))?;
            }
        }
        Step::DropNextReply(_) | Step::CreateContainer(_) => {}
        Step::CancelNextCall(c) => {
            parse_duration(&c.after).map_err(|m| at("after", m))?;
        }
        Step::Inject(j) => account::validate_inject(j).map_err(inside)?,
        Step::Account(_) => {}
        Step::PutBlob(op)
        | Step::GetBlob(op)
        | Step::DeleteBlob(op)
        | Step::GetBlobProperties(op)
        | Step::SetBlobMetadata(op) => {
            blob::validate_body(op, kind)?;
        }
        Step::LeaseBlob(op) | Step::LeaseContainer(op) => {
            lease::validate_lease(op, kind, names)?;
        }
        Step::DeleteContainer(op) | Step::SetContainerMetadata(op) => {
            lease::validate_container_op(op, kind, names)?;
        }
        Step::CosmosCreate(op)
        | Step::CosmosRead(op)
        | Step::CosmosReplace(op)
        | Step::CosmosUpsert(op)
        | Step::CosmosDelete(op) => {
            cosmos::validate_cosmos(
                kind,
                op.body.is_some(),
                &op.if_match,
                &op.if_none_match,
                names,
            )
            .map_err(inside)?;
        }
        Step::CosmosBatch(b) => cosmos::validate_batch(b, kind, names)?,
        Step::SearchGet(op) | Step::SearchPut(op) | Step::SearchDelete(op) => {
            search::validate_search(op, kind, names).map_err(inside)?;
        }
        Step::QueueCreateDatasource(d) => queue::validate_datasource(d, kind)?,
        Step::QueuePush(QueuePush { item, .. })
        | Step::QueueIndex(QueueIndex { item, .. })
        | Step::QueueDelete(QueueDelete { item, .. }) => {
            queue::validate_item(item, kind, names)?;
        }
        Step::QueueGetOperation(o) => queue::validate_get_operation(o, kind, names)?,
        Step::QueuePoll(_) | Step::QueueUnreserve(_) | Step::QueueDeleteQueueItems(_) => {}
        Step::FeedRanges(_) => {}
        Step::FeedRead(r) => feed::validate_feed_read(r, names).map_err(inside)?,
        Step::FeedSplit(r) => feed::validate_split(r, kind, names)?,
    }
    if let Some(v) = step.blob_op().and_then(|h| h.lease_id.as_ref()) {
        use_value(names, v, Kind::LeaseId).map_err(|m| at("lease_id", m))?;
    }
    if let Some(h) = step.conditions() {
        for (f, v) in [("if_match", h.if_match), ("if_none_match", h.if_none_match)] {
            let Some(v) = v else { continue };
            for token in etag_tokens(v) {
                if token.starts_with('$') {
                    use_name(names, token, Kind::Etag).map_err(|m| at(f, m))?;
                } else if token == "*" && v.trim() != "*" {
                    return Err(at(f, "`*` stands alone in the header".into()));
                }
            }
        }
        for (f, v) in [
            ("if_modified_since", h.if_modified_since),
            ("if_unmodified_since", h.if_unmodified_since),
        ] {
            let Some(v) = v else { continue };
            for e in v.exprs() {
                let d = DateExpr::parse(e).map_err(|m| at(f, m))?;
                if let Some(n) = &d.var {
                    use_name(names, n, Kind::Time).map_err(|m| at(f, m))?;
                }
            }
        }
    }
    Ok(())
}

/// The tokens of an `If-Match` / `If-None-Match` value.
pub fn etag_tokens(v: &str) -> Vec<&str> {
    v.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

fn use_name(names: &BTreeMap<String, Kind>, name: &str, want: Kind) -> Result<(), String> {
    match names.get(name) {
        None => Err(format!("{name} is used before any step captures it")),
        Some(k) if *k != want => Err(format!("{name} holds {}, not {}", k.what(), want.what())),
        Some(_) => Ok(()),
    }
}

/// The value of a header that names one value: a captured `$name` (checked
/// against `names` as `want`) or a literal.
fn use_value(names: &BTreeMap<String, Kind>, v: &str, want: Kind) -> Result<(), String> {
    let v = v.trim();
    if v.starts_with('$') {
        use_name(names, v, want)
    } else if v.contains(',') {
        Err(format!("`{v}`: one value only"))
    } else {
        Ok(())
    }
}

impl Step {
    /// The step's kind as written in scripts (`put_blob`, `advance`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Step::CreateContainer(_) => "create_container",
            Step::PutBlob(_) => "put_blob",
            Step::GetBlob(_) => "get_blob",
            Step::DeleteBlob(_) => "delete_blob",
            Step::GetBlobProperties(_) => "get_blob_properties",
            Step::SetBlobMetadata(_) => "set_blob_metadata",
            Step::LeaseBlob(_) => "lease_blob",
            Step::LeaseContainer(_) => "lease_container",
            Step::DeleteContainer(_) => "delete_container",
            Step::SetContainerMetadata(_) => "set_container_metadata",
            Step::CosmosCreate(_) => "cosmos_create",
            Step::CosmosRead(_) => "cosmos_read",
            Step::CosmosReplace(_) => "cosmos_replace",
            Step::CosmosUpsert(_) => "cosmos_upsert",
            Step::CosmosDelete(_) => "cosmos_delete",
            Step::CosmosBatch(_) => "cosmos_batch",
            Step::SearchGet(_) => "search_get",
            Step::SearchPut(_) => "search_put",
            Step::SearchDelete(_) => "search_delete",
            Step::QueueCreateDatasource(_) => "queue_create_datasource",
            Step::QueuePush(_) => "queue_push",
            Step::QueuePoll(_) => "queue_poll",
            Step::QueueIndex(_) => "queue_index",
            Step::QueueDelete(_) => "queue_delete",
            Step::QueueUnreserve(_) => "queue_unreserve",
            Step::QueueDeleteQueueItems(_) => "queue_delete_queue_items",
            Step::QueueGetOperation(_) => "queue_get_operation",
            Step::FeedRanges(_) => "feed_ranges",
            Step::FeedRead(_) => "feed_read",
            Step::FeedSplit(_) => "feed_split",
            Step::Advance(_) => "advance",
            Step::CrashServer(_) => "crash_server",
            Step::DropNextReply(_) => "drop_next_reply",
            Step::CancelNextCall(_) => "cancel_next_call",
            Step::Inject(_) => "inject",
            Step::Account(_) => "account",
        }
    }

    /// The expectation of a request step.
    pub fn expect(&self) -> Option<&Expect> {
        match self {
            Step::CreateContainer(s) => Some(&s.expect),
            Step::PutBlob(s)
            | Step::GetBlob(s)
            | Step::DeleteBlob(s)
            | Step::GetBlobProperties(s)
            | Step::SetBlobMetadata(s) => Some(&s.expect),
            Step::LeaseBlob(s) | Step::LeaseContainer(s) => Some(&s.expect),
            Step::DeleteContainer(s) | Step::SetContainerMetadata(s) => Some(&s.expect),
            Step::CosmosCreate(s)
            | Step::CosmosRead(s)
            | Step::CosmosReplace(s)
            | Step::CosmosUpsert(s)
            | Step::CosmosDelete(s) => Some(&s.expect),
            Step::CosmosBatch(s) => Some(&s.expect),
            Step::SearchGet(s) | Step::SearchPut(s) | Step::SearchDelete(s) => Some(&s.expect),
            Step::QueueCreateDatasource(s) => Some(&s.expect),
            Step::QueuePush(s) => Some(&s.expect),
            Step::QueuePoll(s) => Some(&s.expect),
            Step::QueueIndex(s) => Some(&s.expect),
            Step::QueueDelete(s) => Some(&s.expect),
            Step::QueueUnreserve(s) | Step::QueueDeleteQueueItems(s) => Some(&s.expect),
            Step::QueueGetOperation(s) => Some(&s.expect),
            Step::FeedRanges(s) => Some(&s.expect),
            Step::FeedRead(s) => Some(&s.expect),
            Step::FeedSplit(s) => Some(&s.expect),
            Step::Advance(_)
            | Step::CrashServer(_)
            | Step::DropNextReply(_)
            | Step::CancelNextCall(_)
            | Step::Inject(_)
            | Step::Account(_) => None,
        }
    }

    /// The Blob request of a Blob step.
    pub fn blob_op(&self) -> Option<&BlobOp> {
        match self {
            Step::PutBlob(s)
            | Step::GetBlob(s)
            | Step::DeleteBlob(s)
            | Step::GetBlobProperties(s)
            | Step::SetBlobMetadata(s) => Some(s),
            _ => None,
        }
    }

    /// The Blob condition headers of a step that takes them (Blob requests
    /// and blob lease actions).
    pub fn conditions(&self) -> Option<ConditionHeaders<'_>> {
        match self {
            Step::PutBlob(s)
            | Step::GetBlob(s)
            | Step::DeleteBlob(s)
            | Step::GetBlobProperties(s)
            | Step::SetBlobMetadata(s) => Some(ConditionHeaders {
                if_match: &s.if_match,
                if_none_match: &s.if_none_match,
                if_modified_since: &s.if_modified_since,
                if_unmodified_since: &s.if_unmodified_since,
            }),
            Step::LeaseBlob(s) | Step::LeaseContainer(s) => Some(ConditionHeaders {
                if_match: &s.if_match,
                if_none_match: &s.if_none_match,
                if_modified_since: &s.if_modified_since,
                if_unmodified_since: &s.if_unmodified_since,
            }),
            _ => None,
        }
    }
}
