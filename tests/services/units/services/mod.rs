//! Tests of each service's checks, reference specs and histories.

mod feed;
mod leases;
mod occ;
mod queues;
mod regions;
