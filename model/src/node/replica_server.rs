//! The madsim node around [`Replica`]: one replica of every partition, the
//! messages between replicas, a durable log mirrored on the node's disks,
//! and client requests with a consistency level.
//!
//! One loop, one event at a time: a datagram (a peer's [`Message`] or a
//! client's [`RegionRequest`]) or a tick. After each event everything the
//! replicas asked to persist is appended to every copy of the log as one
//! record and synced *before* any message or reply of that event leaves: an
//! append is acknowledged, a vote granted, a write answered only once
//! durable on every copy, so a replica's own log always counts as durable
//! when the next event comes. A failed sync (on any copy) is never retried:
//! the node rebuilds its state from what is on the disks, dropping what the
//! event produced (nothing of it was sent).
//!
//! The log is framed as [`crate::wal`] frames its records, a record being a
//! step's `(partition, Persist)` list (a replica logs terms, votes,
//! truncations and commit marks besides entries), and recovered by the same
//! rule over its copies ([`crate::wal::recover`]): a torn tail (a crash cut
//! the unsynced last record, nothing of it was sent) is cut; a copy that
//! ends in corruption (a flipped bit, a misdirected or lost write) is
//! repaired from a sound one; when every copy is corrupt the node refuses:
//! no vote, no acknowledgement, every client request answered 503, for the
//! rest of its incarnation (a record it acknowledged may be gone from every
//! copy; repair from its peers is not modelled).
//!
//! Answers (SPEC §4.1): while the node's region is being removed from the
//! account, 403/1008 to every client request; a write at a read replica
//! 403/3 (`WriteForbidden`);
//! a request for the primary at a replica that is not (any longer) the
//! primary 410 sub-status 0, with the primary it believes in; no primary
//! known, or a primary without its lease for a strong read, 503; a session
//! read below its token 404/1002 (`ReadSessionNotAvailable`). A duplicated
//! write request (same session and request id) is handled once: a copy
//! arriving after the first was refused is dropped too, since the client
//! may already have been told the write was not executed.
//!
//! What it does with its log it reports to the observer in
//! [`ReplicaServerConfig::log`] ([`crate::durability`]), partition by
//! partition: each partition's log as every start-up (or rebuild) read it
//! back, each sync that succeeded (the partition's log then, all durable) or
//! failed, each acknowledgement of an append it sends, and each answer to a
//! write whose entry it appended as the primary (needing a quorum of the
//! voters' copies). The seeded bug `replica_ack_before_sync` lets the
//! append acknowledgements of an event leave before its sync.

use crate::core::bugs::ModelBugs;
use crate::core::conditions::Millis;
use crate::core::env::{Clock, LogDevice, SendPolicy};
use crate::durability::{runs_of, LogEvent, LogId, LogPos, LogReport, Quorum, Reply};
use crate::node::replica::{
    Message, Persist, ReadConsistency, ReadOutcome, Replica, ReplicaConfig, ReplicaId, WriteOutcome,
};
use crate::partition::{Request, Response};
use crate::wire;
use madsim::net::Endpoint;
use madsim::time::sleep;
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

/// Datagram tag of everything a replica receives (peer messages and client requests).
pub const REPLICA_TAG: u64 = 21;
/// Datagram tag of the answers to clients.
pub const REPLY_TAG: u64 = 22;
/// Largest datagram either side reads.
pub const MAX_REPLICA_DATAGRAM: usize = 256 * 1024;

/// A client's request to a replica.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RegionRequest {
    /// Unique per client session; the answer carries it back.
    pub req_id: u64,
    /// The client's session (connection) id.
    pub session: u64,
    /// The partition the key routes to.
    pub partition: u32,
    /// The operation.
    pub op: Request,
    /// The consistency level (reads).
    pub consistency: ReadConsistency,
    /// The client's session token LSN for the partition (session reads).
    pub session_lsn: Option<u64>,
}

