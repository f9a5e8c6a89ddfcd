//! The fault plan: explicit fault events at simulated times plus network
//! rates, serialisable so a failing run can be saved and replayed exactly,
//! and generated from a seed (with swarm mode drawing the kinds at random).
//!
//! Long because the budget that bounds a drawn plan confines the plan's own
//! fields (which disks may take corruption, for a deployment or node by
//! node), so the plan, its drawing and the budget are kept and tested
//! together.

use crate::clock::ClockSkew;
use crate::disk::DiskFault;
use rand::seq::SliceRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One fault, starting at its event's time and healing by itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// Packets from every node of `from` to every node of `to` are dropped
    /// (and back, unless `one_way`), for `for_ms`.
    Partition {
        /// Sending side.
        from: Vec<String>,
        /// Receiving side.
        to: Vec<String>,
        /// Only `from` → `to` is cut.
        one_way: bool,
        /// How long the cut lasts.
        for_ms: u64,
    },
    /// The node is killed (its unsynced disk tail may be lost) and restarted
    /// after `down_ms`.
    Crash {
        /// Node name.
        node: String,
        /// Time until restart.
        down_ms: u64,
    },
    /// The node stops running for `for_ms` (a long GC pause, a stalled VM).
    Pause {
        /// Node name.
        node: String,
        /// Length of the pause.
        for_ms: u64,
    },
    /// The node that `target` names when the fault starts is cut from every
    /// other node of `from` (both ways) for `for_ms`; the rest of the world
    /// still reaches it. The world asks the run's resolver
    /// ([`crate::world::Resolver`]) what `target` names, so a scenario can
    /// aim at a role that moves (the current primary of a replica set, as
    /// the nodes announced it); the world itself knows nothing of what the
    /// name means. A target that names no node then is skipped (recorded).
    Isolate {
        /// What the scenario's resolver turns into a node name.
        target: String,
        /// The nodes it is cut from.
        from: Vec<String>,
        /// How long the cut lasts.
        for_ms: u64,
        /// In a branched run, the range (ms, from the cut's start) a branch
        /// re-draws the cut's length from: a cut that starts after a branch
        /// point lasts a length drawn from it, and one open at a branch
        /// point heals at a time drawn anew, after the point. Absent (and in
        /// a plain run): the cut lasts `for_ms`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        branch_ms: Option<(u64, u64)>,
    },
    /// A clock-rate fault: the node `target` names at that moment (a node's
    /// name, or what the scenario's resolver turns into one, as for
    /// [`Fault::Isolate`]) runs at `drift_ppm` for `for_ms`, and the nodes of
    /// `peers` other than it at `peers_ppm`; then each runs at the rate its
    /// clock's schedule gives again. Only the rates change: the readings
    /// bend, they never jump.
    ClockRate {
        /// The node, or a target the resolver names.
        target: String,
        /// Its rate, ppm (negative: slow).
        drift_ppm: i64,
        /// Other nodes whose rate changes too (the target left out).
        #[serde(default)]
        peers: Vec<String>,
        /// Their rate, ppm.
        #[serde(default)]
        peers_ppm: i64,
        /// How long.
        for_ms: u64,
    },
}

impl Fault {
    /// Short name of the fault kind, for counts and reports.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Partition { one_way: true, .. } => "partition_one_way",
            Fault::Partition { .. } => "partition",
            Fault::Crash { .. } => "crash",
            Fault::Pause { .. } => "pause",
            Fault::Isolate { .. } => "isolate",
            Fault::ClockRate { .. } => "clock_rate",
        }
    }
}

/// A fault at a simulated time (ms after the start).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultEvent {
    /// When the fault starts, in simulated ms after the start.
    pub at_ms: u64,
    /// What happens.
    pub fault: Fault,
}

/// Everything the world does wrong in one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultPlan {
    /// Probability that any packet is lost.
    #[serde(default)]
    pub packet_loss: f64,
    /// One-way message latency range in ms, `[min, max)`.
    pub latency_ms: (u64, u64),
    /// On a crash, a random prefix of the unsynced disk tail survives
    /// (otherwise a crash keeps every written byte).
    #[serde(default)]
    pub lose_unsynced_on_crash: bool,
    /// Per-node clock skew, by node name; absent nodes keep true time.
    #[serde(default)]
    pub clocks: BTreeMap<String, ClockSkew>,
    /// Timed faults.
    #[serde(default)]
    pub events: Vec<FaultEvent>,
    /// Disk faults, as rates per disk operation.
    #[serde(default)]
    pub storage: StorageFaults,
    /// Duplicated and reordered datagrams, as rates per datagram sent.
    #[serde(default)]
    pub network: NetworkFaults,
    /// The nodes whose disks may take the faults that corrupt or lose a
    /// written record ([`StorageFaults::corrupting_off`]); absent: every
    /// node's. Set by a [`FaultBudget`] that bounds corrupt copies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrupt_disks: Option<Vec<String>>,
}

impl FaultPlan {
    /// The disk faults node `node`'s disk takes: the plan's, without the
    /// corrupting ones when [`FaultPlan::corrupt_disks`] leaves it out.
    pub fn storage_of(&self, node: &str) -> StorageFaults {
        match &self.corrupt_disks {
            Some(nodes) if !nodes.iter().any(|n| n == node) => self.storage.corrupting_off(),
            _ => self.storage.clone(),
        }
    }
}

