//! The client side: the SDK's retry policy ([`retry`], a pure state machine),
//! the client that sends requests to a server and retries them ([`client`]),
//! the per-service calls built on it, the multi-region client, and the
//! programs that run on top of the SDK (the lease holder, the change feed
//! processor, the Cloud Search connector).

pub mod checkpoint_log;
pub mod client;
pub mod connector;
pub mod cosmos_client;
pub mod feed_processor;
pub mod lease_client;
pub mod lease_holder;
pub mod region_client;
pub mod retry;
pub mod search_client;
