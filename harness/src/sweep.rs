//! Sweeps: one scenario over many seeds on all cores, each seed summarised
//! (the failing runs of the lowest seeds kept whole for saving, up to a cap,
//! and shrunk on the spot when asked),
//! with an optional determinism check that runs every seed twice and, when
//! the traces differ, says where they first diverge; shards of a seed range
//! for many machines, the JSON lines each shard writes, and merging them.

use crate::error::HarnessError;
use crate::registry::DynScenario;
use crate::run::{harness_failure, run_with, RunResult};
use crate::scenario::Scenario;
use crate::shrink::Shrunk;
use overcast_sim::check::{Outcome, PropertyId};
use overcast_sim::runner::{sweep as sweep_seeds, SweepOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

/// One seed's result.
pub struct SeedReport {
    /// The seed.
    pub seed: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// The property that named the outcome.
    pub property: Option<PropertyId>,
    /// Why it did not pass, in one line.
    pub problem: Option<String>,
    /// Operations of the workload's clients (the checks' own calls are not
    /// counted: the same count as the shrinker's and the page's).
    pub ops: usize,
    /// Operations with an unknown outcome.
    pub unknown: usize,
    /// SDK retries.
    pub retries: usize,
    /// Faults injected.
    pub faults: u64,
    /// The history's trace hash.
    pub trace_hash: u64,
    /// Wall seconds of the run.
    pub seconds: f64,
    /// The run, when it did not pass and is one of the
    /// [`SeedChecks::keep_failed`] lowest failing seeds (to save it).
    pub failed_run: Option<Box<RunResult>>,
    /// The failure shrunk, when the sweep shrinks failures and keeps this
    /// seed's run.
    pub shrunk: Option<Box<Shrunk>>,
    /// The goals the run reached and how often ([`crate::goals::reached`]).
    pub goals: Vec<(crate::goals::GoalId, u64)>,
}

/// What a sweep does with each seed besides running it once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeedChecks {
    /// Run every seed twice on one thread; a differing trace hash is a
    /// harness error that says where the traces diverge.
    pub determinism: bool,
    /// Shrink every kept violation, liveness failure and undecided run as
    /// soon as it is found, with at most this many candidate runs.
    pub shrink: Option<usize>,
    /// How many failing runs to keep whole: those of the lowest failing
    /// seeds, whatever order the workers finish in. A run takes megabytes,
    /// so a sweep where thousands of seeds fail must not hold them all; the
    /// others are summarised only. 0 keeps none.
    pub keep_failed: usize,
}

/// A failing run kept whole, with its shrunk form when it was shrunk.
type KeptRun = (Box<RunResult>, Option<Box<Shrunk>>);

/// The failing runs kept whole so far: at most `cap`, the lowest seeds.
struct KeptRuns {
    cap: usize,
    runs: Mutex<BTreeMap<u64, KeptRun>>,
}

impl KeptRuns {
    fn new(cap: usize) -> Self {
        KeptRuns {
            cap,
            runs: Mutex::new(BTreeMap::new()),
        }
    }

    /// Whether a failure of `seed` could still be among the lowest `cap`.
    /// A seed that is, in the end, is admitted whenever it is asked about:
    /// fewer than `cap` failing seeds are below it, so the kept set is
    /// either not full or holds a higher seed.
    fn admits(&self, seed: u64) -> bool {
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        self.cap > 0 && (runs.len() < self.cap || runs.keys().next_back() > Some(&seed))
    }

    /// Keeps `seed`'s run, dropping the highest seeds beyond the cap.
    fn keep(&self, seed: u64, run: Box<RunResult>, shrunk: Option<Box<Shrunk>>) {
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        runs.insert(seed, (run, shrunk));
        while runs.len() > self.cap {
            runs.pop_last();
        }
    }
}

