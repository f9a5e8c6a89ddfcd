//! The `occ` workload: clients doing reads, blind writes, creates with
//! `If-None-Match: *`, read–modify–writes through the SDK helper and
//! conditional deletes over a set of items with a hot one; and its checks:
//! linearizability of every item (E2–E5), ETag freshness (E1) and retry
//! discipline (R1–R3).

use crate::history::{Call, Outcome};
use crate::scenario::Scenario;
use crate::spec::{ItemOp, ItemResult, ItemSpec};
use overcast_model::client::{CallObserver, CallResult, RmwOutcome, StoreClient};
use overcast_model::store::{Conditions, ETag, ItemKey, StoreRequest};
use overcast_sim::check::fresh::check_fresh;
use overcast_sim::check::retry::{check_retries, RetryCase, RetryRules, Surfaced};
use overcast_sim::check::Violation;
use overcast_sim::history::{History, OpRecord, Recorder};
use overcast_sim::lin::{self, Operation};
use rand::Rng;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;

/// std's SipHash with its fixed default keys: the same hashes in every run.
type FixedState = BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

/// The container every item lives in.
pub const CONTAINER: &str = "docs";

/// Name of item `i`; each item is its own partition key, so items spread over partitions.
pub fn item_name(i: usize) -> String {
    format!("k{i}")
}

/// Records each call into the history and remembers the last ETag seen per item.
struct Observer {
    client: usize,
    recorder: Recorder<Call, Outcome>,
    etags: BTreeMap<String, ETag>,
}

impl CallObserver for Observer {
    fn on_call(&mut self, request: &StoreRequest, result: &CallResult) {
        let call = Call::from_request(request);
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
        let unknown = outcome.is_none();
        self.recorder.push(OpRecord {
            id: 0,
            client: self.client,
            key: call.item.clone(),
            call,
            invoke_ns: result.invoke_ns,
            return_ns: (!unknown).then_some(result.return_ns),
            result: outcome,
            attempts: result
                .attempts
                .iter()
                .map(crate::history::attempt)
                .collect(),
        });
    }
}

