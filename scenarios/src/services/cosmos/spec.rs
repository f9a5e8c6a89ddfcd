//! The reference spec of one Cosmos item (SPEC §1.3, AMBIG-6), small and
//! written from SPEC, not from the model's code: a body (absent or present)
//! and a version that every successful write or delete raises by one.
//! Statuses are outputs: create on an existing item is 409; replace and
//! delete of a missing item are 404 (also with `if-match`); a stale
//! `if-match` is 412; upsert with `if-match` on a missing item creates it.
//! An operation of a rolled-back batch (424) changes nothing. A batch's
//! operations on one item are one step ([`CosmosOp::InOrder`]): each is
//! answered against the item as the ones before it left it, and the batch
//! changes the item only if every one of them succeeded.

use overcast_sim::lin::{Claim, Next, Spec};
use serde::{Deserialize, Serialize};

/// What a client asked of one item, ETags turned into the versions they name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CosmosOp {
    /// Point read.
    Read,
    /// Read with `if-none-match` on this version.
    ReadIfNoneMatch(u64),
    /// Create.
    Create(String),
    /// Replace without `if-match`.
    Replace(String),
    /// Replace with `if-match` on this version.
    ReplaceIfVersion(u64, String),
    /// Upsert without `if-match`.
    Upsert(String),
    /// Upsert with `if-match` on this version.
    UpsertIfVersion(u64, String),
    /// Delete without `if-match`.
    Delete,
    /// Delete with `if-match` on this version.
    DeleteIfVersion(u64),
    /// One batch's operations on this item, in the batch's order (those the
    /// batch reached: up to its failing operation).
    InOrder(Vec<CosmosOp>),
}

/// What the client saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CosmosResult {
    /// Read: 404.
    Absent,
    /// Read: 200 with this body and version.
    Present(String, u64),
    /// Read: 304.
    NotModified,
    /// Write that replaced or deleted: 200/204, with the new version when the
    /// response carried one.
    Ok(Option<u64>),
    /// Write that created the item: 201 (a create, or an upsert of a missing
    /// item, SPEC §1.3 and AMBIG-6), with the new version when carried.
    Created(Option<u64>),
    /// 412.
    PreconditionFailed,
    /// 409.
    Conflict,
    /// 404 on a write.
    NotFound,
    /// 424: rolled back with its batch.
    RolledBack,
    /// The answers of [`CosmosOp::InOrder`]'s operations, in order.
    InOrder(Vec<CosmosResult>),
}

impl CosmosResult {
    /// Whether a batch goes on after an operation answered this: it read or
    /// wrote the item (a read of a missing item fails a batch).
    fn succeeded(&self) -> bool {
        matches!(
            self,
            CosmosResult::Present(..)
                | CosmosResult::NotModified
                | CosmosResult::Ok(_)
                | CosmosResult::Created(_)
        )
    }

    /// Whether `self`, as a client saw it, is the `expected` answer (a
    /// write's version may be missing from what was seen).
    fn fits(&self, expected: &CosmosResult) -> bool {
        match (self, expected) {
            (CosmosResult::Ok(None), CosmosResult::Ok(_))
            | (CosmosResult::Created(None), CosmosResult::Created(_)) => true,
            _ => self == expected,
        }
    }
}

/// One item: body (None = absent) and version.
pub type CosmosState = (Option<String>, u64);

/// The spec (every item starts absent at version 0).
#[derive(Clone, Copy, Debug, Default)]
pub struct CosmosItemSpec;

