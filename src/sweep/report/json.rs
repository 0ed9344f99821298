//! The full report as JSON: every number with the rows, profiles and registry behind it.
use crate::sweep::document::Report;

pub fn render(r: &Report) -> String {
    let mut s = serde_json::to_string_pretty(r).expect("the report serialises");
    s.push('\n');
    s
}
