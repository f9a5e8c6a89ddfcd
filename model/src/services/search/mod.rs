//! Azure AI Search resource definitions (SPEC §1.2): indexes and synonym
//! maps, each a name and a set of entries (an index's fields, a synonym
//! map's rules) with an ETag that changes on every update. Documents have no
//! ETag and are not modelled. A pure state machine: `apply(request, now) ->
//! (response, effect)`; `redo(effect)` replays a logged mutation.
//!
//! | Request | exists | absent |
//! |---|---|---|
//! | GET | 200 | 404 |
//! | PUT, no header | 200 (last writer wins) | 201 |
//! | PUT `If-Match: e` / `*` | equal or `*` → 200, else 412 | 412 |
//! | PUT `If-None-Match: *` | 412 (AMBIG-5) | 201 |
//! | PUT `If-None-Match: e` | equal → 412, else 200 | 201 |
//! | DELETE, no header | 204 | 404 |
//! | DELETE `If-Match: e` / `*` | equal or `*` → 204, else 412 | 412 |
//! | PUT of an index without one of its fields | 400 (AMBIG-4) | — |
//! | PUT / DELETE while an update of the resource is in flight | 409 | 409 |
//!
//! AMBIG-4: the seed's 400 is taken to come from the update that drops an
//! existing field (the Update Index page: existing fields cannot be deleted),
//! not from an ETag check; a synonym map's rules may be replaced freely.
//!
//! "In flight": since 2025-07-18 the service serializes updates of one
//! resource, and a request arriving while another update is being applied
//! gets 409. The model applies an update at its arrival (its linearization
//! point) and keeps the resource busy for [`UPDATE_MS`] of server time after
//! it, the time the service takes to apply it; a PUT or DELETE of that
//! resource arriving in the window gets 409. The window is not logged: after
//! a restart nothing is in flight.

use crate::core::bugs::ModelBugs;
use crate::core::conditions::{ETag, EtagMatch, Millis};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// How long (server ms) the service takes to apply one update of a resource.
pub const UPDATE_MS: Millis = 20;

/// The kinds of resource the model has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ResourceKind {
    /// An index: its entries are fields, which an update may add but not drop.
    Index,
    /// A synonym map: its entries are rules, freely replaced.
    SynonymMap,
}

/// A resource as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resource {
    /// Its kind.
    pub kind: ResourceKind,
    /// Fields (index) or rules (synonym map).
    pub entries: BTreeSet<String>,
    /// The ETag, derived from `version`.
    pub etag: ETag,
    /// 1 on the first create, +1 on every update or delete; continues across
    /// delete and re-create.
    pub version: u64,
}

/// A request to the Search service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SearchRequest {
    /// GET a definition.
    Get {
        /// The resource name.
        name: String,
    },
    /// PUT (create or update) a definition.
    Put {
        /// The resource name.
        name: String,
        /// Its kind.
        kind: ResourceKind,
        /// The whole new set of entries.
        entries: BTreeSet<String>,
        /// `If-Match`.
        if_match: Option<EtagMatch>,
        /// `If-None-Match`.
        if_none_match: Option<EtagMatch>,
    },
    /// DELETE a definition.
    Delete {
        /// The resource name.
        name: String,
        /// `If-Match`.
        if_match: Option<EtagMatch>,
    },
}

impl SearchRequest {
    /// The resource name (also the partition key it routes by).
    pub fn name(&self) -> &str {
        match self {
            SearchRequest::Get { name }
            | SearchRequest::Put { name, .. }
            | SearchRequest::Delete { name, .. } => name,
        }
    }

    /// True for PUT and DELETE.
    pub fn is_write(&self) -> bool {
        !matches!(self, SearchRequest::Get { .. })
    }
}

/// The answer to a [`SearchRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResponse {
    /// The HTTP status.
    pub status: u16,
    /// The definition on 200 GET and on a successful PUT.
    pub resource: Option<Resource>,
}

/// What a successful update changed: one log record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SearchEffect {
    /// The resource is now exactly this.
    Written {
        /// Its name.
        name: String,
        /// Its new state.
        resource: Resource,
    },
    /// The resource was deleted by the mutation with this version.
    Deleted {
        /// Its name.
        name: String,
        /// The delete's version.
        version: u64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum Slot {
    Live(Resource),
    Tombstone { version: u64 },
}

impl Slot {
    fn version(&self) -> u64 {
        match self {
            Slot::Live(r) => r.version,
            Slot::Tombstone { version } => *version,
        }
    }

    fn live(&self) -> Option<&Resource> {
        match self {
            Slot::Live(r) => Some(r),
            Slot::Tombstone { .. } => None,
        }
    }
}

/// An update being applied: busy until `until`; `before` is the state it started from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct InFlight {
    until: Millis,
    before: Option<Slot>,
}

