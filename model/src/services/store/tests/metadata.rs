//! Get Blob Properties (a HEAD: Get Blob's read rules, no body, no error
//! codes) and Set Blob Metadata (a write: new ETag, content kept), and the
//! metadata a Put carries.

use super::*;

fn meta(pairs: &[(&str, &str)]) -> Metadata {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn head(s: &mut Store, id: &str, c: Conditions, now: Millis) -> StoreResponse {
    let before = s.clone();
    let (r, e) = s.apply(
        &StoreRequest::GetProperties {
            key: key(id),
            conditions: c,
        },
        now,
    );
    assert!(e.is_none(), "a HEAD never has an effect");
    assert_eq!(&before, s, "a HEAD never changes state");
    assert_eq!(r.error_code, None, "a HEAD answer has no body: {r:?}");
    r
}

fn set_metadata(
    s: &mut Store,
    id: &str,
    metadata: Metadata,
    c: Conditions,
    now: Millis,
) -> StoreResponse {
    let before = s.clone();
    let (r, e) = s.apply(
        &StoreRequest::SetMetadata {
            key: key(id),
            metadata,
            conditions: c,
        },
        now,
    );
    check_effect(&before, s, &r, e.as_ref());
    r
}

fn put_with(s: &mut Store, id: &str, body: &str, metadata: Metadata, now: Millis) -> ItemView {
    let before = s.clone();
    let (r, e) = s.apply(
        &StoreRequest::Put {
            key: key(id),
            body: body.into(),
            conditions: Conditions::none(),
            metadata,
        },
        now,
    );
    check_effect(&before, s, &r, e.as_ref());
    assert_status(&r, 201, None);
    r.item.expect("a put answers its new ETag")
}

/// `If-Match` with two ETags: 400 before anything is read (SPEC §1.1.3 step 1).
fn two_etags() -> Conditions {
    Conditions {
        if_match: Some(tags(&[&stale(), &stale()])),
        ..Conditions::default()
    }
}

#[test]
fn head_answers_as_get_blob_does_without_body_or_error_codes() {
    let mut s = store();
    let m = meta(&[("owner", "a")]);
    let v1 = put_with(&mut s, "a", "v1", m.clone(), 10_500);
    // 200: the ETag, Last-Modified and metadata, no body.
    let r = head(&mut s, "a", Conditions::none(), 11_000);
    assert_status(&r, 200, None);
    let item = r.item.unwrap();
    assert_eq!(
        (
            item.body,
            item.etag.clone(),
            item.last_modified,
            item.metadata
        ),
        (None, v1.etag.clone(), 10_500, Some(m.clone()))
    );
    // Get Blob gives the body and the same metadata.
    let got = read(&mut s, "a", Conditions::none(), 11_000).item.unwrap();
    assert_eq!((got.body.as_deref(), got.metadata), (Some("v1"), Some(m)));
    // 304 on If-None-Match of the current ETag and on If-Modified-Since after it.
    let r = head(
        &mut s,
        "a",
        Conditions::if_none_match(v1.etag.clone()),
        11_000,
    );
    assert_status(&r, 304, None);
    assert_eq!(r.item.unwrap().metadata, None);
    let r = head(&mut s, "a", Conditions::if_modified_since(20_000), 21_000);
    assert_eq!(r.status, 304);
    // 412 on a stale If-Match, bare: Get Blob's 412 carries ConditionNotMet.
    let stale_match = Conditions::if_match(stale());
    assert_status(&head(&mut s, "a", stale_match.clone(), 11_000), 412, None);
    assert_status(&read(&mut s, "a", stale_match, 11_000), 412, NOT_MET);
    let r = head(&mut s, "a", Conditions::if_unmodified_since(9_000), 11_000);
    assert_eq!(r.status, 412);
    // 404 for a missing blob (also with If-Match) and container, bare.
    assert_status(&head(&mut s, "b", Conditions::none(), 11_000), 404, None);
    let r = head(&mut s, "b", Conditions::if_match(v1.etag), 11_000);
    assert_status(&r, 404, None);
    let (r, _) = s.apply(
        &StoreRequest::GetProperties {
            key: ItemKey::new("nope", "pk", "a"),
            conditions: Conditions::none(),
        },
        11_000,
    );
    assert_status(&r, 404, None);
    // 400 on two dates in one header, and on If-None-Match: *, bare.
    let two_dates = Conditions {
        if_modified_since: Some(vec![1_000, 2_000]),
        ..Conditions::default()
    };
    assert_status(&head(&mut s, "a", two_dates, 11_000), 400, None);
    let r = head(&mut s, "a", Conditions::if_none_match_any(), 11_000);
    assert_status(&r, 400, None);
}

#[test]
fn set_metadata_makes_a_new_etag_keeps_the_content_and_replaces_the_metadata() {
    let mut s = store();
    let v1 = put_with(&mut s, "a", "v1", meta(&[("x", "1"), ("y", "2")]), 10_500);
    let r = set_metadata(&mut s, "a", meta(&[("z", "3")]), Conditions::none(), 12_300);
    assert_status(&r, 200, None);
    let v2 = r.item.unwrap();
    assert_ne!(v2.etag, v1.etag, "E1: a new ETag");
    assert_eq!((v2.version, v2.last_modified), (v1.version + 1, 12_300));
    let got = read(&mut s, "a", Conditions::none(), 13_000).item.unwrap();
    assert_eq!(got.body.as_deref(), Some("v1"));
    assert_eq!(got.etag, v2.etag);
    assert_eq!(got.metadata, Some(meta(&[("z", "3")])));
    // A put without metadata replaces it with none.
    put_with(&mut s, "a", "v2", Metadata::new(), 14_000);
    let got = head(&mut s, "a", Conditions::none(), 15_000).item.unwrap();
    assert_eq!(got.metadata, Some(Metadata::new()));
    // Setting it empty clears it, again with a new ETag.
    let before = got.etag;
    let r = set_metadata(&mut s, "a", Metadata::new(), Conditions::none(), 16_000);
    assert_ne!(r.item.unwrap().etag, before);
    // A missing blob: 404 BlobNotFound, also with If-Match.
    let r = set_metadata(&mut s, "b", meta(&[("z", "3")]), Conditions::none(), 16_000);
    assert_status(&r, 404, Some("BlobNotFound"));
    let r = set_metadata(
        &mut s,
        "b",
        Metadata::new(),
        Conditions::if_match(stale()),
        16_000,
    );
    assert_status(&r, 412, NOT_MET);
}

#[test]
fn set_metadata_follows_the_write_rules_of_the_conditions() {
    let (mut s, etag) = with_item();
    let m = || meta(&[("k", "v")]);
    // If-Match: the current ETag passes, a stale one 412.
    assert_status(
        &set_metadata(&mut s, "a", m(), Conditions::if_match(stale()), 11_000),
        412,
        NOT_MET,
    );
    let r = set_metadata(&mut s, "a", m(), Conditions::if_match(etag.clone()), 11_000);
    assert_status(&r, 200, None);
    let current = r.item.unwrap().etag;
    // The old ETag no longer matches.
    assert_status(
        &set_metadata(&mut s, "a", m(), Conditions::if_match(etag), 12_000),
        412,
        NOT_MET,
    );
    // If-None-Match: * on an existing blob is 412 (not Put's 409); the current ETag 412.
    assert_status(
        &set_metadata(&mut s, "a", m(), Conditions::if_none_match_any(), 12_000),
        412,
        NOT_MET,
    );
    assert_status(
        &set_metadata(&mut s, "a", m(), Conditions::if_none_match(current), 12_000),
        412,
        NOT_MET,
    );
    // Dates: modified since before the last write passes, since after it 412;
    // unmodified since before it 412.
    for (conditions, status) in [
        (Conditions::if_modified_since(20_000), 412),
        (Conditions::if_unmodified_since(5_000), 412),
        (Conditions::if_modified_since(5_000), 200),
    ] {
        assert_eq!(
            set_metadata(&mut s, "a", m(), conditions, 21_000).status,
            status
        );
    }
    // Two ETags in one header: 400 before anything is read.
    assert_status(
        &set_metadata(&mut s, "a", m(), two_etags(), 22_000),
        400,
        MULTI,
    );
}

#[test]
fn an_item_with_metadata_is_redone_from_its_logged_bytes_and_one_without_keeps_its_old_bytes() {
    let mut s = store();
    let (_, plain) = s.apply(
        &StoreRequest::Put {
            key: key("a"),
            body: "v1".into(),
            conditions: Conditions::none(),
            metadata: Metadata::new(),
        },
        1_000,
    );
    let plain = plain.unwrap();
    assert!(matches!(plain, Effect::ItemWritten { .. }));
    // Without metadata the record is the bytes of an item of four fields.
    let Effect::ItemWritten { item, .. } = &plain else {
        unreachable!()
    };
    let four = bincode::serialize(&(&item.body, &item.etag, item.last_modified, item.version));
    assert_eq!(bincode::serialize(item).ok(), four.ok());
    let (_, with) = s.apply(
        &StoreRequest::SetMetadata {
            key: key("a"),
            metadata: meta(&[("k", "v")]),
            conditions: Conditions::none(),
        },
        2_000,
    );
    let logged: Effect =
        bincode::deserialize(&bincode::serialize(&with.unwrap()).unwrap()).unwrap();
    let mut replayed = store();
    replayed.redo(&plain);
    replayed.redo(&logged);
    assert_eq!(replayed, s);
    assert_eq!(
        replayed.item(&key("a")).unwrap().metadata,
        meta(&[("k", "v")])
    );
}

#[test]
fn bug_metadata_keeps_etag_breaks_e1() {
    let bugs = ModelBugs {
        metadata_keeps_etag: true,
        ..ModelBugs::default()
    };
    let mut s = store_with(bugs);
    let v1 = put(&mut s, "a", "v1", Conditions::none(), 1_000)
        .item
        .unwrap();
    let r = set_metadata(&mut s, "a", meta(&[("k", "v")]), Conditions::none(), 2_000);
    assert_status(&r, 200, None);
    assert_eq!(
        r.item.unwrap().etag,
        v1.etag,
        "the seeded bug keeps the ETag"
    );
    // A stale If-Match from before the change still passes.
    let r = put(&mut s, "a", "v2", Conditions::if_match(v1.etag), 3_000);
    assert_status(&r, 201, None);
}

#[test]
fn bug_head_ignores_if_match_answers_200_to_a_stale_etag() {
    let bugs = ModelBugs {
        head_ignores_if_match: true,
        ..ModelBugs::default()
    };
    let mut s = store_with(bugs);
    let v1 = put(&mut s, "a", "v1", Conditions::none(), 1_000)
        .item
        .unwrap();
    let v2 = put(&mut s, "a", "v2", Conditions::none(), 2_000)
        .item
        .unwrap();
    let r = head(&mut s, "a", Conditions::if_match(v1.etag.clone()), 3_000);
    assert_status(&r, 200, None);
    assert_eq!(r.item.unwrap().etag, v2.etag, "the current version's ETag");
    // Get Blob still applies If-Match; the other HEAD conditions still hold.
    let (r, _) = s.apply(
        &StoreRequest::Read {
            key: key("a"),
            conditions: Conditions::if_match(v1.etag),
        },
        3_000,
    );
    assert_status(&r, 412, Some("ConditionNotMet"));
    let r = head(&mut s, "a", Conditions::if_none_match(v2.etag), 3_000);
    assert_status(&r, 304, None);
}
