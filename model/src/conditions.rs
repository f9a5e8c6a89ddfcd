//! Conditional request headers (SPEC §1.1.2–§1.1.4): ETags, `If-Match`, `If-None-Match`,
//! `If-Modified-Since`, `If-Unmodified-Since`, and their pure evaluation for writes and reads.
//!
//! The store ([`crate::store`]) uses these; they are separate so that other resources
//! (leases, lease documents) can evaluate the same headers the same way.

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

/// A clock reading in milliseconds, handed in by the caller (the server's clock).
pub type Millis = u64;

/// Truncates a clock reading to whole seconds: `Last-Modified` and the
/// `If-(Un)Modified-Since` dates compare at 1 s resolution (SPEC §0, "Clock granularity").
pub fn whole_seconds(t: Millis) -> u64 {
    t / 1000
}

/// An entity tag, as sent on the wire: quoted, e.g. `"0x8D0000000000003"` (with the quotes).
///
/// Equality and ordering ignore one pair of surrounding quotes (SPEC §0, "ETag values"),
/// so `ETag("\"0x1\"".into()) == ETag("0x1".into())`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ETag(pub String);

impl ETag {
    /// The ETag of version `version` of an item: `"0x8D"` followed by 14 upper-case hex
    /// digits, quoted. Distinct versions give distinct ETags, so as long as a resource's
    /// version never repeats, neither does its ETag (SPEC §1.4 E1).
    pub fn from_version(version: u64) -> ETag {
        ETag(format!("\"0x8D{version:014X}\""))
    }

    /// Wraps a value in quotes unless it is already quoted.
    pub fn quoted(value: &str) -> ETag {
        if value.len() >= 2 && value.starts_with('"') && value.ends_with('"') {
            ETag(value.to_string())
        } else {
            ETag(format!("\"{value}\""))
        }
    }

    /// The value without its surrounding quotes (what comparisons use).
    pub fn unquoted(&self) -> &str {
        let s = self.0.as_str();
        if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') {
            &s[1..s.len() - 1]
        } else {
            s
        }
    }
}

impl PartialEq for ETag {
    fn eq(&self, other: &Self) -> bool {
        self.unquoted() == other.unquoted()
    }
}

impl Eq for ETag {}

impl PartialOrd for ETag {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ETag {
    fn cmp(&self, other: &Self) -> Ordering {
        self.unquoted().cmp(other.unquoted())
    }
}

impl fmt::Display for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The value of an `If-Match` / `If-None-Match` header: `*` or a list of ETags.
///
/// An empty list counts as an absent header (Azurite treats an empty header the same way).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EtagMatch {
    /// `*`: any existing resource.
    Any,
    /// A comma-separated list of ETags. Writes accept at most one (SPEC §1.1.3);
    /// reads accept several: OR-ed in `If-Match`, AND-ed (none may match) in `If-None-Match`.
    Tags(Vec<ETag>),
}

impl EtagMatch {
    /// Whether `etag` is matched: always for `*`, otherwise iff it equals one of the tags.
    pub fn matches(&self, etag: &ETag) -> bool {
        match self {
            EtagMatch::Any => true,
            EtagMatch::Tags(tags) => tags.iter().any(|t| t == etag),
        }
    }

    /// Number of ETags in the header (`*` counts as one).
    pub fn len(&self) -> usize {
        match self {
            EtagMatch::Any => 1,
            EtagMatch::Tags(tags) => tags.len(),
        }
    }

    /// True for an empty list, which counts as an absent header.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The conditional headers of one request. `Default` = no conditions (unconditional:
/// last writer wins, SPEC §1.1.1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conditions {
    /// `If-Match`: proceed only if the current ETag matches.
    pub if_match: Option<EtagMatch>,
    /// `If-None-Match`: proceed only if the current ETag doesn't match; `*` = only if absent.
    pub if_none_match: Option<EtagMatch>,
    /// `If-Modified-Since` (compared at 1 s resolution).
    pub if_modified_since: Option<Millis>,
    /// `If-Unmodified-Since` (compared at 1 s resolution).
    pub if_unmodified_since: Option<Millis>,
}

impl Conditions {
    /// No conditions.
    pub fn none() -> Conditions {
        Conditions::default()
    }

