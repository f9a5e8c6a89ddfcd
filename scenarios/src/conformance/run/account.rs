//! A script's multi-region account (the `account` step): one replica node
//! per region (the first region's is the one voter, the write region's
//! primary; the others are read replicas the primary ships its log to), a
//! relay in front of each (which answers attempts itself when an `inject`
//! step covers them, or swallows them for a connection error), and the
//! multi-region SDK client ([`RegionClient`]) that the script's Cosmos
//! requests go through from the `account` step on.
//!
//! The client runs the SDK's defaults: a 6 s request timeout, the 1 s
//! failover wait ([`FAILOVER_WAIT`]), a region marked unavailable for 5 min
//! of the client's clock ([`UNAVAILABLE_FOR`]; `advance.client` moves it),
//! and `read_timeout_fails_over` (a read's swallowed attempt is a connection
//! error). Before each request the runner lets the account settle: the write
//! region has a primary and every region has applied what it committed, so
//! a session read anywhere sees the writes before it, and a 404/1002 is one
//! an `inject` step asked for.

use super::answer::{Answer, Observed};
use super::{relay, RelayWire, RunCtx};
use crate::conformance::format::{Account, Consistency};
use crate::kit::bridge::DiskAdapter;
use madsim::runtime::Runtime;
use madsim::task::NodeId;
use madsim::time::{sleep, Instant};
use overcast_model::partition::Request;
use overcast_model::region_client::{
    RegionCallResult, RegionClient, RegionClientConfig, RegionFinal, RegionInfo,
};
use overcast_model::replica::{ReadConsistency, ReplicaId, Role};
use overcast_model::replica_server::{
    client_request_kind, refusal_of, serve_replica, ReplicaReport, ReplicaServerConfig,
    SharedReport, MAX_REPLICA_DATAGRAM, REPLICA_TAG, REPLY_TAG,
};
use overcast_model::retry::{AttemptOutcome, FinalOutcome, RetryOptions, FAILOVER_WAIT};
use overcast_sim::disk::SimDisk;
use overcast_sim::rng::stream;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a region marked unavailable stays at the end of the client's
/// list: the SDK's 5 min (SPEC §4.1 row 403/1008), on the client's clock.
pub const UNAVAILABLE_FOR: Duration = Duration::from_secs(300);

/// The longest the runner waits for the account to settle before a request.
const SETTLE_BOUND: Duration = Duration::from_secs(60);

/// The account's nodes, as the client and the runner see them.
#[derive(Clone)]
pub(super) struct AccountNodes {
    /// The regions as the SDK sees them: each region's replica behind its relay.
    regions: Vec<RegionInfo>,
    /// Each region's replica report, in the account's order.
    reports: Vec<SharedReport>,
    /// The nodes, to stop when the run is over.
    pub(super) ids: Vec<NodeId>,
}

/// Starts a replica and a relay per region of `account`.
pub(super) fn deploy(
    rt: &Runtime,
    account: &Account,
    replicas: &[SocketAddr],
    relays: &[SocketAddr],
    containers: Vec<String>,
    ctx: &RunCtx,
) -> AccountNodes {
    let addrs: BTreeMap<ReplicaId, SocketAddr> = replicas
        .iter()
        .enumerate()
        .map(|(i, a)| (i as ReplicaId, *a))
        .collect();
    let mut out = AccountNodes {
        regions: Vec::new(),
        reports: Vec::new(),
        ids: Vec::new(),
    };
    for (i, name) in account.regions.iter().enumerate() {
        let node = format!("replica-{name}");
        let cfg = ReplicaServerConfig {
            me: i as ReplicaId,
            region: name.clone(),
            node: node.clone(),
            addrs: addrs.clone(),
            voters: vec![0],
            learners: (1..account.regions.len() as ReplicaId).collect(),
            partitions: 1,
            lease_ms: 5_000,
            drift_bound_ppm: 0,
            election_timeout_ms: 100,
            heartbeat_ms: 20,
            ship_ms: 10,
            tick_ms: 5,
            fsync_ms: (1, 1),
            containers: containers.clone(),
            bugs: ctx.bugs,
            send: Default::default(),
            quiet_after_restart: Duration::ZERO,
            removed_ns: Vec::new(),
            log: Default::default(),
        };
        let report: SharedReport = Arc::new(Mutex::new(ReplicaReport::default()));
        let disk = SimDisk::new();
        let seed = ctx.seed;
        let (node_report, clock) = (report.clone(), ctx.region_clock.clone());
        let replica = rt
            .create_node()
            .name(node.clone())
            .ip(replicas[i].ip())
            .init(move || {
                serve_replica(
                    cfg.clone(),
                    Arc::new(clock.clone()),
                    vec![Arc::new(DiskAdapter(disk.clone()))],
                    Box::new(stream(seed, &format!("script-{node}"))),
                    node_report.clone(),
                )
            })
            .build();
        let (relay_at, replica_at, region) = (relays[i], replicas[i], name.clone());
        let injections = ctx.injections.clone();
        let relay = rt
            .create_node()
            .name(format!("relay-{name}"))
            .ip(relay_at.ip())
            .init(move || region_relay(relay_at, replica_at, region.clone(), injections.clone()))
            .build();
        out.ids.extend([replica.id(), relay.id()]);
        out.reports.push(report);
        out.regions.push(RegionInfo {
            name: name.clone(),
            replicas: vec![(i as ReplicaId, relay_at)],
            write: i == 0,
        });
    }
    out
}

