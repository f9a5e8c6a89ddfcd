//! The `occ` scenario end to end: the unmodified model passes generated
//! scenarios and a range of seeds, a seed replays with the same trace, and one
//! fixed seed's trace summary is pinned as a snapshot.

use overcast_harness::registry::DynScenario;
use overcast_harness::run::run_isolated_with;
use overcast_harness::scenario::Scenario;
use overcast_scenarios::services::occ::check::OccHistory;
use overcast_scenarios::CATALOGUE;
use overcast_sim::check::Outcome;
use overcast_sim::disk::DiskFault;
use overcast_sim::runner::{run_isolated, sweep, SweepOptions};

fn occ() -> &'static dyn DynScenario {
    CATALOGUE.find("occ").expect("occ is registered")
}

fn occ_seed(seed: u64) -> Scenario {
    Scenario::new(occ(), seed)
}
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

proptest! {
    // Bounded for CI; PROPTEST_CASES raises it. Failures are not persisted to
    // a file: a failing case prints its scenario, and `overcast replay` takes it.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(64),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_unmodified_model_passes_generated_occ_scenarios(s in occ().strategy()) {
        let r = run_isolated_with(occ(), &s);
        // Within occ's fault budget some server's disk is never damaged (a
        // write flipped, misdirected or lost), but a generated deployment may
        // keep every item on the damaged one (fewer partitions than
        // servers): it then refuses service by design and the probe's checks
        // have nothing to judge, so they say undecided. That is the one
        // outcome other than a pass the unmodified model may give.
        let damaged = r
            .world
            .disk_faults
            .values()
            .any(|kinds| !DiskFault::corrupting_in(kinds).is_empty());
        prop_assert!(
            r.passed() || (damaged && r.outcome == Outcome::Undecided),
            "scenario failed:\n{}\nscenario: {}",
            r.summary(),
            s.to_json()
        );
        prop_assert!(r.world.unfinished.is_empty());
    }
}

#[test]
fn the_unmodified_model_passes_seeds_0_to_500() {
    let seeds: Vec<u64> = (0..500).collect();
    let opts = SweepOptions {
        progress: false,
        ..SweepOptions::default()
    };
    let results = sweep(
        &seeds,
        &opts,
        |seed| {
            let r = CATALOGUE.run(&occ_seed(seed));
            (r.passed(), r.summary())
        },
        |r| !r.0,
    );
    for (seed, r) in results {
        let (passed, summary) = r.unwrap_or_else(|p| panic!("seed {seed} panicked: {p}"));
        assert!(passed, "seed {seed}: {summary}");
    }
}

#[test]
fn a_seed_replays_with_the_same_trace_hash() {
    for seed in [7, 8] {
        let s = occ_seed(seed);
        let a = run_isolated(|| CATALOGUE.run(&s)).unwrap();
        let b = run_isolated(|| CATALOGUE.run(&s)).unwrap();
        // Also on one thread, one run after the other: nothing may leak between runs.
        let c = run_isolated(|| {
            let _ = CATALOGUE.run(&occ_seed(seed + 100));
            CATALOGUE.run(&s)
        })
        .unwrap();
        assert_eq!(a.trace_hash, b.trace_hash, "seed {seed}");
        assert_eq!(a.trace_hash, c.trace_hash, "seed {seed}");
        assert_eq!(a.history.to_json(), b.history.to_json());
    }
    let other = run_isolated(|| CATALOGUE.run(&occ_seed(9))).unwrap();
    let seven = run_isolated(|| CATALOGUE.run(&occ_seed(7))).unwrap();
    assert_ne!(
        other.trace_hash, seven.trace_hash,
        "different seeds give different runs"
    );
}

#[test]
fn a_saved_plan_replays_exactly() {
    let first = run_isolated(|| CATALOGUE.run(&occ_seed(11))).unwrap();
    // The resolved scenario carries its fault plan: replaying it gives the same run.
    let saved = first.scenario.clone();
    assert!(saved.plan.is_some());
    let again = run_isolated(move || CATALOGUE.run(&saved)).unwrap();
    assert_eq!(first.trace_hash, again.trace_hash);
}

