//! The services' pure state machines: `apply(request, now) -> (response,
//! effect)` and `redo(effect)`, no clock, no network, no randomness they are
//! not handed. [`crate::partition`] holds one of each behind one shape.
//!
//! The object store holds its blobs' leases ([`lease`]), and the change feed
//! reads the Cosmos items' changes ([`cosmos`]); no other service names
//! another.

pub mod cosmos;
pub mod feed;
pub mod lease;
pub mod queue;
pub mod search;
pub mod store;
