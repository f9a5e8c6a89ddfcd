//! Tests of the scenarios crate's parts, one module per source file of `scenarios/src` (they live here, not in the crate, so that the crate is compiled once, not again in test mode).

mod bugs;
mod conformance;
mod kit;
mod services;
