//! Reachability goals: named states a scenario's runs should sometimes reach
//! (a lease taken over just after it expired, a 412 on a checkpoint, a
//! failover during a write), each counted on a finished run's history. A
//! checker says whether a run was right; a goal says whether the run went
//! where bugs hide, so a sweep can tell which corners its seeds never visit.
//!
//! A scenario declares its goals with [`crate::registry::ScenarioDef::goals`];
//! [`reached`] counts them on a run, [`Tally`] sums them over the seeds of a
//! sweep (which seeds reached each, how often), [`GoalsFile`] writes and
//! merges the tallies (`goals.json`), and [`section`] renders a run's goals
//! as a part of its failure page. Goals read the finished history only: they
//! never change a run or its trace.

use crate::error::HarnessError;
use crate::registry::{DynScenario, RunHistory};
use crate::run::{run_with, RunResult};
use crate::scenario::Scenario;
use overcast_sim::history::{Attempt, AttemptResult, History, NodeEvent, OpRecord};
use overcast_sim::runner::{sweep as sweep_seeds, SweepOptions};
use overcast_sim::timeline::Section;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A goal's id: short, stable, kebab-case (`renew-across-expiry`), unique
/// within its scenario. Written as the bare id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoalId(&'static str);

impl GoalId {
    /// The id `id`.
    pub const fn new(id: &'static str) -> GoalId {
        GoalId(id)
    }

    /// The id as text.
    pub const fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for GoalId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl PartialEq<&str> for GoalId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl Serialize for GoalId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

/// How many times a run's history reached a goal's state (0: not reached).
pub type Count<H> = Box<dyn Fn(&H) -> u64 + Send + Sync>;

/// A state a scenario's runs should sometimes reach: its id, what it means
/// in one sentence, and how many times a history reached it. The count is
/// pure, deterministic and cheap: one pass over the history.
pub struct Goal<H: ?Sized> {
    /// Its id.
    pub id: GoalId,
    /// What reaching it means, in one sentence.
    pub meaning: &'static str,
    /// A moment worth branching from however common it is
    /// ([`Goal::pivot`]).
    pub pivot: bool,
    /// Reached only by steps a scenario takes on the explorer's branches
    /// ([`Goal::branch_only`]): no plain run reaches it.
    pub branch_only: bool,
    count: Count<H>,
}

impl<H: ?Sized> std::fmt::Debug for Goal<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Goal")
            .field("id", &self.id)
            .field("meaning", &self.meaning)
            .finish()
    }
}

impl<H: ?Sized + 'static> Goal<H> {
    /// The goal `id`, meaning `meaning`, counted by `count`.
    pub fn new(
        id: &'static str,
        meaning: &'static str,
        count: impl Fn(&H) -> u64 + Send + Sync + 'static,
    ) -> Goal<H> {
        Goal {
            id: GoalId(id),
            meaning,
            pivot: false,
            branch_only: false,
            count: Box::new(count),
        }
    }

    /// Marks the goal a pivot: a moment the explorer branches from every
    /// time a fresh seed's run reaches it (each of its first few times), not
    /// only when it is rare, because what happens just after it decides
    /// whether a bug shows (a successor elected while the old primary is
    /// cut off, say).
    pub fn pivot(mut self) -> Goal<H> {
        self.pivot = true;
        self
    }

    /// Marks the goal reached only by steps the scenario takes on the
    /// explorer's branches (past a branch point): a sweep's seeds never
    /// reach it, an exploration's branches do.
    pub fn branch_only(mut self) -> Goal<H> {
        self.branch_only = true;
        self
    }

    /// How many times `history` reached it.
    pub fn count(&self, history: &H) -> u64 {
        (self.count)(history)
    }
}

/// A goal over any history: a scenario's goal behind [`DynScenario::goals`].
pub type DynGoal = Goal<dyn RunHistory>;

/// `goal` over any history: a history of another type (a harness failure's)
/// reaches nothing.
pub fn erase<H: RunHistory>(goal: Goal<H>) -> DynGoal {
    let Goal {
        id,
        meaning,
        pivot,
        branch_only,
        count,
    } = goal;
    Goal {
        id,
        meaning,
        pivot,
        branch_only,
        count: Box::new(move |h: &dyn RunHistory| h.as_any().downcast_ref::<H>().map_or(0, &count)),
    }
}

/// Counts `goals` on `history`, in their order, zeros included.
pub fn count_all(goals: &[DynGoal], history: &dyn RunHistory) -> Vec<(GoalId, u64)> {
    goals.iter().map(|g| (g.id, g.count(history))).collect()
}

