//! `overcast run`, `sweep`, `replay` and `bugs`: running scenarios, saving
//! failures with the command that replays them, and the bug hunt.

use overcast_scenarios::bugs::BUGS;
use overcast_scenarios::hunt::hunt;
use overcast_scenarios::run::{run as run_scenario, RunResult};
use overcast_scenarios::saved::{SavedOutcome, SavedRun};
use overcast_scenarios::scenario::{Scenario, SCENARIOS};
use overcast_sim::runner::{run_isolated, sweep as sweep_seeds, SweepOptions};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where failing scenarios are saved.
pub const FAILURE_DIR: &str = "target/overcast/failures";

/// Arguments of `overcast run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The scenario (known: occ).
    pub scenario: String,
    /// The seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Switch on a seeded bug (repeatable; `overcast bugs` lists them).
    #[arg(long = "bug")]
    pub bugs: Vec<String>,
    /// Swarm mode: draw the fault kinds and rates from the seed.
    #[arg(long)]
    pub swarm: bool,
    /// Write the history as JSON to this file.
    #[arg(long)]
    pub history: Option<PathBuf>,
    /// Log to stderr with simulated timestamps: `info` shows faults and
    /// restarts, `debug` every SDK attempt (a tracing filter, e.g. `overcast_model=debug`).
    #[arg(long, value_name = "FILTER")]
    pub log: Option<String>,
}

/// Arguments of `overcast sweep`.
#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// The scenario, or `all`.
    #[arg(default_value = "all")]
    pub scenario: String,
    /// Seeds, as `A..B` (B excluded), `A..=B` or one number.
    #[arg(long, default_value = "0..500")]
    pub seeds: String,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Swarm mode: each seed draws its own mix of fault kinds and rates.
    #[arg(long)]
    pub swarm: bool,
    /// Run every seed twice and compare the trace hashes.
    #[arg(long)]
    pub check_determinism: bool,
    /// Switch on a seeded bug (repeatable).
    #[arg(long = "bug")]
    pub bugs: Vec<String>,
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
}

/// Arguments of `overcast shrink`.
#[derive(clap::Args, Debug)]
pub struct ShrinkArgs {
    /// A saved failure or a failing scenario file.
    pub file: PathBuf,
    /// Give up after this many candidate runs.
    #[arg(long, default_value_t = 500)]
    pub max_tries: usize,
}

/// Arguments of `overcast bugs`.
#[derive(clap::Args, Debug)]
pub struct BugsArgs {
    /// One JSON object per line: bug, found, property, seeds, seconds.
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
}

