//! The regions scenario: replicated partitions across a write region and
//! read regions, consistency levels per request, region outages and primary
//! failover. This folder holds the deployment and workload, the
//! history records and the checkers: linearizability of the strong
//! operations per item, session guarantees (R5), convergence, durability,
//! routing bounds (R6) and Raft's election and state machine safety.
//!
//! Topology: the write region `r0` holds a replica set of `replicas` nodes
//! (`replica-i`, disks, crashable); each read region `r1`, `r2` one read
//! replica (`reader-j`, disks, crashable); `client-k` nodes (crashable, a
//! restarted client is a new SDK session without tokens) each with a
//! consistency level (strong, session, eventual in turn) and preferred
//! regions (its own region first), and strong readers (client nodes after
//! the others that only read, strongly, in a tight loop). Faults: the shared
//! mix (crashes, pauses, partitions, clock skew) plus region outages (every
//! node of a region cut from every other node), replica-set splits (one
//! replica cut from the rest of its replica set, clients and read regions
//! still reaching it) and primary isolations (the same cut aimed, when it
//! starts, at the replica that last announced itself primary of a
//! partition: [`Fault::Isolate`] with the target [`primary_target`], which
//! the deployment's resolver answers from the replicas' reports), drawn into
//! the parameters; replica clocks drift between 80% of the stated bound
//! [`DRIFT_BOUND_PPM`] and the bound, either way, with no steps (a step is
//! outside any drift bound: the leader lease argument needs bounded rates),
//! reverse direction at drawn times ([`RateFlip`]), and during each primary
//! isolation run at the worst rates the bound allows: the isolated primary
//! slow, the rest of its replica set fast ([`Fault::ClockRate`], aimed like
//! the cut).
//!
//! Long because the parameters, their drawing from the seed and the three
//! roles' programs share the drawn fault schedule; the checks, the workload
//! and the history are in their own files.

pub mod converge;
pub mod durable;
pub mod goals;
pub mod history;
pub mod properties;
pub mod routing;
pub mod safety;
pub mod session;
pub mod strong;
pub mod timeline;
pub mod workload;

use crate::kit::bridge::{ClockAdapter, DiskAdapter, NetworkAdapter, NetworkCounts};
use history::{FinalItem, RegionCall, RegionEvent, RegionOutcome, RegionsHistory};
use overcast_harness::bug::BugInfo;
use overcast_harness::params::{self, ParamError, SizeLimit};
use overcast_harness::registry::{
    halve, once, Deployment, Reduction, RunCtx, RunDefaults, ScenarioDef,
};
use overcast_model::cosmos::ItemKey;
use overcast_model::region_client::{RegionClient, RegionClientConfig, RegionInfo};
use overcast_model::replica::{ReplicaId, Role};
use overcast_model::replica_server::{
    serve_replica, ReplicaReport, ReplicaServerConfig, SharedReport,
};
use overcast_model::retry::RetryOptions;
use overcast_sim::check::Checker;
use overcast_sim::faults::{Fault, FaultEvent, FaultMix, FaultPlan};
use overcast_sim::history::{NodeEvent, Recorder};
use overcast_sim::lin;
use overcast_sim::rng::stream;
use overcast_sim::world::NodeRole;
use overcast_sim::world::{Role as WorldRole, Topology};
use proptest::prelude::*;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The container every item lives in.
pub const CONTAINER: &str = "items";

/// The stated bound on the replicas' clock rate error, ppm (5%): the lease
/// margin comes from it, and `adjust_plan` keeps the replicas' drift within
/// it (scaling the shared mix's drift up to it, so drift matters). Far above
/// real quartz on purpose: the lease argument must hold at the bound, and a
/// lease without its margin must be seen to break within a sweep.
pub const DRIFT_BOUND_PPM: u64 = 50_000;

/// How much the replicas' drift is scaled from the shared mix (±200 ppm ×
/// 250 = ±5%, the bound); a drifting replica's clock then runs at 80% of the
/// bound plus a fifth of that, so between 4% and 5% fast or slow.
pub const DRIFT_SCALE: i64 = 250;

/// The SDK's 5 min of unavailability, scaled by 1/100.
pub const UNAVAILABLE_FOR: Duration = Duration::from_secs(3);

/// The SDK's 1 s wait before a failover retry, scaled by 1/10: a read whose
/// region is down waits this plus its 1 s request timeout per region.
pub const FAILOVER_WAIT: Duration = Duration::from_millis(100);

/// Recorder of a regions run.
pub type RegionsRecorder = Recorder<RegionCall, RegionOutcome, RegionEvent>;

/// `(container, partition key, id)` of an item: each item is its own
/// partition key, so items spread over the partitions.
pub fn item_key(item: &str) -> (String, String, String) {
    (CONTAINER.into(), item.into(), item.into())
}

/// The names of a run's `items` items, dealt over the `partitions` in turn:
/// item `i` is the first `k<n>` not yet taken that hashes to partition
/// `i % partitions`. Plain `k0..k3` all hash to one of two partitions, which
/// left the other partition (its primary, its session tokens) unvisited.
pub fn item_names(items: usize, partitions: u32) -> Vec<String> {
    let partitions = partitions.max(1);
    let mut taken = std::collections::BTreeSet::new();
    (0..items)
        .map(|i| {
            let want = i as u32 % partitions;
            let n = (0..)
                .find(|n| {
                    !taken.contains(n)
                        && overcast_model::wire::partition_of(&format!("k{n}"), partitions) == want
                })
                .expect("every partition has a k<n> name");
            taken.insert(n);
            format!("k{n}")
        })
        .collect()
}

/// Relative weights of the calls a client picks from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionsMix {
    /// Reads at the client's level.
    pub read: u32,
    /// Replaces with If-Match of the last ETag seen (an upsert when none).
    pub replace: u32,
    /// Blind upserts.
    pub upsert: u32,
    /// Creates.
    pub create: u32,
    /// Deletes (with If-Match of the last ETag seen, if any).
    pub delete: u32,
}

impl Default for RegionsMix {
    fn default() -> Self {
        RegionsMix {
            read: 50,
            replace: 30,
            upsert: 8,
            create: 7,
            delete: 5,
        }
    }
}

