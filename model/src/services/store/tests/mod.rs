//! Tests of the object store: basics, the properties E1, E2, E5 and E6 with
//! their seeded bugs, and redo-equivalence (proptest); Get Blob Properties and
//! Set Blob Metadata in `metadata`.

use super::*;
use proptest::prelude::*;

const C: &str = "c";

fn key(id: &str) -> ItemKey {
    ItemKey::new(C, "pk", id)
}

fn store_with(bugs: ModelBugs) -> Store {
    let mut s = Store::new(bugs);
    let (r, e) = s.apply(
        &StoreRequest::CreateContainer {
            container: C.into(),
        },
        0,
    );
    assert_eq!(r.status, 201);
    assert!(e.is_some());
    s
}

fn store() -> Store {
    store_with(ModelBugs::default())
}

fn put(s: &mut Store, id: &str, body: &str, c: Conditions, now: Millis) -> StoreResponse {
    let before = s.clone();
    let (r, e) = s.apply(
        &StoreRequest::Put {
            key: key(id),
            body: body.into(),
            conditions: c,
            metadata: Metadata::new(),
        },
        now,
    );
    check_effect(&before, s, &r, e.as_ref());
    r
}

fn delete(s: &mut Store, id: &str, c: Conditions, now: Millis) -> StoreResponse {
    let before = s.clone();
    let (r, e) = s.apply(
        &StoreRequest::Delete {
            key: key(id),
            conditions: c,
        },
        now,
    );
    check_effect(&before, s, &r, e.as_ref());
    r
}

fn read(s: &mut Store, id: &str, c: Conditions, now: Millis) -> StoreResponse {
    let before = s.clone();
    let (r, e) = s.apply(
        &StoreRequest::Read {
            key: key(id),
            conditions: c,
        },
        now,
    );
    assert!(e.is_none(), "reads never have an effect");
    assert_eq!(&before, s, "reads never change state");
    r
}

/// Effect is Some iff the state changed and the response is a success; redoing the
/// effect on the old state gives the new state.
fn check_effect(before: &Store, after: &Store, r: &StoreResponse, e: Option<&Effect>) {
    match e {
        Some(e) => {
            assert!(r.is_success(), "effect on a failure: {r:?}");
            assert_ne!(before, after);
            let mut redone = before.clone();
            redone.redo(e);
            assert_eq!(&redone, after);
        }
        None => {
            assert!(!r.is_success(), "success without effect: {r:?}");
            assert_eq!(before, after, "failed request changed state: {r:?}");
        }
    }
}

fn assert_status(r: &StoreResponse, status: u16, code: Option<&str>) {
    assert_eq!(r.status, status, "{r:?}");
    assert_eq!(r.error_code.as_deref(), code, "{r:?}");
}

fn tags(etags: &[&ETag]) -> EtagMatch {
    EtagMatch::Tags(etags.iter().map(|e| (*e).clone()).collect())
}

fn stale() -> ETag {
    ETag::quoted("0x8DFFFFFFFFFFFFFF")
}

/// A store with item "a" written at 10.5 s (Last-Modified second 10); returns its ETag.
fn with_item() -> (Store, ETag) {
    let mut s = store();
    let r = put(&mut s, "a", "v1", Conditions::none(), 10_500);
    assert_status(&r, 201, None);
    let etag = r.item.unwrap().etag;
    (s, etag)
}

const MULTI: Option<&str> = Some("MultipleConditionHeadersNotSupported");
const NOT_MET: Option<&str> = Some("ConditionNotMet");

mod conditions;
mod metadata;

// ---- basics ---------------------------------------------------------------------

#[test]
fn etag_equality_ignores_quotes() {
    assert_eq!(ETag("\"0x1\"".into()), ETag("0x1".into()));
    assert_eq!(ETag::quoted("0x1"), ETag::quoted("\"0x1\""));
    assert_eq!(ETag::quoted("0x1").0, "\"0x1\"");
    assert_ne!(ETag::quoted("0x1"), ETag::quoted("0x2"));
    assert_eq!(ETag::from_version(3).0, "\"0x8D00000000000003\"");
    assert_eq!(ETag::from_version(3).unquoted().len(), 18);
}

