//! The seeded bugs: realistic mistakes the model can be switched into, each
//! off by default, each of which the harness must find. [`BUGS`] is the one
//! table: `overcast bugs`, the bug hunt test and scenario validation read
//! it; a scenario's bugs are the rows that name it, and those of
//! [`EXPLORER_BUGS`], which only `overcast explore` finds.

use overcast_harness::bug::BugInfo;
use overcast_model::bugs::ModelBugs;

/// Every named bug of the model.
pub const BUGS: &[BugInfo] = &[
    BugInfo {
        name: "skip_if_match",
        what: "the server ignores If-Match on writes, so a stale read-modify-write overwrites a newer version",
        scenarios: &["occ", "occ-replicated"],
        caught_by: &["linearizability"],
    },
    BugInfo {
        name: "retry_write_after_timeout",
        what: "the client re-sends a non-idempotent write after a timeout, which may apply it twice",
        scenarios: &["occ"],
        caught_by: &["linearizability", "R1"],
    },
    BugInfo {
        name: "not_sent_taken_as_unknown",
        what: "the client takes a refused connect for a failure after sending: a write that never left it ends unknown (503) instead of being retried",
        scenarios: &["occ"],
        // The linearizability check allows an unknown write to have run or not.
        caught_by: &["R3"],
    },
    BugInfo {
        name: "retry_after_cancel",
        what: "the client takes the caller's cancel of an attempt in flight for a transport timeout and goes on retrying after the cancel",
        scenarios: &["occ"],
        caught_by: &["R1"],
    },
    BugInfo {
        name: "ignore_retry_after",
        what: "the client retries a throttled (429) request at once instead of after the server's retry-after",
        scenarios: &["occ"],
        caught_by: &["R2"],
    },
    BugInfo {
        name: "retry_after_stretched",
        what: "the client waits ten times the server's retry-after after a throttled (429) request",
        scenarios: &["occ"],
        // Only the waits' upper bound tells: every wait is long enough.
        caught_by: &["R2"],
    },
    BugInfo {
        name: "retry_with_on_gone_backoff",
        what: "the client backs off a 449 on the 410 schedule (1 s doubling to 15 s) instead of 10 ms doubling to 1 s",
        scenarios: &["occ"],
        // Only the waits' upper bound tells: every wait is long enough.
        caught_by: &["R3"],
    },
    BugInfo {
        name: "transport_retries_throttled",
        what: "the client's transport re-sends a throttled (429) request at once, below the retry policy: the retry-after is ignored and the re-send is neither in the SDK's attempt log nor in its budget",
        scenarios: &["occ"],
        // Only the servers see the re-send: the SDK's own log shows one attempt.
        caught_by: &["R2"],
    },
    BugInfo {
        name: "ack_before_sync",
        what: "the server acknowledges a write before its log record is durable, so a crash can lose it",
        scenarios: &["occ"],
        // A lost write's version is made again by the next write, with the
        // same ETag; D1 sees every answer leave before its sync.
        caught_by: &["linearizability", "E1", "D1"],
    },
    BugInfo {
        name: "group_commit_off_by_one",
        what: "group commit holds a write's answer until the records before its own are synced, not its own (an off-by-one), so a write applied during a sync is answered when that sync completes, before the sync that covers it",
        scenarios: &["occ", "leases", "cosmos", "search", "queues", "feed"],
        // Only a crash in the 1–3 ms before the next sync loses the write:
        // the order of the answer and the sync tells in every run that has
        // a write in flight during a sync.
        caught_by: &["D1"],
    },
    BugInfo {
        name: "read_unsynced",
        what: "the server answers a read from state whose log records are not yet synced, so a crash can take back a value a client has read",
        scenarios: &["occ"],
        caught_by: &["linearizability"],
    },
    BugInfo {
        name: "etag_reuse",
        what: "a deleted and re-created item starts its version again and gets an ETag it had before",
        scenarios: &["occ", "occ-replicated"],
        caught_by: &["linearizability", "E1"],
    },
    BugInfo {
        name: "no_dedup",
        what: "the server executes duplicated requests again, so a delayed copy of a write resurrects its value",
        scenarios: &["occ"],
        caught_by: &["linearizability"],
    },
    BugInfo {
        name: "retry_fsync_after_error",
        what: "after a failed log sync the server syncs again and acknowledges the write whose bytes the device dropped",
        scenarios: &["occ"],
        // The log it leaves behind is corrupt, so the restarted server refuses
        // service with no damaged disk to excuse it (liveness), or an
        // acknowledged write is gone (linearizability); D1 sees the answers
        // after the failed sync acknowledge what no sync wrote.
        caught_by: &["liveness", "linearizability", "D1"],
    },
    BugInfo {
        name: "skip_crc_on_replay",
        what: "log recovery replays records without checking their CRC, so a flipped bit is served as data",
        scenarios: &["occ"],
        caught_by: &["linearizability", "E1"],
    },
    BugInfo {
        name: "torn_tail_as_end",
        what: "log recovery treats a corrupt record in the middle as the end of the log and drops the acknowledged records after it",
        scenarios: &["occ"],
        caught_by: &["linearizability", "E1"],
    },
    BugInfo {
        name: "dedup_without_session",
        what: "the server deduplicates by request id alone, answering another connection's attempt with a stored outcome",
        scenarios: &["occ"],
        caught_by: &["linearizability", "E1"],
    },
    BugInfo {
        name: "lease_expiry_on_client_clock",
        what: "the lease holder counts its lease from the receipt of the acquire's answer, with no safety margin",
        scenarios: &["leases"],
        caught_by: &["L9"],
    },
    BugInfo {
        name: "lease_trust_full_duration",
        what: "the lease holder counts from the request's start but trusts the whole duration: no margin for clock steps and drift",
        scenarios: &["leases"],
        caught_by: &["L9"],
    },
    BugInfo {
        name: "break_ignores_period",
        what: "the server breaks every lease at once, whatever the break period, so another id acquires it early",
        scenarios: &["leases"],
        caught_by: &["L4", "L5"],
    },
    BugInfo {
        name: "renew_after_write",
        what: "a write to a blob with an expired or broken lease keeps the lease, so the old holder can renew it after someone else wrote",
        scenarios: &["leases"],
        caught_by: &["L5", "L3", "L2"],
    },
    BugInfo {
        name: "write_without_lease_check",
        what: "the server accepts a blob write without a lease id while the blob is leased",
        scenarios: &["leases"],
        caught_by: &["L2"],
    },
    BugInfo {
        name: "write_blocked_by_lapsed_lease",
        what: "the server refuses a blob write without a lease id with 412 LeaseIdMissing while an expired or broken lease is still on record",
        scenarios: &["leases"],
        caught_by: &["L2"],
    },
    BugInfo {
        name: "acquire_not_idempotent_retry",
        what: "the SDK re-sends an acquire without a proposed id after a timeout, so the caller may be told 409 for a lease it won",
        scenarios: &["leases"],
        caught_by: &["L5", "L1", "L9", "R1"],
    },
    BugInfo {
        name: "lease_id_reuse",
        what: "the server keeps its lease id counter in memory only, so after a crash it generates ids it generated before",
        scenarios: &["leases"],
        caught_by: &["L7"],
    },
    BugInfo {
        name: "container_delete_ignores_lease",
        what: "Delete Container ignores the container's lease, so a client without the id deletes a leased container",
        scenarios: &["leases"],
        caught_by: &["L8"],
    },
    BugInfo {
        name: "renew_refused_when_expired",
        what: "a holder's renew of its expired lease is refused with 409 LeaseIdMismatchWithLeaseOperation, as if the lease were gone",
        scenarios: &["leases"],
        caught_by: &["L5"],
    },
    BugInfo {
        name: "upsert_if_match_absent_412",
        what: "Cosmos: an upsert with if-match on a missing item answers 412 instead of creating it (AMBIG-6)",
        scenarios: &["cosmos"],
        caught_by: &["linearizability"],
    },
    BugInfo {
        name: "replace_missing_412",
        what: "Cosmos: a replace or delete with if-match of a missing item answers 412 instead of 404",
        scenarios: &["cosmos"],
        caught_by: &["linearizability"],
    },
    BugInfo {
        name: "batch_partial_commit",
        what: "Cosmos: a conflict in a transactional batch rolls back only the failing operation",
        scenarios: &["cosmos"],
        caught_by: &["batch-atomicity"],
    },
    BugInfo {
        name: "cosmos_upsert_keeps_etag",
        what: "Cosmos: an upsert that replaces an item keeps its old _etag",
        scenarios: &["cosmos"],
        caught_by: &["E1"],
    },
    BugInfo {
        name: "search_concurrent_update_not_serialized",
        what: "Search: an update arriving while another update of the resource is in flight is decided against the old definition instead of getting 409",
        scenarios: &["search"],
        caught_by: &["linearizability"],
    },
    BugInfo {
        name: "search_sdk_ignores_only_if_unchanged",
        what: "Search SDK: CreateOrUpdate never sends If-Match, even with onlyIfUnchanged: true",
        scenarios: &["search"],
        caught_by: &["lost-field"],
    },
    BugInfo {
        name: "search_if_none_match_ignored",
        what: "Search: If-None-Match: * on an existing resource is ignored, so a create-only PUT overwrites it",
        scenarios: &["search"],
        caught_by: &["linearizability"],
    },
    BugInfo {
        name: "rmw_blind_fallback",
        what: "the read-modify-write helper falls back to an unconditional put after losing a race, so an acknowledged increment is lost",
        scenarios: &["occ"],
        caught_by: &["increments"],
    },
    BugInfo {
        name: "same_body_keeps_etag",
        what: "a put of the body an item already has keeps its ETag instead of getting a fresh one",
        scenarios: &["occ"],
        caught_by: &["E1", "linearizability"],
    },
    BugInfo {
        name: "replace_answers_200",
        what: "Put Blob over an existing blob answers 200 instead of 201 Created",
        scenarios: &["occ"],
        caught_by: &["linearizability"],
    },
    BugInfo {
        name: "restart_drops_partition",
        what: "a restarted server answers 503 forever to the first partition it is asked for after the restart",
        scenarios: &["occ"],
        caught_by: &["liveness"],
    },
    BugInfo {
        name: "last_modified_rounded",
        what: "date conditions compare against Last-Modified rounded to the nearest second instead of truncated",
        scenarios: &["occ"],
        caught_by: &["linearizability"],
    },
    BugInfo {
        name: "poll_returns_reserved",
        what: "Queues: a poll also returns items another poll reserved, so two workers process one item",
        scenarios: &["queues"],
        caught_by: &["Q2", "Q1"],
    },
    BugInfo {
        name: "poll_ignores_priority",
        what: "Queues: a poll orders items by time and name alone, ignoring ERROR > MODIFIED > NEW_ITEM > ACCEPTED",
        scenarios: &["queues"],
        caught_by: &["Q1"],
    },
    BugInfo {
        name: "delete_current_queue",
        what: "Connector: the full traversal calls deleteQueueItems on the queue it just filled instead of the other one",
        scenarios: &["queues"],
        caught_by: &["end-to-end", "Q7"],
    },
    BugInfo {
        name: "traverse_without_waiting",
        what: "Connector: the full traversal switches queues without waiting for the pending deleteQueueItems",
        scenarios: &["queues"],
        caught_by: &["Q8", "Q7", "end-to-end"],
    },
    BugInfo {
        name: "index_ignores_version",
        what: "Queues: items.index accepts a version not above the indexed one, so a stale fetch overwrites newer content",
        scenarios: &["queues"],
        caught_by: &["Q6", "end-to-end"],
    },
    BugInfo {
        name: "checkpoint_before_push",
        what: "Connector: the full traversal saves checkpoint_full past a batch before indexing it, so a crash or failure skips the batch",
        scenarios: &["queues"],
        caught_by: &["Q9", "end-to-end"],
    },
    BugInfo {
        name: "stale_refusal_taken_as_done",
        what: "Connector: an index or delete refused as stale is taken as \"a newer version is indexed already\", so under clock skew a newer document is not indexed",
        scenarios: &["queues"],
        caught_by: &["Q9"],
    },
    BugInfo {
        name: "reservation_never_expires",
        what: "Queues: a reservation never ends by itself, so an item whose worker hung stays unpollable",
        scenarios: &["queues"],
        caught_by: &["Q3"],
    },
    BugInfo {
        name: "requeue_keeps_time",
        what: "Queues: a REQUEUE push sets the item's ordering time back to when it was polled, so it jumps ahead of items queued since",
        scenarios: &["queues"],
        caught_by: &["Q5"],
    },
    BugInfo {
        name: "checkpoint_before_delegate",
        what: "the change feed processor checkpoints a batch before its delegate runs, so a crash or a delegate error loses the batch",
        scenarios: &["feed"],
        caught_by: &["CF3", "CF4"],
    },
    BugInfo {
        name: "checkpoint_without_owner_check",
        what: "a checkpoint that gets 412 re-reads the lease and reapplies its token without checking the owner, so a stale owner's checkpoint sticks",
        scenarios: &["feed"],
        caught_by: &["CF3", "CF5", "CF6"],
    },
    BugInfo {
        name: "resume_from_memory",
        what: "a lease the process owned before resumes from the position it last read, not from the stored checkpoint",
        scenarios: &["feed"],
        caught_by: &["CF13", "CF3", "CF5", "CF9"],
    },
    BugInfo {
        name: "drop_batch_on_delegate_error",
        what: "a delegate error checkpoints the batch and goes on instead of releasing the lease, so the batch is never redelivered",
        scenarios: &["feed"],
        caught_by: &["CF3", "CF4"],
    },
    BugInfo {
        name: "split_loses_continuation",
        what: "a split's child leases start from now instead of the parent's continuation",
        scenarios: &["feed"],
        caught_by: &["CF3", "CF9"],
    },
    BugInfo {
        name: "expiry_on_wrong_clock",
        what: "lease timestamps are written from the process's uptime instead of its clock, so other hosts judge live leases expired and they flap",
        scenarios: &["feed"],
        caught_by: &["CF12", "CF8"],
    },
    BugInfo {
        name: "page_cut_splits_batch",
        what: "the change feed cuts a page inside a transactional batch (one LSN) and continues after that LSN, skipping the batch's other items",
        scenarios: &["feed"],
        caught_by: &["CF10", "CF3"],
    },
    BugInfo {
        name: "page_cut_keeps_log_end",
        what: "a change feed page cut by the page-size hint answers the end of the log it read as its continuation, so the reader skips the changes after the cut",
        scenarios: &["feed"],
        caught_by: &["CF10", "CF3"],
    },
    BugInfo {
        name: "split_range_still_served",
        what: "a change feed read of a range that has split is served from the parent's key space instead of answering 410 with the children",
        scenarios: &["feed"],
        caught_by: &["CF10"],
    },
    BugInfo {
        name: "split_keeps_parent",
        what: "the processor's split handling creates the child leases but never deletes the parent, so leases overlap",
        scenarios: &["feed"],
        caught_by: &["CF11", "CF7"],
    },
    BugInfo {
        name: "feed_shows_deletes",
        what: "the latest-version feed shows a delete or TTL purge as a tombstone version of the item, a document no write committed",
        scenarios: &["feed"],
        caught_by: &["CF1"],
    },
    BugInfo {
        name: "page_sorted_by_id",
        what: "a feed page is cut by LSN but handed out sorted by partition key and item id, so one key's changes come out of commit order",
        scenarios: &["feed"],
        caught_by: &["CF2"],
    },
    BugInfo {
        name: "lagging_replica_304",
        what: "range reads are served by a replica a few log records behind, which answers 304 instead of 200 with 0 items while it has not seen the newest changes",
        scenarios: &["feed"],
        caught_by: &["CF10"],
    },
    BugInfo {
        name: "session_token_ignored",
        what: "a replica serves a session read below the client's session token",
        scenarios: &["regions", "occ-replicated"],
        caught_by: &["R5"],
    },
    BugInfo {
        name: "failover_loses_committed",
        what: "a vote is granted without comparing logs, so a primary can be elected without every committed write",
        scenarios: &["regions", "occ-replicated"],
        caught_by: &["durability", "linearizability", "R5", "state machine safety"],
    },
    BugInfo {
        name: "commit_before_quorum",
        what: "the primary commits and acknowledges a write as soon as it holds it itself, before a quorum of its replica set does",
        scenarios: &["regions", "occ-replicated"],
        caught_by: &["durability", "linearizability", "R5", "state machine safety", "D1"],
    },
    BugInfo {
        name: "replica_ack_before_sync",
        what: "a replica acknowledges an append to the primary as soon as it has appended the entries, before its own log sync, so the primary can count toward a quorum a copy that a crash then loses",
        scenarios: &["regions", "occ-replicated"],
        // A loss needs the replica to crash in the 1–3 ms before its sync
        // and the other copies to be lost too; D1 sees every early ack.
        caught_by: &["D1"],
    },
    BugInfo {
        name: "stale_read_after_failover",
        what: "a primary trusts its role, not its leader lease: cut off from its replica set it keeps serving strong reads (and never steps down) while the others elect a new primary that takes writes",
        scenarios: &["regions", "occ-replicated"],
        caught_by: &["linearizability"],
    },
    BugInfo {
        name: "leader_lease_no_skew_margin",
        what: "the leader lease has no margin for clock drift: the primary serves strong reads for the whole lease of its own clock and a follower promises its vote away for the same length of its own, so a slow primary's lease outlasts fast followers' promises and a new primary takes writes while the old one still serves",
        scenarios: &["regions", "occ-replicated"],
        caught_by: &["linearizability"],
    },
    BugInfo {
        name: "session_token_merged_min",
        what: "the SDK merges a partition's session tokens keeping the smaller LSN (min for max), so the token stays at the first one the session saw and a lagging replica serves the session's reads below its own writes",
        scenarios: &["regions", "occ-replicated"],
        caught_by: &["R5"],
    },
    BugInfo {
        name: "region_retry_loop",
        what: "the SDK ignores its unavailable-region marks, so a failed region is retried at once",
        scenarios: &["regions", "occ-replicated"],
        caught_by: &["R6", "liveness"],
    },
    BugInfo {
        name: "vote_twice",
        what: "a voter forgets the vote it cast in a term and grants every up-to-date candidate that asks, so two candidates can win one term",
        scenarios: &["regions", "occ-replicated"],
        caught_by: &["election safety", "state machine safety"],
    },
    BugInfo {
        name: "learner_reads_uncommitted",
        what: "read replicas are shipped and apply entries the primary has not committed, so an eventual or session read can see a write a failover then loses (and its ETag, which the new primary then gives another version, lets an If-Match succeed on the wrong version)",
        scenarios: &["regions", "occ-replicated"],
        caught_by: &["state machine safety", "convergence", "durability", "R5", "linearizability"],
    },
    BugInfo {
        name: "removed_region_retried",
        what: "the SDK retries a read answered 403/1008 (the region is being removed from the account) in the same region, unmarked, instead of marking it unavailable and reading from the next preferred region",
        scenarios: &["regions", "occ-replicated"],
        caught_by: &["R6"],
    },
    BugInfo {
        name: "gone_backoff_stretched",
        what: "the SDK backs off a 410 ten times longer than SPEC's schedule (10 s doubling instead of 1 s), so a read whose replica moved stalls far longer than the row allows",
        scenarios: &["occ", "occ-replicated"],
        caught_by: &["R3"],
    },
    BugInfo {
        name: "session_loop_waits_stretched",
        what: "the SDK's session loop after a 404/1002 waits ten times SPEC's schedule (50 ms growing ×5 to 5 s instead of 5 ms to 500 ms)",
        scenarios: &["regions", "occ-replicated"],
        caught_by: &["R6"],
    },
    BugInfo {
        name: "failover_waits_stretched",
        what: "the SDK waits ten times the configured wait before a failover retry (a connection error, 403/3, 403/1008), so a read whose region is down waits ten times as long per region",
        scenarios: &["regions", "occ-replicated"],
        caught_by: &["R6"],
    },
    BugInfo {
        name: "read_fails_over_at_once",
        what: "the SDK sends a read's first failover retry (after a connection error, 403/3, 403/1008) at once, as it does a write's, instead of after the failover wait",
        scenarios: &["regions", "occ-replicated"],
        caught_by: &["R6"],
    },
    BugInfo {
        name: "metadata_ignores_lease",
        what: "Set Blob Metadata skips the lease check, so it is accepted without the lease id (or with another) on a leased blob",
        scenarios: &["leases"],
        caught_by: &["L2", "L3"],
    },
    BugInfo {
        name: "metadata_keeps_etag",
        what: "Set Blob Metadata keeps the blob's version and ETag, so two writes answer one ETag and an If-Match on the ETag from before the change still passes",
        scenarios: &["leases", "occ"],
        caught_by: &["E1", "linearizability"],
    },
    BugInfo {
        name: "head_ignores_if_match",
        what: "Get Blob Properties (HEAD) skips the If-Match test Get Blob applies, so a HEAD naming an ETag the blob no longer has answers 200 instead of 412",
        scenarios: &["occ"],
        caught_by: &["linearizability"],
    },
    BugInfo {
        name: "repair_skips_checksum",
        what: "recovery of a mirrored log reads the first copy without its payload checksums and keeps it whenever it reads as sound, so a record flipped on that copy is served as data and copied over the good copy",
        scenarios: &["leases"],
        caught_by: &["L2", "E1", "L1"],
    },
    BugInfo {
        name: "mirror_ack_after_one_copy",
        what: "the server with a mirrored log answers once the first copy's sync succeeded, never syncing the other copies on the reply path, so a crash cuts acknowledged records from them and a corruption of the first copy then loses them from every copy",
        scenarios: &["leases"],
        caught_by: &["L2", "E1", "L3", "L9"],
    },
];

