//! Lease steps (SPEC §2.2–§2.4, §2.7): the `LeaseRequest` of `lease_blob`,
//! `lease_container` (one lease action with its headers), `delete_container`
//! and `set_container_metadata`, and the request as a line.

use super::{blob_resource, conditions, describe_conditions, key, lease_header, lease_value};
use super::{target, State, Target};
use crate::conformance::format::{LeaseOp, Step};
use overcast_model::lease::{self, LeaseAction, LeaseRequest, LeaseTarget};

/// The lease request of a lease step, what it addresses (`lease:` and the
/// container or blob) and the lease id it proposes.
pub(super) fn request(step: &Step, state: &State) -> Result<(LeaseRequest, Target), String> {
    let cond = || step.conditions().map(|h| conditions(h, state)).transpose();
    Ok(match step {
        Step::LeaseBlob(s) | Step::LeaseContainer(s) => {
            let (lease_target, resource) = match &s.blob {
                Some(b) => (
                    LeaseTarget::Blob(key(&s.container, b)),
                    format!("lease:{}", blob_resource(&s.container, b)),
                ),
                None => (
                    LeaseTarget::Container(s.container.clone()),
                    format!("lease:{}", s.container),
                ),
            };
            let action = lease_action(s, state)?;
            let proposed = match &action {
                LeaseAction::Acquire { proposed_id, .. }
                | LeaseAction::Change { proposed_id, .. } => {
                    proposed_id.as_deref().and_then(lease::parse_guid)
                }
                _ => None,
            };
            (
                LeaseRequest::Action {
                    target: lease_target,
                    action,
                    conditions: cond()?.unwrap_or_default(),
                },
                Target {
                    resource,
                    per_op: Vec::new(),
                    proposed,
                },
            )
        }
        Step::DeleteContainer(s) => (
            LeaseRequest::DeleteContainer {
                container: s.container.clone(),
                lease_id: lease_header(&s.lease_id, state)?,
            },
            target(format!("lease:{}", s.container)),
        ),
        Step::SetContainerMetadata(s) => (
            LeaseRequest::SetContainerMetadata {
                container: s.container.clone(),
                lease_id: lease_header(&s.lease_id, state)?,
            },
            target(format!("lease:{}", s.container)),
        ),
        _ => return Err("not a lease step".into()),
    })
}

/// A lease request as a line.
pub(super) fn describe(kind: &str, r: &LeaseRequest) -> String {
    match r {
        LeaseRequest::Action {
            target,
            action,
            conditions,
        } => {
            let headers = match action {
                LeaseAction::Acquire {
                    duration,
                    proposed_id,
                } => {
                    let mut h = duration
                        .map(|d| format!(", duration {d}"))
                        .unwrap_or_else(|| ", no duration".into());
                    if let Some(p) = proposed_id {
                        h += &format!(", proposed {p}");
                    }
                    h
                }
                LeaseAction::Renew { lease_id } | LeaseAction::Release { lease_id } => {
                    format!(", lease id {lease_id:?}")
                }
                LeaseAction::Change {
                    lease_id,
                    proposed_id,
                } => format!(", lease id {lease_id:?}, proposed {proposed_id:?}"),
                LeaseAction::Break { break_period } => match break_period {
                    Some(p) => format!(", break period {p}"),
                    None => ", no break period".into(),
                },
            };
            format!(
                "{kind} {} {}{headers}{}",
                target.name(),
                action.name(),
                describe_conditions(conditions)
            )
        }
        LeaseRequest::DeleteContainer {
            container,
            lease_id,
        }
        | LeaseRequest::SetContainerMetadata {
            container,
            lease_id,
        } => match lease_id {
            Some(id) => format!("{kind} {container}, x-ms-lease-id: {id}"),
            None => format!("{kind} {container}"),
        },
    }
}

fn lease_action(s: &LeaseOp, state: &State) -> Result<LeaseAction, String> {
    let id = |v: &Option<String>| v.as_deref().map(|v| lease_value(v, state)).transpose();
    // A required id left out is sent empty: the service answers 400 (SPEC §2.2).
    let required = |v: &Option<String>| id(v).map(Option::unwrap_or_default);
    Ok(match s.action.as_str() {
        "acquire" => LeaseAction::Acquire {
            duration: s.duration,
            proposed_id: id(&s.proposed_id)?,
        },
        "renew" => LeaseAction::Renew {
            lease_id: required(&s.lease_id)?,
        },
        "change" => LeaseAction::Change {
            lease_id: required(&s.lease_id)?,
            proposed_id: id(&s.proposed_id)?,
        },
        "release" => LeaseAction::Release {
            lease_id: required(&s.lease_id)?,
        },
        "break" => LeaseAction::Break {
            break_period: s.break_period,
        },
        other => return Err(format!("no lease action `{other}`")),
    })
}
