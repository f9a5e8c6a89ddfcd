//! The `cosmos` scenario's reachability goals ([`overcast_harness::goals`]):
//! the states where item and batch bugs hide — a transactional batch with a
//! failing operation rolled back (424), If-Match refusals, writes throttled
//! or gone and then applied, writes and batches with unknown outcomes.

use super::check::CosmosHistory;
use super::history::{Call, Outcome};
use overcast_harness::goals::{count_ops, retried_after, Goal};
use overcast_sim::history::OpRecord;

type Op = OpRecord<Call, Outcome>;

fn status(o: &Op) -> Option<u16> {
    o.result.as_ref().map(|r| r.status)
}

fn succeeded(o: &Op) -> bool {
    status(o).is_some_and(|s| (200..300).contains(&s))
}

fn is_batch(o: &Op) -> bool {
    o.call.kind == "batch"
}

/// An item call doing `op`.
fn item(o: &Op, op: &str) -> bool {
    o.call.kind == "item" && o.call.ops.first().is_some_and(|i| i.op == op)
}

fn with_if_match(o: &Op) -> bool {
    o.call.ops.iter().any(|i| i.if_match.is_some())
}

/// Some operation of the answer had `status`.
fn some_result(o: &Op, status: u16) -> bool {
    o.result
        .as_ref()
        .is_some_and(|r| r.results.iter().any(|x| x.status == status))
}

/// A batch naming one item more than once.
fn repeats_an_item(o: &Op) -> bool {
    let mut ids: Vec<&str> = o.call.ops.iter().map(|i| i.id.as_str()).collect();
    ids.sort_unstable();
    ids.windows(2).any(|w| w[0] == w[1])
}

/// The goals of `cosmos`.
pub fn goals() -> Vec<Goal<CosmosHistory>> {
    vec![
        Goal::new(
            "batch-rolled-back",
            "A transactional batch had a failing operation and the others were rolled back (424 Failed Dependency).",
            |h: &CosmosHistory| count_ops(h, |o| is_batch(o) && some_result(o, 424)),
        ),
        Goal::new(
            "batch-if-match-412",
            "A batch's If-Match operation was refused 412 and the whole batch with it.",
            |h: &CosmosHistory| count_ops(h, |o| is_batch(o) && status(o) == Some(412) && some_result(o, 424)),
        ),
        Goal::new(
            "batch-created-and-replaced",
            "A batch committed with one operation creating an item (201) beside others that changed existing ones (200).",
            |h: &CosmosHistory| {
                count_ops(h, |o| is_batch(o) && succeeded(o) && some_result(o, 201) && some_result(o, 200))
            },
        ),
        Goal::new(
            "batch-repeated-item",
            "A transactional batch named one item more than once and committed, each operation on the item as the ones before it left it; taken only on the explorer's branches.",
            |h: &CosmosHistory| count_ops(h, |o| is_batch(o) && succeeded(o) && repeats_an_item(o)),
        )
        .branch_only(),
        Goal::new(
            "batch-outcome-unknown",
            "A batch ended with an unknown outcome (all or none of it may have applied).",
            |h: &CosmosHistory| count_ops(h, |o| is_batch(o) && o.result.is_none()),
        ),
        Goal::new(
            "replace-if-match-412",
            "A replace with If-Match was refused 412: the item had changed since the ETag was read.",
            |h: &CosmosHistory| count_ops(h, |o| item(o, "replace") && with_if_match(o) && status(o) == Some(412)),
        ),
        Goal::new(
            "delete-if-match-412",
            "A delete with If-Match was refused 412.",
            |h: &CosmosHistory| count_ops(h, |o| item(o, "delete") && with_if_match(o) && status(o) == Some(412)),
        ),
        Goal::new(
            "upsert-if-match-created",
            "An upsert with If-Match created the item (201): the item was gone when it arrived.",
            |h: &CosmosHistory| count_ops(h, |o| item(o, "upsert") && with_if_match(o) && status(o) == Some(201)),
        ),
        Goal::new(
            "create-conflict",
            "A create found the item there and was refused 409.",
            |h: &CosmosHistory| count_ops(h, |o| item(o, "create") && status(o) == Some(409)),
        ),
        Goal::new(
            "read-not-modified",
            "A read with If-None-Match was answered 304 Not Modified.",
            |h: &CosmosHistory| count_ops(h, |o| item(o, "read") && status(o) == Some(304)),
        ),
        Goal::new(
            "write-outcome-unknown",
            "An item write ended with an unknown outcome.",
            |h: &CosmosHistory| count_ops(h, |o| !is_batch(o) && !o.call.is_read() && o.result.is_none()),
        ),
        Goal::new(
            "retried-write-then-conflict",
            "A write was sent again after a transient failure (410, 429, 449 or a timeout) and then refused 409 or 412: its first attempt may have applied it.",
            |h: &CosmosHistory| {
                count_ops(h, |o| {
                    !o.call.is_read()
                        && matches!(status(o), Some(409 | 412))
                        && retried_after(o, |s| matches!(s, None | Some(410 | 429 | 449)))
                })
            },
        ),
        Goal::new(
            "throttled-write-then-applied",
            "A write's first attempt was refused 449 (retry with) and a later attempt applied it.",
            |h: &CosmosHistory| count_ops(h, |o| !o.call.is_read() && succeeded(o) && retried_after(o, |s| s == Some(449))),
        ),
        Goal::new(
            "read-timeout-then-answered",
            "A read's first attempt timed out and the SDK's next attempt was answered.",
            |h: &CosmosHistory| count_ops(h, |o| o.call.is_read() && retried_after(o, |s| s.is_none())),
        ),
    ]
}
