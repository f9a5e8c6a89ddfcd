//! The checker's report: verdict, figures and, for a failure, the failing
//! sub-history with the longest partial linearization; rendered as text and
//! as a self-contained HTML page.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// The verdict for a history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verdict {
    /// Some order of the operations respects real time and the spec.
    Linearizable,
    /// No such order exists.
    NotLinearizable,
    /// A budget ran out before a verdict.
    Unknown,
}

impl Verdict {
    /// `"linearizable"`, `"not_linearizable"` or `"unknown"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Linearizable => "linearizable",
            Verdict::NotLinearizable => "not_linearizable",
            Verdict::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the times of a history count, for the words of a report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeUnit {
    /// Any clock: times are shown as the numbers they are.
    #[default]
    Raw,
    /// Nanoseconds (overcast's simulated time): shown as seconds, `12.345 s`.
    Nanos,
}

impl TimeUnit {
    /// A time in words: `742388890` raw, `0.742 s` in nanoseconds.
    pub fn show(self, t: i64) -> String {
        match self {
            TimeUnit::Raw => t.to_string(),
            TimeUnit::Nanos => format!("{:.3} s", t as f64 / 1e9),
        }
    }
}

/// One operation as shown in a report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpView {
    /// The operation's id in the history.
    pub id: u64,
    /// Its client.
    pub client: u64,
    /// Invocation time.
    pub invoke: i64,
    /// Return time (`None`: never returned, or outcome unknown).
    pub ret: Option<i64>,
    /// What it did, in words ([`crate::Spec::describe_op`]).
    pub text: String,
}

/// One step of a (partial) linearization.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Index into [`Failure::ops`].
    pub op: usize,
    /// The state after it ([`crate::Spec::describe_state`]).
    pub state: String,
}

/// Why a history is not linearizable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The key whose sub-history is not linearizable.
    pub key: String,
    /// In words: the operation that cannot be placed and the state it needs.
    pub sentence: String,
    /// The state every linearization agrees on when the failing sub-history
    /// starts (the key's initial state when `settled_before` is 0).
    pub start_state: String,
    /// How many operations of the key were settled before the sub-history.
    pub settled_before: usize,
    /// The last of those settled operations that changed the key (by
    /// invocation time; at least the last one of each kind, e.g. the last
    /// write and the last delete): why the key is in `start_state`.
    pub settled: Vec<OpView>,
    /// A small failing sub-history, by invocation time: from `start_state`,
    /// these operations have no linearization (when `sub_history_checked`).
    pub ops: Vec<OpView>,
    /// Index into `ops` of the operation that cannot be placed.
    pub failing: usize,
    /// Whether `ops` was re-checked: a search of it from `start_state`, cut
    /// at the failing operation's return, fails at that operation. False when
    /// the explanation's step budget ran out first (or none was asked for):
    /// `ops` then only names the operations involved.
    pub sub_history_checked: bool,
    /// The longest partial linearization found for the sub-history.
    pub linearization: Vec<Step>,
    /// The states the key may be in just before the failing operation must
    /// have taken effect (at most a few).
    pub possible_states: Vec<String>,
}

/// The result of [`crate::check`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The verdict.
    pub verdict: Verdict,
    /// Operations in the history.
    pub ops: usize,
    /// Distinct keys in the history.
    pub keys: usize,
    /// Keys whose check finished (with any result other than "gave up").
    pub keys_checked: usize,
    /// Wall time taken.
    pub elapsed: Duration,
    /// The most search steps one key's check took (compare with
    /// [`crate::Options::max_steps`]; 0 when the version-aware path decided
    /// every key).
    pub max_key_steps: u64,
    /// Why the verdict is Unknown.
    pub unknown_reason: Option<String>,
    /// For a history that is not linearizable: why.
    pub failure: Option<Failure>,
    /// What the history's times count ([`crate::Options::time_unit`]).
    pub time_unit: TimeUnit,
}

fn interval(o: &OpView, unit: TimeUnit) -> String {
    match o.ret {
        Some(r) => format!("[{}, {}]", unit.show(o.invoke), unit.show(r)),
        None => format!("[{}, ∞)", unit.show(o.invoke)),
    }
}

impl Report {
    /// One line: verdict, operations, keys, milliseconds.
    pub fn summary(&self) -> String {
        format!(
            "{} ops={} keys={} ms={}",
            self.verdict,
            self.ops,
            self.keys,
            self.elapsed.as_millis()
        )
    }

