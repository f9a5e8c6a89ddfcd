//! The change feed processor (SPEC §3.3, the .NET v3 SDK's
//! `ChangeFeedProcessor`): one host's balancer, lease manager, renewer and
//! processing loops over the lease documents in a lease container of the same
//! store.
//!
//! Pure parts, unit-tested: the lease document ([`LeaseDoc`], §3.3.2), expiry
//! on the host's own clock against the writer's timestamp ([`is_available`](leases::is_available),
//! strict, §0 "Client clocks") and the EqualPartitions balancing decision
//! ([`balance`], §3.3.6). The host ([`run_host`]) drives them: bootstrap with
//! `.info`/`.lock` (§3.3.3); re-acquire its own leases at start (§3.3.9); a
//! balancer pass every acquire interval; a renewer task (first renew after
//! half the interval, §3.3.5 step 5); per owned lease the loop of §3.3.5 (read
//! from the stored continuation or the start option, 304 → poll delay,
//! delegate, checkpoint only after the delegate returns); a delegate error or
//! another read error releases the lease (§3.3.7); a 410/1002 creates the
//! child leases with the in-memory continuation and deletes the parent
//! (§3.3.8). Every lease write is read → mutate → Replace with If-Match, 412 →
//! re-read, re-check the owner and reapply, 6 attempts in all (§3.3.4);
//! Acquire and Checkpoint first replace the cached copy.
//!
//! Before each SDK call the host asks its observer whether to leave it out
//! ([`ProcessorObserver::skipped`]), for a harness that shrinks a failure.
//!
//! Listing the leases (the SDK's query) is modelled as a read of the lease
//! container's change feed from the beginning for the leases' partition key:
//! it answers every live lease document at its latest version.

use crate::core::bugs::ModelBugs;
use crate::core::conditions::ETag;
use crate::core::env::Clock;
use crate::partition::{Request, Response};
use crate::sdk::client::{CallResult, StoreClient};
use crate::sdk::cosmos_client::CosmosContainer;
use crate::sdk::retry::FinalOutcome;
use crate::services::cosmos::CosmosResponse;
use crate::services::feed::{FeedItem, FeedRequest, FeedResponse, FeedScope, StartFrom};
use madsim::time::sleep;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

mod events;
mod leases;

pub use events::{ProcessorCall, ProcessorEvent, ProcessorObserver};
pub use leases::LeaseDoc;
pub(crate) use leases::{balance, CachedLease, RETRY_COUNT_ON_CONFLICT};

/// Where a lease without a checkpoint starts reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProcessorStart {
    /// From the beginning of the container.
    Beginning,
    /// The default: from `host.UtcNow − 1 s` at `StartAsync` (exclusive).
    Now,
}

/// A host's settings (SPEC §3.3.1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessorOptions {
    /// `WithInstanceName`: unique per host, the same across its restarts.
    pub instance: String,
    /// The processor name: the lease ids' prefix and the leases' partition key.
    pub prefix: String,
    /// The monitored container.
    pub monitored: String,
    /// The lease container.
    pub lease_container: String,
    /// LeaseRenewInterval, ms.
    pub renew_ms: u64,
    /// LeaseAcquireInterval (balancer period), ms.
    pub acquire_ms: u64,
    /// LeaseExpirationInterval, ms.
    pub expiration_ms: u64,
    /// FeedPollDelay (after a 304), ms.
    pub poll_ms: u64,
    /// The init lock's retry sleep, ms.
    pub lock_retry_ms: u64,
    /// `WithMaxItems` (0 = unset).
    pub max_items: usize,
    /// The start option.
    pub start: ProcessorStart,
    /// The seeded bugs it reads.
    pub bugs: ModelBugs,
}

impl ProcessorOptions {
    /// The SDK's defaults (17 s, 13 s, 60 s, 5 s, lock retry 15 s) times `scale`.
    pub fn scaled(instance: &str, scale: f64) -> ProcessorOptions {
        let s = |ms: f64| (ms * scale).round().max(1.0) as u64;
        ProcessorOptions {
            instance: instance.to_string(),
            prefix: "cfp".into(),
            monitored: "items".into(),
            lease_container: "leases".into(),
            renew_ms: s(17_000.0),
            acquire_ms: s(13_000.0),
            expiration_ms: s(60_000.0),
            poll_ms: s(5_000.0),
            lock_retry_ms: s(15_000.0),
            max_items: 0,
            start: ProcessorStart::Now,
            bugs: ModelBugs::default(),
        }
    }

