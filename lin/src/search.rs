//! The exact search for one key: just-in-time linearization over the
//! time-ordered call and return events (Wing–Gong/Lowe configurations of
//! (state, linearized pending operations), explored breadth-first and merged).
//!
//! Only operations that are still pending are kept in a configuration's set
//! (a slot per pending operation), so a configuration is a state plus a few
//! words, whatever the length of the history. On top of that:
//! * read-only operations are placed eagerly in every configuration where
//!   they are legal (moving a read to "now" never hurts);
//! * a configuration that used a superset of the unknown-outcome operations
//!   of another one with the same state is dropped (unknown operations may
//!   take effect never);
//! * configurations are only extended up to the returning operation (lazy);
//! * with version claims, configurations that passed a version some pending
//!   operation still needs are dropped, and an unclaimed write may not produce
//!   a version that a known write claims;
//! * the search ends when the last known operation has returned.
//!
//! Long because the configurations, their pruning and the walk read each
//! other's state on every step; the depth-first fallback is in `depth_first`.

use super::bits::Bits;
use super::spec::{Claim, DeadStates, Next, Spec, ValueUse, Values};
use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::time::Instant;

mod depth_first;

/// One operation of one key, as the search sees it.
#[derive(Debug)]
pub(crate) struct KOp<'a, I, O> {
    /// Its input.
    pub input: &'a I,
    /// Its output (`None`: unknown outcome).
    pub output: Option<&'a O>,
    /// Invocation time.
    pub call: i64,
    /// Return time; `None` when it never returned or its outcome is unknown.
    pub ret: Option<i64>,
    /// Never changes the state where legal (and has a known output).
    pub read_only: bool,
    /// Its version claim.
    pub claim: Claim,
    /// A blind write ([`Spec::blind_writes`]): interchangeable with every
    /// other one.
    pub blind: bool,
}

/// Limits of one search.
pub(crate) struct Limits<'a> {
    /// Give up after this instant (not deterministic: for files only).
    pub deadline: Option<Instant>,
    /// Give up after this many search steps (deterministic).
    pub max_steps: Option<u64>,
    /// Give up when the estimated memory exceeds this many bytes.
    pub memory: usize,
    /// Give up when this flag is set (another key failed).
    pub cancel: Option<&'a (dyn Fn() -> bool + Sync)>,
    /// Record paths (for reports; slower).
    pub record_paths: bool,
    /// Drop configurations that passed a version some pending known operation
    /// still needs (faster; but the failure is then named where the last
    /// such configuration died, not where an operation really cannot be
    /// placed: explanations search without it).
    pub prune: bool,
    /// Without `prune`: still drop configurations that overwrote a value
    /// still needed when they would all die by this return event (an event
    /// index of this search's history). Exact for a failure at or after it:
    /// the re-search after a pruned failure passes the failure's event.
    pub doom_until: usize,
    /// Stop after this operation's return (the history cut there: operations
    /// still pending then are placed only if that helps), instead of after
    /// the last return.
    pub stop_after: Option<usize>,
    /// Continue depth-first once the breadth-first frontier holds more
    /// configurations than this.
    pub frontier_cap: usize,
}

/// A persistent list of placed operations, newest first.
pub(crate) type Path<S> = Option<Arc<PathNode<S>>>;

/// One placed operation and the state after it.
#[derive(Debug)]
pub(crate) struct PathNode<S> {
    pub op: u32,
    pub state: S,
    pub len: u32,
    pub prev: Path<S>,
}

/// Flattens a path into (op, state after) pairs, oldest first.
pub(crate) fn path_vec<S: Clone>(p: &Path<S>) -> Vec<(usize, S)> {
    let mut out = Vec::new();
    let mut cur = p.as_ref();
    while let Some(n) = cur {
        out.push((n.op as usize, n.state.clone()));
        cur = n.prev.as_ref();
    }
    out.reverse();
    out
}

fn distinct_states<S: Clone + PartialEq, B>(frontier: &[Cfg<S, B>]) -> Vec<S> {
    let mut states: Vec<S> = Vec::new();
    for c in frontier {
        if states.len() < 8 && !states.contains(&c.state) {
            states.push(c.state.clone());
        }
    }
    states
}

fn path_len<S>(p: &Path<S>) -> u32 {
    p.as_ref().map_or(0, |n| n.len)
}

/// A configuration at some point before a failure: the key's operations
/// not yet settled in it, from its state, cannot be linearized either.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot<S> {
    /// Index in the event order after which it was taken.
    pub event: usize,
    /// How many configurations there were (1: every linearization agreed).
    pub of: usize,
    /// The single state.
    pub state: S,
    /// Pending operations already placed in it.
    pub placed: Vec<usize>,
    /// The last return event by which every configuration dropped before
    /// it would have died (0: none dropped; `usize::MAX`: some dropped for
    /// passing a needed version). When it is at most some later return,
    /// every linearization that reaches that return passes through the
    /// configurations of the snapshot.
    pub drops_die_by: usize,
}

