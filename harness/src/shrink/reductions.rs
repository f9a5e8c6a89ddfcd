//! The reductions a shrink tries on a failure's parameters and envelope:
//! the scenario's own and the envelope's (faults, phases), common to every
//! scenario, and how the `i`-th candidate of each is drawn.

use crate::registry::DynScenario;
use crate::scenario::Scenario;
use overcast_sim::check::PropertyId;

/// The shortest active phase (workload and faults, before the heal) the
/// envelope's reductions leave a run, ms.
const MIN_ACTIVE_MS: u64 = 1_000;

/// The shortest quiet phase the envelope's reductions leave a run whose
/// failure is prefix-closed, ms, and the least time it leaves after the
/// end of the last fault (a restarted node's recovery, a healed link's
/// retries).
const MIN_QUIET_MS: u64 = 1_000;

/// What a failure's property lets the envelope's reductions cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cuttable {
    /// The quiet phase, and operations of it: the property is prefix-closed
    /// or its check judges its own premise
    /// ([`crate::registry::DynScenario::quiet_phase_cuttable`]).
    pub quiet_phase: bool,
    /// The run after the violation: the property is prefix-closed
    /// ([`crate::registry::ScenarioDef::prefix_closed`]), so the run that
    /// stops soon after it still breaks it.
    pub after_violation: bool,
}

impl Cuttable {
    /// What a failure of `property` lets be cut in a run of `def`.
    pub fn of(def: &dyn DynScenario, property: PropertyId) -> Cuttable {
        Cuttable {
            quiet_phase: def.quiet_phase_cuttable(property),
            after_violation: def.prefix_closed(property),
        }
    }
}

/// A reduction of the envelope (faults), common to every scenario: the
/// `i`-th candidate, or `None`, for a failure whose property lets `Cuttable`
/// be cut.
pub type EnvelopeReduction = fn(&Scenario, usize, Cuttable) -> Option<Scenario>;

/// When fault event `e` ends (a crashed node restarts, a partition heals, a
/// pause ends), ms.
fn fault_end_ms(e: &overcast_sim::faults::FaultEvent) -> u64 {
    use overcast_sim::faults::Fault;
    e.at_ms
        + match &e.fault {
            Fault::Partition { for_ms, .. }
            | Fault::Pause { for_ms, .. }
            | Fault::Isolate { for_ms, .. }
            | Fault::ClockRate { for_ms, .. } => *for_ms,
            Fault::Crash { down_ms, .. } => *down_ms,
        }
}

/// When the last fault event of `s`'s plan ends, ms.
fn faults_end_ms(s: &Scenario) -> u64 {
    s.plan
        .as_ref()
        .and_then(|p| p.events.iter().map(fault_end_ms).max())
        .unwrap_or(0)
}

