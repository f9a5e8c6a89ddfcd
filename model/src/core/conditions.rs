//! Conditional request headers (SPEC §1.1.2–§1.1.4): ETags, `If-Match`, `If-None-Match`,
//! `If-Modified-Since`, `If-Unmodified-Since`, and their pure evaluation for writes and reads.
//!
//! The store ([`crate::services::store`]) uses these; they are separate so that other resources
//! (leases, lease documents) can evaluate the same headers the same way.

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

/// A clock reading in milliseconds, handed in by the caller (the server's clock).
pub type Millis = u64;

/// Truncates a clock reading to whole seconds: `Last-Modified` and the
/// `If-(Un)Modified-Since` dates compare at 1 s resolution (SPEC §0, "Clock granularity").
pub(crate) fn whole_seconds(t: Millis) -> u64 {
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
    /// `If-Modified-Since`: the dates the header lists (compared at 1 s resolution). One
    /// date is the only valid form: several → 400 (SPEC §1.1.4); an empty list counts as
    /// an absent header.
    pub if_modified_since: Option<Vec<Millis>>,
    /// `If-Unmodified-Since`, listed the same way as `if_modified_since`.
    pub if_unmodified_since: Option<Vec<Millis>>,
    /// `x-ms-lease-id` on a read, write or delete (SPEC §2.5): not a condition header
    /// (it is never counted or evaluated here) but sent with them, as the SDKs'
    /// request conditions carry it. The store's lease check (step 2) judges it.
    #[serde(default)]
    pub lease_id: Option<String>,
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
            if_modified_since: Some(vec![t]),
            ..Conditions::default()
        }
    }

    /// `If-Unmodified-Since: t`.
    pub fn if_unmodified_since(t: Millis) -> Conditions {
        Conditions {
            if_unmodified_since: Some(vec![t]),
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

    /// The `If-Modified-Since` header's dates, if present and non-empty.
    fn ims_values(&self) -> Option<&[Millis]> {
        self.if_modified_since.as_deref().filter(|d| !d.is_empty())
    }

    /// The `If-Unmodified-Since` header's dates, if present and non-empty.
    fn ius_values(&self) -> Option<&[Millis]> {
        self.if_unmodified_since
            .as_deref()
            .filter(|d| !d.is_empty())
    }

    /// The `If-Modified-Since` date, if the header is present (the first value; the
    /// validators reject a header with several before anything is evaluated).
    fn ims(&self) -> Option<Millis> {
        self.ims_values().map(|d| d[0])
    }

    /// The `If-Unmodified-Since` date, if the header is present (see [`Conditions::ims`]).
    fn ius(&self) -> Option<Millis> {
        self.ius_values().map(|d| d[0])
    }

    /// True if a date header lists more than one date (400, SPEC §1.1.4).
    fn several_dates(&self) -> bool {
        self.ims_values().is_some_and(|d| d.len() > 1)
            || self.ius_values().is_some_and(|d| d.len() > 1)
    }

    /// Number of headers present (an empty ETag or date list counts as absent).
    pub fn header_count(&self) -> usize {
        usize::from(self.im().is_some())
            + usize::from(self.inm().is_some())
            + usize::from(self.ims().is_some())
            + usize::from(self.ius().is_some())
    }
}

/// Why a request's conditions stop it. Each maps to a status and an error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum ConditionFailure {
    /// 400 `MultipleConditionHeadersNotSupported`: an illegal combination (SPEC §1.1.3 step 1),
    /// or several values inside one date header (§1.1.4 gives only the status, 400; the
    /// model answers with this code, as it does for several ETags on a write).
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
pub(crate) struct Current<'a> {
    /// The current ETag.
    pub etag: &'a ETag,
    /// The current Last-Modified (ms; compared at 1 s resolution).
    pub last_modified: Millis,
}

/// Which kind of write is being evaluated; decides what `If-None-Match: *` on an existing
/// resource returns (SPEC §1.1.3, AMBIG-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum WriteKind {
    /// Put Blob / Put Block List / Copy destination: `409 BlobAlreadyExists`.
    Put,
    /// Any other write (delete, set properties, ...): `412 ConditionNotMet`.
    Other,
}

