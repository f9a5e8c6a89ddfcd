//! Tests of the Cloud Search indexing queues.

use super::*;

const DS: &str = "ds";

fn service() -> IndexingService {
    service_with(ModelBugs::default())
}

fn service_with(bugs: ModelBugs) -> IndexingService {
    let mut s = IndexingService::new(bugs);
    let config = QueueConfig {
        time_scale: 1_000,
        backoff_ms: 100,
        max_backoff_ms: 1_000,
        delete_ms: (50, 50),
    };
    let (r, e) = s.apply(
        &QueueRequest::CreateDatasource {
            datasource: DS.into(),
            config,
        },
        0,
    );
    assert_eq!((r.status, e.is_some()), (200, true));
    s
}

fn push(name: &str, t: PushType) -> QueueRequest {
    QueueRequest::Push {
        datasource: DS.into(),
        item: PushItem {
            name: name.into(),
            r#type: t,
            queue: Some("q".into()),
            ..PushItem::default()
        },
    }
}

fn push_hash(name: &str, hash: &str) -> QueueRequest {
    QueueRequest::Push {
        datasource: DS.into(),
        item: PushItem {
            name: name.into(),
            hashes: Hashes {
                content: Some(hash.into()),
                ..Hashes::default()
            },
            queue: Some("q".into()),
            ..PushItem::default()
        },
    }
}

fn index(name: &str, version: &str) -> QueueRequest {
    QueueRequest::Index {
        datasource: DS.into(),
        name: name.into(),
        version: version.into(),
        queue: Some("q".into()),
        content: format!("{name}@{version}"),
        hashes: Hashes {
            content: Some("h1".into()),
            ..Hashes::default()
        },
    }
}

fn delete(name: &str, version: &str) -> QueueRequest {
    QueueRequest::Delete {
        datasource: DS.into(),
        name: name.into(),
        version: version.into(),
    }
}

fn poll(limit: Option<u32>) -> QueueRequest {
    QueueRequest::Poll {
        datasource: DS.into(),
        queue: Some("q".into()),
        statuses: Vec::new(),
        limit,
    }
}

fn item<'a>(s: &'a IndexingService, name: &str) -> &'a Item {
    &s.datasource(DS).expect("created").items[name]
}

fn polled(s: &mut IndexingService, limit: Option<u32>, now: Millis) -> Vec<String> {
    let (r, _) = s.apply(&poll(limit), now);
    assert_eq!(r.status, 200);
    r.items.into_iter().map(|i| i.name).collect()
}

/// Pushes `name` (a NEW_ITEM) and indexes it at version "v1": ACCEPTED.
fn accepted(s: &mut IndexingService, name: &str, now: Millis) {
    s.apply(&push(name, PushType::Modified), now);
    let (r, _) = s.apply(&index(name, "v1"), now);
    assert_eq!(r.status, 200);
}

#[test]
fn a_push_of_type_and_hash_is_refused_with_400_and_changes_nothing() {
    let mut s = service();
    let mut req = push_hash("a", "h");
    if let QueueRequest::Push { item, .. } = &mut req {
        item.r#type = PushType::Modified;
    }
    let before = s.clone();
    let (r, e) = s.apply(&req, 1);
    assert_eq!(
        (r.status, r.error.as_deref(), e),
        (400, Some("INVALID_ARGUMENT"), None)
    );
    assert_eq!(s, before);
}

#[test]
fn a_repository_error_is_refused_without_type_repository_error() {
    let mut s = service();
    let mut req = push("a", PushType::Modified);
    if let QueueRequest::Push { item, .. } = &mut req {
        item.repository_error = Some("io".into());
    }
    assert_eq!(s.apply(&req, 1).0.status, 400);
}

#[test]
fn modified_creates_a_new_item_and_marks_a_present_one_modified() {
    let mut s = service();
    let (r, _) = s.apply(&push("a", PushType::Modified), 1);
    assert_eq!(r.item_status, Some(ItemStatus::NewItem));
    accepted(&mut s, "b", 1);
    let (r, _) = s.apply(&push("b", PushType::Modified), 2);
    assert_eq!(r.item_status, Some(ItemStatus::Modified));
}

