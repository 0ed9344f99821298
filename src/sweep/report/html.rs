//! One self-contained HTML file (`templates/sweep.html`): inline CSS, no scripts, no network.
//! askama escapes every string that comes from data (model ids above all).
use askama::Template;

use super::phrases::{
    bf16_line, denominator, detail, exact_line, execution_line, first_line, from_id_line, mix, run_rows, share,
    source_line,
};
use crate::html::{Badge, Cell, Table};
use crate::sweep::agreement::{ExecutionSummary, explain};
use crate::sweep::document::{Headline, Report};
use crate::sweep::tally::Rate;
use crate::sweep::tally::{count, human, pct, thousands};
use crate::sweep::verdict::Verdict;

#[derive(Template)]
#[template(path = "sweep.html")]
struct Page<'a> {
    models: String,
    backend: &'a str,
    /// The headline figures (value, label): on a phone they are the first screen.
    cards: Vec<(String, String)>,
    denominator: String,
    downloads: String,
    no_runs: bool,
    source: String,
    notes: &'a [String],
    provenance: &'a str,
    caveat: &'a str,
    /// Two stacked bars (downloads, models) split by verdict.
    share_bars: Vec<(&'static str, Vec<Segment>)>,
    /// (class, label) of each verdict in the bars.
    legend: Vec<(&'static str, &'static str)>,
    verdicts: Table,
    inference: String,
    lines: Vec<String>,
    execution: Option<Execution>,
    blocker_bars: Vec<BlockerBar>,
    blockers: Table,
    /// The plan's ops and the pass rates before and after (downloads, then count).
    plan_line: (String, String, String, String, String),
    plan: Table,
    architectures: Table,
    more_architectures: Table,
    reasons: Table,
    comparison: Option<(String, String, Table)>,
    all_models: String,
    model_rows: Table,
    tool: &'a str,
    profiles: usize,
}

/// A verdict's part of a share bar: its width (a CSS percentage), class, and `pass: 92.8%`,
/// written in the bar where there is room for it.
struct Segment {
    width: String,
    class: &'static str,
    title: String,
    labelled: bool,
}

/// One of the top ten missing ops: its bar's width relative to the first.
struct BlockerBar {
    op: String,
    width: String,
    models: String,
    downloads: String,
}

struct Execution {
    line: String,
    runs: Table,
    disagreements: Table,
    failures: Table,
}

/// Architectures shown before the rest fold into a `<details>`.
const ARCH_SHOWN: usize = 40;

