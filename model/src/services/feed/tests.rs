//! Tests of the change feed.

use super::*;
use crate::partition::{Partition, Partitions, Request, Response};
use crate::services::cosmos::{CosmosRequest, ItemOp};

fn write(p: &mut Partition, pk: &str, id: &str, body: &str, now: u64) -> u64 {
    let req = Request::Cosmos(CosmosRequest::Item {
        container: "items".into(),
        partition_key: pk.into(),
        op: ItemOp::Upsert {
            id: id.into(),
            body: body.into(),
            if_match: None,
        },
    });
    let (r, e) = p.apply(&req, now);
    assert!(r.status() < 300 && e.is_some());
    p.lsn()
}

fn read(p: &mut Partition, scope: FeedScope, from: StartFrom, page: usize) -> FeedResponse {
    let req = Request::Feed(FeedRequest::Read {
        container: "items".into(),
        scope,
        from,
        page_size: page,
    });
    let (r, e) = p.apply(&req, 0);
    assert!(e.is_none(), "a read changes nothing");
    r.into_feed().expect("a feed response")
}

fn pk_in(range: u32) -> String {
    (0..)
        .map(|i| format!("k{i}"))
        .find(|k| epk(k) / (KEY_SPACE / INITIAL_RANGES) == range)
        .expect("some key")
}

fn ids(r: &FeedResponse) -> Vec<(String, u64, u64)> {
    r.items
        .iter()
        .map(|i| (i.id.clone(), i.version, i.lsn))
        .collect()
}

fn partition() -> Partition {
    Partition::new(ModelBugs::default(), &[])
}

#[test]
fn an_item_appears_once_at_its_latest_version_and_intermediate_versions_are_skipped() {
    let mut p = partition();
    let k = pk_in(0);
    write(&mut p, &k, "a", "v1", 1_000);
    write(&mut p, &k, "b", "v1", 1_000);
    write(&mut p, &k, "a", "v2", 2_000);
    let r = read(&mut p, FeedScope::Range(0), StartFrom::Beginning, 0);
    assert_eq!(r.status, 200);
    assert_eq!(
        ids(&r),
        vec![("b".into(), 1, 2), ("a".into(), 2, 3)],
        "per LSN order; a's first version is gone"
    );
    assert_eq!(r.continuation, 3);
}

#[test]
fn nothing_new_after_a_continuation_is_a_304_and_something_new_a_200() {
    let mut p = partition();
    let k = pk_in(1);
    write(&mut p, &k, "a", "v1", 1_000);
    let first = read(&mut p, FeedScope::Range(1), StartFrom::Beginning, 0);
    let c = first.continuation;
    let again = read(&mut p, FeedScope::Range(1), StartFrom::Continuation(c), 0);
    assert_eq!((again.status, again.continuation), (304, c));
    write(&mut p, &k, "a", "v2", 2_000);
    let next = read(&mut p, FeedScope::Range(1), StartFrom::Continuation(c), 0);
    assert_eq!((next.status, ids(&next)), (200, vec![("a".into(), 2, 2)]));
}

#[test]
fn deletes_are_not_captured_and_a_ttl_purge_removes_soft_deleted_items() {
    let mut p = partition();
    let k = pk_in(2);
    write(&mut p, &k, "a", "v1", 1_000);
    write(&mut p, &k, "b", "{\"deleted\":true,\"ttl\":true}", 1_000);
    let del = Request::Cosmos(CosmosRequest::Item {
        container: "items".into(),
        partition_key: k.clone(),
        op: ItemOp::Delete {
            id: "a".into(),
            if_match: None,
        },
    });
    p.apply(&del, 1_500);
    let r = read(&mut p, FeedScope::Range(2), StartFrom::Beginning, 0);
    assert_eq!(ids(&r), vec![("b".into(), 1, 2)], "a's delete is invisible");
    let purge = Request::Feed(FeedRequest::PurgeExpired {
        container: "items".into(),
        ttl_s: 10,
    });
    let (r, e) = p.apply(&purge, 5_000);
    assert_eq!((r.status(), e), (200, None), "not yet expired");
    let (r, e) = p.apply(&purge, 11_000);
    assert_eq!(r.into_feed().map(|r| r.purged), Some(1));
    assert!(e.is_some(), "a purge is a logged delete");
    let r = read(&mut p, FeedScope::Range(2), StartFrom::Beginning, 0);
    assert_eq!(r.status, 304);
}