/// What a deployment promises to tolerate, and the limit a drawn plan
/// obeys so that every run within it can be judged. Runs past it (the
/// `--beyond-budget` profile) are another experiment: there the service
/// must fail loudly, not answer wrongly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultBudget {
    /// The promise in words, for the run header and the scenario's page.
    pub promise: String,
    /// At most this many of the nodes with disks take the faults that
    /// corrupt or lose a written record (bit flips on write, misdirected
    /// and lost writes) in one run; absent: no bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrupt_disks: Option<usize>,
    /// At least this many of the nodes with disks take none of those faults
    /// in one run (0: no such floor): a deployment of any size keeps that
    /// many copies that serve. With one server of one, a bound of one
    /// corrupt disk alone would let every copy be corrupt.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub intact_disks: usize,
    /// Nodes, by name prefix (a role), whose disks take none of those
    /// faults within the budget: their logs cannot repair or detect a
    /// corrupt record (empty: every node's may).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spared: Vec<String>,
    /// The two bounds above hold for each node's disks (the copies of its
    /// mirrored log, `NODE`, `NODE.b`...) rather than the deployment's: a
    /// deployment of replicas, each repairing its own log.
    #[serde(default, skip_serializing_if = "is_false")]
    pub per_node: bool,
}

/// For serde: leave a zero count out of the saved text.
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// For serde: leave a false flag out of the saved text.
fn is_false(b: &bool) -> bool {
    !*b
}

/// The node a disk belongs to: the disk's name up to its copy's letter
/// (`replica-0.b` is `replica-0`'s, see `Topology::disk_name`).
fn node_of(disk: &str) -> &str {
    disk.split_once('.').map_or(disk, |(node, _)| node)
}

/// `disks` grouped by node ([`node_of`]), each group in the given order.
fn by_node<'a, T>(disks: impl IntoIterator<Item = (&'a str, T)>) -> BTreeMap<&'a str, Vec<T>> {
    let mut out: BTreeMap<&str, Vec<T>> = BTreeMap::new();
    for (disk, x) in disks {
        out.entry(node_of(disk)).or_default().push(x);
    }
    out
}

impl FaultBudget {
    /// Whether a run of a deployment with `disks` nodes with disks, whose
    /// disks took `disk_faults` (by node, then kind, as the world counts
    /// them), went past the budget: more disks took a corrupting fault than
    /// it allows ([`FaultBudget::corrupt_bound`]). A bound per node is
    /// judged on each node's disks against [`FaultBudget::corrupt_disks`]
    /// (the floor of intact disks applies where the plan is drawn, which
    /// knows how many disks each node has).
    pub fn exceeded_by(
        &self,
        disk_faults: &BTreeMap<String, BTreeMap<String, u64>>,
        disks: usize,
    ) -> bool {
        let corrupted = FaultBudget::corrupted_disks(disk_faults);
        if corrupted.iter().any(|n| self.spares(n)) {
            return true;
        }
        if self.per_node {
            let Some(bound) = self.corrupt_disks else {
                return false;
            };
            return by_node(corrupted.iter().map(|d| (d.as_str(), ())))
                .values()
                .any(|on_node| on_node.len() > bound);
        }
        self.corrupt_bound(disks)
            .is_some_and(|bound| corrupted.len() > bound)
    }

    /// Whether node `node`'s disk is one the budget keeps corrupting
    /// faults off ([`FaultBudget::spared`]).
    pub fn spares(&self, node: &str) -> bool {
        self.spared
            .iter()
            .any(|prefix| node.starts_with(prefix.as_str()))
    }

    /// How many of a deployment's `disks` nodes with disks (of a node's
    /// `disks` disks, for a bound [`FaultBudget::per_node`]) may take the
    /// faults that corrupt or lose a written record in one run: the lower
    /// of [`FaultBudget::corrupt_disks`] and what
    /// [`FaultBudget::intact_disks`] leaves; `None` when neither bounds it.
    pub fn corrupt_bound(&self, disks: usize) -> Option<usize> {
        match (self.corrupt_disks, self.intact_disks) {
            (None, 0) => None,
            (bound, intact) => Some(bound.unwrap_or(disks).min(disks.saturating_sub(intact))),
        }
    }

    /// The nodes, by name and in order, whose disks took at least one fault
    /// that corrupts or loses a written record in a run whose disks took
    /// `disk_faults` (by node, then kind, as the world counts them): what
    /// [`FaultBudget::corrupt_disks`] bounds.
    pub fn corrupted_disks(disk_faults: &BTreeMap<String, BTreeMap<String, u64>>) -> Vec<String> {
        disk_faults
            .iter()
            .filter(|(_, kinds)| !DiskFault::corrupting_in(kinds).is_empty())
            .map(|(node, _)| node.clone())
            .collect()
    }

    /// Whether `plan` keeps within the budget before it runs: at most the
    /// bound of `disk_nodes` may take a fault that corrupts or loses a
    /// written record ([`FaultPlan::storage_of`]). What
    /// [`FaultBudget::confine`] makes true of every plan it is handed.
    pub fn admits(&self, plan: &FaultPlan, disk_nodes: &[String]) -> bool {
        if disk_nodes
            .iter()
            .any(|n| self.spares(n) && plan.storage_of(n).corrupts())
        {
            return false;
        }
        if self.per_node {
            return by_node(disk_nodes.iter().map(|d| (d.as_str(), d)))
                .values()
                .all(|on_node| {
                    self.corrupt_bound(on_node.len()).is_none_or(|bound| {
                        on_node
                            .iter()
                            .filter(|d| plan.storage_of(d).corrupts())
                            .count()
                            <= bound
                    })
                });
        }
        let Some(bound) = self.corrupt_bound(disk_nodes.len()) else {
            return true;
        };
        let corruptible = disk_nodes
            .iter()
            .filter(|n| plan.storage_of(n).corrupts())
            .count();
        corruptible <= bound
    }

