//! Cosmos DB items (SPEC §1.3): create, read, replace, upsert, delete with
//! `if-match` / `if-none-match` on a system `_etag` that every update
//! regenerates, `_ts` from the server clock, and the transactional batch
//! within one partition key (all or nothing, one log position). A pure state
//! machine: `apply(request, now) -> (response, effect)`; `redo(effect)`
//! replays a logged mutation.
//!
//! Statuses (SPEC §1.3, AMBIG-6):
//!
//! | Operation | exists | absent |
//! |---|---|---|
//! | create | 409 | 201 (`if-match` ignored) |
//! | read | 200; `if-none-match` equal → 304 | 404 |
//! | replace | `if-match` equal or none → 200; else 412 | 404 (also with `if-match`) |
//! | upsert | as replace (200 / 412) | 201, `if-match` ignored (AMBIG-6) |
//! | delete | `if-match` equal or none → 204; else 412 | 404 (also with `if-match`) |
//!
//! `if-none-match` is ignored on writes. A batch runs its operations in order
//! on a copy; the first one that fails stops it, the whole batch is rolled
//! back and answers that operation's status (the others 424 Failed
//! Dependency); a batch that succeeds is one [`CosmosEffect::Batch`], one log
//! position.

use crate::core::bugs::ModelBugs;
use crate::core::conditions::{ETag, Millis};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The address of a Cosmos item: container, partition key, id.
pub use crate::core::keys::ItemKey;

/// A live item as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CosmosItem {
    /// The document (opaque to the model).
    pub body: String,
    /// The system `_etag`, derived from `version`.
    pub etag: ETag,
    /// The system `_ts`: server time of the last update, whole seconds.
    pub ts: u64,
    /// 1 on the first create, +1 on every update or delete; continues across
    /// delete and re-create, so `_etag` never repeats (E1).
    pub version: u64,
}

/// What an item looks like in a response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CosmosItemView {
    /// The document: on 200 reads and successful writes (Cosmos returns the item).
    pub body: Option<String>,
    /// `_etag` (new, for writes).
    pub etag: ETag,
    /// `_ts`.
    pub ts: u64,
    /// The model's version behind `_etag`.
    pub version: u64,
}

/// One item operation (alone, or inside a batch).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ItemOp {
    /// Create: 201, or 409 if the id exists in the partition key.
    Create {
        /// The item id.
        id: String,
        /// The document.
        body: String,
    },
    /// Point read, with an optional `if-none-match` ETag (304 when equal).
    Read {
        /// The item id.
        id: String,
        /// `if-none-match`.
        if_none_match: Option<ETag>,
    },
    /// Replace: 200 / 412 / 404.
    Replace {
        /// The item id.
        id: String,
        /// The document.
        body: String,
        /// `if-match`.
        if_match: Option<ETag>,
    },
    /// Upsert: replace semantics if present (200 / 412), create if absent (201).
    Upsert {
        /// The item id.
        id: String,
        /// The document.
        body: String,
        /// `if-match` (applied only when the item exists).
        if_match: Option<ETag>,
    },
    /// Delete: 204 / 412 / 404.
    Delete {
        /// The item id.
        id: String,
        /// `if-match`.
        if_match: Option<ETag>,
    },
}

impl ItemOp {
    /// The item id.
    pub fn id(&self) -> &str {
        match self {
            ItemOp::Create { id, .. }
            | ItemOp::Read { id, .. }
            | ItemOp::Replace { id, .. }
            | ItemOp::Upsert { id, .. }
            | ItemOp::Delete { id, .. } => id,
        }
    }

    /// True for everything but reads.
    pub fn is_write(&self) -> bool {
        !matches!(self, ItemOp::Read { .. })
    }
}

/// A request to the Cosmos item service of one container and partition key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CosmosRequest {
    /// One item operation.
    Item {
        /// The container.
        container: String,
        /// The partition key.
        partition_key: String,
        /// The operation.
        op: ItemOp,
    },
    /// A transactional batch: every operation on the same partition key, all or nothing.
    Batch {
        /// The container.
        container: String,
        /// The partition key all operations share.
        partition_key: String,
        /// The operations, in order.
        ops: Vec<ItemOp>,
    },
}

impl CosmosRequest {
    /// The partition key the request routes by.
    pub fn partition_key(&self) -> &str {
        match self {
            CosmosRequest::Item { partition_key, .. }
            | CosmosRequest::Batch { partition_key, .. } => partition_key,
        }
    }

    /// True unless it is a point read (a batch counts as a write).
    pub fn is_write(&self) -> bool {
        match self {
            CosmosRequest::Item { op, .. } => op.is_write(),
            CosmosRequest::Batch { .. } => true,
        }
    }
}

