//! The sweep report: one serialisable structure, rendered as a terminal summary, JSON,
//! Markdown, self-contained HTML or CSV.
mod csv;
mod html;
mod json;
mod md;
pub(crate) mod text;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::ModelRow;
use super::execution::ExecutionSummary;
use super::models::SourceInfo;
use super::plan::{ArchRow, Blocker, Plan, ReasonRow, Tally, Totals};
use super::verdict::ModelVerdict;
use super::verdict::Verdict;
use crate::ops::execution::ExecStatus;
use crate::ops::{Evaluation, Profile, Registry};

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub tool: String,
    pub caveat: String,
    pub source: SourceInfo,
    pub backend: BackendInfo,
    pub totals: Totals,
    pub blockers: Vec<Blocker>,
    pub plan: Plan,
    pub architectures: Vec<ArchRow>,
    /// Why models are unknown or n/a.
    pub reasons: Vec<ReasonRow>,
    pub comparison: Option<Comparison>,
    /// Verdicts in bf16 under TorchTPU's autocast (a model passes in bf16 only if its bf16
    /// profiles do).
    pub bf16: Option<Bf16Summary>,
    /// `--exact`: where the per-config profiles came from and how many verdicts used them.
    pub exact: Option<ExactSummary>,
    /// The second verdict: runs on the emulated TorchTPU, and where it disagrees with op coverage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<ExecutionSummary>,
    /// What each verdict guarantees (the legend every format prints).
    pub verdicts: Vec<VerdictLegend>,
    /// Every profile a verdict used, with its trace versions and the evaluation behind it.
    pub profiles: BTreeMap<String, ProfileInfo>,
    pub models: Vec<ModelRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BackendInfo {
    pub name: String,
    pub provenance: String,
}

impl BackendInfo {
    pub fn of(r: &Registry) -> Self {
        BackendInfo { name: r.name().to_string(), provenance: r.provenance().to_string() }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ProfileInfo {
    pub status: String,
    pub method: String,
    pub versions: BTreeMap<String, String>,
    /// The evaluation, with the profile's per-class, per-phase coverage under `coverage`.
    pub evaluation: Evaluation,
    /// The evaluation on the `--compare` backend.
    pub compare: Option<Evaluation>,
}

impl ProfileInfo {
    pub fn of(p: &Profile, evaluation: Evaluation, compare: Option<Evaluation>) -> Self {
        ProfileInfo {
            status: p.status.clone(),
            method: p.method.clone(),
            versions: p.versions.clone(),
            evaluation,
            compare,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Bf16Summary {
    pub totals: Totals,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExactSummary {
    /// The `ops trace --configs/--hub` output directory.
    pub source: String,
    /// Models whose verdict came from a per-config profile.
    pub models: Tally,
}

#[derive(Debug, Clone, Serialize)]
pub struct VerdictLegend {
    pub verdict: Verdict,
    pub guarantees: &'static str,
}

impl VerdictLegend {
    pub fn all() -> Vec<VerdictLegend> {
        Verdict::ALL.into_iter().map(|verdict| VerdictLegend { verdict, guarantees: verdict.guarantee() }).collect()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub backend: BackendInfo,
    pub totals: Totals,
    pub differences: Vec<Difference>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    pub id: String,
    pub downloads: u64,
    pub verdict: Verdict,
    pub compare_verdict: Verdict,
    pub missing_only_here: Vec<String>,
    pub missing_only_there: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Md,
    Html,
    Csv,
}

pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Text => text::render(report),
        Format::Json => json::render(report),
        Format::Md => md::render(report),
        Format::Html => html::render(report),
        Format::Csv => csv::render(report),
    }
}

/// Writes via a temporary file and a rename, so a reader never sees half a report and a
/// failed run leaves the old one in place.
pub fn write_atomic(path: &Path, contents: &str) -> Result<()> {
    crate::write::create(path, contents.as_bytes())
}

/// Whether a file's first bytes are those of an earlier sweep report, in any format (which
/// `--output-file` may replace).
pub fn is_report(head: &str) -> bool {
    head.starts_with("xla2tpu sweep: ")
        || head.starts_with("# TorchTPU compatibility sweep: ")
        || head.starts_with("rank,model_id,downloads,verdict")
        || (head.starts_with("<!doctype html>") && head.contains("<title>TorchTPU compatibility sweep: "))
        || head.strip_prefix('{').is_some_and(|rest| rest.trim_start().starts_with("\"tool\": \"xla2tpu"))
}

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

/// `1234567` → `1.23M`: downloads at a glance (exact numbers are in JSON/CSV).
pub(crate) fn human(n: u64) -> String {
    let f = n as f64;
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", f / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2}M", f / 1e6),
        _ => format!("{:.2}B", f / 1e9),
    }
}

/// `12345` → `12,345`.
pub(crate) fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1 model`, `2 models`.
pub(crate) fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{} {}", thousands(n), crate::output::plural(noun)) }
}

/// "model" or "models", for a count printed on its own in a table column.
pub(crate) fn models(n: usize) -> &'static str {
    if n == 1 { "model" } else { "models" }
}

pub(crate) fn pct(x: f64) -> String {
    format!("{x:.1}%")
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
pub(crate) fn plan_rates(from: &super::plan::Rate, to: &super::plan::Rate) -> String {
    format!(
        "{} → {} by downloads ({} → {} by count)",
        pct(from.by_downloads),
        pct(to.by_downloads),
        pct(from.by_count),
        pct(to.by_count)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(human(999), "999");
        assert_eq!(human(1_500), "1.5k");
        assert_eq!(human(60_146_924), "60.15M");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(100), "100");
    }
}
