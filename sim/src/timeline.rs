//! One page per failing run: the whole run on one time axis, as a
//! self-contained HTML page (inline CSS, JavaScript and SVG; no network).
//!
//! A [`Timeline`] is plain data: lanes (one per node, plus any the scenario
//! adds), operations as bars (an unknown outcome is open-ended), spans
//! (crashes, pauses, a scenario's own intervals such as a lease in the
//! server's view and in its holder's belief), partitions as bands across the
//! lanes they cut, instant marks, each node's clock offset over time, the
//! violation in words with the operations it names highlighted, and extra
//! sections (a checker's own report). [`Timeline::add_world`] fills in what
//! the world did from its topology, fault plan and events; the scenario adds
//! its operations ([`Timeline::add_ops`]) and its own lanes; [`Timeline::to_html`]
//! draws it. sim knows nothing of the system under test: every label comes
//! from the scenario.
//!
//! Times are simulated nanoseconds in the data and simulated seconds on the
//! page ("12.345 s"): the page never shows a raw nanosecond count.

use crate::check::{Evidence, Moment};
use crate::clock::{ClockSkew, EPOCH_MS};
use crate::faults::FaultPlan;
use crate::history::OpRecord;
use crate::world::{Happening, Topology, WorldEvent};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

mod page;

/// A simulated time on the page: `12.345 s`.
pub fn secs(ns: u64) -> String {
    format!("{:.3} s", ns as f64 / 1e9)
}

/// A node's clock reading (ms since the Unix epoch) as seconds on that
/// clock since the simulation's start (`11.687 s`), so that it reads like
/// the page's true times, from which it differs by the node's skew.
pub fn clock_secs(local_ms: u64) -> String {
    secs(local_ms.saturating_sub(EPOCH_MS) * 1_000_000)
}

/// A duration on the page: `850 µs`, `4.2 ms`, `1.250 s`.
pub fn span_words(ns: u64) -> String {
    if ns < 1_000_000 {
        format!("{} µs", ns / 1000)
    } else if ns < 1_000_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        secs(ns)
    }
}

/// One broken (or undecided) property, in words, at the top of the page.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// The property, e.g. `L9`, `linearizability`, `liveness`.
    pub property: String,
    /// `VIOLATION`, `LIVENESS` or `UNDECIDED`.
    pub kind: String,
    /// What went wrong, in words.
    pub message: String,
}

/// A row of the drawing.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    /// Its id, which operations, spans and marks name (a node's name for a node lane).
    pub id: String,
    /// What the page calls it.
    pub label: String,
    /// A short note under the label (role, disk, clock).
    pub note: String,
}

/// How an operation ended, for its colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// A success.
    Ok,
    /// A refusal the service gives by design (a failed precondition, a conflict).
    Refused,
    /// An error (5xx, a timeout surfaced as an error).
    Error,
    /// No answer: the outcome is unknown (drawn open-ended).
    Unknown,
    /// Neither (a scenario that does not say).
    Neutral,
}

impl Tone {
    fn word(self) -> &'static str {
        match self {
            Tone::Ok => "ok",
            Tone::Refused => "refused",
            Tone::Error => "error",
            Tone::Unknown => "unknown",
            Tone::Neutral => "neutral",
        }
    }
}

/// One operation as a bar.
#[derive(Clone, Debug, PartialEq)]
pub struct OpBar {
    /// The operation's id in the history.
    pub id: u64,
    /// The lane it is drawn in.
    pub lane: String,
    /// Invocation, true ns.
    pub start_ns: u64,
    /// Return, true ns; `None` when the outcome is unknown (open-ended).
    pub end_ns: Option<u64>,
    /// A few words on the bar, e.g. `put k3 → 412`.
    pub label: String,
    /// More for the tooltip and the details box.
    pub detail: String,
    /// How it ended.
    pub tone: Tone,
}

impl OpBar {
    /// The time it stands for where a violation names it: invocation to
    /// return, or its invocation alone when its outcome is unknown (it may
    /// have taken effect at any later time, which says nothing of where the
    /// violation is).
    pub fn named_span(&self) -> (u64, u64) {
        (self.start_ns, self.end_ns.unwrap_or(self.start_ns))
    }
}

