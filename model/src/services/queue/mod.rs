//! Google Cloud Search indexing queues (SPEC §5.1–5.4): the pure state machine
//! of the datasources one partition holds.
//!
//! Every item of a datasource has a queue label, a status, the hashes and the
//! version of its last `items.index`, a payload, an ordering time
//! (`available_ms`) and a reservation; timed transitions are judged lazily at
//! the server time handed to each call (a reservation ends when
//! `now >= reserved_until`, a soft delete becomes hard at `deleted_ms +
//! soft_delete_ms`). The one timer that changes state, the completion of a
//! long-running `deleteQueueItems`, is settled at the start of the first
//! request to its datasource at or after its due time, inside that request's
//! effect ([`QueueEffect::completed`]).
//!
//! Model choices (SPEC §7): REPOSITORY_ERROR is status `ERROR` with
//! `repository_errors := [e]` and a backoff (AMBIG-10); queue names over 100
//! characters are refused (AMBIG-11); NOT_MODIFIED, REPOSITORY_ERROR and
//! UNSPECIFIED pushes of an unknown item create a `NEW_ITEM` (AMBIG-12); a
//! reserved item is relabelled and keeps its reservation (AMBIG-13); only
//! NOT_MODIFIED, REPOSITORY_ERROR and REQUEUE unreserve (AMBIG-14); an indexed
//! item is `ACCEPTED` (AMBIG-15); a `deleteQueueItems(Q)` deletes, when it
//! completes, exactly the items labelled Q when it started (Q7).
//!
//! The 4 h reservation and the 7-day soft delete are divided by
//! [`QueueConfig::time_scale`], so that runs stay short in simulated time.

use crate::core::bugs::ModelBugs;
use crate::core::conditions::Millis;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The label of items pushed or polled without a queue.
pub const DEFAULT_QUEUE: &str = "default";
/// Longest queue name (AMBIG-11: the Item/poll limit, not PushItem's 512).
pub(crate) const MAX_QUEUE_LEN: usize = 100;
/// Largest payload of a push, bytes.
pub(crate) const MAX_PAYLOAD: usize = 8192;
/// Longest version, bytes.
pub(crate) const MAX_VERSION: usize = 1024;
/// Longest hash of a push, characters.
pub(crate) const MAX_HASH: usize = 2048;
/// Longest item name, characters.
pub(crate) const MAX_NAME: usize = 1536;
/// Items a poll returns when it names no limit.
pub const DEFAULT_LIMIT: u32 = 20;
/// Most items one poll may ask for.
pub(crate) const MAX_LIMIT: u32 = 100;
/// The reservation a poll takes, unscaled: 4 hours.
pub const RESERVATION_MS: Millis = 4 * 3_600_000;
/// The soft delete, unscaled: 7 days (the low end of the documented 7–10).
pub const SOFT_DELETE_MS: Millis = 7 * 86_400_000;

/// An item's status. The declaration order is the poll priority (SPEC §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ItemStatus {
    /// Processing failed; with a repository error it waits for its backoff.
    Error,
    /// Changed since it was accepted.
    Modified,
    /// Pushed, never accepted.
    NewItem,
    /// Up to date.
    Accepted,
}

/// `PushItem.type`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PushType {
    /// No type (hashes may be given instead).
    #[default]
    Unspecified,
    /// The item changed.
    Modified,
    /// The item did not change.
    NotModified,
    /// The repository failed to hand the item over.
    RepositoryError,
    /// Put the reserved item back at the end of its status.
    Requeue,
}

/// The three hashes of an item (stored from `items.index`, compared on push).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Hashes {
    /// `metadataHash` / `metadata.hash`.
    pub metadata: Option<String>,
    /// `structuredDataHash` / `structuredData.hash`.
    pub structured_data: Option<String>,
    /// `contentHash` / `content.hash`.
    pub content: Option<String>,
}

