//! The harness's generic machinery (shrinking, sweeping, saving) on the
//! registered scenarios, where the toy of the harness's own tests is too
//! small to show it: occ's seeded bugs shrink by items and operations, and a
//! sweep keeps the runs of the lowest failing seeds only; a sideways step
//! takes a smaller feed page when the history then shrinks further; a swap
//! leaves out a feed host's listing in place of the read it led to; an
//! uphill step, in the search from the smallest failure, leaves out an
//! operation that makes a feed race larger and then smaller; a failure that
//! broke a whole-run and a prefix-closed property shrinks to one still
//! breaking the whole-run one first; a failure of a prefix-closed property
//! is searched first with its run stopped soon after the violation.

use overcast_harness::run::run_isolated_with;
use overcast_harness::scenario::Scenario;
use overcast_harness::shrink::{shrink, size};
use overcast_harness::sweep::{sweep_with, SeedChecks};
use overcast_scenarios::CATALOGUE;
use overcast_sim::check::Outcome;
use overcast_sim::runner::SweepOptions;

#[test]
fn a_seeded_bug_shrinks_to_a_smaller_failure_with_the_same_property() {
    let def = CATALOGUE.find("occ").unwrap();
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
fn the_subject_pass_leaves_out_whole_items_and_keeps_the_property() {
    // etag_reuse needs one item deleted and created again: every other
    // item's operations can go at once.
    let def = CATALOGUE.find("occ").unwrap();
    let mut s = Scenario::new(def, 0);
    s.bugs = vec!["etag_reuse".into()];
    let before = run_isolated_with(def, &s);
    assert!(
        before.subjects.values().flat_map(|m| m.values()).count() > 100,
        "occ says what its operations are about"
    );
    let mut steps = Vec::new();
    let shrunk = shrink(def, &s, 500, |step, _| steps.push(step.to_string())).unwrap();
    assert!(
        steps.iter().any(|s| s.contains("the operations about")),
        "{steps:?}"
    );
    assert_eq!(shrunk.run.first_property(), before.first_property());
    assert!(size(&shrunk.run).0 <= 15, "{:?}", size(&shrunk.run));
    // The items left are few: most of the ten were left out whole.
    let items: std::collections::BTreeSet<&String> = shrunk
        .run
        .subjects
        .iter()
        .flat_map(|(node, ops)| {
            let skip = shrunk.scenario.skip.get(node);
            ops.iter()
                .filter(move |(i, _)| !skip.is_some_and(|k| k.contains(i)))
                .map(|(_, subject)| subject)
        })
        .collect();
    assert!(items.len() <= 4, "{items:?}");
}

#[test]
fn the_history_pass_leaves_out_operations_and_the_shrunk_file_replays_to_the_same_failure() {
    let def = CATALOGUE.find("occ").unwrap();
    let mut s = Scenario::new(def, 0);
    s.bugs = vec!["skip_if_match".into()];
    let before = run_isolated_with(def, &s);
    let shrunk = shrink(def, &s, 400, |_, _| {}).expect("it fails");
    assert!(
        overcast_harness::ops::count(&shrunk.scenario.skip) > 0,
        "no operation was left out"
    );
    assert_eq!(shrunk.ops_before, before.history.workload_ops());
    // occ's liveness probe reads and writes every item after the heal;
    // its calls are not client operations the pass can leave out, so the
    // bar is a tenth of the failing run rather than 15 operations.
    assert!(
        shrunk.run.history.ops() * 10 < before.history.ops(),
        "shrunk to {} ops of {}",
        shrunk.run.history.ops(),
        before.history.ops()
    );
    assert_eq!(shrunk.run.first_property(), before.first_property());
    // Leaving the skipped operations back in changes the run: they were really left out.
    let mut all_in = shrunk.scenario.clone();
    all_in.skip.clear();
    let all_in = run_isolated_with(def, &all_in);
    assert!(all_in.history.ops() > shrunk.run.history.ops());
    // The saved file carries the skip set and replays to the same failure.
    let text = overcast_harness::saved::SavedRun::of(&shrunk.run).to_json();
    assert!(text.contains("\"skip\""), "{text}");
    let loaded = CATALOGUE.load(&text).unwrap();
    assert_eq!(loaded.scenario, shrunk.scenario);
    let again = run_isolated_with(def, &loaded.scenario);
    assert!(loaded
        .outcome
        .unwrap()
        .reproduced_by(&overcast_harness::saved::SavedOutcome::of(&again)));
    assert_eq!(again.trace_hash, shrunk.run.trace_hash);
}

/// A step a shrink kept, and the size (operations, fault events) after it.
type Step = (String, (usize, usize));

/// Feed seed 0's failure under `bug` shrunk (within the default budget,
/// without the disk faults of the default mix: the steps below were found
/// on the plans drawn before feed's mix had them), still failing with
/// `property` first and replaying to the same run, and each step kept with
/// the size after it.
fn shrink_feed_seed_0(bug: &str, property: &str) -> (overcast_harness::shrink::Shrunk, Vec<Step>) {
    shrink_feed_seed_0_in(bug, property, false)
}

/// [`shrink_feed_seed_0`], with the default mix's disk faults when
/// `disk_faults`.
fn shrink_feed_seed_0_in(
    bug: &str,
    property: &str,
    disk_faults: bool,
) -> (overcast_harness::shrink::Shrunk, Vec<Step>) {
    let def = CATALOGUE.find("feed").unwrap();
    let mut s = Scenario::new(def, 0);
    if !disk_faults {
        s.faults.storage = Default::default();
    }
    s.bugs = vec![bug.into()];
    let mut steps = Vec::new();
    let shrunk = shrink(def, &s, 500, |step, r| {
        steps.push((step.to_string(), size(r)))
    })
    .expect("it fails");
    assert_eq!(
        shrunk.run.first_property().map(|p| p.as_str()),
        Some(property)
    );
    // The shrunk scenario replays to the same run.
    let again = run_isolated_with(def, &shrunk.scenario);
    assert_eq!(again.trace_hash, shrunk.run.trace_hash);
    (shrunk, steps)
}

/// The sideways step: a smaller feed page is no smaller a failure by
/// itself (the reader pulls more pages), but it lets the history pass
/// leave out the writes that filled the bigger one. Kept only because the
/// shrink then ends smaller than its local minimum.
#[test]
fn a_sideways_step_takes_a_reduction_no_smaller_itself_when_the_history_then_shrinks() {
    let (shrunk, steps) = shrink_feed_seed_0("page_cut_keeps_log_end", "CF10");
    let sideways = steps
        .iter()
        .position(|(step, _)| step.starts_with("halve the page size") && step.contains(", then "))
        .unwrap_or_else(|| panic!("no sideways step: {steps:?}"));
    assert!(
        steps[sideways].1 < steps[sideways - 1].1,
        "kept only when smaller: {steps:?}"
    );
    let page = shrunk.scenario.params["max_items"].as_u64();
    assert!(matches!(page, Some(n) if n < 6), "page {page:?}");
}

/// The swap: leaving out a feed host's first read made it release its
/// lease and take it again, so its read after the split became its first.
/// Leaving out the listing before it instead (the first one found the
/// lease; the next comes after the split) tells the story in fewer calls.
#[test]
fn a_swap_leaves_out_another_operation_in_place_of_one_left_out_when_the_failure_ends_smaller() {
    let (shrunk, steps) = shrink_feed_seed_0_in("split_keeps_parent", "CF11", true);
    let swaps: Vec<usize> = (1..steps.len())
        .filter(|i| steps[*i].0.contains("in place of one left out"))
        .collect();
    assert!(!swaps.is_empty(), "no swap: {steps:?}");
    for i in swaps {
        assert!(
            steps[i].1 < steps[i - 1].1,
            "kept only when smaller: {steps:?}"
        );
    }
    assert!(size(&shrunk.run).0 <= 15, "{steps:?}");
}

/// The uphill step: at the smallest failure the searches from the seed
/// found, leaving out one of a feed host's calls makes the split's story
/// come about another way, larger at first; the history passes on it then
/// end smaller than the minimum, and only then is it kept. The search from
/// the smallest runs with a budget of its own, and its steps are told so.
#[test]
fn an_uphill_step_from_the_smallest_failure_is_kept_only_when_the_failure_then_ends_smaller() {
    let (shrunk, steps) = shrink_feed_seed_0_in("split_keeps_parent", "CF11", true);
    let uphill: Vec<usize> = (1..steps.len())
        .filter(|i| {
            let step = steps[*i].0.strip_prefix("from the smallest: leave out ");
            step.is_some_and(|s| s.contains(", then "))
        })
        .collect();
    assert!(!uphill.is_empty(), "no uphill step: {steps:?}");
    for i in uphill {
        assert!(
            steps[i].1 < steps[i - 1].1,
            "kept only when smaller: {steps:?}"
        );
    }
    assert!(size(&shrunk.run).0 <= 15, "{steps:?}");
}

/// A client's last operation, still running at the deadline, can be left
/// out without its workload going on to the operations the failure never
/// reached (`Scenario::reached`), and a read's flipped bit stays on its
/// record when other crashes of its server go: `skip_crc_on_replay`'s
/// story (a put, the crash whose recovery read flips its record, the read
/// that returns it) ends small. Both searches' steps are told, the second's
/// named so.
#[test]
fn a_shrink_keeps_within_what_the_failure_reached_and_a_second_search_goes_beyond() {
    let def = CATALOGUE.find("occ").unwrap();
    let mut s = Scenario::new(def, 5);
    s.bugs = vec!["skip_crc_on_replay".into()];
    s.faults = overcast_sim::faults::FaultMix::storage(&s.faults);
    let mut steps = Vec::new();
    let shrunk = shrink(def, &s, 500, |step, _| steps.push(step.to_string())).expect("it fails");
    assert_eq!(
        shrunk.run.first_property().map(|p| p.as_str()),
        Some("linearizability")
    );
    assert!(
        size(&shrunk.run).0 <= 10,
        "{:?}: {steps:?}",
        size(&shrunk.run)
    );
    assert!(
        steps.iter().any(|s| s.starts_with("second search: ")),
        "{steps:?}"
    );
    // The bound is saved with the scenario, and replays to the same run.
    let again = run_isolated_with(def, &shrunk.scenario);
    assert_eq!(again.trace_hash, shrunk.run.trace_hash);
    // The bounded search ends smallest here. Without its bound, what the
    // kept operations' clients drew after them runs too: more operations
    // than the shrunk run has.
    assert!(!shrunk.scenario.reached.is_empty());
    let mut unbounded = shrunk.scenario.clone();
    unbounded.reached.clear();
    let free = run_isolated_with(def, &unbounded);
    assert!(size(&free).0 > size(&shrunk.run).0, "{:?}", size(&free));
}

#[test]
fn occs_probe_calls_are_the_ones_the_size_leaves_out() {
    assert_eq!(
        overcast_scenarios::services::occ::workload::PROBE_CLIENT,
        overcast_harness::registry::CHECK_CLIENTS
    );
}

#[test]
fn a_passing_scenario_does_not_shrink() {
    let def = CATALOGUE.find("occ").unwrap();
    assert!(shrink(def, &Scenario::new(def, 7), 10, |_, _| {}).is_none());
}

#[test]
fn a_sweep_keeps_the_runs_of_the_lowest_failing_seeds_only_whatever_the_jobs() {
    // Every seed fails with this bug; three workers finish in any order.
    let def = CATALOGUE.find("occ").unwrap();
    let make = |seed| {
        let mut s = Scenario::new(def, seed);
        s.bugs = vec!["skip_if_match".into()];
        s
    };
    let seeds: Vec<u64> = (0..7).collect();
    for (jobs, keep_failed) in [(3, 2), (1, 2), (3, 0)] {
        let opts = SweepOptions {
            jobs,
            progress: false,
            ..SweepOptions::default()
        };
        let checks = SeedChecks {
            keep_failed,
            ..SeedChecks::default()
        };
        let reports = sweep_with(def, &seeds, &opts, make, checks);
        assert!(reports.iter().all(|r| r.outcome == Outcome::Violation));
        let kept: Vec<u64> = reports
            .iter()
            .filter(|r| r.failed_run.is_some())
            .map(|r| r.seed)
            .collect();
        assert_eq!(
            kept,
            (0..keep_failed as u64).collect::<Vec<_>>(),
            "{jobs} jobs"
        );
        for r in reports.iter().filter(|r| r.failed_run.is_some()) {
            let run = r.failed_run.as_ref().unwrap();
            assert_eq!((run.scenario.seed, run.trace_hash), (r.seed, r.trace_hash));
        }
    }
}

/// A failure that broke a property judged on the whole run (feed's CF3: a
/// change never delivered, judged once the hosts had time to settle) and a
/// prefix-closed one (CF4: a checkpoint before its delegate returned) is
/// searched a third time holding the second too, whose run may stop soon
/// after its violation; whichever search ends smallest, the shrunk run
/// breaks CF3 first, as the failure did, and the shrink and its saved file
/// say so. (On a run stopped soon after CF4's violation CF3 is judged only
/// for a change a checkpoint has passed: the third search's candidates must
/// break CF3 as well.)
#[test]
fn a_shrink_whose_failure_broke_a_whole_run_and_a_prefix_closed_property_ends_failing_the_whole_run_one(
) {
    let def = CATALOGUE.find("feed").unwrap();
    let s = overcast_harness::hunt::hunt_scenario(def, 0, "checkpoint_before_delegate");
    let before = run_isolated_with(def, &s);
    let cf3 = overcast_sim::check::PropertyId::new("CF3");
    assert_eq!(before.first_property(), Some(cf3));
    assert!(!def.prefix_closed(cf3));
    assert!(before
        .violations()
        .iter()
        .any(|v| v.property.as_str() == "CF4" && def.prefix_closed(v.property)));
    let mut steps = Vec::new();
    let shrunk = shrink(def, &s, 500, |step, _| steps.push(step.to_string())).expect("it fails");
    assert!(
        steps.iter().any(|s| s.starts_with("search holding CF4: ")),
        "{steps:?}"
    );
    assert_eq!(shrunk.property, cf3);
    assert_eq!(shrunk.run.first_property(), Some(cf3));
    assert!(size(&shrunk.run) < size(&before));
    // CF3 is judged on the run cut short for the change its checkpoint
    // passed, so the run need not wait for the hosts to settle.
    assert!(size(&shrunk.run).0 <= 15, "{}", shrunk.run.summary());
    let cf3_note = &shrunk
        .run
        .checks
        .iter()
        .find(|c| c.name() == cf3)
        .expect("CF3")
        .checked
        .note;
    assert!(cf3_note.contains("checkpointed past it"), "{cf3_note}");
    // The later searches begin as the first did: their candidates are
    // judged from the memo of the first's runs.
    assert!(
        shrunk.ran < shrunk.tried,
        "{} runs, {} tried",
        shrunk.ran,
        shrunk.tried
    );
    let saved = overcast_harness::saved::SavedRun::of(&shrunk.run);
    assert_eq!(saved.outcome.property.as_deref(), Some("CF3"));
    let again = run_isolated_with(def, &shrunk.scenario);
    assert_eq!(again.trace_hash, shrunk.run.trace_hash);
}

/// A failure of a prefix-closed property (regions' election safety: two
/// primaries of one term) is searched first with its run stopped soon
/// after the violation, where every candidate is cheap; vote_twice's
/// failure of seed 19 ends there with no operation and no fault event (two
/// replicas win the first election), and no other search is run.
#[test]
fn a_prefix_closed_failure_is_searched_first_with_its_run_stopped_soon_after_the_violation() {
    let def = CATALOGUE.find("regions").unwrap();
    let election = overcast_sim::check::PropertyId::new("election safety");
    assert!(def.prefix_closed(election));
    let mut s = Scenario::new(def, 19);
    s.bugs = vec!["vote_twice".into()];
    let before = run_isolated_with(def, &s);
    assert_eq!(before.first_property(), Some(election));
    let mut steps = Vec::new();
    let shrunk = shrink(def, &s, 500, |step, _| steps.push(step.to_string())).expect("it fails");
    assert_eq!(
        steps.first().map(String::as_str),
        Some("search stopped soon: stop the run sooner"),
        "{steps:?}"
    );
    assert!(
        steps.iter().all(|s| s.starts_with("search stopped soon: ")),
        "{steps:?}"
    );
    assert_eq!(size(&shrunk.run), (0, 0));
    assert_eq!(shrunk.run.first_property(), Some(election));
    let stop = shrunk.scenario.stop_ms.expect("stopped");
    assert!(
        stop * 4 < before.scenario.deadline_ms + before.scenario.quiet_ms,
        "{stop}"
    );
    let again = run_isolated_with(def, &shrunk.scenario);
    assert_eq!(again.trace_hash, shrunk.run.trace_hash);
}