#[test]
fn container_create_and_missing_container() {
    let mut s = Store::new(ModelBugs::default());
    let k = key("a");
    for req in [
        StoreRequest::Read {
            key: k.clone(),
            conditions: Conditions::none(),
        },
        StoreRequest::Put {
            key: k.clone(),
            body: "x".into(),
            conditions: Conditions::none(),
            metadata: Metadata::new(),
        },
        StoreRequest::Delete {
            key: k.clone(),
            conditions: Conditions::none(),
        },
        StoreRequest::Put {
            key: k.clone(),
            body: "x".into(),
            conditions: Conditions::if_match_any(),
            metadata: Metadata::new(),
        },
    ] {
        let (r, e) = s.apply(&req, 1);
        assert_status(&r, 404, Some("ContainerNotFound"));
        assert!(e.is_none());
    }
    let create = StoreRequest::CreateContainer {
        container: C.into(),
    };
    let (r, e) = s.apply(&create, 1);
    assert_status(&r, 201, None);
    assert_eq!(
        e,
        Some(Effect::ContainerCreated {
            container: C.into()
        })
    );
    assert!(s.has_container(C));
    let (r, e) = s.apply(&create, 2);
    assert_status(&r, 409, Some("ContainerAlreadyExists"));
    assert!(e.is_none());
    assert_eq!(s.containers().collect::<Vec<_>>(), vec![C]);
}

#[test]
fn put_read_delete_versions_and_statuses() {
    let mut s = store();
    let r1 = put(&mut s, "a", "v1", Conditions::none(), 1_000);
    assert_status(&r1, 201, None);
    let v1 = r1.item.unwrap();
    assert_eq!((v1.version, v1.body.clone()), (1, None));
    assert_eq!(v1.etag, ETag::from_version(1));
    assert_eq!(v1.last_modified, 1_000);

    let r = read(&mut s, "a", Conditions::none(), 1_500);
    assert_status(&r, 200, None);
    assert_eq!(
        r.item,
        Some(ItemView {
            body: Some("v1".into()),
            etag: v1.etag.clone(),
            last_modified: 1_000,
            version: 1,
            metadata: Some(Metadata::new()),
        })
    );

    let r2 = put(&mut s, "a", "v2", Conditions::none(), 2_000);
    assert_status(&r2, 201, None);
    assert_eq!(r2.item.as_ref().unwrap().version, 2);

    assert_status(&delete(&mut s, "a", Conditions::none(), 3_000), 202, None);
    assert_eq!(s.item(&key("a")), None);
    assert_eq!(s.last_version(&key("a")), Some(3));
    assert_status(
        &read(&mut s, "a", Conditions::none(), 3_000),
        404,
        Some("BlobNotFound"),
    );
    assert_status(
        &delete(&mut s, "a", Conditions::none(), 3_000),
        404,
        Some("BlobNotFound"),
    );

    // Re-create continues the version (the tombstone remembers 3).
    let r4 = put(&mut s, "a", "v4", Conditions::none(), 4_000);
    assert_status(&r4, 201, None);
    assert_eq!(r4.item.unwrap().version, 4);
    assert_eq!(s.items().count(), 1);
}

#[test]
fn put_blob_answers_201_on_create_and_on_replace_and_the_seeded_bug_200() {
    let mut s = store();
    assert_status(
        &put(&mut s, "a", "v1", Conditions::none(), 1_000),
        201,
        None,
    );
    assert_status(
        &put(&mut s, "a", "v2", Conditions::none(), 2_000),
        201,
        None,
    );
    let bugs = ModelBugs {
        replace_answers_200: true,
        ..ModelBugs::default()
    };
    let mut s = store_with(bugs);
    assert_status(
        &put(&mut s, "a", "v1", Conditions::none(), 1_000),
        201,
        None,
    );
    assert_status(
        &put(&mut s, "a", "v2", Conditions::none(), 2_000),
        200,
        None,
    );
}

// ---- properties E1, E2, E5, E6 ---------------------------------------------------