/// The goals run `run` reached and how many times, in the scenario's order
/// (goals it did not reach are left out; none for parameters that do not
/// parse).
pub fn reached(def: &dyn DynScenario, run: &RunResult) -> Vec<(GoalId, u64)> {
    let goals = def.goals(&run.scenario.params).unwrap_or_default();
    count_all(&goals, &*run.history)
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// The earliest simulated time by which `history` had reached `goal` at
/// least `times` times: counted on the history as it stood at each of its
/// moments ([`RunHistory::until`]), found by bisection (a goal's count
/// grows as the history does). `None` when the whole history reaches it
/// fewer times. Goals count on finished histories; this says when.
pub fn first_reached(goal: &DynGoal, history: &dyn RunHistory, times: u64) -> Option<u64> {
    let times = times.max(1);
    let moments = history.moments();
    let reached = |i: usize| goal.count(&*history.until(moments[i])) >= times;
    if moments.is_empty() || goal.count(history) < times {
        return None;
    }
    // The first moment whose prefix reaches it; the last one if none does
    // (a count that a prefix cannot show, e.g. one that needs the end).
    let (mut lo, mut hi) = (0usize, moments.len() - 1);
    if !reached(hi) {
        return moments.last().copied();
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if reached(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(moments[lo])
}

/// The goals of a run as a section of its failure page: every goal of the
/// scenario, how many times this run reached it and what it means; `None`
/// when the scenario declares none or its parameters do not parse. The
/// page pushes it onto its `sections`.
pub fn section(
    def: &dyn DynScenario,
    scenario: &Scenario,
    history: &dyn RunHistory,
) -> Option<Section> {
    let goals = def.goals(&scenario.params).ok()?;
    if goals.is_empty() {
        return None;
    }
    let counts = count_all(&goals, history);
    let width = goals.iter().map(|g| g.id.as_str().len()).max().unwrap_or(0);
    let reached = counts.iter().filter(|(_, n)| *n > 0).count();
    let mut text = format!(
        "This run reached {reached} of the scenario's {} goals (states its runs should sometimes reach).\n\n",
        goals.len()
    );
    for (g, (_, n)) in goals.iter().zip(&counts) {
        let times = if *n == 0 {
            "    —".to_string()
        } else {
            format!("{n:>4}×")
        };
        text += &format!("{times}  {:<width$}  {}\n", g.id.as_str(), g.meaning);
    }
    Some(Section::Text {
        title: format!("goals reached: {reached} of {}", goals.len()),
        text,
    })
}

/// How many seeds [`GoalTally::first_seeds`] lists.
pub const FIRST_SEEDS: usize = 5;

/// One goal over a sweep's seeds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalTally {
    /// The goal's id.
    pub id: String,
    /// What it means.
    pub meaning: String,
    /// Seeds whose run reached it.
    pub seeds: u64,
    /// The lowest of those seeds, at most [`FIRST_SEEDS`], ascending.
    pub first_seeds: Vec<u64>,
    /// Times it was reached, summed over the seeds.
    pub times: u64,
}

impl GoalTally {
    fn add(&mut self, seed: u64, times: u64) {
        if times == 0 {
            return;
        }
        self.seeds += 1;
        self.times += times;
        self.note_seeds(&[seed]);
    }

    fn note_seeds(&mut self, seeds: &[u64]) {
        self.first_seeds.extend_from_slice(seeds);
        self.first_seeds.sort_unstable();
        self.first_seeds.dedup();
        self.first_seeds.truncate(FIRST_SEEDS);
    }
}

/// One scenario's goals over the seeds of a sweep (or several merged).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tally {
    /// The scenario.
    pub scenario: String,
    /// Swarm mode.
    #[serde(default)]
    pub swarm: bool,
    /// Seeds counted.
    pub runs: u64,
    /// Each goal, in the scenario's order.
    pub goals: Vec<GoalTally>,
}

impl Tally {
    /// An empty tally of `goals` for `scenario`.
    pub fn new(scenario: &str, swarm: bool, goals: &[DynGoal]) -> Tally {
        Tally {
            scenario: scenario.to_string(),
            swarm,
            runs: 0,
            goals: goals
                .iter()
                .map(|g| GoalTally {
                    id: g.id.to_string(),
                    meaning: g.meaning.to_string(),
                    seeds: 0,
                    first_seeds: Vec::new(),
                    times: 0,
                })
                .collect(),
        }
    }

    /// Counts seed `seed`'s run, which reached `reached` (as [`reached`]
    /// gives it; a goal the tally does not know is added at the end).
    pub fn add(&mut self, seed: u64, reached: &[(GoalId, u64)]) {
        self.runs += 1;
        for (id, n) in reached {
            match self.goals.iter_mut().find(|g| g.id == id.as_str()) {
                Some(g) => g.add(seed, *n),
                None => {
                    let mut g = GoalTally {
                        id: id.to_string(),
                        meaning: String::new(),
                        seeds: 0,
                        first_seeds: Vec::new(),
                        times: 0,
                    };
                    g.add(seed, *n);
                    self.goals.push(g);
                }
            }
        }
    }

    /// Adds `other`'s counts (another shard of the same scenario): runs,
    /// seeds and times summed, the lowest seeds kept; goals only `other`
    /// knows come after this one's.
    pub fn merge(&mut self, other: &Tally) {
        self.runs += other.runs;
        for o in &other.goals {
            match self.goals.iter_mut().find(|g| g.id == o.id) {
                Some(g) => {
                    g.seeds += o.seeds;
                    g.times += o.times;
                    g.note_seeds(&o.first_seeds);
                    if g.meaning.is_empty() {
                        g.meaning.clone_from(&o.meaning);
                    }
                }
                None => self.goals.push(o.clone()),
            }
        }
    }

    /// The goals no seed reached.
    pub fn unreached(&self) -> Vec<&GoalTally> {
        self.goals.iter().filter(|g| g.seeds == 0).collect()
    }

    /// The tally for the terminal: a heading, then one line per goal (seeds
    /// that reached it, the first few, times) and its meaning.
    pub fn render(&self) -> String {
        let width = self.goals.iter().map(|g| g.id.len()).max().unwrap_or(0);
        let reached = self.goals.len() - self.unreached().len();
        let mut out = format!(
            "goals   {}{}: {reached} of {} reached over {} seeds\n",
            self.scenario,
            if self.swarm { " (swarm)" } else { "" },
            self.goals.len(),
            self.runs
        );
        for g in &self.goals {
            let seen = if g.seeds == 0 {
                "never reached".to_string()
            } else {
                let first: Vec<String> = g.first_seeds.iter().map(u64::to_string).collect();
                let more = if g.seeds > g.first_seeds.len() as u64 {
                    ", …"
                } else {
                    ""
                };
                format!(
                    "{:>5}/{} seeds ({:>3.0}%), {} times; seeds {}{more}",
                    g.seeds,
                    self.runs,
                    100.0 * g.seeds as f64 / self.runs.max(1) as f64,
                    g.times,
                    first.join(", ")
                )
            };
            out += &format!("  {:<width$}  {seen}\n", g.id);
            if !g.meaning.is_empty() {
                out += &format!("  {:<width$}    {}\n", "", g.meaning);
            }
        }
        out
    }
}

/// The goals file a sweep writes (`goals.json` in its `--out` folder): one
/// [`Tally`] per scenario and swarm switch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalsFile {
    /// The tallies, in the order they were added.
    pub tallies: Vec<Tally>,
}

