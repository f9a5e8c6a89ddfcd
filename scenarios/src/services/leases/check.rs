//! The lease checkers (SPEC §2.9). The server's view is its log as it was
//! written ([`server_log`]: records lost with a crash are dropped), walked
//! once with the reference machine of [`super::reference`] ([`analyse`]);
//! every checker reads the properties it owns from that walk.
//!
//! - L1 exclusivity (server-judged): each lease id's locked interval on the
//!   server's clock, from the grants; ended early only by its own release,
//!   change or break; at most one per resource at every instant
//!   ([`overcast_sim::check::exclusive`]).
//! - L2 write gating / L3 holder safety: each successful write or delete,
//!   matched to its log record, against the reference lease state there;
//!   every lease refusal of a read, write or delete and every read let
//!   through, against §2.5's table over the server clock's possible readings
//!   (`answers`).
//! - L4 break safety: no acquire by another id before the break time the
//!   reference computes (§2.4).
//! - L5 conformance: every logged lease transition against the reference (§2.3,
//!   §2.4, §2.6: a write clears an expired lease, so a later renew must fail);
//!   every refused lease action whose state is known, its code against the
//!   one the table gives there (`answers`);
//!   and an acquire without a proposed id must not be reported lost (409) when
//!   one of its attempts won it (a grant no caller was told of, during the
//!   call, that no other such acquire of unknown outcome explains).
//! - L6 expiry liveness: an acquire refused with `LeaseAlreadyPresent` while
//!   the reference says the lease had expired or broken (embargo G = 0).
//! - L7 id uniqueness: a server-generated id never equals an id the server's
//!   log has seen before (any resource: stronger than per resource).
//! - L8 containers: a delete while the container lease is locked carried the
//!   id; Set Metadata without an id is never refused.
//! - L9 belief exclusivity (client-judged): holders' belief intervals in true
//!   time, from each acquire's success to its last unfenced side effect; two
//!   holders must never overlap on one resource, unless the server's log shows
//!   the first one's lease broken, or its blob or container deleted, in between
//!   (those revoke a lease by design; the holder cannot know).
//! - E1 fresh ETags (client-judged): every successful put and Set Blob
//!   Metadata answers a version no other successful write of its blob
//!   answered.
//! - R1 no blind re-sends (SPEC §4.5, §2.9 L5): a call SPEC does not call
//!   idempotent ([`calls::may_resend_after_timeout`]) is never sent again after an
//!   attempt that timed out or got 408, judged from each call's attempts
//!   against SPEC's list, not the model's own.

use super::coverage::{self, Visit};
use super::history::{Call, LeaseEvent, LeaseHistory, Outcome};
use super::properties::*;
use super::reference::{self, RefLease, RefState};
use crate::kit::properties::{E1, R1};
use overcast_model::lease::{self, Lease, LeaseAction, LeaseDuration, Phase};
use overcast_model::lease_holder::ClockBound;
use overcast_model::partition::Effect;
use overcast_model::store;
use overcast_sim::check::exclusive::{overlaps, Interval};
use overcast_sim::check::{Checked, Checker, Verdict, Violation};
use overcast_sim::check::{Evidence, EvidenceRow};
use overcast_sim::check::{Property, SharedAnalysis};
use overcast_sim::clock::EPOCH_MS;
use overcast_sim::history::OpRecord;
use overcast_sim::timeline::{clock_secs, secs};
use std::collections::{BTreeMap, BTreeSet};

pub mod answers;
mod beliefs;
mod calls;
use beliefs::judge_beliefs;
use calls::{judge_fresh_etags, judge_ops, judge_resends};

/// One record of a server's log, as written.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The server that wrote it (without its incarnation: `server-0`).
    pub node: String,
    /// True time it was written (= applied), ns.
    pub at_ns: u64,
    /// The server's clock then (the `now` the partition was handed).
    pub server_ms: u64,
    /// The largest reading of the server's clock so far: its time as a
    /// monotone line. A clock stepped back may judge a lease locked again that it
    /// had already let go (and handed on); L1 and L4 compare on this line.
    pub hull_ms: u64,
    /// What changed.
    pub effect: Effect,
}