    /// A plain-text rendering (several lines for a failure).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} ({} ops, {} keys, {} checked, {} ms)",
            match self.verdict {
                Verdict::Linearizable => "LINEARIZABLE",
                Verdict::NotLinearizable => "NOT LINEARIZABLE",
                Verdict::Unknown => "UNKNOWN",
            },
            self.ops,
            self.keys,
            self.keys_checked,
            self.elapsed.as_millis()
        );
        if let Some(r) = &self.unknown_reason {
            let _ = writeln!(s, "  gave up: {r}");
        }
        if let Some(f) = &self.failure {
            let _ = writeln!(s, "  key {:?}: {}", f.key, f.sentence);
            if f.sub_history_checked {
                let _ = writeln!(
                    s,
                    "  failing sub-history ({} ops, starting from {}{}):",
                    f.ops.len(),
                    f.start_state,
                    if f.settled_before > 0 {
                        format!(", after {} settled ops", f.settled_before)
                    } else {
                        String::new()
                    }
                );
            } else {
                let _ = writeln!(
                    s,
                    "  operations involved (no failing sub-history was confirmed within the explanation's budget):"
                );
            }
            if !f.settled.is_empty() {
                let _ = writeln!(
                    s,
                    "  the settled operations that left it there (the last that changed it):"
                );
                for o in &f.settled {
                    let _ = writeln!(
                        s,
                        "    #{:<5} client {:<4} {:<24} {}",
                        o.id,
                        o.client,
                        interval(o, self.time_unit),
                        o.text
                    );
                }
                let _ = writeln!(s, "  the failing sub-history:");
            }
            for (i, o) in f.ops.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "    #{:<5} client {:<4} {:<24} {}{}",
                    o.id,
                    o.client,
                    interval(o, self.time_unit),
                    o.text,
                    if i == f.failing {
                        "   <-- cannot be placed"
                    } else {
                        ""
                    }
                );
            }
            let _ = writeln!(
                s,
                "  longest partial linearization ({} ops):",
                f.linearization.len()
            );
            for (k, st) in f.linearization.iter().enumerate() {
                let o = &f.ops[st.op];
                let _ = writeln!(
                    s,
                    "    {:>3}. #{:<5} {:<40} => {}",
                    k + 1,
                    o.id,
                    o.text,
                    st.state
                );
            }
            if !f.possible_states.is_empty() {
                let _ = writeln!(
                    s,
                    "  possible states before it: {}",
                    f.possible_states.join(" | ")
                );
            }
        }
        s
    }

    /// A self-contained HTML page (no network): the verdict and, for a
    /// failure, a timeline with one lane per client, operations as bars, the
    /// longest partial linearization numbered and the failing operation marked.
    pub fn to_html(&self, title: &str) -> String {
        let mut h = String::new();
        let _ = write!(
            h,
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{}</title><style>{}</style></head><body>",
            esc(title),
            CSS
        );
        let cls = match self.verdict {
            Verdict::Linearizable => "ok",
            Verdict::NotLinearizable => "bad",
            Verdict::Unknown => "unk",
        };
        let _ = write!(
            h,
            "<h1>{}</h1><p class=\"verdict {cls}\">{}</p><p class=\"figs\">{} operations, {} key{} ({} checked), {} ms</p>",
            esc(title),
            match self.verdict {
                Verdict::Linearizable => "Linearizable",
                Verdict::NotLinearizable => "Not linearizable",
                Verdict::Unknown => "Unknown",
            },
            self.ops,
            self.keys,
            if self.keys == 1 { "" } else { "s" },
            self.keys_checked,
            self.elapsed.as_millis()
        );
        if let Some(r) = &self.unknown_reason {
            let _ = write!(h, "<p>Gave up: {}</p>", esc(r));
        }
        if let Some(f) = &self.failure {
            let _ = write!(
                h,
                "<p class=\"sentence\">Key <b>{}</b>: {}</p>",
                esc(&f.key),
                esc(&f.sentence)
            );
            if f.sub_history_checked {
                let _ = write!(
                    h,
                    "<p class=\"figs\">Failing sub-history: {} operations, starting from state <code>{}</code>{}.</p>",
                    f.ops.len(),
                    esc(&f.start_state),
                    if f.settled_before > 0 {
                        format!(", after {} settled operations", f.settled_before)
                    } else {
                        String::new()
                    }
                );
                settled_table(&mut h, f, self.time_unit);
            } else {
                h.push_str("<p class=\"figs\">Operations involved (no failing sub-history was confirmed within the explanation's budget).</p>");
            }
            timeline(&mut h, f, self.time_unit);
            let _ = write!(
                h,
                "<h2>Longest partial linearization ({} of {} operations)</h2><table><tr><th>#</th><th>op</th><th>client</th><th>operation</th><th>state after</th></tr><tr><td></td><td></td><td></td><td><i>start</i></td><td><code>{}</code></td></tr>",
                f.linearization.len(),
                f.ops.len(),
                esc(&f.start_state)
            );
            for (k, st) in f.linearization.iter().enumerate() {
                let o = &f.ops[st.op];
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>#{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
                    k + 1,
                    o.id,
                    o.client,
                    esc(&o.text),
                    esc(&st.state)
                );
            }
            let fo = &f.ops[f.failing];
            let _ = write!(
                h,
                "<tr class=\"failrow\"><td>✗</td><td>#{}</td><td>{}</td><td>{}</td><td>cannot be placed{}</td></tr></table>",
                fo.id,
                fo.client,
                esc(&fo.text),
                if f.possible_states.is_empty() {
                    String::new()
                } else {
                    format!("; the key may only be in {}", esc(&f.possible_states.join(" or ")))
                }
            );
        }
        h.push_str("</body></html>\n");
        h
    }
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:24px;color:#222}h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:20px 0 6px}\
.verdict{font-size:18px;font-weight:bold;display:inline-block;padding:4px 12px;border-radius:4px;margin:4px 0}\
.ok{background:#d7f5dd;color:#145c23}.bad{background:#fddcdc;color:#8a1010}.unk{background:#fff1c2;color:#6b5200}\
.figs{color:#555;margin:4px 0}.sentence{font-size:15px;background:#fff6f6;border-left:4px solid #c62828;padding:8px 12px;max-width:1100px}\
table{border-collapse:collapse;font-size:13px}td,th{border-bottom:1px solid #ddd;padding:3px 10px;text-align:left}\
.failrow td{color:#b71c1c;font-weight:bold}code{font-size:13px}.legend span{display:inline-block;margin-right:14px;font-size:12px}\
.sw{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle;border:1px solid #555}";

/// Escapes text for HTML (element content and attribute values).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// The SVG timeline: one lane per client; x is the rank of the distinct
/// times (so that short and long operations stay readable).
/// The settled operations that left the key in the sub-history's start state.
fn settled_table(h: &mut String, f: &Failure, unit: TimeUnit) {
    if f.settled.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<h2>How the key got there</h2><p class=\"figs\">The last of the {} settled operations that changed the key, before the failing sub-history:</p><table><tr><th>op</th><th>client</th><th>invoked</th><th>returned</th><th>operation</th></tr>",
        f.settled_before
    );
    for o in &f.settled {
        let _ = write!(
            h,
            "<tr><td>#{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            o.id,
            o.client,
            unit.show(o.invoke),
            o.ret.map_or("no response".to_string(), |r| unit.show(r)),
            esc(&o.text)
        );
    }
    h.push_str("</table>");
}

fn timeline(h: &mut String, f: &Failure, unit: TimeUnit) {
    let mut times: Vec<i64> = Vec::new();
    for o in &f.ops {
        times.push(o.invoke);
        if let Some(r) = o.ret {
            times.push(r);
        }
    }
    times.sort_unstable();
    times.dedup();
    let lanes: BTreeMap<u64, usize> = {
        let mut cs: Vec<u64> = f.ops.iter().map(|o| o.client).collect();
        cs.sort_unstable();
        cs.dedup();
        cs.into_iter().enumerate().map(|(i, c)| (c, i)).collect()
    };
    let order: BTreeMap<usize, usize> = f
        .linearization
        .iter()
        .enumerate()
        .map(|(k, s)| (s.op, k + 1))
        .collect();
    let step = (1100.0 / (times.len() as f64 + 1.5)).clamp(30.0, 70.0);
    let left = 90.0;
    let width = left
        + step * (times.len() as f64 + 1.5)
        + 20.0
        + if f.ops.is_empty() { 0.0 } else { 260.0 };
    let lane_h = 46.0;
    let top = 28.0;
    let height = top + lane_h * lanes.len() as f64 + 10.0;
    let x_of = |t: i64| left + step * (times.partition_point(|&u| u < t) as f64 + 0.5);
    let end_x = left + step * (times.len() as f64 + 1.2);
    let _ = write!(
        h,
        "<h2>Timeline</h2><div class=\"legend\"><span><i class=\"sw\" style=\"background:#a5d6a7\"></i>placed in the partial linearization (number = position)</span><span><i class=\"sw\" style=\"background:#e0e0e0\"></i>not placed</span><span><i class=\"sw\" style=\"background:#ef9a9a;border:2px solid #c62828\"></i>cannot be placed</span><span><i class=\"sw\" style=\"background:#fff;border-style:dashed\"></i>no response / unknown outcome</span></div>\
<div style=\"overflow-x:auto\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" font-family=\"system-ui,sans-serif\" font-size=\"12\">"
    );
    // time ticks, labelled as far apart as their words need
    let label_every = match unit {
        TimeUnit::Raw if times.len() <= 60 => 1,
        TimeUnit::Raw => 2,
        TimeUnit::Nanos => (48.0 / step).ceil().max(1.0) as usize,
    };
    for (i, t) in times.iter().enumerate() {
        let x = left + step * (i as f64 + 0.5);
        let _ = write!(
            h,
            "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/>",
            top - 6.0,
            height - 6.0
        );
        if i % label_every == 0 {
            let _ = write!(
                h,
                "<text x=\"{x:.1}\" y=\"{:.1}\" fill=\"#999\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                top - 10.0,
                unit.show(*t)
            );
        }
    }
    for (c, lane) in &lanes {
        let y = top + lane_h * *lane as f64;
        let _ = write!(
            h,
            "<rect x=\"0\" y=\"{y:.1}\" width=\"{width:.0}\" height=\"{lane_h}\" fill=\"{}\"/><text x=\"8\" y=\"{:.1}\" fill=\"#444\">client {c}</text>",
            if lane % 2 == 0 { "#fafafa" } else { "#f2f2f2" },
            y + lane_h / 2.0 + 4.0
        );
    }
    for (i, o) in f.ops.iter().enumerate() {
        let lane = lanes[&o.client];
        let y = top + lane_h * lane as f64 + 8.0;
        let x1 = x_of(o.invoke);
        let x2 = o.ret.map_or(end_x, x_of).max(x1 + 8.0);
        let failing = i == f.failing;
        let placed = order.get(&i).copied();
        let (fill, stroke, sw) = if failing {
            ("#ef9a9a", "#c62828", 2.5)
        } else if placed.is_some() {
            ("#a5d6a7", "#2e7d32", 1.0)
        } else {
            ("#e0e0e0", "#757575", 1.0)
        };
        let dash = if o.ret.is_none() {
            " stroke-dasharray=\"5,3\""
        } else {
            ""
        };
        let _ = write!(
            h,
            "<g><title>#{} client {} {}: {}</title><rect x=\"{x1:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"30\" rx=\"4\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"{sw}\"{dash}{}/>",
            o.id,
            o.client,
            esc(&interval(o, unit)),
            esc(&o.text),
            x2 - x1,
            if o.ret.is_none() { " fill-opacity=\"0.45\"" } else { "" }
        );
        let mut label = String::new();
        if let Some(k) = placed {
            let _ = write!(label, "{k}. ");
        }
        if failing {
            label.push_str("✗ ");
        }
        label.push_str(&o.text);
        let max_chars = ((x2 - x1 - 8.0) / 6.6).max(3.0) as usize;
        // The failing operation's label is never cut: it goes after its bar.
        let outside = failing && label.chars().count() > max_chars;
        if !outside && label.chars().count() > max_chars {
            label = label
                .chars()
                .take(max_chars.saturating_sub(1))
                .collect::<String>()
                + "…";
        }
        let _ = write!(
            h,
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{}\"{}>{}</text></g>",
            if outside { x2 + 5.0 } else { x1 + 5.0 },
            y + 19.0,
            if failing { "#8a1010" } else { "#1b1b1b" },
            if failing { " font-weight=\"bold\"" } else { "" },
            esc(&label)
        );
    }
    h.push_str("</svg></div>");
}
