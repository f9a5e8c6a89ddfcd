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
