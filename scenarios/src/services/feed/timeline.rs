//! How a failing `feed` run is drawn: under each processor host two lanes,
//! the leases it owned as the server's log shows them (solid: from the write
//! that made it the owner to the write that made another host or nobody the
//! owner, or deleted the lease) and the leases it processed as it saw them
//! (hatched: from its `Acquired` to its `Stopped`), with each delivery,
//! delegate error, checkpoint and split as marks; every call on its node's
//! lane (writers' writes, the pull reader's pages, the hosts' SDK calls); the
//! server's recoveries and the splitter's splits as marks. Crashes, pauses,
//! partitions and clock offsets come from the world's part of the page. What
//! a violation names is marked by the page from the violation itself.

use super::check::lease_log;
use super::history::{FeedCall, FeedEvent, FeedHistory, FeedResult};
use super::FeedParams;
use crate::services::feed::FeedRole;
use overcast_harness::report::call_words;
use overcast_model::feed_processor::ProcessorEvent;
use overcast_sim::timeline::{
    node_lane, secs, Lane, Mark, MarkKind, Span, SpanKind, Timeline, Tone,
};
use overcast_sim::world::Topology;
use std::collections::BTreeMap;

/// The node whose calls carry `client` = `c` (the deploy numbers writers
/// first, then the pull reader, then the hosts).
pub fn node_of(p: &FeedParams, c: usize) -> String {
    if c < p.writers {
        Topology::node_name(FeedRole::Writer, c)
    } else if c == p.writers {
        Topology::node_name(FeedRole::Reader, 0)
    } else {
        Topology::node_name(FeedRole::Host, c - p.writers - 1)
    }
}

/// A call in a few words: `upsert k3/i1 → 200`, `pull range 2 after 41 → 304`.
pub fn words(call: &FeedCall, result: Option<&FeedResult>) -> (String, Tone) {
    let asked = match call {
        FeedCall::Write {
            kind,
            partition_key,
            ids,
        } => format!("{kind} {partition_key}/{}", ids.join(",")),
        FeedCall::Pull { range, from } => format!("pull range {range} after {from}"),
        FeedCall::Host { what } => what.clone(),
    };
    let (words, tone) = call_words(asked, result.map(|r| (r.status, r.status.to_string())));
    // A feed read's 304 (nothing new) is the normal answer of a poll, not an error.
    match result {
        Some(FeedResult { status: 304 }) => (words, Tone::Ok),
        _ => (words, tone),
    }
}

