//! The `queues` scenario (Google Cloud Search indexing queues and the
//! full-traversal connector, SPEC §5): one server (crashable, its log
//! mirrored on two disks) holding the indexing service; one or two connectors (crashable, each with
//! its own disk for checkpoints) over one datasource — connector 0 runs the
//! full traversal with two alternating queues and the incremental traversal,
//! every connector runs traverser workers; an editor that adds, changes and
//! removes documents of the repository during the run. Faults: connector
//! and server crashes, lost and delayed messages, partitions, pauses, slow
//! `deleteQueueItems` operations, fetches that fail or hang past the
//! traverser timeout, skewed clocks (connector clocks also step; versions
//! are their clocks, so the service refuses a slow one's as stale and the
//! connector indexes again). After the deadline (every fault healed) connector 0
//! runs a final pass of full traversals. Checked: the end-to-end property
//! (the index equals the repository) and Q1–Q9 (see [`check`]).

pub mod check;
pub mod goals;
pub mod history;
pub mod properties;
pub mod reference;
pub mod timeline;
pub mod workload;

use crate::kit::bridge::{ClockAdapter, DiskAdapter};
use crate::kit::server::{ServerSetup, StreamNames};
use history::{QueueHistory, QueueRecorder};
use overcast_harness::bug::BugInfo;
use overcast_harness::params::{self, ParamError, SizeLimit};
use overcast_harness::registry::{
    halve, once, Deployment, Reduction, RunCtx, RunDefaults, ScenarioDef,
};
use overcast_model::client::ClientConfig;
use overcast_model::connector::{Connector, ConnectorConfig};
use overcast_model::queue::{QueueConfig, RESERVATION_MS, SOFT_DELETE_MS};
use overcast_model::retry::RetryOptions;
use overcast_model::server::{FaultRates, ServerStats};
use overcast_sim::check::Checker;
use overcast_sim::faults::{FaultMix, FaultPlan};
use overcast_sim::rng::stream;
use overcast_sim::world::NodeRole;
use overcast_sim::world::{Role, Topology};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use workload::SimRepository;

/// The datasource every connector indexes into.
pub const DATASOURCE: &str = "datasources/repo";

/// The parameters of `queues`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueuesParams {
    /// Connectors (1–2); connector 0 traverses, every one runs workers.
    pub connectors: usize,
    /// Traverser workers per connector.
    pub workers: usize,
    /// Documents in the repository at the start.
    pub docs: usize,
    /// Most changes the editor makes (it also stops at the deadline).
    pub edits: usize,
    /// Time between the editor's changes, ms range.
    pub edit_ms: (u64, u64),
    /// Share of changes that add a document.
    pub add_share: f64,
    /// Share of changes that remove one (the rest change one).
    pub remove_share: f64,
    /// The 4 h reservation and the 7-day soft delete are divided by this.
    pub time_scale: u64,
    /// How long a `deleteQueueItems` runs, ms range.
    pub delete_ms: (u64, u64),
    /// The first REPOSITORY_ERROR backoff, ms.
    pub backoff_ms: u64,
    /// Poll limit (0: the service default of 20).
    pub poll_limit: u32,
    /// Pause after an empty poll, ms.
    pub poll_interval_ms: u64,
    /// Between full traversals, ms.
    pub full_interval_ms: u64,
    /// Between incremental traversals, ms.
    pub incremental_interval_ms: u64,
    /// Documents per checkpointed batch of the full traversal.
    pub partition_size: usize,
    /// How long a fetch takes, ms range.
    pub fetch_ms: (u64, u64),
    /// The traverser timeout, ms.
    pub fetch_timeout_ms: u64,
    /// Share of fetches that fail with an I/O error.
    pub fetch_error_probability: f64,
    /// Share of fetches that hang past the timeout.
    pub fetch_hang_probability: f64,
    /// Share of polled batches whose last item a worker hands back with REQUEUE.
    pub requeue_probability: f64,
    /// Share of incremental pushes first sent malformed (type and hash: 400).
    pub malformed_push_probability: f64,
    /// Full traversals of the final pass.
    pub final_traversals: usize,
    /// Server fault points.
    pub server_faults: FaultRates,
    /// The SDK's retry budgets and request timeout.
    pub retry: RetryOptions,
    /// Log sync latency, ms range.
    pub fsync_ms: (u64, u64),
}

