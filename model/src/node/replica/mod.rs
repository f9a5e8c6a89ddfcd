//! One replicated partition as a pure state machine: no async, no
//! clock, no randomness; every time is handed in (the node's own clock, ms).
//!
//! - The log: [`Entry`] `(term, lsn, partition::Effect)`, LSN 1, 2, 3... The
//!   primary of a term appends a client write's effect (evaluated on its
//!   *speculative* state: the applied state plus every entry it holds beyond
//!   it) and commits an entry once a quorum of the region's replica set (the
//!   voters) holds it durably and it is of the primary's own term (an older
//!   entry commits with it). Followers accept entries only after the
//!   consistency check on the previous entry (term, LSN), cut a conflicting
//!   suffix, and apply in LSN order up to the commit LSN the primary tells
//!   them: every replica's applied state is a committed prefix of the log.
//! - Terms fence an old primary: a message of a higher term makes anyone a
//!   follower of it; a message of a lower term is refused.
//! - Election: a voter that heard nothing from a primary for its election
//!   timeout, and whose lease promise has run out, becomes a candidate of the
//!   next term; a voter grants one vote per term, only to a candidate whose
//!   log is at least as up to date as its own (last term, then last LSN), and
//!   never while it still promises a lease to a primary. A majority of votes
//!   makes a primary, which first appends a no-op entry of its term: it serves
//!   strong reads only once that entry is committed (so it holds every
//!   committed entry in its applied state).
//! - Leader lease: the primary numbers its rounds of appends (`seq`) and
//!   notes on its own clock when it sent each; a voter that accepts an append
//!   promises, on its own clock, not to vote for anyone else for
//!   `lease_ms + margin` after it received it. The primary's lease runs from
//!   the send time of the newest round a majority (itself included) has
//!   answered, for `lease_ms - margin` of its own clock. With clock rates
//!   within `±drift_bound_ppm` of true time, `margin = 2·ρ·lease_ms + 1 ms`
//!   on each side keeps the primary's lease inside every promise in true
//!   time, so no other primary can be elected while it serves strong reads
//!   (the L9 idea of blob leases). A clock *step* is outside the bound.
//! - Read replicas (other regions) are learners: they take the committed log
//!   only, asynchronously (every `ship_ms`), never vote and never count.
//! - Reads: strong at the primary under its lease; session at any replica
//!   whose applied LSN reaches the client's token, else 404/1002; eventual at
//!   any replica. Session tokens are `"<partition>:<lsn>"` ([`session_token`]).
//!
//! - What it applied: every entry a replica applies (LSN, term and a digest
//!   of its effect, [`Applied`]) is noted for whoever runs it
//!   ([`Replica::take_applied`]), so that a harness can compare replicas
//!   (state machine safety) without reading their logs.
//!
//! Seeded bugs read here: `stale_read_after_failover`,
//! `leader_lease_no_skew_margin`, `session_token_ignored`,
//! `failover_loses_committed`, `commit_before_quorum`, `learner_reads_uncommitted`,
//! `vote_twice`, `stale_term_append`.

use crate::core::conditions::Millis;
use crate::partition::{Effect, Partition, Request};
use crate::services::cosmos::CosmosEffect;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

mod protocol;

pub(crate) use protocol::effect_digest;
pub use protocol::{
    parse_session_token, session_token, Applied, Entry, Message, Persist, ReadConsistency,
    ReadOutcome, ReplicaConfig, ReplicaId, Role, WriteOutcome,
};

/// The no-op entry a new primary appends.
fn noop() -> Effect {
    Effect::Cosmos(CosmosEffect::Batch(Vec::new()))
}

