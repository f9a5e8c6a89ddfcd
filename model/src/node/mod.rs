//! The madsim nodes: the single-replica server ([`server`]) around the
//! partitions and the write-ahead log, and the replicated node
//! ([`replica_server`]) around the pure replication state machine
//! ([`replica`]).

pub mod replica;
pub mod replica_server;
pub mod server;
