//! The bug hunt: every seeded bug is caught within its cap, by the property
//! it breaks. This is the test that proves the harness can fail.

use overcast_scenarios::bugs::BUGS;
use overcast_scenarios::hunt::hunt;

/// Seeds each bug may take before the hunt counts as failed.
const CAP: u64 = 200;

#[test]
fn every_seeded_bug_is_caught() {
    let jobs = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let mut missed = Vec::new();
    for b in BUGS {
        let h = hunt(b.name, b.scenario, CAP, jobs);
        eprintln!(
            "{:<28} found={} property={:?} seeds={} seconds={:.2}",
            h.bug, h.found, h.property, h.seeds, h.seconds
        );
        if !h.found {
            missed.push(b.name);
            continue;
        }
        let property = h.property.unwrap_or_default();
        let expected: &[&str] = match b.name {
            "skip_if_match" | "ack_before_sync" => &["linearizability"],
            "etag_reuse" => &["linearizability", "E1"],
            "retry_write_after_timeout" => &["linearizability", "R1"],
            "ignore_retry_after" => &["R2"],
            other => panic!("no expectation written for bug {other}"),
        };
        assert!(
            expected.contains(&property.as_str()),
            "{} was caught by {property}, expected one of {expected:?}",
            b.name
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
    use overcast_scenarios::run::run;
    use overcast_scenarios::scenario::Scenario;
    for (bug, property) in [
        ("etag_reuse", "E1"),
        ("retry_write_after_timeout", "R1"),
        ("ignore_retry_after", "R2"),
        ("skip_if_match", "linearizability"),
        ("ack_before_sync", "linearizability"),
    ] {
        let caught = (0..200).any(|seed| {
            let mut s = Scenario::occ(seed);
            s.bugs = vec![bug.to_string()];
            run(&s).violations.iter().any(|v| v.property == property)
        });
        assert!(caught, "{property} never caught {bug} in 200 seeds");
    }
    // And none of them fires on the unmodified model.
    for seed in 0..50 {
        let r = run(&Scenario::occ(seed));
        assert!(r.violations.is_empty(), "seed {seed}: {:?}", r.violations);
    }
}
