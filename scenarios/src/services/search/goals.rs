//! The `search` scenario's reachability goals ([`overcast_harness::goals`]):
//! the states where Azure AI Search ETag bugs hide — an onlyIfUnchanged
//! update refused 412, a create-only put finding the resource there,
//! concurrent updates refused 409, updates with unknown outcomes, retried
//! updates refused.

use super::check::SearchHistory;
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

/// A put with `If-Match: <etag>` (onlyIfUnchanged), not `*`.
fn only_if_unchanged(o: &Op) -> bool {
    o.call.if_match.as_deref().is_some_and(|m| m != "*")
}

/// The goals of `search`.
pub fn goals() -> Vec<Goal<SearchHistory>> {
    vec![
        Goal::new(
            "only-if-unchanged-conflict",
            "An onlyIfUnchanged update (If-Match with the ETag read) was refused 412: another update came first.",
            |h: &SearchHistory| count_ops(h, |o| o.call.op == "put" && only_if_unchanged(o) && status(o) == Some(412)),
        ),
        Goal::new(
            "only-if-unchanged-applied",
            "An onlyIfUnchanged update of the application's read-modify-write applied.",
            |h: &SearchHistory| {
                count_ops(h, |o| o.call.op == "put" && o.call.added.is_some() && only_if_unchanged(o) && succeeded(o))
            },
        ),
        Goal::new(
            "create-only-conflict",
            "A create-only put (If-None-Match: *) found the resource there and was refused 412.",
            |h: &SearchHistory| {
                count_ops(h, |o| o.call.op == "put" && o.call.if_none_match.as_deref() == Some("*") && status(o) == Some(412))
            },
        ),
        Goal::new(
            "update-refused-409",
            "An update was refused 409 (a concurrent change of the definition).",
            |h: &SearchHistory| count_ops(h, |o| o.call.op == "put" && status(o) == Some(409)),
        ),
        Goal::new(
            "delete-if-match-412",
            "A delete with If-Match was refused 412.",
            |h: &SearchHistory| count_ops(h, |o| o.call.op == "delete" && only_if_unchanged(o) && status(o) == Some(412)),
        ),
        Goal::new(
            "delete-refused-409",
            "A delete was refused 409.",
            |h: &SearchHistory| count_ops(h, |o| o.call.op == "delete" && status(o) == Some(409)),
        ),
        Goal::new(
            "update-outcome-unknown",
            "An update of the application's read-modify-write ended with an unknown outcome.",
            |h: &SearchHistory| count_ops(h, |o| o.call.op == "put" && o.call.added.is_some() && o.result.is_none()),
        ),
        Goal::new(
            "retried-update-refused-412",
            "A conditional put or delete was sent again after a transient failure (410, 429, 449 or a timeout) and then refused 412: its first attempt may have applied it.",
            |h: &SearchHistory| {
                count_ops(h, |o| {
                    o.call.op != "get"
                        && status(o) == Some(412)
                        && retried_after(o, |s| matches!(s, None | Some(410 | 429 | 449)))
                })
            },
        ),
        Goal::new(
            "throttled-write-then-applied",
            "A put or delete was throttled (429 or 449) and a later attempt applied it.",
            |h: &SearchHistory| {
                count_ops(h, |o| o.call.op != "get" && succeeded(o) && retried_after(o, |s| matches!(s, Some(429 | 449))))
            },
        ),
        Goal::new(
            "get-after-delete-404",
            "A get found no resource (404): deleted or never created.",
            |h: &SearchHistory| count_ops(h, |o| o.call.op == "get" && status(o) == Some(404)),
        ),
        Goal::new(
            "created-if-none-match",
            "A create-only put (If-None-Match: *) created the resource (201).",
            |h: &SearchHistory| {
                count_ops(h, |o| o.call.op == "put" && o.call.if_none_match.as_deref() == Some("*") && status(o) == Some(201))
            },
        ),
        Goal::new(
            "get-timeout-then-answered",
            "A get's first attempt timed out and the SDK's next attempt was answered.",
            |h: &SearchHistory| count_ops(h, |o| o.call.op == "get" && retried_after(o, |s| s.is_none())),
        ),
    ]
}
