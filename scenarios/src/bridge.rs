//! Adapters that hand the engine's clock and disk to the model through the
//! model's own traits (the model knows nothing of the engine).

use overcast_model::conditions::Millis;
use overcast_model::env::{Clock, LogDevice};
use overcast_sim::clock::NodeClock;
use overcast_sim::disk::SimDisk;

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
    fn sync(&self) {
        self.0.sync()
    }
    fn read_all(&self) -> Vec<u8> {
        self.0.read_all()
    }
    fn truncate(&self, len: usize) {
        self.0.truncate(len)
    }
}
