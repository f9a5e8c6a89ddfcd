//! The `leases` scenario end to end: each lease checker catches the seeded bug
//! it is meant for and none fires on the unmodified model; the holders'
//! exclusivity (L9) holds within the library's stated clock bound and is
//! broken beyond it (the check is not vacuous); a seed replays exactly.

use crate::budget::within_and_past_budget;
use overcast_harness::registry::DynScenario;
use overcast_harness::run::run_with;
use overcast_harness::scenario::Scenario;
use overcast_scenarios::CATALOGUE;
use overcast_sim::faults::FaultBudget;

fn leases() -> &'static dyn DynScenario {
    CATALOGUE.find("leases").expect("leases is registered")
}

fn first_seed_breaking(s: impl Fn(u64) -> Scenario, property: &str, seeds: u64) -> Option<u64> {
    (0..seeds).find(|&seed| {
        run_with(leases(), &s(seed))
            .violations()
            .iter()
            .any(|v| v.property == property)
    })
}

#[test]
fn each_lease_checker_catches_its_bug_and_none_fires_on_the_unmodified_model() {
    for (bug, property) in [
        ("lease_expiry_on_client_clock", "L9"),
        ("lease_trust_full_duration", "L9"),
        ("break_ignores_period", "L4"),
        ("renew_after_write", "L5"),
        ("write_without_lease_check", "L2"),
        ("acquire_not_idempotent_retry", "L5"),
        ("lease_id_reuse", "L7"),
        ("container_delete_ignores_lease", "L8"),
        ("renew_refused_when_expired", "L5"),
        ("write_blocked_by_lapsed_lease", "L2"),
        ("metadata_ignores_lease", "L2"),
        ("metadata_keeps_etag", "E1"),
    ] {
        let with_bug = |seed| {
            let mut s = Scenario::new(leases(), seed);
            s.bugs = vec![bug.to_string()];
            s
        };
        assert!(
            first_seed_breaking(with_bug, property, 300).is_some(),
            "{property} never caught {bug} in 300 seeds"
        );
    }
    for seed in 0..100 {
        let r = run_with(leases(), &Scenario::new(leases(), seed));
        assert!(r.passed(), "seed {seed}: {}", r.summary());
    }
}

/// Swarm mode draws many clock steps of up to 3 s per node and drift up to
/// 500 ppm; the scenario clamps them to the holders' bound unless told not to.
fn swarm(seed: u64, beyond: bool) -> Scenario {
    let mut s = Scenario::new(leases(), seed);
    s.swarm = true;
    s.params["skew_beyond_bound"] = serde_json::Value::Bool(beyond);
    s
}

#[test]
fn holders_stay_exclusive_within_their_clock_bound_and_not_beyond_it() {
    let beyond = first_seed_breaking(|seed| swarm(seed, true), "L9", 400);
    let seed = beyond.expect("L9 never broken with clocks beyond the bound in 400 seeds");
    // The same seed, clocks clamped to the bound: L9 holds.
    let r = run_with(leases(), &swarm(seed, false));
    assert!(
        !r.violations().iter().any(|v| v.property == "L9"),
        "seed {seed} within the bound: {}",
        r.summary()
    );
}

#[test]
fn an_l9_violation_names_both_holders_the_overlap_and_the_clocks() {
    let mut s = Scenario::new(leases(), 0);
    s.bugs = vec!["lease_expiry_on_client_clock".into()];
    let found = (0..300).find_map(|seed| {
        s.seed = seed;
        let r = run_with(leases(), &s);
        r.violations()
            .iter()
            .find(|v| v.property == "L9")
            .map(|v| v.message.clone())
    });
    let m = found.expect("an L9 violation");
    for words in [
        "believed it held lease",
        "true (",
        "on its clock, offset",
        "acquired it at",
        "Both believed they held it from",
    ] {
        assert!(m.contains(words), "{words:?} missing from: {m}");
    }
}

#[test]
fn a_leases_seed_replays_with_the_same_trace() {
    let a = run_with(leases(), &Scenario::new(leases(), 7));
    let b = run_with(leases(), &Scenario::new(leases(), 7));
    assert_eq!(a.trace_hash, b.trace_hash);
    assert!(a.passed() && b.passed(), "{}", a.summary());
}

/// `delete_keeps_lease` (Delete Blob leaves the blob's lease) needs a leased
/// blob deleted, which no plain run of `leases` does: its clients delete a
/// blob they lease only on the explorer's branches. The exploration from
/// seed 0 finds it within 24 runs (a put without an id refused on the new
/// blob, or an acquire with another id refused); the branched failure
/// replays to the same trace and passes with the bug off.
#[test]
fn the_explorer_finds_a_lease_kept_by_a_deleted_blob_and_its_failure_replays() {
    let run = crate::explored::explorer_finds_and_replays(
        leases(),
        "delete_keeps_lease",
        24,
        &["L2", "L5", "L6"],
    );
    eprintln!("first failure at run {run}");
}

/// Plain runs of `leases` never delete a blob, so `delete_keeps_lease`
/// leaves their traces as the unmodified model's: no seed can see it.
#[test]
fn no_plain_seed_deletes_a_leased_blob() {
    for seed in 0..8 {
        let plain = Scenario::new(leases(), seed);
        let mut with_bug = plain.clone();
        with_bug.bugs = vec!["delete_keeps_lease".to_string()];
        let (a, b) = (run_with(leases(), &plain), run_with(leases(), &with_bug));
        assert_eq!(a.trace_hash, b.trace_hash, "seed {seed}");
        assert!(b.passed(), "{}", b.summary());
    }
}