/// A region outage: every node of a region cut from every other node. The
/// same shape names a read region's removal from the account
/// ([`RegionsParams::removals`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    /// Region index (0 = the write region).
    pub region: usize,
    /// When, ms after the start.
    pub at_ms: u64,
    /// How long.
    pub for_ms: u64,
}

/// A split inside the replica set: one replica of the write region cut from
/// the other replicas of its region while clients and the read regions
/// still reach it, the classic setting of a deposed primary that keeps
/// answering (and shipping to the read replicas).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Split {
    /// The replica (`replica-i`).
    pub replica: usize,
    /// When, ms after the start.
    pub at_ms: u64,
    /// How long.
    pub for_ms: u64,
}

/// The isolation of a partition's current primary: whichever replica last
/// announced itself primary of `partition` when the fault starts is cut from
/// the rest of its replica set, while clients and the read regions still
/// reach it (Jepsen's "isolate the leader" nemesis). A correct primary loses
/// its lease and stops serving strong reads before the others may elect a
/// new one; one that trusts its role keeps answering as if nothing happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Isolation {
    /// The partition whose primary is isolated.
    pub partition: u32,
    /// When, ms after the start.
    pub at_ms: u64,
    /// How long.
    pub for_ms: u64,
    /// The isolated primary's clock runs this much slow (ppm, within the
    /// stated bound) while it is cut off, from the cut on, and the rest of
    /// its replica set's clocks [`Isolation::fast_ppm`] fast: the clock-rate
    /// fault aimed like the cut, the worst rates within the bound for the
    /// leader lease (0 and 0: the clocks keep their own rates). Applied only
    /// when the plan's replica clocks drift at all.
    #[serde(default)]
    pub slow_ppm: u64,
    /// How fast the others' clocks run meanwhile, ppm.
    #[serde(default)]
    pub fast_ppm: u64,
}

/// A clock-rate flip: from `at_ms` on, the clock of `replica-<replica>`
/// drifts the other way at the same rate (fast becomes slow and back),
/// within the stated bound: a replica elected primary while its clock ran
/// fast may run slow by the time it is isolated. Only the rate changes; the
/// reading bends, it never jumps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateFlip {
    /// The replica (`replica-i`) of the write region.
    pub replica: usize,
    /// When, ms after the start.
    pub at_ms: u64,
}

/// The fault target that names the current primary of `partition` (the
/// scenario's resolver answers it from the primaries the replicas announced).
pub fn primary_target(partition: u32) -> String {
    format!("primary of p{partition}")
}

/// The partition whose primary a fault target names ([`primary_target`]'s
/// inverse), if it names one.
pub fn target_partition(target: &str) -> Option<u32> {
    target.strip_prefix("primary of p")?.parse().ok()
}

/// The parameters of `regions`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionsParams {
    /// The write region's replica set.
    pub replicas: usize,
    /// Read regions, one read replica each.
    pub read_regions: usize,
    /// Client nodes.
    pub clients: usize,
    /// Partitions.
    pub partitions: u32,
    /// Items (`k<n>` names dealt over the partitions, [`item_names`]).
    pub items: usize,
    /// Calls each client makes.
    pub ops_per_client: usize,
    /// Strong readers besides the clients: client nodes (after the others)
    /// that only read at strong consistency, in a tight loop over the items,
    /// the clients most exposed to a primary that serves without its lease.
    #[serde(default)]
    pub strong_readers: usize,
    /// Reads each strong reader makes.
    #[serde(default)]
    pub reader_ops: usize,
    /// A strong reader's pause before each read, ms range.
    #[serde(default)]
    pub reader_think_ms: (u64, u64),
    /// A client's pause before each call, ms, drawn uniformly from this
    /// range: it spreads the calls over the fault window (without it the
    /// clients are done long before the faults of its second half).
    #[serde(default)]
    pub think_ms: (u64, u64),
    /// Call weights.
    pub mix: RegionsMix,
    /// Every client's level (`strong`, `session`, `eventual`), or the mix when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<String>,
    /// Clients (the first ones) whose account view names a read region as the write region.
    pub stale_view_clients: usize,
    /// Leader lease, ms.
    pub lease_ms: u64,
    /// Election timeout, ms.
    pub election_timeout_ms: u64,
    /// Heartbeat interval, ms.
    pub heartbeat_ms: u64,
    /// Shipping interval to read replicas, ms.
    pub ship_ms: u64,
    /// Log sync latency, ms range.
    pub fsync_ms: (u64, u64),
    /// The SDK's request timeout, ms.
    pub request_timeout_ms: u64,
    /// Region outages.
    pub outages: Vec<Outage>,
    /// Replica-set splits.
    #[serde(default)]
    pub splits: Vec<Split>,
    /// Isolations of a partition's current primary.
    #[serde(default)]
    pub isolations: Vec<Isolation>,
    /// Flips of the replicas' clock rates (a drifting clock only).
    #[serde(default)]
    pub rate_flips: Vec<RateFlip>,
    /// The service whose items are replicated: Cosmos DB items (`regions`)
    /// or the object store's blobs (`occ-replicated`).
    #[serde(default, skip_serializing_if = "Service::is_cosmos")]
    pub service: Service,
    /// Read regions being removed from the account: while one lasts, the
    /// region's replicas answer every client request 403/1008 (SPEC §4.1).
    /// Drawn from the seed ([`draw_removals`]); saved files without it have none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removals: Vec<Outage>,
}

/// The service a regions run replicates: which dialect the clients speak
/// and the checks judge (SPEC §1.3 for items, §1.1 for blobs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Service {
    /// Cosmos DB items: replace 200, delete 204, an If-Match on a missing item 404.
    #[default]
    Cosmos,
    /// Blobs of the object store (`occ`'s service): put 201 whether it
    /// created or replaced, delete 202, an If-Match on a missing blob 412, a create
    /// (`If-None-Match: *`) of an existing blob 409.
    Blob,
}

impl Service {
    /// True for the default, Cosmos DB items (saved files leave it out).
    pub fn is_cosmos(&self) -> bool {
        *self == Service::Cosmos
    }
}

impl RegionsParams {
    /// Client nodes in all: the clients, then the strong readers.
    pub fn client_nodes(&self) -> usize {
        self.clients + self.strong_readers
    }
}

