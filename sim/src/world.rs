//! The simulated world: builds server and client nodes on a madsim runtime
//! from a seed, runs the workload to its deadline while the fault plan plays,
//! heals every fault, runs a quiet phase, and kills every node at the end so
//! that nothing is left pending (a pending task outlives its runtime and
//! leaks).

use crate::clock::NodeClock;
use crate::disk::SimDisk;
use crate::faults::{Fault, FaultPlan};
use crate::rng;
use madsim::net::NetSim;
use madsim::runtime::{Handle, NodeHandle, Runtime};
use madsim::task::NodeId;
use madsim::time::{sleep, Instant};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the supervisor looks whether every client is done (simulated
/// time; fault events themselves are played at their exact times).
const POLL: Duration = Duration::from_millis(250);

/// The port every server listens on.
pub const SERVER_PORT: u16 = 7000;

/// How many nodes of each role the world has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// Server nodes, named `server-0`, `server-1`, ...
    pub servers: usize,
    /// Client nodes, named `client-0`, ...
    pub clients: usize,
}

impl Topology {
    /// Name of server `i`.
    pub fn server_name(i: usize) -> String {
        format!("server-{i}")
    }
    /// Name of client `i`.
    pub fn client_name(i: usize) -> String {
        format!("client-{i}")
    }
    /// Address server `i` listens on.
    pub fn server_addr(i: usize) -> SocketAddr {
        SocketAddr::new(
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1 + i as u8)),
            SERVER_PORT,
        )
    }
    fn client_ip(i: usize) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(
            10,
            0,
            1 + (i / 250) as u8,
            1 + (i % 250) as u8,
        ))
    }
    /// Names of all servers.
    pub fn server_names(&self) -> Vec<String> {
        (0..self.servers).map(Self::server_name).collect()
    }
    /// Names of all clients.
    pub fn client_names(&self) -> Vec<String> {
        (0..self.clients).map(Self::client_name).collect()
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
    /// Clients stop starting new operations after this much simulated time.
    pub deadline: Duration,
    /// After healing, how long the world runs without faults before the end.
    pub quiet: Duration,
}

/// What a server node's main future is handed, anew at every (re)start.
#[derive(Clone, Debug)]
pub struct ServerEnv {
    /// Server index.
    pub index: usize,
    /// The node's clock.
    pub clock: NodeClock,
    /// The node's disk, which outlives crashes.
    pub disk: SimDisk,
    /// 0 on first start, +1 on each restart.
    pub incarnation: u32,
    /// The run's seed (for the node's own random streams).
    pub seed: u64,
}

/// What a client node's workload is handed.
#[derive(Clone, Debug)]
pub struct ClientEnv {
    /// Client index.
    pub index: usize,
    /// The node's clock.
    pub clock: NodeClock,
    /// Addresses of the servers, by index.
    pub servers: Vec<SocketAddr>,
    /// Start no new operation once simulated time passes this.
    pub deadline: Duration,
    /// The run's seed.
    pub seed: u64,
}

/// One thing the world did, for the trace and the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorldEvent {
    /// Simulated time in ns since the start.
    pub at_ns: u64,
    /// What happened, e.g. `crash server-1`, `restart server-1`, `heal`.
    pub what: String,
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
    /// Clients whose workload finished (all of them unless a run hung).
    pub clients_finished: usize,
    /// Crashes that tore a disk's unsynced tail.
    pub torn_tails: u64,
}

fn now_ns() -> u64 {
    madsim::time::TimeHandle::current().elapsed().as_nanos() as u64
}

