//! Tests of the replica state machine, on a cluster of replicas driven by hand.

use super::*;
use crate::core::bugs::ModelBugs;
use crate::partition::Response;
use crate::services::cosmos::{CosmosRequest, ItemOp};

fn cfg(me: ReplicaId, bugs: ModelBugs) -> ReplicaConfig {
    ReplicaConfig {
        me,
        voters: vec![0, 1, 2],
        learners: vec![3],
        lease_ms: 2_000,
        drift_bound_ppm: 20_000,
        // Shorter than the lease: the lease promise is what holds votes back.
        election_timeout_ms: 300,
        heartbeat_ms: 100,
        ship_ms: 300,
        max_batch: 16,
        containers: vec![],
        bugs,
    }
}

fn upsert(id: &str, body: &str) -> Request {
    Request::Cosmos(CosmosRequest::Item {
        container: "c".into(),
        partition_key: id.into(),
        op: ItemOp::Upsert {
            id: id.into(),
            body: body.into(),
            if_match: None,
        },
    })
}

fn read(id: &str) -> Request {
    Request::Cosmos(CosmosRequest::Item {
        container: "c".into(),
        partition_key: id.into(),
        op: ItemOp::Read {
            id: id.into(),
            if_none_match: None,
        },
    })
}

fn body_of(o: &ReadOutcome) -> Option<String> {
    match o {
        ReadOutcome::Served {
            response: Response::Cosmos(r),
            ..
        } => r.item().and_then(|i| i.body.clone()),
        _ => None,
    }
}

/// Replicas 0..=3 with instant delivery, each with its own clock offset
/// from a shared "true" time, and links that can be cut.
struct Cluster {
    replicas: Vec<Replica>,
    /// Clock rate error, ppm, since `(true, own)` time `epoch`.
    drift_ppm: Vec<i64>,
    epoch: Vec<(Millis, Millis)>,
    now: Millis,
    cut: BTreeSet<ReplicaId>,
    persisted: Vec<Vec<Persist>>,
}

impl Cluster {
    fn new(bugs: ModelBugs) -> Cluster {
        Cluster {
            replicas: (0..4).map(|i| Replica::new(cfg(i, bugs), 0)).collect(),
            drift_ppm: vec![0; 4],
            epoch: vec![(0, 0); 4],
            now: 0,
            cut: BTreeSet::new(),
            persisted: vec![Vec::new(); 4],
        }
    }

    fn clock(&self, i: usize) -> Millis {
        let (true0, own0) = self.epoch[i];
        let d = (self.now - true0) as i64;
        (own0 as i64 + d + d * self.drift_ppm[i] / 1_000_000) as Millis
    }

    /// From now on replica `i`'s clock runs `ppm` off (no step).
    fn set_drift(&mut self, i: usize, ppm: i64) {
        self.epoch[i] = (self.now, self.clock(i));
        self.drift_ppm[i] = ppm;
    }

    /// Delivers messages until none is left (dropping those across a cut).
    fn settle(&mut self) {
        loop {
            let mut any = false;
            for i in 0..self.replicas.len() {
                let p = self.replicas[i].take_persist();
                self.persisted[i].extend(p);
                let out = self.replicas[i].take_out();
                for (to, msg) in out {
                    any = true;
                    let cut = self.cut.contains(&(i as u32)) || self.cut.contains(&to);
                    if !cut {
                        let now = self.clock(to as usize);
                        self.replicas[to as usize].on_message(i as u32, msg, now);
                    }
                }
            }
            if !any {
                break;
            }
        }
    }

    /// Advances true time by `ms` in 10 ms steps, ticking everyone.
    fn run(&mut self, ms: u64) {
        for _ in 0..ms / 10 {
            self.now += 10;
            for i in 0..self.replicas.len() {
                let now = self.clock(i);
                self.replicas[i].tick(now);
            }
            self.settle();
        }
    }

    fn primary(&self) -> Option<usize> {
        let mut p: Vec<usize> = (0..3)
            .filter(|i| {
                self.replicas[*i].role() == Role::Primary && !self.cut.contains(&(*i as u32))
            })
            .collect();
        p.sort_by_key(|i| std::cmp::Reverse(self.replicas[*i].term()));
        p.first().copied()
    }

    fn write(&mut self, i: usize, req: &Request) -> WriteOutcome {
        let now = self.clock(i);
        let o = self.replicas[i].write(req, now);
        self.settle();
        o
    }

    fn read(&mut self, i: usize, req: &Request, c: ReadConsistency, t: Option<u64>) -> ReadOutcome {
        let now = self.clock(i);
        self.replicas[i].read(req, c, t, now)
    }
}