pub fn render(r: &Report) -> String {
    let t = &r.totals;
    let h = &r.headline;
    let cards = h
        .figures()
        .into_iter()
        .map(|(label, rate)| {
            (pct(rate.by_count), format!("{label}, by count ({} by downloads)", pct(rate.by_downloads)))
        })
        .collect();

    let mut verdicts =
        Table::new(["verdict", "#models", "#% of models", "#downloads", "#% of downloads", "guarantees"]);
    for v in Verdict::ALL {
        let tally = t.get(v);
        let (by_count, by_downloads) =
            share(r, v).map_or(("-".to_string(), "-".to_string()), |s| (pct(s.by_count), pct(s.by_downloads)));
        verdicts.rows.push(vec![
            badge(v, ""),
            Cell::Num(thousands(tally.models)),
            Cell::Num(by_count),
            Cell::Num(human(tally.downloads)),
            Cell::Num(by_downloads),
            Cell::Text(v.guarantee().to_string()),
        ]);
    }
    let inference = format!(
        "{} by count, {} by downloads.{}",
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

    let mut blockers =
        Table::new(["op", "#models blocked", "#downloads blocked", "#only missing op for", "most downloaded"]);
    for b in r.blockers.iter().take(25) {
        blockers.rows.push(vec![
            Cell::Code(b.op.clone()),
            Cell::Num(thousands(b.blocks.models)),
            Cell::Num(human(b.blocks.downloads)),
            Cell::Num(format!("{} ({})", thousands(b.alone.models), human(b.alone.downloads))),
            Cell::Ids(b.examples.clone()),
        ]);
    }

    let last = r.plan.steps.last().map_or(r.plan.baseline, |s| s.rate);
    let plan_line = (
        count(r.plan.steps.len(), "op"),
        pct(r.plan.baseline.by_downloads),
        pct(last.by_downloads),
        pct(r.plan.baseline.by_count),
        pct(last.by_count),
    );
    let mut plan = Table::new([
        "#k",
        "implement",
        "#models flipped",
        "#downloads flipped",
        "#pass rate (downloads)",
        "#pass rate (count)",
    ]);
    for s in &r.plan.steps {
        plan.rows.push(vec![
            Cell::Num(s.k.to_string()),
            Cell::Code(s.op.clone()),
            Cell::Num(thousands(s.flipped.models)),
            Cell::Num(human(s.flipped.downloads)),
            Cell::Num(pct(s.rate.by_downloads)),
            Cell::Num(pct(s.rate.by_count)),
        ]);
    }

    let arch_columns = ["architecture", "#models", "#downloads", "verdicts", "missing ops / reason"];
    let (mut architectures, mut more_architectures) = (Table::new(arch_columns), Table::new(arch_columns));
    for (i, a) in r.architectures.iter().enumerate() {
        let why = if a.missing.is_empty() { a.reason.clone().unwrap_or_default() } else { a.missing.join(", ") };
        let table = if i < ARCH_SHOWN { &mut architectures } else { &mut more_architectures };
        table.rows.push(vec![
            Cell::Arch(a.arch.clone()),
            Cell::Num(thousands(a.total.models)),
            Cell::Num(human(a.total.downloads)),
            Cell::Text(mix(a)),
            Cell::Text(why),
        ]);
    }

    let mut reasons = Table::new(["verdict", "reason", "#models", "#downloads"]);
    for x in r.reasons.iter().take(40) {
        reasons.rows.push(vec![
            badge(x.verdict, ""),
            Cell::Text(x.reason.clone()),
            Cell::Num(thousands(x.tally.models)),
            Cell::Num(human(x.tally.downloads)),
        ]);
    }
    if let Some(line) = from_id_line(r) {
        let n = r.models.iter().filter(|m| m.model_type_from_id.is_some());
        let t = crate::sweep::tally::tally(n.map(|m| m.downloads));
        reasons.rows.push(vec![
            Cell::Text("resolved".into()),
            Cell::Text(line),
            Cell::Num(thousands(t.models)),
            Cell::Num(human(t.downloads)),
        ]);
    }

    let comparison = r.comparison.as_ref().map(|c| {
        let (here, there) = (&r.backend.name, &c.backend.name);
        let mut differences = Table::new([
            "model".to_string(),
            here.clone(),
            there.clone(),
            format!("missing only on {here}"),
            format!("missing only on {there}"),
        ]);
        for d in &c.differences {
            differences.rows.push(vec![
                Cell::Id(d.id.clone()),
                badge(d.verdict, ""),
                badge(d.compare_verdict, ""),
                Cell::Code(d.missing_only_here.join(", ")),
                Cell::Code(d.missing_only_there.join(", ")),
            ]);
        }
        let line = format!(
            "Pass rate there: {} by count, {} by downloads. {} differ.",
            pct(c.totals.pass_rate.by_count),
            pct(c.totals.pass_rate.by_downloads),
            count(c.differences.len(), "model")
        );
        (format!("Compared with {there}"), line, differences)
    });

    let mut columns = vec!["#", "model", "#downloads", "verdict"];
    columns.extend(r.bf16.is_some().then_some("bf16"));
    columns.extend(r.execution.is_some().then_some("on the device"));
    columns.extend(["profiles", "missing ops / reason", "confidence"]);
    let mut model_rows = Table { class: "models", ..Table::new(columns) };
    for m in &r.models {
        let mut row = vec![
            Cell::Num(m.rank.to_string()),
            Cell::Id(m.id.clone()),
            Cell::Num(human(m.downloads)),
            badge(m.result.verdict, if m.exact { " exact" } else { "" }),
        ];
        row.extend(m.bf16.as_ref().map(|b| badge(b.verdict, "")).or_else(|| r.bf16.is_some().then(empty)));
        if r.execution.is_some() {
            row.push(
                m.execution.as_ref().map_or_else(empty, |x| Cell::Titled(x.detail(), x.status.label().to_string())),
            );
        }
        row.extend([
            Cell::Code(m.profiles.join(" + ")),
            Cell::Text(detail(&m.result)),
            Cell::Text(m.result.confidence.join("; ")),
        ]);
        model_rows.rows.push(row);
    }

    let page = Page {
        models: count(t.total.models, "model"),
        backend: &r.backend.name,
        cards,
        denominator: denominator(h),
        downloads: human(t.total.downloads),
        no_runs: h.runs.is_none(),
        source: source_line(r),
        notes: &r.source.notes,
        provenance: first_line(&r.backend.provenance),
        caveat: &r.caveat,
        share_bars: share_bars(r),
        legend: Verdict::ALL
            .into_iter()
            .filter(|&v| v != Verdict::NotApplicable)
            .map(|v| (class(v), v.label()))
            .collect(),
        verdicts,
        inference,
        lines: r.bf16.iter().map(bf16_line).chain(r.exact.iter().map(exact_line)).collect(),
        execution: r.execution.as_ref().map(|x| execution(x, h)),
        blocker_bars: blocker_bars(r),
        blockers,
        plan_line,
        plan,
        architectures,
        more_architectures,
        reasons,
        comparison,
        all_models: count(r.models.len(), "model"),
        model_rows,
        tool: &r.tool,
        profiles: r.profiles.len(),
    };
    let mut html = page.render().expect("the sweep page renders (its values are strings and numbers)");
    html.push('\n');
    html
}

/// The execution verdict: its rates, where it disagrees with op coverage, and the failures.
fn execution(x: &ExecutionSummary, h: &Headline) -> Execution {
    let mut runs = Table::new(["on the chip", "#models", "#% of models", "#downloads", "#% of downloads", "rests on"]);
    for (label, tally, rests_on) in run_rows(x) {
        let s = Rate::of(tally, h.pytorch);
        runs.rows.push(vec![
            Cell::Text(label),
            Cell::Num(thousands(tally.models)),
            Cell::Num(pct(s.by_count)),
            Cell::Num(human(tally.downloads)),
            Cell::Num(pct(s.by_downloads)),
            Cell::Text(rests_on.trim_start_matches("rests on: ").to_string()),
        ]);
    }
    let mut disagreements =
        Table::new(["op verdict", "on the device", "cause", "#models", "#downloads", "why", "most downloaded"]);
    for d in &x.disagreements {
        disagreements.rows.push(vec![
            badge(d.op_verdict, ""),
            Cell::Text(d.execution.label().to_string()),
            Cell::Text(d.cause.clone()),
            Cell::Num(thousands(d.tally.models)),
            Cell::Num(human(d.tally.downloads)),
            Cell::Text(explain(d.op_verdict, d.execution, &d.cause).to_string()),
            Cell::Ids(d.examples.clone()),
        ]);
    }
    let mut failures = Table::new(["kind", "where", "#models", "#downloads", "profiles", "error"]);
    for f in &x.failures {
        failures.rows.push(vec![
            Cell::Text(f.kind.clone()),
            Cell::Code(f.location.clone()),
            Cell::Num(thousands(f.tally.models)),
            Cell::Num(human(f.tally.downloads)),
            Cell::Code(f.profiles.join(" ")),
            Cell::Text(f.message.clone()),
        ]);
    }
    Execution { line: execution_line(x), runs, disagreements, failures }
}

fn empty() -> Cell {
    Cell::Text(String::new())
}

fn badge(v: Verdict, suffix: &'static str) -> Cell {
    Cell::Badge(Badge { class: class(v), label: v.label() }, suffix)
}

/// Shares of the PyTorch checkpoints, as the cards above: n/a is left out of both bars.
fn share_bars(r: &Report) -> Vec<(&'static str, Vec<Segment>)> {
    [("downloads", true), ("models", false)]
        .into_iter()
        .map(|(label, by_downloads)| {
            let segments = Verdict::ALL
                .into_iter()
                .filter_map(|v| {
                    let s = share(r, v)?;
                    let share = if by_downloads { s.by_downloads } else { s.by_count };
                    (share > 0.0).then(|| Segment {
                        width: format!("{share:.1}%"),
                        class: class(v),
                        title: format!("{}: {}", v.label(), pct(share)),
                        // Room for the words at a phone's width too.
                        labelled: share >= 20.0,
                    })
                })
                .collect();
            (label, segments)
        })
        .collect()
}

/// Downloads blocked by each of the top ten missing ops, as bars relative to the first.
fn blocker_bars(r: &Report) -> Vec<BlockerBar> {
    let top: Vec<_> = r.blockers.iter().take(10).collect();
    let max = top.iter().map(|b| b.blocks.downloads).max().unwrap_or(0).max(1) as f64;
    top.iter()
        .map(|b| BlockerBar {
            op: b.op.clone(),
            width: format!("{:.1}%", 85.0 * b.blocks.downloads as f64 / max),
            models: count(b.blocks.models, "model"),
            downloads: human(b.blocks.downloads),
        })
        .collect()
}

fn class(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::PassInference => "passinf",
        Verdict::Partial => "partial",
        Verdict::Incomplete => "incomplete",
        Verdict::Fail => "fail",
        Verdict::Unknown => "unknown",
        Verdict::NotApplicable => "na",
    }
}
