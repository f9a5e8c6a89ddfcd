//! What the Cosmos and Search scenarios share with each other (and take from
//! `occ`): the server node program, the client's configuration, recording a
//! call into the history, the linearizability verdict of a report, and retry
//! discipline (R1–R3) over any history whose calls say whether they are reads.

use crate::kit::attempts::attempt;
use crate::kit::bridge::{ClockAdapter, DiskAdapter, ServerStreams};
use crate::kit::retry::{check_retries, RetryCase, RetryRules, Surfaced};
use overcast_harness::registry::{NodeFuture, RunDefaults};
use overcast_model::bugs::ModelBugs;
use overcast_model::client::{CallResult, ClientConfig, StoreClient};
use overcast_model::retry::RetryOptions;
use overcast_model::server::{serve, FaultRates, ServerConfig, ServerStats};
use overcast_sim::check::{Checked, Checker, Verdict};
use overcast_sim::faults::FaultMix;
use overcast_sim::history::{History, OpRecord, Recorder};
use overcast_sim::lin;
use overcast_sim::rng::stream;
use overcast_sim::world::NodeEnv;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The server fault points both dialect scenarios run with by default (occ's rates).
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

/// The envelope both dialect scenarios start from (occ's).
pub fn run_defaults() -> RunDefaults {
    RunDefaults {
        faults: FaultMix::default(),
        fault_window_ms: 5_000,
        deadline_ms: 60_000,
        quiet_ms: 1_000,
    }
}

/// The fault rates with every fault point off (a shrink step).
pub fn without_fault_points(f: &FaultRates) -> Option<FaultRates> {
    (f.throttle + f.retry_with + f.unavailable + f.gone + f.timeout > 0.0).then(|| FaultRates {
        throttle: 0.0,
        retry_with: 0.0,
        unavailable: 0.0,
        gone: 0.0,
        timeout: 0.0,
        ..f.clone()
    })
}

/// Takes the lying disk out of a plan. A lying disk loses acknowledged writes
/// by design; `occ` names the items it lost and leaves them out of its checks;
/// these scenarios do not yet, so they would report an expected
/// loss as a violation. Disk faults the log detects stay on.
pub fn no_lying_disk(plan: &mut overcast_sim::faults::FaultPlan) {
    plan.storage.lost_write = 0.0;
}

overcast_sim::node_roles! {
    /// The kinds of node of a deployment of storage servers and their SDK
    /// clients, as the dialect scenarios (`cosmos`, `search`) have them; the
    /// helpers here find the servers by this role's name.
    pub enum StoreRole {
        /// The storage servers.
        Server = "server",
        /// The SDK clients.
        Client = "client",
    }
}

/// The plan's duplicated and reordered datagrams for this node's sends (not
/// counted in the run summary of these scenarios).
fn send_policy(env: &NodeEnv) -> overcast_model::env::SendPolicy {
    crate::kit::bridge::NetworkAdapter::policy(env, &crate::kit::bridge::NetworkCounts::default())
}

/// The program of a server node: the model's server over the node's clock
/// and disk, reporting what it does with its log to `logs` (D1).
pub fn server_program(
    env: &NodeEnv,
    containers: Vec<String>,
    faults: FaultRates,
    fsync_ms: (u64, u64),
    bugs: ModelBugs,
    stats: Arc<Mutex<ServerStats>>,
    logs: &crate::kit::durability::LogSink,
) -> NodeFuture {
    let cfg = ServerConfig {
        bind: env.addr(),
        containers,
        feed_ranges: overcast_model::feed::INITIAL_RANGES,
        faults,
        fsync_ms,
        bugs,
        send: send_policy(env),
        quiet_after_restart: if env.incarnation == 0 {
            std::time::Duration::ZERO
        } else {
            env.max_in_flight()
        },
        log: logs.report(env.incarnation_name()),
    };
    let draws = ServerStreams::new(
        env.seed,
        format!("server-{}-{}", env.index, env.incarnation),
        Some(env.topology.clone()),
    );
    let disk = env.disk.clone().expect("servers have disks");
    Box::pin(serve(
        cfg,
        Arc::new(ClockAdapter(env.clock.clone())),
        Arc::new(DiskAdapter(disk)),
        draws,
        stats,
    ))
}

/// Connects a client node's SDK client; `None` (logged) if it cannot bind.
pub async fn connect_client(
    env: &NodeEnv,
    partitions: u32,
    retry: &RetryOptions,
    bugs: ModelBugs,
) -> Option<StoreClient> {
    let cfg = ClientConfig {
        servers: env.topology.addrs(StoreRole::Server),
        partitions,
        retry: retry.clone(),
        bugs,
        send: send_policy(env),
    };
    let rng = stream(env.seed, &format!("client-{}-sdk", env.index));
    match StoreClient::connect(cfg, Box::new(rng)).await {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::error!("client {} could not bind: {e}", env.index);
            None
        }
    }
}

