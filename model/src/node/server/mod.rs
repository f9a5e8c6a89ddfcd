//! The server node: serves its partitions over madsim's network (each request
//! is dispatched by kind through [`Partition::apply`], so the loop is the same
//! for every service), logs every effect to the write-ahead log and
//! acknowledges it only once synced, recovers by replaying the log after a
//! crash, and has fault points that answer with the transient errors of SPEC §4.
//!
//! Group commit: the server keeps receiving and applying requests while a log
//! sync is in flight. Every applied effect's record is appended at once; a
//! sync covers every record appended before it started, and the next sync
//! starts as soon as one ends with records left unsynced. The rule for
//! replies is one for every kind of request: a reply is sent only once every
//! record appended up to the moment its request was applied is synced. For
//! a write that is its own record; for a read (or a refused write) it is
//! whatever it could have observed, so nothing a client is told can be taken
//! back by a crash. (Simplest correct rule: a read waits for the sync in
//! flight even when it touched no unsynced item; a read with nothing
//! unsynced is answered at once.) Held replies leave in the order their
//! requests were applied.
//!
//! Faults of the disk and the network it survives: a log that recovery finds
//! corrupt makes every partition of the server unavailable (503, see
//! [`serve`]); a failed sync is never retried (the server drops its state,
//! every reply waiting for a sync is dropped unsent, and it recovers from
//! what is durable); a duplicated request is answered from a bounded table
//! of recent outcomes ([`Dedup`]), never executed twice, and a duplicate of
//! a request whose reply waits for a sync gets that reply once the sync
//! succeeds (none if it fails).
//!
//! What it does with its log it reports to the observer in
//! [`ServerConfig::log`] ([`crate::durability`]): what each start-up (or
//! recovery in place) found, each sync that succeeded or failed, and each
//! answer that acknowledges a write's effect (an `Ok` answer to a request
//! that appended a record), with the record it needs durable.
//!
//! [`Partition::apply`]: crate::partition::Partition::apply

use crate::core::bugs::ModelBugs;
use crate::core::env::{Clock, ListenTable, LogDevice, SendPolicy, ServerDraws};
use crate::core::sub_status;
use crate::durability::{wal_runs, LogEvent, LogId, LogPos, LogReport, Reply};
use crate::partition::Partitions;
use crate::wal::{self, LogRecord};
use crate::wire::{
    self, OperationId, WireReply, WireRequest, WireResponse, MAX_DATAGRAM, REQUEST_TAG,
    RESPONSE_TAG,
};
use madsim::net::Endpoint;
use madsim::time::sleep;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

mod dedup;
mod faults;

use dedup::Dedup;
use dedup::Seen;
use faults::{fault_point, StormState, FAULT_POINT, SYNC_LATENCY};
pub use faults::{FaultRates, Storms};

/// A server's settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Where to listen.
    pub bind: SocketAddr,
    /// Containers every partition has from the start (provisioned, not logged).
    pub containers: Vec<String>,
    /// Physical ranges a container's change feed starts with
    /// ([`crate::services::feed::INITIAL_RANGES`] unless a scenario shrinks it).
    pub feed_ranges: u32,
    /// Fault point rates.
    pub faults: FaultRates,
    /// How long a log sync takes, ms range.
    pub fsync_ms: (u64, u64),
    /// The seeded bugs: the server reads `ack_before_sync`,
    /// `group_commit_off_by_one`, `read_unsynced` and
    /// `restart_drops_partition` and hands the set to its partitions.
    pub bugs: ModelBugs,
    /// What the network does to the answers the server sends.
    pub send: SendPolicy,
    /// How long to wait before listening after a restart: the longest a copy
    /// of a request sent to the previous incarnation can be on its way, whose
    /// outcome the lost table no longer knows (TCP's quiet time). Zero on a
    /// first start.
    pub quiet_after_restart: Duration,
    /// Whoever is told what the server does with its log (nobody by default).
    pub log: LogReport,
    /// Who is told when the server listens (a runner modelling refused connects;
    /// nobody by default).
    pub listen: ListenTable,
}

