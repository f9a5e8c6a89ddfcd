//! Per-node clocks on top of madsim's single global clock.
//!
//! madsim has one clock per runtime; real machines disagree. Each node here
//! reads "now" through its own [`NodeClock`]: the global simulated time mapped
//! through an offset, a drift in parts per million (which may change at given
//! simulated times: a rate change bends the line, it never jumps), and steps
//! forward or back at given simulated times. Every model component reads time
//! through this.

use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
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
    /// Rate changes: from true time `at_ms` on the clock drifts at `drift_ppm`
    /// instead (`drift_ppm` holds from the start until the first change). The
    /// reading stays continuous: only its slope changes (a clock-rate fault,
    /// e.g. quartz warming up; no jump, unlike a step). Sorted by time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate_changes: Vec<(u64, i64)>,
}

impl ClockSkew {
    /// The node's reading, in ms since the Unix epoch, at true simulated time `elapsed`.
    pub fn read_ms(&self, elapsed: Duration) -> u64 {
        let true_ms = elapsed.as_millis() as i64;
        let drift = self.drift_ppm_ms(true_ms) / 1_000_000;
        let stepped: i64 = self
            .steps
            .iter()
            .filter(|(at, _)| (*at as i64) <= true_ms)
            .map(|(_, d)| *d)
            .sum();
        let ms = EPOCH_MS as i64 + true_ms + self.offset_ms + drift as i64 + stepped;
        ms.max(0) as u64
    }

    /// The drift accumulated by true time `true_ms`, in ppm·ms: the integral
    /// of the rate, piecewise constant between the rate changes.
    fn drift_ppm_ms(&self, true_ms: i64) -> i128 {
        let mut total: i128 = 0;
        let (mut from, mut rate) = (0i64, self.drift_ppm);
        for &(at, ppm) in &self.rate_changes {
            let at = at as i64;
            if at > true_ms {
                break;
            }
            total += i128::from(at - from) * i128::from(rate);
            (from, rate) = (at.max(from), ppm);
        }
        total + i128::from(true_ms - from) * i128::from(rate)
    }

    /// The rate (ppm) the clock drifts at, at true time `true_ms`.
    pub fn drift_at(&self, true_ms: u64) -> i64 {
        self.rate_changes
            .iter()
            .take_while(|(at, _)| *at <= true_ms)
            .last()
            .map_or(self.drift_ppm, |(_, ppm)| *ppm)
    }
}

impl ClockSkew {
    /// Holds the rate at `drift_ppm` from true time `at_ms` for `for_ms`,
    /// then returns to the rate the schedule gives at the end; scheduled
    /// changes inside the span are dropped. The reading stays continuous.
    pub fn hold_rate(&mut self, at_ms: u64, for_ms: u64, drift_ppm: i64) {
        let end = at_ms.saturating_add(for_ms);
        let after = self.drift_at(end);
        self.rate_changes.retain(|(at, _)| *at < at_ms || *at > end);
        self.rate_changes.push((at_ms, drift_ppm));
        self.rate_changes.push((end, after));
        self.rate_changes.sort_by_key(|(at, _)| *at);
    }
}

/// A node's clock: what the model is handed as its source of "now". Every
/// incarnation of a node shares it (and the world, which may change its
/// rate during a run: [`crate::faults::Fault::ClockRate`]).
#[derive(Clone, Debug)]
pub struct NodeClock {
    skew: Arc<Mutex<ClockSkew>>,
}

impl NodeClock {
    /// A clock with the given skew.
    pub fn new(skew: ClockSkew) -> Self {
        NodeClock {
            skew: Arc::new(Mutex::new(skew)),
        }
    }

    /// Changes the rate from true time `at_ms` on for `for_ms` (see
    /// [`ClockSkew::hold_rate`]).
    pub fn hold_rate(&self, at_ms: u64, for_ms: u64, drift_ppm: i64) {
        self.lock().hold_rate(at_ms, for_ms, drift_ppm);
    }

    /// The skew as it stands (with the rate changes made so far).
    pub fn skew(&self) -> ClockSkew {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ClockSkew> {
        self.skew.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The node's current reading in ms since the Unix epoch. Outside a
    /// simulation (no madsim runtime) it reads as the start of the simulation.
    pub fn now_ms(&self) -> u64 {
        let elapsed = madsim::time::TimeHandle::try_current()
            .map(|t| t.elapsed())
            .unwrap_or_default();
        self.lock().read_ms(elapsed)
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
            rate_changes: Vec::new(),
        };
        let at = |ms| skew.read_ms(Duration::from_millis(ms)) - EPOCH_MS;
        assert_eq!(at(1_000_000) as i64, 1_000_000 - 500 + 1_000 + 6_000);
        assert_eq!(at(1_000), 1_000 - 500 + 1);
        assert_eq!(at(2_000), 2_000 - 500 + 2 + 10_000);
        assert_eq!(at(3_000), 3_000 - 500 + 3 + 6_000);
    }

    #[test]
    fn a_rate_change_bends_the_reading_without_a_jump() {
        // +50,000 ppm for 10 s, then -40,000 ppm from 10 s, then +0 from 20 s.
        let skew = ClockSkew {
            offset_ms: 0,
            drift_ppm: 50_000,
            steps: Vec::new(),
            rate_changes: vec![(10_000, -40_000), (20_000, 0)],
        };
        let at = |ms| skew.read_ms(Duration::from_millis(ms)) as i64 - EPOCH_MS as i64;
        assert_eq!(at(5_000), 5_250);
        assert_eq!(at(10_000), 10_500);
        assert_eq!(at(10_001), 10_500, "continuous: +500 ms then slower");
        assert_eq!(at(15_000), 15_300);
        assert_eq!(at(20_000), 20_100);
        assert_eq!(at(60_000), 60_100, "no drift after the last change");
        assert_eq!(skew.drift_at(9_999), 50_000);
        assert_eq!(skew.drift_at(10_000), -40_000);
        assert_eq!(skew.drift_at(25_000), 0);
        // Monotonic: a rate within ±100% never makes the reading go back.
        let mut last = 0;
        for ms in (0..30_000).step_by(7) {
            assert!(at(ms) >= last);
            last = at(ms);
        }
        // Held for a span: the schedule resumes after it, without a jump.
        let mut held = skew.clone();
        held.hold_rate(5_000, 10_000, -50_000);
        assert_eq!(
            held.rate_changes,
            vec![(5_000, -50_000), (15_000, -40_000), (20_000, 0)]
        );
        let h = |ms| held.read_ms(Duration::from_millis(ms)) as i64 - EPOCH_MS as i64;
        assert_eq!(h(5_000), 5_250);
        assert_eq!(h(15_000), 15_250 - 500);
        assert_eq!(h(20_000), 20_000 + 250 - 500 - 200);
        // Saved files without the field load unchanged.
        let old: ClockSkew = serde_json::from_str(r#"{"offset_ms":1,"drift_ppm":2}"#).unwrap();
        assert!(old.rate_changes.is_empty());
    }

    #[test]
    fn a_perfect_clock_reads_true_time() {
        assert_eq!(
            ClockSkew::default().read_ms(Duration::from_secs(5)),
            EPOCH_MS + 5_000
        );
    }
}