/// A replica's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum RegionReply {
    /// Executed: the service's answer and the LSN it reflects (the session token).
    Ok {
        /// The service's answer.
        response: Response,
        /// The LSN.
        lsn: u64,
    },
    /// Not executed here.
    Refused {
        /// The status (403, 404, 410, 503).
        status: u16,
        /// The sub-status (3, 1002, 0).
        sub_status: u32,
        /// The primary the replica believes in (on 410/0).
        primary_hint: Option<ReplicaId>,
    },
}

/// An answer datagram.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RegionResponse {
    /// The request's id.
    pub req_id: u64,
    /// The request's session.
    pub session: u64,
    /// The answer.
    pub reply: RegionReply,
    /// The node that answered (its incarnation name).
    pub node: String,
    /// Its region.
    pub region: String,
}

/// Everything a replica receives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Datagram {
    /// From another replica of a partition.
    Peer {
        /// The partition.
        partition: u32,
        /// The sender.
        from: ReplicaId,
        /// The message.
        msg: Message,
    },
    /// From a client.
    Client(Box<RegionRequest>),
}

/// A replica node's settings.
#[derive(Clone, Debug)]
pub struct ReplicaServerConfig {
    /// This replica's id (the same in every partition).
    pub me: ReplicaId,
    /// Its region.
    pub region: String,
    /// Its incarnation name (answers carry it).
    pub node: String,
    /// Every replica's address, by id (its own included).
    pub addrs: BTreeMap<ReplicaId, SocketAddr>,
    /// The write region's replica set.
    pub voters: Vec<ReplicaId>,
    /// The read replicas.
    pub learners: Vec<ReplicaId>,
    /// Partitions (each replicated on every replica).
    pub partitions: u32,
    /// Leader lease, ms.
    pub lease_ms: u64,
    /// Stated clock rate error bound, ppm.
    pub drift_bound_ppm: u64,
    /// Election timeout, ms.
    pub election_timeout_ms: u64,
    /// Heartbeat interval, ms.
    pub heartbeat_ms: u64,
    /// Shipping interval to the read replicas, ms.
    pub ship_ms: u64,
    /// How often the replicas are ticked, ms.
    pub tick_ms: u64,
    /// How long a log sync takes, ms range.
    pub fsync_ms: (u64, u64),
    /// Containers every partition has.
    pub containers: Vec<String>,
    /// Seeded bugs.
    pub bugs: ModelBugs,
    /// What the network does to what this node sends.
    pub send: SendPolicy,
    /// Wait before listening after a restart (a request's late copy to the
    /// previous incarnation must not be executed again: its dedup table is gone).
    pub quiet_after_restart: Duration,
    /// Windows of simulated time (ns, `[from, until)`) in which this node's
    /// region is being removed from the account: every client request is
    /// answered 403/1008 (`DatabaseAccountNotFound`, SPEC §4.1). The account's
    /// control plane decides them, so they are in true time, not this node's clock.
    pub removed_ns: Vec<(u64, u64)>,
    /// Whoever is told what the node does with its log (nobody by default).
    pub log: LogReport,
}

impl ReplicaServerConfig {
    /// The pure replica's settings for one partition.
    pub fn replica_config(&self) -> ReplicaConfig {
        ReplicaConfig {
            me: self.me,
            voters: self.voters.clone(),
            learners: self.learners.clone(),
            lease_ms: self.lease_ms,
            drift_bound_ppm: self.drift_bound_ppm,
            election_timeout_ms: self.election_timeout_ms,
            heartbeat_ms: self.heartbeat_ms,
            ship_ms: self.ship_ms,
            max_batch: 32,
            containers: self.containers.clone(),
            bugs: self.bugs,
        }
    }
}

/// A replica became the primary of a partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrimaryChange {
    /// The node (incarnation name).
    pub node: String,
    /// True simulated ns.
    pub at_ns: u64,
    /// The node's clock, ms.
    pub local_ms: u64,
    /// The partition.
    pub partition: u32,
    /// The term.
    pub term: u64,
}

