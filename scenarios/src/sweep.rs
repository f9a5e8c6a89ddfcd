//! Sweeps: one scenario over many seeds on all cores, each seed summarised
//! (and its failing run kept for saving), with an optional determinism
//! check that runs every seed twice and, when the traces differ, says where
//! they first diverge.

use crate::registry::DynScenario;
use crate::run::{harness_failure, run_with, RunResult};
use crate::scenario::Scenario;
use overcast_sim::check::Outcome;
use overcast_sim::runner::{sweep as sweep_seeds, SweepOptions};
use std::time::Duration;

/// One seed's result.
pub struct SeedReport {
    /// The seed.
    pub seed: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// The property that named the outcome.
    pub property: Option<String>,
    /// Why it did not pass, in one line.
    pub problem: Option<String>,
    /// Operations recorded.
    pub ops: usize,
    /// Operations with an unknown outcome.
    pub unknown: usize,
    /// SDK retries.
    pub retries: usize,
    /// Faults injected.
    pub faults: u64,
    /// The run, when it did not pass (to save it).
    pub failed_run: Option<Box<RunResult>>,
}

/// Where two runs of one scenario first differ: the entry number and each
/// run's line there (time, node, what).
pub fn divergence(a: &RunResult, b: &RunResult) -> String {
    let (la, lb) = (a.history.trace_lines(), b.history.trace_lines());
    let show = |l: Option<&(u64, String)>| match l {
        Some((t, what)) => format!("{:.6} s {what}", *t as f64 / 1e9),
        None => "(nothing: the trace ended)".into(),
    };
    for i in 0..la.len().max(lb.len()) {
        if la.get(i) != lb.get(i) {
            return format!(
                "the traces first differ at entry {i}:\n  run 1: {}\n  run 2: {}",
                show(la.get(i)),
                show(lb.get(i))
            );
        }
    }
    "the traces have the same entries but different hashes".into()
}

/// Runs `make(seed)` with `def` for every seed, `opts.jobs` at a time. With
/// `check_determinism`, every seed runs twice on one thread and a differing
/// trace hash is a harness error that says where the traces diverge.
pub fn sweep(
    def: &'static dyn DynScenario,
    seeds: &[u64],
    opts: &SweepOptions,
    make: impl Fn(u64) -> Scenario + Sync,
    check_determinism: bool,
) -> Vec<SeedReport> {
    let results = sweep_seeds(
        seeds,
        opts,
        |seed| {
            let s = make(seed);
            let mut r = run_with(def, &s);
            if check_determinism && r.outcome != Outcome::HarnessError {
                // The second run shares the thread with the first: a stronger test.
                let again = run_with(def, &s);
                if again.trace_hash != r.trace_hash {
                    let mut failed = harness_failure(
                        &r.scenario,
                        format!(
                            "determinism: two runs of seed {seed} gave trace hashes {:016x} and {:016x}; {}",
                            r.trace_hash,
                            again.trace_hash,
                            divergence(&r, &again)
                        ),
                        r.wall,
                    );
                    failed.history = r.history;
                    r = failed;
                }
            }
            report(seed, r)
        },
        |r| r.outcome != Outcome::Passed,
    );
    results
        .into_iter()
        .map(|(seed, r)| {
            r.unwrap_or_else(|panic| {
                report(
                    seed,
                    harness_failure(
                        &make(seed),
                        format!("the run panicked: {panic}"),
                        Duration::ZERO,
                    ),
                )
            })
        })
        .collect()
}

fn report(seed: u64, r: RunResult) -> SeedReport {
    SeedReport {
        seed,
        outcome: r.outcome,
        property: r.first_property(),
        problem: r.first_problem(),
        ops: r.history.ops(),
        unknown: r.history.unknown_ops(),
        retries: r.history.retries(),
        faults: r.faults_injected(),
        failed_run: (r.outcome != Outcome::Passed).then(|| Box::new(r)),
    }
}
