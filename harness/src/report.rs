//! The failure page of a run that did not pass: the violation in words at
//! the top with the checker's focused account of it, the whole run drawn on
//! one time axis and opened on the violation's window
//! ([`overcast_sim::timeline`]: the world's part from the topology, plan
//! and events; the scenario's from its [`crate::registry::ScenarioDef::timeline`]),
//! then the facts of the run, the checks with what they mean, and each
//! checker's full report (the linearizability counterexample). Written
//! beside a saved failure as `<stem>.html` ([`crate::saved::save_failure`],
//! [`write_page_beside`]).

use crate::registry::{CheckRecord, DynScenario, RunHistory};
use crate::saved::run_command;
use crate::scenario::Scenario;
use overcast_sim::check::{Outcome, PropertyId, Verdict, Violation, LIVENESS};
use overcast_sim::timeline::{secs, CheckLine, Finding, Section, Timeline, Tone};
use overcast_sim::world::WorldOutcome;
use std::collections::BTreeMap;

/// What a failure page is drawn from: the parts of a run result it reads.
pub struct PageInput<'a> {
    /// The scenario, with its resolved plan.
    pub scenario: &'a Scenario,
    /// The history.
    pub history: &'a dyn RunHistory,
    /// What the world did.
    pub world: &'a WorldOutcome,
    /// The model's own fault counters.
    pub counters: &'a BTreeMap<String, u64>,
    /// The checkers' results.
    pub checks: &'a [CheckRecord],
    /// How the run ended.
    pub outcome: Outcome,
    /// The property that names the outcome.
    pub first_property: Option<PropertyId>,
    /// The history's trace hash.
    pub trace_hash: u64,
}

/// The findings of the checks: every violation and undecided check, the
/// one that names the outcome first.
fn findings(input: &PageInput<'_>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for c in input.checks {
        match c.checked.verdict() {
            Verdict::Broken { violations } => out.extend(violations.iter().map(|v| Finding {
                property: v.property.to_string(),
                kind: if v.property == LIVENESS.id {
                    Outcome::Liveness.word().into()
                } else {
                    Outcome::Violation.word().into()
                },
                message: v.message.clone(),
            })),
            Verdict::Undecided { reason } => out.push(Finding {
                property: c.name().to_string(),
                kind: Outcome::Undecided.word().into(),
                message: format!("the check could not decide: {reason}"),
            }),
            Verdict::Held => {}
        }
    }
    if let Some(first) = &input.first_property {
        if let Some(i) = out.iter().position(|f| first == f.property.as_str()) {
            let f = out.remove(i);
            out.insert(0, f);
        }
    }
    out
}

/// The violation that names the outcome: the first of its property.
fn lead_violation<'a>(input: &PageInput<'a>) -> Option<&'a Violation> {
    let first = input.first_property?;
    input
        .checks
        .iter()
        .flat_map(|c| c.checked.verdict().violations())
        .find(|v| v.property == first)
}

/// The window a violation is about, true ns: the span of its operations as
/// drawn and of its moments; `None` when it names neither.
fn window_of(v: &Violation, t: &Timeline) -> Option<(u64, u64)> {
    let ops = t
        .ops
        .iter()
        .filter(|o| v.ops.contains(&o.id))
        .map(|o| o.named_span());
    let moments = v.moments.iter().map(|m| (m.start_ns, m.end_ns));
    let all: Vec<(u64, u64)> = ops.chain(moments).collect();
    let lo = all.iter().map(|w| w.0).min()?;
    let hi = all.iter().map(|w| w.1).max()?;
    Some((lo, hi))
}

/// The checks as the page lists them: each by its unique name, with its
/// verdict, its note and what its properties mean.
pub fn check_lines(checks: &[CheckRecord]) -> Vec<CheckLine> {
    checks
        .iter()
        .map(|c| CheckLine {
            name: c.title(),
            verdict: c.checked.verdict_words(),
            note: c.checked.note.clone(),
            properties: c
                .properties
                .iter()
                .map(|p| (p.id.to_string(), p.meaning.to_string()))
                .collect(),
        })
        .collect()
}

