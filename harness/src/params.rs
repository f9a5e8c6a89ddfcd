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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_count_names_its_whole_group() {
        assert_eq!(at_least_one(&[("servers", 2), ("clients", 1)]), Ok(()));
        assert_eq!(
            at_least_one(&[("servers", 2), ("clients", 0)])
                .unwrap_err()
                .to_string(),
            "servers and clients must be at least 1"
        );
        assert_eq!(
            at_least_one(&[("a", 0), ("b", 1), ("c", 1)])
                .unwrap_err()
                .to_string(),
            "a, b and c must be at least 1"
        );
        assert_eq!(
            at_least_one(&[("holders", 0)]).unwrap_err().to_string(),
            "holders must be at least 1"
        );
    }

    #[test]
    fn the_first_range_out_of_order_is_named() {
        assert_eq!(ordered(&[("a_ms", (1u64, 2)), ("b_ms", (3, 3))]), Ok(()));
        assert_eq!(
            ordered(&[("a_ms", (1u64, 2)), ("b_ms", (4, 3)), ("c_ms", (9, 1))])
                .unwrap_err()
                .to_string(),
            "b_ms has its low end above its high end"
        );
    }

    #[test]
    fn a_probability_outside_zero_to_one_is_named() {
        assert_eq!(probabilities(&[("p", 0.0), ("q", 1.0)]), Ok(()));
        assert_eq!(
            probabilities(&[("p", 0.5), ("q", 1.5)])
                .unwrap_err()
                .to_string(),
            "q must be between 0 and 1"
        );
        assert!(probabilities(&[("nan", f64::NAN)]).is_err());
    }

    #[test]
    fn a_size_past_its_limit_is_refused_in_one_line() {
        let limits = [SizeLimit::new("keys", 10)];
        let ok = serde_json::json!({"keys": 10});
        let big = serde_json::json!({"keys": 11});
        assert_eq!(check_limits("toy", &limits, &ok), Ok(()));
        let e = check_limits("toy", &limits, &big).unwrap_err().to_string();
        assert!(
            e.starts_with("keys is 11, more than toy is built for (at most 10"),
            "{e}"
        );
    }
}
