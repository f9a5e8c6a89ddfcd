//! The `leases` workload: holders that contend for blob leases through the
//! lease-holder library (acquire with a proposed id, renew at half time, act
//! under the lease, fenced writes of content or metadata, release or
//! abandon), plain clients that read (Get Blob, or Get Blob Properties with
//! conditions), write (Put Blob or Set Blob Metadata), break, take one-shot leases without a proposed id, change
//! ids, hold infinite leases for long stretches (writing, renewing and
//! releasing during the breaks that hit them), break leases and take them
//! over, and work on the container lease; and the server's log device,
//! which records every log record as the server's view of what happened.

use super::history::{begin, Call, LeaseEvent, LeaseRecorder, Outcome};
use super::{blob_key, LeasesParams, CONTAINER};
use crate::kit::attempts::attempt;
use crate::kit::bridge::ClockAdapter;
use crate::kit::draws::unit_stream;
use overcast_model::client::{sim_now_ns, CallResult, StoreClient};
use overcast_model::conditions::{Conditions, ETag};
use overcast_model::env::Clock;
use overcast_model::lease::{LeaseAction, LeaseRequest, LeaseResponse, LeaseTarget};
use overcast_model::lease_client::with_lease;
use overcast_model::lease_holder::{Attempted, ClockBound, HolderConfig, LeaseHolder};
use overcast_model::retry::FinalOutcome;
use overcast_model::store::{ItemKey, Metadata, StoreRequest, StoreResponse};
use rand::Rng;
use std::time::Duration;

/// A version no blob reaches in a run: its ETag fails every `If-Match`.
const NO_SUCH_VERSION: u64 = (1 << 56) - 1;

/// The share of a holder's fenced writes, and of a client's writes, that set
/// the blob's metadata (Set Blob Metadata) rather than its content (Put Blob).
const METADATA_WRITES: f64 = 0.3;

/// The share of a client's reads that are Get Blob Properties (a HEAD), with
/// conditions, rather than Get Blob.
const HEAD_READS: f64 = 0.4;

/// The metadata a write sets: who wrote it and when.
fn metadata_of(node: &str) -> Metadata {
    Metadata::from([
        ("writer".to_string(), node.to_string()),
        ("at".to_string(), sim_now_ns().to_string()),
    ])
}

/// The conditions of a client's HEAD: none, or one that passes (`If-None-Match`
/// on an ETag no blob has), fails (`If-Match` on it: 412 without a code), or
/// may answer 304 (`If-Modified-Since` a moment ago on the node's clock).
fn head_conditions(rng: &mut impl Rng, clock: &dyn Clock) -> Conditions {
    match rng.gen_range(0..4) {
        0 => Conditions::none(),
        1 => Conditions::if_none_match(ETag::from_version(NO_SUCH_VERSION)),
        2 => Conditions::if_match(ETag::from_version(NO_SUCH_VERSION)),
        _ => Conditions::if_modified_since(clock.now_ms().saturating_sub(5_000)),
    }
}

/// One node's recording handle: its op identity, its name and clock.
pub struct Node {
    /// The recorder.
    pub rec: LeaseRecorder,
    /// The `client` number its calls carry.
    pub id: usize,
    /// Its incarnation name (events).
    pub name: String,
    /// Its clock.
    pub clock: ClockAdapter,
}

impl Node {
    fn event(&self, e: LeaseEvent) {
        self.rec.event(self.name.clone(), self.clock.now_ms(), e);
    }

    fn finish<R>(
        &self,
        slot: overcast_sim::history::Slot,
        r: &CallResult<R>,
        outcome: Option<Outcome>,
    ) {
        let attempts = r.attempts.iter().map(attempt).collect();
        self.rec
            .complete(slot, Some(r.return_ns), outcome, attempts);
    }

    /// A recorded lease call.
    pub async fn lease(
        &self,
        client: &mut StoreClient,
        req: LeaseRequest,
    ) -> CallResult<LeaseResponse> {
        let slot = begin(&self.rec, self.id, Call::from_lease(&req), sim_now_ns());
        let r = client.lease(&req).await;
        self.finish(slot, &r, Outcome::from_lease(&r));
        r
    }

