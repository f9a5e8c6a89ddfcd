//! The `regions` workload: each client (one SDK session per process
//! incarnation) reads at its consistency level and writes over a few items:
//! replaces with `If-Match` of the ETag it last read (so acknowledged writes
//! form chains `if_match -> new etag`), creates, blind upserts and deletes.
//! Every body is unique (`<session>.<n>`). Each call is begun in the history
//! before it is sent (a call cut short by a crash stays unknown) and its
//! routing decisions become `Route` events of the session.

use super::history::{Consistency, RegionCall, RegionEvent, RegionOutcome};
use super::{item_key, item_names, RegionsParams, RegionsRecorder, RegionsRole, Service};
use overcast_model::client::AttemptLog;
use overcast_model::conditions::Conditions;
use overcast_model::cosmos::{CosmosRequest, ItemKey, ItemOp};
use overcast_model::partition::{Request, Response};
use overcast_model::region_client::{RegionCallResult, RegionClient, RegionFinal};
use overcast_model::replica::ReadConsistency;
use overcast_model::retry::AttemptOutcome;
use overcast_model::store::{ETag, Metadata, StoreRequest};
use overcast_sim::history::{Attempt, AttemptResult, OpRecord};
use rand::Rng;
use std::collections::BTreeMap;

/// The model's consistency level for the history's.
pub fn level(c: Consistency) -> ReadConsistency {
    match c {
        Consistency::Strong => ReadConsistency::Strong,
        Consistency::Session => ReadConsistency::Session,
        Consistency::Eventual => ReadConsistency::Eventual,
    }
}

/// The consistency level of client `i`: strong, session and eventual in
/// turn (the mix across clients), unless the parameters fix one.
pub fn client_level(p: &RegionsParams, i: usize) -> Consistency {
    match p.consistency.as_deref() {
        Some("strong") => Consistency::Strong,
        Some("session") => Consistency::Session,
        Some("eventual") => Consistency::Eventual,
        _ => [
            Consistency::Strong,
            Consistency::Session,
            Consistency::Eventual,
        ][i % 3],
    }
}

/// The history's record of an attempt.
fn attempt(a: &AttemptLog) -> Attempt {
    Attempt {
        sent_ns: a.sent_ns,
        waited_ns: a.waited.as_nanos() as u64,
        result: match &a.outcome {
            AttemptOutcome::Timeout => AttemptResult::Timeout,
            AttemptOutcome::NotSent => AttemptResult::NotSent,
            AttemptOutcome::Cancelled => AttemptResult::Cancelled,
            AttemptOutcome::Response { status, .. } => AttemptResult::Status {
                status: *status,
                retry_after_ms: None,
            },
        },
    }
}

/// What the caller saw, or `None` for an unknown outcome.
pub fn outcome(r: &RegionCallResult) -> Option<RegionOutcome> {
    match &r.outcome {
        RegionFinal::Unknown => None,
        RegionFinal::Answered {
            response,
            token,
            region,
            node,
        } => {
            // The status, ETag and body of the item answered, in either dialect.
            let (status, etag, body) = match response {
                Response::Cosmos(c) => {
                    let item = c.item();
                    (
                        c.status,
                        item.map(|i| i.etag.0.clone()),
                        item.and_then(|i| i.body.clone()),
                    )
                }
                Response::Store(r) => {
                    let item = r.item.as_ref();
                    (
                        r.status,
                        item.map(|i| i.etag.0.clone()),
                        item.and_then(|i| i.body.clone()),
                    )
                }
                other => (other.status(), None, None),
            };
            if (200..300).contains(&status) || status == 404 {
                Some(RegionOutcome::Ok {
                    status,
                    etag,
                    body,
                    session_token: Some(token.clone()),
                    region: region.clone(),
                    node: node.clone(),
                })
            } else {
                Some(RegionOutcome::Failed {
                    status,
                    sub_status: 0,
                    region: Some(region.clone()),
                    node: Some(node.clone()),
                })
            }
        }
        RegionFinal::Refused {
            status,
            sub_status,
            region,
            node,
        } => Some(RegionOutcome::Failed {
            status: *status,
            sub_status: *sub_status,
            region: region.clone(),
            node: node.clone(),
        }),
    }
}

/// The request for `op` on `item` in the service's dialect. A blob call is
/// the item call it stands for: a read is a GET, a replace a PUT with
/// If-Match, an upsert a PUT, a create a PUT with `If-None-Match: *`, a
/// delete a DELETE (with If-Match when the item call has one).
pub fn request_for(service: Service, item: &str, op: ItemOp) -> Request {
    let (container, partition_key, _) = item_key(item);
    let blob = |id: &str| ItemKey::new(container.clone(), partition_key.clone(), id.to_string());
    let if_match = |e: Option<ETag>| e.map_or_else(Conditions::none, Conditions::if_match);
    match service {
        Service::Cosmos => Request::Cosmos(CosmosRequest::Item {
            container,
            partition_key,
            op,
        }),
        Service::Blob => Request::Store(match op {
            ItemOp::Read { id, .. } => StoreRequest::Read {
                key: blob(&id),
                conditions: Conditions::none(),
            },
            ItemOp::Replace {
                id,
                body,
                if_match: e,
            }
            | ItemOp::Upsert {
                id,
                body,
                if_match: e,
            } => StoreRequest::Put {
                key: blob(&id),
                body,
                conditions: if_match(e),
                metadata: Metadata::new(),
            },
            ItemOp::Create { id, body } => StoreRequest::Put {
                key: blob(&id),
                body,
                conditions: Conditions::if_none_match_any(),
                metadata: Metadata::new(),
            },
            ItemOp::Delete { id, if_match: e } => StoreRequest::Delete {
                key: blob(&id),
                conditions: if_match(e),
            },
        }),
    }
}

