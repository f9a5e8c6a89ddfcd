//! The Cloud Search connector (SPEC §5.5–5.6): a full traversal with two
//! alternating queues and its checkpoint (current queue + pending
//! `deleteQueueItems`), an incremental traversal that pushes changes into the
//! current queue, and a pool of traverser workers that poll, fetch from the
//! repository and index, delete, push NOT_MODIFIED or push REPOSITORY_ERROR.
//! Checkpoints (`checkpoint_full`, `checkpoint_incremental`,
//! `checkpoint_queue`) live on the connector node's own disk, so a restarted
//! connector resumes from them.
//!
//! The repository is handed in ([`Repository`]); its faults (I/O errors,
//! fetches that hang past the traverser timeout) are drawn from the random
//! stream the connector is handed. Versions are the connector's clock in
//! decimal ms at the fetch (13 digits, SPEC §5.1) followed by the
//! repository's change sequence, so a later fetch on one clock carries a
//! greater version. What the connector does is reported to a
//! [`ConnectorObserver`].
//!
//! Versions from clocks skew: a connector whose clock is behind another's
//! sends versions the service refuses as stale (400 FAILED_PRECONDITION,
//! Q6) even for a newer document. The refusal does not say which version is
//! indexed, so it is never taken as "a newer one is indexed already": the
//! full traversal waits (doubling from `pollQueueIntervalSecs`), fetches the
//! document again and indexes what it gets with a fresh version, up to
//! [`STALE_RETRIES`] times before it aborts; a worker pushes REQUEUE (the
//! item is still reserved: a refused call changes nothing), so a later poll
//! fetches the item again with a later clock reading. Either way what is
//! indexed is the repository's document as read after the refusal, never
//! older than the refused one.
//!
//! Known SDK behaviours kept as in the SDK: a postponed traversal returns
//! and waits for the next scheduled run; a failed `deleteQueueItems` leaves
//! the checkpoint unchanged; `exceptionHandler = 0` (the first failure aborts
//! the traversal before its delete); a timed-out fetch leaves the item
//! reserved until the reservation ends; workers never call `unreserve`.
//! Not modelled: a `getOperation` that fails is treated as "not done" (the
//! SDK proceeds with the switch; SPEC Q8 leaves that off by default), and the
//! incremental traversal never overlaps the full one (one task runs both).

use crate::core::bugs::ModelBugs;
use crate::core::env::sim_now_ns;
use crate::core::env::{Clock, LogDevice};
use crate::partition::{Request, Response};
use crate::sdk::checkpoint_log::{Checkpoints, LogEnd};
use crate::sdk::client::{CallResult, ClientConfig, StoreClient};
use crate::sdk::retry::FinalOutcome;
use crate::services::queue::{
    Hashes, ItemStatus, PushItem, PushType, QueueConfig, QueueRequest, QueueResponse,
};
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

/// A document of the repository.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Doc {
    /// Its id (the item name).
    pub id: String,
    /// Its revision (1, 2, ... per document).
    pub rev: u64,
    /// Its content.
    pub content: String,
}

/// The repository a connector traverses (shared with whoever changes it).
pub trait Repository {
    /// The ids after `after` (all when `None`), sorted, at most `limit`.
    fn ids_after(&self, after: Option<&str>, limit: usize) -> Vec<String>;
    /// The document `id` (`None`: not in the repository) and the repository's
    /// change sequence at the read.
    fn get(&self, id: &str) -> (Option<Doc>, u64);
    /// The ids changed (added, changed, removed) after change `seq`, and the
    /// current change sequence.
    fn changes_since(&self, seq: u64) -> (Vec<String>, u64);
}