impl CosmosItemSpec {
    /// The answer in `s`, and the state after (`None`: no change).
    fn answer(op: &CosmosOp, s: &CosmosState) -> (CosmosResult, Option<CosmosState>) {
        let present = s.0.is_some();
        let at = |v: u64| present && s.1 == v;
        // 201 where the write creates the item, 200 where it replaces it.
        let write = |b: &String| {
            let v = Some(s.1 + 1);
            (
                if present {
                    CosmosResult::Ok(v)
                } else {
                    CosmosResult::Created(v)
                },
                Some((Some(b.clone()), s.1 + 1)),
            )
        };
        let deleted = (CosmosResult::Ok(None), Some((None, s.1 + 1)));
        use CosmosResult as R;
        match op {
            CosmosOp::InOrder(ops) => {
                // The batch's answers as if it ran alone from `s`: each
                // operation after the ones before it, none after a failure.
                let mut t = s.clone();
                let mut answers = Vec::with_capacity(ops.len());
                for op in ops {
                    let (r, next) = Self::answer(op, &t);
                    let failed = !r.succeeded();
                    answers.push(r);
                    if failed {
                        return (R::InOrder(answers), None);
                    }
                    if let Some(n) = next {
                        t = n;
                    }
                }
                (R::InOrder(answers), (t != *s).then_some(t))
            }
            CosmosOp::Read | CosmosOp::ReadIfNoneMatch(_) if !present => (R::Absent, None),
            CosmosOp::ReadIfNoneMatch(v) if at(*v) => (R::NotModified, None),
            CosmosOp::Read | CosmosOp::ReadIfNoneMatch(_) => {
                (R::Present(s.0.clone().unwrap_or_default(), s.1), None)
            }
            CosmosOp::Create(_) if present => (R::Conflict, None),
            CosmosOp::Create(b) | CosmosOp::Upsert(b) => write(b),
            CosmosOp::Replace(_)
            | CosmosOp::ReplaceIfVersion(..)
            | CosmosOp::Delete
            | CosmosOp::DeleteIfVersion(_)
                if !present =>
            {
                (R::NotFound, None)
            }
            CosmosOp::Replace(b) => write(b),
            CosmosOp::UpsertIfVersion(_, b) if !present => write(b),
            CosmosOp::ReplaceIfVersion(v, b) | CosmosOp::UpsertIfVersion(v, b) if at(*v) => {
                write(b)
            }
            CosmosOp::Delete => deleted,
            CosmosOp::DeleteIfVersion(v) if at(*v) => deleted,
            _ => (R::PreconditionFailed, None),
        }
    }
}

impl CosmosItemSpec {
    /// One batch's operations on an item, answered `out`: each answer must
    /// be the one the item gives after the operations before it; a 424 (the
    /// batch failed elsewhere, later) must stand for an answer that let the
    /// batch go on. The item changes only if the whole batch succeeded.
    fn step_in_order(s: &CosmosState, ops: &[CosmosOp], out: &CosmosResult) -> Next<CosmosState> {
        let CosmosResult::InOrder(outs) = out else {
            return Next::Illegal;
        };
        if outs.len() != ops.len() {
            return Next::Illegal;
        }
        let mut t = s.clone();
        let mut failed = false;
        for (op, seen) in ops.iter().zip(outs) {
            let (expected, next) = Self::answer(op, &t);
            match seen {
                CosmosResult::RolledBack if expected.succeeded() => failed = true,
                seen if seen.fits(&expected) => failed |= !seen.succeeded(),
                _ => return Next::Illegal,
            }
            if let Some(n) = next {
                t = n;
            }
        }
        Next::One(if failed { s.clone() } else { t })
    }
}

impl Spec for CosmosItemSpec {
    type State = CosmosState;
    type Input = CosmosOp;
    type Output = CosmosResult;

    fn init(&self, _key: &str) -> CosmosState {
        (None, 0)
    }

    fn step(
        &self,
        s: &CosmosState,
        op: &CosmosOp,
        out: Option<&CosmosResult>,
    ) -> Next<CosmosState> {
        if let (CosmosOp::InOrder(ops), Some(out)) = (op, out) {
            return Self::step_in_order(s, ops, out);
        }
        let (expected, next) = Self::answer(op, s);
        match out {
            None => Next::One(next.unwrap_or_else(|| s.clone())),
            Some(CosmosResult::RolledBack) => Next::One(s.clone()),
            Some(CosmosResult::Ok(None)) if matches!(expected, CosmosResult::Ok(_)) => {
                Next::One(next.unwrap_or_else(|| s.clone()))
            }
            Some(CosmosResult::Created(None)) if matches!(expected, CosmosResult::Created(_)) => {
                Next::One(next.unwrap_or_else(|| s.clone()))
            }
            Some(o) if *o == expected => Next::One(next.unwrap_or_else(|| s.clone())),
            Some(_) => Next::Illegal,
        }
    }

