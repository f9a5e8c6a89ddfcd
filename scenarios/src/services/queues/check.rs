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
use super::timeline::{names, queue_words, status_word};
use overcast_model::conditions::Millis;
use overcast_model::connector::{
    ConnectorEvent, Source, CHECKPOINT_FULL, CHECKPOINT_INCREMENTAL, CHECKPOINT_QUEUE,
};
use overcast_model::queue::{
    poll_order, Item, Operation, PushType, QueueConfig, QueueEffect, QueueRequest, DEFAULT_LIMIT,
    DEFAULT_QUEUE,
};
use overcast_sim::check::{Checked, Checker, Evidence, EvidenceRow, Verdict, Violation};
use overcast_sim::history::OpRecord;
use overcast_sim::timeline::{clock_secs, node_lane, secs};
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

/// Where a step of the replay happened: the server that logged it and the
/// true time (a poll seen only by its answer: the call's return).
#[derive(Clone, Copy, Debug)]
pub struct At<'a> {
    /// The server (an incarnation: `server-0#1`).
    pub node: &'a str,
    /// True time, ns.
    pub at_ns: u64,
}

/// Walks the server's log in order, handing `f` the state before each step
/// and where the step happened.
pub fn walk(h: &QueueHistory, mut f: impl FnMut(&Replay, Step, At)) -> Replay {
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
    let mut server = "server-0";
    let answered = |o: &OpRecord<Call, Outcome>| o.return_ns.unwrap_or(o.invoke_ns);
    for e in &h.node_events {
        match &e.event {
            QueueEvent::Logged { effect, .. } => {
                while next_poll < polls.len() && polls[next_poll].0 < effect.at_ms {
                    let o = polls[next_poll].1;
                    let at = At {
                        node: server,
                        at_ns: answered(o),
                    };
                    f(&state, Step::Poll(o), at);
                    next_poll += 1;
                }
                server = e.node.as_str();
                let at = At {
                    node: server,
                    at_ns: e.at_ns,
                };
                // Operations due complete before the request is judged.
                if !effect.completed.is_empty() {
                    f(&state, Step::Completions(effect), at);
                    state.apply(&QueueEffect {
                        request: None,
                        items: Vec::new(),
                        started: None,
                        created: None,
                        ..(**effect).clone()
                    });
                }
                f(&state, Step::Effect(effect), at);
                state.record(effect);
            }
            QueueEvent::Recovered { kept } => state.cut(*kept as usize),
            _ => {}
        }
    }
    for (_, o) in &polls[next_poll..] {
        let at = At {
            node: server,
            at_ns: answered(o),
        };
        f(&state, Step::Poll(o), at);
    }
    state
}

/// What a rule judging one step of the replay has at hand: the history and
/// where the step happened.
struct Ctx<'a> {
    h: &'a QueueHistory,
    at: At<'a>,
}

impl Ctx<'_> {
    /// A reading `ms` of the server's clock at this step, in words: true
    /// time first (`19.740 s true, 16.245 s on server-0's clock`).
    fn when(&self, ms: Millis) -> String {
        format!(
            "{} true, {} on {}'s clock",
            secs(self.at.at_ns),
            clock_secs(ms),
            self.at.node
        )
    }

    /// When a later (or earlier) reading `ms` of the server's clock comes in
    /// true time, judged from this step's `now_ms` (the clock runs at true
    /// rate between its steps: close enough to say), in words.
    fn later(&self, now_ms: Millis, ms: Millis) -> String {
        let delta = (ms as i128 - now_ms as i128) * 1_000_000;
        let ns = (self.at.at_ns as i128 + delta).max(0) as u64;
        format!(
            "{} true, {} on {}'s clock",
            secs(ns),
            clock_secs(ms),
            self.at.node
        )
    }

    /// The call of `method` (about item `name`, when given) this step
    /// judged: the one answered with the server's clock at `at_ms`, else
    /// those under way then (answered ones first).
    fn calls(&self, method: &str, name: Option<&str>, at_ms: Millis) -> Vec<u64> {
        let about = |o: &&OpRecord<Call, Outcome>| {
            o.call.request.method() == method
                && name.is_none_or(|n| request_item(&o.call.request) == Some(n))
        };
        let judged: Vec<u64> = self
            .h
            .ops
            .iter()
            .filter(about)
            .filter(|o| {
                o.result
                    .as_ref()
                    .and_then(|r| r.response.as_ref())
                    .is_some_and(|r| r.server_ms == at_ms)
            })
            .map(|o| o.id)
            .collect();
        if !judged.is_empty() {
            return judged;
        }
        let mut under_way: Vec<&OpRecord<Call, Outcome>> = self
            .h
            .ops
            .iter()
            .filter(about)
            .filter(|o| {
                o.invoke_ns <= self.at.at_ns && o.return_ns.is_none_or(|r| r >= self.at.at_ns)
            })
            .collect();
        under_way.sort_by_key(|o| (o.result.is_none(), o.id));
        under_way.into_iter().map(|o| o.id).collect()
    }

    /// A violation of this step: with the calls of `method` under way, and
    /// marked on the server's lane.
    fn violation(
        &self,
        property: &'static str,
        message: String,
        method: &str,
        name: Option<&str>,
        at_ms: Millis,
        label: String,
    ) -> Violation {
        violation(property, message, self.calls(method, name, at_ms)).at(
            node_lane(self.at.node).to_string(),
            self.at.at_ns,
            label,
        )
    }
}

