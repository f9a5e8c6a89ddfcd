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

/// Operations to leave out: a node's incarnation name (`client-3`, then
/// `client-3#1` after its first restart) to operation indices. Each life
/// of a node numbers its operations afresh, so an operation is named by
/// the incarnation that drew it: leaving out operation 5 of one life
/// leaves the other lives' fifth operations alone.
pub type SkipSet = BTreeMap<String, BTreeSet<usize>>;

/// Per incarnation (as in [`SkipSet`]), the earliest simulated time (ns)
/// each operation may start at, by operation index.
pub type Pace = BTreeMap<String, BTreeMap<usize, u64>>;

/// Per incarnation (as in [`SkipSet`]), the highest operation index the
/// run a shrunk scenario was cut from drew: an operation beyond it is left
/// out too ([`skipped`]; not [`skipped_call`]'s calls, see there).
/// Leaving out the last operation an incarnation drew (one that ran until
/// the deadline, say) would otherwise free its workload to draw and send
/// the operations that run never reached, and the candidate would be
/// larger, not smaller.
pub type Reached = BTreeMap<String, usize>;

/// Per incarnation (as in [`SkipSet`]), the simulated time (ns) each
/// operation its workload drew started at, by index (a skipped one: when
/// it was drawn). Indices need not be dense (a holder numbers its calls by
/// round).
pub type Drawn = BTreeMap<String, BTreeMap<usize, u64>>;

/// Per incarnation, what each operation is about (the item, queue or document it
/// touches), by index, as the workload said with [`about`]: the shrinker
/// tries leaving out everything about one subject, or all but one, at once.
pub type Subjects = BTreeMap<String, BTreeMap<usize, String>>;

/// The plan of the run on this thread: what to leave out, when to start,
/// and what was drawn.
struct Active {
    skip: SkipSet,
    reached: Reached,
    pace: Pace,
    drawn: Drawn,
    subjects: Subjects,
    /// Per node, the operation it drew last.
    current: BTreeMap<String, usize>,
    /// Per node and port, the call its socket there is in (see
    /// [`name_socket`]): a node that runs several tasks at once, each with
    /// its own SDK client, names each task's datagrams by that task's call.
    sockets: BTreeMap<(String, u16), usize>,
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
    /// Installs `skip`, `reached` and `pace` for the run about to start on
    /// this thread.
    pub fn install(skip: &SkipSet, reached: &Reached, pace: &Pace) -> OpPlan {
        let active = Active {
            skip: skip.clone(),
            reached: reached.clone(),
            pace: pace.clone(),
            drawn: Drawn::new(),
            subjects: Subjects::new(),
            current: BTreeMap::new(),
            sockets: BTreeMap::new(),
        };
        OpPlan {
            previous: Some(ACTIVE.with(|a| a.borrow_mut().replace(active))),
        }
    }

    /// Uninstalls the plan and says what each node drew, and what the
    /// operations were about.
    pub fn finish(mut self) -> (Drawn, Subjects) {
        self.restore()
            .map(|a| (a.drawn, a.subjects))
            .unwrap_or_default()
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

impl Active {
    /// Whether operation `op` of incarnation `name` is beyond what the run
    /// the scenario was cut from reached: left out, and not counted as
    /// drawn (that run never drew it, and what this one reaches must stay
    /// within it).
    fn beyond_reach(&self, name: &str, op: usize) -> bool {
        self.reached.get(name).is_some_and(|last| op > *last)
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

/// Whether the node incarnation `name` (`client-3`, `client-3#1`) leaves
/// out its operation `op`; when it does not and the plan paces it, first waits
/// until the operation's start time. Every workload calls this once per
/// operation, after drawing it and before sending it:
/// `if crate::ops::skipped(&name, n).await { continue; }`. Outside a run
/// with a plan (no plan installed, or an empty one) it returns `false` at
/// once, without waiting.
pub async fn skipped(name: &str, op: usize) -> bool {
    let node = node_of(name);
    let decided = ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        let a = a.as_mut()?;
        set_current(&mut a.current, node, op);
        if a.beyond_reach(name, op) {
            return Some((true, 0));
        }
        if a.skip.get(name).is_some_and(|s| s.contains(&op)) {
            record(&mut a.drawn, name, op, now_ns());
            return Some((true, 0));
        }
        let start = a.pace.get(name).and_then(|p| p.get(&op)).copied();
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
                record(&mut a.drawn, name, op, started);
            }
        });
    }
    skip
}

