//! Tests of `overcast_scenarios::services::regions::safety`.
use crate::units::services::regions::history::build::Builder;
use overcast_scenarios::services::regions::history::AppliedEntry;
use overcast_scenarios::services::regions::history::RegionEvent;
use overcast_scenarios::services::regions::properties::{ELECTION_SAFETY, STATE_MACHINE_SAFETY};
use overcast_scenarios::services::regions::safety::*;
use overcast_sim::check::{Checker, Evidence, Verdict, Violation};

const S: u64 = 1_000_000_000;

fn primary(b: &mut Builder, node: &str, at_s: u64, partition: u32, term: u64) {
    b.event(node, at_s * S, RegionEvent::Primary { partition, term });
}

fn applied(b: &mut Builder, node: &str, at_s: u64, partition: u32, entries: &[(u64, u64, u32)]) {
    let entries = entries
        .iter()
        .map(|&(lsn, term, digest)| AppliedEntry { lsn, term, digest })
        .collect();
    b.event(node, at_s * S, RegionEvent::Applied { partition, entries });
}

fn violations(b: &Builder) -> Vec<Violation> {
    match RaftSafety.check(&b.h).verdict() {
        Verdict::Broken { violations } => violations.clone(),
        _ => vec![],
    }
}

/// A correct run: successive primaries, replicas applying the same log at
/// different times, a restarted replica re-applying its prefix, and the
/// same node primary again in a later term under another incarnation.
fn healthy() -> Builder {
    let mut b = Builder::new();
    primary(&mut b, "replica-0", 1, 0, 1);
    primary(&mut b, "replica-1", 1, 1, 1);
    applied(&mut b, "replica-0", 2, 0, &[(1, 1, 7), (2, 1, 8)]);
    applied(&mut b, "replica-2", 3, 0, &[(1, 1, 7)]);
    applied(&mut b, "reader-0", 4, 0, &[(1, 1, 7), (2, 1, 8)]);
    applied(&mut b, "replica-2", 5, 0, &[(2, 1, 8)]);
    // A different partition has its own LSNs.
    applied(&mut b, "replica-1", 5, 1, &[(1, 1, 99)]);
    primary(&mut b, "replica-2", 6, 0, 2);
    applied(&mut b, "replica-2", 7, 0, &[(3, 2, 9)]);
    // replica-0 restarts and replays what it had applied.
    applied(
        &mut b,
        "replica-0#1",
        8,
        0,
        &[(1, 1, 7), (2, 1, 8), (3, 2, 9)],
    );
    primary(&mut b, "replica-0#1", 9, 0, 3);
    // The same node announcing the same term twice (e.g. the report and
    // a later copy) is one primary.
    primary(&mut b, "replica-0#1", 9, 0, 3);
    b
}

#[test]
fn a_correct_history_holds_both_properties() {
    let b = healthy();
    let checked = RaftSafety.check(&b.h);
    assert_eq!(checked.verdict(), &Verdict::Held, "{:?}", violations(&b));
    assert_eq!(
        RaftSafety.properties(),
        &[ELECTION_SAFETY, STATE_MACHINE_SAFETY]
    );
}

#[test]
fn two_nodes_primary_in_one_term_break_election_safety() {
    let mut b = healthy();
    primary(&mut b, "replica-1#2", 10, 0, 3);
    let v = violations(&b);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].property, ELECTION_SAFETY.id);
    assert!(
        v[0].message.contains("partition 0, term 3"),
        "{}",
        v[0].message
    );
    assert!(v[0].message.contains("replica-0#1"), "{}", v[0].message);
    assert!(v[0].message.contains("replica-1#2"), "{}", v[0].message);
    assert!(v[0].message.contains("9.000 s"), "{}", v[0].message);
    assert!(v[0].message.contains("10.000 s"), "{}", v[0].message);
}

#[test]
fn two_replicas_applying_different_entries_at_one_lsn_break_state_machine_safety() {
    let mut b = healthy();
    // reader-1 applied, at LSN 3, an entry of the deposed term 1.
    applied(
        &mut b,
        "reader-1",
        10,
        0,
        &[(1, 1, 7), (2, 1, 8), (3, 1, 42)],
    );
    let v = violations(&b);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].property, STATE_MACHINE_SAFETY.id);
    let m = &v[0].message;
    assert!(m.contains("partition 0, LSN 3"), "{m}");
    assert!(m.contains("replica-2") && m.contains("reader-1"), "{m}");
    assert!(m.contains("7.000 s") && m.contains("10.000 s"), "{m}");
    assert!(m.contains("two replicas"), "{m}");
    // The account marks the entry the log did not keep (the deposed
    // term's, which reader-1 applied), not the later term's.
    let account = v[0].evidence.as_ref().expect("an account");
    let marked = marked_nodes(account);
    assert_eq!(marked, ["reader-1"], "{account:?}");
    let lead = account.lead.join(" ");
    assert!(
        lead.contains("reader-1 applied term 1 (digest 0000002a) at LSN 3 from 10.000 s")
            && lead.contains("term 2 (digest 00000009) replaced it")
            && lead.contains("applied an uncommitted entry"),
        "{lead}"
    );
}

/// The nodes of an account's marked rows.
fn marked_nodes(account: &Evidence) -> Vec<&str> {
    account
        .rows
        .iter()
        .filter(|r| r.marked)
        .map(|r| r.cells[1].as_str())
        .collect()
}

#[test]
fn a_replica_whose_applied_prefix_changes_breaks_state_machine_safety() {
    let mut b = healthy();
    // replica-2 re-applies LSN 2 with another effect (same term).
    applied(
        &mut b,
        "replica-2#1",
        10,
        0,
        &[(1, 1, 7), (2, 1, 5), (3, 2, 6)],
    );
    let v = violations(&b);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].property, STATE_MACHINE_SAFETY.id);
    let m = &v[0].message;
    assert!(m.contains("partition 0, LSN 2"), "{m}");
    assert!(m.contains("applied prefix changed"), "{m}");
    assert!(m.contains("1 more applied entries"), "{m}");
    // Of two entries of one term, the one fewer nodes applied is marked.
    let account = v[0].evidence.as_ref().expect("an account");
    let marked = marked_nodes(account);
    assert_eq!(marked, ["replica-2#1"], "{account:?}");
}

#[test]
fn a_history_without_applied_entries_is_partly_judged() {
    let mut b = Builder::new();
    primary(&mut b, "replica-0", 1, 0, 1);
    let checked = RaftSafety.check(&b.h);
    assert_eq!(checked.verdict(), &Verdict::Held);
    assert!(checked.partly_judged);
}
