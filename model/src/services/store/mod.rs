//! The object store: containers of items with ETags, Last-Modified and a per-item version,
//! and conditional requests with Blob semantics (SPEC §1.1). A pure state machine:
//! `apply(request, now) -> (response, effect)`; `redo(effect)` replays a logged mutation.
//!
//! Order of checks in every request (SPEC §1.1.3 step 1, §1.1.4, §1.1.5, AMBIG-3), in one
//! place ([`Store::check`]) for reads and writes:
//! 0. the header combination (400, before any state is read);
//! 1. read the blob (its container first: 404 `ContainerNotFound`);
//! 2. the lease check (§2.5, [`crate::services::lease::check_use`]: 412s; a lease id that is not
//!    a GUID is a 400 at step 0);
//! 3. the conditions against the item (412 / 409 / 304 / 400);
//! 4. a missing item: 404 `BlobNotFound` (reads, also with `If-Match`; deletes, Set Blob
//!    Metadata), or create (puts);
//! 5. apply: a new version, ETag and Last-Modified.
//!
//! Get Blob Properties (a HEAD) is a read with Get Blob's rules whose answer has no body:
//! no content and no `x-ms-error-code` on any status. Set Blob Metadata is a write (the
//! write rules, the lease check) that replaces the metadata and keeps the content.

use crate::core::bugs::ModelBugs;
use crate::core::conditions::{self, ConditionFailure, Current, WriteKind};
use crate::services::lease::{self, LeaseRequest, LeaseResponse, LeaseTarget, Leases, Use};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

pub use crate::core::conditions::{Conditions, ETag, EtagMatch, Millis};
pub use crate::core::keys::ItemKey;

/// A blob's metadata: `x-ms-meta-NAME: value` pairs, by name.
pub type Metadata = BTreeMap<String, String>;

/// A live item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// The content.
    pub body: String,
    /// The ETag, derived from `version` ([`ETag::from_version`]).
    pub etag: ETag,
    /// The server clock (ms) at the mutation that produced this version.
    pub last_modified: Millis,
    /// 1 on first create, +1 on every successful put, Set Blob Metadata or delete;
    /// continues across delete and re-create (unless the `etag_reuse` bug is on).
    pub version: u64,
    /// The metadata, set by the Put that wrote this version or by Set Blob Metadata.
    /// Left out of the item's serde form, so that a logged item without metadata keeps
    /// the bytes it had before items had metadata (the disk's faults draw on record
    /// lengths): an item with metadata is logged by [`Effect::ItemWrittenWithMetadata`],
    /// which writes it out.
    #[serde(skip)]
    pub metadata: Metadata,
}

/// What of an item a response shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// A write's answer: the new ETag and version only.
    Tags,
    /// A Get Blob Properties 200: no body, the metadata.
    Properties,
    /// A Get Blob 200: the body and the metadata.
    Whole,
}

impl Item {
    /// The view of this item in a response, with or without the body.
    pub fn view(&self, with_body: bool) -> ItemView {
        self.view_of(if with_body { Shown::Whole } else { Shown::Tags })
    }

    /// The view of this item in a response, showing `shown`.
    pub fn view_of(&self, shown: Shown) -> ItemView {
        ItemView {
            body: (shown == Shown::Whole).then(|| self.body.clone()),
            etag: self.etag.clone(),
            last_modified: self.last_modified,
            version: self.version,
            metadata: (shown != Shown::Tags).then(|| self.metadata.clone()),
        }
    }
}

