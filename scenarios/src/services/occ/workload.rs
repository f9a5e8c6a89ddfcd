//! The `occ` workload: each client does reads, conditional reads, blind
//! writes, creates with `If-None-Match: *`, read–modify–writes through the
//! SDK helper, conditional deletes, conditional HEADs (Get Blob Properties)
//! and conditional Set Blob Metadata over a set of items with a hot one,
//! recording every call (begun before it is sent, so a call cut short by a
//! crash stays in the history with an unknown outcome).

use super::history::OccRecorder;
use super::history::{Call, Outcome};
use super::{counter_names, item_name, OccParams, CONTAINER};
use crate::kit::attempts::attempt;
use crate::kit::draws::unit_stream;
use crate::services::occ::OccRole;
use overcast_model::client::{CallObserver, CallResult, RmwOutcome, StoreClient};
use overcast_model::retry::FinalOutcome;
use overcast_model::store::{Conditions, ETag, EtagMatch, ItemKey, Metadata, StoreRequest};
use overcast_model::wire::OperationId;
use overcast_sim::clock::NodeClock;
use overcast_sim::history::{OpRecord, Slot};
use rand::Rng;
use std::collections::BTreeMap;

/// Records each call into the history and remembers the last ETag (and
/// body, when known) seen per item, and the ETag it replaced.
pub(crate) struct Observer {
    client: usize,
    recorder: OccRecorder,
    etags: BTreeMap<String, ETag>,
    /// The ETag seen before the last one, per item: a stale ETag to name.
    stale: BTreeMap<String, ETag>,
    bodies: BTreeMap<String, String>,
    last_modified: BTreeMap<String, u64>,
    in_flight: Option<Slot>,
    /// The cancel the caller asked for on the call about to be invoked.
    cancel_after_ms: Option<u64>,
}

impl Observer {
    /// An observer recording as client `client`.
    pub(crate) fn new(client: usize, recorder: OccRecorder) -> Observer {
        Observer {
            client,
            recorder,
            etags: BTreeMap::new(),
            stale: BTreeMap::new(),
            bodies: BTreeMap::new(),
            last_modified: BTreeMap::new(),
            in_flight: None,
            cancel_after_ms: None,
        }
    }
}

impl CallObserver for Observer {
    fn on_invoke(&mut self, request: &StoreRequest, invoke_ns: u64, operation: OperationId) {
        let call = Call {
            operation: Some(operation),
            cancel_after_ms: self.cancel_after_ms.take(),
            ..Call::from_request(request)
        };
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
                last_modified: Some(lm),
                ..
            }),
        ) = (request.key(), &outcome)
        {
            self.last_modified.insert(key.id.clone(), *lm);
        }
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
                let etag = ETag(e.clone());
                let known = self.etags.get(&key.id).cloned();
                // The body a HEAD or Set Blob Metadata leaves as it was: known
                // when the HEAD saw the same version, or when the Set Blob
                // Metadata's If-Match named the version whose body is known.
                let kept = |c: &Conditions| match (&known, &c.if_match) {
                    (Some(k), Some(EtagMatch::Tags(t))) => t.len() == 1 && t[0] == *k,
                    _ => false,
                };
                let body = match (request, &outcome) {
                    (StoreRequest::Put { body, .. }, _) => Some(body.clone()),
                    (StoreRequest::GetProperties { .. }, _) if known.as_ref() == Some(&etag) => {
                        self.bodies.get(&key.id).cloned()
                    }
                    (StoreRequest::SetMetadata { conditions, .. }, _) if kept(conditions) => {
                        self.bodies.get(&key.id).cloned()
                    }
                    (_, Some(Outcome::Response { body, .. })) => body.clone(),
                    _ => None,
                };
                if let Some(old) = known.filter(|k| *k != etag) {
                    self.stale.insert(key.id.clone(), old);
                }
                self.etags.insert(key.id.clone(), etag);
                match body {
                    Some(b) => self.bodies.insert(key.id.clone(), b),
                    None => self.bodies.remove(&key.id),
                };
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
            self.bodies.remove(&key.id);
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

/// The share of a client's calls (percent; not the read–modify–writes) its
/// caller cancels after a drawn deadline.
pub const CANCEL_PERCENT: u32 = 2;

