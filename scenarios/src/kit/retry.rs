//! Retry discipline (SPEC §4.5, R1–R3), judged from the attempt log of each
//! operation: no blind re-send of a non-idempotent write after a timeout, the
//! 429 budget and the server's retry-after honoured, the right status surfaced.

use overcast_model::retry;
use overcast_sim::check::{Evidence, EvidenceRow, Violation};
use overcast_sim::history::{Attempt, AttemptResult};
use overcast_sim::timeline::{secs, span_words};
use std::time::Duration;

/// The wait after a 429 whose retry-after is 0 or missing (SPEC §4.2).
pub const DEFAULT_RETRY_AFTER_MS: u64 = 5_000;

/// One ms in ns.
pub const MS: u64 = 1_000_000;

/// A 429's wait as SPEC §4.2 states it: the retry-after sent, or 5 s when
/// it is 0 or missing.
pub fn asked_wait_ms(retry_after_ms: Option<u64>) -> u64 {
    match retry_after_ms {
        Some(ms) if ms > 0 => ms,
        _ => DEFAULT_RETRY_AFTER_MS,
    }
}

/// The SDK's documented budget for throttled requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryRules {
    /// Retries allowed after 429 (the SDK default is 9, so 10 attempts).
    pub max_rate_limited_retries: u32,
    /// Cumulative delay allowed across those retries, ms (default 30 000).
    pub max_rate_limited_wait_ms: u64,
}

impl Default for RetryRules {
    /// 9 retries, 30 s (SPEC §4.2).
    fn default() -> Self {
        RetryRules {
            max_rate_limited_retries: 9,
            max_rate_limited_wait_ms: 30_000,
        }
    }
}

/// What the caller was finally told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surfaced {
    /// A server status.
    Status(u16),
    /// A write whose outcome is unknown (timed out or 408).
    Unknown,
    /// A read whose timeout retries ran out.
    TimedOut,
    /// The caller cancelled the call and was told it did not run (a cancelled
    /// call that may have run is [`Surfaced::Unknown`]).
    CancelledNotRun,
}

/// One logical operation as the retry checker sees it.
#[derive(Clone, Copy, Debug)]
pub struct RetryCase<'a> {
    /// Operation id.
    pub op: u64,
    /// Safe to re-send after a timeout (reads).
    pub idempotent: bool,
    /// The attempts, in order.
    pub attempts: &'a [Attempt],
    /// What the caller saw.
    pub surfaced: Surfaced,
    /// When the caller cancelled the call, true ns, if it asked to: nothing
    /// of it may be sent from then on.
    pub cancel_ns: Option<u64>,
}

impl std::fmt::Display for Surfaced {
    /// What the caller was told, in words: `503`, `an unknown outcome`, `a timeout`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Surfaced::Status(s) => write!(f, "{s}"),
            Surfaced::Unknown => f.write_str("an unknown outcome"),
            Surfaced::TimedOut => f.write_str("a timeout"),
            Surfaced::CancelledNotRun => f.write_str("cancelled, not run"),
        }
    }
}

/// An operation's attempts as the focused account of a retry violation:
/// when each was sent (true time), the wait the SDK put before it and how
/// it ended; the attempt the violation turns on marked (`marked`, from 0).
pub fn attempts_account(op: u64, attempts: &[Attempt], marked: usize) -> Evidence {
    let rows = attempts
        .iter()
        .enumerate()
        .map(|(i, a)| EvidenceRow {
            op: (i == 0).then_some(op),
            cells: vec![
                format!("{}", i + 1),
                secs(a.sent_ns),
                if i == 0 {
                    "-".to_string()
                } else {
                    span_words(a.waited_ns)
                },
                attempt_words(&a.result),
            ],
            marked: i == marked,
        })
        .collect();
    Evidence {
        title: format!("The attempts of operation #{op}"),
        lead: vec![format!(
            "Every request the SDK sent for operation #{op}, in true simulated time, with the wait it put before each."
        )],
        columns: ["attempt", "sent", "waited before it", "answer"]
            .map(String::from)
            .to_vec(),
        rows,
        notes: Vec::new(),
    }
}

fn is_timeout(r: &AttemptResult) -> bool {
    matches!(
        r,
        AttemptResult::Timeout | AttemptResult::Status { status: 408, .. }
    )
}

