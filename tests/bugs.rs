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
