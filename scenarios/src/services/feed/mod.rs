//! The `feed` scenario (the Cosmos DB change feed and its processor, SPEC §3):
//! one server (crashable, with a disk) holding the monitored container, the
//! lease container and the change feed; writers creating, replacing,
//! upserting, soft-deleting (TTL-purged) and batch-writing items over
//! partition keys; 2–5 processor hosts (crashable; some leave and rejoin)
//! whose delegates record every delivery, sometimes throw and are sometimes
//! slower than a renew interval; a splitter that splits ranges in the fault
//! window; a pull-model reader. Faults: crashes, pauses, partitions, clock
//! offset and drift per host (kept below the processor's stated premise),
//! lost and delayed messages, server fault points. Every run ends healed,
//! with a quiet phase long enough for balancing and redelivery. Checked:
//! CF1–CF13 (see [`check`]).

pub mod check;
pub mod goals;
pub mod history;
pub mod properties;
pub mod timeline;
pub mod workload;

use crate::kit::bridge::{ClockAdapter, NetworkAdapter, NetworkCounts};
use crate::kit::client::SdkSetup;
use crate::kit::server::{ServerSetup, StreamNames};
use history::{FeedHistory, FeedRecorder};
use overcast_harness::bug::BugInfo;
use overcast_harness::params::{self, ParamError, SizeLimit};
use overcast_harness::registry::{once, Deployment, Reduction, RunCtx, RunDefaults, ScenarioDef};
use overcast_model::feed_processor::{
    prepare_lease_container, run_host, ProcessorOptions, ProcessorStart,
};
use overcast_model::retry::RetryOptions;
use overcast_model::server::{FaultRates, ServerStats};
use overcast_sim::check::Checker;
use overcast_sim::faults::{FaultMix, FaultPlan};
use overcast_sim::rng::stream;
use overcast_sim::world::{NodeEnv, Role, Topology};
use proptest::prelude::*;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The monitored container.
pub const ITEMS: &str = "items";
/// The lease container.
pub const LEASES: &str = "leases";

/// The parameters of `feed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedParams {
    /// Processor hosts (2–5).
    pub hosts: usize,
    /// Physical ranges the items' feed starts with (1–4; 4 but in a
    /// shrunk run: fewer ranges, fewer leases and feed reads).
    #[serde(default = "four_ranges")]
    pub ranges: u32,
    /// Writers.
    pub writers: usize,
    /// Partition keys written.
    pub keys: usize,
    /// Item ids per partition key.
    pub items_per_key: usize,
    /// Most writes per writer (it also stops at the deadline).
    pub writer_ops: usize,
    /// Pause between a writer's writes, ms range.
    pub write_pause_ms: (u64, u64),
    /// Share of writes that are transactional batches (2–4 upserts, one LSN).
    pub batch_probability: f64,
    /// Share of writes that are soft deletes (purged after `ttl_s`).
    pub soft_delete_probability: f64,
    /// The soft-deleted items' time to live, s.
    pub ttl_s: u64,
    /// The processor's default intervals (17 s renew, 13 s acquire, 60 s
    /// expiration, 5 s poll) are multiplied by this.
    pub time_scale: f64,
    /// `WithMaxItems` and the pull reader's page-size hint.
    pub max_items: usize,
    /// Start from "now" (the default `Time(UtcNow − 1 s)`) instead of the beginning.
    pub start_now: bool,
    /// Share of delegate calls that throw (only in the fault window).
    pub delegate_fail: f64,
    /// Share of delegate calls that are slow (only in the fault window).
    pub delegate_slow: f64,
    /// A slow delegate call, in renew intervals.
    pub slow_renews: f64,
    /// A normal delegate call, ms range.
    pub delegate_ms: (u64, u64),
    /// Range splits in the fault window.
    pub splits: usize,
    /// Share of hosts that leave (`StopAsync`) once and rejoin.
    pub leave_probability: f64,
    /// The pull-model reader's pause between pages, ms.
    pub reader_pause_ms: u64,
    /// Server fault points.
    pub server_faults: FaultRates,
    /// The SDK's retry budgets and request timeout.
    pub retry: RetryOptions,
    /// Log sync latency, ms range.
    pub fsync_ms: (u64, u64),
    /// The hosts' poll interval, ms, when not the scaled default (a shrunk
    /// run may poll less often: fewer feed reads tell the same story).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_ms: Option<u64>,
    /// The lease container was initialised before the hosts started, as an
    /// earlier deployment leaves it (`.info` and a lease per range, by
    /// host-0, its calls not part of the run's operations), so every host's
    /// bootstrap finds `.info` at once. A shrunk run: the bootstrap's race
    /// and its half-dozen calls are a story of their own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prepared: bool,
}

