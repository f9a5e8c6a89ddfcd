//! The Cosmos DB change feed (SPEC §3.1, §3.2) of one partition: a pure index
//! of the partition's effect log. Every committed Cosmos item change is
//! observed at its log position (its LSN); the feed keeps, per item, only its
//! latest live version (latest-version mode: intermediate versions are
//! skipped, deletes are not captured — a deleted item leaves the feed).
//!
//! - The key space of a container is the effective partition key (EPK) range
//!   `[0, 256)` ([`epk`] hashes a partition key into it), tiled by physical
//!   ranges: [`INITIAL_RANGES`] at first (or as many as the server is
//!   configured with, [`ChangeFeed::with_ranges`]); a split (a fault event, logged, so
//!   durable) replaces a range by two children. A read of a split range's id
//!   answers 410 with sub-status 1002 and names the children, which the
//!   caller resumes from the parent's position (CF9).
//! - A read: scope (a range id, or one partition key), a start ([`StartFrom`]:
//!   beginning, now, a point in time in whole seconds, exclusive, or a
//!   continuation = an LSN) and a page-size hint. It answers the items with an
//!   LSN after the start, in LSN order (so per partition key in commit order),
//!   at most the hint except that a batch's items (one LSN) are never cut
//!   apart; 304 when there are none. The continuation is the LSN of the last
//!   item returned, or, when the page holds everything, the partition's LSN.
//! - Soft delete + TTL: an item whose body contains [`TTL_MARK`] is
//!   purged by [`FeedRequest::PurgeExpired`] once its `_ts` is `ttl_s` old,
//!   as a logged Cosmos delete (which the feed, like every delete, does not
//!   show).

use crate::core::bugs::ModelBugs;
use crate::core::keys::ItemKey;
use crate::core::sub_status;
use crate::services::cosmos::{CosmosEffect, ItemChange};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The size of a container's EPK space: ranges are `[min, max)` within `[0, KEY_SPACE)`.
pub const KEY_SPACE: u32 = 256;

/// How many physical ranges a container starts with (equal widths), unless
/// configured otherwise ([`ChangeFeed::with_ranges`]).
pub const INITIAL_RANGES: u32 = 4;

/// The marker of an item with a time to live (a soft-deleted item: the
/// user's workaround for the feed not capturing deletes; the processor's
/// init lock): a TTL purge deletes it once its `_ts` is old enough.
pub(crate) const TTL_MARK: &str = "\"ttl\":true";

/// The body of the tombstone that the seeded bug `feed_shows_deletes` shows
/// for a deleted item.
pub(crate) const TOMBSTONE: &str = "{\"_deleted\":true}";

/// How many log records behind the log the replica of the seeded bug
/// `lagging_replica_304` serves range reads.
pub(crate) const REPLICA_LAG: u64 = 4;

/// The EPK of a partition key: FNV-1a folded into `[0, KEY_SPACE)`.
pub fn epk(partition_key: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in partition_key.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    (h ^ (h >> 8) ^ (h >> 16) ^ (h >> 24)) % KEY_SPACE
}

/// A physical range of a container's key space.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FeedRange {
    /// The range id (its lease token).
    pub id: u32,
    /// The lowest EPK in it.
    pub min: u32,
    /// One past the highest EPK in it.
    pub max: u32,
}

impl FeedRange {
    /// True if `epk` lies in `[min, max)`.
    pub fn contains(&self, epk: u32) -> bool {
        self.min <= epk && epk < self.max
    }
}

impl std::fmt::Display for FeedRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{:02X}-{:02X})", self.min, self.max)
    }
}

/// Where a read starts when it has no continuation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StartFrom {
    /// Every change still in the feed.
    Beginning,
    /// Only changes after the read.
    Now,
    /// Changes with `_ts` after this time (server ms, compared in whole
    /// seconds, exclusive: RFC 1123 `If-Modified-Since`).
    Time(u64),
    /// A continuation token: changes after this LSN (takes precedence).
    Continuation(u64),
}

/// What a read covers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FeedScope {
    /// One physical range, by id (410/1002 once it has split).
    Range(u32),
    /// One partition key (never split).
    PartitionKey(String),
}

/// A request to the change feed of one container.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FeedRequest {
    /// `GetFeedRangesAsync`: the container's current physical ranges.
    Ranges {
        /// The container.
        container: String,
    },
    /// One page of the feed.
    Read {
        /// The container.
        container: String,
        /// A range or a partition key.
        scope: FeedScope,
        /// The start (or continuation).
        from: StartFrom,
        /// At most this many items (batches stay whole); 0 = no limit.
        page_size: usize,
    },
    /// The fault event: range `range` splits into two halves.
    Split {
        /// The container.
        container: String,
        /// The range id.
        range: u32,
    },
    /// The TTL purge: deletes the items with a TTL ([`TTL_MARK`]) at least `ttl_s` old.
    PurgeExpired {
        /// The container.
        container: String,
        /// The items' time to live after their soft delete, seconds.
        ttl_s: u64,
    },
}

