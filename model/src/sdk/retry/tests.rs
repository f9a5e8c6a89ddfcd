//! Tests of the SDK retry policy, row by row of SPEC §4.1–§4.3.
//!
//! Long because it is the policy's table: a test per row of SPEC §4.1–§4.3
//! and per case the real SDK's own tests pin.

use super::*;
use proptest::prelude::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// The seeded bug `retry_write_after_timeout` alone.
fn write_after_timeout() -> ModelBugs {
    ModelBugs {
        retry_write_after_timeout: true,
        ..ModelBugs::default()
    }
}

#[test]
fn bug_retry_with_on_gone_backoff_waits_seconds_for_a_449() {
    let bugs = ModelBugs {
        retry_with_on_gone_backoff: true,
        ..ModelBugs::default()
    };
    let mut right = state(OpKind::Read);
    let mut wrong = RetryState::new(OpKind::Read, RetryOptions::default(), bugs);
    let s449 = AttemptOutcome::status(449);
    for s in [&mut right, &mut wrong] {
        assert_eq!(s.on_attempt(&s449, 0.0), retry(Duration::ZERO));
    }
    // 10 ms and a 1 ms salt, then 20 ms and the salt; the bug: 1 s, 2 s.
    assert_eq!(right.on_attempt(&s449, 0.0), retry(ms(11)));
    assert_eq!(right.on_attempt(&s449, 0.0), retry(ms(21)));
    assert_eq!(wrong.on_attempt(&s449, 0.0), retry(secs(1)));
    assert_eq!(wrong.on_attempt(&s449, 0.0), retry(secs(2)));
    // A 410's backoff is the same with the bug or without it.
    let gone = AttemptOutcome::status(410);
    let mut plain = state(OpKind::Read);
    let mut buggy = RetryState::new(OpKind::Read, RetryOptions::default(), bugs);
    for _ in 0..4 {
        assert_eq!(plain.on_attempt(&gone, 0.0), buggy.on_attempt(&gone, 0.0));
    }
}

/// The waits a policy asks for after each of `answers`, until it stops retrying.
fn waits_after(mut s: RetryState, answers: &[AttemptOutcome]) -> Vec<Duration> {
    answers
        .iter()
        .map_while(|a| match s.on_attempt(a, 0.0) {
            Decision::Retry { after, .. } => Some(after),
            Decision::Done(_) => None,
        })
        .collect()
}

#[test]
fn the_tenfold_wait_slips_stretch_their_rows_only() {
    let with = |bug: &str| {
        let mut bugs = ModelBugs::default();
        assert!(bugs.set(bug));
        bugs
    };
    let read = |bugs| RetryState::new(OpKind::Read, RetryOptions::default(), bugs);
    let gone = vec![AttemptOutcome::status(410); 3];
    let session =
        vec![AttemptOutcome::with_sub_status(404, sub_status::READ_SESSION_NOT_AVAILABLE); 3];
    let failover = vec![AttemptOutcome::with_sub_status(403, 3); 2];
    let none = ModelBugs::default();
    assert_eq!(waits_after(read(none), &gone), [secs(0), secs(1), secs(2)]);
    assert_eq!(
        waits_after(read(with("gone_backoff_stretched")), &gone),
        [secs(0), secs(10), secs(20)]
    );
    assert_eq!(waits_after(read(none), &session), [ms(0), ms(5), ms(25)]);
    assert_eq!(
        waits_after(read(with("session_loop_waits_stretched")), &session),
        [ms(0), ms(50), ms(250)]
    );
    assert_eq!(waits_after(read(none), &failover), [secs(1), secs(1)]);
    assert_eq!(
        waits_after(read(with("failover_waits_stretched")), &failover),
        [secs(10), secs(10)]
    );
    assert_eq!(
        waits_after(read(with("read_fails_over_at_once")), &failover),
        [secs(0), secs(1)]
    );
    // Each slip leaves the other rows as they were.
    for bug in [
        "gone_backoff_stretched",
        "session_loop_waits_stretched",
        "failover_waits_stretched",
        "read_fails_over_at_once",
    ] {
        let rows = [&gone, &session, &failover];
        let moved = rows
            .iter()
            .filter(|r| waits_after(read(with(bug)), r) != waits_after(read(none), r))
            .count();
        assert_eq!(moved, 1, "{bug}");
    }
}

fn state(kind: OpKind) -> RetryState {
    RetryState::new(kind, RetryOptions::default(), ModelBugs::default())
}

fn regions(kind: OpKind, preferred_regions: u32, multi_write: bool) -> RetryState {
    let options = RetryOptions {
        preferred_regions,
        multi_write,
        ..RetryOptions::default()
    };
    RetryState::new(kind, options, ModelBugs::default())
}

fn throttled(retry_after: Option<Duration>) -> AttemptOutcome {
    AttemptOutcome::Response {
        status: 429,
        sub_status: sub_status::NONE,
        retry_after,
    }
}

fn gone(sub: u32) -> AttemptOutcome {
    AttemptOutcome::with_sub_status(410, sub)
}

fn done(status: u16) -> Decision {
    Decision::Done(FinalOutcome::Response { status })
}

fn unknown(status: u16) -> Decision {
    Decision::Done(FinalOutcome::Unknown { status })
}

fn retry(after: Duration) -> Decision {
    Decision::Retry {
        after,
        route: Route::Same,
    }
}

/// An immediate retry on the next preferred region.
fn next_region() -> Decision {
    Decision::Retry {
        after: Duration::ZERO,
        route: Route::NextPreferred,
    }
}

/// Feeds `outcome` until Done; returns the delays asked for and the final decision.
fn run_until_done(s: &mut RetryState, outcome: &AttemptOutcome) -> (Vec<Duration>, Decision) {
    let mut delays = Vec::new();
    for _ in 0..1_000 {
        match s.on_attempt(outcome, 0.5) {
            Decision::Retry { after, .. } => delays.push(after),
            d @ Decision::Done(_) => return (delays, d),
        }
    }
    panic!("no Done after 1000 attempts");
}

#[test]
fn defaults_match_the_sdk_on_a_single_region_single_write_account() {
    let o = RetryOptions::default();
    assert_eq!(o.max_rate_limited_retries, 9);
    assert_eq!(o.max_rate_limited_wait, secs(30));
    assert_eq!(o.request_timeout, secs(6));
    assert_eq!(o.max_service_unavailable_retries, 1);
    assert_eq!(o.gone_window, secs(30));
    assert_eq!(o.retry_with_window, secs(30));
    assert_eq!(o.preferred_regions, 1);
    assert!(!o.multi_write);
}

