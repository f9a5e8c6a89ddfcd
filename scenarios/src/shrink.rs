//! Shrinking a failing scenario: greedily try smaller variants (fewer
//! clients, operations, items, fault events, fault kinds: packet loss, disk
//! faults, duplicated and reordered datagrams, clock faults) and keep each one
//! that still fails with the same property, until no reduction helps.
//!
//! Every candidate carries an explicit fault plan, so removing a fault event
//! never reshuffles the others.

use crate::registry::DynScenario;
use crate::run::{resolved, run_isolated_with, RunResult};
use crate::scenario::Scenario;

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
}

/// A reduction of the envelope (faults), common to every scenario: the
/// `i`-th candidate, or `None`.
type EnvelopeReduction = fn(&Scenario, usize) -> Option<Scenario>;

/// The envelope's reductions, tried after the scenario's own.
const ENVELOPE_REDUCTIONS: &[(&str, EnvelopeReduction)] = &[
    ("drop a fault event", |s, i| {
        let plan = s.plan.as_ref()?;
        (i < plan.events.len()).then(|| {
            let mut t = s.clone();
            t.plan.as_mut().expect("checked").events.remove(i);
            t
        })
    }),
    ("no packet loss", |s, i| {
        let plan = s.plan.as_ref()?;
        (i == 0 && plan.packet_loss > 0.0).then(|| {
            let mut t = s.clone();
            t.plan.as_mut().expect("checked").packet_loss = 0.0;
            t
        })
    }),
    ("no disk faults", |s, i| {
        let plan = s.plan.as_ref()?;
        (i == 0 && !plan.storage.is_off()).then(|| {
            let mut t = s.clone();
            t.plan.as_mut().expect("checked").storage = Default::default();
            t
        })
    }),
    ("no duplicated or reordered datagrams", |s, i| {
        let plan = s.plan.as_ref()?;
        (i == 0 && plan.network != Default::default()).then(|| {
            let mut t = s.clone();
            t.plan.as_mut().expect("checked").network = Default::default();
            t
        })
    }),
    ("perfect clocks", |s, i| {
        let plan = s.plan.as_ref()?;
        (i == 0 && !plan.clocks.is_empty()).then(|| {
            let mut t = s.clone();
            t.plan.as_mut().expect("checked").clocks.clear();
            t
        })
    }),
];

/// The `i`-th candidate of reduction `r` (the scenario's own first, then the envelope's).
fn candidate(def: &dyn DynScenario, s: &Scenario, r: usize, i: usize) -> Option<Scenario> {
    let own = def.reduction_names().len();
    if r < own {
        let params = def.reduce(&s.params, r, i)?;
        Some(Scenario {
            params,
            ..s.clone()
        })
    } else {
        (ENVELOPE_REDUCTIONS.get(r - own)?.1)(s, i)
    }
}

fn reduction_name(def: &dyn DynScenario, r: usize) -> &'static str {
    let names = def.reduction_names();
    names
        .get(r)
        .copied()
        .unwrap_or_else(|| ENVELOPE_REDUCTIONS[r - names.len()].0)
}

/// The size a shrink minimises: operations first, then fault events.
pub fn size(r: &RunResult) -> (usize, usize) {
    let events = r.scenario.plan.as_ref().map_or(0, |p| p.events.len());
    (r.history.ops(), events)
}

/// Shrinks `s`, which must fail, keeping the first violated property.
/// `progress` is told about every kept step. Returns `None` if `s` passes.
pub fn shrink(
    def: &'static dyn DynScenario,
    s: &Scenario,
    max_tries: usize,
    mut progress: impl FnMut(&str, &RunResult),
) -> Option<Shrunk> {
    let mut best_s = resolved(def, s).ok()?;
    let first = run_isolated_with(def, &best_s);
    let property = first.first_property()?;
    let mut best = first;
    let reductions = def.reduction_names().len() + ENVELOPE_REDUCTIONS.len();
    let (mut tried, mut kept) = (0, 0);
    'outer: loop {
        for r in 0..reductions {
            let mut i = 0;
            while let Some(c) = candidate(def, &best_s, r, i) {
                if tried >= max_tries {
                    break 'outer;
                }
                tried += 1;
                let run = run_isolated_with(def, &c);
                if run.first_property().as_ref() == Some(&property) && size(&run) < size(&best) {
                    kept += 1;
                    progress(reduction_name(def, r), &run);
                    best = run;
                    best_s = c;
                    // Restart from the most powerful reduction on the smaller scenario.
                    continue 'outer;
                }
                i += 1;
            }
        }
        break;
    }
    Some(Shrunk {
        scenario: best_s,
        run: best,
        tried,
        kept,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::find;

    #[test]
    fn a_seeded_bug_shrinks_to_a_smaller_failure_with_the_same_property() {
        let def = find("occ").unwrap();
        let mut s = Scenario::new(def, 0);
        s.bugs = vec!["skip_if_match".into()];
        let before = run_isolated_with(def, &s);
        assert!(!before.passed());
        let shrunk = shrink(def, &s, 300, |_, _| {}).expect("it fails");
        assert!(
            size(&shrunk.run) < size(&before),
            "{:?} vs {:?}",
            size(&shrunk.run),
            size(&before)
        );
        assert_eq!(shrunk.run.first_property(), before.first_property());
        assert!(
            shrunk.run.history.ops() * 4 < before.history.ops(),
            "shrunk to {} ops",
            shrunk.run.history.ops()
        );
        // The shrunk scenario replays to the same failure.
        let again = run_isolated_with(def, &shrunk.scenario);
        assert_eq!(again.trace_hash, shrunk.run.trace_hash);
    }

    #[test]
    fn a_passing_scenario_does_not_shrink() {
        let def = find("occ").unwrap();
        assert!(shrink(def, &Scenario::new(def, 7), 10, |_, _| {}).is_none());
    }
}
