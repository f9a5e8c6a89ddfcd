//! Blob steps (SPEC §1.1): the `StoreRequest` of `create_container`,
//! `put_blob`, `get_blob`, `delete_blob`, `get_blob_properties`,
//! `set_blob_metadata` (condition headers and lease id with captured names
//! resolved), and the request as a line.

use super::{blob_resource, conditions, describe_conditions, key, lease_header, target};
use super::{State, Target};
use crate::conformance::format::Step;
use overcast_model::conditions::Conditions;
use overcast_model::store::{Metadata, StoreRequest};

/// The Store request of a Blob step, and the container or blob it addresses.
pub(super) fn request(step: &Step, state: &State) -> Result<(StoreRequest, Target), String> {
    let with_lease = |conditions: Conditions, id: &Option<String>| -> Result<Conditions, String> {
        Ok(Conditions {
            lease_id: lease_header(id, state)?,
            ..conditions
        })
    };
    let cond = || step.conditions().map(|h| conditions(h, state)).transpose();
    Ok(match step {
        Step::CreateContainer(s) => (
            StoreRequest::CreateContainer {
                container: s.container.clone(),
            },
            target(s.container.clone()),
        ),
        Step::PutBlob(s) => (
            StoreRequest::Put {
                key: key(&s.container, &s.blob),
                body: s.body.clone().unwrap_or_default(),
                conditions: with_lease(cond()?.unwrap_or_default(), &s.lease_id)?,
                metadata: s.metadata.clone().unwrap_or_default(),
            },
            target(blob_resource(&s.container, &s.blob)),
        ),
        Step::GetBlob(s) => (
            StoreRequest::Read {
                key: key(&s.container, &s.blob),
                conditions: with_lease(cond()?.unwrap_or_default(), &s.lease_id)?,
            },
            target(blob_resource(&s.container, &s.blob)),
        ),
        Step::DeleteBlob(s) => (
            StoreRequest::Delete {
                key: key(&s.container, &s.blob),
                conditions: with_lease(cond()?.unwrap_or_default(), &s.lease_id)?,
            },
            target(blob_resource(&s.container, &s.blob)),
        ),
        Step::GetBlobProperties(s) => (
            StoreRequest::GetProperties {
                key: key(&s.container, &s.blob),
                conditions: with_lease(cond()?.unwrap_or_default(), &s.lease_id)?,
            },
            target(blob_resource(&s.container, &s.blob)),
        ),
        Step::SetBlobMetadata(s) => (
            StoreRequest::SetMetadata {
                key: key(&s.container, &s.blob),
                metadata: s.metadata.clone().unwrap_or_default(),
                conditions: with_lease(cond()?.unwrap_or_default(), &s.lease_id)?,
            },
            target(blob_resource(&s.container, &s.blob)),
        ),
        _ => return Err("not a Blob step".into()),
    })
}

/// A Store request as a line.
pub(super) fn describe(kind: &str, r: &StoreRequest) -> String {
    match r {
        StoreRequest::CreateContainer { container } => {
            format!("{kind} {container}")
        }
        StoreRequest::Read { key, conditions }
        | StoreRequest::Delete { key, conditions }
        | StoreRequest::GetProperties { key, conditions } => {
            format!(
                "{kind} {}/{}{}",
                key.container,
                key.id,
                describe_conditions(conditions)
            )
        }
        StoreRequest::Put {
            key,
            body,
            conditions,
            metadata,
        } => format!(
            "{kind} {}/{} body {body:?}{}{}",
            key.container,
            key.id,
            describe_metadata(metadata),
            describe_conditions(conditions)
        ),
        StoreRequest::SetMetadata {
            key,
            metadata,
            conditions,
        } => format!(
            "{kind} {}/{}{}{}",
            key.container,
            key.id,
            describe_metadata(metadata),
            describe_conditions(conditions)
        ),
    }
}

/// Metadata as ` metadata {name=value, ...}` (nothing when there is none).
fn describe_metadata(m: &Metadata) -> String {
    if m.is_empty() {
        return String::new();
    }
    let pairs: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(" metadata {{{}}}", pairs.join(", "))
}
