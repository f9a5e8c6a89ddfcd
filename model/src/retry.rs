//! The client SDK retry policy (SPEC §4.1–§4.3), as a pure state machine: one
//! [`RetryState`] per logical operation is told the outcome of each attempt and answers
//! "retry after this delay" or "done, with this outcome". It never sleeps, reads a clock or
//! draws randomness: the caller waits, and hands in the jitter.
//!
//! | Outcome | Decision |
//! |---|---|
//! | 2xx, 304, 400, 401, 404, 409, 412, 413, 500, and any status not listed below | `Done(Response)` |
//! | 429 | retry after `retry_after` (5 s if 0 or missing) while the 429 budget lasts (§4.2), then `Done(Response{429})` |
//! | 449 | first retry immediate, then 10 ms doubling + up to 5 ms salt, capped at 1 s, while the cumulative 449 delay stays within `retry_with_window`; then `Done(Response{449})` |
//! | 503 | immediate retry, up to `max_service_unavailable_retries`; then `Done(Response{503})` |
//! | 410 | first retry immediate, then 1 s doubling to a 15 s cap, while the cumulative 410 delay stays within `gone_window`; then `Done(Response{503})` |
//! | 408 / `Timeout`, read | retry after `read_timeout_retry_delay`, up to `max_read_timeout_retries`; then `Done(TimedOut)` after a transport timeout, `Done(Response{408})` after a server 408 |
//! | 408 / `Timeout`, write | `Done(Unknown)`, never retried (R1) — unless the seeded bug `retry_write_after_timeout` is on: then retried like a read, and `Done(Unknown)` when the retries run out |
//!
//! Each retryable status has its own budget (counter and cumulative delay); they do not
//! share one window. The windows count the delays this policy inserts, not the time the
//! attempts themselves took (the policy has no clock).

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Whether the operation is idempotent for retry purposes (SPEC §4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum OpKind {
    /// A read: retried after a timeout or 408.
    Read,
    /// A write: not idempotent; its outcome is unknown after a timeout or 408, never retried.
    Write,
}

/// The retry budgets. `Default` gives the .NET v3 SDK defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryOptions {
    /// Maximum retries after 429. Default **9** (up to 10 attempts in all):
    /// `MaxRetryAttemptsOnRateLimitedRequests`, SPEC §4.2. 0 disables the retry.
    pub max_rate_limited_retries: u32,
    /// Maximum cumulative delay inserted for 429s. Default **30 s**:
    /// `MaxRetryWaitTimeOnRateLimitedRequests`, SPEC §4.2.
    pub max_rate_limited_wait: Duration,
    /// How long the client waits for an answer before an attempt is a transport timeout.
    /// Default **6 s**: `CosmosClientOptions.RequestTimeout`, SPEC §4.3. (Used by the client
    /// that runs the attempts; this state machine only sees [`AttemptOutcome::Timeout`].)
    pub request_timeout: Duration,
    /// Maximum retries of a read after a timeout or 408. Default **3** (model choice: the
    /// SDK retries read timeouts, SPEC §4.1 row 408, without a documented count).
    pub max_read_timeout_retries: u32,
    /// Delay before retrying a timed-out read. Default **1 s** (model choice, the 1 s
    /// spacing of the SDK's read failover retries, SPEC §4.1 `HttpRequestException` row).
    pub read_timeout_retry_delay: Duration,
    /// Maximum retries after 503. Default **1**: `MaxServiceUnavailableRetryCount`,
    /// SPEC §4.1 row 503.
    pub max_service_unavailable_retries: u32,
    /// Window for 410 retries, after which the caller sees 503. Default **30 s**:
    /// SPEC §4.1 row 410 (`GoneAndRetryWithRetryPolicy`).
    pub gone_window: Duration,
    /// Window for 449 (`RetryWith`) retries. Default **30 s**: SPEC §4.1 row 449.
    pub retry_with_window: Duration,
}

