//! Tests of the `feed` service's parts.

mod check;
