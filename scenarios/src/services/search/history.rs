//! Search calls and outcomes as they appear in overcast's history files.

use crate::kit::words::conditions_words;
use overcast_harness::report::call_words;
use overcast_model::client::CallResult;
use overcast_model::conditions::EtagMatch;
use overcast_model::retry::FinalOutcome;
use overcast_model::search::{ResourceKind, SearchRequest, SearchResponse};
use overcast_sim::timeline::Tone;
use serde::{Deserialize, Serialize};

/// A call to the Search service, as it went on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// `get`, `put` or `delete`.
    pub op: String,
    /// The resource name.
    pub name: String,
    /// `index` or `synonym_map` (puts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The entries written (puts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<String>,
    /// `If-Match` (an ETag or `*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_match: Option<String>,
    /// `If-None-Match` (an ETag or `*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_none_match: Option<String>,
    /// The entry the application added in this update (the seed's story).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added: Option<String>,
}

fn header(m: &Option<EtagMatch>) -> Option<String> {
    m.as_ref().map(|m| match m {
        EtagMatch::Any => "*".to_string(),
        EtagMatch::Tags(t) => t.iter().map(|e| e.0.clone()).collect::<Vec<_>>().join(", "),
    })
}

/// The history name of a kind.
pub fn kind_name(k: ResourceKind) -> &'static str {
    match k {
        ResourceKind::Index => "index",
        ResourceKind::SynonymMap => "synonym_map",
    }
}

impl Call {
    /// The history form of a request; `added` names the application's new entry.
    pub fn from_request(r: &SearchRequest, added: Option<String>) -> Call {
        let mut call = Call {
            op: String::new(),
            name: r.name().to_string(),
            kind: None,
            entries: Vec::new(),
            if_match: None,
            if_none_match: None,
            added,
        };
        match r {
            SearchRequest::Get { .. } => call.op = "get".into(),
            SearchRequest::Put {
                kind,
                entries,
                if_match,
                if_none_match,
                ..
            } => {
                call.op = "put".into();
                call.kind = Some(kind_name(*kind).into());
                call.entries = entries.iter().cloned().collect();
                call.if_match = header(if_match);
                call.if_none_match = header(if_none_match);
            }
            SearchRequest::Delete { if_match, .. } => {
                call.op = "delete".into();
                call.if_match = header(if_match);
            }
        }
        call
    }
}

/// What the caller saw (an unknown outcome is no outcome at all).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    /// The HTTP status.
    pub status: u16,
    /// ETag (GET: current; PUT: new).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The version behind the ETag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// Kind and entries of the definition returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The entries of the definition returned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<String>,
}

impl Outcome {
    /// The history form of a call's result; `None` for an unknown outcome.
    pub fn from_result(r: &CallResult<SearchResponse>) -> Option<Outcome> {
        match r.outcome {
            // The workload never cancels a call: a cancelled one would be unknown too.
            FinalOutcome::Unknown { .. } | FinalOutcome::Cancelled { .. } => None,
            FinalOutcome::Response { status } => {
                let res = r.response.as_ref().and_then(|x| x.resource.as_ref());
                Some(Outcome {
                    status,
                    etag: res.map(|x| x.etag.0.clone()),
                    version: res.map(|x| x.version),
                    kind: res.map(|x| kind_name(x.kind).to_string()),
                    entries: res
                        .map(|x| x.entries.iter().cloned().collect())
                        .unwrap_or_default(),
                })
            }
        }
    }
}

/// A call in a few words: `put hotels +e7 If-Match …0002 → 412`.
pub fn words(call: &Call, result: Option<&Outcome>) -> (String, Tone) {
    let added = call
        .added
        .as_ref()
        .map_or(String::new(), |a| format!(" +{a}"));
    let asked = format!(
        "{} {}{added}{}",
        call.op,
        call.name,
        conditions_words(call.if_match.as_deref(), call.if_none_match.as_deref())
    );
    let seen = result.map(|r| {
        let mut seen = r.status.to_string();
        if let Some(v) = r.version {
            seen += &format!(" v{v} ({} entries)", r.entries.len());
        }
        (r.status, seen)
    });
    call_words(asked, seen)
}
