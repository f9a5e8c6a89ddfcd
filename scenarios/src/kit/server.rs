//! The program of a storage-server node, as every scenario with one store
//! per server runs it: the model's server over the node's clock and disk,
//! its fault points drawn from streams of its own, reporting what it does
//! with its log (D1). Each scenario says only what differs: its containers,
//! rates, disk wrapper and how its streams are named.

use crate::kit::bridge::{ClockAdapter, DiskAdapter, RecordingDisk, ServerStreams};
use crate::kit::durability::LogSink;
use overcast_harness::registry::NodeFuture;
use overcast_model::bugs::ModelBugs;
use overcast_model::env::{LogDevice, SendPolicy};
use overcast_model::server::{serve, FaultRates, ServerConfig, ServerStats};
use overcast_sim::world::NodeEnv;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How many disks a server with a mirrored log keeps it on: one copy
/// corrupt (the bound of [`mirrored_log_budget`]) is repaired from the other.
pub const LOG_COPIES: usize = 2;

/// The budget of a scenario whose one server mirrors its log on
/// [`LOG_COPIES`] disks: corrupting disk faults on at most one of them (with
/// both corrupt a record could be lost from every copy, and the server would
/// refuse service), the others on both; `before` and `after` are the rest of
/// the promise.
pub fn mirrored_log_budget(before: &str, after: &str) -> overcast_sim::faults::FaultBudget {
    overcast_sim::faults::FaultBudget {
        promise: format!(
            "{before}storage corruption (bit flips on write, misdirected and lost writes) on at most one of the two disks the server mirrors its log on, flips on read and failed syncs on both; {after}"
        ),
        corrupt_disks: Some(1),
        intact_disks: 1,
        spared: Vec::new(),
        per_node: false,
    }
}

/// The budget of a scenario whose every replica mirrors its log on
/// [`LOG_COPIES`] disks and repairs it alone: corrupting disk faults on at
/// most one of each replica's disks (with both of one replica's corrupt, a
/// record it acknowledged could be lost from every copy, and that replica
/// would refuse), the others on every disk; `before` and `after` are the
/// rest of the promise.
pub fn mirrored_replica_logs_budget(
    before: &str,
    after: &str,
) -> overcast_sim::faults::FaultBudget {
    overcast_sim::faults::FaultBudget {
        promise: format!(
            "{before}storage corruption (bit flips on write, misdirected and lost writes) on at most one of the two disks each replica mirrors its log on, flips on read and failed syncs on all; {after}"
        ),
        corrupt_disks: Some(1),
        intact_disks: 1,
        spared: Vec::new(),
        per_node: true,
    }
}

/// The server fault points a scenario runs with unless it says otherwise:
/// a few percent of throttling and transient statuses, with the sub-statuses
/// and retry-after variants the SDK must tell apart.
pub fn default_server_faults() -> FaultRates {
    FaultRates {
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
        storms: None,
    }
}

/// How a server incarnation's random streams are named: saved files and
/// traces depend on it, so each scenario keeps the name it has always had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamNames {
    /// `server-{index}-{incarnation}`: scenarios with several servers.
    ByIndex,
    /// `server-{incarnation}`: scenarios with their one server.
    OneServer,
}

/// What a scenario's server nodes run with.
#[derive(Clone, Debug)]
pub struct ServerSetup {
    /// Containers created at start-up.
    pub containers: Vec<String>,
    /// Physical feed ranges each partition starts with.
    pub feed_ranges: u32,
    /// The server's fault points.
    pub faults: FaultRates,
    /// A sync's latency, ms range.
    pub fsync_ms: (u64, u64),
    /// The model's seeded bugs switched on.
    pub bugs: ModelBugs,
    /// How the streams are named.
    pub streams: StreamNames,
}

impl ServerSetup {
    /// The setup with `containers`, every other field as most scenarios
    /// have it: the model's initial feed ranges.
    pub fn new(
        containers: Vec<String>,
        faults: FaultRates,
        fsync_ms: (u64, u64),
        bugs: ModelBugs,
        streams: StreamNames,
    ) -> ServerSetup {
        ServerSetup {
            containers,
            feed_ranges: overcast_model::feed::INITIAL_RANGES,
            faults,
            fsync_ms,
            bugs,
            streams,
        }
    }

