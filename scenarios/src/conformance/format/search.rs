//! Search steps: `search_get`, `search_put`, `search_delete` on an index or
//! a synonym map (SPEC §1.2), with the REST condition headers or the .NET
//! SDK's `onlyIfUnchanged`, and the checks of their parameters.

use super::{use_value, Expect, Kind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `search_get`, `search_put`, `search_delete`: a request on one resource,
/// named by `index` or `synonym_map` (exactly one). A PUT carries the whole
/// definition: `fields` for an index, `synonyms` (rules) for a synonym map.
///
/// Conditions come in two forms: the REST headers (`if_match`, and on PUT
/// `if_none_match`: `*` or one ETag), or the .NET SDK's switch
/// (`only_if_unchanged` with `held_etag`, the ETag of the definition object the
/// application holds; the SDK sends `If-Match: held_etag` only when
/// `only_if_unchanged` is true and the object has an ETag, and never sends
/// `If-None-Match`). The two forms do not mix.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchOp {
    /// An index name.
    #[serde(default)]
    pub index: Option<String>,
    /// A synonym map name.
    #[serde(default)]
    pub synonym_map: Option<String>,
    /// The index's fields (PUT of an index).
    #[serde(default)]
    pub fields: Option<Vec<String>>,
    /// The synonym map's rules (PUT of a synonym map).
    #[serde(default)]
    pub synonyms: Option<Vec<String>>,
    /// `If-Match`: `*` or one ETag (literal or `$name`).
    #[serde(default)]
    pub if_match: Option<String>,
    /// `If-None-Match` (PUT): `*` or one ETag.
    #[serde(default)]
    pub if_none_match: Option<String>,
    /// The SDK's `onlyIfUnchanged` (PUT and DELETE).
    #[serde(default)]
    pub only_if_unchanged: Option<bool>,
    /// The ETag of the definition the application holds (a `$name` or a literal;
    /// absent: an object never sent to the service, whose ETag is blank).
    #[serde(default)]
    pub held_etag: Option<String>,
    /// The expected answer.
    pub expect: Expect,
}

/// Checks a Search request's parameters against its kind.
pub(super) fn validate_search(
    op: &SearchOp,
    kind: &str,
    names: &BTreeMap<String, Kind>,
) -> Result<(), (&'static str, String)> {
    let is_index = match (&op.index, &op.synonym_map) {
        (Some(_), None) => true,
        (None, Some(_)) => false,
        _ => return Err(("index", "name exactly one of index, synonym_map".into())),
    };
    let put = kind == "search_put";
    match (put, is_index, &op.fields, &op.synonyms) {
        (true, true, None, _) => {
            return Err(("fields", "missing: an index PUT takes fields".into()))
        }
        (true, false, _, None) => {
            return Err((
                "synonyms",
                "missing: a synonym map PUT takes synonyms".into(),
            ))
        }
        (_, _, Some(_), _) if !(put && is_index) => {
            return Err(("fields", "only an index PUT takes fields".into()))
        }
        (_, _, _, Some(_)) if !put || is_index => {
            return Err(("synonyms", "only a synonym map PUT takes synonyms".into()))
        }
        _ => {}
    }
    if kind == "search_get"
        && (op.if_match.is_some() || op.only_if_unchanged.is_some() || op.held_etag.is_some())
    {
        return Err(("if_match", "search_get takes no conditions".into()));
    }
    if op.if_none_match.is_some() && !put {
        return Err(("if_none_match", "only a PUT takes if_none_match".into()));
    }
    let rest = op.if_match.is_some() || op.if_none_match.is_some();
    let sdk = op.only_if_unchanged.is_some() || op.held_etag.is_some();
    if rest && sdk {
        return Err((
            "only_if_unchanged",
            "the REST headers (if_match, if_none_match) and the SDK's switch (only_if_unchanged, held_etag) do not mix".into(),
        ));
    }
    for (f, v) in [
        ("if_match", &op.if_match),
        ("if_none_match", &op.if_none_match),
        ("held_etag", &op.held_etag),
    ] {
        if let Some(v) = v {
            if v.trim() == "*" && f != "held_etag" {
                continue;
            }
            use_value(names, v, Kind::Etag).map_err(|m| (f, m))?;
        }
    }
    Ok(())
}
