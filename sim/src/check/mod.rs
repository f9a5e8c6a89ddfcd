//! Checkers that judge a history, and the outcome of a run. Each violation
//! names the property it breaks (the SPEC ids: E1, L1, CF3, ...) and says in
//! words what went wrong; a checker that could not decide says so, and that
//! is never a pass.
//!
//! A checker is one value implementing [`Checker`] for the history type of
//! the scenario that uses it; a scenario lists its checkers, and the run's
//! summary line is built from that list. Generic checkers live here
//! (linearizability is `overcast_lin`, re-exported as [`crate::lin`]; ETag
//! freshness is [`fresh`]); checkers that encode one service's rules live
//! beside the scenario that owns those rules.

pub mod exclusive;
pub mod fresh;

use serde::{Deserialize, Serialize};

/// A property's id: SPEC's (`E1`, `L5`, `CF3`, `R2`, `Q7`) or overcast's
/// own name (`linearizability`, `liveness`). Written as the bare id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PropertyId(&'static str);

impl PropertyId {
    /// The id `id`.
    pub const fn new(id: &'static str) -> PropertyId {
        PropertyId(id)
    }

    /// The id as text.
    pub const fn as_str(self) -> &'static str {
        self.0
    }
}

impl From<&'static str> for PropertyId {
    fn from(id: &'static str) -> PropertyId {
        PropertyId(id)
    }
}

impl std::fmt::Display for PropertyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl PartialEq<&str> for PropertyId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<str> for PropertyId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl Serialize for PropertyId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

/// A property a checker judges: its id and what it means, in one sentence
/// (what `overcast list properties` and the failure page say of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Property {
    /// Its id.
    pub id: PropertyId,
    /// What it means, in one sentence.
    pub meaning: &'static str,
}

impl Property {
    /// The property `id`, meaning `meaning`.
    pub const fn new(id: &'static str, meaning: &'static str) -> Property {
        Property {
            id: PropertyId(id),
            meaning,
        }
    }
}

/// One broken property. Build it with [`Violation::new`] and say what it
/// names: its operations ([`Violation::with_ops`]), the moments and spans
/// of node events it is about ([`Violation::at`], [`Violation::during`]),
/// and a focused account ([`Violation::with_evidence`]); the failure page
/// opens on the window these cover and marks each of them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The property it breaks.
    pub property: PropertyId,
    /// What went wrong, in one or a few sentences.
    pub message: String,
    /// Operation ids involved, the most important first (the page opens on
    /// the first when the others lie far from it).
    #[serde(default)]
    pub ops: Vec<u64>,
    /// The node events and spans of time it is about, besides operations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moments: Vec<Moment>,
    /// The checker's focused account of it, shown above the page's lanes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
}

impl Violation {
    /// A violation of `property`, in the words of `message`, naming nothing yet.
    pub fn new(property: impl Into<PropertyId>, message: impl Into<String>) -> Violation {
        Violation {
            property: property.into(),
            message: message.into(),
            ops: Vec::new(),
            moments: Vec::new(),
            evidence: None,
        }
    }

    /// Naming these operations (history ids), the most important first.
    pub fn with_ops(mut self, ops: impl IntoIterator<Item = u64>) -> Violation {
        self.ops.extend(ops);
        self
    }

    /// Naming what happened on `lane` (a node, or a lane the scenario's
    /// drawing adds) at `at_ns` true simulated time, in a few words.
    pub fn at(self, lane: impl Into<String>, at_ns: u64, label: impl Into<String>) -> Violation {
        self.during(lane, at_ns, at_ns, label)
    }

    /// Naming a span of true simulated time on `lane` (a lease as its
    /// holder believed it, a change waiting to be delivered).
    pub fn during(
        mut self,
        lane: impl Into<String>,
        start_ns: u64,
        end_ns: u64,
        label: impl Into<String>,
    ) -> Violation {
        self.moments.push(Moment {
            lane: lane.into(),
            start_ns,
            end_ns: end_ns.max(start_ns),
            label: label.into(),
        });
        self
    }

    /// With the checker's focused account.
    pub fn with_evidence(mut self, evidence: Evidence) -> Violation {
        self.evidence = Some(evidence);
        self
    }
}

/// A moment or a span of true simulated time a violation names, on one lane
/// of the failure page (a checkpoint, a poll, a delivery, a lease held).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Moment {
    /// The lane: a node's name (an incarnation such as `host-3#1` is drawn
    /// on `host-3`), a lane the scenario's drawing adds, or empty for the
    /// world as a whole.
    pub lane: String,
    /// Its start, true ns.
    pub start_ns: u64,
    /// Its end, true ns (the start again for an instant).
    pub end_ns: u64,
    /// A few words for its mark.
    pub label: String,
}

