//! A small reference lease machine, written apart from the model's, that the
//! lease checkers hold the server's log to (SPEC §2.3–§2.7). It knows only
//! what the tables say: states judged from one record at a time, the action
//! rules, break timing, the answers to reads and writes of a leased blob, and
//! which writes clear a lease.

use overcast_model::lease::LeaseAction;

/// One resource's lease as the reference sees it. A lease broken for good has
/// `break_ms` 0 (server clocks may step back; broken stays broken).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefLease {
    /// Lower-case id.
    pub id: String,
    /// Duration in ms (`None`: infinite).
    pub duration_ms: Option<u64>,
    /// Expiry (server ms) while held; `None` while held means infinite.
    pub expire_ms: Option<u64>,
    /// Break time (server ms) once a break is pending or done.
    pub break_ms: Option<u64>,
}

/// The five states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefState {
    /// No lease.
    Available,
    /// Held.
    Leased,
    /// Ran out.
    Expired,
    /// Break pending.
    Breaking,
    /// Broken.
    Broken,
}

impl RefState {
    /// Its name in SPEC's words: `available`, `leased`, `expired`, `breaking`, `broken`.
    pub fn word(self) -> &'static str {
        match self {
            RefState::Available => "available",
            RefState::Leased => "leased",
            RefState::Expired => "expired",
            RefState::Breaking => "breaking",
            RefState::Broken => "broken",
        }
    }

    /// Leased or breaking.
    pub fn locked(self) -> bool {
        matches!(self, RefState::Leased | RefState::Breaking)
    }
}

/// The state of `l` at `now`.
pub fn state(l: Option<&RefLease>, now: u64) -> RefState {
    let Some(l) = l else {
        return RefState::Available;
    };
    match (l.break_ms, l.expire_ms) {
        (Some(b), _) if now < b => RefState::Breaking,
        (Some(_), _) => RefState::Broken,
        (None, Some(e)) if now >= e => RefState::Expired,
        (None, _) => RefState::Leased,
    }
}

fn lower(id: &str) -> String {
    id.to_ascii_lowercase()
}

/// The lease after a successful `action` at `now`, or the 409 code §2.3 answers.
/// `new_id` is the id the server reported for an acquire without a proposal.
pub fn step(
    l: Option<&RefLease>,
    action: &LeaseAction,
    now: u64,
    new_id: &str,
) -> Result<Option<RefLease>, &'static str> {
    let st = state(l, now);
    let holds = |id: &str| l.is_some_and(|l| l.id == lower(id));
    let held = |id: String, duration_ms: Option<u64>| RefLease {
        id,
        duration_ms,
        expire_ms: duration_ms.map(|d| now + d),
        break_ms: None,
    };
    use RefState::*;
    match action {
        LeaseAction::Acquire {
            duration,
            proposed_id,
        } => {
            let d = duration.filter(|d| *d > 0).map(|d| d as u64 * 1000);
            let same = proposed_id.as_deref().is_some_and(holds);
            match st {
                Leased if !same => Err("LeaseAlreadyPresent"),
                Breaking if same => Err("LeaseIsBreakingAndCannotBeAcquired"),
                Breaking => Err("LeaseAlreadyPresent"),
                _ => Ok(Some(held(
                    proposed_id.as_deref().map_or(new_id.to_string(), lower),
                    d,
                ))),
            }
        }
        LeaseAction::Renew { lease_id } => match st {
            _ if !holds(lease_id) => Err("LeaseIdMismatchWithLeaseOperation"),
            Leased | Expired => {
                let l = l.expect("held");
                Ok(Some(held(l.id.clone(), l.duration_ms)))
            }
            Breaking | Broken => Err("LeaseIsBrokenAndCannotBeRenewed"),
            Available => Err("LeaseIdMismatchWithLeaseOperation"),
        },
        LeaseAction::Change {
            lease_id,
            proposed_id,
        } => {
            let proposed = proposed_id.as_deref().unwrap_or("");
            match st {
                Leased if holds(lease_id) || holds(proposed) => Ok(Some(RefLease {
                    id: lower(proposed),
                    ..l.expect("held").clone()
                })),
                Leased => Err("LeaseIdMismatchWithLeaseOperation"),
                Breaking if holds(lease_id) => Err("LeaseIsBreakingAndCannotBeChanged"),
                Breaking => Err("LeaseIdMismatchWithLeaseOperation"),
                _ => Err("LeaseNotPresentWithLeaseOperation"),
            }
        }
        LeaseAction::Release { lease_id } => {
            if st != Available && holds(lease_id) {
                Ok(None)
            } else {
                Err("LeaseIdMismatchWithLeaseOperation")
            }
        }
        LeaseAction::Break { break_period } => {
            let Some(l) = l.filter(|_| st != Available) else {
                return Err("LeaseNotPresentWithLeaseOperation");
            };
            let p = break_period.map(|p| p as u64 * 1000);
            let at = match st {
                Leased => match (l.expire_ms, p) {
                    (Some(e), None) => e,
                    (Some(e), Some(p)) => e.min(now + p),
                    (None, None) => now,
                    (None, Some(p)) => now + p,
                },
                Breaking => {
                    let b = l.break_ms.expect("breaking");
                    p.map_or(b, |p| b.min(now + p))
                }
                Broken => l.break_ms.unwrap_or(now),
                _ => now,
            };
            let at = at.min(l.break_ms.unwrap_or(u64::MAX));
            Ok(Some(RefLease {
                // Broken now is broken for good, even if the clock steps back.
                break_ms: Some(if at <= now { 0 } else { at }),
                ..l.clone()
            }))
        }
    }
}

/// What a request does to a blob, for the table of §2.5.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobUse {
    /// A write or a delete.
    Write,
    /// A read.
    Read,
}

/// The 412 codes of §2.5's table.
pub const USE_CODES: [&str; 4] = [
    "LeaseIdMissing",
    "LeaseIdMismatchWithBlobOperation",
    "LeaseNotPresentWithBlobOperation",
    "LeaseLost",
];

/// §2.5: how the server answers a read or write of an existing blob carrying
/// `sent` (a lease id, or none) while `l` is its lease at `now`: `Ok`, or
/// the 412 codes it may give. A write with the id of a lease that expired
/// or broke may be told `LeaseLost` or `LeaseNotPresentWithBlobOperation`
/// (AMBIG-19: the model answers the first, the table allows both).
pub fn use_answer(
    l: Option<&RefLease>,
    sent: Option<&str>,
    now: u64,
    what: BlobUse,
) -> Result<(), &'static [&'static str]> {
    let st = state(l, now);
    let holds = sent.is_some_and(|id| l.is_some_and(|l| l.id == lower(id)));
    match (sent, st.locked()) {
        (None, false) => Ok(()),
        (None, true) if what == BlobUse::Read => Ok(()),
        (None, true) => Err(&["LeaseIdMissing"]),
        (Some(_), true) if holds => Ok(()),
        (Some(_), true) => Err(&["LeaseIdMismatchWithBlobOperation"]),
        (Some(_), false) if holds && what == BlobUse::Write && st != RefState::Available => {
            Err(&["LeaseLost", "LeaseNotPresentWithBlobOperation"])
        }
        (Some(_), false) => Err(&["LeaseNotPresentWithBlobOperation"]),
    }
}

/// §2.6: a successful blob write at `now` clears an expired or broken lease.
pub fn after_write(l: Option<RefLease>, now: u64) -> Option<RefLease> {
    l.filter(|l| state(Some(l), now).locked())
}
