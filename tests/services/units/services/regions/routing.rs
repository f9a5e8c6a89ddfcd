//! Tests of the region routing checks.
use crate::units::services::regions::history::build::Builder;
use overcast_scenarios::services::regions::history::Consistency::Session;
use overcast_scenarios::services::regions::history::{route, RegionEvent};
use overcast_scenarios::services::regions::routing::*;
use overcast_sim::check::{Checked, Checker, Verdict};
use overcast_sim::history::{Attempt as Sent, AttemptResult};

const S: u64 = 1_000_000_000;

/// A route event of op `op_id` at `at_s` s, true time and the client's clock alike.
fn ev(b: &mut Builder, at_s: u64, op_id: u64, what: &str, region: &str, st: (u16, u16)) {
    ev_at(b, at_s * S, at_s * 1_000, op_id, what, region, st);
}

/// Op 0 (seq 0): 503 in west, marks west, succeeds in east. Regions: west, east.
fn failed_over() -> Builder {
    let mut b = Builder::new();
    b.read("client-0", Session, "k", (S, 3 * S), "e1", "b1");
    ev(&mut b, 1, 0, route::ATTEMPT, "west", (503, 0));
    ev(&mut b, 1, 0, route::MARK_UNAVAILABLE, "west", (503, 0));
    ev(&mut b, 2, 0, route::ATTEMPT, "east", (200, 0));
    b
}

/// Client-0's blind upsert of `k` (body `b1`), acknowledged with `e1` at 2 s.
fn upserted() -> Builder {
    let mut b = Builder::new();
    b.write(
        "client-0",
        "upsert",
        "k",
        "b1",
        None,
        (S, 2 * S),
        Some("e1"),
    );
    b
}

fn check(b: &Builder) -> Checked {
    Routing::default().check(&b.h)
}

#[test]
fn one_failover_and_a_return_after_the_mark_ends_hold() {
    let mut b = failed_over();
    b.read("client-0", Session, "k", (400 * S, 401 * S), "e1", "b1");
    ev(&mut b, 400, 1, route::ATTEMPT, "west", (200, 0));
    let c = check(&b);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
    assert!(c.note.contains("2 ops"), "{}", c.note);
}

#[test]
fn a_marked_region_retried_before_its_time_breaks_r6_unless_every_region_is_marked() {
    let mut b = failed_over();
    b.read("client-0", Session, "k", (10 * S, 11 * S), "e1", "b1");
    ev(&mut b, 10, 1, route::ATTEMPT, "west", (200, 0));
    let c = check(&b);
    let v = c.verdict().violations();
    assert_eq!(v.len(), 1, "{c:?}");
    assert_eq!(v[0].property, "R6");
    assert!(
        v[0].message.contains("marked it unavailable"),
        "{}",
        v[0].message
    );

    let mut b = failed_over();
    ev(&mut b, 2, 0, route::MARK_UNAVAILABLE, "east", (503, 0));
    b.read("client-0", Session, "k", (10 * S, 11 * S), "e1", "b1");
    ev(&mut b, 10, 1, route::ATTEMPT, "west", (200, 0));
    let c = check(&b);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
    // East's mark may still hold within the slack: every region may
    // have been marked, so going to the head of the list is allowed.
    let mut b = Builder::new();
    b.read("client-0", Session, "k", (S, 3 * S), "e1", "b1");
    ev(&mut b, 1, 0, route::ATTEMPT, "east", (0, 0));
    b.event(
        "client-0",
        S,
        RegionEvent::Route {
            op_id: 0,
            what: route::MARK_UNAVAILABLE.into(),
            region: "east".into(),
            status: 0,
            sub_status: 0,
            for_ms: Some(9_500),
        },
    );
    ev(&mut b, 2, 0, route::MARK_UNAVAILABLE, "west", (0, 0));
    ev(&mut b, 2, 0, route::ATTEMPT, "west", (200, 0));
    b.read(
        "client-0",
        Session,
        "k",
        (10 * S + S / 2, 11 * S),
        "e1",
        "b1",
    );
    b.event(
        "client-0",
        10 * S + S / 2,
        RegionEvent::Route {
            op_id: 1,
            what: route::ATTEMPT.into(),
            region: "west".into(),
            status: 200,
            sub_status: 0,
            for_ms: None,
        },
    );
    let c = check(&b);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
}

