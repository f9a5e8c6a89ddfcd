//! The script format, version 1: a JSON document of steps run in order.
//!
//! Every step is an object with exactly one key, the step's kind:
//! a request in the service's vocabulary (`put_blob`, `get_blob`, ...) whose
//! object holds the request's parameters and its `expect`ation; `advance`
//! (move the server's and the client's clocks); `crash_server`;
//! `drop_next_reply`. Parsing goes through `serde_path_to_error` with every
//! struct denying unknown fields, and a second pass ([`Script::validate`])
//! checks what serde cannot (value syntax, names used before capture), so a
//! malformed script names the step and the field.
//!
//! A new service adds its operations as new [`Step`] arms (a parameter
//! struct with an `expect: Expect` field, plus the request it sends in
//! `super::run`), and any new response field worth pinning as a field of
//! [`Expect`] and a [`Field`] a capture can bind.

use super::time::{parse_duration, parse_rfc1123};
use overcast_model::conditions::Millis;
use overcast_model::queue::{ItemStatus, PushType};
use overcast_sim::clock::EPOCH_MS;
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
    /// Put Blob (an upsert: 201 created / 200 replaced).
    PutBlob(BlobOp),
    /// Get Blob (read conditions, SPEC §1.1.4).
    GetBlob(BlobOp),
    /// Delete Blob (write conditions).
    DeleteBlob(BlobOp),
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
}

/// `create_container`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateContainer {
    /// The container.
    pub container: String,
    /// The expected answer.
    pub expect: Expect,
}

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

/// `put_blob`, `get_blob`, `delete_blob`: a Blob request with its
/// conditional headers, written as header values.
///
/// `if_match` / `if_none_match`: `*`, or a comma-separated list of ETags, each
/// a literal (quotes optional) or a captured `$name`. Dates: one date
/// expression, or a list of them (several values in one header).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobOp {
    /// The container.
    pub container: String,
    /// The blob name.
    pub blob: String,
    /// The content: required by `put_blob`, refused by the others.
    #[serde(default)]
    pub body: Option<String>,
    /// `If-Match`.
    #[serde(default)]
    pub if_match: Option<String>,
    /// `If-None-Match`.
    #[serde(default)]
    pub if_none_match: Option<String>,
    /// `If-Modified-Since`.
    #[serde(default)]
    pub if_modified_since: Option<Dates>,
    /// `If-Unmodified-Since`.
    #[serde(default)]
    pub if_unmodified_since: Option<Dates>,
    /// `x-ms-lease-id`: a literal (any string; a GUID in any of its forms) or a
    /// captured `$name`.
    #[serde(default)]
    pub lease_id: Option<String>,
    /// The expected answer.
    pub expect: Expect,
}

/// `lease_blob`, `lease_container`: one `x-ms-lease-action` with its headers.
/// Which headers an action takes follows SPEC §2.2; a header the action does
/// not take is malformed (the model's request could not carry it). A header
/// the action requires may be left out to pin the 400 the service answers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseOp {
    /// The container.
    pub container: String,
    /// The blob: required by `lease_blob`, refused by `lease_container`.
    #[serde(default)]
    pub blob: Option<String>,
    /// `acquire`, `renew`, `change`, `release` or `break`.
    pub action: String,
    /// `x-ms-lease-duration` (acquire): seconds, −1 for infinite; absent: the
    /// header is missing.
    #[serde(default)]
    pub duration: Option<i64>,
    /// `x-ms-proposed-lease-id` (acquire, change): a literal or a captured `$name`.
    #[serde(default)]
    pub proposed_id: Option<String>,
    /// `x-ms-lease-id` (renew, change, release): a literal or a captured `$name`.
    #[serde(default)]
    pub lease_id: Option<String>,
    /// `x-ms-lease-break-period` (break): seconds.
    #[serde(default)]
    pub break_period: Option<i64>,
    /// `If-Match` (blob leases only, write rules).
    #[serde(default)]
    pub if_match: Option<String>,
    /// `If-None-Match` (blob leases only).
    #[serde(default)]
    pub if_none_match: Option<String>,
    /// `If-Modified-Since` (blob leases only).
    #[serde(default)]
    pub if_modified_since: Option<Dates>,
    /// `If-Unmodified-Since` (blob leases only).
    #[serde(default)]
    pub if_unmodified_since: Option<Dates>,
    /// The expected answer.
    pub expect: Expect,
}

