//! The simulated world: builds server and client nodes on a madsim runtime
//! from a seed, runs the workload to its deadline while the fault plan plays,
//! heals every fault, runs a quiet phase, and kills every node at the end so
//! that nothing is left pending (a pending task outlives its runtime and
//! leaks).

use crate::clock::NodeClock;
use crate::disk::{LostWrite, SimDisk};
use crate::faults::{Fault, FaultPlan, NetworkFaults};
pub use crate::happening::Happening;
use crate::in_flight::InFlight;
use crate::listening::Listening;
use crate::rng;
pub use crate::topology::{NodeRole, Role, RoleName, Topology, NODE_PORT};
use madsim::net::NetSim;
use madsim::runtime::{Handle, NodeHandle, Runtime};
use madsim::task::NodeId;
use madsim::time::{sleep, Instant};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// How often the supervisor looks whether every client is done (simulated
/// time; fault events themselves are played at their exact times).
const POLL: Duration = Duration::from_millis(250);

/// What a scenario answers when a fault names a target rather than a node
/// ([`Fault::Isolate`]): the node the target names at that moment, if any.
/// Called by the fault player inside the simulation, at the fault's start.
#[derive(Clone)]
pub struct Resolver(pub Arc<ResolveFn>);

/// The function inside a [`Resolver`]: a target's name to a node's name.
pub type ResolveFn = dyn Fn(&str) -> Option<String> + Send + Sync;

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resolver")
    }
}

/// How one world run is set up.
#[derive(Clone, Debug)]
pub struct WorldConfig {
    /// The run's seed: madsim's RNG and every named stream derive from it.
    pub seed: u64,
    /// Nodes.
    pub topology: Topology,
    /// Faults to play.
    pub plan: FaultPlan,
    /// Awaited nodes stop starting new work after this much simulated time.
    pub deadline: Duration,
    /// After healing, how long the world runs without faults before the end.
    pub quiet: Duration,
    /// When set, the run ends here, whatever phase it is in (no heal, no
    /// wait for the awaited nodes): everything up to it is as in the run
    /// without it. A shrunk failure of a property judged on what came before
    /// it needs no more of the run.
    pub stop: Option<Duration>,
    /// Turns the targets of [`Fault::Isolate`] into node names (none: every
    /// such fault is skipped).
    pub resolver: Option<Resolver>,
}

/// What a node's program is handed, anew at every (re)start.
#[derive(Clone, Debug)]
pub struct NodeEnv {
    /// The node's role.
    pub role: String,
    /// Its index within the role.
    pub index: usize,
    /// Its name, `ROLE-INDEX`.
    pub name: String,
    /// The node's clock.
    pub clock: NodeClock,
    /// The node's disk (for roles with disks), which outlives crashes.
    pub disk: Option<SimDisk>,
    /// The node's further disks (a role with more than one disk per node:
    /// copies `b`, `c`... of a mirrored log), which outlive crashes too.
    pub mirrors: Vec<SimDisk>,
    /// 0 on first start, +1 on each restart.
    pub incarnation: u32,
    /// The run's seed (for the node's own random streams).
    pub seed: u64,
    /// Start no new work once simulated time passes this.
    pub deadline: Duration,
    /// Every node's address.
    pub topology: Arc<Topology>,
    /// The plan's duplicated and reordered datagrams, which the node's
    /// sends apply (madsim has no such faults).
    pub network: NetworkFaults,
    /// The plan's share of datagrams lost, which the node's sends draw
    /// (madsim loses none itself).
    pub packet_loss: f64,
    /// The plan's one-way latency range, ms: madsim applies the least; the
    /// node's sends draw each datagram's latency above it.
    pub latency_ms: (u64, u64),
    /// The plan's largest one-way latency, ms.
    pub max_latency_ms: u64,
    /// The node's datagram copies on their way (its sends' delays), which a
    /// pause hands to the world's network node.
    pub in_flight: InFlight,
    /// Which nodes listen (the world records kills, servers their binds):
    /// whether a connect is refused.
    pub listening: Listening,
}

