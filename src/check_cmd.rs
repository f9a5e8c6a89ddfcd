//! `overcast check`: linearizability verdicts for recorded history files
//! (kvhist/1, and overcast's own history files, which the registered
//! scenario that recorded them checks against its reference spec).

use overcast_sim::lin::{self, kv, Options, Report, Verdict};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Arguments of `overcast check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// History files (kvhist/1 or overcast history JSON).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write the report as a self-contained HTML page to OUT (with several
    /// files, OUT is a directory and gets one page per file).
    #[arg(long, value_name = "OUT")]
    pub html: Option<PathBuf>,
    /// One JSON object per line: file, verdict, ops, keys, ms.
    #[arg(long)]
    pub json: bool,
    /// Print the full explanation of every history that is not linearizable.
    #[arg(long)]
    pub explain: bool,
    /// Skip shrinking the failing sub-history (faster verdicts on big failures).
    #[arg(long)]
    pub no_explain: bool,
    /// Do not use the version-aware fast path (always search).
    #[arg(long)]
    pub no_fast_path: bool,
    /// Time budget per file, in seconds; when it runs out the verdict is "unknown".
    #[arg(long, default_value_t = 120.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// Memory budget per file for the search, in MB.
    #[arg(long, default_value_t = 4096, value_name = "MB")]
    pub memory_mb: usize,
}

/// Checks a history in overcast's own format (`{"version": 1, "ops": [...]}`)
/// with the registered scenario that recognises it.
pub fn check_overcast_history(doc: &serde_json::Value, opts: &Options) -> Result<Report, String> {
    overcast_scenarios::CATALOGUE.check_history_file(doc, opts)
}

fn is_overcast_history(doc: &serde_json::Value) -> bool {
    doc.get("format").is_none() && doc.get("version").is_some() && doc.get("ops").is_some()
}

/// Reads and checks one file.
fn check_file(path: &Path, opts: &Options) -> Result<Report, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    // Cheap sniff for overcast's own format before the full kvhist parse.
    if !text.contains("kvhist/1") {
        if let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) {
            if is_overcast_history(&doc) {
                return check_overcast_history(&doc, opts);
            }
        }
    }
    let h = kv::parse_kvhist(&text)?;
    Ok(lin::check(&h.spec, &h.ops, opts))
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

/// Runs the command; returns the process exit code (0 all linearizable or
/// unknown, 1 some history not linearizable, 2 bad input).
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
    let mut code = 0u8;
    for file in &args.files {
        let name = file.display().to_string();
        let report = match check_file(file, &opts) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("overcast check: {name}: {e}");
                code = 2;
                continue;
            }
        };
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
        if let Some(out) = html_path(args, file) {
            if let Err(e) = std::fs::write(&out, report.to_html(&name)) {
                eprintln!("overcast check: cannot write {}: {e}", out.display());
                code = 2;
            }
        }
        if report.verdict == Verdict::NotLinearizable && code == 0 {
            code = 1;
        }
    }
    code
}
