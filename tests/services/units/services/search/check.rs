//! Tests of `overcast_scenarios::services::search::check`.
use overcast_scenarios::services::search::check::*;
use overcast_scenarios::services::search::history::{Call, Outcome};
use overcast_sim::check::{Checker, Violation};
use overcast_sim::history::History;
use overcast_sim::history::OpRecord;

/// What [`NoLostField`] finds in `history`: one violation at most.
fn lost_field(history: &SearchHistory) -> Option<Violation> {
    let checked = NoLostField.check(history);
    let violations = checked.verdict().violations();
    assert!(violations.len() <= 1, "{violations:?}");
    violations.first().cloned()
}

fn rec(
    id: u64,
    at: u64,
    op: &str,
    entries: &[&str],
    added: Option<&str>,
    status: u16,
) -> OpRecord<Call, Outcome> {
    let entries: Vec<String> = entries.iter().map(|e| e.to_string()).collect();
    OpRecord {
        id,
        client: id as usize,
        key: "syn".into(),
        call: Call {
            op: op.into(),
            name: "syn".into(),
            kind: Some("synonym_map".into()),
            entries: if op == "put" { entries.clone() } else { vec![] },
            if_match: None,
            if_none_match: None,
            added: added.map(str::to_string),
        },
        invoke_ns: at,
        return_ns: Some(at + 1),
        result: Some(Outcome {
            status,
            etag: None,
            version: None,
            kind: None,
            entries,
        }),
        attempts: vec![],
    }
}

fn history(ops: Vec<OpRecord<Call, Outcome>>) -> SearchHistory {
    History::of_ops(ops)
}

#[test]
fn an_acknowledged_entry_missing_from_a_later_definition_is_lost() {
    let h = history(vec![
        rec(0, 0, "put", &["a"], Some("a"), 200),
        rec(1, 10, "put", &["b"], Some("b"), 200),
    ]);
    // The definition without the field first, then the write that added it.
    assert_eq!(lost_field(&h).map(|v| v.ops), Some(vec![1, 0]));
    let kept = history(vec![
        rec(0, 0, "put", &["a"], Some("a"), 200),
        rec(1, 10, "put", &["a", "b"], Some("b"), 200),
        rec(2, 20, "get", &["a", "b"], None, 200),
    ]);
    assert_eq!(lost_field(&kept), None);
    // A refused update adds nothing, and concurrent calls are not judged.
    let refused = history(vec![
        rec(0, 0, "put", &["a"], Some("a"), 412),
        rec(1, 0, "put", &["b"], Some("b"), 200),
    ]);
    assert_eq!(lost_field(&refused), None);
}
