//! Tests of `overcast_scenarios::kit::durability`.
use overcast_model::durability::{runs_of, wal_runs};
use overcast_model::durability::{LogEvent, LogId, LogPos, Quorum, Reply};
use overcast_model::wire::OperationId;
use overcast_scenarios::kit::durability::*;
use overcast_sim::check::{Checker, Verdict};
use overcast_sim::history::{History, NodeEvent};

fn ev(node: &str, at_ms: u64, event: LogEvent) -> NodeEvent<LogEvent> {
    NodeEvent {
        node: node.into(),
        at_ns: at_ms * 1_000_000,
        local_ms: at_ms,
        event,
    }
}

fn recovered(n: u64) -> LogEvent {
    LogEvent::Recovered {
        log: LogId::Wal,
        durable: wal_runs(n),
    }
}

fn synced(n: u64) -> LogEvent {
    LogEvent::Synced {
        log: LogId::Wal,
        durable: wal_runs(n),
    }
}

fn acked(lsn: u64, req_id: u64) -> LogEvent {
    LogEvent::Acked {
        log: LogId::Wal,
        reply: Reply::Attempt {
            operation: OperationId {
                session: 1,
                op: req_id,
            },
            req_id,
        },
        needs: LogPos { lsn, term: 0 },
        quorum: None,
    }
}

fn replica(partition: u32, replica: u32) -> LogId {
    LogId::Replica { partition, replica }
}

fn copy(event: &str, partition: u32, r: u32, terms: &[u64]) -> LogEvent {
    let log = replica(partition, r);
    let durable = runs_of(terms.iter().copied());
    match event {
        "recovered" => LogEvent::Recovered { log, durable },
        _ => LogEvent::Synced { log, durable },
    }
}

fn write_answered(partition: u32, primary: u32, lsn: u64, term: u64) -> LogEvent {
    LogEvent::Acked {
        log: replica(partition, primary),
        reply: Reply::Write {
            session: 9,
            req_id: lsn,
        },
        needs: LogPos { lsn, term },
        quorum: Some(Quorum {
            voters: vec![0, 1, 2],
            needed: 2,
        }),
    }
}

#[test]
fn a_reply_after_the_sync_that_covers_it_holds() {
    let j = judge(&[
        ev("server-0", 0, recovered(0)),
        ev("server-0", 5, synced(2)),
        ev("server-0", 5, acked(1, 1)),
        ev("server-0", 5, acked(2, 2)),
    ]);
    assert!(j.early.is_empty(), "{j:?}");
    assert_eq!((j.acks, j.syncs, j.logs), (2, 1, 1));
}

#[test]
fn a_reply_before_its_sync_is_told_with_both_times() {
    let j = judge(&[
        ev("server-0", 0, recovered(4)),
        ev("server-0", 3, synced(5)),
        // Record 6 appended during the sync that covers 5, released with it.
        ev("server-0", 3, acked(6, 7)),
        ev("server-0", 6, synced(6)),
    ]);
    assert_eq!(j.early.len(), 1);
    let e = &j.early[0];
    assert_eq!(e.ack.needs, LogPos { lsn: 6, term: 0 });
    assert_eq!(e.covered, Some((6_000_000, "server-0".into())));
    assert_eq!(
        e.then,
        Then::Own {
            through: Some(LogPos { lsn: 5, term: 0 }),
            since_ns: Some(3_000_000)
        }
    );
    let v = &j.violations(|_| Some(42))[0];
    assert_eq!(v.property, D1.id);
    assert_eq!(v.ops, [42]);
    assert!(v.message.contains("at 0.003 s"), "{}", v.message);
    assert!(v.message.contains("record 6"), "{}", v.message);
    assert!(
        v.message.contains("at 0.006 s, 3.0 ms after"),
        "{}",
        v.message
    );
    assert!(v.message.contains("operation #42"), "{}", v.message);
    assert_eq!(v.moments.len(), 2);
    assert!(v.evidence.as_ref().unwrap().rows.iter().any(|r| r.marked));
}

