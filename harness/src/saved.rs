//! Saved runs: a scenario (with the fault plan it ran) and the outcome it
//! had, so that `replay` and the regression suite can run it again and say
//! whether it still does the same; where failures are saved, under which
//! names, and the commands that replay them.

use crate::error::HarnessError;
use crate::registry::{DynScenario, RunHistory};
use crate::run::RunResult;
use crate::scenario::Scenario;
use overcast_sim::check::Outcome;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where failing runs are saved.
pub const FAILURE_DIR: &str = "target/overcast/failures";

/// What a run ended in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedOutcome {
    /// How it ended.
    pub outcome: Outcome,
    /// The property that named the outcome, if it did not pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property: Option<String>,
    /// The history's trace hash, hex. Information: a replay reports a changed
    /// hash but judges only the outcome and the property.
    pub trace_hash: String,
}

impl SavedOutcome {
    /// The outcome of a run.
    pub fn of(r: &RunResult) -> SavedOutcome {
        SavedOutcome {
            outcome: r.outcome,
            property: r.first_property().map(|p| p.to_string()),
            trace_hash: format!("{:016x}", r.trace_hash),
        }
    }

    /// Whether `now` reproduces this outcome (the same outcome and property;
    /// the trace hash is not compared).
    pub fn reproduced_by(&self, now: &SavedOutcome) -> bool {
        self.outcome == now.outcome && self.property == now.property
    }
}

/// A saved run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedRun {
    /// The scenario, with its fault plan.
    pub scenario: Scenario,
    /// What it did when it was saved.
    pub outcome: SavedOutcome,
    /// The violations, in words (for people; not compared on replay).
    #[serde(default)]
    pub violations: Vec<String>,
    /// The command that replays this file (for people; not compared on replay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
}

/// A loaded file: the scenario, the outcome it recorded (none for a bare
/// scenario file), and a note for the user when it was migrated.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The scenario.
    pub scenario: Scenario,
    /// The recorded outcome.
    pub outcome: Option<SavedOutcome>,
    /// Set when an older format was read.
    pub note: Option<String>,
}

impl SavedRun {
    /// A saved form of a run.
    pub fn of(r: &RunResult) -> SavedRun {
        SavedRun {
            scenario: r.scenario.clone(),
            outcome: SavedOutcome::of(r),
            violations: r
                .first_problem()
                .into_iter()
                .chain(r.violations().into_iter().skip(1).map(|v| v.to_string()))
                .collect(),
            replay: None,
        }
    }

    /// Reads a saved run, or a bare scenario file (which then has no outcome
    /// to compare), of the scenario `def` (registered or not; a catalogue's
    /// `load` finds the scenario the file names). Older formats are
    /// migrated, with a note.
    pub fn parse_with(text: &str, def: &dyn DynScenario) -> Result<Loaded, HarnessError> {
        let loaded = Self::parse_unvalidated(text)?;
        loaded.scenario.validate_with(def)?;
        Ok(loaded)
    }

    /// [`SavedRun::parse_with`] without the validation.
    pub(crate) fn parse_unvalidated(text: &str) -> Result<Loaded, HarnessError> {
        let mut value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let Some(scenario) = value.get_mut("scenario").map(serde_json::Value::take) else {
            let (scenario, note) = Scenario::from_value(value)?;
            return Ok(Loaded {
                scenario,
                outcome: None,
                note,
            });
        };
        let (scenario, mut note) = Scenario::from_value(scenario)?;
        let mut outcome = value
            .get_mut("outcome")
            .map(serde_json::Value::take)
            .ok_or("not a saved run: missing field `outcome`")?;
        // Format 1 recorded `passed: bool`; a failure then was a violation.
        if let Some(passed) = outcome.get("passed").and_then(|p| p.as_bool()) {
            let o = outcome.as_object_mut().expect("an object has fields");
            o.remove("passed");
            let word = if passed { "passed" } else { "violation" };
            o.insert("outcome".into(), word.into());
            note.get_or_insert_with(|| {
                "outcome format 1 read as format 2 (`overcast replay --record FILE` rewrites the file)".into()
            });
        }
        let outcome: SavedOutcome = serde_json::from_value(outcome)
            .map_err(|e| format!("not a saved run: outcome: {e}"))?;
        Ok(Loaded {
            scenario,
            outcome: Some(outcome),
            note,
        })
    }

    /// The saved run as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("saved runs serialise")
    }
}

/// How the commands a run prints start (`cargo run --release --`, or the
/// path of the binary that was run): set once by the program (the CLI
/// tells it from how it was started), read by [`run_command`] and
/// [`replay_command`].
static INVOCATION: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Says how the printed commands start (the first call wins).
pub fn set_invocation(prefix: String) {
    let _ = INVOCATION.set(prefix);
}