/// Runs put / put / delete / re-create / put / delete / re-create on one key and
/// returns the ETags of every successful put.
fn etag_history(bugs: ModelBugs) -> Vec<ETag> {
    let mut s = store_with(bugs);
    let mut seen = Vec::new();
    let mut now = 1_000;
    for step in ["put", "put", "delete", "put", "put", "delete", "put"] {
        now += 1; // all within the same second: dates can't tell them apart
        if step == "put" {
            let r = put(&mut s, "a", &format!("b{now}"), Conditions::none(), now);
            assert!(r.is_success());
            seen.push(r.item.unwrap().etag);
        } else {
            assert_status(&delete(&mut s, "a", Conditions::none(), now), 202, None);
        }
        // reads leave the ETag alone
        let before = s.item(&key("a")).map(|i| i.etag.clone());
        let _ = read(&mut s, "a", Conditions::none(), now);
        assert_eq!(s.item(&key("a")).map(|i| i.etag.clone()), before);
    }
    seen
}

#[test]
fn e1_fresh_etags_across_delete_and_recreate() {
    let seen = etag_history(ModelBugs::default());
    let distinct: BTreeSet<_> = seen.iter().cloned().collect();
    assert_eq!(distinct.len(), seen.len(), "{seen:?}");
}

#[test]
fn bug_etag_reuse_breaks_e1() {
    let seen = etag_history(ModelBugs {
        etag_reuse: true,
        ..ModelBugs::default()
    });
    let distinct: BTreeSet<_> = seen.iter().cloned().collect();
    assert!(distinct.len() < seen.len(), "{seen:?}");
    // the re-created item is at version 1 again, with its first ETag
    assert_eq!(seen[2], seen[0]);
}

#[test]
fn bug_etag_reuse_forgets_the_tombstone() {
    let mut s = store_with(ModelBugs {
        etag_reuse: true,
        ..ModelBugs::default()
    });
    put(&mut s, "a", "x", Conditions::none(), 1);
    let before = s.clone();
    let (r, e) = s.apply(
        &StoreRequest::Delete {
            key: key("a"),
            conditions: Conditions::none(),
        },
        2,
    );
    assert_status(&r, 202, None);
    assert_eq!(
        e,
        Some(Effect::ItemDeleted {
            key: key("a"),
            version: 2,
            keep_tombstone: false
        })
    );
    assert_eq!(s.last_version(&key("a")), None);
    assert_ne!(s, before);
}

/// N writers holding the same ETag: exactly one succeeds, the rest get 412.
fn cas_race(bugs: ModelBugs) -> usize {
    let mut s2 = store_with(bugs);
    let r = put(&mut s2, "a", "v1", Conditions::none(), 10_500);
    let etag = r.item.unwrap().etag;
    let mut successes = 0;
    for w in 0..5 {
        let r = put(
            &mut s2,
            "a",
            &format!("w{w}"),
            Conditions::if_match(etag.clone()),
            20_000,
        );
        if r.is_success() {
            successes += 1;
        } else {
            assert_status(&r, 412, NOT_MET);
        }
    }
    successes
}

#[test]
fn e2_cas_at_most_one_writer_wins() {
    assert_eq!(cas_race(ModelBugs::default()), 1);
}

#[test]
fn bug_skip_if_match_breaks_e2() {
    let bugs = ModelBugs {
        skip_if_match: true,
        ..ModelBugs::default()
    };
    assert_eq!(cas_race(bugs), 5);
    // delete with a stale ETag succeeds too
    let mut s = store_with(bugs);
    put(&mut s, "a", "x", Conditions::none(), 1);
    assert_status(
        &delete(&mut s, "a", Conditions::if_match(stale()), 2),
        202,
        None,
    );
    // an absent item is still absent: If-Match fails with 412, nothing is created
    assert_status(
        &put(&mut s, "a", "x", Conditions::if_match(stale()), 3),
        412,
        NOT_MET,
    );
    assert_status(
        &delete(&mut s, "a", Conditions::if_match(stale()), 3),
        412,
        NOT_MET,
    );
    assert_eq!(s.item(&key("a")), None);
    // the other conditions still work
    put(&mut s, "a", "x", Conditions::none(), 4);
    assert_status(
        &put(&mut s, "a", "x", Conditions::if_none_match_any(), 5),
        409,
        Some("BlobAlreadyExists"),
    );
}

#[test]
fn e5_create_once() {
    let mut s = store();
    let results: Vec<u16> = (0..5)
        .map(|w| {
            put(
                &mut s,
                "a",
                &format!("w{w}"),
                Conditions::if_none_match_any(),
                1_000,
            )
            .status
        })
        .collect();
    assert_eq!(results, vec![201, 409, 409, 409, 409]);
    assert_eq!(s.item(&key("a")).unwrap().body, "w0");
}

