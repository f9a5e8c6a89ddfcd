//! The client SDK: typed calls to the store, routed by partition key, each
//! attempt bounded by the request timeout, retried exactly as the retry
//! policy says (SPEC §4), and every attempt reported to an observer.
//! Also the read–modify–write helper of the optimistic concurrency guide.

use crate::retry::{AttemptOutcome, Decision, FinalOutcome, OpKind, RetryOptions, RetryState};
use crate::store::{Conditions, ItemKey, StoreRequest, StoreResponse};
use crate::wire::{
    self, WireReply, WireRequest, WireResponse, MAX_DATAGRAM, REQUEST_TAG, RESPONSE_TAG,
};
use madsim::net::Endpoint;
use madsim::time::{sleep, timeout, Instant};
use rand::{Rng, RngCore};
use std::net::SocketAddr;
use std::time::Duration;

/// A client's settings.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Server addresses; partition `p` lives on server `p % servers.len()`.
    pub servers: Vec<SocketAddr>,
    /// Number of partitions the key space is split into.
    pub partitions: u32,
    /// Retry budgets and the request timeout.
    pub retry: RetryOptions,
    /// Seeded bug `retry_write_after_timeout`: re-send a write after a timeout.
    pub retry_write_after_timeout: bool,
}

/// One attempt as the SDK saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptLog {
    /// When it was sent, simulated ns since the start.
    pub sent_ns: u64,
    /// The delay inserted before it.
    pub waited: Duration,
    /// How it ended.
    pub outcome: AttemptOutcome,
}

/// The result of one logical call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallResult {
    /// What the caller is told.
    pub outcome: FinalOutcome,
    /// The store's response, when the final outcome is one (not for transient statuses).
    pub response: Option<StoreResponse>,
    /// Every attempt.
    pub attempts: Vec<AttemptLog>,
    /// Simulated ns at the call's start and end.
    pub invoke_ns: u64,
    /// See `invoke_ns`.
    pub return_ns: u64,
}

/// Receives every call the client makes, as it finishes.
pub trait CallObserver {
    /// One logical call and its result.
    fn on_call(&mut self, request: &StoreRequest, result: &CallResult);
}

/// Simulated ns since the start of the run.
pub fn sim_now_ns() -> u64 {
    madsim::time::TimeHandle::current().elapsed().as_nanos() as u64
}

/// The SDK client of one node.
pub struct StoreClient {
    ep: Endpoint,
    cfg: ClientConfig,
    next_req: u64,
    rng: Box<dyn RngCore + Send>,
    buf: Vec<u8>,
}

impl StoreClient {
    /// Binds the client's endpoint. `rng` draws the backoff jitter.
    pub async fn connect(
        cfg: ClientConfig,
        rng: Box<dyn RngCore + Send>,
    ) -> std::io::Result<StoreClient> {
        let ep = Endpoint::bind("0.0.0.0:0").await?;
        Ok(StoreClient {
            ep,
            cfg,
            next_req: 0,
            rng,
            buf: vec![0u8; MAX_DATAGRAM],
        })
    }

    fn route(&self, req: &StoreRequest) -> (u32, SocketAddr) {
        let pk = req.key().map(|k| k.partition_key.as_str()).unwrap_or("");
        let p = wire::partition_of(pk, self.cfg.partitions);
        (p, self.cfg.servers[p as usize % self.cfg.servers.len()])
    }

