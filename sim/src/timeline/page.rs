//! Drawing a [`Timeline`] as its self-contained HTML page: the data the
//! page's script reads, the findings and their accounts in words, and the
//! page's toolbar, legend, style and script.

use super::*;

impl Timeline {
    pub(super) fn data(&self) -> Value {
        // Seconds to the microsecond: the page never carries a raw nanosecond count.
        let s = |ns: u64| (ns / 1000) as f64 / 1e6;
        let mut lanes: Vec<Value> = Vec::new();
        if !self.bands.is_empty() {
            lanes.push(json!({"id": "", "label": "network", "note": "partitions"}));
        }
        let world_marks = self.marks.iter().any(|m| m.lane.is_empty());
        if world_marks && self.bands.is_empty() {
            lanes.push(json!({"id": "", "label": "world", "note": "world events"}));
        }
        // A lane with something the violations name is flagged, and its
        // label says so.
        let lead: BTreeSet<u64> = if self.lead.is_empty() {
            self.highlight.clone()
        } else {
            self.lead.iter().copied().collect()
        };
        let named: BTreeSet<&str> = self
            .ops
            .iter()
            .filter(|o| lead.contains(&o.id))
            .map(|o| o.lane.as_str())
            .chain(
                self.spans
                    .iter()
                    .filter(|x| x.highlight)
                    .map(|x| x.lane.as_str()),
            )
            .chain(
                self.marks
                    .iter()
                    .filter(|m| m.highlight)
                    .map(|m| m.lane.as_str()),
            )
            .map(node_lane)
            .collect();
        // The nodes it names come first, each with its own lanes (`host-1`
        // and `host-1:processing`), in their order, then the rest in theirs,
        // so that the page opens with them in view however many lanes the
        // run has.
        let is_named = |id: &str| named.contains(id) || named.contains(node_lane(id));
        let node_of = |id: &str| node_lane(id.split(':').next().unwrap_or(id)).to_string();
        let named_nodes: BTreeSet<String> = self
            .lanes
            .iter()
            .filter(|l| is_named(&l.id))
            .map(|l| node_of(&l.id))
            .collect();
        let (first, rest): (Vec<_>, Vec<_>) = self
            .lanes
            .iter()
            .partition(|l| named_nodes.contains(&node_of(&l.id)));
        lanes.extend(first.iter().chain(&rest).map(
            |l| json!({"id": l.id, "label": l.label, "note": l.note, "named": is_named(&l.id)}),
        ));
        let ops: Vec<Value> = self
            .ops
            .iter()
            .map(|o| {
                json!({"id": o.id, "lane": o.lane, "a": s(o.start_ns), "b": o.end_ns.map(s),
                       "label": o.label, "detail": o.detail, "tone": o.tone.word(),
                       "hl": if self.lead.contains(&o.id) { 2 } else { u8::from(self.highlight.contains(&o.id)) }})
            })
            .collect();
        let spans: Vec<Value> = self
            .spans
            .iter()
            .map(|x| {
                json!({"lane": x.lane, "a": s(x.start_ns), "b": x.end_ns.map(s), "label": x.label,
                       "detail": x.detail, "kind": x.kind.word(), "hl": x.highlight})
            })
            .collect();
        let bands: Vec<Value> = self
            .bands
            .iter()
            .map(|b| {
                let arrow = if b.one_way { "→" } else { "⇹" };
                let label = format!("{} {arrow} {}", b.from.join(", "), b.to.join(", "));
                json!({"from": b.from, "to": b.to, "a": s(b.start_ns), "b": s(b.end_ns),
                       "label": format!("cut {label}"),
                       "detail": format!("partition {label}\n{} → {} ({})", secs(b.start_ns), secs(b.end_ns),
                                         span_words(b.end_ns.saturating_sub(b.start_ns)))})
            })
            .collect();
        let marks: Vec<Value> = self
            .marks
            .iter()
            .map(|m| {
                json!({"lane": m.lane, "t": s(m.at_ns), "label": m.label, "detail": m.detail,
                       "kind": m.kind.word(), "hl": m.highlight})
            })
            .collect();
        let clocks: Vec<Value> = self
            .clocks
            .iter()
            .map(|c| {
                let pts: Vec<Value> = c
                    .points
                    .iter()
                    .map(|(ns, off_ms)| json!([s(*ns), off_ms / 1000.0]))
                    .collect();
                json!({"node": c.node, "pts": pts, "note": c.note})
            })
            .collect();
        json!({
            "end": s(self.end_ns.max(1)),
            "lanes": lanes, "ops": ops, "spans": spans, "bands": bands, "marks": marks,
            "clocks": clocks,
            "focus": self.focus().map(|(a, b)| json!([s(a), s(b)])),
            "view": self.view().map(|(a, b)| json!([s(a), s(b)])),
        })
    }

    /// What property `id` means, from the checks' list (empty if unknown).
    fn meaning(&self, id: &str) -> &str {
        self.checks
            .iter()
            .flat_map(|c| c.properties.iter())
            .find(|(p, _)| p == id)
            .map_or("", |(_, m)| m.as_str())
    }

