//! Saved runs: a scenario (with the fault plan it ran) and the outcome it
//! had, so that `replay` and the regression suite can run it again and say
//! whether it still does the same.

use crate::run::RunResult;
use crate::scenario::Scenario;
use serde::{Deserialize, Serialize};

/// What a run ended in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedOutcome {
    /// Every check held.
    pub passed: bool,
    /// The first broken property, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property: Option<String>,
    /// The history's trace hash, hex.
    pub trace_hash: String,
}

impl SavedOutcome {
    /// The outcome of a run.
    pub fn of(r: &RunResult) -> SavedOutcome {
        SavedOutcome {
            passed: r.passed(),
            property: r.violations.first().map(|v| v.property.clone()),
            trace_hash: format!("{:016x}", r.trace_hash),
        }
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

impl SavedRun {
    /// A saved form of a run.
    pub fn of(r: &RunResult) -> SavedRun {
        SavedRun {
            scenario: r.scenario.clone(),
            outcome: SavedOutcome::of(r),
            violations: r.violations.iter().map(|v| v.to_string()).collect(),
            replay: None,
        }
    }

    /// Reads a saved run, or a bare scenario file (which then has no outcome to compare).
    pub fn parse(text: &str) -> Result<(Scenario, Option<SavedOutcome>), String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        if value.get("scenario").is_some() {
            let saved: SavedRun =
                serde_json::from_value(value).map_err(|e| format!("not a saved run: {e}"))?;
            saved.scenario.validate()?;
            Ok((saved.scenario, Some(saved.outcome)))
        } else {
            Ok((Scenario::from_json(text)?, None))
        }
    }

    /// The saved run as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("saved runs serialise")
    }
}