/// R1 (SPEC §4.5) for a call that is not idempotent: it is never re-sent
/// after an attempt that timed out or got 408 (its outcome was unknown, so
/// the re-send may apply it twice). The violation, if it was.
pub fn resent_after_timeout(op: u64, attempts: &[Attempt]) -> Option<Violation> {
    let i = attempts.iter().position(|x| is_timeout(&x.result))?;
    (i + 1 < attempts.len()).then(|| {
        Violation::new(
            "R1",
            format!(
                "op {op}: a write was re-sent (attempt {}) after attempt {} ended in {}; its outcome was unknown, so the re-send may apply it twice",
                i + 2,
                i + 1,
                attempt_words(&attempts[i].result)
            ),
        )
        .with_ops([op])
        .with_evidence(attempts_account(op, attempts, i + 1))
    })
}

/// R1 for a call its caller cancelled at `cancel_ns`: nothing of it is sent
/// at or after the cancel (the call ends at once, SPEC §4.1 row 408's "not
/// retried"). The violation, if an attempt was.
pub fn sent_after_cancel(op: u64, attempts: &[Attempt], cancel_ns: u64) -> Option<Violation> {
    let i = attempts.iter().position(|x| x.sent_ns >= cancel_ns)?;
    Some(
        Violation::new(
            "R1",
            format!(
                "op {op}: attempt {} was sent at {}, after the caller cancelled the call at {}; a cancelled call ends at once and sends nothing more",
                i + 1,
                secs(attempts[i].sent_ns),
                secs(cancel_ns)
            ),
        )
        .with_ops([op])
        .with_evidence(attempts_account(op, attempts, i)),
    )
}

/// Judges one operation; the first broken rule, if any.
pub fn check_case(rules: &RetryRules, case: &RetryCase<'_>) -> Option<Violation> {
    let v = |property: &'static str, message: String, marked: usize| {
        Some(
            Violation::new(property, message)
                .with_ops([case.op])
                .with_evidence(attempts_account(case.op, case.attempts, marked)),
        )
    };
    let a = case.attempts;
    if let Some(v) = case
        .cancel_ns
        .and_then(|c| sent_after_cancel(case.op, a, c))
    {
        return Some(v);
    }
    if !case.idempotent {
        if let Some(v) = resent_after_timeout(case.op, a) {
            return Some(v);
        }
    }
    // R2: the 429 budget, and each delay at least the server's retry-after.
    // The budget counts the delays the 429s asked for (SPEC §4.2: "cumulative
    // 429 delay"), not the time that passed: a paused client node or a slow
    // clock waits longer than it asked, and that spends no budget.
    let mut throttled_retries = 0u32;
    let mut throttled_wait_ms = 0u64;
    for (i, w) in a.windows(2).enumerate() {
        if let AttemptResult::Status {
            status: 429,
            retry_after_ms,
        } = w[0].result
        {
            throttled_retries += 1;
            let waited_ms = w[1].waited_ns / 1_000_000;
            let asked = asked_wait_ms(retry_after_ms);
            throttled_wait_ms += asked;
            if waited_ms < asked {
                return v(
                    "R2",
                    format!(
                        "op {}: retried {waited_ms} ms after a 429 that asked for {asked} ms",
                        case.op
                    ),
                    i + 1,
                );
            }
        }
    }
    if throttled_retries > rules.max_rate_limited_retries {
        return v(
            "R2",
            format!(
                "op {}: {throttled_retries} retries after 429, over the budget of {}",
                case.op, rules.max_rate_limited_retries
            ),
            a.len() - 1,
        );
    }
    if throttled_wait_ms > rules.max_rate_limited_wait_ms {
        return v(
            "R2",
            format!(
                "op {}: the 429s asked for {throttled_wait_ms} ms of delays in all, over the budget of {} ms",
                case.op, rules.max_rate_limited_wait_ms
            ),
            a.len() - 1,
        );
    }
    // R3 (SPEC §4.5): when the 410/449 window runs out the caller sees 503, or 449 if
    // a 449 was pending (a pending 449 wins over 410s); a read's timeouts are 410s of
    // that window, so they too end as 503; a write that timed out is unknown (408).
    let last = a.last()?;
    let pending_449 = a
        .iter()
        .any(|x| matches!(x.result, AttemptResult::Status { status: 449, .. }));
    // A write told it did not run must have had no attempt that may have run.
    let may_have_run = !case.idempotent
        && a.iter().any(|x| {
            matches!(
                x.result,
                AttemptResult::Timeout
                    | AttemptResult::Cancelled
                    | AttemptResult::Status { status: 408, .. }
            )
        });
    let ok = match (&last.result, case.surfaced) {
        // Cancelled between attempts (the one in flight is an unknown outcome).
        (AttemptResult::Cancelled, s) => s == Surfaced::Unknown,
        (_, Surfaced::CancelledNotRun) => case.cancel_ns.is_some() && !may_have_run,
        // A refused connect is a transport 410 (SPEC §4.1 row 408: "not sent → 410
        // (retried)"): the request never left the client, so never an unknown outcome.
        (
            AttemptResult::Status { status: 410, .. } | AttemptResult::NotSent,
            Surfaced::Status(s),
        ) => s == 503 || (s == 449 && pending_449),
        (AttemptResult::Status { status: 408, .. }, s) | (AttemptResult::Timeout, s) => {
            if case.idempotent {
                matches!(
                    s,
                    Surfaced::TimedOut | Surfaced::Status(408) | Surfaced::Status(503)
                )
            } else {
                s == Surfaced::Unknown || (s == Surfaced::Status(449) && pending_449)
            }
        }
        (AttemptResult::Status { status, .. }, Surfaced::Status(s)) => *status == s,
        _ => false,
    };
    if !ok {
        return v(
            "R3",
            format!(
                "op {}: the last attempt ended in {}, but the caller was told {}",
                case.op,
                attempt_words(&last.result),
                case.surfaced
            ),
            a.len() - 1,
        );
    }
    None
}

