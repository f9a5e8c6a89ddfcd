//! The unique-values pass: keys whose written values are all distinct,
//! decided without a search when it can.
//!
//! When no two operations write the same value (and none writes the
//! initial one), each value names the write that produced it, so the
//! order of a linearization is mostly known from the values alone
//! (Gibbons & Korach's register with a known read-mapping). The view
//! comes from [`Spec::register`]. Per value, its *cluster* is its write
//! and the reads that return it (the initial value's cluster has no
//! write): in any linearization a cluster's operations come together, no
//! write between them, since the value cannot come back once overwritten.
//! A successful compare-and-set expecting `v` comes directly after the
//! write of `v`: chained clusters form a *unit*, again contiguous in any
//! linearization. Two units are then ordered as soon as an operation of
//! one returns before an operation of the other is invoked.
//!
//! [`decide`] builds the units in O(n), then orders them in O(n log n)
//! (Kahn's algorithm on that precedence, which for this relation needs
//! only the earliest return `F` and the latest invocation `S` of each unit:
//! a unit may come next iff its `S` is at most every other remaining
//! unit's `F`):
//! * **refutation**: a value nobody writes, a read that returns before
//!   its value's write is invoked, two operations that both need to come
//!   directly after the same value, an operation of a chain invoked after
//!   an operation on a later value of the chain returned, or two units that
//!   must each come before the other (when the ordering gets stuck, the
//!   two remaining units with the earliest returns are such a pair). Each
//!   is a [`Contradiction`], true of every linearization; it holds with
//!   unknown outcomes too (a write whose value someone reads must have
//!   taken effect; the others may only add writes between units);
//! * **witness**: otherwise the order of the units, each write placed at
//!   the earliest instant it allows and its reads after it, with the
//!   failed compare-and-sets and conditional puts placed in a segment
//!   their interval meets and whose value (or version) differs from the
//!   one they expected, unknown writes nobody needs left out, and
//!   conditional puts at the version they expected. The order is replayed
//!   through [`Spec::step`]; a replayed witness proves linearizability.
//!
//! Anything else is [`Decision::Undecided`], and the search decides (keys
//! whose values repeat never get here).

use super::search::KOp;
use super::spec::{Guard, RegisterOp, Spec};
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

const NONE: usize = usize::MAX;

/// A proof, from the values alone, that a key's history is not
/// linearizable (operations are indices among the key's operations).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Contradiction {
    /// `op` needs a value that no operation writes and the key does not
    /// start with.
    NeverWritten {
        /// The operation.
        op: usize,
    },
    /// `read` returned before `write`, the only operation that writes
    /// what it needs, was invoked.
    ReadBeforeWrite {
        /// The operation that needs the value.
        read: usize,
        /// The write of that value.
        write: usize,
    },
    /// `a` and `b` both need the value written by `after` (`None`: the
    /// initial value) directly before them, and both write.
    TwoSuccessors {
        /// One of them.
        a: usize,
        /// The other.
        b: usize,
        /// The write of the value they expect.
        after: Option<usize>,
    },
    /// Within one unit, `early` (on a later value of the chain) returned
    /// before `late` (on an earlier one) was invoked.
    ChainOrder {
        /// The operation on the later value.
        early: usize,
        /// The operation on the earlier value.
        late: usize,
    },
    /// Two units must each come before the other: `a_ret` (of the first)
    /// returned before `b_call` (of the second) was invoked, and `b_ret`
    /// returned before `a_call` was invoked. `a_ret` is `None` when the
    /// first unit starts with the initial value (it comes first anyway).
    Cycle {
        /// An operation of the first unit that returned early.
        a_ret: Option<usize>,
        /// An operation of the first unit invoked late.
        a_call: usize,
        /// An operation of the second unit that returned early.
        b_ret: usize,
        /// An operation of the second unit invoked late.
        b_call: usize,
    },
}

impl Contradiction {
    /// The operation most likely the one that cannot be placed (when no
    /// search of the window says which).
    pub(crate) fn primary(&self) -> usize {
        match *self {
            Contradiction::NeverWritten { op } => op,
            Contradiction::ReadBeforeWrite { read, .. } => read,
            Contradiction::TwoSuccessors { b, .. } => b,
            Contradiction::ChainOrder { late, .. } => late,
            Contradiction::Cycle { a_call, .. } => a_call,
        }
    }
}

