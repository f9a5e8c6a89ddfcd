//! `overcast explore`: runs a scenario's seeds and branches them from the
//! states where something rare first happened ([`overcast_harness::explore`]),
//! printing progress, saving failures as `sweep` does (their branch path
//! in the file), and writing the goals reached over time. Exit codes are
//! `sweep`'s.

use crate::run_cmd::{bad_input, failure_dir, report_failure_in, MixArgs};
use crate::watch::{self, watched, MaxWall, Over, Progress};
use overcast_harness::error::HarnessError;
use overcast_harness::explore::{explore, ExploreOptions, Explored, Novelty};
use overcast_harness::goals::{goals_file_name, GoalsFile};
use overcast_harness::saved::run_command;
use overcast_harness::sweep::{parse_shard, results_file_name, SeedLine};
use overcast_sim::runner::SweepOptions;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Arguments of `overcast explore`.
#[derive(clap::Args, Debug)]
pub struct ExploreArgs {
    /// The scenario: a registered name such as `regions` (`overcast list` lists them).
    pub scenario: String,
    /// The mix: swarm, fault profile, bugs, variant (as `sweep` takes them).
    #[command(flatten)]
    pub mix: MixArgs,
    /// Explore until this much wall time is up (e.g. 90s, 10m, 2h).
    #[arg(long = "for", value_name = "DURATION", default_value = "10m")]
    pub for_time: String,
    /// Stop after this many runs (fresh seeds and branches), if `--for`
    /// has not stopped it before.
    #[arg(long, value_name = "N")]
    pub runs: Option<u64>,
    /// The first fresh seed; the others follow it.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub seed_base: u64,
    /// Explore only shard K of N (e.g. 3/16): its fresh seeds are every
    /// N-th from the (K-1)-th on, and it keeps a frontier of its own; the
    /// shards' `--out` folders go to `overcast merge`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Worker threads (default: all cores). The runs made do not depend on it.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Write the goals reached over time to DIR/explore.json and, drawn, to
    /// DIR/explore.html, the goals to
    /// DIR/goals.json and a line per run to DIR/results-SCENARIO.jsonl (as
    /// `sweep --out` does, with each run's branch path, for `merge`), and
    /// save failures under DIR/failures instead of target/overcast/failures.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Save the failing runs of at most this many runs (the first); every
    /// failure is still listed, with the command that reruns it.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub save_failures: usize,
    /// The longest one run may take, in wall time (e.g. 30s, 10m, or
    /// `off`); a run that goes over it stops the exploration with one line
    /// and exit code 6.
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub max_wall: MaxWall,
}

/// How often a progress line is printed when nothing new was reached.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// One progress line: runs, goals reached, sites, failures.
fn progress_line(e: &Explored, new: &[String]) -> String {
    let reached = e.goals.goals.iter().filter(|g| g.seeds > 0).count();
    format!(
        "explore {} runs ({} branched), goals {reached} of {}{}, {:.1} s",
        e.runs,
        e.branched,
        e.goals.goals.len(),
        if new.is_empty() {
            String::new()
        } else {
            format!(" (new: {})", new.join(", "))
        },
        e.seconds
    )
}

