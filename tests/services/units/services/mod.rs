//! Tests of each service's checks, reference specs and histories.

mod cosmos;
mod feed;
mod leases;
mod occ;
mod queues;
mod regions;
mod search;
