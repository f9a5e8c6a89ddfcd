//! The bug hunt: for a seeded bug, sweep seeds from 0 until a check fails,
//! and report which property caught it, after how many seeds and how long,
//! and (when asked) how many operations its shrunk counterexample has. A bug
//! is hunted under its hunt profile and in swarm mode ([`hunt_both`]).

use crate::registry::DynScenario;
use crate::run::run_with;
use crate::scenario::Scenario;
use overcast_sim::check::{Outcome, PropertyId};
use overcast_sim::runner::{sweep, SweepOptions};
use serde::Serialize;
use std::time::Instant;

/// One bug's hunt.
#[derive(Clone, Debug, Serialize)]
pub struct BugHunt {
    /// The bug's name.
    pub bug: String,
    /// The fault mix hunted under: `false` the bug's hunt profile, `true`
    /// swarm mode ([`overcast_sim::faults::FaultMix::swarm`]).
    pub swarm: bool,
    /// Whether a seed caught it (a violation or a liveness failure).
    pub found: bool,
    /// How the first run that did not pass ended (`None` if every seed passed).
    pub outcome: Option<Outcome>,
    /// The property that caught it (`panic` if the run panicked).
    pub property: Option<PropertyId>,
    /// Seeds tried, up to and including the first failing one.
    pub seeds: u64,
    /// Wall seconds spent.
    pub seconds: f64,
    /// The first failing seed.
    pub seed: Option<u64>,
    /// Operations in the first failing run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops: Option<usize>,
    /// Workload operations in the shrunk counterexample (when shrinking was
    /// asked for; a check's own calls, such as occ's probe, not counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shrunk_ops: Option<usize>,
    /// Wall seconds the shrinking of the bug's failing runs took (both
    /// mixes', side by side with two jobs or more), on the row shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shrink_seconds: Option<f64>,
    /// The shrunk counterexample (when shrinking was asked for), to save or replay.
    #[serde(skip)]
    pub shrunk: Option<Scenario>,
}

/// Shrinks the failing run of a found bug (at most `max_tries` candidate
/// runs) and records its size in operations and the shrunk scenario.
pub fn shrink_found(h: &mut BugHunt, def: &'static dyn DynScenario, max_tries: usize) {
    let Some(seed) = h.seed else { return };
    let s = hunt_scenario_in(def, seed, &h.bug, h.swarm);
    if let Some(r) = crate::shrink::shrink(def, &s, max_tries, |_, _| {}) {
        h.shrunk_ops = Some(r.run.op_count().client);
        h.shrunk = Some(r.scenario);
    }
}

/// The run of `bug` on `seed`: the scenario's defaults with the bug's hunt
/// profile ([`DynScenario::hunt_profile`]) and the bug on.
pub fn hunt_scenario(def: &dyn DynScenario, seed: u64, bug: &str) -> Scenario {
    hunt_scenario_in(def, seed, bug, false)
}

/// [`hunt_scenario`], in swarm mode when `swarm` (the swarm mix replaces
/// the hunt profile's).
pub fn hunt_scenario_in(def: &dyn DynScenario, seed: u64, bug: &str, swarm: bool) -> Scenario {
    let s = Scenario::new(def, seed);
    let mut s = crate::scenario::with_profile(def, s.clone(), def.hunt_profile(bug)).unwrap_or(s);
    s.bugs = vec![bug.to_string()];
    s.swarm = swarm;
    s
}

/// Sweeps seeds 0, 1, ... of the scenario `def` with `bug` on, `jobs` at a time,
/// until a run fails or `cap` seeds have passed. Seeds are handed out in
/// order and the lowest failing one is reported, so the result does not
/// depend on `jobs`.
pub fn hunt(bug: &str, def: &dyn DynScenario, cap: u64, jobs: usize) -> BugHunt {
    hunt_in(bug, def, cap, jobs, false)
}

