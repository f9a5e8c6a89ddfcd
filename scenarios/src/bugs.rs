//! The seeded bugs: realistic mistakes the model can be switched into, each
//! off by default, each of which the harness must find. [`BUGS`] is the one
//! table: `overcast bugs`, the bug hunt test and scenario validation read
//! it; a scenario's bugs are the rows that name it.

use overcast_model::bugs::ModelBugs;

/// A named bug: one row of the table.
#[derive(Clone, Copy, Debug)]
pub struct BugInfo {
    /// The name used on the command line and in scenario files; the model's
    /// bug set switches it on by this name.
    pub name: &'static str,
    /// What the bug does, in a sentence.
    pub what: &'static str,
    /// The scenarios it belongs to (the bug hunt runs it in the first).
    pub scenarios: &'static [&'static str],
    /// The properties expected to catch it: the first property a failing
    /// run reports must be one of these.
    pub caught_by: &'static [&'static str],
}

/// Every named bug of the model.
pub const BUGS: &[BugInfo] = &[
    BugInfo {
        name: "skip_if_match",
        what: "the server ignores If-Match on writes, so a stale read-modify-write overwrites a newer version",
        scenarios: &["occ"],
        caught_by: &["linearizability"],
    },
    BugInfo {
        name: "retry_write_after_timeout",
        what: "the client re-sends a non-idempotent write after a timeout, which may apply it twice",
        scenarios: &["occ"],
        caught_by: &["linearizability", "R1"],
    },
    BugInfo {
        name: "ignore_retry_after",
        what: "the client retries a throttled (429) request at once instead of after the server's retry-after",
        scenarios: &["occ"],
        caught_by: &["R2"],
    },
    BugInfo {
        name: "ack_before_sync",
        what: "the server acknowledges a write before its log record is durable, so a crash can lose it",
        scenarios: &["occ"],
        // A lost write's version is made again by the next write, with the same ETag.
        caught_by: &["linearizability", "E1"],
    },
    BugInfo {
        name: "etag_reuse",
        what: "a deleted and re-created item starts its version again and gets an ETag it had before",
        scenarios: &["occ"],
        caught_by: &["linearizability", "E1"],
    },
    BugInfo {
        name: "rmw_blind_fallback",
        what: "the read-modify-write helper falls back to an unconditional put after losing a race, so an acknowledged increment is lost",
        scenarios: &["occ"],
        caught_by: &["increments"],
    },
    BugInfo {
        name: "same_body_keeps_etag",
        what: "a put of the body an item already has keeps its ETag instead of getting a fresh one",
        scenarios: &["occ"],
        caught_by: &["E1", "linearizability"],
    },
    BugInfo {
        name: "restart_drops_partition",
        what: "a restarted server answers 503 forever to the first partition it is asked for after the restart",
        scenarios: &["occ"],
        caught_by: &["liveness"],
    },
    BugInfo {
        name: "last_modified_rounded",
        what: "date conditions compare against Last-Modified rounded to the nearest second instead of truncated",
        scenarios: &["occ"],
        caught_by: &["linearizability"],
    },
];

/// The names of every bug of the table.
pub fn all_names() -> Vec<&'static str> {
    BUGS.iter().map(|b| b.name).collect()
}

/// The bug called `name`.
pub fn find(name: &str) -> Option<&'static BugInfo> {
    BUGS.iter().find(|b| b.name == name)
}

/// The model's bug set with the named bugs switched on; names the model
/// does not know (a scenario's own bugs) are left to the scenario.
pub fn model_bugs(names: &[String]) -> ModelBugs {
    let mut bugs = ModelBugs::default();
    for name in names {
        bugs.set(name);
    }
    bugs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_bug_has_a_switch_a_scenario_and_a_property() {
        for b in BUGS {
            assert!(
                ModelBugs::default().set(b.name),
                "{}: the model has no switch of that name",
                b.name
            );
            assert!(
                !b.scenarios.is_empty() && !b.caught_by.is_empty(),
                "{}",
                b.name
            );
            for s in b.scenarios {
                assert!(crate::registry::find(s).is_ok(), "{}: scenario {s}", b.name);
            }
        }
    }
}