#[test]
fn not_modified_creates_a_new_item_and_accepts_and_unreserves_a_present_one() {
    let mut s = service();
    let (r, _) = s.apply(&push("a", PushType::NotModified), 1);
    assert_eq!(r.item_status, Some(ItemStatus::NewItem));
    assert_eq!(polled(&mut s, None, 2), vec!["a"]);
    assert!(item(&s, "a").reserved_at(3, false));
    let (r, _) = s.apply(&push("a", PushType::NotModified), 3);
    assert_eq!(r.item_status, Some(ItemStatus::Accepted));
    assert!(!item(&s, "a").reserved_at(3, false));
    assert_eq!(item(&s, "a").available_ms, 3);
}

#[test]
fn repository_error_creates_a_new_item_and_backs_a_present_one_off_exponentially() {
    let mut s = service();
    let (r, _) = s.apply(&push("a", PushType::RepositoryError), 1);
    assert_eq!(r.item_status, Some(ItemStatus::NewItem));
    assert_eq!(polled(&mut s, None, 2), vec!["a"]);
    let mut req = push("a", PushType::RepositoryError);
    if let QueueRequest::Push { item, .. } = &mut req {
        item.repository_error = Some("io".into());
    }
    let (r, _) = s.apply(&req, 10);
    assert_eq!(r.item_status, Some(ItemStatus::Error));
    let a = item(&s, "a");
    assert_eq!(a.repository_errors, vec!["io".to_string()]);
    assert!(!a.reserved_at(10, false));
    assert_eq!(a.available_ms, 110, "first backoff 100 ms");
    assert!(
        polled(&mut s, None, 109).is_empty(),
        "not before its backoff"
    );
    assert_eq!(polled(&mut s, None, 110), vec!["a"]);
    s.apply(&req, 200);
    assert_eq!(item(&s, "a").available_ms, 400, "second backoff 200 ms");
}

#[test]
fn requeue_is_refused_for_absent_and_unreserved_items_and_puts_a_reserved_one_back_now() {
    let mut s = service();
    assert_eq!(s.apply(&push("a", PushType::Requeue), 1).0.status, 400);
    s.apply(&push("a", PushType::Modified), 1);
    let (r, e) = s.apply(&push("a", PushType::Requeue), 2);
    assert_eq!((r.status, e), (400, None));
    assert_eq!(polled(&mut s, None, 3), vec!["a"]);
    let (r, _) = s.apply(&push("a", PushType::Requeue), 5);
    assert_eq!(r.status, 200);
    let a = item(&s, "a");
    assert_eq!((a.reserved_until, a.available_ms), (None, 5));
}

#[test]
fn unspecified_without_hashes_creates_a_new_item_and_leaves_a_present_status() {
    let mut s = service();
    let (r, _) = s.apply(&push("a", PushType::Unspecified), 1);
    assert_eq!(r.item_status, Some(ItemStatus::NewItem));
    accepted(&mut s, "b", 1);
    let (r, _) = s.apply(&push("b", PushType::Unspecified), 2);
    assert_eq!(r.item_status, Some(ItemStatus::Accepted));
}

#[test]
fn hashes_equal_keep_the_status_different_ones_modify_except_a_new_item() {
    let mut s = service();
    let (r, _) = s.apply(&push_hash("a", "h1"), 1);
    assert_eq!(r.item_status, Some(ItemStatus::NewItem));
    let (r, _) = s.apply(&push_hash("a", "other"), 2);
    assert_eq!(r.item_status, Some(ItemStatus::NewItem), "a NEW_ITEM stays");
    accepted(&mut s, "b", 1);
    let (r, _) = s.apply(&push_hash("b", "h1"), 2);
    assert_eq!(
        r.item_status,
        Some(ItemStatus::Accepted),
        "equal: unchanged"
    );
    let (r, _) = s.apply(&push_hash("b", "h2"), 3);
    assert_eq!(r.item_status, Some(ItemStatus::Modified));
}