    /// A recorded store call.
    pub async fn store(
        &self,
        client: &mut StoreClient,
        req: StoreRequest,
    ) -> CallResult<StoreResponse> {
        let slot = begin(&self.rec, self.id, Call::from_store(&req), sim_now_ns());
        let r = client.call(req).await;
        self.finish(slot, &r, Outcome::from_store(&r));
        r
    }

    /// A recorded Get Blob Properties.
    pub async fn head(&self, client: &mut StoreClient, key: ItemKey, conditions: Conditions) {
        let req = StoreRequest::GetProperties {
            key: key.clone(),
            conditions: conditions.clone(),
        };
        let slot = begin(&self.rec, self.id, Call::from_store(&req), sim_now_ns());
        let r = client.get_properties(&key, conditions).await;
        self.finish(slot, &r, Outcome::from_store(&r));
    }
}

/// The calls of one holder round or client operation the shrinker can leave
/// out one by one are numbered `unit * CALLS_PER_UNIT + k` (see
/// [`overcast_harness::ops`]): `k` 0 is the unit itself (leaving it out leaves out the
/// whole round), `k` > 0 its later calls, so leaving one out renumbers no
/// other unit's.
const CALLS_PER_UNIT: usize = 1000;

/// Counts the calls of one unit (a holder round, a client operation) for
/// [`overcast_harness::ops::skipped`].
struct Calls<'a> {
    node: &'a str,
    unit: usize,
    k: usize,
    /// The blob the unit is about, if one ([`overcast_harness::ops::about`]).
    subject: Option<String>,
}