/// A request to the store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoreRequest {
    /// Create a container: 201, or 409 `ContainerAlreadyExists`.
    CreateContainer {
        /// The container name.
        container: String,
    },
    /// Read an item (SPEC §1.1.4): 200 (with the item) / 304 / 412 / 404 / 400.
    Read {
        /// The item.
        key: ItemKey,
        /// The conditional headers (read rules).
        conditions: Conditions,
    },
    /// Upsert an item (SPEC §1.1.3): 201 whether created or replaced / 412 /
    /// 409 `BlobAlreadyExists` (`If-None-Match: *` on an existing item) / 400.
    Put {
        /// The item.
        key: ItemKey,
        /// The new content.
        body: String,
        /// The conditional headers (write rules).
        conditions: Conditions,
        /// The new metadata (empty: none); it replaces the old item's.
        metadata: Metadata,
    },
    /// Delete an item: 202 / 404 `BlobNotFound` / 412 / 400.
    Delete {
        /// The item.
        key: ItemKey,
        /// The conditional headers (write rules).
        conditions: Conditions,
    },
    /// Get Blob Properties, a HEAD (SPEC §1.1.4, the read rules): 200 with the item's
    /// ETag, Last-Modified and metadata (no body) / 304 / 412 / 404 / 400, every error
    /// without an error code (a HEAD answer has no body to carry one).
    GetProperties {
        /// The item.
        key: ItemKey,
        /// The conditional headers (read rules).
        conditions: Conditions,
    },
    /// Set Blob Metadata (SPEC §1.1.3, the write rules; §2.5, the lease rules): 200 with
    /// the new ETag / 412 / 404 `BlobNotFound` / 400. Replaces the item's metadata and
    /// keeps its content.
    SetMetadata {
        /// The item.
        key: ItemKey,
        /// The new metadata (empty: none).
        metadata: Metadata,
        /// The conditional headers (write rules).
        conditions: Conditions,
    },
}

impl StoreRequest {
    /// The item the request addresses (`None` for `CreateContainer`).
    pub fn key(&self) -> Option<&ItemKey> {
        match self {
            StoreRequest::CreateContainer { .. } => None,
            StoreRequest::Read { key, .. }
            | StoreRequest::Put { key, .. }
            | StoreRequest::Delete { key, .. }
            | StoreRequest::GetProperties { key, .. }
            | StoreRequest::SetMetadata { key, .. } => Some(key),
        }
    }

    /// The container the request addresses.
    pub fn container(&self) -> &str {
        match self {
            StoreRequest::CreateContainer { container } => container,
            StoreRequest::Read { key, .. }
            | StoreRequest::Put { key, .. }
            | StoreRequest::Delete { key, .. }
            | StoreRequest::GetProperties { key, .. }
            | StoreRequest::SetMetadata { key, .. } => &key.container,
        }
    }

    /// True for requests that may change state (everything but `Read` and
    /// `GetProperties`).
    pub fn is_write(&self) -> bool {
        !matches!(
            self,
            StoreRequest::Read { .. } | StoreRequest::GetProperties { .. }
        )
    }
}

/// What an item looks like in a response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemView {
    /// The content: present on a 200 read only.
    pub body: Option<String>,
    /// The (new, for writes) ETag.
    pub etag: ETag,
    /// The (new, for writes) Last-Modified.
    pub last_modified: Millis,
    /// The (new, for writes) version.
    pub version: u64,
    /// The metadata: present on a 200 read and a 200 Get Blob Properties only.
    pub metadata: Option<Metadata>,
}

/// The store's answer to one request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreResponse {
    /// The HTTP status.
    pub status: u16,
    /// The `x-ms-error-code` on failures (`None` on 2xx and 304).
    pub error_code: Option<String>,
    /// The item: on a 200 read (with body and metadata), a 200 Get Blob Properties (with
    /// metadata), a 304 read (neither) and a successful put or Set Blob Metadata (neither;
    /// the new ETag/version). `None` otherwise (errors, deletes, containers).
    pub item: Option<ItemView>,
}

impl StoreResponse {
    fn ok(status: u16, item: Option<ItemView>) -> StoreResponse {
        StoreResponse {
            status,
            error_code: None,
            item,
        }
    }

    fn error(status: u16, code: &str) -> StoreResponse {
        StoreResponse {
            status,
            error_code: Some(code.to_string()),
            item: None,
        }
    }

    fn condition(f: ConditionFailure) -> StoreResponse {
        StoreResponse {
            status: f.status(),
            error_code: f.error_code().map(str::to_string),
            item: None,
        }
    }

    /// True for 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The answer to a HEAD: the same status and headers, no body, so no error code.
    fn without_body(self) -> StoreResponse {
        StoreResponse {
            error_code: None,
            ..self
        }
    }
}