/// Why the search says "not linearizable".
#[derive(Debug)]
pub(crate) struct FailInfo<S> {
    /// The operation that cannot be placed before its return.
    pub op: usize,
    /// The distinct states possible just before (at most 8).
    pub states: Vec<S>,
    /// The longest partial linearization found (when paths are recorded).
    pub longest: Vec<(usize, S)>,
    /// The last single-configuration point before the failure (`event`
    /// `usize::MAX`: the start).
    pub snapshot: Option<Snapshot<S>>,
    /// Points every eighth return, at most 32 (each snapshot one of their
    /// configurations): those after `snapshot` newest first, then the
    /// earlier ones newest first.
    pub recent: Vec<Snapshot<S>>,
    /// Whether configurations were dropped by [`Limits::prune`] before the
    /// failure (then `op` may not be an operation that cannot be placed).
    pub pruned: bool,
    /// Whether some of them were dropped for passing a needed version
    /// (not only as doomed by an overwritten value).
    pub version_pruned: bool,
    /// The operations that doomed the configurations dropped as doomed and
    /// return after the failure: those that doomed one while the failing
    /// return was closed first, then the others, each group by return.
    /// Every configuration of the exact search that outlives the failure
    /// descends from such a configuration, and can never place its
    /// operation.
    pub doom_needers: Vec<usize>,
    /// Confirmed: at `op`'s return every configuration has overwritten the
    /// value `op` needs, and no operation that could write it again is left
    /// (see `explain::confirm_doomed`; `states` is then empty).
    pub overwritten: bool,
    /// The index of the failing return event.
    pub event: usize,
}

/// The outcome of one search.
#[derive(Debug)]
pub(crate) enum Outcome<S> {
    /// Linearizable.
    Ok,
    /// Not linearizable.
    Fail(Box<FailInfo<S>>),
    /// A budget ran out (the reason), or the search was cancelled.
    GaveUp(String),
}

/// A call or return event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Event {
    pub time: i64,
    /// 0 = call, 1 = return (calls first at equal times: closed intervals).
    pub kind: u8,
    pub op: u32,
}

