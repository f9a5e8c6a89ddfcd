//! The answers the log walk does not see, against the reference: L5 for the
//! lease actions the server refused (each refusal's code against the one
//! SPEC §2.3 gives in the state the server's log shows, at the server's
//! clock reading the answer carries), and L2 for the reads, writes and
//! deletes of a blob answered by its lease (§2.5: every lease refusal, and
//! every read that succeeded, at any reading the server's clock can have had
//! while the call ran). The log walk judges what was granted and written;
//! without these, a refusal where a table grants (or the wrong refusal)
//! would pass.

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
pub(super) struct Lost {
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
        | Effect::Store(store::Effect::ItemWrittenWithMetadata { key, .. })
        | Effect::Store(store::Effect::ItemDeleted { key, .. }) => {
            Some(format!("{}/{}", key.container, key.id))
        }
        _ => None,
    }
}

/// Every record that a recovery dropped, per server (the records
/// [`server_log`] leaves out).
pub(super) fn lost_records(h: &LeaseHistory) -> Vec<Lost> {
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

/// Whether a call's state is known from the log: no record on `target`
/// while it ran (`invoke_ns..=ret`), and no record the server held then
/// that a crash later took.
pub(super) fn settled(
    line: &[(u64, u64, Option<RefLease>)],
    lost: &[Lost],
    target: &str,
    invoke_ns: u64,
    ret: u64,
) -> bool {
    !line.iter().any(|(at, ..)| *at >= invoke_ns && *at <= ret)
        && !lost
            .iter()
            .any(|l| bears_on(&l.target, target) && l.written_ns <= ret && l.lost_ns >= invoke_ns)
}

/// How many reads, writes and deletes [`judge_blob_answers`] judged, and how
/// many of them the clock bound left two answers for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlobAnswers {
    /// Judged.
    pub judged: usize,
    /// Judged where the lease changed state within the server's possible
    /// clock readings, so the table allowed the answers of both states.
    pub either: usize,
}