impl NodeEnv {
    /// This node's role, as its scenario's enum `R` (a program handed a
    /// node of another scenario's topology is a harness bug, and panics).
    pub fn role_as<R: NodeRole>(&self) -> R {
        R::ALL
            .iter()
            .copied()
            .find(|r| r.name() == self.role)
            .unwrap_or_else(|| panic!("node {} has a role its scenario does not name", self.name))
    }

    /// This node's address.
    pub fn addr(&self) -> SocketAddr {
        self.topology
            .addr(self.role.as_str(), self.index)
            .expect("a node's own role is in the topology")
    }

    /// The longest a datagram sent to this node, or a copy of it, can be on
    /// its way: the plan's longest hold-back plus duplicate delay plus its
    /// largest latency (a datagram sent across a cut link is dropped, not held).
    pub fn max_in_flight(&self) -> Duration {
        Duration::from_millis(self.network.max_send_delay_ms() + self.max_latency_ms)
    }

    /// The seeded stream that draws this incarnation's network faults.
    pub fn network_rng(&self) -> rng::Stream {
        rng::stream(
            self.seed,
            &format!("net-{}-{}", self.name, self.incarnation),
        )
    }

    /// A name for this node's incarnation, unique in the run: `client-3`
    /// first, `client-3#1` after its first restart. A restarted node is a
    /// new process: histories give it a new identity.
    pub fn incarnation_name(&self) -> String {
        if self.incarnation == 0 {
            self.name.clone()
        } else {
            format!("{}#{}", self.name, self.incarnation)
        }
    }
}

/// One thing the world did, for the trace and the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorldEvent {
    /// Simulated time in ns since the start.
    pub at_ns: u64,
    /// What happened, saved as its text, e.g. `crash server-1 for 300 ms`,
    /// `restart server-1`, `heal`.
    pub what: Happening,
}

/// What a world run did.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorldOutcome {
    /// Faults started, by kind.
    pub faults: BTreeMap<String, u64>,
    /// Fault starts and ends, heal and end, in time order.
    pub events: Vec<WorldEvent>,
    /// Simulated time at the end.
    pub sim_ns: u64,
    /// Awaited nodes whose program never finished (empty unless a run hung).
    pub unfinished: Vec<String>,
    /// Crashes that tore a disk's unsynced tail.
    pub torn_tails: u64,
    /// What lying disks lost in power failures (acknowledged data the model
    /// could not keep: expected, reported, not a bug), by node.
    #[serde(default)]
    pub lost_writes: Vec<(String, LostWrite)>,
    /// Disk faults injected, by node and kind: which nodes' storage the plan
    /// actually damaged (a checker may excuse only those).
    #[serde(default)]
    pub disk_faults: BTreeMap<String, BTreeMap<String, u64>>,
}

/// Simulated ns since the start of the run (0 outside a simulation).
pub fn now_ns() -> u64 {
    madsim::time::TimeHandle::try_current()
        .map(|t| t.elapsed().as_nanos() as u64)
        .unwrap_or(0)
}

