//! The checks of `cosmos`: linearizability of every item against
//! [`CosmosItemSpec`] (E2–E5 with the dialect's statuses; a batch's
//! operations are placed on their items), `_etag` freshness (E1), and batch
//! atomicity: a rolled-back batch leaves no trace, and no reader sees part
//! of a committed batch.

use super::history::{item_key, Call, ItemCall, OpOutcome, Outcome};
use super::spec::{CosmosItemSpec, CosmosOp, CosmosResult};
use crate::kit::words::calls_account;
use crate::kit::words::lin_checked;
use overcast_sim::check::fresh::check_fresh;
use overcast_sim::check::{Checked, Checker, Evidence, Verdict, Violation};
use overcast_sim::history::History;
use overcast_sim::lin::{self, Operation};
use std::collections::BTreeMap;

/// The history `cosmos` records (with its servers' log events, D1).
pub type CosmosHistory = History<Call, Outcome, (), overcast_model::durability::LogEvent>;

/// A batch's operations get checker ids `op id * BATCH_SLOTS + index`.
const BATCH_SLOTS: u64 = 64;

/// One item operation of the history with what it returned, if known.
struct Placed<'a> {
    op: u64,
    index: usize,
    key: String,
    call: &'a ItemCall,
    /// `None`: unknown outcome. Otherwise the operation's own result (for a
    /// transient status surfaced by the SDK, `None` inside).
    result: Option<Option<&'a OpOutcome>>,
}

fn placed(history: &CosmosHistory) -> Vec<Placed<'_>> {
    let mut out = Vec::new();
    for o in &history.ops {
        for (i, c) in o.call.ops.iter().enumerate() {
            out.push(Placed {
                op: o.id,
                index: i,
                key: item_key(&o.call.pk, &c.id),
                call: c,
                result: o.result.as_ref().map(|r| r.results.get(i)),
            });
        }
    }
    out
}

/// The version each (item, `_etag`) names, from results that carried both.
fn versions(history: &CosmosHistory) -> BTreeMap<(String, String), u64> {
    let mut map = BTreeMap::new();
    for p in placed(history) {
        if let Some(Some(OpOutcome {
            etag: Some(e),
            version: Some(v),
            ..
        })) = p.result
        {
            map.entry((p.key.clone(), e.clone())).or_insert(*v);
        }
    }
    map
}

/// The checker's operations: every item operation, batches split on their
/// items; a batch's operations on an item it names more than once are one
/// operation ([`CosmosOp::InOrder`]), those the batch reached (up to its
/// failing one), so each is judged after the ones before it.
pub fn to_lin_ops(history: &CosmosHistory) -> Vec<Operation<CosmosOp, CosmosResult>> {
    let version_of = versions(history);
    let times: BTreeMap<u64, (u64, Option<u64>, usize)> = history
        .ops
        .iter()
        .map(|o| (o.id, (o.invoke_ns, o.return_ns, o.client)))
        .collect();
    // Where a failed batch failed: the first operation not answered 424.
    let failed_at: BTreeMap<u64, usize> = history
        .ops
        .iter()
        .filter_map(|o| {
            let r = o.result.as_ref()?;
            if (200..300).contains(&r.status) {
                return None;
            }
            Some((o.id, r.results.iter().position(|x| x.status != 424)?))
        })
        .collect();
    let placed = placed(history);
    // Each batch's operations by item, in the batch's order.
    let mut by_item: BTreeMap<(u64, &str), Vec<usize>> = BTreeMap::new();
    for (k, p) in placed.iter().enumerate() {
        by_item.entry((p.op, p.key.as_str())).or_default().push(k);
    }
    let operation = |p: &Placed<'_>, input, output: Option<CosmosResult>| {
        let (invoke, ret, client) = times[&p.op];
        Operation {
            id: p.op * BATCH_SLOTS + p.index as u64,
            client: client as u64,
            key: p.key.clone(),
            input,
            invoke: invoke as i64,
            ret: if output.is_some() {
                ret.map(|r| r as i64)
            } else {
                None
            },
            output,
        }
    };
    let mut ops = Vec::new();
    for (k, p) in placed.iter().enumerate() {
        let same_item = &by_item[&(p.op, p.key.as_str())];
        let reached: Vec<usize> = same_item
            .iter()
            .copied()
            .filter(|&j| failed_at.get(&p.op).is_none_or(|&at| placed[j].index <= at))
            .collect();
        let converted: Option<Vec<(CosmosOp, Option<CosmosResult>)>> = reached
            .iter()
            .map(|&j| lin_op(&placed[j], &version_of))
            .collect();
        match converted {
            // The batch's steps on the item, judged as one, at its first.
            Some(steps) if reached.len() > 1 => {
                if reached[0] != k {
                    continue;
                }
                let unknown = steps.iter().any(|(_, out)| out.is_none());
                let (inputs, outputs): (Vec<_>, Vec<_>) = steps.into_iter().unzip();
                let output = (!unknown)
                    .then(|| CosmosResult::InOrder(outputs.into_iter().flatten().collect()));
                ops.push(operation(p, CosmosOp::InOrder(inputs), output));
            }
            // Alone on its item, or a step the checker cannot state: as it is.
            _ => {
                if let Some((input, output)) = lin_op(p, &version_of) {
                    ops.push(operation(p, input, output));
                }
            }
        }
    }
    ops
}

