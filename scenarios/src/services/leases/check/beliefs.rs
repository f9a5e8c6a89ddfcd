//! L9 belief exclusivity, judged from the holders' events: each holder's
//! belief in a lease runs from its acquire's success to its last unfenced
//! side effect, and two holders' beliefs on one resource must not overlap
//! unless the server's log revoked the first in between.

use super::*;

/// One holder's belief in one lease: from its acquire's success to its last
/// unfenced side effect.
struct BeliefSpan {
    holder: String,
    target: String,
    lease_id: String,
    start_ns: u64,
    last_ns: u64,
    last_local_ms: u64,
}

/// L9 from the holders' events.
pub(super) fn judge_beliefs(
    h: &LeaseHistory,
    log: &[Entry],
    revoked: &[(String, String, u64)],
    a: &mut Analysis,
) {
    let mut open: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut spans: Vec<BeliefSpan> = Vec::new();
    for e in &h.node_events {
        match &e.event {
            LeaseEvent::Believes {
                target, lease_id, ..
            } => {
                let k = (e.node.clone(), target.clone());
                let continuing = open
                    .get(&k)
                    .is_some_and(|&i| spans[i].lease_id == *lease_id);
                if !continuing {
                    spans.push(BeliefSpan {
                        holder: e.node.clone(),
                        target: target.clone(),
                        lease_id: lease_id.clone(),
                        start_ns: e.at_ns,
                        last_ns: e.at_ns,
                        last_local_ms: e.local_ms,
                    });
                    open.insert(k, spans.len() - 1);
                }
            }
            LeaseEvent::SideEffect { target, lease_id } => {
                if let Some(&i) = open.get(&(e.node.clone(), target.clone())) {
                    if spans[i].lease_id == *lease_id {
                        spans[i].last_ns = e.at_ns;
                        spans[i].last_local_ms = e.local_ms;
                    }
                }
            }
            LeaseEvent::Dropped { target, .. } => {
                open.remove(&(e.node.clone(), target.clone()));
            }
            _ => {}
        }
    }
    a.beliefs = spans.len();
    let intervals: Vec<Interval<String, String>> = spans
        .iter()
        .map(|s| Interval {
            resource: s.target.clone(),
            holder: s.holder.clone(),
            start: s.start_ns,
            // Acting counts; a belief never acted on harms nobody.
            end: if s.last_ns > s.start_ns {
                s.last_ns + 1
            } else {
                s.start_ns
            },
        })
        .collect();
    for (i, j) in overlaps(&intervals) {
        // `x` believed first; `y` acquired while `x` still acted.
        let (x, y) = (&spans[i], &spans[j]);
        // From the server's grant of a belief's lease (its answer may come
        // after a revocation).
        let granted_ns = |b: &BeliefSpan| {
            log.iter()
                .filter(|e| e.at_ns <= b.start_ns)
                .filter(|e| {
                    matches!(&e.effect, Effect::Lease(lease::Effect::Set { target, lease: Some(l), .. })
                        if target.name() == b.target && l.id == b.lease_id)
                })
                .map(|e| e.at_ns)
                .next_back()
                .unwrap_or(b.start_ns)
        };
        let revoked_between = |b: &BeliefSpan, until_ns: u64| {
            let from = granted_ns(b);
            revoked.iter().any(|(t, id, at)| {
                *t == b.target && *id == b.lease_id && *at >= from && *at <= until_ns
            })
        };
        // x's lease revoked before y acquired, or y's revoked before y even
        // learned it held it (a grant whose answer came late, after a break
        // or a delete): by design, and neither holder can know.
        if revoked_between(x, y.start_ns) || revoked_between(y, y.start_ns) {
            continue;
        }
        // The server's view: y's grant and x's expiry.
        let grant = log.iter().find(|e| {
            e.at_ns <= y.start_ns
                && matches!(&e.effect, Effect::Lease(lease::Effect::Set { target, lease: Some(l), .. })
                    if target.name() == y.target && l.id == y.lease_id)
                && e.at_ns >= x.start_ns
        });
        let expiry = log
            .iter()
            .filter(|e| e.at_ns <= y.start_ns)
            .filter_map(|e| match &e.effect {
                Effect::Lease(lease::Effect::Set {
                    target,
                    lease: Some(l),
                    ..
                }) if target.name() == x.target && l.id == x.lease_id => match l.phase {
                    Phase::Leased { expire_ms } => expire_ms.map(|ms| (e, ms)),
                    _ => None,
                },
                _ => None,
            })
            .next_back();
        let server = match (grant, expiry) {
            (Some(g), Some((_, exp_ms))) => format!(
                "holder {} acquired it at {} (offset {:+.1} s), after the lease's expiry at {}",
                y.holder,
                when(g),
                offset_s(g.server_ms, g.at_ns),
                server_time(log, g, exp_ms)
            ),
            (Some(g), None) => format!("holder {} acquired it at {}", y.holder, when(g)),
            _ => format!(
                "holder {} believed it held it from {} true",
                y.holder,
                secs(y.start_ns)
            ),
        };
        let acquired = |b: &BeliefSpan| -> Vec<u64> {
            h.ops
                .iter()
                .filter(|o| {
                    o.call.op == "acquire"
                        && o.call.target == b.target
                        && o.result.as_ref().and_then(|r| r.lease_id.as_deref())
                            == Some(b.lease_id.as_str())
                        && o.invoke_ns <= b.start_ns
                })
                .map(|o| o.id)
                .next_back()
                .into_iter()
                .collect()
        };
        let ops: Vec<u64> = acquired(y).into_iter().chain(acquired(x)).collect();
        let blob = x.target.split('/').next_back().unwrap_or(&x.target);
        a.violations.push(
            violation(
                "L9",
                format!(
                    "holder {} believed it held lease {} on blob {} until {} true ({} on its clock, offset {:+.1} s); {server}. Both believed they held it from {} to {} true",
                    x.holder,
                    short(&x.lease_id),
                    blob,
                    secs(x.last_ns),
                    clock_secs(x.last_local_ms),
                    offset_s(x.last_local_ms, x.last_ns),
                    secs(y.start_ns),
                    secs(x.last_ns)
                ),
                ops,
            )
            .during(x.holder.clone(), y.start_ns, x.last_ns, "both believed")
            .during(y.holder.clone(), y.start_ns, x.last_ns, "both believed")
            .with_evidence(belief_evidence(log, x, y, granted_ns(x), grant, expiry, blob)),
        );
    }
}

