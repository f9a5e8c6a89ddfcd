//! The client SDK retry policy (SPEC §4.1–§4.3), as a pure state machine: one
//! [`RetryState`] per logical operation is told the outcome of each attempt and answers
//! "retry after this delay" or "done, with this outcome". It never sleeps, reads a clock or
//! draws randomness: the caller waits, and hands in the jitter.
//!
//! It is the SDK's one retry policy: the single-region clients ([`crate::sdk::client`])
//! and the multi-region client ([`crate::sdk::region_client`]) both decide every retry
//! here, a single-region account being the case with one preferred region. It follows the
//! .NET v3 SDK in Direct mode on a single-write account (SPEC §4.3), with the number of
//! preferred regions, multi-write, the failover wait and `read_timeout_fails_over` as
//! options:
//!
//! | Outcome (sub-status) | Decision | SPEC |
//! |---|---|---|
//! | 2xx, 304, 400, 401, 403, 404, 409, 412, 413, and any status not listed below | `Done(Response)` | §4.1 |
//! | 429 | retry after `retry_after`, or 5 s when it is 0 or missing, while the 429 budget lasts (at most 9 retries, 30 s in all); then `Done(Response{429})` | §4.2 |
//! | 449 | transport window (below), 449 backoff: 10 ms doubling plus a 1–4 ms salt, capped at 1 s | §4.1 row 449 |
//! | 410 (0, 1007, 1008, and any other) | transport window, 410 backoff: 1 s doubling, capped at 15 s | §4.1 row 410 |
//! | 410 (1002 `PartitionKeyRangeGone`) | not retried by the transport: the split reaches the point operation as 410/1007, which is retried like any 410 (the model's partition map never changes, so the refresh is a no-op) | §4.1 row 410 |
//! | 410 (1000 `NameCacheIsStale`) | like any 410 the first two times; the third → 503 | §4.1 row 410 |
//! | 410 (1022 `LeaseNotFound`) | 503 at once | §4.1 row 410 |
//! | transport timeout, read | becomes 410 (20002 `TimeoutGenerated410`): the attempt's `request_timeout` counts toward the transport window, and it is retried like a 410 | §4.1 row 408 |
//! | transport timeout, read, with `read_timeout_fails_over` | a connection error: failover (below) to the next preferred region, the region marked unavailable; the failovers spent, `Done(Response{503})` | §4.1 row `HttpRequestException` |
//! | transport timeout, write | `Done(Unknown{408})`: sent and timed out, outcome unknown, never retried (R1) | §4.1 row 408, §4.3 |
//! | not sent (connection refused: the request never left the client), read or write | a transport 410 (20001 `TransportGenerated410`, the .NET SDK's name; the SPEC names none): retried in the transport window like any 410, writes too, since the request certainly did not run; the window spent, `Done(Response{503})` (the seeded bug `not_sent_taken_as_unknown`: a write ends `Done(Unknown{503})` at once, as if it had been sent) | §4.1 row 408, R1 |
//! | cancelled by the caller while an attempt is in flight | `Done(Cancelled{Unknown})`: that attempt was sent and not answered, so it may have run; never retried | §4.1 row 408, R1 |
//! | cancelled by the caller between attempts ([`RetryState::cancel`]) | `Done(Cancelled{NotRun})`: no attempt is in flight and every earlier one was answered or never sent (`Cancelled{Unknown}` when an earlier attempt of the write may have run); never retried | R1 |
//! | 408 from the server | never retried: `Done(Response{408})` for a read, `Done(Unknown{408})` for a write (it may have run) | §4.1 row 408 |
//! | 503 (and every 503 above) | one retry, at once, on the next preferred region if there are at least 2 (`preferred_regions`), for reads, and for writes only on multi-write accounts; else `Done(Response{503})` | §4.1 row 503 |
//! | 503 (20003 `TransportGenerated503`, 20006 `Channel_Closed`), write | as 503, but a write that is not retried ends `Done(Unknown{503})`: it was sent, its outcome is unknown | §4.1 rows 408, 503 |
//! | 500, read | one retry on the next preferred region with at least 2, sharing the 503 budget; else `Done(Response{500})`. Writes: `Done(Response{500})` | §4.1 row 500 |
//! | 429 (3092 `SystemResourceUnavailable`), write on a multi-write account | as 503: one retry, at once, on the next preferred region; else `Done(Response{429})`. Elsewhere a plain 429 | §4.1 row 429/3092 |
//! | 403 (3 `WriteForbidden`) | failover (below) to the write region, with the account refreshed | §4.1 row 403/3 |
//! | 403 (1008 `DatabaseAccountNotFound`), read or multi-write write | failover to the next preferred region, the region marked unavailable (the seeded bug `removed_region_retried`: a read goes back to the same region, unmarked); a single-write write: `Done(Response{403})` | §4.1 row 403/1008 |
//! | 404 (1002 `ReadSessionNotAvailable`) | session loop in the region (below), then the write region (single-write, at most [`MAX_SESSION_TOKEN_RETRIES`] times) or the next preferred region (multi-write, at most once per preferred region), each with a new session loop; then `Done(Response{404})` | §4.1 row 404/1002 |
//!
//! **Failover** (`ClientRetryPolicy.ShouldRetryOnEndpointFailureAsync`): at most
//! `max_failover_retries` (120) per operation, one count for 403/3, 403/1008 and connection
//! errors alike; a read waits `failover_wait` ([`FAILOVER_WAIT`], 1 s) before each, a write
//! goes at once the first time and waits as long from the second failover on. (The SDK checks its counter before raising it, so it
//! lets a 121st through; the model stops at 120.)
//!
//! **Session loop** (`SessionTokenMismatchRetryPolicy`, Direct mode): in one region, the
//! first retry after a 404/1002 is immediate, then [`SESSION_INITIAL_BACKOFF`] (5 ms) growing
//! ×[`SESSION_BACKOFF_MULTIPLIER`] per step, capped at [`SESSION_MAX_BACKOFF`] (500 ms) and cut
//! to what is left of [`SESSION_WINDOW`] (5 s); once it is spent, the next 404/1002 takes the
//! region step of the row above.
//!
//! Every [`Decision::Retry`] names where the next attempt goes ([`Route`]). Gateway mode is
//! out of scope: its HTTP timeouts and 449 wait are not modelled.
//!
//! **Transport window** (`GoneAndRetryWithRequestRetryPolicy`): 410s and 449s share one
//! window of `gone_window` (410) / `retry_with_window` (449), counted from the first attempt.
//! The first retry in it is immediate; each later one waits its backoff, cut to what is left
//! of the window; once nothing is left the caller sees **449** if any 449 came in the window
//! (a pending 449 wins over interleaved 410s), else **503** (then the 503 row). A retry on
//! another region starts a new window.
//!
//! The policy has no clock: its window counts the delays it inserts, the time each attempt
//! in the window took when the caller tells it ([`RetryState::attempt_took`]; the
//! multi-region client does), and for a transport timeout the request timeout the attempt
//! used up when the caller does not say.
//!
//! The seeded bug `retry_write_after_timeout` retries a write after a transport timeout or a
//! server 408 as if it were a read; such a write ends `Done(Unknown{status})` when its last
//! answer does not say what happened to it.
//!
//! A caller's cancel is the caller's to report: [`AttemptOutcome::Cancelled`] when an attempt
//! was in flight, [`RetryState::cancel`] between attempts. The client's seeded bug
//! `retry_after_cancel` reports a cancel in flight as a timeout instead, and goes on.

