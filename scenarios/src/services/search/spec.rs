//! The reference spec of one Search resource (SPEC §1.2, AMBIG-4, AMBIG-5),
//! small and written from SPEC, not from the model's code: a definition
//! (absent, or a kind and a set of entries) and a version that every
//! successful PUT or DELETE raises by one. Statuses are outputs:
//! mismatched `If-Match` (also on an absent resource) → 412; `If-None-Match:
//! *` on an existing resource → 412; an index update that drops a field →
//! 400; no header → last writer wins; DELETE of an absent resource → 404.
//! A 409 (another update in flight) changes nothing and may come in any
//! state: whether an update was in flight is timing, not state.

use overcast_sim::lin::{Claim, Next, Spec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A precondition with ETags turned into versions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cond {
    /// `*`.
    Any,
    /// The ETag of this version.
    Version(u64),
}

/// What a client asked of one resource.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SearchOp {
    /// GET.
    Get,
    /// PUT a whole definition.
    Put {
        /// `index` or `synonym_map`.
        kind: String,
        /// The entries.
        entries: BTreeSet<String>,
        /// `If-Match`.
        if_match: Option<Cond>,
        /// `If-None-Match`.
        if_none_match: Option<Cond>,
    },
    /// DELETE.
    Delete {
        /// `If-Match`.
        if_match: Option<Cond>,
    },
}

/// What the client saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SearchResult {
    /// GET 200: these entries at this version.
    Found(BTreeSet<String>, u64),
    /// 404.
    NotFound,
    /// PUT 200/201 (new version) or DELETE 204.
    Ok(Option<u64>),
    /// 412.
    PreconditionFailed,
    /// 400.
    BadRequest,
    /// 409: another update in flight.
    Busy,
}

/// A definition (kind, entries) if present, and the version.
pub type SearchState = (Option<(String, BTreeSet<String>)>, u64);

/// The spec (every resource starts absent at version 0).
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchSpec;

impl SearchSpec {
    fn holds(c: &Cond, s: &SearchState) -> bool {
        s.0.is_some()
            && match c {
                Cond::Any => true,
                Cond::Version(v) => s.1 == *v,
            }
    }

    /// The answer in `s` and the state after (`None`: no change).
    fn answer(op: &SearchOp, s: &SearchState) -> (SearchResult, Option<SearchState>) {
        use SearchResult as R;
        match op {
            SearchOp::Get => match &s.0 {
                Some((_, e)) => (R::Found(e.clone(), s.1), None),
                None => (R::NotFound, None),
            },
            SearchOp::Put {
                kind,
                entries,
                if_match,
                if_none_match,
            } => {
                if if_match.as_ref().is_some_and(|c| !Self::holds(c, s))
                    || if_none_match.as_ref().is_some_and(|c| Self::holds(c, s))
                {
                    return (R::PreconditionFailed, None);
                }
                if let Some((k, e)) = &s.0 {
                    if k != kind || (k == "index" && !e.is_subset(entries)) {
                        return (R::BadRequest, None);
                    }
                }
                (
                    R::Ok(Some(s.1 + 1)),
                    Some((Some((kind.clone(), entries.clone())), s.1 + 1)),
                )
            }
            SearchOp::Delete { if_match } => {
                if if_match.as_ref().is_some_and(|c| !Self::holds(c, s)) {
                    return (R::PreconditionFailed, None);
                }
                if s.0.is_none() {
                    return (R::NotFound, None);
                }
                (R::Ok(None), Some((None, s.1 + 1)))
            }
        }
    }
}

impl Spec for SearchSpec {
    type State = SearchState;
    type Input = SearchOp;
    type Output = SearchResult;

    fn init(&self, _key: &str) -> SearchState {
        (None, 0)
    }

    fn step(
        &self,
        s: &SearchState,
        op: &SearchOp,
        out: Option<&SearchResult>,
    ) -> Next<SearchState> {
        let (expected, next) = Self::answer(op, s);
        let next = || next.clone().unwrap_or_else(|| s.clone());
        match out {
            None => Next::One(next()),
            Some(SearchResult::Busy) if !matches!(op, SearchOp::Get) => Next::One(s.clone()),
            Some(SearchResult::Ok(None)) if matches!(expected, SearchResult::Ok(_)) => {
                Next::One(next())
            }
            Some(o) if *o == expected => Next::One(next()),
            Some(_) => Next::Illegal,
        }
    }

    fn is_read_only(&self, op: &SearchOp, out: Option<&SearchResult>) -> bool {
        matches!(op, SearchOp::Get) || out.is_some_and(|r| !matches!(r, SearchResult::Ok(_)))
    }

    fn version_of(&self, s: &SearchState) -> Option<u64> {
        Some(s.1)
    }

    fn claim(&self, op: &SearchOp, out: &SearchResult) -> Claim {
        match (op, out) {
            (_, SearchResult::Found(_, v)) => Claim::At(*v),
            (_, SearchResult::Ok(Some(v))) => Claim::Produced(*v),
            (
                SearchOp::Delete {
                    if_match: Some(Cond::Version(v)),
                },
                SearchResult::Ok(None),
            ) => Claim::Produced(v + 1),
            _ => Claim::None,
        }
    }

    fn describe_op(&self, op: &SearchOp, out: Option<&SearchResult>) -> String {
        let cond = |name: &str, c: &Option<Cond>| match c {
            None => String::new(),
            Some(Cond::Any) => format!(" {name} *"),
            Some(Cond::Version(v)) => format!(" {name} version {v}"),
        };
        let asked = match op {
            SearchOp::Get => "get".to_string(),
            SearchOp::Put {
                kind,
                entries,
                if_match,
                if_none_match,
            } => format!(
                "put {kind} [{}]{}{}",
                entries_words(entries),
                cond("If-Match", if_match),
                cond("If-None-Match", if_none_match)
            ),
            SearchOp::Delete { if_match } => format!("delete{}", cond("If-Match", if_match)),
        };
        let seen = match out {
            None => "unknown outcome".to_string(),
            Some(SearchResult::Found(e, v)) => format!("200 [{}] version {v}", entries_words(e)),
            Some(SearchResult::NotFound) => "404".to_string(),
            Some(SearchResult::Ok(Some(v))) => format!("200 version {v}"),
            Some(SearchResult::Ok(None)) => "204".to_string(),
            Some(SearchResult::PreconditionFailed) => "412".to_string(),
            Some(SearchResult::BadRequest) => "400".to_string(),
            Some(SearchResult::Busy) => "409".to_string(),
        };
        format!("{asked} → {seen}")
    }

    fn describe_state(&self, s: &SearchState) -> String {
        match &s.0 {
            None => format!("absent (version {})", s.1),
            Some((kind, e)) => format!("{kind} [{}] (version {})", entries_words(e), s.1),
        }
    }
}

/// A definition's entries (an index's fields, a synonym map's rules) in words.
fn entries_words(e: &BTreeSet<String>) -> String {
    e.iter().cloned().collect::<Vec<_>>().join(", ")
}
