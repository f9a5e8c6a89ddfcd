//! The checks of `queues`, most important first: the end-to-end property
//! (after heal and the final full traversals the index equals the
//! repository), Q2 exclusive reservation, Q1 poll order and completeness, Q6
//! version monotonicity, Q7 delete detection, Q8 traversal gating, Q9
//! checkpoint resume, Q4 status transitions (against [`super::reference`]),
//! Q3 reservation liveness and Q5 REQUEUE fairness.
//!
//! The server-side checks replay the server's log as it was written
//! ([`QueueEvent::Logged`], cut back at each [`QueueEvent::Recovered`]): each
//! logged effect carries the request and the new state of every item it
//! changed, so a check sees every item before and after every change, in the
//! server's order, and judges the change by SPEC §5 (not by the model's
//! code). Polls that changed nothing (they returned no item) are not logged;
//! their answers, with the server's clock, are judged against the replayed
//! state at that time. The connector-side checks (Q7's second half, Q8, Q9)
//! read the connectors' reports and calls.

use super::history::{Call, Outcome, QueueEvent, QueueHistory};
use super::reference;
use overcast_model::conditions::Millis;
use overcast_model::connector::{
    ConnectorEvent, Source, CHECKPOINT_FULL, CHECKPOINT_INCREMENTAL, CHECKPOINT_QUEUE,
};
use overcast_model::queue::{
    poll_order, Item, Operation, PushType, QueueConfig, QueueEffect, QueueRequest, DEFAULT_LIMIT,
    DEFAULT_QUEUE,
};
use overcast_sim::check::{Checked, Checker, Verdict, Violation};
use overcast_sim::history::OpRecord;
use overcast_sim::timeline::clock_secs;
use std::collections::{BTreeMap, BTreeSet};

/// Every checker of `queues`, in the order the summary lists them.
pub fn checkers() -> Vec<Box<dyn Checker<QueueHistory>>> {
    vec![
        Box::new(EndToEnd),
        Box::new(ServerRule("Q2")),
        Box::new(ServerRule("Q1")),
        Box::new(ServerRule("Q6")),
        Box::new(DeleteDetection),
        Box::new(TraversalGating),
        Box::new(CheckpointResume),
        Box::new(ServerRule("Q4")),
        Box::new(ServerRule("Q3")),
        Box::new(ServerRule("Q5")),
    ]
}

/// The server's state as its log says.
#[derive(Clone, Debug, Default)]
pub struct Replay {
    /// Items by name.
    pub items: BTreeMap<String, Item>,
    /// Operations by name.
    pub ops: BTreeMap<String, Operation>,
    /// The datasource's settings.
    pub config: QueueConfig,
    /// When each item last changed (server ms).
    pub changed_ms: BTreeMap<String, Millis>,
    records: Vec<QueueEffect>,
}

impl Replay {
    fn apply(&mut self, e: &QueueEffect) {
        if let Some(c) = &e.created {
            self.config = c.clone();
        }
        for (op, items) in &e.completed {
            self.ops.insert(op.name.clone(), op.clone());
            for (n, i) in items {
                self.items.insert(n.clone(), i.clone());
                self.changed_ms.insert(n.clone(), e.at_ms);
            }
        }
        for (n, i) in &e.items {
            self.items.insert(n.clone(), i.clone());
            self.changed_ms.insert(n.clone(), e.at_ms);
        }
        if let Some(op) = &e.started {
            self.ops.insert(op.name.clone(), op.clone());
        }
    }

    fn record(&mut self, e: &QueueEffect) {
        self.apply(e);
        self.records.push(e.clone());
    }

    /// Back to the first `kept` records (what a restarted server recovered).
    fn cut(&mut self, kept: usize) {
        let mut records = std::mem::take(&mut self.records);
        records.truncate(kept);
        *self = Replay::default();
        for r in &records {
            self.record(r);
        }
    }

    /// The names of the items of `queue` (status filter `statuses`) a poll at
    /// `at` should return, in order, at most `limit`.
    fn expected_poll(
        &self,
        queue: &str,
        statuses: &[overcast_model::queue::ItemStatus],
        limit: usize,
        at: Millis,
    ) -> Vec<String> {
        let mut eligible: Vec<(&String, &Item)> = self
            .items
            .iter()
            .filter(|(_, i)| i.queue == queue && i.eligible_at(at))
            .filter(|(_, i)| statuses.is_empty() || statuses.contains(&i.status))
            .collect();
        eligible.sort_by_key(|(n, i)| poll_order(n, i));
        eligible
            .into_iter()
            .take(limit)
            .map(|(n, _)| n.clone())
            .collect()
    }
}

