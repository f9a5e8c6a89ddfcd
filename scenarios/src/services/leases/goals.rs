//! The `leases` scenario's reachability goals ([`overcast_harness::goals`]):
//! the states of SPEC §2 where lease bugs hide — a lease taken over right
//! after its expiry while its holder still believed in it, a break during a
//! write carrying the lease id, writes with a lost or another lease's id, an
//! acquire after a break period ran out, an infinite lease held long.

use super::history::{Call, LeaseEvent, LeaseHistory, Outcome};
use overcast_harness::goals::{count_events, count_ops, instants_in_flight, retried_after, Goal};
use overcast_model::lease::{Effect as LeaseEffect, Lease, LeaseAction, LeaseState, Phase};
use overcast_model::partition::Effect;
use overcast_sim::history::OpRecord;
use std::collections::{BTreeMap, BTreeSet};

/// A takeover counts when the new lease was granted at most this long
/// (server time) after the previous one's expiry.
pub const TAKEOVER_WINDOW_MS: u64 = 100;

/// An infinite lease counts as held long from this many ms on.
pub const LONG_INFINITE_MS: u64 = 5_000;

/// What the lease goals read from the server's log, in one pass: each
/// logged lease change with the record it replaced, in log order.
struct LeaseChange<'a> {
    /// When the server logged it (true time).
    at_ns: u64,
    /// The resource (`container/blob` or the container).
    target: String,
    /// The action.
    action: &'a LeaseAction,
    /// Server time it was judged at.
    at_ms: u64,
    /// The record before it.
    before: Option<&'a Lease>,
    /// The record after it.
    after: Option<&'a Lease>,
}

