//! Tests of the client-side retry checks.
use crate::units::kit::retry::*;
use overcast_model::retry::{self, RetryOptions};
use overcast_scenarios::kit::retry::*;
use overcast_scenarios::services::occ::retry::*;
use overcast_sim::history::AttemptResult;

#[test]
fn paused_spans_pair_each_pause_with_its_resume() {
    use overcast_sim::timeline::paused_spans;
    use overcast_sim::world::WorldEvent;
    let e = |at_ms: u64, what: &str| WorldEvent {
        at_ns: at_ms * MS,
        what: overcast_sim::world::Happening::read(what),
    };
    let events = [
        e(100, "pause client-1 for 500 ms"),
        e(200, "pause client-10 for 50 ms"),
        e(250, "resume client-10"),
        e(600, "resume client-1"),
        e(900, "pause client-1 for 500 ms"),
    ];
    assert_eq!(
        paused_spans(&events, "client-1"),
        vec![(100 * MS, 600 * MS), (900 * MS, u64::MAX)]
    );
    assert_eq!(paused_spans(&events, "client-2"), vec![]);
    assert_eq!(overlap_ns(&[(100, 600), (900, 1000)], 500, 950), 150);
}

// ---- the servers' side ----

/// An attempt sent at `sent_ms`, seen and answered 1 ms later.
fn seen(
    req_id: u64,
    sent_ms: u64,
    write: bool,
    status: Option<u16>,
    ra: Option<u64>,
) -> SeenAttempt {
    SeenAttempt {
        server: "server-0".into(),
        req_id,
        sent_ns: sent_ms * MS,
        at_ns: (sent_ms + 1) * MS,
        answered_ns: (sent_ms + 1) * MS,
        write,
        status,
        sub_status: 0,
        retry_after_ms: ra,
    }
}

fn judge(attempts: &[SeenAttempt], surfaced: Option<Surfaced>, return_ms: u64) -> Option<String> {
    ServerSideRules {
        retry: RetryOptions::default(),
    }
    .check(&ServerCase {
        op: Some(1),
        attempts,
        surfaced,
        invoke_ns: Some(0),
        return_ns: Some(return_ms * MS),
        cancel_ns: None,
        refused: false,
    })
    .map(|v| v.property.to_string())
}

#[test]
fn servers_side_r1_nothing_seen_sent_after_the_callers_cancel() {
    let a = [
        seen(1, 0, false, None, None),
        seen(2, 6000, false, Some(200), None),
    ];
    let case = |cancel_ms: u64| ServerCase {
        op: Some(1),
        attempts: &a,
        surfaced: Some(Surfaced::Status(200)),
        invoke_ns: Some(0),
        return_ns: Some(6001 * MS),
        cancel_ns: Some(cancel_ms * MS),
        refused: false,
    };
    let rules = ServerSideRules {
        retry: RetryOptions::default(),
    };
    let v = rules.check(&case(500)).expect("R1");
    assert_eq!(v.property, "R1");
    assert!(v.message.contains("cancelled"), "{}", v.message);
    assert!(rules.check(&case(7000)).is_none());
}

#[test]
fn servers_side_r3_is_not_judged_on_a_call_with_a_refused_connect() {
    // The last attempt seen was answered 429, and the caller was told 503 at once:
    // wrong, unless refused connects the servers never saw came after it and spent
    // the 410 window.
    let a = [seen(1, 0, true, Some(429), Some(10))];
    let case = |refused: bool| ServerCase {
        op: Some(1),
        attempts: &a,
        surfaced: Some(Surfaced::Status(503)),
        invoke_ns: Some(0),
        return_ns: Some(20 * MS),
        cancel_ns: None,
        refused,
    };
    let rules = ServerSideRules {
        retry: RetryOptions::default(),
    };
    assert_eq!(
        rules.check(&case(false)).map(|v| v.property.to_string()),
        Some("R3".into())
    );
    assert!(rules.check(&case(true)).is_none());
}

