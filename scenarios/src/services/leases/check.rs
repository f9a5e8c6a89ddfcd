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
//!   matched to its log record, against the reference lease state there.
//! - L4 break safety: no acquire by another id before the break time the
//!   reference computes (§2.4).
//! - L5 conformance: every logged lease transition against the reference (§2.3,
//!   §2.4, §2.6: a write clears an expired lease, so a later renew must fail);
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
//! - R1 no blind re-sends (SPEC §4.5, §2.9 L5): a call SPEC does not call
//!   idempotent ([`may_resend_after_timeout`]) is never sent again after an
//!   attempt that timed out or got 408, judged from each call's attempts
//!   against SPEC's list, not the model's own.

use super::history::{Call, LeaseEvent, LeaseHistory, Outcome};
use super::properties::*;
use super::reference::{self, RefLease, RefState};
use crate::kit::properties::R1;
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
            Effect::Store(store::Effect::ItemWritten { key, item }) => {
                let name = format!("{}/{}", key.container, key.id);
                let before = refs.get(&name).cloned();
                writes.insert(
                    (name.clone(), item.version),
                    Snapshot {
                        node: e.node.clone(),
                        at_ns: e.at_ns,
                        server_ms: now,
                        before: before.clone(),
                        existed: !live.insert(name.clone()),
                    },
                );
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
            Effect::Store(_)
            | Effect::Cosmos(_)
            | Effect::Search(_)
            | Effect::Queue(_)
            | Effect::Feed(_) => {}
        }
    }

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

    judge_ops(
        h,
        &mut a,
        &writes,
        &deletes,
        &timeline,
        &generated,
        server_clock,
    );
    a.resends_judged = judge_resends(h, &mut a);
    judge_beliefs(h, &log, &revoked, &mut a);
    a
}

/// For an acquire without a proposed id, retried and told 409
/// `LeaseAlreadyPresent`: a lease the server generated on its target while
/// the call ran and told no caller, which no other call explains. Another
/// acquire without a proposal whose outcome is unknown (a 408, a timeout, a
/// crash), invoked before the grant, may be the one that won it: each such
/// call explains one grant (in time order), and only a grant left over is
/// this call's.
fn unexplained_grant<'a>(
    h: &LeaseHistory,
    op: &OpRecord<Call, Outcome>,
    ret: u64,
    generated: &'a [(String, String, u64)],
    reported: &BTreeSet<&str>,
) -> Option<(&'a str, u64)> {
    let target = &op.call.target;
    let mut explainers: Vec<u64> = h
        .ops
        .iter()
        .filter(|o| {
            o.id != op.id
                && o.result.is_none()
                && o.call.op == "acquire"
                && o.call.proposed_id.is_none()
                && o.call.target == *target
        })
        .map(|o| o.invoke_ns)
        .collect();
    explainers.sort_unstable();
    let mut grants: Vec<(&str, u64)> = generated
        .iter()
        .filter(|(t, id, at)| {
            t == target && *at >= op.invoke_ns && *at <= ret && !reported.contains(id.as_str())
        })
        .map(|(_, id, at)| (id.as_str(), *at))
        .collect();
    grants.sort_by_key(|(_, at)| *at);
    for (id, at) in grants {
        // The earliest-invoked unused explainer that was invoked in time.
        match explainers.iter().position(|invoked| *invoked <= at) {
            Some(i) => {
                explainers.remove(i);
            }
            None => return Some((id, at)),
        }
    }
    None
}

/// Whether SPEC lets the SDK send `c` again after a timeout: reads; the
/// lease actions §2.9 L5 calls idempotent: an acquire with a proposed id, a
/// renew, a change, and a break (a repeat finds the lease breaking or
/// broken, and a later break never lengthens the break, §2.4); and setting
/// a container's metadata (a repeat sets the same metadata, and it
/// invalidates no lease, §2.7). Not: an acquire without a proposed id, a
/// release, and every other write (R1).
pub fn may_resend_after_timeout(c: &Call) -> bool {
    match c.op.as_str() {
        "read" | "renew" | "change" | "break" | "set_metadata" => true,
        "acquire" => c.proposed_id.is_some(),
        _ => false,
    }
}

