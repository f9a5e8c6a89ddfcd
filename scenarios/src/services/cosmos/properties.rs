//! The property only `cosmos` judges, with what it means.

use overcast_sim::check::Property;

/// batch-atomicity: a rolled-back transactional batch leaves no trace, and no reader sees part of a committed one.
pub const BATCH_ATOMICITY: Property = Property::new(
    "batch-atomicity",
    "a rolled-back transactional batch leaves no trace, and no reader sees part of a committed one",
);