/// Every server's surviving log, merged in true-time order.
pub fn server_log(h: &LeaseHistory) -> Vec<Entry> {
    let mut per: BTreeMap<&str, Vec<Entry>> = BTreeMap::new();
    let mut hull: BTreeMap<&str, u64> = BTreeMap::new();
    for e in &h.node_events {
        let node = e.node.split('#').next().unwrap_or(&e.node);
        match &e.event {
            LeaseEvent::Logged { effect, .. } => {
                let hull_ms = hull.entry(node).or_default();
                *hull_ms = (*hull_ms).max(e.local_ms);
                per.entry(node).or_default().push(Entry {
                    node: node.to_string(),
                    at_ns: e.at_ns,
                    server_ms: e.local_ms,
                    hull_ms: *hull_ms,
                    effect: effect.clone(),
                })
            }
            LeaseEvent::Recovered { kept } => {
                per.entry(node).or_default().truncate(*kept as usize);
            }
            _ => {}
        }
    }
    let mut all: Vec<Entry> = per.into_values().flatten().collect();
    all.sort_by_key(|e| e.at_ns);
    all
}

/// A node clock's offset from true time at an event, seconds.
fn offset_s(local_ms: u64, at_ns: u64) -> f64 {
    (local_ms as f64 - EPOCH_MS as f64 - at_ns as f64 / 1e6) / 1000.0
}

fn short(id: &str) -> String {
    format!("{}…", id.chars().take(4).collect::<String>())
}

/// When a log record was written, in words: true time, and the server's
/// clock beside it (`30.210 s true, 31.737 s on server-0's clock`).
fn when(e: &Entry) -> String {
    format!(
        "{} true, {} on {}'s clock",
        secs(e.at_ns),
        clock_secs(e.server_ms),
        e.node
    )
}

/// When a reading `ms` of the clock of the server that wrote record `e`
/// came (or comes) in true time: extrapolated from the last record of that
/// server whose clock had reached the reading, else from its first. The
/// clock runs at true rate between its steps, so the nearest record before
/// the reading is the one to go by across a step.
pub fn true_ns_at(log: &[Entry], e: &Entry, ms: u64) -> u64 {
    let from = log
        .iter()
        .rfind(|x| x.node == e.node && x.server_ms <= ms)
        .or_else(|| log.iter().find(|x| x.node == e.node))
        .unwrap_or(e);
    let delta_ns = (ms as i128 - from.server_ms as i128) * 1_000_000;
    (from.at_ns as i128 + delta_ns).max(0) as u64
}

/// A reading `ms` of the clock of the server that wrote record `e`, in
/// words: true time first (`38.010 s true, 39.510 s on server-0's clock`).
fn server_time(log: &[Entry], e: &Entry, ms: u64) -> String {
    format!(
        "{} true, {} on {}'s clock",
        secs(true_ns_at(log, e, ms)),
        clock_secs(ms),
        e.node
    )
}

/// A lease in the service's words, as of record `e`: `lease 5f3c… (fixed
/// 15 s, leased, expires at 12.300 s true, 13.100 s on server-0's clock)`.
pub fn lease_words(log: &[Entry], l: &RefLease, e: &Entry) -> String {
    let duration = l
        .duration_ms
        .map_or("infinite".to_string(), |d| format!("fixed {} s", d / 1000));
    let st = reference::state(Some(l), e.server_ms);
    let end = match (st, l.expire_ms, l.break_ms) {
        (RefState::Breaking, _, Some(b)) => format!(", breaks at {}", server_time(log, e, b)),
        (RefState::Leased, Some(x), _) => format!(", expires at {}", server_time(log, e, x)),
        (RefState::Expired, Some(x), _) => format!(", expired at {}", server_time(log, e, x)),
        _ => String::new(),
    };
    format!("lease {} ({duration}, {}{end})", short(&l.id), st.word())
}

/// [`lease_words`] of a record's lease, or `no lease`.
fn maybe_lease_words(log: &[Entry], l: Option<&RefLease>, e: &Entry) -> String {
    l.map_or("no lease".to_string(), |l| lease_words(log, l, e))
}

/// The lease of `target` as the server's log shows it up to record `upto`
/// (marked): each grant, renewal, change, release and break, with the lease
/// each left, the last few of them.
fn lease_log_evidence(log: &[Entry], target: &str, upto: &Entry) -> Evidence {
    lease_log_then(log, target, upto.at_ns, &|e| std::ptr::eq(e, upto), None)
}