/// The servers' transient answers by status, for the run summary.
pub fn fault_counters(stats: &Mutex<ServerStats>) -> BTreeMap<String, u64> {
    let stats = stats.lock().unwrap_or_else(|e| e.into_inner());
    stats
        .transient
        .iter()
        .map(|(status, n)| (status.to_string(), *n))
        .collect()
}

/// Runs one call with its record: begun before it is sent (a call cut short
/// by a crash stays in the history with an unknown outcome), completed with
/// `outcome(result)` (`None` = unknown) and the attempts.
pub async fn recorded<C, R, E, T, F>(
    recorder: &Recorder<C, R, E>,
    client: usize,
    key: String,
    call: C,
    send: F,
    outcome: impl FnOnce(&CallResult<T>) -> Option<R>,
) -> CallResult<T>
where
    C: Clone,
    R: Clone,
    F: std::future::Future<Output = CallResult<T>>,
{
    let slot = recorder.begin(OpRecord {
        id: 0,
        client,
        key,
        call,
        invoke_ns: overcast_model::client::sim_now_ns(),
        return_ns: None,
        result: None,
        attempts: Vec::new(),
    });
    let result = send.await;
    recorder.complete(
        slot,
        Some(result.return_ns),
        outcome(&result),
        result.attempts.iter().map(attempt).collect(),
    );
    result
}

/// The checker's verdict on a linearizability report, with its explanation;
/// `name` says which history operation each checker operation belongs to
/// ([`crate::kit::words::LinOpName`]).
pub fn lin_checked(
    report: &lin::Report,
    title: &str,
    name: crate::kit::words::LinOpName<'_>,
) -> Checked {
    let verdict = match report.verdict {
        lin::Verdict::Linearizable => Verdict::Held,
        lin::Verdict::Unknown => Verdict::Undecided {
            reason: format!(
                "the linearizability search gave up: {}",
                report
                    .unknown_reason
                    .as_deref()
                    .unwrap_or("budget exhausted")
            ),
        },
        lin::Verdict::NotLinearizable => Verdict::Broken {
            violations: vec![crate::kit::words::lin_violation(report, "item", name)],
        },
    };
    let mut checked = Checked::new(verdict).with_note(format!("{} items", report.keys));
    if report.failure.is_some() {
        checked.explanation = Some(crate::kit::words::lin_text(report, "item", name));
        checked.html = Some(report.to_html(title));
    }
    checked
}

/// R1–R3 from each operation's attempt log, for a history whose calls say
/// whether they are reads (`idempotent`) and whose results give a status.
pub struct RetryDiscipline<C, R> {
    /// The SDK's budgets the run used.
    pub retry: RetryOptions,
    /// True for calls safe to re-send after a timeout (reads).
    pub idempotent: fn(&C) -> bool,
    /// The status a result surfaced.
    pub status: fn(&R) -> u16,
}

impl<C, R, L> Checker<History<C, R, (), L>> for RetryDiscipline<C, R> {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[
            crate::kit::properties::R1,
            crate::kit::properties::R2,
            crate::kit::properties::R3,
        ]
    }

    fn label(&self) -> &'static str {
        "client"
    }

    fn check(&self, history: &History<C, R, (), L>) -> Checked {
        let rules = RetryRules {
            max_rate_limited_retries: self.retry.max_rate_limited_retries,
            max_rate_limited_wait_ms: self.retry.max_rate_limited_wait.as_millis() as u64,
        };
        let cases = history.ops.iter().map(|o| RetryCase {
            op: o.id,
            idempotent: (self.idempotent)(&o.call),
            attempts: &o.attempts,
            surfaced: match &o.result {
                None => Surfaced::Unknown,
                Some(r) => Surfaced::Status((self.status)(r)),
            },
        });
        Checked::new(Verdict::from_violations(
            check_retries(&rules, cases).into_iter().collect(),
        ))
    }
}
