//! The client SDK: calls to any service of a partition ([`StoreClient::request`]),
//! routed by partition key, each attempt bounded by the request timeout,
//! retried exactly as the retry policy says (SPEC §4), and every attempt
//! reported to an observer; typed calls to the store on top of it.
//! Also the read–modify–write helper of the optimistic concurrency guide.

use crate::core::bugs::ModelBugs;
pub use crate::core::env::sim_now_ns;
use crate::core::env::{ListenTable, SendPolicy};
use crate::core::keys::ItemKey;
use crate::partition::{Request, Response};
use crate::sdk::retry::{AttemptOutcome, Decision, FinalOutcome, RetryOptions, RetryState};
use crate::services::store::{Conditions, Metadata, StoreRequest, StoreResponse};
use crate::wire::{
    self, OperationId, WireReply, WireResponse, MAX_DATAGRAM, REQUEST_TAG, RESPONSE_TAG,
};
use madsim::net::Endpoint;
use madsim::time::{sleep_until, Instant};
use rand::{Rng, RngCore};
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
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
    /// The seeded bugs: the client reads `retry_write_after_timeout`,
    /// `ignore_retry_after`, `transport_retries_throttled`, `rmw_blind_fallback`,
    /// `retry_with_on_gone_backoff`, `not_sent_taken_as_unknown` and `retry_after_cancel`.
    pub bugs: ModelBugs,
    /// What the network does to the requests the client sends (duplicates,
    /// reordering); none by default.
    pub send: SendPolicy,
    /// Which servers listen: a connect to one that does not is refused, and the
    /// attempt is [`AttemptOutcome::NotSent`]. By default every address listens (a
    /// request to a dead server is sent, and times out).
    pub connect: ListenTable,
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

/// The result of one logical call: `R` is the service's response type (the
/// store's for the typed store calls, [`Response`] for [`StoreClient::request`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallResult<R = StoreResponse> {
    /// What the caller is told.
    pub outcome: FinalOutcome,
    /// The service's response, when the final outcome is one (not for transient statuses).
    pub response: Option<R>,
    /// Every attempt.
    pub attempts: Vec<AttemptLog>,
    /// Simulated ns at the call's start and end.
    pub invoke_ns: u64,
    /// See `invoke_ns`.
    pub return_ns: u64,
    /// The operation's id, sent on every attempt.
    pub operation: OperationId,
}

impl<R> CallResult<R> {
    /// A call a shrunk run leaves out: never sent, so it ends at once with
    /// an unknown outcome, like one lost on its way, and names no operation
    /// on the wire.
    pub fn never_sent() -> CallResult<R> {
        let now = sim_now_ns();
        CallResult {
            outcome: FinalOutcome::Unknown { status: 408 },
            response: None,
            attempts: Vec::new(),
            invoke_ns: now,
            return_ns: now,
            operation: OperationId::default(),
        }
    }

    /// The same result with its response turned into another type (`None`
    /// when `f` finds it is not one).
    pub fn map_response<T>(self, f: impl FnOnce(R) -> Option<T>) -> CallResult<T> {
        CallResult {
            outcome: self.outcome,
            response: self.response.and_then(f),
            attempts: self.attempts,
            invoke_ns: self.invoke_ns,
            return_ns: self.return_ns,
            operation: self.operation,
        }
    }
}

/// Receives every call the client makes, as it finishes.
pub trait CallObserver {
    /// A logical call is about to be sent, at `invoke_ns` (the `invoke_ns` its
    /// result will carry), as `operation` on every attempt. A node that
    /// crashes mid-call never reaches [`CallObserver::on_call`]: this is how
    /// an observer learns of the call.
    fn on_invoke(&mut self, _request: &StoreRequest, _invoke_ns: u64, _operation: OperationId) {}
    /// One logical call and its result.
    fn on_call(&mut self, request: &StoreRequest, result: &CallResult);
}

/// The SDK client of one node.
pub struct StoreClient {
    ep: Arc<Endpoint>,
    cfg: ClientConfig,
    /// This connection's session id, sent with every attempt.
    session: u64,
    next_req: u64,
    /// The last logical operation's number in this session.
    next_op: u64,
    rng: Box<dyn RngCore + Send>,
    buf: Vec<u8>,
    out: Vec<u8>,
    timers: Timers,
}

impl StoreClient {
    /// Binds the client's endpoint. `rng` draws the session id, then the
    /// backoff jitter.
    pub async fn connect(
        cfg: ClientConfig,
        mut rng: Box<dyn RngCore + Send>,
    ) -> std::io::Result<StoreClient> {
        let ep = Arc::new(Endpoint::bind("0.0.0.0:0").await?);
        Ok(StoreClient {
            ep,
            cfg,
            session: rng.gen(),
            next_req: 0,
            next_op: 0,
            rng,
            buf: vec![0u8; MAX_DATAGRAM],
            out: Vec::new(),
            timers: Timers::default(),
        })
    }