/// One item operation in the checker's terms and what it returned (`None`:
/// unknown), or `None` when it cannot be stated: an ETag naming no version
/// the history shows, or a transient status the SDK surfaced.
fn lin_op(
    p: &Placed<'_>,
    version_of: &BTreeMap<(String, String), u64>,
) -> Option<(CosmosOp, Option<CosmosResult>)> {
    let version = |e: &Option<String>| {
        e.as_ref()
            .and_then(|e| version_of.get(&(p.key.clone(), e.clone())).copied())
    };
    let c = p.call;
    let body = || c.body.clone().unwrap_or_default();
    let input = match (c.op.as_str(), &c.if_match) {
        ("read", _) => match &c.if_none_match {
            None => CosmosOp::Read,
            Some(_) => CosmosOp::ReadIfNoneMatch(version(&c.if_none_match)?),
        },
        ("create", _) => CosmosOp::Create(body()),
        ("replace", None) => CosmosOp::Replace(body()),
        ("upsert", None) => CosmosOp::Upsert(body()),
        ("delete", None) => CosmosOp::Delete,
        (kind, Some(_)) => match (kind, version(&c.if_match)?) {
            ("replace", v) => CosmosOp::ReplaceIfVersion(v, body()),
            ("upsert", v) => CosmosOp::UpsertIfVersion(v, body()),
            ("delete", v) => CosmosOp::DeleteIfVersion(v),
            _ => return None,
        },
        _ => return None,
    };
    let is_read = matches!(input, CosmosOp::Read | CosmosOp::ReadIfNoneMatch(_));
    let output = match p.result {
        None => None,
        // A transient status surfaced by the SDK: not executed.
        Some(None) => return None,
        Some(Some(r)) => Some(match (r.status, is_read) {
            (200, true) => {
                CosmosResult::Present(r.body.clone().unwrap_or_default(), r.version.unwrap_or(0))
            }
            (304, true) => CosmosResult::NotModified,
            (404, true) => CosmosResult::Absent,
            (201, false) => CosmosResult::Created(r.version),
            (200..=204, false) => CosmosResult::Ok(r.version),
            (404, false) => CosmosResult::NotFound,
            (409, _) => CosmosResult::Conflict,
            (412, _) => CosmosResult::PreconditionFailed,
            (424, _) => CosmosResult::RolledBack,
            _ => return None,
        }),
    };
    Some((input, output))
}

/// Linearizability of every item against [`CosmosItemSpec`].
pub struct Linearizability {
    /// The checker's options.
    pub options: lin::Options,
}

impl Checker<CosmosHistory> for Linearizability {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::kit::properties::LINEARIZABILITY]
    }

    fn check(&self, history: &CosmosHistory) -> Checked {
        let report = lin::check(&CosmosItemSpec, &to_lin_ops(history), &self.options);
        // A batch's operations are named by their step, the first one too.
        let batches: std::collections::BTreeSet<u64> = history
            .ops
            .iter()
            .filter(|o| o.call.kind == "batch")
            .map(|o| o.id)
            .collect();
        lin_checked(&report, "overcast cosmos", &|id| {
            let (op, step) = (id / BATCH_SLOTS, id % BATCH_SLOTS);
            if batches.contains(&op) {
                (op, format!("#{op} step {}", step + 1))
            } else {
                (op, format!("#{op}"))
            }
        })
    }
}

/// E1: every successful write's `_etag` is new for its item.
pub struct EtagFreshness;

impl Checker<CosmosHistory> for EtagFreshness {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::kit::properties::E1]
    }

    fn check(&self, history: &CosmosHistory) -> Checked {
        let placed = placed(history);
        let produced = placed.iter().filter_map(|p| match p.result {
            Some(Some(OpOutcome {
                status: 200 | 201,
                etag: Some(e),
                ..
            })) if p.call.op != "read" => Some((p.key.as_str(), e.as_str(), p.op)),
            _ => None,
        });
        let found = check_fresh("E1", produced).map(|v| {
            let account = account(
                history,
                &v.ops,
                "An ETag given twice".to_string(),
                "The calls on the item from the first write that got the ETag to the one that got it again: an ETag is new with every write.".to_string(),
            );
            v.with_evidence(account)
        });
        Checked::new(Verdict::from_violations(found.into_iter().collect()))
    }
}

