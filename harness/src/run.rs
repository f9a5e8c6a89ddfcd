//! Running a scenario: resolve its fault plan, build the world from the
//! scenario's topology, run its node programs, check the history with its
//! checkers, and summarise. Works for any [`DynScenario`].

use crate::error::HarnessError;
use crate::registry::{CheckRecord, DynScenario, RunHistory};
use crate::scenario::Scenario;
use overcast_sim::check::{Checked, Outcome, Property, PropertyId, Verdict, Violation, LIVENESS};
use overcast_sim::faults::{FaultBudget, FaultMix, FaultPlan};
use overcast_sim::rng::stream;
use overcast_sim::world::{Happening, Topology, WorldConfig, WorldOutcome};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The property a run that the harness itself could not carry out (or that
/// panicked) ends on.
pub const HARNESS: PropertyId = PropertyId::new("harness");

/// Everything one run produced.
pub struct RunResult {
    /// The scenario, with the fault plan it actually ran (saved with failures).
    pub scenario: Scenario,
    /// The recorded history.
    pub history: Box<dyn RunHistory>,
    /// What the world did.
    pub world: WorldOutcome,
    /// The model's own counters of injected faults (server fault points).
    pub counters: BTreeMap<String, u64>,
    /// Each checker's result, in the scenario's order, then liveness.
    pub checks: Vec<CheckRecord>,
    /// How the run ended.
    pub outcome: Outcome,
    /// What went wrong when the harness itself failed (a panic).
    pub harness_error: Option<String>,
    /// Hash of the whole history: equal for two runs of one scenario.
    pub trace_hash: u64,
    /// Wall time of the whole run.
    pub wall: Duration,
    /// Wall time of the checks alone.
    pub check_wall: Duration,
    /// When each client node's operations started, skipped ones included ([`crate::ops`]).
    pub drawn: crate::ops::Drawn,
    /// What each of those operations was about ([`crate::ops::about`]).
    pub subjects: crate::ops::Subjects,
    /// The failure page ([`crate::report`]) of a run that did not pass.
    pub page: Option<String>,
    /// How many nodes of the run's deployment have a disk: what a fault
    /// budget's bound on corrupt disks is counted against (0 when the run
    /// did not deploy anything).
    pub disks: usize,
}

impl std::fmt::Debug for RunResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunResult")
            .field("scenario", &self.scenario.name)
            .field("seed", &self.scenario.seed)
            .field("outcome", &self.outcome)
            .field("violations", &self.violations())
            .finish()
    }
}

