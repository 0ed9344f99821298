//! `xla2tpu run --advise-html FILE`: the advice as one self-contained page (inline CSS and SVG,
//! no scripts, no network) with a per-step chart of host syncs, copies to the chip and ops.

use std::fmt::Write;

use super::{Advice, Analysis, StepTotals, bytes, micros};
use crate::html::escape as e;

const CSS: &str = r#"
:root{--ink:#1d232a;--mute:#5b6570;--line:#e3e6ea;--sync:#c62828;--copy:#ef9f00;--ops:#1565c0}
*{box-sizing:border-box}
body{font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);max-width:1000px;margin:2rem auto;padding:0 1.2rem}
h1{font-size:1.5rem;margin:.2rem 0 .4rem;overflow-wrap:anywhere}h2{font-size:1.2rem;margin:2rem 0 .6rem;border-bottom:1px solid var(--line);padding-bottom:.25rem}
.meta{color:var(--mute);font-size:.9rem;margin:.15rem 0}
.cards{display:flex;flex-wrap:wrap;gap:.8rem;margin:1.2rem 0}
.card{border:1px solid var(--line);border-radius:8px;padding:.7rem 1rem;min-width:9rem}
.card b{display:block;font-size:1.5rem}.card span{color:var(--mute);font-size:.85rem}
ol{padding-left:1.4rem}li{margin:0 0 1.2rem}
.cost{font-weight:600;white-space:nowrap}.why{color:var(--mute)}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.84rem}
code{overflow-wrap:anywhere}
pre{background:#f5f6f8;border-radius:6px;padding:.6rem .8rem;overflow-x:auto;max-width:100%}
svg{max-width:100%;height:auto}svg text{font:12px system-ui,sans-serif;fill:var(--mute)}
footer{margin:3rem 0 1rem;color:var(--mute);font-size:.85rem}
@media (max-width:700px){body{margin:1rem auto;padding:0 .8rem}.card{min-width:8rem;padding:.5rem .8rem}}
"#;

/// At most this many bars per chart row; longer runs are shown as means of equal runs of steps.
const MAX_BARS: usize = 120;

/// Whether a file's first bytes are those of an earlier advice page (which the next may replace).
pub fn is_page(head: &str) -> bool {
    head.starts_with("<!doctype html>") && head.contains("<title>xla2tpu run --advise: ")
}

pub fn render(advice: &Advice, a: &Analysis, program: &str) -> String {
    let mut o = String::with_capacity(16 * 1024);
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
         content=\"width=device-width,initial-scale=1\"><title>xla2tpu run --advise: {}</title><style>{CSS}</style></head><body>\n",
        e(program)
    );
    let _ = writeln!(o, "<h1>What would slow <code>{}</code> on TorchTPU</h1>", e(program));
    let p = &a.per_step;
    let total: f64 = a.findings.iter().map(|f| f.cost_us_per_step).sum();
    let _ = writeln!(o, "<div class=\"cards\">");
    for (value, label) in [
        (a.steps.to_string(), "training steps".to_string()),
        (p.syncs.to_string(), "host syncs per step".to_string()),
        (format!("{} ({})", p.h2d, bytes(p.h2d_bytes)), "copies to the chip per step".to_string()),
        (p.ops.to_string(), "ops dispatched per step".to_string()),
        (format!("~{}", micros(total)), "estimated host cost per step".to_string()),
    ] {
        let _ = writeln!(o, "<div class=\"card\"><b>{}</b><span>{}</span></div>", e(&value), e(&label));
    }
    let _ = writeln!(o, "</div>");
    let source = a
        .step_source
        .strip_prefix("marker:")
        .map_or("the work between two optimizer steps".to_string(), |m| format!("one call of {m}"));
    let _ = writeln!(
        o,
        "<p class=\"meta\">A step is {}. Per-step figures are means over the steps after the first, which also holds \
         the set-up{}. Costs are estimates for ranking, not a step time: {}.</p>",
        e(&source),
        if a.compiled { "; the program uses torch.compile" } else { "" },
        e(a.cost_model)
    );
    let _ = writeln!(o, "<h2>Step by step</h2>");
    chart(&mut o, &advice.steps);
    let _ = writeln!(o, "<h2>What to change, most costly first</h2>");
    if a.findings.is_empty() {
        let _ = writeln!(o, "<p>Nothing: no host sync, per-step copy or dynamic shape in the step.</p>");
    }
    let _ = writeln!(o, "<ol>");
    for f in &a.findings {
        let place = match (&f.at.file, f.at.line) {
            (Some(file), Some(line)) => format!(" at <code>{}:{line}</code>", e(file)),
            (Some(file), None) => format!(" in <code>{}</code>", e(file)),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "<li><b>{}</b>{place}: <span class=\"cost\">~{}/step</span><div class=\"why\">{}</div><div>{}</div>",
            e(&f.what),
            e(&micros(f.cost_us_per_step)),
            e(&f.why),
            e(&f.help)
        );
        if !f.example.is_empty() {
            let _ = writeln!(o, "<pre><code>{}</code></pre>", e(&f.example));
        }
        let _ = writeln!(o, "</li>");
    }
    let _ = writeln!(o, "</ol>");
    let _ = writeln!(
        o,
        "<footer>xla2tpu {} · emulated TorchTPU 0.2.0 on a CPU: counts are exact, times are not measured.</footer></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    o
}

/// One row of the chart: its label, colour, and what it counts in a step.
type Row = (&'static str, &'static str, fn(&StepTotals) -> u64);

/// Three rows of bars, one bar per step: host syncs, copies to the chip, ops.
fn chart(o: &mut String, steps: &[StepTotals]) {
    if steps.is_empty() {
        let _ = writeln!(o, "<p>No step was seen.</p>");
        return;
    }
    let per = steps.len().div_ceil(MAX_BARS);
    let buckets: Vec<&[StepTotals]> = steps.chunks(per).collect();
    let mean = |b: &[StepTotals], f: fn(&StepTotals) -> u64| b.iter().map(f).sum::<u64>() as f64 / b.len() as f64;
    let rows: [Row; 3] = [
        ("host syncs", "var(--sync)", |s| s.syncs),
        ("copies to the chip", "var(--copy)", |s| s.h2d),
        ("ops dispatched", "var(--ops)", |s| s.ops),
    ];
    let (left, width, row_h, gap) = (130.0, 600.0, 46.0, 18.0);
    let bar_w = width / buckets.len() as f64;
    let height = rows.len() as f64 * (row_h + gap) + 20.0;
    let _ = writeln!(
        o,
        "<svg viewBox=\"0 0 {} {height}\" role=\"img\" aria-label=\"per-step host syncs, copies to the chip and ops\">",
        left + width + 10.0
    );
    for (i, (label, color, f)) in rows.iter().enumerate() {
        let top = i as f64 * (row_h + gap);
        let values: Vec<f64> = buckets.iter().map(|b| mean(b, *f)).collect();
        let max = values.iter().cloned().fold(0.0, f64::max);
        let _ = writeln!(o, "<text x=\"0\" y=\"{}\">{label}</text>", top + row_h / 2.0);
        let _ = writeln!(o, "<text x=\"0\" y=\"{}\">max {}</text>", top + row_h / 2.0 + 15.0, trim(max));
        let _ = writeln!(
            o,
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#e3e6ea\"/>",
            left + width,
            top + row_h,
            top + row_h
        );
        for (j, v) in values.iter().enumerate() {
            if *v <= 0.0 {
                continue;
            }
            let h = (v / max * row_h).max(1.0);
            let first = j * per + 1;
            let last = ((j + 1) * per).min(steps.len());
            let steps_text = if first == last { format!("step {first}") } else { format!("steps {first}–{last}") };
            let _ = writeln!(
                o,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{color}\"><title>{steps_text}: {} {label}</title></rect>",
                left + j as f64 * bar_w + bar_w * 0.1,
                top + row_h - h,
                bar_w * 0.8,
                trim(*v)
            );
        }
    }
    let _ = writeln!(
        o,
        "<text x=\"{left}\" y=\"{}\">step 1</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">step {}</text></svg>",
        height - 4.0,
        left + width,
        height - 4.0,
        steps.len()
    );
}

fn trim(v: f64) -> String {
    if (v - v.round()).abs() < 0.05 { format!("{}", v.round()) } else { format!("{v:.1}") }
}
