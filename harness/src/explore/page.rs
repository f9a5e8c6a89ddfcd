//! The page of an exploration: the goals reached over the runs, drawn as a
//! step line (a dot where goals were first reached, naming them), and the
//! goals' tally with what each means. Plain HTML with an inline SVG: it
//! opens from disk, with no script.

use super::Explored;
use overcast_sim::timeline::esc;
use std::fmt::Write;

/// The drawing's size and margins, px.
const WIDTH: f64 = 860.0;
const HEIGHT: f64 = 300.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 44.0;

/// Round tick steps for an axis reaching `max`: about five ticks.
pub fn tick_step(max: f64) -> f64 {
    let raw = (max / 5.0).max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// The goals reached over the runs as an SVG step line.
fn chart(e: &Explored) -> String {
    let total = e.goals.goals.len().max(1) as f64;
    let runs = e.runs.max(1) as f64;
    let x = |r: f64| LEFT + r / runs * (WIDTH - LEFT - RIGHT);
    let y = |g: f64| TOP + (1.0 - g / total) * (HEIGHT - TOP - BOTTOM);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="goals reached over the runs">"#
    );
    // Axes, ticks and their labels.
    let (x0, x1, y0, y1) = (x(0.0), x(runs), y(0.0), y(total));
    let _ = write!(
        s,
        r##"<path d="M{x0:.1},{y1:.1}V{y0:.1}H{x1:.1}" fill="none" stroke="#555"/>"##
    );
    let step = tick_step(runs);
    let mut t = 0.0;
    while t <= runs {
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" x2="{0:.1}" y1="{y0:.1}" y2="{1:.1}" stroke="#555"/><text x="{0:.1}" y="{2:.1}" text-anchor="middle">{3}</text>"##,
            x(t),
            y0 + 5.0,
            y0 + 18.0,
            t as u64
        );
        t += step;
    }
    let step = tick_step(total);
    let mut g = 0.0;
    while g <= total {
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" x2="{1:.1}" y1="{2:.1}" y2="{2:.1}" stroke="#ddd"/><text x="{3:.1}" y="{4:.1}" text-anchor="end">{5}</text>"##,
            x0,
            x1,
            y(g),
            x0 - 6.0,
            y(g) + 4.0,
            g as u64
        );
        g += step;
    }
    // The top: every goal.
    if total % step != 0.0 {
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            x0 - 6.0,
            y1 + 4.0,
            total as u64
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">runs (fresh seeds and branches)</text>"#,
        (x0 + x1) / 2.0,
        HEIGHT - 6.0
    );
    let _ = write!(
        s,
        r#"<text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">goals reached</text>"#,
        (y0 + y1) / 2.0
    );
    // The step line: flat until a sample, then up to what it had reached.
    let mut d = format!("M{x0:.1},{y0:.1}");
    let mut last = 0.0;
    for sample in &e.over_time {
        let sx = x(sample.runs as f64);
        let _ = write!(d, "H{sx:.1}V{:.1}", y(sample.reached as f64));
        last = sample.reached as f64;
    }
    let _ = write!(d, "H{x1:.1}V{:.1}", y(last));
    let _ = write!(
        s,
        r##"<path d="{d}" fill="none" stroke="#1f6feb" stroke-width="2"/>"##
    );
    for sample in e.over_time.iter().filter(|s| !s.new.is_empty()) {
        let _ = write!(
            s,
            r##"<circle cx="{:.1}" cy="{:.1}" r="4" fill="#1f6feb"><title>after {} runs ({:.1} s): first reached {}</title></circle>"##,
            x(sample.runs as f64),
            y(sample.reached as f64),
            sample.runs,
            sample.seconds,
            esc(&sample.new.join(", "))
        );
    }
    if let Some((run, _)) = e.first_failure {
        let fx = x(run as f64);
        let _ = write!(
            s,
            r##"<line x1="{fx:.1}" x2="{fx:.1}" y1="{y0:.1}" y2="{y1:.1}" stroke="#cf222e" stroke-dasharray="4 3"><title>the first failure: run {run}</title></line>"##
        );
    }
    s.push_str("</svg>");
    s
}

/// The page of exploration `e`.
pub fn page(e: &Explored) -> String {
    let reached = e.goals.goals.iter().filter(|g| g.seeds > 0).count();
    let mut html = format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>overcast explore {name}</title><style>
body{{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1f2328;max-width:1000px}}
h1{{font-size:20px;margin:0 0 4px}} .sub{{color:#59636e;margin:0 0 16px}}
svg text{{font:12px system-ui,sans-serif;fill:#1f2328}}
table{{border-collapse:collapse;margin-top:16px;width:100%}} td,th{{border-bottom:1px solid #d1d9e0;padding:4px 8px;text-align:left;vertical-align:top}}
td.n,td.id{{text-align:right;white-space:nowrap}} td.id{{text-align:left}} tr.never td{{color:#cf222e}} code{{font-size:13px}}
</style></head><body><h1>overcast explore {name}</h1><p class="sub">{runs} runs ({branched} branched from rare states) in {secs:.1} s; goals {reached} of {total} reached; {failed}.</p>"#,
        name = esc(&e.scenario),
        runs = e.runs,
        branched = e.branched,
        secs = e.seconds,
        total = e.goals.goals.len(),
        failed = match e.first_failure {
            Some((run, secs)) =>
                format!("the first failure at run {run} ({secs:.1} s), marked red"),
            None => "none failed".to_string(),
        }
    );
    html.push_str(&chart(e));
    html.push_str(
        "<table><tr><th>goal</th><th>runs that reached it</th><th>times</th><th>what it is</th></tr>",
    );
    for g in &e.goals.goals {
        let _ = write!(
            html,
            r#"<tr{}><td class="id"><code>{}</code></td><td class="n">{} of {}</td><td class="n">{}</td><td>{}</td></tr>"#,
            if g.seeds == 0 {
                r#" class="never""#
            } else {
                ""
            },
            esc(&g.id),
            g.seeds,
            e.goals.runs,
            g.times,
            esc(&g.meaning)
        );
    }
    html.push_str("</table></body></html>\n");
    html
}
