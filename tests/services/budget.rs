//! The sweep each scenario with mirrored logs runs within its fault budget
//! and past it: within, every run passes; past, no run gives a wrong answer.

use overcast_harness::registry::DynScenario;
use overcast_harness::run::{run_with, RunResult};
use overcast_harness::scenario::Scenario;
use std::ops::Range;

/// One seed's two runs: within the fault budget and past it.
pub struct BudgetRuns {
    /// The seed.
    pub seed: u64,
    /// The run whose plan was drawn within the budget (it passed).
    pub within: RunResult,
    /// The run drawn past the budget (it passed or failed loudly).
    pub past: RunResult,
    /// Whether the faults the past run drew went past the budget.
    pub exceeded: bool,
}

/// Runs `seeds` of `def`, in swarm mode where `swarm` says so, within its
/// fault budget, where each run must stay within it and pass, and with
/// `--beyond-budget`, where each run must pass or fail loudly with no
/// violation; hands each seed's pair to `each` for the scenario's own
/// counts and checks.
pub fn within_and_past_budget(
    def: &'static dyn DynScenario,
    seeds: Range<u64>,
    swarm: impl Fn(u64) -> bool,
    mut each: impl FnMut(&BudgetRuns),
) {
    let budget = def.budget();
    for seed in seeds {
        let mut s = Scenario::new(def, seed);
        s.swarm = swarm(seed);
        let within = run_with(def, &s);
        assert!(
            !budget.exceeded_by(&within.world.disk_faults, within.disks),
            "seed {seed} went past the budget without --beyond-budget: {}",
            within.summary()
        );
        assert!(within.passed(), "seed {seed}: {}", within.summary());
        s.beyond_budget = true;
        let past = run_with(def, &s);
        assert!(
            past.outcome.passes() && past.violations().is_empty(),
            "seed {seed} past the budget: {}",
            past.summary()
        );
        let exceeded = budget.exceeded_by(&past.world.disk_faults, past.disks);
        each(&BudgetRuns {
            seed,
            within,
            past,
            exceeded,
        });
    }
}