    /// The id of lease `token`'s document.
    pub fn lease_id(&self, token: u32) -> String {
        format!("{}..{token}", self.prefix)
    }
}

/// What a delegate does with one batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DelegatePlan {
    /// How long it runs, ms.
    pub run_ms: u64,
    /// False: it throws.
    pub ok: bool,
}

/// The user's delegate, as far as the processor sees it.
pub trait Delegate {
    /// How the delegate will handle `items` of lease `lease`.
    fn plan(&mut self, lease: u32, items: &[FeedItem]) -> DelegatePlan;
}

/// Why a lease update failed.
#[derive(Clone, Debug, PartialEq, Eq)]
enum LeaseError {
    /// Another owner, 404, 409 or conflicts exhausted (`LeaseLostException`).
    Lost(String),
    /// Any other failure (timeouts, 503): the write may or may not have committed.
    Failed(u16),
}

/// The precondition a lease update checks against the server's copy.
#[derive(Clone, Debug)]
enum OwnerCheck {
    /// `server.Owner == this` (Acquire: the owner the balancer saw).
    Is(Option<String>),
    /// None (the seeded bug `checkpoint_without_owner_check`).
    Skip,
}

fn status_of<R>(r: &CallResult<R>) -> u16 {
    match r.outcome {
        FinalOutcome::Response { status } | FinalOutcome::Unknown { status } => status,
        // The processor never cancels a call; were one cancelled, 0: no status.
        FinalOutcome::Cancelled { .. } => 0,
    }
}

/// One host's lease state, shared by its processing loop and its renewer.
#[derive(Default)]
struct Owned {
    leases: BTreeMap<u32, OwnedLease>,
}

struct OwnedLease {
    cached: CachedLease,
    /// The renewer saw another owner (or a 404): stop at the next step.
    lost: Option<String>,
    /// The position read last (the continuation of the last page read).
    next_read_ns: u64,
}

/// One host process: its options, clock, clients and observer.
pub(crate) struct Host {
    opts: ProcessorOptions,
    clock: Arc<dyn Clock>,
    observer: Rc<dyn ProcessorObserver>,
    owned: Rc<RefCell<Owned>>,
    /// Positions this process last read per lease (the bug `resume_from_memory`).
    memory: BTreeMap<u32, u64>,
    /// The start option's resolved form for this process.
    start: StartFrom,
    started_ms: u64,
    /// Bootstrapping: the calls are asked about as setup.
    setup: bool,
}

fn now_ns() -> u64 {
    madsim::time::TimeHandle::try_current()
        .map(|t| t.elapsed().as_nanos() as u64)
        .unwrap_or(0)
}

impl Host {
    /// A host with `opts`, reading time from `clock`, reporting to `observer`.
    pub fn new(
        opts: ProcessorOptions,
        clock: Arc<dyn Clock>,
        observer: Rc<dyn ProcessorObserver>,
    ) -> Host {
        Host {
            opts,
            clock,
            observer,
            owned: Rc::new(RefCell::new(Owned::default())),
            memory: BTreeMap::new(),
            start: StartFrom::Beginning,
            started_ms: 0,
            setup: false,
        }
    }

    fn stamp(&self) -> u64 {
        let now = self.clock.now_ms();
        if self.opts.bugs.expiry_on_wrong_clock {
            now.saturating_sub(self.started_ms)
        } else {
            now
        }
    }

    /// Reports one returned SDK call to the observer.
    fn note<R>(&self, what: &str, r: &CallResult<R>) {
        self.observer.call(ProcessorCall {
            what: what.to_string(),
            status: status_of(r),
            unknown: matches!(r.outcome, FinalOutcome::Unknown { .. }),
            attempts: r.attempts.clone(),
            invoke_ns: r.invoke_ns,
            return_ns: r.return_ns,
        });
    }

