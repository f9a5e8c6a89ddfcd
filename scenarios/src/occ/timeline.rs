//! How a failing `occ` run is drawn: each client's calls as bars on its
//! lane, labelled with the item, the conditions and what came back.

use super::check::OccHistory;
use super::history::{Call, Outcome};
use crate::registry::status_tone;
use crate::report::{client_lane, conditions_words, short_etag};
use overcast_sim::timeline::{Timeline, Tone};

/// A call in a few words: `put k3 If-Match …0001 → 412`.
pub fn words(call: &Call, result: Option<&Outcome>) -> (String, Tone) {
    let asked = format!(
        "{} {}{}",
        call.op,
        call.item,
        conditions_words(call.if_match.as_deref(), call.if_none_match.as_deref())
    );
    match result {
        None => (asked, Tone::Unknown),
        Some(Outcome::TimedOut) => (format!("{asked} → timed out"), Tone::Error),
        Some(Outcome::Response {
            status,
            etag,
            version,
            ..
        }) => {
            let mut seen = status.to_string();
            if let Some(v) = version {
                seen += &format!(" v{v}");
            }
            if let Some(e) = etag {
                seen += &format!(" {}", short_etag(e));
            }
            (format!("{asked} → {seen}"), status_tone(u64::from(*status)))
        }
    }
}

/// Draws the history's calls.
pub fn draw(h: &OccHistory, t: &mut Timeline) {
    t.add_ops(
        &h.ops,
        |o| client_lane(o.client),
        |o| words(&o.call, o.result.as_ref()),
    );
}
