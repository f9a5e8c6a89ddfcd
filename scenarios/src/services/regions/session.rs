//! R5, the session guarantees (SPEC §4.4, §4.5): within one client session,
//! a session-consistency read returns a version no older than any version
//! the session has written or read before it (read-your-writes, monotonic
//! reads), or fails (404/1002, 503); and a write issued after a read is
//! ordered after the version read (write-follows-reads).
//!
//! A session is a client incarnation ([`session_of`]): a recreated client
//! has lost its tokens. What the session "has seen" is its acknowledged
//! writes and its session-consistency reads that returned before the op was
//! invoked; strong and eventual reads do not count (whether the SDK merges
//! their tokens is a model choice, and a check must not depend on it).
//! Versions are ordered from the outside ([`ItemOrder`]): If-Match chains
//! first, real time between writes where chains do not decide; session
//! tokens appear in messages only. A read whose order against what the
//! session saw cannot be established is not judged and is counted in the note.

use super::history::{
    item_orders, may_have_applied, session_of, Consistency, ItemOrder, Order, RegionOp,
    RegionOutcome, RegionsHistory, Version,
};
use overcast_sim::check::{Checked, Checker, Evidence, EvidenceRow, Verdict, Violation};
use overcast_sim::timeline::secs;
use std::collections::BTreeMap;

/// The R5 checker.
#[derive(Clone, Copy, Debug, Default)]
pub struct SessionGuarantees;

/// A version a session has seen.
struct Seen<'a> {
    node: usize,
    op: &'a RegionOp,
    returned_ns: u64,
}

impl Seen<'_> {
    fn how(&self) -> &'static str {
        if self.op.call.is_write() {
            "its write"
        } else {
            "its read"
        }
    }
}

/// What one pass over the sessions found.
#[derive(Default)]
struct Tally {
    sessions: usize,
    judged: usize,
    unordered: usize,
    unknown: usize,
    violations: Vec<Violation>,
}

impl Checker<RegionsHistory> for SessionGuarantees {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::services::regions::properties::R5]
    }

    fn check(&self, history: &RegionsHistory) -> Checked {
        let orders = item_orders(history);
        let mut sessions: BTreeMap<String, Vec<&RegionOp>> = BTreeMap::new();
        for op in &history.ops {
            sessions.entry(session_of(op)).or_default().push(op);
        }
        let mut t = Tally {
            sessions: sessions.len(),
            ..Tally::default()
        };
        for (session, ops) in &sessions {
            check_session(session, ops, history, &orders, &mut t);
        }
        let mut note = format!(
            "{} sessions, {} reads and writes judged",
            t.sessions, t.judged
        );
        if t.unordered + t.unknown > 0 {
            note.push_str(&format!(
                "; not judged: {} whose order against what the session saw is not established, {} of a version no write names",
                t.unordered, t.unknown
            ));
        }
        let violations = t
            .violations
            .into_iter()
            .map(|v| {
                let account = session_account(history, &v.ops);
                v.with_evidence(account)
            })
            .collect();
        Checked::new(Verdict::from_violations(violations))
            .with_note(note)
            .partly(t.unordered + t.unknown > 0)
    }
}

/// What a session did with an item up to the operation a violation is
/// about (the first of `named`): its calls on the item in order (the last
/// ten), each with when it ran in true time, its answer and who answered;
/// the operations the violation names marked.
fn session_account(history: &RegionsHistory, named: &[u64]) -> Evidence {
    let Some(op) = named
        .first()
        .and_then(|id| history.ops.iter().find(|o| o.id == *id))
    else {
        return Evidence::default();
    };
    let session = session_of(op);
    let calls: Vec<&RegionOp> = history
        .ops
        .iter()
        .filter(|o| o.call.item == op.call.item && session_of(o) == session)
        .filter(|o| o.invoke_ns <= op.invoke_ns)
        .collect();
    let skipped = calls.len().saturating_sub(10);
    Evidence {
        title: format!("Session {session} and item {}", op.call.item),
        lead: vec![format!(
            "The calls session {session} made on {} up to operation #{}{}, in true simulated time: a session-consistency read returns a version no older than the session has seen.",
            op.call.item,
            op.id,
            if skipped > 0 {
                format!(" (the last {}, after {skipped} earlier ones)", calls.len() - skipped)
            } else {
                String::new()
            }
        )],
        columns: ["operation", "ran", "call and answer", "session token", "answered by"]
            .map(String::from)
            .to_vec(),
        rows: calls[skipped..]
            .iter()
            .map(|o| EvidenceRow {
                op: Some(o.id),
                cells: vec![
                    format!("#{}", o.id),
                    format!(
                        "{}–{}",
                        secs(o.invoke_ns),
                        o.return_ns.map_or("no answer".to_string(), secs)
                    ),
                    format!(
                        "{} ({})",
                        super::timeline::words(&o.call, o.result.as_ref()).0,
                        o.call.consistency.word()
                    ),
                    o.call.session_token.clone().unwrap_or_else(|| "none".to_string()),
                    answered(o),
                ],
                marked: named.contains(&o.id),
            })
            .collect(),
        notes: Vec::new(),
    }
}