impl Default for RetryOptions {
    fn default() -> Self {
        RetryOptions {
            max_rate_limited_retries: 9,
            max_rate_limited_wait: Duration::from_secs(30),
            request_timeout: Duration::from_secs(6),
            max_read_timeout_retries: 3,
            read_timeout_retry_delay: Duration::from_secs(1),
            max_service_unavailable_retries: 1,
            gone_window: Duration::from_secs(30),
            retry_with_window: Duration::from_secs(30),
        }
    }
}

/// Default 429 delay when `x-ms-retry-after-ms` is 0 or missing: 5 s
/// (`DefaultRetryInSeconds`, SPEC §4.2).
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(5);
/// First non-immediate 449 backoff: 10 ms, doubling (SPEC §4.1 row 449).
pub const RETRY_WITH_INITIAL_BACKOFF: Duration = Duration::from_millis(10);
/// Maximum random salt added to a 449 backoff: 5 ms (SPEC §4.1 row 449).
pub const RETRY_WITH_SALT: Duration = Duration::from_millis(5);
/// Cap of a 449 backoff: 1 s (SPEC §4.1 row 449).
pub const RETRY_WITH_MAX_BACKOFF: Duration = Duration::from_secs(1);
/// First non-immediate 410 backoff: 1 s, doubling (SPEC §4.1 row 410).
pub const GONE_INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// Cap of a 410 backoff: 15 s (SPEC §4.1 row 410).
pub const GONE_MAX_BACKOFF: Duration = Duration::from_secs(15);

/// What one attempt came back with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AttemptOutcome {
    /// The server answered.
    Response {
        /// The HTTP status.
        status: u16,
        /// `x-ms-retry-after-ms`, if sent (429).
        retry_after: Option<Duration>,
    },
    /// Transport: no answer within `request_timeout`.
    Timeout,
}

impl AttemptOutcome {
    /// A response with a status and no retry-after.
    pub fn status(status: u16) -> AttemptOutcome {
        AttemptOutcome::Response {
            status,
            retry_after: None,
        }
    }
}

/// What the caller does next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Decision {
    /// Send the request again after waiting `after`.
    Retry {
        /// The delay before the next attempt.
        after: Duration,
    },
    /// Stop and surface this outcome.
    Done(FinalOutcome),
}

/// What the caller of the SDK sees in the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FinalOutcome {
    /// The last server status (R3), or 503 after the 410 window ran out.
    Response {
        /// The HTTP status.
        status: u16,
    },
    /// A write that timed out or got 408: its outcome is unknown (it may or may not have
    /// committed). Never retried without the bug.
    Unknown,
    /// A read whose timeout retries ran out after a transport timeout.
    TimedOut,
}

/// The retry state of one logical operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryState {
    kind: OpKind,
    options: RetryOptions,
    retry_write_after_timeout_bug: bool,
    attempts: u32,
    cumulative_delay: Duration,
    rate_limited_retries: u32,
    rate_limited_delay: Duration,
    retry_with_retries: u32,
    retry_with_delay: Duration,
    gone_retries: u32,
    gone_delay: Duration,
    service_unavailable_retries: u32,
    timeout_retries: u32,
    finished: Option<FinalOutcome>,
}

impl RetryState {
    /// A fresh state for one operation. `retry_write_after_timeout_bug` is the seeded bug
    /// `retry_write_after_timeout`: writes are retried after a timeout or 408 like reads.
    pub fn new(kind: OpKind, options: RetryOptions, retry_write_after_timeout_bug: bool) -> Self {
        RetryState {
            kind,
            options,
            retry_write_after_timeout_bug,
            attempts: 0,
            cumulative_delay: Duration::ZERO,
            rate_limited_retries: 0,
            rate_limited_delay: Duration::ZERO,
            retry_with_retries: 0,
            retry_with_delay: Duration::ZERO,
            gone_retries: 0,
            gone_delay: Duration::ZERO,
            service_unavailable_retries: 0,
            timeout_retries: 0,
            finished: None,
        }
    }

