//! The checks of `search`: linearizability of every resource against
//! [`SearchSpec`] (E2–E5 with the dialect's statuses), ETag freshness (E1),
//! and the application's invariant of the seed's story: with
//! `onlyIfUnchanged` on, no entry added by an acknowledged update is lost.

use super::history::{Call, Outcome};
use super::spec::{Cond, SearchOp, SearchResult, SearchSpec};
use crate::kit::words::calls_account;
use crate::kit::words::lin_checked;
use overcast_sim::check::fresh::check_fresh;
use overcast_sim::check::{Checked, Checker, Evidence, Verdict, Violation};
use overcast_sim::history::History;
use overcast_sim::lin::{self, Operation};
use std::collections::{BTreeMap, BTreeSet};

/// The history `search` records (with its servers' log events, D1).
pub type SearchHistory = History<Call, Outcome, (), overcast_model::durability::LogEvent>;

/// The checker's operations, ETags turned into the versions they name.
pub fn to_lin_ops(history: &SearchHistory) -> Vec<Operation<SearchOp, SearchResult>> {
    let mut version_of: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for o in &history.ops {
        if let Some(Outcome {
            etag: Some(e),
            version: Some(v),
            ..
        }) = &o.result
        {
            version_of
                .entry((o.call.name.as_str(), e.as_str()))
                .or_insert(*v);
        }
    }
    let mut ops = Vec::new();
    for o in &history.ops {
        // `None`: an ETag no response named (cannot be placed); `Some(None)`: no header.
        let cond = |h: &Option<String>| -> Option<Option<Cond>> {
            match h.as_deref() {
                None => Some(None),
                Some("*") => Some(Some(Cond::Any)),
                Some(e) => version_of
                    .get(&(o.call.name.as_str(), e))
                    .map(|v| Some(Cond::Version(*v))),
            }
        };
        let (Some(if_match), Some(if_none_match)) =
            (cond(&o.call.if_match), cond(&o.call.if_none_match))
        else {
            continue;
        };
        let input = match o.call.op.as_str() {
            "get" => SearchOp::Get,
            "put" => SearchOp::Put {
                kind: o.call.kind.clone().unwrap_or_default(),
                entries: o.call.entries.iter().cloned().collect(),
                if_match,
                if_none_match,
            },
            "delete" => SearchOp::Delete { if_match },
            _ => continue,
        };
        let output = match &o.result {
            None => None,
            Some(r) => Some(match (r.status, &input) {
                (200, SearchOp::Get) => {
                    SearchResult::Found(r.entries.iter().cloned().collect(), r.version.unwrap_or(0))
                }
                (200 | 201 | 204, _) => SearchResult::Ok(r.version),
                (404, _) => SearchResult::NotFound,
                (412, _) => SearchResult::PreconditionFailed,
                (400, _) => SearchResult::BadRequest,
                (409, _) => SearchResult::Busy,
                // Transient statuses surfaced by the SDK: not executed.
                _ => continue,
            }),
        };
        ops.push(Operation {
            id: o.id,
            client: o.client as u64,
            key: o.call.name.clone(),
            input,
            invoke: o.invoke_ns as i64,
            ret: if output.is_some() {
                o.return_ns.map(|r| r as i64)
            } else {
                None
            },
            output,
        });
    }
    ops
}

/// Linearizability of every resource against [`SearchSpec`].
pub struct Linearizability {
    /// The checker's options.
    pub options: lin::Options,
}

impl Checker<SearchHistory> for Linearizability {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::kit::properties::LINEARIZABILITY]
    }

    fn check(&self, history: &SearchHistory) -> Checked {
        let report = lin::check(&SearchSpec, &to_lin_ops(history), &self.options);
        lin_checked(&report, "overcast search", &crate::kit::words::same_op)
    }
}

/// E1: every successful PUT's ETag is new for its resource.
pub struct EtagFreshness;

impl Checker<SearchHistory> for EtagFreshness {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::kit::properties::E1]
    }

    fn check(&self, history: &SearchHistory) -> Checked {
        let produced = history.ops.iter().filter_map(|o| match &o.result {
            Some(Outcome {
                status: 200 | 201,
                etag: Some(e),
                ..
            }) if o.call.op == "put" => Some((o.call.name.as_str(), e.as_str(), o.id)),
            _ => None,
        });
        let found = check_fresh("E1", produced).map(|v| {
            let account = account(
                history,
                &v.ops,
                "An ETag given twice".to_string(),
                "The calls on the resource from the first update that got the ETag to the one that got it again: an ETag is new with every update.".to_string(),
            );
            v.with_evidence(account)
        });
        Checked::new(Verdict::from_violations(found.into_iter().collect()))
    }
}

/// [`calls_account`] in this service's words.
fn account(history: &SearchHistory, named: &[u64], title: String, lead: String) -> Evidence {
    calls_account(
        &history.ops,
        named,
        |c, r| super::history::words(c, r).0,
        title,
        lead,
    )
}

/// The seed's invariant, for resources no one deletes: once an update that
/// added entry `f` is acknowledged, every definition returned by a call
/// invoked after that (a GET, or a successful PUT) contains `f`.
pub struct NoLostField;

impl Checker<SearchHistory> for NoLostField {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::services::search::properties::LOST_FIELD]
    }

    fn check(&self, history: &SearchHistory) -> Checked {
        Checked::new(Verdict::from_violations(
            lost_field(history).into_iter().collect(),
        ))
    }
}

fn lost_field(history: &SearchHistory) -> Option<Violation> {
    let deleted: BTreeSet<&str> = history
        .ops
        .iter()
        .filter(|o| o.call.op == "delete")
        .map(|o| o.call.name.as_str())
        .collect();
    // Acknowledged additions: (resource, entry, op, return time).
    let added: Vec<(&str, &str, u64, u64)> = history
        .ops
        .iter()
        .filter_map(|o| match (&o.call.added, &o.result, o.return_ns) {
            (
                Some(f),
                Some(Outcome {
                    status: 200 | 201, ..
                }),
                Some(ret),
            ) => Some((o.call.name.as_str(), f.as_str(), o.id, ret)),
            _ => None,
        })
        .filter(|a| !deleted.contains(a.0))
        .collect();
    for o in &history.ops {
        let Some(r) = &o.result else { continue };
        let shows_definition = match o.call.op.as_str() {
            "get" => r.status == 200,
            "put" => matches!(r.status, 200 | 201),
            _ => false,
        };
        if !shows_definition {
            continue;
        }
        for (name, f, by, ret) in &added {
            if *name == o.call.name && o.invoke_ns > *ret && !r.entries.iter().any(|e| e == f) {
                return Some(
                    Violation::new(
                        "lost-field",
                        format!(
                            "{name}: op {by} added the field {f} and was acknowledged, but op {} (invoked later) returned a definition without it",
                            o.id
                        ),
                    )
                    .with_ops([o.id, *by])
                    .with_evidence(account(
                        history,
                        &[o.id, *by],
                        format!("The field {f} of {name}"),
                        format!("The calls on {name} from the update that added {f} to the read without it: once acknowledged, an added field stays."),
                    )),
                );
            }
        }
    }
    None
}
