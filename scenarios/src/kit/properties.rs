//! The properties several services' scenarios judge: linearizability
//! against a reference spec, ETag freshness (E1) and retry discipline
//! (R1–R3), each with what it means.

use overcast_sim::check::Property;

/// linearizability: every item's history has one order, consistent with real time, in which every answer is the one the reference spec gives (writes of unknown outcome may take effect at any later instant, or never).
pub const LINEARIZABILITY: Property = Property::new(
    "linearizability",
    "every item's history has one order, consistent with real time, in which every answer is the one the reference spec gives (writes of unknown outcome may take effect at any later instant, or never)",
);

/// E1: every successful write gets an ETag never seen before for its resource, and an ETag never stands for two bodies.
pub const E1: Property = Property::new(
    "E1",
    "every successful write gets an ETag never seen before for its resource, and an ETag never stands for two bodies",
);

/// R1: a call that is not idempotent is never re-sent after a timeout or a 408.
pub const R1: Property = Property::new(
    "R1",
    "a call that is not idempotent is never re-sent after a timeout or a 408",
);

/// R2: 429s are retried at most 9 times, each after its retry-after (5 s when none), within 30 s in all.
pub const R2: Property = Property::new(
    "R2",
    "429s are retried at most 9 times, each after its retry-after (5 s when none), within 30 s in all",
);

/// R3: when a retry budget runs out the caller sees the status SPEC says (429, 449, 503, or an unknown outcome), and each transport retry waits no longer than SPEC's backoff.
pub const R3: Property = Property::new(
    "R3",
    "when a retry budget runs out the caller sees the status SPEC says (429, 449, 503, or an unknown outcome), and each transport retry waits no longer than SPEC's backoff",
);