/// How an attempt ended, in words: `503`, `429 (retry after 20 ms)`, `a timeout`.
pub fn attempt_words(r: &AttemptResult) -> String {
    match r {
        AttemptResult::Status {
            status,
            retry_after_ms: Some(ms),
        } => format!("{status} (retry after {ms} ms)"),
        AttemptResult::Status { status, .. } => status.to_string(),
        AttemptResult::Timeout => "a timeout".into(),
        AttemptResult::NotSent => "not sent (connection refused)".into(),
        AttemptResult::Cancelled => "cancelled by the caller before an answer".into(),
    }
}

/// Judges every operation; the first violation, if any.
pub fn check_retries<'a>(
    rules: &RetryRules,
    cases: impl IntoIterator<Item = RetryCase<'a>>,
) -> Option<Violation> {
    cases.into_iter().find_map(|c| check_case(rules, &c))
}

// ---- R3's upper bound on the transport window's waits ---------------------------------

/// The share of a span left for clocks that run at another rate than true
/// time: a tenth. The SDK times its waits on the simulation's own timer, so
/// a correct SDK needs none of it; it is there for an SDK that would time
/// them on a node's clock, whose rate the fault plan bends (drift, and the
/// clock-rate faults, a few percent at most). Steps move a clock's reading,
/// not the length of a wait timed by a monotonic timer.
pub fn clock_slack_ns(ns: u64) -> u64 {
    ns / 10
}

/// The longest the SDK's timer may overshoot a wait: madsim's sleep wakes
/// at least 1 ms after it is asked, and the SDK waits at least 1 ms.
pub const TIMER_SLACK_NS: u64 = 2 * MS;

/// SPEC §4.1 rows 410 and 449, as the longest wait each retry of the
/// transport window may take: the first retry in the window is immediate;
/// after that a 410 (or a read's timeout, or a refused connect, which the
/// transport retries as a 410, row 408) waits its backoff, 1 s doubling to a 15 s cap, and a 449
/// waits 10 ms doubling plus a salt of at most 4 ms, to a 1 s cap; each cut
/// to what is left of the window, so never longer than these.
#[derive(Clone, Copy, Debug, Default)]
pub struct WindowSchedule {
    /// The window has retried once (its first retry was immediate).
    retried: bool,
    /// 410 backoffs the window has used.
    gone: u32,
    /// 449 backoffs the window has used.
    retry_with: u32,
}

impl WindowSchedule {
    /// The longest wait SPEC §4.1 allows before the retry that follows an
    /// attempt that ended in `result`; `None` when `result` is not one the
    /// transport window retries. Counting every window answer of the
    /// operation, never starting a new window (one region: one window; a
    /// cross-region retry would start one, with shorter backoffs), can only
    /// overstate a backoff, never understate it.
    pub fn longest_wait(&mut self, result: &AttemptResult) -> Option<Duration> {
        let gone = match result {
            // A refused connect is a transport 410 (SPEC §4.1 row 408).
            AttemptResult::Status { status: 410, .. }
            | AttemptResult::Timeout
            | AttemptResult::NotSent => true,
            AttemptResult::Status { status: 449, .. } => false,
            _ => return None,
        };
        if !self.retried {
            self.retried = true;
            return Some(Duration::ZERO);
        }
        Some(if gone {
            let b = retry::GONE_INITIAL_BACKOFF
                .saturating_mul(1 << self.gone.min(16))
                .min(retry::GONE_MAX_BACKOFF);
            self.gone += 1;
            b
        } else {
            let b = (retry::RETRY_WITH_INITIAL_BACKOFF
                .saturating_mul(1 << self.retry_with.min(16))
                + Duration::from_millis(retry::RETRY_WITH_SALT_MS.1))
            .min(retry::RETRY_WITH_MAX_BACKOFF);
            self.retry_with += 1;
            b
        })
    }
}