/// The lease of `target` as the server's log shows it up to `until_ns`
/// (true time), the records `marked` names marked, then `last` (the
/// request the violation is about, marked), as the focused account of a
/// violation about a call on `target`.
fn lease_log_then(
    log: &[Entry],
    target: &str,
    until_ns: u64,
    marked: &dyn Fn(&Entry) -> bool,
    last: Option<EvidenceRow>,
) -> Evidence {
    let mut rows: Vec<EvidenceRow> = Vec::new();
    for e in log.iter().take_while(|e| e.at_ns <= until_ns) {
        let Effect::Lease(lease::Effect::Set {
            target: t,
            action,
            lease,
            ..
        }) = &e.effect
        else {
            continue;
        };
        if t.name() != target {
            continue;
        }
        let left = lease.as_ref().map(to_ref);
        rows.push(EvidenceRow {
            op: None,
            cells: vec![
                when(e),
                action.name().to_string(),
                maybe_lease_words(log, left.as_ref(), e),
            ],
            marked: marked(e),
        });
    }
    rows.extend(last);
    let skipped = rows.len().saturating_sub(6);
    Evidence {
        title: format!("The lease on {target} in the server's log"),
        lead: vec![format!(
            "Each lease action the server logged on {target} up to the step the violation is about{}, with the lease it left:",
            if skipped > 0 {
                format!(" (the last {}, after {skipped} earlier ones)", rows.len() - skipped)
            } else {
                String::new()
            }
        )],
        columns: ["when", "action", "the lease after it"]
            .map(String::from)
            .to_vec(),
        rows: rows.into_iter().skip(skipped).collect(),
        notes: Vec::new(),
    }
}

/// The account of a violation about one call on `target`: the lease log up
/// to its invocation, then the call (answered at its return, at the
/// server's clock reading `server_ms` when known), marked.
fn call_account(
    log: &[Entry],
    op: &OpRecord<Call, Outcome>,
    server_ms: Option<u64>,
    asked: String,
    answered: String,
) -> Evidence {
    let ret = op.return_ns.unwrap_or(op.invoke_ns);
    lease_log_then(
        log,
        &op.call.target,
        op.invoke_ns,
        &|_| false,
        Some(request_row(ret, server_ms, asked, answered, Some(op.id))),
    )
}

/// The last entry of a target's timeline before `at_ns`: the record the
/// lease state at that instant comes from.
fn record_before(
    line: &[(u64, u64, Option<RefLease>)],
    at_ns: u64,
) -> Option<&(u64, u64, Option<RefLease>)> {
    line.iter().rev().find(|(at, ..)| *at < at_ns)
}

/// The request a violation is about, as the last row of its lease log
/// account: when (true time, and the server's clock when known), what was
/// asked and what it was answered.
fn request_row(
    at_ns: u64,
    server_ms: Option<u64>,
    asked: String,
    answered: String,
    op: Option<u64>,
) -> EvidenceRow {
    EvidenceRow {
        op,
        cells: vec![
            match server_ms {
                Some(ms) => format!(
                    "{} true, {} on the server's clock",
                    secs(at_ns),
                    clock_secs(ms)
                ),
                None => format!("{} true", secs(at_ns)),
            },
            asked,
            answered,
        ],
        marked: true,
    }
}

/// The calls of `op` on `target` that were under way at `at_ns` (the one a
/// log record of theirs came from).
fn calls_at(h: &LeaseHistory, op: &str, target: &str, at_ns: u64) -> Vec<u64> {
    h.ops
        .iter()
        .filter(|o| o.call.op == op && o.call.target == target)
        .filter(|o| o.invoke_ns <= at_ns && o.return_ns.is_none_or(|r| r >= at_ns))
        .map(|o| o.id)
        .collect()
}

fn to_ref(l: &Lease) -> RefLease {
    let duration_ms = match l.duration {
        LeaseDuration::Fixed(s) => Some(u64::from(s) * 1000),
        LeaseDuration::Infinite => None,
    };
    let (expire_ms, break_ms) = match l.phase {
        Phase::Leased { expire_ms } => (expire_ms, None),
        Phase::Breaking { break_ms } => (None, Some(break_ms)),
        Phase::Broken => (None, Some(0)),
    };
    RefLease {
        id: l.id.clone(),
        duration_ms,
        expire_ms,
        break_ms,
    }
}

