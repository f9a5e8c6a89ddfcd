//! How a failing `leases` run is drawn: every node's calls on its lane, and
//! under each holder two bars per lease: the lease as the server's log
//! shows it (granted, renewed, until it expired, was released, changed,
//! broken or deleted) and the holder's belief (from the acquire it believed
//! to the moment it let go), with its unfenced side effects as marks. The
//! clocks' offsets and the faults come from the world's part of the page.
//! The leases and holders a violation names (by holder and short lease id,
//! as the lease checkers word them) are highlighted.

use super::check::{server_log, Entry};
use super::history::{Call, LeaseEvent, LeaseHistory, Outcome};
use super::LeasesParams;
use crate::services::leases::LeasesRole;
use overcast_harness::report::call_words;
use overcast_model::lease::{self, Lease, Phase};
use overcast_model::partition::Effect;
use overcast_model::store;
use overcast_sim::clock::EPOCH_MS;
use overcast_sim::timeline::{
    clock_secs, node_lane, secs, Mark, MarkKind, Span, SpanKind, Timeline, Tone,
};
use overcast_sim::world::Topology;
use std::collections::BTreeMap;

/// A lease id as the checkers write it: its first four characters and `…`.
fn short(id: &str) -> String {
    format!("{}…", id.chars().take(4).collect::<String>())
}

/// The node whose calls carry `client` = `c` (see the scenario's deploy:
/// holders first, then clients, numbered anew per incarnation).
pub fn node_of(p: &LeasesParams, c: usize) -> String {
    let nodes = (p.holders + p.clients).max(1);
    let i = c % nodes;
    if i < p.holders {
        Topology::node_name(LeasesRole::Holder, i)
    } else {
        Topology::node_name(LeasesRole::Client, i - p.holders)
    }
}

/// A call in a few words: `acquire c/b1 15 s → 201 7f3e…`.
pub fn words(call: &Call, result: Option<&Outcome>) -> (String, Tone) {
    let mut asked = format!("{} {}", call.op, call.target);
    if let Some(d) = call.duration_s {
        asked += &if d < 0 {
            " ∞".to_string()
        } else {
            format!(" {d} s")
        };
    }
    if let Some(b) = call.break_period_s {
        asked += &format!(" period {b} s");
    }
    if let Some(id) = &call.lease_id {
        asked += &format!(" id {}", short(id));
    }
    if let Some(id) = &call.proposed_id {
        asked += &format!(" proposing {}", short(id));
    }
    let seen = result.map(|r| {
        let mut seen = r.status.to_string();
        if let Some(code) = &r.code {
            seen += &format!(" {code}");
        }
        if let Some(id) = &r.lease_id {
            seen += &format!(" {}", short(id));
        }
        (r.status, seen)
    });
    call_words(asked, seen)
}

/// A lease as the server's log shows it, in true time.
struct Held {
    target: String,
    id: String,
    start_ns: u64,
    end_ns: u64,
    how_ended: String,
}

/// When a server-clock reading `ms` happens in true time, from a log entry
/// (the server's clock runs at true rate between its steps: close enough to draw).
fn true_ns_of(e: &Entry, ms: u64) -> u64 {
    let delta_ns = (ms as i128 - e.server_ms as i128) * 1_000_000;
    (e.at_ns as i128 + delta_ns).max(e.at_ns as i128) as u64
}

/// When a lease stops being locked, in true time, judged at entry `e`.
fn locked_until_ns(l: &Lease, e: &Entry, end_ns: u64) -> (u64, &'static str) {
    match l.phase {
        Phase::Leased { expire_ms: Some(x) } => (true_ns_of(e, x).min(end_ns), "expired"),
        Phase::Leased { expire_ms: None } => (end_ns, "infinite"),
        Phase::Breaking { break_ms } => (true_ns_of(e, break_ms).min(end_ns), "broken"),
        Phase::Broken => (e.at_ns, "broken"),
    }
}

