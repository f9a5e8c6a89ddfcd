//! Checking a scenario's parameters: the error a refusal carries, the size
//! limits every scenario declares, and the checks most scenarios make (a
//! count of at least one, a range whose ends are in order, a probability).
//! One place writes each refusal, so every scenario says it the same way.

use std::fmt;

/// Why a scenario's parameters were refused: one line in the parameters'
/// own words (`fsync_ms has its low end above its high end`), which the
/// CLI prints as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError(String);

impl ParamError {
    /// A refusal that says `why`.
    pub fn new(why: impl Into<String>) -> ParamError {
        ParamError(why.into())
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParamError {}

impl From<ParamError> for String {
    fn from(e: ParamError) -> String {
        e.0
    }
}

/// The largest value a size parameter of a scenario may take
/// ([`crate::registry::ScenarioDef::limits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeLimit {
    /// The parameter: a top-level field of the scenario's parameters.
    pub param: &'static str,
    /// Its largest value.
    pub max: u64,
}

impl SizeLimit {
    /// The limit `param <= max`.
    pub const fn new(param: &'static str, max: u64) -> SizeLimit {
        SizeLimit { param, max }
    }
}

/// Checks `params` (a scenario's parameters as JSON) against `limits`; the
/// error names the parameter, its value and the limit, in one line.
pub fn check_limits(
    scenario: &str,
    limits: &[SizeLimit],
    params: &serde_json::Value,
) -> Result<(), ParamError> {
    for l in limits {
        if let Some(v) = params.get(l.param).and_then(serde_json::Value::as_u64) {
            if v > l.max {
                return Err(ParamError(format!(
                    "{} is {v}, more than {scenario} is built for (at most {}; `overcast list` gives every scenario's limits)",
                    l.param, l.max
                )));
            }
        }
    }
    Ok(())
}

/// Refuses when any of `counts` (name, value) is zero, naming the whole
/// group: `servers and clients must be at least 1`.
pub fn at_least_one(counts: &[(&str, u64)]) -> Result<(), ParamError> {
    if counts.iter().all(|&(_, n)| n > 0) {
        return Ok(());
    }
    let names: Vec<&str> = counts.iter().map(|&(name, _)| name).collect();
    Err(ParamError(format!(
        "{} must be at least 1",
        in_a_list(&names)
    )))
}

/// Refuses the first of `ranges` (name, (low, high)) whose low end is
/// above its high end.
pub fn ordered<T: PartialOrd + Copy>(ranges: &[(&str, (T, T))]) -> Result<(), ParamError> {
    match ranges.iter().find(|(_, (lo, hi))| lo > hi) {
        Some((name, _)) => Err(ParamError(format!(
            "{name} has its low end above its high end"
        ))),
        None => Ok(()),
    }
}

/// Refuses the first of `values` (name, value) outside 0..=1.
pub fn probabilities(values: &[(&str, f64)]) -> Result<(), ParamError> {
    match values.iter().find(|(_, v)| !(0.0..=1.0).contains(v)) {
        Some((name, _)) => Err(ParamError(format!("{name} must be between 0 and 1"))),
        None => Ok(()),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn in_a_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}
