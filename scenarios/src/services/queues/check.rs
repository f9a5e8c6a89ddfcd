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
    Item, Operation, PushType, QueueConfig, QueueEffect, QueueRequest, DEFAULT_LIMIT, DEFAULT_QUEUE,
};
use overcast_sim::check::{Checked, Checker, Evidence, EvidenceRow, Verdict, Violation};
use overcast_sim::history::OpRecord;
use overcast_sim::timeline::{clock_secs, node_lane, secs};
use std::collections::{BTreeMap, BTreeSet};

pub mod connector;
pub use connector::{CheckpointResume, DeleteDetection, EndToEnd, TraversalGating};

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
            .filter(|(_, i)| i.queue == queue && reference::eligible(i, at))
            .filter(|(_, i)| statuses.is_empty() || statuses.contains(&i.status))
            .collect();
        eligible
            .sort_by(|(a, x), (b, y)| reference::poll_key(a, x).cmp(&reference::poll_key(b, y)));
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
///
/// A poll seen only by its answer is placed by the server's clock (before
/// the first record logged at a later millisecond), or sooner: before any
/// step logged after its answer reached the connector, which the server
/// came to after answering it. So a poll is judged against no step logged
/// after its answer, and a run stopped after the answer judges it as the
/// longer run does (the properties of the log are prefix-closed, see
/// `Queues::prefix_closed`).
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
    let mut state = Replay::default();
    let mut server = "server-0";
    let answered = |o: &OpRecord<Call, Outcome>| o.return_ns.unwrap_or(o.invoke_ns);
    for e in &h.node_events {
        let logged_ms = match &e.event {
            QueueEvent::Logged { effect, .. } => Some(effect.at_ms),
            QueueEvent::Recovered { .. } => None,
            _ => continue,
        };
        // The polls answered before this step, in server time order.
        polls.retain(|(ms, o)| {
            let before = logged_ms.is_some_and(|at_ms| *ms < at_ms)
                || o.return_ns.is_some_and(|r| r <= e.at_ns);
            if before {
                let at = At {
                    node: server,
                    at_ns: answered(o),
                };
                f(&state, Step::Poll(o), at);
            }
            !before
        });
        match &e.event {
            QueueEvent::Logged { effect, .. } => {
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
    for (_, o) in &polls {
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
        self.reading_from(self.at.at_ns, now_ms, ms)
    }

    /// [`Ctx::later`] judged from the server's log record of item `name`'s
    /// last change before this step, when there is one (so that a
    /// reservation's end reads as the item's path tells it, from the step
    /// that set it), else from this step.
    fn later_than_change(&self, state: &Replay, name: &str, now_ms: Millis, ms: Millis) -> String {
        let changed = state.changed_ms.get(name).and_then(|&changed_ms| {
            self.h
                .node_events
                .iter()
                .take_while(|e| e.at_ns <= self.at.at_ns)
                .filter_map(|e| match &e.event {
                    QueueEvent::Logged { effect, .. }
                        if effect.at_ms == changed_ms
                            && effect.items.iter().any(|(n, _)| n == name) =>
                    {
                        Some(e.at_ns)
                    }
                    _ => None,
                })
                .last()
                .map(|at_ns| (at_ns, changed_ms))
        });
        match changed {
            Some((at_ns, changed_ms)) => self.reading_from(at_ns, changed_ms, ms),
            None => self.later(now_ms, ms),
        }
    }

    /// A reading `ms` of the server's clock in true time, judged from a
    /// step at `at_ns` true when the clock read `at_ms`, in words.
    fn reading_from(&self, at_ns: u64, at_ms: Millis, ms: Millis) -> String {
        let delta = (ms as i128 - at_ms as i128) * 1_000_000;
        let ns = (at_ns as i128 + delta).max(0) as u64;
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
    // The row of the poll whose reservation of the item is in force, and
    // until when (server clock): a poll that returns the item before then
    // crossed it, and that poll's row is marked beside the step's.
    let mut reserved_by: Option<(usize, Millis)> = None;
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
        let is_poll = matches!(effect.request, Some(QueueRequest::Poll { .. }));
        if e.at_ns == until_ns && is_poll {
            if let Some((row, _)) = reserved_by.filter(|(_, r)| *r > effect.at_ms) {
                rows[row].marked = true;
            }
        }
        reserved_by = match after.reserved_until {
            Some(r) if is_poll => Some((rows.len(), r)),
            Some(_) => reserved_by,
            None => None,
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
            "Every change of {name} in the server's log up to the step the violation is about{}; marked: that step, and the poll whose reservation it crossed, if it crossed one.",
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
    seen.sort_by(|(a, x), (b, y)| reference::poll_key(a, x).cmp(&reference::poll_key(b, y)));
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
        if reference::reserved(b, e.at_ms) {
            v.push(
                cx.violation(
                    "Q2",
                    format!(
                        "a poll at {} returned {n}, which a poll had reserved until {}",
                        cx.when(e.at_ms),
                        cx.later_than_change(
                            state,
                            n,
                            e.at_ms,
                            b.reserved_until.unwrap_or_default()
                        )
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
            reference::version_floor(
                b,
                e.at_ms,
                reference::soft_delete_ms(state.config.time_scale),
            )
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
                && reference::eligible(i, e.at_ms)
                && i.available_ms < e.at_ms
                && reference::poll_key(name, after) < reference::poll_key(n, i)
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