/// What the server counts, for the run summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStats {
    /// Requests answered by a fault point, by status.
    pub transient: BTreeMap<u16, u64>,
    /// Records replayed at start-ups.
    pub replayed: u64,
    /// Why the server's partitions were unavailable, one line per start-up
    /// (or recovery after a failed sync) that found the log corrupt.
    pub unavailable: Vec<String>,
    /// Log syncs that failed.
    pub fsync_errors: u64,
    /// Duplicated requests answered from the table of recent outcomes (or
    /// dropped as older than it), not executed.
    pub duplicates: u64,
    /// What each start-up (and each recovery after a failed sync) found, in
    /// order, with the time: whoever shares these stats (one server, or
    /// several) can tell when a server became unavailable and why.
    #[serde(default)]
    pub recoveries: Vec<Recovery>,
    /// Log records appended and not yet synced, now (for an incarnation
    /// that was killed: what its crash put at risk).
    #[serde(default)]
    pub unsynced: u64,
    /// The most log records that were appended and not yet synced at once
    /// (group commit: above 1 means requests were served during a sync).
    #[serde(default)]
    pub max_unsynced: u64,
    /// Successful syncs that made more than one record durable.
    #[serde(default)]
    pub shared_syncs: u64,
    /// Reads held until a sync made durable the records they could have seen.
    #[serde(default)]
    pub held_reads: u64,
    /// Storms started, by status (429 storms, 410 streaks).
    #[serde(default)]
    pub storms: BTreeMap<u16, u64>,
    /// Every request answered (or given up on), in the order its answer was
    /// sent, when `Some` (a scenario that judges retries from the servers'
    /// side starts the server with `Some(vec![])`); `None`: not recorded.
    /// Copies answered from the table of recent outcomes are not listed
    /// again; a request whose held reply died with its server is not listed.
    #[serde(default)]
    pub receipts: Option<Vec<Receipt>>,
}

/// One request as the server received and answered it: the servers' side
/// of the SDK's retries (SPEC §4). Recorded when the answer is sent (for a
/// reply held by group commit: after the sync that releases it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// When it was received, true simulated ns since the start of the run.
    pub at_ns: u64,
    /// The server's own clock then, ms.
    pub local_ms: u64,
    /// When it was answered (for a reply held by group commit, once the
    /// sync released it), true ns.
    pub answered_ns: u64,
    /// When the client's SDK sent this attempt, true ns, as the request
    /// carries it ([`WireRequest::sent_ns`]).
    #[serde(default)]
    pub sent_ns: u64,
    /// The logical operation it is an attempt of.
    pub operation: OperationId,
    /// The attempt's request id (increasing with every attempt of a session).
    pub req_id: u64,
    /// A write (not idempotent for retry purposes).
    pub write: bool,
    /// The status answered; `None` when it was never answered (its log sync
    /// failed and the server recovered in place).
    pub status: Option<u16>,
    /// The Cosmos sub-status of a transient answer (0 for none).
    pub sub_status: u32,
    /// The `x-ms-retry-after-ms` sent: `None` for none (a 429 without the
    /// header, or any other status), `Some(0)` for a 0.
    pub retry_after_ms: Option<u64>,
}

/// One start-up or in-place recovery of a server and what it found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovery {
    /// True simulated time, ns since the start of the run.
    pub at_ns: u64,
    /// The server's own clock then, ms.
    pub local_ms: u64,
    /// `None`: the log was sound and the server serves; `Some(reason)`: the
    /// log is corrupt (not a torn tail) and every partition answers 503
    /// until a later start-up finds it sound (SPEC: a server may refuse
    /// service rather than serve from a log it cannot vouch for).
    pub unavailable: Option<String>,
    /// Records replayed (0 when unavailable).
    pub replayed: u64,
    /// The copies of a mirrored log that recovery rewrote from the one it
    /// kept (none with one copy, or when every copy agreed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repaired: Vec<wal::Repair>,
}