/// The events of `ops` in processing order.
pub(crate) fn events<I, O>(ops: &[KOp<'_, I, O>]) -> Vec<Event> {
    let mut ev = Vec::with_capacity(ops.len() * 2);
    for (i, o) in ops.iter().enumerate() {
        ev.push(Event {
            time: o.call,
            kind: 0,
            op: i as u32,
        });
        if let Some(r) = o.ret {
            ev.push(Event {
                time: r.max(o.call),
                kind: 1,
                op: i as u32,
            });
        }
    }
    ev.sort_unstable();
    ev
}

/// Checks one key's operations from `init`; also returns the number of
/// search steps taken (spec steps and configurations expanded).
pub(crate) fn search<P: Spec>(
    spec: &P,
    init: &P::State,
    ops: &[KOp<'_, P::Input, P::Output>],
    limits: &Limits<'_>,
) -> (Outcome<P::State>, u64) {
    let ev = events(ops);
    // A slot per pending operation, lowest free first (a min-heap: no
    // slot is ever free twice).
    let mut free: std::collections::BinaryHeap<std::cmp::Reverse<usize>> =
        std::collections::BinaryHeap::new();
    let mut next = 0usize;
    let mut slot_of = vec![usize::MAX; ops.len()];
    for e in &ev {
        if e.kind == 0 {
            let s = free.pop().map_or_else(
                || {
                    next += 1;
                    next - 1
                },
                |std::cmp::Reverse(s)| s,
            );
            slot_of[e.op as usize] = s;
        } else {
            free.push(std::cmp::Reverse(slot_of[e.op as usize]));
        }
    }
    let nslots = next;
    if nslots <= 128 {
        Search::<P, u128>::new(spec, ops, limits, nslots, slot_of).run(init, &ev)
    } else {
        Search::<P, Box<[u64]>>::new(spec, ops, limits, nslots, slot_of).run(init, &ev)
    }
}

/// Keys with fewer concurrent operations than this are searched without the
/// value view (building it costs more than it saves there).
const VALUE_VIEW_MIN_SLOTS: usize = 4;

/// The search builds its reductions once it holds more configurations, or
/// more pending operations with a known outcome (unknown ones stay pending
/// to the end), than this (see `Search::enable_reductions`).
const REDUCTIONS_AFTER: usize = 8;

/// Whether a search's value or dead-state view is built.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reductions {
    /// Not used (explanations' searches of sub-histories).
    Never,
    /// Not built yet.
    Later,
    /// Built (if the spec gives one).
    Built,
}

/// A key's [`Values`] with, per value, the operations that need, observe
/// and write it.
struct ValueView<S> {
    values: Values<S>,
    /// Per operation, the index of its call event.
    call_ev: Vec<usize>,
    /// Per operation, the index of its return event (`usize::MAX`: none).
    ret_ev: Vec<usize>,
    /// Per value: operations that observe it (or need it).
    observers: Vec<Vec<u32>>,
    /// Per value: the last call event of an observer (`None`: no observer).
    last_observer_call: Vec<Option<usize>>,
    /// Per value: operations with a known output that need it.
    needers: Vec<Vec<u32>>,
    /// Per value: operations that may write it.
    writers: Vec<Vec<u32>>,
}

impl<S> ValueView<S> {
    fn new<P: Spec<State = S>>(
        spec: &P,
        ops: &[KOp<'_, P::Input, P::Output>],
        ev: &[Event],
    ) -> Option<Self> {
        let io: Vec<_> = ops.iter().map(|k| (k.input, k.output)).collect();
        let values = spec.values(&io)?;
        if values.uses.len() != ops.len() {
            return None;
        }
        let mut call_ev = vec![0usize; ops.len()];
        let mut ret_ev = vec![usize::MAX; ops.len()];
        for (i, e) in ev.iter().enumerate() {
            if e.kind == 0 {
                call_ev[e.op as usize] = i;
            } else {
                ret_ev[e.op as usize] = i;
            }
        }
        let n = values
            .uses
            .iter()
            .flat_map(|u| [u.needs, u.observes, u.writes])
            .flatten()
            .max()
            .map_or(0, |m| m as usize + 1);
        let mut v = ValueView {
            values,
            call_ev,
            ret_ev,
            observers: vec![Vec::new(); n],
            last_observer_call: vec![None; n],
            needers: vec![Vec::new(); n],
            writers: vec![Vec::new(); n],
        };
        for (i, u) in v.values.uses.iter().enumerate() {
            let ValueUse {
                needs,
                observes,
                writes,
                ..
            } = *u;
            for x in observes
                .into_iter()
                .chain(needs.filter(|n| Some(*n) != observes))
            {
                v.observers[x as usize].push(i as u32);
                let l = &mut v.last_observer_call[x as usize];
                *l = Some(l.map_or(v.call_ev[i], |c: usize| c.max(v.call_ev[i])));
            }
            if let Some(x) = needs {
                if ops[i].output.is_some() {
                    v.needers[x as usize].push(i as u32);
                }
            }
            if let Some(x) = writes {
                v.writers[x as usize].push(i as u32);
            }
        }
        Some(v)
    }
}

/// The reason given when [`Limits::max_steps`] runs out.
pub(crate) fn steps_exhausted(max: u64) -> String {
    format!("step budget exhausted ({max} search steps)")
}

struct Cfg<S, B> {
    state: S,
    bits: B,
    path: Path<S>,
}

/// The slots of pending operations that make one configuration better than
/// another with the same state: read-only ones (placing them is free, so more
/// is better) and unknown-outcome ones (they may never take effect, so fewer
/// is better).
#[derive(Clone)]
struct Masks<B> {
    unk: B,
    ro: B,
    free: B,
    n_unk: usize,
    n_ro: usize,
}

impl<B: Bits> Masks<B> {
    fn new(n: usize) -> Self {
        Masks {
            unk: B::empty(n),
            ro: B::empty(n),
            free: B::empty(n),
            n_unk: 0,
            n_ro: 0,
        }
    }
    fn any(&self) -> bool {
        self.n_unk + self.n_ro > 0
    }
    fn set(&mut self, slot: usize, unknown: bool, read_only: bool) {
        if unknown {
            self.unk.set(slot);
            self.n_unk += 1;
        }
        if read_only {
            self.ro.set(slot);
            self.n_ro += 1;
        }
        self.free = self.unk.or(&self.ro);
    }
    fn clear(&mut self, slot: usize, unknown: bool, read_only: bool) {
        if unknown {
            self.unk.clear(slot);
            self.n_unk -= 1;
        }
        if read_only {
            self.ro.clear(slot);
            self.n_ro -= 1;
        }
        self.free = self.unk.or(&self.ro);
    }
}

/// One antichain entry: (unknown bits, read-only bits, index).
type Entry<B> = (B, B, u32);
/// One antichain group: its key and its entries.
type Group<S, B> = ((S, B), Vec<Entry<B>>);

/// Configurations kept as an antichain: per (state, placed state-changing
/// known operations), only configurations not dominated by another (one with
/// a superset of placed read-only operations and a subset of used
/// unknown-outcome operations).
struct Antichain<S, B> {
    /// The groups, in insertion order.
    groups: Vec<Group<S, B>>,
    /// An index of `groups`, built once there are more than a few.
    index: Option<FxHashMap<(S, B), usize>>,
}

impl<S: Clone + Eq + std::hash::Hash, B: Bits> Antichain<S, B> {
    fn new() -> Self {
        Antichain {
            groups: Vec::new(),
            index: None,
        }
    }

    fn group(&mut self, key: (S, B)) -> &mut Vec<Entry<B>> {
        let at = match &mut self.index {
            // One hash per lookup (states may be long strings).
            Some(ix) => match ix.entry(key.clone()) {
                std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(self.groups.len());
                    None
                }
            },
            None => self.groups.iter().position(|(k, _)| *k == key),
        };
        let i = match at {
            Some(i) => i,
            None => {
                self.groups.push((key, Vec::new()));
                if self.index.is_none() && self.groups.len() > 8 {
                    self.index = Some(
                        self.groups
                            .iter()
                            .enumerate()
                            .map(|(i, (k, _))| (k.clone(), i))
                            .collect(),
                    );
                }
                self.groups.len() - 1
            }
        };
        &mut self.groups[i].1
    }

    /// Inserts (state, bits) with index `idx`; false if dominated. Marks the
    /// entries it dominates dead.
    fn insert(&mut self, state: &S, bits: &B, m: &Masks<B>, idx: u32, dead: &mut [bool]) -> bool {
        if !m.any() {
            let e = self.group((state.clone(), bits.clone()));
            if e.is_empty() {
                e.push((bits.clone(), bits.clone(), idx));
                return true;
            }
            return false;
        }
        let k = bits.and_not(&m.free);
        let u = bits.and(&m.unk);
        let r = bits.and(&m.ro);
        let e = self.group((state.clone(), k));
        if e.iter()
            .any(|(eu, er, _)| eu.subset_of(&u) && r.subset_of(er))
        {
            return false;
        }
        e.retain(|(eu, er, j)| {
            if u.subset_of(eu) && er.subset_of(&r) {
                dead[*j as usize] = true;
                false
            } else {
                true
            }
        });
        e.push((u, r, idx));
        true
    }

    fn len(&self) -> usize {
        self.groups.len()
    }
}

struct Search<'s, 'o, P: Spec, B> {
    spec: &'s P,
    ops: &'s [KOp<'o, P::Input, P::Output>],
    limits: &'s Limits<'s>,
    nslots: usize,
    /// Pending operations (slot, op), in slot order of allocation.
    pending: Vec<(usize, u32)>,
    /// Pending read-only operations (slot, op).
    pending_ro: Vec<(usize, u32)>,
    masks: Masks<B>,
    slot_of: Vec<usize>,
    pos: usize,
    debug: bool,
    versioned: bool,
    /// Versions produced by known operations (sorted).
    produced: Vec<u64>,
    steps: u64,
    /// Whether [`Limits::prune`] dropped a configuration.
    pruned: bool,
    best: Path<P::State>,
    /// The spec's value view, if it gives one.
    vals: Option<ValueView<P::State>>,
    /// The spec's dead-state view, if it gives one and no value view.
    dead: Option<DeadStates<P::State>>,
    /// Whether `vals` and `dead` are built yet.
    reductions: Reductions,
    /// Per operation: called and not yet returned (or never returns).
    is_pending: Vec<bool>,
    /// The last return event by which configurations dropped as doomed
    /// ([`Search::doomed`]) would all have died: a failure at or after it is
    /// where the search without the drops fails too.
    doom_deadline: usize,
    /// Per operation: the last return event being closed when a
    /// configuration it doomed was dropped (`usize::MAX`: none).
    doomed_by: Vec<usize>,
    /// The return event being closed.
    closing: usize,
    /// [`Limits::frontier_cap`], or [`BARE_FRONTIER_CAP`] for a bare search.
    frontier_cap: usize,
}