#[test]
fn a_batch_shares_one_lsn_and_is_never_cut_by_the_page_size() {
    let mut p = partition();
    let k = pk_in(3);
    write(&mut p, &k, "x", "v1", 1_000);
    let ops = ["a", "b", "c"]
        .iter()
        .map(|id| ItemOp::Create {
            id: (*id).into(),
            body: "b".into(),
        })
        .collect();
    let batch = Request::Cosmos(CosmosRequest::Batch {
        container: "items".into(),
        partition_key: k.clone(),
        ops,
    });
    p.apply(&batch, 1_000);
    write(&mut p, &k, "y", "v1", 1_000);
    let r = read(&mut p, FeedScope::Range(3), StartFrom::Beginning, 2);
    let lsns: Vec<u64> = r.items.iter().map(|i| i.lsn).collect();
    assert_eq!(lsns, vec![1, 2, 2, 2], "the hint 2 would cut the batch");
    assert_eq!(r.continuation, 2);
    let rest = read(&mut p, FeedScope::Range(3), StartFrom::Continuation(2), 2);
    assert_eq!(ids(&rest), vec![("y".into(), 1, 3)]);
}

#[test]
fn a_partition_key_scope_sees_only_that_key() {
    let mut p = partition();
    write(&mut p, "p1", "a", "v1", 1_000);
    write(&mut p, "p2", "a", "v1", 1_000);
    let r = read(
        &mut p,
        FeedScope::PartitionKey("p2".into()),
        StartFrom::Beginning,
        0,
    );
    assert_eq!(r.items.len(), 1);
    assert_eq!(r.items[0].partition_key, "p2");
}

#[test]
fn start_now_and_start_time_skip_what_came_before() {
    let mut p = partition();
    let k = pk_in(0);
    write(&mut p, &k, "a", "v1", 1_000);
    write(&mut p, &k, "b", "v1", 3_000);
    let now = read(&mut p, FeedScope::Range(0), StartFrom::Now, 0);
    assert_eq!((now.status, now.start_lsn), (304, Some(2)));
    // Time 2.5 s: whole seconds, exclusive — a (1 s) is before, b (3 s) after.
    let t = read(&mut p, FeedScope::Range(0), StartFrom::Time(2_500), 0);
    assert_eq!((ids(&t), t.start_lsn), (vec![("b".into(), 1, 2)], Some(1)));
}

#[test]
fn a_split_range_answers_410_1002_naming_children_that_tile_it_and_resume_from_its_token() {
    let mut p = partition();
    let keys: Vec<String> = (0..40)
        .map(|i| format!("k{i}"))
        .filter(|k| epk(k) < 64)
        .collect();
    for k in &keys {
        write(&mut p, k, "a", "v1", 1_000);
    }
    let before = read(&mut p, FeedScope::Range(0), StartFrom::Beginning, 0);
    let split = Request::Feed(FeedRequest::Split {
        container: "items".into(),
        range: 0,
    });
    let (r, e) = p.apply(&split, 2_000);
    assert_eq!(r.status(), 200);
    assert!(e.is_some(), "a split is logged");
    let gone = read(
        &mut p,
        FeedScope::Range(0),
        StartFrom::Continuation(before.continuation),
        0,
    );
    assert_eq!((gone.status, gone.sub_status), (410, 1002));
    assert_eq!(
        gone.ranges,
        vec![
            FeedRange {
                id: 4,
                min: 0,
                max: 32
            },
            FeedRange {
                id: 5,
                min: 32,
                max: 64
            }
        ]
    );
    // Every key of the parent is in exactly one child, from the beginning.
    let mut seen = 0;
    for child in &gone.ranges {
        seen += read(&mut p, FeedScope::Range(child.id), StartFrom::Beginning, 0)
            .items
            .len();
        let r = read(
            &mut p,
            FeedScope::Range(child.id),
            StartFrom::Continuation(before.continuation),
            0,
        );
        assert_eq!(r.status, 304, "nothing new after the parent's token");
    }
    assert_eq!(seen, keys.len());
}

