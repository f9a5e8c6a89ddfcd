//! A partition: the services' pure state machines behind one shape, so that the
//! write-ahead log, the wire and the server loop never change for a new service.
//!
//! Every service is a pure state machine with `apply(request, now) ->
//! (response, effect)` and `redo(effect)` (today only the [`Store`]). A
//! partition holds one of each and routes by request kind:
//!
//! - [`Request`], [`Response`] and [`Effect`] have one arm per service; the wire
//!   carries `Request`/`Response`, the log records `Effect`.
//! - [`Partition::apply`] runs a request at a time it is handed; iff state
//!   changed it returns the effect, which is the next log position of the
//!   partition: its LSN ([`Partition::lsn`]: 1, 2, 3... in log order, per
//!   partition). [`Partition::redo`] replays one logged effect on recovery and
//!   advances the LSN the same way, so a recovered partition has the LSNs it
//!   had before the crash (for the effects that were durable).
//!
//! Adding a service (leases, the change feed, queues) = its state machine in
//! its own file, a field in [`Partition`], and one arm in each enum and in each
//! `match` below. The change feed will read "effects of partition p after LSN n"
//! from the log records, which carry the LSN.

use crate::core::bugs::ModelBugs;
use crate::core::conditions::Millis;
use crate::services::cosmos::{CosmosEffect, CosmosItems, CosmosRequest, CosmosResponse};
use crate::services::feed::{ChangeFeed, FeedEffect, FeedRequest, FeedResponse};
use crate::services::lease::{self, LeaseRequest, LeaseResponse};
use crate::services::queue::{IndexingService, QueueEffect, QueueRequest, QueueResponse};
use crate::services::search::{SearchEffect, SearchRequest, SearchResponse, SearchService};
use crate::services::store::{self, Store, StoreRequest, StoreResponse};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Whether the operation is idempotent for retry purposes (SPEC §4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum OpKind {
    /// A read: its transport timeouts are retried (as 410s).
    Read,
    /// A write: not idempotent; its outcome is unknown after a timeout or 408, never retried.
    Write,
}

/// A request to one of the partition's services.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// To the object store.
    Store(StoreRequest),
    /// To the lease service (blob and container leases, container deletes).
    Lease(LeaseRequest),
    /// To the Cosmos DB item service (SPEC §1.3).
    Cosmos(CosmosRequest),
    /// To the Azure AI Search resource service (SPEC §1.2).
    Search(SearchRequest),
    /// To the Cloud Search indexing queues (SPEC §5).
    Queue(QueueRequest),
    /// To the Cosmos DB change feed (SPEC §3.1, §3.2).
    Feed(FeedRequest),
}

impl Request {
    /// True for requests that may change state (the service decides).
    pub fn is_write(&self) -> bool {
        match self {
            Request::Store(r) => r.is_write(),
            Request::Cosmos(r) => r.is_write(),
            Request::Search(r) => r.is_write(),
            Request::Lease(_) => true,
            Request::Queue(_) => true,
            Request::Feed(r) => r.is_write(),
        }
    }

    /// How the SDK retries it (SPEC §4.3): reads, and the lease requests that are
    /// safe to repeat ([`LeaseRequest::is_idempotent`]), as reads; other writes as
    /// writes (never re-sent after a timeout). `acquire_retry_bug` is the seeded bug
    /// `acquire_not_idempotent_retry`: every lease action is retried as a read.
    pub fn retry_kind(&self, acquire_retry_bug: bool) -> OpKind {
        match self {
            Request::Lease(LeaseRequest::Action { .. }) if acquire_retry_bug => OpKind::Read,
            Request::Lease(r) if r.is_idempotent() => OpKind::Read,
            Request::Queue(r) if r.is_idempotent() => OpKind::Read,
            r if r.is_write() => OpKind::Write,
            _ => OpKind::Read,
        }
    }

    /// A short form of the request for logs, in the service's words (e.g.
    /// `put docs/k3 If-Match "0x8D..2"`).
    pub fn describe(&self) -> String {
        match self {
            Request::Store(op) => store::describe(op),
            Request::Lease(op) => lease::describe(op),
            Request::Cosmos(op) => format!("cosmos {op:?}"),
            Request::Search(op) => format!("search {op:?}"),
            Request::Queue(op) => format!("queue {}", op.method()),
            Request::Feed(op) => format!("feed {op:?}"),
        }
    }