/// The frontier cap of the main search of a key with neither value
/// reductions nor versions (e.g. with appends): there a wide breadth-first
/// frontier stays wide, and going depth-first sooner finds a linearization
/// sooner (Porcupine's c50-ok kv log: 0.74 -> 0.26 s of CPU). Explanations
/// and searches with value reductions keep [`Limits::frontier_cap`]: their
/// reports use the breadth-first snapshots.
const BARE_FRONTIER_CAP: usize = 1_000;

fn need(c: Claim) -> Option<u64> {
    match c {
        Claim::None => None,
        Claim::At(v) => Some(v),
        Claim::Produced(v) => Some(v.saturating_sub(1)),
    }
}

impl<'s, 'o, P: Spec, B: Bits> Search<'s, 'o, P, B> {
    fn new(
        spec: &'s P,
        ops: &'s [KOp<'o, P::Input, P::Output>],
        limits: &'s Limits<'s>,
        nslots: usize,
        slot_of: Vec<usize>,
    ) -> Self {
        let mut produced: Vec<u64> = ops
            .iter()
            .filter(|o| o.output.is_some())
            .filter_map(|o| match o.claim {
                Claim::Produced(v) => Some(v),
                _ => None,
            })
            .collect();
        produced.sort_unstable();
        let versioned = ops.iter().any(|o| o.claim != Claim::None);
        Search {
            spec,
            ops,
            limits,
            nslots,
            pending: Vec::new(),
            pending_ro: Vec::new(),
            masks: Masks::new(nslots),
            slot_of,
            pos: 0,
            debug: std::env::var_os("OVERCAST_LIN_DEBUG").is_some(),
            versioned,
            produced,
            steps: 0,
            pruned: false,
            best: None,
            vals: None,
            dead: None,
            reductions: if limits.prune || limits.doom_until > 0 {
                Reductions::Later
            } else {
                // Not in an explanation's searches of sub-histories: their
                // snapshots and states should be real ones.
                Reductions::Never
            },
            is_pending: vec![false; ops.len()],
            doom_deadline: 0,
            doomed_by: vec![usize::MAX; ops.len()],
            closing: 0,
            frontier_cap: limits.frontier_cap,
        }
    }

    /// Builds the spec's value view (or else its dead-state view) once,
    /// when the search first holds more than [`REDUCTIONS_AFTER`]
    /// configurations or pending operations, or goes depth-first (most keys never do, and building
    /// it costs more than their whole search). Exact whenever it is built:
    /// the reductions only merge or drop configurations that cannot do
    /// more than others. A key with no reductions gets the bare frontier
    /// cap from then on.
    fn enable_reductions(&mut self, ev: &[Event]) {
        if self.reductions != Reductions::Later {
            return;
        }
        self.reductions = Reductions::Built;
        if self.nslots >= VALUE_VIEW_MIN_SLOTS {
            self.vals = ValueView::new(self.spec, self.ops, ev);
        }
        if self.vals.is_none() {
            let io: Vec<_> = self.ops.iter().map(|k| (k.input, k.output)).collect();
            let mut last_event = vec![u32::MAX; self.ops.len()];
            for (i, e) in ev.iter().enumerate() {
                if e.kind == 1 {
                    last_event[e.op as usize] = i as u32;
                }
            }
            self.dead = self.spec.dead_states(&io, &last_event);
        }
        if self.vals.is_none()
            && self.dead.is_none()
            && !self.versioned
            && self.limits.prune
            && self.limits.stop_after.is_none()
        {
            self.frontier_cap = self.frontier_cap.min(BARE_FRONTIER_CAP);
        }
    }

    /// Whether operation `o` is placed in a configuration with `bits`
    /// (returned, or pending and placed).
    fn placed(&self, o: u32, bits: &B) -> bool {
        let o = o as usize;
        let called = self.vals.as_ref().is_some_and(|v| v.call_ev[o] < self.pos);
        called && (!self.is_pending[o] || bits.get(self.slot_of[o]))
    }

    /// Whether value `v` can no longer be observed in a configuration with
    /// `bits`: every operation that observes it was called and is placed.
    fn value_dead(&self, v: u32, bits: &B) -> bool {
        let Some(vals) = &self.vals else {
            return false;
        };
        let v = v as usize;
        match vals.last_observer_call.get(v) {
            None | Some(None) => true,
            Some(Some(c)) => {
                *c < self.pos && vals.observers[v].iter().all(|&o| self.placed(o, bits))
            }
        }
    }

    /// Replaces a state whose value no remaining operation can observe by
    /// the canonical one, so that such configurations merge.
    fn canonicalize(&self, c: &mut Cfg<P::State, B>) {
        if let Some(d) = &self.dead {
            // Every operation that could still tell the state apart has
            // returned (so is placed): the state is as good as dead.
            if (d.last_observer)(&c.state).is_none_or(|l| (l as usize) < self.pos) {
                c.state = (d.dead)(&c.state);
            }
            return;
        }
        let Some(vals) = &self.vals else {
            return;
        };
        let dead = match (vals.values.value_of)(&c.state) {
            Some(v) => self.value_dead(v, &c.bits),
            None => true,
        };
        if dead {
            c.state = (vals.values.overwritten)(&c.state);
        }
    }

    /// Whether a configuration with `bits` that just overwrote value `v` can
    /// never complete: an operation that needs `v` is not placed, and every
    /// operation that could write `v` again already is. If so, the return
    /// event by which all its extensions die (the first return of such an
    /// operation), and that operation.
    fn doomed(&self, v: u32, bits: &B) -> Option<(usize, u32)> {
        let vals = self.vals.as_ref()?;
        let v = v as usize;
        if v >= vals.needers.len() || !vals.writers[v].iter().all(|&o| self.placed(o, bits)) {
            return None;
        }
        vals.needers[v]
            .iter()
            .filter(|&&o| !self.placed(o, bits))
            .map(|&o| (vals.ret_ev[o as usize], o))
            .min()
    }

    /// The operations that doomed dropped configurations and return after
    /// event `ei` (see [`FailInfo::doom_needers`]).
    fn doom_needers_after(&self, ei: usize) -> Vec<usize> {
        let Some(vals) = &self.vals else {
            return Vec::new();
        };
        let mut v: Vec<(bool, usize, usize)> = (0..self.ops.len())
            .filter(|&o| self.doomed_by[o] != usize::MAX && vals.ret_ev[o] > ei)
            .map(|o| (self.doomed_by[o] != ei, vals.ret_ev[o], o))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, _, o)| o).collect()
    }

    /// Among the pending operations not placed in `bits`: the unconditional
    /// write of a value nobody can observe any more that returns first
    /// (these writes all lead to the same canonical state, so trying the
    /// one with the earliest deadline is enough).
    fn first_dead_write(&self, bits: &B) -> Option<u32> {
        let vals = self.vals.as_ref()?;
        let mut best: Option<(i64, u32)> = None;
        for &(s, op) in &self.pending {
            if bits.get(s) {
                continue;
            }
            let u = &vals.values.uses[op as usize];
            if !u.unconditional || !u.writes.is_some_and(|w| self.value_dead(w, bits)) {
                continue;
            }
            let key = (self.ops[op as usize].ret.unwrap_or(i64::MAX), op);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        best.map(|(_, op)| op)
    }

    fn extend(&mut self, path: &Path<P::State>, op: u32, state: &P::State) -> Path<P::State> {
        if !self.limits.record_paths {
            return None;
        }
        let p = Some(Arc::new(PathNode {
            op,
            state: state.clone(),
            len: path_len(path) + 1,
            prev: path.clone(),
        }));
        if path_len(&p) > path_len(&self.best) {
            self.best = p.clone();
        }
        p
    }

    /// Drops the configurations another one can reach by a detour: from the
    /// same canonical state (a value nobody can observe any more), placing
    /// one pending unconditional write and the placed reads of its value
    /// leads back to that state, so the configuration without them can do
    /// everything the one with them can (and may still use the write later).
    /// Exact: only dominated configurations go. Without it, every subset of
    /// such round trips is a configuration of its own (48 clients: thousands).
    fn drop_detours(&mut self, cfgs: Vec<Cfg<P::State, B>>) -> Vec<Cfg<P::State, B>> {
        let Some(vals) = &self.vals else {
            return cfgs;
        };
        let canonical = |c: &Cfg<P::State, B>| (vals.values.value_of)(&c.state).is_none();
        if cfgs.len() < 2 || !cfgs.iter().any(canonical) {
            return cfgs;
        }
        let mut at: FxHashMap<(&P::State, &B), usize> = FxHashMap::default();
        for (i, c) in cfgs.iter().enumerate() {
            at.insert((&c.state, &c.bits), i);
        }
        let mut dominated = vec![false; cfgs.len()];
        for (i, c) in cfgs.iter().enumerate() {
            if !canonical(c) {
                continue;
            }
            for &(s, op) in &self.pending {
                if !c.bits.get(s) {
                    continue;
                }
                let u = &vals.values.uses[op as usize];
                let o = &self.ops[op as usize];
                let Some(v) = u.writes else { continue };
                if !u.unconditional || o.read_only || !self.value_dead(v, &c.bits) {
                    continue;
                }
                // The round trip: the write and the placed pending reads of
                // its value.
                let mut without = c.bits.clone();
                without.clear(s);
                let mut reads: Vec<u32> = Vec::new();
                for &(rs, r) in &self.pending_ro {
                    if c.bits.get(rs) && vals.values.uses[r as usize].observes == Some(v) {
                        without.clear(rs);
                        reads.push(r);
                    }
                }
                let Some(&j) = at.get(&(&c.state, &without)) else {
                    continue;
                };
                // (Dominance is acyclic, the configuration without has
                // fewer writes placed: dropping every dominated one keeps
                // the end of each chain.)
                let _ = j;
                // Check the detour with the spec: reads legal here go first,
                // then the write, then the reads of its value.
                self.steps += 1;
                let Next::One(after) = self.spec.step(&c.state, o.input, o.output) else {
                    continue;
                };
                let legal = reads.iter().all(|&r| {
                    let ro = &self.ops[r as usize];
                    self.spec.is_legal(&c.state, ro.input, ro.output)
                        || self.spec.is_legal(&after, ro.input, ro.output)
                });
                if legal && (vals.values.overwritten)(&after) == c.state {
                    dominated[i] = true;
                    break;
                }
            }
        }
        if !dominated.contains(&true) {
            return cfgs;
        }
        cfgs.into_iter()
            .zip(dominated)
            .filter(|(_, d)| !d)
            .map(|(c, _)| c)
            .collect()
    }

    /// Places every pending read-only operation legal in the state.
    fn normalize(&mut self, c: &mut Cfg<P::State, B>) {
        for k in 0..self.pending_ro.len() {
            let (slot, op) = self.pending_ro[k];
            if c.bits.get(slot) {
                continue;
            }
            let o = &self.ops[op as usize];
            self.steps += 1;
            if self.spec.is_legal(&c.state, o.input, o.output) {
                c.bits.set(slot);
                if self.limits.record_paths {
                    let (p, s) = (c.path.clone(), c.state.clone());
                    c.path = self.extend(&p, op, &s);
                }
            }
        }
    }

    /// A configuration that some pending known operation can no longer follow.
    fn is_dead(&self, c: &Cfg<P::State, B>) -> bool {
        // Not when explaining: the failure should show at the operation
        // that really cannot be placed.
        if !self.versioned || !self.limits.prune {
            return false;
        }
        let Some(v) = self.spec.version_of(&c.state) else {
            return false;
        };
        self.pending.iter().any(|&(slot, op)| {
            let o = &self.ops[op as usize];
            o.output.is_some() && !c.bits.get(slot) && need(o.claim).is_some_and(|n| n < v)
        })
    }

    fn over_budget(&self, configs: usize) -> Option<String> {
        if let Some(max) = self.limits.max_steps {
            if self.steps > max {
                return Some(steps_exhausted(max));
            }
        }
        if let Some(d) = self.limits.deadline {
            if Instant::now() >= d {
                return Some("time budget exhausted".into());
            }
        }
        let per =
            std::mem::size_of::<Cfg<P::State, B>>() * 3 + B::empty(self.nslots).bytes() * 2 + 64;
        if configs.saturating_mul(per) > self.limits.memory {
            return Some(format!(
                "memory budget exhausted ({} configurations, about {} MB)",
                configs,
                configs * per / 1_000_000
            ));
        }
        if let Some(c) = self.limits.cancel {
            if c() {
                return Some(super::CANCELLED.into());
            }
        }
        None
    }

    /// Applies event `e` to the pending sets (moving the position forward).
    fn apply(&mut self, e: Event) {
        let op = e.op;
        let slot = self.slot_of[op as usize];
        let o = &self.ops[op as usize];
        self.is_pending[op as usize] = e.kind == 0;
        if e.kind == 0 {
            let at = self.pending.partition_point(|&(s, _)| s < slot);
            self.pending.insert(at, (slot, op));
            self.masks.set(slot, o.ret.is_none(), o.read_only);
            if o.read_only {
                let at = self.pending_ro.partition_point(|&(s, _)| s < slot);
                self.pending_ro.insert(at, (slot, op));
            }
        } else {
            self.pending.retain(|&(s, _)| s != slot);
            self.pending_ro.retain(|&(s, _)| s != slot);
            self.masks.clear(slot, false, o.read_only);
        }
    }

    /// Undoes event `e` (moving the position backward).
    fn undo(&mut self, e: Event) {
        let op = e.op;
        let slot = self.slot_of[op as usize];
        let o = &self.ops[op as usize];
        self.is_pending[op as usize] = e.kind == 1;
        if e.kind == 1 {
            let at = self.pending.partition_point(|&(s, _)| s < slot);
            self.pending.insert(at, (slot, op));
            if o.read_only {
                let at = self.pending_ro.partition_point(|&(s, _)| s < slot);
                self.pending_ro.insert(at, (slot, op));
            }
            self.masks.set(slot, false, o.read_only);
        } else {
            self.pending.retain(|&(s, _)| s != slot);
            self.pending_ro.retain(|&(s, _)| s != slot);
            self.masks.clear(slot, o.ret.is_none(), o.read_only);
        }
    }

    fn goto(&mut self, ev: &[Event], target: usize) {
        while self.pos < target {
            self.apply(ev[self.pos]);
            self.pos += 1;
        }
        while self.pos > target {
            self.pos -= 1;
            self.undo(ev[self.pos]);
        }
    }

    /// Places the read-only operation `op` (just called) where legal.
    fn place_new_read(&mut self, c: &mut Cfg<P::State, B>, op: u32) {
        let o = &self.ops[op as usize];
        if !(o.read_only && o.output.is_some()) {
            return;
        }
        let slot = self.slot_of[op as usize];
        self.steps += 1;
        if self.spec.is_legal(&c.state, o.input, o.output) {
            c.bits.set(slot);
            if self.limits.record_paths {
                let (p, s) = (c.path.clone(), c.state.clone());
                c.path = self.extend(&p, op, &s);
            }
        }
    }

    fn run(mut self, init: &P::State, ev: &[Event]) -> (Outcome<P::State>, u64) {
        let outcome = self.run_events(init, ev);
        if self.debug {
            eprintln!(
                "search of {} ops in {} steps (prune {}, stop {:?}): {:?}",
                self.ops.len(),
                self.steps,
                self.limits.prune,
                self.limits.stop_after,
                match &outcome {
                    Outcome::Ok => "ok".to_string(),
                    Outcome::Fail(f) => format!("fail at {}", f.op),
                    Outcome::GaveUp(r) => r.clone(),
                }
            );
        }
        (outcome, self.steps)
    }

    fn run_events(&mut self, init: &P::State, ev: &[Event]) -> Outcome<P::State> {
        let mut frontier: Vec<Cfg<P::State, B>> = vec![Cfg {
            state: init.clone(),
            bits: B::empty(self.nslots),
            path: None,
        }];
        let mut snapshot: Option<Snapshot<P::State>> = Some(Snapshot {
            event: usize::MAX,
            of: 1,
            state: init.clone(),
            placed: Vec::new(),
            drops_die_by: 0,
        });
        let mut recent: std::collections::VecDeque<Snapshot<P::State>> =
            std::collections::VecDeque::new();
        let mut returns = 0usize;
        let last = match self.limits.stop_after {
            Some(x) => ev.iter().rposition(|e| e.kind == 1 && e.op as usize == x),
            None => ev.iter().rposition(|e| e.kind == 1),
        };
        let Some(last_ret) = last else {
            return Outcome::Ok;
        };
        for (ei, &e) in ev[..=last_ret].iter().enumerate() {
            if ei & 63 == 0 {
                if let Some(r) = self.over_budget(frontier.len()) {
                    return Outcome::GaveUp(r);
                }
            }
            let x = e.op as usize;
            if e.kind == 0 {
                self.apply(e);
                self.pos = ei + 1;
                for c in frontier.iter_mut() {
                    self.place_new_read(c, e.op);
                    self.canonicalize(c);
                }
                continue;
            }
            // A return: every configuration must have placed x.
            let slot = self.slot_of[x];
            self.closing = ei;
            if self.reductions == Reductions::Later
                && (frontier.len() > REDUCTIONS_AFTER
                    || self.pending.len() - self.masks.n_unk > REDUCTIONS_AFTER)
            {
                self.enable_reductions(ev);
                for c in frontier.iter_mut() {
                    self.canonicalize(c);
                }
            }
            let next = match self.close(&frontier, slot, self.frontier_cap.saturating_mul(10)) {
                Ok(n) => n,
                Err(None) => return self.dfs(frontier, ev, ei, last_ret),
                Err(Some(r)) => return Outcome::GaveUp(r),
            };
            if next.is_empty() {
                if self.debug {
                    eprintln!("ev {ei} ret {x}: fail (prune {})", self.limits.prune);
                }
                // Those after the last single configuration first (smaller
                // windows), then the earlier ones: when the write that gave
                // what the failing operation needs was settled by then, an
                // earlier start still holds it, with a far smaller window
                // than the history's start.
                let (later, earlier): (Vec<_>, Vec<_>) = recent.into_iter().rev().partition(
                    |r| !matches!(&snapshot, Some(s) if s.event != usize::MAX && s.event >= r.event),
                );
                let recent = later.into_iter().chain(earlier).collect();
                return Outcome::Fail(Box::new(FailInfo {
                    op: x,
                    states: distinct_states(&frontier),
                    longest: path_vec(&self.best),
                    snapshot,
                    recent,
                    pruned: self.pruned || self.doom_deadline > ei,
                    version_pruned: self.pruned,
                    doom_needers: self.doom_needers_after(ei),
                    overwritten: false,
                    event: ei,
                }));
            }
            let mut next = next;
            if self.reductions == Reductions::Later && next.len() > REDUCTIONS_AFTER {
                self.enable_reductions(ev);
                for c in next.iter_mut() {
                    self.canonicalize(c);
                }
            }
            let next = self.drop_detours(next);
            if self.debug {
                eprintln!(
                    "ev {ei} ret {x} frontier {} -> {} pending {} steps {} ro {} unk {} states {}",
                    frontier.len(),
                    next.len(),
                    self.pending.len(),
                    self.steps,
                    self.masks.n_ro,
                    self.masks.n_unk,
                    distinct_states(&next).len()
                );
            }
            self.apply(e);
            self.pos = ei + 1;
            if next.len() > self.frontier_cap {
                return self.dfs(next, ev, ei + 1, last_ret);
            }
            frontier = next;
            returns += 1;
            if frontier.len() == 1 || returns & 7 == 0 {
                let c = &frontier[0];
                let snap = Snapshot {
                    event: ei,
                    of: frontier.len(),
                    state: c.state.clone(),
                    placed: self
                        .pending
                        .iter()
                        .filter(|(s, _)| c.bits.get(*s))
                        .map(|&(_, op)| op as usize)
                        .collect(),
                    drops_die_by: if self.pruned {
                        usize::MAX
                    } else {
                        self.doom_deadline
                    },
                };
                if returns & 7 == 0 {
                    recent.push_back(snap.clone());
                    if recent.len() > 32 {
                        recent.pop_front();
                    }
                }
                if frontier.len() == 1 {
                    snapshot = Some(snap);
                }
            }
        }
        Outcome::Ok
    }
}
