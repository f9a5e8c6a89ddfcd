//! The `feed` scenario's reachability goals ([`overcast_harness::goals`]):
//! the states of SPEC §3 where change-feed processor bugs hide — a
//! checkpoint refused 412, a lease stolen while its owner was processing a
//! batch, a split during a feed read, a renewal finding another owner, a
//! delegate error, racing bootstraps.

use super::history::{FeedCall, FeedEvent, FeedHistory};
use overcast_harness::goals::{count_events, count_ops, Goal};
use overcast_model::feed_processor::ProcessorEvent;
use std::collections::{BTreeMap, BTreeSet};

/// A host's name without its incarnation (`host-1#2` → `host-1`).
fn host(node: &str) -> &str {
    node.split('#').next().unwrap_or(node)
}

fn host_event(h: &FeedHistory, pred: impl Fn(&ProcessorEvent) -> bool) -> u64 {
    count_events(h, |e| matches!(&e.event, FeedEvent::Host(p) if pred(p)))
}

/// A host SDK call `what` answered `status`.
fn host_call(h: &FeedHistory, what: &str, status: Option<u16>) -> u64 {
    count_ops(h, |o| {
        matches!(&o.call, FeedCall::Host { what: w } if w == what)
            && o.result.as_ref().map(|r| r.status) == status
    })
}

/// Leases acquired from another host while that host was inside its
/// delegate with a batch of the lease (delivered, not yet returned).
fn steals_while_processing(h: &FeedHistory) -> u64 {
    let mut order: Vec<(u64, usize)> = h
        .node_events
        .iter()
        .enumerate()
        .map(|(i, e)| (e.at_ns, i))
        .collect();
    order.sort_unstable();
    let mut processing: BTreeMap<u32, BTreeSet<&str>> = BTreeMap::new();
    let mut n = 0;
    for (_, i) in order {
        let e = &h.node_events[i];
        let FeedEvent::Host(p) = &e.event else {
            continue;
        };
        let me = host(&e.node);
        match p {
            ProcessorEvent::Delivered { lease, .. } => {
                processing.entry(*lease).or_default().insert(me);
            }
            ProcessorEvent::DelegateDone { lease, .. } => {
                if let Some(s) = processing.get_mut(lease) {
                    s.remove(me);
                }
            }
            ProcessorEvent::Acquired {
                lease,
                from: Some(from),
                ..
            } => {
                let from = host(from);
                if from != me && processing.get(lease).is_some_and(|s| s.contains(from)) {
                    n += 1;
                }
            }
            _ => {}
        }
    }
    n
}

/// The goals of `feed`.
pub fn goals() -> Vec<Goal<FeedHistory>> {
    vec![
        Goal::new(
            "checkpoint-refused",
            "A host's checkpoint did not commit (its lease write was refused 412 or failed).",
            |h: &FeedHistory| host_event(h, |p| matches!(p, ProcessorEvent::Checkpoint { ok: false, .. })),
        ),
        Goal::new(
            "checkpoint-found-new-owner",
            "A host stopped processing a lease because its checkpoint found another owner.",
            |h: &FeedHistory| host_event(h, |p| matches!(p, ProcessorEvent::Stopped { why, .. } if why.starts_with("checkpoint: owner is"))),
        ),
        Goal::new(
            "lease-write-412",
            "A host's lease replace (renew or checkpoint) was refused 412: the lease had changed since it was read.",
            |h: &FeedHistory| host_call(h, "replace lease", Some(412)),
        ),
        Goal::new(
            "steal-while-processing",
            "A host took a lease over from another host while that host was processing a batch of it.",
            steals_while_processing,
        ),
        Goal::new(
            "lease-stolen",
            "A host acquired a lease another host owned (a steal by the balancer).",
            |h: &FeedHistory| {
                count_events(h, |e| {
                    matches!(&e.event, FeedEvent::Host(ProcessorEvent::Acquired { from: Some(f), .. }) if host(f) != host(&e.node))
                })
            },
        ),
        Goal::new(
            "renew-found-new-owner",
            "A host's renewal found another owner and it stopped processing the lease.",
            |h: &FeedHistory| host_event(h, |p| matches!(p, ProcessorEvent::Stopped { why, .. } if why.starts_with("renew: owner is"))),
        ),
        Goal::new(
            "split-during-feed-read",
            "A host's feed read was answered 410 Gone: its range had split.",
            |h: &FeedHistory| host_event(h, |p| matches!(p, ProcessorEvent::Read { status: 410, .. })),
        ),
        Goal::new(
            "split-handled",
            "A host handled a split, creating child leases from the parent's continuation.",
            |h: &FeedHistory| host_event(h, |p| matches!(p, ProcessorEvent::Split { .. })),
        ),
        Goal::new(
            "pull-split",
            "The pull-model reader's page was answered 410 Gone: its range had split.",
            |h: &FeedHistory| count_events(h, |e| matches!(&e.event, FeedEvent::Pull { status: 410, .. })),
        ),
        Goal::new(
            "delegate-error",
            "A host's delegate threw and the host released the lease without checkpointing.",
            |h: &FeedHistory| host_event(h, |p| matches!(p, ProcessorEvent::DelegateDone { ok: false, .. })),
        ),
        Goal::new(
            "lease-write-unknown",
            "A host's lease replace ended with an unknown outcome (it may have committed).",
            |h: &FeedHistory| {
                count_ops(h, |o| matches!(&o.call, FeedCall::Host { what } if what == "replace lease") && o.result.is_none())
            },
        ),
        Goal::new(
            "bootstrap-race",
            "Two hosts raced to bootstrap and one found the other's .lock (409).",
            |h: &FeedHistory| host_call(h, "create .lock", Some(409)),
        ),
        Goal::new(
            "feed-read-failed",
            "A host's feed read got no answer or a 503 and it released the lease.",
            |h: &FeedHistory| host_event(h, |p| matches!(p, ProcessorEvent::Stopped { why, .. } if why == "read failed")),
        ),
    ]
}
