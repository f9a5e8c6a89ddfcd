//! The script runner: one fresh deployment per script on its own madsim
//! runtime, through the real path (SDK → wire → server → write-ahead log on a
//! simulated disk). Three nodes: the server; a relay that forwards requests
//! and replies between client and server unchanged (and loses one reply when
//! a `drop_next_reply` step asks); the scripted client, which runs the steps
//! in order and can crash and restart the server. No faults unless a step asks.
//!
//! The server's clock is [`ScriptClock`]: simulated time plus an offset that
//! `advance` steps move, starting at the simulation epoch
//! (Thu, 01 Jan 2026 00:00:00 GMT). Simulated time also passes while requests
//! travel (1 ms a hop) and the log syncs (1 ms), so dates should be pinned by
//! captures and whole-second offsets, not by milliseconds.

use super::format::{
    etag_tokens, parse_lease_duration, Captured, Compare, ConditionHeaders, DateExpr, Expect,
    FeedRead, Field, ItemExpect, LeaseDurationExpect, LeaseOp, QueueHashes, RangeRef, Script,
    SearchOp, Step, Text,
};
use super::time::{format_rfc1123, parse_duration};
use crate::kit::bridge::{DiskAdapter, ServerStreams};
use madsim::net::Endpoint;
use madsim::runtime::{Handle, Runtime};
use madsim::time::sleep;
use overcast_model::bugs::ModelBugs;
use overcast_model::client::{ClientConfig, StoreClient};
use overcast_model::conditions::{Conditions, ETag, EtagMatch, Millis};
use overcast_model::cosmos::{CosmosRequest, ItemOp};
use overcast_model::env::Clock;
use overcast_model::feed::{FeedRange, FeedRequest, FeedScope, StartFrom};
use overcast_model::lease::{
    self, LeaseAction, LeaseRequest, LeaseResponse, LeaseState, LeaseTarget,
};
use overcast_model::partition::{Request, Response};
use overcast_model::queue::{
    Hashes, ItemStatus, OperationView, PushItem, QueueConfig, QueueRequest,
};
use overcast_model::retry::{FinalOutcome, RetryOptions};
use overcast_model::search::{ResourceKind, SearchRequest};
use overcast_model::search_client::{Definition, SearchClient};
use overcast_model::server::{serve, FaultRates, ServerConfig, ServerStats};
use overcast_model::store::{ItemKey, StoreRequest};
use overcast_model::wire::{MAX_DATAGRAM, REQUEST_TAG, RESPONSE_TAG};
use overcast_sim::clock::EPOCH_MS;
use overcast_sim::disk::SimDisk;
use overcast_sim::rng::stream;
use overcast_sim::world::{Role, Topology};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A clock the script moves: simulated time since the start, plus the
/// simulation epoch, plus an offset that `advance` steps add to.
#[derive(Clone, Debug, Default)]
pub struct ScriptClock {
    offset_ms: Arc<AtomicI64>,
}

impl ScriptClock {
    /// Moves the clock forward by `ms`.
    pub fn advance(&self, ms: i64) {
        self.offset_ms.fetch_add(ms, Ordering::Relaxed);
    }
}

impl Clock for ScriptClock {
    fn now_ms(&self) -> Millis {
        let elapsed = madsim::time::TimeHandle::try_current()
            .map(|t| t.elapsed().as_millis() as i64)
            .unwrap_or(0);
        (EPOCH_MS as i64 + elapsed + self.offset_ms.load(Ordering::Relaxed)).max(0) as Millis
    }
}

/// The first step whose answer differs from the expectation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// The step, 1-based.
    pub step: usize,
    /// The request as sent (captured names replaced by their values).
    pub request: String,
    /// What the script expected.
    pub expected: String,
    /// What came back.
    pub got: String,
    /// Which part of the expectation failed.
    pub why: String,
}

/// How a script ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum ScriptOutcome {
    /// Every step answered as expected.
    Passed {
        /// Steps run.
        steps: usize,
        /// Times the server was restarted (by `crash_server` steps).
        restarts: u32,
        /// Log records the server replayed over all its restarts.
        replayed: u64,
    },
    /// A step's answer differs; the steps after it did not run.
    Differs(Difference),
    /// The run itself failed (it never finished: a harness error).
    Error {
        /// What went wrong.
        message: String,
    },
}

impl ScriptOutcome {
    /// True for [`ScriptOutcome::Passed`].
    pub fn passed(&self) -> bool {
        matches!(self, ScriptOutcome::Passed { .. })
    }
}

/// The longest a script may run in simulated time (a hung run is an error).
const RUN_BOUND: Duration = Duration::from_secs(24 * 3600);

/// Runs a parsed script on a fresh deployment, deterministically for `seed`
/// (the seed only moves what the script does not pin: network latency within
/// its 1 ms bound and the SDK's jitter).
pub fn run_script(script: &Script, seed: u64) -> ScriptOutcome {
    let mut config = madsim::Config::default();
    config.net.packet_loss_rate = 0.0;
    config.net.send_latency = Duration::from_millis(1)..Duration::from_millis(2);
    let rt = Runtime::with_seed_and_config(seed, config);
    let topo = Topology::new(vec![
        Role::new("server", 1).with_disk(),
        Role::new("relay", 1),
        Role::new("client", 1),
    ]);
    let addr = |role: &str| topo.addr(role, 0).expect("role in the topology");
    let (server_addr, relay_addr, client_addr) = (addr("server"), addr("relay"), addr("client"));
    let mut bugs = ModelBugs::default();
    for b in &script.bugs {
        bugs.set(b);
    }
    let server_clock = ScriptClock::default();
    let disk = SimDisk::new();
    let drop_next = Arc::new(AtomicBool::new(false));
    let result: Arc<Mutex<Option<ScriptOutcome>>> = Arc::new(Mutex::new(None));
    let stats = Arc::new(Mutex::new(ServerStats::default()));
    let incarnations = Arc::new(AtomicU32::new(0));

    let server = {
        let cfg = ServerConfig {
            bind: server_addr,
            containers: script.containers.clone(),
            feed_ranges: overcast_model::feed::INITIAL_RANGES,
            faults: FaultRates::default(),
            fsync_ms: (1, 1),
            bugs,
            send: Default::default(),
            quiet_after_restart: Duration::ZERO,
        };
        let clock = server_clock.clone();
        let disk = disk.clone();
        let incarnations = incarnations.clone();
        let stats = stats.clone();
        rt.create_node()
            .name("server-0")
            .ip(server_addr.ip())
            .init(move || {
                let n = incarnations.fetch_add(1, Ordering::Relaxed);
                serve(
                    cfg.clone(),
                    Arc::new(clock.clone()),
                    Arc::new(DiskAdapter(disk.clone())),
                    ServerStreams::new(seed, format!("script-server-{n}"), None),
                    stats.clone(),
                )
            })
            .build()
    };
    let relay = {
        let drop_next = drop_next.clone();
        rt.create_node()
            .name("relay-0")
            .ip(relay_addr.ip())
            .init(move || relay_program(relay_addr, server_addr, drop_next.clone()))
            .build()
    };
    let server_id = server.id();
    let client = {
        let script = script.clone();
        let result = result.clone();
        let ctx = RunCtx {
            relay: relay_addr,
            server_clock: server_clock.clone(),
            client_clock: ScriptClock::default(),
            disk: disk.clone(),
            drop_next: drop_next.clone(),
            server_id,
            bugs,
            seed,
        };
        rt.create_node()
            .name("client-0")
            .ip(client_addr.ip())
            .init(move || {
                let script = script.clone();
                let result = result.clone();
                let ctx = ctx.clone();
                async move {
                    let outcome = run_steps(&script, &ctx).await;
                    *result.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
                }
            })
            .build()
    };
    let ids = [server_id, relay.id(), client.id()];
    let done = result.clone();
    rt.block_on(async move {
        let start = madsim::time::Instant::now();
        while done.lock().unwrap_or_else(|e| e.into_inner()).is_none()
            && start.elapsed() < RUN_BOUND
        {
            sleep(Duration::from_millis(100)).await;
        }
        let handle = Handle::current();
        for id in ids {
            handle.kill(id);
        }
    });
    drop(rt);
    let outcome = result.lock().unwrap_or_else(|e| e.into_inner()).take();
    let replayed = stats.lock().unwrap_or_else(|e| e.into_inner()).replayed;
    let restarts = incarnations.load(Ordering::Relaxed).saturating_sub(1);
    outcome
        .map(|o| match o {
            ScriptOutcome::Passed { steps, .. } => ScriptOutcome::Passed {
                steps,
                restarts,
                replayed,
            },
            other => other,
        })
        .unwrap_or_else(|| ScriptOutcome::Error {
            message: format!("the script did not finish within {RUN_BOUND:?} of simulated time"),
        })
}

