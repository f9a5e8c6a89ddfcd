//! The reachability goals of `regions` and `occ-replicated`
//! ([`overcast_harness::goals`]): the states where replication and routing
//! bugs hide — a failover while a write is in flight, a deposed primary
//! following a newer term, the primary crashed or isolated, a write sent to
//! a region that no longer takes writes, a session read reaching a replica
//! behind its token, a replica replaying its log after a restart.

use super::history::{route, RegionEvent, RegionOp, RegionOutcome, RegionsHistory};
use overcast_harness::goals::{count_events, count_ops, instants_in_flight, Goal};
use overcast_sim::world::Happening;
use std::collections::{BTreeMap, BTreeSet};

/// A node's name without its incarnation (`replica-1#2` → `replica-1`).
fn base(node: &str) -> &str {
    node.split('#').next().unwrap_or(node)
}

fn failed(o: &RegionOp, status: u16) -> bool {
    matches!(o.result, Some(RegionOutcome::Failed { status: s, .. }) if s == status)
}

/// The node events in time order (the recorder's order among equal times).
fn by_time(h: &RegionsHistory) -> Vec<&overcast_sim::history::NodeEvent<RegionEvent>> {
    let mut events: Vec<_> = h.node_events.iter().collect();
    events.sort_by_key(|e| e.at_ns);
    events
}

/// New primaries (after the first term) elected while a write was in flight.
fn failovers_during_writes(h: &RegionsHistory) -> u64 {
    let mut times: Vec<u64> = h
        .node_events
        .iter()
        .filter(|e| matches!(e.event, RegionEvent::Primary { term, .. } if term > 1))
        .map(|e| e.at_ns)
        .collect();
    times.sort_unstable();
    instants_in_flight(&times, h.ops.iter().filter(|o| o.call.is_write()))
}

/// Nodes that were primary of a partition in some term and later applied
/// entries of a newer term as a follower (once per node, partition and term).
fn deposed_primaries_following(h: &RegionsHistory) -> u64 {
    let mut led: BTreeMap<(&str, u32), u64> = BTreeMap::new();
    let mut n = 0;
    for e in by_time(h) {
        match &e.event {
            RegionEvent::Primary { partition, term } => {
                led.insert((base(&e.node), *partition), *term);
            }
            RegionEvent::Applied { partition, entries } => {
                let key = (base(&e.node), *partition);
                if let Some(term) = led.get(&key) {
                    if entries.iter().any(|x| x.term > *term) {
                        led.remove(&key);
                        n += 1;
                    }
                }
            }
            _ => {}
        }
    }
    n
}

/// Crashes of a node while it was the newest primary of some partition.
fn primary_crashes(h: &RegionsHistory) -> u64 {
    let mut primaries: Vec<(u64, u32, &str)> = h
        .node_events
        .iter()
        .filter_map(|e| match e.event {
            RegionEvent::Primary { partition, .. } => Some((e.at_ns, partition, base(&e.node))),
            _ => None,
        })
        .collect();
    primaries.sort_unstable();
    let mut current: BTreeMap<u32, &str> = BTreeMap::new();
    let mut next = primaries.iter().peekable();
    let mut n = 0;
    for w in &h.events {
        while let Some((at, partition, node)) = next.next_if(|p| p.0 <= w.at_ns) {
            let _ = at;
            current.insert(*partition, node);
        }
        if let Happening::Crash { node, .. } = &w.what {
            let now: BTreeSet<&str> = current.values().copied().collect();
            n += u64::from(now.contains(node.as_str()));
        }
    }
    n
}

/// Isolations of a partition's primary during which another replica was
/// elected primary of that partition: a successor while the old primary is
/// cut off (each isolation once, over its length as the world recorded it at
/// its start).
fn successors_while_isolated(h: &RegionsHistory) -> u64 {
    let mut n = 0;
    for (i, w) in h.events.iter().enumerate() {
        let Happening::Isolate {
            target,
            node: Some(node),
        } = &w.what
        else {
            continue;
        };
        let Some(partition) = super::target_partition(target) else {
            continue;
        };
        // The cut itself is recorded just after, at the same time.
        let Some(for_ms) = h.events[i + 1..].iter().find_map(|e| match &e.what {
            Happening::Partition { from, for_ms, .. } if from.first() == Some(node) => {
                Some(*for_ms)
            }
            _ => None,
        }) else {
            continue;
        };
        let end = w.at_ns + for_ms * 1_000_000;
        n += u64::from(h.node_events.iter().any(|e| {
            matches!(e.event, RegionEvent::Primary { partition: p, .. } if p == partition)
                && e.at_ns > w.at_ns
                && e.at_ns < end
                && base(&e.node) != node.as_str()
        }));
    }
    n
}

