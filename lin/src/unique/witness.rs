//! Building the witness: Kahn's algorithm over the units (which may come
//! next, by [`Policy`]) and the sweep that lays the chosen units out as a
//! linearization, placing the failed conditional writes between them.

use super::*;

/// How the witness picks the next unit among those that may come next.
#[derive(Clone, Copy, Debug)]
pub(super) enum Policy {
    /// The one with the earliest return when it may, else the one whose
    /// latest invocation is first.
    Urgent,
    /// The one whose first write was invoked first.
    FirstCall,
    /// One whose value a failed compare-and-set still to place expects,
    /// while another that may come next is invoked before that one returns
    /// (it then follows, and the compare-and-set goes after it); else as
    /// `Urgent`.
    Rescue,
}

/// Kahn's algorithm over the units: which may come next.
pub(super) struct Kahn<'p> {
    pub(super) units: &'p [Unit],
    /// The invocation of each unit's first write (`i64::MIN`: none).
    pub(super) head: Vec<i64>,
    pub(super) done: Vec<bool>,
    pub(super) by_f: BinaryHeap<Reverse<(i64, usize)>>,
    pub(super) by_s: Vec<usize>,
    pub(super) sp: usize,
    /// Units that may come next (but for the one with the earliest return,
    /// checked apart), by latest invocation and by first write's invocation;
    /// those that need a number of writes before them apart, by it.
    pub(super) ready_s: BTreeSet<(i64, usize)>,
    pub(super) ready_c: BTreeSet<(i64, usize)>,
    pub(super) waiting: BTreeSet<(u64, usize)>,
    /// Every remaining unit that needs a number of writes before it, by it.
    pub(super) reqs: BTreeSet<(u64, usize)>,
    pub(super) versions: bool,
}

impl<'p> Kahn<'p> {
    pub(super) fn new(units: &'p [Unit], versions: bool) -> Self {
        let nu = units.len();
        let mut by_s: Vec<usize> = (1..nu).collect();
        by_s.sort_unstable_by_key(|&u| (units[u].s.0, u));
        Kahn {
            units,
            head: vec![i64::MIN; nu],
            done: vec![false; nu],
            by_f: (1..nu).map(|u| Reverse((units[u].f.0, u))).collect(),
            by_s,
            sp: 0,
            ready_s: BTreeSet::new(),
            ready_c: BTreeSet::new(),
            waiting: BTreeSet::new(),
            reqs: (0..nu)
                .filter_map(|u| units[u].req.filter(|_| versions).map(|r| (r, u)))
                .collect(),
            versions,
        }
    }

    /// Sets each unit's first write's invocation.
    pub(super) fn heads<I, O>(&mut self, pass: &Pass<'_, I, O>) {
        for u in 0..self.units.len() {
            if let Some(&c) = pass
                .chain_of(u)
                .iter()
                .find(|&&c| pass.clusters[c].write != NONE)
            {
                self.head[u] = pass.call(pass.clusters[c].write);
            }
        }
    }

    pub(super) fn take(&mut self, u: usize) {
        self.done[u] = true;
        let unit = &self.units[u];
        self.ready_s.remove(&(unit.s.0, u));
        self.ready_c.remove(&(self.head[u], u));
        if let Some(r) = unit.req {
            self.waiting.remove(&(r, u));
            self.reqs.remove(&(r, u));
        }
    }

    pub(super) fn clean(&mut self) {
        while self
            .by_f
            .peek()
            .is_some_and(|Reverse((_, u))| self.done[*u])
        {
            self.by_f.pop();
        }
    }

    /// The earliest return of the remaining units.
    pub(super) fn min_f(&mut self) -> i64 {
        self.clean();
        self.by_f.peek().map_or(i64::MAX, |Reverse((f, _))| *f)
    }

    /// The remaining unit with the second earliest return.
    pub(super) fn second(&mut self) -> Option<usize> {
        self.clean();
        let top = self.by_f.pop();
        self.clean();
        let m2 = self.by_f.peek().map(|Reverse((_, u))| *u);
        if let Some(t) = top {
            self.by_f.push(t);
        }
        m2
    }

