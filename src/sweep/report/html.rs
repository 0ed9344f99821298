//! One self-contained HTML file: inline CSS and SVG, no scripts, no network. Every string that
//! comes from data (model ids above all) goes through [`e`].
use std::fmt::Write;

use super::phrases::{
    bf16_line, denominator, detail, exact_line, execution_line, first_line, mix, run_rows, share, source_line,
};
use crate::html::escape as e;
use crate::sweep::agreement::{ExecutionSummary, explain};
use crate::sweep::document::{Headline, Report};
use crate::sweep::tally::Rate;
use crate::sweep::tally::{count, human, pct, thousands};
use crate::sweep::verdict::Verdict;

const CSS: &str = r#"
:root{--pass:#2e7d32;--passinf:#7cb342;--incomplete:#7e57c2;--fail:#c62828;--unknown:#ef9f00;--na:#9e9e9e;--ink:#1d232a;--mute:#5b6570;--line:#e3e6ea}
*{box-sizing:border-box}
body{font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);max-width:1100px;margin:2rem auto;padding:0 1.2rem}
h1{font-size:1.6rem;margin:.2rem 0 .4rem}h2{font-size:1.2rem;margin:2.2rem 0 .6rem;border-bottom:1px solid var(--line);padding-bottom:.25rem}
.meta{color:var(--mute);font-size:.9rem;margin:.15rem 0}
.cards{display:flex;flex-wrap:wrap;gap:.8rem;margin:1.2rem 0}
.card{border:1px solid var(--line);border-radius:8px;padding:.7rem 1rem;min-width:11rem}
.card b{display:block;font-size:1.5rem}.card span{color:var(--mute);font-size:.85rem}
.caveat{background:#fff8e1;border-left:4px solid var(--unknown);padding:.6rem .9rem;border-radius:4px}
table{border-collapse:collapse;width:100%;font-size:.88rem;margin:.4rem 0}
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
th{background:#f5f6f8;position:sticky;top:0}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code,.op{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.84rem}
.id,.arch{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.84rem}
.id{overflow-wrap:anywhere;min-width:15rem}.arch{white-space:nowrap}
.v{display:inline-block;padding:0 .45rem;border-radius:4px;color:#fff;font-size:.8rem;font-weight:600}
.v-pass{background:var(--pass)}.v-passinf{background:var(--passinf)}.v-incomplete{background:var(--incomplete)}.v-fail{background:var(--fail)}.v-unknown{background:var(--unknown)}.v-na{background:var(--na)}
.legend span{margin-right:1.2rem;font-size:.88rem}.legend i{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;margin-right:.3rem;vertical-align:-1px}
svg text{font:12px system-ui,sans-serif}
details summary{cursor:pointer;color:var(--mute);margin:.4rem 0}
footer{margin:3rem 0 1rem;color:var(--mute);font-size:.85rem}
svg{max-width:100%;height:auto}
@media (max-width:700px){body{margin:1rem auto;padding:0 .8rem}table{display:block;overflow-x:auto}.id{min-width:10rem}.card{min-width:9rem;padding:.5rem .8rem}}
"#;

pub fn render(r: &Report) -> String {
    let t = &r.totals;
    let mut o = String::with_capacity(64 * 1024 + r.models.len() * 256);
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>TorchTPU compatibility sweep: {}</title><style>{CSS}</style></head><body>\n",
        count(t.total.models, "model")
    );
    let _ = writeln!(o, "<h1>Which Hugging Face models run on {}?</h1>", e(&r.backend.name));
    // The headline figures first: on a phone they are the first screen.
    let h = &r.headline;
    let _ = writeln!(o, "<div class=\"cards\">");
    for (label, rate) in h.figures() {
        card(&mut o, &pct(rate.by_count), &format!("{label}, by count ({} by downloads)", pct(rate.by_downloads)));
    }
    let _ = writeln!(o, "</div>");
    let _ = writeln!(
        o,
        "<p class=\"meta\">Every share is {}; {} swept, {} downloads in 30 days.{}</p>",
        e(&denominator(h)),
        e(&count(t.total.models, "model")),
        e(&human(t.total.downloads)),
        if h.runs.is_none() { " Runs on the emulated chip left out (<code>--no-executions</code>)." } else { "" }
    );
    let _ = writeln!(o, "<p class=\"meta\">Models: {}</p>", e(&source_line(r)));
    for note in &r.source.notes {
        let _ = writeln!(o, "<p class=\"meta\">Note: {}</p>", e(note));
    }
    let _ = writeln!(
        o,
        "<p class=\"meta\">Backend registry: <code>{}</code>: {}</p>",
        e(&r.backend.name),
        e(first_line(&r.backend.provenance))
    );

    let _ = writeln!(o, "<p class=\"caveat\">{}</p>", e(&r.caveat));

    let _ = writeln!(o, "<h2>Op coverage by download share and by count</h2>");
    share_chart(&mut o, r);
    let _ = writeln!(
        o,
        "<table><tr><th>verdict</th><th class=n>models</th><th class=n>share</th><th class=n>downloads</th><th class=n>share</th><th>guarantees</th></tr>"
    );
    for v in Verdict::ALL {
        let tally = t.get(v);
        let (by_count, by_downloads) =
            share(r, v).map_or(("-".to_string(), "-".to_string()), |s| (pct(s.by_count), pct(s.by_downloads)));
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=n>{}</td><td class=n>{by_count}</td><td class=n>{}</td><td class=n>{by_downloads}</td><td>{}</td></tr>",
            badge(v),
            thousands(tally.models),
            human(tally.downloads),
            e(v.guarantee())
        );
    }
    let _ = writeln!(
        o,
        "</table><p>Inference proven: {} by count, {} by downloads.{}</p>",
        pct(t.inference_rate.by_count),
        pct(t.inference_rate.by_downloads),
        if t.fail_inference_ok.models > 0 {
            format!(
                " {} ({} downloads) {} only training ops: inference is covered.",
                count(t.fail_inference_ok.models, "failing model"),
                human(t.fail_inference_ok.downloads),
                if t.fail_inference_ok.models == 1 { "misses" } else { "miss" }
            )
        } else {
            String::new()
        }
    );

    for line in r.bf16.iter().map(bf16_line).chain(r.exact.iter().map(exact_line)) {
        let _ = writeln!(o, "<p>{}.</p>", e(&line));
    }
    if let Some(x) = &r.execution {
        execution_section(&mut o, x, h);
    }

    if !r.blockers.is_empty() {
        let _ = writeln!(
            o,
            "<h2>Top blockers</h2><p>Missing ops ranked by the downloads of the failing models that need them.</p>"
        );
        blocker_chart(&mut o, r);
        let _ = writeln!(
            o,
            "<table><tr><th>op</th><th class=n>models blocked</th><th class=n>downloads blocked</th><th class=n>only missing op for</th><th>most downloaded</th></tr>"
        );
        for b in r.blockers.iter().take(25) {
            let ex: Vec<String> = b.examples.iter().map(|x| format!("<span class=id>{}</span>", e(x))).collect();
            let _ = writeln!(
                o,
                "<tr><td class=op>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{} ({})</td><td>{}</td></tr>",
                e(&b.op),
                thousands(b.blocks.models),
                human(b.blocks.downloads),
                thousands(b.alone.models),
                human(b.alone.downloads),
                ex.join("<br>")
            );
        }
        let _ = writeln!(o, "</table>");
    }
    if !r.plan.steps.is_empty() {
        let last = r.plan.steps.last().map_or(r.plan.baseline, |s| s.rate);
        let _ = writeln!(
            o,
            "<h2>Fix order</h2><p>Implement these {}, in this order, and the pass rate goes from <b>{}</b> to <b>{}</b> by downloads ({} to {} by count). Greedy: each step takes the op that flips the most downloads from fail to pass.</p>",
            count(r.plan.steps.len(), "op"),
            pct(r.plan.baseline.by_downloads),
            pct(last.by_downloads),
            pct(r.plan.baseline.by_count),
            pct(last.by_count)
        );
        let _ = writeln!(
            o,
            "<table><tr><th class=n>k</th><th>implement</th><th class=n>models flipped</th><th class=n>downloads flipped</th><th class=n>pass rate (downloads)</th><th class=n>pass rate (count)</th></tr>"
        );
        for s in &r.plan.steps {
            let _ = writeln!(
                o,
                "<tr><td class=n>{}</td><td class=op>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td></tr>",
                s.k,
                e(&s.op),
                thousands(s.flipped.models),
                human(s.flipped.downloads),
                pct(s.rate.by_downloads),
                pct(s.rate.by_count)
            );
        }
        let _ = writeln!(o, "</table>");
    }

    const ARCH_HEAD: &str = "<table><tr><th>architecture</th><th class=n>models</th><th class=n>downloads</th><th>verdicts</th><th>missing ops / reason</th></tr>";
    const ARCH_SHOWN: usize = 40;
    let _ = writeln!(o, "<h2>By architecture</h2>{ARCH_HEAD}");
    for (i, a) in r.architectures.iter().enumerate() {
        if i == ARCH_SHOWN {
            let _ = writeln!(
                o,
                "</table><details><summary>{} more architectures</summary>{ARCH_HEAD}",
                r.architectures.len() - ARCH_SHOWN
            );
        }
        let why = if a.missing.is_empty() { a.reason.clone().unwrap_or_default() } else { a.missing.join(", ") };
        let _ = writeln!(
            o,
            "<tr><td class=arch>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td><td>{}</td></tr>",
            e(&a.arch),
            thousands(a.total.models),
            human(a.total.downloads),
            e(&mix(a)),
            e(&why)
        );
    }
    let _ = writeln!(o, "</table>{}", if r.architectures.len() > ARCH_SHOWN { "</details>" } else { "" });

    if !r.reasons.is_empty() {
        let _ = writeln!(
            o,
            "<h2>Why unknown or n/a</h2><table><tr><th>verdict</th><th>reason</th><th class=n>models</th><th class=n>downloads</th></tr>"
        );
        for x in r.reasons.iter().take(40) {
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td>{}</td><td class=n>{}</td><td class=n>{}</td></tr>",
                badge(x.verdict),
                e(&x.reason),
                thousands(x.tally.models),
                human(x.tally.downloads)
            );
        }
        let _ = writeln!(o, "</table>");
    }

    if let Some(c) = &r.comparison {
        let _ = writeln!(
            o,
            "<h2>Compared with {}</h2><p>Pass rate there: {} by count, {} by downloads. {} differ.</p>",
            e(&c.backend.name),
            pct(c.totals.pass_rate.by_count),
            pct(c.totals.pass_rate.by_downloads),
            count(c.differences.len(), "model")
        );
        let _ = writeln!(
            o,
            "<table><tr><th>model</th><th>{}</th><th>{}</th><th>missing only on {}</th><th>missing only on {}</th></tr>",
            e(&r.backend.name),
            e(&c.backend.name),
            e(&r.backend.name),
            e(&c.backend.name)
        );
        for d in &c.differences {
            let _ = writeln!(
                o,
                "<tr><td class=id>{}</td><td>{}</td><td>{}</td><td class=op>{}</td><td class=op>{}</td></tr>",
                e(&d.id),
                badge(d.verdict),
                badge(d.compare_verdict),
                e(&d.missing_only_here.join(", ")),
                e(&d.missing_only_there.join(", "))
            );
        }
        let _ = writeln!(o, "</table>");
    }

    let _ = writeln!(
        o,
        "<h2>Models</h2><details><summary>All {}, in download order</summary><table><tr><th class=n>#</th><th>model</th><th class=n>downloads</th><th>verdict</th>{}{}<th>profiles</th><th>missing ops / reason</th><th>confidence</th></tr>",
        count(r.models.len(), "model"),
        if r.bf16.is_some() { "<th>bf16</th>" } else { "" },
        if r.execution.is_some() { "<th>on the device</th>" } else { "" }
    );
    for m in &r.models {
        let bf16 = m.bf16.as_ref().map(|b| format!("<td>{}</td>", badge(b.verdict))).unwrap_or_default();
        let exec = match (&r.execution, &m.execution) {
            (Some(_), Some(x)) => format!("<td title=\"{}\">{}</td>", e(&x.detail()), e(x.status.label())),
            (Some(_), None) => "<td></td>".to_string(),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "<tr><td class=n>{}</td><td class=id>{}</td><td class=n>{}</td><td>{}{}</td>{bf16}{exec}<td class=op>{}</td><td>{}</td><td>{}</td></tr>",
            m.rank,
            e(&m.id),
            human(m.downloads),
            badge(m.result.verdict),
            if m.exact { " exact" } else { "" },
            e(&m.profiles.join(" + ")),
            e(&detail(&m.result)),
            e(&m.result.confidence.join("; "))
        );
    }
    let _ = writeln!(o, "</table></details>");
    let _ = writeln!(
        o,
        "<footer>Generated by {} from {} operator profiles. The JSON report (<code>--format json</code>) carries every number with the profiles, trace versions and registry entries behind it.</footer></body></html>",
        e(&r.tool),
        r.profiles.len()
    );
    o
}