#[test]
fn a_reply_no_sync_ever_covers_is_never_synced() {
    let j = judge(&[
        ev("server-0", 0, recovered(0)),
        ev("server-0", 1, acked(1, 1)),
        // The node crashed: its next incarnation reads what survived.
        ev("server-0#1", 900, recovered(0)),
        ev("server-0#1", 905, synced(1)),
    ]);
    assert_eq!(j.early.len(), 1);
    assert_eq!(j.early[0].covered, None);
    let v = &j.violations(|_| None)[0];
    assert!(v.message.contains("never synced"), "{}", v.message);
    assert_eq!(v.moments.len(), 1);
}

#[test]
fn a_failed_sync_is_never_made_good_by_a_later_one() {
    let j = judge(&[
        ev("server-0", 0, recovered(3)),
        ev("server-0", 2, LogEvent::SyncFailed { log: LogId::Wal }),
        // The seeded bug syncs again and carries on.
        ev("server-0", 2, synced(4)),
        ev("server-0", 2, acked(4, 1)),
        // Records 1–3 were durable before: still covered.
        ev("server-0", 3, acked(3, 2)),
    ]);
    assert_eq!(j.early.len(), 1, "{j:?}");
    assert_eq!(j.early[0].broken_at, Some(2_000_000));
    let v = &j.violations(|_| None)[0];
    assert!(
        v.message
            .contains("never synced: a sync of its log had failed"),
        "{}",
        v.message
    );
    // Reading the disk again mends the log: a sync then counts.
    let j = judge(&[
        ev("server-0", 0, recovered(3)),
        ev("server-0", 2, LogEvent::SyncFailed { log: LogId::Wal }),
        ev("server-0", 2, recovered(3)),
        ev("server-0", 4, synced(4)),
        ev("server-0", 4, acked(4, 1)),
    ]);
    assert!(j.early.is_empty(), "{j:?}");
}

#[test]
fn logs_of_other_nodes_and_incarnations_do_not_cover_a_reply() {
    let j = judge(&[
        ev("server-0", 0, recovered(0)),
        ev("server-1", 0, recovered(0)),
        ev("server-1", 1, synced(3)),
        ev("server-0", 2, acked(1, 1)),
        ev("server-0", 4, synced(1)),
    ]);
    assert_eq!(j.early.len(), 1);
    assert_eq!(j.early[0].covered, Some((4_000_000, "server-0".into())));
}

#[test]
fn a_replica_s_append_ack_needs_its_own_copy_durable_with_the_entry_s_term() {
    let ack = |lsn, term| LogEvent::Acked {
        log: replica(0, 1),
        reply: Reply::Append { to: 0, seq: 4 },
        needs: LogPos { lsn, term },
        quorum: None,
    };
    // Held: entries 1–2 of term 1 are durable when it acknowledges 2.
    let j = judge(&[
        ev("replica-1", 0, copy("recovered", 0, 1, &[])),
        ev("replica-1", 3, copy("synced", 0, 1, &[1, 1])),
        ev("replica-1", 3, ack(2, 1)),
    ]);
    assert!(j.early.is_empty(), "{j:?}");
    // Broken: entry 2 durable only of an older term (a new primary's
    // entry replaced it, not yet synced).
    let j = judge(&[
        ev("replica-1", 0, copy("recovered", 0, 1, &[])),
        ev("replica-1", 3, copy("synced", 0, 1, &[1, 1])),
        ev("replica-1", 5, ack(2, 2)),
        ev("replica-1", 7, copy("synced", 0, 1, &[1, 2])),
    ]);
    assert_eq!(j.early.len(), 1);
    assert_eq!(j.early[0].covered, Some((7_000_000, "replica-1".into())));
    assert!(j.violations(|_| None)[0]
        .message
        .contains("entry 2 (term 2)"));
}

