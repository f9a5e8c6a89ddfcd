//! Client operations a run leaves out, for the shrinker's history-level
//! pass: a scenario's `skip` set names operations by node and index, and
//! every workload asks [`skipped`] once per operation, after drawing it from
//! its random stream and before sending it. A skipped operation is drawn
//! (so the choices of the operations after it are unchanged) but not sent.
//!
//! Leaving an operation out would also move every later operation of its
//! client earlier in time, and a race the failure needs would often be
//! gone. So a shrunk scenario also carries a `pace`: the simulated time at
//! which each operation started in the run the shrinker started from; an
//! operation that comes earlier waits until then. With nothing skipped, a
//! paced run is the run it was recorded from.
//!
//! The plan reaches the workloads through the thread that runs the world
//! (madsim runs every node's tasks on the thread that calls it), installed
//! by [`OpPlan::install`] for exactly one run, so a workload needs one line
//! and no new parameter. The same hook records when each node's operations
//! started, which tells the shrinker what it can leave out.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Operations to leave out: node name (`client-3`, never an incarnation
/// name) to operation indices.
pub type SkipSet = BTreeMap<String, BTreeSet<usize>>;

/// Per node, the earliest simulated time (ns) each operation may start at,
/// by operation index.
pub type Pace = BTreeMap<String, BTreeMap<usize, u64>>;

/// Per node, the simulated time (ns) each operation its workload drew
/// started at, by index (a skipped one: when it was drawn). A restarted
/// node draws its operations again; the first incarnation's times are kept.
/// Indices need not be dense (a holder numbers its calls by round).
pub type Drawn = BTreeMap<String, BTreeMap<usize, u64>>;

/// The plan of the run on this thread: what to leave out, when to start,
/// and what was drawn.
struct Active {
    skip: SkipSet,
    pace: Pace,
    drawn: Drawn,
    /// Per node, the operation it drew last.
    current: BTreeMap<String, usize>,
}

thread_local! {
    static ACTIVE: RefCell<Option<Active>> = const { RefCell::new(None) };
}

/// The operation plan of one run, installed on the thread that runs its
/// world; dropping it (also on a panic) uninstalls it.
pub struct OpPlan {
    /// The plan this one replaced (none, unless runs nest); `None` once finished.
    previous: Option<Option<Active>>,
}

impl OpPlan {
    /// Installs `skip` and `pace` for the run about to start on this thread.
    pub fn install(skip: &SkipSet, pace: &Pace) -> OpPlan {
        let active = Active {
            skip: skip.clone(),
            pace: pace.clone(),
            drawn: Drawn::new(),
            current: BTreeMap::new(),
        };
        OpPlan {
            previous: Some(ACTIVE.with(|a| a.borrow_mut().replace(active))),
        }
    }

    /// Uninstalls the plan and says what each node drew.
    pub fn finish(mut self) -> Drawn {
        self.restore().map(|a| a.drawn).unwrap_or_default()
    }

    /// Puts back the plan this one replaced (once) and returns this one.
    fn restore(&mut self) -> Option<Active> {
        let previous = self.previous.take()?;
        ACTIVE.with(|a| std::mem::replace(&mut *a.borrow_mut(), previous))
    }
}

impl Drop for OpPlan {
    fn drop(&mut self) {
        self.restore();
    }
}

/// The node name an incarnation name (`holder-0#2`) belongs to.
fn node_of(name: &str) -> &str {
    name.split_once('#').map_or(name, |(node, _)| node)
}

fn now_ns() -> u64 {
    madsim::time::TimeHandle::current().elapsed().as_nanos() as u64
}

/// Notes that `node` drew operation `op` at `at_ns` (the first time only).
fn record(drawn: &mut Drawn, node: &str, op: usize, at_ns: u64) {
    // The node's name is allocated once, not once per operation.
    if let Some(ops) = drawn.get_mut(node) {
        ops.entry(op).or_insert(at_ns);
        return;
    }
    drawn.entry(node.to_string()).or_default().insert(op, at_ns);
}

/// Notes that `node` drew `op` last.
fn set_current(current: &mut BTreeMap<String, usize>, node: &str, op: usize) {
    match current.get_mut(node) {
        Some(last) => *last = op,
        None => {
            current.insert(node.to_string(), op);
        }
    }
}

