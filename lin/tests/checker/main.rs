//! Integration tests of the checker: the recorded corpora, appends, explanations, writes with unknown outcomes and the value view (one binary, one link).

mod appends;
mod corpus;
mod explain;
mod unique_values;
mod units;
mod unknown_writes;
mod value_view;
