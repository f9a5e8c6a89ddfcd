//! What every other part of the model shares and nothing of it depends on:
//! the seeded bugs, the conditional-request rules, the environment a node is
//! handed (clock, log device, network policy), item keys, and the Cosmos
//! sub-statuses.

pub mod bugs;
pub mod conditions;
pub mod env;
pub mod keys;
pub mod sub_status;