/// Runs one world on the current thread. `program` is the main future of
/// every node, told by its [`NodeEnv`] which node it is; it is started again
/// on each restart. The world plays the fault plan until every awaited
/// node's program has finished or the deadline passes, heals every fault,
/// waits (bounded) for the awaited programs to finish, runs the quiet
/// phase, and kills every node.
pub fn run_world<P, F>(cfg: &WorldConfig, program: P) -> WorldOutcome
where
    P: Fn(NodeEnv) -> F + Send + Sync + 'static,
    F: Future<Output = ()> + 'static,
{
    let mut config = madsim::Config::default();
    // Loss and the latency above the least are drawn per datagram by the
    // nodes' sends (`NodeEnv::packet_loss`, `NodeEnv::latency_ms`), from a
    // stream keyed by the datagram: madsim draws them from the one global
    // stream, so a run that sends one datagram fewer (a shrunk one) would
    // move every later datagram's fate. madsim keeps the least latency.
    config.net.packet_loss_rate = 0.0;
    let (lo, hi) = cfg.plan.latency_ms;
    let least = Duration::from_millis(lo);
    config.net.send_latency = least..least + Duration::from_nanos(1);
    let rt = Runtime::with_seed_and_config(cfg.seed, config);
    let program = Arc::new(program);
    let topo = Arc::new(cfg.topology.clone());
    // One clock per node, shared by its incarnations and the fault player.
    let mut clocks: BTreeMap<String, NodeClock> = BTreeMap::new();
    let mut clock_of = |name: &str| {
        clocks
            .entry(name.to_string())
            .or_insert_with(|| {
                NodeClock::new(cfg.plan.clocks.get(name).cloned().unwrap_or_default())
            })
            .clone()
    };

    // Every disk by its name, and each node's disks' names (a crash hits them all).
    let mut disks: BTreeMap<String, SimDisk> = BTreeMap::new();
    let mut node_disks: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut nodes: BTreeMap<String, NodeHandle> = BTreeMap::new();
    // The network node, created after every other (their ids do not move):
    // it sends the copies a paused node had on their way.
    let network_node: Arc<OnceLock<NodeHandle>> = Arc::default();
    let mut in_flight: BTreeMap<String, InFlight> = BTreeMap::new();
    let listening = Listening::default();
    // One flag per awaited node: set when its current incarnation's program ends.
    let mut awaited: Vec<(String, Arc<AtomicBool>)> = Vec::new();
    for role in &topo.roles {
        for i in 0..role.count {
            let name = Topology::node_name(&role.name, i);
            let copies = if role.disk { role.disks.max(1) } else { 0 };
            let mut own: Vec<SimDisk> = (0..copies)
                .map(|copy| {
                    let device = Topology::disk_name(&name, copy);
                    let d = SimDisk::with_faults(
                        cfg.plan.storage_of(&device),
                        rng::stream(cfg.seed, &format!("disk-{device}")),
                    );
                    disks.insert(device.clone(), d.clone());
                    node_disks.entry(name.clone()).or_default().push(device);
                    d
                })
                .collect();
            let mirrors = own.split_off(own.len().min(1));
            let disk = own.pop();
            let done = Arc::new(AtomicBool::new(false));
            if role.awaited {
                awaited.push((name.clone(), done.clone()));
            }
            let incarnations = Arc::new(AtomicU32::new(0));
            let copies = InFlight::new(network_node.clone());
            in_flight.insert(name.clone(), copies.clone());
            let env = NodeEnv {
                role: role.name.clone(),
                index: i,
                name: name.clone(),
                clock: clock_of(&name),
                disk,
                mirrors,
                incarnation: 0,
                seed: cfg.seed,
                deadline: cfg.deadline,
                topology: topo.clone(),
                network: cfg.plan.network.clone(),
                packet_loss: cfg.plan.packet_loss,
                latency_ms: (lo, hi.max(lo + 1)),
                max_latency_ms: cfg.plan.latency_ms.1.max(cfg.plan.latency_ms.0 + 1),
                in_flight: copies,
                listening: listening.clone(),
            };
            let program = program.clone();
            let is_awaited = role.awaited;
            let ip = topo
                .addr(&role.name, i)
                .expect("the role is in the topology")
                .ip();
            let node = rt
                .create_node()
                .name(name.clone())
                .ip(ip)
                .init(move || {
                    let mut env = env.clone();
                    env.incarnation = incarnations.fetch_add(1, Ordering::Relaxed);
                    let work = program(env);
                    let done = done.clone();
                    done.store(false, Ordering::Relaxed);
                    async move {
                        work.await;
                        if is_awaited {
                            done.store(true, Ordering::Relaxed);
                            std::future::pending::<()>().await;
                        }
                    }
                })
                .build();
            nodes.insert(name, node);
        }
    }
    let _ = network_node.set(rt.create_node().name("network").build());

    let ids: BTreeMap<String, NodeId> = nodes.iter().map(|(n, h)| (n.clone(), h.id())).collect();
    let outcome = Arc::new(Mutex::new(WorldOutcome::default()));
    let plan = cfg.plan.clone();
    let (deadline, quiet, seed) = (cfg.deadline, cfg.quiet, cfg.seed);
    let stop = cfg.stop.unwrap_or(Duration::MAX);
    let resolver = cfg.resolver.clone();
    let out = outcome.clone();
    rt.block_on(async move {
        let start = Instant::now();
        let unfinished = || -> Vec<String> {
            awaited
                .iter()
                .filter(|(_, d)| !d.load(Ordering::Relaxed))
                .map(|(n, _)| n.clone())
                .collect()
        };
        let all_done = || awaited.iter().all(|(_, d)| d.load(Ordering::Relaxed));
        let mut faults = FaultPlayer::new(ids.clone(), disks, plan, seed, out.clone(), resolver);
        faults.node_disks = node_disks;
        faults.clocks = clocks;
        faults.in_flight = in_flight;
        faults.listening = listening;
        // Play faults until the deadline or until every awaited node is done.
        loop {
            let elapsed = start.elapsed();
            if all_done() || elapsed >= deadline || elapsed >= stop {
                break;
            }
            let next = faults.next_due().unwrap_or(deadline).min(deadline);
            let step = next.saturating_sub(elapsed).min(POLL);
            // The same wake-ups as without a stop, the last cut at it.
            let step = step.min(stop.saturating_sub(elapsed));
            sleep(step.max(Duration::from_millis(1))).await;
            faults.play_due(start.elapsed());
        }
        if start.elapsed() < stop {
            faults.heal_all();
            // Awaited nodes finish what they started (their retries end); bounded.
            let grace = start.elapsed() + Duration::from_secs(600);
            while !all_done() && start.elapsed() < grace.min(stop) {
                sleep(POLL.min(stop.saturating_sub(start.elapsed()))).await;
            }
            sleep(quiet.min(stop.saturating_sub(start.elapsed()))).await;
        }
        let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
        o.unfinished = unfinished();
        o.sim_ns = now_ns();
        let at_ns = o.sim_ns;
        o.events.push(WorldEvent {
            at_ns,
            what: Happening::End,
        });
        o.torn_tails = faults.disks.values().map(SimDisk::torn_tails).sum();
        for (node, disk) in &faults.disks {
            for (kind, n) in disk.injected() {
                *o.faults.entry(kind.to_string()).or_default() += n;
                *o.disk_faults
                    .entry(node.clone())
                    .or_default()
                    .entry(kind.to_string())
                    .or_default() += n;
            }
            o.lost_writes
                .extend(disk.lost_writes().into_iter().map(|w| (node.clone(), w)));
        }
        drop(o);
        let handle = Handle::current();
        for id in ids.values() {
            handle.kill(*id);
        }
    });
    drop(rt);
    Arc::try_unwrap(outcome)
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .unwrap_or_else(|arc| arc.lock().unwrap_or_else(|e| e.into_inner()).clone())
}

