//! Tests of the lease checkers, on hand-made histories and on runs.
use overcast_model::lease::{self, Lease, LeaseAction, LeaseDuration, LeaseTarget, Phase};
use overcast_model::lease_holder::ClockBound;
use overcast_model::partition::Effect;
use overcast_model::store::ItemKey;
use overcast_scenarios::services::leases::check::*;
use overcast_scenarios::services::leases::history::{Call, LeaseEvent, LeaseHistory, Outcome};
use overcast_sim::clock::EPOCH_MS;
use overcast_sim::history::OpRecord;
use overcast_sim::history::{Attempt, AttemptResult, History, NodeEvent};

const S: u64 = 1_000_000_000;

fn acquire(
    id: u64,
    client: usize,
    invoke_ns: u64,
    attempts: &[(u64, u16)],
) -> OpRecord<Call, Outcome> {
    let told = attempts.last().map(|(_, s)| *s);
    OpRecord {
        id,
        client,
        key: "leases/b1".into(),
        call: Call {
            op: "acquire".into(),
            target: "leases/b1".into(),
            duration_s: Some(-1),
            ..Call::default()
        },
        invoke_ns,
        return_ns: (told == Some(409)).then(|| attempts.last().unwrap().0 + S / 50),
        result: (told == Some(409)).then(|| Outcome {
            status: 409,
            code: Some("LeaseAlreadyPresent".into()),
            state: Some(lease::LeaseState::Leased),
            server_ms: Some(EPOCH_MS + 10_300),
            ..Outcome::default()
        }),
        attempts: attempts
            .iter()
            .map(|(sent_ns, status)| Attempt {
                sent_ns: *sent_ns,
                waited_ns: 0,
                result: AttemptResult::Status {
                    status: *status,
                    retry_after_ms: None,
                },
            })
            .collect(),
    }
}

/// server-0 logs an acquire of `leases/b1` granting `lease` at `at_ns`
/// (its clock `ms` after the epoch), with `proposed` as the proposal; an
/// acquire without one draws its id.
fn granted(at_ns: u64, ms: u64, proposed: Option<&str>, lease: Lease) -> NodeEvent<LeaseEvent> {
    NodeEvent {
        node: "server-0".into(),
        at_ns,
        local_ms: EPOCH_MS + ms,
        event: LeaseEvent::Logged {
            partition: 0,
            lsn: 1,
            effect: Effect::Lease(lease::Effect::Set {
                target: LeaseTarget::Blob(ItemKey::new("leases", "b1", "b1")),
                action: LeaseAction::Acquire {
                    duration: Some(lease.duration.ms().map_or(-1, |d| (d / 1000) as i64)),
                    proposed_id: proposed.map(str::to_string),
                },
                at_ms: EPOCH_MS + ms,
                lease: Some(lease),
                ids_drawn: u64::from(proposed.is_none()),
            }),
        },
    }
}

/// Leases seed 8294, cut down: client 3's acquire without a proposal is
/// throttled (429), waits and is refused (409); meanwhile client 4's
/// acquire without a proposal gets a 408 (outcome unknown), and the
/// server grants a lease no caller is told of. Client 4's acquire
/// explains that grant; client 3 was not re-sent into a win.
#[test]
fn a_grant_another_acquire_of_unknown_outcome_explains_is_not_a_resent_acquire() {
    let grant = granted(
        10 * S + S / 6,
        10_166,
        None,
        Lease {
            id: "6e730000-0000-4000-8000-000000000001".into(),
            duration: LeaseDuration::Infinite,
            phase: Phase::Leased { expire_ms: None },
        },
    );
    let refused = acquire(0, 3, 10 * S, &[(10 * S, 429), (10 * S + S / 5, 409)]);
    let unknown = acquire(1, 4, 10 * S + S / 7, &[(10 * S + S / 7, 408)]);
    let history = |ops: Vec<OpRecord<Call, Outcome>>| History {
        version: overcast_sim::history::HISTORY_VERSION,
        ops,
        events: Vec::new(),
        node_events: vec![grant.clone()],
        log_events: Vec::new(),
    };
    let l5 = |h: &LeaseHistory| -> Vec<String> {
        analyse(h)
            .violations
            .into_iter()
            .filter(|v| v.property == "L5")
            .map(|v| v.message)
            .collect()
    };
    let explained = history(vec![refused.clone(), unknown]);
    assert!(l5(&explained).is_empty(), "{:?}", l5(&explained));
    // Alone, the refused acquire is the only one that can have won it.
    let alone = history(vec![refused]);
    assert!(
        l5(&alone)
            .iter()
            .any(|m| m.contains("non-idempotent acquire was re-sent")),
        "{:?}",
        l5(&alone)
    );
}

