//! Exploring: runs that branch from the states where something rare first
//! happened. A plain run of a seed that reaches a goal no run reached
//! before (or one few runs reached, a combination of goals never seen
//! together, or more of a goal than any run before) leaves a *site*: the
//! run, and the simulated time it first got there ([`first_reached`]). The
//! explorer spends its budget running that seed again, branched a little
//! before that time ([`overcast_sim::rng`]): the same state, then other
//! draws. Branches go first to the sites of the rarest goals (a site's
//! branches in hand over the runs that reached its goal). A site whose
//! branches reach something new earns more branches; one whose branches
//! reach nothing new loses them. A scenario's pivot goals
//! ([`crate::goals::Goal::pivot`]) leave a site at each of their first few
//! times in every fresh seed's run, scored as the rarest. A quarter of the
//! runs stay fresh seeds, so the frontier keeps being fed.
//!
//! The explorer is deterministic for a given first seed and number of runs:
//! runs go in batches of [`BATCH`] whatever the number of worker threads,
//! and each batch's results are taken in order.

pub mod page;
pub use page::page;

use crate::goals::{first_reached, DynGoal, GoalId, Tally};
use crate::registry::DynScenario;
use crate::run::{run_with, RunResult};
use crate::scenario::Scenario;
use overcast_sim::check::Outcome;
use overcast_sim::rng::BranchPoint;
use overcast_sim::runner::{sweep as sweep_runs, SweepOptions};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Runs per batch: the explorer picks a batch's runs from what it knew
/// before it, so its choices do not depend on the worker threads.
pub const BATCH: usize = 8;

/// Of each four runs, one is a fresh seed (when there are sites to branch from).
const FRESH_EVERY: usize = 4;

/// A goal reached by at most this many runs before is rare.
const RARE_RUNS: u64 = 3;

/// Sites a run leaves at most (the most novel first).
const SITES_PER_RUN: usize = 16;

/// A pivot goal's times a fresh run leaves a site for, at most.
const PIVOT_TIMES: u64 = 4;

/// Branch points a path holds at most.
const MAX_DEPTH: usize = 6;

/// How far before a goal's moment successive branches of a site branch
/// (ns): at it, then a little before, further before.
const LEADS_NS: [u64; 4] = [0, 50_000_000, 250_000_000, 1_000_000_000];

/// The most branches a site may have in hand.
const MAX_ENERGY: u32 = 48;

/// The most sites kept: past it, those of the commonest goals go (each
/// holds its run's scenario, and a long exploration leaves thousands).
const MAX_SITES: usize = 1_000;

/// What was new in a run: why it leaves a site.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Novelty {
    /// A goal no run had reached.
    FirstReach {
        /// The goal.
        goal: GoalId,
    },
    /// A goal at most [`RARE_RUNS`] runs had reached.
    Rare {
        /// The goal.
        goal: GoalId,
    },
    /// A goal reached more times than in any run before.
    HighWater {
        /// The goal.
        goal: GoalId,
        /// The new most times.
        times: u64,
    },
    /// A set of goals no run had reached together; the moment is its
    /// rarest goal's.
    Combination {
        /// The goals.
        goals: Vec<GoalId>,
    },
    /// A pivot goal ([`crate::goals::Goal::pivot`]) a fresh seed's run
    /// reached: its `times`-th time is a site however common the goal is.
    Pivot {
        /// The goal.
        goal: GoalId,
        /// Which of its times (from 1).
        times: u64,
    },
}

impl Novelty {
    /// Branches a site of this kind starts with.
    fn energy(&self) -> u32 {
        match self {
            Novelty::FirstReach { .. } => 16,
            Novelty::Rare { .. } | Novelty::HighWater { .. } => 6,
            Novelty::Combination { .. } => 4,
            Novelty::Pivot { .. } => 8,
        }
    }
}

impl std::fmt::Display for Novelty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Novelty::FirstReach { goal } => write!(f, "first {goal}"),
            Novelty::Rare { goal } => write!(f, "rare {goal}"),
            Novelty::HighWater { goal, times } => write!(f, "{goal}×{times}"),
            Novelty::Combination { goals } => write!(f, "{} goals together", goals.len()),
            Novelty::Pivot { goal, times } => write!(f, "pivot {goal}#{times}"),
        }
    }
}

/// A place to branch from: a run (its scenario, resolved, with the path it
/// ran) and the moment something new happened in it.
#[derive(Clone, Debug)]
struct Site {
    scenario: Scenario,
    /// The goal it is about (a combination's rarest).
    goal: GoalId,
    moment_ns: u64,
    energy: u32,
    /// Branches handed out so far (the next one's number).
    tried: u64,
    /// A pivot's site: scored as if its goal were the rarest.
    pivot: bool,
}

