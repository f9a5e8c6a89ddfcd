//! The queues' properties (SPEC §5.7), with what each means.

use overcast_sim::check::Property;

/// end-to-end: after the final traversals the index equals the repository.
pub const END_TO_END: Property = Property::new(
    "end-to-end",
    "after the final traversals the index equals the repository",
);

/// Q1: a poll returns the first eligible items in (status priority, available time, name) order, as many as the limit allows.
pub const Q1: Property = Property::new(
    "Q1",
    "a poll returns the first eligible items in (status priority, available time, name) order, as many as the limit allows",
);

/// Q2: an item reserved by a poll is not returned by another poll until it is unreserved.
pub const Q2: Property = Property::new(
    "Q2",
    "an item reserved by a poll is not returned by another poll until it is unreserved",
);

/// Q3: a reserved item becomes pollable again once its reservation ends.
pub const Q3: Property = Property::new(
    "Q3",
    "a reserved item becomes pollable again once its reservation ends",
);

/// Q4: every push, index and delete moves the item's status as SPEC §5.2/§5.4 say, and a push with a type and a hash is refused with 400.
pub const Q4: Property = Property::new(
    "Q4",
    "every push, index and delete moves the item's status as SPEC §5.2/§5.4 say, and a push with a type and a hash is refused with 400",
);

/// Q5: a requeued item goes behind every eligible item of its status that was available before.
pub const Q5: Property = Property::new(
    "Q5",
    "a requeued item goes behind every eligible item of its status that was available before",
);

/// Q6: an index or delete takes effect only with a version above the indexed one; a stale one changes nothing.
pub const Q6: Property = Property::new(
    "Q6",
    "an index or delete takes effect only with a version above the indexed one; a stale one changes nothing",
);

/// Q7: a deleteQueueItems(Q) deletes exactly the items labelled Q when it started, and never an item the last traversal indexed into its own queue.
pub const Q7: Property = Property::new(
    "Q7",
    "a deleteQueueItems(Q) deletes exactly the items labelled Q when it started, and never an item the last traversal indexed into its own queue",
);

/// Q8: no full traversal starts indexing while the previous deleteQueueItems is not done.
pub const Q8: Property = Property::new(
    "Q8",
    "no full traversal starts indexing while the previous deleteQueueItems is not done",
);

/// Q9: a traversal resumes after its last checkpoint and skips nothing, and an incremental checkpoint is saved only after its changes are pushed.
pub const Q9: Property = Property::new(
    "Q9",
    "a traversal resumes after its last checkpoint and skips nothing, and an incremental checkpoint is saved only after its changes are pushed",
);