/// L2's order of checks: a conditional put without the lease's id on a
/// blob surely under a 15 s lease must be refused by the lease check.
#[test]
fn a_condition_refusal_on_a_surely_leased_blob_breaks_l2_and_nothing_else_does() {
    const ID: &str = "6e730000-0000-4000-8000-000000000001";
    let grant = granted(
        10 * S,
        10_000,
        Some(ID),
        Lease {
            id: ID.into(),
            duration: LeaseDuration::Fixed(15),
            phase: Phase::Leased {
                expire_ms: Some(EPOCH_MS + 25_000),
            },
        },
    );
    let put = |at_s: u64, lease_id: Option<&str>, status: u16, code: &str| OpRecord {
        id: 0,
        client: 3,
        key: "leases/b1".into(),
        call: Call {
            op: "put".into(),
            target: "leases/b1".into(),
            lease_id: lease_id.map(str::to_string),
            ..Call::default()
        },
        invoke_ns: at_s * S,
        return_ns: Some(at_s * S + S / 50),
        result: Some(Outcome {
            status,
            code: Some(code.into()),
            ..Outcome::default()
        }),
        attempts: vec![],
    };
    let l2 = |op: OpRecord<Call, Outcome>, bound: Option<ClockBound>| -> Vec<String> {
        let h = History {
            version: overcast_sim::history::HISTORY_VERSION,
            ops: vec![op],
            events: Vec::new(),
            node_events: vec![grant.clone()],
            log_events: Vec::new(),
        };
        analyse_with(&h, bound)
            .violations
            .into_iter()
            .filter(|v| v.property == "L2")
            .map(|v| v.message)
            .collect()
    };
    let bound = Some(ClockBound::DEFAULT);
    // 10 s after the grant the server's clock reads at most 23.1 s.
    let found = l2(put(20, None, 409, "BlobAlreadyExists"), bound);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains(
            "the lease check comes before the conditions, so the answer is 412 LeaseIdMissing"
        ),
        "{}",
        found[0]
    );
    let other = "6e730000-0000-4000-8000-000000000002";
    assert_eq!(
        l2(put(12, Some(other), 412, "ConditionNotMet"), bound).len(),
        1
    );
    for (op, bound) in [
        // The lease check's own answer.
        (put(12, None, 412, "LeaseIdMissing"), bound),
        // With the lease's id the conditions are judged.
        (put(12, Some(ID), 412, "ConditionNotMet"), bound),
        // 13 s after the grant a clock within the bound (3 s of steps,
        // 500 ppm) may read past the expiry at 25 s.
        (put(23, None, 409, "BlobAlreadyExists"), bound),
        // Without a known bound on the server's clock nothing is judged.
        (put(12, None, 409, "BlobAlreadyExists"), None),
    ] {
        assert!(l2(op.clone(), bound).is_empty(), "{op:?}");
    }
}

