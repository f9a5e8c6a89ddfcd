//! Blob and container leases (SPEC §2): the pure lease state machine.
//!
//! A lease record per resource ([`LeaseTarget`]: a blob or a container) holds the
//! lease id, the duration and a [`Phase`]; the five states of §2.1 are judged
//! lazily from it at the server time handed to each call ([`Lease::state_at`]):
//! a fixed lease is `leased` while `now < expire` and `expired` after, a break is
//! `breaking` while `now < break` and `broken` after. No timer runs.
//!
//! - [`validate`]: the parameter rules of §2.2 (400s), before any state is read;
//! - [`Leases::act`]: every cell of the §2.3 action table and the §2.4 break timing;
//! - [`check_use`]: reads, writes and deletes against the lease state (§2.5, §2.7: 412s);
//! - [`Leases::after_blob_write`]: a write clears an expired or broken blob lease (§2.6).
//!
//! Server-generated lease ids are GUIDs drawn from a counter the machine keeps
//! (and logs, so that a recovered server never repeats one): deterministic, and
//! never repeated by one store (L7). Ids compare
//! case-insensitively: every id is normalised to the lower-case hyphenated form.
//! None of the Azurite divergences of §2.8 is copied.

use crate::core::bugs::ModelBugs;
use crate::core::conditions::{Conditions, Millis};
use crate::core::keys::{splitmix, ItemKey};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Shortest fixed lease, seconds (§2.2).
pub(crate) const MIN_DURATION_S: i64 = 15;
/// Longest fixed lease, seconds (§2.2).
pub(crate) const MAX_DURATION_S: i64 = 60;
/// The `x-ms-lease-duration` value of an infinite lease.
pub(crate) const INFINITE: i64 = -1;
/// Longest break period, seconds (§2.2).
pub(crate) const MAX_BREAK_PERIOD_S: i64 = 60;

/// The resource a lease is on.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum LeaseTarget {
    /// A blob.
    Blob(ItemKey),
    /// A container.
    Container(String),
}

impl LeaseTarget {
    /// The container the resource is in (or is).
    pub fn container(&self) -> &str {
        match self {
            LeaseTarget::Blob(k) => &k.container,
            LeaseTarget::Container(c) => c,
        }
    }

    /// A short name for logs and messages: `container/blob` or `container`.
    pub fn name(&self) -> String {
        match self {
            LeaseTarget::Blob(k) => format!("{}/{}", k.container, k.id),
            LeaseTarget::Container(c) => c.clone(),
        }
    }
}

/// How long a lease lasts once acquired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LeaseDuration {
    /// A fixed lease of this many seconds (15–60).
    Fixed(u32),
    /// An infinite lease: it never expires, only a break or release ends it.
    Infinite,
}

impl LeaseDuration {
    /// The duration in ms (`None` for infinite).
    pub fn ms(self) -> Option<Millis> {
        match self {
            LeaseDuration::Fixed(s) => Some(u64::from(s) * 1000),
            LeaseDuration::Infinite => None,
        }
    }
}

/// Where a lease record stands; the state at a time follows from it ([`Lease::state_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Acquired (or renewed): leased until `expire_ms` (`None`: infinite), expired after.
    Leased {
        /// Server time the lease expires at.
        expire_ms: Option<Millis>,
    },
    /// Broken with a period: breaking until `break_ms`, broken after.
    Breaking {
        /// Server time the break takes effect.
        break_ms: Millis,
    },
    /// Broken.
    Broken,
}

/// The five lease states of §2.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LeaseState {
    /// No lease.
    Available,
    /// Held (locked).
    Leased,
    /// A fixed lease ran out; the id is kept until the resource is written or leased.
    Expired,
    /// A break is pending (still locked).
    Breaking,
    /// Broken (unlocked; the id is kept).
    Broken,
}

impl LeaseState {
    /// `x-ms-lease-status: locked`: leased or breaking.
    pub fn is_locked(self) -> bool {
        matches!(self, LeaseState::Leased | LeaseState::Breaking)
    }
}

