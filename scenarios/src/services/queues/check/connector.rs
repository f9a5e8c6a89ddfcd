//! The connector-side checks of `queues` (Q7's second half, Q8, Q9 and the
//! end-to-end property), read from the connectors' reports and calls: the
//! full traversals, what each indexed, and the checkpoints they saved.

use super::*;

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

/// The `checkpoint_full` values a lying disk lost from the connectors'
/// checkpoint logs (`None`: an empty one, saved at a traversal's end).
fn lost_full_checkpoints(h: &QueueHistory) -> Vec<Option<String>> {
    h.node_events
        .iter()
        .filter_map(|e| match &e.event {
            QueueEvent::CheckpointsLost { records } => Some(records),
            _ => None,
        })
        .flatten()
        .filter(|(name, _)| name == CHECKPOINT_FULL)
        .map(|(_, value)| Some(value.clone()).filter(|v| !v.is_empty()))
        .collect()
}

/// Whether a resume after `resume` is what the checkpoint log holds once a
/// lying disk lost records of `lost` from its end: some save of `resume`
/// in `saved` (the values saved so far, oldest first, `None` first of all)
/// is followed only by saves whose records were lost. If so, where in
/// `saved` it is, and the lost records it uses are taken out of `lost`.
fn resumed_past_a_loss(
    saved: &[Option<String>],
    resume: &Option<String>,
    lost: &mut Vec<Option<String>>,
) -> Option<usize> {
    'candidate: for j in (0..saved.len()).rev().filter(|j| saved[*j] == *resume) {
        let mut left = lost.clone();
        for later in &saved[j + 1..] {
            let Some(at) = left.iter().position(|l| l == later) else {
                continue 'candidate;
            };
            left.remove(at);
        }
        *lost = left;
        return Some(j);
    }
    None
}

/// The completed passes of the full traversal, Q9's resume violations, and
/// how many resumes a lying disk's loss explained.
///
/// A traversal resumes after the last `checkpoint_full` saved, except after
/// a loss its connector saw (it reports a corrupt checkpoint log, then saves
/// the checkpoint empty: that save is the last) or one no connector can see
/// (a lying disk lost the last records of its log: the resume is then
/// judged against the checkpoint the log held without them, and a pass the
/// lost records had ended goes on).
fn passes(h: &QueueHistory) -> (Vec<Pass>, Vec<Violation>, usize) {
    let mut out = Vec::new();
    let mut v = Vec::new();
    let mut open: Option<(String, u64, String)> = None;
    let mut saved_full: Option<String> = None;
    // Every value saved, oldest first, and how many had been when each
    // completed pass ended.
    let mut saved: Vec<Option<String>> = vec![None];
    let mut closed_at: Vec<usize> = Vec::new();
    let mut lost = lost_full_checkpoints(h);
    let mut excused_resumes = 0;
    for (at, node, e) in reports(h) {
        match e {
            ConnectorEvent::CheckpointSaved { name, value } if name == CHECKPOINT_FULL => {
                saved_full = Some(value.clone()).filter(|v| !v.is_empty());
                saved.push(saved_full.clone());
            }
            ConnectorEvent::FullIndexing {
                queue,
                resume_after,
            } => {
                let excused = (*resume_after != saved_full)
                    .then(|| resumed_past_a_loss(&saved, resume_after, &mut lost))
                    .flatten();
                if let Some(j) = excused {
                    excused_resumes += 1;
                    saved.truncate(j + 1);
                    saved_full = resume_after.clone();
                    // The lost records had ended a pass that now goes on.
                    if open.is_none() && closed_at.last().is_some_and(|c| *c > j + 1) {
                        closed_at.pop();
                        if let Some(p) = out.pop() {
                            let p: Pass = p;
                            open = Some((p.queue, p.start_ns, p.node));
                        }
                    }
                } else if *resume_after != saved_full {
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
                        closed_at.push(saved.len());
                    }
                }
            }
            _ => {}
        }
    }
    (out, v, excused_resumes)
}

