//! The order and outcome of the conditional headers (SPEC §1.1.3, §1.1.4,
//! §1.1.5), case by case.

use super::*;

// ---- SPEC §1.1.3 step 1: combination rule (E7) -----------------------------------

fn illegal_write_conditions() -> Vec<Conditions> {
    let e = stale();
    let e2 = ETag::quoted("0x2");
    vec![
        // more than one ETag
        Conditions {
            if_match: Some(tags(&[&e, &e2])),
            ..Conditions::default()
        },
        Conditions {
            if_none_match: Some(tags(&[&e, &e2])),
            ..Conditions::default()
        },
        // illegal pairs
        Conditions {
            if_match: Some(tags(&[&e])),
            if_none_match: Some(tags(&[&e2])),
            ..Conditions::default()
        },
        Conditions {
            if_match: Some(EtagMatch::Any),
            if_modified_since: Some(vec![1]),
            ..Conditions::default()
        },
        Conditions {
            if_none_match: Some(EtagMatch::Any),
            if_unmodified_since: Some(vec![1]),
            ..Conditions::default()
        },
        Conditions {
            if_modified_since: Some(vec![1]),
            if_unmodified_since: Some(vec![1]),
            ..Conditions::default()
        },
        // more than two headers
        Conditions {
            if_match: Some(tags(&[&e])),
            if_unmodified_since: Some(vec![1]),
            if_modified_since: Some(vec![1]),
            ..Conditions::default()
        },
        Conditions {
            if_none_match: Some(tags(&[&e])),
            if_modified_since: Some(vec![1]),
            if_unmodified_since: Some(vec![1]),
            ..Conditions::default()
        },
        Conditions {
            if_match: Some(EtagMatch::Any),
            if_none_match: Some(EtagMatch::Any),
            if_modified_since: Some(vec![1]),
            if_unmodified_since: Some(vec![1]),
            lease_id: None,
        },
    ]
}

#[test]
fn e7_illegal_write_combinations_are_400_before_state_is_read() {
    let (mut s, etag) = with_item();
    for c in illegal_write_conditions() {
        // against an existing item, an absent item and a missing container: always 400
        assert_status(&put(&mut s, "a", "x", c.clone(), 20_000), 400, MULTI);
        assert_status(&delete(&mut s, "a", c.clone(), 20_000), 400, MULTI);
        assert_status(&put(&mut s, "zz", "x", c.clone(), 20_000), 400, MULTI);
        assert_status(&delete(&mut s, "zz", c.clone(), 20_000), 400, MULTI);
        let mut empty = Store::new(ModelBugs::default());
        let (r, e) = empty.apply(
            &StoreRequest::Put {
                key: key("a"),
                body: "x".into(),
                conditions: c.clone(),
                metadata: Metadata::new(),
            },
            1,
        );
        assert_status(&r, 400, MULTI);
        assert!(e.is_none());
        assert_eq!(empty, Store::new(ModelBugs::default()));
    }
    // nothing changed
    assert_eq!(s.item(&key("a")).unwrap().etag, etag);
    assert_eq!(s.item(&key("a")).unwrap().version, 1);
    assert_eq!(s.item(&key("zz")), None);
}

#[test]
fn allowed_write_pairs_are_not_400() {
    let (mut s, etag) = with_item();
    // {If-Match, If-Unmodified-Since}: If-Match decides, the (failing) date is ignored.
    let c = Conditions {
        if_match: Some(tags(&[&etag])),
        if_unmodified_since: Some(vec![0]),
        ..Conditions::default()
    };
    assert_status(&put(&mut s, "a", "v2", c, 20_000), 201, None);
    // {If-None-Match, If-Modified-Since}: If-None-Match decides, the (failing) date is ignored.
    let c = Conditions {
        if_none_match: Some(tags(&[&stale()])),
        if_modified_since: Some(vec![99_000]),
        ..Conditions::default()
    };
    assert_status(&put(&mut s, "a", "v3", c, 21_000), 201, None);
    // An empty ETag list counts as an absent header.
    let c = Conditions {
        if_match: Some(EtagMatch::Tags(vec![])),
        if_none_match: Some(EtagMatch::Tags(vec![])),
        if_modified_since: Some(vec![1_000]),
        ..Conditions::default()
    };
    assert_status(&put(&mut s, "a", "v4", c, 22_000), 201, None);
    assert_eq!(s.item(&key("a")).unwrap().version, 4);
}

