//! A program's list of scenarios: what the CLI finds by name, whose bugs
//! make the bug table and whose checkers judge a saved history file. The
//! harness names no scenario; the catalogue is handed to it.

use crate::bug::BugInfo;
use crate::error::HarnessError;
use crate::registry::DynScenario;
use crate::run::{harness_failure, run_with, RunResult};
use crate::saved::{Loaded, SavedRun};
use crate::scenario::Scenario;
use overcast_sim::check::{Outcome, Property};

/// The registered scenarios, in the order the CLI lists them.
pub struct Catalogue {
    /// Every scenario, each once.
    pub scenarios: &'static [&'static dyn DynScenario],
}

impl Catalogue {
    /// The registered scenario called `name`, or the one-line error naming the known ones.
    pub fn find(&self, name: &str) -> Result<&'static dyn DynScenario, HarnessError> {
        self.scenarios
            .iter()
            .copied()
            .find(|d| d.name() == name)
            .ok_or_else(|| HarnessError::unknown("scenario", name, self.names()))
    }

    /// The scenarios' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.scenarios.iter().map(|d| d.name())
    }

    /// The default run of the scenario called `name` for `seed`.
    pub fn scenario(&self, name: &str, seed: u64) -> Result<Scenario, HarnessError> {
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
    pub fn validate(&self, s: &Scenario) -> Result<(), HarnessError> {
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
                )
                .into());
            }
        }
        s.validate_with(def)
    }

    /// Reads a saved run, or a bare scenario file, of a registered scenario
    /// ([`SavedRun::parse_with`] on the scenario the file names).
    pub fn load(&self, text: &str) -> Result<Loaded, HarnessError> {
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
            Err(e) => harness_failure(s, e.to_string(), std::time::Duration::ZERO),
        }
    }

    /// The registered scenarios `bug` belongs to, in catalogue order.
    pub fn scenarios_of_bug(&self, bug: &str) -> Vec<&'static dyn DynScenario> {
        self.scenarios
            .iter()
            .copied()
            .filter(|d| d.bugs().iter().any(|b| b.name == bug))
            .collect()
    }

    /// Every property a registered scenario judges, each once (by id; the
    /// meaning is the first scenario's), in catalogue order and each
    /// scenario's checker order, with the scenarios that judge it.
    pub fn properties(&self) -> Vec<(Property, Vec<&'static str>)> {
        let mut all: Vec<(Property, Vec<&'static str>)> = Vec::new();
        for def in self.scenarios {
            for p in def.properties() {
                match all.iter_mut().find(|(a, _)| a.id == p.id) {
                    Some((_, names)) => names.push(def.name()),
                    None => all.push((p, vec![def.name()])),
                }
            }
        }
        all
    }

    /// Judges an overcast history file (parsed JSON) with the checkers of
    /// the scenario that recorded it. The run it came from is the file's
    /// `scenario` field ([`crate::saved::history_file`] writes it), else
    /// `beside` (the saved run found next to the file); without either,
    /// the error names the scenarios whose history it could be and says
    /// why it cannot be judged. The result is a run whose world is empty:
    /// its history, checks and outcome are what the file gave (liveness,
    /// judged on the world, is not among the checks).
    pub fn check_history_file(
        &self,
        mut doc: serde_json::Value,
        beside: Option<Scenario>,
    ) -> Result<RunResult, HarnessError> {
        let Some(fields) = doc.as_object_mut() else {
            return Err("not a history: expected a JSON object".into());
        };
        let recorded = match fields.remove("scenario") {
            Some(v) => {
                let (s, _) = Scenario::from_value(v)
                    .map_err(|e| format!("the run the history names: {e}"))?;
                Some(s)
            }
            None => beside,
        };
        let Some(s) = recorded else {
            let readers: Vec<&str> = self
                .scenarios
                .iter()
                .filter(|d| d.read_history(doc.clone()).is_ok())
                .map(|d| d.name())
                .collect();
            return Err(match readers.as_slice() {
                [] => format!(
                    "not a history any registered scenario records ({})",
                    self.scenarios
                        .first()
                        .and_then(|d| d.read_history(doc.clone()).err())
                        .map(|e| e.to_string())
                        .unwrap_or_default()
                ),
                names => format!(
                    "a history of {} without the run that recorded it (no \"scenario\" field, no saved run beside it), and its checkers need the run's parameters: `run --history FILE` and saved failures write histories that carry it",
                    names.join(" or ")
                ),
            }.into());
        };
        self.validate(&s)?;
        let def = self.find(&s.name)?;
        let started = std::time::Instant::now();
        let history = def.read_history(doc)?;
        let checks = def.check_history(&*history, &s.params)?;
        let outcome = Outcome::of(checks.iter().map(|c| c.checked.verdict()));
        let check_wall = started.elapsed();
        Ok(RunResult {
            trace_hash: history.trace_hash(),
            scenario: s,
            history,
            world: Default::default(),
            counters: Default::default(),
            checks,
            outcome,
            harness_error: None,
            wall: check_wall,
            check_wall,
            drawn: Default::default(),
            subjects: Default::default(),
            page: None,
            disks: 0,
        })
    }
}