#[test]
fn options_saved_before_the_region_fields_still_load() {
    // An older scenario file: the read-timeout fields it has are ignored, the region
    // fields it lacks take their defaults.
    let old = r#"{"max_rate_limited_retries":9,"max_rate_limited_wait":{"secs":30,"nanos":0},
        "request_timeout":{"secs":6,"nanos":0},"max_read_timeout_retries":3,
        "read_timeout_retry_delay":{"secs":1,"nanos":0},"max_service_unavailable_retries":1,
        "gone_window":{"secs":30,"nanos":0},"retry_with_window":{"secs":30,"nanos":0}}"#;
    let o: RetryOptions = serde_json::from_str(old).unwrap();
    assert_eq!(o, RetryOptions::default());
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
fn spec_4_2_throttle_delay_is_retry_after_or_five_seconds_when_zero_or_missing() {
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
    let mut s = RetryState::new(OpKind::Read, options, ModelBugs::default());
    assert_eq!(s.on_attempt(&throttled(Some(ms(1))), 0.0), done(429));
}

// ---- 449 (SPEC §4.1 row 449) ----------------------------------------------------------

#[test]
fn spec_4_1_row_449_backoff_doubles_with_a_salt_of_one_to_four_ms_and_caps_at_one_second() {
    let mut s = state(OpKind::Write);
    let o = AttemptOutcome::status(449);
    assert_eq!(s.on_attempt(&o, 0.9), retry(Duration::ZERO));
    assert_eq!(s.on_attempt(&o, 0.0), retry(ms(11)));
    assert_eq!(s.on_attempt(&o, 0.5), retry(ms(23)));
    assert_eq!(s.on_attempt(&o, 0.999), retry(ms(44)));
    let mut last = Duration::ZERO;
    loop {
        match s.on_attempt(&o, 0.999_999) {
            Decision::Retry { after, .. } => {
                assert!(after <= secs(1));
                last = after;
            }
            d => {
                // SPEC §4.1 row 449: when the window runs out the caller sees 449.
                assert_eq!(d, done(449));
                break;
            }
        }
    }
    // the last backoff is cut to what was left of the window
    assert!(last < secs(1), "{last:?}");
    assert_eq!(s.cumulative_delay(), secs(30));
}

#[test]
fn spec_4_1_row_449_salt_is_a_whole_one_to_four_ms_and_jitter_is_clamped() {
    let mut seen = Vec::new();
    for jitter in [
        0.0,
        0.25,
        0.5,
        0.75,
        0.999_999_999,
        1.0,
        7.0,
        -3.0,
        f64::NAN,
    ] {
        let mut s = state(OpKind::Write);
        let o = AttemptOutcome::status(449);
        s.on_attempt(&o, jitter);
        let Decision::Retry { after, .. } = s.on_attempt(&o, jitter) else {
            panic!("449 not retried");
        };
        let salt = after - ms(10);
        assert!(salt >= ms(1) && salt <= ms(4), "{jitter}: {after:?}");
        assert_eq!(salt.subsec_nanos() % 1_000_000, 0, "whole ms: {after:?}");
        seen.push(salt.as_millis());
    }
    assert_eq!(seen, vec![1, 2, 3, 4, 4, 4, 4, 1, 1]);
}

#[test]
fn spec_4_1_row_449_a_pending_449_wins_over_interleaved_410s() {
    // 449 then only 410s: when the shared window runs out the caller sees 449, not 503.
    let mut s = state(OpKind::Write);
    assert_eq!(
        s.on_attempt(&AttemptOutcome::status(449), 0.0),
        retry(Duration::ZERO)
    );
    let (delays, last) = run_until_done(&mut s, &gone(sub_status::NONE));
    assert_eq!(last, done(449));
    // the 410s used their own backoff: 1 s doubling, cut at the window's end
    assert_eq!(delays, [1, 2, 4, 8, 15].map(secs).to_vec());
    assert_eq!(s.cumulative_delay(), secs(30));
    // 410s first, one 449 among them at the end of the window: still 449.
    let mut s = state(OpKind::Write);
    for _ in 0..6 {
        assert!(matches!(
            s.on_attempt(&gone(sub_status::NONE), 0.0),
            Decision::Retry { .. }
        ));
    }
    assert_eq!(s.on_attempt(&AttemptOutcome::status(449), 0.0), done(449));
}

// ---- 410 (SPEC §4.1 row 410, R3) -------------------------------------------------------

#[test]
fn r3_gone_becomes_503_after_the_window() {
    for kind in [OpKind::Read, OpKind::Write] {
        for sub in [
            sub_status::NONE,
            sub_status::COMPLETING_SPLIT,
            sub_status::COMPLETING_PARTITION_MIGRATION,
        ] {
            let mut s = state(kind);
            let (delays, last) = run_until_done(&mut s, &gone(sub));
            assert_eq!(
                delays,
                vec![Duration::ZERO, secs(1), secs(2), secs(4), secs(8), secs(15)]
            );
            assert_eq!(last, done(503));
            assert_eq!(s.cumulative_delay(), secs(30));
            assert_eq!(s.attempts(), 7);
        }
    }
}

#[test]
fn gone_backoff_caps_at_fifteen_seconds() {
    let options = RetryOptions {
        gone_window: secs(100),
        ..RetryOptions::default()
    };
    let mut s = RetryState::new(OpKind::Read, options, ModelBugs::default());
    let (delays, last) = run_until_done(&mut s, &gone(sub_status::NONE));
    assert_eq!(&delays[..7], &[0, 1, 2, 4, 8, 15, 15].map(secs)[..]);
    assert!(delays.iter().all(|d| *d <= secs(15)));
    assert_eq!(last, done(503));
    assert_eq!(s.cumulative_delay(), secs(100));
}

#[test]
fn gone_then_success() {
    let mut s = state(OpKind::Write);
    assert_eq!(
        s.on_attempt(&gone(sub_status::NONE), 0.0),
        retry(Duration::ZERO)
    );
    assert_eq!(s.on_attempt(&gone(sub_status::NONE), 0.0), retry(secs(1)));
    assert_eq!(s.on_attempt(&AttemptOutcome::status(201), 0.0), done(201));
}