/// `delete_container`, `set_container_metadata`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainerOp {
    /// The container.
    pub container: String,
    /// `x-ms-lease-id`: a literal or a captured `$name`.
    #[serde(default)]
    pub lease_id: Option<String>,
    /// The expected answer.
    pub expect: Expect,
}

/// `cosmos_create`, `cosmos_read`, `cosmos_replace`, `cosmos_upsert`,
/// `cosmos_delete`: one item operation. `body` goes with create, replace and
/// upsert; `if_match` with replace, upsert and delete; `if_none_match` with
/// read (the model's requests carry no other: a write's `if-none-match` and a
/// create's `if-match` are ignored by the service, SPEC §1.3, and cannot be sent).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CosmosOp {
    /// The container (Cosmos containers need no creating in the model).
    pub container: String,
    /// The partition key.
    pub partition_key: String,
    /// The item id.
    pub id: String,
    /// The document.
    #[serde(default)]
    pub body: Option<String>,
    /// `if-match`: one ETag, a literal or a captured `$name`.
    #[serde(default)]
    pub if_match: Option<String>,
    /// `if-none-match`: one ETag, a literal or a captured `$name`.
    #[serde(default)]
    pub if_none_match: Option<String>,
    /// The expected answer.
    pub expect: Expect,
}

/// One operation of a `cosmos_batch`: an object with one key, the operation.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum BatchOp {
    /// `CreateItem`.
    Create(BatchItem),
    /// `ReadItem`.
    Read(BatchItem),
    /// `ReplaceItem`.
    Replace(BatchItem),
    /// `UpsertItem`.
    Upsert(BatchItem),
    /// `DeleteItem`.
    Delete(BatchItem),
}

/// The parameters of one batch operation (the rules of [`CosmosOp`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchItem {
    /// The item id.
    pub id: String,
    /// The document.
    #[serde(default)]
    pub body: Option<String>,
    /// `if-match`.
    #[serde(default)]
    pub if_match: Option<String>,
    /// `if-none-match`.
    #[serde(default)]
    pub if_none_match: Option<String>,
}

/// `cosmos_batch`: a transactional batch.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CosmosBatch {
    /// The container.
    pub container: String,
    /// The partition key every operation shares.
    pub partition_key: String,
    /// The operations, in order.
    pub ops: Vec<BatchOp>,
    /// The expected answer; `results` lists one expectation per operation.
    pub expect: Expect,
}