use crate::core::bugs::ModelBugs;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The retry budgets and the account's shape. `Default` gives the .NET v3 SDK defaults on a
/// single-region, single-write account.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryOptions {
    /// Maximum retries after 429. Default **9** (up to 10 attempts in all):
    /// `MaxRetryAttemptsOnRateLimitedRequests`, SPEC §4.2. 0 disables the retry.
    pub max_rate_limited_retries: u32,
    /// Maximum cumulative delay inserted for 429s. Default **30 s**:
    /// `MaxRetryWaitTimeOnRateLimitedRequests`, SPEC §4.2.
    pub max_rate_limited_wait: Duration,
    /// How long the client waits for an answer before an attempt is a transport timeout.
    /// Default **6 s**: `CosmosClientOptions.RequestTimeout`, SPEC §4.3. A timed-out read
    /// uses up this much of the transport window.
    pub request_timeout: Duration,
    /// Maximum cross-region retries after 503 (and 500 on reads). Default **1**:
    /// `MaxServiceUnavailableRetryCount`, SPEC §4.1 row 503. Only used with at least two
    /// `preferred_regions`.
    pub max_service_unavailable_retries: u32,
    /// Transport window for 410 retries, after which the caller sees 503. Default **30 s**:
    /// SPEC §4.1 row 410 (`GoneAndRetryWithRequestRetryPolicy`).
    pub gone_window: Duration,
    /// Transport window for 449 (`RetryWith`) retries, after which the caller sees 449.
    /// Default **30 s**: SPEC §4.1 row 449. The same window as 410's, measured the same way.
    pub retry_with_window: Duration,
    /// Effective preferred regions. Default **1** (the model's topology): a 503 then reaches
    /// the caller at once (SPEC §4.1 row 503).
    #[serde(default = "one_region")]
    pub preferred_regions: u32,
    /// A multi-write account: writes get the cross-region 503 retry too. Default **false**
    /// (single-write, SPEC §4.3).
    #[serde(default)]
    pub multi_write: bool,
    /// Maximum failover retries (403/3, 403/1008) per operation. Default **120**:
    /// `ClientRetryPolicy.MaxRetryCount`, SPEC §4.1.
    #[serde(default = "max_failover_retries")]
    pub max_failover_retries: u32,
    /// Wait before a failover retry: every one of a read's, a write's from the second on.
    /// Default [`FAILOVER_WAIT`] (1 s): `RetryIntervalInMS`, SPEC §4.1 row
    /// `HttpRequestException`. A scenario that scales time down may scale it.
    #[serde(default = "failover_wait")]
    pub failover_wait: Duration,
    /// A read's transport timeout is a connection error (SPEC §4.1 row
    /// `HttpRequestException`): a failover to the next preferred region, the region marked
    /// unavailable, instead of a 410 in the transport window (row 408). Default **false**
    /// (Direct mode against one region). The multi-region client sets it: its attempts
    /// time out when a region is down or cut off, and a read that kept waiting there for
    /// a 30 s window would outlast the outage it should route around.
    #[serde(default)]
    pub read_timeout_fails_over: bool,
}

