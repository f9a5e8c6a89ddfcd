//! The Cosmos DB item client (SPEC §1.3, §4): typed item and batch calls of
//! one container on top of [`StoreClient::request`], so they get the SDK's
//! retry rules (a batch is a write: never re-sent after it may have run).

use crate::core::conditions::ETag;
use crate::partition::{Request, Response};
use crate::sdk::client::{CallResult, StoreClient};
use crate::services::cosmos::{CosmosRequest, CosmosResponse, ItemOp};

/// One container's item client, borrowing the node's SDK client.
pub struct CosmosContainer<'a> {
    client: &'a mut StoreClient,
    container: String,
}

impl<'a> CosmosContainer<'a> {
    /// The client of `container` over `client`.
    pub fn new(client: &'a mut StoreClient, container: impl Into<String>) -> CosmosContainer<'a> {
        CosmosContainer {
            client,
            container: container.into(),
        }
    }

    /// The request for one item operation in this container.
    pub fn item_request(&self, partition_key: &str, op: ItemOp) -> CosmosRequest {
        CosmosRequest::Item {
            container: self.container.clone(),
            partition_key: partition_key.to_string(),
            op,
        }
    }

    /// The request for a transactional batch in this container.
    pub fn batch_request(&self, partition_key: &str, ops: Vec<ItemOp>) -> CosmosRequest {
        CosmosRequest::Batch {
            container: self.container.clone(),
            partition_key: partition_key.to_string(),
            ops,
        }
    }

    /// Sends any Cosmos request with the SDK's retries.
    pub async fn send(&mut self, req: &CosmosRequest) -> CallResult<CosmosResponse> {
        let r = self.client.request(&Request::Cosmos(req.clone())).await;
        r.map_response(Response::into_cosmos)
    }

    /// `CreateItemAsync`: 201, or 409 if the id exists.
    pub async fn create(&mut self, pk: &str, id: &str, body: &str) -> CallResult<CosmosResponse> {
        let op = ItemOp::Create {
            id: id.into(),
            body: body.into(),
        };
        self.send(&self.item_request(pk, op)).await
    }

    /// `ReadItemAsync` with an optional `IfNoneMatchEtag` (304 when unchanged).
    pub async fn read(
        &mut self,
        pk: &str,
        id: &str,
        if_none_match: Option<ETag>,
    ) -> CallResult<CosmosResponse> {
        let op = ItemOp::Read {
            id: id.into(),
            if_none_match,
        };
        self.send(&self.item_request(pk, op)).await
    }

    /// `ReplaceItemAsync` with an optional `IfMatchEtag`.
    pub async fn replace(
        &mut self,
        pk: &str,
        id: &str,
        body: &str,
        if_match: Option<ETag>,
    ) -> CallResult<CosmosResponse> {
        let op = ItemOp::Replace {
            id: id.into(),
            body: body.into(),
            if_match,
        };
        self.send(&self.item_request(pk, op)).await
    }

    /// `UpsertItemAsync` with an optional `IfMatchEtag` (applied only if the item exists).
    pub async fn upsert(
        &mut self,
        pk: &str,
        id: &str,
        body: &str,
        if_match: Option<ETag>,
    ) -> CallResult<CosmosResponse> {
        let op = ItemOp::Upsert {
            id: id.into(),
            body: body.into(),
            if_match,
        };
        self.send(&self.item_request(pk, op)).await
    }

    /// `DeleteItemAsync` with an optional `IfMatchEtag`.
    pub async fn delete(
        &mut self,
        pk: &str,
        id: &str,
        if_match: Option<ETag>,
    ) -> CallResult<CosmosResponse> {
        let op = ItemOp::Delete {
            id: id.into(),
            if_match,
        };
        self.send(&self.item_request(pk, op)).await
    }

    /// `CreateTransactionalBatch(pk)...ExecuteAsync()`: all or nothing.
    pub async fn batch(&mut self, pk: &str, ops: Vec<ItemOp>) -> CallResult<CosmosResponse> {
        self.send(&self.batch_request(pk, ops)).await
    }
}