impl<'a> Calls<'a> {
    /// The calls of unit `unit` of node `node`, about blob `subject` if
    /// one; none counted yet.
    fn new(node: &'a str, unit: usize, subject: Option<String>) -> Calls<'a> {
        Calls {
            node,
            unit,
            k: 0,
            subject,
        }
    }

    /// Whether the next call is left out (its place paced as the others').
    async fn skipped(&mut self) -> bool {
        let k = self.k.min(CALLS_PER_UNIT - 1);
        self.k += 1;
        let op = self.unit * CALLS_PER_UNIT + k;
        if let Some(subject) = &self.subject {
            overcast_harness::ops::about(self.node, op, subject);
        }
        overcast_harness::ops::skipped(self.node, op).await
    }
}

/// A GUID from `rng`.
fn guid(rng: &mut impl Rng) -> String {
    let (a, b): (u64, u64) = (rng.gen(), rng.gen());
    let a = (a & 0xFFFF_FFFF_FFFF_0FFF) | 0x4000;
    let b = (b & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
    overcast_model::lease::parse_guid(&format!("{a:016x}{b:016x}")).expect("32 hex digits")
}

async fn sleep_ms(rng: &mut impl Rng, (lo, hi): (u64, u64)) {
    let ms = rng.gen_range(lo..=hi.max(lo));
    madsim::time::sleep(Duration::from_millis(ms.max(1))).await;
}

fn succeeded<R>(r: &CallResult<R>) -> bool {
    matches!(r.outcome, FinalOutcome::Response { status: 200..=299 })
}

fn past(deadline_ns: u64) -> bool {
    sim_now_ns() >= deadline_ns
}

/// Makes the blob exist again (and its container) after a container delete.
async fn recreate(node: &Node, client: &mut StoreClient, target: &LeaseTarget) {
    let LeaseTarget::Blob(key) = target else {
        return;
    };
    let put = StoreRequest::Put {
        key: key.clone(),
        body: "created".into(),
        conditions: Conditions::if_none_match_any(),
        metadata: Metadata::new(),
    };
    let r = node.store(client, put.clone()).await;
    if r.response.as_ref().and_then(|x| x.error_code.as_deref()) == Some("ContainerNotFound") {
        let create = StoreRequest::CreateContainer {
            container: CONTAINER.into(),
        };
        node.store(client, create).await;
        node.store(client, put).await;
    }
}

/// One holder's life (one incarnation): contend, hold, act, let go; again.
pub async fn holder(
    p: &LeasesParams,
    node: &Node,
    client: &mut StoreClient,
    mut rounds: impl Rng,
    bugs: overcast_model::bugs::ModelBugs,
    deadline_ns: u64,
) {
    for round in 0..p.holder_rounds {
        if past(deadline_ns) {
            break;
        }
        let mut rng = unit_stream(&mut rounds);
        let target = LeaseTarget::Blob(blob_key(rng.gen_range(0..p.blobs)));
        let cfg = HolderConfig {
            target: target.clone(),
            duration_s: p.duration_s,
            bound: ClockBound::DEFAULT,
            bugs,
        };
        let mut h = LeaseHolder::new(cfg, guid(&mut rng));
        // The round's first acquire is the round: leaving it out leaves the round out.
        let subject = match &target {
            LeaseTarget::Blob(key) => key.id.clone(),
            LeaseTarget::Container(name) => name.clone(),
        };
        let mut calls = Calls::new(&node.name, round, Some(subject));
        if calls.skipped().await {
            continue;
        }
        let mut held = false;
        for attempt in 0..p.acquire_tries {
            if past(deadline_ns) {
                break;
            }
            if attempt > 0 && calls.skipped().await {
                sleep_ms(&mut rng, p.retry_ms).await;
                continue;
            }
            let slot = begin(
                &node.rec,
                node.id,
                Call::from_lease(&h.acquire_request()),
                sim_now_ns(),
            );
            let (att, r) = h.acquire(client, &node.clock).await;
            node.finish(slot, &r, Outcome::from_lease(&r));
            match att {
                Attempted::Held(b) => {
                    node.event(LeaseEvent::Believes {
                        target: target.name(),
                        lease_id: b.lease_id,
                        until_local_ms: b.until_local_ms,
                    });
                    held = true;
                    break;
                }
                Attempted::Refused(404) => recreate(node, client, &target).await,
                _ => {}
            }
            sleep_ms(&mut rng, p.retry_ms).await;
        }
        if !held {
            continue;
        }
        let steps = rng.gen_range(1..=p.hold_steps.max(1));
        // A holder that stops renewing (a stuck renew thread) and keeps working
        // until its own clock says the lease is gone.
        let stalls = rng.gen_bool(p.stall_probability);
        let mut lost = false;
        let mut step = 0;
        // A stalled holder works on until its own clock says the lease is gone.
        while stalls || step < steps {
            step += 1;
            sleep_ms(&mut rng, p.work_ms).await;
            if past(deadline_ns) {
                break;
            }
            if !stalls && h.should_renew(node.clock.now_ms()) && !calls.skipped().await {
                let req = h.renew_request().expect("a belief to renew");
                let slot = begin(&node.rec, node.id, Call::from_lease(&req), sim_now_ns());
                let Some((att, r)) = h.renew(client, &node.clock).await else {
                    break;
                };
                node.finish(slot, &r, Outcome::from_lease(&r));
                match att {
                    Attempted::Held(b) => node.event(LeaseEvent::Believes {
                        target: target.name(),
                        lease_id: b.lease_id,
                        until_local_ms: b.until_local_ms,
                    }),
                    other => {
                        let why = format!("renew: {other:?}");
                        lost = true;
                        node.event(LeaseEvent::Dropped {
                            target: target.name(),
                            lease_id: h.lease_id().unwrap_or_default().to_string(),
                            why,
                        });
                        break;
                    }
                }
            }
            if rng.gen_range(0..10) < 7 {
                let name = target.name();
                let acted = h.act_unfenced(&node.clock, |b, _| {
                    node.event(LeaseEvent::SideEffect {
                        target: name.clone(),
                        lease_id: b.lease_id.clone(),
                    })
                });
                if !acted {
                    lost = true;
                    node.event(LeaseEvent::Dropped {
                        target: target.name(),
                        lease_id: h.lease_id().unwrap_or_default().to_string(),
                        why: "time up".into(),
                    });
                    break;
                }
            } else if !calls.skipped().await {
                let invoke = sim_now_ns();
                let written = if rng.gen_bool(METADATA_WRITES) {
                    let metadata = metadata_of(&node.name);
                    h.fenced_set_metadata(client, &node.clock, metadata).await
                } else {
                    let body = format!("{}@{}", node.name, sim_now_ns());
                    h.fenced_put(client, &node.clock, body).await
                };
                if let Some((req, r)) = written {
                    let slot = begin(&node.rec, node.id, Call::from_store(&req), invoke);
                    node.finish(slot, &r, Outcome::from_store(&r));
                }
            }
        }
        if lost {
            continue;
        }
        let Some(id) = h.lease_id().map(str::to_string) else {
            continue;
        };
        node.event(LeaseEvent::Dropped {
            target: target.name(),
            lease_id: id.clone(),
            why: if stalls { "abandoned" } else { "released" }.into(),
        });
        if stalls || rng.gen_bool(0.2) || calls.skipped().await {
            h.forget();
        } else {
            let req = LeaseRequest::Action {
                target: target.clone(),
                action: LeaseAction::Release { lease_id: id },
                conditions: Conditions::none(),
            };
            h.forget();
            node.lease(client, req).await;
        }
    }
}

fn action(target: &LeaseTarget, action: LeaseAction) -> LeaseRequest {
    LeaseRequest::Action {
        target: target.clone(),
        action,
        conditions: Conditions::none(),
    }
}

/// The share of a client's operations that, on an explorer's branch (past
/// its first point), delete a blob the client leases ([`delete_under_lease`]).
/// No plain run takes that step, so plain traces are as they were.
pub const BRANCH_DELETE_UNDER_LEASE: f64 = 0.25;

/// One plain client's life: reads, writes without ids (some with a condition
/// that fails on an existing blob), breaks, one-shot leases without a
/// proposed id, changes, and the container's lease and deletes. On an
/// explorer's branch some of its operations are [`delete_under_lease`],
/// drawn from `branch`, a stream no plain run draws.
pub async fn client(
    p: &LeasesParams,
    node: &Node,
    client: &mut StoreClient,
    mut ops: impl Rng,
    mut branch: impl Rng,
    deadline_ns: u64,
) {
    let container = LeaseTarget::Container(CONTAINER.into());
    for n in 0..p.client_ops {
        if past(deadline_ns) {
            break;
        }
        let mut rng = unit_stream(&mut ops);
        sleep_ms(&mut rng, p.client_pause_ms).await;
        let key = blob_key(rng.gen_range(0..p.blobs));
        let blob = LeaseTarget::Blob(key.clone());
        let m = &p.mix;
        // New kinds go last, so a saved file without their weights draws
        // as it did before they existed.
        let weights = [
            m.read,
            m.write,
            m.r#break,
            m.one_shot,
            m.change,
            m.container,
            m.hold_infinite,
            m.break_and_take,
        ];
        let total: u32 = weights.iter().sum();
        let mut pick = rng.gen_range(0..total.max(1));
        let mut kind = 0;
        while kind < weights.len() - 1 && pick >= weights[kind] {
            pick -= weights[kind];
            kind += 1;
        }
        // The operation's first call is the operation: leaving it out leaves
        // the operation out; its later calls can be left out one by one.
        // A container operation is about every blob of it.
        let subject = (kind != 5).then(|| key.id.clone());
        let mut calls = Calls::new(&node.name, n, subject);
        if calls.skipped().await {
            continue;
        }
        if overcast_sim::rng::past_branch_point() && branch.gen_bool(BRANCH_DELETE_UNDER_LEASE) {
            delete_under_lease(node, client, &blob, &mut branch, &mut calls).await;
            continue;
        }
        match kind {
            0 if rng.gen_bool(HEAD_READS) => {
                let conditions = head_conditions(&mut rng, &node.clock);
                node.head(client, key, conditions).await;
            }
            0 => {
                let read = StoreRequest::Read {
                    key,
                    conditions: Conditions::none(),
                };
                node.store(client, read).await;
            }
            1 => {
                // Some writes carry a condition that fails on an existing blob:
                // where the blob is leased, the lease check must refuse it first.
                let conditions = if p.conditional_writes > 0.0 && rng.gen_bool(p.conditional_writes)
                {
                    if rng.gen_bool(0.5) {
                        Conditions::if_none_match_any()
                    } else {
                        Conditions::if_match(ETag::from_version(NO_SUCH_VERSION))
                    }
                } else {
                    Conditions::none()
                };
                let write = if rng.gen_bool(METADATA_WRITES) {
                    StoreRequest::SetMetadata {
                        key,
                        metadata: metadata_of(&node.name),
                        conditions,
                    }
                } else {
                    StoreRequest::Put {
                        key,
                        body: format!("{}@{}", node.name, sim_now_ns()),
                        conditions,
                        metadata: Metadata::new(),
                    }
                };
                node.store(client, write).await;
            }
            2 => {
                let period = match rng.gen_range(0..4) {
                    0 => None,
                    1 => Some(0),
                    _ => Some(rng.gen_range(1..=20)),
                };
                let brk = action(
                    &blob,
                    LeaseAction::Break {
                        break_period: period,
                    },
                );
                node.lease(client, brk).await;
            }
            3 => {
                // A one-shot lease without a proposed id: acquire, write under it, release.
                let duration = if rng.gen_bool(0.2) { -1 } else { 15 };
                let acq = action(
                    &blob,
                    LeaseAction::Acquire {
                        duration: Some(duration),
                        proposed_id: None,
                    },
                );
                let r = node.lease(client, acq).await;
                let Some(id) = r.response.and_then(|x| x.lease_id) else {
                    continue;
                };
                if !calls.skipped().await {
                    let put = StoreRequest::Put {
                        key,
                        body: format!("{}@{}", node.name, sim_now_ns()),
                        conditions: with_lease(Conditions::none(), id.clone()),
                        metadata: Metadata::new(),
                    };
                    node.store(client, put).await;
                }
                if !calls.skipped().await {
                    let release = action(&blob, LeaseAction::Release { lease_id: id });
                    node.lease(client, release).await;
                }
            }
            4 => {
                // Acquire with a proposed id, change it, write with the new one, release.
                let (a, b) = (guid(&mut rng), guid(&mut rng));
                let acq = action(
                    &blob,
                    LeaseAction::Acquire {
                        duration: Some(15),
                        proposed_id: Some(a.clone()),
                    },
                );
                if !succeeded(&node.lease(client, acq).await) {
                    continue;
                }
                let change = action(
                    &blob,
                    LeaseAction::Change {
                        lease_id: a,
                        proposed_id: Some(b.clone()),
                    },
                );
                if !calls.skipped().await {
                    node.lease(client, change).await;
                }
                if !calls.skipped().await {
                    let put = StoreRequest::Put {
                        key,
                        body: format!("{}@{}", node.name, sim_now_ns()),
                        conditions: with_lease(Conditions::none(), b.clone()),
                        metadata: Metadata::new(),
                    };
                    node.store(client, put).await;
                }
                if !calls.skipped().await {
                    let release = action(&blob, LeaseAction::Release { lease_id: b });
                    node.lease(client, release).await;
                }
            }
            6 => hold_infinite(p, node, client, &blob, &mut rng, &mut calls, deadline_ns).await,
            7 => break_and_take(p, node, client, &blob, &mut rng, &mut calls).await,
            _ => {
                // The container: lease it, set metadata without the id, sometimes
                // delete it (with or without the id), release.
                let acq = action(
                    &container,
                    LeaseAction::Acquire {
                        duration: Some(15),
                        proposed_id: None,
                    },
                );
                let r = node.lease(client, acq).await;
                let id = r.response.and_then(|x| x.lease_id);
                let meta = LeaseRequest::SetContainerMetadata {
                    container: CONTAINER.into(),
                    lease_id: None,
                };
                if !calls.skipped().await {
                    node.lease(client, meta).await;
                }
                if rng.gen_bool(p.container_delete_probability) {
                    let with_id = rng.gen_bool(0.5);
                    let del = LeaseRequest::DeleteContainer {
                        container: CONTAINER.into(),
                        lease_id: id.clone().filter(|_| with_id),
                    };
                    let r = node.lease(client, del).await;
                    if succeeded(&r) {
                        let create = StoreRequest::CreateContainer {
                            container: CONTAINER.into(),
                        };
                        node.store(client, create).await;
                        continue;
                    }
                }
                if let Some(id) = id {
                    if !calls.skipped().await {
                        let release = action(&container, LeaseAction::Release { lease_id: id });
                        node.lease(client, release).await;
                    }
                }
            }
        }
    }
}

/// The 409 code of a lease answer, if it is one.
fn lease_code(r: &CallResult<LeaseResponse>) -> Option<&str> {
    r.response.as_ref()?.error_code.as_deref()
}

/// The 412 code of a store answer, if it is one.
fn store_code(r: &CallResult<StoreResponse>) -> Option<&str> {
    r.response.as_ref()?.error_code.as_deref()
}

/// Acquires `blob` with `id` for `duration` s (-1: infinite), again after
/// each refusal (another lease holds it, or its break still runs), at most
/// `tries` times, pausing `pause_ms` between tries. Whether it was granted.
#[allow(clippy::too_many_arguments)]
async fn acquire_until_granted(
    node: &Node,
    client: &mut StoreClient,
    blob: &LeaseTarget,
    id: &str,
    duration: i64,
    tries: usize,
    pause_ms: (u64, u64),
    rng: &mut impl Rng,
    calls: &mut Calls<'_>,
) -> bool {
    for _ in 0..tries {
        if !calls.skipped().await {
            let acq = action(
                blob,
                LeaseAction::Acquire {
                    duration: Some(duration),
                    proposed_id: Some(id.to_string()),
                },
            );
            let r = node.lease(client, acq).await;
            if succeeded(&r) {
                return true;
            }
            // A missing blob (or container) is not a lease to wait for.
            if r.response.as_ref().is_some_and(|x| x.status == 404) {
                return false;
            }
        }
        sleep_ms(rng, pause_ms).await;
    }
    false
}

/// Holds an infinite lease on `blob` for a long stretch (SPEC §2.3: it never
/// expires, so only a release or a break ends it): acquires it with an id of
/// its own, waiting out other holders, then until the stretch is over
/// writes, reads and renews (a no-op on an infinite lease) with the id. A
/// renew refused because a break hit the lease (409
/// `LeaseIsBrokenAndCannotBeRenewed`) or a write refused because the lease
/// is gone ends the stretch early; either way it writes once more with the
/// id (during the break, if it still runs) and releases.
async fn hold_infinite(
    p: &LeasesParams,
    node: &Node,
    client: &mut StoreClient,
    blob: &LeaseTarget,
    rng: &mut impl Rng,
    calls: &mut Calls<'_>,
    deadline_ns: u64,
) {
    let LeaseTarget::Blob(key) = blob else {
        return;
    };
    let id = guid(rng);
    if !acquire_until_granted(node, client, blob, &id, -1, 20, p.retry_ms, rng, calls).await {
        return;
    }
    let (lo, hi) = p.infinite_hold_ms;
    let until = sim_now_ns() + rng.gen_range(lo..=hi.max(lo)) * 1_000_000;
    let put = |body: String| StoreRequest::Put {
        key: key.clone(),
        body,
        conditions: with_lease(Conditions::none(), id.clone()),
        metadata: Metadata::new(),
    };
    while sim_now_ns() < until && !past(deadline_ns) {
        sleep_ms(rng, p.work_ms).await;
        let pick = rng.gen_range(0..10);
        if calls.skipped().await {
            continue;
        }
        match pick {
            0..=4 => {
                // Some of the writes under the lease set metadata.
                let write = if pick == 4 {
                    StoreRequest::SetMetadata {
                        key: key.clone(),
                        metadata: metadata_of(&node.name),
                        conditions: with_lease(Conditions::none(), id.clone()),
                    }
                } else {
                    put(format!("{}@{}", node.name, sim_now_ns()))
                };
                let r = node.store(client, write).await;
                // `LeaseLost`, `LeaseNotPresentWithBlobOperation`,
                // `LeaseIdMismatchWithBlobOperation`: the lease is not ours now.
                if store_code(&r).is_some_and(|c| c.starts_with("Lease")) {
                    break;
                }
            }
            5..=6 => {
                let read = StoreRequest::Read {
                    key: key.clone(),
                    conditions: with_lease(Conditions::none(), id.clone()),
                };
                node.store(client, read).await;
            }
            _ => {
                let renew = action(
                    blob,
                    LeaseAction::Renew {
                        lease_id: id.clone(),
                    },
                );
                let r = node.lease(client, renew).await;
                if lease_code(&r).is_some_and(|c| c.starts_with("Lease")) {
                    // Broken or breaking: what else the tables say there.
                    for _ in 0..2 {
                        probe(node, client, blob, &id, &guid(rng), rng, calls).await;
                    }
                    break;
                }
            }
        }
    }
    if !calls.skipped().await {
        node.store(client, put(format!("{}@{}", node.name, sim_now_ns())))
            .await;
    }
    if !calls.skipped().await {
        let release = action(blob, LeaseAction::Release { lease_id: id });
        node.lease(client, release).await;
    }
}

/// Breaks `blob`'s lease (no period, at once, or after 1–8 s) and takes it
/// over: acquires it with an id of its own, again while the break runs (409
/// `LeaseAlreadyPresent`) until it is granted or the tries run out; then
/// changes the id, sends the same change again (as a retry after a lost
/// answer would: SPEC §2.3 grants it, the proposed id being current), writes
/// under the new id, renews and releases.
async fn break_and_take(
    p: &LeasesParams,
    node: &Node,
    client: &mut StoreClient,
    blob: &LeaseTarget,
    rng: &mut impl Rng,
    calls: &mut Calls<'_>,
) {
    let LeaseTarget::Blob(key) = blob else {
        return;
    };
    let period = match rng.gen_range(0..3) {
        0 => None,
        1 => Some(0),
        _ => Some(rng.gen_range(1..=8)),
    };
    let brk = action(
        blob,
        LeaseAction::Break {
            break_period: period,
        },
    );
    node.lease(client, brk).await;
    let (a, b) = (guid(rng), guid(rng));
    let duration = if rng.gen_bool(0.3) { -1 } else { 15 };
    // Pauses four times the holders' between tries: a break of a fixed
    // lease without a period runs up to its whole duration.
    let pause = (p.retry_ms.0 * 4, p.retry_ms.1 * 4);
    if !acquire_until_granted(node, client, blob, &a, duration, 20, pause, rng, calls).await {
        return;
    }
    let change = action(
        blob,
        LeaseAction::Change {
            lease_id: a.clone(),
            proposed_id: Some(b.clone()),
        },
    );
    for _ in 0..2 {
        if !calls.skipped().await {
            node.lease(client, change.clone()).await;
        }
    }
    if !calls.skipped().await {
        let read = StoreRequest::Read {
            key: key.clone(),
            conditions: with_lease(Conditions::none(), a.clone()),
        };
        node.store(client, read).await;
    }
    // Sometimes a fixed lease is let lapse: just past its expiry (before
    // the holders' next acquire, if they are slow enough) one call of the
    // tables with the lapsed id or the old one, three times.
    if duration > 0 && rng.gen_bool(0.5) {
        // The calls since the grant took some ms already: soon after the
        // expiry, before a holder's next try takes the lease.
        let lapse_ms = duration as u64 * 1000 + rng.gen_range(0..=100);
        madsim::time::sleep(Duration::from_millis(lapse_ms)).await;
        for _ in 0..3 {
            probe(node, client, blob, &b, &a, rng, calls).await;
        }
    }
    if !calls.skipped().await {
        let put = StoreRequest::Put {
            key: key.clone(),
            body: format!("{}@{}", node.name, sim_now_ns()),
            conditions: with_lease(Conditions::none(), b.clone()),
            metadata: Metadata::new(),
        };
        node.store(client, put).await;
    }
    if !calls.skipped().await {
        let renew = action(
            blob,
            LeaseAction::Renew {
                lease_id: b.clone(),
            },
        );
        node.lease(client, renew).await;
    }
    if !calls.skipped().await {
        let release = action(blob, LeaseAction::Release { lease_id: b });
        node.lease(client, release).await;
    }
}

/// One call of SPEC §2.3 or §2.5, drawn: with `current` (the caller's id,
/// broken, breaking or lapsed) or `other` (an id that is not current). No
/// call drawn here can leave a lease under an id the caller forgets: a
/// change with `current` is refused in every state but leased under it,
/// which a broken, breaking or lapsed lease is not.
async fn probe(
    node: &Node,
    client: &mut StoreClient,
    blob: &LeaseTarget,
    current: &str,
    other: &str,
    rng: &mut impl Rng,
    calls: &mut Calls<'_>,
) {
    let LeaseTarget::Blob(key) = blob else {
        return;
    };
    let pick = rng.gen_range(0..15);
    let fresh = guid(rng);
    let period = rng.gen_range(0..=8);
    if calls.skipped().await {
        return;
    }
    let (cur, oth) = (current.to_string(), other.to_string());
    let store = |read: bool, id: Option<&String>| {
        let conditions = id.map_or_else(Conditions::none, |id| {
            with_lease(Conditions::none(), id.clone())
        });
        if read {
            StoreRequest::Read {
                key: key.clone(),
                conditions,
            }
        } else {
            StoreRequest::Put {
                key: key.clone(),
                body: format!("{}@{}", node.name, sim_now_ns()),
                conditions,
                metadata: Metadata::new(),
            }
        }
    };
    let change = |lease_id: &String, to: &String| LeaseAction::Change {
        lease_id: lease_id.clone(),
        proposed_id: Some(to.clone()),
    };
    let lease_action = match pick {
        0 => LeaseAction::Renew { lease_id: cur },
        1 => LeaseAction::Renew { lease_id: oth },
        2 => change(&cur, &oth),
        3 => change(&oth, &cur),
        4 => change(&oth, &fresh),
        5 => LeaseAction::Release { lease_id: oth },
        14 => LeaseAction::Release { lease_id: cur },
        6 => LeaseAction::Acquire {
            duration: Some(15),
            proposed_id: Some(cur),
        },
        7 => LeaseAction::Break {
            break_period: Some(period),
        },
        _ => {
            let req = match pick {
                8 => store(true, Some(&cur)),
                9 => store(true, Some(&oth)),
                10 => store(false, Some(&cur)),
                11 => store(false, Some(&oth)),
                12 => store(false, None),
                _ => store(true, None),
            };
            node.store(client, req).await;
            return;
        }
    };
    node.lease(client, action(blob, lease_action)).await;
}

/// A step only the explorer's branches take: lease the blob, delete it with
/// the lease id (which destroys the lease, SPEC §2.6), create it again and
/// write it without an id, then acquire it with another id and release.
/// Both must be let through on the new blob; a server that kept the lease
/// refuses them (412 `LeaseIdMissing`, 409 `LeaseAlreadyPresent`).
async fn delete_under_lease(
    node: &Node,
    client: &mut StoreClient,
    blob: &LeaseTarget,
    rng: &mut impl Rng,
    calls: &mut Calls<'_>,
) {
    let LeaseTarget::Blob(key) = blob else {
        return;
    };
    let (a, b) = (guid(rng), guid(rng));
    let acq = |id: &String| {
        action(
            blob,
            LeaseAction::Acquire {
                duration: Some(15),
                proposed_id: Some(id.clone()),
            },
        )
    };
    if !succeeded(&node.lease(client, acq(&a)).await) {
        return;
    }
    let del = StoreRequest::Delete {
        key: key.clone(),
        conditions: with_lease(Conditions::none(), a.clone()),
    };
    if calls.skipped().await || !succeeded(&node.store(client, del).await) {
        if !calls.skipped().await {
            let release = action(blob, LeaseAction::Release { lease_id: a });
            node.lease(client, release).await;
        }
        return;
    }
    if !calls.skipped().await {
        let put = StoreRequest::Put {
            key: key.clone(),
            body: format!("{}@{}", node.name, sim_now_ns()),
            conditions: Conditions::none(),
            metadata: Metadata::new(),
        };
        node.store(client, put).await;
    }
    if !calls.skipped().await && succeeded(&node.lease(client, acq(&b)).await) {
        let release = action(blob, LeaseAction::Release { lease_id: b });
        node.lease(client, release).await;
    }
}
