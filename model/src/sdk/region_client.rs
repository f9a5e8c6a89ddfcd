//! The SDK of a multi-region account (SPEC §4.1 and §4.4): writes go to the
//! write region's primary, reads by consistency level (strong: the primary;
//! session and eventual: the preferred regions in order), with session
//! tokens per partition.
//!
//! Every retry is decided by the one retry policy, [`RetryState`] (SPEC
//! §4.1–§4.3, its module doc has the table), configured with the account's
//! shape in [`RegionClientConfig::retry`]: as many preferred regions as the
//! account has, single-write, and `read_timeout_fails_over`. A single-region
//! account is the special case the plain client drives. This client keeps
//! only what is transport and addressing, and carries out the [`Route`] each
//! decision names:
//!
//! - `Same`: the region of the last attempt. After a 410 the partition's
//!   primary is learned again (the replica it names, or the write region's
//!   next replica): a `refresh_addresses` step.
//! - `NextPreferred` (503, 500 on a read): the region after the last one in
//!   the current list. Writes and strong reads never take it: only the
//!   primary serves them, in the write region, so their policy is told of
//!   one region (SPEC §4.1 row 503: "≥ 2 effective preferred regions"), and
//!   their 503 reaches the caller.
//! - `MarkUnavailableAndNextPreferred` (403/1008 on a read; a read's
//!   timeout, which the policy takes for a connection error): the region is
//!   moved to the end of the list for [`RegionClientConfig::unavailable_for`]
//!   of the client's own clock (the SDK's 5 min; the scenario scales it by
//!   1/100: 3 s), and the read goes to the head of the list (a strong read
//!   back to the write region, its primary found again).
//! - `WriteRegion`: the account's write region, learned again first when
//!   the decision says `refresh_account` (403/3: the write region moved; a
//!   session read's 404/1002 after its in-region loop goes there without).
//!
//! The policy has no clock: before each answer the client tells it how long
//! has passed since its last decision beyond the wait it asked for (the
//! attempt, and any pause of the process), which its 30 s transport window
//! counts as the SDK's stopwatch would ([`RetryState::attempt_took`]).
//!
//! A write with no answer within the request timeout is an unknown outcome
//! (408), never re-sent. Whenever the primary does not answer, its address
//! is refreshed. Session tokens: `"<partition>:<lsn>"`, one per partition,
//! sent on session reads, merged (the larger LSN kept) after every answer
//! that carries one; a new client (a restarted process) starts with none.
//!
//! Every attempt and routing decision is returned with the call (for R6).
//! Seeded bugs read here: `region_retry_loop` (the region list),
//! `session_token_merged_min` (the session tokens); the policy's, such as `removed_region_retried`, are read by
//! [`RetryState`].

use crate::core::bugs::ModelBugs;
use crate::core::env::sim_now_ns;
use crate::core::env::{Clock, SendPolicy};
use crate::node::replica::{session_token, ReadConsistency, ReplicaId};
use crate::node::replica_server::{
    Datagram, RegionReply, RegionRequest, RegionResponse, MAX_REPLICA_DATAGRAM, REPLICA_TAG,
    REPLY_TAG,
};
use crate::partition::{Request, Response};
use crate::sdk::client::AttemptLog;
use crate::sdk::retry::{
    AttemptOutcome, Decision, FinalOutcome, OpKind, RetryOptions, RetryState, Route,
};
use crate::wire;
use madsim::net::Endpoint;
use madsim::time::{sleep, timeout, Instant};
use rand::{Rng, RngCore};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// One region of the account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    /// Its name.
    pub name: String,
    /// Its replicas: ids and addresses.
    pub replicas: Vec<(ReplicaId, SocketAddr)>,
    /// True for the write region.
    pub write: bool,
}

