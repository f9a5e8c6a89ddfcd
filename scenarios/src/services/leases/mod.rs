//! The `leases` scenario (blob and container leases under clock skew, SPEC §2):
//! one server (crashable, with a disk) holding the store and its leases;
//! holders (crashable) contending for blob leases through the lease-holder
//! library; plain clients reading, writing, breaking, taking one-shot leases
//! without a proposed id, changing ids, holding infinite leases for long
//! stretches, breaking leases and taking them over, and leasing and deleting
//! the container.
//! Faults: clock offsets, drift and one step per clock within the library's
//! stated bound (beyond it with `skew_beyond_bound`), pauses (holder pauses
//! stretched past a lease), partitions, crashes, lost and delayed messages,
//! server fault points. Checked: L1–L9 (see [`check`]).

pub mod check;
pub mod coverage;
pub mod goals;
pub mod history;
pub mod properties;
pub mod reference;
pub mod timeline;
pub mod workload;

use crate::kit::bridge::ClockAdapter;
use crate::kit::client::SdkSetup;
use crate::kit::server::{ServerSetup, StreamNames};
use history::{LeaseHistory, LeaseRecorder};
use overcast_harness::bug::BugInfo;
use overcast_harness::params::{self, ParamError, SizeLimit};
use overcast_harness::registry::{once, Deployment, Reduction, RunCtx, RunDefaults, ScenarioDef};
use overcast_model::lease_holder::ClockBound;
use overcast_model::retry::RetryOptions;
use overcast_model::server::{FaultRates, ServerStats};
use overcast_model::store::ItemKey;
use overcast_sim::check::Checker;
use overcast_sim::faults::{Fault, FaultMix, FaultPlan};
use overcast_sim::rng::stream;
use overcast_sim::world::NodeRole;
use overcast_sim::world::{Role, Topology};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// The container every blob lives in (and the one container lease).
pub const CONTAINER: &str = "leases";

/// Blob `i` (one partition key for all: the container and its blobs share a
/// partition, so a container delete sees its blobs).
pub fn blob_key(i: usize) -> ItemKey {
    ItemKey::new(CONTAINER, "", format!("b{i}"))
}

/// Relative weights of a plain client's operations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientMix {
    /// Reads without a lease id.
    pub read: u32,
    /// Writes without a lease id.
    pub write: u32,
    /// Breaks (no period, 0, or 1–20 s).
    pub r#break: u32,
    /// Acquire without a proposed id (15 s or infinite), write with it, release.
    pub one_shot: u32,
    /// Acquire with a proposed id, change it, write with the new one, release.
    pub change: u32,
    /// The container lease: acquire, set metadata, maybe delete, release.
    pub container: u32,
    /// Hold an infinite lease for a long stretch ([`LeasesParams::infinite_hold_ms`]):
    /// write, read and renew with its id; after a break, write and release.
    /// 0 in files saved before it existed.
    #[serde(default)]
    pub hold_infinite: u32,
    /// Break a blob's lease and try to take it while the break runs, then
    /// change the id (twice, as a retry would), write, renew and release.
    /// 0 in files saved before it existed.
    #[serde(default)]
    pub break_and_take: u32,
}

impl Default for ClientMix {
    fn default() -> Self {
        ClientMix {
            read: 20,
            write: 20,
            r#break: 10,
            one_shot: 25,
            change: 10,
            container: 5,
            hold_infinite: 12,
            break_and_take: 12,
        }
    }
}

