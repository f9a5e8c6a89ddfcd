//! The `queues` scenario's reachability goals ([`overcast_harness::goals`]):
//! the states of SPEC §5 where indexing-queue bugs hide — a poll while a
//! `deleteQueueItems` runs, a reservation expiring while its worker is still
//! indexing, a deletion that finishes later, a full traversal postponed or
//! resumed from its checkpoint, refused pushes, a restarted connector with
//! an operation pending, versions refused as stale and indexed again.

use super::history::{Call, Outcome, QueueEvent, QueueHistory};
use overcast_harness::goals::{count_events, count_ops, retried_after, Goal};
use overcast_model::connector::{ConnectorEvent, Source};
use overcast_model::queue::{PushType, QueueEffect, QueueRequest};
use overcast_sim::history::OpRecord;
use std::collections::{BTreeMap, BTreeSet};

type Op = OpRecord<Call, Outcome>;

/// The server's log, in log order.
fn logged(h: &QueueHistory) -> impl Iterator<Item = &QueueEffect> {
    h.node_events.iter().filter_map(|e| match &e.event {
        QueueEvent::Logged { effect, .. } => Some(&**effect),
        _ => None,
    })
}

/// Polls the server judged while a `deleteQueueItems` operation was running.
fn polls_during_delete(h: &QueueHistory) -> u64 {
    let mut running: BTreeSet<&str> = BTreeSet::new();
    let mut n = 0;
    for e in logged(h) {
        for (op, _) in &e.completed {
            running.remove(op.name.as_str());
        }
        if matches!(e.request, Some(QueueRequest::Poll { .. })) && !running.is_empty() {
            n += 1;
        }
        if let Some(op) = &e.started {
            if !op.done {
                running.insert(&op.name);
            }
        }
    }
    n
}

/// Indexes of a polled item the server judged after the poll's reservation
/// had run out.
fn indexed_after_reservation(h: &QueueHistory) -> u64 {
    let mut reserved: BTreeMap<&str, u64> = BTreeMap::new();
    let mut n = 0;
    for e in logged(h) {
        match &e.request {
            Some(QueueRequest::Poll { .. }) => {
                for (name, item) in &e.items {
                    if let Some(until) = item.reserved_until {
                        reserved.insert(name, until);
                    }
                }
            }
            Some(QueueRequest::Index { name, .. }) => {
                let late = reserved
                    .remove(name.as_str())
                    .is_some_and(|until| e.at_ms > until);
                n += u64::from(late);
            }
            Some(QueueRequest::Delete { name, .. }) => {
                reserved.remove(name.as_str());
            }
            _ => {}
        }
    }
    n
}

fn connector(h: &QueueHistory, pred: impl Fn(&ConnectorEvent) -> bool) -> u64 {
    count_events(
        h,
        |e| matches!(&e.event, QueueEvent::Connector(c) if pred(c)),
    )
}

