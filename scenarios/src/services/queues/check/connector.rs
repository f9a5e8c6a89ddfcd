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
pub(super) fn incremental_saves(h: &QueueHistory) -> (usize, Vec<Violation>) {
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
