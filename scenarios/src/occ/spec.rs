//! The reference spec the linearizability checker holds the store to: one
//! register per item with a value (absent or a body) and a version that every
//! successful write or delete raises by one. Small and written from SPEC §1,
//! not from the model's code.

use overcast_sim::lin::{Claim, Next, Spec};
use serde::{Deserialize, Serialize};

/// What a client asked of one item, with ETags already turned into the
/// versions they name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ItemOp {
    /// Read the item.
    Read,
    /// Read with `If-None-Match` on the ETag of this version: 304 if the item
    /// is still at it (SPEC §1.1.4, E6).
    ReadIfNoneMatch(u64),
    /// Unconditional upsert: last writer wins.
    Put(String),
    /// Upsert with `If-None-Match: *`: only if absent.
    Create(String),
    /// Upsert with `If-Match`: only if present at this version.
    PutIfVersion(u64, String),
    /// Unconditional delete.
    Delete,
    /// Delete with `If-Match`: only if present at this version.
    DeleteIfVersion(u64),
}

/// What the client saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ItemResult {
    /// Read: 404.
    Absent,
    /// Read: 200 with this body and version.
    Present(String, u64),
    /// Conditional read: 304, the item is still at the version named.
    NotModified,
    /// Write: 2xx, with the new version if the response carried one.
    Ok(Option<u64>),
    /// 412: a condition did not hold.
    PreconditionFailed,
    /// 409: `If-None-Match: *` on an existing item.
    Conflict,
    /// 404 on a delete: nothing to delete.
    NotFound,
}

/// State of one item: its body (None = absent) and its version.
pub type ItemState = (Option<String>, u64);

/// The spec (stateless; every item starts absent at version 0).
#[derive(Clone, Copy, Debug, Default)]
pub struct ItemSpec;

impl ItemSpec {
    /// Whether the op's condition holds in `s` (so a write would apply).
    fn applies(op: &ItemOp, s: &ItemState) -> bool {
        match op {
            ItemOp::Read | ItemOp::ReadIfNoneMatch(_) => false,
            ItemOp::Put(_) => true,
            ItemOp::Create(_) => s.0.is_none(),
            ItemOp::PutIfVersion(v, _) | ItemOp::DeleteIfVersion(v) => s.0.is_some() && s.1 == *v,
            ItemOp::Delete => s.0.is_some(),
        }
    }

    /// The state after the op applies.
    fn after(op: &ItemOp, s: &ItemState) -> ItemState {
        match op {
            ItemOp::Put(b) | ItemOp::Create(b) | ItemOp::PutIfVersion(_, b) => {
                (Some(b.clone()), s.1 + 1)
            }
            ItemOp::Delete | ItemOp::DeleteIfVersion(_) => (None, s.1 + 1),
            ItemOp::Read | ItemOp::ReadIfNoneMatch(_) => s.clone(),
        }
    }

    /// The answer the op gets in `s` when it does not apply.
    fn refusal(op: &ItemOp, s: &ItemState) -> ItemResult {
        match (op, &s.0) {
            (ItemOp::ReadIfNoneMatch(v), Some(_)) if s.1 == *v => ItemResult::NotModified,
            (ItemOp::Read | ItemOp::ReadIfNoneMatch(_), None) => ItemResult::Absent,
            (ItemOp::Read | ItemOp::ReadIfNoneMatch(_), Some(b)) => {
                ItemResult::Present(b.clone(), s.1)
            }
            (ItemOp::Create(_), _) => ItemResult::Conflict,
            (ItemOp::Delete, _) => ItemResult::NotFound,
            _ => ItemResult::PreconditionFailed,
        }
    }
}

impl Spec for ItemSpec {
    type State = ItemState;
    type Input = ItemOp;
    type Output = ItemResult;

    fn init(&self, _key: &str) -> ItemState {
        (None, 0)
    }

    fn step(&self, s: &ItemState, op: &ItemOp, out: Option<&ItemResult>) -> Next<ItemState> {
        let applies = Self::applies(op, s);
        match out {
            None if applies => Next::One(Self::after(op, s)),
            None => Next::One(s.clone()),
            Some(ItemResult::Ok(v)) if applies => {
                let next = Self::after(op, s);
                if v.is_some_and(|v| v != next.1) {
                    Next::Illegal
                } else {
                    Next::One(next)
                }
            }
            Some(r) if !applies && *r == Self::refusal(op, s) => Next::One(s.clone()),
            Some(_) => Next::Illegal,
        }
    }