#[test]
fn only_the_newest_mark_of_a_region_counts_even_when_the_clock_stepped_back() {
    // West marked at 1 s for 300 s, then (the client's clock stepped
    // back) marked again at 0.5 s for 2 s: the SDK keeps the newer mark,
    // which has run out when op 1 goes there at 10 s.
    let mut b = failed_over();
    b.h.node_events.push(overcast_sim::history::NodeEvent {
        node: "client-0".into(),
        at_ns: S,
        local_ms: 500,
        event: RegionEvent::Route {
            op_id: 0,
            what: route::MARK_UNAVAILABLE.into(),
            region: "west".into(),
            status: 0,
            sub_status: 0,
            for_ms: Some(2_000),
        },
    });
    b.read("client-0", Session, "k", (10 * S, 11 * S), "e1", "b1");
    ev(&mut b, 10, 1, route::ATTEMPT, "west", (200, 0));
    let c = check(&b);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
}

/// One read in region west: attempts sent at `sent` seconds ending with
/// `statuses`, each 410 followed by its address refresh.
fn attempts_at(sent: &[u64], statuses: &[(u16, u16)]) -> Builder {
    let mut b = Builder::new();
    b.read("client-0", Session, "k", (S, 45 * S), "e1", "b1");
    for (&at, &st) in sent.iter().zip(statuses) {
        ev(&mut b, at, 0, route::ATTEMPT, "west", st);
        if st.0 == 410 {
            ev(&mut b, at, 0, route::REFRESH_ADDRESSES, "west", st);
        }
    }
    b.h.ops[0].attempts = sent
        .iter()
        .map(|&s| Sent {
            sent_ns: s * S,
            waited_ns: 0,
            result: AttemptResult::Timeout,
        })
        .collect();
    b
}

#[test]
fn the_410_window_starts_at_the_first_410_of_a_streak() {
    // Connection errors for 40 s in one region, then two 410s 1 s apart:
    // the window runs from the first 410, not from the first attempt.
    let mut b = attempts_at(&[1, 40, 41, 42], &[(0, 0), (410, 0), (410, 0), (200, 0)]);
    // A read's failover waits the failover wait (1 s) before it is sent.
    b.h.ops[0].attempts[1].waited_ns = S;
    let c = check(&b);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
    // A streak of 410s longer than the window still breaks R6.
    let b = attempts_at(&[1, 2, 40], &[(410, 0), (410, 0), (200, 0)]);
    let c = check(&b);
    assert_eq!(c.verdict().violations().len(), 1, "{c:?}");
    assert!(c.verdict().violations()[0].message.contains("410 window"));
}

#[test]
fn strong_reads_and_later_attempts_may_use_a_marked_region() {
    // A strong read goes to the primary's region whatever the marks.
    let mut b = failed_over();
    b.read(
        "client-0",
        overcast_scenarios::services::regions::history::Consistency::Strong,
        "k",
        (10 * S, 11 * S),
        "e1",
        "b1",
    );
    ev(&mut b, 10, 1, route::ATTEMPT, "west", (200, 0));
    let c = check(&b);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
    // A retry walks the list onto its end, where the marked region is.
    let mut b = failed_over();
    b.read("client-0", Session, "k", (10 * S, 11 * S), "e1", "b1");
    ev(&mut b, 10, 1, route::ATTEMPT, "east", (503, 0));
    ev(&mut b, 10, 1, route::ATTEMPT, "west", (200, 0));
    let c = check(&b);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
}

