//! CF13: a host resumes a lease it acquires from the lease's stored
//! checkpoint (SPEC §3.3.6 step 6: "on success the host starts the loop
//! from the stored continuation"), judged at its first read of the lease:
//! not from where it read before it lost the lease, not from a checkpoint
//! another host has since moved. CF5 and CF3 see such a resume only when
//! it moves a checkpoint back or skips a version to the end; CF13 sees it
//! at the read, with one host.

use super::{
    lease_account, lease_rows, lsn_words, processing, versions_of, violation, HostEvents,
    LeaseVersion,
};
use overcast_model::feed_processor::ProcessorEvent;
use overcast_sim::check::Violation;
use overcast_sim::timeline::{node_lane, secs};
use std::collections::BTreeMap;

/// Judges every acquisition's first read; returns how many were judged.
pub(super) fn judge_resumes(
    leases: &BTreeMap<String, Vec<LeaseVersion>>,
    by_node: &HostEvents,
    v: &mut Vec<Violation>,
) -> usize {
    let mut judged = 0;
    for (node, es) in by_node {
        let host = node_lane(node);
        for (i, (acquired_ns, e)) in es.iter().enumerate() {
            let ProcessorEvent::Acquired { lease, .. } = e else {
                continue;
            };
            let Some(vs) = versions_of(leases, *lease) else {
                continue;
            };
            // The stored checkpoint: the lease's document as the acquire
            // left it (written by this host, owned by it). If another write
            // came in between, what the host should read from is not clear
            // from the log: not judged.
            let Some(stored) = vs
                .iter()
                .rev()
                .find(|x| x.at_ns <= *acquired_ns)
                .and_then(|x| x.doc.as_ref().map(|d| (x, d)))
                .filter(|(_, d)| d.by == host && d.owner.as_deref() == Some(host))
            else {
                continue;
            };
            // The first read of the lease in this acquisition (none if the
            // host stopped it or acquired it again first).
            let first = es[i + 1..].iter().find_map(|(at, e)| match e {
                ProcessorEvent::Read { lease: l, from, .. } if l == lease => {
                    Some(Some((*at, *from)))
                }
                ProcessorEvent::Stopped { lease: l, .. }
                | ProcessorEvent::Acquired { lease: l, .. }
                    if l == lease =>
                {
                    Some(None)
                }
                _ => None,
            });
            let Some(Some((read_ns, from))) = first else {
                continue;
            };
            judged += 1;
            let (stored_at, doc) = stored;
            if from == doc.continuation {
                continue;
            }
            let shown: Vec<&LeaseVersion> = vs
                .iter()
                .filter(|x| x.at_ns <= *acquired_ns)
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            v.push(
                violation(
                    "CF13",
                    format!(
                        "{host} acquired lease {lease} at {} with its checkpoint at {} and read it from {} at {}",
                        secs(*acquired_ns),
                        lsn_words(doc.continuation),
                        lsn_words(from),
                        secs(read_ns)
                    ),
                )
                .at(processing(node), *acquired_ns, format!("{host} acquires lease {lease}"))
                .at(processing(node), read_ns, format!("reads from {}", lsn_words(from)))
                .with_evidence(lease_account(
                    format!("Lease {lease} when {host} acquired it"),
                    format!(
                        "The versions of lease {lease}'s document up to {host}'s acquire (marked): a host resumes a lease from its stored checkpoint, {}, and {host} read from {}.",
                        lsn_words(doc.continuation),
                        lsn_words(from)
                    ),
                    lease_rows(*lease, shown, stored_at.at_ns),
                )),
            );
        }
    }
    judged
}