#[test]
fn a_primary_is_elected_and_commits_a_write_once_a_quorum_holds_it() {
    let mut c = Cluster::new(ModelBugs::default());
    c.run(2_000);
    let p = c.primary().expect("a primary");
    assert_eq!(p, 0, "the shortest timeout campaigns first");
    // Cut both followers: the write is appended but cannot commit.
    c.cut = BTreeSet::from([1, 2]);
    let WriteOutcome::Pending { wait_lsn, term, .. } = c.write(p, &upsert("a", "x")) else {
        panic!("the primary takes writes");
    };
    assert!(!c.replicas[p].write_settled(wait_lsn, term));
    // One follower back: two of three hold it durably.
    c.cut = BTreeSet::from([2]);
    c.run(200);
    assert!(c.replicas[p].write_settled(wait_lsn, term));
    assert_eq!(c.replicas[1].last_lsn(), wait_lsn);
}

#[test]
fn commit_before_quorum_commits_with_the_primary_alone() {
    let mut c = Cluster::new(only("commit_before_quorum"));
    c.run(2_000);
    let p = c.primary().expect("a primary");
    c.cut = BTreeSet::from([1, 2]);
    let WriteOutcome::Pending { wait_lsn, term, .. } = c.write(p, &upsert("a", "x")) else {
        panic!("the primary takes writes");
    };
    assert!(c.replicas[p].write_settled(wait_lsn, term));
}

fn only(name: &str) -> ModelBugs {
    let mut b = ModelBugs::default();
    assert!(b.set(name));
    b
}

#[test]
fn followers_apply_only_committed_entries_in_lsn_order() {
    let mut c = Cluster::new(ModelBugs::default());
    c.run(2_000);
    let p = c.primary().expect("a primary");
    for i in 0..5 {
        c.write(p, &upsert("a", &format!("v{i}")));
    }
    c.run(500);
    for r in &c.replicas {
        assert_eq!(
            r.applied_lsn(),
            c.replicas[p].commit(),
            "replica {}",
            r.cfg.me
        );
        assert!(r.applied_lsn() <= r.commit());
    }
    let served = c.read(3, &read("a"), ReadConsistency::Eventual, None);
    assert_eq!(body_of(&served).as_deref(), Some("v4"));
}

#[test]
fn a_new_primary_holds_every_committed_entry_and_fences_the_old_one() {
    let mut c = Cluster::new(ModelBugs::default());
    c.run(2_000);
    let old = c.primary().expect("a primary");
    c.write(old, &upsert("a", "x"));
    c.run(200);
    let committed = c.replicas[old].commit();
    let old_term = c.replicas[old].term();
    c.cut = BTreeSet::from([old as u32]);
    c.run(5_000);
    let new = c.primary().expect("a new primary");
    assert_ne!(new, old);
    assert!(c.replicas[new].term() > old_term);
    assert!(c.replicas[new].commit() >= committed);
    // The old primary hears the new term and steps down.
    c.cut.clear();
    c.run(500);
    assert_eq!(
        (0..3)
            .filter(|i| c.replicas[*i].role() == Role::Primary)
            .count(),
        1
    );
    let new = c.primary().expect("a primary after the heal");
    assert!((0..3).all(|i| c.replicas[i].term() == c.replicas[new].term()));
    let read = c.read(new, &read("a"), ReadConsistency::Strong, None);
    assert_eq!(body_of(&read).as_deref(), Some("x"));
}

#[test]
fn a_vote_goes_only_to_a_candidate_with_an_up_to_date_log() {
    let mut r = Replica::new(cfg(1, ModelBugs::default()), 0);
    r.on_message(
        0,
        Message::Append {
            term: 3,
            prev_lsn: 0,
            prev_term: 0,
            entries: vec![Entry {
                term: 3,
                lsn: 1,
                effect: noop(),
            }],
            commit: 0,
            seq: 1,
        },
        0,
    );
    r.take_out();
    // Long after the lease promise: a candidate with a shorter log is refused.
    let later = 10_000;
    r.on_message(
        2,
        Message::RequestVote {
            term: 4,
            last_lsn: 0,
            last_term: 0,
        },
        later,
    );
    assert_eq!(
        r.take_out(),
        vec![(
            2,
            Message::Vote {
                term: 4,
                granted: false,
                promised_ms: 0
            }
        )]
    );
    // The bug grants it.
    let mut bad = Replica::new(cfg(1, only("failover_loses_committed")), 0);
    bad.on_message(
        2,
        Message::RequestVote {
            term: 4,
            last_lsn: 0,
            last_term: 0,
        },
        later,
    );
    assert_eq!(
        bad.take_out(),
        vec![(
            2,
            Message::Vote {
                term: 4,
                granted: true,
                promised_ms: 0
            }
        )]
    );
}

