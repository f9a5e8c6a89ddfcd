//! The bug hunt: every seeded bug of the table is caught within its cap, by
//! one of the properties its row names. This is the test that proves the
//! harness can fail.

use overcast_harness::hunt::{hunt, hunt_scenario};
use overcast_harness::run::run_with;
use overcast_harness::scenario::Scenario;
use overcast_scenarios::bugs::BUGS;
use overcast_scenarios::kit::durability::D1;
use overcast_scenarios::CATALOGUE;
use overcast_sim::disk::DiskFault;

/// Seeds each bug may take before the hunt counts as failed.
const CAP: u64 = 200;

#[test]
fn every_seeded_bug_is_caught_by_a_property_its_row_names() {
    let jobs = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let mut missed = Vec::new();
    for b in BUGS {
        let def = CATALOGUE
            .find(b.scenarios[0])
            .expect("a registered scenario");
        let h = hunt(b.name, def, CAP, jobs);
        eprintln!(
            "{:<28} found={} property={:?} seeds={} seconds={:.2}",
            h.bug, h.found, h.property, h.seeds, h.seconds
        );
        if !h.found {
            missed.push(b.name);
            continue;
        }
        let property = h.property.map_or("", |p| p.as_str());
        assert!(
            b.caught_by.contains(&property),
            "{} was caught by {property}, expected one of {:?}",
            b.name,
            b.caught_by
        );
    }
    assert!(
        missed.is_empty(),
        "bugs not caught within {CAP} seeds: {missed:?}"
    );
}

/// Every checker is shown to catch a seeded bug end to end, not only the one
/// reported first: the run lists every broken property.
#[test]
fn each_checker_catches_its_bug() {
    let occ = CATALOGUE.find("occ").unwrap();
    for (bug, property) in [
        ("etag_reuse", "E1"),
        ("retry_write_after_timeout", "R1"),
        ("not_sent_taken_as_unknown", "R3"),
        ("retry_after_cancel", "R1"),
        ("ignore_retry_after", "R2"),
        ("retry_after_stretched", "R2"),
        ("transport_retries_throttled", "R2"),
        ("skip_if_match", "linearizability"),
        ("ack_before_sync", "linearizability"),
        ("ack_before_sync", "D1"),
        ("group_commit_off_by_one", "D1"),
        ("no_dedup", "linearizability"),
        ("retry_fsync_after_error", "linearizability"),
        ("retry_fsync_after_error", "D1"),
        ("skip_crc_on_replay", "linearizability"),
        ("torn_tail_as_end", "linearizability"),
        ("dedup_without_session", "linearizability"),
        ("rmw_blind_fallback", "increments"),
        ("same_body_keeps_etag", "E1"),
        ("replace_answers_200", "linearizability"),
        ("restart_drops_partition", "liveness"),
        ("last_modified_rounded", "linearizability"),
    ] {
        let caught = (0..200).any(|seed| {
            run_with(occ, &hunt_scenario(occ, seed, bug))
                .violations()
                .iter()
                .any(|v| v.property == property)
        });
        assert!(caught, "{property} never caught {bug} in 200 seeds");
    }
    // And none of them fires on the unmodified model.
    for seed in 0..50 {
        let r = run_with(occ, &Scenario::new(occ, seed));
        assert!(r.passed(), "seed {seed}: {}", r.summary());
    }
}

/// The duplicated and reordered datagrams and the disk faults (the lying disk
/// included) are on in the `storage` profile and in swarm mode; no check
/// fires on the unmodified model, and the faults really happened. A
/// misdirected write is the rarest: of seeds 0..200 only swarm seed 67
/// injects one.
#[test]
fn the_checks_stay_quiet_on_the_unmodified_model_with_the_new_faults_on() {
    let occ = CATALOGUE.find("occ").unwrap();
    let mut injected = std::collections::BTreeMap::<String, u64>::new();
    for seed in 0..68 {
        let storage =
            overcast_harness::scenario::with_profile(occ, Scenario::new(occ, seed), "storage")
                .unwrap();
        let mut swarm = Scenario::new(occ, seed);
        swarm.swarm = true;
        for s in [storage, swarm] {
            let r = run_with(occ, &s);
            assert!(r.passed(), "seed {seed} swarm={}: {}", s.swarm, r.summary());
            for (k, n) in r.world.faults.iter().chain(&r.counters) {
                *injected.entry(k.clone()).or_default() += n;
            }
        }
    }
    let disk_kinds = DiskFault::ALL.map(DiskFault::name);
    for kind in disk_kinds.into_iter().chain([
        "duplicate",
        "reorder",
        "duplicates_answered",
        "unavailable_startups",
    ]) {
        assert!(
            injected.get(kind).copied().unwrap_or(0) > 0,
            "{kind}: {injected:?}"
        );
    }
}

