//! The `cosmos` workload: each client reads (also with `if-none-match`),
//! creates, replaces, upserts (with and without `if-match`, also on missing
//! items), deletes, runs read–modify–write loops and transactional batches
//! over a few items in a few partition keys, remembering the last `_etag` it
//! saw of each item.

use super::history::{item_key, Call, Outcome};
use super::CosmosParams;
use crate::kit::dialects::recorded;
use crate::kit::dialects::StoreRole;
use crate::kit::draws::unit_stream;
use overcast_model::client::StoreClient;
use overcast_model::conditions::ETag;
use overcast_model::cosmos::{CosmosRequest, ItemOp};
use overcast_model::cosmos_client::CosmosContainer;
use overcast_sim::history::Recorder;
use rand::Rng;
use std::collections::BTreeMap;

/// The container every item lives in.
pub const CONTAINER: &str = "items";

/// One client's workload.
pub async fn client_workload(
    p: CosmosParams,
    seed: u64,
    index: usize,
    client_id: usize,
    client: &mut StoreClient,
    recorder: Recorder<Call, Outcome>,
    deadline_ns: u64,
) {
    // Each operation draws from a stream of its own (see `kit::draws`).
    let mut ops = overcast_sim::rng::stream(seed, &format!("client-{index}-workload"));
    let mut items = CosmosContainer::new(client, CONTAINER);
    let mut etags: BTreeMap<String, ETag> = BTreeMap::new();
    let m = &p.mix;
    let weights = [
        m.read,
        m.conditional_read,
        m.create,
        m.replace,
        m.upsert,
        m.delete,
        m.read_modify_write,
        m.batch,
    ];
    let total: u32 = weights.iter().sum::<u32>().max(1);
    for n in 0..p.ops_per_client {
        if overcast_model::client::sim_now_ns() >= deadline_ns {
            break;
        }
        let mut rng = unit_stream(&mut ops);
        let pk = format!("p{}", rng.gen_range(0..p.partition_keys.max(1)));
        let id = format!("i{}", rng.gen_range(0..p.items_per_key.max(1)));
        let body = format!("c{index}.{n}");
        let known = etags.get(&item_key(&pk, &id)).cloned();
        // Half the conditional writes use the last ETag seen, the rest none.
        let maybe =
            |rng: &mut overcast_sim::rng::Stream| known.clone().filter(|_| rng.gen_bool(0.7));
        let mut pick = rng.gen_range(0..total);
        let mut kind = 0;
        while kind < weights.len() - 1 && pick >= weights[kind] {
            pick -= weights[kind];
            kind += 1;
        }
        let node =
            overcast_harness::registry::client_incarnation(StoreRole::Client, client_id, p.clients);
        // Drawn only on an explorer's branch (past its first point).
        if overcast_sim::rng::past_branch_point() && rng.gen_bool(BRANCH_REPEATING_BATCH) {
            let batch = repeating_batch(&mut rng, &id, &body, known.clone());
            overcast_harness::ops::about(&node, n, &item_key(&pk, &id));
            if overcast_harness::ops::skipped(&node, n).await {
                continue;
            }
            let req = items.batch_request(&pk, batch);
            send(&mut items, &recorder, client_id, &req, &mut etags).await;
            continue;
        }
        // A batch is about several items of its partition key.
        if kind != 7 {
            overcast_harness::ops::about(&node, n, &item_key(&pk, &id));
        }
        let single = |op: ItemOp| items.item_request(&pk, op);
        let req = match kind {
            0 => single(ItemOp::Read {
                id: id.clone(),
                if_none_match: None,
            }),
            1 => single(ItemOp::Read {
                id: id.clone(),
                if_none_match: known.clone(),
            }),
            2 => single(ItemOp::Create { id, body }),
            3 => single(ItemOp::Replace {
                id,
                body,
                if_match: maybe(&mut rng),
            }),
            4 => single(ItemOp::Upsert {
                id,
                body,
                if_match: maybe(&mut rng),
            }),
            5 => single(ItemOp::Delete {
                id,
                if_match: maybe(&mut rng),
            }),
            6 => {
                if overcast_harness::ops::skipped(&node, n).await {
                    continue;
                }
                let rmw = Rmw {
                    pk: &pk,
                    id: &id,
                    body: &body,
                    tries: p.rmw_max_tries,
                };
                read_modify_write(&mut items, &recorder, client_id, rmw, &mut etags).await;
                continue;
            }
            _ => {
                // Two or three distinct items of this partition key.
                let per_key = p.items_per_key.max(1);
                let size = rng.gen_range(2..=3usize).min(per_key);
                let first = rng.gen_range(0..per_key);
                let ops = (0..size)
                    .map(|j| {
                        let id = format!("i{}", (first + j) % per_key);
                        let body = format!("{body}.{j}");
                        let known = etags.get(&item_key(&pk, &id)).cloned();
                        match rng.gen_range(0..4) {
                            0 => ItemOp::Create { id, body },
                            1 => ItemOp::Upsert {
                                id,
                                body,
                                if_match: known,
                            },
                            2 => ItemOp::Replace {
                                id,
                                body,
                                if_match: known,
                            },
                            _ => ItemOp::Read {
                                id,
                                if_none_match: None,
                            },
                        }
                    })
                    .collect();
                items.batch_request(&pk, ops)
            }
        };
        if overcast_harness::ops::skipped(&node, n).await {
            continue;
        }
        send(&mut items, &recorder, client_id, &req, &mut etags).await;
    }
}