/// What a start-up (or a recovery in place) rebuilt from the log's copies.
struct Rebuilt {
    /// The partitions (empty when the log is corrupt).
    partitions: Partitions,
    /// Records replayed.
    replayed: u64,
    /// The next record's `seq`.
    next_seq: u64,
    /// Why the log cannot be served from, if it cannot.
    damage: Option<String>,
    /// The copies repaired from another.
    repaired: Vec<wal::Repair>,
}

/// Rebuilds the partitions from every copy of the log ([`wal::recover`]).
fn recover(cfg: &ServerConfig, logs: &Copies) -> Rebuilt {
    let mut partitions =
        Partitions::new(cfg.bugs, cfg.containers.clone()).with_feed_ranges(cfg.feed_ranges);
    let copies: Vec<&dyn LogDevice> = logs.iter().map(|l| l.as_ref()).collect();
    let r = wal::recover(&copies, &cfg.bugs);
    let replayed = if r.damage.is_some() {
        0
    } else {
        partitions.redo_all(&r.records);
        r.records.len() as u64
    };
    Rebuilt {
        partitions,
        replayed,
        next_seq: r.next_seq,
        damage: r.damage,
        repaired: r.repairs,
    }
}

/// Every copy of the server's log (the first is `a`): a record is appended
/// to each, and a reply waits until every copy's sync covering it succeeded.
type Copies = [Arc<dyn LogDevice>];

/// Syncs every copy of the log; a failure on any copy is the sync's failure
/// (each copy is synced all the same, so no copy lags on the others' account).
/// The seeded bug `mirror_ack_after_one_copy` syncs the first copy only.
fn sync_all(logs: &Copies, bugs: &ModelBugs) -> Result<(), crate::core::env::SyncError> {
    let mut result = Ok(());
    // The seeded bug syncs the first copy only.
    let synced = if bugs.mirror_ack_after_one_copy {
        &logs[..1]
    } else {
        logs
    };
    for log in synced {
        if let Err(e) = log.sync() {
            result = Err(e);
        }
    }
    result
}

/// Where a reply goes and under which table key it is remembered.
struct ReplyTo<'a> {
    ep: &'a Arc<Endpoint>,
    to: SocketAddr,
    req_id: u64,
    /// The request's session, echoed in the answer.
    session: u64,
    /// `(session, req_id)`, or `None` when the table is off (`no_dedup`).
    key: Option<(u64, u64)>,
    send: &'a SendPolicy,
    /// What its receipt records of the request.
    arrival: Arrival,
    /// Where its receipt goes.
    stats: &'a std::sync::Mutex<ServerStats>,
}

/// What a receipt records of a request, kept with its reply until it is sent.
#[derive(Clone, Copy, Debug)]
struct Arrival {
    /// The operation the request is an attempt of.
    operation: OperationId,
    /// When it was received: true ns, and the server's clock (ms).
    received_ns: u64,
    received_local_ms: u64,
    /// When the SDK sent it (true ns, from the request).
    sent_ns: u64,
    /// The request is a write.
    write: bool,
}

impl Arrival {
    /// `req` as it arrives now, on a server whose clock reads `local_ms`.
    fn of(req: &WireRequest, local_ms: u64) -> Arrival {
        Arrival {
            operation: OperationId {
                session: req.session,
                op: req.op_id,
            },
            received_ns: crate::core::env::sim_now_ns(),
            received_local_ms: local_ms,
            sent_ns: req.sent_ns,
            write: req.op.is_write(),
        }
    }