/// Runs one world on the current thread. `server` is the main future of a
/// server node (it runs until killed and is started again on restart);
/// `client` is a client's workload (the world waits for all of them).
pub fn run_world<S, SF, C, CF>(cfg: &WorldConfig, server: S, client: C) -> WorldOutcome
where
    S: Fn(ServerEnv) -> SF + Send + Sync + 'static,
    SF: Future<Output = ()> + 'static,
    C: Fn(ClientEnv) -> CF + Send + Sync + 'static,
    CF: Future<Output = ()> + 'static,
{
    let mut config = madsim::Config::default();
    config.net.packet_loss_rate = cfg.plan.packet_loss;
    let (lo, hi) = cfg.plan.latency_ms;
    config.net.send_latency = Duration::from_millis(lo)..Duration::from_millis(hi.max(lo + 1));
    let rt = Runtime::with_seed_and_config(cfg.seed, config);
    let server = Arc::new(server);
    let client = Arc::new(client);
    let topo = cfg.topology;
    let clock_of =
        |name: &str| NodeClock::new(cfg.plan.clocks.get(name).cloned().unwrap_or_default());

    let mut disks = Vec::new();
    let mut nodes: BTreeMap<String, NodeHandle> = BTreeMap::new();
    for i in 0..topo.servers {
        let disk = SimDisk::new();
        disks.push(disk.clone());
        let incarnations = Arc::new(AtomicU32::new(0));
        let env = ServerEnv {
            index: i,
            clock: clock_of(&Topology::server_name(i)),
            disk,
            incarnation: 0,
            seed: cfg.seed,
        };
        let server = server.clone();
        let node = rt
            .create_node()
            .name(Topology::server_name(i))
            .ip(Topology::server_addr(i).ip())
            .init(move || {
                let mut env = env.clone();
                env.incarnation = incarnations.fetch_add(1, Ordering::Relaxed);
                server(env)
            })
            .build();
        nodes.insert(Topology::server_name(i), node);
    }
    let finished = Arc::new(AtomicUsize::new(0));
    let servers: Vec<SocketAddr> = (0..topo.servers).map(Topology::server_addr).collect();
    for i in 0..topo.clients {
        let env = ClientEnv {
            index: i,
            clock: clock_of(&Topology::client_name(i)),
            servers: servers.clone(),
            deadline: cfg.deadline,
            seed: cfg.seed,
        };
        let client = client.clone();
        let finished = finished.clone();
        let node = rt
            .create_node()
            .name(Topology::client_name(i))
            .ip(Topology::client_ip(i))
            .init(move || {
                let work = client(env.clone());
                let finished = finished.clone();
                async move {
                    work.await;
                    finished.fetch_add(1, Ordering::Relaxed);
                    std::future::pending::<()>().await;
                }
            })
            .build();
        nodes.insert(Topology::client_name(i), node);
    }

    let ids: BTreeMap<String, NodeId> = nodes.iter().map(|(n, h)| (n.clone(), h.id())).collect();
    let outcome = Arc::new(Mutex::new(WorldOutcome::default()));
    let plan = cfg.plan.clone();
    let (deadline, quiet, seed) = (cfg.deadline, cfg.quiet, cfg.seed);
    let clients = topo.clients;
    let out = outcome.clone();
    rt.block_on(async move {
        let start = Instant::now();
        let mut faults = FaultPlayer::new(ids.clone(), disks, plan, seed, out.clone());
        // Play faults until the deadline or until every client is done.
        loop {
            let done = finished.load(Ordering::Relaxed) == clients;
            let elapsed = start.elapsed();
            if done || elapsed >= deadline {
                break;
            }
            let next = faults.next_due().unwrap_or(deadline).min(deadline);
            let step = next.saturating_sub(elapsed).min(POLL);
            sleep(step.max(Duration::from_millis(1))).await;
            faults.play_due(start.elapsed());
        }
        faults.heal_all();
        // Clients finish what they started (their retries end); bounded.
        let grace = start.elapsed() + Duration::from_secs(600);
        while finished.load(Ordering::Relaxed) < clients && start.elapsed() < grace {
            sleep(POLL).await;
        }
        sleep(quiet).await;
        let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
        o.clients_finished = finished.load(Ordering::Relaxed);
        o.sim_ns = now_ns();
        let at_ns = o.sim_ns;
        o.events.push(WorldEvent {
            at_ns,
            what: "end".into(),
        });
        o.torn_tails = faults.disks.iter().map(SimDisk::torn_tails).sum();
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
    disks: Vec<SimDisk>,
    lose_unsynced: bool,
    queue: Vec<(Duration, u64, Action)>,
    seq: u64,
    cut: BTreeMap<(String, String), u32>,
    down: BTreeMap<String, ()>,
    paused: BTreeMap<String, ()>,
    rng: rand_chacha::ChaCha8Rng,
    out: Arc<Mutex<WorldOutcome>>,
}

impl FaultPlayer {
    fn new(
        ids: BTreeMap<String, NodeId>,
        disks: Vec<SimDisk>,
        plan: FaultPlan,
        seed: u64,
        out: Arc<Mutex<WorldOutcome>>,
    ) -> Self {
        let mut p = FaultPlayer {
            ids,
            disks,
            lose_unsynced: plan.lose_unsynced_on_crash,
            queue: Vec::new(),
            seq: 0,
            cut: BTreeMap::new(),
            down: BTreeMap::new(),
            paused: BTreeMap::new(),
            rng: rng::stream(seed, "disk-crash"),
            out,
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
        self.queue.first().map(|(t, _, _)| *t)
    }

    fn record(&self, what: String, kind: Option<&str>) {
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
        while self.queue.first().is_some_and(|(t, _, _)| *t <= now) {
            let (_, _, action) = self.queue.remove(0);
            self.apply(now, action);
        }
    }

    fn disk_of(&self, node: &str) -> Option<&SimDisk> {
        let i: usize = node.strip_prefix("server-")?.parse().ok()?;
        self.disks.get(i)
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
                    } => {
                        let mut links = Vec::new();
                        for a in &from {
                            for b in &to {
                                links.push((a.clone(), b.clone()));
                                if !one_way {
                                    links.push((b.clone(), a.clone()));
                                }
                            }
                        }
                        let links: Vec<_> = links
                            .into_iter()
                            .filter(|(a, b)| {
                                a != b && self.ids.contains_key(a) && self.ids.contains_key(b)
                            })
                            .collect();
                        for (a, b) in &links {
                            let n = self.cut.entry((a.clone(), b.clone())).or_default();
                            *n += 1;
                            if *n == 1 {
                                net.clog_link(self.ids[a], self.ids[b]);
                            }
                        }
                        let arrow = if one_way { "->" } else { "<->" };
                        self.record(
                            format!("partition {from:?} {arrow} {to:?} for {for_ms} ms"),
                            Some(kind),
                        );
                        self.push(
                            now + Duration::from_millis(for_ms),
                            Action::EndPartition(links),
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
                        let lose = self.lose_unsynced;
                        if let Some(disk) = self.disk_of(&node).cloned() {
                            disk.crash(lose, &mut self.rng);
                        }
                        self.down.insert(node.clone(), ());
                        self.record(format!("crash {node} for {down_ms} ms"), Some(kind));
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
                        self.paused.insert(node.clone(), ());
                        self.record(format!("pause {node} for {for_ms} ms"), Some(kind));
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
                self.record("partition healed".into(), None);
            }
            Action::Restart(node) => {
                if self.down.remove(&node).is_some() {
                    handle.restart(self.ids[&node]);
                    self.record(format!("restart {node}"), None);
                }
            }
            Action::Resume(node) => {
                if self.paused.remove(&node).is_some() {
                    handle.resume(self.ids[&node]);
                    self.record(format!("resume {node}"), None);
                }
            }
        }
    }

    /// Ends every fault now: links mended, paused nodes resumed, crashed
    /// nodes restarted; later fault starts are dropped.
    fn heal_all(&mut self) {
        let now = Duration::from_nanos(now_ns());
        let pending: Vec<Action> = self.queue.drain(..).map(|(_, _, a)| a).collect();
        for action in pending {
            if !matches!(action, Action::Start(_)) {
                self.apply(now, action);
            }
        }
        self.record("heal".into(), None);
    }
}
