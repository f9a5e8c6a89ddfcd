//! The SDK of a multi-region account (SPEC §4.1 and §4.4): writes
//! go to the write region's primary, reads by consistency level (strong: the
//! primary; session and eventual: the preferred regions in order), with the
//! failover retries of §4.1 and session tokens per partition.
//!
//! Rules, and how far each is scaled (a run lasts about a simulated minute):
//!
//! - An unavailable region is moved to the end of the preferred list for
//!   [`RegionClientConfig::unavailable_for`] of the client's own clock (the
//!   SDK's 5 min; the scenario scales it by 1/100: 3 s).
//! - No answer within the request timeout on a read is a connection error:
//!   the region is marked unavailable and the read retried on the next
//!   region (after `read_retry_wait`, the SDK's 1 s), at most
//!   `max_failover_retries` times (the SDK's 120). On a write it is an
//!   unknown outcome (408): never re-sent; the primary's address is refreshed.
//! - 503: a read is retried once on the next preferred region (when there
//!   are two); a write is not retried (single-write account).
//! - 403/1008 (the region is being removed from the account): a read marks
//!   the region unavailable and goes to the next preferred region at once,
//!   counted with the connection-error failovers; a write surfaces it.
//! - 403/3: the account is refreshed (the write region is learned again) and
//!   the write retried, at most `max_forbidden_retries` times.
//! - 404/1002: the read is retried on the write region, at most
//!   [`MAX_SESSION_TOKEN_RETRY_COUNT`] times (single-write accounts).
//! - 410/0: the partition's addresses are refreshed (the primary the replica
//!   named, or the next replica of the write region) and the request retried
//!   (first at once, then after `gone_backoff` doubling), at most
//!   `max_gone_retries` times; then the caller sees 503.
//! - Session tokens: `"<partition>:<lsn>"`, one per partition, sent on
//!   session reads, merged (the larger LSN kept) after every answer that
//!   carries one; a new client (a restarted process) starts with none.
//!
//! Every attempt and routing decision is returned with the call (for R6).
//! Seeded bugs read here: `region_retry_loop`, `session_token_overwritten`,
//! `session_token_merged_min`, `removed_region_retried`.

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
use crate::sdk::retry::AttemptOutcome;
use crate::wire;
use madsim::net::Endpoint;
use madsim::time::{sleep, timeout, Instant};
use rand::{Rng, RngCore};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// `MaxSessionTokenRetryCount` of single-write accounts (SPEC §4.1, 404/1002).
pub(crate) const MAX_SESSION_TOKEN_RETRY_COUNT: u32 = 2;

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
    /// How long an attempt waits for its answer.
    pub request_timeout: Duration,
    /// How long an unavailable region stays at the end of the list (client clock).
    pub unavailable_for: Duration,
    /// Connection-error failovers per call.
    pub max_failover_retries: u32,
    /// 403/3 refresh-and-retries per call.
    pub max_forbidden_retries: u32,
    /// 410/0 refresh-and-retries per call.
    pub max_gone_retries: u32,
    /// The first 410/0 backoff after the immediate retry; doubles.
    pub gone_backoff: Duration,
    /// Wait before a read's retry after a connection error.
    pub read_retry_wait: Duration,
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Aim {
    /// The `i`-th region of the current preferred order (reads).
    Preferred(usize),
    /// The write region (writes, strong reads, session retries).
    WriteRegion,
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
        let deadline = Instant::now() + self.cfg.request_timeout;
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

    /// One logical call with the SDK's failover retries.
    pub async fn call(&mut self, op: &Request, consistency: ReadConsistency) -> RegionCallResult {
        let invoke_ns = sim_now_ns();
        let partition = self.partition_of(op);
        let is_write = op.is_write();
        let session_lsn = (!is_write && consistency == ReadConsistency::Session)
            .then(|| self.tokens.get(&partition).copied())
            .flatten();
        let token_sent = session_lsn.map(|l| session_token(partition, l));
        let mut attempts = Vec::new();
        let mut routes = Vec::new();
        let mut aim = if is_write || consistency == ReadConsistency::Strong {
            Aim::WriteRegion
        } else {
            Aim::Preferred(0)
        };
        let (mut failovers, mut unavailable_retries, mut session_retries) = (0u32, 0u32, 0u32);
        let (mut gone_retries, mut forbidden_retries) = (0u32, 0u32);
        let mut gone_wait: Option<Duration> = None;
        let mut waited = Duration::ZERO;
        let finish = |outcome: RegionFinal, attempts, routes| RegionCallResult {
            outcome,
            token_sent: token_sent.clone(),
            attempts,
            routes,
            invoke_ns,
            return_ns: sim_now_ns(),
        };
        loop {
            let region = match aim {
                Aim::WriteRegion if is_write => self.write_region.clone(),
                Aim::WriteRegion => true_write_region(&self.cfg.regions),
                Aim::Preferred(i) => {
                    let order = self.read_order();
                    order[i % order.len().max(1)].clone()
                }
            };
            let to_primary =
                is_write || consistency == ReadConsistency::Strong || aim == Aim::WriteRegion;
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
            let (status, sub_status) = match &answer {
                None => (0, 0),
                Some(r) => match &r.reply {
                    RegionReply::Ok { response, .. } => (response.status(), 0),
                    RegionReply::Refused {
                        status, sub_status, ..
                    } => (*status, *sub_status as u16),
                },
            };
            attempts.push(AttemptLog {
                sent_ns,
                waited,
                outcome: match answer {
                    None => AttemptOutcome::Timeout,
                    Some(_) => AttemptOutcome::with_sub_status(status, u32::from(sub_status)),
                },
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
            let Some(resp) = answer else {
                if is_write {
                    // Sent, never answered: it may have committed. Not re-sent (408).
                    self.rotate_primary(partition);
                    routes.push(self.route("refresh_addresses", &region, 0, 0));
                    return finish(RegionFinal::Unknown, attempts, routes);
                }
                if to_primary {
                    self.rotate_primary(partition);
                    routes.push(self.route("refresh_addresses", &region, 0, 0));
                }
                self.mark_unavailable(&region, &mut routes, 0, 0);
                failovers += 1;
                if failovers > self.cfg.max_failover_retries {
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
                }
                sleep(self.cfg.read_retry_wait.max(Duration::from_millis(1))).await;
                waited = self.cfg.read_retry_wait;
                aim = if consistency == ReadConsistency::Strong {
                    Aim::WriteRegion
                } else {
                    Aim::Preferred(0)
                };
                continue;
            };
            let node = resp.node.clone();
            let refused = |status: u16, sub_status: u16| RegionFinal::Refused {
                status,
                sub_status,
                region: Some(resp.region.clone()),
                node: Some(resp.node.clone()),
            };
            match resp.reply.clone() {
                RegionReply::Ok { response, lsn } => {
                    let merged = if self.cfg.bugs.session_token_overwritten {
                        lsn
                    } else if self.cfg.bugs.session_token_merged_min {
                        // The seeded slip: `min` for `max`.
                        self.tokens.get(&partition).map_or(lsn, |t| (*t).min(lsn))
                    } else {
                        self.tokens.get(&partition).copied().unwrap_or(0).max(lsn)
                    };
                    self.tokens.insert(partition, merged);
                    return finish(
                        RegionFinal::Answered {
                            response,
                            token: session_token(partition, lsn),
                            region: resp.region,
                            node,
                        },
                        attempts,
                        routes,
                    );
                }
                RegionReply::Refused {
                    status: 403,
                    sub_status: 3,
                    ..
                } if forbidden_retries < self.cfg.max_forbidden_retries => {
                    forbidden_retries += 1;
                    self.write_region = true_write_region(&self.cfg.regions);
                    routes.push(self.route("refresh_account", &region, 403, 3));
                    aim = Aim::WriteRegion;
                }
                RegionReply::Refused {
                    status: 403,
                    sub_status: 1008,
                    ..
                } if !is_write && failovers < self.cfg.max_failover_retries => {
                    // The region is being removed from the account: marked
                    // unavailable, and the read goes to the next preferred
                    // region (SPEC §4.1; a write on a single-write account is
                    // not retried: it surfaces below).
                    failovers += 1;
                    if !self.cfg.bugs.removed_region_retried {
                        self.mark_unavailable(&region, &mut routes, 403, 1008);
                        aim = Aim::Preferred(0);
                    }
                }
                RegionReply::Refused {
                    status: 404,
                    sub_status: 1002,
                    ..
                } if session_retries < MAX_SESSION_TOKEN_RETRY_COUNT => {
                    session_retries += 1;
                    aim = Aim::WriteRegion;
                }
                RegionReply::Refused {
                    status: 410,
                    sub_status: 0,
                    primary_hint,
                } => {
                    if gone_retries >= self.cfg.max_gone_retries {
                        return finish(refused(503, 0), attempts, routes);
                    }
                    gone_retries += 1;
                    match primary_hint {
                        Some(h) => {
                            self.primary.insert(partition, h);
                        }
                        None => self.rotate_primary(partition),
                    }
                    routes.push(self.route("refresh_addresses", &region, 410, 0));
                    if let Some(w) = gone_wait {
                        sleep(w).await;
                        waited = w;
                        gone_wait = Some(w * 2);
                    } else {
                        gone_wait = Some(self.cfg.gone_backoff);
                    }
                }
                RegionReply::Refused { status: 503, .. }
                    if !is_write && unavailable_retries < 1 && self.cfg.regions.len() >= 2 =>
                {
                    unavailable_retries += 1;
                    if consistency == ReadConsistency::Strong {
                        // Strong reads have one place to go: the primary, found again.
                        self.rotate_primary(partition);
                        routes.push(self.route("refresh_addresses", &region, 503, 0));
                    } else {
                        let order = self.read_order();
                        let here = order.iter().position(|r| *r == region).unwrap_or(0);
                        aim = Aim::Preferred(here + 1);
                    }
                }
                RegionReply::Refused {
                    status, sub_status, ..
                } => return finish(refused(status, sub_status as u16), attempts, routes),
            }
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