#[test]
fn a_region_that_answered_403_1008_is_not_read_again_before_its_time() {
    // West answers 403/1008 (it is being removed); the read goes on to
    // east, and a read after the mark's 5 min may go back.
    let removed = |retry_in: &str, later_s: u64| {
        let mut b = Builder::new();
        b.read("client-0", Session, "k", (S, 3 * S), "e1", "b1");
        ev(&mut b, 1, 0, route::ATTEMPT, "west", (403, 1008));
        if retry_in != "west" {
            ev(&mut b, 1, 0, route::MARK_UNAVAILABLE, "west", (403, 1008));
        }
        ev(&mut b, 2, 0, route::ATTEMPT, retry_in, (200, 0));
        b.read(
            "client-0",
            Session,
            "k",
            (later_s * S, (later_s + 1) * S),
            "e1",
            "b1",
        );
        ev(&mut b, later_s, 1, route::ATTEMPT, "west", (200, 0));
        b.read("client-0", Session, "k", (500 * S, 501 * S), "e1", "b1");
        ev(&mut b, 500, 2, route::ATTEMPT, "east", (200, 0));
        check(&b)
    };
    assert_eq!(removed("east", 400).verdict(), &Verdict::Held);
    // Retried in place, or read again a minute later: R6, judged from
    // the 403/1008 answer whether or not the SDK recorded a mark.
    for c in [removed("west", 400), removed("east", 60)] {
        let v = c.verdict().violations();
        assert_eq!(v.len(), 1, "{c:?}");
        assert!(v[0].message.contains("403/1008"), "{}", v[0].message);
    }
}

#[test]
fn a_second_cross_region_retry_after_503_breaks_r6() {
    let mut b = failed_over();
    b.h.node_events.pop();
    ev(&mut b, 2, 0, route::ATTEMPT, "east", (503, 0));
    ev(&mut b, 2, 0, route::ATTEMPT, "south", (200, 0));
    let c = check(&b);
    let v = c.verdict().violations();
    assert_eq!(v.len(), 1, "{c:?}");
    assert!(
        v[0].message.contains("MaxServiceUnavailableRetryCount"),
        "{}",
        v[0].message
    );
}

#[test]
fn a_session_read_gives_up_with_404_1002_only_after_trying_the_write_region() {
    // West is the write region: a write succeeded there. The read then
    // meets a replica in east that lacks its token.
    let read = |regions: &[&str], write_via_east: bool| {
        let mut b = upserted();
        if write_via_east {
            ev(&mut b, 1, 0, route::ATTEMPT, "east", (403, 3));
        }
        ev(&mut b, 1, 0, route::ATTEMPT, "west", (200, 0));
        b.failed_read("client-0", "k", (10 * S, 12 * S), 404, 1002);
        for r in regions {
            ev(&mut b, 10, 1, route::ATTEMPT, r, (404, 1002));
        }
        check(&b)
    };
    let c = read(&["east", "east", "east"], false);
    let v = c.verdict().violations();
    assert_eq!(v.len(), 1, "{c:?}");
    assert_eq!(
        (v[0].property.as_str(), v[0].ops.as_slice()),
        ("R6", &[1][..])
    );
    assert!(
        v[0].message.contains("none in the write region west"),
        "{}",
        v[0].message
    );
    // In-region retries first, then the write region: as SPEC says.
    assert_eq!(
        read(&["east", "east", "west"], false).verdict(),
        &Verdict::Held
    );
    // A session whose writes went to east may believe east is the write region.
    assert_eq!(
        read(&["east", "east", "east"], true).verdict(),
        &Verdict::Held
    );
}

#[test]
fn a_write_sent_again_after_a_503_breaks_r6() {
    let write = |statuses: &[(&str, (u16, u16))]| {
        let mut b = upserted();
        for (region, st) in statuses {
            ev(&mut b, 1, 0, route::ATTEMPT, region, *st);
        }
        check(&b)
    };
    let c = write(&[("west", (503, 0)), ("east", (200, 0))]);
    let v = c.verdict().violations();
    assert_eq!(v.len(), 1, "{c:?}");
    assert!(
        v[0].message.contains("not retried after 503"),
        "{}",
        v[0].message
    );
    // A 503 that ends the call, or a 403/3 retried on the write region, is fine.
    assert_eq!(write(&[("west", (503, 0))]).verdict(), &Verdict::Held);
    assert_eq!(
        write(&[("east", (403, 3)), ("west", (200, 0))]).verdict(),
        &Verdict::Held
    );
}

