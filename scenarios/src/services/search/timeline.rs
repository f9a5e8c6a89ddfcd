//! How a failing `search` run is drawn: each client's definition reads and
//! updates as bars on its lane, with the entry each update added.

use super::check::SearchHistory;
use super::history::words;
use crate::kit::dialects::StoreRole;
use overcast_harness::report::draw_client_calls;
use overcast_sim::timeline::Timeline;

/// Draws the history's calls, each on the lane of its node (one of `clients`).
pub fn draw(h: &SearchHistory, clients: usize, t: &mut Timeline) {
    draw_client_calls(
        h,
        t,
        |c| overcast_harness::registry::client_node(StoreRole::Client, c, clients),
        words,
    );
}
