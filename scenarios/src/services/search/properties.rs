//! The property only `search` judges, with what it means.

use overcast_sim::check::Property;

/// lost-field: once an update that added an entry to a Search definition is acknowledged, every later read of the definition contains it.
pub const LOST_FIELD: Property = Property::new(
    "lost-field",
    "once an update that added an entry to a Search definition is acknowledged, every later read of the definition contains it",
);
