//! Tests of the Cosmos DB item service.

use super::*;

/// The bug set with only `name` on.
fn only(name: &str) -> ModelBugs {
    let mut bugs = ModelBugs::default();
    assert!(bugs.set(name), "{name}");
    bugs
}

const PK: &str = "pk";

fn key(id: &str) -> ItemKey {
    ItemKey::new("c", PK, id)
}

fn one(op: ItemOp) -> CosmosRequest {
    CosmosRequest::Item {
        container: "c".into(),
        partition_key: PK.into(),
        op,
    }
}

fn create(id: &str, body: &str) -> ItemOp {
    ItemOp::Create {
        id: id.into(),
        body: body.into(),
    }
}

fn read(id: &str, if_none_match: Option<ETag>) -> ItemOp {
    ItemOp::Read {
        id: id.into(),
        if_none_match,
    }
}

fn replace(id: &str, body: &str, if_match: Option<ETag>) -> ItemOp {
    ItemOp::Replace {
        id: id.into(),
        body: body.into(),
        if_match,
    }
}

fn upsert(id: &str, body: &str, if_match: Option<ETag>) -> ItemOp {
    ItemOp::Upsert {
        id: id.into(),
        body: body.into(),
        if_match,
    }
}

fn delete(id: &str, if_match: Option<ETag>) -> ItemOp {
    ItemOp::Delete {
        id: id.into(),
        if_match,
    }
}

/// Applies `req`, checks that an effect comes iff state changed and that
/// redoing it on the old state gives the new one; returns the response.
fn run(s: &mut CosmosItems, req: CosmosRequest, now: Millis) -> CosmosResponse {
    let before = s.clone();
    let (r, e) = s.apply(&req, now);
    match &e {
        Some(e) => {
            assert_ne!(&before, s, "effect without a change: {r:?}");
            let mut redone = before.clone();
            redone.redo(e);
            assert_eq!(&redone, s);
        }
        None => assert_eq!(&before, s, "change without an effect: {r:?}"),
    }
    r
}

fn etag_of(r: &CosmosResponse) -> ETag {
    r.item().expect("an item").etag.clone()
}

fn with_a(bugs: ModelBugs) -> (CosmosItems, ETag) {
    let mut s = CosmosItems::new(bugs);
    let r = run(&mut s, one(create("a", "v1")), 1_500);
    assert_eq!(r.status, 201);
    (s, etag_of(&r))
}

fn stale() -> Option<ETag> {
    Some(ETag::quoted("0x8DFFFFFFFFFFFFFF"))
}

#[test]
fn create_is_201_then_409_for_the_same_id_and_partition_key() {
    let (mut s, e1) = with_a(ModelBugs::default());
    assert_eq!(e1, ETag::from_version(1));
    assert_eq!(s.item(&key("a")).map(|i| i.ts), Some(1));
    assert_eq!(run(&mut s, one(create("a", "v2")), 2_000).status, 409);
    assert_eq!(s.item(&key("a")).map(|i| i.body.as_str()), Some("v1"));
    // The same id under another partition key is another item.
    let other = CosmosRequest::Item {
        container: "c".into(),
        partition_key: "pk2".into(),
        op: create("a", "x"),
    };
    assert_eq!(run(&mut s, other, 2_000).status, 201);
}

#[test]
fn replace_with_if_match_equal_is_200_with_a_fresh_etag_and_ts_from_the_server_clock() {
    let (mut s, e1) = with_a(ModelBugs::default());
    let r = run(&mut s, one(replace("a", "v2", Some(e1.clone()))), 7_900);
    assert_eq!(r.status, 200);
    let view = r.item().unwrap();
    assert_ne!(view.etag, e1);
    assert_eq!((view.ts, view.version), (7, 2));
    assert_eq!(view.body.as_deref(), Some("v2"));
    // Without if-match: last writer wins, again a fresh `_etag`.
    let r = run(&mut s, one(replace("a", "v3", None)), 9_000);
    assert_eq!((r.status, r.item().unwrap().version), (200, 3));
}

#[test]
fn replace_and_delete_with_a_stale_if_match_are_412_and_change_nothing() {
    let (mut s, e1) = with_a(ModelBugs::default());
    assert_eq!(
        run(&mut s, one(replace("a", "x", stale())), 2_000).status,
        412
    );
    assert_eq!(run(&mut s, one(delete("a", stale())), 2_000).status, 412);
    assert_eq!(s.item(&key("a")).unwrap().etag, e1);
}

#[test]
fn replace_and_delete_of_a_missing_item_are_404_also_with_if_match() {
    let mut s = CosmosItems::new(ModelBugs::default());
    for op in [
        replace("z", "x", None),
        replace("z", "x", stale()),
        delete("z", None),
        delete("z", stale()),
        read("z", None),
    ] {
        assert_eq!(run(&mut s, one(op.clone()), 1).status, 404, "{op:?}");
    }
}

#[test]
fn upsert_replaces_when_present_with_if_match_applied() {
    let (mut s, e1) = with_a(ModelBugs::default());
    assert_eq!(
        run(&mut s, one(upsert("a", "x", stale())), 2_000).status,
        412
    );
    let r = run(&mut s, one(upsert("a", "v2", Some(e1))), 2_000);
    assert_eq!((r.status, r.item().unwrap().version), (200, 2));
    let r = run(&mut s, one(upsert("a", "v3", None)), 2_000);
    assert_eq!((r.status, r.item().unwrap().version), (200, 3));
}

