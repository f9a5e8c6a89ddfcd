//! The `regions` scenario end to end: the unmodified model passes its
//! checks, seeded replication bugs are caught by the property they break,
//! and a seed replays exactly. `occ-replicated` (the same deployment with
//! the object store's blobs) is held to the same, in the Blob dialect.

use crate::budget::within_and_past_budget;
use overcast_harness::registry::DynScenario;
use overcast_harness::run::run_with;
use overcast_harness::scenario::Scenario;
use overcast_scenarios::services::regions::history::{RegionOutcome, RegionsHistory};
use overcast_scenarios::services::regions::{item_names, RegionsParams};
use overcast_scenarios::CATALOGUE;

fn regions() -> &'static dyn DynScenario {
    CATALOGUE.find("regions").expect("regions is registered")
}

fn occ_replicated() -> &'static dyn DynScenario {
    CATALOGUE
        .find("occ-replicated")
        .expect("occ-replicated is registered")
}

/// The first seed below `seeds` on which `bug` breaks one of `properties`.
fn first_seed_breaking(bug: &str, properties: &[&str], seeds: u64) -> Option<u64> {
    first_seed_breaking_in(regions(), bug, properties, seeds)
}

/// [`first_seed_breaking`] in scenario `def`.
fn first_seed_breaking_in(
    def: &'static dyn DynScenario,
    bug: &str,
    properties: &[&str],
    seeds: u64,
) -> Option<u64> {
    (0..seeds).find(|&seed| {
        let mut s = Scenario::new(def, seed);
        s.bugs = vec![bug.to_string()];
        run_with(def, &s)
            .violations()
            .iter()
            .any(|v| properties.contains(&v.property.as_str()))
    })
}

/// Every seed below `seeds` of `def` passes.
fn assert_clean(def: &'static dyn DynScenario, seeds: u64) {
    for seed in 0..seeds {
        let r = run_with(def, &Scenario::new(def, seed));
        assert!(r.passed(), "seed {seed}: {}", r.summary());
    }
}

#[test]
fn the_unmodified_blob_store_passes_every_check_replicated() {
    assert_clean(occ_replicated(), 20);
}

#[test]
fn replicated_blobs_are_judged_in_the_blob_dialect() {
    // The clients speak Blob: puts answered 201 or 200, deletes 202.
    let r = run_with(occ_replicated(), &Scenario::new(occ_replicated(), 0));
    let h = r.history_as::<RegionsHistory>().expect("a regions history");
    let statuses = |op: &str| -> Vec<u16> {
        h.ops
            .iter()
            .filter(|o| o.call.op == op)
            .filter_map(|o| o.result.as_ref().map(|r| r.status()))
            .collect()
    };
    assert!(
        statuses("delete").contains(&202),
        "no blob delete was acknowledged 202"
    );
    assert!(
        !statuses("delete").contains(&204),
        "a Cosmos 204 in a blob history"
    );
    // Put Blob answers 201 Created on a replace as on a create.
    assert!(
        statuses("upsert").contains(&201),
        "no blob put was acknowledged"
    );
    assert!(
        !statuses("upsert").contains(&200),
        "a Cosmos 200 in a blob history"
    );
    // A store that ignores If-Match breaks linearizability of the strong
    // operations, and one that reuses a deleted blob's ETags too.
    for bug in ["skip_if_match", "etag_reuse"] {
        assert_eq!(
            first_seed_breaking_in(occ_replicated(), bug, &["linearizability"], 5),
            Some(0),
            "{bug}"
        );
    }
    // The replication bugs are caught as in `regions`.
    assert!(
        first_seed_breaking_in(occ_replicated(), "session_token_ignored", &["R5"], 20).is_some(),
        "R5 never caught session_token_ignored on blobs in 20 seeds"
    );
}

/// The partitions of `def`'s run of `seed` that no acknowledged write, or
/// no acknowledged read, reached.
fn partitions_unvisited(def: &'static dyn DynScenario, seed: u64) -> Vec<String> {
    let s = Scenario::new(def, seed);
    let p: RegionsParams = serde_json::from_value(s.params.clone()).expect("regions parameters");
    let r = run_with(def, &s);
    let h = r.history_as::<RegionsHistory>().expect("a regions history");
    let mut missing = Vec::new();
    for partition in 0..p.partitions {
        for (what, reads) in [("write", false), ("read", true)] {
            let reached = h.ops.iter().any(|o| {
                (o.call.op == "read") == reads
                    && matches!(o.result, Some(RegionOutcome::Ok { .. }))
                    && overcast_model::wire::partition_of(&o.call.item, p.partitions) == partition
            });
            if !reached {
                missing.push(format!(
                    "seed {seed}: no {what} acknowledged on partition {partition}"
                ));
            }
        }
    }
    missing
}