fn bad_input(msg: impl std::fmt::Display) -> u8 {
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

fn scenario_for(name: &str, seed: u64, bugs: &[String], swarm: bool) -> Result<Scenario, String> {
    let mut s = Scenario::named(name, seed).ok_or_else(|| {
        format!(
            "unknown scenario '{name}' (known: {})",
            SCENARIOS.join(", ")
        )
    })?;
    s.bugs = bugs.to_vec();
    s.swarm = swarm;
    s.validate()?;
    Ok(s)
}

/// The command line that runs `s` again from its name and seed.
fn run_command(s: &Scenario) -> String {
    let mut cmd = format!("cargo run --release -- run {} --seed {}", s.name, s.seed);
    for b in &s.bugs {
        cmd += &format!(" --bug {b}");
    }
    if s.swarm {
        cmd += " --swarm";
    }
    cmd
}

fn header(s: &Scenario) -> String {
    let plan = overcast_scenarios::run::resolve_plan(s);
    format!(
        "overcast: scenario {} seed {}\n\
         options servers={} clients={} partitions={} keys={} hot_key={}% ops/client={} rmw_tries={} swarm={} bugs=[{}]\n\
         faults  loss={:.3} latency={}..{} ms events={} clocks_skewed={} lose_unsynced_on_crash={} window={} ms\n\
         server  429={} (no retry-after {}, zero {}) 449={} 503={} 410={} (1000 {}, 1002 {}, 1022 {}) 408={} fsync={}..{} ms; request timeout {} ms",
        s.name,
        s.seed,
        s.servers,
        s.clients,
        s.partitions,
        s.keys,
        s.hot_key_percent,
        s.ops_per_client,
        s.rmw_max_tries,
        s.swarm,
        s.bugs.join(","),
        plan.packet_loss,
        plan.latency_ms.0,
        plan.latency_ms.1,
        plan.events.len(),
        plan.clocks.len(),
        plan.lose_unsynced_on_crash,
        s.fault_window_ms,
        s.server_faults.throttle,
        s.server_faults.throttle_without_retry_after,
        s.server_faults.throttle_zero_retry_after,
        s.server_faults.retry_with,
        s.server_faults.unavailable,
        s.server_faults.gone,
        s.server_faults.gone_name_cache_stale,
        s.server_faults.gone_range_gone,
        s.server_faults.gone_lease_not_found,
        s.server_faults.timeout,
        s.fsync_ms.0,
        s.fsync_ms.1,
        s.retry.request_timeout.as_millis(),
    )
}

/// Saves a failing run and its linearizability report; returns the failure file.
fn save_failure(r: &RunResult) -> std::io::Result<PathBuf> {
    let dir = Path::new(FAILURE_DIR);
    std::fs::create_dir_all(dir)?;
    let mut stem = format!("{}-seed{}", r.scenario.name, r.scenario.seed);
    if r.scenario.swarm {
        stem += "-swarm";
    }
    for b in &r.scenario.bugs {
        stem += &format!("-{b}");
    }
    let path = dir.join(format!("{stem}.json"));
    let saved = SavedRun {
        replay: Some(format!("cargo run --release -- replay {}", path.display())),
        ..SavedRun::of(r)
    };
    std::fs::write(&path, saved.to_json())?;
    std::fs::write(
        dir.join(format!("{stem}.history.json")),
        r.history.to_json(),
    )?;
    if r.lin.failure.is_some() {
        let title = format!("overcast {} seed {}", r.scenario.name, r.scenario.seed);
        std::fs::write(dir.join(format!("{stem}.html")), r.lin.to_html(&title))?;
    }
    Ok(path)
}

fn report_failure(r: &RunResult) {
    match save_failure(r) {
        Ok(path) => {
            println!("saved   {}", path.display());
            if r.lin.failure.is_some() {
                println!("report  {}", path.with_extension("html").display());
            }
            println!("replay  cargo run --release -- replay {}", path.display());
        }
        Err(e) => eprintln!("overcast: could not save the failure under {FAILURE_DIR}: {e}"),
    }
    println!("rerun   {}", run_command(&r.scenario));
}

/// The run's summary, and the linearizability explanation when there is one.
fn print_summary(r: &RunResult) {
    println!("{}", r.summary());
    if r.lin.failure.is_some() {
        println!("\n{}", r.lin.to_text());
    }
}

fn run_one(s: &Scenario) -> Result<RunResult, String> {
    let s = s.clone();
    run_isolated(move || run_scenario(&s)).map_err(|p| format!("the run panicked: {p}"))
}

fn print_run(r: &RunResult, history: Option<&Path>) -> u8 {
    print_summary(r);
    if let Some(path) = history {
        if let Err(e) = std::fs::write(path, r.history.to_json()) {
            eprintln!("overcast: could not write {}: {e}", path.display());
        }
    }
    if r.passed() {
        0
    } else {
        report_failure(r);
        1
    }
}

fn init_log(filter: &Option<String>) -> Result<(), u8> {
    match filter {
        Some(f) => overcast_sim::log::init(f).map_err(bad_input),
        None => Ok(()),
    }
}

/// `overcast run`.
pub fn run(args: &RunArgs) -> u8 {
    if let Err(code) = init_log(&args.log) {
        return code;
    }
    let s = match scenario_for(&args.scenario, args.seed, &args.bugs, args.swarm) {
        Ok(s) => s,
        Err(e) => return bad_input(e),
    };
    println!("{}", header(&s));
    match run_one(&s) {
        Ok(r) => print_run(&r, args.history.as_deref()),
        Err(e) => {
            println!("verdict FAIL: {e}");
            println!("rerun   {}", run_command(&s));
            1
        }
    }
}

/// Reads a saved run or scenario file; on failure, says why in one line and
/// gives the exit code for bad input.
fn load_saved(file: &Path) -> Result<(Scenario, Option<SavedOutcome>), u8> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| bad_input(format!("cannot read {}: {e}", file.display())))?;
    SavedRun::parse(&text).map_err(|e| bad_input(format!("{}: {e}", file.display())))
}