    /// Asks the observer whether to leave out the call `what` on `key`
    /// ([`ProcessorObserver::skipped`]); if so, the result it ends with:
    /// unknown, at once, as a call lost on its way.
    fn left_out<R>(&self, client: &StoreClient, what: &str, key: &str) -> Option<CallResult<R>> {
        if !self
            .observer
            .skipped(what, key, client.local_addr(), self.setup)
        {
            return None;
        }
        Some(CallResult::never_sent())
    }

    /// A feed request of this host on `key`, reported as `what`.
    async fn feed(
        &self,
        client: &mut StoreClient,
        what: &str,
        key: &str,
        req: FeedRequest,
    ) -> Option<FeedResponse> {
        if self.left_out::<Response>(client, what, key).is_some() {
            return None;
        }
        let r = client.request(&Request::Feed(req)).await;
        self.note(what, &r);
        r.response.and_then(Response::into_feed)
    }

    /// Reads lease `id` for `purpose` (`"renew"`, `"checkpoint"`, …).
    async fn read_lease(
        &self,
        client: &mut StoreClient,
        purpose: &str,
        id: &str,
    ) -> Result<Option<CachedLease>, u16> {
        let r = match self.left_out(client, &format!("{purpose}: read lease"), id) {
            Some(r) => r,
            None => {
                let mut c = CosmosContainer::new(client, &self.opts.lease_container);
                let r = c.read(&self.opts.prefix, id, None).await;
                self.note("read lease", &r);
                r
            }
        };
        match (status_of(&r), r.response) {
            (200, Some(resp)) => Ok(cached_from(id, &resp)),
            (404, _) => Ok(None),
            (s, _) => Err(s),
        }
    }

    /// Read (if `read_first`) → check the owner → mutate → Replace with
    /// If-Match; 412 → re-read and reapply, 6 attempts in all. `purpose`
    /// names the calls to the observer (`"acquire"`, `"renew"`, …).
    async fn update(
        &self,
        client: &mut StoreClient,
        purpose: &str,
        lease: &mut CachedLease,
        read_first: bool,
        check: OwnerCheck,
        mutate: &dyn Fn(&mut LeaseDoc),
    ) -> Result<(), LeaseError> {
        for attempt in 0..=RETRY_COUNT_ON_CONFLICT {
            if read_first || attempt > 0 {
                match self.read_lease(client, purpose, &lease.id).await {
                    Ok(Some(fresh)) => *lease = fresh,
                    Ok(None) => return Err(LeaseError::Lost("gone".into())),
                    Err(s) => return Err(LeaseError::Failed(s)),
                }
                if let OwnerCheck::Is(owner) = &check {
                    if lease.doc.owner != *owner {
                        return Err(LeaseError::Lost(format!(
                            "owner is {}",
                            lease.doc.owner.as_deref().unwrap_or("nobody")
                        )));
                    }
                }
            }
            let mut doc = lease.doc.clone();
            mutate(&mut doc);
            doc.timestamp = self.stamp();
            doc.by = self.opts.instance.clone();
            let what = format!("{purpose}: replace lease");
            let r = match self.left_out(client, &what, &lease.id) {
                Some(r) => r,
                None => {
                    let mut c = CosmosContainer::new(client, &self.opts.lease_container);
                    let r = c
                        .replace(
                            &self.opts.prefix,
                            &lease.id,
                            &doc.to_body(),
                            Some(lease.etag.clone()),
                        )
                        .await;
                    self.note("replace lease", &r);
                    r
                }
            };
            match (status_of(&r), r.response) {
                (200, Some(resp)) => {
                    if let Some(fresh) = cached_from(&lease.id, &resp) {
                        *lease = fresh;
                    }
                    return Ok(());
                }
                (412, _) => continue,
                (404, _) | (409, _) => return Err(LeaseError::Lost("gone".into())),
                (s, _) => return Err(LeaseError::Failed(s)),
            }
        }
        Err(LeaseError::Lost("conflicts".into()))
    }

