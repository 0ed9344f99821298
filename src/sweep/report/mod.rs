//! The sweep report ([`super::document::Report`]) rendered as a terminal summary, JSON,
//! Markdown, self-contained HTML or CSV.
mod csv;
mod html;
mod json;
mod md;
mod phrases;
pub(crate) mod text;

use std::path::Path;

use anyhow::Result;

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

/// Writes via a temporary file and a rename, so a reader never sees half a report and a
/// failed run leaves the old one in place.
pub fn write_atomic(path: &Path, contents: &str) -> Result<()> {
    crate::write::create(path, contents.as_bytes())
}
