//! What a replica is configured with, what replicas send each other
//! ([`Message`]), what a replica persists ([`Persist`]) and applies
//! ([`Applied`]), and what it answers a client ([`WriteOutcome`],
//! [`ReadOutcome`]); session tokens.

use crate::core::bugs::ModelBugs;
use crate::partition::{Effect, Response};
use serde::{Deserialize, Serialize};

/// A replica's number in its partition's replica set and read replicas.
pub type ReplicaId = u32;

/// One log entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The term of the primary that appended it.
    pub term: u64,
    /// Its position: 1, 2, 3...
    pub lsn: u64,
    /// What it changes.
    pub effect: Effect,
}

/// An entry a replica applied to its state, as it notes it: position, term
/// and a digest of its effect (CRC-32 of the effect's bincode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// The entry's LSN.
    pub lsn: u64,
    /// Its term.
    pub term: u64,
    /// The digest of its effect.
    pub digest: u32,
}

/// The digest of an effect: CRC-32 of its bincode.
pub(crate) fn effect_digest(effect: &Effect) -> u32 {
    crc32fast::hash(&bincode::serialize(effect).expect("effects serialise"))
}

/// The consistency level a read asks for (SPEC §4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadConsistency {
    /// The primary, under its leader lease.
    Strong,
    /// Any replica whose applied LSN reaches the session token.
    Session,
    /// Any replica.
    Eventual,
}

/// The session token of a partition at an LSN: `"<partition>:<lsn>"`.
pub fn session_token(partition: u32, lsn: u64) -> String {
    format!("{partition}:{lsn}")
}

/// The partition and LSN of a session token, if it is one.
pub fn parse_session_token(token: &str) -> Option<(u32, u64)> {
    let (p, lsn) = token.split_once(':')?;
    Some((p.parse().ok()?, lsn.parse().ok()?))
}

/// The settings of one replica of one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaConfig {
    /// This replica.
    pub me: ReplicaId,
    /// The write region's replica set: they vote and form quorums.
    pub voters: Vec<ReplicaId>,
    /// Read replicas of other regions: they only apply the committed log.
    pub learners: Vec<ReplicaId>,
    /// The leader lease, ms of the primary's clock.
    pub lease_ms: u64,
    /// The stated bound on clock rate error, ppm: the margin comes from it.
    pub drift_bound_ppm: u64,
    /// Silence from the primary after which a voter campaigns (the voter
    /// `i` waits `election_timeout_ms · (1 + i/4)`, so elections rarely split;
    /// it also waits for its lease promise to end, see [`Replica::tick`]).
    pub election_timeout_ms: u64,
    /// How often the primary sends appends (heartbeats) to the voters.
    pub heartbeat_ms: u64,
    /// How often the primary ships the committed log to the read replicas.
    pub ship_ms: u64,
    /// Most entries in one append.
    pub max_batch: usize,
    /// Containers every partition has from the start.
    pub containers: Vec<String>,
    /// The seeded bugs.
    pub bugs: ModelBugs,
}

impl ReplicaConfig {
    /// The lease margin on each side: `2·ρ·lease + 1 ms` (0 with the seeded
    /// bug `leader_lease_no_skew_margin`).
    pub fn margin_ms(&self) -> u64 {
        if self.bugs.leader_lease_no_skew_margin {
            return 0;
        }
        (2 * self.lease_ms * self.drift_bound_ppm).div_ceil(1_000_000) + 1
    }

    /// Votes (and durable copies) that make a majority of the voters.
    pub fn quorum(&self) -> usize {
        self.voters.len() / 2 + 1
    }

    /// True for a member of the write region's replica set.
    pub fn is_voter(&self) -> bool {
        self.voters.contains(&self.me)
    }

    pub(super) fn election_timeout(&self) -> u64 {
        self.election_timeout_ms + self.election_timeout_ms * u64::from(self.me) / 4
    }