/// Says that operation `op` of the node incarnation `name` is about
/// `subject` (an item's key, a document's id): a workload calls it
/// where it calls [`skipped`], for an operation that touches one thing.
/// Outside a run with a plan it does nothing.
pub fn about(name: &str, op: usize, subject: &str) {
    ACTIVE.with(|a| {
        if let Some(a) = a.borrow_mut().as_mut() {
            a.subjects
                .entry(name.to_string())
                .or_default()
                .entry(op)
                .or_insert_with(|| subject.to_string());
        }
    })
}

/// The flag of an operation of the quiet phase (after the deadline) in its
/// number: the shrinker leaves such an operation out only when the failure
/// is prefix-closed ([`crate::registry::ScenarioDef::prefix_closed`]), as a
/// check that needs the quiet phase would otherwise fail for want of it.
/// A workload whose operations go on after the deadline sets it on theirs.
pub const QUIET_OP: usize = 1 << 60;

/// A number for [`skipped_call`] of a call of a node that runs several
/// tasks at once: its kind (`source`: a connector's traversal or workers, a
/// feed host's renewals, …) and key (item, queue, lease) hashed, then its
/// place `nth` among the calls of that kind on that key, so that leaving
/// one out renumbers no call of another kind or key.
pub fn call_number(source: &str, key: &str, nth: usize) -> usize {
    const PER_KEY: usize = 10_000;
    let h = overcast_sim::rng::fnv1a(format!("{source}/{key}").as_bytes());
    (h % 1_000_000) as usize * PER_KEY + nth.min(PER_KEY - 1)
}

/// [`skipped`] for a call of a node that runs several tasks at once, each
/// on its own schedule (a queues connector's traversal and workers, a feed
/// host's processing loop and renewer): whether to leave out call `op`,
/// decided at once, without pacing (its schedule already says when it
/// starts), and without making it the node's current operation (the call's
/// requests are named by the socket they are sent from, [`name_socket`]).
/// [`Reached`] does not bound these calls: a call left out ends as a lost
/// one and the node goes on otherwise (a feed host whose read is lost
/// releases its lease), so a call the cut run never reached is not one
/// that may be left out unasked.
pub fn skipped_call(name: &str, op: usize) -> bool {
    ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        let Some(a) = a.as_mut() else {
            return false;
        };
        record(&mut a.drawn, name, op, now_ns());
        a.skip.get(name).is_some_and(|s| s.contains(&op))
    })
}

/// Says that what node `node` sends from `port` (an SDK client's socket)
/// belongs to call `op` from now on (`None`: to no call of its own, then
/// to the node's current operation), until named again. Each task of a
/// node has its own client and socket, so its requests, and the replies to
/// them, are named by the call that task is in, whichever task drew last.
pub fn name_socket(node: &str, port: u16, op: Option<usize>) {
    let node = node_of(node);
    ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        let Some(a) = a.as_mut() else {
            return;
        };
        match op {
            Some(op) => {
                a.sockets.insert((node.to_string(), port), op);
            }
            None => {
                a.sockets.remove(&(node.to_string(), port));
            }
        }
    })
}

/// The operation node `node` (its name or incarnation name) drew last in
/// the run on this thread, if any: what the datagrams it sends now belong
/// to (see `bridge::NetworkAdapter`).
pub fn current(node: &str) -> Option<usize> {
    let node = node_of(node);
    ACTIVE.with(|a| a.borrow().as_ref()?.current.get(node).copied())
}

/// The operation what node `node` sends from `port` belongs to: the call
/// its socket there was named for ([`name_socket`]), else the node's
/// current operation ([`current`]).
pub fn current_at(node: &str, port: u16) -> Option<usize> {
    let node = node_of(node);
    ACTIVE.with(|a| {
        let a = a.borrow();
        let a = a.as_ref()?;
        // Only nodes with named sockets pay for the key.
        if !a.sockets.is_empty() {
            if let Some(op) = a.sockets.get(&(node.to_string(), port)) {
                return Some(*op);
            }
        }
        a.current.get(node).copied()
    })
}

/// The number of operations in a skip set.
pub fn count(skip: &SkipSet) -> usize {
    skip.values().map(BTreeSet::len).sum()
}

/// What a run that drew `drawn` reached: each incarnation's highest
/// operation index.
pub fn reached_of(drawn: &Drawn) -> Reached {
    drawn
        .iter()
        .filter_map(|(name, ops)| Some((name.clone(), *ops.keys().next_back()?)))
        .collect()
}

/// The pace of a run that drew `drawn`: each operation no earlier than it started there.
pub fn pace_of(drawn: &Drawn) -> Pace {
    drawn.clone()
}