/// `search_get`, `search_put`, `search_delete`: a request on one resource,
/// named by `index` or `synonym_map` (exactly one). A PUT carries the whole
/// definition: `fields` for an index, `synonyms` (rules) for a synonym map.
///
/// Conditions come in two forms: the REST headers (`if_match`, and on PUT
/// `if_none_match`: `*` or one ETag), or the .NET SDK's switch
/// (`only_if_unchanged` with `held_etag`, the ETag of the definition object the
/// application holds; the SDK sends `If-Match: held_etag` only when
/// `only_if_unchanged` is true and the object has an ETag, and never sends
/// `If-None-Match`). The two forms do not mix.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchOp {
    /// An index name.
    #[serde(default)]
    pub index: Option<String>,
    /// A synonym map name.
    #[serde(default)]
    pub synonym_map: Option<String>,
    /// The index's fields (PUT of an index).
    #[serde(default)]
    pub fields: Option<Vec<String>>,
    /// The synonym map's rules (PUT of a synonym map).
    #[serde(default)]
    pub synonyms: Option<Vec<String>>,
    /// `If-Match`: `*` or one ETag (literal or `$name`).
    #[serde(default)]
    pub if_match: Option<String>,
    /// `If-None-Match` (PUT): `*` or one ETag.
    #[serde(default)]
    pub if_none_match: Option<String>,
    /// The SDK's `onlyIfUnchanged` (PUT and DELETE).
    #[serde(default)]
    pub only_if_unchanged: Option<bool>,
    /// The ETag of the definition the application holds (a `$name` or a literal;
    /// absent: an object never sent to the service, whose ETag is blank).
    #[serde(default)]
    pub held_etag: Option<String>,
    /// The expected answer.
    pub expect: Expect,
}

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
    /// How many attempts the SDK made.
    #[serde(default)]
    pub attempts: Option<usize>,
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
    /// not checked by the runner: `tests/scripts.rs` requires every cell of the
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
            Captured::Time(t) => f.write_str(&super::time::format_rfc1123(*t)),
            Captured::Continuation(c) => write!(f, "{c}"),
            Captured::Range(r) => write!(f, "{r}"),
        }
    }
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
        let mut names: BTreeMap<String, Kind> = BTreeMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            let at = |field: &str, message: String| Malformed {
                step: Some(i + 1),
                field: field.to_string(),
                message,
            };
            let kind = step.kind();
            match step {
                Step::Advance(a) => {
                    for (f, v) in [("server", &a.server), ("client", &a.client)] {
                        if let Some(v) = v {
                            let ms =
                                parse_duration(v).map_err(|m| at(&format!("{kind}.{f}"), m))?;
                            if ms < 0 {
                                return Err(at(
                                    &format!("{kind}.{f}"),
                                    "clocks only move forward".into(),
                                ));
                            }
                        }
                    }
                }
                Step::CrashServer(c) => {
                    if let Some(d) = &c.down {
                        parse_duration(d).map_err(|m| at(&format!("{kind}.down"), m))?;
                    }
                }
                Step::PutBlob(op) if op.body.is_none() => {
                    return Err(at(
                        &format!("{kind}.body"),
                        "missing: put_blob takes a body".into(),
                    ));
                }
                Step::GetBlob(op) | Step::DeleteBlob(op) if op.body.is_some() => {
                    return Err(at(&format!("{kind}.body"), format!("{kind} takes no body")));
                }
                _ => {}
            }
            match step {
                Step::LeaseBlob(op) | Step::LeaseContainer(op) => {
                    validate_lease(op, kind, &names).map_err(|(f, m)| at(&f, m))?;
                }
                Step::DeleteContainer(op) | Step::SetContainerMetadata(op) => {
                    if let Some(v) = &op.lease_id {
                        use_value(&names, v, Kind::LeaseId)
                            .map_err(|m| at(&format!("{kind}.lease_id"), m))?;
                    }
                }
                Step::CosmosCreate(op)
                | Step::CosmosRead(op)
                | Step::CosmosReplace(op)
                | Step::CosmosUpsert(op)
                | Step::CosmosDelete(op) => {
                    validate_cosmos(
                        kind,
                        op.body.is_some(),
                        &op.if_match,
                        &op.if_none_match,
                        &names,
                    )
                    .map_err(|(f, m)| at(&format!("{kind}.{f}"), m))?;
                }
                Step::CosmosBatch(b) => {
                    if b.ops.is_empty() {
                        return Err(at(&format!("{kind}.ops"), "a batch has operations".into()));
                    }
                    for (j, op) in b.ops.iter().enumerate() {
                        let (name, item) = op.parts();
                        validate_cosmos(
                            &format!("cosmos_{name}"),
                            item.body.is_some(),
                            &item.if_match,
                            &item.if_none_match,
                            &names,
                        )
                        .map_err(|(f, m)| at(&format!("{kind}.ops[{j}].{name}.{f}"), m))?;
                    }
                    if let Some(r) = &b.expect.results {
                        if r.len() != b.ops.len() {
                            return Err(at(
                                &format!("{kind}.expect.results"),
                                format!("{} results for {} operations", r.len(), b.ops.len()),
                            ));
                        }
                    }
                }
                Step::SearchGet(op) | Step::SearchPut(op) | Step::SearchDelete(op) => {
                    validate_search(op, kind, &names)
                        .map_err(|(f, m)| at(&format!("{kind}.{f}"), m))?;
                }
                Step::QueueCreateDatasource(d) => {
                    for (f, v) in [
                        ("backoff", &d.backoff),
                        ("max_backoff", &d.max_backoff),
                        ("delete_takes", &d.delete_takes),
                    ] {
                        if let Some(v) = v {
                            let ms =
                                parse_duration(v).map_err(|m| at(&format!("{kind}.{f}"), m))?;
                            if ms < 0 {
                                return Err(at(&format!("{kind}.{f}"), "not negative".into()));
                            }
                        }
                    }
                }
                Step::QueuePush(QueuePush { item, .. })
                | Step::QueueIndex(QueueIndex { item, .. })
                | Step::QueueDelete(QueueDelete { item, .. }) => {
                    if let Some(n) = item.captured_name() {
                        use_name(&names, n, Kind::Item)
                            .map_err(|m| at(&format!("{kind}.item"), m))?;
                    }
                }
                Step::QueueGetOperation(o) => {
                    use_value(&names, &o.operation, Kind::Operation)
                        .map_err(|m| at(&format!("{kind}.operation"), m))?;
                }
                Step::FeedRead(r) => {
                    validate_feed_read(r, &names).map_err(|(f, m)| at(&format!("{kind}.{f}"), m))?
                }
                Step::FeedSplit(r) => {
                    use_range(&names, &r.range).map_err(|m| at(&format!("{kind}.range"), m))?
                }
                _ => {}
            }
            if let Some(v) = step.blob_op().and_then(|h| h.lease_id.as_ref()) {
                use_value(&names, v, Kind::LeaseId)
                    .map_err(|m| at(&format!("{kind}.lease_id"), m))?;
            }
            if let Some(h) = step.conditions() {
                for (f, v) in [("if_match", h.if_match), ("if_none_match", h.if_none_match)] {
                    let Some(v) = v else { continue };
                    for token in etag_tokens(v) {
                        if token.starts_with('$') {
                            use_name(&names, token, Kind::Etag)
                                .map_err(|m| at(&format!("{kind}.{f}"), m))?;
                        } else if token == "*" && v.trim() != "*" {
                            return Err(at(
                                &format!("{kind}.{f}"),
                                "`*` stands alone in the header".into(),
                            ));
                        }
                    }
                }
                for (f, v) in [
                    ("if_modified_since", h.if_modified_since),
                    ("if_unmodified_since", h.if_unmodified_since),
                ] {
                    let Some(v) = v else { continue };
                    for e in v.exprs() {
                        let d = DateExpr::parse(e).map_err(|m| at(&format!("{kind}.{f}"), m))?;
                        if let Some(n) = &d.var {
                            use_name(&names, n, Kind::Time)
                                .map_err(|m| at(&format!("{kind}.{f}"), m))?;
                        }
                    }
                }
            }
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
                .map_err(|(f, m)| at(&f, m))?;
                for (name, k) in captured {
                    names.insert(name, k);
                }
            }
        }
        Ok(())
    }
}