/// One step of the replay.
pub enum Step<'a> {
    /// The operations a logged effect completed (the state is the one before them).
    Completions(&'a QueueEffect),
    /// A logged effect's request (the state is the one before it, after the
    /// operations it completed).
    Effect(&'a QueueEffect),
    /// The answer of a poll that returned fewer items than its limit, at its
    /// server time (the state includes every change up to that time).
    Poll(&'a OpRecord<Call, Outcome>),
}

fn poll_limit(limit: Option<u32>) -> usize {
    match limit {
        None | Some(0) => DEFAULT_LIMIT as usize,
        Some(l) => l as usize,
    }
}

/// Walks the server's log in order, handing `f` the state before each step.
pub fn walk(h: &QueueHistory, mut f: impl FnMut(&Replay, Step)) -> Replay {
    // Polls that returned fewer than they asked for, by server time.
    let mut polls: Vec<(Millis, &OpRecord<Call, Outcome>)> = h
        .ops
        .iter()
        .filter_map(|o| {
            let QueueRequest::Poll { limit, .. } = &o.call.request else {
                return None;
            };
            let r = o.result.as_ref()?.response.as_ref()?;
            (r.status == 200 && r.items.len() < poll_limit(*limit)).then_some((r.server_ms, o))
        })
        .collect();
    polls.sort_by_key(|(ms, o)| (*ms, o.id));
    let mut next_poll = 0;
    let mut state = Replay::default();
    for e in &h.node_events {
        match &e.event {
            QueueEvent::Logged { effect, .. } => {
                while next_poll < polls.len() && polls[next_poll].0 < effect.at_ms {
                    f(&state, Step::Poll(polls[next_poll].1));
                    next_poll += 1;
                }
                // Operations due complete before the request is judged.
                if !effect.completed.is_empty() {
                    f(&state, Step::Completions(effect));
                    state.apply(&QueueEffect {
                        request: None,
                        items: Vec::new(),
                        started: None,
                        created: None,
                        ..(**effect).clone()
                    });
                }
                f(&state, Step::Effect(effect));
                state.record(effect);
            }
            QueueEvent::Recovered { kept } => state.cut(*kept as usize),
            _ => {}
        }
    }
    for (_, o) in &polls[next_poll..] {
        f(&state, Step::Poll(o));
    }
    state
}

fn violation(property: &'static str, message: String, ops: Vec<u64>) -> Violation {
    Violation {
        property: property.into(),
        message,
        ops,
    }
}

/// The rules the server's log alone decides: Q1–Q6.
pub struct ServerRule(pub &'static str);

impl Checker<QueueHistory> for ServerRule {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        match self.0 {
            "Q1" => &[crate::services::queues::properties::Q1],
            "Q2" => &[crate::services::queues::properties::Q2],
            "Q3" => &[crate::services::queues::properties::Q3],
            "Q4" => &[crate::services::queues::properties::Q4],
            "Q5" => &[crate::services::queues::properties::Q5],
            _ => &[crate::services::queues::properties::Q6],
        }
    }

    fn check(&self, h: &QueueHistory) -> Checked {
        let mut found = Vec::new();
        let mut judged = 0usize;
        walk(h, |state, step| {
            let before = match self.0 {
                "Q1" | "Q3" => poll_rules(self.0, state, &step),
                "Q2" => reservation_rule(state, &step),
                "Q4" => transition_rule(state, &step),
                "Q5" => requeue_rule(state, &step),
                _ => version_rule(state, &step),
            };
            judged += usize::from(before.is_some());
            found.extend(before.into_iter().flatten());
        });
        if self.0 == "Q4" {
            found.extend(malformed_pushes(h));
        }
        found.truncate(20);
        Checked::new(Verdict::from_violations(found)).with_note(format!("{judged} steps"))
    }
}

/// Q1 (order and completeness) and Q3 (an expired reservation is pollable).
/// `None` when the step is not a poll.
fn poll_rules(property: &'static str, state: &Replay, step: &Step) -> Option<Vec<Violation>> {
    let (queue, statuses, limit, at, returned, ops) = match step {
        Step::Effect(e) => {
            let Some(QueueRequest::Poll {
                queue,
                statuses,
                limit,
                ..
            }) = &e.request
            else {
                return None;
            };
            let returned: Vec<String> = e.items.iter().map(|(n, _)| n.clone()).collect();
            (queue, statuses, *limit, e.at_ms, returned, Vec::new())
        }
        Step::Poll(o) => {
            let QueueRequest::Poll {
                queue,
                statuses,
                limit,
                ..
            } = &o.call.request
            else {
                return None;
            };
            let r = o.result.as_ref()?.response.as_ref()?;
            let returned = r.items.iter().map(|i| i.name.clone()).collect();
            (queue, statuses, *limit, r.server_ms, returned, vec![o.id])
        }
        Step::Completions(_) => return None,
    };
    let q = queue.clone().unwrap_or_else(|| DEFAULT_QUEUE.into());
    let limit = poll_limit(limit);
    let mut v = Vec::new();
    let at_s = clock_secs(at);
    let expired = |n: &String| {
        state.items[n]
            .reserved_until
            .is_some_and(|until| until <= at)
    };
    match step {
        Step::Effect(_) => {
            let expected = state.expected_poll(&q, statuses, limit, at);
            let missing_expired: Vec<&String> = expected
                .iter()
                .filter(|n| !returned.contains(n) && expired(n))
                .collect();
            if property == "Q3" && !missing_expired.is_empty() {
                v.push(violation(
                    "Q3",
                    format!(
                        "a poll of '{q}' at {at_s} on the server's clock did not return {missing_expired:?}, whose reservations had ended"
                    ),
                    ops,
                ));
            } else if property == "Q1" && expected != returned && missing_expired.is_empty() {
                v.push(violation(
                    "Q1",
                    format!(
                        "a poll of '{q}' (limit {limit}) at {at_s} on the server's clock returned {returned:?}; by (status, available time, name) it should have returned {expected:?}"
                    ),
                    ops,
                ));
            }
        }
        _ => {
            // A poll seen by its answer: items eligible at `at` and unchanged at `at` (a change in the same
            // millisecond may have come after the poll).
            let missing: Vec<String> = state
                .expected_poll(&q, statuses, usize::MAX, at)
                .into_iter()
                .filter(|n| !returned.contains(n))
                .filter(|n| state.changed_ms.get(n) != Some(&at))
                .collect();
            let (exp, other): (Vec<&String>, Vec<&String>) =
                missing.iter().partition(|n| expired(n));
            let which = if property == "Q3" { exp } else { other };
            if !which.is_empty() {
                v.push(violation(
                    property,
                    format!(
                        "a poll of '{q}' (limit {limit}) at {at_s} on the server's clock returned {} item(s) while {which:?} were eligible{}",
                        returned.len(),
                        if property == "Q3" { " (their reservations had ended)" } else { "" }
                    ),
                    ops,
                ));
            }
        }
    }
    Some(v)
}

/// Q2: a poll returns no item that is reserved (or backing off).
fn reservation_rule(state: &Replay, step: &Step) -> Option<Vec<Violation>> {
    let Step::Effect(e) = step else { return None };
    let Some(QueueRequest::Poll { .. }) = &e.request else {
        return None;
    };
    let mut v = Vec::new();
    for (n, _) in &e.items {
        let Some(b) = state.items.get(n) else {
            continue;
        };
        if b.reserved_at(e.at_ms, false) {
            v.push(violation(
                "Q2",
                format!(
                    "a poll at {} on the server's clock returned {n}, which a poll had reserved until {}",
                    clock_secs(e.at_ms),
                    clock_secs(b.reserved_until.unwrap_or_default())
                ),
                Vec::new(),
            ));
        } else if b.available_ms > e.at_ms {
            v.push(violation(
                "Q2",
                format!(
                    "a poll at {} on the server's clock returned {n}, not available before {} (backoff)",
                    clock_secs(e.at_ms),
                    clock_secs(b.available_ms)
                ),
                Vec::new(),
            ));
        }
    }
    Some(v)
}

/// Q6: an index or delete takes effect only with a version above the indexed one.
fn version_rule(state: &Replay, step: &Step) -> Option<Vec<Violation>> {
    let Step::Effect(e) = step else { return None };
    let (name, version, what) = match &e.request {
        Some(QueueRequest::Index { name, version, .. }) => (name, version, "index"),
        Some(QueueRequest::Delete { name, version, .. }) => (name, version, "delete"),
        _ => return None,
    };
    let floor = state
        .items
        .get(name)
        .map(|b| {
            b.version_floor(e.at_ms, state.config.soft_delete_ms())
                .to_string()
        })
        .unwrap_or_default();
    let mut v = Vec::new();
    if version.as_str() <= floor.as_str() {
        v.push(violation(
            "Q6",
            format!(
                "an {what} of {name} with version {version} took effect at {} on the server's clock although version {floor} was indexed",
                clock_secs(e.at_ms)
            ),
            Vec::new(),
        ));
    }
    Some(v)
}

/// Q4: pushes, indexes and deletes change the item as SPEC §5.2/§5.4 say.
fn transition_rule(state: &Replay, step: &Step) -> Option<Vec<Violation>> {
    let Step::Effect(e) = step else { return None };
    let req = e.request.as_ref()?;
    let (name, kind) = match req {
        QueueRequest::Push { item, .. } => (&item.name, "push"),
        QueueRequest::Index { name, .. } => (name, "index"),
        QueueRequest::Delete { name, .. } => (name, "delete"),
        _ => return None,
    };
    let mut v = Vec::new();
    if let QueueRequest::Push { item, .. } = req {
        if item.r#type != PushType::Unspecified && !item.hashes.is_empty() {
            v.push(violation(
                "Q4",
                format!("a push of {name} with a type and a hash changed state (must be 400)"),
                Vec::new(),
            ));
        }
    }
    let expected = reference::after(state.items.get(name), req, e.at_ms)?;
    match e.items.iter().find(|(n, _)| n == name) {
        None => v.push(violation(
            "Q4",
            format!(
                "a {kind} of {name} at {} on the server's clock did not change it",
                clock_secs(e.at_ms)
            ),
            Vec::new(),
        )),
        Some((_, after)) => {
            let d = expected.differences(after, e.at_ms);
            if !d.is_empty() {
                v.push(violation(
                    "Q4",
                    format!(
                        "after a {kind} of {name} at {} on the server's clock: {}",
                        clock_secs(e.at_ms),
                        d.join(", ")
                    ),
                    Vec::new(),
                ));
            }
        }
    }
    Some(v)
}

/// Q4's other half: a push with a type and a hash is answered 400.
fn malformed_pushes(h: &QueueHistory) -> Vec<Violation> {
    h.ops
        .iter()
        .filter(|o| {
            matches!(&o.call.request, QueueRequest::Push { item, .. }
                if item.r#type != PushType::Unspecified && !item.hashes.is_empty())
        })
        .filter_map(|o| {
            let r = o.result.as_ref()?.response.as_ref()?;
            (r.status != 400).then(|| {
                violation(
                    "Q4",
                    format!(
                        "a push with a type and a hash was answered {} (must be 400)",
                        r.status
                    ),
                    vec![o.id],
                )
            })
        })
        .collect()
}

/// Q5: after a REQUEUE at t the item is ordered after every eligible item of
/// its queue and status whose available time is before t.
fn requeue_rule(state: &Replay, step: &Step) -> Option<Vec<Violation>> {
    let Step::Effect(e) = step else { return None };
    let Some(QueueRequest::Push { item: push, .. }) = &e.request else {
        return None;
    };
    if push.r#type != PushType::Requeue {
        return None;
    }
    let (name, after) = e.items.iter().find(|(n, _)| *n == push.name)?;
    let ahead: Vec<&String> = state
        .items
        .iter()
        .filter(|(n, i)| {
            *n != name
                && i.queue == after.queue
                && i.status == after.status
                && i.eligible_at(e.at_ms)
                && i.available_ms < e.at_ms
                && poll_order(name, after) < poll_order(n, i)
        })
        .map(|(n, _)| n)
        .collect();
    let mut v = Vec::new();
    if !ahead.is_empty() {
        v.push(violation(
            "Q5",
            format!(
                "{name} requeued at {} on the server's clock got available time {} and is ordered before {ahead:?}, queued before it",
                clock_secs(e.at_ms),
                clock_secs(after.available_ms)
            ),
            Vec::new(),
        ));
    }
    Some(v)
}

/// Connector 0's report events, with their true time.
fn reports(h: &QueueHistory) -> Vec<(u64, &ConnectorEvent)> {
    h.node_events
        .iter()
        .filter_map(|e| match &e.event {
            QueueEvent::Connector(c) => Some((e.at_ns, c)),
            _ => None,
        })
        .collect()
}

/// One full traversal from its first index phase to its end.
struct Pass {
    queue: String,
    start_ns: u64,
    done_ns: u64,
    operation: Option<String>,
    deleted: String,
}

/// The completed passes of the full traversal, and Q9's resume violations.
fn passes(h: &QueueHistory) -> (Vec<Pass>, Vec<Violation>) {
    let mut out = Vec::new();
    let mut v = Vec::new();
    let mut open: Option<(String, u64)> = None;
    let mut saved_full: Option<String> = None;
    for (at, e) in reports(h) {
        match e {
            ConnectorEvent::CheckpointSaved { name, value } if name == CHECKPOINT_FULL => {
                saved_full = Some(value.clone()).filter(|v| !v.is_empty());
            }
            ConnectorEvent::FullIndexing {
                queue,
                resume_after,
            } => {
                if *resume_after != saved_full {
                    v.push(violation(
                        "Q9",
                        format!(
                            "the full traversal into '{queue}' resumed after {resume_after:?}, but the last checkpoint_full saved was {saved_full:?}"
                        ),
                        Vec::new(),
                    ));
                }
                if resume_after.is_none() || open.is_none() {
                    open = Some((queue.clone(), at));
                }
            }
            ConnectorEvent::FullDone {
                queue,
                operation,
                deleted,
                ..
            } => {
                if let Some((q, start_ns)) = open.take() {
                    if q == *queue {
                        out.push(Pass {
                            queue: q,
                            start_ns,
                            done_ns: at,
                            operation: operation.clone(),
                            deleted: deleted.clone(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    (out, v)
}

/// Items the full traversal indexed into `queue` within the pass (answered
/// 200, or 400 for a stale version: a newer one is indexed).
fn indexed_in(h: &QueueHistory, p: &Pass, ok_statuses: &[u16]) -> BTreeSet<String> {
    h.ops
        .iter()
        .filter(|o| o.call.source == Source::Full)
        .filter(|o| o.invoke_ns >= p.start_ns && o.invoke_ns <= p.done_ns)
        .filter_map(|o| match (&o.call.request, &o.result) {
            (QueueRequest::Index { name, queue, .. }, Some(r))
                if queue.as_deref() == Some(p.queue.as_str())
                    && ok_statuses.contains(&r.status) =>
            {
                Some(name.clone())
            }
            _ => None,
        })
        .collect()
}

/// Q7: a completed `deleteQueueItems(Q)` deleted exactly the items labelled Q
/// when it started (service), and the delete after traversal k spares every
/// item traversal k indexed that is still labelled with k's queue (SDK).
pub struct DeleteDetection;

impl Checker<QueueHistory> for DeleteDetection {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::services::queues::properties::Q7]
    }

    fn check(&self, h: &QueueHistory) -> Checked {
        let mut v = Vec::new();
        // Each operation's items and the labels of every item when it
        // started. A start lost with a crash is replaced by the next start
        // of that name (a recovered server may issue the name again: the
        // lost one was never acknowledged).
        let mut at_start: BTreeMap<String, (Vec<String>, BTreeMap<String, String>)> =
            BTreeMap::new();
        let mut completions = 0;
        walk(h, |state, step| {
            let e = match step {
                Step::Completions(e) => {
                    completions += completed(state, e, &mut v);
                    return;
                }
                Step::Effect(e) => e,
                Step::Poll(_) => return,
            };
            if let Some(op) = &e.started {
                let expected: BTreeSet<&String> = state
                    .items
                    .iter()
                    .filter(|(_, i)| i.queued && i.queue == op.queue)
                    .map(|(n, _)| n)
                    .collect();
                let got: BTreeSet<&String> = op.items.iter().collect();
                if expected != got {
                    v.push(violation(
                        "Q7",
                        format!(
                            "{} on '{}' started with items {got:?}; labelled '{}' then: {expected:?}",
                            op.name, op.queue, op.queue
                        ),
                        Vec::new(),
                    ));
                }
                let labels = state
                    .items
                    .iter()
                    .filter(|(_, i)| i.queued)
                    .map(|(n, i)| (n.clone(), i.queue.clone()))
                    .collect();
                at_start.insert(op.name.clone(), (op.items.clone(), labels));
            }
        });
        let (passes, _) = passes(h);
        for p in &passes {
            let Some(op) = &p.operation else { continue };
            let Some((items, labels)) = at_start.get(op) else {
                continue;
            };
            let indexed = indexed_in(h, p, &[200]);
            let wrongly: Vec<&String> = items
                .iter()
                .filter(|n| indexed.contains(*n) && labels.get(*n) == Some(&p.queue))
                .collect();
            if !wrongly.is_empty() {
                v.push(violation(
                    "Q7",
                    format!(
                        "the full traversal indexed {wrongly:?} into '{}', then asked {op} to delete '{}', which deletes them although they are still in the repository's traversal",
                        p.queue, p.deleted
                    ),
                    Vec::new(),
                ));
            }
        }
        v.truncate(20);
        Checked::new(Verdict::from_violations(v)).with_note(format!(
            "{} traversals, {completions} deletes",
            passes.len()
        ))
    }
}

/// Q7's service half for the operations `e` completed: each deleted exactly
/// the items it snapshotted that were still in a queue. Returns how many.
///
/// Completions logged together apply in their listed order, so an item an
/// earlier one deleted is no longer there for a later one (two overlapping
/// deletes of one queue, after a connector restarted, snapshot the same item).
fn completed(state: &Replay, e: &QueueEffect, v: &mut Vec<Violation>) -> usize {
    let mut gone: BTreeSet<&String> = BTreeSet::new();
    for (op, deleted) in &e.completed {
        let expected: BTreeSet<&String> = op
            .items
            .iter()
            .filter(|n| !gone.contains(n) && state.items.get(*n).is_some_and(|i| i.queued))
            .collect();
        let got: BTreeSet<&String> = deleted.iter().map(|(n, _)| n).collect();
        if expected != got {
            v.push(violation(
                "Q7",
                format!(
                    "{} on '{}' completed deleting {got:?}; it should have deleted {expected:?}",
                    op.name, op.queue
                ),
                Vec::new(),
            ));
        }
        gone.extend(deleted.iter().map(|(n, _)| n));
    }
    e.completed.len()
}

/// Q8: a full traversal never starts its index phase while a
/// `deleteQueueItems` it saved as pending is not done.
pub struct TraversalGating;

impl Checker<QueueHistory> for TraversalGating {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::services::queues::properties::Q8]
    }

    fn check(&self, h: &QueueHistory) -> Checked {
        // When each operation's completion was first logged.
        let mut done_at: BTreeMap<&str, u64> = BTreeMap::new();
        for e in &h.node_events {
            if let QueueEvent::Logged { effect, .. } = &e.event {
                for (op, _) in &effect.completed {
                    done_at.entry(op.name.as_str()).or_insert(e.at_ns);
                }
            }
        }
        let mut pending: BTreeSet<String> = BTreeSet::new();
        let mut v = Vec::new();
        let mut phases = 0;
        for (at, e) in reports(h) {
            match e {
                ConnectorEvent::CheckpointSaved { name, value } if name == CHECKPOINT_QUEUE => {
                    if let Some((_, op)) = value.split_once('\n') {
                        pending.insert(op.to_string());
                    }
                }
                ConnectorEvent::FullIndexing { queue, .. } => {
                    phases += 1;
                    for op in &pending {
                        if done_at.get(op.as_str()).is_none_or(|d| *d >= at) {
                            v.push(violation(
                                "Q8",
                                format!(
                                    "the full traversal began indexing into '{queue}' at {:.3} s while {op} (saved as pending) was not done",
                                    at as f64 / 1e9
                                ),
                                Vec::new(),
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
        v.truncate(20);
        Checked::new(Verdict::from_violations(v)).with_note(format!("{phases} index phases"))
    }
}

/// The repository at a true time: present documents with their content.
fn repository_at(h: &QueueHistory, until_ns: u64) -> BTreeMap<String, String> {
    let mut docs = BTreeMap::new();
    for e in &h.node_events {
        if e.at_ns > until_ns {
            break;
        }
        if let QueueEvent::Repo { id, content, .. } = &e.event {
            match content {
                Some(c) => docs.insert(id.clone(), c.clone()),
                None => docs.remove(id),
            };
        }
    }
    docs
}

/// Q9: a traversal resumes from its last saved checkpoint and, by its end,
/// has indexed every document that was in the repository all along.
pub struct CheckpointResume;

impl Checker<QueueHistory> for CheckpointResume {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::services::queues::properties::Q9]
    }

    fn check(&self, h: &QueueHistory) -> Checked {
        let (passes, mut v) = passes(h);
        for p in &passes {
            let at_start = repository_at(h, p.start_ns);
            let removed: BTreeSet<&String> = h
                .node_events
                .iter()
                .filter(|e| e.at_ns >= p.start_ns && e.at_ns <= p.done_ns)
                .filter_map(|e| match &e.event {
                    QueueEvent::Repo {
                        id, content: None, ..
                    } => Some(id),
                    _ => None,
                })
                .collect();
            let indexed = indexed_in(h, p, &[200, 400]);
            let skipped: Vec<&String> = at_start
                .keys()
                .filter(|id| !removed.contains(id) && !indexed.contains(*id))
                .collect();
            if !skipped.is_empty() {
                v.push(violation(
                    "Q9",
                    format!(
                        "the full traversal into '{}' ({:.3} s – {:.3} s) ended without indexing {skipped:?}, which were in the repository throughout",
                        p.queue,
                        p.start_ns as f64 / 1e9,
                        p.done_ns as f64 / 1e9
                    ),
                    Vec::new(),
                ));
            }
        }
        let (saves, missed) = incremental_saves(h);
        v.extend(missed);
        v.truncate(20);
        Checked::new(Verdict::from_violations(v)).with_note(format!(
            "{} traversals, {saves} incremental checkpoints",
            passes.len()
        ))
    }
}

/// Q9 for the incremental traversal (SPEC §5.5 `handleIncrementalChanges`,
/// §5.7 Q9): a connector saves `checkpoint_incremental = s` only after it
/// has pushed (answered 200) every document changed after the value its
/// run started from and no later than change `s`, each push made after the
/// change. A save before the pushes loses those changes for good when the
/// connector crashes or a push fails (until a full traversal, a day later
/// by default). The number of saves judged, and the violations.
fn incremental_saves(h: &QueueHistory) -> (usize, Vec<Violation>) {
    let changes: Vec<(u64, u64, &str)> = h
        .node_events
        .iter()
        .filter_map(|e| match &e.event {
            QueueEvent::Repo { id, seq, .. } if *seq > 0 => Some((*seq, e.at_ns, id.as_str())),
            _ => None,
        })
        .collect();
    let base = |node: &str| node.split('#').next().unwrap_or(node).to_string();
    // The incremental pushes answered 200: (connector, document, invoked, returned).
    let pushes: Vec<(String, &str, u64, u64)> = h
        .ops
        .iter()
        .filter(|o| o.call.source == Source::Incremental)
        .filter(|o| o.result.as_ref().is_some_and(|r| r.status == 200))
        .filter_map(|o| match (&o.call.request, o.return_ns) {
            (QueueRequest::Push { item, .. }, Some(r)) => {
                Some((base(&o.call.node), item.name.as_str(), o.invoke_ns, r))
            }
            _ => None,
        })
        .collect();
    let mut from: BTreeMap<String, u64> = BTreeMap::new();
    let (mut saves, mut v) = (0, Vec::new());
    for e in &h.node_events {
        let QueueEvent::Connector(c) = &e.event else {
            continue;
        };
        let connector = base(&e.node);
        match c {
            ConnectorEvent::Started { incremental, .. } => {
                from.insert(connector, *incremental);
            }
            ConnectorEvent::CheckpointSaved { name, value } if name == CHECKPOINT_INCREMENTAL => {
                let Ok(saved) = value.parse::<u64>() else {
                    continue;
                };
                saves += 1;
                let start = from.insert(connector.clone(), saved).unwrap_or(0);
                let pushed = |id: &str, after_ns: u64| {
                    pushes.iter().any(|(by, name, invoke_ns, return_ns)| {
                        *by == connector
                            && *name == id
                            && *invoke_ns >= after_ns
                            && *return_ns <= e.at_ns
                    })
                };
                let missed: Vec<String> = changes
                    .iter()
                    .filter(|(seq, ..)| *seq > start && *seq <= saved)
                    .filter(|(_, at_ns, id)| !pushed(id, *at_ns))
                    .map(|(seq, _, id)| format!("{id} (change {seq})"))
                    .collect();
                if !missed.is_empty() {
                    let more = match missed.len() {
                        n if n > 4 => format!(" and {} more", n - 4),
                        _ => String::new(),
                    };
                    v.push(violation(
                        "Q9",
                        format!(
                            "{} saved checkpoint_incremental = {saved} at {:.3} s (its run started from {start}) before it had pushed {}{more}",
                            e.node,
                            e.at_ns as f64 / 1e9,
                            missed[..missed.len().min(4)].join(", ")
                        ),
                        Vec::new(),
                    ));
                }
            }
            _ => {}
        }
    }
    (saves, v)
}

/// The end-to-end property: after heal and the final full traversals, the
/// index equals the repository.
pub struct EndToEnd;

impl Checker<QueueHistory> for EndToEnd {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::services::queues::properties::END_TO_END]
    }

    fn check(&self, h: &QueueHistory) -> Checked {
        let finished = reports(h).iter().rev().find_map(|(_, e)| match e {
            ConnectorEvent::Final { complete } => Some(*complete),
            _ => None,
        });
        if finished != Some(true) {
            return Checked::new(Verdict::Undecided {
                reason: format!(
                    "connector 0's final traversals {}",
                    if finished.is_some() {
                        "did not complete"
                    } else {
                        "never ended"
                    }
                ),
            });
        }
        let index = walk(h, |_, _| {});
        let repo = repository_at(h, u64::MAX);
        let mut v = Vec::new();
        for (id, content) in &repo {
            match index.items.get(id).and_then(|i| i.content.as_ref()) {
                Some(c) if c == content => {}
                Some(c) => v.push(format!(
                    "{id}: the repository has '{content}', the index '{c}'"
                )),
                None => v.push(format!(
                    "{id}: in the repository ('{content}'), not in the index"
                )),
            }
        }
        for (id, item) in &index.items {
            if let (Some(c), false) = (&item.content, repo.contains_key(id)) {
                v.push(format!(
                    "{id}: removed from the repository, still in the index as '{c}'"
                ));
            }
        }
        let violations = if v.is_empty() {
            Vec::new()
        } else {
            vec![violation(
                "end-to-end",
                format!(
                    "after the final full traversals the index differs from the repository: {}",
                    v.join("; ")
                ),
                Vec::new(),
            )]
        };
        Checked::new(Verdict::from_violations(violations))
            .with_note(format!("{} documents", repo.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use overcast_model::queue::PushItem;
    use overcast_sim::history::{History, NodeEvent, HISTORY_VERSION};

    const MS: u64 = 1_000_000;

    fn event(node: &str, at_ms: u64, event: QueueEvent) -> NodeEvent<QueueEvent> {
        NodeEvent {
            node: node.into(),
            at_ns: at_ms * MS,
            local_ms: at_ms,
            event,
        }
    }

    fn push(id: u64, name: &str, at_ms: u64, status: u16) -> OpRecord<Call, Outcome> {
        OpRecord {
            id,
            client: 1,
            key: name.into(),
            call: Call {
                node: "connector-0".into(),
                source: Source::Incremental,
                request: QueueRequest::Push {
                    datasource: "ds".into(),
                    item: PushItem {
                        name: name.into(),
                        ..PushItem::default()
                    },
                },
            },
            invoke_ns: at_ms * MS,
            return_ns: Some((at_ms + 1) * MS),
            result: Some(Outcome {
                status,
                response: None,
            }),
            attempts: Vec::new(),
        }
    }

    /// An incremental checkpoint saved after the pushes of the changes it
    /// covers holds; saved before one of them (or after a failed one), Q9.
    #[test]
    fn an_incremental_checkpoint_is_saved_only_after_its_changes_are_pushed() {
        let repo = |at_ms, id: &str, seq| {
            event(
                "editor",
                at_ms,
                QueueEvent::Repo {
                    id: id.into(),
                    rev: 1,
                    content: Some("x".into()),
                    seq,
                },
            )
        };
        let saved = |at_ms, value: &str| {
            event(
                "connector-0",
                at_ms,
                QueueEvent::Connector(ConnectorEvent::CheckpointSaved {
                    name: CHECKPOINT_INCREMENTAL.into(),
                    value: value.into(),
                }),
            )
        };
        let history = |ops, save_ms| History {
            version: HISTORY_VERSION,
            ops,
            events: Vec::new(),
            node_events: vec![
                repo(10, "d000", 1),
                repo(20, "d001", 2),
                saved(save_ms, "2"),
            ],
        };
        let judge = |h: &QueueHistory| incremental_saves(h).1.len();
        // d001's push (d000's is at 30 ms, 200): when, its status, violations.
        for (at_ms, status, want) in [
            (32, 200, 0),
            // Saved before d001's push.
            (42, 200, 1),
            // d001's push failed (a 503 after retries): the save must wait.
            (32, 503, 1),
            // A push made before the change does not count for it.
            (15, 200, 1),
        ] {
            let ops = vec![push(0, "d000", 30, 200), push(1, "d001", at_ms, status)];
            assert_eq!(judge(&history(ops, 40)), want, "{at_ms} {status}");
        }
    }
}
