//! How a failing `search` run is drawn: each client's definition reads and
//! updates as bars on its lane, with the entry each update added.

use super::check::SearchHistory;
use super::history::{Call, Outcome};
use crate::registry::status_tone;
use crate::report::{client_lane, conditions_words};
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
    match result {
        None => (asked, Tone::Unknown),
        Some(r) => {
            let mut seen = r.status.to_string();
            if let Some(v) = r.version {
                seen += &format!(" v{v} ({} entries)", r.entries.len());
            }
            (
                format!("{asked} → {seen}"),
                status_tone(u64::from(r.status)),
            )
        }
    }
}

/// Draws the history's calls.
pub fn draw(h: &SearchHistory, t: &mut Timeline) {
    t.add_ops(
        &h.ops,
        |o| client_lane(o.client),
        |o| words(&o.call, o.result.as_ref()),
    );
}
