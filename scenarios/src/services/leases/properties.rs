//! The lease properties (SPEC §2.9), with what each means.

use overcast_sim::check::Property;

/// L1: two lease ids never hold one resource locked at the same server instant.
pub const L1: Property = Property::new(
    "L1",
    "two lease ids never hold one resource locked at the same server instant",
);

/// L2: a write or delete of a locked blob succeeds only with the lease's id, every read and write is answered as the §2.5 table says, and the lease check comes before conditions and existence.
pub const L2: Property = Property::new(
    "L2",
    "a write or delete of a locked blob succeeds only with the lease's id, every read and write is answered as the §2.5 table says, and the lease check comes before conditions and existence",
);

/// L3: a holder's write with its lease id is never accepted after the lease ran out, unless it was renewed or re-acquired.
pub const L3: Property = Property::new(
    "L3",
    "a holder's write with its lease id is never accepted after the lease ran out, unless it was renewed or re-acquired",
);

/// L4: after a break, no other id acquires the lease before the break time.
pub const L4: Property = Property::new(
    "L4",
    "after a break, no other id acquires the lease before the break time",
);

/// L5: every lease transition (state, action, id) answers and moves exactly as the §2.3 action table says.
pub const L5: Property = Property::new(
    "L5",
    "every lease transition (state, action, id) answers and moves exactly as the §2.3 action table says",
);

/// L6: an expired lease becomes acquirable by another id at its expiry (no embargo, AMBIG-18).
pub const L6: Property = Property::new(
    "L6",
    "an expired lease becomes acquirable by another id at its expiry (no embargo, AMBIG-18)",
);

/// L7: a lease id the server generates was never seen before on that server.
pub const L7: Property = Property::new(
    "L7",
    "a lease id the server generates was never seen before on that server",
);

/// L8: a container with a locked lease is deleted only by a request carrying its id; other container operations without an id are never blocked.
pub const L8: Property = Property::new(
    "L8",
    "a container with a locked lease is deleted only by a request carrying its id; other container operations without an id are never blocked",
);

/// L9: no two holders believe they hold the same lease at the same true instant.
pub const L9: Property = Property::new(
    "L9",
    "no two holders believe they hold the same lease at the same true instant",
);