/// R1 from each call's attempts: the calls judged.
fn judge_resends(h: &LeaseHistory, a: &mut Analysis) -> usize {
    let mut judged = 0;
    for op in h.ops.iter().filter(|o| !may_resend_after_timeout(&o.call)) {
        judged += 1;
        if let Some(mut v) = crate::kit::retry::resent_after_timeout(op.id, &op.attempts) {
            v.message = format!("{} {}: {}", op.call.op, op.call.target, v.message);
            a.violations.push(v);
        }
    }
    judged
}

/// L2, L3, L5 (acquire idempotency), L6, L8 (client side) from the calls.
fn judge_ops(
    h: &LeaseHistory,
    a: &mut Analysis,
    writes: &BTreeMap<(String, u64), Snapshot>,
    deletes: &BTreeMap<String, Vec<Snapshot>>,
    timeline: &LeaseTimeline,
    generated: &[(String, String, u64)],
    server_clock: Option<ClockBound>,
) {
    // The server's log, for the accounts of the calls judged here.
    let log = &server_log(h)[..];
    let reported: BTreeSet<&str> = h
        .ops
        .iter()
        .filter_map(|o| o.result.as_ref()?.lease_id.as_deref())
        .collect();
    for op in &h.ops {
        let Some(r) = &op.result else { continue };
        let c = &op.call;
        let ret = op.return_ns.unwrap_or(u64::MAX);
        let sent = c.lease_id.as_deref().and_then(lease::parse_guid);
        match c.op.as_str() {
            "put" | "delete" if r.is_success() => {
                let snap = if c.op == "put" {
                    r.version.and_then(|v| writes.get(&(c.target.clone(), v)))
                } else {
                    let within: Vec<&Snapshot> = deletes
                        .get(&c.target)
                        .into_iter()
                        .flatten()
                        .filter(|s| s.at_ns >= op.invoke_ns && s.at_ns <= ret)
                        .collect();
                    (within.len() == 1).then(|| within[0])
                };
                let Some(s) = snap else { continue };
                a.writes_judged += 1;
                let st = reference::state(s.before.as_ref(), s.server_ms);
                let holder = s.before.as_ref().map(|l| l.id.as_str());
                let at = format!(
                    "{} of {} at {} true, {} on {}'s clock,",
                    c.op,
                    c.target,
                    secs(s.at_ns),
                    clock_secs(s.server_ms),
                    s.node
                );
                let account = || {
                    lease_log_then(
                        log,
                        &c.target,
                        s.at_ns,
                        &|_| false,
                        Some(request_row(
                            s.at_ns,
                            Some(s.server_ms),
                            format!(
                                "{} {}",
                                c.op,
                                sent.as_deref()
                                    .map_or("without a lease id".into(), |id| format!(
                                        "with lease {}",
                                        short(id)
                                    ))
                            ),
                            format!("accepted ({})", r.status),
                            Some(op.id),
                        )),
                    )
                };
                match sent.as_deref() {
                    None if st.locked() => a.violations.push(
                        violation(
                            "L2",
                            format!(
                                "{at} carried no lease id but was accepted while lease {} was {}",
                                short(holder.unwrap_or("")),
                                st.word()
                            ),
                            vec![op.id],
                        )
                        .with_evidence(account()),
                    ),
                    Some(id) if !(st.locked() && holder == Some(id)) => {
                        let created = s.before.is_none() && !s.existed;
                        if created {
                            continue;
                        }
                        let property = if holder == Some(id) && st == RefState::Expired {
                            "L3"
                        } else {
                            "L2"
                        };
                        a.violations.push(
                            violation(
                                property,
                                format!(
                                    "{at} carried lease {} and was accepted, but the lease was {}{}",
                                    short(id),
                                    st.word(),
                                    holder
                                        .filter(|h| *h != id)
                                        .map(|h| format!(" under {}", short(h)))
                                        .unwrap_or_default()
                                ),
                                vec![op.id],
                            )
                            .with_evidence(account()),
                        );
                    }
                    _ => {}
                }
            }
            "put" | "delete" if condition_answer(r) => {
                if let Some(judged) = lease_before_conditions(op, timeline, server_clock) {
                    a.refusals_judged += 1;
                    a.violations.extend(judged);
                }
            }
            "acquire" if r.code.as_deref() == Some("LeaseAlreadyPresent") => {
                // L5: a retried acquire without a proposal told "lost" although it won.
                if c.proposed_id.is_none() && op.attempts.len() > 1 {
                    if let Some((id, at)) = unexplained_grant(h, op, ret, generated, &reported) {
                        let granted_ns = at;
                        a.violations.push(
                            violation(
                                "L5",
                                format!(
                                    "an acquire of {} without a proposed id was granted lease {} at {} true by one of its {} attempts, yet the caller was told 409 LeaseAlreadyPresent: a non-idempotent acquire was re-sent",
                                    c.target,
                                    short(id),
                                    secs(at),
                                    op.attempts.len()
                                ),
                                vec![op.id],
                            )
                            .with_evidence(lease_log_then(
                                log,
                                &c.target,
                                ret,
                                &|e| e.at_ns == granted_ns,
                                Some(request_row(
                                    ret,
                                    r.server_ms,
                                    format!(
                                        "acquire without a proposed id ({} attempts)",
                                        op.attempts.len()
                                    ),
                                    "409 LeaseAlreadyPresent".to_string(),
                                    Some(op.id),
                                )),
                            )),
                        );
                        continue;
                    }
                }
                // L6: refused while the lease had run out (no record on it during the call).
                let Some(server_ms) = r.server_ms else {
                    continue;
                };
                let line = timeline.get(&c.target).map(Vec::as_slice).unwrap_or(&[]);
                if line
                    .iter()
                    .any(|(at, ..)| *at >= op.invoke_ns && *at <= ret)
                {
                    continue;
                }
                let before = line
                    .iter()
                    .rev()
                    .find(|(at, ..)| *at < op.invoke_ns)
                    .and_then(|(.., l)| l.clone());
                let st = reference::state(before.as_ref(), server_ms);
                if !st.locked() {
                    let account = lease_log_then(
                        log,
                        &c.target,
                        op.invoke_ns,
                        &|_| false,
                        Some(request_row(
                            ret,
                            Some(server_ms),
                            "acquire".to_string(),
                            "409 LeaseAlreadyPresent".to_string(),
                            Some(op.id),
                        )),
                    );
                    a.violations.push(violation(
                        "L6",
                        format!(
                            "an acquire of {} answered at {} true ({} on the server's clock) was refused with LeaseAlreadyPresent although the lease was {}{}",
                            c.target,
                            secs(ret),
                            clock_secs(server_ms),
                            st.word(),
                            before
                                .and_then(|l| l.expire_ms)
                                .map(|e| format!(" (it expired at {} on the server's clock)", clock_secs(e)))
                                .unwrap_or_default()
                        ),
                        vec![op.id],
                    ).with_evidence(account));
                }
            }
            "set_metadata" if c.lease_id.is_none() && r.status == 412 => {
                a.violations.push(
                    violation(
                        "L8",
                        format!(
                            "Set Container Metadata on {} without a lease id was refused with 412 {}",
                            c.target,
                            r.code.as_deref().unwrap_or("")
                        ),
                        vec![op.id],
                    )
                    .with_evidence(lease_log_then(
                        log,
                        &c.target,
                        op.invoke_ns,
                        &|_| false,
                        Some(request_row(
                            ret,
                            r.server_ms,
                            "Set Container Metadata without a lease id".to_string(),
                            format!("412 {}", r.code.as_deref().unwrap_or("")),
                            Some(op.id),
                        )),
                    )),
                );
            }
            _ => {}
        }
    }
}