impl FeedRequest {
    /// True for splits and purges.
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            FeedRequest::Split { .. } | FeedRequest::PurgeExpired { .. }
        )
    }

    /// The partition key it routes by (`""`: the container's whole feed).
    pub fn partition_key(&self) -> &str {
        match self {
            FeedRequest::Read {
                scope: FeedScope::PartitionKey(pk),
                ..
            } => pk,
            _ => "",
        }
    }
}

/// One change as the feed shows it: an item at its latest version.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FeedItem {
    /// `_lsn`: the log position of the write (a batch's items share it).
    pub lsn: u64,
    /// The partition key.
    pub partition_key: String,
    /// The item id.
    pub id: String,
    /// The model's version behind `_etag`.
    pub version: u64,
    /// The document.
    pub body: String,
    /// `_ts`, seconds.
    pub ts: u64,
}

/// The answer to a [`FeedRequest`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedResponse {
    /// 200, 304 (nothing new), 410 (the range split), 404 (no such range), 400.
    pub status: u16,
    /// 1002 `PartitionKeyRangeGone` with a 410.
    pub sub_status: u32,
    /// The page, in LSN order.
    pub items: Vec<FeedItem>,
    /// The continuation after this page (on 200 and 304).
    pub continuation: u64,
    /// For a read without a continuation, the LSN its start resolved to.
    pub start_lsn: Option<u64>,
    /// `Ranges`: the current ranges; a 410: the split range's children.
    pub ranges: Vec<FeedRange>,
    /// A purge: how many items it deleted.
    pub purged: usize,
}

impl FeedResponse {
    /// The status the SDK's transport and retry layer sees: a range's
    /// 410/1002 is handled by the change-feed layer above it (the pull
    /// iterator splits its composite continuation, the processor creates the
    /// child leases, SPEC §3.2, §3.3.8), never retried as a point operation's
    /// 410, so it travels as a delivered answer (200) whose own status is 410.
    pub fn transport_status(&self) -> u16 {
        if self.status == 410 && self.sub_status == sub_status::PARTITION_KEY_RANGE_GONE {
            200
        } else {
            self.status
        }
    }
}

