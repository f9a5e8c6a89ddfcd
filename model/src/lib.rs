//! The system under test: a model of a cloud storage and document service.
//! Pure state machines inside (store, retry policy, log records), a madsim
//! server and client around them. It knows nothing of faults or checkers.

#[cfg(not(madsim))]
compile_error!(
    "overcast-model needs the simulator: build with `--cfg madsim` (set in .cargo/config.toml; \
     a RUSTFLAGS variable replaces it, so add `--cfg madsim` there too)"
);

pub mod conditions;
pub mod retry;
pub mod store;
