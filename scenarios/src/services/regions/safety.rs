//! Raft's safety properties, judged from what the replicas announced and
//! applied (their `primary` and `applied` node events), not from any switch
//! or internal state of the model:
//!
//! - **election safety**: at most one replica (a node, whichever its
//!   incarnation: `replica-1#1` is `replica-1`) announces itself primary of
//!   a partition in a term;
//! - **state machine safety**: no two replicas (nor one replica at two times,
//!   across restarts and rebuilds) apply different entries at the same LSN
//!   of a partition. An entry is its term and a digest of its effect, as the
//!   replica reported them; since every replica's applied state is a prefix
//!   of the log, this is also "a replica's applied prefix never changes"
//!   and, for the read replicas, "they apply only what the replica set
//!   committed".
//!
//! A history without any `applied` event (recorded before replicas reported
//! them) is judged for election safety only, and the note says so.

use super::history::{RegionEvent, RegionsHistory};
use super::properties::{ELECTION_SAFETY, STATE_MACHINE_SAFETY};
use overcast_sim::check::{Checked, Checker, Evidence, EvidenceRow, Verdict, Violation};
use overcast_sim::history::NodeEvent;
use overcast_sim::timeline::secs;
use std::collections::BTreeMap;

/// The checker of election safety and state machine safety.
#[derive(Clone, Copy, Debug, Default)]
pub struct RaftSafety;

/// The node an incarnation name belongs to: `replica-1#2` → `replica-1`.
pub fn node_of(incarnation: &str) -> &str {
    incarnation
        .split_once('#')
        .map_or(incarnation, |(node, _)| node)
}

/// Who reported what, for messages.
#[derive(Clone, Copy, Debug)]
struct Report<'a> {
    node: &'a str,
    at_ns: u64,
    term: u64,
    digest: u32,
}

impl Report<'_> {
    fn entry(&self) -> String {
        format!("term {} (digest {:08x})", self.term, self.digest)
    }
}

impl Checker<RegionsHistory> for RaftSafety {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[ELECTION_SAFETY, STATE_MACHINE_SAFETY]
    }

    fn check(&self, history: &RegionsHistory) -> Checked {
        let mut violations = Vec::new();
        // Election safety: the first announcer of each (partition, term).
        let mut primaries: BTreeMap<(u32, u64), (&str, u64)> = BTreeMap::new();
        let mut announced = 0usize;
        // Two primaries of one term are reported once per pair of nodes.
        let mut seen_pairs: BTreeMap<(u32, u64, &str), ()> = BTreeMap::new();
        // State machine safety: the first report of each (partition, LSN).
        let mut first: BTreeMap<(u32, u64), Report> = BTreeMap::new();
        // And each node's own first report of it (a changed prefix is told
        // against the node's own earlier entry).
        let mut own: BTreeMap<(u32, &str, u64), Report> = BTreeMap::new();
        // Per partition: the first disagreement found and how many LSNs disagree.
        let mut conflicts: BTreeMap<u32, (u64, Report, Report, usize)> = BTreeMap::new();
        let mut applied = 0usize;
        for e in in_time_order(history) {
            match &e.event {
                RegionEvent::Primary { partition, term } => {
                    announced += 1;
                    let (node, at) = *primaries
                        .entry((*partition, *term))
                        .or_insert((e.node.as_str(), e.at_ns));
                    if node_of(node) != node_of(&e.node)
                        && seen_pairs
                            .insert((*partition, *term, node_of(&e.node)), ())
                            .is_none()
                    {
                        violations.push(
                            Violation::new(
                                ELECTION_SAFETY.id,
                                format!(
                                    "partition {partition}, term {term}: {node} announced itself primary at {} and {} announced itself primary of the same term at {}: two primaries in one term",
                                    secs(at),
                                    e.node,
                                    secs(e.at_ns)
                                ),
                            )
                            .at(node.to_string(), at, format!("primary of term {term}"))
                            .at(e.node.clone(), e.at_ns, format!("primary of term {term}"))
                            .with_evidence(primaries_account(history, *partition, *term)),
                        );
                    }
                }
                RegionEvent::Applied { partition, entries } => {
                    for a in entries {
                        applied += 1;
                        let now = Report {
                            node: &e.node,
                            at_ns: e.at_ns,
                            term: a.term,
                            digest: a.digest,
                        };
                        let mine = *own
                            .entry((*partition, node_of(&e.node), a.lsn))
                            .or_insert(now);
                        let anyone = *first.entry((*partition, a.lsn)).or_insert(now);
                        let differs = |r: &Report| (r.term, r.digest) != (a.term, a.digest);
                        let was = if differs(&mine) { mine } else { anyone };
                        if differs(&was) {
                            conflicts
                                .entry(*partition)
                                .and_modify(|c| c.3 += 1)
                                .or_insert((a.lsn, was, now, 1));
                        }
                    }
                }
                RegionEvent::Final { .. }
                | RegionEvent::Route { .. }
                | RegionEvent::Refused { .. } => {}
            }
        }
        for (partition, (lsn, was, now, n)) in conflicts {
            let same = node_of(was.node) == node_of(now.node);
            let mut message = format!(
                "partition {partition}, LSN {lsn}: {} applied the entry of {} there at {}, but {} applied the entry of {} at {}: {}",
                was.node,
                was.entry(),
                secs(was.at_ns),
                now.node,
                now.entry(),
                secs(now.at_ns),
                if same {
                    "one replica's applied prefix changed"
                } else {
                    "two replicas applied different entries at one LSN"
                }
            );
            if n > 1 {
                message.push_str(&format!(
                    " ({} more applied entries of the partition disagree with an earlier one)",
                    n - 1
                ));
            }
            violations.push(
                Violation::new(STATE_MACHINE_SAFETY.id, message)
                    .at(
                        was.node.to_string(),
                        was.at_ns,
                        format!("applied LSN {lsn}: {}", was.entry()),
                    )
                    .at(
                        now.node.to_string(),
                        now.at_ns,
                        format!("applied LSN {lsn}: {}", now.entry()),
                    )
                    .with_evidence(applied_account(history, partition, lsn)),
            );
        }
        let mut note = format!(
            "{announced} primaries announced in {} partition terms; {applied} applied entries over {} LSNs compared",
            primaries.len(),
            first.len()
        );
        if applied == 0 {
            note.push_str("; state machine safety not judged: no applied entries recorded");
        }
        Checked::new(Verdict::from_violations(violations))
            .with_note(note)
            .partly(applied == 0)
    }
}