/// The SDK's settings.
#[derive(Clone, Debug)]
pub struct RegionClientConfig {
    /// The account's regions as they are.
    pub regions: Vec<RegionInfo>,
    /// `ApplicationPreferredRegions`, in order (regions not named come after).
    pub preferred: Vec<String>,
    /// The write region of the account view the client starts with, when it
    /// is out of date (the account's write region changed since it was read):
    /// its first write meets 403/3 there.
    pub stale_write_region: Option<String>,
    /// Partitions the key space is split into.
    pub partitions: u32,
    /// The retry policy's budgets and the account's shape: `preferred_regions`
    /// is the number of regions, `request_timeout` how long an attempt waits
    /// for its answer, and `read_timeout_fails_over` is set (module doc).
    pub retry: RetryOptions,
    /// How long an unavailable region stays at the end of the list (client clock).
    pub unavailable_for: Duration,
    /// Seeded bugs.
    pub bugs: ModelBugs,
    /// What the network does to what the client sends.
    pub send: SendPolicy,
}

/// A routing decision, in the words of the regions history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteLog {
    /// `attempt`, `mark_unavailable`, `refresh_addresses` or `refresh_account`.
    pub what: &'static str,
    /// The region concerned.
    pub region: String,
    /// The status behind it (0: no answer).
    pub status: u16,
    /// Its sub-status.
    pub sub_status: u16,
    /// How long the region stays unavailable (client clock, ms), for `mark_unavailable`.
    pub for_ms: Option<u64>,
    /// The client's clock when the decision was taken (for an attempt: when
    /// it was sent), ms.
    pub local_ms: u64,
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegionFinal {
    /// A replica executed it.
    Answered {
        /// The service's answer.
        response: Response,
        /// The session token the answer carried.
        token: String,
        /// The answering region.
        region: String,
        /// The answering replica (incarnation name).
        node: String,
    },
    /// Not executed: the status the caller sees (0: the SDK gave up without one).
    Refused {
        /// The status.
        status: u16,
        /// Its sub-status.
        sub_status: u16,
        /// The region of the last attempt.
        region: Option<String>,
        /// The replica that answered last, if one did.
        node: Option<String>,
    },
    /// A write with no answer: it may or may not have taken effect (408).
    Unknown,
}

/// One call's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionCallResult {
    /// How it ended.
    pub outcome: RegionFinal,
    /// The session token sent with it (session reads).
    pub token_sent: Option<String>,
    /// Every attempt.
    pub attempts: Vec<AttemptLog>,
    /// Every routing decision.
    pub routes: Vec<RouteLog>,
    /// Simulated ns at its start and end.
    pub invoke_ns: u64,
    /// See `invoke_ns`.
    pub return_ns: u64,
}

/// Where the next attempt goes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Aim {
    /// The `i`-th region of the current preferred order (reads).
    Preferred(usize),
    /// The write region (writes, strong reads, session retries).
    WriteRegion,
    /// This region again (a read retried in the region it was sent to: the
    /// preferred order may change meanwhile, as an unavailable mark ends,
    /// and an index into it would then name another region).
    Same(String),
}

/// The SDK client of one process.
pub struct RegionClient {
    ep: Arc<Endpoint>,
    cfg: RegionClientConfig,
    clock: Arc<dyn Clock>,
    session: u64,
    next_req: u64,
    rng: Box<dyn RngCore + Send>,
    tokens: BTreeMap<u32, u64>,
    /// Region name -> unavailable until (client clock, ms).
    unavailable: BTreeMap<String, u64>,
    write_region: String,
    /// Partition -> the replica believed primary.
    primary: BTreeMap<u32, ReplicaId>,
    buf: Vec<u8>,
}

impl RegionClient {
    /// Binds the client's endpoint. `rng` draws the session id and replica choices.
    pub async fn connect(
        cfg: RegionClientConfig,
        clock: Arc<dyn Clock>,
        mut rng: Box<dyn RngCore + Send>,
    ) -> std::io::Result<RegionClient> {
        let ep = Arc::new(Endpoint::bind("0.0.0.0:0").await?);
        let write_region = cfg
            .stale_write_region
            .clone()
            .unwrap_or_else(|| true_write_region(&cfg.regions));
        Ok(RegionClient {
            ep,
            session: rng.gen(),
            next_req: 0,
            rng,
            tokens: BTreeMap::new(),
            unavailable: BTreeMap::new(),
            write_region,
            primary: BTreeMap::new(),
            buf: vec![0u8; MAX_REPLICA_DATAGRAM],
            cfg,
            clock,
        })
    }