/// The share of a client's operations that, on an explorer's branch, are a
/// batch naming one item more than once ([`repeating_batch`]). No plain run
/// sends one, so plain traces are as they were.
pub const BRANCH_REPEATING_BATCH: f64 = 0.25;

/// A batch that names item `id` two or three times, so each operation
/// depends on the ones before it: a create or an upsert (with the last
/// `_etag` seen, or none), then a replace, a read or a second upsert, and
/// sometimes a read after them.
fn repeating_batch(
    rng: &mut overcast_sim::rng::Stream,
    id: &str,
    body: &str,
    known: Option<ETag>,
) -> Vec<ItemOp> {
    let id = id.to_string();
    let mut ops = vec![if rng.gen_bool(0.5) {
        ItemOp::Create {
            id: id.clone(),
            body: format!("{body}.0"),
        }
    } else {
        ItemOp::Upsert {
            id: id.clone(),
            body: format!("{body}.0"),
            if_match: known.filter(|_| rng.gen_bool(0.5)),
        }
    }];
    ops.push(match rng.gen_range(0..3) {
        0 => ItemOp::Replace {
            id: id.clone(),
            body: format!("{body}.1"),
            if_match: None,
        },
        1 => ItemOp::Read {
            id: id.clone(),
            if_none_match: None,
        },
        _ => ItemOp::Upsert {
            id: id.clone(),
            body: format!("{body}.1"),
            if_match: None,
        },
    });
    if rng.gen_bool(0.3) {
        ops.push(ItemOp::Read {
            id,
            if_none_match: None,
        });
    }
    ops
}

/// Sends one request with its record and remembers the `_etag`s it returned.
async fn send(
    items: &mut CosmosContainer<'_>,
    recorder: &Recorder<Call, Outcome>,
    client_id: usize,
    req: &CosmosRequest,
    etags: &mut BTreeMap<String, ETag>,
) -> Option<Outcome> {
    let call = Call::from_request(req);
    let key = call.key();
    let r = recorded(
        recorder,
        client_id,
        key,
        call.clone(),
        items.send(req),
        Outcome::from_result,
    )
    .await;
    let outcome = Outcome::from_result(&r);
    if let Some(o) = &outcome {
        for (c, res) in call.ops.iter().zip(&o.results) {
            let k = item_key(&call.pk, &c.id);
            match (&res.etag, res.status) {
                (Some(e), 200 | 201) => {
                    etags.insert(k, ETag(e.clone()));
                }
                (_, 204 | 404) => {
                    etags.remove(&k);
                }
                _ => {}
            }
        }
    }
    outcome
}

/// One read–modify–write: the item, the body to write, how many tries.
struct Rmw<'a> {
    pk: &'a str,
    id: &'a str,
    body: &'a str,
    tries: u32,
}

/// Read, then replace with `if-match` on the `_etag` read (create if absent);
/// on 412, 409 or 404 read again, at most `tries` times.
async fn read_modify_write(
    items: &mut CosmosContainer<'_>,
    recorder: &Recorder<Call, Outcome>,
    client_id: usize,
    rmw: Rmw<'_>,
    etags: &mut BTreeMap<String, ETag>,
) {
    let Rmw {
        pk,
        id,
        body,
        tries,
    } = rmw;
    for t in 0..tries.max(1) {
        let read = items.item_request(
            pk,
            ItemOp::Read {
                id: id.into(),
                if_none_match: None,
            },
        );
        let Some(seen) = send(items, recorder, client_id, &read, etags).await else {
            return;
        };
        let body = format!("{body}.rmw{t}");
        let write = match (
            seen.status,
            seen.results.first().and_then(|r| r.etag.clone()),
        ) {
            (200, Some(e)) => ItemOp::Replace {
                id: id.into(),
                body,
                if_match: Some(ETag(e)),
            },
            (404, _) => ItemOp::Create {
                id: id.into(),
                body,
            },
            _ => return,
        };
        let req = items.item_request(pk, write);
        match send(items, recorder, client_id, &req, etags).await {
            Some(Outcome {
                status: 412 | 409 | 404,
                ..
            }) => continue,
            _ => return,
        }
    }
}