/// A range parameter: an id, or a `$name` captured as a range.
fn use_range(names: &BTreeMap<String, Kind>, r: &RangeRef) -> Result<(), String> {
    match r {
        RangeRef::Id(_) => Ok(()),
        RangeRef::Captured(n) if n.starts_with('$') => use_name(names, n, Kind::Range),
        RangeRef::Captured(n) => Err(format!("`{n}`: a range id or a captured $name")),
    }
}

/// The start options of a `feed_read`.
pub const FEED_STARTS: [&str; 2] = ["beginning", "now"];

/// Checks a `feed_read`'s scope (one of range, partition key) and start (one
/// of start, start_time, continuation).
fn validate_feed_read(
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

/// A continuation as written: a `$name` captured as one, or a token (a number).
fn continuation_value(c: &str, names: &BTreeMap<String, Kind>) -> Result<(), String> {
    let c = c.trim();
    if c.starts_with('$') {
        use_name(names, c, Kind::Continuation)
    } else {
        c.parse::<u64>()
            .map(|_| ())
            .map_err(|_| format!("`{c}`: a captured $name or a token (a number)"))
    }
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

/// The answer fields a step kind's `expect` may name (besides `status`,
/// `unknown_outcome`, `attempts`, `capture`, `any_of`, `note` and `covers`,
/// which every request step takes), and the fields a capture may bind.
fn answer_fields(kind: &str) -> (&'static [&'static str], &'static [&'static str]) {
    const BLOB: &[&str] = &["error_code", "etag", "last_modified", "body", "no_body"];
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
        "put_blob" | "get_blob" | "delete_blob" => (BLOB, &["etag", "last_modified"]),
        "lease_blob" | "lease_container" | "delete_container" | "set_container_metadata" => {
            (LEASE, &["lease_id"])
        }
        "cosmos_batch" => (&["results"], &[]),
        "cosmos_batch_result" => (&["etag", "body", "no_body"], &["etag"]),
        k if k.starts_with("cosmos_") => (&["etag", "body", "no_body"], &["etag"]),
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
fn validate_expect(
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
            if r.unknown_outcome.is_some() || r.attempts.is_some() {
                return Err((
                    at,
                    "a result has no unknown_outcome or attempts (the batch has)".into(),
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

/// The lease actions a script names.
pub const LEASE_ACTIONS: [&str; 5] = ["acquire", "renew", "change", "release", "break"];

/// Checks the headers of a lease step against its action (SPEC §2.2).
fn validate_lease(
    op: &LeaseOp,
    kind: &str,
    names: &BTreeMap<String, Kind>,
) -> Result<(), (String, String)> {
    let at = |f: &str, m: String| (format!("{kind}.{f}"), m);
    if !LEASE_ACTIONS.contains(&op.action.as_str()) {
        return Err(at(
            "action",
            format!("`{}`: one of {}", op.action, LEASE_ACTIONS.join(", ")),
        ));
    }
    match (kind, &op.blob) {
        ("lease_blob", None) => return Err(at("blob", "missing: lease_blob names a blob".into())),
        ("lease_container", Some(_)) => {
            return Err(at("blob", "lease_container takes no blob".into()))
        }
        _ => {}
    }
    let takes = |header: &str| -> bool {
        matches!(
            (op.action.as_str(), header),
            ("acquire", "duration" | "proposed_id")
                | ("renew" | "release", "lease_id")
                | ("change", "lease_id" | "proposed_id")
                | ("break", "break_period")
        )
    };
    for (f, present) in [
        ("duration", op.duration.is_some()),
        ("proposed_id", op.proposed_id.is_some()),
        ("lease_id", op.lease_id.is_some()),
        ("break_period", op.break_period.is_some()),
    ] {
        if present && !takes(f) {
            return Err(at(f, format!("a {} takes no {f}", op.action)));
        }
    }
    for (f, v) in [("proposed_id", &op.proposed_id), ("lease_id", &op.lease_id)] {
        if let Some(v) = v {
            use_value(names, v, Kind::LeaseId).map_err(|m| at(f, m))?;
        }
    }
    let has_conditions = op.if_match.is_some()
        || op.if_none_match.is_some()
        || op.if_modified_since.is_some()
        || op.if_unmodified_since.is_some();
    if kind == "lease_container" && has_conditions {
        return Err(at(
            "if_match",
            "the model evaluates no conditions on container leases (containers have no ETag or Last-Modified in it)".into(),
        ));
    }
    Ok(())
}

/// Checks a Cosmos operation's parameters against its kind.
fn validate_cosmos(
    kind: &str,
    body: bool,
    if_match: &Option<String>,
    if_none_match: &Option<String>,
    names: &BTreeMap<String, Kind>,
) -> Result<(), (&'static str, String)> {
    let op = kind.trim_start_matches("cosmos_");
    let wants_body = matches!(op, "create" | "replace" | "upsert");
    if wants_body && !body {
        return Err(("body", format!("missing: {op} takes a body")));
    }
    if !wants_body && body {
        return Err(("body", format!("{op} takes no body")));
    }
    if if_match.is_some() && !matches!(op, "replace" | "upsert" | "delete") {
        return Err((
            "if_match",
            format!("{op} takes no if_match (the service ignores it on a create, SPEC §1.3; the model's request cannot carry it)"),
        ));
    }
    if if_none_match.is_some() && op != "read" {
        return Err((
            "if_none_match",
            format!("{op} takes no if_none_match (only reads do: the service ignores it on writes, SPEC §1.3)"),
        ));
    }
    for (f, v) in [("if_match", if_match), ("if_none_match", if_none_match)] {
        if let Some(v) = v {
            if v.trim() == "*" {
                return Err((f, "one ETag, not `*`".into()));
            }
            use_value(names, v, Kind::Etag).map_err(|m| (f, m))?;
        }
    }
    Ok(())
}

/// Checks a Search request's parameters against its kind.
fn validate_search(
    op: &SearchOp,
    kind: &str,
    names: &BTreeMap<String, Kind>,
) -> Result<(), (&'static str, String)> {
    let is_index = match (&op.index, &op.synonym_map) {
        (Some(_), None) => true,
        (None, Some(_)) => false,
        _ => return Err(("index", "name exactly one of index, synonym_map".into())),
    };
    let put = kind == "search_put";
    match (put, is_index, &op.fields, &op.synonyms) {
        (true, true, None, _) => {
            return Err(("fields", "missing: an index PUT takes fields".into()))
        }
        (true, false, _, None) => {
            return Err((
                "synonyms",
                "missing: a synonym map PUT takes synonyms".into(),
            ))
        }
        (_, _, Some(_), _) if !(put && is_index) => {
            return Err(("fields", "only an index PUT takes fields".into()))
        }
        (_, _, _, Some(_)) if !put || is_index => {
            return Err(("synonyms", "only a synonym map PUT takes synonyms".into()))
        }
        _ => {}
    }
    if kind == "search_get"
        && (op.if_match.is_some() || op.only_if_unchanged.is_some() || op.held_etag.is_some())
    {
        return Err(("if_match", "search_get takes no conditions".into()));
    }
    if op.if_none_match.is_some() && !put {
        return Err(("if_none_match", "only a PUT takes if_none_match".into()));
    }
    let rest = op.if_match.is_some() || op.if_none_match.is_some();
    let sdk = op.only_if_unchanged.is_some() || op.held_etag.is_some();
    if rest && sdk {
        return Err((
            "only_if_unchanged",
            "the REST headers (if_match, if_none_match) and the SDK's switch (only_if_unchanged, held_etag) do not mix".into(),
        ));
    }
    for (f, v) in [
        ("if_match", &op.if_match),
        ("if_none_match", &op.if_none_match),
        ("held_etag", &op.held_etag),
    ] {
        if let Some(v) = v {
            if v.trim() == "*" && f != "held_etag" {
                continue;
            }
            use_value(names, v, Kind::Etag).map_err(|m| (f, m))?;
        }
    }
    Ok(())
}

impl Step {
    /// The step's kind as written in scripts (`put_blob`, `advance`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Step::CreateContainer(_) => "create_container",
            Step::PutBlob(_) => "put_blob",
            Step::GetBlob(_) => "get_blob",
            Step::DeleteBlob(_) => "delete_blob",
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
        }
    }

    /// The expectation of a request step.
    pub fn expect(&self) -> Option<&Expect> {
        match self {
            Step::CreateContainer(s) => Some(&s.expect),
            Step::PutBlob(s) | Step::GetBlob(s) | Step::DeleteBlob(s) => Some(&s.expect),
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
            Step::Advance(_) | Step::CrashServer(_) | Step::DropNextReply(_) => None,
        }
    }

    /// The Blob request of a Blob step.
    pub fn blob_op(&self) -> Option<&BlobOp> {
        match self {
            Step::PutBlob(s) | Step::GetBlob(s) | Step::DeleteBlob(s) => Some(s),
            _ => None,
        }
    }

    /// The Blob condition headers of a step that takes them (Blob requests
    /// and blob lease actions).
    pub fn conditions(&self) -> Option<ConditionHeaders<'_>> {
        match self {
            Step::PutBlob(s) | Step::GetBlob(s) | Step::DeleteBlob(s) => Some(ConditionHeaders {
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

impl BatchOp {
    /// The operation's name (`create`, `read`, ...) and its parameters.
    pub fn parts(&self) -> (&'static str, &BatchItem) {
        match self {
            BatchOp::Create(i) => ("create", i),
            BatchOp::Read(i) => ("read", i),
            BatchOp::Replace(i) => ("replace", i),
            BatchOp::Upsert(i) => ("upsert", i),
            BatchOp::Delete(i) => ("delete", i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(steps: &str) -> String {
        format!(r#"{{"format": "overcast-script/1", "name": "t", "steps": [{steps}]}}"#)
    }

    #[test]
    fn an_unknown_field_names_its_step_and_path() {
        let text = script(
            r#"{"create_container": {"container": "c", "expect": {"status": 201}}},
               {"put_blob": {"container": "c", "blob": "b", "body": "x", "expect": {"stauts": 201}}}"#,
        );
        let e = parse(&text).unwrap_err();
        assert_eq!(e.step, Some(2));
        assert_eq!(e.field, "put_blob.expect.stauts");
        assert!(e.message.contains("stauts"), "{e}");
    }

    #[test]
    fn a_name_used_before_its_capture_is_malformed() {
        let text = script(
            r#"{"get_blob": {"container": "c", "blob": "b", "if_match": "$e1", "expect": {"status": 200}}}"#,
        );
        let e = parse(&text).unwrap_err();
        assert_eq!((e.step, e.field.as_str()), (Some(1), "get_blob.if_match"));
    }

    #[test]
    fn a_bad_date_is_malformed() {
        let text = script(
            r#"{"get_blob": {"container": "c", "blob": "b", "if_modified_since": "yesterday", "expect": {"status": 200}}}"#,
        );
        let e = parse(&text).unwrap_err();
        assert_eq!(
            (e.step, e.field.as_str()),
            (Some(1), "get_blob.if_modified_since")
        );
    }

    #[test]
    fn a_put_needs_a_body_and_a_get_refuses_one() {
        let put = script(r#"{"put_blob": {"container": "c", "blob": "b", "expect": {}}}"#);
        let e = parse(&put).unwrap_err();
        assert_eq!((e.step, e.field.as_str()), (Some(1), "put_blob.body"));
        let get =
            script(r#"{"get_blob": {"container": "c", "blob": "b", "body": "x", "expect": {}}}"#);
        let e = parse(&get).unwrap_err();
        assert_eq!((e.step, e.field.as_str()), (Some(1), "get_blob.body"));
    }

    /// The step and field a malformed script `steps` is refused for.
    fn refused(steps: &str) -> (Option<usize>, String) {
        let e = parse(&script(steps)).unwrap_err();
        (e.step, e.field)
    }

    #[test]
    fn an_answer_field_the_step_kind_lacks_is_malformed() {
        assert_eq!(
            refused(
                r#"{"put_blob": {"container": "c", "blob": "b", "body": "x", "expect": {"lease_state": "leased"}}}"#
            ),
            (Some(1), "put_blob.expect.lease_state".into())
        );
        assert_eq!(
            refused(
                r#"{"cosmos_read": {"container": "c", "partition_key": "p", "id": "x", "expect": {"capture": {"lease_id": "$l"}}}}"#
            ),
            (Some(1), "cosmos_read.expect.capture.lease_id".into())
        );
        assert_eq!(
            refused(
                r#"{"lease_blob": {"container": "c", "blob": "b", "action": "break", "expect": {"lease_state": "held"}}}"#
            ),
            (Some(1), "lease_blob.expect.lease_state".into())
        );
    }

    #[test]
    fn a_lease_header_the_action_does_not_take_is_malformed() {
        assert_eq!(
            refused(
                r#"{"lease_blob": {"container": "c", "blob": "b", "action": "renew", "duration": 15, "expect": {}}}"#
            ),
            (Some(1), "lease_blob.duration".into())
        );
        assert_eq!(
            refused(
                r#"{"lease_blob": {"container": "c", "blob": "b", "action": "steal", "expect": {}}}"#
            ),
            (Some(1), "lease_blob.action".into())
        );
        assert_eq!(
            refused(
                r#"{"lease_container": {"container": "c", "blob": "b", "action": "break", "expect": {}}}"#
            ),
            (Some(1), "lease_container.blob".into())
        );
        assert_eq!(
            refused(
                r#"{"lease_blob": {"container": "c", "blob": "b", "action": "renew", "lease_id": "$l", "expect": {}}}"#
            ),
            (Some(1), "lease_blob.lease_id".into())
        );
    }

    #[test]
    fn cosmos_and_search_parameters_go_with_their_operation() {
        assert_eq!(
            refused(
                r#"{"cosmos_replace": {"container": "c", "partition_key": "p", "id": "x", "body": "b", "if_none_match": "0x1", "expect": {}}}"#
            ),
            (Some(1), "cosmos_replace.if_none_match".into())
        );
        assert_eq!(
            refused(
                r#"{"cosmos_create": {"container": "c", "partition_key": "p", "id": "x", "expect": {}}}"#
            ),
            (Some(1), "cosmos_create.body".into())
        );
        assert_eq!(
            refused(
                r#"{"search_put": {"index": "i", "synonym_map": "s", "fields": ["id"], "expect": {}}}"#
            ),
            (Some(1), "search_put.index".into())
        );
        assert_eq!(
            refused(
                r#"{"search_put": {"index": "i", "fields": ["id"], "if_match": "*", "only_if_unchanged": true, "expect": {}}}"#
            ),
            (Some(1), "search_put.only_if_unchanged".into())
        );
    }

    #[test]
    fn queue_and_feed_parameters_and_captures_go_with_their_operation() {
        assert_eq!(
            refused(
                r#"{"queue_push": {"datasource": "d", "item": "a", "type": "CHANGED", "expect": {}}}"#
            )
            .1,
            "queue_push.type"
        );
        assert_eq!(
            refused(r#"{"queue_push": {"datasource": "d", "item": "$i", "expect": {}}}"#),
            (Some(1), "queue_push.item".into())
        );
        assert_eq!(
            refused(r#"{"queue_push": {"datasource": "d", "item": "a", "expect": {"items": []}}}"#),
            (Some(1), "queue_push.expect.items".into())
        );
        assert_eq!(
            refused(
                r#"{"queue_poll": {"datasource": "d", "expect": {"items": [{"id": "a", "body": "x"}]}}}"#
            ),
            (Some(1), "queue_poll.expect.items[0].body".into())
        );
        assert_eq!(
            refused(
                r#"{"queue_poll": {"datasource": "d", "expect": {"capture": {"operation": "$o"}}}}"#
            ),
            (Some(1), "queue_poll.expect.capture.operation".into())
        );
        assert_eq!(
            refused(
                r#"{"queue_delete_queue_items": {"datasource": "d", "expect": {"capture": {"operation": "$o"}}}},
                   {"feed_read": {"container": "c", "range": 0, "continuation": "$o", "expect": {}}}"#
            ),
            (Some(2), "feed_read.continuation".into())
        );
        assert_eq!(
            refused(
                r#"{"feed_read": {"container": "c", "range": 0, "start": "beginning", "continuation": "7", "expect": {}}}"#
            ),
            (Some(1), "feed_read.start".into())
        );
        assert_eq!(
            refused(
                r#"{"feed_read": {"container": "c", "range": 0, "partition_key": "p", "start": "now", "expect": {}}}"#
            ),
            (Some(1), "feed_read.range".into())
        );
        assert_eq!(
            refused(
                r#"{"feed_read": {"container": "c", "range": 0, "start": "yesterday", "expect": {}}}"#
            ),
            (Some(1), "feed_read.start".into())
        );
        assert_eq!(
            refused(
                r#"{"feed_read": {"container": "c", "range": 0, "start": "now", "expect": {"continuation": "fresh"}}}"#
            ),
            (Some(1), "feed_read.expect.continuation".into())
        );
        let ok = r#"{"feed_ranges": {"container": "c", "expect": {"capture": {"ranges[2]": "$r"}}}},
            {"feed_read": {"container": "c", "range": "$r", "start": "beginning",
              "expect": {"items": ["a", {"id": "b", "version": 2}], "capture": {"continuation": "$c", "items[1]": "$i"}}}},
            {"feed_read": {"container": "c", "range": "$r", "continuation": "$c", "expect": {"continuation": "same as $c"}}},
            {"queue_push": {"datasource": "d", "item": "$i", "queue": {"repeat": "q", "times": 3}, "expect": {}}}"#;
        assert!(parse(&script(ok)).is_ok(), "{:?}", parse(&script(ok)).err());
    }

    #[test]
    fn a_name_captured_by_a_batch_result_is_usable_only_from_the_next_step() {
        let same_step = r#"{"cosmos_batch": {"container": "c", "partition_key": "p",
            "ops": [{"create": {"id": "a", "body": "1"}}, {"read": {"id": "a"}}],
            "expect": {"results": [{"capture": {"etag": "$a"}}, {"etag": "same as $a"}]}}}"#;
        assert_eq!(
            refused(same_step),
            (Some(1), "cosmos_batch.expect.results[1].etag".into())
        );
        let next_step = r#"{"cosmos_batch": {"container": "c", "partition_key": "p",
            "ops": [{"create": {"id": "a", "body": "1"}}],
            "expect": {"results": [{"capture": {"etag": "$a"}}]}}},
            {"cosmos_read": {"container": "c", "partition_key": "p", "id": "a", "if_none_match": "$a",
            "expect": {"etag": "same as $a"}}}"#;
        assert!(parse(&script(next_step)).is_ok());
    }

    #[test]
    fn date_expressions_take_a_base_and_an_offset() {
        assert_eq!(
            DateExpr::parse("$t1 - 1s"),
            Ok(DateExpr {
                var: Some("$t1".into()),
                fixed: 0,
                offset_ms: -1000
            })
        );
        assert_eq!(DateExpr::parse("start + 2s").map(|d| d.fixed), Ok(EPOCH_MS));
        assert_eq!(
            DateExpr::parse("Thu, 01 Jan 2026 00:00:05 GMT").map(|d| d.fixed),
            Ok(EPOCH_MS + 5000)
        );
    }
}
