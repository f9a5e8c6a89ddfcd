//! Tests of `harness/src/explore/`.

mod page;
