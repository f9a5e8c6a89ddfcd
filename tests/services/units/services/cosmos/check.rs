//! Tests of `overcast_scenarios::services::cosmos::check`.
use overcast_scenarios::services::cosmos::check::*;
use overcast_scenarios::services::cosmos::history::{Call, ItemCall, OpOutcome, Outcome};
use overcast_scenarios::services::cosmos::spec::CosmosOp;
use overcast_sim::check::{Checker, Verdict, Violation};
use overcast_sim::history::History;
use overcast_sim::history::OpRecord;
use overcast_sim::lin::{self};

/// What [`BatchAtomicity`] finds in `history`: one violation at most.
fn batch_violation(history: &CosmosHistory) -> Option<Violation> {
    let checked = BatchAtomicity.check(history);
    let violations = checked.verdict().violations();
    assert!(violations.len() <= 1, "{violations:?}");
    violations.first().cloned()
}

fn call(kind: &str, ops: Vec<(&str, &str, Option<&str>)>) -> Call {
    Call {
        pk: "p".into(),
        kind: kind.into(),
        ops: ops
            .into_iter()
            .map(|(op, id, body)| ItemCall {
                op: op.into(),
                id: id.into(),
                body: body.map(str::to_string),
                if_match: None,
                if_none_match: None,
            })
            .collect(),
    }
}

fn res(status: u16, body: Option<&str>, version: Option<u64>) -> OpOutcome {
    OpOutcome {
        status,
        etag: version.map(|v| format!("e{v}")),
        version,
        body: body.map(str::to_string),
    }
}

fn rec(
    id: u64,
    at: u64,
    call: Call,
    status: u16,
    results: Vec<OpOutcome>,
) -> OpRecord<Call, Outcome> {
    OpRecord {
        id,
        client: id as usize,
        key: call.key(),
        call,
        invoke_ns: at,
        return_ns: Some(at + 1),
        result: Some(Outcome { status, results }),
        attempts: vec![],
    }
}

fn history(ops: Vec<OpRecord<Call, Outcome>>) -> CosmosHistory {
    History::of_ops(ops)
}

#[test]
fn a_read_of_a_rolled_back_batchs_body_is_a_violation() {
    let batch = call(
        "batch",
        vec![("create", "a", Some("x")), ("replace", "b", Some("y"))],
    );
    let read = call("item", vec![("read", "a", None)]);
    let h = history(vec![
        rec(
            0,
            0,
            batch.clone(),
            412,
            vec![res(424, None, None), res(412, None, None)],
        ),
        rec(1, 5, read.clone(), 200, vec![res(200, Some("x"), Some(1))]),
    ]);
    let v = batch_violation(&h).expect("caught");
    // The read first (what broke), then the batch it read from.
    assert_eq!(v.ops, vec![1, 0]);
    // The same read after a committed batch is fine.
    let h = history(vec![
        rec(
            0,
            0,
            batch,
            200,
            vec![res(201, Some("x"), Some(1)), res(200, Some("y"), Some(2))],
        ),
        rec(1, 5, read, 200, vec![res(200, Some("x"), Some(1))]),
    ]);
    assert_eq!(batch_violation(&h), None);
}

#[test]
fn seeing_one_write_of_a_batch_and_then_an_older_version_of_another_is_a_violation() {
    let batch = call(
        "batch",
        vec![("upsert", "a", Some("x")), ("upsert", "b", Some("y"))],
    );
    let ok = vec![res(200, Some("x"), Some(2)), res(200, Some("y"), Some(5))];
    let read = |id| call("item", vec![("read", id, None)]);
    let h = history(vec![
        rec(0, 0, batch.clone(), 200, ok.clone()),
        rec(1, 10, read("a"), 200, vec![res(200, Some("x"), Some(2))]),
        rec(2, 20, read("b"), 200, vec![res(200, Some("old"), Some(4))]),
        rec(3, 30, read("b"), 200, vec![res(200, Some("y"), Some(5))]),
    ]);
    assert!(batch_violation(&h).is_some());
    let h = history(vec![
        rec(0, 0, batch, 200, ok),
        rec(1, 10, read("a"), 200, vec![res(200, Some("x"), Some(2))]),
        rec(3, 30, read("b"), 200, vec![res(200, Some("y"), Some(5))]),
    ]);
    assert_eq!(batch_violation(&h), None);
}

#[test]
fn the_batchs_own_answer_gives_the_version_a_later_read_must_reach() {
    let batch = call(
        "batch",
        vec![("upsert", "a", Some("x")), ("upsert", "b", Some("y"))],
    );
    let ok = vec![res(200, Some("x"), Some(2)), res(200, Some("y"), Some(5))];
    let read = |id| call("item", vec![("read", id, None)]);
    // No read ever sees "y", but the batch said it wrote b at v5.
    let h = history(vec![
        rec(0, 0, batch, 200, ok),
        rec(1, 10, read("a"), 200, vec![res(200, Some("x"), Some(2))]),
        rec(2, 20, read("b"), 200, vec![res(200, Some("old"), Some(4))]),
    ]);
    assert_eq!(batch_violation(&h).map(|v| v.ops), Some(vec![2, 1, 0]));
}

/// A batch's steps on one item are judged in order: a replace after a
/// create of the same item that finds it missing is not linearizable,
/// whatever order the item's other operations take; the same batch
/// answered as SPEC says is.
#[test]
fn a_batch_naming_an_item_twice_is_judged_step_after_step() {
    let lin = |h: &CosmosHistory| {
        Linearizability {
            options: lin::Options::default(),
        }
        .check(h)
        .verdict()
            == &Verdict::Held
    };
    let batch = call(
        "batch",
        vec![("create", "a", Some("x")), ("replace", "a", Some("y"))],
    );
    let read = call("item", vec![("read", "a", None)]);
    let blind = history(vec![
        rec(
            0,
            0,
            batch.clone(),
            404,
            vec![res(424, None, None), res(404, None, None)],
        ),
        rec(1, 5, read.clone(), 404, vec![res(404, None, None)]),
    ]);
    assert!(!lin(&blind));
    let in_order = history(vec![
        rec(
            0,
            0,
            batch,
            200,
            vec![res(201, Some("x"), Some(1)), res(200, Some("y"), Some(2))],
        ),
        rec(1, 5, read, 200, vec![res(200, Some("y"), Some(2))]),
    ]);
    assert!(lin(&in_order));
    // Split on the item, the blind answer would pass: a 424 and a 404
    // of a missing item are each possible alone.
    assert_eq!(to_lin_ops(&blind).len(), 2);
    assert!(matches!(to_lin_ops(&blind)[0].input, CosmosOp::InOrder(_)));
}
