//! Tests of `overcast_scenarios::services::regions::session`.
use crate::units::services::regions::history::build::Builder;
use overcast_scenarios::services::regions::history::Consistency::{Eventual, Session};
use overcast_scenarios::services::regions::session::*;
use overcast_sim::check::{Checked, Checker, Verdict};

fn verdict(b: &Builder) -> Checked {
    SessionGuarantees.check(&b.h)
}

#[test]
fn reads_of_the_sessions_own_write_or_newer_hold() {
    let mut b = Builder::create_then_replace();
    b.read("client-0", Session, "k", (40, 50), "e2", "b2");
    b.write(
        "client-1",
        "replace",
        "k",
        "b3",
        Some("e2"),
        (60, 70),
        Some("e3"),
    );
    b.read("client-0", Session, "k", (80, 90), "e3", "b3");
    b.failed_read("client-0", "k", (100, 110), 404, 1002);
    b.failed_read("client-0", "k", (120, 130), 503, 0);
    let c = verdict(&b);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
    assert!(c.note.contains("2 sessions"), "{}", c.note);
}

#[test]
fn a_read_older_than_the_sessions_own_write_breaks_r5_and_names_everything() {
    let mut b = Builder::create_then_replace();
    b.read("client-0", Session, "k", (40, 50), "e1", "b1");
    let c = verdict(&b);
    let v = c.verdict().violations();
    assert_eq!(v.len(), 1, "{c:?}");
    assert_eq!(v[0].property, "R5");
    for words in [
        "client-0",
        "item k",
        "version e1",
        "version e2",
        "its write op 1",
        "session token p0:1",
        "west/server-1",
    ] {
        assert!(v[0].message.contains(words), "{words}: {}", v[0].message);
    }
    // The read that broke the guarantee first, then the write it saw.
    assert_eq!(v[0].ops, vec![2, 1]);
}

#[test]
fn monotonic_reads_are_judged_across_reads_of_other_writers_versions() {
    let mut b = Builder::create_then_replace();
    b.read("client-1", Session, "k", (40, 50), "e2", "b2");
    b.read("client-1", Session, "k", (60, 70), "e1", "b1");
    let c = verdict(&b);
    let v = c.verdict().violations();
    assert_eq!(v.len(), 1, "{c:?}");
    assert!(v[0].message.contains("its read op 2"), "{}", v[0].message);
}

#[test]
fn a_recreated_client_is_a_new_session_and_eventual_reads_are_not_judged() {
    let mut b = Builder::create_then_replace();
    b.read("client-0", Eventual, "k", (40, 50), "e1", "b1");
    b.read("client-0#1", Session, "k", (60, 70), "e1", "b1");
    let c = verdict(&b);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
}

#[test]
fn a_404_after_the_sessions_own_create_breaks_r5_unless_a_delete_may_follow() {
    let mut b = Builder::create_then_replace();
    b.failed_read("client-0", "k", (40, 50), 404, 0);
    let c = verdict(&b);
    assert_eq!(c.verdict().violations().len(), 1, "{c:?}");
    assert!(c.verdict().violations()[0]
        .message
        .contains("found no item"));

    let mut b = Builder::create_then_replace();
    b.delete("client-1", "k", None, (35, 45));
    b.failed_read("client-0", "k", (40, 50), 404, 0);
    let c = verdict(&b);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
    assert!(c.note.contains("not judged: 1"), "{}", c.note);
}

#[test]
fn unordered_versions_are_not_judged_and_the_note_says_so() {
    let mut b = Builder::new();
    // Two concurrent blind writes: nothing orders e1 and e2.
    b.write("client-0", "upsert", "k", "b1", None, (0, 30), Some("e1"));
    b.write("client-1", "upsert", "k", "b2", None, (5, 35), Some("e2"));
    b.read("client-0", Session, "k", (40, 50), "e2", "b2");
    let c = verdict(&b);
    assert_eq!(c.verdict(), &Verdict::Held, "{c:?}");
    assert!(
        c.note
            .contains("1 whose order against what the session saw is not established"),
        "{}",
        c.note
    );
}

#[test]
fn a_write_ordered_before_the_version_the_session_read_breaks_write_follows_reads() {
    let mut b = Builder::new();
    b.write("client-0", "create", "k", "b1", None, (0, 10), Some("e1"));
    // client-1 reads e3, then blind-writes e2; yet e3's write had If-Match e2.
    b.read("client-1", Session, "k", (20, 30), "e3", "b3");
    b.write("client-1", "upsert", "k", "b2", None, (40, 50), Some("e2"));
    b.write("client-2", "replace", "k", "b3", Some("e2"), (15, 60), None);
    let c = verdict(&b);
    let v = c.verdict().violations();
    assert_eq!(v.len(), 1, "{c:?}");
    assert!(
        v[0].message.contains("write-follows-reads"),
        "{}",
        v[0].message
    );
}