/// The instant, simulated ns, at which the caller cancels the call it is about
/// to make `cancel_after_ms` after invoking it (`None`: it does not), told to
/// `obs` too, so the history records the cancel with the call.
fn cancel_at(obs: &mut Observer, cancel_after_ms: Option<u64>) -> Option<u64> {
    obs.cancel_after_ms = cancel_after_ms;
    cancel_after_ms
        .map(|ms| overcast_model::client::sim_now_ns().saturating_add(ms.saturating_mul(1_000_000)))
}

/// One client's workload.
pub async fn client_workload(
    s: OccParams,
    seed: u64,
    client_id: usize,
    client: &mut StoreClient,
    recorder: OccRecorder,
    deadline_ns: u64,
    clock: NodeClock,
) {
    // A restarted client (a fresh id) draws a workload of its own; each
    // operation draws from a stream of its own (see `kit::draws`).
    let mut ops = overcast_sim::rng::stream(seed, &format!("client-{client_id}-workload"));
    let mut obs = Observer::new(client_id, recorder);
    let counters = counter_names(&s);
    let m = &s.mix;
    let weights = [
        m.read,
        m.blind_write,
        m.create,
        m.read_modify_write,
        m.conditional_delete,
        m.conditional_read,
        m.increment,
        m.same_body,
        m.conditions,
        m.head,
        m.set_metadata,
    ];
    let total: u32 = weights.iter().sum();
    for n in 0..s.ops_per_client {
        if overcast_model::client::sim_now_ns() >= deadline_ns {
            break;
        }
        let mut rng = unit_stream(&mut ops);
        let item = if rng.gen_range(0..100) < s.hot_key_percent || s.keys == 1 {
            0
        } else {
            rng.gen_range(1..s.keys)
        };
        let id = item_name(item);
        let key = ItemKey::new(CONTAINER, id.clone(), id.clone());
        let body = format!("c{client_id}.{n}");
        let mut pick = rng.gen_range(0..total.max(1));
        let mut kind = 0;
        while kind < weights.len() - 1 && pick >= weights[kind] {
            pick -= weights[kind];
            kind += 1;
        }
        let counter = (kind == 6).then(|| counters[rng.gen_range(0..counters.len())].clone());
        // A few calls the caller cancels after a drawn deadline (a
        // `CancellationToken`): half within the first few ms, while the first
        // attempt is in flight, half later, during a retry's wait or a slow
        // attempt. Read–modify–writes are never cancelled.
        let cancel_after_ms = (rng.gen_range(0..100) < CANCEL_PERCENT).then(|| {
            if rng.gen_bool(0.5) {
                rng.gen_range(1..20)
            } else {
                rng.gen_range(20..10_000)
            }
        });
        let node =
            overcast_harness::registry::client_incarnation(OccRole::Client, client_id, s.clients);
        overcast_harness::ops::about(&node, n, counter.as_deref().unwrap_or(&id));
        if overcast_harness::ops::skipped(&node, n).await {
            continue;
        }
        match kind {
            0 => {
                client
                    .observed_call_until(
                        StoreRequest::Read {
                            key,
                            conditions: Conditions::none(),
                        },
                        cancel_at(&mut obs, cancel_after_ms),
                        &mut obs,
                    )
                    .await;
            }
            1 => {
                client
                    .observed_call_until(
                        StoreRequest::Put {
                            key,
                            body,
                            conditions: Conditions::none(),
                            metadata: Metadata::new(),
                        },
                        cancel_at(&mut obs, cancel_after_ms),
                        &mut obs,
                    )
                    .await;
            }
            2 => {
                let put = StoreRequest::Put {
                    key,
                    body,
                    conditions: Conditions::if_none_match_any(),
                    metadata: Metadata::new(),
                };
                client
                    .observed_call_until(put, cancel_at(&mut obs, cancel_after_ms), &mut obs)
                    .await;
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
                    .observed_call_until(
                        StoreRequest::Delete { key, conditions },
                        cancel_at(&mut obs, cancel_after_ms),
                        &mut obs,
                    )
                    .await;
            }
            6 => {
                // The application's own meaning: append this increment's token
                // to a counter item (the helper retries on a lost race).
                let counter = counter.unwrap_or_default();
                let key = ItemKey::new(CONTAINER, counter.clone(), counter);
                let token = format!("c{client_id}.{n}");
                let outcome: RmwOutcome = client
                    .read_modify_write(
                        &key,
                        |old| match old {
                            Some(old) if !old.is_empty() => format!("{old} {token}"),
                            _ => token.clone(),
                        },
                        s.rmw_max_tries,
                        &mut obs,
                    )
                    .await;
                tracing::trace!(?outcome, "increment");
            }
            7 => {
                // Write the body the item already has: it must still get a fresh ETag.
                let request = match (obs.etags.get(&id), obs.bodies.get(&id)) {
                    (Some(e), Some(b)) => StoreRequest::Put {
                        key,
                        body: b.clone(),
                        conditions: Conditions::if_match(e.clone()),
                        metadata: Metadata::new(),
                    },
                    _ => StoreRequest::Read {
                        key,
                        conditions: Conditions::none(),
                    },
                };
                client
                    .observed_call_until(request, cancel_at(&mut obs, cancel_after_ms), &mut obs)
                    .await;
            }
            8 => {
                let request = odd_conditions(&mut rng, &obs, &clock, key, body);
                client
                    .observed_call_until(request, cancel_at(&mut obs, cancel_after_ms), &mut obs)
                    .await;
            }
            9 => {
                let request = head_request(&mut rng, &obs, &clock, key);
                client.observed_call(request, &mut obs).await;
            }
            10 => {
                let request = set_metadata_request(&mut rng, &obs, &clock, key, body);
                client.observed_call(request, &mut obs).await;
            }
            _ => {
                // 304 if the item is still at the version this client last saw.
                let conditions = match obs.etags.get(&id) {
                    Some(e) => Conditions::if_none_match(e.clone()),
                    None => Conditions::none(),
                };
                client
                    .observed_call_until(
                        StoreRequest::Read { key, conditions },
                        cancel_at(&mut obs, cancel_after_ms),
                        &mut obs,
                    )
                    .await;
            }
        }
    }
}

