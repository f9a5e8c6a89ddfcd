//! Tests of the `cosmos` service's parts.

mod check;
mod spec;
