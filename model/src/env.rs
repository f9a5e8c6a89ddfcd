//! What the model is handed by whoever runs it: a clock and a log device.
//! The model never reads a wall clock or touches a real disk.

use crate::conditions::Millis;

/// A source of "now" for one node (its own, possibly skewed, clock).
pub trait Clock: Send + Sync {
    /// The node's current time in ms since the Unix epoch.
    fn now_ms(&self) -> Millis;
}

/// An append-only log device: bytes are durable only after `sync`.
pub trait LogDevice: Send + Sync {
    /// Appends bytes (volatile until synced).
    fn append(&self, bytes: &[u8]);
    /// Makes everything appended so far durable.
    fn sync(&self);
    /// Everything on the device.
    fn read_all(&self) -> Vec<u8>;
    /// Cuts the device to `len` bytes.
    fn truncate(&self, len: usize);
}
