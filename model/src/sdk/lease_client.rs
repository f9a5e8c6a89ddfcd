//! The SDK's lease calls (SPEC §2, retried as SPEC §4 says): the five lease
//! actions on a blob or a container, container deletes and metadata with a
//! lease id, and reads/writes/deletes of a blob carrying a lease id, all
//! through [`StoreClient::request`].
//!
//! Retries: a lease action that timed out has an unknown outcome. An acquire
//! **with** a proposed id, a renew and a change are safe to send again (a
//! repeat ends in the same state), so the SDK retries their timeouts like a
//! read's. An acquire **without** a proposed id is not: if the first attempt
//! won, a repeat gets 409 `LeaseAlreadyPresent` and the caller would be told
//! it lost a lease it holds, under an id it never learns. Such an acquire, a
//! release and a break end `Unknown{408}` after a timeout instead. Callers
//! that want to retry an acquire should propose an id.

use crate::core::conditions::Conditions;
use crate::partition::{Request, Response};
use crate::sdk::client::{CallResult, StoreClient};
use crate::services::lease::{LeaseAction, LeaseRequest, LeaseResponse, LeaseTarget};

/// `c` carrying `x-ms-lease-id: lease_id`.
pub fn with_lease(c: Conditions, lease_id: impl Into<String>) -> Conditions {
    Conditions {
        lease_id: Some(lease_id.into()),
        ..c
    }
}

impl StoreClient {
    /// One lease request with the SDK's retries.
    pub async fn lease(&mut self, req: &LeaseRequest) -> CallResult<LeaseResponse> {
        self.request(&Request::Lease(req.clone()))
            .await
            .map_response(Response::into_lease)
    }

    /// Acquire: `duration_s` 15–60 or −1 (infinite). Retried after a timeout only
    /// with a proposed id (module doc).
    pub async fn acquire_lease(
        &mut self,
        target: &LeaseTarget,
        duration_s: i64,
        proposed_id: Option<String>,
    ) -> CallResult<LeaseResponse> {
        let action = LeaseAction::Acquire {
            duration: Some(duration_s),
            proposed_id,
        };
        self.lease_action(target, action).await
    }

    /// Renew with `lease_id` (retried after a timeout).
    pub async fn renew_lease(
        &mut self,
        target: &LeaseTarget,
        lease_id: &str,
    ) -> CallResult<LeaseResponse> {
        let action = LeaseAction::Renew {
            lease_id: lease_id.to_string(),
        };
        self.lease_action(target, action).await
    }

    /// Change from `lease_id` to `proposed_id` (retried after a timeout).
    pub async fn change_lease(
        &mut self,
        target: &LeaseTarget,
        lease_id: &str,
        proposed_id: &str,
    ) -> CallResult<LeaseResponse> {
        let action = LeaseAction::Change {
            lease_id: lease_id.to_string(),
            proposed_id: Some(proposed_id.to_string()),
        };
        self.lease_action(target, action).await
    }

    /// Release `lease_id` (not retried after a timeout: a repeat gets 409).
    pub async fn release_lease(
        &mut self,
        target: &LeaseTarget,
        lease_id: &str,
    ) -> CallResult<LeaseResponse> {
        let action = LeaseAction::Release {
            lease_id: lease_id.to_string(),
        };
        self.lease_action(target, action).await
    }

    /// Break, with an optional period in seconds (not retried after a timeout).
    pub async fn break_lease(
        &mut self,
        target: &LeaseTarget,
        break_period: Option<i64>,
    ) -> CallResult<LeaseResponse> {
        self.lease_action(target, LeaseAction::Break { break_period })
            .await
    }

    async fn lease_action(
        &mut self,
        target: &LeaseTarget,
        action: LeaseAction,
    ) -> CallResult<LeaseResponse> {
        let req = LeaseRequest::Action {
            target: target.clone(),
            action,
            conditions: Conditions::none(),
        };
        self.lease(&req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::bugs::ModelBugs;
    use crate::core::keys::ItemKey;
    use crate::partition::OpKind;

    fn acquire(proposed: Option<&str>) -> Request {
        Request::Lease(LeaseRequest::Action {
            target: LeaseTarget::Blob(ItemKey::new("c", "", "b")),
            action: LeaseAction::Acquire {
                duration: Some(15),
                proposed_id: proposed.map(str::to_string),
            },
            conditions: Conditions::none(),
        })
    }

    #[test]
    fn an_acquire_with_a_proposed_id_is_retried_like_a_read_and_one_without_is_not() {
        let bugs = ModelBugs::default();
        let id = "7f3e0000-0000-4000-8000-000000000001";
        assert_eq!(
            acquire(Some(id)).retry_kind(bugs.acquire_not_idempotent_retry),
            OpKind::Read
        );
        assert_eq!(acquire(None).retry_kind(false), OpKind::Write);
        // The seeded bug retries the one that is not safe.
        assert_eq!(acquire(None).retry_kind(true), OpKind::Read);
    }

    #[test]
    fn releases_breaks_and_container_deletes_are_never_resent_and_renews_are() {
        let t = LeaseTarget::Container("c".into());
        let req = |action| {
            Request::Lease(LeaseRequest::Action {
                target: t.clone(),
                action,
                conditions: Conditions::none(),
            })
        };
        let id = "7f3e0000-0000-4000-8000-000000000001".to_string();
        for (r, kind) in [
            (
                req(LeaseAction::Release {
                    lease_id: id.clone(),
                }),
                OpKind::Write,
            ),
            (
                req(LeaseAction::Break { break_period: None }),
                OpKind::Write,
            ),
            (
                req(LeaseAction::Renew {
                    lease_id: id.clone(),
                }),
                OpKind::Read,
            ),
            (
                req(LeaseAction::Change {
                    lease_id: id.clone(),
                    proposed_id: Some(id.clone()),
                }),
                OpKind::Read,
            ),
            (
                Request::Lease(LeaseRequest::DeleteContainer {
                    container: "c".into(),
                    lease_id: None,
                }),
                OpKind::Write,
            ),
        ] {
            assert_eq!(r.retry_kind(false), kind, "{r:?}");
        }
    }
}
