//! Tests of the `occ` service's parts.

mod check;
mod coverage;
mod retry;
mod spec;
