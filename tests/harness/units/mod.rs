//! Tests of the harness crate's parts, one module per source file of `harness/src` (they live here, not in the crate, so that the crate is compiled once, not again in test mode), running the toy scenario of `toy_scenario.rs`.

mod error;
mod explore;
mod goals;
mod ops;
mod params;
mod registry;
mod run;
mod saved;
mod scenario;
mod shrink;
mod sweep;