impl RunResult {
    /// The recorded history as its scenario's own type (`None` for another).
    pub fn history_as<H: 'static>(&self) -> Option<&H> {
        self.history.as_any().downcast_ref::<H>()
    }

    /// True when every check held.
    pub fn passed(&self) -> bool {
        self.outcome == Outcome::Passed
    }

    /// Every broken property, in checker order.
    pub fn violations(&self) -> Vec<&Violation> {
        self.checks
            .iter()
            .flat_map(|c| c.checked.verdict().violations())
            .collect()
    }

    /// The property that names the run's outcome: the first violation of a
    /// safety property, else the liveness one, else the first undecided
    /// checker's, else `harness` for a harness error; `None` for a pass.
    pub fn first_property(&self) -> Option<PropertyId> {
        match self.outcome {
            Outcome::Passed => None,
            Outcome::HarnessError => Some(HARNESS),
            Outcome::Violation => self
                .violations()
                .into_iter()
                .find(|v| v.property != LIVENESS.id)
                .map(|v| v.property),
            Outcome::Liveness => Some(LIVENESS.id),
            Outcome::Undecided | Outcome::FailedLoudly => self
                .checks
                .iter()
                .find(|c| matches!(c.checked.verdict(), Verdict::Undecided { .. }))
                .map(CheckRecord::name),
        }
    }

    /// The line that says why the run did not pass.
    pub fn first_problem(&self) -> Option<String> {
        if let Some(e) = &self.harness_error {
            return Some(format!("[harness] {e}"));
        }
        let first = self.first_property()?;
        for c in &self.checks {
            match c.checked.verdict() {
                Verdict::Broken { violations } => {
                    if let Some(v) = violations.iter().find(|v| v.property == first) {
                        return Some(v.to_string());
                    }
                }
                Verdict::Undecided { reason } if c.name() == first => {
                    return Some(format!("[{first}] undecided: {reason}"));
                }
                _ => {}
            }
        }
        Some(format!("[{first}]"))
    }

    /// Faults injected: the world's faults plus the model's fault points
    /// ([`is_fault`]); the model's other counters are not faults.
    pub fn faults_injected(&self) -> u64 {
        self.world.faults.values().sum::<u64>()
            + self
                .counters
                .iter()
                .filter(|(k, _)| is_fault(k))
                .map(|(_, n)| n)
                .sum::<u64>()
    }

    /// The run's operations, counted once for every line that speaks of
    /// them (the summary, the page, the shrinker's "from N to M ops").
    pub fn op_count(&self) -> OpCount {
        OpCount::of(&*self.history)
    }

    /// The explanations checkers gave (e.g. the linearizability counterexample).
    pub fn explanations(&self) -> Vec<&str> {
        self.checks
            .iter()
            .filter_map(|c| c.checked.explanation.as_deref())
            .collect()
    }

    /// The HTML report of a run that did not pass: its failure page (which
    /// embeds the checkers' own reports), else the first report a checker drew.
    pub fn html(&self) -> Option<&str> {
        self.page
            .as_deref()
            .or_else(|| self.checks.iter().find_map(|c| c.checked.html.as_deref()))
    }

    /// The `checks` line: each checker by its name ([`CheckRecord::title`],
    /// unique in the run), in the scenario's order, with its verdict.
    pub fn checks_line(&self) -> String {
        self.checks
            .iter()
            .map(|c| {
                let note = if c.checked.note.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", c.checked.note)
                };
                format!("{} {}{note}", c.title(), c.checked.verdict_words())
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// On a run drawn past its budget (`--beyond-budget`) whose budget bounds
    /// corrupt disks: whether the run went past it, and on which disks
    /// records were corrupted or lost, so a failed-loudly verdict says what
    /// the servers refused. `None` on every other run.
    pub fn budget_line(&self) -> Option<String> {
        let s = &self.scenario;
        if !s.beyond_budget {
            return None;
        }
        let bound = s.budget.as_ref()?.corrupt_bound(self.disks)?;
        let disks = FaultBudget::corrupted_disks(&self.world.disk_faults);
        let whether = if disks.len() > bound {
            "this run went past it"
        } else {
            "this run stayed within it"
        };
        let on = if disks.is_empty() {
            "no record corrupted or lost".to_string()
        } else {
            format!("records corrupted or lost on {}", disks.join(", "))
        };
        let allows = if s.budget.as_ref().is_some_and(|b| b.per_node) {
            format!("it allows {bound} of each node's disks")
        } else {
            format!(
                "it allows {bound} of the {} disk{}",
                self.disks,
                if self.disks == 1 { "" } else { "s" }
            )
        };
        Some(format!("{whether}: {on} ({allows})"))
    }

    /// A few lines for the terminal.
    pub fn summary(&self) -> String {
        let s = &self.scenario;
        let mut faults = fault_words(&self.world, &self.counters);
        if faults.is_empty() {
            faults.push("none".into());
        }
        let mut problems: Vec<String> = Vec::new();
        if let Some(e) = &self.harness_error {
            problems.push(format!("[harness] {e}"));
        }
        for c in &self.checks {
            match c.checked.verdict() {
                Verdict::Broken { violations } => {
                    problems.extend(violations.iter().map(|v| v.to_string()))
                }
                Verdict::Undecided { reason } => {
                    problems.push(format!("[{}] undecided: {reason}", c.title()))
                }
                Verdict::Held => {}
            }
        }
        let counters = counter_words(&self.counters);
        let mut out = format!(
            "ops     {}\n\
             faults  {} injected: {}\n",
            self.op_count(),
            self.faults_injected(),
            faults.join(" "),
        );
        if !counters.is_empty() {
            out += &format!("counted {}\n", counters.join(" "));
        }
        if let Some(line) = self.budget_line() {
            out += &format!("budget  {line}\n");
        }
        out += &format!(
            "time    simulated {:.1} s, wall {:.1} ms (checks {:.1} ms); trace {:016x}\n\
             checks  {}",
            self.world.sim_ns as f64 / 1e9,
            self.wall.as_secs_f64() * 1e3,
            self.check_wall.as_secs_f64() * 1e3,
            self.trace_hash,
            self.checks_line(),
        );
        for p in problems {
            out += &format!("\n        {p}");
        }
        out += &format!("\nverdict {}", self.outcome.word());
        if !s.bugs.is_empty() {
            out += &format!(" (bugs on: {})", s.bugs.join(", "));
        }
        out
    }
}

/// Whether one of the model's counters counts injected faults: a server
/// fault point (named by the status it answers, `429`, `503`) or a fault
/// the network adapter injected (`duplicate`, `reorder`). Every other
/// counter (answers by status such as `answered_200`, gauges such as
/// `max_unsynced_records`, what a node saw such as `fsync_errors_seen`)
/// counts what the run did, not what was done to it.
pub fn is_fault(counter: &str) -> bool {
    (counter.len() == 3 && counter.bytes().all(|b| b.is_ascii_digit()))
        || matches!(counter, "duplicate" | "reorder")
}

/// The faults a run injected, `kind×count`: the world's, then the model's
/// fault points ([`is_fault`]).
pub fn fault_words(world: &WorldOutcome, counters: &BTreeMap<String, u64>) -> Vec<String> {
    world
        .faults
        .iter()
        .chain(counters.iter().filter(|(k, _)| is_fault(k)))
        .map(|(k, n)| format!("{k}×{n}"))
        .collect()
}

/// The model's counters that are not faults, `name×count` (the `counted`
/// line of a summary and a page).
pub fn counter_words(counters: &BTreeMap<String, u64>) -> Vec<String> {
    counters
        .iter()
        .filter(|(k, _)| !is_fault(k))
        .map(|(k, n)| format!("{k}×{n}"))
        .collect()
}

/// A run's operations: its clients' (what a shrink minimises and the bug
/// table counts), how many of those have an unknown outcome, their retries,
/// and the calls the checks made of their own (occ's liveness probe). Every
/// line that counts a run's operations says them in these words
/// ([`std::fmt::Display`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCount {
    /// Operations of the workload's clients.
    pub client: usize,
    /// Of those, the ones whose outcome is unknown.
    pub unknown: usize,
    /// Their attempts beyond the first.
    pub retries: usize,
    /// Calls of the checks' own clients (from [`crate::registry::CHECK_CLIENTS`] on).
    pub checks: usize,
}

