//! The property only `occ` judges, with what it means.

use overcast_sim::check::Property;

/// increments: every acknowledged increment's token is in the counter's final body exactly once, every unknown one at most once, and no other token.
pub const INCREMENTS: Property = Property::new(
    "increments",
    "every acknowledged increment's token is in the counter's final body exactly once, every unknown one at most once, and no other token",
);