/// The parameters of `leases`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeasesParams {
    /// Lease holders (crashable).
    pub holders: usize,
    /// Plain clients.
    pub clients: usize,
    /// Blobs contended for.
    pub blobs: usize,
    /// The holders' lease duration, seconds (15–60).
    pub duration_s: u32,
    /// Acquires a holder tries before it picks another blob.
    pub acquire_tries: usize,
    /// Pause between a holder's acquires, ms range.
    pub retry_ms: (u64, u64),
    /// Most work steps a holder does under one lease.
    pub hold_steps: usize,
    /// Time between a holder's work steps, ms range.
    pub work_ms: (u64, u64),
    /// Share of leases whose holder stops renewing and works on until its own
    /// clock says the lease is gone.
    pub stall_probability: f64,
    /// Pause between a plain client's operations, ms range.
    pub client_pause_ms: (u64, u64),
    /// A plain client's operation weights.
    pub mix: ClientMix,
    /// Share of container-lease rounds that delete the container.
    pub container_delete_probability: f64,
    /// Holder pauses from the fault plan are stretched by this factor (so that
    /// some outlast a lease).
    pub holder_pause_factor: u64,
    /// Server fault points.
    pub server_faults: FaultRates,
    /// The SDK's retry budgets and request timeout.
    pub retry: RetryOptions,
    /// Log sync latency, ms range.
    pub fsync_ms: (u64, u64),
    /// Most operations a plain client starts (it also stops at the deadline).
    #[serde(default = "unbounded")]
    pub client_ops: usize,
    /// Most leases a holder incarnation goes for (it also stops at the deadline).
    #[serde(default = "unbounded")]
    pub holder_rounds: usize,
    /// Leave every clock as the plan draws it, even beyond the holders' stated
    /// bound ([`ClockBound::DEFAULT`]); otherwise drift and steps are clamped to it.
    pub skew_beyond_bound: bool,
    /// Share of plain clients' writes sent with a condition that fails on an
    /// existing blob (`If-None-Match: *` or an `If-Match` no version has), so
    /// that conditions meet lease-gated writes (SPEC §1.1.5: the lease check
    /// comes first). 0 in files saved before it existed.
    #[serde(default)]
    pub conditional_writes: f64,
    /// How long a plain client holds an infinite lease ([`ClientMix::hold_infinite`]),
    /// ms range. (0, 0) in files saved before it existed.
    #[serde(default)]
    pub infinite_hold_ms: (u64, u64),
}

impl Default for LeasesParams {
    fn default() -> Self {
        LeasesParams {
            holders: 3,
            clients: 2,
            blobs: 2,
            duration_s: 15,
            acquire_tries: 40,
            retry_ms: (50, 300),
            hold_steps: 60,
            work_ms: (50, 250),
            stall_probability: 0.5,
            client_pause_ms: (200, 1_500),
            mix: ClientMix::default(),
            container_delete_probability: 0.3,
            holder_pause_factor: 8,
            server_faults: FaultRates {
                throttle: 0.01,
                retry_after_ms: (1, 200),
                timeout: 0.01,
                ..FaultRates::default()
            },
            retry: RetryOptions::default(),
            fsync_ms: (1, 3),
            skew_beyond_bound: false,
            conditional_writes: 0.3,
            infinite_hold_ms: (4_000, 15_000),
            client_ops: unbounded(),
            holder_rounds: unbounded(),
        }
    }
}

fn unbounded() -> usize {
    1_000
}

/// Clamps every clock of `plan` to `bound` (drift, and the steps' total size)
/// and stretches holder pauses by `pause_factor`.
pub fn shape_plan(plan: &mut FaultPlan, bound: Option<ClockBound>, pause_factor: u64) {
    if let Some(b) = bound {
        let max_drift = b.max_drift_ppm as i64;
        for skew in plan.clocks.values_mut() {
            skew.drift_ppm = skew.drift_ppm.clamp(-max_drift, max_drift);
            let mut budget = b.max_step_ms as i64;
            for (_, delta) in skew.steps.iter_mut() {
                let d = (*delta).clamp(-budget, budget);
                budget -= d.abs();
                *delta = d;
            }
            skew.steps.retain(|(_, d)| *d != 0);
        }
    }
    for e in &mut plan.events {
        if let Fault::Pause { node, for_ms } = &mut e.fault {
            if node.starts_with(LeasesRole::Holder.name()) {
                *for_ms = for_ms.saturating_mul(pause_factor.max(1));
            }
        }
    }
}