/// Swarm mode is not weaker than the default mix on the crash class: the
/// bugs that need a server crash are hunted down in swarm mode within as
/// many seeds as under the default mix, and a fixed block of seeds catches
/// them in swarm mode about as often as the chance that a swarm seed has
/// crashes on allows (3 in 4; it was 1 in 4 with losses drawn apart).
#[test]
fn swarm_mode_finds_the_crash_dependent_bugs_within_as_many_seeds_as_the_default_mix() {
    use overcast_harness::hunt::{hunt_both, hunt_scenario_in};
    let jobs = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let occ = CATALOGUE.find("occ").unwrap();
    for bug in ["ack_before_sync", "restart_drops_partition"] {
        let both = hunt_both(bug, occ, CAP, jobs);
        assert!(both.default.found && both.swarm.found, "{bug}: {both:?}");
        assert!(
            both.swarm.seeds <= both.default.seeds,
            "{bug}: swarm took {} seeds, default {}",
            both.swarm.seeds,
            both.default.seeds
        );
        // Caught by what a crash exposes, not by D1, which judges every
        // run's record of acknowledgements and syncs, crash or none.
        let caught = |swarm: bool| {
            (0..40)
                .filter(|seed| {
                    run_with(occ, &hunt_scenario_in(occ, *seed, bug, swarm))
                        .violations()
                        .iter()
                        .any(|v| v.property != D1.id)
                })
                .count()
        };
        let (default, swarm) = (caught(false), caught(true));
        eprintln!("{bug}: seeds 0..40 caught by default {default}, by swarm {swarm}");
        assert!(
            swarm as f64 >= 0.6 * default as f64,
            "{bug}: swarm caught {swarm} of 40 seeds, default {default}"
        );
    }
}

/// The seed-86 class (swarm seed 275 since the client came to see refused
/// connects and the disk to keep its faults on their records: the first of
/// the 4 of swarm seeds 0..3000 that fail loudly past the budget): swarm mode drew storage corruption for both of
/// occ's servers, one found its log corrupt and refused, the other's lying
/// disk lost acknowledged writes, and the probe and the increments had
/// nothing left to judge. Within occ's fault budget
/// (corruption on one server's disk) the run passes; past it
/// (`--beyond-budget`) the same plan as before ends failed loudly, a pass
/// of that experiment, and a checker's undecided verdict within the budget
/// stays undecided.
#[test]
fn a_run_past_the_fault_budget_fails_loudly_and_within_it_is_judged() {
    use overcast_sim::check::Outcome;
    let occ = CATALOGUE.find("occ").unwrap();
    let mut s = Scenario::new(occ, 275);
    s.swarm = true;
    let within = run_with(occ, &s);
    assert_eq!(within.outcome, Outcome::Passed, "{}", within.summary());
    let corrupt = within.scenario.plan.as_ref().unwrap().corrupt_disks.clone();
    assert_eq!(corrupt.map(|d| d.len()), Some(1));
    s.beyond_budget = true;
    let beyond = run_with(occ, &s);
    assert_eq!(
        beyond.outcome,
        Outcome::FailedLoudly,
        "{}",
        beyond.summary()
    );
    assert!(beyond.outcome.passes() && beyond.outcome.exit_code() == 0);
    assert!(beyond.violations().is_empty());
    // The same run without a budget to exceed is undecided, as before.
    s.budget = None;
    let unbudgeted = run_with(occ, &s);
    assert_eq!(unbudgeted.outcome, Outcome::Undecided);
    assert_eq!(unbudgeted.trace_hash, beyond.trace_hash);
}

/// D1 judges the record every node with a log keeps of its syncs and
/// acknowledgements, in every scenario (each has one: a server's WAL or a
/// replica's copies). On the unmodified model it holds and has judged
/// something (acknowledgements, syncs); every bug that lets an
/// acknowledgement leave before its sync is caught by D1 itself, in every
/// scenario it belongs to, within a few seeds: the two whose loss only a
/// crash in the 1–3 ms before the sync would show (an early release inside
/// group commit, a replica acknowledging before its own sync), and the
/// older ones the other checks catch only when a crash exposes them.
#[test]
fn d1_catches_every_acknowledgement_before_its_sync_in_every_scenario_with_a_log() {
    for def in CATALOGUE.scenarios {
        for seed in 0..3 {
            let r = run_with(*def, &Scenario::new(*def, seed));
            let d1 = r
                .checks
                .iter()
                .find(|c| c.judges(D1.id))
                .unwrap_or_else(|| panic!("{} judges D1", def.name()));
            assert!(
                d1.checked.verdict().violations().is_empty() && !d1.checked.partly_judged,
                "{} seed {seed}: {}",
                def.name(),
                r.summary()
            );
            let acks: u64 = d1
                .checked
                .note
                .split(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            assert!(
                acks > 0,
                "{} seed {seed}: D1 judged {}",
                def.name(),
                d1.checked.note
            );
        }
    }
    for bug in [
        "group_commit_off_by_one",
        "replica_ack_before_sync",
        "ack_before_sync",
        "retry_fsync_after_error",
        "commit_before_quorum",
    ] {
        let info = overcast_scenarios::bugs::find(bug).expect("in the bug table");
        assert!(info.caught_by.contains(&"D1"), "{bug}");
        for name in info.scenarios {
            let def = CATALOGUE.find(name).expect("registered");
            let caught = (0..20).find(|seed| {
                run_with(def, &hunt_scenario(def, *seed, bug))
                    .violations()
                    .iter()
                    .any(|v| v.property == D1.id)
            });
            assert!(
                caught.is_some(),
                "D1 never caught {bug} in {name} in 20 seeds"
            );
        }
    }
}