impl OpCount {
    /// The count of a history.
    pub fn of(h: &dyn RunHistory) -> OpCount {
        h.op_count()
    }
}

impl std::fmt::Display for OpCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} client operation{} ({} with unknown outcome), {} retr{}",
            self.client,
            if self.client == 1 { "" } else { "s" },
            self.unknown,
            self.retries,
            if self.retries == 1 { "y" } else { "ies" }
        )?;
        if self.checks > 0 {
            write!(
                f,
                "; besides them, {} call{} of the checks' own",
                self.checks,
                if self.checks == 1 { "" } else { "s" }
            )?;
        }
        Ok(())
    }
}

/// `R1`, `R2`, `R3` → `R1–R3`; other lists joined with `/`.
pub fn property_range(properties: &[Property]) -> String {
    let props: Vec<&str> = properties.iter().map(|p| p.id.as_str()).collect();
    match props.as_slice() {
        [one] => one.to_string(),
        [first, .., last]
            if props.iter().all(|p| p.len() >= 2 && p[..1] == first[..1])
                && first[1..].parse::<u32>().is_ok() =>
        {
            format!("{first}–{last}")
        }
        _ => props.join("/"),
    }
}

/// The fault plan a scenario runs: its explicit plan, or one drawn from its seed.
pub fn resolve_plan(s: &Scenario, topology: &Topology) -> FaultPlan {
    if let Some(plan) = &s.plan {
        return plan.clone();
    }
    let mix = if s.swarm {
        FaultMix::swarm(&mut stream(s.seed, "swarm"))
    } else {
        s.faults.clone()
    };
    let mut plan = mix.plan(
        &mut stream(s.seed, "fault-plan"),
        &topology.crashable_names(),
        &topology.steady_names(),
        s.fault_window_ms,
    );
    if let (Some(budget), false) = (&s.budget, s.beyond_budget) {
        budget.confine(
            &mut plan,
            &topology.disk_names(),
            &mut stream(s.seed, "budget"),
        );
    }
    plan
}

/// The world configuration of a scenario whose plan is resolved.
pub fn world_config(s: &Scenario, topology: Topology) -> WorldConfig {
    let plan = s.plan.clone().unwrap_or_else(|| resolve_plan(s, &topology));
    WorldConfig {
        seed: s.seed,
        topology,
        plan,
        deadline: Duration::from_millis(s.deadline_ms),
        quiet: Duration::from_millis(s.quiet_ms),
        stop: s.stop_ms.map(Duration::from_millis),
        resolver: None,
    }
}

/// `s` with its fault plan drawn (unchanged if it has one).
pub fn resolved(def: &dyn DynScenario, s: &Scenario) -> Result<Scenario, HarnessError> {
    let mut r = s.clone();
    if r.plan.is_none() {
        r.plan = Some(resolve_plan(s, &def.topology(&s.params)?));
    }
    Ok(r)
}

