//! The harness's own test scenario, which knows no service: workers
//! increment one shared counter, crash and restart; C1 says the final value
//! counts every answered increment once and every unknown one at most once.
//! Its seeded bug `double_increment` makes every fifth increment add two.

use overcast_harness::bug::BugInfo;
use overcast_harness::params::{self, ParamError};
use overcast_harness::registry::{
    Deployment, NodeFuture, Reduction, RunCtx, RunDefaults, ScenarioDef,
};
use overcast_sim::check::{Checked, Checker, Property, PropertyId, Verdict, Violation};
use overcast_sim::faults::FaultMix;
use overcast_sim::history::{History, OpRecord, Recorder};
use overcast_sim::world::{NodeEnv, NodeRole, Role, Topology, WorldOutcome};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The toy's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterParams {
    /// Worker nodes.
    pub workers: usize,
    /// Increments each worker makes.
    pub increments: usize,
}

/// The toy's event: the counter's value when the world ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum CounterEvent {
    /// The final value.
    Final(u64),
}

/// The toy's history.
pub type CounterHistory = History<String, u64, CounterEvent>;

/// The toy's one seeded bug.
pub static DOUBLE_INCREMENT: BugInfo = BugInfo {
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
pub struct Counter;

/// The toy, registered nowhere.
pub static COUNTER: Counter = Counter;

pub fn now_ns() -> u64 {
    madsim::time::TimeHandle::current().elapsed().as_nanos() as u64
}

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
