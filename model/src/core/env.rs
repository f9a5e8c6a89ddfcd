//! What the model is handed by whoever runs it: a clock, a log device, the
//! network's send faults and a server's random draws. The model never reads
//! a wall clock, touches a real disk or seeds a random stream of its own.

use crate::core::conditions::Millis;
use rand::RngCore;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A source of "now" for one node (its own, possibly skewed, clock).
pub trait Clock: Send + Sync {
    /// The node's current time in ms since the Unix epoch.
    fn now_ms(&self) -> Millis;
}

/// A sync the device reports as failed: what was appended since the last
/// sync may be partly or wholly lost, and a later sync does not bring it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncError;

/// An append-only log device: bytes are durable only after `sync`.
pub trait LogDevice: Send + Sync {
    /// Appends bytes (volatile until synced).
    fn append(&self, bytes: &[u8]);
    /// [`LogDevice::append`] of a record its writer names `identity` (the
    /// request that wrote it, [`ServerDraws::request`]): a device that draws
    /// faults may key them by it, so that a record keeps its faults when a
    /// run writes other records fewer (a shrunk one). By default, `append`.
    fn append_as(&self, identity: u64, bytes: &[u8]) {
        let _ = identity;
        self.append(bytes)
    }
    /// Makes everything appended so far durable, or fails.
    fn sync(&self) -> Result<(), SyncError>;
    /// Everything on the device.
    fn read_all(&self) -> Vec<u8>;
    /// Cuts the device to `len` bytes.
    fn truncate(&self, len: usize);
    /// Appends the bytes of a record recovery copies from another copy of
    /// the log (a repair: not a new record), under `identity` as
    /// [`LogDevice::append_as`]. By default, `append_as`.
    fn repair(&self, identity: u64, bytes: &[u8]) {
        self.append_as(identity, bytes)
    }
    /// Told once per recovery, on the log's first copy, how many records it
    /// kept (what the server redoes); not told when every copy is corrupt
    /// (the server refuses service: nothing is kept or dropped, the log is
    /// left as it is). By default, nothing.
    fn recovered(&self, kept: u64) {
        let _ = kept;
    }
}

/// What the network does to one datagram the model sends, beyond the least
/// latency: the delays after which copies of it are sent (none: it is lost).
pub trait SendFaults: Send + Sync {
    /// `[0]` for a plain send; a later first delay holds the datagram back
    /// (latency, reordering); a second delay sends a duplicate; empty: lost. `to` is the
    /// datagram's receiver, so that faults can be drawn link by link; `from`
    /// the socket it is sent from (its port tells a node's SDK clients apart).
    fn copies(&self, from: Option<std::net::SocketAddr>, to: std::net::SocketAddr)
        -> Vec<Duration>;
    /// Runs `send`, a copy's send, after `delay`. By default a task of the
    /// sending node does it (a crash or a pause of the node holds it too);
    /// a runner may keep a pause from holding what is already on the wire.
    fn send_later(
        &self,
        delay: Duration,
        send: std::pin::Pin<Box<dyn Future<Output = ()> + Send>>,
    ) {
        madsim::task::spawn(async move {
            madsim::time::sleep(delay).await;
            send.await;
        });
    }
}

/// A server's random draws, each from a fresh stream keyed by what it is
/// for: a request's fault points (storms, 429/449/503/410/408, their
/// sub-statuses and retry-afters, whether a 408 ran) by the request, a log
/// sync's latency by the records it makes durable, each named by the
/// request that wrote it. One stream for the whole server would make every
/// draw depend on how many requests came before it, so a run that sends
/// one request fewer (the shrinker's history pass) would move every later
/// request's fault, on every key.
pub trait ServerDraws: Send + Sync {
    /// The identity of the request just received from `from`: the runner
    /// knows what it is from its sender (e.g. the operation that sender is
    /// in and the request's number there), so that it stays the same when
    /// other requests are left out.
    fn request(&self, from: std::net::SocketAddr) -> u64;
    /// A fresh stream for the draws about `what` (a kind of draw, then the
    /// identities of the requests it is about).
    fn stream(&self, what: &[u64]) -> Box<dyn RngCore + Send>;
}

/// The network's send faults as a node's sends see them (none by default).
#[derive(Clone, Default)]
pub struct SendPolicy(pub Option<Arc<dyn SendFaults>>);

impl SendPolicy {
    /// The delays of the copies of one datagram from `from` to `to`.
    pub fn copies(
        &self,
        from: Option<std::net::SocketAddr>,
        to: std::net::SocketAddr,
    ) -> Vec<Duration> {
        match &self.0 {
            Some(f) => f.copies(from, to),
            None => vec![Duration::ZERO],
        }
    }
}

impl SendPolicy {
    /// Runs a copy's `send` after `delay` ([`SendFaults::send_later`]).
    pub fn send_later(&self, delay: Duration, send: impl Future<Output = ()> + Send + 'static) {
        match &self.0 {
            Some(f) => f.send_later(delay, Box::pin(send)),
            None => {
                madsim::task::spawn(async move {
                    madsim::time::sleep(delay).await;
                    send.await;
                });
            }
        }
    }
}

impl std::fmt::Debug for SendPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "SendPolicy(faults)"
        } else {
            "SendPolicy(none)"
        })
    }
}

/// Which servers listen, as a runner knows it: TCP's view of a peer. A server that
/// has bound its address says so; a runner that kills its process forgets it until it
/// says so again. A client's connect to an address nothing listens at is refused at
/// once (the peer's host answers a reset), so the request never leaves the client.
pub trait Listeners: Send + Sync {
    /// The server at `addr` listens from now on (it has bound its endpoint).
    fn listening(&self, addr: std::net::SocketAddr);
    /// Whether a connect to `to` is refused now: nothing listens there.
    fn refuses(&self, to: std::net::SocketAddr) -> bool;
}

/// The runner's [`Listeners`], if it models refused connects (none by default:
/// every connect succeeds, and a request to a dead server is sent and lost).
#[derive(Clone, Default)]
pub struct ListenTable(pub Option<Arc<dyn Listeners>>);

impl ListenTable {
    /// Tells the runner the server at `addr` listens from now on.
    pub fn listening(&self, addr: std::net::SocketAddr) {
        if let Some(l) = &self.0 {
            l.listening(addr);
        }
    }

    /// Whether a connect to `to` is refused now (never without a runner's table).
    pub fn refuses(&self, to: std::net::SocketAddr) -> bool {
        self.0.as_ref().is_some_and(|l| l.refuses(to))
    }
}

impl std::fmt::Debug for ListenTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ListenTable(runner)"
        } else {
            "ListenTable(none)"
        })
    }
}

/// Simulated ns since the start of the run.
pub fn sim_now_ns() -> u64 {
    madsim::time::TimeHandle::current().elapsed().as_nanos() as u64
}
