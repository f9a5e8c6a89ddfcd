//! What the Cosmos and Search scenarios share with each other (and take from
//! `occ`): the server node program, the client's configuration, recording a
//! call into the history, the linearizability verdict of a report, and retry
//! discipline (R1–R3) over any history whose calls say whether they are reads.

use crate::kit::attempts::attempt;
use crate::kit::client::SdkSetup;
use crate::kit::retry::{check_retries, RetryCase, RetryRules, Surfaced};
use overcast_harness::registry::RunDefaults;
use overcast_model::bugs::ModelBugs;
use overcast_model::client::{CallResult, StoreClient};
use overcast_model::retry::RetryOptions;
use overcast_model::server::{FaultRates, ServerStats};
use overcast_sim::check::{Checked, Checker, Verdict};
use overcast_sim::faults::FaultMix;
use overcast_sim::history::{History, OpRecord, Recorder};
use overcast_sim::world::NodeEnv;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The envelope both dialect scenarios start from (occ's).
pub fn run_defaults() -> RunDefaults {
    RunDefaults {
        faults: FaultMix::default(),
        fault_window_ms: 5_000,
        deadline_ms: 60_000,
        quiet_ms: 1_000,
    }
}

/// What the dialect scenarios' reductions shrink, borrowed from their
/// parameters.
pub struct StoreSize<'a> {
    /// SDK clients.
    pub clients: &'a mut usize,
    /// Operations per client.
    pub ops_per_client: &'a mut usize,
    /// Storage servers.
    pub servers: &'a mut usize,
    /// The servers' fault points.
    pub server_faults: &'a mut FaultRates,
}

/// The parameters of a scenario of storage servers and SDK clients.
pub trait StoreParams: Clone + 'static {
    /// Its sizes, to shrink.
    fn size(&mut self) -> StoreSize<'_>;
}

/// `p` changed by `f`, if `f` says it changed anything.
fn reduced<P: StoreParams>(p: &P, f: impl FnOnce(StoreSize<'_>) -> bool) -> Option<P> {
    let mut q = p.clone();
    f(q.size()).then_some(q)
}

/// `p` with the count `field` picks set to `to` of it, if that is lower.
fn lowered<P: StoreParams>(
    p: &P,
    field: for<'a> fn(StoreSize<'a>) -> &'a mut usize,
    to: fn(usize) -> Option<usize>,
) -> Option<P> {
    reduced(p, |s| {
        let n = field(s);
        to(*n).map(|m| *n = m).is_some()
    })
}

/// One fewer, not below one.
fn minus_one(n: usize) -> Option<usize> {
    (n > 1).then(|| n - 1)
}

/// Half, not below one.
fn half(n: usize) -> Option<usize> {
    overcast_harness::registry::halve(n, 1)
}

/// The dialect scenarios' reductions, most powerful first: fewer clients,
/// fewer operations, no server fault points, fewer servers.
pub fn store_reductions<P: StoreParams>() -> Vec<overcast_harness::registry::Reduction<P>> {
    use overcast_harness::registry::once;
    vec![
        ("halve the clients", |p, i| {
            once(i, || lowered(p, |s| s.clients, half))
        }),
        ("halve the operations", |p, i| {
            once(i, || lowered(p, |s| s.ops_per_client, half))
        }),
        ("one operation fewer", |p, i| {
            once(i, || lowered(p, |s| s.ops_per_client, minus_one))
        }),
        ("one client fewer", |p, i| {
            once(i, || lowered(p, |s| s.clients, minus_one))
        }),
        ("no server fault points", |p, i| {
            once(i, || {
                reduced(p, |s| {
                    without_fault_points(s.server_faults)
                        .map(|f| *s.server_faults = f)
                        .is_some()
                })
            })
        }),
        ("one server fewer", |p, i| {
            once(i, || lowered(p, |s| s.servers, minus_one))
        }),
    ]
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
pub fn send_policy(env: &NodeEnv) -> overcast_model::env::SendPolicy {
    crate::kit::bridge::NetworkAdapter::policy(env, &crate::kit::bridge::NetworkCounts::default())
}

/// Connects a client node's SDK client; `None` (logged) if it cannot bind.
pub async fn connect_client(
    env: &NodeEnv,
    partitions: u32,
    retry: &RetryOptions,
    bugs: ModelBugs,
) -> Option<StoreClient> {
    SdkSetup {
        servers: &StoreRole::Server,
        partitions,
        retry,
        bugs,
        send: send_policy(env),
        connect: Default::default(),
    }
    .connect(env, &format!("client-{}-sdk", env.index))
    .await
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
            // These workloads never cancel a call.
            cancel_ns: None,
        });
        Checked::new(Verdict::from_violations(
            check_retries(&rules, cases).into_iter().collect(),
        ))
    }
}
