//! Tests of `harness/src/shrink.rs`.

mod reductions;
mod units;

use crate::toy_scenario::{COUNTER, DOUBLE_INCREMENT};
use overcast_harness::registry::DynScenario;
use overcast_harness::run::run_isolated_with;
use overcast_harness::scenario::Scenario;
use overcast_harness::shrink::*;
use overcast_sim::check::PropertyId;

#[test]
fn a_seeded_bug_shrinks_to_a_smaller_failure_that_replays() {
    let def: &'static dyn DynScenario = &COUNTER;
    let failing = (0..50)
        .map(|seed| {
            let mut s = Scenario::new(def, seed);
            s.bugs = vec![DOUBLE_INCREMENT.name.into()];
            s
        })
        .find(|s| !run_isolated_with(def, s).passed())
        .expect("the toy's bug fails some seed");
    let before = run_isolated_with(def, &failing);
    let shrunk = shrink(def, &failing, 100, |_, _| {}).expect("it fails");
    assert!(size(&shrunk.run) < size(&before));
    assert_eq!(shrunk.run.first_property(), Some(PropertyId::new("C1")));
    let again = run_isolated_with(def, &shrunk.scenario);
    assert_eq!(again.trace_hash, shrunk.run.trace_hash);
    assert!(shrink(def, &Scenario::new(def, 7), 10, |_, _| {}).is_none());
}

#[test]
fn a_stopped_run_is_the_run_up_to_its_stop_and_is_not_judged_for_liveness() {
    let def: &'static dyn DynScenario = &COUNTER;
    let whole = run_isolated_with(def, &Scenario::new(def, 3));
    assert!(whole.passed(), "{}", whole.summary());
    let stop_ms = whole.world.sim_ns / 1_000_000 / 3;
    let mut s = Scenario::new(def, 3);
    s.stop_ms = Some(stop_ms);
    let stopped = run_isolated_with(def, &s);
    assert!(stopped.world.sim_ns <= stop_ms * 1_000_000 + 1_000_000);
    assert!(
        !stopped.world.unfinished.is_empty(),
        "stopped with work left"
    );
    let started_before = |r: &overcast_harness::run::RunResult| {
        r.drawn
            .iter()
            .flat_map(|(node, ops)| {
                ops.iter()
                    .filter(|(_, at)| **at < stop_ms * 1_000_000)
                    .map(move |(op, at)| (node.clone(), *op, *at))
            })
            .collect::<Vec<_>>()
    };
    let before = started_before(&stopped);
    assert!(before.len() > 3, "{before:?}");
    assert_eq!(before, started_before(&whole));
    let liveness = stopped
        .checks
        .iter()
        .find(|c| c.name() == PropertyId::new("liveness"))
        .expect("liveness is checked");
    assert!(liveness.checked.partly_judged);
    assert!(stopped.passed(), "{}", stopped.summary());
}
