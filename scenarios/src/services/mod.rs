//! The services of the model, one folder each: parameters, workload,
//! history, checks, reference spec, failure-page drawing and tests. No
//! service's folder names another's; what they share is in [`crate::kit`].

pub mod cosmos;
pub mod feed;
pub mod leases;
pub mod occ;
pub mod queues;
pub mod regions;
pub mod search;