#[test]
fn seed_7_trace_summary() {
    let r = run_isolated(|| CATALOGUE.run(&occ_seed(7))).unwrap();
    let history: OccHistory = serde_json::from_str(&r.history.to_json()).unwrap();
    let ops = &history.ops;
    let count = |op: &str| ops.iter().filter(|o| o.call.op == op).count();
    let summary = format!(
        "ops {} (read {}, put {}, delete {}, head {}, set_metadata {}), unknown {}, retries {}\nworld faults {:?}\nserver transient {:?}\nfirst ops:\n{}\nevents:\n{}\nsimulated ns {}\ntrace {:016x}\nverdict {}",
        ops.len(),
        count("read"),
        count("put"),
        count("delete"),
        count("head"),
        count("set_metadata"),
        r.history.unknown_ops(),
        r.history.retries(),
        r.world.faults,
        r.counters,
        ops.iter().take(6).map(|o| format!("  #{} c{} {} {} {:?} -> {:?}", o.id, o.client, o.call.op, o.key, o.call.body, o.result)).collect::<Vec<_>>().join("\n"),
        r.world.events.iter().map(|e| format!("  {:>12} {}", e.at_ns, e.what)).collect::<Vec<_>>().join("\n"),
        r.world.sim_ns,
        r.trace_hash,
        if r.passed() { "pass" } else { "fail" },
    );
    insta::assert_snapshot!(summary);
}

#[test]
fn a_transport_re_send_after_a_429_is_seen_only_from_the_servers_side() {
    use overcast_model::retry::RetryOptions;
    use overcast_scenarios::services::occ::check::RetryDiscipline;
    use overcast_scenarios::services::occ::retry::RetryFromServers;
    use overcast_sim::check::{Checker, Verdict};
    let mut s = occ_seed(0);
    s.bugs = vec!["transport_retries_throttled".into()];
    let r = run_isolated(move || CATALOGUE.run(&s)).unwrap();
    let history: OccHistory = serde_json::from_str(&r.history.to_json()).unwrap();
    let from_sdk = RetryDiscipline {
        retry: RetryOptions::default(),
        clients: overcast_scenarios::services::occ::OccParams::default().clients,
    }
    .check(&history);
    let from_servers = RetryFromServers {
        retry: RetryOptions::default(),
    }
    .check(&history);
    assert_eq!(from_sdk.verdict(), &Verdict::Held);
    assert!(
        from_servers
            .verdict()
            .violations()
            .iter()
            .any(|v| v.property == "R2"),
        "{:?}",
        from_servers.verdict()
    );
}

/// `occ`'s throttling variant for `seed`.
fn throttled_seed(seed: u64) -> Scenario {
    let mut s = occ_seed(seed);
    overcast_scenarios::services::occ::throttled(&mut s).expect("occ has a throttling variant");
    s
}

#[test]
fn the_throttling_variant_spends_the_429_retry_count_the_429_wait_budget_and_the_410_window_and_passes(
) {
    let mut totals = std::collections::BTreeMap::<String, u64>::new();
    // 0..26: the 30 s wait budget is spent in 5 of seeds 0..60, the first at 25.
    for seed in 0..26 {
        let s = throttled_seed(seed);
        let r = run_isolated(move || CATALOGUE.run(&s)).unwrap();
        assert!(r.passed(), "throttled seed {seed}: {}", r.summary());
        for (name, n) in &r.counters {
            *totals.entry(name.clone()).or_default() += n;
        }
    }
    for name in [
        "storms_429",
        "storms_410",
        "r2_retries_spent",
        "r2_wait_spent",
        "gone_window_spent",
    ] {
        assert!(
            totals.get(name).copied().unwrap_or(0) > 0,
            "{name} stayed at zero over 26 throttled seeds: {totals:?}"
        );
    }
}

