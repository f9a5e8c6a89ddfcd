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
//! 4. a missing item: 404 `BlobNotFound` (reads, also with `If-Match`; deletes), or create
//!    (puts);
//! 5. apply: a new version, ETag and Last-Modified.

use crate::core::bugs::ModelBugs;
use crate::core::conditions::{self, ConditionFailure, Current, WriteKind};
use crate::services::lease::{self, LeaseRequest, LeaseResponse, LeaseTarget, Leases, Use};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

pub use crate::core::conditions::{Conditions, ETag, EtagMatch, Millis};
pub use crate::core::keys::ItemKey;

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
    /// Upsert an item (SPEC §1.1.3): 201 whether created or replaced / 412 /
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

/// Which rules a request's conditions follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// Read rules (SPEC §1.1.4).
    Read,
    /// Write rules (SPEC §1.1.3), for this kind of write.
    Write(WriteKind),
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
            StoreRequest::Read { key, conditions } => (self.read(key, conditions, now), None),
            StoreRequest::Put {
                key,
                body,
                conditions,
            } => self.put(key, body, conditions, now),
            StoreRequest::Delete { key, conditions } => self.delete(key, conditions, now),
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
    /// request may go on to step 4, or the response that stops it.
    fn check(
        &self,
        key: &ItemKey,
        c: &Conditions,
        access: Access,
        now: Millis,
    ) -> Result<Option<&Item>, StoreResponse> {
        // 0. The header combination, before any state is read (§1.1.3 step 1, §1.1.4).
        let valid = match access {
            Access::Read => conditions::validate_read(c),
            Access::Write(_) => conditions::validate_write(c),
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
            return Err(StoreResponse::error(404, "ContainerNotFound"));
        }
        let item = self.item(key);
        // 2. Lease check (§2.5, AMBIG-3: before conditions and existence). A blob that
        //    does not exist has no lease: creating it with an id is accepted (AMBIG-8).
        if item.is_some() {
            let what = match access {
                Access::Read => Use::BlobRead,
                Access::Write(_) => Use::BlobWrite,
            };
            let record = self.leases.get(&LeaseTarget::Blob(key.clone()));
            lease::check_use(record, lease_id.as_deref(), now, what, &self.bugs)
                .map_err(|code| StoreResponse::error(412, code))?;
        }
        // 3. Conditional headers.
        let current = self.current(key);
        let evaluated = match access {
            Access::Read => conditions::evaluate_read(c, current),
            Access::Write(kind) => {
                conditions::evaluate_write(c, current, kind, self.bugs.skip_if_match)
            }
        };
        match evaluated {
            Ok(()) => Ok(item),
            Err(ConditionFailure::NotModified) => {
                let item = item.expect("304 only for an existing item");
                Err(StoreResponse::ok(304, Some(item.view(false))))
            }
            Err(f) => Err(StoreResponse::condition(f)),
        }
    }

    fn read(&self, key: &ItemKey, c: &Conditions, now: Millis) -> StoreResponse {
        match self.check(key, c, Access::Read, now) {
            Err(stop) => stop,
            Ok(Some(item)) => StoreResponse::ok(200, Some(item.view(true))),
            // 4. Absent: 404, also when If-Match was sent (§1.1.4).
            Ok(None) => StoreResponse::error(404, "BlobNotFound"),
        }
    }

    fn put(
        &mut self,
        key: &ItemKey,
        body: &str,
        c: &Conditions,
        now: Millis,
    ) -> (StoreResponse, Option<Effect>) {
        // 4. Absent: create.
        let existed = match self.check(key, c, Access::Write(WriteKind::Put), now) {
            Err(stop) => return (stop, None),
            Ok(item) => item.is_some(),
        };
        let version = self.last_version(key).unwrap_or(0) + 1;
        let mut item = Item {
            body: body.to_string(),
            etag: ETag::from_version(version),
            last_modified: now,
            version,
        };
        if self.bugs.same_body_keeps_etag {
            if let Some(old) = self.item(key).filter(|old| old.body == body) {
                item.etag = old.etag.clone();
                item.version = old.version;
            }
        }
        let view = item.view(false);
        let effect = Effect::ItemWritten {
            key: key.clone(),
            item,
        };
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
            Err(stop) => return (stop, None),
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

    /// Replays a logged effect. Effects are absolute (they set state rather than change
    /// it), so redoing the same effect twice leaves the same state as once. Effects must
    /// be redone in log order (an item's container is created by an earlier effect).
    pub fn redo(&mut self, effect: &Effect) {
        match effect {
            Effect::ContainerCreated { container } => {
                self.containers.insert(container.clone());
            }
            Effect::ItemWritten { key, item } => {
                // An existing slot is overwritten in place: no copy of the key.
                match self.slots.get_mut(key) {
                    Some(slot) => *slot = Slot::Live(item.clone()),
                    None => {
                        self.slots.insert(key.clone(), Slot::Live(item.clone()));
                    }
                }
                // §2.6, judged at the write's own time (its Last-Modified).
                let keep = self.bugs.renew_after_write;
                self.leases.after_blob_write(key, item.last_modified, keep);
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
