//! Every saved failure in scenarios/regressions/ replays with its recorded
//! outcome: the same verdict, the same first property, the same trace.

use overcast_scenarios::run::run;
use overcast_scenarios::saved::{SavedOutcome, SavedRun};
use overcast_sim::runner::run_isolated;

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
        let (scenario, expected) =
            SavedRun::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let expected =
            expected.unwrap_or_else(|| panic!("{}: no recorded outcome", path.display()));
        let r = run_isolated(move || run(&scenario)).expect("no panic");
        assert_eq!(
            SavedOutcome::of(&r),
            expected,
            "{} replayed differently",
            path.display()
        );
    }
}