#[test]
fn splits_and_the_feed_survive_a_redo_of_the_log() {
    let mut live = Partitions::new(ModelBugs::default(), vec![]);
    let mut effects = Vec::new();
    let steps = vec![
        Request::Cosmos(CosmosRequest::Item {
            container: "items".into(),
            partition_key: "p".into(),
            op: ItemOp::Create {
                id: "a".into(),
                body: "b".into(),
            },
        }),
        Request::Feed(FeedRequest::Split {
            container: "items".into(),
            range: 2,
        }),
    ];
    for s in &steps {
        let (_, e) = live.get_mut(0).apply(s, 1_000);
        effects.extend(e);
    }
    let mut recovered = partition();
    for e in &effects {
        recovered.redo(e);
    }
    assert_eq!(Some(&recovered), live.get(0));
    assert_eq!(recovered.feed().ranges("items").len(), 5);
    let r = recovered.apply(
        &Request::Feed(FeedRequest::Ranges {
            container: "items".into(),
        }),
        0,
    );
    assert!(matches!(r.0, Response::Feed(ref f) if f.ranges.len() == 5));
}

fn with_bug(name: &str) -> Partition {
    let mut bugs = ModelBugs::default();
    assert!(bugs.set(name));
    Partition::new(bugs, &[])
}

fn delete(p: &mut Partition, pk: &str, id: &str, now: u64) {
    let req = Request::Cosmos(CosmosRequest::Item {
        container: "items".into(),
        partition_key: pk.into(),
        op: ItemOp::Delete {
            id: id.into(),
            if_match: None,
        },
    });
    assert!(p.apply(&req, now).1.is_some());
}

#[test]
fn bug_feed_shows_deletes_hands_out_a_tombstone_no_write_committed() {
    let k = pk_in(0);
    for (bug, shown) in [
        (None, vec![]),
        (Some("feed_shows_deletes"), vec![TOMBSTONE]),
    ] {
        let mut p = bug.map_or_else(partition, with_bug);
        write(&mut p, &k, "a", "v1", 1_000);
        delete(&mut p, &k, "a", 2_000);
        let r = read(&mut p, FeedScope::Range(0), StartFrom::Beginning, 0);
        let bodies: Vec<&str> = r.items.iter().map(|i| i.body.as_str()).collect();
        assert_eq!(bodies, shown, "bug {bug:?}");
    }
}

#[test]
fn bug_page_sorted_by_id_hands_one_keys_changes_out_of_lsn_order() {
    let k = pk_in(1);
    for (bug, order) in [(None, ["b", "a"]), (Some("page_sorted_by_id"), ["a", "b"])] {
        let mut p = bug.map_or_else(partition, with_bug);
        write(&mut p, &k, "b", "v1", 1_000);
        write(&mut p, &k, "a", "v1", 1_000);
        let r = read(&mut p, FeedScope::Range(1), StartFrom::Beginning, 0);
        let got: Vec<&str> = r.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(got, order, "bug {bug:?}");
        assert_eq!(r.continuation, 2, "the page is still cut by LSN");
    }
}

#[test]
fn bug_lagging_replica_304_answers_304_while_a_committed_change_is_unseen() {
    let k = pk_in(2);
    let other = pk_in(3);
    let mut p = with_bug("lagging_replica_304");
    write(&mut p, &k, "a", "v1", 1_000);
    let r = read(&mut p, FeedScope::Range(2), StartFrom::Continuation(0), 0);
    assert_eq!(
        (r.status, r.continuation),
        (304, 0),
        "hidden, and not skipped"
    );
    for i in 0..REPLICA_LAG {
        write(&mut p, &other, &format!("x{i}"), "v", 1_000);
    }
    let r = read(&mut p, FeedScope::Range(2), StartFrom::Continuation(0), 0);
    assert_eq!((r.status, ids(&r)), (200, vec![("a".into(), 1, 1)]));
    // The unmodified feed answers at once.
    let mut q = partition();
    write(&mut q, &k, "a", "v1", 1_000);
    let r = read(&mut q, FeedScope::Range(2), StartFrom::Continuation(0), 0);
    assert_eq!(r.status, 200);
}