/// L2 for every read, write and delete of a blob whose lease state is
/// known (as [`judge_refusals`] asks, and no lease record before it, or the
/// server's clock bound known): a refusal with one of §2.5's codes must be
/// one the table gives, and a read that succeeded must be one it lets
/// through (writes and deletes that succeeded are judged from their log
/// records). The server's clock reading is not in these answers: from the
/// last record before the call, its reading lies between that record's,
/// plus the true time to the call's invocation less drift and a step, and
/// that record's plus the time to its return with drift and a step added.
/// Where the lease expires or its break ends within that range, the answers
/// of both states are allowed, and counted.
pub(super) fn judge_blob_answers(
    h: &LeaseHistory,
    records: &ServerRecords,
    timeline: &LeaseTimeline,
    a: &mut Analysis,
) -> BlobAnswers {
    let (log, lost, server_clock) = (&records.log[..], &records.lost[..], records.clock);
    let mut n = BlobAnswers::default();
    for op in &h.ops {
        let (Some(r), Some(ret)) = (&op.result, op.return_ns) else {
            continue;
        };
        let what = match op.call.op.as_str() {
            "put" | "delete" | "set_blob_metadata" => reference::BlobUse::Write,
            // A HEAD's refusal has no code (no body): only its 2xx are judged.
            "read" | "head" => reference::BlobUse::Read,
            _ => continue,
        };
        let code = r
            .code
            .as_deref()
            .filter(|c| reference::USE_CODES.contains(c));
        let read_through = what == reference::BlobUse::Read && r.is_success();
        if code.is_none() && !read_through {
            continue;
        }
        let target = &op.call.target;
        let line = timeline.get(target).map(Vec::as_slice).unwrap_or(&[]);
        if !settled(line, lost, target, op.invoke_ns, ret) {
            continue;
        }
        let last = record_before(line, op.invoke_ns);
        let before = last.and_then(|(.., l)| l.as_ref());
        // The server clock's readings while the call ran, and the instants
        // in between where the lease changes state.
        let readings: Vec<u64> = match (last, before) {
            (Some(&(at_ns, server_ms, _)), Some(l)) => {
                let Some(bound) = server_clock else { continue };
                let off = |ns: u64| {
                    let ms = ns.saturating_sub(at_ns) / 1_000_000;
                    (
                        ms,
                        ms * bound.max_drift_ppm / 1_000_000 + bound.max_step_ms + bound.slack_ms,
                    )
                };
                let (lo_ms, lo_err) = off(op.invoke_ns);
                let (hi_ms, hi_err) = off(ret);
                let lo = (server_ms + lo_ms).saturating_sub(lo_err);
                let hi = server_ms + hi_ms + hi_err;
                let mut at = vec![lo, hi];
                at.extend(
                    [l.expire_ms, l.break_ms]
                        .into_iter()
                        .flatten()
                        .filter(|t| (lo..=hi).contains(t)),
                );
                at
            }
            _ => vec![0],
        };
        let sent = op.call.lease_id.as_deref();
        let mut states: Vec<&str> = readings
            .iter()
            .map(|&now| reference::state(before, now).word())
            .collect();
        states.sort_unstable();
        states.dedup();
        a.visits.push(Visit {
            row: coverage::use_row_of(what, sent, before),
            cell: match states[..] {
                [one] => one.into(),
                _ => coverage::EITHER_STATE.into(),
            },
            ops: vec![op.id],
        });
        let answers: Vec<Result<(), &[&str]>> = readings
            .iter()
            .map(|&now| reference::use_answer(before, sent, now, what))
            .collect();
        n.judged += 1;
        if answers.iter().any(|x| *x != answers[0]) {
            n.either += 1;
        }
        let allowed = match code {
            None => answers.iter().any(Result::is_ok),
            Some(code) => answers
                .iter()
                .any(|x| x.is_err_and(|codes| codes.contains(&code))),
        };
        if allowed {
            continue;
        }
        let mut table: Vec<String> = answers
            .iter()
            .map(|x| match x {
                Ok(()) => "lets it through".to_string(),
                Err(codes) => format!("refuses it with 412 {}", codes.join(" or ")),
            })
            .collect();
        table.dedup();
        let st: Vec<&str> = {
            let mut v: Vec<&str> = readings
                .iter()
                .map(|&now| reference::state(before, now).word())
                .collect();
            v.dedup();
            v
        };
        let held = before
            .map(|l| format!(" under {}", short(&l.id)))
            .unwrap_or_default();
        let asked = match sent {
            Some(id) => format!("{} with lease {}", op.call.op, short(id)),
            None => format!("{} without a lease id", op.call.op),
        };
        let answered = match code {
            Some(code) => format!("{} {code}", r.status),
            None => format!("{} (read)", r.status),
        };
        a.violations.push(
            violation(
                "L2",
                format!(
                    "{asked} of {target}, answered at {} true, was {}; the lease was {}{held} while it ran and SPEC §2.5 {} there",
                    secs(ret),
                    match code {
                        Some(_) => format!("refused with {answered}"),
                        None => format!("answered {}", r.status),
                    },
                    st.join(" or "),
                    table.join(", or "),
                ),
                vec![op.id],
            )
            .with_evidence(call_account(log, op, None, asked, answered)),
        );
    }
    n
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
    records: &ServerRecords,
    timeline: &LeaseTimeline,
    a: &mut Analysis,
) -> usize {
    let (log, lost) = (&records.log[..], &records.lost[..]);
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
        if !settled(line, lost, target, op.invoke_ns, ret) {
            continue;
        }
        let before = record_before(line, op.invoke_ns).and_then(|(.., l)| l.clone());
        let st = reference::state(before.as_ref(), server_ms);
        a.visits.push(Visit {
            row: coverage::action_row(&action, before.as_ref()),
            cell: st.word().into(),
            ops: vec![op.id],
        });
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
            .with_evidence(call_account(log, op, Some(server_ms), asked, answered)),
        );
    }
    judged
}