/// The seeds of the coverage test, the size CI runs (about 9 s on two
/// cores): seeds 0..300 leave `write.B` (expired) at zero, 0..500 none.
const COVERAGE_SEEDS: u64 = 500;

#[test]
fn the_default_sweep_reaches_every_reachable_cell_of_the_lease_tables() {
    use overcast_harness::coverage::over_seeds;
    use overcast_scenarios::services::leases::coverage::{EITHER_STATE, ROWS};
    let def = leases();
    let seeds: Vec<u64> = (0..COVERAGE_SEEDS).collect();
    let (coverage, failed) = over_seeds(def, &seeds, 2, |seed| Scenario::new(def, seed))
        .expect("leases has coverage tables");
    eprintln!("{}", coverage.table());
    assert!(failed.is_empty(), "seeds that did not pass: {failed:?}");
    assert_eq!(coverage.cells_at_zero(), Vec::<(&str, &str)>::new());
    // A cell out of reach by design is never counted: the reference has no
    // current id where there is no lease.
    for r in ROWS {
        for (cell, _) in r.unreachable_cells {
            assert_eq!(coverage.cell_count(r.id, cell), 0, "{} {cell}", r.id);
        }
    }
    // Every placed call is in a cell of its row, or between two states.
    let odd: Vec<_> = coverage
        .cells
        .keys()
        .filter(|(row, cell)| {
            let r = ROWS.iter().find(|r| r.id == *row).expect("a row of ROWS");
            !r.cells.contains(&cell.as_str()) && cell != EITHER_STATE
        })
        .collect();
    assert!(odd.is_empty(), "{odd:?}");
}

#[test]
fn a_saved_file_without_the_new_client_kinds_loads_and_the_default_mix_holds_infinite_leases() {
    // Saved files without the weights of the infinite holds and the
    // break-and-take rounds load with them at 0 (and their kinds are drawn
    // last, so such a file's runs draw as before them).
    let def = leases();
    let mut s = Scenario::new(def, 3);
    s.params["mix"]
        .as_object_mut()
        .expect("a mix")
        .retain(|k, _| k != "hold_infinite" && k != "break_and_take");
    s.params
        .as_object_mut()
        .expect("parameters")
        .remove("infinite_hold_ms");
    def.check_params(&s.params)
        .expect("an old file's parameters load");
    let old = run_with(def, &s);
    let new = run_with(def, &Scenario::new(def, 3));
    assert!(old.passed() && new.passed());
    assert_ne!(
        old.trace_hash, new.trace_hash,
        "the default mix has the new kinds"
    );
    let ops = |r: &overcast_harness::run::RunResult, op: &str| {
        r.history_as::<overcast_scenarios::services::leases::history::LeaseHistory>()
            .expect("a leases history")
            .ops
            .iter()
            .filter(|o| o.call.op == op && o.call.duration_s == Some(-1))
            .count()
    };
    assert!(
        ops(&new, "acquire") > ops(&old, "acquire"),
        "infinite acquires"
    );
}

/// The lease server mirrors its log on two disks (`server-0`, `server-0.b`)
/// and repairs a corrupt copy from the other: within the budget (corrupting
/// faults on one disk at most) every run passes, many of them with a disk
/// that took such faults; past it (both disks corrupted) a run passes or
/// fails loudly, and never gives a wrong answer.
#[test]
fn the_mirrored_log_survives_one_corrupt_disk_and_past_the_budget_gives_no_wrong_answer() {
    let (mut corrupted, mut past) = (0, 0);
    within_and_past_budget(
        leases(),
        0..80,
        |seed| seed % 2 == 1,
        |r| {
            assert_eq!(r.within.disks, 2, "two disks");
            corrupted +=
                usize::from(!FaultBudget::corrupted_disks(&r.within.world.disk_faults).is_empty());
            past += usize::from(r.exceeded);
        },
    );
    assert!(corrupted >= 10, "{corrupted} runs had a corrupted disk");
    assert!(past > 0, "no run went past the budget");
}

/// `repair_skips_checksum`: recovery keeps the first copy of the mirrored
/// log without checking its payloads, so a record flipped on it is served
/// (and copied over the good copy). Seed 154 of the default mix puts the
/// corruption on the first copy; the unmodified model passes the same seed
/// (and every seed of the sweeps in `docs/src/lab/fault-budgets.md`).
#[test]
fn a_repair_that_trusts_the_first_copy_unchecked_is_caught() {
    assert_caught_where_the_model_passes("repair_skips_checksum", 154);
}

/// Runs leases seed `seed` without bugs (it must pass), then with `bug` on:
/// the first violation is of a property the bug table says catches it.
fn assert_caught_where_the_model_passes(bug: &str, seed: u64) {
    let info = overcast_scenarios::bugs::find(bug).expect("in the bug table");
    let mut s = Scenario::new(leases(), seed);
    let r = run_with(leases(), &s);
    assert!(r.passed(), "{}", r.summary());
    s.bugs = vec![bug.into()];
    let r = run_with(leases(), &s);
    let v = r.violations();
    assert!(!v.is_empty(), "{}", r.summary());
    assert!(
        info.caught_by.contains(&v[0].property.as_str()),
        "{}",
        r.summary()
    );
}

/// `mirror_ack_after_one_copy`: a reply waits only for the first copy's
/// sync, so a crash cuts acknowledged records from the second copy and a
/// flip on the first then loses them from both (seed 67: the first copy is
/// corrupt at its first record after the crash at 13.4 s, and recovery keeps
/// the 22 records the second copy had). The unmodified model passes the
/// same seed, and the sweeps in `docs/src/lab/fault-budgets.md`.
#[test]
fn a_reply_that_waits_for_one_copy_only_is_caught() {
    assert_caught_where_the_model_passes("mirror_ack_after_one_copy", 67);
}
