//! Client operations a run leaves out, for the shrinker's history-level
//! pass: a scenario's `skip` set names operations by node and index, and
//! every workload asks [`skipped`] once per operation, after drawing it from
//! its random stream and before sending it. A skipped operation is drawn
//! (so the choices of the operations after it are unchanged) but not sent.
//!
//! The set reaches the workloads through the thread that runs the world
//! (madsim runs every node's tasks on the thread that calls it), installed
//! by [`OpPlan::install`] for exactly one run, so a workload needs one line
//! and no new parameter. The same hook records which operations each node
//! drew, which tells the shrinker what it can leave out.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// Operations to leave out: node name (`client-3`, never an incarnation
/// name) to operation indices.
pub type SkipSet = BTreeMap<String, BTreeSet<usize>>;

/// Per node, how many operations its workload drew (skipped ones included):
/// the highest index asked about, plus one.
pub type Drawn = BTreeMap<String, usize>;

/// The plan of the run on this thread: what to leave out and what was drawn.
struct Active {
    skip: SkipSet,
    drawn: Drawn,
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
    /// Installs `skip` for the run about to start on this thread.
    pub fn install(skip: &SkipSet) -> OpPlan {
        let active = Active {
            skip: skip.clone(),
            drawn: Drawn::new(),
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

/// Whether node `node` (its name or incarnation name) leaves out its
/// operation `op`; records that the operation was drawn. Every workload
/// calls this once per operation, after drawing it and before sending it:
/// `if crate::ops::skipped(&name, n) { continue; }`. Outside a run (no plan
/// installed) nothing is skipped.
pub fn skipped(node: &str, op: usize) -> bool {
    ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        let Some(a) = a.as_mut() else {
            return false;
        };
        let node = node_of(node);
        let drawn = a.drawn.entry(node.to_string()).or_default();
        *drawn = (*drawn).max(op + 1);
        a.skip.get(node).is_some_and(|s| s.contains(&op))
    })
}

/// [`skipped`] for node `index` of role `role` (e.g. `client`, 3).
pub fn skipped_in(role: &str, index: usize, op: usize) -> bool {
    skipped(&overcast_sim::world::Topology::node_name(role, index), op)
}

/// The number of operations in a skip set.
pub fn count(skip: &SkipSet) -> usize {
    skip.values().map(BTreeSet::len).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_skips_what_it_names_records_what_was_drawn_and_uninstalls() {
        assert!(!skipped("client-0", 0), "no plan: nothing skipped");
        let skip: SkipSet = [("client-1".to_string(), BTreeSet::from([2]))].into();
        let plan = OpPlan::install(&skip);
        assert!(!skipped("client-1", 1));
        assert!(skipped("client-1#3", 2), "an incarnation is its node");
        assert!(!skipped_in("client", 0, 4));
        let drawn = plan.finish();
        assert_eq!(
            drawn,
            Drawn::from([("client-0".into(), 5), ("client-1".into(), 3)])
        );
        assert!(!skipped("client-1", 2), "uninstalled");
    }

    #[test]
    fn a_dropped_plan_is_uninstalled() {
        let skip: SkipSet = [("client-0".to_string(), BTreeSet::from([0]))].into();
        drop(OpPlan::install(&skip));
        assert!(!skipped("client-0", 0));
    }
}