fn failover_wait() -> Duration {
    FAILOVER_WAIT
}

fn max_failover_retries() -> u32 {
    120
}

fn one_region() -> u32 {
    1
}

impl Default for RetryOptions {
    fn default() -> Self {
        RetryOptions {
            max_rate_limited_retries: 9,
            max_rate_limited_wait: Duration::from_secs(30),
            request_timeout: Duration::from_secs(6),
            max_service_unavailable_retries: 1,
            gone_window: Duration::from_secs(30),
            retry_with_window: Duration::from_secs(30),
            preferred_regions: one_region(),
            multi_write: false,
            max_failover_retries: max_failover_retries(),
            failover_wait: failover_wait(),
            read_timeout_fails_over: false,
        }
    }
}

/// Default 429 delay when `x-ms-retry-after-ms` is 0 or missing: 5 s
/// (`DefaultRetryInSeconds`, SPEC §4.2).
pub(crate) const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(5);
/// First non-immediate 449 backoff: 10 ms, doubling (SPEC §4.1 row 449).
pub const RETRY_WITH_INITIAL_BACKOFF: Duration = Duration::from_millis(10);
/// The salt added to a 449 backoff: a whole number of ms from 1 to 4 (SPEC §4.1 row 449).
pub const RETRY_WITH_SALT_MS: (u64, u64) = (1, 4);
/// Cap of a 449 backoff: 1 s (SPEC §4.1 row 449).
pub const RETRY_WITH_MAX_BACKOFF: Duration = Duration::from_secs(1);
/// First non-immediate 410 backoff: 1 s, doubling (SPEC §4.1 row 410).
pub const GONE_INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// Cap of a 410 backoff: 15 s (SPEC §4.1 row 410).
pub const GONE_MAX_BACKOFF: Duration = Duration::from_secs(15);
/// Retries of a 410/1000 (`NameCacheIsStale`) before the next one becomes 503 (SPEC §4.1
/// row 410).
pub const MAX_NAME_CACHE_STALE_RETRIES: u32 = 2;
/// Retries on the write region after a 404/1002 on a single-write account
/// (`MaxSessionTokenRetryCount`, SPEC §4.1 row 404/1002).
pub const MAX_SESSION_TOKEN_RETRIES: u32 = 2;
/// First non-immediate wait of the session loop: 5 ms (SPEC §4.1 row 404/1002).
pub const SESSION_INITIAL_BACKOFF: Duration = Duration::from_millis(5);
/// Growth of the session loop's wait per step: ×5 (SPEC §4.1 row 404/1002).
pub const SESSION_BACKOFF_MULTIPLIER: u32 = 5;
/// Cap of one session-loop wait: 500 ms (SPEC §4.1 row 404/1002).
pub const SESSION_MAX_BACKOFF: Duration = Duration::from_millis(500);
/// The session loop's time in one region: 5 s (SPEC §4.1 row 404/1002).
pub const SESSION_WINDOW: Duration = Duration::from_secs(5);
/// Wait before a failover retry (a read's every one, a write's from the second on): 1 s
/// (`RetryIntervalInMS`, SPEC §4.1 row `HttpRequestException`).
pub const FAILOVER_WAIT: Duration = Duration::from_secs(1);

