//! The Cosmos sub-statuses the policy tells apart ([CDB-SUB] in SPEC §8). 0 means none.

/// No sub-status (the SDK's `Unknown`); on a 410: the replica moved.
pub const NONE: u32 = 0;
/// 403/3 `WriteForbidden`: the account's write region moved; refresh it and retry there.
pub const WRITE_FORBIDDEN: u32 = 3;
/// 403/1008 `DatabaseAccountNotFound`: the region is being removed from the account.
pub const DATABASE_ACCOUNT_NOT_FOUND: u32 = 1008;
/// 404/1002 `ReadSessionNotAvailable`: the replica lacks the session token's LSN.
pub const READ_SESSION_NOT_AVAILABLE: u32 = 1002;
/// 429/3092 `SystemResourceUnavailable`: on a multi-write account's write, treated as 503.
pub const SYSTEM_RESOURCE_UNAVAILABLE: u32 = 3092;
/// 410/1000 `NameCacheIsStale`: refresh the container map; retried twice.
pub const NAME_CACHE_IS_STALE: u32 = 1000;
/// 410/1002 `PartitionKeyRangeGone`: a split; not retried by the transport.
pub const PARTITION_KEY_RANGE_GONE: u32 = 1002;
/// 410/1007 `CompletingSplit`: how a split reaches a point operation.
pub const COMPLETING_SPLIT: u32 = 1007;
/// 410/1008 `CompletingPartitionMigration`.
pub const COMPLETING_PARTITION_MIGRATION: u32 = 1008;
/// 410/1022 `LeaseNotFound`: 503 at once.
pub const LEASE_NOT_FOUND: u32 = 1022;
/// 410/20001 `TransportGenerated410`: the .NET SDK's sub-status of a 410 its Direct
/// transport makes for a request that never left the client (a connection refused or a
/// connect that failed): the SPEC names no sub-status for it.
pub const TRANSPORT_GENERATED_410: u32 = 20001;
/// 410/20002 `TimeoutGenerated410`: a read's transport timeout, as the transport sees it.
pub const TIMEOUT_GENERATED_410: u32 = 20002;
/// 503/20003 `TransportGenerated503`.
pub const TRANSPORT_GENERATED_503: u32 = 20003;
/// 503/20006 `Channel_Closed`: a Direct-mode write that failed after it was sent.
pub const CHANNEL_CLOSED: u32 = 20006;