impl Default for QueuesParams {
    fn default() -> Self {
        QueuesParams {
            connectors: 2,
            workers: 1,
            docs: 10,
            edits: 1_000,
            edit_ms: (300, 1_500),
            add_share: 0.3,
            remove_share: 0.2,
            time_scale: 2_000,
            delete_ms: (100, 5_000),
            backoff_ms: 200,
            poll_limit: 3,
            poll_interval_ms: 300,
            full_interval_ms: 4_000,
            incremental_interval_ms: 1_500,
            partition_size: 4,
            fetch_ms: (10, 200),
            fetch_timeout_ms: 1_000,
            fetch_error_probability: 0.02,
            fetch_hang_probability: 0.02,
            requeue_probability: 0.1,
            malformed_push_probability: 0.05,
            final_traversals: 2,
            server_faults: FaultRates {
                timeout: 0.005,
                ..FaultRates::default()
            },
            retry: RetryOptions::default(),
            fsync_ms: (1, 3),
        }
    }
}

impl QueuesParams {
    /// The service settings the connectors create the datasource with.
    pub fn service(&self) -> QueueConfig {
        QueueConfig {
            time_scale: self.time_scale,
            backoff_ms: self.backoff_ms,
            max_backoff_ms: self.backoff_ms * 16,
            delete_ms: self.delete_ms,
        }
    }
}

overcast_sim::node_roles! {
    /// The kinds of node of the `queues` scenario.
    pub enum QueuesRole {
        /// The one storage server.
        Server = "server",
        /// The connectors.
        Connector = "connector",
        /// The repository's editor.
        Editor = "editor",
    }
}

/// The `queues` scenario.
pub struct Queues;

impl ScenarioDef for Queues {
    type Params = QueuesParams;
    type History = QueueHistory;