// ---- SPEC §1.1.3 step 2: write table ---------------------------------------------

#[test]
fn write_if_none_match_etag() {
    // exists, equal → 412
    let (mut s, etag) = with_item();
    assert_status(
        &put(
            &mut s,
            "a",
            "x",
            Conditions::if_none_match(etag.clone()),
            20_000,
        ),
        412,
        NOT_MET,
    );
    assert_status(
        &delete(&mut s, "a", Conditions::if_none_match(etag.clone()), 20_000),
        412,
        NOT_MET,
    );
    // exists, not equal → proceed, If-Modified-Since ignored (it would fail: lm 10 <= 50)
    let c = Conditions {
        if_none_match: Some(tags(&[&stale()])),
        if_modified_since: Some(vec![50_000]),
        ..Conditions::default()
    };
    assert_status(&put(&mut s, "a", "x", c.clone(), 20_000), 201, None);
    assert_status(&delete(&mut s, "a", c.clone(), 20_000), 202, None);
    // absent → proceed
    assert_status(&put(&mut s, "a", "y", c.clone(), 30_000), 201, None);
    assert_status(
        &put(&mut s, "b", "y", Conditions::if_none_match(etag), 30_000),
        201,
        None,
    );
    // absent delete proceeds past the conditions and finds no blob → 404
    assert_status(
        &delete(&mut s, "zz", Conditions::if_none_match(stale()), 30_000),
        404,
        Some("BlobNotFound"),
    );
}

#[test]
fn write_if_none_match_star() {
    let (mut s, _) = with_item();
    // exists: Put → 409 BlobAlreadyExists (AMBIG-2); other writes → 412
    assert_status(
        &put(&mut s, "a", "x", Conditions::if_none_match_any(), 20_000),
        409,
        Some("BlobAlreadyExists"),
    );
    assert_status(
        &delete(&mut s, "a", Conditions::if_none_match_any(), 20_000),
        412,
        NOT_MET,
    );
    // absent → create
    assert_status(
        &put(&mut s, "b", "x", Conditions::if_none_match_any(), 20_000),
        201,
        None,
    );
    assert_status(
        &delete(&mut s, "zz", Conditions::if_none_match_any(), 20_000),
        404,
        Some("BlobNotFound"),
    );
    // after a delete the item is absent again: create-only succeeds, version continues
    assert_status(&delete(&mut s, "a", Conditions::none(), 21_000), 202, None);
    let r = put(
        &mut s,
        "a",
        "again",
        Conditions::if_none_match_any(),
        22_000,
    );
    assert_status(&r, 201, None);
    assert_eq!(r.item.unwrap().version, 3);
}

#[test]
fn write_if_match() {
    let (mut s, etag) = with_item();
    // exists, not equal → 412
    for c in [
        Conditions::if_match(stale()),
        Conditions {
            if_match: Some(tags(&[&stale()])),
            if_unmodified_since: Some(vec![99_000]), // would pass; If-Match decides
            ..Conditions::default()
        },
    ] {
        assert_status(&put(&mut s, "a", "x", c.clone(), 20_000), 412, NOT_MET);
        assert_status(&delete(&mut s, "a", c, 20_000), 412, NOT_MET);
    }
    // exists, equal → proceed, If-Unmodified-Since ignored (it would fail: 0 < lm)
    let c = Conditions {
        if_match: Some(tags(&[&etag])),
        if_unmodified_since: Some(vec![0]),
        ..Conditions::default()
    };
    let r = put(&mut s, "a", "v2", c, 20_000);
    assert_status(&r, 201, None);
    let etag2 = r.item.unwrap().etag;
    // the old etag is now stale
    assert_status(
        &put(&mut s, "a", "x", Conditions::if_match(etag), 21_000),
        412,
        NOT_MET,
    );
    // `*` on an existing item → proceed
    assert_status(
        &put(&mut s, "a", "v3", Conditions::if_match_any(), 21_000),
        201,
        None,
    );
    assert_status(
        &delete(&mut s, "a", Conditions::if_match_any(), 22_000),
        202,
        None,
    );
    // absent → 412 (also for `*`), not 404 (SPEC §1.1.5)
    for c in [Conditions::if_match(etag2), Conditions::if_match_any()] {
        assert_status(&put(&mut s, "a", "x", c.clone(), 23_000), 412, NOT_MET);
        assert_status(&delete(&mut s, "a", c.clone(), 23_000), 412, NOT_MET);
        assert_status(&put(&mut s, "never", "x", c.clone(), 23_000), 412, NOT_MET);
        assert_status(&delete(&mut s, "never", c, 23_000), 412, NOT_MET);
    }
}