/// Draws the calls, the two lease lanes of each host, and the marks.
pub fn draw(p: &FeedParams, h: &FeedHistory, t: &mut Timeline) {
    let end_ns = t.end_ns;
    // Host SDK calls are many (every renewal): drawn, but only writers' and
    // the reader's carry labels wide enough to read.
    t.add_ops(
        &h.ops,
        |o| node_of(p, o.client),
        |o| words(&o.call, o.result.as_ref()),
    );
    for i in 0..p.hosts {
        let host = Topology::node_name(FeedRole::Host, i);
        let at = t
            .lanes
            .iter()
            .position(|l| l.id == host)
            .map_or(t.lanes.len(), |k| k + 1);
        let owned = Lane {
            id: format!("{host}:owned"),
            label: "↳ owned (log)".into(),
            note: "per the lease log (solid)".into(),
        };
        let processed = Lane {
            id: format!("{host}:processing"),
            label: "↳ processing".into(),
            note: "acquire → stop (hatched); ▸ delivery ✓ checkpoint ✗ error".into(),
        };
        t.lanes.insert(at.min(t.lanes.len()), processed);
        t.lanes.insert(at.min(t.lanes.len()), owned);
    }

    // Ownership in the server's log.
    for (id, versions) in lease_log(h) {
        let mut open: Option<(String, u64, u32)> = None;
        let close =
            |t: &mut Timeline, (owner, start, token): (String, u64, u32), at: u64, how: &str| {
                let lane = format!("{}:owned", node_lane(&owner));
                if !t.lanes.iter().any(|l| l.id == lane) {
                    return;
                }
                t.spans.push(Span {
                    lane,
                    start_ns: start,
                    end_ns: Some(at.max(start)),
                    label: format!("lease {token}"),
                    detail: format!(
                        "lease {token} ({id}) owned by {owner} in the log from {} to {} ({how})",
                        secs(start),
                        secs(at)
                    ),
                    kind: SpanKind::Held,
                    highlight: false,
                });
            };
        for lv in versions {
            let (at, doc) = (lv.at_ns, lv.doc);
            let owner = doc.as_ref().and_then(|d| d.owner.clone());
            let same = matches!((&open, &owner), (Some((o, _, _)), Some(n)) if o == n);
            if same {
                continue;
            }
            if let Some(o) = open.take() {
                let how = match (&doc, &owner) {
                    (None, _) => "deleted".to_string(),
                    (Some(_), Some(n)) => format!("then {n}"),
                    (Some(_), None) => "released".to_string(),
                };
                close(t, o, at, &how);
            }
            if let (Some(d), Some(o)) = (&doc, owner) {
                open = Some((o, at, d.token));
            }
        }
        if let Some(o) = open {
            close(t, o, end_ns, "to the end");
        }
    }

    // What each host did, as it saw it.
    let mut processing: BTreeMap<(String, u32), (u64, Option<u64>)> = BTreeMap::new();
    for e in &h.node_events {
        let lane_host = node_lane(&e.node).to_string();
        let processing_lane = format!("{lane_host}:processing");
        let mark = |t: &mut Timeline, label: String, detail: String, kind: MarkKind| {
            t.marks.push(Mark {
                lane: processing_lane.clone(),
                at_ns: e.at_ns,
                label,
                detail,
                kind,
                highlight: false,
            });
        };
        match &e.event {
            FeedEvent::Host(pe) => match pe {
                ProcessorEvent::Acquired {
                    lease,
                    continuation,
                    from,
                    ..
                } => {
                    let k = (e.node.clone(), *lease);
                    if let Some((start, _)) = processing.remove(&k) {
                        push_processing(t, &e.node, *lease, start, e.at_ns, "acquired again");
                    }
                    processing.insert(k, (e.at_ns, *continuation));
                    let _ = from;
                }
                ProcessorEvent::Stopped { lease, why } => {
                    if let Some((start, _)) = processing.remove(&(e.node.clone(), *lease)) {
                        push_processing(t, &e.node, *lease, start, e.at_ns, why);
                    }
                }
                ProcessorEvent::Delivered {
                    lease,
                    items,
                    continuation,
                } => mark(
                    t,
                    "▸".into(),
                    format!(
                        "{} handed lease {lease}'s page up to lsn {continuation} ({} items: {}) to its delegate at {}",
                        e.node,
                        items.len(),
                        items
                            .iter()
                            .map(|i| format!("{}/{} v{} lsn {}", i.partition_key, i.id, i.version, i.lsn))
                            .collect::<Vec<_>>()
                            .join(", "),
                        secs(e.at_ns)
                    ),
                    MarkKind::Event,
                ),
                ProcessorEvent::DelegateDone {
                    lease,
                    ok: false,
                    continuation,
                } => mark(
                    t,
                    "✗".into(),
                    format!(
                        "{}'s delegate threw on lease {lease}'s page up to lsn {continuation} at {}",
                        e.node,
                        secs(e.at_ns)
                    ),
                    MarkKind::Problem,
                ),
                ProcessorEvent::Checkpoint {
                    lease,
                    continuation,
                    ok,
                } => mark(
                    t,
                    if *ok { "✓" } else { "✗" }.into(),
                    format!(
                        "{} checkpointed lease {lease} at lsn {continuation} at {}: {}",
                        e.node,
                        secs(e.at_ns),
                        if *ok { "committed" } else { "rejected" }
                    ),
                    if *ok { MarkKind::Event } else { MarkKind::Problem },
                ),
                ProcessorEvent::Split {
                    lease,
                    children,
                    continuation,
                } => mark(
                    t,
                    "split".into(),
                    format!(
                        "{} handled the split of lease {lease}: children {} created from {} at {}",
                        e.node,
                        children
                            .iter()
                            .map(|c| format!("lease {c}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        continuation.map_or("no checkpoint".to_string(), |c| format!("lsn {c}")),
                        secs(e.at_ns)
                    ),
                    MarkKind::Event,
                ),
                _ => {}
            },
            FeedEvent::Recovered { kept } => t.marks.push(Mark {
                lane: lane_host,
                at_ns: e.at_ns,
                label: format!("recovered {kept}"),
                detail: format!(
                    "{} started and recovered the first {kept} records of its log at {}",
                    e.node,
                    secs(e.at_ns)
                ),
                kind: MarkKind::Event,
                highlight: false,
            }),
            FeedEvent::LeftOut { what } => t.marks.push(Mark {
                lane: lane_host,
                at_ns: e.at_ns,
                label: "left out".into(),
                detail: format!(
                    "{}'s call {what} was left out at {} (a shrunk run)",
                    e.node,
                    secs(e.at_ns)
                ),
                kind: MarkKind::Fault,
                highlight: false,
            }),
            FeedEvent::Refused { reason } => t.marks.push(Mark {
                lane: lane_host,
                at_ns: e.at_ns,
                label: "refused".into(),
                detail: format!(
                    "{} found every copy of its log corrupt at {} and refuses service: {reason}",
                    e.node,
                    secs(e.at_ns)
                ),
                kind: MarkKind::Fault,
                highlight: false,
            }),
            FeedEvent::Split { range, status } => t.marks.push(Mark {
                lane: lane_host,
                at_ns: e.at_ns,
                label: format!("split {range}"),
                detail: format!(
                    "{} asked for range {range} to split at {}: {status}",
                    e.node,
                    secs(e.at_ns)
                ),
                kind: MarkKind::Fault,
                highlight: false,
            }),
            _ => {}
        }
    }
    for ((node, lease), (start, _)) in processing {
        push_processing(t, &node, lease, start, end_ns, "to the end");
    }
}

/// One hatched bar: `node` processed `lease` from `start` to `end`.
fn push_processing(t: &mut Timeline, node: &str, lease: u32, start: u64, end: u64, why: &str) {
    let host = node_lane(node);
    t.spans.push(Span {
        lane: format!("{host}:processing"),
        start_ns: start,
        end_ns: Some(end.max(start)),
        label: format!("lease {lease}"),
        detail: format!(
            "{node} processed lease {lease} from {} to {} (ended: {why})",
            secs(start),
            secs(end)
        ),
        kind: SpanKind::Believed,
        highlight: false,
    });
}
