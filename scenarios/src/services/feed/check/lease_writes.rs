//! CF11 and CF12: what each lease write says of its writer, judged as the
//! write is logged (so a failure stops its run there, not at the end):
//!
//! - CF11: a host that split a lease works it no more. Once it has handled
//!   the split (SPEC §3.3.8: the children created, the parent deleted), no
//!   write of the parent by the same process keeps it as the owner — no
//!   renewal, no checkpoint — until it acquires the lease anew. A parent
//!   left in service overlaps its children (CF7 sees that only at the end).
//! - CF12: a lease's `timestamp` is its writer's clock when it wrote it
//!   (SPEC §3.3.4: `timestamp = now`): every version that changes it
//!   carries a reading of the writer's clock between when the version it
//!   replaced was logged and when the server logged it, within the clock
//!   error the deployment allows. Other hosts judge expiry from it (§3.3.6), so a stamp from
//!   another clock (the process's uptime, another unit) or a stale one makes
//!   live leases look expired, and they change hands (CF8 sees that only at
//!   quiescence).

use super::{
    host_client, lease_account, lease_rows, owned, versions_of, violation, FeedHistory, FeedParams,
    HostEvents, LeaseVersion,
};
use crate::services::feed::history::FeedCall;
use overcast_model::feed_processor::{ProcessorEvent, ProcessorOptions};
use overcast_sim::check::{Evidence, EvidenceRow, Violation};
use overcast_sim::clock::EPOCH_MS;
use overcast_sim::happening::Happening;
use overcast_sim::timeline::{node_lane, secs};
use std::collections::BTreeMap;

/// CF11: after `node` split a lease, the writes of the parent by that
/// process that keep it the owner. A renewal under way when the split was
/// handled may still land (the renewer read the lease before): the first
/// such write is excused when the host had a lease read or replace in
/// flight then (or one whose outcome it never learned).
pub(super) fn judge_split_parents(
    h: &FeedHistory,
    p: &FeedParams,
    leases: &BTreeMap<String, Vec<LeaseVersion>>,
    by_node: &HostEvents,
    v: &mut Vec<Violation>,
) -> usize {
    let expiration_ms = ProcessorOptions::scaled("h", p.time_scale).expiration_ms;
    let mut judged = 0;
    for (node, es) in by_node {
        let host = node_lane(node);
        // The process ends at its host's next crash (a later incarnation
        // is another process, which may acquire the parent again).
        let ends_at = |from: u64| {
            h.events
                .iter()
                .filter(|e| e.at_ns >= from)
                .find(|e| matches!(&e.what, Happening::Crash { node, .. } if node == host))
                .map_or(u64::MAX, |e| e.at_ns)
        };
        for (split_ns, e) in es {
            let ProcessorEvent::Split { lease, .. } = e else {
                continue;
            };
            let Some(vs) = versions_of(leases, *lease) else {
                continue;
            };
            // It owned the parent when it split it.
            let Some(before) = vs.iter().rev().find(|x| x.at_ns <= *split_ns) else {
                continue;
            };
            if before
                .doc
                .as_ref()
                .is_none_or(|d| d.owner.as_deref() != Some(host))
            {
                continue;
            }
            judged += 1;
            // Once its last write is an expiration old on its own clock, a
            // write by it is an Acquire of its own expired copy (its answer
            // may be lost, so no event says so), not a renewal: judged
            // until then only.
            let expiry_ns =
                (expiration_ms.saturating_sub(clock_error_ms(h, p, *split_ns))) * 1_000_000;
            let end = ends_at(*split_ns).min(before.at_ns + expiry_ns);
            let in_flight = host_client(p, host).is_some_and(|client| {
                h.ops.iter().any(|o| {
                    o.client == client
                        && o.invoke_ns <= *split_ns
                        && o.return_ns.is_none_or(|r| r > *split_ns)
                        && matches!(&o.call, FeedCall::Host { what } if what == "read lease" || what == "replace lease")
                })
            });
            let mut excuse_left = in_flight;
            for x in vs.iter().filter(|x| x.at_ns > *split_ns && x.at_ns < end) {
                let Some(d) = x.doc.as_ref() else { break };
                if d.owner.as_deref() != Some(host) {
                    break;
                }
                if d.by != host {
                    continue;
                }
                // Its own expired copy taken again by its balancer: a new
                // acquisition, reported when the Acquire returns.
                let next = vs
                    .iter()
                    .find(|y| y.at_ns > x.at_ns)
                    .map_or(u64::MAX, |y| y.at_ns);
                if es.iter().any(|(at, e)| {
                    *at >= x.at_ns
                        && *at < next
                        && matches!(e, ProcessorEvent::Acquired { lease: l, .. } if l == lease)
                }) {
                    break;
                }
                if excuse_left {
                    excuse_left = false;
                    continue;
                }
                let shown = vs
                    .iter()
                    .filter(|y| y.at_ns <= x.at_ns)
                    .rev()
                    .take(5)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev();
                v.push(
                    violation(
                        "CF11",
                        format!(
                            "{host} split lease {lease} at {} and still wrote it as its owner at {}",
                            secs(*split_ns),
                            secs(x.at_ns)
                        ),
                    )
                    .at(super::processing(node), *split_ns, format!("{host} splits lease {lease}"))
                    .at(owned(host), x.at_ns, format!("{host} writes lease {lease} again"))
                    .with_evidence(lease_account(
                        format!("Lease {lease} after its split"),
                        format!(
                            "The versions of lease {lease}'s document up to {host}'s write after it split the lease at {}: a host that split a lease deletes it and works it no more.",
                            secs(*split_ns)
                        ),
                        lease_rows(*lease, shown, x.at_ns),
                    )),
                );
                break;
            }
        }
    }
    judged
}