pub use crate::core::sub_status;
pub use crate::partition::OpKind;

/// What one attempt came back with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AttemptOutcome {
    /// The server (or the transport, for the sub-statuses 20xxx) answered.
    Response {
        /// The HTTP status.
        status: u16,
        /// The Cosmos sub-status ([`sub_status`]; 0 for none).
        sub_status: u32,
        /// `x-ms-retry-after-ms`, if sent (429).
        retry_after: Option<Duration>,
    },
    /// Transport: sent, and no answer within `request_timeout`.
    Timeout,
    /// Transport: the request never left the client (the connection was refused: nothing
    /// listens at the server's address), so it certainly did not run.
    NotSent,
    /// The caller cancelled the call while this attempt was in flight: it was sent and
    /// not answered, so it may have run.
    Cancelled,
}

impl AttemptOutcome {
    /// A response with a status, no sub-status and no retry-after.
    pub fn status(status: u16) -> AttemptOutcome {
        AttemptOutcome::with_sub_status(status, sub_status::NONE)
    }

    /// A response with a status and a sub-status, and no retry-after.
    pub fn with_sub_status(status: u16, sub_status: u32) -> AttemptOutcome {
        AttemptOutcome::Response {
            status,
            sub_status,
            retry_after: None,
        }
    }
}

/// Where a retry goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Route {
    /// The region of the last attempt.
    Same,
    /// The next preferred region (503, 500 on a read, 429/3092, 404/1002 on multi-write).
    NextPreferred,
    /// The next preferred region, the last one marked unavailable (403/1008).
    MarkUnavailableAndNextPreferred,
    /// The write region, the account refreshed first when `refresh_account` (403/3; a
    /// 404/1002 on a single-write account goes there without a refresh).
    WriteRegion {
        /// Read the account again: the write region may have moved.
        refresh_account: bool,
    },
}

/// What the caller does next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Decision {
    /// Send the request again after waiting `after`, to `route`.
    Retry {
        /// The delay before the next attempt.
        after: Duration,
        /// Where the next attempt goes.
        route: Route,
    },
    /// Stop and surface this outcome.
    Done(FinalOutcome),
}

/// What the caller of the SDK sees in the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FinalOutcome {
    /// A status whose meaning is known: the last server status (R3), 503 after the 410s or
    /// a 410/1000 or 410/1022, 449 when the transport window ran out with a 449 pending, or
    /// 408 from the server on a read.
    Response {
        /// The HTTP status.
        status: u16,
    },
    /// A write whose outcome is unknown: it may or may not have committed. `status` is what
    /// the caller is told: 408 (timed out, or a 408 from the server) or 503 (transport-
    /// generated after it was sent). Never retried without the bug.
    Unknown {
        /// The HTTP status the caller sees.
        status: u16,
    },
    /// The caller cancelled the call (a `CancellationToken` in the real SDK): it ended at
    /// once, with no retry after the cancel.
    Cancelled {
        /// Whether the operation may have run.
        effect: CancelledEffect,
    },
}

/// What a cancelled call did to the service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CancelledEffect {
    /// No attempt of it was in flight at the cancel and none before may have run: every
    /// one was answered with a status that says it did not run, or never sent.
    NotRun,
    /// An attempt was sent and not answered (in flight at the cancel, or an earlier one
    /// whose outcome is unknown): it may have run.
    Unknown,
}