/// The execution verdict: its rates, where it disagrees with op coverage, and the failures.
fn execution_section(o: &mut String, x: &ExecutionSummary, h: &Headline) {
    let _ = writeln!(o, "<h2>Runs on the emulated chip</h2><p>{}.</p>", e(&execution_line(x)));
    let _ = writeln!(
        o,
        "<table><tr><th>on the chip</th><th class=n>models</th><th class=n>share</th><th class=n>downloads</th><th class=n>share</th><th>rests on</th></tr>"
    );
    for (label, tally, rests_on) in run_rows(x) {
        let s = Rate::of(tally, h.pytorch);
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td></tr>",
            e(&label),
            thousands(tally.models),
            pct(s.by_count),
            human(tally.downloads),
            pct(s.by_downloads),
            e(rests_on.trim_start_matches("rests on: "))
        );
    }
    let _ = writeln!(o, "</table><h3>Where op coverage and the run disagree</h3>");
    if !x.disagreements.is_empty() {
        let _ = writeln!(
            o,
            "<table><tr><th>op verdict</th><th>on the device</th><th>cause</th><th class=n>models</th><th class=n>downloads</th><th>why</th><th>most downloaded</th></tr>"
        );
        for d in &x.disagreements {
            let ex: Vec<String> = d.examples.iter().map(|m| format!("<span class=id>{}</span>", e(m))).collect();
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td><td>{}</td></tr>",
                badge(d.op_verdict),
                e(d.execution.label()),
                e(&d.cause),
                thousands(d.tally.models),
                human(d.tally.downloads),
                e(explain(d.op_verdict, d.execution, &d.cause)),
                ex.join("<br>")
            );
        }
        let _ = writeln!(o, "</table>");
    }
    if !x.failures.is_empty() {
        let _ = writeln!(
            o,
            "<details><summary>Failures on the device by kind and library line ({})</summary><table><tr><th>kind</th><th>where</th><th class=n>models</th><th class=n>downloads</th><th>profiles</th><th>error</th></tr>",
            x.failures.len()
        );
        for f in &x.failures {
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td class=op>{}</td><td class=n>{}</td><td class=n>{}</td><td class=op>{}</td><td>{}</td></tr>",
                e(&f.kind),
                e(&f.location),
                thousands(f.tally.models),
                human(f.tally.downloads),
                e(&f.profiles.join(" ")),
                e(&f.message)
            );
        }
        let _ = writeln!(o, "</table></details>");
    }
}