/// Items the full traversal indexed into `queue` within the pass (answered
/// 200). A 400 for a stale version does not count: it does not say a newer
/// document is indexed (connector clocks skew), and the connector indexes
/// such a document again before its traversal may complete.
fn indexed_in(h: &QueueHistory, p: &Pass) -> BTreeSet<String> {
    h.ops
        .iter()
        .filter(|o| o.call.source == Source::Full)
        .filter(|o| o.invoke_ns >= p.start_ns && o.invoke_ns <= p.done_ns)
        .filter_map(|o| match (&o.call.request, &o.result) {
            (QueueRequest::Index { name, queue, .. }, Some(r))
                if queue.as_deref() == Some(p.queue.as_str()) && r.status == 200 =>
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
        let (passes, _, _) = passes(h);
        for p in &passes {
            let Some(op) = &p.operation else { continue };
            let Some((items, labels)) = at_start.get(op) else {
                continue;
            };
            let indexed = indexed_in(h, p);
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
        // Each operation saved as pending, and when it was first saved so.
        let mut pending: BTreeMap<String, u64> = BTreeMap::new();
        let mut v = Vec::new();
        let mut phases = 0;
        for (at, node, e) in reports(h) {
            match e {
                ConnectorEvent::CheckpointSaved { name, value } if name == CHECKPOINT_QUEUE => {
                    if let Some((_, op)) = value.split_once('\n') {
                        pending.entry(op.to_string()).or_insert(at);
                    }
                }
                ConnectorEvent::FullIndexing { queue, .. } => {
                    phases += 1;
                    for (op, saved_ns) in &pending {
                        let done = done_at.get(op.as_str()).copied();
                        if done.is_none_or(|d| d >= at) {
                            v.push(
                                violation(
                                    "Q8",
                                    format!(
                                        "the full traversal began indexing into '{queue}' at {} while {op} (saved as pending) was not done",
                                        secs(at)
                                    ),
                                    Vec::new(),
                                )
                                .at(node.to_string(), at, "indexing began")
                                .with_evidence(gating_account(h, node, op, *saved_ns, at, done)),
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

/// The reports of the connector on `lane` from `from_ns` to `to_ns` and
/// the rows `extra` (when, what, marked), in time order, each with the
/// reports `marked` says the violation turns on marked; at most fourteen,
/// from a few before the first marked one. The focused account of a
/// violation about a traversal (Q8, Q9).
fn reports_account(
    h: &QueueHistory,
    lane: &str,
    (from_ns, to_ns): (u64, u64),
    marked: &dyn Fn(u64, &ConnectorEvent) -> bool,
    extra: Vec<(u64, String, bool)>,
    title: String,
    lead: String,
) -> Evidence {
    let mut rows: Vec<(u64, String, bool)> = reports(h)
        .into_iter()
        .filter(|(at, node, _)| *node == lane && *at >= from_ns && *at <= to_ns)
        .map(|(at, _, e)| (at, super::super::timeline::report_words(e).1, marked(at, e)))
        .chain(extra)
        .collect();
    rows.sort_by_key(|(at, ..)| *at);
    let all = rows.len();
    let first = rows.iter().position(|(.., m)| *m).unwrap_or(0);
    let skip = first.saturating_sub(3).min(all.saturating_sub(14));
    let rows: Vec<(u64, String, bool)> = rows.into_iter().skip(skip).take(14).collect();
    let shown = if rows.len() < all {
        format!(" ({} of {all} shown)", rows.len())
    } else {
        String::new()
    };
    Evidence {
        title,
        lead: vec![format!("{lead}{shown}.")],
        columns: ["when", "what"].map(String::from).to_vec(),
        rows: rows
            .into_iter()
            .map(|(at, what, marked)| EvidenceRow {
                op: None,
                cells: vec![secs(at), what],
                marked,
            })
            .collect(),
        notes: Vec::new(),
    }
}

/// Q8's focused account: what the connector on `lane` did from saving
/// `op` as pending (at `saved_ns`) to beginning an index phase at `at_ns`,
/// and when the server logged `op` done (`done_ns`), if ever.
fn gating_account(
    h: &QueueHistory,
    lane: &str,
    op: &str,
    saved_ns: u64,
    at_ns: u64,
    done_ns: Option<u64>,
) -> Evidence {
    let done = match done_ns {
        Some(d) => (d, format!("the server logged {op} done"), false),
        None => (
            at_ns,
            format!("{op} not done: the server never logged it done"),
            false,
        ),
    };
    reports_account(
        h,
        lane,
        (saved_ns, at_ns),
        &|at, e| {
            at == at_ns && matches!(e, ConnectorEvent::FullIndexing { .. })
                || matches!(e, ConnectorEvent::CheckpointSaved { name, value } if name == CHECKPOINT_QUEUE && value.ends_with(&format!("\n{op}")) && at == saved_ns)
        },
        vec![done],
        format!("The traversal and the pending {op}"),
        format!(
            "What {lane} reported from saving {op} as pending in checkpoint_queue to beginning an index phase, and when the server logged {op} done: a full traversal indexes only once its pending delete is done"
        ),
    )
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
/// has indexed (answered 200) every document that was in the repository all
/// along.
pub struct CheckpointResume;

impl Checker<QueueHistory> for CheckpointResume {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::services::queues::properties::Q9]
    }

    fn check(&self, h: &QueueHistory) -> Checked {
        let (passes, mut v, excused) = passes(h);
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
            let indexed = indexed_in(h, p);
            let skipped: Vec<&String> = at_start
                .keys()
                .filter(|id| !removed.contains(id) && !indexed.contains(*id))
                .collect();
            if !skipped.is_empty() {
                let refused = refused_in(h, p, &skipped);
                v.push(
                    violation(
                        "Q9",
                        format!(
                            "the full traversal into '{}' ({} – {}) ended without indexing {} (no index answered 200), which were in the repository throughout",
                            p.queue,
                            secs(p.start_ns),
                            secs(p.done_ns),
                            names(&skipped)
                        ),
                        refused.iter().map(|(id, ..)| *id).collect(),
                    )
                    .during(p.node.clone(), p.start_ns, p.done_ns, format!("full traversal into '{}'", p.queue))
                    .with_evidence(pass_account(h, p, &skipped, &refused)),
                );
            }
        }
        let (saves, missed) = incremental_saves(h);
        v.extend(missed);
        v.truncate(20);
        let corrupt = h
            .node_events
            .iter()
            .filter(|e| {
                matches!(
                    e.event,
                    QueueEvent::Connector(ConnectorEvent::CheckpointsCorrupt { .. })
                )
            })
            .count();
        let mut losses = String::new();
        if corrupt > 0 {
            losses += &format!(
                "; {corrupt} corrupt checkpoint logs reported, the traversal started over"
            );
        }
        if excused > 0 {
            losses += &format!(
                "; {excused} resumes judged against the checkpoints a lying disk's loss left"
            );
        }
        Checked::new(Verdict::from_violations(v)).with_note(format!(
            "{} traversals, {saves} incremental checkpoints{losses}",
            passes.len()
        ))
    }
}

/// Q9's focused account of a full traversal that ended without indexing
/// the documents `skipped`: what its connector reported during it; the
/// first checkpoint_full saved at or past the first skipped document, and
/// every resume after it, marked (the traversal goes in id order, so a
/// resume there passes over the document).
/// The full traversal's indexes of `skipped` documents within the pass that
/// were answered, but not 200 (a refused version): op id, invoke time, words.
fn refused_in(h: &QueueHistory, p: &Pass, skipped: &[&String]) -> Vec<(u64, u64, String)> {
    h.ops
        .iter()
        .filter(|o| o.call.source == Source::Full)
        .filter(|o| o.invoke_ns >= p.start_ns && o.invoke_ns <= p.done_ns)
        .filter_map(|o| match (&o.call.request, &o.result) {
            (QueueRequest::Index { name, version, .. }, Some(r))
                if r.status != 200 && skipped.contains(&name) =>
            {
                let code = r
                    .response
                    .as_ref()
                    .and_then(|resp| resp.error.clone())
                    .unwrap_or_default();
                Some((
                    o.id,
                    o.invoke_ns,
                    format!(
                        "index {name} version {version}: answered {} {code}",
                        r.status
                    ),
                ))
            }
            _ => None,
        })
        .collect()
}

fn pass_account(
    h: &QueueHistory,
    p: &Pass,
    skipped: &[&String],
    refused: &[(u64, u64, String)],
) -> Evidence {
    let first = skipped.iter().min().map_or("", |s| s.as_str());
    let claimed = |v: &str| !v.is_empty() && v >= first;
    let first_claim = reports(h).into_iter().find_map(|(at, node, e)| match e {
        ConnectorEvent::CheckpointSaved { name, value }
            if node == p.node
                && name == CHECKPOINT_FULL
                && at >= p.start_ns
                && at <= p.done_ns
                && claimed(value) =>
        {
            Some(at)
        }
        _ => None,
    });
    reports_account(
        h,
        &p.node,
        (p.start_ns, p.done_ns),
        &|at, e| match e {
            ConnectorEvent::CheckpointSaved { name, .. } => {
                name == CHECKPOINT_FULL && Some(at) == first_claim
            }
            ConnectorEvent::FullIndexing {
                resume_after: Some(r),
                ..
            } => claimed(r),
            _ => false,
        },
        refused
            .iter()
            .map(|(_, at, words)| (*at, words.clone(), true))
            .collect(),
        format!("The full traversal into '{}'", p.queue),
        format!(
            "What {} reported during the traversal ({} – {}){}; it never indexed {}. It goes in id order, so the first checkpoint_full saved at or past {first}{} are marked",
            p.node,
            secs(p.start_ns),
            secs(p.done_ns),
            if refused.is_empty() {
                ""
            } else {
                ", with its refused indexes of them"
            },
            names(skipped),
            if refused.is_empty() {
                ", and each resume after one,"
            } else {
                ", each resume after one, and each refused index"
            }
        ),
    )
}

/// Q9 for the incremental traversal (SPEC §5.5 `handleIncrementalChanges`,
/// §5.7 Q9): a connector saves `checkpoint_incremental = s` only after it
/// has pushed (answered 200) every document changed after the value its
/// run started from and no later than change `s`, each push made after the
/// change. A save before the pushes loses those changes for good when the
/// connector crashes or a push fails (until a full traversal, a day later
/// by default). The number of saves judged, and the violations.
pub fn incremental_saves(h: &QueueHistory) -> (usize, Vec<Violation>) {
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
                    let in_range: Vec<&(u64, u64, &str)> = changes
                        .iter()
                        .filter(|(seq, ..)| *seq > start && *seq <= saved)
                        .collect();
                    let mut rows: Vec<(u64, String, bool)> = Vec::new();
                    for (seq, at_ns, id) in &in_range {
                        let lost = !pushed(id, *at_ns);
                        rows.push((
                            *at_ns,
                            format!("the repository changed {id} (change {seq})"),
                            lost,
                        ));
                    }
                    let from_ns = in_range
                        .iter()
                        .map(|(_, at, _)| *at)
                        .min()
                        .unwrap_or(e.at_ns);
                    rows.extend(
                        pushes
                            .iter()
                            .filter(|(by, name, invoke_ns, _)| {
                                *by == connector
                                    && *invoke_ns >= from_ns
                                    && *invoke_ns <= e.at_ns
                                    && in_range.iter().any(|(_, _, id)| id == name)
                            })
                            .map(|(_, name, _, return_ns)| {
                                (*return_ns, format!("pushed {name} (answered 200)"), false)
                            }),
                    );
                    let account = reports_account(
                        h,
                        node_lane(&e.node),
                        (e.at_ns, e.at_ns),
                        &|_, x| matches!(x, ConnectorEvent::CheckpointSaved { name, .. } if name == CHECKPOINT_INCREMENTAL),
                        rows,
                        format!("The changes up to checkpoint_incremental = {saved}"),
                        format!(
                            "The repository's changes after {start} (where the run started) up to {saved}, the incremental pushes of them, and the save: a connector saves a change sequence only after pushing every change up to it; the changes not pushed before the save are marked"
                        ),
                    );
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
                        .at(e.node.clone(), e.at_ns, format!("checkpoint_incremental = {saved}"))
                        .with_evidence(account),
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
            // Past the fault budget the server may refuse service to the
            // end: the final pass cannot end then, and the reason says so.
            let refused = crate::services::queues::history::refused_to_the_end(h)
                .map_or(String::new(), |why| format!(": {why}"));
            return Checked::new(Verdict::Undecided {
                reason: format!(
                    "connector 0's final traversals {}{refused}",
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