/// One client's workload.
pub async fn client_workload(
    s: Scenario,
    index: usize,
    client: &mut StoreClient,
    recorder: Recorder<Call, Outcome>,
    deadline_ns: u64,
) {
    let mut rng = overcast_sim::rng::stream(s.seed, &format!("client-{index}-workload"));
    let mut obs = Observer {
        client: index,
        recorder,
        etags: BTreeMap::new(),
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

/// The checks of `occ`, in order: linearizability of every item, E1, R1–R3.
/// Returns the violations and the linearizability report.
pub fn check(
    s: &Scenario,
    history: &History<Call, Outcome>,
    lin_opts: &lin::Options,
) -> (Vec<Violation>, lin::Report) {
    let mut violations = Vec::new();
    let (ops, e1) = to_lin_ops(history);
    let report = lin::check(&ItemSpec, &ops, lin_opts);
    if report.verdict == lin::Verdict::NotLinearizable {
        let message = match &report.failure {
            Some(f) => format!("item {}: {}", f.key, f.sentence),
            None => "not linearizable".into(),
        };
        violations.push(Violation {
            property: "linearizability".into(),
            message,
            ops: report
                .failure
                .as_ref()
                .map(|f| f.ops.iter().map(|o| o.id).collect())
                .unwrap_or_default(),
        });
    }
    violations.extend(e1);
    let rules = RetryRules {
        max_rate_limited_retries: s.retry.max_rate_limited_retries,
        max_rate_limited_wait_ms: s.retry.max_rate_limited_wait.as_millis() as u64,
    };
    let cases = history.ops.iter().map(|o| RetryCase {
        op: o.id,
        idempotent: o.call.op == "read",
        attempts: &o.attempts,
        surfaced: match &o.result {
            None => Surfaced::Unknown,
            Some(Outcome::TimedOut) => Surfaced::TimedOut,
            Some(Outcome::Response { status, .. }) => Surfaced::Status(*status),
        },
    });
    violations.extend(check_retries(&rules, cases));
    (violations, report)
}

/// Turns the history into the checker's operations (ETags replaced by the
/// versions they name), and checks E1 on the way: every successful write's
/// ETag is new for its item, and one ETag always names one version.
pub fn to_lin_ops(
    history: &History<Call, Outcome>,
) -> (Vec<Operation<ItemOp, ItemResult>>, Option<Violation>) {
    // Looked up, never iterated: a hash map with a fixed (deterministic)
    // hasher. ETags share a long prefix, which makes ordered lookups slow.
    let mut version_of: HashMap<(&str, &str), (u64, u64), FixedState> = HashMap::default();
    let mut e1 = None;
    let mut produced = Vec::new();
    for o in &history.ops {
        if let Some(Outcome::Response {
            status: 200 | 201,
            etag: Some(e),
            version: Some(v),
            ..
        }) = &o.result
        {
            if o.call.op == "put" {
                produced.push((o.key.as_str(), e.as_str(), o.id));
            }
            let (first_v, first_op) = *version_of
                .entry((o.key.as_str(), e.as_str()))
                .or_insert((*v, o.id));
            if first_v != *v && e1.is_none() {
                e1 = Some(Violation {
                    property: "E1".into(),
                    message: format!("item {}: the ETag {e} named version {first_v} (op {first_op}) and version {v} (op {})", o.key, o.id),
                    ops: vec![first_op, o.id],
                });
            }
        }
    }
    let e1 = check_fresh("E1", produced).or(e1);
    let mut ops = Vec::new();
    for o in &history.ops {
        let version = |etag: &Option<String>| {
            etag.as_ref()
                .and_then(|e| version_of.get(&(o.key.as_str(), e.as_str())).map(|v| v.0))
        };
        let input = match o.call.op.as_str() {
            "read" => match &o.call.if_none_match {
                None => ItemOp::Read,
                Some(_) => match version(&o.call.if_none_match) {
                    Some(v) => ItemOp::ReadIfNoneMatch(v),
                    None => continue,
                },
            },
            "put" => match (&o.call.if_match, &o.call.if_none_match, &o.call.body) {
                (None, None, Some(b)) => ItemOp::Put(b.clone()),
                (None, Some(star), Some(b)) if star == "*" => ItemOp::Create(b.clone()),
                (Some(_), None, Some(b)) => match version(&o.call.if_match) {
                    Some(v) => ItemOp::PutIfVersion(v, b.clone()),
                    None => continue,
                },
                _ => continue,
            },
            "delete" => match &o.call.if_match {
                None => ItemOp::Delete,
                Some(_) => match version(&o.call.if_match) {
                    Some(v) => ItemOp::DeleteIfVersion(v),
                    None => continue,
                },
            },
            _ => continue,
        };
        let output = match &o.result {
            None => None,
            Some(Outcome::TimedOut) => continue,
            Some(Outcome::Response {
                status,
                body,
                version,
                ..
            }) => Some(match (&input, status) {
                (ItemOp::Read, 200) => {
                    ItemResult::Present(body.clone().unwrap_or_default(), version.unwrap_or(0))
                }
                (ItemOp::ReadIfNoneMatch(_), 200) => {
                    ItemResult::Present(body.clone().unwrap_or_default(), version.unwrap_or(0))
                }
                (ItemOp::Read | ItemOp::ReadIfNoneMatch(_), 404) => ItemResult::Absent,
                (ItemOp::ReadIfNoneMatch(_), 304) => ItemResult::NotModified,
                (ItemOp::Read | ItemOp::ReadIfNoneMatch(_), _) => continue,
                (_, 200..=202) => ItemResult::Ok(*version),
                (_, 412) => ItemResult::PreconditionFailed,
                (_, 409) => ItemResult::Conflict,
                (ItemOp::Delete, 404) => ItemResult::NotFound,
                // 429, 449, 503 (and 410 surfaced as 503): rejected, not executed.
                _ => continue,
            }),
        };
        ops.push(Operation {
            id: o.id,
            client: o.client as u64,
            key: o.key.clone(),
            input,
            invoke: o.invoke_ns as i64,
            ret: if output.is_some() {
                o.return_ns.map(|r| r as i64)
            } else {
                None
            },
            output,
        });
    }
    (ops, e1)
}