/// One replica of one partition.
#[derive(Clone, Debug)]
pub struct Replica {
    cfg: ReplicaConfig,
    role: Role,
    term: u64,
    voted_for: Option<ReplicaId>,
    log: Vec<Entry>,
    commit: u64,
    applied: Partition,
    /// The primary's state with every entry it holds (writes are evaluated on it).
    speculative: Option<Partition>,
    primary_hint: Option<ReplicaId>,
    /// When this replica last heard from a primary (or reset its timer), own clock.
    last_heard: Millis,
    /// It votes for nobody else before this, own clock.
    promise_until: Millis,
    votes: BTreeSet<ReplicaId>,
    next: BTreeMap<ReplicaId, u64>,
    matched: BTreeMap<ReplicaId, u64>,
    acked_seq: BTreeMap<ReplicaId, u64>,
    /// `(seq, sent at)` of recent rounds, oldest first.
    sent_at: VecDeque<(u64, Millis)>,
    seq: u64,
    /// The LSN of this primary's no-op entry.
    term_start: u64,
    last_heartbeat: Millis,
    last_ship: Millis,
    out: Vec<(ReplicaId, Message)>,
    persist: Vec<Persist>,
    became_primary: Option<u64>,
    /// A candidate refused for a promise asks again at this time (own clock).
    retry_at: Option<Millis>,
    /// Entries applied since the last [`Replica::take_applied`].
    applied_notes: Vec<Applied>,
}

/// How long after a refusing voter's promise ends a candidate asks again, ms.
const RETRY_AFTER_PROMISE_MS: u64 = 5;

/// Rounds of sends remembered for the lease.
const ROUNDS_KEPT: usize = 4096;

impl Replica {
    /// A fresh replica (empty log, term 0) at time `now` of its clock.
    pub fn new(cfg: ReplicaConfig, now: Millis) -> Replica {
        let role = if cfg.is_voter() {
            Role::Follower
        } else {
            Role::ReadReplica
        };
        let applied = Partition::new(cfg.bugs, &cfg.containers);
        Replica {
            cfg,
            role,
            term: 0,
            voted_for: None,
            log: Vec::new(),
            commit: 0,
            applied,
            speculative: None,
            primary_hint: None,
            last_heard: now,
            promise_until: now,
            votes: BTreeSet::new(),
            next: BTreeMap::new(),
            matched: BTreeMap::new(),
            acked_seq: BTreeMap::new(),
            sent_at: VecDeque::new(),
            seq: 0,
            term_start: 0,
            last_heartbeat: now,
            last_ship: now,
            out: Vec::new(),
            persist: Vec::new(),
            became_primary: None,
            retry_at: None,
            applied_notes: Vec::new(),
        }
    }

    /// A replica rebuilt from what it persisted (in order), as a follower (or
    /// read replica) of its last term. A restarted voter promises its last
    /// lease for a whole lease from `now` again: it may have granted one just
    /// before the crash, and its clock cannot tell how long ago.
    pub fn recover(cfg: ReplicaConfig, records: &[Persist], now: Millis) -> Replica {
        let mut r = Replica::new(cfg, now);
        let mut commit = 0;
        for p in records {
            match p {
                Persist::Entry(e) => {
                    // An entry at an LSN already held replaces the suffix from it.
                    r.log.truncate(e.lsn.saturating_sub(1) as usize);
                    r.log.push(e.clone());
                }
                Persist::TruncateFrom(lsn) => r.log.truncate(lsn.saturating_sub(1) as usize),
                Persist::Term { term, voted_for } => {
                    r.term = *term;
                    r.voted_for = *voted_for;
                }
                Persist::Commit(c) => commit = commit.max(*c),
            }
        }
        r.commit = commit.min(r.last_lsn());
        r.apply_committed();
        if r.cfg.is_voter() {
            r.promise_until = now + r.cfg.lease_ms + r.cfg.margin_ms();
        }
        r
    }

    /// Its role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Its current term.
    pub fn term(&self) -> u64 {
        self.term
    }

    /// The highest LSN it knows committed.
    pub fn commit(&self) -> u64 {
        self.commit
    }

    /// The LSN of its applied state.
    pub fn applied_lsn(&self) -> u64 {
        self.applied.lsn()
    }

    /// Its applied state.
    pub fn applied(&self) -> &Partition {
        &self.applied
    }