#[test]
fn write_if_modified_since_at_second_resolution() {
    // item written at 10.5 s: Last-Modified second 10
    let (mut s, _) = with_item();
    // lastModified <= t → 412: t = 10.999 s (same second), t = 11 s
    for t in [10_000, 10_999, 11_000] {
        assert_status(
            &put(&mut s, "a", "x", Conditions::if_modified_since(t), 20_000),
            412,
            NOT_MET,
        );
        assert_status(
            &delete(&mut s, "a", Conditions::if_modified_since(t), 20_000),
            412,
            NOT_MET,
        );
    }
    // lastModified > t → proceed (9.999 s is second 9)
    assert_status(
        &put(
            &mut s,
            "a",
            "x",
            Conditions::if_modified_since(9_999),
            20_000,
        ),
        201,
        None,
    );
    // absent → proceed
    assert_status(
        &put(
            &mut s,
            "b",
            "x",
            Conditions::if_modified_since(99_000),
            20_000,
        ),
        201,
        None,
    );
    assert_status(
        &delete(&mut s, "zz", Conditions::if_modified_since(99_000), 20_000),
        404,
        Some("BlobNotFound"),
    );
}

#[test]
fn write_if_unmodified_since_at_second_resolution() {
    let (mut s, _) = with_item();
    // t < lastModified → 412 (9.999 s is second 9 < 10)
    assert_status(
        &put(
            &mut s,
            "a",
            "x",
            Conditions::if_unmodified_since(9_999),
            20_000,
        ),
        412,
        NOT_MET,
    );
    assert_status(
        &delete(&mut s, "a", Conditions::if_unmodified_since(0), 20_000),
        412,
        NOT_MET,
    );
    // t >= lastModified → proceed, including an earlier ms in the same second (10.0 < 10.5)
    assert_status(
        &put(
            &mut s,
            "a",
            "x",
            Conditions::if_unmodified_since(10_000),
            20_400,
        ),
        201,
        None,
    );
    // absent → proceed
    assert_status(
        &put(&mut s, "b", "x", Conditions::if_unmodified_since(0), 20_000),
        201,
        None,
    );
    // now "a" has lm 20.4 s; t = 20.0 s is the same second → proceed
    assert_status(
        &delete(&mut s, "a", Conditions::if_unmodified_since(20_000), 21_000),
        202,
        None,
    );
}

// ---- SPEC §1.1.4: read table -----------------------------------------------------

#[test]
fn spec_1_1_4_read_of_a_missing_blob_is_404_also_with_if_match() {
    let mut s = store();
    // §1.1.4 row "Resource absent and If-Match present" → 404 BlobNotFound (live service),
    // for an ETag and for `*`; and without If-Match, 404 as well.
    for c in [
        Conditions::if_match(stale()),
        Conditions::if_match_any(),
        Conditions {
            if_match: Some(tags(&[&stale()])),
            if_unmodified_since: Some(vec![1]),
            ..Conditions::default()
        },
        Conditions::none(),
        Conditions::if_none_match(stale()),
        Conditions::if_modified_since(1),
        Conditions::if_unmodified_since(1),
    ] {
        assert_status(&read(&mut s, "a", c, 1), 404, Some("BlobNotFound"));
    }
    // a deleted item (a tombstone) reads the same
    put(&mut s, "d", "x", Conditions::none(), 1);
    delete(&mut s, "d", Conditions::none(), 2);
    assert_status(
        &read(&mut s, "d", Conditions::if_match_any(), 3),
        404,
        Some("BlobNotFound"),
    );
    // If-None-Match: * → 400, also next to If-Match
    for c in [
        Conditions::if_none_match_any(),
        Conditions {
            if_match: Some(EtagMatch::Any),
            if_none_match: Some(EtagMatch::Any),
            ..Conditions::default()
        },
    ] {
        assert_status(
            &read(&mut s, "a", c, 1),
            400,
            Some("UnsatisfiableCondition"),
        );
    }
}

