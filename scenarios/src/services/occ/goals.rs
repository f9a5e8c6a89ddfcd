//! The `occ` scenario's reachability goals ([`overcast_harness::goals`]):
//! the states of SPEC §1 and §4 where ETag and retry bugs hide — a write
//! throttled (449) or gone (410) and then applied, a conditional write sent
//! again and then refused 412, writes acknowledged just before a server
//! crash, If-Match and If-None-Match refusals, conflicting conditions.

use super::check::OccHistory;
use super::history::{Call, OccEvent, Outcome};
use crate::services::occ::OccRole;
use overcast_harness::goals::{count_events, count_ops, retried_after, Goal};
use overcast_sim::history::OpRecord;
use overcast_sim::world::Happening;
use overcast_sim::world::NodeRole;

/// A write acknowledged at most this long before a server crash counts.
pub const ACK_BEFORE_CRASH_NS: u64 = 100_000_000;

/// The status the caller saw (`None`: unknown outcome or an old timeout).
fn status(o: &OpRecord<Call, Outcome>) -> Option<u16> {
    match o.result {
        Some(Outcome::Response { status, .. }) => Some(status),
        _ => None,
    }
}

fn is_write(o: &OpRecord<Call, Outcome>) -> bool {
    matches!(o.call.op.as_str(), "put" | "delete")
}

fn succeeded(o: &OpRecord<Call, Outcome>) -> bool {
    status(o).is_some_and(|s| (200..300).contains(&s))
}

/// Writes acknowledged at most [`ACK_BEFORE_CRASH_NS`] before a server crashed.
fn acked_before_crash(h: &OccHistory) -> u64 {
    let crashes: Vec<u64> = h
        .events
        .iter()
        .filter(|e| matches!(&e.what, Happening::Crash { node, .. } if node.starts_with(OccRole::Server.name())))
        .map(|e| e.at_ns)
        .collect();
    count_ops(h, |o| {
        is_write(o)
            && succeeded(o)
            && o.return_ns.is_some_and(|r| {
                let i = crashes.partition_point(|c| *c < r);
                crashes
                    .get(i)
                    .is_some_and(|c| *c - r <= ACK_BEFORE_CRASH_NS)
            })
    })
}

/// The goals of `occ` (and its throttling variant).
pub fn goals() -> Vec<Goal<OccHistory>> {
    vec![
        Goal::new(
            "throttled-write-then-applied",
            "A write's first attempt was refused 449 (retry with) and a later attempt applied it.",
            |h: &OccHistory| count_ops(h, |o| is_write(o) && succeeded(o) && retried_after(o, |s| s == Some(449))),
        ),
        Goal::new(
            "gone-write-then-applied",
            "A write's first attempt was answered 410 (gone: the partition moved) and a later attempt applied it.",
            |h: &OccHistory| count_ops(h, |o| is_write(o) && succeeded(o) && retried_after(o, |s| s == Some(410))),
        ),
        Goal::new(
            "throttled-429-then-succeeded",
            "A call's first attempt was throttled 429 and a later attempt succeeded after the server's retry-after.",
            |h: &OccHistory| count_ops(h, |o| succeeded(o) && retried_after(o, |s| s == Some(429))),
        ),
        Goal::new(
            "read-timeout-then-answered",
            "A read's first attempt timed out and the SDK's next attempt was answered.",
            |h: &OccHistory| count_ops(h, |o| o.call.op == "read" && retried_after(o, |s| s.is_none())),
        ),
        Goal::new(
            "retried-write-refused-412",
            "A conditional write was sent again after a transient failure (410, 429, 449 or a timeout) and then refused 412: its first attempt may have applied it.",
            |h: &OccHistory| {
                count_ops(h, |o| {
                    is_write(o)
                        && status(o) == Some(412)
                        && retried_after(o, |s| matches!(s, None | Some(410 | 429 | 449)))
                })
            },
        ),
        Goal::new(
            "write-outcome-unknown",
            "A write ended with an unknown outcome (it may or may not have applied).",
            |h: &OccHistory| count_ops(h, |o| is_write(o) && o.result.is_none()),
        ),
        Goal::new(
            "write-acked-before-crash",
            "A write was acknowledged at most 100 ms before a server crashed (its log record must have been durable).",
            acked_before_crash,
        ),
        Goal::new(
            "if-match-412",
            "A write with If-Match was refused 412: the ETag it carried was stale.",
            |h: &OccHistory| count_ops(h, |o| is_write(o) && o.call.if_match.is_some() && status(o) == Some(412)),
        ),
        Goal::new(
            "create-conflict",
            "A create (If-None-Match: *) found the blob there and was refused 409.",
            |h: &OccHistory| {
                count_ops(h, |o| {
                    o.call.op == "put" && o.call.if_none_match.as_deref() == Some("*") && status(o) == Some(409)
                })
            },
        ),
        Goal::new(
            "read-not-modified",
            "A conditional read was answered 304 Not Modified.",
            |h: &OccHistory| count_ops(h, |o| o.call.op == "read" && status(o) == Some(304)),
        ),
        Goal::new(
            "unmodified-since-412",
            "A call with If-Unmodified-Since was refused 412: the blob had changed since the date.",
            |h: &OccHistory| count_ops(h, |o| o.call.if_unmodified_since.is_some() && status(o) == Some(412)),
        ),
        Goal::new(
            "conflicting-conditions-400",
            "A write carrying both If-Match and If-None-Match was refused 400.",
            |h: &OccHistory| {
                count_ops(h, |o| {
                    o.call.op == "put"
                        && o.call.if_match.is_some()
                        && o.call.if_none_match.is_some()
                        && status(o) == Some(400)
                })
            },
        ),
        Goal::new(
            "server-replayed-log",
            "A server (re)started from a log with records and replayed them.",
            |h: &OccHistory| count_events(h, |e| matches!(e.event, OccEvent::Serving { replayed } if replayed > 0)),
        ),
    ]
}