fn card(o: &mut String, value: &str, label: &str) {
    let _ = writeln!(o, "<div class=\"card\"><b>{}</b><span>{}</span></div>", e(value), e(label));
}

fn class(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::PassInference => "passinf",
        Verdict::Incomplete => "incomplete",
        Verdict::Fail => "fail",
        Verdict::Unknown => "unknown",
        Verdict::NotApplicable => "na",
    }
}

/// SVG presentation attributes do not reliably take CSS variables, so the colours are spelt out.
fn color(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "#2e7d32",
        Verdict::PassInference => "#7cb342",
        Verdict::Incomplete => "#7e57c2",
        Verdict::Fail => FAIL,
        Verdict::Unknown => "#ef9f00",
        Verdict::NotApplicable => "#9e9e9e",
    }
}

const FAIL: &str = "#c62828";

fn badge(v: Verdict) -> String {
    format!("<span class=\"v v-{}\">{}</span>", class(v), e(v.label()))
}

/// Two stacked bars (downloads, models) split by verdict.
fn share_chart(o: &mut String, r: &Report) {
    const W: f64 = 860.0;
    const X0: f64 = 90.0;
    let _ = writeln!(
        o,
        "<svg viewBox=\"0 0 {} 92\" width=\"100%\" role=\"img\" aria-label=\"verdict shares\">",
        W + X0 + 10.0
    );
    for (row, (label, by_downloads)) in [("downloads", true), ("models", false)].into_iter().enumerate() {
        let y = 8.0 + row as f64 * 40.0;
        let _ = writeln!(o, "<text x=\"0\" y=\"{}\">{label}</text>", y + 19.0);
        let mut x = X0;
        // Shares of the PyTorch checkpoints, as the cards above: n/a is left out of both.
        for v in Verdict::ALL {
            let Some(s) = share(r, v) else { continue };
            let share = if by_downloads { s.by_downloads } else { s.by_count };
            let w = W * share / 100.0;
            if w <= 0.0 {
                continue;
            }
            let _ = writeln!(
                o,
                "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"28\" fill=\"{}\"><title>{}: {}</title></rect>",
                color(v),
                v.label(),
                pct(share)
            );
            if w > 60.0 {
                let _ = writeln!(
                    o,
                    "<text x=\"{:.1}\" y=\"{}\" fill=\"#fff\">{} {}</text>",
                    x + 6.0,
                    y + 19.0,
                    v.label(),
                    pct(share)
                );
            }
            x += w;
        }
    }
    let _ = writeln!(o, "</svg><p class=\"legend\">");
    for v in Verdict::ALL.into_iter().filter(|&v| v != Verdict::NotApplicable) {
        let _ = write!(o, "<span><i style=\"background:{}\"></i>{}</span>", color(v), v.label());
    }
    let _ = writeln!(o, "</p>");
}

