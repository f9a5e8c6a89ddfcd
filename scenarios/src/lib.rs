//! The catalogue of overcast's scenarios: the services of the model, each
//! bound to the engine with its workload, history, checks, reference spec,
//! failure-page drawing and seeded bugs; [`CATALOGUE`] lists them for the
//! CLI, and [`bugs`] is the bug table.

#![deny(missing_docs)]

pub mod bugs;
pub mod conformance;
pub mod kit;
pub mod services;

use overcast_harness::catalogue::Catalogue;

/// The scenarios `run`, `sweep`, `bugs` and `bench` know by name, in the
/// order `overcast list` shows them.
pub static CATALOGUE: Catalogue = Catalogue {
    scenarios: &[
        &services::occ::Occ,
        &services::leases::Leases,
        &services::cosmos::Cosmos,
        &services::search::Search,
        &services::queues::Queues,
        &services::feed::Feed,
        &services::regions::Regions::COSMOS,
        &services::regions::Regions::BLOB,
    ],
};