/// [`hunt`] under the bug's hunt profile (`swarm` false) or in swarm mode.
pub fn hunt_in(bug: &str, def: &dyn DynScenario, cap: u64, jobs: usize, swarm: bool) -> BugHunt {
    let started = Instant::now();
    let opts = SweepOptions {
        jobs,
        progress: false,
        stop_after_failures: None,
    };
    let chunk = (jobs as u64 * 4).max(4);
    let mut next = 0u64;
    while next < cap {
        let seeds: Vec<u64> = (next..(next + chunk).min(cap)).collect();
        let results = sweep(
            &seeds,
            &opts,
            |seed| {
                let s = hunt_scenario_in(def, seed, bug, swarm);
                let r = run_with(def, &s);
                (r.outcome, r.first_property(), r.op_count().client)
            },
            |(outcome, _, _)| *outcome != Outcome::Passed,
        );
        let first_failure = results
            .iter()
            .find(|(_, r)| r.as_ref().map_or(true, |(o, _, _)| *o != Outcome::Passed));
        if let Some((seed, r)) = first_failure {
            let (outcome, property, ops) = match r {
                Ok((o, p, n)) => (*o, *p, Some(*n)),
                Err(_) => (Outcome::HarnessError, Some("panic".into()), None),
            };
            return BugHunt {
                bug: bug.into(),
                swarm,
                found: matches!(outcome, Outcome::Violation | Outcome::Liveness),
                outcome: Some(outcome),
                property,
                seeds: seed + 1,
                seconds: started.elapsed().as_secs_f64(),
                seed: Some(*seed),
                ops,
                shrunk_ops: None,
                shrink_seconds: None,
                shrunk: None,
            };
        }
        next += seeds.len() as u64;
    }
    BugHunt {
        bug: bug.into(),
        swarm,
        found: false,
        outcome: None,
        property: None,
        seeds: cap,
        seconds: started.elapsed().as_secs_f64(),
        seed: None,
        ops: None,
        shrunk_ops: None,
        shrink_seconds: None,
        shrunk: None,
    }
}

/// Both hunts of `bug`: under its hunt profile, then in swarm mode, and
/// which found it first (fewer seeds; the profile's on a tie).
#[derive(Clone, Debug)]
pub struct BothHunts {
    /// Under the bug's hunt profile.
    pub default: BugHunt,
    /// In swarm mode.
    pub swarm: BugHunt,
}

impl BothHunts {
    /// The hunt that found the bug on fewer seeds (the profile's on a tie
    /// or when neither found it).
    pub fn first(&self) -> &BugHunt {
        match (self.default.found, self.swarm.found) {
            (false, true) => &self.swarm,
            (true, true) if self.swarm.seeds < self.default.seeds => &self.swarm,
            _ => &self.default,
        }
    }

    /// Each mix's failing run shrunk ([`shrink_found`], at most
    /// `max_tries` candidates each; side by side when `jobs` is above 1),
    /// and the hunt whose counterexample ended smaller ([`BothHunts::first`] on a tie, or when only one mix
    /// found the bug). A greedy shrink stops at a local minimum that
    /// depends on where it starts, and the mix that finds a bug on fewer
    /// seeds often does so in a run with many more faults.
    pub fn shrunk_smallest(
        &self,
        def: &'static dyn DynScenario,
        max_tries: usize,
        jobs: usize,
    ) -> BugHunt {
        let mut first = self.first().clone();
        let mut other = if first.swarm {
            self.default.clone()
        } else {
            self.swarm.clone()
        };
        if !other.found {
            shrink_found(&mut first, def, max_tries);
            return first;
        }
        if jobs > 1 {
            // The two shrinks share nothing (each run has a thread of its
            // own): side by side, a bug takes the longer one's time.
            std::thread::scope(|s| {
                let side = s.spawn(|| shrink_found(&mut other, def, max_tries));
                shrink_found(&mut first, def, max_tries);
                if let Err(panic) = side.join() {
                    std::panic::resume_unwind(panic);
                }
            });
        } else {
            shrink_found(&mut first, def, max_tries);
            shrink_found(&mut other, def, max_tries);
        }
        match (first.shrunk_ops, other.shrunk_ops) {
            (Some(a), Some(b)) if b < a => other,
            (None, Some(_)) => other,
            _ => first,
        }
    }

    /// Which mixes found the bug: `default`, `swarm`, `both` or `none`.
    pub fn found_by(&self) -> &'static str {
        match (self.default.found, self.swarm.found) {
            (true, true) => "both",
            (true, false) => "default",
            (false, true) => "swarm",
            (false, false) => "none",
        }
    }
}

/// Hunts `bug` under its hunt profile and in swarm mode ([`hunt_in`]).
pub fn hunt_both(bug: &str, def: &dyn DynScenario, cap: u64, jobs: usize) -> BothHunts {
    BothHunts {
        default: hunt_in(bug, def, cap, jobs, false),
        swarm: hunt_in(bug, def, cap, jobs, true),
    }
}
