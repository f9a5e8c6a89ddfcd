//! A lease-holder library, as a user builds a mutex or a leader election on a
//! blob lease (SPEC L9): acquire with a proposed id (so that the SDK may retry
//! it), renew, release, fenced writes carrying the lease id, and unfenced work
//! done only while the holder still believes it holds the lease.
//!
//! The holder decides from its **own** clock. It treats the lease as lost at
//!
//! ```text
//! local start of the acquire (or renew) request + duration − margin
//! ```
//!
//! measured from the start of the request, not the receipt of the answer: the
//! server started the lease somewhere between the two, so the start is the safe
//! end. The margin comes from the [`ClockBound`] the library states and
//! assumes: over one lease period, neither the holder's clock nor the server's
//! runs off true time by more than `max_drift_ppm`, and each steps (jumps) by
//! at most `max_step_ms` in all. Then the holder's belief ends, in true time,
//! before the server lets anyone else acquire: the server's clock may run
//! ahead by one step and the drift, the holder's fall behind by as much, so
//! `margin = 2·max_step + 2·duration·max_drift + slack`. A constant clock
//! offset costs nothing: the library only measures durations on one clock.
//!
//! Work done under the lease that the storage service does not fence (a
//! message to another node, a write elsewhere) goes through
//! [`LeaseHolder::act_unfenced`], which checks the belief and runs the work in
//! one step (no await in between, so a pause cannot fall between the check and
//! the act). A pause before the check only makes the holder see that its time
//! is up.
//!
//! Release on drop: a `Drop` cannot await, so the holder forgets its belief
//! when dropped and a caller that can should [`LeaseHolder::release`] first;
//! a release that gets 409 means the lease is already gone (§2.1), not an
//! error to retry.

use crate::core::bugs::ModelBugs;
use crate::core::conditions::{Conditions, Millis};
use crate::core::env::Clock;
use crate::sdk::client::{CallResult, StoreClient};
use crate::sdk::lease_client::with_lease;
use crate::sdk::retry::FinalOutcome;
use crate::services::lease::{LeaseAction, LeaseRequest, LeaseResponse, LeaseTarget};
use crate::services::store::{Metadata, StoreRequest, StoreResponse};

/// The clock behaviour the library assumes, over any one lease period, of both
/// the holder's clock and the server's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockBound {
    /// Largest rate error of either clock, parts per million.
    pub max_drift_ppm: u64,
    /// Largest total step of either clock (forward or back), ms.
    pub max_step_ms: u64,
    /// Extra slack for what the bound does not name (rounding of whole ms), ms.
    pub slack_ms: u64,
}

impl ClockBound {
    /// The bound overcast's `leases` scenario keeps by default: 500 ppm, one
    /// step of at most 3 s per clock, 50 ms slack.
    pub const DEFAULT: ClockBound = ClockBound {
        max_drift_ppm: 500,
        max_step_ms: 3_000,
        slack_ms: 50,
    };

    /// The safety margin for a lease of `duration_ms`.
    pub fn margin_ms(&self, duration_ms: Millis) -> Millis {
        2 * self.max_step_ms + 2 * duration_ms * self.max_drift_ppm / 1_000_000 + self.slack_ms
    }
}

/// A holder's settings.
#[derive(Clone, Debug)]
pub struct HolderConfig {
    /// The blob or container it leases.
    pub target: LeaseTarget,
    /// The lease duration, seconds (15–60). Infinite leases are not for holders that
    /// may die: nobody but a breaker could ever take them over.
    pub duration_s: u32,
    /// The clock bound it assumes.
    pub bound: ClockBound,
    /// The seeded bugs: the holder reads `lease_expiry_on_client_clock` and
    /// `lease_trust_full_duration`.
    pub bugs: ModelBugs,
}

/// What the holder believes it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Belief {
    /// The lease id.
    pub lease_id: String,
    /// Its own clock reading from which it treats the lease as lost.
    pub until_local_ms: Millis,
}

/// How an acquire or renew ended, as the holder sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempted {
    /// It holds the lease until its clock reads `until_local_ms`.
    Held(Belief),
    /// The server granted it, but the holder's time was up before the answer came.
    TooLate,
    /// Refused (409: someone else holds it; 404: no such resource...).
    Refused(u16),
    /// Unknown (timed out, throttled past the budget...).
    Unknown,
}

/// One holder of one lease.
pub struct LeaseHolder {
    cfg: HolderConfig,
    proposed_id: String,
    belief: Option<Belief>,
}

impl LeaseHolder {
    /// A holder that proposes `proposed_id` (a GUID; one per process: a
    /// restarted process must not reuse it, or it would inherit a lease it does not
    /// know it holds).
    pub fn new(cfg: HolderConfig, proposed_id: String) -> LeaseHolder {
        LeaseHolder {
            cfg,
            proposed_id,
            belief: None,
        }
    }

