//! Cosmos steps (SPEC §1.3): the `CosmosRequest` of an item operation or a
//! transactional batch (captured ETags resolved), what it addresses (one
//! resource per batch operation, for `fresh`), and the request as a line.

use super::{one_etag, target, State, Target};
use crate::conformance::format::Step;
use overcast_model::conditions::ETag;
use overcast_model::cosmos::{CosmosRequest, ItemOp};

/// The Cosmos request of a Cosmos step, and the items it addresses.
pub(super) fn request(step: &Step, state: &State) -> Result<(CosmosRequest, Target), String> {
    Ok(match step {
        Step::CosmosCreate(s)
        | Step::CosmosRead(s)
        | Step::CosmosReplace(s)
        | Step::CosmosUpsert(s)
        | Step::CosmosDelete(s) => {
            let name = step.kind().trim_start_matches("cosmos_");
            let op = item_op(name, &s.id, &s.body, &s.if_match, &s.if_none_match, state)?;
            (
                CosmosRequest::Item {
                    container: s.container.clone(),
                    partition_key: s.partition_key.clone(),
                    op,
                },
                target(cosmos_resource(&s.container, &s.partition_key, &s.id)),
            )
        }
        Step::CosmosBatch(b) => {
            let ops = b
                .ops
                .iter()
                .map(|op| {
                    let (name, i) = op.parts();
                    item_op(name, &i.id, &i.body, &i.if_match, &i.if_none_match, state)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let per_op = b
                .ops
                .iter()
                .map(|op| cosmos_resource(&b.container, &b.partition_key, &op.parts().1.id))
                .collect();
            (
                CosmosRequest::Batch {
                    container: b.container.clone(),
                    partition_key: b.partition_key.clone(),
                    ops,
                },
                Target {
                    resource: format!("cosmos:{}/{}", b.container, b.partition_key),
                    per_op,
                    proposed: None,
                },
            )
        }
        _ => return Err("not a Cosmos step".into()),
    })
}

/// A Cosmos request as a line.
pub(super) fn describe(kind: &str, r: &CosmosRequest) -> String {
    match r {
        CosmosRequest::Item {
            container,
            partition_key,
            op,
        } => format!(
            "{kind} {container} pk {partition_key:?}: {}",
            describe_item_op(op)
        ),
        CosmosRequest::Batch {
            container,
            partition_key,
            ops,
        } => {
            let each: Vec<String> = ops.iter().map(describe_item_op).collect();
            format!(
                "{kind} {container} pk {partition_key:?}: [{}]",
                each.join("; ")
            )
        }
    }
}

fn cosmos_resource(container: &str, pk: &str, id: &str) -> String {
    format!("cosmos:{container}/{pk}/{id}")
}

fn item_op(
    name: &str,
    id: &str,
    body: &Option<String>,
    if_match: &Option<String>,
    if_none_match: &Option<String>,
    state: &State,
) -> Result<ItemOp, String> {
    let tag = |v: &Option<String>| v.as_deref().map(|v| one_etag(v, state)).transpose();
    let id = id.to_string();
    let body = body.clone().unwrap_or_default();
    Ok(match name {
        "create" => ItemOp::Create { id, body },
        "read" => ItemOp::Read {
            id,
            if_none_match: tag(if_none_match)?,
        },
        "replace" => ItemOp::Replace {
            id,
            body,
            if_match: tag(if_match)?,
        },
        "upsert" => ItemOp::Upsert {
            id,
            body,
            if_match: tag(if_match)?,
        },
        "delete" => ItemOp::Delete {
            id,
            if_match: tag(if_match)?,
        },
        other => return Err(format!("no Cosmos operation `{other}`")),
    })
}

fn describe_item_op(op: &ItemOp) -> String {
    let tag = |name: &str, e: &Option<ETag>| {
        e.as_ref()
            .map(|e| format!(", {name}: {e}"))
            .unwrap_or_default()
    };
    match op {
        ItemOp::Create { id, body } => format!("create {id} body {body:?}"),
        ItemOp::Read { id, if_none_match } => {
            format!("read {id}{}", tag("if-none-match", if_none_match))
        }
        ItemOp::Replace { id, body, if_match } => {
            format!("replace {id} body {body:?}{}", tag("if-match", if_match))
        }
        ItemOp::Upsert { id, body, if_match } => {
            format!("upsert {id} body {body:?}{}", tag("if-match", if_match))
        }
        ItemOp::Delete { id, if_match } => format!("delete {id}{}", tag("if-match", if_match)),
    }
}