/// The result of one item operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpResult {
    /// The HTTP status (424 for the operations of a failed batch that did not fail).
    pub status: u16,
    /// The item on 200/201 (with body) and 304 (without).
    pub item: Option<CosmosItemView>,
}

/// The answer to a [`CosmosRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CosmosResponse {
    /// The HTTP status: the operation's; for a batch 200, or the status of its
    /// first failing operation.
    pub status: u16,
    /// One result per operation (one for a point operation).
    pub results: Vec<OpResult>,
}

impl CosmosResponse {
    /// The item of a point operation's response, if any.
    pub fn item(&self) -> Option<&CosmosItemView> {
        self.results.first().and_then(|r| r.item.as_ref())
    }
}

/// One item change, as absolute new state (redo is exact and idempotent).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ItemChange {
    /// The item is now exactly `item`.
    Written {
        /// Its key.
        key: ItemKey,
        /// Its new state.
        item: CosmosItem,
    },
    /// The item was deleted by the mutation with version `version`.
    Deleted {
        /// Its key.
        key: ItemKey,
        /// The delete's version (a tombstone remembers it).
        version: u64,
    },
}

/// What a successful mutation changed: one log record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CosmosEffect {
    /// One point write.
    Item(ItemChange),
    /// Every change of a committed batch, in order: one log position.
    Batch(Vec<ItemChange>),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum Slot {
    Live(CosmosItem),
    Tombstone { version: u64 },
}

impl Slot {
    fn version(&self) -> u64 {
        match self {
            Slot::Live(i) => i.version,
            Slot::Tombstone { version } => *version,
        }
    }
}

/// The Cosmos item state machine of one partition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CosmosItems {
    bugs: ModelBugs,
    slots: BTreeMap<ItemKey, Slot>,
}

/// A rejected operation: its status.
type Refusal = u16;

impl CosmosItems {
    /// No items, with `bugs` switched on (it reads `upsert_if_match_absent_412`,
    /// `replace_missing_412`, `batch_partial_commit` and `cosmos_upsert_keeps_etag`).
    pub fn new(bugs: ModelBugs) -> CosmosItems {
        CosmosItems {
            bugs,
            slots: BTreeMap::new(),
        }
    }

    /// The live item at `key`.
    pub fn item(&self, key: &ItemKey) -> Option<&CosmosItem> {
        match self.slots.get(key) {
            Some(Slot::Live(i)) => Some(i),
            _ => None,
        }
    }

    /// Applies one request at server time `now` (ms). Returns the response
    /// and, iff state changed, the effect to log.
    pub fn apply(
        &mut self,
        req: &CosmosRequest,
        now: Millis,
    ) -> (CosmosResponse, Option<CosmosEffect>) {
        match req {
            CosmosRequest::Item {
                container,
                partition_key,
                op,
            } => {
                let key = ItemKey::new(container, partition_key, op.id());
                match self.decide(&key, op, now) {
                    Err(status) => (
                        CosmosResponse {
                            status,
                            results: vec![OpResult { status, item: None }],
                        },
                        None,
                    ),
                    Ok((result, change)) => {
                        let effect = change.map(CosmosEffect::Item);
                        if let Some(e) = &effect {
                            self.redo(e);
                        }
                        (
                            CosmosResponse {
                                status: result.status,
                                results: vec![result],
                            },
                            effect,
                        )
                    }
                }
            }
            CosmosRequest::Batch {
                container,
                partition_key,
                ops,
            } => self.batch(container, partition_key, ops, now),
        }
    }

    fn batch(
        &mut self,
        container: &str,
        partition_key: &str,
        ops: &[ItemOp],
        now: Millis,
    ) -> (CosmosResponse, Option<CosmosEffect>) {
        // Run on a copy: a later operation sees the earlier ones' changes.
        let mut scratch = self.clone();
        let mut results = Vec::with_capacity(ops.len());
        let mut changes = Vec::new();
        let mut failed = None;
        for (i, op) in ops.iter().enumerate() {
            let key = ItemKey::new(container, partition_key, op.id());
            // The seeded bug `batch_blind_to_earlier_ops` decides against
            // the state before the batch.
            let decided = if self.bugs.batch_blind_to_earlier_ops {
                self.decide(&key, op, now)
            } else {
                scratch.decide(&key, op, now)
            };
            match decided {
                Ok((result, change)) => {
                    if let Some(c) = change {
                        scratch.redo_change(&c);
                        changes.push(c);
                    }
                    results.push(result);
                }
                Err(status) => {
                    failed = Some((i, status));
                    break;
                }
            }
        }
        let Some((at, status)) = failed else {
            let effect = (!changes.is_empty()).then_some(CosmosEffect::Batch(changes));
            *self = scratch;
            return (
                CosmosResponse {
                    status: 200,
                    results,
                },
                effect,
            );
        };
        let results = (0..ops.len())
            .map(|i| OpResult {
                status: if i == at { status } else { 424 },
                item: None,
            })
            .collect();
        let response = CosmosResponse { status, results };
        if self.bugs.batch_partial_commit && !changes.is_empty() {
            // The bug: only the failing operation is rolled back; the ones
            // before it stay committed although the batch answers a failure.
            let effect = CosmosEffect::Batch(changes);
            self.redo(&effect);
            return (response, Some(effect));
        }
        (response, None)
    }

