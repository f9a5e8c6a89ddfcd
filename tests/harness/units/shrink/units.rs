//! Tests of `harness/src/shrink/units.rs`.

use crate::toy_scenario::COUNTER;
use overcast_harness::ops::SkipSet;
use overcast_harness::scenario::Scenario;
use overcast_harness::shrink::{removal_step, with_units, Unit};

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