/// SPEC §1.1.3 step 1, checked before any state is read: more than one ETag in
/// `If-Match` or `If-None-Match` (or more than one date in a date header), more than 2
/// headers, or a pair other than `{If-Match, If-Unmodified-Since}` /
/// `{If-None-Match, If-Modified-Since}` → 400 `MultipleConditionHeadersNotSupported`.
pub(crate) fn validate_write(c: &Conditions) -> Result<(), ConditionFailure> {
    let bad = Err(ConditionFailure::MultipleConditionHeadersNotSupported);
    if c.im().is_some_and(|m| m.len() > 1)
        || c.inm().is_some_and(|m| m.len() > 1)
        || c.several_dates()
    {
        return bad;
    }
    match c.header_count() {
        0 | 1 => Ok(()),
        2 => {
            let im_ius = c.im().is_some() && c.ius().is_some();
            let inm_ims = c.inm().is_some() && c.ims().is_some();
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
/// On an absent resource `If-None-Match` proceeds, `If-Match` (also `*`) fails with 412
/// and the dates are skipped. "`If-Match` on a missing blob → 412" is confirmed for creating
/// writes (SPEC §1.1.5); the model evaluates conditions before existence for every write, as
/// Azurite does, so a delete gets the same 412.
///
/// `skip_if_match` is the seeded bug: the ETag comparison of `If-Match` always passes on an
/// existing resource (an absent resource still fails `If-Match` with 412).
pub(crate) fn evaluate_write(
    c: &Conditions,
    current: Option<Current<'_>>,
    kind: WriteKind,
    skip_if_match: bool,
) -> Result<(), ConditionFailure> {
    validate_write(c)?;
    let Some(cur) = current else {
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
    if let Some(t) = c.ims() {
        return if lm <= whole_seconds(t) {
            Err(ConditionFailure::ConditionNotMet)
        } else {
            Ok(())
        };
    }
    if let Some(t) = c.ius() {
        return if whole_seconds(t) < lm {
            Err(ConditionFailure::ConditionNotMet)
        } else {
            Ok(())
        };
    }
    Ok(())
}

/// SPEC §1.1.4, checked before any state is read: several values inside one date header
/// → 400 `MultipleConditionHeadersNotSupported`. Any combination of headers is allowed,
/// both date headers together included.
pub(crate) fn validate_read(c: &Conditions) -> Result<(), ConditionFailure> {
    if c.several_dates() {
        return Err(ConditionFailure::MultipleConditionHeadersNotSupported);
    }
    Ok(())
}

/// SPEC §1.1.4 (after [`validate_read`]): `If-Match && If-Unmodified-Since &&
/// (If-None-Match || If-Modified-Since)`, with the statuses of the live service.
///
/// * `If-None-Match: *` → 400 `UnsatisfiableCondition`, whether or not the blob exists;
/// * absent: `Ok` otherwise: the caller answers 404 `BlobNotFound`, also when `If-Match`
///   is present (the live service's answer to GET and HEAD; Azurite's 412 is a known
///   divergence);
/// * existing: `If-Match` or `If-Unmodified-Since` false → 412; `If-None-Match` false and
///   `If-Modified-Since` not true, or `If-Modified-Since` false and `If-None-Match` not
///   true → 304; else `Ok` (200).
pub(crate) fn evaluate_read(
    c: &Conditions,
    current: Option<Current<'_>>,
) -> Result<(), ConditionFailure> {
    validate_read(c)?;
    if matches!(c.inm(), Some(EtagMatch::Any)) {
        return Err(ConditionFailure::UnsatisfiableCondition);
    }
    let Some(cur) = current else {
        return Ok(());
    };
    let lm = whole_seconds(cur.last_modified);
    let im_pass = c.im().map(|m| m.matches(cur.etag));
    let ius_pass = c.ius().map(|t| lm <= whole_seconds(t));
    let inm_pass = c.inm().map(|m| !m.matches(cur.etag));
    let ims_pass = c.ims().map(|t| whole_seconds(t) < lm);
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

    #[test]
    fn spec_1_1_4_a_read_of_a_missing_blob_with_if_match_is_left_to_the_caller_for_404() {
        // SPEC §1.1.4 row "Resource absent and If-Match present" → 404 BlobNotFound (the
        // store answers it); no condition failure, for an ETag and for `*`.
        for c in [
            Conditions::if_match(ETag::from_version(3)),
            Conditions::if_match_any(),
        ] {
            assert_eq!(evaluate_read(&c, None), Ok(()));
        }
        // If-None-Match: * is still 400 on a missing blob, also next to If-Match.
        let c = Conditions {
            if_match: Some(EtagMatch::Any),
            if_none_match: Some(EtagMatch::Any),
            ..Conditions::default()
        };
        assert_eq!(
            evaluate_read(&c, None),
            Err(ConditionFailure::UnsatisfiableCondition)
        );
    }

    #[test]
    fn spec_1_1_4_several_values_inside_one_date_header_are_400_for_reads_and_writes() {
        let e = ETag::from_version(1);
        let bad = Err(ConditionFailure::MultipleConditionHeadersNotSupported);
        for c in [
            Conditions {
                if_modified_since: Some(vec![1_000, 2_000]),
                ..Conditions::default()
            },
            Conditions {
                if_unmodified_since: Some(vec![1_000, 1_000]),
                ..Conditions::default()
            },
        ] {
            assert_eq!(validate_read(&c), bad);
            assert_eq!(evaluate_read(&c, cur(&e, 0)), bad);
            assert_eq!(evaluate_read(&c, None), bad);
            assert_eq!(validate_write(&c), bad);
            assert_eq!(evaluate_write(&c, None, WriteKind::Put, false), bad);
        }
        // one value, and an empty list (an absent header), are fine
        let one = Conditions::if_modified_since(1_000);
        assert_eq!(validate_read(&one), Ok(()));
        assert_eq!(validate_write(&one), Ok(()));
        let empty = Conditions {
            if_unmodified_since: Some(vec![]),
            ..Conditions::default()
        };
        assert!(empty.is_empty());
        assert_eq!(validate_read(&empty), Ok(()));
    }

    #[test]
    fn spec_1_1_4_both_date_headers_on_a_read_are_legal_and_both_count() {
        let e = ETag::from_version(1);
        // Last-Modified second 10.
        let both = |ims: Millis, ius: Millis| Conditions {
            if_modified_since: Some(vec![ims]),
            if_unmodified_since: Some(vec![ius]),
            ..Conditions::default()
        };
        assert_eq!(validate_read(&both(1, 1)), Ok(()));
        // modified since 9 s and not after 20 s: 200
        assert_eq!(evaluate_read(&both(9_000, 20_000), cur(&e, 10_500)), Ok(()));
        // If-Unmodified-Since false wins: 412
        assert_eq!(
            evaluate_read(&both(9_000, 9_000), cur(&e, 10_500)),
            Err(ConditionFailure::ConditionNotMet)
        );
        // If-Modified-Since false (same second): 304
        assert_eq!(
            evaluate_read(&both(10_000, 20_000), cur(&e, 10_500)),
            Err(ConditionFailure::NotModified)
        );
        // absent: the dates are skipped (the caller answers 404)
        assert_eq!(evaluate_read(&both(9_000, 9_000), None), Ok(()));
        // writes still reject the pair (SPEC §1.1.3 step 1)
        assert_eq!(
            validate_write(&both(1, 1)),
            Err(ConditionFailure::MultipleConditionHeadersNotSupported)
        );
    }

    #[test]
    fn spec_1_1_5_if_match_on_a_missing_blob_is_412_for_writes() {
        // Confirmed for creating writes (Put Blob); the model's order (conditions before
        // existence) gives the same 412 to a delete.
        for c in [
            Conditions::if_match(ETag::from_version(3)),
            Conditions::if_match_any(),
        ] {
            for kind in [WriteKind::Put, WriteKind::Other] {
                assert_eq!(
                    evaluate_write(&c, None, kind, false),
                    Err(ConditionFailure::ConditionNotMet)
                );
            }
        }
    }
}