    /// A budget that bounds nothing the plan draws, promising `promise`.
    pub fn unbounded(promise: &str) -> FaultBudget {
        FaultBudget {
            promise: promise.to_string(),
            corrupt_disks: None,
            intact_disks: 0,
            spared: Vec::new(),
            per_node: false,
        }
    }

    /// Keeps `plan` within the budget: with a bound on corrupt disks and
    /// corrupting faults on, draws (from `rng`, a stream of its own so
    /// that no other draw moves) which of `disk_nodes` may take them.
    pub fn confine(&self, plan: &mut FaultPlan, disk_nodes: &[String], rng: &mut impl Rng) {
        if self.per_node {
            if !plan.storage.corrupts() || self.corrupt_bound(2).is_none() {
                return;
            }
            // Node by node, in name order, each from its own disks.
            let mut chosen = Vec::new();
            let candidates = disk_nodes.iter().filter(|d| !self.spares(d));
            for on_node in by_node(candidates.map(|d| (d.as_str(), d.clone()))).values() {
                let bound = self.corrupt_bound(on_node.len()).unwrap_or(on_node.len());
                chosen.extend(on_node.choose_multiple(rng, bound).cloned());
            }
            chosen.sort();
            plan.corrupt_disks = Some(chosen);
            return;
        }
        let Some(bound) = self.corrupt_bound(disk_nodes.len()) else {
            return;
        };
        let candidates: Vec<String> = disk_nodes
            .iter()
            .filter(|n| !self.spares(n))
            .cloned()
            .collect();
        if !plan.storage.corrupts()
            || (candidates.len() == disk_nodes.len() && disk_nodes.len() <= bound)
        {
            return;
        }
        let mut chosen: Vec<String> = candidates.choose_multiple(rng, bound).cloned().collect();
        chosen.sort();
        plan.corrupt_disks = Some(chosen);
    }
}

/// Disk faults: each a probability per operation of a node's disk (0 = off).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageFaults {
    /// Per append: one bit of the appended bytes is flipped, and stays flipped.
    pub flip_on_write: f64,
    /// Per read: one bit of what is read is flipped in the copy returned
    /// (the disk itself is intact; reading again may give the right bytes).
    pub flip_on_read: f64,
    /// Per append: the bytes land at a random earlier offset (overwriting
    /// what was there) and the place they were meant for stays zeros.
    pub misdirected_write: f64,
    /// Per sync: the sync reports success but the bytes it covered stay in
    /// the disk's volatile cache and are lost at the next power failure (a
    /// lying disk). Acknowledged data is then lost: expected, not a bug.
    pub lost_write: f64,
    /// Per sync: the sync fails; a random prefix of the unsynced bytes is
    /// durable and the rest is gone, from the cache too (the kernel dropped
    /// the dirty pages, as in PostgreSQL's "fsyncgate").
    pub fsync_error: f64,
}

impl StorageFaults {
    /// True when no kind is on.
    pub fn is_off(&self) -> bool {
        *self == StorageFaults::default()
    }

    /// True when a fault that corrupts or loses a written record is on.
    pub fn corrupts(&self) -> bool {
        self.corrupting_off() != *self
    }

    /// These rates without the faults that corrupt or lose a written record
    /// (bit flips on write, misdirected and lost writes): what a disk
    /// outside a budget's corrupt copies takes. Flips on read and failed
    /// syncs stay: neither damages an acknowledged record on the disk.
    pub fn corrupting_off(&self) -> StorageFaults {
        let mut off = self.clone();
        for kind in DiskFault::ALL.into_iter().filter(|k| k.corrupts()) {
            *off.rate_mut(kind) = 0.0;
        }
        off
    }

    /// The rate of `kind`.
    pub fn rate(&self, kind: DiskFault) -> f64 {
        match kind {
            DiskFault::FlipOnWrite => self.flip_on_write,
            DiskFault::FlipOnRead => self.flip_on_read,
            DiskFault::MisdirectedWrite => self.misdirected_write,
            DiskFault::LostWrite => self.lost_write,
            DiskFault::FsyncError => self.fsync_error,
        }
    }

    fn rate_mut(&mut self, kind: DiskFault) -> &mut f64 {
        match kind {
            DiskFault::FlipOnWrite => &mut self.flip_on_write,
            DiskFault::FlipOnRead => &mut self.flip_on_read,
            DiskFault::MisdirectedWrite => &mut self.misdirected_write,
            DiskFault::LostWrite => &mut self.lost_write,
            DiskFault::FsyncError => &mut self.fsync_error,
        }
    }

    /// Each rate scaled by `k`.
    fn scaled(&self, k: f64) -> StorageFaults {
        let mut scaled = self.clone();
        for kind in DiskFault::ALL {
            *scaled.rate_mut(kind) *= k;
        }
        scaled
    }
}

/// Network faults beyond madsim's loss and latency, applied where the model
/// sends: each a probability per datagram (0 = off).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkFaults {
    /// A second copy of the datagram is sent after a delay in `duplicate_delay_ms`.
    pub duplicate: f64,
    /// Delay of the duplicate after the original, ms range `[min, max]`.
    pub duplicate_delay_ms: (u64, u64),
    /// The datagram is held back for a delay in `reorder_delay_ms`, so that
    /// later ones overtake it.
    pub reorder: f64,
    /// How long a reordered datagram is held back, ms range `[min, max]`.
    pub reorder_delay_ms: (u64, u64),
}