/// What a span is, for how it is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanKind {
    /// The node was down (shaded across its lane).
    Crash,
    /// The node was paused (shaded across its lane).
    Pause,
    /// Another fault on the node (shaded across its lane).
    Fault,
    /// Something held as the authority saw it (e.g. a lease in the server's view): a solid bar.
    Held,
    /// Something held as a participant believed it (e.g. a holder's belief): a hatched bar.
    Believed,
    /// Any other interval: a light bar.
    Note,
}

impl SpanKind {
    fn word(self) -> &'static str {
        match self {
            SpanKind::Crash => "crash",
            SpanKind::Pause => "pause",
            SpanKind::Fault => "fault",
            SpanKind::Held => "held",
            SpanKind::Believed => "believed",
            SpanKind::Note => "note",
        }
    }
}

/// An interval on one lane.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    /// The lane.
    pub lane: String,
    /// Start, true ns.
    pub start_ns: u64,
    /// End, true ns; `None`: until the end of the run.
    pub end_ns: Option<u64>,
    /// A few words on the bar.
    pub label: String,
    /// More for the tooltip.
    pub detail: String,
    /// How it is drawn.
    pub kind: SpanKind,
    /// Part of what the violation names.
    pub highlight: bool,
}

/// A network partition: the links from `from` to `to` (and back unless
/// `one_way`) were cut. Drawn as a band across the lanes it cuts.
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    /// One side.
    pub from: Vec<String>,
    /// The other side.
    pub to: Vec<String>,
    /// Only `from` → `to` was cut.
    pub one_way: bool,
    /// Start, true ns.
    pub start_ns: u64,
    /// End, true ns.
    pub end_ns: u64,
}

/// What a mark is, for how it is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkKind {
    /// Something a node did or saw.
    Event,
    /// A fault (a disk losing data, a clock step).
    Fault,
    /// Where something went wrong.
    Problem,
}

impl MarkKind {
    fn word(self) -> &'static str {
        match self {
            MarkKind::Event => "event",
            MarkKind::Fault => "fault",
            MarkKind::Problem => "problem",
        }
    }
}

/// An instant on one lane.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    /// The lane.
    pub lane: String,
    /// When, true ns.
    pub at_ns: u64,
    /// A word or two (shown when there is room).
    pub label: String,
    /// More for the tooltip.
    pub detail: String,
    /// How it is drawn.
    pub kind: MarkKind,
    /// Part of what the violation names.
    pub highlight: bool,
}

/// One node's clock offset from true time over the run.
#[derive(Clone, Debug, PartialEq)]
pub struct ClockLine {
    /// The node.
    pub node: String,
    /// `(true ns, offset ms)`, in time order; linear between points.
    pub points: Vec<(u64, f64)>,
    /// Its skew in words.
    pub note: String,
}

/// An extra part of the page after the drawing.
#[derive(Clone, Debug, PartialEq)]
pub enum Section {
    /// Preformatted text under a heading.
    Text {
        /// The heading.
        title: String,
        /// The text.
        text: String,
    },
    /// A whole self-contained HTML page (a checker's own report), embedded in a frame.
    Page {
        /// The heading.
        title: String,
        /// The page.
        html: String,
    },
}

/// The whole run, ready to draw. Build it with [`Timeline::new`],
/// [`Timeline::add_world`] and [`Timeline::add_ops`], then push the
/// scenario's own lanes, spans and marks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// The page's title, e.g. `leases seed 7: L9 violated`.
    pub title: String,
    /// Facts about the run: `(what, value)`, e.g. `("seed", "7")`.
    pub facts: Vec<(String, String)>,
    /// What went wrong, most important first.
    pub findings: Vec<Finding>,
    /// The end of the run, true ns.
    pub end_ns: u64,
    /// The lanes, top to bottom.
    pub lanes: Vec<Lane>,
    /// Operations.
    pub ops: Vec<OpBar>,
    /// Intervals.
    pub spans: Vec<Span>,
    /// Partitions.
    pub bands: Vec<Band>,
    /// Instants.
    pub marks: Vec<Mark>,
    /// Clock offsets of the nodes whose clocks are skewed.
    pub clocks: Vec<ClockLine>,
    /// Ids of the operations the violations name (outlined on their lanes).
    pub highlight: BTreeSet<u64>,
    /// The operations the violation that names the outcome names, its most
    /// important first: the page's table of named operations, and where it opens.
    pub lead: Vec<u64>,
    /// The time window the violation that names the outcome is about, true
    /// ns (its operations and moments); `None`: the span of everything
    /// highlighted ([`Timeline::focus`]).
    pub window: Option<(u64, u64)>,
    /// The checkers' focused accounts of the violation, above the lanes.
    pub evidence: Vec<Evidence>,
    /// Every check of the run with its verdict and what its properties
    /// mean, after the drawing (and as tooltips).
    pub checks: Vec<CheckLine>,
    /// Extra sections after the drawing.
    pub sections: Vec<Section>,
}

