//! Datagram copies on their way: the network's latency, hold-backs and
//! duplicates are sent by a task of the sending node after their delay, and
//! a copy still pending when that node is paused is handed to the world's
//! network node, which sends it when it is due. A paused process does not
//! hold what it has already put on the wire, so every copy arrives within
//! [`crate::world::NodeEnv::max_in_flight`] of its send, the bound a
//! restarted server's quiet period relies on. (A crashed sender's pending
//! copies are gone with it, as before: its tasks are dropped.)

use madsim::runtime::NodeHandle;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// A send, not yet started.
pub type PendingSend = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One node's copies on their way, and the world's network node.
#[derive(Clone, Default)]
pub struct InFlight {
    pending: Arc<Mutex<Pending>>,
    network: Arc<OnceLock<NodeHandle>>,
}

#[derive(Default)]
struct Pending {
    next: u64,
    /// Copies by number: when each is due (simulated time since the start)
    /// and its send.
    copies: BTreeMap<u64, (Duration, PendingSend)>,
}

impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.lock().copies.len();
        write!(f, "InFlight({n} pending)")
    }
}

impl InFlight {
    /// A node's copies, handed on a pause to the world's `network` node
    /// (one for every node of the world, set once the node exists).
    pub(crate) fn new(network: Arc<OnceLock<NodeHandle>>) -> InFlight {
        InFlight {
            pending: Arc::default(),
            network,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends `send` after `delay`, from a task of the calling node, unless
    /// the node is paused before then (then the network node sends it).
    pub fn send_later(&self, delay: Duration, send: PendingSend) {
        let due = madsim::time::TimeHandle::current().elapsed() + delay;
        let n = {
            let mut p = self.lock();
            p.next += 1;
            let n = p.next;
            p.copies.insert(n, (due, send));
            n
        };
        let me = self.clone();
        madsim::task::spawn(async move {
            // Dropped with a crashed node: its copy goes with it.
            let guard = Forget(me, n);
            madsim::time::sleep(delay).await;
            let send = guard.0.lock().copies.remove(&n).map(|(_, s)| s);
            if let Some(send) = send {
                send.await;
            }
        });
    }

    /// The node is being paused: every copy still pending goes to the
    /// network node and is sent when due. Returns how many.
    pub fn hand_over(&self) -> usize {
        let copies = std::mem::take(&mut self.lock().copies);
        let Some(network) = self.network.get() else {
            // No network node (a world not built by `run_world`): keep them.
            self.lock().copies = copies;
            return 0;
        };
        let now = madsim::time::TimeHandle::current().elapsed();
        let n = copies.len();
        for (due, send) in copies.into_values() {
            let wait = due.saturating_sub(now);
            network.spawn(async move {
                madsim::time::sleep(wait).await;
                send.await;
            });
        }
        n
    }
}

/// Forgets a copy whose task is dropped before it was sent (a crash).
struct Forget(InFlight, u64);

impl Drop for Forget {
    fn drop(&mut self) {
        self.0.lock().copies.remove(&self.1);
    }
}
