//! The change feed's properties (SPEC §3.4), with what each means.

use overcast_sim::check::Property;

/// CF1: every delivered document is a version some write committed (no phantoms).
pub const CF1: Property = Property::new(
    "CF1",
    "every delivered document is a version some write committed (no phantoms)",
);

/// CF2: within one lease stream, one partition key's changes arrive in commit order.
pub const CF2: Property = Property::new(
    "CF2",
    "within one lease stream, one partition key's changes arrive in commit order",
);

/// CF3: every item's final version reaches a delegate call that returns (at least once), except what SPEC's start anchor exempts.
pub const CF3: Property = Property::new(
    "CF3",
    "every item's final version reaches a delegate call that returns (at least once), except what SPEC's start anchor exempts",
);

/// CF4: a lease's checkpoint moves only after a successful delegate return for exactly that page.
pub const CF4: Property = Property::new(
    "CF4",
    "a lease's checkpoint moves only after a successful delegate return for exactly that page",
);

/// CF5: a lease's committed continuation never moves backwards.
pub const CF5: Property = Property::new(
    "CF5",
    "a lease's committed continuation never moves backwards",
);

/// CF6: a checkpoint by a host that no longer owns the lease never sticks, and that host delivers nothing more for it until it re-acquires it.
pub const CF6: Property = Property::new(
    "CF6",
    "a checkpoint by a host that no longer owns the lease never sticks, and that host delivers nothing more for it until it re-acquires it",
);

/// CF7: at the end the leases tile the key space and each is owned by a live host.
pub const CF7: Property = Property::new(
    "CF7",
    "at the end the leases tile the key space and each is owned by a live host",
);

/// CF8: at the end the leases are balanced across the live hosts, and no live lease was stolen at quiescence.
pub const CF8: Property = Property::new(
    "CF8",
    "at the end the leases are balanced across the live hosts, and no live lease was stolen at quiescence",
);

/// CF9: after a split, each child lease starts at or before the parent's checkpoint.
pub const CF9: Property = Property::new(
    "CF9",
    "after a split, each child lease starts at or before the parent's checkpoint",
);

/// CF10: a pull read answers 304 only when no committed change after its token is undelivered, a page holds exactly the log's latest versions in its range after its token up to its continuation, and a split range answers 410.
pub const CF10: Property = Property::new(
    "CF10",
    "a pull read answers 304 only when no committed change after its token is undelivered, a page holds exactly the log's latest versions in its range after its token up to its continuation, and a split range answers 410",
);

/// CF11: a host that split a lease works it no more: no write of the parent by that process keeps it the owner until it acquires it anew.
pub const CF11: Property = Property::new(
    "CF11",
    "a host that split a lease works it no more: no write of the parent by that process keeps it the owner until it acquires it anew",
);

/// CF12: a lease's timestamp is its writer's clock at the write (within the clock error the deployment allows).
pub const CF12: Property = Property::new(
    "CF12",
    "a lease's timestamp is its writer's clock at the write (within the clock error the deployment allows)",
);

/// CF13: a host resumes a lease it acquires from the lease's stored checkpoint.
pub const CF13: Property = Property::new(
    "CF13",
    "a host resumes a lease it acquires from the lease's stored checkpoint",
);