/// A conditional header's refusal: 304, 412 `ConditionNotMet`, 409
/// `BlobAlreadyExists` (`If-None-Match: *` on a write).
fn condition_answer(r: &Outcome) -> bool {
    matches!(
        (r.status, r.code.as_deref()),
        (304, _) | (412, Some("ConditionNotMet")) | (409, Some("BlobAlreadyExists"))
    )
}

/// L2, the order of checks (SPEC §1.1.5, AMBIG-3): a write or delete on a
/// blob whose lease is surely locked, without that lease's id, is refused by
/// the lease check, which comes before the conditions; a condition's refusal
/// there means the conditions were judged first. "Surely locked": no log
/// record on the blob during the call, and the lease of the record before
/// it locked from that record's server time to the latest time the server's
/// clock can read at the call's return, given `server_clock`'s drift and
/// steps (`None`: the bound is not known, nothing is judged). `None` when
/// the call could not be judged, else its violation if any.
fn lease_before_conditions(
    op: &OpRecord<Call, Outcome>,
    timeline: &LeaseTimeline,
    server_clock: Option<ClockBound>,
) -> Option<Option<Violation>> {
    let (bound, ret) = (server_clock?, op.return_ns?);
    let c = &op.call;
    let line = timeline.get(&c.target)?;
    if line
        .iter()
        .any(|(at, ..)| *at >= op.invoke_ns && *at <= ret)
    {
        return None;
    }
    let (at_ns, server_ms, lease) = line.iter().rev().find(|(at, ..)| *at < op.invoke_ns)?;
    let Some(lease) = lease.as_ref() else {
        return Some(None);
    };
    let elapsed_ms = (ret - at_ns) / 1_000_000;
    let latest_ms = server_ms
        + elapsed_ms
        + elapsed_ms * bound.max_drift_ppm / 1_000_000
        + bound.max_step_ms
        + bound.slack_ms;
    let locked = reference::state(Some(lease), *server_ms).locked()
        && reference::state(Some(lease), latest_ms).locked();
    let sent = c.lease_id.as_deref().and_then(lease::parse_guid);
    if !locked || sent.as_deref() == Some(lease.id.as_str()) {
        return Some(None);
    }
    let r = op.result.as_ref()?;
    Some(Some(violation(
        "L2",
        format!(
            "a {} of {} {} was answered {} {}, a condition's refusal, while lease {} held the blob (locked from {} true, {} on the server's clock, to past the call's return at {} true, when the server's clock read at most {}); SPEC §1.1.5, AMBIG-3: the lease check comes before the conditions, so the answer is 412 {}",
            c.op,
            c.target,
            match &sent {
                None => "without a lease id".to_string(),
                Some(id) => format!("with lease {}", short(id)),
            },
            r.status,
            r.code.as_deref().unwrap_or(""),
            short(&lease.id),
            secs(*at_ns),
            clock_secs(*server_ms),
            secs(ret),
            clock_secs(latest_ms),
            if sent.is_none() {
                "LeaseIdMissing"
            } else {
                "LeaseIdMismatchWithBlobOperation"
            }
        ),
        vec![op.id],
    )))
}