/// A fault action at a time: the start or the healing of a fault.
#[derive(Clone, Debug)]
enum Action {
    Start(Fault),
    EndPartition(Vec<(String, String)>),
    Restart(String),
    Resume(String),
}

/// Plays a fault plan against the runtime, keeping count of links cut by
/// overlapping partitions so that healing one does not heal the other.
struct FaultPlayer {
    ids: BTreeMap<String, NodeId>,
    /// Every disk, by its name.
    disks: BTreeMap<String, SimDisk>,
    /// Each node's disks' names, in order.
    node_disks: BTreeMap<String, Vec<String>>,
    lose_unsynced: bool,
    queue: Vec<(Duration, u64, Action)>,
    seq: u64,
    cut: BTreeMap<(String, String), u32>,
    down: BTreeMap<String, ()>,
    paused: BTreeMap<String, ()>,
    out: Arc<Mutex<WorldOutcome>>,
    resolver: Option<Resolver>,
    clocks: BTreeMap<String, NodeClock>,
    /// Each node's datagram copies on their way, handed on at a pause.
    in_flight: BTreeMap<String, InFlight>,
    /// Which nodes listen: a crash silences one.
    listening: Listening,
    /// The times of the run's branch points not reached yet (none in a plain run).
    branch_times: Vec<Duration>,
    /// A branch point has been passed: cuts that may be re-timed draw their length.
    branched: bool,
    /// The lengths and heal times a branch draws for the cuts it may re-time.
    lengths: rng::Stream,
    /// The open cuts a branch may re-time.
    retimable: Vec<Retimable>,
}

