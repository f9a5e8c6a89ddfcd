//! The `occ` workload: each client does reads, conditional reads, blind
//! writes, creates with `If-None-Match: *`, read–modify–writes through the
//! SDK helper and conditional deletes over a set of items with a hot one,
//! recording every call (begun before it is sent, so a call cut short by a
//! crash stays in the history with an unknown outcome).

use super::history::{attempt, Call, Outcome};
use super::{item_name, OccParams, CONTAINER};
use overcast_model::client::{CallObserver, CallResult, RmwOutcome, StoreClient};
use overcast_model::store::{Conditions, ETag, ItemKey, StoreRequest};
use overcast_sim::history::{OpRecord, Recorder, Slot};
use rand::Rng;
use std::collections::BTreeMap;

/// Records each call into the history and remembers the last ETag seen per item.
struct Observer {
    client: usize,
    recorder: Recorder<Call, Outcome>,
    etags: BTreeMap<String, ETag>,
    in_flight: Option<Slot>,
}

impl CallObserver for Observer {
    fn on_invoke(&mut self, request: &StoreRequest, invoke_ns: u64) {
        let call = Call::from_request(request);
        self.in_flight = Some(self.recorder.begin(OpRecord {
            id: 0,
            client: self.client,
            key: call.item.clone(),
            call,
            invoke_ns,
            return_ns: None,
            result: None,
            attempts: Vec::new(),
        }));
    }

    fn on_call(&mut self, request: &StoreRequest, result: &CallResult) {
        let outcome = Outcome::from_result(result);
        if let (
            Some(key),
            Some(Outcome::Response {
                etag: Some(e),
                status,
                ..
            }),
        ) = (request.key(), &outcome)
        {
            if matches!(status, 200 | 201) {
                self.etags.insert(key.id.clone(), ETag(e.clone()));
            }
        }
        if let (
            StoreRequest::Delete { key, .. },
            Some(Outcome::Response {
                status: 202 | 404, ..
            }),
        ) = (request, &outcome)
        {
            self.etags.remove(&key.id);
        }
        if let Some(slot) = self.in_flight.take() {
            self.recorder.complete(
                slot,
                Some(result.return_ns),
                outcome,
                result.attempts.iter().map(attempt).collect(),
            );
        }
    }
}

/// One client's workload.
pub async fn client_workload(
    s: OccParams,
    seed: u64,
    index: usize,
    client_id: usize,
    client: &mut StoreClient,
    recorder: Recorder<Call, Outcome>,
    deadline_ns: u64,
) {
    let mut rng = overcast_sim::rng::stream(seed, &format!("client-{index}-workload"));
    let mut obs = Observer {
        client: client_id,
        recorder,
        etags: BTreeMap::new(),
        in_flight: None,
    };
    let m = &s.mix;
    let weights = [
        m.read,
        m.blind_write,
        m.create,
        m.read_modify_write,
        m.conditional_delete,
        m.conditional_read,
    ];
    let total: u32 = weights.iter().sum();
    for n in 0..s.ops_per_client {
        if overcast_model::client::sim_now_ns() >= deadline_ns {
            break;
        }
        let item = if rng.gen_range(0..100) < s.hot_key_percent || s.keys == 1 {
            0
        } else {
            rng.gen_range(1..s.keys)
        };
        let id = item_name(item);
        let key = ItemKey::new(CONTAINER, id.clone(), id.clone());
        let body = format!("c{index}.{n}");
        let mut pick = rng.gen_range(0..total.max(1));
        let mut kind = 0;
        while kind < weights.len() - 1 && pick >= weights[kind] {
            pick -= weights[kind];
            kind += 1;
        }
        if crate::ops::skipped_in("client", index, n).await {
            continue;
        }
        match kind {
            0 => {
                client
                    .observed_call(
                        StoreRequest::Read {
                            key,
                            conditions: Conditions::none(),
                        },
                        &mut obs,
                    )
                    .await;
            }
            1 => {
                client
                    .observed_call(
                        StoreRequest::Put {
                            key,
                            body,
                            conditions: Conditions::none(),
                        },
                        &mut obs,
                    )
                    .await;
            }
            2 => {
                let put = StoreRequest::Put {
                    key,
                    body,
                    conditions: Conditions::if_none_match_any(),
                };
                client.observed_call(put, &mut obs).await;
            }
            3 => {
                let mut tries = 0;
                let outcome: RmwOutcome = client
                    .read_modify_write(
                        &key,
                        |old| {
                            tries += 1;
                            format!("{body}.{tries}<{}", old.unwrap_or("-").len())
                        },
                        s.rmw_max_tries,
                        &mut obs,
                    )
                    .await;
                tracing::trace!(?outcome, "read-modify-write");
            }
            4 => {
                let conditions = match obs.etags.get(&id) {
                    Some(e) => Conditions::if_match(e.clone()),
                    None => Conditions::none(),
                };
                client
                    .observed_call(StoreRequest::Delete { key, conditions }, &mut obs)
                    .await;
            }
            _ => {
                // 304 if the item is still at the version this client last saw.
                let conditions = match obs.etags.get(&id) {
                    Some(e) => Conditions::if_none_match(e.clone()),
                    None => Conditions::none(),
                };
                client
                    .observed_call(StoreRequest::Read { key, conditions }, &mut obs)
                    .await;
            }
        }
    }
}
