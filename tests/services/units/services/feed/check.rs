//! Tests of the change feed checkers.
use overcast_model::conditions::ETag;
use overcast_model::cosmos::{CosmosEffect, ItemChange};
use overcast_model::cosmos::{CosmosItem, ItemKey};
use overcast_model::feed_processor::{LeaseDoc, ProcessorEvent};
use overcast_model::partition::Effect;
use overcast_scenarios::services::feed::check::*;
use overcast_scenarios::services::feed::history::{FeedEvent, FeedHistory};
use overcast_scenarios::services::feed::{FeedParams, LEASES};
use overcast_sim::check::Checker;
use overcast_sim::history::NodeEvent;
use overcast_sim::world::WorldEvent;

const S: u64 = 1_000_000_000;

/// A lease document version written at true time `at_ms` by `owner`,
/// whose clock runs `offset_ms` off true time.
fn lease_write(
    token: u32,
    owner: &str,
    offset_ms: i64,
    at_ms: u64,
    version: u64,
) -> NodeEvent<FeedEvent> {
    lease_version(token, Some(owner), owner, offset_ms, at_ms, version)
}

/// A lease document version naming `owner`, written by `by`.
fn lease_version(
    token: u32,
    owner: Option<&str>,
    by: &str,
    offset_ms: i64,
    at_ms: u64,
    version: u64,
) -> NodeEvent<FeedEvent> {
    let doc = LeaseDoc {
        token,
        min: token * 128,
        max: token * 128 + 128,
        owner: owner.map(str::to_string),
        continuation: Some(10),
        timestamp: (at_ms as i64 + offset_ms) as u64,
        by: by.into(),
        parent: None,
    };
    let item = CosmosItem {
        body: doc.to_body(),
        etag: ETag::from_version(version),
        ts: at_ms / 1000,
        version,
    };
    NodeEvent {
        node: "server-0".into(),
        at_ns: at_ms * 1_000_000,
        local_ms: at_ms,
        event: FeedEvent::Logged {
            lsn: version,
            effect: Effect::Cosmos(CosmosEffect::Item(ItemChange::Written {
                key: ItemKey::new(LEASES, "cfp", format!("cfp..{token}")),
                item,
            })),
        },
    }
}

fn acquired(node: &str, at_ms: u64, from: &str, seen_timestamp: u64) -> NodeEvent<FeedEvent> {
    NodeEvent {
        node: node.into(),
        at_ns: at_ms * 1_000_000,
        local_ms: at_ms,
        event: FeedEvent::Host(ProcessorEvent::Acquired {
            lease: 1,
            continuation: Some(10),
            from: Some(from.into()),
            seen_timestamp: Some(seen_timestamp),
        }),
    }
}

/// Seed 1404 of the swarm sweep, cut down: host-1 (clock 1 s slow) owns
/// lease 1 and renews it at 59.1 s and 60.9 s, then one renewal is lost
/// and the next lands at 65.0 s. host-0 (clock 1 s fast) listed the
/// leases before that renewal: on its clock the 60.9 s version is 6.17 s
/// old, past the 6 s expiration, so it takes the lease at 65.07 s (its
/// Acquire replaces the copy after the 412, the owner being unchanged);
/// host-1, now owning none, steals it back at 67.0 s. The run ends at
/// 70.25 s. `seen_ms` is the timestamp of the version host-0 judged.
fn history(seen_ms: u64) -> FeedHistory {
    let mut node_events = vec![
        lease_write(0, "host-0", 1_000, 50_000, 1),
        lease_write(1, "host-1", -1_000, 59_100, 2),
        lease_write(1, "host-1", -1_000, 60_900, 3),
        lease_write(1, "host-1", -1_000, 65_000, 4),
        lease_write(1, "host-0", 1_000, 65_070, 5),
        acquired("host-0", 65_071, "host-1", seen_ms),
        lease_write(1, "host-1", -1_000, 67_000, 6),
        acquired("host-1", 67_001, "host-0", 66_070),
    ];
    for (i, at) in [62_000u64, 64_000, 66_000, 68_000, 70_000]
        .iter()
        .enumerate()
    {
        node_events.push(lease_write(0, "host-0", 1_000, *at, 7 + i as u64));
    }
    node_events.sort_by_key(|e| e.at_ns);
    FeedHistory {
        version: overcast_sim::history::HISTORY_VERSION,
        ops: Vec::new(),
        events: vec![WorldEvent {
            at_ns: 70 * S + S / 4,
            what: overcast_sim::world::Happening::End,
        }],
        node_events,
        log_events: Vec::new(),
    }
}