/// One client's run: `ops_per_client` calls (fewer past the deadline).
/// `client` is the history's client number, `session` the incarnation name.
#[allow(clippy::too_many_arguments)]
pub async fn client_workload(
    p: RegionsParams,
    seed: u64,
    index: usize,
    client: usize,
    session: String,
    sdk: &mut RegionClient,
    recorder: RegionsRecorder,
    deadline_ns: u64,
) {
    let node = overcast_sim::world::Topology::node_name(RegionsRole::Client, index);
    // Keyed by the node, not the incarnation: a restarted client draws its
    // operations again from the first, so operation `n` of a node is about
    // the same item in whichever life reaches it.
    let mut rng = overcast_sim::rng::stream(seed, &format!("{node}-workload"));
    let consistency = client_level(&p, index);
    // The last ETag this session saw per item (from a read or its own write).
    let mut etags: BTreeMap<String, String> = BTreeMap::new();
    let m = &p.mix;
    let weights = [m.read, m.replace, m.upsert, m.create, m.delete];
    let total: u32 = weights.iter().sum::<u32>().max(1);
    let items = item_names(p.items.max(1), p.partitions);
    for n in 0..p.ops_per_client {
        if overcast_model::client::sim_now_ns() >= deadline_ns {
            break;
        }
        let item = items[rng.gen_range(0..items.len())].clone();
        let mut pick = rng.gen_range(0..total);
        let mut kind = 0;
        while kind < weights.len() - 1 && pick >= weights[kind] {
            pick -= weights[kind];
            kind += 1;
        }
        let think = rng.gen_range(p.think_ms.0..=p.think_ms.1);
        if think > 0 {
            madsim::time::sleep(std::time::Duration::from_millis(think)).await;
        }
        // Named by the incarnation (`ops::skipped`): each life numbers its
        // operations from 0.
        overcast_harness::ops::about(&session, n, &item);
        if overcast_harness::ops::skipped(&session, n).await {
            continue;
        }
        let body = format!("{session}.{n}");
        let known = etags.get(&item).cloned();
        // A replace needs an ETag read first: without one it is an upsert.
        let (name, op, if_match) = match (kind, known) {
            (0, _) => (
                "read",
                ItemOp::Read {
                    id: item.clone(),
                    if_none_match: None,
                },
                None,
            ),
            (1, Some(e)) => (
                "replace",
                ItemOp::Replace {
                    id: item.clone(),
                    body: body.clone(),
                    if_match: Some(ETag(e.clone())),
                },
                Some(e),
            ),
            (1 | 2, _) => (
                "upsert",
                ItemOp::Upsert {
                    id: item.clone(),
                    body: body.clone(),
                    if_match: None,
                },
                None,
            ),
            (3, _) => (
                "create",
                ItemOp::Create {
                    id: item.clone(),
                    body: body.clone(),
                },
                None,
            ),
            (_, e) => (
                "delete",
                ItemOp::Delete {
                    id: item.clone(),
                    if_match: e.as_ref().map(|e| ETag(e.clone())),
                },
                e,
            ),
        };
        let is_write = name != "read";
        let request = request_for(p.service, &item, op);
        let partition = sdk.partition_of(&request);
        let token = (!is_write && consistency == Consistency::Session)
            .then(|| sdk.token(partition))
            .flatten();
        let call = RegionCall {
            op: name.to_string(),
            item: item.clone(),
            body: is_write.then(|| body.clone()).filter(|_| name != "delete"),
            if_match,
            consistency,
            session_token: token,
            session: session.clone(),
            seq: n as u64,
        };
        let slot = recorder.begin(OpRecord {
            id: 0,
            client,
            key: item.clone(),
            call,
            invoke_ns: overcast_model::client::sim_now_ns(),
            return_ns: None,
            result: None,
            attempts: Vec::new(),
        });
        let result = sdk.call(&request, level(consistency)).await;
        let seen = outcome(&result);
        if let Some(RegionOutcome::Ok {
            etag, status: s, ..
        }) = &seen
        {
            match (etag, *s) {
                (Some(e), 200 | 201) => {
                    etags.insert(item.clone(), e.clone());
                }
                (_, 202 | 204 | 404) => {
                    etags.remove(&item);
                }
                _ => {}
            }
        }
        // Each decision carries the client's clock when it was taken, so a
        // mark's span and an attempt's send time are exact on that clock.
        for r in &result.routes {
            recorder.event(
                session.clone(),
                r.local_ms,
                RegionEvent::Route {
                    op_id: n as u64,
                    what: r.what.to_string(),
                    region: r.region.clone(),
                    status: r.status,
                    sub_status: r.sub_status,
                    for_ms: r.for_ms,
                },
            );
        }
        recorder.complete(
            slot,
            Some(result.return_ns),
            seen,
            result.attempts.iter().map(attempt).collect(),
        );
    }
}
