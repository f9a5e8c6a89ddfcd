//! Convergence, the eventual-consistency check: every read returns a
//! version some write produced (no phantom bodies or ETags), and after heal
//! and quiet every replica's final state equals its primary's (same applied
//! LSN, same items, per partition).
//!
//! The end state is judged only when the run ended settled: a `Final` from
//! every replica of the partition (as many as its `replicas` field says) and
//! one of them a primary. Otherwise the note says which partitions were not
//! judged; that is not a pass of the end-state half, only of the phantom half.
//! Nor is a partition whose primary announced itself less than
//! [`SETTLE_MS`] before the end: its read replicas may not have been
//! shipped its first entries yet. (A failed log sync in the quiet phase used
//! to rebuild a replica as a follower and a new primary was elected then;
//! syncs no longer fail after the heal, and the rule stays so that an
//! election late for any other reason is not read as divergence.)

use super::history::{FinalItem, RegionEvent, RegionOp, RegionsHistory};
use overcast_sim::check::{Checked, Checker, Verdict, Violation};
use overcast_sim::timeline::secs;
use overcast_sim::world::Happening;
use std::collections::BTreeMap;

/// How long before the end of the run a partition's primary must have
/// announced itself for the end state to be judged: past the default
/// shipping interval (300 ms) and a datagram's latency.
pub const SETTLE_MS: u64 = 1_000;

/// The convergence checker.
#[derive(Clone, Copy, Debug, Default)]
pub struct Convergence;

/// A replica's `Final` event, flattened.
#[derive(Clone, Debug)]
pub struct FinalState<'a> {
    /// The replica (incarnation name).
    pub node: &'a str,
    /// Its region.
    pub region: &'a str,
    /// Its role at the end.
    pub role: &'a str,
    /// Its term.
    pub term: u64,
    /// The LSN it has applied.
    pub applied_lsn: u64,
    /// Its items.
    pub items: &'a [FinalItem],
    /// The partition's replica count as deployed (0: unknown).
    pub replicas: u32,
}

/// Every replica's last `Final`, by partition then node.
pub fn finals(history: &RegionsHistory) -> BTreeMap<u32, BTreeMap<&str, FinalState<'_>>> {
    let mut out: BTreeMap<u32, BTreeMap<&str, FinalState>> = BTreeMap::new();
    for e in &history.node_events {
        if let RegionEvent::Final {
            partition,
            region,
            role,
            term,
            applied_lsn,
            items,
            replicas,
        } = &e.event
        {
            out.entry(*partition).or_default().insert(
                e.node.as_str(),
                FinalState {
                    node: &e.node,
                    region,
                    role,
                    term: *term,
                    applied_lsn: *applied_lsn,
                    items,
                    replicas: *replicas,
                },
            );
        }
    }
    out
}

/// The partition's primary at the end (the `primary` with the highest term,
/// the first by node name among equals), when the partition settled: every
/// replica reported. `Err` says why it did not.
pub fn settled_primary<'a, 'b>(
    partition: u32,
    replicas: &'b BTreeMap<&'a str, FinalState<'a>>,
) -> Result<&'b FinalState<'a>, String> {
    let expected = replicas.values().map(|f| f.replicas).max().unwrap_or(0);
    if expected == 0 {
        return Err(format!("partition {partition}: replica count unknown"));
    }
    if replicas.len() < expected as usize {
        return Err(format!(
            "partition {partition}: {} of {expected} replicas reported a final state",
            replicas.len()
        ));
    }
    replicas
        .values()
        .filter(|f| f.role == "primary")
        .min_by_key(|f| std::cmp::Reverse(f.term))
        .ok_or_else(|| format!("partition {partition}: no primary at the end"))
}

impl Checker<RegionsHistory> for Convergence {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::services::regions::properties::CONVERGENCE]
    }

    fn check(&self, history: &RegionsHistory) -> Checked {
        let (mut violations, reads) = phantoms(history);
        let finals = finals(history);
        let mut unsettled = Vec::new();
        let mut judged = 0;
        let end = history
            .events
            .iter()
            .find(|e| e.what == Happening::End)
            .map_or(0, |e| e.at_ns);
        for (partition, replicas) in &finals {
            let primary = match settled_primary(*partition, replicas) {
                Ok(p) => p,
                Err(why) => {
                    unsettled.push(why);
                    continue;
                }
            };
            if let Some(at) = announced(history, *partition, primary) {
                if at + SETTLE_MS * 1_000_000 > end {
                    unsettled.push(format!(
                        "partition {partition}: its primary {} announced itself for term {} at {}, less than {SETTLE_MS} ms before the end",
                        primary.node,
                        primary.term,
                        secs(at)
                    ));
                    continue;
                }
            }
            judged += 1;
            for f in replicas.values() {
                if f.node != primary.node {
                    if let Some(v) = differs(*partition, primary, f) {
                        violations.push(
                            v.at(f.node, end, format!("applied LSN {}", f.applied_lsn))
                                .at(
                                    primary.node,
                                    end,
                                    format!("primary at LSN {}", primary.applied_lsn),
                                ),
                        );
                    }
                }
            }
        }
        let mut note =
            format!("{reads} reads have a writer; {judged} partitions converged-checked");
        if finals.is_empty() {
            note.push_str("; end state not judged: no final states recorded");
        } else if !unsettled.is_empty() {
            note.push_str(&format!(
                "; end state not judged (run not settled): {}",
                unsettled.join(", ")
            ));
            if let Some(why) = refusals(history) {
                note.push_str(&format!(" ({why})"));
            }
        }
        Checked::new(Verdict::from_violations(violations))
            .with_note(note)
            .partly(finals.is_empty() || !unsettled.is_empty())
    }
}