/// Entries a replica of a node applied in one step (after that step's
/// records were durable): see [`crate::node::replica::Applied`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedChange {
    /// The node (incarnation name).
    pub node: String,
    /// True simulated ns.
    pub at_ns: u64,
    /// The node's clock, ms.
    pub local_ms: u64,
    /// The partition.
    pub partition: u32,
    /// The entries, in the order applied.
    pub entries: Vec<crate::node::replica::Applied>,
}

/// What a replica node shares with whoever runs it: its replicas (read once
/// the run is over, for the final views), its primary changes, what it
/// applied and counts.
#[derive(Default)]
pub struct ReplicaReport {
    /// The replicas of the node's current incarnation, by partition.
    pub replicas: BTreeMap<u32, Replica>,
    /// Every time it became a primary.
    pub primaries: Vec<PrimaryChange>,
    /// What its replicas applied, step by step.
    pub applied: Vec<AppliedChange>,
    /// Counts: `answered_<status>`, `fsync_errors`, `log_repairs`,
    /// `duplicate_writes`.
    pub counts: BTreeMap<String, u64>,
    /// The node's clock when it last handled an event, ms.
    pub last_local_ms: u64,
    /// Set when a recovery found every copy of the log corrupt: when, and
    /// what it found. The node refuses from then on.
    pub refused: Option<Refusal>,
}

/// A recovery that found every copy of a replica's log corrupt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// The node (incarnation name).
    pub node: String,
    /// True simulated ns.
    pub at_ns: u64,
    /// The node's clock, ms.
    pub local_ms: u64,
    /// What recovery found.
    pub reason: String,
}

/// A replica node's report, shared.
pub type SharedReport = Arc<Mutex<ReplicaReport>>;

fn lock(r: &SharedReport) -> std::sync::MutexGuard<'_, ReplicaReport> {
    r.lock().unwrap_or_else(|e| e.into_inner())
}

/// One step's records, the record of a replica's log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Step(Vec<(u32, Persist)>);

impl crate::wal::Framed for Step {
    /// Steps carry no order of their own: the frame's `seq` places them.
    type Order = ();
    fn follows(&self, _: &mut (), _: bool) -> Result<(), String> {
        Ok(())
    }
}

/// Every copy of a replica's log (the first is `a`).
type Copies = [Arc<dyn LogDevice>];

/// What a recovery rebuilt: every partition's replica and the next
/// record's `seq`, or why no copy of the log can be trusted.
type Rebuilt = Result<(BTreeMap<u32, Replica>, u64), String>;

/// Rebuilds every partition's replica from the copies of the log
/// ([`crate::wal::recover`]: torn tails cut, a corrupt copy repaired from a
/// sound one, counted in `counts`); the damage when every copy is corrupt.
fn recover(
    cfg: &ReplicaServerConfig,
    logs: &Copies,
    now: Millis,
    counts: &mut BTreeMap<String, u64>,
) -> Rebuilt {
    let copies: Vec<&dyn LogDevice> = logs.iter().map(|l| l.as_ref()).collect();
    let r = crate::wal::recover_as::<Step>(&copies, &cfg.bugs);
    if let Some(damage) = r.damage {
        return Err(damage);
    }
    for repair in &r.repairs {
        tracing::warn!("replica {}: {repair}", cfg.node);
        *counts.entry("log_repairs".into()).or_default() += 1;
    }
    let mut by_partition: BTreeMap<u32, Vec<Persist>> = BTreeMap::new();
    for (p, x) in r.records.into_iter().flat_map(|s| s.0) {
        by_partition.entry(p).or_default().push(x);
    }
    let replicas = (0..cfg.partitions)
        .map(|p| {
            let records = by_partition.remove(&p).unwrap_or_default();
            (p, Replica::recover(cfg.replica_config(), &records, now))
        })
        .collect();
    Ok((replicas, r.next_seq))
}

