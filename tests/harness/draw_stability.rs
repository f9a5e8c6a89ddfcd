//! Leaving one operation out of a failing run leaves every other
//! operation's draws where they were. For a failing run of each scenario,
//! a sample of its operations is left out one at a time (the run paced as
//! the shrinker paces it, `ops::pace_of`), and every other operation the
//! run drew is drawn again with the same number and about the same subject
//! (`ops::about`: the item, document, partition key or blob its workload
//! drew for it). A workload that drew part of an operation after asking
//! whether to leave it out, or from a stream shared with other operations,
//! would shift the subjects of every later operation of its client.
//!
//! How the workloads keep them: each operation draws from a stream of its
//! own (`kit::draws::unit_stream`), keyed by the seed, its node's stream and
//! its number, so however much one operation draws (what it draws may follow
//! what the run answered, or come after the shrinker is asked), the others
//! draw as before. A workload whose operations draw whole before asking,
//! by the draws alone and not the answers (regions, the queues' editor,
//! the feed's writers), keeps them with its node's stream alone.
//!
//! The requests themselves are not compared: they carry what the run
//! answered (an ETag read earlier, a body built on a read, a date from the
//! client's clock when the call went out), which leaving out another
//! operation rightly changes.

use overcast_harness::ops::{pace_of, SkipSet};
use overcast_harness::registry::DynScenario;
use overcast_harness::run::{resolved, run_isolated_with, RunResult};
use overcast_harness::scenario::Scenario;
use overcast_scenarios::CATALOGUE;
use std::collections::BTreeSet;

/// Operations left out per scenario: a run takes a fraction of a second
/// (a feed run about one), and each left-out operation is one run.
const SAMPLE: usize = 8;

/// Every (node, operation) both runs drew whose subject differs, and how
/// many they both drew with a subject.
fn moved(base: &RunResult, cand: &RunResult) -> (Vec<String>, usize) {
    let mut moved = Vec::new();
    let mut common = 0;
    for (node, subjects) in &base.subjects {
        let Some(other) = cand.subjects.get(node) else {
            continue;
        };
        for (op, subject) in subjects {
            let Some(again) = other.get(op) else {
                continue;
            };
            common += 1;
            if again != subject {
                moved.push(format!("{node} op {op}: about {subject}, then {again}"));
            }
        }
    }
    (moved, common)
}

/// The first failing run of `bug` in `scenario` on `seeds`, with its pace.
fn failing_run(scenario: &str, bug: &str, seeds: std::ops::Range<u64>) -> (Scenario, RunResult) {
    let def: &'static dyn DynScenario = CATALOGUE.find(scenario).expect("registered");
    let (s, first) = seeds
        .map(|seed| {
            let mut s = Scenario::new(def, seed);
            s.bugs = vec![bug.into()];
            let s = resolved(def, &s).expect("resolves");
            let r = run_isolated_with(def, &s);
            (s, r)
        })
        .find(|(_, r)| !r.passed())
        .unwrap_or_else(|| panic!("{bug} fails a seed of {scenario}"));
    let mut paced = s;
    paced.pace = pace_of(&first.drawn);
    let base = run_isolated_with(def, &paced);
    assert_eq!(
        base.trace_hash, first.trace_hash,
        "a run paced as it went is that run"
    );
    (paced, base)
}

/// Leaves out a sample of `bug`'s failing run's operations one at a time;
/// the draws that moved, in words.
fn leave_each_out(scenario: &str, bug: &str, seeds: std::ops::Range<u64>) -> Vec<String> {
    let def: &'static dyn DynScenario = CATALOGUE.find(scenario).expect("registered");
    let (paced, base) = failing_run(scenario, bug, seeds);
    let ops: Vec<(String, usize)> = base
        .subjects
        .iter()
        .flat_map(|(node, s)| s.keys().map(move |op| (node.clone(), *op)))
        .collect();
    assert!(
        ops.len() >= SAMPLE,
        "{scenario}: {} operations with a subject",
        ops.len()
    );
    let mut found = Vec::new();
    for left_out in ops.iter().step_by(ops.len() / SAMPLE).take(SAMPLE) {
        let mut c = paced.clone();
        c.skip = SkipSet::from([(left_out.0.clone(), BTreeSet::from([left_out.1]))]);
        let cand = run_isolated_with(def, &c);
        let (m, common) = moved(&base, &cand);
        // Most operations are drawn again: a few near the deadline may
        // start too late in the other run, and the calls of a node whose
        // tasks follow what they read (a connector's, a feed host's) come
        // and go with it.
        assert!(
            common * 4 >= ops.len() * 3,
            "{scenario} {bug} leaving out {left_out:?}: only {common} of {} drawn again",
            ops.len()
        );
        found.extend(m.into_iter().map(|m| {
            format!(
                "{scenario} {bug} seed {}, leaving out {left_out:?}: {m}",
                paced.seed
            )
        }));
    }
    found
}

/// Every draw that moved for the failing runs of `cases`.
fn moved_draws(cases: &[(&str, &str)]) -> Vec<String> {
    cases
        .iter()
        .flat_map(|(scenario, bug)| leave_each_out(scenario, bug, 0..60))
        .collect()
}

#[test]
fn leaving_one_operation_out_moves_no_other_operations_draws() {
    let found = moved_draws(&[
        ("occ", "ack_before_sync"),
        ("occ-replicated", "session_token_ignored"),
        ("cosmos", "replace_missing_412"),
        ("search", "search_sdk_ignores_only_if_unchanged"),
        ("queues", "poll_returns_reserved"),
        ("leases", "lease_id_reuse"),
        ("feed", "feed_shows_deletes"),
    ]);
    assert!(found.is_empty(), "{}", found.join("\n"));
}
