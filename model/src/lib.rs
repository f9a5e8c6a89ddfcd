//! The system under test: a model of a cloud storage and document service.
//! Pure state machines inside (store, conditions, retry policy, log records),
//! held per partition behind one request/response/effect shape, with one set
//! of seeded bugs; a madsim server and client around them. It knows nothing of faults or
//! checkers: it reads time from a clock it is handed, draws randomness from
//! what it is handed, and reports calls to an observer it is handed.
//!
//! Inside, each layer uses only the layers before it:
//!
//! 1. `core/`: the seeded bugs, the conditional-request rules, the
//!    environment a node is handed, item keys, the Cosmos sub-statuses;
//! 2. `services/`: the services' pure state machines (store, lease, cosmos,
//!    search, queue, feed);
//! 3. [`partition`]: one of each service behind one request/response/effect
//!    shape; then [`wal`], the log of its effects, [`wire`], the
//!    network messages that carry its requests, and [`durability`], what a
//!    node with a log reports of its syncs and acknowledgements;
//! 4. `node/`: the madsim nodes (the server, and the replicated node around
//!    the pure replica);
//! 5. `sdk/`: the client side, the multi-region client included (it speaks
//!    the replicated node's protocol).
//!
//! The other crates see the flat modules below (`overcast_model::store`,
//! `overcast_model::client`...), re-exported from those folders.

#![deny(missing_docs)]

#[cfg(not(madsim))]
compile_error!(
    "overcast-model needs the simulator: build with `--cfg madsim` (set in .cargo/config.toml; \
     a RUSTFLAGS variable replaces it, so add `--cfg madsim` there too)"
);

mod core;
mod node;
mod sdk;
mod services;

pub mod durability;
pub mod partition;
pub mod wal;
pub mod wire;

pub use crate::core::{bugs, conditions, env};
pub use crate::node::{replica, replica_server, server};
pub use crate::sdk::{
    checkpoint_log, client, connector, cosmos_client, feed_processor, lease_client, lease_holder,
    region_client, retry, search_client,
};
pub use crate::services::{cosmos, feed, lease, queue, search, store};