#[test]
fn e6_read_conditions() {
    let (mut s, etag) = with_item();
    let r = put(&mut s, "a", "v2", Conditions::none(), 10_700);
    let current = r.item.unwrap().etag;
    // If-None-Match: current → 304, no body
    let r = read(
        &mut s,
        "a",
        Conditions::if_none_match(current.clone()),
        11_000,
    );
    assert_status(&r, 304, None);
    assert_eq!(r.item.unwrap().body, None);
    // stale → 200 with the current ETag
    let r = read(&mut s, "a", Conditions::if_none_match(etag.clone()), 11_000);
    assert_status(&r, 200, None);
    assert_eq!(r.item.unwrap().etag, current);
    // If-Match stale → 412
    assert_status(
        &read(&mut s, "a", Conditions::if_match(etag), 11_000),
        412,
        NOT_MET,
    );
}

#[test]
fn same_second_writes_keep_dates_equal_but_etags_distinct() {
    let mut s = store();
    let e1 = put(&mut s, "a", "1", Conditions::none(), 5_100)
        .item
        .unwrap();
    let e2 = put(&mut s, "a", "2", Conditions::none(), 5_900)
        .item
        .unwrap();
    assert_ne!(e1.etag, e2.etag);
    // a date check cannot see the second write
    assert_status(
        &read(&mut s, "a", Conditions::if_modified_since(5_100), 6_000),
        304,
        None,
    );
    // but the ETag can
    assert_status(
        &read(&mut s, "a", Conditions::if_none_match(e1.etag), 6_000),
        200,
        None,
    );
}

#[test]
fn redo_is_idempotent() {
    let mut s = store();
    let (_, e1) = s.apply(
        &StoreRequest::Put {
            key: key("a"),
            body: "x".into(),
            conditions: Conditions::none(),
            metadata: Metadata::new(),
        },
        1,
    );
    let (_, e2) = s.apply(
        &StoreRequest::Delete {
            key: key("a"),
            conditions: Conditions::none(),
        },
        2,
    );
    let mut t = store();
    for e in [e1.unwrap(), e2.unwrap()] {
        t.redo(&e);
        let once = t.clone();
        t.redo(&e);
        assert_eq!(t, once);
    }
    assert_eq!(s, t);
}

#[test]
fn wire_roundtrip_with_bincode() {
    let (mut s, etag) = with_item();
    let req = StoreRequest::Put {
        key: key("a"),
        body: "v2".into(),
        conditions: Conditions {
            if_match: Some(tags(&[&etag])),
            if_unmodified_since: Some(vec![3]),
            ..Conditions::default()
        },
        metadata: Metadata::from([("k".to_string(), "v".to_string())]),
    };
    let (resp, effect) = s.apply(&req, 20_000);
    let req2: StoreRequest = bincode::deserialize(&bincode::serialize(&req).unwrap()).unwrap();
    let resp2: StoreResponse = bincode::deserialize(&bincode::serialize(&resp).unwrap()).unwrap();
    let eff2: Option<Effect> = bincode::deserialize(&bincode::serialize(&effect).unwrap()).unwrap();
    let s2: Store = bincode::deserialize(&bincode::serialize(&s).unwrap()).unwrap();
    assert_eq!((req2, resp2, eff2, s2), (req, resp, effect, s));
}

// ---- redo-equivalence (proptest) --------------------------------------------------

fn arb_etag() -> impl Strategy<Value = ETag> {
    (1u64..6).prop_map(ETag::from_version)
}

fn arb_match() -> impl Strategy<Value = Option<EtagMatch>> {
    prop_oneof![
        4 => Just(None),
        1 => Just(Some(EtagMatch::Any)),
        3 => prop::collection::vec(arb_etag(), 0..3).prop_map(|v| Some(EtagMatch::Tags(v))),
    ]
}

/// Mostly absent or one date; sometimes none or several (400, SPEC §1.1.4).
fn arb_date() -> impl Strategy<Value = Option<Vec<Millis>>> {
    prop_oneof![
        12 => Just(None),
        4 => (0u64..6_000).prop_map(|t| Some(vec![t])),
        1 => prop::collection::vec(0u64..6_000, 0..3).prop_map(Some),
    ]
}

