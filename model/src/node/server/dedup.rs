//! The deduplication table: recent outcomes by session and request id, so that
//! a duplicated or re-sent attempt is answered once and never executed twice.

use crate::wire::WireReply;
use std::collections::{BTreeMap, VecDeque};

/// Outcomes the server keeps per session: a duplicate arriving after more
/// than this many newer attempts of its session is dropped, not answered.
pub(super) const OUTCOMES_PER_SESSION: usize = 16;
/// Sessions the table keeps; beyond it, the least recently used is
/// forgotten (with its floor: its duplicates could run again). A run has one
/// session per client incarnation, far fewer.
pub(super) const MAX_SESSIONS: usize = 4096;

/// What the table knows of an attempt.
pub(super) enum Seen {
    /// Never answered: execute it.
    New,
    /// Answered already: send this again.
    Answered(WireReply),
    /// Older than every outcome kept for its session (answered long ago;
    /// its client has moved on), or in doubt (executed, but its log sync
    /// failed): dropped, never answered nor executed again.
    Stale,
}

/// One session's recent outcomes.
#[derive(Default)]
pub(super) struct SessionOutcomes {
    /// `(req_id, reply)`, oldest first; no reply for an attempt in doubt.
    replies: VecDeque<(u64, Option<WireReply>)>,
    /// The highest `req_id` forgotten: every attempt up to it was answered.
    floor: u64,
    /// When it was last used (the table's counter).
    used: u64,
}

/// The deduplication table: recent outcomes by `(session, req_id)`. A
/// session's attempts have increasing ids, so a forgotten outcome only
/// raises the session's floor, below which every attempt is known to be
/// answered: bounded, and exact within one incarnation. It lives in memory;
/// a restarted server has an empty table and waits
/// [`ServerConfig::quiet_after_restart`] before listening instead.
#[derive(Default)]
pub(crate) struct Dedup {
    sessions: BTreeMap<u64, SessionOutcomes>,
    used: u64,
}

impl Dedup {
    pub(super) fn seen(&self, session: u64, req_id: u64) -> Seen {
        let Some(s) = self.sessions.get(&session) else {
            return Seen::New;
        };
        if req_id <= s.floor {
            return Seen::Stale;
        }
        match s.replies.iter().find(|(id, _)| *id == req_id) {
            Some((_, Some(reply))) => Seen::Answered(reply.clone()),
            Some((_, None)) => Seen::Stale,
            None => Seen::New,
        }
    }

    /// Remembers the reply to an attempt, or (`None`) that it is in doubt.
    pub(super) fn record(&mut self, session: u64, req_id: u64, reply: Option<&WireReply>) {
        self.used += 1;
        let s = self.sessions.entry(session).or_default();
        s.used = self.used;
        s.replies.push_back((req_id, reply.cloned()));
        if s.replies.len() > OUTCOMES_PER_SESSION {
            if let Some((old, _)) = s.replies.pop_front() {
                s.floor = s.floor.max(old);
            }
        }
        if self.sessions.len() > MAX_SESSIONS {
            if let Some(oldest) = self
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| *k)
            {
                self.sessions.remove(&oldest);
            }
        }
    }
}