/// Applied steps whose first entry a node had applied already: a restarted
/// replica replaying its committed prefix from its disk.
fn replays(h: &RegionsHistory) -> u64 {
    let mut applied: BTreeMap<(&str, u32), u64> = BTreeMap::new();
    let mut n = 0;
    for e in by_time(h) {
        if let RegionEvent::Applied { partition, entries } = &e.event {
            let top = applied.entry((base(&e.node), *partition)).or_insert(0);
            if entries.first().is_some_and(|x| x.lsn <= *top) {
                n += 1;
            }
            *top = entries.iter().map(|x| x.lsn).fold(*top, u64::max);
        }
    }
    n
}

fn route_event(h: &RegionsHistory, what: &str, status: u16, sub_status: u16) -> u64 {
    count_events(h, |e| {
        matches!(&e.event, RegionEvent::Route { what: w, status: s, sub_status: u, .. }
            if w == what && *s == status && *u == sub_status)
    })
}

/// The goals of `regions` and `occ-replicated`.
pub fn goals() -> Vec<Goal<RegionsHistory>> {
    vec![
        Goal::new(
            "failover-during-write",
            "A new primary was elected while a write was in flight.",
            failovers_during_writes,
        ),
        Goal::new(
            "deposed-primary-follows-newer-term",
            "A node that had been primary of a partition applied entries of a newer term as a follower.",
            deposed_primaries_following,
        ),
        Goal::new(
            "primary-crashed",
            "The current primary of a partition crashed.",
            primary_crashes,
        ),
        Goal::new(
            "primary-isolated",
            "The primary of a partition was cut off from its replicas (with its clock running at another rate).",
            |h: &RegionsHistory| h.events.iter().filter(|e| matches!(&e.what, Happening::Isolate { target, .. } if target.starts_with("primary"))).count() as u64,
        ),
        Goal::new(
            "successor-elected-while-isolated",
            "Another replica was elected primary of a partition while its old primary was cut off (a pivot: the explorer branches at each, since when the cut heals against the election decides whether the old primary's appends meet the newer term).",
            successors_while_isolated,
        )
        .pivot(),
        Goal::new(
            "replica-replayed-log",
            "A restarted replica applied its committed prefix again from its disk.",
            replays,
        ),
        Goal::new(
            "write-forbidden-refresh",
            "A write reached a region that no longer takes writes (403/3 WriteForbidden) and the SDK refreshed the account.",
            |h: &RegionsHistory| route_event(h, route::REFRESH_ACCOUNT, 403, 3),
        ),
        Goal::new(
            "session-read-behind-token",
            "A session read reached a replica behind its session token (404/1002 ReadSessionNotAvailable).",
            |h: &RegionsHistory| route_event(h, route::ATTEMPT, 404, 1002),
        ),
        Goal::new(
            "region-marked-unavailable",
            "The SDK marked a region unavailable after an attempt got no answer.",
            |h: &RegionsHistory| route_event(h, route::MARK_UNAVAILABLE, 0, 0),
        ),
        Goal::new(
            "gone-refresh-addresses",
            "An attempt was answered 410 Gone and the SDK refreshed the partition's addresses.",
            |h: &RegionsHistory| route_event(h, route::REFRESH_ADDRESSES, 410, 0),
        ),
        Goal::new(
            "replace-if-match-412",
            "A replace with If-Match was refused 412.",
            |h: &RegionsHistory| count_ops(h, |o| o.call.op == "replace" && failed(o, 412)),
        ),
        Goal::new(
            "write-outcome-unknown",
            "A write ended with an unknown outcome (it may or may not have applied).",
            |h: &RegionsHistory| count_ops(h, |o| o.call.is_write() && o.result.is_none()),
        ),
        Goal::new(
            "strong-read-unavailable",
            "A strong read found no primary to serve it and failed 503.",
            |h: &RegionsHistory| {
                count_ops(h, |o| {
                    o.call.op == "read" && o.call.consistency == super::history::Consistency::Strong && failed(o, 503)
                })
            },
        ),
        Goal::new(
            "create-conflict",
            "A create found the item there and was refused 409.",
            |h: &RegionsHistory| count_ops(h, |o| o.call.op == "create" && failed(o, 409)),
        ),
    ]
}