fn arb_conditions() -> impl Strategy<Value = Conditions> {
    (arb_match(), arb_match(), arb_date(), arb_date()).prop_map(|(im, inm, ims, ius)| Conditions {
        if_match: im,
        if_none_match: inm,
        if_modified_since: ims,
        if_unmodified_since: ius,
        lease_id: None,
    })
}

fn arb_request() -> impl Strategy<Value = StoreRequest> {
    let key = (
        prop::sample::select(vec!["c", "d"]),
        prop::sample::select(vec!["a", "b"]),
    )
        .prop_map(|(c, id)| ItemKey::new(c, "pk", id));
    prop_oneof![
        1 => prop::sample::select(vec!["c", "d"])
            .prop_map(|c| StoreRequest::CreateContainer { container: c.into() }),
        3 => (key.clone(), arb_conditions())
            .prop_map(|(key, conditions)| StoreRequest::Read { key, conditions }),
        5 => (key.clone(), "[xyz]{0,3}", arb_conditions(), arb_metadata())
            .prop_map(|(key, body, conditions, metadata)| StoreRequest::Put { key, body, conditions, metadata }),
        3 => (key.clone(), arb_conditions())
            .prop_map(|(key, conditions)| StoreRequest::Delete { key, conditions }),
        2 => (key.clone(), arb_conditions())
            .prop_map(|(key, conditions)| StoreRequest::GetProperties { key, conditions }),
        2 => (key, arb_metadata(), arb_conditions()).prop_map(|(key, metadata, conditions)| {
            StoreRequest::SetMetadata { key, metadata, conditions }
        }),
    ]
}

/// None, or one or two pairs.
fn arb_metadata() -> impl Strategy<Value = Metadata> {
    prop::collection::btree_map("[mn]", "[uv]{0,2}", 0..3)
}

fn arb_bugs() -> impl Strategy<Value = ModelBugs> {
    (any::<bool>(), any::<bool>()).prop_map(|(skip_if_match, etag_reuse)| ModelBugs {
        skip_if_match,
        etag_reuse,
        ..ModelBugs::default()
    })
}

proptest! {
    #[test]
    fn redo_equivalence(
        bugs in arb_bugs(),
        ops in prop::collection::vec((arb_request(), 0u64..1_500), 0..60),
    ) {
        let mut live = Store::new(bugs);
        let mut replayed = Store::new(bugs);
        let mut twice = Store::new(bugs);
        let mut now = 0;
        for (req, dt) in &ops {
            now += dt;
            let before = live.clone();
            let (resp, effect) = live.apply(req, now);
            // Effect is Some iff state changed, and only on success.
            prop_assert_eq!(effect.is_some(), before != live);
            prop_assert_eq!(effect.is_some(), resp.is_success() && req.is_write());
            if let Some(e) = effect {
                replayed.redo(&e);
                twice.redo(&e);
                twice.redo(&e);
            }
            prop_assert_eq!(&replayed, &live);
        }
        prop_assert_eq!(&twice, &live);
    }

    #[test]
    fn e1_versions_and_etags_never_repeat_without_the_bug(
        ops in prop::collection::vec((arb_request(), 0u64..1_500), 0..60),
    ) {
        let mut s = Store::new(ModelBugs { skip_if_match: true, ..ModelBugs::default() });
        let mut seen: BTreeMap<ItemKey, BTreeSet<ETag>> = BTreeMap::new();
        let mut last: BTreeMap<ItemKey, u64> = BTreeMap::new();
        let mut now = 0;
        for (req, dt) in &ops {
            now += dt;
            let (_, effect) = s.apply(req, now);
            if let Some((key, item)) = effect.as_ref().and_then(Effect::item_written) {
                prop_assert!(seen.entry(key.clone()).or_default().insert(item.etag.clone()));
                let prev = last.insert(key.clone(), item.version).unwrap_or(0);
                prop_assert_eq!(item.version, prev + 1);
            }
            if let Some(Effect::ItemDeleted { key, version, keep_tombstone }) = effect {
                prop_assert!(keep_tombstone);
                let prev = last.insert(key, version).unwrap_or(0);
                prop_assert_eq!(version, prev + 1);
            }
        }
    }
}