fn push_type(o: &Op) -> Option<PushType> {
    match &o.call.request {
        QueueRequest::Push { item, .. } => Some(item.r#type),
        _ => None,
    }
}

fn refused(o: &Op, status: u16, code: &str) -> bool {
    o.result.as_ref().is_some_and(|r| {
        r.status == status && r.response.as_ref().and_then(|x| x.error.as_deref()) == Some(code)
    })
}

/// Full-traversal indexes refused as stale whose document the same node's
/// full traversal indexed next with a 200.
fn stale_indexed_again(h: &QueueHistory) -> u64 {
    let full_index = |o: &&Op| {
        o.call.source == Source::Full && matches!(o.call.request, QueueRequest::Index { .. })
    };
    let name = |o: &Op| request_name(&o.call.request).map(str::to_string);
    let indexes: Vec<&Op> = h.ops.iter().filter(full_index).collect();
    let mut n = 0;
    for (i, o) in indexes.iter().enumerate() {
        if !refused(o, 400, "FAILED_PRECONDITION") {
            continue;
        }
        let next = indexes[i + 1..]
            .iter()
            .find(|later| later.call.node == o.call.node && name(later) == name(o));
        n += u64::from(
            next.is_some_and(|later| later.result.as_ref().is_some_and(|r| r.status == 200)),
        );
    }
    n
}

fn request_name(r: &QueueRequest) -> Option<&str> {
    match r {
        QueueRequest::Index { name, .. } | QueueRequest::Delete { name, .. } => Some(name),
        _ => None,
    }
}

/// The goals of `queues`.
pub fn goals() -> Vec<Goal<QueueHistory>> {
    vec![
        Goal::new(
            "poll-during-delete-queue-items",
            "A poll was judged while a deleteQueueItems operation was still running.",
            polls_during_delete,
        ),
        Goal::new(
            "reservation-expired-while-indexing",
            "A worker's index of a polled item reached the server after the poll's reservation had run out (another worker could have polled it).",
            indexed_after_reservation,
        ),
        Goal::new(
            "delete-queue-items-deferred",
            "A full traversal asked to delete the other queue and the operation was not done at once.",
            |h: &QueueHistory| connector(h, |c| matches!(c, ConnectorEvent::FullDone { done: false, operation: Some(_), .. })),
        ),
        Goal::new(
            "full-traversal-postponed",
            "A full traversal found its pending deleteQueueItems not done and returned without indexing.",
            |h: &QueueHistory| connector(h, |c| matches!(c, ConnectorEvent::FullPostponed { .. })),
        ),
        Goal::new(
            "full-traversal-resumed",
            "A full traversal resumed its index phase after the last id its checkpoint saved.",
            |h: &QueueHistory| connector(h, |c| matches!(c, ConnectorEvent::FullIndexing { resume_after: Some(_), .. })),
        ),
        Goal::new(
            "full-traversal-aborted",
            "A full traversal stopped before its end on a failure.",
            |h: &QueueHistory| connector(h, |c| matches!(c, ConnectorEvent::FullAborted { .. })),
        ),
        Goal::new(
            "restart-with-pending-operation",
            "A (re)started connector read a checkpoint naming a deleteQueueItems operation still pending.",
            |h: &QueueHistory| connector(h, |c| matches!(c, ConnectorEvent::Started { pending: Some(_), .. })),
        ),
        Goal::new(
            "repository-error-push",
            "A worker pushed REPOSITORY_ERROR for an item the repository failed to hand over.",
            |h: &QueueHistory| {
                count_ops(h, |o| push_type(o) == Some(PushType::RepositoryError) && o.result.as_ref().is_some_and(|r| r.status == 200))
            },
        ),
        Goal::new(
            "requeue-refused",
            "A worker's REQUEUE push was refused 400 FAILED_PRECONDITION (the item was no longer its reservation).",
            |h: &QueueHistory| {
                count_ops(h, |o| push_type(o) == Some(PushType::Requeue) && refused(o, 400, "FAILED_PRECONDITION"))
            },
        ),
        Goal::new(
            "incremental-push-refused",
            "An incremental traversal's MODIFIED push was refused 400 INVALID_ARGUMENT.",
            |h: &QueueHistory| {
                count_ops(h, |o| push_type(o) == Some(PushType::Modified) && refused(o, 400, "INVALID_ARGUMENT"))
            },
        ),
        Goal::new(
            "index-outcome-unknown",
            "An index ended with an unknown outcome (a repeat would be refused as stale).",
            |h: &QueueHistory| count_ops(h, |o| matches!(o.call.request, QueueRequest::Index { .. }) && o.result.is_none()),
        ),
        Goal::new(
            "stale-index-indexed-again",
            "A full traversal's index was refused as stale (400 FAILED_PRECONDITION) and its next index of that document, fetched again, was answered 200.",
            stale_indexed_again,
        ),
        Goal::new(
            "worker-version-refused",
            "A worker's index or delete was refused as stale (400 FAILED_PRECONDITION); it hands the item back with REQUEUE.",
            |h: &QueueHistory| {
                count_ops(h, |o| o.call.source == Source::Worker && request_name(&o.call.request).is_some() && refused(o, 400, "FAILED_PRECONDITION"))
            },
        ),
        Goal::new(
            "poll-retried-after-timeout",
            "A poll timed out and the SDK's next attempt was answered (the first may have reserved items).",
            |h: &QueueHistory| count_ops(h, |o| matches!(o.call.request, QueueRequest::Poll { .. }) && retried_after(o, |s| s.is_none())),
        ),
        Goal::new(
            "server-recovered-log",
            "The server restarted and recovered records from its log.",
            |h: &QueueHistory| count_events(h, |e| matches!(e.event, QueueEvent::Recovered { kept } if kept > 0)),
        ),
    ]
}
