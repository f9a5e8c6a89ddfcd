//! Durability: no write acknowledged to a client (2xx) is lost. A write is
//! lost when
//! - a later write succeeded with `If-Match` on the version the lost write
//!   replaced (a fork in the If-Match chain: the item was back at that
//!   version after the acknowledgement), or
//! - the final primary's state of the item (after heal and quiet) is a
//!   version ordered before the write's, or no item while no delete can
//!   have come after the write.
//!
//! A write neither found nor ordered against the final state (concurrent
//! blind writes) is not judged and is counted in the note; so are items of
//! partitions that did not settle (see [`super::converge::settled_primary`]).

use super::converge::{finals, settled_primary};
use super::history::{
    item_orders, may_have_applied, ItemOrder, Order, RegionEvent, RegionOp, RegionsHistory,
};
use overcast_sim::check::{Checked, Checker, Verdict, Violation};
use overcast_sim::timeline::secs;
use std::collections::BTreeMap;

/// The durability checker.
#[derive(Clone, Copy, Debug, Default)]
pub struct Durability;

/// An item's state in its final primary: the ETag, or `None` for no item.
struct FinalOfItem {
    etag: Option<String>,
    /// "primary server-0 (partition 1, term 3)".
    who: String,
    partition: Option<u32>,
}

impl Checker<RegionsHistory> for Durability {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::services::regions::properties::DURABILITY]
    }

    fn check(&self, history: &RegionsHistory) -> Checked {
        let orders = item_orders(history);
        let finals_by_item = final_states(history);
        let mut violations = Vec::new();
        let (mut acked, mut unjudged, mut unsettled) = (0, 0, 0);
        for op in &history.ops {
            if !op.call.is_write() || !op.result.as_ref().is_some_and(|r| r.is_success()) {
                continue;
            }
            acked += 1;
            let order = &orders[&op.call.item];
            if let Some(msg) = forked(op, history) {
                violations.push(lost(op, &msg, None, history));
                continue;
            }
            let Some(fin) = finals_by_item.get(&op.call.item) else {
                unsettled += 1;
                continue;
            };
            match judge_final(op, fin, order, history) {
                Judged::Kept => {}
                Judged::Unordered => unjudged += 1,
                Judged::Lost(msg) => violations.push(lost(op, &msg, fin.partition, history)),
            }
        }
        let mut note = format!("{acked} acknowledged writes");
        if unjudged > 0 {
            note.push_str(&format!(
                "; {unjudged} not judged (not ordered against the final state)"
            ));
        }
        if unsettled > 0 {
            note.push_str(&format!(
                "; {unsettled} judged by forks only (their partition did not settle or left no final state)"
            ));
            if let Some(why) = super::converge::refusals(history) {
                note.push_str(&format!(" ({why})"));
            }
        }
        Checked::new(Verdict::from_violations(violations))
            .with_note(note)
            .partly(unjudged + unsettled > 0)
    }
}

/// The final primary state of every item whose partition settled. An item
/// no settled primary holds is "no item" only when every partition that
/// reported settled (else its partition is unknown and it is left out).
fn final_states(history: &RegionsHistory) -> BTreeMap<String, FinalOfItem> {
    let finals = finals(history);
    let mut out = BTreeMap::new();
    let mut home: BTreeMap<&str, u32> = BTreeMap::new();
    let mut all_settled = !finals.is_empty();
    let mut primaries = Vec::new();
    for (p, replicas) in &finals {
        for f in replicas.values() {
            for i in f.items {
                home.entry(i.item.as_str()).or_insert(*p);
            }
        }
        match settled_primary(*p, replicas) {
            Ok(primary) => primaries.push((*p, primary)),
            Err(_) => all_settled = false,
        }
    }
    for (p, primary) in &primaries {
        let who = format!(
            "primary {} (partition {p}, term {})",
            primary.node, primary.term
        );
        for i in primary.items {
            out.insert(
                i.item.clone(),
                FinalOfItem {
                    etag: Some(i.etag.clone()),
                    who: who.clone(),
                    partition: Some(*p),
                },
            );
        }
        for (item, hp) in &home {
            if hp == p && !out.contains_key(*item) {
                out.insert(
                    item.to_string(),
                    FinalOfItem {
                        etag: None,
                        who: who.clone(),
                        partition: Some(*p),
                    },
                );
            }
        }
    }
    if all_settled {
        for op in &history.ops {
            out.entry(op.call.item.clone())
                .or_insert_with(|| FinalOfItem {
                    etag: None,
                    who: "every settled primary".into(),
                    partition: None,
                });
        }
    }
    out
}