fn cf8(h: &FeedHistory) -> Vec<String> {
    let p = FeedParams {
        hosts: 2,
        ..FeedParams::default()
    };
    // Through the CF8 rule: it reports the walk's CF8 violations, in order.
    checkers(&p)
        .iter()
        .filter(|rule| rule.properties().iter().any(|q| q.id == "CF8"))
        .flat_map(|rule| rule.check(h).verdict().violations().to_vec())
        .map(|v| v.message)
        .collect()
}

#[test]
fn a_takeover_of_the_version_the_balancer_saw_expired_is_settling_not_a_cf8_violation() {
    // host-0 judged the 60.9 s version (host-1's clock: 59.9 s).
    assert!(
        cf8(&history(59_900)).is_empty(),
        "{:?}",
        cf8(&history(59_900))
    );
}

#[test]
fn a_late_steal_of_a_lease_whose_seen_version_was_fresh_still_breaks_cf8() {
    // Had host-0 judged the 65.0 s version (64.0 s on host-1's clock),
    // the lease was live: both hand-overs are steals in the last window.
    let found = cf8(&history(64_000));
    assert!(
        found.iter().any(|m| m.contains("still change hands")),
        "{found:?}"
    );
}

/// Swarm seed 2682, cut down: host-1 owns lease 1 and renews it; host-0
/// owns lease 0. host-0's balancer picks lease 1, its Acquire times out,
/// and it releases the copy it saw (§3.3.4), clearing host-1 as owner at
/// 69.0 s; host-0 takes the lease at 70.0 s, 0.25 s before the end:
/// host-0 owns both. The hosts are still settling, not unbalanced.
#[test]
fn a_failed_acquire_that_released_another_hosts_lease_late_is_settling_not_a_cf8_violation() {
    let mut node_events = vec![lease_write(0, "host-0", 0, 50_000, 1)];
    for (i, at) in [62_000u64, 64_000, 66_000, 68_000].iter().enumerate() {
        node_events.push(lease_write(1, "host-1", 0, *at, 2 + i as u64));
    }
    node_events.push(lease_version(1, None, "host-0", 0, 69_000, 6));
    node_events.push(lease_write(1, "host-0", 0, 70_000, 7));
    for (i, at) in [62_000u64, 64_000, 66_000, 68_000, 70_000]
        .iter()
        .enumerate()
    {
        node_events.push(lease_write(0, "host-0", 0, *at, 8 + i as u64));
    }
    node_events.sort_by_key(|e| e.at_ns);
    let h = FeedHistory {
        version: overcast_sim::history::HISTORY_VERSION,
        ops: Vec::new(),
        events: vec![WorldEvent {
            at_ns: 70 * S + S / 4,
            what: overcast_sim::world::Happening::End,
        }],
        node_events: node_events.clone(),
        log_events: Vec::new(),
    };
    assert!(cf8(&h).is_empty(), "{:?}", cf8(&h));
    // Without the release (host-1 still owning lease 1 at the end, but
    // host-0 owning it too is impossible) the same end is unbalanced.
    let mut kept: Vec<_> = node_events
        .into_iter()
        .filter(|e| {
            e.at_ns < 69 * S
                || !matches!(&e.event, FeedEvent::Logged { lsn, .. } if *lsn == 6 || *lsn == 7)
        })
        .collect();
    kept.push(lease_write(1, "host-0", 0, 69_500, 7));
    kept.sort_by_key(|e| e.at_ns);
    let h = FeedHistory {
        node_events: kept,
        ..h
    };
    assert!(
        !cf8(&h).is_empty(),
        "a steal of a live lease without a release is judged"
    );
}
