//! The object store: containers of items with ETags, Last-Modified and a per-item version,
//! and conditional requests with Blob semantics (SPEC §1.1). A pure state machine:
//! `apply(request, now) -> (response, effect)`; `redo(effect)` replays a logged mutation.
//!
//! Order of checks in every request (SPEC §1.1.3 step 1, §1.1.5, AMBIG-3):
//! 1. the header combination (400, before any state is read);
//! 2. the container (404 `ContainerNotFound`);
//! 3. the conditions against the item (412 / 409 / 304 / 400);
//! 4. a missing item (404 `BlobNotFound`, for reads and deletes);
//! 5. apply: a new version, ETag and Last-Modified.

use crate::conditions::{self, ConditionFailure, Current, WriteKind};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

pub use crate::conditions::{Conditions, ETag, EtagMatch, Millis};

/// The address of an item: container, partition key, id. Ordered field by field.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ItemKey {
    /// The container (a Blob container / Cosmos container).
    pub container: String,
    /// The partition key (Cosmos); blobs can use one fixed value.
    pub partition_key: String,
    /// The item id (the blob name).
    pub id: String,
}

impl ItemKey {
    /// Builds a key from its three parts.
    pub fn new(
        container: impl Into<String>,
        partition_key: impl Into<String>,
        id: impl Into<String>,
    ) -> ItemKey {
        ItemKey {
            container: container.into(),
            partition_key: partition_key.into(),
            id: id.into(),
        }
    }
}

/// A live item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// The content.
    pub body: String,
    /// The ETag, derived from `version` ([`ETag::from_version`]).
    pub etag: ETag,
    /// The server clock (ms) at the mutation that produced this version.
    pub last_modified: Millis,
    /// 1 on first create, +1 on every successful put or delete; continues across delete
    /// and re-create (unless the `etag_reuse` bug is on).
    pub version: u64,
}

impl Item {
    /// The view of this item in a response, with or without the body.
    pub fn view(&self, with_body: bool) -> ItemView {
        ItemView {
            body: with_body.then(|| self.body.clone()),
            etag: self.etag.clone(),
            last_modified: self.last_modified,
            version: self.version,
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
    /// Upsert an item (SPEC §1.1.3): 201 created / 200 replaced / 412 /
    /// 409 `BlobAlreadyExists` (`If-None-Match: *` on an existing item) / 400.
    Put {
        /// The item.
        key: ItemKey,
        /// The new content.
        body: String,
        /// The conditional headers (write rules).
        conditions: Conditions,
    },
    /// Delete an item: 202 / 404 `BlobNotFound` / 412 / 400.
    Delete {
        /// The item.
        key: ItemKey,
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
            | StoreRequest::Delete { key, .. } => Some(key),
        }
    }

    /// The container the request addresses.
    pub fn container(&self) -> &str {
        match self {
            StoreRequest::CreateContainer { container } => container,
            StoreRequest::Read { key, .. }
            | StoreRequest::Put { key, .. }
            | StoreRequest::Delete { key, .. } => &key.container,
        }
    }

    /// True for requests that may change state (everything but `Read`).
    pub fn is_write(&self) -> bool {
        !matches!(self, StoreRequest::Read { .. })
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
}

/// The store's answer to one request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreResponse {
    /// The HTTP status.
    pub status: u16,
    /// The `x-ms-error-code` on failures (`None` on 2xx and 304).
    pub error_code: Option<String>,
    /// The item: on a 200 read (with body), a 304 read (no body) and a successful put
    /// (no body; the new ETag/version). `None` otherwise (errors, deletes, containers).
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
}

/// Seeded bugs of the store, each off by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreBugs {
    /// `If-Match` always passes on Put and Delete of an existing item (an absent item
    /// still fails `If-Match` with 412). Breaks E2/E3 (lost updates).
    pub skip_if_match: bool,
    /// Delete forgets the tombstone, so a re-created item starts again at version 1
    /// and gets an ETag it had before. Breaks E1.
    pub etag_reuse: bool,
}

/// One slot of the store: a live item, or the tombstone of a deleted one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum Slot {
    Live(Item),
    Tombstone { version: u64 },
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
    bugs: StoreBugs,
    containers: BTreeSet<String>,
    slots: BTreeMap<ItemKey, Slot>,
}