/// An open isolation whose heal a branch point may re-draw
/// ([`Fault::Isolate`]'s `branch_ms`).
struct Retimable {
    /// The queue number of its healing.
    heal_seq: u64,
    started: Duration,
    /// Its length's range, ms from `started`.
    range_ms: (u64, u64),
    node: String,
}

impl FaultPlayer {
    fn new(
        ids: BTreeMap<String, NodeId>,
        disks: BTreeMap<String, SimDisk>,
        plan: FaultPlan,
        seed: u64,
        out: Arc<Mutex<WorldOutcome>>,
        resolver: Option<Resolver>,
    ) -> Self {
        let mut p = FaultPlayer {
            ids,
            disks,
            node_disks: BTreeMap::new(),
            lose_unsynced: plan.lose_unsynced_on_crash,
            queue: Vec::new(),
            seq: 0,
            cut: BTreeMap::new(),
            down: BTreeMap::new(),
            paused: BTreeMap::new(),
            out,
            resolver,
            clocks: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            listening: Listening::default(),
            branch_times: rng::branch_path()
                .map(|path| path.iter().map(|p| Duration::from_nanos(p.at_ns)).collect())
                .unwrap_or_default(),
            branched: false,
            // Made at time 0 and drawn only after a branch point: a plain
            // run never draws it, a branched one draws its branch's stream.
            lengths: rng::stream(seed, "isolation-lengths"),
            retimable: Vec::new(),
        };
        for e in plan.events {
            p.push(Duration::from_millis(e.at_ms), Action::Start(e.fault));
        }
        p
    }

    fn push(&mut self, at: Duration, action: Action) {
        self.seq += 1;
        self.queue.push((at, self.seq, action));
        // Kept sorted by (time, insertion); the queue is short.
        self.queue.sort_by_key(|(t, s, _)| (*t, *s));
    }

    fn next_due(&self) -> Option<Duration> {
        let action = self.queue.first().map(|(t, _, _)| *t);
        // A branch point is a wake-up only while a cut it may re-time is
        // open: otherwise the player wakes as it always did, and a branched
        // run of a scenario without such cuts is timed as before.
        let branch = self
            .branch_times
            .first()
            .filter(|_| !self.retimable.is_empty());
        match (action, branch) {
            (Some(a), Some(b)) => Some(a.min(*b)),
            (a, b) => a.or(b.copied()),
        }
    }

    fn record(&self, what: Happening, kind: Option<&str>) {
        tracing::info!("world: {what}");
        let mut o = self.out.lock().unwrap_or_else(|e| e.into_inner());
        o.events.push(WorldEvent {
            at_ns: now_ns(),
            what,
        });
        if let Some(k) = kind {
            *o.faults.entry(k.to_string()).or_default() += 1;
        }
    }

    fn play_due(&mut self, now: Duration) {
        if self.branch_times.first().is_some_and(|t| *t <= now) {
            self.branch_times.retain(|t| *t > now);
            self.branched = true;
            self.retime_open_cuts(now);
        }
        while self.queue.first().is_some_and(|(t, _, _)| *t <= now) {
            let (_, seq, action) = self.queue.remove(0);
            self.retimable.retain(|c| c.heal_seq != seq);
            self.apply(now, action);
        }
    }

    /// Every disk of `node`, in order.
    fn disks_of(&self, node: &str) -> Vec<SimDisk> {
        self.node_disks
            .get(node)
            .into_iter()
            .flatten()
            .filter_map(|d| self.disks.get(d).cloned())
            .collect()
    }

