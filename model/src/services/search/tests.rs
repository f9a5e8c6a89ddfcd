//! Tests of the Azure AI Search resource service.

use super::*;

/// The bug set with only `name` on.
fn only(name: &str) -> ModelBugs {
    let mut bugs = ModelBugs::default();
    assert!(bugs.set(name), "{name}");
    bugs
}

fn set(entries: &[&str]) -> BTreeSet<String> {
    entries.iter().map(|e| e.to_string()).collect()
}

fn put(
    name: &str,
    kind: ResourceKind,
    entries: &[&str],
    if_match: Option<EtagMatch>,
    if_none_match: Option<EtagMatch>,
) -> SearchRequest {
    SearchRequest::Put {
        name: name.into(),
        kind,
        entries: set(entries),
        if_match,
        if_none_match,
    }
}

fn index(entries: &[&str], if_match: Option<EtagMatch>) -> SearchRequest {
    put("hotels", ResourceKind::Index, entries, if_match, None)
}

fn tag(e: &ETag) -> Option<EtagMatch> {
    Some(EtagMatch::Tags(vec![e.clone()]))
}

fn stale() -> Option<EtagMatch> {
    Some(EtagMatch::Tags(vec![ETag::quoted("0x8DFFFFFFFFFFFFFF")]))
}

/// Applies `req` at `now`; checks effect iff change and redo equivalence
/// (ignoring the in-flight window, which is not logged).
fn run(s: &mut SearchService, req: SearchRequest, now: Millis) -> SearchResponse {
    let before = s.clone();
    let (r, e) = s.apply(&req, now);
    match &e {
        Some(e) => {
            assert!((200..300).contains(&r.status), "{r:?}");
            let mut redone = before.clone();
            redone.redo(e);
            assert_eq!(redone.slots, s.slots);
        }
        None => assert_eq!(&before, s, "change without an effect: {r:?}"),
    }
    r
}

/// A service holding index `hotels` with field `id`, created at 0; the next
/// request should come at `UPDATE_MS` or later.
fn with_index(bugs: ModelBugs) -> (SearchService, ETag) {
    let mut s = SearchService::new(bugs);
    let r = run(&mut s, index(&["id"], None), 0);
    assert_eq!(r.status, 201);
    (s, r.resource.unwrap().etag)
}

const LATER: Millis = UPDATE_MS;

#[test]
fn get_is_200_with_the_definition_or_404() {
    let (mut s, e) = with_index(ModelBugs::default());
    let r = run(
        &mut s,
        SearchRequest::Get {
            name: "hotels".into(),
        },
        1,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.resource.unwrap().etag, e);
    let r = run(
        &mut s,
        SearchRequest::Get {
            name: "none".into(),
        },
        1,
    );
    assert_eq!(r.status, 404);
}

#[test]
fn put_without_a_header_is_last_writer_wins_with_a_new_etag_every_time() {
    let (mut s, e1) = with_index(ModelBugs::default());
    let r = run(&mut s, index(&["id", "a"], None), LATER);
    assert_eq!(r.status, 200);
    let e2 = r.resource.unwrap().etag;
    assert_ne!(e1, e2);
    let r = run(&mut s, index(&["id", "a", "b"], None), 2 * LATER);
    assert_ne!(r.resource.unwrap().etag, e2);
}

#[test]
fn put_with_if_match_equal_or_star_succeeds_and_mismatched_or_absent_is_412() {
    let (mut s, e1) = with_index(ModelBugs::default());
    assert_eq!(run(&mut s, index(&["id", "a"], stale()), LATER).status, 412);
    let r = run(&mut s, index(&["id", "a"], tag(&e1)), LATER);
    assert_eq!(r.status, 200);
    assert_eq!(
        run(&mut s, index(&["id", "a", "b"], tag(&e1)), 2 * LATER).status,
        412
    );
    let star = Some(EtagMatch::Any);
    assert_eq!(
        run(&mut s, index(&["id", "a", "b"], star.clone()), 2 * LATER).status,
        200
    );
    let absent = put("other", ResourceKind::Index, &["id"], star, None);
    assert_eq!(run(&mut s, absent, 3 * LATER).status, 412);
}