/// Which budget of the transport window an answer draws on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WindowRetry {
    /// 410 (and timed-out reads): 1 s doubling.
    Gone,
    /// 410/1000: like `Gone`, and counted.
    NameCacheStale,
    /// 449: 10 ms doubling with a salt.
    RetryWith,
}

/// The transport's retry state in one region (`GoneAndRetryWithRequestRetryPolicy`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct TransportWindow {
    /// Time used up in the window: delays inserted, and the timeouts of timed-out reads.
    elapsed: Duration,
    /// Whether the window has retried once already (the first retry is immediate).
    retried: bool,
    /// The next 410 backoff, once one has been used.
    gone_backoff: Option<Duration>,
    /// The next 449 backoff (before the salt), once one has been used.
    retry_with_backoff: Option<Duration>,
    /// A 449 came in this window: it is what the caller sees when the window runs out.
    retry_with_pending: bool,
    /// 410/1000 answers in this window.
    name_cache_stale: u32,
}

/// The session loop in one region (`SessionTokenMismatchRetryPolicy`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct SessionLoop {
    /// Delays inserted so far in this region.
    elapsed: Duration,
    /// The next wait, once the immediate retry has been used.
    backoff: Option<Duration>,
}

/// The retry state of one logical operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryState {
    kind: OpKind,
    options: RetryOptions,
    /// The seeded bugs of the policy: `retry_write_after_timeout`,
    /// `retry_with_on_gone_backoff`, `removed_region_retried` and the waits
    /// stretched tenfold (`gone_backoff_stretched`, `session_loop_waits_stretched`,
    /// `failover_waits_stretched`), `read_fails_over_at_once`,
    /// `not_sent_taken_as_unknown`.
    bugs: ModelBugs,
    attempts: u32,
    cumulative_delay: Duration,
    rate_limited_retries: u32,
    rate_limited_delay: Duration,
    window: TransportWindow,
    service_unavailable_retries: u32,
    session: SessionLoop,
    /// Region steps taken after 404/1002 answers.
    session_region_retries: u32,
    /// Failover retries taken (403/3, 403/1008).
    failover_retries: u32,
    /// An earlier attempt of this write may have run (only under the bug, or after a
    /// re-sent transport-generated 503 on a multi-write account).
    outcome_unknown: bool,
    /// How long the attempt about to be reported took, when the caller said
    /// ([`RetryState::attempt_took`]).
    took: Option<Duration>,
    finished: Option<FinalOutcome>,
}

impl RetryState {
    /// A fresh state for one operation, with the seeded bugs in `bugs` that
    /// touch the policy: `retry_write_after_timeout` (writes are retried after
    /// a timeout or 408 like reads), `retry_with_on_gone_backoff` and
    /// `removed_region_retried` (a read answered 403/1008 goes back to its region),
    /// the tenfold waits `gone_backoff_stretched`, `session_loop_waits_stretched`
    /// and `failover_waits_stretched`, `read_fails_over_at_once`, and
    /// `not_sent_taken_as_unknown` (a write whose connect was refused ends
    /// unknown instead of being retried).
    pub fn new(kind: OpKind, options: RetryOptions, bugs: ModelBugs) -> Self {
        RetryState {
            kind,
            options,
            bugs,
            attempts: 0,
            cumulative_delay: Duration::ZERO,
            rate_limited_retries: 0,
            rate_limited_delay: Duration::ZERO,
            window: TransportWindow::default(),
            service_unavailable_retries: 0,
            session: SessionLoop::default(),
            session_region_retries: 0,
            failover_retries: 0,
            outcome_unknown: false,
            took: None,
            finished: None,
        }
    }

    /// Tells the policy how long the attempt it is about to be told of took, from the
    /// last decision to its answer, less the delay that decision asked for (the attempt
    /// itself, and any time the caller lost beyond the delay): that time counts toward the
    /// transport window, which the SDK measures with a stopwatch. Optional: without it, the window counts the delays the
    /// policy inserts and, for a timed-out read, the request timeout (module doc).
    pub fn attempt_took(&mut self, took: Duration) {
        self.took = Some(took);
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
        let mut decision = self.decide(outcome, jitter);
        match &mut decision {
            Decision::Retry { after, .. } => self.cumulative_delay += *after,
            Decision::Done(outcome) => {
                if let FinalOutcome::Response { status } = *outcome {
                    // An earlier attempt may have run, and this answer does not say.
                    if self.outcome_unknown && matches!(status, 408 | 410 | 429 | 449 | 500 | 503) {
                        *outcome = FinalOutcome::Unknown { status };
                    }
                }
                self.finished = Some(outcome.clone());
            }
        }
        decision
    }

