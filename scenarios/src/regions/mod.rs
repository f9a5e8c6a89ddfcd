//! The regions scenario: replicated partitions across a write region and
//! read regions, consistency levels per request, region outages and primary
//! failover (issue 13). This folder holds the history records and the
//! checkers for session guarantees (R5), convergence, durability and routing
//! bounds (R6).

pub mod converge;
pub mod durable;
pub mod history;
pub mod routing;
pub mod session;