    /// The page: self-contained HTML (inline CSS, JavaScript and SVG). From
    /// the top: the violation in words (other findings folded), the
    /// checkers' focused accounts and the operations it names, the drawing
    /// (opened on the violation's window), then the facts of the run, the
    /// checks with what they mean, and the checkers' full reports.
    pub fn to_html(&self) -> String {
        let mut h = String::with_capacity(64 * 1024 + self.ops.len() * 300);
        let _ = write!(
            h,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{CSS}</style></head><body>\n",
            esc(&self.title)
        );
        let _ = write!(h, "<header><h1>{}</h1>", esc(&self.title));
        // The finding that names the outcome in full; the others (a broken
        // property often fails many times over) folded under one line, so
        // that the account and the drawing stay in sight.
        if let Some((first, rest)) = self.findings.split_first() {
            self.finding(&mut h, first);
            if !rest.is_empty() {
                let mut counts: Vec<(&str, &str, usize)> = Vec::new();
                for f in rest {
                    match counts
                        .iter_mut()
                        .find(|(k, p, _)| *k == f.kind && *p == f.property)
                    {
                        Some(c) => c.2 += 1,
                        None => counts.push((&f.kind, &f.property, 1)),
                    }
                }
                let what: Vec<String> = counts
                    .iter()
                    .map(|(k, p, n)| {
                        let kind = if *k == "VIOLATION" {
                            String::new()
                        } else {
                            format!("{k} ")
                        };
                        format!("{kind}{p} ×{n}")
                    })
                    .collect();
                let _ = write!(
                    h,
                    "<details class=\"more\"><summary>{} more finding{}: {}</summary>",
                    rest.len(),
                    if rest.len() == 1 { "" } else { "s" },
                    esc(&what.join(", "))
                );
                for f in rest {
                    self.finding(&mut h, f);
                }
                h.push_str("</details>");
            }
        }
        h.push_str("</header>\n");
        for e in &self.evidence {
            self.evidence_html(&mut h, e);
        }
        let evidence_names_ops = self
            .evidence
            .iter()
            .any(|e| e.rows.iter().any(|r| r.op.is_some()));
        if !evidence_names_ops {
            self.named_ops(&mut h);
        }
        h.push_str(TOOLBAR);
        h.push_str(
            "<svg id=\"tl-overview\" class=\"overview\" xmlns=\"http://www.w3.org/2000/svg\" aria-label=\"the whole run: click to go there\"></svg><div id=\"tl\" class=\"tl\"><div id=\"tl-labels\" class=\"labels\"></div><div id=\"tl-scroll\" class=\"scroll\" tabindex=\"0\" aria-label=\"timeline; + and - zoom, v jumps to the violation\"><svg id=\"tl-svg\" xmlns=\"http://www.w3.org/2000/svg\"></svg></div></div>\n<div id=\"tl-detail\" class=\"detail\" aria-live=\"polite\">Click a bar or a mark for its details.</div>\n",
        );
        h.push_str(LEGEND);
        self.story(&mut h);
        if !self.facts.is_empty() {
            h.push_str("<h2>The run</h2><table class=\"facts\">");
            for (k, v) in &self.facts {
                let _ = write!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
            }
            h.push_str("</table>");
        }
        if !self.checks.is_empty() {
            h.push_str("<h2 id=\"checks\">The checks</h2><table class=\"checks\"><tr><th>check</th><th>verdict</th><th>judged</th><th>what it means</th></tr>");
            for c in &self.checks {
                let meanings: Vec<String> = c
                    .properties
                    .iter()
                    .map(|(id, m)| {
                        if c.properties.len() == 1 {
                            m.clone()
                        } else {
                            format!("{id}: {m}")
                        }
                    })
                    .collect();
                let broken = !c.verdict.starts_with("held");
                let _ =
                    write!(
                    h,
                    "<tr{}><td title=\"{}\"><b>{}</b></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    if broken { " class=\"broken\"" } else { "" },
                    esc(&meanings.join("\n")),
                    esc(&c.name),
                    esc(&c.verdict),
                    esc(&c.note),
                    meanings.iter().map(|m| esc(m)).collect::<Vec<_>>().join("<br>")
                );
            }
            h.push_str("</table>");
        }
        for s in &self.sections {
            match s {
                Section::Text { title, text } => {
                    let _ = write!(h, "<h2>{}</h2><pre>{}</pre>", esc(title), esc(text));
                }
                Section::Page { title, html } => {
                    let _ = write!(
                        h,
                        "<h2>{}</h2><iframe class=\"embedded\" title=\"{}\" sandbox=\"allow-same-origin\" srcdoc=\"{}\" onload=\"this.style.height=(this.contentDocument.documentElement.scrollHeight+24)+'px'\"></iframe>",
                        esc(title),
                        esc(title),
                        esc(html)
                    );
                }
            }
        }
        let data = serde_json::to_string(&self.data())
            .expect("timeline data serialises")
            .replace('<', "\\u003c");
        let _ = write!(
            h,
            "\n<script type=\"application/json\" id=\"tl-data\">{data}</script>\n<script>{JS}</script>\n</body></html>\n"
        );
        h
    }

    /// One finding: its kind and property (what the property means as its
    /// tooltip), then its words.
    fn finding(&self, h: &mut String, f: &Finding) {
        let cls = match f.kind.as_str() {
            "UNDECIDED" => "finding undecided",
            "LIVENESS" => "finding liveness",
            _ => "finding",
        };
        let _ = write!(
            h,
            "<div class=\"{cls}\"><span class=\"prop\" title=\"{}\">{} {}</span> {}</div>",
            esc(self.meaning(&f.property)),
            esc(&f.kind),
            esc(&f.property),
            esc(&f.message)
        );
    }

    /// A checker's focused account: its sentences and its table, each row
    /// that names an operation linked to its bar.
    fn evidence_html(&self, h: &mut String, e: &Evidence) {
        let _ = write!(h, "<section class=\"evidence\"><h2>{}</h2>", esc(&e.title));
        for p in &e.lead {
            let _ = write!(h, "<p>{}</p>", esc(p));
        }
        if !e.rows.is_empty() {
            h.push_str("<table class=\"named\"><tr>");
            for c in &e.columns {
                let _ = write!(h, "<th>{}</th>", esc(c));
            }
            h.push_str("</tr>");
            for r in &e.rows {
                let _ = write!(h, "<tr{}>", if r.marked { " class=\"marked\"" } else { "" });
                for (i, c) in r.cells.iter().enumerate() {
                    match r.op {
                        Some(op) if i == 0 => {
                            let _ =
                                write!(h, "<td><a href=\"#\" data-op=\"{op}\">{}</a></td>", esc(c));
                        }
                        _ => {
                            let _ = write!(h, "<td>{}</td>", esc(c));
                        }
                    }
                }
                h.push_str("</tr>");
            }
            h.push_str("</table>");
        }
        for p in &e.notes {
            let _ = write!(h, "<p class=\"note\">{}</p>", esc(p));
        }
        h.push_str("</section>\n");
    }

    /// A short run's every operation and fault, in the order they began:
    /// the story a shrunk failure tells, readable without the drawing.
    /// Nothing for a run with more than [`STORY_MAX_ROWS`] of them (the
    /// drawing is for those).
    fn story(&self, h: &mut String) {
        let spans = self
            .spans
            .iter()
            .filter(|x| matches!(x.kind, SpanKind::Crash | SpanKind::Pause | SpanKind::Fault));
        let marks = self.marks.iter().filter(|m| m.kind == MarkKind::Fault);
        let count =
            self.ops.len() + self.bands.len() + spans.clone().count() + marks.clone().count();
        if count == 0 || count > STORY_MAX_ROWS {
            return;
        }
        // (start, a fault first at the same instant, the row's HTML)
        let mut rows: Vec<(u64, bool, String)> = Vec::with_capacity(count);
        let lanes: BTreeSet<&str> = self.lanes.iter().map(|l| l.id.as_str()).collect();
        let side = |nodes: &[String]| {
            // The plan names every node it could cut; the run has fewer
            // after a shrink.
            let here: Vec<&str> = nodes
                .iter()
                .map(String::as_str)
                .filter(|n| lanes.contains(n))
                .collect();
            if here.is_empty() {
                nodes.join(", ")
            } else {
                here.join(", ")
            }
        };
        let fault_row = |at: u64, node: &str, what: &str, until: &str| {
            (
                at,
                false,
                format!(
                    "<tr class=\"fault\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    secs(at),
                    esc(node),
                    esc(what),
                    esc(until)
                ),
            )
        };
        for b in &self.bands {
            let what = format!(
                "partition: {} {} {}",
                side(&b.from),
                if b.one_way { "→" } else { "|" },
                side(&b.to)
            );
            rows.push(fault_row(b.start_ns, "network", &what, &secs(b.end_ns)));
        }
        for x in spans {
            let until = x.end_ns.map_or("the end".to_string(), secs);
            rows.push(fault_row(x.start_ns, node_lane(&x.lane), &x.label, &until));
        }
        for m in marks {
            let node = if m.lane.is_empty() {
                "world"
            } else {
                node_lane(&m.lane)
            };
            let what = if m.detail.is_empty() {
                &m.label
            } else {
                &m.detail
            };
            rows.push(fault_row(m.at_ns, node, what, ""));
        }
        for o in &self.ops {
            let named = self.highlight.contains(&o.id) || self.lead.contains(&o.id);
            rows.push((
                o.start_ns,
                true,
                format!(
                    "<tr{}><td><a href=\"#\" data-op=\"{}\">{}</a></td><td>{}</td><td>{}{}</td><td>{}</td></tr>",
                    if named { " class=\"marked\"" } else { "" },
                    o.id,
                    secs(o.start_ns),
                    esc(node_lane(&o.lane)),
                    if named { "★ " } else { "" },
                    esc(&o.label),
                    o.end_ns.map_or("no answer".to_string(), secs)
                ),
            ));
        }
        rows.sort_by_key(|(at, op, _)| (*at, *op));
        h.push_str("<h2 id=\"story\">The story</h2><p class=\"story-lead\">Every operation and fault of the run, in the order they began (★: named by a violation; a time links to the bar).</p><table class=\"named story\"><tr><th>began</th><th>node</th><th>what</th><th>until</th></tr>");
        for (_, _, row) in rows {
            h.push_str(&row);
        }
        h.push_str("</table>");
    }

    /// The table of the operations the violation names: the lead
    /// operations (those of the violation that names the outcome); every
    /// highlighted one on a page with no lead violation (no window set).
    fn named_ops(&self, h: &mut String) {
        let lead_only = self.window.is_some() || !self.lead.is_empty();
        let mut named: Vec<&OpBar> = self
            .ops
            .iter()
            .filter(|o| {
                if lead_only {
                    self.lead.contains(&o.id)
                } else {
                    self.highlight.contains(&o.id)
                }
            })
            .collect();
        if named.is_empty() {
            return;
        }
        named.sort_by_key(|o| (o.start_ns, o.id));
        h.push_str("<h2>The operations it names</h2><table class=\"named\"><tr><th>op</th><th>node</th><th>invoked</th><th>returned</th><th>what</th></tr>");
        for o in named {
            let _ = write!(
                h,
                "<tr><td><a href=\"#\" data-op=\"{}\">#{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                o.id,
                o.id,
                esc(&o.lane),
                secs(o.start_ns),
                o.end_ns.map_or("no answer (unknown outcome)".to_string(), secs),
                esc(&o.label)
            );
        }
        h.push_str("</table>");
    }
}

