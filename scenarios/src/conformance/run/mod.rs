//! The script runner: one fresh deployment per script on its own madsim
//! runtime, through the real path (SDK → wire → server → write-ahead log on a
//! simulated disk). Three nodes: the server; a relay that forwards requests
//! and replies between client and server unchanged (loses one reply when
//! a `drop_next_reply` step asks, and answers attempts itself with a
//! transient status when an `inject` step asks); the scripted client, which
//! runs the steps in order and can crash and restart the server. No faults unless a step asks.
//! A script with an `account` step adds a multi-region account (`account`:
//! a replica and a relay per region) that its Cosmos requests go through
//! from that step on.
//!
//! The server's clock is [`ScriptClock`]: simulated time plus an offset that
//! `advance` steps move, starting at the simulation epoch
//! (Thu, 01 Jan 2026 00:00:00 GMT). Simulated time also passes while requests
//! travel (1 ms a hop) and the log syncs (1 ms), so dates should be pinned by
//! captures and whole-second offsets, not by milliseconds.
//!
//! This file holds the deployment, the stepping (time, crashes, lost
//! replies) and what every service's requests share: captured values
//! resolved into headers, the Blob condition headers. `answer` turns an
//! answer into the fields a script checks and checks them against the
//! step's expectation; one file per service (`blob`, `lease`, `cosmos`,
//! `search`, `queue`, `feed`) builds that service's requests and writes them
//! as a line. Services use this core; the core names them only in
//! `build_request`, the one match that sends a step to its service.

mod account;
mod answer;
mod blob;
mod cosmos;
mod feed;
mod lease;
mod queue;
mod search;
mod words;

use super::format::{
    etag_tokens, Captured, ConditionHeaders, DateExpr, Inject, InjectEvent, InjectOnly,
    InjectStatus, Script, Step,
};
use super::time::{format_rfc1123, parse_duration};
use crate::kit::bridge::{DiskAdapter, ServerStreams};
use answer::{check, remember, Answer, Observed};
use madsim::net::Endpoint;
use madsim::runtime::{Handle, Runtime};
use madsim::time::sleep;
use overcast_model::bugs::ModelBugs;
use overcast_model::client::{sim_now_ns, ClientConfig, StoreClient};
use overcast_model::conditions::{Conditions, ETag, EtagMatch, Millis};
use overcast_model::env::{Clock, ListenTable, Listeners};
use overcast_model::partition::{OpKind, Request};
use overcast_model::retry::{FinalOutcome, RetryOptions};
use overcast_model::server::{serve, FaultRates, ServerConfig, ServerStats};
use overcast_model::store::ItemKey;
use overcast_model::wire::{
    request_attempt, request_operation, response_attempt, transient_reply, AttemptName,
    MAX_DATAGRAM, REQUEST_TAG, RESPONSE_TAG,
};
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
use words::describe_expect;

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

/// What a relay does with a request attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Relayed {
    /// Pass it on (no pending injection covers it).
    Pass,
    /// Answer it itself with this status, sub-status and retry-after.
    Refuse {
        status: u16,
        sub_status: u32,
        retry_after_ms: Option<u64>,
        /// Pass it on all the same, and put this answer in place of the server's.
        forward: bool,
    },
    /// Swallow it: no answer (a connection error).
    Swallow,
}

/// The answers an `inject` step left for the relay to give: attempts it
/// answers itself, instead of passing them to the server.
#[derive(Clone, Debug, Default)]
struct Injections {
    /// The step's answer, while attempts are left to answer.
    pending: Option<Inject>,
    /// How many attempts are left to answer.
    left: u32,
    /// The answers to give in place of the server's, by the attempt they
    /// answer (attempts a `forward` injection passed on).
    replace: BTreeMap<AttemptName, Vec<u8>>,
}

impl Injections {
    /// What a relay does with an attempt of `kind` (as the SDK classes it
    /// for its retries) sent to `region` (`None`: the single server),
    /// counting it when a pending injection covers it.
    fn relayed(&mut self, kind: OpKind, region: Option<&str>) -> Relayed {
        let Some(inject) = self.pending.as_ref() else {
            return Relayed::Pass;
        };
        let covered = match inject.only {
            None => true,
            Some(InjectOnly::Reads) => kind == OpKind::Read,
            Some(InjectOnly::Writes) => kind == OpKind::Write,
        } && inject.region.as_deref().is_none_or(|r| Some(r) == region);
        if !covered {
            return Relayed::Pass;
        }
        let relayed = match inject.status {
            InjectStatus::Code(status) => Relayed::Refuse {
                status,
                sub_status: inject.sub_status,
                retry_after_ms: inject.retry_after_ms,
                forward: inject.forward,
            },
            InjectStatus::Event(InjectEvent::ConnectionError) => Relayed::Swallow,
            // Taken by the client's connect ([`RefusedConnects`]): none reaches a relay.
            InjectStatus::Event(InjectEvent::ConnectionRefused) => return Relayed::Pass,
        };
        self.left -= 1;
        if self.left == 0 {
            self.pending = None;
        }
        relayed
    }