    /// `If-Match: <etag>` (compare-and-swap).
    pub fn if_match(etag: ETag) -> Conditions {
        Conditions {
            if_match: Some(EtagMatch::Tags(vec![etag])),
            ..Conditions::default()
        }
    }

    /// `If-Match: *` (only if the resource exists).
    pub fn if_match_any() -> Conditions {
        Conditions {
            if_match: Some(EtagMatch::Any),
            ..Conditions::default()
        }
    }

    /// `If-None-Match: <etag>` (writes: only if changed; reads: 304 if unchanged).
    pub fn if_none_match(etag: ETag) -> Conditions {
        Conditions {
            if_none_match: Some(EtagMatch::Tags(vec![etag])),
            ..Conditions::default()
        }
    }

    /// `If-None-Match: *` (create only: only if the resource doesn't exist).
    pub fn if_none_match_any() -> Conditions {
        Conditions {
            if_none_match: Some(EtagMatch::Any),
            ..Conditions::default()
        }
    }

    /// `If-Modified-Since: t`.
    pub fn if_modified_since(t: Millis) -> Conditions {
        Conditions {
            if_modified_since: Some(t),
            ..Conditions::default()
        }
    }

    /// `If-Unmodified-Since: t`.
    pub fn if_unmodified_since(t: Millis) -> Conditions {
        Conditions {
            if_unmodified_since: Some(t),
            ..Conditions::default()
        }
    }

    /// True if no header is present (an empty ETag list counts as absent).
    pub fn is_empty(&self) -> bool {
        self.header_count() == 0
    }

    /// The `If-Match` header, if present and non-empty.
    fn im(&self) -> Option<&EtagMatch> {
        self.if_match.as_ref().filter(|m| !m.is_empty())
    }

    /// The `If-None-Match` header, if present and non-empty.
    fn inm(&self) -> Option<&EtagMatch> {
        self.if_none_match.as_ref().filter(|m| !m.is_empty())
    }

    /// Number of headers present (an empty ETag list counts as absent).
    pub fn header_count(&self) -> usize {
        usize::from(self.im().is_some())
            + usize::from(self.inm().is_some())
            + usize::from(self.if_modified_since.is_some())
            + usize::from(self.if_unmodified_since.is_some())
    }
}

/// Why a request's conditions stop it. Each maps to a status and an error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConditionFailure {
    /// 400 `MultipleConditionHeadersNotSupported`: an illegal combination (SPEC §1.1.3 step 1,
    /// or two dates on a read, §1.1.4).
    MultipleConditionHeadersNotSupported,
    /// 400 `UnsatisfiableCondition`: `If-None-Match: *` on a read (SPEC §1.1.4).
    UnsatisfiableCondition,
    /// 412 `ConditionNotMet`.
    ConditionNotMet,
    /// 304 Not Modified (reads only; no error code).
    NotModified,
    /// 409 `BlobAlreadyExists`: `If-None-Match: *` on an existing blob, for Put (SPEC §1.1.3, AMBIG-2).
    BlobAlreadyExists,
}

impl ConditionFailure {
    /// The HTTP status.
    pub fn status(self) -> u16 {
        match self {
            ConditionFailure::MultipleConditionHeadersNotSupported
            | ConditionFailure::UnsatisfiableCondition => 400,
            ConditionFailure::ConditionNotMet => 412,
            ConditionFailure::NotModified => 304,
            ConditionFailure::BlobAlreadyExists => 409,
        }
    }

    /// The `x-ms-error-code`, or `None` for 304.
    pub fn error_code(self) -> Option<&'static str> {
        match self {
            ConditionFailure::MultipleConditionHeadersNotSupported => {
                Some("MultipleConditionHeadersNotSupported")
            }
            ConditionFailure::UnsatisfiableCondition => Some("UnsatisfiableCondition"),
            ConditionFailure::ConditionNotMet => Some("ConditionNotMet"),
            ConditionFailure::NotModified => None,
            ConditionFailure::BlobAlreadyExists => Some("BlobAlreadyExists"),
        }
    }
}

/// What conditions are evaluated against: the current ETag and Last-Modified of an
/// existing resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Current<'a> {
    /// The current ETag.
    pub etag: &'a ETag,
    /// The current Last-Modified (ms; compared at 1 s resolution).
    pub last_modified: Millis,
}

