//! Retry discipline (SPEC §4.5, R1–R3), judged from the attempt log of each
//! operation: no blind re-send of a non-idempotent write after a timeout, the
//! 429 budget and the server's retry-after honoured, the right status surfaced.

use overcast_sim::check::Violation;
use overcast_sim::history::{Attempt, AttemptResult};

/// The wait after a 429 whose retry-after is 0 or missing (SPEC §4.2).
pub const DEFAULT_RETRY_AFTER_MS: u64 = 5_000;

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

fn is_timeout(r: &AttemptResult) -> bool {
    matches!(
        r,
        AttemptResult::Timeout | AttemptResult::Status { status: 408, .. }
    )
}

/// Judges one operation; the first broken rule, if any.
pub fn check_case(rules: &RetryRules, case: &RetryCase<'_>) -> Option<Violation> {
    let v = |property: &str, message: String| {
        Some(Violation {
            property: property.into(),
            message,
            ops: vec![case.op],
        })
    };
    let a = case.attempts;
    // R1: a non-idempotent write is never re-sent after a timeout or 408.
    if !case.idempotent {
        if let Some(i) = a.iter().position(|x| is_timeout(&x.result)) {
            if i + 1 < a.len() {
                return v(
                    "R1",
                    format!(
                        "op {}: a write was re-sent (attempt {}) after attempt {} ended in {}; its outcome was unknown, so the re-send may apply it twice",
                        case.op,
                        i + 2,
                        i + 1,
                        describe(&a[i].result)
                    ),
                );
            }
        }
    }
    // R2: the 429 budget, and each delay at least the server's retry-after.
    let mut throttled_retries = 0u32;
    let mut throttled_wait_ms = 0u64;
    for w in a.windows(2) {
        if let AttemptResult::Status {
            status: 429,
            retry_after_ms,
        } = w[0].result
        {
            throttled_retries += 1;
            let waited_ms = w[1].waited_ns / 1_000_000;
            throttled_wait_ms += waited_ms;
            // SPEC §4.2: a retry-after of 0, or none, means 5 s.
            let asked = match retry_after_ms {
                Some(ms) if ms > 0 => ms,
                _ => DEFAULT_RETRY_AFTER_MS,
            };
            if waited_ms < asked {
                return v(
                    "R2",
                    format!(
                        "op {}: retried {waited_ms} ms after a 429 that asked for {asked} ms",
                        case.op
                    ),
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
        );
    }
    if throttled_wait_ms > rules.max_rate_limited_wait_ms {
        return v(
            "R2",
            format!(
                "op {}: waited {throttled_wait_ms} ms in all on 429s, over the budget of {} ms",
                case.op, rules.max_rate_limited_wait_ms
            ),
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
                "op {}: the last attempt ended in {}, but the caller was told {:?}",
                case.op,
                describe(&last.result),
                case.surfaced
            ),
        );
    }
    None
}

fn describe(r: &AttemptResult) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn at(waited_ms: u64, result: AttemptResult) -> Attempt {
        Attempt {
            sent_ns: 0,
            waited_ns: waited_ms * 1_000_000,
            result,
        }
    }
    fn st(status: u16) -> AttemptResult {
        AttemptResult::Status {
            status,
            retry_after_ms: None,
        }
    }
    fn throttled(ms: u64) -> AttemptResult {
        AttemptResult::Status {
            status: 429,
            retry_after_ms: Some(ms),
        }
    }
    fn case(idempotent: bool, attempts: &[Attempt], surfaced: Surfaced) -> Option<Violation> {
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

    #[test]
    fn r3_follows_the_spec_wording_for_read_timeouts_and_a_pending_449() {
        // A read whose timeouts ran out the transport window surfaces 503.
        let r = [
            at(0, AttemptResult::Timeout),
            at(1000, AttemptResult::Timeout),
        ];
        assert_eq!(case(true, &r, Surfaced::Status(503)), None);
        assert_eq!(
            case(true, &r, Surfaced::Status(200)).unwrap().property,
            "R3"
        );
        // A last 410 with a 449 pending surfaces 449; without one, 449 is wrong.
        let w = [at(0, st(449)), at(10, st(410))];
        assert_eq!(case(false, &w, Surfaced::Status(449)), None);
        let g = [at(0, st(410)), at(10, st(410))];
        assert_eq!(
            case(false, &g, Surfaced::Status(449)).unwrap().property,
            "R3"
        );
    }
}
