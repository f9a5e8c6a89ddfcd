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

use crate::bugs::ModelBugs;
use crate::cosmos::{CosmosEffect, ItemChange, ItemKey};
use crate::retry::sub_status;
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
pub const TTL_MARK: &str = "\"ttl\":true";

/// The body of the tombstone that the seeded bug `feed_shows_deletes` shows
/// for a deleted item.
pub const TOMBSTONE: &str = "{\"_deleted\":true}";

/// How many log records behind the log the replica of the seeded bug
/// `lagging_replica_304` serves range reads.
pub const REPLICA_LAG: u64 = 4;

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
                        if let Some(children) = feed.split.get(id) {
                            let mut r = status(410, sub_status::PARTITION_KEY_RANGE_GONE);
                            r.ranges = children.clone();
                            return (r, None);
                        }
                        let Some(range) = feed.live.get(id).cloned() else {
                            return (status(404, 0), None);
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
                    continuation = last;
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
mod tests {
    use super::*;
    use crate::cosmos::{CosmosRequest, ItemOp};
    use crate::partition::{Partition, Partitions, Request, Response};

    fn write(p: &mut Partition, pk: &str, id: &str, body: &str, now: u64) -> u64 {
        let req = Request::Cosmos(CosmosRequest::Item {
            container: "items".into(),
            partition_key: pk.into(),
            op: ItemOp::Upsert {
                id: id.into(),
                body: body.into(),
                if_match: None,
            },
        });
        let (r, e) = p.apply(&req, now);
        assert!(r.status() < 300 && e.is_some());
        p.lsn()
    }

    fn read(p: &mut Partition, scope: FeedScope, from: StartFrom, page: usize) -> FeedResponse {
        let req = Request::Feed(FeedRequest::Read {
            container: "items".into(),
            scope,
            from,
            page_size: page,
        });
        let (r, e) = p.apply(&req, 0);
        assert!(e.is_none(), "a read changes nothing");
        r.into_feed().expect("a feed response")
    }

    fn pk_in(range: u32) -> String {
        (0..)
            .map(|i| format!("k{i}"))
            .find(|k| epk(k) / (KEY_SPACE / INITIAL_RANGES) == range)
            .expect("some key")
    }

    fn ids(r: &FeedResponse) -> Vec<(String, u64, u64)> {
        r.items
            .iter()
            .map(|i| (i.id.clone(), i.version, i.lsn))
            .collect()
    }

    fn partition() -> Partition {
        Partition::new(ModelBugs::default(), &[])
    }

    #[test]
    fn an_item_appears_once_at_its_latest_version_and_intermediate_versions_are_skipped() {
        let mut p = partition();
        let k = pk_in(0);
        write(&mut p, &k, "a", "v1", 1_000);
        write(&mut p, &k, "b", "v1", 1_000);
        write(&mut p, &k, "a", "v2", 2_000);
        let r = read(&mut p, FeedScope::Range(0), StartFrom::Beginning, 0);
        assert_eq!(r.status, 200);
        assert_eq!(
            ids(&r),
            vec![("b".into(), 1, 2), ("a".into(), 2, 3)],
            "per LSN order; a's first version is gone"
        );
        assert_eq!(r.continuation, 3);
    }

    #[test]
    fn nothing_new_after_a_continuation_is_a_304_and_something_new_a_200() {
        let mut p = partition();
        let k = pk_in(1);
        write(&mut p, &k, "a", "v1", 1_000);
        let first = read(&mut p, FeedScope::Range(1), StartFrom::Beginning, 0);
        let c = first.continuation;
        let again = read(&mut p, FeedScope::Range(1), StartFrom::Continuation(c), 0);
        assert_eq!((again.status, again.continuation), (304, c));
        write(&mut p, &k, "a", "v2", 2_000);
        let next = read(&mut p, FeedScope::Range(1), StartFrom::Continuation(c), 0);
        assert_eq!((next.status, ids(&next)), (200, vec![("a".into(), 2, 2)]));
    }

    #[test]
    fn deletes_are_not_captured_and_a_ttl_purge_removes_soft_deleted_items() {
        let mut p = partition();
        let k = pk_in(2);
        write(&mut p, &k, "a", "v1", 1_000);
        write(&mut p, &k, "b", "{\"deleted\":true,\"ttl\":true}", 1_000);
        let del = Request::Cosmos(CosmosRequest::Item {
            container: "items".into(),
            partition_key: k.clone(),
            op: ItemOp::Delete {
                id: "a".into(),
                if_match: None,
            },
        });
        p.apply(&del, 1_500);
        let r = read(&mut p, FeedScope::Range(2), StartFrom::Beginning, 0);
        assert_eq!(ids(&r), vec![("b".into(), 1, 2)], "a's delete is invisible");
        let purge = Request::Feed(FeedRequest::PurgeExpired {
            container: "items".into(),
            ttl_s: 10,
        });
        let (r, e) = p.apply(&purge, 5_000);
        assert_eq!((r.status(), e), (200, None), "not yet expired");
        let (r, e) = p.apply(&purge, 11_000);
        assert_eq!(r.into_feed().map(|r| r.purged), Some(1));
        assert!(e.is_some(), "a purge is a logged delete");
        let r = read(&mut p, FeedScope::Range(2), StartFrom::Beginning, 0);
        assert_eq!(r.status, 304);
    }

    #[test]
    fn a_batch_shares_one_lsn_and_is_never_cut_by_the_page_size() {
        let mut p = partition();
        let k = pk_in(3);
        write(&mut p, &k, "x", "v1", 1_000);
        let ops = ["a", "b", "c"]
            .iter()
            .map(|id| ItemOp::Create {
                id: (*id).into(),
                body: "b".into(),
            })
            .collect();
        let batch = Request::Cosmos(CosmosRequest::Batch {
            container: "items".into(),
            partition_key: k.clone(),
            ops,
        });
        p.apply(&batch, 1_000);
        write(&mut p, &k, "y", "v1", 1_000);
        let r = read(&mut p, FeedScope::Range(3), StartFrom::Beginning, 2);
        let lsns: Vec<u64> = r.items.iter().map(|i| i.lsn).collect();
        assert_eq!(lsns, vec![1, 2, 2, 2], "the hint 2 would cut the batch");
        assert_eq!(r.continuation, 2);
        let rest = read(&mut p, FeedScope::Range(3), StartFrom::Continuation(2), 2);
        assert_eq!(ids(&rest), vec![("y".into(), 1, 3)]);
    }

    #[test]
    fn a_partition_key_scope_sees_only_that_key() {
        let mut p = partition();
        write(&mut p, "p1", "a", "v1", 1_000);
        write(&mut p, "p2", "a", "v1", 1_000);
        let r = read(
            &mut p,
            FeedScope::PartitionKey("p2".into()),
            StartFrom::Beginning,
            0,
        );
        assert_eq!(r.items.len(), 1);
        assert_eq!(r.items[0].partition_key, "p2");
    }

    #[test]
    fn start_now_and_start_time_skip_what_came_before() {
        let mut p = partition();
        let k = pk_in(0);
        write(&mut p, &k, "a", "v1", 1_000);
        write(&mut p, &k, "b", "v1", 3_000);
        let now = read(&mut p, FeedScope::Range(0), StartFrom::Now, 0);
        assert_eq!((now.status, now.start_lsn), (304, Some(2)));
        // Time 2.5 s: whole seconds, exclusive — a (1 s) is before, b (3 s) after.
        let t = read(&mut p, FeedScope::Range(0), StartFrom::Time(2_500), 0);
        assert_eq!((ids(&t), t.start_lsn), (vec![("b".into(), 1, 2)], Some(1)));
    }

    #[test]
    fn a_split_range_answers_410_1002_naming_children_that_tile_it_and_resume_from_its_token() {
        let mut p = partition();
        let keys: Vec<String> = (0..40)
            .map(|i| format!("k{i}"))
            .filter(|k| epk(k) < 64)
            .collect();
        for k in &keys {
            write(&mut p, k, "a", "v1", 1_000);
        }
        let before = read(&mut p, FeedScope::Range(0), StartFrom::Beginning, 0);
        let split = Request::Feed(FeedRequest::Split {
            container: "items".into(),
            range: 0,
        });
        let (r, e) = p.apply(&split, 2_000);
        assert_eq!(r.status(), 200);
        assert!(e.is_some(), "a split is logged");
        let gone = read(
            &mut p,
            FeedScope::Range(0),
            StartFrom::Continuation(before.continuation),
            0,
        );
        assert_eq!((gone.status, gone.sub_status), (410, 1002));
        assert_eq!(
            gone.ranges,
            vec![
                FeedRange {
                    id: 4,
                    min: 0,
                    max: 32
                },
                FeedRange {
                    id: 5,
                    min: 32,
                    max: 64
                }
            ]
        );
        // Every key of the parent is in exactly one child, from the beginning.
        let mut seen = 0;
        for child in &gone.ranges {
            seen += read(&mut p, FeedScope::Range(child.id), StartFrom::Beginning, 0)
                .items
                .len();
            let r = read(
                &mut p,
                FeedScope::Range(child.id),
                StartFrom::Continuation(before.continuation),
                0,
            );
            assert_eq!(r.status, 304, "nothing new after the parent's token");
        }
        assert_eq!(seen, keys.len());
    }

    #[test]
    fn splits_and_the_feed_survive_a_redo_of_the_log() {
        let mut live = Partitions::new(ModelBugs::default(), vec![]);
        let mut effects = Vec::new();
        let steps = vec![
            Request::Cosmos(CosmosRequest::Item {
                container: "items".into(),
                partition_key: "p".into(),
                op: ItemOp::Create {
                    id: "a".into(),
                    body: "b".into(),
                },
            }),
            Request::Feed(FeedRequest::Split {
                container: "items".into(),
                range: 2,
            }),
        ];
        for s in &steps {
            let (_, e) = live.get_mut(0).apply(s, 1_000);
            effects.extend(e);
        }
        let mut recovered = partition();
        for e in &effects {
            recovered.redo(e);
        }
        assert_eq!(Some(&recovered), live.get(0));
        assert_eq!(recovered.feed().ranges("items").len(), 5);
        let r = recovered.apply(
            &Request::Feed(FeedRequest::Ranges {
                container: "items".into(),
            }),
            0,
        );
        assert!(matches!(r.0, Response::Feed(ref f) if f.ranges.len() == 5));
    }

    fn with_bug(name: &str) -> Partition {
        let mut bugs = ModelBugs::default();
        assert!(bugs.set(name));
        Partition::new(bugs, &[])
    }

    fn delete(p: &mut Partition, pk: &str, id: &str, now: u64) {
        let req = Request::Cosmos(CosmosRequest::Item {
            container: "items".into(),
            partition_key: pk.into(),
            op: ItemOp::Delete {
                id: id.into(),
                if_match: None,
            },
        });
        assert!(p.apply(&req, now).1.is_some());
    }

    #[test]
    fn bug_feed_shows_deletes_hands_out_a_tombstone_no_write_committed() {
        let k = pk_in(0);
        for (bug, shown) in [
            (None, vec![]),
            (Some("feed_shows_deletes"), vec![TOMBSTONE]),
        ] {
            let mut p = bug.map_or_else(partition, with_bug);
            write(&mut p, &k, "a", "v1", 1_000);
            delete(&mut p, &k, "a", 2_000);
            let r = read(&mut p, FeedScope::Range(0), StartFrom::Beginning, 0);
            let bodies: Vec<&str> = r.items.iter().map(|i| i.body.as_str()).collect();
            assert_eq!(bodies, shown, "bug {bug:?}");
        }
    }

    #[test]
    fn bug_page_sorted_by_id_hands_one_keys_changes_out_of_lsn_order() {
        let k = pk_in(1);
        for (bug, order) in [(None, ["b", "a"]), (Some("page_sorted_by_id"), ["a", "b"])] {
            let mut p = bug.map_or_else(partition, with_bug);
            write(&mut p, &k, "b", "v1", 1_000);
            write(&mut p, &k, "a", "v1", 1_000);
            let r = read(&mut p, FeedScope::Range(1), StartFrom::Beginning, 0);
            let got: Vec<&str> = r.items.iter().map(|i| i.id.as_str()).collect();
            assert_eq!(got, order, "bug {bug:?}");
            assert_eq!(r.continuation, 2, "the page is still cut by LSN");
        }
    }

    #[test]
    fn bug_lagging_replica_304_answers_304_while_a_committed_change_is_unseen() {
        let k = pk_in(2);
        let other = pk_in(3);
        let mut p = with_bug("lagging_replica_304");
        write(&mut p, &k, "a", "v1", 1_000);
        let r = read(&mut p, FeedScope::Range(2), StartFrom::Continuation(0), 0);
        assert_eq!(
            (r.status, r.continuation),
            (304, 0),
            "hidden, and not skipped"
        );
        for i in 0..REPLICA_LAG {
            write(&mut p, &other, &format!("x{i}"), "v", 1_000);
        }
        let r = read(&mut p, FeedScope::Range(2), StartFrom::Continuation(0), 0);
        assert_eq!((r.status, ids(&r)), (200, vec![("a".into(), 1, 1)]));
        // The unmodified feed answers at once.
        let mut q = partition();
        write(&mut q, &k, "a", "v1", 1_000);
        let r = read(&mut q, FeedScope::Range(2), StartFrom::Continuation(0), 0);
        assert_eq!(r.status, 200);
    }
}