/// Forwards requests to the server and replies to whoever sent the last
/// request, losing one reply when `drop_next` is set.
async fn relay_program(me: SocketAddr, server: SocketAddr, drop_next: Arc<AtomicBool>) {
    let Ok(ep) = Endpoint::bind(me).await else {
        tracing::error!("relay cannot bind {me}");
        return;
    };
    let ep = Arc::new(ep);
    let client: Arc<Mutex<Option<SocketAddr>>> = Arc::new(Mutex::new(None));
    let requests = {
        let ep = ep.clone();
        let client = client.clone();
        async move {
            let mut buf = vec![0u8; MAX_DATAGRAM];
            loop {
                let Ok((len, from)) = ep.recv_from(REQUEST_TAG, &mut buf).await else {
                    continue;
                };
                *client.lock().unwrap_or_else(|e| e.into_inner()) = Some(from);
                let _ = ep.send_to(server, REQUEST_TAG, &buf[..len]).await;
            }
        }
    };
    madsim::task::spawn(requests);
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let Ok((len, _)) = ep.recv_from(RESPONSE_TAG, &mut buf).await else {
            continue;
        };
        if drop_next.swap(false, Ordering::Relaxed) {
            tracing::info!("relay: reply dropped");
            continue;
        }
        let to = *client.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(to) = to {
            let _ = ep.send_to(to, RESPONSE_TAG, &buf[..len]).await;
        }
    }
}

/// What the scripted client needs besides the script.
#[derive(Clone)]
struct RunCtx {
    relay: SocketAddr,
    server_clock: ScriptClock,
    /// The client's own clock; no Blob call reads it (see [`super::format::Advance`]).
    client_clock: ScriptClock,
    disk: SimDisk,
    drop_next: Arc<AtomicBool>,
    server_id: madsim::task::NodeId,
    bugs: ModelBugs,
    seed: u64,
}

/// What the runner keeps between steps.
#[derive(Default)]
struct State {
    captured: BTreeMap<String, Captured>,
    /// Every ETag seen per resource (`container/blob`, `cosmos:...`,
    /// `search:...`), for `fresh`.
    seen: BTreeMap<String, BTreeSet<String>>,
    /// Every lease id seen per leased resource (answered or proposed), for `fresh`.
    seen_leases: BTreeMap<String, BTreeSet<String>>,
}

/// The resources a request step addresses, for `fresh`: its own, and one per
/// operation of a batch.
struct Target {
    resource: String,
    per_op: Vec<String>,
    /// The lease id a lease request proposes (normalised), seen from now on.
    proposed: Option<String>,
}

/// The answer fields a script can check, whatever service gave them.
#[derive(Default)]
struct Observed {
    status: u16,
    error_code: Option<String>,
    etag: Option<ETag>,
    last_modified: Option<Millis>,
    body: Option<String>,
    /// A lease service answer.
    lease: Option<LeaseResponse>,
    /// A Search resource: its kind and entries.
    entries: Option<(ResourceKind, BTreeSet<String>)>,
    /// A Cosmos batch's per-operation results.
    results: Option<Vec<Observed>>,
    /// A queue item's status after a push or an index.
    item_status: Option<ItemStatus>,
    /// A poll's items or a feed page's, in order.
    items: Option<Vec<ObservedItem>>,
    /// A long-running operation.
    operation: Option<OperationView>,
    /// A feed page's continuation (200 and 304).
    continuation: Option<u64>,
    /// A feed answer's sub-status.
    sub_status: Option<u32>,
    /// Feed ranges: the container's, a split's children, a 410's children.
    ranges: Option<Vec<FeedRange>>,
}

/// One item of a poll or a feed page, with the fields its service answers.
struct ObservedItem {
    /// The queue item's name, the feed item's `id`.
    id: String,
    /// Queue: the indexed version (bytes); feed: the item's version.
    version: String,
    status: Option<ItemStatus>,
    queue: Option<String>,
    payload: Option<String>,
    partition_key: Option<String>,
    body: Option<String>,
    /// Feed: `_lsn`.
    lsn: Option<u64>,
}

impl ObservedItem {
    fn describe(&self) -> String {
        let mut out = self.id.clone();
        let mut fields = Vec::new();
        if let Some(s) = self.status {
            fields.push(status_name(s).to_string());
        }
        if let Some(pk) = &self.partition_key {
            fields.push(format!("pk {pk:?}"));
        }
        fields.push(format!("version {:?}", self.version));
        if let Some(q) = &self.queue {
            fields.push(format!("queue {}", short(q)));
        }
        if let Some(p) = self.payload.as_ref().filter(|p| !p.is_empty()) {
            fields.push(format!("payload {}", short(p)));
        }
        if let Some(l) = self.lsn {
            fields.push(format!("lsn {l}"));
        }
        out += &format!(" ({})", fields.join(", "));
        out
    }
}

/// A queue item status as scripts write it.
fn status_name(s: ItemStatus) -> &'static str {
    match s {
        ItemStatus::Error => "ERROR",
        ItemStatus::Modified => "MODIFIED",
        ItemStatus::NewItem => "NEW_ITEM",
        ItemStatus::Accepted => "ACCEPTED",
    }
}

/// A text for a message: long ones (the argument limits) abbreviated.
fn short(s: &str) -> String {
    const MAX: usize = 40;
    if s.chars().count() <= MAX {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(8).collect();
        format!("{head:?}… ({} chars)", s.chars().count())
    }
}

impl Observed {
    /// The fields of `response` (answering a `kind` step) a script can check.
    fn of(status: u16, response: Option<&Response>, kind: &str) -> Observed {
        let mut o = Observed {
            status,
            ..Observed::default()
        };
        match response {
            None => {}
            Some(Response::Store(r)) => {
                o.error_code = r.error_code.clone();
                if let Some(item) = &r.item {
                    o.etag = Some(item.etag.clone());
                    o.last_modified = Some(item.last_modified);
                    o.body = item.body.clone();
                }
            }
            Some(Response::Lease(r)) => {
                o.error_code = r.error_code.clone();
                o.lease = Some(r.clone());
            }
            Some(Response::Cosmos(r)) => {
                let view =
                    |status: u16, item: Option<&overcast_model::cosmos::CosmosItemView>| Observed {
                        status,
                        etag: item.map(|i| i.etag.clone()),
                        body: item.and_then(|i| i.body.clone()),
                        ..Observed::default()
                    };
                if let Some(item) = r.item() {
                    o.etag = Some(item.etag.clone());
                    o.body = item.body.clone();
                }
                o.results = Some(
                    r.results
                        .iter()
                        .map(|x| view(x.status, x.item.as_ref()))
                        .collect(),
                );
            }
            Some(Response::Search(r)) => {
                if let Some(res) = &r.resource {
                    o.etag = Some(res.etag.clone());
                    o.entries = Some((res.kind, res.entries.clone()));
                }
            }
            Some(Response::Queue(r)) => {
                o.error_code = r.error.clone();
                o.item_status = r.item_status;
                o.operation = r.operation.clone();
                o.items = (kind == "queue_poll").then(|| {
                    r.items
                        .iter()
                        .map(|i| ObservedItem {
                            id: i.name.clone(),
                            version: i.version.clone(),
                            status: Some(i.status),
                            queue: Some(i.queue.clone()),
                            payload: Some(i.payload.clone()),
                            partition_key: None,
                            body: None,
                            lsn: None,
                        })
                        .collect()
                });
            }
            Some(Response::Feed(r)) => {
                // The change feed layer's own status: a split range's 410/1002
                // travels through the transport as a delivered answer
                // (`FeedResponse::transport_status`), and the pull iterator sees the 410.
                o.status = r.status;
                o.sub_status = Some(r.sub_status);
                if matches!(r.status, 200 | 304) {
                    o.continuation = Some(r.continuation);
                }
                o.ranges = Some(r.ranges.clone());
                o.items = (kind == "feed_read").then(|| {
                    r.items
                        .iter()
                        .map(|i| ObservedItem {
                            id: i.id.clone(),
                            version: i.version.to_string(),
                            status: None,
                            queue: None,
                            payload: None,
                            partition_key: Some(i.partition_key.clone()),
                            body: Some(i.body.clone()),
                            lsn: Some(i.lsn),
                        })
                        .collect()
                });
            }
        }
        o
    }

