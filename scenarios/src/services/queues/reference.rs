//! A small reference machine for Q4: what an item should look like after a
//! push, an index or a delete (SPEC §5.2 and §5.4), from how it looked before.
//! Written from the SPEC's tables, independently of the model's code.

use overcast_model::conditions::Millis;
use overcast_model::queue::{Item, ItemStatus, PushType, QueueRequest, DEFAULT_QUEUE};

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
        let reserved = item.reserved_at(at, false);
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
    let reserved_before = present.is_some_and(|i| i.reserved_at(at, false));
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