    fn is_read_only(&self, op: &ItemOp, out: Option<&ItemResult>) -> bool {
        matches!(op, ItemOp::Read | ItemOp::ReadIfNoneMatch(_))
            || out.is_some_and(|r| !matches!(r, ItemResult::Ok(_)))
    }

    fn version_of(&self, s: &ItemState) -> Option<u64> {
        Some(s.1)
    }

    fn claim(&self, op: &ItemOp, out: &ItemResult) -> Claim {
        match (op, out) {
            (ItemOp::ReadIfNoneMatch(v), ItemResult::NotModified) => Claim::At(*v),
            (_, ItemResult::Present(_, v)) => Claim::At(*v),
            (_, ItemResult::Ok(Some(v))) => Claim::Produced(*v),
            // A conditional delete succeeds only at version v and leaves v + 1.
            (ItemOp::DeleteIfVersion(v), ItemResult::Ok(None)) => Claim::Produced(v + 1),
            _ => Claim::None,
        }
    }

    fn describe_op(&self, op: &ItemOp, out: Option<&ItemResult>) -> String {
        let call = match op {
            ItemOp::Read => "read".to_string(),
            ItemOp::ReadIfNoneMatch(v) => format!("read If-None-Match v{v}"),
            ItemOp::Put(b) => format!("put {b:?}"),
            ItemOp::Create(b) => format!("create {b:?} (If-None-Match: *)"),
            ItemOp::PutIfVersion(v, b) => format!("put {b:?} If-Match v{v}"),
            ItemOp::Delete => "delete".to_string(),
            ItemOp::DeleteIfVersion(v) => format!("delete If-Match v{v}"),
        };
        let seen = match out {
            None => "unknown".to_string(),
            Some(ItemResult::Absent) => "404 absent".to_string(),
            Some(ItemResult::NotModified) => "304 not modified".to_string(),
            Some(ItemResult::Present(b, v)) => format!("{b:?} v{v}"),
            Some(ItemResult::Ok(Some(v))) => format!("ok v{v}"),
            Some(ItemResult::Ok(None)) => "ok".to_string(),
            Some(ItemResult::PreconditionFailed) => "412".to_string(),
            Some(ItemResult::Conflict) => "409".to_string(),
            Some(ItemResult::NotFound) => "404".to_string(),
        };
        format!("{call} -> {seen}")
    }

    fn describe_state(&self, s: &ItemState) -> String {
        match &s.0 {
            None => format!("absent (v{})", s.1),
            Some(b) => format!("{b:?} v{}", s.1),
        }
    }

