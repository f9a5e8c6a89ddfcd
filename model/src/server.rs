//! The server node: serves its partitions over madsim's network (each request
//! is dispatched by kind through [`Partition::apply`], so the loop is the same
//! for every service), logs every effect to the write-ahead log and
//! acknowledges it only once synced, recovers by replaying the log after a
//! crash, and has fault points that answer with the transient errors of SPEC §4.
//!
//! [`Partition::apply`]: crate::partition::Partition::apply

use crate::bugs::ModelBugs;
use crate::env::{Clock, LogDevice};
use crate::partition::Partitions;
use crate::retry::sub_status;
use crate::wal::{self, LogRecord};
use crate::wire::{
    self, WireReply, WireRequest, WireResponse, MAX_DATAGRAM, REQUEST_TAG, RESPONSE_TAG,
};
use madsim::net::Endpoint;
use madsim::time::sleep;
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// How often each fault point fires, per request (0 = never).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRates {
    /// 429 Too Many Requests, with `x-ms-retry-after-ms` (not executed).
    #[serde(default)]
    pub throttle: f64,
    /// The retry-after range of a 429, ms.
    #[serde(default = "default_retry_after")]
    pub retry_after_ms: (u64, u64),
    /// 449 RetryWith, on writes only (not executed).
    #[serde(default)]
    pub retry_with: f64,
    /// 503 Service Unavailable (not executed).
    #[serde(default)]
    pub unavailable: f64,
    /// 410 Gone (not executed).
    #[serde(default)]
    pub gone: f64,
    /// 408 Request Timeout: half the time after executing, half before.
    #[serde(default)]
    pub timeout: f64,
    /// Share of the 410s that carry sub-status 1000 `NameCacheIsStale` (SPEC §4.1 row 410).
    #[serde(default)]
    pub gone_name_cache_stale: f64,
    /// Share of the 410s that carry sub-status 1002 `PartitionKeyRangeGone`.
    #[serde(default)]
    pub gone_range_gone: f64,
    /// Share of the 410s that carry sub-status 1022 `LeaseNotFound`.
    #[serde(default)]
    pub gone_lease_not_found: f64,
    /// Share of the 429s sent without `x-ms-retry-after-ms` (the SDK then waits 5 s, §4.2).
    #[serde(default)]
    pub throttle_without_retry_after: f64,
    /// Share of the 429s sent with `x-ms-retry-after-ms: 0` (the SDK then waits 5 s, §4.2).
    #[serde(default)]
    pub throttle_zero_retry_after: f64,
}

/// Picks one of `choices` by `rates` (shares of 1, the rest is `otherwise`), drawing from
/// `rng` only when some share is set, so that scenarios without them draw as before.
fn pick<T: Copy>(rng: &mut dyn RngCore, choices: &[(T, f64)], otherwise: T) -> T {
    if choices.iter().all(|(_, rate)| *rate <= 0.0) {
        return otherwise;
    }
    let draw: f64 = rng.gen();
    let mut acc = 0.0;
    for (choice, rate) in choices {
        acc += rate;
        if draw < acc {
            return *choice;
        }
    }
    otherwise
}

fn default_retry_after() -> (u64, u64) {
    (1, 200)
}

/// A server's settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Where to listen.
    pub bind: SocketAddr,
    /// Containers every partition has from the start (provisioned, not logged).
    pub containers: Vec<String>,
    /// Fault point rates.
    pub faults: FaultRates,
    /// How long a log sync takes, ms range.
    pub fsync_ms: (u64, u64),
    /// The seeded bugs: the server reads `ack_before_sync` and
    /// `restart_drops_partition` and hands the set to its partitions.
    pub bugs: ModelBugs,
    /// 0 on the node's first start, +1 on each restart.
    pub incarnation: u32,
}

/// What the server counts, for the run summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStats {
    /// Requests answered by a fault point, by status.
    pub transient: BTreeMap<u16, u64>,
    /// Records replayed at start-ups.
    pub replayed: u64,
}

/// The partitions, rebuilt from the log, and the number of records replayed.
fn recover(cfg: &ServerConfig, log: &dyn LogDevice) -> (Partitions, u64) {
    let mut partitions = Partitions::new(cfg.bugs, cfg.containers.clone());
    let records = wal::recover(log);
    partitions.redo_all(&records);
    (partitions, records.len() as u64)
}