#[test]
fn read_if_none_match_star_is_400() {
    let (mut s, etag) = with_item();
    for c in [
        Conditions::if_none_match_any(),
        Conditions {
            if_match: Some(tags(&[&etag])),
            if_none_match: Some(EtagMatch::Any),
            ..Conditions::default()
        },
        // even when If-Match would fail
        Conditions {
            if_match: Some(tags(&[&stale()])),
            if_none_match: Some(EtagMatch::Any),
            ..Conditions::default()
        },
    ] {
        assert_status(
            &read(&mut s, "a", c, 20_000),
            400,
            Some("UnsatisfiableCondition"),
        );
    }
}

#[test]
fn read_if_match_or_if_unmodified_since_false_is_412() {
    let (mut s, etag) = with_item();
    assert_status(
        &read(&mut s, "a", Conditions::if_match(stale()), 20_000),
        412,
        NOT_MET,
    );
    assert_status(
        &read(&mut s, "a", Conditions::if_unmodified_since(9_999), 20_000),
        412,
        NOT_MET,
    );
    // If-Match true but If-Unmodified-Since false → 412 (AND)
    let c = Conditions {
        if_match: Some(tags(&[&etag])),
        if_unmodified_since: Some(vec![0]),
        ..Conditions::default()
    };
    assert_status(&read(&mut s, "a", c, 20_000), 412, NOT_MET);
    // 412 wins over 304
    let c = Conditions {
        if_match: Some(tags(&[&stale()])),
        if_none_match: Some(tags(&[&etag])),
        ..Conditions::default()
    };
    assert_status(&read(&mut s, "a", c, 20_000), 412, NOT_MET);
    // If-Match OR-ed over several ETags, `*` matches, same-second date passes
    for c in [
        Conditions {
            if_match: Some(tags(&[&stale(), &etag])),
            ..Conditions::default()
        },
        Conditions::if_match_any(),
        Conditions {
            if_match: Some(EtagMatch::Any),
            if_unmodified_since: Some(vec![10_000]),
            ..Conditions::default()
        },
    ] {
        assert_status(&read(&mut s, "a", c, 20_000), 200, None);
    }
}

#[test]
fn read_if_none_match_false_is_304_unless_modified_since_true() {
    let (mut s, etag) = with_item();
    // etag matches, no If-Modified-Since → 304, no body
    let r = read(&mut s, "a", Conditions::if_none_match(etag.clone()), 20_000);
    assert_status(&r, 304, None);
    let view = r.item.unwrap();
    assert_eq!((view.body, &view.etag), (None, &etag));
    // etag matches, If-Modified-Since false → 304
    let c = Conditions {
        if_none_match: Some(tags(&[&etag])),
        if_modified_since: Some(vec![10_999]),
        ..Conditions::default()
    };
    assert_status(&read(&mut s, "a", c, 20_000), 304, None);
    // etag matches, If-Modified-Since true → 200 (OR)
    let c = Conditions {
        if_none_match: Some(tags(&[&etag])),
        if_modified_since: Some(vec![9_999]),
        ..Conditions::default()
    };
    assert_status(&read(&mut s, "a", c, 20_000), 200, None);
    // If-None-Match AND-ed: any listed ETag equal → false → 304
    let c = Conditions {
        if_none_match: Some(tags(&[&stale(), &etag])),
        ..Conditions::default()
    };
    assert_status(&read(&mut s, "a", c, 20_000), 304, None);
    let c = Conditions {
        if_none_match: Some(tags(&[&stale(), &ETag::quoted("0x1")])),
        ..Conditions::default()
    };
    assert_status(&read(&mut s, "a", c, 20_000), 200, None);
}

#[test]
fn read_if_modified_since_false_is_304_unless_none_match_true() {
    let (mut s, etag) = with_item();
    // lastModified <= t (same second) → 304
    for t in [10_000, 10_999, 50_000] {
        assert_status(
            &read(&mut s, "a", Conditions::if_modified_since(t), 20_000),
            304,
            None,
        );
    }
    // If-None-Match true → 200 (OR)
    let c = Conditions {
        if_none_match: Some(tags(&[&stale()])),
        if_modified_since: Some(vec![50_000]),
        ..Conditions::default()
    };
    assert_status(&read(&mut s, "a", c, 20_000), 200, None);
    // modified since → 200
    assert_status(
        &read(&mut s, "a", Conditions::if_modified_since(9_999), 20_000),
        200,
        None,
    );
    // all three allowed: If-Match && (If-None-Match || If-Modified-Since)
    let c = Conditions {
        if_match: Some(tags(&[&etag])),
        if_none_match: Some(tags(&[&etag])),
        if_modified_since: Some(vec![50_000]),
        ..Conditions::default()
    };
    assert_status(&read(&mut s, "a", c, 20_000), 304, None);
}

