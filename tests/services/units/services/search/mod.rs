//! Tests of the `search` service's parts.

mod check;
mod spec;