    /// Records the receipt of request `req_id` with the answer it got
    /// (`None`: none, ever), now, if the server records receipts.
    fn record(
        &self,
        req_id: u64,
        reply: Option<&WireReply>,
        stats: &std::sync::Mutex<ServerStats>,
    ) {
        let mut stats = stats.lock().unwrap_or_else(|e| e.into_inner());
        let Some(receipts) = stats.receipts.as_mut() else {
            return;
        };
        let (status, sub_status, retry_after_ms) = match reply {
            None => (None, sub_status::NONE, None),
            Some(WireReply::Ok(r)) => (Some(r.status()), sub_status::NONE, None),
            Some(WireReply::Transient {
                status,
                sub_status,
                retry_after_ms,
            }) => (Some(*status), *sub_status, *retry_after_ms),
        };
        receipts.push(Receipt {
            at_ns: self.received_ns,
            local_ms: self.received_local_ms,
            answered_ns: crate::core::env::sim_now_ns(),
            sent_ns: self.sent_ns,
            operation: self.operation,
            req_id,
            write: self.write,
            status,
            sub_status,
            retry_after_ms,
        });
    }
}

/// A reply held until the log sync that makes it safe to send has succeeded.
struct Waiting {
    to: SocketAddr,
    req_id: u64,
    session: u64,
    /// The table key, as in [`ReplyTo::key`].
    key: Option<(u64, u64)>,
    reply: WireReply,
    /// Sent once every record with a lower `seq` is synced.
    need: u64,
    /// Whether sending it records it in the table and as a receipt (false
    /// for the copy answering a duplicate, whose original records it).
    remember: bool,
    /// What its receipt records of the request.
    arrival: Arrival,
    /// When it acknowledges a write's effect: the position of the effect's
    /// record (what it truly needs durable, whatever `need` says).
    acks: Option<u64>,
}

impl Waiting {
    fn reply_to<'a>(
        &self,
        ep: &'a Arc<Endpoint>,
        send: &'a SendPolicy,
        stats: &'a std::sync::Mutex<ServerStats>,
    ) -> ReplyTo<'a> {
        ReplyTo {
            ep,
            to: self.to,
            req_id: self.req_id,
            session: self.session,
            key: self.key,
            send,
            arrival: self.arrival,
            stats,
        }
    }

    /// The same answer for a duplicate of the request, sent to `to`.
    fn copy_to(&self, to: SocketAddr) -> Waiting {
        Waiting {
            to,
            req_id: self.req_id,
            session: self.session,
            key: self.key,
            reply: self.reply.clone(),
            need: self.need,
            remember: false,
            arrival: self.arrival,
            acks: self.acks,
        }
    }
}

/// What a successful sync released.
struct Released {
    /// The replies now safe to send, in the order their requests were applied.
    replies: Vec<Waiting>,
    /// How many records the sync made durable.
    records: u64,
}

/// Group commit's bookkeeping: how much of the log is synced and the replies
/// waiting for more of it. Pure: the serve loop starts the syncs.
struct GroupCommit {
    /// Every record with a lower `seq` is synced.
    durable: u64,
    /// Replies in the order their requests were applied (so by `need`).
    waiting: VecDeque<Waiting>,
}

impl GroupCommit {
    /// Nothing waiting; every record below `next_seq` (what recovery found) is durable.
    fn new(next_seq: u64) -> GroupCommit {
        GroupCommit {
            durable: next_seq,
            waiting: VecDeque::new(),
        }
    }

    /// Records appended and not yet synced, when the next record is `next_seq`.
    fn unsynced(&self, next_seq: u64) -> u64 {
        next_seq.saturating_sub(self.durable)
    }

    /// Holds a reply until its records are synced.
    fn hold(&mut self, w: Waiting) {
        self.waiting.push_back(w);
    }

    /// The reply held for the attempt `key`, if any.
    fn waiting_for(&self, key: (u64, u64)) -> Option<&Waiting> {
        self.waiting
            .iter()
            .find(|w| w.remember && w.key == Some(key))
    }

    /// A sync of every record below `covers` succeeded.
    fn release(&mut self, covers: u64) -> Released {
        let records = covers.saturating_sub(self.durable);
        self.durable = self.durable.max(covers);
        let mut replies = Vec::new();
        while self.waiting.front().is_some_and(|w| w.need <= self.durable) {
            replies.extend(self.waiting.pop_front());
        }
        Released { replies, records }
    }