#[test]
fn spec_1_1_4_both_date_headers_on_a_read_are_legal() {
    let (mut s, _) = with_item();
    // Last-Modified second 10: modified since 9 s, not modified after 20 s → 200
    let both = |ims: Millis, ius: Millis| Conditions {
        if_modified_since: Some(vec![ims]),
        if_unmodified_since: Some(vec![ius]),
        ..Conditions::default()
    };
    assert_status(&read(&mut s, "a", both(9_000, 20_000), 21_000), 200, None);
    assert_status(&read(&mut s, "a", both(9_000, 9_000), 21_000), 412, NOT_MET);
    assert_status(&read(&mut s, "a", both(10_000, 20_000), 21_000), 304, None);
    assert_status(
        &read(&mut s, "zz", both(1, 1), 21_000),
        404,
        Some("BlobNotFound"),
    );
}

#[test]
fn spec_1_1_4_several_values_in_one_date_header_are_400_before_state_is_read() {
    let (mut s, _) = with_item();
    for c in [
        Conditions {
            if_modified_since: Some(vec![1, 2]),
            ..Conditions::default()
        },
        Conditions {
            if_unmodified_since: Some(vec![99_000, 99_000]),
            ..Conditions::default()
        },
    ] {
        assert_status(&read(&mut s, "a", c.clone(), 20_000), 400, MULTI);
        assert_status(&read(&mut s, "zz", c.clone(), 20_000), 400, MULTI);
        assert_status(&put(&mut s, "a", "x", c.clone(), 20_000), 400, MULTI);
        assert_status(&delete(&mut s, "a", c.clone(), 20_000), 400, MULTI);
        let mut empty = Store::new(ModelBugs::default());
        assert_status(&read(&mut empty, "a", c, 1), 400, MULTI);
    }
}

#[test]
fn spec_1_1_5_order_of_checks() {
    // 0 before 1: an illegal header set is 400 even without the container.
    let mut empty = Store::new(ModelBugs::default());
    let several = Conditions {
        if_modified_since: Some(vec![1, 2]),
        ..Conditions::default()
    };
    assert_status(&read(&mut empty, "a", several, 1), 400, MULTI);
    // 1 before 3: a missing container is 404 ContainerNotFound, even when the
    // conditions could never hold.
    for c in [
        Conditions::if_match(stale()),
        Conditions::if_none_match_any(),
    ] {
        assert_status(
            &put(&mut empty, "a", "x", c.clone(), 1),
            404,
            Some("ContainerNotFound"),
        );
        assert_status(
            &delete(&mut empty, "a", c, 1),
            404,
            Some("ContainerNotFound"),
        );
    }
    // 3 before 4: If-Match on a missing blob is 412 for writes (creating or not),
    // not 404 and not a create.
    let mut s = store();
    for c in [Conditions::if_match(stale()), Conditions::if_match_any()] {
        assert_status(&put(&mut s, "a", "x", c.clone(), 1), 412, NOT_MET);
        assert_status(&delete(&mut s, "a", c, 1), 412, NOT_MET);
    }
    assert_eq!(s.item(&key("a")), None);
    // 4: with the conditions passed, absent means create (put) or 404 (delete, read).
    assert_status(
        &delete(&mut s, "a", Conditions::if_none_match(stale()), 1),
        404,
        Some("BlobNotFound"),
    );
    assert_status(
        &put(&mut s, "a", "x", Conditions::if_none_match_any(), 1),
        201,
        None,
    );
}

#[test]
fn read_otherwise_200_with_body() {
    let (mut s, etag) = with_item();
    let c = Conditions {
        if_match: Some(tags(&[&etag])),
        if_none_match: Some(tags(&[&stale()])),
        if_unmodified_since: Some(vec![10_000]),
        ..Conditions::default()
    };
    let r = read(&mut s, "a", c, 20_000);
    assert_status(&r, 200, None);
    assert_eq!(r.item.unwrap().body.as_deref(), Some("v1"));
}
