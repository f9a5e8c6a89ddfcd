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
//! The pass builds the units in O(n), then orders them in O(n log n)
//! (Kahn's algorithm on that precedence, which for this relation needs
//! only the earliest return `F` and the latest invocation `S` of each unit:
//! a unit may come next iff its `S` is at most every other remaining
//! unit's `F`):
//! * **refutation**: a value nobody writes, a read that returns before
//!   its value's write is invoked, two operations that both need to come
//!   directly after the same value, an operation of a chain invoked after
//!   an operation on a later value of the chain returned, two units that
//!   must each come before the other (when the ordering gets stuck, the
//!   two remaining units with the earliest returns are such a pair), or a
//!   successful conditional put whose unit must follow units holding more
//!   writes than the version it expected allows, or (when no witness is
//!   found) a failed compare-and-set invoked after the value it expected
//!   was written and returning before anything that could replace it was
//!   invoked. Each is true of every
//!   linearization; it holds with unknown outcomes too (a write whose value
//!   someone reads must have taken effect; the others may only add writes
//!   between units). The report searches, shrinks and re-checks the
//!   operations that show it, from the initial state (`explain`);
//! * **witness**: otherwise the units in an order Kahn's algorithm allows,
//!   each write placed at the earliest instant it can take and its reads
//!   after it; the failed compare-and-sets and conditional puts in a
//!   segment their interval meets whose value (or version) is not the one
//!   they expected (which steers the choice of the next unit); successful
//!   conditional puts at the version they expected, the units that must
//!   come before one (directly or through others) placed first, the
//!   earliest due first, counted in writes (`witness::Dues`); writes with
//!   an unknown outcome left out unless someone reads their value, or one
//!   opens a segment that a failed conditional write or a conditional put
//!   needs.
//!   The order is replayed through [`Spec::step`]: a replayed witness
//!   proves linearizability.
//!
//! Anything else (values that repeat, a witness that does not fit) leaves
//! the key undecided, and the search decides it.
//!
//! Long because the pass's steps (clusters, units, their order, the
//! refutations) share one `Pass` and read each other's indexes; the witness
//! it builds is in `witness`.

use super::search::KOp;
use super::spec::{Claim, Guard, RegisterOp, Spec};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

mod witness;
use witness::{Dues, Kahn, Policy, Sweep};

const NONE: usize = usize::MAX;

/// How many operations of a key [`decide`] shows the register view first.
const PROBE: usize = 16;

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
    /// A conditional put expects `expected` writes before its unit, but the
    /// units of the operations `early` must come before it (each returned
    /// before `late`, of its unit, was invoked) and hold `writes` more
    /// than that (with those chained to the initial value).
    TooManyBefore {
        /// The conditional put.
        write: usize,
        /// The operation of its unit invoked last.
        late: usize,
        /// An operation of each unit that must come before it.
        early: Vec<usize>,
        /// The last write chained to the initial value, if any (its unit
        /// comes first anyway).
        initial: Option<usize>,
        /// The writes those units hold.
        writes: u64,
        /// The writes it expects before its unit.
        expected: u64,
    },
    /// A failed compare-and-set that only the value it expected can be
    /// current for: `after` (`None`: the key starts with that value), on
    /// that value, returned before it was invoked, and no write that could
    /// replace the value was invoked before it returned: `next`, the
    /// compare-and-set chained after the value, was invoked later, or
    /// (`None`) every other write invoked by then must come before it.
    Stuck {
        /// The failed compare-and-set.
        op: usize,
        /// An operation on the value it expected that returned before it
        /// was invoked.
        after: Option<usize>,
        /// The compare-and-set that replaces the value, if chained.
        next: Option<usize>,
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
            Contradiction::TooManyBefore { write, .. } => write,
            Contradiction::Stuck { op, .. } => op,
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
    /// For each operation of `window` that needs a value some operation
    /// writes (a read returning it, a compare-and-set expecting it): that
    /// write (increasing).
    pub supplier: Vec<(usize, usize)>,
}