/// How the printed commands start: what [`set_invocation`] said, else
/// `cargo run --release --`.
pub fn invocation() -> &'static str {
    INVOCATION
        .get()
        .map_or("cargo run --release --", String::as_str)
}

/// The command line that runs `s` (a run of `def`) again from its name and seed.
pub fn run_command(def: &dyn DynScenario, s: &Scenario) -> String {
    let mut cmd = format!(
        "{} run {} --seed {}",
        invocation(),
        shell_word(&s.name),
        s.seed
    );
    for b in &s.bugs {
        cmd += &format!(" --bug {b}");
    }
    if s.beyond_budget {
        cmd += " --beyond-budget";
    }
    if s.swarm {
        cmd += " --swarm";
    } else if let Some(profile) = crate::scenario::profile_of(def, s) {
        cmd += &format!(" --faults {profile}");
    }
    if let Some(v) = def.variant(&s.params) {
        cmd += &format!(" --{v}");
    }
    for p in &s.branch {
        cmd += &format!(" --branch {}:{}", p.at_ns, p.branch);
    }
    cmd
}

/// The command line that replays a saved file (its path as given: relative
/// to the working directory, or absolute).
pub fn replay_command(path: &Path) -> String {
    format!(
        "{} replay {}",
        invocation(),
        shell_word(&path.to_string_lossy())
    )
}

/// A word for a POSIX shell: as is when it is plain, else single-quoted.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=+,@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The file stem a failure of `s` (a run of `def`) is saved under:
/// `occ-seed7-swarm-skip_if_match`; a branched run's has its branch path's
/// hash after the seed (`occ-seed7-branch1f2e3d4c-…`), beside the plain run's.
pub fn failure_stem(def: &dyn DynScenario, s: &Scenario) -> String {
    let mut stem = format!("{}-seed{}", s.name, s.seed);
    if !s.branch.is_empty() {
        let words = overcast_sim::rng::branch_path_words(&s.branch);
        stem += &format!(
            "-branch{:08x}",
            overcast_sim::rng::fnv1a(words.as_bytes()) as u32
        );
    }
    if s.swarm {
        stem += "-swarm";
    }
    if let Some(v) = def.variant(&s.params) {
        stem += &format!("-{v}");
    }
    for b in &s.bugs {
        stem += &format!("-{b}");
    }
    stem
}

/// How the name of a failure's history file ends (`STEM.history.json`,
/// beside the saved run `STEM.json`).
pub const HISTORY_SUFFIX: &str = ".history.json";

/// A history file's text: the history's JSON (`{"version": 1, "ops": …}`)
/// with the run that recorded it first, as its `scenario` field, so that
/// `overcast check` judges it with that run's scenario and parameters.
pub fn history_file(s: &Scenario, history: &dyn RunHistory) -> String {
    let json = history.to_json();
    let fields = json.trim_start().strip_prefix('{').unwrap_or(&json);
    let scenario = s.to_json().replace('\n', "\n  ");
    format!("{{\n  \"scenario\": {scenario},{fields}")
}

/// The saved run beside a failure's history file (`STEM.json` for
/// `STEM.history.json`), if the name is one.
pub fn saved_run_beside(history: &Path) -> Option<PathBuf> {
    let name = history.file_name()?.to_str()?;
    let stem = name.strip_suffix(HISTORY_SUFFIX)?;
    Some(history.with_file_name(format!("{stem}.json")))
}

/// The files a saved failure was written to.
#[derive(Clone, Debug)]
pub struct SavedFiles {
    /// The saved run (replayable).
    pub run: PathBuf,
    /// The recorded history.
    pub history: PathBuf,
    /// The HTML report, when a checker drew one.
    pub html: Option<PathBuf>,
}

/// Saves a run that did not pass under `dir`: the saved run (with its replay
/// command), its history, and the HTML report when there is one.
pub fn save_failure(
    def: &dyn DynScenario,
    r: &RunResult,
    dir: &Path,
) -> std::io::Result<SavedFiles> {
    std::fs::create_dir_all(dir)?;
    let stem = failure_stem(def, &r.scenario);
    let path = dir.join(format!("{stem}.json"));
    let saved = SavedRun {
        replay: Some(replay_command(&path)),
        ..SavedRun::of(r)
    };
    std::fs::write(&path, saved.to_json())?;
    let history = dir.join(format!("{stem}{HISTORY_SUFFIX}"));
    std::fs::write(&history, history_file(&r.scenario, &*r.history))?;
    let html = match r.html() {
        Some(page) => {
            let p = dir.join(format!("{stem}.html"));
            std::fs::write(&p, page)?;
            Some(p)
        }
        None => None,
    };
    Ok(SavedFiles {
        run: path,
        history,
        html,
    })
}
