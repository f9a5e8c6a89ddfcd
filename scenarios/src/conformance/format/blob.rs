//! Blob steps: `create_container`, `put_blob`, `get_blob`, `delete_blob`,
//! `get_blob_properties`, `set_blob_metadata` (SPEC §1.1), and the check of
//! their bodies and metadata. Their lease id and condition
//! headers are checked by the shared pass in the parent module, since blob
//! lease actions take the same headers.

use super::{Dates, Expect};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `create_container`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateContainer {
    /// The container.
    pub container: String,
    /// The expected answer.
    pub expect: Expect,
}

/// `put_blob`, `get_blob`, `delete_blob`, `get_blob_properties`,
/// `set_blob_metadata`: a Blob request with its conditional headers, written
/// as header values.
///
/// `if_match` / `if_none_match`: `*`, or a comma-separated list of ETags, each
/// a literal (quotes optional) or a captured `$name`. Dates: one date
/// expression, or a list of them (several values in one header).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobOp {
    /// The container.
    pub container: String,
    /// The blob name.
    pub blob: String,
    /// The content: required by `put_blob`, refused by the others.
    #[serde(default)]
    pub body: Option<String>,
    /// The metadata (`x-ms-meta-NAME: value`), by name: taken by `put_blob`
    /// (none when left out) and `set_blob_metadata` (which it replaces the
    /// blob's with; none when left out), refused by the others.
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    /// `If-Match`.
    #[serde(default)]
    pub if_match: Option<String>,
    /// `If-None-Match`.
    #[serde(default)]
    pub if_none_match: Option<String>,
    /// `If-Modified-Since`.
    #[serde(default)]
    pub if_modified_since: Option<Dates>,
    /// `If-Unmodified-Since`.
    #[serde(default)]
    pub if_unmodified_since: Option<Dates>,
    /// `x-ms-lease-id`: a literal (any string; a GUID in any of its forms) or a
    /// captured `$name`.
    #[serde(default)]
    pub lease_id: Option<String>,
    /// The expected answer.
    pub expect: Expect,
}

/// Checks a Blob request's body and metadata against its kind: `put_blob`
/// takes a body, the others none; `put_blob` and `set_blob_metadata` take
/// metadata, the others none.
pub(super) fn validate_body(op: &BlobOp, kind: &str) -> Result<(), (String, String)> {
    match (kind, &op.body) {
        ("put_blob", None) => {
            return Err((
                format!("{kind}.body"),
                "missing: put_blob takes a body".into(),
            ))
        }
        ("put_blob", Some(_)) | (_, None) => {}
        (_, Some(_)) => return Err((format!("{kind}.body"), format!("{kind} takes no body"))),
    }
    match (kind, &op.metadata) {
        ("put_blob" | "set_blob_metadata", _) | (_, None) => Ok(()),
        (_, Some(_)) => Err((
            format!("{kind}.metadata"),
            format!("{kind} takes no metadata"),
        )),
    }
}