impl Hashes {
    /// True when no hash is given.
    pub fn is_empty(&self) -> bool {
        self.metadata.is_none() && self.structured_data.is_none() && self.content.is_none()
    }

    fn fields(&self) -> [&Option<String>; 3] {
        [&self.metadata, &self.structured_data, &self.content]
    }

    /// True when every hash given here equals the stored one.
    pub fn all_equal_to(&self, stored: &Hashes) -> bool {
        self.fields()
            .iter()
            .zip(stored.fields())
            .all(|(h, s)| h.is_none() || *h == s)
    }

    fn too_long(&self) -> bool {
        self.fields()
            .iter()
            .any(|h| h.as_ref().is_some_and(|h| h.len() > MAX_HASH))
    }
}

/// The `item` of an `items.push` body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PushItem {
    /// The item's name.
    pub name: String,
    /// The push type.
    pub r#type: PushType,
    /// Hashes to compare with the stored ones (not together with a type).
    pub hashes: Hashes,
    /// Opaque bytes for the connector.
    pub payload: Option<String>,
    /// The queue label (`None`: the default queue).
    pub queue: Option<String>,
    /// The repository error (only with `REPOSITORY_ERROR`).
    pub repository_error: Option<String>,
}

/// One item's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Item {
    /// Its queue label.
    pub queue: String,
    /// Its status.
    pub status: ItemStatus,
    /// The repository errors of its last REPOSITORY_ERROR push (AMBIG-10).
    pub repository_errors: Vec<String>,
    /// Opaque connector bytes.
    pub payload: String,
    /// The hashes of its last index.
    pub hashes: Hashes,
    /// The version of its last index or delete (`""`: none).
    pub version: String,
    /// The indexed content (`None`: never indexed, or deleted).
    pub content: Option<String>,
    /// In its queue (false once deleted, until pushed or indexed again).
    pub queued: bool,
    /// Ordering time: eligible from this server time on (SPEC §5.1).
    pub available_ms: Millis,
    /// Reserved by a poll until this server time.
    pub reserved_until: Option<Millis>,
    /// When it was deleted, while it is (soft) deleted.
    pub deleted_ms: Option<Millis>,
    /// REPOSITORY_ERROR pushes since its last index (the backoff exponent).
    pub errors: u32,
}

impl Item {
    fn new(queue: String, now: Millis) -> Item {
        Item {
            queue,
            status: ItemStatus::NewItem,
            repository_errors: Vec::new(),
            payload: String::new(),
            hashes: Hashes::default(),
            version: String::new(),
            content: None,
            queued: true,
            available_ms: now,
            reserved_until: None,
            deleted_ms: None,
            errors: 0,
        }
    }

    /// Reserved at `now` (`never_expires`: the seeded bug `reservation_never_expires`).
    pub fn reserved_at(&self, now: Millis, never_expires: bool) -> bool {
        self.reserved_until
            .is_some_and(|until| never_expires || now < until)
    }

    /// Pollable at `now`: queued, unreserved and available (SPEC §5.1).
    pub fn eligible_at(&self, now: Millis) -> bool {
        self.queued && !self.reserved_at(now, false) && self.available_ms <= now
    }

    /// The version a new index or delete must exceed: none once a delete is hard.
    pub fn version_floor(&self, now: Millis, soft_delete_ms: Millis) -> &str {
        match self.deleted_ms {
            Some(d) if now >= d.saturating_add(soft_delete_ms) => "",
            _ => &self.version,
        }
    }

    fn unreserve(&mut self, now: Millis) {
        self.reserved_until = None;
        self.available_ms = now;
    }

    fn delete(&mut self, version: Option<&str>, now: Millis) {
        if let Some(v) = version {
            self.version = v.to_string();
        }
        self.content = None;
        self.queued = false;
        self.reserved_until = None;
        self.deleted_ms = Some(now);
    }
}

