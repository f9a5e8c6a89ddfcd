//! The Azure AI Search client for resource definitions (SPEC §1.2): GET,
//! `CreateOrUpdate` with the SDK's `onlyIfUnchanged` switch and delete, on
//! top of [`StoreClient::request`] (the SDK's retry rules).
//!
//! As the .NET SDK: `CreateOrUpdate(resource, onlyIfUnchanged)` sends
//! `If-Match: <the resource's ETag>` only when `onlyIfUnchanged` is true (its
//! documented default is false) and never sends `If-None-Match`.

use crate::core::bugs::ModelBugs;
use crate::core::conditions::{ETag, EtagMatch};
use crate::partition::{Request, Response};
use crate::sdk::client::{CallResult, StoreClient};
use crate::services::search::{ResourceKind, SearchRequest, SearchResponse};
use std::collections::BTreeSet;

/// A resource definition as the application holds it: what it read (with
/// the ETag the service returned) or built (no ETag yet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Definition {
    /// The resource name.
    pub name: String,
    /// Its kind.
    pub kind: ResourceKind,
    /// Fields or rules.
    pub entries: BTreeSet<String>,
    /// The ETag from the service (`None` for a definition never sent).
    pub etag: Option<ETag>,
}

/// The Search client, borrowing the node's SDK client.
pub struct SearchClient<'a> {
    client: &'a mut StoreClient,
    bugs: ModelBugs,
}

/// The `If-Match` the SDK sends for a definition holding `etag`: the ETag
/// iff `only_if_unchanged` (and the SDK bug is off).
fn sent_if_match(
    bugs: ModelBugs,
    etag: Option<&ETag>,
    only_if_unchanged: bool,
) -> Option<EtagMatch> {
    let send = only_if_unchanged && !bugs.search_sdk_ignores_only_if_unchanged;
    etag.filter(|_| send)
        .map(|e| EtagMatch::Tags(vec![e.clone()]))
}

impl<'a> SearchClient<'a> {
    /// The client over `client` (it reads `search_sdk_ignores_only_if_unchanged`).
    pub fn new(client: &'a mut StoreClient) -> SearchClient<'a> {
        let bugs = client.bugs();
        SearchClient { client, bugs }
    }

    /// The request `CreateOrUpdate(definition, only_if_unchanged)` sends.
    pub fn create_or_update_request(
        &self,
        definition: &Definition,
        only_if_unchanged: bool,
    ) -> SearchRequest {
        SearchRequest::Put {
            name: definition.name.clone(),
            kind: definition.kind,
            entries: definition.entries.clone(),
            if_match: sent_if_match(self.bugs, definition.etag.as_ref(), only_if_unchanged),
            if_none_match: None,
        }
    }

    /// The request `CreateOrUpdate(definition)` sends with the SDK's default
    /// `onlyIfUnchanged: false`: no `If-Match`, last writer wins.
    pub fn create_or_update_default_request(&self, definition: &Definition) -> SearchRequest {
        self.create_or_update_request(definition, false)
    }

    /// The request of a create-only PUT (`If-None-Match: *`), as the REST API allows.
    pub fn create_request(&self, definition: &Definition) -> SearchRequest {
        SearchRequest::Put {
            name: definition.name.clone(),
            kind: definition.kind,
            entries: definition.entries.clone(),
            if_match: None,
            if_none_match: Some(EtagMatch::Any),
        }
    }

    /// The request `Delete(definition, only_if_unchanged)` sends.
    pub fn delete_request(
        &self,
        definition: &Definition,
        only_if_unchanged: bool,
    ) -> SearchRequest {
        SearchRequest::Delete {
            name: definition.name.clone(),
            if_match: sent_if_match(self.bugs, definition.etag.as_ref(), only_if_unchanged),
        }
    }

    /// The request of a GET.
    pub fn get_request(&self, name: &str) -> SearchRequest {
        SearchRequest::Get {
            name: name.to_string(),
        }
    }

    /// Sends any Search request with the SDK's retries.
    pub async fn send(&mut self, req: &SearchRequest) -> CallResult<SearchResponse> {
        let r = self.client.request(&Request::Search(req.clone())).await;
        r.map_response(Response::into_search)
    }
}

impl Definition {
    /// The definition a successful GET or PUT returned.
    pub fn from_response(name: &str, r: &SearchResponse) -> Option<Definition> {
        r.resource.as_ref().map(|res| Definition {
            name: name.to_string(),
            kind: res.kind,
            entries: res.entries.clone(),
            etag: Some(res.etag.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_match_goes_out_only_with_only_if_unchanged_and_an_etag() {
        let e = ETag::from_version(1);
        let ok = ModelBugs::default();
        assert_eq!(sent_if_match(ok, Some(&e), false), None);
        assert_eq!(sent_if_match(ok, None, true), None);
        assert_eq!(
            sent_if_match(ok, Some(&e), true),
            Some(EtagMatch::Tags(vec![e.clone()]))
        );
    }

    /// Builds a client in a simulated runtime (no server needed to build requests).
    fn with_client(bugs: ModelBugs, f: impl FnOnce(&SearchClient<'_>)) {
        let rt = madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default());
        rt.block_on(async move {
            let cfg = crate::sdk::client::ClientConfig {
                servers: vec!["10.0.0.1:1".parse().expect("an address")],
                partitions: 1,
                retry: crate::sdk::retry::RetryOptions::default(),
                bugs,
                send: Default::default(),
                connect: Default::default(),
            };
            let rng = Box::new(rand::rngs::mock::StepRng::new(0, 1));
            let mut client = StoreClient::connect(cfg, rng).await.expect("binds");
            f(&SearchClient::new(&mut client));
        });
    }

    fn sent(req: SearchRequest) -> (Option<EtagMatch>, Option<EtagMatch>) {
        match req {
            SearchRequest::Put {
                if_match,
                if_none_match,
                ..
            } => (if_match, if_none_match),
            SearchRequest::Delete { if_match, .. } => (if_match, None),
            SearchRequest::Get { .. } => (None, None),
        }
    }

    #[test]
    fn create_or_update_sends_the_read_etag_only_when_asked_and_never_if_none_match() {
        let e = ETag::from_version(4);
        let read = Definition {
            name: "hotels".into(),
            kind: ResourceKind::Index,
            entries: BTreeSet::new(),
            etag: Some(e.clone()),
        };
        with_client(ModelBugs::default(), |c| {
            let tag = Some(EtagMatch::Tags(vec![e.clone()]));
            assert_eq!(
                sent(c.create_or_update_default_request(&read)),
                (None, None)
            );
            assert_eq!(
                sent(c.create_or_update_request(&read, true)),
                (tag.clone(), None)
            );
            assert_eq!(sent(c.delete_request(&read, true)), (tag, None));
            assert_eq!(sent(c.create_request(&read)), (None, Some(EtagMatch::Any)));
        });
        let mut bug = ModelBugs::default();
        bug.set("search_sdk_ignores_only_if_unchanged");
        with_client(bug, |c| {
            assert_eq!(sent(c.create_or_update_request(&read, true)), (None, None));
        });
    }

    #[test]
    fn the_sdk_bug_never_sends_if_match() {
        let mut bug = ModelBugs::default();
        assert!(bug.set("search_sdk_ignores_only_if_unchanged"));
        assert_eq!(sent_if_match(bug, Some(&ETag::from_version(1)), true), None);
    }
}