#[test]
fn a_replicated_write_needs_a_quorum_of_durable_copies() {
    // Two of three voters hold entry 3 of term 2 before the answer: held.
    let base = vec![
        ev("replica-0", 0, copy("recovered", 0, 0, &[])),
        ev("replica-1", 0, copy("recovered", 0, 1, &[])),
        ev("replica-2", 0, copy("recovered", 0, 2, &[])),
        ev("replica-0", 10, copy("synced", 0, 0, &[1, 2, 2])),
    ];
    let mut held = base.clone();
    held.push(ev("replica-1", 12, copy("synced", 0, 1, &[1, 2, 2])));
    held.push(ev("replica-0", 15, write_answered(0, 0, 3, 2)));
    assert!(judge(&held).early.is_empty());
    // Only the primary's own copy: one of three, two needed.
    let mut early = base.clone();
    early.push(ev("replica-0", 15, write_answered(0, 0, 3, 2)));
    early.push(ev("replica-2", 16, copy("synced", 0, 2, &[1, 2, 2])));
    let j = judge(&early);
    assert_eq!(j.early.len(), 1);
    assert_eq!(
        j.early[0].then,
        Then::Holders(vec![(0, "replica-0".into(), 10_000_000)])
    );
    assert_eq!(j.early[0].covered, Some((16_000_000, "replica-2".into())));
    let v = &j.violations(|_| None)[0];
    assert!(
        v.message
            .contains("1 of the 3 voters' copies held it durably (2 needed)"),
        "{}",
        v.message
    );
    // A copy of another partition, or of another term at that
    // position, does not count; a learner is not a voter.
    let mut wrong = base.clone();
    wrong.push(ev("replica-1", 12, copy("synced", 1, 1, &[1, 2, 2])));
    wrong.push(ev("replica-2", 12, copy("synced", 0, 2, &[1, 1, 1])));
    wrong.push(ev("reader-0", 12, copy("synced", 0, 3, &[1, 2, 2])));
    wrong.push(ev("replica-0", 15, write_answered(0, 0, 3, 2)));
    let j = judge(&wrong);
    assert_eq!(j.early.len(), 1);
    assert_eq!(j.early[0].covered, None);
    assert!(j.violations(|_| None)[0]
        .message
        .contains("never synced on a quorum"));
}

#[test]
fn a_copy_counts_from_when_it_first_held_the_entry_across_restarts() {
    // Replica 1 made entry 3 durable, crashed, and came back with it.
    let j = judge(&[
        ev("replica-0", 0, copy("recovered", 0, 0, &[])),
        ev("replica-1", 0, copy("recovered", 0, 1, &[])),
        ev("replica-0", 10, copy("synced", 0, 0, &[1, 1, 1])),
        ev("replica-1", 11, copy("synced", 0, 1, &[1, 1, 1])),
        ev("replica-1#1", 400, copy("recovered", 0, 1, &[1, 1, 1])),
        ev("replica-0", 401, write_answered(0, 0, 3, 1)),
    ]);
    assert!(j.early.is_empty(), "{j:?}");
}

#[test]
fn only_the_first_few_are_told_and_the_first_counts_them_all() {
    let mut events = vec![ev("server-0", 0, recovered(0))];
    for i in 1..=5 {
        events.push(ev("server-0", i, acked(i, i)));
        events.push(ev("server-0", i, synced(i)));
    }
    let j = judge(&events);
    assert_eq!(j.early.len(), 5);
    let vs = j.violations(|_| None);
    assert_eq!(vs.len(), TOLD);
    assert!(vs[0].evidence.as_ref().unwrap().notes[0].starts_with("5 acknowledgements"));
    assert!(vs[1].evidence.as_ref().unwrap().notes.is_empty());
    assert!(j.note().ends_with("5 before their sync"), "{}", j.note());
}

#[test]
fn the_note_counts_in_words() {
    let one = Judged {
        acks: 1,
        syncs: 1,
        logs: 1,
        early: Vec::new(),
    };
    assert_eq!(one.note(), "1 acknowledgement, 1 sync on 1 log");
    let two = Judged {
        acks: 2,
        syncs: 3,
        logs: 2,
        early: Vec::new(),
    };
    assert_eq!(two.note(), "2 acknowledgements, 3 syncs on 2 logs");
}

#[test]
fn a_history_without_log_events_is_undecided() {
    let h: History<(), (), (), LogEvent> = History {
        version: 1,
        ops: vec![],
        events: vec![],
        node_events: vec![],
        log_events: vec![],
    };
    let c = Durability::new().check(&h);
    assert!(
        matches!(c.verdict(), Verdict::Undecided { .. }),
        "{:?}",
        c.verdict()
    );
}