/// Whether node `node` (its name or incarnation name) leaves out its
/// operation `op`; when it does not and the plan paces it, first waits
/// until the operation's start time. Every workload calls this once per
/// operation, after drawing it and before sending it:
/// `if crate::ops::skipped(&name, n).await { continue; }`. Outside a run
/// with a plan (no plan installed, or an empty one) it returns `false` at
/// once, without waiting.
pub async fn skipped(node: &str, op: usize) -> bool {
    let node = node_of(node);
    let decided = ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        let a = a.as_mut()?;
        set_current(&mut a.current, node, op);
        if a.skip.get(node).is_some_and(|s| s.contains(&op)) {
            record(&mut a.drawn, node, op, now_ns());
            return Some((true, 0));
        }
        let start = a.pace.get(node).and_then(|p| p.get(&op)).copied();
        Some((false, start.unwrap_or(0)))
    });
    let Some((skip, start_ns)) = decided else {
        return false;
    };
    if !skip {
        let now = now_ns();
        if start_ns > now {
            madsim::time::sleep(Duration::from_nanos(start_ns - now)).await;
        }
        let started = now_ns();
        ACTIVE.with(|a| {
            if let Some(a) = a.borrow_mut().as_mut() {
                record(&mut a.drawn, node, op, started);
            }
        });
    }
    skip
}

/// [`skipped`] for an operation that runs on its own schedule (a
/// connector's timer-driven calls): whether to leave it out, decided at
/// once, without pacing (its schedule already says when it starts).
pub fn skipped_now(node: &str, op: usize) -> bool {
    let node = node_of(node);
    ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        let Some(a) = a.as_mut() else {
            return false;
        };
        set_current(&mut a.current, node, op);
        record(&mut a.drawn, node, op, now_ns());
        a.skip.get(node).is_some_and(|s| s.contains(&op))
    })
}

/// The operation node `node` (its name or incarnation name) drew last in
/// the run on this thread, if any: what the datagrams it sends now belong
/// to (see `bridge::NetworkAdapter`).
pub fn current(node: &str) -> Option<usize> {
    let node = node_of(node);
    ACTIVE.with(|a| a.borrow().as_ref()?.current.get(node).copied())
}

/// [`skipped`] for node `index` of role `role` (e.g. `client`, 3).
pub async fn skipped_in(role: &str, index: usize, op: usize) -> bool {
    skipped(&overcast_sim::world::Topology::node_name(role, index), op).await
}

/// The number of operations in a skip set.
pub fn count(skip: &SkipSet) -> usize {
    skip.values().map(BTreeSet::len).sum()
}

/// The pace of a run that drew `drawn`: each operation no earlier than it started there.
pub fn pace_of(drawn: &Drawn) -> Pace {
    drawn.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` as the one task of a one-node simulation, as a workload runs.
    fn in_sim<T: 'static>(f: impl std::future::Future<Output = T> + 'static) -> T {
        madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default()).block_on(f)
    }

    #[test]
    fn a_plan_skips_what_it_names_records_what_was_drawn_and_uninstalls() {
        assert!(!in_sim(skipped("client-0", 0)), "no plan: nothing skipped");
        let skip: SkipSet = [("client-1".to_string(), BTreeSet::from([2]))].into();
        let plan = OpPlan::install(&skip, &Pace::new());
        let answers = in_sim(async {
            let mut v = Vec::new();
            for op in 0..3 {
                v.push(skipped("client-1#3", op).await);
            }
            v.push(skipped_in("client", 0, 0).await);
            v
        });
        assert_eq!(
            answers,
            [false, false, true, false],
            "an incarnation is its node"
        );
        let drawn = plan.finish();
        assert_eq!(drawn["client-1"].len(), 3);
        assert_eq!(drawn["client-0"].len(), 1);
        assert!(!in_sim(skipped("client-1", 2)), "uninstalled");
    }

    #[test]
    fn a_paced_operation_waits_for_its_start_time_and_a_dropped_plan_is_uninstalled() {
        let pace: Pace = [("client-0".to_string(), BTreeMap::from([(1, 5_000_000)]))].into();
        let plan = OpPlan::install(&SkipSet::new(), &pace);
        in_sim(async {
            assert!(!skipped("client-0", 0).await);
            assert_eq!(now_ns(), 0, "op 0 is not paced");
            assert!(!skipped("client-0", 1).await);
            // madsim's timers fire a few ns late.
            assert!(
                (5_000_000..5_001_000).contains(&now_ns()),
                "op 1 waited for its start"
            );
        });
        let started = pace_of(&plan.finish())["client-0"][&1];
        assert!((5_000_000..5_001_000).contains(&started), "{started}");
        let skip: SkipSet = [("client-0".to_string(), BTreeSet::from([0]))].into();
        drop(OpPlan::install(&skip, &Pace::new()));
        assert!(!in_sim(skipped("client-0", 0)));
    }
}