    fn describe_need(&self, op: &ItemOp, out: &ItemResult) -> Option<String> {
        Some(match (op, out) {
            (_, ItemResult::Present(b, v)) => format!("the item to hold {b:?} at v{v}"),
            (_, ItemResult::Absent) => "the item to be absent".into(),
            (ItemOp::ReadIfNoneMatch(v), ItemResult::NotModified) => {
                format!("the item to be at v{v}")
            }
            (_, ItemResult::NotModified) => "the item unchanged".into(),
            (_, ItemResult::Ok(Some(v))) => format!(
                "the item at v{}{}",
                v.saturating_sub(1),
                match op {
                    ItemOp::PutIfVersion(e, _) => format!(" (and If-Match v{e} to hold)"),
                    ItemOp::Create(_) => " and absent".into(),
                    _ => String::new(),
                }
            ),
            (_, ItemResult::Conflict) => "the item to exist".into(),
            (_, ItemResult::PreconditionFailed) => "the condition to fail".into(),
            (_, ItemResult::NotFound) => "the item to be absent".into(),
            (_, ItemResult::Ok(None)) => "the item to be present (or the condition to hold)".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use overcast_sim::lin::{check, Operation, Options, Verdict};

    fn op(
        id: u64,
        client: u64,
        input: ItemOp,
        invoke: i64,
        ret: Option<i64>,
        output: Option<ItemResult>,
    ) -> Operation<ItemOp, ItemResult> {
        Operation {
            id,
            client,
            key: "k".into(),
            input,
            invoke,
            ret,
            output,
        }
    }

    #[test]
    fn a_lost_update_is_not_linearizable() {
        // Two read-modify-writes from v1 both succeed: one must have got 412.
        let h = vec![
            op(
                0,
                0,
                ItemOp::Create("a".into()),
                0,
                Some(1),
                Some(ItemResult::Ok(Some(1))),
            ),
            op(
                1,
                1,
                ItemOp::PutIfVersion(1, "b".into()),
                2,
                Some(5),
                Some(ItemResult::Ok(Some(2))),
            ),
            op(
                2,
                2,
                ItemOp::PutIfVersion(1, "c".into()),
                3,
                Some(6),
                Some(ItemResult::Ok(Some(2))),
            ),
        ];
        assert_eq!(
            check(&ItemSpec, &h, &Options::default()).verdict,
            Verdict::NotLinearizable
        );
        let mut ok = h.clone();
        ok[2].output = Some(ItemResult::PreconditionFailed);
        assert_eq!(
            check(&ItemSpec, &ok, &Options::default()).verdict,
            Verdict::Linearizable
        );
    }

    #[test]
    fn an_unknown_write_may_land_late_or_never() {
        let h = vec![
            op(0, 0, ItemOp::Put("a".into()), 0, None, None),
            op(1, 1, ItemOp::Read, 5, Some(6), Some(ItemResult::Absent)),
            op(
                2,
                1,
                ItemOp::Read,
                7,
                Some(8),
                Some(ItemResult::Present("a".into(), 1)),
            ),
        ];
        assert_eq!(
            check(&ItemSpec, &h, &Options::default()).verdict,
            Verdict::Linearizable
        );
        let mut bad = h.clone();
        bad.push(op(
            3,
            1,
            ItemOp::Read,
            9,
            Some(10),
            Some(ItemResult::Absent),
        ));
        assert_eq!(
            check(&ItemSpec, &bad, &Options::default()).verdict,
            Verdict::NotLinearizable
        );
    }

    #[test]
    fn a_conditional_read_is_304_only_at_the_version_named() {
        let h = vec![
            op(
                0,
                0,
                ItemOp::Create("a".into()),
                0,
                Some(1),
                Some(ItemResult::Ok(Some(1))),
            ),
            op(
                1,
                1,
                ItemOp::ReadIfNoneMatch(1),
                2,
                Some(3),
                Some(ItemResult::NotModified),
            ),
            op(
                2,
                0,
                ItemOp::Put("b".into()),
                4,
                Some(5),
                Some(ItemResult::Ok(Some(2))),
            ),
            op(
                3,
                1,
                ItemOp::ReadIfNoneMatch(1),
                6,
                Some(7),
                Some(ItemResult::Present("b".into(), 2)),
            ),
        ];
        assert_eq!(
            check(&ItemSpec, &h, &Options::default()).verdict,
            Verdict::Linearizable
        );
        let mut stale = h.clone();
        stale[3].output = Some(ItemResult::NotModified);
        assert_eq!(
            check(&ItemSpec, &stale, &Options::default()).verdict,
            Verdict::NotLinearizable
        );
    }

    #[test]
    fn versions_continue_across_delete_and_recreate() {
        let h = vec![
            op(
                0,
                0,
                ItemOp::Create("a".into()),
                0,
                Some(1),
                Some(ItemResult::Ok(Some(1))),
            ),
            op(1, 0, ItemOp::Delete, 2, Some(3), Some(ItemResult::Ok(None))),
            op(
                2,
                0,
                ItemOp::Create("b".into()),
                4,
                Some(5),
                Some(ItemResult::Ok(Some(3))),
            ),
        ];
        assert_eq!(
            check(&ItemSpec, &h, &Options::default()).verdict,
            Verdict::Linearizable
        );
        let mut reused = h.clone();
        reused[2].output = Some(ItemResult::Ok(Some(1)));
        assert_eq!(
            check(&ItemSpec, &reused, &Options::default()).verdict,
            Verdict::NotLinearizable
        );
    }
}
