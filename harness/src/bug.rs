//! A seeded bug as the harness sees it: one row of a scenario's bug table,
//! naming the properties expected to catch it.

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
