//! Tests of `overcast_scenarios::services::occ::spec`.
use overcast_scenarios::services::occ::spec::*;
use overcast_sim::lin::{check, Operation, Options, Verdict};

fn op(
    id: u64,
    input: ItemOp,
    invoke: i64,
    ret: Option<i64>,
    output: Option<ItemResult>,
) -> Operation<ItemOp, ItemResult> {
    Operation {
        id,
        client: id,
        key: "k".into(),
        input,
        invoke,
        ret,
        output,
    }
}

fn put(body: &str, cond: Cond) -> ItemOp {
    ItemOp::Put {
        body: body.into(),
        cond,
        orphans: Vec::new(),
    }
}

fn if_match(t: Tag) -> Cond {
    Cond {
        if_match: Some(Match::Tags(vec![t])),
        ..Cond::default()
    }
}

fn res(status: u16, etag: Option<Tag>, body: Option<&str>, lm: Option<u64>) -> ItemResult {
    ItemResult {
        status,
        etag,
        body: body.map(str::to_string),
        last_modified: lm,
        hint: None,
    }
}

fn verdict(h: &[Operation<ItemOp, ItemResult>]) -> Verdict {
    let opts = Options {
        parallel: false,
        ..Options::default()
    };
    check(&ItemSpec::default(), h, &opts).verdict
}

#[test]
fn two_puts_with_the_same_if_match_cannot_both_succeed() {
    let h = vec![
        op(
            0,
            put("a", Cond::default()),
            0,
            Some(1),
            Some(res(201, Some(1), None, Some(0))),
        ),
        op(
            1,
            put("b", if_match(1)),
            2,
            Some(5),
            Some(res(201, Some(2), None, Some(0))),
        ),
        op(
            2,
            put("c", if_match(1)),
            3,
            Some(6),
            Some(res(201, Some(3), None, Some(0))),
        ),
    ];
    assert_eq!(verdict(&h), Verdict::NotLinearizable);
    let mut ok = h.clone();
    ok[2].output = Some(res(412, None, None, None));
    assert_eq!(verdict(&ok), Verdict::Linearizable);
}

#[test]
fn every_status_is_judged_not_only_the_ones_a_write_succeeds_with() {
    // An If-Match delete of a missing item is 412 (SPEC §1.1.3), not 404.
    let h = vec![op(
        0,
        ItemOp::Delete(if_match(7)),
        0,
        Some(1),
        Some(res(412, None, None, None)),
    )];
    assert_eq!(verdict(&h), Verdict::Linearizable);
    let mut bad = h.clone();
    bad[0].output = Some(res(404, None, None, None));
    assert_eq!(verdict(&bad), Verdict::NotLinearizable);
    // A plain read of an existing item is 200 with its body, never 304.
    let r = vec![
        op(
            0,
            put("a", Cond::default()),
            0,
            Some(1),
            Some(res(201, Some(1), None, Some(3))),
        ),
        op(
            1,
            ItemOp::Read(Cond::default()),
            2,
            Some(3),
            Some(res(200, Some(1), Some("a"), Some(3))),
        ),
    ];
    assert_eq!(verdict(&r), Verdict::Linearizable);
    let mut bad = r.clone();
    bad[1].output = Some(res(304, Some(1), None, Some(3)));
    assert_eq!(verdict(&bad), Verdict::NotLinearizable);
    // A put answers 201 whether it created or replaced; 200 is never right.
    let mut bad = r.clone();
    bad[0].output = Some(res(200, Some(1), None, Some(3)));
    assert_eq!(verdict(&bad), Verdict::NotLinearizable);
    // Several ETags in a write's If-Match: 400, nothing changed.
    let w = vec![
        op(
            0,
            put(
                "a",
                Cond {
                    if_match: Some(Match::Tags(vec![1, 2])),
                    ..Cond::default()
                },
            ),
            0,
            Some(1),
            Some(res(400, None, None, None)),
        ),
        op(
            1,
            ItemOp::Read(Cond::default()),
            2,
            Some(3),
            Some(res(404, None, None, None)),
        ),
    ];
    assert_eq!(verdict(&w), Verdict::Linearizable);
    let mut bad = w.clone();
    bad[0].output = Some(res(201, Some(1), None, Some(0)));
    assert_eq!(verdict(&bad), Verdict::NotLinearizable);
}