/// A checker's focused account of one violation: a few sentences and a
/// table whose rows may name operations (e.g. how a key got into the state
/// an operation could not follow; a lease as the server saw it beside its
/// holder's belief). The failure page shows it above its lanes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// Its heading.
    pub title: String,
    /// Sentences before the table.
    pub lead: Vec<String>,
    /// The table's column headings.
    pub columns: Vec<String>,
    /// The table's rows, in the order they are told.
    pub rows: Vec<EvidenceRow>,
    /// Sentences after the table.
    pub notes: Vec<String>,
}

/// One row of an [`Evidence`] table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EvidenceRow {
    /// The operation the row is about, if any (the page links it to its bar).
    pub op: Option<u64>,
    /// The cells, one per column.
    pub cells: Vec<String>,
    /// The row the violation turns on (drawn marked).
    pub marked: bool,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.property, self.message)
    }
}

/// What one checker concluded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Every property it judges holds.
    Held,
    /// These properties are broken.
    Broken {
        /// The violations, most important first (never empty).
        violations: Vec<Violation>,
    },
    /// It could not decide (a budget ran out): not a pass.
    Undecided {
        /// Why, in words (which budget, how far it got).
        reason: String,
    },
}

impl Verdict {
    /// `Held` when `violations` is empty, `Broken` otherwise.
    pub fn from_violations(violations: Vec<Violation>) -> Verdict {
        if violations.is_empty() {
            Verdict::Held
        } else {
            Verdict::Broken { violations }
        }
    }

    /// The violations (none unless broken).
    pub fn violations(&self) -> &[Violation] {
        match self {
            Verdict::Broken { violations } => violations,
            _ => &[],
        }
    }
}

/// What a checker hands back: its verdict, a short note for the summary line
/// (e.g. "8 items"), and optionally a longer explanation and an HTML report
/// for a person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// The verdict: every result has one (there is no default that could
    /// read as held for a checker that forgot to give it).
    verdict: Verdict,
    /// A few words for the summary line, e.g. "8 items".
    pub note: String,
    /// A longer explanation printed after the summary when the check fails.
    pub explanation: Option<String>,
    /// A self-contained HTML page drawing the counterexample.
    pub html: Option<String>,
    /// Some of the history could not be judged (the note says which part
    /// and why): a held verdict then reads "held, partly judged", so a
    /// reader never takes a partial check for a full one.
    pub partly_judged: bool,
}

impl Checked {
    /// A result with this verdict and nothing else.
    pub fn new(verdict: Verdict) -> Checked {
        Checked {
            verdict,
            note: String::new(),
            explanation: None,
            html: None,
            partly_judged: false,
        }
    }

    /// The verdict.
    pub fn verdict(&self) -> &Verdict {
        &self.verdict
    }

    /// With a note for the summary line.
    pub fn with_note(mut self, note: impl Into<String>) -> Checked {
        self.note = note.into();
        self
    }

    /// Marked as partly judged when `partly` (see [`Checked::partly_judged`]).
    pub fn partly(mut self, partly: bool) -> Checked {
        self.partly_judged = partly;
        self
    }

    /// The verdict in a word or two for summary lines: "held", "held, partly
    /// judged", "BROKEN ×n" or "UNDECIDED".
    pub fn verdict_words(&self) -> String {
        match self.verdict() {
            Verdict::Held if self.partly_judged => "held, partly judged".to_string(),
            Verdict::Held => "held".to_string(),
            Verdict::Broken { violations } => format!("BROKEN ×{}", violations.len()),
            Verdict::Undecided { .. } => "UNDECIDED".to_string(),
        }
    }
}

/// One checker: the properties it judges (SPEC ids), and a check of a
/// history of type `H`. A check must be deterministic: budgets count steps,
/// never wall time, so the same history always gets the same verdict.
pub trait Checker<H: ?Sized>: Send + Sync {
    /// The properties it judges, e.g. R1, R2 and R3; the first one names
    /// the checker in the summary line.
    fn properties(&self) -> &'static [Property];
    /// Judges a history.
    fn check(&self, history: &H) -> Checked;
    /// A word or two that tell this checker from another one judging the
    /// same properties (the servers' view of R1–R3 beside the client's),
    /// shown after its properties in the summary and on the page. Default: none.
    fn label(&self) -> &'static str {
        ""
    }
}

/// One analysis of a history, shared by the checkers that each report a
/// part of it (the lease rules, the feed's CF rules), so that a history is
/// walked once rather than once per checker. The checkers of one scenario
/// are made anew for every run; the analysis is kept for the history it
/// was made from (by address) and made again for any other.
pub struct SharedAnalysis<A> {
    cell: std::sync::Arc<std::sync::Mutex<Option<Analysed<A>>>>,
}

/// An analysis and the address of the history it was made from.
type Analysed<A> = (usize, std::sync::Arc<A>);

impl<A> Clone for SharedAnalysis<A> {
    fn clone(&self) -> Self {
        SharedAnalysis {
            cell: self.cell.clone(),
        }
    }
}

impl<A> Default for SharedAnalysis<A> {
    fn default() -> Self {
        SharedAnalysis {
            cell: Default::default(),
        }
    }
}