/// One resource's lease record (absent = available).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The lease id, a lower-case hyphenated GUID.
    pub id: String,
    /// The duration it was acquired with (kept through expiry, for a renew).
    pub duration: LeaseDuration,
    /// Leased, breaking or broken.
    pub phase: Phase,
}

impl Lease {
    /// The state at server time `now` (the lazy timed transitions of §2.1).
    pub fn state_at(&self, now: Millis) -> LeaseState {
        match self.phase {
            Phase::Leased { expire_ms: None } => LeaseState::Leased,
            Phase::Leased { expire_ms: Some(e) } if now < e => LeaseState::Leased,
            Phase::Leased { .. } => LeaseState::Expired,
            Phase::Breaking { break_ms } if now < break_ms => LeaseState::Breaking,
            Phase::Breaking { .. } | Phase::Broken => LeaseState::Broken,
        }
    }
}

/// The state of an optional record at `now` (no record: available).
pub(crate) fn state_of(lease: Option<&Lease>, now: Millis) -> LeaseState {
    lease.map_or(LeaseState::Available, |l| l.state_at(now))
}

/// The `x-ms-lease-duration` of an optional record at `now`: its duration
/// while it is leased, `None` in every other state (§2.1).
pub(crate) fn duration_of(lease: Option<&Lease>, now: Millis) -> Option<LeaseDuration> {
    lease
        .filter(|l| l.state_at(now) == LeaseState::Leased)
        .map(|l| l.duration)
}

/// One lease action (`x-ms-lease-action` with its headers), ids as sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LeaseAction {
    /// Acquire (201): `duration` is `x-ms-lease-duration` in seconds (−1 infinite;
    /// `None`: the header is missing), `proposed_id` is `x-ms-proposed-lease-id`.
    Acquire {
        /// Seconds, 15–60 or −1.
        duration: Option<i64>,
        /// A proposed id (makes the acquire idempotent).
        proposed_id: Option<String>,
    },
    /// Renew (200) with `x-ms-lease-id`.
    Renew {
        /// The lease id.
        lease_id: String,
    },
    /// Change (200) from `x-ms-lease-id` to `x-ms-proposed-lease-id` (required).
    Change {
        /// The current id.
        lease_id: String,
        /// The new id (`None`: the header is missing).
        proposed_id: Option<String>,
    },
    /// Release (200) with `x-ms-lease-id`.
    Release {
        /// The lease id.
        lease_id: String,
    },
    /// Break (202), with an optional `x-ms-lease-break-period` in seconds.
    Break {
        /// Seconds, 0–60.
        break_period: Option<i64>,
    },
}

impl LeaseAction {
    /// The action's name: `acquire`, `renew`, `change`, `release`, `break`.
    pub fn name(&self) -> &'static str {
        match self {
            LeaseAction::Acquire { .. } => "acquire",
            LeaseAction::Renew { .. } => "renew",
            LeaseAction::Change { .. } => "change",
            LeaseAction::Release { .. } => "release",
            LeaseAction::Break { .. } => "break",
        }
    }

    /// Safe to send again after a timeout (SPEC §4.3, L5): an acquire with a
    /// proposed id (a repeat re-acquires the same id), a renew and a change
    /// (either-id rule). Not: an acquire without a proposed id (a repeat gets
    /// 409 `LeaseAlreadyPresent` although the first one won), a release (a
    /// repeat gets 409) and a break (a repeat may shorten the break).
    pub fn is_idempotent(&self) -> bool {
        match self {
            LeaseAction::Acquire { proposed_id, .. } => proposed_id.is_some(),
            LeaseAction::Renew { .. } | LeaseAction::Change { .. } => true,
            LeaseAction::Release { .. } | LeaseAction::Break { .. } => false,
        }
    }
}