    /// The replica it believes is the primary.
    pub fn primary_hint(&self) -> Option<ReplicaId> {
        self.primary_hint
    }

    /// The LSN of its last entry.
    pub fn last_lsn(&self) -> u64 {
        self.log.len() as u64
    }

    /// Its log.
    pub fn log(&self) -> &[Entry] {
        &self.log
    }

    /// The settings.
    pub fn config(&self) -> &ReplicaConfig {
        &self.cfg
    }

    /// Messages to send (once this step's records are durable).
    pub fn take_out(&mut self) -> Vec<(ReplicaId, Message)> {
        std::mem::take(&mut self.out)
    }

    /// Records to make durable, in order, before anything of this step leaves.
    pub fn take_persist(&mut self) -> Vec<Persist> {
        std::mem::take(&mut self.persist)
    }

    /// The term this replica became primary of since the last call, if it did.
    pub fn take_became_primary(&mut self) -> Option<u64> {
        self.became_primary.take()
    }

    /// The entries it applied since the last call, in the order applied (a
    /// replica rebuilt from its disk, or whose applied state is rebuilt,
    /// applies, and notes, its committed prefix again).
    pub fn take_applied(&mut self) -> Vec<Applied> {
        std::mem::take(&mut self.applied_notes)
    }

    fn term_at(&self, lsn: u64) -> u64 {
        match lsn {
            0 => 0,
            n => self.log.get(n as usize - 1).map_or(0, |e| e.term),
        }
    }

    fn last_term(&self) -> u64 {
        self.term_at(self.last_lsn())
    }

    fn persist_term(&mut self) {
        self.persist.push(Persist::Term {
            term: self.term,
            voted_for: self.voted_for,
        });
    }

    fn append(&mut self, entry: Entry) {
        self.persist.push(Persist::Entry(entry.clone()));
        self.log.push(entry);
    }

    fn apply_committed(&mut self) {
        while self.applied.lsn() < self.commit {
            let i = self.applied.lsn() as usize;
            let e = &self.log[i];
            self.applied_notes.push(Applied {
                lsn: e.lsn,
                term: e.term,
                digest: effect_digest(&e.effect),
            });
            self.applied.redo(&e.effect);
        }
    }

    fn set_commit(&mut self, commit: u64) {
        if commit > self.commit {
            self.commit = commit;
            self.persist.push(Persist::Commit(commit));
            self.apply_committed();
        }
    }

    /// Adopts a higher term as a follower (or read replica).
    fn step_down(&mut self, term: u64, now: Millis) {
        if self.role == Role::Primary {
            // Its lease is given up with the role: it serves no strong read again.
            self.last_heard = now;
        }
        self.role = if self.cfg.is_voter() {
            Role::Follower
        } else {
            Role::ReadReplica
        };
        self.speculative = None;
        self.retry_at = None;
        if term > self.term {
            self.term = term;
            self.voted_for = None;
            self.primary_hint = None;
            self.persist_term();
        }
    }