    /// The single server's relay: the reply it gives to the request datagram
    /// `request` itself, or what else it does with it (after noting the reply
    /// to put in place of the server's, for a `forward` injection).
    fn answer(&mut self, request: &[u8], acquire_retry_bug: bool) -> Relayed {
        let Some(op) = request_operation(request) else {
            return Relayed::Pass;
        };
        let relayed = self.relayed(op.retry_kind(acquire_retry_bug), None);
        if let Relayed::Refuse {
            status,
            sub_status,
            retry_after_ms,
            forward: true,
        } = relayed
        {
            if let (Some(attempt), Some(reply)) = (
                request_attempt(request),
                transient_reply(request, status, sub_status, retry_after_ms),
            ) {
                self.replace.insert(attempt, reply);
            }
            return Relayed::Pass;
        }
        relayed
    }

    /// The reply to send in place of the server's `response`, if a `forward`
    /// injection covered the attempt it answers.
    fn replacement(&mut self, response: &[u8]) -> Option<Vec<u8>> {
        self.replace.remove(&response_attempt(response)?)
    }
}

/// The script client's view of which servers listen: while an `inject` of
/// `connection_refused` has attempts left, every connect is refused (one
/// attempt each), so the request never leaves the client.
struct RefusedConnects(Arc<Mutex<Injections>>);

impl Listeners for RefusedConnects {
    fn listening(&self, _addr: SocketAddr) {}

    fn refuses(&self, _to: SocketAddr) -> bool {
        let mut injections = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let refused = matches!(
            injections.pending.as_ref().map(|j| j.status),
            Some(InjectStatus::Event(InjectEvent::ConnectionRefused))
        );
        if refused {
            injections.left -= 1;
            if injections.left == 0 {
                injections.pending = None;
            }
        }
        refused
    }
}

/// The longest a script may run in simulated time (a hung run is an error).
const RUN_BOUND: Duration = Duration::from_secs(24 * 3600);

overcast_sim::node_roles! {
    /// The nodes a script runs on.
    enum ScriptRole {
        /// The storage server under test.
        Server = "server",
        /// The relay between the SDK and the server, which can drop a reply
        /// and answer attempts itself.
        Relay = "relay",
        /// The SDK client that plays the script's steps.
        Client = "client",
        /// A region's replica of the script's account (`account` step).
        Replica = "replica",
        /// The relay in front of a region's replica.
        RegionRelay = "region-relay",
    }
}