/// A contradiction and the operations that show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refutation {
    /// What contradicts.
    pub contradiction: Contradiction,
    /// The operations a sub-history needs to show it from the initial
    /// state (increasing): those named, the writes of the values they see,
    /// the chain of compare-and-sets between them, and the reads that force
    /// writes with an unknown outcome to have taken effect.
    pub window: Vec<usize>,
    /// For each operation the sentence names, the operation that writes
    /// the value it is on (`None`: the initial value), in the order
    /// `ops_named` gives.
    pub value_of: Vec<(usize, Option<usize>)>,
}

/// What the pass found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// A witness order was found and replayed.
    Linearizable,
    /// The values contradict real time.
    Refuted(Box<Refutation>),
    /// The values do not settle it (or values repeat).
    Undecided,
}

/// A value's write and the reads that return it.
struct Cluster {
    /// The write (`NONE`: the initial value).
    write: usize,
    reads: Vec<usize>,
    /// The earliest return among its operations, and which.
    f: (i64, usize),
    /// The latest invocation among them, and which.
    s: (i64, usize),
}

/// Clusters chained by compare-and-set.
struct Unit {
    clusters: Vec<usize>,
    f: (i64, usize),
    s: (i64, usize),
    /// Writes in it.
    writes: u64,
    /// Writes that must take effect before it (from a conditional put).
    req: Option<u64>,
}

/// The key's operations seen through the register view.
struct Pass<'a> {
    view: &'a [RegisterOp],
    call: Vec<i64>,
    ret: Vec<i64>,
    init: u32,
    v0: u64,
    writer: FxHashMap<u32, usize>,
    /// Writes that certainly take effect.
    mand: Vec<bool>,
    /// For a write with an unknown outcome that must take effect: the
    /// operation that needs its value.
    why: Vec<usize>,
    cluster_of: Vec<usize>,
    clusters: Vec<Cluster>,
    /// The cluster whose value a write expects (`NONE`: none).
    pred: Vec<usize>,
    unit_of: Vec<usize>,
    units: Vec<Unit>,
}

fn value_written(op: &RegisterOp) -> Option<u32> {
    match op {
        RegisterOp::Wrote { value, .. } | RegisterOp::MayWrite { value, .. } => Some(*value),
        _ => None,
    }
}

fn guard_of(op: &RegisterOp) -> Option<Guard> {
    match op {
        RegisterOp::Wrote { guard, .. } | RegisterOp::MayWrite { guard, .. } => *guard,
        _ => None,
    }
}

