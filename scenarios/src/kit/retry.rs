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
}

impl std::fmt::Display for Surfaced {
    /// What the caller was told, in words: `503`, `an unknown outcome`, `a timeout`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Surfaced::Status(s) => write!(f, "{s}"),
            Surfaced::Unknown => f.write_str("an unknown outcome"),
            Surfaced::TimedOut => f.write_str("a timeout"),
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
    let ok = match (&last.result, case.surfaced) {
        (AttemptResult::Status { status: 410, .. }, Surfaced::Status(s)) => {
            s == 503 || (s == 449 && pending_449)
        }
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
const TIMER_SLACK_NS: u64 = 2 * MS;

/// SPEC §4.1 rows 410 and 449, as the longest wait each retry of the
/// transport window may take: the first retry in the window is immediate;
/// after that a 410 (or a read's timeout, which the transport retries as a
/// 410, row 408) waits its backoff, 1 s doubling to a 15 s cap, and a 449
/// waits 10 ms doubling plus a salt of at most 4 ms, to a 1 s cap; each cut
/// to what is left of the window, so never longer than these.
#[derive(Clone, Copy, Debug, Default)]
struct WindowSchedule {
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
    fn longest_wait(&mut self, result: &AttemptResult) -> Option<Duration> {
        let gone = match result {
            AttemptResult::Status { status: 410, .. } | AttemptResult::Timeout => true,
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn at(waited_ms: u64, result: AttemptResult) -> Attempt {
        Attempt {
            sent_ns: 0,
            waited_ns: waited_ms * 1_000_000,
            result,
        }
    }
    pub(crate) fn st(status: u16) -> AttemptResult {
        AttemptResult::Status {
            status,
            retry_after_ms: None,
        }
    }
    pub(crate) fn throttled(ms: u64) -> AttemptResult {
        AttemptResult::Status {
            status: 429,
            retry_after_ms: Some(ms),
        }
    }
    pub(crate) fn case(
        idempotent: bool,
        attempts: &[Attempt],
        surfaced: Surfaced,
    ) -> Option<Violation> {
        check_case(
            &RetryRules::default(),
            &RetryCase {
                op: 1,
                idempotent,
                attempts,
                surfaced,
            },
        )
    }

    #[test]
    fn a_clean_retry_sequence_passes() {
        let a = [
            at(0, throttled(100)),
            at(100, st(449)),
            at(0, st(503)),
            at(0, st(200)),
        ];
        assert_eq!(case(false, &a, Surfaced::Status(200)), None);
        let r = [at(0, AttemptResult::Timeout), at(1000, st(200))];
        assert_eq!(case(true, &r, Surfaced::Status(200)), None);
        let w = [at(0, AttemptResult::Timeout)];
        assert_eq!(case(false, &w, Surfaced::Unknown), None);
    }

    #[test]
    fn r1_write_resent_after_timeout() {
        let a = [at(0, AttemptResult::Timeout), at(0, st(201))];
        assert_eq!(
            case(false, &a, Surfaced::Status(201)).unwrap().property,
            "R1"
        );
        let b = [at(0, st(408)), at(0, st(201))];
        assert_eq!(
            case(false, &b, Surfaced::Status(201)).unwrap().property,
            "R1"
        );
    }

    #[test]
    fn r2_budget_and_retry_after() {
        let early = [at(0, throttled(500)), at(100, st(200))];
        assert_eq!(
            case(true, &early, Surfaced::Status(200)).unwrap().property,
            "R2"
        );
        let many: Vec<Attempt> = (0..11)
            .map(|i| at(if i == 0 { 0 } else { 10 }, throttled(10)))
            .collect();
        assert_eq!(
            case(true, &many, Surfaced::Status(429)).unwrap().property,
            "R2"
        );
        let long = [
            at(0, throttled(20_000)),
            at(20_000, throttled(20_000)),
            at(20_000, st(200)),
        ];
        assert_eq!(
            case(true, &long, Surfaced::Status(200)).unwrap().property,
            "R2"
        );
        let ten: Vec<Attempt> = (0..10)
            .map(|i| at(if i == 0 { 0 } else { 10 }, throttled(10)))
            .collect();
        assert_eq!(case(true, &ten, Surfaced::Status(429)), None);
    }

    #[test]
    fn r2_counts_the_delays_asked_not_the_time_a_paused_client_waited() {
        // Occ throttled seed 538: six 429s asking 5 s (30 s, the whole
        // budget), one of the waits stretched by a pause of the client.
        let mut paused: Vec<Attempt> = (0..7)
            .map(|i| at(if i == 0 { 0 } else { 5_000 }, throttled(5_000)))
            .collect();
        paused[3].waited_ns = 5_320 * MS;
        assert_eq!(case(true, &paused, Surfaced::Status(429)), None);
        // A seventh 5 s delay would ask for 35 s: over the budget.
        let over: Vec<Attempt> = (0..8)
            .map(|i| at(if i == 0 { 0 } else { 5_000 }, throttled(5_000)))
            .collect();
        let v = case(true, &over, Surfaced::Status(429)).unwrap();
        assert_eq!(v.property, "R2");
        assert!(v.message.contains("35000 ms"), "{}", v.message);
    }

    #[test]
    fn r3_the_last_status_is_surfaced() {
        let a = [at(0, throttled(10)), at(10, throttled(10))];
        assert_eq!(
            case(true, &a, Surfaced::Status(503)).unwrap().property,
            "R3"
        );
        let g = [at(0, st(410)), at(0, st(410))];
        assert_eq!(case(true, &g, Surfaced::Status(503)), None);
        assert_eq!(
            case(true, &g, Surfaced::Status(410)).unwrap().property,
            "R3"
        );
        let w = [at(0, AttemptResult::Timeout)];
        assert_eq!(
            case(false, &w, Surfaced::Status(408)).unwrap().property,
            "R3"
        );
    }

    #[test]
    fn r2_holds_a_429_without_retry_after_to_the_5_s_default() {
        // Retried 10 ms after the 429.
        let quick = |after: Option<u64>| {
            [
                at(
                    0,
                    AttemptResult::Status {
                        status: 429,
                        retry_after_ms: after,
                    },
                ),
                at(10, st(200)),
            ]
        };
        for after in [None, Some(0)] {
            assert_eq!(
                case(false, &quick(after), Surfaced::Status(200))
                    .unwrap()
                    .property,
                "R2",
                "{after:?}"
            );
        }
        assert_eq!(case(false, &quick(Some(5)), Surfaced::Status(200)), None);
    }

    /// An attempt sent at `sent_ms` after waiting `waited_ms`.
    pub(crate) fn sent(sent_ms: u64, waited_ms: u64, result: AttemptResult) -> Attempt {
        Attempt {
            sent_ns: sent_ms * MS,
            waited_ns: waited_ms * MS,
            result,
        }
    }

    /// A read answered 410 every time, whose waits are `waits_ms` (the
    /// first attempt waits nothing); each answer comes 2 ms after its send.
    pub(crate) fn gone_waits(waits_ms: &[u64]) -> Vec<Attempt> {
        let mut t = 0;
        let mut a = vec![sent(0, 0, st(410))];
        for &w in waits_ms {
            t += 2 + w;
            a.push(sent(t, w, st(410)));
        }
        a
    }

    #[test]
    fn r3_upper_bound_waits_in_the_window_keep_the_spec_schedule() {
        // SPEC §4.1 row 410: at once, then 1, 2, 4, 8 s, then 15 s (the cap).
        let within = gone_waits(&[0, 1000, 2000, 4000, 8000, 15_000, 15_000]);
        assert_eq!(window_wait_overrun(1, &within, &[]), None);
        // A timer that wakes a millisecond late, and a wait cut short by the
        // window's end, are within it too.
        let late = gone_waits(&[1, 1001, 2001, 3000]);
        assert_eq!(window_wait_overrun(1, &late, &[]), None);
        // The 410 backoff capped with `max` for `min` (mutant M18): 15 s
        // after the first 1 s wait, where the SPEC allows 2 s.
        let capped = gone_waits(&[0, 1000, 15_000, 15_000]);
        let v = window_wait_overrun(7, &capped, &[]).unwrap();
        assert_eq!(v.property, "R3");
        assert_eq!(v.ops, vec![7]);
        assert!(v.message.contains("attempt 4"), "{}", v.message);
        assert!(v.message.contains("at most 2.000 s"), "{}", v.message);
        // The first retry in the window is immediate: 1 s there is too long.
        let slow_first = gone_waits(&[1000]);
        assert_eq!(
            window_wait_overrun(1, &slow_first, &[]).unwrap().property,
            "R3"
        );
        // A cap above 15 s: 16.5 s is more than 15 s and its tenth.
        let cap = gone_waits(&[0, 1000, 2000, 4000, 8000, 16_600]);
        assert_eq!(window_wait_overrun(1, &cap, &[]).unwrap().property, "R3");
    }

    #[test]
    fn r3_upper_bound_a_paused_client_may_wait_longer() {
        // The second backoff (2 s) stretched by a 1.5 s pause of the client.
        let a = gone_waits(&[0, 1000, 3500]);
        let start = a[3].sent_ns - a[3].waited_ns;
        let pause = [(start + 100 * MS, start + 1600 * MS)];
        assert_eq!(window_wait_overrun(1, &a, &pause), None);
        // A pause outside the wait excuses nothing.
        let before = [(0, start)];
        assert_eq!(window_wait_overrun(1, &a, &before).unwrap().property, "R3");
    }

    #[test]
    fn r3_upper_bound_449_timeouts_and_other_answers() {
        // 449: at once, then 10 ms, 20 ms, 40 ms plus a salt of 1-4 ms.
        let w = [
            sent(0, 0, st(449)),
            sent(3, 0, st(449)),
            sent(17, 12, st(449)),
            sent(43, 24, st(449)),
            sent(90, 44, st(201)),
        ];
        assert_eq!(window_wait_overrun(1, &w, &[]), None);
        // The 449 backoff is capped at 1 s: 2 s breaks it.
        let mut long = w.to_vec();
        long[4].waited_ns = 2000 * MS;
        assert_eq!(window_wait_overrun(1, &long, &[]).unwrap().property, "R3");
        // A read's timeout is retried as a 410: the second wait at most 1 s.
        let t = [
            sent(0, 0, AttemptResult::Timeout),
            sent(6000, 0, AttemptResult::Timeout),
            sent(15_000, 3000, st(200)),
        ];
        assert_eq!(window_wait_overrun(1, &t, &[]).unwrap().property, "R3");
        // A 429's wait is the retry-after's, not the window's (R2 judges it).
        let r = [sent(0, 0, throttled(5000)), sent(5002, 5000, st(200))];
        assert_eq!(window_wait_overrun(1, &r, &[]), None);
    }

    #[test]
    fn r2_upper_bound_a_429_wait_is_at_most_the_retry_after() {
        // 70 ms asked and waited: quiet; ten times that: R2.
        let r = [sent(0, 0, throttled(70)), sent(72, 70, st(200))];
        assert_eq!(window_wait_overrun(1, &r, &[]), None);
        let stretched = [sent(0, 0, throttled(70)), sent(702, 700, st(200))];
        assert_eq!(
            window_wait_overrun(1, &stretched, &[]).unwrap().property,
            "R2"
        );
        // No retry-after: the 5 s default bounds it; 50 s is too long.
        let none = |waited| {
            [
                sent(
                    0,
                    0,
                    AttemptResult::Status {
                        status: 429,
                        retry_after_ms: None,
                    },
                ),
                sent(waited + 2, waited, st(200)),
            ]
        };
        assert_eq!(window_wait_overrun(1, &none(5000), &[]), None);
        assert_eq!(
            window_wait_overrun(1, &none(50_000), &[]).unwrap().property,
            "R2"
        );
        // A client paused during the wait may wait that much longer.
        assert_eq!(
            window_wait_overrun(1, &stretched, &[(10 * MS, 700 * MS)]),
            None
        );
    }
}
