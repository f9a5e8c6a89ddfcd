//! Tests of `harness/src/shrink.rs`.

use crate::units::toy::{COUNTER, DOUBLE_INCREMENT};
use overcast_harness::ops::SkipSet;
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
fn the_quiet_phase_is_cut_only_for_a_prefix_closed_property_and_outlasts_the_faults() {
    let def: &'static dyn DynScenario = &COUNTER;
    let mut s = Scenario::new(def, 0);
    let mut plan = overcast_sim::faults::FaultPlan::none();
    for (at_ms, down_ms) in [(1_000, 500), (s.deadline_ms - 100, 5_000)] {
        plan.events.push(overcast_sim::faults::FaultEvent {
            at_ms,
            fault: overcast_sim::faults::Fault::Crash {
                node: "worker-0".into(),
                down_ms,
            },
        });
    }
    s.plan = Some(plan);
    s.quiet_ms = 8_000;
    let quiet = |s: &Scenario, property: &'static str, i: usize| {
        let r = def.reduction_names().len()
            + ENVELOPE_REDUCTIONS
                .iter()
                .position(|(n, _)| *n == "halve the quiet phase")
                .unwrap();
        candidate(def, s, PropertyId::new(property), r, i)
    };
    assert!(
        quiet(&s, "liveness", 0).is_none(),
        "liveness needs the whole quiet phase"
    );
    assert!(def.prefix_closed("C1".into()) && !def.prefix_closed("liveness".into()));
    let dropped = quiet(&s, "C1", 0).expect("a candidate");
    assert_eq!(dropped.quiet_ms, 4_000);
    assert_eq!(dropped.plan.unwrap().events.len(), 1, "the late crash goes");
    let kept = quiet(&s, "C1", 1).expect("a candidate");
    assert_eq!(kept.plan.as_ref().unwrap().events.len(), 2);
    assert_eq!(
        kept.quiet_ms, 5_900,
        "the late crash ends 4.9 s after the deadline"
    );
    s.quiet_ms = 5_900;
    assert!(
        quiet(&s, "C1", 1).is_none(),
        "no shorter quiet phase outlasts it"
    );
}

#[test]
fn history_units_become_skipped_operations_and_dropped_fault_events() {
    let mut base = Scenario::new(&COUNTER, 0);
    let mut plan = overcast_sim::faults::FaultPlan::none();
    for at_ms in [10, 20, 30] {
        plan.events.push(overcast_sim::faults::FaultEvent {
            at_ms,
            fault: overcast_sim::faults::Fault::Pause {
                node: "worker-0".into(),
                for_ms: 5,
            },
        });
    }
    base.plan = Some(plan);
    base.skip
        .insert("worker-0".into(), std::collections::BTreeSet::from([0]));
    let units = vec![
        Unit::Op("worker-0".into(), 1),
        Unit::Op("worker-1".into(), 0),
        Unit::Fault(0),
        Unit::Fault(1),
        Unit::Fault(2),
    ];
    let s = with_units(&base, &units, &[1, 3]);
    assert_eq!(
        s.skip,
        SkipSet::from([("worker-0".into(), std::collections::BTreeSet::from([0, 1]))])
    );
    let at: Vec<u64> = s.plan.unwrap().events.iter().map(|e| e.at_ms).collect();
    assert_eq!(at, [20]);
    assert_eq!(
        removal_step([&units[0], &units[1], &units[2]].into_iter()),
        "leave out 2 operations and 1 fault event"
    );
    assert_eq!(
        removal_step([&units[3]].into_iter()),
        "leave out 1 fault event"
    );
}