#[test]
fn session_token_region_retries_are_bounded_by_two() {
    let mut b = Builder::new();
    b.failed_read("client-0", "k", (S, 2 * S), 404, 1002);
    for r in ["west", "east", "west"] {
        ev(&mut b, 1, 0, route::ATTEMPT, r, (404, 1002));
    }
    assert_eq!(check(&b).verdict(), &Verdict::Held);
    ev(&mut b, 1, 0, route::ATTEMPT, "east", (404, 1002));
    let c = check(&b);
    assert_eq!(c.verdict().violations().len(), 1, "{c:?}");
    assert!(c.verdict().violations()[0]
        .message
        .contains("3 cross-region retries"));
}

#[test]
fn a_410_retry_needs_its_refresh_and_the_caller_never_sees_410() {
    let mut b = Builder::new();
    b.read("client-0", Session, "k", (S, 2 * S), "e1", "b1");
    ev(&mut b, 1, 0, route::ATTEMPT, "west", (410, 1007));
    ev(
        &mut b,
        1,
        0,
        route::REFRESH_PARTITION_MAP,
        "west",
        (410, 1007),
    );
    ev(&mut b, 1, 0, route::ATTEMPT, "west", (200, 0));
    assert_eq!(check(&b).verdict(), &Verdict::Held);

    let mut b = Builder::new();
    b.failed_read("client-0", "k", (S, 2 * S), 410, 1007);
    ev(&mut b, 1, 0, route::ATTEMPT, "west", (410, 1007));
    ev(&mut b, 1, 0, route::ATTEMPT, "west", (410, 1007));
    let c = check(&b);
    let msgs: Vec<&str> = c
        .verdict()
        .violations()
        .iter()
        .map(|v| v.message.as_str())
        .collect();
    assert_eq!(msgs.len(), 2, "{c:?}");
    assert!(msgs[0].contains("the caller saw 410/1007"), "{msgs:?}");
    assert!(
        msgs[1].contains("without a refresh_partition_map"),
        "{msgs:?}"
    );
}

#[test]
fn a_fourth_410_1000_in_one_region_and_a_retry_past_the_window_break_r6() {
    let mut b = Builder::new();
    b.read("client-0", Session, "k", (S, 50 * S), "e1", "b1");
    for _ in 0..4 {
        ev(&mut b, 1, 0, route::ATTEMPT, "west", (410, 1000));
        ev(
            &mut b,
            1,
            0,
            route::REFRESH_CONTAINER_MAP,
            "west",
            (410, 1000),
        );
    }
    ev(&mut b, 40, 0, route::ATTEMPT, "west", (200, 0));
    b.h.ops[0].attempts = [1, 1, 2, 3, 40]
        .iter()
        .map(|&s| Sent {
            sent_ns: s * S,
            waited_ns: 0,
            result: AttemptResult::Status {
                status: 410,
                retry_after_ms: None,
            },
        })
        .collect();
    let c = check(&b);
    let msgs: Vec<&str> = c
        .verdict()
        .violations()
        .iter()
        .map(|v| v.message.as_str())
        .collect();
    assert_eq!(msgs.len(), 2, "{c:?}");
    assert!(
        msgs[0].contains("4 attempts in region west ended 410/1000"),
        "{msgs:?}"
    );
    assert!(
        msgs[1].contains("39000 ms after the run's first attempt"),
        "{msgs:?}"
    );
}

/// A route event of op `op_id` at `at_ns` true time, `local_ms` on the client's clock.
fn ev_at(
    b: &mut Builder,
    at_ns: u64,
    local_ms: u64,
    op_id: u64,
    what: &str,
    region: &str,
    st: (u16, u16),
) {
    b.h.node_events.push(overcast_sim::history::NodeEvent {
        node: "client-0".into(),
        at_ns,
        local_ms,
        event: RegionEvent::Route {
            op_id,
            what: what.into(),
            region: region.into(),
            status: st.0,
            sub_status: st.1,
            for_ms: (what == route::MARK_UNAVAILABLE).then_some(300_000),
        },
    });
}

