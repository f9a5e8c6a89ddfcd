//! `overcast run`, `sweep`, `replay`, `shrink` and `bugs`: parsing their
//! arguments and printing what the scenarios crate runs. Exit codes: 0 pass,
//! 1 violation, 2 bad input, 3 liveness, 4 undecided, 5 harness error, 6 a
//! run went over `--max-wall`.
//!
//! Long because its five commands share one argument parser and one way of
//! printing a run's outcome; each command is a short section of its own.

use crate::header::header;
use crate::watch::{self, watched, MaxWall, Over, Progress};
use overcast_harness::error::HarnessError;
use overcast_harness::hunt::{hunt_both, hunt_scenario_in, BugHunt};
use overcast_harness::registry::DynScenario;
use overcast_harness::run::{run_isolated_with, RunResult};
use overcast_harness::saved::{
    history_file, replay_command, run_command, save_failure, Loaded, SavedOutcome, SavedRun,
    FAILURE_DIR,
};
use overcast_harness::scenario::Scenario;
use overcast_harness::shrink::DEFAULT_MAX_TRIES;
use overcast_harness::sweep::{sweep_with as sweep_scenario, SeedChecks, Standing};
use overcast_scenarios::CATALOGUE;
use overcast_sim::check::Outcome;
use overcast_sim::runner::SweepOptions;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Arguments of `overcast run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The scenario: a registered name such as `occ` (`overcast list` lists them).
    pub scenario: String,
    /// The seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Switch on a seeded bug (repeatable; `overcast list bugs` lists them).
    #[arg(long = "bug")]
    pub bugs: Vec<String>,
    /// Swarm mode: draw the fault kinds and rates from the seed.
    #[arg(long)]
    pub swarm: bool,
    /// Draw the fault plan past what the scenario's deployment promises to
    /// tolerate (its budget, in the run header): a run there whose checks
    /// cannot judge everything but find nothing wrong ends "failed loudly"
    /// (exit 0), not undecided.
    #[arg(long)]
    pub beyond_budget: bool,
    /// Fault profile: `default` (the scenario's mix), `calm` (latency only) or
    /// `storage` (more disk faults, and a lying disk).
    #[arg(long, default_value = "default")]
    pub faults: String,
    /// Write the history as JSON to this file.
    #[arg(long)]
    pub history: Option<PathBuf>,
    /// Log to stderr with simulated timestamps: `info` shows faults and
    /// restarts, `debug` every SDK attempt (a tracing filter, e.g. `overcast_model=debug`).
    #[arg(long, value_name = "FILTER")]
    pub log: Option<String>,
    /// Scenarios with a coverage table (`occ`, `leases`): print which row
    /// and cell of its SPEC tables each operation reached (row, cell, count).
    #[arg(long)]
    pub coverage: bool,
    /// `occ` only: the throttling variant (429 storms and 410 streaks per
    /// partition, so that the 429 budget and the 410 window are spent).
    #[arg(long)]
    pub throttle: bool,
    /// The longest one run may take, in wall time (e.g. 30s, 10m, 1h, or
    /// `off`); a run that goes over it stops the command with one line and
    /// exit code 6.
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub max_wall: MaxWall,
    /// Branch the run: the seed's plain run up to simulated time NS (ns),
    /// then the streams of branch B (repeatable, in increasing time; what
    /// `overcast explore` prints for a branched failure).
    #[arg(long = "branch", value_name = "NS:B")]
    pub branch: Vec<String>,
}

/// The options that say which runs of a scenario a command makes: swarm
/// mode, the fault profile, the budget, seeded bugs and the variant
/// (`sweep` and `explore` share them).
#[derive(clap::Args, Debug, Clone)]
pub struct MixArgs {
    /// Swarm mode: each seed draws its own mix of fault kinds and rates.
    #[arg(long)]
    pub swarm: bool,
    /// Draw the fault plan past what the scenario's deployment promises to
    /// tolerate (its budget, in the run header): a run there whose checks
    /// cannot judge everything but find nothing wrong ends "failed loudly"
    /// (exit 0), not undecided.
    #[arg(long)]
    pub beyond_budget: bool,
    /// Fault profile: `default`, `calm` or `storage` (see `run --help`).
    #[arg(long, default_value = "default")]
    pub faults: String,
    /// Switch on a seeded bug (repeatable).
    #[arg(long = "bug")]
    pub bugs: Vec<String>,
    /// `occ` only: the throttling variant (see `run --help`).
    #[arg(long)]
    pub throttle: bool,
}

impl MixArgs {
    /// The run of scenario `name` for `seed` with this mix.
    pub fn scenario(
        &self,
        name: &str,
        seed: u64,
    ) -> Result<(&'static dyn DynScenario, Scenario), String> {
        scenario_for(
            name,
            seed,
            &self.bugs,
            self.swarm,
            &self.faults,
            self.throttle,
            self.beyond_budget,
        )
    }
}

/// Arguments of `overcast sweep`.
#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// The scenario, or `all` (the default): every scenario, or with `--bug`
    /// every scenario the bugs belong to.
    pub scenario: Option<String>,
    /// Seeds, as `A..B` (B excluded), `A..=B` or one number.
    #[arg(long, default_value = "0..500")]
    pub seeds: String,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// The mix: swarm, fault profile, bugs, variant.
    #[command(flatten)]
    pub mix: MixArgs,
    /// Run every seed twice and compare the trace hashes.
    #[arg(long)]
    pub check_determinism: bool,
    /// Run only the K-th of N disjoint shards of the seeds (1 <= K <= N), e.g.
    /// `--shard 3/16` on the third of sixteen machines.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Write one JSON line per seed (scenario, seed, outcome, property, trace
    /// hash, seconds, saved file) to DIR/results-*.jsonl, and save failures
    /// under DIR/failures instead of target/overcast/failures.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run fresh seeds until this much wall time is up (e.g. 90s, 10m, 2h;
    /// shared equally by the scenarios), instead of `--seeds`.
    #[arg(long = "for", value_name = "DURATION")]
    pub for_time: Option<String>,
    /// With `--for`: the first seed, or `random` (the seed chosen is printed,
    /// so the run can be repeated). Default 0.
    #[arg(long, value_name = "N|random", default_value = "0")]
    pub seed_from: String,
    /// Shrink each failure as it is found (as `overcast shrink` does) and
    /// save the shrunk one too, under FAILURES/shrunk/.
    #[arg(long)]
    pub shrink: bool,
    /// Save (and shrink, with `--shrink`) the failing runs of at most this
    /// many seeds per scenario: the lowest. Every failure is still listed,
    /// with the command that reruns it; a saved failure takes about 2 MB
    /// on disk and more in memory while the sweep runs.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub save_failures: usize,
    /// Scenarios with a coverage table (`occ`, `leases`): instead of the
    /// usual report, the table of its SPEC tables summed over the seeds
    /// (row, cell, count), and the seeds that did not pass.
    #[arg(long)]
    pub coverage: bool,
    /// The longest one seed's run may take, in wall time (e.g. 30s, 10m, or
    /// `off`); a run that goes over it stops the sweep with one line, the
    /// command that reruns that seed, and exit code 6. `--for` bounds the sweep.
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub max_wall: MaxWall,
    /// Also say, per reachability goal of each scenario, how many seeds
    /// reached it, the first few of them and how often; with `--out`, write
    /// it to DIR/goals.json (which `merge` sums).
    #[arg(long)]
    pub goals: bool,
}

/// Arguments of `overcast merge`.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// Folders written by `overcast sweep --out` or `overcast explore --out` (one per shard).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// An earlier sweep's folders (repeatable): each scenario and property
    /// that fails is marked new, ongoing or resolved against them.
    #[arg(long, value_name = "DIR")]
    pub against: Vec<PathBuf>,
}

/// Arguments of `overcast replay`.
#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// A saved failure (target/overcast/failures/*.json, scenarios/regressions/*.json) or a scenario file.
    pub file: PathBuf,
    /// Write this run's outcome (verdict, property, trace hash) back into FILE,
    /// after an intended change of behaviour.
    #[arg(long)]
    pub record: bool,
    /// Log to stderr with simulated timestamps (a tracing filter, e.g. `info` or `debug`).
    #[arg(long, value_name = "FILTER")]
    pub log: Option<String>,
    /// The longest one run may take, in wall time (e.g. 30s, 10m, 1h, or
    /// `off`); a run that goes over it stops the command with one line and
    /// exit code 6.
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub max_wall: MaxWall,
}

/// Arguments of `overcast shrink`.
#[derive(clap::Args, Debug)]
pub struct ShrinkArgs {
    /// A saved failure or a failing scenario file.
    pub file: PathBuf,
    /// Give up after this many candidate runs.
    #[arg(long, default_value_t = DEFAULT_MAX_TRIES)]
    pub max_tries: usize,
    /// The longest one candidate run may take, in wall time (e.g. 30s, 10m,
    /// or `off`); a run that goes over it stops the shrink with one line and
    /// exit code 6.
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub max_wall: MaxWall,
}

/// Arguments of `overcast bugs`.
#[derive(clap::Args, Debug)]
pub struct BugsArgs {
    /// One JSON object per line and per mix (the one that found the bug first,
    /// then the other): bug, swarm, found, property, seeds, seconds.
    #[arg(long)]
    pub json: bool,
    /// Give up on a bug after this many seeds.
    #[arg(long, default_value_t = 300)]
    pub cap: u64,
    /// Hunt only these bugs (repeatable; default: all).
    #[arg(long = "bug")]
    pub bugs: Vec<String>,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Do not shrink the counterexamples (faster).
    #[arg(long)]
    pub no_shrink: bool,
    /// Candidate runs each shrink may spend.
    #[arg(long, default_value_t = DEFAULT_MAX_TRIES)]
    pub shrink_tries: usize,
}

/// Where a sweep or an exploration saves its failures: `DIR/failures` under
/// `--out DIR` (created), else the default failure folder.
pub(crate) fn failure_dir(out: Option<&Path>) -> Result<PathBuf, String> {
    match out {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            Ok(dir.join("failures"))
        }
        None => Ok(PathBuf::from(FAILURE_DIR)),
    }
}

pub(crate) fn bad_input(msg: impl std::fmt::Display) -> u8 {
    eprintln!("overcast: {msg}");
    2
}

/// Parses `A..B`, `A..=B` or `N` into a list of seeds.
pub fn parse_seeds(text: &str) -> Result<Vec<u64>, String> {
    let num = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| format!("'{s}' in the seed range '{text}' is not a number"))
    };
    let (lo, hi) = if let Some((a, b)) = text.split_once("..=") {
        (
            num(a)?,
            num(b)?.checked_add(1).ok_or("seed range too large")?,
        )
    } else if let Some((a, b)) = text.split_once("..") {
        (num(a)?, num(b)?)
    } else {
        let n = num(text)?;
        (n, n + 1)
    };
    if lo >= hi {
        return Err(format!("the seed range '{text}' is empty"));
    }
    if hi - lo > 10_000_000 {
        return Err(format!(
            "the seed range '{text}' has more than 10,000,000 seeds"
        ));
    }
    Ok((lo..hi).collect())
}

fn scenario_for(
    name: &str,
    seed: u64,
    bugs: &[String],
    swarm: bool,
    faults: &str,
    throttle: bool,
    beyond_budget: bool,
) -> Result<(&'static dyn DynScenario, Scenario), String> {
    let def = CATALOGUE.find(name)?;
    let mut s = overcast_harness::scenario::with_profile(def, Scenario::new(def, seed), faults)?;
    s.bugs = bugs.to_vec();
    s.swarm = swarm;
    s.beyond_budget = beyond_budget;
    if throttle {
        overcast_scenarios::services::occ::throttled(&mut s)?;
    }
    CATALOGUE.validate(&s)?;
    Ok((def, s))
}

fn report_failure(r: &RunResult) -> Option<PathBuf> {
    report_failure_in(r, Path::new(FAILURE_DIR))
}

/// Saves a run that did not pass under `dir` and prints where; returns the saved file.
pub(crate) fn report_failure_in(r: &RunResult, dir: &Path) -> Option<PathBuf> {
    let def = CATALOGUE.find(&r.scenario.name).ok()?;
    let saved = match save_failure(def, r, dir) {
        Ok(files) => {
            println!("saved   {}", files.run.display());
            if let Some(html) = &files.html {
                println!("report  {}", html.display());
            }
            println!("replay  {}", replay_command(&files.run));
            Some(files.run)
        }
        Err(e) => {
            eprintln!(
                "overcast: could not save the failure under {}: {e}",
                dir.display()
            );
            None
        }
    };
    println!("rerun   {}", run_command(def, &r.scenario));
    saved
}

/// Writes the failure page of `r` beside the saved file `saved` and says where.
fn print_page_beside(r: &RunResult, saved: &Path) {
    match overcast_harness::report::write_page_beside(r, saved) {
        Ok(Some(page)) => println!("report  {}", page.display()),
        Ok(None) => {}
        Err(e) => eprintln!(
            "overcast: could not write the page beside {}: {e}",
            saved.display()
        ),
    }
}

/// The run's summary, and the checkers' explanations when there are any.
fn print_summary(r: &RunResult) {
    println!("{}", r.summary());
    for e in r.explanations() {
        println!("\n{e}");
    }
}

fn print_run(r: &RunResult, history: Option<&Path>) -> u8 {
    print_summary(r);
    if let Some(path) = history {
        if let Err(e) = std::fs::write(path, history_file(&r.scenario, &*r.history)) {
            eprintln!("overcast: could not write {}: {e}", path.display());
        }
    }
    if !r.outcome.passes() {
        report_failure(r);
    }
    r.outcome.exit_code()
}

fn init_log(filter: &Option<String>) -> Result<(), u8> {
    match filter {
        Some(f) => overcast_sim::log::init(f).map_err(bad_input),
        None => Ok(()),
    }
}

/// Parses `--branch NS:B` points into a branch path.
pub fn parse_branch(points: &[String]) -> Result<overcast_sim::rng::BranchPath, String> {
    points
        .iter()
        .map(|text| {
            let bad = || format!("--branch takes NS:B, two numbers (got '{text}')");
            let (at, b) = text.split_once(':').ok_or_else(bad)?;
            Ok(overcast_sim::rng::BranchPoint {
                at_ns: at.trim().parse().map_err(|_| bad())?,
                branch: b.trim().parse().map_err(|_| bad())?,
            })
        })
        .collect()
}

/// `overcast run`.
pub fn run(args: &RunArgs) -> u8 {
    if let Err(code) = init_log(&args.log) {
        return code;
    }
    let branch = match parse_branch(&args.branch) {
        Ok(b) => b,
        Err(e) => return bad_input(e),
    };
    let (def, mut s) = match scenario_for(
        &args.scenario,
        args.seed,
        &args.bugs,
        args.swarm,
        &args.faults,
        args.throttle,
        args.beyond_budget,
    ) {
        Ok(x) => x,
        Err(e) => return bad_input(e),
    };
    if args.coverage && def.coverage_tables().is_none() {
        return bad_input(no_coverage(def.name()));
    }
    s.branch = branch;
    if let Err(e) = CATALOGUE.validate(&s) {
        return bad_input(e);
    }
    println!("{}", header(def, &s));
    watch::start(args.max_wall, Over::Stop, Progress::Show("running".into()));
    let r = run_isolated_with(watched(def), &s);
    watch::finish();
    let code = print_run(&r, args.history.as_deref());
    if args.coverage {
        if let Some(c) = def.coverage_of(&*r.history) {
            print!("{}", c.table());
        }
    }
    code
}

/// Reads a saved run or scenario file; on failure, says why in one line and
/// gives the exit code for bad input. A migrated file's note goes to stderr.
fn load_saved(file: &Path) -> Result<(&'static dyn DynScenario, Loaded), u8> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| bad_input(format!("cannot read {}: {e}", file.display())))?;
    let loaded = CATALOGUE
        .load(&text)
        .map_err(|e| bad_input(format!("{}: {e}", file.display())))?;
    if let Some(note) = &loaded.note {
        eprintln!("overcast: {}: {note}", file.display());
    }
    let def = CATALOGUE.find(&loaded.scenario.name).map_err(bad_input)?;
    Ok((def, loaded))
}

/// A saved or new outcome in words: "a violation of linearizability", "a pass".
fn outcome_words(o: &SavedOutcome) -> String {
    let what = match o.outcome {
        Outcome::Passed => "a pass",
        Outcome::FailedLoudly => "a loud failure (beyond the budget)",
        Outcome::Violation => "a violation",
        Outcome::Liveness => "a liveness failure",
        Outcome::Undecided => "an undecided check",
        Outcome::HarnessError => "a harness error",
    };
    match &o.property {
        Some(p) if matches!(o.outcome, Outcome::Undecided | Outcome::FailedLoudly) => {
            format!("{what} ({p})")
        }
        Some(p) if o.outcome != Outcome::Passed => format!("{what} of {p}"),
        _ => what.to_string(),
    }
}

/// `overcast replay`.
pub fn replay(args: &ReplayArgs) -> u8 {
    if let Err(code) = init_log(&args.log) {
        return code;
    }
    let (def, loaded) = match load_saved(&args.file) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let s = loaded.scenario;
    println!("{}", header(def, &s));
    watch::start(
        args.max_wall,
        Over::Stop,
        Progress::Show("replaying".into()),
    );
    let r = run_isolated_with(watched(def), &s);
    watch::finish();
    print_summary(&r);
    print_page_beside(&r, &args.file);
    if args.record {
        return match std::fs::write(&args.file, SavedRun::of(&r).to_json()) {
            Ok(()) => {
                println!("recorded the outcome into {}", args.file.display());
                0
            }
            Err(e) => bad_input(format!("cannot write {}: {e}", args.file.display())),
        };
    }
    if let Some(exp) = loaded.outcome {
        let now = SavedOutcome::of(&r);
        if !exp.reproduced_by(&now) {
            println!(
                "replay  DIFFERS from the saved outcome: saved {}, now {}",
                outcome_words(&exp),
                outcome_words(&now)
            );
        } else if now.trace_hash != exp.trace_hash {
            println!(
                "replay  reproduced the saved outcome; the trace changed ({} then, {} now: the model or workload changed since it was saved)",
                exp.trace_hash, now.trace_hash
            );
        } else {
            println!(
                "replay  reproduced the saved outcome exactly (trace {})",
                now.trace_hash
            );
        }
    }
    r.outcome.exit_code()
}

/// `overcast shrink`.
pub fn shrink(args: &ShrinkArgs) -> u8 {
    let (def, loaded) = match load_saved(&args.file) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let s = loaded.scenario;
    println!("{}", header(def, &s));
    let started = Instant::now();
    watch::start(
        args.max_wall,
        Over::Stop,
        Progress::Show("shrinking".into()),
    );
    let shrunk = overcast_harness::shrink::shrink(watched(def), &s, args.max_tries, |step, r| {
        let (ops, events) = overcast_harness::shrink::size(r);
        watch::say(&format!("shrink  {step}: {}", size_words(ops, events)));
    });
    watch::finish();
    let Some(shrunk) = shrunk else {
        println!("the scenario passes: nothing to shrink");
        return 0;
    };
    let (ops, events) = overcast_harness::shrink::size(&shrunk.run);
    println!(
        "shrunk  from {} to {} ({} of {} candidates kept, {} runs, {:.1} s)",
        shrunk.ops_before,
        size_words(ops, events),
        shrunk.kept,
        shrunk.tried,
        shrunk.ran,
        started.elapsed().as_secs_f64()
    );
    println!("fails   with {} first, as the failure did", shrunk.property);
    print_summary(&shrunk.run);
    let path = args.file.with_extension("shrunk.json");
    match std::fs::write(&path, SavedRun::of(&shrunk.run).to_json()) {
        Ok(()) => {
            println!("saved   {}", path.display());
            print_page_beside(&shrunk.run, &path);
            println!("replay  {}", replay_command(&path));
        }
        Err(e) => eprintln!("overcast: could not write {}: {e}", path.display()),
    }
    shrunk.run.outcome.exit_code()
}

/// The seed to start from: a number, or `random` (drawn from the wall clock
/// outside any simulation, and printed).
fn seed_from(text: &str) -> Result<u64, String> {
    if text == "random" {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        // Keep it short enough to type; any u64 would do.
        return Ok(overcast_sim::rng::fnv1a(&nanos.to_le_bytes()) % 1_000_000_000);
    }
    text.parse()
        .map_err(|_| format!("--seed-from takes a number or `random` (got '{text}')"))
}

/// `overcast sweep`.
pub fn sweep(args: &SweepArgs) -> u8 {
    let budget = match &args.for_time {
        Some(t) => match humantime::parse_duration(t) {
            Ok(d) if !d.is_zero() => Some(d),
            _ => {
                return bad_input(format!(
                    "--for takes a duration such as 90s, 10m or 2h (got '{t}')"
                ))
            }
        },
        None => None,
    };
    let seeds = match (budget, parse_seeds(&args.seeds)) {
        (Some(_), _) => Vec::new(),
        (None, Ok(s)) => s,
        (None, Err(e)) => return bad_input(e),
    };
    let first_seed = match seed_from(&args.seed_from) {
        Ok(s) => s,
        Err(e) => return bad_input(e),
    };
    let shard = match args
        .shard
        .as_deref()
        .map(overcast_harness::sweep::parse_shard)
    {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => return bad_input(e),
    };
    let names = match sweep_names(args.scenario.as_deref(), &args.mix.bugs) {
        Ok(n) => n,
        Err(e) => return bad_input(e),
    };
    let mut defs = Vec::new();
    for name in &names {
        match args.mix.scenario(name, 0) {
            Ok((def, _)) => defs.push(watched(def)),
            Err(e) => return bad_input(e),
        }
    }
    let failure_dir = match failure_dir(args.out.as_deref()) {
        Ok(dir) => dir,
        Err(e) => return bad_input(e),
    };
    let opts = SweepOptions {
        jobs: args.jobs.unwrap_or(SweepOptions::default().jobs).max(1),
        ..SweepOptions::default()
    };
    let checks = SeedChecks {
        determinism: args.check_determinism,
        shrink: args.shrink.then_some(DEFAULT_MAX_TRIES),
        keep_failed: args.save_failures,
    };
    if args.coverage {
        return sweep_coverage(args, &names, &seeds, opts.jobs);
    }
    watch::start(args.max_wall, Over::StopWithRerun, Progress::Off);
    let mut worst = Outcome::Passed;
    let mut goals = overcast_harness::goals::GoalsFile::default();
    let scenario_count = defs.len() as u32;
    let sweep_started = Instant::now();
    let mut all_counts = std::collections::BTreeMap::<Outcome, usize>::new();
    let mut all_seeds = 0usize;
    for def in defs {
        let name = def.name();
        let started = Instant::now();
        let make = |seed: u64| args.mix.scenario(name, seed).expect("validated above").1;
        let shard_of = |s: Vec<u64>| match shard {
            Some((k, n)) => overcast_harness::sweep::shard(&s, k, n),
            None => s,
        };
        let what = match budget {
            Some(b) => format!(
                "for {} from seed {first_seed}",
                humantime::format_duration(b / scenario_count)
            ),
            None => format!(
                "seeds {}..={} ({} seeds)",
                seeds[0],
                seeds[seeds.len() - 1],
                seeds.len()
            ),
        };
        println!(
            "overcast: sweep {name} {what}{}, {} jobs, swarm={}, faults={}{}, determinism check={}, bugs={}",
            shard.map_or(String::new(), |(k, n)| format!(", shard {k}/{n}")),
            opts.jobs,
            if args.mix.swarm { "on" } else { "off" },
            args.mix.faults,
            match (args.mix.throttle, args.mix.beyond_budget) {
                (true, true) => ", throttle, beyond budget",
                (true, false) => ", throttle",
                (false, true) => ", beyond budget",
                (false, false) => "",
            },
            if args.check_determinism { "on" } else { "off" },
            if args.mix.bugs.is_empty() {
                "none".to_string()
            } else {
                args.mix.bugs.join(",")
            }
        );
        let mut results = Vec::new();
        match budget {
            None => {
                let mine = shard_of(seeds.clone());
                results = sweep_scenario(def, &mine, &opts, make, checks);
            }
            Some(b) => {
                // Chunks of fresh seeds until this scenario's share of the time is up.
                let share = b / scenario_count;
                let chunk = opts.jobs as u64 * 8;
                let (mut next, mut kept) = (first_seed, 0usize);
                let quiet = SweepOptions {
                    progress: false,
                    ..opts.clone()
                };
                while started.elapsed() < share {
                    let mine = shard_of((next..next + chunk).collect());
                    next += chunk;
                    // Later chunks hold higher seeds: they keep what is left.
                    let checks = SeedChecks {
                        keep_failed: checks.keep_failed.saturating_sub(kept),
                        ..checks
                    };
                    let chunk_results = sweep_scenario(def, &mine, &quiet, make, checks);
                    kept += chunk_results
                        .iter()
                        .filter(|r| r.failed_run.is_some())
                        .count();
                    results.extend(chunk_results);
                }
            }
        }
        let secs = started.elapsed().as_secs_f64();
        let mut counts = std::collections::BTreeMap::<Outcome, usize>::new();
        let (mut ops, mut unknown, mut retries, mut faults) = (0usize, 0usize, 0usize, 0u64);
        let mut lines = Vec::new();
        let mut unsaved = 0usize;
        for r in &results {
            ops += r.ops;
            unknown += r.unknown;
            retries += r.retries;
            faults += r.faults;
            *counts.entry(r.outcome).or_default() += 1;
            worst = worst.min(r.outcome);
            let mut saved = None;
            if !r.outcome.passes() {
                println!(
                    "{} seed {}: {}",
                    r.outcome.word(),
                    r.seed,
                    r.problem.as_deref().unwrap_or("failed")
                );
                saved = match &r.failed_run {
                    Some(run) => report_failure_in(run, &failure_dir),
                    None => {
                        unsaved += 1;
                        println!("rerun   {}", run_command(def, &make(r.seed)));
                        None
                    }
                };
            }
            let shrunk = r
                .shrunk
                .as_ref()
                .and_then(|s| save_shrunk(s, &failure_dir.join("shrunk")));
            if args.out.is_some() {
                let path = |p: Option<PathBuf>| p.map(|p| p.display().to_string());
                lines.push(overcast_harness::sweep::SeedLine::of(
                    name,
                    args.mix.swarm,
                    r,
                    path(saved),
                    path(shrunk),
                ));
            }
        }
        if let Some(dir) = &args.out {
            let file = dir.join(overcast_harness::sweep::results_file_name(name, shard));
            let text: String = lines
                .iter()
                .map(|l| serde_json::to_string(l).expect("lines serialise") + "\n")
                .collect();
            if let Err(e) = std::fs::write(&file, text) {
                return bad_input(format!("cannot write {}: {e}", file.display()));
            }
            println!("results {}", file.display());
        }
        if unsaved > 0 {
            println!(
                "{unsaved} failures not saved (--save-failures {} keeps the lowest failing seeds); rerun them with the commands above",
                args.save_failures
            );
        }
        println!(
            "{name}: {} seeds in {secs:.1} s ({:.0} seeds/s): {}; ops {ops}, unknown outcomes {unknown}, retries {retries}, faults injected {faults}",
            results.len(),
            results.len() as f64 / secs.max(1e-9),
            tally(&counts),
        );
        if args.goals {
            let t = overcast_harness::goals::tally_reports(def, &make(first_seed), &results);
            print!("{}", t.render());
            goals.add(&t);
        }
        all_seeds += results.len();
        for (o, n) in counts {
            *all_counts.entry(o).or_default() += n;
        }
    }
    if let (true, Some(dir)) = (args.goals, &args.out) {
        let name = overcast_harness::goals::goals_file_name(shard);
        match goals.write(dir, &name) {
            Ok(path) => println!("goals   {}", path.display()),
            Err(e) => return bad_input(e),
        }
    }
    if scenario_count > 1 {
        let runs = all_seeds * if args.check_determinism { 2 } else { 1 };
        println!(
            "total: {scenario_count} scenarios, {all_seeds} seeds, {runs} runs in {:.1} s: {}",
            sweep_started.elapsed().as_secs_f64(),
            tally(&all_counts),
        );
    }
    worst.exit_code()
}

/// The scenarios a sweep runs: the one named; else (or for `all`) every
/// scenario, or with bugs given every scenario that has them all.
fn sweep_names(scenario: Option<&str>, bugs: &[String]) -> Result<Vec<&'static str>, String> {
    match scenario {
        Some(name) if name != "all" => Ok(vec![CATALOGUE.find(name)?.name()]),
        _ if bugs.is_empty() => Ok(CATALOGUE.names().collect()),
        _ => {
            for b in bugs {
                if CATALOGUE.bug(b).is_none() {
                    return Err(HarnessError::unknown(
                        "bug",
                        b,
                        CATALOGUE.bugs().iter().map(|k| k.name),
                    )
                    .into());
                }
            }
            let names: Vec<&'static str> = CATALOGUE
                .scenarios
                .iter()
                .filter(|d| bugs.iter().all(|b| d.bugs().iter().any(|k| k.name == b)))
                .map(|d| d.name())
                .collect();
            if names.is_empty() {
                let owners: Vec<String> = bugs
                    .iter()
                    .map(|b| {
                        let of: Vec<&str> = CATALOGUE
                            .scenarios_of_bug(b)
                            .iter()
                            .map(|d| d.name())
                            .collect();
                        format!("{b}: {}", of.join(", "))
                    })
                    .collect();
                return Err(format!(
                    "no scenario has all of these bugs ({})",
                    owners.join("; ")
                ));
            }
            Ok(names)
        }
    }
}

/// Why `--coverage` is refused for scenario `name`: it has no coverage
/// table; the ones that have one.
fn no_coverage(name: &str) -> String {
    let with: Vec<&str> = CATALOGUE
        .names()
        .filter(|n| {
            CATALOGUE
                .find(n)
                .is_ok_and(|d| d.coverage_tables().is_some())
        })
        .collect();
    format!(
        "--coverage: {name} has no coverage table (the scenarios with one: {})",
        with.join(", ")
    )
}

/// `overcast sweep NAME --coverage`: the coverage table over the seeds.
fn sweep_coverage(args: &SweepArgs, names: &[&str], seeds: &[u64], jobs: usize) -> u8 {
    let [name] = names else {
        return bad_input("--coverage sweeps one scenario: `sweep NAME --seeds A..B --coverage`");
    };
    if args.for_time.is_some() || args.shard.is_some() {
        return bad_input("--coverage is for `sweep NAME --seeds A..B` only");
    }
    let def = match CATALOGUE.find(name) {
        Ok(def) => def,
        Err(e) => return bad_input(e),
    };
    let started = Instant::now();
    let Some((coverage, failed)) =
        overcast_harness::coverage::over_seeds(def, seeds, jobs, |seed| {
            args.mix.scenario(name, seed).expect("validated above").1
        })
    else {
        return bad_input(no_coverage(name));
    };
    for (seed, problem) in &failed {
        println!("seed {seed} did not pass: {problem}");
    }
    print!("{}", coverage.table());
    println!(
        "{name} coverage: {} seeds in {:.1} s, {} did not pass",
        seeds.len(),
        started.elapsed().as_secs_f64(),
        failed.len()
    );
    u8::from(!failed.is_empty() || !coverage.rows_at_zero().is_empty())
}

/// A shrunk run's size in words: `3 ops, 1 fault event`.
fn size_words(ops: usize, events: usize) -> String {
    let s = |n: usize| if n == 1 { "" } else { "s" };
    format!("{ops} op{}, {events} fault event{}", s(ops), s(events))
}

/// Saves a failure shrunk during a sweep under `dir`, says how far it shrank
/// and where it went; returns the saved file.
fn save_shrunk(s: &overcast_harness::shrink::Shrunk, dir: &Path) -> Option<PathBuf> {
    let def = CATALOGUE.find(&s.run.scenario.name).ok()?;
    let (ops, events) = overcast_harness::shrink::size(&s.run);
    print!(
        "shrunk  from {} to {} ({} of {} candidates kept)",
        s.ops_before,
        size_words(ops, events),
        s.kept,
        s.tried
    );
    match save_failure(def, &s.run, dir) {
        Ok(files) => {
            println!(": {}", files.run.display());
            println!("replay  {}", replay_command(&files.run));
            Some(files.run)
        }
        Err(e) => {
            println!();
            eprintln!(
                "overcast: could not save the shrunk failure under {}: {e}",
                dir.display()
            );
            None
        }
    }
}

/// "1995 passed, 5 violations": the outcomes that occurred (passed always).
fn tally(counts: &std::collections::BTreeMap<Outcome, usize>) -> String {
    [
        (Outcome::Passed, "passed"),
        (Outcome::FailedLoudly, "failed loudly"),
        (Outcome::Violation, "violations"),
        (Outcome::Liveness, "liveness failures"),
        (Outcome::Undecided, "undecided"),
        (Outcome::HarnessError, "harness errors"),
    ]
    .iter()
    .filter(|(o, _)| *o == Outcome::Passed || counts.contains_key(o))
    .map(|(o, word)| format!("{} {word}", counts.get(o).copied().unwrap_or(0)))
    .collect::<Vec<_>>()
    .join(", ")
}

/// `overcast merge`: one summary and one failure list from shard outputs.
pub fn merge(args: &MergeArgs) -> u8 {
    let lines = match overcast_harness::sweep::read_lines(&args.dirs) {
        Ok(l) => l,
        Err(e) => return bad_input(e),
    };
    let mut by_scenario =
        std::collections::BTreeMap::<&str, std::collections::BTreeMap<Outcome, usize>>::new();
    // A run is a seed's, or an explored branch of it.
    let mut seen = std::collections::BTreeMap::<(&str, u64, bool, &[_]), usize>::new();
    let mut worst = Outcome::Passed;
    for l in &lines {
        *by_scenario
            .entry(&l.scenario)
            .or_default()
            .entry(l.outcome)
            .or_default() += 1;
        *seen
            .entry((&l.scenario, l.seed, l.swarm, &l.branch[..]))
            .or_default() += 1;
        worst = worst.min(l.outcome);
    }
    for (name, counts) in &by_scenario {
        let total: usize = counts.values().sum();
        println!("{name}: {total} seeds: {}", tally(counts));
    }
    match overcast_harness::goals::GoalsFile::read_dirs(&args.dirs) {
        Ok(Some(goals)) => print!("{}", goals.render()),
        Ok(None) => {}
        Err(e) => return bad_input(e),
    }
    let twice = seen.values().filter(|n| **n > 1).count();
    if twice > 0 {
        println!("note    {twice} seeds appear in more than one shard (overlapping shards?)");
    }
    if !args.against.is_empty() {
        let before = match overcast_harness::sweep::read_lines(&args.against) {
            Ok(l) => l,
            Err(e) => return bad_input(e),
        };
        let found = overcast_harness::sweep::findings(&lines, &before);
        let count = |s: Standing| found.iter().filter(|f| f.standing == s).count();
        println!(
            "against {}: {} new, {} ongoing, {} resolved",
            args.against
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            count(Standing::New),
            count(Standing::Ongoing),
            count(Standing::Resolved)
        );
        for f in &found {
            println!("{}", f.line());
        }
    }
    for l in lines.iter().filter(|l| !l.outcome.passes()) {
        println!(
            "{} {} seed {}{}{}: {}{}",
            l.outcome.word(),
            l.scenario,
            l.seed,
            if l.branch.is_empty() {
                String::new()
            } else {
                format!(
                    " branched at {}",
                    overcast_sim::rng::branch_path_words(&l.branch)
                )
            },
            if l.swarm { " (swarm)" } else { "" },
            l.problem.as_deref().unwrap_or("-"),
            l.saved
                .as_deref()
                .map_or(String::new(), |p| format!("\n        saved {p}")),
        );
        if let Some(p) = &l.shrunk {
            println!(
                "        shrunk from {} to {} ops: {p}",
                l.ops.map_or("?".into(), |n| n.to_string()),
                l.shrunk_ops.map_or("?".into(), |n| n.to_string()),
            );
        }
    }
    worst.exit_code()
}

/// `overcast bugs`.
pub fn bugs(args: &BugsArgs) -> u8 {
    let all = CATALOGUE.bugs();
    let chosen: Vec<_> = if args.bugs.is_empty() {
        // The explorer's bugs are left out: no seed of a hunt reaches them.
        all.iter()
            .copied()
            .filter(|b| {
                !overcast_scenarios::bugs::EXPLORER_BUGS
                    .iter()
                    .any(|e| e.name == b.name)
            })
            .collect()
    } else {
        let mut v = Vec::new();
        for name in &args.bugs {
            match CATALOGUE.bug(name) {
                Some(b) => v.push(b),
                None => {
                    return bad_input(HarnessError::unknown(
                        "bug",
                        name,
                        all.iter().map(|b| b.name),
                    ))
                }
            }
        }
        v
    };
    if args.cap == 0 {
        return bad_input("--cap must be at least 1");
    }
    let jobs = args.jobs.unwrap_or(SweepOptions::default().jobs).max(1);
    // The property column is as wide as the longest property's name.
    let pw = CATALOGUE
        .properties()
        .iter()
        .map(|(p, _)| p.id.as_str().chars().count())
        .max()
        .unwrap_or(0)
        .max("property".len());
    if !args.json {
        println!(
            "{:<28} {:<6} {:<pw$} {:<8} {:>6} {:>6} {:>8} {:>8} {:>13}  replay",
            "bug",
            "found",
            "property",
            "mix",
            "seeds",
            "swarm",
            "seconds",
            "shrink s",
            "ops (shrunk)"
        );
    }
    let mut missed = 0;
    for b in chosen {
        let def = match CATALOGUE.find(b.scenarios[0]) {
            Ok(d) => d,
            Err(e) => return bad_input(e),
        };
        // Both mixes: the bug's hunt profile and swarm mode.
        let both = hunt_both(b.name, def, args.cap, jobs);
        let h = if args.no_shrink {
            both.first().clone()
        } else {
            let started = std::time::Instant::now();
            let mut h = both.shrunk_smallest(def, args.shrink_tries, jobs);
            h.shrink_seconds = Some(started.elapsed().as_secs_f64());
            h
        };
        missed += usize::from(!h.found);
        if args.json {
            let other = if h.swarm { &both.default } else { &both.swarm };
            for row in [&h, other] {
                println!(
                    "{}",
                    serde_json::to_string(row).expect("hunt rows serialise")
                );
            }
        } else {
            let replay = h
                .seed
                .map(|s| run_command(def, &hunt_scenario_in(def, s, b.name, h.swarm)))
                .unwrap_or_else(|| "-".into());
            let ops = match (h.ops, h.shrunk_ops) {
                (Some(n), Some(m)) => format!("{n} ({m})"),
                (Some(n), None) => n.to_string(),
                _ => "-".into(),
            };
            let seeds = |x: &BugHunt| {
                if x.found {
                    x.seeds.to_string()
                } else {
                    format!(">{}", x.seeds)
                }
            };
            println!(
                "{:<28} {:<6} {:<pw$} {:<8} {:>6} {:>6} {:>8.2} {:>8} {:>13}  {}",
                h.bug,
                if h.found { "yes" } else { "NO" },
                h.property.map_or("-", |p| p.as_str()),
                both.found_by(),
                seeds(&both.default),
                seeds(&both.swarm),
                both.default.seconds + both.swarm.seconds,
                h.shrink_seconds.map_or("-".into(), |s| format!("{s:.2}")),
                ops,
                replay
            );
        }
    }
    u8::from(missed > 0)
}
