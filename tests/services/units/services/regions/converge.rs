//! Tests of `overcast_scenarios::services::regions::converge`.
use crate::units::services::regions::history::build::Builder;
use overcast_scenarios::services::regions::converge::*;
use overcast_scenarios::services::regions::history::Consistency::{Eventual, Session};
use overcast_scenarios::services::regions::history::{FinalItem, RegionEvent};
use overcast_sim::check::{Checker, Verdict};

fn item(item: &str, etag: &str, body: &str) -> FinalItem {
    FinalItem {
        item: item.into(),
        etag: etag.into(),
        body: body.into(),
    }
}

fn fin(role: &str, lsn: u64, items: Vec<FinalItem>, replicas: u32) -> RegionEvent {
    RegionEvent::Final {
        partition: 0,
        region: if role == "read" { "east" } else { "west" }.into(),
        role: role.into(),
        term: 2,
        applied_lsn: lsn,
        items,
        replicas,
    }
}

fn written() -> Builder {
    let mut b = Builder::new();
    b.write("client-0", "create", "k", "b1", None, (0, 10), Some("e1"));
    b.write("client-0", "replace", "k", "b2", Some("e1"), (20, 30), None);
    b
}

#[test]
fn reads_of_written_bodies_and_equal_final_states_hold() {
    let mut b = written();
    b.read("client-1", Eventual, "k", (5, 15), "e1", "b1");
    b.read("client-1", Eventual, "k", (40, 50), "e2", "b2");
    let state = vec![item("k", "e2", "b2")];
    b.event("server-0", 100, fin("primary", 2, state.clone(), 2));
    b.event("server-3", 100, fin("read", 2, state, 2));
    let c = Convergence.check(&b.h);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
    assert!(c.note.contains("1 partitions"), "{}", c.note);
}

#[test]
fn a_read_of_a_body_no_write_produced_is_a_phantom() {
    let mut b = written();
    b.read("client-1", Session, "k", (40, 50), "e9", "b9");
    let c = Convergence.check(&b.h);
    let v = c.verdict().violations();
    assert_eq!(v.len(), 1, "{c:?}");
    assert_eq!(v[0].property, "convergence");
    assert!(v[0].message.contains("phantom"), "{}", v[0].message);
}

#[test]
fn a_read_of_a_body_before_its_write_was_issued_is_a_phantom() {
    let mut b = Builder::new();
    b.read("client-1", Eventual, "k", (0, 5), "e1", "b1");
    b.write("client-0", "create", "k", "b1", None, (10, 20), Some("e1"));
    let c = Convergence.check(&b.h);
    assert_eq!(c.verdict().violations().len(), 1, "{c:?}");
    assert!(c.verdict().violations()[0]
        .message
        .contains("before its write op 1"));
}

#[test]
fn a_replica_behind_its_primary_after_quiet_breaks_convergence() {
    let mut b = written();
    b.event(
        "server-0",
        100,
        fin("primary", 2, vec![item("k", "e2", "b2")], 2),
    );
    b.event(
        "server-3",
        100,
        fin("read", 1, vec![item("k", "e1", "b1")], 2),
    );
    let c = Convergence.check(&b.h);
    let v = c.verdict().violations();
    assert_eq!(v.len(), 1, "{c:?}");
    for words in [
        "replica server-3",
        "applied LSN 1",
        "primary server-0",
        "item k",
    ] {
        assert!(v[0].message.contains(words), "{words}: {}", v[0].message);
    }
}

#[test]
fn an_unsettled_end_is_not_judged_and_the_note_says_so() {
    let mut b = written();
    b.event(
        "server-0",
        100,
        fin("primary", 2, vec![item("k", "e2", "b2")], 3),
    );
    b.event(
        "server-3",
        100,
        fin("read", 1, vec![item("k", "e1", "b1")], 3),
    );
    let c = Convergence.check(&b.h);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
    assert!(c.note.contains("not settled"), "{}", c.note);
    assert!(c.note.contains("2 of 3 replicas"), "{}", c.note);
}