    fn is_read_only(&self, op: &CosmosOp, out: Option<&CosmosResult>) -> bool {
        let reads_only = |op: &CosmosOp| match op {
            CosmosOp::Read | CosmosOp::ReadIfNoneMatch(_) => true,
            CosmosOp::InOrder(ops) => ops
                .iter()
                .all(|o| matches!(o, CosmosOp::Read | CosmosOp::ReadIfNoneMatch(_))),
            _ => false,
        };
        reads_only(op)
            || out.is_some_and(|r| match r {
                CosmosResult::InOrder(outs) => !outs.iter().all(CosmosResult::succeeded),
                r => !matches!(r, CosmosResult::Ok(_) | CosmosResult::Created(_)),
            })
    }

    fn version_of(&self, s: &CosmosState) -> Option<u64> {
        Some(s.1)
    }

    fn claim(&self, op: &CosmosOp, out: &CosmosResult) -> Claim {
        match (op, out) {
            // Several steps in one: no single version says what it did.
            (CosmosOp::InOrder(_), _) => Claim::None,
            (CosmosOp::ReadIfNoneMatch(v), CosmosResult::NotModified) => Claim::At(*v),
            (_, CosmosResult::Present(_, v)) => Claim::At(*v),
            (_, CosmosResult::Ok(Some(v)) | CosmosResult::Created(Some(v))) => Claim::Produced(*v),
            (CosmosOp::DeleteIfVersion(v), CosmosResult::Ok(None)) => Claim::Produced(v + 1),
            _ => Claim::None,
        }
    }

    fn describe_state(&self, s: &CosmosState) -> String {
        match &s.0 {
            None => format!("absent (version {})", s.1),
            Some(b) => format!("\"{b}\" (version {})", s.1),
        }
    }

    fn describe_op(&self, op: &CosmosOp, out: Option<&CosmosResult>) -> String {
        if let CosmosOp::InOrder(ops) = op {
            let outs = match out {
                Some(CosmosResult::InOrder(outs)) => outs.iter().map(Some).collect(),
                _ => vec![None; ops.len()],
            };
            let steps: Vec<String> = ops
                .iter()
                .zip(outs)
                .map(|(op, out)| self.describe_op(op, out))
                .collect();
            let unknown = if out.is_none() {
                " (unknown outcome)"
            } else {
                ""
            };
            return format!("in one batch{unknown}: {}", steps.join("; "));
        }
        let asked = match op {
            CosmosOp::Read => "read".to_string(),
            CosmosOp::ReadIfNoneMatch(v) => format!("read if-none-match version {v}"),
            CosmosOp::Create(b) => format!("create \"{b}\""),
            CosmosOp::Replace(b) => format!("replace \"{b}\""),
            CosmosOp::ReplaceIfVersion(v, b) => format!("replace \"{b}\" if-match version {v}"),
            CosmosOp::Upsert(b) => format!("upsert \"{b}\""),
            CosmosOp::UpsertIfVersion(v, b) => format!("upsert \"{b}\" if-match version {v}"),
            CosmosOp::Delete => "delete".to_string(),
            CosmosOp::DeleteIfVersion(v) => format!("delete if-match version {v}"),
            CosmosOp::InOrder(_) => "a batch's operations".to_string(),
        };
        let version = |v: &Option<u64>| v.map_or(String::new(), |v| format!(" version {v}"));
        let seen = match out {
            None => "unknown outcome".to_string(),
            Some(CosmosResult::Absent) => "404".to_string(),
            Some(CosmosResult::Present(b, v)) => format!("200 \"{b}\" version {v}"),
            Some(CosmosResult::NotModified) => "304".to_string(),
            // A delete's success is 204 No Content (the model's and the
            // service's answer), whatever status range the check accepts.
            Some(CosmosResult::Ok(_))
                if matches!(op, CosmosOp::Delete | CosmosOp::DeleteIfVersion(_)) =>
            {
                "204".to_string()
            }
            Some(CosmosResult::Ok(v)) => format!("200{}", version(v)),
            Some(CosmosResult::Created(v)) => format!("201{}", version(v)),
            Some(CosmosResult::PreconditionFailed) => "412".to_string(),
            Some(CosmosResult::Conflict) => "409".to_string(),
            Some(CosmosResult::NotFound) => "404".to_string(),
            Some(CosmosResult::RolledBack) => "424 (rolled back with its batch)".to_string(),
            Some(CosmosResult::InOrder(_)) => "the answers of a batch".to_string(),
        };
        format!("{asked} → {seen}")
    }
}
