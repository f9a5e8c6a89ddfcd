//! One test shape for the explorer's bugs: an exploration from seed 0
//! finds the bug within a few runs, on a branch; the branched failure
//! replays to the same trace; the same run with the bug off passes.

use overcast_harness::explore::{explore, ExploreOptions};
use overcast_harness::registry::DynScenario;
use overcast_harness::run::run_with;
use overcast_harness::scenario::Scenario;

/// Explores `def` from seed 0 with `bug` on for at most `runs` runs and
/// asserts that a branched run fails first, breaking one of `properties`,
/// that it replays to the same trace and outcome, and that it passes with
/// the bug off. Returns the failing run's number (from 0).
pub fn explorer_finds_and_replays(
    def: &'static dyn DynScenario,
    bug: &str,
    runs: u64,
    properties: &[&str],
) -> u64 {
    let make = |seed| {
        let mut s = Scenario::new(def, seed);
        s.bugs = vec![bug.to_string()];
        s
    };
    let opts = ExploreOptions::from_seed_zero(runs, 2);
    let mut first = None;
    explore(def, &make, &opts, |run, _| {
        if !run.run.passed() && first.is_none() {
            let r = &run.run;
            first = Some((
                run.index,
                r.scenario.clone(),
                r.trace_hash,
                r.outcome,
                r.violations()[0].property.as_str().to_string(),
                r.summary(),
            ));
        }
    });
    let (index, scenario, trace_hash, outcome, property, summary) = first.unwrap_or_else(|| {
        panic!(
            "the explorer found {bug} within {runs} runs of {}",
            def.name()
        )
    });
    assert!(!scenario.branch.is_empty(), "{summary}");
    assert!(properties.contains(&property.as_str()), "{summary}");
    let again = run_with(def, &scenario);
    assert_eq!(again.trace_hash, trace_hash, "{}", again.summary());
    assert_eq!(again.outcome, outcome);
    let mut clean = scenario;
    clean.bugs.clear();
    let r = run_with(def, &clean);
    assert!(r.passed(), "{}", r.summary());
    index
}