    /// The client's session token for a partition, if it has one.
    pub fn token(&self, partition: u32) -> Option<String> {
        self.tokens
            .get(&partition)
            .map(|l| session_token(partition, *l))
    }

    /// The partition a request routes to.
    pub fn partition_of(&self, req: &Request) -> u32 {
        wire::partition_of(req.partition_key(), self.cfg.partitions)
    }

    /// The read regions in order: preferred first, unavailable ones (still
    /// marked on the client's clock) moved to the end. The seeded bug
    /// `region_retry_loop` ignores the marks.
    pub fn read_order(&self) -> Vec<String> {
        let mut names: Vec<String> = self.cfg.preferred.clone();
        for r in &self.cfg.regions {
            if !names.contains(&r.name) {
                names.push(r.name.clone());
            }
        }
        if self.cfg.bugs.region_retry_loop {
            return names;
        }
        let now = self.clock.now_ms();
        let (up, down): (Vec<String>, Vec<String>) = names
            .into_iter()
            .partition(|n| self.unavailable.get(n).is_none_or(|until| now >= *until));
        up.into_iter().chain(down).collect()
    }

    fn region(&self, name: &str) -> Option<&RegionInfo> {
        self.cfg.regions.iter().find(|r| r.name == name)
    }

    /// The replica of `region` the next attempt goes to.
    fn replica_in(
        &mut self,
        region: &str,
        partition: u32,
        to_primary: bool,
    ) -> Option<(ReplicaId, SocketAddr)> {
        let info = self.region(region)?.clone();
        if info.replicas.is_empty() {
            return None;
        }
        if info.write && to_primary {
            let want = self
                .primary
                .get(&partition)
                .copied()
                .unwrap_or(info.replicas[0].0);
            return info
                .replicas
                .iter()
                .find(|(id, _)| *id == want)
                .copied()
                .or(Some(info.replicas[0]));
        }
        let i = self.rng.gen_range(0..info.replicas.len());
        Some(info.replicas[i])
    }

    /// The next replica of the write region after the cached primary.
    fn rotate_primary(&mut self, partition: u32) {
        let Some(info) = self.cfg.regions.iter().find(|r| r.write) else {
            return;
        };
        let ids: Vec<ReplicaId> = info.replicas.iter().map(|(id, _)| *id).collect();
        if ids.is_empty() {
            return;
        }
        let cur = self.primary.get(&partition).copied().unwrap_or(ids[0]);
        let at = ids.iter().position(|id| *id == cur).unwrap_or(0);
        self.primary.insert(partition, ids[(at + 1) % ids.len()]);
    }

    fn mark_unavailable(
        &mut self,
        region: &str,
        routes: &mut Vec<RouteLog>,
        status: u16,
        sub_status: u16,
    ) {
        let for_ms = self.cfg.unavailable_for.as_millis() as u64;
        let now = self.clock.now_ms();
        self.unavailable.insert(region.to_string(), now + for_ms);
        routes.push(RouteLog {
            what: "mark_unavailable",
            region: region.to_string(),
            status,
            sub_status,
            for_ms: Some(for_ms),
            local_ms: now,
        });
    }

    /// A routing decision taken now.
    fn route(&self, what: &'static str, region: &str, status: u16, sub_status: u16) -> RouteLog {
        RouteLog {
            what,
            region: region.to_string(),
            status,
            sub_status,
            for_ms: None,
            local_ms: self.clock.now_ms(),
        }
    }

    /// One attempt: send, wait for the matching answer until the timeout.
    async fn attempt(&mut self, to: SocketAddr, req: &RegionRequest) -> Option<RegionResponse> {
        let bytes = wire::to_bytes(&Datagram::Client(Box::new(req.clone())));
        let sent = wire::send_datagram(&self.ep, to, REPLICA_TAG, &bytes, &self.cfg.send).await;
        let deadline = Instant::now() + self.cfg.retry.request_timeout;
        if sent.is_err() {
            sleep(deadline.saturating_duration_since(Instant::now())).await;
            return None;
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let got = timeout(left, self.ep.recv_from(REPLY_TAG, &mut self.buf)).await;
            let Ok(Ok((len, _))) = got else {
                return None;
            };
            let Some(resp) = wire::from_bytes::<RegionResponse>(&self.buf[..len]) else {
                continue;
            };
            if resp.req_id == req.req_id && resp.session == self.session {
                return Some(resp);
            }
        }
    }

