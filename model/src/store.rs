//! The object store (being built).