impl NetworkFaults {
    /// The longest time after a send at which a copy of the datagram may
    /// still be sent (held back, then duplicated), ms. A receiver that
    /// restarts waits this plus the largest latency before it listens, so
    /// that no copy of a datagram sent to its previous incarnation reaches
    /// it (TCP's "quiet time" after a crash).
    pub fn max_send_delay_ms(&self) -> u64 {
        let reorder = if self.reorder > 0.0 {
            self.reorder_delay_ms.1
        } else {
            0
        };
        let duplicate = if self.duplicate > 0.0 {
            self.duplicate_delay_ms.1
        } else {
            0
        };
        reorder + duplicate
    }

    /// The delays after which copies of one datagram are sent: `[0]` without
    /// a fault, a later first copy when held back, a second copy when duplicated.
    pub fn copies(&self, rng: &mut impl Rng) -> Vec<std::time::Duration> {
        let ms = std::time::Duration::from_millis;
        let mut first = 0;
        if self.reorder > 0.0 && rng.gen_bool(self.reorder.clamp(0.0, 1.0)) {
            let (lo, hi) = self.reorder_delay_ms;
            first = rng.gen_range(lo..=hi.max(lo));
        }
        let mut out = vec![ms(first)];
        if self.duplicate > 0.0 && rng.gen_bool(self.duplicate.clamp(0.0, 1.0)) {
            let (lo, hi) = self.duplicate_delay_ms;
            out.push(ms(first + rng.gen_range(lo..=hi.max(lo))));
        }
        out
    }
}

impl FaultPlan {
    /// No faults at all: 1–10 ms latency (madsim's default), no loss.
    pub fn none() -> Self {
        FaultPlan {
            packet_loss: 0.0,
            latency_ms: (1, 10),
            lose_unsynced_on_crash: false,
            clocks: BTreeMap::new(),
            events: Vec::new(),
            storage: StorageFaults::default(),
            network: NetworkFaults::default(),
            corrupt_disks: None,
        }
    }
}

/// Which fault kinds a generated plan may contain, and how often.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultMix {
    /// Packet loss probability (0 = off).
    pub packet_loss: f64,
    /// Latency range in ms.
    pub latency_ms: (u64, u64),
    /// Mean number of partitions per simulated minute.
    pub partitions_per_min: f64,
    /// Mean number of server crashes per simulated minute.
    pub crashes_per_min: f64,
    /// Mean number of server pauses per simulated minute.
    pub pauses_per_min: f64,
    /// Crashes lose (a random prefix of) unsynced disk writes.
    pub lose_unsynced_on_crash: bool,
    /// Largest clock offset in ms (0 = perfect clocks).
    pub max_clock_offset_ms: i64,
    /// Largest drift in ppm (0 = none).
    pub max_drift_ppm: i64,
    /// Mean number of clock steps per node per simulated minute.
    pub clock_steps_per_min: f64,
    /// Disk fault rates (copied into the plan).
    #[serde(default)]
    pub storage: StorageFaults,
    /// Duplicated and reordered datagrams (copied into the plan).
    #[serde(default)]
    pub network: NetworkFaults,
}

impl Default for FaultMix {
    /// Every kind on except the lying disk: 1% loss, 1–10 ms latency, 24
    /// partitions, 24 crashes and 12 pauses a minute, lost unsynced writes,
    /// clocks off by up to 2 s with 200 ppm drift and 12 steps a minute, 2% of
    /// datagrams duplicated (1–500 ms later) and 2% held back (1–100 ms), and
    /// the disk faults that a correct log detects without losing acknowledged
    /// data ([`FaultMix::DEFAULT_STORAGE`]). A lying disk loses acknowledged
    /// writes by design, so it is on only in [`FaultMix::storage`] and swarm
    /// mode. The rates are high because a workload's fault window is a few
    /// simulated seconds.
    fn default() -> Self {
        FaultMix {
            packet_loss: 0.01,
            latency_ms: (1, 10),
            partitions_per_min: 24.0,
            crashes_per_min: 24.0,
            pauses_per_min: 12.0,
            lose_unsynced_on_crash: true,
            max_clock_offset_ms: 2_000,
            max_drift_ppm: 200,
            clock_steps_per_min: 12.0,
            storage: FaultMix::DEFAULT_STORAGE,
            network: FaultMix::DEFAULT_NETWORK,
        }
    }
}

impl FaultMix {
    /// The default disk faults: bit flips on write (0.2% of appends) and on
    /// read (1% of reads), misdirected writes (0.1% of appends), failed syncs
    /// (0.5% of syncs); no lying disk.
    pub const DEFAULT_STORAGE: StorageFaults = StorageFaults {
        flip_on_write: 0.002,
        flip_on_read: 0.01,
        misdirected_write: 0.001,
        lost_write: 0.0,
        fsync_error: 0.005,
    };

    /// The default network faults beyond loss and latency.
    pub const DEFAULT_NETWORK: NetworkFaults = NetworkFaults {
        duplicate: 0.02,
        duplicate_delay_ms: (1, 500),
        reorder: 0.02,
        reorder_delay_ms: (1, 100),
    };

    /// The rates of the `storage` profile: five times the default disk
    /// faults, and a lying disk losing 0.5% of synced writes.
    pub fn storage_rates() -> StorageFaults {
        StorageFaults {
            lost_write: 0.005,
            ..FaultMix::DEFAULT_STORAGE.scaled(5.0)
        }
    }