    /// Records the outcome of one attempt and decides what to do next.
    ///
    /// `jitter` is a random number in [0, 1) handed in by the caller (the client draws it
    /// from the seeded RNG); it only salts 449 backoffs. Values outside [0, 1) (or NaN) are
    /// clamped. Once the state has answered `Done`, further calls answer the same `Done`
    /// without counting an attempt.
    pub fn on_attempt(&mut self, outcome: &AttemptOutcome, jitter: f64) -> Decision {
        if let Some(done) = &self.finished {
            return Decision::Done(done.clone());
        }
        self.attempts += 1;
        let decision = self.decide(outcome, jitter);
        match &decision {
            Decision::Retry { after } => self.cumulative_delay += *after,
            Decision::Done(outcome) => self.finished = Some(outcome.clone()),
        }
        decision
    }

    fn decide(&mut self, outcome: &AttemptOutcome, jitter: f64) -> Decision {
        let (status, retry_after) = match outcome {
            AttemptOutcome::Timeout => return self.on_timeout(None),
            AttemptOutcome::Response {
                status,
                retry_after,
            } => (*status, *retry_after),
        };
        let done = Decision::Done(FinalOutcome::Response { status });
        match status {
            408 => self.on_timeout(Some(408)),
            429 => {
                let delay = match retry_after {
                    Some(d) if !d.is_zero() => d,
                    _ => DEFAULT_RETRY_AFTER,
                };
                let max_wait = self.options.max_rate_limited_wait;
                if self.rate_limited_retries < self.options.max_rate_limited_retries
                    && delay < max_wait
                    && self.rate_limited_delay + delay <= max_wait
                {
                    self.rate_limited_retries += 1;
                    self.rate_limited_delay += delay;
                    Decision::Retry { after: delay }
                } else {
                    done
                }
            }
            449 => {
                let delay = if self.retry_with_retries == 0 {
                    Duration::ZERO
                } else {
                    let base = doubled(RETRY_WITH_INITIAL_BACKOFF, self.retry_with_retries - 1);
                    (base + salt(jitter)).min(RETRY_WITH_MAX_BACKOFF)
                };
                if self.retry_with_delay + delay <= self.options.retry_with_window {
                    self.retry_with_retries += 1;
                    self.retry_with_delay += delay;
                    Decision::Retry { after: delay }
                } else {
                    done
                }
            }
            410 => {
                let delay = if self.gone_retries == 0 {
                    Duration::ZERO
                } else {
                    doubled(GONE_INITIAL_BACKOFF, self.gone_retries - 1).min(GONE_MAX_BACKOFF)
                };
                if self.gone_delay + delay <= self.options.gone_window {
                    self.gone_retries += 1;
                    self.gone_delay += delay;
                    Decision::Retry { after: delay }
                } else {
                    Decision::Done(FinalOutcome::Response { status: 503 })
                }
            }
            503 => {
                if self.service_unavailable_retries < self.options.max_service_unavailable_retries {
                    self.service_unavailable_retries += 1;
                    Decision::Retry {
                        after: Duration::ZERO,
                    }
                } else {
                    done
                }
            }
            _ => done,
        }
    }

    /// A transport timeout (`status` None) or a server 408.
    fn on_timeout(&mut self, status: Option<u16>) -> Decision {
        let retryable = self.kind == OpKind::Read || self.retry_write_after_timeout_bug;
        if retryable && self.timeout_retries < self.options.max_read_timeout_retries {
            self.timeout_retries += 1;
            return Decision::Retry {
                after: self.options.read_timeout_retry_delay,
            };
        }
        Decision::Done(match (self.kind, status) {
            (OpKind::Write, _) => FinalOutcome::Unknown,
            (OpKind::Read, None) => FinalOutcome::TimedOut,
            (OpKind::Read, Some(status)) => FinalOutcome::Response { status },
        })
    }

    /// Attempts made so far (outcomes passed to [`RetryState::on_attempt`] before `Done`).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Sum of all the delays this state has asked for.
    pub fn cumulative_delay(&self) -> Duration {
        self.cumulative_delay
    }

    /// Sum of the delays inserted after 429s (R2: ≤ `max_rate_limited_wait`).
    pub fn rate_limited_delay(&self) -> Duration {
        self.rate_limited_delay
    }