/// Decides one key's operations from `init` when its written values are
/// unique, if it can.
pub(crate) fn decide<P: Spec>(
    spec: &P,
    init: &P::State,
    ops: &[KOp<'_, P::Input, P::Output>],
) -> Decision {
    if ops.is_empty() {
        return Decision::Undecided;
    }
    let io: Vec<_> = ops.iter().map(|k| (k.input, k.output)).collect();
    let Some(view) = spec.register(init, &io) else {
        return Decision::Undecided;
    };
    if view.ops.len() != ops.len() {
        return Decision::Undecided;
    }
    let mut pass = Pass {
        view: &view.ops,
        call: ops.iter().map(|o| o.call).collect(),
        ret: ops.iter().map(|o| o.ret.unwrap_or(i64::MAX)).collect(),
        init: view.init,
        v0: view.init_version,
        writer: FxHashMap::default(),
        mand: vec![false; ops.len()],
        why: vec![NONE; ops.len()],
        cluster_of: vec![NONE; ops.len()],
        clusters: Vec::new(),
        pred: Vec::new(),
        unit_of: Vec::new(),
        units: Vec::new(),
    };
    match pass.build() {
        Ok(true) => {}
        Ok(false) => return Decision::Undecided,
        Err(c) => return Decision::Refuted(Box::new(pass.refutation(c))),
    }
    match pass.order(true) {
        Err(c) => Decision::Refuted(Box::new(pass.refutation(c))),
        Ok(None) => match pass.order(false) {
            // The versions block the order: the units may still contradict.
            Err(c) => Decision::Refuted(Box::new(pass.refutation(c))),
            _ => Decision::Undecided,
        },
        Ok(Some(order)) => match pass.witness(&order) {
            Some(placed) if super::versioned::replay(spec, init, ops, &placed) => {
                Decision::Linearizable
            }
            _ => Decision::Undecided,
        },
    }
}

impl Pass<'_> {
    /// Builds clusters and units; `Ok(false)` when the pass does not apply
    /// (values repeat, or a shape it leaves to the search).
    fn build(&mut self) -> Result<bool, Contradiction> {
        let n = self.view.len();
        for (i, op) in self.view.iter().enumerate() {
            if let Some(v) = value_written(op) {
                if v == self.init || self.writer.insert(v, i).is_some() {
                    return Ok(false);
                }
            }
        }
        // The writes that certainly take effect: the known ones, and those
        // whose value a read or a write that takes effect needs.
        let mut stack: Vec<usize> = Vec::new();
        for (i, op) in self.view.iter().enumerate() {
            match op {
                RegisterOp::Wrote { .. } => {
                    self.mand[i] = true;
                    stack.push(i);
                }
                RegisterOp::Read(x) if *x != self.init => match self.writer.get(x) {
                    Some(&w) => {
                        if !self.mand[w] {
                            self.mand[w] = true;
                            self.why[w] = i;
                            stack.push(w);
                        }
                    }
                    None => return Err(Contradiction::NeverWritten { op: i }),
                },
                _ => {}
            }
        }
        stack.reverse();
        while let Some(w) = stack.pop() {
            if let Some(Guard::Value(e)) = guard_of(&self.view[w]) {
                if e == self.init {
                    continue;
                }
                match self.writer.get(&e) {
                    Some(&p) => {
                        if !self.mand[p] {
                            self.mand[p] = true;
                            self.why[p] = w;
                            stack.push(p);
                        }
                    }
                    None if matches!(self.view[w], RegisterOp::Wrote { .. }) => {
                        return Err(Contradiction::NeverWritten { op: w });
                    }
                    None => return Ok(false),
                }
            }
        }
        // Clusters: the initial value's, then one per write that takes effect.
        self.clusters.push(Cluster {
            write: NONE,
            reads: Vec::new(),
            f: (i64::MAX, NONE),
            s: (i64::MIN, NONE),
        });
        for i in 0..n {
            if self.mand[i] {
                self.cluster_of[i] = self.clusters.len();
                self.clusters.push(Cluster {
                    write: i,
                    reads: Vec::new(),
                    f: (self.ret[i], i),
                    s: (self.call[i], i),
                });
            }
        }
        for (i, op) in self.view.iter().enumerate() {
            if let RegisterOp::Read(x) = op {
                let c = if *x == self.init {
                    0
                } else {
                    self.cluster_of[self.writer[x]]
                };
                self.cluster_of[i] = c;
                let cl = &mut self.clusters[c];
                cl.reads.push(i);
                if self.ret[i] < cl.f.0 {
                    cl.f = (self.ret[i], i);
                }
                if self.call[i] > cl.s.0 {
                    cl.s = (self.call[i], i);
                }
            }
        }
        for cl in &self.clusters[1..] {
            // A read returning before its write is invoked.
            if cl.f.0 < self.call[cl.write] {
                return Err(Contradiction::ReadBeforeWrite {
                    read: cl.f.1,
                    write: cl.write,
                });
            }
        }
        // Chains: a write expecting a value comes directly after it.
        let nc = self.clusters.len();
        self.pred = vec![NONE; nc];
        let mut succ = vec![NONE; nc];
        for c in 1..nc {
            let w = self.clusters[c].write;
            if let Some(Guard::Value(e)) = guard_of(&self.view[w]) {
                let p = if e == self.init {
                    0
                } else {
                    self.cluster_of[self.writer[&e]]
                };
                self.pred[c] = p;
                if succ[p] != NONE {
                    let pw = self.clusters[p].write;
                    return Err(Contradiction::TwoSuccessors {
                        a: self.clusters[succ[p]].write,
                        b: w,
                        after: (pw != NONE).then_some(pw),
                    });
                }
                succ[p] = c;
            }
        }
        // Units: maximal chains, the initial value's first.
        self.unit_of = vec![NONE; nc];
        let mut seen = 0;
        for start in 0..nc {
            if start != 0 && self.pred[start] != NONE {
                continue;
            }
            let u = self.units.len();
            let mut unit = Unit {
                clusters: Vec::new(),
                f: (i64::MAX, NONE),
                s: (i64::MIN, NONE),
                writes: 0,
                req: None,
            };
            let mut c = start;
            while c != NONE {
                let cl = &self.clusters[c];
                // Every earlier cluster of the chain comes before this one.
                if cl.f.0 < unit.s.0 {
                    let c2 = Contradiction::ChainOrder {
                        early: cl.f.1,
                        late: unit.s.1,
                    };
                    unit.clusters.push(c);
                    self.unit_of[c] = u;
                    self.units.push(unit);
                    return Err(c2);
                }
                if cl.f.0 < unit.f.0 {
                    unit.f = cl.f;
                }
                if cl.s.0 > unit.s.0 {
                    unit.s = cl.s;
                }
                if cl.write != NONE {
                    if let Some(Guard::Version(ev)) = guard_of(&self.view[cl.write]) {
                        // ev - v0 writes before it, `writes` of them in this unit.
                        let Some(before) = ev
                            .checked_sub(self.v0)
                            .and_then(|b| b.checked_sub(unit.writes))
                        else {
                            return Ok(false);
                        };
                        if unit.req.is_some_and(|r| r != before) {
                            return Ok(false);
                        }
                        unit.req = Some(before);
                    }
                    unit.writes += 1;
                }
                unit.clusters.push(c);
                self.unit_of[c] = u;
                seen += 1;
                c = succ[c];
            }
            self.units.push(unit);
        }
        // Clusters left unvisited are on a cycle of compare-and-sets.
        Ok(seen == nc)
    }

    /// Orders the units (Kahn's algorithm: a unit may come next iff its
    /// latest invocation is at most every other remaining unit's earliest
    /// return). `Err`: two units must each come before the other.
    /// `Ok(None)`: with `versions`, no order found this way puts the
    /// conditional puts at their versions.
    fn order(&self, versions: bool) -> Result<Option<Vec<usize>>, Contradiction> {
        let nu = self.units.len();
        let mut placed = vec![false; nu];
        let mut order = Vec::with_capacity(nu);
        // By earliest return (the initial unit first: it precedes all).
        let mut by_f: BinaryHeap<Reverse<(i64, usize)>> =
            (1..nu).map(|u| Reverse((self.units[u].f.0, u))).collect();
        let mut by_s: Vec<usize> = (1..nu).collect();
        by_s.sort_unstable_by_key(|&u| (self.units[u].s.0, u));
        let mut sp = 0;
        // Ready units, by latest invocation; those waiting for their
        // version apart, by it.
        let mut ready: BTreeSet<(i64, usize)> = BTreeSet::new();
        let mut waiting: BTreeSet<(u64, usize)> = BTreeSet::new();
        let req = |u: usize| if versions { self.units[u].req } else { None };
        // The initial value's unit first: no other may end before it starts.
        if let Some(&Reverse((f, m))) = by_f.peek() {
            if f < self.units[0].s.0 {
                return Err(self.cycle(0, m));
            }
        }
        let mut count = 0u64;
        let mut next = Some(0usize);
        loop {
            if let Some(u) = next.take() {
                let unit = &self.units[u];
                if req(u).is_some_and(|r| r != count) {
                    return Ok(None);
                }
                placed[u] = true;
                order.push(u);
                count += unit.writes;
            }
            while by_f.peek().is_some_and(|Reverse((_, u))| placed[*u]) {
                by_f.pop();
            }
            let Some(&Reverse((f1, m1))) = by_f.peek() else {
                return Ok(Some(order));
            };
            while sp < by_s.len() && self.units[by_s[sp]].s.0 <= f1 {
                let u = by_s[sp];
                sp += 1;
                if !placed[u] {
                    match req(u) {
                        Some(r) => waiting.insert((r, u)),
                        None => ready.insert((self.units[u].s.0, u)),
                    };
                }
            }
            // The unit with the earliest return may come next iff its
            // latest invocation is at most the second earliest return.
            let m1_ready = self.units[m1].s.0 <= f1 || {
                let top = by_f.pop();
                while by_f.peek().is_some_and(|Reverse((_, u))| placed[*u]) {
                    by_f.pop();
                }
                let f2 = by_f.peek().map_or(i64::MAX, |Reverse((f, _))| *f);
                if let Some(t) = top {
                    by_f.push(t);
                }
                self.units[m1].s.0 <= f2
            };
            if let Some(&(r, u)) = waiting.first() {
                if r < count {
                    return Ok(None);
                }
                if r == count {
                    waiting.remove(&(r, u));
                    next = Some(u);
                    continue;
                }
            }
            if m1_ready && req(m1).is_none_or(|r| r == count) {
                ready.remove(&(self.units[m1].s.0, m1));
                if let Some(r) = req(m1) {
                    waiting.remove(&(r, m1));
                }
                next = Some(m1);
                continue;
            }
            if let Some(&(s, u)) = ready.first() {
                ready.remove(&(s, u));
                next = Some(u);
                continue;
            }
            if !waiting.is_empty() || m1_ready {
                // Ready units wait for a version the others do not reach.
                return Ok(None);
            }
            // Stuck: every remaining unit has to follow another one. The
            // two with the earliest returns must each follow the other.
            by_f.pop();
            while by_f.peek().is_some_and(|Reverse((_, u))| placed[*u]) {
                by_f.pop();
            }
            let Some(&Reverse((_, m2))) = by_f.peek() else {
                return Ok(None);
            };
            return Err(self.cycle(m1, m2));
        }
    }

    /// The contradiction of units `a` and `b`, each of which must come
    /// before the other.
    fn cycle(&self, a: usize, b: usize) -> Contradiction {
        let (a, b) = if b == 0 { (b, a) } else { (a, b) };
        let (ua, ub) = (&self.units[a], &self.units[b]);
        Contradiction::Cycle {
            a_ret: (a != 0).then_some(ua.f.1),
            a_call: ua.s.1,
            b_ret: ub.f.1,
            b_call: ub.s.1,
        }
    }

    /// The operations named by a contradiction.
    fn named(c: &Contradiction) -> Vec<usize> {
        match *c {
            Contradiction::NeverWritten { op } => vec![op],
            Contradiction::ReadBeforeWrite { read, write } => vec![read, write],
            Contradiction::TwoSuccessors { a, b, after } => {
                let mut v = vec![a, b];
                v.extend(after);
                v
            }
            Contradiction::ChainOrder { early, late } => vec![early, late],
            Contradiction::Cycle {
                a_ret,
                a_call,
                b_ret,
                b_call,
            } => {
                let mut v = vec![a_call, b_ret, b_call];
                v.extend(a_ret);
                v
            }
        }
    }

    /// The refutation of `c`, with its window.
    fn refutation(&self, c: Contradiction) -> Refutation {
        let named = Self::named(&c);
        let mut win: BTreeSet<usize> = named.iter().copied().collect();
        // The chains up to every named operation's value.
        for &o in &named {
            let cl = self.cluster_of[o];
            if cl == NONE || self.unit_of.is_empty() {
                continue;
            }
            let u = self.unit_of[cl];
            if u == NONE {
                continue;
            }
            for &c2 in &self.units[u].clusters {
                let w = self.clusters[c2].write;
                if w != NONE {
                    win.insert(w);
                }
                if c2 == cl {
                    break;
                }
            }
        }
        // A read needs its value's write (before the units exist too).
        for &o in &named {
            if let RegisterOp::Read(x) = self.view[o] {
                if let Some(&w) = self.writer.get(&x) {
                    win.insert(w);
                }
            }
            if let Some(Guard::Value(e)) = guard_of(&self.view[o]) {
                if let Some(&w) = self.writer.get(&e) {
                    win.insert(w);
                }
            }
        }
        // Writes with an unknown outcome need whatever forces them.
        let mut stack: Vec<usize> = win.iter().copied().collect();
        while let Some(o) = stack.pop() {
            if let Some(Guard::Value(e)) = guard_of(&self.view[o]) {
                if let Some(&w) = self.writer.get(&e) {
                    if win.insert(w) {
                        stack.push(w);
                    }
                }
            }
            let y = self.why[o];
            if y != NONE && win.insert(y) {
                stack.push(y);
            }
        }
        let value_of = named
            .iter()
            .map(|&o| {
                let w = match self.view[o] {
                    RegisterOp::Read(x) => self.writer.get(&x).copied(),
                    RegisterOp::Wrote { .. } | RegisterOp::MayWrite { .. } => Some(o),
                    RegisterOp::Refused(_) => None,
                };
                (o, w)
            })
            .collect();
        Refutation {
            contradiction: c,
            window: win.into_iter().collect(),
            value_of,
        }
    }

    /// A linearization in the units' `order`: each write at the earliest
    /// instant, its reads after it, failed conditional writes in a segment
    /// their interval meets where their guard does not hold (one excluded
    /// from the segment a write opens goes before that write when it can
    /// without delaying any later operation past its return). Returns
    /// (point, segment, 0 write / 1 other, operation), sorted.
    fn witness(&self, order: &[usize]) -> Option<Vec<super::versioned::Placed>> {
        self.witness_why(order).ok()
    }

    /// [`Pass::witness`], saying where it failed.
    fn witness_why(&self, order: &[usize]) -> Result<Vec<super::versioned::Placed>, String> {
        let n = self.view.len();
        let mut placed: Vec<super::versioned::Placed> = Vec::with_capacity(n);
        // Failed conditional writes: not yet invoked at the cursor (by
        // invocation, and by return for the urgent ones), invoked but
        // excluded from the current segment, placed.
        let mut by_call: Vec<usize> = Vec::new();
        let mut by_value: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
        let mut by_version: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
        for (i, op) in self.view.iter().enumerate() {
            if let RegisterOp::Refused(g) = op {
                by_call.push(i);
                match *g {
                    Guard::Value(e) => by_value.entry(e).or_default().push(i),
                    Guard::Version(v) => by_version.entry(v).or_default().push(i),
                }
            }
        }
        by_call.sort_unstable_by_key(|&i| (self.call[i], i));
        let mut by_ret: BinaryHeap<Reverse<(i64, usize)>> =
            by_call.iter().map(|&i| Reverse((self.ret[i], i))).collect();
        let mut next_call = 0;
        let mut done = vec![false; n];
        let mut open: Vec<usize> = Vec::new();
        // Earliest return of every cluster from each one on, in `order`.
        let seq: Vec<usize> = order
            .iter()
            .flat_map(|&u| self.units[u].clusters.iter().copied())
            .collect();
        let mut bound = vec![i64::MAX; seq.len() + 1];
        for j in (0..seq.len()).rev() {
            bound[j] = bound[j + 1].min(self.clusters[seq[j]].f.0);
        }
        // The current segment: its index, write point and value.
        let mut k = 0u64;
        let mut pk = i64::MIN;
        let mut value = self.init;
        let mut t = i64::MIN;
        let allowed = |r: usize, value: u32, k: u64| match self.view[r] {
            RegisterOp::Refused(Guard::Value(e)) => e != value,
            RegisterOp::Refused(Guard::Version(v)) => self.v0 + k != v,
            _ => false,
        };
        for (j, &c) in seq.iter().enumerate() {
            let cl = &self.clusters[c];
            if cl.write != NONE {
                let w = cl.write;
                let x = value_written(&self.view[w]).ok_or("no value")?;
                // Those excluded from the segment this write opens go
                // before it when their invocation is no later than every
                // remaining return.
                let excluded = by_value
                    .get(&x)
                    .into_iter()
                    .chain(by_version.get(&(self.v0 + k + 1)))
                    .flatten();
                for &r in excluded {
                    if !done[r]
                        && self.call[r] > t
                        && self.call[r] <= bound[j]
                        && self.ret[r] >= pk
                        && allowed(r, value, k)
                    {
                        done[r] = true;
                        placed.push((pk.max(self.call[r]), k, 1, r));
                        t = t.max(self.call[r]);
                    }
                }
                let p = t.max(self.call[w]);
                if p > self.ret[w] {
                    return Err(format!("write {w} at {p} after its return"));
                }
                // Those that return before the write must be placed now.
                while let Some(&Reverse((rt, r))) = by_ret.peek() {
                    if rt >= p {
                        break;
                    }
                    by_ret.pop();
                    if done[r] {
                        continue;
                    }
                    if !allowed(r, value, k) || rt < pk {
                        return Err(format!(
                            "refused {r} [{}, {rt}] ends in segment {k} from {pk}, value {value}",
                            self.call[r]
                        ));
                    }
                    done[r] = true;
                    placed.push((pk.max(self.call[r]), k, 1, r));
                    t = t.max(self.call[r]);
                }
                k += 1;
                pk = p;
                t = p;
                value = x;
                placed.push((p, k, 0, w));
                for r in open.drain(..) {
                    if !done[r] {
                        done[r] = true;
                        placed.push((pk.max(self.call[r]), k, 1, r));
                    }
                }
            }
            for &r in &cl.reads {
                let p = pk.max(self.call[r]);
                if p > self.ret[r] {
                    return Err(format!("read {r} at {p} after its return"));
                }
                t = t.max(p);
                placed.push((p, k, 1, r));
            }
            // Invoked by now: here when the guard allows, else in the next
            // segment.
            while next_call < by_call.len() && self.call[by_call[next_call]] <= t {
                let r = by_call[next_call];
                next_call += 1;
                if done[r] {
                    continue;
                }
                if allowed(r, value, k) {
                    done[r] = true;
                    placed.push((pk.max(self.call[r]), k, 1, r));
                } else {
                    open.push(r);
                }
            }
        }
        // The last segment lasts for ever.
        for &r in &by_call {
            if !done[r] {
                if !allowed(r, value, k) || self.ret[r] < pk {
                    return Err(format!("refused {r} left in the last segment"));
                }
                done[r] = true;
                placed.push((pk.max(self.call[r]), k, 1, r));
            }
        }
        placed.sort_unstable_by_key(|&(p, k, kind, i)| (k, kind, p, i));
        Ok(placed)
    }
}

