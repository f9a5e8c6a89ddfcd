//! The wire format between the client SDK and the server: serde types sent as
//! bincode in madsim datagrams (madsim's own RPC passes values without
//! serialising them, so we serialise ourselves to exercise the format).

use crate::store::{StoreRequest, StoreResponse};
use serde::{Deserialize, Serialize};

/// Datagram tag of requests.
pub const REQUEST_TAG: u64 = 1;
/// Datagram tag of responses.
pub const RESPONSE_TAG: u64 = 2;
/// Largest datagram either side reads.
pub const MAX_DATAGRAM: usize = 16 * 1024;

/// A request: the client's id for matching the answer, the partition, the operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireRequest {
    /// Unique per client; the response carries it back.
    pub req_id: u64,
    /// The partition the key routes to.
    pub partition: u32,
    /// The operation.
    pub op: StoreRequest,
}

/// The server's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireReply {
    /// The store executed the request.
    Store(StoreResponse),
    /// A transient error from a fault point: 429 (with retry-after), 449, 503 and
    /// 410 mean "not executed"; 408 means "may or may not have been executed".
    Transient {
        /// The status.
        status: u16,
        /// `x-ms-retry-after-ms` (429 only).
        retry_after_ms: Option<u64>,
    },
}

/// A response datagram.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireResponse {
    /// The request's id.
    pub req_id: u64,
    /// The answer.
    pub reply: WireReply,
}

/// Serialises a wire message.
pub fn to_bytes<T: Serialize>(msg: &T) -> Vec<u8> {
    bincode::serialize(msg).expect("wire types serialise")
}

/// Parses a wire message; `None` for bytes that are not one.
pub fn from_bytes<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Option<T> {
    bincode::deserialize(bytes).ok()
}

/// The partition a partition key routes to: a stable hash, so every client and
/// every run agree.
pub fn partition_of(partition_key: &str, partitions: u32) -> u32 {
    crc32fast::hash(partition_key.as_bytes()) % partitions.max(1)
}