fn check_session(
    session: &str,
    ops: &[&RegionOp],
    history: &RegionsHistory,
    orders: &BTreeMap<String, ItemOrder>,
    t: &mut Tally,
) {
    let mut seen: BTreeMap<&str, Vec<Seen>> = BTreeMap::new();
    for &op in ops {
        let (Some(res), Some(ret)) = (&op.result, op.return_ns) else {
            continue;
        };
        let item = op.call.item.as_str();
        let order = &orders[item];
        let prior: Vec<&Seen> = seen
            .get(item)
            .map(|s| s.iter().filter(|s| s.returned_ns < op.invoke_ns).collect())
            .unwrap_or_default();
        let node = if op.call.is_write() {
            if !res.is_success() {
                continue;
            }
            if op.call.op == "delete" {
                order.deleted(op.id)
            } else {
                res.etag().and_then(|e| order.etag(e))
            }
        } else {
            if op.call.consistency != Consistency::Session {
                continue;
            }
            match res {
                RegionOutcome::Ok { .. } if res.is_success() => {
                    res.etag().and_then(|e| order.etag(e))
                }
                RegionOutcome::Failed {
                    status: 404,
                    sub_status: 0,
                    ..
                } => {
                    judge_absent(session, op, &prior, history, order, t);
                    continue;
                }
                _ => continue,
            }
        };
        let Some(node) = node else {
            t.unknown += 1;
            continue;
        };
        let mut unordered = false;
        let mut broken = None;
        for s in &prior {
            match order.order(node, s.node) {
                Order::Before(basis) => {
                    broken = Some((s, basis));
                    break;
                }
                Order::Unordered | Order::Contradictory => unordered = true,
                Order::Same | Order::After(_) => {}
            }
        }
        if let Some((s, basis)) = broken {
            t.violations
                .push(violation(session, op, node, s, order, basis.words()));
            t.judged += 1;
        } else if unordered {
            t.unordered += 1;
        } else if !prior.is_empty() {
            t.judged += 1;
        }
        seen.entry(item).or_default().push(Seen {
            node,
            op,
            returned_ns: ret,
        });
    }
}

/// A session read found no item (404/0). That is older than an existing
/// version the session saw only when every absence the item could be in
/// lies before that version: the state before its first create always does;
/// an acknowledged delete must be ordered before it; a delete of unknown
/// outcome cannot be placed, so the read is then not judged.
fn judge_absent(
    session: &str,
    op: &RegionOp,
    prior: &[&Seen],
    history: &RegionsHistory,
    order: &ItemOrder,
    t: &mut Tally,
) {
    let mut seen_versions = prior
        .iter()
        .filter(|s| matches!(order.version(s.node), Version::Etag(_)))
        .peekable();
    if seen_versions.peek().is_none() {
        return;
    }
    let deletes: Vec<&RegionOp> = history
        .ops
        .iter()
        .filter(|d| d.call.item == op.call.item && d.call.op == "delete" && may_have_applied(d))
        .collect();
    for s in seen_versions {
        let all_before = deletes.iter().all(|d| {
            order
                .deleted(d.id)
                .is_some_and(|dn| matches!(order.order(dn, s.node), Order::Before(_)))
        });
        if all_before {
            t.judged += 1;
            t.violations.push(Violation::new(
                "R5",
                format!(
                    "session {session}, item {}: read op {} (session token {}, answered by {}) found no item (404) \
                     although the session had seen {} via {} op {} (returned at {}), and no delete of the item \
                     can have come after that version",
                    op.call.item,
                    op.id,
                    token(op),
                    answered(op),
                    order.version(s.node),
                    s.how(),
                    s.op.id,
                    secs(s.returned_ns),
                ),
            )
            .with_ops([op.id, s.op.id]));
            return;
        }
    }
    t.unordered += 1;
}

fn token(op: &RegionOp) -> String {
    op.call
        .session_token
        .as_deref()
        .map(|t| t.to_string())
        .unwrap_or_else(|| "none".into())
}

fn answered(op: &RegionOp) -> String {
    op.result
        .as_ref()
        .map(|r| r.answered_by())
        .unwrap_or_else(|| "-".into())
}

fn violation(
    session: &str,
    op: &RegionOp,
    node: usize,
    seen: &Seen,
    order: &ItemOrder,
    basis: &str,
) -> Violation {
    let message = if op.call.is_write() {
        format!(
            "session {session}, item {}: write-follows-reads broken: write op {} ({}), issued after the session \
             had seen {} via {} op {} (returned at {}), produced {}, which comes before it {basis}",
            op.call.item,
            op.id,
            op.call.op,
            order.version(seen.node),
            seen.how(),
            seen.op.id,
            secs(seen.returned_ns),
            order.version(node),
        )
    } else {
        format!(
            "session {session}, item {}: read op {} (session token {}, answered by {}) returned {}, older than \
             {} the session had seen via {} op {} (returned at {}); the order is {basis}",
            op.call.item,
            op.id,
            token(op),
            answered(op),
            order.version(node),
            order.version(seen.node),
            seen.how(),
            seen.op.id,
            secs(seen.returned_ns),
        )
    };
    Violation::new("R5", message).with_ops([op.id, seen.op.id])
}