/// The history's client id of the probe of item `i` is `PROBE_CLIENT + i`:
/// every item has a probe of its own (a client of its own, running at the
/// same time as the others), so an item whose server does not answer never
/// keeps the probe from the other items.
pub const PROBE_CLIENT: usize = 1_000_000;

/// True for the client ids of the probe.
pub fn is_probe(client: usize) -> bool {
    client >= PROBE_CLIENT
}

/// The probe of one item, run once every fault is healed: a read, a
/// conditional write of the body it read (a create of an empty body if
/// absent), and a final read, each retried until it succeeds or simulated
/// time passes `end_ns`. What it did not finish, the liveness check names.
pub async fn probe(
    id: String,
    probe_client: usize,
    client: &mut StoreClient,
    recorder: OccRecorder,
    end_ns: u64,
) {
    let mut obs = Observer::new(probe_client, recorder);
    let pause = || madsim::time::sleep(std::time::Duration::from_millis(200));
    let live = || overcast_model::client::sim_now_ns() < end_ns;
    let key = ItemKey::new(CONTAINER, id.clone(), id.clone());
    let read = || StoreRequest::Read {
        key: key.clone(),
        conditions: Conditions::none(),
    };
    // A read and a conditional write.
    'item: while live() {
        let r = client.observed_call(read(), &mut obs).await;
        let put = match (&r.outcome, &r.response) {
            (FinalOutcome::Response { status: 200 }, Some(resp)) => match &resp.item {
                Some(item) => StoreRequest::Put {
                    key: key.clone(),
                    body: item.body.clone().unwrap_or_default(),
                    conditions: Conditions::if_match(item.etag.clone()),
                    metadata: Metadata::new(),
                },
                None => break 'item,
            },
            (FinalOutcome::Response { status: 404 }, _) => StoreRequest::Put {
                key: key.clone(),
                body: String::new(),
                conditions: Conditions::if_none_match_any(),
                metadata: Metadata::new(),
            },
            _ => {
                pause().await;
                continue;
            }
        };
        while live() {
            let w = client.observed_call(put.clone(), &mut obs).await;
            match w.outcome {
                FinalOutcome::Response { status: 200 | 201 } => break 'item,
                // Changed since the read: read again.
                FinalOutcome::Response { status: 412 | 409 } => continue 'item,
                _ => pause().await,
            }
        }
    }
    // The final read, which the application invariant judges.
    while live() {
        let r = client.observed_call(read(), &mut obs).await;
        if matches!(r.outcome, FinalOutcome::Response { status: 200 | 404 }) {
            break;
        }
        pause().await;
    }
}

