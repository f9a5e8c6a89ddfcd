//! Tests of `harness/src/scenario.rs`.

use crate::toy_scenario::COUNTER;
use overcast_harness::scenario::*;

fn load(text: &str) -> Result<Scenario, String> {
    let (s, _) = Scenario::from_json(text)?;
    s.validate_with(&COUNTER)?;
    Ok(s)
}

#[test]
fn scenarios_round_trip_and_unknown_fields_are_refused() {
    let s = Scenario::new(&COUNTER, 7);
    assert_eq!(load(&s.to_json()).unwrap(), s);
    let mut v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    v["surprise"] = serde_json::json!(1);
    let err = load(&v.to_string()).unwrap_err();
    assert!(err.contains("surprise"), "{err}");
    v = serde_json::from_str(&s.to_json()).unwrap();
    v["params"]["surprise"] = serde_json::json!(1);
    let err = load(&v.to_string()).unwrap_err();
    assert!(err.contains("surprise"), "{err}");
    v = serde_json::from_str(&s.to_json()).unwrap();
    v["bugs"] = serde_json::json!(["no_such_bug"]);
    assert!(load(&v.to_string())
        .unwrap_err()
        .contains("unknown bug 'no_such_bug' (known: double_increment)"));
    v["bugs"] = serde_json::json!([]);
    v["name"] = serde_json::json!("nope");
    assert!(load(&v.to_string())
        .unwrap_err()
        .contains("the file is a 'nope' scenario, not 'counter'"));
}

#[test]
fn a_format_1_file_is_migrated_with_a_note() {
    let s = Scenario::new(&COUNTER, 3);
    let mut flat = s.params.as_object().unwrap().clone();
    let v2: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    for key in V1_ENVELOPE {
        if let Some(v) = v2.get(*key) {
            flat.insert((*key).to_string(), v.clone());
        }
    }
    flat.insert("version".into(), 1.into());
    let (migrated, note) =
        Scenario::from_json(&serde_json::Value::Object(flat).to_string()).unwrap();
    // A format-1 file predates fault budgets: it carries none.
    let expected = Scenario { budget: None, ..s };
    assert_eq!(migrated, expected);
    assert!(note.unwrap().contains("format 1"));
}