/// Bugs no seed of the hunt reaches, which `overcast explore` finds by
/// branching: a scenario takes them (`--bug`) beside its rows of [`BUGS`],
/// but the hunt (`overcast bugs`, its test) leaves them out.
pub const EXPLORER_BUGS: &[BugInfo] = &[
    BugInfo {
        name: "stale_term_append",
        what: "a follower takes the appends of a lower term (a deposed primary's) as if they were current, cutting entries of the newer term for them; reached only when an isolation heals as the isolated primary's successor is elected",
        scenarios: &["regions"],
        caught_by: &["state machine safety", "linearizability"],
    },
    BugInfo {
        name: "delete_keeps_lease",
        what: "Delete Blob leaves the blob's lease in place, so the blob created again under its name is still locked (a write without an id refused 412, an acquire with another id 409); reached only on the explorer's branches, whose clients delete a blob they lease",
        scenarios: &["leases"],
        caught_by: &["L2", "L5", "L6"],
    },
    BugInfo {
        name: "batch_blind_to_earlier_ops",
        what: "a transactional batch decides each operation against the state before the batch, not after the operations before it, so two upserts of one item get one ETag and a replace after a create of the item finds it missing; reached only on the explorer's branches, whose batches name an item twice",
        scenarios: &["cosmos"],
        caught_by: &["E1", "linearizability"],
    },
];

