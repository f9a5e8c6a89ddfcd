//! The failure page of a run that did not pass: the violation in words at
//! the top, the facts of the run, the whole run drawn on one time axis
//! ([`overcast_sim::timeline`]: the world's part from the topology, plan
//! and events; the scenario's from its [`crate::registry::ScenarioDef::timeline`]),
//! and each checker's own report (the linearizability counterexample)
//! after it. Written beside a saved failure as `<stem>.html`.

use crate::registry::{CheckRecord, DynScenario, RunHistory};
use crate::saved::run_command;
use crate::scenario::Scenario;
use overcast_sim::check::{Outcome, PropertyId, Verdict, LIVENESS};
use overcast_sim::timeline::{secs, Finding, Section, Timeline, Tone};
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

/// The page of a run that did not pass; `None` for a pass. A scenario
/// whose parameters do not parse still gets a page, drawn generically.
pub fn failure_page(def: &dyn DynScenario, input: &PageInput<'_>) -> Option<String> {
    if input.outcome == Outcome::Passed {
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
    for c in input.checks {
        for v in c.checked.verdict().violations() {
            t.highlight.extend(v.ops.iter().copied());
        }
    }
    let faults = crate::run::fault_words(input.world, input.counters);
    let checks: Vec<String> = input
        .checks
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                crate::run::property_range(c.properties),
                c.checked.verdict_words()
            )
        })
        .collect();
    t.facts = vec![
        (
            "scenario".into(),
            format!("{} — {}", s.name, def.describe()),
        ),
        ("seed".into(), s.seed.to_string()),
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
                "{} simulated, {} operations ({} with unknown outcome), {} retries",
                secs(end_ns),
                input.history.ops(),
                input.history.unknown_ops(),
                input.history.retries()
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
        ("checks".into(), checks.join(", ")),
        ("trace".into(), format!("{:016x}", input.trace_hash)),
        ("rerun".into(), run_command(def, s)),
    ];
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
    for c in input.checks {
        let name = crate::run::property_range(c.properties);
        match (&c.checked.html, &c.checked.explanation) {
            (Some(html), _) => t.sections.push(Section::Page {
                title: format!("{name}: the checker's own report"),
                html: html.clone(),
            }),
            (None, Some(text)) => t.sections.push(Section::Text {
                title: format!("{name}: explanation"),
                text: text.clone(),
            }),
            (None, None) => {}
        }
    }
    Some(t.to_html())
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
pub fn draw_client_calls<C, R, E>(
    h: &overcast_sim::history::History<C, R, E>,
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
