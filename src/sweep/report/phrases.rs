//! Sentences and cells that several report formats share.
use crate::ops::execution::ExecStatus;
use crate::sweep::agreement::ExecutionSummary;
use crate::sweep::document::{Bf16Summary, ExactSummary, Report};
use crate::sweep::plan::ArchRow;
use crate::sweep::tally::{Rate, count, human, pct, thousands};
use crate::sweep::verdict::{ModelVerdict, Verdict};

/// A model's detail for every format: its missing ops, why it has no verdict, or (for a verdict
/// short of pass) what its profiles did not trace.
pub(crate) fn detail(v: &ModelVerdict) -> String {
    if !v.missing.is_empty() {
        v.missing.join(", ")
    } else if let Some(reason) = &v.reason {
        reason.clone()
    } else if matches!(v.verdict, Verdict::PassInference | Verdict::Incomplete) {
        v.confidence.join("; ")
    } else {
        String::new()
    }
}

/// The per-architecture verdict mix, `3 pass, 1 incomplete`, for the text and HTML tables.
pub(crate) fn mix(a: &ArchRow) -> String {
    [
        ("pass", a.pass),
        ("pass-inference", a.pass_inference),
        ("incomplete", a.incomplete),
        ("fail", a.fail),
        ("unknown", a.unknown),
        ("n/a", a.not_applicable),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(label, n)| format!("{n} {label}"))
    .collect::<Vec<_>>()
    .join(", ")
}

/// One sentence on the bf16 run, shared by the text and Markdown renderers.
pub(crate) fn bf16_line(b: &Bf16Summary) -> String {
    let t = &b.totals;
    format!(
        "bf16 under TorchTPU autocast: pass rate {} by count, {} by downloads ({} pass, {} pass-inference, {} incomplete, {} fail, {} unknown)",
        pct(t.pass_rate.by_count),
        pct(t.pass_rate.by_downloads),
        thousands(t.pass.models),
        thousands(t.pass_inference.models),
        thousands(t.incomplete.models),
        thousands(t.fail.models),
        thousands(t.unknown.models)
    )
}

/// One sentence on the execution verdict, shared by the text and Markdown renderers.
pub(crate) fn execution_line(x: &ExecutionSummary) -> String {
    let t = |s: ExecStatus| x.totals.get(&s).copied().unwrap_or_default().models;
    format!(
        "runs on emulated TorchTPU {}: {} by count, {} by downloads ({} pass, {} pass-inference, {} fail, {} unknown); \
         op coverage and execution both pass: {} by count, {} by downloads; bf16 autocast runs: {} by count",
        x.versions.get("emulator").map_or("0.2.0", String::as_str),
        pct(x.pass_rate.by_count),
        pct(x.pass_rate.by_downloads),
        thousands(t(ExecStatus::Pass)),
        thousands(t(ExecStatus::PassInference)),
        thousands(t(ExecStatus::Fail)),
        thousands(t(ExecStatus::Unknown)),
        pct(x.both_rate.by_count),
        pct(x.both_rate.by_downloads),
        pct(x.bf16_pass_rate.by_count),
    ) + &unchecked_clause(x)
}

/// How many passes rest on what the emulator could not check, and the most common such thing.
fn unchecked_clause(x: &ExecutionSummary) -> String {
    match x.unchecked.first() {
        Some(top) if x.passes_unchecked.models > 0 => format!(
            "; {} of the passes ({} downloads) rest on what the emulator could not check (most often: {})",
            thousands(x.passes_unchecked.models),
            human(x.passes_unchecked.downloads),
            top.note
        ),
        _ => String::new(),
    }
}

/// One sentence on `--exact`.
pub(crate) fn exact_line(x: &ExactSummary) -> String {
    format!(
        "--exact: {} ({} downloads) judged from per-config profiles of their own config.json ({}); the rest from type profiles",
        count(x.models.models, "model"),
        human(x.models.downloads),
        x.source
    )
}

/// One line on where the models came from, for every format's header.
pub(crate) fn source_line(r: &Report) -> String {
    let s = &r.source;
    let captured = s.captured.as_deref().map(|c| format!("; captured {c}")).unwrap_or_default();
    format!("{} [{}]: {}{captured}", s.name, s.kind, s.attribution)
}

/// The first sentence of a registry's provenance, for headers (the full text is in JSON).
pub(crate) fn first_line(s: &str) -> &str {
    let line = s.lines().next().unwrap_or("");
    line.find(". ").map_or(line, |end| &line[..=end])
}

/// Short phrase for a plan step's rates, shared by the text and Markdown renderers.
pub(crate) fn plan_rates(from: &Rate, to: &Rate) -> String {
    format!(
        "{} → {} by downloads ({} → {} by count)",
        pct(from.by_downloads),
        pct(to.by_downloads),
        pct(from.by_count),
        pct(to.by_count)
    )
}
