//! The seeded bugs: realistic mistakes the model can be switched into, each
//! off by default, each of which the harness must find.

use overcast_model::bugs::ModelBugs;

/// A named bug.
#[derive(Clone, Copy, Debug)]
pub struct BugInfo {
    /// The name used on the command line and in scenario files.
    pub name: &'static str,
    /// What the bug does, in a sentence.
    pub what: &'static str,
    /// The scenario that should catch it.
    pub scenario: &'static str,
}

/// Every named bug.
pub const BUGS: &[BugInfo] = &[
    BugInfo {
        name: "skip_if_match",
        what: "the server ignores If-Match on writes, so a stale read-modify-write overwrites a newer version",
        scenario: "occ",
    },
    BugInfo {
        name: "retry_write_after_timeout",
        what: "the client re-sends a non-idempotent write after a timeout, which may apply it twice",
        scenario: "occ",
    },
    BugInfo {
        name: "ignore_retry_after",
        what: "the client retries a throttled (429) request at once instead of after the server's retry-after",
        scenario: "occ",
    },
    BugInfo {
        name: "ack_before_sync",
        what: "the server acknowledges a write before its log record is durable, so a crash can lose it",
        scenario: "occ",
    },
    BugInfo {
        name: "etag_reuse",
        what: "a deleted and re-created item starts its version again and gets an ETag it had before",
        scenario: "occ",
    },
];

/// Turns bug names into the model's switches; an unknown name is an error
/// naming the known ones.
pub fn switches(names: &[String]) -> Result<ModelBugs, String> {
    let mut s = ModelBugs::default();
    for name in names {
        if !s.set(name) {
            let known: Vec<&str> = BUGS.iter().map(|b| b.name).collect();
            return Err(format!(
                "unknown bug '{name}' (known: {})",
                known.join(", ")
            ));
        }
    }
    Ok(s)
}

/// The bug called `name`.
pub fn find(name: &str) -> Option<&'static BugInfo> {
    BUGS.iter().find(|b| b.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_bug_has_a_switch_and_unknown_names_are_refused() {
        for b in BUGS {
            assert_ne!(
                switches(&[b.name.to_string()]).unwrap(),
                ModelBugs::default(),
                "{}",
                b.name
            );
        }
        let err = switches(&["nope".to_string()]).unwrap_err();
        assert!(err.contains("unknown bug 'nope'") && err.contains("skip_if_match"));
    }
}
