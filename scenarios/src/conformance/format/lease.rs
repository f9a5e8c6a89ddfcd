//! Lease steps: `lease_blob` and `lease_container` (one lease action, SPEC
//! §2.2–§2.4 and §2.7), and the container operations a container lease gates
//! (`delete_container`, `set_container_metadata`), with the checks of their
//! headers.

use super::{use_value, Dates, Expect, Kind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `lease_blob`, `lease_container`: one `x-ms-lease-action` with its headers.
/// Which headers an action takes follows SPEC §2.2; a header the action does
/// not take is malformed (the model's request could not carry it). A header
/// the action requires may be left out to pin the 400 the service answers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseOp {
    /// The container.
    pub container: String,
    /// The blob: required by `lease_blob`, refused by `lease_container`.
    #[serde(default)]
    pub blob: Option<String>,
    /// `acquire`, `renew`, `change`, `release` or `break`.
    pub action: String,
    /// `x-ms-lease-duration` (acquire): seconds, −1 for infinite; absent: the
    /// header is missing.
    #[serde(default)]
    pub duration: Option<i64>,
    /// `x-ms-proposed-lease-id` (acquire, change): a literal or a captured `$name`.
    #[serde(default)]
    pub proposed_id: Option<String>,
    /// `x-ms-lease-id` (renew, change, release): a literal or a captured `$name`.
    #[serde(default)]
    pub lease_id: Option<String>,
    /// `x-ms-lease-break-period` (break): seconds.
    #[serde(default)]
    pub break_period: Option<i64>,
    /// `If-Match` (blob leases only, write rules).
    #[serde(default)]
    pub if_match: Option<String>,
    /// `If-None-Match` (blob leases only).
    #[serde(default)]
    pub if_none_match: Option<String>,
    /// `If-Modified-Since` (blob leases only).
    #[serde(default)]
    pub if_modified_since: Option<Dates>,
    /// `If-Unmodified-Since` (blob leases only).
    #[serde(default)]
    pub if_unmodified_since: Option<Dates>,
    /// The expected answer.
    pub expect: Expect,
}

/// `delete_container`, `set_container_metadata`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainerOp {
    /// The container.
    pub container: String,
    /// `x-ms-lease-id`: a literal or a captured `$name`.
    #[serde(default)]
    pub lease_id: Option<String>,
    /// The expected answer.
    pub expect: Expect,
}

/// The lease actions a script names.
pub const LEASE_ACTIONS: [&str; 5] = ["acquire", "renew", "change", "release", "break"];

/// Checks the headers of a lease step against its action (SPEC §2.2).
pub(super) fn validate_lease(
    op: &LeaseOp,
    kind: &str,
    names: &BTreeMap<String, Kind>,
) -> Result<(), (String, String)> {
    let at = |f: &str, m: String| (format!("{kind}.{f}"), m);
    if !LEASE_ACTIONS.contains(&op.action.as_str()) {
        return Err(at(
            "action",
            format!("`{}`: one of {}", op.action, LEASE_ACTIONS.join(", ")),
        ));
    }
    match (kind, &op.blob) {
        ("lease_blob", None) => return Err(at("blob", "missing: lease_blob names a blob".into())),
        ("lease_container", Some(_)) => {
            return Err(at("blob", "lease_container takes no blob".into()))
        }
        _ => {}
    }
    let takes = |header: &str| -> bool {
        matches!(
            (op.action.as_str(), header),
            ("acquire", "duration" | "proposed_id")
                | ("renew" | "release", "lease_id")
                | ("change", "lease_id" | "proposed_id")
                | ("break", "break_period")
        )
    };
    for (f, present) in [
        ("duration", op.duration.is_some()),
        ("proposed_id", op.proposed_id.is_some()),
        ("lease_id", op.lease_id.is_some()),
        ("break_period", op.break_period.is_some()),
    ] {
        if present && !takes(f) {
            return Err(at(f, format!("a {} takes no {f}", op.action)));
        }
    }
    for (f, v) in [("proposed_id", &op.proposed_id), ("lease_id", &op.lease_id)] {
        if let Some(v) = v {
            use_value(names, v, Kind::LeaseId).map_err(|m| at(f, m))?;
        }
    }
    let has_conditions = op.if_match.is_some()
        || op.if_none_match.is_some()
        || op.if_modified_since.is_some()
        || op.if_unmodified_since.is_some();
    if kind == "lease_container" && has_conditions {
        return Err(at(
            "if_match",
            "the model evaluates no conditions on container leases (containers have no ETag or Last-Modified in it)".into(),
        ));
    }
    Ok(())
}

/// Checks the lease id of a `delete_container` or `set_container_metadata`.
pub(super) fn validate_container_op(
    op: &ContainerOp,
    kind: &str,
    names: &BTreeMap<String, Kind>,
) -> Result<(), (String, String)> {
    if let Some(v) = &op.lease_id {
        use_value(names, v, Kind::LeaseId).map_err(|m| (format!("{kind}.lease_id"), m))?;
    }
    Ok(())
}