impl Refutation {
    /// The writes `x` needs, from the initial state, to be placed at all:
    /// the write of the value it needs, the write of the value that one
    /// expects, and so on (increasing). A sub-history without one of them
    /// fails at `x` for a reason that says nothing of the contradiction.
    pub(crate) fn supply_chain(&self, x: usize) -> Vec<usize> {
        let mut chain = Vec::new();
        let mut o = x;
        while let Ok(i) = self.supplier.binary_search_by_key(&o, |&(p, _)| p) {
            o = self.supplier[i].1;
            if o == x || chain.contains(&o) {
                break;
            }
            chain.push(o);
        }
        chain.sort_unstable();
        chain
    }
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

/// Indices kept in 32 bits (`u32::MAX` for [`NONE`]): [`decide`] takes
/// only keys of fewer than 2^31 operations.
#[derive(Default)]
struct Ix(Vec<u32>);

impl Ix {
    fn new(n: usize) -> Self {
        Ix(vec![u32::MAX; n])
    }

    fn get(&self, i: usize) -> usize {
        match self.0[i] {
            u32::MAX => NONE,
            v => v as usize,
        }
    }

    fn set(&mut self, i: usize, v: usize) {
        self.0[i] = if v == NONE { u32::MAX } else { v as u32 };
    }

    /// The index stored for value `v`, if any.
    fn at(&self, v: u32) -> Option<usize> {
        self.0
            .get(v as usize)
            .filter(|&&w| w != u32::MAX)
            .map(|&w| w as usize)
    }
}

/// How many values `view` numbers (one more than the largest).
fn values(view: &[RegisterOp], init: u32) -> usize {
    let guard = |g: Option<Guard>| match g {
        Some(Guard::Value(e)) => e,
        _ => 0,
    };
    view.iter()
        .map(|op| match *op {
            RegisterOp::Read(x) => x,
            RegisterOp::Refused(g) => guard(Some(g)),
            RegisterOp::Wrote { value, guard: g } | RegisterOp::MayWrite { value, guard: g } => {
                value.max(guard(g))
            }
        })
        .max()
        .unwrap_or(0)
        .max(init) as usize
        + 1
}

/// A value's write and the reads that return it.
struct Cluster {
    /// The write (`NONE`: the initial value).
    write: usize,
    /// Where its reads are in [`Pass::reads`], and how many.
    reads: (u32, u32),
    /// The earliest return among its operations, and which.
    f: (i64, usize),
    /// The latest invocation among them, and which.
    s: (i64, usize),
}

/// Clusters chained by compare-and-set.
struct Unit {
    /// Where its clusters are in [`Pass::chain`], in order, and how many.
    clusters: (u32, u32),
    f: (i64, usize),
    s: (i64, usize),
    /// Writes in it.
    writes: u64,
    /// Writes that must take effect before it (from a conditional put).
    req: Option<u64>,
}

/// The key's operations seen through the register view.
struct Pass<'a, I, O> {
    view: &'a [RegisterOp],
    /// The key's operations (their invocations and returns).
    ops: &'a [KOp<'a, I, O>],
    init: u32,
    v0: u64,
    /// Per value: the operation that writes it (`NONE`: none).
    writer: Ix,
    /// Writes that certainly take effect.
    mand: Vec<bool>,
    /// For a write with an unknown outcome that must take effect: the
    /// operation that needs its value.
    why: Ix,
    cluster_of: Ix,
    clusters: Vec<Cluster>,
    /// The reads of each cluster, cluster after cluster.
    reads: Vec<usize>,
    /// The clusters of each unit, in chain order, unit after unit.
    chain: Vec<usize>,
    unit_of: Ix,
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
    // Step aside before allocating anything where the view cannot apply:
    // an operation that observed a version (a read answering one) cannot
    // be a register operation, whose reads say only the value; such keys
    // are the version-aware path's.
    let observed =
        |ops: &[KOp<'_, P::Input, P::Output>]| ops.iter().any(|o| matches!(o.claim, Claim::At(_)));
    let probe = &ops[..ops.len().min(PROBE)];
    let Some(first) = probe.first() else {
        return Decision::Undecided;
    };
    // (Operations are numbered in 31 bits: `Ix`, `witness::Slot`.)
    if observed(probe) || ops.len() > witness::OP as usize {
        return Decision::Undecided;
    }
    // A short prefix first, without allocating: where the view gives up
    // on it (an append, a value written twice, ...), it gives up on the
    // whole key, which then costs the pass a few dozen operations' worth.
    let mut io = [(first.input, first.output); PROBE];
    for (x, k) in io.iter_mut().zip(probe) {
        *x = (k.input, k.output);
    }
    let Some(mut view) = spec.register(init, &io[..probe.len()]) else {
        return Decision::Undecided;
    };
    if ops.len() > PROBE {
        if observed(&ops[PROBE..]) {
            return Decision::Undecided;
        }
        let io: Vec<_> = ops.iter().map(|k| (k.input, k.output)).collect();
        let Some(whole) = spec.register(init, &io) else {
            return Decision::Undecided;
        };
        view = whole;
        // (`io` goes here: the view says all the pass needs of the inputs
        // and outputs.)
    }
    if view.ops.len() != ops.len() {
        return Decision::Undecided;
    }
    let mut pass = Pass::new(&view, ops);
    match pass.build() {
        Ok(true) => {}
        Ok(false) => return Decision::Undecided,
        Err(c) => return Decision::Refuted(Box::new(pass.refutation(c))),
    }
    if let Err(c) = pass.order().and_then(|()| pass.versions()) {
        return Decision::Refuted(Box::new(pass.refutation(c)));
    }
    for policy in [Policy::Urgent, Policy::FirstCall, Policy::Rescue] {
        if let Some(placed) = pass.witness(policy) {
            if super::versioned::replay(spec, init, ops, witness::order(&placed)) {
                return Decision::Linearizable;
            }
        }
    }
    if let Err(c) = pass.stuck() {
        return Decision::Refuted(Box::new(pass.refutation(c)));
    }
    Decision::Undecided
}

