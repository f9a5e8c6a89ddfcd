//! What a host reports while it runs: its events (for the checkers) and its
//! calls, to an observer it is handed.

use crate::sdk::client::AttemptLog;
use crate::services::feed::FeedItem;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// Everything a host does that a checker needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProcessorEvent {
    /// `StartAsync` ran; `anchor` is the start time of leases without a checkpoint (host ms).
    Started {
        /// Time(anchor) of [`ProcessorStart::Now`]; none for the beginning.
        anchor: Option<u64>,
    },
    /// Bootstrap done (`initialized`: this host wrote `.info`).
    Bootstrapped {
        /// This host was the initializer.
        initialized: bool,
    },
    /// A lease became this host's.
    Acquired {
        /// The lease token.
        lease: u32,
        /// Its stored checkpoint.
        continuation: Option<u64>,
        /// The owner the balancer saw (a steal if another host).
        from: Option<String>,
        /// The `timestamp` of the copy the balancer judged (none for a
        /// split's child): says which version of the lease its expiry was
        /// judged on (the checker's CF8 tells an expired lease from a steal).
        #[serde(default)]
        seen_timestamp: Option<u64>,
    },
    /// A lease stopped being processed here.
    Stopped {
        /// The lease token.
        lease: u32,
        /// Why.
        why: String,
    },
    /// A feed read of a lease.
    Read {
        /// The lease token.
        lease: u32,
        /// The continuation it read from (none: the start option).
        from: Option<u64>,
        /// What a start option resolved to.
        start_lsn: Option<u64>,
        /// The status (0: no answer).
        status: u16,
        /// Items returned.
        items: usize,
    },
    /// The delegate is invoked with a batch.
    Delivered {
        /// The lease token.
        lease: u32,
        /// The items.
        items: Vec<FeedItem>,
        /// The page's continuation.
        continuation: u64,
    },
    /// The delegate returned (`ok`) or threw.
    DelegateDone {
        /// The lease token.
        lease: u32,
        /// Returned successfully.
        ok: bool,
        /// The page's continuation.
        continuation: u64,
    },
    /// A checkpoint attempt.
    Checkpoint {
        /// The lease token.
        lease: u32,
        /// The token written.
        continuation: u64,
        /// It committed.
        ok: bool,
    },
    /// A split handled: children created (those that did not exist).
    Split {
        /// The parent token.
        lease: u32,
        /// The children created.
        children: Vec<u32>,
        /// The continuation they were given.
        continuation: Option<u64>,
    },
    /// The host released a lease (`StopAsync`, a delegate error, a read error).
    Released {
        /// The lease token.
        lease: u32,
    },
    /// `StopAsync` finished.
    Left,
}

/// One SDK call a host made (a lease read, create, replace or delete, a
/// feed read), reported when it returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessorCall {
    /// What it was (`"renew"`, `"checkpoint"`, `"read feed"`, …).
    pub what: String,
    /// The status the host saw.
    pub status: u16,
    /// The outcome is unknown (a write that may or may not have committed).
    pub unknown: bool,
    /// Every attempt the SDK made.
    pub attempts: Vec<AttemptLog>,
    /// Simulated ns at the call's start.
    pub invoke_ns: u64,
    /// Simulated ns at its return.
    pub return_ns: u64,
}

/// Where a host's events go.
pub trait ProcessorObserver {
    /// One event, at the host's clock.
    fn event(&self, e: ProcessorEvent);
    /// One SDK call that returned (default: not recorded).
    fn call(&self, _call: ProcessorCall) {}
    /// Whether to leave out the SDK call the host is about to send (a test
    /// harness shrinking a failure to its operations), asked before each
    /// one: `what` it is for and is (`"renew: replace lease"`), on `key` (a
    /// lease id or token, a container), sent from `from` (the address of
    /// the task's own SDK client: the processing loop and the renewer have
    /// one each, and every request of the call is sent from there).
    /// `setup`: bootstrap, asked once at its start and before its read of
    /// the ranges, never to be left out (answer `false`). A call
    /// left out is not sent, not reported, and ends at once with an
    /// unknown outcome, as if it had been lost on its way; the host goes on
    /// as after such a call (a lost feed read or checkpoint releases the
    /// lease). Default: never.
    fn skipped(&self, _what: &str, _key: &str, _from: Option<SocketAddr>, _setup: bool) -> bool {
        false
    }
}
