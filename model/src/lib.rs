//! The system under test: a model of a cloud storage and document service.
//! Pure state machines inside (store, conditions, retry policy, log records),
//! held per partition behind one request/response/effect shape, with one set
//! of seeded bugs; a madsim server and client around them. It knows nothing of faults or
//! checkers: it reads time from a clock it is handed, draws randomness from
//! what it is handed, and reports calls to an observer it is handed.

#[cfg(not(madsim))]
compile_error!(
    "overcast-model needs the simulator: build with `--cfg madsim` (set in .cargo/config.toml; \
     a RUSTFLAGS variable replaces it, so add `--cfg madsim` there too)"
);

pub mod bugs;
pub mod client;
pub mod conditions;
pub mod connector;
pub mod cosmos;
pub mod cosmos_client;
pub mod env;
pub mod feed;
pub mod feed_processor;
pub mod lease;
pub mod lease_client;
pub mod lease_holder;
pub mod partition;
pub mod queue;
pub mod region_client;
pub mod replica;
pub mod replica_server;
pub mod retry;
pub mod search;
pub mod search_client;
pub mod server;
pub mod store;
pub mod wal;
pub mod wire;
