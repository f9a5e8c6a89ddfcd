//! Adapters that hand the engine's clock, disk and network faults to the
//! model through the model's own traits (the model knows nothing of the engine).

use overcast_model::conditions::Millis;
use overcast_model::env::{
    Clock, ListenTable, Listeners, LogDevice, SendFaults, SendPolicy, ServerDraws, SyncError,
};
use overcast_sim::clock::NodeClock;
use overcast_sim::disk::SimDisk;
use overcast_sim::faults::NetworkFaults;
use overcast_sim::listening::Listening;
use overcast_sim::rng::NameHash;
use overcast_sim::world::NodeEnv;
use rand::{Rng, RngCore};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A node's simulated clock as the model's [`Clock`].
pub struct ClockAdapter(pub NodeClock);

impl Clock for ClockAdapter {
    fn now_ms(&self) -> Millis {
        self.0.now_ms()
    }
}

/// The world's table of listening nodes as the model's [`Listeners`]: an
/// address is its node's (by the topology); an address no node has is
/// never refused.
pub struct ListenAdapter {
    listening: Listening,
    topology: Arc<overcast_sim::world::Topology>,
}

impl ListenAdapter {
    /// The table node `env` shares with the world: for a server to say it
    /// listens, and for a client to ask before it connects.
    pub fn table(env: &NodeEnv) -> ListenTable {
        ListenTable(Some(Arc::new(ListenAdapter {
            listening: env.listening.clone(),
            topology: env.topology.clone(),
        })))
    }
}

impl Listeners for ListenAdapter {
    fn listening(&self, addr: SocketAddr) {
        if let Some(node) = self.topology.node_at(addr) {
            self.listening.listens(&node);
        }
    }

    fn refuses(&self, to: SocketAddr) -> bool {
        self.topology
            .node_at(to)
            .is_some_and(|node| self.listening.refuses(&node))
    }
}

/// A node's simulated disk as the model's [`LogDevice`].
pub struct DiskAdapter(pub SimDisk);

impl LogDevice for DiskAdapter {
    fn append_as(&self, identity: u64, bytes: &[u8]) {
        self.0.append_as(identity, bytes)
    }
    fn append(&self, bytes: &[u8]) {
        // A log record is named by its partition and LSN, so that its disk
        // faults do not move when a shrunk run writes fewer records before
        // it (to other partitions); anything else by its place.
        let records = overcast_model::wal::scan_fragment(bytes);
        if records.valid == bytes.len() && !records.records.is_empty() {
            let names: Vec<u8> = records
                .records
                .iter()
                .flat_map(|r| [u64::from(r.partition).to_le_bytes(), r.lsn.to_le_bytes()])
                .flatten()
                .collect();
            self.0.append_as(overcast_sim::rng::fnv1a(&names), bytes)
        } else {
            self.0.append(bytes)
        }
    }
    fn sync(&self) -> Result<(), SyncError> {
        self.0.sync().map_err(|_| SyncError)
    }
    fn read_all(&self) -> Vec<u8> {
        self.0.read_all()
    }
    fn truncate(&self, len: usize) {
        self.0.truncate(len)
    }
}

/// A server's log device that also records, as node events, each log record
/// appended (the server's view, in log order) and, at start-up, how many
/// records survived the last crash. Each scenario says which event a record
/// and a recovery become.
pub struct RecordingDisk<C, R, E> {
    /// The disk.
    pub disk: DiskAdapter,
    /// The server's name.
    pub node: String,
    /// The server's clock (the `now` its partitions were handed).
    pub clock: NodeClock,
    /// Where events go.
    pub recorder: overcast_sim::history::Recorder<C, R, E>,
    /// The event an appended record becomes (`None`: not recorded).
    pub logged: fn(overcast_model::wal::LogRecord) -> Option<E>,
    /// The event a recovery that kept `kept` records becomes.
    pub recovered: fn(u64) -> E,
}

impl<C, R, E> RecordingDisk<C, R, E> {
    /// Records the log records in `bytes`, as appended.
    fn record(&self, bytes: &[u8]) {
        for r in overcast_model::wal::scan_fragment(bytes).records {
            if let Some(e) = (self.logged)(r) {
                self.recorder
                    .event(self.node.clone(), self.clock.now_ms(), e);
            }
        }
    }
}