impl Site {
    /// The next branch of the site: its run's path and one more point, a
    /// lead before the moment (after the path's last point).
    fn next_branch(&mut self) -> Scenario {
        let lead = LEADS_NS[(self.tried % LEADS_NS.len() as u64) as usize];
        let floor = self.scenario.branch.last().map_or(1, |p| p.at_ns + 1);
        let at_ns = self.moment_ns.saturating_sub(lead).max(floor);
        let mut s = self.scenario.clone();
        s.branch.push(BranchPoint {
            at_ns,
            branch: self.tried,
        });
        self.tried += 1;
        s
    }
}

/// What the explorer knows of a goal so far.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    runs: u64,
    most: u64,
}

/// How an exploration runs.
#[derive(Clone, Debug)]
pub struct ExploreOptions {
    /// Stop after this many runs.
    pub runs: Option<u64>,
    /// Stop once this much wall time has passed (checked between batches).
    pub budget: Option<Duration>,
    /// The first fresh seed.
    pub seed_base: u64,
    /// The step between fresh seeds (1: every seed from `seed_base` on; N
    /// for one of N shards, each starting at its own base).
    pub seed_stride: u64,
    /// Worker threads.
    pub jobs: usize,
}

impl ExploreOptions {
    /// An exploration of `runs` runs from seed 0, on `jobs` workers, with no
    /// time budget.
    pub fn from_seed_zero(runs: u64, jobs: usize) -> ExploreOptions {
        ExploreOptions {
            runs: Some(runs),
            budget: None,
            seed_base: 0,
            seed_stride: 1,
            jobs,
        }
    }
}

/// One run of an exploration, as the explorer tells it.
pub struct ExploreRun {
    /// Its number, from 0, in the order the explorer took the runs.
    pub index: u64,
    /// The run (its scenario holds its seed and branch path).
    pub run: Box<RunResult>,
    /// What was new in it.
    pub new: Vec<Novelty>,
}

/// The explored goals at one moment of the exploration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// Runs so far.
    pub runs: u64,
    /// Wall seconds so far.
    pub seconds: f64,
    /// Goals reached by some run so far.
    pub reached: usize,
    /// Goals first reached since the sample before.
    pub new: Vec<String>,
    /// Sites to branch from.
    pub sites: usize,
}

/// What an exploration did.
#[derive(Clone, Debug, Serialize)]
pub struct Explored {
    /// The scenario.
    pub scenario: String,
    /// Runs made: fresh seeds and branches.
    pub runs: u64,
    /// Of those, branched runs.
    pub branched: u64,
    /// Wall seconds.
    pub seconds: f64,
    /// The goals, over every run (a branched run counts under its seed).
    pub goals: Tally,
    /// Goals reached over time: a sample after each batch that reached a
    /// new goal, and every 64 runs.
    pub over_time: Vec<Sample>,
    /// The worst outcome.
    #[serde(skip)]
    pub worst: Outcome,
    /// The first run that did not pass: its number and the wall seconds
    /// until it ended.
    pub first_failure: Option<(u64, f64)>,
}

/// The explorer's state between batches.
struct Frontier {
    goals_of: BTreeMap<GoalId, Seen>,
    combinations: BTreeSet<Vec<GoalId>>,
    sites: Vec<Site>,
    /// The next fresh seed, and the step to the one after it.
    next_seed: u64,
    seed_stride: u64,
}

impl Frontier {
    /// The scenarios of the next batch of `n` runs, each with the site it
    /// branches (`None` for a fresh seed).
    fn pick(
        &mut self,
        n: usize,
        first_index: u64,
        make: &(dyn Fn(u64) -> Scenario + Sync),
    ) -> Vec<(Scenario, Option<usize>)> {
        let mut pending = vec![0u32; self.sites.len()];
        (0..n)
            .map(|i| {
                let fresh_turn = (first_index + i as u64).is_multiple_of(FRESH_EVERY as u64);
                // The site with the most branches left in hand for the
                // rarest goal (branches over the runs that reached its
                // goal), the oldest of equals.
                let best = (0..self.sites.len())
                    .filter(|&k| self.sites[k].energy > pending[k])
                    .max_by_key(|&k| (self.score(k, pending[k]), std::cmp::Reverse(k)));
                match best {
                    Some(k) if !fresh_turn => {
                        pending[k] += 1;
                        (self.sites[k].next_branch(), Some(k))
                    }
                    _ => {
                        let seed = self.next_seed;
                        self.next_seed += self.seed_stride;
                        (make(seed), None)
                    }
                }
            })
            .collect()
    }

