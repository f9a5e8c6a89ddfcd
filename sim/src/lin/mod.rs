//! Linearizability checking (being built).