/// Where two runs of one scenario first differ: the entry number and each
/// run's line there (time, node, what).
pub fn divergence(a: &RunResult, b: &RunResult) -> String {
    let (la, lb) = (a.history.trace_lines(), b.history.trace_lines());
    let show = |l: Option<&(u64, String)>| match l {
        Some((t, what)) => format!("{:.6} s {what}", *t as f64 / 1e9),
        None => "(nothing: the trace ended)".into(),
    };
    for i in 0..la.len().max(lb.len()) {
        if la.get(i) != lb.get(i) {
            return format!(
                "the traces first differ at entry {i}:\n  run 1: {}\n  run 2: {}",
                show(la.get(i)),
                show(lb.get(i))
            );
        }
    }
    "the traces have the same entries but different hashes".into()
}

/// Runs `make(seed)` with `def` for every seed, `opts.jobs` at a time. With
/// `check_determinism`, every seed runs twice on one thread and a differing
/// trace hash is a harness error that says where the traces diverge.
pub fn sweep(
    def: &'static dyn DynScenario,
    seeds: &[u64],
    opts: &SweepOptions,
    make: impl Fn(u64) -> Scenario + Sync,
    check_determinism: bool,
) -> Vec<SeedReport> {
    let checks = SeedChecks {
        determinism: check_determinism,
        ..SeedChecks::default()
    };
    sweep_with(def, seeds, opts, make, checks)
}

/// [`sweep`] with the determinism check, the failing runs kept and their
/// shrinking as `checks` say. Each failing run beyond those kept is dropped
/// as soon as its seed is summarised, so memory stays bounded however many
/// seeds fail.
pub fn sweep_with(
    def: &'static dyn DynScenario,
    seeds: &[u64],
    opts: &SweepOptions,
    make: impl Fn(u64) -> Scenario + Sync,
    checks: SeedChecks,
) -> Vec<SeedReport> {
    let kept = KeptRuns::new(checks.keep_failed);
    let results = sweep_seeds(
        seeds,
        opts,
        |seed| {
            let s = make(seed);
            let mut r = run_with(def, &s);
            if checks.determinism && r.outcome != Outcome::HarnessError {
                // The second run shares the thread with the first: a stronger test.
                let again = run_with(def, &s);
                if again.trace_hash != r.trace_hash {
                    let mut failed = harness_failure(
                        &r.scenario,
                        format!(
                            "determinism: two runs of seed {seed} gave trace hashes {:016x} and {:016x}; {}",
                            r.trace_hash,
                            again.trace_hash,
                            divergence(&r, &again)
                        ),
                        r.wall,
                    );
                    failed.history = r.history;
                    r = failed;
                }
            }
            let seed_report = report(def, seed, &r);
            if !r.outcome.passes() && kept.admits(seed) {
                let shrunk = checks
                    .shrink
                    .filter(|_| r.outcome != Outcome::HarnessError)
                    .and_then(|max_tries| crate::shrink::shrink(def, &s, max_tries, |_, _| {}))
                    .map(Box::new);
                kept.keep(seed, Box::new(r), shrunk);
            }
            seed_report
        },
        |r| !r.outcome.passes(),
    );
    let mut reports: Vec<SeedReport> = results
        .into_iter()
        .map(|(seed, r)| {
            r.unwrap_or_else(|panic| {
                let failed = harness_failure(
                    &make(seed),
                    format!("the run panicked: {panic}"),
                    Duration::ZERO,
                );
                let seed_report = report(def, seed, &failed);
                kept.keep(seed, Box::new(failed), None);
                seed_report
            })
        })
        .collect();
    let mut runs = kept.runs.into_inner().unwrap_or_else(|e| e.into_inner());
    for r in &mut reports {
        if let Some((run, shrunk)) = runs.remove(&r.seed) {
            r.failed_run = Some(run);
            r.shrunk = shrunk;
        }
    }
    reports
}

fn report(def: &dyn DynScenario, seed: u64, r: &RunResult) -> SeedReport {
    let count = r.op_count();
    SeedReport {
        seed,
        outcome: r.outcome,
        property: r.first_property(),
        problem: r.first_problem(),
        ops: count.client,
        unknown: count.unknown,
        retries: count.retries,
        faults: r.faults_injected(),
        trace_hash: r.trace_hash,
        seconds: r.wall.as_secs_f64(),
        failed_run: None,
        shrunk: None,
        goals: crate::goals::reached(def, r),
    }
}

