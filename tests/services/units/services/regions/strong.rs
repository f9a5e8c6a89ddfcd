//! Tests of `overcast_scenarios::services::regions::strong`.
use overcast_scenarios::services::regions::strong::*;
use overcast_scenarios::services::regions::Service;
use overcast_sim::lin::{self, Operation};

const COSMOS: Register = Register {
    service: Service::Cosmos,
};
const BLOB: Register = Register {
    service: Service::Blob,
};

fn out(status: u16, body: Option<&str>) -> Option<RegisterOut> {
    Some(RegisterOut {
        status,
        body: body.map(str::to_string),
    })
}

fn op(
    id: u64,
    input: RegisterOp,
    t: (i64, i64),
    o: Option<RegisterOut>,
) -> Operation<RegisterOp, RegisterOut> {
    Operation {
        id,
        client: id,
        key: "k0".into(),
        input,
        invoke: t.0,
        ret: Some(t.1),
        output: o,
    }
}

#[test]
fn a_read_of_the_old_body_after_a_replace_returned_is_not_linearizable() {
    let h = [
        op(0, RegisterOp::Upsert("a".into()), (0, 10), out(201, None)),
        op(
            1,
            RegisterOp::Replace {
                body: "b".into(),
                expected: Some("a".into()),
            },
            (11, 20),
            out(200, None),
        ),
        op(2, RegisterOp::Read, (21, 30), out(200, Some("a"))),
    ];
    let r = lin::check(&COSMOS, &h, &lin::Options::default());
    assert_eq!(r.verdict, lin::Verdict::NotLinearizable);
    let ok = [
        h[0].clone(),
        h[1].clone(),
        op(2, RegisterOp::Read, (21, 30), out(200, Some("b"))),
    ];
    assert_eq!(
        lin::check(&COSMOS, &ok, &lin::Options::default()).verdict,
        lin::Verdict::Linearizable
    );
}

#[test]
fn a_write_with_no_answer_may_or_may_not_have_taken_effect() {
    let h = [
        op(0, RegisterOp::Create("a".into()), (0, 10), None),
        op(1, RegisterOp::Read, (20, 30), out(404, None)),
        op(2, RegisterOp::Read, (40, 50), out(200, Some("a"))),
    ];
    assert_eq!(
        lin::check(&COSMOS, &h, &lin::Options::default()).verdict,
        lin::Verdict::Linearizable
    );
}

#[test]
fn a_blob_is_judged_in_its_own_dialect() {
    let replace_missing = |status| {
        [op(
            0,
            RegisterOp::Replace {
                body: "b".into(),
                expected: Some("a".into()),
            },
            (0, 10),
            out(status, None),
        )]
    };
    let verdict = |spec: &Register, h: &[Operation<RegisterOp, RegisterOut>]| {
        lin::check(spec, h, &lin::Options::default()).verdict
    };
    use lin::Verdict::{Linearizable, NotLinearizable};
    // If-Match on a missing item: 412 for a blob, 404 for a Cosmos item.
    assert_eq!(verdict(&BLOB, &replace_missing(412)), Linearizable);
    assert_eq!(verdict(&BLOB, &replace_missing(404)), NotLinearizable);
    assert_eq!(verdict(&COSMOS, &replace_missing(404)), Linearizable);
    assert_eq!(verdict(&COSMOS, &replace_missing(412)), NotLinearizable);
    // A blob put answers 201 whether it created or replaced (never 200);
    // a delete is 202.
    let put = |id, status| {
        op(
            id,
            RegisterOp::Upsert(format!("b{id}")),
            (id as i64 * 10, id as i64 * 10 + 5),
            out(status, None),
        )
    };
    let delete = |id, status| {
        op(
            id,
            RegisterOp::Delete {
                expected: None,
                conditional: false,
            },
            (id as i64 * 10, id as i64 * 10 + 5),
            out(status, None),
        )
    };
    assert_eq!(
        verdict(&BLOB, &[put(0, 201), put(1, 201), delete(2, 202)]),
        Linearizable
    );
    assert_eq!(verdict(&BLOB, &[put(0, 201), put(1, 200)]), NotLinearizable);
    assert_eq!(verdict(&BLOB, &[put(0, 200)]), NotLinearizable);
    // A conditional replace: Put Blob 201, Cosmos 200.
    let replace = |status| {
        op(
            1,
            RegisterOp::Replace {
                body: "c".into(),
                expected: Some("b0".into()),
            },
            (10, 15),
            out(status, None),
        )
    };
    assert_eq!(verdict(&BLOB, &[put(0, 201), replace(201)]), Linearizable);
    assert_eq!(
        verdict(&BLOB, &[put(0, 201), replace(200)]),
        NotLinearizable
    );
    assert_eq!(verdict(&COSMOS, &[put(0, 201), replace(200)]), Linearizable);
    assert_eq!(
        verdict(&COSMOS, &[put(0, 201), replace(201)]),
        NotLinearizable
    );
    assert_eq!(
        verdict(&BLOB, &[put(0, 201), delete(1, 204)]),
        NotLinearizable
    );
    assert_eq!(
        verdict(&COSMOS, &[put(0, 201), delete(1, 204)]),
        Linearizable
    );
    // A conditional delete of a missing blob is 412, not 404.
    let cond_delete = |status| {
        [op(
            0,
            RegisterOp::Delete {
                expected: Some("a".into()),
                conditional: true,
            },
            (0, 10),
            out(status, None),
        )]
    };
    assert_eq!(verdict(&BLOB, &cond_delete(412)), Linearizable);
    assert_eq!(verdict(&BLOB, &cond_delete(404)), NotLinearizable);
    assert_eq!(verdict(&COSMOS, &cond_delete(404)), Linearizable);
}
