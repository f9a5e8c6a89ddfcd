//! The proof that the next service is one folder: a toy scenario defined
//! entirely in this file (its own parameters, workload, checker and seeded
//! bug, with crashable client nodes) runs through `run`, `sweep`, `replay`
//! and the bug hunt by the same public API the registered scenarios use.
//! The harness's own unit tests (`units/`) run it too.

use overcast_harness::bug::BugInfo;
use overcast_harness::hunt::hunt;
use overcast_harness::params::{self, ParamError};
use overcast_harness::registry::{
    Deployment, DynScenario, NodeFuture, Reduction, RunCtx, RunDefaults, ScenarioDef,
};
use overcast_harness::run::{run_isolated_with, run_with};
use overcast_harness::saved::{save_failure, SavedRun};
use overcast_harness::scenario::Scenario;
use overcast_harness::sweep::{divergence, sweep};
use overcast_sim::check::{Checked, Checker, Outcome, Property, PropertyId, Verdict, Violation};
use overcast_sim::faults::FaultMix;
use overcast_sim::history::{History, OpRecord, Recorder};
use overcast_sim::runner::SweepOptions;
use overcast_sim::world::{NodeEnv, NodeRole, Role, Topology, WorldOutcome};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The toy's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CounterParams {
    workers: usize,
    increments: usize,
}

/// The toy's event: the counter's value when the world ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum CounterEvent {
    Final(u64),
}

pub(crate) type CounterHistory = History<String, u64, CounterEvent>;

/// The toy's one seeded bug.
pub(crate) static DOUBLE_INCREMENT: BugInfo = BugInfo {
    name: "double_increment",
    what: "every fifth increment adds two",
    scenarios: &["counter"],
    caught_by: &["C1"],
};

overcast_sim::node_roles! {
    /// The toy's nodes.
    enum CounterRole {
        /// The workers, each incrementing the counter.
        Worker = "worker",
    }
}

/// The toy's one property.
const C1: Property = Property::new(
    "C1",
    "the final value counts every answered increment once and every unknown one at most once",
);

/// Judges C1.
struct CountedOnce;

impl Checker<CounterHistory> for CountedOnce {
    fn properties(&self) -> &'static [Property] {
        &[C1]
    }

    fn check(&self, h: &CounterHistory) -> Checked {
        let answered = h.ops.iter().filter(|o| o.result.is_some()).count() as u64;
        let unknown = h.ops.len() as u64 - answered;
        let Some(CounterEvent::Final(value)) = h.node_events.last().map(|e| e.event.clone()) else {
            return Checked::new(Verdict::Undecided {
                reason: "no final value was recorded".into(),
            });
        };
        let broken = value < answered || value > answered + unknown;
        Checked::new(Verdict::from_violations(if broken {
            vec![Violation::new(
                C1.id,
                format!(
                    "the counter ended at {value}, but {answered} increments were answered and {unknown} unknown"
                ),
            )]
        } else {
            vec![]
        }))
    }
}

/// The toy scenario.
pub(crate) struct Counter;

impl ScenarioDef for Counter {
    type Params = CounterParams;
    type History = CounterHistory;

    fn name(&self) -> &'static str {
        "counter"
    }
    fn describe(&self) -> &'static str {
        "a toy: workers increment one shared counter"
    }
    fn params(&self, _seed: u64) -> CounterParams {
        CounterParams {
            workers: 3,
            increments: 20,
        }
    }
    fn defaults(&self) -> RunDefaults {
        RunDefaults {
            faults: FaultMix {
                crashes_per_min: 120.0,
                ..FaultMix::calm()
            },
            fault_window_ms: 500,
            deadline_ms: 10_000,
            quiet_ms: 100,
        }
    }
    fn strategy(&self) -> BoxedStrategy<CounterParams> {
        (1usize..4, 1usize..30)
            .prop_map(|(workers, increments)| CounterParams {
                workers,
                increments,
            })
            .boxed()
    }
    fn validate(&self, p: &CounterParams) -> Result<(), ParamError> {
        params::at_least_one(&[("workers", p.workers as u64)])
    }
    fn header(&self, p: &CounterParams) -> String {
        format!("workers={} increments={}", p.workers, p.increments)
    }
    fn topology(&self, p: &CounterParams) -> Topology {
        Topology::new(vec![Role::new(CounterRole::Worker, p.workers)
            .crashable()
            .awaited()])
    }
    fn client_role(&self, p: &CounterParams) -> (&'static str, usize) {
        (CounterRole::Worker.name(), p.workers)
    }
    fn bugs(&self) -> Vec<&'static BugInfo> {
        vec![&DOUBLE_INCREMENT]
    }
    // C1 judges the value the workers left: an increment counted twice
    // stays counted however long the run goes on, so a shrink may cut the
    // run after it.
    fn prefix_closed(&self, property: PropertyId) -> bool {
        property == "C1"
    }
    fn deploy(&self, p: &CounterParams, ctx: &RunCtx) -> Deployment<CounterHistory> {
        let counter = Arc::new(AtomicU64::new(0));
        let recorder: Recorder<String, u64, CounterEvent> = Recorder::new();
        let double = ctx.bugs.iter().any(|b| b == DOUBLE_INCREMENT.name);
        let (n, c, r) = (p.increments, counter.clone(), recorder.clone());
        let program = Box::new(move |env: NodeEnv| -> NodeFuture {
            let (counter, recorder) = (c.clone(), r.clone());
            Box::pin(async move {
                let id = env.index + 100 * env.incarnation as usize;
                let node = env.name.clone();
                for i in 0..n {
                    // What lets the shrinker leave this increment out.
                    if overcast_harness::ops::skipped(&node, i).await {
                        continue;
                    }
                    let slot = recorder.begin(OpRecord {
                        id: 0,
                        client: id,
                        key: "counter".into(),
                        call: "increment".into(),
                        invoke_ns: now_ns(),
                        return_ns: None,
                        result: None,
                        attempts: vec![],
                    });
                    let by = if double && i % 5 == 4 { 2 } else { 1 };
                    let v = counter.fetch_add(by, Ordering::Relaxed) + by;
                    // The answer takes a while: a crash now leaves the outcome unknown.
                    madsim::time::sleep(Duration::from_millis(20)).await;
                    recorder.complete(slot, Some(now_ns()), Some(v), vec![]);
                }
            })
        });
        let collect = Box::new(move |world: &WorldOutcome| {
            recorder.event(
                "world",
                0,
                CounterEvent::Final(counter.load(Ordering::Relaxed)),
            );
            (
                recorder.take_history(world.events.clone()),
                Default::default(),
            )
        });
        Deployment {
            program,
            collect,
            resolver: None,
        }
    }
    fn checkers(&self, _p: &CounterParams) -> Vec<Box<dyn Checker<CounterHistory>>> {
        vec![Box::new(CountedOnce)]
    }
    fn reductions(&self) -> Vec<Reduction<CounterParams>> {
        vec![("one worker fewer", |p, i| {
            (i == 0 && p.workers > 1).then(|| CounterParams {
                workers: p.workers - 1,
                ..p.clone()
            })
        })]
    }
}