    /// Every lease document, in id order.
    async fn list(&self, client: &mut StoreClient) -> Option<Vec<CachedLease>> {
        let req = FeedRequest::Read {
            container: self.opts.lease_container.clone(),
            scope: FeedScope::PartitionKey(self.opts.prefix.clone()),
            from: StartFrom::Beginning,
            page_size: 0,
        };
        let r = self
            .feed(client, "list leases", &self.opts.prefix, req)
            .await?;
        let mut leases: Vec<CachedLease> = r
            .items
            .iter()
            .filter(|i| i.id.contains(".."))
            .filter_map(|i| {
                Some(CachedLease {
                    id: i.id.clone(),
                    doc: LeaseDoc::from_body(&i.body)?,
                    etag: ETag::from_version(i.version),
                })
            })
            .collect();
        leases.sort_by(|a, b| a.id.cmp(&b.id));
        Some(leases)
    }

    /// Bootstrap (SPEC §3.3.3): until `.info` exists, try to take `.lock`;
    /// the winner creates the missing leases, `.info`, and deletes `.lock`.
    async fn bootstrap(&mut self, client: &mut StoreClient, until_ns: u64) -> bool {
        let info = format!("{}.info", self.opts.prefix);
        let lock = format!("{}.lock", self.opts.prefix);
        // Setup: never left out, but asked, so that the observer knows the
        // client's calls belong to no call it can leave out.
        let _ = self.left_out::<Response>(client, "bootstrap", &info);
        while now_ns() < until_ns {
            let mut c = CosmosContainer::new(client, &self.opts.lease_container);
            let r = c.read(&self.opts.prefix, &info, None).await;
            self.note("read .info", &r);
            if status_of(&r) == 200 {
                self.observer
                    .event(ProcessorEvent::Bootstrapped { initialized: false });
                return true;
            }
            let r = c
                .create(&self.opts.prefix, &lock, "{\"lock\":true,\"ttl\":true}")
                .await;
            self.note("create .lock", &r);
            if status_of(&r) == 201 {
                let lock_etag = r
                    .response
                    .as_ref()
                    .and_then(|x| x.item())
                    .map(|i| i.etag.clone());
                let ranges = self
                    .feed(
                        client,
                        "read ranges",
                        &self.opts.monitored,
                        FeedRequest::Ranges {
                            container: self.opts.monitored.clone(),
                        },
                    )
                    .await;
                if let Some(ranges) = ranges {
                    let mut c = CosmosContainer::new(client, &self.opts.lease_container);
                    let mut ok = true;
                    for range in &ranges.ranges {
                        let doc = LeaseDoc {
                            token: range.id,
                            min: range.min,
                            max: range.max,
                            owner: None,
                            continuation: None,
                            timestamp: self.stamp(),
                            by: self.opts.instance.clone(),
                            parent: None,
                        };
                        let r = c
                            .create(
                                &self.opts.prefix,
                                &self.opts.lease_id(range.id),
                                &doc.to_body(),
                            )
                            .await;
                        self.note("create lease", &r);
                        let s = status_of(&r);
                        ok &= s == 201 || s == 409;
                    }
                    if ok {
                        let r = c.create(&self.opts.prefix, &info, "{}").await;
                        self.note("create .info", &r);
                        let s = status_of(&r);
                        ok = s == 201 || s == 409;
                    }
                    let r = c.delete(&self.opts.prefix, &lock, lock_etag).await;
                    self.note("delete .lock", &r);
                    if ok {
                        self.observer
                            .event(ProcessorEvent::Bootstrapped { initialized: true });
                        return true;
                    }
                }
            }
            sleep(Duration::from_millis(self.opts.lock_retry_ms)).await;
        }
        false
    }