#[test]
fn servers_side_a_clean_sequence_passes() {
    let a = [
        seen(1, 0, true, Some(429), Some(100)),
        seen(2, 105, true, Some(429), None),
        seen(3, 5110, true, Some(449), None),
        seen(4, 5112, true, Some(449), None),
        seen(5, 5130, true, Some(449), None),
        seen(6, 5160, true, Some(201), None),
    ];
    assert_eq!(judge(&a, Some(Surfaced::Status(201)), 5162), None);
    // 410s: immediate, then 1 s, 2 s.
    let g = [
        seen(1, 0, false, Some(410), None),
        seen(2, 2, false, Some(410), None),
        seen(3, 1004, false, Some(410), None),
        seen(4, 3010, false, Some(200), None),
    ];
    assert_eq!(judge(&g, Some(Surfaced::Status(200)), 3012), None);
}

#[test]
fn servers_side_r2_the_wait_after_a_429_is_the_retry_after_sent_or_5_s() {
    for (ra, gap, broken) in [
        (Some(100), 50, true),
        (Some(100), 101, false),
        (None, 4000, true),
        (Some(0), 4000, true),
        (Some(0), 5001, false),
    ] {
        let a = [
            seen(1, 0, true, Some(429), ra),
            seen(2, gap, true, Some(201), None),
        ];
        let got = judge(&a, Some(Surfaced::Status(201)), gap + 2);
        assert_eq!(got.as_deref() == Some("R2"), broken, "{ra:?} {gap}");
    }
    // Ten retries after 429s: over the budget of nine.
    let many: Vec<_> = (0..11)
        .map(|i| seen(i + 1, i * 20, true, Some(429), Some(10)))
        .collect();
    assert_eq!(
        judge(&many, Some(Surfaced::Status(429)), 300).as_deref(),
        Some("R2")
    );
    // Nine are fine, and the caller then sees 429.
    assert_eq!(judge(&many[..10], Some(Surfaced::Status(429)), 190), None);
    // Six 5 s waits fill the 30 s budget: a seventh retry breaks it.
    let slow: Vec<_> = (0..8)
        .map(|i| seen(i + 1, i * 5002, false, Some(429), None))
        .collect();
    assert_eq!(judge(&slow[..7], Some(Surfaced::Status(429)), 30_013), None);
    assert_eq!(
        judge(&slow, Some(Surfaced::Status(429)), 35_015).as_deref(),
        Some("R2")
    );
}

#[test]
fn servers_side_r3_a_410_becomes_503_only_once_a_budget_is_spent() {
    let stale = |req_id, sent_ms| SeenAttempt {
        sub_status: retry::sub_status::NAME_CACHE_IS_STALE,
        ..seen(req_id, sent_ms, false, Some(410), None)
    };
    // The third 410/1000 (two retries: at once, then 1 s): 503.
    let third = [stale(1, 0), stale(2, 2), stale(3, 1004)];
    assert_eq!(judge(&third, Some(Surfaced::Status(503)), 1006), None);
    // 503 after the second: neither budget spent.
    assert_eq!(
        judge(&third[..2], Some(Surfaced::Status(503)), 4).as_deref(),
        Some("R3")
    );
    // Plain 410s: 503 only once the 30 s window is spent.
    let gone: Vec<_> = [0, 2, 1004, 3010, 7020, 15030, 30040]
        .into_iter()
        .enumerate()
        .map(|(i, ms)| seen(i as u64 + 1, ms, false, Some(410), None))
        .collect();
    assert_eq!(judge(&gone, Some(Surfaced::Status(503)), 30042), None);
    assert_eq!(
        judge(&gone[..4], Some(Surfaced::Status(503)), 3012).as_deref(),
        Some("R3")
    );
}

#[test]
fn servers_side_a_read_that_may_have_timed_out_is_not_judged() {
    // A read answered 429 whose answer may have been lost: the client timed
    // out after 6 s and re-sent at once, which is allowed.
    let a = [
        seen(1, 0, false, Some(429), Some(100)),
        seen(2, 6000, false, Some(200), None),
    ];
    assert_eq!(judge(&a, Some(Surfaced::Status(200)), 6002), None);
    // Received late (a paused server, a held-back datagram) but sent
    // at once: judged by the send stamps, whatever the arrival times.
    let mut late = seen(2, 5, false, Some(200), None);
    late.at_ns = 9000 * MS;
    late.answered_ns = 9000 * MS;
    let b = [seen(1, 0, false, Some(429), Some(100)), late];
    assert_eq!(
        judge(&b, Some(Surfaced::Status(200)), 9001).as_deref(),
        Some("R2")
    );
}