/// The toy, registered nowhere.
pub(crate) static COUNTER: Counter = Counter;

/// Simulated ns since the start of the run.
pub(crate) fn now_ns() -> u64 {
    overcast_model::client::sim_now_ns()
}

fn def() -> &'static dyn DynScenario {
    &COUNTER
}

#[test]
fn a_toy_scenario_runs_and_its_crashed_workers_leave_unknown_operations() {
    let r = run_isolated_with(def(), &Scenario::new(def(), 1));
    assert!(r.passed(), "{}", r.summary());
    assert!(r.summary().contains("C1 held"), "{}", r.summary());
    // Over a few seeds, workers crash mid-increment and restart with a fresh identity.
    let crashed = (0..20).any(|seed| {
        let r = run_with(def(), &Scenario::new(def(), seed));
        r.world.faults.contains_key("crash") && r.history.unknown_ops() > 0
    });
    assert!(crashed, "no seed crashed a worker mid-increment");
}

#[test]
fn a_toy_scenario_sweeps_clean_and_is_deterministic() {
    let seeds: Vec<u64> = (0..30).collect();
    let opts = SweepOptions {
        progress: false,
        ..SweepOptions::default()
    };
    let results = sweep(
        def(),
        &seeds,
        &opts,
        |seed| Scenario::new(def(), seed),
        true,
    );
    assert_eq!(results.len(), 30);
    for r in results {
        assert_eq!(
            r.outcome,
            Outcome::Passed,
            "seed {}: {:?}",
            r.seed,
            r.problem
        );
    }
}

#[test]
fn a_toy_scenarios_seeded_bug_is_hunted_saved_replayed_and_shrunk() {
    let h = hunt(DOUBLE_INCREMENT.name, def(), 50, 2);
    assert!(h.found, "{h:?}");
    assert_eq!(h.property, Some("C1".into()));
    let mut s = Scenario::new(def(), h.seed.unwrap());
    s.bugs = vec![DOUBLE_INCREMENT.name.into()];
    s.validate_with(def()).unwrap();
    let failed = run_isolated_with(def(), &s);
    assert_eq!(failed.outcome, Outcome::Violation);
    let dir = std::env::temp_dir().join(format!("overcast-toy-{}", std::process::id()));
    let files = save_failure(def(), &failed, &dir).unwrap();
    let loaded =
        SavedRun::parse_with(&std::fs::read_to_string(&files.run).unwrap(), def()).unwrap();
    let again = run_isolated_with(def(), &loaded.scenario);
    assert!(loaded
        .outcome
        .unwrap()
        .reproduced_by(&overcast_harness::saved::SavedOutcome::of(&again)));
    assert_eq!(again.trace_hash, failed.trace_hash);
    let shrunk = overcast_harness::shrink::shrink(def(), &s, 20, |_, _| {}).unwrap();
    assert_eq!(shrunk.run.first_property(), Some("C1".into()));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_bug_of_another_scenario_is_refused_by_name() {
    let mut s = Scenario::new(def(), 0);
    s.bugs = vec!["skip_if_match".into()];
    let err = s.validate_with(def()).unwrap_err();
    assert!(
        matches!(&err, overcast_harness::error::HarnessError::Unknown { kind: "bug", name, .. } if name == "skip_if_match"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "unknown bug 'skip_if_match' (known: double_increment)"
    );
}

#[test]
fn a_determinism_failure_says_where_the_traces_diverge() {
    let a = run_with(def(), &Scenario::new(def(), 3));
    let b = run_with(def(), &Scenario::new(def(), 4));
    let d = divergence(&a, &b);
    assert!(d.contains("first differ at entry"), "{d}");
    assert!(d.contains("run 1:") && d.contains("run 2:"), "{d}");
    assert_eq!(
        divergence(&a, &run_with(def(), &Scenario::new(def(), 3))),
        "the traces have the same entries but different hashes"
    );
}