    fn decide(&mut self, outcome: &AttemptOutcome, jitter: f64) -> Decision {
        let took = self.took.take();
        let (status, sub, retry_after) = match outcome {
            AttemptOutcome::Timeout => {
                let took = took.unwrap_or(self.options.request_timeout);
                return self.on_transport_timeout(took, jitter);
            }
            AttemptOutcome::NotSent => return self.on_not_sent(took.unwrap_or_default(), jitter),
            AttemptOutcome::Cancelled => {
                return Decision::Done(FinalOutcome::Cancelled {
                    effect: CancelledEffect::Unknown,
                })
            }
            AttemptOutcome::Response {
                status,
                sub_status,
                retry_after,
            } => (*status, *sub_status, *retry_after),
        };
        if matches!(status, 410 | 449) {
            self.window.elapsed += took.unwrap_or_default();
        }
        match status {
            408 => self.on_server_timeout(jitter),
            429 if sub == sub_status::SYSTEM_RESOURCE_UNAVAILABLE
                && self.kind == OpKind::Write
                && self.options.multi_write =>
            {
                self.unavailable_retry(503, 429, false)
            }
            429 => self.on_throttled(retry_after),
            403 if sub == sub_status::WRITE_FORBIDDEN => self.failover(
                Route::WriteRegion {
                    refresh_account: true,
                },
                403,
            ),
            403 if sub == sub_status::DATABASE_ACCOUNT_NOT_FOUND
                && (self.kind == OpKind::Read || self.options.multi_write) =>
            {
                // The seeded bug: the read goes back to the region being removed, unmarked.
                let route = if self.bugs.removed_region_retried && self.kind == OpKind::Read {
                    Route::Same
                } else {
                    Route::MarkUnavailableAndNextPreferred
                };
                self.failover(route, 403)
            }
            404 if sub == sub_status::READ_SESSION_NOT_AVAILABLE => self.on_session_not_available(),
            449 => self.window_retry(WindowRetry::RetryWith, jitter),
            410 => match sub {
                sub_status::LEASE_NOT_FOUND => self.cross_region(503, false),
                sub_status::NAME_CACHE_IS_STALE => {
                    self.window_retry(WindowRetry::NameCacheStale, jitter)
                }
                // PartitionKeyRangeGone reaches a point operation as 410/1007: a 410 like
                // any other here.
                _ => self.window_retry(WindowRetry::Gone, jitter),
            },
            503 => {
                let sent_write_failed = self.kind == OpKind::Write
                    && matches!(
                        sub,
                        sub_status::TRANSPORT_GENERATED_503 | sub_status::CHANNEL_CLOSED
                    );
                self.cross_region(503, sent_write_failed)
            }
            500 if self.kind == OpKind::Read => self.cross_region(500, false),
            _ => Decision::Done(FinalOutcome::Response { status }),
        }
    }

