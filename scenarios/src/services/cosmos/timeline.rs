//! How a failing `cosmos` run is drawn: each client's item operations and
//! batches as bars on its lane, with what each operation returned.

use super::check::CosmosHistory;
use super::history::{Call, Outcome};
use crate::kit::words::conditions_words;
use overcast_harness::report::{call_words, draw_client_calls};
use overcast_sim::timeline::{Timeline, Tone};

/// A call in a few words: `upsert pk1/a If-Match …0003 → 200 v4`, a batch
/// as `batch pk1 [create a, replace b] → 200`.
pub fn words(call: &Call, result: Option<&Outcome>) -> (String, Tone) {
    let asked = match call.ops.as_slice() {
        [one] if call.kind == "item" => format!(
            "{} {}/{}{}",
            one.op,
            call.pk,
            one.id,
            conditions_words(one.if_match.as_deref(), one.if_none_match.as_deref())
        ),
        ops => format!(
            "batch {} [{}]",
            call.pk,
            ops.iter()
                .map(|o| format!("{} {}", o.op, o.id))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let seen = result.map(|r| {
        let mut seen = r.status.to_string();
        if let [one] = r.results.as_slice() {
            if let Some(v) = one.version {
                seen += &format!(" v{v}");
            }
        }
        (r.status, seen)
    });
    call_words(asked, seen)
}

/// Draws the history's calls, each on the lane of its node (one of `clients`).
pub fn draw(h: &CosmosHistory, clients: usize, t: &mut Timeline) {
    draw_client_calls(
        h,
        t,
        |c| overcast_harness::registry::client_node("client", c, clients),
        words,
    );
}