    /// The remaining unit with the earliest return, that return, and
    /// whether it may come next; the others that may are in the ready
    /// sets. `None` when no unit remains.
    pub(super) fn refresh(&mut self) -> Option<(usize, i64, bool)> {
        self.clean();
        let &Reverse((f1, m1)) = self.by_f.peek()?;
        while self.sp < self.by_s.len() && self.units[self.by_s[self.sp]].s.0 <= f1 {
            let u = self.by_s[self.sp];
            self.sp += 1;
            if !self.done[u] {
                match self.units[u].req.filter(|_| self.versions) {
                    Some(r) => {
                        self.waiting.insert((r, u));
                    }
                    None => {
                        self.ready_s.insert((self.units[u].s.0, u));
                        self.ready_c.insert((self.head[u], u));
                    }
                }
            }
        }
        let s1 = self.units[m1].s.0;
        let ready = s1 <= f1 || {
            let f2 = self.second().map_or(i64::MAX, |m2| self.units[m2].f.0);
            s1 <= f2
        };
        Some((m1, f1, ready))
    }
}

/// One operation of the witness: its point, its segment (the writes
/// before it) and the operation, with the top bit set for any but the
/// segment's write (which sorts first in it).
pub(super) type Slot = (i64, u32, u32);

/// The bits of a [`Slot`]'s operation.
pub(super) const OP: u32 = u32::MAX >> 1;

fn slot(p: i64, k: u64, kind: u8, op: usize) -> Slot {
    (p, k as u32, op as u32 | u32::from(kind) << 31)
}

/// The operations of a witness, in order, with their points.
pub(super) fn order(slots: &[Slot]) -> impl Iterator<Item = (i64, usize)> + '_ {
    slots.iter().map(|&(p, _, op)| (p, (op & OP) as usize))
}

/// Operations by a key (the value or version a failed conditional write
/// expected), in one sorted list.
pub(super) struct Lists<K> {
    keys: Vec<K>,
    ops: Vec<usize>,
}

impl<K: Copy + Ord> Lists<K> {
    fn new(mut pairs: Vec<(K, usize)>) -> Self {
        pairs.sort_unstable();
        let (keys, ops) = pairs.into_iter().unzip();
        Lists { keys, ops }
    }

    /// The operations under `key`, in increasing order.
    pub(super) fn get(&self, key: K) -> &[usize] {
        let lo = self.keys.partition_point(|&k| k < key);
        let hi = lo + self.keys[lo..].partition_point(|&k| k == key);
        &self.ops[lo..hi]
    }
}

/// The witness being built: the current segment and the failed
/// conditional writes still to place.
pub(super) struct Sweep {
    pub(super) out: Vec<Slot>,
    /// The current segment: its index, its write's point, its value.
    pub(super) k: u64,
    pub(super) pk: i64,
    pub(super) value: u32,
    /// The earliest point for the next write.
    pub(super) t: i64,
    /// Failed conditional writes by invocation (the next one not yet
    /// looked at), by return, by the value or version they expected.
    pub(super) by_call: Vec<usize>,
    pub(super) next_call: usize,
    pub(super) by_ret: BinaryHeap<Reverse<(i64, usize)>>,
    pub(super) by_value: Lists<u32>,
    pub(super) by_version: Lists<u64>,
    pub(super) done: Vec<bool>,
    /// Invoked during the segment they are excluded from, by return.
    pub(super) open: BinaryHeap<Reverse<(i64, usize)>>,
    /// Writes with an unknown outcome that nobody needs, by invocation.
    pub(super) optional: Vec<usize>,
}

impl Sweep {
    pub(super) fn new<I, O>(pass: &Pass<'_, I, O>) -> Self {
        let n = pass.view.len();
        let mut by_call: Vec<usize> = Vec::new();
        let mut by_value: Vec<(u32, usize)> = Vec::new();
        let mut by_version: Vec<(u64, usize)> = Vec::new();
        for (i, op) in pass.view.iter().enumerate() {
            if let RegisterOp::Refused(g) = op {
                by_call.push(i);
                match *g {
                    Guard::Value(e) => by_value.push((e, i)),
                    Guard::Version(v) => by_version.push((v, i)),
                }
            }
        }
        let (by_value, by_version) = (Lists::new(by_value), Lists::new(by_version));
        by_call.sort_unstable_by_key(|&i| (pass.call(i), i));
        let by_ret = by_call.iter().map(|&i| Reverse((pass.ret(i), i))).collect();
        let mut optional: Vec<usize> = (0..n)
            .filter(|&i| !pass.mand[i] && matches!(pass.view[i], RegisterOp::MayWrite { .. }))
            .collect();
        optional.sort_unstable_by_key(|&i| (pass.call(i), i));
        Sweep {
            out: Vec::with_capacity(n),
            k: 0,
            pk: i64::MIN,
            value: pass.init,
            t: i64::MIN,
            by_call,
            next_call: 0,
            by_ret,
            by_value,
            by_version,
            done: vec![false; n],
            open: BinaryHeap::new(),
            optional,
        }
    }