impl<C: Send, R: Send, E: Send> LogDevice for RecordingDisk<C, R, E> {
    fn append_as(&self, identity: u64, bytes: &[u8]) {
        self.disk.append_as(identity, bytes);
        self.record(bytes);
    }
    fn append(&self, bytes: &[u8]) {
        self.disk.append(bytes);
        self.record(bytes);
    }
    fn sync(&self) -> Result<(), SyncError> {
        self.disk.sync()
    }
    fn read_all(&self) -> Vec<u8> {
        self.disk.read_all()
    }
    fn truncate(&self, len: usize) {
        self.disk.truncate(len)
    }
    /// A record copied from another copy of the log is not a new record:
    /// appended, not recorded.
    fn repair(&self, identity: u64, bytes: &[u8]) {
        self.disk.append_as(identity, bytes);
    }
    /// What the log kept, as the recovery over every copy decided it (once
    /// per recovery, however often a copy was read).
    fn recovered(&self, kept: u64) {
        self.recorder.event(
            self.node.clone(),
            self.clock.now_ms(),
            (self.recovered)(kept),
        );
    }
}

/// Counts of injected network faults (`duplicate`, `reorder`), shared by
/// every node's [`NetworkAdapter`] of one run.
pub type NetworkCounts = Arc<Mutex<BTreeMap<String, u64>>>;

/// The plan's network faults as the model's [`SendFaults`]: loss, the
/// latency above the least (madsim applies the least), duplicated and
/// held-back datagrams. Each datagram's are drawn from a stream of its own,
/// keyed by the run's seed, the sending incarnation, the receiver, the
/// operation it belongs to and its number among those: leaving an operation
/// out (the shrinker's history pass) leaves every other operation's
/// datagrams their fates. A datagram belongs to the operation its sender
/// drew last ([`overcast_harness::ops::current`]), or, from a node that draws none (a
/// server), to the one its receiver drew last (the reply to it); on a node
/// whose tasks send at once, each from its own SDK client (a queues
/// connector, a feed host), to the call the sending (or receiving) socket
/// is in ([`overcast_harness::ops::current_at`]).
pub struct NetworkAdapter {
    faults: NetworkFaults,
    /// Share of datagrams lost.
    packet_loss: f64,
    /// Latency range, ns: madsim applies the least, the adapter the rest.
    latency_ns: (u64, u64),
    seed: u64,
    /// The sending incarnation's name.
    sender: String,
    /// Node names by address (the receivers).
    topology: Arc<overcast_sim::world::Topology>,
    /// The node's copies on their way (a pause hands them to the network).
    in_flight: overcast_sim::in_flight::InFlight,
    /// Datagrams sent so far, by receiver and operation.
    sent: Mutex<BTreeMap<(SocketAddr, Option<usize>), u64>>,
    counts: NetworkCounts,
}

impl NetworkAdapter {
    /// The send policy of the node `env` describes; counts go to `counts`.
    /// No faults and no latency range in the plan: no policy (nothing drawn).
    pub fn policy(env: &NodeEnv, counts: &NetworkCounts) -> SendPolicy {
        let (lo, hi) = env.latency_ms;
        if env.network.duplicate <= 0.0
            && env.network.reorder <= 0.0
            && env.packet_loss <= 0.0
            && hi <= lo
        {
            return SendPolicy::default();
        }
        SendPolicy(Some(Arc::new(NetworkAdapter {
            faults: env.network.clone(),
            packet_loss: env.packet_loss,
            latency_ns: (lo * 1_000_000, hi.max(lo) * 1_000_000),
            seed: env.seed,
            sender: env.incarnation_name(),
            topology: env.topology.clone(),
            in_flight: env.in_flight.clone(),
            sent: Mutex::default(),
            counts: counts.clone(),
        })))
    }
}

/// Adds one to `counts[kind]`, allocating its key only the first time.
fn bump(counts: &mut BTreeMap<String, u64>, kind: &str) {
    match counts.get_mut(kind) {
        Some(n) => *n += 1,
        None => {
            counts.insert(kind.to_string(), 1);
        }
    }
}

