//! Conformance scripts: JSON files of requests and expected answers, each
//! run on a fresh deployment through the real path (SDK, wire, server,
//! write-ahead log), so that a documented or observed behaviour of the real
//! service becomes a regression test written without Rust.
//!
//! [`parse`] reads and checks a script (version `overcast-script/1`),
//! [`run_script`] runs it and reports the first step whose answer differs,
//! [`run_text`] does both with [`SCRIPT_SEED`]. [`format`] is the document,
//! [`run`] the runner, each with one file per service's steps; [`time`] reads
//! and writes the RFC 1123 dates scripts use. The book's pages "Conformance
//! scripts" (a guide) and "The script format" (the reference) document the
//! format for users.

pub mod format;
pub mod run;
pub mod time;

pub use format::{parse, Malformed, Script};
pub use run::{run_script, Difference, ScriptOutcome};

/// The seed every script runs with: scripts pin answers, which must not depend
/// on it (it moves only what a script cannot observe: latencies within 1 ms and
/// the SDK's jitter).
pub const SCRIPT_SEED: u64 = 1;

/// Parses `text` and runs it with [`SCRIPT_SEED`].
pub fn run_text(text: &str) -> Result<ScriptOutcome, Malformed> {
    let script = parse(text)?;
    Ok(run_script(&script, SCRIPT_SEED))
}