/// `overcast explore`.
pub fn run(args: &ExploreArgs) -> u8 {
    let budget = match humantime::parse_duration(&args.for_time) {
        Ok(d) if !d.is_zero() => d,
        _ => {
            return bad_input(format!(
                "--for takes a duration such as 90s, 10m or 2h (got '{}')",
                args.for_time
            ))
        }
    };
    if args.runs == Some(0) {
        return bad_input("--runs takes a number above 0");
    }
    let def = match args.mix.scenario(&args.scenario, args.seed_base) {
        Ok((def, _)) => watched(def),
        Err(e) => return bad_input(e),
    };
    let failure_dir = match failure_dir(args.out.as_deref()) {
        Ok(dir) => dir,
        Err(e) => return bad_input(e),
    };
    let shard = match args.shard.as_deref().map(parse_shard).transpose() {
        Ok(s) => s,
        Err(e) => return bad_input(e),
    };
    let (k, n) = shard.unwrap_or((1, 1));
    let opts = ExploreOptions {
        runs: args.runs,
        budget: Some(budget),
        seed_base: args.seed_base + (k - 1),
        seed_stride: n,
        jobs: args.jobs.unwrap_or(SweepOptions::default().jobs).max(1),
    };
    let name = def.name();
    println!(
        "overcast: explore {name} for {}{} from seed {}{}, {} jobs, swarm={}, faults={}, bugs={}",
        humantime::format_duration(budget),
        args.runs.map_or(String::new(), |n| format!(" or {n} runs")),
        opts.seed_base,
        shard.map_or(String::new(), |(k, n)| format!(
            " (shard {k} of {n}: every {n}th seed)"
        )),
        opts.jobs,
        if args.mix.swarm { "on" } else { "off" },
        args.mix.faults,
        if args.mix.bugs.is_empty() {
            "none".to_string()
        } else {
            args.mix.bugs.join(",")
        }
    );
    watch::start(args.max_wall, Over::StopWithRerun, Progress::Off);
    let make = |seed: u64| args.mix.scenario(name, seed).expect("validated above").1;
    let mut saved = 0usize;
    let mut last_line = Instant::now();
    let mut failures = Vec::new();
    let mut lines = Vec::new();
    let explored = explore(def, &make, &opts, |run, so_far| {
        let r = &run.run;
        let keep_line = |saved: Option<&PathBuf>, lines: &mut Vec<SeedLine>| {
            if args.out.is_some() {
                lines.push(SeedLine::of_run(
                    def,
                    r,
                    saved.map(|p| p.display().to_string()),
                ));
            }
        };
        let firsts: Vec<String> = run
            .new
            .iter()
            .filter_map(|n| match n {
                Novelty::FirstReach { goal } => Some(goal.to_string()),
                _ => None,
            })
            .collect();
        if !firsts.is_empty() || last_line.elapsed() >= PROGRESS_EVERY {
            println!("{}", progress_line(so_far, &firsts));
            last_line = Instant::now();
        }
        if r.outcome.passes() {
            keep_line(None, &mut lines);
            return;
        }
        let branch = if r.scenario.branch.is_empty() {
            String::new()
        } else {
            format!(
                ", branched at {}",
                overcast_sim::rng::branch_path_words(&r.scenario.branch)
            )
        };
        println!(
            "{} run {} (seed {}{branch}) at {:.1} s: {}",
            r.outcome.word(),
            run.index,
            r.scenario.seed,
            so_far.seconds,
            r.first_problem().as_deref().unwrap_or("failed")
        );
        let file = if saved < args.save_failures {
            saved += 1;
            report_failure_in(r, &failure_dir)
        } else {
            println!("rerun   {}", run_command(def, &r.scenario));
            None
        };
        keep_line(file.as_ref(), &mut lines);
        failures.push(serde_json::json!({
            "run": run.index,
            "seed": r.scenario.seed,
            "branch": r.scenario.branch,
            "outcome": r.outcome.word(),
            "property": r.first_property().map(|p| p.to_string()),
            "saved": file.map(|p| p.display().to_string()),
        }));
    });
    watch::finish();
    print!("{}", explored.goals.render());
    let reached = explored.goals.goals.iter().filter(|g| g.seeds > 0).count();
    println!(
        "{name}: {} runs ({} branched) in {:.1} s; goals {reached} of {} reached; {}",
        explored.runs,
        explored.branched,
        explored.seconds,
        explored.goals.goals.len(),
        match explored.first_failure {
            Some((run, secs)) => format!(
                "{} failed, the first at run {run} ({secs:.1} s)",
                failures.len()
            ),
            None => "none failed".to_string(),
        }
    );
    if let Some(dir) = &args.out {
        let file = dir.join(match shard {
            Some((k, n)) => format!("explore-shard{k}-of-{n}.json"),
            None => "explore.json".to_string(),
        });
        let mut value = serde_json::to_value(&explored).expect("an exploration serialises");
        value["failures"] = serde_json::Value::Array(failures);
        let text = serde_json::to_string_pretty(&value).expect("JSON serialises");
        if let Err(e) = std::fs::write(&file, text + "\n") {
            return bad_input(HarnessError::write(&file, e));
        }
        println!("goals   {}", file.display());
        let html = file.with_extension("html");
        if let Err(e) = std::fs::write(&html, overcast_harness::explore::page(&explored)) {
            return bad_input(HarnessError::write(&html, e));
        }
        println!("page    {}", html.display());
        let mut goals = GoalsFile::default();
        goals.add(&explored.goals);
        if let Err(e) = goals.write(dir, &goals_file_name(shard)) {
            return bad_input(e);
        }
        let results = dir.join(results_file_name(name, shard));
        let text: String = lines
            .iter()
            .map(|l| serde_json::to_string(l).expect("lines serialise") + "\n")
            .collect();
        if let Err(e) = std::fs::write(&results, text) {
            return bad_input(HarnessError::write(&results, e));
        }
        println!("results {}", results.display());
    }
    explored.worst.exit_code()
}
