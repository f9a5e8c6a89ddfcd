//! A small reference of the queues' rules, written from the SPEC's tables
//! and never calling the model's functions: what an item should look like
//! after a push, an index or a delete (SPEC §5.2 and §5.4, for Q4), the
//! poll order and eligibility (§5.1, for Q1–Q3 and Q5), and the version a
//! new index or delete must exceed (§5.2, for Q6). The checks read the
//! model's item states and judge them with these.

use overcast_model::conditions::Millis;
use overcast_model::queue::{Item, ItemStatus, PushType, QueueRequest, DEFAULT_QUEUE};

/// SPEC §5.1's poll priority of a status, first polled first: `ERROR >
/// MODIFIED > NEW_ITEM > ACCEPTED`.
pub fn priority(status: ItemStatus) -> u8 {
    match status {
        ItemStatus::Error => 0,
        ItemStatus::Modified => 1,
        ItemStatus::NewItem => 2,
        ItemStatus::Accepted => 3,
    }
}

/// SPEC §5.1's poll order of item `name`: status priority, then the
/// oldest available time, then the name.
pub fn poll_key<'a>(name: &'a str, item: &Item) -> (u8, Millis, &'a str) {
    (priority(item.status), item.available_ms, name)
}

/// Whether `item` is reserved at `at`: a poll's reservation that has not
/// run out.
pub fn reserved(item: &Item, at: Millis) -> bool {
    item.reserved_until.is_some_and(|until| at < until)
}

/// Whether a poll at `at` may return `item` (SPEC §5.1): in its queue,
/// unreserved, and available.
pub fn eligible(item: &Item, at: Millis) -> bool {
    item.queued && !reserved(item, at) && item.available_ms <= at
}

/// How long a deleted item keeps its version (SPEC §5.2: a soft delete of
/// 7–10 days; the model takes 7), divided by the scenario's time scale.
pub fn soft_delete_ms(time_scale: u64) -> Millis {
    7 * 86_400_000 / time_scale.max(1)
}

/// The version a new index or delete of `item` must exceed at `at` (SPEC
/// §5.2, compared bytewise): the item's, until its delete has become hard
/// (`soft_ms` after it), then none.
pub fn version_floor(item: &Item, at: Millis, soft_ms: Millis) -> &str {
    match item.deleted_ms {
        Some(d) if at >= d.saturating_add(soft_ms) => "",
        _ => &item.version,
    }
}

/// What the reference expects of an item after a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// Its status (`None`: any; a deleted item's status is not observable).
    pub status: Option<ItemStatus>,
    /// Still in a queue.
    pub queued: bool,
    /// Reserved just after the request.
    pub reserved: bool,
    /// Its queue label.
    pub queue: String,
}

impl Expected {
    /// The differences between this and `item` at `at`, in words.
    pub fn differences(&self, item: &Item, at: Millis) -> Vec<String> {
        let mut d = Vec::new();
        if let Some(s) = self.status {
            if s != item.status {
                d.push(format!("status {:?}, expected {s:?}", item.status));
            }
        }
        if self.queued != item.queued {
            d.push(format!("queued {}, expected {}", item.queued, self.queued));
        }
        let reserved = reserved(item, at);
        if self.reserved != reserved {
            d.push(format!("reserved {reserved}, expected {}", self.reserved));
        }
        if self.queue != item.queue {
            d.push(format!("queue '{}', expected '{}'", item.queue, self.queue));
        }
        d
    }
}

/// The item after `req` at server time `at`, from `before` (`None`: never
/// seen); `None` for requests that do not change one item.
pub fn after(before: Option<&Item>, req: &QueueRequest, at: Millis) -> Option<Expected> {
    let present = before.filter(|i| i.queued);
    let reserved_before = present.is_some_and(|i| reserved(i, at));
    match req {
        QueueRequest::Push { item: push, .. } => {
            let queue = push.queue.clone().unwrap_or_else(|| DEFAULT_QUEUE.into());
            let Some(b) = present else {
                // An unknown (or deleted) item: a NEW_ITEM, whatever the type.
                return Some(Expected {
                    status: Some(ItemStatus::NewItem),
                    queued: true,
                    reserved: false,
                    queue,
                });
            };
            let (status, reserved) = match push.r#type {
                PushType::Modified => (ItemStatus::Modified, reserved_before),
                PushType::NotModified => (ItemStatus::Accepted, false),
                PushType::RepositoryError => (ItemStatus::Error, false),
                PushType::Requeue => (b.status, false),
                PushType::Unspecified => {
                    let h = &push.hashes;
                    let differs = [
                        (&h.metadata, &b.hashes.metadata),
                        (&h.structured_data, &b.hashes.structured_data),
                        (&h.content, &b.hashes.content),
                    ]
                    .iter()
                    .any(|(given, stored)| given.is_some() && given != stored);
                    let status = if differs && b.status != ItemStatus::NewItem {
                        ItemStatus::Modified
                    } else {
                        b.status
                    };
                    (status, reserved_before)
                }
            };
            Some(Expected {
                status: Some(status),
                queued: true,
                reserved,
                queue,
            })
        }
        QueueRequest::Index { queue, .. } => Some(Expected {
            status: Some(ItemStatus::Accepted),
            queued: true,
            reserved: false,
            queue: queue
                .clone()
                .or_else(|| before.map(|b| b.queue.clone()))
                .unwrap_or_else(|| DEFAULT_QUEUE.into()),
        }),
        QueueRequest::Delete { .. } => Some(Expected {
            status: None,
            queued: false,
            reserved: false,
            queue: before.map(|b| b.queue.clone()).unwrap_or_default(),
        }),
        _ => None,
    }
}
