//! The calls judged one by one: R1 re-sends from each call's attempts; L2,
//! L3, L5 (acquire idempotency), L6 and L8 (client side) from each call's
//! answer against the reference state its log record (or its absence) shows.

use super::*;
use overcast_sim::check::fresh::check_fresh;

/// For an acquire without a proposed id, retried and told 409
/// `LeaseAlreadyPresent`: a lease the server generated on its target while
/// the call ran and told no caller, which no other call explains. Another
/// acquire without a proposal whose outcome is unknown (a 408, a timeout, a
/// crash), invoked before the grant, may be the one that won it: each such
/// call explains one grant (in time order), and only a grant left over is
/// this call's.
pub(super) fn unexplained_grant<'a>(
    h: &LeaseHistory,
    op: &OpRecord<Call, Outcome>,
    ret: u64,
    generated: &'a [(String, String, u64)],
    reported: &BTreeSet<&str>,
) -> Option<(&'a str, u64)> {
    let target = &op.call.target;
    let mut explainers: Vec<u64> = h
        .ops
        .iter()
        .filter(|o| {
            o.id != op.id
                && o.result.is_none()
                && o.call.op == "acquire"
                && o.call.proposed_id.is_none()
                && o.call.target == *target
        })
        .map(|o| o.invoke_ns)
        .collect();
    explainers.sort_unstable();
    let mut grants: Vec<(&str, u64)> = generated
        .iter()
        .filter(|(t, id, at)| {
            t == target && *at >= op.invoke_ns && *at <= ret && !reported.contains(id.as_str())
        })
        .map(|(_, id, at)| (id.as_str(), *at))
        .collect();
    grants.sort_by_key(|(_, at)| *at);
    for (id, at) in grants {
        // The earliest-invoked unused explainer that was invoked in time.
        match explainers.iter().position(|invoked| *invoked <= at) {
            Some(i) => {
                explainers.remove(i);
            }
            None => return Some((id, at)),
        }
    }
    None
}

/// Whether SPEC lets the SDK send `c` again after a timeout: reads (Get Blob
/// and Get Blob Properties); the
/// lease actions §2.9 L5 calls idempotent: an acquire with a proposed id, a
/// renew, a change, and a break (a repeat finds the lease breaking or
/// broken, and a later break never lengthens the break, §2.4); and setting
/// a container's metadata (a repeat sets the same metadata, and it
/// invalidates no lease, §2.7). Not: an acquire without a proposed id, a
/// release, and every other write, Set Blob Metadata included (R1).
pub(super) fn may_resend_after_timeout(c: &Call) -> bool {
    match c.op.as_str() {
        "read" | "head" | "renew" | "change" | "break" | "set_metadata" => true,
        "acquire" => c.proposed_id.is_some(),
        _ => false,
    }
}

/// R1 from each call's attempts: the calls judged.
pub(super) fn judge_resends(h: &LeaseHistory, a: &mut Analysis) -> usize {
    let mut judged = 0;
    for op in h.ops.iter().filter(|o| !may_resend_after_timeout(&o.call)) {
        judged += 1;
        if let Some(mut v) = crate::kit::retry::resent_after_timeout(op.id, &op.attempts) {
            v.message = format!("{} {}: {}", op.call.op, op.call.target, v.message);
            a.violations.push(v);
        }
    }
    judged
}