/// One holder's belief in one lease: from its acquire's success to its last
/// unfenced side effect.
struct BeliefSpan {
    holder: String,
    target: String,
    lease_id: String,
    start_ns: u64,
    last_ns: u64,
    last_local_ms: u64,
}

/// L9 from the holders' events.
fn judge_beliefs(
    h: &LeaseHistory,
    log: &[Entry],
    revoked: &[(String, String, u64)],
    a: &mut Analysis,
) {
    let mut open: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut spans: Vec<BeliefSpan> = Vec::new();
    for e in &h.node_events {
        match &e.event {
            LeaseEvent::Believes {
                target, lease_id, ..
            } => {
                let k = (e.node.clone(), target.clone());
                let continuing = open
                    .get(&k)
                    .is_some_and(|&i| spans[i].lease_id == *lease_id);
                if !continuing {
                    spans.push(BeliefSpan {
                        holder: e.node.clone(),
                        target: target.clone(),
                        lease_id: lease_id.clone(),
                        start_ns: e.at_ns,
                        last_ns: e.at_ns,
                        last_local_ms: e.local_ms,
                    });
                    open.insert(k, spans.len() - 1);
                }
            }
            LeaseEvent::SideEffect { target, lease_id } => {
                if let Some(&i) = open.get(&(e.node.clone(), target.clone())) {
                    if spans[i].lease_id == *lease_id {
                        spans[i].last_ns = e.at_ns;
                        spans[i].last_local_ms = e.local_ms;
                    }
                }
            }
            LeaseEvent::Dropped { target, .. } => {
                open.remove(&(e.node.clone(), target.clone()));
            }
            _ => {}
        }
    }
    a.beliefs = spans.len();
    let intervals: Vec<Interval<String, String>> = spans
        .iter()
        .map(|s| Interval {
            resource: s.target.clone(),
            holder: s.holder.clone(),
            start: s.start_ns,
            // Acting counts; a belief never acted on harms nobody.
            end: if s.last_ns > s.start_ns {
                s.last_ns + 1
            } else {
                s.start_ns
            },
        })
        .collect();
    for (i, j) in overlaps(&intervals) {
        // `x` believed first; `y` acquired while `x` still acted.
        let (x, y) = (&spans[i], &spans[j]);
        // From the server's grant of a belief's lease (its answer may come
        // after a revocation).
        let granted_ns = |b: &BeliefSpan| {
            log.iter()
                .filter(|e| e.at_ns <= b.start_ns)
                .filter(|e| {
                    matches!(&e.effect, Effect::Lease(lease::Effect::Set { target, lease: Some(l), .. })
                        if target.name() == b.target && l.id == b.lease_id)
                })
                .map(|e| e.at_ns)
                .next_back()
                .unwrap_or(b.start_ns)
        };
        let revoked_between = |b: &BeliefSpan, until_ns: u64| {
            let from = granted_ns(b);
            revoked.iter().any(|(t, id, at)| {
                *t == b.target && *id == b.lease_id && *at >= from && *at <= until_ns
            })
        };
        // x's lease revoked before y acquired, or y's revoked before y even
        // learned it held it (a grant whose answer came late, after a break
        // or a delete): by design, and neither holder can know.
        if revoked_between(x, y.start_ns) || revoked_between(y, y.start_ns) {
            continue;
        }
        // The server's view: y's grant and x's expiry.
        let grant = log.iter().find(|e| {
            e.at_ns <= y.start_ns
                && matches!(&e.effect, Effect::Lease(lease::Effect::Set { target, lease: Some(l), .. })
                    if target.name() == y.target && l.id == y.lease_id)
                && e.at_ns >= x.start_ns
        });
        let expiry = log
            .iter()
            .filter(|e| e.at_ns <= y.start_ns)
            .filter_map(|e| match &e.effect {
                Effect::Lease(lease::Effect::Set {
                    target,
                    lease: Some(l),
                    ..
                }) if target.name() == x.target && l.id == x.lease_id => match l.phase {
                    Phase::Leased { expire_ms } => expire_ms.map(|ms| (e, ms)),
                    _ => None,
                },
                _ => None,
            })
            .next_back();
        let server = match (grant, expiry) {
            (Some(g), Some((_, exp_ms))) => format!(
                "holder {} acquired it at {} (offset {:+.1} s), after the lease's expiry at {}",
                y.holder,
                when(g),
                offset_s(g.server_ms, g.at_ns),
                server_time(log, g, exp_ms)
            ),
            (Some(g), None) => format!("holder {} acquired it at {}", y.holder, when(g)),
            _ => format!(
                "holder {} believed it held it from {} true",
                y.holder,
                secs(y.start_ns)
            ),
        };
        let acquired = |b: &BeliefSpan| -> Vec<u64> {
            h.ops
                .iter()
                .filter(|o| {
                    o.call.op == "acquire"
                        && o.call.target == b.target
                        && o.result.as_ref().and_then(|r| r.lease_id.as_deref())
                            == Some(b.lease_id.as_str())
                        && o.invoke_ns <= b.start_ns
                })
                .map(|o| o.id)
                .next_back()
                .into_iter()
                .collect()
        };
        let ops: Vec<u64> = acquired(y).into_iter().chain(acquired(x)).collect();
        let blob = x.target.split('/').next_back().unwrap_or(&x.target);
        a.violations.push(
            violation(
                "L9",
                format!(
                    "holder {} believed it held lease {} on blob {} until {} true ({} on its clock, offset {:+.1} s); {server}. Both believed they held it from {} to {} true",
                    x.holder,
                    short(&x.lease_id),
                    blob,
                    secs(x.last_ns),
                    clock_secs(x.last_local_ms),
                    offset_s(x.last_local_ms, x.last_ns),
                    secs(y.start_ns),
                    secs(x.last_ns)
                ),
                ops,
            )
            .during(x.holder.clone(), y.start_ns, x.last_ns, "both believed")
            .during(y.holder.clone(), y.start_ns, x.last_ns, "both believed")
            .with_evidence(belief_evidence(log, x, y, granted_ns(x), grant, expiry, blob)),
        );
    }
}