/// The page of a run that did not pass; `None` for a pass. A scenario
/// whose parameters do not parse still gets a page, drawn generically.
///
/// The page opens on the violation that names the outcome: its operations
/// are the page's lead ([`Timeline::lead`]), the window of its operations
/// and moments is where the drawing opens ([`Timeline::window`]), and its
/// checker's focused account ([`overcast_sim::check::Evidence`]) stands
/// above the lanes. Every violation's operations are outlined and its
/// moments marked on their lanes.
pub fn failure_page(def: &dyn DynScenario, input: &PageInput<'_>) -> Option<String> {
    if input.outcome.passes() {
        return None;
    }
    let s = input.scenario;
    let end_ns = input.world.sim_ns.max(
        input
            .world
            .events
            .iter()
            .map(|e| e.at_ns)
            .max()
            .unwrap_or(0),
    );
    let property = input
        .first_property
        .map(|p| p.to_string())
        .unwrap_or_default();
    let mut t = Timeline::new(
        format!(
            "{} seed {}: {} {}",
            s.name,
            s.seed,
            property,
            input.outcome.word().to_lowercase()
        ),
        end_ns,
    );
    t.findings = findings(input);
    t.checks = check_lines(input.checks);
    let violations: Vec<&Violation> = input
        .checks
        .iter()
        .flat_map(|c| c.checked.verdict().violations())
        .collect();
    for v in &violations {
        t.highlight.extend(v.ops.iter().copied());
    }
    let lead = lead_violation(input);
    if let Some(v) = lead {
        t.lead = v.ops.clone();
        t.evidence.extend(v.evidence.clone());
    }
    let faults = crate::run::fault_words(input.world, input.counters);
    let counted = crate::run::counter_words(input.counters);
    let checks: Vec<String> = input
        .checks
        .iter()
        .map(|c| format!("{} {}", c.title(), c.checked.verdict_words()))
        .collect();
    t.facts = vec![
        (
            "scenario".into(),
            format!("{} — {}", s.name, def.describe()),
        ),
        (
            "seed".into(),
            if s.branch.is_empty() {
                s.seed.to_string()
            } else {
                format!(
                    "{}, branched at {}",
                    s.seed,
                    overcast_sim::rng::branch_path_words(&s.branch)
                )
            },
        ),
        (
            "bugs on".into(),
            if s.bugs.is_empty() {
                "none".into()
            } else {
                s.bugs.join(", ")
            },
        ),
        ("parameters".into(), def.header(&s.params)),
        (
            "run".into(),
            format!(
                "{} simulated; {}",
                secs(end_ns),
                crate::run::OpCount::of(input.history)
            ),
        ),
        (
            "faults".into(),
            if faults.is_empty() {
                "none".into()
            } else {
                faults.join(" ")
            },
        ),
    ];
    if !counted.is_empty() {
        t.facts.push(("counted".into(), counted.join(" ")));
    }
    t.facts.extend([
        ("checks".into(), checks.join(", ")),
        ("trace".into(), format!("{:016x}", input.trace_hash)),
        ("rerun".into(), run_command(def, s)),
    ]);
    if let Err(e) = def.draw(s, input.history, input.world, &mut t) {
        // The world's part needs the parameters; the history draws itself.
        t.facts.push((
            "note".into(),
            format!("drawn without the scenario's view: {e}"),
        ));
        input
            .history
            .draw_generic(&mut t, &|c| crate::registry::client_node("client", c, 0));
    }
    // The moments go on the lanes the drawing made (a scenario's own ones
    // included), after it.
    for v in &violations {
        let is_lead = lead.is_some_and(|l| std::ptr::eq(l, *v));
        for m in &v.moments {
            t.add_moment(m, v.property.as_str(), is_lead);
        }
    }
    t.window = lead.and_then(|v| window_of(v, &t));
    // The states the run reached (its scenario's goals), before the checkers' reports.
    if let Some(s) = crate::goals::section(def, input.scenario, input.history) {
        t.sections.push(s);
    }
    for c in input.checks {
        let name = c.title();
        match (&c.checked.html, &c.checked.explanation) {
            (Some(html), _) => t.sections.push(Section::Page {
                title: format!("{name}: the checker's full report"),
                html: html.clone(),
            }),
            (None, Some(text)) => t.sections.push(Section::Text {
                title: format!("{name}: the checker's explanation"),
                text: text.clone(),
            }),
            (None, None) => {}
        }
    }
    Some(t.to_html())
}

/// Writes the failure page of `r` beside the saved file `saved` (`x.json`
/// → `x.html`, `x.shrunk.json` → `x.shrunk.html`), as `shrink` and `replay`
/// do for the run they end on; returns where, or `None` for a run that
/// passed (it has no page).
pub fn write_page_beside(
    r: &crate::run::RunResult,
    saved: &std::path::Path,
) -> std::io::Result<Option<std::path::PathBuf>> {
    let Some(page) = r.html() else {
        return Ok(None);
    };
    let path = saved.with_extension("html");
    std::fs::write(&path, page)?;
    Ok(Some(path))
}

/// A call's words and tone: what was asked, then `→` what was seen with
/// its status's colour; open-ended (unknown) when nothing was seen.
pub fn call_words(asked: String, seen: Option<(u16, String)>) -> (String, Tone) {
    match seen {
        None => (asked, Tone::Unknown),
        Some((status, words)) => (
            format!("{asked} → {words}"),
            crate::registry::status_tone(u64::from(status)),
        ),
    }
}

/// Draws a history's calls, each on the lane `lane` gives for its history
/// client number (its node: [`crate::registry::client_node`]), in the words
/// `words` gives.
pub fn draw_client_calls<C, R, E, L>(
    h: &overcast_sim::history::History<C, R, E, L>,
    t: &mut Timeline,
    lane: impl Fn(usize) -> String,
    words: impl Fn(&C, Option<&R>) -> (String, Tone),
) {
    t.add_ops(
        &h.ops,
        |o| lane(o.client),
        |o| words(&o.call, o.result.as_ref()),
    );
}