/// The envelope's reductions, tried after the scenario's own.
/// (Fault events one by one are the history pass's.)
pub const ENVELOPE_REDUCTIONS: &[(&str, EnvelopeReduction)] = &[
    ("no packet loss", |s, i, _| {
        let plan = s.plan.as_ref()?;
        (i == 0 && plan.packet_loss > 0.0).then(|| {
            let mut t = s.clone();
            t.plan.as_mut().expect("checked").packet_loss = 0.0;
            t
        })
    }),
    ("no disk faults", |s, i, _| {
        let plan = s.plan.as_ref()?;
        (i == 0 && !plan.storage.is_off()).then(|| {
            let mut t = s.clone();
            t.plan.as_mut().expect("checked").storage = Default::default();
            t
        })
    }),
    ("no duplicated or reordered datagrams", |s, i, _| {
        let plan = s.plan.as_ref()?;
        (i == 0 && plan.network != Default::default()).then(|| {
            let mut t = s.clone();
            t.plan.as_mut().expect("checked").network = Default::default();
            t
        })
    }),
    ("halve the active phase", |s, i, cut| {
        // The quiet phase after it (heal, probes, drain) stays whole, so a
        // check that needs it still gets it; only the time the workload and
        // the fault plan have shrinks.
        (i == 0 && s.deadline_ms >= 2 * MIN_ACTIVE_MS).then(|| {
            let mut t = s.clone();
            t.deadline_ms /= 2;
            if let Some(plan) = t.plan.as_mut() {
                plan.events.retain(|e| e.at_ms < t.deadline_ms);
            }
            if cut.quiet_phase {
                // A quiet phase cut short still outlasts the faults.
                let least = (faults_end_ms(&t) + MIN_QUIET_MS).saturating_sub(t.deadline_ms);
                t.quiet_ms = t.quiet_ms.max(least);
            }
            t
        })
    }),
    ("perfect clocks", |s, i, _| {
        let plan = s.plan.as_ref()?;
        (i == 0 && !plan.clocks.is_empty()).then(|| {
            let mut t = s.clone();
            t.plan.as_mut().expect("checked").clocks.clear();
            t
        })
    }),
    ("halve the quiet phase", |s, i, cut| {
        // Only for a property judged on what came before the violation: a
        // shorter run cannot make it fail where a longer one would not. The
        // run still ends well after the last fault does, so no crashed
        // node's recovery is cut off (a record it would drop would count
        // as committed): the first candidate leaves out the fault events
        // that would outlast the shorter run, the second keeps them and
        // cuts the quiet phase only as far as they allow.
        if !cut.quiet_phase {
            return None;
        }
        let half = (s.quiet_ms / 2).max(MIN_QUIET_MS);
        let mut t = s.clone();
        match i {
            0 => {
                t.quiet_ms = half;
                let end = t.deadline_ms + half - MIN_QUIET_MS;
                if let Some(plan) = t.plan.as_mut() {
                    plan.events.retain(|e| fault_end_ms(e) <= end);
                }
            }
            1 => {
                t.quiet_ms =
                    half.max((faults_end_ms(s) + MIN_QUIET_MS).saturating_sub(s.deadline_ms));
            }
            _ => return None,
        }
        (t.quiet_ms < s.quiet_ms).then_some(t)
    }),
    (STOP_SOONER, |s, i, cut| {
        // Only for a property judged on what came before the violation:
        // the run up to the stop is the run it was, so a violation before
        // the stop is still there, and what came after it is never run.
        // Candidates stop at 1/2, 3/4, 7/8 and 15/16 of the run; kept
        // again and again, they close in on the violation. Like the quiet
        // phase's cut, a stop leaves every fault event begun before it time
        // to end and be recovered from.
        if !cut.after_violation || i >= STOP_STEPS {
            return None;
        }
        let end = s.stop_ms.unwrap_or(s.deadline_ms + s.quiet_ms);
        let part = 1u64 << (i + 1);
        let target = end / part * (part - 1);
        let recovered = s.plan.as_ref().map_or(0, |p| {
            p.events
                .iter()
                .filter(|e| e.at_ms < target)
                .map(|e| fault_end_ms(e) + MIN_QUIET_MS)
                .max()
                .unwrap_or(0)
        });
        let stop = target.max(recovered);
        (stop < end).then(|| Scenario {
            stop_ms: Some(stop),
            ..s.clone()
        })
    }),
];

/// The name of the envelope's reduction that stops a run sooner, which a
/// search tries first ([`super::Search::stop_sooner`]).
pub(super) const STOP_SOONER: &str = "stop the run sooner";

/// The envelope's reductions that take away a kind of fault the size does
/// not count: rates and clocks, not fault events ([`Search::tidy`]).
pub(super) const FAULT_KINDS: &[&str] = &[
    "no packet loss",
    "no disk faults",
    "no duplicated or reordered datagrams",
    "perfect clocks",
];

/// The candidates of "stop the run sooner": at 1/2, 3/4, 7/8, 15/16.
const STOP_STEPS: usize = 4;

/// The `i`-th candidate of reduction `r` (the scenario's own first, then
/// the envelope's) for a failure of `property`.
pub fn candidate(
    def: &dyn DynScenario,
    s: &Scenario,
    property: PropertyId,
    r: usize,
    i: usize,
) -> Option<Scenario> {
    candidate_cut(def, s, Cuttable::of(def, property), r, i)
}

/// [`candidate`] for a failure that lets `cut` be cut.
pub fn candidate_cut(
    def: &dyn DynScenario,
    s: &Scenario,
    cut: Cuttable,
    r: usize,
    i: usize,
) -> Option<Scenario> {
    let own = def.reduction_names().len();
    if r < own {
        let params = def.reduce(&s.params, r, i)?;
        Some(Scenario {
            params,
            ..s.clone()
        })
    } else {
        (ENVELOPE_REDUCTIONS.get(r - own)?.1)(s, i, cut)
    }
}

pub(super) fn reduction_name(def: &dyn DynScenario, r: usize) -> &'static str {
    let names = def.reduction_names();
    names
        .get(r)
        .copied()
        .unwrap_or_else(|| ENVELOPE_REDUCTIONS[r - names.len()].0)
}