    /// Opens a segment with a write nobody needs (unknown outcome, its
    /// guard holding now) at a point no later than `by` and `bound`, if
    /// one is invoked by then.
    pub(super) fn filler<I, O>(
        &mut self,
        pass: &Pass<'_, I, O>,
        by: i64,
        bound: i64,
    ) -> Result<bool, String> {
        let lim = by.min(bound);
        for j in 0..self.optional.len() {
            let f = self.optional[j];
            if self.t.max(pass.call(f)) > lim {
                if pass.call(f) > lim {
                    break;
                }
                continue;
            }
            let holds = match guard_of(&pass.view[f]) {
                None => true,
                Some(Guard::Value(e)) => e == self.value,
                Some(Guard::Version(v)) => pass.v0 + self.k == v,
            };
            if !self.done[f] && holds {
                self.done[f] = true;
                self.write(pass, f, bound)?;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The earliest return of those that need another segment than the
    /// current one: invoked during it, or excluded from it and not placed
    /// before it.
    pub(super) fn deadline<I, O>(&mut self, pass: &Pass<'_, I, O>) -> Option<i64> {
        let mut d = None;
        while let Some(&Reverse((r, i))) = self.open.peek() {
            if !self.done[i] {
                d = Some(r);
                break;
            }
            self.open.pop();
        }
        for list in [
            self.by_value.get(self.value),
            self.by_version.get(pass.v0 + self.k),
        ] {
            for &r in list {
                if !self.done[r] && !self.allowed(pass, r) {
                    d = Some(d.map_or(pass.ret(r), |d: i64| d.min(pass.ret(r))));
                }
            }
        }
        d
    }

    /// Whether failed conditional write `r` may go in the current segment.
    pub(super) fn allowed<I, O>(&self, pass: &Pass<'_, I, O>, r: usize) -> bool {
        match pass.view[r] {
            RegisterOp::Refused(Guard::Value(e)) => e != self.value,
            RegisterOp::Refused(Guard::Version(v)) => pass.v0 + self.k != v,
            _ => false,
        }
    }

    /// Places `r` in the current segment.
    pub(super) fn put<I, O>(&mut self, pass: &Pass<'_, I, O>, r: usize) {
        self.done[r] = true;
        let p = self.pk.max(pass.call(r));
        self.out.push(slot(p, self.k, 1, r));
        self.t = self.t.max(p);
    }

    /// Places unit `u`; `after` is the earliest return of the units after it.
    pub(super) fn place_unit<I, O>(
        &mut self,
        pass: &Pass<'_, I, O>,
        u: usize,
        after: i64,
    ) -> Result<(), String> {
        let chain = pass.chain_of(u);
        // The earliest return of each cluster's operations from it on.
        let mut bound = vec![after; chain.len() + 1];
        for j in (0..chain.len()).rev() {
            bound[j] = bound[j + 1].min(pass.clusters[chain[j]].f.0);
        }
        for (j, &c) in chain.iter().enumerate() {
            let cl = &pass.clusters[c];
            if cl.write != NONE {
                self.write(pass, cl.write, bound[j])?;
            }
            for &r in pass.reads_of(c) {
                let p = self.pk.max(pass.call(r));
                if p > pass.ret(r) {
                    return Err(format!("read {r} at {p} after its return"));
                }
                self.t = self.t.max(p);
                self.out.push(slot(p, self.k, 1, r));
            }
            // Invoked by now: here when the guard allows, else in the next
            // segment.
            while self.next_call < self.by_call.len()
                && pass.call(self.by_call[self.next_call]) <= self.t
            {
                let r = self.by_call[self.next_call];
                self.next_call += 1;
                if self.done[r] {
                    continue;
                }
                if self.allowed(pass, r) {
                    self.put(pass, r);
                } else {
                    self.open.push(Reverse((pass.ret(r), r)));
                }
            }
        }
        Ok(())
    }

    /// Places write `w`, opening a segment; `bound` is the earliest return
    /// of everything after it.
    pub(super) fn write<I, O>(
        &mut self,
        pass: &Pass<'_, I, O>,
        w: usize,
        bound: i64,
    ) -> Result<(), String> {
        let x = value_written(&pass.view[w]).ok_or("no value")?;
        // Those excluded from the segment this write opens go before it
        // when their invocation is no later than every return after.
        let next_version = pass.v0 + self.k + 1;
        // (Not past the return of one waiting for the next segment.)
        let bound = bound.min(self.deadline(pass).unwrap_or(i64::MAX));
        let mut before: Vec<usize> = Vec::new();
        for list in [self.by_value.get(x), self.by_version.get(next_version)] {
            for &r in list {
                if !self.done[r]
                    && pass.call(r) > self.t
                    && pass.call(r) <= bound
                    && pass.ret(r) >= self.pk
                    && self.allowed(pass, r)
                {
                    before.push(r);
                }
            }
        }
        for r in before {
            self.put(pass, r);
        }
        let p = self.t.max(pass.call(w));
        if p > pass.ret(w) {
            return Err(format!("write {w} at {p} after its return"));
        }
        // Those that return before the write must be placed now.
        while let Some(&Reverse((rt, r))) = self.by_ret.peek() {
            if rt >= p {
                break;
            }
            self.by_ret.pop();
            if self.done[r] {
                continue;
            }
            if !self.allowed(pass, r) || rt < self.pk {
                return Err(format!(
                    "refused {r} [{}, {rt}] ends in segment {} from {}, value {}",
                    pass.call(r),
                    self.k,
                    self.pk,
                    self.value
                ));
            }
            self.put(pass, r);
        }
        self.k += 1;
        self.pk = p;
        self.t = p;
        self.value = x;
        self.out.push(slot(p, self.k, 0, w));
        while let Some(Reverse((_, r))) = self.open.pop() {
            if !self.done[r] {
                self.put(pass, r);
            }
        }
        Ok(())
    }

    /// Places the rest in the last segment, which lasts for ever (after a
    /// write nobody needs, for those it excludes).
    pub(super) fn finish<I, O>(mut self, pass: &Pass<'_, I, O>) -> Result<Vec<Slot>, String> {
        for j in 0..self.by_call.len() {
            let r = self.by_call[j];
            if self.done[r] {
                continue;
            }
            if !self.allowed(pass, r) {
                let by = self.deadline(pass).unwrap_or(pass.ret(r));
                if !self.filler(pass, by, i64::MAX)? {
                    return Err(format!("refused {r} left in the last segment"));
                }
            }
            if self.done[r] {
                continue;
            }
            if !self.allowed(pass, r) || pass.ret(r) < self.pk {
                return Err(format!("refused {r} left in the last segment"));
            }
            self.put(pass, r);
        }
        let mut out = self.out;
        out.sort_unstable_by_key(|&(p, k, op)| (k, op >> 31, p, op & OP));
        Ok(out)
    }
}

/// How many of the next conditional puts' counts a choice is checked
/// against (the replay checks the rest).
const WINDOW: usize = 32;

/// What the successful conditional puts ask of the order of the units. A
/// unit that needs `r` writes before it sits where exactly `r` have been
/// placed; a unit that must come before it, directly (one of its
/// operations returned before one of the other's was invoked) or through
/// other units, is *due* by it. The witness places the units due first
/// first (earliest deadline first, counted in writes), and places a unit
/// due later, or never, only while every conditional put before its due
/// one keeps room for the writes of the units due by it.
pub(super) struct Dues {
    /// The units that need a number of writes before them, by it.
    pub(super) reqs: Vec<(u64, usize)>,
    /// Per unit: the index in `reqs` of the first it is due by
    /// (`reqs.len()`: none); a unit of `reqs`, its own index there.
    pub(super) due: Vec<usize>,
    /// Per index in `reqs`: the writes of the remaining units due by it
    /// (but the units of `reqs`).
    pub(super) must: Vec<u64>,
    /// The room before the conditional puts of the window (the fewest
    /// from the first on), refreshed at each choice.
    pub(super) room: [i64; WINDOW],
    pub(super) first: usize,
    pub(super) end: usize,
}

impl Dues {
    /// The dues of the units of `pass`, or `None` when no unit needs a
    /// number of writes before it.
    ///
    /// Unit `x` must come before unit `z` when `x.f < z.s`; the units `x`
    /// reaches are then those with `z.s > t*`, for the least `t*` reached
    /// from `x.f` by `t -> min(t, g(t))`, `g(t)` the earliest return of the
    /// units invoked after `t`. `t*` is memoized per suffix of the units
    /// by latest invocation: O(n log n).
    pub(super) fn new<I, O>(pass: &Pass<'_, I, O>) -> Option<Self> {
        let units = &pass.units;
        let mut reqs: Vec<(u64, usize)> = (1..units.len())
            .filter_map(|u| units[u].req.map(|r| (r, u)))
            .collect();
        if reqs.is_empty() {
            return None;
        }
        reqs.sort_unstable();
        let k = reqs.len();
        let mut due = vec![k; units.len()];
        for (j, &(_, u)) in reqs.iter().enumerate() {
            due[u] = j;
        }
        let mut by_s: Vec<usize> = (1..units.len()).collect();
        by_s.sort_unstable_by_key(|&u| units[u].s.0);
        let m = by_s.len();
        let s: Vec<i64> = by_s.iter().map(|&u| units[u].s.0).collect();
        // Per suffix of `by_s`: the earliest return, and the first
        // conditional put's index.
        let mut min_f = vec![i64::MAX; m + 1];
        let mut min_req = vec![k; m + 1];
        for i in (0..m).rev() {
            let u = by_s[i];
            min_f[i] = min_f[i + 1].min(units[u].f.0);
            min_req[i] = min_req[i + 1];
            if units[u].req.is_some() {
                min_req[i] = min_req[i].min(due[u]);
            }
        }
        let after = |t: i64| s.partition_point(|&x| x <= t);
        // fix[i]: where t = min_f[i] leads.
        let mut fix = vec![i64::MAX; m + 1];
        for i in 0..=m {
            let t = min_f[i];
            let j = after(t);
            fix[i] = if min_f[j] >= t { t } else { fix[j] };
        }
        let mut must = vec![0u64; k];
        for u in 1..units.len() {
            if units[u].req.is_some() {
                continue;
            }
            let t0 = units[u].f.0;
            let i0 = after(t0);
            let t = if min_f[i0] >= t0 { t0 } else { fix[i0] };
            let j = min_req[after(t)];
            due[u] = j;
            if j < k {
                must[j] += units[u].writes;
            }
        }
        Some(Dues {
            reqs,
            due,
            must,
            room: [0; WINDOW],
            first: 0,
            end: 0,
        })
    }

    /// Computes the room before the next conditional puts, `count` writes
    /// placed and `first` the index of the next.
    pub(super) fn refresh(&mut self, units: &[Unit], first: usize, count: u64) {
        self.first = first;
        self.end = (first + WINDOW).min(self.reqs.len());
        let mut placed = count as i64;
        let mut least = i64::MAX;
        for j in first..self.end {
            placed += self.must[j] as i64;
            least = least.min(self.reqs[j].0 as i64 - placed);
            self.room[j - first] = least;
            placed += units[self.reqs[j].1].writes as i64;
        }
    }

    /// The least room before the conditional puts that a unit due by the
    /// one at index `due` (or none) would take from.
    pub(super) fn room_for(&self, due: usize) -> i64 {
        let hi = due.min(self.end);
        if hi > self.first {
            self.room[hi - 1 - self.first]
        } else {
            i64::MAX
        }
    }

    /// Whether unit `u` (not one of `reqs`) fits now.
    pub(super) fn fits(&self, units: &[Unit], u: usize) -> bool {
        units[u].writes as i64 <= self.room_for(self.due[u])
    }

    /// Unit `u` is placed.
    pub(super) fn take(&mut self, units: &[Unit], u: usize) {
        let j = self.due[u];
        if units[u].req.is_none() && j < self.must.len() {
            self.must[j] -= units[u].writes;
        }
    }
}