/// Runs a parsed script on a fresh deployment, deterministically for `seed`
/// (the seed only moves what the script does not pin: network latency within
/// its 1 ms bound and the SDK's jitter).
pub fn run_script(script: &Script, seed: u64) -> ScriptOutcome {
    let mut config = madsim::Config::default();
    config.net.packet_loss_rate = 0.0;
    config.net.send_latency = Duration::from_millis(1)..Duration::from_millis(2);
    let rt = Runtime::with_seed_and_config(seed, config);
    let account = script.steps.iter().find_map(|s| match s {
        Step::Account(a) => Some(a),
        _ => None,
    });
    let regions = account.map_or(0, |a| a.regions.len());
    let topo = Topology::new(vec![
        Role::new(ScriptRole::Server, 1).with_disk(),
        Role::new(ScriptRole::Relay, 1),
        Role::new(ScriptRole::Client, 1),
        Role::new(ScriptRole::Replica, regions),
        Role::new(ScriptRole::RegionRelay, regions),
    ]);
    let addr = |role: ScriptRole| topo.addr(role, 0).expect("role in the topology");
    let (server_addr, relay_addr, client_addr) = (
        addr(ScriptRole::Server),
        addr(ScriptRole::Relay),
        addr(ScriptRole::Client),
    );
    let mut bugs = ModelBugs::default();
    for b in &script.bugs {
        bugs.set(b);
    }
    let server_clock = ScriptClock::default();
    let disk = SimDisk::new();
    let drop_next = Arc::new(AtomicBool::new(false));
    let injections = Arc::new(Mutex::new(Injections::default()));
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
            log: Default::default(),
            listen: Default::default(),
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
                    vec![Arc::new(DiskAdapter(disk.clone()))],
                    ServerStreams::new(seed, format!("script-server-{n}"), None),
                    stats.clone(),
                )
            })
            .build()
    };
    let relay = {
        let drop_next = drop_next.clone();
        let injections = injections.clone();
        let acquire_retry_bug = bugs.acquire_not_idempotent_retry;
        rt.create_node()
            .name("relay-0")
            .ip(relay_addr.ip())
            .init(move || {
                relay_program(
                    relay_addr,
                    server_addr,
                    drop_next.clone(),
                    injections.clone(),
                    acquire_retry_bug,
                )
            })
            .build()
    };
    let server_id = server.id();
    let mut ctx = RunCtx {
        relay: relay_addr,
        server_clock: server_clock.clone(),
        client_clock: ScriptClock::default(),
        region_clock: ScriptClock::default(),
        disk: disk.clone(),
        drop_next: drop_next.clone(),
        injections: injections.clone(),
        server_id,
        bugs,
        seed,
        account: None,
    };
    if let Some(a) = account {
        let nodes = account::deploy(
            &rt,
            a,
            &topo.addrs(ScriptRole::Replica),
            &topo.addrs(ScriptRole::RegionRelay),
            cosmos_containers(script),
            &ctx,
        );
        ctx.account = Some(nodes);
    }
    let mut ids = vec![server_id, relay.id()];
    ids.extend(ctx.account.iter().flat_map(|a| a.ids.clone()));
    let client = {
        let script = script.clone();
        let result = result.clone();
        let ctx = ctx.clone();
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
    ids.push(client.id());
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

/// The tags and largest datagram of the wire a relay serves.
#[derive(Clone, Copy)]
struct RelayWire {
    /// The tag requests travel with, to the relay and on to the server.
    request_tag: u64,
    /// The tag answers travel with, back to the relay and on to the client.
    reply_tag: u64,
    /// The largest datagram of the wire.
    max_datagram: usize,
}

/// A relay at `me` between a client and its server at `upstream`: each
/// request goes where `decide` says ([`Relayed`]; `None`: not a request,
/// dropped), a refusal answered with what `refuse` makes of it; each answer
/// goes to whoever sent the last request as `on_reply` gives it back
/// (`None`: lost).
async fn relay(
    me: SocketAddr,
    upstream: SocketAddr,
    wire: RelayWire,
    mut decide: impl FnMut(&[u8]) -> Option<Relayed> + Send + 'static,
    refuse: impl Fn(&[u8], u16, u32, Option<u64>) -> Option<Vec<u8>> + Send + 'static,
    mut on_reply: impl FnMut(&[u8]) -> Option<std::borrow::Cow<'_, [u8]>>,
) {
    let Ok(ep) = Endpoint::bind(me).await else {
        tracing::error!("relay cannot bind {me}");
        return;
    };
    let ep = Arc::new(ep);
    let client: Arc<Mutex<Option<SocketAddr>>> = Arc::new(Mutex::new(None));
    let requests = {
        let (ep, client) = (ep.clone(), client.clone());
        async move {
            let mut buf = vec![0u8; wire.max_datagram];
            loop {
                let Ok((len, from)) = ep.recv_from(wire.request_tag, &mut buf).await else {
                    continue;
                };
                let request = &buf[..len];
                let Some(relayed) = decide(request) else {
                    continue;
                };
                *client.lock().unwrap_or_else(|e| e.into_inner()) = Some(from);
                match relayed {
                    Relayed::Pass => {
                        let _ = ep.send_to(upstream, wire.request_tag, request).await;
                    }
                    Relayed::Swallow => tracing::info!("relay: swallowed a request"),
                    Relayed::Refuse {
                        status,
                        sub_status,
                        retry_after_ms,
                        ..
                    } => {
                        if let Some(reply) = refuse(request, status, sub_status, retry_after_ms) {
                            let _ = ep.send_to(from, wire.reply_tag, &reply).await;
                        }
                    }
                }
            }
        }
    };
    madsim::task::spawn(requests);
    let mut buf = vec![0u8; wire.max_datagram];
    loop {
        let Ok((len, _)) = ep.recv_from(wire.reply_tag, &mut buf).await else {
            continue;
        };
        let Some(reply) = on_reply(&buf[..len]) else {
            continue;
        };
        let to = *client.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(to) = to {
            let _ = ep.send_to(to, wire.reply_tag, &reply).await;
        }
    }
}

/// Forwards requests to the server and replies to whoever sent the last
/// request, losing one reply when `drop_next` is set; a request that a
/// pending injection covers is answered by the relay itself and never
/// reaches the server (or, for a `forward` injection, reaches it and its
/// answer is replaced).
async fn relay_program(
    me: SocketAddr,
    server: SocketAddr,
    drop_next: Arc<AtomicBool>,
    injections: Arc<Mutex<Injections>>,
    acquire_retry_bug: bool,
) {
    let wire = RelayWire {
        request_tag: REQUEST_TAG,
        reply_tag: RESPONSE_TAG,
        max_datagram: MAX_DATAGRAM,
    };
    let decide = {
        let injections = injections.clone();
        move |request: &[u8]| {
            Some(
                injections
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .answer(request, acquire_retry_bug),
            )
        }
    };
    let refuse = |request: &[u8], status, sub_status, retry_after_ms| {
        tracing::info!("relay: answered a request itself");
        transient_reply(request, status, sub_status, retry_after_ms)
    };
    relay(me, server, wire, decide, refuse, |reply| {
        if drop_next.swap(false, Ordering::Relaxed) {
            tracing::info!("relay: reply dropped");
            return None;
        }
        let replaced = injections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replacement(reply);
        Some(replaced.map_or(std::borrow::Cow::Borrowed(reply), std::borrow::Cow::Owned))
    })
    .await
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
    injections: Arc<Mutex<Injections>>,
    server_id: madsim::task::NodeId,
    bugs: ModelBugs,
    seed: u64,
    /// The clock of the account's replicas: simulated time, never advanced
    /// (an `advance` moves the single server's clock and the client's).
    region_clock: ScriptClock,
    /// The account's nodes, when the script has an `account` step.
    account: Option<account::AccountNodes>,
}

/// The Cosmos containers a script's requests name: the account's replicas
/// hold them from the start.
fn cosmos_containers(script: &Script) -> Vec<String> {
    let names: BTreeSet<String> = script
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::CosmosCreate(op)
            | Step::CosmosRead(op)
            | Step::CosmosReplace(op)
            | Step::CosmosUpsert(op)
            | Step::CosmosDelete(op) => Some(op.container.clone()),
            Step::CosmosBatch(b) => Some(b.container.clone()),
            _ => None,
        })
        .collect();
    names.into_iter().collect()
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