#[test]
fn an_unknown_write_may_land_late_or_never_with_an_etag_only_reads_saw() {
    let unknown = ItemOp::Put {
        body: "a".into(),
        cond: Cond::default(),
        orphans: vec![Orphan {
            etag: 4,
            last_modified: Some(9),
        }],
    };
    let h = vec![
        op(0, unknown, 0, None, None),
        op(
            1,
            ItemOp::Read(Cond::default()),
            5,
            Some(6),
            Some(res(404, None, None, None)),
        ),
        op(
            2,
            ItemOp::Read(Cond::default()),
            7,
            Some(8),
            Some(res(200, Some(4), Some("a"), Some(9))),
        ),
        op(
            3,
            put("b", if_match(4)),
            9,
            Some(10),
            Some(res(201, Some(5), None, Some(9))),
        ),
    ];
    assert_eq!(verdict(&h), Verdict::Linearizable);
    let mut bad = h.clone();
    bad.push(op(
        4,
        ItemOp::Read(Cond::default()),
        11,
        Some(12),
        Some(res(200, Some(4), Some("a"), Some(9))),
    ));
    assert_eq!(verdict(&bad), Verdict::NotLinearizable);
}

#[test]
fn date_conditions_compare_whole_seconds_against_last_modified() {
    let ims = |t| Cond {
        if_modified_since: Some(vec![t]),
        ..Cond::default()
    };
    let h = vec![
        op(
            0,
            put("a", Cond::default()),
            0,
            Some(1),
            Some(res(201, Some(1), None, Some(10))),
        ),
        // Modified since 9 s: yes. Since 10 s: no (same second) → 304.
        op(
            1,
            ItemOp::Read(ims(9)),
            2,
            Some(3),
            Some(res(200, Some(1), Some("a"), Some(10))),
        ),
        op(
            2,
            ItemOp::Read(ims(10)),
            4,
            Some(5),
            Some(res(304, Some(1), None, Some(10))),
        ),
        // A write with If-Modified-Since 10 s: 412.
        op(
            3,
            put("b", ims(10)),
            6,
            Some(7),
            Some(res(412, None, None, None)),
        ),
    ];
    assert_eq!(verdict(&h), Verdict::Linearizable);
    let mut bad = h.clone();
    bad[2].output = Some(res(200, Some(1), Some("a"), Some(10)));
    assert_eq!(verdict(&bad), Verdict::NotLinearizable);
    let mut bad = h.clone();
    bad[3].output = Some(res(201, Some(2), None, Some(11)));
    assert_eq!(verdict(&bad), Verdict::NotLinearizable);
}

fn created(tag: Tag, lm: u64) -> Operation<ItemOp, ItemResult> {
    op(
        0,
        put("a", Cond::default()),
        0,
        Some(1),
        Some(res(201, Some(tag), None, Some(lm))),
    )
}

