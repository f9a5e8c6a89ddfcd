//! Reachability goals on the catalogue: every scenario declares at least ten
//! goals with meanings and unique ids, its reference page lists them, each
//! is reached within the scenario's default sweep of a few dozen seeds, and
//! counting them leaves a run's trace as it was.

use overcast_harness::goals::{self, GoalId};
use overcast_harness::registry::DynScenario;
use overcast_harness::run::run_with;
use overcast_harness::scenario::Scenario;
use overcast_scenarios::CATALOGUE;
use overcast_sim::runner::SweepOptions;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The seeds each scenario's goals must all be reached within (`0..N`).
const SEEDS: &[(&str, u64)] = &[
    ("occ", 40),
    ("leases", 120),
    ("cosmos", 40),
    ("search", 40),
    ("queues", 40),
    ("feed", 40),
    ("regions", 30),
    ("occ-replicated", 30),
];

fn every_scenario() -> impl Iterator<Item = &'static dyn DynScenario> {
    CATALOGUE.names().map(|n| CATALOGUE.find(n).unwrap())
}

fn goals_of(def: &dyn DynScenario) -> Vec<goals::DynGoal> {
    def.goals(&def.default_params(0)).unwrap()
}

#[test]
fn every_scenario_has_ten_goals_with_meanings_and_unique_ids() {
    for def in every_scenario() {
        let goals = goals_of(def);
        assert!(
            goals.len() >= 10,
            "{} has {} goals",
            def.name(),
            goals.len()
        );
        let mut ids = BTreeSet::new();
        for g in &goals {
            assert!(ids.insert(g.id), "{}: goal {} twice", def.name(), g.id);
            assert!(
                g.meaning.ends_with('.') && g.meaning.len() > 20,
                "{}: goal {} needs a one-sentence meaning",
                def.name(),
                g.id
            );
            assert!(
                g.id.as_str()
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{}: goal id {} is not kebab-case",
                def.name(),
                g.id
            );
        }
    }
}

#[test]
fn every_goal_is_reached_within_its_scenarios_default_sweep() {
    let names: BTreeSet<&str> = CATALOGUE.names().collect();
    let swept: BTreeSet<&str> = SEEDS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, swept, "every scenario has its number of seeds");
    let opts = SweepOptions {
        progress: false,
        ..SweepOptions::default()
    };
    let mut never: Vec<String> = Vec::new();
    for (name, n) in SEEDS {
        let def = CATALOGUE.find(name).unwrap();
        let seeds: Vec<u64> = (0..*n).collect();
        let started = std::time::Instant::now();
        let tally = goals::sweep(def, &seeds, &opts, |seed| Scenario::new(def, seed)).unwrap();
        eprintln!(
            "{}({:.1} s)",
            tally.render(),
            started.elapsed().as_secs_f64()
        );
        assert_eq!(tally.runs, *n);
        // Goals of steps only the explorer's branches take: no seed may
        // reach them (plain runs trace as before), and
        // `every_branch_only_goal_is_reached_by_a_short_exploration` checks
        // that branches do.
        let branch_only: BTreeSet<String> = def
            .goals(&def.default_params(0))
            .unwrap()
            .iter()
            .filter(|g| g.branch_only)
            .map(|g| g.id.to_string())
            .collect();
        for g in tally.goals.iter().filter(|g| branch_only.contains(&g.id)) {
            assert_eq!(g.seeds, 0, "{name}: {} reached by a plain seed", g.id);
        }
        never.extend(
            tally
                .unreached()
                .iter()
                .filter(|g| !branch_only.contains(&g.id))
                .map(|g| format!("{name}: {} ({}) in seeds 0..{n}", g.id, g.meaning)),
        );
    }
    assert!(
        never.is_empty(),
        "goals no seed reached:\n{}",
        never.join("\n")
    );
}

