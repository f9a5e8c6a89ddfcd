//! Tests of what the services share.

mod bridge;
mod dialects;
mod durability;
pub(crate) mod retry;
mod words;