    /// The address the client sends from (its own socket): a harness can
    /// tell the calls of a node's clients apart by its port.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.ep.local_addr().ok()
    }

    fn route(&self, req: &Request) -> (u32, SocketAddr) {
        let p = wire::partition_of(req.partition_key(), self.cfg.partitions);
        (p, self.cfg.servers[p as usize % self.cfg.servers.len()])
    }

    /// The id the next logical call will send on every attempt.
    pub fn next_operation(&self) -> OperationId {
        OperationId {
            session: self.session,
            op: self.next_op + 1,
        }
    }

    /// One attempt as the retry policy sees it: [`StoreClient::send_once`],
    /// and, under the seeded bug `transport_retries_throttled`, a second send
    /// at once after a 429, below the policy (neither logged nor counted).
    async fn attempt(
        &mut self,
        partition: u32,
        to: SocketAddr,
        op: &[u8],
        operation: OperationId,
        cancel_at: Option<Instant>,
    ) -> (AttemptOutcome, Option<Response>) {
        let first = self
            .send_once(partition, to, op, operation, cancel_at)
            .await;
        let throttled = matches!(first.0, AttemptOutcome::Response { status: 429, .. });
        if throttled && self.cfg.bugs.transport_retries_throttled {
            return self
                .send_once(partition, to, op, operation, cancel_at)
                .await;
        }
        first
    }

    /// One request on the wire: send, then wait for the matching answer until
    /// the timeout, or until the caller's cancel at `cancel_at`
    /// ([`AttemptOutcome::Cancelled`]). `op` is the operation's wire encoding,
    /// made once per logical call. A connect refused (nothing listens at `to`)
    /// sends nothing: [`AttemptOutcome::NotSent`], at once.
    async fn send_once(
        &mut self,
        partition: u32,
        to: SocketAddr,
        op: &[u8],
        operation: OperationId,
        cancel_at: Option<Instant>,
    ) -> (AttemptOutcome, Option<Response>) {
        if self.cfg.connect.refuses(to) {
            return (AttemptOutcome::NotSent, None);
        }
        self.next_req += 1;
        let req_id = self.next_req;
        // Stamped with the send instant, so the servers' side can measure the
        // SDK's wait between its own sends of one operation.
        wire::encode_request(
            &mut self.out,
            req_id,
            partition,
            op,
            operation,
            sim_now_ns(),
        );
        let sent = wire::send_datagram(&self.ep, to, REQUEST_TAG, &self.out, &self.cfg.send).await;
        let deadline = Instant::now() + self.cfg.retry.request_timeout;
        // The wait ends at the timeout or at the caller's cancel, whichever is first.
        let until = cancel_at.map_or(deadline, |c| c.min(deadline));
        let no_answer = || {
            if cancel_at.is_some_and(|c| Instant::now() >= c) {
                AttemptOutcome::Cancelled
            } else {
                AttemptOutcome::Timeout
            }
        };
        if sent.is_err() {
            self.timers.sleep_until(until).await;
            return (no_answer(), None);
        }
        loop {
            let received = self
                .timers
                .run_until(until, self.ep.recv_from(RESPONSE_TAG, &mut self.buf))
                .await;
            let Some(Ok((len, _))) = received else {
                return (no_answer(), None);
            };
            // Late answers to earlier attempts are skipped.
            let Some(resp) = wire::from_bytes::<WireResponse>(&self.buf[..len]) else {
                continue;
            };
            if resp.req_id != req_id || resp.session != self.session {
                continue;
            }
            return match resp.reply {
                WireReply::Ok(r) => (AttemptOutcome::status(r.status()), Some(r)),
                WireReply::Transient {
                    status,
                    sub_status,
                    retry_after_ms,
                } => (
                    AttemptOutcome::Response {
                        status,
                        sub_status,
                        retry_after: retry_after_ms.map(Duration::from_millis),
                    },
                    None,
                ),
            };
        }
    }

    /// The seeded bugs the client was configured with (the typed service
    /// clients read theirs from here).
    pub fn bugs(&self) -> ModelBugs {
        self.cfg.bugs
    }

    /// One logical call with the SDK's retries.
    pub async fn call(&mut self, op: StoreRequest) -> CallResult {
        self.call_ref(&op).await
    }

    /// [`StoreClient::call`] on a borrowed request.
    async fn call_ref(&mut self, op: &StoreRequest) -> CallResult {
        self.request(&Request::Store(op.clone()))
            .await
            .map_response(Response::into_store)
    }

    /// One logical call to any service with the SDK's retries. The request is
    /// encoded once, and every attempt sends that encoding under its own
    /// request id and the call's operation id.
    pub async fn request(&mut self, op: &Request) -> CallResult<Response> {
        self.request_until(op, None).await
    }

    /// [`StoreClient::request`] that the caller cancels at `cancel_at_ns`
    /// (simulated ns since the start; `None`: never), as a `CancellationToken`
    /// would: the call ends at once with [`FinalOutcome::Cancelled`], whether an
    /// attempt is in flight or the SDK is waiting before the next, and sends
    /// nothing after it.
    pub async fn request_until(
        &mut self,
        op: &Request,
        cancel_at_ns: Option<u64>,
    ) -> CallResult<Response> {
        let mut cancel_at = cancel_at_ns
            .map(|ns| Instant::now() + Duration::from_nanos(ns.saturating_sub(sim_now_ns())));
        let cancelled = |cancel_at: Option<Instant>| cancel_at.is_some_and(|c| Instant::now() >= c);
        let operation = self.next_operation();
        self.next_op = operation.op;
        let kind = op.retry_kind(self.cfg.bugs.acquire_not_idempotent_retry);
        let mut state = RetryState::new(kind, self.cfg.retry.clone(), self.cfg.bugs);
        let (partition, to) = self.route(op);
        let op_bytes = wire::to_bytes(op);
        let invoke_ns = sim_now_ns();
        let mut attempts = Vec::new();
        let mut waited = Duration::ZERO;
        loop {
            if cancelled(cancel_at) {
                return CallResult {
                    outcome: state.cancel(),
                    response: None,
                    attempts,
                    invoke_ns,
                    return_ns: sim_now_ns(),
                    operation,
                };
            }
            let sent_ns = sim_now_ns();
            let (mut outcome, response) = self
                .attempt(partition, to, &op_bytes, operation, cancel_at)
                .await;
            if outcome == AttemptOutcome::Cancelled && self.cfg.bugs.retry_after_cancel {
                // The seeded bug: the cancel taken for the attempt's timeout, and forgotten.
                outcome = AttemptOutcome::Timeout;
                cancel_at = None;
            }
            tracing::debug!(
                "{} attempt {}: {outcome:?}",
                op.describe(),
                attempts.len() + 1
            );
            attempts.push(AttemptLog {
                sent_ns,
                waited,
                outcome: outcome.clone(),
            });
            let jitter: f64 = self.rng.gen();
            match state.on_attempt(&outcome, jitter) {
                Decision::Retry { after, .. } => {
                    let throttled = matches!(outcome, AttemptOutcome::Response { status: 429, .. });
                    let after = if self.cfg.bugs.ignore_retry_after && throttled {
                        Duration::ZERO
                    } else if self.cfg.bugs.retry_after_stretched && throttled {
                        after.saturating_mul(10)
                    } else {
                        after
                    };
                    // At least 1 ms, as madsim's `sleep`. The log records what
                    // was really waited, which is what R2 judges.
                    let started = Instant::now();
                    let wait = after.max(Duration::from_millis(1));
                    let until = cancel_at.map_or(started + wait, |c| c.min(started + wait));
                    self.timers.sleep_until(until).await;
                    waited = started.elapsed();
                }
                Decision::Done(outcome) => {
                    let response = match outcome {
                        FinalOutcome::Response { status } => {
                            response.filter(|r| r.status() == status)
                        }
                        _ => None,
                    };
                    return CallResult {
                        outcome,
                        response,
                        attempts,
                        invoke_ns,
                        return_ns: sim_now_ns(),
                        operation,
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
        self.observed_call_until(op, None, observer).await
    }

    /// [`StoreClient::observed_call`] that the caller cancels at
    /// `cancel_at_ns` ([`StoreClient::request_until`]).
    pub async fn observed_call_until(
        &mut self,
        op: StoreRequest,
        cancel_at_ns: Option<u64>,
        observer: &mut dyn CallObserver,
    ) -> CallResult {
        observer.on_invoke(&op, sim_now_ns(), self.next_operation());
        let result = self
            .request_until(&Request::Store(op.clone()), cancel_at_ns)
            .await
            .map_response(Response::into_store);
        observer.on_call(&op, &result);
        result
    }

    /// Get Blob Properties (a HEAD): the item's status, ETag, Last-Modified and
    /// metadata, no body. A read: its timeouts are retried.
    pub async fn get_properties(&mut self, key: &ItemKey, conditions: Conditions) -> CallResult {
        let op = StoreRequest::GetProperties {
            key: key.clone(),
            conditions,
        };
        self.call(op).await
    }

    /// Set Blob Metadata: replaces the item's metadata (a new ETag, the content
    /// kept). A write, retried like a put: never again after a timeout (SPEC §4).
    pub async fn set_metadata(
        &mut self,
        key: &ItemKey,
        metadata: Metadata,
        conditions: Conditions,
    ) -> CallResult {
        let op = StoreRequest::SetMetadata {
            key: key.clone(),
            metadata,
            conditions,
        };
        self.call(op).await
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
        let mut lost_race = false;
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
            let conditions = if lost_race && self.cfg.bugs.rmw_blind_fallback {
                Conditions::none()
            } else {
                conditions
            };
            let put = StoreRequest::Put {
                key: key.clone(),
                body,
                conditions,
                metadata: Metadata::new(),
            };
            let w = self.observed_call(put, observer).await;
            match w.outcome {
                FinalOutcome::Response { status: 200 | 201 } => return RmwOutcome::Done,
                FinalOutcome::Response { status: 412 | 409 } => {
                    lost_race = true;
                    continue;
                }
                FinalOutcome::Response { status } => return RmwOutcome::Failed(status),
                FinalOutcome::Unknown { .. } | FinalOutcome::Cancelled { .. } => {
                    return RmwOutcome::Unknown
                }
            }
        }
        RmwOutcome::GaveUp
    }
}

/// The client task's timers. madsim cannot cancel a timer: every attempt's
/// timeout would stay in the runtime's timer heap for the whole request
/// timeout and then wake the task for nothing, and its `Sleep` adds another
/// timer at every poll while pending. Instead the client remembers the
/// wake-ups it has already asked for (all for one waker: the task's), and
/// asks for a new one only when none is due between now and its deadline;
/// woken early, it looks at the time and asks again. Every wait still ends at
/// its deadline exactly.
#[derive(Default)]
struct Timers {
    /// Pending wake-ups (simulated times, ascending) for `waker`.
    due: Vec<Instant>,
    waker: Option<Waker>,
}

impl Timers {
    /// Makes sure the task is woken at `deadline` or earlier; `false` when
    /// the deadline has passed.
    fn arm(&mut self, deadline: Instant, cx: &mut Context<'_>) -> bool {
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        if !self.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            self.due.clear();
            self.waker = Some(cx.waker().clone());
        }
        // A wake-up at or before `now` has fired already.
        self.due.retain(|t| *t > now);
        if self.due.first().is_some_and(|t| *t <= deadline) {
            return true;
        }
        let mut sleep = sleep_until(deadline);
        if Pin::new(&mut sleep).poll(cx).is_ready() {
            return false;
        }
        // `sleep_until` waits at least 1 ms: record when it really wakes.
        let at = sleep.deadline();
        let i = self.due.partition_point(|t| *t < at);
        self.due.insert(i, at);
        true
    }

    /// Sleeps until `deadline`.
    async fn sleep_until(&mut self, deadline: Instant) {
        poll_fn(|cx| {
            if self.arm(deadline, cx) {
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
        .await
    }

    /// Runs `fut` until it finishes (`Some`) or `deadline` passes (`None`);
    /// like `madsim::time::timeout`, `fut` is polled first.
    async fn run_until<F: Future>(&mut self, deadline: Instant, fut: F) -> Option<F::Output> {
        let mut fut = pin!(fut);
        poll_fn(|cx| {
            if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                return Poll::Ready(Some(v));
            }
            if self.arm(deadline, cx) {
                Poll::Pending
            } else {
                Poll::Ready(None)
            }
        })
        .await
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
    /// The replace's outcome is unknown (it timed out, got a 408, or a 503 from the
    /// transport after it was sent).
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;
    use madsim::runtime::Runtime;
    use madsim::time::sleep;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn every_wait_ends_at_its_deadline() {
        let rt = Runtime::with_seed_and_config(1, madsim::Config::default());
        rt.block_on(async {
            let mut t = Timers::default();
            let ends_at = |d: Instant| {
                let now = Instant::now();
                assert!(now >= d && now < d + ms(1), "{:?} late", now - d);
            };
            // A wait that nothing answers times out at its deadline.
            let d = Instant::now() + ms(6000);
            assert!(t.run_until(d, std::future::pending::<()>()).await.is_none());
            ends_at(d);
            // An answer before the deadline; its wake-up stays pending.
            let long = Instant::now() + ms(6000);
            assert!(t.run_until(long, sleep(ms(10))).await.is_some());
            // A shorter wait than the pending wake-up gets its own.
            let d = Instant::now() + ms(5);
            t.sleep_until(d).await;
            ends_at(d);
            // A longer one is woken by the pending wake-up first, then by its own.
            let d = long + ms(1000);
            assert!(t.run_until(d, std::future::pending::<()>()).await.is_none());
            ends_at(d);
            // A deadline already passed ends at once.
            let now = Instant::now();
            t.sleep_until(now).await;
            assert_eq!(Instant::now(), now);
        });
    }
}