/// The item a request is about, if one.
fn request_item(r: &QueueRequest) -> Option<&str> {
    match r {
        QueueRequest::Push { item, .. } => Some(&item.name),
        QueueRequest::Index { name, .. } | QueueRequest::Delete { name, .. } => Some(name),
        _ => None,
    }
}

/// An item's path through the server's log up to `until_ns` (and the step
/// there), as the focused account of a violation about it: each logged
/// change of it with the request that made it and the item after.
fn item_path(h: &QueueHistory, name: &str, until_ns: u64) -> Evidence {
    let mut rows: Vec<EvidenceRow> = Vec::new();
    for e in &h.node_events {
        if e.at_ns > until_ns {
            break;
        }
        let QueueEvent::Logged { effect, .. } = &e.event else {
            continue;
        };
        let Some((_, after)) = effect.items.iter().find(|(n, _)| n == name) else {
            continue;
        };
        // A later reading of the server's clock in true time, from this record.
        let later = |ms: Millis| {
            let ns = (e.at_ns as i128 + (ms as i128 - effect.at_ms as i128) * 1_000_000).max(0);
            format!("{} true ({} on its clock)", secs(ns as u64), clock_secs(ms))
        };
        let asked = match &effect.request {
            Some(QueueRequest::Push { item, .. }) => {
                format!(
                    "push {}",
                    super::timeline::words(&push_call(item), None)
                        .0
                        .trim_start_matches("push ")
                )
            }
            Some(QueueRequest::Poll { queue, .. }) => {
                format!("poll {}", queue_words(queue.as_deref()))
            }
            Some(r) => r.method().to_string(),
            None => "an operation's completion".to_string(),
        };
        rows.push(EvidenceRow {
            op: None,
            cells: vec![
                format!(
                    "{} true, {} on {}'s clock",
                    secs(e.at_ns),
                    clock_secs(effect.at_ms),
                    e.node
                ),
                asked,
                format!(
                    "{} in {}{}",
                    status_word(after.status),
                    queue_words(Some(&after.queue)),
                    match after.reserved_until {
                        Some(r) => format!(", reserved until {}", later(r)),
                        None if after.available_ms > effect.at_ms => {
                            format!(", available from {}", later(after.available_ms))
                        }
                        None => String::new(),
                    }
                ),
            ],
            marked: e.at_ns == until_ns,
        });
    }
    let skipped = rows.len().saturating_sub(8);
    let rows: Vec<EvidenceRow> = rows.into_iter().skip(skipped).collect();
    Evidence {
        title: format!("The path of {name} through the queue"),
        lead: vec![format!(
            "Every change of {name} in the server's log up to the step the violation is about{}.",
            if skipped > 0 {
                format!(" (the last {}, after {skipped} earlier ones)", rows.len())
            } else {
                String::new()
            }
        )],
        columns: ["when", "request", "the item after it"]
            .map(String::from)
            .to_vec(),
        rows,
        notes: Vec::new(),
    }
}

