//! Tests of `harness/src/run.rs`.

use overcast_harness::run::*;
use overcast_sim::check::Property;
use overcast_sim::world::WorldOutcome;
use std::collections::BTreeMap;

#[test]
fn status_fault_points_and_network_faults_are_faults_and_other_counters_are_not() {
    for f in ["408", "429", "503", "duplicate", "reorder"] {
        assert!(is_fault(f), "{f}");
    }
    for c in [
        "answered_200",
        "max_unsynced_records",
        "fsync_errors_seen",
        "storms_429",
    ] {
        assert!(!is_fault(c), "{c}");
    }
    let counters = BTreeMap::from([("429".to_string(), 3), ("answered_200".to_string(), 9)]);
    let world = WorldOutcome::default();
    assert_eq!(fault_words(&world, &counters), ["429×3"]);
    assert_eq!(counter_words(&counters), ["answered_200×9"]);
}

#[test]
fn an_op_count_reads_the_same_everywhere_and_names_the_checks_calls_apart() {
    let n = OpCount {
        client: 3,
        unknown: 0,
        retries: 1,
        checks: 31,
    };
    assert_eq!(
        n.to_string(),
        "3 client operations (0 with unknown outcome), 1 retry; besides them, 31 calls of the checks' own"
    );
}

#[test]
fn property_lists_read_as_ranges_when_they_are_one() {
    let p = |id| Property::new(id, "");
    assert_eq!(property_range(&[p("R1"), p("R2"), p("R3")]), "R1–R3");
    assert_eq!(property_range(&[p("E1")]), "E1");
    assert_eq!(property_range(&[p("L1"), p("X")]), "L1/X");
}