async fn run_steps(script: &Script, ctx: &RunCtx) -> ScriptOutcome {
    let cfg = ClientConfig {
        servers: vec![ctx.relay],
        partitions: 1,
        retry: RetryOptions::default(),
        bugs: ctx.bugs,
        send: Default::default(),
        // An `inject` of `connection_refused` refuses the client's connects.
        connect: ListenTable(Some(Arc::new(RefusedConnects(ctx.injections.clone())))),
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
    let mut in_account: Option<account::AccountClient> = None;
    let mut cancel_after_ms: Option<u64> = None;
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
                ctx.disk.crash(false, n as u64 + 1);
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
            Step::CancelNextCall(c) => {
                // Validated with the script.
                cancel_after_ms = Some(parse_duration(&c.after).unwrap_or(0).max(0) as u64);
                continue;
            }
            Step::Inject(j) => {
                let mut injections = ctx.injections.lock().unwrap_or_else(|e| e.into_inner());
                injections.pending = Some(j.clone());
                injections.left = j.count;
                continue;
            }
            Step::Account(a) => {
                let Some(nodes) = &ctx.account else {
                    return ScriptOutcome::Error {
                        message: format!("step {n}: the account was not deployed"),
                    };
                };
                match account::connect(a, nodes, ctx).await {
                    Ok(c) => in_account = Some(c),
                    Err(message) => {
                        return ScriptOutcome::Error {
                            message: format!("step {n}: {message}"),
                        }
                    }
                }
                continue;
            }
            _ => {}
        }
        let (request, target, described) = match build_request(step, &state, &mut client) {
            Ok(r) => r,
            Err(message) => {
                return ScriptOutcome::Error {
                    message: format!("step {n}: {message}"),
                }
            }
        };
        let answer = match (&mut in_account, &request) {
            (Some(_), Request::Cosmos(_)) if cancel_after_ms.is_some() => {
                return ScriptOutcome::Error {
                    message: format!(
                        "step {n}: cancel_next_call: the multi-region client's calls are not cancelled"
                    ),
                };
            }
            (Some(account), Request::Cosmos(_)) => {
                match account.call(&request, step.kind()).await {
                    Ok(answer) => answer,
                    Err(message) => {
                        return ScriptOutcome::Error {
                            message: format!("step {n}: {message}"),
                        }
                    }
                }
            }
            _ => {
                let cancel_at_ns = cancel_after_ms
                    .take()
                    .map(|ms| sim_now_ns().saturating_add(ms.saturating_mul(1_000_000)));
                let result = client.request_until(&request, cancel_at_ns).await;
                let status = match result.outcome {
                    FinalOutcome::Response { status } | FinalOutcome::Unknown { status } => status,
                    // A cancelled call has no status.
                    FinalOutcome::Cancelled { .. } => 0,
                };
                Answer {
                    outcome: result.outcome,
                    attempts: result.attempts.len(),
                    // The first attempt waits for nothing.
                    waits: result
                        .attempts
                        .iter()
                        .skip(1)
                        .map(|a| a.waited.as_millis() as u64)
                        .collect(),
                    regions: None,
                    observed: Observed::of(status, result.response.as_ref(), step.kind()),
                }
            }
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

/// The resource name of a blob, `container/blob`.
fn blob_resource(container: &str, blob: &str) -> String {
    format!("{container}/{blob}")
}

/// The request of a request step, what it addresses, and the request as a
/// line (the step's kind, the resource, and the headers with captured names
/// resolved). This is the one match that sends a step to its service's file.
fn build_request(
    step: &Step,
    state: &State,
    client: &mut StoreClient,
) -> Result<(Request, Target, String), String> {
    let kind = step.kind();
    Ok(match step {
        Step::CreateContainer(_)
        | Step::PutBlob(_)
        | Step::GetBlob(_)
        | Step::DeleteBlob(_)
        | Step::GetBlobProperties(_)
        | Step::SetBlobMetadata(_) => {
            let (r, target) = blob::request(step, state)?;
            let described = blob::describe(kind, &r);
            (Request::Store(r), target, described)
        }
        Step::LeaseBlob(_)
        | Step::LeaseContainer(_)
        | Step::DeleteContainer(_)
        | Step::SetContainerMetadata(_) => {
            let (r, target) = lease::request(step, state)?;
            let described = lease::describe(kind, &r);
            (Request::Lease(r), target, described)
        }
        Step::CosmosCreate(_)
        | Step::CosmosRead(_)
        | Step::CosmosReplace(_)
        | Step::CosmosUpsert(_)
        | Step::CosmosDelete(_)
        | Step::CosmosBatch(_) => {
            let (r, target) = cosmos::request(step, state)?;
            let described = cosmos::describe(kind, &r);
            (Request::Cosmos(r), target, described)
        }
        Step::SearchGet(_) | Step::SearchPut(_) | Step::SearchDelete(_) => {
            let (r, target) = search::request(step, state, client)?;
            let described = search::describe(kind, &r);
            (Request::Search(r), target, described)
        }
        Step::QueueCreateDatasource(_)
        | Step::QueuePush(_)
        | Step::QueuePoll(_)
        | Step::QueueIndex(_)
        | Step::QueueDelete(_)
        | Step::QueueUnreserve(_)
        | Step::QueueDeleteQueueItems(_)
        | Step::QueueGetOperation(_) => {
            let (r, target) = queue::request(step, state)?;
            let described = queue::describe(kind, &r);
            (Request::Queue(r), target, described)
        }
        Step::FeedRanges(_) | Step::FeedRead(_) | Step::FeedSplit(_) => {
            let (r, target) = feed::request(step, state)?;
            let described = feed::describe(kind, &r);
            (Request::Feed(r), target, described)
        }
        Step::Advance(_)
        | Step::CrashServer(_)
        | Step::DropNextReply(_)
        | Step::CancelNextCall(_)
        | Step::Inject(_)
        | Step::Account(_) => return Err("not a request".into()),
    })
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

/// `x-ms-lease-id` as sent, when the step names one.
fn lease_header(id: &Option<String>, state: &State) -> Result<Option<String>, String> {
    id.as_deref().map(|v| lease_value(v, state)).transpose()
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