/// How far a host's clock may be from true time at `at_ns`, ms: its offset
/// and drift bounds (`adjust_plan`), and every clock-rate fault of the run
/// taken in full, plus a millisecond of rounding.
fn clock_error_ms(h: &FeedHistory, p: &FeedParams, at_ns: u64) -> u64 {
    let offset = super::super::max_offset_ms(p).unsigned_abs();
    let drift = at_ns / 1_000_000 * 200 / 1_000_000;
    let faults: u64 = h
        .events
        .iter()
        .filter_map(|e| match &e.what {
            Happening::ClockRate {
                drift_ppm,
                peers_ppm,
                for_ms,
                ..
            } => Some(drift_ppm.unsigned_abs().max(peers_ppm.unsigned_abs()) * for_ms / 1_000_000),
            _ => None,
        })
        .sum();
    offset + drift + faults + 1
}

/// CF12: every stamp a lease version carries anew against its writer's
/// clock while the write was under way.
pub(super) fn judge_stamps(
    h: &FeedHistory,
    p: &FeedParams,
    leases: &BTreeMap<String, Vec<LeaseVersion>>,
    v: &mut Vec<Violation>,
) -> usize {
    let mut judged = 0;
    for vs in leases.values() {
        let mut last: Option<(u64, u64)> = None;
        for x in vs {
            let Some(d) = x.doc.as_ref() else {
                last = None;
                continue;
            };
            let before = last.replace((x.at_ns, d.timestamp));
            if before.is_some_and(|(_, stamp)| stamp == d.timestamp) {
                continue;
            }
            judged += 1;
            // A replace carries the ETag of the version before it (SPEC
            // §3.3.4), so it was stamped after that version was logged and
            // read; a create, after the run began.
            let after = before.map_or(0, |(at, _)| at);
            let lo = (EPOCH_MS + after / 1_000_000).saturating_sub(clock_error_ms(h, p, after));
            let hi = EPOCH_MS + x.at_ns / 1_000_000 + clock_error_ms(h, p, x.at_ns);
            if (lo..=hi).contains(&d.timestamp) {
                continue;
            }
            let off = |ms: u64| {
                if d.timestamp < ms {
                    format!("{} behind", secs((ms - d.timestamp) * 1_000_000))
                } else {
                    format!("{} ahead", secs((d.timestamp - ms) * 1_000_000))
                }
            };
            let rows = vec![
                EvidenceRow {
                    op: None,
                    cells: vec![
                        secs(after),
                        "the version it replaced logged".into(),
                        format!("{lo} ms or later"),
                    ],
                    marked: d.timestamp < lo,
                },
                EvidenceRow {
                    op: None,
                    cells: vec![
                        secs(x.at_ns),
                        "logged by the server".into(),
                        format!("{hi} ms or earlier"),
                    ],
                    marked: d.timestamp > hi,
                },
                EvidenceRow {
                    op: None,
                    cells: vec![
                        String::new(),
                        "the stamp it carries".into(),
                        format!("{} ms", d.timestamp),
                    ],
                    marked: true,
                },
            ];
            v.push(
                violation(
                    "CF12",
                    format!(
                        "lease {} written by {} at {} carries timestamp {} ms, {} of its clock then",
                        d.token,
                        d.by,
                        secs(x.at_ns),
                        d.timestamp,
                        off(if d.timestamp < lo { lo } else { hi })
                    ),
                )
                .at(owned(&d.by), x.at_ns, format!("lease {} stamped {} ms", d.token, d.timestamp))
                .with_evidence(Evidence {
                    title: format!("The stamp of lease {}", d.token),
                    lead: vec![format!(
                        "When the version {} replaced was logged (it carries that version's ETag, so it was stamped after) and when the server logged the write, with what {}'s clock could read then (its offset and drift bounds, and any clock-rate fault): a lease's timestamp is its writer's clock at the write.",
                        d.by, d.by
                    )],
                    columns: ["when", "what", "the writer's clock"]
                        .map(String::from)
                        .to_vec(),
                    rows,
                    notes: Vec::new(),
                }),
            );
        }
    }
    judged
}