#[test]
fn a_voter_grants_no_vote_while_it_promises_a_lease() {
    let mut r = Replica::new(cfg(1, ModelBugs::default()), 0);
    r.on_message(
        0,
        Message::Append {
            term: 1,
            prev_lsn: 0,
            prev_term: 0,
            entries: vec![],
            commit: 0,
            seq: 1,
        },
        100,
    );
    r.take_out();
    let vote = |r: &mut Replica, now| {
        r.on_message(
            2,
            Message::RequestVote {
                term: 2,
                last_lsn: 0,
                last_term: 0,
            },
            now,
        );
        r.take_out()
    };
    let margin = r.cfg.margin_ms();
    assert_eq!(margin, 81);
    // Promise: until 100 + 2000 + 81 of its own clock.
    assert_eq!(
        vote(&mut r, 100 + 2_000 + margin - 1),
        vec![(
            2,
            Message::Vote {
                term: 1,
                granted: false,
                promised_ms: 1
            }
        )]
    );
    assert_eq!(r.term(), 1, "the promise keeps the term too");
    assert_eq!(
        vote(&mut r, 100 + 2_000 + margin),
        vec![(
            2,
            Message::Vote {
                term: 2,
                granted: true,
                promised_ms: 0
            }
        )]
    );
}

#[test]
fn the_primary_serves_strong_reads_only_within_its_lease_minus_the_margin() {
    let mut c = Cluster::new(ModelBugs::default());
    c.run(2_000);
    let p = c.primary().expect("a primary");
    assert!(matches!(
        c.read(p, &read("a"), ReadConsistency::Strong, None),
        ReadOutcome::Served { .. }
    ));
    // Cut off: the lease runs from the last round a majority answered.
    c.cut = BTreeSet::from([p as u32]);
    let cut_at = c.clock(p);
    c.run(1_800);
    assert!(c.replicas[p].lease_valid(c.clock(p)));
    let margin = c.replicas[p].cfg.margin_ms();
    c.run(2_000 - margin - 1_800 + 100);
    assert!(!c.replicas[p].lease_valid(c.clock(p)), "cut at {cut_at}");
    assert_eq!(
        c.read(p, &read("a"), ReadConsistency::Strong, None),
        ReadOutcome::NoPrimary
    );
    // A follower sends strong reads to the primary it knows.
    let f = (p + 1) % 3;
    assert!(matches!(
        c.read(f, &read("a"), ReadConsistency::Strong, None),
        ReadOutcome::NotPrimary { .. }
    ));
}

#[test]
fn stale_read_after_failover_serves_strong_reads_without_a_lease() {
    let mut c = Cluster::new(only("stale_read_after_failover"));
    c.run(2_000);
    let p = c.primary().expect("a primary");
    c.cut = BTreeSet::from([p as u32]);
    c.run(2_150);
    assert!((0..3).any(|i| i != p && c.replicas[i].role() == Role::Primary));
    assert!(matches!(
        c.read(p, &read("a"), ReadConsistency::Strong, None),
        ReadOutcome::Served { .. }
    ));
}

#[test]
fn under_the_drift_bound_no_new_primary_is_elected_while_the_old_lease_holds() {
    for bugs in [ModelBugs::default(), only("leader_lease_no_skew_margin")] {
        let mut c = Cluster::new(bugs);
        c.run(2_000);
        let p = c.primary().expect("a primary");
        // The primary's clock runs 2% slow, the others' 2% fast.
        for i in 0..3 {
            c.set_drift(i, if i == p { -20_000 } else { 20_000 });
        }
        c.cut = BTreeSet::from([p as u32]);
        let mut overlap = false;
        for _ in 0..600 {
            c.run(10);
            let lease = c.replicas[p].lease_valid(c.clock(p));
            let other = (0..3).any(|i| i != p && c.replicas[i].role() == Role::Primary);
            overlap |= lease && other;
        }
        assert_eq!(
            overlap,
            bugs.leader_lease_no_skew_margin,
            "two primaries serving at once with {:?}",
            bugs.enabled()
        );
    }
}

#[test]
fn a_session_read_below_the_token_is_refused_unless_the_bug_ignores_it() {
    for bugs in [ModelBugs::default(), only("session_token_ignored")] {
        let mut r = Replica::new(cfg(3, bugs), 0);
        let o = r.read(&read("a"), ReadConsistency::Session, Some(5), 0);
        if bugs.session_token_ignored {
            assert!(matches!(o, ReadOutcome::Served { lsn: 0, .. }));
        } else {
            assert_eq!(o, ReadOutcome::SessionNotAvailable);
        }
        assert!(matches!(
            r.read(&read("a"), ReadConsistency::Session, Some(0), 0),
            ReadOutcome::Served { .. }
        ));
    }
}