/// Takes what a recovery rebuilt into `rep` (reported to the log's
/// observer), returning the next record's `seq`; on damage, leaves `rep`
/// without replicas and its refusal set (nothing reported as kept or lost).
fn rebuild(
    cfg: &ReplicaServerConfig,
    clock: &dyn Clock,
    logs: &Copies,
    rep: &mut ReplicaReport,
) -> u64 {
    match recover(cfg, logs, clock.now_ms(), &mut rep.counts) {
        Ok((replicas, next_seq)) => {
            rep.replicas = replicas;
            report_recovered(cfg, clock, &rep.replicas);
            next_seq
        }
        Err(reason) => {
            tracing::error!("replica {}: refuses, {reason}", cfg.node);
            rep.replicas.clear();
            rep.refused = Some(Refusal {
                node: cfg.node.clone(),
                at_ns: crate::core::env::sim_now_ns(),
                local_ms: clock.now_ms(),
                reason,
            });
            1
        }
    }
}

/// Syncs every copy of the log; a failure on any copy is the sync's failure
/// (each copy is synced all the same).
fn sync_all(logs: &Copies) -> Result<(), crate::core::env::SyncError> {
    let mut result = Ok(());
    for log in logs {
        if let Err(e) = log.sync() {
            result = Err(e);
        }
    }
    result
}

/// A write waiting for its commit.
struct PendingWrite {
    to: SocketAddr,
    req_id: u64,
    session: u64,
    partition: u32,
    response: Response,
    wait_lsn: u64,
    term: u64,
    /// The write appended an entry (its effect's, at `wait_lsn`): its
    /// answer acknowledges that effect.
    appended: bool,
}

/// The log of partition `p` on this replica.
fn log_id(cfg: &ReplicaServerConfig, partition: u32) -> LogId {
    LogId::Replica {
        partition,
        replica: cfg.me,
    }
}

/// Reports each partition's log as the node just read it back from its disk.
fn report_recovered(
    cfg: &ReplicaServerConfig,
    clock: &dyn Clock,
    replicas: &BTreeMap<u32, Replica>,
) {
    for (p, r) in replicas {
        cfg.log.report(clock, || LogEvent::Recovered {
            log: log_id(cfg, *p),
            durable: runs_of(r.log().iter().map(|e| e.term)),
        });
    }
}

/// A message of partition `p`'s replica `r` on its way to replica `to`:
/// reported if it acknowledges an append (D1), then addressed and encoded;
/// `None` for a replica with no address.
fn peer_send(
    cfg: &ReplicaServerConfig,
    clock: &dyn Clock,
    p: u32,
    r: &Replica,
    to: ReplicaId,
    msg: Message,
) -> Option<(SocketAddr, Vec<u8>)> {
    report_append_ack(cfg, clock, p, r, to, &msg);
    let addr = cfg.addrs.get(&to)?;
    let d = Datagram::Peer {
        partition: p,
        from: cfg.me,
        msg,
    };
    Some((*addr, wire::to_bytes(&d)))
}

/// Reports that `msg`, about to leave for replica `to`, acknowledges entries
/// of partition `p` (when it is a successful append acknowledgement that
/// claims any).
fn report_append_ack(
    cfg: &ReplicaServerConfig,
    clock: &dyn Clock,
    p: u32,
    r: &Replica,
    to: ReplicaId,
    msg: &Message,
) {
    if let Message::AppendAck {
        ok: true,
        durable,
        seq,
        ..
    } = msg
    {
        let Some(entry) = durable.checked_sub(1).and_then(|i| r.log().get(i as usize)) else {
            return;
        };
        cfg.log.report(clock, || LogEvent::Acked {
            log: log_id(cfg, p),
            reply: Reply::Append { to, seq: *seq },
            needs: LogPos {
                lsn: *durable,
                term: entry.term,
            },
            quorum: None,
        });
    }
}

/// Write requests executed recently, by `(session, req_id)`.
const DEDUP_KEPT: usize = 4096;

