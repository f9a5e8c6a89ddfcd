//! The overcast engine: a simulated world with faults, per-node clocks and
//! crash-prone disks, histories, checkers, the runner and its reports.
//! It knows nothing of the system under test.

#![deny(missing_docs)]

#[cfg(not(madsim))]
compile_error!(
    "overcast-sim needs the simulator: build with `--cfg madsim` (set in .cargo/config.toml; \
     a RUSTFLAGS variable replaces it, so add `--cfg madsim` there too)"
);

pub mod check;
pub mod clock;
pub mod disk;
pub mod faults;
pub mod floor;
pub mod happening;
pub mod history;
pub mod in_flight;
pub mod listening;
pub mod log;
pub mod rng;
pub mod runner;
pub mod timeline;
pub mod topology;
pub mod world;

/// The linearizability checker (the `overcast-lin` crate), re-exported so that
/// `overcast_sim::lin::...` paths keep working.
pub use overcast_lin as lin;
