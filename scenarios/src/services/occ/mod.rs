//! The `occ` scenario (optimistic concurrency, SPEC §1 and §4): servers
//! holding the store's partitions, clients doing reads, conditional reads,
//! blind writes, creates, read–modify–writes, conditional deletes,
//! conditional HEADs and Set Blob Metadata over a few items with a hot one. Checked: linearizability of every item (E2–E5),
//! ETag freshness (E1), retry discipline (R1–R3), liveness.

pub mod check;
pub mod coverage;
pub mod goals;
pub mod history;
pub mod properties;
pub mod retry;
pub mod spec;
pub mod timeline;
pub mod workload;

use crate::kit::bridge::ListenAdapter;
use crate::kit::bridge::{NetworkAdapter, NetworkCounts};
use crate::kit::client::SdkSetup;
use crate::kit::durability::{Acknowledgement, Durability, LogSink};
use crate::kit::server::{ServerSetup, StreamNames};
use check::{
    EtagFreshness, Increments, Linearizability, OccHistory, ProbeLiveness, ProbeSetup,
    RetryDiscipline,
};
use history::{OccEvent, OccRecorder};
use overcast_harness::bug::BugInfo;
use overcast_harness::params::{self, ParamError, SizeLimit};
use overcast_harness::registry::{
    halve, once, Deployment, Reduction, RunCtx, RunDefaults, ScenarioDef,
};
use overcast_model::retry::RetryOptions;
use overcast_model::server::{FaultRates, ServerStats};
use overcast_sim::check::Checker;
use overcast_sim::faults::FaultMix;
use overcast_sim::history::NodeEvent;
use overcast_sim::lin;
use overcast_sim::world::{Role, Topology};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The container every item lives in.
pub const CONTAINER: &str = "docs";

/// Name of item `i`; each item is its own partition key, so items spread over partitions.
pub fn item_name(i: usize) -> String {
    format!("k{i}")
}

/// Name of counter item `i` in a run with these servers and partitions:
/// touched only by increments (token appends) and the probe, so its final
/// body can be checked against what was acknowledged. `n{i}`, or the first
/// `n{i}.{j}` that lives on server `i % servers`, so the counters spread
/// over the servers and one server unavailable by design never leaves the
/// increments check with nothing to judge.
pub fn counter_name(i: usize, servers: usize, partitions: u32) -> String {
    let servers = servers.max(1);
    let on = |name: &str| {
        overcast_model::wire::partition_of(name, partitions) as usize % servers == i % servers
    };
    (0..64)
        .map(|j| match j {
            0 => format!("n{i}"),
            j => format!("n{i}.{j}"),
        })
        .find(|name| on(name))
        .unwrap_or_else(|| format!("n{i}"))
}

/// The names of every counter item of a run ([`counter_name`]).
pub fn counter_names(p: &OccParams) -> Vec<String> {
    (0..p.counters)
        .map(|i| counter_name(i, p.servers, p.partitions))
        .collect()
}

/// Relative weights of the operations a client picks from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpMix {
    /// Plain reads.
    pub read: u32,
    /// Unconditional puts (last writer wins).
    pub blind_write: u32,
    /// Puts with `If-None-Match: *`.
    pub create: u32,
    /// Read–modify–write through the SDK helper (read, then put with `If-Match`).
    pub read_modify_write: u32,
    /// Deletes with `If-Match` on the last ETag the client saw (plain delete if none).
    pub conditional_delete: u32,
    /// Reads with `If-None-Match` on the last ETag the client saw (304 if unchanged).
    #[serde(default)]
    pub conditional_read: u32,
    /// Increments of a counter item: a read–modify–write appending the
    /// client's own token to the body.
    #[serde(default)]
    pub increment: u32,
    /// Puts with `If-Match` of the body the item already has (it must still
    /// get a fresh ETag).
    #[serde(default)]
    pub same_body: u32,
    /// Requests with the other condition shapes of SPEC §1.1.3/§1.1.4: dates
    /// (from the client's own clock or a Last-Modified it saw), several ETags
    /// in one header, `If-Match` on reads, illegal combinations.
    #[serde(default)]
    pub conditions: u32,
    /// HEADs (Get Blob Properties) with `If-Match` / `If-None-Match` on the
    /// last ETag the client saw or the one before it, or a date.
    #[serde(default)]
    pub head: u32,
    /// Set Blob Metadata, mostly with `If-Match` on the last ETag the client
    /// saw (sometimes the one before it, a date, or none).
    #[serde(default)]
    pub set_metadata: u32,
}