type Receiving =
    Pin<Box<dyn Future<Output = (Vec<u8>, std::io::Result<(usize, SocketAddr)>)> + Send>>;

fn receive(ep: Arc<Endpoint>, mut buf: Vec<u8>) -> Receiving {
    Box::pin(async move {
        let received = ep.recv_from(REPLICA_TAG, &mut buf).await;
        (buf, received)
    })
}

enum Event {
    Tick,
    Received(Vec<u8>, std::io::Result<(usize, SocketAddr)>),
}

/// Runs one replica node until it is killed, its log on `logs` (at least
/// one copy). `rng` draws the sync latency.
pub async fn serve_replica(
    cfg: ReplicaServerConfig,
    clock: Arc<dyn Clock>,
    logs: Vec<Arc<dyn LogDevice>>,
    mut rng: Box<dyn RngCore + Send>,
    report: SharedReport,
) {
    assert!(
        !logs.is_empty(),
        "a replica keeps at least one copy of its log"
    );
    if !cfg.quiet_after_restart.is_zero() {
        sleep(cfg.quiet_after_restart).await;
    }
    let mut next_seq = rebuild(&cfg, clock.as_ref(), &logs, &mut lock(&report));
    let mut frame = Vec::new();
    let Some(bind) = cfg.addrs.get(&cfg.me).copied() else {
        tracing::error!("replica {} has no address", cfg.me);
        return;
    };
    let ep = match Endpoint::bind(bind).await {
        Ok(ep) => Arc::new(ep),
        Err(e) => {
            tracing::error!("replica cannot bind {bind}: {e}");
            return;
        }
    };
    let mut receiving: Option<Receiving> = None;
    let mut spare = Some(vec![0u8; MAX_REPLICA_DATAGRAM]);
    let tick = Duration::from_millis(cfg.tick_ms.max(1));
    let mut ticker: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(sleep(tick));
    let mut pending: Vec<PendingWrite> = Vec::new();
    let mut seen: BTreeSet<(u64, u64)> = BTreeSet::new();
    let mut seen_order: VecDeque<(u64, u64)> = VecDeque::new();
    loop {
        let recv = receiving.get_or_insert_with(|| {
            let buf = spare
                .take()
                .unwrap_or_else(|| vec![0u8; MAX_REPLICA_DATAGRAM]);
            receive(ep.clone(), buf)
        });
        let event = std::future::poll_fn(|cx| {
            if ticker.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Event::Tick);
            }
            recv.as_mut()
                .poll(cx)
                .map(|(buf, r)| Event::Received(buf, r))
        })
        .await;
        let now = clock.now_ms();
        let mut replies: Vec<(SocketAddr, RegionResponse)> = Vec::new();
        {
            let mut rep = lock(&report);
            rep.last_local_ms = now;
            match event {
                Event::Tick => {
                    ticker = Box::pin(sleep(tick));
                    for r in rep.replicas.values_mut() {
                        r.tick(now);
                    }
                }
                Event::Received(buf, received) => {
                    receiving = None;
                    if let Ok((len, from)) = received {
                        match wire::from_bytes::<Datagram>(&buf[..len.min(buf.len())]) {
                            Some(Datagram::Peer {
                                partition,
                                from: sender,
                                msg,
                            }) => {
                                if let Some(r) = rep.replicas.get_mut(&partition) {
                                    r.on_message(sender, msg, now);
                                }
                            }
                            Some(Datagram::Client(req)) => {
                                let key = (req.session, req.req_id);
                                let duplicate = req.op.is_write() && seen.contains(&key);
                                if rep.refused.is_some() {
                                    // Its log lost: no answer but "unavailable".
                                    replies.push((
                                        from,
                                        RegionResponse {
                                            req_id: req.req_id,
                                            session: req.session,
                                            reply: RegionReply::Refused {
                                                status: 503,
                                                sub_status: 0,
                                                primary_hint: None,
                                            },
                                            node: cfg.node.clone(),
                                            region: cfg.region.clone(),
                                        },
                                    ));
                                } else if duplicate {
                                    *rep.counts.entry("duplicate_writes".into()).or_default() += 1;
                                } else if let Some(r) = rep.replicas.get_mut(&req.partition) {
                                    if req.op.is_write() {
                                        // Refused or taken, a later copy of it is never run: the
                                        // client may have been told "not executed".
                                        seen.insert(key);
                                        seen_order.push_back(key);
                                        if seen_order.len() > DEDUP_KEPT {
                                            if let Some(old) = seen_order.pop_front() {
                                                seen.remove(&old);
                                            }
                                        }
                                    }
                                    let removed = !cfg.removed_ns.is_empty() && {
                                        let now_ns = crate::core::env::sim_now_ns();
                                        cfg.removed_ns
                                            .iter()
                                            .any(|(from, until)| (*from..*until).contains(&now_ns))
                                    };
                                    let before = r.last_lsn();
                                    let reply = if removed {
                                        refused(403, 1008, None)
                                    } else {
                                        handle_client(r, &req, now)
                                    };
                                    let appended = r.last_lsn() > before;
                                    match reply {
                                        Handled::Reply(reply) => replies.push((
                                            from,
                                            RegionResponse {
                                                req_id: req.req_id,
                                                session: req.session,
                                                reply,
                                                node: cfg.node.clone(),
                                                region: cfg.region.clone(),
                                            },
                                        )),
                                        Handled::Pending {
                                            response,
                                            wait_lsn,
                                            term,
                                        } => {
                                            pending.push(PendingWrite {
                                                to: from,
                                                req_id: req.req_id,
                                                session: req.session,
                                                partition: req.partition,
                                                response,
                                                wait_lsn,
                                                term,
                                                appended,
                                            });
                                        }
                                    }
                                }
                            }
                            None => {}
                        }
                    }
                    spare = Some(buf);
                }
            }
        }
        // Persist this event's records, then let its messages and replies go.
        let records: Vec<(u32, Persist)> = {
            let mut rep = lock(&report);
            rep.replicas
                .iter_mut()
                .flat_map(|(p, r)| r.take_persist().into_iter().map(move |x| (*p, x)))
                .collect()
        };
        // The peer messages the seeded bug sends before the sync, by partition.
        let mut held_out: Vec<(u32, ReplicaId, Message)> = Vec::new();
        if !records.is_empty() {
            let touched: BTreeSet<u32> = records.iter().map(|(p, _)| *p).collect();
            crate::wal::encode_into(&mut frame, next_seq, &Step(records));
            for log in &logs {
                log.append(&frame);
            }
            next_seq += 1;
            if cfg.bugs.replica_ack_before_sync {
                // The seeded bug: the append acknowledgements go now; the
                // other messages wait for the sync as they should.
                let mut early = Vec::new();
                {
                    let mut rep = lock(&report);
                    for (p, r) in rep.replicas.iter_mut() {
                        for (to, msg) in r.take_out() {
                            if matches!(msg, Message::AppendAck { .. }) {
                                early.extend(peer_send(&cfg, clock.as_ref(), *p, r, to, msg));
                            } else {
                                held_out.push((*p, to, msg));
                            }
                        }
                    }
                }
                for (to, bytes) in early {
                    let _ = wire::send_datagram(&ep, to, REPLICA_TAG, &bytes, &cfg.send).await;
                }
            }
            let (lo, hi) = cfg.fsync_ms;
            let fsync = Duration::from_micros(rng.gen_range(lo * 1000..=hi.max(lo) * 1000));
            sleep(fsync).await;
            if sync_all(&logs).is_err() {
                // Nothing of this event left the node: rebuild from the disk.
                for p in &touched {
                    cfg.log.report(clock.as_ref(), || LogEvent::SyncFailed {
                        log: log_id(&cfg, *p),
                    });
                }
                let mut rep = lock(&report);
                *rep.counts.entry("fsync_errors".into()).or_default() += 1;
                next_seq = rebuild(&cfg, clock.as_ref(), &logs, &mut rep);
                pending.clear();
                continue;
            }
            if cfg.log.observed() {
                let rep = lock(&report);
                for p in &touched {
                    if let Some(r) = rep.replicas.get(p) {
                        cfg.log.report(clock.as_ref(), || LogEvent::Synced {
                            log: log_id(&cfg, *p),
                            durable: runs_of(r.log().iter().map(|e| e.term)),
                        });
                    }
                }
            }
        }
        let now = clock.now_ms();
        let mut outgoing: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
        {
            let mut rep = lock(&report);
            let mut changes = Vec::new();
            let mut applied = Vec::new();
            for (p, r) in rep.replicas.iter_mut() {
                let entries = r.take_applied();
                if !entries.is_empty() {
                    applied.push(AppliedChange {
                        node: cfg.node.clone(),
                        at_ns: crate::core::env::sim_now_ns(),
                        local_ms: now,
                        partition: *p,
                        entries,
                    });
                }
                if let Some(term) = r.take_became_primary() {
                    changes.push(PrimaryChange {
                        node: cfg.node.clone(),
                        at_ns: crate::core::env::sim_now_ns(),
                        local_ms: now,
                        partition: *p,
                        term,
                    });
                }
                let held = held_out.iter().filter(|(hp, _, _)| hp == p);
                let taken: Vec<(ReplicaId, Message)> = held
                    .map(|(_, to, msg)| (*to, msg.clone()))
                    .chain(r.take_out())
                    .collect();
                for (to, msg) in taken {
                    outgoing.extend(peer_send(&cfg, clock.as_ref(), *p, r, to, msg));
                }
            }
            rep.primaries.extend(changes);
            rep.applied.extend(applied);
            pending.retain(|w| {
                let Some(r) = rep.replicas.get(&w.partition) else {
                    return false;
                };
                if r.write_settled(w.wait_lsn, w.term) {
                    if w.appended {
                        cfg.log.report(clock.as_ref(), || LogEvent::Acked {
                            log: log_id(&cfg, w.partition),
                            reply: Reply::Write {
                                session: w.session,
                                req_id: w.req_id,
                            },
                            needs: LogPos {
                                lsn: w.wait_lsn,
                                term: w.term,
                            },
                            quorum: Some(Quorum {
                                voters: cfg.voters.clone(),
                                needed: (cfg.voters.len() / 2 + 1) as u32,
                            }),
                        });
                    }
                    replies.push((
                        w.to,
                        RegionResponse {
                            req_id: w.req_id,
                            session: w.session,
                            reply: RegionReply::Ok {
                                response: w.response.clone(),
                                lsn: w.wait_lsn,
                            },
                            node: cfg.node.clone(),
                            region: cfg.region.clone(),
                        },
                    ));
                    return false;
                }
                // Stepped down: the write's fate is decided elsewhere; the client times out.
                r.role() == crate::node::replica::Role::Primary && r.term() == w.term
            });
            for (_, reply) in &replies {
                let status = match &reply.reply {
                    RegionReply::Ok { response, .. } => response.status(),
                    RegionReply::Refused { status, .. } => *status,
                };
                *rep.counts.entry(format!("answered_{status}")).or_default() += 1;
            }
        }
        for (to, bytes) in outgoing {
            let _ = wire::send_datagram(&ep, to, REPLICA_TAG, &bytes, &cfg.send).await;
        }
        for (to, reply) in replies {
            let _ =
                wire::send_datagram(&ep, to, REPLY_TAG, &wire::to_bytes(&reply), &cfg.send).await;
        }
    }
}