/// The events of `history` in true time order.
fn in_time_order(history: &RegionsHistory) -> Vec<&NodeEvent<RegionEvent>> {
    let mut events = history.node_events.iter().collect::<Vec<_>>();
    events.sort_by_key(|e| e.at_ns);
    events
}

/// Election safety's focused account: every replica's announcement that
/// it was primary of `partition` in the terms around `term`, in true time;
/// those of `term` marked.
fn primaries_account(history: &RegionsHistory, partition: u32, term: u64) -> Evidence {
    let rows = in_time_order(history)
        .into_iter()
        .filter_map(|e| match &e.event {
            RegionEvent::Primary {
                partition: p,
                term: t,
            } if *p == partition && t.abs_diff(term) <= 1 => Some(EvidenceRow {
                op: None,
                cells: vec![
                    secs(e.at_ns),
                    e.node.clone(),
                    format!("primary of term {t}"),
                ],
                marked: *t == term,
            }),
            _ => None,
        })
        .collect();
    Evidence {
        title: format!("The primaries of partition {partition} around term {term}"),
        lead: vec![format!(
            "Every replica that announced itself primary of partition {partition} in terms {} to {}, in true time: a replica becomes primary of a term only with a majority's votes, and a replica votes once in a term, so a term has one primary.",
            term.saturating_sub(1),
            term + 1
        )],
        columns: ["when", "replica", "announced"].map(String::from).to_vec(),
        rows,
        notes: Vec::new(),
    }
}

/// State machine safety's focused account: every replica's application of
/// LSN `lsn` of `partition`, in true time, with the applications of the
/// entry the log did not keep marked. The kept entry is the one of the
/// highest term (a later term's entry replaces only an uncommitted one),
/// and of two entries of one term the one more nodes applied: the marked
/// rows are what the failure is about, e.g. the uncommitted entry a reader
/// was shipped and applied before a failover replaced it.
fn applied_account(history: &RegionsHistory, partition: u32, lsn: u64) -> Evidence {
    let all: Vec<Report> = in_time_order(history)
        .into_iter()
        .filter_map(|e| match &e.event {
            RegionEvent::Applied {
                partition: p,
                entries,
            } if *p == partition => entries.iter().find(|a| a.lsn == lsn).map(|a| Report {
                node: &e.node,
                at_ns: e.at_ns,
                term: a.term,
                digest: a.digest,
            }),
            _ => None,
        })
        .collect();
    // Each entry (term, digest) with the nodes that applied it.
    let mut appliers: BTreeMap<(u64, u32), Vec<&str>> = BTreeMap::new();
    for r in &all {
        let nodes = appliers.entry((r.term, r.digest)).or_default();
        if !nodes.contains(&r.node) {
            nodes.push(r.node);
        }
    }
    let kept = appliers
        .iter()
        .max_by_key(|((term, _), nodes)| (*term, nodes.len()))
        .map(|(entry, _)| *entry);
    let is_kept = |r: &Report| Some((r.term, r.digest)) == kept;
    let rows = all
        .iter()
        .map(|r| EvidenceRow {
            op: None,
            cells: vec![secs(r.at_ns), r.node.to_string(), r.entry()],
            marked: !is_kept(r),
        })
        .take(16)
        .collect();
    let mut lead = vec![format!(
        "Every time a replica or reader applied LSN {lsn} of partition {partition}, in true time, with the entry (its term and the digest of its effect). A replica applies an entry only once it is committed, and a committed entry is never replaced, so every application of an LSN is of one entry."
    )];
    let nodes = |term: u64, digest: u32| appliers[&(term, digest)].join(", ");
    if let Some(k) = all.iter().find(|r| is_kept(r)) {
        // The entries not kept, each at its first application.
        let mut told: Vec<(u64, u32)> = Vec::new();
        for r in all.iter().filter(|r| !is_kept(r)) {
            if told.contains(&(r.term, r.digest)) {
                continue;
            }
            told.push((r.term, r.digest));
            let why = if k.term > r.term {
                format!(
                    " An entry a later term replaces was never committed, so {} applied an uncommitted entry (or the replica set lost a committed one).",
                    nodes(r.term, r.digest)
                )
            } else {
                String::new()
            };
            lead.push(format!(
                "Marked: {} applied {} at LSN {lsn} from {}, an entry the log did not keep: {} replaced it, applied from {} by {}.{why}",
                nodes(r.term, r.digest),
                r.entry(),
                secs(r.at_ns),
                k.entry(),
                secs(k.at_ns),
                nodes(k.term, k.digest),
            ));
        }
    }
    Evidence {
        title: format!("LSN {lsn} of partition {partition} as the replicas applied it"),
        lead,
        columns: ["when", "replica", "entry"].map(String::from).to_vec(),
        rows,
        notes: Vec::new(),
    }
}