/// What a successful mutation changed, as absolute new state, so that redoing it
/// (from the write-ahead log) is exact and idempotent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Effect {
    /// A container now exists.
    ContainerCreated {
        /// The container name.
        container: String,
    },
    /// The item at `key` is now exactly `item` (created or replaced).
    ItemWritten {
        /// The item.
        key: ItemKey,
        /// Its new state.
        item: Item,
    },
    /// The item at `key` was deleted by the mutation with version `version`.
    ItemDeleted {
        /// The item.
        key: ItemKey,
        /// The version of the delete (the old version + 1).
        version: u64,
        /// Whether a tombstone remembers `version` (false only under the `etag_reuse` bug:
        /// the key is forgotten and a re-create starts again at version 1).
        keep_tombstone: bool,
    },
    /// The item at `key` is now exactly `item` (created or replaced): the form of
    /// [`Effect::ItemWritten`] for an item with metadata, logged with its metadata
    /// (which the item's own serde form leaves out, [`Item::metadata`]).
    ItemWrittenWithMetadata {
        /// The item.
        key: ItemKey,
        /// Its new state, metadata included.
        #[serde(with = "whole_item")]
        item: Item,
    },
}

impl Effect {
    /// The effect that writes `item` at `key`: [`Effect::ItemWritten`] for an item
    /// without metadata, [`Effect::ItemWrittenWithMetadata`] for one with.
    pub fn written(key: ItemKey, item: Item) -> Effect {
        if item.metadata.is_empty() {
            Effect::ItemWritten { key, item }
        } else {
            Effect::ItemWrittenWithMetadata { key, item }
        }
    }

    /// The item a write effect leaves at its key, and the key (`None` for the others).
    pub fn item_written(&self) -> Option<(&ItemKey, &Item)> {
        match self {
            Effect::ItemWritten { key, item } | Effect::ItemWrittenWithMetadata { key, item } => {
                Some((key, item))
            }
            Effect::ContainerCreated { .. } | Effect::ItemDeleted { .. } => None,
        }
    }
}

/// Which rules a request's conditions follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// Read rules (SPEC §1.1.4).
    Read,
    /// Write rules (SPEC §1.1.3), for this kind of write.
    Write(WriteKind),
    /// Set Blob Metadata: the write rules of any write but a put, and the lease check
    /// (which the seeded bug `metadata_ignores_lease` skips).
    SetMetadata,
}

impl Access {
    /// The kind of write (`None` for a read).
    fn write_kind(self) -> Option<WriteKind> {
        match self {
            Access::Read => None,
            Access::Write(kind) => Some(kind),
            Access::SetMetadata => Some(WriteKind::Other),
        }
    }
}

/// One slot of the store: a live item, or the tombstone of a deleted one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum Slot {
    Live(#[serde(with = "whole_item")] Item),
    Tombstone { version: u64 },
}

/// The serde form of an item with its metadata (which [`Item`]'s own leaves out), for
/// the store's state.
mod whole_item {
    use super::{Item, Metadata};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(item: &Item, s: S) -> Result<S::Ok, S::Error> {
        (item, &item.metadata).serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Item, D::Error> {
        let (item, metadata) = <(Item, Metadata)>::deserialize(d)?;
        Ok(Item { metadata, ..item })
    }
}

impl Slot {
    fn version(&self) -> u64 {
        match self {
            Slot::Live(item) => item.version,
            Slot::Tombstone { version } => *version,
        }
    }

    fn live(&self) -> Option<&Item> {
        match self {
            Slot::Live(item) => Some(item),
            Slot::Tombstone { .. } => None,
        }
    }
}

/// The object store state machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Store {
    bugs: ModelBugs,
    containers: BTreeSet<String>,
    slots: BTreeMap<ItemKey, Slot>,
    /// The blob and container leases (SPEC §2).
    #[serde(default)]
    leases: Leases,
}

impl Store {
    /// An empty store (no containers) with the given bugs switched on (it
    /// reads `skip_if_match` and `etag_reuse`).
    pub fn new(bugs: ModelBugs) -> Store {
        Store {
            bugs,
            containers: BTreeSet::new(),
            slots: BTreeMap::new(),
            leases: Leases::default(),
        }
    }