/// Whether the model's record after a transition is what the reference says.
fn agrees(model: Option<&Lease>, want: Option<&RefLease>, at_ms: u64) -> bool {
    match (model, want) {
        (None, None) => true,
        (Some(m), Some(w)) => {
            let m = to_ref(m);
            let ms = reference::state(Some(&m), at_ms);
            let ws = reference::state(Some(w), at_ms);
            m.id == w.id
                && ms == ws
                && match ms {
                    RefState::Leased | RefState::Expired => m.expire_ms == w.expire_ms,
                    RefState::Breaking => m.break_ms == w.break_ms,
                    _ => true,
                }
        }
        _ => false,
    }
}

/// When the model's record says `l` stops being locked (server ms).
fn locked_until(l: &Lease, at_ms: u64) -> u64 {
    match l.phase {
        Phase::Leased { expire_ms } => expire_ms.unwrap_or(u64::MAX),
        Phase::Breaking { break_ms } => break_ms,
        Phase::Broken => at_ms,
    }
}

/// Per target, the reference lease after each log record: (true time ns,
/// server clock ms, lease).
type LeaseTimeline = BTreeMap<String, Vec<(u64, u64, Option<RefLease>)>>;

/// A ref lease state at a log position.
#[derive(Clone, Debug)]
struct Snapshot {
    node: String,
    at_ns: u64,
    server_ms: u64,
    before: Option<RefLease>,
    /// Whether the blob existed before the write (Put Blob answers 201
    /// either way, so the status does not say).
    existed: bool,
}

/// What the walk of the server's log found.
#[derive(Default)]
pub struct Analysis {
    /// Violations of every lease property, in the order found.
    pub violations: Vec<Violation>,
    /// Lease transitions logged.
    pub transitions: usize,
    /// Writes and deletes judged.
    pub writes_judged: usize,
    /// Writes and deletes refused by a condition, judged for the order of
    /// the lease check and the conditions.
    pub refusals_judged: usize,
    /// Holder belief intervals judged.
    pub beliefs: usize,
    /// Calls judged for re-sends after a timeout (R1).
    pub resends_judged: usize,
    /// Successful puts and Set Blob Metadata answered with a version, judged
    /// for fresh ETags (E1).
    pub writes_versioned: usize,
    /// Refused lease actions judged against the action table (L5).
    pub lease_refusals_judged: usize,
    /// Reads, writes and deletes judged against the table of §2.5 (L2).
    pub blob_answers: answers::BlobAnswers,
    /// Where each placed call stood in the SPEC tables (for the coverage
    /// table, [`super::coverage`]).
    pub visits: Vec<Visit>,
}

fn violation(property: &'static str, message: String, ops: Vec<u64>) -> Violation {
    Violation::new(property, message).with_ops(ops)
}

/// Walks the history once and judges every lease property, with the
/// server's clock bound known to be [`ClockBound::DEFAULT`].
pub fn analyse(h: &LeaseHistory) -> Analysis {
    analyse_with(h, Some(ClockBound::DEFAULT))
}