#[test]
fn spec_4_1_row_410_sub_status_1000_is_retried_twice_and_the_third_is_503() {
    for kind in [OpKind::Read, OpKind::Write] {
        let mut s = state(kind);
        let stale = gone(sub_status::NAME_CACHE_IS_STALE);
        let (delays, last) = run_until_done(&mut s, &stale);
        assert_eq!((delays, last), (vec![Duration::ZERO, secs(1)], done(503)));
        assert_eq!(s.attempts(), 3);
        // other 410s between them do not reset the count
        let mut s = state(kind);
        assert_eq!(s.on_attempt(&stale, 0.0), retry(Duration::ZERO));
        assert_eq!(s.on_attempt(&gone(sub_status::NONE), 0.0), retry(secs(1)));
        assert_eq!(s.on_attempt(&stale, 0.0), retry(secs(2)));
        assert_eq!(s.on_attempt(&stale, 0.0), done(503));
    }
}

#[test]
fn spec_4_1_row_410_sub_status_1022_is_503_at_once() {
    for kind in [OpKind::Read, OpKind::Write] {
        let mut s = state(kind);
        assert_eq!(
            s.on_attempt(&gone(sub_status::LEASE_NOT_FOUND), 0.0),
            done(503)
        );
        assert_eq!(s.attempts(), 1);
    }
    // then the cross-region 503 rule: with two regions a read gets one more try
    let mut s = regions(OpKind::Read, 2, false);
    assert_eq!(
        s.on_attempt(&gone(sub_status::LEASE_NOT_FOUND), 0.0),
        next_region()
    );
    assert_eq!(
        s.on_attempt(&gone(sub_status::LEASE_NOT_FOUND), 0.0),
        done(503)
    );
}

#[test]
fn spec_4_1_row_410_sub_status_1002_reaches_point_operations_as_a_split_and_is_retried() {
    // Not a transport retry of 1002 itself: the point operation sees 410/1007, which is
    // retried in the window like any 410, and never surfaces as 410 (R6).
    for kind in [OpKind::Read, OpKind::Write] {
        let mut s = state(kind);
        let range_gone = gone(sub_status::PARTITION_KEY_RANGE_GONE);
        assert_eq!(s.on_attempt(&range_gone, 0.0), retry(Duration::ZERO));
        assert_eq!(s.on_attempt(&AttemptOutcome::status(200), 0.0), done(200));
        let mut split = state(kind);
        let mut s = state(kind);
        assert_eq!(
            run_until_done(&mut s, &range_gone),
            run_until_done(&mut split, &gone(sub_status::COMPLETING_SPLIT))
        );
        assert_eq!(s.finished(), Some(&FinalOutcome::Response { status: 503 }));
    }
}

// ---- 408 and transport timeouts (SPEC §4.1 row 408, §4.3, R1) ------------------------

#[test]
fn spec_4_1_row_408_a_server_408_is_never_retried_reads_included() {
    let mut s = state(OpKind::Read);
    assert_eq!(s.on_attempt(&AttemptOutcome::status(408), 0.0), done(408));
    assert_eq!(s.attempts(), 1);
    // a write's 408 may come after it ran: outcome unknown
    let mut s = state(OpKind::Write);
    assert_eq!(
        s.on_attempt(&AttemptOutcome::status(408), 0.0),
        unknown(408)
    );
    // also after other retries
    let mut s = state(OpKind::Read);
    assert_eq!(s.on_attempt(&throttled(Some(ms(5))), 0.0), retry(ms(5)));
    assert_eq!(s.on_attempt(&AttemptOutcome::status(408), 0.0), done(408));
}

#[test]
fn spec_4_1_row_408_read_timeouts_become_410s_inside_the_window_then_503() {
    // Each timeout uses up the 6 s request timeout of the window: 6 | +0 | 6 + 1 | 6 + 2 |
    // 6 + 3 (cut: 30 - 27) | 6 → the window is used up: 503.
    let mut s = state(OpKind::Read);
    let (delays, last) = run_until_done(&mut s, &AttemptOutcome::Timeout);
    assert_eq!(delays, [0, 1, 2, 3].map(secs).to_vec());
    assert_eq!(last, done(503));
    assert_eq!(s.attempts(), 5);
    // a timeout and 410s share the window and the backoff
    let mut s = state(OpKind::Read);
    assert_eq!(
        s.on_attempt(&AttemptOutcome::Timeout, 0.0),
        retry(Duration::ZERO)
    );
    assert_eq!(s.on_attempt(&gone(sub_status::NONE), 0.0), retry(secs(1)));
    assert_eq!(s.on_attempt(&AttemptOutcome::Timeout, 0.0), retry(secs(2)));
    assert_eq!(s.on_attempt(&AttemptOutcome::status(200), 0.0), done(200));
    assert_eq!(s.cumulative_delay(), secs(3));
}

#[test]
fn r1_a_write_that_timed_out_is_408_to_the_caller_with_an_unknown_outcome() {
    let mut s = state(OpKind::Write);
    assert_eq!(s.on_attempt(&AttemptOutcome::Timeout, 0.0), unknown(408));
    assert_eq!(s.attempts(), 1);
    // also after other retries
    let mut s = state(OpKind::Write);
    assert_eq!(s.on_attempt(&throttled(Some(ms(10))), 0.0), retry(ms(10)));
    assert_eq!(
        s.on_attempt(&gone(sub_status::NONE), 0.0),
        retry(Duration::ZERO)
    );
    assert_eq!(s.on_attempt(&AttemptOutcome::Timeout, 0.0), unknown(408));
}

#[test]
fn bug_retry_write_after_timeout_resends_writes() {
    let mut s = RetryState::new(
        OpKind::Write,
        RetryOptions::default(),
        write_after_timeout(),
    );
    assert_eq!(
        s.on_attempt(&AttemptOutcome::Timeout, 0.0),
        retry(Duration::ZERO)
    );
    assert_eq!(
        s.on_attempt(&AttemptOutcome::status(408), 0.0),
        retry(secs(1))
    );
    // the re-sent create finds its own first attempt: 409
    assert_eq!(s.on_attempt(&AttemptOutcome::status(409), 0.0), done(409));
    // when the window runs out, the outcome is still unknown
    let mut s = RetryState::new(
        OpKind::Write,
        RetryOptions::default(),
        write_after_timeout(),
    );
    let (delays, last) = run_until_done(&mut s, &AttemptOutcome::Timeout);
    assert_eq!(delays.len(), 4);
    assert_eq!(last, unknown(503));
    // the bug does not touch reads
    let mut s = RetryState::new(OpKind::Read, RetryOptions::default(), write_after_timeout());
    assert_eq!(s.on_attempt(&AttemptOutcome::status(408), 0.0), done(408));
}

// ---- 503 and 500 (SPEC §4.1 rows 503, 500) --------------------------------------------