    /// One attempt: send, then wait for the matching answer until the timeout.
    async fn attempt(
        &mut self,
        partition: u32,
        to: SocketAddr,
        op: &StoreRequest,
    ) -> (AttemptOutcome, Option<StoreResponse>) {
        self.next_req += 1;
        let req_id = self.next_req;
        let bytes = wire::to_bytes(&WireRequest {
            req_id,
            partition,
            op: op.clone(),
        });
        if self.ep.send_to(to, REQUEST_TAG, &bytes).await.is_err() {
            sleep(self.cfg.retry.request_timeout).await;
            return (AttemptOutcome::Timeout, None);
        }
        let deadline = Instant::now() + self.cfg.retry.request_timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match timeout(left, self.ep.recv_from(RESPONSE_TAG, &mut self.buf)).await {
                Err(_) | Ok(Err(_)) => return (AttemptOutcome::Timeout, None),
                Ok(Ok((len, _))) => {
                    // Late answers to earlier attempts are skipped.
                    let Some(resp) = wire::from_bytes::<WireResponse>(&self.buf[..len]) else {
                        continue;
                    };
                    if resp.req_id != req_id {
                        continue;
                    }
                    return match resp.reply {
                        WireReply::Store(r) => (AttemptOutcome::status(r.status), Some(r)),
                        WireReply::Transient {
                            status,
                            retry_after_ms,
                        } => (
                            AttemptOutcome::Response {
                                status,
                                retry_after: retry_after_ms.map(Duration::from_millis),
                            },
                            None,
                        ),
                    };
                }
            }
        }
    }

    /// One logical call with the SDK's retries.
    pub async fn call(&mut self, op: StoreRequest) -> CallResult {
        let kind = if op.is_write() {
            OpKind::Write
        } else {
            OpKind::Read
        };
        let mut state = RetryState::new(
            kind,
            self.cfg.retry.clone(),
            self.cfg.retry_write_after_timeout,
        );
        let (partition, to) = self.route(&op);
        let invoke_ns = sim_now_ns();
        let mut attempts = Vec::new();
        let mut waited = Duration::ZERO;
        loop {
            let sent_ns = sim_now_ns();
            let (outcome, response) = self.attempt(partition, to, &op).await;
            attempts.push(AttemptLog {
                sent_ns,
                waited,
                outcome: outcome.clone(),
            });
            let jitter: f64 = self.rng.gen();
            match state.on_attempt(&outcome, jitter) {
                Decision::Retry { after } => {
                    sleep(after).await;
                    waited = after;
                }
                Decision::Done(outcome) => {
                    let response = match outcome {
                        FinalOutcome::Response { status } => {
                            response.filter(|r| r.status == status)
                        }
                        _ => None,
                    };
                    return CallResult {
                        outcome,
                        response,
                        attempts,
                        invoke_ns,
                        return_ns: sim_now_ns(),
                    };
                }
            }
        }
    }

    /// A call whose result is also reported to `observer`.
    pub async fn observed_call(
        &mut self,
        op: StoreRequest,
        observer: &mut dyn CallObserver,
    ) -> CallResult {
        let result = self.call(op.clone()).await;
        observer.on_call(&op, &result);
        result
    }

    /// The read–modify–write loop of the optimistic concurrency guide: read the
    /// item, compute the new body, replace it with `If-Match` on the ETag read;
    /// on 412 read again, at most `max_tries` times.
    pub async fn read_modify_write(
        &mut self,
        key: &ItemKey,
        mut change: impl FnMut(Option<&str>) -> String,
        max_tries: u32,
        observer: &mut dyn CallObserver,
    ) -> RmwOutcome {
        for _ in 0..max_tries.max(1) {
            let read = StoreRequest::Read {
                key: key.clone(),
                conditions: Conditions::default(),
            };
            let r = self.observed_call(read, observer).await;
            let (body, conditions) = match (&r.outcome, &r.response) {
                (FinalOutcome::Response { status: 200 }, Some(resp)) => match &resp.item {
                    Some(item) => (
                        change(item.body.as_deref()),
                        Conditions::if_match(item.etag.clone()),
                    ),
                    None => return RmwOutcome::Failed(200),
                },
                // Absent: create it, and only if it is still absent.
                (FinalOutcome::Response { status: 404 }, _) => {
                    (change(None), Conditions::if_none_match_any())
                }
                (FinalOutcome::Response { status }, _) => return RmwOutcome::Failed(*status),
                _ => return RmwOutcome::Unknown,
            };
            let put = StoreRequest::Put {
                key: key.clone(),
                body,
                conditions,
            };
            let w = self.observed_call(put, observer).await;
            match w.outcome {
                FinalOutcome::Response { status: 200 | 201 } => return RmwOutcome::Done,
                FinalOutcome::Response { status: 412 | 409 } => continue,
                FinalOutcome::Response { status } => return RmwOutcome::Failed(status),
                FinalOutcome::Unknown | FinalOutcome::TimedOut => return RmwOutcome::Unknown,
            }
        }
        RmwOutcome::GaveUp
    }
}

/// How a read–modify–write ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmwOutcome {
    /// The replace (or create) succeeded.
    Done,
    /// Every try lost the race (412/409).
    GaveUp,
    /// A call failed with this status.
    Failed(u16),
    /// A call's outcome is unknown (timeout).
    Unknown,
}