/// A date to name in a condition: this client's own (possibly skewed) clock
/// a moment ago, or a Last-Modified it has seen of item `id`, give or take a
/// second.
fn seen_date(rng: &mut impl Rng, obs: &Observer, clock: &NodeClock, id: &str) -> u64 {
    match (obs.last_modified.get(id), rng.gen_bool(0.5)) {
        (Some(lm), true) => (lm + rng.gen_range(0..3) * 1000).saturating_sub(1000),
        _ => clock.now_ms().saturating_sub(rng.gen_range(0..5_000)),
    }
}

/// The ETag no item ever has.
fn stranger() -> ETag {
    ETag::quoted("0x8DFFFFFFFFFFFFFF")
}

/// A HEAD (Get Blob Properties) with Get Blob's conditions (SPEC §1.1.4):
/// none; `If-Match` on the ETag this client last saw (200 while unchanged,
/// else 412) or on the one before it (stale: 412); `If-None-Match` on
/// either (304 while current, else 200); or a date.
fn head_request(
    rng: &mut impl Rng,
    obs: &Observer,
    clock: &NodeClock,
    key: ItemKey,
) -> StoreRequest {
    let seen = obs.etags.get(&key.id).cloned();
    let stale = obs.stale.get(&key.id).cloned().unwrap_or_else(stranger);
    let conditions = match (rng.gen_range(0..7), seen) {
        (0, _) => Conditions::none(),
        (1, Some(e)) => Conditions::if_match(e),
        (1, None) => Conditions::if_match_any(),
        (2, _) => Conditions::if_match(stale),
        (3, Some(e)) => Conditions::if_none_match(e),
        (3 | 4, _) => Conditions::if_none_match(stale),
        (5, _) => Conditions::if_modified_since(seen_date(rng, obs, clock, &key.id)),
        _ => Conditions::if_unmodified_since(seen_date(rng, obs, clock, &key.id)),
    };
    StoreRequest::GetProperties { key, conditions }
}

/// A Set Blob Metadata naming this client as the writer (`token`), with a
/// write's conditions (SPEC §1.1.3): mostly `If-Match` on the ETag this
/// client last saw, sometimes on the one before it (stale: 412), sometimes
/// `If-Unmodified-Since` a date, sometimes none.
fn set_metadata_request(
    rng: &mut impl Rng,
    obs: &Observer,
    clock: &NodeClock,
    key: ItemKey,
    token: String,
) -> StoreRequest {
    let seen = obs.etags.get(&key.id).cloned();
    let stale = obs.stale.get(&key.id).cloned();
    let conditions = match (rng.gen_range(0..6), seen, stale) {
        (0, ..) => Conditions::none(),
        (1, _, Some(old)) => Conditions::if_match(old),
        (2, ..) => Conditions::if_unmodified_since(seen_date(rng, obs, clock, &key.id)),
        (_, Some(e), _) => Conditions::if_match(e),
        (_, None, _) => Conditions::none(),
    };
    StoreRequest::SetMetadata {
        key,
        metadata: Metadata::from([("writer".to_string(), token)]),
        conditions,
    }
}

