//! What the history passes of a shrink leave out (client operations and
//! fault events), in the orders they cut them in, and the candidates and
//! step names they make of them.

use crate::ops::SkipSet;
use crate::run::RunResult;
use crate::scenario::Scenario;

/// [`history_units`] in `order`.
pub(super) fn ordered_units(
    run: &RunResult,
    base: &Scenario,
    quiet_ok: bool,
    order: Order,
) -> Vec<Unit> {
    let mut units = history_units(run, base, quiet_ok);
    if order == Order::ByTime {
        let start = |u: &Unit| match u {
            Unit::Op(node, i) => base
                .pace
                .get(node)
                .and_then(|p| p.get(i))
                .copied()
                .unwrap_or(0),
            Unit::Fault(e) => base
                .plan
                .as_ref()
                .map_or(0, |p| p.events[*e].at_ms * 1_000_000),
        };
        units.sort_by_key(start);
    }
    units
}

/// The order of the units the history pass cuts into chunks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Order {
    /// Node by node, then the fault events: early chunks are whole clients.
    ByNode,
    /// By start time, operations and fault events together: early chunks
    /// are stretches of the run (all that happened before the failure, say).
    ByTime,
}

/// What the history pass may leave out.
#[derive(Clone, Debug, PartialEq)]
pub enum Unit {
    /// A client operation: node name, operation index.
    Op(String, usize),
    /// A fault event, by its index in the plan the pass started from.
    Fault(usize),
}

/// The operations `run` drew and did not skip, node by node (so that early
/// chunks are whole clients), then its scenario's fault events. Operations
/// of the quiet phase ([`crate::ops::QUIET_OP`]) only if `quiet_ok`.
fn history_units(run: &RunResult, s: &Scenario, quiet_ok: bool) -> Vec<Unit> {
    let mut units = Vec::new();
    for (node, drawn) in &run.drawn {
        let skipped = s.skip.get(node);
        units.extend(
            drawn
                .keys()
                .filter(|i| quiet_ok || *i & crate::ops::QUIET_OP == 0)
                .filter(|i| !skipped.is_some_and(|k| k.contains(i)))
                .map(|i| Unit::Op(node.clone(), *i)),
        );
    }
    let events = s.plan.as_ref().map_or(0, |p| p.events.len());
    units.extend((0..events).map(Unit::Fault));
    units
}

/// `base` keeping only the units `live` (indices into `units`): the other
/// operations join its skip set, the other fault events leave its plan.
pub fn with_units(base: &Scenario, units: &[Unit], live: &[usize]) -> Scenario {
    let mut s = base.clone();
    let mut keep_event = vec![false; base.plan.as_ref().map_or(0, |p| p.events.len())];
    let mut alive = vec![false; units.len()];
    for u in live {
        alive[*u] = true;
    }
    let mut skip: SkipSet = base.skip.clone();
    for (u, unit) in units.iter().enumerate() {
        match (unit, alive[u]) {
            (Unit::Op(node, i), false) => {
                skip.entry(node.clone()).or_default().insert(*i);
            }
            (Unit::Fault(e), true) => keep_event[*e] = true,
            _ => {}
        }
    }
    s.skip = skip;
    if let Some(plan) = s.plan.as_mut() {
        let mut keep = keep_event.into_iter();
        plan.events.retain(|_| keep.next().unwrap_or(true));
    }
    s
}

/// The name of a history step: "leave out 3 operations and 1 fault event".
pub fn removal_step<'a>(removed: impl Iterator<Item = &'a Unit>) -> String {
    let (mut ops, mut faults) = (0, 0);
    for u in removed {
        match u {
            Unit::Op(..) => ops += 1,
            Unit::Fault(_) => faults += 1,
        }
    }
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    match (ops, faults) {
        (o, 0) => format!("leave out {}", plural(o, "operation")),
        (0, f) => format!("leave out {}", plural(f, "fault event")),
        (o, f) => format!(
            "leave out {} and {}",
            plural(o, "operation"),
            plural(f, "fault event")
        ),
    }
}