/// What the connector reports besides its calls.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ConnectorEvent {
    /// A (re)started connector read its checkpoints.
    Started {
        /// `checkpoint_queue`: the current queue.
        current: String,
        /// `checkpoint_queue`: the pending operation.
        pending: Option<String>,
        /// `checkpoint_full`: the last id of the last batch indexed.
        full: Option<String>,
        /// `checkpoint_incremental`: the change sequence handled.
        incremental: u64,
    },
    /// A (re)started connector found a record of its checkpoint log
    /// damaged (its CRC wrong on every read, or it does not decode) and cut
    /// the log before it: the checkpoints saved in and after it are lost.
    /// It then saves `checkpoint_full` empty, so its full traversal starts
    /// over.
    CheckpointsCorrupt {
        /// Bytes of whole records kept before the damaged one.
        kept: u64,
        /// Bytes cut off, from the damaged record to the end of the log.
        cut: u64,
    },
    /// A checkpoint was saved durably (after its sync).
    CheckpointSaved {
        /// `checkpoint_full`, `checkpoint_incremental` or `checkpoint_queue`.
        name: String,
        /// The saved value.
        value: String,
    },
    /// A full traversal found its pending `deleteQueueItems` not done (or
    /// could not learn it) and returned.
    FullPostponed {
        /// The pending operation.
        operation: String,
    },
    /// A full traversal begins (or resumes) its index phase.
    FullIndexing {
        /// The queue it indexes into.
        queue: String,
        /// The `checkpoint_full` it resumes after (`None`: from the start).
        resume_after: Option<String>,
    },
    /// A full traversal stopped before its end (a failure; `exceptionHandler = 0`).
    FullAborted {
        /// Why.
        why: String,
    },
    /// A full traversal indexed everything and asked to delete the other queue.
    FullDone {
        /// The queue it indexed into.
        queue: String,
        /// The queue it asked to delete.
        deleted: String,
        /// The operation (`None`: the request failed).
        operation: Option<String>,
        /// The operation was done at once.
        done: bool,
    },
    /// The final pass after the deadline ended.
    Final {
        /// It completed its traversals and its last delete is done.
        complete: bool,
    },
}

/// Which part of the connector made a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Setup (datasource creation).
    Setup,
    /// The full traversal.
    Full,
    /// The incremental traversal.
    Incremental,
    /// A traverser worker.
    Worker,
}

/// Where the connector reports its calls and events.
pub trait ConnectorObserver {
    /// A call is about to be sent from `from` (the address of the task's
    /// own SDK client: the traversal and each worker have one, and a call's
    /// requests are sent from there); the token identifies it in
    /// [`ConnectorObserver::end`]. When the call was asked about
    /// ([`ConnectorObserver::skipped`]), that was just before, with no
    /// other task's call between.
    fn begin(&self, req: &QueueRequest, source: Source, from: Option<SocketAddr>) -> u64;
    /// The call ended.
    fn end(&self, token: u64, result: &CallResult<QueueResponse>);
    /// Something the connector did.
    fn event(&self, event: ConnectorEvent);
    /// Whether to leave this call out (a test harness shrinking a failure
    /// to its operations): asked only for the traversals' and workers' calls
    /// before the deadline, never for setup or the final pass. A call left
    /// out is not sent, not reported, and ends at once with an unknown
    /// outcome, as if it had been lost on its way. Default: never.
    fn skipped(&self, _req: &QueueRequest, _source: Source) -> bool {
        false
    }
}

/// A connector's settings (schedules already scaled).
#[derive(Clone, Debug)]
pub struct ConnectorConfig {
    /// The datasource.
    pub datasource: String,
    /// Its settings, for creating it.
    pub service: QueueConfig,
    /// `traverse.queueTag`.
    pub queue_tag: String,
    /// Runs the full and incremental traversals (otherwise workers only).
    pub traverse: bool,
    /// Traverser workers.
    pub workers: usize,
    /// `traverser.pollRequest.limit` (0: the service default).
    pub poll_limit: u32,
    /// `schedule.pollQueueIntervalSecs`, ms.
    pub poll_interval_ms: u64,
    /// `schedule.traversalIntervalSecs`, ms.
    pub full_interval_ms: u64,
    /// `schedule.incrementalTraversalIntervalSecs`, ms.
    pub incremental_interval_ms: u64,
    /// `traverse.partitionSize`: documents per checkpointed batch.
    pub partition_size: usize,
    /// How long a fetch takes, ms range.
    pub fetch_ms: (u64, u64),
    /// `traverser.timeout`, ms: a fetch that hangs is given up after it.
    pub fetch_timeout_ms: u64,
    /// Share of fetches that fail with an I/O error.
    pub fetch_error_probability: f64,
    /// Share of fetches that hang past the timeout.
    pub fetch_hang_probability: f64,
    /// Share of polled items a worker hands back with REQUEUE.
    pub requeue_probability: f64,
    /// Share of incremental pushes first sent malformed (type and hash).
    pub malformed_push_probability: f64,
    /// Simulated time after which no new work starts.
    pub deadline: Duration,
    /// After the deadline, how long to wait for in-flight work before the final pass.
    pub drain: Duration,
    /// Full traversals the final pass completes.
    pub final_traversals: usize,
    /// The seeded bugs (`delete_current_queue`, `traverse_without_waiting`,
    /// `checkpoint_before_push`, `stale_refusal_taken_as_done`).
    pub bugs: ModelBugs,
}