#[test]
fn the_retry_bugs_are_still_found_in_the_throttling_variant() {
    for (bug, property) in [
        ("transport_retries_throttled", "R2"),
        ("ignore_retry_after", "R2"),
        ("retry_write_after_timeout", "R1"),
    ] {
        let caught = (0..20).any(|seed| {
            let mut s = throttled_seed(seed);
            s.bugs = vec![bug.into()];
            let r = run_isolated(move || CATALOGUE.run(&s)).unwrap();
            r.violations().iter().any(|v| v.property == property)
        });
        assert!(
            caught,
            "{property} never caught {bug} in 20 throttled seeds"
        );
    }
}

#[test]
fn a_throttled_failure_is_rerun_and_saved_as_throttled() {
    let s = throttled_seed(538);
    let cmd = overcast_harness::saved::run_command(occ(), &s);
    assert!(cmd.ends_with("run occ --seed 538 --throttle"), "{cmd}");
    assert_eq!(
        overcast_harness::saved::failure_stem(occ(), &s),
        "occ-seed538-throttle"
    );
    let plain = occ_seed(538);
    assert!(!overcast_harness::saved::run_command(occ(), &plain).contains("--throttle"));
}

#[test]
fn a_410_backoff_ten_times_too_long_breaks_r3_s_upper_bound() {
    // The unmodified model passes (`the_unmodified_model_passes_seeds_0_to_500`).
    let message = (0..20)
        .find_map(|seed| {
            let mut s = occ_seed(seed);
            s.bugs = vec!["gone_backoff_stretched".into()];
            let r = run_isolated(move || CATALOGUE.run(&s)).unwrap();
            r.violations()
                .iter()
                .find(|v| v.property == "R3")
                .map(|v| v.message.clone())
        })
        .expect("R3 never caught gone_backoff_stretched in 20 seeds");
    assert!(message.contains("allows at most"), "{message}");
}

#[test]
fn the_workload_s_heads_and_metadata_writes_meet_every_answer_of_their_conditions() {
    let r = run_isolated(|| CATALOGUE.run(&occ_seed(0))).unwrap();
    assert!(r.passed(), "{}", r.summary());
    let history: OccHistory = serde_json::from_str(&r.history.to_json()).unwrap();
    let statuses = |op: &str| -> std::collections::BTreeSet<u16> {
        history
            .ops
            .iter()
            .filter(|o| o.call.op == op)
            .filter_map(|o| match &o.result {
                Some(overcast_scenarios::services::occ::history::Outcome::Response {
                    status,
                    ..
                }) => Some(*status),
                _ => None,
            })
            .collect()
    };
    let (head, set_metadata) = (statuses("head"), statuses("set_metadata"));
    for status in [200, 304, 412, 404] {
        assert!(
            head.contains(&status),
            "no HEAD answered {status}: {head:?}"
        );
    }
    for status in [200, 412, 404] {
        assert!(
            set_metadata.contains(&status),
            "no Set Blob Metadata answered {status}: {set_metadata:?}"
        );
    }
}

#[test]
fn the_head_and_metadata_bugs_are_caught_by_their_properties() {
    // The unmodified model passes (`the_unmodified_model_passes_seeds_0_to_500`).
    for (bug, property) in [
        ("metadata_keeps_etag", "E1"),
        ("metadata_keeps_etag", "linearizability"),
        ("head_ignores_if_match", "linearizability"),
    ] {
        let caught = (0..20).any(|seed| {
            let mut s = occ_seed(seed);
            s.bugs = vec![bug.into()];
            let r = run_isolated(move || CATALOGUE.run(&s)).unwrap();
            r.violations().iter().any(|v| v.property == property)
        });
        assert!(caught, "{property} never caught {bug} in 20 seeds");
    }
}

