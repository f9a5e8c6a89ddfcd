//! The `cosmos` scenario (Cosmos DB items, SPEC §1.3 and §4): servers
//! holding the partitions' item state machines, clients doing point reads
//! (also with `if-none-match`), creates, replaces, upserts, deletes,
//! read–modify–writes and transactional batches over a few items in a few
//! partition keys. Checked: linearizability of every item with the dialect's
//! statuses as outputs (E2–E6), `_etag` freshness (E1), batch atomicity,
//! retry discipline (R1–R3), liveness.

pub mod check;
pub mod goals;
pub mod history;
pub mod properties;
pub mod spec;
pub mod timeline;
pub mod workload;

use crate::kit::dialects::StoreRole;
use crate::kit::dialects::{self, RetryDiscipline};
use crate::kit::server::{ServerSetup, StreamNames};
use check::{BatchAtomicity, CosmosHistory, EtagFreshness, Linearizability};
use history::{Call, Outcome};
use overcast_harness::bug::BugInfo;
use overcast_harness::params::{self, ParamError, SizeLimit};
use overcast_harness::registry::{Deployment, Reduction, RunCtx, RunDefaults, ScenarioDef};
use overcast_model::retry::RetryOptions;
use overcast_model::server::{FaultRates, ServerStats};
use overcast_sim::check::Checker;
use overcast_sim::history::Recorder;
use overcast_sim::lin;
use overcast_sim::world::{Role, Topology};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Relative weights of the operations a client picks from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CosmosMix {
    /// Point reads.
    pub read: u32,
    /// Reads with `if-none-match` on the last `_etag` seen.
    pub conditional_read: u32,
    /// Creates.
    pub create: u32,
    /// Replaces (with `if-match` on the last `_etag` seen, most of the time).
    pub replace: u32,
    /// Upserts (with `if-match` most of the time when an `_etag` is known).
    pub upsert: u32,
    /// Deletes (with `if-match` most of the time).
    pub delete: u32,
    /// Read, replace with `if-match`, retry on 412.
    pub read_modify_write: u32,
    /// Transactional batches of two or three items of one partition key.
    pub batch: u32,
}

impl Default for CosmosMix {
    fn default() -> Self {
        CosmosMix {
            read: 15,
            conditional_read: 5,
            create: 10,
            replace: 10,
            upsert: 15,
            delete: 8,
            read_modify_write: 20,
            batch: 17,
        }
    }
}

/// The parameters of `cosmos`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CosmosParams {
    /// Server nodes.
    pub servers: usize,
    /// Client nodes (each runs one sequential workload).
    pub clients: usize,
    /// Partitions the key space is split into.
    pub partitions: u32,
    /// Distinct partition keys.
    pub partition_keys: usize,
    /// Distinct item ids per partition key.
    pub items_per_key: usize,
    /// Operations each client starts (a read–modify–write counts once).
    pub ops_per_client: usize,
    /// Operation weights.
    pub mix: CosmosMix,
    /// Tries of a read–modify–write.
    pub rmw_max_tries: u32,
    /// Server fault points (429, 449, 503, 410, 408).
    pub server_faults: FaultRates,
    /// The SDK's retry budgets and request timeout.
    pub retry: RetryOptions,
    /// Log sync latency range, ms.
    pub fsync_ms: (u64, u64),
}

impl Default for CosmosParams {
    /// 2 servers, 4 partitions, 6 clients doing 60 operations each over 3
    /// partition keys of 3 items, every server fault point on.
    fn default() -> Self {
        CosmosParams {
            servers: 2,
            clients: 6,
            partitions: 4,
            partition_keys: 3,
            items_per_key: 3,
            ops_per_client: 60,
            mix: CosmosMix::default(),
            rmw_max_tries: 5,
            server_faults: crate::kit::server::default_server_faults(),
            retry: RetryOptions::default(),
            fsync_ms: (1, 3),
        }
    }
}

/// The `cosmos` scenario.
pub struct Cosmos;

impl ScenarioDef for Cosmos {
    type Params = CosmosParams;
    type History = CosmosHistory;

