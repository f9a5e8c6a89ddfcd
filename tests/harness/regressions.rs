//! Every saved failure in scenarios/regressions/ replays with its recorded
//! outcome: the same verdict and the same first property. A changed trace
//! hash alone is reported, not failed (it changes whenever the model's
//! timing does); `overcast replay --record FILE` re-records it.

use overcast_harness::run::run_isolated_with;
use overcast_harness::saved::SavedOutcome;
use overcast_scenarios::CATALOGUE;

#[test]
fn every_regression_replays_with_its_recorded_outcome() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/regressions");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("scenarios/regressions exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no regression files in {dir}");
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let loaded = CATALOGUE
            .load(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            loaded.note.is_none(),
            "{}: an old format ({:?}); re-record it",
            path.display(),
            loaded.note
        );
        let expected = loaded
            .outcome
            .unwrap_or_else(|| panic!("{}: no recorded outcome", path.display()));
        let def = CATALOGUE
            .find(&loaded.scenario.name)
            .expect("a registered scenario");
        let r = run_isolated_with(def, &loaded.scenario);
        let now = SavedOutcome::of(&r);
        assert!(
            expected.reproduced_by(&now),
            "{} replayed differently: saved {expected:?}, now {now:?}",
            path.display()
        );
        if now.trace_hash != expected.trace_hash {
            eprintln!(
                "{}: same outcome, trace hash changed ({} then, {} now)",
                path.display(),
                expected.trace_hash,
                now.trace_hash
            );
        }
    }
}