/// R1 judges each call against SPEC's list of what may be re-sent: a
/// release, or an acquire without a proposed id, sent again after a
/// timeout breaks it; a renew, or an acquire with a proposed id, may be.
#[test]
fn a_release_re_sent_after_a_timeout_breaks_r1_and_a_renew_re_sent_does_not() {
    let call = |op: &str, proposed: Option<&str>| Call {
        op: op.into(),
        target: "leases/b1".into(),
        lease_id: Some("6e730000-0000-4000-8000-000000000001".into()),
        proposed_id: proposed.map(str::to_string),
        ..Call::default()
    };
    let op = |id: u64, call: Call, first: AttemptResult| OpRecord {
        id,
        client: 1,
        key: "leases/b1".into(),
        call,
        invoke_ns: S,
        return_ns: Some(9 * S),
        result: Some(Outcome {
            status: 200,
            ..Outcome::default()
        }),
        attempts: vec![
            Attempt {
                sent_ns: S,
                waited_ns: 0,
                result: first,
            },
            Attempt {
                sent_ns: 8 * S,
                waited_ns: S,
                result: AttemptResult::Status {
                    status: 200,
                    retry_after_ms: None,
                },
            },
        ],
    };
    let r1 = |ops: Vec<OpRecord<Call, Outcome>>| -> Vec<u64> {
        analyse(&History::of_ops(ops))
            .violations
            .into_iter()
            .filter(|v| v.property == "R1")
            .flat_map(|v| v.ops)
            .collect()
    };
    let status = |status| AttemptResult::Status {
        status,
        retry_after_ms: None,
    };
    let flagged = r1(vec![
        op(0, call("release", None), AttemptResult::Timeout),
        op(1, call("acquire", None), status(408)),
        op(2, call("renew", None), AttemptResult::Timeout),
        op(
            3,
            call("acquire", Some("6e730000-0000-4000-8000-000000000002")),
            status(408),
        ),
        // Throttled: it did not run, so the re-send is the documented retry.
        op(4, call("release", None), status(429)),
        op(5, call("set_metadata", None), AttemptResult::Timeout),
        op(6, call("delete_container", None), AttemptResult::Timeout),
    ]);
    assert_eq!(flagged, vec![0, 1, 6]);
}