/// [`analyse`], with the bound the server's clock kept (`None`: unknown, and
/// the rules that need it are not judged).
pub fn analyse_with(h: &LeaseHistory, server_clock: Option<ClockBound>) -> Analysis {
    let log = server_log(h);
    let mut a = Analysis::default();
    let mut refs: BTreeMap<String, RefLease> = BTreeMap::new();
    let mut model: BTreeMap<String, (Lease, usize)> = BTreeMap::new();
    let mut intervals: Vec<Interval<String, String>> = Vec::new();
    let mut seen_ids: BTreeSet<String> = BTreeSet::new();
    // Pending breaks: target → (id broken, break time the reference computes).
    let mut breaks: BTreeMap<String, (String, u64)> = BTreeMap::new();
    let mut writes: BTreeMap<(String, u64), Snapshot> = BTreeMap::new();
    // Versions two records of one blob wrote (E1 reports them): a write
    // answered with one cannot be matched to its record.
    let mut written_twice: BTreeSet<(String, u64)> = BTreeSet::new();
    let mut deletes: BTreeMap<String, Vec<Snapshot>> = BTreeMap::new();
    let mut live: BTreeSet<String> = BTreeSet::new();
    // Per target: the reference lease after each log record (true time,
    // server clock), for L6 and the lease-before-conditions rule of L2.
    let mut timeline: LeaseTimeline = BTreeMap::new();
    // Ids granted by acquires without a proposal: (target, id, at_ns).
    let mut generated: Vec<(String, String, u64)> = Vec::new();
    // Leases ended by someone else than their holder (a break, a container
    // delete): (target, id, at_ns).
    let mut revoked: Vec<(String, String, u64)> = Vec::new();

    let close = |intervals: &mut Vec<Interval<String, String>>, idx: usize, end: u64| {
        let iv = &mut intervals[idx];
        iv.end = iv.end.min(end).max(iv.start);
    };

    for e in &log {
        let now = e.server_ms;
        match &e.effect {
            Effect::Lease(lease::Effect::Set {
                target,
                action,
                at_ms,
                lease,
                ..
            }) => {
                a.transitions += 1;
                let name = target.name();
                let before = refs.get(&name).cloned();
                let new_id = lease.as_ref().map_or("", |l| l.id.as_str());
                let st = reference::state(before.as_ref(), *at_ms);
                let ops = calls_at(h, action.name(), &name, e.at_ns);
                a.visits.push(Visit {
                    row: coverage::action_row(action, before.as_ref()),
                    cell: st.word().into(),
                    ops: ops.clone(),
                });
                if let LeaseAction::Break { break_period } = action {
                    if let Some((row, cell)) =
                        coverage::break_row(st, before.as_ref(), *break_period)
                    {
                        a.visits.push(Visit {
                            row,
                            cell: cell.into(),
                            ops,
                        });
                    }
                }
                match reference::step(before.as_ref(), action, *at_ms, new_id) {
                    Err(code) => a.violations.push(
                        violation(
                            "L5",
                            format!(
                                "the server granted {} on {name} at {}, but the lease was {} ({}) and SPEC §2.3 answers 409 {code} there",
                                action.name(),
                                when(e),
                                st.word(),
                                maybe_lease_words(&log, before.as_ref(), e)
                            ),
                            calls_at(h, action.name(), &name, e.at_ns),
                        )
                        .at(e.node.clone(), e.at_ns, format!("{} granted", action.name()))
                        .with_evidence(lease_log_evidence(&log, &name, e)),
                    ),
                    Ok(want) => {
                        if !agrees(lease.as_ref(), want.as_ref(), *at_ms) {
                            let left = lease.as_ref().map(to_ref);
                            a.violations.push(
                                violation(
                                    "L5",
                                    format!(
                                        "{} on {name} at {} found the lease {} and left {}; SPEC §2.3/§2.4 say {}",
                                        action.name(),
                                        when(e),
                                        st.word(),
                                        maybe_lease_words(&log, left.as_ref(), e),
                                        maybe_lease_words(&log, want.as_ref(), e)
                                    ),
                                    calls_at(h, action.name(), &name, e.at_ns),
                                )
                                .at(e.node.clone(), e.at_ns, action.name().to_string())
                                .with_evidence(lease_log_evidence(&log, &name, e)),
                            );
                        }
                        if let (LeaseAction::Break { .. }, Some(w), Some(b)) =
                            (action, &want, want.as_ref().and_then(|w| w.break_ms))
                        {
                            breaks.insert(name.clone(), (w.id.clone(), b));
                            revoked.push((name.clone(), w.id.clone(), e.at_ns));
                        }
                    }
                }
                // L4: an acquire by another id before the break time.
                if let (LeaseAction::Acquire { .. }, Some(l)) = (action, lease) {
                    if let Some((id, bt)) = breaks.get(&name) {
                        if *id != l.id && e.hull_ms < *bt {
                            a.violations.push(
                                violation(
                                    "L4",
                                    format!(
                                        "{name}: lease {} was broken to take effect at {}, but lease {} acquired it at {}",
                                        short(id),
                                        server_time(&log, e, *bt),
                                        short(&l.id),
                                        when(e)
                                    ),
                                    calls_at(h, "acquire", &name, e.at_ns),
                                )
                                .at(e.node.clone(), e.at_ns, format!("{} acquired", short(&l.id)))
                                .at(e.node.clone(), true_ns_at(&log, e, *bt), format!("{} breaks", short(id)))
                                .with_evidence(lease_log_evidence(&log, &name, e)),
                            );
                        }
                    }
                }
                match (action, lease) {
                    (LeaseAction::Release { .. }, _) => {
                        breaks.remove(&name);
                    }
                    (LeaseAction::Acquire { .. }, Some(l))
                        if breaks.get(&name).is_some_and(|(id, _)| *id == l.id) =>
                    {
                        breaks.remove(&name);
                    }
                    _ => {}
                }
                // L7: a generated id never seen before.
                if let (
                    LeaseAction::Acquire {
                        proposed_id: None, ..
                    },
                    Some(l),
                ) = (action, lease)
                {
                    generated.push((name.clone(), l.id.clone(), e.at_ns));
                    if seen_ids.contains(&l.id) {
                        a.violations.push(
                            violation(
                                "L7",
                                format!(
                                    "{name}: the server generated lease id {} at {}, an id its log had seen before",
                                    l.id,
                                    when(e)
                                ),
                                calls_at(h, "acquire", &name, e.at_ns),
                            )
                            .at(e.node.clone(), e.at_ns, format!("{} generated again", short(&l.id)))
                            .with_evidence(lease_log_evidence(&log, &name, e)),
                        );
                    }
                }
                if let Some(l) = lease {
                    seen_ids.insert(l.id.clone());
                }
                // L1: locked intervals of each id, on the server's clock.
                let prior = model.get(&name).cloned();
                let mut next: Option<(Lease, usize)> = None;
                if let Some((old, idx)) = &prior {
                    let same_id = lease.as_ref().is_some_and(|l| l.id == old.id);
                    if same_id {
                        let l = lease.as_ref().expect("same id");
                        intervals[*idx].end = locked_until(l, e.hull_ms).max(intervals[*idx].start);
                        next = Some((l.clone(), *idx));
                    } else {
                        // Its own release or change ends it now; anything else
                        // leaves it locked until the model said it would be.
                        let own = matches!(
                            action,
                            LeaseAction::Release { .. } | LeaseAction::Change { .. }
                        );
                        let end = if own {
                            e.hull_ms
                        } else {
                            locked_until(old, e.hull_ms)
                        };
                        close(&mut intervals, *idx, end);
                    }
                }
                if next.is_none() {
                    if let Some(l) = lease {
                        intervals.push(Interval {
                            resource: name.clone(),
                            holder: l.id.clone(),
                            start: e.hull_ms,
                            end: locked_until(l, e.hull_ms),
                        });
                        next = Some((l.clone(), intervals.len() - 1));
                    }
                }
                match next {
                    Some(n) => {
                        model.insert(name.clone(), n);
                    }
                    None => {
                        model.remove(&name);
                    }
                }
                match lease {
                    Some(l) => {
                        refs.insert(name.clone(), to_ref(l));
                    }
                    None => {
                        refs.remove(&name);
                    }
                }
                timeline.entry(name).or_default().push((
                    e.at_ns,
                    e.server_ms,
                    refs.get(&target.name()).cloned(),
                ));
            }
            Effect::Lease(lease::Effect::ContainerDeleted {
                container,
                lease_id,
                at_ms,
            }) => {
                let before = refs.get(container.as_str());
                let st = reference::state(before, *at_ms);
                let sent = lease_id.as_deref().and_then(lease::parse_guid);
                if st.locked() && sent.as_deref() != before.map(|l| l.id.as_str()) {
                    a.violations.push(
                        violation(
                            "L8",
                            format!(
                                "container {container} was deleted at {} while its {} was locked, by a request carrying {}",
                                when(e),
                                maybe_lease_words(&log, before, e),
                                sent.as_deref().map_or("no lease id".into(), |id| format!("lease id {}", short(id)))
                            ),
                            calls_at(h, "delete_container", container, e.at_ns),
                        )
                        .at(e.node.clone(), e.at_ns, "container deleted")
                        .with_evidence(lease_log_then(
                            &log,
                            container,
                            e.at_ns,
                            &|_| false,
                            Some(request_row(
                                e.at_ns,
                                Some(e.server_ms),
                                format!(
                                    "delete container{}",
                                    sent.as_deref().map_or(" without a lease id".into(), |id| format!(" with lease {}", short(id)))
                                ),
                                "deleted".to_string(),
                                None,
                            )),
                        )),
                    );
                }
                let prefix = format!("{container}/");
                let gone: Vec<String> = refs
                    .keys()
                    .chain(model.keys())
                    .filter(|k| **k == *container || k.starts_with(&prefix))
                    .cloned()
                    .collect();
                live.retain(|k| !k.starts_with(&prefix));
                for k in gone {
                    if let Some(l) = refs.get(&k) {
                        revoked.push((k.clone(), l.id.clone(), e.at_ns));
                    }
                    refs.remove(&k);
                    if let Some((_, idx)) = model.remove(&k) {
                        close(&mut intervals, idx, e.hull_ms);
                    }
                    breaks.remove(&k);
                    timeline
                        .entry(k)
                        .or_default()
                        .push((e.at_ns, e.server_ms, None));
                }
            }
            Effect::Store(
                store::Effect::ItemWritten { key, item }
                | store::Effect::ItemWrittenWithMetadata { key, item },
            ) => {
                let name = format!("{}/{}", key.container, key.id);
                let before = refs.get(&name).cloned();
                let replaced = writes.insert(
                    (name.clone(), item.version),
                    Snapshot {
                        node: e.node.clone(),
                        at_ns: e.at_ns,
                        server_ms: now,
                        before: before.clone(),
                        existed: !live.insert(name.clone()),
                    },
                );
                if replaced.is_some() {
                    written_twice.insert((name.clone(), item.version));
                }
                match reference::after_write(before, item.last_modified) {
                    Some(l) => {
                        refs.insert(name.clone(), l);
                    }
                    None => {
                        refs.remove(&name);
                        breaks.remove(&name);
                    }
                }
                if let Some((l, idx)) = model.get(&name).cloned() {
                    if !l.state_at(item.last_modified).is_locked() {
                        close(&mut intervals, idx, e.hull_ms);
                        model.remove(&name);
                    }
                }
                timeline.entry(name.clone()).or_default().push((
                    e.at_ns,
                    e.server_ms,
                    refs.get(&name).cloned(),
                ));
            }
            Effect::Store(store::Effect::ItemDeleted { key, .. }) => {
                let name = format!("{}/{}", key.container, key.id);
                if let Some(l) = refs.get(&name) {
                    revoked.push((name.clone(), l.id.clone(), e.at_ns));
                }
                deletes.entry(name.clone()).or_default().push(Snapshot {
                    node: e.node.clone(),
                    at_ns: e.at_ns,
                    server_ms: now,
                    before: refs.remove(&name),
                    existed: live.remove(&name),
                });
                breaks.remove(&name);
                if let Some((_, idx)) = model.remove(&name) {
                    close(&mut intervals, idx, e.hull_ms);
                }
                timeline
                    .entry(name)
                    .or_default()
                    .push((e.at_ns, e.server_ms, None));
            }
            // Other services' effects say nothing of leases.
            _ => {}
        }
    }
    writes.retain(|k, _| !written_twice.contains(k));

    // L1.
    // The record that granted a locked interval (its id, at its start on the clock's hull).
    let grant_of = |iv: &Interval<String, String>| {
        log.iter().find(|e| {
            e.hull_ms == iv.start
                && matches!(&e.effect, Effect::Lease(lease::Effect::Set { target, lease: Some(l), .. })
                    if target.name() == iv.resource && l.id == iv.holder)
        })
    };
    for (i, j) in overlaps(&intervals) {
        let (x, y) = (&intervals[i], &intervals[j]);
        let v = match (grant_of(x), grant_of(y)) {
            (Some(gx), Some(gy)) => violation(
                "L1",
                format!(
                    "{}: lease {} was locked from {} until {}, but lease {} was granted at {}",
                    x.resource,
                    short(&x.holder),
                    when(gx),
                    server_time(&log, gx, x.end),
                    short(&y.holder),
                    when(gy)
                ),
                calls_at(h, "acquire", &y.resource, gy.at_ns)
                    .into_iter()
                    .chain(calls_at(h, "acquire", &x.resource, gx.at_ns))
                    .collect(),
            )
            .during(
                gx.node.clone(),
                gx.at_ns,
                true_ns_at(&log, gx, x.end),
                format!("{} locked", short(&x.holder)),
            )
            .at(gy.node.clone(), gy.at_ns, format!("{} granted", short(&y.holder))),
            _ => violation(
                "L1",
                format!(
                    "{}: lease {} was locked from {} until {} on the server's clock, but lease {} was granted at {} on it",
                    x.resource,
                    short(&x.holder),
                    clock_secs(x.start),
                    clock_secs(x.end),
                    short(&y.holder),
                    clock_secs(y.start)
                ),
                vec![],
            ),
        };
        a.violations.push(v);
    }

    let records = ServerRecords {
        lost: answers::lost_records(h),
        log,
        clock: server_clock,
    };
    judge_ops(
        h, &mut a, &writes, &deletes, &timeline, &generated, &records,
    );
    a.resends_judged = judge_resends(h, &mut a);
    a.lease_refusals_judged = answers::judge_refusals(h, &records, &timeline, &mut a);
    a.blob_answers = answers::judge_blob_answers(h, &records, &timeline, &mut a);
    judge_fresh_etags(h, &mut a);
    judge_beliefs(h, &records.log, &revoked, &mut a);
    a
}