    fn describe(&self) -> String {
        let mut out = String::new();
        if let Some(code) = &self.error_code {
            out += &format!(" {code}");
        }
        if let Some(e) = &self.etag {
            out += &format!(", etag {e}");
        }
        if let Some(t) = self.last_modified {
            out += &format!(", last_modified {}", format_rfc1123(t));
        }
        if let Some(l) = &self.lease {
            if let Some(id) = &l.lease_id {
                out += &format!(", lease id {id}");
            }
            out += &format!(
                ", lease {} ({})",
                state_name(l.state),
                if l.state.is_locked() {
                    "locked"
                } else {
                    "unlocked"
                }
            );
            match l.duration {
                Some(lease::LeaseDuration::Infinite) => out += ", duration infinite",
                Some(lease::LeaseDuration::Fixed(s)) => out += &format!(", duration {s}s"),
                None => {}
            }
            if let Some(t) = l.lease_time_s {
                out += &format!(", lease time {t}s");
            }
        }
        if let Some((kind, entries)) = &self.entries {
            let list: Vec<&str> = entries.iter().map(String::as_str).collect();
            let what = match kind {
                ResourceKind::Index => "fields",
                ResourceKind::SynonymMap => "synonyms",
            };
            out += &format!(", {what} [{}]", list.join(", "));
        }
        if self.etag.is_some() || self.body.is_some() {
            match &self.body {
                Some(b) => out += &format!(", body {b:?}"),
                None if self.lease.is_none() && self.entries.is_none() => out += ", no body",
                None => {}
            }
        }
        if let Some(s) = self.item_status {
            out += &format!(", item {}", status_name(s));
        }
        if let Some(op) = &self.operation {
            out += &format!(
                ", operation {} ({})",
                op.name,
                if op.done { "done" } else { "not done" }
            );
        }
        if let Some(s) = self.sub_status.filter(|s| *s != 0) {
            out += &format!(", sub-status {s}");
        }
        if let Some(items) = &self.items {
            let each: Vec<String> = items.iter().map(ObservedItem::describe).collect();
            out += &format!(", items [{}]", each.join(", "));
        }
        if let Some(c) = self.continuation {
            out += &format!(", continuation {c}");
        }
        if let Some(ranges) = self.ranges.as_ref().filter(|r| !r.is_empty()) {
            let each: Vec<String> = ranges.iter().map(|r| format!("{} {r}", r.id)).collect();
            out += &format!(", ranges [{}]", each.join(", "));
        }
        if let Some(results) = &self.results {
            if results.len() > 1 || self.etag.is_none() {
                let each: Vec<String> = results
                    .iter()
                    .map(|r| format!("{}{}", r.status, r.describe()))
                    .collect();
                out += &format!(", results [{}]", each.join(" | "));
            }
        }
        out
    }
}

fn state_name(s: LeaseState) -> &'static str {
    match s {
        LeaseState::Available => "available",
        LeaseState::Leased => "leased",
        LeaseState::Expired => "expired",
        LeaseState::Breaking => "breaking",
        LeaseState::Broken => "broken",
    }
}

/// One answer as the script sees it.
struct Answer {
    outcome: FinalOutcome,
    attempts: usize,
    observed: Observed,
}

impl Answer {
    fn status(&self) -> u16 {
        match self.outcome {
            FinalOutcome::Response { status } | FinalOutcome::Unknown { status } => status,
        }
    }

    fn unknown(&self) -> bool {
        matches!(self.outcome, FinalOutcome::Unknown { .. })
    }

    fn describe(&self) -> String {
        let mut out = self.observed.status.to_string();
        if self.observed.status != self.status() {
            out += &format!(" (delivered as {})", self.status());
        }
        if self.unknown() {
            out += " (outcome unknown)";
        }
        out += &self.observed.describe();
        out += &format!(", {} attempt(s)", self.attempts);
        out
    }
}

async fn run_steps(script: &Script, ctx: &RunCtx) -> ScriptOutcome {
    let cfg = ClientConfig {
        servers: vec![ctx.relay],
        partitions: 1,
        retry: RetryOptions::default(),
        bugs: ctx.bugs,
        send: Default::default(),
    };
    let mut client =
        match StoreClient::connect(cfg, Box::new(stream(ctx.seed, "script-client"))).await {
            Ok(c) => c,
            Err(e) => {
                return ScriptOutcome::Error {
                    message: format!("the client could not bind: {e}"),
                }
            }
        };
    let mut state = State::default();
    for (i, step) in script.steps.iter().enumerate() {
        let n = i + 1;
        match step {
            Step::Advance(a) => {
                // Durations were validated with the script.
                if let Some(v) = &a.server {
                    ctx.server_clock.advance(parse_duration(v).unwrap_or(0));
                }
                if let Some(v) = &a.client {
                    ctx.client_clock.advance(parse_duration(v).unwrap_or(0));
                }
                continue;
            }
            Step::CrashServer(c) => {
                let handle = Handle::current();
                handle.kill(ctx.server_id);
                // A process crash: the OS keeps what was appended.
                ctx.disk
                    .crash(false, &mut stream(ctx.seed, &format!("script-crash-{n}")));
                let down = c
                    .down
                    .as_deref()
                    .map_or(0, |d| parse_duration(d).unwrap_or(0));
                if down > 0 {
                    sleep(Duration::from_millis(down as u64)).await;
                }
                handle.restart(ctx.server_id);
                // Let the restarted server replay its log and bind.
                sleep(Duration::from_millis(1)).await;
                continue;
            }
            Step::DropNextReply(_) => {
                ctx.drop_next.store(true, Ordering::Relaxed);
                continue;
            }
            _ => {}
        }
        let (request, target) = match build_request(step, &state, &mut client) {
            Ok(r) => r,
            Err(message) => {
                return ScriptOutcome::Error {
                    message: format!("step {n}: {message}"),
                }
            }
        };
        let described = describe_request(step, &request);
        let result = client.request(&request).await;
        let status = match result.outcome {
            FinalOutcome::Response { status } | FinalOutcome::Unknown { status } => status,
        };
        let answer = Answer {
            outcome: result.outcome,
            attempts: result.attempts.len(),
            observed: Observed::of(status, result.response.as_ref(), step.kind()),
        };
        let expect = step.expect().expect("a request step has an expectation");
        if let Err(why) = check(expect, &answer, &target, &mut state) {
            return ScriptOutcome::Differs(Difference {
                step: n,
                request: described,
                expected: describe_expect(expect),
                got: answer.describe(),
                why,
            });
        }
        remember(&answer.observed, &target, &mut state);
    }
    // The restart and replay counts are filled in by `run_script`.
    ScriptOutcome::Passed {
        steps: script.steps.len(),
        restarts: 0,
        replayed: 0,
    }
}

/// Records what an answer showed, for later `fresh` comparisons.
fn remember(o: &Observed, target: &Target, state: &mut State) {
    let mut seen = |resource: &str, etag: &Option<ETag>| {
        if let Some(e) = etag {
            state
                .seen
                .entry(resource.to_string())
                .or_default()
                .insert(e.unquoted().to_string());
        }
    };
    seen(&target.resource, &o.etag);
    // Operation names are "seen" like ETags, for `fresh`.
    if let Some(op) = &o.operation {
        seen(&target.resource, &Some(ETag(op.name.clone())));
    }
    if let Some(results) = &o.results {
        for (r, resource) in results.iter().zip(&target.per_op) {
            seen(resource, &r.etag);
        }
    }
    let ids = o
        .lease
        .as_ref()
        .and_then(|l| l.lease_id.clone())
        .into_iter()
        .chain(target.proposed.clone());
    for id in ids {
        state
            .seen_leases
            .entry(target.resource.clone())
            .or_default()
            .insert(id);
    }
}

/// The blob key of a request step: the blob is its own partition key.
fn key(container: &str, blob: &str) -> ItemKey {
    ItemKey::new(container, blob, blob)
}

fn target(resource: String) -> Target {
    Target {
        resource,
        per_op: Vec::new(),
        proposed: None,
    }
}

