//! The `feed` workload: writers (create, replace, upsert, soft delete, a few
//! hard deletes and transactional batches over partition keys), processor
//! hosts running the change feed processor with a recording delegate that
//! sometimes throws and is sometimes slow, a pull-model reader over every
//! range, and a splitter that splits ranges and runs the TTL purge; plus the
//! server's log device, which records every log record it appends.

use super::history::{FeedCall, FeedEvent, FeedRecorder, FeedResult};
use super::{FeedParams, ITEMS, LEASES};
use crate::kit::attempts::attempt;
use crate::kit::bridge::ClockAdapter;
use crate::kit::dialects::recorded;
use crate::services::feed::FeedRole;
use overcast_model::client::{sim_now_ns, StoreClient};
use overcast_model::cosmos::ItemOp;
use overcast_model::cosmos_client::CosmosContainer;
use overcast_model::env::Clock;
use overcast_model::feed::{FeedItem, FeedRange, FeedRequest, FeedScope, StartFrom};
use overcast_model::feed_processor::{
    feed_call, Delegate, DelegatePlan, ProcessorCall, ProcessorEvent, ProcessorObserver,
};
use overcast_model::partition::{Request, Response};
use overcast_model::retry::FinalOutcome;
use overcast_sim::clock::NodeClock;
use overcast_sim::history::OpRecord;
use overcast_sim::rng::Stream;
use rand::Rng;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// A host's observer: every processor event and SDK call into the history.
pub struct HostObserver {
    /// The recorder.
    pub rec: FeedRecorder,
    /// The host's incarnation name.
    pub name: String,
    /// Its clock.
    pub clock: NodeClock,
    /// Its client number in the history's operations.
    pub client: usize,
    /// The end of the active phase (simulated ns): calls after it are of
    /// the quiet phase ([`overcast_harness::ops::QUIET_OP`]).
    pub deadline_ns: u64,
    /// Calls asked about so far, by what and key (their skip numbers).
    pub asked: RefCell<BTreeMap<(String, String), usize>>,
}

impl ProcessorObserver for HostObserver {
    fn event(&self, e: ProcessorEvent) {
        self.rec
            .event(self.name.clone(), self.clock.now_ms(), FeedEvent::Host(e));
    }

    fn call(&self, c: ProcessorCall) {
        let known = !c.unknown;
        self.rec.push(OpRecord {
            id: 0,
            client: self.client,
            key: LEASES.to_string(),
            call: FeedCall::Host { what: c.what },
            invoke_ns: c.invoke_ns,
            return_ns: known.then_some(c.return_ns),
            result: known.then_some(FeedResult { status: c.status }),
            attempts: c.attempts.iter().map(attempt).collect(),
        });
    }

    /// A host call of the active phase is numbered for the shrinker
    /// ([`overcast_harness::ops::call_number`]: what it is for and is, its key, its
    /// place among those) and asked about ([`overcast_harness::ops::skipped_call`]);
    /// a call it sends is named by that number (its socket,
    /// [`overcast_harness::ops::name_socket`]), so the loop's and the renewer's calls
    /// keep their faults whatever the other task leaves out. Bootstrap is
    /// never left out and names no call; a call after the deadline carries
    /// [`overcast_harness::ops::QUIET_OP`], left out only for a prefix-closed failure.
    fn skipped(&self, what: &str, key: &str, from: Option<SocketAddr>, setup: bool) -> bool {
        let number = if setup {
            None
        } else {
            let nth = {
                let mut asked = self.asked.borrow_mut();
                let n = asked
                    .entry((what.to_string(), key.to_string()))
                    .or_default();
                *n += 1;
                *n - 1
            };
            // The incarnation's name too: a restarted host counts again.
            let what = format!("{}/{what}", self.name);
            let quiet = if sim_now_ns() >= self.deadline_ns {
                overcast_harness::ops::QUIET_OP
            } else {
                0
            };
            Some(overcast_harness::ops::call_number(&what, key, nth) | quiet)
        };
        let skipped = number.is_some_and(|n| overcast_harness::ops::skipped_call(&self.name, n));
        if skipped {
            // The end-of-run checks wait for the hosts to settle after it.
            self.rec.event(
                self.name.clone(),
                self.clock.now_ms(),
                FeedEvent::LeftOut {
                    what: what.to_string(),
                },
            );
        }
        if let (Some(from), false) = (from, skipped) {
            overcast_harness::ops::name_socket(&self.name, from.port(), number);
        }
        skipped
    }
}

/// The answer of a write for the history (`None`: unknown outcome).
fn write_result<T>(r: &overcast_model::client::CallResult<T>) -> Option<FeedResult> {
    match r.outcome {
        FinalOutcome::Response { status } => Some(FeedResult { status }),
        // The workload never cancels a call: a cancelled one would be unknown too.
        FinalOutcome::Unknown { .. } | FinalOutcome::Cancelled { .. } => None,
    }
}