/// One check of the run as the page lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckLine {
    /// Its name, unique in the run (e.g. `R1–R3 (servers)`).
    pub name: String,
    /// Its verdict in a word or two (`held`, `BROKEN ×2`).
    pub verdict: String,
    /// Its note (what it judged, e.g. `10 items`).
    pub note: String,
    /// Each property it judges: `(id, meaning)`.
    pub properties: Vec<(String, String)>,
}

/// The lane of a node incarnation: `client-3#1` is drawn on `client-3`.
pub fn node_lane(incarnation: &str) -> &str {
    incarnation.split('#').next().unwrap_or(incarnation)
}

/// Offsets (ms) of a skewed clock at the times where its line bends: the
/// start, each step (just before and after), each rate change, the end.
fn clock_points(skew: &ClockSkew, end_ns: u64) -> Vec<(u64, f64)> {
    let offset = |ns: u64| {
        let ms = skew.read_ms(Duration::from_nanos(ns)) as f64 - EPOCH_MS as f64;
        ms - (ns / 1_000_000) as f64
    };
    let mut pts = vec![(0, offset(0))];
    let mut steps: Vec<u64> = skew
        .steps
        .iter()
        .map(|(at_ms, _)| at_ms.saturating_mul(1_000_000))
        .filter(|&ns| ns > 0 && ns < end_ns)
        .collect();
    steps.sort_unstable();
    steps.dedup();
    let rates: Vec<u64> = skew
        .rate_changes
        .iter()
        .map(|(at_ms, _)| at_ms.saturating_mul(1_000_000))
        .filter(|&ns| ns > 0 && ns < end_ns && !steps.contains(&ns))
        .collect();
    for ns in steps {
        pts.push((ns - 1_000_000, offset(ns - 1_000_000)));
        pts.push((ns, offset(ns)));
    }
    for ns in rates {
        pts.push((ns, offset(ns)));
    }
    pts.sort_by_key(|(ns, _)| *ns);
    pts.dedup_by_key(|(ns, _)| *ns);
    pts.push((end_ns, offset(end_ns)));
    pts
}

fn skew_words(skew: &ClockSkew) -> String {
    let mut w = vec![format!("offset {:+.3} s", skew.offset_ms as f64 / 1000.0)];
    if skew.drift_ppm != 0 {
        w.push(format!("drift {:+} ppm", skew.drift_ppm));
    }
    for (at_ms, ppm) in &skew.rate_changes {
        w.push(format!(
            "drift {:+} ppm from {}",
            ppm,
            secs(at_ms * 1_000_000)
        ));
    }
    for (at_ms, d) in &skew.steps {
        w.push(format!(
            "step {:+.3} s at {}",
            *d as f64 / 1000.0,
            secs(at_ms * 1_000_000)
        ));
    }
    w.join(", ")
}

/// The spans, true ns, in which the world held `node` paused: from each
/// `pause NODE` event to the next `resume NODE` (or the end of the run, as
/// `u64::MAX`).
pub fn paused_spans(events: &[WorldEvent], node: &str) -> Vec<(u64, u64)> {
    let mut spans = Vec::new();
    let mut since = None;
    for e in events {
        match &e.what {
            Happening::Pause { node: n, .. } if n == node => {
                since.get_or_insert(e.at_ns);
            }
            Happening::Resume(n) if n == node => {
                if let Some(from) = since.take() {
                    spans.push((from, e.at_ns));
                }
            }
            _ => {}
        }
    }
    if let Some(from) = since {
        spans.push((from, u64::MAX));
    }
    spans
}

impl Timeline {
    /// An empty timeline of a run that ended at `end_ns`.
    pub fn new(title: impl Into<String>, end_ns: u64) -> Timeline {
        Timeline {
            title: title.into(),
            end_ns,
            ..Timeline::default()
        }
    }