#[test]
fn servers_side_r1_a_write_is_re_sent_only_after_an_answer_that_says_it_did_not_run() {
    for status in [Some(201), Some(408), Some(412), Some(503), None] {
        let a = [
            seen(1, 0, true, status, None),
            seen(2, 7000, true, Some(201), None),
        ];
        assert_eq!(
            judge(&a, Some(Surfaced::Status(201)), 7002).as_deref(),
            Some("R1"),
            "{status:?}"
        );
    }
    // A read answered 503 and heard is not retried in one region either.
    let r = [
        seen(1, 0, false, Some(503), None),
        seen(2, 3, false, Some(200), None),
    ];
    assert_eq!(
        judge(&r, Some(Surfaced::Status(200)), 5).as_deref(),
        Some("R3")
    );
    // A write answered 429, re-sent at once but 7 s after its first send:
    // either it did not wait, or it re-sent after a timeout: R1.
    let mut slow = seen(1, 0, true, Some(429), Some(100));
    slow.answered_ns = 6990 * MS;
    let w = [slow, seen(2, 7000, true, Some(201), None)];
    assert_eq!(
        judge(&w, Some(Surfaced::Status(201)), 7002).as_deref(),
        Some("R1")
    );
}

#[test]
fn servers_side_410_and_449_backoff_and_window() {
    // The second retry came 10 ms after a 410: the backoff is 1 s.
    let a = [
        seen(1, 0, false, Some(410), None),
        seen(2, 2, false, Some(410), None),
        seen(3, 12, false, Some(200), None),
    ];
    assert_eq!(
        judge(&a, Some(Surfaced::Status(200)), 14).as_deref(),
        Some("R3")
    );
    // 449: 10 ms plus the salt, then 20 ms plus the salt.
    let w = [
        seen(1, 0, true, Some(449), None),
        seen(2, 2, true, Some(449), None),
        seen(3, 7, true, Some(201), None),
    ];
    assert_eq!(
        judge(&w, Some(Surfaced::Status(201)), 9).as_deref(),
        Some("R3")
    );
    let doubled = [
        seen(1, 0, true, Some(449), None),
        seen(2, 2, true, Some(449), None),
        seen(3, 15, true, Some(449), None),
        seen(4, 30, true, Some(201), None),
    ];
    assert_eq!(
        judge(&doubled, Some(Surfaced::Status(201)), 32).as_deref(),
        Some("R3")
    );
    // 410s whose backoffs fill the 30 s window (0, 1, 2, 4, 8, 15 s):
    // the SDK stops there; one more retry breaks it.
    let mut t = 0;
    let mut g = vec![seen(1, 0, false, Some(410), None)];
    for (i, wait) in [0u64, 1000, 2000, 4000, 8000, 15_000, 15_000]
        .iter()
        .enumerate()
    {
        t += 1 + wait + 1;
        g.push(seen(i as u64 + 2, t, false, Some(410), None));
    }
    assert_eq!(judge(&g[..7], Some(Surfaced::Status(503)), t), None);
    assert_eq!(
        judge(&g, Some(Surfaced::Status(503)), t + 2).as_deref(),
        Some("R3")
    );
}

#[test]
fn servers_side_r3_the_caller_is_told_what_the_spec_says_for_the_last_answer_heard() {
    let a = [
        seen(1, 0, true, Some(410), None),
        seen(2, 2, true, Some(201), None),
    ];
    assert_eq!(judge(&a, Some(Surfaced::Status(201)), 4), None);
    assert_eq!(
        judge(&a, Some(Surfaced::Status(200)), 4).as_deref(),
        Some("R3")
    );
    // A write answered 408 has an unknown outcome: a 408 status is wrong.
    let t = [seen(1, 0, true, Some(408), None)];
    assert_eq!(
        judge(&t, Some(Surfaced::Status(408)), 2).as_deref(),
        Some("R3")
    );
    // The window ran out on a 410 (the earlier attempts, timed out, were
    // lost on the way): 503 (449 only with a 449 in it).
    let g = [seen(1, 30_000, false, Some(410), None)];
    assert_eq!(judge(&g, Some(Surfaced::Status(503)), 30_002), None);
    assert_eq!(
        judge(&g, Some(Surfaced::Status(449)), 30_002).as_deref(),
        Some("R3")
    );
    // Returned the request timeout or later after the last send: a later
    // attempt may have been sent and lost.
    assert_eq!(judge(&a, Some(Surfaced::Status(503)), 6002), None);
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