/// A request of the lease service: lease actions on blobs and containers, and
/// the container operations only container leases gate (§2.7). Blob reads,
/// writes and deletes carry their lease id in their conditions
/// ([`Conditions::lease_id`]) and go to the store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LeaseRequest {
    /// A lease action on a blob or a container.
    Action {
        /// The resource.
        target: LeaseTarget,
        /// The action and its headers.
        action: LeaseAction,
        /// Condition headers (blob leases: write rules, 412; ignored for containers,
        /// which have no Last-Modified in the model).
        conditions: Conditions,
    },
    /// Delete Container (202): gated by the container lease; deletes its blobs and their leases.
    DeleteContainer {
        /// The container.
        container: String,
        /// `x-ms-lease-id`.
        lease_id: Option<String>,
    },
    /// Set Container Metadata (200): never blocked without an id; an id sent must be valid.
    SetContainerMetadata {
        /// The container.
        container: String,
        /// `x-ms-lease-id`.
        lease_id: Option<String>,
    },
}

impl LeaseRequest {
    /// The container addressed.
    pub fn container(&self) -> &str {
        match self {
            LeaseRequest::Action { target, .. } => target.container(),
            LeaseRequest::DeleteContainer { container, .. }
            | LeaseRequest::SetContainerMetadata { container, .. } => container,
        }
    }

    /// The partition key it routes by: a blob's, `""` for container requests.
    pub fn partition_key(&self) -> &str {
        match self {
            LeaseRequest::Action {
                target: LeaseTarget::Blob(k),
                ..
            } => &k.partition_key,
            _ => "",
        }
    }

    /// Safe to send again after a timeout ([`LeaseAction::is_idempotent`]; setting
    /// metadata is; deleting a container is not).
    pub fn is_idempotent(&self) -> bool {
        match self {
            LeaseRequest::Action { action, .. } => action.is_idempotent(),
            LeaseRequest::SetContainerMetadata { .. } => true,
            LeaseRequest::DeleteContainer { .. } => false,
        }
    }
}

/// The lease service's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseResponse {
    /// The HTTP status.
    pub status: u16,
    /// `x-ms-error-code` on failures.
    pub error_code: Option<String>,
    /// `x-ms-lease-id` on a successful acquire, renew or change.
    pub lease_id: Option<String>,
    /// `x-ms-lease-time` on a break: whole seconds until broken (0 if immediate).
    pub lease_time_s: Option<u64>,
    /// The server's clock when it judged the request.
    pub server_ms: Millis,
    /// The lease state after the request (`x-ms-lease-state`).
    pub state: LeaseState,
    /// `x-ms-lease-duration` after the request: reported only in the leased
    /// state (§2.1), so `None` in every other state.
    #[serde(default)]
    pub duration: Option<LeaseDuration>,
}

impl LeaseResponse {
    /// A refusal (`status`, `code`) judged at `now`, reporting the state and
    /// duration of the unchanged record `current`.
    pub fn error(status: u16, code: &str, now: Millis, current: Option<&Lease>) -> LeaseResponse {
        LeaseResponse {
            status,
            error_code: Some(code.to_string()),
            lease_id: None,
            lease_time_s: None,
            server_ms: now,
            state: state_of(current, now),
            duration: duration_of(current, now),
        }
    }

    /// True for 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// What a successful lease request changed, as absolute new state (redo is exact).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Effect {
    /// A lease action succeeded: the record of `target` is now `lease`.
    Set {
        /// The resource.
        target: LeaseTarget,
        /// The action (kept so that the log tells what happened, for checkers).
        action: LeaseAction,
        /// The server time it was judged at.
        at_ms: Millis,
        /// The new record (`None`: available).
        lease: Option<Lease>,
        /// The id counter after the action.
        ids_drawn: u64,
    },
    /// A container was deleted with its blobs and their leases.
    ContainerDeleted {
        /// The container.
        container: String,
        /// The lease id the delete carried.
        lease_id: Option<String>,
        /// The server time it was judged at.
        at_ms: Millis,
    },
}

/// Parses a GUID in any of its usual forms (32 hex digits, hyphenated, in braces or
/// parentheses, any case) into the lower-case hyphenated form; `None` if it is not one.
pub fn parse_guid(s: &str) -> Option<String> {
    let inner = s
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .or_else(|| s.strip_prefix('(').and_then(|t| t.strip_suffix(')')))
        .unwrap_or(s);
    let hex: String = match inner.len() {
        32 => inner.to_string(),
        36 => {
            let b = inner.as_bytes();
            if [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
                return None;
            }
            inner.chars().filter(|c| *c != '-').collect()
        }
        _ => return None,
    };
    if hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let h = hex.to_ascii_lowercase();
    Some(format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    ))
}