impl ConnectorConfig {
    /// `FullTraversal||A: tag` or `…B…`.
    pub fn queue(&self, b: bool) -> String {
        format!(
            "FullTraversal||{}: {}",
            if b { "B" } else { "A" },
            self.queue_tag
        )
    }

    /// The other one of the two queues.
    pub fn other(&self, q: &str) -> String {
        if q == self.queue(false) {
            self.queue(true)
        } else {
            self.queue(false)
        }
    }
}

/// How often a connector that found its checkpoint log damaged tries to
/// save `checkpoint_full` empty (a failed sync leaves the log as it was).
const CHECKPOINT_RESET_TRIES: usize = 8;

/// `checkpoint_full`.
pub const CHECKPOINT_FULL: &str = "checkpoint_full";
/// `checkpoint_incremental`.
pub const CHECKPOINT_INCREMENTAL: &str = "checkpoint_incremental";
/// `checkpoint_queue`.
pub const CHECKPOINT_QUEUE: &str = "checkpoint_queue";

/// The content hash the connector sends and stores.
pub(crate) fn content_hash(content: &str) -> String {
    format!("{:08x}", crc32fast::hash(content.as_bytes()))
}

/// What one fetch from the repository gave.
enum Fetched {
    /// The document (`None`: gone) and its version.
    Doc(Option<Doc>, String),
    /// An I/O error (a `RepositoryException`).
    IoError,
    /// It hung past the traverser timeout.
    TimedOut,
}

/// Makes a task's random stream from its name.
pub(crate) type RngFactory = Rc<dyn Fn(&str) -> Box<dyn RngCore + Send>>;

/// Everything a connector's tasks share.
pub struct Connector {
    cfg: ConnectorConfig,
    client: ClientConfig,
    obs: Rc<dyn ConnectorObserver>,
    repo: Rc<dyn Repository>,
    clock: Rc<dyn Clock>,
}

/// The outcome of one full traversal attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Traversal {
    Postponed,
    Aborted,
    Done,
}

/// How many times the full traversal indexes a document again after the
/// service refused its version as stale, before it aborts. The waits double
/// from `pollQueueIntervalSecs`: 6 retries at 300 ms wait 18.9 s in all,
/// more than connector clocks skew apart in the scenario's default mix; a
/// traversal that runs out of retries aborts before its delete, which loses
/// nothing (the next run indexes the document again).
pub const STALE_RETRIES: u32 = 6;

/// The service refused the call's version as stale (SPEC §5.1, Q6).
fn refused_as_stale(r: &CallResult<QueueResponse>) -> bool {
    ok(r) == Some(400)
        && r.response
            .as_ref()
            .is_some_and(|resp| resp.error.as_deref() == Some("FAILED_PRECONDITION"))
}

fn ok<R>(r: &CallResult<R>) -> Option<u16> {
    match r.outcome {
        FinalOutcome::Response { status } => Some(status),
        // The connector never cancels a call: a cancelled one would be unknown too.
        FinalOutcome::Unknown { .. } | FinalOutcome::Cancelled { .. } => None,
    }
}

async fn sleep_ms(ms: u64) {
    madsim::time::sleep(Duration::from_millis(ms.max(1))).await;
}

impl Connector {
    /// A connector over `repo`, reporting to `obs`, versions from `clock`.
    pub fn new(
        cfg: ConnectorConfig,
        client: ClientConfig,
        obs: Rc<dyn ConnectorObserver>,
        repo: Rc<dyn Repository>,
        clock: Rc<dyn Clock>,
    ) -> Rc<Connector> {
        Rc::new(Connector {
            cfg,
            client,
            obs,
            repo,
            clock,
        })
    }

    fn past_deadline(&self) -> bool {
        sim_now_ns() >= self.cfg.deadline.as_nanos() as u64
    }

    async fn call(
        &self,
        client: &mut StoreClient,
        req: QueueRequest,
        source: Source,
    ) -> CallResult<QueueResponse> {
        if source != Source::Setup && !self.past_deadline() && self.obs.skipped(&req, source) {
            return CallResult::never_sent();
        }
        let token = self.obs.begin(&req, source, client.local_addr());
        let r = client
            .request(&Request::Queue(req))
            .await
            .map_response(Response::into_queue);
        self.obs.end(token, &r);
        r
    }

