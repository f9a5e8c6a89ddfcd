//! Checkers that judge a history. Each violation names the property it breaks
//! (the SPEC ids: E1, R1, ...) and says in words what went wrong.

pub mod fresh;
pub mod retry;

use serde::{Deserialize, Serialize};

/// One broken property.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// The property id, e.g. `E1`, `R1`, `linearizability`.
    pub property: String,
    /// What went wrong, in one or a few sentences.
    pub message: String,
    /// Operation ids involved, for the report.
    #[serde(default)]
    pub ops: Vec<u64>,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.property, self.message)
    }
}