/// The `n`-th server-generated lease id of a store: a version-4-shaped GUID
/// whose low 48 bits are `n`, the rest a hash of it (distinct `n` give distinct
/// ids, so a store that never repeats `n` never repeats an id on any resource).
pub(crate) fn generated_id(n: u64) -> String {
    let hi = splitmix(n);
    let lo = (splitmix(hi) & 0xFFFF_0000_0000_0000) | (n & 0x0000_FFFF_FFFF_FFFF);
    let hi = (hi & 0xFFFF_FFFF_FFFF_0FFF) | 0x4000;
    let lo = (lo & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
    let h = format!("{hi:016x}{lo:016x}");
    parse_guid(&h).expect("32 hex digits")
}

/// A 400 or 409 of a lease action: status and error code.
pub(crate) type Refusal = (u16, &'static str);

fn valid_id(id: &str) -> Result<String, Refusal> {
    if id.is_empty() {
        return Err((400, "MissingRequiredHeader"));
    }
    parse_guid(id).ok_or((400, "InvalidHeaderValue"))
}

/// §2.2: the headers of one action, checked before any state is read, in every state.
pub(crate) fn validate(action: &LeaseAction) -> Result<(), Refusal> {
    match action {
        LeaseAction::Acquire {
            duration,
            proposed_id,
        } => {
            match duration {
                None => return Err((400, "MissingRequiredHeader")),
                Some(d) if *d != INFINITE && !(MIN_DURATION_S..=MAX_DURATION_S).contains(d) => {
                    return Err((400, "InvalidHeaderValue"))
                }
                Some(_) => {}
            }
            if let Some(p) = proposed_id {
                valid_id(p)?;
            }
        }
        LeaseAction::Renew { lease_id } | LeaseAction::Release { lease_id } => {
            valid_id(lease_id)?;
        }
        LeaseAction::Change {
            lease_id,
            proposed_id,
        } => {
            valid_id(lease_id)?;
            valid_id(proposed_id.as_deref().unwrap_or(""))?;
        }
        LeaseAction::Break { break_period } => {
            if break_period.is_some_and(|p| !(0..=MAX_BREAK_PERIOD_S).contains(&p)) {
                return Err((400, "InvalidHeaderValue"));
            }
        }
    }
    Ok(())
}

/// What a read, write or delete is, for the lease check of §2.5 and §2.7.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Use {
    /// A blob write or delete (Put Blob, Set Metadata, Delete Blob...).
    BlobWrite,
    /// A blob read (Get Blob, Get Properties, Snapshot).
    BlobRead,
    /// Delete Container: the one container operation a container lease gates.
    ContainerDelete,
    /// Any other container operation (never blocked without an id).
    ContainerOther,
}

/// §2.5 and §2.7: whether a request carrying `sent` (a normalised id, or none)
/// may use a resource whose lease record is `lease` at `now`; the 412 error
/// code when it may not (`LeaseLost` for a blob write or delete carrying the
/// id of an expired or broken lease, AMBIG-19). Of `bugs`,
/// `write_without_lease_check` (a blob write without an id passes while
/// locked) and `write_blocked_by_lapsed_lease` (one is refused while an
/// expired or broken lease is on record) apply here.
pub(crate) fn check_use(
    lease: Option<&Lease>,
    sent: Option<&str>,
    now: Millis,
    what: Use,
    bugs: &ModelBugs,
) -> Result<(), &'static str> {
    let locked = state_of(lease, now).is_locked();
    // The seeded bug judges a write without an id by the record's presence.
    let blocks_without_id =
        locked || (bugs.write_blocked_by_lapsed_lease && what == Use::BlobWrite && lease.is_some());
    let on_blob = matches!(what, Use::BlobWrite | Use::BlobRead);
    match (sent, lease) {
        (None, _) if !blocks_without_id => Ok(()),
        (None, _) => match what {
            Use::BlobWrite if bugs.write_without_lease_check => Ok(()),
            Use::BlobWrite | Use::ContainerDelete => Err("LeaseIdMissing"),
            Use::BlobRead | Use::ContainerOther => Ok(()),
        },
        (Some(id), Some(l)) if locked => {
            if id == l.id {
                Ok(())
            } else if on_blob {
                Err("LeaseIdMismatchWithBlobOperation")
            } else {
                Err("LeaseIdMismatchWithContainerOperation")
            }
        }
        // AMBIG-19: a write or delete carrying the id of a lease that has
        // expired or been broken is told its lease is lost (live traces).
        (Some(id), Some(l)) if what == Use::BlobWrite && id == l.id => Err("LeaseLost"),
        (Some(_), _) => Err(if on_blob {
            "LeaseNotPresentWithBlobOperation"
        } else {
            "LeaseNotPresentWithContainerOperation"
        }),
    }
}

