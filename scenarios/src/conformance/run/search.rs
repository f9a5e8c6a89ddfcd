//! Search steps (SPEC §1.2): the `SearchRequest` of `search_get`,
//! `search_put`, `search_delete`, in the REST form as written or built by the
//! model's Search SDK client (`only_if_unchanged` with `held_etag`), and the
//! request as a line.

use super::{describe_match, etag_header, one_etag, target, State, Target};
use crate::conformance::format::{SearchOp, Step};
use overcast_model::client::StoreClient;
use overcast_model::conditions::EtagMatch;
use overcast_model::search::{ResourceKind, SearchRequest};
use overcast_model::search_client::{Definition, SearchClient};
use std::collections::BTreeSet;

/// The Search request of a Search step, and the resource it addresses.
pub(super) fn request(
    step: &Step,
    state: &State,
    client: &mut StoreClient,
) -> Result<(SearchRequest, Target), String> {
    match step {
        Step::SearchGet(s) | Step::SearchPut(s) | Step::SearchDelete(s) => {
            let (request, name) = search_request(step.kind(), s, state, client)?;
            Ok((request, target(format!("search:{name}"))))
        }
        _ => Err("not a Search step".into()),
    }
}

/// A Search request as a line.
pub(super) fn describe(kind: &str, r: &SearchRequest) -> String {
    match r {
        SearchRequest::Get { name } => format!("{kind} {name}"),
        SearchRequest::Put {
            name,
            entries,
            if_match,
            if_none_match,
            ..
        } => {
            let list: Vec<&str> = entries.iter().map(String::as_str).collect();
            format!(
                "{kind} {name} [{}]{}{}",
                list.join(", "),
                describe_match("If-Match", if_match.as_ref()),
                describe_match("If-None-Match", if_none_match.as_ref())
            )
        }
        SearchRequest::Delete { name, if_match } => format!(
            "{kind} {name}{}",
            describe_match("If-Match", if_match.as_ref())
        ),
    }
}

/// A Search request: the REST form as written, or the SDK's (`only_if_unchanged`
/// with `held_etag`) built by the model's Search client.
fn search_request(
    kind: &str,
    s: &SearchOp,
    state: &State,
    client: &mut StoreClient,
) -> Result<(SearchRequest, String), String> {
    let (name, resource_kind, entries) = match (&s.index, &s.synonym_map) {
        (Some(n), _) => (n.clone(), ResourceKind::Index, s.fields.clone()),
        (None, Some(n)) => (n.clone(), ResourceKind::SynonymMap, s.synonyms.clone()),
        (None, None) => return Err("no resource named".into()),
    };
    let entries: BTreeSet<String> = entries.unwrap_or_default().into_iter().collect();
    let header = |v: &Option<String>| -> Result<Option<EtagMatch>, String> {
        v.as_deref().map(|v| etag_header(v, state)).transpose()
    };
    if s.only_if_unchanged.is_some() || s.held_etag.is_some() {
        let definition = Definition {
            name: name.clone(),
            kind: resource_kind,
            entries,
            etag: s
                .held_etag
                .as_deref()
                .map(|v| one_etag(v, state))
                .transpose()?,
        };
        let only = s.only_if_unchanged.unwrap_or(false);
        let sdk = SearchClient::new(client);
        let request = match kind {
            "search_put" => sdk.create_or_update_request(&definition, only),
            _ => sdk.delete_request(&definition, only),
        };
        return Ok((request, name));
    }
    let request = match kind {
        "search_get" => SearchRequest::Get { name: name.clone() },
        "search_put" => SearchRequest::Put {
            name: name.clone(),
            kind: resource_kind,
            entries,
            if_match: header(&s.if_match)?,
            if_none_match: header(&s.if_none_match)?,
        },
        _ => SearchRequest::Delete {
            name: name.clone(),
            if_match: header(&s.if_match)?,
        },
    };
    Ok((request, name))
}