    /// How much a site is worth branching: its branches in hand over the
    /// runs that reached its goal.
    fn score(&self, k: usize, pending: u32) -> u64 {
        let runs = if self.sites[k].pivot {
            1
        } else {
            self.goals_of.get(&self.sites[k].goal).map_or(1, |s| s.runs)
        };
        u64::from(self.sites[k].energy.saturating_sub(pending)) * 1_000_000 / runs.max(1)
    }

    /// Keeps at most `max` sites: the best scored, the oldest of equals.
    fn keep_the_rarest(&mut self, max: usize) {
        if self.sites.len() <= max {
            return;
        }
        let mut order: Vec<usize> = (0..self.sites.len()).collect();
        order.sort_by_key(|&k| (std::cmp::Reverse(self.score(k, 0)), k));
        let mut keep = vec![false; self.sites.len()];
        for &k in &order[..max] {
            keep[k] = true;
        }
        let mut k = 0;
        self.sites.retain(|_| {
            k += 1;
            keep[k - 1]
        });
    }

    /// What is new in a run that reached `counts`, noted as seen.
    fn note(&mut self, counts: &[(GoalId, u64)]) -> Vec<Novelty> {
        let mut new = Vec::new();
        let reached: Vec<GoalId> = counts
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(g, _)| *g)
            .collect();
        for (goal, n) in counts.iter().filter(|(_, n)| *n > 0) {
            let seen = self.goals_of.entry(*goal).or_default();
            if seen.runs == 0 {
                new.push(Novelty::FirstReach { goal: *goal });
            } else if seen.runs <= RARE_RUNS {
                new.push(Novelty::Rare { goal: *goal });
            } else if *n > seen.most {
                new.push(Novelty::HighWater {
                    goal: *goal,
                    times: *n,
                });
            }
            seen.runs += 1;
            seen.most = seen.most.max(*n);
        }
        if !reached.is_empty() && self.combinations.insert(reached.clone()) {
            new.push(Novelty::Combination { goals: reached });
        }
        new
    }

    /// The goal whose moment a novelty branches at: its own, or a
    /// combination's rarest (fewest runs so far).
    fn goal_of(&self, why: &Novelty) -> Option<(GoalId, u64)> {
        match why {
            Novelty::FirstReach { goal } | Novelty::Rare { goal } => Some((*goal, 1)),
            Novelty::HighWater { goal, times } | Novelty::Pivot { goal, times } => {
                Some((*goal, *times))
            }
            Novelty::Combination { goals } => goals
                .iter()
                .min_by_key(|g| self.goals_of.get(g).map_or(0, |s| s.runs))
                .map(|g| (*g, 1)),
        }
    }

    /// Leaves sites for what was new in run `r`.
    fn add_sites(&mut self, r: &RunResult, goals: &[DynGoal], new: &[Novelty]) {
        // A run that did not pass leaves none: its branches would mostly
        // fail the same way, before their branch point.
        if r.scenario.branch.len() >= MAX_DEPTH || !r.outcome.passes() {
            return;
        }
        let floor = r.scenario.branch.last().map_or(0, |p| p.at_ns);
        for why in new.iter().take(SITES_PER_RUN) {
            let Some((id, times)) = self.goal_of(why) else {
                continue;
            };
            let Some(goal) = goals.iter().find(|g| g.id == id) else {
                continue;
            };
            let Some(moment_ns) = first_reached(goal, &*r.history, times) else {
                continue;
            };
            // Reached before the run's own last branch point: its parent's
            // state, already a site's.
            if moment_ns <= floor {
                continue;
            }
            // The same run at the same moment (a goal that is both new and
            // a pivot, two goals reached at once) would branch the same paths.
            if self.sites.iter().any(|s| {
                s.moment_ns == moment_ns
                    && s.scenario.seed == r.scenario.seed
                    && s.scenario.branch == r.scenario.branch
            }) {
                continue;
            }
            self.sites.push(Site {
                scenario: r.scenario.clone(),
                goal: id,
                moment_ns,
                energy: why.energy(),
                tried: 0,
                pivot: matches!(why, Novelty::Pivot { .. }),
            });
        }
    }
}