/// The outcome of one action on one record: the new record and the response's
/// lease id and break time, or the refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Transition {
    /// 201, 200 or 202.
    pub status: u16,
    /// The record after (`None`: available).
    pub lease: Option<Lease>,
    /// `x-ms-lease-id` in the response.
    pub lease_id: Option<String>,
    /// `x-ms-lease-time` (breaks).
    pub lease_time_s: Option<u64>,
}

/// §2.3 and §2.4: one validated action on the record `current` at server time
/// `now`. `fresh_id` is called (once) only when a new id is generated.
/// Of `bugs`, `break_ignores_period` (every break is immediate) and
/// `renew_refused_when_expired` (an expired lease is not renewed) apply here.
pub(crate) fn transition(
    current: Option<&Lease>,
    action: &LeaseAction,
    now: Millis,
    fresh_id: &mut dyn FnMut() -> String,
    bugs: &ModelBugs,
) -> Result<Transition, Refusal> {
    let state = state_of(current, now);
    let norm = |s: &str| parse_guid(s).unwrap_or_default();
    let is_current = |id: &str| current.is_some_and(|l| l.id == norm(id));
    let ok = |status: u16, lease: Option<Lease>| Transition {
        status,
        lease_id: if status == 202 {
            None
        } else {
            lease.as_ref().map(|l| l.id.clone())
        },
        lease,
        lease_time_s: None,
    };
    const PRESENT: &str = "LeaseAlreadyPresent";
    const MISMATCH: &str = "LeaseIdMismatchWithLeaseOperation";
    const NOT_PRESENT: &str = "LeaseNotPresentWithLeaseOperation";
    match action {
        LeaseAction::Acquire {
            duration,
            proposed_id,
        } => {
            let duration = match duration {
                Some(d) if *d == INFINITE => LeaseDuration::Infinite,
                Some(d) => LeaseDuration::Fixed(*d as u32),
                None => return Err((400, "MissingRequiredHeader")),
            };
            let same = proposed_id.as_deref().is_some_and(is_current);
            let id = match state {
                LeaseState::Available | LeaseState::Expired | LeaseState::Broken => {
                    match proposed_id {
                        Some(p) => norm(p),
                        None => fresh_id(),
                    }
                }
                LeaseState::Leased if same => norm(proposed_id.as_deref().unwrap_or("")),
                LeaseState::Leased => return Err((409, PRESENT)),
                LeaseState::Breaking if same => {
                    return Err((409, "LeaseIsBreakingAndCannotBeAcquired"))
                }
                LeaseState::Breaking => return Err((409, PRESENT)),
            };
            let lease = Lease {
                id,
                duration,
                phase: Phase::Leased {
                    expire_ms: duration.ms().map(|d| now + d),
                },
            };
            Ok(ok(201, Some(lease)))
        }
        LeaseAction::Renew { lease_id } => {
            let Some(l) = current.filter(|_| is_current(lease_id)) else {
                return Err((409, MISMATCH));
            };
            match state {
                LeaseState::Expired if bugs.renew_refused_when_expired => Err((409, MISMATCH)),
                LeaseState::Leased | LeaseState::Expired => {
                    let lease = Lease {
                        phase: Phase::Leased {
                            expire_ms: l.duration.ms().map(|d| now + d),
                        },
                        ..l.clone()
                    };
                    Ok(ok(200, Some(lease)))
                }
                LeaseState::Breaking | LeaseState::Broken => {
                    Err((409, "LeaseIsBrokenAndCannotBeRenewed"))
                }
                LeaseState::Available => Err((409, MISMATCH)),
            }
        }
        LeaseAction::Change {
            lease_id,
            proposed_id,
        } => {
            let proposed = proposed_id.as_deref().unwrap_or("");
            match (state, current) {
                (LeaseState::Leased, Some(l)) => {
                    if is_current(lease_id) || is_current(proposed) {
                        let lease = Lease {
                            id: norm(proposed),
                            ..l.clone()
                        };
                        Ok(ok(200, Some(lease)))
                    } else {
                        Err((409, MISMATCH))
                    }
                }
                (LeaseState::Breaking, _) if is_current(lease_id) => {
                    Err((409, "LeaseIsBreakingAndCannotBeChanged"))
                }
                (LeaseState::Breaking, _) => Err((409, MISMATCH)),
                _ => Err((409, NOT_PRESENT)),
            }
        }
        LeaseAction::Release { lease_id } => {
            if state != LeaseState::Available && is_current(lease_id) {
                Ok(ok(200, None))
            } else {
                Err((409, MISMATCH))
            }
        }
        LeaseAction::Break { break_period } => {
            let Some(l) = current.filter(|_| state != LeaseState::Available) else {
                return Err((409, NOT_PRESENT));
            };
            let period_ms = break_period.map(|p| p.max(0) as u64 * 1000);
            // When the break takes effect; `None`: it does not change.
            let break_at = match (state, l.phase) {
                (LeaseState::Leased, Phase::Leased { expire_ms }) => {
                    Some(match (expire_ms, period_ms) {
                        (Some(e), None) => e,
                        (Some(e), Some(p)) => e.min(now + p),
                        (None, None) => now,
                        (None, Some(p)) => now + p,
                    })
                }
                (LeaseState::Breaking, Phase::Breaking { break_ms }) => {
                    period_ms.map(|p| break_ms.min(now + p))
                }
                // Broken stays broken; expired breaks at once.
                (LeaseState::Broken, _) => None,
                _ => Some(now),
            };
            let break_at = if bugs.break_ignores_period {
                break_at.map(|_| now)
            } else {
                break_at
            };
            let lease = match break_at {
                None => l.clone(),
                Some(at) => Lease {
                    phase: if at <= now {
                        Phase::Broken
                    } else {
                        Phase::Breaking { break_ms: at }
                    },
                    ..l.clone()
                },
            };
            let left_ms = match lease.phase {
                Phase::Breaking { break_ms } => break_ms.saturating_sub(now),
                _ => 0,
            };
            let mut t = ok(202, Some(lease));
            t.lease_time_s = Some(left_ms.div_ceil(1000));
            Ok(t)
        }
    }
}