/// How a failure found by a sweep stands against an earlier sweep's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Standing {
    /// It fails now and did not before.
    New,
    /// It failed before and fails now.
    Ongoing,
    /// It failed before; now its scenario was swept and it did not fail.
    Resolved,
}

impl Standing {
    /// The word printed before the finding.
    pub fn word(self) -> &'static str {
        match self {
            Standing::New => "new",
            Standing::Ongoing => "ongoing",
            Standing::Resolved => "resolved",
        }
    }
}

/// A scenario's failures of one property (or, without a property, of one
/// outcome), now and in an earlier sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// How it stands.
    pub standing: Standing,
    /// The scenario.
    pub scenario: String,
    /// The property that named the outcome, else the outcome's word.
    pub property: String,
    /// The seeds that failed with it now, in order.
    pub now: Vec<u64>,
    /// How many seeds failed with it before.
    pub before: usize,
}

/// What a failing line is a failure of: its scenario and property (else
/// its outcome).
fn failure_key(l: &SeedLine) -> (String, String) {
    let property = l
        .property
        .clone()
        .unwrap_or_else(|| l.outcome.word().to_string());
    (l.scenario.clone(), property)
}

/// The failures of `now` against those of `before`, by scenario and
/// property: new, ongoing or resolved. A failure of a scenario `now` did
/// not sweep at all is left out: not sweeping it says nothing about it.
pub fn findings(now: &[SeedLine], before: &[SeedLine]) -> Vec<Finding> {
    let mut seeds_now: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
    for l in now.iter().filter(|l| !l.outcome.passes()) {
        seeds_now.entry(failure_key(l)).or_default().push(l.seed);
    }
    let mut count_before: BTreeMap<(String, String), usize> = BTreeMap::new();
    for l in before.iter().filter(|l| !l.outcome.passes()) {
        *count_before.entry(failure_key(l)).or_default() += 1;
    }
    let swept: BTreeSet<&str> = now.iter().map(|l| l.scenario.as_str()).collect();
    let keys: BTreeSet<&(String, String)> = seeds_now.keys().chain(count_before.keys()).collect();
    let mut out: Vec<Finding> = keys
        .into_iter()
        .filter_map(|key| {
            let mut now = seeds_now.get(key).cloned().unwrap_or_default();
            now.sort_unstable();
            now.dedup();
            let before = count_before.get(key).copied().unwrap_or(0);
            let standing = match (now.is_empty(), before) {
                (false, 0) => Standing::New,
                (false, _) => Standing::Ongoing,
                (true, _) if swept.contains(key.0.as_str()) => Standing::Resolved,
                (true, _) => return None,
            };
            Some(Finding {
                standing,
                scenario: key.0.clone(),
                property: key.1.clone(),
                now,
                before,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        (a.standing, &a.scenario, &a.property).cmp(&(b.standing, &b.scenario, &b.property))
    });
    out
}

impl Finding {
    /// The finding in one line: `new       occ E1 on 3 seeds (first: seed 7)`.
    pub fn line(&self) -> String {
        let seeds = |n: usize| format!("{n} seed{}", if n == 1 { "" } else { "s" });
        let what = match self.standing {
            Standing::New => format!("on {} (first: seed {})", seeds(self.now.len()), self.now[0]),
            Standing::Ongoing => format!(
                "on {} (first: seed {}); {} before",
                seeds(self.now.len()),
                self.now[0],
                seeds(self.before)
            ),
            Standing::Resolved => format!("on no seed now; {} before", seeds(self.before)),
        };
        format!(
            "{:<9} {} {} {what}",
            self.standing.word(),
            self.scenario,
            self.property
        )
    }
}

/// `K/N` (1 ≤ K ≤ N): the K-th of N disjoint shards.
pub fn parse_shard(text: &str) -> Result<(u64, u64), HarnessError> {
    let bad = || format!("--shard takes K/N with 1 <= K <= N, e.g. 3/16 (got '{text}')");
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if k == 0 || n == 0 || k > n {
        return Err(bad().into());
    }
    Ok((k, n))
}

/// The seeds of shard `k` of `n`: every n-th seed, starting at the (k-1)-th.
/// The shards of one range are disjoint and together are the whole range.
pub fn shard(seeds: &[u64], k: u64, n: u64) -> Vec<u64> {
    seeds
        .iter()
        .enumerate()
        .filter(|(i, _)| *i as u64 % n == k - 1)
        .map(|(_, s)| *s)
        .collect()
}

/// One line of a sweep's results file (JSON lines): what `overcast merge` reads.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedLine {
    /// The scenario.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// Swarm mode.
    #[serde(default)]
    pub swarm: bool,
    /// How it ended.
    pub outcome: Outcome,
    /// The property that named the outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property: Option<String>,
    /// Why it did not pass, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The trace hash, hex.
    pub trace_hash: String,
    /// Wall seconds.
    pub seconds: f64,
    /// The saved failure, if the run did not pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved: Option<String>,
    /// Operations in the failing run, when it was shrunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops: Option<usize>,
    /// Operations in the shrunk failure, when it was shrunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shrunk_ops: Option<usize>,
    /// The saved shrunk failure, when it was shrunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shrunk: Option<String>,
    /// The branch path of an explored run (none: the seed's plain run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub branch: overcast_sim::rng::BranchPath,
}

impl SeedLine {
    /// The line of a seed's report (`saved` and `shrunk`: where its failure
    /// and its shrunk failure were saved).
    pub fn of(
        scenario: &str,
        swarm: bool,
        r: &SeedReport,
        saved: Option<String>,
        shrunk: Option<String>,
    ) -> SeedLine {
        SeedLine {
            scenario: scenario.to_string(),
            seed: r.seed,
            swarm,
            outcome: r.outcome,
            property: r.property.map(|p| p.to_string()),
            problem: r.problem.clone(),
            trace_hash: format!("{:016x}", r.trace_hash),
            seconds: r.seconds,
            saved,
            ops: r.shrunk.as_ref().map(|s| s.ops_before),
            shrunk_ops: r.shrunk.as_ref().map(|s| s.run.op_count().client),
            shrunk,
            branch: Vec::new(),
        }
    }

    /// The line of run `r` of scenario `def`, with its branch path (an
    /// explored run), saved at `saved` if it failed and was saved.
    /// (The explorer has counted its goals already: a line reads only the
    /// run's outcome, not a second pass over its history.)
    pub fn of_run(def: &dyn DynScenario, r: &RunResult, saved: Option<String>) -> SeedLine {
        SeedLine {
            scenario: def.name().to_string(),
            seed: r.scenario.seed,
            swarm: r.scenario.swarm,
            outcome: r.outcome,
            property: r.first_property().map(|p| p.to_string()),
            problem: r.first_problem(),
            trace_hash: format!("{:016x}", r.trace_hash),
            seconds: r.wall.as_secs_f64(),
            saved,
            ops: None,
            shrunk_ops: None,
            shrunk: None,
            branch: r.scenario.branch.clone(),
        }
    }
}

/// The name of the results file of `name`'s runs in an `--out` folder:
/// `results-NAME.jsonl`, or `results-NAME-shardK-of-N.jsonl` for shard K
/// of N (so that shards may share a folder).
pub fn results_file_name(name: &str, shard: Option<(u64, u64)>) -> String {
    match shard {
        Some((k, n)) => format!("results-{name}-shard{k}-of-{n}.jsonl"),
        None => format!("results-{name}.jsonl"),
    }
}

/// Reads every `*.jsonl` file under the given folders (not recursively),
/// in name order; errors name the file and line.
pub fn read_lines(dirs: &[std::path::PathBuf]) -> Result<Vec<SeedLine>, HarnessError> {
    let mut files = Vec::new();
    for dir in dirs {
        let entries = std::fs::read_dir(dir).map_err(|e| HarnessError::read(dir, e))?;
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                files.push(p);
            }
        }
    }
    files.sort();
    if files.is_empty() {
        return Err("no results files (*.jsonl) in the given folders".into());
    }
    let mut lines = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| HarnessError::read(&f, e))?;
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let l: SeedLine = serde_json::from_str(line)
                .map_err(|e| format!("{} line {}: {e}", f.display(), i + 1))?;
            lines.push(l);
        }
    }
    Ok(lines)
}
