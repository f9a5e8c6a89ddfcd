//! The object store: containers of items with ETags, Last-Modified and a per-item version,
//! and conditional requests with Blob semantics (SPEC §1.1). A pure state machine:
//! `apply(request, now) -> (response, effect)`; `redo(effect)` replays a logged mutation.
//!
//! Order of checks in every request (SPEC §1.1.3 step 1, §1.1.4, §1.1.5, AMBIG-3), in one
//! place ([`Store::check`]) for reads and writes:
//! 0. the header combination (400, before any state is read);
//! 1. read the blob (its container first: 404 `ContainerNotFound`);
//! 2. the lease check (§2.5, [`crate::lease::check_use`]: 412s; a lease id that is not
//!    a GUID is a 400 at step 0);
//! 3. the conditions against the item (412 / 409 / 304 / 400);
//! 4. a missing item: 404 `BlobNotFound` (reads, also with `If-Match`; deletes), or create
//!    (puts);
//! 5. apply: a new version, ETag and Last-Modified.

use crate::bugs::ModelBugs;
use crate::conditions::{self, ConditionFailure, Current, WriteKind};
use crate::lease::{self, LeaseRequest, LeaseResponse, LeaseTarget, Leases, Use};
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
            let bug = self.bugs.write_without_lease_check;
            lease::check_use(record, lease_id.as_deref(), now, what, bug)
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
        let status = if existed { 200 } else { 201 };
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
                // §2.6: deleting the blob destroys its lease.
                self.leases.set(&LeaseTarget::Blob(key.clone()), None);
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
                let bug = self.bugs.break_ignores_period;
                self.leases.act(target, action, now, bug)
            }
            LeaseRequest::SetContainerMetadata { .. } => {
                match lease::check_use(record, sent.as_deref(), now, Use::ContainerOther, false) {
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
                    lease::check_use(record, sent.as_deref(), now, Use::ContainerDelete, false)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const C: &str = "c";

    fn key(id: &str) -> ItemKey {
        ItemKey::new(C, "pk", id)
    }

    fn store_with(bugs: ModelBugs) -> Store {
        let mut s = Store::new(bugs);
        let (r, e) = s.apply(
            &StoreRequest::CreateContainer {
                container: C.into(),
            },
            0,
        );
        assert_eq!(r.status, 201);
        assert!(e.is_some());
        s
    }

    fn store() -> Store {
        store_with(ModelBugs::default())
    }

    fn put(s: &mut Store, id: &str, body: &str, c: Conditions, now: Millis) -> StoreResponse {
        let before = s.clone();
        let (r, e) = s.apply(
            &StoreRequest::Put {
                key: key(id),
                body: body.into(),
                conditions: c,
            },
            now,
        );
        check_effect(&before, s, &r, e.as_ref());
        r
    }

    fn delete(s: &mut Store, id: &str, c: Conditions, now: Millis) -> StoreResponse {
        let before = s.clone();
        let (r, e) = s.apply(
            &StoreRequest::Delete {
                key: key(id),
                conditions: c,
            },
            now,
        );
        check_effect(&before, s, &r, e.as_ref());
        r
    }

    fn read(s: &mut Store, id: &str, c: Conditions, now: Millis) -> StoreResponse {
        let before = s.clone();
        let (r, e) = s.apply(
            &StoreRequest::Read {
                key: key(id),
                conditions: c,
            },
            now,
        );
        assert!(e.is_none(), "reads never have an effect");
        assert_eq!(&before, s, "reads never change state");
        r
    }

    /// Effect is Some iff the state changed and the response is a success; redoing the
    /// effect on the old state gives the new state.
    fn check_effect(before: &Store, after: &Store, r: &StoreResponse, e: Option<&Effect>) {
        match e {
            Some(e) => {
                assert!(r.is_success(), "effect on a failure: {r:?}");
                assert_ne!(before, after);
                let mut redone = before.clone();
                redone.redo(e);
                assert_eq!(&redone, after);
            }
            None => {
                assert!(!r.is_success(), "success without effect: {r:?}");
                assert_eq!(before, after, "failed request changed state: {r:?}");
            }
        }
    }

    fn assert_status(r: &StoreResponse, status: u16, code: Option<&str>) {
        assert_eq!(r.status, status, "{r:?}");
        assert_eq!(r.error_code.as_deref(), code, "{r:?}");
    }

    fn tags(etags: &[&ETag]) -> EtagMatch {
        EtagMatch::Tags(etags.iter().map(|e| (*e).clone()).collect())
    }

    fn stale() -> ETag {
        ETag::quoted("0x8DFFFFFFFFFFFFFF")
    }

    /// A store with item "a" written at 10.5 s (Last-Modified second 10); returns its ETag.
    fn with_item() -> (Store, ETag) {
        let mut s = store();
        let r = put(&mut s, "a", "v1", Conditions::none(), 10_500);
        assert_status(&r, 201, None);
        let etag = r.item.unwrap().etag;
        (s, etag)
    }

    const MULTI: Option<&str> = Some("MultipleConditionHeadersNotSupported");
    const NOT_MET: Option<&str> = Some("ConditionNotMet");

    // ---- basics ---------------------------------------------------------------------

    #[test]
    fn etag_equality_ignores_quotes() {
        assert_eq!(ETag("\"0x1\"".into()), ETag("0x1".into()));
        assert_eq!(ETag::quoted("0x1"), ETag::quoted("\"0x1\""));
        assert_eq!(ETag::quoted("0x1").0, "\"0x1\"");
        assert_ne!(ETag::quoted("0x1"), ETag::quoted("0x2"));
        assert_eq!(ETag::from_version(3).0, "\"0x8D00000000000003\"");
        assert_eq!(ETag::from_version(3).unquoted().len(), 18);
    }

    #[test]
    fn container_create_and_missing_container() {
        let mut s = Store::new(ModelBugs::default());
        let k = key("a");
        for req in [
            StoreRequest::Read {
                key: k.clone(),
                conditions: Conditions::none(),
            },
            StoreRequest::Put {
                key: k.clone(),
                body: "x".into(),
                conditions: Conditions::none(),
            },
            StoreRequest::Delete {
                key: k.clone(),
                conditions: Conditions::none(),
            },
            StoreRequest::Put {
                key: k.clone(),
                body: "x".into(),
                conditions: Conditions::if_match_any(),
            },
        ] {
            let (r, e) = s.apply(&req, 1);
            assert_status(&r, 404, Some("ContainerNotFound"));
            assert!(e.is_none());
        }
        let create = StoreRequest::CreateContainer {
            container: C.into(),
        };
        let (r, e) = s.apply(&create, 1);
        assert_status(&r, 201, None);
        assert_eq!(
            e,
            Some(Effect::ContainerCreated {
                container: C.into()
            })
        );
        assert!(s.has_container(C));
        let (r, e) = s.apply(&create, 2);
        assert_status(&r, 409, Some("ContainerAlreadyExists"));
        assert!(e.is_none());
        assert_eq!(s.containers().collect::<Vec<_>>(), vec![C]);
    }

    #[test]
    fn put_read_delete_versions_and_statuses() {
        let mut s = store();
        let r1 = put(&mut s, "a", "v1", Conditions::none(), 1_000);
        assert_status(&r1, 201, None);
        let v1 = r1.item.unwrap();
        assert_eq!((v1.version, v1.body.clone()), (1, None));
        assert_eq!(v1.etag, ETag::from_version(1));
        assert_eq!(v1.last_modified, 1_000);

        let r = read(&mut s, "a", Conditions::none(), 1_500);
        assert_status(&r, 200, None);
        assert_eq!(
            r.item,
            Some(ItemView {
                body: Some("v1".into()),
                etag: v1.etag.clone(),
                last_modified: 1_000,
                version: 1
            })
        );

        let r2 = put(&mut s, "a", "v2", Conditions::none(), 2_000);
        assert_status(&r2, 200, None);
        assert_eq!(r2.item.as_ref().unwrap().version, 2);

        assert_status(&delete(&mut s, "a", Conditions::none(), 3_000), 202, None);
        assert_eq!(s.item(&key("a")), None);
        assert_eq!(s.last_version(&key("a")), Some(3));
        assert_status(
            &read(&mut s, "a", Conditions::none(), 3_000),
            404,
            Some("BlobNotFound"),
        );
        assert_status(
            &delete(&mut s, "a", Conditions::none(), 3_000),
            404,
            Some("BlobNotFound"),
        );

        // Re-create continues the version (the tombstone remembers 3).
        let r4 = put(&mut s, "a", "v4", Conditions::none(), 4_000);
        assert_status(&r4, 201, None);
        assert_eq!(r4.item.unwrap().version, 4);
        assert_eq!(s.items().count(), 1);
    }

    // ---- SPEC §1.1.3 step 1: combination rule (E7) -----------------------------------

    fn illegal_write_conditions() -> Vec<Conditions> {
        let e = stale();
        let e2 = ETag::quoted("0x2");
        vec![
            // more than one ETag
            Conditions {
                if_match: Some(tags(&[&e, &e2])),
                ..Conditions::default()
            },
            Conditions {
                if_none_match: Some(tags(&[&e, &e2])),
                ..Conditions::default()
            },
            // illegal pairs
            Conditions {
                if_match: Some(tags(&[&e])),
                if_none_match: Some(tags(&[&e2])),
                ..Conditions::default()
            },
            Conditions {
                if_match: Some(EtagMatch::Any),
                if_modified_since: Some(vec![1]),
                ..Conditions::default()
            },
            Conditions {
                if_none_match: Some(EtagMatch::Any),
                if_unmodified_since: Some(vec![1]),
                ..Conditions::default()
            },
            Conditions {
                if_modified_since: Some(vec![1]),
                if_unmodified_since: Some(vec![1]),
                ..Conditions::default()
            },
            // more than two headers
            Conditions {
                if_match: Some(tags(&[&e])),
                if_unmodified_since: Some(vec![1]),
                if_modified_since: Some(vec![1]),
                ..Conditions::default()
            },
            Conditions {
                if_none_match: Some(tags(&[&e])),
                if_modified_since: Some(vec![1]),
                if_unmodified_since: Some(vec![1]),
                ..Conditions::default()
            },
            Conditions {
                if_match: Some(EtagMatch::Any),
                if_none_match: Some(EtagMatch::Any),
                if_modified_since: Some(vec![1]),
                if_unmodified_since: Some(vec![1]),
                lease_id: None,
            },
        ]
    }

    #[test]
    fn e7_illegal_write_combinations_are_400_before_state_is_read() {
        let (mut s, etag) = with_item();
        for c in illegal_write_conditions() {
            // against an existing item, an absent item and a missing container: always 400
            assert_status(&put(&mut s, "a", "x", c.clone(), 20_000), 400, MULTI);
            assert_status(&delete(&mut s, "a", c.clone(), 20_000), 400, MULTI);
            assert_status(&put(&mut s, "zz", "x", c.clone(), 20_000), 400, MULTI);
            assert_status(&delete(&mut s, "zz", c.clone(), 20_000), 400, MULTI);
            let mut empty = Store::new(ModelBugs::default());
            let (r, e) = empty.apply(
                &StoreRequest::Put {
                    key: key("a"),
                    body: "x".into(),
                    conditions: c.clone(),
                },
                1,
            );
            assert_status(&r, 400, MULTI);
            assert!(e.is_none());
            assert_eq!(empty, Store::new(ModelBugs::default()));
        }
        // nothing changed
        assert_eq!(s.item(&key("a")).unwrap().etag, etag);
        assert_eq!(s.item(&key("a")).unwrap().version, 1);
        assert_eq!(s.item(&key("zz")), None);
    }

    #[test]
    fn allowed_write_pairs_are_not_400() {
        let (mut s, etag) = with_item();
        // {If-Match, If-Unmodified-Since}: If-Match decides, the (failing) date is ignored.
        let c = Conditions {
            if_match: Some(tags(&[&etag])),
            if_unmodified_since: Some(vec![0]),
            ..Conditions::default()
        };
        assert_status(&put(&mut s, "a", "v2", c, 20_000), 200, None);
        // {If-None-Match, If-Modified-Since}: If-None-Match decides, the (failing) date is ignored.
        let c = Conditions {
            if_none_match: Some(tags(&[&stale()])),
            if_modified_since: Some(vec![99_000]),
            ..Conditions::default()
        };
        assert_status(&put(&mut s, "a", "v3", c, 21_000), 200, None);
        // An empty ETag list counts as an absent header.
        let c = Conditions {
            if_match: Some(EtagMatch::Tags(vec![])),
            if_none_match: Some(EtagMatch::Tags(vec![])),
            if_modified_since: Some(vec![1_000]),
            ..Conditions::default()
        };
        assert_status(&put(&mut s, "a", "v4", c, 22_000), 200, None);
        assert_eq!(s.item(&key("a")).unwrap().version, 4);
    }

    // ---- SPEC §1.1.3 step 2: write table ---------------------------------------------

    #[test]
    fn write_if_none_match_etag() {
        // exists, equal → 412
        let (mut s, etag) = with_item();
        assert_status(
            &put(
                &mut s,
                "a",
                "x",
                Conditions::if_none_match(etag.clone()),
                20_000,
            ),
            412,
            NOT_MET,
        );
        assert_status(
            &delete(&mut s, "a", Conditions::if_none_match(etag.clone()), 20_000),
            412,
            NOT_MET,
        );
        // exists, not equal → proceed, If-Modified-Since ignored (it would fail: lm 10 <= 50)
        let c = Conditions {
            if_none_match: Some(tags(&[&stale()])),
            if_modified_since: Some(vec![50_000]),
            ..Conditions::default()
        };
        assert_status(&put(&mut s, "a", "x", c.clone(), 20_000), 200, None);
        assert_status(&delete(&mut s, "a", c.clone(), 20_000), 202, None);
        // absent → proceed
        assert_status(&put(&mut s, "a", "y", c.clone(), 30_000), 201, None);
        assert_status(
            &put(&mut s, "b", "y", Conditions::if_none_match(etag), 30_000),
            201,
            None,
        );
        // absent delete proceeds past the conditions and finds no blob → 404
        assert_status(
            &delete(&mut s, "zz", Conditions::if_none_match(stale()), 30_000),
            404,
            Some("BlobNotFound"),
        );
    }

    #[test]
    fn write_if_none_match_star() {
        let (mut s, _) = with_item();
        // exists: Put → 409 BlobAlreadyExists (AMBIG-2); other writes → 412
        assert_status(
            &put(&mut s, "a", "x", Conditions::if_none_match_any(), 20_000),
            409,
            Some("BlobAlreadyExists"),
        );
        assert_status(
            &delete(&mut s, "a", Conditions::if_none_match_any(), 20_000),
            412,
            NOT_MET,
        );
        // absent → create
        assert_status(
            &put(&mut s, "b", "x", Conditions::if_none_match_any(), 20_000),
            201,
            None,
        );
        assert_status(
            &delete(&mut s, "zz", Conditions::if_none_match_any(), 20_000),
            404,
            Some("BlobNotFound"),
        );
        // after a delete the item is absent again: create-only succeeds, version continues
        assert_status(&delete(&mut s, "a", Conditions::none(), 21_000), 202, None);
        let r = put(
            &mut s,
            "a",
            "again",
            Conditions::if_none_match_any(),
            22_000,
        );
        assert_status(&r, 201, None);
        assert_eq!(r.item.unwrap().version, 3);
    }

    #[test]
    fn write_if_match() {
        let (mut s, etag) = with_item();
        // exists, not equal → 412
        for c in [
            Conditions::if_match(stale()),
            Conditions {
                if_match: Some(tags(&[&stale()])),
                if_unmodified_since: Some(vec![99_000]), // would pass; If-Match decides
                ..Conditions::default()
            },
        ] {
            assert_status(&put(&mut s, "a", "x", c.clone(), 20_000), 412, NOT_MET);
            assert_status(&delete(&mut s, "a", c, 20_000), 412, NOT_MET);
        }
        // exists, equal → proceed, If-Unmodified-Since ignored (it would fail: 0 < lm)
        let c = Conditions {
            if_match: Some(tags(&[&etag])),
            if_unmodified_since: Some(vec![0]),
            ..Conditions::default()
        };
        let r = put(&mut s, "a", "v2", c, 20_000);
        assert_status(&r, 200, None);
        let etag2 = r.item.unwrap().etag;
        // the old etag is now stale
        assert_status(
            &put(&mut s, "a", "x", Conditions::if_match(etag), 21_000),
            412,
            NOT_MET,
        );
        // `*` on an existing item → proceed
        assert_status(
            &put(&mut s, "a", "v3", Conditions::if_match_any(), 21_000),
            200,
            None,
        );
        assert_status(
            &delete(&mut s, "a", Conditions::if_match_any(), 22_000),
            202,
            None,
        );
        // absent → 412 (also for `*`), not 404 (SPEC §1.1.5)
        for c in [Conditions::if_match(etag2), Conditions::if_match_any()] {
            assert_status(&put(&mut s, "a", "x", c.clone(), 23_000), 412, NOT_MET);
            assert_status(&delete(&mut s, "a", c.clone(), 23_000), 412, NOT_MET);
            assert_status(&put(&mut s, "never", "x", c.clone(), 23_000), 412, NOT_MET);
            assert_status(&delete(&mut s, "never", c, 23_000), 412, NOT_MET);
        }
    }

    #[test]
    fn write_if_modified_since_at_second_resolution() {
        // item written at 10.5 s: Last-Modified second 10
        let (mut s, _) = with_item();
        // lastModified <= t → 412: t = 10.999 s (same second), t = 11 s
        for t in [10_000, 10_999, 11_000] {
            assert_status(
                &put(&mut s, "a", "x", Conditions::if_modified_since(t), 20_000),
                412,
                NOT_MET,
            );
            assert_status(
                &delete(&mut s, "a", Conditions::if_modified_since(t), 20_000),
                412,
                NOT_MET,
            );
        }
        // lastModified > t → proceed (9.999 s is second 9)
        assert_status(
            &put(
                &mut s,
                "a",
                "x",
                Conditions::if_modified_since(9_999),
                20_000,
            ),
            200,
            None,
        );
        // absent → proceed
        assert_status(
            &put(
                &mut s,
                "b",
                "x",
                Conditions::if_modified_since(99_000),
                20_000,
            ),
            201,
            None,
        );
        assert_status(
            &delete(&mut s, "zz", Conditions::if_modified_since(99_000), 20_000),
            404,
            Some("BlobNotFound"),
        );
    }

    #[test]
    fn write_if_unmodified_since_at_second_resolution() {
        let (mut s, _) = with_item();
        // t < lastModified → 412 (9.999 s is second 9 < 10)
        assert_status(
            &put(
                &mut s,
                "a",
                "x",
                Conditions::if_unmodified_since(9_999),
                20_000,
            ),
            412,
            NOT_MET,
        );
        assert_status(
            &delete(&mut s, "a", Conditions::if_unmodified_since(0), 20_000),
            412,
            NOT_MET,
        );
        // t >= lastModified → proceed, including an earlier ms in the same second (10.0 < 10.5)
        assert_status(
            &put(
                &mut s,
                "a",
                "x",
                Conditions::if_unmodified_since(10_000),
                20_400,
            ),
            200,
            None,
        );
        // absent → proceed
        assert_status(
            &put(&mut s, "b", "x", Conditions::if_unmodified_since(0), 20_000),
            201,
            None,
        );
        // now "a" has lm 20.4 s; t = 20.0 s is the same second → proceed
        assert_status(
            &delete(&mut s, "a", Conditions::if_unmodified_since(20_000), 21_000),
            202,
            None,
        );
    }

    // ---- SPEC §1.1.4: read table -----------------------------------------------------

    #[test]
    fn spec_1_1_4_read_of_a_missing_blob_is_404_also_with_if_match() {
        let mut s = store();
        // §1.1.4 row "Resource absent and If-Match present" → 404 BlobNotFound (live service),
        // for an ETag and for `*`; and without If-Match, 404 as well.
        for c in [
            Conditions::if_match(stale()),
            Conditions::if_match_any(),
            Conditions {
                if_match: Some(tags(&[&stale()])),
                if_unmodified_since: Some(vec![1]),
                ..Conditions::default()
            },
            Conditions::none(),
            Conditions::if_none_match(stale()),
            Conditions::if_modified_since(1),
            Conditions::if_unmodified_since(1),
        ] {
            assert_status(&read(&mut s, "a", c, 1), 404, Some("BlobNotFound"));
        }
        // a deleted item (a tombstone) reads the same
        put(&mut s, "d", "x", Conditions::none(), 1);
        delete(&mut s, "d", Conditions::none(), 2);
        assert_status(
            &read(&mut s, "d", Conditions::if_match_any(), 3),
            404,
            Some("BlobNotFound"),
        );
        // If-None-Match: * → 400, also next to If-Match
        for c in [
            Conditions::if_none_match_any(),
            Conditions {
                if_match: Some(EtagMatch::Any),
                if_none_match: Some(EtagMatch::Any),
                ..Conditions::default()
            },
        ] {
            assert_status(
                &read(&mut s, "a", c, 1),
                400,
                Some("UnsatisfiableCondition"),
            );
        }
    }

    #[test]
    fn read_if_none_match_star_is_400() {
        let (mut s, etag) = with_item();
        for c in [
            Conditions::if_none_match_any(),
            Conditions {
                if_match: Some(tags(&[&etag])),
                if_none_match: Some(EtagMatch::Any),
                ..Conditions::default()
            },
            // even when If-Match would fail
            Conditions {
                if_match: Some(tags(&[&stale()])),
                if_none_match: Some(EtagMatch::Any),
                ..Conditions::default()
            },
        ] {
            assert_status(
                &read(&mut s, "a", c, 20_000),
                400,
                Some("UnsatisfiableCondition"),
            );
        }
    }

    #[test]
    fn read_if_match_or_if_unmodified_since_false_is_412() {
        let (mut s, etag) = with_item();
        assert_status(
            &read(&mut s, "a", Conditions::if_match(stale()), 20_000),
            412,
            NOT_MET,
        );
        assert_status(
            &read(&mut s, "a", Conditions::if_unmodified_since(9_999), 20_000),
            412,
            NOT_MET,
        );
        // If-Match true but If-Unmodified-Since false → 412 (AND)
        let c = Conditions {
            if_match: Some(tags(&[&etag])),
            if_unmodified_since: Some(vec![0]),
            ..Conditions::default()
        };
        assert_status(&read(&mut s, "a", c, 20_000), 412, NOT_MET);
        // 412 wins over 304
        let c = Conditions {
            if_match: Some(tags(&[&stale()])),
            if_none_match: Some(tags(&[&etag])),
            ..Conditions::default()
        };
        assert_status(&read(&mut s, "a", c, 20_000), 412, NOT_MET);
        // If-Match OR-ed over several ETags, `*` matches, same-second date passes
        for c in [
            Conditions {
                if_match: Some(tags(&[&stale(), &etag])),
                ..Conditions::default()
            },
            Conditions::if_match_any(),
            Conditions {
                if_match: Some(EtagMatch::Any),
                if_unmodified_since: Some(vec![10_000]),
                ..Conditions::default()
            },
        ] {
            assert_status(&read(&mut s, "a", c, 20_000), 200, None);
        }
    }

    #[test]
    fn read_if_none_match_false_is_304_unless_modified_since_true() {
        let (mut s, etag) = with_item();
        // etag matches, no If-Modified-Since → 304, no body
        let r = read(&mut s, "a", Conditions::if_none_match(etag.clone()), 20_000);
        assert_status(&r, 304, None);
        let view = r.item.unwrap();
        assert_eq!((view.body, &view.etag), (None, &etag));
        // etag matches, If-Modified-Since false → 304
        let c = Conditions {
            if_none_match: Some(tags(&[&etag])),
            if_modified_since: Some(vec![10_999]),
            ..Conditions::default()
        };
        assert_status(&read(&mut s, "a", c, 20_000), 304, None);
        // etag matches, If-Modified-Since true → 200 (OR)
        let c = Conditions {
            if_none_match: Some(tags(&[&etag])),
            if_modified_since: Some(vec![9_999]),
            ..Conditions::default()
        };
        assert_status(&read(&mut s, "a", c, 20_000), 200, None);
        // If-None-Match AND-ed: any listed ETag equal → false → 304
        let c = Conditions {
            if_none_match: Some(tags(&[&stale(), &etag])),
            ..Conditions::default()
        };
        assert_status(&read(&mut s, "a", c, 20_000), 304, None);
        let c = Conditions {
            if_none_match: Some(tags(&[&stale(), &ETag::quoted("0x1")])),
            ..Conditions::default()
        };
        assert_status(&read(&mut s, "a", c, 20_000), 200, None);
    }

    #[test]
    fn read_if_modified_since_false_is_304_unless_none_match_true() {
        let (mut s, etag) = with_item();
        // lastModified <= t (same second) → 304
        for t in [10_000, 10_999, 50_000] {
            assert_status(
                &read(&mut s, "a", Conditions::if_modified_since(t), 20_000),
                304,
                None,
            );
        }
        // If-None-Match true → 200 (OR)
        let c = Conditions {
            if_none_match: Some(tags(&[&stale()])),
            if_modified_since: Some(vec![50_000]),
            ..Conditions::default()
        };
        assert_status(&read(&mut s, "a", c, 20_000), 200, None);
        // modified since → 200
        assert_status(
            &read(&mut s, "a", Conditions::if_modified_since(9_999), 20_000),
            200,
            None,
        );
        // all three allowed: If-Match && (If-None-Match || If-Modified-Since)
        let c = Conditions {
            if_match: Some(tags(&[&etag])),
            if_none_match: Some(tags(&[&etag])),
            if_modified_since: Some(vec![50_000]),
            ..Conditions::default()
        };
        assert_status(&read(&mut s, "a", c, 20_000), 304, None);
    }

    #[test]
    fn spec_1_1_4_both_date_headers_on_a_read_are_legal() {
        let (mut s, _) = with_item();
        // Last-Modified second 10: modified since 9 s, not modified after 20 s → 200
        let both = |ims: Millis, ius: Millis| Conditions {
            if_modified_since: Some(vec![ims]),
            if_unmodified_since: Some(vec![ius]),
            ..Conditions::default()
        };
        assert_status(&read(&mut s, "a", both(9_000, 20_000), 21_000), 200, None);
        assert_status(&read(&mut s, "a", both(9_000, 9_000), 21_000), 412, NOT_MET);
        assert_status(&read(&mut s, "a", both(10_000, 20_000), 21_000), 304, None);
        assert_status(
            &read(&mut s, "zz", both(1, 1), 21_000),
            404,
            Some("BlobNotFound"),
        );
    }

    #[test]
    fn spec_1_1_4_several_values_in_one_date_header_are_400_before_state_is_read() {
        let (mut s, _) = with_item();
        for c in [
            Conditions {
                if_modified_since: Some(vec![1, 2]),
                ..Conditions::default()
            },
            Conditions {
                if_unmodified_since: Some(vec![99_000, 99_000]),
                ..Conditions::default()
            },
        ] {
            assert_status(&read(&mut s, "a", c.clone(), 20_000), 400, MULTI);
            assert_status(&read(&mut s, "zz", c.clone(), 20_000), 400, MULTI);
            assert_status(&put(&mut s, "a", "x", c.clone(), 20_000), 400, MULTI);
            assert_status(&delete(&mut s, "a", c.clone(), 20_000), 400, MULTI);
            let mut empty = Store::new(ModelBugs::default());
            assert_status(&read(&mut empty, "a", c, 1), 400, MULTI);
        }
    }

    #[test]
    fn spec_1_1_5_order_of_checks() {
        // 0 before 1: an illegal header set is 400 even without the container.
        let mut empty = Store::new(ModelBugs::default());
        let several = Conditions {
            if_modified_since: Some(vec![1, 2]),
            ..Conditions::default()
        };
        assert_status(&read(&mut empty, "a", several, 1), 400, MULTI);
        // 1 before 3: a missing container is 404 ContainerNotFound, even when the
        // conditions could never hold.
        for c in [
            Conditions::if_match(stale()),
            Conditions::if_none_match_any(),
        ] {
            assert_status(
                &put(&mut empty, "a", "x", c.clone(), 1),
                404,
                Some("ContainerNotFound"),
            );
            assert_status(
                &delete(&mut empty, "a", c, 1),
                404,
                Some("ContainerNotFound"),
            );
        }
        // 3 before 4: If-Match on a missing blob is 412 for writes (creating or not),
        // not 404 and not a create.
        let mut s = store();
        for c in [Conditions::if_match(stale()), Conditions::if_match_any()] {
            assert_status(&put(&mut s, "a", "x", c.clone(), 1), 412, NOT_MET);
            assert_status(&delete(&mut s, "a", c, 1), 412, NOT_MET);
        }
        assert_eq!(s.item(&key("a")), None);
        // 4: with the conditions passed, absent means create (put) or 404 (delete, read).
        assert_status(
            &delete(&mut s, "a", Conditions::if_none_match(stale()), 1),
            404,
            Some("BlobNotFound"),
        );
        assert_status(
            &put(&mut s, "a", "x", Conditions::if_none_match_any(), 1),
            201,
            None,
        );
    }

    #[test]
    fn read_otherwise_200_with_body() {
        let (mut s, etag) = with_item();
        let c = Conditions {
            if_match: Some(tags(&[&etag])),
            if_none_match: Some(tags(&[&stale()])),
            if_unmodified_since: Some(vec![10_000]),
            ..Conditions::default()
        };
        let r = read(&mut s, "a", c, 20_000);
        assert_status(&r, 200, None);
        assert_eq!(r.item.unwrap().body.as_deref(), Some("v1"));
    }

    // ---- properties E1, E2, E5, E6 ---------------------------------------------------

    /// Runs put / put / delete / re-create / put / delete / re-create on one key and
    /// returns the ETags of every successful put.
    fn etag_history(bugs: ModelBugs) -> Vec<ETag> {
        let mut s = store_with(bugs);
        let mut seen = Vec::new();
        let mut now = 1_000;
        for step in ["put", "put", "delete", "put", "put", "delete", "put"] {
            now += 1; // all within the same second: dates can't tell them apart
            if step == "put" {
                let r = put(&mut s, "a", &format!("b{now}"), Conditions::none(), now);
                assert!(r.is_success());
                seen.push(r.item.unwrap().etag);
            } else {
                assert_status(&delete(&mut s, "a", Conditions::none(), now), 202, None);
            }
            // reads leave the ETag alone
            let before = s.item(&key("a")).map(|i| i.etag.clone());
            let _ = read(&mut s, "a", Conditions::none(), now);
            assert_eq!(s.item(&key("a")).map(|i| i.etag.clone()), before);
        }
        seen
    }

    #[test]
    fn e1_fresh_etags_across_delete_and_recreate() {
        let seen = etag_history(ModelBugs::default());
        let distinct: BTreeSet<_> = seen.iter().cloned().collect();
        assert_eq!(distinct.len(), seen.len(), "{seen:?}");
    }

    #[test]
    fn bug_etag_reuse_breaks_e1() {
        let seen = etag_history(ModelBugs {
            etag_reuse: true,
            ..ModelBugs::default()
        });
        let distinct: BTreeSet<_> = seen.iter().cloned().collect();
        assert!(distinct.len() < seen.len(), "{seen:?}");
        // the re-created item is at version 1 again, with its first ETag
        assert_eq!(seen[2], seen[0]);
    }

    #[test]
    fn bug_etag_reuse_forgets_the_tombstone() {
        let mut s = store_with(ModelBugs {
            etag_reuse: true,
            ..ModelBugs::default()
        });
        put(&mut s, "a", "x", Conditions::none(), 1);
        let before = s.clone();
        let (r, e) = s.apply(
            &StoreRequest::Delete {
                key: key("a"),
                conditions: Conditions::none(),
            },
            2,
        );
        assert_status(&r, 202, None);
        assert_eq!(
            e,
            Some(Effect::ItemDeleted {
                key: key("a"),
                version: 2,
                keep_tombstone: false
            })
        );
        assert_eq!(s.last_version(&key("a")), None);
        assert_ne!(s, before);
    }

    /// N writers holding the same ETag: exactly one succeeds, the rest get 412.
    fn cas_race(bugs: ModelBugs) -> usize {
        let mut s2 = store_with(bugs);
        let r = put(&mut s2, "a", "v1", Conditions::none(), 10_500);
        let etag = r.item.unwrap().etag;
        let mut successes = 0;
        for w in 0..5 {
            let r = put(
                &mut s2,
                "a",
                &format!("w{w}"),
                Conditions::if_match(etag.clone()),
                20_000,
            );
            if r.is_success() {
                successes += 1;
            } else {
                assert_status(&r, 412, NOT_MET);
            }
        }
        successes
    }

    #[test]
    fn e2_cas_at_most_one_writer_wins() {
        assert_eq!(cas_race(ModelBugs::default()), 1);
    }

    #[test]
    fn bug_skip_if_match_breaks_e2() {
        let bugs = ModelBugs {
            skip_if_match: true,
            ..ModelBugs::default()
        };
        assert_eq!(cas_race(bugs), 5);
        // delete with a stale ETag succeeds too
        let mut s = store_with(bugs);
        put(&mut s, "a", "x", Conditions::none(), 1);
        assert_status(
            &delete(&mut s, "a", Conditions::if_match(stale()), 2),
            202,
            None,
        );
        // an absent item is still absent: If-Match fails with 412, nothing is created
        assert_status(
            &put(&mut s, "a", "x", Conditions::if_match(stale()), 3),
            412,
            NOT_MET,
        );
        assert_status(
            &delete(&mut s, "a", Conditions::if_match(stale()), 3),
            412,
            NOT_MET,
        );
        assert_eq!(s.item(&key("a")), None);
        // the other conditions still work
        put(&mut s, "a", "x", Conditions::none(), 4);
        assert_status(
            &put(&mut s, "a", "x", Conditions::if_none_match_any(), 5),
            409,
            Some("BlobAlreadyExists"),
        );
    }

    #[test]
    fn e5_create_once() {
        let mut s = store();
        let results: Vec<u16> = (0..5)
            .map(|w| {
                put(
                    &mut s,
                    "a",
                    &format!("w{w}"),
                    Conditions::if_none_match_any(),
                    1_000,
                )
                .status
            })
            .collect();
        assert_eq!(results, vec![201, 409, 409, 409, 409]);
        assert_eq!(s.item(&key("a")).unwrap().body, "w0");
    }

    #[test]
    fn e6_read_conditions() {
        let (mut s, etag) = with_item();
        let r = put(&mut s, "a", "v2", Conditions::none(), 10_700);
        let current = r.item.unwrap().etag;
        // If-None-Match: current → 304, no body
        let r = read(
            &mut s,
            "a",
            Conditions::if_none_match(current.clone()),
            11_000,
        );
        assert_status(&r, 304, None);
        assert_eq!(r.item.unwrap().body, None);
        // stale → 200 with the current ETag
        let r = read(&mut s, "a", Conditions::if_none_match(etag.clone()), 11_000);
        assert_status(&r, 200, None);
        assert_eq!(r.item.unwrap().etag, current);
        // If-Match stale → 412
        assert_status(
            &read(&mut s, "a", Conditions::if_match(etag), 11_000),
            412,
            NOT_MET,
        );
    }

    #[test]
    fn same_second_writes_keep_dates_equal_but_etags_distinct() {
        let mut s = store();
        let e1 = put(&mut s, "a", "1", Conditions::none(), 5_100)
            .item
            .unwrap();
        let e2 = put(&mut s, "a", "2", Conditions::none(), 5_900)
            .item
            .unwrap();
        assert_ne!(e1.etag, e2.etag);
        // a date check cannot see the second write
        assert_status(
            &read(&mut s, "a", Conditions::if_modified_since(5_100), 6_000),
            304,
            None,
        );
        // but the ETag can
        assert_status(
            &read(&mut s, "a", Conditions::if_none_match(e1.etag), 6_000),
            200,
            None,
        );
    }

    #[test]
    fn redo_is_idempotent() {
        let mut s = store();
        let (_, e1) = s.apply(
            &StoreRequest::Put {
                key: key("a"),
                body: "x".into(),
                conditions: Conditions::none(),
            },
            1,
        );
        let (_, e2) = s.apply(
            &StoreRequest::Delete {
                key: key("a"),
                conditions: Conditions::none(),
            },
            2,
        );
        let mut t = store();
        for e in [e1.unwrap(), e2.unwrap()] {
            t.redo(&e);
            let once = t.clone();
            t.redo(&e);
            assert_eq!(t, once);
        }
        assert_eq!(s, t);
    }

    #[test]
    fn wire_roundtrip_with_bincode() {
        let (mut s, etag) = with_item();
        let req = StoreRequest::Put {
            key: key("a"),
            body: "v2".into(),
            conditions: Conditions {
                if_match: Some(tags(&[&etag])),
                if_unmodified_since: Some(vec![3]),
                ..Conditions::default()
            },
        };
        let (resp, effect) = s.apply(&req, 20_000);
        let req2: StoreRequest = bincode::deserialize(&bincode::serialize(&req).unwrap()).unwrap();
        let resp2: StoreResponse =
            bincode::deserialize(&bincode::serialize(&resp).unwrap()).unwrap();
        let eff2: Option<Effect> =
            bincode::deserialize(&bincode::serialize(&effect).unwrap()).unwrap();
        let s2: Store = bincode::deserialize(&bincode::serialize(&s).unwrap()).unwrap();
        assert_eq!((req2, resp2, eff2, s2), (req, resp, effect, s));
    }

    // ---- redo-equivalence (proptest) --------------------------------------------------

    fn arb_etag() -> impl Strategy<Value = ETag> {
        (1u64..6).prop_map(ETag::from_version)
    }

    fn arb_match() -> impl Strategy<Value = Option<EtagMatch>> {
        prop_oneof![
            4 => Just(None),
            1 => Just(Some(EtagMatch::Any)),
            3 => prop::collection::vec(arb_etag(), 0..3).prop_map(|v| Some(EtagMatch::Tags(v))),
        ]
    }

    /// Mostly absent or one date; sometimes none or several (400, SPEC §1.1.4).
    fn arb_date() -> impl Strategy<Value = Option<Vec<Millis>>> {
        prop_oneof![
            12 => Just(None),
            4 => (0u64..6_000).prop_map(|t| Some(vec![t])),
            1 => prop::collection::vec(0u64..6_000, 0..3).prop_map(Some),
        ]
    }

    fn arb_conditions() -> impl Strategy<Value = Conditions> {
        (arb_match(), arb_match(), arb_date(), arb_date()).prop_map(|(im, inm, ims, ius)| {
            Conditions {
                if_match: im,
                if_none_match: inm,
                if_modified_since: ims,
                if_unmodified_since: ius,
                lease_id: None,
            }
        })
    }

    fn arb_request() -> impl Strategy<Value = StoreRequest> {
        let key = (
            prop::sample::select(vec!["c", "d"]),
            prop::sample::select(vec!["a", "b"]),
        )
            .prop_map(|(c, id)| ItemKey::new(c, "pk", id));
        prop_oneof![
            1 => prop::sample::select(vec!["c", "d"])
                .prop_map(|c| StoreRequest::CreateContainer { container: c.into() }),
            3 => (key.clone(), arb_conditions())
                .prop_map(|(key, conditions)| StoreRequest::Read { key, conditions }),
            5 => (key.clone(), "[xyz]{0,3}", arb_conditions())
                .prop_map(|(key, body, conditions)| StoreRequest::Put { key, body, conditions }),
            3 => (key, arb_conditions())
                .prop_map(|(key, conditions)| StoreRequest::Delete { key, conditions }),
        ]
    }

    fn arb_bugs() -> impl Strategy<Value = ModelBugs> {
        (any::<bool>(), any::<bool>()).prop_map(|(skip_if_match, etag_reuse)| ModelBugs {
            skip_if_match,
            etag_reuse,
            ..ModelBugs::default()
        })
    }

    proptest! {
        #[test]
        fn redo_equivalence(
            bugs in arb_bugs(),
            ops in prop::collection::vec((arb_request(), 0u64..1_500), 0..60),
        ) {
            let mut live = Store::new(bugs);
            let mut replayed = Store::new(bugs);
            let mut twice = Store::new(bugs);
            let mut now = 0;
            for (req, dt) in &ops {
                now += dt;
                let before = live.clone();
                let (resp, effect) = live.apply(req, now);
                // Effect is Some iff state changed, and only on success.
                prop_assert_eq!(effect.is_some(), before != live);
                prop_assert_eq!(effect.is_some(), resp.is_success() && req.is_write());
                if let Some(e) = effect {
                    replayed.redo(&e);
                    twice.redo(&e);
                    twice.redo(&e);
                }
                prop_assert_eq!(&replayed, &live);
            }
            prop_assert_eq!(&twice, &live);
        }

        #[test]
        fn e1_versions_and_etags_never_repeat_without_the_bug(
            ops in prop::collection::vec((arb_request(), 0u64..1_500), 0..60),
        ) {
            let mut s = Store::new(ModelBugs { skip_if_match: true, ..ModelBugs::default() });
            let mut seen: BTreeMap<ItemKey, BTreeSet<ETag>> = BTreeMap::new();
            let mut last: BTreeMap<ItemKey, u64> = BTreeMap::new();
            let mut now = 0;
            for (req, dt) in &ops {
                now += dt;
                let (_, effect) = s.apply(req, now);
                match effect {
                    Some(Effect::ItemWritten { key, item }) => {
                        prop_assert!(seen.entry(key.clone()).or_default().insert(item.etag.clone()));
                        let prev = last.insert(key, item.version).unwrap_or(0);
                        prop_assert_eq!(item.version, prev + 1);
                    }
                    Some(Effect::ItemDeleted { key, version, keep_tombstone }) => {
                        prop_assert!(keep_tombstone);
                        let prev = last.insert(key, version).unwrap_or(0);
                        prop_assert_eq!(version, prev + 1);
                    }
                    _ => {}
                }
            }
        }
    }
}
