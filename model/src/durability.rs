//! What a node with a log tells of its durability: when each sync of the
//! log completed and what it made durable, and when each reply that
//! acknowledges an effect left, with the log position that effect needs
//! durable. The nodes report these [`LogEvent`]s to a [`LogObserver`] they
//! are handed (through [`LogReport`]); whoever runs them keeps the record
//! and judges it (overcast's D1: no acknowledgement before the sync that
//! covers it). Reporting draws nothing and waits for nothing: a run with an
//! observer does exactly what it does without one.
//!
//! Two kinds of log report: a server's write-ahead log ([`LogId::Wal`], one
//! sequence of records for every partition of the server, see
//! [`crate::wal`]), whose position `n` is its `n`-th record counted from 1
//! (the records are not termed: `term` 0); and a replica's copy of a
//! replicated partition's log ([`LogId::Replica`]), whose positions are the
//! entries' `(lsn, term)`. A log's durable content is told as runs of terms
//! ([`TermRun`]): a WAL durable through record `n` is one run `(0, n)`.

use crate::core::env::Clock;
use crate::wire::OperationId;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Which log an event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LogId {
    /// The node's write-ahead log (a server's: every partition's records).
    Wal,
    /// Replica `replica`'s copy of partition `partition`'s replicated log.
    Replica {
        /// The partition.
        partition: u32,
        /// The replica's id in the partition's replica set (the same on
        /// every incarnation of its node: its disk is its copy).
        replica: u32,
    },
}

/// A position in a log: record (or entry) `lsn`, counted from 1, of term
/// `term` (0 in a WAL, whose records have no terms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogPos {
    /// The record's number, from 1.
    pub lsn: u64,
    /// Its term (0 in a WAL).
    pub term: u64,
}

/// A run of a log's content: every position after the previous run's
/// `through`, up to and including `through`, is of term `term`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TermRun {
    /// The term of the run's positions.
    pub term: u64,
    /// Its last position.
    pub through: u64,
}

/// The runs of a log whose entries have the terms `terms` (in LSN order,
/// from LSN 1).
pub fn runs_of(terms: impl IntoIterator<Item = u64>) -> Vec<TermRun> {
    let mut runs: Vec<TermRun> = Vec::new();
    for (i, term) in terms.into_iter().enumerate() {
        let lsn = i as u64 + 1;
        match runs.last_mut() {
            Some(r) if r.term == term => r.through = lsn,
            _ => runs.push(TermRun { term, through: lsn }),
        }
    }
    runs
}

/// The runs of a WAL durable through record `n` (none for an empty one).
pub fn wal_runs(n: u64) -> Vec<TermRun> {
    if n == 0 {
        Vec::new()
    } else {
        vec![TermRun {
            term: 0,
            through: n,
        }]
    }
}

/// The reply an acknowledgement is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Reply {
    /// A server's answer to one attempt (`req_id`) of a client's operation.
    Attempt {
        /// The logical operation (the SDK's session and its number there).
        operation: OperationId,
        /// The attempt's request id.
        req_id: u64,
    },
    /// A replica's answer to a client's write request.
    Write {
        /// The client's session id.
        session: u64,
        /// The request id.
        req_id: u64,
    },
    /// A replica's acknowledgement of an append, to the primary `to`: "I
    /// hold every entry up to here durably".
    Append {
        /// The primary (replica id).
        to: u32,
        /// The primary's round the append was sent in.
        seq: u64,
    },
}

/// Whose syncs an acknowledgement needs: `needed` of the `voters` (replica
/// ids) must have made its position durable before it leaves (a
/// replicated write's quorum).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quorum {
    /// The replica set's voters.
    pub voters: Vec<u32>,
    /// How many of them make a quorum.
    pub needed: u32,
}