/// L2, L3, L5 (acquire idempotency), L6, L8 (client side) from the calls:
/// Set Blob Metadata judged as a write (a put), Get Blob Properties as a read.
pub(super) fn judge_ops(
    h: &LeaseHistory,
    a: &mut Analysis,
    writes: &BTreeMap<(String, u64), Snapshot>,
    deletes: &BTreeMap<String, Vec<Snapshot>>,
    timeline: &LeaseTimeline,
    generated: &[(String, String, u64)],
    records: &ServerRecords,
) {
    // The server's log, for the accounts of the calls judged here, and the
    // records a crash took: a refusal may have been decided from one.
    let (log, lost, server_clock) = (&records.log[..], &records.lost[..], records.clock);
    let reported: BTreeSet<&str> = h
        .ops
        .iter()
        .filter_map(|o| o.result.as_ref()?.lease_id.as_deref())
        .collect();
    for op in &h.ops {
        let Some(r) = &op.result else { continue };
        let c = &op.call;
        let ret = op.return_ns.unwrap_or(u64::MAX);
        let sent = c.lease_id.as_deref().and_then(lease::parse_guid);
        match c.op.as_str() {
            "put" | "delete" | "set_blob_metadata" if r.is_success() => {
                let snap = if c.op != "delete" {
                    r.version.and_then(|v| writes.get(&(c.target.clone(), v)))
                } else {
                    let within: Vec<&Snapshot> = deletes
                        .get(&c.target)
                        .into_iter()
                        .flatten()
                        .filter(|s| s.at_ns >= op.invoke_ns && s.at_ns <= ret)
                        .collect();
                    (within.len() == 1).then(|| within[0])
                };
                let Some(s) = snap else { continue };
                a.writes_judged += 1;
                let st = reference::state(s.before.as_ref(), s.server_ms);
                let holder = s.before.as_ref().map(|l| l.id.as_str());
                // §2.5 is about an existing blob: a creation has no cell.
                if s.before.is_some() || s.existed {
                    a.visits.push(Visit {
                        row: coverage::use_row_of(
                            reference::BlobUse::Write,
                            sent.as_deref(),
                            s.before.as_ref(),
                        ),
                        cell: st.word().into(),
                        ops: vec![op.id],
                    });
                }
                let at = format!(
                    "{} of {} at {} true, {} on {}'s clock,",
                    c.op,
                    c.target,
                    secs(s.at_ns),
                    clock_secs(s.server_ms),
                    s.node
                );
                let account = || {
                    lease_log_then(
                        log,
                        &c.target,
                        s.at_ns,
                        &|_| false,
                        Some(request_row(
                            s.at_ns,
                            Some(s.server_ms),
                            format!(
                                "{} {}",
                                c.op,
                                sent.as_deref()
                                    .map_or("without a lease id".into(), |id| format!(
                                        "with lease {}",
                                        short(id)
                                    ))
                            ),
                            format!("accepted ({})", r.status),
                            Some(op.id),
                        )),
                    )
                };
                match sent.as_deref() {
                    None if st.locked() => a.violations.push(
                        violation(
                            "L2",
                            format!(
                                "{at} carried no lease id but was accepted while lease {} was {}",
                                short(holder.unwrap_or("")),
                                st.word()
                            ),
                            vec![op.id],
                        )
                        .with_evidence(account()),
                    ),
                    Some(id) if !(st.locked() && holder == Some(id)) => {
                        let created = s.before.is_none() && !s.existed;
                        if created {
                            continue;
                        }
                        let property = if holder == Some(id) && st == RefState::Expired {
                            "L3"
                        } else {
                            "L2"
                        };
                        a.violations.push(
                            violation(
                                property,
                                format!(
                                    "{at} carried lease {} and was accepted, but the lease was {}{}",
                                    short(id),
                                    st.word(),
                                    holder
                                        .filter(|h| *h != id)
                                        .map(|h| format!(" under {}", short(h)))
                                        .unwrap_or_default()
                                ),
                                vec![op.id],
                            )
                            .with_evidence(account()),
                        );
                    }
                    _ => {}
                }
            }
            "put" | "delete" | "set_blob_metadata" if condition_answer(r) => {
                if let Some(judged) = lease_before_conditions(op, timeline, lost, server_clock) {
                    a.refusals_judged += 1;
                    a.violations.extend(judged);
                }
            }
            "acquire" if r.code.as_deref() == Some("LeaseAlreadyPresent") => {
                // L5: a retried acquire without a proposal told "lost" although it won.
                if c.proposed_id.is_none() && op.attempts.len() > 1 {
                    if let Some((id, at)) = unexplained_grant(h, op, ret, generated, &reported) {
                        let granted_ns = at;
                        a.violations.push(
                            violation(
                                "L5",
                                format!(
                                    "an acquire of {} without a proposed id was granted lease {} at {} true by one of its {} attempts, yet the caller was told 409 LeaseAlreadyPresent: a non-idempotent acquire was re-sent",
                                    c.target,
                                    short(id),
                                    secs(at),
                                    op.attempts.len()
                                ),
                                vec![op.id],
                            )
                            .with_evidence(lease_log_then(
                                log,
                                &c.target,
                                ret,
                                &|e| e.at_ns == granted_ns,
                                Some(request_row(
                                    ret,
                                    r.server_ms,
                                    format!(
                                        "acquire without a proposed id ({} attempts)",
                                        op.attempts.len()
                                    ),
                                    "409 LeaseAlreadyPresent".to_string(),
                                    Some(op.id),
                                )),
                            )),
                        );
                        continue;
                    }
                }
                // L6: refused while the lease had run out (no record on it
                // during the call, none the server held then lost later).
                let Some(server_ms) = r.server_ms else {
                    continue;
                };
                let line = timeline.get(&c.target).map(Vec::as_slice).unwrap_or(&[]);
                if !super::answers::settled(line, lost, &c.target, op.invoke_ns, ret) {
                    continue;
                }
                let before = record_before(line, op.invoke_ns).and_then(|(.., l)| l.clone());
                let st = reference::state(before.as_ref(), server_ms);
                if !st.locked() {
                    let account = call_account(
                        log,
                        op,
                        Some(server_ms),
                        "acquire".to_string(),
                        "409 LeaseAlreadyPresent".to_string(),
                    );
                    a.violations.push(violation(
                        "L6",
                        format!(
                            "an acquire of {} answered at {} true ({} on the server's clock) was refused with LeaseAlreadyPresent although the lease was {}{}",
                            c.target,
                            secs(ret),
                            clock_secs(server_ms),
                            st.word(),
                            before
                                .and_then(|l| l.expire_ms)
                                .map(|e| format!(" (it expired at {} on the server's clock)", clock_secs(e)))
                                .unwrap_or_default()
                        ),
                        vec![op.id],
                    ).with_evidence(account));
                }
            }
            "set_metadata" if c.lease_id.is_none() && r.status == 412 => {
                a.violations.push(
                    violation(
                        "L8",
                        format!(
                            "Set Container Metadata on {} without a lease id was refused with 412 {}",
                            c.target,
                            r.code.as_deref().unwrap_or("")
                        ),
                        vec![op.id],
                    )
                    .with_evidence(lease_log_then(
                        log,
                        &c.target,
                        op.invoke_ns,
                        &|_| false,
                        Some(request_row(
                            ret,
                            r.server_ms,
                            "Set Container Metadata without a lease id".to_string(),
                            format!("412 {}", r.code.as_deref().unwrap_or("")),
                            Some(op.id),
                        )),
                    )),
                );
            }
            _ => {}
        }
    }
}

