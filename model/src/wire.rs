//! The wire format between the client SDK and the server: serde types sent as
//! bincode in madsim datagrams (madsim's own RPC passes values without
//! serialising them, so we serialise ourselves to exercise the format). The
//! operation is a [`Request`] of any service and the answer a [`Response`], so
//! a new service needs no change here.

use crate::core::env::SendPolicy;
use crate::partition::{Request, Response};
use madsim::net::Endpoint;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::Arc;

/// Datagram tag of requests.
pub const REQUEST_TAG: u64 = 1;
/// Datagram tag of responses.
pub const RESPONSE_TAG: u64 = 2;
/// Largest datagram either side reads.
pub const MAX_DATAGRAM: usize = 16 * 1024;

/// A request: the client's id for matching the answer, the partition, the operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireRequest {
    /// Unique per attempt of a client connection; the response carries it back.
    pub req_id: u64,
    /// The partition the key routes to.
    pub partition: u32,
    /// The operation.
    pub op: Request,
    /// The SDK connection's session id, drawn at connect: with `req_id` it
    /// names one attempt, which the server executes at most once.
    pub session: u64,
    /// The logical operation this attempt belongs to: the same on every
    /// attempt of one SDK call (with `session` it names the operation), so a
    /// server can count the attempts of an operation it receives.
    pub op_id: u64,
    /// When the SDK sent this attempt: true simulated ns since the start of
    /// the run (the harness's stamp, not the client's skewed clock), so the
    /// servers' receipts tell the client's own spacing of its attempts, not
    /// just when they arrived.
    pub sent_ns: u64,
}

/// One logical operation of an SDK connection, as every attempt of it names
/// it on the wire ([`WireRequest::session`], [`WireRequest::op_id`]).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct OperationId {
    /// The connection's session id.
    pub session: u64,
    /// The operation's number in that session, from 1.
    pub op: u64,
}

/// The server's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum WireReply {
    /// The partition executed the request: the service's answer.
    Ok(Response),
    /// A transient error from a fault point: 429 (with or without retry-after), 449, 503
    /// and 410 mean "not executed"; 408 means "may or may not have been executed".
    Transient {
        /// The status.
        status: u16,
        /// The Cosmos sub-status (`crate::core::sub_status`; 0 for none): on a 410, 1000,
        /// 1002 or 1022 when the fault point draws one.
        sub_status: u32,
        /// `x-ms-retry-after-ms` (429 only; missing or 0 sometimes).
        retry_after_ms: Option<u64>,
    },
}

/// A response datagram.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireResponse {
    /// The request's id.
    pub req_id: u64,
    /// The answer.
    pub reply: WireReply,
    /// The session of the request answered (`WireRequest::session`): a
    /// client takes only answers to its own session, so a restarted process
    /// that got its predecessor's address never takes a late answer to the
    /// predecessor's request for one of its own (both count ids from 0).
    pub session: u64,
}

/// Serialises a wire message.
pub(crate) fn to_bytes<T: Serialize>(msg: &T) -> Vec<u8> {
    bincode::serialize(msg).expect("wire types serialise")
}

/// Serialises a wire message into `out` (cleared first), reusing its memory.
pub(crate) fn to_bytes_into<T: Serialize>(out: &mut Vec<u8>, msg: &T) {
    out.clear();
    bincode::serialize_into(&mut *out, msg).expect("wire types serialise");
}

/// Writes into `out` (cleared first) the encoding of a [`WireRequest`] whose
/// operation is already encoded as `op` (by [`to_bytes`]): the same bytes as
/// `to_bytes(&WireRequest { req_id, partition, op, session, op_id, sent_ns })`,
/// without encoding the operation again for every attempt.
pub(crate) fn encode_request(
    out: &mut Vec<u8>,
    req_id: u64,
    partition: u32,
    op: &[u8],
    operation: OperationId,
    sent_ns: u64,
) {
    out.clear();
    out.reserve(36 + op.len());
    // bincode's default options: fixed-width little-endian integers, fields in order.
    out.extend_from_slice(&req_id.to_le_bytes());
    out.extend_from_slice(&partition.to_le_bytes());
    out.extend_from_slice(op);
    out.extend_from_slice(&operation.session.to_le_bytes());
    out.extend_from_slice(&operation.op.to_le_bytes());
    out.extend_from_slice(&sent_ns.to_le_bytes());
}