fn four_ranges() -> u32 {
    overcast_model::feed::INITIAL_RANGES
}

impl Default for FeedParams {
    fn default() -> Self {
        FeedParams {
            hosts: 3,
            ranges: four_ranges(),
            writers: 2,
            keys: 12,
            items_per_key: 3,
            writer_ops: 400,
            write_pause_ms: (20, 300),
            batch_probability: 0.15,
            soft_delete_probability: 0.08,
            ttl_s: 8,
            time_scale: 0.1,
            max_items: 6,
            start_now: false,
            delegate_fail: 0.05,
            delegate_slow: 0.05,
            slow_renews: 1.5,
            delegate_ms: (1, 40),
            splits: 2,
            leave_probability: 0.3,
            reader_pause_ms: 300,
            // Throttling only: the SDK retries it. A server 408 on a read
            // surfaces and releases the lease (SPEC §3.3.5 step 2); the fault
            // points fire for the whole run, so with them the quiet phase
            // would never be quiet. Reads fail in the window anyway
            // (partitions, crashes), which exercises that path.
            server_faults: FaultRates {
                throttle: 0.01,
                retry_after_ms: (1, 100),
                ..FaultRates::default()
            },
            retry: scaled_retry(0.1),
            fsync_ms: (1, 3),
            poll_ms: None,
            prepared: false,
        }
    }
}

/// The SDK's time budgets (6 s request timeout, 30 s windows) times `scale`,
/// like the processor's intervals: otherwise one lost datagram stalls a
/// renewer for a whole (scaled) lease expiration.
pub fn scaled_retry(scale: f64) -> RetryOptions {
    let d = RetryOptions::default();
    let s = |x: Duration| Duration::from_secs_f64(x.as_secs_f64() * scale);
    RetryOptions {
        request_timeout: s(d.request_timeout),
        gone_window: s(d.gone_window),
        retry_with_window: s(d.retry_with_window),
        max_rate_limited_wait: s(d.max_rate_limited_wait),
        ..d
    }
}

/// The processor options of host `name` under `p`.
pub fn options(
    p: &FeedParams,
    name: &str,
    bugs: overcast_model::bugs::ModelBugs,
) -> ProcessorOptions {
    ProcessorOptions {
        monitored: ITEMS.into(),
        lease_container: LEASES.into(),
        max_items: p.max_items,
        start: if p.start_now {
            ProcessorStart::Now
        } else {
            ProcessorStart::Beginning
        },
        bugs,
        ..scaled_options(p, name)
    }
}

