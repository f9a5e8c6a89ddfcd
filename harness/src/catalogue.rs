//! A program's list of scenarios: what the CLI finds by name, whose bugs
//! make the bug table, and whose checkers read a saved history file. The
//! harness names no scenario; the catalogue is handed to it.

use crate::bug::BugInfo;
use crate::registry::{unknown, DynScenario};
use crate::run::{harness_failure, run_with, RunResult};
use crate::saved::{Loaded, SavedRun};
use crate::scenario::Scenario;
use overcast_sim::lin;

/// The registered scenarios, in the order the CLI lists them.
pub struct Catalogue {
    /// Every scenario, each once.
    pub scenarios: &'static [&'static dyn DynScenario],
}

impl Catalogue {
    /// The registered scenario called `name`, or the one-line error naming the known ones.
    pub fn find(&self, name: &str) -> Result<&'static dyn DynScenario, String> {
        self.scenarios
            .iter()
            .copied()
            .find(|d| d.name() == name)
            .ok_or_else(|| unknown("scenario", name, self.names()))
    }

    /// The scenarios' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.scenarios.iter().map(|d| d.name())
    }

    /// The default run of the scenario called `name` for `seed`.
    pub fn scenario(&self, name: &str, seed: u64) -> Result<Scenario, String> {
        Ok(Scenario::new(self.find(name)?, seed))
    }

    /// Every seeded bug of every scenario, each once, in scenario order.
    pub fn bugs(&self) -> Vec<&'static BugInfo> {
        let mut all: Vec<&'static BugInfo> = Vec::new();
        for def in self.scenarios {
            for b in def.bugs() {
                if !all.iter().any(|a| a.name == b.name) {
                    all.push(b);
                }
            }
        }
        all
    }

    /// The bug called `name`.
    pub fn bug(&self, name: &str) -> Option<&'static BugInfo> {
        self.bugs().into_iter().find(|b| b.name == name)
    }

    /// Checks `s` against its scenario: the name is registered, and every bug
    /// belongs to it (a bug of another scenario is named as such).
    pub fn validate(&self, s: &Scenario) -> Result<(), String> {
        let def = self.find(&s.name)?;
        if let Some(b) = s
            .bugs
            .iter()
            .find(|b| !def.bugs().iter().any(|k| k.name == b.as_str()))
        {
            if let Some(other) = self.bug(b) {
                return Err(format!(
                    "bug '{b}' does not belong to scenario '{}' (its bugs: {}; '{b}' is {}'s)",
                    s.name,
                    def.bugs()
                        .iter()
                        .map(|k| k.name)
                        .collect::<Vec<_>>()
                        .join(", "),
                    other.scenarios.join(" and "),
                ));
            }
        }
        s.validate_with(def)
    }

    /// Reads a saved run, or a bare scenario file, of a registered scenario
    /// ([`SavedRun::parse_with`] on the scenario the file names).
    pub fn load(&self, text: &str) -> Result<Loaded, String> {
        let loaded = SavedRun::parse_unvalidated(text)?;
        self.validate(&loaded.scenario)?;
        Ok(loaded)
    }

    /// Runs `s` on the current thread with the scenario it names (use
    /// [`crate::run::run_isolated_with`] for a fresh one); a name that is not
    /// registered ends as a harness error.
    pub fn run(&self, s: &Scenario) -> RunResult {
        match self.find(&s.name) {
            Ok(def) => run_with(def, s),
            Err(e) => harness_failure(s, e, std::time::Duration::ZERO),
        }
    }

    /// Checks an overcast history file with the first scenario that
    /// recognises it; the error names why none did.
    pub fn check_history_file(
        &self,
        doc: &serde_json::Value,
        opts: &lin::Options,
    ) -> Result<lin::Report, String> {
        let mut errors = Vec::new();
        for def in self.scenarios {
            match def.check_history_file(doc, opts) {
                Some(Ok(report)) => return Ok(report),
                Some(Err(e)) => errors.push(format!("{}: {e}", def.name())),
                None => {}
            }
        }
        Err(if errors.is_empty() {
            "no registered scenario checks this kind of history".into()
        } else {
            errors.join("; ")
        })
    }
}