/// Every lease id's locked interval in the server's view, in true time.
fn held(log: &[Entry], end_ns: u64) -> Vec<Held> {
    let mut out: Vec<Held> = Vec::new();
    let mut open: BTreeMap<String, usize> = BTreeMap::new();
    let close = |out: &mut Vec<Held>, i: usize, at: u64, why: &str| {
        let h = &mut out[i];
        if at < h.end_ns {
            h.end_ns = at.max(h.start_ns);
            h.how_ended = why.to_string();
        }
    };
    for e in log {
        match &e.effect {
            Effect::Lease(lease::Effect::Set {
                target,
                action,
                lease,
                ..
            }) => {
                let name = target.name();
                let current = open.get(&name).copied();
                match (current, lease) {
                    (Some(i), Some(l)) if out[i].id == l.id => {
                        let (until, why) = locked_until_ns(l, e, end_ns);
                        out[i].end_ns = until.max(out[i].start_ns);
                        out[i].how_ended = why.into();
                    }
                    _ => {
                        if let Some(i) = current {
                            close(&mut out, i, e.at_ns, action.name());
                            open.remove(&name);
                        }
                        if let Some(l) = lease {
                            let (until, why) = locked_until_ns(l, e, end_ns);
                            if until > e.at_ns {
                                out.push(Held {
                                    target: name.clone(),
                                    id: l.id.clone(),
                                    start_ns: e.at_ns,
                                    end_ns: until,
                                    how_ended: why.into(),
                                });
                                open.insert(name, out.len() - 1);
                            }
                        }
                    }
                }
            }
            Effect::Lease(lease::Effect::ContainerDeleted { container, .. }) => {
                let prefix = format!("{container}/");
                let gone: Vec<String> = open
                    .keys()
                    .filter(|k| *k == container || k.starts_with(&prefix))
                    .cloned()
                    .collect();
                for k in gone {
                    if let Some(i) = open.remove(&k) {
                        close(&mut out, i, e.at_ns, "container deleted");
                    }
                }
            }
            Effect::Store(store::Effect::ItemDeleted { key, .. }) => {
                let name = format!("{}/{}", key.container, key.id);
                if let Some(i) = open.remove(&name) {
                    close(&mut out, i, e.at_ns, "blob deleted");
                }
            }
            _ => {}
        }
    }
    out
}

/// A holder's belief in one lease, in true time.
struct Belief {
    holder: String,
    target: String,
    id: String,
    start_ns: u64,
    end_ns: u64,
    first_local_ms: u64,
    until_local_ms: u64,
    why_ended: String,
}

