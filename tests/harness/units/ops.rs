//! Tests of `harness/src/ops.rs`.

use crate::toy_scenario::now_ns;
use overcast_harness::ops::*;
use std::collections::{BTreeMap, BTreeSet};

/// Runs `f` as the one task of a one-node simulation, as a workload runs.
fn in_sim<T: 'static>(f: impl std::future::Future<Output = T> + 'static) -> T {
    madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default()).block_on(f)
}

#[test]
fn a_plan_skips_what_it_names_records_what_was_drawn_and_uninstalls() {
    assert!(!in_sim(skipped("client-0", 0)), "no plan: nothing skipped");
    let skip: SkipSet = [("client-1#3".to_string(), BTreeSet::from([2]))].into();
    let plan = OpPlan::install(&skip, &Reached::new(), &Pace::new());
    let answers = in_sim(async {
        let mut v = Vec::new();
        for op in 0..3 {
            v.push(skipped("client-1#3", op).await);
        }
        v.push(skipped("client-1", 2).await);
        v.push(skipped("client-0", 0).await);
        v
    });
    assert_eq!(
        answers,
        [false, false, true, false, false],
        "an incarnation's operations are its own: another life's op 2 is sent"
    );
    let (drawn, _) = plan.finish();
    assert_eq!(drawn["client-1#3"].len(), 3);
    assert_eq!(drawn["client-1"].len(), 1);
    assert_eq!(drawn["client-0"].len(), 1);
    assert!(!in_sim(skipped("client-1#3", 2)), "uninstalled");
}

#[test]
fn operations_beyond_what_the_cut_run_reached_are_left_out_and_not_counted_as_drawn() {
    // The run this scenario was cut from drew client-0's operations up to
    // 2 (its op 2 ran until the deadline); leaving op 2 out must not let
    // the workload go on to ops 3, 4, ... that run never reached.
    let skip: SkipSet = [("client-0".to_string(), BTreeSet::from([2]))].into();
    let reached: Reached = [("client-0".to_string(), 2)].into();
    let plan = OpPlan::install(&skip, &reached, &Pace::new());
    let answers = in_sim(async {
        let mut v = Vec::new();
        for op in 0..6 {
            v.push(skipped("client-0", op).await);
        }
        v.push(skipped_call("client-0", 9));
        v.push(skipped("client-1", 7).await);
        v
    });
    assert_eq!(
        answers,
        [false, false, true, true, true, true, false, false],
        "ops past the reach are left out; a call asked about on its own \
         schedule (left out, it would end as lost) and another incarnation \
         have no bound"
    );
    let (drawn, _) = plan.finish();
    assert_eq!(
        drawn["client-0"].keys().copied().collect::<Vec<_>>(),
        [0, 1, 2, 9],
        "what lies beyond the reach was never drawn (only the call asked about apart)"
    );
    assert_eq!(reached_of(&drawn)["client-1"], 7);
}

#[test]
fn a_paced_operation_waits_for_its_start_time_and_a_dropped_plan_is_uninstalled() {
    let pace: Pace = [("client-0".to_string(), BTreeMap::from([(1, 5_000_000)]))].into();
    let plan = OpPlan::install(&SkipSet::new(), &Reached::new(), &pace);
    in_sim(async {
        assert!(!skipped("client-0", 0).await);
        assert_eq!(now_ns(), 0, "op 0 is not paced");
        assert!(!skipped("client-0", 1).await);
        // madsim's timers fire a few ns late.
        assert!(
            (5_000_000..5_001_000).contains(&now_ns()),
            "op 1 waited for its start"
        );
    });
    let started = pace_of(&plan.finish().0)["client-0"][&1];
    assert!((5_000_000..5_001_000).contains(&started), "{started}");
    let skip: SkipSet = [("client-0".to_string(), BTreeSet::from([0]))].into();
    drop(OpPlan::install(&skip, &Reached::new(), &Pace::new()));
    assert!(!in_sim(skipped("client-0", 0)));
}

#[test]
fn a_socket_named_by_its_call_keeps_it_whatever_the_node_drew_last() {
    let skip: SkipSet = [("connector-0#1".to_string(), BTreeSet::from([7]))].into();
    let plan = OpPlan::install(&skip, &Reached::new(), &Pace::new());
    in_sim(async {
        assert!(!skipped_call("connector-0", 5));
        name_socket("connector-0", 1001, Some(5));
        assert!(
            skipped_call("connector-0#1", 7),
            "the incarnation's call 7 is left out"
        );
        assert!(
            !skipped_call("connector-0", 7),
            "another life's call 7 is not"
        );
        assert!(!skipped_call("connector-0", 9));
        name_socket("connector-0", 1002, Some(9));
        assert_eq!(current_at("connector-0", 1001), Some(5));
        assert_eq!(current_at("connector-0#1", 1002), Some(9));
        assert_eq!(
            current_at("connector-0", 1003),
            None,
            "a call is no node's current"
        );
        assert!(!skipped("connector-0", 3).await);
        assert_eq!(
            current_at("connector-0", 1003),
            Some(3),
            "else the node's current"
        );
        name_socket("connector-0", 1001, None);
        assert_eq!(current_at("connector-0", 1001), Some(3));
    });
    assert_eq!(plan.finish().0["connector-0"].len(), 4, "calls are drawn");
}