impl SendFaults for NetworkAdapter {
    fn copies(&self, from: Option<SocketAddr>, to: SocketAddr) -> Vec<Duration> {
        let op = match from {
            Some(from) => overcast_harness::ops::current_at(&self.sender, from.port()),
            None => overcast_harness::ops::current(&self.sender),
        }
        .or_else(|| {
            let receiver = self.topology.node_at(to)?;
            overcast_harness::ops::current_at(&receiver, to.port())
        });
        let n = {
            let mut sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
            let n = sent.entry((to, op)).or_default();
            *n += 1;
            *n
        };
        // The name `net-SENDER-TO-OP-N` (OP `-` for none).
        let name = NameHash::new()
            .str("net-")
            .str(&self.sender)
            .str("-")
            .addr(to)
            .str("-");
        let name = match op {
            Some(op) => name.num(op as u64),
            None => name.str("-"),
        };
        let mut rng = name.str("-").num(n).stream(self.seed);
        if self.packet_loss > 0.0 && rng.gen_bool(self.packet_loss.clamp(0.0, 1.0)) {
            return Vec::new();
        }
        let (lo, hi) = self.latency_ns;
        let extra = Duration::from_nanos(if hi > lo {
            rng.gen_range(0..hi - lo)
        } else {
            0
        });
        let copies = self.faults.copies(&mut rng);
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if !copies[0].is_zero() {
            bump(&mut counts, "reorder");
        }
        if copies.len() > 1 {
            bump(&mut counts, "duplicate");
        }
        copies.into_iter().map(|d| d + extra).collect()
    }

    fn send_later(&self, delay: Duration, send: overcast_sim::in_flight::PendingSend) {
        self.in_flight.send_later(delay, send);
    }
}

/// A server's random draws as the model's [`ServerDraws`]. A request is
/// named by its sender's address, the operation that sender drew last
/// ([`overcast_harness::ops::current`]: the workload operation the request belongs to,
/// whose number does not move when the shrinker leaves other operations
/// out; on a node whose tasks send at once, the call the sending socket is
/// in, [`overcast_harness::ops::current_at`]) and its number among the requests from
/// there in that operation (its
/// attempt, or the read and the write of a read-modify-write); its log
/// record is appended under that name, so its disk faults are keyed by it
/// too. Each stream is [`overcast_sim::rng::stream`] keyed by the run's
/// seed, the server incarnation's stream name and what it is for. So leaving
/// an operation out leaves the other operations' 429s, 410s, 408s and
/// storms, their records' disk faults and the latency of the syncs of
/// their records where they were.
pub struct ServerStreams {
    seed: u64,
    /// The server incarnation's stream name (`server-0-1`).
    name: String,
    /// Node names by address (the senders); `None`: senders are named by
    /// their address alone.
    topology: Option<Arc<overcast_sim::world::Topology>>,
    /// Requests received so far, by sender and operation.
    received: Mutex<BTreeMap<(SocketAddr, Option<usize>), u64>>,
}

impl ServerStreams {
    /// The draws of the server incarnation whose stream name is `name`, in
    /// the run with seed `seed` whose nodes `topology` names.
    pub fn new(
        seed: u64,
        name: impl Into<String>,
        topology: Option<Arc<overcast_sim::world::Topology>>,
    ) -> Arc<ServerStreams> {
        Arc::new(ServerStreams {
            seed,
            name: name.into(),
            topology,
            received: Mutex::default(),
        })
    }
}

impl ServerDraws for ServerStreams {
    fn request(&self, from: SocketAddr) -> u64 {
        let op = self
            .topology
            .as_ref()
            .and_then(|t| t.node_at(from))
            .and_then(|node| overcast_harness::ops::current_at(&node, from.port()));
        let n = {
            let mut received = self.received.lock().unwrap_or_else(|e| e.into_inner());
            let n = received.entry((from, op)).or_default();
            *n += 1;
            *n
        };
        // The name `FROM-OP-N` (OP `-` for none).
        let name = NameHash::new().addr(from).str("-");
        let name = match op {
            Some(op) => name.num(op as u64),
            None => name.str("-"),
        };
        name.str("-").num(n).finish()
    }

    fn stream(&self, what: &[u64]) -> Box<dyn RngCore + Send> {
        // The name `SERVER-draws-H`, H the FNV-1a of `what`'s little-endian bytes.
        let words = what
            .iter()
            .fold(NameHash::new(), |h, w| h.bytes(&w.to_le_bytes()));
        let name = NameHash::new()
            .str(&self.name)
            .str("-draws-")
            .hex16(words.finish());
        Box::new(name.stream(self.seed))
    }
}