    /// Acquire (SPEC §3.3.4): replace the balancer's copy, owner = self, if
    /// the server's owner is still the one the balancer saw.
    async fn acquire(&mut self, client: &mut StoreClient, mut lease: CachedLease) -> bool {
        let seen = lease.doc.owner.clone();
        let seen_timestamp = Some(lease.doc.timestamp);
        let me = self.opts.instance.clone();
        let r = self
            .update(
                client,
                "acquire",
                &mut lease,
                false,
                OwnerCheck::Is(seen.clone()),
                &|d| d.owner = Some(me.clone()),
            )
            .await;
        match r {
            Ok(()) => {
                let token = lease.doc.token;
                let mut continuation = lease.doc.continuation;
                if self.opts.bugs.resume_from_memory {
                    if let Some(m) = self.memory.get(&token) {
                        continuation = Some(*m);
                        lease.doc.continuation = continuation;
                    }
                }
                self.observer.event(ProcessorEvent::Acquired {
                    lease: token,
                    continuation,
                    from: seen,
                    seen_timestamp,
                });
                self.owned.borrow_mut().leases.insert(
                    token,
                    OwnedLease {
                        cached: lease,
                        lost: None,
                        next_read_ns: 0,
                    },
                );
                true
            }
            Err(LeaseError::Failed(_)) => {
                // The controller releases the balancer's copy (§3.3.4).
                self.release_copy(client, lease, seen).await;
                false
            }
            Err(LeaseError::Lost(_)) => false,
        }
    }

    /// Release: read, and if the owner is `owner`, set it to none.
    async fn release_copy(
        &mut self,
        client: &mut StoreClient,
        mut lease: CachedLease,
        owner: Option<String>,
    ) {
        let token = lease.doc.token;
        if owner.is_none() {
            return;
        }
        if self
            .update(
                client,
                "release",
                &mut lease,
                true,
                OwnerCheck::Is(owner),
                &|d| d.owner = None,
            )
            .await
            .is_ok()
        {
            self.observer
                .event(ProcessorEvent::Released { lease: token });
        }
    }

    /// Stops processing `token` here and releases it.
    async fn drop_lease(&mut self, client: &mut StoreClient, token: u32, why: &str, release: bool) {
        let removed = self.owned.borrow_mut().leases.remove(&token);
        let Some(owned) = removed else {
            return;
        };
        self.observer.event(ProcessorEvent::Stopped {
            lease: token,
            why: why.to_string(),
        });
        if release {
            let me = Some(self.opts.instance.clone());
            self.release_copy(client, owned.cached, me).await;
        }
    }

    /// One balancer pass (SPEC §3.3.6).
    async fn balance_pass(&mut self, client: &mut StoreClient) {
        let Some(leases) = self.list(client).await else {
            return;
        };
        let now = self.clock.now_ms();
        let owned: Vec<u32> = self.owned.borrow().leases.keys().copied().collect();
        // Leases this host processes count as its own even if the list is older.
        let take = balance(&leases, &self.opts.instance, now, self.opts.expiration_ms);
        for lease in take {
            if owned.contains(&lease.doc.token) {
                continue;
            }
            self.acquire(client, lease).await;
        }
    }

    /// One step of lease `token`'s processing loop (SPEC §3.3.5).
    async fn process(&mut self, client: &mut StoreClient, token: u32, delegate: &mut dyn Delegate) {
        let (cached, lost) = {
            let owned = self.owned.borrow();
            let Some(o) = owned.leases.get(&token) else {
                return;
            };
            (o.cached.clone(), o.lost.clone())
        };
        if let Some(why) = lost {
            self.drop_lease(client, token, &why, true).await;
            return;
        }
        let continuation = cached.doc.continuation;
        let from = match continuation {
            Some(c) => StartFrom::Continuation(c),
            None => self.start.clone(),
        };
        let req = FeedRequest::Read {
            container: self.opts.monitored.clone(),
            scope: FeedScope::Range(token),
            from,
            page_size: self.opts.max_items,
        };
        let r = self
            .feed(client, "read feed", &token.to_string(), req)
            .await;
        let (status, items) = r.as_ref().map_or((0, 0), |r| (r.status, r.items.len()));
        self.observer.event(ProcessorEvent::Read {
            lease: token,
            from: continuation,
            start_lsn: r.as_ref().and_then(|r| r.start_lsn),
            status,
            items,
        });
        let poll = Duration::from_millis(self.opts.poll_ms).as_nanos() as u64;
        match r {
            Some(page) if page.status == 304 => self.set_next_read(token, now_ns() + poll),
            Some(page) if page.status == 410 => {
                self.split(client, token, &cached, page).await;
            }
            Some(page) if page.status == 200 => {
                self.memory.insert(token, page.continuation);
                self.deliver(client, token, page, delegate).await;
            }
            _ => self.drop_lease(client, token, "read failed", true).await,
        }
    }

