//! Tests of `harness/src/shrink/reductions.rs`.

use crate::toy_scenario::COUNTER;
use overcast_harness::registry::DynScenario;
use overcast_harness::scenario::Scenario;
use overcast_harness::shrink::*;
use overcast_sim::check::PropertyId;

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

/// The "stop the run sooner" candidates of `s` for a failure of `property`.
fn stops(def: &'static dyn DynScenario, s: &Scenario, property: &'static str) -> Vec<Scenario> {
    let r = def.reduction_names().len()
        + ENVELOPE_REDUCTIONS
            .iter()
            .position(|(n, _)| *n == "stop the run sooner")
            .unwrap();
    (0..)
        .map_while(|i| candidate(def, s, PropertyId::new(property), r, i))
        .collect()
}

#[test]
fn the_run_stops_sooner_only_for_a_prefix_closed_property_and_after_the_faults_end() {
    let def: &'static dyn DynScenario = &COUNTER;
    let mut s = Scenario::new(def, 0);
    assert!(
        stops(def, &s, "liveness").is_empty(),
        "liveness needs the whole run"
    );
    let end = s.deadline_ms + s.quiet_ms;
    let at: Vec<u64> = stops(def, &s, "C1")
        .iter()
        .map(|c| c.stop_ms.expect("a stop"))
        .collect();
    assert_eq!(at, [end / 2, end / 4 * 3, end / 8 * 7, end / 16 * 15]);
    // A crash begun before a stop is over, and recovered from, before it.
    let mut plan = overcast_sim::faults::FaultPlan::none();
    plan.events.push(overcast_sim::faults::FaultEvent {
        at_ms: end / 2 - 100,
        fault: overcast_sim::faults::Fault::Crash {
            node: "worker-0".into(),
            down_ms: 400,
        },
    });
    s.plan = Some(plan);
    assert_eq!(stops(def, &s, "C1")[0].stop_ms, Some(end / 2 + 300 + 1_000));
}
