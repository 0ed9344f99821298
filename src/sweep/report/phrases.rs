//! Sentences and cells that several report formats share.
use crate::ops::execution::ExecStatus;
use crate::sweep::agreement::ExecutionSummary;
use crate::sweep::document::{Bf16Summary, ExactSummary, Headline, Report};
use crate::sweep::plan::ArchRow;
use crate::sweep::tally::{Rate, Tally, count, human, pct, thousands};
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
        ("partial", a.partial),
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
        "bf16 under TorchTPU autocast: pass rate {} by count, {} by downloads ({} pass, {} pass-inference, {} partial, {} incomplete, {} fail, {} unknown)",
        pct(t.pass_rate.by_count),
        pct(t.pass_rate.by_downloads),
        thousands(t.pass.models),
        thousands(t.pass_inference.models),
        thousands(t.partial.models),
        thousands(t.incomplete.models),
        thousands(t.fail.models),
        thousands(t.unknown.models)
    )
}

/// What the second verdict ran, in one sentence (its figures are in the headline and the table).
pub(crate) fn execution_line(x: &ExecutionSummary) -> String {
    format!(
        "Each profiled type's tiny model ran on the strict TorchTPU {} emulator: inference and a training step \
         in float32 ({}); under bf16 autocast, {} by count run",
        x.versions.get("emulator").map_or("0.2.0", String::as_str),
        x.source,
        pct(x.bf16_pass_rate.by_count),
    )
}

/// Whose share every headline figure is.
pub(crate) fn denominator(h: &Headline) -> String {
    format!(
        "of {} PyTorch checkpoints ({} with no PyTorch weights left out)",
        thousands(h.pytorch.models),
        count(h.not_applicable.models, "model")
    )
}

/// A verdict's share of the headline's denominator; `None` for n/a, which it leaves out.
pub(crate) fn share(r: &Report, v: Verdict) -> Option<Rate> {
    (v != Verdict::NotApplicable).then(|| Rate::of(r.totals.get(v), r.headline.pytorch))
}

/// The runs on the emulated chip by status, a pass that rests on what the emulator could not
/// check on a row of its own: (label, models and downloads, what it rests on).
pub(crate) fn run_rows(x: &ExecutionSummary) -> Vec<(String, Tally, String)> {
    let get = |s: ExecStatus| x.totals.get(&s).copied().unwrap_or_default();
    let pass = get(ExecStatus::Pass);
    let unchecked = x.passes_unchecked;
    let checked = Tally { models: pass.models - unchecked.models, downloads: pass.downloads - unchecked.downloads };
    let mut rows = vec![("pass".to_string(), checked, String::new())];
    if unchecked.models > 0 {
        let notes: Vec<&str> = x.unchecked.iter().map(|u| u.note.as_str()).collect();
        rows.push(("pass, unchecked".to_string(), unchecked, format!("rests on: {}", notes.join("; "))));
    }
    for s in [ExecStatus::PassInference, ExecStatus::Partial, ExecStatus::Fail, ExecStatus::Unknown] {
        rows.push((s.label().to_string(), get(s), String::new()));
    }
    rows
}

/// One sentence on the models whose model_type the list lacked and their id gave (issue 46).
pub(crate) fn from_id_line(r: &Report) -> Option<String> {
    let resolved: Vec<_> = r.models.iter().filter(|m| m.model_type_from_id.is_some()).collect();
    let first = resolved.first()?;
    Some(format!(
        "model_type resolved from the id: {} ({} downloads) had no model_type in the list; their id names one \
         family unambiguously (model_type_from_id in JSON and CSV), e.g. {} -> {}",
        count(resolved.len(), "model"),
        human(resolved.iter().map(|m| m.downloads).sum()),
        first.id,
        first.model_type.as_deref().unwrap_or("")
    ))
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