impl Default for RegionsParams {
    fn default() -> Self {
        RegionsParams {
            replicas: 3,
            read_regions: 2,
            clients: 6,
            partitions: 2,
            items: 4,
            ops_per_client: 60,
            strong_readers: 2,
            reader_ops: 600,
            reader_think_ms: (0, 60),
            think_ms: (0, 800),
            mix: RegionsMix::default(),
            consistency: None,
            stale_view_clients: 1,
            lease_ms: 5_000,
            election_timeout_ms: 500,
            heartbeat_ms: 100,
            ship_ms: 300,
            fsync_ms: (1, 3),
            request_timeout_ms: 1_000,
            outages: Vec::new(),
            splits: Vec::new(),
            isolations: Vec::new(),
            rate_flips: Vec::new(),
            service: Service::Cosmos,
            removals: Vec::new(),
        }
    }
}

/// Outages drawn from the seed: up to two, over the first 30 s.
fn draw_outages(seed: u64, regions: usize) -> Vec<Outage> {
    let mut rng = stream(seed, "regions-outages");
    let n = rng.gen_range(0..=2);
    (0..n)
        .map(|_| Outage {
            region: rng.gen_range(0..regions.max(1)),
            at_ms: rng.gen_range(0..30_000),
            for_ms: rng.gen_range(500..6_000),
        })
        .collect()
}

/// Region removals drawn from the seed: on about half the seeds one read
/// region is being removed from the account for 2–8 s within the first
/// 30 s (its replicas answer 403/1008 meanwhile).
fn draw_removals(seed: u64, read_regions: usize) -> Vec<Outage> {
    let mut rng = stream(seed, "regions-removals");
    if read_regions == 0 || !rng.gen_bool(0.5) {
        return Vec::new();
    }
    vec![Outage {
        region: rng.gen_range(1..=read_regions),
        at_ms: rng.gen_range(0..28_000),
        for_ms: rng.gen_range(2_000..8_000),
    }]
}

/// Replica-set splits drawn from the seed: up to two, over the first 30 s,
/// each long enough (1.5 to 6 s) to outlast a leader lease sometimes.
fn draw_splits(seed: u64, replicas: usize) -> Vec<Split> {
    if replicas < 2 {
        return Vec::new();
    }
    let mut rng = stream(seed, "regions-splits");
    let n = rng.gen_range(0..=2);
    (0..n)
        .map(|_| Split {
            replica: rng.gen_range(0..replicas),
            at_ms: rng.gen_range(0..30_000),
            for_ms: rng.gen_range(1_500..6_000),
        })
        .collect()
}

/// The lengths (ms) a branched run draws a primary isolation's from, or
/// its heal time within ([`Fault::Isolate`]'s `branch_ms`): from a lease
/// (5 s) to the longest drawn isolation. The seed's draws (6–11 s) heal after the
/// old primary has stepped down; a branch may heal one as its successor is
/// elected, while the old primary still believes it leads (5.2–6 s), the
/// corner where a deposed primary's appends meet a newer term.
pub const BRANCHED_ISOLATION_MS: (u64, u64) = (5_000, 11_000);

/// Isolations of a partition's primary drawn from the seed: two to four,
/// from 6 s (once the first primaries are in place) to 30 s, each 6 to 11 s: longer than a lease and an election,
/// so a new primary is usually elected and takes writes while the old one
/// is still cut off.
fn draw_isolations(seed: u64, partitions: u32) -> Vec<Isolation> {
    let mut rng = stream(seed, "regions-isolations");
    let mut slow = stream(seed, "regions-isolation-clocks");
    let bound = DRIFT_BOUND_PPM;
    let n = rng.gen_range(2..=4);
    (0..n)
        .map(|_| Isolation {
            partition: rng.gen_range(0..partitions.max(1)),
            at_ms: rng.gen_range(6_000..30_000),
            for_ms: rng.gen_range(6_000..11_000),
            slow_ppm: slow.gen_range(bound * 4 / 5..=bound),
            fast_ppm: slow.gen_range(bound * 4 / 5..=bound),
        })
        .collect()
}

/// Clock-rate flips drawn from the seed: for each replica of the write
/// region, flips 3 to 10 s apart from a first one in the first 6 s until the
/// end of the 30 s fault window, so that the direction a replica's clock
/// runs in when it is elected says little about the one it runs in seconds
/// later.
fn draw_rate_flips(seed: u64, replicas: usize) -> Vec<RateFlip> {
    let mut rng = stream(seed, "regions-rate-flips");
    let mut flips = Vec::new();
    for replica in 0..replicas {
        let mut at: u64 = rng.gen_range(0..6_000);
        while at < 30_000 {
            flips.push(RateFlip { replica, at_ms: at });
            at += rng.gen_range(3_000..10_000);
        }
    }
    flips.sort_by_key(|f| (f.at_ms, f.replica));
    flips
}

/// Node names of region `r`.
fn region_nodes(p: &RegionsParams, r: usize) -> Vec<String> {
    if r == 0 {
        (0..p.replicas).map(|i| format!("replica-{i}")).collect()
    } else {
        vec![format!("reader-{}", r - 1)]
    }
}

/// The region of a node (`r0`, `r1`, ...), by role and index.
fn region_name(r: usize) -> String {
    format!("r{r}")
}

/// The replica id of a node: voters `0..replicas`, read replicas after.
fn replica_id(p: &RegionsParams, role: RegionsRole, index: usize) -> ReplicaId {
    if role == RegionsRole::Replica {
        index as ReplicaId
    } else {
        (p.replicas + index) as ReplicaId
    }
}

/// The regions as the SDK sees them.
fn regions_of(p: &RegionsParams, topo: &Topology) -> Vec<RegionInfo> {
    let mut out = vec![RegionInfo {
        name: region_name(0),
        replicas: topo
            .addrs(RegionsRole::Replica)
            .into_iter()
            .enumerate()
            .map(|(i, a)| (i as ReplicaId, a))
            .collect(),
        write: true,
    }];
    for (j, a) in topo.addrs(RegionsRole::Reader).into_iter().enumerate() {
        out.push(RegionInfo {
            name: region_name(j + 1),
            replicas: vec![((p.replicas + j) as ReplicaId, a)],
            write: false,
        });
    }
    out
}