/// L5 on refusals: a renew of a fixed lease granted at 10 s (15 s, so
/// expired from 25 s on the server's clock), asked by its holder at 30 s.
/// The table renews it; a 409 there is a violation, and so is a refusal with
/// another code than the table's (a renew with another id is refused with
/// `LeaseIdMismatchWithLeaseOperation`). A refusal decided from a record a
/// crash later took is not judged: the surviving log does not show the state
/// the server answered from.
#[test]
fn a_refused_lease_action_is_judged_against_the_table_in_the_state_the_log_shows() {
    const ID: &str = "6e730000-0000-4000-8000-000000000001";
    const OTHER: &str = "6e730000-0000-4000-8000-000000000002";
    let lease = Lease {
        id: ID.into(),
        duration: LeaseDuration::Fixed(15),
        phase: Phase::Leased {
            expire_ms: Some(EPOCH_MS + 25_000),
        },
    };
    let renew = |lease_id: &str, code: &str| OpRecord {
        id: 0,
        client: 3,
        key: "leases/b1".into(),
        call: Call {
            op: "renew".into(),
            target: "leases/b1".into(),
            lease_id: Some(lease_id.into()),
            ..Call::default()
        },
        invoke_ns: 30 * S,
        return_ns: Some(30 * S + S / 50),
        result: Some(Outcome {
            status: 409,
            code: Some(code.into()),
            server_ms: Some(EPOCH_MS + 30_010),
            ..Outcome::default()
        }),
        attempts: vec![],
    };
    let l5 = |op: OpRecord<Call, Outcome>, node_events: Vec<NodeEvent<LeaseEvent>>| {
        let h = History {
            version: overcast_sim::history::HISTORY_VERSION,
            ops: vec![op],
            events: Vec::new(),
            node_events,
            log_events: Vec::new(),
        };
        let a = analyse(&h);
        let found: Vec<String> = a
            .violations
            .into_iter()
            .filter(|v| v.property == "L5")
            .map(|v| v.message)
            .collect();
        (a.lease_refusals_judged, found)
    };
    let logged = || vec![granted(10 * S, 10_000, Some(ID), lease.clone())];

    // The holder's renew of its expired lease, refused: the table renews it.
    let (judged, found) = l5(renew(ID, "LeaseIdMismatchWithLeaseOperation"), logged());
    assert_eq!(judged, 1);
    assert!(
        found.len() == 1
            && found[0].contains("the lease was expired")
            && found[0].contains("grants it"),
        "{found:?}"
    );
    // Another id: the table's refusal, given.
    let (judged, found) = l5(renew(OTHER, "LeaseIdMismatchWithLeaseOperation"), logged());
    assert_eq!((judged, found.len()), (1, 0), "{found:?}");
    // Another id, refused with a code the table does not give there.
    let (_, found) = l5(renew(OTHER, "LeaseIsBrokenAndCannotBeRenewed"), logged());
    assert!(
        found.len() == 1
            && found[0].contains("refuses it with 409 LeaseIdMismatchWithLeaseOperation"),
        "{found:?}"
    );
    // A break logged at 29 s, lost to a crash at 31 s, after the answer:
    // the server refused from the broken lease the log no longer shows.
    let mut crashed = logged();
    crashed.push(NodeEvent {
        node: "server-0".into(),
        at_ns: 29 * S,
        local_ms: EPOCH_MS + 29_000,
        event: LeaseEvent::Logged {
            partition: 0,
            lsn: 2,
            effect: Effect::Lease(lease::Effect::Set {
                target: LeaseTarget::Blob(ItemKey::new("leases", "b1", "b1")),
                action: LeaseAction::Break {
                    break_period: Some(60),
                },
                at_ms: EPOCH_MS + 29_000,
                lease: Some(Lease {
                    phase: Phase::Broken,
                    ..lease.clone()
                }),
                ids_drawn: 0,
            }),
        },
    });
    crashed.push(NodeEvent {
        node: "server-0#1".into(),
        at_ns: 31 * S,
        local_ms: EPOCH_MS + 31_000,
        event: LeaseEvent::Recovered { kept: 1 },
    });
    let (judged, found) = l5(renew(ID, "LeaseIsBrokenAndCannotBeRenewed"), crashed);
    assert_eq!((judged, found.len()), (0, 0), "{found:?}");
}

/// L6 judges an acquire refused with `LeaseAlreadyPresent` from the log, so
/// it must not judge one the server refused from a grant a crash later took
/// from its log: with no grant, the refusal breaks L6; with a grant the log
/// kept, or one it lost after the answer, it does not.
#[test]
fn an_acquire_refused_from_a_grant_a_crash_took_is_not_judged_by_l6() {
    let refused = acquire(0, 3, 10 * S + S / 10, &[(10 * S + S / 10, 409)]);
    let grant = granted(
        10 * S,
        10_000,
        None,
        Lease {
            id: "6e730000-0000-4000-8000-000000000001".into(),
            duration: LeaseDuration::Infinite,
            phase: Phase::Leased { expire_ms: None },
        },
    );
    let recovered = NodeEvent {
        node: "server-0#1".into(),
        at_ns: 11 * S,
        local_ms: EPOCH_MS + 11_000,
        event: LeaseEvent::Recovered { kept: 0 },
    };
    let l6 = |node_events: Vec<NodeEvent<LeaseEvent>>| -> usize {
        let h = History {
            version: overcast_sim::history::HISTORY_VERSION,
            ops: vec![refused.clone()],
            events: Vec::new(),
            node_events,
            log_events: Vec::new(),
        };
        analyse(&h)
            .violations
            .iter()
            .filter(|v| v.property == "L6")
            .count()
    };
    assert_eq!(l6(vec![]), 1, "no lease at all: the refusal is wrong");
    assert_eq!(l6(vec![grant.clone()]), 0, "a kept grant explains it");
    assert_eq!(l6(vec![grant, recovered]), 0, "a lost grant may explain it");
}
