//! Tests of the checker's parts, one module per source file of `lin/src` (they live here, not in the crate, so that the crate is compiled once, not again in test mode).

mod brute;
mod gen;
mod kv;
