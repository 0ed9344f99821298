//! The sweep report ([`super::document::Report`]) rendered as a terminal summary, JSON,
//! Markdown, self-contained HTML or CSV.
mod csv;
mod html;
mod json;
mod md;
mod phrases;
pub(crate) mod text;

use super::document::Report;

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

/// Whether a file's first bytes are those of an earlier sweep report, in any format (which
/// `--output-file` may replace).
pub fn is_report(head: &str) -> bool {
    head.starts_with("xla2tpu sweep: ")
        || head.starts_with("# TorchTPU compatibility sweep: ")
        || head.starts_with("rank,model_id,downloads,verdict")
        || (head.starts_with("<!doctype html>") && head.contains("<title>TorchTPU compatibility sweep: "))
        || head.strip_prefix('{').is_some_and(|rest| rest.trim_start().starts_with("\"tool\": \"xla2tpu"))
}