#[test]
fn a_head_answers_as_a_read_without_the_body() {
    let head = |id, cond, out| {
        op(
            id,
            ItemOp::Head(cond),
            2 * id as i64,
            Some(2 * id as i64 + 1),
            Some(out),
        )
    };
    let h = vec![
        created(1, 3),
        head(1, Cond::default(), res(200, Some(1), None, Some(3))),
        head(2, if_match(1), res(200, Some(1), None, Some(3))),
        head(3, if_match(9), res(412, None, None, None)),
        head(
            4,
            Cond {
                if_none_match: Some(Match::Tags(vec![1])),
                ..Cond::default()
            },
            res(304, Some(1), None, Some(3)),
        ),
    ];
    assert_eq!(verdict(&h), Verdict::Linearizable);
    // A stale If-Match answered 200 (the seeded bug `head_ignores_if_match`).
    let mut bad = h.clone();
    bad[3].output = Some(res(200, Some(1), None, Some(3)));
    assert_eq!(verdict(&bad), Verdict::NotLinearizable);
    // A HEAD never carries the body.
    let mut bad = h.clone();
    bad[1].output = Some(res(200, Some(1), Some("a"), Some(3)));
    assert_eq!(verdict(&bad), Verdict::NotLinearizable);
    // Absent: 404.
    let absent = vec![head(0, Cond::default(), res(404, None, None, None))];
    assert_eq!(verdict(&absent), Verdict::Linearizable);
}

fn set_metadata(cond: Cond) -> ItemOp {
    ItemOp::SetMetadata {
        cond,
        orphans: Vec::new(),
    }
}

#[test]
fn set_metadata_keeps_the_body_and_gives_a_new_etag() {
    let h = vec![
        created(1, 3),
        op(
            1,
            set_metadata(if_match(1)),
            2,
            Some(3),
            Some(res(200, Some(2), None, Some(4))),
        ),
        op(
            2,
            ItemOp::Read(Cond::default()),
            4,
            Some(5),
            Some(res(200, Some(2), Some("a"), Some(4))),
        ),
        // The ETag from before the change no longer matches.
        op(
            3,
            put("b", if_match(1)),
            6,
            Some(7),
            Some(res(412, None, None, None)),
        ),
    ];
    assert_eq!(verdict(&h), Verdict::Linearizable);
    // The old ETag kept (the seeded bug `metadata_keeps_etag`).
    let mut bad = h.clone();
    bad[1].output = Some(res(200, Some(1), None, Some(4)));
    bad[2].output = Some(res(200, Some(1), Some("a"), Some(4)));
    assert_eq!(verdict(&bad), Verdict::NotLinearizable);
    // The body changed by it.
    let mut bad = h.clone();
    bad[2].output = Some(res(200, Some(2), Some("b"), Some(4)));
    assert_eq!(verdict(&bad), Verdict::NotLinearizable);
    // A stale If-Match is 412, an absent item 404, and neither changes anything.
    let refused = vec![
        created(1, 3),
        op(
            1,
            set_metadata(if_match(9)),
            2,
            Some(3),
            Some(res(412, None, None, None)),
        ),
        op(
            2,
            ItemOp::Read(Cond::default()),
            4,
            Some(5),
            Some(res(200, Some(1), Some("a"), Some(3))),
        ),
    ];
    assert_eq!(verdict(&refused), Verdict::Linearizable);
    let absent = vec![op(
        0,
        set_metadata(Cond::default()),
        0,
        Some(1),
        Some(res(404, None, None, None)),
    )];
    assert_eq!(verdict(&absent), Verdict::Linearizable);
    let mut bad = absent.clone();
    bad[0].output = Some(res(200, Some(1), None, Some(1)));
    assert_eq!(verdict(&bad), Verdict::NotLinearizable);
}

#[test]
fn a_set_metadata_of_unknown_outcome_may_have_made_a_version_a_later_read_shows() {
    let h = vec![
        created(1, 3),
        op(
            1,
            ItemOp::SetMetadata {
                cond: if_match(1),
                orphans: vec![Orphan {
                    etag: 2,
                    last_modified: Some(4),
                }],
            },
            2,
            None,
            None,
        ),
        op(
            2,
            ItemOp::Read(Cond::default()),
            4,
            Some(5),
            Some(res(200, Some(2), Some("a"), Some(4))),
        ),
    ];
    assert_eq!(verdict(&h), Verdict::Linearizable);
    // It keeps the body: the version it made cannot hold another.
    let mut bad = h.clone();
    bad[2].output = Some(res(200, Some(2), Some("z"), Some(4)));
    assert_eq!(verdict(&bad), Verdict::NotLinearizable);
}