/// Why the pass left a key undecided (for measuring it).
#[doc(hidden)]
pub fn diagnose<P: Spec>(
    spec: &P,
    key: &str,
    ops: &[super::Operation<P::Input, P::Output>],
) -> String {
    let idx: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].key == key).collect();
    let (kops, _) = super::key_ops(spec, ops, &idx);
    let init = spec.init(key);
    let io: Vec<_> = kops.iter().map(|k| (k.input, k.output)).collect();
    let Some(view) = spec.register(&init, &io) else {
        return "no view".into();
    };
    let mut pass = Pass {
        view: &view.ops,
        call: kops.iter().map(|o| o.call).collect(),
        ret: kops.iter().map(|o| o.ret.unwrap_or(i64::MAX)).collect(),
        init: view.init,
        v0: view.init_version,
        writer: FxHashMap::default(),
        mand: vec![false; kops.len()],
        why: vec![NONE; kops.len()],
        cluster_of: vec![NONE; kops.len()],
        clusters: Vec::new(),
        pred: Vec::new(),
        unit_of: Vec::new(),
        units: Vec::new(),
    };
    match pass.build() {
        Ok(true) => {}
        Ok(false) => return "does not apply".into(),
        Err(c) => return format!("refuted while building: {c:?}"),
    }
    let order = match pass.order(true) {
        Err(c) => return format!("refuted: {c:?}"),
        Ok(None) => return "versions block the order".into(),
        Ok(Some(o)) => o,
    };
    match pass.witness_why(&order) {
        Err(why) => why,
        Ok(placed) => {
            if super::versioned::replay(spec, &init, &kops, &placed) {
                "linearizable".into()
            } else {
                "replay failed".into()
            }
        }
    }
}