/// The Search resource state machine of one partition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchService {
    bugs: ModelBugs,
    slots: BTreeMap<String, Slot>,
    in_flight: BTreeMap<String, InFlight>,
}

impl SearchService {
    /// No resources, with `bugs` switched on (it reads
    /// `search_concurrent_update_not_serialized` and `search_if_none_match_ignored`).
    pub fn new(bugs: ModelBugs) -> SearchService {
        SearchService {
            bugs,
            slots: BTreeMap::new(),
            in_flight: BTreeMap::new(),
        }
    }

    /// The live resource called `name`.
    pub fn resource(&self, name: &str) -> Option<&Resource> {
        self.slots.get(name).and_then(Slot::live)
    }

    /// Applies one request at server time `now` (ms).
    pub fn apply(
        &mut self,
        req: &SearchRequest,
        now: Millis,
    ) -> (SearchResponse, Option<SearchEffect>) {
        let refuse = |status: u16| {
            (
                SearchResponse {
                    status,
                    resource: None,
                },
                None,
            )
        };
        let name = req.name();
        if let SearchRequest::Get { .. } = req {
            return match self.resource(name) {
                Some(r) => (
                    SearchResponse {
                        status: 200,
                        resource: Some(r.clone()),
                    },
                    None,
                ),
                None => refuse(404),
            };
        }
        // Updates of one resource are serialized: one arriving while another
        // is applied gets 409. Under the bug it goes ahead, deciding against
        // the state the in-flight update started from (both read it).
        let busy = self.in_flight.get(name).filter(|f| now < f.until);
        let seen: Option<Slot> = match busy {
            Some(_) if !self.bugs.search_concurrent_update_not_serialized => return refuse(409),
            Some(f) => f.before.clone(),
            None => self.slots.get(name).cloned(),
        };
        let current = seen.as_ref().and_then(Slot::live);
        let matches = |m: &EtagMatch| current.is_some_and(|r| m.matches(&r.etag));
        let version = self.slots.get(name).map_or(0, Slot::version) + 1;
        let (status, effect) = match req {
            SearchRequest::Get { .. } => unreachable!("answered above"),
            SearchRequest::Put {
                kind,
                entries,
                if_match,
                if_none_match,
                ..
            } => {
                if let Some(m) = if_match {
                    if !matches(m) {
                        return refuse(412);
                    }
                }
                if let Some(m) = if_none_match {
                    let any_existing = *m == EtagMatch::Any && current.is_some();
                    let ignored = self.bugs.search_if_none_match_ignored && *m == EtagMatch::Any;
                    if (any_existing || (*m != EtagMatch::Any && matches(m))) && !ignored {
                        return refuse(412);
                    }
                }
                if let Some(r) = current {
                    let drops_a_field =
                        r.kind == ResourceKind::Index && !r.entries.is_subset(entries);
                    if r.kind != *kind || drops_a_field {
                        return refuse(400);
                    }
                }
                let resource = Resource {
                    kind: *kind,
                    entries: entries.clone(),
                    etag: ETag::from_version(version),
                    version,
                };
                let status = if current.is_some() { 200 } else { 201 };
                (
                    status,
                    SearchEffect::Written {
                        name: name.to_string(),
                        resource,
                    },
                )
            }
            SearchRequest::Delete { if_match, .. } => {
                if let Some(m) = if_match {
                    if !matches(m) {
                        return refuse(412);
                    }
                }
                if current.is_none() {
                    return refuse(404);
                }
                (
                    204,
                    SearchEffect::Deleted {
                        name: name.to_string(),
                        version,
                    },
                )
            }
        };
        let before = self.slots.get(name).cloned();
        self.redo(&effect);
        self.in_flight.insert(
            name.to_string(),
            InFlight {
                until: now + UPDATE_MS,
                before,
            },
        );
        let resource = match &effect {
            SearchEffect::Written { resource, .. } => Some(resource.clone()),
            SearchEffect::Deleted { .. } => None,
        };
        (SearchResponse { status, resource }, Some(effect))
    }

    /// Replays a logged effect (absolute: redoing it twice equals once).
    pub fn redo(&mut self, effect: &SearchEffect) {
        match effect {
            SearchEffect::Written { name, resource } => {
                self.slots
                    .insert(name.clone(), Slot::Live(resource.clone()));
            }
            SearchEffect::Deleted { name, version } => {
                self.slots
                    .insert(name.clone(), Slot::Tombstone { version: *version });
            }
        }
    }
}

#[cfg(test)]
mod tests;