    /// The partition key the request routes by (`""` for requests that name
    /// none, e.g. creating a container).
    pub fn partition_key(&self) -> &str {
        match self {
            Request::Store(r) => r.key().map_or("", |k| k.partition_key.as_str()),
            Request::Lease(r) => r.partition_key(),
            Request::Cosmos(r) => r.partition_key(),
            Request::Search(r) => r.name(),
            Request::Queue(r) => r.datasource(),
            Request::Feed(r) => r.partition_key(),
        }
    }
}

/// One logged mutation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRecord {
    /// The partition the effect belongs to.
    pub partition: u32,
    /// The effect's log position in its partition: 1, 2, 3... in log order
    /// (see [`crate::partition::Partition::lsn`]).
    pub lsn: u64,
    /// What changed.
    pub effect: Effect,
}

/// A service's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// From the object store.
    Store(StoreResponse),
    /// From the lease service.
    Lease(LeaseResponse),
    /// From the Cosmos DB item service.
    Cosmos(CosmosResponse),
    /// From the Search resource service.
    Search(SearchResponse),
    /// From the indexing queues.
    Queue(QueueResponse),
    /// From the change feed.
    Feed(FeedResponse),
}

impl Response {
    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            Response::Store(r) => r.status,
            Response::Lease(r) => r.status,
            Response::Cosmos(r) => r.status,
            Response::Search(r) => r.status,
            Response::Queue(r) => r.status,
            Response::Feed(r) => r.transport_status(),
        }
    }

    /// The store's response, if this is one.
    pub fn into_store(self) -> Option<StoreResponse> {
        match self {
            Response::Store(r) => Some(r),
            _ => None,
        }
    }

    /// The lease service's response, if this is one.
    pub fn into_lease(self) -> Option<LeaseResponse> {
        match self {
            Response::Lease(r) => Some(r),
            Response::Store(_) => None,
            _ => None,
        }
    }

    /// The Cosmos item service's response, if this is one.
    pub fn into_cosmos(self) -> Option<CosmosResponse> {
        match self {
            Response::Cosmos(r) => Some(r),
            _ => None,
        }
    }

    /// The Search service's response, if this is one.
    pub fn into_search(self) -> Option<SearchResponse> {
        match self {
            Response::Search(r) => Some(r),
            _ => None,
        }
    }

    /// The indexing queues' response, if this is one.
    pub fn into_queue(self) -> Option<QueueResponse> {
        match self {
            Response::Queue(r) => Some(r),
            _ => None,
        }
    }

    /// The change feed's response, if this is one.
    pub fn into_feed(self) -> Option<FeedResponse> {
        match self {
            Response::Feed(r) => Some(r),
            _ => None,
        }
    }
}

/// What a successful mutation of one service changed: one log record's content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Effect {
    /// A change to the object store.
    Store(store::Effect),
    /// A change to a lease (or a container deleted).
    Lease(lease::Effect),
    /// A change to Cosmos items (a whole batch is one effect: one LSN).
    Cosmos(CosmosEffect),
    /// A change to a Search resource.
    Search(SearchEffect),
    /// A change to an indexing datasource (boxed: it carries its request
    /// and the items it changed).
    Queue(Box<QueueEffect>),
    /// A change to the change feed's ranges (a split).
    Feed(FeedEffect),
}

/// One partition's services and its log position.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    store: Store,
    lsn: u64,
    cosmos: CosmosItems,
    search: SearchService,
    queues: IndexingService,
    feed: ChangeFeed,
}

impl Partition {
    /// An empty partition with `bugs` switched on and `containers` provisioned:
    /// they exist from the start and are not logged (the LSN stays 0).
    pub fn new(bugs: ModelBugs, containers: &[String]) -> Partition {
        Partition::with_feed_ranges(bugs, containers, crate::services::feed::INITIAL_RANGES)
    }

    /// [`Partition::new`], whose change feed starts each container with
    /// `feed_ranges` physical ranges ([`ChangeFeed::with_ranges`]).
    pub fn with_feed_ranges(bugs: ModelBugs, containers: &[String], feed_ranges: u32) -> Partition {
        let mut store = Store::new(bugs);
        for c in containers {
            let create = StoreRequest::CreateContainer {
                container: c.clone(),
            };
            store.apply(&create, 0);
        }
        Partition {
            store,
            lsn: 0,
            cosmos: CosmosItems::new(bugs),
            search: SearchService::new(bugs),
            queues: IndexingService::new(bugs),
            feed: ChangeFeed::with_ranges(bugs, feed_ranges),
        }
    }