    /// The outcome of one operation against the current state, without applying it.
    fn decide(
        &self,
        key: &ItemKey,
        op: &ItemOp,
        now: Millis,
    ) -> Result<(OpResult, Option<ItemChange>), Refusal> {
        let live = self.item(key);
        let matches = |if_match: &Option<ETag>, item: &CosmosItem| match if_match {
            None => true,
            Some(e) => *e == item.etag,
        };
        let write = |body: &str, status: u16| {
            let version = self.slots.get(key).map_or(0, Slot::version) + 1;
            let item = CosmosItem {
                body: body.to_string(),
                etag: ETag::from_version(version),
                ts: now / 1000,
                version,
            };
            let view = CosmosItemView {
                body: Some(item.body.clone()),
                etag: item.etag.clone(),
                ts: item.ts,
                version,
            };
            let change = ItemChange::Written {
                key: key.clone(),
                item,
            };
            Ok((
                OpResult {
                    status,
                    item: Some(view),
                },
                Some(change),
            ))
        };
        match (op, live) {
            (ItemOp::Read { if_none_match, .. }, Some(item)) => {
                let unchanged = if_none_match.as_ref().is_some_and(|e| *e == item.etag);
                Ok((
                    OpResult {
                        status: if unchanged { 304 } else { 200 },
                        item: Some(CosmosItemView {
                            body: (!unchanged).then(|| item.body.clone()),
                            etag: item.etag.clone(),
                            ts: item.ts,
                            version: item.version,
                        }),
                    },
                    None,
                ))
            }
            (ItemOp::Read { .. }, None) => Err(404),
            (ItemOp::Create { .. }, Some(_)) => Err(409),
            (ItemOp::Create { body, .. }, None) => write(body, 201),
            (ItemOp::Replace { if_match, .. }, None) => {
                if if_match.is_some() && self.bugs.replace_missing_412 {
                    Err(412)
                } else {
                    Err(404)
                }
            }
            (ItemOp::Upsert { if_match, body, .. }, None) => {
                if if_match.is_some() && self.bugs.upsert_if_match_absent_412 {
                    Err(412)
                } else {
                    write(body, 201)
                }
            }
            (
                ItemOp::Replace { if_match, body, .. } | ItemOp::Upsert { if_match, body, .. },
                Some(item),
            ) => {
                if !matches(if_match, item) {
                    return Err(412);
                }
                let keeps_etag =
                    self.bugs.cosmos_upsert_keeps_etag && matches!(op, ItemOp::Upsert { .. });
                if keeps_etag {
                    // The bug: the body changes but `_etag` (and the version) stay.
                    let kept = CosmosItem {
                        body: body.clone(),
                        ..item.clone()
                    };
                    let view = CosmosItemView {
                        body: Some(kept.body.clone()),
                        etag: kept.etag.clone(),
                        ts: kept.ts,
                        version: kept.version,
                    };
                    return Ok((
                        OpResult {
                            status: 200,
                            item: Some(view),
                        },
                        Some(ItemChange::Written {
                            key: key.clone(),
                            item: kept,
                        }),
                    ));
                }
                write(body, 200)
            }
            (ItemOp::Delete { if_match, .. }, Some(item)) => {
                if !matches(if_match, item) {
                    return Err(412);
                }
                Ok((
                    OpResult {
                        status: 204,
                        item: None,
                    },
                    Some(ItemChange::Deleted {
                        key: key.clone(),
                        version: item.version + 1,
                    }),
                ))
            }
            (ItemOp::Delete { if_match, .. }, None) => {
                if if_match.is_some() && self.bugs.replace_missing_412 {
                    Err(412)
                } else {
                    Err(404)
                }
            }
        }
    }

    fn redo_change(&mut self, c: &ItemChange) {
        match c {
            ItemChange::Written { key, item } => {
                self.slots.insert(key.clone(), Slot::Live(item.clone()));
            }
            ItemChange::Deleted { key, version } => {
                self.slots
                    .insert(key.clone(), Slot::Tombstone { version: *version });
            }
        }
    }

    /// Replays a logged effect (absolute, so redoing it twice equals once).
    pub fn redo(&mut self, effect: &CosmosEffect) {
        match effect {
            CosmosEffect::Item(c) => self.redo_change(c),
            CosmosEffect::Batch(cs) => cs.iter().for_each(|c| self.redo_change(c)),
        }
    }
}

#[cfg(test)]
mod tests;
