//! The lease documents of the change feed processor (SPEC §3.3.2) and the pure
//! rules over them: when a lease is free to take, and which lease a host steals
//! to balance the load.

use crate::core::conditions::ETag;
use crate::services::feed::FeedRange;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The CAS retries on 412 (`RetryCountOnConflict`): 6 attempts in all.
pub(crate) const RETRY_COUNT_ON_CONFLICT: usize = 5;

/// A lease document's body (SPEC §3.3.2), as JSON in a Cosmos item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseDoc {
    /// The lease token: the range id.
    pub token: u32,
    /// The range's lowest EPK.
    pub min: u32,
    /// One past the range's highest EPK.
    pub max: u32,
    /// The owner's instance name, or none.
    pub owner: Option<String>,
    /// The checkpoint (an LSN); none = use the reader's start option.
    pub continuation: Option<u64>,
    /// The writing host's clock at the write, ms.
    pub timestamp: u64,
    /// The instance that wrote this version (the harness reads it to judge
    /// fencing; the SDK keeps such things in `properties`).
    pub by: String,
    /// The lease this one was split from.
    pub parent: Option<u32>,
}

impl LeaseDoc {
    /// The range it covers.
    pub fn range(&self) -> FeedRange {
        FeedRange {
            id: self.token,
            min: self.min,
            max: self.max,
        }
    }

    /// The item body.
    pub fn to_body(&self) -> String {
        serde_json::to_string(self).expect("lease documents serialise")
    }

    /// Parses a body (`None` for the `.info`/`.lock` markers).
    pub fn from_body(body: &str) -> Option<LeaseDoc> {
        serde_json::from_str(body).ok()
    }
}

/// A lease as one host last saw it: the document and its `_etag`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CachedLease {
    /// The item id.
    pub id: String,
    /// The document.
    pub doc: LeaseDoc,
    /// Its `_etag` (the If-Match of the next replace).
    pub etag: ETag,
}

/// True if the lease may be taken without stealing: no owner, or its
/// timestamp (the writer's clock) plus the expiration is before `now` (this
/// host's clock; strict).
pub(crate) fn is_available(doc: &LeaseDoc, now: u64, expiration_ms: u64) -> bool {
    doc.owner.is_none() || doc.timestamp + expiration_ms < now
}

/// EqualPartitions (SPEC §3.3.6): the leases `me` should acquire now, from all
/// leases in query order (by id). At most `need` available ones; if none is
/// available, one stolen from the last worker with the most leases.
pub(crate) fn balance(
    leases: &[CachedLease],
    me: &str,
    now: u64,
    expiration_ms: u64,
) -> Vec<CachedLease> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    let mut available = Vec::new();
    for l in leases {
        if is_available(&l.doc, now, expiration_ms) {
            available.push(l.clone());
        } else if let Some(owner) = l.doc.owner.as_deref() {
            if !counts.contains_key(owner) {
                order.push(owner);
            }
            *counts.entry(owner).or_default() += 1;
        }
    }
    let mine = counts.get(me).copied().unwrap_or(0);
    let workers = counts.len() + usize::from(!counts.contains_key(me));
    let n = leases.len();
    let target = if n <= workers { 1 } else { n.div_ceil(workers) };
    if target <= mine {
        return Vec::new();
    }
    let need = target - mine;
    if !available.is_empty() {
        available.truncate(need);
        return available;
    }
    // Steal one: the last worker (in query order) with the most leases
    // (`max_by_key` keeps the last of equal maxima).
    let Some((victim, most)) = order
        .iter()
        .filter(|o| **o != me)
        .map(|o| (*o, counts[o]))
        .max_by_key(|(_, c)| *c)
    else {
        return Vec::new();
    };
    let bar = target - usize::from(need > 1);
    if most <= bar {
        return Vec::new();
    }
    leases
        .iter()
        .find(|l| l.doc.owner.as_deref() == Some(victim))
        .cloned()
        .into_iter()
        .collect()
}