/// What a client request got.
/// Whether the datagram `bytes` is a client's request, and if so its kind as
/// the SDK classes it for its retries (a write, or a read); `None` for a
/// peer's message or bytes that are no datagram. For a relay between the
/// multi-region SDK and a replica (the conformance scripts' injections).
pub fn client_request_kind(bytes: &[u8]) -> Option<crate::partition::OpKind> {
    match wire::from_bytes::<Datagram>(bytes)? {
        Datagram::Client(req) if req.op.is_write() => Some(crate::partition::OpKind::Write),
        Datagram::Client(_) => Some(crate::partition::OpKind::Read),
        Datagram::Peer { .. } => None,
    }
}

/// The answer datagram that refuses the client request datagram `request`
/// with `status` and `sub_status`, as the replica `node` of `region` would
/// (not executed); `None` for bytes that are not a client's request.
pub fn refusal_of(
    request: &[u8],
    status: u16,
    sub_status: u32,
    node: &str,
    region: &str,
) -> Option<Vec<u8>> {
    let Datagram::Client(req) = wire::from_bytes::<Datagram>(request)? else {
        return None;
    };
    Some(wire::to_bytes(&RegionResponse {
        req_id: req.req_id,
        session: req.session,
        reply: RegionReply::Refused {
            status,
            sub_status,
            primary_hint: None,
        },
        node: node.to_string(),
        region: region.to_string(),
    }))
}