    /// The bugs this store was built with.
    pub fn bugs(&self) -> ModelBugs {
        self.bugs
    }

    /// Applies one request at server time `now` (ms). Returns the response and, iff state
    /// changed, the [`Effect`] to write to the log.
    pub fn apply(&mut self, req: &StoreRequest, now: Millis) -> (StoreResponse, Option<Effect>) {
        match req {
            StoreRequest::CreateContainer { container } => {
                if self.containers.contains(container) {
                    return (StoreResponse::error(409, "ContainerAlreadyExists"), None);
                }
                let effect = Effect::ContainerCreated {
                    container: container.clone(),
                };
                self.redo(&effect);
                (StoreResponse::ok(201, None), Some(effect))
            }
            StoreRequest::Read { key, conditions } => {
                (self.read(key, conditions, Shown::Whole, now), None)
            }
            StoreRequest::Put {
                key,
                body,
                conditions,
                metadata,
            } => self.put(key, body, metadata, conditions, now),
            StoreRequest::Delete { key, conditions } => self.delete(key, conditions, now),
            StoreRequest::GetProperties { key, conditions } => {
                // The seeded bug `head_ignores_if_match` drops If-Match on the HEAD path.
                let dropped;
                let conditions = if self.bugs.head_ignores_if_match {
                    dropped = Conditions {
                        if_match: None,
                        ..conditions.clone()
                    };
                    &dropped
                } else {
                    conditions
                };
                let answer = self.read(key, conditions, Shown::Properties, now);
                (answer.without_body(), None)
            }
            StoreRequest::SetMetadata {
                key,
                metadata,
                conditions,
            } => self.set_metadata(key, metadata, conditions, now),
        }
    }