#[test]
fn the_items_are_dealt_over_every_partition() {
    for partitions in 1..=5 {
        let names = item_names(2 * partitions as usize, partitions);
        let mut hit: Vec<u32> = names
            .iter()
            .map(|n| overcast_model::wire::partition_of(n, partitions))
            .collect();
        hit.sort();
        hit.dedup();
        assert_eq!(hit, (0..partitions).collect::<Vec<_>>(), "{names:?}");
    }
    // Four items over two partitions, two on each, with readable names.
    assert_eq!(item_names(4, 2), ["k4", "k0", "k5", "k1"]);
}

#[test]
fn every_partition_of_every_run_gets_writes_and_reads() {
    for def in [regions(), occ_replicated()] {
        let missing: Vec<String> = (0..10)
            .flat_map(|seed| partitions_unvisited(def, seed))
            .collect();
        assert!(missing.is_empty(), "{}: {missing:#?}", def.name());
    }
}

#[test]
fn the_unmodified_model_passes_every_regions_check() {
    assert_clean(regions(), 30);
}

#[test]
fn a_primary_elected_without_every_committed_write_breaks_durability() {
    assert!(
        first_seed_breaking("failover_loses_committed", &["durability"], 100).is_some(),
        "durability never caught failover_loses_committed in 100 seeds"
    );
}

#[test]
fn a_session_read_below_its_token_breaks_r5() {
    assert!(
        first_seed_breaking("session_token_ignored", &["R5"], 100).is_some(),
        "R5 never caught session_token_ignored in 100 seeds"
    );
}

#[test]
fn a_seed_replays_to_the_same_trace() {
    let s = Scenario::new(regions(), 7);
    let a = run_with(regions(), &s);
    let b = run_with(regions(), &s);
    assert_eq!(a.history.trace_hash(), b.history.trace_hash());
}

#[test]
fn a_voter_granting_two_candidates_in_one_term_breaks_election_safety() {
    assert!(
        first_seed_breaking("vote_twice", &["election safety"], 30).is_some(),
        "election safety never caught vote_twice in 30 seeds"
    );
}

/// `stale_term_append` (a follower takes a deposed primary's appends) is not
/// reached by the drawn isolations (6–11 s): an isolated primary steps down
/// (lease plus election timeout without a majority) before, or a few hundred
/// ms after, its successor is elected, so its appends of the old term rarely
/// reach a replica of the new one. Seed 6 branched at 19.081417291 s (branch
/// 4, where the explorer first found it) heals the cut inside that window:
/// the unmodified model passes that run, and the bug breaks state machine
/// safety.
#[test]
fn appends_of_a_deposed_primary_break_state_machine_safety() {
    let mut s = Scenario::new(regions(), 6);
    s.branch = vec![overcast_sim::rng::BranchPoint {
        at_ns: 19_081_417_291,
        branch: 4,
    }];
    let clean = run_with(regions(), &s);
    assert!(clean.passed(), "{}", clean.summary());
    s.bugs = vec!["stale_term_append".to_string()];
    let r = run_with(regions(), &s);
    let properties: Vec<&str> = r.violations().iter().map(|v| v.property.as_str()).collect();
    assert!(
        properties.contains(&"state machine safety"),
        "{}",
        r.summary()
    );
}

/// The explorer reaches `stale_term_append` at the default settings, where
/// plain seeds do not: it branches at a successor's election while the old
/// primary is cut off, and the branch heals the cut then. The exploration
/// is fixed by its first seed and number of runs, so its first failure is
/// too; it replays to the same trace, and the same branched run with the
/// bug off passes. Since the replicas' disks came to take faults (failed
/// syncs rebuild a replica, and elections move) its first failure is run 81
/// (seed 6's branch at 19.081 s).
#[test]
fn the_explorer_finds_a_deposed_primary_s_appends_and_its_failure_replays() {
    crate::explored::explorer_finds_and_replays(
        regions(),
        "stale_term_append",
        120,
        &["state machine safety", "linearizability"],
    );
}