/// What a poll at server time `at_ms` saw, as the focused account of a Q1
/// or Q3 violation: the items of its queue it returned or could have
/// returned, in the order a poll takes them (status, available time, name),
/// each with its reservation; the ones the violation is about marked.
fn poll_account(
    cx: &Ctx,
    state: &Replay,
    queue: &str,
    statuses: &[overcast_model::queue::ItemStatus],
    at_ms: Millis,
    returned: &[String],
    missed: &[&String],
) -> Evidence {
    let mut seen: Vec<(&String, &Item)> = state
        .items
        .iter()
        .filter(|(n, i)| {
            returned.contains(n)
                || (i.queue == queue
                    && i.queued
                    && (statuses.is_empty() || statuses.contains(&i.status))
                    && i.available_ms <= at_ms)
        })
        .collect();
    seen.sort_by_key(|(n, i)| poll_order(n, i));
    let shown = 12;
    let skipped = seen.len().saturating_sub(shown);
    let rows = seen
        .iter()
        .take(shown)
        .map(|(n, i)| EvidenceRow {
            op: None,
            cells: vec![
                n.to_string(),
                status_word(i.status).to_string(),
                if i.available_ms < at_ms {
                    "yes".to_string()
                } else {
                    format!("from {}", cx.later(at_ms, i.available_ms))
                },
                match i.reserved_until {
                    None => "none".to_string(),
                    Some(u) if u <= at_ms => format!("ended {}", cx.later(at_ms, u)),
                    Some(u) => format!("until {}", cx.later(at_ms, u)),
                },
                if returned.contains(n) {
                    "returned"
                } else {
                    "not returned"
                }
                .to_string(),
            ],
            marked: missed.contains(n),
        })
        .collect();
    Evidence {
        title: format!("What a poll of {} at {} could take", queue_words(Some(queue)), cx.when(at_ms)),
        lead: vec![format!(
            "The items of the queue the poll returned or could have returned, in the order a poll takes them (status, then available time, then name){}; the rows the violation is about are marked.",
            if skipped > 0 {
                format!(" (the first {shown}, {skipped} more after them)")
            } else {
                String::new()
            }
        )],
        columns: ["item", "status", "available", "reservation", "the poll"]
            .map(String::from)
            .to_vec(),
        rows,
        notes: Vec::new(),
    }
}

/// A call pushing `item`, for its words.
fn push_call(item: &overcast_model::queue::PushItem) -> Call {
    Call {
        node: String::new(),
        source: Source::Worker,
        request: QueueRequest::Push {
            datasource: String::new(),
            item: item.clone(),
        },
    }
}