/// Passes a region's client requests to its replica and the replica's
/// answers back, unless a pending injection covers a request: then it
/// refuses the request itself, or swallows it (a connection error).
async fn region_relay(
    me: SocketAddr,
    replica: SocketAddr,
    region: String,
    injections: Arc<Mutex<super::Injections>>,
) {
    let wire = RelayWire {
        request_tag: REPLICA_TAG,
        reply_tag: REPLY_TAG,
        max_datagram: MAX_REPLICA_DATAGRAM,
    };
    let decide = {
        let region = region.clone();
        move |request: &[u8]| {
            let kind = client_request_kind(request)?;
            Some(
                injections
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .relayed(kind, Some(&region)),
            )
        }
    };
    let node = format!("replica-{region}");
    let refuse = move |request: &[u8], status, sub_status, _retry_after_ms| {
        refusal_of(request, status, sub_status, &node, &region)
    };
    relay(me, replica, wire, decide, refuse, |reply| {
        Some(std::borrow::Cow::Borrowed(reply))
    })
    .await
}

/// The multi-region client of `account`, and the consistency its reads ask for.
pub(super) struct AccountClient {
    client: RegionClient,
    consistency: ReadConsistency,
    reports: Vec<SharedReport>,
}

/// Connects the SDK to the account (every region preferred in the account's
/// order, the first the write region) and waits for it to settle.
pub(super) async fn connect(
    account: &Account,
    nodes: &AccountNodes,
    ctx: &RunCtx,
) -> Result<AccountClient, String> {
    let cfg = RegionClientConfig {
        regions: nodes.regions.clone(),
        preferred: account.regions.clone(),
        stale_write_region: account.stale_write_region.clone(),
        partitions: 1,
        retry: RetryOptions {
            preferred_regions: account.regions.len() as u32,
            failover_wait: FAILOVER_WAIT,
            read_timeout_fails_over: true,
            ..RetryOptions::default()
        },
        unavailable_for: UNAVAILABLE_FOR,
        bugs: ctx.bugs,
        send: Default::default(),
    };
    let client = RegionClient::connect(
        cfg,
        Arc::new(ctx.client_clock.clone()),
        Box::new(stream(ctx.seed, "script-region-client")),
    )
    .await
    .map_err(|e| format!("the multi-region client could not bind: {e}"))?;
    let consistency = match account.consistency {
        Consistency::Strong => ReadConsistency::Strong,
        Consistency::Session => ReadConsistency::Session,
        Consistency::Eventual => ReadConsistency::Eventual,
    };
    let client = AccountClient {
        client,
        consistency,
        reports: nodes.reports.clone(),
    };
    settle(&client.reports).await?;
    Ok(client)
}

/// Waits until the write region has a primary (holding its lease) and every
/// region has applied all it committed.
async fn settle(reports: &[SharedReport]) -> Result<(), String> {
    let start = Instant::now();
    loop {
        if settled(reports) {
            return Ok(());
        }
        if start.elapsed() > SETTLE_BOUND {
            return Err(format!(
                "the account did not settle (a primary, every region caught up) within {SETTLE_BOUND:?}"
            ));
        }
        sleep(Duration::from_millis(1)).await;
    }
}

fn settled(reports: &[SharedReport]) -> bool {
    let lock = |r: &SharedReport| {
        r.lock()
            .unwrap_or_else(|e| e.into_inner())
            .replicas
            .get(&0)
            .map(|p| (p.role(), p.commit(), p.applied_lsn()))
    };
    let Some((Role::Primary, commit, applied)) = reports.first().and_then(lock) else {
        return false;
    };
    applied >= commit
        && commit > 0
        && reports[1..]
            .iter()
            .all(|r| lock(r).is_some_and(|(_, _, lsn)| lsn >= commit))
}

impl AccountClient {
    /// Runs one Cosmos request through the account, once it has settled.
    pub(super) async fn call(&mut self, request: &Request, kind: &str) -> Result<Answer, String> {
        settle(&self.reports).await?;
        let result = self.client.call(request, self.consistency).await;
        Ok(answer(result, kind))
    }
}

/// The answer as the script sees it: the status, the attempts and the waits
/// before them, and the region of each attempt.
fn answer(result: RegionCallResult, kind: &str) -> Answer {
    let (outcome, response) = match result.outcome {
        RegionFinal::Answered { response, .. } => (
            FinalOutcome::Response {
                status: response.status(),
            },
            Some(response),
        ),
        RegionFinal::Refused { status, .. } => (FinalOutcome::Response { status }, None),
        // The last attempt says what the caller was told: 408 after no
        // answer, else the status it got (a transport-generated 503).
        RegionFinal::Unknown => {
            let status = match result.attempts.last().map(|a| &a.outcome) {
                Some(AttemptOutcome::Response { status, .. }) => *status,
                _ => 408,
            };
            (FinalOutcome::Unknown { status }, None)
        }
    };
    let status = match outcome {
        FinalOutcome::Response { status } | FinalOutcome::Unknown { status } => status,
        // Made above from the multi-region client's result, which is never cancelled.
        FinalOutcome::Cancelled { .. } => 0,
    };
    Answer {
        outcome,
        attempts: result.attempts.len(),
        waits: result
            .attempts
            .iter()
            .skip(1)
            .map(|a| a.waited.as_millis() as u64)
            .collect(),
        regions: Some(
            result
                .routes
                .iter()
                .filter(|r| r.what == "attempt")
                .map(|r| r.region.clone())
                .collect(),
        ),
        observed: Observed::of(status, response.as_ref(), kind),
    }
}
