//! The catalogue of overcast's scenarios: the services of the model, each
//! bound to the engine with its workload, history, checks, reference spec,
//! failure-page drawing and seeded bugs; [`CATALOGUE`] lists them for the
//! CLI, and [`bugs`] is the bug table.

pub mod bridge;
pub mod bugs;
pub mod check_file;
pub mod cosmos;
pub mod dialects;
pub mod feed;
pub mod kit;
pub mod leases;
pub mod occ;
pub mod queues;
pub mod regions;
pub mod script;
pub mod search;

use overcast_harness::catalogue::Catalogue;

/// The scenarios `run`, `sweep`, `bugs` and `bench` know by name, in the
/// order `overcast list` shows them.
pub static CATALOGUE: Catalogue = Catalogue {
    scenarios: &[
        &occ::Occ,
        &leases::Leases,
        &cosmos::Cosmos,
        &search::Search,
        &queues::Queues,
        &feed::Feed,
        &regions::Regions::COSMOS,
        &regions::Regions::BLOB,
    ],
};
