//! Tests of the server's deduplication table and fault points.

use super::dedup::OUTCOMES_PER_SESSION;
use super::*;

fn reply(status: u16) -> WireReply {
    WireReply::Transient {
        status,
        sub_status: 0,
        retry_after_ms: None,
    }
}

fn held(req_id: u64, need: u64) -> Waiting {
    Waiting {
        to: "10.0.0.1:1".parse().expect("an address"),
        req_id,
        session: 7,
        key: Some((7, req_id)),
        reply: reply(200),
        need,
        remember: true,
        arrival: Arrival {
            operation: OperationId { session: 7, op: 1 },
            received_ns: 0,
            received_local_ms: 0,
            sent_ns: 0,
            write: true,
        },
        acks: None,
    }
}

#[test]
fn a_sync_releases_only_the_replies_whose_records_it_covers_in_apply_order() {
    // Records 10.. appended: req 1 wrote seq 10, req 2 read after it,
    // req 3 wrote seq 11 after the sync covering seq 10 had started.
    let mut c = GroupCommit::new(10);
    assert_eq!(c.unsynced(12), 2);
    c.hold(held(1, 11));
    c.hold(held(2, 11));
    c.hold(held(3, 12));
    assert!(c.waiting_for((7, 3)).is_some());
    let first = c.release(11);
    assert_eq!(first.records, 1);
    let ids: Vec<u64> = first.replies.iter().map(|w| w.req_id).collect();
    assert_eq!(ids, vec![1, 2]);
    assert_eq!(c.unsynced(12), 1);
    assert!(c.waiting_for((7, 1)).is_none());
    let second = c.release(12);
    assert_eq!(second.replies.len(), 1);
    assert_eq!(c.unsynced(12), 0);
}

#[test]
fn a_failed_sync_drops_every_held_reply_and_names_the_attempts_in_doubt() {
    let mut c = GroupCommit::new(0);
    let original = held(4, 1);
    let duplicate = original.copy_to("10.0.0.2:1".parse().expect("an address"));
    assert!(!duplicate.remember, "the original records the outcome");
    c.hold(original);
    c.hold(duplicate);
    c.hold(held(5, 2));
    let in_doubt: Vec<_> = c.abandon().iter().filter_map(|w| w.key).collect();
    assert_eq!(in_doubt, vec![(7, 4), (7, 5)]);
    assert!(c.release(2).replies.is_empty());
}

#[test]
fn a_duplicate_is_answered_from_the_table_and_an_old_one_is_dropped() {
    let mut t = Dedup::default();
    assert!(matches!(t.seen(7, 1), Seen::New));
    t.record(7, 1, Some(&reply(429)));
    assert!(matches!(t.seen(7, 1), Seen::Answered(r) if r == reply(429)));
    assert!(matches!(t.seen(8, 1), Seen::New), "another session");
    for id in 2..=(OUTCOMES_PER_SESSION as u64 + 1) {
        t.record(7, id, Some(&reply(200)));
    }
    assert!(
        matches!(t.seen(7, 1), Seen::Stale),
        "forgotten: below the floor"
    );
    assert!(matches!(t.seen(7, 2), Seen::Answered(_)));
    t.record(7, 100, None);
    assert!(matches!(t.seen(7, 100), Seen::Stale), "in doubt");
    assert!(matches!(t.seen(7, 101), Seen::New));
}