/// The goals file's name in a sweep's `--out` folder (a shard's is
/// [`goals_file_name`]).
pub const GOALS_FILE: &str = "goals.json";

/// The name of the goals file a sweep writes: `goals.json`, or
/// `goals-shardK-of-N.json` for shard K of N (so that shards may share a
/// folder).
pub fn goals_file_name(shard: Option<(u64, u64)>) -> String {
    match shard {
        Some((k, n)) => format!("goals-shard{k}-of-{n}.json"),
        None => GOALS_FILE.to_string(),
    }
}

impl GoalsFile {
    /// Adds `tally`, merged into the one of its scenario and swarm switch.
    pub fn add(&mut self, tally: &Tally) {
        match self
            .tallies
            .iter_mut()
            .find(|t| t.scenario == tally.scenario && t.swarm == tally.swarm)
        {
            Some(t) => t.merge(tally),
            None => self.tallies.push(tally.clone()),
        }
    }

    /// Adds every tally of `other`.
    pub fn merge(&mut self, other: &GoalsFile) {
        for t in &other.tallies {
            self.add(t);
        }
    }

    /// Writes it as `dir/NAME` (pretty JSON; NAME from [`goals_file_name`]);
    /// the path written.
    pub fn write(&self, dir: &Path, name: &str) -> Result<PathBuf, HarnessError> {
        let path = dir.join(name);
        let text = serde_json::to_string_pretty(self).expect("goals serialise");
        std::fs::write(&path, text + "\n").map_err(|e| HarnessError::write(&path, e))?;
        Ok(path)
    }

    /// Reads a goals file.
    pub fn read(path: &Path) -> Result<GoalsFile, HarnessError> {
        let text = std::fs::read_to_string(path).map_err(|e| HarnessError::read(path, e))?;
        serde_json::from_str(&text)
            .map_err(|e| HarnessError::invalid(format!("{}: {e}", path.display())))
    }

