//! How a failing `search` run is drawn: each client's definition reads and
//! updates as bars on its lane, with the entry each update added.

use super::check::SearchHistory;
use super::history::{Call, Outcome};
use crate::kit::words::conditions_words;
use overcast_harness::report::{call_words, draw_client_calls};
use overcast_sim::timeline::{Timeline, Tone};

/// A call in a few words: `put hotels +e7 If-Match …0002 → 412`.
pub fn words(call: &Call, result: Option<&Outcome>) -> (String, Tone) {
    let added = call
        .added
        .as_ref()
        .map_or(String::new(), |a| format!(" +{a}"));
    let asked = format!(
        "{} {}{added}{}",
        call.op,
        call.name,
        conditions_words(call.if_match.as_deref(), call.if_none_match.as_deref())
    );
    let seen = result.map(|r| {
        let mut seen = r.status.to_string();
        if let Some(v) = r.version {
            seen += &format!(" v{v} ({} entries)", r.entries.len());
        }
        (r.status, seen)
    });
    call_words(asked, seen)
}

/// Draws the history's calls, each on the lane of its node (one of `clients`).
pub fn draw(h: &SearchHistory, clients: usize, t: &mut Timeline) {
    draw_client_calls(
        h,
        t,
        |c| overcast_harness::registry::client_node("client", c, clients),
        words,
    );
}