    /// The settings.
    pub fn config(&self) -> &HolderConfig {
        &self.cfg
    }

    /// The id it proposes.
    pub fn proposed_id(&self) -> &str {
        &self.proposed_id
    }

    /// The belief it holds at local time `now` (`None` once its time is up).
    pub fn belief_at(&self, now: Millis) -> Option<&Belief> {
        self.belief.as_ref().filter(|b| now < b.until_local_ms)
    }

    /// The local time until which a lease granted by a request that started at
    /// local `started` and was answered at local `answered` is believed.
    pub fn valid_until(&self, started: Millis, answered: Millis) -> Millis {
        let d = u64::from(self.cfg.duration_s) * 1000;
        if self.cfg.bugs.lease_expiry_on_client_clock {
            answered + d
        } else if self.cfg.bugs.lease_trust_full_duration {
            started + d
        } else {
            (started + d).saturating_sub(self.cfg.bound.margin_ms(d))
        }
    }

    fn settle(
        &mut self,
        started: Millis,
        clock: &dyn Clock,
        r: &CallResult<LeaseResponse>,
    ) -> Attempted {
        match (&r.outcome, &r.response) {
            (FinalOutcome::Response { status: 200 | 201 }, Some(resp)) => {
                let now = clock.now_ms();
                let until = self.valid_until(started, now);
                let id = resp
                    .lease_id
                    .clone()
                    .unwrap_or_else(|| self.proposed_id.clone());
                if now >= until {
                    self.belief = None;
                    return Attempted::TooLate;
                }
                let b = Belief {
                    lease_id: id,
                    until_local_ms: until,
                };
                self.belief = Some(b.clone());
                Attempted::Held(b)
            }
            (FinalOutcome::Response { status }, _) => {
                self.belief = None;
                Attempted::Refused(*status)
            }
            // The holder never cancels a call: a cancelled one would be unknown too.
            (FinalOutcome::Unknown { .. } | FinalOutcome::Cancelled { .. }, _) => {
                self.belief = None;
                Attempted::Unknown
            }
        }
    }

    /// The acquire it sends: with its proposed id, so that the SDK may retry it.
    pub fn acquire_request(&self) -> LeaseRequest {
        LeaseRequest::Action {
            target: self.cfg.target.clone(),
            action: LeaseAction::Acquire {
                duration: Some(i64::from(self.cfg.duration_s)),
                proposed_id: Some(self.proposed_id.clone()),
            },
            conditions: Conditions::none(),
        }
    }

    /// The renew it would send now (`None`: it believes it holds nothing).
    pub fn renew_request(&self) -> Option<LeaseRequest> {
        let b = self.belief.as_ref()?;
        Some(LeaseRequest::Action {
            target: self.cfg.target.clone(),
            action: LeaseAction::Renew {
                lease_id: b.lease_id.clone(),
            },
            conditions: Conditions::none(),
        })
    }

    /// Acquires with the proposed id ([`LeaseHolder::acquire_request`]); the
    /// call's result comes back too, for whoever records calls.
    pub async fn acquire(
        &mut self,
        client: &mut StoreClient,
        clock: &dyn Clock,
    ) -> (Attempted, CallResult<LeaseResponse>) {
        let started = clock.now_ms();
        let r = client.lease(&self.acquire_request()).await;
        (self.settle(started, clock, &r), r)
    }

    /// Renews the lease it believes it holds ([`LeaseHolder::renew_request`]);
    /// `None` when there is nothing to renew.
    pub async fn renew(
        &mut self,
        client: &mut StoreClient,
        clock: &dyn Clock,
    ) -> Option<(Attempted, CallResult<LeaseResponse>)> {
        let req = self.renew_request()?;
        let started = clock.now_ms();
        let r = client.lease(&req).await;
        Some((self.settle(started, clock, &r), r))
    }

    /// Whether to renew now: half its believed time has passed.
    pub fn should_renew(&self, now: Millis) -> bool {
        let d = u64::from(self.cfg.duration_s) * 1000;
        self.belief_at(now)
            .is_some_and(|b| b.until_local_ms.saturating_sub(now) < d / 2)
    }

    /// Releases the lease it believes it holds and forgets it (a 409 means it was
    /// gone already). `None` when there was nothing to release.
    pub async fn release(&mut self, client: &mut StoreClient) -> Option<CallResult<LeaseResponse>> {
        let b = self.belief.take()?;
        let target = self.cfg.target.clone();
        Some(client.release_lease(&target, &b.lease_id).await)
    }

    /// The id of its last belief, whether or not its time is up.
    pub fn lease_id(&self) -> Option<&str> {
        self.belief.as_ref().map(|b| b.lease_id.as_str())
    }