/// A request with one of the condition shapes of SPEC §1.1.3 and §1.1.4 the
/// other operations never send: `If-Match` on reads, several ETags in one
/// header, date conditions (from this client's own, possibly skewed, clock or
/// from a Last-Modified it has seen, give or take a second), and illegal
/// combinations (400, nothing changed).
fn odd_conditions(
    rng: &mut impl Rng,
    obs: &Observer,
    clock: &NodeClock,
    key: ItemKey,
    body: String,
) -> StoreRequest {
    let etag = obs.etags.get(&key.id).cloned();
    let stranger = stranger();
    let seen = etag.clone().unwrap_or_else(|| stranger.clone());
    let (shape, sub, coin, coin2) = (
        rng.gen_range(0..12),
        rng.gen_range(0..3),
        rng.gen_bool(0.5),
        rng.gen_bool(0.5),
    );
    let mut date = || seen_date(rng, obs, clock, &key.id);
    let c = |f: &dyn Fn(&mut Conditions)| {
        let mut c = Conditions::none();
        f(&mut c);
        c
    };
    let read = |conditions| StoreRequest::Read {
        key: key.clone(),
        conditions,
    };
    let put = |conditions| StoreRequest::Put {
        key: key.clone(),
        body: body.clone(),
        conditions,
        metadata: Metadata::new(),
    };
    match shape {
        0 => read(match &etag {
            Some(e) => Conditions::if_match(e.clone()),
            None => Conditions::if_match_any(),
        }),
        1 => {
            // Sometimes with If-Modified-Since too: which of the two was
            // false decides the 304 (SPEC §1.1.4).
            // (And sometimes naming only an ETag the item never had, so
            // that If-None-Match holds and the date decides.)
            let t = coin.then(&mut date);
            let tags = if coin && coin2 {
                vec![stranger.clone()]
            } else {
                vec![stranger.clone(), seen.clone()]
            };
            read(c(&|c| {
                c.if_none_match = Some(EtagMatch::Tags(tags.clone()));
                c.if_modified_since = t.map(|t| vec![t]);
            }))
        }
        2 => read(c(&|c| {
            c.if_match = Some(EtagMatch::Tags(vec![stranger.clone(), seen.clone()]))
        })),
        3 => read(Conditions::if_modified_since(date())),
        4 => read(Conditions::if_unmodified_since(date())),
        5 => {
            let (a, b) = (date(), date());
            read(c(&|c| {
                c.if_modified_since = Some(vec![a]);
                c.if_unmodified_since = Some(vec![b]);
            }))
        }
        // A delete with `If-None-Match: *` is 412 on an existing item.
        6 if coin && coin2 => StoreRequest::Delete {
            key: key.clone(),
            conditions: Conditions::if_none_match_any(),
        },
        6 => read(Conditions::if_none_match_any()),
        7 => {
            let (a, b) = (date(), date());
            read(c(&|c| c.if_modified_since = Some(vec![a, b])))
        }
        8 => {
            let t = date();
            put(c(&|c| {
                c.if_match = Some(EtagMatch::Tags(vec![seen.clone()]));
                c.if_unmodified_since = Some(vec![t]);
            }))
        }
        9 => {
            let t = date();
            put(c(&|c| {
                c.if_none_match = Some(EtagMatch::Tags(vec![seen.clone()]));
                c.if_modified_since = Some(vec![t]);
            }))
        }
        10 => match sub {
            // Illegal: a pair other than the two allowed, two ETags on a
            // write, or three headers.
            0 => put(c(&|c| {
                c.if_match = Some(EtagMatch::Tags(vec![seen.clone()]));
                c.if_none_match = Some(EtagMatch::Any);
            })),
            1 => put(c(&|c| {
                c.if_match = Some(EtagMatch::Tags(vec![seen.clone(), stranger.clone()]))
            })),
            _ => {
                let t = date();
                if coin {
                    StoreRequest::Delete {
                        key: key.clone(),
                        conditions: c(&|c| {
                            c.if_match = Some(EtagMatch::Any);
                            c.if_modified_since = Some(vec![t]);
                        }),
                    }
                } else {
                    // Three headers (SPEC §1.1.3 step 1 allows at most two).
                    put(c(&|c| {
                        c.if_match = Some(EtagMatch::Tags(vec![seen.clone()]));
                        c.if_unmodified_since = Some(vec![t]);
                        c.if_modified_since = Some(vec![t]);
                    }))
                }
            }
        },
        _ => {
            let t = date();
            let conditions = if coin {
                Conditions::if_unmodified_since(t)
            } else {
                Conditions::if_modified_since(t)
            };
            if coin2 {
                put(conditions)
            } else {
                StoreRequest::Delete { key, conditions }
            }
        }
    }
}