#[test]
fn ambig_6_upsert_with_if_match_on_a_missing_item_creates_it() {
    let mut s = CosmosItems::new(ModelBugs::default());
    let r = run(&mut s, one(upsert("a", "v1", stale())), 1_000);
    assert_eq!(r.status, 201);
    assert_eq!(s.item(&key("a")).unwrap().body, "v1");
}

#[test]
fn create_ignores_if_match_and_writes_ignore_if_none_match() {
    // Create carries no if-match in the model's request (SPEC: ignored), and
    // reads are the only operation with if-none-match: nothing to ignore.
    let mut s = CosmosItems::new(ModelBugs::default());
    assert_eq!(run(&mut s, one(create("a", "v1")), 1).status, 201);
}

#[test]
fn delete_is_204_and_a_recreate_gets_a_fresh_etag() {
    let (mut s, e1) = with_a(ModelBugs::default());
    assert_eq!(
        run(&mut s, one(delete("a", Some(e1.clone()))), 2_000).status,
        204
    );
    assert_eq!(run(&mut s, one(read("a", None)), 2_000).status, 404);
    let r = run(&mut s, one(create("a", "v3")), 3_000);
    assert_eq!(r.status, 201);
    assert_ne!(etag_of(&r), e1);
    assert_eq!(r.item().unwrap().version, 3);
}

#[test]
fn read_with_if_none_match_is_304_when_unchanged_and_200_otherwise() {
    let (mut s, e1) = with_a(ModelBugs::default());
    let r = run(&mut s, one(read("a", Some(e1.clone()))), 2_000);
    assert_eq!(r.status, 304);
    assert_eq!(r.item().unwrap().body, None);
    let r = run(&mut s, one(read("a", stale())), 2_000);
    assert_eq!(r.status, 200);
    assert_eq!(r.item().unwrap().body.as_deref(), Some("v1"));
    assert_eq!(etag_of(&r), e1);
}

fn batch(ops: Vec<ItemOp>) -> CosmosRequest {
    CosmosRequest::Batch {
        container: "c".into(),
        partition_key: PK.into(),
        ops,
    }
}

#[test]
fn a_batch_commits_all_its_operations_as_one_effect() {
    let (mut s, e1) = with_a(ModelBugs::default());
    let (r, e) = s.apply(
        &batch(vec![
            replace("a", "a2", Some(e1)),
            create("b", "b1"),
            upsert("b", "b2", None),
            read("b", None),
        ]),
        5_000,
    );
    assert_eq!(r.status, 200);
    let statuses: Vec<u16> = r.results.iter().map(|o| o.status).collect();
    assert_eq!(statuses, vec![200, 201, 200, 200]);
    assert_eq!(
        r.results[3].item.as_ref().unwrap().body.as_deref(),
        Some("b2")
    );
    match e {
        Some(CosmosEffect::Batch(changes)) => assert_eq!(changes.len(), 3),
        other => panic!("one batch effect expected, got {other:?}"),
    }
    assert_eq!(s.item(&key("b")).unwrap().version, 2);
}

#[test]
fn one_conflict_rolls_back_the_whole_batch() {
    let (mut s, _) = with_a(ModelBugs::default());
    let before = s.clone();
    let r = run(
        &mut s,
        batch(vec![
            create("b", "b1"),
            replace("a", "a2", stale()),
            create("c", "c1"),
        ]),
        5_000,
    );
    assert_eq!(r.status, 412);
    let statuses: Vec<u16> = r.results.iter().map(|o| o.status).collect();
    assert_eq!(statuses, vec![424, 412, 424]);
    assert_eq!(s, before);
    // A create of an existing id fails the batch with 409.
    let r = run(
        &mut s,
        batch(vec![create("b", "b1"), create("a", "x")]),
        5_000,
    );
    assert_eq!(r.status, 409);
    assert_eq!(s.item(&key("b")), None);
}

#[test]
fn bug_batch_partial_commit_keeps_the_operations_before_the_conflict() {
    let bugs = only("batch_partial_commit");
    let (mut s, _) = with_a(bugs);
    let r = run(
        &mut s,
        batch(vec![create("b", "b1"), replace("a", "x", stale())]),
        5_000,
    );
    assert_eq!(r.status, 412);
    assert!(s.item(&key("b")).is_some());
}

#[test]
fn bug_upsert_if_match_absent_412_refuses_the_create() {
    let bugs = only("upsert_if_match_absent_412");
    let mut s = CosmosItems::new(bugs);
    assert_eq!(run(&mut s, one(upsert("a", "v1", stale())), 1).status, 412);
    assert_eq!(run(&mut s, one(upsert("a", "v1", None)), 1).status, 201);
}

#[test]
fn bug_replace_missing_412_answers_412_instead_of_404() {
    let bugs = only("replace_missing_412");
    let mut s = CosmosItems::new(bugs);
    assert_eq!(run(&mut s, one(replace("a", "v1", stale())), 1).status, 412);
    assert_eq!(run(&mut s, one(replace("a", "v1", None)), 1).status, 404);
}

#[test]
fn bug_cosmos_upsert_keeps_etag_reuses_the_old_etag() {
    let bugs = only("cosmos_upsert_keeps_etag");
    let (mut s, e1) = with_a(bugs);
    let r = run(&mut s, one(upsert("a", "v2", None)), 2_000);
    assert_eq!(etag_of(&r), e1);
    let r = run(&mut s, one(replace("a", "v3", None)), 2_000);
    assert_ne!(etag_of(&r), e1);
}
