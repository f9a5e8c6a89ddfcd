//! How a failing `occ` run is drawn: each client's calls as bars on its
//! lane, labelled with the item, the conditions and what came back.

use super::check::OccHistory;
use super::history::words;
use crate::services::occ::OccRole;
use overcast_harness::report::draw_client_calls;
use overcast_sim::timeline::Timeline;

/// Draws the history's calls, each on the lane of its node (one of `clients`,
/// or the probe's).
pub fn draw(h: &OccHistory, clients: usize, t: &mut Timeline) {
    draw_client_calls(
        h,
        t,
        |c| {
            if super::workload::is_probe(c) {
                overcast_sim::world::Topology::node_name(OccRole::Probe, 0)
            } else {
                overcast_harness::registry::client_node(OccRole::Client, c, clients)
            }
        },
        words,
    );
}
