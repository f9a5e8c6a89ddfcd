//! Shrinking a failing scenario, keeping each smaller variant that still
//! fails with the same property, in passes that alternate while any helps:
//!
//! 1. parameters: greedily try the scenario's own reductions (fewer clients,
//!    operations, items, no occ liveness probe, ...) and the envelope's (no
//!    packet loss, disk faults, duplicated and reordered datagrams, a
//!    shorter active phase, clock faults; a shorter quiet phase when the
//!    property is prefix-closed, [`crate::registry::ScenarioDef::prefix_closed`]);
//! 2. the history: leave out individual client operations (the scenario's
//!    `skip` set, see [`crate::ops`]) and fault events, delta-debugging
//!    style: halves, then quarters, ... then one at a time; once with the
//!    units node by node, once in time order (operations and the fault
//!    events among them together). The operations
//!    kept start no earlier than they did in the failure (its `pace`), so
//!    that leaving one out does not pull the rest of its client's forward;
//! 3. at a local minimum of single units: pairs of neighbours (in time
//!    order, then node by node), then the passes above again;
//! 4. at a local minimum of pairs: a reduction of pass 1 that fails the
//!    same way but is no smaller itself, kept only if the history passes
//!    on it then end smaller (a smaller page needs fewer items to fill);
//! 5. then: a left-out operation put back and another of its node, drawn
//!    near it, left out in its place (numbers pass to the next call of a
//!    kind, so which one is left out matters);
//! 6. then: one unit left out whose absence keeps the failure but makes it
//!    larger, kept only if the history passes on it then end smaller (a
//!    race lost one way is often lost another, shorter way);
//! 7. last, at the end of each search, each kind of fault the size does
//!    not count (packet loss, disk faults, duplicated or reordered
//!    datagrams, clock skew) is taken away if the failure stays no larger.
//!
//! Every history candidate is bounded by what the run it was cut from
//! reached ([`crate::ops::Reached`]): a node whose last operation is left
//! out does not go on to operations that run never drew. A second search,
//! from the failure again, goes without that bound; a third, when the
//! first broken property is judged on the whole run and the failure broke
//! a prefix-closed one too, holds both: its candidates break the first
//! property first and the prefix-closed one anywhere, and may be cut
//! short after the violation as far as the first property allows (a check
//! that judges its premise is not judged on a run cut too short). When the
//! first property is prefix-closed, a search before all these stops the
//! run soon after the violation first, again while that keeps the failure
//! and makes it smaller, so that each of its candidates costs a fraction of
//! a whole run; when it ends with no operation and no fault event, no other
//! search runs. The smallest result of the searches without that stop, and
//! the stopped one's, are each searched again, each time with a budget of
//! its own, while that ends smaller (at most three times), and the smaller
//! is the shrink's: every candidate kept, and so the shrunk run, fails with
//! the property the failure was found by.
//!
//! A run is a function of its scenario, so a candidate met again in one
//! shrink (the later searches begin as the first did) is judged from a
//! memo of its first run instead of being run again; it counts against the
//! budget all the same, so the shrink ends where it would without the
//! memo, only sooner.
//!
//! Every candidate carries an explicit fault plan and skip set, so removing
//! a fault event or an operation never reshuffles the others, and the
//! network and disk draw each datagram's loss, latency and faults and each
//! record's faults from a stream
//! keyed by its identity, so they stay on the datagrams and records that
//! remain (see `bridge::NetworkAdapter`, `overcast_sim::disk`). The whole
//! shrink is bounded by a number of candidate runs per search.

mod reductions;
mod units;

pub use reductions::{candidate, candidate_cut, Cuttable, EnvelopeReduction, ENVELOPE_REDUCTIONS};
use reductions::{reduction_name, FAULT_KINDS, STOP_SOONER};
use units::{ordered_units, Order};
pub use units::{removal_step, with_units, Unit};

use crate::registry::DynScenario;
use crate::run::{resolved, run_isolated_with, RunResult};
use crate::scenario::Scenario;
use overcast_sim::check::PropertyId;
use std::collections::BTreeMap;

/// The candidate runs a shrink may spend unless told otherwise.
pub const DEFAULT_MAX_TRIES: usize = 500;