    fn bugs(&self) -> Vec<&'static BugInfo> {
        crate::bugs::of(ScenarioDef::name(self))
    }

    fn budget(&self) -> overcast_sim::faults::FaultBudget {
        overcast_sim::faults::FaultBudget::unbounded(
            "every fault of the mix but a lying disk: it loses acknowledged writes by design and the checks do not yet leave the items it lost out",
        )
    }

    fn name(&self) -> &'static str {
        "cosmos"
    }

    fn describe(&self) -> &'static str {
        "Cosmos DB items with _etag and transactional batches (SPEC §1.3, §4): linearizability, E1, batch atomicity, R1–R3"
    }

    fn params(&self, _seed: u64) -> CosmosParams {
        CosmosParams::default()
    }

    fn defaults(&self) -> RunDefaults {
        dialects::run_defaults()
    }

    fn strategy(&self) -> BoxedStrategy<CosmosParams> {
        (
            1usize..=3,
            1usize..=8,
            1u32..=6,
            1usize..=4,
            1usize..=4,
            5usize..=60,
        )
            .prop_map(
                |(servers, clients, partitions, pks, items, ops)| CosmosParams {
                    servers,
                    clients,
                    partitions,
                    partition_keys: pks,
                    items_per_key: items,
                    ops_per_client: ops,
                    ..CosmosParams::default()
                },
            )
            .boxed()
    }

    /// Sizes beyond these were never run: a run takes minutes or its checks
    /// give up (measured: each limit alone runs in seconds).
    fn limits(&self) -> &'static [SizeLimit] {
        const LIMITS: &[SizeLimit] = &[
            SizeLimit::new("servers", 16),
            SizeLimit::new("clients", 64),
            SizeLimit::new("partitions", 64),
            SizeLimit::new("partition_keys", 1000),
            SizeLimit::new("items_per_key", 1000),
            SizeLimit::new("ops_per_client", 2000),
        ];
        LIMITS
    }

    fn validate(&self, p: &CosmosParams) -> Result<(), ParamError> {
        params::at_least_one(&[("servers", p.servers as u64), ("clients", p.clients as u64)])?;
        params::at_least_one(&[
            ("partitions", u64::from(p.partitions)),
            ("partition_keys", p.partition_keys as u64),
            ("items_per_key", p.items_per_key as u64),
        ])?;
        let m = &p.mix;
        let total = m.read
            + m.conditional_read
            + m.create
            + m.replace
            + m.upsert
            + m.delete
            + m.read_modify_write
            + m.batch;
        if total == 0 {
            return Err(ParamError::new("the op mix has no weight"));
        }
        params::ordered(&[("fsync_ms", p.fsync_ms)])
    }

    fn header(&self, p: &CosmosParams) -> String {
        let f = &p.server_faults;
        format!(
            "servers={} clients={} partitions={} partition_keys={} items/key={} ops/client={} rmw_tries={}\n\
             server  429={} 449={} 503={} 410={} 408={} fsync={}..{} ms; request timeout {} ms",
            p.servers,
            p.clients,
            p.partitions,
            p.partition_keys,
            p.items_per_key,
            p.ops_per_client,
            p.rmw_max_tries,
            f.throttle,
            f.retry_with,
            f.unavailable,
            f.gone,
            f.timeout,
            p.fsync_ms.0,
            p.fsync_ms.1,
            p.retry.request_timeout.as_millis(),
        )
    }

    fn topology(&self, p: &CosmosParams) -> Topology {
        Topology::new(vec![
            Role::new(StoreRole::Server, p.servers)
                .with_disk()
                .crashable(),
            Role::new(StoreRole::Client, p.clients).awaited(),
        ])
    }

    fn deploy(&self, p: &CosmosParams, ctx: &RunCtx) -> Deployment<CosmosHistory> {
        let bugs = crate::bugs::model_bugs(&ctx.bugs);
        let stats = Arc::new(Mutex::new(ServerStats::default()));
        // What the servers do with their logs (D1).
        let logs = crate::kit::durability::LogSink::new();
        let program_logs = logs.clone();
        let recorder: Recorder<Call, Outcome> =
            Recorder::with_capacity(p.clients * p.ops_per_client * 2);
        let params = p.clone();
        let program_stats = stats.clone();
        let program_recorder = recorder.clone();
        let program = Box::new(move |env: overcast_sim::world::NodeEnv| {
            let p = params.clone();
            let recorder = program_recorder.clone();
            let fut: overcast_harness::registry::NodeFuture =
                if env.role_as::<StoreRole>() == StoreRole::Server {
                    ServerSetup::new(
                        vec![workload::CONTAINER.to_string()],
                        p.server_faults.clone(),
                        p.fsync_ms,
                        bugs,
                        StreamNames::ByIndex,
                    )
                    .program_on_own_disk(
                        &env,
                        dialects::send_policy(&env),
                        &program_logs,
                        program_stats.clone(),
                    )
                } else {
                    Box::pin(async move {
                        let Some(mut client) =
                            dialects::connect_client(&env, p.partitions, &p.retry, bugs).await
                        else {
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
            let history = recorder.take_history(world.events.clone());
            (
                history.with_log_events(logs.take()),
                dialects::fault_counters(&stats),
            )
        });
        Deployment {
            program,
            collect,
            resolver: None,
        }
    }

    fn checkers(&self, p: &CosmosParams) -> Vec<Box<dyn Checker<CosmosHistory>>> {
        vec![
            Box::new(EtagFreshness),
            Box::new(BatchAtomicity),
            Box::new(Linearizability {
                options: lin::Options {
                    time_budget: Some(Duration::from_secs(20)),
                    parallel: false,
                    time_unit: lin::TimeUnit::Nanos,
                    ..lin::Options::default()
                },
            }),
            Box::new(RetryDiscipline::<Call, Outcome> {
                retry: p.retry.clone(),
                idempotent: Call::is_read,
                status: |o| o.status,
            }),
            Box::new(crate::kit::durability::Durability::new()),
        ]
    }

    fn adjust_plan(&self, _p: &CosmosParams, plan: &mut overcast_sim::faults::FaultPlan) {
        crate::kit::dialects::no_lying_disk(plan);
    }

    fn timeline(
        &self,
        p: &CosmosParams,
        h: &check::CosmosHistory,
        t: &mut overcast_sim::timeline::Timeline,
    ) {
        timeline::draw(h, p.clients, t);
    }

    fn goals(&self, _p: &CosmosParams) -> Vec<overcast_harness::goals::Goal<Self::History>> {
        goals::goals()
    }

    fn reductions(&self) -> Vec<Reduction<CosmosParams>> {
        dialects::store_reductions()
    }
}

impl dialects::StoreParams for CosmosParams {
    fn size(&mut self) -> dialects::StoreSize<'_> {
        dialects::StoreSize {
            clients: &mut self.clients,
            ops_per_client: &mut self.ops_per_client,
            servers: &mut self.servers,
            server_faults: &mut self.server_faults,
        }
    }
}
