//! The server's fault points: the rates of transient answers (429, 449, 410,
//! 408, 503) a request may get instead of being served, and the per-partition
//! storms of 429s and 410s, drawn from the request's own random stream.

use super::ServerStats;
use crate::core::sub_status;
use crate::wire::WireReply;
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    /// Storms (the throttling variant): per partition, a stretch of time in
    /// which every request is answered 429, or 410; `None`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storms: Option<Storms>,
}

/// 429 storms and 410 streaks per partition: long enough that an operation
/// meets its 429 budget (9 retries, 30 s of waits, SPEC §4.2) or its 410
/// window (30 s, SPEC §4.1 row 410). The 429s carry a retry-after (or none,
/// or 0) as the other fault rates say; the 410s their sub-statuses.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Storms {
    /// Chance, per request to a partition not in a storm, that a 429 storm starts.
    pub throttle: f64,
    /// Chance, per such request, that a 410 streak starts.
    pub gone: f64,
    /// How long a storm or streak lasts, ms range.
    pub duration_ms: (u64, u64),
    /// True time (ms since the start of the run) after which no storm
    /// starts or lasts: the scenario's workload is over by then, so that
    /// whatever runs after the heal meets none.
    pub until_ms: u64,
}

/// The storms under way, per partition of one server incarnation.
#[derive(Default)]
pub(super) struct StormState {
    /// Partition → (status answered, until true ns).
    by_partition: BTreeMap<u32, (u16, u64)>,
}

impl StormState {
    /// The status a storm answers a request to `partition` with at `now_ns`,
    /// starting one by `storms`' chances (drawing from `rng`) if none is under way.
    pub(super) fn status(
        &mut self,
        storms: &Storms,
        partition: u32,
        now_ns: u64,
        rng: &mut dyn RngCore,
    ) -> Option<u16> {
        const MS: u64 = 1_000_000;
        let end_ns = storms.until_ms.saturating_mul(MS);
        if now_ns >= end_ns {
            return None;
        }
        if let Some((status, until)) = self.by_partition.get(&partition) {
            if now_ns < *until {
                return Some(*status);
            }
        }
        let draw: f64 = rng.gen();
        let status = if draw < storms.throttle {
            429
        } else if draw < storms.throttle + storms.gone {
            410
        } else {
            return None;
        };
        let (lo, hi) = storms.duration_ms;
        let until = now_ns
            .saturating_add(rng.gen_range(lo..=hi.max(lo)).saturating_mul(MS))
            .min(end_ns);
        self.by_partition.insert(partition, (status, until));
        Some(status)
    }
}

/// Picks one of `choices` by `rates` (shares of 1, the rest is `otherwise`), drawing from
/// `rng` only when some share is set, so that scenarios without them draw as before.
pub(super) fn pick<T: Copy>(rng: &mut dyn RngCore, choices: &[(T, f64)], otherwise: T) -> T {
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

impl FaultRates {
    /// Whether any fault point can fire: without one, a request draws nothing.
    pub(super) fn any(&self) -> bool {
        self.storms.is_some()
            || [
                self.throttle,
                self.retry_with,
                self.unavailable,
                self.gone,
                self.timeout,
            ]
            .iter()
            .any(|rate| *rate > 0.0)
    }
}

/// What a request's fault point decided: the status and transient reply it
/// answers with, and whether the request runs anyway (a 408 may come after
/// the request ran: its outcome is unknown to the client).
pub(super) struct Fault {
    pub(super) status: u16,
    pub(super) reply: WireReply,
    pub(super) execute: bool,
}

/// What a stream of [`ServerDraws::stream`] is for: a request's fault point
/// or a sync's latency.
pub(super) const FAULT_POINT: u64 = 1;
pub(super) const SYNC_LATENCY: u64 = 2;

/// The fault point of one request to `partition`: a storm answers first
/// (drawn only when the scenario has storms), then one draw across the
/// statuses' rates; every draw from the request's own stream `rng`.
pub(super) fn fault_point(
    f: &FaultRates,
    storms: &mut StormState,
    partition: u32,
    is_write: bool,
    rng: &mut dyn RngCore,
    stats: &std::sync::Mutex<ServerStats>,
) -> Option<Fault> {
    let stormed = match &f.storms {
        Some(s) => {
            let before = storms.by_partition.get(&partition).copied();
            let status = storms.status(s, partition, crate::core::env::sim_now_ns(), rng);
            let after = storms.by_partition.get(&partition).copied();
            if let (Some(status), true) = (status, before != after) {
                *stats
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .storms
                    .entry(status)
                    .or_default() += 1;
            }
            status
        }
        None => None,
    };
    let draw: f64 = rng.gen();
    let mut transient = stormed;
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
    let status = transient?;
    let execute = status == 408 && rng.gen_bool(0.5);
    let sub_status = match status {
        410 => pick(
            rng,
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
            rng,
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
    Some(Fault {
        status,
        reply: WireReply::Transient {
            status,
            sub_status,
            retry_after_ms,
        },
        execute,
    })
}

pub(super) fn default_retry_after() -> (u64, u64) {
    (1, 200)
}
