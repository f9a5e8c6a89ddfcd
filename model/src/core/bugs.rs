//! The model's seeded bugs: one switch set, [`ModelBugs`], handed whole to
//! every component (partition and store, server, client), each bug off by
//! default and switched on by its name.

use serde::{Deserialize, Serialize};

/// Declares [`ModelBugs`] from one list of fields, so that the struct, its
/// [`ModelBugs::NAMES`] and [`ModelBugs::set`] cannot disagree.
macro_rules! model_bugs {
    ($($(#[doc = $doc:literal])+ $name:ident,)+) => {
        /// Every seeded bug of the model, each off by default (`Default` = all off).
        /// A field's name is the bug's name on the command line and in scenario files.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct ModelBugs {
            $($(#[doc = $doc])+ pub $name: bool,)+
        }

        impl ModelBugs {
            /// The name of every bug, in field order.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),+];

            /// Switches on the bug called `name`; `false` (and no change) for an
            /// unknown name.
            pub fn set(&mut self, name: &str) -> bool {
                match name {
                    $(stringify!($name) => self.$name = true,)+
                    _ => return false,
                }
                true
            }

            /// The names of the bugs switched on, in field order.
            pub fn enabled(&self) -> Vec<&'static str> {
                let mut on = Vec::new();
                $(if self.$name {
                    on.push(stringify!($name));
                })+
                on
            }
        }
    };
}

model_bugs! {
    /// Store: `If-Match` always passes on Put and Delete of an existing item
    /// (an absent item still fails `If-Match` with 412), so a stale
    /// read–modify–write overwrites a newer version. Breaks E2/E3 (lost updates).
    skip_if_match,
    /// Store: Delete forgets the tombstone, so a re-created item starts again at
    /// version 1 and gets an ETag it had before. Breaks E1.
    etag_reuse,
    /// Server: answers a write before its log record is synced, so a crash can
    /// lose an acknowledged write.
    ack_before_sync,
    /// Server: group commit holds a write's answer until the records *before*
    /// its own are synced, not its own (the record's `seq` taken as the bound
    /// where one past it belongs), so a write applied while a sync is in
    /// flight is answered when that sync completes, one sync before the one
    /// that covers its record. Only a crash in that window loses it.
    group_commit_off_by_one,
    /// Server: answers a read at once from the state it has applied, records
    /// not yet synced included, so a crash can take back a value a client
    /// has already read.
    read_unsynced,
    /// Client: re-sends a non-idempotent write after a timeout, which may apply
    /// it twice.
    retry_write_after_timeout,
    /// Client: takes a refused connection (a write that never left the client) for a
    /// failure after the write was sent: 503, outcome unknown, not retried, where the
    /// SDK retries it as a transport 410 (SPEC §4.1 row 408: "not sent → 410 (retried)").
    not_sent_taken_as_unknown,
    /// Client: takes the caller's cancel while an attempt is in flight for that
    /// attempt's transport timeout (as `HttpClient`'s own timeout surfaces as a
    /// cancellation) and goes on retrying, so a cancelled read is sent again after
    /// the caller cancelled it.
    retry_after_cancel,
    /// Client: retries a 429 at once instead of waiting for the server's
    /// `x-ms-retry-after-ms`.
    ignore_retry_after,
    /// Client: waits ten times the server's `x-ms-retry-after-ms` after a 429 (a
    /// unit slip), so a throttled call stalls far longer than the server asked.
    retry_after_stretched,
    /// Client: backs off a 449 (`RetryWith`) on the 410 schedule (1 s doubling
    /// to 15 s) instead of its own (10 ms doubling, salted, to 1 s): the two
    /// rows share a window and one match arm took both.
    retry_with_on_gone_backoff,
    /// Client transport: re-sends a throttled (429) request once at once,
    /// below the retry policy, so the server's retry-after is ignored and the
    /// re-send is neither in the SDK's attempt log nor in its 429 budget.
    transport_retries_throttled,
    /// Server: executes every request it receives, duplicates included (no
    /// table of recent outcomes), so a delayed copy of a write applies it again.
    no_dedup,
    /// Server: after a failed log sync, syncs again and carries on (the second
    /// sync succeeds with nothing to write), acknowledging a write whose
    /// bytes the device dropped.
    retry_fsync_after_error,
    /// Log recovery: replays records without checking their CRC, so a flipped
    /// bit is replayed as data.
    skip_crc_on_replay,
    /// Log recovery: treats the first corrupt record as the end of the log
    /// (a torn tail) and cuts it there, silently dropping the acknowledged
    /// records after it.
    torn_tail_as_end,
    /// Server: deduplicates by the attempt's `req_id` alone, without the
    /// session, so another connection's attempt with the same number is
    /// answered with this one's stored outcome and never executed.
    dedup_without_session,
    /// Lease holder: measures its lease from the receipt of the acquire's (or renew's)
    /// response and with no safety margin, instead of from the local start of the
    /// request with one. Breaks L9 under response delay and pauses.
    lease_expiry_on_client_clock,
    /// Lease holder: measures from the start of the request but trusts the full
    /// duration (no margin for drift and clock steps). Breaks L9.
    lease_trust_full_duration,
    /// Lease: a break takes effect at once, whatever the period. Breaks L4.
    break_ignores_period,
    /// Store: a write to a blob whose lease expired or broke keeps the lease, so the
    /// old holder can still renew it after someone else wrote. Breaks L5 (and L3).
    renew_after_write,
    /// Store: a write without a lease id is accepted while the blob is locked. Breaks L2.
    write_without_lease_check,
    /// Store: a write without a lease id is refused with 412 `LeaseIdMissing`
    /// while an expired or broken lease is still on record (the lock judged by
    /// the record's presence, not its state; §2.5 lets it through). Breaks L2
    /// (a refusal the table does not give).
    write_blocked_by_lapsed_lease,
    /// Client: re-sends an acquire without a proposed id after a timeout, so the
    /// caller may be told 409 for a lease its first attempt won. Breaks L5 (idempotency).
    acquire_not_idempotent_retry,
    /// Lease: the id counter lives in memory only, so a recovered server generates
    /// the lease ids it generated before its crash again. Breaks L7.
    lease_id_reuse,
    /// Store: Delete Container ignores the container's lease. Breaks L8.
    container_delete_ignores_lease,
    /// Lease: a renew of an expired lease by its holder is refused with 409
    /// `LeaseIdMismatchWithLeaseOperation`, as if the lease were gone (§2.3
    /// renews it while no one else acquired it and the blob was not written).
    /// Breaks L5 (a refusal the table does not give).
    renew_refused_when_expired,
    /// Cosmos: an upsert with `if-match` on a missing item answers 412 instead
    /// of creating it (SPEC §1.3, AMBIG-6).
    upsert_if_match_absent_412,
    /// Cosmos: a replace or delete with `if-match` of a missing item answers
    /// 412 instead of 404.
    replace_missing_412,
    /// Cosmos: a conflict in a transactional batch rolls back only the failing
    /// operation; the ones before it stay committed.
    batch_partial_commit,
    /// Search: an update arriving while another update of the same resource is
    /// in flight is not refused with 409 but decided against the state the
    /// in-flight one started from.
    search_concurrent_update_not_serialized,
    /// Search SDK: `onlyIfUnchanged: true` is ignored, `If-Match` is never sent.
    search_sdk_ignores_only_if_unchanged,
    /// Cosmos: an upsert that replaces an item keeps its old `_etag`. Breaks E1.
    cosmos_upsert_keeps_etag,
    /// Search: `If-None-Match: *` on an existing resource is ignored, so a
    /// create-only PUT overwrites it. Breaks E5.
    search_if_none_match_ignored,
    /// Client: the read–modify–write helper, after losing a race (412/409),
    /// falls back to an unconditional put of its new body, which loses the
    /// winner's update. Every single request is answered correctly.
    rmw_blind_fallback,
    /// Store: a put whose body equals the current body keeps the current ETag
    /// (a "no change" shortcut), so an identical body gets no fresh ETag. Breaks E1.
    same_body_keeps_etag,
    /// Store: Put Blob over an existing blob answers 200 instead of 201
    /// (the real service answers 201 Created whether it created or replaced).
    replace_answers_200,
    /// Server: after a restart, the server stops serving the first partition
    /// it is asked for after the restart: every request for it gets 503.
    restart_drops_partition,
    /// Store: date conditions are evaluated against Last-Modified rounded to
    /// the nearest second instead of truncated to it (SPEC §0 "Clock
    /// granularity"), so a date in the item's own second can decide wrongly.
    last_modified_rounded,
    /// Queues: a poll also returns items another poll reserved. Breaks Q2.
    poll_returns_reserved,
    /// Queues: a poll orders by time and name alone, ignoring the status
    /// priority. Breaks Q1.
    poll_ignores_priority,
    /// Queues: `items.index` accepts a version not above the indexed one. Breaks Q6.
    index_ignores_version,
    /// Queues: a reservation never ends by itself (no auto-unreserve after
    /// 4 h). Breaks Q3.
    reservation_never_expires,
    /// Queues: a REQUEUE push sets the ordering time back to when the item
    /// was polled instead of now, so it jumps ahead of items queued since. Breaks Q5.
    requeue_keeps_time,
    /// Connector: the full traversal deletes the queue it just filled instead
    /// of the other one. Breaks Q7.
    delete_current_queue,
    /// Connector: the full traversal switches queues without waiting for the
    /// pending `deleteQueueItems`. Breaks Q8.
    traverse_without_waiting,
    /// Connector: the full traversal saves `checkpoint_full` past a batch
    /// before indexing it, so a crash skips the batch. Breaks Q9.
    checkpoint_before_push,
    /// Connector: an index or delete the service refuses as stale (400
    /// FAILED_PRECONDITION) is taken as "a newer version is indexed
    /// already", which is false when connector clocks are skewed: the
    /// newer document is not indexed. Breaks Q9.
    stale_refusal_taken_as_done,
    /// Change feed processor: checkpoints a batch's continuation before the
    /// delegate runs, so a crash or a delegate error loses the batch. Breaks CF4/CF3.
    checkpoint_before_delegate,
    /// Change feed processor: a checkpoint that gets 412 re-reads the lease
    /// and reapplies its token without checking the owner, so a stale owner's
    /// checkpoint sticks. Breaks CF6/CF5/CF3.
    checkpoint_without_owner_check,
    /// Change feed processor: a lease this process owned before resumes from
    /// the position the process last read, not from the stored checkpoint.
    /// Breaks CF3.
    resume_from_memory,
    /// Change feed processor: a delegate error checkpoints the batch and goes
    /// on instead of releasing the lease, so the batch is never redelivered. Breaks CF3.
    drop_batch_on_delegate_error,
    /// Change feed processor: a split's child leases start from "now" instead
    /// of the parent's continuation. Breaks CF9/CF3.
    split_loses_continuation,
    /// Change feed processor: lease timestamps are written from the process's
    /// uptime instead of its UtcNow clock, so every other host judges live
    /// leases expired and they flap. Breaks CF8.
    expiry_on_wrong_clock,
    /// Change feed: a page cut by the page-size hint cuts a batch (one LSN)
    /// apart and continues after that LSN, so the batch's other items are
    /// skipped. Breaks CF3.
    page_cut_splits_batch,
    /// Change feed: a page cut by the page-size hint still answers the end
    /// of the log it read as its continuation, not the page's last LSN, so
    /// the reader skips the changes after the cut. Breaks CF10 (and CF3).
    page_cut_keeps_log_end,
    /// Change feed: a read of a range that has split is served from the
    /// parent's key space instead of answering 410 with its children, so a
    /// reader never moves to the children. Breaks CF10.
    split_range_still_served,
    /// Change feed processor: split handling creates the children but never
    /// deletes the parent lease. Breaks CF7.
    split_keeps_parent,
    /// Change feed: latest-version mode shows a delete (a hard delete or a
    /// TTL purge) as a tombstone version of the item, a document no write
    /// committed (all-versions-and-deletes leaking into latest-version mode).
    /// Breaks CF1.
    feed_shows_deletes,
    /// Change feed: a page is cut by LSN correctly but its items are handed
    /// out sorted by partition key and item id, so one key's changes can come
    /// out of commit order. Breaks CF2.
    page_sorted_by_id,
    /// Change feed: range reads are served by a replica that lags the log by
    /// a few records and answers 304 (instead of 200 with 0 items) while the
    /// newest changes are not visible to it yet. Breaks CF10.
    lagging_replica_304,
    /// Replica: the primary serves strong reads for as long as it believes
    /// it is primary, without its leader lease (and, trusting its role, does
    /// not step down without a majority), so a primary cut off from its
    /// replica set keeps serving after a new one took writes. Breaks
    /// linearizability of strong operations.
    stale_read_after_failover,
    /// Replica: the leader lease has no margin for clock drift, so under the
    /// stated drift bound the old primary's lease can outlast a follower's
    /// promise. Breaks linearizability under drift (found by `regions` with
    /// its clock-rate faults aimed at the isolations).
    leader_lease_no_skew_margin,
    /// Replica: a session read is served below the client's session token.
    /// Breaks R5 (session guarantees).
    session_token_ignored,
    /// Replica: a vote is granted without comparing logs, so a primary can be
    /// elected without every committed entry. Breaks durability.
    failover_loses_committed,
    /// Replica: the primary commits (and acknowledges) a write as soon as it
    /// holds it itself, before a quorum does. Breaks durability after a crash.
    commit_before_quorum,
    /// Replica: a replica sends its acknowledgement of an append as soon as
    /// it has appended the entries, before its log sync, so the primary can
    /// count toward a quorum a copy that a crash of that replica then loses.
    replica_ack_before_sync,
    /// SDK: a region marked unavailable is retried at once (the mark is
    /// ignored when ordering the regions). Breaks R6.
    region_retry_loop,
    /// Replica: read replicas are shipped, and apply, entries the primary has
    /// not committed yet, so an eventual read can see a write that a failover
    /// then loses. Breaks convergence / no phantom reads.
    learner_reads_uncommitted,
    /// SDK: session tokens are merged with the comparison the wrong way
    /// round, keeping the smaller LSN, so a partition's token stays at the
    /// first one the session saw and a lagging replica serves its session
    /// reads. Breaks R5 (read-your-writes, monotonic reads).
    session_token_merged_min,
    /// Replica: a voter grants every up-to-date candidate that asks in a
    /// term, not only the first (the vote it cast is forgotten), so two
    /// candidates can win one term. Breaks election safety.
    vote_twice,
    /// Replica: a follower takes appends of a lower term (a deposed primary's)
    /// as if they were current, cutting entries of the newer term for them.
    /// Breaks state machine safety.
    /// Not in the hunt's table (one of the explorer's bugs): `regions`
    /// seeds seldom reach it (one in a thousand: a deposed primary steps
    /// down before its successor is elected, but for a few hundred ms, and
    /// the drawn isolations mostly heal later); `overcast explore regions`
    /// does, by healing an isolation as the successor is elected.
    stale_term_append,
    /// SDK: a read answered 403/1008 (`DatabaseAccountNotFound`: the region
    /// is being removed from the account) is retried in the same region,
    /// unmarked, instead of the region being marked unavailable and the read
    /// sent to the next preferred region. Breaks R6.
    removed_region_retried,
    /// SDK: the 410 backoff is ten times SPEC's (10 s doubling instead of
    /// 1 s, to a 150 s cap, still cut to the window): a unit slip, so a
    /// read whose replica moved stalls far longer than the row allows.
    /// Breaks R3's upper bound.
    gone_backoff_stretched,
    /// SDK: the session loop's waits after a 404/1002 are ten times SPEC's
    /// (50 ms growing ×5 to a 5 s cap, instead of 5 ms to 500 ms), so a
    /// read that reached a lagging region waits out the loop in few tries.
    /// Breaks R6's wait bounds.
    session_loop_waits_stretched,
    /// SDK: the wait before a failover retry (connection errors, 403/3,
    /// 403/1008) is ten times the configured one (1 s), so a read whose
    /// region is down waits ten seconds per region. Breaks R6's wait bounds.
    failover_waits_stretched,
    /// SDK: a read's first failover goes at once, as a write's does, instead
    /// of after the failover wait (the two kinds share the branch that
    /// decides it). Breaks R6's wait bounds from below.
    read_fails_over_at_once,
    /// Store: Delete Blob leaves the blob's lease in place (SPEC §2.6: deleting
    /// a blob destroys its lease), so the blob created again under the same
    /// name is still locked: a write without an id is refused 412
    /// `LeaseIdMissing`, an acquire with another id 409. Breaks L2 and L5.
    /// Not in the hunt's table (one of the explorer's bugs): no seed of
    /// `leases` deletes a leased blob; the explorer's branches do.
    delete_keeps_lease,
    /// Cosmos: a transactional batch decides each operation against the
    /// state before the batch, not after the operations before it (SPEC
    /// §1.3: one transaction, applied in order), so two upserts of one item
    /// get one `_etag`, and a replace after a create of the same item finds
    /// it missing. Breaks E1 and linearizability.
    /// Not in the hunt's table (one of the explorer's bugs): the batches of
    /// `cosmos` seeds name distinct items; the explorer's branches repeat one.
    batch_blind_to_earlier_ops,
    /// Store: Set Blob Metadata skips the lease check (SPEC §2.5), so it is
    /// accepted without the lease id (or with another) on a leased blob.
    /// Breaks L2.
    metadata_ignores_lease,
    /// Store: Set Blob Metadata keeps the blob's version and ETag (only the
    /// metadata and Last-Modified change), so a later write's If-Match on the
    /// old ETag still passes and the ETag a caller saw before names two
    /// states. Breaks E1.
    metadata_keeps_etag,
    /// Store: Get Blob Properties (HEAD) skips the If-Match test that Get
    /// Blob applies (SPEC §1.1.4: one set of read rules for both), so a HEAD
    /// naming an ETag the blob no longer has answers 200 instead of 412.
    /// Breaks linearizability.
    head_ignores_if_match,
    /// Log recovery over a mirrored log: reads the first copy without its
    /// payload CRCs and keeps it whenever it reads as sound, so a record
    /// flipped on that copy is replayed as data and copied over the good copy.
    repair_skips_checksum,
    /// Server with a mirrored log: a reply waits only for the first copy's
    /// sync (the others are never synced on the reply path), so a crash cuts
    /// an acknowledged record from the other copies, and a corruption of the
    /// first copy then loses it from every copy.
    mirror_ack_after_one_copy,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The fields of a bug set as bincode writes them: one byte per bool, in
    /// field order (independent of the macro's own name table).
    fn field_bytes(bugs: &ModelBugs) -> Vec<u8> {
        bincode::serialize(bugs).expect("bug sets serialise")
    }

    #[test]
    fn every_name_switches_on_exactly_one_field_and_every_field_has_a_name() {
        let fields = field_bytes(&ModelBugs::default());
        assert_eq!(
            fields,
            vec![0; ModelBugs::NAMES.len()],
            "all off by default"
        );
        let mut switched = BTreeSet::new();
        for name in ModelBugs::NAMES {
            let mut bugs = ModelBugs::default();
            assert!(bugs.set(name), "{name}");
            let bytes = field_bytes(&bugs);
            let on: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i] == 1).collect();
            assert_eq!(on.len(), 1, "{name} switches on {on:?}");
            assert!(switched.insert(on[0]), "{name} shares a field");
            assert_eq!(bugs.enabled(), vec![*name]);
        }
        assert_eq!(switched.len(), fields.len());
    }

    #[test]
    fn an_unknown_name_is_refused_and_changes_nothing() {
        let mut bugs = ModelBugs::default();
        assert!(!bugs.set("no_such_bug"));
        assert!(!bugs.set("Skip_If_Match"));
        assert_eq!(bugs, ModelBugs::default());
    }

    #[test]
    fn a_bug_set_round_trips_through_json_names() {
        let mut bugs = ModelBugs::default();
        bugs.set("etag_reuse");
        bugs.set("ignore_retry_after");
        let json = serde_json::to_string(&bugs).expect("serialises");
        assert_eq!(serde_json::from_str::<ModelBugs>(&json).ok(), Some(bugs));
        assert_eq!(
            serde_json::from_str::<ModelBugs>(r#"{"etag_reuse":true}"#).ok(),
            Some(ModelBugs {
                etag_reuse: true,
                ..ModelBugs::default()
            })
        );
        assert!(serde_json::from_str::<ModelBugs>(r#"{"nope":true}"#).is_err());
    }
}