/// The poll order of SPEC §5.1: (status priority, availableTime, name).
pub fn poll_order(name: &str, item: &Item) -> (ItemStatus, Millis, String) {
    (item.status, item.available_ms, name.to_string())
}

/// A datasource's settings, fixed when it is created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// The 4 h reservation and the 7-day soft delete are divided by this.
    pub time_scale: u64,
    /// The first REPOSITORY_ERROR backoff, ms; it doubles with each one more.
    pub backoff_ms: Millis,
    /// The longest backoff, ms.
    pub max_backoff_ms: Millis,
    /// How long a `deleteQueueItems` runs before it is done, ms range.
    pub delete_ms: (Millis, Millis),
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            time_scale: 1,
            backoff_ms: 1_000,
            max_backoff_ms: 60_000,
            delete_ms: (0, 0),
        }
    }
}

impl QueueConfig {
    /// The scaled reservation, ms.
    pub fn reservation_ms(&self) -> Millis {
        RESERVATION_MS / self.time_scale.max(1)
    }

    /// The scaled soft delete, ms.
    pub fn soft_delete_ms(&self) -> Millis {
        SOFT_DELETE_MS / self.time_scale.max(1)
    }

    /// The backoff after the `n`-th REPOSITORY_ERROR in a row (n ≥ 1).
    pub fn backoff(&self, n: u32) -> Millis {
        let doublings = n.saturating_sub(1).min(32);
        self.backoff_ms
            .saturating_mul(1 << doublings)
            .min(self.max_backoff_ms)
    }
}

/// A long-running `deleteQueueItems`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Operation {
    /// `operations/...`.
    pub name: String,
    /// The queue it empties.
    pub queue: String,
    /// The items labelled with the queue when it started: the ones it deletes.
    pub items: Vec<String>,
    /// Server time it started.
    pub started_ms: Millis,
    /// Server time it is done.
    pub done_ms: Millis,
    /// Done (its deletions applied).
    pub done: bool,
}

/// What `getOperation` (and `deleteQueueItems`) report of an operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationView {
    /// Its name.
    pub name: String,
    /// Done or still running.
    pub done: bool,
}

/// One datasource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Datasource {
    /// Its settings.
    pub config: QueueConfig,
    /// Items by name.
    pub items: BTreeMap<String, Item>,
    /// Long-running operations by name.
    pub operations: BTreeMap<String, Operation>,
}

/// A request to the indexing service (SPEC §5.2–5.4), plus the creation of a
/// datasource (provisioning, as containers are for the store).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueueRequest {
    /// Creates the datasource with `config` (200 and no change if it exists).
    CreateDatasource {
        /// The datasource.
        datasource: String,
        /// Its settings.
        config: QueueConfig,
    },
    /// `items.push`.
    Push {
        /// The datasource.
        datasource: String,
        /// The pushed item.
        item: PushItem,
    },
    /// `items.poll`.
    Poll {
        /// The datasource.
        datasource: String,
        /// The queue (`None`: default).
        queue: Option<String>,
        /// Statuses to return (empty: all).
        statuses: Vec<ItemStatus>,
        /// Most items (`None` or 0: 20).
        limit: Option<u32>,
    },
    /// `items.index` (a full replace).
    Index {
        /// The datasource.
        datasource: String,
        /// The item.
        name: String,
        /// Must exceed the indexed version, bytewise.
        version: String,
        /// The queue label (`None`: unchanged, or default for a new item).
        queue: Option<String>,
        /// The content.
        content: String,
        /// The hashes to store.
        hashes: Hashes,
    },
    /// `items.delete`.
    Delete {
        /// The datasource.
        datasource: String,
        /// The item.
        name: String,
        /// Must exceed the indexed version, bytewise.
        version: String,
    },
    /// `items.unreserve`.
    Unreserve {
        /// The datasource.
        datasource: String,
        /// The queue (`None`: default).
        queue: Option<String>,
    },
    /// `items.deleteQueueItems`: starts a long-running operation.
    DeleteQueueItems {
        /// The datasource.
        datasource: String,
        /// The queue (`None`: default).
        queue: Option<String>,
    },
    /// `operations.get`.
    GetOperation {
        /// The datasource the operation belongs to.
        datasource: String,
        /// The operation's name.
        operation: String,
    },
}