/// The lease records of one store and the id counter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leases {
    records: BTreeMap<LeaseTarget, Lease>,
    ids_drawn: u64,
}

impl Leases {
    /// The record of `target`, if any (none: available).
    pub fn get(&self, target: &LeaseTarget) -> Option<&Lease> {
        self.records.get(target)
    }

    /// How many ids have been generated.
    pub fn ids_drawn(&self) -> u64 {
        self.ids_drawn
    }

    /// Runs one action on an existing resource (the caller has validated it and
    /// checked existence and conditions) at server time `now`.
    pub fn act(
        &mut self,
        target: &LeaseTarget,
        action: &LeaseAction,
        now: Millis,
        bugs: &ModelBugs,
    ) -> (LeaseResponse, Option<Effect>) {
        let current = self.records.get(target);
        let mut drawn = self.ids_drawn;
        let mut fresh = || {
            drawn += 1;
            generated_id(drawn)
        };
        match transition(current, action, now, &mut fresh, bugs) {
            Err((status, code)) => (LeaseResponse::error(status, code, now, current), None),
            Ok(t) => {
                let effect = Effect::Set {
                    target: target.clone(),
                    action: action.clone(),
                    at_ms: now,
                    lease: t.lease.clone(),
                    ids_drawn: drawn,
                };
                self.ids_drawn = drawn;
                self.set(target, t.lease.clone());
                let response = LeaseResponse {
                    status: t.status,
                    error_code: None,
                    lease_id: t.lease_id,
                    lease_time_s: t.lease_time_s,
                    server_ms: now,
                    state: state_of(t.lease.as_ref(), now),
                    duration: duration_of(t.lease.as_ref(), now),
                };
                (response, Some(effect))
            }
        }
    }

