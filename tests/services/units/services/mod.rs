//! Tests of each service's checks, reference specs and histories.

mod occ;
mod regions;
