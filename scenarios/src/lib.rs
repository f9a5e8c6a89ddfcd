//! The bridge between the model and the engine: scenarios, generators,
//! workloads, the reference specs the checkers hold the model to, and the
//! list of seeded bugs.

pub mod bridge;
pub mod bugs;
pub mod check_file;
pub mod cosmos;
pub mod dialects;
pub mod feed;
pub mod hunt;
pub mod leases;
pub mod occ;
pub mod ops;
pub mod queues;
pub mod regions;
pub mod registry;
pub mod report;
pub mod run;
pub mod saved;
pub mod scenario;
pub mod script;
pub mod search;
pub mod shrink;
pub mod sweep;
