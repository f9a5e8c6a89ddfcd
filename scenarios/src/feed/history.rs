//! The `feed` history: no client operations, only the nodes' typed events —
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
}

/// The `feed` history.
pub type FeedHistory = History<(), (), FeedEvent>;

/// Its recorder.
pub type FeedRecorder = Recorder<(), (), FeedEvent>;