/// The request of a request step, and what it addresses.
fn build_request(
    step: &Step,
    state: &State,
    client: &mut StoreClient,
) -> Result<(Request, Target), String> {
    let blob = |c: &str, b: &str| format!("{c}/{b}");
    // `x-ms-lease-id` as sent.
    let lease_header =
        |id: &Option<String>| id.as_deref().map(|v| lease_value(v, state)).transpose();
    let with_lease = |conditions: Conditions, id: &Option<String>| -> Result<Conditions, String> {
        Ok(Conditions {
            lease_id: lease_header(id)?,
            ..conditions
        })
    };
    let cond = || step.conditions().map(|h| conditions(h, state)).transpose();
    Ok(match step {
        Step::CreateContainer(s) => (
            Request::Store(StoreRequest::CreateContainer {
                container: s.container.clone(),
            }),
            target(s.container.clone()),
        ),
        Step::PutBlob(s) => (
            Request::Store(StoreRequest::Put {
                key: key(&s.container, &s.blob),
                body: s.body.clone().unwrap_or_default(),
                conditions: with_lease(cond()?.unwrap_or_default(), &s.lease_id)?,
            }),
            target(blob(&s.container, &s.blob)),
        ),
        Step::GetBlob(s) => (
            Request::Store(StoreRequest::Read {
                key: key(&s.container, &s.blob),
                conditions: with_lease(cond()?.unwrap_or_default(), &s.lease_id)?,
            }),
            target(blob(&s.container, &s.blob)),
        ),
        Step::DeleteBlob(s) => (
            Request::Store(StoreRequest::Delete {
                key: key(&s.container, &s.blob),
                conditions: with_lease(cond()?.unwrap_or_default(), &s.lease_id)?,
            }),
            target(blob(&s.container, &s.blob)),
        ),
        Step::LeaseBlob(s) | Step::LeaseContainer(s) => {
            let (lease_target, resource) = match &s.blob {
                Some(b) => (
                    LeaseTarget::Blob(key(&s.container, b)),
                    format!("lease:{}", blob(&s.container, b)),
                ),
                None => (
                    LeaseTarget::Container(s.container.clone()),
                    format!("lease:{}", s.container),
                ),
            };
            let action = lease_action(s, state)?;
            let proposed = match &action {
                LeaseAction::Acquire { proposed_id, .. }
                | LeaseAction::Change { proposed_id, .. } => {
                    proposed_id.as_deref().and_then(lease::parse_guid)
                }
                _ => None,
            };
            (
                Request::Lease(LeaseRequest::Action {
                    target: lease_target,
                    action,
                    conditions: cond()?.unwrap_or_default(),
                }),
                Target {
                    resource,
                    per_op: Vec::new(),
                    proposed,
                },
            )
        }
        Step::DeleteContainer(s) => (
            Request::Lease(LeaseRequest::DeleteContainer {
                container: s.container.clone(),
                lease_id: lease_header(&s.lease_id)?,
            }),
            target(format!("lease:{}", s.container)),
        ),
        Step::SetContainerMetadata(s) => (
            Request::Lease(LeaseRequest::SetContainerMetadata {
                container: s.container.clone(),
                lease_id: lease_header(&s.lease_id)?,
            }),
            target(format!("lease:{}", s.container)),
        ),
        Step::CosmosCreate(s)
        | Step::CosmosRead(s)
        | Step::CosmosReplace(s)
        | Step::CosmosUpsert(s)
        | Step::CosmosDelete(s) => {
            let name = step.kind().trim_start_matches("cosmos_");
            let op = item_op(name, &s.id, &s.body, &s.if_match, &s.if_none_match, state)?;
            (
                Request::Cosmos(CosmosRequest::Item {
                    container: s.container.clone(),
                    partition_key: s.partition_key.clone(),
                    op,
                }),
                target(cosmos_resource(&s.container, &s.partition_key, &s.id)),
            )
        }
        Step::CosmosBatch(b) => {
            let ops = b
                .ops
                .iter()
                .map(|op| {
                    let (name, i) = op.parts();
                    item_op(name, &i.id, &i.body, &i.if_match, &i.if_none_match, state)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let per_op = b
                .ops
                .iter()
                .map(|op| cosmos_resource(&b.container, &b.partition_key, &op.parts().1.id))
                .collect();
            (
                Request::Cosmos(CosmosRequest::Batch {
                    container: b.container.clone(),
                    partition_key: b.partition_key.clone(),
                    ops,
                }),
                Target {
                    resource: format!("cosmos:{}/{}", b.container, b.partition_key),
                    per_op,
                    proposed: None,
                },
            )
        }
        Step::SearchGet(s) | Step::SearchPut(s) | Step::SearchDelete(s) => {
            let (request, name) = search_request(step.kind(), s, state, client)?;
            (Request::Search(request), target(format!("search:{name}")))
        }
        Step::QueueCreateDatasource(_)
        | Step::QueuePush(_)
        | Step::QueuePoll(_)
        | Step::QueueIndex(_)
        | Step::QueueDelete(_)
        | Step::QueueUnreserve(_)
        | Step::QueueDeleteQueueItems(_)
        | Step::QueueGetOperation(_) => {
            let request = queue_request(step, state)?;
            let resource = format!("queue:{}", request.datasource());
            (Request::Queue(request), target(resource))
        }
        Step::FeedRanges(s) => (
            Request::Feed(FeedRequest::Ranges {
                container: s.container.clone(),
            }),
            target(format!("feed:{}", s.container)),
        ),
        Step::FeedRead(s) => (
            Request::Feed(feed_read(s, state)?),
            target(format!("feed:{}", s.container)),
        ),
        Step::FeedSplit(s) => (
            Request::Feed(FeedRequest::Split {
                container: s.container.clone(),
                range: range_id(&s.range, state)?,
            }),
            target(format!("feed:{}", s.container)),
        ),
        Step::Advance(_) | Step::CrashServer(_) | Step::DropNextReply(_) => {
            return Err("not a request".into())
        }
    })
}

/// A queue item's name as sent: a captured `$name`'s value, or the text.
fn item_name(t: &Text, state: &State) -> Result<String, String> {
    match t.captured_name() {
        Some(n) => match lookup(state, n)? {
            Captured::Item(id) => Ok(id.clone()),
            _ => Err(format!("{n} holds no item id")),
        },
        None => Ok(t.expand()),
    }
}

fn hashes(h: &Option<QueueHashes>) -> Hashes {
    let text = |t: &Option<Text>| t.as_ref().map(Text::expand);
    h.as_ref().map_or_else(Hashes::default, |h| Hashes {
        metadata: text(&h.metadata),
        structured_data: text(&h.structured_data),
        content: text(&h.content),
    })
}

/// The indexing-queue request of a queue step.
fn queue_request(step: &Step, state: &State) -> Result<QueueRequest, String> {
    let queue = |q: &Option<Text>| q.as_ref().map(Text::expand);
    let duration = |d: &Option<String>, default: Millis| -> Millis {
        // Durations were validated with the script.
        d.as_deref()
            .and_then(|d| parse_duration(d).ok())
            .map_or(default, |ms| ms.max(0) as Millis)
    };
    Ok(match step {
        Step::QueueCreateDatasource(s) => {
            let defaults = QueueConfig::default();
            let takes = duration(&s.delete_takes, defaults.delete_ms.0);
            QueueRequest::CreateDatasource {
                datasource: s.datasource.clone(),
                config: QueueConfig {
                    time_scale: s.time_scale.unwrap_or(defaults.time_scale),
                    backoff_ms: duration(&s.backoff, defaults.backoff_ms),
                    max_backoff_ms: duration(&s.max_backoff, defaults.max_backoff_ms),
                    delete_ms: (takes, takes),
                },
            }
        }
        Step::QueuePush(s) => QueueRequest::Push {
            datasource: s.datasource.clone(),
            item: PushItem {
                name: item_name(&s.item, state)?,
                r#type: s.push_type.unwrap_or_default(),
                hashes: hashes(&s.hashes),
                payload: s.payload.as_ref().map(Text::expand),
                queue: queue(&s.queue),
                repository_error: s.repository_error.clone(),
            },
        },
        Step::QueuePoll(s) => QueueRequest::Poll {
            datasource: s.datasource.clone(),
            queue: queue(&s.queue),
            statuses: s.statuses.clone(),
            limit: s.limit,
        },
        Step::QueueIndex(s) => QueueRequest::Index {
            datasource: s.datasource.clone(),
            name: item_name(&s.item, state)?,
            version: s.version.expand(),
            queue: queue(&s.queue),
            content: s.content.clone().unwrap_or_default(),
            hashes: hashes(&s.hashes),
        },
        Step::QueueDelete(s) => QueueRequest::Delete {
            datasource: s.datasource.clone(),
            name: item_name(&s.item, state)?,
            version: s.version.expand(),
        },
        Step::QueueUnreserve(s) => QueueRequest::Unreserve {
            datasource: s.datasource.clone(),
            queue: queue(&s.queue),
        },
        Step::QueueDeleteQueueItems(s) => QueueRequest::DeleteQueueItems {
            datasource: s.datasource.clone(),
            queue: queue(&s.queue),
        },
        Step::QueueGetOperation(s) => {
            let v = s.operation.trim();
            let operation = if v.starts_with('$') {
                match lookup(state, v)? {
                    Captured::Operation(o) => o.clone(),
                    _ => return Err(format!("{v} holds no operation")),
                }
            } else {
                v.to_string()
            };
            QueueRequest::GetOperation {
                datasource: s.datasource.clone(),
                operation,
            }
        }
        _ => return Err("not a queue step".into()),
    })
}

/// A range as sent: its id, or a captured `$name`'s.
fn range_id(r: &RangeRef, state: &State) -> Result<u32, String> {
    match r {
        RangeRef::Id(id) => Ok(*id),
        RangeRef::Captured(n) => match lookup(state, n)? {
            Captured::Range(id) => Ok(*id),
            _ => Err(format!("{n} holds no range")),
        },
    }
}

/// A `feed_read`'s request: its scope, its start, its page-size hint.
fn feed_read(s: &FeedRead, state: &State) -> Result<FeedRequest, String> {
    let scope = match (&s.range, &s.partition_key) {
        (Some(r), _) => FeedScope::Range(range_id(r, state)?),
        (None, Some(pk)) => FeedScope::PartitionKey(pk.clone()),
        (None, None) => return Err("no scope".into()),
    };
    let from = if let Some(c) = &s.continuation {
        let c = c.trim();
        if c.starts_with('$') {
            match lookup(state, c)? {
                Captured::Continuation(t) => StartFrom::Continuation(*t),
                _ => return Err(format!("{c} holds no continuation")),
            }
        } else {
            StartFrom::Continuation(c.parse().map_err(|_| format!("`{c}` is no token"))?)
        }
    } else if let Some(t) = &s.start_time {
        StartFrom::Time(date(t, state)?)
    } else {
        match s.start.as_deref() {
            Some("now") => StartFrom::Now,
            _ => StartFrom::Beginning,
        }
    };
    Ok(FeedRequest::Read {
        container: s.container.clone(),
        scope,
        from,
        page_size: s.page_size.unwrap_or(0),
    })
}

fn cosmos_resource(container: &str, pk: &str, id: &str) -> String {
    format!("cosmos:{container}/{pk}/{id}")
}

/// A lease id as sent: a captured `$name`'s value, or the literal as written.
fn lease_value(v: &str, state: &State) -> Result<String, String> {
    let v = v.trim();
    if v.starts_with('$') {
        match lookup(state, v)? {
            Captured::LeaseId(id) => Ok(id.clone()),
            _ => Err(format!("{v} holds no lease id")),
        }
    } else {
        Ok(v.to_string())
    }
}

fn lease_action(s: &LeaseOp, state: &State) -> Result<LeaseAction, String> {
    let id = |v: &Option<String>| v.as_deref().map(|v| lease_value(v, state)).transpose();
    // A required id left out is sent empty: the service answers 400 (SPEC §2.2).
    let required = |v: &Option<String>| id(v).map(Option::unwrap_or_default);
    Ok(match s.action.as_str() {
        "acquire" => LeaseAction::Acquire {
            duration: s.duration,
            proposed_id: id(&s.proposed_id)?,
        },
        "renew" => LeaseAction::Renew {
            lease_id: required(&s.lease_id)?,
        },
        "change" => LeaseAction::Change {
            lease_id: required(&s.lease_id)?,
            proposed_id: id(&s.proposed_id)?,
        },
        "release" => LeaseAction::Release {
            lease_id: required(&s.lease_id)?,
        },
        "break" => LeaseAction::Break {
            break_period: s.break_period,
        },
        other => return Err(format!("no lease action `{other}`")),
    })
}

/// One ETag as sent: a captured `$name`'s value, or a literal (quotes optional).
fn one_etag(v: &str, state: &State) -> Result<ETag, String> {
    let v = v.trim();
    if v.starts_with('$') {
        match lookup(state, v)? {
            Captured::Etag(e) => Ok(ETag(e.clone())),
            _ => Err(format!("{v} holds no ETag")),
        }
    } else {
        Ok(ETag::quoted(v))
    }
}

fn item_op(
    name: &str,
    id: &str,
    body: &Option<String>,
    if_match: &Option<String>,
    if_none_match: &Option<String>,
    state: &State,
) -> Result<ItemOp, String> {
    let tag = |v: &Option<String>| v.as_deref().map(|v| one_etag(v, state)).transpose();
    let id = id.to_string();
    let body = body.clone().unwrap_or_default();
    Ok(match name {
        "create" => ItemOp::Create { id, body },
        "read" => ItemOp::Read {
            id,
            if_none_match: tag(if_none_match)?,
        },
        "replace" => ItemOp::Replace {
            id,
            body,
            if_match: tag(if_match)?,
        },
        "upsert" => ItemOp::Upsert {
            id,
            body,
            if_match: tag(if_match)?,
        },
        "delete" => ItemOp::Delete {
            id,
            if_match: tag(if_match)?,
        },
        other => return Err(format!("no Cosmos operation `{other}`")),
    })
}

/// A Search request: the REST form as written, or the SDK's (`only_if_unchanged`
/// with `held_etag`) built by the model's Search client.
fn search_request(
    kind: &str,
    s: &SearchOp,
    state: &State,
    client: &mut StoreClient,
) -> Result<(SearchRequest, String), String> {
    let (name, resource_kind, entries) = match (&s.index, &s.synonym_map) {
        (Some(n), _) => (n.clone(), ResourceKind::Index, s.fields.clone()),
        (None, Some(n)) => (n.clone(), ResourceKind::SynonymMap, s.synonyms.clone()),
        (None, None) => return Err("no resource named".into()),
    };
    let entries: BTreeSet<String> = entries.unwrap_or_default().into_iter().collect();
    let header = |v: &Option<String>| -> Result<Option<EtagMatch>, String> {
        v.as_deref().map(|v| etag_header(v, state)).transpose()
    };
    if s.only_if_unchanged.is_some() || s.held_etag.is_some() {
        let definition = Definition {
            name: name.clone(),
            kind: resource_kind,
            entries,
            etag: s
                .held_etag
                .as_deref()
                .map(|v| one_etag(v, state))
                .transpose()?,
        };
        let only = s.only_if_unchanged.unwrap_or(false);
        let sdk = SearchClient::new(client);
        let request = match kind {
            "search_put" => sdk.create_or_update_request(&definition, only),
            _ => sdk.delete_request(&definition, only),
        };
        return Ok((request, name));
    }
    let request = match kind {
        "search_get" => SearchRequest::Get { name: name.clone() },
        "search_put" => SearchRequest::Put {
            name: name.clone(),
            kind: resource_kind,
            entries,
            if_match: header(&s.if_match)?,
            if_none_match: header(&s.if_none_match)?,
        },
        _ => SearchRequest::Delete {
            name: name.clone(),
            if_match: header(&s.if_match)?,
        },
    };
    Ok((request, name))
}

fn lookup<'a>(state: &'a State, name: &str) -> Result<&'a Captured, String> {
    state
        .captured
        .get(name)
        .ok_or_else(|| format!("{name} was never captured (its step's answer had no such field)"))
}