/// The result of a shrink.
#[derive(Debug)]
pub struct Shrunk {
    /// The smallest scenario found that still fails the same way.
    pub scenario: Scenario,
    /// Its run.
    pub run: RunResult,
    /// Candidates tried.
    pub tried: usize,
    /// Candidates kept.
    pub kept: usize,
    /// Workload operations of the failing run before shrinking (see [`size`]).
    pub ops_before: usize,
    /// The property the failure was found by, which the shrunk run breaks
    /// first too.
    pub property: PropertyId,
    /// Candidate runs made: fewer than `tried`, since a candidate met again
    /// is judged from its first run ([`Memo`]).
    pub ran: usize,
}

/// The most searches from the smallest failure a shrink runs, one after
/// another while each ends smaller.
const POLISH_ROUNDS: usize = 3;

/// The candidates a sideways step ([`Search::sideways`]) may spend on the
/// history passes before it is given up.
const SIDEWAYS_TRIES: usize = 60;

/// How many times more a sideways step applies its reduction (its first
/// candidate) before the history passes run on it.
const SIDEWAYS_REPEATS: usize = 3;

/// How many of a node's operations, nearest in time to one left out, a
/// swap ([`Search::swap_left_out`]) tries leaving out in its place.
const SWAP_NEIGHBOURS: usize = 3;

/// What a search needs to know of a candidate's run to judge it: the
/// property it broke first, every property it broke, its size and its
/// trace. Kept for every candidate run ([`Memo`]); the whole run is kept
/// only for the candidates taken.
#[derive(Clone, Debug)]
struct Glance {
    first: Option<PropertyId>,
    broken: Vec<PropertyId>,
    size: (usize, usize),
    trace_hash: u64,
}

impl Glance {
    fn of(run: &RunResult) -> Glance {
        Glance {
            first: run.first_property(),
            broken: run.violations().iter().map(|v| v.property).collect(),
            size: size(run),
            trace_hash: run.trace_hash,
        }
    }
}

/// The glances of every candidate run so far in one shrink, by the
/// candidate's hash: a run is a function of its scenario, and the searches
/// of a shrink take the same first steps and meet the same candidates
/// again (the second and third searches start from the same failure as the
/// first), so a candidate met before is judged without running it. It
/// still counts against the search's budget, so a shrink ends where it
/// would without the memo, only sooner. The last run is kept whole, for
/// the caller that takes it.
#[derive(Default)]
struct Memo {
    glances: BTreeMap<u64, Glance>,
    last: Option<(u64, RunResult)>,
    /// Runs made.
    ran: usize,
}

/// How a shrink's candidates are run: each search's budget, and the memo
/// of every run so far.
struct Runs {
    max_tries: usize,
    memo: Memo,
}

/// The key of candidate `c` in the [`Memo`]: a hash of all it says.
fn memo_key(c: &Scenario) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(c)
        .expect("scenarios serialise")
        .hash(&mut h);
    h.finish()
}

/// The size a shrink minimises: the workload's operations first (a check's
/// own calls, such as occ's liveness probe, are not counted: a failure that
/// needs the probe keeps it whole), then fault events.
pub fn size(r: &RunResult) -> (usize, usize) {
    let events = r.scenario.plan.as_ref().map_or(0, |p| p.events.len());
    (r.op_count().client, events)
}

/// The state of one shrink: the smallest failure so far and the budget.
struct Search<'p, F> {
    def: &'static dyn DynScenario,
    property: PropertyId,
    /// A prefix-closed property the failure broke too, held by the third
    /// search: its candidates break it as well, anywhere among their
    /// violations, and may be cut short after it ([`Search::cut`]).
    held: Option<PropertyId>,
    best_s: Scenario,
    best: RunResult,
    tried: usize,
    kept: usize,
    max_tries: usize,
    progress: &'p mut F,
    /// The failure's quiet phase before shrinking, ms, and the properties
    /// it broke: a candidate with a shorter one, or with operations of it
    /// left out, may break no other property that is not prefix-closed (a
    /// check that needs the whole quiet phase would fail for want of it).
    quiet_ms: u64,
    broken: Vec<PropertyId>,
    /// While a sideways step is tried ([`Search::sideways`]): the steps kept
    /// since, told to `progress` only if the step ends smaller.
    trial: Option<Vec<String>>,
    /// The history passes' candidates leave the bound on what each
    /// incarnation reached ([`crate::ops::Reached`]) off.
    unbounded: bool,
    /// The runs of the whole shrink so far.
    memo: &'p mut Memo,
}