    /// A sync failed: every held reply is dropped unsent; the originals
    /// (not the copies for duplicates), whose requests are now in doubt.
    fn abandon(&mut self) -> Vec<Waiting> {
        self.waiting.drain(..).filter(|w| w.remember).collect()
    }
}

/// A log sync under way: `done` completes when its latency has passed.
struct SyncInFlight {
    done: Pin<Box<dyn Future<Output = ()> + Send>>,
    /// It covers every record with a lower `seq`.
    covers: u64,
}

/// A receive in progress; it hands its buffer back with what it got.
type Receiving =
    Pin<Box<dyn Future<Output = (Vec<u8>, std::io::Result<(usize, SocketAddr)>)> + Send>>;

/// Receives one request into `buf`.
fn receive(ep: Arc<Endpoint>, mut buf: Vec<u8>) -> Receiving {
    Box::pin(async move {
        let received = ep.recv_from(REQUEST_TAG, &mut buf).await;
        (buf, received)
    })
}

/// What woke the serve loop.
enum Event {
    /// The sync in flight has waited out its latency.
    Synced,
    /// A datagram (or an error) from the receive in progress.
    Received(Vec<u8>, std::io::Result<(usize, SocketAddr)>),
}

/// The next event: the sync in flight first when both are ready (a fixed
/// order, so the run stays deterministic). Neither future is dropped here.
async fn next_event(recv: &mut Receiving, mut sync: Option<&mut SyncInFlight>) -> Event {
    std::future::poll_fn(|cx| {
        if let Some(s) = sync.as_mut() {
            if s.done.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Event::Synced);
            }
        }
        recv.as_mut()
            .poll(cx)
            .map(|(buf, received)| Event::Received(buf, received))
    })
    .await
}