    /// Applies one request at server time `now` (ms). Returns the response and,
    /// iff state changed, the effect to log, whose LSN is then [`Partition::lsn`].
    pub fn apply(&mut self, req: &Request, now: Millis) -> (Response, Option<Effect>) {
        let (response, effect) = match req {
            Request::Store(r) => {
                let (response, effect) = self.store.apply(r, now);
                (Response::Store(response), effect.map(Effect::Store))
            }
            Request::Lease(r) => {
                let (response, effect) = self.store.apply_lease(r, now);
                (Response::Lease(response), effect.map(Effect::Lease))
            }
            Request::Cosmos(r) => {
                let (response, effect) = self.cosmos.apply(r, now);
                (Response::Cosmos(response), effect.map(Effect::Cosmos))
            }
            Request::Search(r) => {
                let (response, effect) = self.search.apply(r, now);
                (Response::Search(response), effect.map(Effect::Search))
            }
            Request::Queue(r) => {
                let (response, effect) = self.queues.apply(r, now);
                (
                    Response::Queue(response),
                    effect.map(|e| Effect::Queue(Box::new(e))),
                )
            }
            Request::Feed(r) => self.apply_feed(r, now),
        };
        if let Some(e) = &effect {
            self.lsn += 1;
            self.observe(e);
        }
        (response, effect)
    }

    /// Replays the next logged effect of this partition (effects must be redone
    /// in log order) and advances the LSN to it.
    pub fn redo(&mut self, effect: &Effect) {
        match effect {
            Effect::Store(e) => self.store.redo(e),
            Effect::Lease(e) => self.store.redo_lease(e),
            Effect::Cosmos(e) => self.cosmos.redo(e),
            Effect::Search(e) => self.search.redo(e),
            Effect::Queue(e) => self.queues.redo(e),
            Effect::Feed(e) => self.feed.redo(e),
        }
        self.lsn += 1;
        self.observe(effect);
    }

    /// A feed request: reads and splits by the feed; a TTL purge is a Cosmos
    /// delete of the expired soft-deleted items (the feed knows which they are).
    fn apply_feed(&mut self, r: &FeedRequest, now: Millis) -> (Response, Option<Effect>) {
        if let FeedRequest::PurgeExpired { container, ttl_s } = r {
            let effect = self.feed.purge_effect(container, *ttl_s, now);
            let purged = match &effect {
                Some(CosmosEffect::Batch(cs)) => cs.len(),
                _ => 0,
            };
            if let Some(e) = &effect {
                self.cosmos.redo(e);
            }
            let response = FeedResponse {
                status: 200,
                purged,
                ..FeedResponse::default()
            };
            return (Response::Feed(response), effect.map(Effect::Cosmos));
        }
        let (response, effect) = self.feed.apply(r, self.lsn);
        if let Some(e) = &effect {
            self.feed.redo(e);
        }
        (Response::Feed(response), effect.map(Effect::Feed))
    }

    /// Feeds a Cosmos effect, just logged at [`Partition::lsn`], to the change feed.
    fn observe(&mut self, effect: &Effect) {
        if let Effect::Cosmos(e) = effect {
            self.feed.observe_cosmos(self.lsn, e);
        }
    }

    /// The log position of the partition's last effect (0 before the first).
    pub fn lsn(&self) -> u64 {
        self.lsn
    }

    /// The object store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The Cosmos items.
    pub fn cosmos(&self) -> &CosmosItems {
        &self.cosmos
    }

    /// The Search resources.
    pub fn search(&self) -> &SearchService {
        &self.search
    }

    /// The indexing queues.
    pub fn queues(&self) -> &IndexingService {
        &self.queues
    }

    /// The change feed.
    pub fn feed(&self) -> &ChangeFeed {
        &self.feed
    }
}

/// Every partition one server holds, each created on first use with the same
/// bugs and provisioned containers.
#[derive(Clone, Debug)]
pub struct Partitions {
    bugs: ModelBugs,
    containers: Vec<String>,
    feed_ranges: u32,
    by_id: BTreeMap<u32, Partition>,
}

impl Partitions {
    /// No partitions yet; each will be made by `Partition::new(bugs, containers)`.
    pub fn new(bugs: ModelBugs, containers: Vec<String>) -> Partitions {
        Partitions {
            bugs,
            containers,
            feed_ranges: crate::services::feed::INITIAL_RANGES,
            by_id: BTreeMap::new(),
        }
    }