impl Default for OpMix {
    fn default() -> Self {
        OpMix {
            read: 20,
            blind_write: 15,
            create: 15,
            read_modify_write: 30,
            conditional_delete: 10,
            conditional_read: 10,
            increment: 15,
            same_body: 5,
            conditions: 10,
            head: 10,
            set_metadata: 10,
        }
    }
}

/// The parameters of `occ`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OccParams {
    /// Server nodes.
    pub servers: usize,
    /// Client nodes (each runs one sequential workload).
    pub clients: usize,
    /// Partitions the key space is split into (spread over the servers).
    pub partitions: u32,
    /// Distinct items the workload touches.
    pub keys: usize,
    /// Percentage of operations that go to the hot item `k0`.
    pub hot_key_percent: u32,
    /// Operations each client starts (a read–modify–write counts once).
    pub ops_per_client: usize,
    /// Operation weights.
    pub mix: OpMix,
    /// Tries of the read–modify–write helper before it gives up.
    pub rmw_max_tries: u32,
    /// Server fault points (429, 449, 503, 410, 408).
    pub server_faults: FaultRates,
    /// The SDK's retry budgets and request timeout.
    pub retry: RetryOptions,
    /// Log sync latency range, ms.
    pub fsync_ms: (u64, u64),
    /// Counter items (`n0`, `n1`, ...) the increments go to.
    #[serde(default = "default_counters")]
    pub counters: usize,
    /// The probe's bound: after the heal, every item must have been read and
    /// conditionally written within this many ms (the run's quiet phase must
    /// be longer).
    #[serde(default = "default_probe_bound_ms")]
    pub probe_bound_ms: u64,
    /// Whether the probe runs after the heal. The shrinker turns it off when
    /// a failure does not need it (the probe's calls are part of the check,
    /// not of the workload); without it the increments and liveness checks,
    /// which judge the probe's reads, are not run.
    #[serde(default = "probe_on", skip_serializing_if = "is_probe_on")]
    pub probe: bool,
    /// The throttling variant (`overcast run occ --throttle`): the servers
    /// also answer in storms per partition, 429s (more of them without a
    /// retry-after, or with 0) and 410 streaks, long enough to spend the 429
    /// budget and the 410 window (see [`throttled_faults`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub throttle: bool,
}

/// Turns `s`, a run of `occ`, into its throttling variant (`--throttle`).
pub fn throttled(s: &mut overcast_harness::scenario::Scenario) -> Result<(), String> {
    if s.name != "occ" {
        return Err(format!("--throttle is for occ only, not {}", s.name));
    }
    let params = s
        .params
        .as_object_mut()
        .ok_or("occ's parameters are not an object")?;
    params.insert("throttle".into(), serde_json::Value::Bool(true));
    Ok(())
}

/// The server fault points of the throttling variant: `base` with storms
/// per partition until `until_ms` (true time: the workload's deadline), half
/// the 429s without a useful retry-after (none or 0: the 5 s default), the
/// others asking up to 3 s, and few 410s that end the window early
/// (410/1022 is 503 at once, a third 410/1000 is 503).
pub fn throttled_faults(base: &FaultRates, until_ms: u64) -> FaultRates {
    FaultRates {
        retry_after_ms: (100, 3_000),
        throttle_without_retry_after: 0.25,
        throttle_zero_retry_after: 0.25,
        gone_name_cache_stale: 0.02,
        gone_lease_not_found: 0.02,
        storms: Some(overcast_model::server::Storms {
            throttle: 0.004,
            gone: 0.004,
            duration_ms: (2_000, 40_000),
            until_ms,
        }),
        ..base.clone()
    }
}

fn probe_on() -> bool {
    true
}

fn is_probe_on(on: &bool) -> bool {
    *on
}

fn default_counters() -> usize {
    2
}

