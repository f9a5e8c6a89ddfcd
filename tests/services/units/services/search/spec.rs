//! Tests of `overcast_scenarios::services::search::spec`.
use overcast_scenarios::services::search::spec::*;
use overcast_sim::lin::Spec;
use std::collections::BTreeSet;

fn set(e: &[&str]) -> BTreeSet<String> {
    e.iter().map(|x| x.to_string()).collect()
}

fn put(e: &[&str], if_match: Option<Cond>, if_none_match: Option<Cond>) -> SearchOp {
    SearchOp::Put {
        kind: "index".into(),
        entries: set(e),
        if_match,
        if_none_match,
    }
}

#[test]
fn the_statuses_of_section_1_2_are_the_only_legal_outputs() {
    use SearchResult as R;
    let absent: SearchState = (None, 0);
    let v1: SearchState = (Some(("index".into(), set(&["id"]))), 1);
    let legal =
        |s: &SearchState, op: SearchOp, out: R| SearchSpec.step(s, &op, Some(&out)).is_legal();
    assert!(legal(
        &absent,
        put(&["id"], None, Some(Cond::Any)),
        R::Ok(Some(1))
    ));
    assert!(legal(
        &v1,
        put(&["id"], None, Some(Cond::Any)),
        R::PreconditionFailed
    ));
    assert!(!legal(
        &v1,
        put(&["id"], None, Some(Cond::Any)),
        R::Ok(Some(2))
    ));
    assert!(legal(
        &v1,
        put(&["id", "a"], Some(Cond::Version(1)), None),
        R::Ok(Some(2))
    ));
    assert!(legal(
        &v1,
        put(&["id", "a"], Some(Cond::Version(7)), None),
        R::PreconditionFailed
    ));
    assert!(legal(
        &absent,
        put(&["id"], Some(Cond::Any), None),
        R::PreconditionFailed
    ));
    assert!(legal(&v1, put(&["b"], None, None), R::BadRequest));
    assert!(legal(&v1, put(&["id", "b"], None, None), R::Ok(Some(2))));
    assert!(legal(&v1, put(&["id", "b"], None, None), R::Busy));
    assert!(legal(
        &v1,
        SearchOp::Delete {
            if_match: Some(Cond::Version(1))
        },
        R::Ok(None)
    ));
    assert!(legal(
        &v1,
        SearchOp::Delete {
            if_match: Some(Cond::Version(2))
        },
        R::PreconditionFailed
    ));
    assert!(legal(
        &absent,
        SearchOp::Delete { if_match: None },
        R::NotFound
    ));
    assert!(legal(&v1, SearchOp::Get, R::Found(set(&["id"]), 1)));
    assert!(!legal(&v1, SearchOp::Get, R::Busy));
}