/// What the servers' records show, worked out once per history for the
/// rules that judge calls against them: the surviving log, the records
/// crashes took from it, and the bound the server's clock kept (`None`:
/// unknown, and the rules that need it are not judged).
struct ServerRecords {
    log: Vec<Entry>,
    lost: Vec<answers::Lost>,
    clock: Option<ClockBound>,
}

/// One of the lease checkers: the properties it reports, from [`analyse_with`].
pub struct LeaseRule {
    /// Its properties; the first names it.
    pub properties: &'static [Property],
    /// The bound the server's clock kept, when known.
    pub server_clock: Option<ClockBound>,
    /// The walk of the log, shared by the rules of one run.
    analysis: SharedAnalysis<Analysis>,
}

impl Checker<LeaseHistory> for LeaseRule {
    fn properties(&self) -> &'static [Property] {
        self.properties
    }

    fn check(&self, h: &LeaseHistory) -> Checked {
        let a = self.analysis.of(h, |h| analyse_with(h, self.server_clock));
        let mine: Vec<Violation> = a
            .violations
            .iter()
            .filter(|v| self.properties.iter().any(|p| p.id == v.property))
            .cloned()
            .collect();
        let note = match self.properties[0].id.as_str() {
            "L2" => format!(
                "{} writes, {} condition refusals, {} lease answers ({} where the clock allowed two)",
                a.writes_judged, a.refusals_judged, a.blob_answers.judged, a.blob_answers.either
            ),
            "L9" => format!("{} beliefs", a.beliefs),
            "R1" => format!("{} calls that may not be re-sent", a.resends_judged),
            "E1" => format!("{} writes answered with a version", a.writes_versioned),
            "L5" => format!(
                "{} transitions, {} refused lease actions",
                a.transitions, a.lease_refusals_judged
            ),
            _ => format!("{} transitions", a.transitions),
        };
        Checked::new(Verdict::from_violations(mine)).with_note(note)
    }
}

/// The lease checkers in the order the summary lists them, for a server
/// clock kept to [`ClockBound::DEFAULT`].
pub fn checkers() -> Vec<LeaseRule> {
    checkers_for(Some(ClockBound::DEFAULT))
}

/// The lease checkers, for a server clock kept to `server_clock` (`None`:
/// unknown).
pub fn checkers_for(server_clock: Option<ClockBound>) -> Vec<LeaseRule> {
    let analysis = SharedAnalysis::default();
    [
        &[L1][..],
        &[L2, L3],
        &[L4],
        &[L6],
        &[L7],
        &[L8],
        &[L9],
        &[L5],
        &[R1],
        &[E1],
    ]
    .into_iter()
    .map(|properties| LeaseRule {
        properties,
        server_clock,
        analysis: analysis.clone(),
    })
    .collect()
}