/// The linearizability search budget per item (steps, not seconds).
pub const LIN_MAX_STEPS: u64 = 5_000_000;

overcast_sim::node_roles! {
    /// The kinds of node of the `regions` scenario.
    pub enum RegionsRole {
        /// The write region's replica set.
        Replica = "replica",
        /// The read regions' replicas, one per region.
        Reader = "reader",
        /// The SDK clients.
        Client = "client",
    }
}

/// The `regions` scenario (Cosmos DB items) and `occ-replicated` (the
/// object store's blobs): one deployment, SDK, fault plan and set of checks,
/// with the service's dialect as a parameter.
pub struct Regions {
    /// The service the scenario's default parameters replicate.
    pub service: Service,
}

impl Regions {
    /// `regions`: Cosmos DB items.
    pub const COSMOS: Regions = Regions {
        service: Service::Cosmos,
    };
    /// `occ-replicated`: the object store's blobs, with ETags and conditions.
    pub const BLOB: Regions = Regions {
        service: Service::Blob,
    };
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every replica incarnation's report: `(incarnation name, node, region, report)`.
type Reports = Arc<Mutex<Vec<(String, String, String, SharedReport)>>>;

impl ScenarioDef for Regions {
    type Params = RegionsParams;
    type History = RegionsHistory;

    fn bugs(&self) -> Vec<&'static BugInfo> {
        crate::bugs::of(ScenarioDef::name(self))
    }

    fn budget(&self) -> overcast_sim::faults::FaultBudget {
        // Each replica keeps its log on two disks and repairs a corrupt copy
        // from the other; it does not repair from its peers, so with both
        // of its copies corrupt it refuses (past the budget).
        crate::kit::server::mirrored_replica_logs_budget(
            "",
            "replica clocks drifting within the stated bound, never stepping; every network, crash and pause fault of the mix and the scenario's own aimed faults",
        )
    }

