//! The `occ` scenario (optimistic concurrency, SPEC §1 and §4): servers
//! holding the store's partitions, clients doing reads, conditional reads,
//! blind writes, creates, read–modify–writes and conditional deletes over a
//! few items with a hot one. Checked: linearizability of every item (E2–E5),
//! ETag freshness (E1), retry discipline (R1–R3), liveness.

pub mod check;
pub mod history;
pub mod retry;
pub mod spec;
pub mod timeline;
pub mod workload;

use crate::bridge::{ClockAdapter, DiskAdapter, NetworkAdapter, NetworkCounts};
use crate::registry::{halve, once, Deployment, Reduction, RunCtx, RunDefaults, ScenarioDef};
use check::{EtagFreshness, Linearizability, OccHistory, RetryDiscipline};
use history::{Call, Outcome};
use overcast_model::client::{ClientConfig, StoreClient};
use overcast_model::retry::RetryOptions;
use overcast_model::server::{serve, FaultRates, ServerConfig, ServerStats};
use overcast_sim::check::Checker;
use overcast_sim::faults::FaultMix;
use overcast_sim::history::Recorder;
use overcast_sim::lin;
use overcast_sim::rng::stream;
use overcast_sim::world::{Role, Topology};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The container every item lives in.
pub const CONTAINER: &str = "docs";

/// Name of item `i`; each item is its own partition key, so items spread over partitions.
pub fn item_name(i: usize) -> String {
    format!("k{i}")
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
            server_faults: FaultRates {
                throttle: 0.02,
                retry_after_ms: (1, 200),
                retry_with: 0.01,
                unavailable: 0.01,
                gone: 0.01,
                timeout: 0.01,
                gone_name_cache_stale: 0.2,
                gone_range_gone: 0.2,
                gone_lease_not_found: 0.1,
                throttle_without_retry_after: 0.1,
                throttle_zero_retry_after: 0.1,
            },
            retry: RetryOptions::default(),
            fsync_ms: (1, 3),
        }
    }
}

/// The linearizability checker's budget inside a run, in search steps per
/// item (not seconds: the same seed gets the same verdict and report on any
/// machine, however loaded). The hardest `occ` seed of 0..300 took about
/// 8,000 when this was set.
pub const LIN_MAX_STEPS: u64 = 5_000_000;

/// The `occ` scenario.
pub struct Occ;

impl ScenarioDef for Occ {
    type Params = OccParams;
    type History = OccHistory;

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
            fault_window_ms: 5_000,
            deadline_ms: 60_000,
            quiet_ms: 1_000,
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

    fn validate(&self, p: &OccParams) -> Result<(), String> {
        if p.servers == 0 || p.servers > 200 {
            return Err("servers must be between 1 and 200".into());
        }
        if p.clients == 0 || p.clients > 1000 {
            return Err("clients must be between 1 and 1000".into());
        }
        if p.partitions == 0 || p.keys == 0 {
            return Err("partitions and keys must be at least 1".into());
        }
        if p.hot_key_percent > 100 {
            return Err("hot_key_percent must be at most 100".into());
        }
        let m = &p.mix;
        if m.read
            + m.blind_write
            + m.create
            + m.read_modify_write
            + m.conditional_delete
            + m.conditional_read
            == 0
        {
            return Err("the op mix has no weight".into());
        }
        if p.fsync_ms.0 > p.fsync_ms.1 {
            return Err("fsync_ms has its low end above its high end".into());
        }
        Ok(())
    }

