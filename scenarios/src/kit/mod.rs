//! What several services' scenarios share: the engine's adapters for the
//! model, the server program, connecting SDK clients, recording SDK attempts, the
//! client-side retry checks, durability before acknowledgement (D1), one
//! random stream per operation, and the words of a failure page.

pub mod attempts;
pub mod bridge;
pub mod client;
pub mod dialects;
pub mod draws;
pub mod durability;
pub mod properties;
pub mod retry;
pub mod server;
pub mod words;