impl<'v, I, O> Pass<'v, I, O> {
    /// The invocation of operation `i`.
    fn call(&self, i: usize) -> i64 {
        self.ops[i].call
    }

    /// The return of operation `i` (`i64::MAX`: none).
    fn ret(&self, i: usize) -> i64 {
        self.ops[i].ret.unwrap_or(i64::MAX)
    }

    /// The reads of cluster `c`.
    fn reads_of(&self, c: usize) -> &[usize] {
        let (at, n) = self.clusters[c].reads;
        &self.reads[at as usize..(at + n) as usize]
    }

    /// The clusters of unit `u`, in chain order.
    fn chain_of(&self, u: usize) -> &[usize] {
        let (at, n) = self.units[u].clusters;
        &self.chain[at as usize..(at + n) as usize]
    }

    fn new(view: &'v super::spec::RegisterView, ops: &'v [KOp<'v, I, O>]) -> Self {
        let n = ops.len();
        Pass {
            view: &view.ops,
            ops,
            init: view.init,
            v0: view.init_version,
            writer: Ix::new(values(&view.ops, view.init)),
            mand: vec![false; n],
            why: Ix::new(n),
            cluster_of: Ix::new(n),
            clusters: Vec::new(),
            reads: Vec::new(),
            chain: Vec::new(),
            unit_of: Ix::default(),
            units: Vec::new(),
        }
    }

    /// Builds clusters and units; `Ok(false)` when the pass does not apply
    /// (values repeat, or a shape it leaves to the search).
    fn build(&mut self) -> Result<bool, Contradiction> {
        let n = self.view.len();
        for (i, op) in self.view.iter().enumerate() {
            if let Some(v) = value_written(op) {
                if v == self.init || self.writer.at(v).is_some() {
                    return Ok(false);
                }
                self.writer.set(v as usize, i);
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
                RegisterOp::Read(x) if *x != self.init => match self.writer.at(*x) {
                    Some(w) => {
                        if !self.mand[w] {
                            self.mand[w] = true;
                            self.why.set(w, i);
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
                match self.writer.at(e) {
                    Some(p) => {
                        if !self.mand[p] {
                            self.mand[p] = true;
                            self.why.set(p, w);
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
        let writes = self.mand.iter().filter(|&&m| m).count();
        self.clusters = Vec::with_capacity(writes + 1);
        self.clusters.push(Cluster {
            write: NONE,
            reads: (0, 0),
            f: (i64::MAX, NONE),
            s: (i64::MIN, NONE),
        });
        for i in 0..n {
            if self.mand[i] {
                self.cluster_of.set(i, self.clusters.len());
                self.clusters.push(Cluster {
                    write: i,
                    reads: (0, 0),
                    f: (self.ret(i), i),
                    s: (self.call(i), i),
                });
            }
        }
        // Their reads, counted first, then laid out cluster after cluster.
        let mut nreads = 0;
        for (i, op) in self.view.iter().enumerate() {
            if let RegisterOp::Read(x) = op {
                let c = if *x == self.init {
                    0
                } else {
                    self.cluster_of.get(self.writer.get(*x as usize))
                };
                self.cluster_of.set(i, c);
                let (call, ret) = (self.call(i), self.ret(i));
                let cl = &mut self.clusters[c];
                cl.reads.1 += 1;
                nreads += 1;
                if ret < cl.f.0 {
                    cl.f = (ret, i);
                }
                if call > cl.s.0 {
                    cl.s = (call, i);
                }
            }
        }
        let mut at = 0;
        for cl in &mut self.clusters {
            let count = cl.reads.1;
            cl.reads = (at, 0);
            at += count;
        }
        self.reads = vec![NONE; nreads];
        for (i, op) in self.view.iter().enumerate() {
            if let RegisterOp::Read(_) = op {
                let cl = &mut self.clusters[self.cluster_of.get(i)];
                self.reads[(cl.reads.0 + cl.reads.1) as usize] = i;
                cl.reads.1 += 1;
            }
        }
        for cl in &self.clusters[1..] {
            // A read returning before its write is invoked.
            if cl.f.0 < self.call(cl.write) {
                return Err(Contradiction::ReadBeforeWrite {
                    read: cl.f.1,
                    write: cl.write,
                });
            }
        }
        // Chains: a write expecting a value comes directly after it.
        let nc = self.clusters.len();
        // (Whether a cluster follows another in a chain.)
        let mut chained = vec![false; nc];
        let mut succ = vec![NONE; nc];
        for (c, chained) in chained.iter_mut().enumerate().skip(1) {
            let w = self.clusters[c].write;
            if let Some(Guard::Value(e)) = guard_of(&self.view[w]) {
                let p = if e == self.init {
                    0
                } else {
                    self.cluster_of.get(self.writer.get(e as usize))
                };
                *chained = true;
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
        self.unit_of = Ix::new(nc);
        let starts = 1 + chained[1..].iter().filter(|&&c| !c).count();
        self.units = Vec::with_capacity(starts);
        self.chain = Vec::with_capacity(nc);
        let mut seen = 0;
        for (start, &chained) in chained.iter().enumerate() {
            if start != 0 && chained {
                continue;
            }
            let u = self.units.len();
            let mut unit = Unit {
                clusters: (self.chain.len() as u32, 0),
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
                    self.chain.push(c);
                    unit.clusters.1 += 1;
                    self.unit_of.set(c, u);
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
                self.chain.push(c);
                unit.clusters.1 += 1;
                self.unit_of.set(c, u);
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
    /// return), ignoring versions. `Err`: two units must each come before
    /// the other.
    fn order(&self) -> Result<(), Contradiction> {
        let mut kahn = Kahn::new(&self.units, false);
        self.start(&mut kahn)?;
        while let Some((m1, _, m1_ready)) = kahn.refresh() {
            let next = if m1_ready {
                Some(m1)
            } else {
                kahn.ready_s.first().map(|&(_, u)| u)
            };
            match next {
                Some(u) => kahn.take(u),
                // Stuck: every remaining unit has to follow another one. The
                // two with the earliest returns must each follow the other.
                None => {
                    let m2 = kahn.second().unwrap_or(m1);
                    return Err(self.cycle(m1, m2));
                }
            }
        }
        Ok(())
    }

    /// Takes the initial value's unit first: no other may end before it
    /// starts.
    fn start(&self, kahn: &mut Kahn<'_>) -> Result<(), Contradiction> {
        if let Some((m, f, _)) = kahn.refresh() {
            if f < self.units[0].s.0 {
                return Err(self.cycle(0, m));
            }
        }
        kahn.take(0);
        Ok(())
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
        match c {
            Contradiction::NeverWritten { op } => vec![*op],
            Contradiction::ReadBeforeWrite { read, write } => vec![*read, *write],
            Contradiction::TwoSuccessors { a, b, after } => {
                let mut v = vec![*a, *b];
                v.extend(*after);
                v
            }
            Contradiction::ChainOrder { early, late } => vec![*early, *late],
            Contradiction::Cycle {
                a_ret,
                a_call,
                b_ret,
                b_call,
            } => {
                let mut v = vec![*a_call, *b_ret, *b_call];
                v.extend(*a_ret);
                v
            }
            Contradiction::Stuck { op, after, .. } => {
                let mut v = vec![*op];
                v.extend(*after);
                v
            }
            Contradiction::TooManyBefore {
                write,
                late,
                early,
                initial,
                ..
            } => {
                let mut v = vec![*write, *late];
                v.extend(early.iter().copied());
                v.extend(*initial);
                v
            }
        }
    }

    /// Looks for a failed compare-and-set that no order lets see another
    /// value than the one it expected ([`Contradiction::Stuck`]).
    fn stuck(&self) -> Result<(), Contradiction> {
        // Writes by invocation: per prefix, the two latest earliest-returns
        // of distinct units among them (the initial value's unit counts as
        // returning first: it precedes all), and whether a write nobody
        // needs with an unknown outcome is among them.
        let mut ws: Vec<(i64, usize)> = Vec::new();
        for (i, op) in self.view.iter().enumerate() {
            if self.mand[i] {
                ws.push((self.call(i), self.unit_of.get(self.cluster_of.get(i))));
            } else if matches!(op, RegisterOp::MayWrite { .. }) {
                ws.push((self.call(i), NONE));
            }
        }
        ws.sort_unstable();
        type Top = [(i64, usize); 2];
        let mut tops: Vec<(Top, bool)> = Vec::with_capacity(ws.len() + 1);
        let mut top: Top = [(i64::MIN, NONE); 2];
        let mut optional = false;
        tops.push((top, optional));
        for &(_, u) in &ws {
            if u == NONE {
                optional = true;
            } else {
                let f = if u == 0 { i64::MIN } else { self.units[u].f.0 };
                if top[0].1 == u {
                    top[0].0 = top[0].0.max(f);
                } else if f > top[0].0 {
                    top = [(f, u), top[0]];
                } else if f > top[1].0 || top[1].1 == NONE {
                    top[1] = (f, u);
                }
                if top[1].0 > top[0].0 {
                    top.swap(0, 1);
                }
            }
            tops.push((top, optional));
        }
        for (r, op) in self.view.iter().enumerate() {
            let RegisterOp::Refused(Guard::Value(e)) = *op else {
                continue;
            };
            let ce = if e == self.init {
                0
            } else {
                match self.writer.at(e) {
                    Some(w) if self.mand[w] => self.cluster_of.get(w),
                    _ => continue,
                }
            };
            // The value was there before it was invoked.
            let after = if ce == 0 {
                None
            } else {
                let (f, o) = self.clusters[ce].f;
                if f >= self.call(r) {
                    continue;
                }
                Some(o)
            };
            // Nothing that could replace it was invoked before it returned.
            let u = self.unit_of.get(ce);
            let chain = self.chain_of(u);
            let pos = chain.iter().position(|&c| c == ce).unwrap_or(0);
            let next = if let Some(&c) = chain.get(pos + 1) {
                let s = self.clusters[c].write;
                if self.call(s) <= self.ret(r) {
                    continue;
                }
                Some(s)
            } else {
                let k = ws.partition_point(|&(c, _)| c <= self.ret(r));
                let (top, optional) = tops[k];
                let other = if top[0].1 == u { top[1] } else { top[0] };
                if optional || (other.1 != NONE && other.0 >= self.units[u].s.0) {
                    continue;
                }
                None
            };
            return Err(Contradiction::Stuck { op: r, after, next });
        }
        Ok(())
    }

    /// Checks each conditional put's unit against the units that must
    /// come before it: they may hold no more writes than it expects before
    /// it.
    fn versions(&self) -> Result<(), Contradiction> {
        let nu = self.units.len();
        if self.units.iter().all(|u| u.req.is_none()) {
            return Ok(());
        }
        let mut by_f: Vec<(i64, usize)> = (1..nu).map(|u| (self.units[u].f.0, u)).collect();
        by_f.sort_unstable();
        let mut prefix = vec![0u64; by_f.len() + 1];
        for (i, &(_, u)) in by_f.iter().enumerate() {
            prefix[i + 1] = prefix[i] + self.units[u].writes;
        }
        let init = &self.units[0];
        for (u, unit) in self.units.iter().enumerate().skip(1) {
            let Some(r) = unit.req else {
                continue;
            };
            let i = by_f.partition_point(|&(f, _)| f < unit.s.0);
            let own = if unit.f.0 < unit.s.0 { unit.writes } else { 0 };
            let writes = prefix[i] - own + init.writes;
            if writes <= r {
                continue;
            }
            // The fewest units (earliest returns first) that exceed it.
            let mut early = Vec::new();
            let mut w = init.writes;
            let initial = self
                .chain_of(0)
                .last()
                .map(|&c| self.clusters[c].write)
                .filter(|&w| w != NONE);
            for &(_, x) in &by_f[..i] {
                if w > r {
                    break;
                }
                if x != u {
                    early.push(self.units[x].f.1);
                    w += self.units[x].writes;
                }
            }
            let chain = self.chain_of(u);
            let write = chain
                .iter()
                .map(|&c| self.clusters[c].write)
                .find(|&w| matches!(guard_of(&self.view[w]), Some(Guard::Version(_))))
                .unwrap_or(self.clusters[chain[0]].write);
            return Err(Contradiction::TooManyBefore {
                write,
                late: unit.s.1,
                early,
                initial,
                writes: w,
                expected: r,
            });
        }
        Ok(())
    }

    /// The refutation of `c`, with its window.
    fn refutation(&self, c: Contradiction) -> Refutation {
        let named = Self::named(&c);
        let mut win: BTreeSet<usize> = named.iter().copied().collect();
        // The chains up to every named operation's value.
        for &o in &named {
            let cl = self.cluster_of.get(o);
            if cl == NONE || self.unit_of.0.is_empty() {
                continue;
            }
            let u = self.unit_of.get(cl);
            if u == NONE {
                continue;
            }
            for &c2 in self.chain_of(u) {
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
                if let Some(w) = self.writer.at(x) {
                    win.insert(w);
                }
            }
            if let Some(Guard::Value(e)) = guard_of(&self.view[o]) {
                if let Some(w) = self.writer.at(e) {
                    win.insert(w);
                }
            }
        }
        // Writes with an unknown outcome need whatever forces them.
        let mut stack: Vec<usize> = win.iter().copied().collect();
        while let Some(o) = stack.pop() {
            if let Some(Guard::Value(e)) = guard_of(&self.view[o]) {
                if let Some(w) = self.writer.at(e) {
                    if win.insert(w) {
                        stack.push(w);
                    }
                }
            }
            let y = self.why.get(o);
            if y != NONE && win.insert(y) {
                stack.push(y);
            }
        }
        let value_of = named
            .iter()
            .map(|&o| {
                let w = match self.view[o] {
                    RegisterOp::Read(x) => self.writer.at(x),
                    RegisterOp::Wrote { .. } | RegisterOp::MayWrite { .. } => Some(o),
                    // A failed compare-and-set: the value it expected.
                    RegisterOp::Refused(Guard::Value(e)) => self.writer.at(e),
                    RegisterOp::Refused(Guard::Version(_)) => None,
                };
                (o, w)
            })
            .collect();
        let supplier = win
            .iter()
            .filter_map(|&o| {
                let needs = match self.view[o] {
                    RegisterOp::Read(x) => Some(x),
                    _ => match guard_of(&self.view[o]) {
                        Some(Guard::Value(e)) => Some(e),
                        _ => None,
                    },
                };
                let w = self.writer.at(needs?)?;
                Some((o, w))
            })
            .collect();
        Refutation {
            contradiction: c,
            window: win.into_iter().collect(),
            value_of,
            supplier,
        }
    }

    /// A linearization: the units in an order Kahn's algorithm allows (by
    /// `policy` where several may come next), each write at the earliest
    /// instant, its reads after it, conditional puts at the version they
    /// expected, failed conditional writes in a segment their interval
    /// meets where their guard does not hold: one excluded from the segment
    /// a write opens goes before that write when it can without delaying
    /// any later operation past its return, one invoked during the segment
    /// it is excluded from makes the next unit one whose write is invoked
    /// before it returns. Returns (point, segment, 0 write / 1 other,
    /// operation), in order.
    fn witness(&self, policy: Policy) -> Option<Vec<witness::Slot>> {
        self.witness_why(policy).ok()
    }

    /// [`Pass::witness`], saying where it failed.
    fn witness_why(&self, policy: Policy) -> Result<Vec<witness::Slot>, String> {
        let mut kahn = Kahn::new(&self.units, true);
        kahn.heads(self);
        let mut dues = Dues::new(self);
        let mut sw = Sweep::new(self);
        self.start(&mut kahn).map_err(|c| format!("{c:?}"))?;
        sw.place_unit(self, 0, kahn.min_f())?;
        while let Some((m1, _, m1_ready)) = kahn.refresh() {
            let count = sw.k;
            // Only units that may come before the next conditional put.
            let then = match kahn.reqs.first() {
                Some(&(r, u)) if r < count => {
                    return Err(format!(
                        "unit {u} needed {r} writes before it, {count} were"
                    ));
                }
                Some(&(_, u)) => self.units[u].f.0,
                None => i64::MAX,
            };
            if let Some(d) = dues.as_mut() {
                let first = kahn.reqs.first().map_or(d.reqs.len(), |&(_, u)| d.due[u]);
                d.refresh(&self.units, first, count);
            }
            let fits = |u: usize| match self.units[u].req {
                Some(r) => r == count,
                None => {
                    dues.as_ref().is_none_or(|d| d.fits(&self.units, u))
                        && self.units[u].s.0 <= then
                }
            };
            let scan = |set: &BTreeSet<(i64, usize)>| {
                set.iter().take(64).map(|&(_, u)| u).find(|&u| fits(u))
            };
            let m1c = (m1_ready && fits(m1)).then_some(m1);
            let earliest = |a: Option<usize>| match (a, m1c) {
                (Some(a), Some(b)) if kahn.head[b] < kahn.head[a] => Some(b),
                (a, b) => a.or(b),
            };
            let exact = kahn
                .waiting
                .first()
                .filter(|&&(r, _)| r == count)
                .map(|&(_, u)| u)
                .or(m1c.filter(|&u| self.units[u].req == Some(count)));
            let deadline = sw.deadline(self);
            // The units due by a conditional put go first, the earliest
            // due first.
            let due_first = dues.as_ref().and_then(|d| {
                m1c.into_iter()
                    .chain(kahn.ready_s.iter().take(64).map(|&(_, u)| u))
                    .filter(|&u| self.units[u].req.is_none() && d.due[u] < d.reqs.len() && fits(u))
                    .min_by_key(|&u| d.due[u])
            });
            let chosen = due_first.or_else(|| match policy {
                Policy::Urgent => m1c.or(scan(&kahn.ready_s)),
                Policy::FirstCall => earliest(scan(&kahn.ready_c)),
                Policy::Rescue => self
                    .rescue(&kahn, &sw, m1c, &fits)
                    .or(m1c)
                    .or_else(|| scan(&kahn.ready_s)),
            });
            let next = if exact.is_some() {
                exact
            } else if let Some(d) = deadline {
                // A failed conditional write waits for the next segment: a
                // unit whose write is invoked before it returns.
                chosen
                    .filter(|&u| kahn.head[u] <= d)
                    .or_else(|| earliest(scan(&kahn.ready_c)).filter(|&u| kahn.head[u] <= d))
            } else {
                chosen
            };
            match next {
                Some(u) => {
                    kahn.take(u);
                    if let Some(d) = dues.as_mut() {
                        d.take(&self.units, u);
                    }
                    sw.place_unit(self, u, kahn.min_f())?;
                }
                // Else a write nobody needs, with an unknown outcome, may
                // open a segment: for the failed conditional write, or to
                // reach the version a conditional put expects.
                None => {
                    let by = deadline.unwrap_or(i64::MAX);
                    let room = dues.as_ref().map_or(i64::MAX, |d| d.room_for(d.reqs.len()));
                    if room < 1 || !sw.filler(self, by, kahn.min_f())? {
                        return Err(format!("no unit may come after {count} writes"));
                    }
                }
            }
        }
        sw.finish(self)
    }
}

impl<I, O> Pass<'_, I, O> {
    /// For [`Policy::Rescue`]: among the units that may come next (`m1`
    /// and the first ready ones that `fits`), the one whose first value a
    /// failed compare-and-set still to place expects, returning earliest,
    /// when another of them is invoked before it returns.
    fn rescue(
        &self,
        kahn: &Kahn<'_>,
        sw: &Sweep,
        m1: Option<usize>,
        fits: &dyn Fn(usize) -> bool,
    ) -> Option<usize> {
        let cands: Vec<usize> = m1
            .into_iter()
            .chain(
                kahn.ready_s
                    .iter()
                    .take(64)
                    .map(|&(_, u)| u)
                    .filter(|&u| fits(u)),
            )
            .collect();
        let mut best: Option<(i64, usize)> = None;
        for &x in &cands {
            let Some(&c) = self.chain_of(x).first() else {
                continue;
            };
            let w = self.clusters[c].write;
            let Some(v) = (w != NONE).then(|| value_written(&self.view[w])).flatten() else {
                continue;
            };
            for &r in sw.by_value.get(v) {
                let rt = self.ret(r);
                if sw.done[r] || self.call(r) <= sw.t || best.is_some_and(|(b, _)| b <= rt) {
                    continue;
                }
                if cands.iter().any(|&y| y != x && kahn.head[y] <= rt) {
                    best = Some((rt, x));
                }
            }
        }
        best.map(|(_, x)| x)
    }
}

/// What the pass finds on one key of `ops`, in words: "linearizable", the
/// contradiction it refutes the key with, or why it leaves the key to the
/// search (for measuring the pass).
pub fn diagnose<P: Spec>(
    spec: &P,
    key: &str,
    ops: &[super::Operation<P::Input, P::Output>],
) -> String {
    let idx: Vec<super::OpIndex> = (0..ops.len())
        .filter(|&i| ops[i].key == key)
        .map(super::op_index)
        .collect();
    let (kops, _) = super::key_ops(spec, ops, &idx);
    let init = spec.init(key);
    let io: Vec<_> = kops.iter().map(|k| (k.input, k.output)).collect();
    let Some(view) = spec.register(&init, &io) else {
        return "no view".into();
    };
    let mut pass = Pass::new(&view, &kops);
    match pass.build() {
        Ok(true) => {}
        Ok(false) => return "does not apply".into(),
        Err(c) => return format!("refuted while building: {c:?}"),
    }
    if let Err(c) = pass.order().and_then(|()| pass.versions()) {
        return format!("refuted: {c:?}");
    }
    if let Err(c) = pass.stuck() {
        return format!("refuted: {c:?}");
    }
    let mut out = Vec::new();
    for policy in [Policy::Urgent, Policy::FirstCall, Policy::Rescue] {
        match pass.witness_why(policy) {
            Err(why) => out.push(why),
            Ok(placed) => {
                if super::versioned::replay(spec, &init, &kops, witness::order(&placed)) {
                    return "linearizable".into();
                }
                out.push("replay failed".into());
            }
        }
    }
    out.join("; ")
}

/// The verdict of the pass alone, key by key, with no search behind it:
/// `Some(NotLinearizable)` when it refutes some key, `Some(Linearizable)`
/// when it proves every key, `None` when it leaves a key undecided (for
/// testing the pass and measuring how much it decides).
pub fn pass_verdict<P: Spec>(
    spec: &P,
    ops: &[super::Operation<P::Input, P::Output>],
) -> Option<super::Verdict> {
    let mut keys: std::collections::BTreeMap<&str, Vec<super::OpIndex>> = Default::default();
    for (i, o) in ops.iter().enumerate() {
        keys.entry(o.key.as_str())
            .or_default()
            .push(super::op_index(i));
    }
    let mut all = true;
    for (key, idx) in keys {
        let (kops, _) = super::key_ops(spec, ops, &idx);
        match decide(spec, &spec.init(key), &kops) {
            Decision::Linearizable => {}
            Decision::Refuted(_) => return Some(super::Verdict::NotLinearizable),
            Decision::Undecided => all = false,
        }
    }
    all.then_some(super::Verdict::Linearizable)
}
