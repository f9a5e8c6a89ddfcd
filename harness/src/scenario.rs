//! `Scenario`: the envelope of one run (format version, scenario name, seed,
//! bugs, swarm switch, fault mix and plan, durations) with the scenario's
//! own parameters inside, serialisable and versioned so that a failing run
//! can be saved and replayed exactly. A shrunk run also names the client
//! operations it leaves out and when the others start (`skip` and `pace`,
//! optional: files without them still load). Files of format 1 (before the envelope, `occ` only) still load:
//! [`Scenario::from_json`] migrates them and says so.

use crate::error::HarnessError;
use crate::ops::{Pace, Reached, SkipSet};
use crate::registry::DynScenario;
use overcast_sim::faults::{FaultBudget, FaultMix, FaultPlan};
use overcast_sim::rng::BranchPath;
use serde::{Deserialize, Serialize};

/// The scenario file format version.
pub const SCENARIO_VERSION: u32 = 2;

/// One run, fully described.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Always [`SCENARIO_VERSION`].
    pub version: u32,
    /// The registered scenario, e.g. `occ`.
    pub name: String,
    /// The seed every random choice derives from.
    pub seed: u64,
    /// Seeded bugs switched on, by name.
    #[serde(default)]
    pub bugs: Vec<String>,
    /// Swarm mode: ignore `faults` and draw the mix itself from the seed.
    #[serde(default)]
    pub swarm: bool,
    /// Network, crash, pause and clock faults, drawn from the seed.
    pub faults: FaultMix,
    /// Fault events are drawn over the first this-many simulated ms.
    pub fault_window_ms: u64,
    /// What the deployment promises to tolerate: a drawn plan stays within
    /// it unless `beyond_budget`. Absent in files written before budgets
    /// (whose plans they carry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<FaultBudget>,
    /// Draw the plan past the budget (`--beyond-budget`): a run there passes
    /// as failed loudly when its servers detected the damage and refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub beyond_budget: bool,
    /// An explicit fault plan; when present it is used as is (saved failures
    /// carry the plan that was drawn, so a replay does not depend on the generator).
    #[serde(default)]
    pub plan: Option<FaultPlan>,
    /// Client operations left out, by node name and operation index (the
    /// shrinker's history-level pass). Each workload still draws them, so the
    /// operations after them are drawn the same, but does not send them.
    /// Absent in files written before it existed (and when empty).
    #[serde(default, skip_serializing_if = "SkipSet::is_empty")]
    pub skip: SkipSet,
    /// Per node incarnation, the highest operation index it may send: the
    /// last the run a shrunk scenario was cut from drew; later ones are
    /// left out too (see [`crate::ops::Reached`]). Absent in files written
    /// before it existed (and when empty): no bound.
    #[serde(default, skip_serializing_if = "Reached::is_empty")]
    pub reached: Reached,
    /// The earliest simulated time (ns) each client operation may start at,
    /// by node name and operation index: a shrunk scenario keeps the
    /// operations it did not leave out at the times they had (see
    /// [`crate::ops`]). Absent in files written before it existed (and when empty).
    #[serde(default, skip_serializing_if = "Pace::is_empty")]
    pub pace: Pace,
    /// The run's branch path ([`overcast_sim::rng`]): the plain run of the
    /// seed up to each point's time, the streams of its branch after it.
    /// Absent for a plain run (and in files written before branching).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub branch: BranchPath,
    /// Awaited nodes (clients) start no new work after this much simulated time, ms.
    pub deadline_ms: u64,
    /// Quiet phase after healing, ms.
    pub quiet_ms: u64,
    /// When the run ends, ms, if before the end of its quiet phase: a shrunk
    /// failure of a prefix-closed property (judged on what came before it)
    /// ends soon after its violation, and what would have come after is
    /// never run. Absent for a whole run (and in files written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_ms: Option<u64>,
    /// The scenario's own parameters.
    pub params: serde_json::Value,
}

/// The fields of a format-1 file that became envelope fields; the rest were
/// `occ`'s parameters.
pub const V1_ENVELOPE: &[&str] = &[
    "name",
    "seed",
    "bugs",
    "swarm",
    "faults",
    "fault_window_ms",
    "plan",
    "deadline_ms",
    "quiet_ms",
];