/// One thing a node did with its log, as it reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LogEvent {
    /// The node read `log` back from its disk (at a start-up, or to rebuild
    /// its state after a failed sync): what it found is `durable` (it is on
    /// the disk), and the log holds nothing else.
    Recovered {
        /// The log.
        log: LogId,
        /// Its content, every position durable.
        durable: Vec<TermRun>,
    },
    /// A sync of `log` succeeded: its durable content is now `durable`
    /// (everything appended before the sync started).
    Synced {
        /// The log.
        log: LogId,
        /// Its durable content.
        durable: Vec<TermRun>,
    },
    /// A sync of `log` failed: what it was to make durable may be gone, and
    /// no later sync brings it back (only reading the disk again tells what
    /// is there, [`LogEvent::Recovered`]).
    SyncFailed {
        /// The log.
        log: LogId,
    },
    /// A reply that acknowledges an effect left the node: the effect needs
    /// `log` durable through `needs` (every position up to it, `needs`
    /// itself of its term), on this node, or, with a `quorum`, on that many
    /// of the replica set's copies.
    Acked {
        /// The log.
        log: LogId,
        /// The reply.
        reply: Reply,
        /// The position the effect needs durable.
        needs: LogPos,
        /// For a replicated write: whose copies must hold it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        quorum: Option<Quorum>,
    },
}

impl LogEvent {
    /// The log the event is about.
    pub fn log(&self) -> LogId {
        match self {
            LogEvent::Recovered { log, .. }
            | LogEvent::Synced { log, .. }
            | LogEvent::SyncFailed { log }
            | LogEvent::Acked { log, .. } => *log,
        }
    }
}

/// Whoever keeps a node's log events: called at the instant each happens,
/// with the node's clock then (ms); it reads the true time itself.
pub trait LogObserver: Send + Sync {
    /// `event` happened now.
    fn on_log(&self, local_ms: u64, event: LogEvent);
}

/// A node's [`LogObserver`], or none (nothing reported, nothing built).
#[derive(Clone, Default)]
pub struct LogReport(Option<Arc<dyn LogObserver>>);

impl std::fmt::Debug for LogReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "LogReport(observed)"
        } else {
            "LogReport(none)"
        })
    }
}

impl LogReport {
    /// Reporting to `observer`.
    pub fn to(observer: Arc<dyn LogObserver>) -> LogReport {
        LogReport(Some(observer))
    }

    /// Reporting to nobody.
    pub fn none() -> LogReport {
        LogReport(None)
    }

    /// Whether anyone listens.
    pub fn observed(&self) -> bool {
        self.0.is_some()
    }

    /// Reports the event `event` makes, now, with the node's `clock`;
    /// neither is read when nobody listens.
    pub fn report(&self, clock: &dyn Clock, event: impl FnOnce() -> LogEvent) {
        if let Some(o) = &self.0 {
            o.on_log(clock.now_ms(), event());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_group_equal_terms() {
        assert_eq!(runs_of([]), vec![]);
        assert_eq!(
            runs_of([1, 1, 2, 2, 2, 4]),
            vec![
                TermRun {
                    term: 1,
                    through: 2
                },
                TermRun {
                    term: 2,
                    through: 5
                },
                TermRun {
                    term: 4,
                    through: 6
                },
            ]
        );
        assert_eq!(wal_runs(0), vec![]);
        assert_eq!(
            wal_runs(3),
            vec![TermRun {
                term: 0,
                through: 3
            }]
        );
    }

    #[test]
    fn events_are_written_as_tagged_json() {
        let e = LogEvent::Acked {
            log: LogId::Wal,
            reply: Reply::Attempt {
                operation: OperationId { session: 4, op: 2 },
                req_id: 9,
            },
            needs: LogPos { lsn: 12, term: 0 },
            quorum: None,
        };
        let json = serde_json::to_string(&e).unwrap();
        assert!(
            json.starts_with(r#"{"kind":"acked","log":{"kind":"wal"}"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<LogEvent>(&json).unwrap(), e);
    }
}