/// A logged change of the feed's own state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FeedEffect {
    /// Range `parent` of `container` split into `children`.
    Split {
        /// The container.
        container: String,
        /// The range that split.
        parent: FeedRange,
        /// Its children, tiling it.
        children: Vec<FeedRange>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Latest {
    lsn: u64,
    version: u64,
    body: String,
    ts: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ContainerFeed {
    /// Live ranges by id.
    live: BTreeMap<u32, FeedRange>,
    /// Split ranges: id → children ids.
    split: BTreeMap<u32, Vec<FeedRange>>,
    next_id: u32,
    /// Latest live version of each item, by (partition key, id).
    latest: BTreeMap<(String, String), Latest>,
    /// `_ts` of every item write, by LSN (to resolve a start time).
    ts_by_lsn: BTreeMap<u64, u64>,
}

impl ContainerFeed {
    /// A container's feed with `ranges` physical ranges of equal width.
    fn new(ranges: u32) -> ContainerFeed {
        let ranges = ranges.clamp(1, KEY_SPACE);
        let width = KEY_SPACE / ranges;
        let live = (0..ranges)
            .map(|i| {
                let max = if i + 1 == ranges {
                    KEY_SPACE
                } else {
                    (i + 1) * width
                };
                (
                    i,
                    FeedRange {
                        id: i,
                        min: i * width,
                        max,
                    },
                )
            })
            .collect();
        ContainerFeed {
            live,
            split: BTreeMap::new(),
            next_id: ranges,
            latest: BTreeMap::new(),
            ts_by_lsn: BTreeMap::new(),
        }
    }
}

/// The change feed of every container of one partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeFeed {
    bugs: ModelBugs,
    /// Physical ranges a container starts with.
    ranges: u32,
    containers: BTreeMap<String, ContainerFeed>,
}

impl Default for ChangeFeed {
    fn default() -> ChangeFeed {
        ChangeFeed::new(ModelBugs::default())
    }
}

impl ChangeFeed {
    /// No changes yet, with `bugs` switched on (it reads `page_cut_splits_batch`).
    pub fn new(bugs: ModelBugs) -> ChangeFeed {
        ChangeFeed::with_ranges(bugs, INITIAL_RANGES)
    }

    /// [`ChangeFeed::new`], each container starting with `ranges` physical
    /// ranges (at least 1): fewer ranges, fewer leases and feed reads, which
    /// the shrinker uses.
    pub fn with_ranges(bugs: ModelBugs, ranges: u32) -> ChangeFeed {
        ChangeFeed {
            bugs,
            ranges: ranges.max(1),
            containers: BTreeMap::new(),
        }
    }

    fn container(&mut self, c: &str) -> &mut ContainerFeed {
        let ranges = self.ranges;
        self.containers
            .entry(c.to_string())
            .or_insert_with(|| ContainerFeed::new(ranges))
    }

    /// The live ranges of `container`, by id.
    pub fn ranges(&self, container: &str) -> Vec<FeedRange> {
        match self.containers.get(container) {
            Some(c) => c.live.values().cloned().collect(),
            None => ContainerFeed::new(self.ranges).live.into_values().collect(),
        }
    }

    /// Observes one logged effect at log position `lsn` (live and on redo alike).
    pub fn observe_cosmos(&mut self, lsn: u64, effect: &CosmosEffect) {
        let changes: &[ItemChange] = match effect {
            CosmosEffect::Item(c) => std::slice::from_ref(c),
            CosmosEffect::Batch(cs) => cs,
        };
        for c in changes {
            match c {
                ItemChange::Written { key, item } => {
                    let feed = self.container(&key.container);
                    feed.ts_by_lsn.insert(lsn, item.ts);
                    feed.latest.insert(
                        (key.partition_key.clone(), key.id.clone()),
                        Latest {
                            lsn,
                            version: item.version,
                            body: item.body.clone(),
                            ts: item.ts,
                        },
                    );
                }
                ItemChange::Deleted { key, version } => {
                    let tombstone = self.bugs.feed_shows_deletes;
                    let feed = self.container(&key.container);
                    let slot = (key.partition_key.clone(), key.id.clone());
                    match feed.latest.remove(&slot) {
                        Some(old) if tombstone => {
                            // The bug: the delete shows as a version no write committed.
                            let ghost = Latest {
                                lsn,
                                version: *version,
                                body: TOMBSTONE.to_string(),
                                ts: old.ts,
                            };
                            feed.latest.insert(slot, ghost);
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// Replays a logged feed effect.
    pub fn redo(&mut self, effect: &FeedEffect) {
        match effect {
            FeedEffect::Split {
                container,
                parent,
                children,
            } => {
                let feed = self.container(container);
                feed.live.remove(&parent.id);
                for c in children {
                    feed.live.insert(c.id, c.clone());
                    feed.next_id = feed.next_id.max(c.id + 1);
                }
                feed.split.insert(parent.id, children.clone());
            }
        }
    }

    /// The Cosmos effect a purge at server time `now` (ms) would log: a delete
    /// of every soft-deleted item at least `ttl_s` old (`None`: nothing to purge).
    pub fn purge_effect(&self, container: &str, ttl_s: u64, now: u64) -> Option<CosmosEffect> {
        let feed = self.containers.get(container)?;
        let expired: Vec<ItemChange> = feed
            .latest
            .iter()
            .filter(|(_, l)| l.body.contains(TTL_MARK) && l.ts + ttl_s <= now / 1000)
            .map(|((pk, id), l)| ItemChange::Deleted {
                key: ItemKey::new(container, pk, id),
                version: l.version + 1,
            })
            .collect();
        (!expired.is_empty()).then_some(CosmosEffect::Batch(expired))
    }

    /// Answers a request that changes nothing, or computes the effect of one
    /// that does (a split; a purge is answered by the partition, which owns the items).
    /// `partition_lsn` is the partition's current log position.
    pub fn apply(
        &self,
        req: &FeedRequest,
        partition_lsn: u64,
    ) -> (FeedResponse, Option<FeedEffect>) {
        let fresh;
        let feed = match self.containers.get(req_container(req)) {
            Some(f) => f,
            None => {
                fresh = ContainerFeed::new(self.ranges);
                &fresh
            }
        };
        match req {
            FeedRequest::Ranges { .. } => (
                FeedResponse {
                    status: 200,
                    ranges: feed.live.values().cloned().collect(),
                    ..FeedResponse::default()
                },
                None,
            ),
            FeedRequest::Split { container, range } => {
                let Some(parent) = feed.live.get(range) else {
                    return (status(404, 0), None);
                };
                if parent.max - parent.min < 2 {
                    return (status(400, 0), None);
                }
                let mid = parent.min + (parent.max - parent.min) / 2;
                let children = vec![
                    FeedRange {
                        id: feed.next_id,
                        min: parent.min,
                        max: mid,
                    },
                    FeedRange {
                        id: feed.next_id + 1,
                        min: mid,
                        max: parent.max,
                    },
                ];
                let response = FeedResponse {
                    status: 200,
                    ranges: children.clone(),
                    ..FeedResponse::default()
                };
                let effect = FeedEffect::Split {
                    container: container.clone(),
                    parent: parent.clone(),
                    children,
                };
                (response, Some(effect))
            }
            FeedRequest::PurgeExpired { .. } => (status(400, 0), None),
            FeedRequest::Read {
                scope,
                from,
                page_size,
                ..
            } => {
                // The bug `lagging_replica_304`: a range read sees the log
                // only up to a few records back.
                let lagging = self.bugs.lagging_replica_304 && matches!(scope, FeedScope::Range(_));
                let visible = if lagging {
                    partition_lsn.saturating_sub(REPLICA_LAG)
                } else {
                    partition_lsn
                };
                let filter: Box<dyn Fn(&str) -> bool> = match scope {
                    FeedScope::Range(id) => {
                        let range = match feed.split.get(id) {
                            // The bug `split_range_still_served`: the parent's
                            // key space, the span of its children, is read as if
                            // it had not split.
                            Some(children) if self.bugs.split_range_still_served => FeedRange {
                                id: *id,
                                min: children.iter().map(|c| c.min).min().unwrap_or(0),
                                max: children.iter().map(|c| c.max).max().unwrap_or(0),
                            },
                            Some(children) => {
                                let mut r = status(410, sub_status::PARTITION_KEY_RANGE_GONE);
                                r.ranges = children.clone();
                                return (r, None);
                            }
                            None => match feed.live.get(id) {
                                Some(range) => range.clone(),
                                None => return (status(404, 0), None),
                            },
                        };
                        Box::new(move |pk| range.contains(epk(pk)))
                    }
                    FeedScope::PartitionKey(key) => {
                        let key = key.clone();
                        Box::new(move |pk| pk == key)
                    }
                };
                let (after, start_lsn) = match from {
                    StartFrom::Continuation(c) => (*c, None),
                    StartFrom::Beginning => (0, Some(0)),
                    StartFrom::Now => (partition_lsn, Some(partition_lsn)),
                    StartFrom::Time(t) => {
                        let secs = t / 1000;
                        // The last write at or before the time, in log order.
                        let at = feed
                            .ts_by_lsn
                            .iter()
                            .filter(|(_, ts)| **ts <= secs)
                            .map(|(lsn, _)| *lsn)
                            .max()
                            .unwrap_or(0);
                        (at, Some(at))
                    }
                };
                let mut items: Vec<FeedItem> = feed
                    .latest
                    .iter()
                    .filter(|((pk, _), l)| l.lsn > after && l.lsn <= visible && filter(pk))
                    .map(|((pk, id), l)| FeedItem {
                        lsn: l.lsn,
                        partition_key: pk.clone(),
                        id: id.clone(),
                        version: l.version,
                        body: l.body.clone(),
                        ts: l.ts,
                    })
                    .collect();
                items.sort();
                if items.is_empty() {
                    let mut r = status(304, 0);
                    r.continuation = after.max(visible);
                    r.start_lsn = start_lsn;
                    return (r, None);
                }
                let mut continuation = visible;
                if *page_size > 0 && items.len() > *page_size {
                    // Keep the last LSN's items whole (a batch is atomic).
                    let last = items[*page_size - 1].lsn;
                    if self.bugs.page_cut_splits_batch {
                        items.truncate(*page_size);
                    } else {
                        items.retain(|i| i.lsn <= last);
                    }
                    if !self.bugs.page_cut_keeps_log_end {
                        continuation = last;
                    }
                }
                if self.bugs.page_sorted_by_id {
                    items.sort_by(|a, b| (&a.partition_key, &a.id).cmp(&(&b.partition_key, &b.id)));
                }
                let r = FeedResponse {
                    status: 200,
                    items,
                    continuation,
                    start_lsn,
                    ..FeedResponse::default()
                };
                (r, None)
            }
        }
    }
}

fn req_container(req: &FeedRequest) -> &str {
    match req {
        FeedRequest::Ranges { container }
        | FeedRequest::Read { container, .. }
        | FeedRequest::Split { container, .. }
        | FeedRequest::PurgeExpired { container, .. } => container,
    }
}

fn status(status: u16, sub_status: u32) -> FeedResponse {
    FeedResponse {
        status,
        sub_status,
        ..FeedResponse::default()
    }
}

#[cfg(test)]
mod tests;