    /// Adds a lane unless one with this id exists; returns its id.
    pub fn lane(&mut self, id: &str, label: &str, note: &str) -> String {
        if !self.lanes.iter().any(|l| l.id == id) {
            self.lanes.push(Lane {
                id: id.to_string(),
                label: label.to_string(),
                note: note.to_string(),
            });
        }
        id.to_string()
    }

    /// What the world did: a lane per node of `topology` (noting its role,
    /// disk and clock), each skewed clock's offset over time from `plan`,
    /// and from the world's `events` crashes and pauses as shaded spans,
    /// partitions as bands, other events as marks. `lost_writes` names the
    /// nodes whose lying disk lost synced data at a power failure (marked at
    /// their last crash, the only moment it can happen).
    pub fn add_world(
        &mut self,
        topology: &Topology,
        plan: &FaultPlan,
        events: &[WorldEvent],
        lost_writes: &BTreeMap<String, usize>,
    ) {
        let mut nodes: BTreeSet<String> = BTreeSet::new();
        for role in &topology.roles {
            for i in 0..role.count {
                let name = Topology::node_name(&role.name, i);
                nodes.insert(name.clone());
                let mut note = vec![role.name.clone()];
                if role.disk {
                    note.push("disk".into());
                }
                if role.crashable {
                    note.push("crashable".into());
                }
                if let Some(skew) = plan
                    .clocks
                    .get(&name)
                    .filter(|s| **s != ClockSkew::default())
                {
                    note.push(format!("clock {}", skew_words(skew)));
                }
                self.lane(&name, &name, &note.join(" · "));
            }
        }
        for (node, skew) in &plan.clocks {
            // A plan may name nodes the run does not have (one a shrink
            // took away keeps its clock in the plan).
            if *skew == ClockSkew::default() || !nodes.contains(node) {
                continue;
            }
            self.clocks.push(ClockLine {
                node: node.clone(),
                points: clock_points(skew, self.end_ns),
                note: skew_words(skew),
            });
            for (at_ms, d) in &skew.steps {
                let at_ns = at_ms.saturating_mul(1_000_000);
                if at_ns <= self.end_ns {
                    self.marks.push(Mark {
                        lane: node.clone(),
                        at_ns,
                        label: format!("clock {:+.3} s", *d as f64 / 1000.0),
                        detail: format!(
                            "{node}'s clock stepped {:+.3} s at {}",
                            *d as f64 / 1000.0,
                            secs(at_ns)
                        ),
                        kind: MarkKind::Fault,
                        highlight: false,
                    });
                }
            }
        }
        let heal_at = events
            .iter()
            .find(|e| e.what == Happening::Heal)
            .map(|e| e.at_ns);
        let mut open: BTreeMap<String, usize> = BTreeMap::new();
        let mut last_crash: BTreeMap<String, u64> = BTreeMap::new();
        for e in events {
            match &e.what {
                Happening::Crash { node: n, .. } | Happening::Pause { node: n, .. } => {
                    let crash = matches!(e.what, Happening::Crash { .. });
                    if crash {
                        last_crash.insert(n.clone(), e.at_ns);
                    }
                    self.spans.push(Span {
                        lane: n.clone(),
                        start_ns: e.at_ns,
                        end_ns: None,
                        label: if crash { "crashed" } else { "paused" }.into(),
                        detail: format!("{} at {}", e.what, secs(e.at_ns)),
                        kind: if crash {
                            SpanKind::Crash
                        } else {
                            SpanKind::Pause
                        },
                        highlight: false,
                    });
                    open.insert(n.clone(), self.spans.len() - 1);
                }
                Happening::Restart(n) | Happening::Resume(n) => {
                    if let Some(i) = open.remove(n) {
                        let s = &mut self.spans[i];
                        s.end_ns = Some(e.at_ns);
                        s.detail += &format!(", {} at {}", e.what, secs(e.at_ns));
                    }
                }
                Happening::Partition {
                    from,
                    to,
                    one_way,
                    for_ms,
                } => {
                    let planned = e.at_ns + for_ms * 1_000_000;
                    let end_ns = heal_at
                        .filter(|&h| h >= e.at_ns)
                        .map_or(planned, |h| h.min(planned))
                        .min(self.end_ns.max(e.at_ns));
                    self.bands.push(Band {
                        from: from.clone(),
                        to: to.clone(),
                        one_way: *one_way,
                        start_ns: e.at_ns,
                        end_ns,
                    });
                }
                Happening::PartitionHealed | Happening::End => {}
                Happening::Heal => self.marks.push(Mark {
                    lane: String::new(),
                    at_ns: e.at_ns,
                    label: "heal".into(),
                    detail: format!(
                        "every fault healed at {}; the quiet phase follows",
                        secs(e.at_ns)
                    ),
                    kind: MarkKind::Event,
                    highlight: false,
                }),
                Happening::Isolate { .. }
                | Happening::ClockRate { .. }
                | Happening::ClockRateMissed(_)
                | Happening::Note(_) => self.marks.push(Mark {
                    lane: String::new(),
                    at_ns: e.at_ns,
                    label: e.what.to_string(),
                    detail: format!("{} at {}", e.what, secs(e.at_ns)),
                    kind: MarkKind::Fault,
                    highlight: false,
                }),
            }
        }
        for (node, n) in lost_writes {
            let at_ns = last_crash.get(node).copied().unwrap_or(self.end_ns);
            self.marks.push(Mark {
                lane: node.clone(),
                at_ns,
                label: "disk lost data".into(),
                detail: format!(
                    "{node}'s lying disk lost {n} synced write{} at a power failure (its last crash is at {})",
                    if *n == 1 { "" } else { "s" },
                    secs(at_ns)
                ),
                kind: MarkKind::Fault,
                highlight: false,
            });
        }
    }