fn etag_header(v: &str, state: &State) -> Result<EtagMatch, String> {
    if v.trim() == "*" {
        return Ok(EtagMatch::Any);
    }
    etag_tokens(v)
        .into_iter()
        .map(|t| one_etag(t, state))
        .collect::<Result<_, _>>()
        .map(EtagMatch::Tags)
}

fn date(expr: &str, state: &State) -> Result<Millis, String> {
    let d = DateExpr::parse(expr)?;
    let base = match &d.var {
        Some(n) => match lookup(state, n)? {
            Captured::Time(t) => *t as i64,
            _ => return Err(format!("{n} holds no date")),
        },
        None => d.fixed as i64,
    };
    Ok((base + d.offset_ms).max(0) as Millis)
}

fn conditions(h: ConditionHeaders<'_>, state: &State) -> Result<Conditions, String> {
    let dates = |d: &Option<super::format::Dates>| -> Result<Option<Vec<Millis>>, String> {
        d.as_ref()
            .map(|d| d.exprs().into_iter().map(|e| date(e, state)).collect())
            .transpose()
    };
    Ok(Conditions {
        if_match: h
            .if_match
            .as_deref()
            .map(|v| etag_header(v, state))
            .transpose()?,
        if_none_match: h
            .if_none_match
            .as_deref()
            .map(|v| etag_header(v, state))
            .transpose()?,
        if_modified_since: dates(h.if_modified_since)?,
        if_unmodified_since: dates(h.if_unmodified_since)?,
        lease_id: None,
    })
}

/// The Blob headers of `c` as text: `, If-Match: ...` for each one sent.
fn describe_conditions(c: &Conditions) -> String {
    let mut out = String::new();
    for (name, m) in [
        ("If-Match", &c.if_match),
        ("If-None-Match", &c.if_none_match),
    ] {
        out += &describe_match(name, m.as_ref());
    }
    for (name, d) in [
        ("If-Modified-Since", &c.if_modified_since),
        ("If-Unmodified-Since", &c.if_unmodified_since),
    ] {
        if let Some(d) = d {
            let dates: Vec<String> = d.iter().map(|t| format_rfc1123(*t)).collect();
            out += &format!(", {name}: {}", dates.join(" | "));
        }
    }
    if let Some(id) = &c.lease_id {
        out += &format!(", x-ms-lease-id: {id}");
    }
    out
}