/// Every goal marked [`overcast_harness::goals::Goal::branch_only`] is
/// reached within 24 runs of an exploration from seed 0 (its branches take
/// the steps plain runs do not).
#[test]
fn every_branch_only_goal_is_reached_by_a_short_exploration() {
    use overcast_harness::explore::{explore, ExploreOptions};
    let mut checked = 0;
    for def in CATALOGUE.scenarios {
        let goals = def.goals(&def.default_params(0)).unwrap();
        let wanted: BTreeSet<String> = goals
            .iter()
            .filter(|g| g.branch_only)
            .map(|g| g.id.to_string())
            .collect();
        if wanted.is_empty() {
            continue;
        }
        let opts = ExploreOptions::from_seed_zero(24, 2);
        let explored = explore(*def, &|seed| Scenario::new(*def, seed), &opts, |_, _| {});
        for g in &explored.goals.goals {
            if wanted.contains(&g.id) {
                assert!(g.seeds > 0, "{}: {} unreached in 24 runs", def.name(), g.id);
                checked += 1;
            }
        }
    }
    assert!(checked >= 2, "the branch-only goals of leases and cosmos");
}

#[test]
fn a_goal_stays_unreached_where_the_workload_cannot_go() {
    // Without plain clients nobody deletes the container or writes without
    // a lease id; the holders still contend.
    let def = CATALOGUE.find("leases").unwrap();
    let mut s = Scenario::new(def, 1);
    s.params["clients"] = 0.into();
    let r = run_with(def, &s);
    let reached = goals::reached(def, &r);
    let ids: BTreeSet<GoalId> = reached.iter().map(|(id, _)| *id).collect();
    for absent in [
        "container-delete-under-lease",
        "write-without-lease-refused",
    ] {
        assert!(
            !ids.contains(&GoalId::new(absent)),
            "{absent} reached without clients: {reached:?}"
        );
    }
    assert!(ids.contains(&GoalId::new("holder-time-up")), "{reached:?}");
    // A run the harness could not carry out reaches nothing.
    s.params["holders"] = "none".into();
    let failed = run_with(def, &s);
    assert!(goals::reached(def, &failed).is_empty());
}

#[test]
fn counting_goals_leaves_the_trace_as_it_was() {
    for def in every_scenario() {
        for seed in [0, 1] {
            let s = Scenario::new(def, seed);
            let r = run_with(def, &s);
            let before = r.history.trace_hash();
            let reached = goals::reached(def, &r);
            assert!(!reached.is_empty(), "{} seed {seed}", def.name());
            assert_eq!(r.history.trace_hash(), before);
            assert_eq!(run_with(def, &s).trace_hash, r.trace_hash);
            // The page section lists every goal, reached or not.
            let Some(overcast_sim::timeline::Section::Text { text, .. }) =
                goals::section(def, &r.scenario, &*r.history)
            else {
                panic!("{} has a goals section", def.name())
            };
            for g in goals_of(def) {
                assert!(text.contains(g.id.as_str()), "{}: {}", def.name(), g.id);
            }
        }
    }
}

/// The reference page of a scenario.
fn page(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("docs/src/reference/scenarios")
        .join(format!("{name}.md"))
}

/// The heading of the goals section of a reference page.
const HEADING: &str = "## Goals";

/// The goals section of a scenario's page as the code says it should read.
fn goals_section(def: &dyn DynScenario) -> String {
    let mut s = format!(
        "{HEADING}\n\nStates this scenario's runs should sometimes reach, counted on each finished run \
         (`overcast sweep {} --goals` says which seeds reached each; \
         `tests/harness/goals.rs` requires every one within {} seeds):\n\n\
         | goal | reached when |\n|---|---|\n",
        def.name(),
        SEEDS
            .iter()
            .find(|(n, _)| *n == def.name())
            .map_or(0, |(_, n)| *n)
    );
    for g in goals_of(def) {
        s += &format!("| `{}` | {} |\n", g.id, g.meaning);
    }
    s
}

#[test]
fn each_scenario_page_lists_its_goals() {
    let bless = std::env::var_os("OVERCAST_BLESS").is_some();
    for def in every_scenario() {
        let path = page(def.name());
        let text = std::fs::read_to_string(&path).unwrap();
        let want = goals_section(def);
        let (body, have) = match text.find(&format!("\n{HEADING}\n")) {
            Some(i) => (&text[..i + 1], &text[i + 1..]),
            None => (text.as_str(), ""),
        };
        if bless {
            let body = body.trim_end();
            std::fs::write(&path, format!("{body}\n\n{want}")).unwrap();
        } else {
            assert_eq!(
                have,
                want,
                "{}'s Goals section is not the code's (OVERCAST_BLESS=1 rewrites it)",
                path.display()
            );
        }
    }
}