impl<F: FnMut(&str, &RunResult)> Search<'_, F> {
    /// Runs `c`, counting it against the budget, or recalls its run from
    /// the [`Memo`] (counted the same); `None` when the budget is spent
    /// (nothing was run).
    fn run(&mut self, c: &Scenario) -> Option<Glance> {
        if self.tried >= self.max_tries {
            return None;
        }
        self.tried += 1;
        let key = memo_key(c);
        if let Some(g) = self.memo.glances.get(&key) {
            return Some(g.clone());
        }
        let run = run_isolated_with(self.def, c);
        self.memo.ran += 1;
        let g = Glance::of(&run);
        self.memo.glances.insert(key, g.clone());
        self.memo.last = Some((key, run));
        Some(g)
    }

    /// The whole run of `c`, a candidate [`Search::run`] judged: the last
    /// one run, or run again (a run is a function of its scenario).
    fn result(&mut self, c: &Scenario) -> RunResult {
        let key = memo_key(c);
        match self.memo.last.take() {
            Some((k, run)) if k == key => run,
            _ => {
                self.memo.ran += 1;
                run_isolated_with(self.def, c)
            }
        }
    }

    /// Runs `c`; keeps it when it fails with the same property and is
    /// smaller. `None` when the budget is spent (nothing was run).
    fn try_candidate(&mut self, c: Scenario, step: &str) -> Option<bool> {
        let glance = self.run(&c)?;
        let better = self.same_failure(&c, &glance) && glance.size < size(&self.best);
        if better {
            let run = self.result(&c);
            self.kept += 1;
            match self.trial.as_mut() {
                Some(steps) => steps.push(step.to_string()),
                None => (self.progress)(step, &run),
            }
            self.best = run;
            self.best_s = c;
        }
        Some(better)
    }

    /// What the envelope's reductions may cut from this search's candidates:
    /// what the property allows, or, with a held property, what both do,
    /// and the run after the violation when the held one is prefix-closed
    /// and the first lets its quiet phase be cut (a check that judges its
    /// premise is not judged on a run stopped too soon).
    fn cut(&self) -> Cuttable {
        let own = Cuttable::of(self.def, self.property);
        match self.held {
            None => own,
            Some(h) => {
                let held = Cuttable::of(self.def, h);
                Cuttable {
                    quiet_phase: own.quiet_phase && held.quiet_phase,
                    after_violation: own.quiet_phase && held.after_violation,
                }
            }
        }
    }

    /// Whether `run`, of candidate `c`, fails as the failure does: with the
    /// same property first, breaking the held property too if there is one,
    /// and, when `c` cuts the quiet phase short or
    /// leaves out operations of it, breaking no other property that needs
    /// the whole quiet phase.
    fn same_failure(&self, c: &Scenario, run: &Glance) -> bool {
        let quiet_cut = c.quiet_ms < self.quiet_ms
            || c.stop_ms.is_some()
            || c.skip
                .values()
                .flatten()
                .any(|op| op & crate::ops::QUIET_OP != 0);
        run.first == Some(self.property)
            && self.held.is_none_or(|h| run.broken.contains(&h))
            && (!quiet_cut
                || run
                    .broken
                    .iter()
                    .all(|p| self.def.quiet_phase_cuttable(*p) || self.broken.contains(p)))
    }

    /// At a local minimum: a reduction of the parameters or the envelope
    /// that fails the same way but is no smaller itself (a smaller page
    /// makes a reader pull more pages, a fault left out makes a retry go)
    /// may let the history passes leave out more (fewer items fill a
    /// page). Each such reduction is taken for a while, the history passes
    /// run on it within [`SIDEWAYS_TRIES`] candidates, and it is kept only
    /// if the failure ends smaller than the minimum; else the minimum is
    /// restored. True if one was kept.
    fn sideways(&mut self) -> bool {
        let reductions = self.def.reduction_names().len() + ENVELOPE_REDUCTIONS.len();
        let floor = size(&self.best);
        for r in 0..reductions {
            let mut i = 0;
            while let Some(c) = candidate_cut(self.def, &self.best_s, self.cut(), r, i) {
                i += 1;
                let Some(glance) = self.run(&c) else {
                    return false;
                };
                // A reduction that changed nothing the run did (no fault of
                // the kind it removes came about) opens no new way.
                if !self.same_failure(&c, &glance)
                    || glance.size > floor
                    || glance.trace_hash == self.best.trace_hash
                {
                    continue;
                }
                let mut run = self.result(&c);
                // As far as it goes: a page of one item, not of three.
                let mut c = c;
                let mut times = 1;
                for _ in 0..SIDEWAYS_REPEATS {
                    let Some(further) = candidate_cut(self.def, &c, self.cut(), r, 0) else {
                        break;
                    };
                    let Some(next) = self.run(&further) else {
                        break;
                    };
                    if !self.same_failure(&further, &next) || next.size > floor {
                        break;
                    }
                    run = self.result(&further);
                    c = further;
                    times += 1;
                }
                let name = match times {
                    1 => reduction_name(self.def, r).to_string(),
                    n => format!("{} ({n} times)", reduction_name(self.def, r)),
                };
                if self.trial(c, run, floor, name) {
                    return true;
                }
            }
        }
        false
    }

    /// Takes `c` (whose `run` fails as the minimum does but is no smaller
    /// than `floor`) for a while: the history passes run on it within
    /// [`SIDEWAYS_TRIES`] candidates, and it is kept, with what they left
    /// out, only if the failure ends smaller than `floor`; else the minimum
    /// is restored. `name` is the step that led to `c`. True if kept.
    fn trial(&mut self, c: Scenario, run: RunResult, floor: (usize, usize), name: String) -> bool {
        let kept_before = self.kept;
        let max_tries = self.max_tries;
        self.max_tries = max_tries.min(self.tried + SIDEWAYS_TRIES);
        let best = std::mem::replace(&mut self.best, run);
        let best_s = std::mem::replace(&mut self.best_s, c);
        self.trial = Some(Vec::new());
        self.remove_subjects();
        self.remove_history(Order::ByTime);
        self.remove_history(Order::ByNode);
        let steps = self.trial.take().unwrap_or_default();
        self.max_tries = max_tries;
        if size(&self.best) < floor {
            self.kept += 1;
            let step = if steps.is_empty() {
                name
            } else {
                format!("{name}, then {}", steps.join(", "))
            };
            (self.progress)(&step, &self.best);
            return true;
        }
        self.best = best;
        self.best_s = best_s;
        self.kept = kept_before;
        false
    }

    /// At a local minimum of every other pass: leave out one unit whose
    /// absence keeps the failure but makes it larger (a feed host whose
    /// renewal is left out takes another path through its rounds, and the
    /// race it loses comes about another way), and take it for a while as
    /// [`Search::trial`] does: kept only if the failure then ends smaller.
    /// True if one was kept.
    fn leave_out_uphill(&mut self) -> bool {
        let floor = size(&self.best);
        let (base, units) = self.history_base(Order::ByTime);
        for u in 0..units.len() {
            let rest: Vec<usize> = (0..units.len()).filter(|k| *k != u).collect();
            let c = with_units(&base, &units, &rest);
            let Some(glance) = self.run(&c) else {
                return false;
            };
            if !self.same_failure(&c, &glance) || glance.trace_hash == self.best.trace_hash {
                continue;
            }
            let run = self.result(&c);
            let step = removal_step(std::iter::once(&units[u]));
            if self.trial(c, run, floor, step) {
                return true;
            }
        }
        false
    }

    /// At the end: each kind of fault the size does not count (a rate or
    /// the clocks, [`FAULT_KINDS`]) is taken away if the failure stays
    /// without it and is no larger, so the story shows the faults it
    /// needs. Given a run per kind beyond the budget.
    fn tidy(&mut self) {
        let own = self.def.reduction_names().len();
        self.max_tries = self.max_tries.max(self.tried) + FAULT_KINDS.len();
        for (k, (name, _)) in ENVELOPE_REDUCTIONS.iter().enumerate() {
            if !FAULT_KINDS.contains(name) {
                continue;
            }
            let Some(c) = candidate_cut(self.def, &self.best_s, self.cut(), own + k, 0) else {
                continue;
            };
            let Some(glance) = self.run(&c) else {
                return;
            };
            if self.same_failure(&c, &glance) && glance.size <= size(&self.best) {
                let run = self.result(&c);
                self.kept += 1;
                (self.progress)(name, &run);
                self.best = run;
                self.best_s = c;
            }
        }
    }

    /// At a local minimum of removals: put back one left-out operation of
    /// a node and leave out, in its place, one of the operations that node
    /// drew nearest it. Operations are numbered by kind and place (the
    /// `n`-th call of a kind, [`crate::ops`]), so leaving out one hands its
    /// number to the next call of its kind: a feed host whose first read is
    /// left out releases its lease, and the read that later meets a split
    /// becomes its first. Leaving out an earlier call instead (the listing
    /// that led to the lease) may shorten the story in a way no removal
    /// alone reaches. A swap is kept only when the failure ends smaller.
    /// True if one was kept.
    fn swap_left_out(&mut self) -> bool {
        let mut swaps: Vec<(String, usize, usize)> = Vec::new();
        for (node, left_out) in &self.best_s.skip {
            let Some(drawn) = self.best.drawn.get(node) else {
                continue;
            };
            for s in left_out {
                let Some(at) = drawn.get(s) else { continue };
                let mut near: Vec<(u64, usize)> = drawn
                    .iter()
                    .filter(|(t, _)| !left_out.contains(t))
                    .map(|(t, t_at)| (t_at.abs_diff(*at), *t))
                    .collect();
                near.sort_unstable();
                swaps.extend(
                    near.into_iter()
                        .take(SWAP_NEIGHBOURS)
                        .map(|(_, t)| (node.clone(), *s, t)),
                );
            }
        }
        let kept_before = self.kept;
        let pace = crate::ops::pace_of(&self.best.drawn);
        let reached = crate::ops::reached_of(&self.best.drawn);
        for (node, put_back, leave_out) in swaps {
            // A swap kept earlier may have put this one's operations back or
            // left them out already.
            let skip = self.best_s.skip.get(&node);
            if !skip.is_some_and(|k| k.contains(&put_back) && !k.contains(&leave_out)) {
                continue;
            }
            let mut c = self.best_s.clone();
            c.pace = pace.clone();
            c.reached = reached.clone();
            let left = c.skip.entry(node).or_default();
            left.remove(&put_back);
            left.insert(leave_out);
            if self
                .try_candidate(c, "leave out another operation in place of one left out")
                .is_none()
            {
                break;
            }
        }
        self.kept > kept_before
    }

    /// Before pass 1, for a failure that may be cut short after its
    /// violation: the run stopped sooner, again while that keeps the
    /// failure and makes it smaller, so that it ends soon after the
    /// violation before any other reduction moves it. Every later
    /// candidate inherits the stop, and a run stopped early is cheap (a
    /// replica set's heartbeats fill the whole simulated time, however few
    /// operations are left). True if a stop was kept.
    fn stop_sooner(&mut self) -> bool {
        if !self.cut().after_violation {
            return false;
        }
        let Some(k) = ENVELOPE_REDUCTIONS
            .iter()
            .position(|(name, _)| *name == STOP_SOONER)
        else {
            return false;
        };
        let r = self.def.reduction_names().len() + k;
        let kept_before = self.kept;
        let mut i = 0;
        while let Some(c) = candidate_cut(self.def, &self.best_s, self.cut(), r, i) {
            match self.try_candidate(c, STOP_SOONER) {
                None => break,
                Some(true) => i = 0,
                Some(false) => i += 1,
            }
        }
        self.kept > kept_before
    }

    /// Pass 1: the scenario's reductions, then the envelope's, restarting
    /// from the most powerful after each one kept. True if one was kept.
    fn reduce_parameters(&mut self) -> bool {
        let reductions = self.def.reduction_names().len() + ENVELOPE_REDUCTIONS.len();
        let kept_before = self.kept;
        'outer: loop {
            for r in 0..reductions {
                let mut i = 0;
                while let Some(c) = candidate_cut(self.def, &self.best_s, self.cut(), r, i) {
                    match self.try_candidate(c, reduction_name(self.def, r)) {
                        None => break 'outer,
                        // Restart from the most powerful reduction on the smaller scenario.
                        Some(true) => continue 'outer,
                        Some(false) => i += 1,
                    }
                }
            }
            break;
        }
        self.kept > kept_before
    }

    /// The current failure's scenario, its operations paced as they started
    /// in it (so those kept start when they did), and the units the history
    /// passes may leave out, in `order`.
    fn history_base(&self, order: Order) -> (Scenario, Vec<Unit>) {
        let mut base = self.best_s.clone();
        base.pace = crate::ops::pace_of(&self.best.drawn);
        base.reached = if self.unbounded {
            crate::ops::Reached::new()
        } else {
            crate::ops::reached_of(&self.best.drawn)
        };
        let quiet_ok = self.cut().quiet_phase;
        let units = ordered_units(&self.best, &base, quiet_ok, order);
        (base, units)
    }

    /// Pass 2a, before the chunks: the operations about one subject (an
    /// item, a document: [`crate::ops::about`]) at once, since a failure is
    /// often about one of them and the others only add to it. First all but
    /// one subject's (trying the subjects with most operations first), then,
    /// one subject at a time, that subject's. Operations about nothing in
    /// particular, and fault events, stay. True if a candidate was kept.
    fn remove_subjects(&mut self) -> bool {
        let (base, units) = self.history_base(Order::ByNode);
        let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (u, unit) in units.iter().enumerate() {
            if let Unit::Op(node, i) = unit {
                if let Some(subject) = self.best.subjects.get(node).and_then(|m| m.get(i)) {
                    groups.entry(subject.as_str()).or_default().push(u);
                }
            }
        }
        if groups.len() < 2 {
            return false;
        }
        let mut order: Vec<(&str, Vec<usize>)> = groups.into_iter().collect();
        order.sort_by_key(|(_, g)| std::cmp::Reverse(g.len()));
        let order: Vec<(String, Vec<usize>)> =
            order.into_iter().map(|(s, g)| (s.to_string(), g)).collect();
        let mut about = vec![None; units.len()];
        for (k, (_, g)) in order.iter().enumerate() {
            for u in g {
                about[*u] = Some(k);
            }
        }
        let kept_before = self.kept;
        for (k, (subject, _)) in order.iter().enumerate() {
            let live: Vec<usize> = (0..units.len())
                .filter(|u| about[*u].is_none_or(|a| a == k))
                .collect();
            let step = format!("keep only the operations about {subject}");
            match self.try_candidate(with_units(&base, &units, &live), &step) {
                None => return self.kept > kept_before,
                Some(true) => return true,
                Some(false) => {}
            }
        }
        let mut live: Vec<usize> = (0..units.len()).collect();
        for (k, (subject, _)) in order.iter().enumerate() {
            let rest: Vec<usize> = live
                .iter()
                .copied()
                .filter(|u| about[*u] != Some(k))
                .collect();
            let step = format!("leave out the operations about {subject}");
            match self.try_candidate(with_units(&base, &units, &rest), &step) {
                None => break,
                Some(true) => live = rest,
                Some(false) => {}
            }
        }
        self.kept > kept_before
    }

    /// Pass 2: leave out operations and fault events of the current failure,
    /// in chunks of half the remaining ones, then quarters, ..., then one by
    /// one until none can go, the units in `order`. True if one was left out.
    fn remove_history(&mut self, order: Order) -> bool {
        let (base, units) = self.history_base(order);
        let mut live: Vec<usize> = (0..units.len()).collect();
        let kept_before = self.kept;
        let mut chunk = (live.len() / 2).max(1);
        while !live.is_empty() {
            let mut removed = false;
            let mut i = 0;
            while i < live.len() {
                let end = (i + chunk).min(live.len());
                let rest: Vec<usize> = live[..i].iter().chain(&live[end..]).copied().collect();
                let step = removal_step(live[i..end].iter().map(|u| &units[*u]));
                match self.try_candidate(with_units(&base, &units, &rest), &step) {
                    None => return self.kept > kept_before,
                    Some(true) => {
                        live = rest;
                        removed = true;
                    }
                    Some(false) => i = end,
                }
            }
            if chunk == 1 && !removed {
                break;
            }
            chunk = (chunk / 2).max(1);
        }
        self.kept > kept_before
    }

    /// Pass 3, once single units no longer go: leave out two neighbours at
    /// once (in `order`), for what only goes together: a write and the
    /// read that needs it, a crash and the operation that meets it. True if
    /// a pair was left out.
    fn remove_pairs(&mut self, order: Order) -> bool {
        let (base, units) = self.history_base(order);
        let mut live: Vec<usize> = (0..units.len()).collect();
        let kept_before = self.kept;
        let mut i = 0;
        while i + 1 < live.len() {
            let rest: Vec<usize> = live[..i].iter().chain(&live[i + 2..]).copied().collect();
            let step = removal_step(live[i..i + 2].iter().map(|u| &units[*u]));
            match self.try_candidate(with_units(&base, &units, &rest), &step) {
                None => break,
                Some(true) => live = rest,
                Some(false) => i += 1,
            }
        }
        self.kept > kept_before
    }
}