overcast_sim::node_roles! {
    /// The kinds of node of the `leases` scenario.
    pub enum LeasesRole {
        /// The one storage server.
        Server = "server",
        /// The lease holders.
        Holder = "holder",
        /// The plain clients.
        Client = "client",
    }
}

/// The `leases` scenario.
pub struct Leases;

impl ScenarioDef for Leases {
    type Params = LeasesParams;
    type History = LeaseHistory;

    fn bugs(&self) -> Vec<&'static BugInfo> {
        crate::bugs::of(ScenarioDef::name(self))
    }

    fn budget(&self) -> overcast_sim::faults::FaultBudget {
        crate::kit::server::mirrored_log_budget(
            "host clocks within the holders' stated bound (drift and total step size; unless skew_beyond_bound); ",
            "every network, crash and pause fault of the mix",
        )
    }

    fn name(&self) -> &'static str {
        "leases"
    }

    fn describe(&self) -> &'static str {
        "blob and container leases under clock skew, pauses and crashes (SPEC §2): L1–L9"
    }

    fn params(&self, _seed: u64) -> LeasesParams {
        LeasesParams::default()
    }

    fn defaults(&self) -> RunDefaults {
        RunDefaults {
            faults: FaultMix {
                packet_loss: 0.01,
                latency_ms: (1, 10),
                partitions_per_min: 6.0,
                crashes_per_min: 3.0,
                pauses_per_min: 8.0,
                lose_unsynced_on_crash: true,
                max_clock_offset_ms: 2_000,
                max_drift_ppm: 200,
                // Over the 60 s window: exactly one step per clock.
                clock_steps_per_min: 1.0,
                // Duplicated-datagram faults are not yet part of this
                // scenario's default mix.
                storage: FaultMix::DEFAULT_STORAGE,
                network: Default::default(),
            },
            fault_window_ms: 60_000,
            deadline_ms: 60_000,
            quiet_ms: 1_000,
        }
    }

    fn strategy(&self) -> BoxedStrategy<LeasesParams> {
        (1usize..=4, 0usize..=3, 1usize..=3, 5usize..=60)
            .prop_map(|(holders, clients, blobs, hold_steps)| LeasesParams {
                holders,
                clients,
                blobs,
                hold_steps,
                ..LeasesParams::default()
            })
            .boxed()
    }

    /// Sizes beyond these were never run: a run takes minutes or its checks
    /// give up (measured: each limit alone runs in seconds).
    fn limits(&self) -> &'static [SizeLimit] {
        const LIMITS: &[SizeLimit] = &[
            SizeLimit::new("holders", 100),
            SizeLimit::new("clients", 100),
            SizeLimit::new("blobs", 1000),
        ];
        LIMITS
    }

    fn validate(&self, p: &LeasesParams) -> Result<(), ParamError> {
        params::at_least_one(&[("holders", p.holders as u64)])?;
        params::at_least_one(&[("blobs", p.blobs as u64)])?;
        if !(15..=60).contains(&p.duration_s) {
            return Err(ParamError::new("duration_s must be 15–60"));
        }
        let m = &p.mix;
        let weight = m.read
            + m.write
            + m.r#break
            + m.one_shot
            + m.change
            + m.container
            + m.hold_infinite
            + m.break_and_take;
        if p.clients > 0 && weight == 0 {
            return Err(ParamError::new("the client mix has no weight"));
        }
        params::ordered(&[
            ("retry_ms", p.retry_ms),
            ("work_ms", p.work_ms),
            ("client_pause_ms", p.client_pause_ms),
            ("fsync_ms", p.fsync_ms),
            ("infinite_hold_ms", p.infinite_hold_ms),
        ])?;
        params::probabilities(&[
            ("stall_probability", p.stall_probability),
            (
                "container_delete_probability",
                p.container_delete_probability,
            ),
            ("conditional_writes", p.conditional_writes),
        ])?;
        Ok(())
    }

    fn header(&self, p: &LeasesParams) -> String {
        let b = ClockBound::DEFAULT;
        format!(
            "holders={} clients={} blobs={} lease={} s hold_steps={} stall={} pause×{}\n\
             holder bound: drift ≤ {} ppm, steps ≤ {} ms per clock (margin {} ms){}; server 429={} 408={}",
            p.holders,
            p.clients,
            p.blobs,
            p.duration_s,
            p.hold_steps,
            p.stall_probability,
            p.holder_pause_factor,
            b.max_drift_ppm,
            b.max_step_ms,
            b.margin_ms(u64::from(p.duration_s) * 1000),
            if p.skew_beyond_bound {
                " — clocks NOT clamped to it"
            } else {
                ""
            },
            p.server_faults.throttle,
            p.server_faults.timeout,
        )
    }

    fn topology(&self, p: &LeasesParams) -> Topology {
        Topology::new(vec![
            // Its log mirrored on two disks (`server-0`, `server-0.b`).
            Role::new(LeasesRole::Server, 1)
                .with_disks(crate::kit::server::LOG_COPIES)
                .crashable(),
            Role::new(LeasesRole::Holder, p.holders)
                .crashable()
                .awaited(),
            Role::new(LeasesRole::Client, p.clients).awaited(),
        ])
    }

    fn adjust_plan(&self, p: &LeasesParams, plan: &mut FaultPlan) {
        let bound = (!p.skew_beyond_bound).then_some(ClockBound::DEFAULT);
        shape_plan(plan, bound, p.holder_pause_factor);
    }

    fn deploy(&self, p: &LeasesParams, ctx: &RunCtx) -> Deployment<LeaseHistory> {
        let bugs = crate::bugs::model_bugs(&ctx.bugs);
        let stats = Arc::new(Mutex::new(ServerStats::default()));
        // What the servers do with their logs (D1).
        let logs = crate::kit::durability::LogSink::new();
        let program_logs = logs.clone();
        let recorder = LeaseRecorder::with_capacity(4096);
        let params = p.clone();
        let program_stats = stats.clone();
        let program_recorder = recorder.clone();
        let network_counts = crate::kit::bridge::NetworkCounts::default();
        let program = Box::new(move |env: overcast_sim::world::NodeEnv| {
            let p = params.clone();
            let stats = program_stats.clone();
            let recorder = program_recorder.clone();
            let send = crate::kit::bridge::NetworkAdapter::policy(&env, &network_counts);
            let fut: overcast_harness::registry::NodeFuture = if env.role_as::<LeasesRole>()
                == LeasesRole::Server
            {
                let disk = crate::kit::server::recording_disk(
                    &env,
                    recorder,
                    |r| {
                        Some(history::LeaseEvent::Logged {
                            partition: r.partition,
                            lsn: r.lsn,
                            effect: r.effect,
                        })
                    },
                    |kept| history::LeaseEvent::Recovered { kept },
                );
                ServerSetup::new(
                    vec![CONTAINER.to_string()],
                    p.server_faults.clone(),
                    p.fsync_ms,
                    bugs,
                    StreamNames::OneServer,
                )
                .program(&env, send.clone(), Arc::new(disk), &program_logs, stats)
            } else {
                Box::pin(async move {
                    let tag = format!("{}-{}", env.name, env.incarnation);
                    let sdk = SdkSetup {
                        servers: &LeasesRole::Server,
                        partitions: 1,
                        retry: &p.retry,
                        bugs,
                        send,
                        connect: Default::default(),
                    };
                    let Some(mut client) = sdk.connect(&env, &format!("{tag}-sdk")).await else {
                        return;
                    };
                    let nodes = p.holders + p.clients;
                    let index = if env.role_as::<LeasesRole>() == LeasesRole::Holder {
                        env.index
                    } else {
                        p.holders + env.index
                    };
                    let node = workload::Node {
                        rec: recorder,
                        id: overcast_harness::registry::history_client(
                            index,
                            env.incarnation,
                            nodes,
                        ),
                        name: env.incarnation_name(),
                        clock: ClockAdapter(env.clock.clone()),
                    };
                    let rng = stream(env.seed, &format!("{tag}-workload"));
                    let deadline_ns = env.deadline.as_nanos() as u64;
                    if env.role_as::<LeasesRole>() == LeasesRole::Holder {
                        workload::holder(&p, &node, &mut client, rng, bugs, deadline_ns).await;
                    } else {
                        // Drawn only on an explorer's branch.
                        let branch = stream(env.seed, &format!("{tag}-branch-steps"));
                        workload::client(&p, &node, &mut client, rng, branch, deadline_ns).await;
                    }
                })
            };
            fut
        });
        let collect = Box::new(move |world: &overcast_sim::world::WorldOutcome| {
            let history = recorder.take_history(world.events.clone());
            let stats = stats.lock().unwrap_or_else(|e| e.into_inner());
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

    fn checkers(&self, p: &LeasesParams) -> Vec<Box<dyn Checker<LeaseHistory>>> {
        let mut checkers: Vec<Box<dyn Checker<LeaseHistory>>> =
            check::checkers_for((!p.skew_beyond_bound).then_some(ClockBound::DEFAULT))
                .into_iter()
                .map(|c| Box::new(c) as Box<dyn Checker<LeaseHistory>>)
                .collect();
        checkers.push(Box::new(crate::kit::durability::Durability::new()));
        checkers
    }

    fn timeline(
        &self,
        p: &LeasesParams,
        h: &history::LeaseHistory,
        t: &mut overcast_sim::timeline::Timeline,
    ) {
        timeline::draw(p, h, t);
    }

    fn goals(&self, _p: &LeasesParams) -> Vec<overcast_harness::goals::Goal<Self::History>> {
        goals::goals()
    }

    fn coverage(&self) -> Option<overcast_harness::registry::CoverageOf<LeaseHistory>> {
        Some(overcast_harness::registry::CoverageOf {
            tables: coverage::TABLES,
            count: coverage_of,
        })
    }

    fn reductions(&self) -> Vec<Reduction<LeasesParams>> {
        vec![
            ("one holder fewer", |p, i| {
                once(i, || {
                    (p.holders > 1).then(|| LeasesParams {
                        holders: p.holders - 1,
                        ..p.clone()
                    })
                })
            }),
            ("one client fewer", |p, i| {
                once(i, || {
                    (p.clients > 0).then(|| LeasesParams {
                        clients: p.clients - 1,
                        ..p.clone()
                    })
                })
            }),
            ("one blob fewer", |p, i| {
                once(i, || {
                    (p.blobs > 1).then(|| LeasesParams {
                        blobs: p.blobs - 1,
                        ..p.clone()
                    })
                })
            }),
            ("halve the client operations", |p, i| {
                once(i, || {
                    (p.clients > 0 && p.client_ops > 1).then(|| LeasesParams {
                        client_ops: (p.client_ops.min(64) / 2).max(1),
                        ..p.clone()
                    })
                })
            }),
            ("halve the holder rounds", |p, i| {
                once(i, || {
                    (p.holder_rounds > 1).then(|| LeasesParams {
                        holder_rounds: (p.holder_rounds.min(16) / 2).max(1),
                        ..p.clone()
                    })
                })
            }),
            ("halve the hold steps", |p, i| {
                once(i, || {
                    (p.hold_steps > 1).then(|| LeasesParams {
                        hold_steps: (p.hold_steps / 2).max(1),
                        ..p.clone()
                    })
                })
            }),
            ("no server fault points", |p, i| {
                once(i, || {
                    (p.server_faults != FaultRates::default()).then(|| LeasesParams {
                        server_faults: FaultRates::default(),
                        ..p.clone()
                    })
                })
            }),
        ]
    }
}

/// The coverage of one history: [`coverage::of`] over the visits of the
/// lease checkers' walk ([`check::analyse`]).
fn coverage_of(h: &LeaseHistory) -> overcast_harness::coverage::Coverage {
    coverage::of(h, check::analyse(h).visits)
}
