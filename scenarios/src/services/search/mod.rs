//! The `search` scenario (Azure AI Search resource definitions, SPEC §1.2):
//! servers holding the partitions' resource state machines, clients running
//! the seed's story (read an index or synonym map, add an entry, write it
//! back with `onlyIfUnchanged`) and GETs, create-only PUTs, conditional
//! updates, blind PUTs and deletes of scratch resources. Checked:
//! linearizability of every resource with the dialect's statuses as outputs
//! (E2–E5, the 409 of serialized updates, the 400 of a dropped field), ETag
//! freshness (E1), the story's invariant (no entry added by an acknowledged
//! update is lost, when `onlyIfUnchanged` is on), retry discipline (R1–R3),
//! liveness.

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
use check::{EtagFreshness, Linearizability, NoLostField, SearchHistory};
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
pub struct SearchMix {
    /// The seed's read–add–write loop on a story resource.
    pub story: u32,
    /// GET of a scratch resource.
    pub get: u32,
    /// Create-only PUT (`If-None-Match: *`) of a scratch resource.
    pub create: u32,
    /// `CreateOrUpdate(onlyIfUnchanged: true)` of the last definition seen.
    pub update: u32,
    /// `CreateOrUpdate(onlyIfUnchanged: false)` of a new definition (last writer wins).
    pub blind_put: u32,
    /// DELETE (with `If-Match` most of the time when a definition was seen).
    pub delete: u32,
}

impl Default for SearchMix {
    fn default() -> Self {
        SearchMix {
            story: 50,
            get: 10,
            create: 10,
            update: 10,
            blind_put: 10,
            delete: 10,
        }
    }
}

/// The parameters of `search`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// Server nodes.
    pub servers: usize,
    /// Client nodes (each runs one sequential workload).
    pub clients: usize,
    /// Partitions the resource names are split into.
    pub partitions: u32,
    /// Scratch resources (even: indexes, odd: synonym maps).
    pub scratch_resources: usize,
    /// Operations each client starts (a story loop counts once).
    pub ops_per_client: usize,
    /// Operation weights.
    pub mix: SearchMix,
    /// The story's `onlyIfUnchanged` (the SDK's default is false; the seed's
    /// design pattern sets it).
    pub only_if_unchanged: bool,
    /// Tries of the story's loop (the seed's makes 3).
    pub story_tries: u32,
    /// Server fault points (429, 449, 503, 410, 408).
    pub server_faults: FaultRates,
    /// The SDK's retry budgets and request timeout.
    pub retry: RetryOptions,
    /// Log sync latency range, ms.
    pub fsync_ms: (u64, u64),
}

impl Default for SearchParams {
    /// 2 servers, 4 partitions, 4 clients doing 40 operations each, half of
    /// them the story with `onlyIfUnchanged` on, every server fault point on.
    fn default() -> Self {
        SearchParams {
            servers: 2,
            clients: 4,
            partitions: 4,
            scratch_resources: 3,
            ops_per_client: 40,
            mix: SearchMix::default(),
            only_if_unchanged: true,
            story_tries: 3,
            server_faults: crate::kit::server::default_server_faults(),
            retry: RetryOptions::default(),
            fsync_ms: (1, 3),
        }
    }
}

/// The `search` scenario.
pub struct Search;

impl ScenarioDef for Search {
    type Params = SearchParams;
    type History = SearchHistory;

