//! Tests of `overcast_scenarios::services::regions::durable`.
use crate::units::services::regions::history::build::Builder;
use overcast_scenarios::services::regions::durable::*;
use overcast_scenarios::services::regions::history::FinalItem;
use overcast_scenarios::services::regions::history::RegionEvent;
use overcast_sim::check::{Checker, Verdict};

fn fin(role: &str, items: &[(&str, &str, &str)], replicas: u32) -> RegionEvent {
    RegionEvent::Final {
        partition: 0,
        region: "west".into(),
        role: role.into(),
        term: 3,
        applied_lsn: 5,
        items: items
            .iter()
            .map(|(i, e, b)| FinalItem {
                item: i.to_string(),
                etag: e.to_string(),
                body: b.to_string(),
            })
            .collect(),
        replicas,
    }
}

#[test]
fn acknowledged_writes_kept_or_superseded_hold() {
    let mut b = Builder::create_then_replace();
    b.event("server-0", 100, fin("primary", &[("k", "e2", "b2")], 1));
    let c = Durability.check(&b.h);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
    assert!(c.note.contains("2 acknowledged writes"), "{}", c.note);
}

#[test]
fn a_final_state_older_than_an_acknowledged_write_is_a_loss_naming_the_new_primary() {
    let mut b = Builder::create_then_replace();
    b.event(
        "server-1",
        50,
        RegionEvent::Primary {
            partition: 0,
            term: 3,
        },
    );
    b.event("server-1", 100, fin("primary", &[("k", "e1", "b1")], 1));
    let c = Durability.check(&b.h);
    let v = c.verdict().violations();
    assert_eq!(v.len(), 1, "{c:?}");
    assert_eq!(v[0].property, "durability");
    for words in [
        "replace op 1",
        "ETag e2",
        "0.000 s",
        "server-1 (partition 0, term 3)",
    ] {
        assert!(v[0].message.contains(words), "{words}: {}", v[0].message);
    }
}

#[test]
fn a_fork_in_the_if_match_chain_is_a_loss_even_without_a_final_state() {
    let mut b = Builder::create_then_replace();
    b.write(
        "client-1",
        "replace",
        "k",
        "b3",
        Some("e1"),
        (40, 50),
        Some("e3"),
    );
    let c = Durability.check(&b.h);
    let v = c.verdict().violations();
    assert_eq!(v.len(), 1, "{c:?}");
    assert!(v[0].message.contains("If-Match e1"), "{}", v[0].message);
    assert_eq!(v[0].ops, vec![1]);
}

#[test]
fn a_vanished_item_is_a_loss_unless_a_delete_may_have_followed() {
    let mut b = Builder::create_then_replace();
    b.write("client-0", "create", "j", "c1", None, (0, 10), Some("f1"));
    b.event("server-0", 100, fin("primary", &[("j", "f1", "c1")], 1));
    let c = Durability.check(&b.h);
    assert_eq!(c.verdict().violations().len(), 2, "{c:?}");
    assert!(c.verdict().violations()[0].message.contains("no item k"));

    let mut b = Builder::create_then_replace();
    b.write("client-0", "create", "j", "c1", None, (0, 10), Some("f1"));
    b.delete("client-1", "k", Some("e2"), (40, 50));
    b.event("server-0", 100, fin("primary", &[("j", "f1", "c1")], 1));
    let c = Durability.check(&b.h);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
}

#[test]
fn concurrent_blind_writes_and_unsettled_ends_are_not_judged_and_say_so() {
    let mut b = Builder::new();
    b.write("client-0", "upsert", "k", "b1", None, (0, 30), Some("e1"));
    b.write("client-1", "upsert", "k", "b2", None, (5, 35), Some("e2"));
    b.event("server-0", 100, fin("primary", &[("k", "e2", "b2")], 1));
    let c = Durability.check(&b.h);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
    assert!(c.note.contains("1 not judged"), "{}", c.note);

    let mut b = Builder::create_then_replace();
    b.event("server-1", 100, fin("primary", &[("k", "e1", "b1")], 2));
    let c = Durability.check(&b.h);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
    assert!(c.note.contains("forks only"), "{}", c.note);
}