#[test]
fn spec_4_1_row_503_with_one_region_reaches_the_caller_at_once() {
    for kind in [OpKind::Read, OpKind::Write] {
        let mut s = state(kind);
        assert_eq!(s.on_attempt(&AttemptOutcome::status(503), 0.0), done(503));
        assert_eq!(s.attempts(), 1);
    }
}

#[test]
fn spec_4_1_row_503_one_retry_on_the_next_region_for_reads_and_multi_write_writes() {
    let o = AttemptOutcome::status(503);
    for (kind, multi_write, retried) in [
        (OpKind::Read, false, true),
        (OpKind::Read, true, true),
        (OpKind::Write, false, false),
        (OpKind::Write, true, true),
    ] {
        let mut s = regions(kind, 2, multi_write);
        let (delays, last) = run_until_done(&mut s, &o);
        let expected = if retried {
            vec![Duration::ZERO]
        } else {
            vec![]
        };
        assert_eq!(
            (delays, last),
            (expected, done(503)),
            "{kind:?} {multi_write}"
        );
    }
    // the new region starts a new transport window: 410s after the retry get 30 s again
    let mut s = regions(OpKind::Read, 3, false);
    let (delays, last) = run_until_done(&mut s, &gone(sub_status::NONE));
    assert_eq!(last, done(503));
    assert_eq!(delays.len(), 6 + 1 + 6);
    assert_eq!(s.cumulative_delay(), secs(60));
}

#[test]
fn spec_4_1_row_503_a_transport_generated_503_on_a_sent_write_has_an_unknown_outcome() {
    for sub in [
        sub_status::TRANSPORT_GENERATED_503,
        sub_status::CHANNEL_CLOSED,
    ] {
        let o = AttemptOutcome::with_sub_status(503, sub);
        let mut s = state(OpKind::Write);
        assert_eq!(s.on_attempt(&o, 0.0), unknown(503));
        // a read's 503 is a plain 503
        let mut s = state(OpKind::Read);
        assert_eq!(s.on_attempt(&o, 0.0), done(503));
        // multi-write: re-sent on the next region (may apply twice, R1's exception);
        // a second 503 leaves the outcome unknown
        let mut s = regions(OpKind::Write, 2, true);
        assert_eq!(s.on_attempt(&o, 0.0), next_region());
        assert_eq!(
            s.on_attempt(&AttemptOutcome::status(503), 0.0),
            unknown(503)
        );
    }
}

#[test]
fn spec_4_1_row_500_reads_share_the_503_budget_with_two_regions() {
    let mut s = regions(OpKind::Read, 2, false);
    assert_eq!(
        s.on_attempt(&AttemptOutcome::status(500), 0.0),
        next_region()
    );
    assert_eq!(s.on_attempt(&AttemptOutcome::status(503), 0.0), done(503));
    let mut s = regions(OpKind::Write, 2, true);
    assert_eq!(s.on_attempt(&AttemptOutcome::status(500), 0.0), done(500));
}

#[test]
fn budgets_429_and_transport_are_independent() {
    let mut s = state(OpKind::Write);
    let seq = [
        throttled(Some(secs(10))),
        gone(sub_status::NONE),
        throttled(Some(secs(10))),
        AttemptOutcome::status(449),
        throttled(Some(secs(10))),
        gone(sub_status::NONE),
    ];
    let mut delays = Vec::new();
    for o in &seq {
        match s.on_attempt(o, 0.0) {
            Decision::Retry { after, .. } => delays.push(after),
            d => panic!("{o:?}: {d:?}"),
        }
    }
    // 429s wait their retry-after; the window's first retry is immediate, then the
    // 449 and 410 backoffs start at their own initial values.
    assert_eq!(
        delays,
        vec![
            secs(10),
            Duration::ZERO,
            secs(10),
            ms(11),
            secs(10),
            secs(1)
        ]
    );
    // 429 budget spent (30 s)
    assert_eq!(s.on_attempt(&throttled(Some(ms(1))), 0.0), done(429));
    assert_eq!(s.rate_limited_delay(), secs(30));
    assert_eq!(s.attempts(), 7);
}

#[test]
fn wire_roundtrip_with_bincode() {
    let mut s = state(OpKind::Write);
    s.on_attempt(&throttled(Some(ms(7))), 0.1);
    s.on_attempt(&AttemptOutcome::status(449), 0.1);
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
        1 => Just(AttemptOutcome::NotSent),
        6 => prop::sample::select(vec![
            200u16, 201, 204, 304, 400, 404, 408, 409, 410, 412, 449, 500, 503,
        ])
        .prop_map(AttemptOutcome::status),
        2 => prop::sample::select(vec![
            sub_status::NAME_CACHE_IS_STALE,
            sub_status::PARTITION_KEY_RANGE_GONE,
            sub_status::COMPLETING_SPLIT,
            sub_status::LEASE_NOT_FOUND,
        ])
        .prop_map(gone),
        1 => prop::sample::select(vec![
            sub_status::TRANSPORT_GENERATED_503,
            sub_status::CHANNEL_CLOSED,
        ])
        .prop_map(|sub| AttemptOutcome::with_sub_status(503, sub)),
    ]
}

fn arb_kind() -> impl Strategy<Value = OpKind> {
    prop_oneof![Just(OpKind::Read), Just(OpKind::Write)]
}