/// The recording delegate: throws with some probability and is sometimes
/// slow, but only before `calm_after_ns` (so that the quiet phase can redeliver).
pub struct RecordingDelegate {
    /// Its draws.
    pub rng: Stream,
    /// Share of calls that throw.
    pub fail: f64,
    /// Share of calls that run `slow_ms`.
    pub slow: f64,
    /// A slow call's duration, ms.
    pub slow_ms: u64,
    /// A normal call's duration, ms range.
    pub run_ms: (u64, u64),
    /// No failures or slow calls after this simulated time.
    pub calm_after_ns: u64,
}

impl Delegate for RecordingDelegate {
    fn plan(&mut self, _lease: u32, _items: &[FeedItem]) -> DelegatePlan {
        let (lo, hi) = self.run_ms;
        let mut run_ms = self.rng.gen_range(lo..=hi.max(lo));
        let rough = sim_now_ns() < self.calm_after_ns;
        let fail_draw: f64 = self.rng.gen();
        let slow_draw: f64 = self.rng.gen();
        if rough && slow_draw < self.slow {
            run_ms = self.slow_ms;
        }
        DelegatePlan {
            run_ms,
            ok: !(rough && fail_draw < self.fail),
        }
    }
}

/// Partition key `k` of the monitored container.
pub fn pk(k: usize) -> String {
    format!("k{k}")
}

/// One write a writer drew, before it is sent: the history's name for it
/// and the request.
enum Write {
    /// A transactional batch of upserts.
    Batch(Vec<ItemOp>),
    /// An upsert of a tombstone body (`deleted`, `ttl`).
    SoftDelete { id: String, body: String },
    /// A hard delete.
    Delete { id: String },
    /// A create (0), replace (1) or upsert (2) of one item.
    Item { id: String, what: usize },
}

impl Write {
    /// What the history records for it.
    fn call(&self, key: &str) -> FeedCall {
        let (kind, ids) = match self {
            Write::Batch(ops) => (
                "batch",
                ops.iter()
                    .filter_map(|o| match o {
                        ItemOp::Upsert { id, .. } => Some(id.clone()),
                        _ => None,
                    })
                    .collect(),
            ),
            Write::SoftDelete { id, .. } => ("soft delete", vec![id.clone()]),
            Write::Delete { id } => ("delete", vec![id.clone()]),
            Write::Item { id, what } => (["create", "replace", "upsert"][*what], vec![id.clone()]),
        };
        FeedCall::Write {
            kind: kind.to_string(),
            partition_key: key.to_string(),
            ids,
        }
    }
}

/// One writer: random writes until `ops` or the deadline, each recorded as
/// an operation of client `index`. Each write is drawn whole before the
/// shrinker is asked whether to leave it out ([`overcast_harness::ops::skipped`],
/// node `writer-<index>`, numbered from 0), so the writes after a left-out
/// one are the same.
pub async fn writer(
    p: &FeedParams,
    index: usize,
    client: &mut StoreClient,
    rec: &FeedRecorder,
    mut rng: Stream,
    deadline_ns: u64,
) {
    let mut n = 0u64;
    for op in 0..p.writer_ops {
        let (lo, hi) = p.write_pause_ms;
        madsim::time::sleep(Duration::from_millis(rng.gen_range(lo..=hi.max(lo)))).await;
        if sim_now_ns() >= deadline_ns {
            return;
        }
        let key = pk(rng.gen_range(0..p.keys));
        let id = |rng: &mut Stream| format!("i{}", rng.gen_range(0..p.items_per_key));
        n += 1;
        let body = format!("{{\"w\":{index},\"n\":{n}}}");
        let draw: f64 = rng.gen();
        let write = if draw < p.batch_probability {
            let size = rng.gen_range(2..=4);
            Write::Batch(
                (0..size)
                    .map(|j| ItemOp::Upsert {
                        id: id(&mut rng),
                        body: format!("{{\"w\":{index},\"n\":{n},\"b\":{j}}}"),
                        if_match: None,
                    })
                    .collect(),
            )
        } else if draw < p.batch_probability + p.soft_delete_probability {
            Write::SoftDelete {
                body: format!("{{\"w\":{index},\"n\":{n},\"deleted\":true,\"ttl\":true}}"),
                id: id(&mut rng),
            }
        } else if draw < p.batch_probability + p.soft_delete_probability + 0.03 {
            Write::Delete { id: id(&mut rng) }
        } else {
            let id = id(&mut rng);
            Write::Item {
                id,
                what: rng.gen_range(0..3),
            }
        };
        // About its partition key (a batch's items share it); the hosts'
        // calls are about no one key, and stay.
        let node = overcast_sim::world::Topology::node_name(FeedRole::Writer, index);
        overcast_harness::ops::about(&node, op, &key);
        if overcast_harness::ops::skipped(&node, op).await {
            continue;
        }
        let call = write.call(&key);
        let mut c = CosmosContainer::new(client, ITEMS);
        let key2 = key.clone();
        match write {
            Write::Batch(ops) => {
                recorded(rec, index, key, call, c.batch(&key2, ops), write_result).await
            }
            Write::SoftDelete { id, body } => {
                let send = c.upsert(&key2, &id, &body, None);
                recorded(rec, index, key, call, send, write_result).await
            }
            Write::Delete { id } => {
                recorded(
                    rec,
                    index,
                    key,
                    call,
                    c.delete(&key2, &id, None),
                    write_result,
                )
                .await
            }
            Write::Item { id, what: 0 } => {
                recorded(
                    rec,
                    index,
                    key,
                    call,
                    c.create(&key2, &id, &body),
                    write_result,
                )
                .await
            }
            Write::Item { id, what: 1 } => {
                let send = c.replace(&key2, &id, &body, None);
                recorded(rec, index, key, call, send, write_result).await
            }
            Write::Item { id, .. } => {
                let send = c.upsert(&key2, &id, &body, None);
                recorded(rec, index, key, call, send, write_result).await
            }
        };
    }
}