/// Which kind of write is being evaluated; decides what `If-None-Match: *` on an existing
/// resource returns (SPEC §1.1.3, AMBIG-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WriteKind {
    /// Put Blob / Put Block List / Copy destination: `409 BlobAlreadyExists`.
    Put,
    /// Any other write (delete, set properties, ...): `412 ConditionNotMet`.
    Other,
}

/// SPEC §1.1.3 step 1, checked before any state is read: more than one ETag in
/// `If-Match` or `If-None-Match`, more than 2 headers, or a pair other than
/// `{If-Match, If-Unmodified-Since}` / `{If-None-Match, If-Modified-Since}`
/// → 400 `MultipleConditionHeadersNotSupported`.
pub fn validate_write(c: &Conditions) -> Result<(), ConditionFailure> {
    let bad = Err(ConditionFailure::MultipleConditionHeadersNotSupported);
    if c.im().is_some_and(|m| m.len() > 1) || c.inm().is_some_and(|m| m.len() > 1) {
        return bad;
    }
    match c.header_count() {
        0 | 1 => Ok(()),
        2 => {
            let im_ius = c.im().is_some() && c.if_unmodified_since.is_some();
            let inm_ims = c.inm().is_some() && c.if_modified_since.is_some();
            if im_ius || inm_ims {
                Ok(())
            } else {
                bad
            }
        }
        _ => bad,
    }
}

/// SPEC §1.1.3 step 2 (after [`validate_write`]): the first header present in the order
/// If-None-Match, If-Match, If-Modified-Since, If-Unmodified-Since decides; the other is
/// ignored. `current` is `None` for an absent resource.
///
/// `skip_if_match` is the seeded bug: the ETag comparison of `If-Match` always passes on an
/// existing resource (an absent resource still fails `If-Match` with 412).
pub fn evaluate_write(
    c: &Conditions,
    current: Option<Current<'_>>,
    kind: WriteKind,
    skip_if_match: bool,
) -> Result<(), ConditionFailure> {
    validate_write(c)?;
    let Some(cur) = current else {
        // Absent: If-None-Match (any value) proceeds; If-Match (also `*`) fails;
        // the dates are skipped.
        if c.inm().is_some() {
            return Ok(());
        }
        if c.im().is_some() {
            return Err(ConditionFailure::ConditionNotMet);
        }
        return Ok(());
    };
    if let Some(inm) = c.inm() {
        return match inm {
            EtagMatch::Any => Err(match kind {
                WriteKind::Put => ConditionFailure::BlobAlreadyExists,
                WriteKind::Other => ConditionFailure::ConditionNotMet,
            }),
            EtagMatch::Tags(_) if inm.matches(cur.etag) => Err(ConditionFailure::ConditionNotMet),
            EtagMatch::Tags(_) => Ok(()),
        };
    }
    if let Some(im) = c.im() {
        return if skip_if_match || im.matches(cur.etag) {
            Ok(())
        } else {
            Err(ConditionFailure::ConditionNotMet)
        };
    }
    let lm = whole_seconds(cur.last_modified);
    if let Some(t) = c.if_modified_since {
        return if lm <= whole_seconds(t) {
            Err(ConditionFailure::ConditionNotMet)
        } else {
            Ok(())
        };
    }
    if let Some(t) = c.if_unmodified_since {
        return if whole_seconds(t) < lm {
            Err(ConditionFailure::ConditionNotMet)
        } else {
            Ok(())
        };
    }
    Ok(())
}

/// SPEC §1.1.4, checked before any state is read: two date headers on a read
/// → 400 `MultipleConditionHeadersNotSupported`. Any other combination is allowed.
pub fn validate_read(c: &Conditions) -> Result<(), ConditionFailure> {
    if c.if_modified_since.is_some() && c.if_unmodified_since.is_some() {
        return Err(ConditionFailure::MultipleConditionHeadersNotSupported);
    }
    Ok(())
}