/// Sends a datagram as the network's send faults say: at once, or held back,
/// and sometimes once more later (a duplicate). Delayed copies are sent as
/// the policy says ([`SendPolicy::send_later`]: by a task of the sending
/// node, gone if the node crashes first). Returns the
/// result of the first copy when it is sent at once (`Ok` otherwise: the
/// network does not report a held-back datagram's fate).
pub(crate) async fn send_datagram(
    ep: &Arc<Endpoint>,
    to: SocketAddr,
    tag: u64,
    bytes: &[u8],
    policy: &SendPolicy,
) -> std::io::Result<()> {
    let mut result = Ok(());
    let from = match policy.0 {
        Some(_) => ep.local_addr().ok(),
        None => None,
    };
    for delay in policy.copies(from, to) {
        if delay.is_zero() {
            result = ep.send_to(to, tag, bytes).await;
            continue;
        }
        let (ep, bytes) = (ep.clone(), bytes.to_vec());
        policy.send_later(delay, async move {
            // A copy to an unreachable peer is dropped by the network.
            let _ = ep.send_to(to, tag, &bytes).await;
        });
    }
    result
}

/// Parses a wire message; `None` for bytes that are not one.
pub(crate) fn from_bytes<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Option<T> {
    bincode::deserialize(bytes).ok()
}

/// One attempt as the wire names it: its connection's session and its
/// request id, which the request and its answer both carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AttemptName {
    /// The SDK connection's session id.
    pub session: u64,
    /// The attempt's request id.
    pub req_id: u64,
}

/// The attempt a request datagram is; `None` for bytes that are not a request.
pub fn request_attempt(request: &[u8]) -> Option<AttemptName> {
    from_bytes::<WireRequest>(request).map(|r| AttemptName {
        session: r.session,
        req_id: r.req_id,
    })
}

/// The attempt a response datagram answers; `None` for bytes that are not a
/// response.
pub fn response_attempt(response: &[u8]) -> Option<AttemptName> {
    from_bytes::<WireResponse>(response).map(|r| AttemptName {
        session: r.session,
        req_id: r.req_id,
    })
}

/// The operation a request datagram carries; `None` for bytes that are not a
/// request. For a relay that answers some requests itself (the conformance
/// scripts' `inject` step) and so must tell reads from writes.
pub fn request_operation(request: &[u8]) -> Option<Request> {
    from_bytes::<WireRequest>(request).map(|r| r.op)
}

/// The response datagram that answers the request datagram `request` with a
/// transient status, as a server's fault point does (the request not
/// executed; a 408 leaves that unknown); `None` for bytes that are not a
/// request.
pub fn transient_reply(
    request: &[u8],
    status: u16,
    sub_status: u32,
    retry_after_ms: Option<u64>,
) -> Option<Vec<u8>> {
    let r = from_bytes::<WireRequest>(request)?;
    Some(to_bytes(&WireResponse {
        req_id: r.req_id,
        reply: WireReply::Transient {
            status,
            sub_status,
            retry_after_ms,
        },
        session: r.session,
    }))
}

/// The partition a partition key routes to: a stable hash, so every client and
/// every run agree.
pub fn partition_of(partition_key: &str, partitions: u32) -> u32 {
    crc32fast::hash(partition_key.as_bytes()) % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::store::{Conditions, ItemKey, StoreRequest};

    #[test]
    fn a_request_encoded_from_its_operation_bytes_is_the_whole_encoding() {
        let op = Request::Store(StoreRequest::Put {
            key: ItemKey::new("docs", "k1", "k1"),
            body: "c1.2".into(),
            conditions: Conditions::if_none_match_any(),
            metadata: Default::default(),
        });
        let whole = to_bytes(&WireRequest {
            req_id: 0x0102_0304_0506_0708,
            partition: 3,
            op: op.clone(),
            session: 0x1112_1314_1516_1718,
            op_id: 0x2122_2324_2526_2728,
            sent_ns: 0x3132_3334_3536_3738,
        });
        let mut out = vec![9, 9];
        encode_request(
            &mut out,
            0x0102_0304_0506_0708,
            3,
            &to_bytes(&op),
            OperationId {
                session: 0x1112_1314_1516_1718,
                op: 0x2122_2324_2526_2728,
            },
            0x3132_3334_3536_3738,
        );
        assert_eq!(out, whole);
        assert_eq!(from_bytes::<WireRequest>(&out).map(|r| r.op), Some(op));
    }
}