/// `overcast replay`.
pub fn replay(args: &ReplayArgs) -> u8 {
    if let Err(code) = init_log(&args.log) {
        return code;
    }
    let (s, expected) = match load_saved(&args.file) {
        Ok(x) => x,
        Err(code) => return code,
    };
    println!("{}", header(&s));
    let r = match run_one(&s) {
        Ok(r) => r,
        Err(e) => {
            println!("verdict FAIL: {e}");
            return 1;
        }
    };
    print_summary(&r);
    if args.record {
        return match std::fs::write(&args.file, SavedRun::of(&r).to_json()) {
            Ok(()) => {
                println!("recorded the outcome into {}", args.file.display());
                0
            }
            Err(e) => bad_input(format!("cannot write {}: {e}", args.file.display())),
        };
    }
    if let Some(exp) = expected {
        let now = SavedOutcome::of(&r);
        if now == exp {
            println!(
                "replay  reproduced the saved outcome exactly (trace {})",
                now.trace_hash
            );
        } else {
            println!(
                "replay  DIFFERS from the saved outcome: saved passed={} property={:?} trace={}, now passed={} property={:?} trace={}",
                exp.passed, exp.property, exp.trace_hash, now.passed, now.property, now.trace_hash
            );
        }
    }
    u8::from(!r.passed())
}

/// `overcast shrink`.
pub fn shrink(args: &ShrinkArgs) -> u8 {
    let (s, _) = match load_saved(&args.file) {
        Ok(x) => x,
        Err(code) => return code,
    };
    println!("{}", header(&s));
    let started = Instant::now();
    let shrunk = overcast_scenarios::shrink::shrink(&s, args.max_tries, |step, r| {
        let (ops, events, clients, keys) = overcast_scenarios::shrink::size(r);
        println!(
            "shrink  {step}: {ops} ops, {events} fault events, {clients} clients, {keys} items"
        );
    });
    let Some(shrunk) = shrunk else {
        println!("the scenario passes: nothing to shrink");
        return 0;
    };
    let (ops, events, clients, keys) = overcast_scenarios::shrink::size(&shrunk.run);
    println!(
        "shrunk  to {ops} ops, {events} fault events, {clients} clients, {keys} items ({} of {} candidates kept, {:.1} s)",
        shrunk.kept,
        shrunk.tried,
        started.elapsed().as_secs_f64()
    );
    print_summary(&shrunk.run);
    let path = args.file.with_extension("shrunk.json");
    match std::fs::write(&path, SavedRun::of(&shrunk.run).to_json()) {
        Ok(()) => {
            println!("saved   {}", path.display());
            println!("replay  cargo run --release -- replay {}", path.display());
        }
        Err(e) => eprintln!("overcast: could not write {}: {e}", path.display()),
    }
    1
}

struct SeedResult {
    passed: bool,
    first: Option<String>,
    ops: usize,
    unknown: usize,
    retries: usize,
    faults: u64,
    failed_run: Option<Box<RunResult>>,
}

fn summarise(r: RunResult, keep_failure: bool) -> SeedResult {
    SeedResult {
        passed: r.passed(),
        first: r.violations.first().map(|v| v.to_string()),
        ops: r.history.ops.len(),
        unknown: r.unknown_ops(),
        retries: r.retries(),
        faults: r.faults_injected(),
        failed_run: (!r.passed() && keep_failure).then(|| Box::new(r)),
    }
}

