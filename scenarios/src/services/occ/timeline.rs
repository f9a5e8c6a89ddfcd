//! How a failing `occ` run is drawn: each client's calls as bars on its
//! lane, labelled with the item, the conditions and what came back.

use super::check::OccHistory;
use super::history::{Call, Outcome};
use crate::kit::words::{conditions_words, short_etag};
use crate::services::occ::OccRole;
use overcast_harness::report::{call_words, draw_client_calls};
use overcast_sim::timeline::{Timeline, Tone};

/// A call in a few words: `put k3 If-Match …0001 → 412`.
pub fn words(call: &Call, result: Option<&Outcome>) -> (String, Tone) {
    let asked = format!(
        "{} {}{}",
        call.op,
        call.item,
        conditions_words(call.if_match.as_deref(), call.if_none_match.as_deref())
    );
    let seen = result.map(|r| match r {
        // A read's timeouts ran out (older histories): shown as the 503 it is now.
        Outcome::TimedOut => (503, "timed out".to_string()),
        Outcome::Response {
            status,
            etag,
            version,
            ..
        } => {
            let mut seen = status.to_string();
            if let Some(v) = version {
                seen += &format!(" v{v}");
            }
            if let Some(e) = etag {
                seen += &format!(" {}", short_etag(e));
            }
            (*status, seen)
        }
    });
    call_words(asked, seen)
}

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