fn default_probe_bound_ms() -> u64 {
    // About 30 calls in sequence, a few of which may wait out a 6 s timeout.
    60_000
}

impl Default for OccParams {
    /// 2 servers, 4 partitions, 8 clients doing 100 operations each over 8
    /// items with 30% on the hot one, every server fault point on.
    fn default() -> Self {
        OccParams {
            servers: 2,
            clients: 8,
            partitions: 4,
            keys: 8,
            hot_key_percent: 30,
            ops_per_client: 100,
            mix: OpMix::default(),
            rmw_max_tries: 5,
            server_faults: crate::kit::server::default_server_faults(),
            retry: RetryOptions::default(),
            fsync_ms: (1, 3),
            counters: default_counters(),
            probe_bound_ms: default_probe_bound_ms(),
            probe: true,
            throttle: false,
        }
    }
}

/// The linearizability checker's budget inside a run, in search steps per
/// item (not seconds: the same seed gets the same verdict and report on any
/// machine, however loaded). The hardest `occ` seed of 0..300 took about
/// 8,000 when this was set.
pub const LIN_MAX_STEPS: u64 = 5_000_000;

/// How much of the profile's rates of corrupting writes (bit flips on
/// write, misdirected writes) `occ` keeps: see [`Occ`]'s `adjust_plan`.
pub const CORRUPT_WRITE_SCALE: f64 = 0.01;

overcast_sim::node_roles! {
    /// The kinds of node of the `occ` scenario.
    pub enum OccRole {
        /// The storage servers.
        Server = "server",
        /// The workload's SDK clients.
        Client = "client",
        /// The liveness probe, a check's own client.
        Probe = "probe",
    }
}

/// The `occ` scenario.
pub struct Occ;

/// One server incarnation's name and the stats it keeps.
type NodeStats = (String, Arc<Mutex<ServerStats>>);