/// E1 from the answers: every successful put and Set Blob Metadata of a blob
/// answers a version (its ETag) that no other successful write of the blob
/// answered ([`check_fresh`]).
pub(super) fn judge_fresh_etags(h: &LeaseHistory, a: &mut Analysis) {
    let tokens: Vec<(&str, String, u64)> = h
        .ops
        .iter()
        .filter_map(|o| {
            let r = o.result.as_ref().filter(|r| r.is_success())?;
            let written = matches!(o.call.op.as_str(), "put" | "set_blob_metadata");
            Some((o.call.target.as_str(), r.version?.to_string(), o.id)).filter(|_| written)
        })
        .collect();
    a.writes_versioned = tokens.len();
    let produced = tokens.iter().map(|(t, v, id)| (*t, v.as_str(), *id));
    if let Some(v) = check_fresh("E1", produced) {
        let account = crate::kit::words::calls_account(
            &h.ops,
            &v.ops,
            version_words,
            "A version (ETag) given twice".to_string(),
            "The calls on the blob from the first write that got the version to the one that got it again: every put and Set Blob Metadata makes a new ETag (SPEC E1).".to_string(),
        );
        a.violations.push(v.with_evidence(account));
    }
}

/// A call and the version its answer carried, for E1's account:
/// `put leases/b0 id 5d1f… → 201 version 4`.
fn version_words(c: &Call, r: Option<&Outcome>) -> String {
    let mut out = format!("{} {}", c.op, c.target);
    if let Some(id) = &c.lease_id {
        out += &format!(" id {}", short(id));
    }
    match r {
        None => out += " → unknown",
        Some(r) => {
            out += &format!(" → {}", r.status);
            if let Some(code) = &r.code {
                out += &format!(" {code}");
            }
            if let Some(v) = r.version {
                out += &format!(" version {v}");
            }
        }
    }
    out
}