#[test]
fn the_newest_403_1008_answer_of_a_region_decides_when_it_may_be_read_again() {
    // West answers op 0's read 403/1008 at 100 s on the client's clock,
    // then (the clock stepped back) op 1's at 1 s; each read goes on to
    // east. Op 2's read at 350 s of the clock may go back to west: the
    // newer answer's 300 s ran out at 301 s, although the older one's
    // would run to 400 s.
    let mut b = Builder::new();
    for (op, local_ms) in [(0, 100_000), (1, 1_000)] {
        let at = (1 + 10 * op) * S;
        b.read("client-0", Session, "k", (at, at + S), "e1", "b1");
        ev_at(
            &mut b,
            at,
            local_ms,
            op,
            route::ATTEMPT,
            "west",
            (403, 1008),
        );
        ev_at(
            &mut b,
            at,
            local_ms,
            op,
            route::MARK_UNAVAILABLE,
            "west",
            (403, 1008),
        );
        ev_at(
            &mut b,
            at + S / 2,
            local_ms + 100,
            op,
            route::ATTEMPT,
            "east",
            (200, 0),
        );
    }
    b.read("client-0", Session, "k", (400 * S, 401 * S), "e1", "b1");
    ev_at(
        &mut b,
        400 * S,
        350_000,
        2,
        route::ATTEMPT,
        "west",
        (200, 0),
    );
    let c = check(&b);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
}

/// One read whose attempts end with `statuses`, in `regions`, each after
/// the wait (ms) in `waits_ms` (the first 0), sent 100 ms apart from 1 s on.
fn waited(regions: &[&str], statuses: &[(u16, u16)], waits_ms: &[u64]) -> Checked {
    let mut b = Builder::new();
    b.read("client-0", Session, "k", (S, 100 * S), "e1", "b1");
    for (i, (&region, &st)) in regions.iter().zip(statuses).enumerate() {
        let at = S + i as u64 * S / 10;
        ev_at(&mut b, at, at / 1_000_000, 0, route::ATTEMPT, region, st);
    }
    b.h.ops[0].attempts = waits_ms
        .iter()
        .enumerate()
        .map(|(i, &w)| Sent {
            sent_ns: S + i as u64 * S / 10,
            waited_ns: w * 1_000_000,
            result: AttemptResult::Status {
                status: 200,
                retry_after_ms: None,
            },
        })
        .collect();
    check(&b)
}

#[test]
fn the_waits_of_the_session_loop_and_of_failovers_are_judged_from_both_sides() {
    let s1002 = (404, 1002);
    let ok = (200, 0);
    let held = |c: Checked| assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
    let broke = |c: Checked, says: &str| {
        let v = c.verdict().violations();
        assert!(v.iter().any(|v| v.message.contains(says)), "{says}: {c:?}");
    };
    // The session loop: 0, 5, 25 ms in one region.
    let west4 = ["west"; 4];
    held(waited(&west4, &[s1002, s1002, s1002, ok], &[0, 0, 5, 25]));
    // Ten times too long, or too short while the loop runs.
    broke(
        waited(&west4, &[s1002, s1002, s1002, ok], &[0, 0, 50, 250]),
        "allows at most 0.005 s",
    );
    broke(
        waited(&west4, &[s1002, s1002, s1002, ok], &[0, 0, 5, 0]),
        "allows no less than 0.025 s",
    );
    // The region step after the loop goes at once: no lower bound there.
    held(waited(
        &["east", "east", "west"],
        &[s1002, s1002, ok],
        &[0, 0, 0],
    ));
    // A read's failover waits the failover wait (1 s by default), no more, no less.
    let two = ["west", "east"];
    held(waited(&two, &[(0, 0), ok], &[0, 1_000]));
    broke(
        waited(&two, &[(0, 0), ok], &[0, 10_000]),
        "allows at most 1.000 s",
    );
    broke(
        waited(&two, &[(403, 1008), ok], &[0, 0]),
        "allows no less than 1.000 s",
    );
    // After a 503 the next region is tried at once.
    held(waited(&two, &[(503, 0), ok], &[0, 0]));
    broke(
        waited(&two, &[(503, 0), ok], &[0, 500]),
        "allows at most 0.000 s",
    );
}