/// Measures `stale_term_append` (not in the hunt's table: no seed of the
/// hunt finds it) under plain swarm seeds and under the explorer, for the same
/// wall time on one worker each (`OVERCAST_MEASURE_SECS`, default 120):
/// when each first failed, runs made, goals reached. Not a check: run by
/// hand with `--ignored --nocapture`.
#[test]
#[ignore]
fn measure_stale_term_append_plain_seeds_against_the_explorer() {
    use overcast_harness::explore::{explore, ExploreOptions};
    use std::time::{Duration, Instant};
    let secs: u64 = std::env::var("OVERCAST_MEASURE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let budget = Duration::from_secs(secs);
    let def = regions();
    let make = |seed| {
        let mut s = Scenario::new(def, seed);
        s.swarm = true;
        s.bugs = vec!["stale_term_append".to_string()];
        s
    };
    let goals = def.goals(&def.default_params(0)).unwrap();
    let started = Instant::now();
    let (mut seeds, mut first, mut reached) = (0u64, None, std::collections::BTreeSet::new());
    while started.elapsed() < budget {
        let s = make(seeds);
        let r = overcast_harness::run::run_isolated_with(def, &s);
        for (g, _) in overcast_harness::goals::reached(def, &r) {
            reached.insert(g);
        }
        if !r.passed() && first.is_none() {
            first = Some((seeds, started.elapsed().as_secs_f64(), r.first_problem()));
        }
        seeds += 1;
    }
    eprintln!(
        "plain swarm seeds: {seeds} runs in {:.1} s, goals {} of {}, first failure {first:?}",
        started.elapsed().as_secs_f64(),
        reached.len(),
        goals.len()
    );
    let opts = ExploreOptions {
        runs: None,
        budget: Some(budget),
        seed_base: 0,
        seed_stride: 1,
        jobs: 1,
    };
    let mut first = None;
    let explored = explore(def, &make, &opts, |run, so_far| {
        if !run.run.passed() && first.is_none() {
            first = Some((
                run.index,
                so_far.seconds,
                run.run.scenario.seed,
                run.run.scenario.branch.clone(),
                run.run.first_problem(),
            ));
        }
    });
    eprintln!(
        "explorer: {} runs ({} branched) in {:.1} s, goals {} of {}, first failure {first:?}",
        explored.runs,
        explored.branched,
        explored.seconds,
        explored.goals.goals.iter().filter(|g| g.seeds > 0).count(),
        explored.goals.goals.len()
    );
}

/// What R6's check of run `r` says it judged.
fn r6_note(r: &overcast_harness::run::RunResult) -> String {
    r.checks
        .iter()
        .find(|c| c.judges("R6".into()))
        .expect("R6 is checked")
        .checked
        .note
        .clone()
}

/// A read region being removed from the account (403/1008, SPEC §4.1):
/// not drawn by default, so set here, on both read regions in turn. The
/// unmodified SDK marks the region and reads elsewhere, and every check
/// holds; an SDK that retries the removed region in place breaks R6.
#[test]
fn a_region_being_removed_is_marked_and_read_around() {
    for def in [regions(), occ_replicated()] {
        let mut s = Scenario::new(def, 3);
        s.params["removals"] = serde_json::json!([
            {"region": 1, "at_ms": 4_000, "for_ms": 12_000},
            {"region": 2, "at_ms": 20_000, "for_ms": 12_000},
        ]);
        let clean = run_with(def, &s);
        assert!(clean.passed(), "{}", clean.summary());
        let note = r6_note(&clean);
        assert!(
            note.contains("answered 403/1008"),
            "no read met a removed region: {note}"
        );
        s.bugs = vec!["removed_region_retried".to_string()];
        let r = run_with(def, &s);
        assert!(
            r.violations()
                .iter()
                .any(|v| v.property == "R6" && v.message.contains("403/1008")),
            "{}",
            r.summary()
        );
    }
}

/// The first violation of R6 `bug` gives on a seed below 20 of the regions
/// scenario, as its message.
fn r6_message(bug: &str) -> String {
    (0..20)
        .find_map(|seed| {
            let mut s = Scenario::new(regions(), seed);
            s.bugs = vec![bug.to_string()];
            run_with(regions(), &s)
                .violations()
                .iter()
                .find(|v| v.property == "R6")
                .map(|v| v.message.clone())
        })
        .unwrap_or_else(|| panic!("R6 never caught {bug} in 20 seeds"))
}

#[test]
fn every_wait_of_the_region_rows_is_judged_from_both_sides() {
    // The unmodified model passes (`the_unmodified_model_passes_every_regions_check`,
    // whose R6 note counts the waits judged); each slip breaks its row's bound.
    let note = r6_note(&run_with(regions(), &Scenario::new(regions(), 0)));
    assert!(!note.contains(" 0 waits judged"), "{note}");
    for (bug, says) in [
        ("session_loop_waits_stretched", "404/1002"),
        ("failover_waits_stretched", "allows at most"),
        ("read_fails_over_at_once", "allows no less than"),
    ] {
        let m = r6_message(bug);
        assert!(m.contains(says) && m.contains("it waited"), "{bug}: {m}");
    }
}

/// Each replica mirrors its log on two disks (`replica-0`, `replica-0.b`)
/// and repairs a corrupt copy from the other: within the budget (corrupting
/// faults on at most one of each replica's disks) every run passes, most of
/// them after repairs; past it (both disks of a replica corrupted) such a
/// replica refuses service, and the run passes with the end state not
/// judged, naming the replica that refused, and gives no wrong answer.
#[test]
fn mirrored_replica_logs_survive_a_corrupt_copy_each_and_past_the_budget_give_no_wrong_answer() {
    let (mut repaired, mut refused) = (0, 0);
    within_and_past_budget(
        regions(),
        0..40,
        |seed| seed % 2 == 1,
        |r| {
            assert_eq!(r.within.disks, 10, "two disks for each of five replicas");
            repaired += usize::from(r.within.counters.get("log_repairs").is_some_and(|n| *n > 0));
            let summary = r.past.summary();
            if summary.contains("refused service from") {
                assert!(r.exceeded, "seed {}", r.seed);
                assert!(summary.contains("end state not judged"), "{summary}");
                refused += 1;
            }
        },
    );
    assert!(repaired >= 20, "{repaired} runs repaired a copy");
    assert!(refused > 0, "no replica refused service past the budget");
}