/// A conditional header's refusal: 304, 412 `ConditionNotMet`, 409
/// `BlobAlreadyExists` (`If-None-Match: *` on a write).
fn condition_answer(r: &Outcome) -> bool {
    matches!(
        (r.status, r.code.as_deref()),
        (304, _) | (412, Some("ConditionNotMet")) | (409, Some("BlobAlreadyExists"))
    )
}

/// L2, the order of checks (SPEC §1.1.5, AMBIG-3): a write or delete on a
/// blob whose lease is surely locked, without that lease's id, is refused by
/// the lease check, which comes before the conditions; a condition's refusal
/// there means the conditions were judged first. "Surely locked": no log
/// record on the blob during the call, and the lease of the record before
/// it locked from that record's server time to the latest time the server's
/// clock can read at the call's return, given `server_clock`'s drift and
/// steps (`None`: the bound is not known, nothing is judged). `None` when
/// the call could not be judged, else its violation if any.
fn lease_before_conditions(
    op: &OpRecord<Call, Outcome>,
    timeline: &LeaseTimeline,
    lost: &[super::answers::Lost],
    server_clock: Option<ClockBound>,
) -> Option<Option<Violation>> {
    let (bound, ret) = (server_clock?, op.return_ns?);
    let c = &op.call;
    let line = timeline.get(&c.target)?;
    if !super::answers::settled(line, lost, &c.target, op.invoke_ns, ret) {
        return None;
    }
    let (at_ns, server_ms, lease) = record_before(line, op.invoke_ns)?;
    let Some(lease) = lease.as_ref() else {
        return Some(None);
    };
    let elapsed_ms = (ret - at_ns) / 1_000_000;
    let latest_ms = server_ms
        + elapsed_ms
        + elapsed_ms * bound.max_drift_ppm / 1_000_000
        + bound.max_step_ms
        + bound.slack_ms;
    let locked = reference::state(Some(lease), *server_ms).locked()
        && reference::state(Some(lease), latest_ms).locked();
    let sent = c.lease_id.as_deref().and_then(lease::parse_guid);
    if !locked || sent.as_deref() == Some(lease.id.as_str()) {
        return Some(None);
    }
    let r = op.result.as_ref()?;
    Some(Some(violation(
        "L2",
        format!(
            "a {} of {} {} was answered {} {}, a condition's refusal, while lease {} held the blob (locked from {} true, {} on the server's clock, to past the call's return at {} true, when the server's clock read at most {}); SPEC §1.1.5, AMBIG-3: the lease check comes before the conditions, so the answer is 412 {}",
            c.op,
            c.target,
            match &sent {
                None => "without a lease id".to_string(),
                Some(id) => format!("with lease {}", short(id)),
            },
            r.status,
            r.code.as_deref().unwrap_or(""),
            short(&lease.id),
            secs(*at_ns),
            clock_secs(*server_ms),
            secs(ret),
            clock_secs(latest_ms),
            if sent.is_none() {
                "LeaseIdMissing"
            } else {
                "LeaseIdMismatchWithBlobOperation"
            }
        ),
        vec![op.id],
    )))
}