    fn set_next_read(&self, token: u32, at_ns: u64) {
        if let Some(o) = self.owned.borrow_mut().leases.get_mut(&token) {
            o.next_read_ns = at_ns;
        }
    }

    async fn deliver(
        &mut self,
        client: &mut StoreClient,
        token: u32,
        page: FeedResponse,
        delegate: &mut dyn Delegate,
    ) {
        let continuation = page.continuation;
        if self.opts.bugs.checkpoint_before_delegate
            && !self.checkpoint(client, token, continuation).await
        {
            return;
        }
        let plan = delegate.plan(token, &page.items);
        self.observer.event(ProcessorEvent::Delivered {
            lease: token,
            items: page.items,
            continuation,
        });
        sleep(Duration::from_millis(plan.run_ms)).await;
        self.observer.event(ProcessorEvent::DelegateDone {
            lease: token,
            ok: plan.ok,
            continuation,
        });
        if !plan.ok && !self.opts.bugs.drop_batch_on_delegate_error {
            self.drop_lease(client, token, "delegate error", true).await;
            return;
        }
        if !self.opts.bugs.checkpoint_before_delegate {
            self.checkpoint(client, token, continuation).await;
        }
    }

    /// Checkpoint: replace the cached copy with the new token (owner checked
    /// on a 412's re-read). False if the lease is lost (processing stops).
    async fn checkpoint(
        &mut self,
        client: &mut StoreClient,
        token: u32,
        continuation: u64,
    ) -> bool {
        let Some(mut cached) = self
            .owned
            .borrow()
            .leases
            .get(&token)
            .map(|o| o.cached.clone())
        else {
            return false;
        };
        let check = if self.opts.bugs.checkpoint_without_owner_check {
            OwnerCheck::Skip
        } else {
            OwnerCheck::Is(Some(self.opts.instance.clone()))
        };
        let r = self
            .update(client, "checkpoint", &mut cached, false, check, &|d| {
                d.continuation = Some(continuation)
            })
            .await;
        self.observer.event(ProcessorEvent::Checkpoint {
            lease: token,
            continuation,
            ok: r.is_ok(),
        });
        match r {
            Ok(()) => {
                if let Some(o) = self.owned.borrow_mut().leases.get_mut(&token) {
                    o.cached = cached;
                }
                true
            }
            Err(LeaseError::Lost(why)) => {
                self.drop_lease(client, token, &format!("checkpoint: {why}"), true)
                    .await;
                false
            }
            Err(LeaseError::Failed(_)) => {
                self.drop_lease(client, token, "checkpoint failed", true)
                    .await;
                false
            }
        }
    }