/// Shrinks `s`, which must fail, keeping the first violated property (and,
/// when that one needs the whole run, trying too to keep another it
/// violated that can be cut short, if that ends smaller): parameters, then the history, again while
/// the parameters still shrink, at most `max_tries` candidate runs per
/// search. `progress` is told about every
/// kept step. Returns `None` if `s` passes.
pub fn shrink(
    def: &'static dyn DynScenario,
    s: &Scenario,
    max_tries: usize,
    mut progress: impl FnMut(&str, &RunResult),
) -> Option<Shrunk> {
    let start = resolved(def, s).ok()?;
    let mut runs = Runs {
        max_tries,
        memo: Memo::default(),
    };
    let first = run_isolated_with(def, &start);
    let property = first.first_property()?;
    let ops_before = first.op_count().client;
    let broken: Vec<PropertyId> = first.violations().iter().map(|v| v.property).collect();
    let target = Target {
        property,
        held: None,
        broken: broken.clone(),
        quiet_ms: start.quiet_ms,
    };
    // A failure that may be cut short after its violation is searched first
    // with its run stopped soon after it ([`Search::stop_sooner`]): each
    // candidate of that search is cheap (a replica set's heartbeats fill the
    // whole simulated time, however few operations are left), and a failure
    // it leaves with no operation and no fault event needs no other search.
    let stopped = Cuttable::of(def, property).after_violation.then(|| {
        let mut tell =
            |step: &str, run: &RunResult| progress(&format!("search stopped soon: {step}"), run);
        let again = run_isolated_with(def, &start);
        search(
            def,
            start.clone(),
            again,
            target.clone(),
            Way::StoppedSoon,
            &mut runs,
            &mut tell,
        )
    });
    let mut searches: Vec<Searched> = Vec::new();
    if stopped.as_ref().is_none_or(|s| size(&s.best) != SMALLEST) {
        searches.push(search(
            def,
            start.clone(),
            first,
            target.clone(),
            Way::Bounded,
            &mut runs,
            &mut progress,
        ));
        // A second search from the failure, its history candidates free to
        // go past what each node reached ([`crate::ops::Reached`]): the
        // greedy passes reach different minima along the two ways, and
        // either may be the smaller (a feed writer's write drawn past the
        // reach can let two others go). Its run is the failure's again (a
        // replay is exact).
        let mut tell =
            |step: &str, run: &RunResult| progress(&format!("second search: {step}"), run);
        let again = run_isolated_with(def, &start);
        searches.push(search(
            def,
            start.clone(),
            again,
            target.clone(),
            Way::Unbounded,
            &mut runs,
            &mut tell,
        ));
        // A failure that broke a property judged on the whole run (CF3: an
        // item never delivered) and one judged on what came before its
        // violation (CF4: a checkpoint before its delegate returned) is
        // often the same slip told twice, and the second story can be cut
        // short after its violation: a third search holds both (the first
        // still first).
        let cut_short = broken
            .iter()
            .copied()
            .find(|p| *p != property && def.prefix_closed(*p));
        if let Some(other) = cut_short.filter(|_| !def.prefix_closed(property)) {
            let mut tell = |step: &str, run: &RunResult| {
                progress(&format!("search holding {other}: {step}"), run)
            };
            let again = run_isolated_with(def, &start);
            let held = Target {
                held: Some(other),
                ..target
            };
            searches.push(search(
                def,
                start.clone(),
                again,
                held,
                Way::Bounded,
                &mut runs,
                &mut tell,
            ));
        }
    }
    // The smallest of the searches without the stop, and the stopped one,
    // are each searched again from their smallest failure ([`polish`]),
    // and the smaller is kept (on a tie, the one without the stop): what
    // the searches without it find, they find as they would alone.
    let tried_before: usize = searches.iter().map(|s| s.tried).sum();
    let others = searches
        .into_iter()
        .reduce(|a, b| if size(&b.best) < size(&a.best) { b } else { a })
        .map(|mut s| {
            s.tried = tried_before;
            let mut tell =
                |step: &str, run: &RunResult| progress(&format!("from the smallest: {step}"), run);
            polish(def, s, &mut runs, &mut tell)
        });
    let stopped = stopped.map(|s| {
        let mut tell = |step: &str, run: &RunResult| {
            progress(&format!("from the smallest stopped soon: {step}"), run)
        };
        polish(def, s, &mut runs, &mut tell)
    });
    let searched = match (others, stopped) {
        (Some(a), Some(b)) => {
            let both = a.tried + b.tried;
            let mut smaller = if size(&b.best) < size(&a.best) { b } else { a };
            smaller.tried = both;
            smaller
        }
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => unreachable!("the bounded search runs unless the stopped one ran"),
    };
    let Searched {
        best_s: mut scenario,
        mut best,
        tried,
        kept,
        ..
    } = searched;
    // A skipped operation never waits: its start time says nothing.
    for (node, ops) in &scenario.skip {
        if let Some(p) = scenario.pace.get_mut(node) {
            p.retain(|op, _| !ops.contains(op));
        }
    }
    scenario.pace.retain(|_, p| !p.is_empty());
    best.scenario.pace = scenario.pace.clone();
    Some(Shrunk {
        scenario,
        run: best,
        tried,
        kept,
        ops_before,
        property,
        ran: runs.memo.ran,
    })
}