    /// The kind of operation.
    pub fn kind(&self) -> OpKind {
        self.kind
    }

    /// The options in force.
    pub fn options(&self) -> &RetryOptions {
        &self.options
    }

    /// The final outcome, once decided.
    pub fn finished(&self) -> Option<&FinalOutcome> {
        self.finished.as_ref()
    }
}

/// `base * 2^n`, saturating.
fn doubled(base: Duration, n: u32) -> Duration {
    base.saturating_mul(1u32.checked_shl(n).unwrap_or(u32::MAX))
}

/// The 449 salt: `jitter * 5 ms`, with `jitter` clamped to [0, 1).
fn salt(jitter: f64) -> Duration {
    let j = if jitter.is_nan() {
        0.0
    } else {
        jitter.clamp(0.0, 1.0)
    };
    let max = RETRY_WITH_SALT.as_nanos() as u64;
    Duration::from_nanos(((j * max as f64) as u64).min(max - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn state(kind: OpKind) -> RetryState {
        RetryState::new(kind, RetryOptions::default(), false)
    }

    fn throttled(retry_after: Option<Duration>) -> AttemptOutcome {
        AttemptOutcome::Response {
            status: 429,
            retry_after,
        }
    }

    fn done(status: u16) -> Decision {
        Decision::Done(FinalOutcome::Response { status })
    }

    fn retry(after: Duration) -> Decision {
        Decision::Retry { after }
    }

    /// Feeds `outcome` until Done; returns the delays asked for and the final decision.
    fn run_until_done(s: &mut RetryState, outcome: &AttemptOutcome) -> (Vec<Duration>, Decision) {
        let mut delays = Vec::new();
        for _ in 0..1_000 {
            match s.on_attempt(outcome, 0.5) {
                Decision::Retry { after } => delays.push(after),
                d @ Decision::Done(_) => return (delays, d),
            }
        }
        panic!("no Done after 1000 attempts");
    }

    #[test]
    fn defaults_match_the_sdk() {
        let o = RetryOptions::default();
        assert_eq!(o.max_rate_limited_retries, 9);
        assert_eq!(o.max_rate_limited_wait, secs(30));
        assert_eq!(o.request_timeout, secs(6));
        assert_eq!(o.max_read_timeout_retries, 3);
        assert_eq!(o.read_timeout_retry_delay, secs(1));
        assert_eq!(o.max_service_unavailable_retries, 1);
        assert_eq!(o.gone_window, secs(30));
        assert_eq!(o.retry_with_window, secs(30));
    }

    #[test]
    fn final_statuses_are_not_retried() {
        for kind in [OpKind::Read, OpKind::Write] {
            for status in [
                200, 201, 202, 204, 304, 400, 401, 403, 404, 409, 412, 413, 500, 502,
            ] {
                let mut s = state(kind);
                assert_eq!(
                    s.on_attempt(&AttemptOutcome::status(status), 0.0),
                    done(status)
                );
                assert_eq!(s.attempts(), 1);
                assert_eq!(s.cumulative_delay(), Duration::ZERO);
            }
        }
    }

    #[test]
    fn done_is_sticky() {
        let mut s = state(OpKind::Read);
        assert_eq!(s.on_attempt(&AttemptOutcome::status(404), 0.0), done(404));
        assert_eq!(s.on_attempt(&throttled(None), 0.0), done(404));
        assert_eq!(s.attempts(), 1);
        assert_eq!(s.finished(), Some(&FinalOutcome::Response { status: 404 }));
    }

    // ---- 429 (SPEC §4.2, R2, R3) ------------------------------------------------------

    #[test]
    fn throttle_delay_is_retry_after_or_five_seconds() {
        let mut s = state(OpKind::Write);
        assert_eq!(s.on_attempt(&throttled(Some(ms(120))), 0.3), retry(ms(120)));
        assert_eq!(s.on_attempt(&throttled(None), 0.3), retry(secs(5)));
        assert_eq!(
            s.on_attempt(&throttled(Some(Duration::ZERO)), 0.3),
            retry(secs(5))
        );
        assert_eq!(s.on_attempt(&AttemptOutcome::status(201), 0.3), done(201));
        assert_eq!(s.attempts(), 4);
        assert_eq!(s.cumulative_delay(), ms(10_120));
        assert_eq!(s.rate_limited_delay(), ms(10_120));
    }

    #[test]
    fn r2_at_most_ten_attempts_then_the_last_429() {
        for kind in [OpKind::Read, OpKind::Write] {
            let mut s = state(kind);
            let (delays, last) = run_until_done(&mut s, &throttled(Some(ms(100))));
            assert_eq!(delays, vec![ms(100); 9]);
            assert_eq!(last, done(429));
            assert_eq!(s.attempts(), 10);
        }
    }

    #[test]
    fn r2_cumulative_429_wait_at_most_thirty_seconds() {
        // default 5 s: 6 retries make 30 s (≤ 30 s allowed), the 7th would make 35 s
        let mut s = state(OpKind::Read);
        let (delays, last) = run_until_done(&mut s, &throttled(None));
        assert_eq!(delays, vec![secs(5); 6]);
        assert_eq!(last, done(429));
        assert_eq!(s.attempts(), 7);
        assert_eq!(s.cumulative_delay(), secs(30));
        // 29 s once, then 29 + 29 > 30
        let mut s = state(OpKind::Read);
        let (delays, last) = run_until_done(&mut s, &throttled(Some(secs(29))));
        assert_eq!((delays, last), (vec![secs(29)], done(429)));
    }

    #[test]
    fn throttle_delay_not_below_max_wait() {
        // delay < maxWait is required: exactly 30 s is not retried
        let mut s = state(OpKind::Read);
        assert_eq!(s.on_attempt(&throttled(Some(secs(30))), 0.0), done(429));
        let mut s = state(OpKind::Read);
        assert_eq!(s.on_attempt(&throttled(Some(secs(31))), 0.0), done(429));
        assert_eq!(s.cumulative_delay(), Duration::ZERO);
    }

    #[test]
    fn zero_max_retries_disables_throttle_retry() {
        let options = RetryOptions {
            max_rate_limited_retries: 0,
            ..RetryOptions::default()
        };
        let mut s = RetryState::new(OpKind::Read, options, false);
        assert_eq!(s.on_attempt(&throttled(Some(ms(1))), 0.0), done(429));
    }

    // ---- 449 ----------------------------------------------------------------------------

    #[test]
    fn retry_with_backoff_doubles_with_salt_and_caps_at_one_second() {
        let mut s = state(OpKind::Write);
        let o = AttemptOutcome::status(449);
        assert_eq!(s.on_attempt(&o, 0.9), retry(Duration::ZERO));
        assert_eq!(s.on_attempt(&o, 0.0), retry(ms(10)));
        assert_eq!(
            s.on_attempt(&o, 0.5),
            retry(ms(20) + Duration::from_micros(2_500))
        );
        assert_eq!(s.on_attempt(&o, 0.0), retry(ms(40)));
        let mut last = Duration::ZERO;
        loop {
            match s.on_attempt(&o, 0.999_999) {
                Decision::Retry { after } => {
                    assert!(after <= secs(1));
                    last = after;
                }
                d => {
                    assert_eq!(d, done(449));
                    break;
                }
            }
        }
        assert_eq!(last, secs(1));
        assert!(s.cumulative_delay() <= secs(30));
        assert!(s.cumulative_delay() > secs(29));
    }

    #[test]
    fn retry_with_salt_is_below_five_ms_and_jitter_is_clamped() {
        for jitter in [0.0, 0.25, 0.999_999_999, 1.0, 7.0, -3.0, f64::NAN] {
            let mut s = state(OpKind::Write);
            let o = AttemptOutcome::status(449);
            s.on_attempt(&o, jitter);
            let Decision::Retry { after } = s.on_attempt(&o, jitter) else {
                panic!("449 not retried");
            };
            assert!(after >= ms(10) && after < ms(15), "{jitter}: {after:?}");
        }
    }

    // ---- 503 ----------------------------------------------------------------------------

    #[test]
    fn service_unavailable_retried_once() {
        let mut s = state(OpKind::Write);
        let o = AttemptOutcome::status(503);
        assert_eq!(s.on_attempt(&o, 0.0), retry(Duration::ZERO));
        assert_eq!(s.on_attempt(&o, 0.0), done(503));
        assert_eq!(s.attempts(), 2);
        let mut s = state(OpKind::Read);
        assert_eq!(s.on_attempt(&o, 0.0), retry(Duration::ZERO));
        assert_eq!(s.on_attempt(&AttemptOutcome::status(200), 0.0), done(200));
    }

    // ---- 410 (R3: 503 after 30 s of 410s) ------------------------------------------------

    #[test]
    fn r3_gone_becomes_503_after_the_window() {
        for kind in [OpKind::Read, OpKind::Write] {
            let mut s = state(kind);
            let (delays, last) = run_until_done(&mut s, &AttemptOutcome::status(410));
            assert_eq!(
                delays,
                vec![Duration::ZERO, secs(1), secs(2), secs(4), secs(8), secs(15)]
            );
            assert_eq!(last, done(503));
            assert_eq!(s.cumulative_delay(), secs(30));
            assert_eq!(s.attempts(), 7);
        }
    }

    #[test]
    fn gone_backoff_caps_at_fifteen_seconds() {
        let options = RetryOptions {
            gone_window: secs(100),
            ..RetryOptions::default()
        };
        let mut s = RetryState::new(OpKind::Read, options, false);
        let (delays, last) = run_until_done(&mut s, &AttemptOutcome::status(410));
        assert_eq!(&delays[..7], &[0, 1, 2, 4, 8, 15, 15].map(secs)[..]);
        assert!(delays.iter().all(|d| *d <= secs(15)));
        assert_eq!(last, done(503));
        assert!(s.cumulative_delay() <= secs(100));
    }

    #[test]
    fn gone_then_success() {
        let mut s = state(OpKind::Write);
        assert_eq!(
            s.on_attempt(&AttemptOutcome::status(410), 0.0),
            retry(Duration::ZERO)
        );
        assert_eq!(
            s.on_attempt(&AttemptOutcome::status(410), 0.0),
            retry(secs(1))
        );
        assert_eq!(s.on_attempt(&AttemptOutcome::status(201), 0.0), done(201));
    }

    // ---- timeouts and 408 (SPEC §4.3, R1) --------------------------------------------------

    #[test]
    fn read_timeouts_retried_then_timed_out() {
        let mut s = state(OpKind::Read);
        let (delays, last) = run_until_done(&mut s, &AttemptOutcome::Timeout);
        assert_eq!(delays, vec![secs(1); 3]);
        assert_eq!(last, Decision::Done(FinalOutcome::TimedOut));
        assert_eq!(s.attempts(), 4);
    }

    #[test]
    fn read_408s_retried_then_408_surfaced() {
        let mut s = state(OpKind::Read);
        let (delays, last) = run_until_done(&mut s, &AttemptOutcome::status(408));
        assert_eq!(delays, vec![secs(1); 3]);
        assert_eq!(last, done(408));
    }

    #[test]
    fn read_timeout_then_success() {
        let mut s = state(OpKind::Read);
        assert_eq!(s.on_attempt(&AttemptOutcome::Timeout, 0.0), retry(secs(1)));
        assert_eq!(
            s.on_attempt(&AttemptOutcome::status(408), 0.0),
            retry(secs(1))
        );
        assert_eq!(s.on_attempt(&AttemptOutcome::status(200), 0.0), done(200));
        assert_eq!(s.cumulative_delay(), secs(2));
    }

    #[test]
    fn r1_writes_never_resent_after_timeout_or_408() {
        for outcome in [AttemptOutcome::Timeout, AttemptOutcome::status(408)] {
            let mut s = state(OpKind::Write);
            assert_eq!(
                s.on_attempt(&outcome, 0.0),
                Decision::Done(FinalOutcome::Unknown)
            );
            assert_eq!(s.attempts(), 1);
            // also after other retries
            let mut s = state(OpKind::Write);
            assert_eq!(s.on_attempt(&throttled(Some(ms(10))), 0.0), retry(ms(10)));
            assert_eq!(
                s.on_attempt(&AttemptOutcome::status(410), 0.0),
                retry(Duration::ZERO)
            );
            assert_eq!(
                s.on_attempt(&outcome, 0.0),
                Decision::Done(FinalOutcome::Unknown)
            );
        }
    }

    #[test]
    fn bug_retry_write_after_timeout_resends_writes() {
        let mut s = RetryState::new(OpKind::Write, RetryOptions::default(), true);
        assert_eq!(s.on_attempt(&AttemptOutcome::Timeout, 0.0), retry(secs(1)));
        assert_eq!(
            s.on_attempt(&AttemptOutcome::status(408), 0.0),
            retry(secs(1))
        );
        // the re-sent create finds its own first attempt: 409
        assert_eq!(s.on_attempt(&AttemptOutcome::status(409), 0.0), done(409));
        // when the retries run out, the outcome is still unknown
        let mut s = RetryState::new(OpKind::Write, RetryOptions::default(), true);
        let (delays, last) = run_until_done(&mut s, &AttemptOutcome::Timeout);
        assert_eq!(delays.len(), 3);
        assert_eq!(last, Decision::Done(FinalOutcome::Unknown));
        // the bug does not touch reads
        let mut s = RetryState::new(OpKind::Read, RetryOptions::default(), true);
        let (delays, last) = run_until_done(&mut s, &AttemptOutcome::Timeout);
        assert_eq!(
            (delays.len(), last),
            (3, Decision::Done(FinalOutcome::TimedOut))
        );
    }

    #[test]
    fn budgets_are_independent() {
        let mut s = state(OpKind::Read);
        let seq = [
            throttled(Some(secs(10))),
            AttemptOutcome::status(503),
            throttled(Some(secs(10))),
            AttemptOutcome::status(410),
            AttemptOutcome::Timeout,
            throttled(Some(secs(10))),
            AttemptOutcome::status(449),
        ];
        for o in &seq {
            assert!(
                matches!(s.on_attempt(o, 0.0), Decision::Retry { .. }),
                "{o:?}"
            );
        }
        // 429 budget spent (30 s), 503 budget spent (1)
        assert_eq!(s.on_attempt(&throttled(Some(ms(1))), 0.0), done(429));
        assert_eq!(s.rate_limited_delay(), secs(30));
        assert_eq!(s.cumulative_delay(), secs(31));
        assert_eq!(s.attempts(), 8);
    }

    #[test]
    fn wire_roundtrip_with_bincode() {
        let mut s = state(OpKind::Write);
        s.on_attempt(&throttled(Some(ms(7))), 0.1);
        let back: RetryState = bincode::deserialize(&bincode::serialize(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        let o = throttled(Some(ms(7)));
        let back: AttemptOutcome = bincode::deserialize(&bincode::serialize(&o).unwrap()).unwrap();
        assert_eq!(back, o);
    }

    // ---- budget invariants (proptest) ------------------------------------------------------

    fn arb_outcome() -> impl Strategy<Value = AttemptOutcome> {
        prop_oneof![
            4 => (0u64..40_000).prop_map(|ms| throttled(Some(Duration::from_millis(ms)))),
            1 => Just(throttled(None)),
            1 => Just(AttemptOutcome::Timeout),
            6 => prop::sample::select(vec![
                200u16, 201, 204, 304, 400, 404, 408, 409, 410, 412, 449, 500, 503,
            ])
            .prop_map(AttemptOutcome::status),
        ]
    }

    fn arb_kind() -> impl Strategy<Value = OpKind> {
        prop_oneof![Just(OpKind::Read), Just(OpKind::Write)]
    }

    proptest! {
        #[test]
        fn budget_invariants_hold(
            kind in arb_kind(),
            bug in any::<bool>(),
            outcomes in prop::collection::vec(arb_outcome(), 1..40),
            jitters in prop::collection::vec(0.0f64..1.0, 40),
        ) {
            let o = RetryOptions::default();
            let mut s = RetryState::new(kind, o.clone(), bug);
            let mut sum = Duration::ZERO;
            let mut sum_429 = Duration::ZERO;
            let mut retries_429 = 0u32;
            // cycle the sequence so that every run ends in Done
            let mut done = None;
            for (i, outcome) in outcomes.iter().cycle().enumerate().take(10_000) {
                let d = s.on_attempt(outcome, jitters[i % jitters.len()]);
                prop_assert_eq!(s.attempts() as usize, i + 1);
                match d {
                    Decision::Retry { after } => {
                        sum += after;
                        let timeout = matches!(
                            outcome,
                            AttemptOutcome::Timeout | AttemptOutcome::Response { status: 408, .. }
                        );
                        // R1: no write re-sent after a timeout/408 without the bug
                        prop_assert!(!(timeout && kind == OpKind::Write && !bug));
                        if let AttemptOutcome::Response { status: 429, retry_after } = outcome {
                            retries_429 += 1;
                            sum_429 += after;
                            // R2: each delay ≥ the server's retry-after
                            prop_assert!(after >= retry_after.unwrap_or(Duration::ZERO));
                        }
                        // every retryable status has a bounded delay
                        prop_assert!(after <= o.max_rate_limited_wait);
                    }
                    Decision::Done(f) => {
                        // R3: the last server status, 503 after 410s, or the timeout outcomes
                        let expected = match (outcome, kind) {
                            (AttemptOutcome::Response { status: 410, .. }, _) => {
                                FinalOutcome::Response { status: 503 }
                            }
                            (AttemptOutcome::Timeout, OpKind::Read) => FinalOutcome::TimedOut,
                            (AttemptOutcome::Response { status: 408, .. }, OpKind::Read) => {
                                FinalOutcome::Response { status: 408 }
                            }
                            (AttemptOutcome::Timeout, OpKind::Write)
                            | (AttemptOutcome::Response { status: 408, .. }, OpKind::Write) => {
                                FinalOutcome::Unknown
                            }
                            (AttemptOutcome::Response { status, .. }, _) => {
                                FinalOutcome::Response { status: *status }
                            }
                        };
                        prop_assert_eq!(&f, &expected);
                        done = Some(f);
                        break;
                    }
                }
            }
            prop_assert!(done.is_some(), "no Done after 10000 attempts");
            // R2 budget
            prop_assert!(retries_429 <= o.max_rate_limited_retries);
            prop_assert!(sum_429 <= o.max_rate_limited_wait);
            prop_assert_eq!(s.rate_limited_delay(), sum_429);
            prop_assert_eq!(s.cumulative_delay(), sum);
            // total attempts bounded by the sum of all budgets (+1 for the final attempt)
            let bound = 1 + 9 + 1 + 3 + 7 + 40;
            prop_assert!(s.attempts() <= bound, "{} attempts", s.attempts());
            // total delay bounded by the sum of the windows
            prop_assert!(sum <= secs(30) * 3 + o.read_timeout_retry_delay * 3);
        }

        #[test]
        fn r2_429_only_sequences(
            retry_afters in prop::collection::vec(prop::option::of(0u64..40_000), 1..20),
        ) {
            let mut s = state(OpKind::Write);
            let mut last = None;
            for (i, ra) in retry_afters.iter().cycle().enumerate().take(100) {
                let ra = ra.map(Duration::from_millis);
                match s.on_attempt(&throttled(ra), 0.5) {
                    Decision::Retry { after } => {
                        prop_assert!(after >= ra.unwrap_or(Duration::ZERO));
                    }
                    Decision::Done(f) => {
                        prop_assert_eq!(f, FinalOutcome::Response { status: 429 });
                        last = Some(i);
                        break;
                    }
                }
            }
            prop_assert!(last.is_some());
            prop_assert!(s.attempts() <= 10);
            prop_assert!(s.cumulative_delay() <= secs(30));
        }
    }
}
