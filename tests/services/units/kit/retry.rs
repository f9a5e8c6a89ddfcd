//! Tests of `overcast_scenarios::kit::retry`.
use overcast_scenarios::kit::retry::*;
use overcast_sim::check::Violation;
use overcast_sim::history::{Attempt, AttemptResult};

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
    judged(idempotent, attempts, surfaced, None)
}

/// [`case`] for a call its caller cancelled at `cancel_ms`.
fn cancelled_case(
    idempotent: bool,
    attempts: &[Attempt],
    surfaced: Surfaced,
    cancel_ms: u64,
) -> Option<Violation> {
    judged(idempotent, attempts, surfaced, Some(cancel_ms * 1_000_000))
}

/// One operation's attempts judged by the default rules.
fn judged(
    idempotent: bool,
    attempts: &[Attempt],
    surfaced: Surfaced,
    cancel_ns: Option<u64>,
) -> Option<Violation> {
    check_case(
        &RetryRules::default(),
        &RetryCase {
            op: 1,
            idempotent,
            attempts,
            surfaced,
            cancel_ns,
        },
    )
}

/// An attempt sent at `sent_ms`, after a wait of `waited_ms`.
fn sent_at(sent_ms: u64, waited_ms: u64, result: AttemptResult) -> Attempt {
    Attempt {
        sent_ns: sent_ms * 1_000_000,
        waited_ns: waited_ms * 1_000_000,
        result,
    }
}

#[test]
fn r1_a_write_never_sent_may_be_re_sent_and_ends_as_the_410_window_does() {
    let a = [
        at(0, AttemptResult::NotSent),
        at(0, AttemptResult::NotSent),
        at(1000, st(201)),
    ];
    assert!(case(false, &a, Surfaced::Status(201)).is_none());
    let spent = [at(0, AttemptResult::NotSent), at(0, AttemptResult::NotSent)];
    assert!(case(false, &spent, Surfaced::Status(503)).is_none());
    // Told its outcome is unknown: it never left the client (the seeded bug
    // `not_sent_taken_as_unknown`).
    let refused = [at(0, AttemptResult::NotSent)];
    let v = case(false, &refused, Surfaced::Unknown).expect("R3");
    assert_eq!(v.property, "R3");
    assert!(v.message.contains("not sent"), "{}", v.message);
}

#[test]
fn r1_nothing_is_sent_at_or_after_the_callers_cancel() {
    // Cancelled in flight: unknown, nothing after.
    let a = [sent_at(10, 0, AttemptResult::Cancelled)];
    assert!(cancelled_case(false, &a, Surfaced::Unknown, 500).is_none());
    // Cancelled while waiting after a 429: not run.
    let a = [sent_at(10, 0, throttled(1000))];
    assert!(cancelled_case(false, &a, Surfaced::CancelledNotRun, 500).is_none());
    // A read sent again after the cancel (the seeded bug `retry_after_cancel`).
    let a = [
        sent_at(10, 0, AttemptResult::Timeout),
        sent_at(500, 0, st(200)),
    ];
    let v = cancelled_case(true, &a, Surfaced::Status(200), 500).expect("R1");
    assert_eq!(v.property, "R1");
    assert!(v.message.contains("cancelled"), "{}", v.message);
    // The same attempts with no cancel: a read's timeout is retried.
    assert!(case(true, &a, Surfaced::Status(200)).is_none());
}

#[test]
fn r3_a_cancelled_write_is_told_not_run_only_when_nothing_of_it_may_have_run() {
    let in_flight = [sent_at(10, 0, AttemptResult::Cancelled)];
    let v = cancelled_case(false, &in_flight, Surfaced::CancelledNotRun, 500).expect("R3");
    assert_eq!(v.property, "R3");
    // A cancel the call never asked for.
    let a = [sent_at(10, 0, throttled(1000))];
    assert_eq!(
        case(false, &a, Surfaced::CancelledNotRun).map(|v| v.property),
        Some("R3".into())
    );
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