#[test]
fn a_push_without_a_queue_labels_default_and_with_one_relabels_keeping_a_reservation() {
    let mut s = service();
    let mut req = push("a", PushType::Modified);
    if let QueueRequest::Push { item, .. } = &mut req {
        item.queue = None;
    }
    s.apply(&req, 1);
    assert_eq!(item(&s, "a").queue, DEFAULT_QUEUE);
    s.apply(&push("a", PushType::Modified), 2);
    assert_eq!(item(&s, "a").queue, "q");
    assert_eq!(polled(&mut s, None, 3), vec!["a"]);
    let mut relabel = push("a", PushType::Modified);
    if let QueueRequest::Push { item, .. } = &mut relabel {
        item.queue = Some("r".into());
    }
    s.apply(&relabel, 4);
    let a = item(&s, "a");
    assert_eq!(a.queue, "r");
    assert!(
        a.reserved_at(4, false),
        "AMBIG-13: relabelled, still reserved"
    );
}

#[test]
fn poll_orders_by_priority_then_oldest_then_name_and_reserves_what_it_returns() {
    let mut s = service();
    accepted(&mut s, "acc", 1);
    s.apply(&push("new2", PushType::Modified), 3);
    s.apply(&push("new1", PushType::Modified), 3);
    s.apply(&push("new0", PushType::Modified), 2);
    accepted(&mut s, "mod", 1);
    s.apply(&push("mod", PushType::Modified), 4);
    s.apply(&push("err", PushType::Modified), 1);
    let oldest_new = QueueRequest::Poll {
        datasource: DS.into(),
        queue: Some("q".into()),
        statuses: vec![ItemStatus::NewItem],
        limit: Some(1),
    };
    assert_eq!(s.apply(&oldest_new, 5).0.items[0].name, "err");
    let mut req = push("err", PushType::RepositoryError);
    if let QueueRequest::Push { item, .. } = &mut req {
        item.repository_error = Some("x".into());
    }
    s.apply(&req, 5);
    assert_eq!(
        polled(&mut s, None, 200),
        vec!["err", "mod", "new0", "new1", "new2", "acc"]
    );
    assert!(polled(&mut s, None, 201).is_empty(), "all reserved");
}

#[test]
fn poll_limits_default_to_20_and_refuse_above_100() {
    let mut s = service();
    for i in 0..30 {
        s.apply(&push(&format!("i{i:02}"), PushType::Modified), 1);
    }
    assert_eq!(polled(&mut s, None, 2).len(), 20);
    assert_eq!(polled(&mut s, Some(0), 2).len(), 10);
    assert_eq!(s.apply(&poll(Some(101)), 3).0.status, 400);
}

#[test]
fn poll_filters_by_status_and_queue() {
    let mut s = service();
    accepted(&mut s, "a", 1);
    s.apply(&push("b", PushType::Modified), 1);
    let (r, _) = s.apply(
        &QueueRequest::Poll {
            datasource: DS.into(),
            queue: Some("q".into()),
            statuses: vec![ItemStatus::Accepted],
            limit: None,
        },
        2,
    );
    assert_eq!(r.items.len(), 1);
    assert_eq!(r.items[0].name, "a");
    let (r, _) = s.apply(
        &QueueRequest::Poll {
            datasource: DS.into(),
            queue: None,
            statuses: Vec::new(),
            limit: None,
        },
        2,
    );
    assert!(r.items.is_empty(), "nothing in the default queue");
}

#[test]
fn a_reservation_ends_by_itself_after_the_scaled_four_hours() {
    let mut s = service();
    s.apply(&push("a", PushType::Modified), 0);
    assert_eq!(polled(&mut s, None, 1), vec!["a"]);
    let r = QueueConfig {
        time_scale: 1_000,
        ..QueueConfig::default()
    }
    .reservation_ms();
    assert_eq!(r, 14_400);
    assert!(polled(&mut s, None, r).is_empty());
    assert_eq!(polled(&mut s, None, 1 + r), vec!["a"]);
}