    /// §4.2: the server's retry-after (5 s if 0 or missing), while the budget lasts.
    fn on_throttled(&mut self, retry_after: Option<Duration>) -> Decision {
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
            same_region(delay)
        } else {
            Decision::Done(FinalOutcome::Response { status: 429 })
        }
    }

    /// No answer within the request timeout. A read's timeout becomes a 410 inside the
    /// transport window, or a failover when `read_timeout_fails_over`; a write was sent, so
    /// its outcome is unknown (408).
    fn on_transport_timeout(&mut self, took: Duration, jitter: f64) -> Decision {
        if self.kind == OpKind::Write && !self.bugs.retry_write_after_timeout {
            return Decision::Done(FinalOutcome::Unknown { status: 408 });
        }
        self.outcome_unknown |= self.kind == OpKind::Write;
        if self.options.read_timeout_fails_over {
            // Its failovers spent, the read surfaces 503, as when a 410 window runs out.
            return self.failover(Route::MarkUnavailableAndNextPreferred, 503);
        }
        self.window.elapsed += took;
        self.window_retry(WindowRetry::Gone, jitter)
    }

    /// The request never left the client: a transport 410 (20001), retried in the window,
    /// writes too (it certainly did not run). The seeded bug `not_sent_taken_as_unknown`
    /// takes a write's refused connection for a failure after it was sent: 503, outcome
    /// unknown, not retried.
    fn on_not_sent(&mut self, took: Duration, jitter: f64) -> Decision {
        if self.kind == OpKind::Write && self.bugs.not_sent_taken_as_unknown {
            return Decision::Done(FinalOutcome::Unknown { status: 503 });
        }
        self.window.elapsed += took;
        self.window_retry(WindowRetry::Gone, jitter)
    }

    /// The caller cancelled the call between attempts (while the caller waited out a
    /// delay, or before the first attempt): the call ends at once, never retried. It did
    /// not run unless an earlier attempt of a write may have (under a bug, or after a
    /// re-sent transport-generated 503). A cancel while an attempt is in flight is that
    /// attempt's outcome instead ([`AttemptOutcome::Cancelled`]). Once `Done`, the same
    /// `Done`.
    pub fn cancel(&mut self) -> FinalOutcome {
        if let Some(done) = &self.finished {
            return done.clone();
        }
        let effect = if self.outcome_unknown {
            CancelledEffect::Unknown
        } else {
            CancelledEffect::NotRun
        };
        let done = FinalOutcome::Cancelled { effect };
        self.finished = Some(done.clone());
        done
    }

    /// A 408 from the server: never retried (the bug retries a write as a timed-out read).
    fn on_server_timeout(&mut self, jitter: f64) -> Decision {
        match self.kind {
            OpKind::Read => Decision::Done(FinalOutcome::Response { status: 408 }),
            OpKind::Write if self.bugs.retry_write_after_timeout => {
                self.outcome_unknown = true;
                self.window_retry(WindowRetry::Gone, jitter)
            }
            OpKind::Write => Decision::Done(FinalOutcome::Unknown { status: 408 }),
        }
    }

    /// A 410 or 449 inside the transport window (module doc).
    fn window_retry(&mut self, retry: WindowRetry, jitter: f64) -> Decision {
        let w = &mut self.window;
        let window = if retry == WindowRetry::RetryWith {
            w.retry_with_pending = true;
            self.options.retry_with_window
        } else {
            self.options.gone_window
        };
        let delay = if !w.retried {
            Duration::ZERO
        } else {
            let left = window.saturating_sub(w.elapsed);
            if left.is_zero() {
                return if w.retry_with_pending {
                    Decision::Done(FinalOutcome::Response { status: 449 })
                } else {
                    self.cross_region(503, false)
                };
            }
            match retry {
                WindowRetry::RetryWith if !self.bugs.retry_with_on_gone_backoff => {
                    let next = w
                        .retry_with_backoff
                        .get_or_insert(RETRY_WITH_INITIAL_BACKOFF);
                    let delay = (*next + salt(jitter)).min(left).min(RETRY_WITH_MAX_BACKOFF);
                    *next = next.saturating_mul(2).min(RETRY_WITH_MAX_BACKOFF);
                    delay
                }
                // The bug: a 449 waits on the 410 schedule.
                WindowRetry::RetryWith | WindowRetry::Gone | WindowRetry::NameCacheStale => {
                    // The seeded slip `gone_backoff_stretched`: ten times the schedule.
                    let scale = if self.bugs.gone_backoff_stretched {
                        10
                    } else {
                        1
                    };
                    let cap = GONE_MAX_BACKOFF * scale;
                    let next = w.gone_backoff.get_or_insert(GONE_INITIAL_BACKOFF * scale);
                    let delay = (*next).min(left).min(cap);
                    *next = next.saturating_mul(2).min(cap);
                    delay
                }
            }
        };
        if retry == WindowRetry::NameCacheStale {
            w.name_cache_stale += 1;
            if w.name_cache_stale > MAX_NAME_CACHE_STALE_RETRIES {
                return self.cross_region(503, false);
            }
        }
        w.retried = true;
        w.elapsed += delay;
        same_region(delay)
    }

    /// A 503 (or a 500 on a read) the caller would see: one retry, at once, on the next
    /// preferred region when there are at least two, for reads and for writes on multi-write
    /// accounts; the new region starts a new transport window. `sent_write_failed`: a write
    /// whose 503 came from the transport after it was sent, so its outcome is unknown.
    fn cross_region(&mut self, status: u16, sent_write_failed: bool) -> Decision {
        self.unavailable_retry(status, status, sent_write_failed)
    }

    /// The cross-region rule of [`Self::cross_region`] for an answer treated as `status`
    /// (429/3092 is treated as 503); `surfaced` is what the caller sees when it is not retried.
    fn unavailable_retry(
        &mut self,
        status: u16,
        surfaced: u16,
        sent_write_failed: bool,
    ) -> Decision {
        let eligible = match (self.kind, status) {
            (OpKind::Read, _) => true,
            (OpKind::Write, 503) => self.options.multi_write,
            (OpKind::Write, _) => false,
        };
        if eligible
            && self.options.preferred_regions >= 2
            && self.service_unavailable_retries < self.options.max_service_unavailable_retries
        {
            self.service_unavailable_retries += 1;
            self.new_region();
            self.outcome_unknown |= sent_write_failed;
            return Decision::Retry {
                after: Duration::ZERO,
                route: Route::NextPreferred,
            };
        }
        Decision::Done(if sent_write_failed {
            FinalOutcome::Unknown { status: surfaced }
        } else {
            FinalOutcome::Response { status: surfaced }
        })
    }

    /// The next attempt goes to another region: its transport window and session loop
    /// start afresh.
    fn new_region(&mut self) {
        self.window = TransportWindow::default();
        self.session = SessionLoop::default();
    }

    /// 403/3 and 403/1008 (module doc, **Failover**): `surfaced` once the budget is spent.
    fn failover(&mut self, route: Route, surfaced: u16) -> Decision {
        if self.failover_retries >= self.options.max_failover_retries {
            return Decision::Done(FinalOutcome::Response { status: surfaced });
        }
        self.failover_retries += 1;
        let read = self.kind == OpKind::Read && !self.bugs.read_fails_over_at_once;
        let after = if read || self.failover_retries > 1 {
            // The seeded slip `failover_waits_stretched`: ten times the wait.
            self.options.failover_wait
                * if self.bugs.failover_waits_stretched {
                    10
                } else {
                    1
                }
        } else {
            Duration::ZERO
        };
        self.new_region();
        Decision::Retry { after, route }
    }

    /// 404/1002 (module doc, **Session loop**): in the region while its 5 s last, then
    /// the region step.
    fn on_session_not_available(&mut self) -> Decision {
        let left = SESSION_WINDOW.saturating_sub(self.session.elapsed);
        if !left.is_zero() {
            // The seeded slip `session_loop_waits_stretched`: ten times the schedule.
            let scale = if self.bugs.session_loop_waits_stretched {
                10
            } else {
                1
            };
            let delay = match &mut self.session.backoff {
                None => {
                    self.session.backoff = Some(SESSION_INITIAL_BACKOFF * scale);
                    Duration::ZERO
                }
                Some(next) => {
                    let delay = (*next).min(left);
                    *next = next
                        .saturating_mul(SESSION_BACKOFF_MULTIPLIER)
                        .min(SESSION_MAX_BACKOFF * scale);
                    delay
                }
            };
            self.session.elapsed += delay;
            return same_region(delay);
        }
        let (limit, route) = if self.options.multi_write {
            (self.options.preferred_regions, Route::NextPreferred)
        } else {
            (
                MAX_SESSION_TOKEN_RETRIES,
                Route::WriteRegion {
                    refresh_account: false,
                },
            )
        };
        if self.session_region_retries >= limit {
            return Decision::Done(FinalOutcome::Response { status: 404 });
        }
        self.session_region_retries += 1;
        self.new_region();
        Decision::Retry {
            after: Duration::ZERO,
            route,
        }
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

/// A retry in the same region after `after`.
fn same_region(after: Duration) -> Decision {
    Decision::Retry {
        after,
        route: Route::Same,
    }
}

/// The 449 salt: a whole number of ms from 1 to 4, picked by `jitter` (clamped to [0, 1)).
fn salt(jitter: f64) -> Duration {
    let j = if jitter.is_nan() {
        0.0
    } else {
        jitter.clamp(0.0, 1.0)
    };
    let (lo, hi) = RETRY_WITH_SALT_MS;
    let span = hi - lo + 1;
    Duration::from_millis(lo + ((j * span as f64) as u64).min(span - 1))
}

#[cfg(test)]
mod tests;
