//! Checking a saved overcast history file (the JSON `overcast run --history`
//! and failures write) for linearizability against the item spec, as
//! `overcast check` does for kvhist/1 files.

use crate::services::occ::check::{check_items, OccHistory};
use overcast_sim::history::HISTORY_VERSION;
use overcast_sim::lin::{self, Report};

/// Checks an overcast history given as parsed JSON. Errors say in one line
/// why the document is not a valid history.
pub fn check_history(doc: &serde_json::Value, opts: &lin::Options) -> Result<Report, String> {
    let version = doc.get("version").and_then(|v| v.as_u64());
    if version != Some(u64::from(HISTORY_VERSION)) {
        return Err(format!(
            "not an overcast history: \"version\" must be {HISTORY_VERSION}"
        ));
    }
    let history: OccHistory = serde_json::from_value(doc.clone())
        .map_err(|e| format!("not a valid overcast history: {e}"))?;
    if let Some(o) = history
        .ops
        .iter()
        .find(|o| o.return_ns.is_some_and(|r| r < o.invoke_ns))
    {
        return Err(format!("op {} returns before it is invoked", o.id));
    }
    let mut report = check_items(&history, opts);
    // Count what the file holds, not only what the checker could use.
    report.ops = history.ops.len();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_history_checks_the_same_from_its_file() {
        let mut s = crate::CATALOGUE.scenario("occ", 0).unwrap();
        s.params["ops_per_client"] = 20.into();
        let good = crate::CATALOGUE.run(&s);
        let doc: serde_json::Value = serde_json::from_str(&good.history.to_json()).unwrap();
        let r = check_history(&doc, &lin::Options::default()).unwrap();
        assert_eq!(r.verdict, lin::Verdict::Linearizable);
        s.bugs = vec!["skip_if_match".into()];
        s.params["ops_per_client"] = 100.into();
        let bad = crate::CATALOGUE.run(&s);
        assert!(!bad.passed());
        let doc: serde_json::Value = serde_json::from_str(&bad.history.to_json()).unwrap();
        assert_eq!(
            check_history(&doc, &lin::Options::default())
                .unwrap()
                .verdict,
            lin::Verdict::NotLinearizable
        );
    }

    #[test]
    fn malformed_histories_are_refused_in_words() {
        let bad = serde_json::json!({"version": 1, "ops": [{"id": 0}]});
        assert!(check_history(&bad, &lin::Options::default())
            .unwrap_err()
            .contains("not a valid overcast history"));
        let v2 = serde_json::json!({"version": 2, "ops": []});
        assert!(check_history(&v2, &lin::Options::default())
            .unwrap_err()
            .contains("must be 1"));
    }
}
