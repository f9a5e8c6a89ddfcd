//! Adapters that hand the engine's clock, disk and network faults to the
//! model through the model's own traits (the model knows nothing of the engine).

use overcast_model::conditions::Millis;
use overcast_model::env::{Clock, LogDevice, SendFaults, SendPolicy, SyncError};
use overcast_sim::clock::NodeClock;
use overcast_sim::disk::SimDisk;
use overcast_sim::faults::NetworkFaults;
use overcast_sim::world::NodeEnv;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A node's simulated clock as the model's [`Clock`].
pub struct ClockAdapter(pub NodeClock);

impl Clock for ClockAdapter {
    fn now_ms(&self) -> Millis {
        self.0.now_ms()
    }
}

/// A node's simulated disk as the model's [`LogDevice`].
pub struct DiskAdapter(pub SimDisk);

impl LogDevice for DiskAdapter {
    fn append(&self, bytes: &[u8]) {
        self.0.append(bytes)
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

/// Counts of injected network faults (`duplicate`, `reorder`), shared by
/// every node's [`NetworkAdapter`] of one run.
pub type NetworkCounts = Arc<Mutex<BTreeMap<String, u64>>>;

/// The plan's network faults as the model's [`SendFaults`], drawn from one
/// node incarnation's own stream.
pub struct NetworkAdapter {
    faults: NetworkFaults,
    rng: Mutex<rand_chacha::ChaCha8Rng>,
    counts: NetworkCounts,
}

impl NetworkAdapter {
    /// The send policy of the node `env` describes; counts go to `counts`.
    /// No faults in the plan: no policy (nothing drawn).
    pub fn policy(env: &NodeEnv, counts: &NetworkCounts) -> SendPolicy {
        if env.network.duplicate <= 0.0 && env.network.reorder <= 0.0 {
            return SendPolicy::default();
        }
        SendPolicy(Some(Arc::new(NetworkAdapter {
            faults: env.network.clone(),
            rng: Mutex::new(env.network_rng()),
            counts: counts.clone(),
        })))
    }
}

impl SendFaults for NetworkAdapter {
    fn copies(&self) -> Vec<Duration> {
        let copies = {
            let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
            self.faults.copies(&mut *rng)
        };
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if !copies[0].is_zero() {
            *counts.entry("reorder".into()).or_default() += 1;
        }
        if copies.len() > 1 {
            *counts.entry("duplicate".into()).or_default() += 1;
        }
        copies
    }
}
