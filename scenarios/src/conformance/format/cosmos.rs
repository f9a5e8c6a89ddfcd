//! Cosmos steps: the item operations (`cosmos_create`, `cosmos_read`,
//! `cosmos_replace`, `cosmos_upsert`, `cosmos_delete`, SPEC §1.3) and the
//! transactional batch (`cosmos_batch`), with the checks of their parameters.

use super::{use_value, Expect, Kind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `cosmos_create`, `cosmos_read`, `cosmos_replace`, `cosmos_upsert`,
/// `cosmos_delete`: one item operation. `body` goes with create, replace and
/// upsert; `if_match` with replace, upsert and delete; `if_none_match` with
/// read (the model's requests carry no other: a write's `if-none-match` and a
/// create's `if-match` are ignored by the service, SPEC §1.3, and cannot be sent).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CosmosOp {
    /// The container (Cosmos containers need no creating in the model).
    pub container: String,
    /// The partition key.
    pub partition_key: String,
    /// The item id.
    pub id: String,
    /// The document.
    #[serde(default)]
    pub body: Option<String>,
    /// `if-match`: one ETag, a literal or a captured `$name`.
    #[serde(default)]
    pub if_match: Option<String>,
    /// `if-none-match`: one ETag, a literal or a captured `$name`.
    #[serde(default)]
    pub if_none_match: Option<String>,
    /// The expected answer.
    pub expect: Expect,
}

/// One operation of a `cosmos_batch`: an object with one key, the operation.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum BatchOp {
    /// `CreateItem`.
    Create(BatchItem),
    /// `ReadItem`.
    Read(BatchItem),
    /// `ReplaceItem`.
    Replace(BatchItem),
    /// `UpsertItem`.
    Upsert(BatchItem),
    /// `DeleteItem`.
    Delete(BatchItem),
}

/// The parameters of one batch operation (the rules of [`CosmosOp`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchItem {
    /// The item id.
    pub id: String,
    /// The document.
    #[serde(default)]
    pub body: Option<String>,
    /// `if-match`.
    #[serde(default)]
    pub if_match: Option<String>,
    /// `if-none-match`.
    #[serde(default)]
    pub if_none_match: Option<String>,
}

/// `cosmos_batch`: a transactional batch.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CosmosBatch {
    /// The container.
    pub container: String,
    /// The partition key every operation shares.
    pub partition_key: String,
    /// The operations, in order.
    pub ops: Vec<BatchOp>,
    /// The expected answer; `results` lists one expectation per operation.
    pub expect: Expect,
}

impl BatchOp {
    /// The operation's name (`create`, `read`, ...) and its parameters.
    pub fn parts(&self) -> (&'static str, &BatchItem) {
        match self {
            BatchOp::Create(i) => ("create", i),
            BatchOp::Read(i) => ("read", i),
            BatchOp::Replace(i) => ("replace", i),
            BatchOp::Upsert(i) => ("upsert", i),
            BatchOp::Delete(i) => ("delete", i),
        }
    }
}

/// Checks a Cosmos operation's parameters against its kind.
pub(super) fn validate_cosmos(
    kind: &str,
    body: bool,
    if_match: &Option<String>,
    if_none_match: &Option<String>,
    names: &BTreeMap<String, Kind>,
) -> Result<(), (&'static str, String)> {
    let op = kind.trim_start_matches("cosmos_");
    let wants_body = matches!(op, "create" | "replace" | "upsert");
    if wants_body && !body {
        return Err(("body", format!("missing: {op} takes a body")));
    }
    if !wants_body && body {
        return Err(("body", format!("{op} takes no body")));
    }
    if if_match.is_some() && !matches!(op, "replace" | "upsert" | "delete") {
        return Err((
            "if_match",
            format!("{op} takes no if_match (the service ignores it on a create, SPEC §1.3; the model's request cannot carry it)"),
        ));
    }
    if if_none_match.is_some() && op != "read" {
        return Err((
            "if_none_match",
            format!("{op} takes no if_none_match (only reads do: the service ignores it on writes, SPEC §1.3)"),
        ));
    }
    for (f, v) in [("if_match", if_match), ("if_none_match", if_none_match)] {
        if let Some(v) = v {
            if v.trim() == "*" {
                return Err((f, "one ETag, not `*`".into()));
            }
            use_value(names, v, Kind::Etag).map_err(|m| (f, m))?;
        }
    }
    Ok(())
}

/// Checks a `cosmos_batch`: it has operations, each follows the rules of its
/// item operation, and `expect.results` has one entry per operation.
pub(super) fn validate_batch(
    b: &CosmosBatch,
    kind: &str,
    names: &BTreeMap<String, Kind>,
) -> Result<(), (String, String)> {
    if b.ops.is_empty() {
        return Err((format!("{kind}.ops"), "a batch has operations".into()));
    }
    for (j, op) in b.ops.iter().enumerate() {
        let (name, item) = op.parts();
        validate_cosmos(
            &format!("cosmos_{name}"),
            item.body.is_some(),
            &item.if_match,
            &item.if_none_match,
            names,
        )
        .map_err(|(f, m)| (format!("{kind}.ops[{j}].{name}.{f}"), m))?;
    }
    if let Some(r) = &b.expect.results {
        if r.len() != b.ops.len() {
            return Err((
                format!("{kind}.expect.results"),
                format!("{} results for {} operations", r.len(), b.ops.len()),
            ));
        }
    }
    Ok(())
}
