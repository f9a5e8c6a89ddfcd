//! The properties of replicated regions: sessions (R5), the SDK's region
//! rules (R6), and the replicas' own safety, with what each means.

use overcast_sim::check::Property;

/// R5: within a session, reads see the session's own writes and never go back in time (read-your-writes, monotonic reads, write-follows-reads).
pub const R5: Property = Property::new(
    "R5",
    "within a session, reads see the session's own writes and never go back in time (read-your-writes, monotonic reads, write-follows-reads)",
);

/// R6: the SDK's region rows hold: 503 retried at most once and never for a write, 404/1002 at most twice and only after the write region, no 410 reaches the caller, marked regions are avoided.
pub const R6: Property = Property::new(
    "R6",
    "the SDK's region rows hold: 503 retried at most once and never for a write, 404/1002 at most twice and only after the write region, no 410 reaches the caller, marked regions are avoided",
);

/// convergence: every body read was written by some write, and after the heal every replica ends in its primary's state.
pub const CONVERGENCE: Property = Property::new(
    "convergence",
    "every body read was written by some write, and after the heal every replica ends in its primary's state",
);

/// durability: no acknowledged write is lost across failovers.
pub const DURABILITY: Property = Property::new(
    "durability",
    "no acknowledged write is lost across failovers",
);

/// election safety: no two replicas announce themselves primary of one partition in the same term.
pub const ELECTION_SAFETY: Property = Property::new(
    "election safety",
    "no two replicas announce themselves primary of one partition in the same term",
);

/// state machine safety: no two replicas apply different entries at the same position of a partition's log.
pub const STATE_MACHINE_SAFETY: Property = Property::new(
    "state machine safety",
    "no two replicas apply different entries at the same position of a partition's log",
);