/// The most operations and faults a run may have for its page to list them
/// all under "The story" (a shrunk failure has a few dozen at most).
pub(super) const STORY_MAX_ROWS: usize = 60;

const TOOLBAR: &str = "<div class=\"toolbar\" role=\"toolbar\"><button id=\"b-in\" title=\"zoom in (+)\">+ zoom in</button><button id=\"b-out\" title=\"zoom out (-)\">− zoom out</button><button id=\"b-fit\" title=\"whole run (0)\">0 whole run</button><button id=\"b-viol\" title=\"jump to the violation (v)\">v violation</button><button id=\"b-prev\" title=\"previous named item (p)\">p prev</button><button id=\"b-next\" title=\"next named item (n)\">n next</button><span class=\"keys\">keys: <kbd>+</kbd>/<kbd>−</kbd> zoom · <kbd>0</kbd> whole run · <kbd>v</kbd> violation · <kbd>n</kbd>/<kbd>p</kbd> named items · <kbd>←</kbd>/<kbd>→</kbd> scroll</span><span id=\"tl-view\" class=\"view\"></span></div>\n";

const LEGEND: &str = "<div class=\"legend\"><span><i class=\"sw ok\"></i>success</span><span><i class=\"sw refused\"></i>refused by design (4xx)</span><span><i class=\"sw error\"></i>error (5xx)</span><span><i class=\"sw unknown\"></i>no answer: outcome unknown (open-ended)</span><span><i class=\"sw hl\"></i>★ named by the violation shown first</span><span><i class=\"sw hl2\"></i>named by another finding</span><span><i class=\"sw held\"></i>held (authority's view)</span><span><i class=\"sw believed\"></i>believed (participant's view)</span><span><i class=\"sw crash\"></i>crashed</span><span><i class=\"sw pause\"></i>paused</span><span><i class=\"sw cut\"></i>partitioned</span><span><i class=\"sw clock\"></i>clock offset (lower panel)</span></div>\n";

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:16px 20px;color:#1d1d1f;background:#fff}
h1{font-size:20px;margin:0 0 8px}h2{font-size:15px;margin:18px 0 6px}
details.more{margin:4px 0 8px}details.more summary{cursor:pointer;color:#8b1a1a;font-size:14px}
.finding{font-size:15px;background:#fff4f4;border-left:5px solid #c62828;padding:8px 12px;margin:6px 0;max-width:1300px;line-height:1.4}
.finding.liveness{background:#fff8e6;border-color:#e08a00}.finding.undecided{background:#f4f4ff;border-color:#5559c9}
.finding .prop{font-weight:700;color:#8a1010;margin-right:6px;white-space:nowrap}
.finding.liveness .prop{color:#8a5200}.finding.undecided .prop{color:#2f33a0}
table{border-collapse:collapse;font-size:13px}td,th{padding:2px 10px 2px 0;text-align:left;vertical-align:top}
.facts th{color:#666;font-weight:500}.facts{margin:6px 0}
.named td,.named th{border-bottom:1px solid #eee;padding:3px 12px 3px 0}.named a{color:#b71c1c;font-weight:600}
.toolbar{position:sticky;top:0;background:#fff;z-index:5;padding:8px 0;border-bottom:1px solid #ddd;margin-top:10px}
.toolbar button{font:inherit;font-size:13px;margin-right:6px;padding:3px 9px;border:1px solid #bbb;border-radius:4px;background:#f7f7f7;cursor:pointer}
.toolbar button:focus,.scroll:focus{outline:2px solid #1565c0;outline-offset:1px}
.keys{font-size:12px;color:#666;margin-left:8px}kbd{font-size:11px;border:1px solid #ccc;border-radius:3px;padding:0 3px;background:#fafafa}
.view{font-size:12px;color:#333;margin-left:12px;font-variant-numeric:tabular-nums}
.overview{display:block;width:100%;height:18px;margin-top:6px;cursor:pointer}
.tl{display:flex;border:1px solid #ddd;border-radius:4px;margin-top:6px}
.labels{flex:0 0 180px;border-right:1px solid #ddd;background:#fbfbfb;position:relative;overflow:hidden}
.labels div{position:absolute;left:0;right:0;padding:2px 8px;box-sizing:border-box;border-bottom:1px solid #eee;overflow:hidden}
.labels b{font-size:13px;display:block;white-space:nowrap}.labels small{font-size:10.5px;color:#666;line-height:1.25;display:-webkit-box;-webkit-line-clamp:2;-webkit-box-orient:vertical;overflow:hidden}
.labels div.named{border-left:4px solid #d50000;background:#fff4f4}.labels div.named b{color:#8a1010}
.scroll{flex:1 1 auto;overflow-x:auto;overflow-y:hidden}
svg text{font-family:system-ui,sans-serif}
.detail{font-size:13px;white-space:pre-wrap;background:#f6f8fa;border:1px solid #e3e3e3;border-radius:4px;padding:6px 10px;margin:8px 0;min-height:18px;font-variant-numeric:tabular-nums}
.legend{font-size:12px;color:#333;margin:6px 0}.legend span{display:inline-block;margin-right:14px}
.sw{display:inline-block;width:16px;height:10px;margin-right:4px;vertical-align:middle;border:1px solid #777}
.sw.ok{background:#a5d6a7}.sw.refused{background:#ffe082}.sw.error{background:#ffab91}.sw.unknown{background:#fff;border-style:dashed}
.sw.hl{background:#fff;border:2px solid #d50000}.sw.hl2{background:#fff;border:2px solid #ef6c00}.sw.held{background:#1e88e5}.sw.believed{background:repeating-linear-gradient(45deg,#80cbc4 0 3px,#e0f2f1 3px 6px);border-color:#00796b}
.sw.crash{background:#9e9e9e}.sw.pause{background:repeating-linear-gradient(90deg,#bdbdbd 0 2px,#eee 2px 4px)}.sw.cut{background:#ffcc80}.sw.clock{background:#7e57c2;height:3px}
pre{font-size:12px;background:#f6f8fa;padding:8px;overflow-x:auto}
iframe.embedded{width:100%;border:1px solid #ddd;border-radius:4px;min-height:200px}
.evidence{max-width:1300px;margin:10px 0 4px}.evidence p{font-size:14px;margin:4px 0;line-height:1.4}.evidence p.note{color:#444;font-size:13px}
.named tr.marked td{background:#fff4f4;font-weight:600;color:#8a1010}
.story tr.fault td{color:#7a4a00;background:#fff8ec}.story-lead{font-size:13px;color:#555;margin:0 0 4px}
.checks td,.checks th{border-bottom:1px solid #eee;padding:3px 14px 3px 0}.checks tr.broken td{color:#8a1010}.checks td:first-child{white-space:nowrap;cursor:help}
"#;

const JS: &str = r#"
(function(){
const D=JSON.parse(document.getElementById('tl-data').textContent);
const svg=document.getElementById('tl-svg'),scroll=document.getElementById('tl-scroll'),
      labels=document.getElementById('tl-labels'),detail=document.getElementById('tl-detail'),
      view=document.getElementById('tl-view');
const NS='http://www.w3.org/2000/svg',ROW=20,PADY=5,AXIS=26,CLOCKH=130;
const fmt=t=>t.toFixed(3)+' s';
const dur=d=>d<1e-3?Math.round(d*1e6)+' µs':d<1?(d*1e3).toFixed(1)+' ms':d.toFixed(3)+' s';
const laneIx={};D.lanes.forEach((l,i)=>laneIx[l.id]=i);
function laneOf(id){return id in laneIx?laneIx[id]:(id.split('#')[0] in laneIx?laneIx[id.split('#')[0]]:0);}
// Pack bars of each lane into rows so that overlapping ones stack.
const rows=D.lanes.map(()=>[]);
const bars=[];
D.ops.forEach(o=>bars.push({t:'op',lane:laneOf(o.lane),a:o.a,b:o.b,o:o}));
D.spans.forEach(s=>{if(s.kind=='held'||s.kind=='believed'||s.kind=='note')bars.push({t:'span',lane:laneOf(s.lane),a:s.a,b:s.b,o:s});});
D.bands.forEach(b=>bars.push({t:'band',lane:laneOf(''),a:b.a,b:b.b,o:b}));
bars.sort((x,y)=>x.lane-y.lane||x.a-y.a);
// Rows are packed by time, so they stay put when zooming. An operation
// with an unknown outcome is open-ended, but only until the next bar of its
// row (it may take effect at any later time; its tooltip says so): it does
// not push the operations after it into rows of their own.
const gap=D.end/100000;
bars.forEach(x=>{const r=rows[x.lane];const open=x.t=='op'&&x.b==null;const end=open?x.a+gap:(x.b==null?D.end:x.b);
  let k=r.findIndex(e=>e.end<=x.a);if(k<0){k=r.length;r.push({end:0,last:null});}
  const prev=r[k].last;if(prev&&prev.t=='op'&&prev.b==null)prev.vis=x.a;
  r[k].end=Math.max(end,x.a+gap);r[k].last=x;x.row=k;});
const quietMarks=D.lanes.map(()=>0);D.marks.forEach(m=>{if(m.kind=='event'&&!m.hl&&m.lane!=='')quietMarks[laneOf(m.lane)]=7;});
const laneTop=[];let y=AXIS;D.lanes.forEach((l,i)=>{laneTop.push(y);const noteLines=Math.min(2,Math.ceil(l.note.length/30));
  y+=Math.max(Math.max(1,rows[i].length)*ROW+2*PADY+quietMarks[i],20+noteLines*13);});
const lanesBottom=y;const hasClock=D.clocks.length>0;const H=lanesBottom+(hasClock?CLOCKH+AXIS:8);
let pxs=1,fit=1;const named=[];
D.ops.forEach(o=>{if(o.hl)named.push([o.a,o.b==null?D.end:o.b]);});
D.spans.forEach(s=>{if(s.hl)named.push([s.a,s.b==null?D.end:s.b]);});
D.marks.forEach(m=>{if(m.hl)named.push([m.t,m.t]);});
named.sort((p,q)=>p[0]-q[0]);let cur=-1;
function el(tag,attrs,parent,text){const e=document.createElementNS(NS,tag);for(const k in attrs)if(attrs[k]!=null)e.setAttribute(k,attrs[k]);if(text!=null)e.textContent=text;(parent||svg).appendChild(e);return e;}
function tip(g,text,onclick){el('title',{},g,text);g.style.cursor='pointer';g.addEventListener('click',()=>{detail.textContent=text;});}
const X=t=>8+t*pxs;
function niceStep(){const target=110/pxs;const p=Math.pow(10,Math.floor(Math.log10(target)));for(const m of[1,2,5,10])if(m*p>=target)return m*p;return 10*p;}
function label(g,x1,x2,yy,text,color,bold){const w=x2-x1-6;if(w<18)return;const max=Math.floor(w/6.4);let t=text;if(t.length>max)t=t.slice(0,Math.max(1,max-1))+'…';el('text',{x:x1+4,y:yy,'font-size':11,fill:color||'#1b1b1b','font-weight':bold?'700':'400'},g,t);}
const toneFill={ok:'#a5d6a7',refused:'#ffe082',error:'#ffab91',unknown:'#ffffff',neutral:'#cfd8dc'};
const toneStroke={ok:'#2e7d32',refused:'#b28704',error:'#d84315',unknown:'#616161',neutral:'#78909c'};
function draw(){
  while(svg.firstChild)svg.removeChild(svg.firstChild);
  const W=Math.max(scroll.clientWidth,X(D.end)+60);
  svg.setAttribute('width',W);svg.setAttribute('height',H);
  const defs=el('defs',{});
  const pat=el('pattern',{id:'hatch',width:6,height:6,patternUnits:'userSpaceOnUse',patternTransform:'rotate(45)'},defs);
  el('rect',{width:6,height:6,fill:'#e0f2f1'},pat);el('rect',{width:3,height:6,fill:'#80cbc4'},pat);
  const pp=el('pattern',{id:'pausep',width:4,height:4,patternUnits:'userSpaceOnUse'},defs);
  el('rect',{width:4,height:4,fill:'#eeeeee'},pp);el('rect',{width:2,height:4,fill:'#bdbdbd'},pp);
  D.lanes.forEach((l,i)=>{const h=(i+1<laneTop.length?laneTop[i+1]:lanesBottom)-laneTop[i];
    el('rect',{x:0,y:laneTop[i],width:W,height:h,fill:i%2?'#f7f7f7':'#fdfdfd'});
    el('line',{x1:0,x2:W,y1:laneTop[i]+h,y2:laneTop[i]+h,stroke:'#eee'});});
  // Time axis and grid.
  const st=niceStep();const dec=st>=1?0:Math.min(6,Math.ceil(-Math.log10(st)));
  for(let t=0;t<=D.end+1e-12;t+=st){const x=X(t);
    el('line',{x1:x,x2:x,y1:AXIS-4,y2:lanesBottom,stroke:'#e6e6e6'});
    el('text',{x:x,y:AXIS-9,'font-size':11,fill:'#555','text-anchor':'middle'},null,t.toFixed(dec)+' s');
    if(hasClock)el('line',{x1:x,x2:x,y1:lanesBottom+AXIS,y2:H-4,stroke:'#eee'});}
  // The violation's window, behind everything.
  if(D.focus){const x1=X(D.focus[0])-3,x2=Math.max(X(D.focus[1])+3,x1+6);
    el('rect',{x:x1,y:AXIS-4,width:x2-x1,height:lanesBottom-AXIS+4,fill:'#ffebee','fill-opacity':0.75});
    el('line',{x1:x1,x2:x1,y1:AXIS-4,y2:lanesBottom,stroke:'#e57373','stroke-dasharray':'3,3'});
    el('line',{x1:x2,x2:x2,y1:AXIS-4,y2:lanesBottom,stroke:'#e57373','stroke-dasharray':'3,3'});}
  // Crashes and pauses shade their lane; partitions shade the lanes they cut.
  D.spans.forEach(s=>{if(s.kind!='crash'&&s.kind!='pause'&&s.kind!='fault')return;const i=laneOf(s.lane);
    const h=(i+1<laneTop.length?laneTop[i+1]:lanesBottom)-laneTop[i];const x1=X(s.a),x2=Math.max(X(s.b==null?D.end:s.b),x1+2);
    const g=el('g',{});el('rect',{x:x1,y:laneTop[i]+1,width:x2-x1,height:h-2,fill:s.kind=='crash'?'#9e9e9e':s.kind=='pause'?'url(#pausep)':'#ce93d8','fill-opacity':s.kind=='crash'?0.55:0.8},g);
    label(g,x1,x2,laneTop[i]+12,s.label,'#212121',true);tip(g,s.detail);});
  D.bands.forEach(b=>{const x1=X(b.a),x2=Math.max(X(b.b),x1+2);const seen={};
    b.from.concat(b.to).forEach(n=>{const i=laneOf(n);if(seen[i]||!(n in laneIx))return;seen[i]=1;
      const h=(i+1<laneTop.length?laneTop[i+1]:lanesBottom)-laneTop[i];
      const r=el('rect',{x:x1,y:laneTop[i]+1,width:x2-x1,height:h-2,fill:'#ffcc80','fill-opacity':0.22,stroke:'#fb8c00','stroke-opacity':0.35});el('title',{},r,b.detail);});});
  // Bars.
  bars.forEach(x=>{const top=laneTop[x.lane]+PADY+x.row*ROW;const x1=X(x.a);const open=x.b==null;const x2=Math.max(open?X(x.vis!=null?x.vis:D.end):X(x.b),x1+2);
    const g=el('g',{});
    if(x.t=='op'){const o=x.o;const hl=o.hl==2,other=o.hl==1;
      el('rect',{x:x1,y:top+1,width:x2-x1,height:ROW-4,rx:3,fill:toneFill[o.tone],stroke:hl?'#d50000':other?'#ef6c00':toneStroke[o.tone],'stroke-width':hl||other?2.5:1,'stroke-dasharray':open?'4,3':null},g);
      label(g,x1,x2,top+13,(hl?'★ ':'')+o.label+(open?' …?':''),hl?'#8a1010':null,hl);tip(g,o.detail);g.dataset.op=o.id;}
    else if(x.t=='span'){const s=x.o;const held=s.kind=='held',bel=s.kind=='believed';
      el('rect',{x:x1,y:top+1,width:x2-x1,height:ROW-4,rx:2,fill:held?'#1e88e5':bel?'url(#hatch)':'#e0e0e0',stroke:s.hl?'#d50000':held?'#0d47a1':bel?'#00796b':'#9e9e9e','stroke-width':s.hl?2.5:1},g);
      label(g,x1,x2,top+13,(s.hl?'★ ':'')+s.label,held?'#fff':s.hl?'#8a1010':'#0b3d36',s.hl);tip(g,s.detail);}
    else{const b=x.o;el('rect',{x:x1,y:top+1,width:x2-x1,height:ROW-4,rx:2,fill:'#ffcc80',stroke:'#fb8c00'},g);label(g,x1,x2,top+13,b.label,'#5d3a00');tip(g,b.detail);}});
  // Marks.
  // A label that would run into the one before it on its lane is left to
  // the tooltip (a fault and its clock change often fall in one instant).
  const labelEnd={};
  D.marks.slice().sort((a,b)=>a.t-b.t).forEach(m=>{const i=laneOf(m.lane);const x=X(m.t);const g=el('g',{});
    // A node's own events sit at the bottom of its lane, under the bars' labels.
    const quiet=m.kind=='event'&&!m.hl&&m.lane!=='';const bottom=(i+1<laneTop.length?laneTop[i+1]:lanesBottom)-6;
    const yy=quiet?bottom:laneTop[i]+PADY+2;
    const c=m.kind=='problem'||m.hl?'#d50000':m.kind=='fault'?'#8e24aa':'#455a64';const r=m.hl?6:quiet?3:4;
    el('path',{d:`M${x} ${yy-r+4} L${x+r} ${yy+4} L${x} ${yy+r+4} L${x-r} ${yy+4} Z`,fill:c,stroke:'#fff','stroke-width':1},g);
    if(m.lane==='')el('line',{x1:x,x2:x,y1:AXIS-4,y2:lanesBottom,stroke:c,'stroke-opacity':0.35,'stroke-dasharray':'2,3'},g);
    const lx=x+r+2;const room=m.hl||!(lx<(labelEnd[i]??-Infinity));
    if(pxs*D.end>0&&(m.hl||m.kind!='event'||m.lane==='')&&room){el('text',{x:lx,y:yy+8,'font-size':10,fill:c},g,m.label);labelEnd[i]=lx+m.label.length*5.6+4;}
    tip(g,m.detail);});
  if(hasClock)drawClocks(W);
  labels.style.height=H+'px';drawOverview();
  const vis=scroll.clientWidth/pxs;view.textContent='showing '+fmt(Math.max(0,(scroll.scrollLeft-8)/pxs))+' – '+fmt(Math.min(D.end,(scroll.scrollLeft-8)/pxs+vis))+' of '+fmt(D.end);
}
const palette=['#7e57c2','#00897b','#e53935','#3949ab','#f4511e','#6d4c41','#c0ca33','#039be5'];
function drawClocks(W){const top=lanesBottom+AXIS,h=CLOCKH-10;let m=0.001;
  D.clocks.forEach(c=>c.pts.forEach(p=>m=Math.max(m,Math.abs(p[1]))));m*=1.15;
  const Y=v=>top+h/2-v/m*(h/2);
  el('rect',{x:0,y:top-AXIS+4,width:W,height:CLOCKH+AXIS-8,fill:'#fbf9ff'});
  el('text',{x:10,y:top-8,'font-size':11,fill:'#555'},null,'clock offset from true time (a node ahead is above the line)');
  el('line',{x1:0,x2:W,y1:Y(0),y2:Y(0),stroke:'#999'});
  [m/1.15,-m/1.15].forEach(v=>{el('line',{x1:0,x2:W,y1:Y(v),y2:Y(v),stroke:'#ddd','stroke-dasharray':'3,3'});
    el('text',{x:scroll.scrollLeft+10,y:Y(v)-3,'font-size':10,fill:'#777'},null,(v>0?'+':'')+v.toFixed(3)+' s');});
  const ends=[];D.clocks.forEach((c,k)=>{const col=palette[k%palette.length];
    const d=c.pts.map((p,j)=>(j?'L':'M')+X(p[0]).toFixed(1)+' '+Y(p[1]).toFixed(1)).join(' ');
    const g=el('g',{});el('path',{d:d,fill:'none',stroke:col,'stroke-width':2},g);tip(g,c.node+': '+c.note);
    ends.push({y:Y(c.pts[c.pts.length-1][1]),col:col,text:c.node+' '+(c.pts[c.pts.length-1][1]>=0?'+':'')+c.pts[c.pts.length-1][1].toFixed(3)+' s',g:g});});
  // End labels, pushed apart so that none covers another.
  ends.sort((p,q)=>p.y-q.y);let prev=-1e9;const x=Math.min(scroll.scrollLeft+scroll.clientWidth-130,W-130);
  ends.forEach(e=>{const yy=Math.max(e.y-3,prev+12);prev=yy;el('text',{x:x,y:yy,'font-size':11,fill:e.col,'font-weight':600,stroke:'#fbf9ff','stroke-width':3,'paint-order':'stroke'},e.g,e.text);});}
function drawLabels(){labels.innerHTML='';D.lanes.forEach((l,i)=>{const d=document.createElement('div');d.style.top=laneTop[i]+'px';
  d.style.height=((i+1<laneTop.length?laneTop[i+1]:lanesBottom)-laneTop[i])+'px';
  if(l.named)d.className='named';
  const b=document.createElement('b');b.textContent=(l.named?'★ ':'')+l.label;d.appendChild(b);const s=document.createElement('small');s.textContent=l.note;d.appendChild(s);d.title=l.label+' — '+l.note+(l.named?' (holds what the violation names)':'');labels.appendChild(d);});
  if(hasClock){const d=document.createElement('div');d.style.top=(lanesBottom+AXIS-20)+'px';d.style.height=(CLOCKH+20)+'px';
    const b=document.createElement('b');b.textContent='clock offsets';d.appendChild(b);
    D.clocks.forEach((c,k)=>{const s=document.createElement('small');s.style.color=palette[k%palette.length];s.textContent=c.node+': '+c.note;d.appendChild(s);});labels.appendChild(d);}}
const ov=document.getElementById('tl-overview');
function drawOverview(){while(ov.firstChild)ov.removeChild(ov.firstChild);const W=ov.clientWidth||scroll.clientWidth;const k=(W-2)/D.end;
  ov.setAttribute('height',18);ov.setAttribute('width',W);
  el('rect',{x:0,y:0,width:W,height:18,fill:'#f3f3f3'},ov);
  D.bands.forEach(b=>el('rect',{x:1+b.a*k,y:2,width:Math.max(1,(b.b-b.a)*k),height:14,fill:'#ffcc80'},ov));
  D.spans.forEach(s=>{if(s.kind=='crash'||s.kind=='pause')el('rect',{x:1+s.a*k,y:2,width:Math.max(1,((s.b==null?D.end:s.b)-s.a)*k),height:14,fill:'#9e9e9e','fill-opacity':0.7},ov);});
  if(D.focus)el('rect',{x:1+D.focus[0]*k-1,y:0,width:Math.max(3,(D.focus[1]-D.focus[0])*k+2),height:18,fill:'#d50000'},ov);
  const a=Math.max(0,(scroll.scrollLeft-8)/pxs),b=Math.min(D.end,a+scroll.clientWidth/pxs);
  el('rect',{x:1+a*k,y:1,width:Math.max(2,(b-a)*k),height:16,fill:'none',stroke:'#1565c0','stroke-width':2},ov);}
ov.addEventListener('click',ev=>{const r=ov.getBoundingClientRect();const t=(ev.clientX-r.left-1)/((r.width-2)/D.end);setScale(pxs,t);});
function setScale(p,centre){const c=centre!=null?centre:((scroll.scrollLeft+scroll.clientWidth/2-8)/pxs);pxs=Math.max(fit,Math.min(p,fit*200000));draw();scroll.scrollLeft=Math.max(0,X(c)-scroll.clientWidth/2);draw();}
function show(a,b,ctx){const w=Math.max(b-a,D.end/20000);setScale((scroll.clientWidth-60)/(w*(ctx||1.6)),(a+b)/2);}
function fitAll(){fit=(Math.max(scroll.clientWidth,400)-70)/D.end;pxs=fit;draw();scroll.scrollLeft=0;draw();}
function toViolation(){if(D.view){show(D.view[0],D.view[1],1);const out=named.filter(n=>n[1]<D.view[0]||n[0]>D.view[1]).length;
  detail.textContent='The violation: '+fmt(D.focus[0])+' – '+fmt(D.focus[1])+' (shaded red; what it names is outlined red and starred'+(out?'; '+out+' named item'+(out>1?'s':'')+' outside this view: n/p step to them':'')+').';}
  else{fitAll();detail.textContent='The violation names no operation or moment: the whole run is shown.';}}
function step(k){if(!named.length){toViolation();return;}cur=(cur+k+named.length)%named.length;const n=named[cur];show(n[0],n[1]);detail.textContent='Named item '+(cur+1)+' of '+named.length+': '+fmt(n[0])+' – '+fmt(n[1]);}
document.getElementById('b-in').onclick=()=>setScale(pxs*2);
document.getElementById('b-out').onclick=()=>setScale(pxs/2);
document.getElementById('b-fit').onclick=fitAll;
document.getElementById('b-viol').onclick=toViolation;
document.getElementById('b-next').onclick=()=>step(1);
document.getElementById('b-prev').onclick=()=>step(-1);
document.querySelectorAll('a[data-op]').forEach(a=>a.addEventListener('click',ev=>{ev.preventDefault();const o=D.ops.find(o=>String(o.id)===a.dataset.op);if(o){show(o.a,o.b==null?D.end:o.b);detail.textContent=o.detail;scroll.focus();}}));
document.addEventListener('keydown',ev=>{if(ev.ctrlKey||ev.metaKey||ev.altKey)return;const k=ev.key;
  if(k=='+'||k=='=')setScale(pxs*2);else if(k=='-'||k=='_')setScale(pxs/2);else if(k=='0')fitAll();
  else if(k=='v'||k=='V')toViolation();else if(k=='n')step(1);else if(k=='p')step(-1);
  else if(k=='ArrowRight'){scroll.scrollLeft+=scroll.clientWidth/4;draw();}else if(k=='ArrowLeft'){scroll.scrollLeft-=scroll.clientWidth/4;draw();}
  else return;ev.preventDefault();});
scroll.addEventListener('scroll',()=>{drawOverview();const vis=scroll.clientWidth/pxs;view.textContent='showing '+fmt(Math.max(0,(scroll.scrollLeft-8)/pxs))+' – '+fmt(Math.min(D.end,(scroll.scrollLeft-8)/pxs+vis))+' of '+fmt(D.end);});
window.addEventListener('resize',()=>{const c=(scroll.scrollLeft+scroll.clientWidth/2-8)/pxs;fit=(Math.max(scroll.clientWidth,400)-70)/D.end;setScale(pxs,c);});
drawLabels();fitAll();if(D.view){toViolation();detail.textContent='Opened on the violation: '+detail.textContent+' Press 0 for the whole run, v to come back.';}
})();
"#;