/// Runs a server until the node is killed. `draws` names each request (the
/// identity its log record is appended under) and hands out the streams of
/// the fault points (one per request) and of the sync latency (one per
/// sync); `stats` is shared with whoever wants the counts.
pub async fn serve(
    cfg: ServerConfig,
    clock: Arc<dyn Clock>,
    logs: Vec<Arc<dyn LogDevice>>,
    draws: Arc<dyn ServerDraws>,
    stats: Arc<std::sync::Mutex<ServerStats>>,
) {
    assert!(
        !logs.is_empty(),
        "a server keeps at least one copy of its log"
    );
    let rebuilt = recover(&cfg, &logs);
    let replayed = rebuilt.replayed;
    report_recovered(&cfg, clock.as_ref(), rebuilt.next_seq);
    tracing::info!("server {} up: replayed {replayed} log records", cfg.bind);
    stats.lock().unwrap_or_else(|e| e.into_inner()).replayed += replayed;
    report_damage(&cfg, &rebuilt, clock.as_ref(), &stats);
    let Rebuilt {
        mut partitions,
        mut next_seq,
        mut damage,
        ..
    } = rebuilt;
    if !cfg.quiet_after_restart.is_zero() {
        sleep(cfg.quiet_after_restart).await;
    }
    let mut dedup = Dedup::default();
    let ep = match Endpoint::bind(cfg.bind).await {
        Ok(ep) => Arc::new(ep),
        Err(e) => {
            tracing::error!("server cannot bind {}: {e}", cfg.bind);
            return;
        }
    };
    cfg.listen.listening(cfg.bind);
    // Reused for every answer and log record.
    let mut out = Vec::new();
    let mut record = Vec::new();
    let mut dropped: Option<u32> = None;
    let mut storms = StormState::default();
    let mut commit = GroupCommit::new(next_seq);
    // What the next sync's latency is drawn from: its kind, then the records
    // appended since the last sync started, each by the identity of the
    // request that wrote it (not its LSN, which moves when a shrunk run
    // writes fewer records to the partition before it).
    let mut unsynced: Vec<u64> = vec![SYNC_LATENCY];
    let faulty = cfg.faults.any();
    // The sync in flight, if any, and the receive in progress: both stay
    // alive across turns of the loop (a receive is never dropped half done).
    let mut syncing: Option<SyncInFlight> = None;
    let mut receiving: Option<Receiving> = None;
    let mut spare = Some(vec![0u8; MAX_DATAGRAM]);
    loop {
        if syncing.is_none() && commit.unsynced(next_seq) > 0 {
            // One sync covers every record appended before it starts.
            let (lo, hi) = cfg.fsync_ms;
            let records = std::mem::replace(&mut unsynced, vec![SYNC_LATENCY]);
            let fsync = Duration::from_micros(if hi > lo {
                draws.stream(&records).gen_range(lo * 1000..=hi * 1000)
            } else {
                lo * 1000
            });
            syncing = Some(SyncInFlight {
                done: Box::pin(sleep(fsync)),
                covers: next_seq,
            });
        }
        let recv = receiving.get_or_insert_with(|| {
            let buf = spare.take().unwrap_or_else(|| vec![0u8; MAX_DATAGRAM]);
            receive(ep.clone(), buf)
        });
        let (buf, received) = match next_event(recv, syncing.as_mut()).await {
            Event::Received(buf, received) => {
                receiving = None;
                (buf, received)
            }
            Event::Synced => {
                let Some(done) = syncing.take() else {
                    continue;
                };
                let synced = match sync_all(&logs, &cfg.bugs) {
                    Ok(()) => true,
                    Err(_) => {
                        cfg.log
                            .report(clock.as_ref(), || LogEvent::SyncFailed { log: LogId::Wal });
                        stats.lock().unwrap_or_else(|e| e.into_inner()).fsync_errors += 1;
                        tracing::warn!("server {}: log sync failed", cfg.bind);
                        // The seeded bug syncs again, which "succeeds" with nothing to write.
                        cfg.bugs.retry_fsync_after_error && sync_all(&logs, &cfg.bugs).is_ok()
                    }
                };
                if !synced {
                    // The device may have dropped the bytes (and a retry would not
                    // bring them back): the log is unreliable. Crash in place: no
                    // answer to anything waiting for a sync, state rebuilt from
                    // what is durable (which may or may not hold those writes: a
                    // copy of one is never answered).
                    for w in commit.abandon() {
                        if let Some((session, req_id)) = w.key {
                            dedup.record(session, req_id, None);
                        }
                        w.arrival.record(w.req_id, None, &stats);
                    }
                    let rebuilt = recover(&cfg, &logs);
                    report_recovered(&cfg, clock.as_ref(), rebuilt.next_seq);
                    report_damage(&cfg, &rebuilt, clock.as_ref(), &stats);
                    (partitions, next_seq, damage) =
                        (rebuilt.partitions, rebuilt.next_seq, rebuilt.damage);
                    commit = GroupCommit::new(next_seq);
                    unsynced.truncate(1);
                    stats.lock().unwrap_or_else(|e| e.into_inner()).unsynced = 0;
                    continue;
                }
                cfg.log.report(clock.as_ref(), || LogEvent::Synced {
                    log: LogId::Wal,
                    durable: wal_runs(done.covers - 1),
                });
                let released = commit.release(done.covers);
                {
                    let mut st = stats.lock().unwrap_or_else(|e| e.into_inner());
                    st.unsynced = commit.unsynced(next_seq);
                    if released.records > 1 {
                        st.shared_syncs += 1;
                    }
                }
                for w in released.replies {
                    if let Some(lsn) = w.acks.filter(|_| w.remember) {
                        report_ack(&cfg, clock.as_ref(), &w.arrival, w.req_id, lsn);
                    }
                    let table = w.remember.then_some(&mut dedup);
                    send(
                        &w.reply_to(&ep, &cfg.send, &stats),
                        w.reply,
                        &mut out,
                        table,
                    )
                    .await;
                }
                continue;
            }
        };
        let decoded = received
            .ok()
            .and_then(|(len, from)| Some((wire::from_bytes::<WireRequest>(&buf[..len])?, from)));
        spare = Some(buf);
        let Some((req, from)) = decoded else {
            continue;
        };
        let session = if cfg.bugs.dedup_without_session {
            0
        } else {
            req.session
        };
        let key = (!cfg.bugs.no_dedup).then_some((session, req.req_id));
        let arrival = Arrival::of(&req, clock.now_ms());
        let to = ReplyTo {
            ep: &ep,
            to: from,
            req_id: req.req_id,
            session: req.session,
            key,
            send: &cfg.send,
            arrival,
            stats: &stats,
        };
        if key.is_some() {
            match dedup.seen(session, req.req_id) {
                Seen::New => {
                    if let Some(w) = commit.waiting_for((session, req.req_id)) {
                        // Executed, its sync still to come: answered with the
                        // original, once that sync succeeds (never if it fails).
                        stats.lock().unwrap_or_else(|e| e.into_inner()).duplicates += 1;
                        let copy = w.copy_to(from);
                        commit.hold(copy);
                        continue;
                    }
                }
                Seen::Answered(reply) => {
                    stats.lock().unwrap_or_else(|e| e.into_inner()).duplicates += 1;
                    send(&to, reply, &mut out, None).await;
                    continue;
                }
                Seen::Stale => {
                    stats.lock().unwrap_or_else(|e| e.into_inner()).duplicates += 1;
                    continue;
                }
            }
        }
        if damage.is_some() {
            // Unavailable: never served from a corrupt log. 503 is final for
            // the SDK on one region and means "not executed" (SPEC §4.1 row 503).
            let reply = WireReply::Transient {
                status: 503,
                sub_status: sub_status::NONE,
                retry_after_ms: None,
            };
            send(&to, reply, &mut out, Some(&mut dedup)).await;
            continue;
        }
        if cfg.bugs.restart_drops_partition && !cfg.quiet_after_restart.is_zero() {
            // The seeded bug: the first partition asked for after a restart
            // (a restart is what waits a quiet time) is never served.
            if *dropped.get_or_insert(req.partition) == req.partition {
                let reply = WireReply::Transient {
                    status: 503,
                    sub_status: sub_status::NONE,
                    retry_after_ms: None,
                };
                send(&to, reply, &mut out, Some(&mut dedup)).await;
                continue;
            }
        }
        let is_write = req.op.is_write();
        // The request's own stream: leaving another request out (a shrunk
        // run) does not move this one's fault. None drawn without faults.
        let identity = draws.request(from);
        let fault = if faulty {
            fault_point(
                &cfg.faults,
                &mut storms,
                req.partition,
                is_write,
                draws.stream(&[FAULT_POINT, identity]).as_mut(),
                &stats,
            )
        } else {
            None
        };
        if let Some(fault) = &fault {
            stats
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .transient
                .entry(fault.status)
                .and_modify(|n| *n += 1)
                .or_insert(1);
        }
        let fault = match fault {
            Some(fault) if !fault.execute => {
                send(&to, fault.reply, &mut out, Some(&mut dedup)).await;
                continue;
            }
            executed => executed,
        };
        let partition = partitions.get_mut(req.partition);
        let (response, effect) = partition.apply(&req.op, clock.now_ms());
        let lsn = partition.lsn();
        let reply = match fault {
            Some(fault) => fault.reply,
            None => WireReply::Ok(response),
        };
        let own_record = effect.is_some();
        // An `Ok` answer to a request that appended a record acknowledges
        // its effect: it needs that record durable (its `seq`, from 1).
        let acks = (own_record && matches!(reply, WireReply::Ok(_))).then_some(next_seq);
        if let Some(effect) = effect {
            wal::encode_into(
                &mut record,
                next_seq,
                &LogRecord {
                    partition: req.partition,
                    lsn,
                    effect,
                },
            );
            for log in &logs {
                log.append_as(identity, &record);
            }
            unsynced.push(identity);
            next_seq += 1;
            let mut st = stats.lock().unwrap_or_else(|e| e.into_inner());
            st.unsynced = commit.unsynced(next_seq);
            st.max_unsynced = st.max_unsynced.max(st.unsynced);
        }
        // The reply may reflect every record appended so far (its own, and
        // others' it read), so it waits until all of them are synced. The
        // seeded bugs answer a write, or a read, at once.
        let at_once = commit.unsynced(next_seq) == 0
            || (own_record && cfg.bugs.ack_before_sync)
            || (!is_write && cfg.bugs.read_unsynced);
        if at_once {
            if let Some(lsn) = acks {
                report_ack(&cfg, clock.as_ref(), &arrival, req.req_id, lsn);
            }
            send(&to, reply, &mut out, Some(&mut dedup)).await;
            continue;
        }
        if !is_write {
            stats.lock().unwrap_or_else(|e| e.into_inner()).held_reads += 1;
        }
        // The seeded bug `group_commit_off_by_one` takes a write's own record
        // as the bound (records *below* it synced) instead of one past it: a
        // write applied while a sync is in flight is released by that sync.
        let need = if own_record && cfg.bugs.group_commit_off_by_one {
            next_seq - 1
        } else {
            next_seq
        };
        commit.hold(Waiting {
            to: from,
            req_id: req.req_id,
            session: req.session,
            key,
            reply,
            need,
            remember: true,
            arrival,
            acks,
        });
    }
}