/// The replicas that refused service (every copy of their log corrupt, past
/// the fault budget) and when, in words: why some reported no final state.
pub fn refusals(history: &RegionsHistory) -> Option<String> {
    let each: Vec<String> = history
        .node_events
        .iter()
        .filter_map(|e| match &e.event {
            RegionEvent::Refused { reason } => Some(format!(
                "{} refused service from {} ({reason})",
                e.node,
                secs(e.at_ns)
            )),
            _ => None,
        })
        .collect();
    (!each.is_empty()).then(|| each.join("; "))
}

/// When `primary` announced itself primary of `partition` for its final
/// term, if the history holds it.
fn announced(history: &RegionsHistory, partition: u32, primary: &FinalState) -> Option<u64> {
    history.node_events.iter().find_map(|e| match &e.event {
        RegionEvent::Primary { partition: p, term }
            if *p == partition && *term == primary.term && e.node == primary.node =>
        {
            Some(e.at_ns)
        }
        _ => None,
    })
}

/// Reads (any consistency) whose body no write of the item produced, whose
/// only writer was invoked after the read returned, or whose ETag is not the
/// one the writer was acknowledged with. Bodies are unique per write, so a
/// body names its write. Returns the violations and the count of reads
/// that were checked.
fn phantoms(history: &RegionsHistory) -> (Vec<Violation>, usize) {
    let mut writers: BTreeMap<(&str, &str), Vec<&RegionOp>> = BTreeMap::new();
    for op in &history.ops {
        if let (true, Some(b)) = (op.call.is_write(), op.call.body.as_deref()) {
            writers.entry((&op.call.item, b)).or_default().push(op);
        }
    }
    let mut violations = Vec::new();
    let mut reads = 0;
    for op in &history.ops {
        let Some(res) = op.result.as_ref().filter(|r| r.is_success()) else {
            continue;
        };
        let (false, Some(body), Some(ret)) = (op.call.is_write(), res.body(), op.return_ns) else {
            continue;
        };
        reads += 1;
        let etag = res.etag().unwrap_or("-");
        let head = format!(
            "item {}: {} read op {} (answered by {}) returned body {body:?} with ETag {etag}",
            op.call.item,
            op.call.consistency.word(),
            op.id,
            res.answered_by()
        );
        let ws = writers
            .get(&(op.call.item.as_str(), body))
            .map(Vec::as_slice)
            .unwrap_or_default();
        let message = if ws.is_empty() {
            format!("{head}, which no write of the item produced (a phantom)")
        } else if ws.iter().all(|w| w.invoke_ns > ret) {
            format!(
                "{head} at {}, before its write op {} was invoked at {} (a phantom)",
                secs(ret),
                ws[0].id,
                secs(ws[0].invoke_ns)
            )
        } else if let ([w], Some(acked)) = (ws, ws[0].result.as_ref().and_then(|r| r.etag())) {
            if ws[0].result.as_ref().is_some_and(|r| r.is_success()) && acked != etag {
                format!(
                    "{head}, but its write op {} was acknowledged with ETag {acked}: one write, two versions",
                    w.id
                )
            } else {
                continue;
            }
        } else {
            continue;
        };
        let ops = std::iter::once(op.id).chain(ws.iter().map(|w| w.id));
        violations.push(Violation::new("convergence", message).with_ops(ops));
    }
    (violations, reads)
}

/// How replica `f` differs from the primary `p`, if it does.
fn differs(partition: u32, p: &FinalState, f: &FinalState) -> Option<Violation> {
    let sorted = |items: &[FinalItem]| {
        let mut v = items.to_vec();
        v.sort();
        v
    };
    let (pi, fi) = (sorted(p.items), sorted(f.items));
    if p.applied_lsn == f.applied_lsn && pi == fi {
        return None;
    }
    let by_id = |v: &[FinalItem]| -> BTreeMap<String, (String, String)> {
        v.iter()
            .map(|i| (i.item.clone(), (i.etag.clone(), i.body.clone())))
            .collect()
    };
    let (pm, fm) = (by_id(&pi), by_id(&fi));
    let mut ids: Vec<&String> = pm.keys().chain(fm.keys()).collect();
    ids.sort();
    ids.dedup();
    let first = ids.into_iter().find(|k| pm.get(*k) != fm.get(*k)).map(|k| {
        let show = |x: Option<&(String, String)>| match x {
            Some((e, b)) => format!("ETag {e} body {b:?}"),
            None => "no item".to_string(),
        };
        format!(
            "; item {k}: primary has {}, replica has {}",
            show(pm.get(k)),
            show(fm.get(k))
        )
    });
    Some(Violation::new(
        "convergence",
        format!(
            "partition {partition}: after heal and quiet, replica {} ({}, {}, term {}) applied LSN {} with {} items, \
             but primary {} ({}, term {}) applied LSN {} with {} items{}",
            f.node,
            f.region,
            f.role,
            f.term,
            f.applied_lsn,
            fi.len(),
            p.node,
            p.region,
            p.term,
            p.applied_lsn,
            pi.len(),
            first.unwrap_or_default()
        ),
    ))
}