#[test]
fn index_needs_a_lexically_greater_version_and_accepts_and_unreserves() {
    let mut s = service();
    s.apply(&push("a", PushType::Modified), 1);
    assert_eq!(polled(&mut s, None, 2), vec!["a"]);
    let (r, _) = s.apply(&index("a", "9"), 3);
    assert_eq!(r.item_status, Some(ItemStatus::Accepted));
    assert!(!item(&s, "a").reserved_at(3, false));
    for v in ["9", "10", "1"] {
        let before = s.clone();
        let (r, e) = s.apply(&index("a", v), 4);
        assert_eq!(
            (r.status, r.error.as_deref(), e),
            (400, Some("FAILED_PRECONDITION"), None),
            "{v}"
        );
        assert_eq!(s, before);
    }
    assert_eq!(s.apply(&index("a", "91"), 5).0.status, 200);
}

#[test]
fn index_inserts_an_absent_item_accepted_in_its_queue() {
    let mut s = service();
    let (r, _) = s.apply(&index("a", "1"), 1);
    assert_eq!(r.item_status, Some(ItemStatus::Accepted));
    assert_eq!(item(&s, "a").queue, "q");
    assert_eq!(item(&s, "a").content.as_deref(), Some("a@1"));
}

#[test]
fn delete_needs_a_greater_version_soft_deletes_and_a_higher_index_restores() {
    let mut s = service();
    accepted(&mut s, "a", 1);
    assert_eq!(s.apply(&delete("a", "v1"), 2).0.status, 400);
    assert_eq!(s.apply(&delete("nope", "v1"), 2).0.status, 404);
    assert_eq!(s.apply(&delete("a", "v2"), 2).0.status, 200);
    let a = item(&s, "a");
    assert_eq!((a.content.as_ref(), a.queued), (None, false));
    assert!(
        polled(&mut s, None, 3).is_empty(),
        "deleted items are not queued"
    );
    assert_eq!(s.apply(&index("a", "v2"), 4).0.status, 400, "version kept");
    assert_eq!(s.apply(&index("a", "v3"), 4).0.status, 200, "restored");
    assert!(item(&s, "a").content.is_some());
}

#[test]
fn after_the_soft_delete_the_version_no_longer_applies() {
    let mut s = service();
    accepted(&mut s, "a", 1);
    s.apply(&delete("a", "v9"), 2);
    let soft = SOFT_DELETE_MS / 1_000;
    assert_eq!(s.apply(&index("a", "v2"), 2 + soft - 1).0.status, 400);
    assert_eq!(s.apply(&index("a", "v2"), 2 + soft).0.status, 200);
}

#[test]
fn unreserve_frees_every_reserved_item_of_its_queue_only() {
    let mut s = service();
    s.apply(&push("a", PushType::Modified), 1);
    s.apply(&push("b", PushType::Modified), 1);
    assert_eq!(polled(&mut s, None, 2).len(), 2);
    let (r, e) = s.apply(
        &QueueRequest::Unreserve {
            datasource: DS.into(),
            queue: None,
        },
        3,
    );
    assert_eq!((r.status, e), (200, None), "nothing reserved in default");
    let (_, e) = s.apply(
        &QueueRequest::Unreserve {
            datasource: DS.into(),
            queue: Some("q".into()),
        },
        3,
    );
    assert_eq!(e.map(|e| e.items.len()), Some(2));
    assert_eq!(polled(&mut s, None, 4).len(), 2);
}

#[test]
fn delete_queue_items_deletes_exactly_the_items_labelled_when_it_started_once_done() {
    let mut s = service();
    accepted(&mut s, "a", 1);
    accepted(&mut s, "b", 1);
    let (r, e) = s.apply(
        &QueueRequest::DeleteQueueItems {
            datasource: DS.into(),
            queue: Some("q".into()),
        },
        10,
    );
    let op = r.operation.expect("an operation");
    assert!(!op.done);
    assert_eq!(e.and_then(|e| e.started).map(|o| o.items.len()), Some(2));
    // Pushed into q after the start: not deleted.
    s.apply(&push("c", PushType::Modified), 20);
    let get = QueueRequest::GetOperation {
        datasource: DS.into(),
        operation: op.name.clone(),
    };
    let (r, e) = s.apply(&get, 59);
    assert_eq!((r.operation.map(|o| o.done), e), (Some(false), None));
    let (r, e) = s.apply(&get, 60);
    assert_eq!(r.operation.map(|o| o.done), Some(true));
    let e = e.expect("the completion is an effect");
    assert_eq!(e.completed[0].1.len(), 2);
    assert!(item(&s, "a").content.is_none() && item(&s, "b").content.is_none());
    assert!(item(&s, "c").queued);
    let unknown = QueueRequest::GetOperation {
        datasource: DS.into(),
        operation: "operations/none".into(),
    };
    assert_eq!(s.apply(&unknown, 61).0.status, 404);
}