    async fn fetch(&self, rng: &mut dyn RngCore, id: &str) -> Fetched {
        let c = &self.cfg;
        let draw: f64 = rng.gen();
        if draw < c.fetch_hang_probability {
            sleep_ms(c.fetch_timeout_ms).await;
            return Fetched::TimedOut;
        }
        // The document is read, and its version taken, when the fetch starts;
        // handing it over takes the fetch's time, so a slow fetch can carry
        // an older document than a later, quicker one (the service refuses
        // its index as stale).
        let (doc, seq) = self.repo.get(id);
        let version = format!("{:013}.{seq:010}", self.clock.now_ms());
        sleep_ms(rng.gen_range(c.fetch_ms.0..=c.fetch_ms.1.max(c.fetch_ms.0))).await;
        if draw < c.fetch_hang_probability + c.fetch_error_probability {
            return Fetched::IoError;
        }
        Fetched::Doc(doc, version)
    }

    /// Runs the connector until its work is done: `checkpoints` on its disk,
    /// `rng` makes every task's random stream (by name).
    pub async fn run(self: Rc<Self>, checkpoints: Rc<dyn LogDevice>, rng: RngFactory) {
        let mut tasks = Vec::new();
        for w in 0..self.cfg.workers {
            let me = self.clone();
            let rng = rng.clone();
            tasks.push(madsim::task::spawn_local(async move {
                me.worker(w, rng).await;
            }));
        }
        if self.cfg.traverse {
            let me = self.clone();
            tasks.push(madsim::task::spawn_local(async move {
                me.traverser(checkpoints, rng).await;
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    }

    async fn connect(&self, rng: &RngFactory, tag: &str) -> Option<StoreClient> {
        StoreClient::connect(self.client.clone(), rng(&format!("{tag}-sdk")))
            .await
            .ok()
    }

    async fn traverser(self: Rc<Self>, dev: Rc<dyn LogDevice>, rng: RngFactory) {
        let Some(mut client) = self.connect(&rng, "traverser").await else {
            return;
        };
        let mut draw = rng("traverser");
        let create = QueueRequest::CreateDatasource {
            datasource: self.cfg.datasource.clone(),
            config: self.cfg.service.clone(),
        };
        while ok(&self.call(&mut client, create.clone(), Source::Setup).await) != Some(200) {
            sleep_ms(self.cfg.poll_interval_ms).await;
        }
        let (mut ck, end) = Checkpoints::load(dev);
        if let LogEnd::Corrupt { kept, cut } = end {
            // Checkpoints saved in and after the damaged record are lost, and
            // the surviving `checkpoint_full` may be one of a traversal that
            // ended since: the full traversal starts over (skipping nothing),
            // and says so before it does.
            self.obs
                .event(ConnectorEvent::CheckpointsCorrupt { kept, cut });
            for _ in 0..CHECKPOINT_RESET_TRIES {
                if self.save(&mut ck, CHECKPOINT_FULL, "") {
                    break;
                }
            }
        }
        let (current, pending) = queue_checkpoint(&self.cfg, ck.get(CHECKPOINT_QUEUE));
        self.obs.event(ConnectorEvent::Started {
            current,
            pending,
            full: ck
                .get(CHECKPOINT_FULL)
                .filter(|v| !v.is_empty())
                .map(str::to_string),
            incremental: ck
                .get(CHECKPOINT_INCREMENTAL)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
        });
        let now_ms = || sim_now_ns() / 1_000_000;
        // performTraversalOnStart.
        let mut next_full = now_ms();
        let mut next_incremental = now_ms() + self.cfg.incremental_interval_ms;
        while !self.past_deadline() {
            let next = next_full.min(next_incremental);
            if next > now_ms() {
                sleep_ms(next - now_ms()).await;
                continue;
            }
            if next_full <= now_ms() {
                self.full(&mut client, &mut ck, &mut *draw).await;
                next_full = now_ms() + self.cfg.full_interval_ms;
            } else {
                self.incremental(&mut client, &mut ck, &mut *draw).await;
                next_incremental = now_ms() + self.cfg.incremental_interval_ms;
            }
        }
        // The final pass: after in-flight work drained, full traversals until
        // `final_traversals` completed, then their last delete done.
        madsim::time::sleep(self.cfg.drain).await;
        let mut completed = 0;
        for _ in 0..(20 * self.cfg.final_traversals.max(1)) {
            if completed >= self.cfg.final_traversals {
                break;
            }
            match self.full(&mut client, &mut ck, &mut *draw).await {
                Traversal::Done => completed += 1,
                Traversal::Postponed | Traversal::Aborted => {
                    sleep_ms(self.cfg.poll_interval_ms).await
                }
            }
        }
        let mut complete = completed >= self.cfg.final_traversals;
        if complete {
            complete = false;
            for _ in 0..200 {
                let (_, pending) = queue_checkpoint(&self.cfg, ck.get(CHECKPOINT_QUEUE));
                let Some(op) = pending else {
                    complete = true;
                    break;
                };
                if self.operation_done(&mut client, &op).await == Some(true) {
                    complete = true;
                    break;
                }
                sleep_ms(self.cfg.poll_interval_ms).await;
            }
        }
        self.obs.event(ConnectorEvent::Final { complete });
    }

    fn save(&self, ck: &mut Checkpoints, name: &str, value: &str) -> bool {
        let saved = ck.save(name, value);
        if saved {
            self.obs.event(ConnectorEvent::CheckpointSaved {
                name: name.into(),
                value: value.into(),
            });
        }
        saved
    }

    async fn operation_done(&self, client: &mut StoreClient, op: &str) -> Option<bool> {
        let get = QueueRequest::GetOperation {
            datasource: self.cfg.datasource.clone(),
            operation: op.to_string(),
        };
        let r = self.call(client, get, Source::Full).await;
        match (ok(&r), r.response) {
            (Some(200), Some(resp)) => resp.operation.map(|o| o.done),
            // Forgotten by a server that lost it: nothing is pending.
            (Some(404), _) => Some(true),
            _ => None,
        }
    }

    /// One full traversal (SPEC §5.5).
    async fn full(
        &self,
        client: &mut StoreClient,
        ck: &mut Checkpoints,
        rng: &mut dyn RngCore,
    ) -> Traversal {
        let cfg = &self.cfg;
        let (mut q, pending) = queue_checkpoint(cfg, ck.get(CHECKPOINT_QUEUE));
        if let Some(op) = pending {
            if !cfg.bugs.traverse_without_waiting
                && self.operation_done(client, &op).await != Some(true)
            {
                self.obs
                    .event(ConnectorEvent::FullPostponed { operation: op });
                return Traversal::Postponed;
            }
            q = cfg.other(&q);
            if !self.save(ck, CHECKPOINT_QUEUE, &q) {
                return Traversal::Aborted;
            }
        }
        let mut after = ck
            .get(CHECKPOINT_FULL)
            .filter(|v| !v.is_empty())
            .map(str::to_string);
        self.obs.event(ConnectorEvent::FullIndexing {
            queue: q.clone(),
            resume_after: after.clone(),
        });
        loop {
            let batch = self
                .repo
                .ids_after(after.as_deref(), cfg.partition_size.max(1));
            let Some(last) = batch.last().cloned() else {
                break;
            };
            if cfg.bugs.checkpoint_before_push && !self.save(ck, CHECKPOINT_FULL, &last) {
                return self.abort("checkpoint not saved");
            }
            for id in &batch {
                if let Err(why) = self.index_into(client, rng, id, &q).await {
                    return self.abort(&why);
                }
            }
            if !cfg.bugs.checkpoint_before_push && !self.save(ck, CHECKPOINT_FULL, &last) {
                return self.abort("checkpoint not saved");
            }
            after = Some(last);
        }
        if !self.save(ck, CHECKPOINT_FULL, "") {
            return self.abort("checkpoint not saved");
        }
        let deleted = if cfg.bugs.delete_current_queue {
            q.clone()
        } else {
            cfg.other(&q)
        };
        let dqi = QueueRequest::DeleteQueueItems {
            datasource: cfg.datasource.clone(),
            queue: Some(deleted.clone()),
        };
        let r = self.call(client, dqi, Source::Full).await;
        let op = match (ok(&r), r.response) {
            (Some(200), Some(resp)) => resp.operation,
            _ => None,
        };
        if let Some(op) = &op {
            let saved = if op.done {
                self.save(ck, CHECKPOINT_QUEUE, &cfg.other(&q))
            } else {
                self.save(ck, CHECKPOINT_QUEUE, &format!("{q}\n{}", op.name))
            };
            if !saved {
                return self.abort("checkpoint not saved");
            }
        }
        let outcome = if op.is_some() {
            Traversal::Done
        } else {
            // The SDK logs a failed delete and leaves the checkpoint; the
            // final pass does not count such a traversal.
            Traversal::Aborted
        };
        self.obs.event(ConnectorEvent::FullDone {
            queue: q,
            deleted,
            done: op.as_ref().is_some_and(|o| o.done),
            operation: op.map(|o| o.name),
        });
        outcome
    }

    /// Fetches `id` and indexes it into queue `q` (the full traversal's
    /// step); a document removed since the listing is skipped, as getAllDocs
    /// would not return it. A version refused as stale is retried with the
    /// document fetched again after a wait (see the module's doc); the error
    /// says why the traversal must abort.
    async fn index_into(
        &self,
        client: &mut StoreClient,
        rng: &mut dyn RngCore,
        id: &str,
        q: &str,
    ) -> Result<(), String> {
        let cfg = &self.cfg;
        let mut wait_ms = cfg.poll_interval_ms;
        for attempt in 0..=STALE_RETRIES {
            if attempt > 0 {
                sleep_ms(wait_ms).await;
                wait_ms = wait_ms.saturating_mul(2);
            }
            let (doc, version) = match self.fetch(rng, id).await {
                Fetched::Doc(doc, version) => (doc, version),
                Fetched::IoError => return Err(format!("{id}: I/O error")),
                Fetched::TimedOut => return Err(format!("{id}: timed out")),
            };
            let Some(doc) = doc else { return Ok(()) };
            let index = QueueRequest::Index {
                datasource: cfg.datasource.clone(),
                name: id.to_string(),
                version,
                queue: Some(q.to_string()),
                hashes: Hashes {
                    content: Some(content_hash(&doc.content)),
                    ..Hashes::default()
                },
                content: doc.content,
            };
            let r = self.call(client, index, Source::Full).await;
            match ok(&r) {
                Some(400) if !cfg.bugs.stale_refusal_taken_as_done && refused_as_stale(&r) => {}
                // Indexed; or (the seeded bug) a stale refusal taken as "a
                // newer version is indexed already".
                Some(200 | 400) => return Ok(()),
                _ => return Err(format!("{id}: index failed")),
            }
        }
        Err(format!(
            "{id}: version refused as stale {} times",
            STALE_RETRIES + 1
        ))
    }

    fn abort(&self, why: &str) -> Traversal {
        self.obs
            .event(ConnectorEvent::FullAborted { why: why.into() });
        Traversal::Aborted
    }

    /// One incremental traversal: every change since the checkpoint is pushed
    /// into the current queue (a hash push when the document is there, a
    /// MODIFIED push when it is gone), then the checkpoint moves.
    async fn incremental(
        &self,
        client: &mut StoreClient,
        ck: &mut Checkpoints,
        rng: &mut dyn RngCore,
    ) {
        let cfg = &self.cfg;
        let since = ck
            .get(CHECKPOINT_INCREMENTAL)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let (ids, seq) = self.repo.changes_since(since);
        let (q, _) = queue_checkpoint(cfg, ck.get(CHECKPOINT_QUEUE));
        for id in ids {
            let (doc, _) = self.repo.get(&id);
            let mut item = PushItem {
                name: id.clone(),
                queue: Some(q.clone()),
                payload: Some(format!("incremental {seq}")),
                ..PushItem::default()
            };
            match &doc {
                Some(d) => item.hashes.content = Some(content_hash(&d.content)),
                None => item.r#type = PushType::Modified,
            }
            if rng.gen_bool(cfg.malformed_push_probability.clamp(0.0, 1.0)) {
                // A probe of the argument check: type and hash together → 400.
                let mut bad = item.clone();
                bad.r#type = PushType::Modified;
                bad.hashes.content = Some(content_hash(&id));
                let push = QueueRequest::Push {
                    datasource: cfg.datasource.clone(),
                    item: bad,
                };
                self.call(client, push, Source::Incremental).await;
            }
            let push = QueueRequest::Push {
                datasource: cfg.datasource.clone(),
                item,
            };
            if ok(&self.call(client, push, Source::Incremental).await) != Some(200) {
                return;
            }
        }
        self.save(ck, CHECKPOINT_INCREMENTAL, &seq.to_string());
    }

    /// A traverser worker: polls both queues in turn and processes what it gets.
    async fn worker(self: Rc<Self>, w: usize, rng: RngFactory) {
        let tag = format!("worker{w}");
        let Some(mut client) = self.connect(&rng, &tag).await else {
            return;
        };
        let mut draw = rng(&tag);
        let cfg = &self.cfg;
        let mut turn = w % 2 == 1;
        // Workers start after the traverser has had time to create the datasource.
        sleep_ms(cfg.poll_interval_ms + draw.gen_range(0..=cfg.poll_interval_ms)).await;
        while !self.past_deadline() {
            turn = !turn;
            let poll = QueueRequest::Poll {
                datasource: cfg.datasource.clone(),
                queue: Some(cfg.queue(turn)),
                statuses: Vec::new(),
                limit: Some(cfg.poll_limit),
            };
            let r = self.call(&mut client, poll, Source::Worker).await;
            let items = match (ok(&r), r.response) {
                (Some(200), Some(resp)) => resp.items,
                _ => Vec::new(),
            };
            if items.is_empty() {
                sleep_ms(cfg.poll_interval_ms).await;
                continue;
            }
            for item in items {
                self.process(&mut client, &mut *draw, item).await;
            }
        }
    }

    async fn process(
        &self,
        client: &mut StoreClient,
        rng: &mut dyn RngCore,
        item: crate::services::queue::PolledItem,
    ) {
        let cfg = &self.cfg;
        let push = |t: PushType, error: Option<String>| QueueRequest::Push {
            datasource: cfg.datasource.clone(),
            item: PushItem {
                name: item.name.clone(),
                r#type: t,
                payload: Some(item.payload.clone()),
                queue: Some(item.queue.clone()),
                repository_error: error,
                ..PushItem::default()
            },
        };
        if rng.gen_bool(cfg.requeue_probability.clamp(0.0, 1.0)) {
            self.call(client, push(PushType::Requeue, None), Source::Worker)
                .await;
            return;
        }
        let (doc, version) = match self.fetch(rng, &item.name).await {
            Fetched::Doc(doc, version) => (doc, version),
            Fetched::IoError => {
                let p = push(PushType::RepositoryError, Some("I/O error".into()));
                self.call(client, p, Source::Worker).await;
                return;
            }
            // Only logged: the item stays reserved until its reservation ends.
            Fetched::TimedOut => return,
        };
        let req = match doc {
            None => QueueRequest::Delete {
                datasource: cfg.datasource.clone(),
                name: item.name.clone(),
                version,
            },
            Some(d)
                if item.status == ItemStatus::Accepted
                    && item.hashes.content.as_deref() == Some(&content_hash(&d.content)) =>
            {
                push(PushType::NotModified, None)
            }
            Some(d) => QueueRequest::Index {
                datasource: cfg.datasource.clone(),
                name: item.name.clone(),
                version,
                queue: Some(item.queue.clone()),
                hashes: Hashes {
                    content: Some(content_hash(&d.content)),
                    ..Hashes::default()
                },
                content: d.content,
            },
        };
        let is_index = matches!(req, QueueRequest::Index { .. });
        let versioned = is_index || matches!(req, QueueRequest::Delete { .. });
        let r = self.call(client, req, Source::Worker).await;
        if versioned && refused_as_stale(&r) && !cfg.bugs.stale_refusal_taken_as_done {
            // Still reserved (a refused call changes nothing): a later poll
            // fetches it again, with a later clock reading.
            self.call(client, push(PushType::Requeue, None), Source::Worker)
                .await;
            return;
        }
        // RepositoryDoc.execute: an index error other than 400/404 → REPOSITORY_ERROR.
        if is_index && matches!(ok(&r), Some(s) if s >= 500) {
            let p = push(
                PushType::RepositoryError,
                Some(format!("index {:?}", ok(&r))),
            );
            self.call(client, p, Source::Worker).await;
        }
    }
}

/// `checkpoint_queue` read: the current queue (`queue(false)` at first) and
/// the pending operation.
pub(crate) fn queue_checkpoint(
    cfg: &ConnectorConfig,
    value: Option<&str>,
) -> (String, Option<String>) {
    match value {
        None | Some("") => (cfg.queue(false), None),
        Some(v) => match v.split_once('\n') {
            Some((q, op)) => (q.to_string(), Some(op.to_string())),
            None => (v.to_string(), None),
        },
    }
}
