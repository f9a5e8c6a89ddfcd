//! The `feed` history: the operations (writers' writes, pull-model pages,
//! every SDK call a processor host made) and the nodes' typed events —
//! the server's log as it was written (every committed item version, lease
//! document and split, with its LSN), each processor host's events (reads,
//! deliveries, delegate returns, checkpoints, acquisitions, splits), the
//! pull-model reader's pages and the splitter's splits.

use overcast_model::feed::FeedItem;
use overcast_model::feed_processor::ProcessorEvent;
use overcast_model::partition::Effect;
use overcast_sim::history::{History, Recorder};
use serde::{Deserialize, Serialize};

/// One node event of the `feed` scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FeedEvent {
    /// The server appended a log record (durable unless a later `Recovered` cuts it).
    Logged {
        /// Its LSN.
        lsn: u64,
        /// What it changed.
        effect: Effect,
    },
    /// The server recovered, keeping this many log records.
    Recovered {
        /// Records kept.
        kept: u64,
    },
    /// A processor host's event.
    Host(ProcessorEvent),
    /// One page of the pull-model reader.
    Pull {
        /// The range's id.
        range: u32,
        /// Its lowest EPK.
        min: u32,
        /// One past its highest EPK.
        max: u32,
        /// The continuation it read from.
        from: u64,
        /// True simulated time the read began, ns.
        begin_ns: u64,
        /// The status (0: no answer).
        status: u16,
        /// The items.
        items: Vec<FeedItem>,
        /// The page's continuation.
        continuation: u64,
    },
    /// The splitter asked for a split.
    Split {
        /// The range id.
        range: u32,
        /// The status (0: no answer).
        status: u16,
    },
    /// A host's call the shrinker left out (the scenario's `skip` set): it
    /// ended unknown at once, as a lost one, and disturbs the hosts as much.
    /// (Last: a trace hash numbers each event by its variant, so a new
    /// variant goes after the others and their hashes stay.)
    LeftOut {
        /// What the call was for and is (`renew: replace lease`).
        what: String,
    },
    /// The server found every copy of its log corrupt at a start-up and
    /// refuses service (503) from then on: a run past the fault budget.
    Refused {
        /// What recovery found.
        reason: String,
    },
}

/// One operation of the `feed` scenario (counted in the run summary; the
/// checks judge the log and the node events).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FeedCall {
    /// A writer's write: create, replace, upsert, soft delete, delete or batch.
    Write {
        /// Which kind.
        kind: String,
        /// The partition key.
        partition_key: String,
        /// The item ids (several for a batch).
        ids: Vec<String>,
    },
    /// A pull-model page of one range from a continuation.
    Pull {
        /// The range id.
        range: u32,
        /// The continuation.
        from: u64,
    },
    /// A processor host's SDK call (a lease read or write, a feed read),
    /// recorded when it returned (a call cut short by a crash is not).
    Host {
        /// What it was.
        what: String,
    },
}

/// What an operation of the `feed` scenario was answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedResult {
    /// The HTTP status.
    pub status: u16,
}

/// The `feed` history (with its servers' log events, D1).
pub type FeedHistory =
    History<FeedCall, FeedResult, FeedEvent, overcast_model::durability::LogEvent>;

/// Its recorder.
pub type FeedRecorder = Recorder<FeedCall, FeedResult, FeedEvent>;
