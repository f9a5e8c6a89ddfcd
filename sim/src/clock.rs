//! Per-node clocks on top of madsim's single global clock.
//!
//! madsim has one clock per runtime; real machines disagree. Each node here
//! reads "now" through its own [`NodeClock`]: the global simulated time mapped
//! through an offset, a drift in parts per million, and steps forward or back
//! at given simulated times. Every model component reads time through this.

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// Wall-clock milliseconds the simulation starts at (2026-01-01T00:00:00Z), so
/// dates look like dates and stepping back never goes below zero.
pub const EPOCH_MS: u64 = 1_767_225_600_000;

/// How one node's clock departs from true (global simulated) time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSkew {
    /// Constant offset from true time, in milliseconds (may be negative).
    #[serde(default)]
    pub offset_ms: i64,
    /// Rate error in parts per million: +100 runs 100 µs fast per second.
    #[serde(default)]
    pub drift_ppm: i64,
    /// Steps applied at given true times: `(at_ms, delta_ms)`; negative steps go back.
    #[serde(default)]
    pub steps: Vec<(u64, i64)>,
}

impl ClockSkew {
    /// The node's reading, in ms since the Unix epoch, at true simulated time `elapsed`.
    pub fn read_ms(&self, elapsed: Duration) -> u64 {
        let true_ms = elapsed.as_millis() as i64;
        let drift = true_ms.saturating_mul(self.drift_ppm) / 1_000_000;
        let stepped: i64 = self
            .steps
            .iter()
            .filter(|(at, _)| (*at as i64) <= true_ms)
            .map(|(_, d)| *d)
            .sum();
        let ms = EPOCH_MS as i64 + true_ms + self.offset_ms + drift + stepped;
        ms.max(0) as u64
    }
}

/// A node's clock: what the model is handed as its source of "now".
#[derive(Clone, Debug)]
pub struct NodeClock {
    skew: Arc<ClockSkew>,
}

impl NodeClock {
    /// A clock with the given skew.
    pub fn new(skew: ClockSkew) -> Self {
        NodeClock {
            skew: Arc::new(skew),
        }
    }

    /// The node's current reading in ms since the Unix epoch. Outside a
    /// simulation (no madsim runtime) it reads as the start of the simulation.
    pub fn now_ms(&self) -> u64 {
        let elapsed = madsim::time::TimeHandle::try_current()
            .map(|t| t.elapsed())
            .unwrap_or_default();
        self.skew.read_ms(elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_drift_and_steps_add_up() {
        let skew = ClockSkew {
            offset_ms: -500,
            drift_ppm: 1000,
            steps: vec![(2_000, 10_000), (3_000, -4_000)],
        };
        let at = |ms| skew.read_ms(Duration::from_millis(ms)) - EPOCH_MS;
        assert_eq!(at(1_000_000) as i64, 1_000_000 - 500 + 1_000 + 6_000);
        assert_eq!(at(1_000), 1_000 - 500 + 1);
        assert_eq!(at(2_000), 2_000 - 500 + 2 + 10_000);
        assert_eq!(at(3_000), 3_000 - 500 + 3 + 6_000);
    }

    #[test]
    fn a_perfect_clock_reads_true_time() {
        assert_eq!(
            ClockSkew::default().read_ms(Duration::from_secs(5)),
            EPOCH_MS + 5_000
        );
    }
}
