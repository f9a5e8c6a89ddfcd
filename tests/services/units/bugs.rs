//! Tests of `overcast_scenarios::bugs`.
use overcast_model::bugs::ModelBugs;
use overcast_scenarios::bugs::*;

#[test]
fn every_listed_bug_has_a_switch_a_scenario_and_a_property() {
    for b in BUGS.iter().chain(EXPLORER_BUGS) {
        assert!(
            ModelBugs::default().set(b.name),
            "{}: the model has no switch of that name",
            b.name
        );
        assert!(
            !b.scenarios.is_empty() && !b.caught_by.is_empty(),
            "{}",
            b.name
        );
        for s in b.scenarios {
            assert!(
                overcast_scenarios::CATALOGUE.find(s).is_ok(),
                "{}: scenario {s}",
                b.name
            );
        }
    }
}