enum Handled {
    Reply(RegionReply),
    Pending {
        response: Response,
        wait_lsn: u64,
        term: u64,
    },
}

fn refused(status: u16, sub_status: u32, primary_hint: Option<ReplicaId>) -> Handled {
    Handled::Reply(RegionReply::Refused {
        status,
        sub_status,
        primary_hint,
    })
}

fn handle_client(r: &mut Replica, req: &RegionRequest, now: Millis) -> Handled {
    if req.op.is_write() {
        return match r.write(&req.op, now) {
            WriteOutcome::Pending {
                response,
                wait_lsn,
                term,
            } => Handled::Pending {
                response,
                wait_lsn,
                term,
            },
            WriteOutcome::NotPrimary { hint } => refused(410, 0, Some(hint)),
            WriteOutcome::NoPrimary => refused(503, 0, None),
            WriteOutcome::Forbidden => refused(403, 3, None),
        };
    }
    match r.read(&req.op, req.consistency, req.session_lsn, now) {
        ReadOutcome::Served { response, lsn } => Handled::Reply(RegionReply::Ok { response, lsn }),
        ReadOutcome::NotPrimary { hint } => refused(410, 0, hint),
        ReadOutcome::NoPrimary => refused(503, 0, None),
        ReadOutcome::SessionNotAvailable => refused(404, 1002, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::replica::Entry;

    #[test]
    fn steps_round_trip_and_a_torn_last_step_is_cut() {
        let a = Step(vec![(
            0,
            Persist::Term {
                term: 2,
                voted_for: Some(1),
            },
        )]);
        let b = Step(vec![
            (
                1,
                Persist::Entry(Entry {
                    term: 2,
                    lsn: 1,
                    effect: crate::partition::Effect::Cosmos(
                        crate::services::cosmos::CosmosEffect::Batch(vec![]),
                    ),
                }),
            ),
            (1, Persist::Commit(1)),
        ]);
        let (mut bytes, mut frame) = (Vec::new(), Vec::new());
        crate::wal::encode_into(&mut frame, 1, &a);
        bytes.extend_from_slice(&frame);
        let first = bytes.len();
        crate::wal::encode_into(&mut frame, 2, &b);
        bytes.extend_from_slice(&frame);
        let s = crate::wal::scan_as::<Step>(&bytes, true);
        assert_eq!((s.valid, s.end), (bytes.len(), crate::wal::LogEnd::Clean));
        assert_eq!(s.records, [a.clone(), b]);
        let torn = crate::wal::scan_as::<Step>(&bytes[..bytes.len() - 3], true);
        assert_eq!(
            (torn.records, torn.valid, torn.end),
            (vec![a], first, crate::wal::LogEnd::Torn)
        );
    }
}