/// The history of `occ` seed `seed` with the bugs `bugs` on.
fn history_of(seed: u64, bugs: &[&str]) -> (OccHistory, bool) {
    let mut s = occ_seed(seed);
    s.bugs = bugs.iter().map(|b| b.to_string()).collect();
    let r = run_isolated(move || CATALOGUE.run(&s)).unwrap();
    let history: OccHistory = serde_json::from_str(&r.history.to_json()).unwrap();
    (history, r.passed())
}

#[test]
fn refused_connects_and_cancelled_calls_reach_the_history_and_pass() {
    use overcast_scenarios::services::occ::history::Outcome as Seen;
    use overcast_sim::history::AttemptResult;
    let (mut resent_write, mut cancelled_unknown, mut cancelled_not_run) = (false, false, false);
    // Calls cancelled between attempts are rare (a few seeds in a hundred):
    // seeds are run until each case has been seen.
    for seed in 0..200 {
        if resent_write && cancelled_unknown && cancelled_not_run {
            break;
        }
        let (h, passed) = history_of(seed, &[]);
        assert!(passed, "seed {seed} failed");
        for o in &h.ops {
            let a = &o.attempts;
            // A write re-sent after a refused connect (allowed: it never left the client).
            resent_write |= o.call.op == "put"
                && a.len() > 1
                && a[..a.len() - 1]
                    .iter()
                    .any(|x| x.result == AttemptResult::NotSent);
            // A write cancelled with its attempt in flight: an unknown outcome.
            cancelled_unknown |= o.call.op == "put"
                && o.call.cancel_after_ms.is_some()
                && o.result.is_none()
                && a.last().map(|x| &x.result) == Some(&AttemptResult::Cancelled);
            // A call cancelled between attempts: recorded as not run.
            cancelled_not_run |= o.call.cancel_after_ms.is_some()
                && o.result == Some(Seen::CancelledNotRun)
                && a.last().map(|x| &x.result) != Some(&AttemptResult::Cancelled);
        }
    }
    assert!(resent_write, "no write re-sent after a refused connect");
    assert!(cancelled_unknown, "no write cancelled in flight");
    assert!(cancelled_not_run, "no call cancelled between attempts");
}

#[test]
fn a_refused_write_told_unknown_breaks_r3() {
    // The unmodified model passes (`the_unmodified_model_passes_seeds_0_to_500`).
    let message = (0..10)
        .find_map(|seed| {
            let mut s = occ_seed(seed);
            s.bugs = vec!["not_sent_taken_as_unknown".into()];
            let r = run_isolated(move || CATALOGUE.run(&s)).unwrap();
            r.violations()
                .iter()
                .find(|v| v.property == "R3")
                .map(|v| v.message.clone())
        })
        .expect("R3 never caught not_sent_taken_as_unknown in 10 seeds");
    assert!(message.contains("not sent"), "{message}");
}

#[test]
fn a_read_sent_after_its_cancel_breaks_r1_on_both_sides() {
    use overcast_model::retry::RetryOptions;
    use overcast_scenarios::services::occ::check::RetryDiscipline;
    use overcast_scenarios::services::occ::retry::RetryFromServers;
    use overcast_sim::check::Checker;
    let r1 = |c: overcast_sim::check::Checked| {
        c.verdict()
            .violations()
            .iter()
            .any(|v| v.property == "R1" && v.message.contains("cancelled"))
    };
    let (mut from_sdk, mut from_servers) = (false, false);
    for seed in 0..10 {
        let (h, _) = history_of(seed, &["retry_after_cancel"]);
        from_sdk |= r1(RetryDiscipline {
            retry: RetryOptions::default(),
            clients: overcast_scenarios::services::occ::OccParams::default().clients,
        }
        .check(&h));
        from_servers |= r1(RetryFromServers {
            retry: RetryOptions::default(),
        }
        .check(&h));
    }
    assert!(from_sdk, "the SDK's log never showed a send after a cancel");
    assert!(from_servers, "the servers never saw a send after a cancel");
}