#[test]
fn ambig_5_put_with_if_none_match_star_on_an_existing_resource_is_412() {
    let (mut s, e1) = with_index(ModelBugs::default());
    let again = put(
        "hotels",
        ResourceKind::Index,
        &["id"],
        None,
        Some(EtagMatch::Any),
    );
    assert_eq!(run(&mut s, again, LATER).status, 412);
    let fresh = put(
        "syn",
        ResourceKind::SynonymMap,
        &["a,b"],
        None,
        Some(EtagMatch::Any),
    );
    assert_eq!(run(&mut s, fresh, LATER).status, 201);
    // If-None-Match with an ETag: equal → 412, other → proceed.
    let same = put("hotels", ResourceKind::Index, &["id"], None, tag(&e1));
    assert_eq!(run(&mut s, same, LATER).status, 412);
    let other = put("hotels", ResourceKind::Index, &["id"], None, stale());
    assert_eq!(run(&mut s, other, LATER).status, 200);
}

#[test]
fn ambig_4_an_index_update_that_drops_a_field_is_400_a_synonym_map_may_drop_rules() {
    let (mut s, _) = with_index(ModelBugs::default());
    assert_eq!(run(&mut s, index(&["id", "a"], None), LATER).status, 200);
    // The seed's client B: a definition read before "a" was added.
    assert_eq!(
        run(&mut s, index(&["id", "b"], None), 2 * LATER).status,
        400
    );
    let syn = |rules: &[&str]| put("syn", ResourceKind::SynonymMap, rules, None, None);
    assert_eq!(run(&mut s, syn(&["x"]), 0).status, 201);
    assert_eq!(run(&mut s, syn(&["y"]), LATER).status, 200);
    // A kind cannot change under a name.
    let as_map = put("hotels", ResourceKind::SynonymMap, &["id", "a"], None, None);
    assert_eq!(run(&mut s, as_map, 3 * LATER).status, 400);
}

#[test]
fn delete_is_204_404_or_412_and_a_recreate_gets_a_fresh_etag() {
    let (mut s, e1) = with_index(ModelBugs::default());
    let del = |m| SearchRequest::Delete {
        name: "hotels".into(),
        if_match: m,
    };
    assert_eq!(run(&mut s, del(stale()), LATER).status, 412);
    assert_eq!(run(&mut s, del(tag(&e1)), LATER).status, 204);
    assert_eq!(run(&mut s, del(None), 2 * LATER).status, 404);
    assert_eq!(run(&mut s, del(tag(&e1)), 2 * LATER).status, 412);
    let r = run(&mut s, index(&["x"], None), 3 * LATER);
    assert_eq!(r.status, 201);
    assert_eq!(r.resource.unwrap().version, 3);
}

#[test]
fn an_update_arriving_while_another_is_in_flight_gets_409_reads_do_not() {
    let (mut s, e1) = with_index(ModelBugs::default());
    let r = run(&mut s, index(&["id", "a"], tag(&e1)), 100);
    assert_eq!(r.status, 200);
    let busy = 100 + UPDATE_MS - 1;
    assert_eq!(
        run(&mut s, index(&["id", "a", "b"], None), busy).status,
        409
    );
    let del = SearchRequest::Delete {
        name: "hotels".into(),
        if_match: None,
    };
    assert_eq!(run(&mut s, del, busy).status, 409);
    let get = SearchRequest::Get {
        name: "hotels".into(),
    };
    assert_eq!(run(&mut s, get, busy).status, 200);
    // Another resource is not busy.
    assert_eq!(
        run(
            &mut s,
            put("syn", ResourceKind::SynonymMap, &[], None, None),
            busy
        )
        .status,
        201
    );
    // Once applied, the next update goes ahead.
    assert_eq!(
        run(&mut s, index(&["id", "a", "b"], None), 100 + UPDATE_MS).status,
        200
    );
}

#[test]
fn bug_not_serialized_lets_two_writers_with_the_same_etag_both_succeed() {
    let bugs = only("search_concurrent_update_not_serialized");
    let (mut s, e1) = with_index(bugs);
    assert_eq!(run(&mut s, index(&["id", "a"], tag(&e1)), 100).status, 200);
    let r = run(&mut s, index(&["id", "b"], tag(&e1)), 101);
    assert_eq!(r.status, 200);
    // Field "a" is lost: the second writer decided against the old definition.
    assert_eq!(s.resource("hotels").unwrap().entries, set(&["id", "b"]));
}

#[test]
fn bug_if_none_match_ignored_overwrites_an_existing_resource() {
    let bugs = only("search_if_none_match_ignored");
    let (mut s, _) = with_index(bugs);
    let again = put(
        "hotels",
        ResourceKind::Index,
        &["id", "z"],
        None,
        Some(EtagMatch::Any),
    );
    assert_eq!(run(&mut s, again, LATER).status, 200);
}