    fn bugs(&self) -> Vec<&'static BugInfo> {
        crate::bugs::of(ScenarioDef::name(self))
    }

    fn budget(&self) -> overcast_sim::faults::FaultBudget {
        let mut budget = crate::kit::server::mirrored_log_budget(
            "no clock steps on the server (the real service's reservation timers never step back); ",
            "none on the connectors' disks (a checkpoint log has one copy: a connector finds a corrupt record and starts its full traversal over, but the checkpoints in and after it are lost, a lost checkpoint_queue forgets a pending deleteQueueItems (Q8), and a write a lying disk lost at the log's end goes unseen), flips on read, failed syncs and torn tails there; every network, crash and pause fault of the mix",
        );
        budget.spared = vec![QueuesRole::Connector.name().to_string()];
        budget
    }

    fn name(&self) -> &'static str {
        "queues"
    }

    fn describe(&self) -> &'static str {
        "Cloud Search indexing queues and the full-traversal connector (SPEC §5): end-to-end, Q1–Q9"
    }

    fn params(&self, _seed: u64) -> QueuesParams {
        QueuesParams::default()
    }

    fn defaults(&self) -> RunDefaults {
        RunDefaults {
            faults: FaultMix {
                packet_loss: 0.01,
                latency_ms: (1, 10),
                partitions_per_min: 4.0,
                crashes_per_min: 6.0,
                pauses_per_min: 4.0,
                lose_unsynced_on_crash: true,
                max_clock_offset_ms: 1_000,
                max_drift_ppm: 100,
                // The connectors' only (`adjust_plan`).
                clock_steps_per_min: 4.0,
                // The server's within the budget (its mirrored log), the
                // connectors' without the corrupting ones.
                storage: FaultMix::DEFAULT_STORAGE,
                network: Default::default(),
            },
            fault_window_ms: 30_000,
            deadline_ms: 30_000,
            quiet_ms: 500,
        }
    }

    fn strategy(&self) -> BoxedStrategy<QueuesParams> {
        (1usize..=2, 1usize..=2, 2usize..=16, 1usize..=6, 0u32..=5)
            .prop_map(
                |(connectors, workers, docs, partition_size, poll_limit)| QueuesParams {
                    connectors,
                    workers,
                    docs,
                    partition_size,
                    poll_limit,
                    ..QueuesParams::default()
                },
            )
            .boxed()
    }

    /// Sizes beyond these were never run: a run takes minutes or its checks
    /// give up (measured: each limit alone runs in seconds).
    fn limits(&self) -> &'static [SizeLimit] {
        const LIMITS: &[SizeLimit] = &[
            SizeLimit::new("workers", 16),
            SizeLimit::new("docs", 200),
            SizeLimit::new("edits", 100000),
            SizeLimit::new("partition_size", 1000),
            SizeLimit::new("final_traversals", 100),
        ];
        LIMITS
    }

    fn validate(&self, p: &QueuesParams) -> Result<(), ParamError> {
        if !(1..=2).contains(&p.connectors) {
            return Err(ParamError::new("connectors must be 1 or 2"));
        }
        params::at_least_one(&[("workers", p.workers as u64)])?;
        params::at_least_one(&[
            ("partition_size", p.partition_size as u64),
            ("time_scale", p.time_scale),
            ("final_traversals", p.final_traversals as u64),
        ])?;
        if p.poll_limit > 100 {
            return Err(ParamError::new("poll_limit must be at most 100"));
        }
        params::ordered(&[
            ("edit_ms", p.edit_ms),
            ("delete_ms", p.delete_ms),
            ("fetch_ms", p.fetch_ms),
            ("fsync_ms", p.fsync_ms),
        ])?;
        params::probabilities(&[
            ("add_share", p.add_share),
            ("remove_share", p.remove_share),
            ("fetch_error_probability", p.fetch_error_probability),
            ("fetch_hang_probability", p.fetch_hang_probability),
            ("requeue_probability", p.requeue_probability),
            ("malformed_push_probability", p.malformed_push_probability),
        ])?;
        if p.add_share + p.remove_share > 1.0 {
            return Err(ParamError::new(
                "add_share + remove_share must be at most 1",
            ));
        }
        Ok(())
    }

    fn header(&self, p: &QueuesParams) -> String {
        let s = p.service();
        format!(
            "connectors={} workers={} docs={} batch={} poll_limit={} fetch={}..{} ms (error {}, hang {} past {} ms)\n\
             time scale 1/{}: reservation {} h -> {} ms, soft delete {} d -> {} ms; deleteQueueItems {}..{} ms; \
             schedules: full every {} ms, incremental every {} ms, poll every {} ms; final traversals {}",
            p.connectors,
            p.workers,
            p.docs,
            p.partition_size,
            p.poll_limit,
            p.fetch_ms.0,
            p.fetch_ms.1,
            p.fetch_error_probability,
            p.fetch_hang_probability,
            p.fetch_timeout_ms,
            p.time_scale,
            RESERVATION_MS / 3_600_000,
            s.reservation_ms(),
            SOFT_DELETE_MS / 86_400_000,
            s.soft_delete_ms(),
            p.delete_ms.0,
            p.delete_ms.1,
            p.full_interval_ms,
            p.incremental_interval_ms,
            p.poll_interval_ms,
            p.final_traversals,
        )
    }

    fn topology(&self, p: &QueuesParams) -> Topology {
        Topology::new(vec![
            // Its log mirrored on two disks (`server-0`, `server-0.b`).
            Role::new(QueuesRole::Server, 1)
                .with_disks(crate::kit::server::LOG_COPIES)
                .crashable(),
            Role::new(QueuesRole::Connector, p.connectors)
                .with_disk()
                .crashable()
                .awaited(),
            Role::new(QueuesRole::Editor, 1),
        ])
    }

    fn client_role(&self, p: &QueuesParams) -> (&'static str, usize) {
        (QueuesRole::Connector.name(), p.connectors)
    }

    fn timeline(
        &self,
        _p: &QueuesParams,
        h: &QueueHistory,
        t: &mut overcast_sim::timeline::Timeline,
    ) {
        timeline::draw(h, t);
    }

    /// The connectors' final pass needs the server: one that refused
    /// service to the end (every copy of its log corrupt) leaves them at it.
    fn cannot_finish(&self, _p: &QueuesParams, h: &QueueHistory) -> Option<String> {
        history::refused_to_the_end(h)
    }

    fn adjust_plan(&self, _p: &QueuesParams, plan: &mut FaultPlan) {
        // Connector clocks skew, drift and step like every node's (versions
        // are their clocks, SPEC §5.1; the connector handles the refusals).
        // The server's clock does not step: the real service times
        // reservations and orders its queues on a clock that never steps
        // back, and Q1–Q5 judge the model's server on its node's clock.
        for (node, skew) in plan.clocks.iter_mut() {
            if node.starts_with(QueuesRole::Server.name()) {
                skew.steps.clear();
            }
        }
    }

    fn deploy(&self, p: &QueuesParams, ctx: &RunCtx) -> Deployment<QueueHistory> {
        let bugs = crate::bugs::model_bugs(&ctx.bugs);
        let stats = Arc::new(Mutex::new(ServerStats::default()));
        // What the servers do with their logs (D1).
        let logs = crate::kit::durability::LogSink::new();
        let program_logs = logs.clone();
        let recorder = QueueRecorder::with_capacity(4096);
        let repo = SimRepository::new(p.docs);
        let params = p.clone();
        let program_stats = stats.clone();
        let program_recorder = recorder.clone();
        let network_counts = crate::kit::bridge::NetworkCounts::default();
        let program = Box::new(move |env: overcast_sim::world::NodeEnv| {
            let p = params.clone();
            let stats = program_stats.clone();
            let recorder = program_recorder.clone();
            let repo = repo.clone();
            let send = crate::kit::bridge::NetworkAdapter::policy(&env, &network_counts);
            let fut: overcast_harness::registry::NodeFuture = match env.role_as::<QueuesRole>() {
                QueuesRole::Server => {
                    let disk = crate::kit::server::recording_disk(
                        &env,
                        recorder,
                        // Only the queue service's records are the queues' history.
                        |r| match r.effect {
                            overcast_model::partition::Effect::Queue(effect) => {
                                Some(history::QueueEvent::Logged {
                                    partition: r.partition,
                                    lsn: r.lsn,
                                    effect,
                                })
                            }
                            _ => None,
                        },
                        |kept| history::QueueEvent::Recovered { kept },
                    );
                    ServerSetup::new(
                        Vec::new(),
                        p.server_faults.clone(),
                        p.fsync_ms,
                        bugs,
                        StreamNames::OneServer,
                    )
                    .program(
                        &env,
                        send.clone(),
                        Arc::new(disk),
                        &program_logs,
                        stats,
                    )
                }
                QueuesRole::Editor => Box::pin(async move {
                    let rng = stream(env.seed, "editor");
                    workload::editor(&p, &repo, &recorder, &env.name, rng, env.deadline).await;
                }),
                QueuesRole::Connector => Box::pin(async move {
                    let client = ClientConfig {
                        servers: env.topology.addrs(QueuesRole::Server),
                        partitions: 1,
                        retry: p.retry.clone(),
                        bugs,
                        send,
                        connect: Default::default(),
                    };
                    let cfg = ConnectorConfig {
                        datasource: DATASOURCE.into(),
                        service: p.service(),
                        queue_tag: "repo".into(),
                        traverse: env.index == 0,
                        workers: p.workers,
                        poll_limit: p.poll_limit,
                        poll_interval_ms: p.poll_interval_ms,
                        full_interval_ms: p.full_interval_ms,
                        incremental_interval_ms: p.incremental_interval_ms,
                        partition_size: p.partition_size,
                        fetch_ms: p.fetch_ms,
                        fetch_timeout_ms: p.fetch_timeout_ms,
                        fetch_error_probability: p.fetch_error_probability,
                        fetch_hang_probability: p.fetch_hang_probability,
                        requeue_probability: p.requeue_probability,
                        malformed_push_probability: p.malformed_push_probability,
                        deadline: env.deadline,
                        // Longer than any call's retries: every worker's last
                        // call has ended before the final pass.
                        drain: Duration::from_secs(60),
                        final_traversals: p.final_traversals,
                        bugs,
                    };
                    let id = overcast_harness::registry::history_client(
                        env.index,
                        env.incarnation,
                        p.connectors,
                    );
                    let obs = workload::Observer::new(
                        recorder,
                        id,
                        env.incarnation_name(),
                        ClockAdapter(env.clock.clone()),
                    );
                    let disk = DiskAdapter(env.disk.clone().expect("connectors have disks"));
                    let tag = format!("{}-{}", env.name, env.incarnation);
                    let seed = env.seed;
                    let rng = Rc::new(move |task: &str| {
                        Box::new(stream(seed, &format!("{tag}-{task}")))
                            as Box<dyn rand::RngCore + Send>
                    });
                    let connector = Connector::new(
                        cfg,
                        client,
                        Rc::new(obs),
                        Rc::new(repo),
                        Rc::new(ClockAdapter(env.clock.clone())),
                    );
                    connector.run(Rc::new(disk), rng).await;
                }),
            };
            fut
        });
        let collect = Box::new(move |world: &overcast_sim::world::WorldOutcome| {
            let mut history = recorder.take_history(world.events.clone());
            let stats = stats.lock().unwrap_or_else(|e| e.into_inner());
            crate::kit::server::note_refusals(&mut history, &stats.recoveries, |reason| {
                history::QueueEvent::Refused { reason }
            });
            let connectors = world
                .lost_writes
                .iter()
                .filter(|(node, _)| node.starts_with(QueuesRole::Connector.name()));
            history::note_lost_checkpoints(&mut history, connectors, world.sim_ns);
            let counters = stats
                .transient
                .iter()
                .map(|(status, n)| (status.to_string(), *n))
                .collect();
            (history.with_log_events(logs.take()), counters)
        });
        Deployment {
            program,
            collect,
            resolver: None,
        }
    }

    fn checkers(&self, _p: &QueuesParams) -> Vec<Box<dyn Checker<QueueHistory>>> {
        let mut checkers = check::checkers();
        checkers.push(Box::new(crate::kit::durability::Durability::new()));
        checkers
    }

    /// Q1–Q6 judge each step of the server's log (and each poll seen by
    /// its answer) against the log before it (`check::walk`), so a run
    /// stopped after a violation has the same steps and the same states up
    /// to it: Q1 and Q3 a poll's answer against the items eligible then,
    /// Q2 a poll's items against their reservations then, Q4 each change
    /// (and each push's answer) against SPEC's transition from the state
    /// before it, Q5 a requeue against the items available before it, Q6
    /// an index or delete against the version indexed before it. The
    /// end-to-end property needs the final pass, and Q7–Q9 the
    /// connectors' reports of traversals and deletions a stopped run cuts
    /// short: none of them is.
    fn prefix_closed(&self, property: overcast_sim::check::PropertyId) -> bool {
        matches!(property.as_str(), "Q1" | "Q2" | "Q3" | "Q4" | "Q5" | "Q6")
    }

    fn goals(&self, _p: &QueuesParams) -> Vec<overcast_harness::goals::Goal<Self::History>> {
        goals::goals()
    }

    fn reductions(&self) -> Vec<Reduction<QueuesParams>> {
        vec![
            ("one connector fewer", |p, i| {
                once(i, || {
                    (p.connectors > 1).then(|| QueuesParams {
                        connectors: p.connectors - 1,
                        ..p.clone()
                    })
                })
            }),
            ("halve the documents", |p, i| {
                once(i, || {
                    halve(p.docs, 1).map(|docs| QueuesParams { docs, ..p.clone() })
                })
            }),
            ("halve the edits", |p, i| {
                once(i, || {
                    halve(p.edits.min(64), 0).map(|edits| QueuesParams { edits, ..p.clone() })
                })
            }),
            ("one worker fewer", |p, i| {
                once(i, || {
                    (p.workers > 1).then(|| QueuesParams {
                        workers: p.workers - 1,
                        ..p.clone()
                    })
                })
            }),
            // The final pass (after the deadline) is never left out one call
            // at a time; these two make it shorter when the failure does not
            // need all of it.
            ("one final traversal", |p, i| {
                once(i, || {
                    (p.final_traversals > 1).then(|| QueuesParams {
                        final_traversals: 1,
                        ..p.clone()
                    })
                })
            }),
            ("deletes finish at once", |p, i| {
                once(i, || {
                    (p.delete_ms.1 > p.delete_ms.0).then(|| QueuesParams {
                        delete_ms: (p.delete_ms.0, p.delete_ms.0),
                        ..p.clone()
                    })
                })
            }),
            ("no server fault points", |p, i| {
                once(i, || {
                    (p.server_faults != FaultRates::default()).then(|| QueuesParams {
                        server_faults: FaultRates::default(),
                        ..p.clone()
                    })
                })
            }),
        ]
    }
}