/// Every logged lease action with the record it replaced (a container
/// delete clears the records of its resources).
fn changes(h: &LeaseHistory) -> Vec<LeaseChange<'_>> {
    let mut records: BTreeMap<String, Option<&Lease>> = BTreeMap::new();
    let mut out = Vec::new();
    for e in &h.node_events {
        let LeaseEvent::Logged { effect, .. } = &e.event else {
            continue;
        };
        match effect {
            Effect::Lease(LeaseEffect::Set {
                target,
                action,
                at_ms,
                lease,
                ..
            }) => {
                let target = target.name();
                let before = records.insert(target.clone(), lease.as_ref()).flatten();
                out.push(LeaseChange {
                    at_ns: e.at_ns,
                    target,
                    action,
                    at_ms: *at_ms,
                    before,
                    after: lease.as_ref(),
                });
            }
            Effect::Lease(LeaseEffect::ContainerDeleted { container, .. }) => {
                let prefix = format!("{container}/");
                for (t, r) in records.iter_mut() {
                    if t == container || t.starts_with(&prefix) {
                        *r = None;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// A granted acquire of a new lease id (not the same id again).
fn is_takeover(c: &LeaseChange<'_>) -> bool {
    matches!(c.action, LeaseAction::Acquire { .. })
        && matches!((c.before, c.after), (Some(b), Some(a)) if a.id != b.id)
}

/// Takeovers within [`TAKEOVER_WINDOW_MS`] of the previous lease's expiry
/// while a holder still believed in that lease (it had recorded no release,
/// refusal or time-up for it).
fn takeovers_at_expiry(h: &LeaseHistory) -> u64 {
    // Beliefs open at each logged change, in one pass over events by time.
    let mut moments: Vec<(u64, usize, &LeaseEvent)> = h
        .node_events
        .iter()
        .enumerate()
        .map(|(i, e)| (e.at_ns, i, &e.event))
        .collect();
    moments.sort_by_key(|m| (m.0, m.1));
    let mut believed: BTreeSet<&str> = BTreeSet::new();
    let mut records: BTreeMap<String, &Lease> = BTreeMap::new();
    let mut n = 0;
    for (_, _, event) in moments {
        match event {
            LeaseEvent::Believes { lease_id, .. } => {
                believed.insert(lease_id);
            }
            LeaseEvent::Dropped { lease_id, .. } => {
                believed.remove(lease_id.as_str());
            }
            LeaseEvent::Logged {
                effect:
                    Effect::Lease(LeaseEffect::Set {
                        target,
                        action,
                        at_ms,
                        lease,
                        ..
                    }),
                ..
            } => {
                let target = target.name();
                let before = match lease {
                    Some(l) => records.insert(target, l),
                    None => records.remove(&target),
                };
                if let (LeaseAction::Acquire { .. }, Some(b), Some(a)) = (action, before, lease) {
                    if let Phase::Leased {
                        expire_ms: Some(expiry),
                    } = b.phase
                    {
                        let gap = at_ms.checked_sub(expiry);
                        if a.id != b.id
                            && gap.is_some_and(|g| g <= TAKEOVER_WINDOW_MS)
                            && believed.contains(b.id.as_str())
                        {
                            n += 1;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    n
}

/// Infinite leases that stayed held at least [`LONG_INFINITE_MS`] of server
/// time (until the next change of their resource, or the log's end).
fn long_infinite_leases(h: &LeaseHistory) -> u64 {
    let changes = changes(h);
    let end_ms = changes.iter().map(|c| c.at_ms).max().unwrap_or(0);
    // Resource → when its current infinite lease was granted.
    let mut since: BTreeMap<&str, u64> = BTreeMap::new();
    let mut n = 0;
    let held = |l: Option<&Lease>| {
        matches!(
            l,
            Some(Lease {
                phase: Phase::Leased { expire_ms: None },
                ..
            })
        )
    };
    for c in &changes {
        let kept = held(c.after) && c.before.zip(c.after).is_some_and(|(b, a)| b.id == a.id);
        if kept {
            continue;
        }
        if let Some(from) = since.remove(c.target.as_str()) {
            n += u64::from(c.at_ms.saturating_sub(from) >= LONG_INFINITE_MS);
        }
        if held(c.after) {
            since.insert(&c.target, c.at_ms);
        }
    }
    n + since
        .values()
        .filter(|from| end_ms.saturating_sub(**from) >= LONG_INFINITE_MS)
        .count() as u64
}

/// Breaks logged while a write carrying a lease id was in flight on its blob.
fn breaks_during_leased_writes(h: &LeaseHistory) -> u64 {
    let mut breaks: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    let changes = changes(h);
    for c in &changes {
        if matches!(c.action, LeaseAction::Break { .. }) {
            breaks.entry(&c.target).or_default().push(c.at_ns);
        }
    }
    let mut writes: BTreeMap<&str, Vec<&OpRecord<Call, Outcome>>> = BTreeMap::new();
    for o in &h.ops {
        if o.call.op == "put" && o.call.lease_id.is_some() {
            writes.entry(o.call.target.as_str()).or_default().push(o);
        }
    }
    breaks
        .iter_mut()
        .map(|(target, times)| {
            times.sort_unstable();
            instants_in_flight(times, writes.get(target).into_iter().flatten().copied())
        })
        .sum()
}

/// An operation `op` answered `status` with error code `code`.
fn answered(o: &OpRecord<Call, Outcome>, op: &str, status: u16, code: &str) -> bool {
    o.call.op == op
        && o.result
            .as_ref()
            .is_some_and(|r| r.status == status && r.code.as_deref() == Some(code))
}

/// The goals of `leases`.
pub fn goals() -> Vec<Goal<LeaseHistory>> {
    vec![
        Goal::new(
            "takeover-at-expiry",
            "Another lease id was granted on a blob within 100 ms (server time) of the previous lease's expiry, while that lease's holder had not yet let go of it.",
            takeovers_at_expiry,
        ),
        Goal::new(
            "break-during-leased-write",
            "A break was logged on a blob while a write carrying a lease id was in flight on it.",
            breaks_during_leased_writes,
        ),
        Goal::new(
            "acquire-after-break-period",
            "A lease was granted on a blob whose break period had run out (breaking became broken lazily).",
            |h: &LeaseHistory| {
                changes(h)
                    .iter()
                    .filter(|c| {
                        is_takeover(c)
                            && matches!(c.before, Some(Lease { phase: Phase::Breaking { break_ms }, .. }) if *break_ms <= c.at_ms)
                    })
                    .count() as u64
            },
        ),
        Goal::new(
            "acquire-while-breaking",
            "An acquire was refused 409 because the lease was in its break period.",
            |h: &LeaseHistory| {
                count_ops(h, |o| {
                    o.call.op == "acquire"
                        && o.result.as_ref().is_some_and(|r| {
                            r.status == 409 && r.state == Some(LeaseState::Breaking)
                        })
                })
            },
        ),
        Goal::new(
            "renew-refused-broken",
            "A holder's renew was refused 409 because its lease had been broken (LeaseIsBrokenAndCannotBeRenewed).",
            |h: &LeaseHistory| {
                count_ops(h, |o| {
                    answered(o, "renew", 409, "LeaseIsBrokenAndCannotBeRenewed")
                })
            },
        ),
        Goal::new(
            "write-with-other-lease",
            "A write carrying a lease id was refused 412 because another lease held the blob (LeaseIdMismatchWithBlobOperation).",
            |h: &LeaseHistory| {
                count_ops(h, |o| {
                    answered(o, "put", 412, "LeaseIdMismatchWithBlobOperation")
                })
            },
        ),
        Goal::new(
            "write-with-lost-lease",
            "A write carrying a lease id was refused 412 because its lease had expired or been broken (LeaseLost) or the blob had no lease any more (LeaseNotPresentWithBlobOperation).",
            |h: &LeaseHistory| {
                count_ops(h, |o| {
                    answered(o, "put", 412, "LeaseLost")
                        || answered(o, "put", 412, "LeaseNotPresentWithBlobOperation")
                })
            },
        ),
        Goal::new(
            "write-without-lease-refused",
            "A write without a lease id was refused 412 on a leased blob (LeaseIdMissing).",
            |h: &LeaseHistory| count_ops(h, |o| answered(o, "put", 412, "LeaseIdMissing")),
        ),
        Goal::new(
            "infinite-lease-held-long",
            "An infinite lease stayed held for at least 5 s of server time.",
            long_infinite_leases,
        ),
        Goal::new(
            "lease-action-retried-after-timeout",
            "The SDK sent a lease action again after a timeout, and it was answered (where a retried acquire or break must stay idempotent).",
            |h: &LeaseHistory| {
                count_ops(h, |o| {
                    matches!(
                        o.call.op.as_str(),
                        "acquire" | "renew" | "change" | "release" | "break"
                    ) && retried_after(o, |s| s.is_none())
                })
            },
        ),
        Goal::new(
            "holder-time-up",
            "A holder that stopped renewing let its lease go only when its own clock said the lease was over.",
            |h: &LeaseHistory| {
                count_events(h, |e| {
                    matches!(&e.event, LeaseEvent::Dropped { why, .. } if why == "time up")
                })
            },
        ),
        Goal::new(
            "lease-id-changed",
            "A lease's id was changed while it was held.",
            |h: &LeaseHistory| {
                changes(h)
                    .iter()
                    .filter(|c| matches!(c.action, LeaseAction::Change { .. }))
                    .count() as u64
            },
        ),
        Goal::new(
            "container-delete-under-lease",
            "The container was deleted with its lease id while leased, taking its blobs and their leases.",
            |h: &LeaseHistory| {
                count_ops(h, |o| {
                    o.call.op == "delete_container"
                        && o.call.lease_id.is_some()
                        && o.result.as_ref().is_some_and(Outcome::is_success)
                })
            },
        ),
        Goal::new(
            "blob-delete-under-lease",
            "A leased blob was deleted with its lease id, which destroys the lease (SPEC §2.6); taken only on the explorer's branches.",
            |h: &LeaseHistory| {
                count_ops(h, |o| {
                    o.call.op == "delete"
                        && o.call.lease_id.is_some()
                        && o.result.as_ref().is_some_and(Outcome::is_success)
                })
            },
        )
        .branch_only(),
        Goal::new(
            "container-delete-refused",
            "A container delete without the lease id was refused 412 while the container was leased.",
            |h: &LeaseHistory| {
                count_ops(h, |o| answered(o, "delete_container", 412, "LeaseIdMissing"))
            },
        ),
    ]
}