/// The fault profile a bug is hunted under when it needs one beyond its
/// scenario's default mix (`FaultMix::profile`): the storage bugs only show
/// after disk faults, which the `storage` profile injects more often.
pub const HUNT_PROFILES: &[(&str, &str)] = &[
    ("retry_fsync_after_error", "storage"),
    ("skip_crc_on_replay", "storage"),
    ("torn_tail_as_end", "storage"),
];

/// The fault profile the bug called `name` is hunted under (`default` for most).
pub fn hunt_profile(name: &str) -> &'static str {
    HUNT_PROFILES
        .iter()
        .find(|(bug, _)| *bug == name)
        .map_or("default", |(_, p)| p)
}

/// The bugs that belong to the scenario called `scenario`, in table order.
pub fn of(scenario: &str) -> Vec<&'static BugInfo> {
    BUGS.iter()
        .chain(EXPLORER_BUGS)
        .filter(|b| b.scenarios.contains(&scenario))
        .collect()
}

/// The names of every bug of the table.
pub fn all_names() -> Vec<&'static str> {
    BUGS.iter().map(|b| b.name).collect()
}

/// The bug called `name`.
pub fn find(name: &str) -> Option<&'static BugInfo> {
    BUGS.iter().find(|b| b.name == name)
}

/// The model's bug set with the named bugs switched on; names the model
/// does not know (a scenario's own bugs) are left to the scenario.
pub fn model_bugs(names: &[String]) -> ModelBugs {
    let mut bugs = ModelBugs::default();
    for name in names {
        bugs.set(name);
    }
    bugs
}
