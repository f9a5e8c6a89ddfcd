//! Integration tests of each service's scenario: its checks caught and quiet, and the conformance scripts (one binary, one link).

mod budget;
mod dialects;
mod explored;
mod feed;
mod leases;
mod occ;
mod queues;
mod regions;
mod scripts;
mod units;
