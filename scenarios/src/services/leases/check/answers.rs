//! L5 for the lease actions the server refused: each refusal's code against
//! the one SPEC §2.3 gives in the state the server's log shows, at the
//! server's clock reading the answer carries. The log walk judges the
//! actions that were granted; without this a refusal where the table grants
//! (or the wrong refusal) would pass.

use super::*;

/// The codes of the §2.3 action table's refusals: only answers with one of
/// these are the lease table's to judge (a 404 for a missing blob, a 400, a
/// throttle or a server error are not).
const TABLE_CODES: [&str; 6] = [
    "LeaseAlreadyPresent",
    "LeaseIdMismatchWithLeaseOperation",
    "LeaseNotPresentWithLeaseOperation",
    "LeaseIsBreakingAndCannotBeAcquired",
    "LeaseIsBreakingAndCannotBeChanged",
    "LeaseIsBrokenAndCannotBeRenewed",
];

/// The lease action a call asked for, from its headers; `None` for calls
/// that are not lease actions.
fn action_of(c: &Call) -> Option<LeaseAction> {
    let lease_id = || c.lease_id.clone().unwrap_or_default();
    Some(match c.op.as_str() {
        "acquire" => LeaseAction::Acquire {
            duration: c.duration_s,
            proposed_id: c.proposed_id.clone(),
        },
        "renew" => LeaseAction::Renew {
            lease_id: lease_id(),
        },
        "change" => LeaseAction::Change {
            lease_id: lease_id(),
            proposed_id: c.proposed_id.clone(),
        },
        "release" => LeaseAction::Release {
            lease_id: lease_id(),
        },
        "break" => LeaseAction::Break {
            break_period: c.break_period_s,
        },
        _ => return None,
    })
}

/// A record a crash took from a server's log: what it was about (a blob or
/// container name) and when it was written and lost (true ns). While it
/// was in memory, the server answered from a state the surviving log no
/// longer shows.
struct Lost {
    target: String,
    written_ns: u64,
    lost_ns: u64,
}

/// The name of what a log record is about.
fn target_of(effect: &Effect) -> Option<String> {
    match effect {
        Effect::Lease(lease::Effect::Set { target, .. }) => Some(target.name()),
        Effect::Lease(lease::Effect::ContainerDeleted { container, .. }) => Some(container.clone()),
        Effect::Store(store::Effect::ItemWritten { key, .. })
        | Effect::Store(store::Effect::ItemDeleted { key, .. }) => {
            Some(format!("{}/{}", key.container, key.id))
        }
        _ => None,
    }
}

/// Every record that a recovery dropped, per server (the records
/// [`server_log`] leaves out).
fn lost_records(h: &LeaseHistory) -> Vec<Lost> {
    let mut per: BTreeMap<&str, Vec<(u64, Option<String>)>> = BTreeMap::new();
    let mut lost = Vec::new();
    for e in &h.node_events {
        let node = e.node.split('#').next().unwrap_or(&e.node);
        match &e.event {
            LeaseEvent::Logged { effect, .. } => {
                per.entry(node)
                    .or_default()
                    .push((e.at_ns, target_of(effect)));
            }
            LeaseEvent::Recovered { kept } => {
                let records = per.entry(node).or_default();
                let kept = (*kept as usize).min(records.len());
                for (written_ns, target) in records.drain(kept..) {
                    if let Some(target) = target {
                        lost.push(Lost {
                            target,
                            written_ns,
                            lost_ns: e.at_ns,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    lost
}

/// Whether a lost record about `lost` bears on `target` (a container's
/// record bears on its blobs).
fn bears_on(lost: &str, target: &str) -> bool {
    target == lost
        || target
            .strip_prefix(lost)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// L5 for every refused lease action that can be judged; the number judged.
///
/// A refusal is judged when the state it was decided in is known: no
/// record on its target was written while the call ran (a grant of its own
/// earlier attempt, or another caller's action, would make the state at its
/// answer uncertain), no record the server held in memory then was later
/// lost to a crash, and the answer carries the server's clock reading. The
/// reference then gives exactly one answer; it must be the one given. The
/// acquire the table grants but the server refused with
/// `LeaseAlreadyPresent` on an expired or broken lease is L6's (the
/// embargo), not judged again here.
pub(super) fn judge_refusals(
    h: &LeaseHistory,
    log: &[Entry],
    timeline: &LeaseTimeline,
    a: &mut Analysis,
) -> usize {
    let lost = lost_records(h);
    let mut judged = 0;
    for op in &h.ops {
        let (Some(r), Some(ret)) = (&op.result, op.return_ns) else {
            continue;
        };
        let Some(code) = r.code.as_deref().filter(|c| TABLE_CODES.contains(c)) else {
            continue;
        };
        let (Some(action), Some(server_ms)) = (action_of(&op.call), r.server_ms) else {
            continue;
        };
        let target = &op.call.target;
        let line = timeline.get(target).map(Vec::as_slice).unwrap_or(&[]);
        if line
            .iter()
            .any(|(at, ..)| *at >= op.invoke_ns && *at <= ret)
        {
            continue;
        }
        if lost.iter().any(|l| {
            bears_on(&l.target, target) && l.written_ns <= ret && l.lost_ns >= op.invoke_ns
        }) {
            continue;
        }
        let before = line
            .iter()
            .rev()
            .find(|(at, ..)| *at < op.invoke_ns)
            .and_then(|(.., l)| l.clone());
        let st = reference::state(before.as_ref(), server_ms);
        let want = reference::step(before.as_ref(), &action, server_ms, "");
        if matches!(action, LeaseAction::Acquire { .. })
            && code == "LeaseAlreadyPresent"
            && want.is_ok()
        {
            continue; // L6's
        }
        judged += 1;
        let should = match want {
            Err(want) if want == code => continue,
            Err(want) => format!("refuses it with 409 {want}"),
            Ok(_) => "grants it".to_string(),
        };
        let held = before
            .as_ref()
            .map(|l| format!(" under {}", short(&l.id)))
            .unwrap_or_default();
        let asked = match op.call.lease_id.as_deref() {
            Some(id) => format!("{} with lease {}", action.name(), short(id)),
            None => action.name().to_string(),
        };
        let answered = format!("{} {code}", r.status);
        a.violations.push(
            violation(
                "L5",
                format!(
                    "{asked} of {target}, answered at {} true ({} on the server's clock), was refused with {answered}; the lease was {}{held} and SPEC §2.3 {should} there",
                    secs(ret),
                    clock_secs(server_ms),
                    st.word(),
                ),
                vec![op.id],
            )
            .with_evidence(lease_log_then(
                log,
                target,
                op.invoke_ns,
                &|_| false,
                Some(request_row(ret, Some(server_ms), asked, answered, Some(op.id))),
            )),
        );
    }
    judged
}