/// The liveness check: every awaited node finished after every fault was
/// healed. A violation names, on each unfinished node's lane, the time from
/// the heal to the end of the run. Not judged when the run was stopped
/// early, nor (`cannot_finish`, past the fault budget) when the nodes could
/// not finish whatever they did: the note says why.
fn liveness(
    world: &WorldOutcome,
    stop_ms: Option<u64>,
    cannot_finish: Option<String>,
) -> CheckRecord {
    let not_judged = |why: String| CheckRecord {
        properties: &[LIVENESS],
        label: "",
        checked: Checked::new(Verdict::Held)
            .with_note(format!("not judged: {why}"))
            .partly(true),
    };
    if let Some(why) = cannot_finish.filter(|_| !world.unfinished.is_empty()) {
        return not_judged(format!(
            "{} could not finish past the fault budget ({why})",
            world.unfinished.join(", ")
        ));
    }
    if let Some(ms) = stop_ms.filter(|_| !world.unfinished.is_empty()) {
        // A run stopped before its end (a shrunk one) leaves its nodes at work.
        return not_judged(format!(
            "the run was stopped at {}, before its end",
            overcast_sim::timeline::secs(ms * 1_000_000)
        ));
    }
    let verdict = if world.unfinished.is_empty() {
        Verdict::Held
    } else {
        let healed = world
            .events
            .iter()
            .find(|e| e.what == Happening::Heal)
            .map_or(0, |e| e.at_ns);
        let mut v = Violation::new(
            LIVENESS.id,
            format!(
                "{} never finished their work after every fault was healed (at {}; the run ended at {})",
                world.unfinished.join(", "),
                overcast_sim::timeline::secs(healed),
                overcast_sim::timeline::secs(world.sim_ns)
            ),
        );
        for node in &world.unfinished {
            v = v.during(
                node.clone(),
                healed,
                world.sim_ns,
                "unfinished after the heal",
            );
        }
        Verdict::Broken {
            violations: vec![v],
        }
    };
    CheckRecord {
        properties: &[LIVENESS],
        label: "",
        checked: Checked::new(verdict),
    }
}

/// Runs `s` with the scenario definition `def` (registered or not).
pub fn run_with(def: &dyn DynScenario, s: &Scenario) -> RunResult {
    let started = Instant::now();
    let resolved = match resolved(def, s) {
        Ok(r) => r,
        Err(e) => return harness_failure(s, e.to_string(), started.elapsed()),
    };
    let executed = overcast_sim::rng::with_branch_path(&resolved.branch, || def.execute(&resolved));
    let executed = match executed {
        Ok(x) => x,
        Err(e) => return harness_failure(&resolved, e.to_string(), started.elapsed()),
    };
    let disks = def
        .topology(&resolved.params)
        .map_or(0, |t| t.disk_names().len());
    let past_budget = resolved.beyond_budget
        && resolved
            .budget
            .as_ref()
            .is_some_and(|b| b.exceeded_by(&executed.world.disk_faults, disks));
    let mut checks = executed.checks;
    let excuse = executed.cannot_finish.filter(|_| past_budget);
    checks.push(liveness(&executed.world, resolved.stop_ms, excuse));
    let mut outcome = Outcome::of(checks.iter().map(|c| c.checked.verdict()));
    // Past the budget, a check that could not judge is the expected end:
    // nothing wrong was served, the damage was refused.
    if outcome == Outcome::Undecided && past_budget {
        outcome = Outcome::FailedLoudly;
    }
    let trace_hash = executed.history.trace_hash();
    let mut r = RunResult {
        scenario: resolved,
        history: executed.history,
        world: executed.world,
        counters: executed.counters,
        checks,
        outcome,
        harness_error: None,
        trace_hash,
        wall: Duration::ZERO,
        check_wall: executed.check_wall,
        drawn: executed.drawn,
        subjects: executed.subjects,
        page: None,
        disks,
    };
    let input = crate::report::PageInput {
        scenario: &r.scenario,
        history: &*r.history,
        world: &r.world,
        counters: &r.counters,
        checks: &r.checks,
        outcome: r.outcome,
        first_property: r.first_property(),
        trace_hash,
    };
    r.page = crate::report::failure_page(def, &input);
    r.wall = started.elapsed();
    r
}

/// The result of a run the harness could not carry out (or that panicked).
pub fn harness_failure(s: &Scenario, error: String, wall: Duration) -> RunResult {
    RunResult {
        scenario: s.clone(),
        history: Box::new(overcast_sim::history::History::<(), ()> {
            version: overcast_sim::history::HISTORY_VERSION,
            ops: vec![],
            events: vec![],
            node_events: vec![],
            log_events: vec![],
        }),
        world: WorldOutcome::default(),
        counters: BTreeMap::new(),
        checks: vec![],
        outcome: Outcome::HarnessError,
        harness_error: Some(error),
        trace_hash: 0,
        wall,
        check_wall: Duration::ZERO,
        drawn: Default::default(),
        subjects: Default::default(),
        page: None,
        disks: 0,
    }
}

/// Runs `s` with `def` on a fresh thread; a panic becomes a harness error.
pub fn run_isolated_with(def: &'static dyn DynScenario, s: &Scenario) -> RunResult {
    let started = Instant::now();
    let s2 = s.clone();
    overcast_sim::runner::run_isolated(move || run_with(def, &s2))
        .unwrap_or_else(|p| harness_failure(s, format!("the run panicked: {p}"), started.elapsed()))
}