    /// Split handling (SPEC §3.3.8): a child lease per range with the
    /// in-memory continuation, owned by this host; then delete the parent.
    async fn split(
        &mut self,
        client: &mut StoreClient,
        token: u32,
        parent: &CachedLease,
        gone: FeedResponse,
    ) {
        let mut continuation = parent.doc.continuation;
        let mut created = Vec::new();
        let mut new_leases = Vec::new();
        let mut all_exist = true;
        for child in &gone.ranges {
            if self.opts.bugs.split_loses_continuation {
                let now = FeedRequest::Read {
                    container: self.opts.monitored.clone(),
                    scope: FeedScope::Range(child.id),
                    from: StartFrom::Now,
                    page_size: 1,
                };
                let key = child.id.to_string();
                if let Some(r) = self.feed(client, "read feed now", &key, now).await {
                    continuation = r.start_lsn;
                }
            }
            let doc = LeaseDoc {
                token: child.id,
                min: child.min,
                max: child.max,
                owner: Some(self.opts.instance.clone()),
                continuation,
                timestamp: self.stamp(),
                by: self.opts.instance.clone(),
                parent: Some(token),
            };
            let id = self.opts.lease_id(child.id);
            let r = match self.left_out(client, "create child lease", &id) {
                Some(r) => r,
                None => {
                    let mut c = CosmosContainer::new(client, &self.opts.lease_container);
                    let r = c.create(&self.opts.prefix, &id, &doc.to_body()).await;
                    self.note("create child lease", &r);
                    r
                }
            };
            // 409: a concurrent handler created it (`CreateLeaseIfNotExist` → null).
            all_exist &= matches!(status_of(&r), 201 | 409);
            if status_of(&r) == 201 {
                if let Some(cached) = r.response.as_ref().and_then(|resp| cached_from(&id, resp)) {
                    created.push(child.id);
                    new_leases.push(cached);
                }
            }
        }
        // The parent goes only once every child exists (else a gap: the
        // parent's next owner sees the 410 again and finishes the job).
        let delete_parent = all_exist && !self.opts.bugs.split_keeps_parent;
        if delete_parent
            && self
                .left_out::<CosmosResponse>(client, "delete parent lease", &parent.id)
                .is_none()
        {
            let mut c = CosmosContainer::new(client, &self.opts.lease_container);
            let r = c.delete(&self.opts.prefix, &parent.id, None).await;
            self.note("delete parent lease", &r);
        }
        self.observer.event(ProcessorEvent::Split {
            lease: token,
            children: created,
            continuation,
        });
        if delete_parent {
            self.drop_lease(client, token, "split", false).await;
        } else if all_exist {
            let poll = Duration::from_millis(self.opts.poll_ms).as_nanos() as u64;
            self.set_next_read(token, now_ns() + poll);
        } else {
            self.drop_lease(client, token, "split incomplete", true)
                .await;
        }
        for lease in new_leases {
            self.observer.event(ProcessorEvent::Acquired {
                lease: lease.doc.token,
                continuation: lease.doc.continuation,
                from: None,
                seen_timestamp: None,
            });
            self.owned.borrow_mut().leases.insert(
                lease.doc.token,
                OwnedLease {
                    cached: lease,
                    lost: None,
                    next_read_ns: 0,
                },
            );
        }
    }
}

/// The renewer of one host: renews every owned lease, first after half the
/// interval, then every interval; an owner mismatch or a 404 marks the lease
/// lost (other errors are ignored, SPEC §3.3.5 step 5).
async fn renewer(host: Rc<Host>, mut client: StoreClient, until_ns: Rc<RefCell<u64>>) {
    sleep(Duration::from_millis(host.opts.renew_ms / 2)).await;
    while now_ns() < *until_ns.borrow() {
        let tokens: Vec<u32> = host.owned.borrow().leases.keys().copied().collect();
        for token in tokens {
            let Some(mut cached) = host
                .owned
                .borrow()
                .leases
                .get(&token)
                .filter(|o| o.lost.is_none())
                .map(|o| o.cached.clone())
            else {
                continue;
            };
            let me = Some(host.opts.instance.clone());
            let r = host
                .update(
                    &mut client,
                    "renew",
                    &mut cached,
                    true,
                    OwnerCheck::Is(me),
                    &|_| {},
                )
                .await;
            let mut owned = host.owned.borrow_mut();
            let Some(o) = owned.leases.get_mut(&token) else {
                continue;
            };
            match r {
                Ok(()) => {
                    // Keep the processing loop's token if it checkpointed meanwhile.
                    if o.cached.doc.continuation == cached.doc.continuation {
                        o.cached = cached;
                    }
                }
                Err(LeaseError::Lost(why)) => o.lost = Some(format!("renew: {why}")),
                Err(LeaseError::Failed(_)) => {}
            }
        }
        sleep(Duration::from_millis(host.opts.renew_ms)).await;
    }
}

/// Sends a feed request; its response, or none if the call failed.
pub async fn feed_call(client: &mut StoreClient, req: FeedRequest) -> Option<FeedResponse> {
    let r = client.request(&Request::Feed(req)).await;
    r.response.and_then(Response::into_feed)
}

fn cached_from(id: &str, resp: &CosmosResponse) -> Option<CachedLease> {
    let item = resp.item()?;
    Some(CachedLease {
        id: id.to_string(),
        doc: LeaseDoc::from_body(item.body.as_deref()?)?,
        etag: item.etag.clone(),
    })
}