    fn name(&self) -> &'static str {
        match self.service {
            Service::Cosmos => "regions",
            Service::Blob => "occ-replicated",
        }
    }

    fn describe(&self) -> &'static str {
        match self.service {
            Service::Cosmos => {
                "replicated partitions, regions and the SDK's region/session rules (SPEC §4.1, §4.4): \
                 linearizability of strong operations, R5, convergence, durability, R6, \
                 election safety, state machine safety"
            }
            Service::Blob => {
                "occ's object store (blobs with ETags and conditions) on regions' replicated \
                 partitions, SDK and faults: the same checks as regions, in the Blob dialect"
            }
        }
    }

    fn params(&self, seed: u64) -> RegionsParams {
        let p = RegionsParams {
            service: self.service,
            ..RegionsParams::default()
        };
        RegionsParams {
            outages: draw_outages(seed, 1 + p.read_regions),
            removals: draw_removals(seed, p.read_regions),
            splits: draw_splits(seed, p.replicas),
            isolations: draw_isolations(seed, p.partitions),
            rate_flips: draw_rate_flips(seed, p.replicas),
            ..p
        }
    }

    fn defaults(&self) -> RunDefaults {
        RunDefaults {
            // The shared mix, with a quarter of its random partitions: the
            // scenario aims its own cuts (outages, splits, primary
            // isolations), and a failover is judged only if it can finish
            // before the next random cut splits the replica set again.
            faults: FaultMix {
                partitions_per_min: FaultMix::default().partitions_per_min / 4.0,
                ..FaultMix::default()
            },
            fault_window_ms: 30_000,
            deadline_ms: 90_000,
            quiet_ms: 8_000,
        }
    }

    fn strategy(&self) -> BoxedStrategy<RegionsParams> {
        let service = self.service;
        (
            1usize..=3,
            0usize..=2,
            1usize..=6,
            1u32..=3,
            1usize..=5,
            5usize..=60,
            0usize..=3,
            any::<u64>(),
        )
            .prop_map(
                move |(replicas, read_regions, clients, partitions, items, ops, readers, seed)| {
                    let replicas = if replicas == 2 { 3 } else { replicas };
                    RegionsParams {
                        replicas,
                        read_regions,
                        clients,
                        partitions,
                        items,
                        ops_per_client: ops,
                        strong_readers: readers,
                        reader_ops: ops * 10,
                        outages: draw_outages(seed, 1 + read_regions),
                        removals: draw_removals(seed, read_regions),
                        splits: draw_splits(seed, replicas),
                        isolations: draw_isolations(seed, partitions),
                        rate_flips: draw_rate_flips(seed, replicas),
                        service,
                        ..RegionsParams::default()
                    }
                },
            )
            .boxed()
    }

    /// Sizes beyond these were never run: a run takes minutes or its checks
    /// give up (measured: each limit alone runs in seconds).
    fn limits(&self) -> &'static [SizeLimit] {
        const LIMITS: &[SizeLimit] = &[
            SizeLimit::new("replicas", 7),
            SizeLimit::new("read_regions", 4),
            SizeLimit::new("clients", 64),
            SizeLimit::new("partitions", 16),
            SizeLimit::new("items", 10000),
            SizeLimit::new("ops_per_client", 6000),
            SizeLimit::new("strong_readers", 16),
            SizeLimit::new("reader_ops", 60000),
        ];
        LIMITS
    }

    fn validate(&self, p: &RegionsParams) -> Result<(), ParamError> {
        params::at_least_one(&[("replicas", p.replicas as u64)])?;
        params::at_least_one(&[
            ("clients", p.clients as u64),
            ("partitions", u64::from(p.partitions)),
            ("items", p.items as u64),
        ])?;
        let m = &p.mix;
        if m.read + m.replace + m.upsert + m.create + m.delete == 0 {
            return Err(ParamError::new("the mix has no weight"));
        }
        if let Some(c) = &p.consistency {
            if !["strong", "session", "eventual"].contains(&c.as_str()) {
                return Err(ParamError::new(format!("unknown consistency '{c}'")));
            }
        }
        if p.election_timeout_ms == 0 || p.heartbeat_ms == 0 || p.lease_ms == 0 {
            return Err(ParamError::new(
                "lease, election timeout and heartbeat must be positive",
            ));
        }
        if p.outages.iter().any(|o| o.region > p.read_regions) {
            return Err(ParamError::new(
                "an outage names a region that does not exist",
            ));
        }
        if p.removals
            .iter()
            .any(|o| o.region == 0 || o.region > p.read_regions)
        {
            return Err(ParamError::new(
                "a removal must name a read region (1..=read_regions): the write region is never removed",
            ));
        }
        if p.splits.iter().any(|s| s.replica >= p.replicas) {
            return Err(ParamError::new(
                "a split names a replica that does not exist",
            ));
        }
        if p.isolations.iter().any(|i| i.partition >= p.partitions) {
            return Err(ParamError::new(
                "an isolation names a partition that does not exist",
            ));
        }
        if p.rate_flips.iter().any(|f| f.replica >= p.replicas) {
            return Err(ParamError::new(
                "a clock-rate flip names a replica that does not exist",
            ));
        }
        params::ordered(&[
            ("reader_think_ms", p.reader_think_ms),
            ("think_ms", p.think_ms),
            ("fsync_ms", p.fsync_ms),
        ])
    }

    fn header(&self, p: &RegionsParams) -> String {
        let removals: String = p
            .removals
            .iter()
            .map(|o| {
                format!(
                    "; region r{} removed at {} ms for {} ms",
                    o.region, o.at_ms, o.for_ms
                )
            })
            .collect();
        let header = format!(
            "write region r0: {} replicas; read regions: {}; clients={} ({} with a stale account view) \
             partitions={} items={} ops/client={} think={}..{} ms consistency={}; \
             strong readers={} ({} reads, think {}..{} ms)\n\
             lease={} ms (drift bound {} ppm) election timeout={} ms heartbeat={} ms ship={} ms \
             fsync={}..{} ms request timeout={} ms; outages: {}; splits: {}; primary isolations: {}; \
             clock-rate flips: {}",
            p.replicas,
            p.read_regions,
            p.clients,
            p.stale_view_clients.min(p.clients),
            p.partitions,
            p.items,
            p.ops_per_client,
            p.think_ms.0,
            p.think_ms.1,
            p.consistency.as_deref().unwrap_or("mix"),
            p.strong_readers,
            p.reader_ops,
            p.reader_think_ms.0,
            p.reader_think_ms.1,
            p.lease_ms,
            DRIFT_BOUND_PPM,
            p.election_timeout_ms,
            p.heartbeat_ms,
            p.ship_ms,
            p.fsync_ms.0,
            p.fsync_ms.1,
            p.request_timeout_ms,
            if p.outages.is_empty() {
                "none".to_string()
            } else {
                p.outages
                    .iter()
                    .map(|o| format!("r{} at {} ms for {} ms", o.region, o.at_ms, o.for_ms))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            if p.splits.is_empty() {
                "none".to_string()
            } else {
                p.splits
                    .iter()
                    .map(|s| format!("replica-{} at {} ms for {} ms", s.replica, s.at_ms, s.for_ms))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            if p.isolations.is_empty() {
                "none".to_string()
            } else {
                p.isolations
                    .iter()
                    .map(|i| {
                        format!(
                            "p{} at {} ms for {} ms (clocks -{}/+{} ppm)",
                            i.partition, i.at_ms, i.for_ms, i.slow_ppm, i.fast_ppm
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            if p.rate_flips.is_empty() {
                "none".to_string()
            } else {
                p.rate_flips
                    .iter()
                    .map(|f| format!("replica-{} at {} ms", f.replica, f.at_ms))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
        header + &removals
    }

    fn topology(&self, p: &RegionsParams) -> Topology {
        Topology::new(vec![
            // Each replica's log mirrored on two disks (`replica-0`,
            // `replica-0.b`).
            WorldRole::new(RegionsRole::Replica, p.replicas)
                .with_disks(crate::kit::server::LOG_COPIES)
                .crashable(),
            WorldRole::new(RegionsRole::Reader, p.read_regions)
                .with_disks(crate::kit::server::LOG_COPIES)
                .crashable(),
            WorldRole::new(RegionsRole::Client, p.client_nodes())
                .awaited()
                .crashable(),
        ])
    }

    fn timeline(
        &self,
        p: &RegionsParams,
        h: &RegionsHistory,
        t: &mut overcast_sim::timeline::Timeline,
    ) {
        timeline::draw(h, p.client_nodes(), t);
    }

    fn adjust_plan(&self, p: &RegionsParams, plan: &mut FaultPlan) {
        // Replica clocks: a drifting clock runs at 80% to 100% of the
        // stated bound, fast or slow as the mix drew it: the lease argument
        // is tested at its edge, where replicas drifting in opposite
        // directions disagree most (quartz at its rated tolerance); no steps.
        // A replica's clock-rate flips reverse its direction at the same
        // rate, so its rate stays within the bound throughout. Built afresh
        // on every call: a saved plan holds the mix's clocks, not these.
        let bound = DRIFT_BOUND_PPM as i64;
        for (node, skew) in plan.clocks.iter_mut() {
            if node.starts_with(RegionsRole::Replica.name())
                || node.starts_with(RegionsRole::Reader.name())
            {
                let scaled = (skew.drift_ppm.abs() * DRIFT_SCALE).min(bound);
                skew.drift_ppm = skew.drift_ppm.signum() * (bound * 4 / 5 + scaled / 5);
                skew.steps.clear();
                skew.rate_changes.clear();
                let mut rate = skew.drift_ppm;
                for f in &p.rate_flips {
                    if rate != 0 && format!("replica-{}", f.replica) == *node {
                        rate = -rate;
                        skew.rate_changes.push((f.at_ms, rate));
                    }
                }
            }
        }
        let all: Vec<String> = (0..=p.read_regions)
            .flat_map(|r| region_nodes(p, r))
            .chain((0..p.client_nodes()).map(|i| format!("client-{i}")))
            .collect();
        for o in &p.outages {
            let inside = region_nodes(p, o.region);
            let outside: Vec<String> = all
                .iter()
                .filter(|n| !inside.contains(n))
                .cloned()
                .collect();
            plan.events.push(FaultEvent {
                at_ms: o.at_ms,
                fault: Fault::Partition {
                    from: inside,
                    to: outside,
                    one_way: false,
                    for_ms: o.for_ms,
                },
            });
        }
        for s in &p.splits {
            let me = format!("replica-{}", s.replica);
            let peers: Vec<String> = region_nodes(p, 0)
                .into_iter()
                .filter(|n| *n != me)
                .collect();
            plan.events.push(FaultEvent {
                at_ms: s.at_ms,
                fault: Fault::Partition {
                    from: vec![me],
                    to: peers,
                    one_way: false,
                    for_ms: s.for_ms,
                },
            });
        }
        let drifting = plan
            .clocks
            .iter()
            .any(|(n, s)| n.starts_with(RegionsRole::Replica.name()) && s.drift_ppm != 0);
        for i in &p.isolations {
            plan.events.push(FaultEvent {
                at_ms: i.at_ms,
                fault: Fault::Isolate {
                    target: primary_target(i.partition),
                    from: region_nodes(p, 0),
                    for_ms: i.for_ms,
                    branch_ms: Some(BRANCHED_ISOLATION_MS),
                },
            });
            if drifting && (i.slow_ppm > 0 || i.fast_ppm > 0) {
                plan.events.push(FaultEvent {
                    at_ms: i.at_ms,
                    fault: Fault::ClockRate {
                        target: primary_target(i.partition),
                        drift_ppm: -(i.slow_ppm.min(DRIFT_BOUND_PPM) as i64),
                        peers: region_nodes(p, 0),
                        peers_ppm: i.fast_ppm.min(DRIFT_BOUND_PPM) as i64,
                        for_ms: i.for_ms,
                    },
                });
            }
        }
        plan.events.sort_by_key(|e| e.at_ms);
    }

    fn deploy(&self, p: &RegionsParams, ctx: &RunCtx) -> Deployment<RegionsHistory> {
        let bugs = crate::bugs::model_bugs(&ctx.bugs);
        let reports: Reports = Arc::default();
        let network_counts = NetworkCounts::default();
        let recorder = RegionsRecorder::with_capacity(
            p.clients * p.ops_per_client + p.strong_readers * p.reader_ops,
        );
        let params = p.clone();
        let program_reports = reports.clone();
        let resolver_reports = reports.clone();
        let program_recorder = recorder.clone();
        // What the replicas do with their logs (D1).
        let logs = crate::kit::durability::LogSink::new();
        let program_logs = logs.clone();
        let finished: Arc<Mutex<std::collections::BTreeSet<usize>>> = Arc::default();
        let program = Box::new(move |env: overcast_sim::world::NodeEnv| {
            let p = params.clone();
            let send = NetworkAdapter::policy(&env, &network_counts);
            let fut: overcast_harness::registry::NodeFuture = if env.role_as::<RegionsRole>()
                == RegionsRole::Replica
                || env.role_as::<RegionsRole>() == RegionsRole::Reader
            {
                let me = replica_id(&p, env.role_as(), env.index);
                let region_index = if env.role_as::<RegionsRole>() == RegionsRole::Replica {
                    0
                } else {
                    env.index + 1
                };
                let region = region_name(region_index);
                let topo = &env.topology;
                let addrs: BTreeMap<ReplicaId, _> = topo
                    .addrs(RegionsRole::Replica)
                    .into_iter()
                    .enumerate()
                    .map(|(i, a)| (i as ReplicaId, a))
                    .chain(
                        topo.addrs(RegionsRole::Reader)
                            .into_iter()
                            .enumerate()
                            .map(|(j, a)| ((p.replicas + j) as ReplicaId, a)),
                    )
                    .collect();
                let cfg = ReplicaServerConfig {
                    me,
                    region: region.clone(),
                    node: env.incarnation_name(),
                    addrs,
                    voters: (0..p.replicas as ReplicaId).collect(),
                    learners: (0..p.read_regions)
                        .map(|j| (p.replicas + j) as ReplicaId)
                        .collect(),
                    partitions: p.partitions,
                    lease_ms: p.lease_ms,
                    drift_bound_ppm: DRIFT_BOUND_PPM,
                    election_timeout_ms: p.election_timeout_ms,
                    heartbeat_ms: p.heartbeat_ms,
                    ship_ms: p.ship_ms,
                    tick_ms: 20,
                    fsync_ms: p.fsync_ms,
                    containers: vec![CONTAINER.to_string()],
                    bugs,
                    send,
                    quiet_after_restart: if env.incarnation == 0 {
                        Duration::ZERO
                    } else {
                        env.max_in_flight()
                    },
                    removed_ns: p
                        .removals
                        .iter()
                        .filter(|r| r.region == region_index)
                        .map(|r| (r.at_ms * 1_000_000, (r.at_ms + r.for_ms) * 1_000_000))
                        .collect(),
                    log: program_logs.report(env.incarnation_name()),
                };
                let report: SharedReport = Arc::new(Mutex::new(ReplicaReport::default()));
                lock(&program_reports).push((
                    env.incarnation_name(),
                    env.name.clone(),
                    region,
                    report.clone(),
                ));
                let rng = stream(env.seed, &format!("{}-{}", env.name, env.incarnation));
                // The log on every disk of the node (`replica-0`,
                // `replica-0.b`): a mirrored log.
                let disks = env.disk.iter().chain(&env.mirrors);
                let logs: Vec<Arc<dyn overcast_model::env::LogDevice>> = disks
                    .map(|d| Arc::new(DiskAdapter(d.clone())) as _)
                    .collect();
                Box::pin(serve_replica(
                    cfg,
                    Arc::new(ClockAdapter(env.clock.clone())),
                    logs,
                    Box::new(rng),
                    report,
                ))
            } else {
                let finished = finished.clone();
                let recorder = program_recorder.clone();
                Box::pin(async move {
                    if lock(&finished).contains(&env.index) {
                        return;
                    }
                    let regions = regions_of(&p, &env.topology);
                    let home = env.index % regions.len();
                    let preferred: Vec<String> = (0..regions.len())
                        .map(|k| regions[(home + k) % regions.len()].name.clone())
                        .collect();
                    let stale = (env.index < p.stale_view_clients && regions.len() > 1)
                        .then(|| regions[1].name.clone());
                    let retry = RetryOptions {
                        request_timeout: Duration::from_millis(p.request_timeout_ms),
                        preferred_regions: regions.len() as u32,
                        failover_wait: FAILOVER_WAIT,
                        read_timeout_fails_over: true,
                        ..RetryOptions::default()
                    };
                    let cfg = RegionClientConfig {
                        regions,
                        preferred,
                        stale_write_region: stale,
                        partitions: p.partitions,
                        retry,
                        unavailable_for: UNAVAILABLE_FOR,
                        bugs,
                        send,
                    };
                    let rng = stream(
                        env.seed,
                        &format!("client-{}-sdk-{}", env.index, env.incarnation),
                    );
                    let Ok(mut sdk) = RegionClient::connect(
                        cfg,
                        Arc::new(ClockAdapter(env.clock.clone())),
                        Box::new(rng),
                    )
                    .await
                    else {
                        tracing::error!("client {} could not bind", env.index);
                        return;
                    };
                    let client = overcast_harness::registry::history_client(
                        env.index,
                        env.incarnation,
                        p.client_nodes(),
                    );
                    // A strong reader is a client that only reads, strongly,
                    // with little think time.
                    let work = if env.index >= p.clients {
                        RegionsParams {
                            mix: RegionsMix {
                                read: 1,
                                replace: 0,
                                upsert: 0,
                                create: 0,
                                delete: 0,
                            },
                            consistency: Some("strong".into()),
                            ops_per_client: p.reader_ops,
                            think_ms: p.reader_think_ms,
                            ..p.clone()
                        }
                    } else {
                        p.clone()
                    };
                    workload::client_workload(
                        work,
                        env.seed,
                        env.index,
                        client,
                        env.incarnation_name(),
                        &mut sdk,
                        recorder,
                        env.deadline.as_nanos() as u64,
                    )
                    .await;
                    lock(&finished).insert(env.index);
                })
            };
            fut
        });
        let params = p.clone();
        let collect = Box::new(move |world: &overcast_sim::world::WorldOutcome| {
            let mut history = recorder.take_history(world.events.clone());
            let mut counters: BTreeMap<String, u64> = BTreeMap::new();
            let reports = lock(&reports);
            // The last incarnation of each node holds its final state.
            let mut last: BTreeMap<String, (String, String, SharedReport)> = BTreeMap::new();
            for (inc, node, region, report) in reports.iter() {
                let r = lock(report);
                for c in &r.primaries {
                    history.node_events.push(NodeEvent {
                        node: c.node.clone(),
                        at_ns: c.at_ns,
                        local_ms: c.local_ms,
                        event: RegionEvent::Primary {
                            partition: c.partition,
                            term: c.term,
                        },
                    });
                }
                for a in &r.applied {
                    history.node_events.push(NodeEvent {
                        node: a.node.clone(),
                        at_ns: a.at_ns,
                        local_ms: a.local_ms,
                        event: RegionEvent::Applied {
                            partition: a.partition,
                            entries: a
                                .entries
                                .iter()
                                .map(|e| history::AppliedEntry {
                                    lsn: e.lsn,
                                    term: e.term,
                                    digest: e.digest,
                                })
                                .collect(),
                        },
                    });
                }
                if let Some(refusal) = &r.refused {
                    history.node_events.push(NodeEvent {
                        node: refusal.node.clone(),
                        at_ns: refusal.at_ns,
                        local_ms: refusal.local_ms,
                        event: RegionEvent::Refused {
                            reason: refusal.reason.clone(),
                        },
                    });
                }
                for (k, n) in &r.counts {
                    *counters.entry(k.clone()).or_default() += n;
                }
                last.insert(node.clone(), (inc.clone(), region.clone(), report.clone()));
            }
            let replicas = (params.replicas + params.read_regions) as u32;
            for (inc, region, report) in last.values() {
                let r = lock(report);
                for (partition, replica) in &r.replicas {
                    let items = item_names(params.items, params.partitions)
                        .into_iter()
                        .filter(|item| {
                            overcast_model::wire::partition_of(item, params.partitions)
                                == *partition
                        })
                        .filter_map(|item| {
                            let (c, pk, id) = item_key(&item);
                            let key = ItemKey::new(c, pk, id);
                            let state = replica.applied();
                            let (etag, body) = match params.service {
                                Service::Cosmos => state
                                    .cosmos()
                                    .item(&key)
                                    .map(|i| (i.etag.0.clone(), i.body.clone()))?,
                                Service::Blob => state
                                    .store()
                                    .item(&key)
                                    .map(|i| (i.etag.0.clone(), i.body.clone()))?,
                            };
                            Some(FinalItem { item, etag, body })
                        })
                        .collect();
                    history.node_events.push(NodeEvent {
                        node: inc.clone(),
                        at_ns: world.sim_ns,
                        local_ms: r.last_local_ms,
                        event: RegionEvent::Final {
                            partition: *partition,
                            region: region.clone(),
                            role: match replica.role() {
                                Role::Primary => "primary",
                                Role::ReadReplica => "read",
                                Role::Follower | Role::Candidate => "secondary",
                            }
                            .to_string(),
                            term: replica.term(),
                            applied_lsn: replica.applied_lsn(),
                            items,
                            replicas,
                        },
                    });
                }
            }
            history.node_events.sort_by_key(|e| e.at_ns);
            (history.with_log_events(logs.take()), counters)
        });
        // What an isolation aims at: the replica that last announced itself
        // primary of the partition (the node, whichever its incarnation).
        let resolve_reports = resolver_reports;
        let resolver = overcast_sim::world::Resolver(Arc::new(move |target: &str| {
            let partition: u32 = target.strip_prefix("primary of p")?.parse().ok()?;
            let reports = lock(&resolve_reports);
            let mut last: Option<(u64, String)> = None;
            for (_, node, _, report) in reports.iter() {
                for c in lock(report).primaries.iter() {
                    if c.partition == partition
                        && last.as_ref().is_none_or(|(at, _)| c.at_ns >= *at)
                    {
                        last = Some((c.at_ns, node.clone()));
                    }
                }
            }
            last.map(|(_, node)| node)
        }));
        Deployment {
            program,
            collect,
            resolver: Some(resolver),
        }
    }

    fn checkers(&self, p: &RegionsParams) -> Vec<Box<dyn Checker<RegionsHistory>>> {
        vec![
            Box::new(strong::StrongLinearizability {
                service: p.service,
                options: lin::Options {
                    max_steps: Some(LIN_MAX_STEPS),
                    parallel: false,
                    time_unit: lin::TimeUnit::Nanos,
                    ..lin::Options::default()
                },
            }),
            Box::new(session::SessionGuarantees),
            Box::new(converge::Convergence),
            Box::new(durable::Durability),
            Box::new(routing::Routing {
                bounds: routing::RoutingBounds {
                    unavailable_ms: UNAVAILABLE_FOR.as_millis() as u64,
                    failover_wait_ms: FAILOVER_WAIT.as_millis() as u64,
                    ..routing::RoutingBounds::default()
                },
                client_nodes: p.client_nodes(),
            }),
            Box::new(safety::RaftSafety),
            Box::new(crate::kit::durability::Durability::linking(answered_write)),
        ]
    }

    /// Election safety and state machine safety are judged on what the
    /// replicas announced and applied up to each violation (two primaries
    /// of one term, two entries at one LSN), which a longer run keeps. The
    /// others are not: the SDK's rows judge waits that a stopped run cuts
    /// short, and convergence, durability and linearizability the end.
    fn prefix_closed(&self, property: overcast_sim::check::PropertyId) -> bool {
        property == properties::ELECTION_SAFETY.id
            || property == properties::STATE_MACHINE_SAFETY.id
    }

    fn goals(&self, _p: &RegionsParams) -> Vec<overcast_harness::goals::Goal<Self::History>> {
        goals::goals()
    }

    fn reductions(&self) -> Vec<Reduction<RegionsParams>> {
        vec![
            ("no outages", |p, i| {
                once(i, || {
                    (!p.outages.is_empty()).then(|| RegionsParams {
                        outages: Vec::new(),
                        ..p.clone()
                    })
                })
            }),
            ("no region removals", |p, i| {
                once(i, || {
                    (!p.removals.is_empty()).then(|| RegionsParams {
                        removals: Vec::new(),
                        ..p.clone()
                    })
                })
            }),
            ("no splits", |p, i| {
                once(i, || {
                    (!p.splits.is_empty()).then(|| RegionsParams {
                        splits: Vec::new(),
                        ..p.clone()
                    })
                })
            }),
            ("no primary isolations", |p, i| {
                once(i, || {
                    (!p.isolations.is_empty()).then(|| RegionsParams {
                        isolations: Vec::new(),
                        ..p.clone()
                    })
                })
            }),
            ("no clock-rate flips", |p, i| {
                once(i, || {
                    (!p.rate_flips.is_empty()).then(|| RegionsParams {
                        rate_flips: Vec::new(),
                        ..p.clone()
                    })
                })
            }),
            ("no clock rates aimed at isolations", |p, i| {
                once(i, || {
                    p.isolations
                        .iter()
                        .any(|i| i.slow_ppm > 0 || i.fast_ppm > 0)
                        .then(|| RegionsParams {
                            isolations: p
                                .isolations
                                .iter()
                                .map(|i| Isolation {
                                    slow_ppm: 0,
                                    fast_ppm: 0,
                                    ..i.clone()
                                })
                                .collect(),
                            ..p.clone()
                        })
                })
            }),
            ("one primary isolation fewer", |p, i| {
                (i < p.isolations.len() && p.isolations.len() > 1).then(|| {
                    let mut isolations = p.isolations.clone();
                    isolations.remove(i);
                    RegionsParams {
                        isolations,
                        ..p.clone()
                    }
                })
            }),
            ("halve the strong readers", |p, i| {
                once(i, || {
                    halve(p.strong_readers, 0).map(|n| RegionsParams {
                        strong_readers: n,
                        ..p.clone()
                    })
                })
            }),
            ("halve the strong reads", |p, i| {
                once(i, || {
                    halve(p.reader_ops, 1).map(|n| RegionsParams {
                        reader_ops: n,
                        ..p.clone()
                    })
                })
            }),
            ("halve the clients", |p, i| {
                once(i, || {
                    halve(p.clients, 1).map(|c| RegionsParams {
                        clients: c,
                        stale_view_clients: p.stale_view_clients.min(c),
                        ..p.clone()
                    })
                })
            }),
            ("halve the operations", |p, i| {
                once(i, || {
                    halve(p.ops_per_client, 1).map(|n| RegionsParams {
                        ops_per_client: n,
                        ..p.clone()
                    })
                })
            }),
            ("halve the items", |p, i| {
                once(i, || {
                    halve(p.items, 1).map(|n| RegionsParams {
                        items: n,
                        ..p.clone()
                    })
                })
            }),
            ("one read region fewer", |p, i| {
                once(i, || {
                    (p.read_regions > 0).then(|| RegionsParams {
                        read_regions: p.read_regions - 1,
                        outages: p
                            .outages
                            .iter()
                            .filter(|o| o.region < p.read_regions)
                            .cloned()
                            .collect(),
                        removals: p
                            .removals
                            .iter()
                            .filter(|o| o.region < p.read_regions)
                            .cloned()
                            .collect(),
                        ..p.clone()
                    })
                })
            }),
            ("one partition", |p, i| {
                once(i, || {
                    (p.partitions > 1).then(|| RegionsParams {
                        partitions: 1,
                        isolations: p
                            .isolations
                            .iter()
                            .map(|i| Isolation {
                                partition: 0,
                                ..i.clone()
                            })
                            .collect(),
                        ..p.clone()
                    })
                })
            }),
        ]
    }
}

/// The write a primary's answer acknowledged (D1): the call answered by
/// that node with the session token of the write's entry.
fn answered_write(h: &RegionsHistory, a: &crate::kit::durability::Acknowledgement) -> Option<u64> {
    let overcast_model::durability::LogId::Replica { partition, .. } = a.log else {
        return None;
    };
    let token = overcast_model::replica::session_token(partition, a.needs.lsn);
    h.ops
        .iter()
        .find(|o| {
            o.call.is_write()
                && matches!(&o.result, Some(RegionOutcome::Ok { node, session_token: Some(t), .. })
                    if *node == a.node && *t == token)
        })
        .map(|o| o.id)
}