/// Reports what a start-up or recovery in place read back from the log: its
/// records below `next_seq` (what recovery found; `seq` counts from 1), all
/// on the disk.
fn report_recovered(cfg: &ServerConfig, clock: &dyn Clock, next_seq: u64) {
    cfg.log.report(clock, || LogEvent::Recovered {
        log: LogId::Wal,
        durable: wal_runs(next_seq.saturating_sub(1)),
    });
}

/// Reports that the answer to attempt `req_id` of `arrival`'s operation,
/// about to leave, acknowledges the effect whose record is `lsn`.
fn report_ack(cfg: &ServerConfig, clock: &dyn Clock, arrival: &Arrival, req_id: u64, lsn: u64) {
    cfg.log.report(clock, || LogEvent::Acked {
        log: LogId::Wal,
        reply: Reply::Attempt {
            operation: arrival.operation,
            req_id,
        },
        needs: LogPos { lsn, term: 0 },
        quorum: None,
    });
}

/// Records what a recovery found, and logs and counts why the server's
/// partitions are unavailable, if they are.
fn report_damage(
    cfg: &ServerConfig,
    rebuilt: &Rebuilt,
    clock: &dyn Clock,
    stats: &std::sync::Mutex<ServerStats>,
) {
    for repair in &rebuilt.repaired {
        tracing::warn!("server {}: {repair}", cfg.bind);
    }
    stats
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .recoveries
        .push(Recovery {
            at_ns: crate::core::env::sim_now_ns(),
            local_ms: clock.now_ms(),
            unavailable: rebuilt.damage.clone(),
            replayed: rebuilt.replayed,
            repaired: rebuilt.repaired.clone(),
        });
    if let Some(reason) = &rebuilt.damage {
        tracing::error!(
            "server {}: every partition unavailable (503): {reason}",
            cfg.bind
        );
        stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unavailable
            .push(reason.clone());
    }
}

/// Sends `reply` to the request `to` names, and remembers it in `table`
/// (when given and the table is on). A first answer (one with a table) is
/// also the request's receipt: recorded here, as it is sent.
async fn send(to: &ReplyTo<'_>, reply: WireReply, out: &mut Vec<u8>, table: Option<&mut Dedup>) {
    if table.is_some() {
        to.arrival.record(to.req_id, Some(&reply), to.stats);
    }
    if let (Some(table), Some((session, req_id))) = (table, to.key) {
        table.record(session, req_id, Some(&reply));
    }
    wire::to_bytes_into(
        out,
        &WireResponse {
            req_id: to.req_id,
            reply,
            session: to.session,
        },
    );
    // A send to an unreachable peer is dropped by the network; nothing to do.
    let _ = wire::send_datagram(to.ep, to.to, RESPONSE_TAG, out, to.send).await;
}

#[cfg(test)]
mod tests;