/// Initialises the lease container as an earlier deployment of the
/// processor would have left it, before the hosts of this one start: the
/// bootstrap of SPEC §3.3.3 (`.info`, a lease per range of the monitored
/// container), run by `opts.instance` and reported to no observer. False
/// if simulated time `until_ns` came first.
pub async fn prepare_lease_container(
    opts: ProcessorOptions,
    clock: Arc<dyn Clock>,
    client: &mut StoreClient,
    until_ns: u64,
) -> bool {
    /// Sees nothing: what it prepares is the world the run starts from.
    struct Unobserved;
    impl ProcessorObserver for Unobserved {
        fn event(&self, _e: ProcessorEvent) {}
    }
    let mut host = Host::new(opts, clock, Rc::new(Unobserved));
    host.setup = true;
    host.bootstrap(client, until_ns).await
}

/// Runs one host process (`StartAsync` … `StopAsync`) until simulated time
/// `until_ns`: bootstrap, re-acquire its own leases, then balance, renew and
/// process. At the end it releases every lease it owns (a crash releases
/// nothing). `main` and `renew` are two SDK clients (the renewer runs beside
/// the processing loop).
pub async fn run_host(
    opts: ProcessorOptions,
    clock: Arc<dyn Clock>,
    observer: Rc<dyn ProcessorObserver>,
    mut main: StoreClient,
    renew: StoreClient,
    delegate: &mut dyn Delegate,
    until_ns: u64,
) {
    let mut host = Host::new(opts, clock, observer);
    host.started_ms = host.clock.now_ms();
    host.start = match host.opts.start {
        ProcessorStart::Beginning => StartFrom::Beginning,
        ProcessorStart::Now => StartFrom::Time(host.started_ms.saturating_sub(1_000)),
    };
    let anchor = match host.start {
        StartFrom::Time(t) => Some(t),
        _ => None,
    };
    host.observer.event(ProcessorEvent::Started { anchor });
    host.setup = true;
    let bootstrapped = host.bootstrap(&mut main, until_ns).await;
    host.setup = false;
    if !bootstrapped {
        return;
    }
    // Re-acquire the leases this instance owns, without waiting for expiry.
    if let Some(leases) = host.list(&mut main).await {
        for l in leases {
            if l.doc.owner.as_deref() == Some(host.opts.instance.as_str()) {
                host.acquire(&mut main, l).await;
            }
        }
    }
    let until = Rc::new(RefCell::new(until_ns));
    let owned = host.owned.clone();
    let shared = Rc::new(Host {
        opts: host.opts.clone(),
        clock: host.clock.clone(),
        observer: host.observer.clone(),
        owned,
        memory: BTreeMap::new(),
        start: host.start.clone(),
        started_ms: host.started_ms,
        setup: false,
    });
    let renewer_task = madsim::task::spawn_local(renewer(shared, renew, until.clone()));
    let acquire = Duration::from_millis(host.opts.acquire_ms).as_nanos() as u64;
    let mut next_balance = 0u64;
    let mut cursor = 0usize;
    while now_ns() < until_ns {
        if now_ns() >= next_balance {
            host.balance_pass(&mut main).await;
            next_balance = now_ns() + acquire;
        }
        // Process the next due lease after the cursor (round robin).
        let due: Vec<u32> = {
            let owned = host.owned.borrow();
            let now = now_ns();
            owned
                .leases
                .iter()
                .filter(|(_, o)| o.next_read_ns <= now || o.lost.is_some())
                .map(|(t, _)| *t)
                .collect()
        };
        if let Some(&token) = due.get(cursor % due.len().max(1)) {
            cursor += 1;
            host.process(&mut main, token, delegate).await;
            continue;
        }
        let next_read = host
            .owned
            .borrow()
            .leases
            .values()
            .map(|o| o.next_read_ns)
            .min()
            .unwrap_or(u64::MAX);
        let wake = next_balance.min(next_read).min(until_ns);
        let wait = wake.saturating_sub(now_ns()).max(1_000_000);
        sleep(Duration::from_nanos(wait)).await;
    }
    // StopAsync: stop the renewer and release every owned lease.
    *until.borrow_mut() = 0;
    drop(renewer_task);
    let tokens: Vec<u32> = host.owned.borrow().leases.keys().copied().collect();
    for t in tokens {
        host.drop_lease(&mut main, t, "stop", true).await;
    }
    host.observer.event(ProcessorEvent::Left);
}

#[cfg(test)]
mod tests;