/// The lease of two overlapping beliefs as the server saw it beside each
/// holder's belief, in true time with the clocks' readings beside it.
fn belief_evidence(
    log: &[Entry],
    x: &BeliefSpan,
    y: &BeliefSpan,
    x_granted_ns: u64,
    y_grant: Option<&Entry>,
    x_expiry: Option<(&Entry, u64)>,
    blob: &str,
) -> Evidence {
    let row = |cells: [String; 4], marked: bool| EvidenceRow {
        op: None,
        cells: cells.to_vec(),
        marked,
    };
    let x_grant = log.iter().find(|e| e.at_ns == x_granted_ns);
    let mut rows = Vec::new();
    rows.push(row(
        [
            "the server".into(),
            x_grant.map_or(format!("{} true", secs(x_granted_ns)), when),
            match x_expiry {
                Some((e, ms)) => format!("expiry at {}", server_time(log, e, ms)),
                None => "no expiry recorded".into(),
            },
            format!(
                "granted lease {} on {blob} to {}",
                short(&x.lease_id),
                x.holder
            ),
        ],
        false,
    ));
    rows.push(row(
        [
            format!("{}'s belief", x.holder),
            format!("{} true", secs(x.start_ns)),
            format!(
                "{} true, {} on its clock",
                secs(x.last_ns),
                clock_secs(x.last_local_ms)
            ),
            format!("acted on lease {} until then", short(&x.lease_id)),
        ],
        false,
    ));
    rows.push(row(
        [
            "the server".into(),
            y_grant.map_or("not in the log".into(), when),
            String::new(),
            format!(
                "granted lease {} on {blob} to {}",
                short(&y.lease_id),
                y.holder
            ),
        ],
        false,
    ));
    rows.push(row(
        [
            format!("{}'s belief", y.holder),
            format!("{} true", secs(y.start_ns)),
            format!("{} true", secs(y.last_ns)),
            format!("acted on lease {}", short(&y.lease_id)),
        ],
        false,
    ));
    rows.push(row(
        [
            "both holders".into(),
            format!("{} true", secs(y.start_ns)),
            format!("{} true", secs(x.last_ns)),
            format!("believed they held {blob} at once"),
        ],
        true,
    ));
    Evidence {
        title: format!("Lease on {blob}: the server's view against the holders' beliefs"),
        lead: vec![format!(
            "The server handed {blob} to {} while {} still acted on its older lease: {}'s belief outlived the lease as the server counted it.",
            y.holder, x.holder, x.holder
        )],
        columns: ["who", "from", "until", "what"].map(String::from).to_vec(),
        rows,
        notes: Vec::new(),
    }
}