    fn current(&self, key: &ItemKey) -> Option<Current<'_>> {
        self.item(key).map(|item| Current {
            etag: &item.etag,
            last_modified: if self.bugs.last_modified_rounded {
                (item.last_modified + 500) / 1000 * 1000
            } else {
                item.last_modified
            },
        })
    }

    /// Steps 0–3 of the order of checks (module doc): `Ok` with the item (if live) when the
    /// request may go on to step 4, or the response that stops it (boxed: it is large).
    fn check(
        &self,
        key: &ItemKey,
        c: &Conditions,
        access: Access,
        now: Millis,
    ) -> Result<Option<&Item>, Box<StoreResponse>> {
        // 0. The header combination, before any state is read (§1.1.3 step 1, §1.1.4).
        let valid = match access.write_kind() {
            None => conditions::validate_read(c),
            Some(_) => conditions::validate_write(c),
        };
        valid.map_err(StoreResponse::condition)?;
        let lease_id = match c.lease_id.as_deref() {
            None => None,
            Some(id) => Some(
                lease::parse_guid(id)
                    .ok_or_else(|| StoreResponse::error(400, "InvalidHeaderValue"))?,
            ),
        };
        // 1. Read the blob.
        if !self.containers.contains(&key.container) {
            return Err(Box::new(StoreResponse::error(404, "ContainerNotFound")));
        }
        let item = self.item(key);
        // 2. Lease check (§2.5, AMBIG-3: before conditions and existence). A blob that
        //    does not exist has no lease: creating it with an id is accepted (AMBIG-8).
        let lease_skipped = access == Access::SetMetadata && self.bugs.metadata_ignores_lease;
        if item.is_some() && !lease_skipped {
            let what = match access.write_kind() {
                None => Use::BlobRead,
                Some(_) => Use::BlobWrite,
            };
            let record = self.leases.get(&LeaseTarget::Blob(key.clone()));
            lease::check_use(record, lease_id.as_deref(), now, what, &self.bugs)
                .map_err(|code| StoreResponse::error(412, code))?;
        }
        // 3. Conditional headers.
        let current = self.current(key);
        let evaluated = match access.write_kind() {
            None => conditions::evaluate_read(c, current),
            Some(kind) => conditions::evaluate_write(c, current, kind, self.bugs.skip_if_match),
        };
        match evaluated {
            Ok(()) => Ok(item),
            Err(ConditionFailure::NotModified) => {
                let item = item.expect("304 only for an existing item");
                Err(Box::new(StoreResponse::ok(304, Some(item.view(false)))))
            }
            Err(f) => Err(Box::new(StoreResponse::condition(f))),
        }
    }

    /// Get Blob (`shown` [`Shown::Whole`]) or Get Blob Properties ([`Shown::Properties`]).
    fn read(&self, key: &ItemKey, c: &Conditions, shown: Shown, now: Millis) -> StoreResponse {
        match self.check(key, c, Access::Read, now) {
            Err(stop) => *stop,
            Ok(Some(item)) => StoreResponse::ok(200, Some(item.view_of(shown))),
            // 4. Absent: 404, also when If-Match was sent (§1.1.4).
            Ok(None) => StoreResponse::error(404, "BlobNotFound"),
        }
    }

    fn put(
        &mut self,
        key: &ItemKey,
        body: &str,
        metadata: &Metadata,
        c: &Conditions,
        now: Millis,
    ) -> (StoreResponse, Option<Effect>) {
        // 4. Absent: create.
        let existed = match self.check(key, c, Access::Write(WriteKind::Put), now) {
            Err(stop) => return (*stop, None),
            Ok(item) => item.is_some(),
        };
        let version = self.last_version(key).unwrap_or(0) + 1;
        let mut item = Item {
            body: body.to_string(),
            etag: ETag::from_version(version),
            last_modified: now,
            version,
            metadata: metadata.clone(),
        };
        if self.bugs.same_body_keeps_etag {
            if let Some(old) = self.item(key).filter(|old| old.body == body) {
                item.etag = old.etag.clone();
                item.version = old.version;
            }
        }
        let view = item.view(false);
        let effect = Effect::written(key.clone(), item);
        self.redo(&effect);
        // Put Blob answers 201 Created on a replace too.
        let status = if existed && self.bugs.replace_answers_200 {
            200
        } else {
            201
        };
        (StoreResponse::ok(status, Some(view)), Some(effect))
    }

    fn delete(
        &mut self,
        key: &ItemKey,
        c: &Conditions,
        now: Millis,
    ) -> (StoreResponse, Option<Effect>) {
        let item = match self.check(key, c, Access::Write(WriteKind::Other), now) {
            Err(stop) => return (*stop, None),
            Ok(item) => item,
        };
        // 4. Absent: 404.
        let Some(item) = item else {
            return (StoreResponse::error(404, "BlobNotFound"), None);
        };
        let effect = Effect::ItemDeleted {
            key: key.clone(),
            version: item.version + 1,
            keep_tombstone: !self.bugs.etag_reuse,
        };
        self.redo(&effect);
        (StoreResponse::ok(202, None), Some(effect))
    }

    /// Set Blob Metadata: the write rules and the lease check; a new version, ETag and
    /// Last-Modified (E1), the content kept, the metadata replaced.
    fn set_metadata(
        &mut self,
        key: &ItemKey,
        metadata: &Metadata,
        c: &Conditions,
        now: Millis,
    ) -> (StoreResponse, Option<Effect>) {
        let item = match self.check(key, c, Access::SetMetadata, now) {
            Err(stop) => return (*stop, None),
            Ok(item) => item,
        };
        // 4. Absent: 404.
        let Some(old) = item else {
            return (StoreResponse::error(404, "BlobNotFound"), None);
        };
        // The seeded bug `metadata_keeps_etag` keeps the old version and ETag.
        let version = if self.bugs.metadata_keeps_etag {
            old.version
        } else {
            self.last_version(key).unwrap_or(0) + 1
        };
        let item = Item {
            body: old.body.clone(),
            etag: ETag::from_version(version),
            last_modified: now,
            version,
            metadata: metadata.clone(),
        };
        let view = item.view(false);
        let effect = Effect::written(key.clone(), item);
        self.redo(&effect);
        (StoreResponse::ok(200, Some(view)), Some(effect))
    }

    /// Replays a logged effect. Effects are absolute (they set state rather than change
    /// it), so redoing the same effect twice leaves the same state as once. Effects must
    /// be redone in log order (an item's container is created by an earlier effect).
    pub fn redo(&mut self, effect: &Effect) {
        match effect {
            Effect::ContainerCreated { container } => {
                self.containers.insert(container.clone());
            }
            Effect::ItemWritten { key, item } | Effect::ItemWrittenWithMetadata { key, item } => {
                self.write_item(key, item)
            }
            Effect::ItemDeleted {
                key,
                version,
                keep_tombstone,
            } => {
                if *keep_tombstone {
                    let tombstone = Slot::Tombstone { version: *version };
                    match self.slots.get_mut(key) {
                        Some(slot) => *slot = tombstone,
                        None => {
                            self.slots.insert(key.clone(), tombstone);
                        }
                    }
                } else {
                    self.slots.remove(key);
                }
                // §2.6: deleting the blob destroys its lease (the seeded bug
                // `delete_keeps_lease` leaves it).
                if !self.bugs.delete_keeps_lease {
                    self.leases.set(&LeaseTarget::Blob(key.clone()), None);
                }
            }
        }
    }

    /// Redoes a write: `item` at `key`.
    fn write_item(&mut self, key: &ItemKey, item: &Item) {
        let item = item.clone();
        let last_modified = item.last_modified;
        // An existing slot is overwritten in place: no copy of the key.
        match self.slots.get_mut(key) {
            Some(slot) => *slot = Slot::Live(item),
            None => {
                self.slots.insert(key.clone(), Slot::Live(item));
            }
        }
        // §2.6, judged at the write's own time (its Last-Modified).
        let keep = self.bugs.renew_after_write;
        self.leases.after_blob_write(key, last_modified, keep);
    }

    /// A lease request (SPEC §2) at server time `now`: parameters (400), the
    /// resource (404), the blob's condition headers (412), then the lease state
    /// machine ([`Leases::act`]) or the container lease check (§2.7).
    pub fn apply_lease(
        &mut self,
        req: &LeaseRequest,
        now: Millis,
    ) -> (LeaseResponse, Option<lease::Effect>) {
        let target = match req {
            LeaseRequest::Action { target, .. } => target.clone(),
            LeaseRequest::DeleteContainer { container, .. }
            | LeaseRequest::SetContainerMetadata { container, .. } => {
                LeaseTarget::Container(container.clone())
            }
        };
        let record = self.leases.get(&target);
        let refuse =
            |status: u16, code: &str| (LeaseResponse::error(status, code, now, record), None);
        if let LeaseRequest::Action { action, .. } = req {
            if let Err((status, code)) = lease::validate(action) {
                return refuse(status, code);
            }
        }
        let sent = match req {
            LeaseRequest::DeleteContainer { lease_id, .. }
            | LeaseRequest::SetContainerMetadata { lease_id, .. } => match lease_id.as_deref() {
                None => None,
                Some(id) => match lease::parse_guid(id) {
                    Some(id) => Some(id),
                    None => return refuse(400, "InvalidHeaderValue"),
                },
            },
            LeaseRequest::Action { .. } => None,
        };
        if !self.containers.contains(target.container()) {
            return refuse(404, "ContainerNotFound");
        }
        match req {
            LeaseRequest::Action {
                target,
                action,
                conditions,
            } => {
                if let LeaseTarget::Blob(key) = target {
                    if self.item(key).is_none() {
                        return refuse(404, "BlobNotFound");
                    }
                    let evaluated = conditions::validate_write(conditions).and_then(|()| {
                        conditions::evaluate_write(
                            conditions,
                            self.current(key),
                            WriteKind::Other,
                            false,
                        )
                    });
                    if let Err(f) = evaluated {
                        return refuse(f.status(), f.error_code().unwrap_or(""));
                    }
                }
                self.leases.act(target, action, now, &self.bugs)
            }
            LeaseRequest::SetContainerMetadata { .. } => {
                match lease::check_use(
                    record,
                    sent.as_deref(),
                    now,
                    Use::ContainerOther,
                    &self.bugs,
                ) {
                    Err(code) => refuse(412, code),
                    Ok(()) => {
                        let ok = LeaseResponse {
                            status: 200,
                            error_code: None,
                            lease_id: None,
                            lease_time_s: None,
                            server_ms: now,
                            state: lease::state_of(record, now),
                            duration: lease::duration_of(record, now),
                        };
                        (ok, None)
                    }
                }
            }
            LeaseRequest::DeleteContainer {
                container,
                lease_id,
            } => {
                let gate = if self.bugs.container_delete_ignores_lease {
                    Ok(())
                } else {
                    lease::check_use(
                        record,
                        sent.as_deref(),
                        now,
                        Use::ContainerDelete,
                        &self.bugs,
                    )
                };
                if let Err(code) = gate {
                    return refuse(412, code);
                }
                let effect = lease::Effect::ContainerDeleted {
                    container: container.clone(),
                    lease_id: lease_id.clone(),
                    at_ms: now,
                };
                self.redo_lease(&effect);
                let ok = LeaseResponse {
                    status: 202,
                    error_code: None,
                    lease_id: None,
                    lease_time_s: None,
                    server_ms: now,
                    state: lease::LeaseState::Available,
                    duration: None,
                };
                (ok, Some(effect))
            }
        }
    }

    /// Replays a logged lease effect (absolute, like [`Store::redo`]).
    pub fn redo_lease(&mut self, effect: &lease::Effect) {
        match effect {
            lease::Effect::Set {
                target,
                lease,
                ids_drawn,
                ..
            } => {
                self.leases.set(target, lease.clone());
                let forget = self.bugs.lease_id_reuse;
                self.leases.restore_ids(*ids_drawn, forget);
            }
            lease::Effect::ContainerDeleted { container, .. } => {
                self.containers.remove(container);
                self.leases.drop_container(container);
                // The blobs go; tombstones keep their versions (E1 across a re-create).
                for (key, slot) in self.slots.iter_mut() {
                    if key.container == *container {
                        if let Slot::Live(item) = slot {
                            *slot = Slot::Tombstone {
                                version: item.version + 1,
                            };
                        }
                    }
                }
            }
        }
    }

    /// The lease records.
    pub fn leases(&self) -> &Leases {
        &self.leases
    }

    /// The live item at `key`, if any.
    pub fn item(&self, key: &ItemKey) -> Option<&Item> {
        self.slots.get(key).and_then(Slot::live)
    }

    /// The last version the store remembers for `key`: the live item's, or the tombstone's.
    pub fn last_version(&self, key: &ItemKey) -> Option<u64> {
        self.slots.get(key).map(Slot::version)
    }

    /// True if the container exists.
    pub fn has_container(&self, container: &str) -> bool {
        self.containers.contains(container)
    }

    /// The containers, in order.
    pub fn containers(&self) -> impl Iterator<Item = &str> + '_ {
        self.containers.iter().map(String::as_str)
    }

    /// The live items, in key order.
    pub fn items(&self) -> impl Iterator<Item = (&ItemKey, &Item)> + '_ {
        self.slots
            .iter()
            .filter_map(|(k, s)| s.live().map(|item| (k, item)))
    }
}

/// A short form of a request for logs, e.g. `put docs/k3 If-Match "0x8D..2"`.
pub(crate) fn describe(op: &StoreRequest) -> String {
    let (verb, key, c) = match op {
        StoreRequest::CreateContainer { container } => {
            return format!("create container {container}")
        }
        StoreRequest::Read { key, conditions } => ("read", key, conditions),
        StoreRequest::Put {
            key, conditions, ..
        } => ("put", key, conditions),
        StoreRequest::Delete { key, conditions } => ("delete", key, conditions),
        StoreRequest::GetProperties { key, conditions } => ("head", key, conditions),
        StoreRequest::SetMetadata {
            key, conditions, ..
        } => ("set metadata", key, conditions),
    };
    let mut out = format!("{verb} {}/{}", key.container, key.id);
    for (name, m) in [
        ("If-Match", &c.if_match),
        ("If-None-Match", &c.if_none_match),
    ] {
        match m {
            Some(EtagMatch::Any) => out += &format!(" {name}: *"),
            Some(EtagMatch::Tags(t)) => {
                out += &format!(
                    " {name}: {}",
                    t.iter().map(|e| e.0.as_str()).collect::<Vec<_>>().join(",")
                )
            }
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests;