    fn header(&self, p: &OccParams) -> String {
        let f = &p.server_faults;
        format!(
            "servers={} clients={} partitions={} keys={} hot_key={}% ops/client={} rmw_tries={}\n\
             server  429={} (no retry-after {}, zero {}) 449={} 503={} 410={} (1000 {}, 1002 {}, 1022 {}) 408={} fsync={}..{} ms; request timeout {} ms",
            p.servers,
            p.clients,
            p.partitions,
            p.keys,
            p.hot_key_percent,
            p.ops_per_client,
            p.rmw_max_tries,
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
            Role::new("server", p.servers).with_disk().crashable(),
            Role::new("client", p.clients).awaited(),
        ])
    }

    fn deploy(&self, p: &OccParams, ctx: &RunCtx) -> Deployment<OccHistory> {
        let bugs = crate::bugs::model_bugs(&ctx.bugs);
        let stats = Arc::new(Mutex::new(ServerStats::default()));
        let network_counts = NetworkCounts::default();
        let program_network_counts = network_counts.clone();
        // Room for every call: read–modify–writes make two or more per operation.
        let recorder: Recorder<Call, Outcome> =
            Recorder::with_capacity(p.clients * p.ops_per_client * 2);
        let params = p.clone();
        let program_stats = stats.clone();
        let program_recorder = recorder.clone();
        let program = Box::new(move |env: overcast_sim::world::NodeEnv| {
            let p = params.clone();
            let stats = program_stats.clone();
            let recorder = program_recorder.clone();
            let send = NetworkAdapter::policy(&env, &program_network_counts);
            let fut: crate::registry::NodeFuture = if env.role == "server" {
                let cfg = ServerConfig {
                    bind: env.addr(),
                    containers: vec![CONTAINER.to_string()],
                    faults: p.server_faults.clone(),
                    fsync_ms: p.fsync_ms,
                    bugs,
                    send,
                    quiet_after_restart: if env.incarnation == 0 {
                        Duration::ZERO
                    } else {
                        env.max_in_flight()
                    },
                };
                let rng = stream(
                    env.seed,
                    &format!("server-{}-{}", env.index, env.incarnation),
                );
                let disk = env.disk.clone().expect("servers have disks");
                Box::pin(serve(
                    cfg,
                    Arc::new(ClockAdapter(env.clock.clone())),
                    Arc::new(DiskAdapter(disk)),
                    Box::new(rng),
                    stats,
                ))
            } else {
                Box::pin(async move {
                    let cfg = ClientConfig {
                        servers: env.topology.addrs("server"),
                        partitions: p.partitions,
                        retry: p.retry.clone(),
                        bugs,
                        send,
                    };
                    let rng = stream(env.seed, &format!("client-{}-sdk", env.index));
                    let Ok(mut client) = StoreClient::connect(cfg, Box::new(rng)).await else {
                        tracing::error!("client {} could not bind", env.index);
                        return;
                    };
                    // A restarted client is a new process: a fresh identity.
                    let id = env.index + env.incarnation as usize * p.clients;
                    let deadline_ns = env.deadline.as_nanos() as u64;
                    workload::client_workload(
                        p,
                        env.seed,
                        env.index,
                        id,
                        &mut client,
                        recorder,
                        deadline_ns,
                    )
                    .await;
                })
            };
            fut
        });
        let collect = Box::new(move |world: &overcast_sim::world::WorldOutcome| {
            let mut events = world.events.clone();
            events.extend(check::lost_item_events(world));
            let history = recorder.take_history(events);
            let stats = stats.lock().unwrap_or_else(|e| e.into_inner());
            let mut counters: std::collections::BTreeMap<String, u64> = stats
                .transient
                .iter()
                .map(|(status, n)| (status.to_string(), *n))
                .collect();
            counters.extend(
                network_counts
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .map(|(k, n)| (k.clone(), *n)),
            );
            for (name, n) in [
                ("duplicates_answered", stats.duplicates),
                ("fsync_errors_seen", stats.fsync_errors),
                ("unavailable_startups", stats.unavailable.len() as u64),
            ] {
                if n > 0 {
                    counters.insert(name.into(), n);
                }
            }
            (history, counters)
        });
        Deployment { program, collect }
    }

    fn checkers(&self, p: &OccParams) -> Vec<Box<dyn Checker<OccHistory>>> {
        vec![
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
            }),
        ]
    }

    fn check_history_file(
        &self,
        doc: &serde_json::Value,
        opts: &lin::Options,
    ) -> Option<Result<lin::Report, String>> {
        Some(crate::check_file::check_history(doc, opts))
    }

    fn timeline(
        &self,
        _p: &OccParams,
        h: &check::OccHistory,
        t: &mut overcast_sim::timeline::Timeline,
    ) {
        timeline::draw(h, t);
    }

    fn reductions(&self) -> Vec<Reduction<OccParams>> {
        vec![
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