    /// How long after its promise ends voter `i` waits before it campaigns:
    /// `30 ms · i` (more than a tick and a message's latency), so voters
    /// whose promises ended together do not split the vote.
    pub(super) fn stagger(&self) -> u64 {
        30 * u64::from(self.me)
    }
}

/// A message between the replicas of one partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Message {
    /// Entries (possibly none: a heartbeat) after `(prev_lsn, prev_term)`.
    Append {
        /// The primary's term.
        term: u64,
        /// The LSN just before the entries.
        prev_lsn: u64,
        /// Its term (0 for LSN 0).
        prev_term: u64,
        /// The entries.
        entries: Vec<Entry>,
        /// The primary's commit LSN.
        commit: u64,
        /// The primary's round number (for the lease).
        seq: u64,
    },
    /// The answer to an append, sent once what it appended is durable.
    AppendAck {
        /// The replier's term.
        term: u64,
        /// The consistency check passed.
        ok: bool,
        /// On success: the replier holds every entry up to here durably;
        /// on failure: a hint of where its log may agree.
        durable: u64,
        /// The round answered.
        seq: u64,
    },
    /// A candidate asks for a vote.
    RequestVote {
        /// The candidate's term.
        term: u64,
        /// Its last entry's LSN.
        last_lsn: u64,
        /// Its last entry's term.
        last_term: u64,
    },
    /// The answer to a vote request (sent once the vote is durable).
    Vote {
        /// The voter's term.
        term: u64,
        /// Granted or not.
        granted: bool,
        /// Refused because the voter still promises a lease: how much longer
        /// the promise runs, ms of the voter's clock (0 otherwise). The
        /// candidate asks again then instead of an election timeout later.
        #[serde(default)]
        promised_ms: u64,
    },
}

/// What must be durable (in this order) before the messages and replies of
/// the same step leave the node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Persist {
    /// An entry appended at the end of the log.
    Entry(Entry),
    /// Every entry from this LSN on is cut.
    TruncateFrom(u64),
    /// The current term and the vote cast in it.
    Term {
        /// The term.
        term: u64,
        /// Whom this replica voted for in it.
        voted_for: Option<ReplicaId>,
    },
    /// Entries up to here are known committed.
    Commit(u64),
}

/// A replica's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A voter following a primary (or waiting for one).
    Follower,
    /// A voter asking for votes.
    Candidate,
    /// The voter that takes writes.
    Primary,
    /// A read replica in another region.
    ReadReplica,
}

impl Role {
    /// Its name in events.
    pub fn name(self) -> &'static str {
        match self {
            Role::Follower => "follower",
            Role::Candidate => "candidate",
            Role::Primary => "primary",
            Role::ReadReplica => "read_replica",
        }
    }
}

/// How a write request is taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Evaluated at the primary: answer `response` once `wait_lsn` is
    /// committed in `term` (and this replica is still its primary). `lsn` is
    /// the LSN of the state the answer reflects (the session token).
    Pending {
        /// The service's answer.
        response: Response,
        /// Commit needed before answering.
        wait_lsn: u64,
        /// The term it was taken in.
        term: u64,
    },
    /// Not the primary; it believes `hint` is (410 sub-status 0).
    NotPrimary {
        /// The believed primary.
        hint: ReplicaId,
    },
    /// No primary known (503).
    NoPrimary,
    /// A read replica: writes are forbidden in its region (403/3).
    Forbidden,
}

/// How a read request is answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadOutcome {
    /// Served from the applied state at `lsn`.
    Served {
        /// The service's answer.
        response: Response,
        /// The applied LSN (the session token).
        lsn: u64,
    },
    /// A strong read at a replica that is not the primary (410/0).
    NotPrimary {
        /// The believed primary, if any.
        hint: Option<ReplicaId>,
    },
    /// A strong read with no primary able to serve it (503).
    NoPrimary,
    /// A session read below the token (404/1002).
    SessionNotAvailable,
}
