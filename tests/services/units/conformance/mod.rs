//! Tests of the conformance scripts' format and time.

mod format;
mod time;