impl<A> SharedAnalysis<A> {
    /// The analysis of `history`: made by `analyse` the first time, then shared.
    pub fn of<H>(&self, history: &H, analyse: impl FnOnce(&H) -> A) -> std::sync::Arc<A> {
        let key = history as *const H as usize;
        let mut cell = self.cell.lock().unwrap_or_else(|e| e.into_inner());
        match &*cell {
            Some((k, a)) if *k == key => a.clone(),
            _ => {
                let a = std::sync::Arc::new(analyse(history));
                *cell = Some((key, a.clone()));
                a
            }
        }
    }
}

/// How a run ended. Each kind has its own exit code ([`Outcome::exit_code`]);
/// when several apply, the first in this list wins (a broken safety property
/// outranks a liveness failure, which outranks an undecided check).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The harness itself failed (a panic, a broken invariant of the harness).
    HarnessError,
    /// A safety property is broken.
    Violation,
    /// Something never completed after every fault was healed.
    Liveness,
    /// A checker could not decide (never a pass).
    Undecided,
    /// A run drawn past its deployment's fault budget (`--beyond-budget`)
    /// whose checks could not judge everything but found nothing wrong: the
    /// damage was detected and refused, no wrong answer served. A pass of
    /// that experiment, told apart from a plain one.
    FailedLoudly,
    /// Every check held.
    Passed,
}

/// The property liveness failures carry: every run is judged on it.
pub const LIVENESS: Property = Property::new(
    "liveness",
    "once every fault is healed, every awaited node finishes its work (a failure says what is pending)",
);

impl Outcome {
    /// The exit code of a command whose worst run ended so: 0 passed,
    /// 1 violation, 3 liveness, 4 undecided, 5 harness error (2 is bad input);
    /// failed loudly is 0, as a pass.
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Passed | Outcome::FailedLoudly => 0,
            Outcome::Violation => 1,
            Outcome::Liveness => 3,
            Outcome::Undecided => 4,
            Outcome::HarnessError => 5,
        }
    }

    /// Whether the run passed: every check held, or (beyond the budget) it
    /// failed loudly.
    pub fn passes(self) -> bool {
        matches!(self, Outcome::Passed | Outcome::FailedLoudly)
    }

    /// A word for the verdict line: `PASS`, `FAILED LOUDLY`, `VIOLATION`,
    /// `LIVENESS`, `UNDECIDED`, `HARNESS ERROR`.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Passed => "PASS",
            Outcome::FailedLoudly => "FAILED LOUDLY",
            Outcome::Violation => "VIOLATION",
            Outcome::Liveness => "LIVENESS",
            Outcome::Undecided => "UNDECIDED",
            Outcome::HarnessError => "HARNESS ERROR",
        }
    }

    /// The outcome of a set of checker verdicts (no panic happened).
    pub fn of<'a>(verdicts: impl IntoIterator<Item = &'a Verdict>) -> Outcome {
        let mut worst = Outcome::Passed;
        for v in verdicts {
            let o = match v {
                Verdict::Held => Outcome::Passed,
                Verdict::Undecided { .. } => Outcome::Undecided,
                Verdict::Broken { violations } => {
                    if violations.iter().all(|v| v.property == LIVENESS.id) {
                        Outcome::Liveness
                    } else {
                        Outcome::Violation
                    }
                }
            };
            worst = worst.min(o);
        }
        worst
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broken(p: &'static str) -> Verdict {
        Verdict::Broken {
            violations: vec![Violation::new(p, "x")],
        }
    }

    #[test]
    fn a_partly_judged_held_check_says_so() {
        let full = Checked::new(Verdict::Held);
        assert_eq!(full.verdict_words(), "held");
        assert_eq!(
            full.clone().partly(true).verdict_words(),
            "held, partly judged"
        );
        let broken =
            Checked::new(Verdict::from_violations(vec![Violation::new("E1", "m")])).partly(true);
        assert_eq!(broken.verdict_words(), "BROKEN ×1");
    }

    #[test]
    fn the_worst_verdict_decides_the_outcome_and_undecided_is_never_a_pass() {
        let undecided = Verdict::Undecided {
            reason: "budget".into(),
        };
        assert_eq!(Outcome::of([&Verdict::Held]), Outcome::Passed);
        assert_eq!(
            Outcome::of([&Verdict::Held, &undecided]),
            Outcome::Undecided
        );
        assert_eq!(
            Outcome::of([&broken(LIVENESS.id.as_str()), &undecided]),
            Outcome::Liveness
        );
        assert_eq!(
            Outcome::of([&broken(LIVENESS.id.as_str()), &broken("E1"), &undecided]),
            Outcome::Violation
        );
        let codes: Vec<u8> = [
            Outcome::Passed,
            Outcome::Violation,
            Outcome::Liveness,
            Outcome::Undecided,
            Outcome::HarnessError,
        ]
        .iter()
        .map(|o| o.exit_code())
        .collect();
        assert_eq!(codes, [0, 1, 3, 4, 5]);
    }
}