#[test]
fn argument_limits_are_refused_with_400() {
    let mut s = service();
    let long = |n: usize| "x".repeat(n);
    let mut cases = Vec::new();
    let mut p = PushItem {
        name: "a".into(),
        queue: Some(long(101)),
        ..PushItem::default()
    };
    cases.push(QueueRequest::Push {
        datasource: DS.into(),
        item: p.clone(),
    });
    p.queue = None;
    p.payload = Some(long(8193));
    cases.push(QueueRequest::Push {
        datasource: DS.into(),
        item: p.clone(),
    });
    p.payload = None;
    p.hashes.content = Some(long(2049));
    cases.push(QueueRequest::Push {
        datasource: DS.into(),
        item: p.clone(),
    });
    p.hashes.content = None;
    p.name = String::new();
    cases.push(QueueRequest::Push {
        datasource: DS.into(),
        item: p,
    });
    cases.push(index("a", &long(1025)));
    cases.push(delete("a", &long(1025)));
    cases.push(QueueRequest::Poll {
        datasource: DS.into(),
        queue: Some(long(101)),
        statuses: Vec::new(),
        limit: None,
    });
    for c in cases {
        let (r, e) = s.apply(&c, 1);
        assert_eq!(
            (r.status, r.error.as_deref(), e),
            (400, Some("INVALID_ARGUMENT"), None),
            "{c:?}"
        );
    }
    // At the limits: accepted.
    let ok = PushItem {
        name: "a".into(),
        queue: Some(long(100)),
        payload: Some(long(8192)),
        ..PushItem::default()
    };
    assert_eq!(
        s.apply(
            &QueueRequest::Push {
                datasource: DS.into(),
                item: ok
            },
            1
        )
        .0
        .status,
        200
    );
}

#[test]
fn redo_of_the_logged_effects_rebuilds_the_same_state() {
    let mut s = service_with(ModelBugs::default());
    let mut log = Vec::new();
    let mut live = IndexingService::new(ModelBugs::default());
    let (_, e) = live.apply(
        &QueueRequest::CreateDatasource {
            datasource: DS.into(),
            config: s.datasource(DS).expect("created").config.clone(),
        },
        0,
    );
    log.extend(e);
    let steps = [
        push("a", PushType::Modified),
        push("b", PushType::Modified),
        poll(Some(1)),
        index("a", "2"),
        QueueRequest::DeleteQueueItems {
            datasource: DS.into(),
            queue: Some("q".into()),
        },
        push("c", PushType::Modified),
        delete("c", "1"),
    ];
    for (t, req) in steps.iter().enumerate() {
        log.extend(live.apply(req, t as Millis * 40).1);
    }
    let mut recovered = IndexingService::new(ModelBugs::default());
    for e in &log {
        recovered.redo(e);
    }
    assert_eq!(recovered, live);
    s = recovered;
    assert!(s.datasource(DS).is_some());
}

#[test]
fn the_seeded_poll_bugs_return_reserved_items_and_ignore_priority() {
    let mut s = service_with(ModelBugs {
        poll_returns_reserved: true,
        ..ModelBugs::default()
    });
    s.apply(&push("a", PushType::Modified), 1);
    assert_eq!(polled(&mut s, None, 2), vec!["a"]);
    assert_eq!(polled(&mut s, None, 3), vec!["a"]);
    let mut s = service_with(ModelBugs {
        poll_ignores_priority: true,
        ..ModelBugs::default()
    });
    accepted(&mut s, "a", 1);
    s.apply(&push("b", PushType::Modified), 2);
    assert_eq!(polled(&mut s, None, 3), vec!["a", "b"]);
}