    /// One logical call with the SDK's retries: [`RetryState`] decides each
    /// one, and this client carries its [`Route`] out.
    pub async fn call(&mut self, op: &Request, consistency: ReadConsistency) -> RegionCallResult {
        let invoke_ns = sim_now_ns();
        let partition = self.partition_of(op);
        let is_write = op.is_write();
        let kind = if is_write {
            OpKind::Write
        } else {
            OpKind::Read
        };
        // Writes and strong reads go to the primary, which only the write
        // region holds; other reads start at the head of the region list.
        let primary_only = is_write || consistency == ReadConsistency::Strong;
        let mut options = self.cfg.retry.clone();
        if primary_only {
            // One region can serve it: no cross-region retry.
            options.preferred_regions = 1;
        }
        let mut policy = RetryState::new(kind, options, self.cfg.bugs);
        let session_lsn = (!is_write && consistency == ReadConsistency::Session)
            .then(|| self.tokens.get(&partition).copied())
            .flatten();
        let token_sent = session_lsn.map(|l| session_token(partition, l));
        let mut attempts = Vec::new();
        let mut routes = Vec::new();
        let mut aim = if primary_only {
            Aim::WriteRegion
        } else {
            Aim::Preferred(0)
        };
        let mut waited = Duration::ZERO;
        // The last decision, and the delay it asked for: the time since, less
        // that delay, is what the policy's transport window has not counted
        // yet (the attempt, and any pause of this process).
        let (mut decided, mut asked) = (Instant::now(), Duration::ZERO);
        let finish = |outcome: RegionFinal, attempts, routes| RegionCallResult {
            outcome,
            token_sent: token_sent.clone(),
            attempts,
            routes,
            invoke_ns,
            return_ns: sim_now_ns(),
        };
        loop {
            let region = match &aim {
                Aim::WriteRegion if is_write => self.write_region.clone(),
                Aim::WriteRegion => true_write_region(&self.cfg.regions),
                Aim::Preferred(i) => {
                    let order = self.read_order();
                    order[i % order.len().max(1)].clone()
                }
                Aim::Same(region) => region.clone(),
            };
            let to_primary = primary_only || aim == Aim::WriteRegion;
            let Some((_, addr)) = self.replica_in(&region, partition, to_primary) else {
                return finish(
                    RegionFinal::Refused {
                        status: 0,
                        sub_status: 0,
                        region: Some(region),
                        node: None,
                    },
                    attempts,
                    routes,
                );
            };
            self.next_req += 1;
            let req = RegionRequest {
                req_id: self.next_req,
                session: self.session,
                partition,
                op: op.clone(),
                consistency,
                session_lsn,
            };
            let sent_ns = sim_now_ns();
            let sent_ms = self.clock.now_ms();
            let answer = self.attempt(addr, &req).await;
            policy.attempt_took(decided.elapsed().saturating_sub(asked));
            let (status, sub_status) = match &answer {
                None => (0, 0),
                Some(r) => match &r.reply {
                    RegionReply::Ok { response, .. } => (response.status(), 0),
                    RegionReply::Refused {
                        status, sub_status, ..
                    } => (*status, *sub_status as u16),
                },
            };
            let outcome = match answer {
                None => AttemptOutcome::Timeout,
                Some(_) => AttemptOutcome::with_sub_status(status, u32::from(sub_status)),
            };
            attempts.push(AttemptLog {
                sent_ns,
                waited,
                outcome: outcome.clone(),
            });
            routes.push(RouteLog {
                what: "attempt",
                region: region.clone(),
                status,
                sub_status,
                for_ms: None,
                local_ms: sent_ms,
            });
            waited = Duration::ZERO;
            if answer.is_none() && to_primary {
                // The primary did not answer: it may have moved.
                self.rotate_primary(partition);
                routes.push(self.route("refresh_addresses", &region, 0, 0));
            }
            // The jitter only salts 449 backoffs; drawn only then, so the
            // replica choices that share the generator do not shift.
            let jitter = if status == 449 { self.rng.gen() } else { 0.0 };
            let (after, route) = match policy.on_attempt(&outcome, jitter) {
                Decision::Retry { after, route } => (after, route),
                Decision::Done(done) => {
                    let outcome = match (done, answer) {
                        // The multi-region client never cancels a call: a
                        // cancelled one would be unknown too.
                        (FinalOutcome::Unknown { .. } | FinalOutcome::Cancelled { .. }, _) => {
                            RegionFinal::Unknown
                        }
                        (FinalOutcome::Response { status: surfaced }, Some(resp)) => {
                            // A status the policy made of the answer (503 for a
                            // spent 410 window) has no sub-status of its own.
                            let sub_status = if surfaced == status { sub_status } else { 0 };
                            self.answered(partition, resp, surfaced, sub_status)
                        }
                        (FinalOutcome::Response { status: surfaced }, None) => {
                            RegionFinal::Refused {
                                status: surfaced,
                                sub_status: 0,
                                region: Some(region),
                                node: None,
                            }
                        }
                    };
                    return finish(outcome, attempts, routes);
                }
            };
            if let Some(RegionResponse {
                reply:
                    RegionReply::Refused {
                        status: 410,
                        primary_hint,
                        ..
                    },
                ..
            }) = &answer
            {
                // The replica is no longer the primary: learn the one it
                // named, or try the next.
                match primary_hint {
                    Some(h) => {
                        self.primary.insert(partition, *h);
                    }
                    None => self.rotate_primary(partition),
                }
                routes.push(self.route("refresh_addresses", &region, status, sub_status));
            }
            aim = match route {
                Route::Same => match aim {
                    Aim::Preferred(_) => Aim::Same(region),
                    aim => aim,
                },
                // Told of one region, the policy does not send these here;
                // were it to, the primary is still only in the write region.
                Route::NextPreferred if primary_only => Aim::WriteRegion,
                Route::NextPreferred => {
                    let order = self.read_order();
                    let here = order.iter().position(|r| *r == region).unwrap_or(0);
                    Aim::Preferred(here + 1)
                }
                Route::MarkUnavailableAndNextPreferred => {
                    self.mark_unavailable(&region, &mut routes, status, sub_status);
                    if primary_only {
                        Aim::WriteRegion
                    } else {
                        // The marked region is now at the end of the list.
                        Aim::Preferred(0)
                    }
                }
                Route::WriteRegion { refresh_account } => {
                    if refresh_account {
                        self.write_region = true_write_region(&self.cfg.regions);
                        routes.push(self.route("refresh_account", &region, status, sub_status));
                    }
                    Aim::WriteRegion
                }
            };
            (decided, asked) = (Instant::now(), after);
            if !after.is_zero() {
                sleep(after).await;
                waited = decided.elapsed();
            }
        }
    }

