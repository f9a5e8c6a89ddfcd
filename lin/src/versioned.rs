//! The version-aware fast path.
//!
//! When a spec gives version claims ([`Spec::claim`]), the order of the
//! successful writes of a key is known from their versions, and each read
//! names the version it saw. [`decide`] then works in O(n log n):
//! * **refutation**: if an operation that left the key at version `v`
//!   returned before another that needs a version below `v` was invoked, or
//!   two known writes produced the same version, or an operation needs a
//!   version below the initial one, no linearization exists (a
//!   [`Certificate`]);
//! * **witness**: otherwise it builds an order greedily (writes by version,
//!   each at the earliest instant its interval and its predecessors allow;
//!   reads of a version after its write; versions no known write produced
//!   filled by writes without a claim or with an unknown outcome; other reads
//!   in any version segment their interval overlaps where they are legal) and
//!   replays it through [`Spec::step`]. A replayed witness proves
//!   linearizability.
//!
//! Anything else is [`Decision::Undecided`], and the exact search decides.

use super::search::KOp;
use super::spec::{Claim, Spec};
use std::collections::BTreeSet;

/// A proof, from the version claims, that a key's history is not
/// linearizable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Certificate {
    /// The operation (index among the key's operations) that left the key at
    /// `version_before`, or `None` for the initial state.
    pub earlier: Option<usize>,
    /// The operation that needed an older version.
    pub later: usize,
    /// The version the key had certainly reached before `later` was invoked.
    pub version_before: u64,
    /// The version `later` needs.
    pub version_needed: u64,
}

/// What the fast path found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// A witness order was found and replayed.
    Linearizable,
    /// The claims contradict real time.
    Refuted(Certificate),
    /// The claims do not settle it.
    Undecided,
}

fn need(c: Claim) -> Option<u64> {
    match c {
        Claim::None => None,
        Claim::At(v) => Some(v),
        Claim::Produced(v) => v.checked_sub(1),
    }
}

fn post(c: Claim) -> Option<u64> {
    match c {
        Claim::None => None,
        Claim::At(v) | Claim::Produced(v) => Some(v),
    }
}