    /// The program of server node `env`: sends by `send`, logs to `log`
    /// (and to a copy on each of the node's further disks, a mirrored log),
    /// reports its log to `logs` and its counters to `stats`. A restarted
    /// incarnation keeps quiet for the longest a datagram can be in flight,
    /// so no answer of its previous life is taken for one of this.
    pub fn program(
        self,
        env: &NodeEnv,
        send: SendPolicy,
        log: Arc<dyn LogDevice>,
        logs: &LogSink,
        stats: Arc<Mutex<ServerStats>>,
    ) -> NodeFuture {
        let cfg = ServerConfig {
            bind: env.addr(),
            containers: self.containers,
            feed_ranges: self.feed_ranges,
            faults: self.faults,
            fsync_ms: self.fsync_ms,
            bugs: self.bugs,
            send,
            quiet_after_restart: if env.incarnation == 0 {
                Duration::ZERO
            } else {
                env.max_in_flight()
            },
            log: logs.report(env.incarnation_name()),
            listen: crate::kit::bridge::ListenAdapter::table(env),
        };
        let name = match self.streams {
            StreamNames::ByIndex => format!("server-{}-{}", env.index, env.incarnation),
            StreamNames::OneServer => format!("server-{}", env.incarnation),
        };
        let draws = ServerStreams::new(env.seed, name, Some(env.topology.clone()));
        let mut copies = vec![log];
        copies.extend(
            env.mirrors
                .iter()
                .map(|d| Arc::new(DiskAdapter(d.clone())) as Arc<dyn LogDevice>),
        );
        Box::pin(serve(
            cfg,
            Arc::new(ClockAdapter(env.clock.clone())),
            copies,
            draws,
            stats,
        ))
    }

    /// [`ServerSetup::program`] on the node's own disk, its records not
    /// recorded into the history.
    pub fn program_on_own_disk(
        self,
        env: &NodeEnv,
        send: SendPolicy,
        logs: &LogSink,
        stats: Arc<Mutex<ServerStats>>,
    ) -> NodeFuture {
        self.program(env, send, Arc::new(disk_of(env)), logs, stats)
    }
}

/// The disk of server node `env`.
fn disk_of(env: &NodeEnv) -> DiskAdapter {
    DiskAdapter(env.disk.clone().expect("servers have disks"))
}

/// The disk of server node `env`, each log record appended and each
/// recovery recorded into `recorder` as the event `logged` and `recovered`
/// make of it.
pub fn recording_disk<C, R, E>(
    env: &NodeEnv,
    recorder: overcast_sim::history::Recorder<C, R, E>,
    logged: fn(overcast_model::wal::LogRecord) -> Option<E>,
    recovered: fn(u64) -> E,
) -> RecordingDisk<C, R, E> {
    RecordingDisk {
        disk: disk_of(env),
        node: env.name.clone(),
        clock: env.clock.clone(),
        recorder,
        logged,
        recovered,
    }
}

/// Adds to `history` the event `refused(reason)` on `server-0` for each of
/// its `recoveries` that found the log beyond repair (every copy corrupt),
/// in time order among the other events: the checks that need the server
/// to serve read it to say why they judged nothing.
pub fn note_refusals<C, R, E, L>(
    history: &mut overcast_sim::history::History<C, R, E, L>,
    recoveries: &[overcast_model::server::Recovery],
    refused: impl Fn(String) -> E,
) {
    for r in recoveries {
        let Some(reason) = &r.unavailable else {
            continue;
        };
        let at = history.node_events.partition_point(|e| e.at_ns <= r.at_ns);
        history.node_events.insert(
            at,
            overcast_sim::history::NodeEvent {
                node: "server-0".into(),
                at_ns: r.at_ns,
                local_ms: r.local_ms,
                event: refused(reason.clone()),
            },
        );
    }
}