fn describe_match(name: &str, m: Option<&EtagMatch>) -> String {
    match m {
        Some(EtagMatch::Any) => format!(", {name}: *"),
        Some(EtagMatch::Tags(t)) => {
            let tags: Vec<&str> = t.iter().map(|e| e.0.as_str()).collect();
            format!(", {name}: {}", tags.join(", "))
        }
        None => String::new(),
    }
}

fn describe_item_op(op: &ItemOp) -> String {
    let tag = |name: &str, e: &Option<ETag>| {
        e.as_ref()
            .map(|e| format!(", {name}: {e}"))
            .unwrap_or_default()
    };
    match op {
        ItemOp::Create { id, body } => format!("create {id} body {body:?}"),
        ItemOp::Read { id, if_none_match } => {
            format!("read {id}{}", tag("if-none-match", if_none_match))
        }
        ItemOp::Replace { id, body, if_match } => {
            format!("replace {id} body {body:?}{}", tag("if-match", if_match))
        }
        ItemOp::Upsert { id, body, if_match } => {
            format!("upsert {id} body {body:?}{}", tag("if-match", if_match))
        }
        ItemOp::Delete { id, if_match } => format!("delete {id}{}", tag("if-match", if_match)),
    }
}

/// The request as a line: the step's kind, the resource, and the headers
/// with captured names resolved.
fn describe_request(step: &Step, req: &Request) -> String {
    let kind = step.kind();
    match req {
        Request::Store(StoreRequest::CreateContainer { container }) => {
            format!("{kind} {container}")
        }
        Request::Store(StoreRequest::Read { key, conditions })
        | Request::Store(StoreRequest::Delete { key, conditions }) => format!(
            "{kind} {}/{}{}",
            key.container,
            key.id,
            describe_conditions(conditions)
        ),
        Request::Store(StoreRequest::Put {
            key,
            body,
            conditions,
        }) => format!(
            "{kind} {}/{} body {body:?}{}",
            key.container,
            key.id,
            describe_conditions(conditions)
        ),
        Request::Lease(LeaseRequest::Action {
            target,
            action,
            conditions,
        }) => {
            let headers = match action {
                LeaseAction::Acquire {
                    duration,
                    proposed_id,
                } => {
                    let mut h = duration
                        .map(|d| format!(", duration {d}"))
                        .unwrap_or_else(|| ", no duration".into());
                    if let Some(p) = proposed_id {
                        h += &format!(", proposed {p}");
                    }
                    h
                }
                LeaseAction::Renew { lease_id } | LeaseAction::Release { lease_id } => {
                    format!(", lease id {lease_id:?}")
                }
                LeaseAction::Change {
                    lease_id,
                    proposed_id,
                } => format!(", lease id {lease_id:?}, proposed {proposed_id:?}"),
                LeaseAction::Break { break_period } => match break_period {
                    Some(p) => format!(", break period {p}"),
                    None => ", no break period".into(),
                },
            };
            format!(
                "{kind} {} {}{headers}{}",
                target.name(),
                action.name(),
                describe_conditions(conditions)
            )
        }
        Request::Lease(LeaseRequest::DeleteContainer {
            container,
            lease_id,
        })
        | Request::Lease(LeaseRequest::SetContainerMetadata {
            container,
            lease_id,
        }) => match lease_id {
            Some(id) => format!("{kind} {container}, x-ms-lease-id: {id}"),
            None => format!("{kind} {container}"),
        },
        Request::Cosmos(CosmosRequest::Item {
            container,
            partition_key,
            op,
        }) => format!(
            "{kind} {container} pk {partition_key:?}: {}",
            describe_item_op(op)
        ),
        Request::Cosmos(CosmosRequest::Batch {
            container,
            partition_key,
            ops,
        }) => {
            let each: Vec<String> = ops.iter().map(describe_item_op).collect();
            format!(
                "{kind} {container} pk {partition_key:?}: [{}]",
                each.join("; ")
            )
        }
        Request::Search(r) => match r {
            SearchRequest::Get { name } => format!("{kind} {name}"),
            SearchRequest::Put {
                name,
                entries,
                if_match,
                if_none_match,
                ..
            } => {
                let list: Vec<&str> = entries.iter().map(String::as_str).collect();
                format!(
                    "{kind} {name} [{}]{}{}",
                    list.join(", "),
                    describe_match("If-Match", if_match.as_ref()),
                    describe_match("If-None-Match", if_none_match.as_ref())
                )
            }
            SearchRequest::Delete { name, if_match } => format!(
                "{kind} {name}{}",
                describe_match("If-Match", if_match.as_ref())
            ),
        },
        Request::Queue(r) => describe_queue_request(kind, r),
        Request::Feed(r) => describe_feed_request(kind, r),
    }
}

fn describe_hashes(h: &Hashes) -> String {
    let mut out = String::new();
    for (name, v) in [
        ("metadataHash", &h.metadata),
        ("structuredDataHash", &h.structured_data),
        ("contentHash", &h.content),
    ] {
        if let Some(v) = v {
            out += &format!(", {name} {}", short(v));
        }
    }
    out
}

