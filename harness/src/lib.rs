//! The generic machinery over any scenario: the [`registry`] a scenario
//! implements, the saved-file envelope ([`scenario`], [`saved`]), running
//! ([`run`]), sweeping ([`sweep`]), exploring ([`explore`]), shrinking ([`shrink`], [`ops`]), the bug
//! hunt ([`hunt`]), the failure page ([`report`]) and a scenario's
//! coverage of its SPEC tables ([`coverage`]). It depends on the
//! engine (`overcast-sim`) only and names no scenario: a program hands it
//! its [`catalogue::Catalogue`].

#![deny(missing_docs)]

#[cfg(not(madsim))]
compile_error!(
    "overcast-harness needs the simulator: build with `--cfg madsim` (set in .cargo/config.toml; \
     a RUSTFLAGS variable replaces it, so add `--cfg madsim` there too)"
);

pub mod bug;
pub mod catalogue;
pub mod coverage;
pub mod error;
pub mod explore;
pub mod goals;
pub mod hunt;
pub mod ops;
pub mod params;
pub mod registry;
pub mod report;
pub mod run;
pub mod saved;
pub mod scenario;
pub mod shrink;
pub mod sweep;