/// A later write (acknowledged, or seen by a read) succeeded with If-Match on
/// the version this acknowledged write replaced, after this write was
/// acknowledged: the item had gone back to that version. Creates: a later
/// create succeeded after this one was acknowledged with no delete that may
/// have come between.
fn forked(op: &RegionOp, history: &RegionsHistory) -> Option<String> {
    let ret = op.return_ns?;
    let same_item = || history.ops.iter().filter(|o| o.call.item == op.call.item);
    if let Some(p) = op.call.if_match.as_deref().filter(|p| *p != "*") {
        let other = same_item().find(|o| {
            o.id != op.id
                && o.invoke_ns > ret
                && o.call.is_write()
                && o.call.if_match.as_deref() == Some(p)
                && o.result.as_ref().is_some_and(|r| r.is_success())
        })?;
        return Some(format!(
            "write op {} ({}) invoked at {} succeeded with If-Match {p}, the version this write had replaced",
            other.id,
            other.call.op,
            secs(other.invoke_ns)
        ));
    }
    if op.call.op == "create" {
        let other = same_item().find(|o| {
            o.id != op.id
                && o.invoke_ns > ret
                && o.call.op == "create"
                && o.result.as_ref().is_some_and(|r| r.is_success())
        })?;
        let other_ret = other.return_ns.unwrap_or(u64::MAX);
        let deleted_between = same_item().any(|d| {
            d.call.op == "delete"
                && may_have_applied(d)
                && d.invoke_ns < other_ret
                && d.return_ns.is_none_or(|r| r > op.invoke_ns)
        });
        if !deleted_between {
            return Some(format!(
                "create op {} invoked at {} succeeded again with no delete that could have come between",
                other.id,
                secs(other.invoke_ns)
            ));
        }
    }
    None
}

enum Judged {
    Kept,
    Unordered,
    Lost(String),
}

fn judge_final(
    op: &RegionOp,
    fin: &FinalOfItem,
    order: &ItemOrder,
    history: &RegionsHistory,
) -> Judged {
    let mine = if op.call.op == "delete" {
        order.deleted(op.id)
    } else {
        op.result
            .as_ref()
            .and_then(|r| r.etag())
            .and_then(|e| order.etag(e))
    };
    let Some(mine) = mine else {
        return Judged::Unordered;
    };
    match &fin.etag {
        Some(e) => {
            let Some(f) = order.etag(e) else {
                return Judged::Unordered;
            };
            match order.order(f, mine) {
                Order::Same | Order::After(_) => Judged::Kept,
                Order::Before(basis) => Judged::Lost(format!(
                    "the final {} holds ETag {e}, which comes before it {}",
                    fin.who,
                    basis.words()
                )),
                Order::Unordered | Order::Contradictory => Judged::Unordered,
            }
        }
        None if op.call.op == "delete" => Judged::Kept,
        None => {
            let later_delete = history.ops.iter().any(|d| {
                d.call.item == op.call.item
                    && d.call.op == "delete"
                    && may_have_applied(d)
                    && d.return_ns.is_none_or(|r| r > op.invoke_ns)
            });
            if later_delete {
                Judged::Kept
            } else {
                Judged::Lost(format!(
                    "{} holds no item {} at the end, and no delete can have come after the write",
                    fin.who, op.call.item
                ))
            }
        }
    }
}

fn lost(op: &RegionOp, why: &str, partition: Option<u32>, history: &RegionsHistory) -> Violation {
    let ret = op.return_ns.unwrap_or(0);
    let elected: Vec<String> = history
        .node_events
        .iter()
        .filter(|e| e.at_ns > ret)
        .filter_map(|e| match &e.event {
            RegionEvent::Primary { partition: p, term } if partition.is_none_or(|q| q == *p) => {
                Some(format!(
                    "{} (partition {p}, term {term}) at {}",
                    e.node,
                    secs(e.at_ns)
                ))
            }
            _ => None,
        })
        .collect();
    let what = match (&op.call.body, op.result.as_ref().and_then(|r| r.etag())) {
        (Some(b), Some(e)) => format!("body \"{b}\", acknowledged with ETag {e}"),
        _ => "acknowledged".to_string(),
    };
    Violation::new(
        "durability",
        format!(
            "item {}: {} op {} by {} ({what}{}) at {} was lost: {why}; primaries elected since: {}",
            op.call.item,
            op.call.op,
            op.id,
            super::history::session_of(op),
            op.call
                .if_match
                .as_deref()
                .map(|p| format!(", If-Match {p}"))
                .unwrap_or_default(),
            secs(ret),
            if elected.is_empty() {
                "none".to_string()
            } else {
                elected.join(", ")
            }
        ),
    )
    .with_ops([op.id])
}