    /// The call's outcome from the answer the policy stopped at: a
    /// replica's result (its session token merged), or the refusal the
    /// caller sees (`status`, `sub_status`).
    fn answered(
        &mut self,
        partition: u32,
        resp: RegionResponse,
        status: u16,
        sub_status: u16,
    ) -> RegionFinal {
        match resp.reply {
            RegionReply::Ok { response, lsn } => {
                let merged = if self.cfg.bugs.session_token_merged_min {
                    // The seeded slip: `min` for `max`.
                    self.tokens.get(&partition).map_or(lsn, |t| (*t).min(lsn))
                } else {
                    self.tokens.get(&partition).copied().unwrap_or(0).max(lsn)
                };
                self.tokens.insert(partition, merged);
                RegionFinal::Answered {
                    response,
                    token: session_token(partition, lsn),
                    region: resp.region,
                    node: resp.node,
                }
            }
            RegionReply::Refused { .. } => RegionFinal::Refused {
                status,
                sub_status,
                region: Some(resp.region),
                node: Some(resp.node),
            },
        }
    }
}

/// The account's write region (the first region if none is marked).
fn true_write_region(regions: &[RegionInfo]) -> String {
    regions
        .iter()
        .find(|r| r.write)
        .or(regions.first())
        .map(|r| r.name.clone())
        .unwrap_or_default()
}
