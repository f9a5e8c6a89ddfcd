//! How a failing `regions` (or `occ-replicated`) run is drawn: every call on
//! its client node's lane in the service's words (`upsert k0 "client-2.59"
//! strong → 201 …000B from r0/replica-0`), each replica's announcements as
//! primary as marks on its lane. Crashes, pauses, partitions, isolations and
//! clocks come from the world's part of the page; what a violation names is
//! marked from the violation itself.

use super::history::{RegionCall, RegionEvent, RegionOutcome, RegionsHistory};
use crate::kit::words::short_etag;
use crate::services::regions::RegionsRole;
use overcast_harness::registry::client_node;
use overcast_harness::report::call_words;
use overcast_sim::timeline::{node_lane, secs, Mark, MarkKind, Timeline, Tone};

/// A call in a few words, with what it was answered.
pub fn words(call: &RegionCall, result: Option<&RegionOutcome>) -> (String, Tone) {
    let mut asked = format!("{} {}", call.op, call.item);
    if let Some(b) = &call.body {
        asked += &format!(" \"{b}\"");
    }
    if let Some(m) = &call.if_match {
        asked += &format!(" If-Match {}", short_etag(m));
    }
    asked += &format!(" {}", call.consistency.word());
    let seen = result.map(|r| match r {
        RegionOutcome::Ok {
            status,
            etag,
            body,
            region,
            node,
            ..
        } => {
            let mut seen = status.to_string();
            if call.op == "read" {
                if let Some(b) = body {
                    seen += &format!(" \"{b}\"");
                }
            }
            if let Some(e) = etag {
                seen += &format!(" {}", short_etag(e));
            }
            seen += &format!(" from {region}/{node}");
            (*status, seen)
        }
        RegionOutcome::Failed {
            status,
            sub_status,
            region,
            node,
        } => {
            let mut seen = if *status == 0 {
                "no status (the SDK gave up)".to_string()
            } else if *sub_status != 0 {
                format!("{status}/{sub_status}")
            } else {
                status.to_string()
            };
            if let (Some(region), Some(node)) = (region, node) {
                seen += &format!(" from {region}/{node}");
            }
            (if *status == 0 { 503 } else { *status }, seen)
        }
    });
    call_words(asked, seen)
}

/// Draws the calls on their client nodes' lanes (`clients` client nodes)
/// and the replicas' announcements as primary.
pub fn draw(h: &RegionsHistory, clients: usize, t: &mut Timeline) {
    t.add_ops(
        &h.ops,
        |o| client_node(RegionsRole::Client, o.client, clients),
        |o| words(&o.call, o.result.as_ref()),
    );
    for e in &h.node_events {
        if let RegionEvent::Primary { partition, term } = &e.event {
            t.marks.push(Mark {
                lane: node_lane(&e.node).to_string(),
                at_ns: e.at_ns,
                label: format!("primary p{partition} t{term}"),
                detail: format!(
                    "{} announced itself primary of partition {partition} for term {term} at {}",
                    e.node,
                    secs(e.at_ns)
                ),
                kind: MarkKind::Event,
                highlight: false,
            });
        }
    }
}