fn describe_queue_request(kind: &str, r: &QueueRequest) -> String {
    let ds = r.datasource();
    let queue = |q: &Option<String>| match q {
        Some(q) => format!(", queue {}", short(q)),
        None => String::new(),
    };
    match r {
        QueueRequest::CreateDatasource { config, .. } => format!(
            "{kind} {ds}, time_scale {}, backoff {}ms..{}ms, deleteQueueItems takes {}ms",
            config.time_scale, config.backoff_ms, config.max_backoff_ms, config.delete_ms.0
        ),
        QueueRequest::Push { item, .. } => {
            let mut out = format!("{kind} {ds}/{} type {:?}", short(&item.name), item.r#type);
            out += &describe_hashes(&item.hashes);
            if let Some(p) = &item.payload {
                out += &format!(", payload {}", short(p));
            }
            out += &queue(&item.queue);
            if let Some(e) = &item.repository_error {
                out += &format!(", repositoryError {e:?}");
            }
            out
        }
        QueueRequest::Poll {
            queue: q,
            statuses,
            limit,
            ..
        } => {
            let mut out = format!("{kind} {ds}{}", queue(q));
            if !statuses.is_empty() {
                let names: Vec<&str> = statuses.iter().map(|s| status_name(*s)).collect();
                out += &format!(", statusCodes [{}]", names.join(", "));
            }
            if let Some(l) = limit {
                out += &format!(", limit {l}");
            }
            out
        }
        QueueRequest::Index {
            name,
            version,
            queue: q,
            content,
            hashes,
            ..
        } => format!(
            "{kind} {ds}/{} version {}{} content {content:?}{}",
            short(name),
            short(version),
            queue(q),
            describe_hashes(hashes)
        ),
        QueueRequest::Delete { name, version, .. } => {
            format!("{kind} {ds}/{} version {}", short(name), short(version))
        }
        QueueRequest::Unreserve { queue: q, .. }
        | QueueRequest::DeleteQueueItems { queue: q, .. } => format!("{kind} {ds}{}", queue(q)),
        QueueRequest::GetOperation { operation, .. } => format!("{kind} {ds} {operation}"),
    }
}

fn describe_feed_request(kind: &str, r: &FeedRequest) -> String {
    match r {
        FeedRequest::Ranges { container } => format!("{kind} {container}"),
        FeedRequest::Split { container, range } => format!("{kind} {container} range {range}"),
        FeedRequest::PurgeExpired { container, ttl_s } => {
            format!("{kind} {container} ttl {ttl_s}s")
        }
        FeedRequest::Read {
            container,
            scope,
            from,
            page_size,
        } => {
            let scope = match scope {
                FeedScope::Range(id) => format!("range {id}"),
                FeedScope::PartitionKey(pk) => format!("partition key {pk:?}"),
            };
            let from = match from {
                StartFrom::Beginning => "from the beginning".to_string(),
                StartFrom::Now => "from now".to_string(),
                StartFrom::Time(t) => format!("from {}", format_rfc1123(*t)),
                StartFrom::Continuation(c) => format!("continuation {c}"),
            };
            let page = if *page_size > 0 {
                format!(", page size {page_size}")
            } else {
                String::new()
            };
            format!("{kind} {container} {scope} {from}{page}")
        }
    }
}

/// An expected item as text.
fn describe_item_expect(i: &ItemExpect) -> String {
    match i {
        ItemExpect::Id(id) => id.clone(),
        ItemExpect::Fields(f) => {
            let mut fields = Vec::new();
            if let Some(s) = f.status {
                fields.push(status_name(s).to_string());
            }
            if let Some(pk) = &f.partition_key {
                fields.push(format!("pk {pk:?}"));
            }
            if let Some(v) = &f.version {
                fields.push(format!("version {:?}", v.to_string()));
            }
            if let Some(q) = &f.queue {
                fields.push(format!("queue {}", short(q)));
            }
            if let Some(p) = &f.payload {
                fields.push(format!("payload {}", short(p)));
            }
            if let Some(b) = &f.body {
                fields.push(format!("body {b:?}"));
            }
            format!("{} ({})", f.id, fields.join(", "))
        }
    }
}

/// The expectation as a line.
fn describe_expect(e: &Expect) -> String {
    let mut parts = Vec::new();
    if let Some(s) = e.status {
        parts.push(s.to_string());
    }
    if let Some(c) = &e.error_code {
        parts.push(c.clone());
    }
    if let Some(u) = e.unknown_outcome {
        parts.push(
            if u {
                "outcome unknown"
            } else {
                "outcome known"
            }
            .into(),
        );
    }
    if let Some(a) = e.attempts {
        parts.push(format!("{a} attempt(s)"));
    }
    for (name, v) in [
        ("etag", &e.etag),
        ("last_modified", &e.last_modified),
        ("lease id", &e.lease_id),
        ("lease", &e.lease_state),
        ("lease status", &e.lease_status),
        ("duration", &e.lease_duration),
    ] {
        if let Some(v) = v {
            parts.push(format!("{name} {v}"));
        }
    }
    if let Some(t) = e.lease_time {
        parts.push(format!("lease time {t}s"));
    }
    for (name, v) in [("fields", &e.fields), ("synonyms", &e.synonyms)] {
        if let Some(v) = v {
            parts.push(format!("{name} [{}]", v.join(", ")));
        }
    }
    if let Some(b) = &e.body {
        parts.push(format!("body {b:?}"));
    }
    if e.no_body == Some(true) {
        parts.push("no body".into());
    }
    if let Some(results) = &e.results {
        let each: Vec<String> = results.iter().map(describe_expect).collect();
        parts.push(format!("results [{}]", each.join(" | ")));
    }
    if let Some(s) = e.item_status {
        parts.push(format!("item {}", status_name(s)));
    }
    if let Some(o) = &e.operation {
        parts.push(format!("operation {o}"));
    }
    if let Some(d) = e.done {
        parts.push(if d { "done" } else { "not done" }.into());
    }
    if let Some(s) = e.sub_status {
        parts.push(format!("sub-status {s}"));
    }
    if let Some(items) = &e.items {
        let each: Vec<String> = items.iter().map(describe_item_expect).collect();
        parts.push(format!("items [{}]", each.join(", ")));
    }
    if let Some(c) = &e.continuation {
        parts.push(format!("continuation {c}"));
    }
    if let Some(r) = &e.ranges {
        let ids: Vec<String> = r.iter().map(u32::to_string).collect();
        parts.push(format!("ranges [{}]", ids.join(", ")));
    }
    let mut out = parts.join(", ");
    if !e.any_of.is_empty() {
        let alts: Vec<String> = e.any_of.iter().map(describe_expect).collect();
        if !out.is_empty() {
            out += ", and ";
        }
        out += &format!("one of [{}]", alts.join(" | "));
    }
    if out.is_empty() {
        out = "anything".into();
    }
    out
}

/// Checks `answer` against `e`; on success binds the captures (the top
/// level's and the matching alternative's).
fn check(e: &Expect, answer: &Answer, target: &Target, state: &mut State) -> Result<(), String> {
    check_answer(e, answer, target, state)?;
    if !e.any_of.is_empty() {
        let mut whys = Vec::new();
        let mut matched = None;
        for alt in &e.any_of {
            match check_answer(alt, answer, target, state) {
                Ok(()) => {
                    matched = Some(alt);
                    break;
                }
                Err(why) => whys.push(why),
            }
        }
        let Some(alt) = matched else {
            return Err(format!("no alternative holds: {}", whys.join("; ")));
        };
        capture(alt, &answer.observed, state)?;
    }
    capture(e, &answer.observed, state)?;
    if let (Some(results), Some(got)) = (&e.results, &answer.observed.results) {
        for (r, o) in results.iter().zip(got) {
            capture(r, o, state)?;
        }
    }
    Ok(())
}

fn capture(e: &Expect, o: &Observed, state: &mut State) -> Result<(), String> {
    for (field, name) in &e.capture {
        let value = match Field::parse(field) {
            Some(Field::Etag) => o.etag.as_ref().map(|e| Captured::Etag(e.0.clone())),
            Some(Field::LastModified) => o.last_modified.map(Captured::Time),
            Some(Field::LeaseId) => o
                .lease
                .as_ref()
                .and_then(|l| l.lease_id.clone())
                .map(Captured::LeaseId),
            Some(Field::Operation) => o
                .operation
                .as_ref()
                .map(|op| Captured::Operation(op.name.clone())),
            Some(Field::Continuation) => o.continuation.map(Captured::Continuation),
            Some(Field::Item(n)) => o
                .items
                .as_ref()
                .and_then(|items| items.get(n))
                .map(|i| Captured::Item(i.id.clone())),
            Some(Field::Range(n)) => o
                .ranges
                .as_ref()
                .and_then(|r| r.get(n))
                .map(|r| Captured::Range(r.id)),
            None => None,
        };
        let Some(value) = value else {
            return Err(format!("capture {name}: the answer has no {field}"));
        };
        state.captured.insert(name.clone(), value);
    }
    Ok(())
}

/// The answer-level fields (unknown outcome, attempts), then the observed ones.
fn check_answer(e: &Expect, a: &Answer, target: &Target, state: &State) -> Result<(), String> {
    if let Some(u) = e.unknown_outcome {
        if a.unknown() != u {
            return Err(format!(
                "the outcome is {}known",
                if a.unknown() { "un" } else { "" }
            ));
        }
    }
    if let Some(n) = e.attempts {
        if a.attempts != n {
            return Err(format!("{} attempt(s), not {n}", a.attempts));
        }
    }
    check_fields(e, &a.observed, &target.resource, state)?;
    if let Some(results) = &e.results {
        let Some(got) = &a.observed.results else {
            return Err("the answer has no per-operation results".into());
        };
        if got.len() != results.len() {
            return Err(format!("{} results, not {}", got.len(), results.len()));
        }
        for (i, ((r, o), resource)) in results.iter().zip(got).zip(&target.per_op).enumerate() {
            check_fields(r, o, resource, state).map_err(|why| format!("result {i}: {why}"))?;
        }
    }
    Ok(())
}

/// Compares `got` with a `fresh` / `same as` / ... expectation `v` of `field`;
/// `seen` holds the values seen before on the resource, `literal` says whether a
/// literal equals `got`.
fn compare_value(
    v: &str,
    field: Field,
    got: Option<&str>,
    seen: Option<&BTreeSet<String>>,
    state: &State,
    literal: impl Fn(&str, &str) -> bool,
) -> Result<bool, String> {
    let captured = |n: &str| match state.captured.get(n) {
        Some(Captured::Etag(e)) => Some(ETag(e.clone()).unquoted().to_string()),
        Some(Captured::LeaseId(l)) | Some(Captured::Operation(l)) | Some(Captured::Item(l)) => {
            Some(l.clone())
        }
        Some(Captured::Continuation(c)) => Some(c.to_string()),
        Some(Captured::Range(r)) => Some(r.to_string()),
        _ => None,
    };
    Ok(match Compare::parse(v, field)? {
        Compare::Fresh => got.is_some_and(|g| !seen.is_some_and(|s| s.contains(g))),
        Compare::SameAs(n) => got.is_some_and(|g| Some(g.to_string()) == captured(&n)),
        Compare::DifferentFrom(n) => got.is_some_and(|g| Some(g.to_string()) != captured(&n)),
        Compare::Present => got.is_some(),
        Compare::Absent => got.is_none(),
        Compare::Literal(l) => got.is_some_and(|g| literal(g, &l)),
    })
}

fn check_fields(e: &Expect, o: &Observed, resource: &str, state: &State) -> Result<(), String> {
    if let Some(s) = e.status {
        if o.status != s {
            return Err(format!("status {} is not {s}", o.status));
        }
    }
    let code = o.error_code.as_deref();
    if let Some(c) = &e.error_code {
        if code != Some(c.as_str()) {
            return Err(format!(
                "error code {} is not {c}",
                code.unwrap_or("(none)")
            ));
        }
    }
    if let Some(v) = &e.etag {
        let got = o.etag.as_ref().map(|g| g.unquoted());
        let ok = compare_value(
            v,
            Field::Etag,
            got,
            state.seen.get(resource),
            state,
            |g, l| g == ETag::quoted(l).unquoted(),
        )?;
        if !ok {
            let got = got.map_or("no etag".to_string(), |g| format!("etag \"{g}\""));
            return Err(format!("{got} is not {v}"));
        }
    }
    if let Some(v) = &e.last_modified {
        // Last-Modified is a date header: whole seconds.
        let got = o.last_modified.map(|t| t / 1000);
        let secs = |t: Millis| t / 1000;
        let ok = match Compare::parse(v, Field::LastModified)? {
            Compare::SameAs(n) => got.is_some() && got == captured_time(state, &n).map(secs),
            Compare::DifferentFrom(n) => got.is_some() && got != captured_time(state, &n).map(secs),
            Compare::Present => got.is_some(),
            Compare::Absent => got.is_none(),
            Compare::Literal(l) => got.is_some() && got == Some(secs(date(&l, state)?)),
            Compare::Fresh => false,
        };
        if !ok {
            let got = o.last_modified.map_or("no last_modified".to_string(), |t| {
                format!("last_modified {}", format_rfc1123(t))
            });
            return Err(format!("{got} is not {v}"));
        }
    }
    let lease = o.lease.as_ref();
    if let Some(v) = &e.lease_id {
        let got = lease.and_then(|l| l.lease_id.as_deref());
        let ok = compare_value(
            v,
            Field::LeaseId,
            got,
            state.seen_leases.get(resource),
            state,
            |g, l| lease::parse_guid(l).is_some_and(|l| l == g),
        )?;
        if !ok {
            return Err(format!(
                "{} is not {v}",
                got.map_or("no lease id".to_string(), |g| format!("lease id {g}"))
            ));
        }
    }
    if let Some(v) = &e.lease_state {
        let got = lease.map(|l| state_name(l.state));
        if got != Some(v.as_str()) {
            return Err(format!(
                "lease state {} is not {v}",
                got.unwrap_or("(none)")
            ));
        }
    }
    if let Some(v) = &e.lease_status {
        let got = lease.map(|l| {
            if l.state.is_locked() {
                "locked"
            } else {
                "unlocked"
            }
        });
        if got != Some(v.as_str()) {
            return Err(format!(
                "lease status {} is not {v}",
                got.unwrap_or("(none)")
            ));
        }
    }
    if let Some(v) = &e.lease_duration {
        let got = lease.and_then(|l| l.duration);
        let ok = match parse_lease_duration(v)? {
            LeaseDurationExpect::Infinite => got == Some(lease::LeaseDuration::Infinite),
            LeaseDurationExpect::Fixed(None) => {
                matches!(got, Some(lease::LeaseDuration::Fixed(_)))
            }
            LeaseDurationExpect::Fixed(Some(s)) => got == Some(lease::LeaseDuration::Fixed(s)),
            LeaseDurationExpect::Absent => lease.is_some() && got.is_none(),
        };
        if !ok {
            return Err(format!("lease duration {got:?} is not {v}"));
        }
    }
    if let Some(t) = e.lease_time {
        let got = lease.and_then(|l| l.lease_time_s);
        if got != Some(t) {
            return Err(format!("lease time {got:?} is not {t}s"));
        }
    }
    for (want_kind, v, what) in [
        (ResourceKind::Index, &e.fields, "fields"),
        (ResourceKind::SynonymMap, &e.synonyms, "synonyms"),
    ] {
        let Some(v) = v else { continue };
        let want: BTreeSet<String> = v.iter().cloned().collect();
        let ok = o
            .entries
            .as_ref()
            .is_some_and(|(k, got)| *k == want_kind && *got == want);
        if !ok {
            return Err(format!("the answer's {what} are not [{}]", v.join(", ")));
        }
    }
    check_queue_and_feed_fields(e, o, resource, state)?;
    let body = o.body.as_deref();
    if let Some(b) = &e.body {
        if body != Some(b.as_str()) {
            return Err(format!("body {body:?} is not {b:?}"));
        }
    }
    if let Some(no) = e.no_body {
        if body.is_none() != no {
            return Err(format!("body {body:?}"));
        }
    }
    Ok(())
}

/// The fields of queue and feed answers: item status, items, operation,
/// continuation, sub-status, ranges.
fn check_queue_and_feed_fields(
    e: &Expect,
    o: &Observed,
    resource: &str,
    state: &State,
) -> Result<(), String> {
    if let Some(want) = e.item_status {
        if o.item_status != Some(want) {
            return Err(format!(
                "item status {} is not {}",
                o.item_status.map_or("(none)", status_name),
                status_name(want)
            ));
        }
    }
    if let Some(v) = &e.operation {
        let got = o.operation.as_ref().map(|op| op.name.as_str());
        let ok = compare_value(
            v,
            Field::Operation,
            got,
            state.seen.get(resource),
            state,
            |g, l| g == l,
        )?;
        if !ok {
            return Err(format!(
                "{} is not {v}",
                got.map_or("no operation".to_string(), |g| format!("operation {g}"))
            ));
        }
    }
    if let Some(d) = e.done {
        let got = o.operation.as_ref().map(|op| op.done);
        if got != Some(d) {
            return Err(format!(
                "the operation is {}",
                match got {
                    Some(true) => "done",
                    Some(false) => "not done",
                    None => "absent",
                }
            ));
        }
    }
    if let Some(v) = &e.continuation {
        let got = o.continuation.map(|c| c.to_string());
        let ok = compare_value(
            v,
            Field::Continuation,
            got.as_deref(),
            None,
            state,
            |g, l| g == l.trim(),
        )?;
        if !ok {
            return Err(format!(
                "{} is not {v}",
                got.map_or("no continuation".to_string(), |g| format!(
                    "continuation {g}"
                ))
            ));
        }
    }
    if let Some(s) = e.sub_status {
        if o.sub_status != Some(s) {
            return Err(format!(
                "sub-status {} is not {s}",
                o.sub_status.map_or("(none)".to_string(), |g| g.to_string())
            ));
        }
    }
    if let Some(want) = &e.ranges {
        let got: Option<Vec<u32>> = o.ranges.as_ref().map(|r| r.iter().map(|r| r.id).collect());
        if got.as_ref() != Some(want) {
            return Err(format!("ranges {got:?} are not {want:?}"));
        }
    }
    if let Some(want) = &e.items {
        let Some(got) = &o.items else {
            return Err("the answer has no items".into());
        };
        let ids = |got: &[ObservedItem]| -> String {
            let each: Vec<&str> = got.iter().map(|i| i.id.as_str()).collect();
            format!("[{}]", each.join(", "))
        };
        let expected_id = |w: &ItemExpect| -> Result<String, String> {
            let id = w.id().trim();
            if id.starts_with('$') {
                match lookup(state, id)? {
                    Captured::Item(i) => Ok(i.clone()),
                    _ => Err(format!("{id} holds no item id")),
                }
            } else {
                Ok(id.to_string())
            }
        };
        let want_ids = want
            .iter()
            .map(expected_id)
            .collect::<Result<Vec<_>, _>>()?;
        let got_ids: Vec<&str> = got.iter().map(|i| i.id.as_str()).collect();
        if got_ids != want_ids {
            return Err(format!(
                "items {} are not [{}]",
                ids(got),
                want_ids.join(", ")
            ));
        }
        for (w, g) in want.iter().zip(got) {
            let ItemExpect::Fields(f) = w else { continue };
            let mut wrong = Vec::new();
            if f.status.is_some() && f.status != g.status {
                wrong.push(format!("status {}", g.status.map_or("(none)", status_name)));
            }
            if let Some(v) = &f.version {
                if v.to_string() != g.version {
                    wrong.push(format!("version {:?}", g.version));
                }
            }
            for (name, want, got) in [
                ("queue", &f.queue, &g.queue),
                ("payload", &f.payload, &g.payload),
                ("partition key", &f.partition_key, &g.partition_key),
                ("body", &f.body, &g.body),
            ] {
                if want.is_some() && want != got {
                    wrong.push(format!(
                        "{name} {}",
                        got.as_deref().map_or("(none)".to_string(), short)
                    ));
                }
            }
            if !wrong.is_empty() {
                return Err(format!("item {}: {}", g.id, wrong.join(", ")));
            }
        }
    }
    Ok(())
}

fn captured_time(state: &State, name: &str) -> Option<Millis> {
    match state.captured.get(name) {
        Some(Captured::Time(t)) => Some(*t),
        _ => None,
    }
}