    /// Adds a history's operations: `lane` says where each is drawn (a node
    /// name; a lane no node has is added), `label` gives its words and tone. An operation without a
    /// result is drawn open-ended, whatever `label` says.
    pub fn add_ops<'a, C: 'a, R: 'a>(
        &mut self,
        ops: impl IntoIterator<Item = &'a OpRecord<C, R>>,
        lane: impl Fn(&OpRecord<C, R>) -> String,
        label: impl Fn(&OpRecord<C, R>) -> (String, Tone),
    ) {
        for o in ops {
            let (words, tone) = label(o);
            let end_ns = o.result.as_ref().and(o.return_ns);
            let tone = if end_ns.is_none() {
                Tone::Unknown
            } else {
                tone
            };
            let timing = match end_ns {
                Some(r) => format!(
                    "{} → {} ({})",
                    secs(o.invoke_ns),
                    secs(r),
                    span_words(r.saturating_sub(o.invoke_ns))
                ),
                None => format!("{} → no answer (unknown outcome)", secs(o.invoke_ns)),
            };
            let retries = o.attempts.len().saturating_sub(1);
            let detail = format!(
                "#{} {words}\n{timing}{}",
                o.id,
                if retries > 0 {
                    format!("\n{} attempts", o.attempts.len())
                } else {
                    String::new()
                }
            );
            // A lane no node has (a check's own client) is still drawn,
            // below the nodes, rather than on the network's row.
            let name = lane(o);
            let lane = self.lane(&name, &name, "");
            self.ops.push(OpBar {
                id: o.id,
                lane,
                start_ns: o.invoke_ns,
                end_ns,
                label: words,
                detail,
                tone,
            });
        }
    }

    /// Marks what a violation names besides operations: an instant as a
    /// problem mark, a span as a bar, on the moment's lane (an incarnation's
    /// on its node's lane; a lane no one has is added); highlighted (starred,
    /// part of where the page opens) when `lead`: the violation is the one
    /// that names the outcome.
    pub fn add_moment(&mut self, m: &Moment, property: &str, lead: bool) {
        let lane = if m.lane.is_empty() {
            String::new()
        } else if self.lanes.iter().any(|l| l.id == m.lane) {
            m.lane.clone()
        } else {
            let node = node_lane(&m.lane).to_string();
            self.lane(&node, &node, "")
        };
        let when = if m.end_ns > m.start_ns {
            format!("{} – {}", secs(m.start_ns), secs(m.end_ns))
        } else {
            secs(m.start_ns)
        };
        let detail = format!("{property}: {} ({when})", m.label);
        if m.end_ns > m.start_ns {
            self.spans.push(Span {
                lane,
                start_ns: m.start_ns,
                end_ns: Some(m.end_ns),
                label: m.label.clone(),
                detail,
                kind: SpanKind::Note,
                highlight: lead,
            });
        } else {
            self.marks.push(Mark {
                lane,
                at_ns: m.start_ns,
                label: m.label.clone(),
                detail,
                kind: MarkKind::Problem,
                highlight: lead,
            });
        }
    }

    /// The time window the violation is about: [`Timeline::window`] when
    /// set, else the span of the highlighted operations, spans and marks;
    /// `None` when nothing is named.
    pub fn focus(&self) -> Option<(u64, u64)> {
        if let Some((a, b)) = self.window {
            return Some((a.min(b), a.max(b)));
        }
        let items = self.highlighted_items();
        let lo = items.iter().map(|i| i.0).min()?;
        let hi = items.iter().map(|i| i.1).max()?;
        Some((lo, hi))
    }

    /// The spans `(start, end)` of everything highlighted, true ns.
    fn highlighted_items(&self) -> Vec<(u64, u64)> {
        let mut items = Vec::new();
        for o in self.ops.iter().filter(|o| self.highlight.contains(&o.id)) {
            items.push((o.start_ns, o.end_ns.unwrap_or(self.end_ns)));
        }
        for s in self.spans.iter().filter(|s| s.highlight) {
            items.push((s.start_ns, s.end_ns.unwrap_or(self.end_ns)));
        }
        for m in self.marks.iter().filter(|m| m.highlight) {
            items.push((m.at_ns, m.at_ns));
        }
        items
    }

    /// Where the page opens, true ns: the violation's window, zoomed so that
    /// what it names is clearly visible. The items are the lead operations
    /// (the most important first) and every highlighted span and mark inside
    /// the window; starting from the first, the view takes in the others
    /// nearest first while the shortest item in view still takes at least
    /// 1/[`VIEW_SHORTEST`] of its width, so that nothing named is a sliver;
    /// items left out are a step away (`n`/`p`). `None` when nothing is named.
    pub fn view(&self) -> Option<(u64, u64)> {
        let (lo, hi) = self.focus()?;
        let inside = |&(a, b): &(u64, u64)| b >= lo && a <= hi;
        let mut items: Vec<(u64, u64)> = self
            .lead
            .iter()
            .filter_map(|id| self.ops.iter().find(|o| o.id == *id))
            .map(OpBar::named_span)
            .filter(inside)
            .collect();
        let others: Vec<(u64, u64)> = self
            .spans
            .iter()
            .filter(|s| s.highlight)
            .map(|s| (s.start_ns, s.end_ns.unwrap_or(self.end_ns)))
            .chain(
                self.marks
                    .iter()
                    .filter(|m| m.highlight)
                    .map(|m| (m.at_ns, m.at_ns)),
            )
            .chain(
                self.ops
                    .iter()
                    .filter(|o| self.lead.is_empty() && self.highlight.contains(&o.id))
                    .map(OpBar::named_span),
            )
            .filter(inside)
            .collect();
        items.extend(others);
        if items.is_empty() {
            items.push((lo, hi));
        }
        // An instant (a mark) counts as a short item: the view around one
        // is a few hundredths of the run, at least 20 ms.
        let floor = (self.end_ns / 400).max(20_000_000);
        let length = |(a, b): (u64, u64)| (b - a).max(floor / 4);
        let first = items[0];
        let mut rest: Vec<(u64, u64)> = items[1..].to_vec();
        let centre = |(a, b): (u64, u64)| a / 2 + b / 2;
        rest.sort_by_key(|i| (centre(*i).abs_diff(centre(first)), i.0));
        let (mut a, mut b) = first;
        let mut shortest = length(first);
        for i in rest {
            let (na, nb) = (a.min(i.0), b.max(i.1));
            let short = shortest.min(length(i));
            if nb - na <= short.saturating_mul(VIEW_SHORTEST) {
                (a, b, shortest) = (na, nb, short);
            }
        }
        // A margin on each side, and never narrower than the floor.
        let width = (b - a).max(floor);
        let margin = width / 4 + (width - (b - a)) / 2;
        let start = a.saturating_sub(margin);
        let end = (b + margin).min(self.end_ns.max(b));
        Some((start, end.max(start + 1)))
    }
}

/// HTML-escapes text (also for attribute values).
pub use overcast_lin::html_escape as esc;

/// The shortest item the page opens on takes at least 1/this of the view.
pub const VIEW_SHORTEST: u64 = 60;

#[cfg(test)]
mod tests;
