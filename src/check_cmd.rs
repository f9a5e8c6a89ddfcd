//! `overcast check`: verdicts for recorded history files. A kvhist/1 file
//! is checked for linearizability against a key-value register; an
//! overcast history file (what `run --history` and saved failures write)
//! is judged by the checkers of the scenario that recorded it, with that
//! run's parameters.

use overcast_harness::run::RunResult;
use overcast_harness::saved::{replay_command, saved_run_beside};
use overcast_scenarios::CATALOGUE;
use overcast_sim::check::Outcome;
use overcast_sim::lin::{self, kv, Options, Report, Verdict};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Arguments of `overcast check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// History files: kvhist/1, or overcast's own (`run --history FILE`,
    /// the `*.history.json` saved beside a failure).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write the report as a self-contained HTML page to OUT (with several
    /// files, OUT is a directory and gets one page per file).
    #[arg(long, value_name = "OUT")]
    pub html: Option<PathBuf>,
    /// One JSON object per line: file, verdict, ops, ms (and keys for
    /// kvhist/1; scenario, seed, property and checks for overcast's own).
    #[arg(long)]
    pub json: bool,
    /// Print the full explanation of every history that does not pass,
    /// and for overcast's own histories what each check means.
    #[arg(long)]
    pub explain: bool,
    /// kvhist/1: skip shrinking the failing sub-history (faster verdicts on big failures).
    #[arg(long)]
    pub no_explain: bool,
    /// kvhist/1: do not use the version-aware fast path (always search).
    #[arg(long)]
    pub no_fast_path: bool,
    /// kvhist/1: time budget per file, in seconds; when it runs out the verdict is "unknown".
    #[arg(long, default_value_t = 120.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// kvhist/1: memory budget per file for the search, in MB.
    #[arg(long, default_value_t = 4096, value_name = "MB")]
    pub memory_mb: usize,
}

/// What one file got.
enum Checked {
    /// A kvhist/1 file's linearizability report.
    Kv(Box<Report>),
    /// An overcast history judged by its scenario's checkers.
    Scenario(Box<RunResult>),
}

/// Whether a parsed document is overcast's own history format.
fn is_overcast_history(doc: &serde_json::Value) -> bool {
    doc.get("format").is_none() && doc.get("version").is_some() && doc.get("ops").is_some()
}

/// Whether a parsed document is a saved run or a scenario file (what
/// `replay` takes, not `check`).
fn is_saved_run(doc: &serde_json::Value) -> bool {
    doc.get("ops").is_none()
        && (doc.get("outcome").is_some()
            || (doc.get("params").is_some() && doc.get("name").is_some()))
}

/// The run a history file's saved failure recorded, when the file sits
/// beside one (histories written before they carried their run).
fn run_beside(path: &Path) -> Option<overcast_harness::scenario::Scenario> {
    let saved = saved_run_beside(path)?;
    let text = std::fs::read_to_string(saved).ok()?;
    CATALOGUE.load(&text).ok().map(|l| l.scenario)
}

/// Reads and checks one file; the error is one line.
fn check_file(path: &Path, opts: &Options) -> Result<Checked, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    // Cheap sniff for overcast's own formats before the full kvhist parse.
    if !text.contains("kvhist/1") {
        if let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) {
            if is_saved_run(&doc) {
                return Err(format!(
                    "a saved run, not a history: `{}` runs it again (a failure's history is the .history.json beside it)",
                    replay_command(path)
                ));
            }
            if is_overcast_history(&doc) {
                let r = CATALOGUE.check_history_file(doc, run_beside(path))?;
                return Ok(Checked::Scenario(Box::new(r)));
            }
        }
    }
    let h = kv::parse_kvhist(&text)?;
    Ok(Checked::Kv(Box::new(lin::check(&h.spec, &h.ops, opts))))
}

fn html_path(args: &CheckArgs, file: &Path) -> Option<PathBuf> {
    let out = args.html.as_ref()?;
    if args.files.len() == 1 {
        return Some(out.clone());
    }
    let stem = file
        .file_stem()
        .map_or_else(|| "history".into(), |s| s.to_string_lossy().into_owned());
    Some(out.join(format!("{stem}.html")))
}

/// The outcome a linearizability verdict counts as (an unknown verdict is
/// not a failure of `check`).
fn kv_outcome(r: &Report) -> Outcome {
    match r.verdict {
        Verdict::NotLinearizable => Outcome::Violation,
        _ => Outcome::Passed,
    }
}

/// The verdict word of a judged history: the outcome's name in files
/// (`passed`, `violation`, `undecided`).
fn outcome_word(o: Outcome) -> String {
    serde_json::to_value(o)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The run a judged history came from, in words: "occ seed 0, bugs on: x".
fn run_words(r: &RunResult) -> String {
    let s = &r.scenario;
    let mut w = format!("{} seed {}", s.name, s.seed);
    if s.swarm {
        w += ", swarm";
    }
    if !s.bugs.is_empty() {
        w += &format!(", bugs on: {}", s.bugs.join(", "));
    }
    w
}

fn print_kv(args: &CheckArgs, name: &str, report: &Report) {
    if args.json {
        let mut o = serde_json::json!({
            "file": name,
            "verdict": report.verdict.as_str(),
            "ops": report.ops,
            "keys": report.keys,
            "ms": report.elapsed.as_millis() as u64,
        });
        if let Some(f) = &report.failure {
            o["key"] = serde_json::json!(f.key);
            o["explanation"] = serde_json::json!(f.sentence);
        }
        if let Some(r) = &report.unknown_reason {
            o["reason"] = serde_json::json!(r);
        }
        println!("{o}");
    } else {
        println!("{name}: {}", report.summary());
        if args.explain && report.failure.is_some() {
            print!("{}", report.to_text());
        }
    }
}

fn print_scenario(args: &CheckArgs, name: &str, r: &RunResult) {
    let ms = r.check_wall.as_millis() as u64;
    if args.json {
        let checks: Vec<serde_json::Value> = r
            .checks
            .iter()
            .map(|c| {
                serde_json::json!({
                    "property": c.name().as_str(),
                    "verdict": c.checked.verdict_words(),
                })
            })
            .collect();
        let mut o = serde_json::json!({
            "file": name,
            "scenario": r.scenario.name,
            "seed": r.scenario.seed,
            "verdict": outcome_word(r.outcome),
            "ops": r.op_count().client,
            "ms": ms,
            "checks": checks,
        });
        if let Some(p) = r.first_property() {
            o["property"] = serde_json::json!(p.as_str());
        }
        if let Some(p) = r.first_problem() {
            o["problem"] = serde_json::json!(p);
        }
        println!("{o}");
        return;
    }
    println!(
        "{name}: {} ops={} ms={ms} ({})",
        outcome_word(r.outcome),
        r.op_count().client,
        run_words(r)
    );
    println!("  checks  {}", r.checks_line());
    if let Some(p) = r.first_problem() {
        println!("  {p}");
    }
    if args.explain {
        for e in r.explanations() {
            println!("\n{e}");
        }
        println!("\nwhat the checks mean");
        for c in &r.checks {
            for p in c.properties {
                println!("  {:<22}  {}", p.id.as_str(), p.meaning);
            }
        }
    }
}

/// Runs the command; returns the process exit code: 2 if a file could not
/// be read or checked, else the worst verdict's (0 passed or linearizable
/// or unknown, 1 a violation or not linearizable, 4 undecided).
pub fn run(args: &CheckArgs) -> u8 {
    let opts = Options {
        time_budget: Some(Duration::from_secs_f64(args.timeout.max(0.001))),
        memory_budget: args.memory_mb.saturating_mul(1 << 20),
        explain: !args.no_explain,
        fast_path: !args.no_fast_path,
        ..Options::default()
    };
    if args.html.is_some() && args.files.len() > 1 {
        if let Some(dir) = &args.html {
            if let Err(e) = std::fs::create_dir_all(dir) {
                eprintln!(
                    "overcast check: cannot create directory {}: {e}",
                    dir.display()
                );
                return 2;
            }
        }
    }
    let mut bad_input = false;
    let mut worst = Outcome::Passed;
    for file in &args.files {
        let name = file.display().to_string();
        let checked = match check_file(file, &opts) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("overcast check: {name}: {e}");
                bad_input = true;
                continue;
            }
        };
        let page = match &checked {
            Checked::Kv(report) => {
                print_kv(args, &name, report);
                worst = worst.min(kv_outcome(report));
                Some(report.to_html(&name))
            }
            Checked::Scenario(r) => {
                print_scenario(args, &name, r);
                worst = worst.min(r.outcome);
                r.html().map(str::to_string)
            }
        };
        if let Some(out) = html_path(args, file) {
            match page {
                Some(page) => {
                    if let Err(e) = std::fs::write(&out, page) {
                        eprintln!("overcast check: cannot write {}: {e}", out.display());
                        bad_input = true;
                    }
                }
                None => eprintln!(
                    "overcast check: {name}: no page for {}: its checkers drew none for this history (a saved failure's page is the .html beside it)",
                    out.display()
                ),
            }
        }
    }
    if bad_input {
        2
    } else {
        worst.exit_code()
    }
}