/// Horizontal bars: downloads blocked by each of the top ten missing ops.
fn blocker_chart(o: &mut String, r: &Report) {
    let top: Vec<_> = r.blockers.iter().take(10).collect();
    let max = top.iter().map(|b| b.blocks.downloads).max().unwrap_or(0).max(1) as f64;
    let (label_w, bar_w, row_h) = (380.0, 480.0, 24.0);
    let _ = writeln!(
        o,
        "<svg viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" aria-label=\"top blockers\">",
        label_w + bar_w + 90.0,
        top.len() as f64 * row_h + 6.0
    );
    for (i, b) in top.iter().enumerate() {
        let y = i as f64 * row_h + 3.0;
        let w = (bar_w * b.blocks.downloads as f64 / max).max(1.0);
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-family=\"monospace\">{}</text><rect x=\"{}\" y=\"{y}\" width=\"{w:.1}\" height=\"18\" fill=\"{FAIL}\"><title>{}</title></rect><text x=\"{:.1}\" y=\"{}\">{}</text>",
            label_w - 8.0,
            y + 13.0,
            e(&b.op),
            label_w,
            count(b.blocks.models, "model"),
            label_w + w + 6.0,
            y + 13.0,
            human(b.blocks.downloads)
        );
    }
    let _ = writeln!(o, "</svg>");
}