    fn bugs(&self) -> Vec<&'static BugInfo> {
        crate::bugs::of(ScenarioDef::name(self))
    }

    fn budget(&self) -> overcast_sim::faults::FaultBudget {
        overcast_sim::faults::FaultBudget::unbounded(
            "every fault of the mix but a lying disk: it loses acknowledged writes by design and the checks do not yet leave the items it lost out",
        )
    }

    fn name(&self) -> &'static str {
        "search"
    }

    fn describe(&self) -> &'static str {
        "Azure AI Search resource ETags and the seed's onlyIfUnchanged story (SPEC §1.2): linearizability, E1, lost-field, R1–R3"
    }

    fn params(&self, _seed: u64) -> SearchParams {
        SearchParams::default()
    }

    fn defaults(&self) -> RunDefaults {
        dialects::run_defaults()
    }

    fn strategy(&self) -> BoxedStrategy<SearchParams> {
        (
            1usize..=3,
            1usize..=6,
            1u32..=6,
            1usize..=4,
            5usize..=40,
            any::<bool>(),
        )
            .prop_map(
                |(servers, clients, partitions, scratch, ops, only)| SearchParams {
                    servers,
                    clients,
                    partitions,
                    scratch_resources: scratch,
                    ops_per_client: ops,
                    only_if_unchanged: only,
                    ..SearchParams::default()
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
            SizeLimit::new("scratch_resources", 1000),
            SizeLimit::new("ops_per_client", 2000),
        ];
        LIMITS
    }

    fn validate(&self, p: &SearchParams) -> Result<(), ParamError> {
        params::at_least_one(&[("servers", p.servers as u64), ("clients", p.clients as u64)])?;
        params::at_least_one(&[
            ("partitions", u64::from(p.partitions)),
            ("scratch_resources", p.scratch_resources as u64),
        ])?;
        let m = &p.mix;
        if m.story + m.get + m.create + m.update + m.blind_put + m.delete == 0 {
            return Err(ParamError::new("the op mix has no weight"));
        }
        params::ordered(&[("fsync_ms", p.fsync_ms)])
    }

    fn header(&self, p: &SearchParams) -> String {
        let f = &p.server_faults;
        format!(
            "servers={} clients={} partitions={} scratch={} ops/client={} onlyIfUnchanged={} story_tries={}\n\
             server  429={} 449={} 503={} 410={} 408={} fsync={}..{} ms; request timeout {} ms",
            p.servers,
            p.clients,
            p.partitions,
            p.scratch_resources,
            p.ops_per_client,
            p.only_if_unchanged,
            p.story_tries,
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

    fn topology(&self, p: &SearchParams) -> Topology {
        Topology::new(vec![
            Role::new(StoreRole::Server, p.servers)
                .with_disk()
                .crashable(),
            Role::new(StoreRole::Client, p.clients).awaited(),
        ])
    }

    fn deploy(&self, p: &SearchParams, ctx: &RunCtx) -> Deployment<SearchHistory> {
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
                        Vec::new(),
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

    fn checkers(&self, p: &SearchParams) -> Vec<Box<dyn Checker<SearchHistory>>> {
        let mut checks: Vec<Box<dyn Checker<SearchHistory>>> = vec![
            Box::new(EtagFreshness),
            Box::new(Linearizability {
                options: lin::Options {
                    time_budget: Some(Duration::from_secs(20)),
                    parallel: false,
                    time_unit: lin::TimeUnit::Nanos,
                    ..lin::Options::default()
                },
            }),
        ];
        // The story's invariant is the application's promise only with onlyIfUnchanged.
        if p.only_if_unchanged {
            checks.push(Box::new(NoLostField));
        }
        checks.push(Box::new(RetryDiscipline::<Call, Outcome> {
            retry: p.retry.clone(),
            idempotent: |c| c.op == "get",
            status: |o| o.status,
        }));
        checks.push(Box::new(crate::kit::durability::Durability::new()));
        checks
    }

    fn adjust_plan(&self, _p: &SearchParams, plan: &mut overcast_sim::faults::FaultPlan) {
        crate::kit::dialects::no_lying_disk(plan);
    }

    fn timeline(
        &self,
        p: &SearchParams,
        h: &check::SearchHistory,
        t: &mut overcast_sim::timeline::Timeline,
    ) {
        timeline::draw(h, p.clients, t);
    }

    fn goals(&self, _p: &SearchParams) -> Vec<overcast_harness::goals::Goal<Self::History>> {
        goals::goals()
    }

    fn reductions(&self) -> Vec<Reduction<SearchParams>> {
        dialects::store_reductions()
    }
}

impl dialects::StoreParams for SearchParams {
    fn size(&mut self) -> dialects::StoreSize<'_> {
        dialects::StoreSize {
            clients: &mut self.clients,
            ops_per_client: &mut self.ops_per_client,
            servers: &mut self.servers,
            server_faults: &mut self.server_faults,
        }
    }
}