/// [`calls_account`] in this service's words.
fn account(history: &CosmosHistory, named: &[u64], title: String, lead: String) -> Evidence {
    calls_account(
        &history.ops,
        named,
        |c, r| super::history::words(c, r).0,
        title,
        lead,
    )
}

/// Batch atomicity: (1) a body written by a batch that answered a failure is
/// never read; (2) once a read has seen a committed batch's write of one
/// item, no read that starts later sees another item of the batch at a
/// version older than the batch's write.
pub struct BatchAtomicity;

impl Checker<CosmosHistory> for BatchAtomicity {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::services::cosmos::properties::BATCH_ATOMICITY]
    }

    fn check(&self, history: &CosmosHistory) -> Checked {
        Checked::new(Verdict::from_violations(
            batch_violation(history).into_iter().collect(),
        ))
    }
}

/// A read of one item: `(op, key, body, version, invoke, return)`.
type Read<'a> = (u64, String, &'a str, u64, u64, u64);

fn batch_violation(history: &CosmosHistory) -> Option<Violation> {
    let mut reads: Vec<Read<'_>> = Vec::new();
    for o in &history.ops {
        let (Some(r), Some(ret)) = (&o.result, o.return_ns) else {
            continue;
        };
        for (c, res) in o.call.ops.iter().zip(&r.results) {
            if let (true, 200, Some(b), Some(v)) =
                (c.op == "read", res.status, &res.body, res.version)
            {
                reads.push((
                    o.id,
                    item_key(&o.call.pk, &c.id),
                    b.as_str(),
                    v,
                    o.invoke_ns,
                    ret,
                ));
            }
        }
    }
    for o in history.ops.iter().filter(|o| o.call.kind == "batch") {
        let id = o.id;
        let failed = o
            .result
            .as_ref()
            .is_some_and(|r| !(200..300).contains(&r.status) && !r.results.is_empty());
        // Each write: its item, its body, and its version when the batch's
        // response or a read of its body says it.
        let writes: Vec<(String, &str, Option<u64>)> = o
            .call
            .ops
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let key = item_key(&o.call.pk, &c.id);
                let body = c.body.as_deref()?;
                let answered = o
                    .result
                    .as_ref()
                    .filter(|r| r.status == 200)
                    .and_then(|r| r.results.get(i))
                    .and_then(|r| r.version);
                let read = reads
                    .iter()
                    .find(|r| r.1 == key && r.2 == body)
                    .map(|r| r.3);
                Some((key, body, answered.or(read)))
            })
            .collect();
        if failed {
            for (key, body, _) in &writes {
                if let Some(r) = reads.iter().find(|r| r.1 == *key && r.2 == *body) {
                    return Some(
                        Violation::new(
                            "batch-atomicity",
                            format!(
                                "op {} read the body {body} of {key}, written by batch op {id}, which was rolled back",
                                r.0
                            ),
                        )
                        .with_ops([r.0, id])
                        .with_evidence(account(
                            history,
                            &[r.0, id],
                            "A rolled-back batch read".to_string(),
                            "The calls on the item from the batch to the read that saw its write: a batch that answered a failure wrote nothing.".to_string(),
                        )),
                    );
                }
            }
            continue;
        }
        for (first_key, first_body, _) in &writes {
            // Every read that saw this write of the batch ...
            for first in reads
                .iter()
                .filter(|r| r.1 == *first_key && r.2 == *first_body)
            {
                // ... is followed by no read of another of its items at an
                // older version than the batch wrote.
                for (other_key, _, other_version) in &writes {
                    let Some(v) = other_version else { continue };
                    if other_key == first_key {
                        continue;
                    }
                    if let Some(stale) = reads
                        .iter()
                        .find(|r| r.1 == *other_key && r.4 > first.5 && r.3 < *v)
                    {
                        return Some(
                            Violation::new(
                                "batch-atomicity",
                                format!(
                                    "op {} saw batch op {id}'s write of {first_key}, then op {} read {other_key} at version {} (before the batch's version {v})",
                                    first.0, stale.0, stale.3
                                ),
                            )
                            .with_ops([stale.0, first.0, id])
                            .with_evidence(account(
                                history,
                                &[stale.0, first.0, id],
                                "A batch seen in part".to_string(),
                                "The batch, the read that saw one of its writes and the later read of another of its items at an older version: a batch is seen whole or not at all.".to_string(),
                            )),
                        );
                    }
                }
            }
        }
    }
    None
}