    /// Cuts every link from `from` to `to` (and back unless `one_way`) for
    /// `for_ms`, and records it as a partition (the report draws it).
    fn cut_links(
        &mut self,
        now: Duration,
        from: &[String],
        to: &[String],
        one_way: bool,
        for_ms: u64,
        kind: &str,
    ) {
        let net = NetSim::current();
        let mut links = Vec::new();
        for a in from {
            for b in to {
                links.push((a.clone(), b.clone()));
                if !one_way {
                    links.push((b.clone(), a.clone()));
                }
            }
        }
        let links: Vec<_> = links
            .into_iter()
            .filter(|(a, b)| a != b && self.ids.contains_key(a) && self.ids.contains_key(b))
            .collect();
        for (a, b) in &links {
            let n = self.cut.entry((a.clone(), b.clone())).or_default();
            *n += 1;
            if *n == 1 {
                net.clog_link(self.ids[a], self.ids[b]);
            }
        }
        self.record(
            Happening::Partition {
                from: from.to_vec(),
                to: to.to_vec(),
                one_way,
                for_ms,
            },
            Some(kind),
        );
        self.push(
            now + Duration::from_millis(for_ms),
            Action::EndPartition(links),
        );
    }

    fn apply(&mut self, now: Duration, action: Action) {
        let net = NetSim::current();
        let handle = Handle::current();
        match action {
            Action::Start(fault) => {
                let kind = fault.kind();
                match fault {
                    Fault::Partition {
                        from,
                        to,
                        one_way,
                        for_ms,
                    } => self.cut_links(now, &from, &to, one_way, for_ms, kind),
                    Fault::Isolate {
                        target,
                        from,
                        for_ms,
                        branch_ms,
                    } => {
                        let node = self.resolver.as_ref().and_then(|r| (r.0)(&target));
                        let Some(node) = node.filter(|n| self.ids.contains_key(n)) else {
                            self.record(Happening::Isolate { target, node: None }, None);
                            return;
                        };
                        self.record(
                            Happening::Isolate {
                                target,
                                node: Some(node.clone()),
                            },
                            None,
                        );
                        let peers: Vec<String> = from.into_iter().filter(|n| *n != node).collect();
                        let for_ms = match branch_ms {
                            Some((lo, hi)) if self.branched && lo < hi => {
                                self.lengths.gen_range(lo..=hi)
                            }
                            _ => for_ms,
                        };
                        self.cut_links(
                            now,
                            std::slice::from_ref(&node),
                            &peers,
                            false,
                            for_ms,
                            kind,
                        );
                        if let Some(range_ms) = branch_ms.filter(|_| !self.branch_times.is_empty())
                        {
                            self.retimable.push(Retimable {
                                heal_seq: self.seq,
                                started: now,
                                range_ms,
                                node,
                            });
                        }
                    }
                    Fault::ClockRate {
                        target,
                        drift_ppm,
                        peers,
                        peers_ppm,
                        for_ms,
                    } => {
                        let node = if self.ids.contains_key(&target) {
                            Some(target.clone())
                        } else {
                            self.resolver.as_ref().and_then(|r| (r.0)(&target))
                        };
                        let Some(clock) = node.as_ref().and_then(|n| self.clocks.get(n)) else {
                            self.record(Happening::ClockRateMissed(target), None);
                            return;
                        };
                        let at_ms = now.as_millis() as u64;
                        clock.hold_rate(at_ms, for_ms, drift_ppm);
                        let node = node.unwrap_or_default();
                        let mut others = Vec::new();
                        for p in peers.iter().filter(|p| **p != node) {
                            if let Some(c) = self.clocks.get(p) {
                                c.hold_rate(at_ms, for_ms, peers_ppm);
                                others.push(p.clone());
                            }
                        }
                        self.record(
                            Happening::ClockRate {
                                target,
                                node,
                                drift_ppm,
                                peers: others,
                                peers_ppm,
                                for_ms,
                            },
                            Some(kind),
                        );
                    }
                    Fault::Crash { node, down_ms } => {
                        let Some(&id) = self.ids.get(&node) else {
                            return;
                        };
                        if self.down.contains_key(&node) || self.paused.contains_key(&node) {
                            return;
                        }
                        handle.kill(id);
                        self.listening.killed(&node);
                        let lose = self.lose_unsynced;
                        // Named by its time: what it draws does not move
                        // when a shrunk run leaves out other faults.
                        for disk in self.disks_of(&node) {
                            disk.crash(lose, now.as_nanos() as u64 + 1);
                        }
                        self.down.insert(node.clone(), ());
                        self.record(
                            Happening::Crash {
                                node: node.clone(),
                                down_ms,
                            },
                            Some(kind),
                        );
                        self.push(now + Duration::from_millis(down_ms), Action::Restart(node));
                    }
                    Fault::Pause { node, for_ms } => {
                        let Some(&id) = self.ids.get(&node) else {
                            return;
                        };
                        if self.down.contains_key(&node) || self.paused.contains_key(&node) {
                            return;
                        }
                        handle.pause(id);
                        // What it already sent is on the wire, not paused with it.
                        if let Some(copies) = self.in_flight.get(&node) {
                            copies.hand_over();
                        }
                        self.paused.insert(node.clone(), ());
                        self.record(
                            Happening::Pause {
                                node: node.clone(),
                                for_ms,
                            },
                            Some(kind),
                        );
                        self.push(now + Duration::from_millis(for_ms), Action::Resume(node));
                    }
                }
            }
            Action::EndPartition(links) => {
                for (a, b) in links {
                    if let Some(n) = self.cut.get_mut(&(a.clone(), b.clone())) {
                        *n -= 1;
                        if *n == 0 {
                            self.cut.remove(&(a.clone(), b.clone()));
                            net.unclog_link(self.ids[&a], self.ids[&b]);
                        }
                    }
                }
                self.record(Happening::PartitionHealed, None);
            }
            Action::Restart(node) => {
                if self.down.remove(&node).is_some() {
                    handle.restart(self.ids[&node]);
                    self.record(Happening::Restart(node), None);
                }
            }
            Action::Resume(node) => {
                if self.paused.remove(&node).is_some() {
                    handle.resume(self.ids[&node]);
                    self.record(Happening::Resume(node), None);
                }
            }
        }
    }

