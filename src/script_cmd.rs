//! `overcast script`: runs conformance scripts (JSON files of requests and
//! expected answers, see the README section "Conformance scripts"), each on a
//! fresh deployment, and reports one line (or one JSON object) per script.

use overcast_scenarios::conformance::{self, ScriptOutcome};
use std::path::PathBuf;

/// Arguments of `overcast script`.
#[derive(clap::Args, Debug)]
pub struct ScriptArgs {
    /// Script files (`overcast-script/1` JSON).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// One JSON object per script: file, verdict, and the differing step.
    #[arg(long)]
    pub json: bool,
}

/// What became of one file.
enum FileResult {
    Ran(ScriptOutcome),
    Malformed(String),
}

/// Runs the command; returns the exit code: 0 every script passed, 1 some
/// script's answer differs, 2 some script is malformed or unreadable (wins over
/// 1), 5 a run did not finish (a harness error, wins over both).
pub fn run(args: &ScriptArgs) -> u8 {
    let mut code = 0u8;
    for file in &args.files {
        let name = file.display().to_string();
        let result = match std::fs::read_to_string(file) {
            Err(e) => FileResult::Malformed(format!("cannot read: {e}")),
            Ok(text) => match conformance::run_text(&text) {
                Ok(outcome) => FileResult::Ran(outcome),
                Err(m) => FileResult::Malformed(m.to_string()),
            },
        };
        let this = match &result {
            FileResult::Ran(ScriptOutcome::Passed { .. }) => 0,
            FileResult::Ran(ScriptOutcome::Differs(_)) => 1,
            FileResult::Malformed(_) => 2,
            FileResult::Ran(ScriptOutcome::Error { .. }) => 5,
        };
        code = code.max(this);
        if args.json {
            let o = match &result {
                FileResult::Ran(outcome) => {
                    let mut o = serde_json::to_value(outcome).unwrap_or_default();
                    o["file"] = serde_json::json!(name);
                    o
                }
                FileResult::Malformed(m) => serde_json::json!({
                    "file": name, "verdict": "malformed", "message": m,
                }),
            };
            println!("{o}");
        } else {
            match &result {
                FileResult::Ran(ScriptOutcome::Passed {
                    steps,
                    restarts,
                    replayed,
                }) => {
                    let mut line = format!("{name}: passed ({steps} steps");
                    if *restarts > 0 {
                        line += &format!(
                            ", {restarts} server restart(s), {replayed} log record(s) replayed"
                        );
                    }
                    println!("{line})")
                }
                FileResult::Ran(ScriptOutcome::Differs(d)) => println!(
                    "{name}: differs at step {}: {}; expected {}; got {} ({})",
                    d.step, d.request, d.expected, d.got, d.why
                ),
                FileResult::Ran(ScriptOutcome::Error { message }) => {
                    println!("{name}: harness error: {message}")
                }
                // Bad input goes to stderr, as for every command.
                FileResult::Malformed(m) => eprintln!("{name}: malformed: {m}"),
            }
        }
    }
    code
}