    /// Forgets the belief without telling the server (the lease runs out by itself).
    pub fn forget(&mut self) {
        self.belief = None;
    }

    /// A write fenced by the storage service: a put carrying the lease id, so the
    /// server refuses it (412) once the lease is gone, whatever the holder
    /// believes. `None` when the holder holds nothing at local `now`.
    pub async fn fenced_put(
        &mut self,
        client: &mut StoreClient,
        clock: &dyn Clock,
        body: String,
    ) -> Option<(StoreRequest, CallResult<StoreResponse>)> {
        let b = self.belief_at(clock.now_ms())?.clone();
        let LeaseTarget::Blob(key) = self.cfg.target.clone() else {
            return None;
        };
        let req = StoreRequest::Put {
            key,
            body,
            conditions: with_lease(Conditions::none(), b.lease_id),
            metadata: Metadata::new(),
        };
        let r = client.call(req.clone()).await;
        Some((req, r))
    }

    /// A metadata write fenced by the storage service: Set Blob Metadata carrying
    /// the lease id, refused (412) once the lease is gone, as [`Self::fenced_put`].
    /// `None` when the holder holds nothing at local `now`.
    pub async fn fenced_set_metadata(
        &mut self,
        client: &mut StoreClient,
        clock: &dyn Clock,
        metadata: Metadata,
    ) -> Option<(StoreRequest, CallResult<StoreResponse>)> {
        let b = self.belief_at(clock.now_ms())?.clone();
        let LeaseTarget::Blob(key) = self.cfg.target.clone() else {
            return None;
        };
        let conditions = with_lease(Conditions::none(), b.lease_id);
        let req = StoreRequest::SetMetadata {
            key: key.clone(),
            metadata: metadata.clone(),
            conditions: conditions.clone(),
        };
        let r = client.set_metadata(&key, metadata, conditions).await;
        Some((req, r))
    }

    /// Unfenced work: runs `work(lease_id, local_now)` iff the holder still
    /// believes it holds the lease at its clock's reading now, checked and done in
    /// one step. Returns whether it ran.
    pub fn act_unfenced(&self, clock: &dyn Clock, work: impl FnOnce(&Belief, Millis)) -> bool {
        let now = clock.now_ms();
        match self.belief_at(now) {
            Some(b) => {
                work(b, now);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::keys::ItemKey;

    fn holder(bugs: ModelBugs) -> LeaseHolder {
        LeaseHolder::new(
            HolderConfig {
                target: LeaseTarget::Blob(ItemKey::new("c", "", "b")),
                duration_s: 15,
                bound: ClockBound::DEFAULT,
                bugs,
            },
            "7f3e0000-0000-4000-8000-000000000001".into(),
        )
    }

    #[test]
    fn the_margin_covers_a_step_of_each_clock_and_both_drifts() {
        // 2 × 3 s steps + 2 × 15 s × 500 ppm (15 ms) + 50 ms slack.
        assert_eq!(ClockBound::DEFAULT.margin_ms(15_000), 6_000 + 15 + 50);
    }

    #[test]
    fn the_lease_is_lost_at_the_request_start_plus_duration_minus_the_margin() {
        let h = holder(ModelBugs::default());
        // Answered 2 s after the start: the start counts.
        assert_eq!(h.valid_until(100_000, 102_000), 100_000 + 15_000 - 6_065);
    }

    #[test]
    fn the_seeded_bugs_measure_from_the_answer_or_without_a_margin() {
        let bugs = ModelBugs {
            lease_expiry_on_client_clock: true,
            ..ModelBugs::default()
        };
        assert_eq!(holder(bugs).valid_until(100_000, 102_000), 117_000);
        let bugs = ModelBugs {
            lease_trust_full_duration: true,
            ..ModelBugs::default()
        };
        assert_eq!(holder(bugs).valid_until(100_000, 102_000), 115_000);
    }

    #[test]
    fn unfenced_work_runs_only_while_the_belief_lasts_and_renewal_is_due_at_half_time() {
        struct At(Millis);
        impl Clock for At {
            fn now_ms(&self) -> Millis {
                self.0
            }
        }
        let mut h = holder(ModelBugs::default());
        h.belief = Some(Belief {
            lease_id: h.proposed_id.clone(),
            until_local_ms: 10_000,
        });
        let mut ran = Vec::new();
        assert!(h.act_unfenced(&At(9_999), |b, now| ran.push((b.lease_id.clone(), now))));
        assert!(!h.act_unfenced(&At(10_000), |_, _| panic!("ran after the end")));
        assert_eq!(ran.len(), 1);
        assert!(!h.should_renew(1_000));
        assert!(h.should_renew(3_000));
        assert!(!h.should_renew(10_000));
    }
}