fn violation(property: &'static str, message: String, ops: Vec<u64>) -> Violation {
    Violation::new(property, message).with_ops(ops)
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
        walk(h, |state, step, at| {
            let cx = Ctx { h, at };
            let before = match self.0 {
                "Q1" | "Q3" => poll_rules(self.0, state, &step, &cx),
                "Q2" => reservation_rule(state, &step, &cx),
                "Q4" => transition_rule(state, &step, &cx),
                "Q5" => requeue_rule(state, &step, &cx),
                _ => version_rule(state, &step, &cx),
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
fn poll_rules(
    property: &'static str,
    state: &Replay,
    step: &Step,
    cx: &Ctx,
) -> Option<Vec<Violation>> {
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
    let at_s = cx.when(at);
    let logged = matches!(step, Step::Effect(_));
    // A logged poll is marked where the server logged it; one seen by its
    // answer is its call.
    let named = |v: Violation| {
        if logged {
            v.with_ops(cx.calls("poll", None, at)).at(
                node_lane(cx.at.node).to_string(),
                cx.at.at_ns,
                "poll",
            )
        } else {
            v
        }
    };
    let account = |missed: &[&String]| poll_account(cx, state, &q, statuses, at, &returned, missed);
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
                let account = account(&missing_expired);
                v.push(
                    named(violation(
                        "Q3",
                        format!(
                            "a poll of {} at {at_s} did not return {}, whose reservations had ended",
                            queue_words(Some(&q)),
                            names(&missing_expired)
                        ),
                        ops,
                    ))
                    .with_evidence(account),
                );
            } else if property == "Q1" && expected != returned && missing_expired.is_empty() {
                let wrong: Vec<&String> = expected
                    .iter()
                    .filter(|n| !returned.contains(n))
                    .chain(returned.iter().filter(|n| !expected.contains(n)))
                    .collect();
                let account = account(&wrong);
                v.push(
                    named(violation(
                        "Q1",
                        format!(
                            "a poll of {} (limit {limit}) at {at_s} returned {}; by status, available time and name it should have returned {}",
                            queue_words(Some(&q)),
                            names(&returned),
                            names(&expected)
                        ),
                        ops,
                    ))
                    .with_evidence(account),
                );
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
                let account = account(&which);
                v.push(
                    named(violation(
                        property,
                        format!(
                            "a poll of {} (limit {limit}) at {at_s} returned {} while {} {} eligible{}",
                            queue_words(Some(&q)),
                            match returned.len() {
                                0 => "no item".to_string(),
                                1 => "1 item".to_string(),
                                n => format!("{n} items"),
                            },
                            names(&which),
                            if which.len() == 1 { "was" } else { "were" },
                            if property == "Q3" { " (reservations ended)" } else { "" }
                        ),
                        ops,
                    ))
                    .with_evidence(account),
                );
            }
        }
    }
    Some(v)
}

/// Q2: a poll returns no item that is reserved (or backing off).
fn reservation_rule(state: &Replay, step: &Step, cx: &Ctx) -> Option<Vec<Violation>> {
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
            v.push(
                cx.violation(
                    "Q2",
                    format!(
                        "a poll at {} returned {n}, which a poll had reserved until {}",
                        cx.when(e.at_ms),
                        cx.later(e.at_ms, b.reserved_until.unwrap_or_default())
                    ),
                    "poll",
                    None,
                    e.at_ms,
                    format!("poll returned {n}"),
                )
                .with_evidence(item_path(cx.h, n, cx.at.at_ns)),
            );
        } else if b.available_ms > e.at_ms {
            v.push(
                cx.violation(
                    "Q2",
                    format!(
                        "a poll at {} returned {n}, not available before {} (backoff)",
                        cx.when(e.at_ms),
                        cx.later(e.at_ms, b.available_ms)
                    ),
                    "poll",
                    None,
                    e.at_ms,
                    format!("poll returned {n}"),
                )
                .with_evidence(item_path(cx.h, n, cx.at.at_ns)),
            );
        }
    }
    Some(v)
}

/// Q6: an index or delete takes effect only with a version above the indexed one.
fn version_rule(state: &Replay, step: &Step, cx: &Ctx) -> Option<Vec<Violation>> {
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
        v.push(
            cx.violation(
                "Q6",
                format!(
                    "an {what} of {name} with version {version} took effect at {} although version {floor} was indexed",
                    cx.when(e.at_ms)
                ),
                what,
                Some(name),
                e.at_ms,
                format!("{what} {name}"),
            )
            .with_evidence(item_path(cx.h, name, cx.at.at_ns)),
        );
    }
    Some(v)
}

