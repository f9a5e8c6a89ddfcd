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

#[cfg(test)]
mod tests {
    use super::*;
    use madsim::net::Endpoint;
    use madsim::runtime::{Handle, Runtime};
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Node `a` puts a copy on its way, due at 50 ms, and is paused at 10 ms
    /// until 500 ms. When does `b` get it (ms), with and without the hand-over?
    fn arrival_ms(hand_over: bool) -> u64 {
        let rt = Runtime::with_seed_and_config(1, madsim::Config::default());
        let network: Arc<OnceLock<NodeHandle>> = Arc::default();
        let copies = InFlight::new(network.clone());
        let b_addr: SocketAddr = "10.0.0.2:1".parse().unwrap();
        let got = Arc::new(AtomicU64::new(u64::MAX));
        let seen = got.clone();
        rt.create_node()
            .name("b")
            .ip(b_addr.ip())
            .init(move || {
                let seen = seen.clone();
                async move {
                    let ep = Endpoint::bind(b_addr).await.unwrap();
                    let mut buf = [0u8; 8];
                    if ep.recv_from(1, &mut buf).await.is_ok() {
                        let at = madsim::time::TimeHandle::current().elapsed();
                        seen.store(at.as_millis() as u64, Ordering::Relaxed);
                    }
                }
            })
            .build();
        let sender = copies.clone();
        let a = rt
            .create_node()
            .name("a")
            .ip("10.0.0.1".parse().unwrap())
            .init(move || {
                let sender = sender.clone();
                async move {
                    let ep = Arc::new(Endpoint::bind("10.0.0.1:1").await.unwrap());
                    sender.send_later(
                        Duration::from_millis(50),
                        Box::pin(async move {
                            let _ = ep.send_to(b_addr, 1, b"copy").await;
                        }),
                    );
                    std::future::pending::<()>().await;
                }
            })
            .build();
        let _ = network.set(rt.create_node().name("network").build());
        let a = a.id();
        rt.block_on(async move {
            madsim::time::sleep(Duration::from_millis(10)).await;
            Handle::current().pause(a);
            if hand_over {
                assert_eq!(copies.hand_over(), 1);
            }
            madsim::time::sleep(Duration::from_millis(490)).await;
            Handle::current().resume(a);
            madsim::time::sleep(Duration::from_millis(500)).await;
        });
        got.load(Ordering::Relaxed)
    }

    #[test]
    fn a_paused_node_does_not_hold_a_copy_already_on_its_way() {
        let on_time = arrival_ms(true);
        assert!((50..100).contains(&on_time), "arrived at {on_time} ms");
        // Held by the pause, it would arrive after the resume at 500 ms.
        let held = arrival_ms(false);
        assert!((500..1000).contains(&held), "arrived at {held} ms");
    }
}