impl QueueRequest {
    /// The datasource it addresses.
    pub fn datasource(&self) -> &str {
        match self {
            QueueRequest::CreateDatasource { datasource, .. }
            | QueueRequest::Push { datasource, .. }
            | QueueRequest::Poll { datasource, .. }
            | QueueRequest::Index { datasource, .. }
            | QueueRequest::Delete { datasource, .. }
            | QueueRequest::Unreserve { datasource, .. }
            | QueueRequest::DeleteQueueItems { datasource, .. }
            | QueueRequest::GetOperation { datasource, .. } => datasource,
        }
    }

    /// The method's name, e.g. `push`, `poll`.
    pub fn method(&self) -> &'static str {
        match self {
            QueueRequest::CreateDatasource { .. } => "create_datasource",
            QueueRequest::Push { .. } => "push",
            QueueRequest::Poll { .. } => "poll",
            QueueRequest::Index { .. } => "index",
            QueueRequest::Delete { .. } => "delete",
            QueueRequest::Unreserve { .. } => "unreserve",
            QueueRequest::DeleteQueueItems { .. } => "delete_queue_items",
            QueueRequest::GetOperation { .. } => "get_operation",
        }
    }

    /// Safe to send again after a timeout: a repeat ends in the same state or
    /// in one the caller cannot tell apart (a repeated poll finds its items
    /// reserved). Not: index and delete (a repeat is refused as stale),
    /// REQUEUE and REPOSITORY_ERROR pushes (a repeat is refused or backs off
    /// longer), `deleteQueueItems` (a repeat starts a second operation).
    pub fn is_idempotent(&self) -> bool {
        match self {
            QueueRequest::Push { item, .. } => matches!(
                item.r#type,
                PushType::Unspecified | PushType::Modified | PushType::NotModified
            ),
            QueueRequest::Index { .. }
            | QueueRequest::Delete { .. }
            | QueueRequest::DeleteQueueItems { .. } => false,
            _ => true,
        }
    }
}

/// An item as a poll returns it: only the documented fields (SPEC §5.3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolledItem {
    /// The item's name.
    pub name: String,
    /// Its indexed version.
    pub version: String,
    /// Its stored hashes.
    pub hashes: Hashes,
    /// Its payload.
    pub payload: String,
    /// Its status.
    pub status: ItemStatus,
    /// Its queue.
    pub queue: String,
}

/// The service's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueResponse {
    /// HTTP status: 200, 400 or 404.
    pub status: u16,
    /// The error's code: `INVALID_ARGUMENT`, `FAILED_PRECONDITION`, `NOT_FOUND`.
    pub error: Option<String>,
    /// The error's message.
    pub message: Option<String>,
    /// The items a poll returned, in poll order.
    pub items: Vec<PolledItem>,
    /// The operation a `deleteQueueItems` started or a `getOperation` read.
    pub operation: Option<OperationView>,
    /// The item's status after a push or an index.
    pub item_status: Option<ItemStatus>,
    /// The server's clock when it judged the request.
    pub server_ms: Millis,
}

impl QueueResponse {
    fn ok(now: Millis) -> QueueResponse {
        QueueResponse {
            status: 200,
            error: None,
            message: None,
            items: Vec::new(),
            operation: None,
            item_status: None,
            server_ms: now,
        }
    }

    fn error(status: u16, code: &str, message: &str, now: Millis) -> QueueResponse {
        QueueResponse {
            status,
            error: Some(code.into()),
            message: Some(message.into()),
            ..QueueResponse::ok(now)
        }
    }