impl Store {
    /// An empty store (no containers) with the given bugs switched on.
    pub fn new(bugs: StoreBugs) -> Store {
        Store {
            bugs,
            containers: BTreeSet::new(),
            slots: BTreeMap::new(),
        }
    }

    /// The bugs this store was built with.
    pub fn bugs(&self) -> StoreBugs {
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
            StoreRequest::Read { key, conditions } => (self.read(key, conditions), None),
            StoreRequest::Put {
                key,
                body,
                conditions,
            } => self.put(key, body, conditions, now),
            StoreRequest::Delete { key, conditions } => self.delete(key, conditions),
        }
    }

    fn current(&self, key: &ItemKey) -> Option<Current<'_>> {
        self.item(key).map(|item| Current {
            etag: &item.etag,
            last_modified: item.last_modified,
        })
    }

    fn read(&self, key: &ItemKey, c: &Conditions) -> StoreResponse {
        if let Err(f) = conditions::validate_read(c) {
            return StoreResponse::condition(f);
        }
        if !self.containers.contains(&key.container) {
            return StoreResponse::error(404, "ContainerNotFound");
        }
        match conditions::evaluate_read(c, self.current(key)) {
            Err(ConditionFailure::NotModified) => {
                let item = self.item(key).expect("304 only for an existing item");
                StoreResponse::ok(304, Some(item.view(false)))
            }
            Err(f) => StoreResponse::condition(f),
            Ok(()) => match self.item(key) {
                Some(item) => StoreResponse::ok(200, Some(item.view(true))),
                None => StoreResponse::error(404, "BlobNotFound"),
            },
        }
    }

    fn put(
        &mut self,
        key: &ItemKey,
        body: &str,
        c: &Conditions,
        now: Millis,
    ) -> (StoreResponse, Option<Effect>) {
        if let Err(f) = conditions::validate_write(c) {
            return (StoreResponse::condition(f), None);
        }
        if !self.containers.contains(&key.container) {
            return (StoreResponse::error(404, "ContainerNotFound"), None);
        }
        if let Err(f) = conditions::evaluate_write(
            c,
            self.current(key),
            WriteKind::Put,
            self.bugs.skip_if_match,
        ) {
            return (StoreResponse::condition(f), None);
        }
        let existed = self.item(key).is_some();
        let version = self.last_version(key).unwrap_or(0) + 1;
        let item = Item {
            body: body.to_string(),
            etag: ETag::from_version(version),
            last_modified: now,
            version,
        };
        let view = item.view(false);
        let effect = Effect::ItemWritten {
            key: key.clone(),
            item,
        };
        self.redo(&effect);
        let status = if existed { 200 } else { 201 };
        (StoreResponse::ok(status, Some(view)), Some(effect))
    }

    fn delete(&mut self, key: &ItemKey, c: &Conditions) -> (StoreResponse, Option<Effect>) {
        if let Err(f) = conditions::validate_write(c) {
            return (StoreResponse::condition(f), None);
        }
        if !self.containers.contains(&key.container) {
            return (StoreResponse::error(404, "ContainerNotFound"), None);
        }
        if let Err(f) = conditions::evaluate_write(
            c,
            self.current(key),
            WriteKind::Other,
            self.bugs.skip_if_match,
        ) {
            return (StoreResponse::condition(f), None);
        }
        let Some(item) = self.item(key) else {
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

    /// Replays a logged effect. Effects are absolute (they set state rather than change
    /// it), so redoing the same effect twice leaves the same state as once. Effects must
    /// be redone in log order (an item's container is created by an earlier effect).
    pub fn redo(&mut self, effect: &Effect) {
        match effect {
            Effect::ContainerCreated { container } => {
                self.containers.insert(container.clone());
            }
            Effect::ItemWritten { key, item } => {
                self.slots.insert(key.clone(), Slot::Live(item.clone()));
            }
            Effect::ItemDeleted {
                key,
                version,
                keep_tombstone,
            } => {
                if *keep_tombstone {
                    self.slots
                        .insert(key.clone(), Slot::Tombstone { version: *version });
                } else {
                    self.slots.remove(key);
                }
            }
        }
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
