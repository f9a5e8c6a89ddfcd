//! Shrinking a failing scenario: greedily try smaller variants (fewer
//! clients, operations, items, fault events, fault kinds) and keep each one
//! that still fails with the same property, until no reduction helps.
//!
//! Every candidate carries an explicit fault plan, so removing a fault event
//! never reshuffles the others.

use crate::run::{resolve_plan, run, RunResult};
use crate::scenario::Scenario;
use overcast_sim::runner::run_isolated;

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

/// The `i`-th candidate of a reduction applied to `s`, or `None` when there
/// is no such candidate. Reductions of one thing (fewer clients) have only
/// candidate 0; reductions of a list (drop fault event `i`) have one per element.
type Reduction = fn(&Scenario, usize) -> Option<Scenario>;

/// Makes a single-candidate reduction answer only for index 0.
fn once(i: usize, f: impl FnOnce() -> Option<Scenario>) -> Option<Scenario> {
    if i == 0 {
        f()
    } else {
        None
    }
}

fn halve(n: usize, min: usize) -> Option<usize> {
    (n > min).then(|| (n / 2).max(min))
}

/// The reductions, most powerful first. Each takes an index for the ones
/// that remove one element of a list.
const REDUCTIONS: &[(&str, Reduction)] = &[
    ("halve the clients", |s, i| {
        once(i, || {
            halve(s.clients, 1).map(|c| Scenario {
                clients: c,
                ..s.clone()
            })
        })
    }),
    ("one client fewer", |s, i| {
        once(i, || {
            (s.clients > 1).then(|| Scenario {
                clients: s.clients - 1,
                ..s.clone()
            })
        })
    }),
    ("halve the operations", |s, i| {
        once(i, || {
            halve(s.ops_per_client, 1).map(|n| Scenario {
                ops_per_client: n,
                ..s.clone()
            })
        })
    }),
    ("a tenth fewer operations", |s, i| {
        once(i, || {
            let fewer = s.ops_per_client - (s.ops_per_client / 10).max(1);
            (s.ops_per_client > 1).then(|| Scenario {
                ops_per_client: fewer,
                ..s.clone()
            })
        })
    }),
    ("halve the items", |s, i| {
        once(i, || {
            halve(s.keys, 1).map(|k| Scenario {
                keys: k,
                ..s.clone()
            })
        })
    }),
    ("drop a fault event", |s, i| {
        let plan = s.plan.as_ref()?;
        (i < plan.events.len()).then(|| {
            let mut t = s.clone();
            t.plan.as_mut().expect("checked").events.remove(i);
            t
        })
    }),
    ("no packet loss", |s, i| {
        once(i, || {
            let plan = s.plan.as_ref()?;
            (plan.packet_loss > 0.0).then(|| {
                let mut t = s.clone();
                t.plan.as_mut().expect("checked").packet_loss = 0.0;
                t
            })
        })
    }),
    ("perfect clocks", |s, i| {
        once(i, || {
            let plan = s.plan.as_ref()?;
            (!plan.clocks.is_empty()).then(|| {
                let mut t = s.clone();
                t.plan.as_mut().expect("checked").clocks.clear();
                t
            })
        })
    }),
    ("no server fault points", |s, i| {
        once(i, || {
            let f = &s.server_faults;
            (f.throttle + f.retry_with + f.unavailable + f.gone + f.timeout > 0.0).then(|| {
                let mut t = s.clone();
                t.server_faults.throttle = 0.0;
                t.server_faults.retry_with = 0.0;
                t.server_faults.unavailable = 0.0;
                t.server_faults.gone = 0.0;
                t.server_faults.timeout = 0.0;
                t
            })
        })
    }),
    ("one server fewer", |s, i| {
        once(i, || {
            (s.servers > 1).then(|| Scenario {
                servers: s.servers - 1,
                ..s.clone()
            })
        })
    }),
];

/// The size a shrink minimises: operations first, then fault events, clients and items.
pub fn size(r: &RunResult) -> (usize, usize, usize, usize) {
    let events = r.scenario.plan.as_ref().map_or(0, |p| p.events.len());
    (
        r.history.ops.len(),
        events,
        r.scenario.clients,
        r.scenario.keys,
    )
}

/// Shrinks `s`, which must fail, keeping the first violated property.
/// `progress` is told about every kept step. Returns `None` if `s` passes.
pub fn shrink(
    s: &Scenario,
    max_tries: usize,
    mut progress: impl FnMut(&str, &RunResult),
) -> Option<Shrunk> {
    let mut best_s = s.clone();
    best_s.plan = Some(resolve_plan(s));
    let first = run_isolated({
        let b = best_s.clone();
        move || run(&b)
    })
    .ok()?;
    let property = first.violations.first()?.property.clone();
    let mut best = first;
    let (mut tried, mut kept) = (0, 0);
    'outer: loop {
        for (name, reduce) in REDUCTIONS {
            let mut i = 0;
            while let Some(candidate) = reduce(&best_s, i) {
                if tried >= max_tries {
                    break 'outer;
                }
                tried += 1;
                let c = candidate.clone();
                let same_failure = run_isolated(move || run(&c)).ok().filter(|r| {
                    r.violations.first().is_some_and(|v| v.property == property)
                        && size(r) < size(&best)
                });
                match same_failure {
                    Some(r) => {
                        kept += 1;
                        progress(name, &r);
                        best = r;
                        best_s = candidate;
                        // Restart from the most powerful reduction on the smaller scenario.
                        continue 'outer;
                    }
                    None => i += 1,
                }
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

    #[test]
    fn a_seeded_bug_shrinks_to_a_smaller_failure_with_the_same_property() {
        let mut s = Scenario::occ(0);
        s.bugs = vec!["skip_if_match".into()];
        let before = run_isolated({
            let s = s.clone();
            move || run(&s)
        })
        .unwrap();
        assert!(!before.passed());
        let shrunk = shrink(&s, 300, |_, _| {}).expect("it fails");
        assert!(
            size(&shrunk.run) < size(&before),
            "{:?} vs {:?}",
            size(&shrunk.run),
            size(&before)
        );
        assert_eq!(
            shrunk.run.violations[0].property,
            before.violations[0].property
        );
        assert!(
            shrunk.run.history.ops.len() * 4 < before.history.ops.len(),
            "shrunk to {} ops",
            shrunk.run.history.ops.len()
        );
        // The shrunk scenario replays to the same failure.
        let again = run_isolated(move || run(&shrunk.scenario)).unwrap();
        assert_eq!(again.trace_hash, shrunk.run.trace_hash);
    }

    #[test]
    fn a_passing_scenario_does_not_shrink() {
        assert!(shrink(&Scenario::occ(7), 10, |_, _| {}).is_none());
    }
}
