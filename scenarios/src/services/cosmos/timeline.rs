//! How a failing `cosmos` run is drawn: each client's item operations and
//! batches as bars on its lane, with what each operation returned.

use super::check::CosmosHistory;
use super::history::words;
use crate::kit::dialects::StoreRole;
use overcast_harness::report::draw_client_calls;
use overcast_sim::timeline::Timeline;

/// Draws the history's calls, each on the lane of its node (one of `clients`).
pub fn draw(h: &CosmosHistory, clients: usize, t: &mut Timeline) {
    draw_client_calls(
        h,
        t,
        |c| overcast_harness::registry::client_node(StoreRole::Client, c, clients),
        words,
    );
}