    /// Sets (or clears) a record.
    pub fn set(&mut self, target: &LeaseTarget, lease: Option<Lease>) {
        match lease {
            Some(l) => {
                self.records.insert(target.clone(), l);
            }
            None => {
                self.records.remove(target);
            }
        }
    }

    /// Restores the id counter from a logged effect. `forget` is the seeded bug
    /// `lease_id_reuse`: the counter lives in memory only, so a recovered server
    /// draws the ids it drew before its crash again.
    pub fn restore_ids(&mut self, ids_drawn: u64, forget: bool) {
        if !forget {
            self.ids_drawn = self.ids_drawn.max(ids_drawn);
        }
    }

    /// §2.6: after a successful write to the blob at `key` at server time `now`, an
    /// expired or broken lease is cleared (a locked one stays). `keep` is the seeded
    /// bug `renew_after_write`: nothing is cleared.
    pub fn after_blob_write(&mut self, key: &ItemKey, now: Millis, keep: bool) {
        let target = LeaseTarget::Blob(key.clone());
        let unlocked = self
            .records
            .get(&target)
            .is_some_and(|l| !l.state_at(now).is_locked());
        if unlocked && !keep {
            self.records.remove(&target);
        }
    }

    /// Forgets every lease of `container` and of the blobs in it.
    pub fn drop_container(&mut self, container: &str) {
        self.records.retain(|t, _| t.container() != container);
    }
}

/// A short form of a lease request for logs, e.g. `acquire docs/b1 30s proposed 7f3e…`.
pub(crate) fn describe(op: &LeaseRequest) -> String {
    let short = |id: &str| id.chars().take(8).collect::<String>();
    match op {
        LeaseRequest::Action { target, action, .. } => {
            let what = match action {
                LeaseAction::Acquire {
                    duration,
                    proposed_id,
                } => format!(
                    "{}s{}",
                    duration.unwrap_or(0),
                    proposed_id
                        .as_deref()
                        .map(|p| format!(" proposed {}", short(p)))
                        .unwrap_or_default()
                ),
                LeaseAction::Renew { lease_id } | LeaseAction::Release { lease_id } => {
                    short(lease_id)
                }
                LeaseAction::Change {
                    lease_id,
                    proposed_id,
                } => format!(
                    "{} -> {}",
                    short(lease_id),
                    short(proposed_id.as_deref().unwrap_or(""))
                ),
                LeaseAction::Break { break_period } => match break_period {
                    Some(p) => format!("period {p}s"),
                    None => "no period".into(),
                },
            };
            format!("{} lease {} {what}", action.name(), target.name())
        }
        LeaseRequest::DeleteContainer {
            container,
            lease_id,
        } => format!(
            "delete container {container}{}",
            lease_id
                .as_deref()
                .map(|l| format!(" lease {}", short(l)))
                .unwrap_or_default()
        ),
        LeaseRequest::SetContainerMetadata {
            container,
            lease_id,
        } => format!(
            "set metadata {container}{}",
            lease_id
                .as_deref()
                .map(|l| format!(" lease {}", short(l)))
                .unwrap_or_default()
        ),
    }
}

#[cfg(test)]
mod tests;