    /// A message from replica `from`, at `now` of this replica's clock.
    pub fn on_message(&mut self, from: ReplicaId, msg: Message, now: Millis) {
        match msg {
            Message::Append {
                term,
                prev_lsn,
                prev_term,
                entries,
                commit,
                seq,
            } => self.on_append(from, term, prev_lsn, prev_term, entries, commit, seq, now),
            Message::AppendAck {
                term,
                ok,
                durable,
                seq,
            } => self.on_append_ack(from, term, ok, durable, seq, now),
            Message::RequestVote {
                term,
                last_lsn,
                last_term,
            } => self.on_request_vote(from, term, last_lsn, last_term, now),
            Message::Vote {
                term,
                granted,
                promised_ms,
            } => self.on_vote(from, term, granted, promised_ms, now),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_append(
        &mut self,
        from: ReplicaId,
        term: u64,
        prev_lsn: u64,
        prev_term: u64,
        entries: Vec<Entry>,
        commit: u64,
        seq: u64,
        now: Millis,
    ) {
        // The seeded bug `stale_term_append` skips this fence: an append of a
        // deposed primary (a lower term) is taken as if it were current.
        if term < self.term && !self.cfg.bugs.stale_term_append {
            self.out.push((
                from,
                Message::AppendAck {
                    term: self.term,
                    ok: false,
                    durable: 0,
                    seq,
                },
            ));
            return;
        }
        if term > self.term || self.role != Role::Follower && self.role != Role::ReadReplica {
            self.step_down(term, now);
        }
        self.primary_hint = Some(from);
        self.last_heard = now;
        if self.cfg.is_voter() {
            self.promise_until = now + self.cfg.lease_ms + self.cfg.margin_ms();
        }
        if prev_lsn > self.last_lsn() || self.term_at(prev_lsn) != prev_term {
            let durable = self.last_lsn().min(prev_lsn.saturating_sub(1));
            self.out.push((
                from,
                Message::AppendAck {
                    term: self.term,
                    ok: false,
                    durable,
                    seq,
                },
            ));
            return;
        }
        let mut last_new = prev_lsn;
        for e in entries {
            last_new = e.lsn;
            if e.lsn <= self.last_lsn() {
                if self.term_at(e.lsn) == e.term {
                    continue;
                }
                self.truncate_from(e.lsn);
            }
            self.append(e);
        }
        // A learner's bug: it applies whatever it holds, committed or not.
        let known = if self.role == Role::ReadReplica && self.cfg.bugs.learner_reads_uncommitted {
            self.last_lsn()
        } else {
            commit.min(last_new)
        };
        self.set_commit(known);
        self.out.push((
            from,
            Message::AppendAck {
                term: self.term,
                ok: true,
                durable: last_new,
                seq,
            },
        ));
    }

    /// Cuts the log from `lsn` on. A correct replica never cuts a committed
    /// entry; if it must (a seeded bug elected a primary without it) its
    /// applied state is rebuilt from the entries it keeps.
    fn truncate_from(&mut self, lsn: u64) {
        self.persist.push(Persist::TruncateFrom(lsn));
        self.log.truncate(lsn.saturating_sub(1) as usize);
        if self.commit >= lsn {
            self.commit = lsn - 1;
        }
        if self.applied.lsn() >= lsn {
            self.applied = Partition::new(self.cfg.bugs, &self.cfg.containers);
            self.apply_committed();
        }
    }

    fn on_append_ack(
        &mut self,
        from: ReplicaId,
        term: u64,
        ok: bool,
        durable: u64,
        seq: u64,
        now: Millis,
    ) {
        if term > self.term {
            self.step_down(term, now);
            return;
        }
        if term < self.term || self.role != Role::Primary {
            return;
        }
        let voter = self.cfg.voters.contains(&from);
        if voter {
            let s = self.acked_seq.entry(from).or_default();
            *s = (*s).max(seq);
        }
        let next = self.next.get(&from).copied().unwrap_or(1);
        if ok {
            let m = self.matched.entry(from).or_default();
            *m = (*m).max(durable);
            let m = *m;
            self.next.insert(from, next.max(m + 1));
            if voter {
                self.advance_commit();
            }
            let limit = self.send_limit(from);
            if m < limit {
                self.send_append(from);
            }
        } else {
            self.next
                .insert(from, next.saturating_sub(1).min(durable + 1).max(1));
            self.send_append(from);
        }
    }

    fn on_request_vote(
        &mut self,
        from: ReplicaId,
        term: u64,
        last_lsn: u64,
        last_term: u64,
        now: Millis,
    ) {
        if !self.cfg.is_voter() {
            return;
        }
        // A promised lease stands: no vote, and no term change either (the
        // primary it was promised to keeps its term).
        let promised = now < self.promise_until && self.primary_hint != Some(from);
        if term < self.term || promised && self.role != Role::Primary {
            let promised_ms = if term >= self.term && promised {
                self.promise_until - now
            } else {
                0
            };
            self.out.push((
                from,
                Message::Vote {
                    term: self.term,
                    granted: false,
                    promised_ms,
                },
            ));
            return;
        }
        if term > self.term {
            self.step_down(term, now);
        }
        let up_to_date = (last_term, last_lsn) >= (self.last_term(), self.last_lsn())
            || self.cfg.bugs.failover_loses_committed;
        // The seeded bug `vote_twice` forgets the vote already cast in this term.
        let free = self.voted_for.is_none_or(|v| v == from) || self.cfg.bugs.vote_twice;
        let granted = up_to_date && free && self.role == Role::Follower;
        if granted {
            self.voted_for = Some(from);
            self.persist_term();
            self.last_heard = now;
        }
        self.out.push((
            from,
            Message::Vote {
                term: self.term,
                granted,
                promised_ms: 0,
            },
        ));
    }

    fn on_vote(
        &mut self,
        from: ReplicaId,
        term: u64,
        granted: bool,
        promised_ms: u64,
        now: Millis,
    ) {
        if term > self.term {
            self.step_down(term, now);
            return;
        }
        if term == self.term && granted && self.role == Role::Candidate {
            self.votes.insert(from);
            if self.votes.len() >= self.cfg.quorum() {
                self.become_primary(now);
            }
        }
        // Refused for a promise that ends soon: ask again just after it ends
        // (a tick later) rather than an election timeout later. Only the
        // timing of the next campaign changes; the voter still judges the
        // promise on its own clock, so safety does not rest on this.
        if self.role == Role::Candidate && !granted && promised_ms > 0 {
            let at = now + promised_ms + RETRY_AFTER_PROMISE_MS;
            if at < self.last_heard + self.cfg.election_timeout() {
                self.retry_at = Some(self.retry_at.map_or(at, |r| r.min(at)));
            }
        }
    }

    fn become_primary(&mut self, now: Millis) {
        self.role = Role::Primary;
        self.primary_hint = Some(self.cfg.me);
        self.became_primary = Some(self.term);
        let last = self.last_lsn();
        let peers: Vec<ReplicaId> = self.peers().collect();
        self.next = peers.iter().map(|p| (*p, last + 1)).collect();
        self.matched = peers.iter().map(|p| (*p, 0)).collect();
        self.acked_seq.clear();
        self.sent_at.clear();
        let mut spec = self.applied.clone();
        for e in &self.log[spec.lsn() as usize..] {
            spec.redo(&e.effect);
        }
        let entry = Entry {
            term: self.term,
            lsn: last + 1,
            effect: noop(),
        };
        spec.redo(&entry.effect);
        self.speculative = Some(spec);
        self.term_start = entry.lsn;
        self.append(entry);
        self.advance_commit();
        self.broadcast(now);
        self.last_ship = now;
        self.ship();
    }

    fn peers(&self) -> impl Iterator<Item = ReplicaId> + '_ {
        self.cfg
            .voters
            .iter()
            .chain(&self.cfg.learners)
            .copied()
            .filter(move |p| *p != self.cfg.me)
    }

    /// How far the log goes to `to`: everything for a voter, the committed
    /// prefix for a read replica (the bug `learner_reads_uncommitted` ships everything).
    fn send_limit(&self, to: ReplicaId) -> u64 {
        if self.cfg.voters.contains(&to) || self.cfg.bugs.learner_reads_uncommitted {
            self.last_lsn()
        } else {
            self.commit
        }
    }

    fn send_append(&mut self, to: ReplicaId) {
        let next = self.next.get(&to).copied().unwrap_or(1).max(1);
        let prev_lsn = (next - 1).min(self.last_lsn());
        let end = self
            .send_limit(to)
            .min(prev_lsn + self.cfg.max_batch as u64);
        let entries = self.log[prev_lsn as usize..end.max(prev_lsn) as usize].to_vec();
        self.out.push((
            to,
            Message::Append {
                term: self.term,
                prev_lsn,
                prev_term: self.term_at(prev_lsn),
                entries,
                commit: self.commit,
                seq: self.seq,
            },
        ));
    }

    /// A new round of appends to every voter.
    fn broadcast(&mut self, now: Millis) {
        self.seq += 1;
        self.sent_at.push_back((self.seq, now));
        if self.sent_at.len() > ROUNDS_KEPT {
            self.sent_at.pop_front();
        }
        self.last_heartbeat = now;
        let voters: Vec<ReplicaId> = self
            .cfg
            .voters
            .iter()
            .copied()
            .filter(|v| *v != self.cfg.me)
            .collect();
        for v in voters {
            self.send_append(v);
        }
    }

    /// The committed log to every read replica.
    fn ship(&mut self) {
        let learners = self.cfg.learners.clone();
        for l in learners {
            self.send_append(l);
        }
    }

    fn advance_commit(&mut self) {
        if self.role != Role::Primary {
            return;
        }
        let mut held: Vec<u64> = self
            .cfg
            .voters
            .iter()
            .map(|v| {
                if *v == self.cfg.me {
                    self.last_lsn()
                } else {
                    self.matched.get(v).copied().unwrap_or(0)
                }
            })
            .collect();
        held.sort_unstable_by(|a, b| b.cmp(a));
        let mut candidate = held.get(self.cfg.quorum() - 1).copied().unwrap_or_default();
        if self.cfg.bugs.commit_before_quorum {
            candidate = self.last_lsn();
        }
        if candidate > self.commit && self.term_at(candidate) == self.term {
            self.set_commit(candidate);
        }
    }

    /// When this primary's lease started (its clock), if a majority has
    /// answered a round: the send time of the newest such round.
    fn lease_start(&self, now: Millis) -> Option<Millis> {
        let need_others = self.cfg.quorum() - 1;
        if need_others == 0 {
            return Some(now);
        }
        let mut acked: Vec<u64> = self.acked_seq.values().copied().collect();
        acked.sort_unstable_by(|a, b| b.cmp(a));
        let seq = *acked.get(need_others - 1)?;
        self.sent_at
            .iter()
            .find(|(s, _)| *s == seq)
            .map(|(_, at)| *at)
    }

    /// True while this primary may serve strong reads at `now`: its no-op is
    /// committed and its lease has not run out (the seeded bug
    /// `stale_read_after_failover` skips the lease).
    pub fn lease_valid(&self, now: Millis) -> bool {
        if self.role != Role::Primary || self.commit < self.term_start {
            return false;
        }
        if self.cfg.bugs.stale_read_after_failover {
            return true;
        }
        let Some(start) = self.lease_start(now) else {
            return false;
        };
        let length = self.cfg.lease_ms.saturating_sub(self.cfg.margin_ms());
        now < start + length
    }

    /// Time passes: a voter without a primary campaigns; the primary sends
    /// heartbeats and ships the log, and steps down when it has had no
    /// majority for an election timeout past its lease.
    pub fn tick(&mut self, now: Millis) {
        match self.role {
            Role::ReadReplica => {}
            Role::Follower | Role::Candidate => {
                let quiet = now >= self.last_heard + self.cfg.election_timeout()
                    || self.role == Role::Candidate && self.retry_at.is_some_and(|at| now >= at);
                if quiet && now >= self.promise_until + self.cfg.stagger() {
                    self.campaign(now);
                }
            }
            Role::Primary => {
                let lease_end = self.lease_start(now).map_or(self.last_heard, |s| {
                    s.max(self.last_heard) + self.cfg.lease_ms
                });
                // The seeded bug `stale_read_after_failover` trusts the role,
                // not the lease: it neither checks the lease on reads nor
                // steps down without a majority (it believes until a higher
                // term reaches it), as a primary without lease or quorum check.
                if now > lease_end + self.cfg.election_timeout()
                    && !self.cfg.bugs.stale_read_after_failover
                {
                    // No majority for long: let clients find another primary.
                    self.step_down(self.term, now);
                    self.primary_hint = None;
                    return;
                }
                if now >= self.last_heartbeat + self.cfg.heartbeat_ms {
                    self.broadcast(now);
                }
                if now >= self.last_ship + self.cfg.ship_ms {
                    self.last_ship = now;
                    self.ship();
                }
            }
        }
    }

    fn campaign(&mut self, now: Millis) {
        self.retry_at = None;
        self.term += 1;
        self.role = Role::Candidate;
        self.voted_for = Some(self.cfg.me);
        self.primary_hint = None;
        self.votes = BTreeSet::from([self.cfg.me]);
        self.last_heard = now;
        self.persist_term();
        if self.votes.len() >= self.cfg.quorum() {
            self.become_primary(now);
            return;
        }
        let (last_lsn, last_term) = (self.last_lsn(), self.last_term());
        let others: Vec<ReplicaId> = self
            .cfg
            .voters
            .iter()
            .copied()
            .filter(|v| *v != self.cfg.me)
            .collect();
        for v in others {
            self.out.push((
                v,
                Message::RequestVote {
                    term: self.term,
                    last_lsn,
                    last_term,
                },
            ));
        }
    }

    /// The primary a follower redirects to: the one it last heard from, as
    /// long as it heard from it within an election timeout; after that it
    /// names none (a client is told 503 rather than sent to a primary that
    /// may be cut off, and finds the next one as soon as it is elected).
    fn named_primary(&self, now: Millis) -> Option<ReplicaId> {
        let fresh = now < self.last_heard + self.cfg.election_timeout();
        self.primary_hint
            .filter(|h| *h != self.cfg.me && (fresh || self.role != Role::Follower))
    }

    /// A write request at `now`.
    pub fn write(&mut self, req: &Request, now: Millis) -> WriteOutcome {
        match self.role {
            Role::ReadReplica => return WriteOutcome::Forbidden,
            Role::Primary => {}
            _ => {
                return match self.named_primary(now) {
                    Some(hint) => WriteOutcome::NotPrimary { hint },
                    None => WriteOutcome::NoPrimary,
                }
            }
        }
        let Some(spec) = self.speculative.as_mut() else {
            return WriteOutcome::NoPrimary;
        };
        let (response, effect) = spec.apply(req, now);
        let lsn = spec.lsn();
        if let Some(effect) = effect {
            let entry = Entry {
                term: self.term,
                lsn,
                effect,
            };
            self.append(entry);
            self.advance_commit();
            // Send the entry now rather than at the next heartbeat.
            self.broadcast(now);
        }
        WriteOutcome::Pending {
            response,
            wait_lsn: lsn,
            term: self.term,
        }
    }

    /// A read request at `now` with a consistency level and, for session
    /// reads, the client's token LSN for this partition.
    pub fn read(
        &mut self,
        req: &Request,
        consistency: ReadConsistency,
        token: Option<u64>,
        now: Millis,
    ) -> ReadOutcome {
        match consistency {
            ReadConsistency::Strong => {
                if self.role != Role::Primary {
                    return ReadOutcome::NotPrimary {
                        hint: self.named_primary(now),
                    };
                }
                if !self.lease_valid(now) {
                    return ReadOutcome::NoPrimary;
                }
            }
            ReadConsistency::Session => {
                let behind = token.is_some_and(|t| self.applied.lsn() < t);
                if behind && !self.cfg.bugs.session_token_ignored {
                    return ReadOutcome::SessionNotAvailable;
                }
            }
            ReadConsistency::Eventual => {}
        }
        let (response, effect) = self.applied.apply(req, now);
        debug_assert!(effect.is_none(), "a read changed the state");
        ReadOutcome::Served {
            response,
            lsn: self.applied.lsn(),
        }
    }

    /// True when the write `(wait_lsn, term)` may be answered: this replica
    /// is still the primary of `term` and `wait_lsn` is committed.
    pub fn write_settled(&self, wait_lsn: u64, term: u64) -> bool {
        self.role == Role::Primary && self.term == term && self.commit >= wait_lsn
    }
}

#[cfg(test)]
mod tests;