    /// These partitions, each change feed starting a container with
    /// `feed_ranges` physical ranges ([`Partition::with_feed_ranges`]).
    pub fn with_feed_ranges(self, feed_ranges: u32) -> Partitions {
        Partitions {
            feed_ranges,
            ..self
        }
    }

    /// Partition `p`, created if new.
    pub fn get_mut(&mut self, p: u32) -> &mut Partition {
        self.by_id.entry(p).or_insert_with(|| {
            Partition::with_feed_ranges(self.bugs, &self.containers, self.feed_ranges)
        })
    }

    /// Partition `p`, if it has been used.
    pub fn get(&self, p: u32) -> Option<&Partition> {
        self.by_id.get(&p)
    }

    /// Rebuilds the partitions from log records read in log order.
    ///
    /// # Panics
    /// If a record's LSN is not the next of its partition: the log is written
    /// in order and cut only at its tail, so that is a broken model invariant.
    pub fn redo_all(&mut self, records: &[LogRecord]) {
        for r in records {
            let partition = self.get_mut(r.partition);
            partition.redo(&r.effect);
            assert_eq!(
                partition.lsn(),
                r.lsn,
                "log record out of order in partition {}",
                r.partition
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::store::{Conditions, ItemKey};
    use crate::wal;

    fn put(pk: &str, id: &str, body: &str) -> Request {
        Request::Store(StoreRequest::Put {
            key: ItemKey::new("docs", pk, id),
            body: body.into(),
            conditions: Conditions::none(),
            metadata: Default::default(),
        })
    }

    fn read(pk: &str, id: &str) -> Request {
        Request::Store(StoreRequest::Read {
            key: ItemKey::new("docs", pk, id),
            conditions: Conditions::none(),
        })
    }

    fn containers() -> Vec<String> {
        vec!["docs".to_string()]
    }

    /// Runs `(partition, request)` pairs on live partitions and returns them and
    /// the log they wrote, each record framed as on the device.
    fn run_and_log(steps: &[(u32, Request)]) -> (Partitions, Vec<Vec<u8>>) {
        let mut live = Partitions::new(ModelBugs::default(), containers());
        let mut log = Vec::new();
        for (now, (p, req)) in steps.iter().enumerate() {
            let partition = live.get_mut(*p);
            let (_, effect) = partition.apply(req, now as Millis);
            if let Some(effect) = effect {
                log.push(wal::encode(
                    log.len() as u64 + 1,
                    &LogRecord {
                        partition: *p,
                        lsn: partition.lsn(),
                        effect,
                    },
                ));
            }
        }
        (live, log)
    }

    fn steps() -> Vec<(u32, Request)> {
        vec![
            (0, put("a", "1", "x")),
            (1, put("b", "1", "y")),
            (0, read("a", "1")),
            (0, put("a", "2", "z")),
            (2, read("c", "1")),
            (1, put("b", "1", "y2")),
            (0, put("a", "1", "x2")),
            (
                1,
                Request::Store(StoreRequest::Delete {
                    key: ItemKey::new("docs", "b", "1"),
                    conditions: Conditions::none(),
                }),
            ),
        ]
    }

    #[test]
    fn lsns_count_the_effects_of_each_partition_in_log_order() {
        let (live, log) = run_and_log(&steps());
        let (records, _) = wal::decode_all(&log.concat());
        let lsns: Vec<(u32, u64)> = records.iter().map(|r| (r.partition, r.lsn)).collect();
        assert_eq!(lsns, vec![(0, 1), (1, 1), (0, 2), (1, 2), (0, 3), (1, 3)]);
        assert_eq!(live.get(0).map(Partition::lsn), Some(3));
        assert_eq!(live.get(1).map(Partition::lsn), Some(3));
        // Reads change nothing: a partition used only for reads stays at 0.
        assert_eq!(live.get(2).map(Partition::lsn), Some(0));
    }

    #[test]
    fn lsns_and_state_after_redo_equal_those_before_the_crash() {
        let (live, log) = run_and_log(&steps());
        let (records, _) = wal::decode_all(&log.concat());
        let mut recovered = Partitions::new(ModelBugs::default(), containers());
        recovered.redo_all(&records);
        for p in 0..2 {
            assert_eq!(recovered.get(p), live.get(p), "partition {p}");
        }
        // A partition with no logged effect is not rebuilt: it starts fresh, at LSN 0.
        assert_eq!(recovered.get(2), None);
        assert_eq!(&*recovered.get_mut(2), live.get(2).expect("used"));
    }

    #[test]
    fn a_torn_tail_recovers_the_lsns_of_the_durable_prefix_and_continues_after_them() {
        let steps = steps();
        let (_, log) = run_and_log(&steps);
        // The log as it was after the first four records, with half of the fifth.
        let durable: Vec<u8> = log[..4].concat();
        let mut torn = durable.clone();
        torn.extend_from_slice(&log[4][..log[4].len() / 2]);
        let (records, valid) = wal::decode_all(&torn);
        assert_eq!(valid, durable.len());
        let mut recovered = Partitions::new(ModelBugs::default(), containers());
        recovered.redo_all(&records);
        // The live partitions just after the fourth record: steps 0..=5.
        let (before, _) = run_and_log(&steps[..6]);
        for p in 0..2 {
            assert_eq!(recovered.get(p), before.get(p), "partition {p}");
        }
        // The next effect of partition 0 takes the LSN after the durable ones.
        let p0 = recovered.get_mut(0);
        let (_, effect) = p0.apply(&put("a", "9", "w"), 100);
        assert!(effect.is_some());
        assert_eq!(p0.lsn(), 3);
    }

    #[test]
    #[should_panic(expected = "log record out of order in partition 0")]
    fn a_record_with_a_skipped_lsn_is_refused() {
        let (_, log) = run_and_log(&steps());
        let (mut records, _) = wal::decode_all(&log.concat());
        records.remove(0);
        let mut recovered = Partitions::new(ModelBugs::default(), containers());
        recovered.redo_all(&records);
    }

    #[test]
    fn requests_route_and_classify_like_their_service() {
        assert!(put("a", "1", "x").is_write());
        assert!(!read("a", "1").is_write());
        assert_eq!(put("pk7", "1", "x").partition_key(), "pk7");
        let create = Request::Store(StoreRequest::CreateContainer {
            container: "c".into(),
        });
        assert!(create.is_write());
        assert_eq!(create.partition_key(), "");
    }

    #[test]
    fn provisioned_containers_exist_without_a_log_position() {
        let mut p = Partition::new(ModelBugs::default(), &containers());
        assert!(p.store().has_container("docs"));
        assert_eq!(p.lsn(), 0);
        let (r, effect) = p.apply(
            &Request::Store(StoreRequest::CreateContainer {
                container: "docs".into(),
            }),
            1,
        );
        assert_eq!((r.status(), effect, p.lsn()), (409, None, 0));
    }

    #[test]
    fn a_cosmos_batch_takes_one_log_position_and_is_redone_whole() {
        use crate::services::cosmos::ItemOp;
        let create = |id: &str| ItemOp::Create {
            id: id.into(),
            body: "b".into(),
        };
        let batch = Request::Cosmos(CosmosRequest::Batch {
            container: "items".into(),
            partition_key: "pk".into(),
            ops: vec![create("1"), create("2"), create("3")],
        });
        assert!(batch.is_write());
        assert_eq!(batch.partition_key(), "pk");
        let mut live = Partitions::new(ModelBugs::default(), containers());
        let p = live.get_mut(0);
        let (r, effect) = p.apply(&batch, 1_000);
        assert_eq!((r.status(), p.lsn()), (200, 1));
        let record = LogRecord {
            partition: 0,
            lsn: 1,
            effect: effect.expect("a batch that commits has an effect"),
        };
        let (records, _) = wal::decode_all(&wal::encode(1, &record));
        let mut recovered = Partitions::new(ModelBugs::default(), containers());
        recovered.redo_all(&records);
        assert_eq!(
            recovered.get(0).map(Partition::cosmos),
            live.get(0).map(Partition::cosmos)
        );
        // A batch that fails has no effect and no log position.
        let p = live.get_mut(0);
        let (r, effect) = p.apply(&batch, 2_000);
        assert_eq!((r.status(), effect, p.lsn()), (409, None, 1));
    }

    #[test]
    fn search_requests_route_by_resource_name() {
        use crate::services::search::ResourceKind;
        let put = Request::Search(SearchRequest::Put {
            name: "hotels".into(),
            kind: ResourceKind::Index,
            entries: Default::default(),
            if_match: None,
            if_none_match: None,
        });
        assert!(put.is_write());
        assert_eq!(put.partition_key(), "hotels");
        let mut p = Partition::new(ModelBugs::default(), &containers());
        let (r, effect) = p.apply(&put, 0);
        assert_eq!(r.status(), 201);
        assert!(matches!(effect, Some(Effect::Search(_))));
        assert_eq!(p.lsn(), 1);
        assert!(p.search().resource("hotels").is_some());
    }
}