/// The splitter: `splits` splits of random live ranges in the fault window,
/// and the TTL purge of both containers every second, until the end.
pub async fn splitter(
    p: &FeedParams,
    client: &mut StoreClient,
    rec: &FeedRecorder,
    name: &str,
    clock: &ClockAdapter,
    mut rng: Stream,
    deadline_ns: u64,
) {
    let mut at: Vec<u64> = (0..p.splits)
        .map(|_| rng.gen_range(deadline_ns / 10..deadline_ns * 8 / 10))
        .collect();
    at.sort_unstable();
    let ttl_s = p.ttl_s;
    let lock_ttl_s = ((30.0 * p.time_scale).ceil() as u64).max(1);
    loop {
        madsim::time::sleep(Duration::from_millis(1_000)).await;
        let now = sim_now_ns();
        if at.first().is_some_and(|t| *t <= now) {
            at.remove(0);
            let ranges = feed_call(
                client,
                FeedRequest::Ranges {
                    container: ITEMS.into(),
                },
            )
            .await;
            if let Some(r) = ranges.filter(|r| !r.ranges.is_empty()) {
                let range = r.ranges[rng.gen_range(0..r.ranges.len())].id;
                let req = FeedRequest::Split {
                    container: ITEMS.into(),
                    range,
                };
                let status = feed_call(client, req).await.map_or(0, |r| r.status);
                rec.event(name, clock.now_ms(), FeedEvent::Split { range, status });
            }
        }
        for (container, ttl) in [(ITEMS, ttl_s), (LEASES, lock_ttl_s)] {
            let purge = FeedRequest::PurgeExpired {
                container: container.into(),
                ttl_s: ttl,
            };
            feed_call(client, purge).await;
        }
    }
}

/// The pull-model reader: a composite continuation over every range from
/// the beginning; a 410 replaces a range by its children at the same token.
/// Each pull is numbered (from 0) for the shrinker ([`overcast_harness::ops::skipped`]).
pub async fn reader(
    p: &FeedParams,
    client: &mut StoreClient,
    rec: &FeedRecorder,
    name: &str,
    clock: &ClockAdapter,
) {
    let mut tokens: Vec<(FeedRange, u64)> = Vec::new();
    while tokens.is_empty() {
        let r = feed_call(
            client,
            FeedRequest::Ranges {
                container: ITEMS.into(),
            },
        )
        .await;
        tokens = r.map_or_else(Vec::new, |r| r.ranges.into_iter().map(|g| (g, 0)).collect());
        if tokens.is_empty() {
            madsim::time::sleep(Duration::from_millis(500)).await;
        }
    }
    let mut i = 0usize;
    for pull in 0usize.. {
        let (range, from) = tokens[i % tokens.len()].clone();
        // A left-out pull reads nothing and keeps its range's token; the
        // reader goes on to the next range as it would have.
        if overcast_harness::ops::skipped(name, pull).await {
            i += 1;
            madsim::time::sleep(Duration::from_millis(p.reader_pause_ms)).await;
            continue;
        }
        let begin_ns = sim_now_ns();
        let req = FeedRequest::Read {
            container: ITEMS.into(),
            scope: FeedScope::Range(range.id),
            from: StartFrom::Continuation(from),
            page_size: p.max_items,
        };
        let call = FeedCall::Pull {
            range: range.id,
            from,
        };
        let wire = Request::Feed(req);
        let send = client.request(&wire);
        let answered = recorded(
            rec,
            p.writers,
            format!("range-{}", range.id),
            call,
            send,
            write_result,
        )
        .await;
        let r = answered.response.and_then(Response::into_feed);
        let (status, items, continuation) = match &r {
            Some(page) => (page.status, page.items.clone(), page.continuation),
            None => (0, Vec::new(), from),
        };
        rec.event(
            name,
            clock.now_ms(),
            FeedEvent::Pull {
                range: range.id,
                min: range.min,
                max: range.max,
                from,
                begin_ns,
                status,
                items,
                continuation,
            },
        );
        match r {
            Some(page) if page.status == 410 => {
                let at = i % tokens.len();
                tokens.remove(at);
                for child in page.ranges {
                    tokens.insert(at, (child, from));
                }
                continue;
            }
            Some(page) if page.status == 200 => {
                let at = i % tokens.len();
                tokens[at].1 = page.continuation;
            }
            _ => {}
        }
        i += 1;
        madsim::time::sleep(Duration::from_millis(p.reader_pause_ms)).await;
    }
}