/// With `prepared`: host-0 initialises the lease container, unless a life
/// of it before did ([`prepare_lease_container`]); every other host waits
/// until that is done, so each one's bootstrap finds `.info` at once.
async fn prepare_or_wait(
    opts: &ProcessorOptions,
    env: &NodeEnv,
    client: &mut overcast_model::client::StoreClient,
    ready: &std::sync::atomic::AtomicBool,
) {
    use std::sync::atomic::Ordering;
    if env.index == 0 {
        if !ready.load(Ordering::Relaxed) {
            let clock = Arc::new(ClockAdapter(env.clock.clone()));
            if prepare_lease_container(opts.clone(), clock, client, u64::MAX).await {
                ready.store(true, Ordering::Relaxed);
            }
        }
    } else {
        while !ready.load(Ordering::Relaxed) {
            madsim::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The processor's intervals for `p`: the defaults times its time scale,
/// and its own poll interval if it has one.
fn scaled_options(p: &FeedParams, name: &str) -> ProcessorOptions {
    let o = ProcessorOptions::scaled(name, p.time_scale);
    ProcessorOptions {
        poll_ms: p.poll_ms.unwrap_or(o.poll_ms),
        ..o
    }
}

/// The largest clock offset of any node, ms: host clocks stay well within the
/// processor's premise (skew below expiration − renew interval, SPEC CF3).
pub fn max_offset_ms(p: &FeedParams) -> i64 {
    let o = ProcessorOptions::scaled("h", p.time_scale);
    ((o.expiration_ms - o.renew_ms) / 4) as i64
}

overcast_sim::node_roles! {
    /// The kinds of node of the `feed` scenario.
    pub enum FeedRole {
        /// The one storage server.
        Server = "server",
        /// The change feed processor hosts.
        Host = "host",
        /// The writers.
        Writer = "writer",
        /// The node that splits partitions.
        Splitter = "splitter",
        /// The pull reader.
        Reader = "reader",
    }
}

/// The `feed` scenario.
pub struct Feed;

impl ScenarioDef for Feed {
    type Params = FeedParams;
    type History = FeedHistory;

    fn bugs(&self) -> Vec<&'static BugInfo> {
        crate::bugs::of(ScenarioDef::name(self))
    }

    fn budget(&self) -> overcast_sim::faults::FaultBudget {
        crate::kit::server::mirrored_log_budget(
            "host clock offsets within the processor's premise (a quarter of expiration minus renew interval), drift within 200 ppm, no steps; ",
            "every network, crash and pause fault of the mix",
        )
    }

    fn name(&self) -> &'static str {
        "feed"
    }

    fn describe(&self) -> &'static str {
        "the change feed and its processor through crashes, steals, splits and skew (SPEC §3): CF1–CF13"
    }

    fn params(&self, seed: u64) -> FeedParams {
        let mut rng = stream(seed, "feed-params");
        FeedParams {
            hosts: rng.gen_range(2..=5),
            start_now: rng.gen_bool(0.3),
            splits: rng.gen_range(0..=3),
            ..FeedParams::default()
        }
    }

    fn defaults(&self) -> RunDefaults {
        RunDefaults {
            faults: FaultMix {
                packet_loss: 0.01,
                latency_ms: (1, 10),
                partitions_per_min: 6.0,
                crashes_per_min: 6.0,
                pauses_per_min: 6.0,
                lose_unsynced_on_crash: true,
                max_clock_offset_ms: 1_000,
                max_drift_ppm: 200,
                clock_steps_per_min: 0.0,
                storage: FaultMix::DEFAULT_STORAGE,
                network: Default::default(),
            },
            fault_window_ms: 30_000,
            deadline_ms: 30_000,
            quiet_ms: 40_000,
        }
    }

    fn strategy(&self) -> BoxedStrategy<FeedParams> {
        (
            2usize..=5,
            1usize..=3,
            1usize..=16,
            0usize..=3,
            any::<bool>(),
        )
            .prop_map(|(hosts, writers, keys, splits, start_now)| FeedParams {
                hosts,
                writers,
                keys,
                splits,
                start_now,
                ..FeedParams::default()
            })
            .boxed()
    }

    /// Sizes beyond these were never run: a run takes minutes or its checks
    /// give up (measured: each limit alone runs in seconds).
    fn limits(&self) -> &'static [SizeLimit] {
        const LIMITS: &[SizeLimit] = &[
            SizeLimit::new("hosts", 5),
            SizeLimit::new("writers", 100),
            SizeLimit::new("keys", 1000),
            SizeLimit::new("items_per_key", 100),
            SizeLimit::new("writer_ops", 40000),
            SizeLimit::new("max_items", 1000),
            SizeLimit::new("splits", 100),
        ];
        LIMITS
    }

    fn validate(&self, p: &FeedParams) -> Result<(), ParamError> {
        params::at_least_one(&[("hosts", p.hosts as u64)])?;
        if !(1..=four_ranges()).contains(&p.ranges) {
            return Err(ParamError::new(format!(
                "ranges must be 1–{}",
                four_ranges()
            )));
        }
        params::at_least_one(&[
            ("keys", p.keys as u64),
            ("items_per_key", p.items_per_key as u64),
        ])?;
        if !(0.01..=1.0).contains(&p.time_scale) {
            return Err(ParamError::new("time_scale must be between 0.01 and 1"));
        }
        params::ordered(&[
            ("write_pause_ms", p.write_pause_ms),
            ("delegate_ms", p.delegate_ms),
            ("fsync_ms", p.fsync_ms),
        ])?;
        params::probabilities(&[
            ("batch_probability", p.batch_probability),
            ("soft_delete_probability", p.soft_delete_probability),
            ("delegate_fail", p.delegate_fail),
            ("delegate_slow", p.delegate_slow),
            ("leave_probability", p.leave_probability),
        ])?;
        if p.batch_probability + p.soft_delete_probability > 0.9 {
            return Err(ParamError::new(
                "batches and soft deletes leave too few plain writes",
            ));
        }
        Ok(())
    }

    fn header(&self, p: &FeedParams) -> String {
        let o = scaled_options(p, "h");
        format!(
            "hosts={} ranges={} writers={} keys={}×{} splits={} start={} max_items={}{}\n\
             processor: renew {} ms, acquire {} ms, expiration {} ms, poll {} ms; delegate fail={} slow={}; server 429={} 408={}",
            p.hosts,
            p.ranges,
            p.writers,
            p.keys,
            p.items_per_key,
            p.splits,
            if p.start_now { "now" } else { "beginning" },
            p.max_items,
            if p.prepared {
                " lease-container=initialised-beforehand"
            } else {
                ""
            },
            o.renew_ms,
            o.acquire_ms,
            o.expiration_ms,
            o.poll_ms,
            p.delegate_fail,
            p.delegate_slow,
            p.server_faults.throttle,
            p.server_faults.timeout,
        )
    }

    fn topology(&self, p: &FeedParams) -> Topology {
        Topology::new(vec![
            // Its log mirrored on two disks (`server-0`, `server-0.b`).
            Role::new(FeedRole::Server, 1)
                .with_disks(crate::kit::server::LOG_COPIES)
                .crashable(),
            Role::new(FeedRole::Host, p.hosts).crashable(),
            Role::new(FeedRole::Writer, p.writers).awaited(),
            Role::new(FeedRole::Splitter, 1),
            Role::new(FeedRole::Reader, 1),
        ])
    }

    fn adjust_plan(&self, p: &FeedParams, plan: &mut FaultPlan) {
        // The processor's premise (CF3, CF8): host skew below expiration −
        // renew interval. Offsets are clamped well inside it, steps dropped.
        let max = max_offset_ms(p);
        for skew in plan.clocks.values_mut() {
            skew.offset_ms = skew.offset_ms.clamp(-max, max);
            skew.drift_ppm = skew.drift_ppm.clamp(-200, 200);
            skew.steps.clear();
        }
    }

    fn deploy(&self, p: &FeedParams, ctx: &RunCtx) -> Deployment<FeedHistory> {
        let bugs = crate::bugs::model_bugs(&ctx.bugs);
        let stats = Arc::new(Mutex::new(ServerStats::default()));
        // What the servers do with their logs (D1).
        let logs = crate::kit::durability::LogSink::new();
        let program_logs = logs.clone();
        let recorder = FeedRecorder::new();
        // Set once host-0 has prepared the lease container (`prepared`).
        let lease_container_ready = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let params = p.clone();
        let program_stats = stats.clone();
        let program_recorder = recorder.clone();
        let network_counts = NetworkCounts::default();
        let program = Box::new(move |env: NodeEnv| {
            let p = params.clone();
            let stats = program_stats.clone();
            let recorder = program_recorder.clone();
            let ready = lease_container_ready.clone();
            let send = NetworkAdapter::policy(&env, &network_counts);
            let fut: overcast_harness::registry::NodeFuture = if env.role_as::<FeedRole>()
                == FeedRole::Server
            {
                let disk = crate::kit::server::recording_disk(
                    &env,
                    recorder,
                    |r| {
                        Some(history::FeedEvent::Logged {
                            lsn: r.lsn,
                            effect: r.effect,
                        })
                    },
                    |kept| history::FeedEvent::Recovered { kept },
                );
                ServerSetup {
                    feed_ranges: p.ranges,
                    ..ServerSetup::new(
                        vec![],
                        p.server_faults.clone(),
                        p.fsync_ms,
                        bugs,
                        StreamNames::OneServer,
                    )
                }
                .program(&env, send.clone(), Arc::new(disk), &program_logs, stats)
            } else {
                Box::pin(async move {
                    let sdk = SdkSetup {
                        servers: &FeedRole::Server,
                        partitions: 1,
                        retry: &p.retry,
                        bugs,
                        send,
                        connect: Default::default(),
                    };
                    let tag = format!("{}-{}", env.name, env.incarnation);
                    let connect = |what: &str| {
                        let name = format!("{tag}-{what}");
                        let (sdk, env) = (&sdk, &env);
                        async move { sdk.connect(env, &name).await }
                    };
                    let Some(mut client) = connect("sdk").await else {
                        return;
                    };
                    let mut rng = stream(env.seed, &format!("{tag}-workload"));
                    let deadline_ns = env.deadline.as_nanos() as u64;
                    let clock = ClockAdapter(env.clock.clone());
                    let name = env.incarnation_name();
                    match env.role_as::<FeedRole>() {
                        FeedRole::Writer => {
                            workload::writer(
                                &p,
                                env.index,
                                &mut client,
                                &recorder,
                                rng,
                                deadline_ns,
                            )
                            .await
                        }
                        FeedRole::Splitter => {
                            workload::splitter(
                                &p,
                                &mut client,
                                &recorder,
                                &name,
                                &clock,
                                rng,
                                deadline_ns,
                            )
                            .await
                        }
                        FeedRole::Reader => {
                            workload::reader(&p, &mut client, &recorder, &name, &clock).await
                        }
                        // The server runs its own program, above.
                        FeedRole::Server => {}
                        FeedRole::Host => {
                            let opts = options(&p, &env.name, bugs);
                            let slow_ms = (opts.renew_ms as f64 * p.slow_renews) as u64;
                            let mut delegate = workload::RecordingDelegate {
                                rng: stream(env.seed, &format!("{tag}-delegate")),
                                fail: p.delegate_fail,
                                slow: p.delegate_slow,
                                slow_ms,
                                run_ms: p.delegate_ms,
                                calm_after_ns: deadline_ns,
                            };
                            let observer = Rc::new(workload::HostObserver {
                                rec: recorder.clone(),
                                name: name.clone(),
                                clock: env.clock.clone(),
                                client: p.writers + 1 + env.index,
                                deadline_ns,
                                asked: Default::default(),
                            });
                            if p.prepared {
                                prepare_or_wait(&opts, &env, &mut client, &ready).await;
                            }
                            // Some hosts leave once (StopAsync) and rejoin, in the window.
                            let leave = env.incarnation == 0 && rng.gen_bool(p.leave_probability);
                            if leave {
                                let at = rng.gen_range(deadline_ns / 5..deadline_ns / 2);
                                let away = rng.gen_range(deadline_ns / 10..deadline_ns / 4);
                                let Some(renew) = connect("renew").await else {
                                    return;
                                };
                                run_host(
                                    opts.clone(),
                                    Arc::new(ClockAdapter(env.clock.clone())),
                                    observer.clone(),
                                    client,
                                    renew,
                                    &mut delegate,
                                    at,
                                )
                                .await;
                                madsim::time::sleep(Duration::from_nanos(away)).await;
                                let Some(c) = connect("sdk2").await else {
                                    return;
                                };
                                client = c;
                            }
                            let Some(renew) = connect(if leave { "renew2" } else { "renew" }).await
                            else {
                                return;
                            };
                            run_host(
                                opts,
                                Arc::new(ClockAdapter(env.clock.clone())),
                                observer,
                                client,
                                renew,
                                &mut delegate,
                                u64::MAX,
                            )
                            .await;
                        }
                    }
                })
            };
            fut
        });
        let collect = Box::new(move |world: &overcast_sim::world::WorldOutcome| {
            let mut history = recorder.take_history(world.events.clone());
            let stats = stats.lock().unwrap_or_else(|e| e.into_inner());
            crate::kit::server::note_refusals(&mut history, &stats.recoveries, |reason| {
                history::FeedEvent::Refused { reason }
            });
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

    fn timeline(&self, p: &FeedParams, h: &FeedHistory, t: &mut overcast_sim::timeline::Timeline) {
        timeline::draw(p, h, t);
    }

    fn checkers(&self, p: &FeedParams) -> Vec<Box<dyn Checker<FeedHistory>>> {
        let mut checkers: Vec<Box<dyn Checker<FeedHistory>>> = check::checkers(p)
            .into_iter()
            .map(|c| Box::new(c) as Box<dyn Checker<FeedHistory>>)
            .collect();
        checkers.push(Box::new(crate::kit::durability::Durability::new()));
        checkers
    }

    /// CF1, CF2, CF4, CF5, CF6, CF9 and CF10–CF13 are judged on what was
    /// delivered, read and committed before the violation; CF3 (every final
    /// version delivered), CF7 and CF8 (the leases at the end) and liveness
    /// need the whole quiet phase.
    fn prefix_closed(&self, property: overcast_sim::check::PropertyId) -> bool {
        matches!(
            property.as_str(),
            "CF1" | "CF2" | "CF4" | "CF5" | "CF6" | "CF9" | "CF10" | "CF11" | "CF12" | "CF13"
        )
    }

    /// CF3, CF7 and CF8 are not judged on a run whose quiet phase ended
    /// too soon after the last fault, write or left-out call for the hosts
    /// to settle (`check::settle_ns`): a shorter run never breaks them for
    /// want of time (CF3 judges there only a version every lease covering
    /// it has checkpointed past, which no host reads again).
    fn judges_its_premise(&self, property: overcast_sim::check::PropertyId) -> bool {
        check::END_OF_RUN.contains(&property.as_str())
    }

    fn goals(&self, _p: &FeedParams) -> Vec<overcast_harness::goals::Goal<Self::History>> {
        goals::goals()
    }

    fn reductions(&self) -> Vec<Reduction<FeedParams>> {
        vec![
            ("one host fewer", |p, i| {
                once(i, || {
                    (p.hosts > 1).then(|| FeedParams {
                        hosts: p.hosts - 1,
                        ..p.clone()
                    })
                })
            }),
            ("one range fewer", |p, i| {
                once(i, || {
                    (p.ranges > 1).then(|| FeedParams {
                        ranges: p.ranges - 1,
                        ..p.clone()
                    })
                })
            }),
            ("one writer fewer", |p, i| {
                once(i, || {
                    (p.writers > 1).then(|| FeedParams {
                        writers: p.writers - 1,
                        ..p.clone()
                    })
                })
            }),
            ("halve the writer operations", |p, i| {
                once(i, || {
                    overcast_harness::registry::halve(p.writer_ops.min(400), 1).map(|writer_ops| {
                        FeedParams {
                            writer_ops,
                            ..p.clone()
                        }
                    })
                })
            }),
            ("no splits", |p, i| {
                once(i, || {
                    (p.splits > 0).then(|| FeedParams {
                        splits: 0,
                        ..p.clone()
                    })
                })
            }),
            ("halve the page size", |p, i| {
                // `WithMaxItems` and the pull reader's page-size hint: a
                // failure about where a page is cut needs fewer items in a
                // range to show with a smaller page.
                once(i, || {
                    overcast_harness::registry::halve(p.max_items, 1).map(|max_items| FeedParams {
                        max_items,
                        ..p.clone()
                    })
                })
            }),
            ("poll a quarter as often", |p, i| {
                // Up to the lease expiration: the checks' premises (CF3's
                // skew, CF8's quiescence) do not depend on the poll.
                once(i, || {
                    let o = scaled_options(p, "h");
                    let slower = (o.poll_ms * 4).min(o.expiration_ms);
                    (slower > o.poll_ms).then(|| FeedParams {
                        poll_ms: Some(slower),
                        ..p.clone()
                    })
                })
            }),
            ("lease container initialised beforehand", |p, i| {
                once(i, || {
                    (!p.prepared).then(|| FeedParams {
                        prepared: true,
                        ..p.clone()
                    })
                })
            }),
            ("no server fault points", |p, i| {
                once(i, || {
                    (p.server_faults != FaultRates::default()).then(|| FeedParams {
                        server_faults: FaultRates::default(),
                        ..p.clone()
                    })
                })
            }),
        ]
    }
}