/// Decides one key's operations from `init` using version claims, if it can.
pub(crate) fn decide<P: Spec>(
    spec: &P,
    init: &P::State,
    ops: &[KOp<'_, P::Input, P::Output>],
) -> Decision {
    let Some(v0) = spec.version_of(init) else {
        return Decision::Undecided;
    };
    if let Some(c) = refute(v0, ops) {
        return Decision::Refuted(c);
    }
    match witness(spec, init, v0, ops, None) {
        Some(order) if replay(spec, init, ops, order.iter().map(|&(p, _, _, i)| (p, i))) => {
            Decision::Linearizable
        }
        _ => Decision::Undecided,
    }
}

fn refute<I, O>(v0: u64, ops: &[KOp<'_, I, O>]) -> Option<Certificate> {
    let claimed: Vec<usize> = (0..ops.len())
        .filter(|&i| ops[i].output.is_some() && ops[i].claim != Claim::None)
        .collect();
    // Needs below the initial version, or a Produced(0).
    for &i in &claimed {
        match need(ops[i].claim) {
            Some(n) if n < v0 => {
                return Some(Certificate {
                    earlier: None,
                    later: i,
                    version_before: v0,
                    version_needed: n,
                })
            }
            None => {
                return Some(Certificate {
                    earlier: None,
                    later: i,
                    version_before: v0,
                    version_needed: 0,
                })
            }
            _ => {}
        }
    }
    // Real-time order against versions.
    let mut by_ret = claimed.clone();
    by_ret.sort_by_key(|&i| (ops[i].ret.unwrap_or(i64::MAX), i));
    let mut by_call = claimed.clone();
    by_call.sort_by_key(|&i| (ops[i].call, i));
    let mut k = 0;
    let mut best: Option<(u64, usize)> = None;
    for &b in &by_call {
        while k < by_ret.len() && ops[by_ret[k]].ret.unwrap_or(i64::MAX) < ops[b].call {
            let a = by_ret[k];
            if let Some(p) = post(ops[a].claim) {
                if best.is_none_or_lt(p) {
                    best = Some((p, a));
                }
            }
            k += 1;
        }
        if let (Some((p, a)), Some(n)) = (best, need(ops[b].claim)) {
            if p > n {
                return Some(Certificate {
                    earlier: Some(a),
                    later: b,
                    version_before: p,
                    version_needed: n,
                });
            }
        }
    }
    // Two known writes producing the same version.
    let mut prod: Vec<(u64, usize)> = claimed
        .iter()
        .filter_map(|&i| match ops[i].claim {
            Claim::Produced(v) => Some((v, i)),
            _ => None,
        })
        .collect();
    prod.sort_unstable();
    for w in prod.windows(2) {
        if w[0].0 == w[1].0 {
            let (a, b) = if ops[w[0].1].call <= ops[w[1].1].call {
                (w[0].1, w[1].1)
            } else {
                (w[1].1, w[0].1)
            };
            return Some(Certificate {
                earlier: Some(a),
                later: b,
                version_before: w[0].0,
                version_needed: w[0].0 - 1,
            });
        }
    }
    None
}

trait BestExt {
    fn is_none_or_lt(&self, p: u64) -> bool;
}
impl BestExt for Option<(u64, usize)> {
    fn is_none_or_lt(&self, p: u64) -> bool {
        match self {
            None => true,
            Some((q, _)) => p > *q,
        }
    }
}

fn none_or(w: Option<usize>, f: impl FnOnce(usize) -> bool) -> bool {
    match w {
        None => true,
        Some(w) => f(w),
    }
}

/// A placed operation: (point, segment version, kind: 0 = write 1 = other, op).
/// A placed operation: (point, version or segment, 0 write / 1 other, operation).
pub(crate) type Placed = (i64, u64, u8, usize);

fn first_state<P: Spec>(
    spec: &P,
    s: &P::State,
    o: &KOp<'_, P::Input, P::Output>,
    want: impl Fn(&P::State) -> bool,
) -> Option<P::State> {
    let mut found = None;
    spec.step(s, o.input, o.output).for_each(|n| {
        if found.is_none() && want(&n) {
            found = Some(n);
        }
    });
    found
}

/// Where the greedy witness stands at version `c`.
pub(crate) struct AtVersion<S> {
    /// The state just after the write that produced version `c`.
    pub state: S,
    /// The operations it placed so far.
    pub used: Vec<bool>,
}

/// A state the greedy witness reaches at version `c` (just after the write
/// that produced it), if it gets that far.
pub(crate) fn state_at<P: Spec>(
    spec: &P,
    init: &P::State,
    ops: &[KOp<'_, P::Input, P::Output>],
    c: u64,
) -> Option<AtVersion<P::State>> {
    let v0 = spec.version_of(init)?;
    let mut out = None;
    let _ = witness(spec, init, v0, ops, Some((c, &mut out)));
    out
}

fn witness<P: Spec>(
    spec: &P,
    init: &P::State,
    v0: u64,
    ops: &[KOp<'_, P::Input, P::Output>],
    mut stop: Option<(u64, &mut Option<AtVersion<P::State>>)>,
) -> Option<Vec<Placed>> {
    let ret = |o: &KOp<'_, P::Input, P::Output>| o.ret.unwrap_or(i64::MAX);
    let mut producer: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
    let mut readers: std::collections::BTreeMap<u64, Vec<usize>> =
        std::collections::BTreeMap::new();
    let mut floaters: Vec<usize> = Vec::new(); // may change the state, no claim
    let mut loose: Vec<usize> = Vec::new(); // read-only, no claim
    let mut vmax = v0;
    for (i, o) in ops.iter().enumerate() {
        match (o.output.is_some(), o.claim) {
            (true, Claim::Produced(v)) => {
                producer.insert(v, i);
                vmax = vmax.max(v);
            }
            (true, Claim::At(v)) => {
                readers.entry(v).or_default().push(i);
                vmax = vmax.max(v);
            }
            _ if o.read_only => loose.push(i),
            _ => floaters.push(i),
        }
    }
    // Writes without a claim fill the versions no known write produced:
    // known ones must be placed (earliest deadline first), unknown ones may.
    let mut mand: BTreeSet<(i64, i64, usize)> = BTreeSet::new();
    let mut opt: BTreeSet<(i64, usize)> = BTreeSet::new();
    // Blind unknown writes are interchangeable: one of them (the earliest
    // invoked) is tried where any would do.
    let mut blind: BTreeSet<(i64, usize)> = BTreeSet::new();
    for &f in &floaters {
        pool_insert(ops, f, &mut mand, &mut opt, &mut blind);
    }
    let vlimit = vmax + mand.len() as u64 + 1;
    let mut used = vec![false; ops.len()];
    let mut log: Vec<usize> = Vec::new();
    let mut placed: Vec<Placed> = Vec::with_capacity(ops.len());
    let mut seg_start: Vec<i64> = Vec::new(); // point of the write opening each segment
    let mut seg_state: Vec<P::State> = Vec::new();
    let mut state = init.clone();
    let mut t = i64::MIN;
    let mut v = v0;
    // Choice points at versions filled by a write without a claim.
    struct Frame<S> {
        v: u64,
        t: i64,
        placed: usize,
        log: usize,
        segs: usize,
        cands: Vec<(usize, S)>,
        next: usize,
    }
    let mut stack: Vec<Frame<P::State>> = Vec::new();
    let mut backtracks = 0usize;
    let mut force_fail = false;
    loop {
        let mut failed = std::mem::take(&mut force_fail);
        if v > v0 && !failed {
            // The write that opens segment v: it must suit the readers of v
            // and let the known producer of v + 1 follow.
            let rs: &[usize] = readers.get(&v).map_or(&[], |r| r.as_slice());
            let next_w = producer.get(&(v + 1)).copied();
            let fits = |s: &P::State| {
                spec.version_of(s) == Some(v)
                    && rs
                        .iter()
                        .all(|&r| spec.step(s, ops[r].input, ops[r].output).is_legal())
                    && none_or(next_w, |w| {
                        spec.step(s, ops[w].input, ops[w].output).is_legal()
                    })
            };
            if let Some(&w) = producer.get(&v) {
                let p = t.max(ops[w].call);
                match first_state(spec, &state, &ops[w], fits) {
                    Some(ns) if p <= ret(&ops[w]) && !used[w] => {
                        used[w] = true;
                        log.push(w);
                        state = ns;
                        t = p;
                        placed.push((p, v, 0, w));
                    }
                    _ => failed = true,
                }
            } else {
                let mut cands: Vec<(usize, P::State)> = Vec::new();
                let mut late: Vec<(i64, usize, P::State)> = Vec::new();
                for &(_, call, f) in mand.iter().take(256) {
                    if let Some(ns) = first_state(spec, &state, &ops[f], fits) {
                        if call <= t {
                            if cands.len() < 4 {
                                cands.push((f, ns));
                            }
                        } else if late.len() < 4 {
                            late.push((call, f, ns));
                        }
                    }
                }
                // Unknown writes whose result someone observes (values are
                // usually unique, so few fit), then one blind write.
                // Those invoked later: the first few only.
                let mut k = 0;
                let mut later = 0;
                for &(call, f) in opt.iter() {
                    if call > t {
                        later += 1;
                        if later > 16 {
                            break;
                        }
                    }
                    if let Some(ns) = first_state(spec, &state, &ops[f], fits) {
                        if call <= t {
                            cands.push((f, ns));
                            k += 1;
                            if k >= 16 {
                                break;
                            }
                        } else {
                            late.push((call, f, ns));
                            break;
                        }
                    }
                }
                if let Some(&(call, f)) = blind.first() {
                    if let Some(ns) = first_state(spec, &state, &ops[f], fits) {
                        if call <= t {
                            cands.push((f, ns));
                        } else {
                            late.push((call, f, ns));
                        }
                    }
                }
                // Writes invoked after the cursor would push it: last, the
                // earliest first; except known ones that cannot wait for the
                // next free version (the known writes and reads before it
                // start later than their deadline): first.
                let mut bound = i64::MIN;
                let mut u = v;
                while u < v + 64 {
                    for &r in readers.get(&u).map_or(&[][..], |r| r.as_slice()) {
                        bound = bound.max(ops[r].call);
                    }
                    u += 1;
                    match producer.get(&u) {
                        Some(&w) => bound = bound.max(ops[w].call),
                        None => break,
                    }
                }
                // Blind writes last: they only fill a version nobody looks at.
                late.sort_by_key(|x| (ops[x.1].blind, x.0, x.1));
                let (urgent, late): (Vec<_>, Vec<_>) = late
                    .into_iter()
                    .partition(|(_, f, _)| ops[*f].output.is_some() && ret(&ops[*f]) < bound);
                let mut all: Vec<(usize, P::State)> =
                    urgent.into_iter().map(|(_, f, ns)| (f, ns)).collect();
                all.append(&mut cands);
                all.extend(late.into_iter().map(|(_, f, ns)| (f, ns)));
                let cands = all;
                if cands.is_empty() {
                    // Backjump: undo the latest choice that took a write
                    // which would fit here.
                    let mut target = None;
                    // (Among the latest few: a scan of the whole stack at
                    // every dead end would be quadratic.)
                    for (fi, fr) in stack.iter().enumerate().rev().take(64) {
                        let (f, _) = &fr.cands[fr.next.saturating_sub(1)];
                        if fr.next > 0
                            && t.max(ops[*f].call) <= ret(&ops[*f])
                            && first_state(spec, &state, &ops[*f], fits).is_some()
                        {
                            target = Some(fi);
                            break;
                        }
                    }
                    if let Some(fi) = target {
                        stack.truncate(fi + 1);
                    }
                    failed = true;
                } else {
                    stack.push(Frame {
                        v,
                        t,
                        placed: placed.len(),
                        log: log.len(),
                        segs: seg_start.len(),
                        cands,
                        next: 0,
                    });
                    failed = true; // take the first candidate below
                }
            }
        }
        if failed {
            // Take the next candidate of the latest choice point.
            loop {
                let top = stack.last_mut()?;
                if top.next >= top.cands.len() {
                    stack.pop();
                    continue;
                }
                backtracks += 1;
                if backtracks > 1_000 + 4 * floaters.len() {
                    return None;
                }
                v = top.v;
                t = top.t;
                placed.truncate(top.placed);
                seg_start.truncate(top.segs);
                seg_state.truncate(top.segs);
                while log.len() > top.log {
                    if let Some(i) = log.pop() {
                        used[i] = false;
                        if floaters.binary_search(&i).is_ok() {
                            pool_insert(ops, i, &mut mand, &mut opt, &mut blind);
                        }
                    }
                }
                let (f, ns) = top.cands[top.next].clone();
                top.next += 1;
                let p = t.max(ops[f].call);
                used[f] = true;
                log.push(f);
                mand.remove(&(ret(&ops[f]), ops[f].call, f));
                opt.remove(&(ops[f].call, f));
                blind.remove(&(ops[f].call, f));
                state = ns;
                t = p;
                placed.push((p, v, 0, f));
                break;
            }
        }
        if let Some((c, out)) = &mut stop {
            if v == *c {
                **out = Some(AtVersion {
                    state: state.clone(),
                    used: used.clone(),
                });
                return None;
            }
        }
        seg_start.push(t);
        seg_state.push(state.clone());
        let mut tmax = t;
        let mut bad = false;
        if let Some(rs) = readers.get(&v) {
            for &r in rs {
                let p = t.max(ops[r].call);
                if p > ret(&ops[r]) || !spec.step(&state, ops[r].input, ops[r].output).is_legal() {
                    bad = true;
                    break;
                }
                used[r] = true;
                log.push(r);
                placed.push((p, v, 1, r));
                tmax = tmax.max(p);
            }
        }
        t = tmax;
        // A known write without a claim whose deadline passed can no longer be placed.
        if bad || mand.first().is_some_and(|&(r, _, _)| r < t) || v > vlimit {
            // Backtrack at the next iteration; when a known write missed its
            // deadline, straight to the latest choice that could have taken it.
            if let Some(&(_, _, f)) = mand.first().filter(|&&(r, _, _)| r < t && !bad) {
                if let Some(fi) = stack.iter().rposition(|fr| {
                    fr.cands[fr.next.min(fr.cands.len())..]
                        .iter()
                        .any(|(g, _)| *g == f)
                }) {
                    stack.truncate(fi + 1);
                }
            }
            force_fail = true;
            continue;
        }
        if v >= vmax && mand.is_empty() {
            break;
        }
        v += 1;
    }
    // Claimless read-only operations: any segment their interval overlaps
    // where they are legal.
    for &r in &loose {
        let o = &ops[r];
        let mut k = seg_start
            .partition_point(|&p| p <= o.call)
            .saturating_sub(1);
        let mut tries = 0;
        let mut done = false;
        while k < seg_start.len() && tries < 64 {
            let lo = o.call.max(seg_start[k]);
            let hi = ret(o).min(seg_start.get(k + 1).copied().unwrap_or(i64::MAX));
            if lo > ret(o) {
                break;
            }
            if lo <= hi && spec.step(&seg_state[k], o.input, o.output).is_legal() {
                placed.push((lo, v0 + k as u64, 1, r));
                used[r] = true;
                done = true;
                break;
            }
            k += 1;
            tries += 1;
        }
        if !done {
            return None;
        }
    }
    if ops
        .iter()
        .enumerate()
        .any(|(i, o)| o.output.is_some() && !used[i])
    {
        return None;
    }
    placed.sort_unstable();
    Some(placed)
}

/// Puts a write without a claim back into the pool it is chosen from: known
/// ones by deadline, unknown ones by invocation, blind ones apart.
fn pool_insert<I, O>(
    ops: &[KOp<'_, I, O>],
    f: usize,
    mand: &mut BTreeSet<(i64, i64, usize)>,
    opt: &mut BTreeSet<(i64, usize)>,
    blind: &mut BTreeSet<(i64, usize)>,
) {
    let o = &ops[f];
    if o.output.is_some() {
        mand.insert((o.ret.unwrap_or(i64::MAX), o.call, f));
    } else if o.blind {
        blind.insert((o.call, f));
    } else {
        opt.insert((o.call, f));
    }
}

/// Replays a candidate order: every point inside its operation's interval,
/// every step legal. Success proves linearizability.
pub(crate) fn replay<P: Spec>(
    spec: &P,
    init: &P::State,
    ops: &[KOp<'_, P::Input, P::Output>],
    order: impl IntoIterator<Item = (i64, usize)>,
) -> bool {
    let mut seen = vec![false; ops.len()];
    let mut states = vec![init.clone()];
    let mut last = i64::MIN;
    for (p, i) in order {
        let o = &ops[i];
        if seen[i] || p < o.call || p > o.ret.unwrap_or(i64::MAX) || p < last {
            return false;
        }
        seen[i] = true;
        last = p;
        let mut next: Vec<P::State> = Vec::new();
        for s in &states {
            spec.step(s, o.input, o.output).for_each(|n| {
                if !next.contains(&n) && next.len() < 64 {
                    next.push(n);
                }
            });
        }
        if next.is_empty() {
            return false;
        }
        states = next;
    }
    ops.iter()
        .enumerate()
        .all(|(i, o)| o.output.is_none() || seen[i])
}