    /// True for 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// What one request changed, as absolute new state (redo is exact).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueEffect {
    /// The datasource.
    pub datasource: String,
    /// Server time of the change.
    pub at_ms: Millis,
    /// Operations that completed at the start of this request, with the new
    /// state of each item they deleted.
    pub completed: Vec<(Operation, Vec<(String, Item)>)>,
    /// The request (`None` when only completions changed state).
    pub request: Option<QueueRequest>,
    /// The new state of each item the request changed (a poll's in poll order).
    pub items: Vec<(String, Item)>,
    /// The operation the request started.
    pub started: Option<Operation>,
    /// The settings of a datasource the request created.
    pub created: Option<QueueConfig>,
}

fn invalid(now: Millis, message: &str) -> QueueResponse {
    QueueResponse::error(400, "INVALID_ARGUMENT", message, now)
}

fn stale(now: Millis) -> QueueResponse {
    QueueResponse::error(
        400,
        "FAILED_PRECONDITION",
        "Stale version number specified.",
        now,
    )
}

fn queue_name(queue: &Option<String>) -> String {
    queue.clone().unwrap_or_else(|| DEFAULT_QUEUE.to_string())
}

fn queue_too_long(queue: &Option<String>) -> bool {
    queue.as_ref().is_some_and(|q| q.len() > MAX_QUEUE_LEN)
}

fn bad_name(name: &str) -> bool {
    name.is_empty() || name.len() > MAX_NAME
}

/// The argument rules of a request, checked before any state is read: the
/// 400 INVALID_ARGUMENT message of the first one broken.
pub(crate) fn validate(req: &QueueRequest) -> Result<(), &'static str> {
    match req {
        QueueRequest::CreateDatasource { config, .. } if config.time_scale == 0 => {
            Err("time_scale must be at least 1")
        }
        QueueRequest::Push { item, .. } => {
            if bad_name(&item.name) {
                Err("item name is empty or too long")
            } else if item.r#type != PushType::Unspecified && !item.hashes.is_empty() {
                Err("type cannot be set together with a hash")
            } else if item.repository_error.is_some() && item.r#type != PushType::RepositoryError {
                Err("repositoryError is only allowed with type REPOSITORY_ERROR")
            } else if queue_too_long(&item.queue) {
                Err("queue name longer than 100")
            } else if item.payload.as_ref().is_some_and(|p| p.len() > MAX_PAYLOAD) {
                Err("payload larger than 8192 bytes")
            } else if item.hashes.too_long() {
                Err("hash longer than 2048")
            } else {
                Ok(())
            }
        }
        QueueRequest::Poll { queue, limit, .. } => {
            if queue_too_long(queue) {
                Err("queue name longer than 100")
            } else if limit.is_some_and(|l| l > MAX_LIMIT) {
                Err("limit above 100")
            } else {
                Ok(())
            }
        }
        QueueRequest::Index {
            name,
            version,
            queue,
            hashes,
            ..
        } => {
            if bad_name(name) {
                Err("item name is empty or too long")
            } else if version.len() > MAX_VERSION {
                Err("version longer than 1024 bytes")
            } else if queue_too_long(queue) {
                Err("queue name longer than 100")
            } else if hashes.too_long() {
                Err("hash longer than 2048")
            } else {
                Ok(())
            }
        }
        QueueRequest::Delete { name, version, .. } => {
            if bad_name(name) {
                Err("item name is empty or too long")
            } else if version.len() > MAX_VERSION {
                Err("version longer than 1024 bytes")
            } else {
                Ok(())
            }
        }
        QueueRequest::Unreserve { queue, .. } | QueueRequest::DeleteQueueItems { queue, .. }
            if queue_too_long(queue) =>
        {
            Err("queue name longer than 100")
        }
        _ => Ok(()),
    }
}