/// Explores `def`: fresh seeds from `make(seed)` (from
/// [`ExploreOptions::seed_base`] on) and branches of the runs where
/// something new happened, until the runs or the time are spent.
/// `on_run` hears of every run in order (to print it and save failures).
pub fn explore(
    def: &'static dyn DynScenario,
    make: &(dyn Fn(u64) -> Scenario + Sync),
    opts: &ExploreOptions,
    mut on_run: impl FnMut(&ExploreRun, &Explored),
) -> Explored {
    let started = Instant::now();
    let first = make(opts.seed_base);
    let goals_of_first = def.goals(&first.params).unwrap_or_default();
    let mut explored = Explored {
        scenario: def.name().to_string(),
        runs: 0,
        branched: 0,
        seconds: 0.0,
        goals: Tally::new(def.name(), first.swarm, &goals_of_first),
        over_time: Vec::new(),
        worst: Outcome::Passed,
        first_failure: None,
    };
    let mut frontier = Frontier {
        goals_of: BTreeMap::new(),
        combinations: BTreeSet::new(),
        sites: Vec::new(),
        next_seed: opts.seed_base,
        seed_stride: opts.seed_stride.max(1),
    };
    let workers = SweepOptions {
        jobs: opts.jobs.max(1),
        progress: false,
        stop_after_failures: None,
    };
    let mut new_since: Vec<String> = Vec::new();
    let mut last_sample = 0u64;
    loop {
        let left = opts
            .runs
            .map_or(BATCH as u64, |n| n.saturating_sub(explored.runs));
        let out_of_time = opts.budget.is_some_and(|b| started.elapsed() >= b);
        if left == 0 || out_of_time {
            break;
        }
        let batch = frontier.pick(left.min(BATCH as u64) as usize, explored.runs, make);
        let indices: Vec<u64> = (0..batch.len() as u64).collect();
        let results = sweep_runs(
            &indices,
            &workers,
            |i| Box::new(run_with(def, &batch[i as usize].0)),
            |_| false,
        );
        for (i, result) in results {
            let (scenario, site) = &batch[i as usize];
            let run = result.unwrap_or_else(|panic| {
                Box::new(crate::run::harness_failure(
                    scenario,
                    format!("the run panicked: {panic}"),
                    Duration::ZERO,
                ))
            });
            let goals = def.goals(&run.scenario.params).unwrap_or_default();
            let counts = crate::goals::count_all(&goals, &*run.history);
            let reached: Vec<(GoalId, u64)> =
                counts.iter().copied().filter(|(_, n)| *n > 0).collect();
            let new = frontier.note(&counts);
            for n in &new {
                if let Novelty::FirstReach { goal } = n {
                    new_since.push(goal.to_string());
                }
            }
            if let Some(k) = site {
                let s = &mut frontier.sites[*k];
                if new.is_empty() {
                    s.energy = s.energy.saturating_sub(1);
                } else {
                    s.energy = (s.energy + 4).min(MAX_ENERGY);
                }
                explored.branched += 1;
            }
            // A fresh seed's pivots are sites too, whatever was new.
            let mut why = Vec::new();
            if run.scenario.branch.is_empty() {
                for (g, n) in &counts {
                    if goals.iter().any(|x| x.id == *g && x.pivot) {
                        why.extend(
                            (1..=(*n).min(PIVOT_TIMES))
                                .map(|times| Novelty::Pivot { goal: *g, times }),
                        );
                    }
                }
            }
            why.extend(new.iter().cloned());
            frontier.add_sites(&run, &goals, &why);
            explored.goals.add(run.scenario.seed, &reached);
            explored.runs += 1;
            explored.worst = explored.worst.min(run.outcome);
            if !run.outcome.passes() && explored.first_failure.is_none() {
                explored.first_failure = Some((explored.runs - 1, started.elapsed().as_secs_f64()));
            }
            explored.seconds = started.elapsed().as_secs_f64();
            on_run(
                &ExploreRun {
                    index: explored.runs - 1,
                    run,
                    new,
                },
                &explored,
            );
        }
        frontier.sites.retain(|s| s.energy > 0);
        frontier.keep_the_rarest(MAX_SITES);
        if !new_since.is_empty() || explored.runs - last_sample >= 64 {
            explored.over_time.push(Sample {
                runs: explored.runs,
                seconds: started.elapsed().as_secs_f64(),
                reached: frontier.goals_of.len(),
                new: std::mem::take(&mut new_since),
                sites: frontier.sites.len(),
            });
            last_sample = explored.runs;
        }
    }
    explored.seconds = started.elapsed().as_secs_f64();
    if explored.over_time.last().map(|s| s.runs) != Some(explored.runs) {
        explored.over_time.push(Sample {
            runs: explored.runs,
            seconds: explored.seconds,
            reached: frontier.goals_of.len(),
            new: new_since,
            sites: frontier.sites.len(),
        });
    }
    explored
}