/// `searched` searched again from its smallest failure, each time with a
/// budget of its own, while that ends smaller (at most [`POLISH_ROUNDS`]
/// times): the searches from the failure may spend theirs on its long runs
/// before the last passes (the uphill step) had their turn, a search from a
/// smaller start takes other greedy paths, and the runs of a small failure
/// are short. The result counts the candidates of every round, and of
/// `searched`, tried and kept.
fn polish<F: FnMut(&str, &RunResult)>(
    def: &'static dyn DynScenario,
    mut searched: Searched,
    runs: &mut Runs,
    progress: &mut F,
) -> Searched {
    let (mut tried, mut kept) = (0, 0);
    for _ in 0..POLISH_ROUNDS {
        let floor = size(&searched.best);
        if floor == SMALLEST {
            break;
        }
        let Searched {
            best_s,
            best,
            target,
            tried: t,
            kept: k,
        } = searched;
        tried += t;
        kept += k;
        searched = search(def, best_s, best, target, Way::Bounded, runs, progress);
        if size(&searched.best) >= floor {
            break;
        }
    }
    searched.tried += tried;
    searched.kept += kept;
    searched
}

/// One greedy search from `best_s`, whose run `first` fails as `target`
/// says: the passes of the module's doc, in turn, until none helps or
/// `max_tries` candidates are spent, the `way` it is told.
fn search<F: FnMut(&str, &RunResult)>(
    def: &'static dyn DynScenario,
    best_s: Scenario,
    first: RunResult,
    target: Target,
    way: Way,
    runs: &mut Runs,
    progress: &mut F,
) -> Searched {
    let mut search = Search {
        def,
        property: target.property,
        held: target.held,
        best_s,
        best: first,
        tried: 0,
        kept: 0,
        max_tries: runs.max_tries,
        progress,
        quiet_ms: target.quiet_ms,
        broken: target.broken.clone(),
        trial: None,
        unbounded: way == Way::Unbounded,
        memo: &mut runs.memo,
    };
    if way == Way::StoppedSoon {
        search.stop_sooner();
    }
    search.reduce_parameters();
    // For a prefix-closed failure the cut in time order goes first, and the
    // parameters are tried again after it: its early candidates leave out
    // whole stretches after the violation, late fault events with them,
    // after which the quiet phase can be cut short.
    let prefix_closed = def.quiet_phase_cuttable(search.property);
    loop {
        search.remove_subjects();
        // Two cuts of the same units: one may leave out what the other cannot
        // (a whole client; a stretch of time with its faults).
        let (by_time, by_node) = if prefix_closed {
            let by_time = search.remove_history(Order::ByTime);
            if by_time {
                search.reduce_parameters();
            }
            (by_time, search.remove_history(Order::ByNode))
        } else {
            let by_node = search.remove_history(Order::ByNode);
            (search.remove_history(Order::ByTime), by_node)
        };
        if (by_node || by_time) && search.reduce_parameters() {
            continue;
        }
        // A local minimum for single units: pairs of neighbours, then the
        // passes again on what is left.
        if !(search.remove_pairs(Order::ByTime)
            || search.remove_pairs(Order::ByNode)
            || search.sideways()
            || search.swap_left_out()
            || search.leave_out_uphill())
        {
            break;
        }
        search.reduce_parameters();
    }
    search.tidy();
    Searched {
        best_s: search.best_s,
        best: search.best,
        target,
        tried: search.tried,
        kept: search.kept,
    }
}

/// How a search goes about its history candidates.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Way {
    /// Bounded by what each node reached in the run they were cut from.
    Bounded,
    /// Free to go past what each node reached.
    Unbounded,
    /// Bounded, after the run is stopped soon after its violation, again
    /// while that keeps the failure and makes it smaller.
    StoppedSoon,
}

/// The size no failure is smaller than: no operation, no fault event.
const SMALLEST: (usize, usize) = (0, 0);

/// What a search holds its candidates to: the property they must break
/// first, a prefix-closed one they must break too (the third search's), the
/// properties the failure broke, and the failure's quiet phase
/// (ms) before shrinking.
#[derive(Clone)]
struct Target {
    property: PropertyId,
    held: Option<PropertyId>,
    broken: Vec<PropertyId>,
    quiet_ms: u64,
}

/// Where one search ended: its smallest failure and run, what it held
/// them to, and the candidates it tried and kept.
struct Searched {
    best_s: Scenario,
    best: RunResult,
    target: Target,
    tried: usize,
    kept: usize,
}