/// The lease of two overlapping beliefs as the server saw it beside each
/// holder's belief, in true time with the clocks' readings beside it.
fn belief_evidence(
    log: &[Entry],
    x: &BeliefSpan,
    y: &BeliefSpan,
    x_granted_ns: u64,
    y_grant: Option<&Entry>,
    x_expiry: Option<(&Entry, u64)>,
    blob: &str,
) -> Evidence {
    let row = |cells: [String; 4], marked: bool| EvidenceRow {
        op: None,
        cells: cells.to_vec(),
        marked,
    };
    let x_grant = log.iter().find(|e| e.at_ns == x_granted_ns);
    let mut rows = Vec::new();
    rows.push(row(
        [
            "the server".into(),
            x_grant.map_or(format!("{} true", secs(x_granted_ns)), when),
            match x_expiry {
                Some((e, ms)) => format!("expiry at {}", server_time(log, e, ms)),
                None => "no expiry recorded".into(),
            },
            format!(
                "granted lease {} on {blob} to {}",
                short(&x.lease_id),
                x.holder
            ),
        ],
        false,
    ));
    rows.push(row(
        [
            format!("{}'s belief", x.holder),
            format!("{} true", secs(x.start_ns)),
            format!(
                "{} true, {} on its clock",
                secs(x.last_ns),
                clock_secs(x.last_local_ms)
            ),
            format!("acted on lease {} until then", short(&x.lease_id)),
        ],
        false,
    ));
    rows.push(row(
        [
            "the server".into(),
            y_grant.map_or("not in the log".into(), when),
            String::new(),
            format!(
                "granted lease {} on {blob} to {}",
                short(&y.lease_id),
                y.holder
            ),
        ],
        false,
    ));
    rows.push(row(
        [
            format!("{}'s belief", y.holder),
            format!("{} true", secs(y.start_ns)),
            format!("{} true", secs(y.last_ns)),
            format!("acted on lease {}", short(&y.lease_id)),
        ],
        false,
    ));
    rows.push(row(
        [
            "both holders".into(),
            format!("{} true", secs(y.start_ns)),
            format!("{} true", secs(x.last_ns)),
            format!("believed they held {blob} at once"),
        ],
        true,
    ));
    Evidence {
        title: format!("Lease on {blob}: the server's view against the holders' beliefs"),
        lead: vec![format!(
            "The server handed {blob} to {} while {} still acted on its older lease: {}'s belief outlived the lease as the server counted it.",
            y.holder, x.holder, x.holder
        )],
        columns: ["who", "from", "until", "what"].map(String::from).to_vec(),
        rows,
        notes: Vec::new(),
    }
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
                "{} writes, {} condition refusals",
                a.writes_judged, a.refusals_judged
            ),
            "L9" => format!("{} beliefs", a.beliefs),
            "R1" => format!("{} calls that may not be re-sent", a.resends_judged),
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
    ]
    .into_iter()
    .map(|properties| LeaseRule {
        properties,
        server_clock,
        analysis: analysis.clone(),
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use overcast_model::lease::{LeaseTarget, Phase};
    use overcast_model::store::ItemKey;
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
            analyse(&History {
                version: overcast_sim::history::HISTORY_VERSION,
                ops,
                events: Vec::new(),
                node_events: Vec::new(),
                log_events: Vec::new(),
            })
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
}