/// SPEC §1.1.4 (after [`validate_read`]; order of checks as Azurite's
/// `ReadConditionalHeadersValidator`): `If-Match && If-Unmodified-Since &&
/// (If-None-Match || If-Modified-Since)`.
///
/// * absent: `If-Match` present → 412; else `If-None-Match: *` → 400; else `Ok` (the
///   caller answers 404);
/// * existing: `If-None-Match: *` → 400; `If-Match` or `If-Unmodified-Since` false → 412;
///   `If-None-Match` false and `If-Modified-Since` not true, or `If-Modified-Since` false
///   and `If-None-Match` not true → 304; else `Ok` (200).
pub fn evaluate_read(c: &Conditions, current: Option<Current<'_>>) -> Result<(), ConditionFailure> {
    validate_read(c)?;
    let Some(cur) = current else {
        if c.im().is_some() {
            return Err(ConditionFailure::ConditionNotMet);
        }
        if matches!(c.inm(), Some(EtagMatch::Any)) {
            return Err(ConditionFailure::UnsatisfiableCondition);
        }
        return Ok(());
    };
    if matches!(c.inm(), Some(EtagMatch::Any)) {
        return Err(ConditionFailure::UnsatisfiableCondition);
    }
    let lm = whole_seconds(cur.last_modified);
    let im_pass = c.im().map(|m| m.matches(cur.etag));
    let ius_pass = c.if_unmodified_since.map(|t| lm <= whole_seconds(t));
    let inm_pass = c.inm().map(|m| !m.matches(cur.etag));
    let ims_pass = c.if_modified_since.map(|t| whole_seconds(t) < lm);
    if im_pass == Some(false) || ius_pass == Some(false) {
        return Err(ConditionFailure::ConditionNotMet);
    }
    if inm_pass == Some(false) && ims_pass != Some(true) {
        return Err(ConditionFailure::NotModified);
    }
    if ims_pass == Some(false) && inm_pass != Some(true) {
        return Err(ConditionFailure::NotModified);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cur(etag: &ETag, last_modified: Millis) -> Option<Current<'_>> {
        Some(Current {
            etag,
            last_modified,
        })
    }

    #[test]
    fn etag_order_and_display_ignore_quotes_consistently() {
        let a = ETag::quoted("0x1");
        let b = ETag("0x1".into());
        assert_eq!(a.cmp(&b), Ordering::Equal);
        assert!(ETag::from_version(1) < ETag::from_version(2));
        assert_eq!(a.to_string(), "\"0x1\"");
        assert_eq!(ETag("\"".into()).unquoted(), "\"");
    }

    #[test]
    fn failure_status_and_codes() {
        use ConditionFailure::*;
        let table = [
            (
                MultipleConditionHeadersNotSupported,
                400,
                Some("MultipleConditionHeadersNotSupported"),
            ),
            (UnsatisfiableCondition, 400, Some("UnsatisfiableCondition")),
            (ConditionNotMet, 412, Some("ConditionNotMet")),
            (NotModified, 304, None),
            (BlobAlreadyExists, 409, Some("BlobAlreadyExists")),
        ];
        for (f, status, code) in table {
            assert_eq!((f.status(), f.error_code()), (status, code));
        }
    }

    #[test]
    fn header_count_ignores_empty_lists() {
        let c = Conditions {
            if_match: Some(EtagMatch::Tags(vec![])),
            ..Conditions::default()
        };
        assert!(c.is_empty());
        assert_eq!(validate_write(&c), Ok(()));
        assert_eq!(evaluate_write(&c, None, WriteKind::Put, false), Ok(()));
        assert_eq!(evaluate_read(&c, None), Ok(()));
    }

    #[test]
    fn star_on_existing_depends_on_the_write_kind() {
        let e = ETag::from_version(1);
        let c = Conditions::if_none_match_any();
        assert_eq!(
            evaluate_write(&c, cur(&e, 0), WriteKind::Put, false),
            Err(ConditionFailure::BlobAlreadyExists)
        );
        assert_eq!(
            evaluate_write(&c, cur(&e, 0), WriteKind::Other, false),
            Err(ConditionFailure::ConditionNotMet)
        );
    }

    #[test]
    fn skip_if_match_only_skips_the_comparison() {
        let e = ETag::from_version(1);
        let c = Conditions::if_match(ETag::from_version(9));
        assert_eq!(evaluate_write(&c, cur(&e, 0), WriteKind::Put, true), Ok(()));
        assert_eq!(
            evaluate_write(&c, None, WriteKind::Put, true),
            Err(ConditionFailure::ConditionNotMet)
        );
        // reads are not affected by the bug (it is a write-path bug)
        assert_eq!(
            evaluate_read(&c, cur(&e, 0)),
            Err(ConditionFailure::ConditionNotMet)
        );
    }
}