    /// The named fault profiles (`--faults NAME`): `default`, `calm`, `storage`.
    pub const PROFILES: &'static [&'static str] = &["default", "calm", "storage"];

    /// The profile called `name` applied to `base` (a scenario's default
    /// mix): `default` is `base`, `calm` has no faults, `storage` is `base`
    /// with [`FaultMix::storage_rates`]. `None` for an unknown name.
    pub fn profile(name: &str, base: &FaultMix) -> Option<FaultMix> {
        match name {
            "default" => Some(base.clone()),
            "calm" => Some(FaultMix::calm()),
            "storage" => Some(FaultMix::storage(base)),
            _ => None,
        }
    }

    /// `base` with the storage profile's disk faults, the lying disk included.
    pub fn storage(base: &FaultMix) -> FaultMix {
        FaultMix {
            storage: FaultMix::storage_rates(),
            ..base.clone()
        }
    }

    /// No faults: latency only.
    pub fn calm() -> Self {
        FaultMix {
            packet_loss: 0.0,
            partitions_per_min: 0.0,
            crashes_per_min: 0.0,
            pauses_per_min: 0.0,
            lose_unsynced_on_crash: false,
            max_clock_offset_ms: 0,
            max_drift_ppm: 0,
            clock_steps_per_min: 0.0,
            storage: StorageFaults::default(),
            network: NetworkFaults::default(),
            ..FaultMix::default()
        }
    }

    /// The chance that swarm mode turns each fault kind on: the same for
    /// every kind, crashes included, and high enough that swarm mode is never
    /// weaker than the default mix on a fault class for long (a bug that
    /// needs crashes finds them in three seeds of four, at rates that reach
    /// two and a half times the default's).
    pub const SWARM_ON: f64 = 0.75;

    /// Swarm mode: a random subset of the fault kinds, each kind on with the
    /// same chance ([`FaultMix::SWARM_ON`]) and then at a random rate between
    /// half and two and a half times the default. Different seeds stress
    /// different mixes, which finds bugs that a single average mix hides.
    /// A crash in swarm mode loses unsynced writes, as in the default mix: a
    /// crash that loses nothing is the weaker fault, and drawing the loss
    /// apart from the crash made crash-dependent bugs rare (a quarter of the
    /// seeds had both).
    pub fn swarm(rng: &mut impl Rng) -> Self {
        fn on(rng: &mut impl Rng) -> bool {
            rng.gen_bool(FaultMix::SWARM_ON)
        }
        fn rate(rng: &mut impl Rng, p: f64) -> f64 {
            if on(rng) {
                p * rng.gen_range(0.5..2.5)
            } else {
                0.0
            }
        }
        let d = FaultMix::default();
        let packet_loss = rate(rng, d.packet_loss);
        let partitions_per_min = rate(rng, d.partitions_per_min);
        let crashes_per_min = rate(rng, d.crashes_per_min);
        let pauses_per_min = rate(rng, d.pauses_per_min);
        let clock_steps_per_min = rate(rng, d.clock_steps_per_min);
        let max_lat = rng.gen_range(2..=50);
        let lose_unsynced_on_crash = crashes_per_min > 0.0;
        let max_clock_offset_ms = if on(rng) { 5_000 } else { 0 };
        let max_drift_ppm = if on(rng) { 500 } else { 0 };
        let s = FaultMix::storage_rates();
        let storage = StorageFaults {
            flip_on_write: rate(rng, s.flip_on_write),
            flip_on_read: rate(rng, s.flip_on_read),
            misdirected_write: rate(rng, s.misdirected_write),
            lost_write: rate(rng, s.lost_write),
            fsync_error: rate(rng, s.fsync_error),
        };
        let n = FaultMix::DEFAULT_NETWORK;
        let network = NetworkFaults {
            duplicate: rate(rng, n.duplicate),
            reorder: rate(rng, n.reorder),
            ..n
        };
        FaultMix {
            packet_loss,
            latency_ms: (1, max_lat),
            partitions_per_min,
            crashes_per_min,
            pauses_per_min,
            lose_unsynced_on_crash,
            max_clock_offset_ms,
            max_drift_ppm,
            clock_steps_per_min,
            storage,
            network,
        }
    }

    /// The fault kinds swarm mode draws, by name, each with whether `self`
    /// has it on: what the fairness test counts.
    pub fn kinds_on(&self) -> Vec<(&'static str, bool)> {
        vec![
            ("packet_loss", self.packet_loss > 0.0),
            ("partitions", self.partitions_per_min > 0.0),
            (
                "crashes_losing_unsynced_writes",
                self.crashes_per_min > 0.0 && self.lose_unsynced_on_crash,
            ),
            ("pauses", self.pauses_per_min > 0.0),
            ("clock_steps", self.clock_steps_per_min > 0.0),
            ("clock_offset", self.max_clock_offset_ms > 0),
            ("clock_drift", self.max_drift_ppm > 0),
        ]
        .into_iter()
        .chain(
            DiskFault::ALL
                .into_iter()
                .map(|k| (k.name(), self.storage.rate(k) > 0.0)),
        )
        .chain([
            ("duplicate", self.network.duplicate > 0.0),
            ("reorder", self.network.reorder > 0.0),
        ])
        .collect()
    }

    /// Draws a concrete plan for `duration_ms` of workload. `crashable` nodes
    /// may crash and pause; partitions cut between `crashable` and `others`
    /// or within `crashable`; every node gets a clock.
    pub fn plan(
        &self,
        rng: &mut impl Rng,
        crashable: &[String],
        others: &[String],
        duration_ms: u64,
    ) -> FaultPlan {
        let minutes = duration_ms as f64 / 60_000.0;
        let mut events = Vec::new();
        let count = |rate: f64, rng: &mut dyn rand::RngCore| -> usize {
            let mean = rate * minutes;
            // A simple draw around the mean: floor plus a Bernoulli of the rest.
            let whole = mean.floor() as usize;
            whole + usize::from(rng.gen_bool((mean - mean.floor()).clamp(0.0, 1.0)))
        };
        let all: Vec<String> = crashable.iter().chain(others).cloned().collect();
        for _ in 0..count(self.partitions_per_min, rng) {
            let mut shuffled = all.clone();
            shuffled.shuffle(rng);
            let cut = rng.gen_range(1..shuffled.len().max(2));
            let (from, to) = shuffled.split_at(cut.min(shuffled.len()));
            if from.is_empty() || to.is_empty() {
                continue;
            }
            events.push(FaultEvent {
                at_ms: rng.gen_range(0..duration_ms.max(1)),
                fault: Fault::Partition {
                    from: from.to_vec(),
                    to: to.to_vec(),
                    one_way: rng.gen_bool(0.3),
                    for_ms: rng.gen_range(100..5_000),
                },
            });
        }
        if !crashable.is_empty() {
            for _ in 0..count(self.crashes_per_min, rng) {
                events.push(FaultEvent {
                    at_ms: rng.gen_range(0..duration_ms.max(1)),
                    fault: Fault::Crash {
                        node: crashable.choose(rng).cloned().unwrap_or_default(),
                        down_ms: rng.gen_range(10..3_000),
                    },
                });
            }
            for _ in 0..count(self.pauses_per_min, rng) {
                events.push(FaultEvent {
                    at_ms: rng.gen_range(0..duration_ms.max(1)),
                    fault: Fault::Pause {
                        node: crashable.choose(rng).cloned().unwrap_or_default(),
                        for_ms: rng.gen_range(10..2_000),
                    },
                });
            }
        }
        events.sort_by_key(|e| e.at_ms);
        let mut clocks = BTreeMap::new();
        for node in &all {
            let mut skew = ClockSkew::default();
            if self.max_clock_offset_ms > 0 {
                skew.offset_ms =
                    rng.gen_range(-self.max_clock_offset_ms..=self.max_clock_offset_ms);
            }
            if self.max_drift_ppm > 0 {
                skew.drift_ppm = rng.gen_range(-self.max_drift_ppm..=self.max_drift_ppm);
            }
            for _ in 0..count(self.clock_steps_per_min, rng) {
                let at = rng.gen_range(0..duration_ms.max(1));
                skew.steps.push((at, rng.gen_range(-3_000..=3_000)));
            }
            skew.steps.sort();
            if skew != ClockSkew::default() {
                clocks.insert(node.clone(), skew);
            }
        }
        FaultPlan {
            packet_loss: self.packet_loss,
            latency_ms: self.latency_ms,
            lose_unsynced_on_crash: self.lose_unsynced_on_crash,
            clocks,
            events,
            storage: self.storage.clone(),
            network: self.network.clone(),
            corrupt_disks: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(p: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{p}-{i}")).collect()
    }

    #[test]
    fn a_plan_is_a_function_of_its_seed() {
        let mix = FaultMix::default();
        let a = mix.plan(
            &mut crate::rng::stream(3, "f"),
            &names("server", 2),
            &names("client", 4),
            60_000,
        );
        let b = mix.plan(
            &mut crate::rng::stream(3, "f"),
            &names("server", 2),
            &names("client", 4),
            60_000,
        );
        assert_eq!(a, b);
        assert!(a.events.iter().any(|e| e.fault.kind() == "crash"));
        assert!(a.events.windows(2).all(|w| w[0].at_ms <= w[1].at_ms) || a.events.len() < 2);
    }

    #[test]
    fn calm_has_no_events() {
        let p = FaultMix::calm().plan(
            &mut crate::rng::stream(1, "f"),
            &names("s", 2),
            &names("c", 2),
            60_000,
        );
        assert!(p.events.is_empty() && p.clocks.is_empty() && p.packet_loss == 0.0);
    }

    #[test]
    fn plans_round_trip_through_json() {
        let p = FaultMix::default().plan(
            &mut crate::rng::stream(9, "f"),
            &names("s", 3),
            &names("c", 3),
            30_000,
        );
        let text = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<FaultPlan>(&text).unwrap(), p);
        assert!(serde_json::from_str::<FaultPlan>(r#"{"latency_ms":[1,2],"bogus":1}"#).is_err());
    }

    #[test]
    fn a_plan_carries_its_mix_storage_and_network_rates_and_old_plans_still_load() {
        let mix = FaultMix::storage(&FaultMix::default());
        let p = mix.plan(
            &mut crate::rng::stream(2, "f"),
            &names("s", 1),
            &names("c", 1),
            5_000,
        );
        assert_eq!(
            (p.storage.clone(), p.network.clone()),
            (mix.storage, mix.network)
        );
        assert!(p.storage.lost_write > 0.0 && FaultMix::default().storage.lost_write == 0.0);
        let old: FaultPlan = serde_json::from_str(r#"{"latency_ms":[1,2]}"#).unwrap();
        assert!(old.storage.is_off() && old.network == NetworkFaults::default());
        let old_mix = serde_json::to_value(FaultMix::calm()).unwrap();
        let mut old_mix = old_mix.as_object().unwrap().clone();
        old_mix.remove("storage");
        old_mix.remove("network");
        let m: FaultMix = serde_json::from_value(serde_json::Value::Object(old_mix)).unwrap();
        assert!(m.storage.is_off());
    }

    #[test]
    fn swarm_turns_the_new_kinds_on_in_some_seeds_and_off_in_others() {
        let mixes: Vec<FaultMix> = (0..64)
            .map(|seed| FaultMix::swarm(&mut crate::rng::stream(seed, "swarm")))
            .collect();
        for kind in [
            |m: &FaultMix| m.storage.lost_write,
            |m: &FaultMix| m.storage.flip_on_write,
            |m: &FaultMix| m.storage.fsync_error,
            |m: &FaultMix| m.network.duplicate,
            |m: &FaultMix| m.network.reorder,
        ] {
            assert!(mixes.iter().any(|m| kind(m) > 0.0));
            assert!(mixes.iter().any(|m| kind(m) == 0.0));
        }
    }

    #[test]
    fn swarm_turns_each_fault_kind_on_in_a_fair_share_of_seeds_crashes_included() {
        let seeds = 2_000;
        let mut on = BTreeMap::<&str, usize>::new();
        for seed in 0..seeds {
            for (kind, is_on) in FaultMix::swarm(&mut crate::rng::stream(seed, "swarm")).kinds_on()
            {
                *on.entry(kind).or_default() += usize::from(is_on);
            }
        }
        assert_eq!(on.len(), 14, "{on:?}");
        for (kind, n) in &on {
            let share = *n as f64 / seeds as f64;
            assert!(
                (FaultMix::SWARM_ON - 0.05..=FaultMix::SWARM_ON + 0.05).contains(&share),
                "{kind} on in {share:.3} of swarm seeds: {on:?}"
            );
        }
        // The class swarm used to starve: the default mix has it in every seed.
        assert!(FaultMix::default()
            .kinds_on()
            .iter()
            .any(|(k, on)| *k == "crashes_losing_unsynced_writes" && *on));
    }

    #[test]
    fn copies_are_one_send_at_once_unless_held_back_or_duplicated() {
        let mut rng = crate::rng::stream(5, "net");
        assert_eq!(
            NetworkFaults::default().copies(&mut rng),
            vec![std::time::Duration::ZERO]
        );
        let net = NetworkFaults {
            duplicate: 1.0,
            duplicate_delay_ms: (10, 20),
            reorder: 1.0,
            reorder_delay_ms: (1, 5),
        };
        for _ in 0..50 {
            let c = net.copies(&mut rng);
            assert_eq!(c.len(), 2);
            assert!(c[0].as_millis() >= 1 && c[0].as_millis() <= 5);
            assert!(c[1] >= c[0] + std::time::Duration::from_millis(10));
            assert!(c[1].as_millis() as u64 <= net.max_send_delay_ms());
        }
    }

    #[test]
    fn a_budget_confines_corrupting_disk_faults_to_its_bound_of_disks() {
        let servers = names("server", 2);
        let mut plan = FaultMix::storage(&FaultMix::default()).plan(
            &mut crate::rng::stream(4, "f"),
            &servers,
            &names("c", 2),
            5_000,
        );
        let budget = FaultBudget {
            promise: "one corrupt copy".into(),
            corrupt_disks: Some(1),
            intact_disks: 0,
            spared: Vec::new(),
            per_node: false,
        };
        assert!(!budget.admits(&plan, &servers), "both disks may corrupt");
        budget.confine(&mut plan, &servers, &mut crate::rng::stream(4, "budget"));
        assert!(budget.admits(&plan, &servers));
        let kept = plan.corrupt_disks.clone().expect("bounded");
        assert_eq!(kept.len(), 1);
        let spared = servers.iter().find(|s| !kept.contains(s)).unwrap();
        assert_eq!(plan.storage_of(spared), plan.storage.corrupting_off());
        assert_eq!(plan.storage_of(&kept[0]), plan.storage);
        assert!(plan.storage_of(spared).fsync_error > 0.0);
        // Unbounded, or nothing corrupting drawn: the plan is left as it was.
        let mut calm =
            FaultMix::default().plan(&mut crate::rng::stream(4, "f"), &servers, &[], 5_000);
        calm.storage = calm.storage.corrupting_off();
        let before = calm.clone();
        budget.confine(&mut calm, &servers, &mut crate::rng::stream(4, "budget"));
        FaultBudget::unbounded("x").confine(
            &mut plan.clone(),
            &servers,
            &mut crate::rng::stream(4, "b"),
        );
        assert_eq!(calm, before);
        let text = serde_json::to_string(&before).unwrap();
        assert!(!text.contains("corrupt_disks"));
    }

    #[test]
    fn a_floor_of_intact_disks_leaves_a_lone_disk_uncorrupted() {
        let budget = FaultBudget {
            promise: "one corrupt copy, never every copy".into(),
            corrupt_disks: Some(1),
            intact_disks: 1,
            spared: Vec::new(),
            per_node: false,
        };
        assert_eq!(
            (0..4).map(|n| budget.corrupt_bound(n)).collect::<Vec<_>>(),
            vec![Some(0), Some(0), Some(1), Some(1)]
        );
        assert_eq!(FaultBudget::unbounded("x").corrupt_bound(3), None);
        let lone = names("server", 1);
        let mut plan = FaultMix::storage(&FaultMix::default()).plan(
            &mut crate::rng::stream(4, "f"),
            &lone,
            &names("c", 2),
            5_000,
        );
        assert!(plan.storage.corrupts() && !budget.admits(&plan, &lone));
        let drawn = plan.clone();
        budget.confine(&mut plan, &lone, &mut crate::rng::stream(4, "budget"));
        assert!(budget.admits(&plan, &lone));
        assert_eq!(plan.corrupt_disks, Some(vec![]));
        assert_eq!(plan.storage_of(&lone[0]), plan.storage.corrupting_off());
        // Only the disks that may take corruption were named: no other draw moved.
        assert_eq!(
            FaultPlan {
                corrupt_disks: None,
                ..plan.clone()
            },
            drawn
        );
        // A disk that took a corrupting fault goes past a bound of none.
        let took: BTreeMap<String, BTreeMap<String, u64>> = [(
            "server-0".to_string(),
            [("lost_write".to_string(), 1)].into(),
        )]
        .into();
        assert!(budget.exceeded_by(&took, 1) && !budget.exceeded_by(&took, 2));
        assert_eq!(FaultBudget::corrupted_disks(&took), vec!["server-0"]);
        // Old budgets, without the floor, still load.
        let old: FaultBudget =
            serde_json::from_str(r#"{"promise":"p","corrupt_disks":1}"#).unwrap();
        assert_eq!(old.intact_disks, 0);
    }

    #[test]
    fn a_budget_never_picks_a_spared_node_s_disk_for_corruption() {
        let disks: Vec<String> = ["connector-0", "connector-1", "server-0", "server-0.b"]
            .map(String::from)
            .to_vec();
        let budget = FaultBudget {
            promise: "one server copy, no connector".into(),
            corrupt_disks: Some(1),
            intact_disks: 1,
            spared: vec!["connector".into()],
            per_node: false,
        };
        for seed in 0..64 {
            let mut plan = FaultMix::storage(&FaultMix::default()).plan(
                &mut crate::rng::stream(seed, "f"),
                &disks,
                &[],
                5_000,
            );
            assert!(!budget.admits(&plan, &disks), "every disk may corrupt");
            budget.confine(&mut plan, &disks, &mut crate::rng::stream(seed, "budget"));
            assert!(budget.admits(&plan, &disks), "seed {seed}");
            let kept = plan.corrupt_disks.clone().expect("bounded");
            assert_eq!(kept.len(), 1, "seed {seed}");
            assert!(kept[0].starts_with("server-0"), "seed {seed}: {kept:?}");
            for c in &disks[..2] {
                assert_eq!(plan.storage_of(c), plan.storage.corrupting_off());
                assert!(plan.storage_of(c).fsync_error > 0.0);
            }
        }
        // A spared disk that took a corrupting fault is past the budget,
        // even within its bound of disks.
        let took: BTreeMap<String, BTreeMap<String, u64>> = [(
            "connector-1".to_string(),
            [("lost_write".to_string(), 1)].into(),
        )]
        .into();
        assert!(budget.exceeded_by(&took, 4));
        let unspared = FaultBudget {
            spared: Vec::new(),
            ..budget.clone()
        };
        assert!(!unspared.exceeded_by(&took, 4));
        let text = serde_json::to_string(&unspared).unwrap();
        assert!(!text.contains("spared"));
    }

    #[test]
    fn a_bound_per_node_confines_each_nodes_disks_and_is_judged_node_by_node() {
        let budget = FaultBudget {
            promise: "one corrupt copy of each replica's log".into(),
            corrupt_disks: Some(1),
            intact_disks: 1,
            spared: Vec::new(),
            per_node: true,
        };
        let disks: Vec<String> = ["r-0", "r-0.b", "r-1", "r-1.b", "r-2", "r-2.b"]
            .map(String::from)
            .to_vec();
        let mut plan = FaultMix::storage(&FaultMix::default()).plan(
            &mut crate::rng::stream(4, "f"),
            &names("r", 3),
            &names("c", 2),
            5_000,
        );
        assert!(plan.storage.corrupts() && !budget.admits(&plan, &disks));
        let drawn = plan.clone();
        budget.confine(&mut plan, &disks, &mut crate::rng::stream(4, "budget"));
        assert!(budget.admits(&plan, &disks));
        // One disk of each node, three in all (a bound for the deployment
        // would have allowed one).
        let kept = plan.corrupt_disks.clone().expect("bounded");
        assert_eq!(kept.len(), 3);
        for node in ["r-0", "r-1", "r-2"] {
            assert_eq!(kept.iter().filter(|d| node_of(d) == node).count(), 1);
        }
        assert_eq!(
            FaultPlan {
                corrupt_disks: None,
                ..plan.clone()
            },
            drawn
        );
        // Both disks of one node go past it; one disk of each does not.
        let took = |on: &[&str]| -> BTreeMap<String, BTreeMap<String, u64>> {
            on.iter()
                .map(|d| (d.to_string(), [("flip_on_write".to_string(), 1)].into()))
                .collect()
        };
        assert!(!budget.exceeded_by(&took(&["r-0", "r-1.b", "r-2"]), 6));
        assert!(budget.exceeded_by(&took(&["r-1", "r-1.b"]), 6));
        // Saved budgets without the flag load as a bound for the deployment.
        let old: FaultBudget =
            serde_json::from_str(r#"{"promise":"p","corrupt_disks":1}"#).unwrap();
        assert!(!old.per_node);
        assert!(!serde_json::to_string(&old).unwrap().contains("per_node"));
    }

    #[test]
    fn profiles_are_known_by_name() {
        let base = FaultMix::default();
        assert_eq!(FaultMix::profile("default", &base), Some(base.clone()));
        assert_eq!(FaultMix::profile("calm", &base), Some(FaultMix::calm()));
        assert_eq!(
            FaultMix::profile("storage", &base).map(|m| m.storage),
            Some(FaultMix::storage_rates())
        );
        assert_eq!(FaultMix::profile("nope", &base), None);
    }
}