/// How long `[from_ns, to_ns]` overlaps the spans in `spans` (disjoint).
pub fn overlap_ns(spans: &[(u64, u64)], from_ns: u64, to_ns: u64) -> u64 {
    spans
        .iter()
        .map(|&(a, b)| b.min(to_ns).saturating_sub(a.max(from_ns)))
        .sum()
}

/// The upper bounds of R2 and R3, from one operation's attempt log: every
/// wait after a 429 is at most what the server asked for (SPEC §4.2: its
/// `x-ms-retry-after-ms`, 5 s when 0 or missing), and every wait the SDK
/// inserted before a retry in the transport window is at most the backoff
/// the SPEC gives that retry (§4.1 rows 410 and 449, [`WindowSchedule`]);
/// each plus a tenth for clocks, the timer's 2 ms, and the
/// time the client's node spent paused during the wait (`paused`: its
/// paused spans, true ns), which stretches a correct SDK's wait. The log's
/// waits are what the SDK really waited, in true time; the lower bounds
/// are judged from the servers' side ([`ServerSideRules::check`]).
pub fn window_wait_overrun(
    op: u64,
    attempts: &[Attempt],
    paused: &[(u64, u64)],
) -> Option<Violation> {
    let mut schedule = WindowSchedule::default();
    for (i, w) in attempts.windows(2).enumerate() {
        let started_ns = w[1].sent_ns.saturating_sub(w[1].waited_ns);
        let paused_ns = overlap_ns(paused, started_ns, w[1].sent_ns);
        if let AttemptResult::Status {
            status: 429,
            retry_after_ms,
        } = w[0].result
        {
            let asked_ns = asked_wait_ms(retry_after_ms) * MS;
            let allowed_ns = asked_ns + clock_slack_ns(asked_ns) + TIMER_SLACK_NS + paused_ns;
            if w[1].waited_ns > allowed_ns {
                return Some(
                    Violation::new(
                        "R2",
                        format!(
                            "op {op}: the SDK waited {:.3} s before attempt {} after a 429 that asked for {:.3} s (SPEC §4.2: the wait is the server's retry-after, 5 s when 0 or missing){}",
                            w[1].waited_ns as f64 / 1e9,
                            i + 2,
                            asked_ns as f64 / 1e9,
                            if paused_ns > 0 {
                                format!("; its client was paused {:.3} s of it", paused_ns as f64 / 1e9)
                            } else {
                                String::new()
                            }
                        ),
                    )
                    .with_ops([op])
                    .with_evidence(attempts_account(op, attempts, i + 1)),
                );
            }
            continue;
        }
        let Some(longest) = schedule.longest_wait(&w[0].result) else {
            continue;
        };
        let longest_ns = longest.as_nanos() as u64;
        let allowed_ns = longest_ns + clock_slack_ns(longest_ns) + TIMER_SLACK_NS + paused_ns;
        if w[1].waited_ns > allowed_ns {
            return Some(Violation::new(
                "R3",
                format!(
                    "op {op}: the SDK waited {:.3} s before attempt {}, after attempt {} ended in {}; SPEC §4.1 (rows 410 and 449: the first retry at once, then 1 s doubling to 15 s after a 410 or a read's timeout, 10 ms doubling plus at most 4 ms to 1 s after a 449) allows at most {:.3} s there{}",
                    w[1].waited_ns as f64 / 1e9,
                    i + 2,
                    i + 1,
                    attempt_words(&w[0].result),
                    longest_ns as f64 / 1e9,
                    if paused_ns > 0 {
                        format!(" (plus the {:.3} s its client was paused)", paused_ns as f64 / 1e9)
                    } else {
                        String::new()
                    }
                ),
            )
            .with_ops([op])
            .with_evidence(attempts_account(op, attempts, i + 1)));
        }
    }
    None
}

// ---- The servers' side ------------------------------------------------------------------
