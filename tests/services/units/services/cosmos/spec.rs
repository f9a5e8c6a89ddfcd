//! Tests of `overcast_scenarios::services::cosmos::spec`.
use overcast_scenarios::services::cosmos::spec::*;
use overcast_sim::lin::{check, Operation, Options, Verdict};
use overcast_sim::lin::{Next, Spec};

fn op(
    id: u64,
    input: CosmosOp,
    at: i64,
    output: CosmosResult,
) -> Operation<CosmosOp, CosmosResult> {
    Operation {
        id,
        client: id,
        key: "pk/a".into(),
        input,
        invoke: at,
        ret: Some(at + 1),
        output: Some(output),
    }
}

fn verdict(h: &[Operation<CosmosOp, CosmosResult>]) -> Verdict {
    check(&CosmosItemSpec, h, &Options::default()).verdict
}

#[test]
fn the_statuses_of_section_1_3_are_the_only_legal_outputs() {
    let s0: CosmosState = (None, 0);
    let s1: CosmosState = (Some("a".into()), 1);
    use CosmosOp as O;
    use CosmosResult as R;
    let b = || "b".to_string();
    for (state, input, out) in [
        (&s0, O::Create(b()), R::Created(Some(1))),
        (&s1, O::Create(b()), R::Conflict),
        (&s0, O::Replace(b()), R::NotFound),
        (&s0, O::ReplaceIfVersion(1, b()), R::NotFound),
        (&s1, O::ReplaceIfVersion(1, b()), R::Ok(Some(2))),
        (&s1, O::ReplaceIfVersion(7, b()), R::PreconditionFailed),
        (&s0, O::UpsertIfVersion(7, b()), R::Created(Some(1))),
        (&s0, O::Upsert(b()), R::Created(Some(1))),
        (&s1, O::UpsertIfVersion(7, b()), R::PreconditionFailed),
        (&s1, O::Upsert(b()), R::Ok(Some(2))),
        (&s0, O::Delete, R::NotFound),
        (&s0, O::DeleteIfVersion(1), R::NotFound),
        (&s1, O::DeleteIfVersion(2), R::PreconditionFailed),
        (&s1, O::DeleteIfVersion(1), R::Ok(None)),
        (&s1, O::ReadIfNoneMatch(1), R::NotModified),
        (&s1, O::ReadIfNoneMatch(0), R::Present("a".into(), 1)),
        (&s0, O::Read, R::Absent),
    ] {
        assert!(
            CosmosItemSpec.step(state, &input, Some(&out)).is_legal(),
            "{input:?} -> {out:?} in {state:?}"
        );
    }
    // A create answered 200, or a replace answered 201, is illegal.
    for (state, input, out) in [
        (&s0, O::Upsert(b()), R::Ok(Some(1))),
        (&s0, O::Create(b()), R::Ok(None)),
        (&s1, O::Upsert(b()), R::Created(Some(2))),
    ] {
        assert!(
            !CosmosItemSpec.step(state, &input, Some(&out)).is_legal(),
            "{input:?} -> {out:?} in {state:?}"
        );
    }
    // The seeded bugs' answers are illegal.
    assert!(!CosmosItemSpec
        .step(
            &s0,
            &O::UpsertIfVersion(7, b()),
            Some(&R::PreconditionFailed)
        )
        .is_legal());
    assert!(!CosmosItemSpec
        .step(
            &s0,
            &O::ReplaceIfVersion(1, b()),
            Some(&R::PreconditionFailed)
        )
        .is_legal());
}

#[test]
fn a_delete_is_told_with_the_status_it_was_answered() {
    let said = |op: CosmosOp, out: CosmosResult| CosmosItemSpec.describe_op(&op, Some(&out));
    assert_eq!(
        said(CosmosOp::Delete, CosmosResult::Ok(None)),
        "delete → 204"
    );
    assert_eq!(
        said(CosmosOp::DeleteIfVersion(3), CosmosResult::Ok(None)),
        "delete if-match version 3 → 204"
    );
    assert_eq!(
        said(CosmosOp::Replace("b".into()), CosmosResult::Ok(Some(2))),
        "replace \"b\" → 200 version 2"
    );
}

#[test]
fn two_replaces_with_the_same_if_match_cannot_both_succeed() {
    let h = vec![
        op(
            0,
            CosmosOp::Create("a".into()),
            0,
            CosmosResult::Created(Some(1)),
        ),
        op(
            1,
            CosmosOp::ReplaceIfVersion(1, "b".into()),
            2,
            CosmosResult::Ok(Some(2)),
        ),
        op(
            2,
            CosmosOp::ReplaceIfVersion(1, "c".into()),
            2,
            CosmosResult::Ok(Some(2)),
        ),
    ];
    assert_eq!(verdict(&h), Verdict::NotLinearizable);
    let mut ok = h.clone();
    ok[2].output = Some(CosmosResult::PreconditionFailed);
    assert_eq!(verdict(&ok), Verdict::Linearizable);
}

#[test]
fn a_rolled_back_operation_changes_nothing() {
    let h = vec![
        op(0, CosmosOp::Create("a".into()), 0, CosmosResult::RolledBack),
        op(1, CosmosOp::Read, 2, CosmosResult::Absent),
    ];
    assert_eq!(verdict(&h), Verdict::Linearizable);
}

#[test]
fn a_batch_answers_each_operation_after_the_ones_before_it() {
    use CosmosOp as O;
    use CosmosResult as R;
    let s0: CosmosState = (None, 0);
    let s1: CosmosState = (Some("a".into()), 1);
    let b = |x: &str| x.to_string();
    let step = |s: &CosmosState, ops: Vec<CosmosOp>, outs: Vec<CosmosResult>| {
        CosmosItemSpec.step(s, &O::InOrder(ops), Some(&R::InOrder(outs)))
    };
    // Create then replace: the replace finds the created item.
    let ops = || vec![O::Create(b("x")), O::Replace(b("y"))];
    assert_eq!(
        step(&s0, ops(), vec![R::Created(Some(1)), R::Ok(Some(2))]),
        Next::One((Some(b("y")), 2))
    );
    // ... and finding it missing (the state before the batch) is illegal.
    assert!(!step(&s0, ops(), vec![R::RolledBack, R::NotFound]).is_legal());
    // Two upserts: versions 2 and 3, not 2 twice.
    let ups = || vec![O::Upsert(b("x")), O::Upsert(b("y"))];
    assert!(step(&s1, ups(), vec![R::Ok(Some(2)), R::Ok(Some(3))]).is_legal());
    assert!(!step(&s1, ups(), vec![R::Ok(Some(2)), R::Ok(Some(2))]).is_legal());
    // A batch that failed on this item's second operation changes nothing;
    // one rolled back for a failure elsewhere needs its operations to
    // have gone through.
    let cr = || vec![O::Create(b("x")), O::Create(b("y"))];
    assert_eq!(
        step(&s0, cr(), vec![R::RolledBack, R::Conflict]),
        Next::One(s0.clone())
    );
    assert!(!step(&s1, ops(), vec![R::RolledBack, R::RolledBack]).is_legal());
    assert_eq!(
        step(&s0, ops(), vec![R::RolledBack, R::RolledBack]),
        Next::One(s0.clone())
    );
    // Unknown outcome: all of it or none.
    assert_eq!(
        CosmosItemSpec.step(&s0, &O::InOrder(ops()), None),
        Next::One((Some(b("y")), 2))
    );
    assert_eq!(
        CosmosItemSpec.step(&s1, &O::InOrder(ops()), None),
        Next::One(s1.clone())
    );
}
