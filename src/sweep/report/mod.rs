//! The sweep report: one serialisable structure, rendered as a terminal summary, JSON,
//! Markdown, self-contained HTML or CSV.
mod csv;
mod html;
mod json;
mod md;
mod text;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::ModelRow;
use super::models::SourceInfo;
use super::plan::{ArchRow, Blocker, Plan, ReasonRow, Totals};
use super::verdict::Verdict;
use crate::ops::{Evaluation, Registry};

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
    pub evaluation: Evaluation,
    /// The evaluation on the `--compare` backend.
    pub compare: Option<Evaluation>,
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
    format!("{} {noun}{}", thousands(n), if n == 1 { "" } else { "s" })
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