    /// At a branch point: each open cut a branch may re-time heals at a time
    /// drawn anew from what is left of its range (after now), half the time
    /// within the next second: what a branch varies is when the heal comes
    /// against what just happened.
    fn retime_open_cuts(&mut self, now: Duration) {
        let open: BTreeMap<u64, Duration> =
            self.queue.iter().map(|(t, seq, _)| (*seq, *t)).collect();
        self.retimable.retain(|c| open.contains_key(&c.heal_seq));
        let now_ms = now.as_millis() as u64;
        for k in 0..self.retimable.len() {
            let c = &self.retimable[k];
            let start_ms = c.started.as_millis() as u64;
            let earliest = (start_ms + c.range_ms.0).max(now_ms + 1);
            let latest = start_ms + c.range_ms.1;
            if earliest >= latest {
                continue;
            }
            let soon = (earliest + 1_000).min(latest);
            let heal_ms = if self.lengths.gen_bool(0.5) {
                self.lengths.gen_range(earliest..=soon)
            } else {
                self.lengths.gen_range(earliest..=latest)
            };
            let (seq, node) = (c.heal_seq, c.node.clone());
            for entry in self.queue.iter_mut().filter(|e| e.1 == seq) {
                entry.0 = Duration::from_millis(heal_ms);
            }
            self.queue.sort_by_key(|(t, s, _)| (*t, *s));
            self.record(
                Happening::Note(format!(
                    "branch: the isolation of {node} heals at {heal_ms} ms"
                )),
                None,
            );
        }
    }

    /// Ends every fault now: links mended, paused nodes resumed, crashed
    /// nodes restarted, syncs no longer failing; later fault starts are
    /// dropped.
    fn heal_all(&mut self) {
        let now = Duration::from_nanos(now_ns());
        for disk in self.disks.values() {
            disk.stop_failing_syncs();
        }
        let pending: Vec<Action> = self.queue.drain(..).map(|(_, _, a)| a).collect();
        for action in pending {
            if !matches!(action, Action::Start(_)) {
                self.apply(now, action);
            }
        }
        self.record(Happening::Heal, None);
    }
}