    /// The sum of the goals files (`goals*.json`) in `dirs`, each folder's
    /// in name order (folders without one are skipped); `None` when there
    /// is none.
    pub fn read_dirs(dirs: &[PathBuf]) -> Result<Option<GoalsFile>, HarnessError> {
        let mut sum: Option<GoalsFile> = None;
        for dir in dirs {
            let entries = std::fs::read_dir(dir).map_err(|e| HarnessError::read(dir, e))?;
            let mut files: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("goals") && n.ends_with(".json"))
                })
                .collect();
            files.sort();
            for path in files {
                sum.get_or_insert_with(GoalsFile::default)
                    .merge(&GoalsFile::read(&path)?);
            }
        }
        Ok(sum)
    }

    /// Every tally for the terminal.
    pub fn render(&self) -> String {
        self.tallies.iter().map(Tally::render).collect()
    }
}

/// The goals tally of a sweep's seed reports ([`crate::sweep::SeedReport::goals`]),
/// for `def`'s goals with the parameters of `scenario` (one of the sweep's).
pub fn tally_reports(
    def: &dyn DynScenario,
    scenario: &Scenario,
    reports: &[crate::sweep::SeedReport],
) -> Tally {
    let goals = def.goals(&scenario.params).unwrap_or_default();
    let mut tally = Tally::new(def.name(), scenario.swarm, &goals);
    for r in reports {
        tally.add(r.seed, &r.goals);
    }
    tally
}

/// Runs `make(seed)` with `def` for every seed, `opts.jobs` at a time, and
/// tallies the goals the runs reached (whatever their outcome). A run that
/// panics counts as a run that reached nothing.
pub fn sweep(
    def: &'static dyn DynScenario,
    seeds: &[u64],
    opts: &SweepOptions,
    make: impl Fn(u64) -> Scenario + Sync,
) -> Result<Tally, HarnessError> {
    let first = make(seeds.first().copied().unwrap_or(0));
    let goals = def.goals(&first.params)?;
    let mut tally = Tally::new(def.name(), first.swarm, &goals);
    let results = sweep_seeds(
        seeds,
        opts,
        |seed| reached(def, &run_with(def, &make(seed))),
        |_| false,
    );
    for (seed, r) in results {
        tally.add(seed, &r.unwrap_or_default());
    }
    Ok(tally)
}

/// How many operations of `history` satisfy `pred`: the count of a goal
/// that one kind of call reaches.
pub fn count_ops<C, R, E, L>(
    history: &History<C, R, E, L>,
    pred: impl Fn(&OpRecord<C, R>) -> bool,
) -> u64 {
    history.ops.iter().filter(|o| pred(o)).count() as u64
}

/// How many node events of `history` satisfy `pred`.
pub fn count_events<C, R, E, L>(
    history: &History<C, R, E, L>,
    pred: impl Fn(&NodeEvent<E>) -> bool,
) -> u64 {
    history.node_events.iter().filter(|e| pred(e)).count() as u64
}

/// The status an attempt was answered with; `None` for one never answered
/// (a timeout, a refused connect, a cancel).
pub fn attempt_status(a: &Attempt) -> Option<u16> {
    match a.result {
        AttemptResult::Status { status, .. } => Some(status),
        AttemptResult::Timeout | AttemptResult::NotSent | AttemptResult::Cancelled => None,
    }
}

/// Whether `op`'s SDK sent it again after its first attempt ended as
/// `first` says (a status, `None` for a timeout), and the operation then
/// got an answer (its outcome is known).
pub fn retried_after<C, R>(op: &OpRecord<C, R>, first: impl Fn(Option<u16>) -> bool) -> bool {
    op.attempts.len() > 1 && op.result.is_some() && first(attempt_status(&op.attempts[0]))
}

/// Whether `at_ns` falls within `op`, from its invocation to its return (to
/// the end of the run when its outcome is unknown).
pub fn in_flight<C, R>(op: &OpRecord<C, R>, at_ns: u64) -> bool {
    op.invoke_ns <= at_ns && op.return_ns.is_none_or(|r| at_ns <= r)
}

/// How many of the sorted instants `times` fall within at least one of the
/// operations `ops` ([`in_flight`]): one pass over the operations, each
/// finding its instants by binary search.
pub fn instants_in_flight<'a, C: 'a, R: 'a>(
    times: &[u64],
    ops: impl IntoIterator<Item = &'a OpRecord<C, R>>,
) -> u64 {
    let mut covered = vec![false; times.len()];
    for op in ops {
        let from = times.partition_point(|t| *t < op.invoke_ns);
        let to = op
            .return_ns
            .map_or(times.len(), |r| times.partition_point(|t| *t <= r));
        for c in covered.iter_mut().take(to).skip(from) {
            *c = true;
        }
    }
    covered.iter().filter(|c| **c).count() as u64
}