/// A deterministic spread of `n` over `lo..=hi` (the duration of the `n`-th
/// operation): no randomness is handed to the machine, so it hashes.
fn spread(n: u64, (lo, hi): (Millis, Millis)) -> Millis {
    if hi <= lo {
        return lo;
    }
    lo + crate::core::keys::splitmix(n) % (hi - lo + 1)
}

/// The indexing service: every datasource of a partition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexingService {
    bugs: ModelBugs,
    datasources: BTreeMap<String, Datasource>,
}

impl IndexingService {
    /// No datasources, `bugs` switched on.
    pub fn new(bugs: ModelBugs) -> IndexingService {
        IndexingService {
            bugs,
            datasources: BTreeMap::new(),
        }
    }

    /// The datasource called `name`.
    pub fn datasource(&self, name: &str) -> Option<&Datasource> {
        self.datasources.get(name)
    }

    /// Applies one request at server time `now`. Returns the response and, iff
    /// state changed, the effect to log.
    pub fn apply(
        &mut self,
        req: &QueueRequest,
        now: Millis,
    ) -> (QueueResponse, Option<QueueEffect>) {
        if let Err(message) = validate(req) {
            return (invalid(now, message), None);
        }
        let name = req.datasource().to_string();
        if let QueueRequest::CreateDatasource { config, .. } = req {
            if self.datasources.contains_key(&name) {
                return (QueueResponse::ok(now), None);
            }
            self.datasources.insert(
                name.clone(),
                Datasource {
                    config: config.clone(),
                    ..Datasource::default()
                },
            );
            let effect = QueueEffect {
                datasource: name,
                at_ms: now,
                completed: Vec::new(),
                request: Some(req.clone()),
                items: Vec::new(),
                started: None,
                created: Some(config.clone()),
            };
            return (QueueResponse::ok(now), Some(effect));
        }
        let bugs = self.bugs;
        let Some(ds) = self.datasources.get_mut(&name) else {
            return (
                QueueResponse::error(404, "NOT_FOUND", "no such datasource", now),
                None,
            );
        };
        let completed = settle(ds, now);
        let (response, changed, started) = act(ds, req, now, bugs);
        let effect =
            (!completed.is_empty() || !changed.is_empty() || started.is_some()).then(|| {
                QueueEffect {
                    datasource: name,
                    at_ms: now,
                    completed,
                    request: (!changed.is_empty() || started.is_some()).then(|| req.clone()),
                    items: changed,
                    started,
                    created: None,
                }
            });
        (response, effect)
    }

    /// Replays one logged effect.
    pub fn redo(&mut self, e: &QueueEffect) {
        let ds = self.datasources.entry(e.datasource.clone()).or_default();
        if let Some(config) = &e.created {
            ds.config = config.clone();
        }
        for (op, items) in &e.completed {
            ds.operations.insert(op.name.clone(), op.clone());
            for (name, item) in items {
                ds.items.insert(name.clone(), item.clone());
            }
        }
        for (name, item) in &e.items {
            ds.items.insert(name.clone(), item.clone());
        }
        if let Some(op) = &e.started {
            ds.operations.insert(op.name.clone(), op.clone());
        }
    }
}

/// Completes every operation due at `now`: deletes the items it snapshotted
/// (those still in a queue). Returns each with its deletions.
fn settle(ds: &mut Datasource, now: Millis) -> Vec<(Operation, Vec<(String, Item)>)> {
    let mut completed = Vec::new();
    for op in ds.operations.values_mut() {
        if op.done || now < op.done_ms {
            continue;
        }
        op.done = true;
        let mut deleted = Vec::new();
        for name in &op.items {
            if let Some(item) = ds.items.get_mut(name) {
                if item.queued {
                    item.delete(None, op.done_ms);
                    deleted.push((name.clone(), item.clone()));
                }
            }
        }
        completed.push((op.clone(), deleted));
    }
    completed
}