#[test]
fn writes_are_refused_by_read_replicas_and_redirected_by_followers() {
    let mut c = Cluster::new(ModelBugs::default());
    assert_eq!(c.write(3, &upsert("a", "x")), WriteOutcome::Forbidden);
    assert_eq!(c.write(1, &upsert("a", "x")), WriteOutcome::NoPrimary);
    c.run(2_000);
    let p = c.primary().expect("a primary") as u32;
    let f = (p as usize + 1) % 3;
    assert_eq!(
        c.write(f, &upsert("a", "x")),
        WriteOutcome::NotPrimary { hint: p }
    );
}

#[test]
fn a_follower_names_no_primary_after_an_election_timeout_of_silence() {
    let mut c = Cluster::new(ModelBugs::default());
    c.run(3_000);
    let p = c.primary().expect("a primary");
    let f = (p + 1) % 3;
    assert_eq!(
        c.write(f, &upsert("a", "x")),
        WriteOutcome::NotPrimary { hint: p as u32 }
    );
    // The primary is cut off: after an election timeout of silence (and
    // before the followers' promises end) the follower names nobody.
    c.cut = BTreeSet::from([p as u32]);
    c.run(1_000);
    assert_eq!(c.write(f, &upsert("a", "x")), WriteOutcome::NoPrimary);
    // Once another is elected, it names that one.
    c.run(3_000);
    let q = c.primary().expect("a new primary");
    assert_ne!(q, p);
    let other = (0..3).find(|i| *i != p && *i != q).unwrap();
    assert_eq!(
        c.write(other, &upsert("a", "x")),
        WriteOutcome::NotPrimary { hint: q as u32 }
    );
}

#[test]
fn a_candidate_refused_for_a_promise_asks_again_when_it_ends() {
    let mut r = Replica::new(cfg(1, ModelBugs::default()), 0);
    // A candidate of term 1 at time 1000 (own clock).
    r.tick(1_000);
    assert_eq!(r.role(), Role::Candidate);
    r.take_out();
    // Voter 0 refuses: its promise runs 40 ms more.
    r.on_message(
        0,
        Message::Vote {
            term: 1,
            granted: false,
            promised_ms: 40,
        },
        1_010,
    );
    r.tick(1_040);
    assert_eq!(r.term(), 1, "not before the promise ends");
    r.tick(1_060);
    assert_eq!(
        r.term(),
        2,
        "asks again just after, not an election timeout later"
    );
    assert!(r
        .take_out()
        .iter()
        .any(|(_, m)| matches!(m, Message::RequestVote { term: 2, .. })));
}

#[test]
fn read_replicas_take_only_the_committed_log() {
    let mut c = Cluster::new(ModelBugs::default());
    c.run(2_000);
    let p = c.primary().expect("a primary");
    c.cut = BTreeSet::from([1, 2]);
    c.write(p, &upsert("a", "x"));
    c.run(1_000);
    assert!(c.replicas[3].last_lsn() <= c.replicas[p].commit());
    assert_eq!(c.replicas[3].applied_lsn(), c.replicas[p].commit());
    // The bug ships and applies the uncommitted entry.
    let mut c = Cluster::new(only("learner_reads_uncommitted"));
    c.run(2_000);
    let p = c.primary().expect("a primary");
    c.cut = BTreeSet::from([1, 2]);
    c.write(p, &upsert("a", "x"));
    c.run(1_000);
    assert!(c.replicas[3].applied_lsn() > c.replicas[p].commit());
}

#[test]
fn a_recovered_replica_has_its_log_term_vote_and_committed_state() {
    let mut c = Cluster::new(ModelBugs::default());
    c.run(2_000);
    let p = c.primary().expect("a primary");
    for i in 0..3 {
        c.write(p, &upsert("a", &format!("v{i}")));
    }
    c.run(300);
    let f = (p + 1) % 3;
    let before = &c.replicas[f];
    let r = Replica::recover(cfg(f as u32, ModelBugs::default()), &c.persisted[f], 0);
    assert_eq!(r.log(), before.log());
    assert_eq!(r.term(), before.term());
    assert_eq!(r.applied(), before.applied());
    assert_eq!(r.role(), Role::Follower);
}

#[test]
fn session_tokens_round_trip() {
    assert_eq!(session_token(3, 17), "3:17");
    assert_eq!(parse_session_token("3:17"), Some((3, 17)));
    assert_eq!(parse_session_token("x"), None);
}