/// Runs a server until the node is killed. `rng` drives the fault points and
/// the sync latency; `stats` is shared with whoever wants the counts.
pub async fn serve(
    cfg: ServerConfig,
    clock: Arc<dyn Clock>,
    log: Arc<dyn LogDevice>,
    mut rng: Box<dyn RngCore + Send>,
    stats: Arc<std::sync::Mutex<ServerStats>>,
) {
    let (mut partitions, replayed) = recover(&cfg, log.as_ref());
    tracing::info!("server {} up: replayed {replayed} log records", cfg.bind);
    stats.lock().unwrap_or_else(|e| e.into_inner()).replayed += replayed;
    let ep = match Endpoint::bind(cfg.bind).await {
        Ok(ep) => ep,
        Err(e) => {
            tracing::error!("server cannot bind {}: {e}", cfg.bind);
            return;
        }
    };
    let mut buf = vec![0u8; MAX_DATAGRAM];
    // Reused for every answer and log record.
    let mut out = Vec::new();
    let mut record = Vec::new();
    let mut dropped: Option<u32> = None;
    loop {
        let Ok((len, from)) = ep.recv_from(REQUEST_TAG, &mut buf).await else {
            continue;
        };
        let Some(req) = wire::from_bytes::<WireRequest>(&buf[..len]) else {
            continue;
        };
        if cfg.bugs.restart_drops_partition && cfg.incarnation > 0 {
            // The seeded bug: the first partition asked for after a restart is never served.
            if *dropped.get_or_insert(req.partition) == req.partition {
                let reply = WireReply::Transient {
                    status: 503,
                    sub_status: sub_status::NONE,
                    retry_after_ms: None,
                };
                send(&ep, from, req.req_id, reply, &mut out).await;
                continue;
            }
        }
        let f = &cfg.faults;
        let draw: f64 = rng.gen();
        let is_write = req.op.is_write();
        let mut transient = None;
        let mut acc = 0.0;
        for (status, rate) in [
            (429u16, f.throttle),
            (449, if is_write { f.retry_with } else { 0.0 }),
            (503, f.unavailable),
            (410, f.gone),
            (408, f.timeout),
        ] {
            acc += rate;
            if transient.is_none() && draw < acc {
                transient = Some(status);
            }
        }
        let reply_transient = |status: u16, rng: &mut Box<dyn RngCore + Send>| {
            let sub_status = match status {
                410 => pick(
                    rng.as_mut(),
                    &[
                        (sub_status::NAME_CACHE_IS_STALE, f.gone_name_cache_stale),
                        (sub_status::PARTITION_KEY_RANGE_GONE, f.gone_range_gone),
                        (sub_status::LEASE_NOT_FOUND, f.gone_lease_not_found),
                    ],
                    sub_status::NONE,
                ),
                _ => sub_status::NONE,
            };
            let retry_after_ms = match status {
                429 => match pick(
                    rng.as_mut(),
                    &[
                        (Some(None), f.throttle_without_retry_after),
                        (Some(Some(0)), f.throttle_zero_retry_after),
                    ],
                    None,
                ) {
                    Some(header) => header,
                    None => {
                        let (lo, hi) = f.retry_after_ms;
                        Some(rng.gen_range(lo..=hi.max(lo)))
                    }
                },
                _ => None,
            };
            WireReply::Transient {
                status,
                sub_status,
                retry_after_ms,
            }
        };
        if let Some(status) = transient {
            stats
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .transient
                .entry(status)
                .and_modify(|n| *n += 1)
                .or_insert(1);
            // A 408 may come after the request ran: its outcome is unknown to the client.
            let execute = status == 408 && rng.gen_bool(0.5);
            if !execute {
                let reply = reply_transient(status, &mut rng);
                send(&ep, from, req.req_id, reply, &mut out).await;
                continue;
            }
        }
        let partition = partitions.get_mut(req.partition);
        let (response, effect) = partition.apply(&req.op, clock.now_ms());
        let lsn = partition.lsn();
        let reply = match transient {
            Some(status) => reply_transient(status, &mut rng),
            None => WireReply::Ok(response),
        };
        let Some(effect) = effect else {
            send(&ep, from, req.req_id, reply, &mut out).await;
            continue;
        };
        wal::encode_into(
            &mut record,
            &LogRecord {
                partition: req.partition,
                lsn,
                effect,
            },
        );
        log.append(&record);
        let (lo, hi) = cfg.fsync_ms;
        let fsync = Duration::from_micros(rng.gen_range(lo * 1000..=hi.max(lo) * 1000));
        if cfg.bugs.ack_before_sync {
            send(&ep, from, req.req_id, reply, &mut out).await;
            sleep(fsync).await;
            log.sync();
        } else {
            sleep(fsync).await;
            log.sync();
            send(&ep, from, req.req_id, reply, &mut out).await;
        }
    }
}

async fn send(ep: &Endpoint, to: SocketAddr, req_id: u64, reply: WireReply, out: &mut Vec<u8>) {
    wire::to_bytes_into(out, &WireResponse { req_id, reply });
    // A send to an unreachable peer is dropped by the network; nothing to do.
    let _ = ep.send_to(to, RESPONSE_TAG, out).await;
}