/// What the caller must see when `outcome` ends the operation (R3), on the default
/// single-region account without the bug; `None` when it depends on the earlier
/// attempts (a 410 or a timeout that ran the window out: 503, or 449 if one was pending).
fn expected_final(outcome: &AttemptOutcome, kind: OpKind) -> Option<FinalOutcome> {
    let response = |status| Some(FinalOutcome::Response { status });
    match (outcome, kind) {
        (AttemptOutcome::Timeout, OpKind::Write) => Some(FinalOutcome::Unknown { status: 408 }),
        (AttemptOutcome::Timeout, OpKind::Read) => None,
        // A transport 410: 503 when it runs the window out.
        (AttemptOutcome::NotSent, _) => None,
        (AttemptOutcome::Cancelled, _) => Some(FinalOutcome::Cancelled {
            effect: CancelledEffect::Unknown,
        }),
        (AttemptOutcome::Response { status: 408, .. }, OpKind::Write) => {
            Some(FinalOutcome::Unknown { status: 408 })
        }
        (
            AttemptOutcome::Response {
                status: 503,
                sub_status: 20003 | 20006,
                ..
            },
            OpKind::Write,
        ) => Some(FinalOutcome::Unknown { status: 503 }),
        (
            AttemptOutcome::Response {
                status: 410,
                sub_status: 1022,
                ..
            },
            _,
        ) => response(503),
        (
            AttemptOutcome::Response {
                status: 410 | 449, ..
            },
            _,
        ) => None,
        (AttemptOutcome::Response { status, .. }, _) => response(*status),
    }
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
        let bugs = if bug { write_after_timeout() } else { ModelBugs::default() };
        let mut s = RetryState::new(kind, o.clone(), bugs);
        let mut sum = Duration::ZERO;
        let mut sum_429 = Duration::ZERO;
        let mut retries_429 = 0u32;
        let mut window_sum = Duration::ZERO;
        let mut saw_449 = false;
        // cycle the sequence so that every run ends in Done
        let mut done = None;
        for (i, outcome) in outcomes.iter().cycle().enumerate().take(10_000) {
            let d = s.on_attempt(outcome, jitters[i % jitters.len()]);
            prop_assert_eq!(s.attempts() as usize, i + 1);
            saw_449 |= matches!(outcome, AttemptOutcome::Response { status: 449, .. });
            match d {
                Decision::Retry { after, .. } => {
                    sum += after;
                    let timeout = matches!(
                        outcome,
                        AttemptOutcome::Timeout | AttemptOutcome::Response { status: 408, .. }
                    );
                    // R1: no write re-sent after a timeout/408 without the bug
                    prop_assert!(!(timeout && kind == OpKind::Write && !bug));
                    // §4.1 row 408: a server 408 is never retried on a read
                    let server_408 =
                        matches!(outcome, AttemptOutcome::Response { status: 408, .. });
                    prop_assert!(!(kind == OpKind::Read && server_408));
                    // one region: a 503 and a 410/1022 are never retried
                    let unavailable = matches!(
                        outcome,
                        AttemptOutcome::Response { status: 503, .. }
                            | AttemptOutcome::Response { status: 410, sub_status: 1022, .. }
                    );
                    prop_assert!(!unavailable);
                    if let AttemptOutcome::Response { status: 429, retry_after, .. } = outcome {
                        retries_429 += 1;
                        sum_429 += after;
                        // R2: each delay ≥ the server's retry-after, 5 s if 0 or missing
                        let asked = retry_after.filter(|d| !d.is_zero()).unwrap_or(secs(5));
                        prop_assert_eq!(after, asked);
                    } else {
                        window_sum += after;
                    }
                }
                Decision::Done(f) => {
                    if !bug {
                        if let Some(expected) = expected_final(outcome, kind) {
                            prop_assert_eq!(&f, &expected);
                        } else {
                            // The window ran out: 449 if one came in it, else 503; or a
                            // third 410/1000: 503.
                            let allowed: &[FinalOutcome] = if saw_449 {
                                &[FinalOutcome::Response { status: 449 }, FinalOutcome::Response { status: 503 }]
                            } else {
                                &[FinalOutcome::Response { status: 503 }]
                            };
                            prop_assert!(allowed.contains(&f), "{:?} after {:?}", f, outcome);
                        }
                    }
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
        // the transport window bounds its delays (one region: one window)
        prop_assert!(window_sum <= o.gone_window.max(o.retry_with_window));
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
                Decision::Retry { after, .. } => {
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

// ---- the retry table, one case per row and sub-status (SPEC §4.1, §4.3) ----------------

/// One row of the table: the account, the operation, what the server answers attempt by
/// attempt, and what the policy must decide after each answer (its wait, its region, and
/// in the end the outcome the caller sees).
struct Case {
    row: &'static str,
    kind: OpKind,
    options: RetryOptions,
    answers: Vec<AttemptOutcome>,
    decisions: Vec<Decision>,
}

fn case(
    row: &'static str,
    kind: OpKind,
    (preferred_regions, multi_write): (u32, bool),
    answers: Vec<AttemptOutcome>,
    decisions: Vec<Decision>,
) -> Case {
    Case {
        row,
        kind,
        options: RetryOptions {
            preferred_regions,
            multi_write,
            ..RetryOptions::default()
        },
        answers,
        decisions,
    }
}

/// The multi-region client's account: `preferred_regions` regions, single-write, a read's
/// timeout a failover (`read_timeout_fails_over`), and the failover wait scaled to 100 ms.
fn region_client_case(
    row: &'static str,
    kind: OpKind,
    preferred_regions: u32,
    answers: Vec<AttemptOutcome>,
    decisions: Vec<Decision>,
) -> Case {
    let mut c = case(row, kind, (preferred_regions, false), answers, decisions);
    c.options.read_timeout_fails_over = true;
    c.options.failover_wait = ms(100);
    c
}

fn to(after: Duration, route: Route) -> Decision {
    Decision::Retry { after, route }
}

const ONE_REGION: (u32, bool) = (1, false);
const TWO_REGIONS: (u32, bool) = (2, false);
const MULTI_WRITE: (u32, bool) = (2, true);

/// The session loop in one region: the waits after each 404/1002 until its 5 s are spent.
fn session_loop() -> Vec<Decision> {
    let mut waits = vec![Duration::ZERO, ms(5), ms(25), ms(125)];
    waits.extend(vec![ms(500); 9]);
    waits.push(ms(345));
    assert_eq!(waits.iter().sum::<Duration>(), SESSION_WINDOW);
    waits.into_iter().map(retry).collect()
}

/// 404/1002 `n` times.
fn session_not_available(n: usize) -> Vec<AttemptOutcome> {
    vec![AttemptOutcome::with_sub_status(404, sub_status::READ_SESSION_NOT_AVAILABLE); n]
}

/// The failover waits of `n` retries: a read waits 1 s each time, a write goes at once the
/// first time.
fn failovers(kind: OpKind, n: usize, route: Route) -> Vec<Decision> {
    (0..n)
        .map(|i| {
            let after = if kind == OpKind::Write && i == 0 {
                Duration::ZERO
            } else {
                FAILOVER_WAIT
            };
            to(after, route)
        })
        .collect()
}

/// The rows the table test covers, every row and sub-status of SPEC §4.1, each with the
/// account shapes it differs on (one region; two, single-write; two, multi-write; and the
/// multi-region client's: three regions, single-write, read timeouts failing over, the
/// failover wait scaled to 100 ms):
///
/// - 400, 401, 403 (generic), 404 (generic), 409, 412, 413: never retried.
/// - 403/3 `WriteForbidden`: failover to the refreshed write region, a write's first at
///   once, then 1 s; at most 120 failovers, then the 403.
/// - 403/1008 `DatabaseAccountNotFound`: reads and multi-write writes mark the region and go
///   to the next preferred one (a read after 1 s); a single-write write gets the 403.
/// - 404/1002 `ReadSessionNotAvailable`: the 5 s session loop (0, 5, 25, 125, then 500 ms
///   capped, the last cut to 5 s), then the write region twice (single-write) or the next
///   preferred region once per region (multi-write), each with a new loop; then the 404.
/// - 408 from the server: never retried; a write's outcome is unknown.
/// - transport timeout: a read's becomes a 410 in the window; a write's is 408, unknown.
/// - not sent (a refused connect): a transport 410 (20001) for reads and writes alike,
///   retried in the window, then 503.
/// - cancelled by the caller while an attempt is in flight: `Cancelled{Unknown}`, never
///   retried (between attempts: [`RetryState::cancel`], its own test).
/// - 410 (0, 1007, 1008): immediate, then 1 s doubling within 30 s, then 503.
/// - 410/1000: retried twice, the third is 503. 410/1022: 503 at once, then the 503 rule.
/// - 410/1002: reaches a point operation as a split, retried like 410/1007.
/// - 429: the retry-after (5 s when missing or 0), at most 9, 30 s in all.
/// - 429/3092: a multi-write account's write goes to the next preferred region (as 503);
///   elsewhere a plain 429.
/// - 449: immediate, then 10 ms doubling plus a 1–4 ms salt; 449 when the window ends.
/// - 500: a read's one cross-region retry (the 503 budget); a write's 500 is final.
/// - 503: one immediate retry on the next preferred region for reads and multi-write writes;
///   a single-write write's 503 is final; a transport-generated one leaves a write unknown.
///   A 410 window that runs out is such a 503.
/// - `HttpRequestException` (connection error): with `read_timeout_fails_over`, a read's
///   timeout marks the region and fails over to the next one after the failover wait, at
///   most 120 times, then 503; a write's timeout is still 408, unknown, not re-sent.
/// - The failover wait (`failover_wait`) is every failover's: a read's each, a write's
///   from the second on (403/3, 403/1008, connection errors).
#[test]
fn spec_4_1_every_row_answers_as_the_table_says() {
    use OpKind::{Read, Write};
    let s = AttemptOutcome::status;
    let sub = AttemptOutcome::with_sub_status;
    let write_region = Route::WriteRegion {
        refresh_account: true,
    };
    let mut cases = Vec::new();
    for status in [400u16, 401, 403, 404, 409, 412, 413] {
        for kind in [Read, Write] {
            cases.push(case(
                "final",
                kind,
                TWO_REGIONS,
                vec![s(status)],
                vec![done(status)],
            ));
        }
    }
    // 403/3: refreshed account, the write region; then the answer there.
    for kind in [Read, Write] {
        let mut decisions = failovers(kind, 2, write_region);
        decisions.push(done(201));
        cases.push(case(
            "403/3",
            kind,
            ONE_REGION,
            vec![
                sub(403, sub_status::WRITE_FORBIDDEN),
                sub(403, sub_status::WRITE_FORBIDDEN),
                s(201),
            ],
            decisions,
        ));
        let mut decisions = failovers(kind, 120, write_region);
        decisions.push(done(403));
        cases.push(case(
            "403/3 budget",
            kind,
            ONE_REGION,
            vec![sub(403, sub_status::WRITE_FORBIDDEN); 121],
            decisions,
        ));
    }
    // 403/1008
    let marked = Route::MarkUnavailableAndNextPreferred;
    for (kind, shape) in [
        (Read, TWO_REGIONS),
        (Read, MULTI_WRITE),
        (Write, MULTI_WRITE),
    ] {
        let mut decisions = failovers(kind, 2, marked);
        decisions.push(done(200));
        let gone = sub(403, sub_status::DATABASE_ACCOUNT_NOT_FOUND);
        cases.push(case(
            "403/1008",
            kind,
            shape,
            vec![gone.clone(), gone, s(200)],
            decisions,
        ));
    }
    cases.push(case(
        "403/1008 single-write write",
        Write,
        TWO_REGIONS,
        vec![sub(403, sub_status::DATABASE_ACCOUNT_NOT_FOUND)],
        vec![done(403)],
    ));
    // 404/1002: the loop, then the region steps, then the 404.
    let session_write_region = to(
        Duration::ZERO,
        Route::WriteRegion {
            refresh_account: false,
        },
    );
    let mut single = Vec::new();
    for _ in 0..2 {
        single.extend(session_loop());
        single.push(session_write_region.clone());
    }
    single.extend(session_loop());
    single.push(done(404));
    cases.push(case(
        "404/1002 single-write",
        Read,
        TWO_REGIONS,
        session_not_available(single.len()),
        single,
    ));
    let mut multi = Vec::new();
    for _ in 0..2 {
        multi.extend(session_loop());
        multi.push(next_region());
    }
    multi.extend(session_loop());
    multi.push(done(404));
    cases.push(case(
        "404/1002 multi-write",
        Read,
        MULTI_WRITE,
        session_not_available(multi.len()),
        multi,
    ));
    let mut found = session_loop()[..3].to_vec();
    found.push(done(200));
    let mut answers = session_not_available(3);
    answers.push(s(200));
    cases.push(case(
        "404/1002 then found",
        Read,
        ONE_REGION,
        answers,
        found,
    ));
    // 408 from the server, and transport timeouts.
    cases.push(case(
        "408 read",
        Read,
        TWO_REGIONS,
        vec![s(408)],
        vec![done(408)],
    ));
    cases.push(case(
        "408 write",
        Write,
        TWO_REGIONS,
        vec![s(408)],
        vec![unknown(408)],
    ));
    cases.push(case(
        "timeout write",
        Write,
        ONE_REGION,
        vec![AttemptOutcome::Timeout],
        vec![unknown(408)],
    ));
    cases.push(case(
        "timeout read",
        Read,
        ONE_REGION,
        vec![AttemptOutcome::Timeout; 3],
        vec![retry(Duration::ZERO), retry(secs(1)), retry(secs(2))],
    ));
    // 410 and its sub-statuses.
    let gone_waits = |n: usize| {
        let mut d = vec![retry(Duration::ZERO)];
        d.extend([1, 2, 4, 8, 15].iter().take(n - 1).map(|&x| retry(secs(x))));
        d
    };
    for code in [
        sub_status::NONE,
        sub_status::COMPLETING_SPLIT,
        sub_status::COMPLETING_PARTITION_MIGRATION,
        sub_status::PARTITION_KEY_RANGE_GONE,
    ] {
        // 0 + 1 + 2 + 4 + 8 + 15 = 30 s: the window is spent, the next 410 is 503.
        let mut decisions = gone_waits(6);
        decisions.push(done(503));
        cases.push(case(
            "410",
            Write,
            ONE_REGION,
            vec![sub(410, code); 7],
            decisions,
        ));
    }
    cases.push(case(
        "410/1000",
        Read,
        ONE_REGION,
        vec![sub(410, sub_status::NAME_CACHE_IS_STALE); 3],
        vec![retry(Duration::ZERO), retry(secs(1)), done(503)],
    ));
    cases.push(case(
        "410/1022",
        Read,
        TWO_REGIONS,
        vec![sub(410, sub_status::LEASE_NOT_FOUND); 2],
        vec![next_region(), done(503)],
    ));
    // 429 and 429/3092.
    let with_retry_after = AttemptOutcome::Response {
        status: 429,
        sub_status: sub_status::NONE,
        retry_after: Some(ms(70)),
    };
    cases.push(case(
        "429",
        Write,
        ONE_REGION,
        vec![with_retry_after, throttled(None)],
        vec![retry(ms(70)), retry(secs(5))],
    ));
    let busy = sub(429, sub_status::SYSTEM_RESOURCE_UNAVAILABLE);
    cases.push(case(
        "429/3092 multi-write write",
        Write,
        MULTI_WRITE,
        vec![busy.clone(); 2],
        vec![next_region(), done(429)],
    ));
    cases.push(case(
        "429/3092 multi-write read",
        Read,
        MULTI_WRITE,
        vec![busy.clone()],
        vec![retry(secs(5))],
    ));
    cases.push(case(
        "429/3092 single-write write",
        Write,
        TWO_REGIONS,
        vec![busy],
        vec![retry(secs(5))],
    ));
    // 449, 500, 503.
    cases.push(case(
        "449",
        Write,
        ONE_REGION,
        vec![s(449); 3],
        vec![retry(Duration::ZERO), retry(ms(11)), retry(ms(21))],
    ));
    cases.push(case(
        "500 read",
        Read,
        TWO_REGIONS,
        vec![s(500); 2],
        vec![next_region(), done(500)],
    ));
    cases.push(case(
        "500 write",
        Write,
        MULTI_WRITE,
        vec![s(500)],
        vec![done(500)],
    ));
    for (kind, shape, first) in [
        (Read, ONE_REGION, done(503)),
        (Read, TWO_REGIONS, next_region()),
        (Write, TWO_REGIONS, done(503)),
        (Write, MULTI_WRITE, next_region()),
    ] {
        let mut decisions = vec![first.clone()];
        let mut answers = vec![s(503)];
        if first != done(503) {
            answers.push(s(200));
            decisions.push(done(200));
        }
        cases.push(case("503", kind, shape, answers, decisions));
    }
    cases.push(case(
        "503/20006 write",
        Write,
        TWO_REGIONS,
        vec![sub(503, sub_status::CHANNEL_CLOSED)],
        vec![unknown(503)],
    ));

    // A read's timeout as a connection error (`HttpRequestException`), on the
    // multi-region client's account: the region marked, the next one after the
    // (scaled) failover wait, at most 120 times, then 503. A write's is still 408.
    let failover = to(ms(100), Route::MarkUnavailableAndNextPreferred);
    cases.push(region_client_case(
        "connection error read",
        Read,
        3,
        vec![AttemptOutcome::Timeout, AttemptOutcome::Timeout, s(200)],
        vec![failover.clone(), failover.clone(), done(200)],
    ));
    let mut decisions = vec![failover; 120];
    decisions.push(done(503));
    cases.push(region_client_case(
        "connection error budget",
        Read,
        3,
        vec![AttemptOutcome::Timeout; 121],
        decisions,
    ));
    cases.push(region_client_case(
        "connection error write",
        Write,
        3,
        vec![AttemptOutcome::Timeout],
        vec![unknown(408)],
    ));
    // The scaled failover wait is every failover's: 403/1008 on a read, a write's
    // second 403/3.
    cases.push(region_client_case(
        "403/1008 scaled wait",
        Read,
        3,
        vec![sub(403, sub_status::DATABASE_ACCOUNT_NOT_FOUND), s(200)],
        vec![
            to(ms(100), Route::MarkUnavailableAndNextPreferred),
            done(200),
        ],
    ));
    cases.push(region_client_case(
        "403/3 scaled wait",
        Write,
        3,
        vec![sub(403, sub_status::WRITE_FORBIDDEN); 3],
        vec![
            to(Duration::ZERO, write_region),
            to(ms(100), write_region),
            to(ms(100), write_region),
        ],
    ));
    // A 410 window that runs out is a 503, retried once in the next region there.
    let mut decisions = gone_waits(6);
    decisions.push(next_region());
    decisions.push(done(200));
    let mut answers = vec![gone(sub_status::NONE); 7];
    answers.push(s(200));
    cases.push(region_client_case(
        "410 then 503",
        Read,
        3,
        answers,
        decisions,
    ));
    // Not sent (a refused connect): a transport 410, reads and writes alike, retried in
    // the window (the first retry at once); the window spent, 503 (R1 allows the re-send:
    // the request never left the client).
    for kind in [Read, Write] {
        let mut decisions = gone_waits(6);
        decisions.push(done(503));
        cases.push(case(
            "not sent",
            kind,
            ONE_REGION,
            vec![AttemptOutcome::NotSent; 7],
            decisions,
        ));
        cases.push(case(
            "not sent, then answered",
            kind,
            ONE_REGION,
            vec![AttemptOutcome::NotSent, s(201)],
            vec![retry(Duration::ZERO), done(201)],
        ));
        // Cancelled by the caller while an attempt is in flight: sent and not answered,
        // so it may have run; never retried.
        cases.push(case(
            "cancelled in flight",
            kind,
            ONE_REGION,
            vec![s(429), AttemptOutcome::Cancelled],
            vec![
                retry(DEFAULT_RETRY_AFTER),
                Decision::Done(cancelled(CancelledEffect::Unknown)),
            ],
        ));
    }

    for c in cases {
        let mut state = RetryState::new(c.kind, c.options.clone(), ModelBugs::default());
        assert_eq!(c.answers.len(), c.decisions.len(), "{}", c.row);
        for (i, (answer, want)) in c.answers.iter().zip(&c.decisions).enumerate() {
            assert_eq!(
                &state.on_attempt(answer, 0.0),
                want,
                "{} {:?} {}x{}: answer {i}",
                c.row,
                c.kind,
                c.options.preferred_regions,
                c.options.multi_write
            );
        }
    }
}

#[test]
fn bug_removed_region_retried_sends_the_read_back_unmarked() {
    let bugs = ModelBugs {
        removed_region_retried: true,
        ..ModelBugs::default()
    };
    let removed = AttemptOutcome::with_sub_status(403, sub_status::DATABASE_ACCOUNT_NOT_FOUND);
    let options = RetryOptions {
        preferred_regions: 2,
        multi_write: true,
        ..RetryOptions::default()
    };
    let mut right = RetryState::new(OpKind::Read, options.clone(), ModelBugs::default());
    let mut wrong = RetryState::new(OpKind::Read, options.clone(), bugs);
    assert_eq!(
        right.on_attempt(&removed, 0.0),
        Decision::Retry {
            after: FAILOVER_WAIT,
            route: Route::MarkUnavailableAndNextPreferred
        }
    );
    assert_eq!(wrong.on_attempt(&removed, 0.0), retry(FAILOVER_WAIT));
    // It counts against the failover budget all the same.
    let (delays, end) = run_until_done(&mut wrong, &removed);
    assert_eq!((delays.len(), end), (119, done(403)));
    // A multi-write account's write is not the bug's: it still marks the region.
    let mut write = RetryState::new(OpKind::Write, options, bugs);
    assert_eq!(
        write.on_attempt(&removed, 0.0),
        Decision::Retry {
            after: Duration::ZERO,
            route: Route::MarkUnavailableAndNextPreferred
        }
    );
}

#[test]
fn spec_4_1_row_410_the_window_counts_the_time_attempts_took_when_told() {
    let mut s = state(OpKind::Read);
    let gone = gone(sub_status::NONE);
    // 10 s per attempt: 10 s, the immediate retry; 20 s, then 1 s of backoff; 31 s: spent.
    s.attempt_took(secs(10));
    assert_eq!(s.on_attempt(&gone, 0.0), retry(Duration::ZERO));
    s.attempt_took(secs(10));
    assert_eq!(s.on_attempt(&gone, 0.0), retry(secs(1)));
    s.attempt_took(secs(10));
    assert_eq!(s.on_attempt(&gone, 0.0), done(503));
    // The last backoff is cut to what the attempts left of the window.
    let mut s = state(OpKind::Write);
    for want in [Duration::ZERO, secs(1), secs(2), secs(4), secs(8)] {
        s.attempt_took(ms(500));
        assert_eq!(s.on_attempt(&gone, 0.0), retry(want));
    }
    s.attempt_took(ms(500));
    // 3 s of attempts and 15 s of backoff so far: 12 s left.
    assert_eq!(s.on_attempt(&gone, 0.0), retry(secs(12)));
    // The time of an answer that is not a 410 or 449 stays out of the window.
    let mut s = state(OpKind::Read);
    s.attempt_took(secs(100));
    assert_eq!(s.on_attempt(&throttled(Some(secs(1))), 0.0), retry(secs(1)));
    assert_eq!(s.on_attempt(&gone, 0.0), retry(Duration::ZERO));
    s.attempt_took(secs(1));
    assert_eq!(s.on_attempt(&gone, 0.0), retry(secs(1)));
    // A timed-out read counts what it took instead of the request timeout.
    let mut s = state(OpKind::Read);
    s.attempt_took(secs(20));
    assert_eq!(
        s.on_attempt(&AttemptOutcome::Timeout, 0.0),
        retry(Duration::ZERO)
    );
    s.attempt_took(secs(9));
    assert_eq!(s.on_attempt(&AttemptOutcome::Timeout, 0.0), retry(secs(1)));
    s.attempt_took(secs(1));
    assert_eq!(s.on_attempt(&gone, 0.0), done(503));
}

fn cancelled(effect: CancelledEffect) -> FinalOutcome {
    FinalOutcome::Cancelled { effect }
}

#[test]
fn r1_a_call_cancelled_between_attempts_did_not_run_unless_an_earlier_attempt_may_have() {
    // A write that got a 429 and is cancelled while it waits: it did not run.
    let mut s = state(OpKind::Write);
    assert_eq!(s.on_attempt(&throttled(Some(secs(1))), 0.0), retry(secs(1)));
    assert_eq!(s.cancel(), cancelled(CancelledEffect::NotRun));
    // Done is sticky: no attempt after the cancel, the same outcome again.
    assert_eq!(
        s.on_attempt(&AttemptOutcome::status(201), 0.0),
        Decision::Done(cancelled(CancelledEffect::NotRun))
    );
    assert_eq!(s.attempts(), 1);
    // Cancelled before its first attempt.
    assert_eq!(
        state(OpKind::Read).cancel(),
        cancelled(CancelledEffect::NotRun)
    );
    // Refused connects are not sends: cancelled after one, it did not run.
    let mut s = state(OpKind::Write);
    assert_eq!(
        s.on_attempt(&AttemptOutcome::NotSent, 0.0),
        retry(Duration::ZERO)
    );
    assert_eq!(s.cancel(), cancelled(CancelledEffect::NotRun));
    // A multi-write write re-sent after a transport-generated 503 may have run already.
    let mut s = regions(OpKind::Write, 2, true);
    assert_eq!(
        s.on_attempt(
            &AttemptOutcome::with_sub_status(503, sub_status::CHANNEL_CLOSED),
            0.0
        ),
        next_region()
    );
    assert_eq!(s.cancel(), cancelled(CancelledEffect::Unknown));
    // A call already done keeps its outcome.
    let mut s = state(OpKind::Write);
    assert_eq!(s.on_attempt(&AttemptOutcome::Timeout, 0.0), unknown(408));
    assert_eq!(s.cancel(), FinalOutcome::Unknown { status: 408 });
}

#[test]
fn bug_not_sent_taken_as_unknown_ends_a_refused_write_unknown() {
    let bugs = ModelBugs {
        not_sent_taken_as_unknown: true,
        ..ModelBugs::default()
    };
    let mut wrong = RetryState::new(OpKind::Write, RetryOptions::default(), bugs);
    assert_eq!(
        wrong.on_attempt(&AttemptOutcome::NotSent, 0.0),
        unknown(503)
    );
    // A read is still retried as a transport 410.
    let mut read = RetryState::new(OpKind::Read, RetryOptions::default(), bugs);
    assert_eq!(
        read.on_attempt(&AttemptOutcome::NotSent, 0.0),
        retry(Duration::ZERO)
    );
}