fn beliefs(h: &LeaseHistory, end_ns: u64) -> Vec<Belief> {
    let mut out: Vec<Belief> = Vec::new();
    let mut open: BTreeMap<(String, String), usize> = BTreeMap::new();
    for e in &h.node_events {
        match &e.event {
            LeaseEvent::Believes {
                target,
                lease_id,
                until_local_ms,
            } => {
                let k = (e.node.clone(), target.clone());
                // Its clock reads `until` this much later, at its rate: an estimate.
                let until_ns = e.at_ns + until_local_ms.saturating_sub(e.local_ms) * 1_000_000;
                match open.get(&k) {
                    Some(&i) if out[i].id == *lease_id => {
                        out[i].end_ns = until_ns.min(end_ns);
                        out[i].until_local_ms = *until_local_ms;
                    }
                    _ => {
                        out.push(Belief {
                            holder: e.node.clone(),
                            target: target.clone(),
                            id: lease_id.clone(),
                            start_ns: e.at_ns,
                            end_ns: until_ns.min(end_ns),
                            first_local_ms: e.local_ms,
                            until_local_ms: *until_local_ms,
                            why_ended: "its clock reached the end it allowed itself".into(),
                        });
                        open.insert(k, out.len() - 1);
                    }
                }
            }
            LeaseEvent::Dropped {
                target,
                lease_id,
                why,
            } => {
                if let Some(i) = open.remove(&(e.node.clone(), target.clone())) {
                    if out[i].id == *lease_id {
                        out[i].end_ns = e.at_ns.max(out[i].start_ns);
                        out[i].why_ended = why.clone();
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Draws the calls, the two bars of each lease per holder, side effects and
/// the server's recoveries.
pub fn draw(p: &LeasesParams, h: &LeaseHistory, t: &mut Timeline) {
    let end_ns = t.end_ns;
    t.add_ops(
        &h.ops,
        |o| node_of(p, o.client),
        |o| words(&o.call, o.result.as_ref()),
    );
    let named = |holder: Option<&str>, id: &str, t: &Timeline| {
        let tag = short(id);
        t.findings.iter().any(|f| {
            (f.message.contains(&tag) || f.message.contains(id))
                && holder.is_none_or(|hname| f.message.contains(hname))
        })
    };
    let believed = beliefs(h, end_ns);
    let log = server_log(h);
    let held = held(&log, end_ns);
    // Which holder each lease id belongs to: the holder that believed it.
    let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
    for b in &believed {
        owner.entry(b.id.as_str()).or_insert(node_lane(&b.holder));
    }
    // Two lanes under each holder: the server's view and the holder's belief.
    for i in 0..p.holders {
        let holder = Topology::node_name(LeasesRole::Holder, i);
        let at = t
            .lanes
            .iter()
            .position(|l| l.id == holder)
            .map_or(t.lanes.len(), |k| k + 1);
        let server = overcast_sim::timeline::Lane {
            id: format!("{holder}:server"),
            label: "↳ server's view".into(),
            note: format!("{holder}'s leases as the server's log shows them (solid)"),
        };
        let belief = overcast_sim::timeline::Lane {
            id: format!("{holder}:belief"),
            label: "↳ belief".into(),
            note: format!("when {holder} believed it held them, by its own clock (hatched)"),
        };
        t.lanes.insert(at.min(t.lanes.len()), belief);
        t.lanes.insert(at.min(t.lanes.len()), server);
    }
    let mut unowned = false;
    for x in &held {
        let lane = match owner.get(x.id.as_str()) {
            Some(hname) => format!("{hname}:server"),
            None => {
                unowned = true;
                "leases:server".to_string()
            }
        };
        let highlight = named(None, &x.id, t);
        t.spans.push(Span {
            lane,
            start_ns: x.start_ns,
            end_ns: Some(x.end_ns),
            label: format!("{} {}", short(&x.id), x.target),
            detail: format!(
                "the server's view: lease {} on {} locked from {} to {} true time ({}; times from the server's clock, mapped to true time at its offset)",
                x.id,
                x.target,
                secs(x.start_ns),
                secs(x.end_ns),
                x.how_ended
            ),
            kind: SpanKind::Held,
            highlight,
        });
    }
    if unowned {
        t.lane(
            "leases:server",
            "other leases · server's view",
            "leases no holder believed in (taken by clients, or never answered)",
        );
    }
    for b in &believed {
        let hname = node_lane(&b.holder);
        let highlight = named(Some(&b.holder), &b.id, t);
        t.spans.push(Span {
            lane: format!("{hname}:belief"),
            start_ns: b.start_ns,
            end_ns: Some(b.end_ns),
            label: format!("{} {}", short(&b.id), b.target),
            detail: format!(
                "{} believed it held lease {} on {} from {} to {} true time (its clock read {} at the start and allowed itself until {}; offset at the start {:+.3} s); ended: {}",
                b.holder,
                b.id,
                b.target,
                secs(b.start_ns),
                secs(b.end_ns),
                clock_secs(b.first_local_ms),
                clock_secs(b.until_local_ms),
                (b.first_local_ms as f64 - EPOCH_MS as f64 - b.start_ns as f64 / 1e6) / 1000.0,
                b.why_ended
            ),
            kind: SpanKind::Believed,
            highlight,
        });
    }
    widen_highlight(t);
    for e in &h.node_events {
        match &e.event {
            LeaseEvent::SideEffect { target, lease_id } => {
                let hname = node_lane(&e.node);
                t.marks.push(Mark {
                    lane: format!("{hname}:belief"),
                    at_ns: e.at_ns,
                    label: "acts".into(),
                    detail: format!(
                        "{} did unfenced work under lease {} on {target} at {} true time (its clock read {})",
                        e.node,
                        short(lease_id),
                        secs(e.at_ns),
                        clock_secs(e.local_ms)
                    ),
                    kind: MarkKind::Event,
                    highlight: false,
                });
            }
            LeaseEvent::Recovered { kept } => t.marks.push(Mark {
                lane: node_lane(&e.node).to_string(),
                at_ns: e.at_ns,
                label: format!("recovered {kept}"),
                detail: format!(
                    "{} restarted and recovered the first {kept} records of its log at {}",
                    e.node,
                    secs(e.at_ns)
                ),
                kind: MarkKind::Event,
                highlight: false,
            }),
            _ => {}
        }
    }
}

/// A violation names one lease by id and the other holder only by name
/// (L9: "holder B acquired it at …"): the other holder's bars on the same
/// resource that overlap the named lease's are part of it too.
fn widen_highlight(t: &mut Timeline) {
    let named: Vec<(String, u64, u64)> = t
        .spans
        .iter()
        .filter(|s| s.highlight)
        .map(|s| {
            (
                target_of(&s.label),
                s.start_ns,
                s.end_ns.unwrap_or(u64::MAX),
            )
        })
        .collect();
    let holders: Vec<String> = t
        .lanes
        .iter()
        .filter_map(|l| l.id.strip_suffix(":belief").map(str::to_string))
        .filter(|h| t.findings.iter().any(|f| mentions(&f.message, h)))
        .collect();
    for s in t.spans.iter_mut().filter(|s| !s.highlight) {
        let Some(holder) = s.lane.split(':').next() else {
            continue;
        };
        if !holders.iter().any(|h| h == holder) {
            continue;
        }
        let target = target_of(&s.label);
        let end = s.end_ns.unwrap_or(u64::MAX);
        s.highlight = named
            .iter()
            .any(|(t, a, b)| *t == target && s.start_ns < *b && *a < end);
    }
}

/// The resource of a lease bar's label (`da64… leases/b0` → `leases/b0`).
fn target_of(label: &str) -> String {
    label.split_once(' ').map_or("", |(_, t)| t).to_string()
}

/// Whether `text` names `holder` as a word (`holder-1`, not `holder-10`).
fn mentions(text: &str, holder: &str) -> bool {
    text.match_indices(holder).any(|(i, _)| {
        !text[i + holder.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}