/// `overcast sweep`.
pub fn sweep(args: &SweepArgs) -> u8 {
    let seeds = match parse_seeds(&args.seeds) {
        Ok(s) => s,
        Err(e) => return bad_input(e),
    };
    let names: Vec<&str> = if args.scenario == "all" {
        SCENARIOS.to_vec()
    } else {
        vec![args.scenario.as_str()]
    };
    for name in &names {
        if let Err(e) = scenario_for(name, 0, &args.bugs, args.swarm) {
            return bad_input(e);
        }
    }
    let opts = SweepOptions {
        jobs: args.jobs.unwrap_or(SweepOptions::default().jobs).max(1),
        ..SweepOptions::default()
    };
    let mut any_failed = false;
    for name in names {
        let first = seeds[0];
        let last = seeds[seeds.len() - 1];
        println!(
            "overcast: sweep {name} seeds {first}..={last} ({} seeds), {} jobs, swarm={}, determinism check={}, bugs=[{}]",
            seeds.len(),
            opts.jobs,
            args.swarm,
            args.check_determinism,
            args.bugs.join(",")
        );
        let started = Instant::now();
        let make =
            |seed: u64| scenario_for(name, seed, &args.bugs, args.swarm).expect("validated above");
        let results = sweep_seeds(
            &seeds,
            &opts,
            |seed| {
                let s = make(seed);
                let r = run_scenario(&s);
                let hash = r.trace_hash;
                let mut out = summarise(r, true);
                if args.check_determinism {
                    // The second run shares the thread with the first: a stronger test.
                    let again = run_scenario(&s).trace_hash;
                    if again != hash {
                        out.passed = false;
                        out.first = Some(format!(
                            "[determinism] seed {seed}: two runs gave trace hashes {hash:016x} and {again:016x}"
                        ));
                    }
                }
                out
            },
            |r| !r.passed,
        );
        let secs = started.elapsed().as_secs_f64();
        let (mut passed, mut failed) = (0usize, 0usize);
        let (mut ops, mut unknown, mut retries, mut faults) = (0usize, 0usize, 0usize, 0u64);
        for (seed, r) in &results {
            match r {
                Ok(r) => {
                    ops += r.ops;
                    unknown += r.unknown;
                    retries += r.retries;
                    faults += r.faults;
                    if r.passed {
                        passed += 1;
                        continue;
                    }
                    failed += 1;
                    println!(
                        "FAIL seed {seed}: {}",
                        r.first.as_deref().unwrap_or("failed")
                    );
                    match &r.failed_run {
                        Some(run) => report_failure(run),
                        None => println!("rerun   {}", run_command(&make(*seed))),
                    }
                }
                Err(panic) => {
                    failed += 1;
                    println!("FAIL seed {seed}: the run panicked: {panic}");
                    println!("rerun   {}", run_command(&make(*seed)));
                }
            }
        }
        println!(
            "{name}: {} seeds in {secs:.1} s ({:.0} seeds/s): {passed} passed, {failed} failed; ops {ops}, unknown outcomes {unknown}, retries {retries}, faults injected {faults}",
            results.len(),
            results.len() as f64 / secs.max(1e-9),
        );
        any_failed |= failed > 0;
    }
    u8::from(any_failed)
}

/// `overcast bugs`.
pub fn bugs(args: &BugsArgs) -> u8 {
    let chosen: Vec<_> = if args.bugs.is_empty() {
        BUGS.iter().collect()
    } else {
        let mut v = Vec::new();
        for name in &args.bugs {
            match overcast_scenarios::bugs::find(name) {
                Some(b) => v.push(b),
                None => {
                    return bad_input(format!(
                        "unknown bug '{name}' (known: {})",
                        BUGS.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
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
    if !args.json {
        println!(
            "{:<28} {:<6} {:<16} {:>6} {:>8} {:>7}  replay",
            "bug", "found", "property", "seeds", "seconds", "shrunk"
        );
    }
    let mut missed = 0;
    for b in chosen {
        let mut h = hunt(b.name, b.scenario, args.cap, jobs);
        if !args.no_shrink {
            overcast_scenarios::hunt::shrink_found(&mut h, b.scenario, 200);
        }
        missed += usize::from(!h.found);
        if args.json {
            println!(
                "{}",
                serde_json::to_string(&h).expect("hunt rows serialise")
            );
        } else {
            let replay = h
                .seed
                .map(|s| {
                    format!(
                        "cargo run --release -- run {} --seed {s} --bug {}",
                        b.scenario, b.name
                    )
                })
                .unwrap_or_else(|| "-".into());
            println!(
                "{:<28} {:<6} {:<16} {:>6} {:>8.2} {:>7}  {}",
                h.bug,
                if h.found { "yes" } else { "NO" },
                h.property.as_deref().unwrap_or("-"),
                h.seeds,
                h.seconds,
                h.shrunk_ops.map_or("-".to_string(), |n| format!("{n} ops")),
                replay
            );
        }
    }
    u8::from(missed > 0)
}
