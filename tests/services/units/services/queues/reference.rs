//! Tests of `overcast_scenarios::services::queues::reference`.
use overcast_model::conditions::Millis;
use overcast_model::queue::QueueConfig;
use overcast_model::queue::{Item, ItemStatus, DEFAULT_QUEUE};
use overcast_scenarios::services::queues::reference::*;
use proptest::prelude::*;

const STATUSES: [ItemStatus; 4] = [
    ItemStatus::Error,
    ItemStatus::Modified,
    ItemStatus::NewItem,
    ItemStatus::Accepted,
];

fn item(status: ItemStatus, available_ms: Millis, reserved_until: Option<Millis>) -> Item {
    Item {
        queue: DEFAULT_QUEUE.into(),
        status,
        repository_errors: Vec::new(),
        payload: String::new(),
        hashes: Default::default(),
        version: String::new(),
        content: None,
        queued: true,
        available_ms,
        reserved_until,
        deleted_ms: None,
        errors: 0,
    }
}

#[test]
fn the_poll_order_is_the_spec_s_table_whatever_order_the_model_declares() {
    let mut items: Vec<(String, Item)> = [
        ("d", ItemStatus::Accepted, 1),
        ("c", ItemStatus::NewItem, 1),
        ("b", ItemStatus::Modified, 1),
        ("a2", ItemStatus::Error, 5),
        ("a1", ItemStatus::Error, 5),
        ("a0", ItemStatus::Error, 9),
    ]
    .into_iter()
    .map(|(n, s, t)| (n.to_string(), item(s, t, None)))
    .collect();
    items.sort_by(|(a, x), (b, y)| poll_key(a, x).cmp(&poll_key(b, y)));
    let names: Vec<&str> = items.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a1", "a2", "a0", "b", "c", "d"]);
}

#[test]
fn a_reservation_ends_at_its_time_and_a_hard_delete_frees_the_version() {
    let i = item(ItemStatus::NewItem, 0, Some(100));
    assert!(reserved(&i, 99) && !eligible(&i, 99));
    assert!(!reserved(&i, 100) && eligible(&i, 100));
    assert!(!eligible(&item(ItemStatus::NewItem, 50, None), 49));
    let deleted = Item {
        version: "7".into(),
        deleted_ms: Some(1_000),
        ..item(ItemStatus::Accepted, 0, None)
    };
    let soft = soft_delete_ms(1_000);
    assert_eq!(soft, 604_800);
    assert_eq!(version_floor(&deleted, 1_000 + soft - 1, soft), "7");
    assert_eq!(version_floor(&deleted, 1_000 + soft, soft), "");
}

proptest! {
    /// The model's functions agree with the reference on any item: a
    /// slip in the model's poll order, eligibility, reservation or
    /// version floor fails here, while the checks, which use only the
    /// reference, catch it in runs.
    #[test]
    fn the_model_agrees_with_the_reference(
        s1 in 0usize..4, s2 in 0usize..4,
        t1 in 0u64..20, t2 in 0u64..20,
        r in proptest::option::of(0u64..30),
        d in proptest::option::of(0u64..30),
        at in 0u64..40,
        queued in any::<bool>(),
        n1 in "[a-c]", n2 in "[a-c]",
    ) {
        let a = item(STATUSES[s1], t1, r);
        let b = Item { queued, deleted_ms: d, version: "v".into(), ..item(STATUSES[s2], t2, None) };
        let model = overcast_model::queue::poll_order(&n1, &a).cmp(&overcast_model::queue::poll_order(&n2, &b));
        prop_assert_eq!(model, poll_key(&n1, &a).cmp(&poll_key(&n2, &b)));
        prop_assert_eq!(a.reserved_at(at, false), reserved(&a, at));
        prop_assert_eq!(b.eligible_at(at), eligible(&b, at));
        let config = QueueConfig { time_scale: 10_000_000, ..QueueConfig::default() };
        let soft = soft_delete_ms(config.time_scale);
        prop_assert_eq!(config.soft_delete_ms(), soft);
        prop_assert_eq!(b.version_floor(at, soft), version_floor(&b, at, soft));
    }
}