/// Q4: pushes, indexes and deletes change the item as SPEC §5.2/§5.4 say.
fn transition_rule(state: &Replay, step: &Step, cx: &Ctx) -> Option<Vec<Violation>> {
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
            v.push(cx.violation(
                "Q4",
                format!(
                    "a push of {name} with a type and a hash changed state at {} (must be 400)",
                    cx.when(e.at_ms)
                ),
                "push",
                Some(name),
                e.at_ms,
                format!("push {name}"),
            ));
        }
    }
    let expected = reference::after(state.items.get(name), req, e.at_ms)?;
    match e.items.iter().find(|(n, _)| n == name) {
        None => v.push(
            cx.violation(
                "Q4",
                format!(
                    "a {kind} of {name} at {} did not change it",
                    cx.when(e.at_ms)
                ),
                kind,
                Some(name),
                e.at_ms,
                format!("{kind} {name}"),
            )
            .with_evidence(item_path(cx.h, name, cx.at.at_ns)),
        ),
        Some((_, after)) => {
            let d = expected.differences(after, e.at_ms);
            if !d.is_empty() {
                v.push(
                    cx.violation(
                        "Q4",
                        format!(
                            "after a {kind} of {name} at {}: {}",
                            cx.when(e.at_ms),
                            d.join(", ")
                        ),
                        kind,
                        Some(name),
                        e.at_ms,
                        format!("{kind} {name}"),
                    )
                    .with_evidence(item_path(cx.h, name, cx.at.at_ns)),
                );
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
fn requeue_rule(state: &Replay, step: &Step, cx: &Ctx) -> Option<Vec<Violation>> {
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
        v.push(
            cx.violation(
                "Q5",
                format!(
                    "{name} requeued at {} got available time {} and is ordered before {}, queued before it",
                    cx.when(e.at_ms),
                    cx.later(e.at_ms, after.available_ms),
                    names(&ahead)
                ),
                "push",
                Some(name),
                e.at_ms,
                format!("requeue {name}"),
            )
            .with_evidence(item_path(cx.h, name, cx.at.at_ns)),
        );
    }
    Some(v)
}

/// Connector 0's report events, with their true time and the lane of the
/// node that reported them.
fn reports(h: &QueueHistory) -> Vec<(u64, &str, &ConnectorEvent)> {
    h.node_events
        .iter()
        .filter_map(|e| match &e.event {
            QueueEvent::Connector(c) => Some((e.at_ns, node_lane(&e.node), c)),
            _ => None,
        })
        .collect()
}

/// One full traversal from its first index phase to its end.
struct Pass {
    node: String,
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
    let mut open: Option<(String, u64, String)> = None;
    let mut saved_full: Option<String> = None;
    for (at, node, e) in reports(h) {
        match e {
            ConnectorEvent::CheckpointSaved { name, value } if name == CHECKPOINT_FULL => {
                saved_full = Some(value.clone()).filter(|v| !v.is_empty());
            }
            ConnectorEvent::FullIndexing {
                queue,
                resume_after,
            } => {
                if *resume_after != saved_full {
                    let or_start = |c: &Option<String>| {
                        c.as_deref()
                            .map_or("none (from the start)".to_string(), |c| format!("'{c}'"))
                    };
                    v.push(
                        violation(
                            "Q9",
                            format!(
                                "the full traversal into '{queue}' resumed at {} after {}, but the last checkpoint_full saved was {}",
                                secs(at),
                                or_start(resume_after),
                                or_start(&saved_full)
                            ),
                            Vec::new(),
                        )
                        .at(node.to_string(), at, "full traversal resumed"),
                    );
                }
                if resume_after.is_none() || open.is_none() {
                    open = Some((queue.clone(), at, node.to_string()));
                }
            }
            ConnectorEvent::FullDone {
                queue,
                operation,
                deleted,
                ..
            } => {
                if let Some((q, start_ns, node)) = open.take() {
                    if q == *queue {
                        out.push(Pass {
                            node,
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
        walk(h, |state, step, at| {
            let cx = Ctx { h, at };
            let e = match step {
                Step::Completions(e) => {
                    completions += completed(state, e, &mut v, &cx);
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
                    v.push(cx.violation(
                        "Q7",
                        format!(
                            "{} on '{}' started at {} with items {}; labelled '{}' then: {}",
                            op.name,
                            op.queue,
                            cx.when(e.at_ms),
                            names(&got),
                            op.queue,
                            names(&expected)
                        ),
                        "delete_queue_items",
                        None,
                        e.at_ms,
                        format!("{} started", op.name),
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
                let deletes: Vec<u64> = h
                    .ops
                    .iter()
                    .filter(|o| {
                        o.call.request.method() == "delete_queue_items"
                            && o.invoke_ns >= p.start_ns
                            && o.invoke_ns <= p.done_ns
                    })
                    .map(|o| o.id)
                    .collect();
                v.push(
                    violation(
                        "Q7",
                        format!(
                            "the full traversal into '{}' ({} – {}) indexed {}, then asked {op} to delete '{}', which deletes them although they are still in the repository's traversal",
                            p.queue,
                            secs(p.start_ns),
                            secs(p.done_ns),
                            names(&wrongly),
                            p.deleted
                        ),
                        deletes,
                    )
                    .during(p.node.clone(), p.start_ns, p.done_ns, format!("full traversal into '{}'", p.queue)),
                );
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
fn completed(state: &Replay, e: &QueueEffect, v: &mut Vec<Violation>, cx: &Ctx) -> usize {
    let mut gone: BTreeSet<&String> = BTreeSet::new();
    for (op, deleted) in &e.completed {
        let expected: BTreeSet<&String> = op
            .items
            .iter()
            .filter(|n| !gone.contains(n) && state.items.get(*n).is_some_and(|i| i.queued))
            .collect();
        let got: BTreeSet<&String> = deleted.iter().map(|(n, _)| n).collect();
        if expected != got {
            v.push(cx.violation(
                "Q7",
                format!(
                    "{} on '{}' completed at {} deleting {}; it should have deleted {}",
                    op.name,
                    op.queue,
                    cx.when(e.at_ms),
                    names(&got),
                    names(&expected)
                ),
                "get_operation",
                None,
                e.at_ms,
                format!("{} completed", op.name),
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
        for (at, node, e) in reports(h) {
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
                            v.push(
                                violation(
                                    "Q8",
                                    format!(
                                        "the full traversal began indexing into '{queue}' at {} while {op} (saved as pending) was not done",
                                        secs(at)
                                    ),
                                    Vec::new(),
                                )
                                .at(node.to_string(), at, "indexing began"),
                            );
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
                v.push(
                    violation(
                        "Q9",
                        format!(
                            "the full traversal into '{}' ({} – {}) ended without indexing {}, which were in the repository throughout",
                            p.queue,
                            secs(p.start_ns),
                            secs(p.done_ns),
                            names(&skipped)
                        ),
                        Vec::new(),
                    )
                    .during(p.node.clone(), p.start_ns, p.done_ns, format!("full traversal into '{}'", p.queue)),
                );
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
                    v.push(
                        violation(
                            "Q9",
                            format!(
                                "{} saved checkpoint_incremental = {saved} at {} (its run started from {start}) before it had pushed {}{more}",
                                e.node,
                                secs(e.at_ns),
                                missed[..missed.len().min(4)].join(", ")
                            ),
                            Vec::new(),
                        )
                        .at(e.node.clone(), e.at_ns, format!("checkpoint_incremental = {saved}")),
                    );
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
        let last = reports(h)
            .into_iter()
            .rev()
            .find_map(|(at, node, e)| match e {
                ConnectorEvent::Final { complete } => Some((*complete, at, node.to_string())),
                _ => None,
            });
        let finished = last.as_ref().map(|(complete, ..)| *complete);
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
        let index = walk(h, |_, _, _| {});
        let repo = repository_at(h, u64::MAX);
        let mut v = Vec::new();
        let mut rows = Vec::new();
        let mut row = |id: &str, repo: String, index: String| {
            rows.push(EvidenceRow {
                op: None,
                cells: vec![id.to_string(), repo, index],
                marked: true,
            })
        };
        for (id, content) in &repo {
            match index.items.get(id).and_then(|i| i.content.as_ref()) {
                Some(c) if c == content => {}
                Some(c) => {
                    v.push(format!(
                        "{id}: the repository has '{content}', the index '{c}'"
                    ));
                    row(id, format!("'{content}'"), format!("'{c}'"));
                }
                None => {
                    v.push(format!(
                        "{id}: in the repository ('{content}'), not in the index"
                    ));
                    row(id, format!("'{content}'"), "absent".into());
                }
            }
        }
        for (id, item) in &index.items {
            if let (Some(c), false) = (&item.content, repo.contains_key(id)) {
                v.push(format!(
                    "{id}: removed from the repository, still in the index as '{c}'"
                ));
                row(id, "removed".into(), format!("'{c}'"));
            }
        }
        let violations = if v.is_empty() {
            Vec::new()
        } else {
            let (_, at, node) = last.unwrap_or((true, 0, String::new()));
            vec![violation(
                "end-to-end",
                format!(
                    "after the final full traversals (they ended at {}) the index differs from the repository: {}",
                    secs(at),
                    v.join("; ")
                ),
                Vec::new(),
            )
            .at(node, at, "final traversals ended")
            .with_evidence(Evidence {
                title: "The index against the repository at the end".into(),
                lead: vec![format!(
                    "After the final full traversals ended at {}, {} document{} differ:",
                    secs(at),
                    rows.len(),
                    if rows.len() == 1 { "" } else { "s" }
                )],
                columns: ["document", "repository", "index"].map(String::from).to_vec(),
                rows,
                notes: Vec::new(),
            })]
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
            log_events: Vec::new(),
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