impl Scenario {
    /// The default run of `def` for `seed`.
    pub fn new(def: &dyn DynScenario, seed: u64) -> Scenario {
        let d = def.defaults();
        Scenario {
            version: SCENARIO_VERSION,
            name: def.name().to_string(),
            seed,
            bugs: Vec::new(),
            swarm: false,
            faults: d.faults,
            fault_window_ms: d.fault_window_ms,
            budget: Some(def.budget()),
            beyond_budget: false,
            plan: None,
            skip: SkipSet::new(),
            reached: Reached::new(),
            pace: Pace::new(),
            branch: BranchPath::new(),
            deadline_ms: d.deadline_ms,
            quiet_ms: d.quiet_ms,
            stop_ms: None,
            params: def.default_params(seed),
        }
    }

    /// Parses a scenario file (format 2, or format 1 migrated), without
    /// validating it against its scenario ([`Scenario::validate_with`], or
    /// the catalogue's `validate`); errors say what is wrong in one line.
    /// The second value is a note for the user when the file was migrated.
    pub fn from_json(text: &str) -> Result<(Scenario, Option<String>), HarnessError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        Self::from_value(value)
    }

    /// [`Scenario::from_json`] on parsed JSON.
    pub fn from_value(
        value: serde_json::Value,
    ) -> Result<(Scenario, Option<String>), HarnessError> {
        let (value, note) = migrate(value)?;
        let s: Scenario = serde_path_to_error::deserialize(value)
            .map_err(|e| format!("not a valid scenario: {}: {}", e.path(), e.inner()))?;
        Ok((s, note))
    }

    /// Checks the values make sense against the scenario definition `def`
    /// (registered or not), the parameters included.
    pub fn validate_with(&self, def: &dyn DynScenario) -> Result<(), HarnessError> {
        if self.version != SCENARIO_VERSION {
            return Err(format!(
                "scenario version {} is not supported (expected {SCENARIO_VERSION})",
                self.version
            )
            .into());
        }
        if self.name != def.name() {
            return Err(format!(
                "the file is a '{}' scenario, not '{}'",
                self.name,
                def.name()
            )
            .into());
        }
        if self.faults.latency_ms.0 > self.faults.latency_ms.1 {
            return Err("faults.latency_ms has its low end above its high end".into());
        }
        if let Some(problem) = overcast_sim::rng::branch_path_problem(&self.branch) {
            return Err(format!("branch: {problem}").into());
        }
        let known = def.bugs();
        for b in &self.bugs {
            if !known.iter().any(|k| k.name == *b) {
                return Err(HarnessError::unknown(
                    "bug",
                    b,
                    known.iter().map(|k| k.name),
                ));
            }
        }
        def.check_params(&self.params)
    }

    /// The scenario as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("scenarios serialise")
    }
}

/// `s` with the named fault profile (`default`, `calm`, `storage`; see
/// [`FaultMix::profile`]) applied to its scenario's default mix.
pub fn with_profile(
    def: &dyn DynScenario,
    mut s: Scenario,
    profile: &str,
) -> Result<Scenario, HarnessError> {
    s.faults = FaultMix::profile(profile, &def.defaults().faults).ok_or_else(|| {
        HarnessError::unknown("fault profile", profile, FaultMix::PROFILES.iter().copied())
    })?;
    Ok(s)
}

/// The name of the fault profile `s`'s mix is (`s` a run of `def`), when it
/// is not the default one.
pub fn profile_of(def: &dyn DynScenario, s: &Scenario) -> Option<&'static str> {
    let base = def.defaults().faults;
    FaultMix::PROFILES
        .iter()
        .copied()
        .filter(|p| *p != "default")
        .find(|p| FaultMix::profile(p, &base).as_ref() == Some(&s.faults))
}

/// Format 1 (flat `occ` fields, `"version": 1`) to format 2; a note says so.
fn migrate(
    mut value: serde_json::Value,
) -> Result<(serde_json::Value, Option<String>), HarnessError> {
    let version = value.get("version").and_then(|v| v.as_u64());
    if version != Some(1) {
        return Ok((value, None));
    }
    let Some(obj) = value.as_object_mut() else {
        return Err("not a scenario: expected a JSON object".into());
    };
    obj.remove("version");
    let mut envelope = serde_json::Map::new();
    for key in V1_ENVELOPE {
        if let Some(v) = obj.remove(*key) {
            envelope.insert((*key).to_string(), v);
        }
    }
    envelope.insert("version".into(), SCENARIO_VERSION.into());
    envelope.insert(
        "params".into(),
        serde_json::Value::Object(std::mem::take(obj)),
    );
    Ok((
        serde_json::Value::Object(envelope),
        Some("scenario format 1 read as format 2 (`overcast replay --record FILE` rewrites the file)".into()),
    ))
}