/// Locks a mutex, also after a panic elsewhere (the data is a plain set).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ScenarioDef for Occ {
    type Params = OccParams;
    type History = OccHistory;

    fn bugs(&self) -> Vec<&'static BugInfo> {
        crate::bugs::of(ScenarioDef::name(self))
    }
    fn hunt_profile(&self, bug: &str) -> &'static str {
        crate::bugs::hunt_profile(bug)
    }
    fn variant(&self, p: &Self::Params) -> Option<&'static str> {
        p.throttle.then_some("throttle")
    }
    fn budget(&self) -> overcast_sim::faults::FaultBudget {
        // Each server keeps one copy of its partitions' log and refuses them
        // once it finds it corrupt: with every server's log corrupt nothing
        // is left to judge the probe and the increments on.
        overcast_sim::faults::FaultBudget {
            promise: "storage corruption (bit flips on write, misdirected and lost writes) on the disk of at most one server in a run, and never on every server's, so some server always serves; every other fault of the mix".into(),
            corrupt_disks: Some(1),
            intact_disks: 1,
            spared: Vec::new(),
            per_node: false,
        }
    }

    fn name(&self) -> &'static str {
        "occ"
    }

    fn describe(&self) -> &'static str {
        "ETag optimistic concurrency on the object store (SPEC §1, §4): linearizability, E1, R1–R3"
    }

    fn params(&self, _seed: u64) -> OccParams {
        OccParams::default()
    }

    fn defaults(&self) -> RunDefaults {
        RunDefaults {
            faults: FaultMix::default(),
            // Spread over the whole workload (about 30 s of simulated time).
            fault_window_ms: 30_000,
            deadline_ms: 60_000,
            // The probe runs in the quiet phase: its bound plus a margin.
            quiet_ms: default_probe_bound_ms() + 5_000,
        }
    }

    fn strategy(&self) -> BoxedStrategy<OccParams> {
        (
            1usize..=3,
            1usize..=8,
            1u32..=6,
            1usize..=6,
            0u32..=80,
            5usize..=60,
        )
            .prop_map(|(servers, clients, partitions, keys, hot, ops)| OccParams {
                servers,
                clients,
                partitions,
                keys,
                hot_key_percent: hot,
                ops_per_client: ops,
                ..OccParams::default()
            })
            .boxed()
    }

    /// Sizes beyond these were never run: a run takes minutes or its checks
    /// give up (measured: each limit alone runs in seconds).
    fn limits(&self) -> &'static [SizeLimit] {
        const LIMITS: &[SizeLimit] = &[
            SizeLimit::new("servers", 16),
            SizeLimit::new("clients", 32),
            SizeLimit::new("partitions", 64),
            SizeLimit::new("keys", 1000),
            SizeLimit::new("counters", 1000),
            SizeLimit::new("ops_per_client", 1000),
        ];
        LIMITS
    }

    fn validate(&self, p: &OccParams) -> Result<(), ParamError> {
        params::at_least_one(&[("servers", p.servers as u64), ("clients", p.clients as u64)])?;
        params::at_least_one(&[
            ("partitions", u64::from(p.partitions)),
            ("keys", p.keys as u64),
        ])?;
        if p.hot_key_percent > 100 {
            return Err(ParamError::new("hot_key_percent must be at most 100"));
        }
        let m = &p.mix;
        if m.read
            + m.blind_write
            + m.create
            + m.read_modify_write
            + m.conditional_delete
            + m.conditional_read
            + m.increment
            + m.same_body
            + m.conditions
            + m.head
            + m.set_metadata
            == 0
        {
            return Err(ParamError::new("the op mix has no weight"));
        }
        if m.increment > 0 && p.counters == 0 {
            return Err(ParamError::new(
                "the op mix has increments but there are no counters",
            ));
        }
        params::ordered(&[("fsync_ms", p.fsync_ms)])
    }

    fn header(&self, p: &OccParams) -> String {
        let f = &p.server_faults;
        format!(
            "servers={} clients={} partitions={} keys={} hot_key={}% ops/client={} rmw_tries={}{}\n\
             server  429={} (no retry-after {}, zero {}) 449={} 503={} 410={} (1000 {}, 1002 {}, 1022 {}) 408={} fsync={}..{} ms; request timeout {} ms",
            p.servers,
            p.clients,
            p.partitions,
            p.keys,
            p.hot_key_percent,
            p.ops_per_client,
            p.rmw_max_tries,
            match (p.probe, p.throttle) {
                (true, false) => "",
                (false, false) => " probe=off",
                (true, true) => " throttle=storms",
                (false, true) => " probe=off throttle=storms",
            },
            f.throttle,
            f.throttle_without_retry_after,
            f.throttle_zero_retry_after,
            f.retry_with,
            f.unavailable,
            f.gone,
            f.gone_name_cache_stale,
            f.gone_range_gone,
            f.gone_lease_not_found,
            f.timeout,
            p.fsync_ms.0,
            p.fsync_ms.1,
            p.retry.request_timeout.as_millis(),
        )
    }

    fn topology(&self, p: &OccParams) -> Topology {
        Topology::new(vec![
            Role::new(OccRole::Server, p.servers)
                .with_disk()
                .crashable(),
            Role::new(OccRole::Client, p.clients).awaited().crashable(),
            Role::new(OccRole::Probe, 1),
        ])
    }

    fn adjust_plan(&self, _p: &OccParams, plan: &mut overcast_sim::faults::FaultPlan) {
        // A bit flipped in a written record, or a record written elsewhere,
        // makes the next recovery of its server find the log corrupt, and a
        // server with one replica then refuses everything for the rest of the
        // run (by design; the checks excuse its items and say so). At the
        // shared rates most runs would lose a server that way and the probe
        // and the increments would judge little: occ keeps these two rare in
        // every profile, swarm included.
        plan.storage.flip_on_write *= CORRUPT_WRITE_SCALE;
        plan.storage.misdirected_write *= CORRUPT_WRITE_SCALE;
        plan.storage.lost_write *= CORRUPT_WRITE_SCALE;
    }

    fn deploy(&self, p: &OccParams, ctx: &RunCtx) -> Deployment<OccHistory> {
        let bugs = crate::bugs::model_bugs(&ctx.bugs);
        // Each server incarnation's stats, by its incarnation name: summed
        // into the run's counters, and its recoveries become node events.
        let stats: Arc<Mutex<Vec<NodeStats>>> = Arc::default();
        let network_counts = NetworkCounts::default();
        let program_network_counts = network_counts.clone();
        // What the servers do with their logs (D1).
        let logs = LogSink::new();
        let program_logs = logs.clone();
        // Room for every call: read–modify–writes make two or more per operation.
        let recorder = OccRecorder::with_capacity(p.clients * p.ops_per_client * 2);
        let params = p.clone();
        let program_stats = stats.clone();
        let program_recorder = recorder.clone();
        // The clients (by index) that finished their workload: the probe starts
        // after the last.
        let finished: Arc<Mutex<BTreeSet<usize>>> = Arc::default();
        let program = Box::new(move |env: overcast_sim::world::NodeEnv| {
            let p = params.clone();
            let all_stats = program_stats.clone();
            let recorder = program_recorder.clone();
            let send = NetworkAdapter::policy(&env, &program_network_counts);
            let fut: overcast_harness::registry::NodeFuture = if env.role_as::<OccRole>()
                == OccRole::Server
            {
                // Every receipt is kept: the retry checks judge from them.
                let stats = Arc::new(Mutex::new(ServerStats {
                    receipts: Some(Vec::new()),
                    ..ServerStats::default()
                }));
                lock(&all_stats).push((env.incarnation_name(), stats.clone()));
                ServerSetup::new(
                    vec![CONTAINER.to_string()],
                    // The variant's storms end by the workload's deadline.
                    if p.throttle {
                        throttled_faults(&p.server_faults, env.deadline.as_millis() as u64)
                    } else {
                        p.server_faults.clone()
                    },
                    p.fsync_ms,
                    bugs,
                    StreamNames::ByIndex,
                )
                .program_on_own_disk(&env, send, &program_logs, stats)
            } else if env.role_as::<OccRole>() == OccRole::Probe && !p.probe {
                Box::pin(async {})
            } else if env.role_as::<OccRole>() == OccRole::Probe {
                let finished = finished.clone();
                let items: Vec<String> = (0..p.keys)
                    .map(item_name)
                    .chain(counter_names(&p))
                    .collect();
                Box::pin(async move {
                    // The world heals every fault (mends links, resumes paused
                    // nodes, restarts crashed ones) at its next poll (every
                    // 250 ms) once every client is done, or at the deadline,
                    // before the last client finishes. A restarted server
                    // then waits out its quiet time (the longest a datagram
                    // can be on its way) before it listens. Start after all
                    // of that. (Clients that never finish are the world's own
                    // liveness failure.)
                    while lock(&finished).len() < p.clients {
                        madsim::time::sleep(Duration::from_millis(100)).await;
                    }
                    madsim::time::sleep(Duration::from_millis(600) + env.max_in_flight()).await;
                    let end_ns =
                        overcast_model::client::sim_now_ns() + p.probe_bound_ms * 1_000_000;
                    // One probe per item, all at once, each a client of its own.
                    let mut probes = Vec::new();
                    for (i, item) in items.into_iter().enumerate() {
                        let sdk = SdkSetup {
                            servers: &OccRole::Server,
                            partitions: p.partitions,
                            retry: &p.retry,
                            bugs,
                            send: send.clone(),
                            connect: ListenAdapter::table(&env),
                        };
                        let Some(mut client) = sdk.connect(&env, &format!("probe-{i}-sdk")).await
                        else {
                            continue;
                        };
                        let recorder = recorder.clone();
                        probes.push(madsim::task::spawn_local(async move {
                            workload::probe(
                                item,
                                workload::PROBE_CLIENT + i,
                                &mut client,
                                recorder,
                                end_ns,
                            )
                            .await;
                        }));
                    }
                    for probe in probes {
                        let _ = probe.await;
                    }
                })
            } else {
                let finished = finished.clone();
                Box::pin(async move {
                    // A client restarted after it finished its work has none left.
                    if lock(&finished).contains(&env.index) {
                        return;
                    }
                    let sdk = SdkSetup {
                        servers: &OccRole::Server,
                        partitions: p.partitions,
                        retry: &p.retry,
                        bugs,
                        send,
                        connect: ListenAdapter::table(&env),
                    };
                    let name = format!("client-{}-sdk-{}", env.index, env.incarnation);
                    let Some(mut client) = sdk.connect(&env, &name).await else {
                        return;
                    };
                    // A restarted client is a new process: a fresh identity.
                    let id = overcast_harness::registry::history_client(
                        env.index,
                        env.incarnation,
                        p.clients,
                    );
                    let deadline_ns = env.deadline.as_nanos() as u64;
                    workload::client_workload(
                        p,
                        env.seed,
                        id,
                        &mut client,
                        recorder,
                        deadline_ns,
                        env.clock.clone(),
                    )
                    .await;
                    lock(&finished).insert(env.index);
                })
            };
            fut
        });
        let collect_retry = p.retry.clone();
        let collect = Box::new(move |world: &overcast_sim::world::WorldOutcome| {
            let mut events = world.events.clone();
            events.extend(check::lost_item_events(world));
            events.extend(check::damaged_disk_events(world));
            let mut history = recorder.take_history(events).with_log_events(logs.take());
            let mut counters: std::collections::BTreeMap<String, u64> = Default::default();
            let (mut duplicates, mut fsync_errors, mut unavailable) = (0, 0, 0);
            let (mut max_unsynced, mut shared_syncs, mut held_reads) = (0, 0, 0);
            let (mut storms_429, mut storms_410) = (0, 0);
            // An incarnation followed by another of the same server was
            // killed: what it had unsynced then was at risk.
            let all_stats = lock(&stats);
            let mut crash_unsynced_max = 0;
            let server_of = |node: &str| node.split('#').next().unwrap_or(node).to_string();
            for (i, (node, stats)) in all_stats.iter().enumerate() {
                let s = lock(stats);
                let restarted = all_stats[i + 1..]
                    .iter()
                    .any(|(later, _)| server_of(later) == server_of(node));
                if restarted {
                    crash_unsynced_max = crash_unsynced_max.max(s.unsynced);
                }
            }
            for (node, stats) in all_stats.iter() {
                let stats = lock(stats);
                max_unsynced = max_unsynced.max(stats.max_unsynced);
                shared_syncs += stats.shared_syncs;
                held_reads += stats.held_reads;
                storms_429 += stats.storms.get(&429).copied().unwrap_or(0);
                storms_410 += stats.storms.get(&410).copied().unwrap_or(0);
                for (status, n) in &stats.transient {
                    *counters.entry(status.to_string()).or_default() += n;
                }
                duplicates += stats.duplicates;
                fsync_errors += stats.fsync_errors;
                unavailable += stats.unavailable.len() as u64;
                history
                    .node_events
                    .extend(stats.recoveries.iter().map(|r| NodeEvent {
                        node: node.clone(),
                        at_ns: r.at_ns,
                        local_ms: r.local_ms,
                        event: match &r.unavailable {
                            None => OccEvent::Serving {
                                replayed: r.replayed,
                            },
                            Some(reason) => OccEvent::Unavailable {
                                reason: reason.clone(),
                            },
                        },
                    }));
                history
                    .node_events
                    .extend(stats.receipts.iter().flatten().map(|r| NodeEvent {
                        node: node.clone(),
                        at_ns: r.at_ns,
                        local_ms: r.local_ms,
                        event: OccEvent::Received(r.clone()),
                    }));
            }
            history.node_events.sort_by_key(|e| e.at_ns);
            counters.extend(
                network_counts
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .map(|(k, n)| (k.clone(), *n)),
            );
            for (name, n) in [
                ("duplicates_answered", duplicates),
                ("fsync_errors_seen", fsync_errors),
                ("unavailable_startups", unavailable),
                ("max_unsynced_records", max_unsynced),
                ("shared_syncs", shared_syncs),
                ("reads_held_for_sync", held_reads),
                ("unsynced_at_crash_max", crash_unsynced_max),
                ("storms_429", storms_429),
                ("storms_410", storms_410),
            ]
            .into_iter()
            .chain(retry::budgets_spent(&history, &collect_retry))
            {
                if n > 0 {
                    counters.insert(name.into(), n);
                }
            }
            (history, counters)
        });
        Deployment {
            program,
            collect,
            resolver: None,
        }
    }

    fn checkers(&self, p: &OccParams) -> Vec<Box<dyn Checker<OccHistory>>> {
        let probe = ProbeSetup {
            servers: p.servers,
            partitions: p.partitions,
            items: (0..p.keys).map(item_name).chain(counter_names(p)).collect(),
            bound_ms: p.probe_bound_ms,
        };
        let mut checkers: Vec<Box<dyn Checker<OccHistory>>> = vec![
            Box::new(Linearizability {
                options: lin::Options {
                    max_steps: Some(LIN_MAX_STEPS),
                    parallel: false,
                    time_unit: lin::TimeUnit::Nanos,
                    ..lin::Options::default()
                },
                title: "overcast occ".into(),
            }),
            Box::new(EtagFreshness),
            Box::new(RetryDiscipline {
                retry: p.retry.clone(),
                clients: p.clients,
            }),
            Box::new(retry::RetryFromServers {
                retry: p.retry.clone(),
            }),
        ];
        if p.probe {
            checkers.push(Box::new(Increments {
                probe: probe.clone(),
            }));
            checkers.push(Box::new(ProbeLiveness { probe }));
        }
        checkers.push(Box::new(Durability::linking(answered_operation)));
        checkers
    }

    fn timeline(
        &self,
        p: &OccParams,
        h: &check::OccHistory,
        t: &mut overcast_sim::timeline::Timeline,
    ) {
        timeline::draw(h, p.clients, t);
    }

    fn goals(&self, _p: &OccParams) -> Vec<overcast_harness::goals::Goal<Self::History>> {
        goals::goals()
    }

    fn coverage(&self) -> Option<overcast_harness::registry::CoverageOf<OccHistory>> {
        Some(overcast_harness::registry::CoverageOf {
            tables: coverage::TABLES,
            count: coverage::of,
        })
    }

    fn reductions(&self) -> Vec<Reduction<OccParams>> {
        vec![
            ("no liveness probe", |p, i| {
                once(i, || {
                    p.probe.then(|| OccParams {
                        probe: false,
                        ..p.clone()
                    })
                })
            }),
            ("halve the clients", |p, i| {
                once(i, || {
                    halve(p.clients, 1).map(|c| OccParams {
                        clients: c,
                        ..p.clone()
                    })
                })
            }),
            ("one client fewer", |p, i| {
                once(i, || {
                    (p.clients > 1).then(|| OccParams {
                        clients: p.clients - 1,
                        ..p.clone()
                    })
                })
            }),
            ("halve the operations", |p, i| {
                once(i, || {
                    halve(p.ops_per_client, 1).map(|n| OccParams {
                        ops_per_client: n,
                        ..p.clone()
                    })
                })
            }),
            ("a tenth fewer operations", |p, i| {
                once(i, || {
                    let fewer = p.ops_per_client - (p.ops_per_client / 10).max(1);
                    (p.ops_per_client > 1).then(|| OccParams {
                        ops_per_client: fewer,
                        ..p.clone()
                    })
                })
            }),
            ("halve the items", |p, i| {
                once(i, || {
                    halve(p.keys, 1).map(|k| OccParams {
                        keys: k,
                        ..p.clone()
                    })
                })
            }),
            ("no server fault points", |p, i| {
                once(i, || {
                    let f = &p.server_faults;
                    (f.throttle + f.retry_with + f.unavailable + f.gone + f.timeout > 0.0).then(
                        || OccParams {
                            server_faults: FaultRates {
                                throttle: 0.0,
                                retry_with: 0.0,
                                unavailable: 0.0,
                                gone: 0.0,
                                timeout: 0.0,
                                ..p.server_faults.clone()
                            },
                            ..p.clone()
                        },
                    )
                })
            }),
            ("one server fewer", |p, i| {
                once(i, || {
                    (p.servers > 1).then(|| OccParams {
                        servers: p.servers - 1,
                        ..p.clone()
                    })
                })
            }),
        ]
    }
}

/// The operation a server's acknowledgement answered (D1): the workload's
/// call that carries the attempt's operation id.
fn answered_operation(h: &check::OccHistory, a: &Acknowledgement) -> Option<u64> {
    let overcast_model::durability::Reply::Attempt { operation, .. } = a.reply else {
        return None;
    };
    h.ops
        .iter()
        .find(|o| o.call.operation == Some(operation))
        .map(|o| o.id)
}