/// The response, the changed items and a started operation of one request.
type Acted = (QueueResponse, Vec<(String, Item)>, Option<Operation>);

fn act(ds: &mut Datasource, req: &QueueRequest, now: Millis, bugs: ModelBugs) -> Acted {
    let ok = QueueResponse::ok(now);
    let soft = ds.config.soft_delete_ms();
    match req {
        QueueRequest::CreateDatasource { .. } => (ok, Vec::new(), None),
        QueueRequest::Push { item: push, .. } => {
            let present = ds.items.get(&push.name).is_some_and(|i| i.queued);
            let label = queue_name(&push.queue);
            if push.r#type == PushType::Requeue {
                let reserved = present
                    && ds.items[&push.name].reserved_at(now, bugs.reservation_never_expires);
                if !reserved {
                    let r = QueueResponse::error(
                        400,
                        "FAILED_PRECONDITION",
                        "REQUEUE is only for reserved items",
                        now,
                    );
                    return (r, Vec::new(), None);
                }
            }
            let config = ds.config.clone();
            let item = ds
                .items
                .entry(push.name.clone())
                .or_insert_with(|| Item::new(label.clone(), now));
            if !present {
                // Absent (never pushed, or deleted): a NEW_ITEM whatever the
                // type (AMBIG-12); a deleted one keeps its version floor.
                item.queued = true;
                item.status = ItemStatus::NewItem;
                item.available_ms = now;
                item.reserved_until = None;
                item.repository_errors.clear();
                item.errors = 0;
            } else {
                match push.r#type {
                    PushType::Modified => item.status = ItemStatus::Modified,
                    PushType::NotModified => {
                        item.status = ItemStatus::Accepted;
                        item.unreserve(now);
                    }
                    PushType::RepositoryError => {
                        item.status = ItemStatus::Error;
                        item.repository_errors =
                            vec![push.repository_error.clone().unwrap_or_default()];
                        item.errors += 1;
                        item.reserved_until = None;
                        item.available_ms = now + config.backoff(item.errors);
                    }
                    PushType::Requeue => {
                        item.available_ms = match item.reserved_until {
                            // The seeded bug: back to when it was polled.
                            Some(until) if bugs.requeue_keeps_time => {
                                until.saturating_sub(config.reservation_ms())
                            }
                            _ => now,
                        };
                        item.reserved_until = None;
                    }
                    PushType::Unspecified => {
                        if !push.hashes.is_empty()
                            && !push.hashes.all_equal_to(&item.hashes)
                            && item.status != ItemStatus::NewItem
                        {
                            item.status = ItemStatus::Modified;
                        }
                    }
                }
            }
            item.queue = label;
            if let Some(p) = &push.payload {
                item.payload = p.clone();
            }
            let r = QueueResponse {
                item_status: Some(item.status),
                ..ok
            };
            (r, vec![(push.name.clone(), item.clone())], None)
        }
        QueueRequest::Poll {
            queue,
            statuses,
            limit,
            ..
        } => {
            let q = queue_name(queue);
            let limit = match limit {
                None | Some(0) => DEFAULT_LIMIT,
                Some(l) => *l,
            } as usize;
            let never_expires = bugs.reservation_never_expires;
            let mut eligible: Vec<(&String, &Item)> = ds
                .items
                .iter()
                .filter(|(_, i)| i.queued && i.queue == q)
                .filter(|(_, i)| statuses.is_empty() || statuses.contains(&i.status))
                .filter(|(_, i)| {
                    let reserved = i.reserved_at(now, never_expires);
                    if bugs.poll_returns_reserved {
                        reserved || i.available_ms <= now
                    } else {
                        !reserved && i.available_ms <= now
                    }
                })
                .collect();
            if bugs.poll_ignores_priority {
                eligible.sort_by_key(|(n, i)| (i.available_ms, n.to_string()));
            } else {
                eligible.sort_by_key(|(n, i)| poll_order(n, i));
            }
            let names: Vec<String> = eligible
                .into_iter()
                .take(limit)
                .map(|(n, _)| n.clone())
                .collect();
            let until = now + ds.config.reservation_ms();
            let mut changed = Vec::new();
            let mut items = Vec::new();
            for n in names {
                let item = ds.items.get_mut(&n).expect("listed above");
                item.reserved_until = Some(until);
                item.available_ms = until;
                items.push(PolledItem {
                    name: n.clone(),
                    version: item.version.clone(),
                    hashes: item.hashes.clone(),
                    payload: item.payload.clone(),
                    status: item.status,
                    queue: item.queue.clone(),
                });
                changed.push((n, item.clone()));
            }
            (QueueResponse { items, ..ok }, changed, None)
        }
        QueueRequest::Index {
            name,
            version,
            queue,
            content,
            hashes,
            ..
        } => {
            if let Some(item) = ds.items.get(name) {
                if !bugs.index_ignores_version && version.as_str() <= item.version_floor(now, soft)
                {
                    return (stale(now), Vec::new(), None);
                }
            }
            let default = queue_name(queue);
            let item = ds
                .items
                .entry(name.clone())
                .or_insert_with(|| Item::new(default, now));
            if let Some(q) = queue {
                item.queue = q.clone();
            }
            item.status = ItemStatus::Accepted;
            item.version = version.clone();
            item.content = Some(content.clone());
            item.hashes = hashes.clone();
            item.queued = true;
            item.deleted_ms = None;
            item.errors = 0;
            item.repository_errors.clear();
            item.unreserve(now);
            let r = QueueResponse {
                item_status: Some(item.status),
                ..ok
            };
            (r, vec![(name.clone(), item.clone())], None)
        }
        QueueRequest::Delete { name, version, .. } => {
            let Some(item) = ds.items.get_mut(name) else {
                let r = QueueResponse::error(404, "NOT_FOUND", "no such item", now);
                return (r, Vec::new(), None);
            };
            if version.as_str() <= item.version_floor(now, soft) {
                return (stale(now), Vec::new(), None);
            }
            item.delete(Some(version), now);
            (ok, vec![(name.clone(), item.clone())], None)
        }
        QueueRequest::Unreserve { queue, .. } => {
            let q = queue_name(queue);
            let mut changed = Vec::new();
            for (n, item) in ds.items.iter_mut() {
                if item.queued
                    && item.queue == q
                    && item.reserved_at(now, bugs.reservation_never_expires)
                {
                    item.unreserve(now);
                    changed.push((n.clone(), item.clone()));
                }
            }
            (ok, changed, None)
        }
        QueueRequest::DeleteQueueItems { queue, .. } => {
            let q = queue_name(queue);
            let n = ds.operations.len() as u64 + 1;
            let items = ds
                .items
                .iter()
                .filter(|(_, i)| i.queued && i.queue == q)
                .map(|(n, _)| n.clone())
                .collect();
            let op = Operation {
                name: format!("operations/delete-queue-items-{n}"),
                queue: q,
                items,
                started_ms: now,
                done_ms: now + spread(n, ds.config.delete_ms),
                done: false,
            };
            let r = QueueResponse {
                operation: Some(OperationView {
                    name: op.name.clone(),
                    done: false,
                }),
                ..ok
            };
            ds.operations.insert(op.name.clone(), op.clone());
            (r, Vec::new(), Some(op))
        }
        QueueRequest::GetOperation { operation, .. } => match ds.operations.get(operation) {
            Some(op) => {
                let r = QueueResponse {
                    operation: Some(OperationView {
                        name: op.name.clone(),
                        done: op.done,
                    }),
                    ..ok
                };
                (r, Vec::new(), None)
            }
            None => (
                QueueResponse::error(404, "NOT_FOUND", "no such operation", now),
                Vec::new(),
                None,
            ),
        },
    }
}

#[cfg(test)]
mod tests;
